/* vmm.c -- virtual memory management, checked against the CPU: two allocations mapped side
 * by side under one kernel, one allocation at two addresses, access rules, unmapping, the
 * errors of bad arguments, a fixed address hint. Runs directly on softgpu and through the
 * pool; prints one line per failed check and "vmm: ok" when all hold.
 *
 *   vmm            the checks above
 *   vmm limit      for test-vmm.sh: prints "ready", then makes 32 MiB and maps it, tries
 *                  64 MiB more (expects CUDA_ERROR_OUT_OF_MEMORY under a 64 MiB limit) and
 *                  prints "held"; after a line on stdin releases it (still mapped: "mapped"),
 *                  after another unmaps it ("released"), after a third exits */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "triple_ptx.h"

static int bad;

static void expect(const char *what, CUresult got, CUresult want)
{
	const char *g = NULL, *w = NULL;

	if (got == want)
		return;
	cuGetErrorName(got, &g);
	cuGetErrorName(want, &w);
	printf("FAIL %s: %s, expected %s\n", what, g ? g : "?", w ? w : "?");
	bad = 1;
}

static void truth(const char *what, int cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		bad = 1;
	}
}

static CUmemAllocationProp pinned(int dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

static CUresult rw(CUdeviceptr va, size_t bytes)
{
	CUmemAccessDesc d;

	memset(&d, 0, sizeof(d));
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = 0;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return cuMemSetAccess(va, bytes, &d, 1);
}

static CUresult launch(CUfunction f, CUdeviceptr p, unsigned n)
{
	void *params[] = {&p, &n};

	return cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
}

static void wait_line(void)
{
	char line[64];

	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(3);
}

static int limit_mode(void)
{
	CUmemAllocationProp prop = pinned(0);
	CUmemGenericAllocationHandle h, h2;
	CUdeviceptr va;

	printf("ready\n");
	wait_line();
	expect("create 32 MiB", cuMemCreate(&h, 32u << 20, &prop, 0), CUDA_SUCCESS);
	expect("reserve 32 MiB", cuMemAddressReserve(&va, 32u << 20, 0, 0, 0), CUDA_SUCCESS);
	expect("map it", cuMemMap(va, 32u << 20, 0, h, 0), CUDA_SUCCESS);
	expect("64 MiB more", cuMemCreate(&h2, 64u << 20, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	printf("held\n");
	wait_line();
	expect("release while mapped", cuMemRelease(h), CUDA_SUCCESS);
	printf("mapped\n");
	wait_line();
	expect("unmap", cuMemUnmap(va, 32u << 20), CUDA_SUCCESS);
	expect("free the range", cuMemAddressFree(va, 32u << 20), CUDA_SUCCESS);
	printf("released\n");
	wait_line();
	return bad;
}

int main(int argc, char **argv)
{
	CUmemAllocationProp prop = pinned(0), fd_prop = pinned(0), got;
	CUmemGenericAllocationHandle a, b, h;
	CUdeviceptr va, va2, base, hint = 0x7e0000000000ull;
	unsigned long long flags;
	size_t g = 0, rec = 0, fr0, fr1, tot, size;
	unsigned *host, *back, n;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	int v = 0, mapped = 0;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
		return 2;
	if (argc > 1 && strcmp(argv[1], "limit") == 0)
		return limit_mode();
	expect("VMM attribute",
	       cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
				    dev),
	       CUDA_SUCCESS);
	truth("VMM supported", v == 1);
	expect("granularity",
	       cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	       CUDA_SUCCESS);
	expect("recommended",
	       cuMemGetAllocationGranularity(&rec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
	       CUDA_SUCCESS);
	printf("granularity %zu recommended %zu\n", g, rec);
	truth("granularity a power of two", g && !(g & (g - 1)) && rec >= g && rec % g == 0);
	if (bad)
		return 1;
	n = (unsigned)(2 * g / 4);
	host = malloc(2 * g);
	back = malloc(2 * g);
	if (!host || !back)
		return 2;
	expect("load the kernel", cuModuleLoadData(&mod, triple_ptx), CUDA_SUCCESS);
	expect("its function", cuModuleGetFunction(&fn, mod, "triple"), CUDA_SUCCESS);
	if (bad)
		return 1;
	cuMemGetInfo(&fr0, &tot);

	/* Bad arguments. */
	expect("create: half a granule", cuMemCreate(&a, g / 2, &prop, 0),
	       CUDA_ERROR_INVALID_VALUE);
	fd_prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
			     dev);
	if (!v)
		expect("create: fd export, not supported", cuMemCreate(&a, g, &fd_prop, 0),
		       CUDA_ERROR_NOT_SUPPORTED);
	expect("reserve: half a granule", cuMemAddressReserve(&va, g / 2, 0, 0, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("release: no such handle", cuMemRelease(0x1234), CUDA_ERROR_INVALID_VALUE);

	/* Two allocations side by side in one reservation of four granules. */
	expect("create a", cuMemCreate(&a, g, &prop, 0), CUDA_SUCCESS);
	expect("create b", cuMemCreate(&b, g, &prop, 0), CUDA_SUCCESS);
	cuMemGetInfo(&fr1, &tot);
	truth("two granules less free", fr0 - fr1 >= 2 * g);
	expect("reserve", cuMemAddressReserve(&va, 4 * g, 0, 0, 0), CUDA_SUCCESS);
	truth("reservation aligned", va % g == 0);
	expect("map a", cuMemMap(va, g, 0, a, 0), CUDA_SUCCESS);
	expect("map b", cuMemMap(va + g, g, 0, b, 0), CUDA_SUCCESS);
	expect("copy before access", cuMemcpyHtoD(va, host, 4096), CUDA_ERROR_INVALID_VALUE);
	expect("set access", rw(va, 2 * g), CUDA_SUCCESS);
	{
		CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};

		expect("get access", cuMemGetAccess(&flags, &loc, va + g + 8), CUDA_SUCCESS);
		truth("read-write", flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	}
	for (unsigned i = 0; i < n; i++)
		host[i] = i * 7 + 5;
	expect("copy across both", cuMemcpyHtoD(va, host, 2 * g), CUDA_SUCCESS);
	expect("kernel across both", launch(fn, va, n), CUDA_SUCCESS);
	expect("sync", cuCtxSynchronize(), CUDA_SUCCESS);
	expect("copy back", cuMemcpyDtoH(back, va, 2 * g), CUDA_SUCCESS);
	for (unsigned i = 0; i < n; i++)
		host[i] = host[i] * 3 + 1;
	truth("kernel result is the CPU's", memcmp(host, back, 2 * g) == 0);

	/* a again, after b: the same bytes at two addresses. */
	expect("map a twice", cuMemMap(va + 2 * g, g, 0, a, 0), CUDA_SUCCESS);
	expect("its access", rw(va + 2 * g, g), CUDA_SUCCESS);
	memset(back, 0, g);
	expect("read the alias", cuMemcpyDtoH(back, va + 2 * g, g), CUDA_SUCCESS);
	truth("the alias shows a", memcmp(host, back, g) == 0);
	expect("write the alias", cuMemsetD32(va + 2 * g + 64, 0xabcdef01u, 4), CUDA_SUCCESS);
	expect("read the first", cuMemcpyDtoH(back, va + 64, 16), CUDA_SUCCESS);
	truth("a shows the alias's write", back[0] == 0xabcdef01u && back[3] == 0xabcdef01u);

	/* Mapping errors. */
	expect("map: unaligned address", cuMemMap(va + 3 * g + 4096, g, 0, b, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("map: unaligned size", cuMemMap(va + 3 * g, g / 2, 0, b, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("map: unaligned offset", cuMemMap(va + 3 * g, g, g / 2, b, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("map: past the allocation", cuMemMap(va + 3 * g, g, g, b, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("map: over a mapping", cuMemMap(va + g, g, 0, a, 0), CUDA_ERROR_INVALID_VALUE);
	expect("map: past the reservation", cuMemMap(va + 3 * g, 2 * g, 0, a, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("map: outside any reservation", cuMemMap(va + 64 * g, g, 0, a, 0),
	       CUDA_ERROR_INVALID_VALUE);
	expect("unmap: half a mapping", cuMemUnmap(va, g / 2), CUDA_ERROR_INVALID_VALUE);
	expect("free: still mapped", cuMemAddressFree(va, 4 * g), CUDA_ERROR_INVALID_VALUE);

	/* Handles and properties of mapped memory. */
	expect("retain b", cuMemRetainAllocationHandle(&h, (void *)(va + g + 100)), CUDA_SUCCESS);
	truth("retained b", h == b);
	expect("release the retain", cuMemRelease(h), CUDA_SUCCESS);
	expect("retain: unmapped", cuMemRetainAllocationHandle(&h, (void *)(va + 3 * g)),
	       CUDA_ERROR_INVALID_VALUE);
	memset(&got, 0xff, sizeof(got));
	expect("properties", cuMemGetAllocationPropertiesFromHandle(&got, a), CUDA_SUCCESS);
	truth("pinned on device 0", got.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
					    got.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
					    got.location.id == 0 && got.requestedHandleTypes == 0);
	expect("address range", cuMemGetAddressRange(&base, &size, va + g + 5), CUDA_SUCCESS);
	truth("the mapping's range", base == va + g && size == g);
	expect("pointer mapped",
	       cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, va + 2 * g + 1),
	       CUDA_SUCCESS);
	truth("mapped", mapped == 1);
	/* Released while mapped: the memory stays until unmapped. */
	expect("release a", cuMemRelease(a), CUDA_SUCCESS);
	expect("release a again", cuMemRelease(a), CUDA_ERROR_INVALID_VALUE);
	expect("read a after release", cuMemcpyDtoH(back, va + 64, 16), CUDA_SUCCESS);
	truth("a still there", back[0] == 0xabcdef01u);

	/* Unmapping: the range is inaccessible again. */
	expect("unmap a and b", cuMemUnmap(va, 2 * g), CUDA_SUCCESS);
	expect("copy after unmap", cuMemcpyDtoH(back, va, 16), CUDA_ERROR_INVALID_VALUE);
	expect("read the alias", cuMemcpyDtoH(back, va + 2 * g + 64, 16), CUDA_SUCCESS);
	truth("alias keeps a alive", back[0] == 0xabcdef01u);
	expect("unmap the alias", cuMemUnmap(va + 2 * g, g), CUDA_SUCCESS);
	expect("address range after unmap", cuMemGetAddressRange(&base, &size, va + 5),
	       CUDA_ERROR_NOT_FOUND);
	expect("free the reservation", cuMemAddressFree(va, 4 * g), CUDA_SUCCESS);
	expect("release b", cuMemRelease(b), CUDA_SUCCESS);
	cuMemGetInfo(&fr1, &tot);
	truth("memory back", fr1 == fr0);

	/* The hint is honoured where free, and only a hint where not. */
	expect("reserve at the hint", cuMemAddressReserve(&va, 2 * g, 0, hint, 0), CUDA_SUCCESS);
	truth("at the hint", va == hint);
	expect("reserve at it again", cuMemAddressReserve(&va2, 2 * g, 0, hint, 0), CUDA_SUCCESS);
	truth("elsewhere", va2 != hint);
	expect("free one", cuMemAddressFree(va, 2 * g), CUDA_SUCCESS);
	expect("free two", cuMemAddressFree(va2, 2 * g), CUDA_SUCCESS);
	expect("free: not reserved", cuMemAddressFree(va2, 2 * g), CUDA_ERROR_INVALID_VALUE);

	/* Last, since it ends the context: a kernel on unmapped memory faults. */
	expect("reserve", cuMemAddressReserve(&va, g, 0, 0, 0), CUDA_SUCCESS);
	expect("kernel on reserved, unmapped memory", launch(fn, va, 16), CUDA_SUCCESS);
	expect("its fault", cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	if (!bad)
		printf("vmm: ok\n");
	free(host);
	free(back);
	return bad;
}
