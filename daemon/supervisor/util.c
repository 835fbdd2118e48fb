/* util.c -- utilization: each GPU's and tenant's GPU busy time over the last minute and hour.
 *
 * DESIGN: a GPU's busy time is the sum of its sessions' kernel time on it, each measured by
 * its worker (daemon/worker/busy.c) and read from its stats page; an ended session's last
 * figure is banked (gp__util_session_end) so the sum only grows. Once a second the loop
 * samples each GPU's and each tenant's sum into a ring of an hour's samples; a window's
 * figure is the growth from the oldest sample inside it to now, over the time between.
 * Everything runs on the loop thread.
 *
 * A GPU's figure is unknown when, in the window, a session on it ran whose driver does not
 * tell busy time (NVIDIA's: docs/operations.md "Utilization"). Sessions sharing a GPU are
 * added, and the percentage is capped at 100: on softgpu each session's device is its own
 * emulation on the host's CPUs, so two sessions can both be busy all the time. A GPU in MIG
 * mode has its instances' time, each weighed by its part of the GPU (instance_share).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"

#define SLOTS 3601 /* an hour of samples a second apart, and the one it starts from */
#define SAMPLE_MS 1000
#define TENANTS_MAX 256 /* tenants followed at once; more are left out, and logged once */

struct series {
	uint64_t base;	      /* banked: sessions that ended */
	uint64_t ring[SLOTS]; /* the sum at each sample */
	uint64_t unknown_ms;  /* uv_now() when a session that cannot tell last ran here; 0 */
};

struct tenant_series {
	char name[128];
	struct series s;
};

static struct {
	uint64_t t[SLOTS]; /* uv_now() of each sample */
	unsigned head, n;  /* the newest sample is at head; n samples held */
	struct series gpu[GP_POOL_MAX_GPUS];
	struct tenant_series *tenant[TENANTS_MAX];
	unsigned ntenants;
	bool tenants_full;
} u;

static int gpu_slot(const struct gp_daemon *d, uint32_t index)
{
	for (uint32_t g = 0; g < d->pool.ngpus; g++)
		if (d->pool.gpu[g].index == index)
			return (int)g;
	return -1;
}

static struct series *tenant(const char *name, bool add)
{
	struct tenant_series *t;

	for (unsigned i = 0; i < u.ntenants; i++)
		if (strcmp(u.tenant[i]->name, name) == 0)
			return &u.tenant[i]->s;
	if (!add)
		return NULL;
	if (u.ntenants == TENANTS_MAX || !(t = calloc(1, sizeof(*t)))) {
		if (!u.tenants_full)
			gp_log_warnx("utilization: more than %d tenants; tenant %s is left out",
				     TENANTS_MAX, name);
		u.tenants_full = true;
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	/* Every past sample of a new tenant is its base: nothing. */
	u.tenant[u.ntenants++] = t;
	return &t->s;
}

static bool counts(const struct gp_session *s)
{
	return s->stats && s->admitted_ms && !s->busy_banked && !s->warm;
}

/* The session's busy time on its i-th GPU, ns; false when its driver cannot tell. Before
 * its worker serves (it has not yet asked its driver), no kernel of it has run: 0. */
static bool session_busy(const struct gp_session *s, uint32_t i, uint64_t *ns)
{
	uint32_t known = atomic_load_explicit(&s->stats->busy_known, memory_order_relaxed);

	if (known == GP_BUSY_CANNOT)
		return false;
	*ns = known == GP_BUSY_KNOWN
		      ? atomic_load_explicit(&s->stats->dev_busy_ns[i], memory_order_relaxed)
		      : 0;
	return true;
}

static double instance_share(const struct gp_daemon *d, const struct gp_pool_gpu *pg,
			     const struct gp_pool_gpu *ic);

/* What busy time ns on pool GPU slot g counts for a tenant: a MIG instance's is weighed by
 * its part of its GPU, as the GPU's own figure weighs it (gpus_1m: GPUs' worth). */
static uint64_t tenant_ns(const struct gp_daemon *d, int g, uint64_t ns)
{
	const struct gp_pool_gpu *ic = &d->pool.gpu[g];
	int p = ic->instance ? gpu_slot(d, ic->parent) : -1;

	if (p < 0)
		return ns;
	return (uint64_t)((double)ns * instance_share(d, &d->pool.gpu[p], ic));
}

/* The sums now: gpu[] per pool GPU slot, tenants in u.tenant's order. */
static void sums(struct gp_daemon *d, uint64_t *gpu, uint64_t *ten)
{
	uint64_t now = uv_now(d->loop);

	/* Tenants first, so that every one has its sum started from its base below. */
	for (struct gp_session *s = d->sessions; s; s = s->next)
		if (counts(s))
			tenant(s->tenant, true);
	for (uint32_t g = 0; g < d->pool.ngpus; g++)
		gpu[g] = u.gpu[g].base;
	for (unsigned t = 0; t < u.ntenants; t++)
		ten[t] = u.tenant[t]->s.base;
	for (struct gp_session *s = d->sessions; s; s = s->next) {
		struct series *ts;

		if (!counts(s))
			continue;
		ts = tenant(s->tenant, false);
		for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++) {
			int g = gpu_slot(d, s->claim.dev[i]);
			uint64_t ns;

			if (g < 0)
				continue;
			if (!session_busy(s, i, &ns)) {
				u.gpu[g].unknown_ms = now;
				if (ts)
					ts->unknown_ms = now;
				continue;
			}
			gpu[g] += ns;
			for (unsigned t = 0; ts && t < u.ntenants; t++)
				if (&u.tenant[t]->s == ts)
					ten[t] += tenant_ns(d, g, ns);
		}
	}
}

