/* status.c -- `poolctl status`: the pool's GPUs and sessions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acct.h"
#include "escape.h"
#include "poolctl.h"

/* A JSON string, always valid JSON whatever a client put in it (gp_json_escape). */
void poolctl_json_str(const char *s)
{
	size_t n = gp_json_escape(NULL, 0, s);
	char *buf = malloc(n + 1);

	if (!buf) {
		fprintf(stderr, "poolctl: out of memory\n");
		exit(1);
	}
	gp_json_escape(buf, n + 1, s);
	printf("\"%s\"", buf);
	free(buf);
}

/* One cell of a table: escaped (see escape.h), the column separator too, and cut to fit. */
const char *poolctl_cell(char *buf, size_t width, const char *s)
{
	gp_escape(buf, width + 1, s, " ");
	return buf;
}

static void uuid_str(const ProtobufCBinaryData *u, char out[GP_ACCT_UUID])
{
	out[0] = '\0';
	if (u->len == 16)
		gp_uuid_format(u->data, out);
}

/* The sessions placed on GPU index, comma-separated after sep (JSON ids or the table's). */
static void print_session_ids(const Gp__AdminReply *r, uint32_t index, const char *sep)
{
	bool first = true;

	for (size_t i = 0; i < r->n_session; i++)
		for (size_t k = 0; k < r->session[i]->n_gpu; k++)
			if (r->session[i]->gpu[k] == index) {
				printf("%s%" PRIu64, first ? "" : sep, r->session[i]->id);
				first = false;
			}
}

/* MIG (docs/operations.md "Slicing and sharing"): each GPU's fields, and under a GPU in MIG
 * mode its instances' indices. */
static void print_json_mig(const Gp__AdminReply *r, const Gp__GpuStatus *g)
{
	bool first = true;

	printf(",\"mig\":%s,\"instance\":%s,\"sms\":%u,\"session_ids\":[",
	       g->mig ? "true" : "false", g->instance ? "true" : "false", g->sms);
	print_session_ids(r, g->index, ",");
	printf("]");
	if (g->instance) {
		printf(",\"parent\":%u,\"profile\":", g->parent);
		poolctl_json_str(g->profile);
		printf(",\"gpu_instance\":%u,\"compute_instance\":%u", g->gpu_instance,
		       g->compute_instance);
	}
	if (!g->mig)
		return;
	printf(",\"instances\":[");
	for (size_t i = 0; i < r->n_gpu; i++) {
		if (r->gpu[i]->instance && r->gpu[i]->parent == g->index) {
			printf("%s%u", first ? "" : ",", r->gpu[i]->index);
			first = false;
		}
	}
	printf("]");
}

/* A utilization figure, or null when it is not known (docs/operations.md "Utilization"). */
static void json_util(const char *key, bool known, double v)
{
	if (known)
		printf(",\"%s\":%.2f", key, v);
	else
		printf(",\"%s\":null", key);
}

/* The host's utilization and each tenant's busy time, after its "gpus" and "sessions". */
static void json_util_all(const Gp__AdminReply *r)
{
	printf(",\"utilization\":{\"span_1m\":%.3f,\"span_1h\":%.3f", r->util_span_1m,
	       r->util_span_1h);
	json_util("util_1m", r->util_known, r->util_1m);
	json_util("util_1h", r->util_known, r->util_1h);
	printf(",\"tenants\":[");
	for (size_t i = 0; i < r->n_tenant_util; i++) {
		const Gp__TenantUtil *t = r->tenant_util[i];

		printf("%s{\"tenant\":", i ? "," : "");
		poolctl_json_str(t->tenant);
		printf(",\"busy_1m_seconds\":%.3f,\"busy_1h_seconds\":%.3f,\"gpus_1m\":%.3f"
		       ",\"gpus_1h\":%.3f}",
		       t->busy_1m_seconds, t->busy_1h_seconds, t->gpus_1m, t->gpus_1h);
	}
	printf("]}");
}

