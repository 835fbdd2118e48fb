/* pool.c -- admission policy with no I/O: placement, the ledger, tenant limits and shares, the
 * queue and its order, preemption. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "pool.h"

enum { PLACED = 0, WAIT_TENANT = 1, WAIT_CAPACITY = 2 };

void gp_pool_init(struct gp_pool *p)
{
	memset(p, 0, sizeof(*p));
}

struct gp_pool_gpu *gp_pool_gpu(struct gp_pool *p, uint32_t index)
{
	for (uint32_t g = 0; p && g < p->ngpus; g++)
		if (p->gpu[g].index == index)
			return &p->gpu[g];
	return NULL;
}

int gp_pool_add_gpu(struct gp_pool *p, uint32_t index, uint64_t total_mem)
{
	if (!p || total_mem == 0 || gp_pool_gpu(p, index))
		return -EINVAL;
	if (p->ngpus == GP_POOL_MAX_GPUS)
		return -ENOSPC;
	p->gpu[p->ngpus++] = (struct gp_pool_gpu){.index = index, .total_mem = total_mem};
	return 0;
}

bool gp_pool_target(const struct gp_pool_gpu *g)
{
	return g && !g->mig;
}

/* Could the claim go on g, room aside: a target, and a MIG instance matching its slice when it
 * has one. */
static bool eligible(const struct gp_claim *c, const struct gp_pool_gpu *g)
{
	if (!gp_pool_target(g))
		return false;
	if (!c->slice.set)
		return true;
	return g->instance && gp_slice_matches(&c->slice, g->profile, g->total_mem, g->sms);
}

/* A target's own draining, or its GPU's when it is a MIG instance. */
static bool draining(const struct gp_pool *p, const struct gp_pool_gpu *g)
{
	if (g->draining)
		return true;
	for (uint32_t k = 0; g->instance && k < p->ngpus; k++)
		if (p->gpu[k].index == g->parent)
			return p->gpu[k].draining;
	return false;
}

uint32_t gp_pool_targets(const struct gp_pool *p)
{
	uint32_t n = 0;

	for (uint32_t g = 0; p && g < p->ngpus; g++)
		n += gp_pool_target(&p->gpu[g]);
	return n;
}

bool gp_pool_eligible(const struct gp_pool *p, const struct gp_claim *c,
		      const struct gp_pool_gpu *g)
{
	return p && c && eligible(c, g) && !draining(p, g);
}

static uint32_t gpus_asked(const struct gp_claim *c)
{
	return c->want_gpus ? c->want_gpus : 1;
}

/* Bytes per GPU the claim will reserve on g. */
static uint64_t per_gpu(const struct gp_config *cfg, const struct gp_claim *c,
			const struct gp_pool_gpu *g)
{
	if (c->want_memory)
		return c->want_memory;
	if (cfg->default_memory)
		return cfg->default_memory;
	return g->total_mem; /* a whole GPU */
}

static uint64_t free_on(const struct gp_pool_gpu *g)
{
	return g->total_mem - g->reserved;
}

uint32_t gp_pool_compute_share(const struct gp_config *cfg, const struct gp_claim *c)
{
	const struct gp_tenant *t = cfg && c && c->tenant ? gp_config_tenant(cfg, c->tenant) : NULL;
	uint32_t want;

	if (!c)
		return 0;
	want = c->want_compute ? c->want_compute : (t ? t->default_compute : 0);
	if (t && t->compute && want > t->compute)
		want = t->compute;
	return want;
}

/* The least the claim reserves per GPU, whichever GPUs it gets (for tenant limits). */
static uint64_t least_per_gpu(const struct gp_pool *p, const struct gp_config *cfg,
			      const struct gp_claim *c)
{
	uint64_t m = UINT64_MAX;

	for (uint32_t g = 0; g < p->ngpus; g++)
		if (eligible(c, &p->gpu[g]) && per_gpu(cfg, c, &p->gpu[g]) < m)
			m = per_gpu(cfg, c, &p->gpu[g]);
	return m == UINT64_MAX ? 0 : m;
}

void gp_pool_tenant_usage(const struct gp_pool *p, const char *tenant, struct gp_pool_usage *u)
{
	*u = (struct gp_pool_usage){0};
	for (const struct gp_claim *x = p ? p->admitted : NULL; tenant && x; x = x->anext) {
		if (strcmp(x->tenant, tenant) != 0)
			continue;
		u->sessions++;
		u->gpus += x->ndev;
		u->memory += x->mem_limit * x->ndev;
	}
}

