// rt_symbols.cu -- __device__ and __constant__ variables through cudaMemcpyToSymbol and
// cudaMemcpyFromSymbol, read and written by kernels.
#include <cmath>

#include "rt_check.h"

__constant__ float coeffs[4];
__device__ int counter;
__device__ double table[64];

__global__ void poly(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		y[i] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]));
		atomicAdd(&counter, 1);
	}
	if (i < 64)
		table[i] = table[i] * 2.0 + i;
}

int main()
{
	const int n = 1000;
	float c[4] = {1.0f, -2.0f, 0.5f, 0.25f}, x[n], y[n];
	double t[64], back[64];
	for (int i = 0; i < n; i++)
		x[i] = (i % 50) * 0.1f;
	for (int i = 0; i < 64; i++)
		t[i] = i * 0.5;

	float *dx, *dy;
	CK(cudaMalloc(&dx, sizeof(x)));
	CK(cudaMalloc(&dy, sizeof(y)));
	CK(cudaMemcpy(dx, x, sizeof(x), cudaMemcpyHostToDevice));
	CK(cudaMemcpyToSymbol(coeffs, c, sizeof(c)));
	int zero = 0;
	CK(cudaMemcpyToSymbol(counter, &zero, sizeof(zero)));
	CK(cudaMemcpyToSymbol(table, t, sizeof(t)));
	size_t size = 0;
	CK(cudaGetSymbolSize(&size, table));
	EXPECT(size == sizeof(t), "table is %zu bytes", size);

	poly<<<(n + 127) / 128, 128>>>(dx, dy, n);
	CK(cudaMemcpy(y, dy, sizeof(y), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		float v = x[i];
		// nvcc contracts a*b+c into one fused multiply-add; so does the reference.
		float want = std::fmaf(v, std::fmaf(v, std::fmaf(v, c[3], c[2]), c[1]), c[0]);
		EXPECT(y[i] == want, "y[%d] = %.9g, want %.9g", i, y[i], want);
	}
	int count = 0;
	CK(cudaMemcpyFromSymbol(&count, counter, sizeof(count)));
	EXPECT(count == n, "counter %d", count);
	CK(cudaMemcpyFromSymbol(back, table, sizeof(back)));
	for (int i = 0; i < 64; i++)
		EXPECT(back[i] == t[i] * 2.0 + i, "table[%d] = %g", i, back[i]);
	// An offset into a symbol.
	CK(cudaMemcpyFromSymbol(&back[0], table, sizeof(double), 10 * sizeof(double)));
	EXPECT(back[0] == t[10] * 2.0 + 10, "table[10] by offset = %g", back[0]);

	CK(cudaFree(dx));
	CK(cudaFree(dy));
	std::printf("rt_symbols: PASSED\n");
	return 0;
}
