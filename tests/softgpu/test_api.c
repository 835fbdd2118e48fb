/* test_api.c -- the driver API around kernels: devices, contexts, memory, pointers, 2-D copies,
 * libraries and kernels, function attributes, occupancy, limits, error strings. */
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

static void test_devices(void **state)
{
	int n, v, major, minor;
	char name[64], bus[32];
	size_t mem;
	CUuuid u1, u2;
	CUdevice d;
	const int wanted[] = {75,  76,	40,  16,  18,  19,  21,	 77,  22,  23,	73, 74,	 70,
			      71,  72,	45,  46,  24,  25,  26,	 47,  48,  49,	52, 42,	 43,
			      27,  28,	29,  31,  32,  33,  34,	 50,  35,  41,	37, 38,	 108,
			      39,  30,	51,  8,	  97,  81,  12,	 82,  10,  11,	1,  2,	 3,
			      4,   5,	6,   7,	  9,   14,  78,	 79,  80,  83,	84, 85,	 86,
			      88,  89,	90,  91,  95,  100, 101, 106, 109, 111, 99, 112, 121,
			      125, 129, 130, 131, 133, 134, 139, 140, 143};

	CK(cuDriverGetVersion(&v));
	assert_int_equal(v, 13000);
	CK(cuDeviceGetCount(&n));
	assert_int_equal(n, 1);
	CK(cuDeviceGet(&d, 0));
	CK_EQ(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGetName(name, sizeof(name), 0));
	assert_string_equal(name, getenv("SOFTGPU_NAME") ? getenv("SOFTGPU_NAME") : "softgpu");
	CK(cuDeviceTotalMem(&mem, 0));
	assert_true(mem >= (1u << 20));
	CK(cuDeviceGetUuid(&u1, 0));
	CK(cuDeviceGetUuid_v2(&u2, 0));
	assert_memory_equal(&u1, &u2, sizeof(u1));
	CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
	assert_int_equal(major * 10 + minor, 75);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
	assert_int_equal(v, 32);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
	assert_int_equal(v, 1024);
	/* every attribute cudart asks for, and every one in cuda.h's enum, has a value */
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		CK(cuDeviceGetAttribute(&v, (CUdevice_attribute)wanted[i], 0));
	for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
		CK(cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0));
	CK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3),
	      CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
	CK(cuDeviceGetByPCIBusId(&d, bus));
	assert_int_equal(d, 0);
}

static void test_context_stack(void **state)
{
	CUcontext base, a, b, cur, popped;
	CUdevice dev;
	unsigned ver, flags;
	unsigned long long ida, idb;

	CK(cuCtxGetCurrent(&base));
	CK(cuCtxCreate(&a, NULL, CU_CTX_SCHED_YIELD, 0));
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	CK(cuCtxGetFlags(&flags));
	assert_int_equal(flags, CU_CTX_SCHED_YIELD);
	CK(cuCtxCreate(&b, NULL, 0, 0));
	CK(cuCtxGetId(a, &ida));
	CK(cuCtxGetId(b, &idb));
	assert_true(ida != idb);
	CK(cuCtxPopCurrent(&popped));
	assert_ptr_equal(popped, b);
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	CK(cuCtxPushCurrent(b));
	CK(cuCtxGetDevice(&dev));
	assert_int_equal(dev, 0);
	CK(cuCtxGetDevice_v2(&dev, a));
	CK(cuCtxGetApiVersion(b, &ver));
	CK(cuCtxSynchronize_v2(a));
	CK(cuCtxSetCurrent(a)); /* replaces the top */
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, a);
	CK(cuCtxPopCurrent(&popped));
	assert_ptr_equal(popped, a);
	CK(cuCtxPopCurrent(&popped));
	assert_ptr_equal(popped, a);
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, base);
	CK(cuCtxDestroy(a));
	CK(cuCtxDestroy(b));
	CK_EQ(cuCtxDestroy(b), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_primary_context(void **state)
{
	CUcontext p1, p2, saved;
	unsigned flags;
	int active;
	CUdeviceptr d;

	CK(cuCtxPopCurrent(&saved));
	CK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	assert_int_equal(active, 0);
	CK(cuDevicePrimaryCtxRetain(&p1, 0));
	CK(cuDevicePrimaryCtxRetain(&p2, 0));
	assert_ptr_equal(p1, p2);
	CK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	assert_int_equal(active, 1);
	CK(cuCtxSetCurrent(p1));
	CK(cuMemAlloc(&d, 100));
	CK_EQ(cuCtxDestroy(p1), CUDA_ERROR_INVALID_CONTEXT); /* primary contexts are released */
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuMemFree(d)); /* still retained once */
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	assert_int_equal(active, 0);
	CK_EQ(cuMemAlloc(&d, 100), CUDA_ERROR_INVALID_CONTEXT);
	CK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuCtxSetCurrent(saved));
}

