/* poolctl.c -- show and steer a gpupool daemon through its admin socket, or many daemons
 * through their admin endpoints (--pool, fleet.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "config.h"
#include "conn.h"
#include "error.h"
#include "poolctl.h"

#define DEFAULT_SOCKET "/run/gpupool/admin.sock"

static const struct {
	const char *name;
	int (*fn)(struct poolctl *pc, int argc, char **argv);
	const char *description;
} commands[] = {
	{"status", poolctl_status, "GPUs and sessions of the pool (default)"},
	{"sessions", poolctl_sessions, "the sessions only"},
	{"evict", poolctl_evict, "ID: end a session now; its memory is freed"},
	{"drain", poolctl_drain, "GPU: place no new sessions on a GPU"},
	{"undrain", poolctl_undrain, "GPU: place sessions on a GPU again"},
	{"reload", poolctl_reload, "re-read the daemon's configuration (as SIGHUP)"},
	{"usage", poolctl_usage,
	 "--since DATE [--until DATE] [--by tenant|host|day]: sessions' use, summed"},
	{"quote", poolctl_quote,
	 "[--gpus N] [--memory SIZE] [--slice S] [--token T] (with --pool): what a session "
	 "would get"},
};

static void usage(void)
{
	fprintf(stderr,
		"usage: poolctl [-s ADMIN_SOCKET | --pool ENDPOINTS [--cert F --key F --ca F]] "
		"[COMMAND [ARG]] [--json] [--watch [SECONDS]]\n"
		"  --pool: daemons' admin endpoints (admin_listen): HOST:PORT,..., a name with\n"
		"  several addresses, or srv:_gpupool-admin._tcp.DOMAIN; evict, drain and undrain\n"
		"  then take HOST/SESSION or HOST/GPU\n"
		"\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(stderr, "  %-10s %s\n", commands[i].name, commands[i].description);
	exit(2);
}

static int connect_admin(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "poolctl: socket path too long: %s\n", path);
		exit(1);
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			fprintf(stderr, "poolctl: gpupoold is not running (no daemon at %s)\n",
				path);
		else
			fprintf(stderr, "poolctl: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

Gp__AdminReply *poolctl_request(struct poolctl *pc, const char *command, int argc, char **argv)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;

	req.command = (char *)command;
	req.n_arg = (size_t)argc;
	req.arg = argv;
	return poolctl_send(pc, &req);
}

/* The one daemon --pool names, over TLS; exits 1 with the reason on failure. */
static Gp__AdminReply *send_remote(struct poolctl *pc, Gp__AdminRequest *req)
{
	struct gp_endpoints eps = {0};
	uint32_t seed = (uint32_t)getpid();
	Gp__AdminReply *rep;
	char err[1024];

	if (gp_resolve(pc->pool, &seed, &eps, err, sizeof(err))) {
		fprintf(stderr, "poolctl: --pool %s: %s\n", pc->pool, err);
		exit(1);
	}
	if (eps.n != 1) {
		fprintf(stderr,
			"poolctl: %s: --pool %s names %zu daemons; this command takes one\n",
			req->command, pc->pool, eps.n);
		exit(1);
	}
	rep = poolctl_ask(pc, &eps.v[0], req, err, sizeof(err));
	if (!rep) {
		fprintf(stderr, "poolctl: %s: %s\n", eps.v[0].addr, err);
		exit(1);
	}
	gp_endpoints_deinit(&eps);
	return rep;
}

Gp__AdminReply *poolctl_send(struct poolctl *pc, Gp__AdminRequest *req)
{
	const char *command = req->command;
	struct gp_frame_hdr h;
	Gp__AdminReply *rep;
	struct gp_conn *c;

	if (pc->pool) {
		rep = send_remote(pc, req);
		goto out_check;
	}
	c = gp_conn_new(connect_admin(pc->socket));

	if (!c) {
		fprintf(stderr, "poolctl: out of memory\n");
		exit(1);
	}
	if (gp_conn_send(c, GP_MSG_ADMIN_REQUEST, 0, 1, &req->base, NULL, 0) || gp_conn_flush(c) ||
	    gp_conn_recv(c, &h)) {
		fprintf(stderr, "poolctl: %s: %s\n", pc->socket, c->err);
		exit(1);
	}
	if (h.type != GP_MSG_ADMIN_REPLY ||
	    !(rep = (Gp__AdminReply *)gp_msg_unpack(h.type, c->msg, h.msg_len))) {
		fprintf(stderr, "poolctl: unexpected answer from %s\n", pc->socket);
		exit(1);
	}
	gp_conn_free(c);
out_check:
	if (rep->status != 0) {
		fprintf(stderr, "poolctl: %s: %s\n", command,
			rep->message && *rep->message ? rep->message : gp_strerror(rep->status));
		exit(1);
	}
	return rep;
}

int main(int argc, char **argv)
{
	struct poolctl pc = {0};
	const char *cmd = NULL;
	bool socket_given = false;
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int nargs = 0;

	if (!args)
		return 1;
	pc.socket = getenv("GPUPOOL_ADMIN_SOCKET");
	if (!pc.socket)
		pc.socket = DEFAULT_SOCKET;
	/* Options may stand anywhere, as in `poolctl status --json`; the first word that is
	 * not an option is the command, the words after it are its arguments. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
			pc.socket = argv[++i];
			socket_given = true;
		} else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc) {
			pc.pool = argv[++i];
		} else if (strcmp(argv[i], "--cert") == 0 && i + 1 < argc) {
			pc.cert = argv[++i];
		} else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc) {
			pc.key = argv[++i];
		} else if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc) {
			pc.ca = argv[++i];
		} else if (strcmp(argv[i], "--json") == 0) {
			pc.json = true;
		} else if (strcmp(argv[i], "--watch") == 0 || strcmp(argv[i], "-w") == 0) {
			pc.watch = 2;
			if (i + 1 < argc && atof(argv[i + 1]) > 0)
				pc.watch = atof(argv[++i]);
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage();
		} else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("poolctl %s\n", GP_VERSION_STRING);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] && cmd) {
			args[nargs++] = argv[i]; /* the command's own (usage --since) */
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "poolctl: unknown option '%s'\n", argv[i]);
			usage();
		} else if (!cmd) {
			cmd = argv[i];
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (!pc.pool && !socket_given) /* -s names one daemon: the environment's pool waits */
		pc.pool = getenv("GPUPOOL_ADMIN_POOL");
	if (!pc.cert)
		pc.cert = getenv("GPUPOOL_ADMIN_CERT");
	if (!pc.key)
		pc.key = getenv("GPUPOOL_ADMIN_KEY");
	if (!pc.ca)
		pc.ca = getenv("GPUPOOL_ADMIN_CA");
	if (!pc.ca)
		pc.ca = getenv("GPUPOOL_CA");
	if (!cmd)
		cmd = "status";
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(commands[k].name, cmd) == 0) {
			int rc = commands[k].fn(&pc, nargs, args);

			free(args);
			return rc;
		}
	}
	fprintf(stderr, "poolctl: unknown command '%s'\n", cmd);
	usage();
}
