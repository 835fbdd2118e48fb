/* test_streams.c -- stream ordering, events, host functions, async copies; no timing assumptions. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

/*
 * A gate is a host function that blocks its stream until the test opens it:
 * whatever is queued behind it cannot have run, so ordering is observable
 * without sleeping or timing anything.
 */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int open;
};

static void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->open = 0;
}

static void CUDA_CB gate_wait(void *arg)
{
	struct gate *g = arg;

	pthread_mutex_lock(&g->lock);
	while (!g->open)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->open = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static CUmodule mod;

static CUfunction fn(const char *name)
{
	if (mod == NULL)
		mod = sgt_module("stream_ops.ptx");
	return sgt_function(mod, name);
}

static void set_value(CUstream s, CUdeviceptr p, int v)
{
	void *args[] = {&p, &v};

	CK(cuLaunchKernel(fn("set_value"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static void copy_value(CUstream s, CUdeviceptr src, CUdeviceptr dst)
{
	void *args[] = {&src, &dst};

	CK(cuLaunchKernel(fn("copy_value"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static int read_int(CUdeviceptr p)
{
	int v;

	CK(cuMemcpyDtoH(&v, p, sizeof(v)));
	return v;
}

static void test_in_order(void **state)
{
	CUstream s;
	CUdeviceptr p;
	int zero = 0;

	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&p, 4));
	CK(cuMemcpyHtoD(p, &zero, 4));
	void *args[] = {&p};
	for (int i = 0; i < 200; i++)
		CK(cuLaunchKernel(fn("increment"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CK(cuStreamSynchronize(s));
	CK(cuStreamQuery(s));
	assert_int_equal(read_int(p), 200);
	CK(cuStreamDestroy(s));
	CK(cuMemFree(p));
}

static void test_launch_is_async(void **state)
{
	CUstream s;
	CUdeviceptr p;
	struct gate g;

	gate_init(&g);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&p, 4));
	CK(cuMemsetD32(p, 0, 1));
	CK(cuLaunchHostFunc(s, gate_wait, &g));
	set_value(s, p, 42); /* returns although the stream is blocked */
	CK_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(read_int(p),
			 0); /* the legacy stream does not wait for a non-blocking one */
	gate_open(&g);
	CK(cuStreamSynchronize(s));
	assert_int_equal(read_int(p), 42);
	CK(cuStreamDestroy(s));
	CK(cuMemFree(p));
}

static void test_wait_event(void **state)
{
	CUstream s1, s2;
	CUevent e;
	CUdeviceptr x, y;
	struct gate g;

	gate_init(&g);
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&e, 0));
	CK(cuMemAlloc(&x, 4));
	CK(cuMemAlloc(&y, 4));
	CK(cuMemsetD32(x, 0, 1));
	CK(cuMemsetD32(y, 0, 1));
	CK(cuLaunchHostFunc(s1, gate_wait, &g));
	set_value(s1, x, 7);
	CK(cuEventRecord(e, s1));
	CK(cuStreamWaitEvent(s2, e, 0));
	copy_value(s2, x, y);
	CK_EQ(cuEventQuery(e), CUDA_ERROR_NOT_READY);
	CK_EQ(cuStreamQuery(s2), CUDA_ERROR_NOT_READY);
	gate_open(&g);
	CK(cuStreamSynchronize(s2));
	CK(cuEventQuery(e));
	assert_int_equal(read_int(y), 7);
	/* waiting on an event never recorded is a no-op */
	CUevent fresh;
	CK(cuEventCreate(&fresh, 0));
	CK(cuStreamWaitEvent(s2, fresh, 0));
	CK(cuStreamSynchronize(s2));
	CK(cuEventDestroy(fresh));
	CK(cuEventDestroy(e));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
}

/* The legacy default stream waits for blocking streams, and they wait for it. */
static void test_legacy_stream(void **state)
{
	CUstream blocking, nonblocking;
	CUdeviceptr x, y, z;
	struct gate g1, g2;

	gate_init(&g1);
	gate_init(&g2);
	CK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
	CK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&x, 4));
	CK(cuMemAlloc(&y, 4));
	CK(cuMemAlloc(&z, 4));
	CK(cuMemsetD32(x, 0, 1));
	CK(cuMemsetD32(y, 0, 1));
	CK(cuMemsetD32(z, 0, 1));
	CK(cuLaunchHostFunc(blocking, gate_wait, &g1));
	set_value(blocking, x, 5);
	copy_value(NULL, x, y);	   /* must see 5: queued behind the blocking stream's work */
	set_value(blocking, z, 9); /* and this waits for the legacy stream's copy */
	CK(cuLaunchHostFunc(nonblocking, gate_wait, &g2));
	set_value(nonblocking, x, 100);
	gate_open(&g1);
	CK(cuStreamSynchronize(NULL)); /* does not wait for the non-blocking stream */
	assert_int_equal(read_int(y), 5);
	CK_EQ(cuStreamQuery(nonblocking), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(blocking));
	assert_int_equal(read_int(z), 9);
	gate_open(&g2);
	CK(cuCtxSynchronize());
	assert_int_equal(read_int(x), 100);
	CK(cuStreamDestroy(blocking));
	CK(cuStreamDestroy(nonblocking));
}

static void test_events(void **state)
{
	CUevent a, b, notiming, never;
	CUstream s;
	float ms = -1;
	struct gate g;

	gate_init(&g);
	CK(cuStreamCreate(&s, 0));
	CK(cuEventCreate(&a, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
	CK(cuEventCreate(&notiming, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&never, 0));
	CK_EQ(cuEventCreate(&never, 0x80), CUDA_ERROR_INVALID_VALUE);
	CK(cuEventQuery(never)); /* nothing recorded: complete */
	CK(cuEventRecord(a, s));
	CK(cuLaunchHostFunc(s, gate_wait, &g));
	CK(cuEventRecord(b, s));
	CK(cuEventRecord(notiming, s));
	CK_EQ(cuEventQuery(b), CUDA_ERROR_NOT_READY);
	CK_EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
	gate_open(&g);
	CK(cuEventSynchronize(b));
	CK(cuEventElapsedTime(&ms, a, b));
	assert_true(ms >= 0.0f);
	CK(cuEventElapsedTime(&ms, b, b));
	assert_true(ms == 0.0f);
	CK_EQ(cuEventElapsedTime(&ms, a, notiming), CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuEventElapsedTime(&ms, a, never), CUDA_ERROR_INVALID_HANDLE);
	CK(cuEventSynchronize(notiming));
	CK(cuEventDestroy(a));
	CK(cuEventDestroy(b));
	CK(cuEventDestroy(notiming));
	CK(cuEventDestroy(never));
	CK(cuStreamDestroy(s));
}

struct trace {
	int n;
	int order[8];
	CUresult status;
	CUstream stream;
};

static void CUDA_CB note(void *arg)
{
	struct trace *t = arg;

	t->order[t->n] = t->n;
	t->n++;
}

static void CUDA_CB callback(CUstream s, CUresult status, void *arg)
{
	struct trace *t = arg;

	t->status = status;
	t->stream = s;
	t->order[t->n] = 100;
	t->n++;
}

static void test_host_functions(void **state)
{
	struct trace t = {.status = CUDA_ERROR_UNKNOWN};
	CUstream s;

	CK(cuStreamCreate(&s, 0));
	CK(cuLaunchHostFunc(s, note, &t));
	CK(cuLaunchHostFunc(s, note, &t));
	CK(cuStreamAddCallback(s, callback, &t, 0));
	CK(cuLaunchHostFunc(s, note, &t));
	CK_EQ(cuLaunchHostFunc(s, NULL, &t), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuStreamAddCallback(s, callback, &t, 1), CUDA_ERROR_INVALID_VALUE);
	CK(cuStreamSynchronize(s));
	assert_int_equal(t.n, 4);
	assert_int_equal(t.order[0], 0);
	assert_int_equal(t.order[1], 1);
	assert_int_equal(t.order[2], 100);
	assert_int_equal(t.order[3], 3);
	assert_int_equal(t.status, CUDA_SUCCESS);
	assert_ptr_equal(t.stream, s);
	CK(cuStreamDestroy(s));
}

static void test_async_copies(void **state)
{
	enum { N = 4096 };
	CUstream s;
	CUdeviceptr d;
	float *pinned, pageable[N], back[N];
	float sc = 2.0f;
	int n = N;
	struct gate g;

	gate_init(&g);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, sizeof(pageable)));
	CK(cuMemAllocHost((void **)&pinned, sizeof(pageable)));
	for (int i = 0; i < N; i++)
		pageable[i] = (float)i;
	CK(cuLaunchHostFunc(s, gate_wait, &g));
	/* pageable source: copied at the call, so changing it afterwards changes nothing */
	CK(cuMemcpyHtoDAsync(d, pageable, sizeof(pageable), s));
	for (int i = 0; i < N; i++)
		pageable[i] = -1.0f;
	void *args[] = {&d, &sc, &n};
	CK(cuLaunchKernel(fn("scale"), N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
	/* pinned destination: truly asynchronous */
	memset(pinned, 0, sizeof(pageable));
	CK(cuMemcpyDtoHAsync(pinned, d, sizeof(pageable), s));
	assert_true(pinned[5] == 0.0f);
	gate_open(&g);
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < N; i++)
		assert_true(pinned[i] == 2.0f * (float)i);
	/* async memset and device-to-device */
	CK(cuMemsetD32Async(d, 0x3f800000, N / 2, s));
	CK(cuMemcpyDtoDAsync(d + N / 2 * 4, d, N / 2 * 4, s));
	CK(cuMemcpyDtoHAsync(back, d, sizeof(back), s)); /* pageable: returns once done */
	for (int i = 0; i < N; i++)
		assert_true(back[i] == 1.0f);
	CK(cuMemFreeHost(pinned));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
}

static void test_stream_queries(void **state)
{
	CUstream s;
	CUcontext ctx, cur;
	unsigned flags;
	int prio, least, greatest;
	unsigned long long id1, id2;
	CUdevice dev;

	CK(cuCtxGetStreamPriorityRange(&least, &greatest));
	assert_true(greatest <= least);
	CK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, greatest));
	CK(cuStreamGetFlags(s, &flags));
	assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
	CK(cuStreamGetPriority(s, &prio));
	assert_int_equal(prio, greatest);
	CK(cuStreamGetCtx(s, &ctx));
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(ctx, cur);
	CK(cuStreamGetId(s, &id1));
	CK(cuStreamGetId(NULL, &id2));
	assert_true(id1 != id2);
	CK(cuStreamGetDevice(s, &dev));
	assert_int_equal(dev, 0);
	CK_EQ(cuStreamCreate(&s, 0x40), CUDA_ERROR_INVALID_VALUE);
	CK(cuStreamDestroy(s));
}

/* Destroying a stream with work pending lets the work finish. */
static void test_destroy_pending(void **state)
{
	CUstream s;
	CUdeviceptr p;

	CK(cuStreamCreate(&s, 0));
	CK(cuMemAlloc(&p, 4));
	set_value(s, p, 1234);
	CK(cuStreamDestroy(s));
	assert_int_equal(read_int(p), 1234);
	CK(cuMemFree(p));
}

/* Many streams, each with its own buffer, in parallel: every result right. */
static void test_many_streams(void **state)
{
	enum { S = 8, N = 2048 };
	CUstream s[S];
	CUdeviceptr d[S];
	static float host[S][N];
	int n = N;

	for (int k = 0; k < S; k++) {
		float sc = (float)(k + 2);
		void *args[] = {&d[k], &sc, &n};

		for (int i = 0; i < N; i++)
			host[k][i] = (float)(i % 100);
		CK(cuStreamCreate(&s[k], CU_STREAM_NON_BLOCKING));
		CK(cuMemAlloc(&d[k], sizeof(host[k])));
		CK(cuMemcpyHtoDAsync(d[k], host[k], sizeof(host[k]), s[k]));
		for (int r = 0; r < 3; r++)
			CK(cuLaunchKernel(fn("scale"), N / 128, 1, 1, 128, 1, 1, 0, s[k], args,
					  NULL));
	}
	for (int k = 0; k < S; k++) {
		CK(cuMemcpyDtoHAsync(host[k], d[k], sizeof(host[k]), s[k]));
		CK(cuStreamSynchronize(s[k]));
		for (int i = 0; i < N; i++)
			assert_true(host[k][i] == (float)(i % 100) * (k + 2) * (k + 2) * (k + 2));
		CK(cuStreamDestroy(s[k]));
		CK(cuMemFree(d[k]));
	}
}

/* The per-thread default stream: an ordinary blocking stream of its own per host thread. */
static void test_per_thread_stream(void **state)
{
	CUdeviceptr p;
	struct gate g;
	CUstream legacy = CU_STREAM_LEGACY;

	gate_init(&g);
	CK(cuMemAlloc(&p, 4));
	CK(cuMemsetD32(p, 0, 1));
	CK(cuLaunchHostFunc(CU_STREAM_PER_THREAD, gate_wait, &g));
	set_value(CU_STREAM_PER_THREAD, p, 77);
	CK_EQ(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
	gate_open(&g);
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	assert_int_equal(read_int(p), 77);
	set_value(legacy, p, 78);
	CK(cuStreamSynchronize(legacy));
	assert_int_equal(read_int(p), 78);
	CK(cuMemFree(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_launch_is_async),
		cmocka_unit_test(test_wait_event),
		cmocka_unit_test(test_legacy_stream),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_host_functions),
		cmocka_unit_test(test_async_copies),
		cmocka_unit_test(test_stream_queries),
		cmocka_unit_test(test_destroy_pending),
		cmocka_unit_test(test_many_streams),
		cmocka_unit_test(test_per_thread_stream),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
