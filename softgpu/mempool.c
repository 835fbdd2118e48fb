/* mempool.c -- memory pools and stream-ordered allocation: cuMemAllocAsync, cuMemFreeAsync,
 * cuMemPool*, the devices' default and current pools; graph memory (allocation nodes' memory,
 * cuDeviceGraphMemTrim, the graph memory attributes). */
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

/*
 * DESIGN: a pool holds chunks of its device's arena (memory.c). A chunk is LIVE while an
 * allocation uses it (it then has an allocation table entry of kind SG_MEM_POOL, so kernels,
 * copies and pointer queries see it like any device memory), FREEING from cuMemFreeAsync
 * until its stream reaches the free (the entry stays: work queued before the free may still
 * use it), and FREE after that: held by the pool, with no table entry, until an allocation
 * reuses it or the pool gives it back to the arena.
 *
 * Stream order: a chunk is reused only once FREE, that is once the freeing stream has passed
 * the free, so no access promised before the free can overlap one after the reuse. With
 * CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC (the default) any stream may then reuse it;
 * without, only the stream that freed it (stream order itself guarantees that). softgpu does
 * not track event dependencies, so REUSE_FOLLOW_EVENT_DEPENDENCIES and
 * REUSE_ALLOW_INTERNAL_DEPENDENCIES are kept and reported but allow no reuse beyond the
 * above: reusing less is always correct, it only costs memory. A free not yet reached is
 * reused only by the stream that queued it, for an allocation of the same size (CUDA's
 * same-stream reuse: whatever follows the allocation in that stream runs after the free).
 *
 * A pool gives back FREE chunks above its release threshold after a stream, event or
 * context synchronize, on cuMemPoolTrimTo, and (every pool of the device, down to nothing)
 * when the arena cannot serve an allocation.
 *
 * One mutex (pool_lock) guards every pool, chunk and device's pool pointers. It is taken
 * before the allocation table's and the arena's locks and never held while a stream op is
 * queued (stream.c's qlock is not taken under it).
 */

enum { CH_LIVE = 1, CH_FREEING, CH_FREE };

static CUresult gmem_user_free(struct sg_gmem *m, struct sg_stream *s);

struct chunk {
	uint64_t base;
	uint64_t cap;	      /* bytes of the arena */
	int state;	      /* CH_* */
	uint64_t free_stream; /* FREEING, FREE: the id of the stream whose free releases it */
	uint64_t gen;	      /* moves at each use, so a free queued for an earlier one misses */
	struct sg_mempool *pool;
	struct chunk *next;
};

struct sg_mempool {
	struct sg_device *dev;
	bool is_default;
	bool destroyed; /* cuMemPoolDestroy'd: gone once its last chunk is */
	uint64_t threshold;
	int reuse_follow, reuse_opportunistic, reuse_internal;
	uint64_t reserved, reserved_high, used, used_high;
	uint64_t max_size; /* 0: no bound but the device's */
	struct chunk *chunks;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every pool that lives, for the synchronization points (pool_lock). */
static struct sg_mempool **pools;
static size_t npools, cap_pools;

/* ---- pools ---------------------------------------------------------------------- */

static struct sg_mempool *pool_new(struct sg_device *dev, bool is_default, uint64_t max_size)
{
	struct sg_mempool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	if (npools == cap_pools) {
		size_t cap = cap_pools ? cap_pools * 2 : 8;
		struct sg_mempool **n = realloc(pools, cap * sizeof(*n));

