/* context.c -- contexts, primary contexts and each thread's current-context stack. */
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

/*
 * DESIGN: each host thread has its own stack of current contexts (a plain
 * thread-local array). Context handles are checked against the handle
 * registry before use, so a destroyed context is CUDA_ERROR_INVALID_CONTEXT
 * in every thread, never a dangling pointer. A device's primary context is
 * one struct that lives as long as the process: retaining it the first time
 * activates it (default stream, fresh state), releasing the last reference or
 * resetting it frees everything it owns. Lists hanging off a context are
 * protected by ctx->lock.
 */

#define STACK_MAX 64

static __thread struct sg_ctx *stack[STACK_MAX];
static __thread int depth;
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_ctx_id = 1;

static CUresult activate(struct sg_ctx *c)
{
	CUresult r = sg_stream_new(c, 0, 0, &c->null_stream);

	if (r)
		return r;
	c->null_stream->is_null = true;
	c->limit_stack = 1024;
	c->limit_printf = 1 << 20;
	c->limit_heap = 8 << 20;
	c->heap_used = 0;
	c->sticky = 0;
	c->active = true;
	__atomic_add_fetch(&c->dev->contexts, 1, __ATOMIC_RELAXED);
	c->id = __atomic_fetch_add(&next_ctx_id, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

static struct sg_ctx *ctx_new(struct sg_device *dev, unsigned flags, bool primary)
{
	struct sg_ctx *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->dev = dev;
	c->flags = flags;
	c->primary = primary;
	pthread_mutex_init(&c->lock, NULL);
	if (sg_handle_add(c, SG_K_CTX)) {
		free(c);
		return NULL;
	}
	return c;
}

static sg_ctx_hook release_hook;

void sg_ctx_set_release_hook(sg_ctx_hook fn)
{
	__atomic_store_n(&release_hook, fn, __ATOMIC_RELEASE);
}

void sg_ctx_release_resources(struct sg_ctx *c)
{
	struct sg_module *m;
	sg_ctx_hook hook = __atomic_load_n(&release_hook, __ATOMIC_ACQUIRE);

	sg_ctx_sync(c);
	if (hook)
		hook((CUcontext)c);
	sg_streams_release(c);
	pthread_mutex_lock(&c->lock);
	m = c->modules;
	c->modules = NULL;
	pthread_mutex_unlock(&c->lock);
	while (m) {
		struct sg_module *n = m->next;

		sg_module_free(m);
		m = n;
	}
	sg_mempool_forget_ctx(c);
	sg_mem_free_ctx(c);
	if (c->active)
		__atomic_sub_fetch(&c->dev->contexts, 1, __ATOMIC_RELAXED);
	c->active = false;
}

void sg_ctx_set_sticky(struct sg_ctx *c, int err)
{
	__atomic_store_n(&c->sticky, err, __ATOMIC_RELEASE);
}

static CUresult check(struct sg_ctx *c, bool check_sticky)
{
	int sticky;

	if (!sg_handle_ok(c, SG_K_CTX) || !c->active)
		return CUDA_ERROR_INVALID_CONTEXT;
	sticky = __atomic_load_n(&c->sticky, __ATOMIC_ACQUIRE);
	if (check_sticky && sticky)
		return (CUresult)sticky;
	return CUDA_SUCCESS;
}

CUresult sg_ctx_current(struct sg_ctx **out, bool check_sticky)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (depth == 0 || stack[depth - 1] == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = check(stack[depth - 1], check_sticky);
	if (r == CUDA_SUCCESS)
		*out = stack[depth - 1];
	return r;
}

CUresult sg_ctx_resolve(CUcontext h, struct sg_ctx **out, bool check_sticky)
{
	CUresult r;

	if (h == NULL)
		return sg_ctx_current(out, check_sticky);
	r = sg_inited();
	if (r)
		return r;
	r = check((struct sg_ctx *)h, check_sticky);
	if (r == CUDA_SUCCESS)
		*out = (struct sg_ctx *)h;
	return r;
}

static CUresult create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	struct sg_device *d;
	struct sg_ctx *c;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (depth >= STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = ctx_new(d, flags, false);
	if (c == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = activate(c);
	if (r) {
		sg_handle_del(c);
		free(c);
		return r;
	}
	stack[depth++] = c;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
				  CUdevice dev)
{
	if (params &&
	    (params->execAffinityParams || params->numExecAffinityParams || params->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	return create(pctx, flags, dev);
}

SG_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				  unsigned int flags, CUdevice dev);
SG_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				  unsigned int flags, CUdevice dev)
{
	if (numParams > 0 || paramsArray)
		return CUDA_ERROR_NOT_SUPPORTED;
	return create(pctx, flags, dev);
}

SG_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
SG_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return create(pctx, flags, dev);
}

static void remove_from_stack(struct sg_ctx *c)
{
	int j = 0;

	for (int i = 0; i < depth; i++)
		if (stack[i] != c)
			stack[j++] = stack[i];
	depth = j;
}

SG_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	struct sg_ctx *c = (struct sg_ctx *)ctx;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(c, SG_K_CTX))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	sg_ctx_release_resources(c);
	sg_handle_del(c);
	remove_from_stack(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct sg_ctx *c = (struct sg_ctx *)ctx;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (c && !sg_handle_ok(c, SG_K_CTX))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (c == NULL) {
		if (depth > 0)
			depth--;
		return CUDA_SUCCESS;
	}
	if (depth == 0)
		depth = 1;
	stack[depth - 1] = c;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = depth > 0 ? (CUcontext)stack[depth - 1] : NULL;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	struct sg_ctx *c = (struct sg_ctx *)ctx;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(c, SG_K_CTX))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (depth >= STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	stack[depth++] = c;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	depth--;
	if (pctx)
		*pctx = (CUcontext)stack[depth];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*device = c->dev->ordinal;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_resolve(ctx, &c, false);

	if (r)
		return r;
	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*device = c->dev->ordinal;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSynchronize(void)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if ((r = sg_capture_unsafe()))
		return r;
	r = sg_ctx_sync(c);
	sg_mempool_sync_release(); /* pools give back what they hold above their threshold */
	return r;
}

SG_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_resolve(ctx, &c, false);

	if (r)
		return r;
	if ((r = sg_capture_unsafe()))
		return r;
	r = sg_ctx_sync(c);
	sg_mempool_sync_release(); /* pools give back what they hold above their threshold */
	return r;
}

