/* config.c -- parse gpupoold.conf: one "key value" per line, '#' comments. */
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/gpupool.h>

#include "config.h"
#include "error.h"
#include "conn.h"
#include "log.h"
#include "stats.h"

#define MAX_WORDS 16

struct parse {
	struct gp_config *cfg;
	const char *name;
	unsigned line;
	char *err;
	size_t errlen;
};

static int perr(struct parse *p, const char *fmt, ...) GP_PRINTF(2, 3);

static int perr(struct parse *p, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%u: %s", p->name, p->line, msg);
	return GP_ECONFIG;
}

int gp_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return GP_ECONFIG;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return GP_ECONFIG;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return GP_ECONFIG;
	}
	if (*end) {
		end++;
		if (toupper((unsigned char)*end) == 'I')
			end++;
		if (toupper((unsigned char)*end) == 'B')
			end++;
		if (*end)
			return GP_ECONFIG;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return GP_ECONFIG;
	*out = (uint64_t)v << shift;
	return 0;
}

/* ---- keys -------------------------------------------------------------- */

typedef int (*key_fn)(struct parse *p, char **words, int n, size_t off);

static int set_string(struct parse *p, char **words, int n, size_t off)
{
	char **slot = (char **)((char *)p->cfg + off);

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	free(*slot);
	*slot = strdup(words[1]);
	return *slot ? 0 : -ENOMEM;
}

static int set_listen(struct parse *p, char **words, int n, size_t off)
{
	char host[256], port[16];
	long pn;

	if (n != 2)
		return perr(p, "'%s' takes exactly one value, HOST:PORT", words[0]);
	if (gp_split_hostport(words[1], host, sizeof(host), port, sizeof(port)))
		return perr(p, "'%s %s': expected HOST:PORT", words[0], words[1]);
	pn = strtol(port, NULL, 10);
	if (pn < 0 || pn > 65535)
		return perr(p, "'%s %s': port out of range", words[0], words[1]);
	return set_string(p, words, n, off);
}

/* An absolute path that fits a Unix socket address. */
static int set_path(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2)
		return perr(p, "'%s' takes exactly one value, a path", words[0]);
	if (words[1][0] != '/')
		return perr(p, "'%s %s': expected an absolute path", words[0], words[1]);
	if (strlen(words[1]) >= GP_UNIX_PATH_MAX)
		return perr(p, "'%s': the path is longer than a socket address holds (%d)",
			    words[0], GP_UNIX_PATH_MAX - 1);
	return set_string(p, words, n, off);
}

static int set_log_level(struct parse *p, char **words, int n, size_t off)
{
	int lvl;

	if (n != 2)
		return perr(p, "'log_level' takes exactly one value");
	lvl = gp_log_parse_level(words[1]);
	if (lvl < 0)
		return perr(p, "'log_level %s': expected error, warn, info or debug", words[1]);
	p->cfg->log_level = lvl;
	return 0;
}

static int set_uint(struct parse *p, char **words, int n, size_t off)
{
	unsigned *slot = (unsigned *)((char *)p->cfg + off);
	unsigned long v;
	char *end;

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	errno = 0;
	v = strtoul(words[1], &end, 10);
	if (errno || *end || !isdigit((unsigned char)words[1][0]) || v > 1000000)
		return perr(p, "'%s %s': expected a number", words[0], words[1]);
	*slot = (unsigned)v;
	return 0;
}

/* A number of at least 1: a limit or a timeout that 0 would make meaningless. */
static int set_positive(struct parse *p, char **words, int n, size_t off)
{
	int r = set_uint(p, words, n, off);

	if (r == 0 && *(unsigned *)((char *)p->cfg + off) == 0)
		return perr(p, "'%s 0': must be at least 1", words[0]);
	return r;
}

/* Warm workers per GPU: each is a process with the driver loaded, so a few at most. */
#define GP_WARM_WORKERS_MAX 16

static int set_warm(struct parse *p, char **words, int n, size_t off)
{
	int r = set_uint(p, words, n, off);

	if (r == 0 && *(unsigned *)((char *)p->cfg + off) > GP_WARM_WORKERS_MAX)
		return perr(p, "'%s %s': at most %d per GPU", words[0], words[1],
			    GP_WARM_WORKERS_MAX);
	return r;
}

/* accounting_file: an absolute path; PATH.N beside it must fit a path too. */
static int set_file(struct parse *p, char **words, int n, size_t off)
{
	size_t len;

	if (n != 2)
		return perr(p, "'%s' takes exactly one value, a path", words[0]);
	len = strlen(words[1]);
	if (words[1][0] != '/' || words[1][len - 1] == '/')
		return perr(p, "'%s %s': expected the absolute path of a file", words[0], words[1]);
	if (len > 4000)
		return perr(p, "'%s': the path is too long", words[0]);
	return set_string(p, words, n, off);
}

