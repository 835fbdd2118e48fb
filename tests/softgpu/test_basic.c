/* test_basic.c -- array kernels checked bit for bit against CPU references computed here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

/* Device buffer filled from host memory (or zeroed when src is NULL). */
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

static void launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by, unsigned shmem,
		   void **args)
{
	CK(cuLaunchKernel(f, gx, gy, 1, bx, by, 1, shmem, NULL, args, NULL));
	CK(cuCtxSynchronize());
}

static void test_saxpy(void **state)
{
	enum { N = 5000 };
	static float x[N], y[N], r[N];
	static double dx[N], dy[N], dr[N];
	CUmodule m = sgt_module("saxpy.ptx");
	uint32_t seed = 7;
	int n = N;
	float a = 1.75f;
	double da = -0.3125;
	CUdeviceptr gx, gy;

	for (int i = 0; i < N; i++) {
		x[i] = sgt_randf(&seed, -10, 10);
		y[i] = sgt_randf(&seed, -10, 10);
		dx[i] = x[i] * 1.1;
		dy[i] = y[i] / 3.0;
	}
	gx = dbuf(x, sizeof(x));
	gy = dbuf(y, sizeof(y));
	void *args[] = {&n, &a, &gx, &gy};
	launch(sgt_function(m, "saxpy"), 8, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(r, gy, sizeof(r)));
	for (int i = 0; i < N; i++)
		assert_true(r[i] == fmaf(a, x[i], y[i]));
	CK(cuMemFree(gx));
	CK(cuMemFree(gy));
	gx = dbuf(dx, sizeof(dx));
	gy = dbuf(dy, sizeof(dy));
	void *dargs[] = {&n, &da, &gx, &gy};
	launch(sgt_function(m, "daxpy"), 3, 1, 256, 1, 0, dargs);
	CK(cuMemcpyDtoH(dr, gy, sizeof(dr)));
	for (int i = 0; i < N; i++)
		assert_true(dr[i] == fma(da, dx[i], dy[i]));
	CK(cuMemFree(gx));
	CK(cuMemFree(gy));
	CK(cuModuleUnload(m));
}

static void test_matmul(void **state)
{
	enum { N = 70 };
	static float A[N * N], B[N * N], C[N * N];
	CUmodule m = sgt_module("matmul.ptx");
	uint32_t seed = 3;
	int n = N;

	for (int i = 0; i < N * N; i++) {
		A[i] = sgt_randf(&seed, -1, 1);
		B[i] = sgt_randf(&seed, -1, 1);
	}
	CUdeviceptr a = dbuf(A, sizeof(A)), b = dbuf(B, sizeof(B)), c = dbuf(NULL, sizeof(C));
	void *args[] = {&a, &b, &c, &n};
	launch(sgt_function(m, "matmul"), (N + 15) / 16, (N + 15) / 16, 16, 16, 0, args);
	CK(cuMemcpyDtoH(C, c, sizeof(C)));
	for (int r = 0; r < N; r++) {
		for (int col = 0; col < N; col++) {
			float acc = 0.0f;

			for (int k = 0; k < N; k++)
				acc = fmaf(A[r * N + k], B[k * N + col], acc);
			assert_true(C[r * N + col] == acc);
		}
	}
	CK(cuModuleUnload(m));
}

static void test_stencil(void **state)
{
	enum { W = 53, H = 37 };
	static float in[W * H], out[W * H];
	CUmodule m = sgt_module("stencil.ptx");
	uint32_t seed = 11;
	int w = W, h = H;

	for (int i = 0; i < W * H; i++)
		in[i] = sgt_randf(&seed, 0, 100);
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &w, &h};
	launch(sgt_function(m, "stencil2d"), (W + 15) / 16, (H + 7) / 8, 16, 8, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int y = 0; y < H; y++) {
		for (int x = 0; x < W; x++) {
			float want;

			if (x == 0 || y == 0 || x == W - 1 || y == H - 1) {
				want = in[y * W + x];
			} else {
				float s = in[y * W + x] + in[y * W + x - 1];

				s = s + in[y * W + x + 1];
				s = s + in[(y - 1) * W + x];
				s = s + in[(y + 1) * W + x];
				want = s * 0.2f;
			}
			assert_true(out[y * W + x] == want);
		}
	}
	CK(cuModuleUnload(m));
}

static void test_transpose(void **state)
{
	enum { W = 100, H = 67 };
	static float in[W * H], out[W * H];
	CUmodule m = sgt_module("transpose.ptx");
	int w = W, h = H;

	for (int i = 0; i < W * H; i++)
		in[i] = (float)i;
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &w, &h};
	launch(sgt_function(m, "transpose"), (W + 31) / 32, (H + 31) / 32, 32, 8, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			assert_true(out[x * H + y] == in[y * W + x]);
	CK(cuModuleUnload(m));
}

