// half.cu -- f16 conversions and arithmetic through cuda_fp16.h: __half and __half2.
#include <cuda_fp16.h>

extern "C" __global__ void half_ops(const float *in, float *out, unsigned short *bits, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	__half a = __float2half(in[i]), b = __float2half(in[n + i]);
	__half2 p = __halves2half2(a, b);
	__half2 q = __hmul2(p, p);

	bits[4 * i + 0] = __half_as_ushort(a);
	bits[4 * i + 1] = __half_as_ushort(__hadd(a, b));
	bits[4 * i + 2] = __half_as_ushort(__hmul(a, b));
	bits[4 * i + 3] = __half_as_ushort(__hfma(a, b, __float2half(1.0f)));
	out[3 * i + 0] = __half2float(__low2half(q)) + __half2float(__high2half(q));
	out[3 * i + 1] = __half2float(__float2half_rz(in[i]));
	out[3 * i + 2] = __half2float(__hneg(__habs(a)));
}
