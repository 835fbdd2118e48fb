// rt_graphrelease.cu -- a conditional handle's last release racing a kernel that sets it: a
// kernel calls cudaGraphSetConditional in a loop while the host destroys the executable and
// the graph holding the handle. The kernel either finishes first or fails its launch once the
// handle is gone (softgpu's answer to the undefined use of a destroyed handle); the process
// must never touch freed memory (ASan and TSan runs check that), and the device works again
// after cudaDeviceReset. Then the same with the kernel a node of the executable itself.
#include <cstdint>
#include <cstring>
#include <unistd.h>

#include "rt_check.h"

static const int ROUNDS = 12;

__global__ void spin_set(cudaGraphConditionalHandle h, int iters, int *done)
{
	for (int i = 0; i < iters; i++)
		cudaGraphSetConditional(h, (unsigned)(i & 1));
	*done = 1;
}

__global__ void mark(int *where, int value) { *where = value; }

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd,
				   void *fn, void **args)
{
	cudaKernelNodeParams k;
	cudaGraphNode_t n;
	memset(&k, 0, sizeof(k));
	k.func = fn;
	k.gridDim = dim3(1);
	k.blockDim = dim3(1);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&n, g, deps, nd, &k));
	return n;
}

// [spin_set(h, iters) ->] IF(h, default 0) { mark(where, 1) }, instantiated.
static void build(cudaGraph_t *g, cudaGraphConditionalHandle *h, cudaGraphExec_t *x, int *where,
		  int iters)
{
	cudaGraphNodeParams p = {};
	cudaGraphNode_t n, first;
	int one = 1;
	int *done = where + 1;

	CK(cudaGraphCreate(g, 0));
	CK(cudaGraphConditionalHandleCreate(h, *g, 0, cudaGraphCondAssignDefault));
	void *sargs[] = {h, &iters, &done};
	if (iters)
		first = kernel_node(*g, NULL, 0, (void *)spin_set, sargs);
	p.type = cudaGraphNodeTypeConditional;
	p.conditional.handle = *h;
	p.conditional.type = cudaGraphCondTypeIf;
	p.conditional.size = 1;
	CK(cudaGraphAddNode(&n, *g, iters ? &first : NULL, NULL, iters ? 1 : 0, &p));
	void *margs[] = {&where, &one};
	kernel_node(p.conditional.phGraph_out[0], NULL, 0, (void *)mark, margs);
	CK(cudaGraphInstantiate(x, *g, 0));
}

// After a round: success, or the launch failed because the handle went first.
static bool settle(cudaStream_t s, const char *what, int round)
{
	cudaError_t e = cudaStreamSynchronize(s);
	EXPECT(e == cudaSuccess || e == cudaErrorLaunchFailure, "%s round %d: %s", what, round,
	       cudaGetErrorName(e));
	if (e == cudaSuccess)
		return false;
	(void)cudaGetLastError();
	CK(cudaDeviceReset());
	return true;
}

int main()
{
	int failed = 0;

	for (int r = 0; r < ROUNDS; r++) {
		cudaStream_t s;
		cudaGraph_t g;
		cudaGraphConditionalHandle h;
		cudaGraphExec_t x;
		int *buf;

		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CK(cudaMalloc((void **)&buf, 2 * sizeof(int)));
		build(&g, &h, &x, buf, 0);
		/* the kernel sets h while the executable and then the graph (its last holder) go */
		spin_set<<<1, 1, 0, s>>>(h, 20000, buf + 1);
		usleep(100 * r); /* the release lands at different points of the kernel */
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));
		if (settle(s, "destroy", r)) {
			failed++;
			continue; /* the reset took the stream and the buffer */
		}
		CK(cudaFree(buf));
		CK(cudaStreamDestroy(s));
	}

	/* the setter a node of the executable, which is destroyed with its graph while the
	 * launch runs: the launch's queued ops keep the handle until they ran */
	for (int r = 0; r < ROUNDS; r++) {
		cudaStream_t s;
		cudaGraph_t g;
		cudaGraphConditionalHandle h;
		cudaGraphExec_t x;
		int *buf, v[2] = {0, 0};

		CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		CK(cudaMalloc((void **)&buf, 2 * sizeof(int)));
		CK(cudaMemset(buf, 0, 2 * sizeof(int)));
		build(&g, &h, &x, buf, 2000 * (r + 1)); /* even: the last value set is 1 */
		CK(cudaGraphLaunch(x, s));
		CK(cudaGraphExecDestroy(x));
		CK(cudaGraphDestroy(g));
		CK(cudaStreamSynchronize(s));
		CK(cudaMemcpy(v, buf, sizeof(v), cudaMemcpyDeviceToHost));
		EXPECT(v[0] == 1 && v[1] == 1, "round %d: the IF body ran after the setter (%d %d)",
		       r, v[0], v[1]);
		CK(cudaFree(buf));
		CK(cudaStreamDestroy(s));
	}
	std::printf("rt_graphrelease: PASSED (%d of %d racing launches saw the handle gone)\n",
		    failed, ROUNDS);
	return 0;
}
