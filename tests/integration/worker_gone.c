/* worker_gone.c -- every thread's call returns once the session's worker is gone. Thread
 * "copy" loops large cuMemcpyHtoD copies, thread "sync" loops a long kernel and
 * cuStreamSynchronize on its own stream, thread "small" loops small synchronous calls (so
 * that the read token changes hands while a copy is being sent). Once each has had a call
 * answered the program says READY; the test kills the worker, and each thread must come
 * back with an error, which it prints. The test bounds the run only so as not to hang.
 * usage: worker_gone COPY_MIB SPIN_ITERATIONS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static CUcontext ctx;
static CUfunction fn;
static CUdeviceptr dbuf, dout;
static size_t copy_len;
static long long spin_n;
static int answered, finished; /* threads that had a call answered, that ended (atomic) */

static void first_answer(int *seen)
{
	if (!*seen) {
		*seen = 1;
		__atomic_add_fetch(&answered, 1, __ATOMIC_ACQ_REL);
	}
}

static void *copy_thread(void *arg)
{
	char *host = malloc(copy_len);
	int seen = 0;
	CUresult r;

	(void)arg;
	if (!host)
		exit(2);
	memset(host, 0x5a, copy_len);
	CK(cuCtxSetCurrent(ctx));
	while ((r = cuMemcpyHtoD(dbuf, host, copy_len)) == CUDA_SUCCESS)
		first_answer(&seen);
	printf("copy: %d\n", (int)r);
	__atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL);
	free(host);
	return NULL;
}

static void *sync_thread(void *arg)
{
	void *params[2] = {&spin_n, &dout};
	int seen = 0;
	CUstream s;
	CUresult r;

	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (;;) {
		r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
		if (r == CUDA_SUCCESS)
			r = cuStreamSynchronize(s);
		if (r != CUDA_SUCCESS)
			break;
		first_answer(&seen);
	}
	printf("sync: %d\n", (int)r);
	__atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

static void *small_thread(void *arg)
{
	size_t free_b, total_b;
	int seen = 0;
	CUresult r;

	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	while ((r = cuMemGetInfo(&free_b, &total_b)) == CUDA_SUCCESS)
		first_answer(&seen);
	printf("small: %d\n", (int)r);
	__atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fns[3])(void *) = {copy_thread, sync_thread, small_thread};
	pthread_t t[3];
	CUmodule mod;
	CUdevice dev;

	copy_len = (size_t)(argc > 1 ? atoll(argv[1]) : 64) << 20;
	spin_n = argc > 2 ? atoll(argv[2]) : 10000000;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, spin_ptx));
	CK(cuModuleGetFunction(&fn, mod, "spin"));
	CK(cuMemAlloc(&dbuf, copy_len));
	CK(cuMemAlloc(&dout, sizeof(long long)));
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL))
			return 2;
	while (__atomic_load_n(&answered, __ATOMIC_ACQUIRE) < 3 &&
	       !__atomic_load_n(&finished, __ATOMIC_ACQUIRE))
		;
	printf(__atomic_load_n(&answered, __ATOMIC_ACQUIRE) < 3 ? "EARLY\n" : "READY\n");
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("all returned\n");
	return 0;
}
