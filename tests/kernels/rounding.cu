// rounding.cu -- explicit rounding modes: __fadd_r*, __fmul_r*, __fdiv_r*, __fsqrt_r*, __fmaf_r*, conversions.
extern "C" __global__ void rounding(const float *a, const float *b, float *f, int *iv, double *d,
				    int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = a[i], y = b[i];
	float *o = f + 16 * i;
	o[0] = __fadd_rz(x, y);
	o[1] = __fadd_ru(x, y);
	o[2] = __fadd_rd(x, y);
	o[3] = __fmul_rz(x, y);
	o[4] = __fmul_ru(x, y);
	o[5] = __fdiv_rd(x, y);
	o[6] = __fdiv_ru(x, y);
	o[7] = __fsqrt_rz(fabsf(x));
	o[8] = __fmaf_rz(x, y, 1.0f);
	o[9] = __fmaf_ru(x, y, -1.0f);
	o[10] = __frcp_rd(y);
	o[11] = __int2float_rz((int)(x * 1e6f) | 0x1234567);
	o[12] = __uint2float_ru((unsigned)(fabsf(y) * 1e6f) | 0x81234567u);
	o[13] = __double2float_rd((double)x * 1.0000001);
	o[14] = __saturatef(x);
	o[15] = rintf(x * 3.0f);
	int *p = iv + 6 * i;
	p[0] = __float2int_rn(x * 7.5f);
	p[1] = __float2int_rz(x * 7.5f);
	p[2] = __float2int_ru(x * 7.5f);
	p[3] = __float2int_rd(x * 7.5f);
	p[4] = (int)(x * 1e10f); /* clamps */
	p[5] = (int)__float2uint_rn(x * 3.0f);
	d[2 * i] = __dadd_ru((double)x, 1e-20);
	d[2 * i + 1] = __ddiv_rz(1.0, (double)y);
}
