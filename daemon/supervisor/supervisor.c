/* supervisor.c -- accept clients, spawn one worker per session, admit, reap. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <systemd/sd-daemon.h>

#include "conn.h"
#include "daemon.h"
#include "error.h"
#include "log.h"

#define CTL_MAX_FRAME (1u << 20)

/* ---- framed writes on libuv streams --------------------------------------- */

struct frame_write {
	uv_write_t req;
	uint8_t bytes[];
};

static void on_frame_written(uv_write_t *req, int status)
{
	free(req->data);
}

/* Queues one frame on a libuv stream. Returns 0 or a negative code. */
int gp__uv_send(uv_stream_t *s, unsigned type, const ProtobufCMessage *msg)
{
	size_t mlen = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	struct gp_frame_hdr h = {.msg_len = (uint32_t)mlen, .type = (uint16_t)type};
	struct frame_write *fw;
	uv_buf_t buf;
	int r;

	if (mlen > GP_FRAME_MSG_MAX)
		return GP_ETOOBIG;
	fw = malloc(sizeof(*fw) + GP_FRAME_HDR_SIZE + mlen);
	if (!fw)
		return -ENOMEM;
	gp_frame_hdr_encode(&h, fw->bytes);
	if (msg)
		protobuf_c_message_pack(msg, fw->bytes + GP_FRAME_HDR_SIZE);
	fw->req.data = fw;
	buf = uv_buf_init((char *)fw->bytes, (unsigned)(GP_FRAME_HDR_SIZE + mlen));
	r = uv_write(&fw->req, s, &buf, 1, on_frame_written);
	if (r) {
		free(fw);
		return r;
	}
	return 0;
}

/* ---- session lifetime ---------------------------------------------------------- */

static void notify_status(struct gp_daemon *d)
{
	sd_notifyf(0, "STATUS=%u session%s, %u GPU%s%s", d->nsessions, d->nsessions == 1 ? "" : "s",
		   gp_pool_targets(&d->pool), gp_pool_targets(&d->pool) == 1 ? "" : "s",
		   d->stopping ? ", stopping" : "");
}

/* A warm worker that ends on its own stops warm starts for this long (ms). */
#define WARM_RETRY_MS 10000

/* A session object no session was counted for (a worker that never started, a warm one). */
static void free_unspawned(struct gp_session *s)
{
	if (s->stats)
		munmap(s->stats, GP_STATS_SIZE);
	gp_frame_decoder_deinit(&s->dec);
	free(s->tls_ca);
	free(s);
}

