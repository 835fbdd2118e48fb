/* api_vmm.c -- virtual memory management through the pool: reserve, create, map, access.
 *
 * The pool's driver keeps the objects and the worker checks every address and handle
 * (daemon/worker/vmm.c); an allocation handle here is the worker's id for it. A reservation
 * is also a range of the registry (GP_MEM_VMM), reserved in this process's address space
 * like any device range, so unified copies know its addresses are the device's. This file
 * remembers what is mapped where, and on which device, to answer pointer attributes and
 * cuMemGetAddressRange locally; it learns it only from calls the pool answered with
 * success. Export handle types need a file descriptor or handle of the GPU host, which
 * cannot cross the network: cuMemCreate asking for one is CUDA_ERROR_NOT_SUPPORTED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interposer.h"
#include "log.h"
#include "grow.h"

#define RESERVE_RETRIES 8

struct vmap {
	uint64_t va, bytes;
	int device;
	bool access;
	unsigned long long id;
};

struct vhandle {
	uint64_t handle;
	int device;
	unsigned refs;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmap *maps; /* sorted by va */
static size_t nmaps, cap_maps;
static struct vhandle *handles;
static size_t nhandles, cap_handles;

/* The current context's pool id, or 0: these calls need none, but run in it when there is. */
static uint64_t ctx_opt(void)
{
	struct gp_ictx *c = gp__ctx_current();

	return gp__ctx_valid(c) ? c->remote : 0;
}

/* What gpupool forwards: pinned memory on one of the session's devices. */
static CUresult check_location(const CUmemLocation *loc)
{
	if (loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->id < 0 || loc->id >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED ? CUDA_ERROR_NOT_SUPPORTED
								    : CUDA_ERROR_INVALID_VALUE;
	return check_location(&prop->location);
}

/* ---- handles: which device each is on, for the mappings made of it (under vmm_lock) ---- */

static struct vhandle *handle_find(uint64_t h)
{
	for (size_t i = 0; i < nhandles; i++)
		if (handles[i].handle == h)
			return &handles[i];
	return NULL;
}

static void handle_ref(uint64_t h, int device)
{
	struct vhandle *vh = handle_find(h);

	if (vh)
		vh->refs++;
	else if (GP_GROW(handles, cap_handles, nhandles))
		handles[nhandles++] = (struct vhandle){h, device, 1};
}

static void handle_unref(uint64_t h)
{
	struct vhandle *vh = handle_find(h);

	if (vh && --vh->refs == 0)
		*vh = handles[--nhandles];
}

/* ---- allocations ---- */

GP_CUDA_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
						      const CUmemAllocationProp *prop,
						      CUmemAllocationGranularity_flags option)
{
	struct gp_out_vmm_granularity out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	r = check_prop(prop);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_vmm_granularity(
		0,
		&(struct gp_in_vmm_granularity){.ctx = ctx_opt(),
						.device = (uint64_t)prop->location.id,
						.option = (uint32_t)option},
		&out);
	if (r == CUDA_SUCCESS)
		*granularity = (size_t)out.granularity;
	return r;
}

GP_CUDA_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct gp_out_vmm_create out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!handle || flags || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = check_prop(prop);
	if (r != CUDA_SUCCESS)
		return r;
	if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE || prop->win32HandleMetaData)
		return CUDA_ERROR_NOT_SUPPORTED; /* nothing to export across the network */
	r = gp__rpc_vmm_create(
		0,
		&(struct gp_in_vmm_create){.ctx = ctx_opt(),
					   .device = (uint64_t)prop->location.id,
					   .bytes = size,
					   .compression = prop->allocFlags.compressionType,
					   .usage = prop->allocFlags.usage},
		&out);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&vmm_lock);
	handle_ref(out.handle, prop->location.id);
	pthread_mutex_unlock(&vmm_lock);
	*handle = out.handle;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_vmm_release(0, &(struct gp_in_vmm_release){.ctx = ctx_opt(), .handle = handle},
				NULL);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&vmm_lock);
		handle_unref(handle);
		pthread_mutex_unlock(&vmm_lock);
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
							       CUmemGenericAllocationHandle handle)
{
	struct gp_out_vmm_props out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_vmm_props(0, &(struct gp_in_vmm_props){.ctx = ctx_opt(), .handle = handle},
			      &out);
	if (r != CUDA_SUCCESS)
		return r;
	memset(prop, 0, sizeof(*prop));
	prop->type = (CUmemAllocationType)out.type;
	prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = (int)out.device;
	prop->allocFlags.compressionType = (unsigned char)out.compression;
	prop->allocFlags.usage = (unsigned short)out.usage;
	return CUDA_SUCCESS;
}