/* Could the claim ever be admitted? If not, says why. */
static bool could_fit(const struct gp_pool *p, const struct gp_config *cfg,
		      const struct gp_claim *c, char *why, size_t len)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, c->tenant);
	uint32_t n = gpus_asked(c), fits = 0, targets = 0;
	uint64_t biggest = 0, least;
	bool instances = false, instance_fits = false;

	for (uint32_t g = 0; g < p->ngpus; g++) {
		const struct gp_pool_gpu *gpu = &p->gpu[g];
		bool room = per_gpu(cfg, c, gpu) <= gpu->total_mem;

		if (!eligible(c, gpu))
			continue;
		if (gpu->instance) { /* at most one a claim: see choose() */
			targets += !instances;
			fits += room && !instance_fits;
			instances = true;
			instance_fits = instance_fits || room;
		} else {
			targets++;
			fits += room;
		}
		if (gpu->total_mem > biggest)
			biggest = gpu->total_mem;
	}
	if (c->slice.set && n > 1) {
		snprintf(why, len,
			 "asked for %u MIG instances; a session uses one (CUDA enumerates one MIG "
			 "instance per process)",
			 n);
		return false;
	}
	if (c->slice.set && targets < n) {
		char have[160] = "";

		for (uint32_t g = 0; g < p->ngpus; g++) {
			size_t l = strlen(have);

			if (p->gpu[g].instance)
				snprintf(have + l, sizeof(have) - l, "%s%s (%llu MiB, %u SMs)",
					 l ? ", " : "", p->gpu[g].profile,
					 (unsigned long long)(p->gpu[g].total_mem >> 20),
					 p->gpu[g].sms);
		}
		snprintf(why, len,
			 "asked for %u MIG instance%s matching the slice; %u match%s (%s%s)", n,
			 n == 1 ? "" : "s", targets, targets == 1 ? "es" : "",
			 have[0] ? "the pool's instances: " : "the pool has no MIG instances",
			 have);
		return false;
	}
	/* The claim's arrays (dev, chosen) hold GP_STATS_MAX_DEVICES; the pool may have more
	 * targets than that once MIG instances count. */
	if (n > GP_STATS_MAX_DEVICES) {
		snprintf(why, len, "asked for %u GPUs; a session holds at most %u", n,
			 GP_STATS_MAX_DEVICES);
		return false;
	}
	if (n > targets) {
		snprintf(why, len, "asked for %u GPUs; the pool has %u%s", n, targets,
			 instances ? " (a session uses at most one MIG instance)" : "");
		return false;
	}
	if (gp_pool_compute_share(cfg, c) > 100) {
		snprintf(why, len, "asked for %u%% of a GPU's compute; a share is 1%% to 100%%",
			 gp_pool_compute_share(cfg, c));
		return false;
	}
	if (fits < n) {
		snprintf(why, len, "asked for %llu bytes per GPU; the largest GPU has %llu",
			 (unsigned long long)least_per_gpu(p, cfg, c), (unsigned long long)biggest);
		return false;
	}
	if (t && t->sessions == 0) {
		snprintf(why, len, "tenant %s may not open sessions", c->tenant);
		return false;
	}
	if (t && n > t->gpus) {
		snprintf(why, len, "tenant %s may hold %llu GPUs; asked for %u", c->tenant,
			 (unsigned long long)t->gpus, n);
		return false;
	}
	/* n <= GP_STATS_MAX_DEVICES and least <= a GPU's size: the product does not wrap. */
	least = least_per_gpu(p, cfg, c);
	if (t && t->memory != GP_LIMIT_NONE && least * n > t->memory) {
		snprintf(why, len, "tenant %s may reserve %llu bytes; asked for %llu", c->tenant,
			 (unsigned long long)t->memory, (unsigned long long)(least * n));
		return false;
	}
	return true;
}

/*
 * Chooses n GPUs that are not draining and have the claim's memory unreserved and its
 * compute share ungranted, none reserving more than per_gpu_budget. spread: the most memory
 * left first; binpack: the least. Ties: fewer sessions, then the lower slot. At most one MIG
 * instance: CUDA (11 and later, and softgpu) enumerates one MIG instance per process, so a
 * second would be reserved for a session that cannot see it. Returns false when there are not
 * n such GPUs.
 */