static void session_free_if_closed(struct gp_session *s)
{
	struct gp_daemon *d = s->d;
	struct gp_session **pp;

	if (!s->ctl_closed || !s->proc_closed || s->acct_pending)
		return;
	if (s->warm) {
		/* It never had a session: nothing was claimed or counted. */
		for (pp = &d->warm; *pp; pp = &(*pp)->next) {
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		}
		free_unspawned(s);
		return;
	}
	for (pp = &d->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	d->nsessions--;
	/* Done at the worker's exit; a freed claim must never stay in the ledger. */
	gp_pool_release(&d->pool, &s->claim);
	if (s->stats)
		munmap(s->stats, GP_STATS_SIZE);
	gp_frame_decoder_deinit(&s->dec);
	free(s->tls_ca);
	free(s);
	notify_status(d);
	if (d->stopping && d->nsessions == 0)
		gp__supervisor_stop(d);
}

void gp__session_accounted(struct gp_session *s)
{
	session_free_if_closed(s);
}

static void on_ctl_closed(uv_handle_t *h)
{
	struct gp_session *s = h->data;

	s->ctl_closed = true;
	session_free_if_closed(s);
}

static void on_proc_closed(uv_handle_t *h)
{
	struct gp_session *s = h->data;

	s->proc_closed = true;
	session_free_if_closed(s);
}

static void close_ctl(struct gp_session *s)
{
	if (!uv_is_closing((uv_handle_t *)&s->ctl))
		uv_close((uv_handle_t *)&s->ctl, on_ctl_closed);
}

/* The session's last numbers, from its stats page: the worker could not log them itself. */
static void log_summary(struct gp_session *s, int sig, int64_t status)
{
	struct gp_stats *st = s->stats;

	gp_log_info("session %llu ended (%s): tenant %s client %s duration %.0fs peak %llu bytes "
		    "calls %llu in %llu bytes out %llu bytes",
		    (unsigned long long)s->id,
		    s->evicted ? "ended by the pool"
		    : sig      ? strsignal(sig)
			       : "worker failed",
		    s->tenant[0] ? s->tenant : "-", s->client_addr,
		    difftime(time(NULL), s->started),
		    (unsigned long long)(st ? atomic_load(&st->mem_peak) : 0),
		    (unsigned long long)(st ? atomic_load(&st->calls) : 0),
		    (unsigned long long)(st ? atomic_load(&st->bytes_in) : 0),
		    (unsigned long long)(st ? atomic_load(&st->bytes_out) : 0));
	(void)status;
}

static void on_worker_exit(uv_process_t *p, int64_t status, int sig)
{
	struct gp_session *s = p->data;
	const char *code;
	char why[512];

	s->exited = true;
	gp__ipc_detach(s); /* its handles open nothing from now on */
	code = gp__cgroup_leave(s, sig, why, sizeof(why));
	if (s->warm) {
		if (!s->term_at) {
			/* Its driver did not start (the worker logged why): sessions get cold
			 * workers for a while, whose clients are told what failed. */
			gp_log_warnx("warm worker %d ended before any session (%s %lld); none "
				     "started for %d s",
				     p->pid, sig ? "signal" : "status",
				     sig ? (long long)sig : (long long)status,
				     WARM_RETRY_MS / 1000);
			s->d->warm_retry_at = uv_now(s->d->loop) + WARM_RETRY_MS;
		}
		close_ctl(s);
		uv_close((uv_handle_t *)p, on_proc_closed);
		return;
	}
	if (code) {
		/* The kernel ended it at its cgroup's limit: say which, for the log and record. */
		gp_log_warnx("session %llu ended: %s", (unsigned long long)s->id, why);
		if (!s->end_code)
			s->end_code = code;
	} else if (sig)
		gp_log_warnx("session %llu: worker %d killed by signal %d (%s)",
			     (unsigned long long)s->id, p->pid, sig, strsignal(sig));
	else if (status)
		gp_log_warnx("session %llu: worker %d exited with status %lld",
			     (unsigned long long)s->id, p->pid, (long long)status);
	else
		gp_log_debug("session %llu: worker %d exited", (unsigned long long)s->id, p->pid);
	if (sig || status || s->evicted)
		log_summary(s, sig, status);
	/* Before the release: the record names the GPUs the claim holds. */
	gp__acct_session_ended(s, status, sig);
	gp__admit_release(s);
	s->state = GP_SESSION_CLOSING;
	close_ctl(s);
	uv_close((uv_handle_t *)p, on_proc_closed);
	notify_status(s->d);
	gp__pending_pump(s->d);
}

void gp__session_kill(struct gp_session *s, int sig)
{
	if (!s->exited)
		uv_process_kill(&s->proc, sig);
}

void gp__session_preempt_signal(struct gp_session *s, enum gp_preempt_signal what)
{
	/* sigqueue, not uv_process_kill: the worker reads the value (worker.c, on_sigusr2). */
	if (!s->exited && s->proc.pid > 0)
		sigqueue(s->proc.pid, SIGUSR2, (union sigval){.sival_int = (int)what});
}

#define KILL_AFTER_MS 5000

void gp__session_end(struct gp_session *s, const char *code, const char *why)
{
	if (s->exited || s->term_at)
		return;
	s->end_code = code;
	gp_log_info("session %llu (tenant %s): ending it: %s", (unsigned long long)s->id,
		    s->tenant[0] ? s->tenant : "-", why);
	s->evicted = true;
	s->term_at = uv_now(s->d->loop);
	gp__session_kill(s, SIGTERM);
}

struct gp_session *gp__session_find(struct gp_daemon *d, uint64_t id)
{
	for (struct gp_session *s = d->sessions; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/* ---- control channel --------------------------------------------------------------- */

static void on_ctl_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char slab[65536];

	/* Reads are fed into the decoder at once, so one static slab serves all. */
	*buf = uv_buf_init(slab, sizeof(slab));
}

static void on_ctl_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct gp_session *s = stream->data;
	struct gp_frame f;
	int r;

	if (nread < 0) {
		close_ctl(s);
		return;
	}
	if (gp_frame_decoder_feed(&s->dec, buf->base, (size_t)nread)) {
		gp__session_kill(s, SIGKILL);
		close_ctl(s);
		return;
	}
	while ((r = gp_frame_decoder_next(&s->dec, &f)) == 1) {
		ProtobufCMessage *m;

		/* warm: no client yet. One AdmitRequest per worker: a second (after a refusal,
		 * say) is a compromised worker's, which would be admitted uncounted as live and
		 * could make the loop check proofs without end. */
		if (s->warm || f.hdr.type != GP_MSG_ADMIT_REQUEST || s->admit_asked ||
		    !(m = gp_msg_unpack(f.hdr.type, f.msg, f.hdr.msg_len))) {
			r = GP_ETYPE;
			break;
		}
		s->admit_asked = true;
		gp__admit_request(s, (Gp__AdmitRequest *)m);
		protobuf_c_message_free_unpacked(m, NULL);
		gp__cgroup_admitted(s); /* the tenant is known: its host_memory= */
		gp__pending_pump(s->d); /* its handshake slot is free now */
	}
	if (r < 0) {
		gp_log_warnx("session %llu: control channel: %s; ending the session",
			     (unsigned long long)s->id, gp_strerror(r));
		gp__session_kill(s, SIGKILL);
		close_ctl(s);
	}
}

/* ---- spawning ------------------------------------------------------------------ */

static struct gp_stats *new_stats(int *fd_out)
{
	struct gp_stats *st;
	int fd = memfd_create("gpupool-session", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, GP_STATS_SIZE) < 0) {
		close(fd);
		return NULL;
	}
	st = mmap(NULL, GP_STATS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (st == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	st->magic = GP_STATS_MAGIC;
	atomic_store(&st->state, GP_SESSION_HANDSHAKE);
	atomic_store(&st->last_active, (int64_t)time(NULL));
	*fd_out = fd;
	return st;
}

static void on_spawn_failed(uv_handle_t *h)
{
	free_unspawned(h->data);
}

/* A worker process with its stats page and control channel. With client_fd >= 0 it has
 * its client on fd 3 from the start; with -1 it is a warm one (`--warm`: it loads the
 * driver now and gets its client later, hand_over()). The caller keeps client_fd. */
static struct gp_session *worker_spawn(struct gp_daemon *d, int client_fd)
{
	uv_process_options_t opts = {0};
	uv_stdio_container_t stdio[7];
	char *args[] = {d->worker_path, NULL, NULL, NULL, NULL, NULL, NULL};
	struct gp_session *s;
	int sv[2] = {-1, -1}, ipc[2] = {-1, -1}, stats_fd = -1, r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->d = d;
	s->state = GP_SESSION_HANDSHAKE;
	s->warm = client_fd < 0;
	gp_frame_decoder_init(&s->dec, CTL_MAX_FRAME);
	s->stats = new_stats(&stats_fd);
	if (!s->stats) {
		gp_log_warn("a worker's stats page");
		goto out_free;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ipc) < 0) {
		gp_log_warn("socketpair");
		goto out_free;
	}
	stdio[0].flags = UV_IGNORE;
	stdio[1].flags = UV_INHERIT_FD;
	stdio[1].data.fd = 1;
	stdio[2].flags = UV_INHERIT_FD;
	stdio[2].data.fd = 2;
	stdio[3].flags = s->warm ? UV_IGNORE : UV_INHERIT_FD;
	stdio[3].data.fd = client_fd;
	stdio[4].flags = UV_INHERIT_FD;
	stdio[4].data.fd = sv[1];
	stdio[5].flags = UV_INHERIT_FD;
	stdio[5].data.fd = stats_fd;
	stdio[6].flags = UV_INHERIT_FD; /* IPC requests (ipc.c) */
	stdio[6].data.fd = ipc[1];
	if (s->warm) {
		args[1] = "--warm";
		args[2] = "--driver";
		args[3] = d->cfg->driver;
		if (d->cfg->tls_cert && *d->cfg->tls_cert) { /* public: for gp_tls_warm_up */
			args[4] = "--tls-cert";
			args[5] = d->cfg->tls_cert;
		}
	}
	opts.file = d->worker_path;
	opts.args = args;
	opts.exit_cb = on_worker_exit;
	opts.stdio = stdio;
	opts.stdio_count = 7;
	s->proc.data = s;
	r = uv_spawn(d->loop, &s->proc, &opts);
	if (r) {
		gp_log_error("cannot start %s: %s", d->worker_path, uv_strerror(r));
		/* A failed uv_spawn still initialised the handle: it must be closed, and s
		 * freed only in the close callback. */
		close(sv[0]);
		close(sv[1]);
		close(ipc[0]);
		close(ipc[1]);
		close(stats_fd);
		uv_close((uv_handle_t *)&s->proc, on_spawn_failed);
		return NULL;
	}
	close(sv[1]);
	close(ipc[1]);
	close(stats_fd);
	if (gp__ipc_attach(s, ipc[0]))
		close(ipc[0]); /* it answers IPC with errors: its requests find no one */
	uv_pipe_init(d->loop, &s->ctl, 0);
	s->ctl.data = s;
	uv_pipe_open(&s->ctl, sv[0]);
	uv_read_start((uv_stream_t *)&s->ctl, on_ctl_alloc, on_ctl_read);
	/* Into its cgroup before it is sent anything: a worker that is not under its limits
	 * serves nobody (warm: none is handed to it; cold: it is sent no setup). */
	if (gp__cgroup_enter(s)) {
		s->cg_failed = true;
		s->term_at = uv_now(d->loop);
		if (s->warm)
			d->warm_retry_at = s->term_at + WARM_RETRY_MS;
		gp__session_kill(s, SIGKILL);
	}
	return s;

out_free:
	free_unspawned(s);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (ipc[0] >= 0)
		close(ipc[0]);
	if (ipc[1] >= 0)
		close(ipc[1]);
	if (stats_fd >= 0)
		close(stats_fd);
	return NULL;
}

/* ---- warm workers -------------------------------------------------------------------
 * A session's setup costs a fork, an exec, the TLS handshake, loading the driver and cuInit.
 * Warm workers have started and loaded the driver ahead (not cuInit: the driver reads
 * CUDA_VISIBLE_DEVICES there, which is the placement, known at admission), so a connection
 * is handed to one at once (its socket passed with SCM_RIGHTS). They serve
 * no tenant before that, and a worker serves one session only: used, it ends with it. They
 * are counted per GPU but belong to none: placement comes later, at admission. */

unsigned gp__warm_ready(const struct gp_daemon *d)
{
	unsigned n = 0;

	for (const struct gp_session *s = d->warm; s; s = s->next)
		if (!s->exited && !s->term_at)
			n++;
	return n;
}

void gp__warm_fill(struct gp_daemon *d)
{
	unsigned want = d->stopping ? 0 : d->cfg->warm_workers * gp_pool_targets(&d->pool);
	unsigned have = gp__warm_ready(d);

	/* Fewer wanted (a reload): the newest go. */
	for (struct gp_session *s = d->warm; s && have > want; s = s->next) {
		if (!s->exited && !s->term_at) {
			s->term_at = uv_now(d->loop);
			gp__session_kill(s, SIGTERM);
			have--;
		}
	}
	if (uv_now(d->loop) < d->warm_retry_at)
		return;
	for (; have < want; have++) {
		struct gp_session *s = worker_spawn(d, -1);

		if (!s) {
			d->warm_retry_at = uv_now(d->loop) + WARM_RETRY_MS;
			return;
		}
		s->next = d->warm;
		d->warm = s;
	}
}

void gp__warm_drop(struct gp_daemon *d)
{
	/* They hold nothing of anyone's: a stopping daemon does not wait for them. */
	for (struct gp_session *s = d->warm; s; s = s->next) {
		if (!s->exited && (!s->term_at || d->stopping)) {
			s->term_at = uv_now(d->loop);
			gp__session_kill(s, d->stopping ? SIGKILL : SIGTERM);
		}
	}
}

/* A warm worker gets its client: one byte carrying the socket. The worker reads nothing
 * else before it, and nothing has been written to it: a plain sendmsg on the raw socket
 * cannot interleave with libuv's writes. */
static int hand_over(struct gp_session *s, int client_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char byte = 'C';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c;
	uv_os_fd_t fd;
	ssize_t n;

	if (uv_fileno((uv_handle_t *)&s->ctl, &fd))
		return -1;
	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &client_fd, sizeof(int));
	do {
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/* The oldest ready warm worker, out of d->warm and given the client; NULL if none took it. */
static struct gp_session *warm_take(struct gp_daemon *d, int client_fd)
{
	struct gp_session **pp, **pick = NULL, *s;

	for (pp = &d->warm; *pp; pp = &(*pp)->next)
		if (!(*pp)->exited && !(*pp)->term_at)
			pick = pp; /* the list is newest first */
	if (!pick)
		return NULL;
	s = *pick;
	if (hand_over(s, client_fd)) {
		gp_log_warn("warm worker %d: cannot hand it a client; ending it", s->proc.pid);
		s->term_at = uv_now(d->loop);
		gp__session_kill(s, SIGKILL);
		return NULL;
	}
	*pick = s->next;
	s->warm = false;
	return s;
}

void gp__session_spawn(struct gp_daemon *d, int client_fd, const char *addr,
		       enum gp_transport transport)
{
	Gp__WorkerSetup setup = GP__WORKER_SETUP__INIT;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	/* The Unix socket's peer, from the kernel, before the worker has the socket: admission
	 * names the local tenant from this, never from the worker. */
	bool cred = transport == GP_TRANSPORT_UNIX &&
		    getsockopt(client_fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0;
	struct gp_session *s;
	uint32_t uid = 0;
	bool warm;

	/* worker_uids: none free is a busy pool, which the client tries again (uids.c). */
	if (d->cfg->worker_uid_first && gp__uid_pick(d, &uid)) {
		gp_log_warnx("connection from %s closed: every uid of worker_uids is a live "
			     "worker's",
			     addr);
		close(client_fd);
		return;
	}
	s = warm_take(d, client_fd);
	warm = s != NULL;
	if (!s)
		s = worker_spawn(d, client_fd);
	close(client_fd);
	if (!s)
		return;
	s->peer_known = cred;
	s->peer_uid = cred ? cr.uid : (uid_t)-1;
	s->tenant_from = (int)d->cfg->tenant_from;
	s->mtls = transport == GP_TRANSPORT_TLS && d->cfg->tls_ca && *d->cfg->tls_ca;
	if (s->mtls)
		s->tls_ca = strdup(d->cfg->tls_ca); /* NULL when out of memory: refused */
	/* The nonce a client's tenant proof must sign (src/proof.h): fresh for each session. */
	s->nonce_set = RAND_bytes(s->nonce, sizeof(s->nonce)) == 1;
	if (s->nonce_set) {
		setup.tenant_nonce.data = s->nonce;
		setup.tenant_nonce.len = sizeof(s->nonce);
	} else {
		gp_log_error("session: no random bytes for its tenant nonce; certificate clients "
			     "are refused");
	}
	s->uid = uid;
	s->id = d->next_id++;
	gp__cgroup_name(s);
	s->started = time(NULL);
	s->started_ms = gp__wall_ms();
	atomic_store(&s->stats->last_active, (int64_t)s->started);
	s->transport = transport;
	snprintf(s->client_addr, sizeof(s->client_addr), "%s", addr);
	s->next = d->sessions;
	d->sessions = s;
	d->nsessions++;

	setup.session_id = s->id;
	setup.tls_cert = d->cfg->tls_cert;
	setup.tls_key = d->cfg->tls_key;
	setup.tls_ca = d->cfg->tls_ca ? d->cfg->tls_ca : "";
	setup.driver = d->cfg->driver;
	setup.client_addr = s->client_addr;
	setup.log_level = (uint32_t)(gp_log_level() < 0 ? 0 : gp_log_level());
	setup.handshake_timeout = d->cfg->handshake_timeout;
	setup.transport = transport;
	setup.tenant_from = d->cfg->tenant_from;
	setup.max_contexts = d->cfg->max_contexts;
	setup.max_streams = d->cfg->max_streams;
	setup.max_events = d->cfg->max_events;
	setup.max_modules = d->cfg->max_modules;
	setup.seccomp = d->cfg->worker_seccomp;
	setup.uid = uid;
	setup.n_groups = uid ? d->nworker_gids : 0;
	setup.groups = d->worker_gids;
	if (s->cg_failed) {
		/* Killed: its client sees the connection close. */
		gp_log_error("session %llu: its worker has no cgroup; ending it",
			     (unsigned long long)s->id);
	} else {
		gp__uv_send((uv_stream_t *)&s->ctl, GP_MSG_WORKER_SETUP, &setup.base);
		gp_log_debug("session %llu: %s worker %d for %s", (unsigned long long)s->id,
			     warm ? "warm" : "new", s->proc.pid, addr);
		if (uid)
			gp_log_debug("session %llu: its worker runs as uid %u",
				     (unsigned long long)s->id, uid);
	}
	notify_status(d);
	if (warm)
		gp__warm_fill(d); /* the next connection finds one too */
}

/* ---- accepting ------------------------------------------------------------------ */

static void on_client_closed(uv_handle_t *h)
{
	free(h);
}

unsigned gp__sessions_live(const struct gp_daemon *d)
{
	unsigned n = 0;

	for (const struct gp_session *s = d->sessions; s; s = s->next)
		if (!s->exited && !s->refused)
			n++;
	return n;
}

/* Not yet authenticated and admitted: TLS or Hello still under way. */
unsigned gp__sessions_handshaking(const struct gp_daemon *d, enum gp_transport transport)
{
	unsigned n = 0;

	for (const struct gp_session *s = d->sessions; s; s = s->next)
		if (!s->exited && !s->refused && s->state == GP_SESSION_HANDSHAKE &&
		    s->transport == transport)
			n++;
	return n;
}

/*
 * A client host that vanishes (power, partition) sends no FIN: without keepalive its worker
 * would wait for it, and hold its reservation, for ever. These give up within about three
 * minutes of silence, and a stuck send within two.
 */
static void keepalive(int fd)
{
	int on = 1, idle = 60, intvl = 10, cnt = 6;
	unsigned timeout_ms = 120000;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout_ms, sizeof(timeout_ms));
}

/*
 * Takes an accepted connection off libuv: the worker gets its own descriptor (returned,
 * or -1), and addr says who it is: HOST:PORT, or for a Unix socket the peer's uid and pid
 * as the kernel reports them.
 */
static int take_connection(uv_stream_t *server, bool local, char *addr, size_t addrlen)
{
	struct gp_daemon *d = server->data;
	union {
		uv_tcp_t tcp;
		uv_pipe_t pipe;
	} * h;
	struct sockaddr_storage ss;
	int namelen = sizeof(ss), fd, dupfd;

	h = malloc(sizeof(*h));
	if (!h)
		return -1;
	if (local)
		uv_pipe_init(d->loop, &h->pipe, 0);
	else
		uv_tcp_init(d->loop, &h->tcp);
	if (uv_accept(server, (uv_stream_t *)h) || uv_fileno((uv_handle_t *)h, &fd)) {
		uv_close((uv_handle_t *)h, on_client_closed);
		return -1;
	}
	if (local) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0)
			snprintf(addr, addrlen, "local:uid=%u,pid=%d", (unsigned)cr.uid,
				 (int)cr.pid);
		else
			snprintf(addr, addrlen, "local");
	} else {
		memset(&ss, 0, sizeof(ss));
		uv_tcp_getpeername(&h->tcp, (struct sockaddr *)&ss, &namelen);
		gp__format_addr(&ss, addr, addrlen);
		uv_tcp_nodelay(&h->tcp, 1);
	}
	dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	uv_close((uv_handle_t *)h, on_client_closed);
	if (dupfd < 0)
		gp_log_warn("dup");
	return dupfd;
}

