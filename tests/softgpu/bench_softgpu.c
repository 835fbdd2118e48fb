/* bench_softgpu.c -- softgpu's speed on reference kernels; run with SOFTGPU_STATS=1 for counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#ifndef KERNEL_DIR
#error KERNEL_DIR must name the directory of the nvcc-built kernels
#endif

/*
 * bench_softgpu [SIZE [REPEATS]]: each case is one kind of kernel (ALU-bound,
 * memory-bound, shared memory and barriers, divergent, atomics, warp
 * shuffles), sized from SIZE (default 256; ctest runs 16, once, to keep it working),
 * launched REPEATS times (default 3). It prints the median wall time of a
 * launch; SOFTGPU_STATS=1 adds softgpu's instruction count and rate per
 * launch on stderr. Every result is checked against a CPU reference, so a
 * faster engine that computes something else fails here. It reports, it
 * does not judge: no time is a failure.
 */

#define CHECK(x)                                                                               \
	do {                                                                                   \
		CUresult r_ = (x);                                                             \
		if (r_ != CUDA_SUCCESS) {                                                      \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static CUmodule load(const char *name)
{
	char path[4096];
	FILE *f;
	long n;
	char *buf;
	CUmodule m;

	snprintf(path, sizeof(path), "%s/%s", KERNEL_DIR, name);
	f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	fclose(f);
	CHECK(cuModuleLoadData(&m, buf));
	free(buf);
	return m;
}

static CUfunction func(const char *ptx, const char *name)
{
	CUfunction f;

	CHECK(cuModuleGetFunction(&f, load(ptx), name));
	return f;
}

static CUdeviceptr dev_copy(const void *h, size_t bytes)
{
	CUdeviceptr d;

	CHECK(cuMemAlloc(&d, bytes));
	if (h)
		CHECK(cuMemcpyHtoD(d, h, bytes));
	else
		CHECK(cuMemsetD8(d, 0, bytes));
	return d;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int repeats = 3;
static double cpu_median; /* of the last timed(): the process's CPU seconds per launch */

/*
 * Median wall time of `repeats` launches; before runs before each (resets
 * outputs). The process's CPU time per launch (all host threads) is kept in
 * cpu_median: on a loaded machine it says more than the wall time.
 */
static double timed(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by,
		    unsigned shared, void **args, void (*before)(void *), void *arg)
{
	double t[64], c[64];
	int n = repeats < 64 ? repeats : 64;

	for (int i = 0; i < n; i++) {
		double t0, c0;

		if (before)
			before(arg);
		t0 = clock_s(CLOCK_MONOTONIC);
		c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		CHECK(cuLaunchKernel(f, gx, gy, 1, bx, by, 1, shared, NULL, args, NULL));
		CHECK(cuCtxSynchronize());
		c[i] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		t[i] = clock_s(CLOCK_MONOTONIC) - t0;
	}
	qsort(t, (size_t)n, sizeof(t[0]), cmp_double);
	qsort(c, (size_t)n, sizeof(c[0]), cmp_double);
	cpu_median = c[n / 2];
	return t[n / 2];
}

static int report(const char *name, const char *what, double s, int bad)
{
	printf("%-10s %-40s %8.4f s wall %8.4f s cpu%s\n", name, what, s, cpu_median,
	       bad ? "  WRONG" : "");
	return bad != 0;
}

/* ALU-bound: 64-bit xorshift and a 32-bit LCG in registers, one store per thread. */
static int bench_alu(int size)
{
	int threads = size * 64, rounds = 256;
	size_t bytes = (size_t)threads * 8;
	uint64_t *out = malloc(bytes), seed = 12345;
	CUfunction f = func("prng.ptx", "prng");
	CUdeviceptr d = dev_copy(NULL, bytes);
	void *args[] = {&seed, &d, &rounds};
	char what[64];
	double s = timed(f, (unsigned)threads / 256, 1, 256, 1, 0, args, NULL, NULL);
	int bad = 0;

	CHECK(cuMemcpyDtoH(out, d, bytes));
	for (int t = 0; t < threads; t++) {
		uint64_t x = seed + (uint64_t)t * 0x9E3779B97F4A7C15ull, z;
		uint32_t lcg = (uint32_t)t;

		for (int r = 0; r < rounds; r++) {
			x ^= x >> 12;
			x ^= x << 25;
			x ^= x >> 27;
			lcg = lcg * 1664525u + 1013904223u;
		}
		z = (x * 0x2545F4914F6CDD1Dull) + lcg;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		bad += out[t] != (z ^ (z >> 31));
	}
	snprintf(what, sizeof(what), "prng: %d threads x %d rounds", threads, rounds);
	cuMemFree(d);
	free(out);
	return report("alu", what, s, bad);
}

/* Memory-bound: saxpy over a grid-stride loop. */
struct saxpy_reset {
	CUdeviceptr dy;
	const float *y;
	size_t bytes;
};

static void saxpy_before(void *p)
{
	struct saxpy_reset *r = p;

	CHECK(cuMemcpyHtoD(r->dy, r->y, r->bytes));
}

static int bench_mem(int size)
{
	int n = size * size * 16;
	size_t bytes = (size_t)n * 4;
	float *x = malloc(bytes), *y = malloc(bytes), *o = malloc(bytes), a = 2.0f;
	CUfunction f = func("saxpy.ptx", "saxpy");
	CUdeviceptr dx, dy;
	struct saxpy_reset r;
	char what[64];
	double s;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 1000) * 0.5f;
		y[i] = (float)(i % 17);
	}
	dx = dev_copy(x, bytes);
	dy = dev_copy(y, bytes);
	r = (struct saxpy_reset){dy, y, bytes};
	void *args[] = {&n, &a, &dx, &dy};
	s = timed(f, 256, 1, 256, 1, 0, args, saxpy_before, &r);
	CHECK(cuMemcpyDtoH(o, dy, bytes));
	for (int i = 0; i < n; i++)
		bad += o[i] != a * x[i] + y[i];
	snprintf(what, sizeof(what), "saxpy: %d floats", n);
	cuMemFree(dx);
	cuMemFree(dy);
	free(x);
	free(y);
	free(o);
	return report("memory", what, s, bad);
}

/* Shared memory and barriers: 16x16-tiled matrix product. */
static int bench_shared(int n)
{
	size_t bytes = (size_t)n * n * sizeof(float);
	float *a = malloc(bytes), *c = malloc(bytes);
	CUfunction f = func("matmul.ptx", "matmul");
	CUdeviceptr da, dc;
	char what[64];
	double s;
	int bad = 0;

	for (int i = 0; i < n * n; i++)
		a[i] = (float)(i % 7) * 0.25f;
	da = dev_copy(a, bytes);
	dc = dev_copy(NULL, bytes);
	void *args[] = {&da, &da, &dc, &n};
	s = timed(f, (unsigned)(n + 15) / 16, (unsigned)(n + 15) / 16, 16, 16, 0, args, NULL, NULL);
	/* every product and partial sum is a small multiple of 1/16: exact in any order */
	CHECK(cuMemcpyDtoH(c, dc, bytes));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float want = 0.0f;

			for (int k = 0; k < n; k++)
				want += a[i * n + k] * a[k * n + j];
			bad += c[i * n + j] != want;
		}
	snprintf(what, sizeof(what), "matmul: %dx%d, 16x16 tiles", n, n);
	cuMemFree(da);
	cuMemFree(dc);
	free(a);
	free(c);
	return report("shared", what, s, bad);
}

