/* fleet.c -- `poolctl --pool NAMES`: one view of many daemons, each asked at its admin
 * endpoint (admin_listen). Every daemon stays the authority on its own GPUs; this only adds
 * up what they answer (ARCHITECTURE decision 10). A daemon that does not answer is shown
 * as down, with the reason, and counted as such: never left out.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "escape.h"
#include "poolctl.h"

/* A daemon's message, escaped for the terminal (it is another host's text). */
static const char *said(const char *s)
{
	static char buf[600];

	gp_escape(buf, sizeof(buf), s, NULL);
	return buf;
}

struct host {
	const struct gp_endpoint *ep;
	Gp__AdminReply *rep; /* NULL: down */
	char err[512];
	uint64_t total, used, reserved;
	unsigned sessions, queued;
	unsigned targets; /* GPUs and MIG instances: not the GPUs in MIG mode */
	unsigned phys;	  /* GPUs, MIG instances not counted: what its utilization averages */
};

struct tenant_sum {
	char *name;
	unsigned sessions, queued, gpus, hosts;
	uint64_t reserved, used;
	int last_host; /* the last host counted, for `hosts` */
	/* GPU busy time of its sessions over the last minute and hour, summed over hosts. */
	double busy_1m, busy_1h, gpus_1m, gpus_1h;
};

/* The tenant's sum, added when it is not there yet. */
static struct tenant_sum *tenant_of(struct tenant_sum **t, size_t *nt, char *name)
{
	struct tenant_sum *n;

	for (size_t j = 0; j < *nt; j++)
		if (strcmp((*t)[j].name, name) == 0)
			return &(*t)[j];
	n = realloc(*t, (*nt + 1) * sizeof(**t));
	if (!n) {
		fprintf(stderr, "poolctl: out of memory\n");
		exit(1);
	}
	*t = n;
	n[*nt] = (struct tenant_sum){.name = name, .last_host = -1};
	return &n[(*nt)++];
}

/* The fleet's utilization: its hosts' (each the mean of its GPUs), weighted by their GPUs.
 * Known when every host that answered knows its own. */
static bool fleet_util(const struct host *h, size_t n, double *m, double *hr)
{
	unsigned gpus = 0;
	bool known = true;

	*m = *hr = 0;
	for (size_t i = 0; i < n; i++) {
		if (!h[i].rep || !h[i].phys)
			continue;
		known &= h[i].rep->util_known;
		*m += h[i].rep->util_1m * h[i].phys;
		*hr += h[i].rep->util_1h * h[i].phys;
		gpus += h[i].phys;
	}
	if (gpus) {
		*m /= gpus;
		*hr /= gpus;
	}
	return known && gpus;
}

static void json_util(const char *key, bool known, double v)
{
	if (known)
		printf(",\"%s\":%.2f", key, v);
	else
		printf(",\"%s\":null", key);
}

static void resolve_or_exit(struct poolctl *pc, struct gp_endpoints *eps)
{
	uint32_t seed = (uint32_t)getpid();
	char err[1024];

	if (gp_resolve(pc->pool, &seed, eps, err, sizeof(err))) {
		fprintf(stderr, "poolctl: --pool %s: %s\n", pc->pool, err);
		exit(1);
	}
}

static void ask_all(struct poolctl *pc, const struct gp_endpoints *eps, struct host *h,
		    Gp__AdminRequest *req)
{
	for (size_t i = 0; i < eps->n; i++) {
		h[i] = (struct host){.ep = &eps->v[i]};
		h[i].rep = poolctl_ask(pc, &eps->v[i], req, h[i].err, sizeof(h[i].err));
		if (h[i].rep && h[i].rep->status != 0) {
			snprintf(h[i].err, sizeof(h[i].err), "%s",
				 h[i].rep->message ? h[i].rep->message : "refused");
			protobuf_c_message_free_unpacked(&h[i].rep->base, NULL);
			h[i].rep = NULL;
		}
	}
}

static void free_all(struct host *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].rep)
			protobuf_c_message_free_unpacked(&h[i].rep->base, NULL);
}

/* ---- status ---------------------------------------------------------------------- */

