// graphs_kernel.cu -- the kernel the graph scenario captures and builds graphs of.
extern "C" __global__ void add_one(int *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] += 1;
}
