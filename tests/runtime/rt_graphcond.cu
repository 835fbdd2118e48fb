// rt_graphcond.cu -- conditional graph nodes: a WHILE loop whose body kernel counts and ends
// the loop with cudaGraphSetConditional, an IF node with an else body (the condition set by
// a kernel before it), a SWITCH node, a body filled by cudaStreamBeginCaptureToGraph,
// default launch values and a kernel naming no handle; checked against the CPU over several
// launches; directly on softgpu and through the pool.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rt_check.h"

static const int N = 1000;

__global__ void reset(int *counter) { *counter = 0; }

// One loop iteration: out[i] += i; the loop ends once the counter reaches *limit.
__global__ void loop_body(cudaGraphConditionalHandle h, int *counter, const int *limit,
			  int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] += i;
	if (i == 0 && ++*counter >= *limit)
		cudaGraphSetConditional(h, 0);
}

__global__ void set_cond(cudaGraphConditionalHandle h, const int *value)
{
	if (threadIdx.x == 0)
		cudaGraphSetConditional(h, (unsigned)*value);
}

__global__ void mark(int *where, int value) { *where = value; }

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
				   void *fn, void **args, int blocks, int threads)
{
	cudaKernelNodeParams k;
	cudaGraphNode_t n;
	memset(&k, 0, sizeof(k));
	k.func = fn;
	k.gridDim = dim3(blocks);
	k.blockDim = dim3(threads);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&n, g, deps, nd, &k));
	return n;
}

static cudaGraphNode_t cond_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
				 cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
				 unsigned size, cudaGraph_t **bodies)
{
	cudaGraphNodeParams p = {};
	cudaGraphNode_t n;
	p.type = cudaGraphNodeTypeConditional;
	p.conditional.handle = h;
	p.conditional.type = type;
	p.conditional.size = size;
	CK(cudaGraphAddNode(&n, g, deps, NULL, nd, &p));
	*bodies = p.conditional.phGraph_out;
	EXPECT(*bodies != NULL && (*bodies)[0] != NULL, "body graphs made with the node");
	return n;
}

