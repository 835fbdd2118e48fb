// simd.cu -- the CUDA SIMD intrinsics: per-byte and per-halfword arithmetic (vabsdiff2/4 and integer code).
extern "C" __global__ void simd(const unsigned *a, const unsigned *b, unsigned *o)
{
	int i = threadIdx.x;
	unsigned x = a[i], y = b[i];
	o[20*i+0] = __vabsdiffu4(x, y);
	o[20*i+1] = __vadd4(x, y);
	o[20*i+2] = __vsub2(x, y);
	o[20*i+3] = __vavgu4(x, y);
	o[20*i+4] = __vcmpeq4(x, y);
	o[20*i+5] = __vmaxu4(x, y);
	o[20*i+6] = __vmins2(x, y);
	o[20*i+7] = __vsads4(x, y);
	o[20*i+8] = __vabsdiffs2(x, y);
	o[20*i+9] = __vaddss4(x, y);
	o[20*i+10] = __vsetgtu2(x, y);
	o[20*i+11] = __vhaddu2(x, y);
	o[20*i+12] = __vabs4(x);
	o[20*i+13] = __vneg2(x);
	o[20*i+14] = __vsadu2(x, y);
}
