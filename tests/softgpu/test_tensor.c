/* test_tensor.c -- sm_80+ instructions (tensor.ptx): cp.async, ldmatrix/stmatrix, mma.sync, wmma,
 * tf32 and FP8 conversions, griddepcontrol, cache hints; each against a CPU reference. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

/* Each test gets its own context (the fault tests poison theirs) and loads tensor.ptx. */
static CUmodule mod;

static int setup(void **state)
{
	if (sgt_setup(state))
		return -1;
	mod = sgt_module("tensor.ptx");
	return 0;
}

static int teardown(void **state)
{
	mod = NULL;
	return sgt_teardown(state);
}

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

static void launch(const char *name, unsigned grid, unsigned block, void **args)
{
	CK(cuLaunchKernel(sgt_function(mod, name), grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
}

static void run(const char *name, unsigned grid, unsigned block, void **args)
{
	launch(name, grid, block, args);
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

/* f16 through the compiler's _Float16 (independent of softgpu's fp.c) */
static double h2d(uint16_t h)
{
	_Float16 x;

	memcpy(&x, &h, 2);
	return (double)x;
}

static uint16_t d2h(double d)
{
	_Float16 x = (_Float16)d;
	uint16_t h;

	memcpy(&h, &x, 2);
	return h;
}

/* bf16: the high half of an f32 (only exactly representable values are used) */
static double bf2d(uint16_t h)
{
	return f32((uint32_t)h << 16);
}

static uint16_t d2bf(double d)
{
	return (uint16_t)(bits((float)d) >> 16);
}

/* FP8 values by their definition: e4m3 bias 7, no infinities; e5m2 bias 15, IEEE-like. */
static double fp8(uint8_t v, bool e5)
{
	int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, e = (v & 0x7f) >> mb, m = v & ((1 << mb) - 1);
	double s = (v & 0x80) ? -1 : 1;

	if (e5 && e == 31)
		return m ? NAN : s * INFINITY;
	if (!e5 && e == 15 && m == 7)
		return NAN;
	if (e == 0)
		return s * m * pow(2, 1 - bias - mb);
	return s * (1 + m / (double)(1 << mb)) * pow(2, e - bias);
}

/* f32 (or f16) to FP8 by search: the nearest finite code, ties to the even code; beyond
 * the largest finite value (infinities too) the largest (.satfinite); NaN 0x7f. */
static uint8_t to_fp8(double x, bool e5, bool relu)
{
	uint8_t maxc = e5 ? 0x7b : 0x7e, best = 0;
	double a = fabs(x), bd = INFINITY;

	if (isnan(x))
		return 0x7f;
	if (relu && x < 0)
		return 0;
	if (a >= fp8(maxc, e5))
		return (x < 0 ? 0x80 : 0) | maxc;
	for (unsigned c = 0; c <= maxc; c++) {
		double d = fabs(fp8((uint8_t)c, e5) - a);

		if (d < bd || (d == bd && !(c & 1))) {
			bd = d;
			best = (uint8_t)c;
		}
	}
	return (signbit(x) ? 0x80 : 0) | best;
}

/* ---- cp.async ---- */

static void test_cp_async(void **state)
{
	static uint8_t src[1408], out[32 * 64];
	CUdeviceptr ds, dout;

	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 % 251 + 1); /* never 0 */
	ds = dbuf(src, sizeof(src));
	dout = dbuf(NULL, sizeof(out));
	run("cp_async", 1, 32, (void *[]){&ds, &dout});
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (unsigned l = 0; l < 32; l++) {
		const uint8_t *o = out + l * 64;

		for (unsigned i = 0; i < 4; i++) /* src-size l % 5: the rest zero-filled */
			assert_int_equal(o[i], i < l % 5 ? src[4 * l + i] : 0);
		for (unsigned i = 0; i < 8; i++)
			assert_int_equal(o[4 + i], i < l % 9 ? src[128 + 8 * l + i] : 0);
		for (unsigned i = 0; i < 16; i++)
			assert_int_equal(o[16 + i], i < l % 17 ? src[384 + 16 * l + i] : 0);
		for (unsigned i = 0; i < 16; i++) /* ignore-src on odd lanes */
			assert_int_equal(o[32 + i], (l & 1) ? 0 : src[896 + 16 * l + i]);
	}
	CK(cuMemFree(ds));
	CK(cuMemFree(dout));
}

/* src-size 0 reads nothing: an address nobody owns is fine. */
static void test_cp_async_zero_size(void **state)
{
	CUdeviceptr bad = 0x10, dout = dbuf(NULL, 4);
	unsigned n = 0, v = 1;

	run("cp_async_from", 1, 1, (void *[]){&bad, &n, &dout});
	CK(cuMemcpyDtoH(&v, dout, 4));
	assert_int_equal(v, 0);
}

/* The same copy with bytes to read faults, as an ordinary out-of-bounds load would. */
static void test_cp_async_fault(void **state)
{
	CUdeviceptr bad = 0x10, dout = dbuf(NULL, 4);
	unsigned n = 4;

	launch("cp_async_from", 1, 1, (void *[]){&bad, &n, &dout});
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* A src-size beyond the copy size is refused at the instruction. */
static void test_cp_async_bad_size(void **state)
{
	CUdeviceptr dsrc = dbuf(NULL, 16), dout = dbuf(NULL, 4);
	unsigned n = 5;

	launch("cp_async_from", 1, 1, (void *[]){&dsrc, &n, &dout});
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_INSTRUCTION);
}

/* ---- ldmatrix / stmatrix ---- */

/* lane l of each group of 8 gives the address of row perm(l) */
static unsigned perm(unsigned i)
{
	return (i * 5 + 3) & 7;
}

static void test_ldmatrix(void **state)
{
	static uint16_t src[256];
	static uint32_t out[32 * 14];
	uint32_t seed = 5;
	CUdeviceptr ds, dout;

	for (unsigned i = 0; i < 256; i++)
		src[i] = (uint16_t)(sgt_rand(&seed) & 0xffff);
	ds = dbuf(src, sizeof(src));
	dout = dbuf(NULL, sizeof(out));
	run("ldmatrix", 1, 32, (void *[]){&ds, &dout});
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (unsigned l = 0; l < 32; l++) {
		const uint32_t *o = out + 14 * l;
		unsigned i = l / 4, j = 2 * (l % 4);
		uint32_t want[4], wantt[4];

		for (unsigned m = 0; m < 4; m++) {
			const uint16_t *M = src + m * 64; /* M[r * 8 + c] */

			/* thread l: row l/4, columns 2(l%4) and +1 of the fragment; fragment
			 * row k is the memory row lane k pointed at */
			want[m] = M[perm(i) * 8 + j] | (uint32_t)M[perm(i) * 8 + j + 1] << 16;
			/* .trans: the fragment is the transpose */
			wantt[m] = M[perm(j) * 8 + i] | (uint32_t)M[perm(j + 1) * 8 + i] << 16;
		}
		assert_int_equal(o[0], want[0]);
		assert_int_equal(o[1], want[0]);
		assert_int_equal(o[2], want[1]);
		for (unsigned m = 0; m < 4; m++)
			assert_int_equal(o[3 + m], want[m]);
		assert_int_equal(o[7], wantt[0]);
		assert_int_equal(o[8], wantt[0]);
		assert_int_equal(o[9], wantt[1]);
		for (unsigned m = 0; m < 4; m++)
			assert_int_equal(o[10 + m], wantt[m]);
	}
	CK(cuMemFree(ds));
	CK(cuMemFree(dout));
}

static void test_stmatrix(void **state)
{
	static uint32_t in[128];
	static uint16_t out[256];
	uint32_t seed = 9;
	CUdeviceptr din, dout;

	for (unsigned i = 0; i < 128; i++)
		in[i] = sgt_rand(&seed);
	din = dbuf(in, sizeof(in));
	dout = dbuf(NULL, sizeof(out));
	for (int t = 0; t < 2; t++) {
		run("stmatrix", 1, 32, (void *[]){&din, &dout, &t});
		CK(cuMemcpyDtoH(out, dout, sizeof(out)));
		for (unsigned m = 0; m < 4; m++)
			for (unsigned i = 0; i < 8; i++) /* fragment row i went to row perm(i) */
				for (unsigned c = 0; c < 8; c++) {
					/* element (r, c) of the fragment: lane r*4 + c/2, half c&1 */
					unsigned r = t ? c : i, cc = t ? i : c;
					uint32_t v = in[(r * 4 + cc / 2) * 4 + m];

					assert_int_equal(out[(m * 8 + perm(i)) * 8 + c],
							 (uint16_t)(v >> (16 * (cc & 1))));
				}
	}
	CK(cuMemFree(din));
	CK(cuMemFree(dout));
}

/* ---- mma.sync ---- */

/* Distinct small dyadic values, so that every product and sum is exact in f32 and f16. */
static double val(unsigned i, unsigned salt)
{
	return (double)((int)((i * 2654435761u + salt * 97u) >> 7 & 15) - 7) / 4;
}

static void test_mma_f16_ldmatrix(void **state)
{
	static uint16_t A[256], B[128];
	static float C[128], D[128];
	CUdeviceptr da, db, dc, dd;

	for (unsigned i = 0; i < 256; i++)
		A[i] = d2h(val(i, 1));
	for (unsigned i = 0; i < 128; i++) {
		B[i] = d2h(val(i, 2));
		C[i] = (float)val(i, 3) * 8;
	}
	da = dbuf(A, sizeof(A));
	db = dbuf(B, sizeof(B));
	dc = dbuf(C, sizeof(C));
	dd = dbuf(NULL, sizeof(D));
	run("mma_f16_ldm", 1, 32, (void *[]){&da, &db, &dc, &dd});
	CK(cuMemcpyDtoH(D, dd, sizeof(D)));
	for (unsigned r = 0; r < 16; r++)
		for (unsigned c = 0; c < 8; c++) {
			double s = C[r * 8 + c];

			for (unsigned k = 0; k < 16; k++)
				s += h2d(A[r * 16 + k]) * h2d(B[k * 8 + c]);
			assert_true(D[r * 8 + c] == (float)s);
		}
}

/* mma_16bit kinds: shape k, inputs bf16 or f16, accumulator f16 or f32 */
static const struct {
	int kind, k;
	bool bf16, acc16;
} kinds16[] = {
	{0, 16, false, false}, {1, 16, false, true}, {2, 16, true, false},
	{4, 8, false, false},  {5, 8, true, false},  {6, 8, false, true},
};

static void test_mma_16bit(void **state)
{
	static uint16_t A[256], B[128];
	static uint32_t C[128], D[128];
	CUdeviceptr da = dbuf(NULL, sizeof(A)), db = dbuf(NULL, sizeof(B)),
		    dc = dbuf(NULL, sizeof(C)), dd = dbuf(NULL, sizeof(D));

	for (unsigned v = 0; v < sizeof(kinds16) / sizeof(kinds16[0]); v++) {
		int kind = kinds16[v].kind, K = kinds16[v].k;
		bool bf = kinds16[v].bf16, h = kinds16[v].acc16;

		for (int i = 0; i < 16 * K; i++)
			A[i] = bf ? d2bf(val(i, 4 + v)) : d2h(val(i, 4 + v));
		for (int i = 0; i < K * 8; i++)
			B[i] = bf ? d2bf(val(i, 9 + v)) : d2h(val(i, 9 + v));
		for (int i = 0; i < 128; i++)
			C[i] = h ? d2h(val(i, 20 + v) * 4) : bits((float)val(i, 20 + v) * 4);
		CK(cuMemcpyHtoD(da, A, sizeof(A)));
		CK(cuMemcpyHtoD(db, B, sizeof(B)));
		CK(cuMemcpyHtoD(dc, C, sizeof(C)));
		run("mma_16bit", 1, 32, (void *[]){&da, &db, &dc, &dd, &kind});
		CK(cuMemcpyDtoH(D, dd, sizeof(D)));
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 8; c++) {
				double s = h ? h2d((uint16_t)C[r * 8 + c]) : f32(C[r * 8 + c]);

				for (int k = 0; k < K; k++)
					s += bf ? bf2d(A[r * K + k]) * bf2d(B[k * 8 + c])
						: h2d(A[r * K + k]) * h2d(B[k * 8 + c]);
				if (h)
					assert_int_equal(D[r * 8 + c], d2h(s));
				else
					assert_int_equal(D[r * 8 + c], bits((float)s));
			}
	}
}

/* f16 inputs over their whole range: f32 accumulation, tolerant only to the summation order */
static void test_mma_f16_random(void **state)
{
	static uint16_t A[256], B[128];
	static uint32_t C[128], D[128];
	uint32_t seed = 3;
	int kind = 0;
	CUdeviceptr da, db, dc, dd;

	for (int i = 0; i < 256; i++)
		A[i] = d2h(sgt_randf(&seed, -30, 30));
	for (int i = 0; i < 128; i++) {
		B[i] = d2h(sgt_randf(&seed, -3, 3) * ((i % 5) ? 1 : 1e-6f)); /* subnormals too */
		C[i] = bits(sgt_randf(&seed, -100, 100));
	}
	da = dbuf(A, sizeof(A));
	db = dbuf(B, sizeof(B));
	dc = dbuf(C, sizeof(C));
	dd = dbuf(NULL, sizeof(D));
	run("mma_16bit", 1, 32, (void *[]){&da, &db, &dc, &dd, &kind});
	CK(cuMemcpyDtoH(D, dd, sizeof(D)));
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 8; c++) {
			double s = f32(C[r * 8 + c]), mag = fabs(s);

			for (int k = 0; k < 16; k++) {
				double p = h2d(A[r * 16 + k]) * h2d(B[k * 8 + c]);

				s += p;
				mag += fabs(p);
			}
			assert_true(fabs(f32(D[r * 8 + c]) - s) <= mag * 0x1p-23);
		}
}

