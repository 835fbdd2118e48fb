// intops.cu -- integer-heavy: popc, brev, clz, ffs, bfe/bfi, mul.hi, div/rem signed and unsigned, funnel shifts, byte_perm, sad.
extern "C" __global__ void int32_ops(const unsigned *a, const unsigned *b, unsigned *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned x = a[i], y = b[i] | 1;
	int sx = (int)x, sy = (int)(y | 1) * ((i & 1) ? -1 : 1);
	unsigned *o = out + 20 * i;
	o[0] = __popc(x);
	o[1] = __brev(x);
	o[2] = __clz(x);
	o[3] = __ffs(x);
	o[4] = __umulhi(x, y);
	o[5] = (unsigned)__mulhi(sx, sy);
	o[6] = x / y;
	o[7] = x % y;
	o[8] = (unsigned)(sx / sy);
	o[9] = (unsigned)(sx % sy);
	o[10] = __funnelshift_l(x, y, i);
	o[11] = __funnelshift_r(x, y, i);
	o[12] = __byte_perm(x, y, 0x3715 + i);
	o[13] = __sad(sx, sy, 7u);
	o[14] = (x >> (i & 7)) & 0x3f;          /* bfe */
	o[15] = (x & ~(0xffu << 4)) | ((y & 0xffu) << 4); /* bfi */
	o[16] = (unsigned)(sx >> (i & 31));     /* arithmetic shift */
	o[17] = min(x, y) ^ (unsigned)max(sx, sy);
	o[18] = (unsigned)abs(sx);
	o[19] = __usad(x, y, 3u) + __vabsdiffu4(x, y) * 0 + (x * y);
}

extern "C" __global__ void int64_ops(const unsigned long long *a, const unsigned long long *b,
				     unsigned long long *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	unsigned long long x = a[i], y = b[i] | 1;
	long long sx = (long long)x, sy = (long long)(y >> 1) * ((i & 1) ? -1 : 1) + 1;
	unsigned long long *o = out + 12 * i;
	o[0] = __popcll(x);
	o[1] = __brevll(x);
	o[2] = __clzll(x);
	o[3] = __umul64hi(x, y);
	o[4] = (unsigned long long)__mul64hi(sx, sy);
	o[5] = x / y;
	o[6] = x % y;
	o[7] = (unsigned long long)(sx / sy);
	o[8] = (unsigned long long)(sx % sy);
	o[9] = x * y + (x >> (i & 63)) - (y << (i & 63));
	o[10] = (unsigned long long)((long long)x >> (i & 63));
	o[11] = __ffsll((long long)x);
}