/* accounting_max_bytes: 0 never rotates; anything smaller than 1K would hold no record. */
static int set_rotate_size(struct parse *p, char **words, int n, size_t off)
{
	uint64_t *slot = (uint64_t *)((char *)p->cfg + off);

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	if (gp_parse_size(words[1], slot) || (*slot != 0 && *slot < 1024))
		return perr(p, "'%s %s': expected 0 (never rotate) or a size of at least 1K",
			    words[0], words[1]);
	return 0;
}

/* accounting_keep: rotated files kept, 1..GP_ACCT_KEEP_MAX (each rotation renames them). */
static int set_keep(struct parse *p, char **words, int n, size_t off)
{
	int r = set_uint(p, words, n, off);
	unsigned v = *(unsigned *)((char *)p->cfg + off);

	if (r == 0 && (v == 0 || v > GP_ACCT_KEEP_MAX))
		return perr(p, "'%s %s': expected a number from 1 to %d", words[0], words[1],
			    GP_ACCT_KEEP_MAX);
	return r;
}

static int set_placement(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2)
		return perr(p, "'placement' takes exactly one value");
	if (strcmp(words[1], "spread") == 0)
		p->cfg->placement = GP_PLACE_SPREAD;
	else if (strcmp(words[1], "binpack") == 0)
		p->cfg->placement = GP_PLACE_BINPACK;
	else
		return perr(p, "'placement %s': expected spread or binpack", words[1]);
	return 0;
}

const char *gp_compute_enforce_name(enum gp_compute_enforce e)
{
	static const char *const names[] = {"off", "mps", "time", "both"};

	return (unsigned)e < 4 ? names[e] : "off";
}

/* compute_enforce mps|time|both|off */
static int set_enforce(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	for (int e = GP_ENFORCE_OFF; e <= GP_ENFORCE_BOTH; e++)
		if (strcmp(words[1], gp_compute_enforce_name(e)) == 0) {
			p->cfg->compute_enforce = e;
			return 0;
		}
	return perr(p, "'%s %s': expected mps, time, both or off", words[0], words[1]);
}

/* worker_seccomp on|denylist|off */
static int set_seccomp(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	if (strcmp(words[1], "on") == 0)
		p->cfg->worker_seccomp = GP_SECCOMP_ALLOW;
	else if (strcmp(words[1], "denylist") == 0)
		p->cfg->worker_seccomp = GP_SECCOMP_DENY;
	else if (strcmp(words[1], "off") == 0)
		p->cfg->worker_seccomp = GP_SECCOMP_OFF;
	else
		return perr(p, "'%s %s': expected on, denylist or off", words[0], words[1]);
	return 0;
}

/* worker_uids FIRST-LAST: a range of uids no one else uses; never 0, never (uid_t)-1. */
static int set_worker_uids(struct parse *p, char **words, int n, size_t off)
{
	unsigned long first, last;
	char *end;

	if (n != 2)
		return perr(p, "'%s' takes one range, FIRST-LAST", words[0]);
	errno = 0;
	first = strtoul(words[1], &end, 10);
	if (errno || *end != '-' || !isdigit((unsigned char)words[1][0]) ||
	    !isdigit((unsigned char)end[1]))
		return perr(p, "'%s %s': expected FIRST-LAST, two uids", words[0], words[1]);
	last = strtoul(end + 1, &end, 10);
	if (errno || *end)
		return perr(p, "'%s %s': expected FIRST-LAST, two uids", words[0], words[1]);
	if (first == 0 || last < first || last >= UINT32_MAX)
		return perr(p, "'%s %s': the range must be non-empty and leave out uid 0 and %lu",
			    words[0], words[1], (unsigned long)UINT32_MAX);
	p->cfg->worker_uid_first = (unsigned)first;
	p->cfg->worker_uid_last = (unsigned)last;
	return 0;
}

/* worker_groups NAME|GID[,...]: checked for form here, resolved by the daemon at start. */
static int set_worker_groups(struct parse *p, char **words, int n, size_t off)
{
	unsigned count = 1;

	if (n != 2)
		return perr(p, "'%s' takes one comma-separated list of groups", words[0]);
	for (const char *c = words[1]; *c; c++) {
		if (*c == ',' && (c == words[1] || c[1] == ',' || c[1] == '\0'))
			return perr(p, "'%s %s': an empty group", words[0], words[1]);
		if (*c == ',')
			count++;
		else if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
			return perr(p, "'%s %s': a group is a name or a number", words[0],
				    words[1]);
	}
	if (count > GP_WORKER_GROUPS_MAX)
		return perr(p, "'%s %s': one to %d groups", words[0], words[1],
			    GP_WORKER_GROUPS_MAX);
	return set_string(p, words, n, off);
}

