/* abi.c -- what NVIDIA's runtime asks of a driver beyond the API: softgpu's primary context
 * handles for the private export tables, which (with cuGetProcAddress) are served by the code
 * both of gpupool's libcuda.so.1 builds share (src/cuda_entry.c, src/procaddr.c,
 * src/exptables.c), and the old names cudart still asks for. */
#include "cuda_cls.h"
#include "cuda_host.h"
#include "softgpu.h"

/* CUDART_INTERFACE slot 2: a device's primary context, not retained (cuda_host.h). */
CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return sg_primary_ctx_handle(dev, pctx);
}

/* cudart's context-local storage dies with its context (its destructors run). */
__attribute__((constructor)) static void abi_init(void)
{
	sg_ctx_set_release_hook(gp__cls_context_destroyed);
}

/* The pre-11.0 ABI names cudart 13 still asks cuGetProcAddress for (version 7000): the
 * same semantics as their _v2 forms. */
SG_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

SG_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}
