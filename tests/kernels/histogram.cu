// histogram.cu -- 256-bin byte histogram: shared-memory atomics, then global atomics.
extern "C" __global__ void histogram(const unsigned char *data, int n, unsigned *bins)
{
	__shared__ unsigned local[256];

	for (int i = threadIdx.x; i < 256; i += blockDim.x)
		local[i] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		atomicAdd(&local[data[i]], 1u);
	__syncthreads();
	for (int i = threadIdx.x; i < 256; i += blockDim.x)
		if (local[i])
			atomicAdd(&bins[i], local[i]);
}