static int set_tenant_from(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2)
		return perr(p, "'tenant_from' takes exactly one value");
	if (strcmp(words[1], "cn") == 0)
		p->cfg->tenant_from = GP_NAME_FROM_CN;
	else if (strcmp(words[1], "san-uri") == 0)
		p->cfg->tenant_from = GP_NAME_FROM_SAN_URI;
	else if (strcmp(words[1], "san-dns") == 0)
		p->cfg->tenant_from = GP_NAME_FROM_SAN_DNS;
	else
		return perr(p, "'tenant_from %s': expected cn, san-uri or san-dns", words[1]);
	return 0;
}

static int set_size(struct parse *p, char **words, int n, size_t off)
{
	uint64_t *slot = (uint64_t *)((char *)p->cfg + off);

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	if (gp_parse_size(words[1], slot))
		return perr(p, "'%s %s': expected a size such as 512M or 8G", words[0], words[1]);
	return 0;
}

/* cgroup auto|off|PATH: PATH as /proc/self/cgroup spells a cgroup (absolute, no "..") */
static int set_cgroup(struct parse *p, char **words, int n, size_t off)
{
	const char *v = words[1];

	if (n != 2)
		return perr(p, "'cgroup' takes exactly one value: auto, off or a cgroup path");
	free(p->cfg->cgroup_path);
	p->cfg->cgroup_path = NULL;
	if (strcmp(v, "auto") == 0) {
		p->cfg->cgroup = GP_CGROUP_AUTO;
		return 0;
	}
	if (strcmp(v, "off") == 0) {
		p->cfg->cgroup = GP_CGROUP_OFF;
		return 0;
	}
	if (v[0] != '/' || strcmp(v, "/") == 0 || strstr(v, "/../") || strstr(v, "/./") ||
	    strstr(v, "//") || (strlen(v) >= 3 && strcmp(v + strlen(v) - 3, "/..") == 0) ||
	    strcmp(v + strlen(v) - 2, "/.") == 0 || /* "/." is the root, "/a/." is "/a" */
	    v[strlen(v) - 1] == '/' || strlen(v) > 1024 || strpbrk(v, "\n"))
		return perr(p,
			    "'cgroup %s': expected auto, off or a cgroup's path below the "
			    "hierarchy's root, such as /gpupool.slice/sessions",
			    v);
	p->cfg->cgroup = GP_CGROUP_PATH;
	p->cfg->cgroup_path = strdup(v);
	return p->cfg->cgroup_path ? 0 : -ENOMEM;
}

/* worker_host_memory SIZE|none: at least 16M, less would not hold a worker. */
static int set_host_memory(struct parse *p, char **words, int n, size_t off)
{
	uint64_t v;

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	if (strcmp(words[1], "none") == 0) {
		p->cfg->worker_host_memory = 0;
		return 0;
	}
	if (gp_parse_size(words[1], &v) || v < (16u << 20))
		return perr(p, "'%s %s': expected none or a size of at least 16M, such as 8G",
			    words[0], words[1]);
	p->cfg->worker_host_memory = v;
	return 0;
}

/* worker_tasks N|none: a worker has a few threads of its own; fewer than 16 would fail it. */
#define GP_WORKER_TASKS_MIN 16

static int set_tasks(struct parse *p, char **words, int n, size_t off)
{
	int r;

	if (n == 2 && strcmp(words[1], "none") == 0) {
		p->cfg->worker_tasks = 0;
		return 0;
	}
	r = set_uint(p, words, n, off);
	if (r == 0 && p->cfg->worker_tasks < GP_WORKER_TASKS_MIN)
		return perr(p, "'%s %s': expected none or a number of at least %d", words[0],
			    words[1], GP_WORKER_TASKS_MIN);
	return r;
}

/* worker_cpu none|P%|CORES: "250%" or "2.5", at most two decimals, 1% to 1,000,000%. */
static int set_cpu(struct parse *p, char **words, int n, size_t off)
{
	const char *s = words[1];
	unsigned long long whole = 0, frac = 0;
	unsigned digits = 0;
	char *end;

	if (n != 2)
		return perr(p, "'%s' takes exactly one value", words[0]);
	if (strcmp(s, "none") == 0) {
		p->cfg->worker_cpu = 0;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		goto bad;
	errno = 0;
	whole = strtoull(s, &end, 10);
	if (errno || whole > 1000000)
		goto bad;
	if (*end == '%' && end[1] == '\0') {
		if (whole < 1)
			goto bad;
		p->cfg->worker_cpu = (unsigned)whole;
		return 0;
	}
	if (*end == '.') {
		for (end++; isdigit((unsigned char)*end) && digits < 2; end++, digits++)
			frac = frac * 10 + (unsigned)(*end - '0');
		if (digits == 0)
			goto bad;
		if (digits == 1)
			frac *= 10;
	}
	if (*end || whole * 100 + frac < 1 || whole * 100 + frac > 1000000)
		goto bad;
	p->cfg->worker_cpu = (unsigned)(whole * 100 + frac);
	return 0;
bad:
	return perr(p,
		    "'%s %s': expected none, a share of one CPU such as 250%%, or CPUs such as 2.5",
		    words[0], s);
}

/* "25%" or "25": a share of a GPU's compute, 1 to 100 percent. 0 or GP_ECONFIG. */
static int parse_percent(const char *s, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return GP_ECONFIG;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == '%')
		end++;
	if (errno || *end || v < 1 || v > 100)
		return GP_ECONFIG;
	*out = (unsigned)v;
	return 0;
}

