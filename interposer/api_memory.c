/* api_memory.c -- device memory, copies and memsets; host memory is the client's own,
 * except managed and mapped page-locked memory, which is managed.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpupool/wire.h>

#include "interposer.h"
#include "log.h"

/* ---- device allocations -------------------------------------------------------- */

#define ALIAS_RETRIES 8

static CUresult free_remote(struct gp_ictx *c, uint64_t dptr)
{
	return gp__rpc_mem_free(0, &(struct gp_in_mem_free){.ctx = c->remote, .dptr = dptr}, NULL);
}

/* One allocation: pitched (MEM_ALLOC_PITCH) when elem is set, else width bytes. */
static CUresult alloc_once(struct gp_ictx *c, uint64_t width, uint64_t height, unsigned elem,
			   uint64_t *dptr, uint64_t *pitch, uint64_t *bytes)
{
	struct gp_out_mem_alloc_pitch po;
	struct gp_out_mem_alloc o;
	CUresult r;

	if (!elem) {
		r = gp__rpc_mem_alloc(
			0, &(struct gp_in_mem_alloc){.ctx = c->remote, .bytes = width}, &o);
		*dptr = o.dptr;
		*bytes = width;
		return r;
	}
	r = gp__rpc_mem_alloc_pitch(
		0,
		&(struct gp_in_mem_alloc_pitch){
			.ctx = c->remote, .width = width, .height = height, .esize = elem},
		&po);
	*dptr = po.dptr;
	*pitch = po.pitch;
	*bytes = po.pitch * height;
	return r;
}

/*
 * Allocates and records the range. A device address that falls on host memory of this
 * process would make unified copies ambiguous, so such an allocation is held aside while
 * another is made, then freed (registry.c).
 */
static CUresult alloc_device(struct gp_ictx *c, uint64_t width, uint64_t height, unsigned elem,
			     uint64_t *dptr, uint64_t *pitch)
{
	uint64_t aside[ALIAS_RETRIES];
	int naside = 0, ret = -EEXIST;
	CUresult r = CUDA_SUCCESS;

	while (naside < ALIAS_RETRIES) {
		uint64_t bytes;

		r = alloc_once(c, width, height, elem, dptr, pitch, &bytes);
		if (r != CUDA_SUCCESS)
			break;
		ret = gp__range_add((uintptr_t)*dptr, (size_t)bytes, GP_MEM_DEVICE, c, 0);
		if (ret != -EEXIST)
			break;
		aside[naside++] = *dptr;
	}
	while (naside > 0)
		free_remote(c, aside[--naside]);
	if (r == CUDA_SUCCESS && ret) {
		/* Out of registry memory, or every try landed on host memory here. */
		if (ret != -EEXIST)
			free_remote(c, *dptr);
		gp_log_warnx("device allocation: no address free in both processes");
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct gp_ictx *c;
	uint64_t p, unused;
	CUresult r;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = alloc_device(c, bytesize, 1, 0, &p, &unused);
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)p;
	return r;
}