		if (n == NULL) {
			free(p);
			return NULL;
		}
		pools = n;
		cap_pools = cap;
	}
	if (sg_handle_add(p, SG_K_MEMPOOL)) {
		free(p);
		return NULL;
	}
	p->dev = dev;
	p->is_default = is_default;
	p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
	p->max_size = max_size;
	pools[npools++] = p;
	return p;
}

/* With pool_lock: gives back FREE chunks while the pool holds more than keep bytes. */
static void pool_release(struct sg_mempool *p, uint64_t keep)
{
	struct chunk **pp = &p->chunks;

	while (*pp && p->reserved > keep) {
		struct chunk *c = *pp;

		if (c->state != CH_FREE) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		sg_mem_unreserve(p->dev, c->base, c->cap);
		p->reserved -= c->cap;
		free(c);
	}
}

/* With pool_lock: a destroyed pool that holds nothing any more goes. */
static void pool_reap(struct sg_mempool *p)
{
	if (!p->destroyed)
		return;
	pool_release(p, 0);
	if (p->chunks)
		return;
	for (size_t i = 0; i < npools; i++) {
		if (pools[i] == p) {
			pools[i] = pools[--npools];
			break;
		}
	}
	free(p);
}

/* With pool_lock: the device's default pool, made on first use; NULL when out of memory. */
static struct sg_mempool *default_pool(struct sg_device *dev)
{
	if (dev->default_pool == NULL)
		dev->default_pool = pool_new(dev, true, 0);
	if (dev->mem_pool == NULL)
		dev->mem_pool = dev->default_pool;
	return dev->default_pool;
}

/* A pool handle from the program: live and not destroyed (with pool_lock). */
static CUresult pool_check(CUmemoryPool h, struct sg_mempool **out)
{
	struct sg_mempool *p = (struct sg_mempool *)h;

	if (h == NULL || !sg_handle_ok(p, SG_K_MEMPOOL) || p->destroyed)
		return CUDA_ERROR_INVALID_VALUE;
	*out = p;
	return CUDA_SUCCESS;
}

static void use(struct sg_mempool *p, uint64_t bytes)
{
	p->used += bytes;
	if (p->used > p->used_high)
		p->used_high = p->used;
}

/* ---- allocation and free ----------------------------------------------------------- */

/* With pool_lock: a FREE chunk this allocation may reuse, the smallest that fits and wastes
 * at most as much as it serves. */
static struct chunk *reusable(struct sg_mempool *p, uint64_t size, uint64_t stream)
{
	struct chunk *best = NULL;

	for (struct chunk *c = p->chunks; c; c = c->next) {
		if (c->state != CH_FREE || c->cap < size || c->cap / 2 > size)
			continue;
		if (!p->reuse_opportunistic && c->free_stream != stream)
			continue;
		if (!best || c->cap < best->cap)
			best = c;
	}
	return best;
}

/* With pool_lock: every pool of the device gives back what it does not use. */
static void release_device(struct sg_device *dev)
{
	for (size_t i = 0; i < npools; i++)
		if (pools[i]->dev == dev)
			pool_release(pools[i], 0);
}

/* With pool_lock: a chunk being freed on this very stream, by an allocation of the same size:
 * CUDA's same-stream reuse (everything after the allocation in the stream runs after the
 * free). The size must match so that the allocation table's entry serves both uses. */
static struct chunk *pending_reuse(struct sg_mempool *p, uint64_t size, uint64_t stream)
{
	for (struct chunk *c = p->chunks; c; c = c->next) {
		struct sg_alloc a;

		if (c->state == CH_FREEING && c->free_stream == stream && c->cap >= size &&
		    sg_mem_find(c->base, &a) && a.base == c->base && a.size == size)
			return c;
	}
	return NULL;
}

static bool fits_max(const struct sg_mempool *p, uint64_t size)
{
	return size <= p->max_size && p->reserved <= p->max_size - size;
}

static CUresult pool_alloc(struct sg_mempool *p, struct sg_ctx *ctx, struct sg_stream *s,
			   uint64_t size, uint64_t *dptr)
{
	struct chunk *c = pending_reuse(p, size, s->id);
	CUresult r = CUDA_SUCCESS;
	uint64_t base, cap;

	if (c) {
		/* its entry stays (same base and size) and it was still counted as used; the
		 * free queued for its last use finds another generation and does nothing */
		c->state = CH_LIVE;
		c->gen++;
		*dptr = c->base;
		return CUDA_SUCCESS;
	}
	c = reusable(p, size, s->id);
	if (c == NULL) {
		/* a pool made with a maximum size holds at most that */
		if (p->max_size && !fits_max(p, size))
			pool_release(p, 0);
		if (p->max_size && !fits_max(p, size))
			return CUDA_ERROR_OUT_OF_MEMORY;
		r = sg_mem_reserve(p->dev, size, &base, &cap);
		if (r == CUDA_ERROR_OUT_OF_MEMORY) {
			/* as CUDA does: memory the pools hold unused is given back first */
			release_device(p->dev);
			r = sg_mem_reserve(p->dev, size, &base, &cap);
		}
		if (r)
			return r;
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			sg_mem_unreserve(p->dev, base, cap);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		*c = (struct chunk){.base = base, .cap = cap, .state = CH_FREE, .pool = p};
		c->next = p->chunks;
		p->chunks = c;
		p->reserved += cap;
		if (p->reserved > p->reserved_high)
			p->reserved_high = p->reserved;
	}
	r = sg_mem_map(ctx, c->base, size, c);
	if (r)
		return r; /* the chunk stays FREE in the pool */
	c->state = CH_LIVE;
	c->gen++;
	use(p, c->cap);
	*dptr = c->base;
	return CUDA_SUCCESS;
}

/* The stream of a stream-ordered call. While it is being captured, an allocation or free
 * becomes an allocation or free node (capture.c): *cap is then its CUresult; else -1. */
static CUresult ordered_stream(CUstream h, bool pt, struct sg_ctx **ctx, struct sg_stream **s,
			       uint64_t alloc_size, uint64_t free_ptr, uint64_t *dptr, int *cap)
{
	CUresult r = sg_stream_resolve(h, pt, ctx, s);

	*cap = SG_NOT_CAPTURED;
	if (r)
		return r;
	if ((r = (CUresult)__atomic_load_n(&(*ctx)->sticky, __ATOMIC_ACQUIRE)))
		return r;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE))
		*cap = sg_capture_mem(*s, alloc_size, free_ptr, dptr);
	return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool h, CUstream hs, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_mempool *p;
	uint64_t d = 0;
	int cap;
	CUresult r;

	if (dptr == NULL || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = ordered_stream(hs, pt, &ctx, &s, size, 0, &d, &cap);
	if (r)
		return r;
	if (cap != SG_NOT_CAPTURED) {
		if (cap == CUDA_SUCCESS)
			*dptr = (CUdeviceptr)d;
		return (CUresult)cap;
	}
	pthread_mutex_lock(&pool_lock);
	if (h == NULL) {
		p = default_pool(ctx->dev) ? ctx->dev->mem_pool : NULL;
		r = p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	} else if ((r = pool_check(h, &p)) == CUDA_SUCCESS && p->dev != ctx->dev) {
		r = CUDA_ERROR_INVALID_VALUE; /* no peer access: the stream's device only */
	}
	if (r == CUDA_SUCCESS)
		r = pool_alloc(p, ctx, s, size, &d);
	pthread_mutex_unlock(&pool_lock);
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)d;
	return r;
}

