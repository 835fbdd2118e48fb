/* api_mempool.c -- memory pools and stream-ordered allocation through the pool.
 *
 * A pool is the worker's (a session handle); the client holds a proxy for each one it has
 * seen, created or a device's default, found again by its remote id when the pool names
 * one (cuDeviceGetMemPool). Arguments are checked here first, so that the calls whose
 * result is then known are sent without waiting: cuMemFreeAsync (as the other stream-ordered
 * calls), cuMemPoolSetAttribute and cuMemPoolTrimTo; a failure the pool still finds comes
 * back with the next synchronizing call. An allocation waits for its address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"
#include "log.h"

#define ALIAS_RETRIES 8

/* The proxies, found by remote id; never freed (a destroyed one is marked dead), so that
 * a stale handle is refused rather than followed. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gp_ipool **pools;
static size_t npools, cap_pools;

static CUresult pool_obj(CUmemoryPool h, struct gp_ipool **out)
{
	struct gp_ipool *p = (struct gp_ipool *)h;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!p || p->magic != GP_MAGIC_POOL)
		return CUDA_ERROR_INVALID_VALUE;
	*out = p;
	return CUDA_SUCCESS;
}

/* The proxy of a remote pool id, made for a default pool the first time it is seen. */
static struct gp_ipool *pool_proxy(uint64_t remote, int device, bool is_default)
{
	struct gp_ipool *p = NULL;

	pthread_mutex_lock(&pools_lock);
	for (size_t i = 0; i < npools; i++)
		if (pools[i]->magic == GP_MAGIC_POOL && pools[i]->remote == remote)
			p = pools[i];
	if (!p && npools == cap_pools) {
		size_t cap = cap_pools ? cap_pools * 2 : 8;
		struct gp_ipool **n = realloc(pools, cap * sizeof(*n));

		if (n) {
			pools = n;
			cap_pools = cap;
		}
	}
	if (!p && npools < cap_pools && (p = calloc(1, sizeof(*p))) != NULL) {
		*p = (struct gp_ipool){GP_MAGIC_POOL, remote, device, is_default};
		pools[npools++] = p;
	}
	pthread_mutex_unlock(&pools_lock);
	return p;
}

/* ---- allocation and free -------------------------------------------------------------- */

static CUresult free_remote(struct gp_ictx *c, uint64_t dptr, uint64_t sid)
{
	return gp__rpc_mem_free_async(
		GP_F_NO_REPLY,
		&(struct gp_in_mem_free_async){.ctx = c->remote, .dptr = dptr, .stream = sid},
		NULL);
}

/*
 * An address that falls on host memory of this process would make unified copies
 * ambiguous (registry.c): such an allocation is held aside while another is made, then
 * freed in stream order.
 */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, uint64_t pool, CUstream s, bool pt)
{
	struct gp_in_mem_alloc_async in = {.bytes = bytes, .pool = pool};
	uint64_t aside[ALIAS_RETRIES];
	int naside = 0, ret = -EEXIST;
	struct gp_ictx *c;
	uint64_t p = 0;
	CUresult r;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_stream(s, pt, &c, &in.stream);
	if (r != CUDA_SUCCESS)
		return r;
	if (bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* captured: an allocation node of the captured graph */
	{
		bool taken;

		r = gp__capture_alloc(c, in.stream, bytes, pool, dptr, &taken);
		if (taken)
			return r;
	}
	in.ctx = c->remote;
	while (naside < ALIAS_RETRIES) {
		struct gp_out_mem_alloc_async out;

		r = gp__rpc_mem_alloc_async(0, &in, &out);
		if (r != CUDA_SUCCESS)
			break;
		p = out.dptr;
		/* a pool not seen yet is a default one: created pools have their proxies */
		ret = gp__range_add_owned((uintptr_t)p, bytes, GP_MEM_DEVICE, c, GP_RANGE_POOLED,
					  pool_proxy(out.pool, c->device, true));
		if (ret != -EEXIST)
			break;
		aside[naside++] = p;
	}
	while (naside > 0)
		free_remote(c, aside[--naside], in.stream);
	if (r == CUDA_SUCCESS && ret) {
		if (ret != -EEXIST)
			free_remote(c, p, in.stream);
		gp_log_warnx("stream-ordered allocation: no address free in both processes");
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)p;
	return r;
}

static CUresult free_async(CUdeviceptr dptr, CUstream s, bool pt)
{
	struct gp_range rg;
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__range_find(dptr, &rg) || rg.kind != GP_MEM_DEVICE || rg.base != dptr ||
	    !gp__ctx_valid(rg.ctx) || rg.ctx->remote == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* Graph memory: a free node when captured, else freed outside its graph, as the pool's
	 * driver decides; its range stays its graph's. */
	if (rg.flags & GP_RANGE_GRAPH)
		return gp__rpc_mem_free_async(
			0, /* CUDA refuses a free its graph makes itself here: the answer is waited for */
			&(struct gp_in_mem_free_async){
				.ctx = c->remote, .dptr = dptr, .stream = sid},
			NULL);
	if (gp__capture_refuse(c, sid))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* a free node */
	/* Forgotten before the address can come back from another allocation; two frees of
	 * one pointer: one wins, the other is refused here. */
	if (!gp__range_remove(dptr, GP_MEM_DEVICE))
		return CUDA_ERROR_INVALID_VALUE;
	r = free_remote(c, dptr, sid);
	if (r != CUDA_SUCCESS)
		gp__range_add(rg.base, rg.size, rg.kind, rg.ctx, rg.flags);
	return r;
}

CUresult gp__mem_alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s,
			     bool pt)
{
	struct gp_ipool *p = NULL;
	CUresult r = pool ? pool_obj(pool, &p) : CUDA_SUCCESS;

	if (r != CUDA_SUCCESS)
		return r;
	return alloc_async(dptr, bytes, p ? p->remote : 0, s, pt);
}

