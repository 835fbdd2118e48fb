/* quote.c -- what this daemon could give a session of a tenant now: the answer to "quote"
 * on the admin endpoint (remote.c), which a client asks before it chooses where to connect.
 *
 * It reads the pool's ledger (pool.h) and changes nothing: no claim is made, nothing is
 * reserved, so the answer can be wrong by the time the client connects; the client then
 * falls back to its next candidate. The rules are admission's (pool.c): GPUs that are not
 * draining with the memory asked for unreserved and, for a compute share, that much of their
 * compute not granted, within the tenant's limits; spread prefers
 * the most room left, binpack the least that still fits (room_max and room_min). GPUs in MIG
 * mode count by their instances; with GPUPOOL_SLICE only matching instances count.
 *
 * The session's priority (GPUPOOL_PRIORITY cut to its tenant's) counts as in the queue
 * (gp_pool_prospect): it fits only when no waiter the queue's order puts before it waits for
 * room, and when it does not fit, the quote says how many preemptible sessions ending would
 * let it in after preempt_grace (of lower priority, or borrowing when it is entitled).
 */
#include <stdio.h>
#include <string.h>

#include "daemon.h"

static uint64_t per_gpu(const struct gp_config *cfg, uint64_t want, const struct gp_pool_gpu *g)
{
	if (want)
		return want;
	if (cfg->default_memory)
		return cfg->default_memory;
	return g->total_mem; /* a whole GPU */
}

void gp__quote(struct gp_daemon *d, const char *tenant, const Gp__QuoteQuery *q, Gp__Quote *out,
	       char *reason, size_t len)
{
	const struct gp_config *cfg = d->cfg;
	const struct gp_tenant *t = gp_config_tenant(cfg, tenant);
	uint32_t n = q->gpus ? q->gpus : 1, fitting = 0, open = 0, share, usable = 0;
	bool instance_fits = false;
	struct gp_claim asked = {.tenant = tenant,
				 .want_gpus = q->gpus,
				 .want_memory = q->memory,
				 .want_compute = q->compute,
				 .priority_set = q->priority_set,
				 .want_priority = q->priority_set ? q->priority : 0},
			any;
	struct gp_pool_prospect pr = {0};
	bool prio_ok = !q->priority_set || (q->priority >= 0 && q->priority <= 9);
	char bad_slice[256];
	bool slice_ok = gp_slice_parse(q->slice, &asked.slice, bad_slice, sizeof(bad_slice)) == 0;
	uint64_t budget = UINT64_MAX;
	struct gp_pool_usage u;

	out->tenant = (char *)tenant;
	gp_pool_tenant_usage(&d->pool, tenant, &u);
	if (t && t->memory != GP_LIMIT_NONE)
		budget = u.memory < t->memory ? (t->memory - u.memory) / n : 0;
	out->room_min = UINT64_MAX;
	share = gp_pool_compute_share(cfg, &asked); /* as admission would grant it */
	any = asked;
	any.slice.set = false;
	for (uint32_t g = 0; g < d->pool.ngpus; g++) {
		const struct gp_pool_gpu *gpu = &d->pool.gpu[g];
		uint64_t room = gpu->total_mem - gpu->reserved, m = per_gpu(cfg, q->memory, gpu);

		/* Not a GPU in MIG mode (its instances count), nor an instance of one draining;
		 * then not one GPUPOOL_SLICE rules out. */
		if (!gp_pool_eligible(&d->pool, &any, gpu))
			continue;
		open++;
		if (!gp_pool_eligible(&d->pool, &asked, gpu))
			continue;
		out->unreserved += room;
		if (m > room || m > budget || (share && share > 100 - gpu->compute))
			continue;
		fitting++;
		/* A session uses at most one MIG instance (pool.c, choose). */
		usable += !gpu->instance || !instance_fits;
		instance_fits = instance_fits || gpu->instance;
		if (room > out->room_max)
			out->room_max = room;
		if (room < out->room_min)
			out->room_min = room;
	}
	if (!fitting)
		out->room_min = 0;
	if (t && t->memory != GP_LIMIT_NONE && out->unreserved > t->memory - u.memory)
		out->unreserved = u.memory < t->memory ? t->memory - u.memory : 0;
	out->free_gpus = fitting;
	if (t && t->gpus != GP_LIMIT_NONE && out->free_gpus > t->gpus - u.gpus)
		out->free_gpus = u.gpus < t->gpus ? (uint32_t)(t->gpus - u.gpus) : 0;
	for (const struct gp_claim *c = d->pool.queue; c; c = c->qnext)
		out->queue++;
	out->sessions = d->nsessions;
	if (slice_ok && prio_ok)
		gp_pool_prospect(&d->pool, cfg, &asked, &pr);
	out->priority = pr.priority;
	out->priority_requested = q->priority_set ? q->priority : -1;
	out->ahead = pr.ahead;
	out->held_up = pr.held_up;
	out->draining = d->stopping || (d->pool.ngpus && !open);
	reason[0] = 0;
	if (!slice_ok)
		snprintf(reason, len, "%s", bad_slice);
	else if (!prio_ok)
		snprintf(reason, len, "GPUPOOL_PRIORITY=%d is not a priority (0 to 9)",
			 (int)q->priority);
	else if (out->draining)
		snprintf(reason, len, "%s",
			 d->stopping ? "the daemon is stopping" : "every GPU is draining");
	else if (share > 100)
		snprintf(reason, len, "asked for %u%% of a GPU's compute; a share is 1%% to 100%%",
			 share);
	else if (gp__sessions_live(d) >= cfg->max_sessions)
		snprintf(reason, len, "max_sessions (%u) reached", cfg->max_sessions);
	else if (t && u.sessions + 1 > t->sessions)
		snprintf(reason, len, "tenant %s holds its %llu sessions", tenant,
			 (unsigned long long)t->sessions);
	else if (t && t->gpus != GP_LIMIT_NONE && u.gpus + n > t->gpus)
		snprintf(reason, len, "tenant %s would hold more than its %llu GPUs", tenant,
			 (unsigned long long)t->gpus);
	else if (asked.slice.set && n > 1)
		snprintf(reason, len,
			 "asked for %u MIG instances; a session uses one (CUDA enumerates one MIG "
			 "instance per process)",
			 n);
	else if (usable < n)
		snprintf(reason, len,
			 "%u GPU%s with room for the memory and compute asked%s; %u asked for",
			 usable, usable == 1 ? "" : "s",
			 usable < fitting ? " (a session uses at most one MIG instance)" : "", n);
	/* Waiters the queue's order puts first hold it up, room or not. */
	if (pr.held_up) {
		size_t k = strlen(reason);

		if (k + 2 < len)
			snprintf(reason + k, len - k,
				 "%s%u session%s wait%s before it at priority %u (%u of higher "
				 "priority), one for room",
				 k ? "; " : "", pr.ahead, pr.ahead == 1 ? "" : "s",
				 pr.ahead == 1 ? "s" : "", pr.priority, pr.ahead_higher);
	}
	/* No room now: would ending preemptible sessions make some? */
	if (reason[0] && usable < n && !pr.held_up && pr.preempt) {
		size_t k = strlen(reason);

		out->preempt = pr.preempt;
		out->preempt_grace = cfg->preempt_grace;
		if (k < len)
			snprintf(reason + k, len - k,
				 "; ending %u preemptible session%s would make room in %u s "
				 "(preempt_grace)",
				 pr.preempt, pr.preempt == 1 ? "" : "s", cfg->preempt_grace);
	}
	out->fits = !reason[0];
	out->reason = reason;
}
