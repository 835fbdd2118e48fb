/* status.c -- the pool's state as one snapshot (AdminReply): for poolctl and for metrics. */
#include <stdlib.h>
#include <string.h>

#include <gpupool/gpupool.h>

#include "daemon.h"
#include "log.h"

static const char *state_name(int st)
{
	switch (st) {
	case GP_SESSION_HANDSHAKE:
		return "handshake";
	case GP_SESSION_QUEUED:
		return "queued";
	case GP_SESSION_ACTIVE:
		return "active";
	case GP_SESSION_CLOSING:
		return "closing";
	default:
		return "unknown";
	}
}

/* Where the session's tenant stands against its guarantee: "within", "borrowing", "". */
static const char *share_name(struct gp_daemon *d, const struct gp_session *s)
{
	const struct gp_tenant *t = s->tenant[0] ? gp_config_tenant(d->cfg, s->tenant) : NULL;

	if (!t || (!t->guarantee_gpus && !t->guarantee_memory))
		return "";
	return gp_pool_tenant_entitled(&d->pool, d->cfg, s->tenant) ? "within" : "borrowing";
}

#define REASON_LEN 96

/* Why a waiter waits, in words, with its priority: "room at priority 3, behind 1 of higher
 * priority". */
static char *waiting_reason(char *buf, size_t len, enum gp_pool_wait why,
			    const Gp__SessionStatus *x)
{
	const char *what = why == GP_POOL_WAIT_TENANT	  ? "its tenant's limits"
			   : why == GP_POOL_WAIT_CAPACITY ? "room"
							  : "those before it";
	int k = snprintf(buf, len, "%s at priority %u", what, x->priority);

	if (x->ahead_higher && k > 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, ", behind %u of higher priority",
			 x->ahead_higher);
	return buf;
}

