/* async_dtoh.c -- an asynchronous copy into page-locked memory does not make its caller
 * wait: it returns while the stream is still busy with a long kernel queued before it
 * (cuStreamQuery still says CUDA_ERROR_NOT_READY), and its bytes are there once an event
 * recorded after it has completed. An ordering check, not a timer.
 * usage: async_dtoh ITERATIONS */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "spin_kernel.ptx.h"

#define CK(x)                                                  \
	do {                                                   \
		CUresult r_ = (x);                             \
		if (r_ != CUDA_SUCCESS) {                      \
			printf("ERROR %s: %d\n", #x, (int)r_); \
			exit(1);                               \
		}                                              \
	} while (0)

#define N 65536

int main(int argc, char **argv)
{
	long long n = argc > 1 ? atoll(argv[1]) : 100000000;
	void *params[2];
	unsigned char *h;
	CUdeviceptr d, out;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream s;
	CUevent e;
	CUdevice dev;
	CUresult q;
	int bad = 0;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, spin_ptx));
	CK(cuModuleGetFunction(&fn, mod, "spin"));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&e, 0));
	CK(cuMemAlloc(&d, N));
	CK(cuMemAlloc(&out, 8));
	CK(cuMemAllocHost((void **)&h, N));
	for (int i = 0; i < N; i++)
		h[i] = 0;
	params[0] = &n;
	params[1] = &out;
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
	CK(cuMemsetD8Async(d, 0x5a, N, s));
	CK(cuMemcpyDtoHAsync(h, d, N, s));
	q = cuStreamQuery(s);
	CK(cuEventRecord(e, s));
	CK(cuEventSynchronize(e));
	for (int i = 0; i < N; i++)
		bad += h[i] != 0x5a;
	printf("the copy returned while the stream was %s; %d wrong bytes after its event\n",
	       q == CUDA_ERROR_NOT_READY ? "busy" : "done", bad);
	CK(cuMemFreeHost(h));
	return q == CUDA_ERROR_NOT_READY && !bad ? 0 : 1;
}
