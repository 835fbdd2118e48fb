/* state.c -- what one session owns, for the handlers: owner.c's tables and the stats page.
 *
 * The rules (generations, ranges, charges) are owner.c's; this file adds what only the
 * worker knows: what a function handle's aux holds, which handles a module or context
 * takes with it, and publishing the session's memory in its stats page. */
#include <stdlib.h>

#include "worker.h"

uint64_t gp__handle_new(struct gp_worker *w, uint32_t kind, void *ptr)
{
	return gp_owner_handle_new(&w->own, kind, ptr);
}

struct gp_handle *gp__handle_get(struct gp_worker *w, uint64_t id, uint32_t kind)
{
	return gp_owner_handle_get(&w->own, id, kind);
}

uint64_t gp__handle_id(struct gp_worker *w, const struct gp_handle *h)
{
	return gp_owner_handle_id(&w->own, h);
}

static bool is_function(const struct gp_handle *h)
{
	return h->kind == GP_H_FUNCTION || h->kind == GP_H_KERNEL;
}

void gp__handle_release(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp_owner_handle_get(&w->own, id, gp_owner_id_kind(id));
	bool function, pool;
	void *aux;

	if (!h)
		return;
	function = is_function(h);
	pool = h->kind == GP_H_MEMPOOL;
	if (gp_owner_handle_free(&w->own, id, &aux))
		return;
	if (function && aux) {
		struct gp_fn_info *fi = aux;

		free(fi->offset);
		free(fi->size);
		free(fi);
	}
	if (pool)
		free(aux);
	gp__publish_mem(w);
}

int gp__alloc_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, int device)
{
	int ret = gp_owner_alloc_add(&w->own, ptr, size, ctx, device);

	if (ret == 0)
		gp__publish_mem(w);
	return ret;
}

/* A module's global variable: the session may copy to and from it. */
int gp__global_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, uint64_t module)
{
	return gp_owner_global_add(&w->own, ptr, size, ctx, module);
}

/* The allocation that contains ptr, or NULL; valid until the next add or remove. */
struct gp_alloc *gp__alloc_find(struct gp_worker *w, CUdeviceptr ptr)
{
	return gp_owner_alloc_find(&w->own, ptr);
}

/* True when [ptr, ptr+len) lies inside one allocation of this session. */
bool gp__range_owned(struct gp_worker *w, CUdeviceptr ptr, uint64_t len)
{
	return gp_owner_range(&w->own, ptr, len);
}

bool gp__range2d_owned(struct gp_worker *w, CUdeviceptr base, uint64_t pitch, uint64_t width,
		       uint64_t height)
{
	return gp_owner_range2d(&w->own, base, pitch, width, height);
}

void gp__alloc_remove(struct gp_worker *w, struct gp_alloc *a)
{
	gp__ipc_mem_freed(w, a->ptr, a->ctx);
	gp_owner_alloc_remove(&w->own, a);
	gp__publish_mem(w);
}

int gp__libinst_add(struct gp_worker *w, uint64_t lib, uint64_t ctx, int device, uint64_t charge,
		    bool usable)
{
	int ret = gp_owner_libinst_add(&w->own, lib, ctx, device, charge, usable);

	if (ret == 0)
		gp__publish_mem(w);
	return ret;
}

const struct gp_libinst *gp__libinst_find(const struct gp_worker *w, uint64_t lib, uint64_t ctx)
{
	return gp_owner_libinst_find(&w->own, lib, ctx);
}

uint64_t gp__libinst_cost(const struct gp_worker *w, uint64_t lib)
{
	return gp_owner_libinst_cost(&w->own, lib);
}

void gp__forget_module(struct gp_worker *w, uint64_t module)
{
	gp_owner_libinst_forget(&w->own, module, 0);
	gp_owner_alloc_forget(&w->own, 0, module);
	gp__managed_forget_module(w, module);
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (is_function(h) && h->aux && ((struct gp_fn_info *)h->aux)->module == module)
			gp__handle_release(w, gp__handle_id(w, h));
	}
	gp__publish_mem(w);
}

void gp__forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	gp_owner_libinst_forget(&w->own, 0, ctx);
	gp__ipc_forget_ctx(w, ctx);
	gp_owner_alloc_forget(&w->own, ctx, 0);
	gp__mem_window_forget_ctx(w, ctx);
	gp__managed_forget_ctx(w, ctx);
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (!h->kind || h->kind == GP_H_CTX || h->parent != ctx)
			continue;
		if (h->kind == GP_H_MODULE)
			gp__forget_module(w, gp__handle_id(w, h));
		gp__handle_release(w, gp__handle_id(w, h));
	}
	/* The driver freed the context's pool allocations: its pools hold less. Its
	 * executable graphs' charges went with them: what the driver still reserves for
	 * graphs is measured again. */
	gp__pools_refresh(w, -1);
	gp__graphmem_refresh(w, -1);
	gp__publish_mem(w);
}

bool gp__charge_fits(struct gp_worker *w, int device, uint64_t bytes)
{
	return gp_owner_charge_fits(&w->own, device, bytes);
}

void gp__charge(struct gp_worker *w, int device, int64_t delta)
{
	if (delta != 0 && gp_owner_charge(&w->own, device, delta) == 0)
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
	gp_owner_deinit(&w->own);
}
