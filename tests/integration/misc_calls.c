/* misc_calls.c -- calls that real programs make and a local GPU answers: cuModuleLoad from a
 * file (read on the client), peer attributes, cuPointerSetAttribute, the profiler calls, a
 * library's module (cuLibraryGetModule) and what it may and may not do.
 * usage: misc_calls PTX_FILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaProfiler.h>

#include "fill_ptx.h"

#define CHECK(cond, what)                             \
	do {                                          \
		if (!(cond)) {                        \
			printf("FAILED: %s\n", what); \
			return 1;                     \
		}                                     \
	} while (0)

int main(int argc, char **argv)
{
	CUdeviceptr d;
	CUfunction fn;
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	int v = -1, one = 1, n = 0;

	CHECK(argc > 1, "usage: misc_calls PTX_FILE");
	CHECK(cuInit(0) == CUDA_SUCCESS && cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuInit");
	CHECK(cuCtxCreate(&ctx, NULL, 0, dev) == CUDA_SUCCESS, "cuCtxCreate");
	CHECK(cuModuleLoad(&mod, "/nonexistent/x.ptx") == CUDA_ERROR_FILE_NOT_FOUND,
	      "cuModuleLoad of a missing file");
	CHECK(cuModuleLoad(&mod, argv[1]) == CUDA_SUCCESS, "cuModuleLoad");
	CHECK(cuModuleGetFunction(&fn, mod, "spin") == CUDA_SUCCESS, "its kernel");
	{
		/* JIT option outputs are filled in: the logs (cut to their sizes) and the bytes
		 * written with the NUL, the wall time. */
		char info[64], err[256];
		CUjit_option o[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
				    CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
				    CU_JIT_WALL_TIME};
		void *ov[] = {info, (void *)sizeof(info), err, (void *)sizeof(err), NULL};
		CUmodule jm;
		float ms = -1;

		memset(info, 'x', sizeof(info));
		memset(err, 'x', sizeof(err));
		CHECK(cuModuleLoadDataEx(&jm, fill_ptx, 5, o, ov) == CUDA_SUCCESS,
		      "cuModuleLoadDataEx with log options");
		memcpy(&ms, &ov[4], sizeof(ms));
		CHECK(memchr(info, 0, sizeof(info)) && (size_t)ov[1] == strlen(info) + 1 &&
			      memchr(err, 0, sizeof(err)) && (size_t)ov[3] == strlen(err) + 1 &&
			      ms >= 0,
		      "the JIT outputs: logs terminated, their lengths, a wall time");
		CHECK(cuModuleUnload(jm) == CUDA_SUCCESS, "its unload");
		ov[1] = (void *)sizeof(info);
		ov[3] = (void *)sizeof(err);
		CHECK(cuModuleLoadDataEx(&jm, ".version 7.0\n.target sm_52\nnot ptx\n", 5, o, ov) !=
			      CUDA_SUCCESS,
		      "a bad image fails at its load");
		CHECK(memchr(err, 0, sizeof(err)) && (size_t)ov[3] == strlen(err) + 1 && err[0],
		      "the error log says something");
		printf("error log: %s\n", err);
		{
			/* A library's load fills them too (its errors come at first use). */
			CUlibrary jl;

			ov[1] = (void *)sizeof(info);
			ov[3] = (void *)sizeof(err);
			memset(info, 'x', sizeof(info));
			CHECK(cuLibraryLoadData(&jl, fill_ptx, o, ov, 5, NULL, NULL, 0) ==
					      CUDA_SUCCESS &&
				      memchr(info, 0, sizeof(info)) &&
				      (size_t)ov[1] == strlen(info) + 1 &&
				      cuLibraryUnload(jl) == CUDA_SUCCESS,
			      "cuLibraryLoadData fills the JIT outputs");
		}
	}
	CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS, "cuDeviceGetCount");
	if (n > 1) {
		CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1) ==
				      CUDA_SUCCESS &&
			      v == 0,
		      "no peer access");
	}
	CHECK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0) ==
		      CUDA_ERROR_INVALID_DEVICE,
	      "a device is not its own peer");
	CHECK(cuMemAlloc(&d, 256) == CUDA_SUCCESS, "cuMemAlloc");
	CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d) == CUDA_SUCCESS,
	      "SYNC_MEMOPS on device memory");
	CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_CONTEXT, d) ==
		      CUDA_ERROR_INVALID_VALUE,
	      "a read-only pointer attribute");
	CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, 16) ==
		      CUDA_ERROR_INVALID_VALUE,
	      "SYNC_MEMOPS on memory that is not the device's");
	CHECK(cuProfilerStart() == CUDA_SUCCESS && cuProfilerStop() == CUDA_SUCCESS,
	      "the profiler calls");
	{
		/* An attribute never promises what then fails: programs trust it. */
		CUdeviceptr m;
		void *h = NULL, *hd = NULL;
		int managed = 0, mapped = 0, pools = 0;

		CHECK(cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev) ==
			      CUDA_SUCCESS,
		      "managedMemory");
		if (managed)
			CHECK(cuMemAllocManaged(&m, 256, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS,
			      "managedMemory=1, so cuMemAllocManaged works");
		CHECK(cuDeviceGetAttribute(&mapped, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev) ==
			      CUDA_SUCCESS,
		      "canMapHostMemory");
		if (mapped)
			CHECK(cuMemHostAlloc(&h, 256, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS &&
				      cuMemHostGetDevicePointer((CUdeviceptr *)&hd, h, 0) ==
					      CUDA_SUCCESS,
			      "canMapHostMemory=1, so mapped host memory works");
		CHECK(cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
					   dev) == CUDA_SUCCESS,
		      "memoryPoolsSupported");
		if (pools)
			CHECK(cuMemAllocAsync(&m, 256, NULL) == CUDA_SUCCESS &&
				      cuMemFreeAsync(m, NULL) == CUDA_SUCCESS &&
				      cuStreamSynchronize(NULL) == CUDA_SUCCESS,
			      "memoryPoolsSupported=1, so cuMemAllocAsync works");
		printf("managedMemory %d, canMapHostMemory %d, memoryPoolsSupported %d\n", managed,
		       mapped, pools);
	}
	{
		/* A library's module: the same one each time, its functions run, it cannot be
		 * unloaded by itself, and it goes with the library. */
		CUlibrary lib;
		CUkernel k;
		CUmodule lm, again, of_fn;
		CUfunction f, kf;
		CUdeviceptr g;
		unsigned out[32] = {0};
		void *args[] = {&g, &(unsigned){0xc0ffee}};
		int ok = 1;

		CHECK(cuLibraryLoadData(&lib, fill_ptx, NULL, NULL, 0, NULL, NULL, 0) ==
			      CUDA_SUCCESS,
		      "cuLibraryLoadData");
		CHECK(cuLibraryGetModule(&lm, lib) == CUDA_SUCCESS &&
			      cuLibraryGetModule(&again, lib) == CUDA_SUCCESS && lm == again,
		      "cuLibraryGetModule, the same module twice");
		CHECK(cuModuleGetFunction(&f, lm, "fill") == CUDA_SUCCESS, "its function");
		CHECK(cuLibraryGetKernel(&k, lib, "fill") == CUDA_SUCCESS &&
			      cuKernelGetFunction(&kf, k) == CUDA_SUCCESS &&
			      cuFuncGetModule(&of_fn, kf) == CUDA_SUCCESS && of_fn == lm,
		      "a library kernel's function belongs to the library's module");
		CHECK(cuMemAlloc(&g, sizeof(out)) == CUDA_SUCCESS, "cuMemAlloc");
		CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS,
		      "a launch of the module's function");
		CHECK(cuMemcpyDtoH(out, g, sizeof(out)) == CUDA_SUCCESS, "its result");
		for (int i = 0; i < 32; i++)
			ok &= out[i] == 0xc0ffee;
		CHECK(ok, "the library module's kernel filled the buffer");
		CHECK(cuModuleUnload(lm) == CUDA_ERROR_NOT_PERMITTED,
		      "a library's module cannot be unloaded by itself");
		CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS, "cuLibraryUnload");
		CHECK(cuModuleGetFunction(&f, lm, "fill") != CUDA_SUCCESS,
		      "the module went with its library");
		CHECK(cuMemFree(g) == CUDA_SUCCESS, "cuMemFree");
		CHECK(cuLibraryLoadFromFile(&lib, "/nonexistent/x.ptx", NULL, NULL, 0, NULL, NULL,
					    0) == CUDA_ERROR_FILE_NOT_FOUND,
		      "cuLibraryLoadFromFile of a missing file");
		CHECK(cuLibraryLoadFromFile(&lib, argv[1], NULL, NULL, 0, NULL, NULL, 0) ==
				      CUDA_SUCCESS &&
			      cuLibraryGetKernel(&k, lib, "spin") == CUDA_SUCCESS &&
			      cuLibraryUnload(lib) == CUDA_SUCCESS,
		      "cuLibraryLoadFromFile, its kernel");
	}
	printf("OK\n");
	return 0;
}
