/* mempool.c -- memory pools and stream-ordered allocation, within the session's limit.
 *
 * A pool is a session handle (GP_H_MEMPOOL) for the driver's pool: the ones the session
 * creates and each device's default pool, made a handle the first time it is asked for.
 * Pools belong to the session, not to a context; a pool id of another session names
 * nothing here.
 *
 * Every byte a pool holds counts against the session's limit: the pool handle's charge is
 * the pool's reserved memory as the driver last reported it (CU_MEMPOOL_ATTR_RESERVED_MEM_
 * CURRENT), read again after each call that can change it (an allocation, a trim, a
 * threshold) and after each synchronizing wait (waits.c), where the driver gives back what
 * a pool holds above its release threshold. Its allocations enter the session's table
 * uncounted (gp_owner_pooled_add), so that copies and launches may use them and a freed one
 * is refused. An allocation is refused with CUDA_ERROR_OUT_OF_MEMORY when its bytes do not
 * fit the room left, even after the pool gave back what it holds unused; and a driver that
 * reserved more than asked (it reserves in its own steps) has the allocation freed again
 * and refused when that took the session past its limit.
 *
 * A destroyed pool with allocations still out keeps its handle (unusable, marked destroyed)
 * and, as its charge, the bytes of those allocations, until the last of them is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "worker.h"

struct pool_info {
	bool is_default;
	bool destroyed;
};

static struct pool_info *info_of(const struct gp_handle *h)
{
	return h->aux;
}

/* A usable pool handle of the session. */
static CUresult pool_get(struct gp_worker *w, uint64_t id, struct gp_handle **out)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_MEMPOOL);

	if (!h || info_of(h)->destroyed)
		return CUDA_ERROR_INVALID_VALUE; /* CUDA's answer to a pool that is not one */
	*out = h;
	return CUDA_SUCCESS;
}

/* The pool's charge made what the driver says it holds now. */
static void refresh(struct gp_worker *w, struct gp_handle *h)
{
	cuuint64_t held = 0;

	if (info_of(h)->destroyed ||
	    GP_DRV(w, cuMemPoolGetAttribute, h->ptr, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &held) !=
		    CUDA_SUCCESS ||
	    held == h->charge)
		return;
	if (gp_owner_charge(&w->own, h->device, (int64_t)held - (int64_t)h->charge) == 0)
		h->charge = held;
	gp__publish_mem(w);
}

static void pool_forget(struct gp_worker *w, uint64_t id);

/* A destroyed pool's charge made the bytes of its allocations still out (a context that
 * went took its allocations with it); it goes with the last. */
static void refresh_destroyed(struct gp_worker *w, struct gp_handle *h, uint64_t id)
{
	uint64_t out = 0;

	for (size_t i = 0; i < w->nallocs; i++)
		if (w->allocs[i].pool == id)
			out += w->allocs[i].size;
	if (!out) {
		pool_forget(w, id);
		return;
	}
	if (out < h->charge &&
	    gp_owner_charge(&w->own, h->device, -(int64_t)(h->charge - out)) == 0)
		h->charge = out;
	gp__publish_mem(w);
}

void gp__pools_refresh(struct gp_worker *w, int device)
{
	/* backwards: a destroyed pool may leave the array, the last one taking its place */
	for (unsigned i = w->npools; i-- > 0;) {
		uint64_t id = w->pools[i];
		struct gp_handle *h = gp__handle_get(w, id, GP_H_MEMPOOL);

		if (!h || (device >= 0 && h->device != device))
			continue;
		if (info_of(h)->destroyed)
			refresh_destroyed(w, h, id);
		else
			refresh(w, h);
	}
}

/* Every pool of the session on device gives back what it holds unused. */
static void trim_device(struct gp_worker *w, int device)
{
	for (unsigned i = 0; i < w->npools; i++) {
		struct gp_handle *h = gp__handle_get(w, w->pools[i], GP_H_MEMPOOL);

		if (h && h->device == device && !info_of(h)->destroyed) {
			GP_DRV(w, cuMemPoolTrimTo, h->ptr, 0);
			refresh(w, h);
		}
	}
}

