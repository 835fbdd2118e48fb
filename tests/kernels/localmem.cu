// localmem.cu -- per-thread arrays with computed indices (local memory), a large stack struct.
struct Big {
	int a[64];
	double d[8];
};

extern "C" __global__ void localmem(const int *idx, int *out)
{
	int t = threadIdx.x;
	int arr[40];
	Big big;

	for (int i = 0; i < 40; i++)
		arr[i] = i * t;
	for (int i = 0; i < 64; i++)
		big.a[i] = i ^ t;
	for (int i = 0; i < 8; i++)
		big.d[i] = i * 0.5;
	int k = idx[t] % 40;
	out[t] = arr[k] + big.a[(k * 7) % 64] + (int)big.d[k % 8];
}
