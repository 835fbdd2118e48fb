// printf.cu -- device-side printf with ints, floats, strings and a 64-bit value.
#include <cstdio>

extern "C" __global__ void hello(int base)
{
	if (threadIdx.x < 3)
		printf("thread %d of block %d: %d %5.2f %s %lld %x\n", threadIdx.x, blockIdx.x,
		       base + threadIdx.x, 0.5 * threadIdx.x, "ok", 1ll << 40, 255);
}