/* With pool_lock: the chunk of the pool allocation starting at dptr, or NULL. */
static struct chunk *chunk_at(uint64_t dptr, struct sg_alloc *a)
{
	if (!sg_mem_find(dptr, a) || a->base != dptr || a->kind != SG_MEM_POOL)
		return NULL;
	return a->owner;
}

/* With pool_lock: a LIVE or FREEING chunk becomes FREE; its entry goes. */
static void chunk_free(struct chunk *c, uint64_t stream)
{
	struct sg_mempool *p = c->pool;

	sg_mem_unmap(c->base);
	c->state = CH_FREE;
	c->free_stream = stream;
	p->used -= c->cap;
	pool_reap(p);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hs, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_alloc a;
	struct sg_op *op;
	struct chunk *c;
	struct sg_gmem *m;
	uint64_t unused;
	int cap;
	CUresult r;

	if (dptr == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = ordered_stream(hs, pt, &ctx, &s, 0, dptr, &unused, &cap);
	if (r)
		return r;
	if (cap != SG_NOT_CAPTURED)
		return (CUresult)cap;
	if ((m = sg_gmem_find(dptr)))
		return gmem_user_free(m, s);
	op = sg_op_new(SG_OP_MEMFREE);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&pool_lock);
	c = chunk_at(dptr, &a);
	if (c && c->state == CH_LIVE) {
		c->state = CH_FREEING; /* a second free of it is refused from now on */
		c->free_stream = s->id;
		op->u.mfree.pooled = true;
		op->u.mfree.gen = c->gen;
	} else if (c || !sg_mem_find(dptr, &a) || a.base != dptr || a.kind != SG_MEM_DEVICE) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	if (r) {
		sg_op_free(op);
		return r;
	}
	op->u.mfree.dptr = dptr;
	op->u.mfree.ctx = a.ctx;
	op->u.mfree.stream = s->id;
	r = sg_stream_submit(s, op);
	if (r && c) {
		pthread_mutex_lock(&pool_lock);
		c->state = CH_LIVE;
		pthread_mutex_unlock(&pool_lock);
	}
	return r;
}

