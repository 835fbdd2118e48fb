/* cgroup.c -- a cgroup per worker: its host memory, tasks and CPU (cgroup v2 or v1).
 *
 * Where (the `cgroup` key, docs/operations.md "Host limits per worker"):
 *  - v2, `auto`: the daemon's own cgroup (systemd's Delegate=yes gives it the unit's). A
 *    cgroup with processes cannot enable controllers for its children (v2's "no internal
 *    processes" rule), so the supervisor first moves itself into the leaf <own>/supervisor,
 *    then enables memory, pids and cpu in <own>/cgroup.subtree_control.
 *  - v1, `auto` (hybrid hosts): in each of the memory, pids and cpu hierarchies, a directory
 *    of this daemon's, <own>/gpupoold-<pid>, beside any a killed daemon left (removed at
 *    start once their daemon is gone).
 *  - `cgroup PATH`: PATH in the v2 hierarchy when it has the memory controller there, else
 *    in each v1 hierarchy; made if missing, and a start that cannot use it is fatal.
 *  - none of these writable: no cgroup, said once at start. rlimits cannot stand in: the
 *    workers all run as one user (RLIMIT_NPROC counts per user), and the CUDA driver
 *    reserves address space for all device and host memory, which RLIMIT_AS counts (softgpu
 *    reserves its device memory too) and under which RLIMIT_DATA fails it (security.md).
 *
 * Each worker gets <base>/worker-<pid> as soon as it is spawned (a warm one too, so the
 * driver it loads ahead is charged to it), with memory, pids and cpu limits, and the pid
 * written to its cgroup.procs before any setup is sent: it serves no tenant before. When it
 * is handed a session the directory is renamed session-<id> (v1; v2 renames no cgroup, so
 * there the worker moves into a new one), and at admission the tenant's host_memory=
 * applies. At the worker's exit the supervisor reads whether the kernel's OOM
 * killer or pids.max refused it, kills whatever is left in the cgroup and removes it;
 * directories still busy are retried each tick.
 *
 * DESIGN: the supervisor's loop thread only, like the rest of daemon.h; every write is a
 * small synchronous one to cgroupfs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

static const char *const ctl_name[GP_CG_NCTL] = {"memory", "pids", "cpu"};

/* ---- small file helpers ----------------------------------------------------------- */

static int write_file(const char *dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, r = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	if (n < 0)
		r = -errno;
	close(fd);
	return r;
}

/* The file's first bytes, NUL-terminated; the length or a negative errno. */
static ssize_t read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

static int read_u64(const char *dir, const char *file, uint64_t *out)
{
	char buf[64];
	char *end;

	if (read_file(dir, file, buf, sizeof(buf)) <= 0)
		return -1;
	if (strncmp(buf, "max", 3) == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	*out = strtoull(buf, &end, 10);
	return end == buf ? -1 : 0;
}

/* The number after "key " in a flat keyed file (memory.events, oom_control, pids.events). */
static uint64_t keyed(const char *dir, const char *file, const char *key)
{
	char buf[1024], *p;
	size_t kl = strlen(key);

	if (read_file(dir, file, buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return strtoull(p + kl + 1, NULL, 10);
	return 0;
}

/* out = a b (b a "/name" or a path starting with '/'); false when it does not fit. */
static bool join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s", a, b);

	return n >= 0 && (size_t)n < len;
}

static bool writable(const char *dir, const char *file)
{
	char path[PATH_MAX], name[256];

	snprintf(name, sizeof(name), "/%s", file);
	return join(path, sizeof(path), dir, name) && access(dir, W_OK) == 0 &&
	       access(path, W_OK) == 0;
}

/* ---- where the hierarchies are ---------------------------------------------------- */

/* Whether a comma-separated list has the word. */
static bool has_word(const char *list, const char *word, char sep)
{
	size_t wl = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, sep), p = p ? p + 1 : NULL)
		if (strncmp(p, word, wl) == 0 &&
		    (p[wl] == sep || p[wl] == '\0' || p[wl] == '\n' || p[wl] == ' '))
			return true;
	return false;
}

