/* state.c -- what one session owns: handle ids and device allocations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

/*
 * A handle id the client sees is (kind << 56) | (generation << 32) | slot+1.
 * The generation changes every time a slot is reused, so a stale id from a
 * destroyed object never names a new one.
 */
#define ID_SLOT(id) ((uint32_t)((id)&0xffffffffu))
#define ID_GEN(id) ((uint32_t)(((id) >> 32) & 0xffffffu))
#define ID_KIND(id) ((uint32_t)((id) >> 56))

uint64_t gp__handle_new(struct gp_worker *w, uint32_t kind, void *ptr)
{
	uint32_t i;

	for (i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind == 0)
			break;
	if (i == w->nhandles) {
		if (w->nhandles == w->cap_handles) {
			uint32_t cap = w->cap_handles ? w->cap_handles * 2 : 64;
			struct gp_handle *nh = realloc(w->handles, cap * sizeof(*nh));

			if (!nh)
				return 0;
			w->handles = nh;
			w->cap_handles = cap;
		}
		memset(&w->handles[i], 0, sizeof(w->handles[i]));
		w->nhandles++;
	}
	w->handles[i].kind = kind;
	w->handles[i].gen = (w->handles[i].gen + 1) & 0xffffffu;
	w->handles[i].ptr = ptr;
	w->handles[i].aux = NULL;
	w->handles[i].device = -1;
	w->handles[i].parent = 0;
	w->handles[i].charge = 0;
	memset(w->handles[i].limit_charge, 0, sizeof(w->handles[i].limit_charge));
	return (uint64_t)kind << 56 | (uint64_t)w->handles[i].gen << 32 | (uint64_t)(i + 1);
}

struct gp_handle *gp__handle_get(struct gp_worker *w, uint64_t id, uint32_t kind)
{
	uint32_t slot = ID_SLOT(id);
	struct gp_handle *h;

	if (ID_KIND(id) != kind || slot == 0 || slot > w->nhandles)
		return NULL;
	h = &w->handles[slot - 1];
	if (h->kind != kind || h->gen != ID_GEN(id))
		return NULL;
	return h;
}

uint64_t gp__handle_id(struct gp_worker *w, const struct gp_handle *h)
{
	uint32_t slot = (uint32_t)(h - w->handles) + 1;

	return (uint64_t)h->kind << 56 | (uint64_t)h->gen << 32 | slot;
}

void gp__handle_release(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, ID_KIND(id));

	if (!h)
		return;
	/* What the object cost on the device goes with it. */
	gp__charge(w, h->device,
		   -(int64_t)(h->charge + h->limit_charge[0] + h->limit_charge[1] +
			      h->limit_charge[2]));
	h->charge = h->limit_charge[0] = h->limit_charge[1] = h->limit_charge[2] = 0;
	if ((h->kind == GP_H_FUNCTION || h->kind == GP_H_KERNEL) && h->aux) {
		struct gp_fn_info *fi = h->aux;

		free(fi->offset);
		free(fi->size);
		free(fi);
	}
	h->kind = 0;
	h->ptr = NULL;
	h->aux = NULL;
}

/* Index of the first allocation whose ptr is > p. */
static size_t upper_bound(struct gp_worker *w, CUdeviceptr p)
{
	size_t lo = 0, hi = w->nallocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->allocs[mid].ptr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int insert(struct gp_worker *w, const struct gp_alloc *a)
{
	size_t at;

	if (w->nallocs == w->cap_allocs) {
		size_t cap = w->cap_allocs ? w->cap_allocs * 2 : 64;
		struct gp_alloc *na = realloc(w->allocs, cap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		w->allocs = na;
		w->cap_allocs = cap;
	}
	at = upper_bound(w, a->ptr);
	memmove(&w->allocs[at + 1], &w->allocs[at], (w->nallocs - at) * sizeof(*w->allocs));
	w->allocs[at] = *a;
	w->nallocs++;
	return 0;
}

int gp__alloc_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, int device)
{
	struct gp_alloc a = {ptr, size, ctx, device, 0};
	int ret = insert(w, &a);

	if (ret)
		return ret;
	w->mem_used += size;
	if (device >= 0 && device < GP_STATS_MAX_DEVICES)
		w->dev_used[device] += size;
	if (w->mem_used > w->mem_peak)
		w->mem_peak = w->mem_used;
	gp__publish_mem(w);
	return 0;
}

/* A module's global variable: the session may copy to and from it. */
int gp__global_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, uint64_t module)
{
	struct gp_alloc a = {ptr, size, ctx, -1, module};
	struct gp_alloc *old = gp__alloc_find(w, ptr);

	if (old && old->ptr == ptr && old->module == module)
		return 0; /* asked for twice */
	return insert(w, &a);
}

/* The allocation that contains ptr, or NULL. */
struct gp_alloc *gp__alloc_find(struct gp_worker *w, CUdeviceptr ptr)
{
	size_t at = upper_bound(w, ptr);
	struct gp_alloc *a;

	if (at == 0)
		return NULL;
	a = &w->allocs[at - 1];
	if (ptr - a->ptr < a->size || (a->size == 0 && ptr == a->ptr))
		return a;
	return NULL;
}