static bool choose(const struct gp_pool *p, const struct gp_config *cfg, const struct gp_claim *c,
		   uint32_t n, uint64_t per_gpu_budget, uint32_t *chosen, uint64_t *mem)
{
	bool taken[GP_POOL_MAX_GPUS] = {false};
	uint32_t share = gp_pool_compute_share(cfg, c);

	*mem = 0;
	bool instance = false;

	for (uint32_t k = 0; k < n; k++) {
		int best = -1;

		for (uint32_t g = 0; g < p->ngpus; g++) {
			const struct gp_pool_gpu *gpu = &p->gpu[g], *b;
			uint64_t m = per_gpu(cfg, c, gpu);

			if (taken[g] || !eligible(c, gpu) || draining(p, gpu) || m > free_on(gpu) ||
			    m > per_gpu_budget || gpu->compute + share > 100 ||
			    (gpu->instance && instance))
				continue;
			if (best < 0) {
				best = (int)g;
				continue;
			}
			b = &p->gpu[best];
			if (free_on(gpu) != free_on(b)) {
				if ((cfg->placement == GP_PLACE_SPREAD) ==
				    (free_on(gpu) > free_on(b)))
					best = (int)g;
			} else if (gpu->sessions < b->sessions) {
				best = (int)g;
			}
		}
		if (best < 0)
			return false;
		taken[best] = true;
		instance = instance || p->gpu[best].instance;
		chosen[k] = (uint32_t)best;
		/* One limit for all the claim's GPUs: the smallest they reserve. */
		if (k == 0 || per_gpu(cfg, c, &p->gpu[best]) < *mem)
			*mem = per_gpu(cfg, c, &p->gpu[best]);
	}
	return true;
}

/* Is x one of gone[0..n), skip aside? */
static bool among(const struct gp_claim *x, struct gp_claim *const *gone, unsigned n, unsigned skip)
{
	for (unsigned k = 0; k < n; k++)
		if (k != skip && gone[k] == x)
			return true;
	return false;
}

/* Could the claim be placed now, with the claims gone[0..ngone) (but gone[skip]) ended (their
 * reservations already out of p's ledger: they no longer count against c's tenant either)?
 * PLACED (on chosen, mem each), WAIT_TENANT or WAIT_CAPACITY. */
static int fit_except(const struct gp_pool *p, const struct gp_config *cfg,
		      const struct gp_claim *c, uint32_t *chosen, uint64_t *mem,
		      struct gp_claim *const *gone, unsigned ngone, unsigned skip)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, c->tenant);
	uint32_t n = gpus_asked(c);
	uint64_t budget = UINT64_MAX;
	struct gp_pool_usage u;

	gp_pool_tenant_usage(p, c->tenant, &u);
	for (struct gp_claim *x = p->admitted; ngone && x; x = x->anext) {
		if (strcmp(x->tenant, c->tenant) != 0 || !among(x, gone, ngone, skip))
			continue;
		u.sessions--;
		u.gpus -= x->ndev;
		u.memory -= x->mem_limit * x->ndev;
	}
	if (t && (u.sessions + 1 > t->sessions || u.gpus + n > t->gpus))
		return WAIT_TENANT;
	/* The tenant's memory left, shared over the GPUs asked for: a whole-GPU claim is
	 * placed only on GPUs the tenant can afford. */
	if (t && t->memory != GP_LIMIT_NONE)
		budget = u.memory < t->memory ? (t->memory - u.memory) / n : 0;
	if (!choose(p, cfg, c, n, budget, chosen, mem))
		return budget != UINT64_MAX && choose(p, cfg, c, n, UINT64_MAX, chosen, mem)
			       ? WAIT_TENANT
			       : WAIT_CAPACITY;
	return PLACED;
}

static int fit(const struct gp_pool *p, const struct gp_config *cfg, const struct gp_claim *c,
	       uint32_t *chosen, uint64_t *mem)
{
	return fit_except(p, cfg, c, chosen, mem, NULL, 0, 0);
}

/* Places the claim now if it fits; PLACED, WAIT_TENANT or WAIT_CAPACITY. */
static int try_place(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c)
{
	uint32_t n = gpus_asked(c), chosen[GP_STATS_MAX_DEVICES];
	uint32_t share = gp_pool_compute_share(cfg, c);
	uint64_t mem;
	int r = fit(p, cfg, c, chosen, &mem);

	if (r != PLACED)
		return r;
	for (uint32_t k = 0; k < n; k++) {
		struct gp_pool_gpu *gpu = &p->gpu[chosen[k]];

		c->dev[k] = gpu->index;
		gpu->reserved += mem;
		gpu->compute += share;
		gpu->sessions++;
	}
	c->ndev = n;
	c->mem_limit = mem;
	c->compute = share;
	return PLACED;
}