static void test_grid3d(void **state)
{
	const unsigned g[3] = {3, 2, 4}, b[3] = {5, 3, 2};
	unsigned total = g[0] * g[1] * g[2] * b[0] * b[1] * b[2];
	unsigned *out = malloc(total * 16);
	CUmodule m = sgt_module("grid3d.ptx");
	CUfunction f = sgt_function(m, "grid3d");
	CUdeviceptr d = dbuf(NULL, total * 16);
	void *args[] = {&d};

	CK(cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(out, d, total * 16));
	for (unsigned bz = 0; bz < g[2]; bz++)
		for (unsigned by = 0; by < g[1]; by++)
			for (unsigned bx = 0; bx < g[0]; bx++)
				for (unsigned tz = 0; tz < b[2]; tz++)
					for (unsigned ty = 0; ty < b[1]; ty++)
						for (unsigned tx = 0; tx < b[0]; tx++) {
							unsigned blk = bx + g[0] * (by + g[1] * bz);
							unsigned t = tx + b[0] * (ty + b[1] * tz);
							unsigned *o = out + 4 * (blk * 30 + t);

							assert_int_equal(o[0],
									 tx | ty << 8 | tz << 16);
							assert_int_equal(o[1],
									 bx | by << 8 | bz << 16);
							assert_int_equal(o[2], 5 | 3 << 8 |
										       2 << 16 |
										       3 << 24);
							assert_int_equal(o[3], (t & 31) | 2 << 8 |
										       4 << 16);
						}
	free(out);
	CK(cuModuleUnload(m));
}

static void test_vecload(void **state)
{
	enum { N = 300 };
	static float a[4 * N], fo[4 * N];
	static int b[2 * N], io[2 * N], narrow[2 * N];
	static double c[2 * N], dout[2 * N];
	static signed char sc[N];
	static unsigned short us[N];
	CUmodule m = sgt_module("vecload.ptx");
	int n = N;

	for (int i = 0; i < N; i++) {
		for (int k = 0; k < 4; k++)
			a[4 * i + k] = (float)(i * 4 + k);
		b[2 * i] = i * 3;
		b[2 * i + 1] = -i;
		c[2 * i] = i * 0.25;
		c[2 * i + 1] = -i * 0.5;
		sc[i] = (signed char)(i * 37);
		us[i] = (unsigned short)(i * 1000);
	}
	CUdeviceptr da = dbuf(a, sizeof(a)), db = dbuf(b, sizeof(b)), dc = dbuf(c, sizeof(c));
	CUdeviceptr dsc = dbuf(sc, sizeof(sc)), dus = dbuf(us, sizeof(us));
	CUdeviceptr dfo = dbuf(NULL, sizeof(fo)), dio = dbuf(NULL, sizeof(io));
	CUdeviceptr ddo = dbuf(NULL, sizeof(dout)), dn = dbuf(NULL, sizeof(narrow));
	void *args[] = {&da, &db, &dc, &dsc, &dus, &dfo, &dio, &ddo, &dn, &n};
	launch(sgt_function(m, "vecload"), 3, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(fo, dfo, sizeof(fo)));
	CK(cuMemcpyDtoH(io, dio, sizeof(io)));
	CK(cuMemcpyDtoH(dout, ddo, sizeof(dout)));
	CK(cuMemcpyDtoH(narrow, dn, sizeof(narrow)));
	for (int i = 0; i < N; i++) {
		assert_true(fo[4 * i] == a[4 * i + 3] && fo[4 * i + 3] == a[4 * i] + 1.0f);
		assert_true(fo[4 * i + 1] == a[4 * i + 2] && fo[4 * i + 2] == a[4 * i + 1]);
		assert_int_equal(io[2 * i], b[2 * i] + b[2 * i + 1]);
		assert_int_equal(io[2 * i + 1], b[2 * i] - b[2 * i + 1]);
		assert_true(dout[2 * i] == c[2 * i + 1] * 2.0 && dout[2 * i + 1] == c[2 * i] + 0.5);
		assert_int_equal(narrow[2 * i], sc[i] * 3);
		assert_int_equal(narrow[2 * i + 1], us[i] + 1);
	}
	CK(cuModuleUnload(m));
}

