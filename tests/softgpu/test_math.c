/* test_math.c -- arithmetic kernels: f64, integers of every width, rounding modes, f16, libm, inline PTX. */
#include <fenv.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

static CUdeviceptr dbuf(const void *src, size_t bytes)
{
	CUdeviceptr d;

	CK(cuMemAlloc(&d, bytes));
	if (src)
		CK(cuMemcpyHtoD(d, src, bytes));
	else
		CK(cuMemsetD8(d, 0, bytes));
	return d;
}

static void run(CUmodule m, const char *name, unsigned grid, unsigned block, void **args)
{
	CK(cuLaunchKernel(sgt_function(m, name), grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
}

static float f32(uint32_t b)
{
	float f;

	memcpy(&f, &b, 4);
	return f;
}

static uint32_t bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	return b;
}

static void test_f64(void **state)
{
	enum { N = 256 };
	static double a[N], b[N], out[8 * N];
	uint32_t seed = 21;
	int n = N;
	CUmodule m = sgt_module("f64.ptx");

	for (int i = 0; i < N; i++) {
		a[i] = sgt_randf(&seed, -50, 50) * 1.000001;
		b[i] = sgt_randf(&seed, -50, 50) + 0.001;
	}
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)),
		    dout = dbuf(NULL, sizeof(out));
	void *args[] = {&da, &db, &dout, &n};
	run(m, "f64_ops", 2, 128, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++) {
		double x = a[i], y = b[i], *o = out + 8 * i;

		assert_true(o[0] == x / y);
		assert_true(o[1] == sqrt(fabs(x)));
		assert_true(o[2] == fma(x, y, 1.0));
		assert_true(o[3] == (double)(long long)(x * 1000.0));
		assert_true(o[4] == (double)(float)x);
		assert_true(fabs(o[5] - exp(y * 0.01)) <= 4e-16 * exp(y * 0.01));
		assert_true(fabs(o[6] - log(fabs(x) + 1.0)) <=
			    4e-16 * fabs(log(fabs(x) + 1.0)) + 1e-300);
		assert_true(fabs(o[7] - (sin(x) + cos(y))) <= 1e-15);
	}
	CK(cuModuleUnload(m));
}

static uint32_t brev32(uint32_t x)
{
	uint32_t r = 0;

	for (int i = 0; i < 32; i++)
		r |= ((x >> i) & 1u) << (31 - i);
	return r;
}

static uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s)
{
	uint64_t v = (uint64_t)y << 32 | x;
	uint32_t r = 0;

	for (int n = 0; n < 4; n++)
		r |= (uint32_t)((v >> (8 * ((s >> (4 * n)) & 7))) & 0xff) << (8 * n);
	return r;
}

static void test_int32(void **state)
{
	enum { N = 200 };
	static unsigned a[N], b[N], out[20 * N];
	uint32_t seed = 77;
	int n = N;
	CUmodule m = sgt_module("intops.ptx");

	for (int i = 0; i < N; i++) {
		a[i] = sgt_rand(&seed) >> (i % 13);
		b[i] = sgt_rand(&seed) >> (i % 29);
	}
	a[0] = 0;
	a[1] = 0x80000000u;
	b[2] = 0xffffffffu;
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)),
		    dout = dbuf(NULL, sizeof(out));
	void *args[] = {&da, &db, &dout, &n};
	run(m, "int32_ops", 2, 128, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++) {
		uint32_t x = a[i], y = b[i] | 1, *o = out + 20 * i;
		int32_t sx = (int32_t)x, sy = (int32_t)(y | 1) * ((i & 1) ? -1 : 1);
		uint64_t fs = (uint64_t)y << 32 | x;

		assert_int_equal(o[0], __builtin_popcount(x));
		assert_int_equal(o[1], brev32(x));
		assert_int_equal(o[2], x ? __builtin_clz(x) : 32);
		assert_int_equal(o[3], __builtin_ffs((int)x));
		assert_int_equal(o[4], (uint32_t)(((uint64_t)x * y) >> 32));
		assert_int_equal(o[5], (uint32_t)(((int64_t)sx * sy) >> 32));
		assert_int_equal(o[6], x / y);
		assert_int_equal(o[7], x % y);
		assert_int_equal(o[8], (uint32_t)(sy == -1 ? -(int64_t)sx : sx / sy));
		assert_int_equal(o[9], (uint32_t)(sy == -1 ? 0 : sx % sy));
		assert_int_equal(o[10], (uint32_t)((fs << (i & 31)) >> 32));
		assert_int_equal(o[11], (uint32_t)(fs >> (i & 31)));
		assert_int_equal(o[12], byte_perm(x, y, (0x3715u + (unsigned)i) & 0x7777));
		assert_int_equal(o[13],
				 (uint32_t)(sx > sy ? (int64_t)sx - sy : (int64_t)sy - sx) + 7);
		assert_int_equal(o[14], (x >> (i & 7)) & 0x3f);
		assert_int_equal(o[15], (x & ~(0xffu << 4)) | ((y & 0xffu) << 4));
		assert_int_equal(o[16], (uint32_t)(sx >> (i & 31)));
		assert_int_equal(o[17], (x < y ? x : y) ^ (uint32_t)(sx > sy ? sx : sy));
		assert_int_equal(o[18], (uint32_t)(sx < 0 ? -(int64_t)sx : sx));
		assert_int_equal(o[19], (x > y ? x - y : y - x) + 3 + x * y);
	}
	CK(cuModuleUnload(m));
}