/* ---- the queue's order: shares and borrowing ---- */

static bool has_guarantee(const struct gp_tenant *t)
{
	return t && (t->guarantee_gpus || t->guarantee_memory);
}

/* Would the tenant, holding u and n GPUs with mem bytes more, be within its guarantee? */
static bool within(const struct gp_tenant *t, const struct gp_pool_usage *u, uint64_t n,
		   uint64_t mem)
{
	if (!has_guarantee(t))
		return false;
	if (t->guarantee_gpus && u->gpus + n > t->guarantee_gpus)
		return false;
	return !t->guarantee_memory || u->memory + mem <= t->guarantee_memory;
}

/* What the tenant holds as a fraction of its guarantee (the larger of GPUs' and memory's):
 * the weight of weighted fair queueing. DBL_MAX without a guarantee. */
static double held_share(const struct gp_tenant *t, const struct gp_pool_usage *u)
{
	double s = 0, m;

	if (!has_guarantee(t))
		return DBL_MAX;
	if (t->guarantee_gpus)
		s = (double)u->gpus / (double)t->guarantee_gpus;
	if (t->guarantee_memory) {
		m = (double)u->memory / (double)t->guarantee_memory;
		if (m > s)
			s = m;
	}
	return s;
}

bool gp_pool_tenant_entitled(const struct gp_pool *p, const struct gp_config *cfg,
			     const char *tenant)
{
	struct gp_pool_usage u;

	if (!p || !cfg || !tenant)
		return false;
	gp_pool_tenant_usage(p, tenant, &u);
	return within(gp_config_tenant(cfg, tenant), &u, 0, 0);
}

unsigned gp_pool_priority(const struct gp_config *cfg, const struct gp_claim *c)
{
	const struct gp_tenant *t = cfg && c && c->tenant ? gp_config_tenant(cfg, c->tenant) : NULL;
	unsigned cap = t ? t->priority : 0;

	if (!c)
		return 0;
	return c->priority_set && c->want_priority >= 0 && (unsigned)c->want_priority < cap
		       ? (unsigned)c->want_priority
		       : cap;
}

/* Sets each waiter's priority and its tenant's tier and share, from the tenant's oldest
 * waiter of that priority, and clears the marks next_in_order leaves. */
static void rank(struct gp_pool *p, const struct gp_config *cfg)
{
	for (struct gp_claim *c = p->queue; c; c = c->qnext)
		c->ord_prio = gp_pool_priority(cfg, c);
	for (struct gp_claim *c = p->queue; c; c = c->qnext) {
		struct gp_claim *head = p->queue;
		const struct gp_tenant *t;
		struct gp_pool_usage u;

		while (strcmp(head->tenant, c->tenant) != 0 || head->ord_prio != c->ord_prio)
			head = head->qnext;
		c->ord_seen = false;
		if (head != c) {
			c->ord_tier = head->ord_tier;
			c->ord_share = head->ord_share;
			continue;
		}
		t = gp_config_tenant(cfg, c->tenant);
		gp_pool_tenant_usage(p, c->tenant, &u);
		c->ord_tier = within(t, &u, gpus_asked(c), least_per_gpu(p, cfg, c) * gpus_asked(c))
				      ? 0
				      : 1;
		c->ord_share = held_share(t, &u);
	}
}

/* Ranks c, not queued, as rank() would if it were queued now (after the queue's ranking):
 * the newest in arrival order, its tier and share its tenant's oldest waiter's of its
 * priority when there is one. */
static void rank_newcomer(const struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, c->tenant);
	struct gp_pool_usage u;

	c->ord_prio = gp_pool_priority(cfg, c);
	c->seq = p->next_seq;
	for (const struct gp_claim *h = p->queue; h; h = h->qnext)
		if (strcmp(h->tenant, c->tenant) == 0 && h->ord_prio == c->ord_prio) {
			c->ord_tier = h->ord_tier;
			c->ord_share = h->ord_share;
			return;
		}
	gp_pool_tenant_usage(p, c->tenant, &u);
	c->ord_tier =
		within(t, &u, gpus_asked(c), least_per_gpu(p, cfg, c) * gpus_asked(c)) ? 0 : 1;
	c->ord_share = held_share(t, &u);
}

