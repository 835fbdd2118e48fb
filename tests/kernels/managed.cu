// managed.cu -- a __managed__ variable: one address for host and device.
__managed__ int total = 5;

extern "C" __global__ void add_to_total(const int *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		atomicAdd(&total, v[i]);
}