static void test_memory_api(void **state)
{
	CUdeviceptr d, base, dp;
	size_t size, pitch, freeb, total, before;
	void *h;
	unsigned flags;
	char reg[8192];

	CK(cuMemGetInfo(&before, &total));
	CK(cuMemAlloc(&d, 1000));
	CK(cuMemGetInfo(&freeb, &total));
	assert_true(freeb <= before - 1000);
	assert_int_equal(d % 256, 0);
	CK(cuMemGetAddressRange(&base, &size, d + 999));
	assert_true(base == d && size == 1000);
	CK_EQ(cuMemGetAddressRange(&base, &size, d + 1000), CUDA_ERROR_NOT_FOUND);
	CK(cuMemAllocPitch(&dp, &pitch, 100, 10, 4));
	assert_true(pitch >= 100 && pitch % 32 == 0);
	CK_EQ(cuMemAllocPitch(&dp, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	CK(cuMemHostGetDevicePointer(&dp, h, 0));
	assert_true(dp == (CUdeviceptr)(uintptr_t)h);
	CK(cuMemHostGetFlags(&flags, h));
	assert_int_equal(flags, CU_MEMHOSTALLOC_DEVICEMAP);
	CK(cuMemFreeHost(h));
	CK_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemFreeHost(NULL)); /* free(NULL) semantics, like cuMemFree(0) */
	CK(cuMemFree(0));
	CK_EQ(cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemHostRegister(reg, sizeof(reg), 0));
	CK_EQ(cuMemHostRegister(reg + 10, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CK(cuMemHostGetDevicePointer(&dp, reg, 0));
	CK(cuMemHostUnregister(reg));
	CK_EQ(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CK(cuMemFree(d));
}

/*
 * A freed range reads as zeros when it is allocated again, whatever its size: below a page,
 * below 64 KiB, and the partial pages at the ends of a larger one (a 512-byte allocation
 * first puts the others off page boundaries); in place or given back.
 */
static void test_reused_memory_is_zero(void **state)
{
	static const size_t sizes[] = {1000, 4096, 60000, 100000, 1 << 20, 5 << 20};
	CUdeviceptr pad, a, b;
	unsigned char *h;

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k], dirty = 0;

		h = malloc(n);
		assert_non_null(h);
		CK(cuMemAlloc(&pad, 512));
		CK(cuMemAlloc(&a, n));
		CK(cuMemsetD8(a, 0xab, n));
		CK(cuMemFree(a));
		CK(cuMemAlloc(&b, n));
		assert_true(b == a); /* first fit: the same range again */
		CK(cuMemcpyDtoH(h, b, n));
		for (size_t i = 0; i < n; i++)
			dirty += h[i] != 0;
		if (dirty)
			fail_msg("%zu of %zu reallocated bytes show their earlier contents", dirty,
				 n);
		CK(cuMemFree(b));
		CK(cuMemFree(pad));
		free(h);
	}
}

static void test_pointer_attributes(void **state)
{
	CUdeviceptr d, start;
	CUcontext ctx, cur;
	unsigned type;
	int ordinal, managed, mapped;
	size_t size;
	void *host;
	unsigned long long id;
	char plain[16];
	CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				       CU_POINTER_ATTRIBUTE_CONTEXT,
				       CU_POINTER_ATTRIBUTE_IS_MANAGED};
	void *vals[] = {&type, &ctx, &managed};

	CK(cuCtxGetCurrent(&cur));
	CK(cuMemAlloc(&d, 300));
	CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 10));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	CK(cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, d));
	assert_ptr_equal(ctx, cur);
	CK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
	assert_int_equal(ordinal, 0);
	CK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 10));
	CK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 10));
	assert_true(start == d && size == 300);
	CK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, d));
	CK(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, d));
	assert_int_equal(mapped, 1);
	CK_EQ(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
	      CUDA_ERROR_INVALID_VALUE);
	CK_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				    (CUdeviceptr)(uintptr_t)plain),
	      CUDA_ERROR_INVALID_VALUE);
	/* the plural form answers unknown pointers with empty values */
	CK(cuPointerGetAttributes(3, attrs, vals, (CUdeviceptr)(uintptr_t)plain));
	assert_int_equal(type, 0);
	assert_null(ctx);
	CK(cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL));
	CK(cuPointerGetAttributes(3, attrs, vals, d));
	assert_int_equal(managed, 1);
	((int *)(uintptr_t)d)[3] = 5; /* managed memory is host-accessible */
	CK(cuMemFree(d));
	CK(cuMemAllocHost(&host, 64));
	CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				 (CUdeviceptr)(uintptr_t)host));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	CK(cuMemFreeHost(host));
}

