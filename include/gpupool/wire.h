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

#include <gpupool/calls.h>

#define GP_FRAME_HDR_SIZE 24u
#define GP_FRAME_MAGIC 0x5047u /* "GP" */
/* Caps checked before anything is allocated. A frame carries at most one chunk of bulk. */
#define GP_FRAME_MSG_MAX (1u << 20)
#define GP_FRAME_BULK_MAX GP_CHUNK_SIZE
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
 * Message types that are not calls. The calls (types 100-299 but 200-203) are described in
 * <gpupool/calls.h>; their bodies are Call messages.
 * X(name, number, protobuf message of the frame body)
 */
#define GP_MSG_MAP(X)                                                                            \
	/* session */                                                                            \
	X(HELLO, 1, hello)                                                                       \
	X(HELLO_REPLY, 2, hello_reply)                                                           \
	/* REPLY: the answer to every call */                                                    \
	X(REPLY, 3, reply)                                                                       \
	/* DATA: bulk only; continues the transfer of request_id */                              \
	X(DATA, 4, none)                                                                         \
	/* GOODBYE: the client ends the session cleanly */                                       \
	X(GOODBYE, 5, none)                                                                      \
	/* OUTPUT: bulk only; what the session's kernels printed, for the client's stdout */     \
	X(OUTPUT, 6, none)                                                                       \
	/* HOST_CALL: worker -> client, a host function is due on its stream (request_id: the */ \
	/* LAUNCH_HOST_FUNC's); arg: fn, data, client stream, kind, the stream's status */       \
	/* kind 2: fetch (arg: token, bytes; HOST_DONE brings the client memory's bytes); */     \
	/* kind 3: push (arg: token, bytes; the bytes follow as bulk, for the client memory) */  \
	X(HOST_CALL, 7, call)                                                                    \
	/* HOST_DONE: client -> worker, that host function returned; the stream goes on */       \
	X(HOST_DONE, 8, none)                                                                    \
	/* OUTPUT_ERR: bulk only; what the driver wrote to stderr (device assert messages), */   \
	/* for the client's stderr; sent only to a client whose Hello says stderr_output */      \
	X(OUTPUT_ERR, 9, none)                                                                   \
	/* TENANT_CHALLENGE: worker -> client after Hello, mTLS only; TENANT_PROOF answers */    \
	X(TENANT_CHALLENGE, 320, tenant_challenge)                                               \
	X(TENANT_PROOF, 321, tenant_proof)                                                       \
	/* supervisor <-> worker */                                                              \
	X(WORKER_SETUP, 200, worker_setup)                                                       \
	X(ADMIT_REQUEST, 201, admit_request)                                                     \
	X(ADMIT_REPLY, 202, admit_reply)                                                         \
	X(INVENTORY, 203, inventory)                                                             \
	/* worker <-> supervisor, on the IPC socket (a datagram each, no frame header) */        \
	X(IPC_REQUEST, 330, ipc_request)                                                         \
	X(IPC_REPLY, 331, ipc_reply)                                                             \
	/* poolctl <-> supervisor */                                                             \
	X(ADMIN_REQUEST, 300, admin_request)                                                     \
	X(ADMIN_REPLY, 301, admin_reply)

enum gp_msg_type {
#define GP_MSG_ENUM(name, num, body) GP_MSG_##name = (num),
#define GP_CALL_ENUM(NAME, name, num, flags, args, outs, ranges, doc) GP_MSG_##NAME = (num),
	GP_MSG_MAP(GP_MSG_ENUM) GP_CALL_MAP(GP_CALL_ENUM)
#undef GP_CALL_ENUM
#undef GP_MSG_ENUM
};

#endif