static void test_int64(void **state)
{
	enum { N = 200 };
	static unsigned long long a[N], b[N], out[12 * N];
	uint32_t seed = 78;
	int n = N;
	CUmodule m = sgt_module("intops.ptx");

	for (int i = 0; i < N; i++) {
		a[i] = ((unsigned long long)sgt_rand(&seed) << 32 | sgt_rand(&seed)) >> (i % 41);
		b[i] = ((unsigned long long)sgt_rand(&seed) << 32 | sgt_rand(&seed)) >> (i % 57);
	}
	a[0] = 0;
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)),
		    dout = dbuf(NULL, sizeof(out));
	void *args[] = {&da, &db, &dout, &n};
	run(m, "int64_ops", 2, 128, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++) {
		unsigned long long x = a[i], y = b[i] | 1, *o = out + 12 * i, r = 0;
		long long sx = (long long)x, sy = (long long)(y >> 1) * ((i & 1) ? -1 : 1) + 1;

		for (int k = 0; k < 64; k++)
			r |= ((x >> k) & 1ull) << (63 - k);
		assert_true(o[0] == (unsigned long long)__builtin_popcountll(x));
		assert_true(o[1] == r);
		assert_true(o[2] == (unsigned long long)(x ? __builtin_clzll(x) : 64));
		assert_true(o[3] == (unsigned long long)(((unsigned __int128)x * y) >> 64));
		assert_true(o[4] == (unsigned long long)(((__int128)sx * sy) >> 64));
		assert_true(o[5] == x / y && o[6] == x % y);
		assert_true(o[7] == (unsigned long long)(sx / sy) &&
			    o[8] == (unsigned long long)(sx % sy));
		assert_true(o[9] == x * y + (x >> (i & 63)) - (y << (i & 63)));
		assert_true(o[10] == (unsigned long long)(sx >> (i & 63)));
		assert_true(o[11] == (unsigned long long)__builtin_ffsll(sx));
	}
	CK(cuModuleUnload(m));
}

static void test_types8(void **state)
{
	enum { N = 256 };
	static float f[N];
	static int iv[N];
	static signed char c8[N];
	static unsigned char u8[N];
	static short s16[N];
	static unsigned short u16[N];
	static long long l[3 * N];
	uint32_t seed = 5;
	int n = N;
	CUmodule m = sgt_module("types8.ptx");

	for (int i = 0; i < N; i++) {
		f[i] = sgt_randf(&seed, -50, 300);
		iv[i] = (int)sgt_rand(&seed);
	}
	CUdeviceptr df = dbuf(f, sizeof(f)), di = dbuf(iv, sizeof(iv)), dc8 = dbuf(NULL, N);
	CUdeviceptr du8 = dbuf(NULL, N), ds16 = dbuf(NULL, 2 * N), du16 = dbuf(NULL, 2 * N);
	CUdeviceptr dl = dbuf(NULL, sizeof(l));
	void *args[] = {&df, &di, &dc8, &du8, &ds16, &du16, &dl, &n};
	run(m, "types8", 2, 128, args);
	CK(cuMemcpyDtoH(c8, dc8, N));
	CK(cuMemcpyDtoH(u8, du8, N));
	CK(cuMemcpyDtoH(s16, ds16, 2 * N));
	CK(cuMemcpyDtoH(u16, du16, 2 * N));
	CK(cuMemcpyDtoH(l, dl, sizeof(l)));
	for (int i = 0; i < N; i++) {
		float x = f[i];
		int v = iv[i];
		signed char a = (signed char)v, b = (signed char)(v >> 8);
		double big = (double)(x * 1e12f);

		assert_int_equal(c8[i], (signed char)v);
		/* nvcc converts to u32 (saturating) and stores the low byte */
		assert_int_equal(u8[i], x < 0 ? 0 : (unsigned char)(unsigned)x);
		assert_int_equal(s16[i], (short)((short)v * 3));
		assert_int_equal(u16[i], (unsigned short)(v >> 3));
		assert_true(l[3 * i] == (long long)(a * b));
		assert_true(l[3 * i + 1] == (long long)x);
		assert_true((unsigned long long)l[3 * i + 2] ==
			    (big <= 0 ? 0ull : (unsigned long long)big));
	}
	CK(cuModuleUnload(m));
}

