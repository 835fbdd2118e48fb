/* printer.c -- launches a kernel that calls printf (tests/kernels/printf.cu) on two blocks
 * and synchronizes; its own line comes last. Through the pool the kernels' output must
 * reach this process's stdout, before cuCtxSynchronize returns. */
#include <stdio.h>

#include <cuda.h>

#include "printf.ptx.h"

int main(void)
{
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	int base = 7;
	void *params[] = {&base};

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuModuleLoadData(&mod, printf_ptx) || cuModuleGetFunction(&fn, mod, "hello") ||
	    cuLaunchKernel(fn, 2, 1, 1, 32, 1, 1, 0, NULL, params, NULL) || cuCtxSynchronize())
		return 1;
	printf("printer: synchronized\n");
	return 0;
}
