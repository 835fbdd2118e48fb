/* api_context.c -- contexts: a local proxy per remote context, and the per-thread stack. */
#include <stdlib.h>

#include <gpupool/wire.h>

#include "interposer.h"

#define CTX_STACK_MAX 64

/* Each thread's context stack; the top is the current context. */
static __thread struct gp_ictx *stack[CTX_STACK_MAX];
static __thread int depth;

static bool ctx_valid(const struct gp_ictx *c)
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
	if (!ctx_valid(*out))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
				  CUdevice dev)
{
	struct gp_ictx *c;
	uint64_t args[2] = {(uint64_t)dev, flags}, out[1];
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
	r = gp__call(GP_MSG_CTX_CREATE, args, 2, out, 1);
	if (r != CUDA_SUCCESS) {
		free(c);
		return r;
	}
	c->magic = GP_MAGIC_CTX;
	c->device = dev;
	c->remote = out[0];
	stack[depth++] = c;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	uint64_t args[1];
	CUresult r;

	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (!ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	args[0] = c->remote;
	r = gp__call(GP_MSG_CTX_DESTROY, args, 1, NULL, 0);
	if (r != CUDA_SUCCESS)
		return r;
	/* Off this thread's stack; other threads holding it see a destroyed context. */
	for (int i = depth - 1; i >= 0; i--) {
		if (stack[i] == c) {
			for (int k = i; k < depth - 1; k++)
				stack[k] = stack[k + 1];
			depth--;
		}
	}
	c->magic = GP_MAGIC_DEAD;
	/* Kept, not freed: a stale handle must read as dead, not as freed memory. */
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (c && !ctx_valid(c))
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
	if (!ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	stack[depth++] = c;
	return CUDA_SUCCESS;
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

GP_CUDA_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	struct gp_ictx *c;
	CUresult r;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	*device = c->device;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuCtxSynchronize(void)
{
	struct gp_ictx *c;
	uint64_t args[1];
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	args[0] = c->remote;
	return gp__call(GP_MSG_CTX_SYNCHRONIZE, args, 1, NULL, 0);
}
