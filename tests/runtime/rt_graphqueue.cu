// rt_graphqueue.cu -- a launch whose queueing fails does not let the next launch of the same
// executable pass the one before it. Launch 1 waits on stream A behind a host function;
// launch 2, on the legacy stream while a blocking stream captures, is refused
// (cudaErrorStreamCaptureImplicit); launch 3 on stream B must still wait for launch 1. The
// graph's kernel appends its tag (set per launch with cudaGraphExecKernelNodeSetParams) to a
// log: it must read 1, 3. While launch 1 is held, stream B is polled (up to 2 s) for launch
// 3 having run; the host function is released after that either way, so the check never
// depends on how long anything took.
#include <cstring>
#include <unistd.h>

#include "rt_check.h"

static volatile int go;

__global__ void append(int *log, int *count, int tag)
{
	log[atomicAdd(count, 1)] = tag;
}

static void CUDART_CB wait_go(void *)
{
	for (int i = 0; i < 4000 && !__atomic_load_n(&go, __ATOMIC_ACQUIRE); i++)
		usleep(5000);
}

int main()
{
	cudaStream_t a, b, c;
	cudaGraph_t g, captured;
	cudaGraphExec_t x;
	cudaGraphNode_t n;
	cudaKernelNodeParams k;
	int *log, *count, tag = 0, got[4] = {0, 0, 0, 0}, total = 0;

	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CK(cudaStreamCreate(&c)); /* blocking: the legacy stream may not join its capture */
	CK(cudaMalloc((void **)&log, 4 * sizeof(int)));
	CK(cudaMalloc((void **)&count, sizeof(int)));
	CK(cudaMemset(log, 0, 4 * sizeof(int)));
	CK(cudaMemset(count, 0, sizeof(int)));
	CK(cudaGraphCreate(&g, 0));
	void *args[] = {&log, &count, &tag};
	memset(&k, 0, sizeof(k));
	k.func = (void *)append;
	k.gridDim = dim3(1);
	k.blockDim = dim3(1);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&n, g, NULL, 0, &k));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaDeviceSynchronize());

	CK(cudaLaunchHostFunc(a, wait_go, NULL));
	tag = 1;
	CK(cudaGraphExecKernelNodeSetParams(x, n, &k));
	CK(cudaGraphLaunch(x, a));

	tag = 2;
	CK(cudaGraphExecKernelNodeSetParams(x, n, &k));
	CK(cudaStreamBeginCapture(c, cudaStreamCaptureModeRelaxed));
	cudaError_t e = cudaGraphLaunch(x, 0);
	EXPECT(e == cudaErrorStreamCaptureImplicit, "launch 2 beside the capture: %s",
	       cudaGetErrorName(e));
	e = cudaStreamEndCapture(c, &captured);
	EXPECT(e == cudaErrorStreamCaptureInvalidated, "the capture: %s", cudaGetErrorName(e));
	(void)cudaGetLastError();

	tag = 3;
	CK(cudaGraphExecKernelNodeSetParams(x, n, &k));
	CK(cudaGraphLaunch(x, b));
	bool early = false;
	for (int i = 0; i < 400 && !early; i++) {
		e = cudaStreamQuery(b);
		EXPECT(e == cudaSuccess || e == cudaErrorNotReady, "query: %s", cudaGetErrorName(e));
		early = e == cudaSuccess;
		if (!early)
			usleep(5000);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(got, log, sizeof(got), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&total, count, sizeof(int), cudaMemcpyDeviceToHost));
	EXPECT(!early, "launch 3 finished while launch 1 was held");
	EXPECT(total == 2 && got[0] == 1 && got[1] == 3, "the log reads %d: %d %d", total, got[0],
	       got[1]);
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(log));
	CK(cudaFree(count));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	CK(cudaStreamDestroy(c));
	std::printf("rt_graphqueue: PASSED\n");
	return 0;
}