static void test_localmem(void **state)
{
	int idx[128], out[128];
	CUmodule m = sgt_module("localmem.ptx");

	for (int t = 0; t < 128; t++)
		idx[t] = t * 13 + 5;
	CUdeviceptr di = dbuf(idx, sizeof(idx)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout};
	launch(sgt_function(m, "localmem"), 1, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int t = 0; t < 128; t++) {
		int k = idx[t] % 40;

		assert_int_equal(out[t], k * t + (((k * 7) % 64) ^ t) + (int)((k % 8) * 0.5));
	}
	CK(cuModuleUnload(m));
}

static void test_constmem(void **state)
{
	enum { N = 200 };
	float in[N], out[N], coeffs[8] = {1, -0.5f, 0.25f, 2, -1, 0.125f, 3, -0.0625f};
	CUmodule m = sgt_module("constmem.ptx");
	CUdeviceptr cptr, counter, table;
	size_t bytes;
	unsigned count;
	int n = N;
	const char *msg = "softgpu";

	for (int i = 0; i < N; i++)
		in[i] = (float)i / 50.0f - 2.0f;
	CK(cuModuleGetGlobal(&cptr, &bytes, m, "coeffs"));
	assert_int_equal(bytes, sizeof(coeffs));
	CK(cuMemcpyHtoD(cptr, coeffs, sizeof(coeffs)));
	CK(cuModuleGetGlobal(&table, &bytes, m, "table"));
	assert_int_equal(bytes, 16);
	CK(cuModuleGetGlobal(&counter, NULL, m, "counter"));
	CK_EQ(cuModuleGetGlobal(&counter, NULL, m, "no_such_symbol"), CUDA_ERROR_NOT_FOUND);
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &n};
	launch(sgt_function(m, "constmem"), 2, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	CK(cuMemcpyDtoH(&count, counter, 4));
	assert_int_equal(count, N);
	for (int i = 0; i < N; i++) {
		float acc = 0.0f;

		for (int k = 7; k >= 0; k--)
			acc = fmaf(acc, in[i], coeffs[k]);
		assert_true(out[i] == acc + (float)((i & 3) + 1) * 10 + (float)msg[i % 7]);
	}
	CK(cuModuleUnload(m));
}

static void test_structs(void **state)
{
	struct Odd {
		char c;
		double d;
		int v[3];
	} odd = {-5, 2.5, {1, 2, 3}};
	struct Packed {
		unsigned char bytes[7];
	} p = {{1, 2, 3, 4, 5, 6, 7}};
	struct __attribute__((aligned(16))) Vec {
		float x, y, z, w;
	} v = {1, 2, 3, 4};
	char c = -7;
	short s = -1234;
	_Bool flag = 1;
	long long big = -1234567890123ll;
	unsigned char uc = 250;
	double out[10];
	CUmodule m = sgt_module("structs.ptx");
	CUfunction f;
	unsigned count;
	CUdeviceptr d = dbuf(NULL, sizeof(out));
	void *args[] = {&c, &s, &flag, &odd, &p, &v, &big, &uc, &d};
	size_t off, size;
	/* the layout nvcc gives: char, short, bool, Odd (align 8), Packed, Vec (align 16), ... */
	const size_t want_off[] = {0, 2, 4, 8, 40, 48, 64, 72, 80};
	const size_t want_size[] = {1, 2, 1, 32, 7, 16, 8, 1, 8};

	CK(cuModuleGetFunctionCount(&count, m));
	assert_int_equal(count, 1);
	CK(cuModuleEnumerateFunctions(&f, 1, m));
	for (size_t i = 0; i < 9; i++) {
		CK(cuFuncGetParamInfo(f, i, &off, &size));
		assert_int_equal(off, want_off[i]);
		assert_int_equal(size, want_size[i]);
	}
	CK_EQ(cuFuncGetParamInfo(f, 9, &off, &size), CUDA_ERROR_INVALID_VALUE);
	launch(f, 1, 1, 1, 1, 0, args);
	CK(cuMemcpyDtoH(out, d, sizeof(out)));
	assert_true(out[0] == -7 && out[1] == -1234 && out[2] == 1 && out[3] == -5);
	assert_true(out[4] == 2.5 && out[5] == 321);
	assert_true(out[6] == ((((((1 * 2 + 2) * 2 + 3) * 2 + 4) * 2 + 5) * 2 + 6) * 2 + 7));
	assert_true(out[7] == 1 + 4 + 9 + 16 && out[8] == (double)big && out[9] == 250);
	CK(cuModuleUnload(m));
}

/*
 * Every parameter attribute form nvcc emits (and the PTX ISA allows): a parameter is placed
 * at a multiple of its own alignment — .align before the type, else the type's size — never
 * of the .align after .ptr, which is the pointee's (nvcc for sm_90+ writes
 * `.param .u64 .ptr .align 1 p` after a `.u32`: offset 8, not 4). Checked through
 * cuFuncGetParamInfo and by a kernel that stores every parameter it reads.
 */