void sg_mempool_free_run(struct sg_op *op)
{
	struct sg_alloc a;
	struct chunk *c;

	if (!op->u.mfree.pooled) {
		/* a cuMemAlloc allocation freed in stream order */
		sg_mem_free(op->u.mfree.ctx, op->u.mfree.dptr, SG_MEM_DEVICE);
		return;
	}
	pthread_mutex_lock(&pool_lock);
	c = chunk_at(op->u.mfree.dptr, &a);
	if (c && c->state == CH_FREEING && c->gen == op->u.mfree.gen)
		chunk_free(c, op->u.mfree.stream);
	pthread_mutex_unlock(&pool_lock);
}

CUresult sg_mempool_free_now(uint64_t dptr)
{
	struct sg_alloc a;
	struct chunk *c;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&pool_lock);
	c = chunk_at(dptr, &a);
	if (c && c->state == CH_LIVE) {
		chunk_free(c, 0);
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&pool_lock);
	return r;
}

void sg_mempool_sync_release(void)
{
	pthread_mutex_lock(&pool_lock);
	for (size_t i = 0; i < npools; i++)
		pool_release(pools[i], pools[i]->threshold);
	pthread_mutex_unlock(&pool_lock);
}

void sg_mempool_forget_ctx(struct sg_ctx *ctx)
{
	pthread_mutex_lock(&pool_lock);
	for (size_t i = npools; i-- > 0;) {
		struct sg_mempool *p = pools[i];

		for (struct chunk *c = p->chunks, *n; c; c = n) {
			struct sg_alloc a;

			n = c->next;
			if (c->state != CH_FREE && sg_mem_find(c->base, &a) && a.ctx == ctx) {
				sg_mem_unmap(c->base);
				c->state = CH_FREE;
				c->free_stream = 0;
				p->used -= c->cap;
			}
		}
		pool_reap(p); /* may remove pools[i] */
	}
	pthread_mutex_unlock(&pool_lock);
}

CUmemoryPool sg_mempool_of(uint64_t base)
{
	struct sg_alloc a;
	struct chunk *c;
	CUmemoryPool p;

	pthread_mutex_lock(&pool_lock);
	c = chunk_at(base, &a);
	p = c ? (CUmemoryPool)c->pool : NULL;
	pthread_mutex_unlock(&pool_lock);
	return p;
}

/* ---- the API: stream-ordered allocation ------------------------------------------------ */

SG_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, false);
}

SG_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					   CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, pool, hStream, false);
}

SG_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, false);
}

SG_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
SG_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, true);
}

SG_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
						CUmemoryPool pool, CUstream hStream);
SG_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
						CUmemoryPool pool, CUstream hStream)
{
	if (pool == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, pool, hStream, true);
}

SG_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
SG_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, true);
}

/* ---- the API: pools ------------------------------------------------------------------ */

/* A device location: what every pool of softgpu's is. */
static CUresult device_location(const CUmemLocation *loc, struct sg_device **dev)
{
	if (loc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CUDA_ERROR_NOT_SUPPORTED; /* host memory pools */
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (sg_device_get(loc->id, dev))
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	static const unsigned char zero[sizeof(props->reserved)];
	struct sg_device *dev;
	struct sg_mempool *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (pool == NULL || props == NULL || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    memcmp(props->reserved, zero, sizeof(zero)) || props->win32SecurityAttributes)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = device_location(&props->location, &dev)))
		return r;
	if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
		return CUDA_ERROR_NOT_SUPPORTED; /* pools shared between processes */
	if (props->usage)
		return CUDA_ERROR_NOT_SUPPORTED; /* hardware decompression */
	pthread_mutex_lock(&pool_lock);
	p = pool_new(dev, false, props->maxSize);
	pthread_mutex_unlock(&pool_lock);
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	struct sg_mempool *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	if (r == CUDA_SUCCESS && p->is_default)
		r = CUDA_ERROR_INVALID_VALUE; /* a device's default pool is not destroyed */
	if (r == CUDA_SUCCESS) {
		/* allocations still out stay usable; the pool goes with the last of them */
		sg_handle_del(p);
		p->destroyed = true;
		if (p->dev->mem_pool == p)
			p->dev->mem_pool = p->dev->default_pool;
		pool_reap(p);
	}
	pthread_mutex_unlock(&pool_lock);
	return r;
}