/*
 * A tenant's shares (docs/scheduling.md): guarantee_gpus=N, guarantee_memory=SIZE,
 * compute=P%, default_compute=P%, priority=N, preemptible=yes|no; and host_memory=SIZE. 1: the key was one of these and is set; 0: not one of
 * these; GP_ECONFIG: a bad value.
 */
static int tenant_share(struct parse *p, struct gp_tenant *t, const char *tenant, const char *key,
			const char *value)
{
	unsigned long long v;
	char *end;

	if (strcmp(key, "guarantee_memory") == 0) {
		if (gp_parse_size(value, &t->guarantee_memory))
			return perr(p, "tenant %s: guarantee_memory=%s is not a size", tenant,
				    value);
		return 1;
	}
	if (strcmp(key, "guarantee_gpus") == 0) {
		errno = 0;
		v = strtoull(value, &end, 10);
		if (errno || *end || !isdigit((unsigned char)*value) || v > GP_STATS_MAX_DEVICES)
			return perr(p,
				    "tenant %s: guarantee_gpus=%s is not a number of GPUs (0-%u)",
				    tenant, value, GP_STATS_MAX_DEVICES);
		t->guarantee_gpus = v;
		return 1;
	}
	if (strcmp(key, "priority") == 0) {
		errno = 0;
		v = strtoull(value, &end, 10);
		if (errno || *end || !isdigit((unsigned char)*value) || v > GP_PRIORITY_MAX)
			return perr(p, "tenant %s: priority=%s is not a priority (0-%u)", tenant,
				    value, GP_PRIORITY_MAX);
		t->priority = (unsigned)v;
		return 1;
	}
	if (strcmp(key, "preemptible") == 0) {
		if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
			return perr(p, "tenant %s: preemptible=%s: expected yes or no", tenant,
				    value);
		t->preemptible = value[0] == 'y' ? GP_PREEMPT_YES : GP_PREEMPT_NO;
		return 1;
	}
	if (strcmp(key, "host_memory") == 0) {
		if (gp_parse_size(value, &t->host_memory) || t->host_memory < (16u << 20))
			return perr(p, "tenant %s: host_memory=%s is not a size of at least 16M",
				    tenant, value);
		return 1;
	}
	if (strcmp(key, "compute") == 0 || strcmp(key, "default_compute") == 0) {
		if (parse_percent(value, key[0] == 'c' ? &t->compute : &t->default_compute))
			return perr(p, "tenant %s: %s=%s is not a share of 1%% to 100%%", tenant,
				    key, value);
		return 1;
	}
	return 0;
}

/* A guarantee above the tenant's own limit could never be held. */
static int tenant_share_check(struct parse *p, const struct gp_tenant *t)
{
	if (t->gpus != GP_LIMIT_NONE && t->guarantee_gpus > t->gpus)
		return perr(p, "tenant %s: guarantee_gpus=%llu is more than its gpus=%llu", t->name,
			    (unsigned long long)t->guarantee_gpus, (unsigned long long)t->gpus);
	if (t->memory != GP_LIMIT_NONE && t->guarantee_memory > t->memory)
		return perr(p, "tenant %s: guarantee_memory=%llu is more than its memory=%llu",
			    t->name, (unsigned long long)t->guarantee_memory,
			    (unsigned long long)t->memory);
	if (t->compute && t->default_compute > t->compute)
		return perr(p, "tenant %s: default_compute=%u%% is more than its compute=%u%%",
			    t->name, t->default_compute, t->compute);
	return 0;
}

/* tenant NAME [sessions=N] [gpus=N] [memory=SIZE] [queue=N] [kernel_timeout=SECONDS]
 *	      [guarantee_gpus=N] [guarantee_memory=SIZE] [compute=P%] [default_compute=P%]
 *	      [priority=N] [preemptible=yes|no] [host_memory=SIZE] */
