/* bench_softgpu.c -- softgpu's speed on reference kernels; run with SOFTGPU_STATS=1 for counts. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#ifndef KERNEL_DIR
#error KERNEL_DIR must name the directory of the nvcc-built kernels
#endif

#define CHECK(x)                                                                               \
	do {                                                                                   \
		CUresult r_ = (x);                                                             \
		if (r_ != CUDA_SUCCESS) {                                                      \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 256;
	size_t bytes = (size_t)n * n * sizeof(float);
	float *a = malloc(bytes), *c = malloc(bytes);
	int bad = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule m;
	CUfunction f;
	CUdeviceptr da, db, dc;
	double t0, t1;

	for (int i = 0; i < n * n; i++)
		a[i] = (float)(i % 7) * 0.25f;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	m = load("matmul.ptx");
	CHECK(cuModuleGetFunction(&f, m, "matmul"));
	CHECK(cuMemAlloc(&da, bytes));
	CHECK(cuMemAlloc(&db, bytes));
	CHECK(cuMemAlloc(&dc, bytes));
	CHECK(cuMemcpyHtoD(da, a, bytes));
	CHECK(cuMemcpyHtoD(db, a, bytes));
	void *args[] = {&da, &db, &dc, &n};
	t0 = now();
	CHECK(cuLaunchKernel(f, (unsigned)(n + 15) / 16, (unsigned)(n + 15) / 16, 1, 16, 16, 1, 0,
			     NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	t1 = now();
	printf("matmul %dx%d: %.3f s (%.1f MFLOP/s)\n", n, n, t1 - t0,
	       2.0 * n * n * (double)n / (t1 - t0) / 1e6);
	/* every product and partial sum is a small multiple of 1/16: exact in any order */
	CHECK(cuMemcpyDtoH(c, dc, bytes));
	for (int i = 0; i < n && bad < 5; i++)
		for (int j = 0; j < n && bad < 5; j++) {
			float want = 0.0f;

			for (int k = 0; k < n; k++)
				want += a[i * n + k] * a[k * n + j];
			if (c[i * n + j] != want) {
				fprintf(stderr, "C[%d][%d] = %g, want %g\n", i, j, c[i * n + j],
					want);
				bad++;
			}
		}
	CHECK(cuCtxDestroy(ctx));
	free(a);
	free(c);
	return bad ? 1 : 0;
}