static uint64_t pool_add(struct gp_worker *w, CUmemoryPool p, int device, bool is_default)
{
	struct pool_info *pi = calloc(1, sizeof(*pi));
	uint64_t id = pi ? gp__handle_new(w, GP_H_MEMPOOL, p) : 0;
	struct gp_handle *h;

	if (!id) {
		free(pi);
		return 0;
	}
	h = gp__handle_get(w, id, GP_H_MEMPOOL);
	h->aux = pi;
	h->device = device;
	pi->is_default = is_default;
	w->pools[w->npools++] = id;
	return id;
}

static void pool_forget(struct gp_worker *w, uint64_t id)
{
	for (unsigned i = 0; i < w->npools; i++) {
		if (w->pools[i] == id) {
			w->pools[i] = w->pools[--w->npools];
			break;
		}
	}
	gp__handle_release(w, id); /* its charge goes with it */
}

/* The device's default pool (a handle made on first use) or its current one. */
static CUresult device_pool(struct gp_worker *w, int dev, CUdevice drv, bool current, uint64_t *out)
{
	CUmemoryPool p;
	CUresult r;

	if (!w->pool_default[dev]) {
		if (w->npools >= GP_POOLS_MAX)
			return CUDA_ERROR_OUT_OF_MEMORY;
		r = GP_DRV(w, cuDeviceGetDefaultMemPool, &p, drv);
		if (r != CUDA_SUCCESS)
			return r;
		w->pool_default[dev] = pool_add(w, p, dev, true);
		if (!w->pool_default[dev])
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!gp__handle_get(w, w->pool_current[dev], GP_H_MEMPOOL))
		w->pool_current[dev] = w->pool_default[dev];
	*out = current ? w->pool_current[dev] : w->pool_default[dev];
	return CUDA_SUCCESS;
}

/* ---- allocation and free ------------------------------------------------------------ */

/*
 * On a capturing stream the driver makes a graph allocation node: its range is the captured
 * graph's while that graph lives, charged when the graph is instantiated (graphmem.c), not
 * by the pool.
 */
static CUresult captured_alloc(struct gp_worker *w, const struct gp_wargs_mem_alloc_async *a,
			       struct gp_handle *h, struct gp_out_mem_alloc_async *o)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUgraph g = NULL;
	CUdeviceptr p = 0;
	uint64_t gid;
	CUresult r = GP_DRV(w, cuStreamGetCaptureInfo_v3, a->stream_drv, &st, NULL, &g, NULL, NULL,
			    NULL);

	if (r)
		return r;
	if (st != CU_STREAM_CAPTURE_STATUS_ACTIVE || !g)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	/* the session's limit is its device's size: past it, as past a device's memory */
	if (w->mem_limit && a->bytes > w->mem_limit)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((r = gp__graph_name(w, g, a->ctx, &gid)))
		return r;
	if (gp__graph_is_body(w, gid))
		return CUDA_ERROR_INVALID_VALUE; /* no graph memory in a conditional node's body */
	r = GP_DRV(w, cuMemAllocFromPoolAsync, &p, (size_t)a->bytes, h->ptr, a->stream_drv);
	if (r)
		return r;
	/* Unrecorded, the node stays in the capture: its address is not the session's, but
	 * the instantiation charges it all the same (graphmem.c walks the driver's graph). */
	if (gp__graphmem_note(w, gid, p, a->bytes, a->ctx, a->ctx_dev))
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->dptr = p;
	o->pool = gp__handle_id(w, h);
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_alloc_async(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_mem_alloc_async *a,
				   struct gp_out_mem_alloc_async *o)
{
	int dev = a->ctx_dev;
	struct gp_handle *h;
	uint64_t id = a->pool;
	CUdeviceptr p = 0;
	CUdevice drv;
	CUresult r;

