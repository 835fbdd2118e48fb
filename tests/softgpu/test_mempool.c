/* test_mempool.c -- memory pools and stream-ordered allocation: reuse only once a free's
 * stream has passed it, the reuse flags, thresholds, trim, destroy, contexts; no timing. */
#include <pthread.h>
#include <string.h>

#include "sgtest.h"

/* A host function that holds its stream until the test opens it (as in test_streams.c):
 * what is queued behind it has not run. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int open;
};

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

static CUmemoryPool pool_new(void)
{
	CUmemPoolProps props;
	CUmemoryPool p;
	cuuint64_t keep = ~0ull;

	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CK(cuMemPoolCreate(&p, &props));
	/* keeps what is freed, so reuse is visible */
	CK(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	return p;
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = ~0ull;

	CK(cuMemPoolGetAttribute(p, a, &v));
	return v;
}

static void test_invalid(void **state)
{
	CUmemoryPool def, p;
	CUmemPoolProps props;
	CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_NONE};
	CUdeviceptr x;
	cuuint64_t two = 2;
	int v;

	(void)state;
	CK(cuDeviceGetDefaultMemPool(&def, 0));
	CK_EQ(cuDeviceGetDefaultMemPool(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceGetDefaultMemPool(&def, 7), CUDA_ERROR_INVALID_DEVICE);
	CK_EQ(cuMemPoolCreate(&p, NULL), CUDA_ERROR_INVALID_VALUE);
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 3;
	CK_EQ(cuMemPoolCreate(&p, &props), CUDA_ERROR_INVALID_DEVICE);
	props.location.id = 0;
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	CK_EQ(cuMemPoolCreate(&p, &props), CUDA_ERROR_NOT_SUPPORTED);
	props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	CK_EQ(cuMemPoolCreate(&p, &props), CUDA_ERROR_NOT_SUPPORTED);
	p = pool_new();
	CK_EQ(cuMemAllocAsync(NULL, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemAllocAsync(&x, 0, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemAllocFromPoolAsync(&x, 16, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemAllocAsync(&x, 1ull << 40, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	CK_EQ(cuMemFreeAsync(0, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemFreeAsync(0x1234, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &two),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &two),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemPoolGetAttribute(p, (CUmemPool_attribute)99, &two), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	/* the pool's own device keeps read-write access; no peer access */
	CK_EQ(cuMemPoolSetAccess(p, &d, 1), CUDA_ERROR_INVALID_VALUE);
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemPoolSetAccess(p, &d, 1));
	CK(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &v));
	assert_int_equal(v, 1);
	CK(cuMemPoolDestroy(p));
	CK_EQ(cuMemPoolTrimTo(p, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceSetMemPool(0, p), CUDA_ERROR_INVALID_VALUE);
}

/* A free the stream has not reached is not reused by another stream; once reached it is. */
static void test_reuse_in_stream_order(void **state)
{
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
	CUmemoryPool p = pool_new();
	CUstream s1, s2;
	CUdeviceptr a, b, c;

	(void)state;
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocFromPoolAsync(&a, 4096, p, s1));
	CK(cuLaunchHostFunc(s1, gate_wait, &g));
	/* work queued before the free still uses a */
	CK(cuMemsetD8Async(a, 7, 4096, s1));
	CK(cuMemFreeAsync(a, s1));
	CK_EQ(cuMemFreeAsync(a, s1), CUDA_ERROR_INVALID_VALUE); /* already being freed */
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	CK(cuMemAllocFromPoolAsync(&b, 4096, p, s2));
	assert_true(b != a);
	{
		/* the stream that frees it may reuse it at once: its later work follows the free */
		CUdeviceptr same;

		CK(cuMemAllocFromPoolAsync(&same, 4096, p, s1));
		assert_true(same == a);
		assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 8192);
		CK(cuMemsetD8Async(same, 9, 4096, s1));
		CK(cuMemFreeAsync(same, s1));
	}
	gate_open(&g);
	CK(cuStreamSynchronize(s1));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096); /* b */
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 8192);
	CK(cuMemAllocFromPoolAsync(&c, 4096, p, s2));
	assert_true(c == a); /* reached: reused, nothing more reserved */
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 8192);
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 8192);
	CK(cuMemFreeAsync(b, s2));
	CK(cuMemFreeAsync(c, s2));
	CK(cuStreamSynchronize(s2));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	CK(cuMemPoolTrimTo(p, 4096));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4096);
	CK(cuMemPoolTrimTo(p, 0));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	CK(cuMemPoolDestroy(p));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
}

