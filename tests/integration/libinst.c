/* libinst.c -- a library's module is made in each context that uses it, and each one is
 * device memory the session is charged for: here a 16 MiB global, counted once per context
 * and released with the context or the library. Run with GPUPOOL_MEMORY=256M ("fit"), or
 * with 24M ("over": the second context's copy does not fit, and is neither made nor used);
 * "nocurrent": the library is first used on a thread with no current context. */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#define MIB (1u << 20)
#define BIG (16 * MIB)

static const char ptx[] = ".version 7.0\n"
			  ".target sm_52\n"
			  ".address_size 64\n"
			  ".visible .global .align 4 .b8 big[16777216];\n"
			  ".visible .entry touch()\n"
			  "{\n"
			  "  .reg .u32 %r<2>;\n"
			  "  .reg .u64 %rd<4>;\n"
			  "  mov.u32 %r1, %tid.x;\n"
			  "  mov.u64 %rd1, big;\n"
			  "  mul.wide.u32 %rd2, %r1, 4;\n"
			  "  add.u64 %rd3, %rd1, %rd2;\n"
			  "  st.global.u32 [%rd3], %r1;\n"
			  "  ret;\n"
			  "}\n";

#define CHECK(what, got, want)                                                           \
	do {                                                                             \
		CUresult r_ = (got);                                                     \
		if (r_ != (want)) {                                                      \
			printf("FAILED: %s returned %d, expected %d\n", what, r_, want); \
			return 1;                                                        \
		}                                                                        \
	} while (0)

static size_t free_mem(void)
{
	size_t fr = 0, tot = 0;

	cuMemGetInfo(&fr, &tot);
	return fr;
}

static CUresult touch(CUkernel k)
{
	return cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
}

int main(int argc, char **argv)
{
	int over = argc > 1 && strcmp(argv[1], "over") == 0;
	int nocurrent = argc > 1 && strcmp(argv[1], "nocurrent") == 0;
	CUcontext a, b;
	CUdevice dev;
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr g;
	size_t f0, f1, f2, fctx, bytes;
	unsigned host[32];

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&b, NULL, 0, dev))
		return 2;
	fctx = free_mem();
	if (cuCtxCreate(&a, NULL, 0, dev))
		return 2;
	f0 = free_mem();
	/* What a context holds of its own (its default heap and printf buffer). */
	fctx -= f0;
	if (nocurrent) {
		/* First used on a thread with no context: still charged, wherever it is made. */
		CUcontext popped;

		CHECK("cuCtxPopCurrent", cuCtxPopCurrent(&popped), CUDA_SUCCESS);
	}
	CHECK("cuLibraryLoadData", cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0),
	      CUDA_SUCCESS);
	/* Loaded (lazily: by now at the latest) in the current context. */
	CHECK("cuLibraryGetKernel", cuLibraryGetKernel(&k, lib, "touch"), CUDA_SUCCESS);
	if (nocurrent) {
		size_t fa, fb;

		CHECK("cuCtxSetCurrent", cuCtxSetCurrent(a), CUDA_SUCCESS);
		fa = free_mem();
		CHECK("cuCtxSetCurrent", cuCtxSetCurrent(b), CUDA_SUCCESS);
		CHECK("launch", touch(k), CUDA_SUCCESS);
		CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		CHECK("cuCtxSetCurrent", cuCtxSetCurrent(a), CUDA_SUCCESS);
		CHECK("launch", touch(k), CUDA_SUCCESS);
		CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		fb = free_mem();
		printf("free: %zu before, %zu after the load, %zu with both contexts using it\n",
		       f0, fa, fb);
		if (f0 - fb < 2 * (size_t)BIG) {
			printf("FAILED: not every copy was charged\n");
			return 1;
		}
		CHECK("cuLibraryUnload", cuLibraryUnload(lib), CUDA_SUCCESS);
		if (free_mem() != f0) {
			printf("FAILED: %zu free after the unload, expected %zu\n", free_mem(), f0);
			return 1;
		}
		printf("PASSED\n");
		return 0;
	}
	f1 = free_mem();
	printf("free: %zu before the load, %zu after\n", f0, f1);
	if (f0 - f1 < BIG) {
		printf("FAILED: the load in the current context was not charged\n");
		return 1;
	}

	/* Another context makes its own copy on first use. */
	CHECK("cuCtxSetCurrent", cuCtxSetCurrent(b), CUDA_SUCCESS);
	CHECK("launch in the second context", touch(k), CUDA_SUCCESS);
	if (over) {
		/* Not now, and not on a second try either: the copy is never made or used. */
		CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_ERROR_OUT_OF_MEMORY);
		CHECK("a second launch", touch(k), CUDA_SUCCESS);
		CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_ERROR_OUT_OF_MEMORY);
		CHECK("cuLibraryGetGlobal", cuLibraryGetGlobal(&g, &bytes, lib, "big"),
		      CUDA_ERROR_OUT_OF_MEMORY);
		CHECK("cuCtxSetCurrent", cuCtxSetCurrent(a), CUDA_SUCCESS);
		CHECK("cuLibraryUnload", cuLibraryUnload(lib), CUDA_SUCCESS);
		if (free_mem() != f0) {
			printf("FAILED: %zu free after the unload, %zu before the load\n",
			       free_mem(), f0);
			return 1;
		}
		printf("PASSED\n");
		return 0;
	}
	CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	f2 = free_mem();
	printf("free: %zu after the second context used it\n", f2);
	if (f1 - f2 < BIG) {
		printf("FAILED: the second context's copy was not charged\n");
		return 1;
	}
	/* The global there is that context's copy, written by the launch; no new charge. */
	CHECK("cuLibraryGetGlobal", cuLibraryGetGlobal(&g, &bytes, lib, "big"), CUDA_SUCCESS);
	CHECK("cuMemcpyDtoH", cuMemcpyDtoH(host, g, sizeof(host)), CUDA_SUCCESS);
	for (unsigned i = 0; i < 32; i++)
		if (host[i] != i) {
			printf("FAILED: big[%u] is %u\n", i, host[i]);
			return 1;
		}
	CHECK("cuCtxSetCurrent", cuCtxSetCurrent(a), CUDA_SUCCESS);
	CHECK("launch in the first context", touch(k), CUDA_SUCCESS);
	CHECK("cuCtxSynchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	if (free_mem() != f2) {
		printf("FAILED: using it again changed the charge (%zu, was %zu)\n", free_mem(),
		       f2);
		return 1;
	}
	/* The copy goes with its context, the rest with the library. */
	CHECK("cuCtxDestroy", cuCtxDestroy(b), CUDA_SUCCESS);
	if (free_mem() != f1 + fctx) {
		printf("FAILED: %zu free after the context went, expected %zu\n", free_mem(),
		       f1 + fctx);
		return 1;
	}
	CHECK("cuLibraryUnload", cuLibraryUnload(lib), CUDA_SUCCESS);
	if (free_mem() != f0 + fctx) {
		printf("FAILED: %zu free after the unload, expected %zu\n", free_mem(), f0 + fctx);
		return 1;
	}
	printf("PASSED\n");
	return 0;
}
