/* test_sync.c -- barriers, warp collectives, reductions, scans, atomics, histogram, device printf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void run(CUmodule m, const char *name, unsigned grid, unsigned block, unsigned shmem,
		void **args)
{
	CK(cuLaunchKernel(sgt_function(m, name), grid, 1, 1, block, 1, 1, shmem, NULL, args, NULL));
	CK(cuCtxSynchronize());
}

static void test_reduce_tree(void **state)
{
	enum { N = 100000, B = 256 };
	static int in[N], out[N / (2 * B) + 1];
	int n = N, grid = (N + 2 * B - 1) / (2 * B);
	uint32_t seed = 4;
	CUmodule m = sgt_module("reduce.ptx");

	for (int i = 0; i < N; i++)
		in[i] = (int)(sgt_rand(&seed) % 2001) - 1000;
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &n};
	run(m, "reduce_tree", (unsigned)grid, B, B * sizeof(int), args);
	CK(cuMemcpyDtoH(out, dout, (size_t)grid * sizeof(int)));
	for (int b = 0; b < grid; b++) {
		long long s = 0;

		for (int i = b * 2 * B; i < (b + 1) * 2 * B && i < N; i++)
			s += in[i];
		assert_int_equal(out[b], (int)s);
	}
	CK(cuModuleUnload(m));
}

static void test_reduce_shfl(void **state)
{
	enum { N = 50000 };
	static float in[N];
	float out = 0, want = 0;
	int n = N;
	CUmodule m = sgt_module("reduce.ptx");

	for (int i = 0; i < N; i++) {
		in[i] = (float)(i % 17) - 8.0f; /* integers: exact in any order */
		want += in[i];
	}
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(&out, sizeof(out));
	void *args[] = {&di, &dout, &n};
	run(m, "reduce_shfl", 6, 256, 0, args);
	CK(cuMemcpyDtoH(&out, dout, sizeof(out)));
	assert_true(out == want);
	/* a block that is not a multiple of 32 threads: a partial last warp */
	out = 0;
	CK(cuMemcpyHtoD(dout, &out, sizeof(out)));
	run(m, "reduce_shfl", 3, 96 + 32, 0, args);
	CK(cuMemcpyDtoH(&out, dout, sizeof(out)));
	assert_true(out == want);
	CK(cuModuleUnload(m));
}

static void test_scan(void **state)
{
	int in[512], out[512], want[512];
	int n = 500;
	uint32_t seed = 8;
	CUmodule m = sgt_module("scan.ptx");

	for (int i = 0; i < 512; i++) {
		in[i] = (int)(sgt_rand(&seed) % 100);
		want[i] = (i ? want[i - 1] : 0) + in[i];
	}
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout, &n};
	run(m, "scan_block", 1, 512, 2 * 512 * sizeof(int), args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	assert_memory_equal(out, want, 500 * sizeof(int));
	void *wargs[] = {&di, &dout};
	run(m, "scan_warp", 4, 128, 0, wargs);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int w = 0; w < 16; w++)
		for (int l = 0; l < 32; l++) {
			int s = 0;

			for (int k = 0; k <= l; k++)
				s += in[w * 32 + k];
			assert_int_equal(out[w * 32 + l], s);
		}
	CK(cuModuleUnload(m));
}

