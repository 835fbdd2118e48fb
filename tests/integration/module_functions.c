/* module_functions.c -- TOOLS_MODULE slot 7, what cuFFT calls to get the function of a module
 * whose kernel it does not name: each of the module's kernels handed to a callback as the
 * CUfunction cuModuleGetFunction gives, 1 returned once done, and the refusals (no kernel in
 * the module, an unloaded module, no callback), none of which is 1 or calls the callback. Run
 * directly on softgpu and through the pool, whose interposer answers it itself. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "triple_ptx.h"

#define CHECK(cond, what)                             \
	do {                                          \
		if (!(cond)) {                        \
			printf("FAILED: %s\n", what); \
			return 1;                     \
		}                                     \
	} while (0)

typedef void (*fn_cb)(void *user, void *fn);
typedef int (*module_functions_fn)(CUcontext ctx, CUmodule mod, fn_cb cb, void *user);

static const CUuuid tools_module = {{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c,
				     0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e}};

/* Two kernels and a device function, which is no kernel. */
static const char two_ptx[] = ".version 7.0\n"
			      ".target sm_52\n"
			      ".address_size 64\n"
			      ".func helper()\n{\n  ret;\n}\n"
			      ".visible .entry first()\n{\n  ret;\n}\n"
			      ".visible .entry second()\n{\n  ret;\n}\n";

/* Only a device function. */
static const char none_ptx[] = ".version 7.0\n"
			       ".target sm_52\n"
			       ".address_size 64\n"
			       ".visible .func lonely()\n{\n  ret;\n}\n";

struct seen {
	int n;
	void *fn[4];
};

/* What cuFFT's callback does (store the handle), counting the calls as well. */
static void collect(void *user, void *fn)
{
	struct seen *s = user;

	if (s->n < 4)
		s->fn[s->n] = fn;
	s->n++;
}

int main(void)
{
	const void *const *tm = NULL;
	module_functions_fn functions;
	CUmodule one, two, none;
	CUfunction f, g;
	CUcontext ctx;
	CUdevice dev;
	CUdeviceptr d;
	unsigned int v[3] = {1, 2, 3}, n = 3;
	void *args[] = {&d, &n};
	struct seen s;

	CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
	CHECK(cuGetExportTable((const void **)&tm, &tools_module) == CUDA_SUCCESS && tm,
	      "cuGetExportTable(TOOLS_MODULE)");
	CHECK((size_t)tm[0] > 0x37, "the table's size is what cuFFT requires");
	functions = (module_functions_fn)tm[7];
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev) == CUDA_SUCCESS, "context");
	CHECK(cuModuleLoadData(&one, triple_ptx) == CUDA_SUCCESS &&
		      cuModuleLoadData(&two, two_ptx) == CUDA_SUCCESS &&
		      cuModuleLoadData(&none, none_ptx) == CUDA_SUCCESS,
	      "modules");

	/* one kernel: its handle, usable as the named one is */
	memset(&s, 0, sizeof(s));
	CHECK(functions(ctx, one, collect, &s) == 1 && s.n == 1, "one kernel, one call, 1");
	CHECK(cuModuleGetFunction(&f, one, "triple") == CUDA_SUCCESS && s.fn[0] == (void *)f,
	      "the handle is cuModuleGetFunction's");
	CHECK(cuMemAlloc(&d, sizeof(v)) == CUDA_SUCCESS &&
		      cuMemcpyHtoD(d, v, sizeof(v)) == CUDA_SUCCESS,
	      "upload");
	CHECK(cuLaunchKernel((CUfunction)s.fn[0], 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) ==
			      CUDA_SUCCESS &&
		      cuMemcpyDtoH(v, d, sizeof(v)) == CUDA_SUCCESS,
	      "launch through the handle");
	CHECK(v[0] == 4 && v[1] == 7 && v[2] == 10, "the kernel ran");
	memset(&s, 0, sizeof(s));
	CHECK(functions(NULL, one, collect, &s) == 1 && s.n == 1 && s.fn[0] == (void *)f,
	      "NULL context means current");

	/* two kernels: both, in cuModuleEnumerateFunctions's order; the device function not */
	memset(&s, 0, sizeof(s));
	CHECK(functions(ctx, two, collect, &s) == 1 && s.n == 2, "two kernels, two calls");
	CHECK(cuModuleGetFunction(&f, two, "first") == CUDA_SUCCESS &&
		      cuModuleGetFunction(&g, two, "second") == CUDA_SUCCESS,
	      "the two by name");
	{
		CUfunction e[2];

		CHECK(cuModuleEnumerateFunctions(e, 2, two) == CUDA_SUCCESS &&
			      s.fn[0] == (void *)e[0] && s.fn[1] == (void *)e[1],
		      "in enumeration order");
		CHECK((e[0] == f && e[1] == g) || (e[0] == g && e[1] == f), "the two kernels");
	}

	/* refusals: never 1, the callback not called */
	memset(&s, 0, sizeof(s));
	CHECK(functions(ctx, none, collect, &s) == CUDA_ERROR_NOT_FOUND && s.n == 0,
	      "a module without a kernel");
	CHECK(functions(ctx, two, NULL, &s) == CUDA_ERROR_INVALID_HANDLE, "no callback");
	CHECK(functions(ctx, NULL, collect, &s) == CUDA_ERROR_INVALID_HANDLE && s.n == 0,
	      "no module");
	CHECK(cuModuleUnload(two) == CUDA_SUCCESS, "unload");
	CHECK(functions(ctx, two, collect, &s) == CUDA_ERROR_INVALID_HANDLE && s.n == 0,
	      "an unloaded module");

	CHECK(cuMemFree(d) == CUDA_SUCCESS && cuModuleUnload(one) == CUDA_SUCCESS &&
		      cuModuleUnload(none) == CUDA_SUCCESS && cuCtxDestroy(ctx) == CUDA_SUCCESS,
	      "cleanup");
	printf("OK: module functions through TOOLS_MODULE slot 7\n");
	return 0;
}