SG_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	struct sg_mempool *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	if (r == CUDA_SUCCESS)
		pool_release(p, minBytesToKeep);
	pthread_mutex_unlock(&pool_lock);
	return r;
}

static CUresult set_attr(struct sg_mempool *p, CUmemPool_attribute attr, const void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		p->reuse_follow = *(const int *)value != 0;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		p->reuse_opportunistic = *(const int *)value != 0;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse_internal = *(const int *)value != 0;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->threshold = *(const cuuint64_t *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		if (*(const cuuint64_t *)value != 0)
			return CUDA_ERROR_INVALID_VALUE; /* only a reset */
		p->reserved_high = p->reserved;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(const cuuint64_t *)value != 0)
			return CUDA_ERROR_INVALID_VALUE;
		p->used_high = p->used;
		return CUDA_SUCCESS;
	default: /* the current sizes are read-only */
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult get_attr(const struct sg_mempool *p, CUmemPool_attribute attr, void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		*(int *)value = p->reuse_follow;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		*(int *)value = p->reuse_opportunistic;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = p->reuse_internal;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(cuuint64_t *)value = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = p->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = p->used_high;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct sg_mempool *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	if (r == CUDA_SUCCESS)
		r = set_attr(p, attr, value);
	pthread_mutex_unlock(&pool_lock);
	return r;
}

SG_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct sg_mempool *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	if (r == CUDA_SUCCESS)
		r = get_attr(p, attr, value);
	pthread_mutex_unlock(&pool_lock);
	return r;
}

/*
 * softgpu has no peer access, so a pool's memory is its own device's: that device keeps
 * read-write access, and no other can be given any.
 */
SG_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
	struct sg_mempool *p;
	struct sg_device *dev;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (map == NULL && count)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++) {
		unsigned f = map[i].flags;

		if (f != CU_MEM_ACCESS_FLAGS_PROT_NONE && f != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			r = CUDA_ERROR_INVALID_VALUE;
		else if ((r = device_location(&map[i].location, &dev)) != CUDA_SUCCESS)
			;
		else if (dev == p->dev && f != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			r = CUDA_ERROR_INVALID_VALUE; /* the pool's own device keeps its access */
		else if (dev != p->dev && f != CU_MEM_ACCESS_FLAGS_PROT_NONE)
			r = CUDA_ERROR_INVALID_DEVICE; /* peer access: not implemented */
	}
	pthread_mutex_unlock(&pool_lock);
	return r;
}

SG_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
				      CUmemLocation *location)
{
	struct sg_mempool *p;
	struct sg_device *dev;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = device_location(location, &dev)))
		return r;
	pthread_mutex_lock(&pool_lock);
	r = pool_check(memPool, &p);
	if (r == CUDA_SUCCESS)
		*flags = dev == p->dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
				       : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	pthread_mutex_unlock(&pool_lock);
	return r;
}

/* ---- the API: a device's pools ---------------------------------------------------------- */

static CUresult device_pool(CUmemoryPool *out, struct sg_device *dev, bool current)
{
	struct sg_mempool *p;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	p = default_pool(dev);
	if (p && current)
		p = dev->mem_pool;
	pthread_mutex_unlock(&pool_lock);
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

static CUresult set_device_pool(struct sg_device *dev, CUmemoryPool pool)
{
	struct sg_mempool *p;
	CUresult r;

	pthread_mutex_lock(&pool_lock);
	r = pool_check(pool, &p);
	if (r == CUDA_SUCCESS && p->dev != dev)
		r = CUDA_ERROR_INVALID_DEVICE;
	if (r == CUDA_SUCCESS && default_pool(dev) == NULL)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS)
		dev->mem_pool = p;
	pthread_mutex_unlock(&pool_lock);
	return r;
}

SG_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	return r ? r : device_pool(pool_out, d, false);
}

SG_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	return r ? r : device_pool(pool, d, true);
}

SG_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	return r ? r : set_device_pool(d, pool);
}

/* The CUDA 13 forms, by location and allocation type. */
static CUresult location_device(CUmemLocation *loc, CUmemAllocationType type,
				struct sg_device **dev)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if ((r = device_location(loc, dev)))
		return r;
	if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
		return CUDA_ERROR_NOT_SUPPORTED; /* managed memory pools */
	return type == CU_MEM_ALLOCATION_TYPE_PINNED ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
					  CUmemAllocationType type)
{
	struct sg_device *d;
	CUresult r = location_device(location, type, &d);

	return r ? r : device_pool(pool_out, d, false);
}