/* ulp bounds: libdevice functions as documented in the CUDA Programming Guide */
static void test_mathf(void **state)
{
	enum { N = 500 };
	static float in[N], out[16 * N];
	const uint32_t ulps[16] = {2, 2, 2, 1, 4, 0, 2, 2, 0, 0, 0, 0, 3, 2, 0, 2};
	int n = N;
	CUmodule m = sgt_module("mathf.ptx");

	for (int i = 0; i < N; i++)
		in[i] = -3.1f + 6.2f * (float)i / N;
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &n};
	run(m, "mathf", 4, 128, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++) {
		double x = in[i];
		float ref[16] = {(float)sin(x),
				 (float)cos(x),
				 (float)exp((double)(in[i] * 0.1f)),
				 (float)log((double)(fabsf(in[i]) + 1e-3f)),
				 (float)pow(fabs(x), (double)1.3f),
				 (float)sqrt(fabs(x)),
				 (float)(1.0 / sqrt((double)(fabsf(in[i]) + 1.0f))),
				 (float)tanh((double)(in[i] * 0.3f)),
				 (float)exp((double)(in[i] * 0.1f)),
				 (float)sin(x),
				 (float)cos(x),
				 (float)log((double)(fabsf(in[i]) + 1.0f)),
				 (float)atan2(x, 2.0),
				 (float)erf((double)(in[i] * 0.2f)),
				 1.0f / (in[i] + 0.5f),
				 (float)(x / 3.0)};
		const float *o = out + 16 * i;

		for (int k = 0; k < 16; k++) {
			if (k >= 8 && k <= 11) { /* fast intrinsics: absolute bounds */
				double tol = k == 8 ? 2e-6 * fabs(ref[k]) + 1e-6 : 1e-5;

				if (fabs(o[k] - ref[k]) > tol)
					print_error("mathf[%d] x=%a got %a want %a\n", k, x, o[k],
						    ref[k]);
				assert_true(fabs(o[k] - ref[k]) <= tol);
				continue;
			}
			if (sgt_ulp(o[k], ref[k]) > ulps[k])
				print_error("mathf[%d] x=%a got %a want %a\n", k, x, o[k], ref[k]);
			assert_true(sgt_ulp(o[k], ref[k]) <= ulps[k]);
		}
	}
	CK(cuModuleUnload(m));
}

/* Host arithmetic under a rounding mode (volatile: nothing is folded). */
static float rnd_f(int mode, int op, float a, float b, float c)
{
	volatile float x = a, y = b, z = c, r;
	int old = fegetround();

	fesetround(mode);
	switch (op) {
	case 0:
		r = x + y;
		break;
	case 1:
		r = x * y;
		break;
	case 2:
		r = x / y;
		break;
	case 3:
		r = sqrtf(x);
		break;
	case 4:
		r = fmaf(x, y, z);
		break;
	default:
		r = 1.0f / x;
		break;
	}
	fesetround(old);
	return r;
}

static double rnd_d(int mode, int op, double a, double b)
{
	volatile double x = a, y = b, r;
	int old = fegetround();

	fesetround(mode);
	r = op == 0 ? x + y : x / y;
	fesetround(old);
	return r;
}

static float rnd_cvt(int mode, long long v, int is_double, double d)
{
	volatile long long x = v;
	volatile double dd = d;
	volatile float r;
	int old = fegetround();

	fesetround(mode);
	r = is_double ? (float)dd : (v < 0 ? (float)x : (float)(unsigned long long)x);
	fesetround(old);
	return r;
}

static int clamp_i(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 2147483647.0)
		return 2147483647;
	if (v <= -2147483648.0)
		return -2147483647 - 1;
	return (int)v;
}