static void print_json(const Gp__AdminReply *r)
{
	char uuid[48];

	printf("{\"version\":");
	poolctl_json_str(r->version);
	printf(",\"listen\":");
	poolctl_json_str(r->listen);
	printf(",\"listen_plain\":");
	poolctl_json_str(r->listen_plain);
	printf(",\"listen_unix\":");
	poolctl_json_str(r->listen_unix);
	printf(",\"admin_listen\":");
	poolctl_json_str(r->admin_listen);
	printf(",\"host\":");
	poolctl_json_str(r->host);
	printf(",\"role\":");
	poolctl_json_str(r->role);
	printf(",\"nvml\":");
	if (r->nvml_library && r->nvml_library[0]) {
		printf("{\"library\":");
		poolctl_json_str(r->nvml_library);
		printf(",\"driver_version\":");
		poolctl_json_str(r->nvml_driver_version);
		printf("}");
	} else {
		printf("null");
	}
	printf(",\"started\":%" PRId64 ",\"draining\":%s,\"warm_workers\":%u,\"gpus\":[",
	       r->started, r->draining ? "true" : "false", r->warm_workers);
	for (size_t i = 0; i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];

		uuid_str(&g->uuid, uuid);
		if (g->instance && uuid[0])
			memcpy(uuid, "MIG-",
			       4); /* as nvidia-smi and CUDA_VISIBLE_DEVICES spell it */
		printf("%s{\"index\":%u,\"name\":", i ? "," : "", g->index);
		poolctl_json_str(g->name);
		printf(",\"uuid\":");
		poolctl_json_str(uuid);
		printf(",\"nvml\":");
		poolctl_json_str(g->nvml && g->nvml[0] ? g->nvml : "absent");
		printf(",\"memory_total\":%" PRIu64 ",\"memory_used\":%" PRIu64
		       ",\"memory_reserved\":%" PRIu64 ",\"compute_reserved\":%u"
		       ",\"sessions\":%u,\"draining\":%s",
		       g->total_mem, g->used_mem, g->reserved_mem, g->compute_reserved, g->sessions,
		       g->draining ? "true" : "false");
		print_json_mig(r, g);
		json_util("util_1m", g->util_known, g->util_1m);
		json_util("util_1h", g->util_known, g->util_1h);
		json_util("busy_1m_seconds", g->util_known, g->busy_1m_seconds);
		json_util("busy_1h_seconds", g->util_known, g->busy_1h_seconds);
		printf("}");
	}
	printf("],\"sessions\":[");
	for (size_t i = 0; i < r->n_session; i++) {
		const Gp__SessionStatus *s = r->session[i];

		printf("%s{\"id\":%" PRIu64 ",\"state\":", i ? "," : "", s->id);
		poolctl_json_str(s->state);
		printf(",\"tenant\":");
		poolctl_json_str(s->tenant);
		printf(",\"client\":");
		poolctl_json_str(s->client);
		printf(",\"client_host\":");
		poolctl_json_str(s->client_host);
		printf(",\"client_pid\":%u,\"program\":", s->client_pid);
		poolctl_json_str(s->program);
		printf(",\"gpus\":[");
		for (size_t k = 0; k < s->n_gpu; k++)
			printf("%s%u", k ? "," : "", s->gpu[k]);
		printf("],\"memory_used\":%" PRIu64 ",\"memory_peak\":%" PRIu64
		       ",\"memory_limit\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"bytes_in\":%" PRIu64
		       ",\"bytes_out\":%" PRIu64 ",\"started\":%" PRId64 ",\"last_active\":%" PRId64
		       ",\"worker_pid\":%u,\"gpus_requested\":%u"
		       ",\"memory_requested\":%" PRIu64 ",\"queued_since\":%" PRId64
		       ",\"managed_in\":%" PRIu64 ",\"managed_out\":%" PRIu64,
		       s->mem_used, s->mem_peak, s->mem_limit, s->calls, s->bytes_in, s->bytes_out,
		       s->started, s->last_active, s->worker_pid, s->gpus_requested,
		       s->memory_requested, s->queued_since, s->managed_in, s->managed_out);
		printf(",\"waiting_for\":");
		poolctl_json_str(s->waiting_for);
		printf(",\"queue_place\":%u,\"share\":", s->queue_place);
		poolctl_json_str(s->share);
		printf(",\"compute\":%u,\"compute_requested\":%u,\"preemptible\":%s"
		       ",\"preempt_at\":%" PRId64 ",\"host_memory\":%" PRIu64
		       ",\"host_memory_limit\":%" PRIu64 ",\"host_memory_from\":",
		       s->compute, s->compute_requested, s->preemptible ? "true" : "false",
		       s->preempt_at, s->host_memory, s->host_memory_limit);
		poolctl_json_str(s->host_memory_from);
		printf(",\"slice_requested\":");
		poolctl_json_str(s->slice_requested);
		printf(",\"priority\":%u,\"priority_requested\":%d,\"would_preempt\":[",
		       s->priority, s->priority_requested);
		for (size_t k = 0; k < s->n_would_preempt; k++)
			printf("%s%" PRIu64, k ? "," : "", s->would_preempt[k]);
		printf("],\"would_preempt_at\":%" PRId64 ",\"ahead_higher\":%u,\"waiting_reason\":",
		       s->would_preempt_at, s->ahead_higher);
		poolctl_json_str(s->waiting_reason);
		if (s->busy_known)
			printf(",\"gpu_busy_seconds\":%.6f", s->gpu_busy_seconds);
		else
			printf(",\"gpu_busy_seconds\":null");
		printf(",\"held_seconds\":%.6f,\"compute_enforce\":", s->held_seconds);
		poolctl_json_str(s->compute_enforce);
		printf("}");
	}
	printf("]");
	json_util_all(r);
	printf("}\n");
}