/* Fills a status reply; the arrays are allocated here and freed by gp__status_free(). */
int gp__status_build(struct gp_daemon *d, Gp__AdminReply *rep)
{
	Gp__GpuStatus *gs = calloc(d->pool.ngpus + 1, sizeof(*gs));
	/* The sessions, then each one's waiting_reason text (freed with them). */
	Gp__SessionStatus *ss = calloc(1, (d->nsessions + 1) * (sizeof(*ss) + REASON_LEN));
	char *reasons = ss ? (char *)(ss + d->nsessions + 1) : NULL;
	/* The sessions a preemption under way ends, for the one waiter it is for: one preemption
	 * at a time (pool.h), and the reply is packed before the next build. */
	static uint64_t victims[GP_STATS_MAX_DEVICES * 4];
	struct gp_claim *pw = gp_pool_preempt_waiter(&d->pool, d->cfg);
	size_t n = 0, nv = 0;
	int64_t victims_at = 0;

	for (struct gp_session *s = d->sessions; pw && s; s = s->next) {
		uint64_t end = gp__admit_preempt_deadline(s), now = uv_now(d->loop);
		int64_t at = (int64_t)time(NULL) + (int64_t)((end > now ? end - now : 0) / 1000);

		if (!end || nv == sizeof(victims) / sizeof(victims[0]))
			continue;
		victims[nv++] = s->id;
		if (at > victims_at)
			victims_at = at;
	}
	rep->gpu = calloc(d->pool.ngpus + 1, sizeof(*rep->gpu));
	rep->session = calloc(d->nsessions + 1, sizeof(*rep->session));
	if (!gs || !ss || !rep->gpu || !rep->session) {
		free(gs);
		free(ss);
		free(rep->gpu);
		free(rep->session);
		return -ENOMEM;
	}
	/* Slot 0 holds the arrays even when empty, so gp__status_free always finds them. */
	rep->gpu[0] = gs;
	rep->session[0] = ss;
	for (uint32_t g = 0; g < d->pool.ngpus; g++) {
		gp__gpu_status__init(&gs[g]);
		gs[g].index = d->pool.gpu[g].index;
		gs[g].name = d->gpus[g].name;
		gs[g].uuid.data = d->gpus[g].uuid;
		gs[g].uuid.len = 16;
		gs[g].total_mem = d->pool.gpu[g].total_mem;
		gs[g].reserved_mem = d->pool.gpu[g].reserved;
		gs[g].sessions = d->pool.gpu[g].sessions;
		gs[g].draining = d->pool.gpu[g].draining;
		gs[g].compute_reserved = d->pool.gpu[g].compute;
		gs[g].nvml = d->gpus[g].nvml;
		gs[g].mig = d->pool.gpu[g].mig;
		gs[g].instance = d->pool.gpu[g].instance;
		gs[g].parent = d->pool.gpu[g].parent;
		gs[g].profile = d->pool.gpu[g].profile;
		gs[g].sms = d->pool.gpu[g].sms;
		gs[g].gpu_instance = d->gpus[g].gpu_instance;
		gs[g].compute_instance = d->gpus[g].compute_instance;
		rep->gpu[g] = &gs[g];
	}
	rep->n_gpu = d->pool.ngpus;
	for (struct gp_session *s = d->sessions; s; s = s->next, n++) {
		Gp__SessionStatus *x = &ss[n];
		struct gp_stats *st = s->stats;

		gp__session_status__init(x);
		x->id = s->id;
		x->tenant = s->tenant;
		x->client = s->client_addr;
		x->client_host = s->client_host;
		x->client_pid = s->client_pid;
		x->program = s->program;
		x->n_gpu = s->claim.ndev;
		x->gpu = s->claim.dev;
		x->mem_limit = s->claim.mem_limit;
		x->started = s->started;
		x->worker_pid = (uint32_t)s->proc.pid;
		{
			bool cg;

			x->host_memory = gp__cgroup_memory(s, &cg);
			x->host_memory_from = cg ? "cgroup" : "rss";
			x->host_memory_limit = cg ? s->cg_memory : 0;
		}
		/* Admission states are the supervisor's; the worker's page says the rest. */
		x->state = (char *)state_name(s->claim.state == GP_CLAIM_QUEUED || !st ||
							      s->state == GP_SESSION_CLOSING
						      ? s->state
						      : (int)atomic_load(&st->state));
		x->gpus_requested = s->claim.want_gpus;
		x->memory_requested = s->claim.want_memory;
		x->compute = s->claim.compute;
		x->compute_requested = s->claim.want_compute;
		x->compute_enforce =
			x->compute ? (char *)gp_compute_enforce_name(s->compute_enforce) : "";
		x->slice_requested = s->slice;
		x->preemptible = gp_pool_preemptible(d->cfg, &s->claim);
		x->priority = gp_pool_priority(d->cfg, &s->claim);
		x->priority_requested = s->claim.priority_set ? s->claim.want_priority : -1;
		if (pw == &s->claim) {
			x->n_would_preempt = nv;
			x->would_preempt = victims;
			x->would_preempt_at = victims_at;
		}
		if (gp__admit_preempt_deadline(s)) {
			uint64_t now = uv_now(d->loop), end = gp__admit_preempt_deadline(s);
			uint64_t left = end > now ? end - now : 0;

			x->preempt_at = (int64_t)time(NULL) + (int64_t)(left / 1000);
		}
		x->share = (char *)share_name(d, s);
		if (s->claim.state == GP_CLAIM_QUEUED) {
			enum gp_pool_wait why =
				gp_pool_waiting_for(&d->pool, d->cfg, &s->claim, &x->queue_place);

			x->queued_since = (int64_t)time(NULL) -
					  (int64_t)((uv_now(d->loop) - s->claim.queued_at) / 1000);
			x->waiting_for = (char *)gp_pool_wait_name(why);
			x->ahead_higher = gp_pool_ahead_higher(&d->pool, d->cfg, &s->claim);
			x->waiting_reason =
				waiting_reason(&reasons[n * REASON_LEN], REASON_LEN, why, x);
		}
		if (st) {
			x->mem_used = atomic_load_explicit(&st->mem_used, memory_order_relaxed);
			x->mem_peak = atomic_load_explicit(&st->mem_peak, memory_order_relaxed);
			x->calls = atomic_load_explicit(&st->calls, memory_order_relaxed);
			x->bytes_in = atomic_load_explicit(&st->bytes_in, memory_order_relaxed);
			x->bytes_out = atomic_load_explicit(&st->bytes_out, memory_order_relaxed);
			x->managed_in = atomic_load_explicit(&st->managed_in, memory_order_relaxed);
			x->managed_out =
				atomic_load_explicit(&st->managed_out, memory_order_relaxed);
			x->last_active =
				atomic_load_explicit(&st->last_active, memory_order_relaxed);
			x->busy_known = atomic_load_explicit(&st->busy_known,
							     memory_order_relaxed) == GP_BUSY_KNOWN;
			for (uint32_t i = 0;
			     x->busy_known && i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++)
				x->gpu_busy_seconds +=
					(double)atomic_load_explicit(&st->dev_busy_ns[i],
								     memory_order_relaxed) /
					1e9;
			x->held_seconds =
				(double)atomic_load_explicit(&st->held_ns, memory_order_relaxed) /
				1e9;
			/* Per-GPU use: the worker counts by its own device index. */
			for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++)
				for (uint32_t g = 0; g < d->pool.ngpus; g++)
					if (d->pool.gpu[g].index == s->claim.dev[i])
						gs[g].used_mem += atomic_load_explicit(
							&st->dev_mem_used[i], memory_order_relaxed);
		}
		rep->session[n] = x;
	}
	rep->n_session = n;
	rep->version = GP_VERSION_STRING;
	rep->started = d->started;
	rep->draining = d->stopping;
	rep->listen = d->listen_addr;
	rep->listen_plain = d->plain_open ? d->plain_addr : "";
	rep->listen_unix = d->local_open ? d->cfg->listen_unix : "";
	rep->warm_workers = gp__warm_ready(d);
	rep->nvml_library = d->nvml_library;
	rep->nvml_driver_version = d->nvml_driver_version;
	rep->host = d->hostname;
	if (gp__util_fill(d, rep)) {
		/* Nothing of it is left to send: the caller answers the error alone. */
		gp__status_free(rep);
		rep->gpu = NULL;
		rep->session = NULL;
		rep->n_gpu = rep->n_session = 0;
		return -ENOMEM;
	}
	return 0;
}

void gp__status_free(Gp__AdminReply *rep)
{
	/* The element arrays were allocated once each (n + 1 entries), even when empty. */
	free(rep->gpu[0]);
	free(rep->session[0]);
	free(rep->gpu);
	free(rep->session);
	gp__util_free(rep);
}
