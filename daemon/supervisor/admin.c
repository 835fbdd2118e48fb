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
};

static const char *state_name(int st)
{
	switch (st) {
	case GP_SESSION_HANDSHAKE:
		return "handshake";
	case GP_SESSION_QUEUED:
		return "queued";
	case GP_SESSION_ACTIVE:
		return "active";
	case GP_SESSION_CLOSING:
		return "closing";
	default:
		return "unknown";
	}
}

/* Fills a status reply; the arrays are allocated here and freed by gp__status_free(). */
int gp__status_build(struct gp_daemon *d, Gp__AdminReply *rep)
{
	Gp__GpuStatus *gs = calloc(d->pool.ngpus + 1, sizeof(*gs));
	Gp__SessionStatus *ss = calloc(d->nsessions + 1, sizeof(*ss));
	size_t n = 0;

	rep->gpu = calloc(d->pool.ngpus + 1, sizeof(*rep->gpu));
	rep->session = calloc(d->nsessions + 1, sizeof(*rep->session));
	if (!gs || !ss || !rep->gpu || !rep->session) {
		free(gs);
		free(ss);
		free(rep->gpu);
		free(rep->session);
		return -ENOMEM;
	}
	/* Slot 0 holds the arrays even when empty, so gp__status_free always finds them. */
	rep->gpu[0] = gs;
	rep->session[0] = ss;
	for (uint32_t g = 0; g < d->pool.ngpus; g++) {
		gp__gpu_status__init(&gs[g]);
		gs[g].index = d->pool.gpu[g].index;
		gs[g].name = d->gpus[g].name;
		gs[g].uuid.data = d->gpus[g].uuid;
		gs[g].uuid.len = 16;
		gs[g].total_mem = d->pool.gpu[g].total_mem;
		gs[g].reserved_mem = d->pool.gpu[g].reserved;
		gs[g].sessions = d->pool.gpu[g].sessions;
		gs[g].draining = d->pool.gpu[g].draining;
		rep->gpu[g] = &gs[g];
	}
	rep->n_gpu = d->pool.ngpus;
	for (struct gp_session *s = d->sessions; s; s = s->next, n++) {
		Gp__SessionStatus *x = &ss[n];
		struct gp_stats *st = s->stats;

		gp__session_status__init(x);
		x->id = s->id;
		x->tenant = s->tenant;
		x->client = s->client_addr;
		x->client_host = s->client_host;
		x->client_pid = s->client_pid;
		x->program = s->program;
		x->n_gpu = s->claim.ndev;
		x->gpu = s->claim.dev;
		x->mem_limit = s->claim.mem_limit;
		x->started = s->started;
		x->worker_pid = (uint32_t)s->proc.pid;
		/* Admission states are the supervisor's; the worker's page says the rest. */
		x->state = (char *)state_name(s->claim.state == GP_CLAIM_QUEUED || !st ||
							      s->state == GP_SESSION_CLOSING
						      ? s->state
						      : (int)atomic_load(&st->state));
		x->gpus_requested = s->claim.want_gpus;
		x->memory_requested = s->claim.want_memory;
		if (s->claim.state == GP_CLAIM_QUEUED)
			x->queued_since = (int64_t)time(NULL) -
					  (int64_t)((uv_now(d->loop) - s->claim.queued_at) / 1000);
		if (st) {
			x->mem_used = atomic_load_explicit(&st->mem_used, memory_order_relaxed);
			x->mem_peak = atomic_load_explicit(&st->mem_peak, memory_order_relaxed);
			x->calls = atomic_load_explicit(&st->calls, memory_order_relaxed);
			x->bytes_in = atomic_load_explicit(&st->bytes_in, memory_order_relaxed);
			x->bytes_out = atomic_load_explicit(&st->bytes_out, memory_order_relaxed);
			x->last_active =
				atomic_load_explicit(&st->last_active, memory_order_relaxed);
			/* Per-GPU use: the worker counts by its own device index. */
			for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++)
				for (uint32_t g = 0; g < d->pool.ngpus; g++)
					if (d->pool.gpu[g].index == s->claim.dev[i])
						gs[g].used_mem += atomic_load_explicit(
							&st->dev_mem_used[i], memory_order_relaxed);
		}
		rep->session[n] = x;
	}
	rep->n_session = n;
	rep->version = GP_VERSION_STRING;
	rep->started = d->started;
	rep->draining = d->stopping;
	rep->listen = d->listen_addr;
	rep->listen_plain = d->plain_open ? d->plain_addr : "";
	rep->listen_unix = d->local_open ? d->cfg->listen_unix : "";
	return 0;
}

void gp__status_free(Gp__AdminReply *rep)
{
	/* The element arrays were allocated once each (n + 1 entries), even when empty. */
	free(rep->gpu[0]);
	free(rep->session[0]);
	free(rep->gpu);
	free(rep->session);
}

static void on_conn_closed(uv_handle_t *h)
{
	struct admin_conn *c = h->data;

	gp_frame_decoder_deinit(&c->dec);
	free(c);
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
	gp__session_end(s, "evicted by poolctl");
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

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct admin_conn *c = stream->data;
	struct gp_frame f;
	int r;

	if (nread < 0 || gp_frame_decoder_feed(&c->dec, buf->base, (size_t)nread)) {
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	while ((r = gp_frame_decoder_next(&c->dec, &f)) == 1) {
		Gp__AdminRequest *req;

		if (f.hdr.type != GP_MSG_ADMIN_REQUEST ||
		    !(req = (Gp__AdminRequest *)gp_msg_unpack(f.hdr.type, f.msg, f.hdr.msg_len))) {
			r = GP_ETYPE;
			break;
		}
		answer(c, req);
		protobuf_c_message_free_unpacked(&req->base, NULL);
	}
	if (r < 0) {
		gp_log_warnx("admin connection: %s", gp_strerror(r));
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
	}
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

static bool socket_alive(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	bool alive;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	alive = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return alive;
}

int gp__unix_listen(struct gp_daemon *d, uv_pipe_t *pipe, const char *path, const char *group,
		    bool everyone, uv_connection_cb cb, const char *what)
{
	struct stat st;
	mode_t old;
	int r;

	/* A socket left by an earlier run is stale and goes; one a running daemon answers on
	 * is not ours to take. */
	if (socket_alive(path)) {
		gp_log_error("%s %s: another gpupoold is running there", what, path);
		return -EADDRINUSE;
	}
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		gp_log_error("%s %s: exists and is not a socket; not removing it", what, path);
		return -EEXIST;
	}
	unlink(path);
	uv_pipe_init(d->loop, pipe, 0);
	pipe->data = d;
	/* Its mode is right from the moment it exists: 0660, or 0666 for everyone. */
	old = umask(everyone ? 0111 : 0117);
	r = uv_pipe_bind(pipe, path);
	umask(old);
	if (!r && group) {
		struct group *gr = getgrnam(group);

		if (!gr || chown(path, (uid_t)-1, gr->gr_gid) != 0) {
			gp_log_error("%s %s: cannot give it to group %s: %s", what, path, group,
				     gr ? strerror(errno) : "no such group");
			uv_close((uv_handle_t *)pipe, NULL);
			unlink(path);
			return -EINVAL;
		}
	}
	if (!r)
		r = uv_listen((uv_stream_t *)pipe, 128, cb);
	if (r) {
		gp_log_error("%s %s: %s", what, path, uv_strerror(r));
		uv_close((uv_handle_t *)pipe, NULL);
		return r;
	}
	return 0;
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