static size_t sum_tenants(struct host *h, size_t n, struct tenant_sum **out)
{
	struct tenant_sum *t = NULL;
	size_t nt = 0;

	for (size_t i = 0; i < n; i++) {
		const Gp__AdminReply *r = h[i].rep;

		for (size_t k = 0; r && k < r->n_gpu; k++) {
			h[i].phys += !r->gpu[k]->instance;
			if (r->gpu[k]->mig)
				continue; /* its instances' memory is counted by them */
			h[i].targets++;
			h[i].total += r->gpu[k]->total_mem;
			h[i].used += r->gpu[k]->used_mem;
			h[i].reserved += r->gpu[k]->reserved_mem;
		}
		for (size_t k = 0; r && k < r->n_session; k++) {
			const Gp__SessionStatus *s = r->session[k];
			bool queued = strcmp(s->state, "queued") == 0;
			struct tenant_sum *ts = tenant_of(&t, &nt, s->tenant);

			h[i].sessions++;
			h[i].queued += queued;
			ts->sessions++;
			ts->queued += queued;
			ts->gpus += (unsigned)s->n_gpu;
			ts->reserved += s->mem_limit * s->n_gpu;
			ts->used += s->mem_used;
			if (ts->last_host != (int)i) {
				ts->hosts++;
				ts->last_host = (int)i;
			}
		}
		for (size_t k = 0; r && k < r->n_tenant_util; k++) {
			const Gp__TenantUtil *u = r->tenant_util[k];
			struct tenant_sum *ts = tenant_of(&t, &nt, u->tenant);

			ts->busy_1m += u->busy_1m_seconds;
			ts->busy_1h += u->busy_1h_seconds;
			ts->gpus_1m += u->gpus_1m;
			ts->gpus_1h += u->gpus_1h;
		}
	}
	*out = t;
	return nt;
}

