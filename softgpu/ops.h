/* ops.h -- shorthands shared by the instruction families' executors (ops_*.c). */
#ifndef SG_OPS_H
#define SG_OPS_H

#include "ptx_int.h"

/* Source register i and the first destination of the instruction `in` run by thread `t`. */
#define A(i) (t->r[in->s[i]])
#define DST (t->r[in->d[0]])
/* A handler (sg_fn): 0 to go on, or an SG_STOP_* reason. */
#define OP(name) static int name(struct sg_thread *t, const struct sg_insn *in)

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