/* Priority first (higher first), then entitlement, the share held, arrival. */
static bool before(const struct gp_claim *a, const struct gp_claim *b)
{
	if (a->ord_prio != b->ord_prio)
		return a->ord_prio > b->ord_prio;
	if (a->ord_tier != b->ord_tier)
		return a->ord_tier < b->ord_tier;
	if (a->ord_share < b->ord_share)
		return true;
	if (a->ord_share > b->ord_share)
		return false;
	return a->seq < b->seq;
}

/* The first waiter in the queue's order that it has not returned since rank(). */
static struct gp_claim *next_in_order(struct gp_pool *p)
{
	struct gp_claim *best = NULL;

	for (struct gp_claim *c = p->queue; c; c = c->qnext)
		if (!c->ord_seen && (!best || before(c, best)))
			best = c;
	if (best)
		best->ord_seen = true;
	return best;
}

/* ---- preemption ---- */

bool gp_pool_preemptible(const struct gp_config *cfg, const struct gp_claim *c)
{
	const struct gp_tenant *t = cfg && c && c->tenant ? gp_config_tenant(cfg, c->tenant) : NULL;

	if (t && t->preemptible != GP_PREEMPT_CLIENT)
		return t->preemptible == GP_PREEMPT_YES;
	return c && c->preemptible;
}

/* The first waiter in the order, past those held by their own tenant's limits, when it waits
 * for room and may wait (one that may not is refused at once); else NULL. Whom it may
 * preempt is may_preempt's. */
static struct gp_claim *first_waiting(struct gp_pool *p, const struct gp_config *cfg)
{
	uint32_t chosen[GP_STATS_MAX_DEVICES];
	struct gp_claim *x;
	uint64_t mem;

	rank(p, cfg);
	while ((x = next_in_order(p)) != NULL) {
		int r = fit(p, cfg, x, chosen, &mem);

		if (r == WAIT_TENANT)
			continue;
		if (r != WAIT_CAPACITY || !gp_pool_may_wait(p, cfg, x))
			return NULL;
		return x;
	}
	return NULL;
}

bool gp_pool_preempt_by_priority(const struct gp_config *cfg, const struct gp_claim *x,
				 const struct gp_claim *w)
{
	return cfg && x && w && gp_pool_priority(cfg, x) < gp_pool_priority(cfg, w);
}

/*
 * May x be ended to make room for w (ranked, first in the order)? x must be preemptible and
 * (unless again) not chosen already. Priority first: one of lower priority may be, whoever
 * its tenant is; one of higher priority never; one of the same priority when w is entitled
 * and x is of another tenant, which is borrowing.
 */
static bool may_preempt(const struct gp_pool *p, const struct gp_config *cfg,
			const struct gp_claim *x, const struct gp_claim *w, bool again)
{
	struct gp_pool_usage u;

	if ((x->preempting && !again) || !gp_pool_preemptible(cfg, x))
		return false;
	if (gp_pool_preempt_by_priority(cfg, x, w))
		return true;
	if (gp_pool_priority(cfg, x) > w->ord_prio || w->ord_tier != 0 ||
	    strcmp(x->tenant, w->tenant) == 0)
		return false;
	gp_pool_tenant_usage(p, x->tenant, &u);
	return !within(gp_config_tenant(cfg, x->tenant), &u, 0, 0);
}

/* Takes x's reservations out of a copy of the ledger. */
static void take_out(struct gp_pool *room, const struct gp_claim *x)
{
	for (uint32_t i = 0; i < x->ndev; i++) {
		struct gp_pool_gpu *g = gp_pool_gpu(room, x->dev[i]);

		if (!g)
			continue;
		g->reserved -= x->mem_limit;
		g->compute -= x->compute;
		g->sessions--;
	}
}

/* Would w fit with victims[0..n) ended, all but victims[skip] (skip >= n: none skipped)?
 * A victim of w's own tenant (by priority) no longer counts against its limits either. */
static bool fits_without(const struct gp_pool *p, const struct gp_config *cfg,
			 const struct gp_claim *w, struct gp_claim *const *victims, unsigned n,
			 unsigned skip)
{
	uint32_t chosen[GP_STATS_MAX_DEVICES];
	struct gp_pool room = *p;
	uint64_t mem;

	for (unsigned k = 0; k < n; k++)
		if (k != skip)
			take_out(&room, victims[k]);
	return fit_except(&room, cfg, w, chosen, &mem, victims, n, skip) == PLACED;
}

/* The next claim to choose for w, past victims[0..n): of those it may preempt, the lowest
 * priority, then the newest (the least work lost; p->admitted is newest first). */