/* True when [ptr, ptr+len) lies inside one allocation of this session. */
bool gp__range_owned(struct gp_worker *w, CUdeviceptr ptr, uint64_t len)
{
	struct gp_alloc *a = gp__alloc_find(w, ptr);

	if (!a)
		return false;
	return len <= a->size - (ptr - a->ptr);
}

void gp__alloc_remove(struct gp_worker *w, struct gp_alloc *a)
{
	size_t at = (size_t)(a - w->allocs);
	bool global = a->module != 0;

	if (!global) {
		w->mem_used -= a->size;
		if (a->device >= 0 && a->device < GP_STATS_MAX_DEVICES)
			w->dev_used[a->device] -= a->size;
	}
	memmove(&w->allocs[at], &w->allocs[at + 1], (w->nallocs - at - 1) * sizeof(*w->allocs));
	w->nallocs--;
	if (!global)
		gp__publish_mem(w);
}

int gp__libinst_add(struct gp_worker *w, uint64_t lib, uint64_t ctx, int device, uint64_t charge,
		    bool usable)
{
	if (w->nlibinst == w->cap_libinst) {
		size_t cap = w->cap_libinst ? w->cap_libinst * 2 : 16;
		struct gp_libinst *n = realloc(w->libinst, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->libinst = n;
		w->cap_libinst = cap;
	}
	w->libinst[w->nlibinst++] = (struct gp_libinst){lib, ctx, device, charge, usable};
	gp__charge(w, device, (int64_t)charge);
	return 0;
}

const struct gp_libinst *gp__libinst_find(const struct gp_worker *w, uint64_t lib, uint64_t ctx)
{
	for (size_t i = 0; i < w->nlibinst; i++)
		if (w->libinst[i].lib == lib && w->libinst[i].ctx == ctx)
			return &w->libinst[i];
	return NULL;
}

uint64_t gp__libinst_cost(const struct gp_worker *w, uint64_t lib)
{
	uint64_t most = 0;

	for (size_t i = 0; i < w->nlibinst; i++)
		if (w->libinst[i].lib == lib && w->libinst[i].charge > most)
			most = w->libinst[i].charge;
	return most;
}

/* Drops the records of a library (lib) or of a context (ctx), and their charges. */
static void libinst_forget(struct gp_worker *w, uint64_t lib, uint64_t ctx)
{
	for (size_t i = w->nlibinst; i-- > 0;) {
		struct gp_libinst *li = &w->libinst[i];

		if ((lib && li->lib == lib) || (ctx && li->ctx == ctx)) {
			gp__charge(w, li->device, -(int64_t)li->charge);
			*li = w->libinst[--w->nlibinst];
		}
	}
}

void gp__forget_module(struct gp_worker *w, uint64_t module)
{
	libinst_forget(w, module, 0);
	for (size_t i = w->nallocs; i-- > 0;)
		if (w->allocs[i].module == module)
			gp__alloc_remove(w, &w->allocs[i]);
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if ((h->kind == GP_H_FUNCTION || h->kind == GP_H_KERNEL) && h->aux &&
		    ((struct gp_fn_info *)h->aux)->module == module)
			gp__handle_release(w, gp__handle_id(w, h));
	}
}

void gp__forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	libinst_forget(w, 0, ctx);
	for (size_t i = w->nallocs; i-- > 0;)
		if (w->allocs[i].ctx == ctx)
			gp__alloc_remove(w, &w->allocs[i]);
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (!h->kind || h->kind == GP_H_CTX || h->parent != ctx)
			continue;
		if (h->kind == GP_H_MODULE)
			gp__forget_module(w, gp__handle_id(w, h));
		gp__handle_release(w, gp__handle_id(w, h));
	}
}

bool gp__charge_fits(struct gp_worker *w, int device, uint64_t bytes)
{
	if (!w->mem_limit || device < 0 || device >= GP_STATS_MAX_DEVICES)
		return true;
	return bytes <= w->mem_limit && w->dev_used[device] <= w->mem_limit - bytes;
}

void gp__charge(struct gp_worker *w, int device, int64_t delta)
{
	if (device < 0 || device >= GP_STATS_MAX_DEVICES || delta == 0)
		return;
	w->dev_used[device] += (uint64_t)delta;
	w->mem_used += (uint64_t)delta;
	if (w->mem_used > w->mem_peak)
		w->mem_peak = w->mem_used;
	gp__publish_mem(w);
}

void gp__publish_mem(struct gp_worker *w)
{
	if (!w->stats)
		return;
	atomic_store_explicit(&w->stats->mem_used, w->mem_used, memory_order_relaxed);
	atomic_store_explicit(&w->stats->mem_peak, w->mem_peak, memory_order_relaxed);
	for (int i = 0; i < w->ndev && i < GP_STATS_MAX_DEVICES; i++)
		atomic_store_explicit(&w->stats->dev_mem_used[i], w->dev_used[i],
				      memory_order_relaxed);
}

void gp__worker_state_free(struct gp_worker *w)
{
	for (uint32_t i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind)
			gp__handle_release(w, gp__handle_id(w, &w->handles[i]));
	free(w->handles);
	free(w->allocs);
	free(w->libinst);
	w->handles = NULL;
	w->allocs = NULL;
	w->libinst = NULL;
	w->nlibinst = w->cap_libinst = 0;
	w->nhandles = w->cap_handles = 0;
	w->nallocs = w->cap_allocs = 0;
}
