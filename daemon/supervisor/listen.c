/* listen.c -- the listening sockets every role of the supervisor opens: TCP (clients over
 * TLS or plain) and Unix sockets (clients on this host, the admin socket). */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "daemon.h"
#include "error.h"
#include "log.h"

void gp__format_addr(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		uv_ip4_name(a, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		uv_ip6_name(a, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		snprintf(out, len, "unknown");
	}
}

int gp__tcp_listen(struct gp_daemon *d, uv_tcp_t *tcp, const char *hostport, uv_connection_cb cb,
		   char *bound, size_t boundlen)
{
	struct sockaddr_storage ss;
	char host[256], port[16];
	int namelen, r;

	if (gp_split_hostport(hostport, host, sizeof(host), port, sizeof(port)))
		return GP_ECONFIG;
	if (strchr(host, ':'))
		r = uv_ip6_addr(host, atoi(port), (struct sockaddr_in6 *)&ss);
	else
		r = uv_ip4_addr(host, atoi(port), (struct sockaddr_in *)&ss);
	if (r) {
		gp_log_error("listen %s: not an address: %s", hostport, uv_strerror(r));
		return r;
	}
	uv_tcp_init(d->loop, tcp);
	tcp->data = d;
	r = uv_tcp_bind(tcp, (struct sockaddr *)&ss, 0);
	if (!r)
		r = uv_listen((uv_stream_t *)tcp, 128, cb);
	if (r) {
		gp_log_error("listen %s: %s", hostport, uv_strerror(r));
		uv_close((uv_handle_t *)tcp, NULL);
		return r;
	}
	namelen = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &namelen);
	gp__format_addr(&ss, bound, boundlen);
	return 0;
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

/*
 * Between bind() and the chown that gives the socket its group, whoever may write in its
 * directory could put a symlink in its place, and chown would follow it (to /etc/shadow).
 * So the directory must be one only we (or root) can change: owned by us or root, and
 * writable by no one else unless sticky (then no one else may remove or rename our socket).
 * The group is given with lchown, which never follows a link, and only to a socket.
 */
static int safe_dir(const char *path, const char *what)
{
	char *copy = strdup(path);
	const char *dir;
	struct stat st;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (stat(dir, &st) != 0) {
		ret = -errno;
		gp_log_error("%s %s: its directory %s: %s", what, path, dir, strerror(-ret));
	} else if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		   ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		gp_log_error("%s %s: its directory %s can be changed by other users (owner %u, "
			     "mode %o); use one only gpupoold's user can write, or a sticky one",
			     what, path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
	}
	free(copy);
	return ret;
}

int gp__unix_listen(struct gp_daemon *d, uv_pipe_t *pipe, const char *path, const char *group,
		    bool everyone, uv_connection_cb cb, const char *what)
{
	struct stat st;
	mode_t old;
	int r;

	r = safe_dir(path, what);
	if (r)
		return r;
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

		if (!gr || lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) ||
		    lchown(path, (uid_t)-1, gr->gr_gid) != 0) {
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