static struct gp_claim *next_victim(const struct gp_pool *p, const struct gp_config *cfg,
				    const struct gp_claim *w, struct gp_claim *const *victims,
				    unsigned n)
{
	struct gp_claim *best = NULL;
	unsigned best_prio = 0;

	for (struct gp_claim *x = p->admitted; x; x = x->anext) {
		unsigned prio;

		if (among(x, victims, n, n) || !may_preempt(p, cfg, x, w, false))
			continue;
		prio = gp_pool_priority(cfg, x);
		if (!best || prio < best_prio) {
			best = x;
			best_prio = prio;
		}
	}
	return best;
}

/* Chooses for w the claims to end (above) into victims (at most max), marking none; how
 * many, 0 when those it may preempt would not make room. */
static unsigned choose_victims(const struct gp_pool *p, const struct gp_config *cfg,
			       const struct gp_claim *w, struct gp_claim **victims, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		struct gp_claim *x = next_victim(p, cfg, w, victims, n);

		if (!x)
			break;
		victims[n++] = x;
		if (fits_without(p, cfg, w, victims, n, n))
			break;
	}
	if (n == 0 || !fits_without(p, cfg, w, victims, n, n))
		return 0;
	/* Chosen until there was room, whether or not each one's GPUs help: going back, the
	 * latest chosen first, one the waiter fits without is spared (the last one chosen
	 * never is: without it there was no room). */
	for (unsigned k = n; k-- > 0;) {
		if (!fits_without(p, cfg, w, victims, n, k))
			continue;
		memmove(&victims[k], &victims[k + 1], (n - k - 1) * sizeof(victims[0]));
		n--;
	}
	return n;
}

unsigned gp_pool_preempt(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim **victims,
			 unsigned max, struct gp_claim **waiter)
{
	struct gp_claim *w;
	unsigned n;

	if (!p || !cfg || !victims || !max || !waiter)
		return 0;
	*waiter = NULL;
	for (struct gp_claim *x = p->admitted; x; x = x->anext)
		if (x->preempting)
			return 0;
	w = first_waiting(p, cfg);
	if (!w)
		return 0;
	n = choose_victims(p, cfg, w, victims, max);
	for (unsigned k = 0; k < n; k++)
		victims[k]->preempting = true;
	if (n)
		*waiter = w;
	return n;
}

/* The first waiter in the order when ending the preempting claims (there are some) is due
 * for it: it may preempt each and ending them lets it in now. NULL otherwise, and when none
 * is preempting (*any false). */
static struct gp_claim *preempt_target(struct gp_pool *p, const struct gp_config *cfg, bool *any)
{
	struct gp_claim *gone[GP_STATS_MAX_DEVICES * 4], *w;
	uint32_t chosen[GP_STATS_MAX_DEVICES];
	struct gp_pool room;
	unsigned n = 0;
	uint64_t mem;

	*any = false;
	w = first_waiting(p, cfg);
	room = *p;
	for (struct gp_claim *x = p->admitted; x; x = x->anext) {
		if (!x->preempting)
			continue;
		*any = true;
		if (!w || !may_preempt(p, cfg, x, w, true) || n == sizeof(gone) / sizeof(gone[0]))
			return NULL;
		take_out(&room, x);
		gone[n++] = x;
	}
	if (!w || !*any)
		return NULL;
	return fit_except(&room, cfg, w, chosen, &mem, gone, n, n) == PLACED ? w : NULL;
}

struct gp_claim *gp_pool_preempt_waiter(struct gp_pool *p, const struct gp_config *cfg)
{
	bool any;

	return p && cfg ? preempt_target(p, cfg, &any) : NULL;
}

bool gp_pool_preempt_due(struct gp_pool *p, const struct gp_config *cfg)
{
	bool any;

	if (!p || !cfg)
		return false;
	/* The waiter they were chosen for may have gone in meanwhile, or another come first:
	 * ending them is due only when that one may preempt them all and it gets in then. */
	if (preempt_target(p, cfg, &any))
		return true;
	/* None chosen yet: one is due when the first waiter waits for room and some admitted
	 * claim is one it may preempt (gp_pool_preempt chooses, if they make room). */
	if (!any) {
		struct gp_claim *w = first_waiting(p, cfg);

		for (struct gp_claim *x = p->admitted; w && x; x = x->anext)
			if (may_preempt(p, cfg, x, w, false))
				return true;
		return false;
	}
	for (struct gp_claim *x = p->admitted; x; x = x->anext)
		x->preempting = false;
	return false;
}

