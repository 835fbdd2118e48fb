/* pending.c -- connections before their worker: the first-message watch, the budgets per
 * listener and per source address, and the FIFO that hands them to handshake slots.
 *
 * An accepted connection costs a descriptor and a few hundred bytes here, never a process:
 * it gets a worker only once its first message (a TLS record, or on plain TCP and the Unix
 * socket a frame) has arrived whole, which the loop sees by peeking, never reading, so the
 * worker still finds every byte. A peer that sends nothing, or trickles, for
 * first_byte_timeout seconds is closed. Complete ones wait here, in arrival order, for a
 * handshake slot of their listener (max_handshakes each, so the Unix socket never waits
 * for the network) and a session slot (max_sessions), at most queue_timeout seconds.
 *
 * Each listener holds at most max_pending of them and each source address (on the Unix
 * socket, each user) max_pending_per_address; of a listener's handshake slots one source
 * holds at most max_handshakes_per_address. At either limit the oldest connection that
 * has not finished its first message gives way to the new one; when all have, the new one
 * is closed and its client retries. A flood of silent sockets thus only ever displaces
 * itself, and a real client, whose first message follows its connect at once, gets in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

#define TLS_HANDSHAKE 22	     /* the content type of a ClientHello's record */
#define TLS_RECORD_MAX (16384 + 256) /* the largest record a peer may send */
#define FIRST_FRAME_MAX 65536	     /* more than any Hello: enough to say it is one */

static unsigned lane(enum gp_transport t)
{
	return t == GP_TRANSPORT_UNIX ? 2 : t == GP_TRANSPORT_PLAIN ? 1 : 0;
}

/* What the per-address limit counts: the host without its port, or the local user. */
static void source_of(const char *addr, char *out, size_t len)
{
	const char *uid = strstr(addr, "uid=");
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (strncmp(addr, "local", 5) == 0) {
		n = uid ? strcspn(uid, ",") : 0;
		snprintf(out, len, "%.*s", (int)n, uid ? uid : "");
		return;
	}
	n = colon ? (size_t)(colon - addr) : strlen(addr);
	snprintf(out, len, "%.*s", (int)n, addr);
}

/* Workers in TLS or Hello for connections from source (source_of): one address, or one
 * local user, may hold only max_handshakes_per_address of them. */
static unsigned handshaking_from(const struct gp_daemon *d, const char *source)
{
	unsigned n = 0;
	char src[64];

	for (const struct gp_session *s = d->sessions; s; s = s->next) {
		if (s->exited || s->refused || s->state != GP_SESSION_HANDSHAKE)
			continue;
		source_of(s->client_addr, src, sizeof(src));
		n += strcmp(src, source) == 0;
	}
	return n;
}