static void test_mma_tf32(void **state)
{
	static uint32_t A[128], B[64];
	static float C[128], D[128];
	CUdeviceptr da = dbuf(NULL, sizeof(A)), db = dbuf(NULL, sizeof(B)),
		    dc = dbuf(NULL, sizeof(C)), dd = dbuf(NULL, sizeof(D));

	for (int kind = 0; kind < 2; kind++) {
		int K = kind ? 4 : 8;

		for (int i = 0; i < 16 * K; i++) /* 10 significant bits: exact in tf32 */
			A[i] = bits((float)(val(i, 30 + kind) * 127 / 4));
		for (int i = 0; i < K * 8; i++)
			B[i] = bits((float)val(i, 40 + kind));
		for (int i = 0; i < 128; i++)
			C[i] = (float)val(i, 50 + kind) * 3;
		CK(cuMemcpyHtoD(da, A, sizeof(A)));
		CK(cuMemcpyHtoD(db, B, sizeof(B)));
		CK(cuMemcpyHtoD(dc, C, sizeof(C)));
		run("mma_tf32", 1, 32, (void *[]){&da, &db, &dc, &dd, &kind});
		CK(cuMemcpyDtoH(D, dd, sizeof(D)));
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 8; c++) {
				double s = C[r * 8 + c];

				for (int k = 0; k < K; k++)
					s += (double)f32(A[r * K + k]) * f32(B[k * 8 + c]);
				assert_true(D[r * 8 + c] == (float)s);
			}
	}
}

