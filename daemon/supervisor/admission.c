/* admission.c -- where a session runs: placement, the reservation ledger, tenant limits and
 * the wait queue.
 *
 * A session asks for N GPUs and M bytes on each (M 0: the pool's default_memory, or a whole
 * GPU when that is 0). It is admitted when its tenant's limits allow it and N GPUs that are
 * not draining each have M bytes unreserved; the memory is then reserved on each until the
 * session ends. A request that could never fit is refused at once. One that does not fit
 * now waits, in arrival order; a waiter held back only by its own tenant's limits does not
 * hold up the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "error.h"
#include "log.h"

enum { PLACED = 0, WAIT_TENANT = 1, WAIT_CAPACITY = 2 };

static void reply(struct gp_session *s, int status, const char *msg)
{
	Gp__AdmitReply rep = GP__ADMIT_REPLY__INIT;

	rep.status = status;
	rep.message = (char *)(msg ? msg : "");
	rep.tenant = s->tenant;
	if (status == 0) {
		rep.n_device = s->ndev;
		rep.device = s->dev;
		rep.memory_limit = s->mem_limit;
	}
	gp__uv_send((uv_stream_t *)&s->ctl, GP_MSG_ADMIT_REPLY, &rep.base);
}

static void refuse(struct gp_session *s, const char *why)
{
	gp_log_info("session %llu (tenant %s) refused: %s", (unsigned long long)s->id, s->tenant,
		    why);
	reply(s, GP_EREFUSED, why);
}

/* Bytes per GPU the session will reserve. */
static uint64_t per_gpu(const struct gp_daemon *d, const struct gp_session *s,
			const struct gp_gpu *g)
{
	if (s->want_memory)
		return s->want_memory;
	if (d->cfg->default_memory)
		return d->cfg->default_memory;
	return g->total_mem; /* a whole GPU */
}

static uint64_t free_on(const struct gp_gpu *g)
{
	return g->total_mem - g->reserved;
}

/* The least the session reserves per GPU, whichever GPUs it gets (for tenant limits). */
static uint64_t least_per_gpu(const struct gp_daemon *d, const struct gp_session *s)
{
	uint64_t m = UINT64_MAX;

	for (uint32_t g = 0; g < d->ngpus; g++)
		if (per_gpu(d, s, &d->gpus[g]) < m)
			m = per_gpu(d, s, &d->gpus[g]);
	return m == UINT64_MAX ? 0 : m;
}

/* What the tenant holds now. */
static void tenant_usage(struct gp_daemon *d, const char *tenant, uint64_t *sessions,
			 uint64_t *gpus, uint64_t *memory)
{
	*sessions = *gpus = *memory = 0;
	for (struct gp_session *x = d->sessions; x; x = x->next) {
		if (!x->admitted || strcmp(x->tenant, tenant) != 0)
			continue;
		(*sessions)++;
		*gpus += x->ndev;
		*memory += x->mem_limit * x->ndev;
	}
}

/* Could the request ever be admitted? If not, says why. */
static bool could_fit(struct gp_daemon *d, struct gp_session *s, char *why, size_t len)
{
	const struct gp_tenant *t = gp_config_tenant(d->cfg, s->tenant);
	uint32_t n = s->want_gpus ? s->want_gpus : 1, fits = 0;
	uint64_t biggest = 0;

	for (uint32_t g = 0; g < d->ngpus; g++) {
		uint64_t m = per_gpu(d, s, &d->gpus[g]);

		if (m <= d->gpus[g].total_mem)
			fits++;
		if (d->gpus[g].total_mem > biggest)
			biggest = d->gpus[g].total_mem;
	}
	if (n > d->ngpus) {
		snprintf(why, len, "asked for %u GPUs; the pool has %u", n, d->ngpus);
		return false;
	}
	if (fits < n) {
		snprintf(why, len, "asked for %llu bytes per GPU; the largest GPU has %llu",
			 (unsigned long long)s->want_memory, (unsigned long long)biggest);
		return false;
	}
	if (t && t->sessions == 0) {
		snprintf(why, len, "tenant %s may not open sessions", s->tenant);
		return false;
	}
	if (t && n > t->gpus) {
		snprintf(why, len, "tenant %s may hold %llu GPUs; asked for %u", s->tenant,
			 (unsigned long long)t->gpus, n);
		return false;
	}
	if (t && t->memory != GP_LIMIT_NONE && least_per_gpu(d, s) * n > t->memory) {
		snprintf(why, len, "tenant %s may reserve %llu bytes; asked for %llu", s->tenant,
			 (unsigned long long)t->memory,
			 (unsigned long long)(least_per_gpu(d, s) * n));
		return false;
	}
	return true;
}

