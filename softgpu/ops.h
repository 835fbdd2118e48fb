/* ops.h -- shorthands shared by the instruction families' executors (ops_*.c). */
#ifndef SG_OPS_H
#define SG_OPS_H

#include "ptx_int.h"

/* Source register i and the first destination of the instruction `in` run by thread `t`. */
#define A(i) (t->r[in->s[i]])
#define DST (t->r[in->d[0]])
/* A handler its warp-wide form (SG_WARP_OF) inlines into its loop over the lanes. */
#define SG_HOT static inline __attribute__((always_inline))
/* Lists handler name and its warp-wide form name##_warp for sg_warp_of (ptx_lower.c). */
#define SG_WOP(name)                                          \
	static const struct sg_wop name##_wop __attribute__(( \
		used, section("sg_wops"), aligned(sizeof(struct sg_wop)))) = {name, name##_warp}

/*
 * The warp-wide form of a handler that may fault (a load or a store): name##_warp runs
 * it for each lane whose guard holds, with the lane's pc set as the handler expects,
 * and stops at the first fault. The warp-wide forms read a copy of the instruction:
 * its byte fields could alias the registers they store, so the compiler would
 * load them again for every lane.
 */
#define SG_WARP_OF(name)                                                                          \
	static int name##_warp(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *ip) \
	{                                                                                         \
		const struct sg_insn c = *ip, *in = &c;                                           \
		uint32_t pc = (uint32_t)(ip - gl[0]->code) + 1;                                   \
                                                                                                  \
		for (uint32_t k = 0; k < n; k++) {                                                \
			struct sg_thread *t = gl[k];                                              \
                                                                                                  \
			t->pc = pc;                                                               \
			if (((t->r[in->guard] ^ in->gneg) & 1) && name(t, in) != 0)               \
				return SG_STOP_FAULT;                                             \
		}                                                                                 \
		return 0;                                                                         \
	}                                                                                         \
	SG_WOP(name)

#ifndef SG_OPS_PURE
/* A handler (sg_fn): 0 to go on, or an SG_STOP_* reason. */
#define OP(name) static int name(struct sg_thread *t, const struct sg_insn *in)
#else
/*
 * A file that defines SG_OPS_PURE before including this promises that every
 * OP of it reads and writes only the lane's registers (and t->cc) and returns
 * 0. OP(name) then defines the body once (name_one), the handler `name`, its
 * warp-wide form (sg_wfn: the body inlined in a loop over the lanes) and
 * lists the pair in the section sg_wops, where sg_warp_of finds it.
 */
#define OP(name)                                                                                  \
	static inline int name##_one(struct sg_thread *t, const struct sg_insn *in);              \
	static int name(struct sg_thread *t, const struct sg_insn *in)                            \
	{                                                                                         \
		return name##_one(t, in);                                                         \
	}                                                                                         \
	static int name##_warp(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *ip) \
	{                                                                                         \
		const struct sg_insn c = *ip, *in = &c;                                           \
                                                                                                  \
		if (in->guard == SG_SLOT_TRUE) {                                                  \
			for (uint32_t k = 0; k < n; k++)                                          \
				(void)name##_one(gl[k], in);                                      \
			return 0;                                                                 \
		}                                                                                 \
		for (uint32_t k = 0; k < n; k++)                                                  \
			if ((gl[k]->r[in->guard] ^ in->gneg) & 1)                                 \
				(void)name##_one(gl[k], in);                                      \
		return 0;                                                                         \
	}                                                                                         \
	SG_WOP(name);                                                                             \
	static inline int name##_one(struct sg_thread *t, const struct sg_insn *in)
#endif

/* The '.'-separated words of an opcode after its base (its modifiers), for the lowerings
 * that read many of them (ops_mma.c, ops_tex.c): sg_opc_words fills ws (-1: more than 16),
 * sg_word_is says whether word i is s. In ops_mma.c. */
struct sg_words {
	const char *w[16];
	size_t n[16];
	int count;
};
int sg_opc_words(const struct sg_opc *o, struct sg_words *ws);
bool sg_word_is(const struct sg_words *ws, int i, const char *s);

#endif