const char *poolctl_human(uint64_t v, char *buf, size_t len)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double x = (double)v;
	int u = 0;

	while (x >= 1024 && u < 4) {
		x /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.1f %s", x, units[u]);
	return buf;
}

static const char *age(int64_t since, char *buf, size_t len)
{
	int64_t s = (int64_t)time(NULL) - since;

	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 7200)
		snprintf(buf, len, "%" PRId64 "m", s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%" PRId64 "h", s / 3600);
	else
		snprintf(buf, len, "%" PRId64 "d", s / 86400);
	return buf;
}

/* "12%/3%", or "-" when not known. */
const char *poolctl_util(bool known, double m, double h, char *buf, size_t len)
{
	if (known)
		snprintf(buf, len, "%.0f%%/%.0f%%", m, h);
	else
		snprintf(buf, len, "-");
	return buf;
}

static void print_gpus(const Gp__AdminReply *r)
{
	char a[32], b[32], c[32];

	printf("%-4s %-24s %12s %12s %12s %8s %8s %9s\n", "GPU", "NAME", "USED", "RESERVED",
	       "TOTAL", "COMPUTE", "SESSIONS", "UTIL 1M/1H");
	for (size_t i = 0; i < r->n_gpu; i++) {
		const Gp__GpuStatus *g = r->gpu[i];
		char name[25], compute[16], label[64], idx[16], util[32];

		/* The compute granted to sessions' shares, next to the memory reserved. A GPU in
		 * MIG mode takes no session itself: its instances follow it, indented, each with
		 * its sessions. */
		snprintf(compute, sizeof(compute), "%u%%", g->compute_reserved);
		snprintf(idx, sizeof(idx), "%s%u", g->instance ? " " : "", g->index);
		if (g->instance)
			snprintf(label, sizeof(label), "\\_ MIG %s, %u SMs",
				 poolctl_cell(name, 12, g->profile), g->sms);
		else if (g->mig)
			snprintf(label, sizeof(label), "%s (MIG)", poolctl_cell(name, 17, g->name));
		else
			snprintf(label, sizeof(label), "%s", poolctl_cell(name, 24, g->name));
		printf("%-4s %-24s %12s %12s %12s %8s %8u %9s%s%s", idx, label,
		       poolctl_human(g->used_mem, a, sizeof(a)),
		       poolctl_human(g->reserved_mem, b, sizeof(b)),
		       poolctl_human(g->total_mem, c, sizeof(c)), compute, g->sessions,
		       poolctl_util(g->util_known, g->util_1m, g->util_1h, util, sizeof(util)),
		       g->draining ? "  draining" : "",
		       g->nvml && strcmp(g->nvml, "mismatch") == 0 ? "  NVML disagrees" : "");
		if (g->instance && g->sessions) {
			printf("  sessions ");
			print_session_ids(r, g->index, ",");
		}
		printf("\n");
	}
}