static void test_param_attributes(void **state)
{
	static const char ptx[] = ".version 9.0\n.target sm_75\n.address_size 64\n"
				  ".visible .entry k(\n"
				  "\t.param .u64 out,\n"
				  "\t.param .u32 a,\n"			       /* 8 */
				  "\t.param .u64 .ptr .align 1 p1,\n"	       /* 16, not 12 */
				  "\t.param .u8 c,\n"			       /* 24 */
				  "\t.param .u64 .ptr .global .align 16 p2,\n" /* 32 */
				  "\t.param .f32 f,\n"			       /* 40 */
				  "\t.param .u64 .ptr .shared .align 4 p3,\n"  /* 48 */
				  "\t.param .u16 h,\n"			       /* 56 */
				  "\t.param .u64 .ptr .const .align 8 p4,\n"   /* 64 */
				  "\t.param .align 1 .b8 s3[3],\n"	       /* 72 */
				  "\t.param .u64 .ptr .local .align 2 p5,\n"   /* 80 */
				  "\t.param .u32 b,\n"			       /* 88 */
				  "\t.param .align 16 .b8 v[16],\n"	       /* 96 */
				  "\t.param .f64 d,\n"			       /* 112 */
				  "\t.param .u8 c2,\n"			       /* 120 */
				  "\t.param .align 8 .b8 s12[12],\n"	       /* 128 */
				  "\t.param .u32 e,\n"			       /* 140 */
				  "\t.param .align 4 .b8 s8[8],\n"	       /* 144 */
				  "\t.param .s64 .ptr .align 64 p6\n"	       /* 152 */
				  ")\n{\n"
				  "\t.reg .b16 %rs<4>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<2>;\n"
				  "\t.reg .b64 %rd<12>;\n\t.reg .f64 %fd<2>;\n"
				  "\tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 %rd1, %rd1;\n"
				  "\tld.param.u32 %r1, [a];\n\tst.global.u32 [%rd1+0], %r1;\n"
				  "\tld.param.u64 %rd2, [p1];\n\tst.global.u64 [%rd1+8], %rd2;\n"
				  "\tld.param.u8 %rs1, [c];\n\tst.global.u8 [%rd1+16], %rs1;\n"
				  "\tld.param.u64 %rd3, [p2];\n\tst.global.u64 [%rd1+24], %rd3;\n"
				  "\tld.param.f32 %f1, [f];\n\tst.global.f32 [%rd1+32], %f1;\n"
				  "\tld.param.u64 %rd4, [p3];\n\tst.global.u64 [%rd1+40], %rd4;\n"
				  "\tld.param.u16 %rs2, [h];\n\tst.global.u16 [%rd1+48], %rs2;\n"
				  "\tld.param.u64 %rd5, [p4];\n\tst.global.u64 [%rd1+56], %rd5;\n"
				  "\tld.param.u8 %rs3, [s3+2];\n\tst.global.u8 [%rd1+64], %rs3;\n"
				  "\tld.param.u64 %rd6, [p5];\n\tst.global.u64 [%rd1+72], %rd6;\n"
				  "\tld.param.u32 %r2, [b];\n\tst.global.u32 [%rd1+80], %r2;\n"
				  "\tld.param.v4.u32 {%r3, %r4, %r5, %r6}, [v];\n"
				  "\tst.global.v4.u32 [%rd1+96], {%r3, %r4, %r5, %r6};\n"
				  "\tld.param.f64 %fd1, [d];\n\tst.global.f64 [%rd1+112], %fd1;\n"
				  "\tld.param.u8 %rs1, [c2];\n\tst.global.u8 [%rd1+120], %rs1;\n"
				  "\tld.param.u32 %r1, [s12+8];\n\tst.global.u32 [%rd1+124], %r1;\n"
				  "\tld.param.u32 %r1, [e];\n\tst.global.u32 [%rd1+128], %r1;\n"
				  "\tld.param.u32 %r1, [s8+4];\n\tst.global.u32 [%rd1+132], %r1;\n"
				  "\tld.param.u64 %rd7, [p6];\n\tst.global.u64 [%rd1+136], %rd7;\n"
				  "\tret;\n}\n";
	static const size_t want_off[] = {0,  8,  16, 24,  32,	40,  48,  56,  64, 72,
					  80, 88, 96, 112, 120, 128, 140, 144, 152};
	static const size_t want_size[] = {8, 4, 8,  1, 8, 4,  8, 2, 8, 3,
					   8, 4, 16, 8, 1, 12, 4, 8, 8};
	uint32_t a = 0x11111111, b = 0x22222222, e = 0x33333333, v[4] = {1, 2, 3, 4};
	uint64_t p1 = 0x0101010101010101ull, p2 = 0x0202020202020202ull, p3 = 0x0303ull,
		 p4 = 0x0404040404040404ull, p5 = 0x0505ull, p6 = 0x0606060606060606ull;
	uint8_t c = 0x7e, c2 = 0x5a, s3[3] = {9, 8, 7};
	uint16_t h = 0xbeef;
	uint32_t s12[3] = {0, 0, 0xcafef00d}, s8[2] = {0, 0xfeedface};
	float f = 3.25f;
	double d = -1.5e300;
	uint8_t got[144];
	CUdeviceptr out;
	CUmodule m;
	CUfunction fn;
	size_t off, size;
	void *args[] = {&out, &a, &p1, &c, &p2, &f,  &p3, &h, &p4, s3,
			&p5,  &b, v,   &d, &c2, s12, &e,  s8, &p6};

	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&fn, m, "k"));
	for (size_t i = 0; i < sizeof(want_off) / sizeof(want_off[0]); i++) {
		CK(cuFuncGetParamInfo(fn, i, &off, &size));
		assert_int_equal(off, want_off[i]);
		assert_int_equal(size, want_size[i]);
	}
	CK_EQ(cuFuncGetParamInfo(fn, 19, &off, &size), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAlloc(&out, sizeof(got)));
	CK(cuMemsetD8(out, 0, sizeof(got)));
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(got, out, sizeof(got)));
#define AT(T, o) (*(T *)(void *)(got + (o)))
	assert_int_equal(AT(uint32_t, 0), a);
	assert_int_equal(AT(uint64_t, 8), p1);
	assert_int_equal(got[16], c);
	assert_int_equal(AT(uint64_t, 24), p2);
	assert_true(AT(float, 32) == f);
	assert_int_equal(AT(uint64_t, 40), p3);
	assert_int_equal(AT(uint16_t, 48), h);
	assert_int_equal(AT(uint64_t, 56), p4);
	assert_int_equal(got[64], s3[2]);
	assert_int_equal(AT(uint64_t, 72), p5);
	assert_int_equal(AT(uint32_t, 80), b);
	assert_memory_equal(got + 96, v, 16);
	assert_true(AT(double, 112) == d);
	assert_int_equal(got[120], c2);
	assert_int_equal(AT(uint32_t, 124), s12[2]);
	assert_int_equal(AT(uint32_t, 128), e);
	assert_int_equal(AT(uint32_t, 132), s8[1]);
	assert_int_equal(AT(uint64_t, 136), p6);
