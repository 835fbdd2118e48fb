/* wait_apart.c -- one thread's wait never holds up another's. Thread A launches a long kernel
 * on stream s1 and waits for it (cuStreamSynchronize); meanwhile the main thread synchronizes
 * an idle stream s2 and must get its answer while s1 is still busy (cuStreamQuery says
 * CUDA_ERROR_NOT_READY), then checks both results. An ordering check, not a timer: with one
 * thread serving the session, the idle wait could only return after the long kernel.
 * With "per-thread", both threads use their own default stream (CU_STREAM_PER_THREAD), which
 * must be a stream of each thread's own.
 * usage: wait_apart ITERATIONS [per-thread] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
static CUstream s1, s2;
static CUdeviceptr out;
static long long n;
static volatile int launched, query_now;
static volatile CUresult busy_state = CUDA_ERROR_UNKNOWN;

/* The busy thread's view of its own stream, asked for by the main thread. */
static CUresult query_busy(void)
{
	__atomic_store_n(&query_now, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&query_now, __ATOMIC_ACQUIRE) != 2)
		;
	return busy_state;
}

static void *busy_thread(void *arg)
{
	void *params[2] = {&n, &out};

	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s1, params, NULL));
	__atomic_store_n(&launched, 1, __ATOMIC_RELEASE);
	if (s1 == CU_STREAM_PER_THREAD) {
		/* Waits for the main thread's question, answers it, then waits for the kernel. */
		while (__atomic_load_n(&query_now, __ATOMIC_ACQUIRE) != 1)
			;
		busy_state = cuStreamQuery(s1);
		__atomic_store_n(&query_now, 2, __ATOMIC_RELEASE);
	}
	CK(cuStreamSynchronize(s1)); /* waits for the long kernel */
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec pause = {0, 200 * 1000 * 1000};
	long long got = 0, want = 0;
	CUmodule mod;
	CUdevice dev;
	pthread_t t;
	CUresult q;

	n = argc > 1 ? atoll(argv[1]) : 1000000000;
	for (long long i = 0; i < n; i++)
		want = (long long)((unsigned long long)want * 3 + (unsigned long long)i);
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, spin_ptx));
	CK(cuModuleGetFunction(&fn, mod, "spin"));
	CK(cuMemAlloc(&out, sizeof(got)));
	if (argc > 2 && strcmp(argv[2], "per-thread") == 0) {
		s1 = s2 = CU_STREAM_PER_THREAD; /* the same name, a stream of each thread's own */
	} else {
		CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
		CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	}
	if (pthread_create(&t, NULL, busy_thread, NULL))
		return 1;
	while (!__atomic_load_n(&launched, __ATOMIC_ACQUIRE))
		;
	/* Let thread A's synchronize reach the pool first. */
	nanosleep(&pause, NULL);
	CK(cuStreamSynchronize(s2));
	/* Asked from this thread, s1 would be this thread's own stream: A answers for its own. */
	q = s1 == CU_STREAM_PER_THREAD ? query_busy() : cuStreamQuery(s1);
	printf("idle stream synchronized; busy stream %s\n",
	       q == CUDA_ERROR_NOT_READY ? "still running" : "already done");
	pthread_join(t, NULL);
	CK(cuMemcpyDtoH(&got, out, sizeof(got)));
	printf("kernel %s\n", got == want ? "ok" : "WRONG");
	return q == CUDA_ERROR_NOT_READY && got == want ? 0 : 1;
}
