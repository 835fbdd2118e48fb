/* test_exptables.c -- cuGetExportTable: every table, its slots, and context-local storage. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "exptables.h"
#include "integrity.h"
#include "log.h"

/* ---- malloc that fails on demand (linked with -Wl,--wrap=malloc) ---- */

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static int malloc_fail_countdown = -1; /* fail the Nth call from now; -1: never */

void *__wrap_malloc(size_t size)
{
	if (malloc_fail_countdown >= 0 && malloc_fail_countdown-- == 0)
		return NULL;
	return __real_malloc(size);
}

/* ---- the table ids, from NOTES.md section 3 (bytes in memory order) ---- */

static const CUuuid id_probe = {{(char)0xf8, (char)0xcf, (char)0xf9, 0x51, 0x21, 0x46, (char)0x8b,
				 0x4e, (char)0xb9, (char)0xe2, (char)0xfb, 0x46, (char)0x9e, 0x7c,
				 0x0d, (char)0xd9}};
static const CUuuid id_cudart = {{0x6b, (char)0xd5, (char)0xfb, 0x6c, 0x5b, (char)0xf4, (char)0xe7,
				  0x4a, (char)0x89, (char)0x87, (char)0xd9, 0x39, 0x12, (char)0xfd,
				  (char)0x9d, (char)0xf9}};
static const CUuuid id_hooks = {{(char)0xa0, (char)0x94, 0x79, (char)0x8c, 0x2e, 0x74, 0x2e, 0x74,
				 (char)0x93, (char)0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66}};
static const CUuuid id_tls = {{0x42, (char)0xd8, 0x5a, (char)0x81, 0x23, (char)0xf6, (char)0xcb,
			       0x47, (char)0x82, (char)0x98, (char)0xf6, (char)0xe7, (char)0x8a,
			       0x3a, (char)0xec, (char)0xdc}};
static const CUuuid id_cls = {{(char)0xc6, (char)0x93, 0x33, 0x6e, 0x11, 0x21, (char)0xdf, 0x11,
			       (char)0xa8, (char)0xc3, 0x68, (char)0xf3, 0x55, (char)0xd8,
			       (char)0x95, (char)0x93}};
static const CUuuid id_checks = {{0x26, 0x3e, (char)0x88, 0x60, 0x7c, (char)0xd2, 0x61, 0x43,
				  (char)0x92, (char)0xf6, (char)0xbb, (char)0xd5, 0x00, 0x6d,
				  (char)0xfa, 0x7e}};
static const CUuuid id_toolsctx = {{0x21, 0x31, (char)0x8c, 0x60, (char)0x97, 0x14, 0x32, 0x48,
				    (char)0x8c, (char)0xa6, 0x41, (char)0xff, 0x73, 0x24,
				    (char)0xc8, (char)0xf2}};
static const CUuuid id_toolsmod = {{0x6e, 0x16, 0x3f, (char)0xbe, (char)0xb9, 0x58, 0x44, 0x4d,
				    (char)0x83, 0x5c, (char)0xe1, (char)0x82, (char)0xaf,
				    (char)0xf1, (char)0x99, 0x1e}};
static const CUuuid id_integrity = {{(char)0xd4, 0x08, 0x20, 0x55, (char)0xbd, (char)0xe6, 0x70,
				     0x4b, (char)0x8d, 0x34, (char)0xba, 0x12, 0x3c, 0x66,
				     (char)0xe1, (char)0xf2}};

typedef CUresult (*unknown_fn)(void);
typedef CUresult (*primary_ctx_fn)(CUcontext *, CUdevice);
typedef void (*hooks_fn)(void **, size_t *);
typedef CUresult (*cls_put_fn)(CUcontext, void *, void *, gp__cls_dtor);
typedef CUresult (*cls_delete_fn)(CUcontext, void *);
typedef CUresult (*cls_get_fn)(void **, CUcontext, void *);
typedef CUresult (*check_fn)(CUcontext, uint32_t *, void **);
typedef uint32_t (*check3_fn)(void);
typedef CUresult (*integrity_fn)(uint32_t, uint64_t, uint64_t *);

/* ---- a fake library ---- */

#define CTX_A ((CUcontext)(uintptr_t)0xa000)
#define CTX_B ((CUcontext)(uintptr_t)0xb000)