#undef AT
	CK(cuMemFree(out));
	CK(cuModuleUnload(m));
}

/*
 * Address arithmetic has the base register's width: [%r+imm] with a 32-bit %r
 * wraps at 2^32 (cuRAND's MT19937 jump-ahead reads [%r+39808] with %r = -12).
 * Loads, stores and atomics on shared memory, a 64-bit base for contrast.
 */
static void test_addr32_wrap(void **state)
{
	static const char *ptx =
		".version 8.0\n.target sm_75\n.address_size 64\n"
		".visible .entry k(.param .u64 out)\n{\n"
		"\t.reg .b32 %r<12>;\n\t.reg .b64 %rd<6>;\n"
		"\t.shared .align 4 .b32 sh[16];\n"
		"\tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 %rd1, %rd1;\n"
		"\tmov.u32 %r1, sh;\n\tmov.u32 %r2, 77;\n\tst.shared.u32 [%r1+8], %r2;\n"
		"\tadd.s32 %r3, %r1, -16;\n"			      /* wraps below 0 */
		"\tld.shared.u32 %r4, [%r3+24];\n"		      /* sh[2] */
		"\tatom.shared.add.u32 %r5, [%r3+24], 1;\n"	      /* sh[2]: 77, then 78 */
		"\tmov.u32 %r6, 5;\n\tst.shared.u32 [%r3+28], %r6;\n" /* sh[3] */
		"\tld.shared.u32 %r7, [%r1+12];\n\tld.shared.u32 %r8, [%r1+8];\n"
		"\tld.shared.u16 %r9, [%r3+28];\n"
		"\tcvt.u64.u32 %rd2, %r1;\n\tadd.s64 %rd3, %rd2, 16;\n"
		"\tld.shared.u32 %r10, [%rd3+-8];\n" /* a 64-bit base: sh[2] */
		"\tst.global.u32 [%rd1], %r4;\n\tst.global.u32 [%rd1+4], %r5;\n"
		"\tst.global.u32 [%rd1+8], %r7;\n\tst.global.u32 [%rd1+12], %r8;\n"
		"\tst.global.u32 [%rd1+16], %r9;\n\tst.global.u32 [%rd1+20], %r10;\n"
		"\tret;\n}\n";
	uint32_t got[6];
	CUdeviceptr out;
	CUmodule m;
	CUfunction fn;
	void *args[] = {&out};

	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&fn, m, "k"));
	CK(cuMemAlloc(&out, sizeof(got)));
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(got, out, sizeof(got)));
	assert_int_equal(got[0], 77);
	assert_int_equal(got[1], 77);
	assert_int_equal(got[2], 5);
	assert_int_equal(got[3], 78);
	assert_int_equal(got[4], 5);
	assert_int_equal(got[5], 78);
	CK(cuMemFree(out));
	CK(cuModuleUnload(m));
}