static void print_fleet_json(struct host *h, size_t n, struct tenant_sum *t, size_t nt)
{
	uint64_t total = 0, used = 0, reserved = 0;
	unsigned up = 0, gpus = 0, sessions = 0, queued = 0, draining = 0;
	double um, uh;
	bool uk = fleet_util(h, n, &um, &uh);

	for (size_t i = 0; i < n; i++) {
		if (!h[i].rep)
			continue;
		up++;
		gpus += h[i].targets;
		total += h[i].total;
		used += h[i].used;
		reserved += h[i].reserved;
		sessions += h[i].sessions;
		queued += h[i].queued;
		for (size_t k = 0; k < h[i].rep->n_gpu; k++)
			draining += h[i].rep->gpu[k]->draining;
	}
	printf("{\"fleet\":{\"hosts\":%zu,\"up\":%u,\"down\":%zu,\"gpus\":%u,\"gpus_draining\":%u,"
	       "\"memory_total\":%" PRIu64 ",\"memory_used\":%" PRIu64
	       ",\"memory_reserved\":%" PRIu64 ",\"sessions\":%u,\"queued\":%u",
	       n, up, n - up, gpus, draining, total, used, reserved, sessions, queued);
	json_util("util_1m", uk, um);
	json_util("util_1h", uk, uh);
	printf("},\"hosts\":[");
	for (size_t i = 0; i < n; i++) {
		const Gp__AdminReply *r = h[i].rep;

		printf("%s{\"endpoint\":", i ? "," : "");
		poolctl_json_str(h[i].ep->addr);
		printf(",\"entry\":");
		poolctl_json_str(h[i].ep->entry);
		if (!r) {
			printf(",\"up\":false,\"error\":");
			poolctl_json_str(h[i].err);
			printf("}");
			continue;
		}
		printf(",\"up\":true,\"host\":");
		poolctl_json_str(r->host);
		printf(",\"listen\":");
		poolctl_json_str(r->listen);
		printf(",\"version\":");
		poolctl_json_str(r->version);
		printf(",\"role\":");
		poolctl_json_str(r->role);
		printf(",\"draining\":%s,\"gpus\":[", r->draining ? "true" : "false");
		for (size_t k = 0; k < r->n_gpu; k++) {
			const Gp__GpuStatus *g = r->gpu[k];

			printf("%s{\"index\":%u,\"name\":", k ? "," : "", g->index);
			poolctl_json_str(g->name);
			printf(",\"memory_total\":%" PRIu64 ",\"memory_used\":%" PRIu64
			       ",\"memory_reserved\":%" PRIu64 ",\"sessions\":%u,\"draining\":%s"
			       ",\"mig\":%s,\"instance\":%s,\"parent\":%u",
			       g->total_mem, g->used_mem, g->reserved_mem, g->sessions,
			       g->draining ? "true" : "false", g->mig ? "true" : "false",
			       g->instance ? "true" : "false", g->parent);
			json_util("util_1m", g->util_known, g->util_1m);
			json_util("util_1h", g->util_known, g->util_1h);
			printf("}");
		}
		printf("],\"memory_total\":%" PRIu64 ",\"memory_used\":%" PRIu64
		       ",\"memory_reserved\":%" PRIu64,
		       h[i].total, h[i].used, h[i].reserved);
		json_util("util_1m", r->util_known, r->util_1m);
		json_util("util_1h", r->util_known, r->util_1h);
		printf(",\"sessions\":[");
		for (size_t k = 0; k < r->n_session; k++) {
			const Gp__SessionStatus *s = r->session[k];

			printf("%s{\"id\":%" PRIu64 ",\"state\":", k ? "," : "", s->id);
			poolctl_json_str(s->state);
			printf(",\"tenant\":");
			poolctl_json_str(s->tenant);
			printf(",\"program\":");
			poolctl_json_str(s->program);
			printf(",\"gpus\":[");
			for (size_t j = 0; j < s->n_gpu; j++)
				printf("%s%u", j ? "," : "", s->gpu[j]);
			printf("],\"memory_limit\":%" PRIu64 ",\"memory_used\":%" PRIu64,
			       s->mem_limit, s->mem_used);
			json_util("gpu_busy_seconds", s->busy_known, s->gpu_busy_seconds);
			printf("}");
		}
		printf("],\"queued\":%u}", h[i].queued);
	}
	printf("],\"tenants\":[");
	for (size_t j = 0; j < nt; j++) {
		printf("%s{\"tenant\":", j ? "," : "");
		poolctl_json_str(t[j].name);
		printf(",\"sessions\":%u,\"queued\":%u,\"gpus\":%u,\"memory_reserved\":%" PRIu64
		       ",\"memory_used\":%" PRIu64 ",\"hosts\":%u,\"busy_1m_seconds\":%.3f"
		       ",\"busy_1h_seconds\":%.3f,\"gpus_busy_1m\":%.3f,\"gpus_busy_1h\":%.3f}",
		       t[j].sessions, t[j].queued, t[j].gpus, t[j].reserved, t[j].used, t[j].hosts,
		       t[j].busy_1m, t[j].busy_1h, t[j].gpus_1m, t[j].gpus_1h);
	}
	printf("]}\n");
}

