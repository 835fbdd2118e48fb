/* test_procaddr.c -- the entry table, cuGetProcAddress resolution, weak stubs and exports. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>

#include "cuda_table.h"
#include "procaddr.h"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
				CUdriverProcAddressQueryResult *);
typedef CUresult (*version_fn)(int *);
typedef CUresult (*init_fn)(unsigned int);
typedef int (*stub_fn)(void);

/* ---- data files ---- */

struct request {
	char base[128];
	int version;
	unsigned flags;
	char sym[128];
};

static struct request *requests;
static size_t nrequests;
static char (*exports)[128];
static size_t nexports;

static void load_requests(void)
{
	FILE *f = fopen(GP_TEST_REQUESTS, "r");
	char line[512];

	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* header */
	assert_string_equal(line, "base\tversion\tflags\texported_symbol\n");
	while (fgets(line, sizeof(line), f)) {
		struct request r;

		assert_int_equal(
			sscanf(line, "%127s %d %u %127s", r.base, &r.version, &r.flags, r.sym), 4);
		requests = realloc(requests, (nrequests + 1) * sizeof(*requests));
		assert_non_null(requests);
		requests[nrequests++] = r;
	}
	fclose(f);
	assert_int_equal(nrequests, 439);
}

static void load_exports(void)
{
	FILE *f = fopen(GP_TEST_EXPORTS, "r");
	char line[128];

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		exports = realloc(exports, (nexports + 1) * sizeof(*exports));
		assert_non_null(exports);
		snprintf(exports[nexports++], sizeof(*exports), "%s", line);
	}
	fclose(f);
	assert_int_equal(nexports, 637);
}

static int setup(void **state)
{
	load_requests();
	load_exports();
	return 0;
}

