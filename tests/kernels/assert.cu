// assert.cu -- a device-side assert that fails on the threads whose element is not zero.
#include <cassert>

extern "C" __global__ void check_zero(const int *p)
{
	assert(p[threadIdx.x] == 0 && "element must be zero");
}