static void print_fleet_tables(struct host *h, size_t n, struct tenant_sum *t, size_t nt,
			       bool sessions_only)
{
	uint64_t total = 0, used = 0, reserved = 0;
	unsigned up = 0, gpus = 0, sessions = 0, queued = 0;
	char a[32], b[32], c[32], cell[64], util[32];
	double um, uh;
	bool uk = fleet_util(h, n, &um, &uh);

	for (size_t i = 0; i < n; i++) {
		if (!h[i].rep)
			continue;
		up++;
		gpus += h[i].targets;
		total += h[i].total;
		used += h[i].used;
		reserved += h[i].reserved;
		sessions += h[i].sessions;
		queued += h[i].queued;
	}
	if (!sessions_only) {
		printf("fleet: %zu host%s (%u up, %zu down), %u GPU%s, %s used, %s reserved of %s, "
		       "%u session%s, %u queued, utilization %s (last minute/hour)\n\n",
		       n, n == 1 ? "" : "s", up, n - up, gpus, gpus == 1 ? "" : "s",
		       poolctl_human(used, a, sizeof(a)), poolctl_human(reserved, b, sizeof(b)),
		       poolctl_human(total, c, sizeof(c)), sessions, sessions == 1 ? "" : "s",
		       queued, poolctl_util(uk, um, uh, util, sizeof(util)));
		printf("%-24s %-5s %4s %12s %12s %12s %8s %6s %10s\n", "HOST", "STATE", "GPUS",
		       "USED", "RESERVED", "TOTAL", "SESSIONS", "QUEUED", "UTIL 1M/1H");
		for (size_t i = 0; i < n; i++) {
			if (!h[i].rep) {
				printf("%-24s %-5s %s\n", poolctl_cell(cell, 24, h[i].ep->addr),
				       "down", said(h[i].err));
				continue;
			}
			printf("%-24s %-5s %4zu %12s %12s %12s %8u %6u %10s%s\n",
			       poolctl_cell(cell, 24, h[i].ep->addr), "up", (size_t)h[i].targets,
			       poolctl_human(h[i].used, a, sizeof(a)),
			       poolctl_human(h[i].reserved, b, sizeof(b)),
			       poolctl_human(h[i].total, c, sizeof(c)), h[i].sessions, h[i].queued,
			       poolctl_util(h[i].rep->util_known, h[i].rep->util_1m,
					    h[i].rep->util_1h, util, sizeof(util)),
			       h[i].rep->draining ? "  draining" : "");
		}
		printf("\n%-16s %8s %6s %5s %12s %12s %5s %14s\n", "TENANT", "SESSIONS", "QUEUED",
		       "GPUS", "RESERVED", "USED", "HOSTS", "BUSY GPUS 1M/1H");
		if (!nt)
			printf("(no sessions)\n");
		for (size_t j = 0; j < nt; j++)
			printf("%-16s %8u %6u %5u %12s %12s %5u %9.2f/%.2f\n",
			       poolctl_cell(cell, 16, t[j].name), t[j].sessions, t[j].queued,
			       t[j].gpus, poolctl_human(t[j].reserved, a, sizeof(a)),
			       poolctl_human(t[j].used, b, sizeof(b)), t[j].hosts, t[j].gpus_1m,
			       t[j].gpus_1h);
		printf("\n");
	}
	printf("%-24s %-8s %-10s %-12s %-16s %-6s %12s\n", "HOST", "SESSION", "STATE", "TENANT",
	       "PROGRAM", "GPUS", "LIMIT");
	for (size_t i = 0; i < n; i++) {
		const Gp__AdminReply *r = h[i].rep;

		for (size_t k = 0; r && k < r->n_session; k++) {
			const Gp__SessionStatus *s = r->session[k];
			char tenant[13], program[17], g[64] = "-";
			size_t o = 0;

			for (size_t j = 0; j < s->n_gpu && o < sizeof(g) - 8; j++)
				o += (size_t)snprintf(g + o, sizeof(g) - o, "%s%u", j ? "," : "",
						      s->gpu[j]);
			printf("%-24s %-8" PRIu64 " %-10s %-12s %-16s %-6s %12s\n",
			       poolctl_cell(cell, 24, h[i].ep->addr), s->id, s->state,
			       poolctl_cell(tenant, 12, s->tenant),
			       poolctl_cell(program, 16, s->program), g,
			       poolctl_human(s->mem_limit, a, sizeof(a)));
		}
	}
}

int poolctl_fleet_status(struct poolctl *pc, bool sessions_only)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	struct gp_endpoints eps = {0};

	req.command = "status";
	for (;;) {
		struct tenant_sum *t;
		struct host *h;
		size_t nt;

		resolve_or_exit(pc, &eps); /* again each time: hosts come and go */
		h = calloc(eps.n, sizeof(*h));
		if (!h) {
			fprintf(stderr, "poolctl: out of memory\n");
			return 1;
		}
		ask_all(pc, &eps, h, &req);
		nt = sum_tenants(h, eps.n, &t);
		if (pc->watch)
			printf("\033[H\033[2J");
		if (pc->json)
			print_fleet_json(h, eps.n, t, nt);
		else
			print_fleet_tables(h, eps.n, t, nt, sessions_only);
		free(t);
		free_all(h, eps.n);
		free(h);
		gp_endpoints_deinit(&eps);
		if (!pc->watch)
			return 0;
		fflush(stdout);
		usleep((useconds_t)(pc->watch * 1e6));
	}
}

