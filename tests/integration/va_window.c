/* va_window.c -- a session's device address window (include/gpupool/va_window.h), checked
 * through the pool: `va_window K MODE` expects every device address of device d in
 * [32 TiB + K * 8 TiB + d TiB, + 1 TiB) on each device the session has: cuMemAlloc,
 * cuMemAllocPitch, and with MODE "place" (the driver places its memory, softgpu's
 * SOFTGPU_VA_WINDOW) also cuMemAllocAsync from the default pool, cuMemAllocManaged and a
 * cuMemAddressReserve without a hint; with MODE "vmm" (the worker maps the window's memory
 * itself) those three answer
 * CUDA_ERROR_NOT_SUPPORTED, and the device's attributes claim none of them (nor mapped host
 * memory); MODE "default" (no window asked for: softgpu's own window 0) as
 * "place" but for managed memory, which is host memory there. A kernel and copies over the memory are checked against the CPU.
 * Prints one line per failed check and "va_window: ok" when all hold. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "triple_ptx.h"

#define N 4096u

static int bad;
static uint64_t win_lo;

static void expect(const char *what, int dev, CUresult got, CUresult want)
{
	const char *g = NULL, *w = NULL;

	if (got == want)
		return;
	cuGetErrorName(got, &g);
	cuGetErrorName(want, &w);
	printf("FAIL device %d %s: %s, expected %s\n", dev, what, g ? g : "?", w ? w : "?");
	bad = 1;
}

static void in_window(const char *what, int dev, CUdeviceptr p, uint64_t len)
{
	uint64_t lo = win_lo + (uint64_t)dev * (1ull << 40);

	if (p >= lo && p + len <= lo + (1ull << 40))
		return;
	printf("FAIL device %d %s at %#llx: not in [%#llx, %#llx)\n", dev, what,
	       (unsigned long long)p, (unsigned long long)lo,
	       (unsigned long long)(lo + (1ull << 40)));
	bad = 1;
}

/* Triples n words at p with the kernel; checks them against the CPU from host copy h. */
static void triple(CUfunction f, int dev, const char *what, CUdeviceptr p, uint32_t *h)
{
	uint32_t n = N, out[N];
	void *args[] = {&p, &n};

	expect("cuLaunchKernel", dev,
	       cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
	expect("cuCtxSynchronize", dev, cuCtxSynchronize(), CUDA_SUCCESS);
	expect("cuMemcpyDtoH", dev, cuMemcpyDtoH(out, p, sizeof(out)), CUDA_SUCCESS);
	for (uint32_t i = 0; i < N; i++) {
		if (out[i] != h[i] * 3 + 1) {
			printf("FAIL device %d %s: word %u is %u, expected %u\n", dev, what, i,
			       out[i], h[i] * 3 + 1);
			bad = 1;
			return;
		}
	}
}

static const struct {
	CUdevice_attribute attr;
	const char *name;
} claims[] = {
	{CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "MANAGED_MEMORY"},
	{CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "CAN_MAP_HOST_MEMORY"},
	{CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, "MEMORY_POOLS_SUPPORTED"},
	{CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
	 "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"},
};

static void one_device(int dev, int place)
{
	static uint32_t h[N], back[N];
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUdeviceptr a = 0, pitched = 0, async = 0, managed = 0;
	size_t pitch = 0;
	CUresult r;

	/* what the device claims is what it then does: with the worker's own placement
	 * managed memory, mapped host memory, pools and reservations are refused */
	for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		int v = -1;

		expect("cuDeviceGetAttribute", dev, cuDeviceGetAttribute(&v, claims[i].attr, dev),
		       CUDA_SUCCESS);
		if ((v != 0) != (place != 0)) {
			printf("FAIL device %d %s is %d\n", dev, claims[i].name, v);
			bad = 1;
		}
	}
	expect("cuDevicePrimaryCtxRetain", dev, cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
	expect("cuCtxSetCurrent", dev, cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	expect("cuModuleLoadData", dev, cuModuleLoadData(&mod, triple_ptx), CUDA_SUCCESS);
	expect("cuModuleGetFunction", dev, cuModuleGetFunction(&f, mod, "triple"), CUDA_SUCCESS);
	for (uint32_t i = 0; i < N; i++)
		h[i] = i * 7 + (uint32_t)dev;

	expect("cuMemAlloc", dev, cuMemAlloc(&a, sizeof(h)), CUDA_SUCCESS);
	in_window("cuMemAlloc", dev, a, sizeof(h));
	expect("cuMemcpyHtoD", dev, cuMemcpyHtoD(a, h, sizeof(h)), CUDA_SUCCESS);
	triple(f, dev, "cuMemAlloc memory", a, h);

	/* rows of 1000 bytes: the pitch pads them; a device copy into row 1 and back */
	expect("cuMemAllocPitch", dev, cuMemAllocPitch(&pitched, &pitch, 1000, 8, 4), CUDA_SUCCESS);
	in_window("cuMemAllocPitch", dev, pitched, pitch * 8);
	if (pitch < 1000)
		printf("FAIL device %d pitch %zu\n", dev, pitch), bad = 1;
	expect("cuMemcpyDtoD", dev, cuMemcpyDtoD(pitched + pitch, a, 1000), CUDA_SUCCESS);
	memset(back, 0, sizeof(back));
	expect("cuMemcpyDtoH", dev, cuMemcpyDtoH(back, pitched + pitch, 1000), CUDA_SUCCESS);
	for (uint32_t i = 0; i < 250; i++)
		if (back[i] != h[i] * 3 + 1) {
			printf("FAIL device %d pitched copy: word %u is %u\n", dev, i, back[i]);
			bad = 1;
			break;
		}

	r = cuMemAllocAsync(&async, sizeof(h), NULL);
	if (place) {
		expect("cuMemAllocAsync", dev, r, CUDA_SUCCESS);
		in_window("cuMemAllocAsync", dev, async, sizeof(h));
		expect("cuMemcpyHtoD", dev, cuMemcpyHtoD(async, h, sizeof(h)), CUDA_SUCCESS);
		triple(f, dev, "cuMemAllocAsync memory", async, h);
		expect("cuMemFreeAsync", dev, cuMemFreeAsync(async, NULL), CUDA_SUCCESS);
	} else {
		expect("cuMemAllocAsync", dev, r, CUDA_ERROR_NOT_SUPPORTED);
	}

	r = cuMemAllocManaged(&managed, sizeof(h), CU_MEM_ATTACH_GLOBAL);
	if (place) {
		expect("cuMemAllocManaged", dev, r, CUDA_SUCCESS);
		if (place == 1)
			in_window("cuMemAllocManaged", dev, managed, sizeof(h));
		if (r == CUDA_SUCCESS) {
			uint32_t *m = (uint32_t *)(uintptr_t)managed, n = N;
			void *args[] = {&managed, &n};

			memcpy(m, h, sizeof(h));
			expect("cuLaunchKernel", dev,
			       cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL),
			       CUDA_SUCCESS);
			expect("cuCtxSynchronize", dev, cuCtxSynchronize(), CUDA_SUCCESS);
			for (uint32_t i = 0; i < N; i++)
				if (m[i] != h[i] * 3 + 1) {
					printf("FAIL device %d managed: word %u is %u\n", dev, i,
					       m[i]);
					bad = 1;
					break;
				}
			expect("cuMemFree managed", dev, cuMemFree(managed), CUDA_SUCCESS);
		}
	} else {
		expect("cuMemAllocManaged", dev, r, CUDA_ERROR_NOT_SUPPORTED);
	}

	/* an address reservation without a hint of its own (softgpu keeps it in the window) */
	r = cuMemAddressReserve(&async, 2u << 20, 0, 0, 0);
	if (place) {
		expect("cuMemAddressReserve", dev, r, CUDA_SUCCESS);
		if (place == 1)
			in_window("cuMemAddressReserve", dev, async, 2u << 20);
		expect("cuMemAddressFree", dev, cuMemAddressFree(async, 2u << 20), CUDA_SUCCESS);
	} else {
		expect("cuMemAddressReserve", dev, r, CUDA_ERROR_NOT_SUPPORTED);
	}

	expect("cuMemFree", dev, cuMemFree(a), CUDA_SUCCESS);
	expect("cuMemFree pitched", dev, cuMemFree(pitched), CUDA_SUCCESS);
	/* freed ranges come back: many allocations in turn stay in the window */
	for (int i = 0; i < 64; i++) {
		CUdeviceptr p = 0;

		expect("cuMemAlloc again", dev, cuMemAlloc(&p, (size_t)(i + 1) << 16),
		       CUDA_SUCCESS);
		in_window("cuMemAlloc again", dev, p, (size_t)(i + 1) << 16);
		expect("cuMemFree again", dev, cuMemFree(p), CUDA_SUCCESS);
	}
	expect("cuModuleUnload", dev, cuModuleUnload(mod), CUDA_SUCCESS);
	cuCtxSetCurrent(NULL);
	expect("cuDevicePrimaryCtxRelease", dev, cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
	int n = 0, k;

	if (argc != 3 ||
	    (strcmp(argv[2], "place") && strcmp(argv[2], "vmm") && strcmp(argv[2], "default"))) {
		fprintf(stderr, "usage: va_window K place|vmm|default\n");
		return 2;
	}
	k = atoi(argv[1]);
	win_lo = (32ull << 40) + (uint64_t)k * (8ull << 40);
	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
		printf("FAIL cuInit / cuDeviceGetCount\n");
		return 1;
	}
	for (int d = 0; d < n; d++)
		one_device(d, strcmp(argv[2], "place") == 0	? 1
			      : strcmp(argv[2], "default") == 0 ? 2
								: 0);
	if (bad)
		return 1;
	printf("va_window: ok (%d devices in window %d)\n", n, k);
	return 0;
}
