// divergence.cu -- divergent branches, per-thread loop counts, early exit, a barrier after divergence.
extern "C" __global__ void collatz(const unsigned *in, unsigned *steps, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return; /* early exit */
	unsigned x = in[i], s = 0;

	while (x != 1 && s < 1000) {
		if (x & 1)
			x = 3 * x + 1;
		else
			x >>= 1;
		s++;
	}
	steps[i] = s;
}

extern "C" __global__ void branchy(int *out)
{
	__shared__ int sh[256];
	int t = threadIdx.x, v;

	switch (t % 5) {
	case 0: v = t * 3; break;
	case 1: v = -t; break;
	case 2: v = t ^ 0x55; break;
	case 3: v = t < 100 ? t * t : t / 3; break;
	default: v = 42; break;
	}
	sh[t] = v;
	__syncthreads();
	out[t] = sh[(t + 1) % blockDim.x] + v;
}