static int add_tenant(struct parse *p, char **words, int n, size_t off)
{
	struct gp_config *cfg = p->cfg;
	struct gp_tenant t = {.sessions = GP_LIMIT_NONE,
			      .gpus = GP_LIMIT_NONE,
			      .memory = GP_LIMIT_NONE,
			      .kernel_timeout = GP_LIMIT_NONE,
			      .queue = GP_LIMIT_NONE};
	struct gp_tenant *nt;
	int r;

	if (n < 2)
		return perr(p, "'tenant' needs a name");
	for (size_t i = 0; i < cfg->ntenants; i++)
		if (strcmp(cfg->tenants[i].name, words[1]) == 0)
			return perr(p, "tenant '%s' is defined twice", words[1]);
	for (int i = 2; i < n; i++) {
		char *eq = strchr(words[i], '=');
		char *end;

		if (!eq || eq[1] == '\0')
			return perr(p, "tenant %s: '%s' is not key=value", words[1], words[i]);
		*eq = '\0';
		r = tenant_share(p, &t, words[1], words[i], eq + 1);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		if (strcmp(words[i], "memory") == 0) {
			if (gp_parse_size(eq + 1, &t.memory))
				return perr(p, "tenant %s: memory=%s is not a size", words[1],
					    eq + 1);
		} else if (strcmp(words[i], "sessions") == 0 || strcmp(words[i], "gpus") == 0 ||
			   strcmp(words[i], "queue") == 0 ||
			   strcmp(words[i], "kernel_timeout") == 0) {
			unsigned long long v;

			errno = 0;
			v = strtoull(eq + 1, &end, 10);
			if (errno || *end || !isdigit((unsigned char)eq[1]) ||
			    (words[i][0] == 'k' && v > UINT_MAX))
				return perr(p, "tenant %s: %s=%s is not a number", words[1],
					    words[i], eq + 1);
			if (words[i][0] == 's')
				t.sessions = v;
			else if (words[i][0] == 'g')
				t.gpus = v;
			else if (words[i][0] == 'q')
				t.queue = v;
			else
				t.kernel_timeout = v;
		} else {
			return perr(p,
				    "tenant %s: unknown limit '%s' (sessions, gpus, memory, queue, "
				    "kernel_timeout, guarantee_gpus, guarantee_memory, compute, "
				    "default_compute, priority, preemptible, host_memory)",
				    words[1], words[i]);
		}
	}
	t.name = words[1];
	r = tenant_share_check(p, &t);
	if (r)
		return r;
	nt = realloc(cfg->tenants, (cfg->ntenants + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	cfg->tenants = nt;
	t.name = strdup(words[1]);
	if (!t.name)
		return -ENOMEM;
	cfg->tenants[cfg->ntenants++] = t;
	return 0;
}

/* gpu INDEX mps on|off: per GPU settings (only mps so far). */
static int set_gpu(struct parse *p, char **words, int n, size_t off)
{
	unsigned long v;
	char *end;

	(void)off;
	if (n < 2)
		return perr(p, "'gpu' needs a GPU index and settings (gpu 0 mps on)");
	errno = 0;
	v = strtoul(words[1], &end, 10);
	if (errno || *end || !isdigit((unsigned char)words[1][0]) || v > 63)
		return perr(p, "gpu %s: not a GPU index (0-63)", words[1]);
	if (n == 2)
		return perr(p, "gpu %lu: no settings (mps on|off)", v);
	for (int i = 2; i < n; i += 2) {
		if (strcmp(words[i], "mps") != 0)
			return perr(p, "gpu %lu: unknown setting '%s' (mps)", v, words[i]);
		if (i + 1 >= n ||
		    (strcmp(words[i + 1], "on") != 0 && strcmp(words[i + 1], "off") != 0))
			return perr(p, "gpu %lu: mps %s: expected on or off", v,
				    i + 1 < n ? words[i + 1] : "(nothing)");
		if (words[i + 1][1] == 'n')
			p->cfg->mps_gpus |= 1ull << v;
		else
			p->cfg->mps_gpus &= ~(1ull << v);
	}
	return 0;
}

/* token SECRET TENANT */
static int add_token(struct parse *p, char **words, int n, size_t off)
{
	struct gp_config *cfg = p->cfg;
	struct gp_token *nt;

	if (n != 3)
		return perr(p, "'token' takes a secret and a tenant name");
	if (strlen(words[1]) < 16)
		return perr(p, "token for %s: a secret needs at least 16 characters", words[2]);
	nt = realloc(cfg->tokens, (cfg->ntokens + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	cfg->tokens = nt;
	nt[cfg->ntokens].secret = strdup(words[1]);
	nt[cfg->ntokens].tenant = strdup(words[2]);
	cfg->ntokens++;
	if (!nt[cfg->ntokens - 1].secret || !nt[cfg->ntokens - 1].tenant)
		return -ENOMEM;
	return 0;
}

/* ---- the admin endpoint (admin_listen) ---- */

static int parse_role(const char *s, enum gp_admin_role *r)
{
	if (strcmp(s, "read-only") == 0)
		*r = GP_ROLE_READ_ONLY;
	else if (strcmp(s, "read-write") == 0)
		*r = GP_ROLE_READ_WRITE;
	else
		return -1;
	return 0;
}

static int set_admin_ca_role(struct parse *p, char **words, int n, size_t off)
{
	if (n != 2 || parse_role(words[1], &p->cfg->admin_ca_role))
		return perr(p, "'%s' takes read-only or read-write", words[0]);
	return 0;
}

static int add_admin_name(struct parse *p, char **words, int n, size_t off)
{
	struct gp_config *cfg = p->cfg;
	struct gp_admin_name *na;
	enum gp_admin_role role;

	if (n != 3 || parse_role(words[2], &role))
		return perr(p, "'admin_name' takes a certificate name and read-only or read-write");
	na = realloc(cfg->admin_names, (cfg->nadmin_names + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	cfg->admin_names = na;
	na[cfg->nadmin_names].role = role;
	na[cfg->nadmin_names].name = strdup(words[1]);
	if (!na[cfg->nadmin_names++].name)
		return -ENOMEM;
	return 0;
}

enum gp_admin_role gp_config_admin_role(const struct gp_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nadmin_names; i++)
		if (strcmp(cfg->admin_names[i].name, name) == 0)
			return cfg->admin_names[i].role;
	return GP_ROLE_NONE;
}

const char *gp_admin_role_name(enum gp_admin_role r)
{
	switch (r) {
	case GP_ROLE_TENANT:
		return "tenant";
	case GP_ROLE_READ_ONLY:
		return "read-only";
	case GP_ROLE_READ_WRITE:
		return "read-write";
	default:
		return "none";
	}
}

static const struct {
	const char *key;
	key_fn fn;
	size_t off;
} keys[] = {
	{"listen", set_listen, offsetof(struct gp_config, listen)},
	{"tls_cert", set_string, offsetof(struct gp_config, tls_cert)},
	{"tls_key", set_string, offsetof(struct gp_config, tls_key)},
	{"tls_ca", set_string, offsetof(struct gp_config, tls_ca)},
	{"driver", set_string, offsetof(struct gp_config, driver)},
	{"admin_socket", set_string, offsetof(struct gp_config, admin_socket)},
	{"worker", set_string, offsetof(struct gp_config, worker)},
	{"log_level", set_log_level, 0},
	{"max_sessions", set_uint, offsetof(struct gp_config, max_sessions)},
	{"max_handshakes", set_positive, offsetof(struct gp_config, max_handshakes)},
	{"first_byte_timeout", set_positive, offsetof(struct gp_config, first_byte_timeout)},
	{"max_pending", set_positive, offsetof(struct gp_config, max_pending)},
	{"max_pending_per_address", set_positive,
	 offsetof(struct gp_config, max_pending_per_address)},
	{"max_handshakes_per_address", set_positive,
	 offsetof(struct gp_config, max_handshakes_per_address)},
	{"max_queued_per_tenant", set_uint, offsetof(struct gp_config, max_queued_per_tenant)},
	{"handshake_timeout", set_uint, offsetof(struct gp_config, handshake_timeout)},
	{"admin_group", set_string, offsetof(struct gp_config, admin_group)},
	{"metrics_listen", set_listen, offsetof(struct gp_config, metrics_listen)},
	{"listen_unix", set_path, offsetof(struct gp_config, listen_unix)},
	{"listen_unix_group", set_string, offsetof(struct gp_config, listen_unix_group)},
	{"listen_plain", set_listen, offsetof(struct gp_config, listen_plain)},
	{"placement", set_placement, 0},
	{"tenant_from", set_tenant_from, 0},
	{"max_contexts", set_positive, offsetof(struct gp_config, max_contexts)},
	{"max_streams", set_positive, offsetof(struct gp_config, max_streams)},
	{"max_events", set_positive, offsetof(struct gp_config, max_events)},
	{"max_modules", set_positive, offsetof(struct gp_config, max_modules)},
	{"worker_seccomp", set_seccomp, 0},
	{"compute_enforce", set_enforce, 0},
	{"worker_uids", set_worker_uids, 0},
	{"worker_groups", set_worker_groups, offsetof(struct gp_config, worker_groups)},
	{"cgroup", set_cgroup, 0},
	{"worker_host_memory", set_host_memory, 0},
	{"worker_tasks", set_tasks, offsetof(struct gp_config, worker_tasks)},
	{"worker_cpu", set_cpu, 0},
	{"default_memory", set_size, offsetof(struct gp_config, default_memory)},
	{"queue_timeout", set_uint, offsetof(struct gp_config, queue_timeout)},
	{"idle_timeout", set_uint, offsetof(struct gp_config, idle_timeout)},
	{"drain_grace", set_uint, offsetof(struct gp_config, drain_grace)},
	{"preempt_grace", set_uint, offsetof(struct gp_config, preempt_grace)},
	{"kernel_timeout", set_uint, offsetof(struct gp_config, kernel_timeout)},
	{"warm_workers", set_warm, offsetof(struct gp_config, warm_workers)},
	{"accounting_file", set_file, offsetof(struct gp_config, accounting_file)},
	{"accounting_max_bytes", set_rotate_size, offsetof(struct gp_config, accounting_max_bytes)},
	{"accounting_keep", set_keep, offsetof(struct gp_config, accounting_keep)},
	{"tenant", add_tenant, 0},
	{"gpu", set_gpu, 0},
	{"mps_control", set_string, offsetof(struct gp_config, mps_control)},
	{"mps_dir", set_path, offsetof(struct gp_config, mps_dir)},
	{"token", add_token, 0},
	/* the admin endpoint (admin_listen) */
	{"admin_listen", set_listen, offsetof(struct gp_config, admin_listen)},
	{"admin_ca", set_string, offsetof(struct gp_config, admin_ca)},
	{"admin_ca_role", set_admin_ca_role, 0},
	{"admin_name", add_admin_name, 0},
	{"admin_max_connections", set_positive, offsetof(struct gp_config, admin_max_connections)},
	{"admin_max_per_address", set_positive, offsetof(struct gp_config, admin_max_per_address)},
};

/* ---- lines --------------------------------------------------------------- */

/* Splits a line into words in place; '#' starts a comment; "..." quotes. */
static int split(struct parse *p, char *line, char **words)
{
	int n = 0;
	char *s = line;

	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' || *s == '#' || *s == '\n' || *s == '\r')
			break;
		if (n == MAX_WORDS)
			return perr(p, "too many words");
		if (*s == '"') {
			words[n++] = ++s;
			while (*s && *s != '"')
				s++;
			if (*s != '"')
				return perr(p, "unterminated quote");
			*s++ = '\0';
			continue;
		}
		words[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '#')
			s++;
		if (*s == '#') {
			*s = '\0';
			break;
		}
		if (*s)
			*s++ = '\0';
	}
	return n;
}

static int set_defaults(struct gp_config *cfg)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "0.0.0.0:%d", GP_DEFAULT_PORT);
	cfg->listen = strdup(buf);
	cfg->driver = strdup("libcuda.so.1");
	cfg->admin_socket = strdup("/run/gpupool/admin.sock");
	cfg->mps_control = strdup("nvidia-cuda-mps-control");
	cfg->mps_dir = strdup("/run/gpupool/mps");
	cfg->log_level = GP_LOG_INFO;
	cfg->max_sessions = 64;
	cfg->max_handshakes = 16;
	cfg->handshake_timeout = 15;
	cfg->first_byte_timeout = 5;
	cfg->max_pending = 256;
	cfg->max_pending_per_address = 128;
	cfg->max_handshakes_per_address = 8;
	cfg->max_queued_per_tenant = 32;
	cfg->placement = GP_PLACE_SPREAD;
	cfg->queue_timeout = 60;
	cfg->drain_grace = 30;
	cfg->preempt_grace = 30;
	cfg->max_contexts = GP_DEFAULT_MAX_CONTEXTS;
	cfg->max_streams = GP_DEFAULT_MAX_STREAMS;
	cfg->max_events = GP_DEFAULT_MAX_EVENTS;
	cfg->max_modules = GP_DEFAULT_MAX_MODULES;
	cfg->warm_workers = 1;
	cfg->cgroup = GP_CGROUP_AUTO;
	cfg->worker_host_memory = GP_DEFAULT_WORKER_HOST_MEMORY;
	cfg->worker_tasks = GP_DEFAULT_WORKER_TASKS;
	cfg->worker_seccomp = GP_SECCOMP_ALLOW;
	cfg->compute_enforce = GP_ENFORCE_MPS;
	cfg->accounting_max_bytes = 64ull << 20;
	cfg->accounting_keep = 10;
	cfg->admin_ca_role = GP_ROLE_READ_ONLY;
	cfg->admin_max_connections = 32;
	cfg->admin_max_per_address = 4;
	if (!cfg->listen || !cfg->driver || !cfg->admin_socket || !cfg->mps_control ||
	    !cfg->mps_dir)
		return -ENOMEM;
	return 0;
}

struct gp_config *gp_config_parse(const char *text, const char *name, char *err, size_t errlen)
{
	struct parse p = {.name = name, .err = err, .errlen = errlen};
	const char *s = text;
	char *words[MAX_WORDS];
	char *line = NULL;

	p.cfg = calloc(1, sizeof(*p.cfg));
	if (!p.cfg || set_defaults(p.cfg) || !(p.cfg->path = strdup(name))) {
		snprintf(err, errlen, "%s: out of memory", name);
		goto out_free;
	}
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		int n, i;

		p.line++;
		free(line);
		line = strndup(s, len);
		if (!line) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto out_free;
		}
		s += len + (nl ? 1 : 0);
		n = split(&p, line, words);
		if (n < 0)
			goto out_free;
		if (n == 0)
			continue;
		for (i = 0; i < (int)(sizeof(keys) / sizeof(keys[0])); i++)
			if (strcmp(words[0], keys[i].key) == 0)
				break;
		if (i == (int)(sizeof(keys) / sizeof(keys[0]))) {
			perr(&p, "unknown key '%s'", words[0]);
			goto out_free;
		}
		if (keys[i].fn(&p, words, n, keys[i].off))
			goto out_free;
	}
	free(line);
	if (p.cfg->admin_listen && !p.cfg->admin_ca && !p.cfg->tls_ca) {
		snprintf(err, errlen,
			 "%s: admin_listen needs admin_ca, or tls_ca with admin_name lines: "
			 "otherwise nobody could be an admin there",
			 name);
		gp_config_free(p.cfg);
		return NULL;
	}
	if (p.cfg->worker_groups && !p.cfg->worker_uid_first) {
		snprintf(err, errlen, "%s: worker_groups needs worker_uids", name);
		gp_config_free(p.cfg);
		return NULL;
	}
	if (!p.cfg->tls_cert || !p.cfg->tls_key) {
		snprintf(err, errlen, "%s: tls_cert and tls_key are required", name);
		gp_config_free(p.cfg);
		return NULL;
	}
	return p.cfg;

out_free:
	free(line);
	gp_config_free(p.cfg);
	return NULL;
}