static void test_warp_ops(void **state)
{
	enum { T = 128 };
	int in[T], out[12 * T];
	uint32_t seed = 2;
	CUmodule m = sgt_module("warp.ptx");

	for (int t = 0; t < T; t++)
		in[t] = (int)(sgt_rand(&seed) % 100) + (t < 32 ? 1 : -5);
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout};
	run(m, "warp_ops", 1, T, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int t = 0; t < T; t++) {
		int w = t & ~31, lane = t & 31, *o = out + 12 * t;
		int all = 1, any = 0;
		unsigned ballot = 0, match = 0;

		for (int l = 0; l < 32; l++) {
			int v = in[w + l];

			all &= v > 0;
			any |= v > 90;
			ballot |= (unsigned)(v & 1) << l;
			if (v % 4 == in[t] % 4)
				match |= 1u << l;
		}
		assert_int_equal(o[0], all);
		assert_int_equal(o[1], any);
		assert_int_equal((unsigned)o[2], ballot);
		assert_int_equal(o[3], in[w + ((lane * 7) & 31)]);
		assert_int_equal(o[4], in[lane >= 3 ? t - 3 : t]);
		assert_int_equal(o[5], in[lane + 5 <= 31 ? t + 5 : t]);
		assert_int_equal(o[6], in[w + (lane ^ 6)]);
		assert_int_equal(o[7], in[w + ((lane & ~7) | ((lane + 1) & 7))]);
		assert_int_equal((unsigned)o[8], match);
		assert_int_equal(o[9], 0); /* 0xffffffff + 1 */
		assert_int_equal(o[10], 1);
		assert_int_equal((unsigned)o[11], (1u << lane) - 1);
	}
	CK(cuModuleUnload(m));
}

static void test_warp_partial(void **state)
{
	int out[64];
	CUmodule m = sgt_module("warp.ptx");
	CUdeviceptr dout = dbuf(NULL, sizeof(out));
	void *args[] = {&dout};

	run(m, "warp_partial", 1, 64, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int t = 0; t < 64; t++) {
		int lane = t & 31;

		if (lane & 1)
			assert_int_equal(out[t], -1);
		else
			assert_int_equal(out[t], (lane + 2 <= 31 ? lane + 2 : lane) * 1000 + 16);
	}
	CK(cuModuleUnload(m));
}

static void test_warp_outside(void **state)
{
	int out[40 * 4];
	CUmodule m = sgt_module("warp.ptx");
	CUdeviceptr dout = dbuf(NULL, sizeof(out));
	void *args[] = {&dout};

	/* 40 threads: the second warp has 8 lanes, so lanes 8-31 were never launched */
	run(m, "warp_outside", 1, 40, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int t = 0; t < 40; t++) {
		int lane = t & 31, v = lane + 1;
		const int *o = out + 4 * t;

		if (lane >= 8) {
			assert_int_equal(o[0], -1);
			continue;
		}
		assert_int_equal(o[0], 0);
		assert_int_equal(o[1], lane < 4 ? v + 4 : 0);
		assert_int_equal(o[2], lane < 2 ? 0 : v);
		/* the sum over the 8 lanes reaches lane 0; the others hold partial sums */
		if (lane == 0)
			assert_int_equal(o[3], 36);
	}
	CK(cuModuleUnload(m));
}

static void test_syncops(void **state)
{
	int in[256], out[256], c = 0, a = 1, o = 0;
	uint32_t seed = 9;
	CUmodule m = sgt_module("syncops.ptx");

	for (int t = 0; t < 256; t++) {
		in[t] = (int)(sgt_rand(&seed) % 99);
		c += in[t] > 50;
		a &= in[t] >= 0;
		o |= in[t] == 99;
	}
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout};
	run(m, "syncops", 1, 256, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int t = 0; t < 256; t++)
		assert_int_equal(out[t], c * 100 + a * 10 + o);
	in[17] = 99;
	in[3] = -1;
	CK(cuMemcpyHtoD(di, in, sizeof(in)));
	run(m, "syncops", 1, 256, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	assert_int_equal(out[0] % 100, 1);
	void *pargs[] = {&dout};
	run(m, "producer_consumer", 1, 64, 0, pargs);
	CK(cuMemcpyDtoH(out, dout, 32 * sizeof(int)));
	for (int t = 32; t < 64; t++)
		assert_int_equal(out[t - 32], (63 - t) * (63 - t) + 1);
	CK(cuModuleUnload(m));
}