enum gp_pool_wait gp_pool_waiting_for(struct gp_pool *p, const struct gp_config *cfg,
				      const struct gp_claim *c, unsigned *place)
{
	uint32_t chosen[GP_STATS_MAX_DEVICES];
	struct gp_claim *x;
	uint64_t mem;
	unsigned n = 0;

	if (place)
		*place = 0;
	if (!p || !cfg || !c || c->state != GP_CLAIM_QUEUED)
		return GP_POOL_WAIT_NONE;
	rank(p, cfg);
	while ((x = next_in_order(p)) != NULL) {
		n++;
		if (x == c)
			break;
	}
	if (place)
		*place = n;
	switch (fit(p, cfg, c, chosen, &mem)) {
	case WAIT_TENANT:
		return GP_POOL_WAIT_TENANT;
	case WAIT_CAPACITY:
		return GP_POOL_WAIT_CAPACITY;
	default:
		return GP_POOL_WAIT_BEHIND;
	}
}

unsigned gp_pool_ahead_higher(const struct gp_pool *p, const struct gp_config *cfg,
			      const struct gp_claim *c)
{
	unsigned prio, n = 0;

	if (!p || !cfg || !c || c->state != GP_CLAIM_QUEUED)
		return 0;
	prio = gp_pool_priority(cfg, c);
	for (const struct gp_claim *x = p->queue; x; x = x->qnext)
		n += gp_pool_priority(cfg, x) > prio;
	return n;
}

int gp_pool_prospect(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
		     struct gp_pool_prospect *o)
{
	struct gp_claim *victims[GP_STATS_MAX_DEVICES * 4], *x;
	uint32_t chosen[GP_STATS_MAX_DEVICES];
	uint64_t mem;
	int r;

	if (!p || !cfg || !c || !c->tenant || !o || c->state != GP_CLAIM_IDLE)
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	c->preempting = false;
	rank(p, cfg);
	rank_newcomer(p, cfg, c);
	o->priority = c->ord_prio;
	/* The waiters before it; the first of them that waits for room holds it up, as
	 * gp_pool_admit_next serves the queue. */
	while ((x = next_in_order(p)) != NULL && before(x, c)) {
		o->ahead++;
		o->ahead_higher += x->ord_prio > c->ord_prio;
		if (!o->held_up && fit(p, cfg, x, chosen, &mem) == WAIT_CAPACITY)
			o->held_up = true;
	}
	r = fit(p, cfg, c, chosen, &mem);
	o->tenant = r == WAIT_TENANT;
	o->fits = r == PLACED && !o->held_up;
	if (r == WAIT_CAPACITY && !o->held_up)
		o->preempt =
			choose_victims(p, cfg, c, victims, sizeof(victims) / sizeof(victims[0]));
	return 0;
}

const char *gp_pool_wait_name(enum gp_pool_wait w)
{
	switch (w) {
	case GP_POOL_WAIT_TENANT:
		return "tenant";
	case GP_POOL_WAIT_CAPACITY:
		return "capacity";
	case GP_POOL_WAIT_BEHIND:
		return "behind";
	default:
		return "";
	}
}

static void dequeue(struct gp_pool *p, struct gp_claim *c)
{
	for (struct gp_claim **pp = &p->queue; *pp; pp = &(*pp)->qnext) {
		if (*pp == c) {
			*pp = c->qnext;
			break;
		}
	}
	c->qnext = NULL;
	c->state = GP_CLAIM_IDLE;
}

unsigned gp_pool_tenant_waiting(const struct gp_pool *p, const char *tenant)
{
	unsigned n = 0;

	for (const struct gp_claim *x = p ? p->queue : NULL; tenant && x; x = x->qnext)
		if (strcmp(x->tenant, tenant) == 0)
			n++;
	return n;
}

/* How many sessions of the claim's tenant may wait at once. */
static uint64_t queue_limit(const struct gp_config *cfg, const struct gp_claim *c)
{
	const struct gp_tenant *t = gp_config_tenant(cfg, c->tenant);

	return t && t->queue != GP_LIMIT_NONE ? t->queue : cfg->max_queued_per_tenant;
}

bool gp_pool_may_wait(const struct gp_pool *p, const struct gp_config *cfg,
		      const struct gp_claim *c)
{
	(void)p;
	return cfg && c && c->tenant && cfg->queue_timeout && queue_limit(cfg, c) > 0;
}