static void print_sessions(const Gp__AdminReply *r)
{
	char a[32], b[32], c[32];

	printf("%-8s %-10s %-12s %-22s %-16s %-6s %12s %12s %12s %8s %6s %4s\n", "SESSION", "STATE",
	       "TENANT", "CLIENT", "PROGRAM", "GPUS", "MEM USED", "LIMIT", "HOST MEM", "CALLS",
	       "AGE", "PRIO");
	if (r->n_session == 0)
		printf("(no sessions)\n");
	for (size_t i = 0; i < r->n_session; i++) {
		const Gp__SessionStatus *s = r->session[i];
		char gpus[64] = "-", lim[32] = "-", tenant[13], client[23], program[17];
		char note[320] = "";
		size_t k = 0;

		for (size_t j = 0; j < s->n_gpu && k < sizeof(gpus) - 8; j++)
			k += (size_t)snprintf(gpus + k, sizeof(gpus) - k, "%s%u", j ? "," : "",
					      s->gpu[j]);
		if (s->mem_limit)
			poolctl_human(s->mem_limit, lim, sizeof(lim));
		/* Its compute share; why a waiter waits; whether a tenant is past its guarantee. */
		if (s->compute)
			snprintf(note, sizeof(note), "  compute %u%%", s->compute);
		else if (s->compute_requested && strcmp(s->state, "queued") == 0)
			snprintf(note, sizeof(note), "  compute %u%% asked", s->compute_requested);
		k = strlen(note);
		/* The daemon's words name its priority and those of higher priority before it. */
		if (s->waiting_for && *s->waiting_for)
			snprintf(note + k, sizeof(note) - k, "  #%u in queue, waits for %s",
				 s->queue_place,
				 s->waiting_reason && *s->waiting_reason ? s->waiting_reason
				 : strcmp(s->waiting_for, "tenant") == 0 ? "its tenant's limits"
				 : strcmp(s->waiting_for, "behind") == 0 ? "those before it"
									 : "room");
		/* The preemption under way for it: whom it ends, and when. */
		if (s->n_would_preempt) {
			time_t at = (time_t)s->would_preempt_at;
			struct tm tm;
			char when[16] = "?";

			if (localtime_r(&at, &tm))
				strftime(when, sizeof(when), "%H:%M:%S", &tm);
			k = strlen(note);
			k += (size_t)snprintf(note + k, sizeof(note) - k,
					      "; would preempt session%s ",
					      s->n_would_preempt == 1 ? "" : "s");
			for (size_t j = 0; j < s->n_would_preempt && k < sizeof(note) - 32; j++)
				k += (size_t)snprintf(note + k, sizeof(note) - k, "%s%" PRIu64,
						      j ? "," : "", s->would_preempt[j]);
			if (k < sizeof(note))
				snprintf(note + k, sizeof(note) - k, " at %s", when);
		}
		if (s->priority_requested >= 0 && (uint32_t)s->priority_requested > s->priority) {
			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  priority %d asked",
				 s->priority_requested);
		}
		if (s->share && strcmp(s->share, "borrowing") == 0) {
			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  borrowing");
		}
		if (s->preempt_at) {
			int64_t left = s->preempt_at - (int64_t)time(NULL);

			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  preempted, ends in %" PRId64 "s",
				 left > 0 ? left : 0);
		}
		/* Its GPU busy time, and how long its launches were held for its share. */
		if (s->busy_known) {
			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  busy %.1fs", s->gpu_busy_seconds);
		}
		if (s->held_seconds >= 0.05) {
			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  held %.1fs", s->held_seconds);
		}
		/* The worker's host memory: its cgroup's (limit in the note), or its RSS. */
		if (s->host_memory_limit) {
			k = strlen(note);
			snprintf(note + k, sizeof(note) - k, "  host limit %s",
				 poolctl_human(s->host_memory_limit, c, sizeof(c)));
		}
		printf("%-8" PRIu64 " %-10s %-12s %-22s %-16s %-6s %12s %12s %12s %8" PRIu64
		       " %6s %4u%s\n",
		       s->id, s->state, poolctl_cell(tenant, 12, s->tenant),
		       poolctl_cell(client, 22, s->client), poolctl_cell(program, 16, s->program),
		       gpus, poolctl_human(s->mem_used, a, sizeof(a)), lim,
		       poolctl_human(s->host_memory, c, sizeof(c)), s->calls,
		       age(s->started, b, sizeof(b)), s->priority, note);
	}
}

