/* usage.c -- `poolctl usage`: the daemon's accounting records summed over a time range. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acct.h"
#include "poolctl.h"

static int usage_error(const char *why)
{
	if (why)
		fprintf(stderr, "poolctl: usage: %s\n", why);
	fprintf(stderr, "usage: poolctl usage --since DATE [--until DATE] [--by tenant|host|day] "
			"[--json]\n"
			"  DATE: 2026-12-01 (midnight UTC) or an RFC 3339 time, "
			"2026-12-01T08:00:00Z\n");
	return 2;
}

static void json_row(const Gp__UsageRow *r)
{
	printf("\"sessions\":%" PRIu64 ",\"gpu_seconds\":%.3f,\"gpu_busy_seconds\":", r->sessions,
	       r->gpu_seconds);
	/* Only a figure every session measured is a sum; otherwise it is not known. */
	if (r->sessions && r->busy_sessions == r->sessions)
		printf("%.3f", r->gpu_busy_seconds);
	else
		printf("null");
	printf(",\"mem_gib_seconds\":%.6f,\"mem_peak\":%" PRIu64 ",\"bytes_in\":%" PRIu64
	       ",\"bytes_out\":%" PRIu64 ",\"calls\":%" PRIu64,
	       r->mem_gib_seconds, r->mem_peak, r->bytes_in, r->bytes_out, r->calls);
}

void poolctl_usage_add(Gp__UsageRow *sum, const Gp__UsageRow *r)
{
	sum->sessions += r->sessions;
	sum->gpu_seconds += r->gpu_seconds;
	sum->busy_sessions += r->busy_sessions;
	sum->gpu_busy_seconds += r->gpu_busy_seconds;
	sum->mem_gib_seconds += r->mem_gib_seconds;
	if (r->mem_peak > sum->mem_peak)
		sum->mem_peak = r->mem_peak;
	sum->bytes_in += r->bytes_in;
	sum->bytes_out += r->bytes_out;
	sum->calls += r->calls;
}

static void print_json(const Gp__UsageReport *u, const Gp__UsageRow *total)
{
	char t[32];

	printf("{\"pool_host\":");
	poolctl_json_str(u->pool_host);
	printf(",\"by\":");
	poolctl_json_str(u->by);
	gp_time_format(u->since, t, sizeof(t));
	printf(",\"since\":\"%s\",\"until\":", t);
	if (u->until) {
		gp_time_format(u->until, t, sizeof(t));
		printf("\"%s\"", t);
	} else {
		printf("null");
	}
	printf(",\"records\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"files\":[", u->records,
	       u->skipped);
	for (size_t i = 0; i < u->n_file; i++) {
		if (i)
			putchar(',');
		poolctl_json_str(u->file[i]);
	}
	printf("],\"rows\":[");
	for (size_t i = 0; i < u->n_row; i++) {
		printf("%s{\"key\":", i ? "," : "");
		poolctl_json_str(u->row[i]->key);
		putchar(',');
		json_row(u->row[i]);
		putchar('}');
	}
	printf("],\"total\":{");
	json_row(total);
	printf("}}\n");
}

static void print_line(const char *key, const Gp__UsageRow *r)
{
	char k[25], busy[24], peak[24], in[24], out[24];

	if (r->sessions && r->busy_sessions == r->sessions)
		snprintf(busy, sizeof(busy), "%.2f", r->gpu_busy_seconds);
	else
		snprintf(busy, sizeof(busy), "-");
	printf("%-24s %8" PRIu64 " %12.2f %12s %14.3f %11s %11s %11s %10" PRIu64 "\n",
	       poolctl_cell(k, 24, *key ? key : "-"), r->sessions, r->gpu_seconds, busy,
	       r->mem_gib_seconds, poolctl_human(r->mem_peak, peak, sizeof(peak)),
	       poolctl_human(r->bytes_in, in, sizeof(in)),
	       poolctl_human(r->bytes_out, out, sizeof(out)), r->calls);
}