static void on_any_connection(uv_stream_t *server, int status, enum gp_transport transport)
{
	struct gp_daemon *d = server->data;
	char addr[128];
	int fd;

	if (status < 0) {
		gp_log_warnx("accept: %s", uv_strerror(status));
		return;
	}
	fd = take_connection(server, transport == GP_TRANSPORT_UNIX, addr, sizeof(addr));
	if (fd < 0)
		return;
	if (d->stopping) {
		gp_log_warnx("connection from %s refused: shutting down", addr);
		close(fd);
		return;
	}
	if (transport != GP_TRANSPORT_UNIX)
		keepalive(fd);
	/* No worker yet: that waits for its first message and a free slot (pending.c). */
	gp__pending_add(d, fd, addr, transport);
	gp__pending_pump(d);
}

static void on_connection(uv_stream_t *server, int status)
{
	on_any_connection(server, status, GP_TRANSPORT_TLS);
}

static void on_plain_connection(uv_stream_t *server, int status)
{
	on_any_connection(server, status, GP_TRANSPORT_PLAIN);
}

static void on_local_connection(uv_stream_t *server, int status)
{
	on_any_connection(server, status, GP_TRANSPORT_UNIX);
}

int gp__supervisor_listen(struct gp_daemon *d)
{
	const struct gp_config *cfg = d->cfg;
	int r = gp__tcp_listen(d, &d->listener, cfg->listen, on_connection, d->listen_addr,
			       sizeof(d->listen_addr));

	if (r)
		return r;
	d->listening = true;
	if (cfg->listen_plain) {
		r = gp__tcp_listen(d, &d->plain, cfg->listen_plain, on_plain_connection,
				   d->plain_addr, sizeof(d->plain_addr));
		if (r)
			return r;
		d->plain_open = true;
		gp_log_warnx(
			"listening without TLS on %s (listen_plain): no encryption, and tenants "
			"only by token",
			d->plain_addr);
	}
	if (cfg->listen_unix) {
		r = gp__unix_listen(d, &d->local, cfg->listen_unix, cfg->listen_unix_group,
				    !cfg->listen_unix_group, on_local_connection, "listen_unix");
		if (r)
			return r;
		d->local_open = true;
		gp_log_info("clients on this host: %s (%s)", cfg->listen_unix,
			    cfg->listen_unix_group ? "its group" : "everyone");
	}
	return 0;
}

