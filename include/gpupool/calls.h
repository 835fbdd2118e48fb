/* calls.h -- every remoted CUDA call, described once.
 *
 * Each entry of GP_CALL_MAP says everything both ends need to know about one call:
 *
 *	X(NAME, name, number, flags, ARGS, OUTS, RANGES, "what it serves")
 *
 * NAME/name  the message type (GP_MSG_NAME) and the C name of its structs and handler
 * number     the frame type on the wire
 * flags      GP_C_*: whether it synchronizes, may be sent without waiting, lists functions
 * ARGS       the request's fields in wire order, each GP_ARG(kind, field)
 * OUTS       the reply's scalar outputs in wire order, each GP_OUT(field)
 * RANGES     device ranges the worker checks against what the session owns before the
 *            handler runs: GP_RANGE(base, width, height, pitch) names four ARGS: rows of
 *            width bytes, pitch apart (pitch 0: packed, one range of width * height bytes);
 *            GP_RANGE1(base, bytes) names two: one range
 *
 * From this table come (src/calls.h, daemon/worker/calls.c, interposer/rpc.c): the request
 * struct with named fields (struct gp_in_<name>) and reply struct (struct gp_out_<name>), the
 * client's encoder and decoder, the worker's decoder with its checks by argument kind, the
 * dispatch table, the handler's prototype (gp__serve_<name>), the flags the client consults
 * (does this call report earlier asynchronous errors?) and the call's row in
 * docs/protocol.md (checked by a test). docs/protocol.md shows how to add a call.
 *
 * On the wire a request is a Call message (proto/gpupool.proto): the scalar ARGS in order
 * in Call.arg (one uint64 each; a handle is the worker's id), a NAME in Call.name, a BLOB
 * in Call.blob; BULK_IN bytes follow the request in its frame and DATA frames; BULK_OUT
 * bytes come back in DATA frames ahead of the Reply. Reply.out holds OUTS in order.
 *
 * Argument kinds, and what the worker checks before the handler sees the call:
 *	CTX      a context handle; made current (CUDA_ERROR_INVALID_CONTEXT)
 *	CTX_OPT  a context handle or 0 (none); made current when given
 *	DEVICE   a device ordinal of the session (CUDA_ERROR_INVALID_DEVICE)
 *	STREAM   0 or 1: the legacy default stream, 2: the per-thread one, else a stream
 *	         handle (CUDA_ERROR_INVALID_HANDLE)
 *	EVENT, MODULE, LIBRARY  a handle of that kind (CUDA_ERROR_INVALID_HANDLE)
 *	         (graphs, graph nodes and executable graphs travel as U64; their handlers check
 *	         the kind: daemon/worker/graph.c)
 *	MODLIB   a module or a library handle
 *	FUNC     a module's function or a library's kernel; a kernel's module is made (and
 *	         charged) in the call's CTX on first use there
 *	DPTR     a device address (checked by RANGES, or by the handler)
 *	U64      any value; U32 and I32 must fit (CUDA_ERROR_INVALID_VALUE)
 *	NAME     a symbol name, 1 to GP_NAME_MAX bytes, in Call.name
 *	BLOB     up to GP_BLOB_MAX bytes in Call.blob (kernel parameters)
 *	BULK_IN  the count of bytes that follow the request
 *	BULK_OUT the count of bytes the answer brings
 */
#ifndef GPUPOOL_CALLS_H
#define GPUPOOL_CALLS_H

#include <stdint.h>

/* The call reports an error of earlier asynchronous work (as CUDA's synchronizing calls do). */
#define GP_C_SYNC 0x1u
/* The client may send it with GP_F_NO_REPLY (CUDA's asynchronous calls). */
#define GP_C_ASYNC 0x2u
/* The reply lists the functions or kernels of what was loaded (Reply.function). */
#define GP_C_FUNCTIONS 0x4u

/* LAUNCH_EX: which launch attributes a request carries (CUlaunchAttributeID each). */
#define GP_LA_COOPERATIVE 0x1u	  /* cooperative */
#define GP_LA_PRIORITY 0x2u	  /* priority */
#define GP_LA_CLUSTER_DIM 0x4u	  /* cluster_x, cluster_y, cluster_z */
#define GP_LA_CLUSTER_POLICY 0x8u /* cluster_policy */
#define GP_LA_ACCESS_WINDOW 0x10u /* window_*: its range must be the session's memory */

/*
 * TENSOR_MAP_ENCODE's desc: the encode call's arrays, native-endian, unused entries 0.
 * Element counts as in cuda.h; the worker checks that the tensor lies in session memory.
 */
struct gp_tensor_desc {
	uint64_t dim[5];    /* globalDim */
	uint64_t stride[4]; /* globalStrides (bytes, dimensions 1..rank-1) */
	uint32_t data_type; /* CUtensorMapDataType */
	uint32_t rank;
	uint32_t box[5];	 /* tiled: boxDim */
	uint32_t elem_stride[5]; /* elementStrides */
	uint32_t interleave, swizzle, l2_promotion, oob_fill;
	int32_t lower[3], upper[3]; /* im2col: pixelBoxLowerCorner, pixelBoxUpperCorner */
	uint32_t channels, pixels;  /* im2col: channelsPerPixel, pixelsPerColumn */
};
#define GP_TENSOR_MAP_BYTES 128u

/*
 * Arrays, textures and surfaces (daemon/worker/array.c). An array, texture object or
 * surface object is a handle of the worker; the client's CUarray is that id, while a
 * texture or surface object is the driver's own 64-bit value (kernels read it), which the
 * worker finds among the session's before it destroys or describes one.
 *
 * ARRAY_COPY*'s desc: one side of a 3-D copy. HOST: the bytes travel packed (BULK_IN or
 * BULK_OUT), rows of width bytes; DEVICE: addr, rows pitch apart, height rows a slice;
 * ARRAY: addr is the array's handle, x in bytes. Native-endian.
 */
