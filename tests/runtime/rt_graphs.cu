// rt_graphs.cu -- CUDA graphs through the runtime API: a captured memset -> kernel -> copy
// launched several times (its host source changed between launches), an explicit graph
// memset -> kernel -> host node -> copy to the host, and an exec update of a kernel node.
#include <vector>

#include "rt_check.h"

__global__ void scale(float *v, int n, float by)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] *= by;
}

__global__ void add(float *dst, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dst[i] = a[i] + b[i];
}

struct seen {
	int calls;
	float first;
	const float *host;
};

static void CUDART_CB host_fn(void *arg)
{
	seen *s = static_cast<seen *>(arg);
	s->calls++;
	s->first = s->host[0];
}

static const int N = 4096;

// Captured: memset(a, 1.0f) -> scale(a, 3) -> b = a (DtoD) -> c = b + h (h copied from the
// host) -> out = c (to pageable host memory). Each launch reads h as it is then.
static void captured(void)
{
	cudaStream_t s;
	float *a, *b, *c, *h;
	std::vector<float> src(N), out(N);
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&a, N * sizeof(float)));
	CK(cudaMalloc(&b, N * sizeof(float)));
	CK(cudaMalloc(&c, N * sizeof(float)));
	CK(cudaMalloc(&h, N * sizeof(float)));

	cudaGraph_t g;
	cudaStreamCaptureStatus st;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaStreamIsCapturing(s, &st));
	EXPECT(st == cudaStreamCaptureStatusActive, "status %d", (int)st);
	CK(cudaMemsetAsync(a, 0, N * sizeof(float), s));
	scale<<<(N + 255) / 256, 256, 0, s>>>(a, N, 3.0f);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(b, a, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
	CK(cudaMemcpyAsync(h, src.data(), N * sizeof(float), cudaMemcpyHostToDevice, s));
	add<<<(N + 255) / 256, 256, 0, s>>>(c, b, h, N);
	CK(cudaMemcpyAsync(out.data(), c, N * sizeof(float), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamEndCapture(s, &g));
	size_t nodes = 0;
	CK(cudaGraphGetNodes(g, nullptr, &nodes));
	// through the pool a copy from or to this process's memory is two nodes (a host node
	// moves the bytes): 6 locally, 8 there
	EXPECT(nodes == 6 || nodes == 8, "%zu nodes", nodes);

	cudaGraphExec_t x;
	CK(cudaGraphInstantiate(&x, g, 0));
	for (int launch = 0; launch < 4; launch++) {
		for (int i = 0; i < N; i++) {
			src[i] = (float)(i * 2 + launch);
			out[i] = -1.0f;
		}
		CK(cudaGraphLaunch(x, s));
		CK(cudaStreamSynchronize(s));
		for (int i = 0; i < N; i++)
			EXPECT(out[i] == src[i], "launch %d: out[%d] = %g, want %g", launch, i,
			       out[i], src[i]);
	}
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(h));
	CK(cudaStreamDestroy(s));
}

static void explicit_graph(void)
{
	cudaStream_t s;
	float *a;
	std::vector<float> out(N, -1.0f);
	seen sn = {0, 0.0f, out.data()};
	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&a, N * sizeof(float)));

	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));
	cudaGraphNode_t mset, kern, host, copy;
	cudaMemsetParams mp = {};
	mp.dst = a;
	mp.value = 0x40000000u; // 2.0f
	mp.elementSize = 4;
	mp.width = N;
	mp.height = 1;
	CK(cudaGraphAddMemsetNode(&mset, g, nullptr, 0, &mp));
	int n = N;
	float by = 3.0f;
	void *args[] = {&a, &n, &by};
	cudaKernelNodeParams kp = {};
	kp.func = (void *)scale;
	kp.gridDim = dim3((N + 127) / 128);
	kp.blockDim = dim3(128);
	kp.kernelParams = args;
	CK(cudaGraphAddKernelNode(&kern, g, &mset, 1, &kp));
	cudaHostNodeParams hp = {host_fn, &sn};
	CK(cudaGraphAddHostNode(&host, g, &kern, 1, &hp));
	CK(cudaGraphAddMemcpyNode1D(&copy, g, &host, 1, out.data(), a, N * sizeof(float),
				    cudaMemcpyDeviceToHost));

	cudaGraphExec_t x;
	CK(cudaGraphInstantiateWithFlags(&x, g, 0));
	CK(cudaGraphUpload(x, s));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	EXPECT(sn.calls == 1 && sn.first == -1.0f, "host node: %d calls, saw %g", sn.calls,
	       sn.first);
	for (int i = 0; i < N; i++)
		EXPECT(out[i] == 6.0f, "out[%d] = %g", i, out[i]);

	// the executable's kernel node gets new parameters
	by = 5.0f;
	CK(cudaGraphExecKernelNodeSetParams(x, kern, &kp));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	EXPECT(sn.calls == 2 && sn.first == 6.0f, "host node: %d calls, saw %g", sn.calls,
	       sn.first);
	for (int i = 0; i < N; i++)
		EXPECT(out[i] == 10.0f, "out[%d] = %g", i, out[i]);

	// whole-graph update from an edited graph of the same shape
	by = 0.5f;
	CK(cudaGraphKernelNodeSetParams(kern, &kp));
	cudaGraphExecUpdateResultInfo info;
	CK(cudaGraphExecUpdate(x, g, &info));
	EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	for (int i = 0; i < N; i++)
		EXPECT(out[i] == 1.0f, "out[%d] = %g", i, out[i]);
	EXPECT(sn.calls == 3, "host node: %d calls", sn.calls);

	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(a));
	CK(cudaStreamDestroy(s));
}

// Two streams forked and joined by events inside one capture, a host function between.
static int host_runs;
static void CUDART_CB bump(void *) { host_runs++; }

static void fork_join(void)
{
	cudaStream_t s1, s2;
	cudaEvent_t fork, join;
	int *d;
	std::vector<int> out(N);
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreate(&s2));
	CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
	CK(cudaMalloc(&d, N * sizeof(int)));
	cudaGraph_t g;
	CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
	CK(cudaMemsetAsync(d, 0, N * sizeof(int), s1));
	CK(cudaEventRecord(fork, s1));
	CK(cudaStreamWaitEvent(s2, fork, 0));
	CK(cudaMemsetAsync(d, 1, N / 2 * sizeof(int), s1));
	CK(cudaMemsetAsync(d + N / 2, 2, N / 2 * sizeof(int), s2));
	CK(cudaEventRecord(join, s2));
	CK(cudaStreamWaitEvent(s1, join, 0));
	CK(cudaLaunchHostFunc(s1, bump, nullptr));
	CK(cudaStreamEndCapture(s1, &g));
	cudaGraphExec_t x;
	CK(cudaGraphInstantiate(&x, g, 0));
	for (int launch = 1; launch <= 2; launch++) {
		CK(cudaGraphLaunch(x, s1));
		CK(cudaStreamSynchronize(s1));
		CK(cudaMemcpy(out.data(), d, N * sizeof(int), cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			EXPECT(out[i] == (i < N / 2 ? 0x01010101 : 0x02020202), "out[%d] = %#x", i,
			       out[i]);
		EXPECT(host_runs == launch, "host function ran %d times", host_runs);
	}
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(d));
	CK(cudaEventDestroy(fork));
	CK(cudaEventDestroy(join));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
}

int main()
{
	captured();
	fork_join();
	explicit_graph();
	std::printf("PASSED\n");
	return 0;
}
