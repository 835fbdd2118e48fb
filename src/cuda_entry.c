/* cuda_entry.c -- the entry points both of gpupool's libcuda.so.1 builds answer the same
 * way, in the calling process: cuGetProcAddress, cudart's private export tables (and the
 * facts about the library they are built from), and the names and meanings of errors.
 * Compiled into each library (GP_CUDA_ENTRY_SOURCES). */
#include "cuda_errors_api.h"
#include "cuda_table.h"
#include "exptables.h"
#include "procaddr.h"

/* The export tables' view of this library: its own entry points (cuda_host.h). */
static const struct gp__cuda_host host = {
	.primary_ctx = gp__primary_ctx,
	.ctx_get_current = cuCtxGetCurrent,
	.driver_get_version = cuDriverGetVersion,
	.device_get_count = cuDeviceGetCount,
	.device_get = cuDeviceGet,
	.device_get_uuid = cuDeviceGetUuid_v2,
	.device_get_attribute = cuDeviceGetAttribute,
	.ctx_get_id = cuCtxGetId,
	.stream_object = gp__stream_object,
	.stream_object_id = gp__stream_object_id,
	.module_get_function_count = cuModuleGetFunctionCount,
	.module_enumerate_functions = cuModuleEnumerateFunctions,
	.nvml_source = &gp__nvml_source,
	.softgpu_ipc = &gp__softgpu_ipc,
};

__attribute__((constructor)) static void host_init(void)
{
	gp__exptables_init(&host);
}

__attribute__((destructor)) static void host_fini(void)
{
	gp__exptables_deinit();
}

GP_CUDA_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
					    cuuint64_t flags,
					    CUdriverProcAddressQueryResult *status)
{
	return gp__proc_resolve(symbol, cudaVersion, flags, pfn, status);
}

GP_CUDA_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
					 cuuint64_t flags)
{
	return gp__proc_resolve(symbol, cudaVersion, flags, pfn, NULL);
}

GP_CUDA_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
	return gp__get_export_table(table, id);
}

GP_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char **str)
{
	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	*str = gp_cuda_error_name((int)error);
	return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	*str = gp_cuda_error_string((int)error);
	return *str ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
