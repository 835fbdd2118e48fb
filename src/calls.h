/* calls.h -- the C side of <gpupool/calls.h>: named request and reply structs, the
 * client's encoder, and what each call is (flags, argument counts) for both ends.
 *
 * For a call NAME/name of GP_CALL_MAP this header defines
 *	struct gp_in_name      its request fields, named as in the map
 *	struct gp_out_name     its scalar outputs (plus a placeholder member)
 *	GP_NARGS_NAME, GP_NOUTS_NAME   how many Call.arg and Reply.out slots it uses
 *	gp_call_pack_name()    fills a Call (and the bulk reference) from the request
 *	gp_call_outs_name()    fills the output struct from Reply.out
 * The worker's decoder is generated from the same map in daemon/worker/calls.c.
 */
#ifndef GP_CALLS_H
#define GP_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include <gpupool/calls.h>
#include <gpupool/wire.h>

#include "codec.h"

/* Most Call.arg slots any call has (checked at compile time in calls.c). */
#define GP_CALL_ARGS_MAX 24
#define GP_CALL_OUTS_MAX 4

/* Kinds that are not a plain Call.arg slot, as bits (struct gp_call_info.kinds). */
#define GP_K_NAME 0x1u
#define GP_K_BLOB 0x2u
#define GP_K_BULK_IN 0x4u
#define GP_K_BULK_OUT 0x8u

/* ---- request structs: one member (or two) per argument, by kind ---- */
#define GP__IN_CTX(f) uint64_t f;
#define GP__IN_CTX_OPT(f) uint64_t f;
#define GP__IN_DEVICE(f) uint64_t f;
#define GP__IN_STREAM(f) uint64_t f;
#define GP__IN_EVENT(f) uint64_t f;
#define GP__IN_MODULE(f) uint64_t f;
#define GP__IN_LIBRARY(f) uint64_t f;
#define GP__IN_MODLIB(f) uint64_t f;
#define GP__IN_FUNC(f) uint64_t f;
#define GP__IN_DPTR(f) uint64_t f;
#define GP__IN_U64(f) uint64_t f;
#define GP__IN_U32(f) uint32_t f;
#define GP__IN_I32(f) int32_t f;
#define GP__IN_NAME(f) const char *f;
#define GP__IN_BLOB(f) \
	const void *f; \
	size_t f##_len;
#define GP__IN_BULK_IN(f) \
	const void *f;    \
	uint64_t f##_len;
#define GP__IN_BULK_OUT(f) \
	void *f;           \
	uint64_t f##_len;

#define GP_ARG(kind, f) GP__IN_##kind(f)
#define GP_OUT(f) uint64_t f;
#define GP_RANGE(base, width, height, pitch)
#define GP__STRUCTS(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) \
	struct gp_in_##name {                                        \
		ARGS                                                 \
	};                                                           \
	struct gp_out_##name {                                       \
		OUTS uint8_t unused_;                                \
	};
GP_CALL_MAP(GP__STRUCTS)
#undef GP__STRUCTS
#undef GP_OUT
#undef GP_ARG

/* ---- counts and kinds ---- */
#define GP__SLOT_NAME 0
#define GP__SLOT_BLOB 0
#define GP__SLOT_CTX 1
#define GP__SLOT_CTX_OPT 1
#define GP__SLOT_DEVICE 1
#define GP__SLOT_STREAM 1
#define GP__SLOT_EVENT 1
#define GP__SLOT_MODULE 1
#define GP__SLOT_LIBRARY 1
#define GP__SLOT_MODLIB 1
#define GP__SLOT_FUNC 1
#define GP__SLOT_DPTR 1
#define GP__SLOT_U64 1
#define GP__SLOT_U32 1
#define GP__SLOT_I32 1
#define GP__SLOT_BULK_IN 1
#define GP__SLOT_BULK_OUT 1
#define GP__KBIT_NAME GP_K_NAME
#define GP__KBIT_BLOB GP_K_BLOB
#define GP__KBIT_BULK_IN GP_K_BULK_IN
#define GP__KBIT_BULK_OUT GP_K_BULK_OUT
#define GP__KBIT_CTX 0
#define GP__KBIT_CTX_OPT 0
#define GP__KBIT_DEVICE 0
#define GP__KBIT_STREAM 0
#define GP__KBIT_EVENT 0
#define GP__KBIT_MODULE 0
#define GP__KBIT_LIBRARY 0
#define GP__KBIT_MODLIB 0
#define GP__KBIT_FUNC 0
#define GP__KBIT_DPTR 0
#define GP__KBIT_U64 0
#define GP__KBIT_U32 0
#define GP__KBIT_I32 0