void gp__util_tick(struct gp_daemon *d)
{
	uint64_t now = uv_now(d->loop), gpu[GP_POOL_MAX_GPUS], ten[TENANTS_MAX];
	unsigned h;

	if (u.n && now - u.t[u.head] < SAMPLE_MS)
		return;
	sums(d, gpu, ten);
	h = u.n ? (u.head + 1) % SLOTS : 0;
	u.t[h] = now;
	for (uint32_t g = 0; g < d->pool.ngpus; g++)
		u.gpu[g].ring[h] = gpu[g];
	for (unsigned t = 0; t < u.ntenants; t++)
		u.tenant[t]->s.ring[h] = ten[t];
	u.head = h;
	if (u.n < SLOTS)
		u.n++;
}

void gp__util_session_end(struct gp_session *s)
{
	struct gp_daemon *d = s->d;
	struct series *ts;

	if (!counts(s))
		return;
	ts = tenant(s->tenant, true);
	for (uint32_t i = 0; i < s->claim.ndev && i < GP_STATS_MAX_DEVICES; i++) {
		int g = gpu_slot(d, s->claim.dev[i]);
		uint64_t ns;

		if (g < 0)
			continue;
		if (!session_busy(s, i, &ns)) {
			u.gpu[g].unknown_ms = uv_now(d->loop);
			if (ts)
				ts->unknown_ms = uv_now(d->loop);
			continue;
		}
		u.gpu[g].base += ns;
		if (ts)
			ts->base += tenant_ns(d, g, ns);
	}
	s->busy_banked = true;
}

/* The oldest sample no older than window_ms: its slot, or -1 when there is none. */
static int window_start(uint64_t now, uint64_t window_ms)
{
	int best = -1;

	for (unsigned k = 0; k < u.n; k++) {
		unsigned slot = (u.head + SLOTS - k) % SLOTS;

		if (now - u.t[slot] > window_ms)
			break;
		best = (int)slot;
	}
	return best;
}

struct window {
	int slot;
	double span; /* seconds */
	uint64_t from_ms;
};

static struct window window_of(uint64_t now, uint64_t ms)
{
	struct window w = {.slot = window_start(now, ms)};

	if (w.slot >= 0) {
		w.span = (double)(now - u.t[w.slot]) / 1000.0;
		w.from_ms = u.t[w.slot];
	}
	return w;
}

static double grown(const struct series *s, uint64_t now_sum, const struct window *w)
{
	if (w->slot < 0 || now_sum < s->ring[w->slot])
		return 0;
	return (double)(now_sum - s->ring[w->slot]) / 1e9;
}

static double pct(double busy, double span)
{
	double p = span > 0 ? 100.0 * busy / span : 0;

	return p > 100 ? 100 : p;
}

/* What part of its GPU a MIG instance is: its SMs of the GPU's, where the inventory knows
 * the GPU's; else its profile's compute slices of NVIDIA's seven ("2g.20gb": 2/7); else an
 * equal part of the GPU's instances. */
static double instance_share(const struct gp_daemon *d, const struct gp_pool_gpu *pg,
			     const struct gp_pool_gpu *ic)
{
	unsigned n = 0, slices = 0;
	char g = 0;

	if (pg->sms && ic->sms)
		return (double)ic->sms / pg->sms;
	if (sscanf(ic->profile, "%ug%c", &slices, &g) == 2 && g == '.' && slices >= 1 &&
	    slices <= 7)
		return slices / 7.0;
	for (uint32_t c = 0; c < d->pool.ngpus; c++)
		n += d->pool.gpu[c].instance && d->pool.gpu[c].parent == pg->index;
	return n ? 1.0 / n : 0;
}