static void test_atomics(void **state)
{
	enum { B = 4, T = 256, N = B * T };
	int iv[5] = {0, 1000, 5000, -7, 0}, flags[3 * 1024];
	unsigned uv[5] = {0xffffffffu, 0, 0x5a5a5a5au, 3, 2}, xr = 0x5a5a5a5au;
	float fv = 1.0f;
	double dv = -2.0;
	unsigned long long lv[2] = {0, 0};
	long long sum = 0;
	CUmodule m = sgt_module("atomics.ptx");
	CUdeviceptr di = dbuf(iv, sizeof(iv)), du = dbuf(uv, sizeof(uv)), df = dbuf(&fv, 4);
	CUdeviceptr dd = dbuf(&dv, 8), dl = dbuf(lv, sizeof(lv)), dfl = dbuf(NULL, sizeof(flags));
	void *args[] = {&di, &du, &df, &dd, &dl, &dfl};

	run(m, "atomics", B, T, 0, args);
	CK(cuMemcpyDtoH(iv, di, sizeof(iv)));
	CK(cuMemcpyDtoH(uv, du, sizeof(uv)));
	CK(cuMemcpyDtoH(&fv, df, 4));
	CK(cuMemcpyDtoH(&dv, dd, 8));
	CK(cuMemcpyDtoH(lv, dl, sizeof(lv)));
	CK(cuMemcpyDtoH(flags, dfl, sizeof(flags)));
	for (int t = 0; t < N; t++) {
		sum += t;
		xr ^= (unsigned)t;
	}
	assert_int_equal(iv[0], (int)sum);
	assert_int_equal(iv[1], 1000 - 2 * N);
	assert_int_equal(iv[2], 1000 - (N - 1));
	assert_int_equal(iv[3], 3 * (N - 1));
	assert_int_equal(iv[4], N);
	assert_int_equal(uv[0], 0);
	assert_int_equal(uv[1], 0xffffffffu);
	assert_int_equal(uv[2], xr);
	assert_int_equal(uv[3], (3 + N) % 17);
	assert_int_equal(uv[4], (unsigned)((2 - N) % 8 + 8) % 8);
	assert_true(fv == 1.0f + 0.5f * N);
	assert_true(dv == -2.0 + 0.25 * N);
	assert_true(lv[0] == (unsigned long long)sum);
	assert_true(lv[1] == (unsigned long long)(N - 1) << 33);
	for (int t = 0; t < N; t++) {
		assert_int_equal(flags[t], 1);
		assert_int_equal(flags[1024 + t], 0);
	}
	/* every thread claimed exactly one slot */
	{
		char seen[N + 1] = {0};

		for (int s = 0; s < N; s++) {
			int v = flags[2048 + s];

			assert_true(v >= 1 && v <= N && !seen[v]);
			seen[v] = 1;
		}
	}
	CK(cuModuleUnload(m));
}

