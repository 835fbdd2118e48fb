// rt_reset.cu -- cudaDeviceReset frees everything, and the device is usable again after.
#include "rt_check.h"

__global__ void iota(int *v, int n, int base)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = base + i;
}

static void round_trip(int base)
{
	const int n = 777;
	int h[n], *d;
	CK(cudaMalloc(&d, n * sizeof(int)));
	iota<<<(n + 63) / 64, 64>>>(d, n, base);
	CK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(h[i] == base + i, "h[%d] = %d after base %d", i, h[i], base);
	CK(cudaFree(d));
}

int main()
{
	size_t free0, tot, free1;
	round_trip(100);
	int *leak;
	CK(cudaMalloc(&leak, 8 << 20)); // not freed: the reset must take it
	CK(cudaMemGetInfo(&free0, &tot));
	CK(cudaDeviceReset());
	round_trip(200); // a new primary context, created on first use
	CK(cudaMemGetInfo(&free1, &tot));
	EXPECT(free1 >= free0 + (8 << 20), "the reset freed 8 MiB (free %zu then %zu)", free0,
	       free1);
	CK(cudaDeviceReset());
	round_trip(300);
	std::printf("rt_reset: PASSED\n");
	return 0;
}
