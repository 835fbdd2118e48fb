// rt_lazy_unused.cu -- kernels rt_lazy links but never launches.
__global__ void unused_a(float *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = sinf(v[i]) * cosf(v[i]);
}

__global__ void unused_b(double *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = exp(v[i]) / (1.0 + v[i] * v[i]);
}
