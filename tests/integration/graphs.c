/* graphs.c -- graphs that touch this process's memory behave as on a local GPU at every
 * launch: a capture across two streams (fork and join by events) whose host source changes
 * between launches and whose result comes back to pageable memory; an explicit graph whose
 * host node runs after the bytes of an earlier node landed here and writes the bytes a
 * later node reads; a stream callback in a capture is refused and the capture invalidated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "graphs_kernel.ptx.h"

#define CK(x)                                                  \
	do {                                                   \
		CUresult r_ = (x);                             \
		if (r_ != CUDA_SUCCESS) {                      \
			printf("ERROR %s: %d\n", #x, (int)r_); \
			exit(1);                               \
		}                                              \
	} while (0)
#define WANT(x, want)                                                                \
	do {                                                                         \
		CUresult r_ = (x);                                                   \
		if (r_ != (want)) {                                                  \
			printf("ERROR %s: %d, want %d\n", #x, (int)r_, (int)(want)); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)
#define CHECK(cond, ...)                            \
	do {                                        \
		if (!(cond)) {                      \
			printf("FAIL %s: ", #cond); \
			printf(__VA_ARGS__);        \
			printf("\n");               \
			exit(1);                    \
		}                                   \
	} while (0)

#define N 300000 /* 1.2 MB: more than one 1 MiB transfer chunk */

static CUfunction add_one;
static int host_calls;
static int *seen_buf, seen_ok;
static int *fill_buf, fill_value, expect_seen = 7;

static void launch_add(CUstream s, CUdeviceptr p, int n)
{
	void *args[] = {&p, &n};

	CK(cuLaunchKernel(add_one, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void CUDA_CB count(void *arg)
{
	(void)arg;
	host_calls++;
}

static void CUDA_CB check_then_fill(void *arg)
{
	/* the earlier node's bytes are here; the later node reads what this writes */
	seen_ok = 1;
	for (int i = 0; i < N; i++)
		if (seen_buf[i] != expect_seen)
			seen_ok = 0;
	for (int i = 0; i < N; i++)
		fill_buf[i] = fill_value + i;
	(void)arg;
}

static void CUDA_CB never(CUstream s, CUresult st, void *arg)
{
	(void)s;
	(void)st;
	(void)arg;
}

static void captured(void)
{
	CUstream s1, s2;
	CUevent fork, join;
	CUdeviceptr d;
	CUgraph g, building = NULL;
	CUgraphExec x;
	int *src = malloc(N * sizeof(int)), *dst = malloc(N * sizeof(int));
	int half = N / 2;

	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAlloc(&d, N * sizeof(int)));
	CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuMemcpyHtoDAsync(d, src, N * sizeof(int), s1));
	{
		CUstreamCaptureStatus st;
		cuuint64_t id = 0;
		size_t nd = 0;

		CK(cuStreamGetCaptureInfo(s1, &st, &id, &building, NULL, NULL, &nd));
		CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id && building && nd == 1,
		      "capture info: status %d id %llu graph %p %zu dependencies", (int)st,
		      (unsigned long long)id, (void *)building, nd);
	}
	CK(cuEventRecord(fork, s1));
	CK(cuStreamWaitEvent(s2, fork, 0));
	launch_add(s1, d, half);
	launch_add(s2, d + half * sizeof(int), N - half);
	CK(cuEventRecord(join, s2));
	CK(cuStreamWaitEvent(s1, join, 0));
	CK(cuLaunchHostFunc(s1, count, NULL));
	CK(cuMemcpyDtoHAsync(dst, d, N * sizeof(int), s1));
	CK(cuStreamEndCapture(s1, &g));
	CHECK(g == building, "the capture's graph is not the one its info named");
	CK(cuGraphInstantiate(&x, g, 0));
	for (int launch = 0; launch < 3; launch++) {
		for (int i = 0; i < N; i++) {
			src[i] = i * 3 + launch * 1000; /* read when the graph runs */
			dst[i] = -1;
		}
		CK(cuGraphLaunch(x, s1));
		CK(cuStreamSynchronize(s1));
		for (int i = 0; i < N; i++)
			CHECK(dst[i] == src[i] + 1, "launch %d: dst[%d] = %d, want %d", launch, i,
			      dst[i], src[i] + 1);
		CHECK(host_calls == launch + 1, "host function ran %d times", host_calls);
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));

	/* a stream callback cannot be captured; the capture ends invalidated */
	CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	WANT(cuStreamAddCallback(s1, never, NULL, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	WANT(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	CK(cuMemFree(d));
	CK(cuEventDestroy(fork));
	CK(cuEventDestroy(join));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
	free(src);
	free(dst);
	printf("captured: 3 launches across 2 streams, host source read at each launch\n");
}

/* 2-D copies with pitched rows on both sides, more rows than fit in one chunk */
static void captured_2d(void)
{
	enum { W = 1000, H = 1200, SP = 1024, DP = 1100 };
	unsigned char *src = malloc((size_t)SP * H), *dst = malloc((size_t)DP * H);
	CUdeviceptr d;
	size_t pitch;
	CUstream s;
	CUgraph g;
	CUgraphExec x;
	CUDA_MEMCPY2D up = {0}, down = {0};

	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocPitch(&d, &pitch, W, H, 4));
	up.srcMemoryType = CU_MEMORYTYPE_HOST;
	up.srcHost = src;
	up.srcPitch = SP;
	up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	up.dstDevice = d;
	up.dstPitch = pitch;
	up.WidthInBytes = W;
	up.Height = H;
	down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	down.srcDevice = d;
	down.srcPitch = pitch;
	down.dstMemoryType = CU_MEMORYTYPE_HOST;
	down.dstHost = dst;
	down.dstPitch = DP;
	down.WidthInBytes = W;
	down.Height = H;
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuMemcpy2DAsync(&up, s));
	CK(cuMemcpy2DAsync(&down, s));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&x, g, 0));
	for (int launch = 0; launch < 2; launch++) {
		for (size_t y = 0; y < H; y++)
			for (size_t i = 0; i < SP; i++)
				src[y * SP + i] = (unsigned char)(y * 7 + i + launch);
		memset(dst, 0xee, (size_t)DP * H);
		CK(cuGraphLaunch(x, s));
		CK(cuStreamSynchronize(s));
		for (size_t y = 0; y < H; y++) {
			for (size_t i = 0; i < DP; i++) {
				unsigned char want = i < W ? src[y * SP + i] : 0xee;

				CHECK(dst[y * DP + i] == want,
				      "launch %d row %zu byte %zu: %d, want %d", launch, y, i,
				      dst[y * DP + i], want);
			}
		}
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
	free(src);
	free(dst);
	printf("captured 2-D: pitched rows both ways, 2 launches\n");
}

