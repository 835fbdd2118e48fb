// heap.cu -- device-side malloc and free: per-thread buffers, and one shared through a global.
__device__ int *shared_block;

extern "C" __global__ void heap_ops(int *out, int n)
{
	int t = threadIdx.x;
	int *mine = (int *)malloc(n * sizeof(int));

	if (mine == NULL) {
		out[t] = -1;
		return;
	}
	for (int i = 0; i < n; i++)
		mine[i] = t * i;
	int s = 0;
	for (int i = 0; i < n; i++)
		s += mine[i];
	free(mine);
	if (t == 0)
		shared_block = (int *)malloc(64 * sizeof(int));
	__syncthreads();
	if (shared_block)
		shared_block[t % 64] = t;
	__syncthreads();
	out[t] = s + (shared_block ? shared_block[t % 64] : -1000);
	__syncthreads();
	if (t == 0)
		free(shared_block);
}

/* asks for more than the heap holds: malloc answers NULL */
extern "C" __global__ void heap_too_big(unsigned long long bytes, int *out)
{
	void *p = malloc(bytes);

	*out = p == NULL;
	free(p);
}