GP_CUDA_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
					   size_t height, unsigned int elem)
{
	struct gp_ictx *c;
	uint64_t p, pp;
	CUresult r;

	if (!dptr || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	r = alloc_device(c, width, height, elem, &p, &pp);
	if (r == CUDA_SUCCESS) {
		*dptr = (CUdeviceptr)p;
		*pitch = (size_t)pp;
	}
	return r;
}

/* Managed memory: the same address here and on the pool (managed.c). */
GP_CUDA_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct gp_ictx *c;
	CUresult r;

	if (!dptr || bytesize == 0 ||
	    (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	return gp__managed_alloc(c, bytesize, flags, false, 0, dptr);
}

GP_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (dptr == 0)
		return CUDA_SUCCESS; /* freeing NULL is a no-op, as in the driver */
	if (!gp__range_find(dptr, &rg) || rg.kind != GP_MEM_DEVICE || rg.base != dptr ||
	    !gp__ctx_valid(rg.ctx) || rg.ctx->remote == 0 || (rg.flags & GP_RANGE_MIRROR))
		return CUDA_ERROR_INVALID_VALUE;
	if (rg.flags & GP_RANGE_MANAGED)
		return gp__managed_free(&rg);
	if (rg.flags & GP_RANGE_GRAPH) {
		/* its range stays its graph's while the graph or an executable of it lives */
		r = free_remote(rg.ctx, dptr);
		if (r == CUDA_SUCCESS)
			gp__graphmem_sweep();
		return r;
	}
	/* Forgotten before the address can come back from another thread's allocation;
	 * remembered again if the free fails. Two frees of one pointer: one wins. */
	if (!gp__range_remove(dptr, GP_MEM_DEVICE))
		return CUDA_ERROR_INVALID_VALUE;
	/* Freed in the context it was allocated in, whatever is current. */
	r = free_remote(rg.ctx, dptr);
	if (r != CUDA_SUCCESS)
		gp__range_add(rg.base, rg.size, rg.kind, rg.ctx, rg.flags);
	return r;
}

GP_CUDA_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
	struct gp_ictx *c;
	struct gp_out_mem_get_info out;
	CUresult r;

	if (!free_bytes || !total_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_mem_get_info(0, &(struct gp_in_mem_get_info){.ctx = c->remote}, &out);
	if (r == CUDA_SUCCESS) {
		*free_bytes = (size_t)out.free;
		*total_bytes = (size_t)out.total;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__range_find(dptr, &rg) || rg.kind == GP_MEM_HOST)
		return CUDA_ERROR_NOT_FOUND;
	if (rg.kind == GP_MEM_VMM)
		return gp__vmm_address_range(dptr, base, size);
	if (base)
		*base = rg.base;
	if (size)
		*size = rg.size;
	return CUDA_SUCCESS;
}

/* ---- host memory: ordinary memory of this process -------------------------------
 * Page-locked memory matters for DMA on the GPU host, not here: copies from it
 * travel like any other. Mapped page-locked memory (CU_MEMHOSTALLOC_DEVICEMAP) is
 * managed.c's: the pool's managed memory at the same address, so the device pointer is
 * the host pointer. Registered memory with CU_MEMHOSTREGISTER_DEVICEMAP is mirrored by
 * managed memory of the pool at another address, kept coherent the same way. */

GP_CUDA_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
	void *p;
	CUresult r;

	if (!pp || bytes == 0 ||
	    (flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
		       CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTALLOC_DEVICEMAP) {
		struct gp_ictx *c;
		CUdeviceptr d;

		r = gp__ctx_need(&c);
		if (r == CUDA_SUCCESS)
			r = gp__managed_alloc(c, bytes, CU_MEM_ATTACH_GLOBAL, true, flags, &d);
		if (r == CUDA_SUCCESS)
			*pp = (void *)(uintptr_t)d;
		return r;
	}
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (gp__range_add((uintptr_t)p, bytes, GP_MEM_HOST, gp__ctx_current(), flags)) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytes)
{
	return cuMemHostAlloc(pp, bytes, 0);
}

GP_CUDA_EXPORT CUresult cuMemFreeHost(void *p)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__range_find((uintptr_t)p, &rg) || rg.kind != GP_MEM_HOST ||
	    rg.base != (uintptr_t)p || (rg.flags & GP_RANGE_REGISTERED) /* registered, not ours */)
		return CUDA_ERROR_INVALID_VALUE;
	/* As the driver's does, this waits for copies still landing in page-locked memory. */
	gp__detached_drain();
	if (rg.flags & GP_RANGE_MANAGED)
		return gp__managed_free(&rg);
	gp__range_remove((uintptr_t)p, GP_MEM_HOST);
	free(p);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!flags || !gp__range_find((uintptr_t)p, &rg) || rg.kind != GP_MEM_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = rg.flags & ~(GP_RANGE_REGISTERED | GP_RANGE_MANAGED);
	return CUDA_SUCCESS;
}

/* Mapped page-locked memory has one address on both sides. */
GP_CUDA_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
						     unsigned int flags)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!pdptr || flags != 0 || !gp__range_find((uintptr_t)p, &rg) || rg.kind != GP_MEM_HOST ||
	    !(rg.flags & GP_RANGE_MANAGED) || !gp__managed_device_ptr(p, pdptr))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Registered ranges are remembered (for pointer attributes) but stay the caller's. */
