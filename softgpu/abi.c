/* abi.c -- what NVIDIA's runtime asks of a driver beyond the API: softgpu's primary context
 * handles for the private export tables, which (with cuGetProcAddress) are served by the code
 * both of gpupool's libcuda.so.1 builds share (src/cuda_entry.c, src/procaddr.c,
 * src/exptables.c), and the old names cudart still asks for. */
#include <stdlib.h>
#include <string.h>

#include "cuda_cls.h"
#include "cuda_host.h"
#include "log.h"
#include "softgpu.h"

/* CUDART_INTERFACE slot 2: a device's primary context, not retained (cuda_host.h). */
CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return sg_primary_ctx_handle(dev, pctx);
}

/* TOOLS_CONTEXT slots 51 and 39 (cuda_host.h): softgpu's stream objects and their ids. */
CUresult gp__stream_object(CUcontext ctx, CUstream h, int per_thread, void **obj)
{
	return sg_stream_object(ctx, h, per_thread, obj);
}

CUresult gp__stream_object_id(CUcontext ctx, void *obj, unsigned long long *id)
{
	return sg_stream_object_id(ctx, obj, id);
}

__attribute__((constructor)) static void abi_init(void)
{
	const char *v = getenv("SOFTGPU_LOG");

	/* With SOFTGPU_LOG the shared code's debug lines say what a library asked for and did
	 * not get: an unknown export table's UUID, an export-table slot, an unimplemented entry
	 * point. Read here, not in sg_config_load: cudart asks for tables before cuInit. */
	gp_log_init("softgpu", v && *v && strcmp(v, "0") != 0 ? GP_LOG_DEBUG : GP_LOG_INFO);
	/* cudart's context-local storage dies with its context (its destructors run). */
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