SG_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = c->flags;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetFlags(unsigned int flags)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	c->flags = flags;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_resolve(ctx, &c, false);

	if (r)
		return r;
	if (ctxId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*ctxId = c->id;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_resolve(ctx, &c, false);

	if (r)
		return r;
	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 3020; /* contexts made by the _v2 and later API */
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (pvalue == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (limit) {
	case CU_LIMIT_STACK_SIZE:
		*pvalue = c->limit_stack;
		break;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
		*pvalue = c->limit_printf;
		break;
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		*pvalue = c->limit_heap;
		break;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
		*pvalue = 2;
		break;
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
		*pvalue = 2048;
		break;
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
		*pvalue = 64;
		break;
	case CU_LIMIT_PERSISTING_L2_CACHE_SIZE:
		*pvalue = 0;
		break;
	case CU_LIMIT_CIG_ENABLED: /* no context is a CUDA-in-graphics one (cuBLASLt asks) */
		*pvalue = 0;
		break;
	default:
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	}
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	switch (limit) {
	case CU_LIMIT_STACK_SIZE:
		if (value > (1u << 20))
			return CUDA_ERROR_INVALID_VALUE;
		c->limit_stack = value;
		break;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
		c->limit_printf = value;
		break;
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		c->limit_heap = value;
		break;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
		break;
	default:
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	}
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (pconfig == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pconfig = CU_FUNC_CACHE_PREFER_NONE;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct sg_ctx *c;

	return sg_ctx_current(&c, false);
}

SG_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxResetPersistingL2Cache(void)
{
	struct sg_ctx *c;

	return sg_ctx_current(&c, false);
}

/* ---- primary contexts ---- */

static CUresult primary(CUdevice dev, struct sg_ctx **out)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	pthread_mutex_lock(&primary_lock);
	if (d->primary == NULL)
		d->primary = ctx_new(d, 0, true);
	*out = d->primary;
	pthread_mutex_unlock(&primary_lock);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult sg_primary_ctx_handle(CUdevice dev, CUcontext *pctx)
{
	struct sg_ctx *c;
	CUresult r = primary(dev, &c);

	if (r == CUDA_SUCCESS)
		*pctx = (CUcontext)c;
	return r;
}

SG_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct sg_ctx *c;
	CUresult r;

	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = primary(dev, &c);
	if (r)
		return r;
	pthread_mutex_lock(&primary_lock);
	if (!c->active)
		r = activate(c);
	if (r == CUDA_SUCCESS) {
		c->refcount++;
		*pctx = (CUcontext)c;
	}
	pthread_mutex_unlock(&primary_lock);
	return r;
}

SG_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	struct sg_ctx *c;
	CUresult r = primary(dev, &c);

	if (r)
		return r;
	pthread_mutex_lock(&primary_lock);
	if (c->refcount == 0) {
		pthread_mutex_unlock(&primary_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (--c->refcount == 0)
		sg_ctx_release_resources(c);
	pthread_mutex_unlock(&primary_lock);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	struct sg_ctx *c;
	CUresult r = primary(dev, &c);

	if (r)
		return r;
	pthread_mutex_lock(&primary_lock);
	if (c->active)
		sg_ctx_release_resources(c);
	if (c->refcount > 0)
		r = activate(c);
	pthread_mutex_unlock(&primary_lock);
	return r;
}

SG_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct sg_ctx *c;
	CUresult r;

	if (flags == NULL || active == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = primary(dev, &c);
	if (r)
		return r;
	*flags = c->flags;
	*active = c->active;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	struct sg_ctx *c;
	CUresult r = primary(dev, &c);

	if (r)
		return r;
	c->flags = flags;
	return CUDA_SUCCESS;
}
