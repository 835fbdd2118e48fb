/* admin.c -- the admin socket: poolctl asks, the supervisor answers from its own state.
 * The commands themselves are shared with the admin endpoint over TLS (remote.c). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "daemon.h"
#include "error.h"
#include "escape.h"
#include "log.h"

#define ADMIN_MAX_FRAME (64u * 1024)

struct admin_conn {
	uv_pipe_t pipe;
	struct gp_daemon *d;
	struct gp_frame_decoder dec;
	bool querying; /* a usage query runs on the threadpool: reading waits for it */
	bool closed;   /* the pipe is closed; freed when no query still holds it */
	bool starting; /* in gp__acct_usage, which may answer at once */
	bool refused;  /* told why it may not ask: what it sends is dropped until it goes */
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

bool gp__admin_writes(const char *command)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(command, commands[i].name) == 0)
			return true;
	return false;
}

bool gp__admin_answer(struct gp_daemon *d, const Gp__AdminRequest *req, Gp__AdminReply *rep,
		      char *msg, size_t len)
{
	size_t i;

	if (strcmp(req->command, "status") == 0) {
		if (gp__status_build(d, rep) == 0) {
			rep->host = d->hostname;
			rep->admin_listen = d->remote_addr;
			return true;
		}
		rep->status = -ENOMEM;
		rep->message = "out of memory";
		return false;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(req->command, commands[i].name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		char cmd[64];

		gp_escape(cmd, sizeof(cmd), req->command, NULL);
		snprintf(msg, len, "unknown command '%s'", cmd);
		rep->status = GP_ETYPE;
	} else {
		rep->status = commands[i].fn(d, req, msg, len);
	}
	rep->message = msg;
	return false;
}

static void answer(struct admin_conn *c, const Gp__AdminRequest *req)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	char msg[512] = "";
	bool built;

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
	built = gp__admin_answer(c->d, req, &rep, msg, sizeof(msg));
	rep.role = "local";
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

	if (c->refused) {
		/* Read to its end, so that the reason reaches it rather than a reset. */
		if (nread < 0)
			uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	if (nread < 0 || gp_frame_decoder_feed(&c->dec, buf->base, (size_t)nread)) {
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	read_frames(c);
}

/* ---- who may ask ---------------------------------------------------------------
 *
 * The socket's mode (0660, its group admin_group) keeps most users out; each connection is
 * then checked by the credentials the kernel gives (SO_PEERCRED, SO_PEERGROUPS), which the
 * peer cannot choose. Allowed: root, the daemon's own user and members of admin_group.
 * Workers run as the daemon's user and run tenants' code, so the daemon's user alone proves
 * nothing: a process the daemon started (its parent chain reaches the daemon) or one that
 * carries no_new_privs, which every worker sets before its tenant's first call and which
 * no process can clear or shed by forking or exec, is refused whatever its user. Under systemd
 * (the daemon's parent is PID 1, its cgroup a .service's; the unit sets NoNewPrivileges, so
 * the daemon has no_new_privs too and the mark says nothing) a process in the daemon's own
 * cgroup is refused: it is a worker or a child of one, and without write access to the
 * cgroup tree (ProtectControlGroups) it cannot move out.
 */

/* The parent of pid, from /proc; -1 when it is gone. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "pid (comm) S ppid ...": comm may hold anything, ')' included. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* 1 if pid runs with no_new_privs, 0 if not, -1 when it is gone. */
static int has_nnp(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "NoNewPrivs: %d", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The text of /proc/PID/cgroup (pid 0: this process), in buf; false if it cannot be read. */
static bool cgroup_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0 || (size_t)n == len - 1)
		return false;
	buf[n] = 0;
	return true;
}

/*
 * Whether a /proc/PID/cgroup text puts the process in the unit's cgroup or below it (where
 * the workers' own cgroups are, cgroup.c): per hierarchy line of the unit's that names the
 * .service, the same hierarchy's path in cg is the unit's or starts with it and a '/'.
 */
static bool in_unit(const char *cg, const char *unit)
{
	for (const char *u = unit; *u; u += strcspn(u, "\n"), u += *u == '\n') {
		size_t ulen = strcspn(u, "\n");
		const char *c1 = memchr(u, ':', ulen);
		const char *c2 = c1 ? memchr(c1 + 1, ':', ulen - (size_t)(c1 + 1 - u)) : NULL;
		size_t plen, pathlen;

		if (!c2 || !memmem(u, ulen, ".service", 8))
			continue;
		plen = (size_t)(c2 + 1 - u);
		pathlen = ulen - plen;
		for (const char *c = cg; *c; c += strcspn(c, "\n"), c += *c == '\n') {
			size_t clen = strcspn(c, "\n");

			if (clen < plen + pathlen || memcmp(c, u, plen + pathlen) != 0)
				continue;
			if (clen == plen + pathlen || c[plen + pathlen] == '/')
				return true;
		}
	}
	return false;
}

static bool in_group(int fd, const struct ucred *cr, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cr->gid == gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return false; /* more than 256 groups, or no SO_PEERGROUPS: its primary only */
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* 0 if the peer on fd may use the admin socket; otherwise why not, in why. */
static int admin_peer_check(struct gp_daemon *d, int fd, struct ucred *cr, char *why, size_t len)
{
	socklen_t crlen = sizeof(*cr);
	pid_t self = getpid(), p;
	int depth;

	memset(cr, 0, sizeof(*cr));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &crlen) != 0) {
		snprintf(why, len, "its credentials cannot be read: %s", strerror(errno));
		return -EACCES;
	}
	if (cr->pid <= 0) {
		snprintf(why, len, "its process is not visible from the daemon's pid namespace");
		return -EACCES;
	}
	for (p = cr->pid, depth = 0; p > 1 && depth < 4096; depth++) {
		if (p == self) {
			snprintf(why, len, "it is a process gpupoold started (a worker)");
			return -EACCES;
		}
		p = parent_of(p);
		if (p < 0) {
			snprintf(why, len, "its process is gone");
			return -EACCES;
		}
	}
	if (d->unit_cgroup) {
		char cg[4096];

		if (!cgroup_of(cr->pid, cg, sizeof(cg)) || in_unit(cg, d->unit_cgroup)) {
			snprintf(why, len,
				 "it runs in gpupoold's own cgroup, as its workers do (run poolctl "
				 "outside the gpupoold unit)");
			return -EACCES;
		}
	}
	if (!d->own_nnp && has_nnp(cr->pid) != 0) {
		snprintf(why, len,
			 "it runs with no_new_privs, as every worker does (run poolctl without "
			 "NoNewPrivileges)");
		return -EACCES;
	}
	if (cr->uid == 0 || cr->uid == geteuid())
		return 0;
	if (d->admin_has_gid && in_group(fd, cr, (gid_t)d->admin_gid))
		return 0;
	if (d->admin_has_gid)
		snprintf(why, len, "only root, uid %u and group %s may use it", (unsigned)geteuid(),
			 d->cfg->admin_group);
	else
		snprintf(why, len, "only root and uid %u may use it (no admin_group is set)",
			 (unsigned)geteuid());
	return -EACCES;
}

