/* ops_atom.c -- atom and red on global, shared and generic addresses. */
#include <math.h>
#include <string.h>

#include <cuda.h>

#include "ops.h"

/*
 * Blocks of a grid run on several host threads at once, so global atomics
 * are host atomics (sequentially consistent; PTX's weaker orders and scopes
 * are satisfied by that). As on NVIDIA GPUs, f32 atom.add on global memory
 * flushes subnormals (FADD.FTZ.RN), on shared memory it keeps them (CUDA C
 * Programming Guide, floating-point standard).
 *
 * in->aux = op | class << 8, in->flags = space | has destination << 4.
 */

enum { C_U32, C_S32, C_U64, C_S64, C_F32, C_F64, C_F16, C_BF16, C_F16X2, C_BF16X2 };

static unsigned class_size(int c)
{
	switch (c) {
	case C_U64:
	case C_S64:
	case C_F64:
		return 8;
	case C_F16:
	case C_BF16:
		return 2;
	default:
		return 4;
	}
}

static uint16_t hadd(uint16_t a, uint16_t b, bool bf)
{
	float x = bf ? sg_bf16_to_f32(a) : sg_f16_to_f32(a);
	float y = bf ? sg_bf16_to_f32(b) : sg_f16_to_f32(b);

	return bf ? sg_f32_to_bf16(x + y, SG_RN) : sg_f32_to_f16(x + y, SG_RN);
}

/* new value for old under op (CAS loops); b, c are the operands */
static uint64_t apply(int op, int cls, uint64_t old, uint64_t b, bool ftz)
{
	switch (op) {
	case SG_AOP_ADD:
		switch (cls) {
		case C_F32: {
			float x = sg_f32((uint32_t)old), y = sg_f32((uint32_t)b), r;

			if (ftz) {
				x = sg_ftz32(x);
				y = sg_ftz32(y);
			}
			r = x + y;
			return sg_b32(ftz ? sg_ftz32(r) : r);
		}
		case C_F64: {
			double x, y;

			memcpy(&x, &old, 8);
			memcpy(&y, &b, 8);
			x += y;
			memcpy(&old, &x, 8);
			return old;
		}
		case C_F16:
			return hadd((uint16_t)old, (uint16_t)b, false);
		case C_BF16:
			return hadd((uint16_t)old, (uint16_t)b, true);
		case C_F16X2:
		case C_BF16X2: {
			bool bf = cls == C_BF16X2;

			return (uint32_t)hadd((uint16_t)(old >> 16), (uint16_t)(b >> 16), bf)
				       << 16 |
			       hadd((uint16_t)old, (uint16_t)b, bf);
		}
		default:
			return old + b;
		}
	case SG_AOP_MIN:
		switch (cls) {
		case C_S32:
			return (int32_t)b < (int32_t)old ? (uint32_t)b : old;
		case C_S64:
			return (int64_t)b < (int64_t)old ? b : old;
		case C_U32:
			return (uint32_t)b < (uint32_t)old ? (uint32_t)b : old;
		default:
			return b < old ? b : old;
		}
	case SG_AOP_MAX:
		switch (cls) {
		case C_S32:
			return (int32_t)b > (int32_t)old ? (uint32_t)b : old;
		case C_S64:
			return (int64_t)b > (int64_t)old ? b : old;
		case C_U32:
			return (uint32_t)b > (uint32_t)old ? (uint32_t)b : old;
		default:
			return b > old ? b : old;
		}
	case SG_AOP_INC:
		return (uint32_t)old >= (uint32_t)b ? 0 : (uint32_t)old + 1;
	case SG_AOP_DEC:
		return ((uint32_t)old == 0 || (uint32_t)old > (uint32_t)b) ? (uint32_t)b
									   : (uint32_t)old - 1;
	case SG_AOP_AND:
		return old & b;
	case SG_AOP_OR:
		return old | b;
	case SG_AOP_XOR:
		return old ^ b;
	default:
		return b; /* exch */
	}
}

/* in->flags: space | 0x10 (returns the old value) | 0x20 (a 32-bit base: wraps at 2^32) */
static inline uint64_t atom_ea(const struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = A(0) + (uint64_t)in->imm;

	return in->flags & 0x20 ? (uint32_t)a : a;
}