static void test_mma_f64(void **state)
{
	static double A[32], B[32], C[64], D[64];
	CUdeviceptr da, db, dc, dd;

	for (int i = 0; i < 32; i++) {
		A[i] = val(i, 60) * 1e10 + i; /* exact, beyond f32's precision */
		B[i] = val(i, 61) + 0.5;
	}
	for (int i = 0; i < 64; i++)
		C[i] = val(i, 62) * 3e9;
	da = dbuf(A, sizeof(A));
	db = dbuf(B, sizeof(B));
	dc = dbuf(C, sizeof(C));
	dd = dbuf(NULL, sizeof(D));
	run("mma_f64", 1, 32, (void *[]){&da, &db, &dc, &dd});
	CK(cuMemcpyDtoH(D, dd, sizeof(D)));
	for (int r = 0; r < 8; r++)
		for (int c = 0; c < 8; c++) {
			double s = C[r * 8 + c];

			for (int k = 0; k < 4; k++)
				s += A[r * 4 + k] * B[k * 8 + c];
			assert_true(D[r * 8 + c] == s);
		}
}

static int64_t elem8(uint8_t v, bool sgn)
{
	return sgn ? (int8_t)v : v;
}

static void test_mma_8bit(void **state)
{
	static uint8_t A[512], B[256];
	static uint32_t C[128], D[128];
	static const struct {
		int kind, k;
		bool as, bs, sat, fp8;
	} kinds[] = {
		{0, 32, true, true, false, false},
		{1, 32, false, true, true, false},
		{2, 16, true, false, true, false},
		{3, 32, false, false, false, true},
	};
	uint32_t seed = 17;
	CUdeviceptr da = dbuf(NULL, sizeof(A)), db = dbuf(NULL, sizeof(B)),
		    dc = dbuf(NULL, sizeof(C)), dd = dbuf(NULL, sizeof(D));

	for (unsigned v = 0; v < sizeof(kinds) / sizeof(kinds[0]); v++) {
		int kind = kinds[v].kind, K = kinds[v].k;

		for (int i = 0; i < 16 * K; i++)
			A[i] = (uint8_t)sgt_rand(&seed);
		for (int i = 0; i < K * 8; i++)
			B[i] = (uint8_t)sgt_rand(&seed);
		for (int i = 0; i < 128; i++) {
			if (kinds[v].fp8) {
				C[i] = bits(sgt_randf(&seed, -1000, 1000));
			} else {
				/* near the ends of the range, so that some sums overflow */
				int32_t near =
					(i & 1) ? INT32_MAX - (int32_t)(sgt_rand(&seed) % 400000)
						: INT32_MIN + (int32_t)(sgt_rand(&seed) % 400000);

				C[i] = (uint32_t)((i % 3) ? near : (int32_t)sgt_rand(&seed));
			}
		}
		if (kinds[v].fp8) /* no NaN inputs: e4m3 0x7f/0xff, e5m2 exponent 31 */
			for (int i = 0; i < 16 * K; i++)
				if ((A[i] & 0x7f) == 0x7f)
					A[i] ^= 1;
		if (kinds[v].fp8)
			for (int i = 0; i < K * 8; i++)
				if ((B[i] & 0x7c) == 0x7c)
					B[i] ^= 0x40;
		CK(cuMemcpyHtoD(da, A, sizeof(A)));
		CK(cuMemcpyHtoD(db, B, sizeof(B)));
		CK(cuMemcpyHtoD(dc, C, sizeof(C)));
		run("mma_8bit", 1, 32, (void *[]){&da, &db, &dc, &dd, &kind});
		CK(cuMemcpyDtoH(D, dd, sizeof(D)));
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 8; c++) {
				if (kinds[v].fp8) {
					double s = f32(C[r * 8 + c]), mag = fabs(s);

					for (int k = 0; k < K; k++) {
						double p = fp8(A[r * K + k], false) *
							   fp8(B[k * 8 + c], true);

						s += p;
						mag += fabs(p);
					}
					assert_true(fabs(f32(D[r * 8 + c]) - s) <=
						    mag * 0x1p-23 + 0x1p-140);
					continue;
				}
				int64_t s = (int32_t)C[r * 8 + c];

				for (int k = 0; k < K; k++)
					s += elem8(A[r * K + k], kinds[v].as) *
					     elem8(B[k * 8 + c], kinds[v].bs);
				if (kinds[v].sat)
					s = s > INT32_MAX   ? INT32_MAX
					    : s < INT32_MIN ? INT32_MIN
							    : s;
				assert_int_equal(D[r * 8 + c], (uint32_t)s);
			}
	}
}

