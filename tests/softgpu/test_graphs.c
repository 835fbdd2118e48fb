/* test_graphs.c -- CUDA graphs and stream capture on softgpu, checked against the CPU. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sgtest.h"

#define N 1000

static CUmodule mod;

static CUfunction fn(const char *name)
{
	if (mod == NULL)
		mod = sgt_module("stream_ops.ptx");
	return sgt_function(mod, name);
}

static void dtoh(void *dst, CUdeviceptr src, size_t n)
{
	CK(cuMemcpyDtoH(dst, src, n));
}

static size_t node_count(CUgraph g)
{
	size_t n = 0;

	CK(cuGraphGetNodes(g, NULL, &n));
	return n;
}

/* ---- invalid arguments ---- */

static void test_invalid(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUstream s;
	CUstreamCaptureStatus st;

	(void)state;
	CK_EQ(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphInstantiate(&x, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphLaunch(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
	      CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK(cuStreamCreate(&s, 0));
	CK_EQ(cuStreamBeginCapture(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
	CK(cuStreamEndCapture(s, &g));
	assert_int_equal(node_count(g), 0);
	/* an empty graph instantiates and launches */
	CK(cuGraphInstantiate(&x, g, 0));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuStreamDestroy(s));
}

/* ---- capture: memset -> kernel -> DtoD copy, launched several times ---- */

static void test_capture_launch_repeatedly(void **state)
{
	CUstream s;
	CUdeviceptr a, b, counter;
	CUgraph g;
	CUgraphExec x;
	CUstreamCaptureStatus st;
	cuuint64_t id = 0;
	const CUgraphNode *deps;
	size_t ndeps = 9;
	float host[N], scale = 3.0f;
	int n = N, count;
	void *sargs[] = {&a, &scale, &n};
	void *iargs[] = {&counter};
	CUgraphNode nodes[8];
	size_t nn = 8;
	CUgraphNodeType t;

	(void)state;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&a, N * sizeof(float)));
	CK(cuMemAlloc(&b, N * sizeof(float)));
	CK(cuMemAlloc(&counter, sizeof(int)));
	CK(cuMemsetD32(b, 0, N));
	CK(cuMemsetD32(counter, 0, 1));

	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CK(cuMemsetD32Async(a, 0x3f800000u, N, s)); /* 1.0f */
	CK(cuLaunchKernel(fn("scale"), (N + 127) / 128, 1, 1, 128, 1, 1, 0, s, sargs, NULL));
	CK(cuMemcpyDtoDAsync(b, a, N * sizeof(float), s));
	CK(cuLaunchKernel(fn("increment"), 1, 1, 1, 1, 1, 1, 0, s, iargs, NULL));
	CK(cuStreamGetCaptureInfo(s, &st, &id, NULL, &deps, NULL, &ndeps));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	assert_true(id != 0);
	assert_int_equal(ndeps, 1);
	/* global mode: a potentially unsafe call is refused while capturing */
	{
		CUdeviceptr p;

		CK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	}
	CK(cuStreamEndCapture(s, &g));
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);

	/* nothing ran while capturing */
	dtoh(host, b, sizeof(host));
	for (int i = 0; i < N; i++)
		assert_true(host[i] == 0.0f);
	CK(cuGraphGetNodes(g, nodes, &nn));
	assert_int_equal(nn, 4);
	CK(cuGraphNodeGetType(nodes[0], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMSET);
	CK(cuGraphNodeGetType(nodes[1], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_KERNEL);
	CK(cuGraphNodeGetType(nodes[2], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMCPY);
	{
		size_t ne = 0;

		CK(cuGraphGetEdges(g, NULL, NULL, NULL, &ne));
		assert_int_equal(ne, 3);
	}

	CK(cuGraphInstantiate(&x, g, 0));
	for (int launch = 1; launch <= 3; launch++) {
		CK(cuMemsetD32(b, 0, N));
		CK(cuGraphLaunch(x, s));
		CK(cuStreamSynchronize(s));
		dtoh(host, b, sizeof(host));
		for (int i = 0; i < N; i++)
			assert_true(host[i] == 3.0f);
		dtoh(&count, counter, sizeof(count));
		assert_int_equal(count, launch);
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(a));
	CK(cuMemFree(b));
	CK(cuMemFree(counter));
	CK(cuStreamDestroy(s));
}

/* ---- capture reads pageable host memory when the graph runs ---- */

static void test_capture_host_source(void **state)
{
	CUstream s;
	CUdeviceptr d;
	CUgraph g;
	CUgraphExec x;
	int *src = malloc(N * sizeof(int)), *dst = malloc(N * sizeof(int));
	int v;
	void *args[] = {&d};

	(void)state;
	CK(cuStreamCreate(&s, 0));
	CK(cuMemAlloc(&d, N * sizeof(int)));
	for (int i = 0; i < N; i++)
		src[i] = i;
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	CK(cuMemcpyHtoDAsync(d, src, N * sizeof(int), s));
	CK(cuLaunchKernel(fn("increment"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CK(cuMemcpyDtoHAsync(dst, d, N * sizeof(int), s));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&x, g, 0));
	for (v = 0; v < 3; v++) {
		for (int i = 0; i < N; i++) {
			src[i] = i * 10 + v; /* changed between launches */
			dst[i] = -1;
		}
		CK(cuGraphLaunch(x, s));
		CK(cuStreamSynchronize(s));
		assert_int_equal(dst[0], v + 1); /* element 0 incremented */
		for (int i = 1; i < N; i++)
			assert_int_equal(dst[i], i * 10 + v);
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
	free(src);
	free(dst);
}

/* ---- capture modes ---- */

struct other {
	CUcontext ctx;
	CUstreamCaptureMode mode;
	CUresult alloc;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;
	CUdeviceptr p = 0;
	CUstreamCaptureMode m = o->mode;

	cuCtxSetCurrent(o->ctx);
	cuThreadExchangeStreamCaptureMode(&m);
	o->alloc = cuMemAlloc(&p, 64);
	if (o->alloc == CUDA_SUCCESS)
		cuMemFree(p);
	return NULL;
}

static CUresult alloc_elsewhere(CUstreamCaptureMode mode)
{
	struct other o = {.mode = mode};
	pthread_t t;

	CK(cuCtxGetCurrent(&o.ctx));
	assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
	pthread_join(t, NULL);
	return o.alloc;
}

static void test_capture_modes(void **state)
{
	CUstream s;
	CUgraph g;
	CUdeviceptr p;
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	int zero = 0;

	(void)state;
	CK(cuStreamCreate(&s, 0));
	/* global: this thread and other global-mode threads are refused; relaxed ones are not */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(alloc_elsewhere(CU_STREAM_CAPTURE_MODE_GLOBAL),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(alloc_elsewhere(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
	assert_int_equal(alloc_elsewhere(CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	/* the thread's own mode relaxed: allowed */
	CK(cuThreadExchangeStreamCaptureMode(&m));
	assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
	CK(cuMemAlloc(&p, 64));
	CK(cuMemFree(p));
	CK(cuThreadExchangeStreamCaptureMode(&m));
	assert_int_equal(m, CU_STREAM_CAPTURE_MODE_RELAXED);
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphDestroy(g));

	/* thread-local: only this thread is refused */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	CK_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(alloc_elsewhere(CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphDestroy(g));

	/* relaxed: nothing refused; but the legacy stream may not join a capturing stream */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(cuMemAlloc(&p, 64));
	CK_EQ(cuMemsetD8Async(p, 0, 64, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	CK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_null(g);

	/* synchronizing a capturing stream invalidates the capture */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuMemsetD32Async(p, 0, 1, s));
	CK_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	{
		CUstreamCaptureStatus st;

		CK(cuStreamIsCapturing(s, &st));
		assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	}
	CK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* a synchronous copy during a global capture is refused too */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK_EQ(cuMemcpyHtoD(p, &zero, sizeof(zero)), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphDestroy(g));
	/* a capturing stream that is destroyed takes its capture with it */
	{
		CUstream t;

		CK(cuStreamCreate(&t, 0));
		CK(cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL));
		CK(cuMemsetD32Async(p, 0, 1, t));
		CK(cuStreamDestroy(t));
	}
	/* after the captures, everything is allowed again */
	CK(cuMemcpyHtoD(p, &zero, sizeof(zero)));
	CK(cuMemFree(p));
	CK(cuStreamDestroy(s));
}

/* ---- cross-stream capture: fork and join through events ---- */

static void test_capture_fork_join(void **state)
{
	CUstream s1, s2;
	CUevent fork, joined;
	CUdeviceptr x, y, z;
	CUgraph g;
	CUgraphExec ex;
	CUgraphNode nodes[8], deps[4];
	size_t nn = 8, nd = 4;
	int one = 1, two = 2, hx, hz;
	void *ax[] = {&x, &one}, *ay[] = {&y, &two}, *ac[] = {&y, &z};

	(void)state;
	CK(cuStreamCreate(&s1, 0));
	CK(cuStreamCreate(&s2, 0));
	CK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAlloc(&x, 4));
	CK(cuMemAlloc(&y, 4));
	CK(cuMemAlloc(&z, 4));
	CK(cuMemsetD32(x, 0, 1));
	CK(cuMemsetD32(z, 0, 1));
	CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuEventRecord(fork, s1));
	CK(cuStreamWaitEvent(s2, fork, 0));
	{
		CUstreamCaptureStatus st;

		CK(cuStreamIsCapturing(s2, &st));
		assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	}
	CK(cuLaunchKernel(fn("set_value"), 1, 1, 1, 1, 1, 1, 0, s1, ax, NULL));
	CK(cuLaunchKernel(fn("set_value"), 1, 1, 1, 1, 1, 1, 0, s2, ay, NULL));
	CK(cuEventRecord(joined, s2));
	CK(cuStreamWaitEvent(s1, joined, 0));
	CK(cuLaunchKernel(fn("copy_value"), 1, 1, 1, 1, 1, 1, 0, s1, ac, NULL));
	CK_EQ(cuStreamEndCapture(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	CK_EQ(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	/* again, ended properly */
	CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuEventRecord(fork, s1));
	CK(cuStreamWaitEvent(s2, fork, 0));
	CK(cuLaunchKernel(fn("set_value"), 1, 1, 1, 1, 1, 1, 0, s1, ax, NULL));
	CK(cuLaunchKernel(fn("set_value"), 1, 1, 1, 1, 1, 1, 0, s2, ay, NULL));
	CK(cuEventRecord(joined, s2));
	CK(cuStreamWaitEvent(s1, joined, 0));
	CK(cuLaunchKernel(fn("copy_value"), 1, 1, 1, 1, 1, 1, 0, s1, ac, NULL));
	CK(cuStreamEndCapture(s1, &g));
	CK(cuGraphGetNodes(g, nodes, &nn));
	assert_int_equal(nn, 3);
	/* the two set_value kernels are roots; copy_value depends on both */
	CK(cuGraphNodeGetDependencies(nodes[2], deps, NULL, &nd));
	assert_int_equal(nd, 2);
	nd = 4;
	CK(cuGraphGetRootNodes(g, deps, &nd));
	assert_int_equal(nd, 2);
	CK(cuGraphInstantiate(&ex, g, 0));
	CK(cuGraphLaunch(ex, s1));
	CK(cuStreamSynchronize(s1));
	dtoh(&hx, x, 4);
	dtoh(&hz, z, 4);
	assert_int_equal(hx, 1);
	assert_int_equal(hz, 2);
	CK(cuGraphExecDestroy(ex));
	CK(cuGraphDestroy(g));
	CK(cuEventDestroy(fork));
	CK(cuEventDestroy(joined));
	CK(cuMemFree(x));
	CK(cuMemFree(y));
	CK(cuMemFree(z));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
}

/* ---- an explicit graph: memset -> kernel -> host node -> memcpy; updates ---- */

struct seen {
	int calls;
	float first; /* the host buffer's first value when the host node ran */
	float *host;
};

static void CUDA_CB host_node(void *arg)
{
	struct seen *s = arg;

	s->calls++;
	s->first = s->host[0];
}

static void test_explicit_graph(void **state)
{
	CUstream s;
	CUdeviceptr a;
	CUgraph g, child, clone;
	CUgraphExec x;
	CUgraphNode mset, kern, host, copy, empty, childn, rec, kclone;
	CUevent ev;
	float *out = malloc(N * sizeof(float)), scale = 2.0f, scale2 = 5.0f;
	int n = N;
	void *args[] = {&a, &scale, &n};
	void *args2[] = {&a, &scale2, &n};
	struct seen seen = {.host = out};
	CUDA_MEMSET_NODE_PARAMS mp = {0};
	CUDA_KERNEL_NODE_PARAMS kp = {0}, kq;
	CUDA_HOST_NODE_PARAMS hp = {host_node, &seen};
	CUDA_MEMCPY3D cp = {0};
	CUgraphExecUpdateResultInfo info;

	(void)state;
	CK(cuStreamCreate(&s, 0));
	CK(cuEventCreate(&ev, 0));
	CK(cuMemAlloc(&a, N * sizeof(float)));
	CK(cuGraphCreate(&g, 0));
	mp.dst = a;
	mp.value = 0x3f800000u; /* 1.0f */
	mp.elementSize = 4;
	mp.width = N;
	mp.height = 1;
	CK(cuGraphAddMemsetNode(&mset, g, NULL, 0, &mp, NULL));
	kp.func = fn("scale");
	kp.gridDimX = (N + 63) / 64;
	kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 64;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = args;
	CK(cuGraphAddKernelNode(&kern, g, &mset, 1, &kp));
	CK(cuGraphAddHostNode(&host, g, &kern, 1, &hp));
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = a;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST;
	cp.dstHost = out;
	cp.WidthInBytes = N * sizeof(float);
	cp.Height = 1;
	cp.Depth = 1;
	CK(cuGraphAddMemcpyNode(&copy, g, &host, 1, &cp, NULL));
	/* an empty node, a child graph (one more scale by 2 before the copy? no: after) */
	CK(cuGraphAddEmptyNode(&empty, g, &copy, 1));
	CK(cuGraphCreate(&child, 0));
	CK(cuGraphAddEventRecordNode(&rec, child, NULL, 0, ev));
	CK(cuGraphAddChildGraphNode(&childn, g, &empty, 1, child));
	CK(cuGraphDestroy(child)); /* the node has its own copy */
	assert_int_equal(node_count(g), 6);

	/* parameters read back */
	CK(cuGraphKernelNodeGetParams(kern, &kq));
	assert_ptr_equal(kq.func, kp.func);
	assert_int_equal(kq.gridDimX, kp.gridDimX);
	assert_true(*(float *)kq.kernelParams[1] == 2.0f);
	{
		CUDA_MEMSET_NODE_PARAMS mq;
		CUDA_HOST_NODE_PARAMS hq;

		CK(cuGraphMemsetNodeGetParams(mset, &mq));
		assert_int_equal(mq.dst, a);
		CK(cuGraphHostNodeGetParams(host, &hq));
		assert_ptr_equal(hq.userData, &seen);
	}
	{
		char path[] = "/tmp/sg_graph_XXXXXX";
		int fd = mkstemp(path);
		FILE *f;
		char buf[64] = {0};

		assert_true(fd >= 0);
		CK(cuGraphDebugDotPrint(g, path, 0));
		f = fdopen(fd, "r");
		assert_non_null(fgets(buf, sizeof(buf), f));
		assert_non_null(strstr(buf, "digraph"));
		fclose(f);
		unlink(path);
	}

	CK(cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
	CK(cuGraphUpload(x, s));
	for (int i = 0; i < N; i++)
		out[i] = -1.0f;
	CK(cuGraphLaunch(x, s));
	CK(cuEventSynchronize(ev)); /* the child graph's record ran last */
	CK(cuStreamSynchronize(s));
	assert_int_equal(seen.calls, 1);
	assert_true(seen.first == -1.0f); /* the host node ran before the copy */
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 2.0f);

	/* exec SetParams: the executable changes, the graph does not */
	kp.kernelParams = args2;
	CK(cuGraphExecKernelNodeSetParams(x, kern, &kp));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	assert_int_equal(seen.calls, 2);
	assert_true(seen.first == 2.0f);
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 5.0f);
	CK(cuGraphKernelNodeGetParams(kern, &kq));
	assert_true(*(float *)kq.kernelParams[1] == 2.0f);

	/* exec update from an edited clone */
	CK(cuGraphClone(&clone, g));
	CK(cuGraphNodeFindInClone(&kclone, kern, clone));
	scale2 = 7.0f;
	kp.kernelParams = args2;
	CK(cuGraphKernelNodeSetParams(kclone, &kp));
	scale2 = 0.0f; /* the node holds its own copy of the parameters */
	CK(cuGraphExecUpdate(x, clone, &info));
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 7.0f);
	/* and SetParams still finds the node by the original graph's handle */
	kp.kernelParams = args;
	CK(cuGraphExecKernelNodeSetParams(x, kern, &kp));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 2.0f);

	/* a changed topology is refused */
	CK(cuGraphDestroyNode(kclone));
	CK_EQ(cuGraphExecUpdate(x, clone, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);

	/* a disabled kernel node does not run */
	CK(cuGraphNodeSetEnabled(x, kern, 0));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < N; i++)
		assert_true(out[i] == 1.0f);

	/* a cycle cannot be instantiated */
	{
		CUgraphExec bad;

		CK(cuGraphAddDependencies(g, &childn, &mset, NULL, 1));
		CK_EQ(cuGraphInstantiate(&bad, g, 0), CUDA_ERROR_INVALID_VALUE);
		CK(cuGraphRemoveDependencies(g, &childn, &mset, NULL, 1));
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(clone));
	CK(cuGraphDestroy(g));
	CK(cuEventDestroy(ev));
	CK(cuMemFree(a));
	CK(cuStreamDestroy(s));
	free(out);
}

/* ---- a graph launched into a capture becomes a child graph node ---- */

static void test_launch_in_capture(void **state)
{
	CUstream s;
	CUdeviceptr c;
	CUgraph g, outer;
	CUgraphExec x, xo;
	CUgraphNode nodes[4];
	size_t nn = 4;
	CUgraphNodeType t;
	int v;
	void *args[] = {&c};

	(void)state;
	CK(cuStreamCreate(&s, 0));
	CK(cuMemAlloc(&c, 4));
	CK(cuMemsetD32(c, 0, 1));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuLaunchKernel(fn("increment"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&x, g, 0));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuGraphLaunch(x, s));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamEndCapture(s, &outer));
	CK(cuGraphGetNodes(outer, nodes, &nn));
	assert_int_equal(nn, 2);
	CK(cuGraphNodeGetType(nodes[0], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_GRAPH);
	CK(cuGraphInstantiate(&xo, outer, 0));
	CK(cuGraphLaunch(xo, s));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	dtoh(&v, c, 4);
	assert_int_equal(v, 3);
	CK(cuGraphExecDestroy(xo));
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(outer));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(c));
	CK(cuStreamDestroy(s));
}

/* Memory and conditional nodes: what they refuse (hostile or invalid parameters). */
static void test_mem_cond_refusals(void **state)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0},
			       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUgraphNodeParams np;
	CUgraphNode a, f, c;
	CUgraph g;
	CUgraphExec x;
	CUgraphConditionalHandle h;
	cuuint64_t v = 1;
	CUdeviceptr d;

	(void)state;
	CK(cuGraphCreate(&g, 0));
	memset(&ap, 0, sizeof(ap));
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.bytesize = 0;
	CK_EQ(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
	ap.bytesize = 4096;
	ap.poolProps.location.id = 99;
	CK_EQ(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
	ap.poolProps.location.id = 0;
	ap.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	CK_EQ(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE);
	ap.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	ap.accessDescs = &acc;
	ap.accessDescCount = 1;
	CK(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap));
	d = ap.dptr;
	assert_true(d != 0);
	memset(&ap, 0, sizeof(ap));
	CK(cuGraphMemAllocNodeGetParams(a, &ap));
	assert_true(ap.dptr == d && ap.bytesize == 4096 && ap.accessDescCount == 1);
	assert_int_equal(ap.accessDescs[0].flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	/* frees: not an allocation node's address, twice in one graph */
	CK_EQ(cuGraphAddMemFreeNode(&f, g, &a, 1, d + 16), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphAddMemFreeNode(&f, g, &a, 1, 0x1234), CUDA_ERROR_INVALID_VALUE);
	CK(cuGraphAddMemFreeNode(&f, g, &a, 1, d));
	CK_EQ(cuGraphAddMemFreeNode(&c, g, &f, 1, d), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphDestroyNode(f), CUDA_ERROR_NOT_SUPPORTED);
	/* graph memory attributes */
	CK_EQ(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &v),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceGetGraphMemAttribute(0, (CUgraphMem_attribute)77, &v),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceGetGraphMemAttribute(5, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &v),
	      CUDA_ERROR_INVALID_DEVICE);
	CK_EQ(cuDeviceGraphMemTrim(-1), CUDA_ERROR_INVALID_DEVICE);
	/* conditionals: flags, handles, types and sizes */
	CK_EQ(cuGraphConditionalHandleCreate(&h, g, NULL, 0, 0x80), CUDA_ERROR_INVALID_VALUE);
	CK(cuGraphConditionalHandleCreate(&h, g, NULL, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
	memset(&np, 0, sizeof(np));
	np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	np.conditional.handle = 0xdead;
	np.conditional.type = CU_GRAPH_COND_TYPE_IF;
	np.conditional.size = 1;
	CK_EQ(cuGraphAddNode(&c, g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
	np.conditional.handle = h;
	np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
	np.conditional.size = 2;
	CK_EQ(cuGraphAddNode(&c, g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
	np.conditional.type = CU_GRAPH_COND_TYPE_SWITCH;
	np.conditional.size = 0;
	CK_EQ(cuGraphAddNode(&c, g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
	np.conditional.type = (CUgraphConditionalNodeType)9;
	np.conditional.size = 1;
	CK_EQ(cuGraphAddNode(&c, g, NULL, NULL, 0, &np), CUDA_ERROR_INVALID_VALUE);
	np.conditional.type = CU_GRAPH_COND_TYPE_IF;
	CK(cuGraphAddNode(&c, g, NULL, NULL, 0, &np));
	assert_non_null(np.conditional.phGraph_out);
	/* a host node in a body is refused at instantiation; the body is the node's */
	{
		CUDA_HOST_NODE_PARAMS hp = {(CUhostFn)free, NULL};
		CUgraphNode hn;

		CK(cuGraphAddHostNode(&hn, np.conditional.phGraph_out[0], NULL, 0, &hp));
	}
	CK_EQ(cuGraphDestroy(np.conditional.phGraph_out[0]), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuGraphInstantiate(&x, g, 0), CUDA_ERROR_INVALID_VALUE);
	CK(cuGraphDestroy(g));
}

/* An allocation its graph never frees outlives the graph and its executable, as in CUDA: the
 * program still uses it and gives it back with cuMemFree. */
static void test_mem_outlives_graph(void **state)
{
	CUDA_MEM_ALLOC_NODE_PARAMS ap;
	CUgraphNode a;
	CUgraph g;
	CUgraphExec x;
	CUdeviceptr d;
	cuuint64_t used = 0;
	unsigned char b[64];

	(void)state;
	CK(cuGraphCreate(&g, 0));
	memset(&ap, 0, sizeof(ap));
	ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	ap.bytesize = 4096;
	CK(cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap));
	d = ap.dptr;
	CK(cuGraphInstantiate(&x, g, 0));
	CK(cuGraphLaunch(x, NULL));
	CK(cuStreamSynchronize(NULL));
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
	assert_true(used >= 4096); /* still allocated */
	CK(cuMemsetD8(d, 0x5a, 4096));
	CK(cuMemcpyDtoH(b, d + 64, sizeof(b)));
	assert_int_equal(b[0], 0x5a);
	assert_int_equal(b[63], 0x5a);
	CK(cuMemFree(d));
	CK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
	assert_true(used == 0);
	CK_EQ(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_capture_launch_repeatedly),
		cmocka_unit_test(test_capture_host_source),
		cmocka_unit_test(test_capture_modes),
		cmocka_unit_test(test_capture_fork_join),
		cmocka_unit_test(test_explicit_graph),
		cmocka_unit_test(test_launch_in_capture),
		cmocka_unit_test(test_mem_cond_refusals),
		cmocka_unit_test(test_mem_outlives_graph),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