void gp__supervisor_stop(struct gp_daemon *d)
{
	if (d->listening) {
		uv_close((uv_handle_t *)&d->listener, NULL);
		d->listening = false;
	}
	if (d->plain_open) {
		uv_close((uv_handle_t *)&d->plain, NULL);
		d->plain_open = false;
	}
	if (d->local_open) {
		uv_close((uv_handle_t *)&d->local, NULL);
		unlink(d->cfg->listen_unix);
		d->local_open = false;
	}
	gp__pending_close_all(d);
	gp__warm_drop(d);
	if (d->nsessions > 0)
		return;
	/* The MPS control daemons, once their clients are gone: their stops go on from the tick,
	 * which comes back here when they are done. */
	gp__mps_stop_begin(d);
	if (!gp__mps_stopped(d))
		return;
	gp__acct_stop(d);
	gp__admin_close(d);
	gp__remote_close(d);
	gp__metrics_close(d);
	if (!uv_is_closing((uv_handle_t *)&d->sigterm)) {
		uv_close((uv_handle_t *)&d->sigterm, NULL);
		uv_close((uv_handle_t *)&d->sigint, NULL);
		uv_close((uv_handle_t *)&d->sighup, NULL);
		uv_close((uv_handle_t *)&d->tick, NULL);
	}
}