static void while_loop(cudaStream_t s)
{
	cudaGraph_t g, *body;
	cudaGraphExec_t x;
	cudaGraphConditionalHandle h;
	int *counter, *limit, *out, n = N;

	CK(cudaMalloc((void **)&counter, sizeof(int)));
	CK(cudaMalloc((void **)&limit, sizeof(int)));
	CK(cudaMalloc((void **)&out, N * sizeof(int)));
	CK(cudaMemset(out, 0, N * sizeof(int)));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
	void *ra[] = {&counter};
	cudaGraphNode_t r = kernel_node(g, NULL, 0, (void *)reset, ra, 1, 1);
	cond_node(g, &r, 1, h, cudaGraphCondTypeWhile, 1, &body);
	void *la[] = {&h, &counter, &limit, &out, &n};
	kernel_node(body[0], NULL, 0, (void *)loop_body, la, (N + 127) / 128, 128);
	CK(cudaGraphInstantiate(&x, g, 0));

	int total = 0;
	for (int lim : {7, 1, 12}) {
		CK(cudaMemcpy(limit, &lim, sizeof(int), cudaMemcpyHostToDevice));
		CK(cudaGraphLaunch(x, s));
		CK(cudaStreamSynchronize(s));
		int c = -1;
		CK(cudaMemcpy(&c, counter, sizeof(int), cudaMemcpyDeviceToHost));
		EXPECT(c == lim, "while: %d iterations, want %d", c, lim);
		total += lim;
	}
	std::vector<int> hout(N);
	CK(cudaMemcpy(hout.data(), out, N * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		EXPECT(hout[i] == total * i, "while: out[%d] = %d, want %d", i, hout[i], total * i);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(counter));
	CK(cudaFree(limit));
	CK(cudaFree(out));
}

// set_cond -> IF (then: mark 1, else: mark 2, the then body captured), and a SWITCH.
static void if_and_switch(cudaStream_t s)
{
	cudaGraph_t g, *ifb, *swb;
	cudaGraphExec_t x;
	cudaGraphConditionalHandle hi, hs;
	int *value, *res;

	CK(cudaMalloc((void **)&value, sizeof(int)));
	CK(cudaMalloc((void **)&res, 4 * sizeof(int)));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphConditionalHandleCreate(&hi, g, 0, 0));
	CK(cudaGraphConditionalHandleCreate(&hs, g, 0, 0));
	void *sa[] = {&hi, &value};
	cudaGraphNode_t k = kernel_node(g, NULL, 0, (void *)set_cond, sa, 1, 32);
	void *sb[] = {&hs, &value};
	cudaGraphNode_t k2 = kernel_node(g, &k, 1, (void *)set_cond, sb, 1, 32);
	cudaGraphNode_t c = cond_node(g, &k2, 1, hi, cudaGraphCondTypeIf, 2, &ifb);
	cond_node(g, &c, 1, hs, cudaGraphCondTypeSwitch, 3, &swb);

	/* the then body by capture into it */
	CK(cudaStreamBeginCaptureToGraph(s, ifb[0], NULL, NULL, 0, cudaStreamCaptureModeGlobal));
	mark<<<1, 1, 0, s>>>(res, 1);
	cudaGraph_t same;
	CK(cudaStreamEndCapture(s, &same));
	EXPECT(same == ifb[0], "captured into the body graph");
	EXPECT(cudaGraphDestroy(ifb[0]) != cudaSuccess, "a body goes with its node only");
	(void)cudaGetLastError();
	int *r1 = res + 1;
	int two = 2;
	void *ea[] = {&res, &two};
	kernel_node(ifb[1], NULL, 0, (void *)mark, ea, 1, 1);
	for (int b = 0; b < 3; b++) {
		static int vals[3] = {100, 101, 102};
		void *ma[] = {&r1, &vals[b]};
		kernel_node(swb[b], NULL, 0, (void *)mark, ma, 1, 1);
	}
	CK(cudaGraphInstantiate(&x, g, 0));

	struct {
		int value, want_if, want_switch;
	} cases[] = {{1, 1, 101}, {0, 2, 100}, {2, 1, 102}, {7, 1, -1}};
	for (auto &cs : cases) {
		int init[2] = {-1, -1}, got[2];
		CK(cudaMemcpy(res, init, sizeof(init), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(value, &cs.value, sizeof(int), cudaMemcpyHostToDevice));
		CK(cudaGraphLaunch(x, s));
		CK(cudaStreamSynchronize(s));
		CK(cudaMemcpy(got, res, sizeof(got), cudaMemcpyDeviceToHost));
		EXPECT(got[0] == cs.want_if && got[1] == cs.want_switch,
		       "value %d: if %d switch %d, want %d %d", cs.value, got[0], got[1],
		       cs.want_if, cs.want_switch);
	}
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(value));
	CK(cudaFree(res));
}

// Default launch values: an IF whose handle defaults to 0 (body skipped) or 1 (body runs),
// no kernel setting it.
static void defaults(cudaStream_t s)
{
	for (unsigned dflt = 0; dflt < 2; dflt++) {
		cudaGraph_t g, *b;
		cudaGraphExec_t x;
		cudaGraphConditionalHandle h;
		int *res, v = -1, seven = 7;
		CK(cudaMalloc((void **)&res, sizeof(int)));
		CK(cudaMemcpy(res, &v, sizeof(int), cudaMemcpyHostToDevice));
		CK(cudaGraphCreate(&g, 0));
		CK(cudaGraphConditionalHandleCreate(&h, g, dflt, cudaGraphCondAssignDefault));
		cond_node(g, NULL, 0, h, cudaGraphCondTypeIf, 1, &b);
		void *ma[] = {&res, &seven};
		kernel_node(b[0], NULL, 0, (void *)mark, ma, 1, 1);
		CK(cudaGraphInstantiate(&x, g, 0));
		CK(cudaGraphLaunch(x, s));
		CK(cudaStreamSynchronize(s));
		CK(cudaMemcpy(&v, res, sizeof(int), cudaMemcpyDeviceToHost));
		EXPECT(v == (dflt ? 7 : -1), "default %u: %d", dflt, v);
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));
		CK(cudaFree(res));
	}
}

// A kernel setting a handle that is none: the launch fails (the context is then unusable,
// so this comes last).
static void bogus_handle(cudaStream_t s)
{
	int *value;
	CK(cudaMalloc((void **)&value, sizeof(int)));
	set_cond<<<1, 32, 0, s>>>((cudaGraphConditionalHandle)0x123456789ull, value);
	cudaError_t e = cudaStreamSynchronize(s);
	EXPECT(e != cudaSuccess, "cudaGraphSetConditional of no handle fails the launch");
}

int main()
{
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	while_loop(s);
	if_and_switch(s);
	defaults(s);
	bogus_handle(s);
	std::printf("rt_graphcond: PASSED\n");
	return 0;
}