static void explicit_graph(void)
{
	CUstream s;
	CUdeviceptr d;
	CUgraph g;
	CUgraphExec x;
	CUgraphNode set, down, host, up, kern, back;
	int *out = malloc(N * sizeof(int));
	int n = N;
	void *args[] = {&d, &n};
	CUDA_MEMSET_NODE_PARAMS mp = {0};
	CUDA_MEMCPY3D c = {0};
	CUDA_HOST_NODE_PARAMS hp = {check_then_fill, NULL};
	CUDA_KERNEL_NODE_PARAMS kp = {0};

	seen_buf = malloc(N * sizeof(int));
	fill_buf = malloc(N * sizeof(int));
	CK(cuStreamCreate(&s, 0));
	CK(cuMemAlloc(&d, N * sizeof(int)));
	CK(cuGraphCreate(&g, 0));
	mp.dst = d;
	mp.value = 7;
	mp.elementSize = 4;
	mp.width = N;
	mp.height = 1;
	CK(cuGraphAddMemsetNode(&set, g, NULL, 0, &mp, NULL));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = seen_buf;
	c.WidthInBytes = N * sizeof(int);
	c.Height = 1;
	c.Depth = 1;
	CK(cuGraphAddMemcpyNode(&down, g, &set, 1, &c, NULL));
	CK(cuGraphAddHostNode(&host, g, &down, 1, &hp));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = fill_buf;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d;
	c.WidthInBytes = N * sizeof(int);
	c.Height = 1;
	c.Depth = 1;
	CK(cuGraphAddMemcpyNode(&up, g, &host, 1, &c, NULL));
	kp.func = add_one;
	kp.gridDimX = (N + 255) / 256;
	kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 256;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = args;
	CK(cuGraphAddKernelNode(&kern, g, &up, 1, &kp));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = out;
	c.WidthInBytes = N * sizeof(int);
	c.Height = 1;
	c.Depth = 1;
	CK(cuGraphAddMemcpyNode(&back, g, &kern, 1, &c, NULL));
	CK(cuGraphInstantiate(&x, g, 0));
	for (int launch = 0; launch < 2; launch++) {
		memset(seen_buf, 0, N * sizeof(int));
		fill_value = 100 * (launch + 1);
		seen_ok = 0;
		CK(cuGraphLaunch(x, s));
		CK(cuStreamSynchronize(s));
		CHECK(seen_ok, "launch %d: the host node did not see the earlier node's bytes",
		      launch);
		for (int i = 0; i < N; i++)
			CHECK(out[i] == fill_value + i + 1, "launch %d: out[%d] = %d", launch, i,
			      out[i]);
	}
	/* the executable's memset and host nodes get new parameters; the graph keeps its own */
	mp.value = 9;
	expect_seen = 9;
	CK(cuGraphExecMemsetNodeSetParams(x, set, &mp, NULL));
	seen_ok = 0;
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	CHECK(seen_ok, "after SetParams: the host node did not see the new memset value");
	hp.fn = count;
	host_calls = 0;
	CK(cuGraphExecHostNodeSetParams(x, host, &hp));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	CHECK(host_calls == 1, "the new host function ran %d times", host_calls);
	for (int i = 0; i < N; i++)
		CHECK(out[i] == fill_value + i + 1, "after SetParams: out[%d] = %d", i, out[i]);
	{
		CUDA_HOST_NODE_PARAMS q;

		CK(cuGraphHostNodeGetParams(host, &q));
		CHECK(q.fn == check_then_fill, "the graph's host node changed");
	}
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
	free(out);
	printf("explicit: host node between a download and an upload, 2 launches, exec "
	       "SetParams\n");
}

/* `graphs launches K`: a graph of 8 kernel nodes launched K times, for the scenario to
 * count the session's calls (a launch is one message, not one per node). */
static int launches(int k)
{
	CUstream s;
	CUdeviceptr d;
	CUgraph g;
	CUgraphExec x;
	int v = 0;

	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, sizeof(int)));
	CK(cuMemsetD32(d, 0, 1));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 8; i++)
		launch_add(s, d, 1);
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&x, g, 0));
	for (int i = 0; i < k; i++)
		CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	CK(cuMemcpyDtoH(&v, d, sizeof(v)));
	CHECK(v == 8 * k, "%d increments, want %d", v, 8 * k);
	printf("launches: %d of 8 nodes\n", k);
	return 0;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, graphs_ptx));
	CK(cuModuleGetFunction(&add_one, mod, "add_one"));
	if (argc == 3 && strcmp(argv[1], "launches") == 0)
		return launches(atoi(argv[2]));
	captured();
	captured_2d();
	explicit_graph();
	printf("OK\n");
	return 0;
}