static void test_dynshared(void **state)
{
	float in[200], out[200];
	CUmodule m = sgt_module("dynshared.ptx");
	CUfunction f = sgt_function(m, "dyn_reverse");
	int n = 200, shared;

	for (int i = 0; i < 200; i++)
		in[i] = (float)(i * i);
	CK(cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
	assert_int_equal(shared, 4);
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &n};
	launch(f, 1, 1, 256, 1, 256 * sizeof(float), args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < 200; i++)
		assert_true(out[i] == in[199 - i] + 200000.0f);
	/* too much dynamic shared memory for the default limit */
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 60000, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60000));
	CK(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 60000, NULL, args, NULL));
	CK(cuCtxSynchronize());
	CK(cuModuleUnload(m));
}

static unsigned collatz(unsigned x)
{
	unsigned s = 0;

	while (x != 1 && s < 1000) {
		x = (x & 1) ? 3 * x + 1 : x >> 1;
		s++;
	}
	return s;
}

static void test_divergence(void **state)
{
	enum { N = 1000 };
	unsigned in[N], steps[N];
	int out[256];
	CUmodule m = sgt_module("divergence.ptx");
	int n = N;

	for (int i = 0; i < N; i++)
		in[i] = (unsigned)i + 1;
	CUdeviceptr di = dbuf(in, sizeof(in)), ds = dbuf(NULL, sizeof(steps));
	void *args[] = {&di, &ds, &n};
	launch(sgt_function(m, "collatz"), 4, 1, 256, 1, 0, args);
	CK(cuMemcpyDtoH(steps, ds, sizeof(steps)));
	for (int i = 0; i < N; i++)
		assert_int_equal(steps[i], collatz(in[i]));
	CUdeviceptr dout = dbuf(NULL, sizeof(out));
	void *bargs[] = {&dout};
	launch(sgt_function(m, "branchy"), 1, 1, 256, 1, 0, bargs);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	int v[256];
	for (int t = 0; t < 256; t++) {
		switch (t % 5) {
		case 0:
			v[t] = t * 3;
			break;
		case 1:
			v[t] = -t;
			break;
		case 2:
			v[t] = t ^ 0x55;
			break;
		case 3:
			v[t] = t < 100 ? t * t : t / 3;
			break;
		default:
			v[t] = 42;
			break;
		}
	}
	for (int t = 0; t < 256; t++)
		assert_int_equal(out[t], v[(t + 1) % 256] + v[t]);
	CK(cuModuleUnload(m));
}

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void test_devfunc(void **state)
{
	int iout[64];
	float fout[64];
	CUmodule m = sgt_module("devfunc.ptx");
	CUdeviceptr di = dbuf(NULL, sizeof(iout)), df = dbuf(NULL, sizeof(fout));
	void *args[] = {&di, &df};

	launch(sgt_function(m, "devfunc"), 1, 1, 64, 1, 0, args);
	CK(cuMemcpyDtoH(iout, di, sizeof(iout)));
	CK(cuMemcpyDtoH(fout, df, sizeof(fout)));
	for (int t = 0; t < 64; t++) {
		float x = (float)t;

		assert_int_equal(iout[t], t * 2 + fib(t % 12));
		assert_true(fout[t] == fmaf(fmaf(1.5f, x, -2.0f), x, 0.25f) + t * 0.5f);
	}
	CK(cuModuleUnload(m));
}