/* ---- commands ------------------------------------------------------------------- */

/* Does HOST (as the user wrote it) name this endpoint? Its address, its list entry, the
 * name it came from, or the daemon's session address. */
static bool names(const struct gp_endpoint *ep, const char *host)
{
	return strcmp(host, ep->addr) == 0 || strcmp(host, ep->entry) == 0 ||
	       strcmp(host, ep->name) == 0;
}

int poolctl_fleet_command(struct poolctl *pc, const char *command, const char *target)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	struct gp_endpoints eps = {0};
	const struct gp_endpoint *ep = NULL;
	char host[300], *slash, *arg = NULL;
	unsigned matches = 0;
	int rc = 0;

	snprintf(host, sizeof(host), "%s", target);
	slash = strrchr(host, '/');
	if (slash) {
		*slash = 0;
		arg = slash + 1;
	}
	if (!slash || (!*arg && strcmp(command, "evict") == 0)) {
		fprintf(stderr,
			"poolctl: %s over --pool takes HOST/%s%s (HOST as `poolctl --pool "
			"... status` shows it)\n",
			command, strcmp(command, "evict") == 0 ? "SESSION" : "GPU",
			strcmp(command, "evict") == 0 ? "" : ", or HOST/ for all its GPUs");
		return 2;
	}
	resolve_or_exit(pc, &eps);
	for (size_t i = 0; i < eps.n; i++)
		if (names(&eps.v[i], host)) {
			matches++;
			if (!ep)
				ep = &eps.v[i];
		}
	if (matches != 1) {
		fprintf(stderr, "poolctl: %s: %s %s in --pool %s\n", command, host,
			matches ? "names several daemons (give the address)" : "is not a daemon",
			pc->pool);
		gp_endpoints_deinit(&eps);
		return 1;
	}
	req.command = (char *)command;
	if (*arg) {
		req.n_arg = 1;
		req.arg = &arg;
	}
	if (!*arg) { /* a whole host: each of its GPUs */
		Gp__AdminRequest st = GP__ADMIN_REQUEST__INIT;
		char err[512];
		Gp__AdminReply *r;

		st.command = "status";
		r = poolctl_ask(pc, ep, &st, err, sizeof(err));
		if (!r || r->status) {
			fprintf(stderr, "poolctl: %s %s: %s\n", command, ep->addr,
				said(r ? r->message : err));
			rc = 1;
		}
		for (size_t k = 0; !rc && k < r->n_gpu; k++) {
			char idx[16], *a = idx;
			Gp__AdminReply *x;

			snprintf(idx, sizeof(idx), "%u", r->gpu[k]->index);
			req.n_arg = 1;
			req.arg = &a;
			x = poolctl_ask(pc, ep, &req, err, sizeof(err));
			if (!x || x->status) {
				fprintf(stderr, "poolctl: %s %s/%s: %s\n", command, ep->addr, idx,
					said(x ? x->message : err));
				rc = 1;
			} else {
				printf("%s: %s\n", ep->addr, said(x->message));
			}
			if (x)
				protobuf_c_message_free_unpacked(&x->base, NULL);
		}
		if (r)
			protobuf_c_message_free_unpacked(&r->base, NULL);
	} else {
		char err[512];
		Gp__AdminReply *x = poolctl_ask(pc, ep, &req, err, sizeof(err));

		if (!x || x->status) {
			fprintf(stderr, "poolctl: %s %s: %s\n", command, target,
				x ? x->message : err);
			rc = 1;
		} else {
			printf("%s: %s\n", ep->addr, said(x->message));
		}
		if (x)
			protobuf_c_message_free_unpacked(&x->base, NULL);
	}
	gp_endpoints_deinit(&eps);
	return rc;
}

/* ---- usage ------------------------------------------------------------------------ */

