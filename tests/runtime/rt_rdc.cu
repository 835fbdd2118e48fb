// rt_rdc.cu -- relocatable device code (-rdc=true): the kernel calls a device function
// defined in rt_rdc_dev.cu, resolved by a device link; both units instantiate twice<>.
#include "rt_check.h"

extern __device__ int rdc_mix(int x);

template <class T> __noinline__ __device__ T twice(T x)
{
	return x * 2;
}

__global__ void rdc_kernel(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = rdc_mix(in[i]) + twice(in[i]);
}

int main()
{
	const int n = 4096;
	int *in, *out, *h = new int[n], *r = new int[n];
	for (int i = 0; i < n; i++)
		h[i] = i * 13 - 9000;
	CK(cudaMalloc(&in, n * sizeof(int)));
	CK(cudaMalloc(&out, n * sizeof(int)));
	CK(cudaMemcpy(in, h, n * sizeof(int), cudaMemcpyHostToDevice));
	rdc_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
	CK(cudaGetLastError());
	CK(cudaMemcpy(r, out, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(r[i] == h[i] * 5 + 7, "out[%d] = %d, expected %d", i, r[i], h[i] * 5 + 7);
	CK(cudaFree(in));
	CK(cudaFree(out));
	std::printf("rt_rdc: PASSED (%d results match the CPU)\n", n);
	return 0;
}