static void test_rounding(void **state)
{
	enum { N = 400 };
	static float a[N], b[N], f[16 * N];
	static int iv[6 * N];
	static double d[2 * N];
	uint32_t seed = 17;
	int n = N;
	CUmodule m = sgt_module("rounding.ptx");

	for (int i = 0; i < N; i++) {
		a[i] = sgt_randf(&seed, -4, 4) * (float)(1 + i % 7);
		b[i] = sgt_randf(&seed, -4, 4) + 0.01f;
	}
	a[0] = 2.5f / 7.5f; /* exact ties for the integer conversions */
	a[1] = -3.5f / 7.5f;
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)), df = dbuf(NULL, sizeof(f));
	CUdeviceptr di = dbuf(NULL, sizeof(iv)), dd = dbuf(NULL, sizeof(d));
	void *args[] = {&da, &db, &df, &di, &dd, &n};
	run(m, "rounding", 4, 128, args);
	CK(cuMemcpyDtoH(f, df, sizeof(f)));
	CK(cuMemcpyDtoH(iv, di, sizeof(iv)));
	CK(cuMemcpyDtoH(d, dd, sizeof(d)));
	for (int i = 0; i < N; i++) {
		float x = a[i], y = b[i], *o = f + 16 * i;
		float want[16] = {rnd_f(FE_TOWARDZERO, 0, x, y, 0),
				  rnd_f(FE_UPWARD, 0, x, y, 0),
				  rnd_f(FE_DOWNWARD, 0, x, y, 0),
				  rnd_f(FE_TOWARDZERO, 1, x, y, 0),
				  rnd_f(FE_UPWARD, 1, x, y, 0),
				  rnd_f(FE_DOWNWARD, 2, x, y, 0),
				  rnd_f(FE_UPWARD, 2, x, y, 0),
				  rnd_f(FE_TOWARDZERO, 3, fabsf(x), 0, 0),
				  rnd_f(FE_TOWARDZERO, 4, x, y, 1.0f),
				  rnd_f(FE_UPWARD, 4, x, y, -1.0f),
				  rnd_f(FE_DOWNWARD, 5, y, 0, 0),
				  rnd_cvt(FE_TOWARDZERO, (int)(x * 1e6f) | 0x1234567, 0, 0),
				  rnd_cvt(FE_UPWARD,
					  (long long)((unsigned)(fabsf(y) * 1e6f) | 0x81234567u), 0,
					  0),
				  rnd_cvt(FE_DOWNWARD, 0, 1, (double)x * 1.0000001),
				  x != x  ? 0.0f
				  : x < 0 ? 0.0f
				  : x > 1 ? 1.0f
					  : x,
				  nearbyintf(x * 3.0f)};
		int *p = iv + 6 * i;
		float x75 = x * 7.5f;

		for (int k = 0; k < 16; k++) {
			if (bits(o[k]) != bits(want[k]))
				print_error("rounding[%d] x=%a y=%a got %a want %a\n", k, x, y,
					    o[k], want[k]);
			assert_true(bits(o[k]) == bits(want[k]));
		}
		assert_int_equal(p[0], clamp_i(nearbyint(x75)));
		assert_int_equal(p[1], clamp_i(trunc(x75)));
		assert_int_equal(p[2], clamp_i(ceil(x75)));
		assert_int_equal(p[3], clamp_i(floor(x75)));
		assert_int_equal(p[4], clamp_i(trunc(x * 1e10f)));
		assert_int_equal(p[5], x * 3.0f <= 0 ? 0 : (int)(unsigned)nearbyint(x * 3.0f));
		assert_true(d[2 * i] == rnd_d(FE_UPWARD, 0, x, 1e-20));
		assert_true(d[2 * i + 1] == rnd_d(FE_TOWARDZERO, 1, 1.0, y));
	}
	CK(cuModuleUnload(m));
}

/* Reference binary16 conversion, written independently of softgpu's: round half to even or toward zero. */
static uint16_t to_half(double x, int rz)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double ax = fabs(x), scaled, fl;
	int e;
	uint32_t mant;

	if (isnan(x))
		return 0x7fff;
	if (ax >= 65520.0 && !rz)
		return sign | 0x7c00;
	if (ax >= 65536.0)
		return sign | (rz ? 0x7bff : 0x7c00);
	if (ax < 6.103515625e-05) { /* subnormal: units of 2^-24 */
		scaled = ax * 16777216.0;
		e = 0;
	} else {
		e = (int)floor(log2(ax));
		if (ldexp(1.0, e) > ax)
			e--;
		if (ldexp(1.0, e + 1) <= ax)
			e++;
		scaled = ldexp(ax, 10 - e);
	}
	fl = floor(scaled);
	if (!rz && (scaled - fl > 0.5 || (scaled - fl == 0.5 && fmod(fl, 2) == 1)))
		fl += 1;
	mant = (uint32_t)fl;
	if (e == 0 && ax < 6.103515625e-05)
		return sign | (uint16_t)mant; /* 0x400 carries into the exponent */
	if (mant == 2048) {
		mant = 1024;
		e++;
	}
	if (e > 15)
		return sign | (rz ? 0x7bff : 0x7c00);
	return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(mant - 1024);
}

static double from_half(uint16_t h)
{
	int e = (h >> 10) & 0x1f, mnt = h & 0x3ff;
	double v = e == 0    ? ldexp(mnt, -24)
		   : e == 31 ? (mnt ? NAN : INFINITY)
			     : ldexp(mnt | 0x400, e - 25);

	return (h & 0x8000) ? -v : v;
}

