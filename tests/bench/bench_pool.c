/* bench_pool.c -- what a CUDA program pays through gpupool, measured with the driver API:
 * the round trip of a call that waits for an answer, launches sent without waiting, and
 * copy throughput both ways. Run it through the interposer (LD_PRELOAD) or directly on a
 * driver to compare.
 *
 * usage: bench_pool [ROUNDS] [MIB]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#include "bench_pool_kernel.ptx.h"

#define CK(x)                                                                        \
	do {                                                                         \
		CUresult r_ = (x);                                                   \
		if (r_ != CUDA_SUCCESS) {                                            \
			fprintf(stderr, "bench_pool: %s failed: %d\n", #x, (int)r_); \
			return 1;                                                    \
		}                                                                    \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000, mib = argc > 2 ? atoi(argv[2]) : 256;
	size_t bytes = (size_t)mib << 20;
	CUdeviceptr d, v;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	void *params[] = {&v};
	char *h = malloc(bytes);
	double t0, rtt, launch, up, down;
	int check[1];

	if (!h)
		return 1;
	for (size_t i = 0; i < bytes; i += 4096)
		h[i] = (char)i;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, touch_ptx));
	CK(cuModuleGetFunction(&fn, mod, "touch"));
	CK(cuMemAlloc(&d, bytes));
	CK(cuMemAlloc(&v, sizeof(int)));
	CK(cuMemsetD32(v, 0, 1));
	for (int i = 0; i < 100; i++) /* warm up */
		CK(cuCtxSynchronize());
	t0 = now();
	for (int i = 0; i < rounds; i++)
		CK(cuCtxSynchronize());
	rtt = (now() - t0) / rounds * 1e6;
	t0 = now();
	for (int i = 0; i < rounds; i++)
		CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
	CK(cuCtxSynchronize());
	launch = (now() - t0) / rounds * 1e6;
	CK(cuMemcpyDtoH(check, v, sizeof(int)));
	if (check[0] != rounds) {
		fprintf(stderr, "bench_pool: %d launches ran, expected %d\n", check[0], rounds);
		return 1;
	}
	t0 = now();
	CK(cuMemcpyHtoD(d, h, bytes));
	up = mib / (now() - t0);
	t0 = now();
	CK(cuMemcpyDtoH(h, d, bytes));
	down = mib / (now() - t0);
	printf("call_rtt_us %.2f\nlaunch_us %.2f\nhtod_mib_per_s %.1f\ndtoh_mib_per_s %.1f\n", rtt,
	       launch, up, down);
	CK(cuCtxDestroy(ctx));
	free(h);
	return 0;
}
