// rt_lazy.cu -- a program whose second translation unit (rt_lazy_unused.cu) holds kernels
// it never launches. With lazy loading only the used fatbin may be shipped to the pool;
// the test around it counts the loads in the daemon's log.
#include "rt_check.h"

__global__ void used(int *v)
{
	v[threadIdx.x] = threadIdx.x * 3;
}

int main()
{
	int *d, h[64];
	CK(cudaMalloc(&d, sizeof(h)));
	used<<<1, 64>>>(d);
	CK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 64; i++)
		EXPECT(h[i] == i * 3, "h[%d] = %d", i, h[i]);
	CK(cudaFree(d));
	std::printf("rt_lazy: PASSED\n");
	return 0;
}