/* Function pointers: a .global table of them, virtual calls, a pointer chosen in a register. */
static void test_funcptr(void **state)
{
	enum { N = 96 };
	float in[N], b[N], out[N], area[N];
	int which[N], sides[N];
	CUmodule m = sgt_module("funcptr.ptx");
	uint32_t seed = 7;
	int n = N;

	for (int i = 0; i < N; i++) {
		in[i] = sgt_randf(&seed, -4, 4);
		b[i] = sgt_randf(&seed, 0, 3);
		which[i] = (int)(sgt_rand(&seed) % 1000);
	}
	CUdeviceptr din = dbuf(in, sizeof(in)), db = dbuf(b, sizeof(b)),
		    dout = dbuf(NULL, sizeof(out)), dwhich = dbuf(which, sizeof(which)),
		    dsides = dbuf(NULL, sizeof(sides));

	/* table[which % 3](x): twice, square, negate */
	launch(sgt_function(m, "call_table"), 2, 1, 64, 1, 0, (void *[]){&din, &dout, &dwhich, &n});
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++) {
		float x = in[i], want = which[i] % 3 == 0 ? 2 * x : which[i] % 3 == 1 ? x * x : -x;

		assert_true(out[i] == want);
	}
	/* rect (even i) and tri (odd i) made with new, area() and sides() virtual, deleted */
	launch(sgt_function(m, "virtuals"), 2, 1, 64, 1, 0,
	       (void *[]){&din, &db, &dout, &dsides, &n});
	CK(cuMemcpyDtoH(area, dout, sizeof(area)));
	CK(cuMemcpyDtoH(sides, dsides, sizeof(sides)));
	for (int i = 0; i < N; i++) {
		assert_true(area[i] == ((i & 1) ? 0.5f * in[i] * b[i] : in[i] * b[i]));
		assert_int_equal(sides[i], (i & 1) ? 3 : 4);
	}
	/* the pointer picked by a kernel argument, in a register */
	for (int pick = 0; pick < 3; pick++) {
		launch(sgt_function(m, "call_reg"), 2, 1, 64, 1, 0,
		       (void *[]){&din, &dout, &n, &pick});
		CK(cuMemcpyDtoH(out, dout, sizeof(out)));
		for (int i = 0; i < N; i++)
			assert_true(out[i] == (pick == 0   ? 2 * in[i]
					       : pick == 1 ? in[i] * in[i]
							   : -in[i]));
	}
	CK(cuMemFree(din));
	CK(cuMemFree(db));
	CK(cuMemFree(dout));
	CK(cuMemFree(dwhich));
	CK(cuMemFree(dsides));
	CK(cuModuleUnload(m));
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void test_bitonic(void **state)
{
	int data[1024], sorted[1024];
	uint32_t seed = 99;
	CUmodule m = sgt_module("bitonic.ptx");

	for (int i = 0; i < 1024; i++)
		data[i] = (int)(sgt_rand(&seed) % 100000) - 50000;
	memcpy(sorted, data, sizeof(data));
	qsort(sorted, 1024, sizeof(int), cmp_int);
	CUdeviceptr d = dbuf(data, sizeof(data));
	void *args[] = {&d};
	launch(sgt_function(m, "bitonic"), 1, 1, 1024, 1, 0, args);
	CK(cuMemcpyDtoH(data, d, sizeof(data)));
	assert_memory_equal(data, sorted, sizeof(data));
	CK(cuModuleUnload(m));
}

static void test_nbody(void **state)
{
	enum { N = 256 };
	static float pos[4 * N], acc[3 * N];
	uint32_t seed = 5;
	int n = N;
	CUmodule m = sgt_module("nbody.ptx");

	for (int i = 0; i < 4 * N; i++)
		pos[i] = sgt_randf(&seed, -1, 1) + (i % 4 == 3 ? 2.0f : 0.0f);
	CUdeviceptr dp = dbuf(pos, sizeof(pos)), da = dbuf(NULL, sizeof(acc));
	void *args[] = {&dp, &da, &n};
	launch(sgt_function(m, "nbody"), 2, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(acc, da, sizeof(acc)));
	for (int i = 0; i < N; i++) {
		double a[3] = {0, 0, 0};

		for (int j = 0; j < N; j++) {
			double d[3], d2 = 0.01;

			for (int k = 0; k < 3; k++) {
				d[k] = pos[4 * j + k] - pos[4 * i + k];
				d2 += d[k] * d[k];
			}
			for (int k = 0; k < 3; k++)
				a[k] += d[k] * pos[4 * j + 3] / (d2 * sqrt(d2));
		}
		for (int k = 0; k < 3; k++)
			assert_true(fabs(acc[3 * i + k] - a[k]) <= 1e-3 * (fabs(a[k]) + 1.0));
	}
	CK(cuModuleUnload(m));
}

