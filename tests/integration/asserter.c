/* asserter.c -- a kernel's device-side assert fails (tests/kernels/assert.cu): the
 * synchronize reports CUDA_ERROR_ASSERT, and the assert's message is the driver's stderr,
 * which through the pool must reach this process's stderr (OUTPUT_ERR). This program's own
 * line goes to stdout. */
#include <stdio.h>

#include <cuda.h>

#include "assert.ptx.h"

int main(void)
{
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	CUdeviceptr d;
	const char *name = NULL;
	void *params[] = {&d};
	CUresult r;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuModuleLoadData(&mod, assert_ptx) || cuModuleGetFunction(&fn, mod, "check_zero") ||
	    cuMemAlloc(&d, 32 * sizeof(int)) || cuMemsetD32(d, 0, 32) || cuMemsetD32(d + 4, 1, 1) ||
	    cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL))
		return 1;
	r = cuCtxSynchronize();
	cuGetErrorName(r, &name);
	printf("asserter: %s\n", name ? name : "?");
	return r == CUDA_ERROR_ASSERT ? 0 : 1;
}
