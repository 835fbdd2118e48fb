// rt_graphmem.cu -- graph memory nodes: an allocation node -> kernels -> free node graph
// launched several times, captured cudaMallocAsync/cudaFreeAsync, the graph memory
// attributes (used/reserved, current and high, the reset of a high mark, trim), an
// allocation freed outside its graph (with and without AUTO_FREE_ON_LAUNCH), memory that
// outlives its graph and executable, the one instantiation rule and an allocation past the
// device's memory. Every value is checked
// against the CPU, directly on softgpu and through the pool (the same program: the pool's
// answers must be the driver's).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rt_check.h"

__global__ void fill(int *a, int n, int mul, int add)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] = i * mul + add;
}

__global__ void accumulate(int *out, const int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] += a[i];
}

static const int N = 5000;

static uint64_t gattr(cudaGraphMemAttributeType a)
{
	uint64_t v = ~0ull;
	CK(cudaDeviceGetGraphMemAttribute(0, a, &v));
	return v;
}

static cudaMemAllocNodeParams alloc_params(size_t bytes)
{
	cudaMemAllocNodeParams p;
	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = cudaMemAllocationTypePinned;
	p.poolProps.location.type = cudaMemLocationTypeDevice;
	p.poolProps.location.id = 0;
	p.bytesize = bytes;
	return p;
}

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
				  void *fn, void **args)
{
	cudaKernelNodeParams k;
	cudaGraphNode_t n;
	memset(&k, 0, sizeof(k));
	k.func = fn;
	k.gridDim = dim3((N + 127) / 128);
	k.blockDim = dim3(128);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&n, g, deps, nd, &k));
	return n;
}

static void check_out(const int *dout, int launches, int mul, int add, const char *what)
{
	std::vector<int> h(N);
	CK(cudaMemcpy(h.data(), dout, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		EXPECT(h[i] == launches * (i * mul + add), "%s: out[%d] = %d, want %d", what, i,
		       h[i], launches * (i * mul + add));
}

// alloc -> fill -> accumulate -> free, launched five times.
static void alloc_kernel_free(cudaStream_t s, int *dout)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t a, k1, k2, f;
	cudaMemAllocNodeParams p = alloc_params(N * sizeof(int));
	int n = N, mul = 3, add = 1;

	CK(cudaMemset(dout, 0, N * sizeof(int)));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
	EXPECT(p.dptr != NULL, "an allocation node returns its address");
	int *buf = (int *)p.dptr;
	void *fa[] = {&buf, &n, &mul, &add};
	k1 = add_kernel(g, &a, 1, (void *)fill, fa);
	void *aa[] = {&dout, &buf, &n};
	k2 = add_kernel(g, &k1, 1, (void *)accumulate, aa);
	CK(cudaGraphAddMemFreeNode(&f, g, &k2, 1, p.dptr));

	cudaMemAllocNodeParams q;
	CK(cudaGraphMemAllocNodeGetParams(a, &q));
	EXPECT(q.dptr == p.dptr && q.bytesize == p.bytesize, "alloc node params");
	void *fp = NULL;
	CK(cudaGraphMemFreeNodeGetParams(f, &fp));
	EXPECT(fp == p.dptr, "free node params");
	cudaGraph_t c;
	EXPECT(cudaGraphClone(&c, g) != cudaSuccess, "a graph with memory nodes is not cloned");
	(void)cudaGetLastError();
	EXPECT(cudaFreeAsync(p.dptr, s) != cudaSuccess, "its own graph frees it: no one else");
	(void)cudaGetLastError();

	CK(cudaGraphInstantiate(&x, g, 0));
	cudaGraphExec_t x2;
	EXPECT(cudaGraphInstantiate(&x2, g, 0) != cudaSuccess,
	       "one instantiation at a time of a graph with memory nodes");
	(void)cudaGetLastError();
	for (int i = 0; i < 5; i++)
		CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	check_out(dout, 5, mul, add, "alloc/kernel/free");

	/* the memory is the executable's now, between launches too: used and reserved */
	uint64_t used = gattr(cudaGraphMemAttrUsedMemCurrent);
	EXPECT(used >= N * sizeof(int), "used by the executable: %llu", (unsigned long long)used);
	EXPECT(gattr(cudaGraphMemAttrUsedMemHigh) >= used, "used high");
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) >= N * sizeof(int), "reserved");
	EXPECT(gattr(cudaGraphMemAttrReservedMemHigh) >= N * sizeof(int), "reserved high");
	uint64_t zero = 0;
	CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
	EXPECT(gattr(cudaGraphMemAttrUsedMemHigh) == used, "used high reset to current");
	uint64_t one = 1;
	EXPECT(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &one) != cudaSuccess,
	       "a high mark is only reset to 0");
	(void)cudaGetLastError();
	CK(cudaDeviceGraphMemTrim(0));
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) >= N * sizeof(int),
	       "trim keeps what an executable holds");
	CK(cudaGraphExecDestroy(x));
	EXPECT(gattr(cudaGraphMemAttrUsedMemCurrent) == 0, "used once the executable is gone");
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) >= N * sizeof(int), "still reserved");
	CK(cudaDeviceGraphMemTrim(0));
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) == 0, "trim gives unused memory back");
	CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
	EXPECT(gattr(cudaGraphMemAttrReservedMemHigh) == 0, "reserved high reset");
	CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
	EXPECT(gattr(cudaGraphMemAttrUsedMemHigh) == 0, "used high reset");

	/* instantiated and launched again after the trim: memory comes back, results right */
	CK(cudaGraphInstantiate(&x, g, 0)); /* the first one gone: allowed again */
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	check_out(dout, 6, mul, add, "after trim");
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) >= N * sizeof(int), "reserved again");
	EXPECT(gattr(cudaGraphMemAttrUsedMemHigh) >= N * sizeof(int), "used high again");
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaDeviceGraphMemTrim(0));
	EXPECT(gattr(cudaGraphMemAttrReservedMemCurrent) == 0, "nothing reserved once destroyed");
}