static void test_copies_2d(void **state)
{
	enum { W = 37, H = 11 };
	unsigned char src[H][W], dst[H][64];
	CUdeviceptr d;
	size_t pitch;
	CUDA_MEMCPY2D c;
	unsigned short s16[W * H];
	unsigned s32[W * H];

	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			src[y][x] = (unsigned char)(y * 31 + x);
	CK(cuMemAllocPitch(&d, &pitch, W, H, 4));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = W;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d;
	c.dstPitch = pitch;
	c.WidthInBytes = W;
	c.Height = H;
	CK(cuMemcpy2D(&c));
	/* back out with an offset window */
	memset(dst, 0xee, sizeof(dst));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d;
	c.srcPitch = pitch;
	c.srcXInBytes = 3;
	c.srcY = 2;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = dst;
	c.dstPitch = 64;
	c.WidthInBytes = W - 3;
	c.Height = H - 2;
	CK(cuMemcpy2DAsync(&c, NULL));
	CK(cuCtxSynchronize());
	for (int y = 0; y < H - 2; y++) {
		for (int x = 0; x < W - 3; x++)
			assert_int_equal(dst[y][x], src[y + 2][x + 3]);
		assert_int_equal(dst[y][W - 3], 0xee);
	}
	/* a window that leaves the allocation */
	c.Height = H;
	CK_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.Height = 2;
	c.srcPitch = 4; /* pitch below the width */
	CK_EQ(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	/* 2-D memsets of every width */
	CK(cuMemsetD2D8(d, pitch, 0x5a, W, H));
	CK(cuMemcpyDtoH(src, d, W));
	for (int x = 0; x < W; x++)
		assert_int_equal(src[0][x], 0x5a);
	CK(cuMemsetD2D16(d, pitch, 0xbeef, W / 2, H));
	CK(cuMemcpyDtoH(s16, d + pitch * 3, W / 2 * 2));
	for (int x = 0; x < W / 2; x++)
		assert_int_equal(s16[x], 0xbeef);
	CK(cuMemsetD2D32(d, pitch, 0xdeadbeef, W / 4, H));
	CK(cuMemcpyDtoH(s32, d + pitch * (H - 1), W / 4 * 4));
	for (int x = 0; x < W / 4; x++)
		assert_int_equal(s32[x], 0xdeadbeef);
	CK(cuMemsetD16(d, 0x1234, 5));
	CK(cuMemsetD32Async(d + 16, 7, 3, NULL));
	CK(cuMemcpyDtoH(s16, d, 28));
	assert_int_equal(s16[4], 0x1234);
	assert_int_equal(s16[8], 7);
	/* unified copy with device pointers on both sides */
	CK(cuMemcpy(d + 64, d, 16));
	CK(cuMemFree(d));
}

static void test_copies_3d_and_peer(void **state)
{
	enum { W = 12, H = 5, D = 4 };
	unsigned char src[D][H][W], dst[D][H][W];
	CUdeviceptr dev, other;
	CUDA_MEMCPY3D c;
	CUcontext a, b;

	for (int z = 0; z < D; z++)
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				src[z][y][x] = (unsigned char)(z * 64 + y * 12 + x);
	/* device volume: pitch 32, 8 rows per slice */
	CK(cuMemAlloc(&dev, 32 * 8 * D));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = W;
	c.srcHeight = H;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = 32;
	c.dstHeight = 8;
	c.WidthInBytes = W;
	c.Height = H;
	c.Depth = D;
	CK(cuMemcpy3D(&c));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = 32;
	c.srcHeight = 8;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = dst;
	c.dstPitch = W;
	c.dstHeight = H;
	c.WidthInBytes = W;
	c.Height = H;
	c.Depth = D;
	CK(cuMemcpy3DAsync(&c, NULL));
	CK(cuCtxSynchronize());
	assert_memory_equal(src, dst, sizeof(src));
	c.Depth = D + 1; /* one slice too many */
	CK_EQ(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
	/* peer copy from this context's memory into another context's */
	CK(cuCtxGetCurrent(&a));
	CK(cuCtxCreate(&b, NULL, 0, 0));
	CK(cuMemAlloc(&other, 64));
	CK(cuMemcpyPeer(other, b, dev, a, 64));
	memset(dst, 0, sizeof(dst));
	CK(cuMemcpyDtoH(dst, other, 64));
	CK(cuMemcpyDtoH(src, dev, 64));
	assert_memory_equal(src, dst, 64);
	CK(cuCtxDestroy(b));
	CK(cuCtxSetCurrent(a));
	CK(cuMemFree(dev));
}

static void test_library(void **state)
{
	CUlibrary lib;
	CUkernel k, ks[4];
	CUfunction f;
	CUmodule m;
	unsigned count;
	const char *name;
	size_t off, size, bytes;
	CUdeviceptr g, a, b, c;
	float ha[64], hb[64], hc[64];
	int n = 64, v;
	char *ptx = sgt_read("vector_add.ptx", NULL), *cptx = sgt_read("constmem.ptx", NULL);
	CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
	void *optval = (void *)1;

	CK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, &opt, &optval, 1));
	CK(cuLibraryGetKernelCount(&count, lib));
	assert_int_equal(count, 1);
	CK(cuLibraryEnumerateKernels(ks, 1, lib));
	CK(cuLibraryGetKernel(&k, lib, "vector_add"));
	assert_ptr_equal(k, ks[0]);
	CK_EQ(cuLibraryGetKernel(&k, lib, "nope"), CUDA_ERROR_NOT_FOUND);
	CK(cuKernelGetName(&name, k));
	assert_string_equal(name, "vector_add");
	CK(cuKernelGetParamInfo(k, 3, &off, &size));
	assert_true(off == 24 && size == 4);
	CK_EQ(cuKernelGetParamInfo(k, 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
	CK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
	assert_int_equal(v, 1024);
	CK(cuKernelGetFunction(&f, k));
	CK(cuFuncGetModule(&m, f));
	CK(cuLibraryGetModule(&m, lib));
	for (int i = 0; i < 64; i++) {
		ha[i] = (float)i;
		hb[i] = 2.0f;
	}
	CK(cuMemAlloc(&a, sizeof(ha)));
	CK(cuMemAlloc(&b, sizeof(hb)));
	CK(cuMemAlloc(&c, sizeof(hc)));
	CK(cuMemcpyHtoD(a, ha, sizeof(ha)));
	CK(cuMemcpyHtoD(b, hb, sizeof(hb)));
	void *args[] = {&a, &b, &c, &n};
	/* as cudart does: the CUkernel passed as a CUfunction */
	CK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	CK(cuMemcpyDtoH(hc, c, sizeof(hc)));
	for (int i = 0; i < 64; i++)
		assert_true(hc[i] == (float)i + 2.0f);
	CK(cuLibraryUnload(lib));
	CK_EQ(cuLibraryGetKernel(&k, lib, "vector_add"), CUDA_ERROR_INVALID_HANDLE);
	/* globals of a library, with their sizes */
	CK(cuLibraryLoadData(&lib, cptx, NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetGlobal(&g, &bytes, lib, "table"));
	assert_int_equal(bytes, 16);
	CK(cuMemcpyDtoH(&v, g + 8, 4));
	assert_int_equal(v, 30);
	CK(cuLibraryGetGlobal(&g, NULL, lib, "coeffs"));
	CK(cuLibraryUnload(lib));
	free(ptx);
	free(cptx);
}

static void test_managed_variable(void **state)
{
	char *ptx = sgt_read("managed.ptx", NULL);
	CUlibrary lib;
	CUkernel k;
	CUdeviceptr total, dv;
	size_t bytes;
	int v[100], n = 100;
	unsigned type;

	for (int i = 0; i < 100; i++)
		v[i] = i;
	CK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetManaged(&total, &bytes, lib, "total"));
	assert_int_equal(bytes, 4);
	CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, total));
	/* host and device see the same integer */
	assert_int_equal(*(int *)(uintptr_t)total, 5);
	*(int *)(uintptr_t)total = 1000;
	CK(cuLibraryGetKernel(&k, lib, "add_to_total"));
	CK(cuMemAlloc(&dv, sizeof(v)));
	CK(cuMemcpyHtoD(dv, v, sizeof(v)));
	void *args[] = {&dv, &n};
	CK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	assert_int_equal(*(int *)(uintptr_t)total, 1000 + 4950);
	CK(cuMemFree(dv));
	CK(cuLibraryUnload(lib));
	free(ptx);
}

