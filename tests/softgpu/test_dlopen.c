/* test_dlopen.c -- softgpu loaded as the daemon's worker loads a driver: dlopen + dlsym by name. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#ifndef SOFTGPU_PATH
#error SOFTGPU_PATH must name the built libcuda.so.1
#endif
#ifndef KERNEL_DIR
#error KERNEL_DIR must name the directory of the nvcc-built kernels
#endif

#define FAIL(...)                             \
	do {                                  \
		fprintf(stderr, __VA_ARGS__); \
		return 1;                     \
	} while (0)

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*ctx_fn)(CUcontext *, CUctxCreateParams *, unsigned, CUdevice);
typedef CUresult (*load_fn)(CUmodule *, const void *);
typedef CUresult (*getfn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, CUstream, void **, void **);

int main(void)
{
	void *h = dlopen(SOFTGPU_PATH, RTLD_NOW | RTLD_LOCAL);
	char path[4096], *ptx;
	FILE *f;
	long n;
	CUcontext ctx;
	CUmodule m;
	CUfunction fn;
	CUdeviceptr a, b, c;
	float x[64], y[64], z[64];
	int count = 64;

	if (h == NULL)
		FAIL("dlopen: %s\n", dlerror());
	/* the versioned names cuda.h maps to, and nothing of softgpu's own */
	if (dlsym(h, "sg_block_run") || dlsym(h, "gp_image_size") || dlsym(h, "sg_log"))
		FAIL("internal symbols are exported\n");
	init_fn init = (init_fn)dlsym(h, "cuInit");
	ctx_fn create = (ctx_fn)dlsym(h, "cuCtxCreate_v4");
	load_fn load = (load_fn)dlsym(h, "cuModuleLoadData");
	getfn_fn getfn = (getfn_fn)dlsym(h, "cuModuleGetFunction");
	alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
	htod_fn htod = (htod_fn)dlsym(h, "cuMemcpyHtoD_v2");
	dtoh_fn dtoh = (dtoh_fn)dlsym(h, "cuMemcpyDtoH_v2");
	launch_fn launch = (launch_fn)dlsym(h, "cuLaunchKernel");

	if (!init || !create || !load || !getfn || !alloc || !htod || !dtoh || !launch)
		FAIL("missing exports\n");
	snprintf(path, sizeof(path), "%s/vector_add.ptx", KERNEL_DIR);
	f = fopen(path, "rb");
	if (f == NULL)
		FAIL("no %s\n", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	ptx = calloc(1, (size_t)n + 1);
	if (ptx == NULL || fread(ptx, 1, (size_t)n, f) != (size_t)n)
		FAIL("read %s\n", path);
	fclose(f);
	for (int i = 0; i < 64; i++) {
		x[i] = (float)i;
		y[i] = (float)(2 * i);
	}
	if (init(0) || create(&ctx, NULL, 0, 0) || load(&m, ptx) || getfn(&fn, m, "vector_add") ||
	    alloc(&a, sizeof(x)) || alloc(&b, sizeof(y)) || alloc(&c, sizeof(z)) ||
	    htod(a, x, sizeof(x)) || htod(b, y, sizeof(y)))
		FAIL("setup failed\n");
	void *args[] = {&a, &b, &c, &count};
	if (launch(fn, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL) || dtoh(z, c, sizeof(z)))
		FAIL("launch failed\n");
	for (int i = 0; i < 64; i++)
		if (z[i] != 3.0f * (float)i)
			FAIL("z[%d] = %f\n", i, (double)z[i]);
	free(ptx);
	/* dlclose must be harmless while softgpu's threads exist (the library stays mapped) */
	dlclose(h);
	printf("ok\n");
	return 0;
}
