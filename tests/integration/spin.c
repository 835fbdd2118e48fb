/* spin.c -- runs one long kernel and checks its result: a session that is busy, not idle.
 * usage: spin ITERATIONS [LAUNCHES]   (prints QUEUED once all are launched, then DONE and
 * the result when they have finished, or ERROR and the call that failed)
 *        spin -t MILLISECONDS         (one kernel busy for that long by the device's own
 * timer, whatever the device's speed; DONE and "ok" when it saw that much time pass) */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "spin_kernel.ptx.h"

#define CK(x)                                                 \
	do {                                                  \
		CUresult r_ = (x);                            \
		if (r_ != CUDA_SUCCESS) {                     \
			printf("ERROR %s %d\n", #x, (int)r_); \
			return 1;                             \
		}                                             \
	} while (0)

static int spin_for(long long ms)
{
	long long ns = ms * 1000000, got[2] = {0, 0};
	void *params[2];
	CUdeviceptr out;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, spin_ptx));
	CK(cuModuleGetFunction(&fn, mod, "spin_for"));
	CK(cuMemAlloc(&out, sizeof(got)));
	params[0] = &ns;
	params[1] = &out;
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	printf("QUEUED 1\n");
	fflush(stdout);
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(got, out, sizeof(got)));
	printf("DONE %lld ns in %lld loops %s\n", got[0], got[1],
	       got[0] >= ns && got[1] > 0 ? "ok" : "WRONG");
	fflush(stdout);
	return got[0] >= ns && got[1] > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	long long n = argc > 1 ? atoll(argv[1]) : 1000000, got = 0, want = 0;
	int launches = argc > 2 ? atoi(argv[2]) : 1;
	void *params[2];
	CUdeviceptr out;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;

	if (argc > 2 && argv[1][0] == '-' && argv[1][1] == 't')
		return spin_for(atoll(argv[2]));
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, spin_ptx));
	CK(cuModuleGetFunction(&fn, mod, "spin"));
	CK(cuMemAlloc(&out, sizeof(got)));
	params[0] = &n;
	params[1] = &out;
	for (int i = 0; i < launches; i++)
		CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	printf("QUEUED %d\n", launches);
	fflush(stdout);
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(&got, out, sizeof(got)));
	/* What the kernel must have computed (only once it has: n may be endless). */
	for (long long i = 0; i < n; i++)
		want = (long long)((unsigned long long)want * 3 + (unsigned long long)i);
	printf("DONE %lld %s\n", got, got == want ? "ok" : "WRONG");
	fflush(stdout);
	return got == want ? 0 : 1;
}
