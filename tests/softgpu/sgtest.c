/* sgtest.c -- helpers for softgpu's tests. */
#include "sgtest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KERNEL_DIR
#error KERNEL_DIR must name the directory of the nvcc-built kernels
#endif

static CUcontext ctx;

void sgt_check(CUresult r, const char *expr, const char *file, int line)
{
	sgt_check_eq(r, CUDA_SUCCESS, expr, file, line);
}

void sgt_check_eq(CUresult r, CUresult want, const char *expr, const char *file, int line)
{
	const char *got = NULL, *exp = NULL;

	if (r == want)
		return;
	cuGetErrorName(r, &got);
	cuGetErrorName(want, &exp);
	print_error("%s:%d: %s returned %s (%d), expected %s (%d)\n", file, line, expr,
		    got ? got : "?", r, exp ? exp : "?", want);
	fail();
}

int sgt_setup(void **state)
{
	CUdevice dev;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
		return -1;
	*state = ctx;
	return 0;
}

int sgt_teardown(void **state)
{
	return cuCtxDestroy(ctx) == CUDA_SUCCESS ? 0 : -1;
}

void *sgt_read(const char *name, size_t *size)
{
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", KERNEL_DIR, name);
	f = fopen(path, "rb");
	if (f == NULL) {
		print_error("cannot open %s\n", path);
		fail();
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	if (size)
		*size = (size_t)n;
	return buf;
}

CUmodule sgt_module(const char *name)
{
	CUmodule m = NULL;
	char log[1024] = "";
	CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[] = {log, (void *)(uintptr_t)sizeof(log)};
	void *image = sgt_read(name, NULL);
	CUresult r = cuModuleLoadDataEx(&m, image, 2, opts, vals);

	free(image);
	if (r != CUDA_SUCCESS)
		print_error("loading %s: %s\n", name, log);
	CK(r);
	return m;
}

CUfunction sgt_function(CUmodule m, const char *name)
{
	CUfunction f = NULL;

	CK(cuModuleGetFunction(&f, m, name));
	return f;
}

uint32_t sgt_rand(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

float sgt_randf(uint32_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)(sgt_rand(s) >> 8) / (float)(1u << 24);
}

uint32_t sgt_ulp(float a, float b)
{
	int32_t ia, ib;

	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b) ? 0 : UINT32_MAX;
	memcpy(&ia, &a, 4);
	memcpy(&ib, &b, 4);
	if (ia < 0)
		ia = INT32_MIN - ia;
	if (ib < 0)
		ib = INT32_MIN - ib;
	return ia > ib ? (uint32_t)(ia - ib) : (uint32_t)(ib - ia);
}