static _Thread_local CUcontext current;
static CUresult current_error = CUDA_SUCCESS;

static CUresult fake_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*pctx = CTX_A;
	return CUDA_SUCCESS;
}

static CUresult fake_current(CUcontext *pctx)
{
	if (current_error != CUDA_SUCCESS)
		return current_error;
	*pctx = current;
	return CUDA_SUCCESS;
}

static CUresult fake_version(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}

static CUresult fake_count(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}

static CUresult fake_get(CUdevice *d, int ordinal)
{
	*d = ordinal;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult fake_uuid(CUuuid *u, CUdevice d)
{
	memset(u->bytes, 0x5a, sizeof(u->bytes));
	return CUDA_SUCCESS;
}

static CUresult fake_attr(int *pi, CUdevice_attribute a, CUdevice d)
{
	*pi = a == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID ? 0x17 : 0;
	return CUDA_SUCCESS;
}

static CUresult fake_ctx_id(CUcontext ctx, unsigned long long *id)
{
	*id = ctx == CTX_A ? 7 : 8;
	return CUDA_SUCCESS;
}

/* Streams of CTX_A: handle 0x5 only (NULL means the per-thread or legacy stream). */
static int fake_stream_objs[3]; /* legacy, per-thread, 0x5 */

static CUresult fake_stream_object(CUcontext ctx, CUstream h, int per_thread, void **obj)
{
	if (ctx != CTX_A)
		return CUDA_ERROR_INVALID_HANDLE;
	if (h == NULL)
		*obj = &fake_stream_objs[per_thread ? 1 : 0];
	else if (h == (CUstream)(uintptr_t)5)
		*obj = &fake_stream_objs[2];
	else
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

static CUresult fake_stream_object_id(CUcontext ctx, void *obj, unsigned long long *id)
{
	for (int i = 0; i < 3; i++)
		if (obj == &fake_stream_objs[i] && ctx == CTX_A) {
			*id = 100 + (unsigned)i;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_HANDLE;
}

/* Modules: 0x10 holds kernels 0x11 and 0x12, 0x20 none, 0x30 fails to enumerate (its count
 * errors are the driver's INVALID_VALUE for 0x40, INVALID_HANDLE for anything else). */
#define MOD_TWO ((CUmodule)(uintptr_t)0x10)
#define MOD_NONE ((CUmodule)(uintptr_t)0x20)
#define MOD_BROKEN ((CUmodule)(uintptr_t)0x30)
#define MOD_ONE_ERROR ((CUmodule)(uintptr_t)0x40)

static CUresult fake_function_count(unsigned int *count, CUmodule mod)
{
	if (mod == MOD_TWO || mod == MOD_BROKEN)
		*count = 2;
	else if (mod == MOD_NONE)
		*count = 0;
	else
		return mod == MOD_ONE_ERROR ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

static CUresult fake_enumerate_functions(CUfunction *fns, unsigned int n, CUmodule mod)
{
	if (mod != MOD_TWO)
		return CUDA_ERROR_INVALID_HANDLE;
	for (unsigned int i = 0; i < n && i < 2; i++)
		fns[i] = (CUfunction)(uintptr_t)(0x11 + i);
	return CUDA_SUCCESS;
}

static const struct gp__cuda_host fake_host = {
	.primary_ctx = fake_primary_ctx,
	.ctx_get_current = fake_current,
	.driver_get_version = fake_version,
	.device_get_count = fake_count,
	.device_get = fake_get,
	.device_get_uuid = fake_uuid,
	.device_get_attribute = fake_attr,
	.ctx_get_id = fake_ctx_id,
	.stream_object = fake_stream_object,
	.stream_object_id = fake_stream_object_id,
	.module_get_function_count = fake_function_count,
	.module_enumerate_functions = fake_enumerate_functions,
};

/* The same library without the optional members. */
static const struct gp__cuda_host fake_host_minimal = {
	.primary_ctx = fake_primary_ctx,
	.ctx_get_current = fake_current,
	.driver_get_version = fake_version,
	.device_get_count = fake_count,
	.device_get = fake_get,
	.device_get_uuid = fake_uuid,
	.device_get_attribute = fake_attr,
};

static int with_host(void **state)
{
	current = NULL;
	current_error = CUDA_SUCCESS;
	malloc_fail_countdown = -1;
	gp__exptables_deinit();
	assert_int_equal(gp__exptables_init(&fake_host), 0);
	return 0;
}

static int without_host(void **state)
{
	current = NULL;
	current_error = CUDA_SUCCESS;
	malloc_fail_countdown = -1;
	gp__exptables_deinit();
	return 0;
}

static int cleanup(void **state)
{
	gp__exptables_deinit();
	return 0;
}

static const void *const *table(const CUuuid *id)
{
	const void *t = NULL;

	assert_int_equal(gp__get_export_table(&t, id), CUDA_SUCCESS);
	assert_non_null(t);
	return t;
}

/* ---- invalid arguments ---- */

static void test_invalid_arguments(void **state)
{
	const void *t = (const void *)1;
	struct gp__cuda_host partial = fake_host;

	assert_int_equal(gp__get_export_table(NULL, &id_cudart), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gp__get_export_table(&t, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_null(t);
	assert_null(gp__exptable_name(NULL));
	assert_int_equal(gp__exptables_init(NULL), -EINVAL);
	partial.device_get_attribute = NULL;
	assert_int_equal(gp__exptables_init(&partial), -EINVAL);
	partial = fake_host;
	partial.ctx_get_current = NULL;
	assert_int_equal(gp__exptables_init(&partial), -EINVAL);
}

/* ---- the ids ---- */

static void test_unknown_ids(void **state)
{
	const CUuuid zero = {{0}};
	CUuuid near = id_cudart;
	const void *t = (const void *)1;

	/* cudart's first request: NOT_FOUND is the answer it copes with. */
	assert_int_equal(gp__get_export_table(&t, &id_probe), CUDA_ERROR_NOT_FOUND);
	assert_null(t);
	t = (const void *)1;
	assert_int_equal(gp__get_export_table(&t, &zero), CUDA_ERROR_NOT_FOUND);
	assert_null(t);
	near.bytes[15] ^= 1;
	assert_int_equal(gp__get_export_table(&t, &near), CUDA_ERROR_NOT_FOUND);
	assert_null(gp__exptable_name(&id_probe));
}

static void test_names_and_uuid_format(void **state)
{
	char s[GP_UUID_STRLEN];

	assert_string_equal(gp__exptable_name(&id_cudart), "CUDART_INTERFACE");
	assert_string_equal(gp__exptable_name(&id_hooks), "TOOLS_RUNTIME_CALLBACK_HOOKS");
	assert_string_equal(gp__exptable_name(&id_tls), "TOOLS_TLS");
	assert_string_equal(gp__exptable_name(&id_cls), "CONTEXT_LOCAL_STORAGE");
	assert_string_equal(gp__exptable_name(&id_checks), "CONTEXT_CHECKS");
	assert_string_equal(gp__exptable_name(&id_integrity), "INTEGRITY_CHECK");
	assert_string_equal(gp__exptable_name(&id_toolsmod), "TOOLS_MODULE");
	gp__uuid_format(&id_probe, s);
	assert_string_equal(s, "f8cff951-2146-8b4e-b9e2-fb469e7c0dd9");
	gp__uuid_format(&id_cudart, s);
	assert_string_equal(s, "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
}

/* With logging on, the request is logged with the id in 8-4-4-4-12 form. */
static void test_logging(void **state)
{
	char path[] = "/tmp/gp_test_exptables_XXXXXX", buf[4096];
	int fd = mkstemp(path), saved = dup(2);
	const void *t;
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0);
	gp_log_init("test", GP_LOG_DEBUG);
	fflush(stderr);
	dup2(fd, 2);
	gp__get_export_table(&t, &id_probe);
	gp__get_export_table(&t, &id_integrity);
	gp_log_set_level(GP_LOG_NONE);
	gp__get_export_table(&t, &id_probe); /* silent */
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "f8cff951-2146-8b4e-b9e2-fb469e7c0dd9: unknown table"));
	assert_non_null(strstr(buf, "d4082055-bde6-704b-8d34-ba123c66e1f2: INTEGRITY_CHECK"));
	assert_null(strstr(strstr(buf, "unknown table") + 1, "unknown table"));
}

/* ---- every table: size slot, no NULL slot, unknown slots answer 801 ---- */

static void test_sizes_and_unknown_slots(void **state)
{
	static const struct {
		const CUuuid *id;
		size_t nslots;
		int known[4]; /* slots with a known purpose (0 ends the list) */
	} shapes[] = {
		{&id_cudart, 13, {2}},	 {&id_hooks, 7, {2, 6}},  {&id_tls, 4, {2}},
		{&id_checks, 4, {2, 3}}, {&id_integrity, 3, {1}}, {&id_toolsctx, 95, {4, 39, 51}},
		{&id_toolsmod, 8, {7}},
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const void *const *t = table(shapes[i].id);

		assert_int_equal((uintptr_t)t[0], shapes[i].nslots * sizeof(void *));
		for (size_t s = 1; s < shapes[i].nslots; s++) {
			int known = 0;

			assert_non_null(t[s]);
			for (int k = 0; k < 4 && shapes[i].known[k]; k++)
				known |= shapes[i].known[k] == (int)s;
			if (!known)
				assert_int_equal(((unknown_fn)t[s])(), CUDA_ERROR_NOT_SUPPORTED);
		}
	}
	/* Context-local storage has no size slot: slot 0 is put. */
	const void *const *cls = table(&id_cls);
	assert_true((uintptr_t)cls[0] > 4096);
	assert_non_null(cls[1]);
	assert_non_null(cls[2]);
	assert_int_equal(((unknown_fn)cls[3])(), CUDA_ERROR_NOT_SUPPORTED);
	/* The same table every time. */
	assert_ptr_equal(table(&id_cudart), table(&id_cudart));
}

/* ---- TOOLS_TLS and TOOLS_CONTEXT (what cuBLAS's reductions ask) ---- */

typedef CUresult (*tls_ctx_fn)(CUcontext *);
typedef CUresult (*ctx_id_fn)(CUcontext, unsigned long long *);
typedef CUresult (*stream_obj_fn)(CUcontext, CUstream, void **, int);
typedef CUresult (*stream_id_fn)(CUcontext, void *, unsigned long long *);

static void test_tools_context(void **state)
{
	tls_ctx_fn cur = (tls_ctx_fn)table(&id_tls)[2];
	const void *const *tc = table(&id_toolsctx);
	ctx_id_fn cid = (ctx_id_fn)tc[4];
	stream_obj_fn so = (stream_obj_fn)tc[51];
	stream_id_fn sid = (stream_id_fn)tc[39];
	CUcontext c = CTX_B;
	unsigned long long id = 0;
	void *obj = NULL, *obj2 = NULL;

	assert_int_equal(cur(NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cur(&c), CUDA_SUCCESS);
	assert_null(c);
	current = CTX_A;
	assert_int_equal(cur(&c), CUDA_SUCCESS);
	assert_ptr_equal(c, CTX_A);

	assert_int_equal(cid(CTX_B, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cid(CTX_B, &id), CUDA_SUCCESS);
	assert_int_equal(id, 8);
	assert_int_equal(cid(NULL, &id), CUDA_SUCCESS); /* NULL: the current context */
	assert_int_equal(id, 7);

	assert_int_equal(so(CTX_A, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(so(CTX_A, (CUstream)(uintptr_t)9, &obj, 0), CUDA_ERROR_INVALID_HANDLE);
	assert_null(obj);
	assert_int_equal(so(CTX_A, (CUstream)(uintptr_t)5, &obj, 0), CUDA_SUCCESS);
	assert_int_equal(sid(CTX_A, obj, &id), CUDA_SUCCESS);
	assert_int_equal(id, 102);
	assert_int_equal(so(NULL, NULL, &obj2, 1), CUDA_SUCCESS);
	assert_int_equal(sid(NULL, obj2, &id), CUDA_SUCCESS);
	assert_int_equal(id, 101);
	assert_int_equal(sid(CTX_A, obj, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(sid(CTX_A, &id, &id), CUDA_ERROR_INVALID_HANDLE);
	current = NULL;
	assert_int_equal(so(NULL, NULL, &obj, 0), CUDA_ERROR_INVALID_CONTEXT);
}

/* Without the optional members those slots refuse, as the unknown ones do. */
static void test_tools_context_minimal(void **state)
{
	const void *const *tc;
	unsigned long long id;
	void *obj;

	gp__exptables_deinit();
	assert_int_equal(gp__exptables_init(&fake_host_minimal), 0);
	tc = table(&id_toolsctx);
	current = CTX_A;
	assert_int_equal(((ctx_id_fn)tc[4])(NULL, &id), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(((stream_obj_fn)tc[51])(NULL, NULL, &obj, 0), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(((stream_id_fn)tc[39])(NULL, &obj, &id), CUDA_ERROR_NOT_SUPPORTED);
	current = NULL;
}

/* ---- TOOLS_MODULE (what cuFFT asks for a module's function) ---- */

typedef void (*module_cb)(void *, void *);
typedef int (*module_functions_fn)(CUcontext, CUmodule, module_cb, void *);

struct seen {
	int n;
	void *fn[4];
};

static void collect(void *user, void *fn)
{
	struct seen *s = user;

	if (s->n < 4)
		s->fn[s->n] = fn;
	s->n++;
}

static void test_tools_module(void **state)
{
	const void *const *tm = table(&id_toolsmod);
	module_functions_fn f = (module_functions_fn)tm[7];
	struct seen s = {0};

	/* cuFFT's checks: a size above 0x37 bytes; 1 is success, so no error may be 1. */
	assert_true((uintptr_t)tm[0] > 0x37);
	assert_int_equal(f(CTX_A, NULL, collect, &s), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(f(CTX_A, MOD_TWO, NULL, &s), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(f(CTX_A, MOD_ONE_ERROR, collect, &s), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(f(CTX_A, (CUmodule)(uintptr_t)0x99, collect, &s),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(f(CTX_A, MOD_NONE, collect, &s), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(f(CTX_A, MOD_BROKEN, collect, &s), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(s.n, 0);
	/* NULL: the current context, and there is none */
	assert_int_equal(f(NULL, MOD_TWO, collect, &s), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(s.n, 0);
	malloc_fail_countdown = 0;
	assert_int_equal(f(CTX_A, MOD_TWO, collect, &s), CUDA_ERROR_OUT_OF_MEMORY);
	malloc_fail_countdown = -1;
	assert_int_equal(s.n, 0);

	/* every kernel once, in the enumeration's order */
	assert_int_equal(f(CTX_A, MOD_TWO, collect, &s), 1);
	assert_int_equal(s.n, 2);
	assert_ptr_equal(s.fn[0], (void *)(uintptr_t)0x11);
	assert_ptr_equal(s.fn[1], (void *)(uintptr_t)0x12);
	current = CTX_B;
	memset(&s, 0, sizeof(s));
	assert_int_equal(f(NULL, MOD_TWO, collect, &s), 1);
	assert_int_equal(s.n, 2);
	current = NULL;
}

/* Without the library's module functions slot 7 refuses, as the unknown slots do. */
static void test_tools_module_minimal(void **state)
{
	struct seen s = {0};
	module_functions_fn f;

	gp__exptables_deinit();
	assert_int_equal(gp__exptables_init(&fake_host_minimal), 0);
	f = (module_functions_fn)table(&id_toolsmod)[7];
	assert_int_equal(f(CTX_A, MOD_TWO, collect, &s), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(s.n, 0);
	gp__exptables_deinit();
	assert_int_equal(f(CTX_A, MOD_TWO, collect, &s), CUDA_ERROR_NOT_INITIALIZED);
}

/* ---- CUDART_INTERFACE ---- */

static void test_cudart_primary_ctx(void **state)
{
	primary_ctx_fn f = (primary_ctx_fn)table(&id_cudart)[2];
	CUcontext c = NULL;

	assert_int_equal(f(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(f(&c, 0), CUDA_SUCCESS);
	assert_ptr_equal(c, CTX_A);
	assert_int_equal(f(&c, 5), CUDA_ERROR_INVALID_DEVICE);
}

static void test_without_host(void **state)
{
	primary_ctx_fn pc = (primary_ctx_fn)table(&id_cudart)[2];
	const void *const *cls = table(&id_cls);
	integrity_fn ic = (integrity_fn)table(&id_integrity)[1];
	CUcontext c;
	void *v;
	uint64_t out[2];

	assert_int_equal(pc(&c, 0), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(((cls_get_fn)cls[2])(&v, NULL, (void *)1), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(((cls_put_fn)cls[0])(NULL, (void *)1, (void *)2, NULL),
			 CUDA_ERROR_NOT_INITIALIZED);
	/* An explicit context needs no library. */
	assert_int_equal(((cls_put_fn)cls[0])(CTX_B, (void *)1, (void *)2, NULL), CUDA_SUCCESS);
	assert_int_equal(((cls_get_fn)cls[2])(&v, CTX_B, (void *)1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)2);
	/* The fixed integrity answers need nothing either; the HMAC needs the library. */
	assert_int_equal(ic(13000, 0, out), CUDA_SUCCESS);
	assert_int_equal(ic(13002, 0, out), CUDA_ERROR_NOT_INITIALIZED);
}

/* ---- TOOLS_RUNTIME_CALLBACK_HOOKS ---- */

static void test_hooks_buffers(void **state)
{
	const void *const *t = table(&id_hooks);
	static const struct {
		int slot;
		size_t size;
	} bufs[] = {{2, 1024}, {6, 14 * sizeof(uint32_t)}};

	for (size_t i = 0; i < 2; i++) {
		hooks_fn f = (hooks_fn)t[bufs[i].slot];
		void *b = NULL, *again = NULL;
		size_t sz = 0;

		f(&b, &sz);
		assert_non_null(b);
		assert_int_equal(sz, bufs[i].size);
		for (size_t j = 0; j < sz; j++)
			assert_int_equal(((unsigned char *)b)[j], 0);
		/* Static and writable: cudart owns it once handed out. */
		memset(b, 0, sz);
		f(&again, NULL);
		assert_ptr_equal(again, b);
		f(NULL, &sz);
	}
}

/* ---- CONTEXT_CHECKS ---- */

static void test_context_checks(void **state)
{
	const void *const *t = table(&id_checks);
	uint32_t r1 = 0xffffffff;
	void *r2 = (void *)7;

	assert_int_equal(((check_fn)t[2])(CTX_A, NULL, &r2), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(((check_fn)t[2])(CTX_A, &r1, &r2), CUDA_SUCCESS);
	assert_int_equal(r1, 0);
	assert_int_equal(((check3_fn)t[3])(), 0);
}

/* ---- INTEGRITY_CHECK ---- */

static void test_integrity_slot(void **state)
{
	const void *const *t = table(&id_integrity);
	const void *const *cudart = table(&id_cudart);
	integrity_fn f = (integrity_fn)t[1];
	struct gp__integrity_device dev = {.pci_bus = 0x17};
	struct gp__integrity_header hdr = {
		.driver_version = 13000,
		.version = 13002,
		.pid = (uint32_t)getpid(),
		.thread = (uint32_t)(uintptr_t)pthread_self(),
		.cudart_table = cudart,
		.integrity_table = t,
		.check_fn = t[1],
		.unix_seconds = 1234,
	};
	uint64_t got[2], want[2];

	memset(dev.uuid, 0x5a, sizeof(dev.uuid));
	assert_int_equal(f(13002, 1234, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(f(13000, 1234, got), CUDA_SUCCESS);
	assert_int_equal(got[0], 0x3341181C03CB675CULL);
	assert_int_equal(f(13001, 1234, got), CUDA_SUCCESS);
	assert_int_equal(got[0], 0x1841181C03CB675CULL);
	/* The pointers hashed are the tables handed out and slot 1 itself. */
	assert_int_equal(f(13002, 1234, got), CUDA_SUCCESS);
	assert_int_equal(gp__integrity_answer(&hdr, &dev, 1, want), 0);
	assert_memory_equal(got, want, sizeof(got));
}

/* ---- CONTEXT_LOCAL_STORAGE ---- */

static CUcontext dtor_ctx[8];
static void *dtor_key[8], *dtor_val[8];
static int ndtor;

static void record_dtor(CUcontext ctx, void *key, void *value)
{
	assert_true(ndtor < 8);
	dtor_ctx[ndtor] = ctx;
	dtor_key[ndtor] = key;
	dtor_val[ndtor] = value;
	ndtor++;
}

/* A destructor that calls back in: the store must not be locked while it runs. */
static void reentrant_dtor(CUcontext ctx, void *key, void *value)
{
	void *v;

	assert_int_equal(gp__cls_get(&v, ctx, key), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(gp__cls_put(CTX_B, (void *)99, value, NULL), CUDA_SUCCESS);
	record_dtor(ctx, key, value);
}

static void test_cls_invalid_arguments(void **state)
{
	const void *const *t = table(&id_cls);
	void *v;

	assert_int_equal(((cls_get_fn)t[2])(NULL, CTX_A, (void *)1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gp__cls_get(NULL, CTX_A, (void *)1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(gp__cls_get(&v, NULL, (void *)1), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(gp__cls_put(NULL, (void *)1, NULL, NULL), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(gp__cls_delete(NULL, (void *)1), CUDA_ERROR_INVALID_CONTEXT);
	gp__cls_context_destroyed(NULL);
	/* ctx NULL with no current context, or when the library cannot say. */
	assert_int_equal(((cls_get_fn)t[2])(&v, NULL, (void *)1), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(((cls_put_fn)t[0])(NULL, (void *)1, NULL, NULL),
			 CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(((cls_delete_fn)t[1])(NULL, (void *)1), CUDA_ERROR_INVALID_CONTEXT);
	current_error = CUDA_ERROR_DEINITIALIZED;
	assert_int_equal(((cls_get_fn)t[2])(&v, NULL, (void *)1), CUDA_ERROR_DEINITIALIZED);
	assert_int_equal(gp__cls_count(), 0);
}

static void test_cls_put_get_delete(void **state)
{
	const void *const *t = table(&id_cls);
	cls_put_fn put = (cls_put_fn)t[0];
	cls_delete_fn del = (cls_delete_fn)t[1];
	cls_get_fn get = (cls_get_fn)t[2];
	void *v = NULL;

	ndtor = 0;
	/* A miss is an error (cudart's first call on each thread is one). */
	assert_int_equal(get(&v, CTX_A, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(put(CTX_A, (void *)1, (void *)10, record_dtor), CUDA_SUCCESS);
	assert_int_equal(get(&v, CTX_A, (void *)1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)10);
	/* Keyed by (ctx, key). */
	assert_int_equal(get(&v, CTX_B, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(get(&v, CTX_A, (void *)2), CUDA_ERROR_INVALID_HANDLE);
	/* ctx NULL is the current context. */
	current = CTX_A;
	assert_int_equal(get(&v, NULL, (void *)1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)10);
	assert_int_equal(put(NULL, (void *)2, (void *)20, NULL), CUDA_SUCCESS);
	assert_int_equal(get(&v, CTX_A, (void *)2), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)20);
	/* Put again replaces, without running the old destructor. */
	assert_int_equal(put(CTX_A, (void *)1, (void *)11, record_dtor), CUDA_SUCCESS);
	assert_int_equal(get(&v, CTX_A, (void *)1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)11);
	assert_int_equal(gp__cls_count(), 2);
	/* Delete removes without running the destructor. */
	assert_int_equal(del(NULL, (void *)1), CUDA_SUCCESS);
	assert_int_equal(get(&v, CTX_A, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(del(CTX_A, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(del(CTX_A, (void *)2), CUDA_SUCCESS);
	assert_int_equal(gp__cls_count(), 0);
	assert_int_equal(ndtor, 0);
}

static void test_cls_context_destroyed(void **state)
{
	void *v;

	ndtor = 0;
	assert_int_equal(gp__cls_put(CTX_A, (void *)1, (void *)10, record_dtor), CUDA_SUCCESS);
	assert_int_equal(gp__cls_put(CTX_B, (void *)1, (void *)30, record_dtor), CUDA_SUCCESS);
	assert_int_equal(gp__cls_put(CTX_A, (void *)2, (void *)20, NULL), CUDA_SUCCESS);
	assert_int_equal(gp__cls_put(CTX_A, (void *)3, (void *)40, record_dtor), CUDA_SUCCESS);

	gp__cls_context_destroyed(CTX_A);
	/* CTX_A's destructors ran in put order with their own arguments; CTX_B's did not. */
	assert_int_equal(ndtor, 2);
	assert_ptr_equal(dtor_ctx[0], CTX_A);
	assert_ptr_equal(dtor_key[0], (void *)1);
	assert_ptr_equal(dtor_val[0], (void *)10);
	assert_ptr_equal(dtor_ctx[1], CTX_A);
	assert_ptr_equal(dtor_key[1], (void *)3);
	assert_ptr_equal(dtor_val[1], (void *)40);
	assert_int_equal(gp__cls_get(&v, CTX_A, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(gp__cls_get(&v, CTX_A, (void *)2), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(gp__cls_get(&v, CTX_B, (void *)1), CUDA_SUCCESS);
	assert_int_equal(gp__cls_count(), 1);
	/* Again: nothing left to run. */
	gp__cls_context_destroyed(CTX_A);
	assert_int_equal(ndtor, 2);

	/* A destructor may call back into the store. */
	assert_int_equal(gp__cls_put(CTX_A, (void *)5, (void *)50, reentrant_dtor), CUDA_SUCCESS);
	gp__cls_context_destroyed(CTX_A);
	assert_int_equal(ndtor, 3);
	assert_int_equal(gp__cls_get(&v, CTX_B, (void *)99), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)50);

	/* Clearing drops entries without destructors. */
	gp__cls_clear();
	assert_int_equal(gp__cls_count(), 0);
	assert_int_equal(ndtor, 3);
}

static void test_cls_out_of_memory(void **state)
{
	void *v;

	malloc_fail_countdown = 0;
	assert_int_equal(gp__cls_put(CTX_A, (void *)1, (void *)10, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(gp__cls_count(), 0);
	assert_int_equal(gp__cls_get(&v, CTX_A, (void *)1), CUDA_ERROR_INVALID_HANDLE);
	/* Replacing needs no allocation. */
	malloc_fail_countdown = -1;
	assert_int_equal(gp__cls_put(CTX_A, (void *)1, (void *)10, NULL), CUDA_SUCCESS);
	malloc_fail_countdown = 0;
	assert_int_equal(gp__cls_put(CTX_A, (void *)1, (void *)11, NULL), CUDA_SUCCESS);
	malloc_fail_countdown = -1;
	assert_int_equal(gp__cls_get(&v, CTX_A, (void *)1), CUDA_SUCCESS);
	assert_ptr_equal(v, (void *)11);
}

/* Many threads, each with its own current context, through the table's NULL-ctx path. */
#define NTHREADS 8
#define NROUNDS 2000

static void *cls_worker(void *arg)
{
	const void *const *t = arg;
	uintptr_t id = (uintptr_t)pthread_self();
	long failures = 0;

	current = (CUcontext)(id | 1);
	for (uintptr_t i = 0; i < NROUNDS; i++) {
		void *key = (void *)(i % 7 + 1), *v = NULL;

		failures += ((cls_put_fn)t[0])(NULL, key, (void *)(i + 1), NULL) != CUDA_SUCCESS;
		failures += ((cls_get_fn)t[2])(&v, NULL, key) != CUDA_SUCCESS;
		failures += v != (void *)(i + 1);
		if (i % 3 == 0)
			failures += ((cls_delete_fn)t[1])(NULL, key) != CUDA_SUCCESS;
	}
	gp__cls_context_destroyed(current);
	return (void *)failures;
}

static void test_cls_threads(void **state)
{
	const void *const *t = table(&id_cls);
	pthread_t th[NTHREADS];

	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, cls_worker, (void *)t), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *failures;

		assert_int_equal(pthread_join(th[i], &failures), 0);
		assert_int_equal((uintptr_t)failures, 0);
	}
	assert_int_equal(gp__cls_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_invalid_arguments, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_unknown_ids, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_names_and_uuid_format, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_logging, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_sizes_and_unknown_slots, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cudart_primary_ctx, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_without_host, without_host, cleanup),
		cmocka_unit_test_setup_teardown(test_hooks_buffers, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_context_checks, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_integrity_slot, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_tools_context, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_tools_context_minimal, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_tools_module, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_tools_module_minimal, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cls_invalid_arguments, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cls_put_get_delete, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cls_context_destroyed, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cls_out_of_memory, with_host, cleanup),
		cmocka_unit_test_setup_teardown(test_cls_threads, with_host, cleanup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
