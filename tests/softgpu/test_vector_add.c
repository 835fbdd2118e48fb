/* test_vector_add.c -- the walking skeleton: vector add from nvcc PTX, checked on the CPU. */
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

static void test_vector_add(void **state)
{
	const int n = 10000;
	size_t bytes = n * sizeof(float);
	float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
	CUdeviceptr da, db, dc;
	CUmodule m = sgt_module("vector_add.ptx");
	CUfunction f = sgt_function(m, "vector_add");
	uint32_t seed = 1;
	int nn = n;
	void *args[] = {&da, &db, &dc, &nn};

	for (int i = 0; i < n; i++) {
		a[i] = sgt_randf(&seed, -100, 100);
		b[i] = sgt_randf(&seed, -100, 100);
	}
	CK(cuMemAlloc(&da, bytes));
	CK(cuMemAlloc(&db, bytes));
	CK(cuMemAlloc(&dc, bytes));
	CK(cuMemcpyHtoD(da, a, bytes));
	CK(cuMemcpyHtoD(db, b, bytes));
	CK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(c, dc, bytes));
	for (int i = 0; i < n; i++)
		assert_true(c[i] == a[i] + b[i]);
	CK(cuMemFree(da));
	CK(cuMemFree(db));
	CK(cuMemFree(dc));
	CK(cuModuleUnload(m));
	free(a);
	free(b);
	free(c);
}

/* The `extra` form of cuLaunchKernel: one packed parameter buffer. */
static void test_vector_add_extra(void **state)
{
	const int n = 1000;
	size_t bytes = n * sizeof(float);
	float a[1000], b[1000], c[1000];
	CUdeviceptr da, db, dc;
	CUmodule m = sgt_module("vector_add.ptx");
	CUfunction f = sgt_function(m, "vector_add");
	struct {
		CUdeviceptr a, b, c;
		int n;
		int pad;
	} buf;
	size_t size = 28;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			 CU_LAUNCH_PARAM_END};

	for (int i = 0; i < n; i++) {
		a[i] = (float)i;
		b[i] = 0.5f * (float)i;
	}
	CK(cuMemAlloc(&da, bytes));
	CK(cuMemAlloc(&db, bytes));
	CK(cuMemAlloc(&dc, bytes));
	CK(cuMemcpyHtoD(da, a, bytes));
	CK(cuMemcpyHtoD(db, b, bytes));
	buf.a = da;
	buf.b = db;
	buf.c = dc;
	buf.n = n;
	CK(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
	CK(cuMemcpyDtoH(c, dc, bytes));
	for (int i = 0; i < n; i++)
		assert_true(c[i] == a[i] + b[i]);
	CK(cuModuleUnload(m));
}

/* What the daemon's worker asks after each module load. */
static void test_module_introspection(void **state)
{
	CUmodule m = sgt_module("vector_add.ptx");
	unsigned count = 0;
	CUfunction fs[4];
	const char *name;
	size_t off, size, i;
	const size_t want_off[] = {0, 8, 16, 24}, want_size[] = {8, 8, 8, 4};

	CK(cuModuleGetFunctionCount(&count, m));
	assert_int_equal(count, 1);
	CK(cuModuleEnumerateFunctions(fs, count, m));
	CK(cuFuncGetName(&name, fs[0]));
	assert_string_equal(name, "vector_add");
	for (i = 0; cuFuncGetParamInfo(fs[0], i, &off, &size) == CUDA_SUCCESS; i++) {
		assert_true(i < 4);
		assert_int_equal(off, want_off[i]);
		assert_int_equal(size, want_size[i]);
	}
	assert_int_equal(i, 4);
	CK_EQ(cuFuncGetParamInfo(fs[0], 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
	CK(cuModuleUnload(m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vector_add),
		cmocka_unit_test(test_vector_add_extra),
		cmocka_unit_test(test_module_introspection),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
