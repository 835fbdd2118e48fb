/* abi.c -- what NVIDIA's runtime asks of a driver beyond the API: the facts softgpu gives
 * the private export tables, which (with cuGetProcAddress) are served by the code both of
 * gpupool's libcuda.so.1 builds share (src/cuda_entry.c, src/procaddr.c, src/exptables.c). */
#include <stdlib.h>
#include <string.h>

#include "cuda_cls.h"
#include "exptables.h"
#include "log.h"
#include "softgpu.h"

CUresult sg_primary_ctx_handle(CUdevice dev, CUcontext *pctx);

/* CUDART_INTERFACE slot 2: a device's primary context, not retained. */
static CUresult primary_ctx(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return sg_primary_ctx_handle(dev, pctx);
}

static const struct gp__cuda_host host = {
	.primary_ctx = primary_ctx,
	.ctx_get_current = cuCtxGetCurrent,
	.driver_get_version = cuDriverGetVersion,
	.device_get_count = cuDeviceGetCount,
	.device_get = cuDeviceGet,
	.device_get_uuid = cuDeviceGetUuid_v2,
	.device_get_attribute = cuDeviceGetAttribute,
	.ctx_get_id = cuCtxGetId,
	.stream_object = sg_stream_object,
	.stream_object_id = sg_stream_object_id,
};

__attribute__((constructor)) static void abi_init(void)
{
	const char *v = getenv("SOFTGPU_LOG");

	/* With SOFTGPU_LOG the shared code's debug lines say what a library asked for and did
	 * not get: an unknown export table's UUID, an export-table slot, an unimplemented entry
	 * point. Read here, not in sg_config_load: cudart asks for tables before cuInit. */
	gp_log_init("softgpu", v && *v && strcmp(v, "0") != 0 ? GP_LOG_DEBUG : GP_LOG_INFO);
	gp__exptables_init(&host);
	/* cudart's context-local storage dies with its context (its destructors run). */
	sg_ctx_set_release_hook(gp__cls_context_destroyed);
}

__attribute__((destructor)) static void abi_fini(void)
{
	gp__exptables_deinit();
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