void gp__supervisor_drain(struct gp_daemon *d)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d->drain_deadline = uv_now(d->loop) + (uint64_t)d->cfg->drain_grace * 1000;
	gp_log_info("draining: no new sessions; %u session%s get %u s to finish", d->nsessions,
		    d->nsessions == 1 ? "" : "s", d->cfg->drain_grace);
	sd_notify(0, "STOPPING=1");
	gp__admit_expire(d, true, "the pool is shutting down");
	gp__supervisor_stop(d);
	notify_status(d);
}

static unsigned handshake_limit(const struct gp_daemon *d)
{
	return d->cfg->handshake_timeout ? d->cfg->handshake_timeout : 15;
}

/* One call has run past kernel_timeout: SIGUSR1 has the worker answer it with
 * CUDA_ERROR_LAUNCH_TIMEOUT and end (worker/watchdog.c); SIGKILL follows if it does not. */
static void kernel_timeout(struct gp_session *s, unsigned secs)
{
	gp_log_warnx("session %llu (tenant %s): a call has run past kernel_timeout (%u s); "
		     "ending the session",
		     (unsigned long long)s->id, s->tenant[0] ? s->tenant : "-", secs);
	s->evicted = true;
	s->end_code = "kernel_timeout";
	s->term_at = uv_now(s->d->loop);
	gp__session_kill(s, SIGUSR1);
}