// Captured: cudaMallocAsync -> fill -> accumulate -> cudaFreeAsync.
static void captured(cudaStream_t s, int *dout)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	int *buf = NULL;

	CK(cudaMemset(dout, 0, N * sizeof(int)));
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaMallocAsync((void **)&buf, N * sizeof(int), s));
	fill<<<(N + 127) / 128, 128, 0, s>>>(buf, N, 7, -2);
	accumulate<<<(N + 127) / 128, 128, 0, s>>>(dout, buf, N);
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamEndCapture(s, &g));
	size_t nn = 0;
	CK(cudaGraphGetNodes(g, NULL, &nn));
	EXPECT(nn == 4, "captured nodes: %zu", nn);
	std::vector<cudaGraphNode_t> nodes(nn);
	CK(cudaGraphGetNodes(g, nodes.data(), &nn));
	cudaGraphNodeType t0, t3;
	CK(cudaGraphNodeGetType(nodes[0], &t0));
	CK(cudaGraphNodeGetType(nodes[3], &t3));
	EXPECT(t0 == cudaGraphNodeTypeMemAlloc && t3 == cudaGraphNodeTypeMemFree,
	       "captured node types %d %d", (int)t0, (int)t3);
	CK(cudaGraphInstantiate(&x, g, 0));
	for (int i = 0; i < 3; i++)
		CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	check_out(dout, 3, 7, -2, "captured");
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
}

// An allocation its graph does not free: valid for the program's other calls after the
// launch; a relaunch before a free fails without AUTO_FREE_ON_LAUNCH, and frees with it.
static void freed_outside(cudaStream_t s, int *dout)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t a;
	cudaMemAllocNodeParams p = alloc_params(N * sizeof(int));
	int n = N, mul = 5, add = 9;

	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
	int *buf = (int *)p.dptr;
	void *fa[] = {&buf, &n, &mul, &add};
	add_kernel(g, &a, 1, (void *)fill, fa);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	/* the graph's memory with ordinary calls: a kernel, a copy, a memset */
	CK(cudaMemset(dout, 0, N * sizeof(int)));
	accumulate<<<(N + 127) / 128, 128, 0, s>>>(dout, buf, N);
	CK(cudaStreamSynchronize(s));
	check_out(dout, 1, mul, add, "outside the graph");
	std::vector<int> h(N);
	CK(cudaMemcpy(h.data(), buf, N * sizeof(int), cudaMemcpyDeviceToHost));
	EXPECT(h[N - 1] == (N - 1) * mul + add, "copy from graph memory");
	EXPECT(gattr(cudaGraphMemAttrUsedMemCurrent) >= N * sizeof(int), "in use until freed");

	EXPECT(cudaGraphLaunch(x, s) != cudaSuccess, "relaunch with the allocation not freed");
	(void)cudaGetLastError();
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamSynchronize(s));
	EXPECT(cudaFreeAsync(buf, s) != cudaSuccess, "a second free");
	(void)cudaGetLastError();
	CK(cudaGraphLaunch(x, s)); /* freed: allowed again */
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaGraphExecDestroy(x));

	CK(cudaGraphInstantiateWithFlags(&x, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
	for (int i = 0; i < 3; i++)
		CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemset(dout, 0, N * sizeof(int)));
	accumulate<<<(N + 127) / 128, 128, 0, s>>>(dout, buf, N);
	CK(cudaStreamSynchronize(s));
	check_out(dout, 1, mul, add, "auto free on launch");
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
}