static void on_pending_closed(uv_handle_t *h)
{
	struct gp_pending *p = h->data;

	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

/* Takes p off the list and closes it (its descriptor too, unless p->fd was taken). */
static void unlink_pending(struct gp_pending *p)
{
	struct gp_daemon *d = p->d;

	for (struct gp_pending **pp = &d->pending; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	d->npending[lane(p->transport)]--;
	/* Closing the poll handle stops it at once; the descriptor may then go elsewhere. */
	uv_close((uv_handle_t *)&p->poll, on_pending_closed);
}

static void drop(struct gp_pending *p, const char *why)
{
	gp_log_debug("connection from %s closed before its worker: %s", p->addr, why);
	unlink_pending(p);
}

/*
 * Bytes the first message needs, from what has arrived of it (n bytes in hdr): more than n
 * while even its header is short. Something that is not a first message at all counts as
 * complete: its worker says what is wrong with it.
 */
static size_t first_message_size(enum gp_transport t, const uint8_t *hdr, size_t n)
{
	struct gp_frame_hdr h;

	if (t == GP_TRANSPORT_TLS) {
		if (n < 1 || hdr[0] != TLS_HANDSHAKE)
			return 1;
		if (n < 5)
			return 5;
		n = 5 + ((size_t)hdr[3] << 8 | hdr[4]);
		return n < TLS_RECORD_MAX ? n : TLS_RECORD_MAX;
	}
	if (n < GP_FRAME_HDR_SIZE)
		return GP_FRAME_HDR_SIZE;
	if (gp_frame_hdr_decode(hdr, &h))
		return 1;
	n = GP_FRAME_HDR_SIZE + (size_t)h.msg_len;
	return n < FIRST_FRAME_MAX ? n : FIRST_FRAME_MAX;
}

/* 1: the first message is here whole; 0: not yet; -1: the peer closed or failed. */
static int first_message_in(struct gp_pending *p)
{
	uint8_t hdr[GP_FRAME_HDR_SIZE];
	ssize_t n = recv(p->fd, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
	int avail = 0;

	if (n == 0)
		return -1;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (ioctl(p->fd, FIONREAD, &avail) < 0)
		return -1;
	return (size_t)avail >= first_message_size(p->transport, hdr, (size_t)n);
}

static void check(struct gp_pending *p)
{
	int r = first_message_in(p);

	if (r < 0) {
		drop(p, "it closed");
		return;
	}
	/* Readability is level-triggered: a part of a message would wake the loop for ever,
	 * so a peer that sent one is looked at again on each tick instead. */
	uv_poll_stop(&p->poll);
	if (r == 0) {
		p->partial = true;
		return;
	}
	p->ready = true;
	p->since = uv_now(p->d->loop);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct gp_pending *p = h->data;
	struct gp_daemon *d = p->d;

	(void)events;
	if (status < 0) {
		drop(p, uv_strerror(status));
		return;
	}
	check(p);
	gp__pending_pump(d);
}

/* The oldest connection that has not sent its first message, of this listener and (when
 * source is set) from this source; NULL if there is none. */
static struct gp_pending *oldest_silent(struct gp_daemon *d, unsigned l, const char *source)
{
	for (struct gp_pending *p = d->pending; p; p = p->next)
		if (!p->ready && lane(p->transport) == l && (!source || !strcmp(p->source, source)))
			return p;
	return NULL;
}

void gp__pending_add(struct gp_daemon *d, int fd, const char *addr, enum gp_transport t)
{
	const struct gp_config *cfg = d->cfg;
	struct gp_pending *p, *victim = NULL, **pp;
	char source[sizeof(p->source)];
	unsigned l = lane(t), from = 0;

	source_of(addr, source, sizeof(source));
	for (p = d->pending; p; p = p->next)
		if (lane(p->transport) == l && strcmp(p->source, source) == 0)
			from++;
	if (from >= cfg->max_pending_per_address)
		victim = oldest_silent(d, l, source);
	else if (d->npending[l] >= cfg->max_pending)
		victim = oldest_silent(d, l, NULL);
	if (from >= cfg->max_pending_per_address || d->npending[l] >= cfg->max_pending) {
		d->pending_shed++;
		if (!victim) {
			gp_log_debug("connection from %s closed: %s", addr,
				     from >= cfg->max_pending_per_address
					     ? "max_pending_per_address reached"
					     : "max_pending reached");
			close(fd);
			return;
		}
		drop(victim, "a newer connection took its place");
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return;
	}
	p->d = d;
	p->fd = fd;
	p->transport = t;
	p->since = uv_now(d->loop);
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	snprintf(p->source, sizeof(p->source), "%s", source);
	if (uv_poll_init(d->loop, &p->poll, fd)) {
		close(fd);
		free(p);
		return;
	}
	p->poll.data = p;
	for (pp = &d->pending; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	d->npending[l]++;
	uv_poll_start(&p->poll, UV_READABLE, on_readable);
}

/* Seconds a complete connection may wait here for its slots. */
static unsigned wait_limit(const struct gp_config *cfg)
{
	return cfg->queue_timeout ? cfg->queue_timeout : cfg->handshake_timeout;
}

void gp__pending_pump(struct gp_daemon *d)
{
	const struct gp_config *cfg = d->cfg;
	struct gp_pending *p = d->pending, *next;
	unsigned busy[3];
	int fd;

	for (unsigned l = 0; l < 3; l++)
		busy[l] = gp__sessions_handshaking(d, l == 2   ? GP_TRANSPORT_UNIX
						      : l == 1 ? GP_TRANSPORT_PLAIN
							       : GP_TRANSPORT_TLS);
	for (; p && !d->stopping; p = next) {
		unsigned live = gp__sessions_live(d), l = lane(p->transport);

		next = p->next;
		if (!p->ready || busy[l] >= cfg->max_handshakes)
			continue;
		/* A peer whose TLS stalls after its first record holds its slot until
		 * handshake_timeout: one address never holds them all, and its later
		 * connections wait while others' go ahead. */
		if (handshaking_from(d, p->source) >= cfg->max_handshakes_per_address)
			continue;
		/* Past max_sessions only while others wait: one of them may give way to it
		 * (gp_pool_displace), so waiters never shut a tenant out. */
		if (live >= cfg->max_sessions &&
		    (!d->pool.queue || live >= cfg->max_sessions + cfg->max_handshakes))
			break;
		busy[l]++;
		fd = p->fd;
		p->fd = -1; /* the worker's now: the close callback leaves it */
		gp_log_debug("connection from %s: its worker starts after %llu ms", p->addr,
			     (unsigned long long)(uv_now(d->loop) - p->since));
		/* p is freed only in its close callback: its fields last until the loop runs. */
		unlink_pending(p);
		gp__session_spawn(d, fd, p->addr, p->transport);
	}
}

void gp__pending_tick(struct gp_daemon *d)
{
	const struct gp_config *cfg = d->cfg;
	uint64_t now = uv_now(d->loop);
	unsigned silent = 0;
	struct gp_pending *next;

	for (struct gp_pending *p = d->pending; p; p = next) {
		next = p->next;
		if (!p->ready && p->partial)
			check(p);
		if (uv_is_closing((uv_handle_t *)&p->poll))
			continue;
		if (!p->ready && now - p->since >= (uint64_t)cfg->first_byte_timeout * 1000) {
			drop(p, "no first message within first_byte_timeout");
			silent++;
		} else if (p->ready && now - p->since >= (uint64_t)wait_limit(cfg) * 1000) {
			gp_log_warnx("connection from %s closed: it waited %u s for a worker (%s)",
				     p->addr, wait_limit(cfg),
				     gp__sessions_live(d) >= cfg->max_sessions
					     ? "max_sessions reached"
					     : "max_handshakes reached");
			unlink_pending(p);
		}
	}
	if (silent)
		gp_log_info("closed %u connection%s that sent no first message within %u s "
			    "(first_byte_timeout)",
			    silent, silent == 1 ? "" : "s", cfg->first_byte_timeout);
	if (d->pending_shed) {
		gp_log_warnx("%u connection%s closed or displaced: max_pending_per_address %u or "
			     "max_pending %u reached",
			     d->pending_shed, d->pending_shed == 1 ? "" : "s",
			     cfg->max_pending_per_address, cfg->max_pending);
		d->pending_shed = 0;
	}
	gp__pending_pump(d);
}

void gp__pending_close_all(struct gp_daemon *d)
{
	while (d->pending)
		drop(d->pending, "the pool is shutting down");
}
