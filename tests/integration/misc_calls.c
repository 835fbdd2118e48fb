/* misc_calls.c -- calls that real programs make and a local GPU answers: cuModuleLoad from a
 * file (read on the client), peer attributes, cuPointerSetAttribute, the profiler calls.
 * usage: misc_calls PTX_FILE */
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cudaProfiler.h>

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
	printf("OK\n");
	return 0;
}