static int teardown(void **state)
{
	free(requests);
	free(exports);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* ---- invalid arguments ---- */

static void test_invalid_arguments(void **state)
{
	CUdriverProcAddressQueryResult st = 77;
	void *p = (void *)1;

	assert_int_equal(gp__proc_resolve("cuInit", 13000, 0, NULL, &st), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st, 77);
	assert_int_equal(gp__proc_resolve(NULL, 13000, 0, &p, &st), CUDA_ERROR_INVALID_VALUE);
	assert_null(p);
	p = (void *)1;
	assert_int_equal(gp__proc_resolve("cuInit", 13000, 4, &p, &st), CUDA_ERROR_INVALID_VALUE);
	assert_null(p);
	assert_int_equal(gp__proc_resolve("cuInit", 13000, 1ull << 40, &p, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_null(gp__cuda_entry_find(NULL));
	assert_null(gp__cuda_entry_find(""));
}

/* ---- the resolution rule ---- */

static void expect(const char *base, int version, cuuint64_t flags, CUresult res,
		   CUdriverProcAddressQueryResult status, const char *sym)
{
	CUdriverProcAddressQueryResult st = 77;
	void *p = (void *)1;
	CUresult r = gp__proc_resolve(base, version, flags, &p, &st);

	assert_int_equal(r, res);
	assert_int_equal(st, status);
	if (!sym) {
		assert_null(p);
		return;
	}
	const struct gp__cuda_entry *e = gp__cuda_entry_find(sym);
	assert_non_null(e);
	assert_ptr_equal(p, e->addr);
}

static void test_not_found(void **state)
{
	/* cudart's first request: the empty-name probe. */
	expect("", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
	expect("cuNoSuchThing", 13000, 0, CUDA_ERROR_NOT_FOUND,
	       CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
	/* Requests name the base, never the suffixed symbol. */
	expect("cuMemAlloc_v2", 13000, 0, CUDA_ERROR_NOT_FOUND,
	       CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
	expect("cuMemcpy_ptds", 13000, 2, CUDA_ERROR_NOT_FOUND,
	       CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
	expect("cuinit", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
	       NULL);
	/* Below the lowest ABI. */
	expect("cuGetProcAddress", 11020, 0, CUDA_ERROR_NOT_FOUND,
	       CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, NULL);
	expect("cuInit", 1999, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
	       NULL);
	expect("cuInit", -1, 2, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
	       NULL);
	expect("cuLogsCurrent", 12080, 0, CUDA_ERROR_NOT_FOUND,
	       CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, NULL);
	/* First and last names of the sorted table, and names just outside it. */
	expect("cuArray3DCreate", 2000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
	       "cuArray3DCreate");
	expect("a", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
	expect("zz", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
}

static void test_versions(void **state)
{
	const int ok = CUDA_SUCCESS, s = CU_GET_PROC_ADDRESS_SUCCESS;

	expect("cuGetProcAddress", 11030, 0, ok, s, "cuGetProcAddress");
	expect("cuGetProcAddress", 11080, 0, ok, s, "cuGetProcAddress");
	expect("cuGetProcAddress", 12000, 0, ok, s, "cuGetProcAddress_v2");
	expect("cuGetProcAddress", 99999, 0, ok, s, "cuGetProcAddress_v2");
	expect("cuCtxCreate", 2000, 0, ok, s, "cuCtxCreate");
	expect("cuCtxCreate", 3020, 0, ok, s, "cuCtxCreate_v2");
	expect("cuCtxCreate", 11040, 0, ok, s, "cuCtxCreate_v3");
	expect("cuCtxCreate", 12050, 0, ok, s, "cuCtxCreate_v4");
	expect("cuCtxGetDevice", 12090, 0, ok, s, "cuCtxGetDevice");
	expect("cuCtxGetDevice", 13000, 0, ok, s, "cuCtxGetDevice_v2");
	expect("cuCtxSynchronize", 13000, 0, ok, s, "cuCtxSynchronize_v2");
	/* Only typedefs inside __CUDA_API_VERSION_INTERNAL describe the 2.0 ABI of cuCtxDestroy. */
	expect("cuCtxDestroy", 2000, 0, ok, s, "cuCtxDestroy");
	expect("cuCtxDestroy", 4000, 0, ok, s, "cuCtxDestroy_v2");
}

static void test_per_thread_flags(void **state)
{
	const int ok = CUDA_SUCCESS, s = CU_GET_PROC_ADDRESS_SUCCESS;
	const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
			 legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;

	expect("cuMemcpyHtoD", 12000, 0, ok, s, "cuMemcpyHtoD_v2");
	expect("cuMemcpyHtoD", 12000, legacy, ok, s, "cuMemcpyHtoD_v2");
	expect("cuMemcpyHtoD", 12000, pt, ok, s, "cuMemcpyHtoD_v2_ptds");
	expect("cuMemcpyHtoD", 12000, pt | legacy, ok, s, "cuMemcpyHtoD_v2_ptds");
	/* No twin existed before 7.0: the legacy ABI is served. */
	expect("cuMemcpyHtoD", 6050, pt, ok, s, "cuMemcpyHtoD_v2");
	expect("cuMemcpyHtoD", 2000, pt, ok, s, "cuMemcpyHtoD");
	expect("cuLaunchKernel", 13000, pt, ok, s, "cuLaunchKernel_ptsz");
	expect("cuStreamGetCaptureInfo", 10010, pt, ok, s, "cuStreamGetCaptureInfo_ptsz");
	expect("cuStreamGetCaptureInfo", 11030, pt, ok, s, "cuStreamGetCaptureInfo_v2_ptsz");
	expect("cuStreamGetCaptureInfo", 13000, pt, ok, s, "cuStreamGetCaptureInfo_v3_ptsz");
	expect("cuMemcpyBatchAsync", 12080, pt, ok, s, "cuMemcpyBatchAsync_ptsz");
	expect("cuMemcpyBatchAsync", 13000, pt, ok, s, "cuMemcpyBatchAsync_v2_ptsz");
	/* Names without a twin answer the legacy ABI (cuda.h: "If a per-thread version is not
	 * found, the API will return the legacy version"). */
	expect("cuInit", 13000, pt, ok, s, "cuInit");
	expect("cuMemAlloc", 13000, pt, ok, s, "cuMemAlloc_v2");
}

/* Every request cudart 13.0 makes resolves to the symbol it means. */
static void test_cudart_requests(void **state)
{
	for (size_t i = 0; i < nrequests; i++) {
		const struct request *r = &requests[i];

		expect(r->base, r->version, r->flags, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
		       r->sym);
	}
}

/* ---- the table ---- */

static void test_table_shape(void **state)
{
	size_t nexp = 0;

	for (size_t i = 0; i < GP_CUDA_NENTRIES; i++) {
		const struct gp__cuda_entry *e = &gp__cuda_entries[i];

		assert_non_null(e->addr);
		assert_true(e->version >= 2000 && e->version <= 13000);
		assert_ptr_equal(gp__cuda_entry_find(e->sym), e);
		if (i > 0)
			assert_true(strcmp(gp__cuda_entries[i - 1].base, e->base) <= 0);
		if (e->kind == GP_CUDA_LEGACY) {
			assert_string_equal(e->legacy, e->sym);
			assert_int_equal(strncmp(e->sym, e->base, strlen(e->base)), 0);
		} else {
			const struct gp__cuda_entry *l = gp__cuda_entry_find(e->legacy);
			char want[160];

			assert_non_null(l);
			assert_int_equal(l->kind, GP_CUDA_LEGACY);
			assert_string_equal(l->base, e->base);
			assert_true(l->version <= e->version);
			snprintf(want, sizeof(want), "%s_%s", l->sym,
				 e->kind == GP_CUDA_PTDS ? "ptds" : "ptsz");
			assert_string_equal(e->sym, want);
		}
		nexp += e->exported;
	}
	assert_int_equal(nexp, GP_CUDA_NEXPORTS);
	assert_int_equal(GP_CUDA_NEXPORTS, 637);

	/* The exported entries are exactly cuda_exports.txt. */
	for (size_t i = 0; i < nexports; i++) {
		const struct gp__cuda_entry *e = gp__cuda_entry_find(exports[i]);

		assert_non_null(e);
		assert_int_equal(e->exported, 1);
	}
}

/* The X-macro stays usable where cuda.h #defines the plain names (cuMemAlloc -> _v2). */
static void test_xmacro_with_cuda_h(void **state)
{
	static const char *const names[] = {
#define NAME(sym, base, version, kind, legacy, exported) #sym,
		GP_CUDA_ENTRIES(NAME)
#undef NAME
	};
	static const char *const bases[] = {
#define BASE(sym, base, version, kind, legacy, exported) #base,
		GP_CUDA_ENTRIES(BASE)
#undef BASE
	};

	assert_int_equal(sizeof(names) / sizeof(names[0]), GP_CUDA_NENTRIES);
	for (size_t i = 0; i < GP_CUDA_NENTRIES; i++) {
		assert_string_equal(names[i], gp__cuda_entries[i].sym);
		assert_string_equal(bases[i], gp__cuda_entries[i].base);
	}
	assert_non_null(gp__cuda_entry_find("cuMemAlloc"));
	assert_string_equal(gp__cuda_entry_find("cuMemAlloc")->sym, "cuMemAlloc");
}

/* ---- a library built the way ours are ---- */

static void *open_lib(void)
{
	void *h = dlopen(GP_TEST_CUDALIB, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fail_msg("dlopen %s: %s", GP_TEST_CUDALIB, dlerror());
	return h;
}

static void test_lib_strong_and_weak(void **state)
{
	void *h = open_lib();
	get_proc_fn gpa = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");
	version_fn ver = (version_fn)dlsym(h, "cuDriverGetVersion");
	init_fn init = (init_fn)dlsym(h, "cuInit");
	CUdriverProcAddressQueryResult st;
	void *p;
	int v = 0;

	assert_non_null(gpa);
	assert_non_null(ver);
	assert_non_null(init);
	/* The two strong definitions. */
	assert_int_equal(ver(&v), CUDA_SUCCESS);
	assert_int_equal(v, 13000);
	assert_int_equal(ver(NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gpa("cuDriverGetVersion", &p, 13000, 0, &st), CUDA_SUCCESS);
	assert_ptr_equal(p, (void *)ver);
	assert_int_equal(gpa("cuGetProcAddress", &p, 13000, 0, &st), CUDA_SUCCESS);
	assert_ptr_equal(p, (void *)gpa);
	/* A third one is the weak stub. */
	assert_int_equal(init(0), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(gpa("cuInit", &p, 13000, 0, &st), CUDA_SUCCESS);
	assert_ptr_equal(p, (void *)init);
	assert_int_equal(gpa("", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	dlclose(h);
}

/* Through the library's own cuGetProcAddress_v2: each request gets what dlsym finds. */
static void test_lib_requests(void **state)
{
	void *h = open_lib();
	get_proc_fn gpa = (get_proc_fn)dlsym(h, "cuGetProcAddress_v2");

	assert_non_null(gpa);
	for (size_t i = 0; i < nrequests; i++) {
		const struct request *r = &requests[i];
		const struct gp__cuda_entry *e = gp__cuda_entry_find(r->sym);
		CUdriverProcAddressQueryResult st = 77;
		void *p = NULL, *d;

		assert_non_null(e);
		assert_int_equal(gpa(r->base, &p, r->version, r->flags, &st), CUDA_SUCCESS);
		assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
		assert_non_null(p);
		d = dlsym(h, r->sym);
		if (e->exported)
			assert_ptr_equal(p, d);
		else
			assert_null(d); /* resolvable, but not exported */
		if (strcmp(r->sym, "cuGetProcAddress_v2") != 0 &&
		    strcmp(r->sym, "cuDriverGetVersion") != 0)
			assert_int_equal(((stub_fn)p)(), CUDA_ERROR_NOT_SUPPORTED);
	}
	dlclose(h);
}

/* Every exported name is there and (but for the two strong ones) answers 801. */
static void test_lib_every_stub(void **state)
{
	void *h = open_lib();

	for (size_t i = 0; i < nexports; i++) {
		stub_fn f = (stub_fn)dlsym(h, exports[i]);

		if (!f)
			fail_msg("%s is not exported", exports[i]);
		if (strcmp(exports[i], "cuGetProcAddress_v2") == 0 ||
		    strcmp(exports[i], "cuDriverGetVersion") == 0)
			continue;
		assert_int_equal(f(), CUDA_ERROR_NOT_SUPPORTED);
	}
	/* Internal names do not leak. */
	assert_null(dlsym(h, "gp__cuda_entries"));
	assert_null(dlsym(h, "gp__proc_resolve"));
	assert_null(dlsym(h, "gp_log"));
	assert_null(dlsym(h, "cuGLInit"));
	dlclose(h);
}

/* nm -D: the dynamic symbol table defines exactly the 637 names, nothing else. */
static void test_lib_dynamic_symbols(void **state)
{
	char cmd[1024], line[256];
	char(*defined)[128] = calloc(1024, sizeof(*defined));
	char(*want)[128] = calloc(nexports, sizeof(*want));
	size_t n = 0;
	FILE *p;

	assert_non_null(defined);
	assert_non_null(want);
	snprintf(cmd, sizeof(cmd), "'%s' -D --defined-only '%s'", GP_TEST_NM, GP_TEST_CUDALIB);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char addr[64], type[8], name[128];

		assert_int_equal(sscanf(line, "%63s %7s %127s", addr, type, name), 3);
		assert_true(n < 1024);
		/* Only functions (T strong, W the weak stubs); no symbol versions (@...). */
		assert_true(strcmp(type, "T") == 0 || strcmp(type, "W") == 0);
		assert_null(strchr(name, '@'));
		snprintf(defined[n++], sizeof(*defined), "%s", name);
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(n, nexports);
	memcpy(want, exports, nexports * sizeof(*want));
	qsort(defined, n, sizeof(*defined), cmp_str);
	qsort(want, nexports, sizeof(*want), cmp_str);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(defined[i], want[i]);
	free(defined);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_arguments),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_per_thread_flags),
		cmocka_unit_test(test_cudart_requests),
		cmocka_unit_test(test_table_shape),
		cmocka_unit_test(test_xmacro_with_cuda_h),
		cmocka_unit_test(test_lib_strong_and_weak),
		cmocka_unit_test(test_lib_requests),
		cmocka_unit_test(test_lib_every_stub),
		cmocka_unit_test(test_lib_dynamic_symbols),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