struct gp_config *gp_config_load(const char *path, char *err, size_t errlen)
{
	struct gp_config *cfg;
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	char chunk[4096];

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n + 1 > cap) {
			char *nt;

			cap = (len + n + 1) * 2;
			nt = realloc(text, cap);
			if (!nt) {
				free(text);
				fclose(f);
				snprintf(err, errlen, "%s: out of memory", path);
				return NULL;
			}
			text = nt;
		}
		memcpy(text + len, chunk, n);
		len += n;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	if (!text)
		text = calloc(1, 1);
	else
		text[len] = '\0';
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "%s: not a text file", path);
		free(text);
		return NULL;
	}
	cfg = gp_config_parse(text, path, err, errlen);
	free(text);
	return cfg;
}

void gp_config_free(struct gp_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->listen);
	free(cfg->tls_cert);
	free(cfg->tls_key);
	free(cfg->tls_ca);
	free(cfg->driver);
	free(cfg->admin_socket);
	free(cfg->mps_control);
	free(cfg->mps_dir);
	free(cfg->worker);
	free(cfg->admin_group);
	free(cfg->metrics_listen);
	free(cfg->listen_unix);
	free(cfg->listen_unix_group);
	free(cfg->listen_plain);
	free(cfg->worker_groups);
	free(cfg->accounting_file);
	free(cfg->admin_listen);
	free(cfg->admin_ca);
	free(cfg->cgroup_path);
	for (size_t i = 0; i < cfg->nadmin_names; i++)
		free(cfg->admin_names[i].name);
	free(cfg->admin_names);
	for (size_t i = 0; i < cfg->ntenants; i++)
		free(cfg->tenants[i].name);
	free(cfg->tenants);
	for (size_t i = 0; i < cfg->ntokens; i++) {
		free(cfg->tokens[i].secret);
		free(cfg->tokens[i].tenant);
	}
	free(cfg->tokens);
	free(cfg);
}

