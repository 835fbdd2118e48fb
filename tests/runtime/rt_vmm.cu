// rt_vmm.cu -- virtual memory management under cudart: the driver's VMM calls, reached as
// cudart programs reach them (cudaGetDriverEntryPointByVersion), on the primary context
// cudart made; a <<<>>> kernel and cudaMemcpy/cudaMemset across two allocations mapped side
// by side, a cudaMemcpyDefault copy that must see the range as device memory, and access
// rules, all checked against the CPU.
#include <cstring>
#include <vector>

#include <cuda.h>

#include "rt_check.h"

__global__ void affine(unsigned *v, unsigned n, unsigned a, unsigned b)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = v[i] * a + b;
}

#define DRV(name) decltype(&name) p_##name = (decltype(&name))entry(#name)

static void *entry(const char *name)
{
	void *fn = nullptr;
	cudaDriverEntryPointQueryResult q;

	CK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q));
	EXPECT(fn && q == cudaDriverEntryPointSuccess, "%s resolved", name);
	return fn;
}

#define CU(call)                                                                   \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		EXPECT(r_ == CUDA_SUCCESS, "%s succeeds, got %d", #call, (int)r_); \
	} while (0)

int main()
{
	DRV(cuDeviceGetAttribute);
	DRV(cuMemGetAllocationGranularity);
	DRV(cuMemCreate);
	DRV(cuMemRelease);
	DRV(cuMemAddressReserve);
	DRV(cuMemAddressFree);
	DRV(cuMemMap);
	DRV(cuMemUnmap);
	DRV(cuMemSetAccess);
	int dev = 0, vmm = 0;

	CK(cudaFree(nullptr)); // the primary context
	CU(p_cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
				  dev));
	EXPECT(vmm == 1, "VMM supported, attribute %d", vmm);

	CUmemAllocationProp prop;
	std::memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	size_t g = 0;
	CU(p_cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	CUmemGenericAllocationHandle h[2];
	CUdeviceptr va;
	CU(p_cuMemCreate(&h[0], g, &prop, 0));
	CU(p_cuMemCreate(&h[1], g, &prop, 0));
	CU(p_cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
	CU(p_cuMemMap(va, g, 0, h[0], 0));
	CU(p_cuMemMap(va + g, g, 0, h[1], 0));
	// Released while mapped: the mappings keep the memory.
	CU(p_cuMemRelease(h[0]));
	CU(p_cuMemRelease(h[1]));

	unsigned *d = (unsigned *)va, n = (unsigned)(2 * g / sizeof(unsigned));
	std::vector<unsigned> a(n), b(n);
	for (unsigned i = 0; i < n; i++)
		a[i] = i ^ 0x5a5a;
	// No access yet: copies are refused.
	EXPECT(cudaMemcpy(d, a.data(), 2 * g, cudaMemcpyHostToDevice) != cudaSuccess,
	       "a copy before cuMemSetAccess fails");
	cudaGetLastError();
	CUmemAccessDesc acc;
	std::memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CU(p_cuMemSetAccess(va, 2 * g, &acc, 1));

	CK(cudaMemcpy(d, a.data(), 2 * g, cudaMemcpyHostToDevice));
	CK(cudaMemset(d + n / 2 - 8, 0x11, 16 * sizeof(unsigned))); // across the seam
	affine<<<(n + 255) / 256, 256>>>(d, n, 5, 3);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(b.data(), d, 2 * g, cudaMemcpyDefault)); // unified: device to host
	for (unsigned i = 0; i < n; i++) {
		unsigned x = (i >= n / 2 - 8 && i < n / 2 + 8) ? 0x11111111u : a[i];
		EXPECT(b[i] == x * 5 + 3, "element %u: %u, expected %u", i, b[i], x * 5 + 3);
	}

	cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, d + n - 1));
	EXPECT(pa.type == cudaMemoryTypeDevice && pa.device == dev, "device memory (type %d)",
	       (int)pa.type);

	CU(p_cuMemUnmap(va, 2 * g));
	EXPECT(cudaMemcpy(b.data(), d, 64, cudaMemcpyDeviceToHost) != cudaSuccess,
	       "a copy after unmapping fails");
	cudaGetLastError();
	CU(p_cuMemAddressFree(va, 2 * g));
	std::printf("rt_vmm: PASSED\n");
	return 0;
}