/* A warp matrix instruction needs the whole warp: a 16-thread block faults. */
static void test_mma_partial_warp(void **state)
{
	CUdeviceptr d = dbuf(NULL, 64 * 8);

	launch("mma_f64", 1, 16, (void *[]){&d, &d, &d, &d});
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
}

/* The body of kernel k with registers declared; its lowering's result. */
static CUresult lower_body(const char *body)
{
	static char ptx[16384];
	CUmodule m;
	CUfunction f;
	CUresult r;

	assert_true(strlen(body) < sizeof(ptx) - 256);
	snprintf(ptx, sizeof(ptx),
		 ".version 8.0\n.target sm_90\n.address_size 64\n"
		 ".visible .entry k()\n{\n\t.reg .b32 %%r<12>;\n\t.reg .b64 %%rd<4>;\n"
		 "\t.reg .f32 %%f<8>;\n\t%s\n\tret;\n}\n",
		 body);
	CK(cuModuleLoadData(&m, ptx));
	r = cuModuleGetFunction(&f, m, "k");
	CK(cuModuleUnload(m));
	return r;
}

/* Shapes and types softgpu does not implement fail their kernel (NOT_SUPPORTED, the log names
 * the instruction); malformed operands are INVALID_PTX. */
static void test_matrix_bad_ptx(void **state)
{
	assert_int_equal(lower_body("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "
				    "{%r1,%r2,%r3,%r4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, "
				    "{%r1,%r2,%r3,%r4};"),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* f16 C with an f32 D is not an mma the ISA has */
	assert_int_equal(lower_body("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f16 "
				    "{%f1,%f2,%f3,%f4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, {%r1,%r2};"),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body("mma.sync.aligned.m16n8k16.row.row.f32.f16.f16.f32 "
				    "{%f1,%f2,%f3,%f4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, "
				    "{%f1,%f2,%f3,%f4};"),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body("mma.sync.aligned;"), CUDA_ERROR_NOT_SUPPORTED);
	/* a fragment of the wrong size */
	assert_int_equal(lower_body("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
				    "{%f1,%f2}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, {%f1,%f2,%f3,%f4};"),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1,%r2}, [%r3];"),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("ldmatrix.sync.aligned.m16n16.x1.shared.b8 {%r1}, [%r3];"),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* .cg copies 16 bytes only; the wait count is an immediate */
	assert_int_equal(lower_body("cp.async.cg.shared.global [%r1], [%rd1], 8;"),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("cp.async.wait_group %r1;"), CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("cp.async.ca.shared.global [%r1], [%rd1], 4, 4, 4, 4;"),
			 CUDA_ERROR_INVALID_PTX);
	/* .satfinite is mandatory for f32 to FP8 */
	assert_int_equal(lower_body("{ .reg .b16 %h; cvt.rn.e4m3x2.f32 %h, %f1, %f2; }"),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* a negated register is vmad's alone, and not in its .po mode */
	assert_int_equal(lower_body("add.s32 %r1, -%r2, 1;"), CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("vmad.u32.u32.u32.po %r1, -%r2, %r3, %r4;"),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("vmad.s32.s32.s32 %r1, -%r2, %r3, -%r4;"),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body("vmad.s32.s32.s32 %r1, -%r2, -%r3, -%r4;"), CUDA_SUCCESS);
	/* and a well-formed one lowers */
	assert_int_equal(lower_body("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
				    "{%f1,%f2,%f3,%f4}, {%r5,%r6,%r7,%r8}, {%r9,%r10}, "
				    "{%f1,%f2,%f3,%f4};"),
			 CUDA_SUCCESS);
}

/* ---- wmma ---- */

static void test_wmma(void **state)
{
	static uint16_t A[256], B[256], Dh[256];
	static float C[256], D[16 * 24];
	CUdeviceptr da, db, dc, dd, ddh;

	for (int i = 0; i < 256; i++) {
		A[i] = d2h(val(i, 70) / 2);
		B[i] = d2h(val(i, 71) / 2);
		C[i] = (float)val(i, 72);
	}
	da = dbuf(A, sizeof(A));
	db = dbuf(B, sizeof(B));
	dc = dbuf(C, sizeof(C));
	dd = dbuf(NULL, sizeof(D));
	ddh = dbuf(NULL, sizeof(Dh));
	for (int bcol = 0; bcol < 2; bcol++) {
		run("wmma_f16", 1, 32, (void *[]){&da, &db, &dc, &dd, &ddh, &bcol});
		CK(cuMemcpyDtoH(D, dd, sizeof(D)));
		CK(cuMemcpyDtoH(Dh, ddh, sizeof(Dh)));
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 16; c++) {
				double p = 0;

				for (int k = 0; k < 16; k++) /* B row-major, or col-major */
					p += h2d(A[r * 16 + k]) *
					     h2d(B[bcol ? c * 16 + k : k * 16 + c]);
				/* D = 2 (A B + C), stored col-major with ldm 24 */
				assert_true(D[c * 24 + r] == (float)(2 * (p + C[r * 16 + c])));
				assert_int_equal(Dh[r * 16 + c], d2h(p + 0.5));
			}
	}
}

/* wmma f64 m8n8k4 and tf32 m16n16k8, with the other layouts */
static void test_wmma_f64_tf32(void **state)
{
	static double A[32], B[32], C[64], D[64];
	static float fa[128], fb[128], fc[256], fd[256];
	CUdeviceptr da, db, dc, dd;

	for (int i = 0; i < 32; i++) {
		A[i] = val(i, 80) * 1e9 + i; /* exact in f64, not in f32 */
		B[i] = val(i, 81);
	}
	for (int i = 0; i < 64; i++)
		C[i] = val(i, 82) * 7;
	da = dbuf(A, sizeof(A));
	db = dbuf(B, sizeof(B));
	dc = dbuf(C, sizeof(C));
	dd = dbuf(NULL, sizeof(D));
	run("wmma_f64", 1, 32, (void *[]){&da, &db, &dc, &dd});
	CK(cuMemcpyDtoH(D, dd, sizeof(D)));
	for (int r = 0; r < 8; r++)
		for (int c = 0; c < 8; c++) {
			double s = C[r * 8 + c];

			for (int k = 0; k < 4; k++) /* A row-major 8x4, B col-major 4x8 */
				s += A[r * 4 + k] * B[c * 4 + k];
			assert_true(D[r * 8 + c] == s);
		}
	for (int i = 0; i < 128; i++) {
		fa[i] = (float)(val(i, 83) * 127 / 4);
		fb[i] = (float)val(i, 84);
	}
	for (int i = 0; i < 256; i++)
		fc[i] = (float)val(i, 85);
	da = dbuf(fa, sizeof(fa));
	db = dbuf(fb, sizeof(fb));
	dc = dbuf(fc, sizeof(fc));
	dd = dbuf(NULL, sizeof(fd));
	run("wmma_tf32", 1, 32, (void *[]){&da, &db, &dc, &dd});
	CK(cuMemcpyDtoH(fd, dd, sizeof(fd)));
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 16; c++) {
			double s = fc[r * 16 + c];

			for (int k = 0; k < 8;
			     k++) /* A col-major 16x8 (ldm 16), B row-major 8x16 */
				s += (double)fa[k * 16 + r] * fb[k * 16 + c];
			assert_true(fd[r * 16 + c] == (float)s);
		}
}

