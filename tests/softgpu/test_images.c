/* test_images.c -- module images as nvcc and cudart hand them over: fatbins (zstd, LZ4, plain),
 * several PTX versions, the __fatBinC_Wrapper_t, SASS-only fatbins and cubins. */
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

/* A loaded file copied to 8-byte-aligned memory, as a linked fatbin section is. */
static void *aligned_image(const char *name)
{
	size_t n;
	void *raw = sgt_read(name, &n), *img = aligned_alloc(16, (n + 16) & ~(size_t)15);

	assert_non_null(img);
	memcpy(img, raw, n);
	free(raw);
	return img;
}

static void run_vector_add(CUfunction f)
{
	float a[100], b[100], c[100];
	CUdeviceptr da, db, dc;
	int n = 100;

	for (int i = 0; i < 100; i++) {
		a[i] = (float)i * 0.5f;
		b[i] = (float)(100 - i);
	}
	CK(cuMemAlloc(&da, sizeof(a)));
	CK(cuMemAlloc(&db, sizeof(b)));
	CK(cuMemAlloc(&dc, sizeof(c)));
	CK(cuMemcpyHtoD(da, a, sizeof(a)));
	CK(cuMemcpyHtoD(db, b, sizeof(b)));
	void *args[] = {&da, &db, &dc, &n};
	CK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(c, dc, sizeof(c)));
	for (int i = 0; i < 100; i++)
		assert_true(c[i] == a[i] + b[i]);
	CK(cuMemFree(da));
	CK(cuMemFree(db));
	CK(cuMemFree(dc));
}

static void load_and_run(const char *name)
{
	void *img = aligned_image(name);
	CUmodule m;
	CUfunction f;

	CK(cuModuleLoadData(&m, img));
	CK(cuModuleGetFunction(&f, m, "vector_add"));
	run_vector_add(f);
	CK(cuModuleUnload(m));
	free(img);
}

static void test_fatbin_zstd(void **state)
{
	load_and_run("va_zstd.fatbin");
}

static void test_fatbin_lz4(void **state)
{
	load_and_run("va_lz4.fatbin");
}

static void test_fatbin_plain(void **state)
{
	load_and_run("va_plain.fatbin");
}

static void test_fatbin_best_ptx(void **state)
{
	load_and_run("va_multi.fatbin");
}

/* What cudart passes to cuLibraryLoadData: the wrapper around the fatbin. */
static void test_wrapper(void **state)
{
	void *fatbin = aligned_image("va_zstd.fatbin");
	struct {
		int magic;
		int version;
		const unsigned long long *data;
		void *filename_or_fatbins;
	} wrapper = {0x466243B1, 1, fatbin, NULL};
	CUlibrary lib;
	CUkernel k;
	CUmodule m;
	CUfunction f;

	CK(cuLibraryLoadData(&lib, &wrapper, NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetKernel(&k, lib, "vector_add"));
	run_vector_add((CUfunction)k);
	CK(cuLibraryUnload(lib));
	CK(cuModuleLoadData(&m, &wrapper));
	CK(cuModuleGetFunction(&f, m, "vector_add"));
	run_vector_add(f);
	CK(cuModuleUnload(m));
	free(fatbin);
}

static void expect_no_binary(const char *name)
{
	void *img = aligned_image(name);
	CUmodule m;
	CUlibrary lib;

	CK_EQ(cuModuleLoadData(&m, img), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CK_EQ(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0),
	      CUDA_ERROR_NO_BINARY_FOR_GPU);
	free(img);
}

static void test_sass_only(void **state)
{
	expect_no_binary("va_sass.fatbin");
}

/*
 * PTX only for a newer device than softgpu reports: taken (the newest PTX of the fatbin), as
 * NVIDIA's libraries ship PTX only for their newest target; compute_120 writes `.target sm_120`.
 */
static void test_only_newer_ptx(void **state)
{
	load_and_run("va_future.fatbin");
	load_and_run("va_sm120.fatbin");
}

static void test_cubin(void **state)
{
	expect_no_binary("va.cubin");
}

static void test_corrupt_fatbin(void **state)
{
	size_t n;
	unsigned char *img = sgt_read("va_zstd.fatbin", &n);
	CUmodule m;

	/* a zstd payload that does not decompress (the PTX entry is the last one) */
	for (size_t i = n - 300; i < n - 200; i++)
		img[i] ^= 0x5a;
	{
		/* zstd frames carry no checksum: garbage may decompress and then not parse */
		CUresult r = cuModuleLoadData(&m, img);

		assert_true(r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_INVALID_PTX);
	}
	/* an entry that claims more bytes than the fatbin has */
	free(img);
	img = sgt_read("va_zstd.fatbin", &n);
	img[16 + 8] = 0xff;
	img[16 + 9] = 0xff;
	img[16 + 10] = 0xff;
	CK_EQ(cuModuleLoadData(&m, img), CUDA_ERROR_INVALID_IMAGE);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fatbin_zstd),    cmocka_unit_test(test_fatbin_lz4),
		cmocka_unit_test(test_fatbin_plain),   cmocka_unit_test(test_fatbin_best_ptx),
		cmocka_unit_test(test_wrapper),	       cmocka_unit_test(test_sass_only),
		cmocka_unit_test(test_only_newer_ptx), cmocka_unit_test(test_cubin),
		cmocka_unit_test(test_corrupt_fatbin),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
