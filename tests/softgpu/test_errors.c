/* test_errors.c -- failures on purpose: faults are sticky errors, bad calls get the driver's error codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sgtest.h"

/* Each test gets a fresh context: a fault poisons the one it happens in. */
static int fresh(void **state)
{
	return sgt_setup(state);
}

static int drop(void **state)
{
	return sgt_teardown(state);
}

/* faults.ptx loaded once per context */
static CUfunction fn(const char *name)
{
	static CUmodule m;
	static unsigned long long owner;
	unsigned long long cur = 0;

	cuCtxGetId(NULL, &cur);
	if (m == NULL || owner != cur) {
		m = sgt_module("faults.ptx");
		owner = cur;
	}
	return sgt_function(m, name);
}

static void expect_fault(CUresult want)
{
	CUdeviceptr p;

	CK_EQ(cuCtxSynchronize(), want);
	/* sticky: the context stays failed */
	CK_EQ(cuMemAlloc(&p, 16), want);
	CK_EQ(cuCtxSynchronize(), want);
	CK_EQ(cuLaunchKernel(fn("trap_kernel"), 1, 1, 1, 1, 1, 1, 0, NULL, (void *[]){&p}, NULL),
	      want);
}

static void test_oob_write(void **state)
{
	CUdeviceptr p;
	long long idx = 64; /* one past the end */
	int v = 7;

	CK(cuMemAlloc(&p, 64 * sizeof(int)));
	void *args[] = {&p, &idx, &v};
	/* the launch itself is fine; the fault surfaces at the next synchronization */
	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void test_oob_read_far(void **state)
{
	CUdeviceptr p, out;
	long long idx = -(1ll << 40);

	CK(cuMemAlloc(&p, 256));
	CK(cuMemAlloc(&out, 4));
	void *args[] = {&p, &idx, &out};
	CK(cuLaunchKernel(fn("read_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void test_in_bounds_ok(void **state)
{
	CUdeviceptr p;
	long long idx = 63;
	int v = 11, got;

	CK(cuMemAlloc(&p, 64 * sizeof(int)));
	void *args[] = {&p, &idx, &v};
	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(&got, p + 63 * sizeof(int), sizeof(int)));
	assert_int_equal(got, 11);
}

static void test_use_after_free(void **state)
{
	CUdeviceptr p;
	long long idx = 0;
	int v = 1;
	CUfunction f =
		fn("write_at"); /* loaded first: its globals must not reuse the freed range */

	CK(cuMemAlloc(&p, 4096));
	CK(cuMemFree(p));
	void *args[] = {&p, &idx, &v};
	CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* A call through a value that is no function's address faults like a wild pointer. */
static void test_call_bad_pointer(void **state)
{
	CUmodule m = sgt_module("funcptr.ptx");
	CUdeviceptr p;
	unsigned long long bad = 0x1234560;

	fn("trap_kernel"); /* loaded before the fault, for expect_fault */
	CK(cuMemAlloc(&p, 64 * sizeof(float)));
	CK(cuLaunchKernel(sgt_function(m, "call_bad"), 1, 1, 1, 32, 1, 1, 0, NULL,
			  (void *[]){&p, &bad}, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* A call whose prototype does not match the function the pointer names. */
static void test_call_prototype_mismatch(void **state)
{
	CUmodule m = sgt_module("funcptr.ptx");
	CUdeviceptr p;

	fn("trap_kernel");
	CK(cuMemAlloc(&p, 64 * sizeof(int)));
	CK(cuLaunchKernel(sgt_function(m, "call_mismatch"), 1, 1, 1, 32, 1, 1, 0, NULL,
			  (void *[]){&p}, NULL));
	expect_fault(CUDA_ERROR_LAUNCH_FAILED);
}

static void test_null_pointer(void **state)
{
	CUdeviceptr p = 0;
	long long idx = 0;
	int v = 1;
	void *args[] = {&p, &idx, &v};

	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void test_misaligned(void **state)
{
	CUdeviceptr p;

	CK(cuMemAlloc(&p, 64));
	void *args[] = {&p};
	CK(cuLaunchKernel(fn("misaligned"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_MISALIGNED_ADDRESS);
}

static void test_shared_oob(void **state)
{
	CUdeviceptr out;
	int idx = 4096;

	CK(cuMemAlloc(&out, 64 * sizeof(int)));
	void *args[] = {&idx, &out};
	CK(cuLaunchKernel(fn("shared_oob"), 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void test_trap(void **state)
{
	CUdeviceptr p;

	CK(cuMemAlloc(&p, 64 * sizeof(int)));
	void *args[] = {&p};
	CK(cuLaunchKernel(fn("trap_kernel"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_LAUNCH_FAILED);
}

static void test_assert(void **state)
{
	int v[32];
	CUdeviceptr p;

	for (int i = 0; i < 32; i++)
		v[i] = i == 9 ? -1 : i;
	CK(cuMemAlloc(&p, sizeof(v)));
	CK(cuMemcpyHtoD(p, v, sizeof(v)));
	void *args[] = {&p};
	CK(cuLaunchKernel(fn("assert_kernel"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ASSERT);
}

static void test_stack_overflow(void **state)
{
	CUdeviceptr p;

	CK(cuMemAlloc(&p, 16));
	void *args[] = {&p};
	CK(cuLaunchKernel(fn("recurse_forever"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void test_deadlock(void **state)
{
	CUdeviceptr p;

	CK(cuMemAlloc(&p, 64 * sizeof(int)));
	void *args[] = {&p};
	CK(cuLaunchKernel(fn("deadlock"), 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	expect_fault(CUDA_ERROR_LAUNCH_FAILED);
}

/* A failed context does not affect another one; destroying it works. */
static void test_fault_isolation(void **state)
{
	CUcontext bad = *state, good;
	CUdevice dev;
	CUdeviceptr p, q;
	long long idx = 1 << 20;
	int v = 1;

	CK(cuMemAlloc(&p, 16));
	void *args[] = {&p, &idx, &v};
	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CK(cuCtxGetDevice(&dev));
	CK(cuCtxCreate(&good, NULL, 0, dev));
	CK(cuMemAlloc(&q, 16));
	CK(cuMemFree(q));
	CK(cuCtxPopCurrent(NULL));
	CK(cuCtxDestroy(good));
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	(void)bad;
}

/* The primary context recovers after cuDevicePrimaryCtxReset. */
static void test_primary_reset(void **state)
{
	CUcontext prim, saved;
	CUdeviceptr p;
	long long idx = 100000;
	int v = 1;

	CK(cuCtxPopCurrent(&saved));
	CK(cuDevicePrimaryCtxRetain(&prim, 0));
	CK(cuCtxPushCurrent(prim));
	CK(cuMemAlloc(&p, 16));
	void *args[] = {&p, &idx, &v};
	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CK(cuDevicePrimaryCtxReset(0));
	CK(cuCtxSynchronize());
	CK(cuMemAlloc(&p, 16));
	CK(cuMemFree(p));
	CK(cuCtxPopCurrent(NULL));
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuCtxPushCurrent(saved));
}

static void expect_load(const char *ptx, CUresult want, const char *needle)
{
	CUmodule m;
	char log[512] = "";
	CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[] = {log, (void *)(uintptr_t)sizeof(log)};

	CK_EQ(cuModuleLoadDataEx(&m, ptx, 2, opts, vals), want);
	if (strstr(log, needle) == NULL)
		print_error("log \"%s\" does not mention \"%s\"\n", log, needle);
	assert_non_null(strstr(log, needle));
}

/*
 * Functions are lowered on first use: the module (and a library of the same image) loads,
 * and the kernel fails at cuModuleGetFunction / cuLibraryGetKernel with `want`, softgpu's
 * log (SOFTGPU_LOG, set in main) naming `needle`.
 */
static void expect_kernel(const char *ptx, const char *kernel, CUresult want, const char *needle)
{
	CUmodule m;
	CUfunction f;
	CUlibrary lib;
	CUkernel k;
	char log[4096];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;
	CUresult r;

	assert_non_null(tmp);
	assert_true(saved >= 0);
	CK(cuModuleLoadData(&m, ptx));
	fflush(stderr);
	dup2(fileno(tmp), 2);
	r = cuModuleGetFunction(&f, m, kernel);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(log, 1, sizeof(log) - 1, tmp);
	log[n] = 0;
	fclose(tmp);
	CK_EQ(r, want);
	if (strstr(log, needle) == NULL)
		print_error("log \"%s\" does not mention \"%s\"\n", log, needle);
	assert_non_null(strstr(log, needle));
	/* the same again: the failure is kept, not retried */
	CK_EQ(cuModuleGetFunction(&f, m, kernel), want);
	CK(cuModuleUnload(m));
	CK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CK_EQ(cuLibraryGetKernel(&k, lib, kernel), want);
	CK(cuLibraryUnload(lib));
}

static void test_unsupported_instruction(void **state)
{
	char *ptx = sgt_read("texture.ptx", NULL);

	expect_kernel(ptx, "tex_read", CUDA_ERROR_NOT_SUPPORTED, "sured.b.add.2d.u32.trap");
	expect_kernel(ptx, "tex_read", CUDA_ERROR_NOT_SUPPORTED, "line 30");
	free(ptx);
}

/*
 * An instruction softgpu does not implement fails the kernel that uses it (and every kernel
 * that calls a function using it), not the module: the module's other kernels run.
 */
static void test_unsupported_kernel_only(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_120\n.address_size 64\n"
		".func helper()\n{\n\tmbarrier.init.shared.b64 [%rd1], 1;\n"
		"\tret;\n}\n"
		".visible .entry bad()\n{\n\tcp.async.bulk.commit_group;\n\tret;\n}\n"
		".visible .entry calls_bad()\n{\n\tcall.uni helper, ();\n\tret;\n}\n"
		".visible .entry good(.param .u64 out)\n{\n\t.reg .b32 %r<2>;\n"
		"\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, 42;\n"
		"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n";
	CUmodule m;
	CUfunction fns[3], good;
	CUfunctionLoadingState st;
	unsigned count = 0;
	CUdeviceptr out;
	int v = 0;

	expect_kernel(ptx, "bad", CUDA_ERROR_NOT_SUPPORTED, "'bad': line 11: ");
	expect_kernel(ptx, "bad", CUDA_ERROR_NOT_SUPPORTED, "cp.async.bulk.commit_group");
	expect_kernel(ptx, "calls_bad", CUDA_ERROR_NOT_SUPPORTED, "'calls_bad' calls 'helper'");
	expect_kernel(ptx, "calls_bad", CUDA_ERROR_NOT_SUPPORTED, "mbarrier.init.shared.b64");
	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunctionCount(&count, m));
	assert_int_equal(count, 3);
	CK(cuModuleEnumerateFunctions(fns, 3, m));
	CK(cuFuncIsLoaded(&st, fns[0]));
	assert_int_equal(st, CU_FUNCTION_LOADING_STATE_UNLOADED);
	/* an enumerated handle of a kernel that cannot run fails its launch */
	CK_EQ(cuLaunchKernel(fns[0], 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	      CUDA_ERROR_NOT_SUPPORTED);
	CK_EQ(cuFuncLoad(fns[1]), CUDA_ERROR_NOT_SUPPORTED);
	CK(cuModuleGetFunction(&good, m, "good"));
	CK(cuFuncIsLoaded(&st, good));
	assert_int_equal(st, CU_FUNCTION_LOADING_STATE_LOADED);
	CK(cuMemAlloc(&out, 4));
	CK(cuLaunchKernel(good, 1, 1, 1, 1, 1, 1, 0, NULL, (void *[]){&out}, NULL));
	CK(cuMemcpyDtoH(&v, out, 4));
	assert_int_equal(v, 42);
	CK(cuMemFree(out));
	CK(cuModuleUnload(m));
}

static void test_bad_ptx(void **state)
{
	const char *hdr = ".version 9.0\n.target sm_75\n.address_size 64\n";
	char buf[1024];

	CUmodule m;

	/* a malformed body fails its kernel when it is lowered */
	snprintf(buf, sizeof(buf), "%s.visible .entry k()\n{\n\tfrobnicate.u32 %%r1;\n}\n", hdr);
	expect_kernel(buf, "k", CUDA_ERROR_INVALID_PTX,
		      "line 6: unknown instruction 'frobnicate.u32'");
	snprintf(buf, sizeof(buf),
		 "%s.visible .entry k()\n{\n\t.reg .b32 %%r<2>;\n"
		 "\tadd.u32 %%r1, %%r9, 1;\n}\n",
		 hdr);
	expect_kernel(buf, "k", CUDA_ERROR_INVALID_PTX, "line 7: unknown register '%r9'");
	snprintf(buf, sizeof(buf), "%s.visible .entry k()\n{\n\tbra $nowhere;\n}\n", hdr);
	expect_kernel(buf, "k", CUDA_ERROR_INVALID_PTX, "undefined label '$nowhere'");
	/* a malformed module structure fails the load */
	snprintf(buf, sizeof(buf), "%s.visible .entry k(\n", hdr);
	expect_load(buf, CUDA_ERROR_INVALID_PTX, "line");
	snprintf(buf, sizeof(buf), "%s.visible .entry k()\n{\n\tret;\n", hdr);
	expect_load(buf, CUDA_ERROR_INVALID_PTX, "'}'");
	expect_load(".version 9.0\n.target foo_80\n.address_size 64\n", CUDA_ERROR_NOT_SUPPORTED,
		    "foo_80");
	/* newer targets and every PTX ISA 9.x are taken; 10.0 is not */
	CK(cuModuleLoadData(&m, ".version 9.0\n.target sm_80\n.address_size 64\n"));
	CK(cuModuleUnload(m));
	CK(cuModuleLoadData(&m, ".version 9.1\n.target sm_121a\n.address_size 64\n"));
	CK(cuModuleUnload(m));
	expect_load(".version 10.0\n.target sm_75\n.address_size 64\n",
		    CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "10.0");
	snprintf(buf, sizeof(buf),
		 "%s.visible .entry k()\n{\n\t.reg .b32 %%r<2>;\n\t.reg .b64 %%rd<2>;\n"
		 "\twmma.load.a.sync.aligned.row.m8n8k32.s4 {%%r1}, [%%rd1], 32;\n}\n",
		 hdr);
	expect_kernel(buf, "k", CUDA_ERROR_NOT_SUPPORTED,
		      "wmma.load.a.sync.aligned.row.m8n8k32.s4");
}

/* Lowers every kernel of m (each may fail, none may crash), then unloads it. */
static void lower_all_and_unload(CUmodule m)
{
	CUfunction fns[64];
	unsigned count = 0;

	CK(cuModuleGetFunctionCount(&count, m));
	if (count > 64)
		count = 64;
	CK(cuModuleEnumerateFunctions(fns, count, m));
	for (unsigned i = 0; i < count; i++) {
		CUresult r = cuFuncLoad(fns[i]);

		assert_true(r == CUDA_SUCCESS || r == CUDA_ERROR_INVALID_PTX ||
			    r == CUDA_ERROR_NOT_SUPPORTED);
	}
	CK(cuModuleUnload(m));
}

/* Truncated and corrupted PTX never crashes the loader, nor lowering. */
static void test_ptx_robustness(void **state)
{
	const char *files[] = {"matmul.ptx", "mathf.ptx", "devfunc.ptx", "warp.ptx", "printf.ptx"};
	uint32_t seed = 1;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t n;
		char *ptx = sgt_read(files[f], &n), *copy = malloc(n + 1);

		for (size_t cut = 0; cut < n; cut += n / 150 + 1) {
			CUmodule m;

			memcpy(copy, ptx, cut);
			copy[cut] = 0;
			if (cuModuleLoadData(&m, copy) == CUDA_SUCCESS)
				lower_all_and_unload(m);
		}
		for (int k = 0; k < 200; k++) {
			CUmodule m;

			memcpy(copy, ptx, n + 1);
			for (int j = 0; j < 3; j++)
				copy[sgt_rand(&seed) % n] =
					(char)(" ;,.%[]{}()0x9az_-+@!\n"[sgt_rand(&seed) % 22]);
			if (cuModuleLoadData(&m, copy) == CUDA_SUCCESS)
				lower_all_and_unload(m);
		}
		free(copy);
		free(ptx);
	}
}

/* head, then pre, n copies of open, mid, n copies of close, post: one PTX text. */
static char *nested(const char *head, const char *pre, const char *open, const char *mid,
		    const char *close, const char *post, size_t n)
{
	size_t lo = strlen(open), lc = strlen(close);
	char *s =
		malloc(strlen(head) + strlen(pre) + n * (lo + lc) + strlen(mid) + strlen(post) + 1);
	char *p;

	assert_non_null(s);
	p = stpcpy(stpcpy(s, head), pre);
	for (size_t i = 0; i < n; i++, p += lo)
		memcpy(p, open, lo);
	p = stpcpy(p, mid);
	for (size_t i = 0; i < n; i++, p += lc)
		memcpy(p, close, lc);
	strcpy(p, post);
	return s;
}

/* Nesting deeper than any real PTX is an error, not a stack overflow. */
static void test_ptx_deep_nesting(void **state)
{
	static const char hdr[] = ".version 8.0\n.target sm_75\n.address_size 64\n";
	static const char fn[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
				 ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n"
				 "\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\t";
	static const struct {
		const char *head, *pre, *open, *mid, *close, *post;
	} cases[] = {
		{hdr, ".global .b32 x[1] = ", "{", "1", "}", ";\n"},
		{fn, "selp.b32 %r1, 1, 0, ", "!", "%p1", "", ";\n}\n"},
		{fn, "mov.u32 %r1, ", "-", "1", "", ";\n}\n"},
		{fn, "mov.b64 %rd1, ", "{", "%r1", "}", ";\n}\n"},
		{fn, "setp.eq.u32 %p1", "|%p1", "", "", ", %r1, 0;\n}\n"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *ptx = nested(cases[i].head, cases[i].pre, cases[i].open, cases[i].mid,
				   cases[i].close, cases[i].post, 1000000);

		if (i == 0)
			expect_load(ptx, CUDA_ERROR_INVALID_PTX, "nested too deeply");
		else
			expect_kernel(ptx, "k", CUDA_ERROR_INVALID_PTX, "nested too deeply");
		free(ptx);
	}
}

/* A call chain as long as the module loads: the loader walks it without recursing. */
static void test_ptx_long_call_chain(void **state)
{
	const unsigned n = 200000;
	char *ptx = malloc((size_t)n * 80 + 256), *p = ptx;
	CUmodule m;
	CUfunction f;

	assert_non_null(ptx);
	p += sprintf(p, ".version 8.0\n.target sm_75\n.address_size 64\n");
	for (unsigned i = 0; i <= n; i++)
		p += sprintf(p, ".func f%u();\n", i);
	p += sprintf(p, ".func f%u()\n{\n\tret;\n}\n", n);
	for (unsigned i = 0; i < n; i++)
		p += sprintf(p, ".func f%u()\n{\n\tcall.uni f%u, ();\n\tret;\n}\n", i, i + 1);
	sprintf(p, ".visible .entry k()\n{\n\tcall.uni f0, ();\n\tret;\n}\n");
	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&f, m, "k")); /* lowers the whole chain */
	CK(cuModuleUnload(m));
	free(ptx);
}

static void test_memory_errors(void **state)
{
	CUdeviceptr p, q;
	size_t freeb, total;
	char host[64];

	CK(cuMemAlloc(&p, 64));
	CK_EQ(cuMemAlloc(&q, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemAlloc(&q, (size_t)1 << 50), CUDA_ERROR_OUT_OF_MEMORY);
	CK(cuMemGetInfo(&freeb, &total));
	{
		size_t dev_total;

		CK(cuDeviceTotalMem(&dev_total, 0));
		assert_int_equal(total, dev_total);
		assert_true(freeb < total);
	}
	CK_EQ(cuMemAlloc(&q, freeb + 4096), CUDA_ERROR_OUT_OF_MEMORY);
	/* copies must stay inside one allocation */
	CK_EQ(cuMemcpyHtoD(p, host, 65), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemcpyDtoH(host, p + 8, 64), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemcpyHtoD(p + 64, host, 1), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemsetD32(p + 2, 0, 4), CUDA_ERROR_INVALID_VALUE); /* misaligned */
	CK_EQ(cuMemsetD16(p + 1, 0, 4), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemsetD8(p, 0, 65), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemcpyHtoD(p, host, 64));
	CK(cuMemcpyHtoD(p, host, 0));
	/* freed pointers */
	CK(cuMemFree(p));
	CK_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemcpyHtoD(p, host, 4), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuMemsetD8(p, 0, 4), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAlloc(&p, 64));
	CK_EQ(cuMemFree(p + 4), CUDA_ERROR_INVALID_VALUE); /* not the start of an allocation */
	CK(cuMemFree(p));
}

static void test_launch_errors(void **state)
{
	CUdeviceptr p;
	CUfunction f = fn("write_at");
	long long idx = 0;
	int v = 0;
	void *args[] = {&p, &idx, &v};

	CK(cuMemAlloc(&p, 16));
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 1, 70000, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 100000, NULL, args, NULL),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuLaunchKernel((CUfunction)&v, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	      CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)&v, args, NULL),
	      CUDA_ERROR_INVALID_HANDLE);
	CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
}

static void test_handle_errors(void **state)
{
	CUmodule m = sgt_module("vector_add.ptx");
	CUfunction f;
	CUstream s;
	CUevent e;
	CUcontext other, mine;
	CUdeviceptr p;
	int junk;

	CK(cuModuleUnload(m));
	CK_EQ(cuModuleGetFunction(&f, m, "vector_add"), CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
	CK(cuStreamCreate(&s, 0));
	CK(cuStreamDestroy(s));
	CK_EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuStreamQuery((CUstream)&junk), CUDA_ERROR_INVALID_HANDLE);
	CK(cuEventCreate(&e, 0));
	CK(cuEventDestroy(e));
	CK_EQ(cuEventRecord(e, NULL), CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuEventSynchronize(e), CUDA_ERROR_INVALID_HANDLE);
	CK_EQ(cuModuleGetFunction(&f, (CUmodule)&junk, "x"), CUDA_ERROR_INVALID_HANDLE);
	/* a function belongs to its module's context */
	m = sgt_module("vector_add.ptx");
	f = sgt_function(m, "vector_add");
	CK(cuCtxGetCurrent(&mine));
	CK(cuCtxCreate(&other, NULL, 0, 0));
	CK(cuMemAlloc(&p, 64));
	int n = 1;
	void *args[] = {&p, &p, &p, &n};
	CK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
	CK(cuCtxDestroy(other));
	/* the destroyed context was on top of the stack: the one below is current again */
	CK_EQ(cuCtxPushCurrent(other), CUDA_ERROR_INVALID_CONTEXT);
	CK_EQ(cuCtxSetCurrent(other), CUDA_ERROR_INVALID_CONTEXT);
	CK_EQ(cuCtxGetDevice_v2((CUdevice *)&junk, other), CUDA_ERROR_INVALID_CONTEXT);
	{
		CUcontext cur;

		CK(cuCtxGetCurrent(&cur));
		assert_ptr_equal(cur, mine);
	}
	CK(cuMemAlloc(&p, 64));
	CK(cuMemFree(p));
	CK(cuModuleUnload(m));
}

/* Device memory of one context faults in a kernel of another. */
static void test_wrong_context_memory(void **state)
{
	CUcontext mine, other;
	CUdeviceptr p;
	long long idx = 0;
	int v = 3;

	CK(cuCtxGetCurrent(&mine));
	CK(cuMemAlloc(&p, 64));
	CK(cuCtxCreate(&other, NULL, 0, 0));
	void *args[] = {&p, &idx, &v};
	CK(cuLaunchKernel(fn("write_at"), 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CK(cuCtxDestroy(other));
	CK(cuCtxSetCurrent(mine));
	CK(cuMemFree(p));
}

/* Before cuInit, in a child process so this one stays initialised. */
static void test_not_initialized(void **state)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child inherits initialised state; only a fresh process can see it uninitialised */
		execl("/proc/self/exe", "test_softgpu_errors", "--uninit", (char *)NULL);
		_exit(99);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int uninit_checks(void)
{
	CUdeviceptr p;
	int n = 0, v = 0;
	CUcontext c;

	if (cuDriverGetVersion(&v) != CUDA_SUCCESS || v != 13000)
		return 1;
	if (cuMemAlloc(&p, 4) != CUDA_ERROR_NOT_INITIALIZED ||
	    cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED ||
	    cuCtxGetCurrent(&c) != CUDA_ERROR_NOT_INITIALIZED ||
	    cuInit(1) != CUDA_ERROR_INVALID_VALUE)
		return 2;
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n != 1)
		return 3;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_oob_write, fresh, drop),
		cmocka_unit_test_setup_teardown(test_call_bad_pointer, fresh, drop),
		cmocka_unit_test_setup_teardown(test_call_prototype_mismatch, fresh, drop),
		cmocka_unit_test_setup_teardown(test_oob_read_far, fresh, drop),
		cmocka_unit_test_setup_teardown(test_in_bounds_ok, fresh, drop),
		cmocka_unit_test_setup_teardown(test_use_after_free, fresh, drop),
		cmocka_unit_test_setup_teardown(test_null_pointer, fresh, drop),
		cmocka_unit_test_setup_teardown(test_misaligned, fresh, drop),
		cmocka_unit_test_setup_teardown(test_shared_oob, fresh, drop),
		cmocka_unit_test_setup_teardown(test_trap, fresh, drop),
		cmocka_unit_test_setup_teardown(test_assert, fresh, drop),
		cmocka_unit_test_setup_teardown(test_stack_overflow, fresh, drop),
		cmocka_unit_test_setup_teardown(test_deadlock, fresh, drop),
		cmocka_unit_test_setup_teardown(test_fault_isolation, fresh, drop),
		cmocka_unit_test_setup_teardown(test_primary_reset, fresh, drop),
		cmocka_unit_test_setup_teardown(test_unsupported_instruction, fresh, drop),
		cmocka_unit_test_setup_teardown(test_unsupported_kernel_only, fresh, drop),
		cmocka_unit_test_setup_teardown(test_bad_ptx, fresh, drop),
		cmocka_unit_test_setup_teardown(test_ptx_robustness, fresh, drop),
		cmocka_unit_test_setup_teardown(test_ptx_deep_nesting, fresh, drop),
		cmocka_unit_test_setup_teardown(test_ptx_long_call_chain, fresh, drop),
		cmocka_unit_test_setup_teardown(test_memory_errors, fresh, drop),
		cmocka_unit_test_setup_teardown(test_launch_errors, fresh, drop),
		cmocka_unit_test_setup_teardown(test_handle_errors, fresh, drop),
		cmocka_unit_test_setup_teardown(test_wrong_context_memory, fresh, drop),
		cmocka_unit_test(test_not_initialized),
	};

	if (argc > 1 && strcmp(argv[1], "--uninit") == 0)
		return uninit_checks();
	/* why a kernel cannot run is only in softgpu's log (expect_kernel reads it) */
	setenv("SOFTGPU_LOG", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