int poolctl_fleet_usage(struct poolctl *pc, Gp__UsageQuery *q)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	Gp__UsageReport sum = GP__USAGE_REPORT__INIT;
	struct gp_endpoints eps = {0};
	Gp__UsageRow **rows = NULL;
	struct host *h;
	unsigned down = 0;
	int rc = 0;

	req.command = "usage";
	req.usage = q;
	resolve_or_exit(pc, &eps);
	h = calloc(eps.n, sizeof(*h));
	if (!h)
		return 1;
	ask_all(pc, &eps, h, &req);
	sum.pool_host = "fleet";
	sum.by = q->by;
	sum.since = q->since;
	sum.until = q->until;
	for (size_t i = 0; i < eps.n; i++) {
		const Gp__UsageReport *u = h[i].rep ? h[i].rep->usage : NULL;

		if (!u) {
			fprintf(stderr, "poolctl: usage: %s is down: %s\n", eps.v[i].addr,
				said(h[i].rep ? "no report" : h[i].err));
			down++;
			continue;
		}
		sum.records += u->records;
		sum.skipped += u->skipped;
		for (size_t k = 0; k < u->n_file; k++) {
			char **nf = realloc(sum.file, (sum.n_file + 1) * sizeof(*nf));
			size_t flen = strlen(eps.v[i].addr) + strlen(u->file[k]) + 2;

			if (!nf || !(nf[sum.n_file] = malloc(flen))) {
				fprintf(stderr, "poolctl: out of memory\n");
				exit(1);
			}
			sum.file = nf;
			snprintf(sum.file[sum.n_file++], flen, "%s %s", eps.v[i].addr, u->file[k]);
		}
		for (size_t k = 0; k < u->n_row; k++) {
			size_t j;

			for (j = 0; j < sum.n_row; j++)
				if (strcmp(rows[j]->key, u->row[k]->key) == 0)
					break;
			if (j == sum.n_row) {
				Gp__UsageRow **nr = realloc(rows, (sum.n_row + 1) * sizeof(*rows));

				if (!nr || !(nr[j] = calloc(1, sizeof(**nr)))) {
					fprintf(stderr, "poolctl: out of memory\n");
					exit(1);
				}
				rows = nr;
				gp__usage_row__init(rows[j]);
				rows[j]->key = u->row[k]->key;
				sum.n_row++;
			}
			poolctl_usage_add(rows[j], u->row[k]);
		}
	}
	/* By key, as each daemon orders its own. */
	for (size_t i = 1; i < sum.n_row; i++)
		for (size_t j = i; j > 0 && strcmp(rows[j - 1]->key, rows[j]->key) > 0; j--) {
			Gp__UsageRow *x = rows[j];

			rows[j] = rows[j - 1];
			rows[j - 1] = x;
		}
	sum.row = rows;
	poolctl_usage_print(pc, &sum);
	if (down) {
		fprintf(stderr,
			"poolctl: usage: %u of %zu daemons did not answer: the sums leave "
			"them out\n",
			down, eps.n);
		rc = 1;
	}
	for (size_t j = 0; j < sum.n_row; j++)
		free(rows[j]);
	free(rows);
	for (size_t k = 0; k < sum.n_file; k++)
		free(sum.file[k]);
	free(sum.file);
	free_all(h, eps.n);
	free(h);
	gp_endpoints_deinit(&eps);
	return rc;
}

/* ---- quote ------------------------------------------------------------------------ */