/* Without opportunistic reuse, only the stream that freed memory reuses it. */
static void test_no_opportunistic_reuse(void **state)
{
	CUmemoryPool p = pool_new();
	CUstream s1, s2;
	CUdeviceptr a, b, c;
	int off = 0;

	(void)state;
	CK(cuMemPoolSetAttribute(p, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocFromPoolAsync(&a, 4096, p, s1));
	CK(cuMemFreeAsync(a, s1));
	CK(cuStreamSynchronize(s1));
	CK(cuMemAllocFromPoolAsync(&b, 4096, p, s2));
	assert_true(b != a);
	CK(cuMemAllocFromPoolAsync(&c, 4096, p, s1));
	assert_true(c == a);
	CK(cuMemFreeAsync(b, s2));
	CK(cuMemFreeAsync(c, s1));
	CK(cuCtxSynchronize());
	CK(cuMemPoolDestroy(p));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
}

/* Threshold 0 (the default pool's): what is freed goes back at the synchronize. */
static void test_threshold_and_current_pool(void **state)
{
	CUmemoryPool def, cur, p = pool_new();
	CUdeviceptr a;
	CUmemoryPool owner = NULL;

	(void)state;
	CK(cuDeviceGetDefaultMemPool(&def, 0));
	CK(cuDeviceGetMemPool(&cur, 0));
	assert_ptr_equal(def, cur);
	CK(cuMemAllocAsync(&a, 1 << 20, NULL));
	assert_true(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 1 << 20);
	CK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
	assert_ptr_equal(owner, def);
	CK(cuMemFreeAsync(a, NULL));
	CK(cuStreamSynchronize(NULL));
	assert_int_equal(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	/* the current pool serves cuMemAllocAsync; destroying it brings back the default */
	CK(cuDeviceSetMemPool(0, p));
	CK(cuMemAllocAsync(&a, 4096, NULL));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	CK(cuMemPoolDestroy(p)); /* a stays usable until freed */
	CK(cuDeviceGetMemPool(&cur, 0));
	assert_ptr_equal(cur, def);
	CK(cuMemsetD8Async(a, 1, 4096, NULL));
	CK(cuMemFreeAsync(a, NULL));
	CK(cuCtxSynchronize());
	CK_EQ(cuMemsetD8(a, 1, 16), CUDA_ERROR_INVALID_VALUE); /* freed */
}

/* Pool memory a context allocated goes back when the context goes; cuMemFree takes it. */
static void test_context_and_free(void **state)
{
	CUmemoryPool p = pool_new();
	CUcontext ctx, mine;
	CUdevice dev;
	CUdeviceptr a, b;

	(void)state;
	CK(cuCtxGetCurrent(&mine));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuMemAllocFromPoolAsync(&a, 4096, p, NULL));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4096);
	CK(cuCtxDestroy(ctx));
	CK(cuCtxSetCurrent(mine));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	CK_EQ(cuMemFreeAsync(a, NULL), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAllocFromPoolAsync(&b, 4096, p, NULL));
	CK(cuMemFree(b));
	assert_int_equal(attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	CK_EQ(cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
	/* a cuMemAlloc allocation freed in stream order */
	CK(cuMemAlloc(&b, 4096));
	CK(cuMemFreeAsync(b, NULL));
	CK(cuCtxSynchronize());
	CK_EQ(cuMemFree(b), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemPoolDestroy(p));
}

/* An allocation or free on a capturing stream would be a graph memory node: refused. */
/* On a capturing stream an allocation and its free are graph memory nodes; a free of other
 * memory there is refused and invalidates the capture. */
static void test_capture(void **state)
{
	CUstream s;
	CUdeviceptr a, b;
	CUgraph g;
	CUgraphNode nodes[2];
	CUgraphNodeType t0, t1;
	size_t n = 2;

	(void)state;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocAsync(&a, 4096, s));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(cuMemAllocAsync(&b, 4096, s));
	assert_true(b != 0 && b != a);
	CK(cuMemFreeAsync(b, s));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphGetNodes(g, nodes, &n));
	assert_int_equal(n, 2);
	CK(cuGraphNodeGetType(nodes[0], &t0));
	CK(cuGraphNodeGetType(nodes[1], &t1));
	assert_int_equal(t0, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
	assert_int_equal(t1, CU_GRAPH_NODE_TYPE_MEM_FREE);
	CK(cuGraphDestroy(g));

	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CK_EQ(cuMemFreeAsync(a, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CK(cuMemFreeAsync(a, s));
	CK(cuStreamSynchronize(s));
	CK(cuStreamDestroy(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_invalid, sgt_setup, sgt_teardown),
		cmocka_unit_test_setup_teardown(test_reuse_in_stream_order, sgt_setup,
						sgt_teardown),
		cmocka_unit_test_setup_teardown(test_no_opportunistic_reuse, sgt_setup,
						sgt_teardown),
		cmocka_unit_test_setup_teardown(test_threshold_and_current_pool, sgt_setup,
						sgt_teardown),
		cmocka_unit_test_setup_teardown(test_context_and_free, sgt_setup, sgt_teardown),
		cmocka_unit_test_setup_teardown(test_capture, sgt_setup, sgt_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
