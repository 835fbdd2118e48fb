/* busy.c -- keeps a GPU busy for a known time: kernels that each spin MS milliseconds of the
 * device's timer (%globaltimer), one after another, each waited for. Each kernel adds the
 * time it spun to a device counter, so what ran is the device's own count, not the client's
 * wall clock. usage: busy MS COUNT [BATCH]  (COUNT kernels, 0: until stdin says anything or
 * closes; BATCH kernels launched before each wait, 1 unless given).
 * Prints READY and the device's multiprocessor count after the first kernel, then DONE
 * KERNELS SECONDS (the device's count), or ERROR and the call that failed. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda.h>

#include "busy_kernel.ptx.h"

#define CK(x)                                                 \
	do {                                                  \
		CUresult r_ = (x);                            \
		if (r_ != CUDA_SUCCESS) {                     \
			printf("ERROR %s %d\n", #x, (int)r_); \
			return 1;                             \
		}                                             \
	} while (0)

/* Whether stdin has something (or closed): the end of an endless run. */
static int told_to_stop(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	long count = argc > 2 ? atol(argv[2]) : 1;
	long batch = argc > 3 ? atol(argv[3]) : 1;
	unsigned long long total = 0, ns;
	long i;
	int ready = 0, sms = 0;
	void *params[2];
	CUdeviceptr out;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;

	if (ms <= 0 || count < 0 || batch < 1) {
		fprintf(stderr, "usage: busy MS COUNT [BATCH]\n");
		return 2;
	}
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, busy_ptx));
	CK(cuModuleGetFunction(&fn, mod, "tick"));
	CK(cuMemAlloc(&out, sizeof(total)));
	CK(cuMemsetD8(out, 0, sizeof(total)));
	ns = (unsigned long long)ms * 1000000ull;
	params[0] = &ns;
	params[1] = &out;
	for (i = 0; count == 0 || i < count; i++) {
		CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
		if ((i + 1) % batch && (count == 0 || i + 1 < count))
			continue;
		CK(cuCtxSynchronize());
		if (!ready) {
			printf("READY sms %d\n", sms);
			fflush(stdout);
			ready = 1;
		}
		if (count == 0 && told_to_stop()) {
			i++;
			break;
		}
	}
	CK(cuMemcpyDtoH(&total, out, sizeof(total)));
	printf("DONE %ld %.6f\n", i, (double)total / 1e9);
	fflush(stdout);
	return total >= ns * (unsigned long long)i ? 0 : 1;
}