/*
 * Chooses n GPUs that are not draining and have the session's memory unreserved, none
 * reserving more than per_gpu_budget. spread: the most room left first; binpack: the least.
 * Ties: fewer sessions. Returns false when there are not n such GPUs.
 */
static bool choose(struct gp_daemon *d, struct gp_session *s, uint32_t n, uint64_t per_gpu_budget,
		   uint32_t *chosen, uint64_t *mem)
{
	bool taken[GP_STATS_MAX_DEVICES] = {false};

	*mem = 0;
	for (uint32_t k = 0; k < n; k++) {
		int best = -1;

		for (uint32_t g = 0; g < d->ngpus; g++) {
			struct gp_gpu *gpu = &d->gpus[g];
			uint64_t m = per_gpu(d, s, gpu);

			if (taken[g] || gpu->draining || m > free_on(gpu) || m > per_gpu_budget)
				continue;
			if (best < 0) {
				best = (int)g;
				continue;
			}
			if (free_on(gpu) != free_on(&d->gpus[best])) {
				if ((d->cfg->placement == GP_PLACE_SPREAD) ==
				    (free_on(gpu) > free_on(&d->gpus[best])))
					best = (int)g;
			} else if (gpu->sessions < d->gpus[best].sessions) {
				best = (int)g;
			}
		}
		if (best < 0)
			return false;
		taken[best] = true;
		chosen[k] = (uint32_t)best;
		/* One limit for all the session's GPUs: the smallest they reserve. */
		if (k == 0 || per_gpu(d, s, &d->gpus[best]) < *mem)
			*mem = per_gpu(d, s, &d->gpus[best]);
	}
	return true;
}

/* Places the session now if it fits; PLACED, WAIT_TENANT or WAIT_CAPACITY. */
static int try_place(struct gp_daemon *d, struct gp_session *s)
{
	const struct gp_tenant *t = gp_config_tenant(d->cfg, s->tenant);
	uint32_t n = s->want_gpus ? s->want_gpus : 1, chosen[GP_STATS_MAX_DEVICES];
	uint64_t ts, tg, tm, mem, budget = UINT64_MAX;

	tenant_usage(d, s->tenant, &ts, &tg, &tm);
	if (t && (ts + 1 > t->sessions || tg + n > t->gpus))
		return WAIT_TENANT;
	/* The tenant's memory left, shared over the GPUs asked for: a whole-GPU session is
	 * placed only on GPUs the tenant can afford. */
	if (t && t->memory != GP_LIMIT_NONE)
		budget = tm < t->memory ? (t->memory - tm) / n : 0;
	if (!choose(d, s, n, budget, chosen, &mem))
		return budget != UINT64_MAX && choose(d, s, n, UINT64_MAX, chosen, &mem)
			       ? WAIT_TENANT
			       : WAIT_CAPACITY;
	for (uint32_t k = 0; k < n; k++) {
		struct gp_gpu *gpu = &d->gpus[chosen[k]];

		s->dev[k] = gpu->index;
		gpu->reserved += mem;
		gpu->sessions++;
	}
	s->ndev = n;
	s->mem_limit = mem;
	s->admitted = true;
	s->state = GP_SESSION_ACTIVE;
	return PLACED;
}

static void admitted(struct gp_session *s)
{
	char devs[GP_STATS_MAX_DEVICES * 4 + 1] = "";

	for (uint32_t i = 0; i < s->ndev; i++) {
		size_t l = strlen(devs);

		snprintf(devs + l, sizeof(devs) - l, "%s%u", i ? "," : "", s->dev[i]);
	}
	gp_log_info("session %llu (tenant %s, %s pid %u) admitted on GPU %s, %llu bytes each",
		    (unsigned long long)s->id, s->tenant, s->program, s->client_pid, devs,
		    (unsigned long long)s->mem_limit);
	reply(s, 0, NULL);
}

static void dequeue(struct gp_session *s)
{
	struct gp_session **pp;

	for (pp = &s->d->queue; *pp; pp = &(*pp)->qnext) {
		if (*pp == s) {
			*pp = s->qnext;
			break;
		}
	}
	s->qnext = NULL;
	s->queued = false;
}

