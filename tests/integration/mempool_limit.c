/* mempool_limit.c -- stream-ordered allocation against a session's memory limit.
 *
 * usage: mempool_limit over    (under a 64 MiB limit) what pools hold counts: an allocation
 *                              past the limit is CUDA_ERROR_OUT_OF_MEMORY, and so is one
 *                              that only memory a pool keeps stands in the way of, until
 *                              the pool is trimmed, or gives back what it keeps above
 *                              its release threshold at a synchronize; prints OK
 *        mempool_limit hold    says BASE, waits for a line; holds 32 MiB from the default
 *                              pool, says HELD, waits; frees it in stream order and
 *                              synchronizes, says FREED, waits; then ends
 */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "drv_check.h"

#define MIB (1ull << 20)

static int over(CUstream s)
{
	CUmemoryPool pool, owner = NULL, def;
	CUmemPoolProps props;
	CUdeviceptr a, b, c;
	cuuint64_t keep = ~0ull, held = 0;

	/* 40 MiB fits in 64; 40 more do not, in the default pool or as a plain allocation. */
	OK(cuMemAllocAsync(&a, 40 * MIB, s));
	OK(cuDeviceGetDefaultMemPool(&def, 0));
	OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
	if (owner != def) {
		printf("ERROR the allocation's pool is %p, not the default %p\n", (void *)owner,
		       (void *)def);
		return 1;
	}
	OK(cuMemsetD8Async(a, 1, 40 * MIB, s));
	CHECK(cuMemAllocAsync(&b, 40 * MIB, s), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(cuMemAlloc(&b, 40 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuMemFreeAsync(a, s));
	OK(cuStreamSynchronize(s));
	/* A freed pointer is refused, here and (freed again) by the pool. */
	CHECK(cuMemsetD8(a, 0, 16), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE);

	/* The default pool gives back what is freed at a synchronize of the context, the stream
	 * or an event, also one of work already done (which the worker answers without a
	 * waiter): the 40 MiB are the session's no more, and a plain allocation fits. */
	for (int k = 0; k < 3; k++) {
		CUevent e;

		OK(cuMemAllocAsync(&a, 40 * MIB, s));
		OK(cuMemsetD8Async(a, 2, 40 * MIB, s));
		OK(cuMemFreeAsync(a, s));
		OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
		OK(cuEventRecord(e, s));
		while (cuEventQuery(e) == CUDA_ERROR_NOT_READY)
			;
		if (k == 0)
			OK(cuCtxSynchronize());
		else if (k == 1)
			OK(cuStreamSynchronize(s));
		else
			OK(cuEventSynchronize(e));
		OK(cuEventDestroy(e));
		OK(cuMemAlloc(&b, 40 * MIB));
		OK(cuMemFree(b));
	}

	/* A pool that keeps what is freed: what it keeps still counts. */
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	OK(cuMemPoolCreate(&pool, &props));
	OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	OK(cuMemAllocFromPoolAsync(&c, 40 * MIB, pool, s));
	OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, c));
	if (owner != pool) {
		printf("ERROR the allocation's pool is %p, not %p\n", (void *)owner, (void *)pool);
		return 1;
	}
	OK(cuMemFreeAsync(c, s));
	OK(cuStreamSynchronize(s));
	OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &held));
	if (held < 40 * MIB) {
		printf("ERROR the pool keeps %llu bytes\n", (unsigned long long)held);
		return 1;
	}
	CHECK(cuMemAlloc(&b, 40 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
	/* It serves itself again: what it keeps unused is given back when the room is needed. */
	OK(cuMemAllocFromPoolAsync(&c, 40 * MIB, pool, s));
	OK(cuMemFreeAsync(c, s));
	OK(cuStreamSynchronize(s));
	OK(cuMemPoolTrimTo(pool, 0));
	OK(cuMemAlloc(&b, 40 * MIB));
	OK(cuMemFree(b));
	/* And for an allocation from another pool of the device (the default one) as well. */
	OK(cuMemAllocFromPoolAsync(&c, 40 * MIB, pool, s));
	OK(cuMemFreeAsync(c, s));
	OK(cuStreamSynchronize(s));
	OK(cuMemAllocAsync(&a, 40 * MIB, s));
	OK(cuMemFreeAsync(a, s));
	OK(cuMemPoolDestroy(pool));
	OK(cuStreamSynchronize(s));
	printf("OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "over";
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	CUdeviceptr p;
	int pools = 0;

	OK(cuInit(0));
	OK(cuDeviceGet(&dev, 0));
	OK(cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev));
	if (pools != 1) {
		printf("ERROR memory pools supported: %d\n", pools);
		return 1;
	}
	OK(cuCtxCreate(&ctx, NULL, 0, dev));
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (strcmp(mode, "over") == 0)
		return over(s);
	step("BASE");
	OK(cuMemAllocAsync(&p, 32 * MIB, s));
	OK(cuMemsetD32Async(p, 7, 8 * MIB, s));
	OK(cuStreamSynchronize(s));
	step("HELD");
	OK(cuMemFreeAsync(p, s));
	OK(cuStreamSynchronize(s));
	step("FREED");
	OK(cuStreamDestroy(s));
	OK(cuCtxDestroy(ctx));
	printf("DONE\n");
	return 0;
}