SG_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
				   CUmemAllocationType type)
{
	struct sg_device *d;
	CUresult r = location_device(location, type, &d);

	return r ? r : device_pool(pool, d, true);
}

SG_EXPORT CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
				   CUmemoryPool pool)
{
	struct sg_device *d;
	CUresult r = location_device(location, type, &d);

	return r ? r : set_device_pool(d, pool);
}

/* ---- graph memory: the memory of allocation nodes (graph.c, capture.c) ---------------- */

/*
 * DESIGN: an allocation node's memory is a VMM reservation (vmm.c) made when the node is
 * made, so its address is fixed from then on, across instantiations and launches. Its
 * physical memory (a cuMemCreate allocation, counted against the device like any) is
 * made when a launch of a graph holding the node is queued and kept, as CUDA's graph
 * memory is, until cuDeviceGraphMemTrim or the node's last holder goes. The node running
 * maps it (the address then works for kernels, copies and pointer queries); a free node,
 * cuMemFreeAsync or a relaunch with AUTO_FREE_ON_LAUNCH running unmaps it. A node and the
 * private copies instantiation makes of it share one struct sg_gmem, counted; the mapping
 * counts too, so memory never freed outlives its graph and executables, as in CUDA, until
 * cuMemFree or cuMemFreeAsync.
 *
 * The device's graph memory attributes, in whole granules: "reserved" counts the bytes
 * with physical memory, "used" those of them an executable holds (or still mapped after
 * its executable went). Trim gives back the physical memory no executable holds. Each
 * allocation node has its own physical memory: softgpu does not share it between graphs
 * whose allocations never overlap in time, as CUDA may. gmem_lock guards every sg_gmem and the
 * counters; vmm.c's lock is taken inside it, never the other way round.
 */

#define GMEM_MAX_DEVICES 64

struct sg_gmem {
	struct sg_device *dev;
	uint64_t va, size, span;	   /* span: size rounded up to the VMM granule */
	uint8_t *host;			   /* the reservation's host shadow (vmm.c) */
	CUmemGenericAllocationHandle phys; /* 0: none yet, or trimmed */
	bool mapped;
	unsigned pending; /* launches queued whose allocation has not run yet */
	bool graph_frees; /* its own graph frees it: it never outlives a launch */
	bool claimed;	  /* an executable of its graph exists */
	bool launched;	  /* a launch was queued once: unmapped from then on means freed */
	int refs;
	struct sg_gmem *next;
};

static pthread_mutex_t gmem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sg_gmem *gmems;
static struct gmem_stats {
	uint64_t used, used_high, reserved, reserved_high;
} gstats[GMEM_MAX_DEVICES];

static struct gmem_stats *stats_of(const struct sg_device *dev)
{
	return &gstats[dev->ordinal % GMEM_MAX_DEVICES];
}

/* With gmem_lock: dev's counters counted again, after a change; the highs follow. */
static void gmem_count(const struct sg_device *dev)
{
	struct gmem_stats *st = stats_of(dev);

	st->used = st->reserved = 0;
	for (struct sg_gmem *m = gmems; m; m = m->next) {
		if (m->dev != dev || m->phys == 0)
			continue;
		st->reserved += m->span;
		if (m->claimed || m->mapped)
			st->used += m->span;
	}
	if (st->used > st->used_high)
		st->used_high = st->used;
	if (st->reserved > st->reserved_high)
		st->reserved_high = st->reserved;
}

CUresult sg_gmem_new(struct sg_device *dev, uint64_t size, struct sg_gmem **out, uint64_t *va)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, dev->ordinal}};
	struct sg_gmem *m;
	size_t gran;
	CUdeviceptr p;
	CUresult r;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	if (r)
		return r;
	if (size > dev->mem_total)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->dev = dev;
	m->size = size;
	m->span = (size + gran - 1) / gran * gran;
	r = cuMemAddressReserve(&p, m->span, 0, 0, 0);
	if (r) {
		free(m);
		return r;
	}
	m->va = p;
	m->host = sg_vmm_shadow(p);
	m->refs = 1;
	pthread_mutex_lock(&gmem_lock);
	m->next = gmems;
	gmems = m;
	pthread_mutex_unlock(&gmem_lock);
	*out = m;
	*va = p;
	return CUDA_SUCCESS;
}

