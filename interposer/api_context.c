/* api_context.c -- contexts: a local proxy per remote context, primary contexts,
 * and the per-thread current-context stack. */
#include <stdlib.h>

#include <gpupool/wire.h>

#include "cuda_cls.h"
#include "interposer.h"

#define CTX_STACK_MAX 64

/* Each thread's context stack; the top is the current context. */
static __thread struct gp_ictx *stack[CTX_STACK_MAX];
static __thread int depth;

bool gp__ctx_valid(const struct gp_ictx *c)
{
	return c && c->magic == GP_MAGIC_CTX;
}

struct gp_ictx *gp__ctx_current(void)
{
	return depth > 0 ? stack[depth - 1] : NULL;
}

CUresult gp__ctx_need(struct gp_ictx **out)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	*out = gp__ctx_current();
	if (!*out)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!gp__ctx_valid(*out) || (*out)->remote == 0)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_SUCCESS;
}

/* A context handle from the caller: NULL means the current one. */
static CUresult ctx_arg(CUcontext ctx, struct gp_ictx **out)
{
	if (!ctx)
		return gp__ctx_need(out);
	*out = (struct gp_ictx *)ctx;
	if (!gp__ctx_valid(*out))
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((*out)->remote == 0)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return gp__ready();
}

/* Takes a destroyed context off this thread's stack. */
static void unstack(struct gp_ictx *c)
{
	for (int i = depth - 1; i >= 0; i--) {
		if (stack[i] == c) {
			for (int k = i; k < depth - 1; k++)
				stack[k] = stack[k + 1];
			depth--;
		}
	}
}

GP_CUDA_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
				       unsigned int flags, CUdevice dev)
{
	struct gp_ictx *c;
	struct gp_in_ctx_create in = {.device = (uint64_t)dev, .flags = flags};
	struct gp_out_ctx_create out;
	CUresult r;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (params && (params->execAffinityParams || params->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_ctx_create(0, &in, &out);
	if (r != CUDA_SUCCESS) {
		free(c);
		return r;
	}
	c->magic = GP_MAGIC_CTX;
	c->device = dev;
	c->remote = out.ctx;
	c->flags = flags;
	c->id = gp__next_object_id();
	stack[depth++] = c;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

GP_CUDA_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

GP_CUDA_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	CUresult r;

	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__ctx_valid(c) || c->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = gp__rpc_ctx_destroy(0, &(struct gp_in_ctx_destroy){.ctx = c->remote}, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	unstack(c);
	gp__cls_context_destroyed(ctx);
	gp__range_forget_ctx(c);
	c->epoch++;
	gp__pending_clear();
	c->magic = GP_MAGIC_DEAD;
	/* Kept, not freed: a stale handle must read as dead, not as freed memory. */
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

GP_CUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (c && !gp__ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!c) {
		if (depth > 0)
			depth--;
		return CUDA_SUCCESS;
	}
	if (depth == 0)
		depth = 1;
	stack[depth - 1] = c;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = (CUcontext)gp__ctx_current();
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	stack[depth++] = c;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

GP_CUDA_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	depth--;
	if (pctx)
		*pctx = (CUcontext)stack[depth];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

GP_CUDA_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	struct gp_ictx *c;
	CUresult r;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	c = gp__ctx_current();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!gp__ctx_valid(c))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*device = c->device;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	CUresult r;

	if (!ctx)
		return cuCtxGetDevice(device);
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	*device = c->device;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct gp_ictx *c;
	CUresult r = ctx_arg(ctx, &c);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_ctx_synchronize(0, &(struct gp_in_ctx_synchronize){.ctx = c->remote}, NULL);
	/* What the device wrote to managed memory is visible to the host once this returns. */
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

GP_CUDA_EXPORT CUresult cuCtxSynchronize(void)
{
	return cuCtxSynchronize_v2(NULL);
}

GP_CUDA_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct gp_ictx *c;
	CUresult r;

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		*flags = c->flags;
	return r;
}

GP_CUDA_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct gp_ictx *c;
	CUresult r;

	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	r = ctx_arg(ctx, &c);
	if (r == CUDA_SUCCESS)
		*version = 3020; /* the context ABI every current driver reports */
	return r;
}

GP_CUDA_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	struct gp_ictx *c;
	CUresult r;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	r = ctx_arg(ctx, &c);
	if (r == CUDA_SUCCESS)
		*id = c->id;
	return r;
}

GP_CUDA_EXPORT CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
	struct gp_ictx *c;
	struct gp_out_ctx_get_limit out;
	CUresult r;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_ctx_get_limit(
		0, &(struct gp_in_ctx_get_limit){.ctx = c->remote, .limit = (uint32_t)limit}, &out);
	if (r == CUDA_SUCCESS)
		*value = (size_t)out.value;
	return r;
}

GP_CUDA_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_ctx_set_limit(0,
				     &(struct gp_in_ctx_set_limit){.ctx = c->remote,
								   .limit = (uint32_t)limit,
								   .value = value},
				     NULL);
}

GP_CUDA_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	struct gp_ictx *c;
	struct gp_out_ctx_stream_priorities out;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_ctx_stream_priorities(
		0, &(struct gp_in_ctx_stream_priorities){.ctx = c->remote}, &out);
	if (r != CUDA_SUCCESS)
		return r;
	if (least)
		*least = (int)(int64_t)out.least;
	if (greatest)
		*greatest = (int)(int64_t)out.greatest;
	return CUDA_SUCCESS;
}