static void test_half(void **state)
{
	enum { N = 300 };
	static float in[2 * N], out[3 * N];
	static unsigned short hb[4 * N];
	uint32_t seed = 33;
	int n = N;
	CUmodule m = sgt_module("half.ptx");

	for (int i = 0; i < 2 * N; i++)
		in[i] = sgt_randf(&seed, -70, 70) * (i % 9 == 0 ? 0.0001f : 1.0f);
	in[0] = 65519.0f;			/* rounds to 65504 */
	in[1] = 1.0009765625f + 0.00048828125f; /* a tie */
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	CUdeviceptr dh = dbuf(NULL, sizeof(hb));
	void *args[] = {&di, &dout, &dh, &n};
	run(m, "half_ops", 3, 128, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	CK(cuMemcpyDtoH(hb, dh, sizeof(hb)));
	for (int i = 0; i < N; i++) {
		uint16_t a = to_half(in[i], 0), b = to_half(in[N + i], 0);
		double x = from_half(a), y = from_half(b);
		uint16_t q0 = to_half(x * x, 0), q1 = to_half(y * y, 0);

		assert_int_equal(hb[4 * i], a);
		assert_int_equal(hb[4 * i + 1], to_half(x + y, 0));
		assert_int_equal(hb[4 * i + 2], to_half(x * y, 0));
		assert_int_equal(hb[4 * i + 3], to_half(x * y + 1.0, 0));
		assert_true(out[3 * i] == (float)from_half(q0) + (float)from_half(q1));
		assert_true(out[3 * i + 1] == (float)from_half(to_half(in[i], 1)));
		assert_true(out[3 * i + 2] == (float)-fabs(x));
	}
	CK(cuModuleUnload(m));
}

static float ftz(float x)
{
	return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static float sat(float x)
{
	return !(x > 0) ? 0.0f : x > 1 ? 1.0f : x;
}

static uint32_t bfind(uint32_t a, int sgn, int shiftamt)
{
	int pos = -1;

	if (sgn && (a >> 31))
		a = ~a;
	for (int k = 31; k >= 0; k--)
		if ((a >> k) & 1) {
			pos = k;
			break;
		}
	if (pos < 0)
		return 0xffffffffu;
	return shiftamt ? 31u - (uint32_t)pos : (uint32_t)pos;
}

static void test_asmops(void **state)
{
	enum { N = 256 };
	static float fa[2 * N], fo[12 * N];
	static unsigned ua[2 * N], uo[16 * N];
	uint32_t seed = 1234;
	int n = N;
	CUmodule m = sgt_module("asmops.ptx");
	/* ecl mode byte indices (d.b0..b3) for selector & 3 */
	const int ecl[4][4] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}};

	for (int i = 0; i < N; i++) {
		fa[2 * i] = sgt_randf(&seed, -2, 2);
		fa[2 * i + 1] = sgt_randf(&seed, 0.1f, 3);
		ua[2 * i] = sgt_rand(&seed) >> (i % 32);
		ua[2 * i + 1] = sgt_rand(&seed);
	}
	fa[0] = f32(0x00000100u); /* subnormals for .ftz and testp */
	fa[2] = -f32(0x00400000u);
	CUdeviceptr dfa = dbuf(fa, sizeof(fa)), dua = dbuf(ua, sizeof(ua));
	CUdeviceptr dfo = dbuf(NULL, sizeof(fo)), duo = dbuf(NULL, sizeof(uo));
	void *args[] = {&dfa, &dua, &dfo, &duo, &n};
	run(m, "asmops", 2, 128, args);
	CK(cuMemcpyDtoH(fo, dfo, sizeof(fo)));
	CK(cuMemcpyDtoH(uo, duo, sizeof(uo)));
	for (int i = 0; i < N; i++) {
		float x = fa[2 * i], y = fa[2 * i + 1], *f = fo + 12 * i;
		uint32_t a = ua[2 * i], b = ua[2 * i + 1], *u = uo + 16 * i, c = a ^ b, lop = 0;
		uint64_t carry = (uint64_t)a + b;
		int32_t dp = i;

		assert_true(bits(f[0]) == bits(ftz(ftz(x) + ftz(y))));
		assert_true(f[1] == sat(x * y));
		assert_true(f[2] == sat(ftz(fmaf(ftz(x), ftz(y), ftz(x)))));
		assert_true(sgt_ulp(f[3], exp2f(x)) <= 2);
		assert_true(fabsf(f[4] - log2f(y)) <= 1.5e-7f * fabsf(log2f(y)) + 2e-7f);
		assert_true(sgt_ulp(f[5], (float)(1.0 / sqrt(y))) <= 2);
		assert_true(fabsf(f[6] - sinf(ftz(x))) <= 6e-7f);
		assert_true(fabsf(f[7] - tanhf(x)) <= 5e-4f * fabsf(tanhf(x)) + 1e-30f);
		assert_true(bits(f[8]) == ((bits(y) & 0x7fffffffu) | (bits(x) & 0x80000000u)));
		assert_true(f[9] == (x < y ? x : y));
		assert_true(sgt_ulp(f[10], x / y) <= 2);
		assert_true(f[11] == nearbyintf(x));
		assert_int_equal(u[0], fpclassify(x) == FP_SUBNORMAL);
		{
			uint64_t v = (uint64_t)b << 32 | a;
			uint32_t r = 0;

			for (int k = 0; k < 4; k++)
				r |= (uint32_t)((v >> (8 * ecl[i & 3][k])) & 0xff) << (8 * k);
			assert_int_equal(u[1], r);
		}
		assert_int_equal(u[2], bfind(a, 1, 0));
		assert_int_equal(u[3], bfind(b, 0, 1));
		for (int k = 0; k < 4; k++)
			dp += (int8_t)(a >> (8 * k)) * (int32_t)((b >> (8 * k)) & 0xff);
		assert_int_equal(u[4], (uint32_t)dp);
		for (int k = 0; k < 8; k++)
			if (0xb4 & (1 << k))
				lop |= ((k & 4) ? a : ~a) & ((k & 2) ? b : ~b) & ((k & 1) ? c : ~c);
		assert_int_equal(u[5], lop);
		{
			uint32_t sh = (uint32_t)i > 32 ? 32 : (uint32_t)i;
			uint64_t v = (uint64_t)b << 32 | a;

			assert_int_equal(u[6], (uint32_t)((v << sh) >> 32));
		}
		{
			int32_t a24 = (int32_t)(a << 8) >> 8, b24 = (int32_t)(b << 8) >> 8;

			assert_int_equal(u[7], (uint32_t)(a24 * (int64_t)b24));
			assert_int_equal(
				u[8],
				(uint32_t)((((uint64_t)(a & 0xffffff)) * (b & 0xffffff)) >> 16));
		}
		assert_int_equal(u[9], a + (uint32_t)(carry >> 32));
		assert_int_equal(u[10], 100u - (a < b));
		assert_int_equal(u[11], (int32_t)a > (int32_t)b ? 0xffffffffu : 0);
		assert_int_equal(u[12], (int32_t)(a - b) >= 0 ? a : b);
		{
			uint32_t pos = (uint32_t)i & 0xff, len = 9, d = 0, sbit;

			sbit = (a >> (pos + len - 1 < 31 ? pos + len - 1 : 31)) & 1;
			for (uint32_t k = 0; k < 32; k++)
				d |= ((k < len && pos + k <= 31) ? (a >> (pos + k)) & 1 : sbit)
				     << k;
			assert_int_equal(u[13], d);
		}
		{
			uint32_t pos = (uint32_t)i & 0xff, d = b;

			for (uint32_t k = 0; k < 7 && pos + k <= 31; k++)
				d = (d & ~(1u << (pos + k))) | (((a >> k) & 1u) << (pos + k));
			assert_int_equal(u[14], d);
		}
		{
			int64_t s = (int64_t)(int32_t)a + (int32_t)b;

			s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
			assert_int_equal(u[15], (uint32_t)(int32_t)s);
		}
	}
	CK(cuModuleUnload(m));
}

