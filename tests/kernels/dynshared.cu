// dynshared.cu -- dynamic shared memory sized at launch, next to static shared memory.
extern "C" __global__ void dyn_reverse(const float *in, float *out, int n)
{
	extern __shared__ float buf[];
	__shared__ int count;
	int t = threadIdx.x;

	if (t == 0)
		count = 0;
	__syncthreads();
	if (t < n) {
		buf[t] = in[t];
		atomicAdd(&count, 1);
	}
	__syncthreads();
	if (t < n)
		out[t] = buf[n - 1 - t] + (float)count * 1000.0f;
}