/*
 * The mount point of the v2 hierarchy (want NULL) or of the v1 hierarchy with controller
 * `want`, from /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTS ... - TYPE SRC SUPER".
 * Only mounts of the hierarchy's root ("/") count.
 */
static bool find_mount(const char *want, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char root[PATH_MAX], point[PATH_MAX], type[64], src[256], super[1024];
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %255s %1023s", type, src, super) != 3 ||
		    strcmp(root, "/") != 0)
			continue;
		if (want ? strcmp(type, "cgroup") == 0 && has_word(super, want, ',')
			 : strcmp(type, "cgroup2") == 0) {
			snprintf(out, len, "%s", point);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The daemon's own cgroup in the v2 hierarchy (want NULL) or in v1 controller want's. */
static bool own_cgroup(const char *want, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		line[strcspn(line, ":")] = '\0';
		if (want ? has_word(c1 + 1, want, ',') : strcmp(line, "0") == 0 && c1[1] == '\0') {
			c2[1 + strcspn(c2 + 1, "\n")] = '\0';
			snprintf(out, len, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* mkdir that finds an existing directory fine. */
static int make_dir(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	return -errno;
}

/* ---- v2 -------------------------------------------------------------------------- */

/* dir can hold sessions: memory and pids among its controllers, and ours to write. */
static bool v2_usable(const char *dir)
{
	char buf[512];

	if (read_file(dir, "cgroup.controllers", buf, sizeof(buf)) <= 0)
		return false;
	return has_word(buf, "memory", ' ') && has_word(buf, "pids", ' ') &&
	       writable(dir, "cgroup.subtree_control");
}

/* Enables the controllers for dir's children; moves the supervisor out first when it is
 * in dir itself (auto). */
static int v2_enable(struct gp_daemon *d, const char *dir, bool move_self, char *why, size_t len)
{
	char leaf[PATH_MAX], pid[32], buf[512];
	int r;

	if (move_self) {
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (!join(leaf, sizeof(leaf), dir, "/supervisor"))
			r = -ENAMETOOLONG;
		else if (!(r = make_dir(leaf)))
			r = write_file(leaf, "cgroup.procs", pid);
		if (r) {
			snprintf(why, len, "cannot move gpupoold into %s: %s", leaf, strerror(-r));
			return r;
		}
	}
	r = write_file(dir, "cgroup.subtree_control", "+memory +pids");
	if (r) {
		snprintf(why, len,
			 "cannot enable memory and pids in %s/cgroup.subtree_control: %s%s", dir,
			 strerror(-r),
			 r == -EBUSY ? " (other processes are in it: with systemd, Delegate=yes "
				       "gives gpupoold a cgroup of its own)"
				     : "");
		return r;
	}
	read_file(dir, "cgroup.controllers", buf, sizeof(buf));
	if (has_word(buf, "cpu", ' '))
		d->cg.cpu_ok = write_file(dir, "cgroup.subtree_control", "+cpu") == 0;
	for (int c = 0; c < GP_CG_NCTL; c++)
		snprintf(d->cg.base[c], sizeof(d->cg.base[c]), "%s", dir);
	d->cg.version = 2;
	return 0;
}

/* ---- v1 -------------------------------------------------------------------------- */

/* Removes the per-daemon directories a daemon that is gone left in parent (gpupoold-PID),
 * with the empty worker directories in them. */
static void v1_sweep(const char *parent)
{
	DIR *dir = opendir(parent);
	struct dirent *e;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char path[PATH_MAX], name[300];
		char *end;
		long pid;
		DIR *sub;
		struct dirent *se;

		if (strncmp(e->d_name, "gpupoold-", 9) != 0)
			continue;
		pid = strtol(e->d_name + 9, &end, 10);
		if (*end || pid <= 0 || pid == getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(name, sizeof(name), "/%s", e->d_name);
		if (!join(path, sizeof(path), parent, name))
			continue;
		if ((sub = opendir(path))) {
			while ((se = readdir(sub))) {
				char child[PATH_MAX];

				if (strncmp(se->d_name, "session-", 8) != 0 &&
				    strncmp(se->d_name, "worker-", 7) != 0)
					continue;
				snprintf(name, sizeof(name), "/%s", se->d_name);
				if (join(child, sizeof(child), path, name))
					rmdir(child);
			}
			closedir(sub);
		}
		if (rmdir(path) == 0)
			gp_log_debug("cgroup: removed %s, left by a gpupoold that is gone", path);
	}
	closedir(dir);
}

/* The v1 hierarchies: memory is required, pids and cpu are used where they are writable. */
static int v1_setup(struct gp_daemon *d, const char *path, char *why, size_t len)
{
	bool any = false;

	for (int c = 0; c < GP_CG_NCTL; c++) {
		char mnt[PATH_MAX], own[PATH_MAX], dir[PATH_MAX], name[32];

		d->cg.base[c][0] = '\0';
		if (!find_mount(ctl_name[c], mnt, sizeof(mnt)))
			continue;
		if (path) {
			if (!join(dir, sizeof(dir), mnt, path))
				continue;
		} else {
			char parent[PATH_MAX];

			if (!own_cgroup(ctl_name[c], own, sizeof(own)) ||
			    !join(parent, sizeof(parent), mnt, own) || access(parent, W_OK) != 0)
				continue;
			v1_sweep(parent);
			snprintf(name, sizeof(name), "/gpupoold-%d", (int)getpid());
			if (!join(dir, sizeof(dir), parent, name))
				continue;
		}
		if (make_dir(dir) || !writable(dir, "cgroup.procs"))
			continue;
		snprintf(d->cg.base[c], sizeof(d->cg.base[c]), "%s", dir);
		any = true;
	}
	if (!d->cg.base[GP_CG_MEMORY][0]) {
		snprintf(why, len, "no writable v1 memory hierarchy%s%s", path ? " for " : "",
			 path ? path : "");
		for (int c = 0; c < GP_CG_NCTL; c++)
			if (d->cg.base[c][0] && !path)
				rmdir(d->cg.base[c]);
		memset(d->cg.base, 0, sizeof(d->cg.base));
		return any ? -EACCES : -ENOENT;
	}
	d->cg.cpu_ok = d->cg.base[GP_CG_CPU][0] != '\0';
	d->cg.version = 1;
	return 0;
}

/* ---- start and stop ----------------------------------------------------------------- */

static void forget(struct gp_daemon *d, const char *name);

static bool is_gone(const struct gp_daemon *d, const char *name)
{
	for (const struct gp_cg_gone *g = d->cg.gone; g; g = g->next)
		if (strcmp(g->name, name) == 0)
			return true;
	return false;
}

/*
 * The worker and session cgroups a daemon that was killed left in a base that outlives it
 * (v2, a `cgroup PATH`; v1's per-daemon directories are swept by v1_sweep): what is left in
 * them is killed and they go, now or on a later tick. Else session-1 of this run would be
 * joined to the old session-1, its processes and its counters (an OOM kill) (move_into
 * takes only a cgroup it made).
 */
static void sweep(struct gp_daemon *d)
{
	for (int c = 0; c < GP_CG_NCTL; c++) {
		DIR *dir = d->cg.base[c][0] && !(d->cg.version == 2 && c > 0)
				   ? opendir(d->cg.base[c])
				   : NULL;
		struct dirent *e;

		if (!dir)
			continue;
		while ((e = readdir(dir))) {
			if ((strncmp(e->d_name, "session-", 8) != 0 &&
			     strncmp(e->d_name, "worker-", 7) != 0) ||
			    strlen(e->d_name) >= sizeof(d->cg.gone->name) || is_gone(d, e->d_name))
				continue;
			gp_log_info("cgroup %s/%s: left by an earlier gpupoold; removing it",
				    d->cg.base[c], e->d_name);
			forget(d, e->d_name);
		}
		closedir(dir);
	}
}

int gp__cgroup_start(struct gp_daemon *d)
{
	const struct gp_config *cfg = d->cfg;
	char mnt[PATH_MAX], own[PATH_MAX], dir[PATH_MAX], why[PATH_MAX + 256] = "";
	char why1[PATH_MAX + 64] = "";
	const char *path = cfg->cgroup == GP_CGROUP_PATH ? cfg->cgroup_path : NULL;
	bool have_v2 = find_mount(NULL, mnt, sizeof(mnt));
	int r;

	memset(&d->cg, 0, sizeof(d->cg));
	if (cfg->cgroup == GP_CGROUP_OFF) {
		gp_log_info("cgroup off: worker_host_memory, worker_tasks and worker_cpu are not "
			    "enforced");
		return 0;
	}
	if (have_v2 &&
	    (path ? join(dir, sizeof(dir), mnt, path)
		  : own_cgroup(NULL, own, sizeof(own)) && join(dir, sizeof(dir), mnt, own))) {
		char ctl[512];

		/* Not on a hybrid host's v2 hierarchy, which has no memory controller. */
		if (path && read_file(mnt, "cgroup.controllers", ctl, sizeof(ctl)) > 0 &&
		    has_word(ctl, "memory", ' '))
			make_dir(dir);
		if (!v2_usable(dir))
			snprintf(why, sizeof(why),
				 "v2 cgroup %s: no memory and pids controllers, or not writable",
				 dir);
		else if (v2_enable(d, dir, !path, why, sizeof(why)) == 0)
			goto done;
	}
	r = v1_setup(d, path, why1, sizeof(why1));
	if (r == 0)
		goto done;
	if (why[0])
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "; %s", why1);
	else
		snprintf(why, sizeof(why), "%s", why1);
	if (path) {
		gp_log_error("cgroup %s: cannot use it in the v2 hierarchy (memory and pids "
			     "controllers, writable) nor in v1's: %s",
			     path, why);
		return -EACCES;
	}
	gp_log_warnx("no writable cgroup (%s): worker_host_memory, worker_tasks and worker_cpu "
		     "are not enforced, and poolctl shows each worker's resident memory; run "
		     "gpupoold with a delegated cgroup (systemd: Delegate=yes)",
		     why[0] ? why : "neither a delegated v2 cgroup nor v1 controllers");
	return 0;
done:
	if (d->cg.version == 2 || path)
		sweep(d);
	if (d->cg.version == 2)
		gp_log_info("cgroup v2: a cgroup per worker under %s (memory, pids%s)",
			    d->cg.base[GP_CG_MEMORY], d->cg.cpu_ok ? ", cpu" : "");
	else
		gp_log_info("cgroup v1: a cgroup per worker under %s%s%s%s%s", d->cg.base[0],
			    d->cg.base[1][0] ? ", " : "", d->cg.base[1],
			    d->cg.base[2][0] ? ", " : "", d->cg.base[2]);
	if (cfg->worker_cpu && !d->cg.cpu_ok)
		gp_log_warnx("worker_cpu %u%%: no cpu controller to enforce it", cfg->worker_cpu);
	return 0;
}

static bool try_remove(struct gp_daemon *d, const char *name);

/* Removes a worker's cgroup now, or each tick until it can be. */
static void forget(struct gp_daemon *d, const char *name)
{
	struct gp_cg_gone *g;

	if (try_remove(d, name) || !(g = calloc(1, sizeof(*g))))
		return;
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->next = d->cg.gone;
	d->cg.gone = g;
}

void gp__cgroup_tick(struct gp_daemon *d)
{
	struct gp_cg_gone **pp = &d->cg.gone;

	while (*pp) {
		struct gp_cg_gone *g = *pp;

		if (try_remove(d, g->name) || ++g->tries > 40) {
			if (g->tries > 40)
				gp_log_warnx("cgroup %s/%s: still busy; left in place",
					     d->cg.base[GP_CG_MEMORY], g->name);
			*pp = g->next;
			free(g);
		} else {
			pp = &g->next;
		}
	}
}

void gp__cgroup_stop(struct gp_daemon *d)
{
	gp__cgroup_tick(d);
	while (d->cg.gone) {
		struct gp_cg_gone *g = d->cg.gone;

		d->cg.gone = g->next;
		free(g);
	}
	/* v1's per-daemon directories go with the daemon; v2's is the unit's or the file's. */
	if (d->cg.version == 1 && d->cfg->cgroup == GP_CGROUP_AUTO)
		for (int c = 0; c < GP_CG_NCTL; c++)
			if (d->cg.base[c][0])
				rmdir(d->cg.base[c]);
	d->cg.version = 0;
}

/* ---- a worker's cgroup --------------------------------------------------------------- */

/* The directory of controller c for a worker's cgroup name; false when c has none. */
static bool dir_of(const struct gp_daemon *d, int c, const char *name, char *out, size_t len)
{
	if (!d->cg.version || !d->cg.base[c][0] || !name[0])
		return false;
	return (size_t)snprintf(out, len, "%s/%s", d->cg.base[c], name) < len;
}

static int set_memory(struct gp_daemon *d, const char *name, uint64_t bytes, uint64_t old)
{
	char dir[PATH_MAX], v[32];
	int r;

	if (!dir_of(d, GP_CG_MEMORY, name, dir, sizeof(dir)))
		return 0;
	if (bytes)
		snprintf(v, sizeof(v), "%" PRIu64, bytes);
	if (d->cg.version == 2) {
		r = write_file(dir, "memory.max", bytes ? v : "max");
		/* The limit is of memory, swapped out or not; the whole worker goes at once. */
		write_file(dir, "memory.swap.max", "0");
		write_file(dir, "memory.oom.group", "1");
		return r;
	}
	if (!bytes)
		snprintf(v, sizeof(v), "-1");
	/* memsw (memory and swap) may never be below the memory limit: order by direction. */
	if (!bytes || bytes > old) {
		write_file(dir, "memory.memsw.limit_in_bytes", v);
		r = write_file(dir, "memory.limit_in_bytes", v);
	} else {
		r = write_file(dir, "memory.limit_in_bytes", v);
		write_file(dir, "memory.memsw.limit_in_bytes", v);
	}
	return r;
}

static void apply_limits(struct gp_session *s);

/* Takes name off the list of cgroups whose removal is retried. */
static void unforget(struct gp_daemon *d, const char *name)
{
	for (struct gp_cg_gone **pp = &d->cg.gone; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name) == 0) {
			struct gp_cg_gone *g = *pp;

			*pp = g->next;
			free(g);
			return;
		}
	}
}

/* Makes the cgroup `name` (s->cg_name from now), sets its limits, then moves the worker in:
 * it runs under every limit from the moment it is in. 0 or a negative code (logged). */
static int move_into(struct gp_session *s, const char *name)
{
	struct gp_daemon *d = s->d;
	char dir[PATH_MAX], pid[32];
	int r;

	snprintf(s->cg_name, sizeof(s->cg_name), "%s", name);
	snprintf(pid, sizeof(pid), "%d", s->proc.pid);
	/* The name is this worker's now: a retried removal of an earlier one of the same name
	 * (a reused pid) must not end it. */
	unforget(d, name);
	for (int c = 0; c < GP_CG_NCTL; c++) {
		/* In v2 one directory holds every controller: made and joined once. */
		if (!dir_of(d, c, s->cg_name, dir, sizeof(dir)) ||
		    (c == GP_CG_CPU && !d->cg.cpu_ok) || (d->cg.version == 2 && c > 0))
			continue;
		/* Only a cgroup made here: one left from before still holds others' processes
		 * and counters (sweep, forget remove it). */
		if (mkdir(dir, 0755) != 0) {
			r = -errno;
			gp_log_error("cgroup %s: %s%s", dir, strerror(-r),
				     r == -EEXIST ? " (left from before, not yet removed)" : "");
			return r;
		}
	}
	apply_limits(s);
	for (int c = 0; c < GP_CG_NCTL; c++) {
		if (!dir_of(d, c, s->cg_name, dir, sizeof(dir)) ||
		    (c == GP_CG_CPU && !d->cg.cpu_ok) || (d->cg.version == 2 && c > 0))
			continue;
		if ((r = write_file(dir, "cgroup.procs", pid))) {
			gp_log_error("cgroup %s: cannot move worker %s into it: %s", dir, pid,
				     strerror(-r));
			return r;
		}
	}
	return 0;
}

int gp__cgroup_enter(struct gp_session *s)
{
	char name[sizeof(s->cg_name)];
	int r;

	if (!s->d->cg.version)
		return 0;
	snprintf(name, sizeof(name), "worker-%d", s->proc.pid);
	r = move_into(s, name);
	if (r)
		gp__cgroup_leave(s, 0, NULL, 0);
	return r;
}

/* The configuration's limits (now: a reload applies to a warm worker at its hand-over). */
static void apply_limits(struct gp_session *s)
{
	struct gp_daemon *d = s->d;
	const struct gp_config *cfg = d->cfg;
	char dir[PATH_MAX], v[64];
	uint64_t old = s->cg_memory;
	int r;

	s->cg_memory = cfg->worker_host_memory;
	if ((r = set_memory(d, s->cg_name, s->cg_memory, old)))
		gp_log_warnx("cgroup %s: cannot set the memory limit: %s", s->cg_name,
			     strerror(-r));
	if (dir_of(d, GP_CG_PIDS, s->cg_name, dir, sizeof(dir))) {
		snprintf(v, sizeof(v), "%u", cfg->worker_tasks);
		if ((r = write_file(dir, "pids.max", cfg->worker_tasks ? v : "max")))
			gp_log_warnx("cgroup %s: cannot set pids.max: %s", dir, strerror(-r));
	}
	if (d->cg.cpu_ok && dir_of(d, GP_CG_CPU, s->cg_name, dir, sizeof(dir))) {
		/* worker_cpu is percent of one CPU: quota per 100 ms period. */
		uint64_t quota = (uint64_t)cfg->worker_cpu * 1000;

		if (d->cg.version == 2) {
			snprintf(v, sizeof(v), "%" PRIu64 " 100000", quota);
			r = write_file(dir, "cpu.max", cfg->worker_cpu ? v : "max 100000");
		} else {
			write_file(dir, "cpu.cfs_period_us", "100000");
			snprintf(v, sizeof(v), "%" PRIu64, quota);
			r = write_file(dir, "cpu.cfs_quota_us", cfg->worker_cpu ? v : "-1");
		}
		if (r)
			gp_log_warnx("cgroup %s: cannot set the CPU quota: %s", dir, strerror(-r));
	}
}

void gp__cgroup_name(struct gp_session *s)
{
	struct gp_daemon *d = s->d;
	char name[sizeof(s->cg_name)], old[sizeof(s->cg_name)], from[PATH_MAX], to[PATH_MAX];
	bool all = true;

	if (!s->cg_name[0])
		return;
	snprintf(name, sizeof(name), "session-%" PRIu64, s->id);
	snprintf(old, sizeof(old), "%s", s->cg_name);
	for (int c = 0; c < GP_CG_NCTL && all; c++) {
		if (!dir_of(d, c, old, from, sizeof(from)) || (c == GP_CG_CPU && !d->cg.cpu_ok) ||
		    (d->cg.version == 2 && c > 0))
			continue;
		dir_of(d, c, name, to, sizeof(to));
		all = rename(from, to) == 0;
	}
	if (all) {
		snprintf(s->cg_name, sizeof(s->cg_name), "%s", name);
		apply_limits(s);
		return;
	}
	/* v2 renames no cgroup (v1 does): the ones renamed go back, and the worker moves to a
	 * new one. What it was charged for before (a warm worker's driver) stays behind with
	 * the old one, which goes. */
	for (int c = 0; c < GP_CG_NCTL; c++)
		if (dir_of(d, c, name, from, sizeof(from)) && dir_of(d, c, old, to, sizeof(to)))
			rename(from, to);
	if (move_into(s, name)) {
		/* Perhaps half in (v1): it serves nobody, and its exit removes the new one. */
		gp_log_error("session %" PRIu64 ": its worker cannot have its cgroup; ending it",
			     s->id);
		s->cg_failed = true;
		gp__session_kill(s, SIGKILL);
	}
	forget(d, old);
}

void gp__cgroup_admitted(struct gp_session *s)
{
	uint64_t want = gp_config_host_memory(s->d->cfg, s->tenant);
	int r;

	if (!s->cg_name[0] || want == s->cg_memory)
		return;
	r = set_memory(s->d, s->cg_name, want, s->cg_memory);
	if (r) {
		gp_log_warnx("session %" PRIu64 ": tenant %s's host_memory (%" PRIu64
			     " bytes) not applied: %s",
			     s->id, s->tenant, want, strerror(-r));
		return;
	}
	s->cg_memory = want;
}

uint64_t gp__cgroup_memory(const struct gp_session *s, bool *from_cgroup)
{
	char dir[PATH_MAX], buf[4096], *p;
	uint64_t v = 0;

	*from_cgroup = false;
	if (dir_of(s->d, GP_CG_MEMORY, s->cg_name, dir, sizeof(dir)) &&
	    read_u64(dir, s->d->cg.version == 2 ? "memory.current" : "memory.usage_in_bytes", &v) ==
		    0) {
		*from_cgroup = true;
		return v;
	}
	/* No cgroup: the worker's resident set. */
	if (s->exited || s->proc.pid <= 0)
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d", s->proc.pid);
	if (read_file(dir, "status", buf, sizeof(buf)) <= 0 || !(p = strstr(buf, "\nVmRSS:")))
		return 0;
	return strtoull(p + 7, NULL, 10) * 1024;
}

/* Kills whatever is left in a worker's cgroup and removes it; true when it is gone. */
static bool try_remove(struct gp_daemon *d, const char *name)
{
	bool gone = true;

	for (int c = 0; c < GP_CG_NCTL; c++) {
		char dir[PATH_MAX], buf[4096];

		if (!dir_of(d, c, name, dir, sizeof(dir)) || (d->cg.version == 2 && c > 0))
			continue;
		if (access(dir, F_OK) != 0)
			continue;
		if (d->cg.version == 2 && write_file(dir, "cgroup.kill", "1") == 0) {
			/* cgroup.kill (Linux 5.14) ends every process in it. */
		} else if (read_file(dir, "cgroup.procs", buf, sizeof(buf)) > 0) {
			for (char *p = buf; *p;) {
				long pid = strtol(p, &p, 10);

				if (pid > 0)
					kill((pid_t)pid, SIGKILL);
				while (*p == '\n')
					p++;
				if (pid <= 0)
					break;
			}
		}
		if (rmdir(dir) != 0 && errno != ENOENT)
			gone = false;
	}
	return gone;
}

const char *gp__cgroup_leave(struct gp_session *s, int sig, char *why, size_t len)
{
	struct gp_daemon *d = s->d;
	const char *code = NULL;
	char dir[PATH_MAX];
	uint64_t oom = 0, refused = 0;

	if (why && len)
		why[0] = '\0';
	if (!s->cg_name[0])
		return NULL;
	if (dir_of(d, GP_CG_MEMORY, s->cg_name, dir, sizeof(dir))) {
		uint64_t peak = 0;

		if (d->cg.version == 2) {
			oom = keyed(dir, "memory.events", "oom_kill");
			read_u64(dir, "memory.peak", &peak);
		} else {
			uint64_t failcnt = 0;

			oom = keyed(dir, "memory.oom_control", "oom_kill");
			read_u64(dir, "memory.max_usage_in_bytes", &peak);
			/* Kernels before 4.13 count no kills: a SIGKILL at the limit is one. */
			if (!oom && sig == SIGKILL &&
			    read_u64(dir, "memory.failcnt", &failcnt) == 0 && failcnt &&
			    s->cg_memory && peak + (1u << 20) >= s->cg_memory)
				oom = 1;
		}
		if (oom && why) {
			const struct gp_tenant *t =
				s->tenant[0] ? gp_config_tenant(d->cfg, s->tenant) : NULL;
			bool own = t && t->host_memory && t->host_memory == s->cg_memory;

			snprintf(why, len,
				 "worker exceeded %s%s%s (%" PRIu64 " bytes); the kernel's OOM "
				 "killer ended it, peak %" PRIu64 " bytes",
				 own ? "tenant " : "worker_host_memory", own ? s->tenant : "",
				 own ? "'s host_memory" : "", s->cg_memory, peak);
			code = "host_memory";
		}
	}
	if (dir_of(d, GP_CG_PIDS, s->cg_name, dir, sizeof(dir)))
		refused = keyed(dir, "pids.events", "max");
	if (refused)
		gp_log_info("session %" PRIu64 ": worker_tasks (%u) refused %" PRIu64
			    " thread or process creations",
			    s->id, d->cfg->worker_tasks, refused);
	forget(d, s->cg_name);
	s->cg_name[0] = '\0';
	return code;
}