#define GP_ARG(kind, f) +GP__SLOT_##kind
#define GP_OUT(f) +1
#define GP__COUNTS(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) \
	GP_NARGS_##NAME = 0 ARGS, GP_NOUTS_##NAME = 0 OUTS,
enum { GP_CALL_MAP(GP__COUNTS) };
#undef GP__COUNTS
#undef GP_OUT
#undef GP_ARG

/* ---- the client's encoder ---- */

/* The bytes that go with a request, or that its answer brings. */
struct gp_bulk_ref {
	const void *src; /* BULK_IN: sent after the request */
	void *dst;	 /* BULK_OUT: where the answer's bytes land */
	uint64_t len;
};

#define GP__PACK_CTX(f) args[i++] = in->f;
#define GP__PACK_CTX_OPT(f) args[i++] = in->f;
#define GP__PACK_DEVICE(f) args[i++] = in->f;
#define GP__PACK_STREAM(f) args[i++] = in->f;
#define GP__PACK_EVENT(f) args[i++] = in->f;
#define GP__PACK_MODULE(f) args[i++] = in->f;
#define GP__PACK_LIBRARY(f) args[i++] = in->f;
#define GP__PACK_MODLIB(f) args[i++] = in->f;
#define GP__PACK_FUNC(f) args[i++] = in->f;
#define GP__PACK_DPTR(f) args[i++] = in->f;
#define GP__PACK_U64(f) args[i++] = in->f;
#define GP__PACK_U32(f) args[i++] = in->f;
#define GP__PACK_I32(f) args[i++] = (uint64_t)(int64_t)in->f;
#define GP__PACK_NAME(f) c->name = (char *)in->f;
#define GP__PACK_BLOB(f)                 \
	c->blob.data = (uint8_t *)in->f; \
	c->blob.len = in->f##_len;
#define GP__PACK_BULK_IN(f)      \
	args[i++] = in->f##_len; \
	b->src = in->f;          \
	b->len = in->f##_len;
#define GP__PACK_BULK_OUT(f)     \
	args[i++] = in->f##_len; \
	b->dst = in->f;          \
	b->len = in->f##_len;

#define GP_ARG(kind, f) GP__PACK_##kind(f)
#define GP_OUT(f) out->f = o[j++];
#define GP__CODEC(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)                           \
	static inline void gp_call_pack_##name(const struct gp_in_##name *in, Gp__Call *c,   \
					       uint64_t args[GP_CALL_ARGS_MAX],              \
					       struct gp_bulk_ref *b)                        \
	{                                                                                    \
		size_t i = 0;                                                                \
                                                                                             \
		*b = (struct gp_bulk_ref){0};                                                \
		ARGS c->arg = args;                                                          \
		c->n_arg = i;                                                                \
	}                                                                                    \
	static inline void gp_call_outs_##name(const uint64_t *o, struct gp_out_##name *out) \
	{                                                                                    \
		size_t j = 0;                                                                \
                                                                                             \
		(void)o;                                                                     \
		(void)j;                                                                     \
		OUTS out->unused_ = 0;                                                       \
	}
GP_CALL_MAP(GP__CODEC)
#undef GP__CODEC
#undef GP_OUT
#undef GP_ARG
#undef GP_RANGE

/* ---- what each call is, by message type ---- */
struct gp_call_info {
	unsigned type;
	const char *name; /* "MEM_ALLOC" */
	unsigned flags;	  /* GP_C_* */
	unsigned nargs, nouts;
	unsigned kinds;				/* GP_K_*: the special kinds among its arguments */
	const char *args, *outs, *ranges, *doc; /* the description's text, for docs */
};

/* The call of this message type; NULL when the type is not a call. */
const struct gp_call_info *gp_call_info(unsigned type);
/* Every call in the map's order; *n gets their number. */
const struct gp_call_info *gp_call_all(size_t *n);

#endif