GP_CUDA_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned int flags)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!p || bytes == 0 || (flags & CU_MEMHOSTREGISTER_IOMEMORY) ||
	    (flags & ~(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
		       CU_MEMHOSTREGISTER_READ_ONLY)))
		return CUDA_ERROR_INVALID_VALUE;
	if (gp__range_find((uintptr_t)p, &rg) || gp__range_find((uintptr_t)p + bytes - 1, &rg))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (flags & CU_MEMHOSTREGISTER_DEVICEMAP) {
		struct gp_ictx *c;
		CUdeviceptr d;

		r = gp__ctx_need(&c);
		return r != CUDA_SUCCESS ? r : gp__managed_register(c, p, bytes, flags, &d);
	}
	/* GP_RANGE_REGISTERED marks "registered, not allocated by us" in the registry (not
	 * IOMEMORY, which is WRITECOMBINED's bit for an allocation). */
	if (gp__range_add((uintptr_t)p, bytes, GP_MEM_HOST, gp__ctx_current(),
			  flags | GP_RANGE_REGISTERED))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemHostUnregister(void *p)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__range_find((uintptr_t)p, &rg) || rg.kind != GP_MEM_HOST ||
	    rg.base != (uintptr_t)p || !(rg.flags & GP_RANGE_REGISTERED))
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	gp__detached_drain(); /* copies still landing there are done first */
	if (rg.flags & GP_RANGE_MANAGED)
		return gp__managed_unregister(&rg);
	gp__range_remove((uintptr_t)p, GP_MEM_HOST);
	return CUDA_SUCCESS;
}

/* ---- pointer attributes, answered from the registry ------------------------------- */

