// scan.cu -- inclusive prefix sums of one block: Hillis-Steele in shared memory, and a warp scan with shfl.up.
extern "C" __global__ void scan_block(const int *in, int *out, int n)
{
	extern __shared__ int buf[]; /* 2 * blockDim.x ints: double buffering */
	int tid = threadIdx.x, pin = 1, pout = 0;

	buf[tid] = tid < n ? in[tid] : 0;
	__syncthreads();
	for (int off = 1; off < blockDim.x; off <<= 1) {
		pout = 1 - pout;
		pin = 1 - pout;
		int v = buf[pin * blockDim.x + tid];

		if (tid >= off)
			v += buf[pin * blockDim.x + tid - off];
		buf[pout * blockDim.x + tid] = v;
		__syncthreads();
	}
	if (tid < n)
		out[tid] = buf[pout * blockDim.x + tid];
}

extern "C" __global__ void scan_warp(const int *in, int *out)
{
	int lane = threadIdx.x & 31;
	int v = in[blockIdx.x * blockDim.x + threadIdx.x];

	for (int off = 1; off < 32; off <<= 1) {
		int o = __shfl_up_sync(0xffffffff, v, off);

		if (lane >= off)
			v += o;
	}
	out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