// Graph memory outlives its graph: an executable whose graph was destroyed after its
// instantiation allocates it at each launch, cudaFree and cudaFreeAsync free it outside the
// graph; an allocation left by an executable that is gone too is still the program's,
// until freed.
static void outlives(cudaStream_t s, int *dout)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t a;
	cudaMemAllocNodeParams p = alloc_params(N * sizeof(int));
	int n = N, mul = 4, add = -7;

	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
	int *buf = (int *)p.dptr;
	void *fa[] = {&buf, &n, &mul, &add};
	add_kernel(g, &a, 1, (void *)fill, fa);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphDestroy(g));
	for (int round = 0; round < 2; round++) {
		CK(cudaMemset(dout, 0, N * sizeof(int)));
		CK(cudaGraphLaunch(x, s));
		accumulate<<<(N + 127) / 128, 128, 0, s>>>(dout, buf, N);
		CK(cudaStreamSynchronize(s));
		check_out(dout, 1, mul, add, "graph gone, executable launched");
		if (round == 0) {
			CK(cudaFree(buf));
		} else {
			CK(cudaFreeAsync(buf, s));
			CK(cudaStreamSynchronize(s));
		}
	}
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaGraphExecDestroy(x));
	/* graph and executable gone: the allocation is the program's until freed */
	std::vector<int> h(N);
	CK(cudaMemcpy(h.data(), buf, N * sizeof(int), cudaMemcpyDeviceToHost));
	EXPECT(h[17] == 17 * mul + add, "left allocated: %d", h[17]);
	CK(cudaFree(buf));
	cudaError_t e = cudaMemcpy(h.data(), buf, sizeof(int), cudaMemcpyDeviceToHost);
	EXPECT(e != cudaSuccess, "a copy from it once freed");
	(void)cudaGetLastError();
	CK(cudaDeviceGraphMemTrim(0));
}

static void too_big(void)
{
	size_t freeb, total;
	cudaGraph_t g;
	cudaGraphNode_t a;
	CK(cudaMemGetInfo(&freeb, &total));
	cudaMemAllocNodeParams p = alloc_params(total + (1ull << 30));
	CK(cudaGraphCreate(&g, 0));
	cudaError_t e = cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p);
	EXPECT(e == cudaErrorMemoryAllocation, "past the device's memory: %s",
	       cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaGraphDestroy(g));
}

// Freed graph memory reads as freed device memory does: a copy fails with InvalidValue once a
// free node ran, after cudaFreeAsync, after the memory was trimmed; a kernel reading it
// faults (the context's error is sticky: this runs last).
static void freed_faults(cudaStream_t s, int *dout)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t a, k, f;
	cudaMemAllocNodeParams p = alloc_params(N * sizeof(int));
	int n = N, mul = 2, add = 3, v = 0;

	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
	int *buf = (int *)p.dptr;
	void *fa[] = {&buf, &n, &mul, &add};
	k = add_kernel(g, &a, 1, (void *)fill, fa);
	CK(cudaGraphAddMemFreeNode(&f, g, &k, 1, p.dptr));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	cudaError_t e = cudaMemcpy(&v, buf, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(e == cudaErrorInvalidValue, "a copy after the free node ran: %s",
	       cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));

	/* not freed by its graph: freed by cudaFreeAsync, then trimmed */
	p = alloc_params(N * sizeof(int));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&a, g, NULL, 0, &p));
	buf = (int *)p.dptr;
	add_kernel(g, &a, 1, (void *)fill, fa);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(&v, buf + 1, sizeof(v), cudaMemcpyDeviceToHost));
	EXPECT(v == mul + add, "allocated, not freed: %d", v);
	CK(cudaFreeAsync(buf, s));
	CK(cudaStreamSynchronize(s));
	e = cudaMemcpy(&v, buf, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(e == cudaErrorInvalidValue, "a copy after cudaFreeAsync: %s", cudaGetErrorName(e));
	(void)cudaGetLastError();
	e = cudaMemset(buf, 0, sizeof(int));
	EXPECT(e == cudaErrorInvalidValue, "a memset after cudaFreeAsync: %s", cudaGetErrorName(e));
	(void)cudaGetLastError();
	CK(cudaGraphExecDestroy(x));
	CK(cudaDeviceGraphMemTrim(0));
	e = cudaMemcpy(&v, buf, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(e == cudaErrorInvalidValue, "a copy after the trim: %s", cudaGetErrorName(e));
	(void)cudaGetLastError();

	/* a kernel reading it faults */
	accumulate<<<(N + 127) / 128, 128, 0, s>>>(dout, buf, N);
	e = cudaStreamSynchronize(s);
	EXPECT(e == cudaErrorIllegalAddress, "a kernel reading freed graph memory: %s",
	       cudaGetErrorName(e));
	(void)cudaGraphDestroy(g);
}

int main()
{
	cudaStream_t s;
	int *dout;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&dout, N * sizeof(int)));
	alloc_kernel_free(s, dout);
	captured(s, dout);
	freed_outside(s, dout);
	outlives(s, dout);
	too_big();
	freed_faults(s, dout); /* last: leaves the context's error sticky */
	std::printf("rt_graphmem: PASSED\n");
	return 0;
}