int gp__util_fill(struct gp_daemon *d, Gp__AdminReply *rep)
{
	uint64_t now = uv_now(d->loop), gpu[GP_POOL_MAX_GPUS], ten[TENANTS_MAX];
	struct window w[2] = {window_of(now, 60000), window_of(now, 3600000)};
	double busy[2][GP_POOL_MAX_GPUS], host[2] = {0, 0};
	bool known[2][GP_POOL_MAX_GPUS], host_known[2] = {true, true};
	unsigned nhost = 0;
	Gp__TenantUtil *tu;

	gp__util_tick(d); /* a sample now, when the last is a second old */
	sums(d, gpu, ten);
	for (int k = 0; k < 2; k++)
		for (uint32_t g = 0; g < d->pool.ngpus && g < rep->n_gpu; g++) {
			busy[k][g] = grown(&u.gpu[g], gpu[g], &w[k]);
			known[k][g] = w[k].slot >= 0 &&
				      (!u.gpu[g].unknown_ms || u.gpu[g].unknown_ms < w[k].from_ms);
		}
	/* A GPU in MIG mode: its instances' time, each weighted by its share of the GPU. */
	for (uint32_t g = 0; g < d->pool.ngpus && g < rep->n_gpu; g++) {
		const struct gp_pool_gpu *pg = &d->pool.gpu[g];

		if (!pg->mig)
			continue;
		for (int k = 0; k < 2; k++) {
			double sum = 0;

			for (uint32_t c = 0; c < d->pool.ngpus; c++) {
				const struct gp_pool_gpu *ic = &d->pool.gpu[c];

				if (!ic->instance || ic->parent != pg->index)
					continue;
				sum += busy[k][c] * instance_share(d, pg, ic);
				known[k][g] &= known[k][c];
			}
			busy[k][g] += sum;
		}
	}
	for (uint32_t g = 0; g < d->pool.ngpus && g < rep->n_gpu; g++) {
		Gp__GpuStatus *gs = rep->gpu[g];

		gs->util_known = known[0][g] && known[1][g];
		gs->busy_1m_seconds = busy[0][g];
		gs->busy_1h_seconds = busy[1][g];
		gs->util_1m = pct(busy[0][g], w[0].span);
		gs->util_1h = pct(busy[1][g], w[1].span);
		if (d->pool.gpu[g].instance)
			continue; /* counted within its GPU */
		nhost++;
		for (int k = 0; k < 2; k++) {
			host[k] += pct(busy[k][g], w[k].span);
			host_known[k] &= known[k][g];
		}
	}
	rep->util_span_1m = w[0].span;
	rep->util_span_1h = w[1].span;
	rep->util_known = nhost && host_known[0] && host_known[1];
	rep->util_1m = nhost ? host[0] / nhost : 0;
	rep->util_1h = nhost ? host[1] / nhost : 0;
	rep->tenant_util = calloc(u.ntenants + 1, sizeof(*rep->tenant_util));
	tu = calloc(u.ntenants + 1, sizeof(*tu));
	if (!rep->tenant_util || !tu) {
		free(rep->tenant_util);
		free(tu);
		rep->tenant_util = NULL;
		return -ENOMEM;
	}
	rep->tenant_util[0] = tu; /* slot 0 holds the array, for gp__util_free */
	for (unsigned t = 0; t < u.ntenants; t++) {
		gp__tenant_util__init(&tu[t]);
		tu[t].tenant = u.tenant[t]->name;
		tu[t].busy_1m_seconds = grown(&u.tenant[t]->s, ten[t], &w[0]);
		tu[t].busy_1h_seconds = grown(&u.tenant[t]->s, ten[t], &w[1]);
		tu[t].gpus_1m = w[0].span > 0 ? tu[t].busy_1m_seconds / w[0].span : 0;
		tu[t].gpus_1h = w[1].span > 0 ? tu[t].busy_1h_seconds / w[1].span : 0;
		rep->tenant_util[t] = &tu[t];
	}
	rep->n_tenant_util = u.ntenants;
	return 0;
}

void gp__util_free(Gp__AdminReply *rep)
{
	if (rep->tenant_util)
		free(rep->tenant_util[0]);
	free(rep->tenant_util);
	rep->tenant_util = NULL;
	rep->n_tenant_util = 0;
}