static void test_function_attributes(void **state)
{
	CUmodule m = sgt_module("matmul.ptx"), m2 = sgt_module("localmem.ptx");
	CUfunction f = sgt_function(m, "matmul"), g = sgt_function(m2, "localmem");
	CUfunction_attribute all[] = {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
				      CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
				      CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
				      CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
				      CU_FUNC_ATTRIBUTE_NUM_REGS,
				      CU_FUNC_ATTRIBUTE_PTX_VERSION,
				      CU_FUNC_ATTRIBUTE_BINARY_VERSION,
				      CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
				      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
				      CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT};
	int v;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CK(cuFuncGetAttribute(&v, all[i], f));
	CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
	assert_int_equal(v, 2 * 16 * 16 * 4);
	CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
	assert_int_equal(v, 49152 - 2048);
	CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
	assert_int_equal(v, 75);
	CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, g));
	assert_true(v >= 40 * 4);
	CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50));
	CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f));
	assert_int_equal(v, 50);
	CK_EQ(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 3), CUDA_ERROR_INVALID_VALUE);
	CK(cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_SHARED));
	CK(cuModuleUnload(m));
	CK(cuModuleUnload(m2));
}

static void test_occupancy(void **state)
{
	CUmodule m = sgt_module("matmul.ptx");
	CUfunction f = sgt_function(m, "matmul");
	int blocks, grid, block;
	size_t dyn;

	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0));
	assert_true(blocks >= 1 && blocks <= 4);
	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 32, 0));
	assert_true(blocks >= 1 && blocks <= 16);
	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 2048, 0));
	assert_int_equal(blocks, 0);
	CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 128, 40000));
	assert_int_equal(blocks, 1);
	CK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 0));
	assert_true(block > 0 && block <= 1024 && block % 32 == 0 && grid > 0);
	CK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f, NULL, 0, 100));
	assert_true(block <= 100);
	CK(cuOccupancyAvailableDynamicSMemPerBlock(&dyn, f, 2, 128));
	assert_true(dyn > 0 && dyn <= 65536);
	CK(cuModuleUnload(m));
}

