/* limits.c -- device memory a session uses without allocating it still counts against its
 * limit: a module's globals and the context's malloc heap. Run in a session with a 64 MiB
 * limit (GPUPOOL_MEMORY=64M); prints one line per check and exits 0 when all hold. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

static const char *module_with(unsigned long long bytes, char *buf, size_t len)
{
	snprintf(buf, len,
		 ".version 8.0\n.target sm_75\n.address_size 64\n"
		 ".visible .global .align 8 .b8 big[%llu];\n"
		 ".visible .entry touch(.param .u64 p)\n{\n\tret;\n}\n",
		 bytes);
	return buf;
}

static int check(const char *what, CUresult got, CUresult want)
{
	const char *name = NULL;

	cuGetErrorName(got, &name);
	printf("%s: %s\n", what, name ? name : "?");
	return got == want ? 0 : 1;
}

int main(void)
{
	char ptx[512];
	CUcontext ctx;
	CUmodule small, big;
	CUdeviceptr d, global, base;
	CUdevice dev;
	size_t fr0, fr1, tot, bytes = 0;
	int bad = 0;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
		return 2;
	cuMemGetInfo(&fr0, &tot);
	/* 16 MiB of globals fit in 64 MiB and show as used. */
	bad |= check("module with 16 MiB of globals",
		     cuModuleLoadData(&small, module_with(16ull << 20, ptx, sizeof(ptx))),
		     CUDA_SUCCESS);
	cuMemGetInfo(&fr1, &tot);
	printf("free before %zu after %zu of %zu\n", fr0, fr1, tot);
	bad |= fr0 - fr1 < (16u << 20);
	bad |= check("its global", cuModuleGetGlobal(&global, &bytes, small, "big"), CUDA_SUCCESS);
	bad |= bytes != (16u << 20);
	/* 96 MiB do not: the load is refused and undone. */
	bad |= check("module with 96 MiB of globals",
		     cuModuleLoadData(&big, module_with(96ull << 20, ptx, sizeof(ptx))),
		     CUDA_ERROR_OUT_OF_MEMORY);
	/* Neither does a 128 MiB device heap, nor an allocation past what is left. */
	bad |= check("128 MiB malloc heap", cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 128u << 20),
		     CUDA_ERROR_OUT_OF_MEMORY);
	bad |= check("a 16 MiB heap", cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16u << 20),
		     CUDA_SUCCESS);
	bad |= check("40 MiB more", cuMemAlloc(&d, 40u << 20), CUDA_ERROR_OUT_OF_MEMORY);
	/* Unloading gives the module's memory back. */
	bad |= check("the global's range", cuMemGetAddressRange(&base, NULL, global + 8),
		     CUDA_SUCCESS);
	bad |= base != global;
	bad |= check("unload", cuModuleUnload(small), CUDA_SUCCESS);
	bad |= check("the global's range after the unload",
		     cuMemGetAddressRange(&base, NULL, global), CUDA_ERROR_NOT_FOUND);
	bad |= check("40 MiB after the unload", cuMemAlloc(&d, 40u << 20), CUDA_SUCCESS);
	printf("%s\n", bad ? "FAILED" : "PASSED");
	return bad;
}
