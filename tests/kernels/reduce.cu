// reduce.cu -- sums: a shared-memory tree reduction and a warp-shuffle reduction.
extern "C" __global__ void reduce_tree(const int *in, int *out, int n)
{
	extern __shared__ int sdata[];
	unsigned tid = threadIdx.x;
	unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
	int v = 0;

	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	sdata[tid] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (tid < s)
			sdata[tid] += sdata[tid + s];
		__syncthreads();
	}
	if (tid == 0)
		out[blockIdx.x] = sdata[0];
}

__device__ float warp_sum(float v)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_down_sync(0xffffffff, v, off);
	return v;
}

extern "C" __global__ void reduce_shfl(const float *in, float *out, int n)
{
	__shared__ float warps[32];
	int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
	float v = 0.0f;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		v += in[i];
	v = warp_sum(v);
	if (lane == 0)
		warps[wid] = v;
	__syncthreads();
	v = threadIdx.x < blockDim.x / 32 ? warps[lane] : 0.0f;
	if (wid == 0)
		v = warp_sum(v);
	if (threadIdx.x == 0)
		atomicAdd(out, v);
}