int poolctl_quote(struct poolctl *pc, int argc, char **argv)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	Gp__QuoteQuery q = GP__QUOTE_QUERY__INIT;
	struct gp_endpoints eps = {0};
	struct host *h;
	int rc = 0;

	for (int i = 0; i < argc; i++) {
		if (i + 1 >= argc) {
			fprintf(stderr,
				"usage: poolctl --pool ENDPOINTS quote [--gpus N] [--memory "
				"SIZE] [--compute PERCENT] [--slice SLICE] [--priority 0-9] "
				"[--token TOKEN]\n");
			return 2;
		}
		if (strcmp(argv[i], "--gpus") == 0) {
			q.gpus = (uint32_t)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--memory") == 0) {
			if (gp_parse_size(argv[++i], &q.memory)) {
				fprintf(stderr, "poolctl: quote: --memory '%s' is not a size\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--compute") == 0) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);

			if (*end == '%')
				end++;
			if (!isdigit((unsigned char)argv[i][0]) || *end || v < 1 || v > 100) {
				fprintf(stderr,
					"poolctl: quote: --compute '%s' is not 1%% to 100%%\n",
					argv[i]);
				return 2;
			}
			q.compute = (uint32_t)v;
		} else if (strcmp(argv[i], "--slice") == 0) {
			q.slice = argv[++i]; /* the daemon's to judge, as a client's */
		} else if (strcmp(argv[i], "--priority") == 0) {
			const char *v = argv[++i];

			if (v[0] < '0' || v[0] > '9' || v[1]) {
				fprintf(stderr, "poolctl: quote: --priority '%s' is not 0 to 9\n",
					v);
				return 2;
			}
			q.priority = v[0] - '0';
			q.priority_set = true;
		} else if (strcmp(argv[i], "--token") == 0) {
			q.token = argv[++i];
		} else {
			fprintf(stderr, "poolctl: quote: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!pc->pool) {
		fprintf(stderr, "poolctl: quote is asked at admin endpoints: give --pool\n");
		return 2;
	}
	req.command = "quote";
	req.quote = &q;
	resolve_or_exit(pc, &eps);
	h = calloc(eps.n, sizeof(*h));
	if (!h)
		return 1;
	ask_all(pc, &eps, h, &req);
	if (pc->json)
		printf("[");
	else
		printf("%-24s %-5s %-12s %5s %12s %12s %12s %6s %4s  %s\n", "HOST", "FITS",
		       "TENANT", "FREE", "UNRESERVED", "ROOM-MAX", "ROOM-MIN", "QUEUE", "PRIO",
		       "REASON");
	for (size_t i = 0; i < eps.n; i++) {
		const Gp__Quote *x = h[i].rep ? h[i].rep->quote : NULL;
		char a[32], b[32], c[32], cell[64], tenant[13];

		if (!x)
			rc = 1;
		if (pc->json) {
			printf("%s{\"endpoint\":", i ? "," : "");
			poolctl_json_str(eps.v[i].addr);
			if (!x) {
				printf(",\"up\":false,\"error\":");
				poolctl_json_str(h[i].rep ? "no quote in the answer" : h[i].err);
				printf("}");
				continue;
			}
			printf(",\"up\":true,\"tenant\":");
			poolctl_json_str(x->tenant);
			printf(",\"fits\":%s,\"free_gpus\":%u,\"unreserved\":%" PRIu64
			       ",\"room_max\":%" PRIu64 ",\"room_min\":%" PRIu64
			       ",\"queue\":%u,\"sessions\":%u,\"draining\":%s,\"priority\":%u"
			       ",\"priority_requested\":%d,\"ahead\":%u,\"held_up\":%s"
			       ",\"preempt\":%u,\"preempt_grace\":%u,\"reason\":",
			       x->fits ? "true" : "false", x->free_gpus, x->unreserved, x->room_max,
			       x->room_min, x->queue, x->sessions, x->draining ? "true" : "false",
			       x->priority, x->priority_requested, x->ahead,
			       x->held_up ? "true" : "false", x->preempt, x->preempt_grace);
			poolctl_json_str(x->reason);
			printf("}");
			continue;
		}
		if (!x) {
			printf("%-24s %-5s %s\n", poolctl_cell(cell, 24, eps.v[i].addr), "down",
			       said(h[i].rep ? "no quote in the answer" : h[i].err));
			continue;
		}
		printf("%-24s %-5s %-12s %5u %12s %12s %12s %6u %4u  %s\n",
		       poolctl_cell(cell, 24, eps.v[i].addr), x->fits ? "yes" : "no",
		       poolctl_cell(tenant, 12, x->tenant), x->free_gpus,
		       poolctl_human(x->unreserved, a, sizeof(a)),
		       poolctl_human(x->room_max, b, sizeof(b)),
		       poolctl_human(x->room_min, c, sizeof(c)), x->queue, x->priority,
		       x->draining ? "draining" : said(x->reason));
	}
	if (pc->json)
		printf("]\n");
	free_all(h, eps.n);
	free(h);
	gp_endpoints_deinit(&eps);
	return rc;
}