static void print_tables(const Gp__AdminReply *r)
{
	char a[32];
	size_t targets = 0;

	for (size_t i = 0; i < r->n_gpu; i++) /* a GPU in MIG mode is counted by its instances */
		targets += !r->gpu[i]->mig;

	printf("gpupool %s on %s%s%s%s%s, up %s, %zu GPU%s, %zu session%s, %u warm worker%s%s\n\n",
	       r->version, r->listen, *r->listen_plain ? ", plain " : "", r->listen_plain,
	       *r->listen_unix ? ", local " : "", r->listen_unix, age(r->started, a, sizeof(a)),
	       targets, targets == 1 ? "" : "s", r->n_session, r->n_session == 1 ? "" : "s",
	       r->warm_workers, r->warm_workers == 1 ? "" : "s", r->draining ? ", draining" : "");
	print_gpus(r);
	if (r->util_known)
		printf("\nutilization %.1f%% over the last %.0fs, %.1f%% over the last %.0fs\n",
		       r->util_1m, r->util_span_1m, r->util_1h, r->util_span_1h);
	else
		printf("\nutilization not known (a driver that does not tell busy time)\n");
	for (size_t i = 0; i < r->n_tenant_util; i++) {
		char t[25];
		const Gp__TenantUtil *u = r->tenant_util[i];

		printf("  tenant %-24s %8.1f GPU-s busy (%.2f GPUs) last minute, %8.1f (%.2f) last "
		       "hour\n",
		       poolctl_cell(t, 24, u->tenant), u->busy_1m_seconds, u->gpus_1m,
		       u->busy_1h_seconds, u->gpus_1h);
	}
	printf("\n");
	print_sessions(r);
}

/* One status request, shown in full or sessions only; --watch repeats it. */
static int show(struct poolctl *pc, bool sessions_only)
{
	if (pc->pool)
		return poolctl_fleet_status(pc, sessions_only);
	for (;;) {
		Gp__AdminReply *r = poolctl_request(pc, "status", 0, NULL);

		if (pc->watch)
			printf("\033[H\033[2J"); /* home, clear: a refreshing screen */
		if (pc->json)
			print_json(r);
		else if (sessions_only)
			print_sessions(r);
		else
			print_tables(r);
		protobuf_c_message_free_unpacked(&r->base, NULL);
		if (!pc->watch)
			return 0;
		fflush(stdout);
		usleep((useconds_t)(pc->watch * 1e6));
	}
}

int poolctl_sessions(struct poolctl *pc, int argc, char **argv)
{
	if (argc > 0) {
		fprintf(stderr, "poolctl: sessions: unexpected argument '%s'\n", argv[0]);
		return 2;
	}
	return show(pc, true);
}

int poolctl_status(struct poolctl *pc, int argc, char **argv)
{
	if (argc > 0) {
		fprintf(stderr, "poolctl: status: unexpected argument '%s'\n", argv[0]);
		return 2;
	}
	return show(pc, false);
}