/*
 * The body "{ .reg .<type> %g<n>; <opcode> <before>{%g0,...,%g(n-1)}<after> }" in buf: an
 * instruction with a {..} of n registers.
 */
static const char *with_regs(char *buf, size_t size, const char *type, unsigned n,
			     const char *before, const char *after)
{
	int len = snprintf(buf, size, "{ .reg .%s %%g<%u>; %s{", type, n, before);

	for (unsigned i = 0; i < n; i++)
		len += snprintf(buf + len, size - (size_t)len, "%s%%g%u", i ? "," : "", i);
	snprintf(buf + len, size - (size_t)len, "}%s }", after);
	return buf;
}

/*
 * wmma shapes and register lists from hostile PTX: a C/D shape the ISA does not have
 * (sized to overrun the lowering's slot array, or to overflow the fragment's encoded
 * rows), and {..} lists longer than the fragment, fail their kernel; the context keeps
 * working.
 */
static void test_wmma_bad_shapes(void **state)
{
	static char body[8192];
	CUdeviceptr d = dbuf(NULL, 64 * 64 * 4);

	/* 64 x 64 f32 would be 128 registers a lane */
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 128,
					      "wmma.load.c.sync.aligned.row.m64n64k16.global.f32 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 128,
					      "wmma.store.d.sync.aligned.row.m64n64k16.global.f32 "
					      "[%rd1], ",
					      ", %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* 64 rows: 8 registers, as m16n16k16's, but no such shape */
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.load.c.sync.aligned.row.m64n4k16.global.f32 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.store.d.sync.aligned.col.m64n4k16.f32 [%rd1], ",
					      ", %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* C types the shape does not have; shape numbers too long to be one */
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 4,
					      "wmma.load.c.sync.aligned.row.m16n16k8.f16 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(
		lower_body(with_regs(body, sizeof(body), "f64", 2,
				     "wmma.load.c.sync.aligned.row.m8n8k4.f32 ", ", [%rd1], %r1;")),
		CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.load.c.sync.aligned.row.m4294967312n16k16.f32 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.mma.sync.aligned.row.col.m64n4k16.f32.f32 ",
					      ", {%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, "
					      "{%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, "
					      "{%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7};")),
			 CUDA_ERROR_NOT_SUPPORTED);
	/* {..} lists longer than the fragment: C, A, D of mma and wmma.mma, ldmatrix */
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 9,
					      "wmma.load.c.sync.aligned.row.m16n16k16.f32 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "b32", 200,
					      "wmma.load.a.sync.aligned.row.m16n16k16.f16 ",
					      ", [%rd1], %r1;")),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 200,
					      "wmma.store.d.sync.aligned.row.m32n8k16.f32 [%rd1], ",
					      ", %r1;")),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(
		lower_body(with_regs(body, sizeof(body), "f32", 128,
				     "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ",
				     ", {%r5,%r6,%r7,%r8}, {%r9,%r10}, {%f1,%f2,%f3,%f4};")),
		CUDA_ERROR_INVALID_PTX);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 128,
					      "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 ",
					      ", {%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, "
					      "{%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, "
					      "{%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7};")),
			 CUDA_ERROR_INVALID_PTX);
	assert_int_equal(
		lower_body(with_regs(body, sizeof(body), "b32", 64,
				     "ldmatrix.sync.aligned.m8n8.x4.shared.b16 ", ", [%r3];")),
		CUDA_ERROR_INVALID_PTX);
	/* the same forms at the ISA's size lower, and a wmma kernel still runs */
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.load.c.sync.aligned.row.m16n16k16.f32 ",
					      ", [%rd1], %r1;")),
			 CUDA_SUCCESS);
	assert_int_equal(lower_body(with_regs(body, sizeof(body), "f32", 8,
					      "wmma.store.d.sync.aligned.col.m8n32k16.f32 [%rd1], ",
					      ", %r1;")),
			 CUDA_SUCCESS);
	run("wmma_tf32", 1, 32, (void *[]){&d, &d, &d, &d});
}

