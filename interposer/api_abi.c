/* api_abi.c -- cuGetProcAddress and cuGetExportTable, answered in the client process. */
#include "exptables.h"
#include "interposer.h"
#include "procaddr.h"

GP_CUDA_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
					    cuuint64_t flags,
					    CUdriverProcAddressQueryResult *symbolStatus)
{
	return gp__proc_resolve(symbol, cudaVersion, flags, pfn, symbolStatus);
}

GP_CUDA_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
					 cuuint64_t flags)
{
	return gp__proc_resolve(symbol, cudaVersion, flags, pfn, NULL);
}

GP_CUDA_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	return gp__get_export_table(ppExportTable, pExportTableId);
}

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