static CUresult pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr, bool lenient)
{
	struct gp_range rg;
	bool known = gp__range_find(ptr, &rg);
	bool dev = known && rg.kind != GP_MEM_HOST;
	bool managed = known && (rg.flags & GP_RANGE_MANAGED); /* managed or mapped */

	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	if (!known && !lenient)
		return CUDA_ERROR_INVALID_VALUE;
	if (known && rg.kind == GP_MEM_VMM)
		return gp__vmm_pointer_attr(data, attr, ptr, lenient);
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = known ? (CUcontext)rg.ctx : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = !known ? 0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		if (known && !dev && !managed && !lenient)
			return CUDA_ERROR_NOT_SUPPORTED; /* host memory is not mapped remotely */
		if (!dev && managed && gp__managed_device_ptr((const void *)ptr, data))
			break; /* mapped: its address on the pool */
		*(CUdeviceptr *)data = dev ? ptr : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (dev && !managed && !lenient)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = known && (!dev || managed) ? (void *)ptr : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = dev && managed;
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		/* cuMemAlloc memory exports (api_ipc.c); pool, managed and opened memory do not */
		*(int *)data = known && rg.kind == GP_MEM_DEVICE &&
			       !(rg.flags & (GP_RANGE_POOLED | GP_RANGE_MANAGED | GP_RANGE_MIRROR |
					     GP_RANGE_IPC));
		break;
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = dev || managed;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = known && rg.ctx ? rg.ctx->device : -1;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = known ? rg.id : 0;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = known ? rg.base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = known ? rg.size : 0;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = known ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : 0;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data =
			known && (rg.flags & GP_RANGE_POOLED) ? (CUmemoryPool)rg.owner : NULL;
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

/* Only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set (as in the driver); the pool's
 * synchronous copies and memsets of device memory already complete before they return. */
GP_CUDA_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr,
					      CUdeviceptr ptr)
{
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!value || attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CUDA_ERROR_INVALID_VALUE;
	if (!gp__range_find(ptr, &rg) || rg.kind != GP_MEM_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	CUresult r = gp__ready();

	return r != CUDA_SUCCESS ? r : pointer_attr(data, attr, ptr, false);
}

/* Unknown pointers get empty values rather than an error, as cuda.h specifies. */
GP_CUDA_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs,
					       void **data, CUdeviceptr ptr)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!attrs || !data)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < n; i++) {
		r = pointer_attr(data[i], attrs[i], ptr, true);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

/* ---- copies ---------------------------------------------------------------------------
 * The shared bodies take the stream, whether the call is asynchronous, and whether NULL
 * means the per-thread default stream (the _ptds/_ptsz entry points). The device side of
 * a copy is height rows of width bytes, pitch apart (pitch 0: one packed range); the host
 * side travels packed. */

static CUresult copy_to_remote(struct gp_ictx *c, CUdeviceptr dst, const void *src, uint64_t width,
			       uint64_t height, uint64_t pitch, uint64_t sid, bool async)
{
	struct gp_in_memcpy_htod in = {.ctx = c->remote,
				       .dst = dst,
				       .width = width,
				       .height = height,
				       .pitch = pitch,
				       .stream = sid,
				       .data = src,
				       .data_len = width * height};

	bool taken;
	CUresult r = gp__capture_copy(c, sid, dst, pitch, (void *)src, width, width, height, true,
				      &taken);

	/* captured: the bytes are fetched at every launch, not sent now */
	if (taken)
		return r;
	r = gp__rpc_memcpy_htod(async ? GP_F_NO_REPLY : 0, &in, NULL);
	/* A synchronous copy is a synchronization point: managed memory comes back. */
	return r == CUDA_SUCCESS && !async ? gp__managed_pull() : r;
}

/* The bytes come into dst (staged by the reader when dst is managed memory, whose pages
 * may be write-protected); the answer says how the copy ended. */
static CUresult copy_from_remote(struct gp_ictx *c, void *dst, CUdeviceptr src, uint64_t width,
				 uint64_t height, uint64_t pitch, uint64_t sid)
{
	struct gp_in_memcpy_dtoh in = {.ctx = c->remote,
				       .src = src,
				       .width = width,
				       .height = height,
				       .pitch = pitch,
				       .stream = sid,
				       .data = dst,
				       .data_len = width * height};

	bool taken;
	CUresult r = gp__capture_copy(c, sid, src, pitch, dst, width, width, height, false, &taken);

	/* captured: the bytes are pushed here at every launch */
	if (taken)
		return r;
	r = gp__rpc_memcpy_dtoh(0, &in, NULL);
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

CUresult gp__memcpy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, bool async,
			 bool pt)
{
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (!src && n)
		return CUDA_ERROR_INVALID_VALUE;
	return copy_to_remote(c, dst, src, n, 1, 0, sid, async);
}

/* Whether [p, p + n) is page-locked memory this process allocated or registered. */
static bool page_locked(const void *p, size_t n)
{
	struct gp_range rg;

	return gp__range_find((uintptr_t)p, &rg) && rg.kind == GP_MEM_HOST &&
	       (uintptr_t)p - rg.base <= rg.size && n <= rg.size - ((uintptr_t)p - rg.base);
}

CUresult gp__memcpy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, bool async, bool pt)
{
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (!dst && n)
		return CUDA_ERROR_INVALID_VALUE;
	if (async && n && page_locked(dst, n)) {
		/* Into page-locked memory CUDA does not make the caller wait: the bytes land
		 * when the pool's stream gets there, before anything can observe the copy done
		 * (the worker answers in stream order, the reader delivers in order). */
		struct gp_in_memcpy_dtoh_async in = {
			.ctx = c->remote, .src = src, .bytes = n, .stream = sid};
		Gp__Call call = GP__CALL__INIT;
		uint64_t args[GP_CALL_ARGS_MAX];
		struct gp_bulk_ref b;

		gp_call_pack_memcpy_dtoh_async(&in, &call, args, &b);
		b = (struct gp_bulk_ref){.dst = dst, .len = n};
		/* mapped page-locked memory is written by the reader with gp__managed_write */
		return gp__rpc_later(GP_MSG_MEMCPY_DTOH_ASYNC, &call, &b);
	}
	/* Into pageable memory the copy is synchronous for the host, as CUDA documents. */
	return copy_from_remote(c, dst, src, n, 1, 0, sid);
}