static uint32_t lanes(uint32_t a, uint32_t b, int bits, int sgn, int op)
{
	uint32_t r = 0, m = (1u << bits) - 1;

	for (int i = 0; i < 32 / bits; i++) {
		int32_t x = (int32_t)((a >> (i * bits)) & m), y = (int32_t)((b >> (i * bits)) & m),
			v;

		if (sgn) {
			x = x & (1 << (bits - 1)) ? x - (1 << bits) : x;
			y = y & (1 << (bits - 1)) ? y - (1 << bits) : y;
		}
		switch (op) {
		case 0:
			v = x > y ? x - y : y - x;
			break; /* absdiff */
		case 1:
			v = x + y;
			break; /* add */
		case 2:
			v = x - y;
			break; /* sub */
		case 3:
			v = (x + y + 1) >> 1;
			break; /* avg, rounded up */
		case 4:
			v = x == y ? (int32_t)m : 0;
			break; /* cmpeq */
		case 5:
			v = x > y ? x : y;
			break; /* max */
		case 6:
			v = x < y ? x : y;
			break; /* min */
		case 7:
			v = x + y; /* signed saturation */
			v = v > (1 << (bits - 1)) - 1 ? (1 << (bits - 1)) - 1
			    : v < -(1 << (bits - 1))  ? -(1 << (bits - 1))
						      : v;
			break;
		case 8:
			v = x > y;
			break; /* setgt */
		case 9:
			v = (x + y) >> 1;
			break; /* hadd */
		case 10:
			v = x < 0 ? -x : x;
			break; /* abs */
		default:
			v = -x;
			break; /* neg */
		}
		r |= ((uint32_t)v & m) << (i * bits);
	}
	return r;
}

static uint32_t sad(uint32_t a, uint32_t b, int bits, int sgn)
{
	uint32_t d = lanes(a, b, bits, sgn, 0), s = 0;

	for (int i = 0; i < 32 / bits; i++)
		s += (d >> (i * bits)) & ((1u << bits) - 1);
	return s;
}

