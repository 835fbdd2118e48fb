/* admin.c -- the admin socket: poolctl asks, the supervisor answers from its own state. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "daemon.h"
#include "error.h"
#include "log.h"

#define ADMIN_MAX_FRAME (64u * 1024)

struct admin_conn {
	uv_pipe_t pipe;
	struct gp_daemon *d;
	struct gp_frame_decoder dec;
	bool querying; /* a usage query runs on the threadpool: reading waits for it */
	bool closed;   /* the pipe is closed; freed when no query still holds it */
	bool starting; /* in gp__acct_usage, which may answer at once */
};

static void on_conn_closed(uv_handle_t *h)
{
	struct admin_conn *c = h->data;

	c->closed = true;
	if (c->querying)
		return;
	gp_frame_decoder_deinit(&c->dec);
	free(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void read_frames(struct admin_conn *c);

/* The answer to "usage", from the threadpool's work (accounting.c). */
static void on_usage(void *arg, Gp__AdminReply *rep)
{
	struct admin_conn *c = arg;

	c->querying = false;
	if (c->closed) { /* closed while the query ran: it was only waiting for this */
		on_conn_closed((uv_handle_t *)&c->pipe);
		return;
	}
	if (gp__uv_send((uv_stream_t *)&c->pipe, GP_MSG_ADMIN_REPLY, &rep->base) == GP_ETOOBIG) {
		Gp__AdminReply big = GP__ADMIN_REPLY__INIT;

		/* poolctl would wait for ever for an answer that was never sent. */
		big.status = GP_ETOOBIG;
		big.message = "the answer is larger than one message holds; ask for a shorter "
			      "range, or group by tenant";
		gp__uv_send((uv_stream_t *)&c->pipe, GP_MSG_ADMIN_REPLY, &big.base);
	}
	if (c->starting)
		return; /* answered at once: answer() reads on */
	/* Requests that came meanwhile, in order, then new ones. */
	read_frames(c);
	if (!c->querying && !uv_is_closing((uv_handle_t *)&c->pipe))
		uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

/* ---- commands ------------------------------------------------------------------ */

static int parse_index(const Gp__AdminRequest *req, uint64_t *v, char *msg, size_t len)
{
	char *end;

	if (req->n_arg != 1 || !req->arg[0][0]) {
		snprintf(msg, len, "%s takes one argument", req->command);
		return GP_ETYPE;
	}
	*v = strtoull(req->arg[0], &end, 10);
	if (*end) {
		snprintf(msg, len, "%s: '%s' is not a number", req->command, req->arg[0]);
		return GP_ETYPE;
	}
	return 0;
}

static int cmd_evict(struct gp_daemon *d, const Gp__AdminRequest *req, char *msg, size_t len)
{
	struct gp_session *s;
	uint64_t id;
	int r = parse_index(req, &id, msg, len);

	if (r)
		return r;
	s = gp__session_find(d, id);
	if (!s || s->exited) {
		snprintf(msg, len, "no session %llu", (unsigned long long)id);
		return -ENOENT;
	}
	gp__session_end(s, "evicted", "evicted by poolctl");
	snprintf(msg, len, "session %llu is being ended", (unsigned long long)id);
	return 0;
}

static int cmd_drain(struct gp_daemon *d, const Gp__AdminRequest *req, char *msg, size_t len)
{
	bool on = strcmp(req->command, "drain") == 0;
	uint64_t idx;
	int r = parse_index(req, &idx, msg, len);

	if (r)
		return r;
	for (uint32_t g = 0; g < d->pool.ngpus; g++) {
		if (d->pool.gpu[g].index != idx)
			continue;
		d->pool.gpu[g].draining = on;
		gp_log_info("GPU %u %s by poolctl", d->pool.gpu[g].index,
			    on ? "draining: no new sessions" : "accepting sessions again");
		if (!on)
			gp__admit_pump(d);
		snprintf(msg, len, "GPU %u %s", d->pool.gpu[g].index,
			 on ? "takes no new sessions; running ones continue" : "takes sessions");
		return 0;
	}
	snprintf(msg, len, "no GPU %llu", (unsigned long long)idx);
	return -ENOENT;
}

static int cmd_reload(struct gp_daemon *d, const Gp__AdminRequest *req, char *msg, size_t len)
{
	int r = gp__daemon_reload(d, msg, len);

	if (r == 0)
		snprintf(msg, len, "configuration reloaded from %s", d->cfg->path);
	return r;
}

static const struct {
	const char *name;
	int (*fn)(struct gp_daemon *d, const Gp__AdminRequest *req, char *msg, size_t len);
} commands[] = {
	{"evict", cmd_evict},
	{"drain", cmd_drain},
	{"undrain", cmd_drain},
	{"reload", cmd_reload},
};

static void answer(struct admin_conn *c, const Gp__AdminRequest *req)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	char msg[512] = "";
	bool built = false;

	if (strcmp(req->command, "usage") == 0) {
		/* Answered when the files are read; nothing more is read from this connection
		 * meanwhile, so answers keep the order of their requests. */
		c->querying = true;
		c->starting = true;
		uv_read_stop((uv_stream_t *)&c->pipe);
		gp__acct_usage(c->d, req->usage, on_usage, c);
		c->starting = false;
		if (!c->querying)
			uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
		return;
	}
	if (strcmp(req->command, "status") == 0) {
		if (gp__status_build(c->d, &rep) == 0) {
			built = true;
		} else {
			rep.status = -ENOMEM;
			rep.message = "out of memory";
		}
	} else {
		size_t i;

		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(req->command, commands[i].name) == 0)
				break;
		if (i == sizeof(commands) / sizeof(commands[0])) {
			snprintf(msg, sizeof(msg), "unknown command '%s'", req->command);
			rep.status = GP_ETYPE;
		} else {
			rep.status = commands[i].fn(c->d, req, msg, sizeof(msg));
		}
		rep.message = msg;
	}
	gp__uv_send((uv_stream_t *)&c->pipe, GP_MSG_ADMIN_REPLY, &rep.base);
	if (built)
		gp__status_free(&rep);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char slab[16384];

	*buf = uv_buf_init(slab, sizeof(slab));
}

/* Answers the requests decoded so far, until one is answered later (a usage query). */
static void read_frames(struct admin_conn *c)
{
	struct gp_frame f;
	int r = 0;

	while (!c->querying && (r = gp_frame_decoder_next(&c->dec, &f)) == 1) {
		Gp__AdminRequest *req;

		if (f.hdr.type != GP_MSG_ADMIN_REQUEST ||
		    !(req = (Gp__AdminRequest *)gp_msg_unpack(f.hdr.type, f.msg, f.hdr.msg_len))) {
			r = GP_ETYPE;
			break;
		}
		answer(c, req);
		protobuf_c_message_free_unpacked(&req->base, NULL);
	}
	if (!c->querying && r < 0) {
		gp_log_warnx("admin connection: %s", gp_strerror(r));
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
	}
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct admin_conn *c = stream->data;

	if (nread < 0 || gp_frame_decoder_feed(&c->dec, buf->base, (size_t)nread)) {
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	read_frames(c);
}

static void on_admin_connection(uv_stream_t *server, int status)
{
	struct gp_daemon *d = server->data;
	struct admin_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	gp_frame_decoder_init(&c->dec, ADMIN_MAX_FRAME);
	uv_pipe_init(d->loop, &c->pipe, 0);
	c->pipe.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->pipe)) {
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

int gp__admin_listen(struct gp_daemon *d)
{
	/* Root and the admin group only. */
	int r = gp__unix_listen(d, &d->admin, d->cfg->admin_socket, d->cfg->admin_group, false,
				on_admin_connection, "admin socket");

	if (!r)
		d->admin_open = true;
	return r;
}

void gp__admin_close(struct gp_daemon *d)
{
	if (!d->admin_open)
		return;
	uv_close((uv_handle_t *)&d->admin, NULL);
	unlink(d->cfg->admin_socket);
	d->admin_open = false;
}
