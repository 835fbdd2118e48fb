/* ops.h -- shorthands shared by the instruction families' executors (ops_*.c). */
#ifndef SG_OPS_H
#define SG_OPS_H

#include "ptx_int.h"

/* Source register i and the first destination of the instruction `in` run by thread `t`. */
#define A(i) (t->r[in->s[i]])
#define DST (t->r[in->d[0]])
/* A handler (sg_fn): 0 to go on, or an SG_STOP_* reason. */
#define OP(name) static int name(struct sg_thread *t, const struct sg_insn *in)

#endif