/* Divergent: Collatz step counts, a different loop length in every lane. */
static int bench_divergent(int size)
{
	int n = size * 256;
	size_t bytes = (size_t)n * 4;
	uint32_t *in = malloc(bytes), *out = malloc(bytes);
	CUfunction f = func("divergence.ptx", "collatz");
	CUdeviceptr din, dout;
	char what[64];
	double s;
	int bad = 0;

	for (int i = 0; i < n; i++)
		in[i] = (uint32_t)i + 1;
	din = dev_copy(in, bytes);
	dout = dev_copy(NULL, bytes);
	void *args[] = {&din, &dout, &n};
	s = timed(f, (unsigned)(n + 255) / 256, 1, 256, 1, 0, args, NULL, NULL);
	CHECK(cuMemcpyDtoH(out, dout, bytes));
	for (int i = 0; i < n; i++) {
		uint32_t x = in[i], st = 0;

		while (x != 1 && st < 1000) {
			x = x & 1 ? 3 * x + 1 : x >> 1;
			st++;
		}
		bad += out[i] != st;
	}
	snprintf(what, sizeof(what), "collatz: %d threads", n);
	cuMemFree(din);
	cuMemFree(dout);
	free(in);
	free(out);
	return report("divergent", what, s, bad);
}

/* Atomics: a byte histogram, shared-memory atomics then global ones. */
static void zero_bins(void *p)
{
	CHECK(cuMemsetD8(*(CUdeviceptr *)p, 0, 256 * 4));
}