static void test_simd(void **state)
{
	enum { T = 128 };
	unsigned a[T], b[T], o[20 * T];
	uint32_t seed = 555;
	CUmodule m = sgt_module("simd.ptx");

	for (int i = 0; i < T; i++) {
		a[i] = sgt_rand(&seed);
		b[i] = i % 5 == 0 ? a[i] ^ 0x00ff00ffu : sgt_rand(&seed);
	}
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)), dout = dbuf(NULL, sizeof(o));
	void *args[] = {&da, &db, &dout};
	run(m, "simd", 1, T, args);
	CK(cuMemcpyDtoH(o, dout, sizeof(o)));
	for (int i = 0; i < T; i++) {
		uint32_t x = a[i], y = b[i], *r = o + 20 * i;

		assert_int_equal(r[0], lanes(x, y, 8, 0, 0));
		assert_int_equal(r[1], lanes(x, y, 8, 0, 1));
		assert_int_equal(r[2], lanes(x, y, 16, 0, 2));
		assert_int_equal(r[3], lanes(x, y, 8, 0, 3));
		assert_int_equal(r[4], lanes(x, y, 8, 0, 4));
		assert_int_equal(r[5], lanes(x, y, 8, 0, 5));
		assert_int_equal(r[6], lanes(x, y, 16, 1, 6));
		assert_int_equal(r[7], sad(x, y, 8, 1));
		assert_int_equal(r[8], lanes(x, y, 16, 1, 0));
		assert_int_equal(r[9], lanes(x, y, 8, 1, 7));
		assert_int_equal(r[10], lanes(x, y, 16, 0, 8));
		assert_int_equal(r[11], lanes(x, y, 16, 0, 9));
		assert_int_equal(r[12], lanes(x, 0, 8, 1, 10));
		assert_int_equal(r[13], lanes(x, 0, 16, 1, 11));
		assert_int_equal(r[14], sad(x, y, 16, 0));
	}
	CK(cuModuleUnload(m));
}

/*
 * The scalar video forms of video.cu, in its order, computed by the PTX ISA's stages:
 * extend the selected parts (33 bits), operate, clamp with .sat (to the merged part's
 * range when d has a selector), then the secondary operation or the merge into c.
 * sel: 0 word, 1-4 .b0-.b3, 5-6 .h0/.h1. op2: 0, '+', '<' (min), '>' (max).
 */
enum { VADD, VSUB, VABSD, VMIN, VMAX, VSHL, VSHR, VSET };