#define GP_SIDE_HOST 0u
#define GP_SIDE_DEVICE 1u
#define GP_SIDE_ARRAY 2u
struct gp_copy_side {
	uint64_t addr;
	uint64_t x, y, z;
	uint64_t pitch, height;
	uint32_t kind; /* GP_SIDE_* */
	uint32_t unused;
};
#define GP_COPY_LINEAR \
	1u /* an array side's x is an offset into its bytes, as the driver
			    * lays them out (cuMemcpyHtoA and the rest); one row, no y or z */
struct gp_copy3d {
	struct gp_copy_side src, dst;
	uint64_t width, height, depth; /* width in bytes */
	uint32_t flags;		       /* GP_COPY_* */
	uint32_t unused;
};

/* TEX_CREATE's desc and TEX_DESCRIBE's answer: cuTexObjectCreate's three descriptors, with
 * an array as its handle and floats as their bits. Native-endian, unused fields 0. */
struct gp_res_desc {
	uint32_t type;		       /* CUresourcetype */
	uint32_t format, channels;     /* LINEAR, PITCH2D */
	uint32_t flags;		       /* must be 0 */
	uint64_t handle;	       /* ARRAY, MIPMAPPED_ARRAY: the worker's handle */
	uint64_t dptr, bytes;	       /* LINEAR, PITCH2D (bytes: LINEAR) */
	uint64_t width, height, pitch; /* PITCH2D (width in elements) */
};
struct gp_tex_params {
	uint32_t address[3], filter, flags, max_anisotropy, mip_filter;
	uint32_t mip_bias, min_mip_clamp, max_mip_clamp, border[4]; /* float bits */
};
struct gp_view_desc {
	uint32_t format, first_mip, last_mip, first_layer, last_layer, unused;
	uint64_t width, height, depth;
};
struct gp_tex_desc {
	struct gp_res_desc res;
	struct gp_tex_params tex;
	struct gp_view_desc view;
	uint32_t has_view, unused;
};

#define GP_NAME_MAX 4096u
#define GP_BLOB_MAX 32768u /* CUDA's kernel parameter limit is 32764 bytes */

