/* vector_add.c -- a plain CUDA driver-API program: adds two vectors on the GPU and
 * checks the result against the CPU. It knows nothing of gpupool; run it with
 * LD_PRELOAD=<gpupool>/lib/gpupool/libcuda.so.1 to compute on a pooled GPU.
 *
 * usage: vector_add [N] [--wait]
 * --wait keeps the context and memory after the check until a line (or EOF)
 * arrives on stdin, so the session can be looked at while it is alive. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "vector_add_kernel.ptx.h" /* vector_add_ptx: PTX text nvcc made at build time */

#define CHECK(call)                                                                \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS) {                                          \
			const char *name_ = NULL;                                  \
			cuGetErrorName(r_, &name_);                                \
			fprintf(stderr, "vector_add: %s failed: %s (%d)\n", #call, \
				name_ ? name_ : "unknown error", (int)r_);         \
			return 1;                                                  \
		}                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	int n = 1000000;
	int wait = 0;
	size_t bytes;
	float *a, *b, *c;
	CUdeviceptr da, db, dc;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	char name[256];
	int threads = 256, blocks, bad = 0;
	void *params[] = {&da, &db, &dc, &n};
	double max_err = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0)
			wait = 1;
		else
			n = atoi(argv[i]);
	}
	bytes = (size_t)n * sizeof(float);
	a = malloc(bytes);
	b = malloc(bytes);
	c = malloc(bytes);
	blocks = (n + threads - 1) / threads;
	if (!a || !b || !c || n <= 0) {
		fprintf(stderr, "vector_add: bad size or out of memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		a[i] = (float)i * 0.5f;
		b[i] = (float)(n - i) * 0.25f;
	}

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceGetName(name, sizeof(name), dev));
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
	CHECK(cuModuleLoadData(&mod, vector_add_ptx));
	CHECK(cuModuleGetFunction(&fn, mod, "vector_add"));
	CHECK(cuMemAlloc(&da, bytes));
	CHECK(cuMemAlloc(&db, bytes));
	CHECK(cuMemAlloc(&dc, bytes));
	CHECK(cuMemcpyHtoD(da, a, bytes));
	CHECK(cuMemcpyHtoD(db, b, bytes));
	CHECK(cuLaunchKernel(fn, (unsigned)blocks, 1, 1, (unsigned)threads, 1, 1, 0, NULL, params,
			     NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(c, dc, bytes));

	for (int i = 0; i < n; i++) {
		double want = (double)(a[i] + b[i]);
		double err = fabs((double)c[i] - want);

		if (err > max_err)
			max_err = err;
		if (c[i] != a[i] + b[i])
			bad++;
	}
	printf("vector_add: %d elements on %s: %s (%d mismatches, max error %g)\n", n, name,
	       bad ? "FAILED" : "PASSED, checked against the CPU", bad, max_err);
	if (wait) {
		char line[16];

		printf("vector_add: holding %zu bytes of device memory; press Enter to finish\n",
		       3 * bytes);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = '\0';
	}
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	CHECK(cuModuleUnload(mod));
	CHECK(cuCtxDestroy(ctx));
	free(a);
	free(b);
	free(c);
	return bad ? 1 : 0;
}