void sg_gmem_ref(struct sg_gmem *m)
{
	pthread_mutex_lock(&gmem_lock);
	m->refs++;
	pthread_mutex_unlock(&gmem_lock);
}

/* With gmem_lock: unmaps m. */
static void gmem_unmap(struct sg_gmem *m)
{
	if (!m->mapped)
		return;
	cuMemUnmap(m->va, m->span);
	m->mapped = false;
	gmem_count(m->dev);
}

/* With gmem_lock: gives m's physical memory back (it is not mapped). */
static void gmem_release(struct sg_gmem *m)
{
	if (m->phys == 0)
		return;
	cuMemRelease(m->phys);
	m->phys = 0;
	gmem_count(m->dev);
}

void sg_gmem_unref(struct sg_gmem *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&gmem_lock);
	if (--m->refs > 0) {
		pthread_mutex_unlock(&gmem_lock);
		return;
	}
	for (struct sg_gmem **pp = &gmems; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	m->claimed = false;
	gmem_unmap(m);
	gmem_release(m);
	cuMemAddressFree(m->va, m->span);
	pthread_mutex_unlock(&gmem_lock);
	free(m);
}

uint64_t sg_gmem_va(const struct sg_gmem *m)
{
	return m->va;
}

void sg_gmem_set_graph_frees(struct sg_gmem *m)
{
	pthread_mutex_lock(&gmem_lock);
	m->graph_frees = true;
	pthread_mutex_unlock(&gmem_lock);
}

_Thread_local bool sg_gmem_building;

/*
 * The shadow of graph memory that is not mapped, for copies and memsets that reach it later:
 * nodes being made (sg_gmem_building), stream work queued behind a launch whose allocation
 * has not run yet (pending), and memory no launch has allocated yet. Once a launch allocated
 * it, unmapped memory is freed (a free node, cuMemFreeAsync, trim) and reads as freed device
 * memory does: no host address, so the call fails.
 */
uint8_t *sg_gmem_host(uint64_t addr, uint64_t size)
{
	uint8_t *h = NULL;

	if (__atomic_load_n(&gmems, __ATOMIC_ACQUIRE) == NULL)
		return NULL;
	pthread_mutex_lock(&gmem_lock);
	for (struct sg_gmem *m = gmems; m; m = m->next)
		if (addr - m->va < m->size && size <= m->size - (addr - m->va) && m->host &&
		    (m->mapped || m->pending || !m->launched || sg_gmem_building))
			h = m->host + (addr - m->va);
	pthread_mutex_unlock(&gmem_lock);
	return h;
}

bool sg_gmem_claim(struct sg_gmem *m)
{
	bool ok;

	pthread_mutex_lock(&gmem_lock);
	ok = !m->claimed;
	m->claimed = true;
	gmem_count(m->dev);
	pthread_mutex_unlock(&gmem_lock);
	return ok;
}

void sg_gmem_unclaim(struct sg_gmem *m)
{
	pthread_mutex_lock(&gmem_lock);
	m->claimed = false;
	gmem_count(m->dev);
	pthread_mutex_unlock(&gmem_lock);
}

struct sg_gmem *sg_gmem_find(uint64_t va)
{
	struct sg_gmem *m;

	pthread_mutex_lock(&gmem_lock);
	for (m = gmems; m && m->va != va; m = m->next)
		;
	pthread_mutex_unlock(&gmem_lock);
	return m;
}

CUresult sg_gmem_prepare(struct sg_gmem *m, bool auto_free)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, m->dev->ordinal}};
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&gmem_lock);
	if (!m->graph_frees && !auto_free && (m->mapped || m->pending)) {
		r = CUDA_ERROR_INVALID_VALUE; /* its last allocation was never freed */
		goto out;
	}
	if (m->phys == 0) {
		r = cuMemCreate(&m->phys, m->span, &prop, 0);
		if (r) {
			m->phys = 0;
			goto out;
		}
		gmem_count(m->dev);
	}
	m->pending++;
	m->launched = true;
out:
	pthread_mutex_unlock(&gmem_lock);
	return r;
}

void sg_gmem_unprepare(struct sg_gmem *m)
{
	pthread_mutex_lock(&gmem_lock);
	m->pending--;
	pthread_mutex_unlock(&gmem_lock);
}