/* clang-format off */
#define GP_CALL_MAP(X)                                                                           \
	/* ---- contexts ---- */                                                                 \
	X(CTX_CREATE, ctx_create, 100, 0,                                                        \
	  GP_ARG(DEVICE, device) GP_ARG(U32, flags),                                             \
	  GP_OUT(ctx), ,                                                                         \
	  "cuCtxCreate (all versions)")                                                          \
	X(CTX_DESTROY, ctx_destroy, 101, 0,                                                      \
	  GP_ARG(CTX, ctx), , ,                                                                  \
	  "cuCtxDestroy")                                                                        \
	X(CTX_SYNCHRONIZE, ctx_synchronize, 102, GP_C_SYNC,                                      \
	  GP_ARG(CTX, ctx), , ,                                                                  \
	  "cuCtxSynchronize")                                                                    \
	X(PRIMARY_RETAIN, primary_retain, 103, 0,                                                \
	  GP_ARG(DEVICE, device),                                                                \
	  GP_OUT(ctx), ,                                                                         \
	  "cuDevicePrimaryCtxRetain (the first retain of a device's primary context)")           \
	X(PRIMARY_RELEASE, primary_release, 104, 0,                                              \
	  GP_ARG(DEVICE, device), , ,                                                            \
	  "cuDevicePrimaryCtxRelease")                                                           \
	X(PRIMARY_RESET, primary_reset, 105, 0,                                                  \
	  GP_ARG(DEVICE, device), , ,                                                            \
	  "cuDevicePrimaryCtxReset: frees everything the primary context held")                  \
	X(PRIMARY_SET_FLAGS, primary_set_flags, 106, 0,                                          \
	  GP_ARG(DEVICE, device) GP_ARG(U32, flags), , ,                                         \
	  "cuDevicePrimaryCtxSetFlags")                                                          \
	X(CTX_GET_LIMIT, ctx_get_limit, 107, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U32, limit),                                                   \
	  GP_OUT(value), ,                                                                       \
	  "cuCtxGetLimit")                                                                       \
	X(CTX_SET_LIMIT, ctx_set_limit, 108, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U32, limit) GP_ARG(U64, value), , ,                            \
	  "cuCtxSetLimit (heap, printf buffer and stack are charged to the session)")            \
	X(CTX_STREAM_PRIORITIES, ctx_stream_priorities, 109, 0,                                  \
	  GP_ARG(CTX, ctx),                                                                      \
	  GP_OUT(least) GP_OUT(greatest), ,                                                      \
	  "cuCtxGetStreamPriorityRange (two's complement)")                                      \
	/* ---- memory ---- */                                                                   \
	X(MEM_ALLOC, mem_alloc, 110, 0,                                                          \
	  GP_ARG(CTX, ctx) GP_ARG(U64, bytes),                                                   \
	  GP_OUT(dptr), ,                                                                        \
	  "cuMemAlloc")                                                                          \
	X(MEM_FREE, mem_free, 111, 0,                                                            \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dptr), , ,                                               \
	  "cuMemFree (dptr must start an allocation of the session)")                            \
	X(MEMCPY_HTOD, memcpy_htod, 112, GP_C_SYNC | GP_C_ASYNC,                                 \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dst) GP_ARG(U64, width) GP_ARG(U64, height)              \
	  GP_ARG(U64, pitch) GP_ARG(STREAM, stream) GP_ARG(BULK_IN, data), ,                     \
	  GP_RANGE(dst, width, height, pitch),                                                   \
	  "cuMemcpyHtoD[Async], host-to-device cuMemcpy2D/cuMemcpy: width * height bytes, rows packed") \
	X(MEMCPY_DTOH, memcpy_dtoh, 113, GP_C_SYNC,                                              \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, src) GP_ARG(U64, width) GP_ARG(U64, height)              \
	  GP_ARG(U64, pitch) GP_ARG(STREAM, stream) GP_ARG(BULK_OUT, data), ,                    \
	  GP_RANGE(src, width, height, pitch),                                                   \
	  "cuMemcpyDtoH[Async], device-to-host cuMemcpy2D/cuMemcpy: on a stream, after its work") \
	X(MEM_GET_INFO, mem_get_info, 114, 0,                                                    \
	  GP_ARG(CTX, ctx),                                                                      \
	  GP_OUT(free) GP_OUT(total), ,                                                          \
	  "cuMemGetInfo (the session's limit as the device's size)")                             \
	X(MEMCPY_DTOD, memcpy_dtod, 115, GP_C_SYNC | GP_C_ASYNC,                                 \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dst) GP_ARG(DPTR, src) GP_ARG(U64, width)                \
	  GP_ARG(U64, height) GP_ARG(U64, dst_pitch) GP_ARG(U64, src_pitch)                      \
	  GP_ARG(STREAM, stream), ,                                                              \
	  GP_RANGE(dst, width, height, dst_pitch) GP_RANGE(src, width, height, src_pitch),      \
	  "cuMemcpyDtoD[Async], device-to-device cuMemcpy2D/cuMemcpy")                           \
	X(MEMSET, memset, 116, GP_C_SYNC | GP_C_ASYNC,                                           \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dst) GP_ARG(U32, value) GP_ARG(U32, esize)               \
	  GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U64, pitch) GP_ARG(STREAM, stream), ,    \
	  GP_RANGE(dst, width, height, pitch),                                                   \
	  "cuMemsetD8/16/32[Async], cuMemsetD2D*: width in bytes, esize 1, 2 or 4")              \
	X(MEMCPY_DTOH_ASYNC, memcpy_dtoh_async, 118, 0,                                          \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, src) GP_ARG(U64, bytes) GP_ARG(STREAM, stream), ,        \
	  GP_RANGE1(src, bytes),                                                            \
	  "cuMemcpyDtoHAsync to page-locked memory: DATA and the Reply come when the stream gets there") \
	X(MEM_ALLOC_PITCH, mem_alloc_pitch, 117, 0,                                              \
	  GP_ARG(CTX, ctx) GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U32, esize),            \
	  GP_OUT(dptr) GP_OUT(pitch), ,                                                          \
	  "cuMemAllocPitch")                                                                     \
	/* ---- modules, libraries, kernels ---- */                                              \
	X(MODULE_LOAD, module_load, 120, GP_C_FUNCTIONS,                                         \
	  GP_ARG(CTX, ctx) GP_ARG(BULK_IN, image),                                               \
	  GP_OUT(module), ,                                                                      \
	  "cuModuleLoadData[Ex], cuModuleLoadFatBinary, cuModuleLoad (the client reads the file)") \
	X(MODULE_UNLOAD, module_unload, 122, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(MODULE, module), , ,                                           \
	  "cuModuleUnload")                                                                      \
	X(GET_GLOBAL, get_global, 123, 0,                                                        \
	  GP_ARG(CTX, ctx) GP_ARG(MODLIB, module) GP_ARG(NAME, symbol),                          \
	  GP_OUT(dptr) GP_OUT(bytes), ,                                                          \
	  "cuModuleGetGlobal, cuLibraryGetGlobal (the range becomes the session's)")             \
	X(LIBRARY_LOAD, library_load, 124, GP_C_FUNCTIONS,                                       \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(BULK_IN, image),                                           \
	  GP_OUT(library), ,                                                                     \
	  "cuLibraryLoadData (on first use; ctx: where its module is made and measured)")        \
	X(LIBRARY_UNLOAD, library_unload, 125, 0,                                                \
	  GP_ARG(LIBRARY, library), , ,                                                          \
	  "cuLibraryUnload")                                                                     \
	X(OCCUPANCY, occupancy, 126, 0,                                                          \
	  GP_ARG(CTX, ctx) GP_ARG(FUNC, func) GP_ARG(I32, block) GP_ARG(U64, smem)               \
	  GP_ARG(U32, flags),                                                                    \
	  GP_OUT(blocks), ,                                                                      \
	  "cuOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]")                              \
	X(FUNC_SET_ATTRIBUTE, func_set_attribute, 127, 0,                                        \
	  GP_ARG(CTX, ctx) GP_ARG(FUNC, func) GP_ARG(U32, attribute) GP_ARG(I32, value), , ,     \
	  "cuFuncSetAttribute, cuKernelSetAttribute")                                            \
	X(FUNC_DESCRIBE, func_describe, 128, GP_C_FUNCTIONS,                                     \
	  GP_ARG(FUNC, func) GP_ARG(CTX_OPT, ctx), , ,                                           \
	  "a function's layout and attributes (on ctx's device), on first use; not made in ctx") \
	/* ---- launches ---- */                                                                 \
	X(LAUNCH, launch, 130, GP_C_ASYNC,                                                       \
	  GP_ARG(CTX, ctx) GP_ARG(FUNC, func) GP_ARG(U32, grid_x) GP_ARG(U32, grid_y)            \
	  GP_ARG(U32, grid_z) GP_ARG(U32, block_x) GP_ARG(U32, block_y) GP_ARG(U32, block_z)     \
	  GP_ARG(U32, shared_mem) GP_ARG(STREAM, stream) GP_ARG(BLOB, params), , ,               \
	  "cuLaunchKernel[Ex]: params laid out as the load reply described")                     \
	X(LAUNCH_EX, launch_ex, 204, GP_C_ASYNC,                                                 \
	  GP_ARG(CTX, ctx) GP_ARG(FUNC, func) GP_ARG(U32, grid_x) GP_ARG(U32, grid_y)            \
	  GP_ARG(U32, grid_z) GP_ARG(U32, block_x) GP_ARG(U32, block_y) GP_ARG(U32, block_z)     \
	  GP_ARG(U32, shared_mem) GP_ARG(STREAM, stream) GP_ARG(U32, attrs)                      \
	  GP_ARG(U32, cooperative) GP_ARG(I32, priority) GP_ARG(U32, cluster_x)                  \
	  GP_ARG(U32, cluster_y) GP_ARG(U32, cluster_z) GP_ARG(U32, cluster_policy)              \
	  GP_ARG(DPTR, window_base) GP_ARG(U64, window_bytes) GP_ARG(U32, window_hit_ratio)      \
	  GP_ARG(U32, window_hit_prop) GP_ARG(U32, window_miss_prop) GP_ARG(BLOB, params), , ,   \
	  "cuLaunchKernelEx with attributes, cuLaunchCooperativeKernel: attrs is a GP_LA_* set of those given (hit ratio: the float's bits)") \
	X(TENSOR_MAP_ENCODE, tensor_map_encode, 205, 0,                                         \
	  GP_ARG(CTX, ctx) GP_ARG(U32, kind) GP_ARG(DPTR, global) GP_ARG(BLOB, desc)             \
	  GP_ARG(BULK_OUT, map), , ,                                                             \
	  "cuTensorMapEncodeTiled (kind 0), cuTensorMapEncodeIm2col (kind 1): desc is a struct gp_tensor_desc; the 128-byte CUtensorMap comes back") \
	/* ---- streams ---- */                                                                  \
	X(STREAM_CREATE, stream_create, 140, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U32, flags) GP_ARG(I32, priority),                             \
	  GP_OUT(stream), ,                                                                      \
	  "cuStreamCreate[WithPriority]")                                                        \
	X(STREAM_DESTROY, stream_destroy, 141, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream), , ,                                           \
	  "cuStreamDestroy (a created stream, not a default one)")                               \
	X(STREAM_SYNCHRONIZE, stream_synchronize, 142, GP_C_SYNC,                                \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream), , ,                                           \
	  "cuStreamSynchronize")                                                                 \
	X(STREAM_QUERY, stream_query, 143, GP_C_SYNC,                                            \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream), , ,                                           \
	  "cuStreamQuery: CUDA_SUCCESS or CUDA_ERROR_NOT_READY")                                 \
	X(STREAM_WAIT_EVENT, stream_wait_event, 144, GP_C_ASYNC,                                 \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(EVENT, event) GP_ARG(U32, flags), , ,   \
	  "cuStreamWaitEvent")                                                                   \
	X(LAUNCH_HOST_FUNC, launch_host_func, 145, GP_C_ASYNC,                                   \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(U64, fn) GP_ARG(U64, data)              \
	  GP_ARG(U64, client_stream) GP_ARG(U32, kind), , ,                                      \
	  "cuLaunchHostFunc (kind 0), cuStreamAddCallback (kind 1): runs in the client, HOST_CALL") \
	/* ---- events ---- */                                                                   \
	X(EVENT_CREATE, event_create, 150, 0,                                                    \
	  GP_ARG(CTX, ctx) GP_ARG(U32, flags),                                                   \
	  GP_OUT(event), ,                                                                       \
	  "cuEventCreate")                                                                       \
	X(EVENT_DESTROY, event_destroy, 151, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, event), , ,                                             \
	  "cuEventDestroy")                                                                      \
	X(EVENT_RECORD, event_record, 152, GP_C_ASYNC,                                           \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, event) GP_ARG(STREAM, stream), , ,                      \
	  "cuEventRecord[WithFlags]")                                                            \
	X(EVENT_SYNCHRONIZE, event_synchronize, 153, GP_C_SYNC,                                  \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, event), , ,                                             \
	  "cuEventSynchronize")                                                                  \
	X(EVENT_QUERY, event_query, 154, GP_C_SYNC,                                              \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, event), , ,                                             \
	  "cuEventQuery: CUDA_SUCCESS or CUDA_ERROR_NOT_READY")                                  \
	X(EVENT_ELAPSED, event_elapsed, 155, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, start) GP_ARG(EVENT, end),                              \
	  GP_OUT(ms_bits), ,                                                                     \
	  "cuEventElapsedTime: milliseconds as the bits of a float")                              \
	/* ---- virtual memory management (daemon/worker/vmm.c) ---- */                        \
	X(VMM_GRANULARITY, vmm_granularity, 220, 0,                                              \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DEVICE, device) GP_ARG(U32, option),                       \
	  GP_OUT(granularity), ,                                                                 \
	  "cuMemGetAllocationGranularity (pinned memory on a device)")                           \
	X(VMM_CREATE, vmm_create, 221, 0,                                                        \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DEVICE, device) GP_ARG(U64, bytes)                         \
	  GP_ARG(U32, compression) GP_ARG(U32, usage),                                           \
	  GP_OUT(handle), ,                                                                      \
	  "cuMemCreate (pinned, on a device, no export handle types): charged to the session")   \
	X(VMM_RELEASE, vmm_release, 222, 0,                                                      \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, handle), , ,                                          \
	  "cuMemRelease (the memory and its charge stay while mapped)")                          \
	X(VMM_PROPS, vmm_props, 223, 0,                                                          \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, handle),                                              \
	  GP_OUT(type) GP_OUT(device) GP_OUT(compression) GP_OUT(usage), ,                       \
	  "cuMemGetAllocationPropertiesFromHandle")                                              \
	X(VMM_RETAIN, vmm_retain, 224, 0,                                                        \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DPTR, addr),                                               \
	  GP_OUT(handle), ,                                                                      \
	  "cuMemRetainAllocationHandle (addr in a mapping of the session)")                      \
	X(VMM_RESERVE, vmm_reserve, 225, 0,                                                      \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, bytes) GP_ARG(U64, alignment) GP_ARG(U64, addr)       \
	  GP_ARG(U64, flags),                                                                    \
	  GP_OUT(ptr), ,                                                                         \
	  "cuMemAddressReserve (addr: the hint, passed to the pool's driver; bounded per session)") \
	X(VMM_ADDRESS_FREE, vmm_address_free, 226, 0,                                            \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DPTR, ptr) GP_ARG(U64, bytes), , ,                         \
	  "cuMemAddressFree (a reservation of the session, unmapped)")                           \
	X(VMM_MAP, vmm_map, 227, 0,                                                              \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DPTR, ptr) GP_ARG(U64, bytes) GP_ARG(U64, offset)          \
	  GP_ARG(U64, handle) GP_ARG(U64, flags), , ,                                            \
	  "cuMemMap (inside one reservation of the session, over nothing mapped)")               \
	X(VMM_UNMAP, vmm_unmap, 228, 0,                                                          \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DPTR, ptr) GP_ARG(U64, bytes), , ,                         \
	  "cuMemUnmap (whole mappings): the range leaves the session's allocation table")        \
	X(VMM_SET_ACCESS, vmm_set_access, 229, 0,                                                \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DPTR, ptr) GP_ARG(U64, bytes) GP_ARG(U64, rw_devices)      \
	  GP_ARG(U64, read_devices) GP_ARG(U64, none_devices), , ,                               \
	  "cuMemSetAccess (device bit masks; whole mappings): accessible ranges join the allocation table") \
	X(VMM_GET_ACCESS, vmm_get_access, 230, 0,                                                \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(DEVICE, device) GP_ARG(DPTR, ptr),                         \
	  GP_OUT(flags), ,                                                                       \
	  "cuMemGetAccess")                                                                      \
	/* ---- arrays, textures, surfaces (daemon/worker/array.c) ---- */                   \
	X(ARRAY_CREATE, array_create, 250, 0,                                                    \
	  GP_ARG(CTX, ctx) GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U64, depth)             \
	  GP_ARG(U32, format) GP_ARG(U32, channels) GP_ARG(U32, flags) GP_ARG(U32, three_d),     \
	  GP_OUT(array) GP_OUT(bytes), ,                                                         \
	  "cuArrayCreate (three_d 0: depth and flags 0), cuArray3DCreate: charged to the session (bytes)") \
	X(ARRAY_DESTROY, array_destroy, 251, 0,                                                  \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, array), , ,                                           \
	  "cuArrayDestroy (an array of the session; its charge goes)")                           \
	X(ARRAY_DESCRIPTOR, array_descriptor, 252, 0,                                            \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, array) GP_ARG(U32, three_d),                          \
	  GP_OUT(width) GP_OUT(height) GP_OUT(depth) GP_OUT(kind), ,                             \
	  "cuArrayGetDescriptor (three_d 0), cuArray3DGetDescriptor: kind is format, channels << 16, flags << 32") \
	X(ARRAY_COPY, array_copy, 253, GP_C_SYNC | GP_C_ASYNC,                                   \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(BLOB, desc), , ,                        \
	  "cuMemcpy3D[Async], cuMemcpy2D[Async] and cuMemcpyAtoD/DtoA/AtoA (GP_COPY_LINEAR) with no host side: desc is a struct gp_copy3d, each side DEVICE or ARRAY") \
	X(ARRAY_COPY_IN, array_copy_in, 254, GP_C_SYNC | GP_C_ASYNC,                             \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(BLOB, desc) GP_ARG(BULK_IN, data), , , \
	  "cuMemcpy3D[Async] from the host, cuMemcpy2D[Async] and cuMemcpyHtoA[Async] to an array: the source HOST, data its bytes packed") \
	X(ARRAY_COPY_OUT, array_copy_out, 255, GP_C_SYNC,                                        \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(BLOB, desc) GP_ARG(BULK_OUT, data), , ,\
	  "cuMemcpy3D[Async] to the host, cuMemcpy2D[Async] and cuMemcpyAtoH[Async] from an array: the destination HOST, data its bytes packed") \
	X(TEX_CREATE, tex_create, 256, 0,                                                        \
	  GP_ARG(CTX, ctx) GP_ARG(BLOB, desc),                                                   \
	  GP_OUT(obj), ,                                                                         \
	  "cuTexObjectCreate: desc is a struct gp_tex_desc naming an array or memory of the session; obj the driver's value") \
	X(TEX_DESTROY, tex_destroy, 257, 0,                                                      \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, obj), , ,                                             \
	  "cuTexObjectDestroy (an object of the session)")                                       \
	X(TEX_DESCRIBE, tex_describe, 258, 0,                                                    \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, obj) GP_ARG(BULK_OUT, desc), , ,                      \
	  "cuTexObjectGetResourceDesc, cuTexObjectGetTextureDesc, cuTexObjectGetResourceViewDesc: the driver's struct gp_tex_desc") \
	X(SURF_CREATE, surf_create, 259, 0,                                                      \
	  GP_ARG(CTX, ctx) GP_ARG(U64, array),                                                   \
	  GP_OUT(obj), ,                                                                         \
	  "cuSurfObjectCreate (an array of the session made with CUDA_ARRAY3D_SURFACE_LDST): obj the driver's value") \
	X(SURF_DESTROY, surf_destroy, 260, 0,                                                    \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, obj), , ,                                             \
	  "cuSurfObjectDestroy (an object of the session)")                                      \
	X(SURF_DESCRIBE, surf_describe, 261, 0,                                                  \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, obj),                                                 \
	  GP_OUT(array), ,                                                                       \
	  "cuSurfObjectGetResourceDesc: the array's handle")                                     \
	X(MIPMAP_CREATE, mipmap_create, 262, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U64, depth)             \
	  GP_ARG(U32, format) GP_ARG(U32, channels) GP_ARG(U32, flags) GP_ARG(U32, levels),      \
	  GP_OUT(mipmap) GP_OUT(bytes), ,                                                        \
	  "cuMipmappedArrayCreate: charged to the session (bytes, every level)")                 \
	X(MIPMAP_DESTROY, mipmap_destroy, 263, 0,                                                \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, mipmap), , ,                                          \
	  "cuMipmappedArrayDestroy (its levels' handles go with it)")                            \
	X(MIPMAP_LEVEL, mipmap_level, 264, 0,                                                    \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, mipmap) GP_ARG(U32, level),                           \
	  GP_OUT(array), ,                                                                       \
	  "cuMipmappedArrayGetLevel: an array handle of the level (not for cuArrayDestroy)")     \
	X(ARRAY_REQUIREMENTS, array_requirements, 265, 0,                                        \
	  GP_ARG(CTX_OPT, ctx) GP_ARG(U64, array) GP_ARG(DEVICE, device),                        \
	  GP_OUT(size) GP_OUT(alignment), ,                                                      \
	  "cuArrayGetMemoryRequirements (the driver's answer; for an ordinary array CUDA's is INVALID_VALUE)") \
	/* ---- IPC between sessions of one tenant (daemon/worker/ipc.c, docs/security.md) ---- */ \
	X(IPC_MEM_EXPORT, ipc_mem_export, 270, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dptr),                                                   \
	  GP_OUT(host) GP_OUT(session) GP_OUT(secret_hi) GP_OUT(secret_lo), ,                    \
	  "cuIpcGetMemHandle: the pool's handle of the cuMemAlloc allocation holding dptr")      \
	X(IPC_MEM_OPEN, ipc_mem_open, 271, 0,                                                    \
	  GP_ARG(CTX, ctx) GP_ARG(U64, host) GP_ARG(U64, session) GP_ARG(U64, secret_hi)         \
	  GP_ARG(U64, secret_lo) GP_ARG(U32, flags),                                             \
	  GP_OUT(dptr) GP_OUT(bytes), ,                                                          \
	  "cuIpcOpenMemHandle[_v2]: another session's export, of this tenant; not charged here") \
	X(IPC_MEM_CLOSE, ipc_mem_close, 272, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dptr),                                                   \
	  GP_OUT(last), ,                                                                        \
	  "cuIpcCloseMemHandle (last: 1 when that was the last open of dptr)")                   \
	X(IPC_EVENT_EXPORT, ipc_event_export, 273, 0,                                            \
	  GP_ARG(CTX, ctx) GP_ARG(EVENT, event),                                                 \
	  GP_OUT(host) GP_OUT(session) GP_OUT(secret_hi) GP_OUT(secret_lo), ,                    \
	  "cuIpcGetEventHandle")                                                                 \
	X(IPC_EVENT_OPEN, ipc_event_open, 274, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(U64, host) GP_ARG(U64, session) GP_ARG(U64, secret_hi)         \
	  GP_ARG(U64, secret_lo),                                                                \
	  GP_OUT(event), ,                                                                       \
	  "cuIpcOpenEventHandle: another session's interprocess event, of this tenant")          \
	/* ---- the NVML shim (src/nvml.c through interposer/nvml_source.c) ---- */           \
	X(DEVICE_BUSY, device_busy, 290, 0,                                                      \
	  GP_ARG(DEVICE, device),                                                                \
	  GP_OUT(kernel_ns) GP_OUT(any_ns) GP_OUT(now_ns), ,                                     \
	  "the session's busy time on device as its worker's driver counts it (busy.c); NOT_SUPPORTED where it does not") \
	/* ---- graphs (graph, node, exec: U64 handles the handler checks by kind) ---- */      \
	X(GRAPH_CREATE, graph_create, 160, 0,                                                    \
	  GP_ARG(CTX, ctx) GP_ARG(U32, flags),                                                   \
	  GP_OUT(graph), ,                                                                       \
	  "cuGraphCreate")                                                                       \
	X(GRAPH_DESTROY, graph_destroy, 161, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph), , ,                                               \
	  "cuGraphDestroy (its nodes' handles go with it)")                                      \
	X(GRAPH_CLONE, graph_clone, 162, 0,                                                      \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph),                                                   \
	  GP_OUT(graph), ,                                                                       \
	  "cuGraphClone")                                                                        \
	X(GRAPH_NODE_COUNT, graph_node_count, 163, 0,                                            \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U32, roots),                                \
	  GP_OUT(count), ,                                                                       \
	  "cuGraphGetNodes, cuGraphGetRootNodes with no array: how many")                        \
	X(GRAPH_ADD_KERNEL, graph_add_kernel, 164, 0,                                            \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(FUNC, func) GP_ARG(U32, grid_x)             \
	  GP_ARG(U32, grid_y) GP_ARG(U32, grid_z) GP_ARG(U32, block_x) GP_ARG(U32, block_y)      \
	  GP_ARG(U32, block_z) GP_ARG(U32, shared_mem) GP_ARG(U64, node) GP_ARG(U64, exec)       \
	  GP_ARG(BLOB, params),                                                                  \
	  GP_OUT(node), ,                                                                        \
	  "cuGraphAddKernelNode (node 0), cuGraphKernelNodeSetParams (node), cuGraphExecKernelNodeSetParams (node, exec)") \
	X(GRAPH_ADD_MEMSET, graph_add_memset, 165, 0,                                            \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(DPTR, dst) GP_ARG(U32, value)               \
	  GP_ARG(U32, esize) GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U64, pitch)           \
	  GP_ARG(U64, node) GP_ARG(U64, exec),                                                   \
	  GP_OUT(node),                                                                          \
	  GP_RANGE(dst, width, height, pitch),                                                   \
	  "cuGraphAddMemsetNode, cuGraph[Exec]MemsetNodeSetParams (node[, exec]): width in bytes, esize 1, 2 or 4") \
	X(GRAPH_ADD_COPY, graph_add_copy, 166, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(DPTR, dst) GP_ARG(DPTR, src)                \
	  GP_ARG(U64, width) GP_ARG(U64, height) GP_ARG(U64, dst_pitch) GP_ARG(U64, src_pitch)   \
	  GP_ARG(U64, node) GP_ARG(U64, exec),                                                   \
	  GP_OUT(node),                                                                          \
	  GP_RANGE(dst, width, height, dst_pitch) GP_RANGE(src, width, height, src_pitch),      \
	  "cuGraphAddMemcpyNode, cuGraph[Exec]MemcpyNodeSetParams (node[, exec]), device to device (client memory: GRAPH_CLIENT_COPY)") \
	X(GRAPH_ADD_HOST, graph_add_host, 167, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U64, fn) GP_ARG(U64, data)                  \
	  GP_ARG(U64, node) GP_ARG(U64, exec),                                                   \
	  GP_OUT(node), ,                                                                        \
	  "cuGraphAddHostNode, cuGraph[Exec]HostNodeSetParams (node[, exec]): runs in the client (HOST_CALL) each time the node runs") \
	X(GRAPH_ADD_OTHER, graph_add_other, 168, 0,                                              \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U32, type) GP_ARG(U64, event)               \
	  GP_ARG(U64, child) GP_ARG(U64, node) GP_ARG(U64, exec),                                \
	  GP_OUT(node), ,                                                                        \
	  "cuGraphAddEmptyNode, cuGraphAddEventRecordNode, cuGraphAddEventWaitNode (event), cuGraphAddChildGraphNode (child); with node[, exec]: cuGraph[Exec]Event{Record,Wait}NodeSetEvent, cuGraphExecChildGraphNodeSetParams") \
	X(GRAPH_EDGES, graph_edges, 169, 0,                                                      \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U32, remove) GP_ARG(BLOB, edges), , ,       \
	  "cuGraphAdd/RemoveDependencies, and a new node's dependencies: (from, to) node pairs") \
	X(GRAPH_INSTANTIATE, graph_instantiate, 170, 0,                                          \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U64, flags),                                \
	  GP_OUT(exec), ,                                                                        \
	  "cuGraphInstantiate[WithFlags|WithParams]")                                            \
	X(GRAPH_EXEC_DESTROY, graph_exec_destroy, 171, 0,                                        \
	  GP_ARG(CTX, ctx) GP_ARG(U64, exec), , ,                                                \
	  "cuGraphExecDestroy")                                                                  \
	X(GRAPH_LAUNCH, graph_launch, 172, GP_C_ASYNC,                                           \
	  GP_ARG(CTX, ctx) GP_ARG(U64, exec) GP_ARG(STREAM, stream) GP_ARG(U32, upload), , ,     \
	  "cuGraphLaunch (upload 0), cuGraphUpload (upload 1): one message per launch")          \
	X(GRAPH_EXEC_UPDATE, graph_exec_update, 173, 0,                                          \
	  GP_ARG(CTX, ctx) GP_ARG(U64, exec) GP_ARG(U64, graph),                                 \
	  GP_OUT(result), ,                                                                      \
	  "cuGraphExecUpdate: result is the CUgraphExecUpdateResult")                            \
	X(GRAPH_CLIENT_COPY, graph_client_copy, 174, 0,                                          \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dev) GP_ARG(U64, width) GP_ARG(U64, height)              \
	  GP_ARG(U64, pitch) GP_ARG(STREAM, stream) GP_ARG(U64, graph) GP_ARG(U64, token)        \
	  GP_ARG(U32, to_device),                                                                \
	  GP_OUT(first) GP_OUT(last),                                                            \
	  GP_RANGE(dev, width, height, pitch),                                                   \
	  "a copy between client memory (named by the client's token) and the device, captured on a capturing stream (graph 0) or as nodes of graph (first, last): HOST_CALL fetches or pushes the bytes each time it runs") \
	X(GRAPH_QUERY, graph_query, 240, 0,                                                      \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U32, what) GP_ARG(U64, node)                \
	  GP_ARG(BULK_OUT, list),                                                                \
	  GP_OUT(count), ,                                                                       \
	  "cuGraphGetNodes (what 0), cuGraphGetRootNodes (1), cuGraphGetEdges (2: from, to pairs), cuGraphNodeGetDependencies (3), cuGraphNodeGetDependentNodes (4) of node: count entries of (first, last, type), each a client-memory copy's two nodes as one; list: a multiple of 24 bytes, zero-filled past count") \
	X(GRAPH_NODE_OP, graph_node_op, 241, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U64, node) GP_ARG(U64, exec) GP_ARG(U64, graph)                \
	  GP_ARG(U32, op) GP_ARG(U32, value),                                                    \
	  GP_OUT(value) GP_OUT(last) GP_OUT(type), ,                                             \
	  "cuGraphDestroyNode (op 0), cuGraphNodeGetEnabled (1, exec), cuGraphNodeSetEnabled (2, exec, value), cuGraphNodeFindInClone (3, graph: the clone; value: the node found, with last and type), cuGraphMemAllocNodeGetParams (4: value the address, last the size, type the device), cuGraphMemFreeNodeGetParams (5: value the address), a conditional node's body (6, value: its index; value: the body graph)") \
	X(GRAPH_ADD_MEM, graph_add_mem, 242, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(DEVICE, device) GP_ARG(U64, bytes)          \
	  GP_ARG(U64, dptr),                                                                     \
	  GP_OUT(node) GP_OUT(dptr), ,                                                           \
	  "cuGraphAddMemAllocNode (dptr 0: bytes of device memory; out dptr: its address, the session's while the graph lives), cuGraphAddMemFreeNode (dptr: a graph allocation of the session)") \
	X(DEVICE_GRAPH_MEM, device_graph_mem, 243, 0,                                            \
	  GP_ARG(DEVICE, device) GP_ARG(U32, op) GP_ARG(U32, attr) GP_ARG(U64, value),           \
	  GP_OUT(value), ,                                                                       \
	  "cuDeviceGetGraphMemAttribute (op 0), cuDeviceSetGraphMemAttribute (1, value), cuDeviceGraphMemTrim (2); the session is charged anew what the driver keeps reserved for graphs; op 3: whether value (an address) still starts graph memory of the session (value 1 or 0)") \
	X(GRAPH_COND_HANDLE, graph_cond_handle, 244, 0,                                          \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U32, dflt) GP_ARG(U32, flags),              \
	  GP_OUT(handle), ,                                                                      \
	  "cuGraphConditionalHandleCreate (in ctx): handle is the driver's value, which kernels pass to cudaGraphSetConditional") \
	X(GRAPH_ADD_COND, graph_add_cond, 245, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(U64, graph) GP_ARG(U64, handle) GP_ARG(U32, type)              \
	  GP_ARG(U32, size),                                                                     \
	  GP_OUT(node) GP_OUT(body), ,                                                           \
	  "cuGraphAddNode of a conditional node: its size body graphs are the node's (body: the first; GRAPH_NODE_OP op 6 names body i)") \
	X(STREAM_CAPTURE_TO_GRAPH, stream_capture_to_graph, 246, 0,                              \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(U64, graph) GP_ARG(U32, mode), , ,      \
	  "cuStreamBeginCaptureToGraph with no dependencies: the capture goes into graph (a conditional node's body, say)") \
	/* ---- stream capture ---- */                                                          \
	X(STREAM_BEGIN_CAPTURE, stream_begin_capture, 175, 0,                                    \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(U32, mode), , ,                         \
	  "cuStreamBeginCapture: the worker's driver captures what the worker queues there")     \
	X(STREAM_END_CAPTURE, stream_end_capture, 176, 0,                                        \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream) GP_ARG(U32, invalid),                          \
	  GP_OUT(graph), ,                                                                       \
	  "cuStreamEndCapture (invalid: the client refused a captured call; the graph is dropped)") \
	X(STREAM_CAPTURE_INFO, stream_capture_info, 177, 0,                                      \
	  GP_ARG(CTX, ctx) GP_ARG(STREAM, stream),                                               \
	  GP_OUT(status) GP_OUT(id) GP_OUT(graph) GP_OUT(ndeps), ,                               \
	  "cuStreamIsCapturing, cuStreamGetCaptureInfo (without the dependency array)")         \
	/* ---- memory pools (pool: U64 handles the handler checks by kind: mempool.c) ---- */ \
	X(MEM_ALLOC_ASYNC, mem_alloc_async, 180, 0,                                              \
	  GP_ARG(CTX, ctx) GP_ARG(U64, bytes) GP_ARG(U64, pool) GP_ARG(STREAM, stream),          \
	  GP_OUT(dptr) GP_OUT(pool), ,                                                           \
	  "cuMemAllocAsync (pool 0: the device's current pool), cuMemAllocFromPoolAsync: what the pool holds is charged to the session; out pool: the one it came from") \
	X(MEM_FREE_ASYNC, mem_free_async, 181, GP_C_ASYNC,                                       \
	  GP_ARG(CTX, ctx) GP_ARG(DPTR, dptr) GP_ARG(STREAM, stream), , ,                        \
	  "cuMemFreeAsync (dptr must start an allocation of the session)")                       \
	X(POOL_CREATE, pool_create, 182, 0,                                                      \
	  GP_ARG(DEVICE, device) GP_ARG(U64, max_size),                                          \
	  GP_OUT(pool), ,                                                                        \
	  "cuMemPoolCreate (pinned device memory, no shareable handle types)")                   \
	X(POOL_DESTROY, pool_destroy, 183, 0,                                                    \
	  GP_ARG(U64, pool), , ,                                                                 \
	  "cuMemPoolDestroy (not a default pool)")                                               \
	X(POOL_SET_ATTRIBUTE, pool_set_attribute, 184, GP_C_ASYNC,                               \
	  GP_ARG(U64, pool) GP_ARG(U32, attribute) GP_ARG(U64, value), , ,                       \
	  "cuMemPoolSetAttribute (int attributes as 0 or 1)")                                    \
	X(POOL_GET_ATTRIBUTE, pool_get_attribute, 185, 0,                                        \
	  GP_ARG(U64, pool) GP_ARG(U32, attribute),                                              \
	  GP_OUT(value), ,                                                                       \
	  "cuMemPoolGetAttribute")                                                               \
	X(POOL_TRIM, pool_trim, 186, GP_C_ASYNC,                                                 \
	  GP_ARG(U64, pool) GP_ARG(U64, keep), , ,                                               \
	  "cuMemPoolTrimTo")                                                                     \
	X(POOL_SET_ACCESS, pool_set_access, 187, 0,                                              \
	  GP_ARG(U64, pool) GP_ARG(BLOB, map), , ,                                               \
	  "cuMemPoolSetAccess: map is (u32 device, u32 flags) pairs")                            \
	X(POOL_GET_ACCESS, pool_get_access, 188, 0,                                              \
	  GP_ARG(U64, pool) GP_ARG(DEVICE, device),                                              \
	  GP_OUT(flags), ,                                                                       \
	  "cuMemPoolGetAccess (a device location)")                                              \
	X(POOL_OF_DEVICE, pool_of_device, 189, 0,                                                \
	  GP_ARG(DEVICE, device) GP_ARG(U32, current),                                           \
	  GP_OUT(pool), ,                                                                        \
	  "cuDeviceGetDefaultMemPool (current 0), cuDeviceGetMemPool (current 1), and their cuMem*MemPool forms") \
	X(POOL_SET_CURRENT, pool_set_current, 190, 0,                                            \
	  GP_ARG(DEVICE, device) GP_ARG(U64, pool), , ,                                          \
	  "cuDeviceSetMemPool, cuMemSetMemPool")                                                 \
	/* ---- managed memory (daemon/worker/managed.c, docs/protocol.md "Managed memory") ---- */ \
	X(MANAGED_ALLOC, managed_alloc, 191, 0,                                                  \
	  GP_ARG(CTX, ctx) GP_ARG(U64, bytes) GP_ARG(U32, flags),                                \
	  GP_OUT(dptr), ,                                                                        \
	  "cuMemAllocManaged, cuMemHostAlloc with DEVICEMAP: page-aligned, zeroed, the same address mapped in the client") \
	X(MANAGED_PUSH, managed_push, 192, GP_C_ASYNC,                                           \
	  GP_ARG(BLOB, runs) GP_ARG(BULK_IN, data), , ,                                          \
	  "pages the client wrote since the last push: runs is (u64 address, u64 bytes) pairs within managed allocations, data their bytes back to back") \
	X(MANAGED_DIFF, managed_diff, 193, 0,                                                    \
	  GP_ARG(U64, max),                                                                      \
	  GP_OUT(bytes) GP_OUT(runs) GP_OUT(more), ,                                             \
	  "at a synchronization point: the pages of managed memory the device changed since the client last saw them, at most max bytes of them, kept for MANAGED_FETCH (bytes: its size; more: 1 when changed pages are left for another round)") \
	X(MANAGED_FETCH, managed_fetch, 194, 0,                                                  \
	  GP_ARG(BULK_OUT, diff), , ,                                                            \
	  "what MANAGED_DIFF kept: runs (u64 address, u64 bytes) pairs, then their bytes; diff_len must be MANAGED_DIFF's bytes") \
	X(MANAGED_GLOBAL, managed_global, 195, 0,                                                \
	  GP_ARG(CTX, ctx) GP_ARG(LIBRARY, library) GP_ARG(NAME, symbol),                        \
	  GP_OUT(dptr) GP_OUT(bytes) GP_OUT(base) GP_OUT(len), ,                                 \
	  "cuLibraryGetManaged: a __managed__ variable (made in ctx) and the page-aligned block of managed memory it lies in (base, len), which the client maps and MANAGED_DIFF then covers")
/* clang-format on */

#endif