static void print_table(const Gp__UsageReport *u, const Gp__UsageRow *total)
{
	char since[32], until[32], host[65];

	gp_time_format(u->since, since, sizeof(since));
	if (u->until)
		gp_time_format(u->until, until, sizeof(until));
	else
		snprintf(until, sizeof(until), "now");
	printf("%s: sessions that ended from %s to %s, by %s\n",
	       poolctl_cell(host, 64, u->pool_host), since, until, u->by);
	printf("%-24s %8s %12s %12s %14s %11s %11s %11s %10s\n",
	       strcmp(u->by, "day") == 0    ? "DAY (UTC)"
	       : strcmp(u->by, "host") == 0 ? "CLIENT HOST"
					    : "TENANT",
	       "SESSIONS", "GPU-SECONDS", "BUSY-SECONDS", "MEM-GIB-SECONDS", "PEAK-MEM", "IN",
	       "OUT", "CALLS");
	for (size_t i = 0; i < u->n_row; i++)
		print_line(u->row[i]->key, u->row[i]);
	if (u->n_row > 1)
		print_line("(total)", total);
	printf("%" PRIu64 " record%s in %zu file%s", u->records, u->records == 1 ? "" : "s",
	       u->n_file, u->n_file == 1 ? "" : "s");
	if (u->skipped)
		printf("; %" PRIu64 " line%s that %s not records skipped (torn or corrupt)",
		       u->skipped, u->skipped == 1 ? "" : "s", u->skipped == 1 ? "is" : "are");
	printf("\n");
}

int poolctl_usage(struct poolctl *pc, int argc, char **argv)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	Gp__UsageQuery q = GP__USAGE_QUERY__INIT;
	const char *since = NULL, *until = NULL, *by = "tenant";
	enum gp_acct_by b;
	Gp__AdminReply *rep;
	int64_t ms;

	for (int i = 0; i < argc; i++) {
		const char **slot = strcmp(argv[i], "--since") == 0   ? &since
				    : strcmp(argv[i], "--until") == 0 ? &until
				    : strcmp(argv[i], "--by") == 0    ? &by
								      : NULL;

		if (!slot) {
			fprintf(stderr, "poolctl: usage: unknown argument '%s'\n", argv[i]);
			return usage_error(NULL);
		}
		if (i + 1 >= argc)
			return usage_error("an option needs a value");
		*slot = argv[++i];
	}
	if (!since)
		return usage_error("--since is required");
	if (gp_time_parse(since, &ms)) {
		fprintf(stderr, "poolctl: usage: --since '%s' is not a date or an RFC 3339 time\n",
			since);
		return 2;
	}
	q.since = ms;
	if (until) {
		if (gp_time_parse(until, &ms)) {
			fprintf(stderr,
				"poolctl: usage: --until '%s' is not a date or an RFC 3339 time\n",
				until);
			return 2;
		}
		if (ms <= q.since) {
			fprintf(stderr, "poolctl: usage: --until must be later than --since\n");
			return 2;
		}
		q.until = ms;
	}
	if (gp_acct_by_parse(by, &b)) {
		fprintf(stderr, "poolctl: usage: --by '%s': expected tenant, host or day\n", by);
		return 2;
	}
	q.by = (char *)gp_acct_by_name(b);
	req.command = "usage";
	req.usage = &q;
	if (pc->pool)
		return poolctl_fleet_usage(pc, &q);
	rep = poolctl_send(pc, &req);
	if (!rep->usage) {
		fprintf(stderr, "poolctl: usage: the daemon sent no report (is it older?)\n");
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return 1;
	}
	poolctl_usage_print(pc, rep->usage);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return 0;
}

void poolctl_usage_print(struct poolctl *pc, const Gp__UsageReport *u)
{
	Gp__UsageRow total = GP__USAGE_ROW__INIT;

	for (size_t i = 0; i < u->n_row; i++)
		poolctl_usage_add(&total, u->row[i]);
	if (pc->json)
		print_json(u, &total);
	else
		print_table(u, &total);
}