static void test_limits_and_strings(void **state)
{
	size_t v;
	const char *s;
	CUmoduleLoadingMode mode;

	CK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
	CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
	CK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
	assert_int_equal(v, 4096);
	CK(cuCtxGetLimit(&v, CU_LIMIT_PRINTF_FIFO_SIZE));
	CK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
	CK_EQ(cuCtxGetLimit(&v, (CUlimit)0x77), CUDA_ERROR_UNSUPPORTED_LIMIT);
	CK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
	assert_string_equal(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
	CK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "out of memory");
	CK_EQ(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	CK(cuModuleGetLoadingMode(&mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_context_stack),
		cmocka_unit_test(test_primary_context),
		cmocka_unit_test(test_memory_api),
		cmocka_unit_test(test_reused_memory_is_zero),
		cmocka_unit_test(test_pointer_attributes),
		cmocka_unit_test(test_copies_2d),
		cmocka_unit_test(test_copies_3d_and_peer),
		cmocka_unit_test(test_library),
		cmocka_unit_test(test_managed_variable),
		cmocka_unit_test(test_function_attributes),
		cmocka_unit_test(test_occupancy),
		cmocka_unit_test(test_limits_and_strings),
	};

	return cmocka_run_group_tests(tests, sgt_setup, sgt_teardown);
}
