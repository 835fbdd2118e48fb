// types8.cu -- 8- and 16-bit integer arithmetic, sign extension and saturating float->int conversions.
extern "C" __global__ void types8(const float *f, const int *iv, signed char *c8, unsigned char *u8,
				  short *s16, unsigned short *u16, long long *l, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = f[i];
	int v = iv[i];
	c8[i] = (signed char)v;                  /* truncation */
	u8[i] = (unsigned char)(x < 0 ? 0 : x);  /* float -> u8 */
	s16[i] = (short)((short)v * (short)3);   /* 16-bit multiply wraps */
	u16[i] = (unsigned short)(v >> 3);
	signed char a = (signed char)v, b = (signed char)(v >> 8);
	l[3 * i] = (long long)(a * b);           /* promotion to int */
	l[3 * i + 1] = (long long)x;             /* f32 -> s64 */
	l[3 * i + 2] = (long long)(unsigned long long)(x * 1e12f); /* f32 -> u64 clamps negatives to 0 */
}
