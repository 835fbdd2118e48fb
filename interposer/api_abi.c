/* api_abi.c -- what cudart's export tables need from the interposer (src/cuda_entry.c
 * serves cuGetProcAddress and cuGetExportTable themselves). */
#include "exptables.h"
#include "interposer.h"

static const struct gp__cuda_host host = {
	.primary_ctx = gp__primary_ctx,
	.ctx_get_current = cuCtxGetCurrent,
	.driver_get_version = cuDriverGetVersion,
	.device_get_count = cuDeviceGetCount,
	.device_get = cuDeviceGet,
	.device_get_uuid = cuDeviceGetUuid_v2,
	.device_get_attribute = cuDeviceGetAttribute,
};

__attribute__((constructor)) static void abi_init(void)
{
	gp__exptables_init(&host);
}

__attribute__((destructor)) static void abi_fini(void)
{
	gp__exptables_deinit();
}
