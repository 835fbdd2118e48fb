/* deferred.c -- an asynchronous call that fails in the pool is reported by the next
 * synchronizing call, never by an unrelated call that succeeded: an allocation that
 * happened must be returned, and a free that happened must stay done. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "fill_ptx.h"

#define N 256

#define CHECK(what, got, want)                                                           \
	do {                                                                             \
		CUresult r_ = (got);                                                     \
		if (r_ != (want)) {                                                      \
			printf("FAILED: %s returned %d, expected %d\n", what, r_, want); \
			return 1;                                                        \
		}                                                                        \
	} while (0)

/* A launch the client accepts and the driver refuses: far too much dynamic shared memory. */
static CUresult bad_launch(CUfunction f, CUdeviceptr p)
{
	unsigned v = 1;
	void *params[] = {&p, &v};

	return cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 1u << 30, NULL, params, NULL);
}

int main(void)
{
	CUcontext ctx, other;
	CUdevice dev;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr a, b;
	size_t free0, free1, total;
	unsigned host[N], v = 7;
	void *params[] = {&a, &v};

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) ||
	    cuModuleLoadData(&mod, fill_ptx) || cuModuleGetFunction(&f, mod, "fill"))
		return 2;
	CHECK("cuMemGetInfo", cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
	CHECK("cuMemAlloc", cuMemAlloc(&b, 4096), CUDA_SUCCESS);

	/* The failure is kept while an allocation succeeds... */
	CHECK("the refused launch", bad_launch(f, b), CUDA_SUCCESS);
	CHECK("cuMemAlloc after it", cuMemAlloc(&a, N * sizeof(unsigned)), CUDA_SUCCESS);
	/* ...and reported once, by the next synchronizing call. */
	CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_ERROR_INVALID_VALUE);
	CHECK("cuCtxSynchronize again", cuCtxSynchronize(), CUDA_SUCCESS);

	/* The allocation is real and usable. */
	CHECK("a good launch", cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL),
	      CUDA_SUCCESS);
	CHECK("cuMemcpyDtoH", cuMemcpyDtoH(host, a, sizeof(host)), CUDA_SUCCESS);
	for (int i = 0; i < N; i++)
		if (host[i] != 7) {
			printf("FAILED: element %d is %u, expected 7\n", i, host[i]);
			return 1;
		}

	/* A free that happened stays done, even when it carries the earlier failure back. */
	CHECK("the refused launch", bad_launch(f, b), CUDA_SUCCESS);
	CHECK("cuMemFree after it", cuMemFree(a), CUDA_SUCCESS);
	CHECK("a second cuMemFree", cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
	CHECK("cuStreamSynchronize", cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK("cuMemFree", cuMemFree(b), CUDA_SUCCESS);

	/* Nothing leaked in the pool: its memory is as it was. */
	CHECK("cuMemGetInfo", cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
	if (free1 != free0) {
		printf("FAILED: %zu bytes free at first, %zu at the end\n", free0, free1);
		return 1;
	}
	/* A failure kept from a context that is then destroyed goes with it. */
	CHECK("cuCtxCreate", cuCtxCreate(&other, NULL, 0, dev), CUDA_SUCCESS);
	CHECK("cuCtxSetCurrent", cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CHECK("the refused launch", bad_launch(f, 0), CUDA_SUCCESS);
	CHECK("cuCtxDestroy", cuCtxDestroy(ctx), CUDA_SUCCESS);
	CHECK("cuCtxSetCurrent", cuCtxSetCurrent(other), CUDA_SUCCESS);
	CHECK("cuCtxSynchronize in another context", cuCtxSynchronize(), CUDA_SUCCESS);
	printf("PASSED\n");
	return 0;
}