/* ---- mappings known here (under vmm_lock) ---- */

static struct vmap *map_find(uint64_t va)
{
	for (size_t i = 0; i < nmaps; i++)
		if (va - maps[i].va < maps[i].bytes)
			return &maps[i];
	return NULL;
}

GP_CUDA_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
						    void *addr)
{
	struct gp_out_vmm_retain out;
	struct vmap *m;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_vmm_retain(
		0, &(struct gp_in_vmm_retain){.ctx = ctx_opt(), .addr = (uintptr_t)addr}, &out);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&vmm_lock);
	m = map_find((uintptr_t)addr);
	handle_ref(out.handle, m ? m->device : 0);
	pthread_mutex_unlock(&vmm_lock);
	*handle = out.handle;
	return CUDA_SUCCESS;
}

/* ---- reservations ---- */

static void free_remote(uint64_t ptr, uint64_t bytes)
{
	gp__rpc_vmm_address_free(
		0, &(struct gp_in_vmm_address_free){.ctx = ctx_opt(), .ptr = ptr, .bytes = bytes},
		NULL);
}

/*
 * Reserves in the pool and here. A range that lands on host memory of this process would
 * make unified copies ambiguous: it is held aside while another is taken (without the
 * hint, which the pool's driver honoured on that first try), then freed.
 */
GP_CUDA_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
					    CUdeviceptr addr, unsigned long long flags)
{
	uint64_t aside[RESERVE_RETRIES];
	int naside = 0, ret = -EEXIST;
	struct gp_out_vmm_reserve out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!ptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	while (naside < RESERVE_RETRIES) {
		r = gp__rpc_vmm_reserve(0,
					&(struct gp_in_vmm_reserve){.ctx = ctx_opt(),
								    .bytes = size,
								    .alignment = alignment,
								    .addr = naside ? 0 : addr,
								    .flags = flags},
					&out);
		if (r != CUDA_SUCCESS)
			break;
		ret = gp__range_add((uintptr_t)out.ptr, size, GP_MEM_VMM, NULL, 0);
		if (ret != -EEXIST)
			break;
		aside[naside++] = out.ptr;
	}
	while (naside > 0)
		free_remote(aside[--naside], size);
	if (r == CUDA_SUCCESS && ret) {
		if (ret != -EEXIST)
			free_remote(out.ptr, size);
		gp_log_warnx("address reservation: no range free in both processes");
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS)
		*ptr = (CUdeviceptr)out.ptr;
	return r;
}

GP_CUDA_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_vmm_address_free(
		0, &(struct gp_in_vmm_address_free){.ctx = ctx_opt(), .ptr = ptr, .bytes = size},
		NULL);
	if (r == CUDA_SUCCESS)
		gp__range_remove((uintptr_t)ptr, GP_MEM_VMM);
	return r;
}

/* ---- mapping and access ---- */