CUresult sg_gmem_alloc_run(struct sg_gmem *m)
{
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, m->dev->ordinal},
			       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&gmem_lock);
	m->pending--;
	if (!m->mapped) { /* mapped: a relaunch with AUTO_FREE_ON_LAUNCH reuses it */
		r = cuMemMap(m->va, m->span, 0, m->phys, 0);
		if (r == CUDA_SUCCESS && (r = cuMemSetAccess(m->va, m->span, &acc, 1)))
			cuMemUnmap(m->va, m->span);
		if (r == CUDA_SUCCESS) {
			m->mapped = true;
			m->refs++; /* the mapping's: it outlives its graph until freed, as in CUDA */
			gmem_count(m->dev);
		}
	}
	pthread_mutex_unlock(&gmem_lock);
	return r;
}

void sg_gmem_free_run(struct sg_gmem *m)
{
	bool was;

	pthread_mutex_lock(&gmem_lock);
	was = m->mapped;
	gmem_unmap(m);
	pthread_mutex_unlock(&gmem_lock);
	if (was)
		sg_gmem_unref(m); /* the mapping's reference */
}

/* A cuMemFreeAsync of an allocation node's memory: its op runs the free. */
static void gmem_free_op(struct sg_stream *s, void *data, int sticky)
{
	(void)s;
	(void)sticky;
	sg_gmem_free_run(data);
}

static void gmem_op_done(void *data)
{
	sg_gmem_unref(data);
}

/* cuMemFreeAsync / cuMemFree of dptr, the address of an allocation node's memory: queued on
 * s (NULL: at once); INVALID_VALUE when it is not allocated now or its graph frees it. */
static CUresult gmem_user_free(struct sg_gmem *m, struct sg_stream *s)
{
	struct sg_op *op;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&gmem_lock);
	if (m->graph_frees || !(m->mapped || m->pending))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		m->refs++;
	pthread_mutex_unlock(&gmem_lock);
	if (r)
		return r;
	if (s == NULL) {
		sg_gmem_free_run(m);
		sg_gmem_unref(m);
		return CUDA_SUCCESS;
	}
	op = sg_op_new(SG_OP_GRAPHFN);
	if (op == NULL) {
		sg_gmem_unref(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	op->u.gfn.run = gmem_free_op;
	op->u.gfn.done = gmem_op_done;
	op->u.gfn.data = m;
	return sg_stream_submit(s, op);
}

bool sg_gmem_free_sync(uint64_t dptr, CUresult *r)
{
	struct sg_gmem *m = sg_gmem_find(dptr);

	if (m == NULL)
		return false;
	*r = gmem_user_free(m, NULL);
	return true;
}

static CUresult graph_dev(CUdevice device, struct sg_device **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (device < 0 || device >= sg_ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = &sg_devices[device];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
	struct sg_device *dev;
	CUresult r = graph_dev(device, &dev);

	if (r)
		return r;
	pthread_mutex_lock(&gmem_lock);
	for (struct sg_gmem *m = gmems; m; m = m->next)
		if (m->dev == dev && !m->claimed && !m->mapped && !m->pending)
			gmem_release(m);
	pthread_mutex_unlock(&gmem_lock);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						void *value)
{
	struct sg_device *dev;
	struct gmem_stats *st;
	CUresult r = graph_dev(device, &dev);
	uint64_t v;

	if (r)
		return r;
	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	st = stats_of(dev);
	pthread_mutex_lock(&gmem_lock);
	switch (attr) {
	case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
		v = st->used;
		break;
	case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
		v = st->used_high;
		break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
		v = st->reserved;
		break;
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
		v = st->reserved_high;
		break;
	default:
		r = CUDA_ERROR_INVALID_VALUE;
		break;
	}
	pthread_mutex_unlock(&gmem_lock);
	if (r == CUDA_SUCCESS)
		memcpy(value, &v, sizeof(v));
	return r;
}

SG_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						void *value)
{
	struct sg_device *dev;
	struct gmem_stats *st;
	CUresult r = graph_dev(device, &dev);
	uint64_t v;

	if (r)
		return r;
	if (value == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&v, value, sizeof(v));
	if (v != 0)
		return CUDA_ERROR_INVALID_VALUE; /* a high watermark can only be reset */
	st = stats_of(dev);
	pthread_mutex_lock(&gmem_lock);
	if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
		st->used_high = st->used;
	else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
		st->reserved_high = st->reserved;
	else
		r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&gmem_lock);
	return r;
}
