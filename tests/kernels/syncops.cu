// syncops.cu -- __syncthreads_count/_and/_or (bar.red), named barriers with bar.arrive, memory fences.
extern "C" __global__ void syncops(const int *in, int *out)
{
	int t = threadIdx.x, v = in[t];
	int c = __syncthreads_count(v > 50);
	int a = __syncthreads_and(v >= 0);
	int o = __syncthreads_or(v == 99);

	__threadfence_block();
	__threadfence();
	out[t] = c * 100 + a * 10 + o;
}

/* Producer warp 0 fills a buffer and arrives at barrier 1; consumer warp 1 waits there. */
extern "C" __global__ void producer_consumer(int *out)
{
	__shared__ int buf[32];
	int t = threadIdx.x;

	if (t < 32) {
		buf[t] = t * t;
		asm volatile("bar.arrive 1, 64;");
	} else {
		asm volatile("bar.sync 1, 64;");
		out[t - 32] = buf[63 - t] + 1;
	}
}
