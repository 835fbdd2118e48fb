// prng.cu -- integer-heavy per-thread generators: xorshift64*, a 32-bit LCG, and splitmix64.
extern "C" __global__ void prng(unsigned long long seed, unsigned long long *out, int rounds)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long x = seed + (unsigned long long)t * 0x9E3779B97F4A7C15ull;
	unsigned lcg = (unsigned)t;

	for (int r = 0; r < rounds; r++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		lcg = lcg * 1664525u + 1013904223u;
	}
	unsigned long long z = (x * 0x2545F4914F6CDD1Dull) + lcg;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	out[t] = z ^ (z >> 31);
}