CUresult gp__mem_free_async(CUdeviceptr dptr, CUstream s, bool pt)
{
	return free_async(dptr, s, pt);
}

GP_CUDA_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
	return gp__mem_alloc_async(dptr, bytes, NULL, s, false);
}

GP_CUDA_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
						CUstream s)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__mem_alloc_async(dptr, bytes, pool, s, false);
}

GP_CUDA_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
	return free_async(dptr, s, false);
}

/* ---- pools ------------------------------------------------------------------------------ */

/* A device location of the session: what every pool through the pool is. */
static CUresult device_location(const CUmemLocation *loc)
{
	if (!loc)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CUDA_ERROR_NOT_SUPPORTED; /* host memory pools */
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->id < 0 || loc->id >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	static const unsigned char zero[sizeof(props->reserved)];
	struct gp_out_pool_create out;
	struct gp_ipool *p;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    memcmp(props->reserved, zero, sizeof(zero)) || props->win32SecurityAttributes)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = device_location(&props->location)) != CUDA_SUCCESS)
		return r;
	if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE || props->usage)
		return CUDA_ERROR_NOT_SUPPORTED; /* shareable pools, decompression: not forwarded */
	r = gp__rpc_pool_create(0,
				&(struct gp_in_pool_create){.device = (uint64_t)props->location.id,
							    .max_size = props->maxSize},
				&out);
	if (r != CUDA_SUCCESS)
		return r;
	p = pool_proxy(out.pool, props->location.id, false);
	if (!p) {
		gp__rpc_pool_destroy(0, &(struct gp_in_pool_destroy){.pool = out.pool}, NULL);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	struct gp_ipool *p;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (p->is_default)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_pool_destroy(0, &(struct gp_in_pool_destroy){.pool = p->remote}, NULL);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&pools_lock);
		p->magic = GP_MAGIC_DEAD;
		pthread_mutex_unlock(&pools_lock);
	}
	return r;
}

/* The wire value of an attribute to set, checked: the int ones as 0 or 1, the high
 * watermarks only reset to 0, the current sizes not at all. */