void gp__supervisor_tick(struct gp_daemon *d)
{
	uint64_t now = uv_now(d->loop);
	int64_t wall = (int64_t)time(NULL);
	unsigned kt;

	gp__admit_expire(d, false, NULL);
	gp__admit_preempt_tick(d);
	gp__pending_tick(d);
	gp__remote_tick(d);
	gp__cgroup_tick(d);
	gp__mps_tick(d);
	gp__util_tick(d);
	for (struct gp_session *s = d->warm; s; s = s->next) {
		if (!s->exited && s->term_at && now - s->term_at > KILL_AFTER_MS) {
			gp__session_kill(s, SIGKILL);
			s->term_at = now;
		}
	}
	gp__warm_fill(d);
	for (struct gp_session *s = d->sessions; s; s = s->next) {
		if (s->exited)
			continue;
		if (s->term_at && now - s->term_at > KILL_AFTER_MS) {
			gp_log_warnx("session %llu: worker %d ignored SIGTERM; killing it",
				     (unsigned long long)s->id, s->proc.pid);
			gp__session_kill(s, SIGKILL);
			s->term_at = now; /* once more in 5 s if even that does not work */
			continue;
		}
		if (d->stopping && now >= d->drain_deadline) {
			gp__session_end(s, "drained", "drain_grace is over");
			continue;
		}
		/* The worker enforces handshake_timeout itself; this catches one that does not
		 * (a client trickling TLS records a byte at a time resets socket timeouts). */
		if (s->state == GP_SESSION_HANDSHAKE &&
		    wall - s->started > (int64_t)handshake_limit(d) + 5) {
			gp__session_end(s, "handshake_timeout", "handshake_timeout reached");
			continue;
		}
		/* Idle: no call for idle_timeout seconds, and none running now. */
		if (d->cfg->idle_timeout && s->claim.state == GP_CLAIM_ADMITTED && s->stats &&
		    !atomic_load(&s->stats->in_call) &&
		    wall - atomic_load(&s->stats->last_active) > (int64_t)d->cfg->idle_timeout)
			gp__session_end(s, "idle_timeout", "idle_timeout reached");
		else if (!s->term_at && s->claim.state == GP_CLAIM_ADMITTED && s->stats &&
			 atomic_load(&s->stats->in_call) &&
			 (kt = gp_config_kernel_timeout(d->cfg, s->tenant)) &&
			 wall - atomic_load(&s->stats->last_active) > (int64_t)kt)
			kernel_timeout(s, kt);
	}
}