static int op_atom(struct sg_thread *t, const struct sg_insn *in)
{
	int op = (int)(in->aux & 0xff), cls = (int)(in->aux >> 8);
	int space = in->flags & 0xf;
	unsigned size = class_size(cls);
	uint64_t addr = atom_ea(t, in), b = A(1), old;
	void *p = sg_addr(t, space, addr, size, true);
	bool ftz = space == SG_SP_GLOBAL || (space == SG_SP_GENERIC && (addr >> SG_WIN_SHIFT) == 0);

	if (p == NULL)
		return SG_STOP_FAULT;
	if (size == 4) {
		uint32_t *q = p, o = __atomic_load_n(q, __ATOMIC_SEQ_CST);

		if (op == SG_AOP_CAS) {
			uint32_t expect = (uint32_t)b;

			__atomic_compare_exchange_n(q, &expect, (uint32_t)A(2), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			o = expect;
		} else {
			while (!__atomic_compare_exchange_n(
				q, &o, (uint32_t)apply(op, cls, o, b, ftz), true, __ATOMIC_SEQ_CST,
				__ATOMIC_SEQ_CST))
				;
		}
		old = o;
	} else if (size == 8) {
		uint64_t *q = p, o = __atomic_load_n(q, __ATOMIC_SEQ_CST);

		if (op == SG_AOP_CAS) {
			uint64_t expect = b;

			__atomic_compare_exchange_n(q, &expect, A(2), false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			o = expect;
		} else {
			while (!__atomic_compare_exchange_n(q, &o, apply(op, cls, o, b, ftz), true,
							    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				;
		}
		old = o;
	} else {
		uint16_t *q = p, o = __atomic_load_n(q, __ATOMIC_SEQ_CST);

		if (op == SG_AOP_CAS) {
			uint16_t expect = (uint16_t)b;

			__atomic_compare_exchange_n(q, &expect, (uint16_t)A(2), false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			o = expect;
		} else {
			while (!__atomic_compare_exchange_n(
				q, &o, (uint16_t)apply(op, cls, o, b, ftz), true, __ATOMIC_SEQ_CST,
				__ATOMIC_SEQ_CST))
				;
		}
		old = o;
	}
	if (in->flags & 0x10)
		t->r[in->d[0]] = old;
	return 0;
}

/* the common integer add on global memory */
static int op_atom_add_u32(struct sg_thread *t, const struct sg_insn *in)
{
	uint32_t *p = sg_addr(t, in->flags & 0xf, atom_ea(t, in), 4, true);
	uint32_t old;

	if (p == NULL)
		return SG_STOP_FAULT;
	old = __atomic_fetch_add(p, (uint32_t)A(1), __ATOMIC_SEQ_CST);
	if (in->flags & 0x10)
		t->r[in->d[0]] = old;
	return 0;
}

static int type_class(int type)
{
	switch (type) {
	case SG_U32:
	case SG_B32:
		return C_U32;
	case SG_S32:
		return C_S32;
	case SG_U64:
	case SG_B64:
		return C_U64;
	case SG_S64:
		return C_S64;
	case SG_F32:
		return C_F32;
	case SG_F64:
		return C_F64;
	case SG_F16:
		return C_F16;
	case SG_BF16:
		return C_BF16;
	case SG_F16X2:
		return C_F16X2;
	case SG_BF16X2:
		return C_BF16X2;
	default:
		return -1;
	}
}

int sg_lower_atom(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	bool red = o->base == SG_B_RED;
	int cls = type_class(o->types[0]), op = o->aop, hint, want;
	bool wrap32;
	const struct sg_operand *rest;
	int64_t off;

	if (o->ntypes != 1 || cls < 0 || op == SG_AOP_NONE || o->vec)
		return sg_lower_unsupported(L, o);
	if (o->space != SG_SP_GENERIC && o->space != SG_SP_GLOBAL && o->space != SG_SP_SHARED)
		return sg_lower_unsupported(L, o);
	/* which (op, type) pairs PTX has */
	switch (op) {
	case SG_AOP_ADD:
		if (cls == C_S64)
			return sg_lower_unsupported(L, o);
		break;
	case SG_AOP_MIN:
	case SG_AOP_MAX:
		if (cls > C_S64)
			return sg_lower_unsupported(L, o);
		break;
	case SG_AOP_INC:
	case SG_AOP_DEC:
		if (cls != C_U32)
			return sg_lower_unsupported(L, o);
		break;
	default:
		if (cls >= C_F32 && !(op == SG_AOP_EXCH && (cls == C_F32 || cls == C_F64)))
			return sg_lower_unsupported(L, o);
		break;
	}
	if (op == SG_AOP_CAS && red)
		return sg_lower_unsupported(L, o);
	want = red ? 2 : op == SG_AOP_CAS ? 4 : 3;
	if (nops != want)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s takes %d operands", o->text,
				      want);
	rest = red ? &ops[0] : &ops[1];
	if (!red) {
		if (sg_lower_dst(L, &ops[0], &in->d[0]))
			return L->errcode;
		in->nd = 1;
	}
	if (sg_lower_addr(L, &rest[0], &hint, &in->s[0], &off, &wrap32))
		return L->errcode;
	in->imm = off;
	if (hint == (SG_SP_LOCAL | 0x100) || hint == SG_SP_LOCAL || hint == SG_SP_PARAM ||
	    hint == SG_SP_FPARAM || hint == SG_SP_CONST)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s on a non-atomic state space",
				      o->text);
	for (int i = 1; i < want - (red ? 0 : 1); i++)
		if (sg_lower_src(L, &rest[i], o->types[0], &in->s[i]))
			return L->errcode;
	in->ns = (uint8_t)(want - (red ? 0 : 1));
	in->aux = (uint32_t)op | (uint32_t)cls << 8;
	in->flags = (uint8_t)((o->space == SG_SP_GENERIC && hint == SG_SP_SHARED ? SG_SP_SHARED
										 : o->space) |
			      (red ? 0 : 0x10) | (wrap32 ? 0x20 : 0));
	in->fn = op_atom;
	if (op == SG_AOP_ADD && (cls == C_U32 || cls == C_S32))
		in->fn = op_atom_add_u32;
	return 0;
}
