/* device_attr.c -- the architecture softgpu presents (SOFTGPU_CC) and every CUdevice_attribute. */
#include <stdio.h>
#include <string.h>

#include "softgpu.h"

/*
 * Each compute capability softgpu can present takes its limits from the CUDA C++ Programming
 * Guide's table of technical specifications per compute capability (shared memory per SM and
 * per block with opt-in, resident threads and blocks per SM, registers) and its other numbers
 * (L2, clocks, bus width, multiprocessors, PCI id) from one shipping GPU of that architecture,
 * named here; 13.0 is no GPU's (below). What softgpu cannot do is reported absent whatever the architecture has: thread
 * block clusters, tensor-map (TMA) access, persisting L2 and access-policy windows, more than one
 * memory synchronization domain. Libraries choose their kernels by the compute capability, so
 * this is what decides which of their images they load (module.c takes a fatbin's newest PTX
 * that is not newer than it; docs/softgpu.md).
 */
/* clang-format off */
static const struct sg_arch archs[] = {
	/* CC     model                 smem/SM  opt-in  resv thr/SM blk  L2 bytes   clock kHz mem kHz bus  SMs fp64 PCI device id */
	{7, 5,  "Tesla T4",               65536,  65536,    0, 1024, 16,   4194304, 1590000,  5001000,  256,  40, 32, 0x1eb810de, 0x12a210de},
	{8, 0,  "A100-SXM4-40GB",        167936, 166912, 1024, 2048, 32,  41943040, 1410000,  1215000, 5120, 108,  2, 0x20b010de, 0},
	{8, 6,  "A10",                   102400, 101376, 1024, 1536, 16,   6291456, 1695000,  6251000,  384,  72, 64, 0x223610de, 0},
	{8, 9,  "L4",                    102400, 101376, 1024, 1536, 24,  50331648, 2040000,  6251000,  192,  58, 64, 0x27b810de, 0},
	{9, 0,  "H100-SXM5-80GB",        233472, 232448, 1024, 2048, 32,  52428800, 1980000,  2619000, 5120, 132,  2, 0x233010de, 0},
	{12, 0, "GeForce RTX 5090",      102400, 101376, 1024, 1536, 32, 100663296, 2407000, 14001000,  512, 170, 64, 0x2b8510de, 0},
	/* No GPU: the next major architecture, with 12.0's limits. Libraries built with CUDA 13
	 * ship SASS up to sm_121 at most, so on it they take their PTX (forward compatibility),
	 * the only code softgpu runs: cuBLAS's GEMM and GEMV need this (docs/softgpu.md). */
	{13, 0, "no GPU: 12.0's limits", 102400, 101376, 1024, 1536, 32, 100663296, 2407000, 14001000,  512,  40, 64, 0, 0},
};
/* clang-format on */

const struct sg_arch *sg_arch_find(const char *cc)
{
	int major, minor, n = 0;

	if (cc == NULL || sscanf(cc, "%d.%d%n", &major, &minor, &n) != 2 || cc[n] != 0)
		return NULL;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i].major == major && archs[i].minor == minor)
			return &archs[i];
	return NULL;
}

const struct sg_arch *sg_arch(void)
{
	return sg_cfg.arch ? sg_cfg.arch : &archs[0];
}

void sg_arch_list(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]) && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%d.%d", i ? ", " : "", archs[i].major,
				      archs[i].minor);
}

CUresult sg_device_attr(const struct sg_device *dev, int attr, int *value)
{
	const struct sg_arch *a = sg_arch();
	int v;

	switch ((CUdevice_attribute)attr) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		v = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		v = 64;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		v = 2147483647;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
		v = 65535;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		v = 65535;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		v = 49152;
		break;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		v = 32;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
		v = 2147483647;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		v = a->clock_khz;
		break;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
		v = 512;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		v = (int)sg_cfg.sm_count;
		break;
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_INTEGRATED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
		v = CU_COMPUTEMODE_DEFAULT;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH:
		v = 131072;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH:
		v = 131072;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
		v = 512;
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		v = dev->pci_bus;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
		v = a->mem_clock_khz;
		break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		v = a->bus_width;
		break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		v = a->l2_size;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		v = a->threads_per_sm;
		break;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		v = 3;
		break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE:
		v = 8192;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE:
		v = 8192;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
		v = 32;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS:
		v = 2046;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH:
		v = 131072;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH:
		v = 16384;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS:
		v = 2048;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH:
		v = 32768;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS:
		v = 2046;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH:
		v = 268435456;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH:
		v = 131072;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT:
		v = 65000;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH:
		v = 2097120;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH:
		v = 32768; /* mipmapped arrays (array.c) */
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT:
		v = 32768; /* mipmapped arrays (array.c) */
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		v = a->major;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		v = a->minor;
		break;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH:
		v = 32768; /* mipmapped arrays (array.c) */
		break;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		v = a->smem_per_sm;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		v = 65536;
		break;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
		v = dev->ordinal;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
		v = a->fp32_per_fp64;
		break;
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
		v = 1; /* engine.c runs a cooperative grid's blocks all at once */
		break;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		v = a->smem_optin;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		v = 1; /* vmm.c */
		break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		v = a->blocks_per_sm;
		break;
	case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
		v = a->smem_reserved;
		break;
	case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		v = 1; /* mempool.c */
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
		v = 0; /* not even at 9.0+: softgpu has no thread block clusters */
		break;
	case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
		v = 1;
		break;
	case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
		v = 0; /* no TMA (cp.async.bulk.tensor) at any CC */
		break;
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG:
		v = CU_DEVICE_NUMA_CONFIG_NONE;
		break;
	case CU_DEVICE_ATTRIBUTE_NUMA_ID:
		v = -1;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
		v = -1;
		break;
	case CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID:
		v = (int)a->pci_device_id;
		break;
	case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID:
		v = (int)a->pci_subsystem_id;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:
		v = 0;
		break;
	case CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED:
		v = 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	*value = v;
	return CUDA_SUCCESS;
}