struct gp_claim *gp_pool_displace(struct gp_pool *p, const char *tenant)
{
	struct gp_claim *victim = NULL;
	unsigned most = 0, mine;

	if (!p || !tenant)
		return NULL;
	mine = gp_pool_tenant_waiting(p, tenant); /* the newcomer's, itself included if queued */
	for (struct gp_claim *c = p->queue; c; c = c->qnext) {
		unsigned n;

		if (strcmp(c->tenant, tenant) == 0)
			continue;
		n = gp_pool_tenant_waiting(p, c->tenant);
		/* Oldest first: a later claim of a tenant as large is newer, and takes over. */
		if (n >= most) {
			most = n;
			victim = c;
		}
	}
	/* Later claims of the victim's tenant are newer still: take its newest. */
	for (struct gp_claim *c = victim; c; c = c->qnext)
		if (strcmp(c->tenant, victim->tenant) == 0)
			victim = c;
	if (!victim || most - 1 < mine)
		return NULL;
	dequeue(p, victim);
	return victim;
}

int gp_pool_enqueue(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
		    uint64_t now, char *why, size_t whylen)
{
	struct gp_claim **pp;
	uint64_t limit;
	unsigned waiting;

	if (why && whylen)
		*why = '\0';
	if (!p || !cfg || !c || !c->tenant)
		return -EINVAL;
	if (c->state != GP_CLAIM_IDLE)
		return -EALREADY;
	if (!could_fit(p, cfg, c, why, whylen))
		return GP_EREFUSED;
	/* Waiters count against their tenant: past its queue limit it must wait for its own
	 * to go first (a limit of 0 is gp_pool_may_wait's: at once or not at all). */
	limit = queue_limit(cfg, c);
	waiting = gp_pool_tenant_waiting(p, c->tenant);
	if (limit > 0 && waiting >= limit) {
		snprintf(why, whylen,
			 "tenant %s has %u session%s waiting for room already (its queue limit)",
			 c->tenant, waiting, waiting == 1 ? "" : "s");
		return GP_EREFUSED;
	}
	c->ndev = 0;
	c->mem_limit = 0;
	c->compute = 0;
	c->preempting = false;
	c->queued_at = now;
	c->seq = p->next_seq++;
	c->qnext = c->anext = NULL;
	c->state = GP_CLAIM_QUEUED;
	/* Kept in arrival order; gp_pool_admit_next serves it in the queue's order. */
	for (pp = &p->queue; *pp; pp = &(*pp)->qnext)
		;
	*pp = c;
	return 0;
}

struct gp_claim *gp_pool_admit_next(struct gp_pool *p, const struct gp_config *cfg)
{
	struct gp_claim *c;

	if (!p || !cfg)
		return NULL;
	rank(p, cfg);
	while ((c = next_in_order(p)) != NULL) {
		int r = try_place(p, cfg, c);

		if (r == PLACED) {
			dequeue(p, c);
			c->state = GP_CLAIM_ADMITTED;
			c->anext = p->admitted;
			p->admitted = c;
			return c;
		}
		/* WAIT_CAPACITY: the first waiter for capacity in the order goes first.
		 * WAIT_TENANT: its own limits hold it; later ones may go. */
		if (r == WAIT_CAPACITY)
			return NULL;
	}
	return NULL;
}

struct gp_claim *gp_pool_expire_next(struct gp_pool *p, uint64_t now, uint64_t timeout_ms)
{
	for (struct gp_claim *c = p ? p->queue : NULL; c; c = c->qnext) {
		if (timeout_ms && (now < c->queued_at || now - c->queued_at < timeout_ms))
			continue;
		dequeue(p, c);
		return c;
	}
	return NULL;
}

void gp_pool_release(struct gp_pool *p, struct gp_claim *c)
{
	if (!p || !c)
		return;
	if (c->state == GP_CLAIM_QUEUED)
		dequeue(p, c);
	if (c->state == GP_CLAIM_ADMITTED) {
		for (struct gp_claim **pp = &p->admitted; *pp; pp = &(*pp)->anext) {
			if (*pp == c) {
				*pp = c->anext;
				break;
			}
		}
		for (uint32_t i = 0; i < c->ndev; i++) {
			struct gp_pool_gpu *g = gp_pool_gpu(p, c->dev[i]);

			if (!g)
				continue;
			g->reserved -= c->mem_limit;
			g->compute -= c->compute;
			g->sessions--;
		}
		c->anext = NULL;
		c->state = GP_CLAIM_IDLE;
	}
	c->preempting = false;
}