GP_CUDA_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
				 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct vhandle *vh;
	size_t at = 0;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	/* room for the record first: a mapping the pool made must be known here */
	pthread_mutex_lock(&vmm_lock);
	if (!GP_GROW(maps, cap_maps, nmaps)) {
		pthread_mutex_unlock(&vmm_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&vmm_lock);
	r = gp__rpc_vmm_map(0,
			    &(struct gp_in_vmm_map){.ctx = ctx_opt(),
						    .ptr = ptr,
						    .bytes = size,
						    .offset = offset,
						    .handle = handle,
						    .flags = flags},
			    NULL);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&vmm_lock);
	if (GP_GROW(maps, cap_maps, nmaps)) {
		while (at < nmaps && maps[at].va < ptr)
			at++;
		vh = handle_find(handle);
		memmove(&maps[at + 1], &maps[at], (nmaps - at) * sizeof(*maps));
		maps[at] =
			(struct vmap){ptr, size, vh ? vh->device : 0, false, gp__next_object_id()};
		nmaps++;
	}
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_vmm_unmap(
		0, &(struct gp_in_vmm_unmap){.ctx = ctx_opt(), .ptr = ptr, .bytes = size}, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&vmm_lock);
	for (size_t i = nmaps; i-- > 0;) {
		if (maps[i].va - ptr < size) {
			memmove(&maps[i], &maps[i + 1], (nmaps - i - 1) * sizeof(*maps));
			nmaps--;
		}
	}
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				       size_t count)
{
	uint64_t rw = 0, rd = 0, none = 0;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!desc || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		uint64_t bit;

		r = check_location(&desc[i].location);
		if (r != CUDA_SUCCESS)
			return r;
		bit = 1ull << desc[i].location.id; /* ndev <= GP_STATS_MAX_DEVICES */
		rw &= ~bit;
		rd &= ~bit;
		none &= ~bit; /* a later descriptor for one device wins */
		switch (desc[i].flags) {
		case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
			rw |= bit;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READ:
			rd |= bit;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_NONE:
			none |= bit;
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	r = gp__rpc_vmm_set_access(0,
				   &(struct gp_in_vmm_set_access){.ctx = ctx_opt(),
								  .ptr = ptr,
								  .bytes = size,
								  .rw_devices = rw,
								  .read_devices = rd,
								  .none_devices = none},
				   NULL);
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&vmm_lock);
	for (size_t i = 0; i < nmaps; i++) {
		uint64_t bit = 1ull << maps[i].device;

		if (maps[i].va - ptr >= size)
			continue;
		if ((rw | rd) & bit)
			maps[i].access = true;
		else if (none & bit)
			maps[i].access = false;
	}
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
				       CUdeviceptr ptr)
{
	struct gp_out_vmm_get_access out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!flags || !location)
		return CUDA_ERROR_INVALID_VALUE;
	r = check_location(location);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_vmm_get_access(0,
				   &(struct gp_in_vmm_get_access){.ctx = ctx_opt(),
								  .device = (uint64_t)location->id,
								  .ptr = ptr},
				   &out);
	if (r == CUDA_SUCCESS)
		*flags = out.flags;
	return r;
}

/* ---- pointer queries on reserved addresses (api_memory.c asks) ---- */

CUresult gp__vmm_address_range(CUdeviceptr ptr, CUdeviceptr *base, size_t *size)
{
	struct vmap *m;

	pthread_mutex_lock(&vmm_lock);
	m = map_find(ptr);
	if (m) {
		if (base)
			*base = m->va;
		if (size)
			*size = m->bytes;
	}
	pthread_mutex_unlock(&vmm_lock);
	return m ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult gp__vmm_pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr, bool lenient)
{
	struct vmap m = {0};
	bool known;

	pthread_mutex_lock(&vmm_lock);
	known = map_find(ptr) != NULL;
	if (known)
		m = *map_find(ptr);
	pthread_mutex_unlock(&vmm_lock);
	if (!known && !lenient)
		return CUDA_ERROR_INVALID_VALUE; /* reserved, not mapped */
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = NULL; /* a device's memory, no context's */
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = known ? CU_MEMORYTYPE_DEVICE : 0;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = known ? ptr : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (known && !lenient)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = NULL;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = known;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = known ? m.device : -1;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = known ? m.id : 0;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = known ? m.va : 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = known ? m.bytes : 0;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = known && m.access ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
						      : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = CU_MEM_HANDLE_TYPE_NONE;
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}