static const struct vform {
	int op;
	bool ds, as, bs, sat;
	int asel, bsel, dsel;
	char op2;
	int shmode; /* 1 clamp, 2 wrap */
	int cmp;    /* vset: 1 lt, 2 ne, 3 ge */
} vforms[18] = {
	{VADD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},	 {VADD, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
	{VADD, 1, 0, 1, 1, 1, 6, 0, 0, 0, 0},	 {VSUB, 0, 1, 0, 1, 6, 3, 0, 0, 0, 0},
	{VABSD, 0, 1, 1, 0, 4, 2, 0, '+', 0, 0}, {VMIN, 1, 1, 0, 0, 0, 5, 0, '>', 0, 0},
	{VMAX, 0, 0, 1, 0, 5, 0, 0, '<', 0, 0},	 {VADD, 0, 0, 0, 1, 3, 4, 2, 0, 0, 0},
	{VSUB, 1, 1, 1, 1, 5, 6, 6, 0, 0, 0},	 {VABSD, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0},
	{VSHL, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0},	 {VSHL, 1, 1, 0, 1, 5, 1, 0, 0, 1, 0},
	{VSHR, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0},	 {VSHR, 0, 1, 0, 0, 4, 2, 0, '+', 1, 0},
	{VSET, 0, 1, 0, 0, 2, 0, 0, 0, 0, 1},	 {VSET, 0, 0, 0, 0, 1, 1, 0, '+', 0, 2},
	{VSET, 0, 1, 1, 0, 6, 5, 6, 0, 0, 3},	 {VMAX, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
};

static long long vpart(uint32_t v, int sel, bool sgn)
{
	if (sel == 0)
		return sgn ? (long long)(int32_t)v : (long long)v;
	if (sel <= 4)
		return sgn ? (int8_t)(v >> (8 * (sel - 1))) : (uint8_t)(v >> (8 * (sel - 1)));
	return sgn ? (int16_t)(v >> (16 * (sel - 5))) : (uint16_t)(v >> (16 * (sel - 5)));
}

static uint32_t vref(const struct vform *f, uint32_t a, uint32_t b, uint32_t c)
{
	long long ta = vpart(a, f->asel, f->as), tb = vpart(b, f->bsel, f->bs), tc;
	__int128 r = 0;

	switch (f->op) {
	case VADD:
		r = ta + tb;
		break;
	case VSUB:
		r = ta - tb;
		break;
	case VABSD:
		r = ta > tb ? ta - tb : tb - ta;
		break;
	case VMIN:
		r = ta < tb ? ta : tb;
		break;
	case VMAX:
		r = ta > tb ? ta : tb;
		break;
	case VSET:
		r = f->cmp == 1 ? ta < tb : f->cmp == 2 ? ta != tb : ta >= tb;
		break;
	default:
		tb = f->shmode == 2 ? tb % 32 : tb > 32 ? 32 : tb;
		r = f->op == VSHL ? (__int128)ta * ((__int128)1 << tb) : (__int128)(ta >> tb);
		break;
	}
	if (f->sat) {
		int w = f->dsel == 0 ? 32 : f->dsel <= 4 ? 8 : 16;
		__int128 lo = f->ds ? -((__int128)1 << (w - 1)) : 0;
		__int128 hi = f->ds ? ((__int128)1 << (w - 1)) - 1 : ((__int128)1 << w) - 1;

		r = r < lo ? lo : r > hi ? hi : r;
	}
	tc = f->ds ? (long long)(int32_t)c : (long long)c;
	if (f->op2 == '+')
		r += tc;
	else if (f->op2 == '<')
		r = r < tc ? r : tc;
	else if (f->op2 == '>')
		r = r > tc ? r : tc;
	if (f->dsel) {
		int w = f->dsel <= 4 ? 8 : 16,
		    sh = f->dsel <= 4 ? 8 * (f->dsel - 1) : 16 * (f->dsel - 5);
		uint32_t m = ((1u << w) - 1) << sh;

		return (((uint32_t)r << sh) & m) | (c & ~m);
	}
	return (uint32_t)r;
}

/* vmad forms 18-23 of video.cu: the product of the selected parts, negated when exactly one
 * of a and b is (or c when it is), plus c and .po's 1; shifted, clamped, the low 32 bits */
static const struct vmadform {
	bool as, bs, sat, po, na, nb, nc;
	int asel, bsel, shift;
} vmadforms[6] = {
	{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},	 {1, 1, 1, 0, 0, 0, 0, 5, 6, 0},
	{0, 1, 0, 0, 1, 0, 0, 1, 5, 7},	 {0, 0, 1, 0, 0, 0, 1, 6, 3, 0},
	{0, 0, 0, 1, 0, 0, 0, 5, 6, 15}, {1, 0, 1, 0, 0, 1, 0, 0, 4, 15},
};

static uint32_t vmadref(const struct vmadform *f, uint32_t a, uint32_t b, uint32_t c)
{
	bool sgn = f->as || f->bs || (f->na != f->nb) || f->nc;
	__int128 p = (__int128)vpart(a, f->asel, f->as) * vpart(b, f->bsel, f->bs);
	__int128 cc = sgn ? (__int128)(int32_t)c : (__int128)c;
	long long r;

	if (f->na != f->nb)
		p = -p;
	if (f->nc) /* the ISA's ~c + 1 on the 32-bit c, then extended */
		cc = (__int128)(int32_t)~c + 1;
	p += cc + (f->po ? 1 : 0);
	r = (long long)(p >> f->shift);
	if (f->sat && sgn)
		r = r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r;
	else if (f->sat)
		r = (unsigned long long)r > UINT32_MAX ? UINT32_MAX : r;
	return (uint32_t)r;
}

static void test_video(void **state)
{
	enum { T = 256 };
	static unsigned in[3 * T], o[24 * T];
	static const unsigned edge[] = {0,	    0x7fffffff, 0x80000000, 0xffffffff, 0x80808080,
					0x7f7f7f7f, 0x00ff00ff, 0x8000ffff, 31,		32,
					33,	    0x21,	0xff,	    0x100};
	uint32_t seed = 777;
	int n = T;
	CUmodule m = sgt_module("video.ptx");

	for (int i = 0; i < 3 * T; i++)
		in[i] = i < 3 * 14 * 14
				? (i % 3 == 2 ? sgt_rand(&seed)
					      : edge[(i % 3 == 0 ? i / 3 / 14 : i / 3) % 14])
				: sgt_rand(&seed) >> (i % 29);
	CUdeviceptr din = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(o));
	void *args[] = {&din, &dout, &n};
	run(m, "video", 1, T, args);
	CK(cuMemcpyDtoH(o, dout, sizeof(o)));
	for (int i = 0; i < T; i++)
		for (int k = 0; k < 18; k++) {
			uint32_t want = vref(&vforms[k], in[3 * i], in[3 * i + 1], in[3 * i + 2]);

			if (o[24 * i + k] != want)
				fprintf(stderr,
					"video form %d: a %08x b %08x c %08x: %08x want %08x\n", k,
					in[3 * i], in[3 * i + 1], in[3 * i + 2], o[24 * i + k],
					want);
			assert_int_equal(o[24 * i + k], want);
		}
	for (int i = 0; i < T; i++)
		for (int k = 0; k < 6; k++)
			assert_int_equal(o[24 * i + 18 + k], vmadref(&vmadforms[k], in[3 * i],
								     in[3 * i + 1], in[3 * i + 2]));
	CK(cuModuleUnload(m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f64),   cmocka_unit_test(test_int32),
		cmocka_unit_test(test_int64), cmocka_unit_test(test_types8),
		cmocka_unit_test(test_mathf), cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_half),  cmocka_unit_test(test_asmops),
		cmocka_unit_test(test_simd),  cmocka_unit_test(test_video),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