/* ---- conversions ---- */

static uint32_t ref_tf32(float x, int mode) /* 0 rn, 1 rna, 2 rz */
{
	int e;
	double a, q, ulp;

	if (isnan(x))
		return 0x7fffffff;
	if (isinf(x) || x == 0)
		return bits(x);
	frexp(x, &e); /* |x| = f * 2^e, f in [0.5, 1) */
	if (e - 1 < -126)
		e = -125;
	ulp = ldexp(1, e - 1 - 10);
	a = fabs(x) / ulp;
	q = mode == 0 ? nearbyint(a) : mode == 1 ? round(a) : trunc(a);
	return bits((float)(copysign(q * ulp, x))); /* overflow to 2^128 gives infinity */
}

static void test_cvt_tf32(void **state)
{
	enum { N = 600 };
	static float in[N];
	static uint32_t out[3 * N];
	static const uint32_t edge[] = {
		0x3f800000, 0x3f801000, /* tie: 1 + 2^-11 */
		0x3f803000,		/* tie, odd below */
		0x3f801001, 0x3f800fff, 0xbf801000, 0x7f7fffff, 0xff7ff000,
		0x00000001, 0x00001000, 0x00003000, 0x007fffff, 0x80800fff,
		0x7f800000, 0xff800000, 0x7fc00001, 0x80000000, 0x00000000,
	};
	uint32_t seed = 11;
	int n = N;
	CUdeviceptr din, dout;

	for (int i = 0; i < N; i++)
		in[i] = i < (int)(sizeof(edge) / 4) ? f32(edge[i]) : f32(sgt_rand(&seed));
	din = dbuf(in, sizeof(in));
	dout = dbuf(NULL, sizeof(out));
	run("cvt_tf32", (N + 127) / 128, 128, (void *[]){&din, &dout, &n});
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++)
		for (int m = 0; m < 3; m++) {
			if (out[3 * i + m] != ref_tf32(in[i], m))
				fprintf(stderr, "tf32 %08x mode %d: %08x want %08x\n", bits(in[i]),
					m, out[3 * i + m], ref_tf32(in[i], m));
			assert_int_equal(out[3 * i + m], ref_tf32(in[i], m));
		}
}

