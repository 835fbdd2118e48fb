// bitonic.cu -- bitonic sort of 1024 keys in one block's shared memory.
extern "C" __global__ void bitonic(int *data)
{
	__shared__ int s[1024];
	int t = threadIdx.x;

	s[t] = data[t];
	__syncthreads();
	for (int k = 2; k <= 1024; k <<= 1) {
		for (int j = k >> 1; j > 0; j >>= 1) {
			int p = t ^ j;

			if (p > t) {
				bool up = (t & k) == 0;
				int a = s[t], b = s[p];

				if ((a > b) == up) {
					s[t] = b;
					s[p] = a;
				}
			}
			__syncthreads();
		}
	}
	data[t] = s[t];
}
