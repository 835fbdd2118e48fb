/* cmd.c -- the commands that change the pool: evict, drain, undrain, reload. */
#include <stdio.h>

#include "poolctl.h"

/* Sends a command and prints the daemon's one-line answer; errors exit 1 in poolctl_request. */
int poolctl_simple(struct poolctl *pc, const char *command, int argc, char **argv)
{
	Gp__AdminReply *r = poolctl_request(pc, command, argc, argv);

	if (r->message && *r->message)
		printf("%s\n", r->message);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

static int one_arg(const char *command, const char *what, int argc)
{
	if (argc != 1) {
		fprintf(stderr, "usage: poolctl %s %s\n", command, what);
		return 2;
	}
	return 0;
}

int poolctl_evict(struct poolctl *pc, int argc, char **argv)
{
	if (one_arg("evict", pc->pool ? "HOST/SESSION_ID" : "SESSION_ID", argc))
		return 2;
	if (pc->pool)
		return poolctl_fleet_command(pc, "evict", argv[0]);
	return poolctl_simple(pc, "evict", argc, argv);
}

int poolctl_drain(struct poolctl *pc, int argc, char **argv)
{
	if (one_arg("drain", pc->pool ? "HOST/GPU (HOST/: all its GPUs)" : "GPU", argc))
		return 2;
	if (pc->pool)
		return poolctl_fleet_command(pc, "drain", argv[0]);
	return poolctl_simple(pc, "drain", argc, argv);
}

int poolctl_undrain(struct poolctl *pc, int argc, char **argv)
{
	if (one_arg("undrain", pc->pool ? "HOST/GPU (HOST/: all its GPUs)" : "GPU", argc))
		return 2;
	if (pc->pool)
		return poolctl_fleet_command(pc, "undrain", argv[0]);
	return poolctl_simple(pc, "undrain", argc, argv);
}

int poolctl_reload(struct poolctl *pc, int argc, char **argv)
{
	if (argc != 0) {
		fprintf(stderr, "usage: poolctl reload\n");
		return 2;
	}
	return poolctl_simple(pc, "reload", 0, NULL);
}