/* The L1/shared split is a preference the driver may ignore ("does nothing on devices where
 * the size of the L1 cache and shared memory are fixed"); it is kept here and reported back. */
GP_CUDA_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *config)
{
	struct gp_ictx *c;
	CUresult r;

	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		*config = c->cache_config;
	return r;
}

GP_CUDA_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct gp_ictx *c;
	CUresult r;

	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		c->cache_config = config;
	return r;
}

/* ---- primary contexts ---------------------------------------------------------- */

CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*pctx = (CUcontext)&gp__client.primary[dev];
	return CUDA_SUCCESS;
}

/* Guards every primary context's refs, remote and flags (interposer.h, THREADS). */
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct gp_ictx *c;
	struct gp_out_primary_retain out;
	CUresult r = gp__primary_ctx(pctx, dev);

	if (r != CUDA_SUCCESS)
		return r;
	c = (struct gp_ictx *)*pctx;
	pthread_mutex_lock(&primary_lock);
	if (c->refs == 0) {
		r = gp__rpc_primary_retain(
			0, &(struct gp_in_primary_retain){.device = (uint64_t)dev}, &out);
		if (r == CUDA_SUCCESS)
			c->remote = out.ctx;
	}
	if (r == CUDA_SUCCESS)
		c->refs++;
	pthread_mutex_unlock(&primary_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	struct gp_ictx *c;
	CUcontext h;
	CUresult r = gp__primary_ctx(&h, dev);

	if (r != CUDA_SUCCESS)
		return r;
	c = (struct gp_ictx *)h;
	pthread_mutex_lock(&primary_lock);
	if (c->refs == 0) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (c->refs == 1) {
		r = gp__rpc_primary_release(
			0, &(struct gp_in_primary_release){.device = (uint64_t)dev}, NULL);
		if (r == CUDA_SUCCESS) {
			/* The last release destroys it, with everything it held. */
			c->refs = 0;
			c->remote = 0;
			gp__cls_context_destroyed(h);
			gp__range_forget_ctx(c);
			c->epoch++;
			gp__pending_clear();
		}
	} else {
		c->refs--;
	}
	pthread_mutex_unlock(&primary_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	struct gp_ictx *c;
	CUcontext h;
	CUresult r = gp__primary_ctx(&h, dev);

	if (r != CUDA_SUCCESS)
		return r;
	c = (struct gp_ictx *)h;
	pthread_mutex_lock(&primary_lock);
	if (c->refs > 0)
		r = gp__rpc_primary_reset(0, &(struct gp_in_primary_reset){.device = (uint64_t)dev},
					  NULL);
	if (r == CUDA_SUCCESS) {
		/* All its state is gone; it stays retained (cuda.h: reset does not release). */
		gp__cls_context_destroyed(h);
		gp__range_forget_ctx(c);
		c->epoch++;
		gp__pending_clear();
		c->flags = 0;
	}
	pthread_mutex_unlock(&primary_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	struct gp_ictx *c;
	CUcontext h;
	CUresult r = gp__primary_ctx(&h, dev);

	if (r != CUDA_SUCCESS)
		return r;
	c = (struct gp_ictx *)h;
	pthread_mutex_lock(&primary_lock);
	r = gp__rpc_primary_set_flags(
		0, &(struct gp_in_primary_set_flags){.device = (uint64_t)dev, .flags = flags},
		NULL);
	if (r == CUDA_SUCCESS)
		c->flags = flags;
	pthread_mutex_unlock(&primary_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

GP_CUDA_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct gp_ictx *c;
	CUcontext h;
	CUresult r;

	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__primary_ctx(&h, dev);
	if (r != CUDA_SUCCESS)
		return r;
	c = (struct gp_ictx *)h;
	pthread_mutex_lock(&primary_lock);
	*flags = c->flags;
	*active = c->refs > 0;
	pthread_mutex_unlock(&primary_lock);
	return CUDA_SUCCESS;
}

/*
 * cuMemGetInfo for device dev without making any context current or creating one (the NVML
 * shim, nvml_source.c): asked through the device's primary context while it is retained, else
 * through the calling thread's current context when that is on dev. CUDA_ERROR_NOT_FOUND when
 * the session holds neither; primary_lock keeps the primary context alive across the call.
 */
CUresult gp__ctx_mem_info(int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
	struct gp_out_mem_get_info out;
	struct gp_ictx *c, *cur;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	c = &gp__client.primary[dev];
	cur = gp__ctx_current();
	pthread_mutex_lock(&primary_lock);
	if (c->refs == 0 || c->remote == 0)
		c = gp__ctx_valid(cur) && cur->device == dev && cur->remote ? cur : NULL;
	if (c == NULL)
		r = CUDA_ERROR_NOT_FOUND;
	else
		r = gp__rpc_mem_get_info(0, &(struct gp_in_mem_get_info){.ctx = c->remote}, &out);
	pthread_mutex_unlock(&primary_lock);
	if (r == CUDA_SUCCESS) {
		*free_bytes = out.free;
		*total_bytes = out.total;
	}
	return r;
}
