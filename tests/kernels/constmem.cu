// constmem.cu -- __constant__ memory set from the host, __device__ globals with initializers.
__constant__ float coeffs[8];
__device__ int table[4] = {10, 20, 30, 40};
__device__ unsigned counter;
__device__ const char message[] = "softgpu";

extern "C" __global__ void constmem(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = in[i], acc = 0.0f;

	for (int k = 7; k >= 0; k--)
		acc = acc * x + coeffs[k];
	out[i] = acc + (float)table[i & 3] + (float)message[i % 7];
	atomicAdd(&counter, 1u);
}
