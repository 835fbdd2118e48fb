// faults.cu -- kernels that fail on purpose: out of bounds, misaligned, null, trap, assert,
// unbounded recursion, a deadlock between a warp barrier and a block barrier.
#include <cassert>

extern "C" __global__ void write_at(int *p, long long idx, int v)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		p[idx] = v;
}

extern "C" __global__ void read_at(const int *p, long long idx, int *out)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		*out = p[idx];
}

extern "C" __global__ void misaligned(char *p)
{
	*(int *)(p + 1) = 5;
}

extern "C" __global__ void shared_oob(int idx, int *out)
{
	__shared__ int s[64];

	s[threadIdx.x] = threadIdx.x;
	__syncthreads();
	out[threadIdx.x] = s[threadIdx.x + idx];
}

extern "C" __global__ void trap_kernel(int *p)
{
	p[threadIdx.x] = 1;
	if (threadIdx.x == 5)
		__trap();
}

extern "C" __global__ void assert_kernel(const int *p)
{
	assert(p[threadIdx.x] >= 0);
}

__device__ __noinline__ int deep(int n, volatile int *sink)
{
	int local[16];

	for (int i = 0; i < 16; i++)
		local[i] = n + i;
	sink[0] = local[n & 15];
	return deep(n + 1, sink) + local[3];
}

extern "C" __global__ void recurse_forever(int *sink)
{
	sink[1] = deep(0, sink);
}

extern "C" __global__ void deadlock(int *out)
{
	if ((threadIdx.x & 31) < 16)
		__syncwarp(0xffffffff);
	else
		__syncthreads();
	out[threadIdx.x] = 1;
}
