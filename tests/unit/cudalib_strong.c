/* cudalib_strong.c -- the strong half of test_procaddr's tiny libcuda (gp_test_cudalib). */
#include <cuda.h>

#include "cuda_table.h"
#include "procaddr.h"

/* Strong definitions override the weak stubs of cuda_stubs.c in the same link. */
GP_CUDA_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
						    cuuint64_t flags,
						    CUdriverProcAddressQueryResult *symbolStatus)
{
	return gp__proc_resolve(symbol, cudaVersion, flags, pfn, symbolStatus);
}

GP_CUDA_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = 13000;
	return CUDA_SUCCESS;
}
