// rt_graphorder.cu -- launches of one graph executable on two streams run one after another
// (cuGraphLaunch: each launch is ordered behind the previous launches of the same executable,
// whatever their stream). A chain of kernels that each read a counter, wait, and write it
// back plus one: two launches that overlapped would lose increments and see a value twice,
// which the CPU check finds. Then a graph with memory nodes (alloc -> fill -> accumulate ->
// free) launched on two streams by turns: overlapping, one launch's free would unmap the
// memory under the other's kernels.
#include <cstdint>
#include <cstring>
#include <vector>

#include "rt_check.h"

static const int K = 8;	      // kernel nodes in the chain
static const int ROUNDS = 6;  // launches per stream
static const int MAXV = 1024; // the counter's values tracked
static const int N = 3000;

__global__ void bump(int *counter, int *seen, unsigned *sink, int delay)
{
	volatile int *c = counter;
	int v = *c;
	unsigned acc = (unsigned)v;

	for (int i = 0; i < delay; i++)
		acc = acc * 1664525u + 1013904223u;
	if (v >= 0 && v < MAXV)
		seen[v] += 1;
	*sink = acc;
	*c = v + 1;
}

__global__ void fill(int *a, int n, int mul, int add, int delay, unsigned *sink)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned acc = (unsigned)i;

	for (int d = 0; d < delay; d++)
		acc = acc * 1664525u + 1013904223u;
	if (i == 0)
		*sink = acc;
	if (i < n)
		a[i] = i * mul + add;
}

__global__ void accumulate(int *out, const int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] += a[i];
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
				   void *fn, void **args, unsigned grid, unsigned block)
{
	cudaKernelNodeParams k;
	cudaGraphNode_t n;
	memset(&k, 0, sizeof(k));
	k.func = fn;
	k.gridDim = dim3(grid);
	k.blockDim = dim3(block);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&n, g, deps, nd, &k));
	return n;
}

static void chain_on_two_streams(cudaStream_t a, cudaStream_t b)
{
	int *counter, *seen;
	unsigned *sink;
	int delay = 4000;
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t prev = NULL;

	CK(cudaMalloc((void **)&counter, sizeof(int)));
	CK(cudaMalloc((void **)&seen, MAXV * sizeof(int)));
	CK(cudaMalloc((void **)&sink, sizeof(unsigned)));
	CK(cudaMemset(counter, 0, sizeof(int)));
	CK(cudaMemset(seen, 0, MAXV * sizeof(int)));
	CK(cudaGraphCreate(&g, 0));
	void *args[] = {&counter, &seen, &sink, &delay};
	for (int i = 0; i < K; i++)
		prev = kernel_node(g, prev ? &prev : NULL, prev ? 1 : 0, (void *)bump, args, 1, 1);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaDeviceSynchronize());
	for (int r = 0; r < ROUNDS; r++) {
		CK(cudaGraphLaunch(x, a));
		CK(cudaGraphLaunch(x, b));
	}
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));

	int total = 0;
	std::vector<int> h(MAXV);
	CK(cudaMemcpy(&total, counter, sizeof(int), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(h.data(), seen, MAXV * sizeof(int), cudaMemcpyDeviceToHost));
	EXPECT(total == 2 * ROUNDS * K, "counter %d, want %d (launches overlapped)", total,
	       2 * ROUNDS * K);
	for (int v = 0; v < MAXV; v++)
		EXPECT(h[v] == (v < 2 * ROUNDS * K ? 1 : 0), "value %d seen %d times", v, h[v]);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(counter));
	CK(cudaFree(seen));
	CK(cudaFree(sink));
}

static void memnodes_on_two_streams(cudaStream_t a, cudaStream_t b)
{
	cudaGraph_t g;
	cudaGraphExec_t x;
	cudaGraphNode_t an, k1, k2, f;
	cudaMemAllocNodeParams p;
	int *out;
	unsigned *sink;
	int n = N, mul = 3, add = 7, delay = 300;
	const int launches = 10;

	CK(cudaMalloc((void **)&out, N * sizeof(int)));
	CK(cudaMalloc((void **)&sink, sizeof(unsigned)));
	CK(cudaMemset(out, 0, N * sizeof(int)));
	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = cudaMemAllocationTypePinned;
	p.poolProps.location.type = cudaMemLocationTypeDevice;
	p.poolProps.location.id = 0;
	p.bytesize = N * sizeof(int);
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddMemAllocNode(&an, g, NULL, 0, &p));
	int *buf = (int *)p.dptr;
	void *fa[] = {&buf, &n, &mul, &add, &delay, &sink};
	k1 = kernel_node(g, &an, 1, (void *)fill, fa, (N + 127) / 128, 128);
	void *aa[] = {&out, &buf, &n};
	k2 = kernel_node(g, &k1, 1, (void *)accumulate, aa, (N + 127) / 128, 128);
	CK(cudaGraphAddMemFreeNode(&f, g, &k2, 1, p.dptr));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < launches; i++)
		CK(cudaGraphLaunch(x, i % 2 ? b : a));
	CK(cudaStreamSynchronize(a));
	CK(cudaStreamSynchronize(b));

	std::vector<int> h(N);
	CK(cudaMemcpy(h.data(), out, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		EXPECT(h[i] == launches * (i * mul + add), "out[%d] = %d, want %d", i, h[i],
		       launches * (i * mul + add));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(out));
	CK(cudaFree(sink));
}

int main()
{
	cudaStream_t a, b;

	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	chain_on_two_streams(a, b);
	memnodes_on_two_streams(a, b);
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	std::printf("rt_graphorder: PASSED\n");
	return 0;
}