static int bench_atomic(int size)
{
	int n = size * size * 16;
	uint8_t *data = malloc((size_t)n);
	uint32_t bins[256], want[256] = {0};
	CUfunction f = func("histogram.ptx", "histogram");
	CUdeviceptr dd, db;
	char what[64];
	double s;
	int bad = 0;
	uint32_t x = 1;

	for (int i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (uint8_t)(x >> 16);
		want[data[i]]++;
	}
	dd = dev_copy(data, (size_t)n);
	db = dev_copy(NULL, sizeof(bins));
	void *args[] = {&dd, &n, &db};
	s = timed(f, 128, 1, 256, 1, 0, args, zero_bins, &db);
	CHECK(cuMemcpyDtoH(bins, db, sizeof(bins)));
	for (int i = 0; i < 256; i++)
		bad += bins[i] != want[i];
	snprintf(what, sizeof(what), "histogram: %d bytes", n);
	cuMemFree(dd);
	cuMemFree(db);
	free(data);
	return report("atomic", what, s, bad);
}

static void zero_word(void *p)
{
	CHECK(cuMemsetD32(*(CUdeviceptr *)p, 0, 1));
}

/* Warp shuffles: a sum reduction by __shfl_down_sync, then one atomicAdd per block. */
static int bench_warp(int size)
{
	int n = size * size * 16;
	size_t bytes = (size_t)n * 4;
	float *in = malloc(bytes), sum = 0.0f, got;
	CUfunction f = func("reduce.ptx", "reduce_shfl");
	CUdeviceptr din, dout;
	char what[64];
	double s;

	for (int i = 0; i < n; i++)
		in[i] = (float)(i % 8); /* small integers: the sum is exact in any order */
	for (int i = 0; i < n; i++)
		sum += in[i];
	din = dev_copy(in, bytes);
	dout = dev_copy(NULL, 4);
	void *args[] = {&din, &dout, &n};
	s = timed(f, 128, 1, 256, 1, 0, args, zero_word, &dout);
	CHECK(cuMemcpyDtoH(&got, dout, 4));
	snprintf(what, sizeof(what), "reduce_shfl: %d floats", n);
	cuMemFree(din);
	cuMemFree(dout);
	free(in);
	return report("warp", what, s, got != sum);
}

int main(int argc, char **argv)
{
	int size = argc > 1 ? atoi(argv[1]) : 256, bad = 0;
	const char *only = argc > 3 ? argv[3] : NULL;
	CUdevice dev;
	CUcontext ctx;
	static const struct {
		const char *name;
		int (*fn)(int size);
	} cases[] = {
		{"alu", bench_alu},	  {"memory", bench_mem},
		{"shared", bench_shared}, {"divergent", bench_divergent},
		{"atomic", bench_atomic}, {"warp", bench_warp},
	};

	if (argc > 2)
		repeats = atoi(argv[2]);
	if (size < 16 || repeats < 1) {
		fprintf(stderr, "usage: bench_softgpu [SIZE>=16 [REPEATS [CASE]]]\n");
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (only == NULL || strcmp(only, cases[i].name) == 0)
			bad += cases[i].fn(size);
	CHECK(cuCtxDestroy(ctx));
	return bad ? 1 : 0;
}
