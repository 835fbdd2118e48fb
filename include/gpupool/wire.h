/* wire.h -- message types and flags of the gpupool protocol.
 *
 * A frame is a 24-byte little-endian header, then msg_len bytes of one
 * protobuf message (proto/gpupool.proto), then bulk_len raw bytes:
 *
 *	off  size  field
 *	0    4     msg_len     protobuf bytes that follow the header
 *	4    4     bulk_len    raw bytes that follow the message
 *	8    8     request_id  chosen by the requester; replies and DATA echo it
 *	16   2     type        enum gp_msg_type
 *	18   2     flags       GP_F_*
 *	20   2     magic       GP_FRAME_MAGIC
 *	22   2     reserved    0
 *
 * docs/protocol.md describes the exchange; src/frame.h encodes and decodes.
 */
#ifndef GPUPOOL_WIRE_H
#define GPUPOOL_WIRE_H

#include <stdint.h>

#define GP_FRAME_HDR_SIZE 24u
#define GP_FRAME_MAGIC 0x5047u /* "GP" */
/* Caps checked before anything is allocated. */
#define GP_FRAME_MSG_MAX (1u << 20)
#define GP_FRAME_BULK_MAX (1u << 22)
/* Bulk transfers larger than this are cut into DATA frames of this size. */
#define GP_CHUNK_SIZE (1u << 20)

/* The sender does not wait for a reply and the receiver sends none. An error
 * is kept and reported once, as Reply.deferred, with the next reply. */
#define GP_F_NO_REPLY 0x0001u
/* More bulk for this request follows in DATA frames with the same id; the
 * last DATA frame of a transfer does not carry the flag. */
#define GP_F_MORE 0x0002u
#define GP_F_KNOWN (GP_F_NO_REPLY | GP_F_MORE)

/*
 * Message types. Calls document their Call.arg slots and Reply.out slots:
 * "ctx" is a context handle, "dptr" a device address, handles are worker ids.
 * X(name, number, protobuf message of the frame body)
 */