	if (a->bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->va_vmm)
		return CUDA_ERROR_NOT_SUPPORTED; /* a pool's memory cannot be put in a window */
	if (!id) {
		if ((r = w->drv.cuDeviceGet(&drv, dev)) != CUDA_SUCCESS ||
		    (r = device_pool(w, dev, drv, true, &id)) != CUDA_SUCCESS)
			return r;
	}
	if ((r = pool_get(w, id, &h)) != CUDA_SUCCESS)
		return r;
	if (h->device != dev)
		return CUDA_ERROR_INVALID_VALUE; /* the pool of another device than the stream's */
	if (gp__stream_capturing(w, a->stream_drv))
		return captured_alloc(w, a, h, o);
	gp__pools_refresh(w, dev);
	if (!gp__charge_fits(w, dev, a->bytes)) {
		/* what the device's pools hold unused goes first, as under the driver's own
		 * pressure */
		trim_device(w, dev);
		if (!gp__charge_fits(w, dev, a->bytes))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = GP_DRV(w, cuMemAllocFromPoolAsync, &p, (size_t)a->bytes, h->ptr, a->stream_drv);
	refresh(w, h);
	if (r != CUDA_SUCCESS)
		return r;
	if ((w->mem_limit && w->dev_used[dev] > w->mem_limit) ||
	    gp_owner_pooled_add(&w->own, p, a->bytes, a->ctx, dev, id)) {
		/* the driver reserved past the limit (or our table is full): not the session's */
		GP_DRV(w, cuMemFreeAsync, p, a->stream_drv);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->dptr = p;
	o->pool = id;
	return CUDA_SUCCESS;
}

void gp__pool_alloc_freed(struct gp_worker *w, uint64_t pool)
{
	struct gp_handle *h = pool ? gp__handle_get(w, pool, GP_H_MEMPOOL) : NULL;

	/* A destroyed pool's charge follows its allocations; a live one's, the driver. */
	if (h && info_of(h)->destroyed)
		refresh_destroyed(w, h, pool);
}

CUresult gp__serve_mem_free_async(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_mem_free_async *a,
				  struct gp_out_mem_free_async *o)
{
	struct gp_alloc *al = gp__alloc_find(w, a->dptr);
	uint64_t pool;
	CUresult r;

	if (!al || al->ptr != a->dptr || al->module)
		return CUDA_ERROR_INVALID_VALUE;
	if (al->graph) {
		/* Graph memory: a free node when captured, else freed outside its graph (the
		 * driver says whether it may be); its range stays its graph's while the graph
		 * or an executable of it lives. */
		bool captured = gp__stream_capturing(w, a->stream_drv);

		r = GP_DRV(w, cuMemFreeAsync, a->dptr, a->stream_drv);
		if (r == CUDA_SUCCESS && !captured)
			gp__graphmem_freed(w, al);
		return r;
	}
	/* Captured, it would be a free node of memory no graph allocated: refused here and by
	 * the interposer. */
	if (gp__stream_capturing(w, a->stream_drv))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pool = al->pool;
	r = GP_DRV(w, cuMemFreeAsync, a->dptr, a->stream_drv);
	if (r != CUDA_SUCCESS)
		return r;
	/* The range is the session's no more: later work naming it is refused. */
	gp__alloc_remove(w, al);
	gp__pool_alloc_freed(w, pool);
	return CUDA_SUCCESS;
}

/* ---- pools ------------------------------------------------------------------------- */

CUresult gp__serve_pool_create(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_pool_create *a, struct gp_out_pool_create *o)
{
	CUmemPoolProps props;
	CUmemoryPool p;
	CUresult r;

	if (w->npools >= GP_POOLS_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = a->device_drv;
	props.maxSize = (size_t)a->max_size;
	r = GP_DRV(w, cuMemPoolCreate, &p, &props);
	if (r != CUDA_SUCCESS)
		return r;
	o->pool = pool_add(w, p, (int)a->device, false);
	if (!o->pool) {
		GP_DRV(w, cuMemPoolDestroy, p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

CUresult gp__serve_pool_destroy(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_pool_destroy *a,
				struct gp_out_pool_destroy *o)
{
	struct gp_handle *h;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	if (info_of(h)->is_default)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemPoolDestroy, h->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (w->pool_current[h->device] == a->pool)
		w->pool_current[h->device] = w->pool_default[h->device];
	/* Allocations still out keep what they use charged until they are freed. */
	info_of(h)->destroyed = true;
	refresh_destroyed(w, h, a->pool);
	return CUDA_SUCCESS;
}

static bool int_attribute(uint32_t attr)
{
	return attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
	       attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
	       attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

static bool known_attribute(uint32_t attr)
{
	return attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
	       attr <= CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

CUresult gp__serve_pool_set_attribute(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_pool_set_attribute *a,
				      struct gp_out_pool_set_attribute *o)
{
	struct gp_handle *h;
	cuuint64_t v64 = a->value;
	int v = a->value != 0;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	if (!known_attribute(a->attribute))
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemPoolSetAttribute, h->ptr, (CUmemPool_attribute)a->attribute,
		   int_attribute(a->attribute) ? (void *)&v : (void *)&v64);
	refresh(w, h);
	return r;
}

CUresult gp__serve_pool_get_attribute(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_pool_get_attribute *a,
				      struct gp_out_pool_get_attribute *o)
{
	struct gp_handle *h;
	cuuint64_t v64 = 0;
	int v = 0;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	if (!known_attribute(a->attribute))
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemPoolGetAttribute, h->ptr, (CUmemPool_attribute)a->attribute,
		   int_attribute(a->attribute) ? (void *)&v : (void *)&v64);
	o->value = int_attribute(a->attribute) ? (uint64_t)(uint32_t)v : v64;
	refresh(w, h);
	return r;
}

CUresult gp__serve_pool_trim(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_pool_trim *a, struct gp_out_pool_trim *o)
{
	struct gp_handle *h;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuMemPoolTrimTo, h->ptr, (size_t)a->keep);
	refresh(w, h);
	return r;
}

/* Access descriptors as (u32 device, u32 flags) pairs, each device one of the session's. */
CUresult gp__serve_pool_set_access(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_pool_set_access *a,
				   struct gp_out_pool_set_access *o)
{
	struct gp_handle *h;
	CUmemAccessDesc *map;
	size_t n = a->map_len / 8;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	if (a->map_len % 8)
		return CUDA_ERROR_INVALID_VALUE;
	map = calloc(n ? n : 1, sizeof(*map));
	if (!map)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
		uint32_t dev, flags;
		CUdevice drv;

		memcpy(&dev, a->map + 8 * i, 4);
		memcpy(&flags, a->map + 8 * i + 4, 4);
		if (dev >= (uint32_t)w->ndev)
			r = CUDA_ERROR_INVALID_DEVICE;
		else if ((r = w->drv.cuDeviceGet(&drv, (int)dev)) == CUDA_SUCCESS)
			map[i] = (CUmemAccessDesc){{CU_MEM_LOCATION_TYPE_DEVICE, drv},
						   (CUmemAccess_flags)flags};
	}
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuMemPoolSetAccess, h->ptr, map, n);
	free(map);
	return r;
}

CUresult gp__serve_pool_get_access(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_pool_get_access *a,
				   struct gp_out_pool_get_access *o)
{
	struct gp_handle *h;
	CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, a->device_drv};
	CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuMemPoolGetAccess, &flags, h->ptr, &loc);
	o->flags = (uint64_t)flags;
	return r;
}

CUresult gp__serve_pool_of_device(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_pool_of_device *a,
				  struct gp_out_pool_of_device *o)
{
	return device_pool(w, (int)a->device, a->device_drv, a->current != 0, &o->pool);
}

CUresult gp__serve_pool_set_current(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_pool_set_current *a,
				    struct gp_out_pool_set_current *o)
{
	struct gp_handle *h;
	uint64_t unused;
	CUresult r = pool_get(w, a->pool, &h);

	if (r != CUDA_SUCCESS)
		return r;
	if (h->device != (int)a->device)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((r = device_pool(w, (int)a->device, a->device_drv, false, &unused)) != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuDeviceSetMemPool, a->device_drv, h->ptr);
	if (r == CUDA_SUCCESS)
		w->pool_current[a->device] = a->pool;
	return r;
}