static void test_histogram(void **state)
{
	enum { N = 200000 };
	static unsigned char data[N];
	unsigned bins[256], want[256] = {0};
	uint32_t seed = 12;
	int n = N;
	CUmodule m = sgt_module("histogram.ptx");

	for (int i = 0; i < N; i++) {
		data[i] = (unsigned char)(sgt_rand(&seed) % 7 * 37 + (i & 3));
		want[data[i]]++;
	}
	CUdeviceptr dd = dbuf(data, sizeof(data)), db = dbuf(NULL, sizeof(bins));
	void *args[] = {&dd, &n, &db};
	run(m, "histogram", 16, 256, 0, args);
	CK(cuMemcpyDtoH(bins, db, sizeof(bins)));
	assert_memory_equal(bins, want, sizeof(bins));
	CK(cuModuleUnload(m));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Device printf goes to the process's stdout when the launch completes. */
static void test_printf(void **state)
{
	char path[] = "/tmp/sgtest_printf_XXXXXX", buf[4096], *lines[16], *want[6];
	int fd = mkstemp(path), saved, base = 100, nl = 0;
	CUmodule m = sgt_module("printf.ptx");
	void *args[] = {&base};
	ssize_t got;

	assert_true(fd >= 0);
	fflush(stdout);
	saved = dup(1);
	dup2(fd, 1);
	CK(cuLaunchKernel(sgt_function(m, "hello"), 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	got = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	assert_true(got > 0);
	buf[got] = 0;
	for (char *p = strtok(buf, "\n"); p && nl < 16; p = strtok(NULL, "\n"))
		lines[nl++] = p;
	assert_int_equal(nl, 6);
	for (int b = 0; b < 2; b++)
		for (int t = 0; t < 3; t++) {
			want[b * 3 + t] = malloc(128);
			snprintf(want[b * 3 + t], 128, "thread %d of block %d: %d %5.2f ok %lld ff",
				 t, b, base + t, 0.5 * t, 1ll << 40);
		}
	qsort(lines, 6, sizeof(char *), cmp_str);
	qsort(want, 6, sizeof(char *), cmp_str);
	for (int i = 0; i < 6; i++) {
		assert_string_equal(lines[i], want[i]);
		free(want[i]);
	}
	CK(cuModuleUnload(m));
}

static int cmp_i(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* CUB's BlockReduce/BlockScan/BlockRadixSort and a cooperative-groups tile reduction. */
static void test_cub_and_cg(void **state)
{
	static int in[4 * 256], out[4], keys[512], sorted[512], scan[128];
	float fin[256], fout = 0, fwant = 0;
	uint32_t seed = 31;
	CUmodule m = sgt_module("cub.ptx");

	for (int i = 0; i < 4 * 256; i++)
		in[i] = (int)(sgt_rand(&seed) % 2000) - 1000;
	for (int i = 0; i < 512; i++)
		keys[i] = (int)sgt_rand(&seed);
	for (int i = 0; i < 256; i++) {
		fin[i] = (float)(i % 9);
		fwant += fin[i];
	}
	memcpy(sorted, keys, sizeof(keys));
	qsort(sorted, 512, sizeof(int), cmp_i);
	CUdeviceptr di = dbuf(in, sizeof(in)), dout = dbuf(NULL, sizeof(out));
	void *args[] = {&di, &dout};
	run(m, "cub_reduce", 4, 256, 0, args);
	CK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int b = 0; b < 4; b++) {
		int s = 0;

		for (int i = 0; i < 256; i++)
			s += in[b * 256 + i];
		assert_int_equal(out[b], s);
	}
	CUdeviceptr ds = dbuf(NULL, sizeof(scan));
	void *sargs[] = {&di, &ds};
	run(m, "cub_scan", 1, 128, 0, sargs);
	CK(cuMemcpyDtoH(scan, ds, sizeof(scan)));
	for (int i = 0, s = 0; i < 128; i++) {
		s += in[i];
		assert_int_equal(scan[i], s);
	}
	CUdeviceptr dk = dbuf(keys, sizeof(keys));
	void *kargs[] = {&dk};
	run(m, "cub_sort", 1, 128, 0, kargs);
	CK(cuMemcpyDtoH(keys, dk, sizeof(keys)));
	assert_memory_equal(keys, sorted, sizeof(keys));
	CUdeviceptr dfi = dbuf(fin, sizeof(fin)), dfo = dbuf(&fout, sizeof(fout));
	void *fargs[] = {&dfi, &dfo};
	run(m, "cg_reduce", 1, 256, 0, fargs);
	CK(cuMemcpyDtoH(&fout, dfo, sizeof(fout)));
	assert_true(fout == fwant);
	CK(cuModuleUnload(m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_tree),  cmocka_unit_test(test_reduce_shfl),
		cmocka_unit_test(test_scan),	     cmocka_unit_test(test_warp_ops),
		cmocka_unit_test(test_warp_partial), cmocka_unit_test(test_warp_outside),
		cmocka_unit_test(test_syncops),	     cmocka_unit_test(test_atomics),
		cmocka_unit_test(test_histogram),    cmocka_unit_test(test_printf),
		cmocka_unit_test(test_cub_and_cg),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