#define GP_MSG_MAP(X)                                                                            \
	/* session */                                                                            \
	X(HELLO, 1, hello)                                                                       \
	X(HELLO_REPLY, 2, hello_reply)                                                           \
	X(REPLY, 3, reply)                                                                       \
	/* DATA: bulk only; continues the transfer of request_id */                              \
	X(DATA, 4, none)                                                                         \
	/* GOODBYE: the client ends the session cleanly */                                       \
	X(GOODBYE, 5, none)                                                                      \
	/* OUTPUT: bulk only; what the session's kernels printed, for the client's stdout */     \
	X(OUTPUT, 6, none)                                                                       \
	/* contexts. CTX_CREATE arg: device, flags; out: ctx */                                  \
	X(CTX_CREATE, 100, call)                                                                 \
	/* arg: ctx */                                                                           \
	X(CTX_DESTROY, 101, call)                                                                \
	/* arg: ctx */                                                                           \
	X(CTX_SYNCHRONIZE, 102, call)                                                            \
	/* arg: device; out: ctx (the device's primary context, retained) */                     \
	X(PRIMARY_RETAIN, 103, call)                                                             \
	/* arg: device */                                                                        \
	X(PRIMARY_RELEASE, 104, call)                                                            \
	/* arg: device; frees everything the primary context held */                             \
	X(PRIMARY_RESET, 105, call)                                                              \
	/* arg: device, flags */                                                                 \
	X(PRIMARY_SET_FLAGS, 106, call)                                                          \
	/* arg: ctx, limit; out: value */                                                        \
	X(CTX_GET_LIMIT, 107, call)                                                              \
	/* arg: ctx, limit, value */                                                             \
	X(CTX_SET_LIMIT, 108, call)                                                              \
	/* arg: ctx; out: least priority, greatest priority (two's complement) */                \
	X(CTX_STREAM_PRIORITIES, 109, call)                                                      \
	/* memory. MEM_ALLOC arg: ctx, bytes; out: dptr */                                       \
	X(MEM_ALLOC, 110, call)                                                                  \
	/* arg: ctx, dptr */                                                                     \
	X(MEM_FREE, 111, call)                                                                   \
	/* arg: ctx, dst, bytes, stream, pitch, width; bulk: the bytes, rows packed */           \
	X(MEMCPY_HTOD, 112, call)                                                                \
	/* arg: ctx, src, bytes, stream, pitch, width; DATA frames bring the bytes (rows */      \
	/* packed), then the REPLY. Pitch 0: one contiguous range; else width-byte rows */       \
	/* pitch apart, bytes / width of them. */                                                \
	X(MEMCPY_DTOH, 113, call)                                                                \
	/* arg: ctx; out: free, total */                                                         \
	X(MEM_GET_INFO, 114, call)                                                               \
	/* arg: ctx, dst, src, width, stream, dst pitch, src pitch, height */                    \
	X(MEMCPY_DTOD, 115, call)                                                                \
	/* arg: ctx, dst, value, element size (1, 2, 4), count, stream, pitch, height; */        \
	/* pitch 0 for a 1-D memset */                                                           \
	X(MEMSET, 116, call)                                                                     \
	/* arg: ctx, width bytes, height, element size; out: dptr, pitch */                      \
	X(MEM_ALLOC_PITCH, 117, call)                                                            \
	/* modules. MODULE_LOAD arg: ctx, image bytes; bulk: the image; reply ModuleLoadReply */ \
	X(MODULE_LOAD, 120, call)                                                                \
	X(MODULE_LOAD_REPLY, 121, module_load_reply)                                             \
	/* arg: ctx, module */                                                                   \
	X(MODULE_UNLOAD, 122, call)                                                              \
	/* arg: ctx, module or library; name: the symbol; out: dptr, bytes */                    \
	X(GET_GLOBAL, 123, call)                                                                 \
	/* arg: image bytes, current ctx (0: none); bulk: the image; reply ModuleLoadReply */    \
	X(LIBRARY_LOAD, 124, call)                                                               \
	/* arg: library */                                                                       \
	X(LIBRARY_UNLOAD, 125, call)                                                             \
	/* arg: ctx, function or kernel, block size, dynamic shared bytes, flags; out: blocks */ \
	X(OCCUPANCY, 126, call)                                                                  \
	/* arg: ctx, function or kernel, attribute, value */                                     \
	X(FUNC_SET_ATTRIBUTE, 127, call)                                                         \
	/* launches */                                                                           \
	X(LAUNCH, 130, launch)                                                                   \
	/* streams. STREAM_CREATE arg: ctx, flags, priority; out: stream */                      \
	X(STREAM_CREATE, 140, call)                                                              \
	/* arg: ctx, stream */                                                                   \
	X(STREAM_DESTROY, 141, call)                                                             \
	/* arg: ctx, stream */                                                                   \
	X(STREAM_SYNCHRONIZE, 142, call)                                                         \
	/* arg: ctx, stream; the result is CUDA_SUCCESS or CUDA_ERROR_NOT_READY */               \
	X(STREAM_QUERY, 143, call)                                                               \
	/* arg: ctx, stream, event, flags */                                                     \
	X(STREAM_WAIT_EVENT, 144, call)                                                          \
	/* events. EVENT_CREATE arg: ctx, flags; out: event */                                   \
	X(EVENT_CREATE, 150, call)                                                               \
	/* arg: ctx, event */                                                                    \
	X(EVENT_DESTROY, 151, call)                                                              \
	/* arg: ctx, event, stream */                                                            \
	X(EVENT_RECORD, 152, call)                                                               \
	/* arg: ctx, event */                                                                    \
	X(EVENT_SYNCHRONIZE, 153, call)                                                          \
	/* arg: ctx, event; CUDA_SUCCESS or CUDA_ERROR_NOT_READY */                              \
	X(EVENT_QUERY, 154, call)                                                                \
	/* arg: ctx, start, end; out: milliseconds as the bits of a float */                     \
	X(EVENT_ELAPSED, 155, call)                                                              \
	/* supervisor <-> worker */                                                              \
	X(WORKER_SETUP, 200, worker_setup)                                                       \
	X(ADMIT_REQUEST, 201, admit_request)                                                     \
	X(ADMIT_REPLY, 202, admit_reply)                                                         \
	X(INVENTORY, 203, inventory)                                                             \
	/* poolctl <-> supervisor */                                                             \
	X(ADMIN_REQUEST, 300, admin_request)                                                     \
	X(ADMIN_REPLY, 301, admin_reply)

enum gp_msg_type {
#define GP_MSG_ENUM(name, num, body) GP_MSG_##name = (num),
	GP_MSG_MAP(GP_MSG_ENUM)
#undef GP_MSG_ENUM
};

#endif
