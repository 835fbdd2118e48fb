/* uids.c -- worker_uids: a uid of its own for each session's worker, from the configured range.
 *
 * The supervisor picks the uid when a worker gets its session (a cold one at its spawn, a
 * warm one at its hand-over: warm workers have none while they wait) and sends it in
 * WorkerSetup; the worker switches to it itself (worker/worker.c, drop_identity), once the
 * pool's key has served the handshake and the driver is initialised. A uid is held while its
 * worker lives, never by two live workers: it is free again once the worker is reaped
 * (s->exited). Picked next-fit from after the last one given, so a freed uid is the last
 * to come back. The range must be used by no one else, another gpupoold included: nothing
 * here can see their processes.
 *
 * The daemon must be able to have it done: root, or a daemon whose workers inherit
 * CAP_SETUID and CAP_SETGID (ambient capabilities, which survive exec) and that keeps
 * CAP_KILL (a worker of another uid can only be signalled with it). A configured range the
 * daemon cannot use stops it at start (and fails a reload): a pool the operator meant to
 * sandbox never runs without.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "daemon.h"
#include "log.h"

static bool cap_effective(uint32_t want)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct c[2];

	if (syscall(SYS_capget, &h, c) != 0)
		return false;
	return (c[0].effective & want) == want;
}

/* Whether this daemon's workers can switch uid, and it can still signal them after. */
static int can_switch(char *why, size_t whylen)
{
	uint32_t need = 1u << CAP_SETUID | 1u << CAP_SETGID | 1u << CAP_KILL;

	if (!cap_effective(need)) {
		snprintf(why, whylen,
			 "worker_uids: the daemon lacks CAP_SETUID, CAP_SETGID or CAP_KILL (run it "
			 "as root, or give it those as ambient capabilities)");
		return -EPERM;
	}
	/* Not root: the exec'd worker keeps only ambient capabilities. */
	if (geteuid() != 0 &&
	    (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SETUID, 0, 0) != 1 ||
	     prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SETGID, 0, 0) != 1)) {
		snprintf(why, whylen,
			 "worker_uids: CAP_SETUID and CAP_SETGID are not ambient capabilities, so "
			 "the workers would not have them (systemd: AmbientCapabilities=)");
		return -EPERM;
	}
	return 0;
}

static int group_id(const char *name, uint32_t *gid)
{
	struct group *gr;
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(name, &end, 10);
	if (!errno && !*end && end != name && v < UINT32_MAX) {
		*gid = (uint32_t)v;
		return 0;
	}
	gr = getgrnam(name);
	if (!gr)
		return -ENOENT;
	*gid = gr->gr_gid;
	return 0;
}

static bool in_range(const struct gp_config *cfg, uint32_t id)
{
	return id >= cfg->worker_uid_first && id <= cfg->worker_uid_last;
}

int gp__uids_resolve(const struct gp_config *cfg, uint32_t *gids, unsigned *ngids, char *why,
		     size_t whylen)
{
	uint32_t admin = 0;
	bool has_admin = cfg->admin_group && group_id(cfg->admin_group, &admin) == 0;
	char *list, *save = NULL;
	int r = 0;

	*ngids = 0;
	if (!cfg->worker_uid_first)
		return 0;
	/* A worker is the uid and the gid of its number: neither may be the daemon's own, nor
	 * that gid admin_group (its files, its key, the admin socket's mode would let it in). */
	if (in_range(cfg, geteuid()) || in_range(cfg, getuid()) || in_range(cfg, getegid()) ||
	    in_range(cfg, getgid()) || (has_admin && in_range(cfg, admin))) {
		snprintf(why, whylen,
			 "worker_uids %u-%u: holds the daemon's own uid or gid%s; pick a range no "
			 "one uses",
			 cfg->worker_uid_first, cfg->worker_uid_last,
			 has_admin ? ", or admin_group's gid" : "");
		return -EINVAL;
	}
	if ((uint64_t)cfg->worker_uid_last - cfg->worker_uid_first + 1 < cfg->max_sessions)
		gp_log_warnx("worker_uids %u-%u: fewer uids than max_sessions (%u); connections "
			     "past them are closed",
			     cfg->worker_uid_first, cfg->worker_uid_last, cfg->max_sessions);
	r = can_switch(why, whylen);
	if (r || !cfg->worker_groups)
		return r;
	list = strdup(cfg->worker_groups);
	if (!list)
		return -ENOMEM;
	for (char *g = strtok_r(list, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
		if (*ngids == GP_WORKER_GROUPS_MAX || group_id(g, &gids[*ngids])) {
			snprintf(why, whylen, "worker_groups: no group %s", g);
			r = -ENOENT;
			break;
		}
		/* Members of admin_group may use the admin socket: never a worker. */
		if (has_admin && gids[*ngids] == admin) {
			snprintf(why, whylen, "worker_groups: %s is admin_group", g);
			r = -EINVAL;
			break;
		}
		(*ngids)++;
	}
	free(list);
	return r;
}

static bool uid_held(const struct gp_daemon *d, uint32_t uid)
{
	for (const struct gp_session *s = d->sessions; s; s = s->next)
		if (s->uid == uid && !s->exited)
			return true;
	return false;
}

int gp__uid_pick(struct gp_daemon *d, uint32_t *uid)
{
	uint32_t first = d->cfg->worker_uid_first, last = d->cfg->worker_uid_last;
	uint64_t span = (uint64_t)last - first + 1;
	uint32_t u = d->uid_next;

	/* Every held uid blocks at most one candidate: nsessions + 1 tries find a free one. */
	for (uint64_t tries = 0; tries < span && tries <= d->nsessions; tries++) {
		if (u < first || u > last)
			u = first;
		if (!uid_held(d, u)) {
			*uid = u;
			d->uid_next = u == last ? first : u + 1;
			return 0;
		}
		u = u == last ? first : u + 1;
	}
	return -EAGAIN;
}