static void test_prng(void **state)
{
	enum { T = 512 };
	unsigned long long out[T], seed = 0x1234567812345678ull;
	int rounds = 17;
	CUmodule m = sgt_module("prng.ptx");
	CUdeviceptr d = dbuf(NULL, sizeof(out));
	void *args[] = {&seed, &d, &rounds};

	launch(sgt_function(m, "prng"), 4, 1, 128, 1, 0, args);
	CK(cuMemcpyDtoH(out, d, sizeof(out)));
	for (int t = 0; t < T; t++) {
		unsigned long long x = seed + (unsigned long long)t * 0x9E3779B97F4A7C15ull, z;
		unsigned lcg = (unsigned)t;

		for (int r = 0; r < rounds; r++) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			lcg = lcg * 1664525u + 1013904223u;
		}
		z = (x * 0x2545F4914F6CDD1Dull) + lcg;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		assert_true(out[t] == (z ^ (z >> 31)));
	}
	CK(cuModuleUnload(m));
}

static void test_device_heap(void **state)
{
	int out[64], n = 50, flag = 0;
	unsigned long long big = 1ull << 30;
	CUmodule m = sgt_module("heap.ptx");
	CUdeviceptr d = dbuf(NULL, sizeof(out)), df = dbuf(NULL, sizeof(int));
	void *args[] = {&d, &n};
	void *bargs[] = {&big, &df};

	launch(sgt_function(m, "heap_ops"), 1, 1, 64, 1, 0, args);
	CK(cuMemcpyDtoH(out, d, sizeof(out)));
	for (int t = 0; t < 64; t++)
		assert_int_equal(out[t], t * (49 * 50 / 2) + t);
	/* the heap is 8 MiB unless cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) says more */
	launch(sgt_function(m, "heap_too_big"), 1, 1, 1, 1, 0, bargs);
	CK(cuMemcpyDtoH(&flag, df, sizeof(flag)));
	assert_int_equal(flag, 1);
	CK(cuModuleUnload(m));
}

/* The same kernels compiled with -G: unoptimised PTX with debug directives. */
static void test_debug_builds(void **state)
{
	int data[1024], sorted[1024], in[512], out[512], want[512], iout[64], n = 512;
	float fout[64];
	uint32_t seed = 7;
	CUmodule m = sgt_module("bitonic_G.ptx"), s = sgt_module("scan_G.ptx");
	CUmodule d = sgt_module("devfunc_G.ptx");

	for (int i = 0; i < 1024; i++)
		data[i] = (int)(sgt_rand(&seed) % 1000);
	memcpy(sorted, data, sizeof(data));
	qsort(sorted, 1024, sizeof(int), cmp_int);
	CUdeviceptr dd = dbuf(data, sizeof(data));
	void *args[] = {&dd};
	launch(sgt_function(m, "bitonic"), 1, 1, 1024, 1, 0, args);
	CK(cuMemcpyDtoH(data, dd, sizeof(data)));
	assert_memory_equal(data, sorted, sizeof(data));
	for (int i = 0; i < 512; i++) {
		in[i] = i % 13;
		want[i] = (i ? want[i - 1] : 0) + in[i];
	}
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *sargs[] = {&di, &dout, &n};
	launch(sgt_function(s, "scan_block"), 1, 1, 512, 1, 2 * 512 * sizeof(int), sargs);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	assert_memory_equal(out, want, sizeof(out));
	CUdeviceptr dio = dbuf(NULL, sizeof(iout)), dfo = dbuf(NULL, sizeof(fout));
	void *dargs[] = {&dio, &dfo};
	launch(sgt_function(d, "devfunc"), 1, 1, 64, 1, 0, dargs);
	CK(cuMemcpyDtoH(iout, dio, sizeof(iout)));
	for (int t = 0; t < 64; t++)
		assert_int_equal(iout[t], t * 2 + fib(t % 12));
	CK(cuModuleUnload(m));
	CK(cuModuleUnload(s));
	CK(cuModuleUnload(d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_funcptr),
		cmocka_unit_test(test_saxpy),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_stencil),
		cmocka_unit_test(test_transpose),
		cmocka_unit_test(test_grid3d),
		cmocka_unit_test(test_vecload),
		cmocka_unit_test(test_localmem),
		cmocka_unit_test(test_constmem),
		cmocka_unit_test(test_structs),
		cmocka_unit_test(test_param_attributes),
		cmocka_unit_test(test_addr32_wrap),
		cmocka_unit_test(test_dynshared),
		cmocka_unit_test(test_divergence),
		cmocka_unit_test(test_devfunc),
		cmocka_unit_test(test_bitonic),
		cmocka_unit_test(test_nbody),
		cmocka_unit_test(test_prng),
		cmocka_unit_test(test_device_heap),
		cmocka_unit_test(test_debug_builds),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
