// vector_add_kernel.cu -- the kernel of examples/vector_add.c, compiled to PTX at build time.
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}
