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
#define GP_MSG_MAP(X)                                                                              \
	/* session */                                                                              \
	X(HELLO, 1, hello)                                                                          \
	X(HELLO_REPLY, 2, hello_reply)                                                              \
	X(REPLY, 3, reply)                                                                          \
	/* DATA: bulk only; continues the transfer of request_id */                                \
	X(DATA, 4, none)                                                                            \
	/* GOODBYE: the client ends the session cleanly */                                         \
	X(GOODBYE, 5, none)                                                                         \
	/* contexts. CTX_CREATE arg: device, flags; out: ctx */                                     \
	X(CTX_CREATE, 100, call)                                                                    \
	/* arg: ctx */                                                                              \
	X(CTX_DESTROY, 101, call)                                                                   \
	/* arg: ctx */                                                                              \
	X(CTX_SYNCHRONIZE, 102, call)                                                               \
	/* memory. MEM_ALLOC arg: ctx, bytes; out: dptr */                                          \
	X(MEM_ALLOC, 110, call)                                                                     \
	/* arg: ctx, dptr */                                                                        \
	X(MEM_FREE, 111, call)                                                                      \
	/* arg: ctx, dst dptr, bytes; bulk: the bytes (frame + DATA frames) */                      \
	X(MEMCPY_HTOD, 112, call)                                                                   \
	/* arg: ctx, src dptr, bytes; reply bulk: the bytes */                                      \
	X(MEMCPY_DTOH, 113, call)                                                                   \
	/* arg: ctx; out: free, total */                                                            \
	X(MEM_GET_INFO, 114, call)                                                                  \
	/* modules. MODULE_LOAD arg: ctx, image bytes; bulk: the image; reply ModuleLoadReply */    \
	X(MODULE_LOAD, 120, call)                                                                   \
	X(MODULE_LOAD_REPLY, 121, module_load_reply)                                                \
	/* arg: ctx, module */                                                                      \
	X(MODULE_UNLOAD, 122, call)                                                                 \
	/* launches */                                                                              \
	X(LAUNCH, 130, launch)                                                                      \
	/* supervisor <-> worker */                                                                 \
	X(WORKER_SETUP, 200, worker_setup)                                                          \
	X(ADMIT_REQUEST, 201, admit_request)                                                        \
	X(ADMIT_REPLY, 202, admit_reply)                                                            \
	X(INVENTORY, 203, inventory)                                                                \
	/* poolctl <-> supervisor */                                                                \
	X(ADMIN_REQUEST, 300, admin_request)                                                        \
	X(ADMIN_REPLY, 301, admin_reply)

enum gp_msg_type {
#define GP_MSG_ENUM(name, num, body) GP_MSG_##name = (num),
	GP_MSG_MAP(GP_MSG_ENUM)
#undef GP_MSG_ENUM
};

#endif