static CUresult attr_value(CUmemPool_attribute attr, const void *value, uint64_t *out)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*out = *(const int *)value != 0;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*out = *(const cuuint64_t *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*out = 0;
		return *(const cuuint64_t *)value ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

GP_CUDA_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
					      void *value)
{
	struct gp_ipool *p;
	uint64_t v;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (!value || (r = attr_value(attr, value, &v)) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__rpc_pool_set_attribute(
		GP_F_NO_REPLY,
		&(struct gp_in_pool_set_attribute){
			.pool = p->remote, .attribute = (uint64_t)attr, .value = v},
		NULL);
}

GP_CUDA_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
					      void *value)
{
	struct gp_out_pool_get_attribute out;
	struct gp_ipool *p;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (!value || attr < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
	    attr > CU_MEMPOOL_ATTR_USED_MEM_HIGH)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_pool_get_attribute(
		0, &(struct gp_in_pool_get_attribute){.pool = p->remote, .attribute = attr}, &out);
	if (r != CUDA_SUCCESS)
		return r;
	if (attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
		*(int *)value = (int)out.value;
	else
		*(cuuint64_t *)value = out.value;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	struct gp_ipool *p;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_pool_trim(GP_F_NO_REPLY,
				 &(struct gp_in_pool_trim){.pool = p->remote, .keep = keep}, NULL);
}

GP_CUDA_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
					   size_t count)
{
	struct gp_in_pool_set_access in = {0};
	struct gp_ipool *p;
	uint32_t *pairs;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if ((!map && count) || count > GP_BLOB_MAX / 8)
		return CUDA_ERROR_INVALID_VALUE;
	pairs = calloc(count ? 2 * count : 1, sizeof(*pairs));
	if (!pairs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < count && r == CUDA_SUCCESS; i++) {
		unsigned f = map[i].flags;

		if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			r = CUDA_ERROR_INVALID_VALUE;
		else
			r = device_location(&map[i].location);
		pairs[2 * i] = (uint32_t)map[i].location.id;
		pairs[2 * i + 1] = f;
	}
	if (r == CUDA_SUCCESS) {
		in.pool = p->remote;
		in.map = (const uint8_t *)pairs;
		in.map_len = count * 8;
		r = gp__rpc_pool_set_access(0, &in, NULL);
	}
	free(pairs);
	return r;
}

GP_CUDA_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool,
					   CUmemLocation *location)
{
	struct gp_out_pool_get_access out;
	struct gp_ipool *p;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = device_location(location)) != CUDA_SUCCESS)
		return r;
	r = gp__rpc_pool_get_access(0,
				    &(struct gp_in_pool_get_access){
					    .pool = p->remote, .device = (uint64_t)location->id},
				    &out);
	if (r == CUDA_SUCCESS)
		*flags = (CUmemAccess_flags)out.flags;
	return r;
}

/* ---- a device's pools ------------------------------------------------------------------- */

static CUresult device_pool(CUmemoryPool *out, int dev, bool current)
{
	struct gp_out_pool_of_device o;
	struct gp_ipool *p;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	r = gp__rpc_pool_of_device(
		0, &(struct gp_in_pool_of_device){.device = (uint64_t)dev, .current = current}, &o);
	if (r != CUDA_SUCCESS)
		return r;
	/* A pool not seen yet is a default one: created pools have their proxies. */
	p = pool_proxy(o.pool, dev, true);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

static CUresult set_device_pool(int dev, CUmemoryPool pool)
{
	struct gp_ipool *p;
	CUresult r = pool_obj(pool, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return gp__rpc_pool_set_current(
		0, &(struct gp_in_pool_set_current){.device = (uint64_t)dev, .pool = p->remote},
		NULL);
}

GP_CUDA_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return device_pool(pool, dev, false);
}

GP_CUDA_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return device_pool(pool, dev, true);
}

GP_CUDA_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	return set_device_pool(dev, pool);
}

/* The CUDA 13 forms, by location and allocation type. */
static CUresult location_device(const CUmemLocation *loc, CUmemAllocationType type)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if ((r = device_location(loc)) != CUDA_SUCCESS)
		return r;
	if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
		return CUDA_ERROR_NOT_SUPPORTED; /* managed memory pools */
	return type == CU_MEM_ALLOCATION_TYPE_PINNED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *location,
					       CUmemAllocationType type)
{
	CUresult r = location_device(location, type);

	return r != CUDA_SUCCESS ? r : device_pool(pool, location->id, false);
}

GP_CUDA_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
					CUmemAllocationType type)
{
	CUresult r = location_device(location, type);

	return r != CUDA_SUCCESS ? r : device_pool(pool, location->id, true);
}

GP_CUDA_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
					CUmemoryPool pool)
{
	CUresult r = location_device(location, type);

	return r != CUDA_SUCCESS ? r : set_device_pool(location->id, pool);
}
