/* threads.c -- one process, many threads, through the interposer at once: half of them
 * call cuInit while the rest are already asking for devices, then each retains the primary
 * context, loads a module and runs its own kernel on its own memory, and the last release
 * destroys the context. Run under TSan (scripts/test.sh), it checks interposer.h's THREADS
 * rules: cuInit's publication of the session, primary_lock, the client lock. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include <cuda.h>

#include "fill_ptx.h"

#define NTHREADS 8
#define N 256

static pthread_barrier_t start, done;

#define CK(call)                                                                           \
	do {                                                                               \
		CUresult r_ = (call);                                                      \
		if (r_ != CUDA_SUCCESS) {                                                  \
			printf("FAILED: thread %d: %s returned %d\n", id, #call, (int)r_); \
			return (void *)1;                                                  \
		}                                                                          \
	} while (0)

static void *worker(void *arg)
{
	int id = (int)(long)arg, n = 0, active;
	unsigned host[N], v = 1000u + (unsigned)id, flags;
	void *params[2];
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr p;
	CUresult r;

	pthread_barrier_wait(&start);
	if (id % 2 == 0) {
		CK(cuInit(0));
	} else {
		/* Not initialized until some thread's cuInit has published the session. */
		while ((r = cuDeviceGetCount(&n)) == CUDA_ERROR_NOT_INITIALIZED)
			sched_yield();
		CK(r);
	}
	CK(cuDeviceGetCount(&n));
	if (n < 1) {
		printf("FAILED: thread %d: no device\n", id);
		return (void *)1;
	}
	CK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CK(cuCtxSetCurrent(ctx));
	CK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	if (!active) {
		printf("FAILED: thread %d: a retained primary context is not active\n", id);
		return (void *)1;
	}
	CK(cuModuleLoadData(&mod, fill_ptx));
	CK(cuModuleGetFunction(&f, mod, "fill"));
	for (int round = 0; round < 4; round++) {
		CK(cuMemAlloc(&p, sizeof(host)));
		params[0] = &p;
		params[1] = &v;
		CK(cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL));
		CK(cuMemcpyDtoH(host, p, sizeof(host)));
		for (int i = 0; i < N; i++) {
			if (host[i] != v) {
				printf("FAILED: thread %d: element %d is %u, expected %u\n", id, i,
				       host[i], v);
				return (void *)1;
			}
		}
		CK(cuMemFree(p));
		v += NTHREADS;
	}
	CK(cuModuleUnload(mod));
	/* Nobody uses the context once everyone is done; the last release destroys it. */
	pthread_barrier_wait(&done);
	CK(cuDevicePrimaryCtxRelease(0));
	return NULL;
}

int main(void)
{
	pthread_t th[NTHREADS];
	unsigned flags;
	int failed = 0, active;

	pthread_barrier_init(&start, NULL, NTHREADS);
	pthread_barrier_init(&done, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i))
			return 2;
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		failed |= ret != NULL;
	}
	if (failed)
		return 1;
	if (cuDevicePrimaryCtxGetState(0, &flags, &active) || active) {
		printf("FAILED: the primary context is still active after the last release\n");
		return 1;
	}
	printf("%d threads: PASSED\n", NTHREADS);
	return 0;
}