static CUresult dtod_2d(CUdeviceptr dst, size_t dpitch, CUdeviceptr src, size_t spitch,
			size_t width, size_t height, CUstream s, bool async, bool pt)
{
	struct gp_ictx *c;
	struct gp_in_memcpy_dtod in = {.dst = dst,
				       .src = src,
				       .width = width,
				       .height = height,
				       .dst_pitch = dpitch,
				       .src_pitch = spitch};
	CUresult r = gp__ctx_stream(s, pt, &c, &in.stream);

	if (r != CUDA_SUCCESS)
		return r;
	in.ctx = c->remote;
	r = gp__rpc_memcpy_dtod(async ? GP_F_NO_REPLY : 0, &in, NULL);
	return r == CUDA_SUCCESS && !async ? gp__managed_pull() : r;
}

CUresult gp__memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool async,
			 bool pt)
{
	return dtod_2d(dst, 0, src, 0, n, 1, s, async, pt);
}

static bool is_device(CUdeviceptr p)
{
	struct gp_range rg;

	return gp__range_find(p, &rg) && rg.kind != GP_MEM_HOST;
}

/* cuMemcpy: unified addressing; the registry says which side each pointer is on. */
CUresult gp__memcpy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool async, bool pt)
{
	bool ddev = is_device(dst), sdev = is_device(src);
	CUresult r;

	if (ddev && sdev)
		return gp__memcpy_dtod(dst, src, n, s, async, pt);
	if (ddev)
		return gp__memcpy_htod(dst, (const void *)src, n, s, async, pt);
	if (sdev)
		return gp__memcpy_dtoh((void *)dst, src, n, s, async, pt);
	/* Host to host: ordered after the stream's earlier work, as a copy would be. */
	r = async ? gp__stream_sync(s, pt) : gp__ready();
	if (r == CUDA_SUCCESS && n)
		memmove((void *)dst, (const void *)src, n);
	return r;
}

/* ---- 2-D copies ----------------------------------------------------------------------------
 * Host rows are packed or scattered here; the device side travels as (base, pitch, width)
 * and the worker walks its rows. A copy with an array side is api_array.c's. */

static CUresult side_of(CUmemorytype t, const void *host, CUdeviceptr dev, bool *is_dev)
{
	switch (t) {
	case CU_MEMORYTYPE_HOST:
		*is_dev = false;
		return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_MEMORYTYPE_DEVICE:
		*is_dev = true;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		*is_dev = is_device(dev);
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		return CUDA_ERROR_NOT_SUPPORTED;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult gp__memcpy_2d(const CUDA_MEMCPY2D *p, CUstream s, bool async, bool pt)
{
	size_t w, h, sp, dp;
	bool sdev, ddev;
	const uint8_t *sh;
	uint8_t *dh, *packed = NULL;
	CUdeviceptr sd, dd;
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return gp__memcpy_2d_array(p, s, async, pt);
	r = gp__ctx_stream(s, pt, &c, &sid);
	if (r == CUDA_SUCCESS)
		r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, &sdev);
	if (r == CUDA_SUCCESS)
		r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, &ddev);
	if (r != CUDA_SUCCESS)
		return r;
	w = p->WidthInBytes;
	h = p->Height;
	sp = p->srcPitch ? p->srcPitch : w;
	dp = p->dstPitch ? p->dstPitch : w;
	if (w == 0 || h == 0)
		return CUDA_SUCCESS;
	if ((h > 1 && (sp < w || dp < w)) || w > SIZE_MAX / h)
		return CUDA_ERROR_INVALID_VALUE;
	/* For UNIFIED, the host pointer is the device pointer's value. */
	sd = p->srcDevice + p->srcY * sp + p->srcXInBytes;
	dd = p->dstDevice + p->dstY * dp + p->dstXInBytes;
	sh = (const uint8_t *)(p->srcMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)p->srcHost
								      : (uintptr_t)p->srcDevice) +
	     p->srcY * sp + p->srcXInBytes;
	dh = (uint8_t *)(p->dstMemoryType == CU_MEMORYTYPE_HOST ? (uintptr_t)p->dstHost
								: (uintptr_t)p->dstDevice) +
	     p->dstY * dp + p->dstXInBytes;
	if (sdev && ddev)
		return dtod_2d(dd, dp, sd, sp, w, h, s, async, pt);
	if (!sdev && !ddev) {
		r = async ? gp__stream_sync(s, pt) : CUDA_SUCCESS;
		for (size_t row = 0; r == CUDA_SUCCESS && row < h; row++)
			memmove(dh + row * dp, sh + row * sp, w);
		return r;
	}
	{
		bool taken;

		/* captured: the host rows are moved where they are, at every launch */
		r = ddev ? gp__capture_copy(c, sid, dd, h > 1 ? dp : 0, (void *)sh, sp, w, h, true,
					    &taken)
			 : gp__capture_copy(c, sid, sd, h > 1 ? sp : 0, dh, dp, w, h, false,
					    &taken);
		if (taken)
			return r;
	}
	if (ddev) {
		/* Host rows to device: send them packed. */
		if (sp != w && h > 1) {
			packed = malloc(w * h);
			if (!packed)
				return CUDA_ERROR_OUT_OF_MEMORY;
			for (size_t row = 0; row < h; row++)
				memcpy(packed + row * w, sh + row * sp, w);
		}
		r = copy_to_remote(c, dd, packed ? packed : sh, w, h, h > 1 ? dp : 0, sid, async);
		free(packed);
		return r;
	}
	/* Device rows to host: received packed, scattered here when the pitch differs. */
	if (dp == w || h == 1)
		return copy_from_remote(c, dh, sd, w, h, h > 1 ? sp : 0, sid);
	packed = malloc(w * h);
	if (!packed)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = copy_from_remote(c, packed, sd, w, h, sp, sid);
	for (size_t row = 0; r == CUDA_SUCCESS && row < h; row++)
		memcpy(dh + row * dp, packed + row * w, w);
	free(packed);
	return r;
}