static void admin_refuse(struct admin_conn *c, int status, const struct ucred *cr, const char *why)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	char msg[512];

	gp_log_warnx("admin socket: refused uid %u gid %u pid %d: %s", (unsigned)cr->uid,
		     (unsigned)cr->gid, (int)cr->pid, why);
	snprintf(msg, sizeof(msg), "admin socket refused: %s", why);
	rep.status = status;
	rep.message = msg;
	c->refused = true;
	gp__uv_send((uv_stream_t *)&c->pipe, GP_MSG_ADMIN_REPLY, &rep.base);
}

static void on_admin_connection(uv_stream_t *server, int status)
{
	struct gp_daemon *d = server->data;
	struct admin_conn *c;
	struct ucred cr;
	char why[256];
	uv_os_fd_t fd;
	int r;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->d = d;
	gp_frame_decoder_init(&c->dec, ADMIN_MAX_FRAME);
	uv_pipe_init(d->loop, &c->pipe, 0);
	c->pipe.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) || uv_fileno((uv_handle_t *)&c->pipe, &fd)) {
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
		return;
	}
	r = admin_peer_check(d, fd, &cr, why, sizeof(why));
	if (r)
		admin_refuse(c, r, &cr, why);
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

int gp__admin_listen(struct gp_daemon *d)
{
	/* Root and the admin group only: by the socket's mode, then each peer's credentials. */
	int r;

	d->own_nnp = has_nnp(getpid()) == 1;
	if (getppid() == 1) {
		char cg[4096];

		if (cgroup_of(0, cg, sizeof(cg)) && strstr(cg, ".service\n"))
			d->unit_cgroup = strdup(cg);
	}
	r = gp__unix_listen(d, &d->admin, d->cfg->admin_socket, d->cfg->admin_group, false,
			    on_admin_connection, "admin socket");
	if (r)
		return r;
	d->admin_open = true;
	/* The socket was given the group (or the start failed, saying why): it exists. */
	if (d->cfg->admin_group) {
		struct group *gr = getgrnam(d->cfg->admin_group);

		if (!gr) {
			gp_log_error("admin socket %s: cannot give it to group %s: no such group",
				     d->cfg->admin_socket, d->cfg->admin_group);
			gp__admin_close(d);
			return -EINVAL;
		}
		d->admin_has_gid = true;
		d->admin_gid = (unsigned)gr->gr_gid;
	}
	return 0;
}

void gp__admin_close(struct gp_daemon *d)
{
	free(d->unit_cgroup);
	d->unit_cgroup = NULL;
	if (!d->admin_open)
		return;
	uv_close((uv_handle_t *)&d->admin, NULL);
	unlink(d->cfg->admin_socket);
	d->admin_open = false;
}