static void test_cvt_fp8(void **state)
{
	enum { N = 32768 }; /* pairs; also covers every u16 for the way back */
	static float in[2 * N];
	static uint32_t h2[N], out16[4 * 65536];
	static uint16_t out8[6 * N];
	static const float edge[] = {
		0.0f,
		1.0f,
		1.0625f /* e4m3 tie, to even */,
		1.1875f /* tie, odd below */,
		448.0f,
		464.0f /* halfway to the next binade: saturates */,
		1e10f,
		-1e10f,
		0x1p-9f /* smallest e4m3 subnormal */,
		0x1p-10f /* half of it: tie to 0 */,
		0x1.8p-9f /* tie between 1 and 2 */,
		0x1p-16f,
		0x1p-17f,
		0x1.8p-16f,
		57344.0f,
		61440.0f /* e5m2 halfway to the next binade */,
		0x1.cp15f,
		-0.75f,
		-3.0f,
		0.0625f,
		240.0f,
		256.0f,
	};
	uint32_t seed = 13;
	int n = N;
	CUdeviceptr din, dh2, d8, d16;

	for (int i = 0; i < 2 * N; i++) {
		if (i < (int)(sizeof(edge) / sizeof(edge[0])))
			in[i] = edge[i];
		else if (i < 64)
			in[i] = (i & 1) ? INFINITY : (i & 2) ? -INFINITY : NAN;
		else /* spread over every binade of both formats */
			in[i] = ldexpf(sgt_randf(&seed, -2, 2), (int)(sgt_rand(&seed) % 44) - 26);
	}
	for (int i = 0; i < N; i++)
		h2[i] = sgt_rand(&seed);
	din = dbuf(in, sizeof(in));
	dh2 = dbuf(h2, sizeof(h2));
	d8 = dbuf(NULL, sizeof(out8));
	d16 = dbuf(NULL, sizeof(out16));
	run("cvt_fp8", N / 256, 256, (void *[]){&din, &d8, &dh2, &d16, &n});
	CK(cuMemcpyDtoH(out8, d8, sizeof(out8)));
	CK(cuMemcpyDtoH(out16, d16, sizeof(out16)));
	for (int i = 0; i < N; i++) {
		float a = in[2 * i], b = in[2 * i + 1];
		const uint16_t *o = out8 + 6 * i;

		for (int e5 = 0; e5 < 2; e5++)
			for (int relu = 0; relu < 2; relu++) {
				uint16_t want =
					(uint16_t)(to_fp8(a, e5, relu) << 8 | to_fp8(b, e5, relu));

				if (o[relu * 2 + e5] != want)
					fprintf(stderr,
						"fp8 %a %a e5m2 %d relu %d: %04x want %04x\n", a, b,
						e5, relu, o[relu * 2 + e5], want);
				assert_int_equal(o[relu * 2 + e5], want);
			}
		for (int e5 = 0; e5 < 2; e5++) {
			uint16_t want =
				(uint16_t)(to_fp8(h2d((uint16_t)(h2[i] >> 16)), e5, false) << 8 |
					   to_fp8(h2d((uint16_t)h2[i]), e5, false));

			assert_int_equal(o[4 + e5], want);
		}
	}
	for (unsigned v = 0; v < 65536; v++)
		for (int k = 0; k < 4; k++) {
			bool e5 = k & 1, relu = k >= 2;
			uint32_t want = 0;

			for (int half = 0; half < 2; half++) {
				uint8_t b8 = (uint8_t)(v >> (8 * half));
				double x = fp8(b8, e5);
				uint16_t h = isnan(x) ? 0x7fff : d2h(relu && x < 0 ? 0 : x);

				want |= (uint32_t)h << (16 * half);
			}
			assert_int_equal(out16[4 * v + k], want);
		}
}

/* ---- griddepcontrol ---- */

/* A dependent grid launched with programmatic stream serialization sees the first's writes. */
static void test_griddepcontrol(void **state)
{
	static uint32_t out[64];
	CUdeviceptr d1 = dbuf(NULL, 256), d2 = dbuf(NULL, 256);
	CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
	CUlaunchConfig cfg = {.gridDimX = 1,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 64,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .attrs = &attr,
			      .numAttrs = 1};

	attr.value.programmaticStreamSerializationAllowed = 1;
	launch("pdl_first", 1, 64, (void *[]){&d1});
	CK(cuLaunchKernelEx(&cfg, sgt_function(mod, "pdl_add"), (void *[]){&d1, &d2}, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(out, d2, sizeof(out)));
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(out[i], i * 3 + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cp_async, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cp_async_zero_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cp_async_fault, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cp_async_bad_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ldmatrix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stmatrix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_f16_ldmatrix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_16bit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_f16_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_tf32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_f64, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_8bit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mma_partial_warp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_matrix_bad_ptx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wmma, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wmma_f64_tf32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wmma_bad_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cvt_tf32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cvt_fp8, setup, teardown),
		cmocka_unit_test_setup_teardown(test_griddepcontrol, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