GP_CUDA_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
	return gp__memcpy_2d(p, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p)
{
	return gp__memcpy_2d(p, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s)
{
	return gp__memcpy_2d(p, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	return gp__memcpy_htod(dst, src, n, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_dtoh(dst, src, n, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_dtod(dst, src, n, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	return gp__memcpy_htod(dst, src, n, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	return gp__memcpy_dtoh(dst, src, n, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return gp__memcpy_dtod(dst, src, n, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_any(dst, src, n, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return gp__memcpy_any(dst, src, n, s, true, false);
}

/* ---- memsets ---------------------------------------------------------------------------- */

CUresult gp__memset(CUdeviceptr dst, size_t pitch, unsigned value, unsigned esize, size_t width,
		    size_t height, CUstream s, bool async, bool pt)
{
	struct gp_in_memset in = {
		.dst = dst, .value = value, .esize = esize, .height = height, .pitch = pitch};
	struct gp_ictx *c;
	CUresult r = gp__ctx_stream(s, pt, &c, &in.stream);

	if (r != CUDA_SUCCESS)
		return r;
	/* width counts elements here and bytes on the wire. */
	if (width > UINT64_MAX / esize)
		return CUDA_ERROR_INVALID_VALUE;
	in.ctx = c->remote;
	in.width = (uint64_t)width * esize;
	r = gp__rpc_memset(async ? GP_F_NO_REPLY : 0, &in, NULL);
	return r == CUDA_SUCCESS && !async ? gp__managed_pull() : r;
}

GP_CUDA_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
	return gp__memset(d, 0, v, 1, n, 1, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n)
{
	return gp__memset(d, 0, v, 2, n, 1, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n)
{
	return gp__memset(d, 0, v, 4, n, 1, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 1, n, 1, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 2, n, 1, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 4, n, 1, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
					size_t h)
{
	return gp__memset(d, pitch, v, 1, w, h, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w,
					 size_t h)
{
	return gp__memset(d, pitch, v, 2, w, h, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int v, size_t w,
					 size_t h)
{
	return gp__memset(d, pitch, v, 4, w, h, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
					  size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 1, w, h, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w,
					   size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 2, w, h, s, true, false);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w,
					   size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 4, w, h, s, true, false);
}
