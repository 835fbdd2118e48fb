// stream_ops.cu -- tiny kernels whose order of execution the stream tests observe.
extern "C" __global__ void set_value(int *p, int v)
{
	*p = v;
}

extern "C" __global__ void copy_value(const int *src, int *dst)
{
	*dst = *src;
}

extern "C" __global__ void increment(int *p)
{
	*p += 1;
}

extern "C" __global__ void scale(float *p, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] *= s;
}
