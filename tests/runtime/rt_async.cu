// rt_async.cu -- streams, asynchronous copies and memsets from pinned memory, events with
// elapsed time, a stream waiting on another's event, and a host callback in stream order.
#include <atomic>
#include <vector>

#include "rt_check.h"

__global__ void inc(int *v, int n, int by)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] += by;
}

// Spins a little so that work on a stream takes time.
__global__ void slow_fill(int *v, int n, int value)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int x = value;
		for (int k = 0; k < 100; k++)
			x = (x * 3 + 1) % 1000003;
		v[i] = value + (x & 0);
	}
}

static std::atomic<int> callbacks{0};
static int seen_at_callback = -1;
static int *host_view;

static void CUDART_CB on_done(void *arg)
{
	// Runs after the copy before it on the stream: the data is there.
	seen_at_callback = host_view[0];
	callbacks += *(int *)arg;
}

int main()
{
	const int n = 4096;
	int *h, *h2;
	CK(cudaMallocHost(&h, n * sizeof(int)));
	CK(cudaHostAlloc(&h2, n * sizeof(int), cudaHostAllocDefault));
	host_view = h2;
	unsigned int flags = 99;
	CK(cudaHostGetFlags(&flags, h));
	for (int i = 0; i < n; i++)
		h[i] = i;

	cudaStream_t s1, s2;
	CK(cudaStreamCreate(&s1));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	int *d1, *d2;
	CK(cudaMalloc(&d1, n * sizeof(int)));
	CK(cudaMalloc(&d2, n * sizeof(int)));

	cudaEvent_t start, stop, ready;
	CK(cudaEventCreate(&start));
	CK(cudaEventCreate(&stop));
	CK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));

	// Stream 1: copy in, add 1 three times, record an event.
	CK(cudaEventRecord(start, s1));
	CK(cudaMemcpyAsync(d1, h, n * sizeof(int), cudaMemcpyHostToDevice, s1));
	for (int k = 0; k < 3; k++)
		inc<<<n / 256, 256, 0, s1>>>(d1, n, 1);
	CK(cudaEventRecord(ready, s1));
	// Stream 2 waits for that event before copying stream 1's result.
	CK(cudaMemsetAsync(d2, 0, n * sizeof(int), s2));
	CK(cudaStreamWaitEvent(s2, ready, 0));
	CK(cudaMemcpyAsync(d2, d1, n * sizeof(int), cudaMemcpyDeviceToDevice, s2));
	inc<<<n / 256, 256, 0, s2>>>(d2, n, 10);
	CK(cudaMemcpyAsync(h2, d2, n * sizeof(int), cudaMemcpyDeviceToHost, s2));
	int weight = 5;
	CK(cudaLaunchHostFunc(s2, on_done, &weight));
	CK(cudaEventRecord(stop, s1));
	CK(cudaStreamSynchronize(s2));
	CK(cudaEventSynchronize(stop));
	EXPECT(cudaEventQuery(stop) == cudaSuccess, "the stop event is complete");
	EXPECT(cudaStreamQuery(s1) == cudaSuccess, "stream 1 is idle");
	for (int i = 0; i < n; i++)
		EXPECT(h2[i] == i + 13, "h2[%d] = %d, want %d", i, h2[i], i + 13);
	EXPECT(callbacks == 5, "the host function ran once (%d)", callbacks.load());
	EXPECT(seen_at_callback == 13, "the host function ran after the copy (saw %d)",
	       seen_at_callback);

	float ms = -1;
	CK(cudaEventElapsedTime(&ms, start, stop));
	EXPECT(ms >= 0.0f && ms < 60000.0f, "elapsed %g ms", ms);
	EXPECT(cudaEventElapsedTime(&ms, start, ready) != cudaSuccess,
	       "no timing from an event created without it");
	std::printf("stream 1 took %.3f ms\n", ms);

	// The legacy default stream orders after the blocking streams' earlier work; the
	// per-thread default stream does not, so that build waits for s1 itself.
	slow_fill<<<n / 128, 128, 0, s1>>>(d1, n, 7);
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
	CK(cudaStreamSynchronize(s1));
#endif
	CK(cudaMemcpy(h, d1, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(h[i] == 7, "after slow_fill h[%d] = %d", i, h[i]);

	int prio_lo = 0, prio_hi = 0;
	if (cudaDeviceGetStreamPriorityRange(&prio_lo, &prio_hi) == cudaSuccess) {
		cudaStream_t sp;
		CK(cudaStreamCreateWithPriority(&sp, cudaStreamDefault, prio_hi));
		int prio = 1;
		CK(cudaStreamGetPriority(sp, &prio));
		EXPECT(prio == prio_hi, "priority %d, want %d", prio, prio_hi);
		CK(cudaStreamDestroy(sp));
	}

	CK(cudaEventDestroy(start));
	CK(cudaEventDestroy(stop));
	CK(cudaEventDestroy(ready));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	CK(cudaFree(d1));
	CK(cudaFree(d2));
	CK(cudaFreeHost(h));
	CK(cudaFreeHost(h2));
	std::printf("rt_async: PASSED\n");
	return 0;
}