void gp__admit_request(struct gp_session *s, const Gp__AdmitRequest *req)
{
	struct gp_daemon *d = s->d;
	char why[256];
	struct gp_session **pp;

	if (s->admitted || s->queued) {
		refuse(s, "session already asked for admission");
		return;
	}
	snprintf(s->client_host, sizeof(s->client_host), "%s", req->client_host);
	snprintf(s->program, sizeof(s->program), "%s", req->program);
	s->client_pid = req->client_pid;
	s->want_gpus = req->gpus;
	s->want_memory = req->memory;
	/* The tenant: the certificate's name (or on the Unix socket the user's), else what a
	 * known token names, else default. Plain TCP proves nothing else: a token is required. */
	if (req->tenant && *req->tenant) {
		snprintf(s->tenant, sizeof(s->tenant), "%s", req->tenant);
	} else if (req->token && *req->token) {
		const char *t = gp_config_token_tenant(d->cfg, req->token);

		if (!t) {
			snprintf(s->tenant, sizeof(s->tenant), "unknown");
			refuse(s, "the token is not known to the pool");
			return;
		}
		snprintf(s->tenant, sizeof(s->tenant), "%s", t);
	} else if (s->transport == GP_TRANSPORT_PLAIN) {
		snprintf(s->tenant, sizeof(s->tenant), "unknown");
		refuse(s, "without TLS (listen_plain) a session needs a token the pool knows "
			  "(GPUPOOL_TOKEN)");
		return;
	} else {
		snprintf(s->tenant, sizeof(s->tenant), "default");
	}
	if (d->stopping) {
		refuse(s, "the pool is shutting down");
		return;
	}
	if (!could_fit(d, s, why, sizeof(why))) {
		refuse(s, why);
		return;
	}
	s->queued = true;
	s->state = GP_SESSION_QUEUED;
	s->queued_at = uv_now(d->loop);
	for (pp = &d->queue; *pp; pp = &(*pp)->qnext)
		;
	*pp = s;
	/* In arrival order: nobody overtakes a session already waiting for capacity. */
	gp__admit_pump(d);
	if (!s->queued)
		return;
	if (d->cfg->queue_timeout == 0) {
		dequeue(s);
		refuse(s, "no GPU has room for this session now (queue_timeout 0)");
		return;
	}
	gp_log_info("session %llu (tenant %s) waits for room: %u GPU(s), %llu bytes each",
		    (unsigned long long)s->id, s->tenant, s->want_gpus ? s->want_gpus : 1,
		    (unsigned long long)s->want_memory);
}

void gp__admit_pump(struct gp_daemon *d)
{
	struct gp_session *s = d->queue, *next;

	for (; s; s = next) {
		int r;

		next = s->qnext;
		r = try_place(d, s);
		if (r == PLACED) {
			dequeue(s);
			admitted(s);
		} else if (r == WAIT_CAPACITY) {
			break; /* the oldest waiter for capacity goes first */
		}
		/* WAIT_TENANT: its own limits hold it; later ones may go. */
	}
}

void gp__admit_release(struct gp_session *s)
{
	struct gp_daemon *d = s->d;

	if (s->queued)
		dequeue(s);
	if (s->admitted) {
		for (uint32_t i = 0; i < s->ndev; i++) {
			for (uint32_t g = 0; g < d->ngpus; g++) {
				if (d->gpus[g].index != s->dev[i])
					continue;
				d->gpus[g].reserved -= s->mem_limit;
				d->gpus[g].sessions--;
			}
		}
		s->admitted = false;
	}
	gp__admit_pump(d);
}

void gp__admit_expire(struct gp_daemon *d, bool all, const char *why)
{
	uint64_t now = uv_now(d->loop), limit = (uint64_t)d->cfg->queue_timeout * 1000;
	struct gp_session *s = d->queue, *next;
	char msg[256];

	for (; s; s = next) {
		next = s->qnext;
		if (!all && now - s->queued_at < limit)
			continue;
		dequeue(s);
		if (why)
			snprintf(msg, sizeof(msg), "%s", why);
		else
			snprintf(msg, sizeof(msg),
				 "waited %u s (queue_timeout) for %u GPU(s) with %llu bytes each; "
				 "none came free",
				 d->cfg->queue_timeout, s->want_gpus ? s->want_gpus : 1,
				 (unsigned long long)s->want_memory);
		refuse(s, msg);
	}
	gp__admit_pump(d);
}