const struct gp_tenant *gp_config_tenant(const struct gp_config *cfg, const char *name)
{
	const struct gp_tenant *any = NULL;

	for (size_t i = 0; i < cfg->ntenants; i++) {
		if (strcmp(cfg->tenants[i].name, name) == 0)
			return &cfg->tenants[i];
		if (strcmp(cfg->tenants[i].name, "*") == 0)
			any = &cfg->tenants[i];
	}
	return any;
}

uint64_t gp_config_host_memory(const struct gp_config *cfg, const char *tenant)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, tenant ? tenant : "");

	if (t && t->host_memory)
		return t->host_memory;
	return cfg->worker_host_memory;
}

unsigned gp_config_kernel_timeout(const struct gp_config *cfg, const char *tenant)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, tenant ? tenant : "");

	if (t && t->kernel_timeout != GP_LIMIT_NONE)
		return (unsigned)t->kernel_timeout;
	return cfg->kernel_timeout;
}

const char *gp_config_token_tenant(const struct gp_config *cfg, const char *secret)
{
	const char *found = NULL;
	size_t sl = strlen(secret);

	for (size_t i = 0; i < cfg->ntokens; i++) {
		const char *t = cfg->tokens[i].secret;
		size_t tl = strlen(t);
		unsigned char diff = (unsigned char)(sl != tl);

		for (size_t k = 0; k < tl; k++)
			diff |= (unsigned char)(t[k] ^ (k < sl ? secret[k] : 0));
		if (!diff)
			found = cfg->tokens[i].tenant;
	}
	return found;
}
