/* ops_cmp.c -- comparisons and selection: setp, set, selp, slct. */
#include <math.h>
#include <string.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

enum { TC_S16, TC_U16, TC_S32, TC_U32, TC_S64, TC_U64, TC_F32, TC_F64, TC_F16, TC_BF16 };

static inline bool rel(int c, int s)
{
	/* s: -1 less, 0 equal, 1 greater, 2 unordered */
	switch (c) {
	case SG_EQ:
		return s == 0;
	case SG_NE:
		return s == -1 || s == 1;
	case SG_LT:
	case SG_LO:
		return s == -1;
	case SG_LE:
	case SG_LS:
		return s == -1 || s == 0;
	case SG_GT:
	case SG_HI:
		return s == 1;
	case SG_GE:
	case SG_HS:
		return s == 1 || s == 0;
	case SG_EQU:
		return s == 0 || s == 2;
	case SG_NEU:
		return s != 0;
	case SG_LTU:
		return s == -1 || s == 2;
	case SG_LEU:
		return s != 1;
	case SG_GTU:
		return s == 1 || s == 2;
	case SG_GEU:
		return s != -1;
	case SG_NUM:
		return s != 2;
	case SG_NAN:
		return s == 2;
	default:
		return false;
	}
}

static inline int order_f(double a, double b)
{
	if (isnan(a) || isnan(b))
		return 2;
	return a < b ? -1 : a > b ? 1 : 0;
}

/* aux: cmp | class << 8 | ftz << 12 */
static bool compare(const struct sg_insn *in, uint64_t a, uint64_t b)
{
	int c = (int)(in->aux & 0xff);
	bool ftz = (in->aux >> 12) & 1;
	int s;

	switch ((in->aux >> 8) & 0xf) {
	case TC_S16: {
		int16_t x = (int16_t)a, y = (int16_t)b;
		s = x < y ? -1 : x > y;
		break;
	}
	case TC_U16: {
		uint16_t x = (uint16_t)a, y = (uint16_t)b;
		s = x < y ? -1 : x > y;
		break;
	}
	case TC_S32: {
		int32_t x = (int32_t)a, y = (int32_t)b;
		s = x < y ? -1 : x > y;
		break;
	}
	case TC_U32: {
		uint32_t x = (uint32_t)a, y = (uint32_t)b;
		s = x < y ? -1 : x > y;
		break;
	}
	case TC_S64: {
		int64_t x = (int64_t)a, y = (int64_t)b;
		s = x < y ? -1 : x > y;
		break;
	}
	case TC_U64:
		s = a < b ? -1 : a > b;
		break;
	case TC_F32: {
		float x = sg_f32(a), y = sg_f32(b);

		if (ftz) {
			x = sg_ftz32(x);
			y = sg_ftz32(y);
		}
		s = order_f(x, y);
		break;
	}
	case TC_F64:
		s = order_f(sg_f64(a), sg_f64(b));
		break;
	case TC_F16:
		s = order_f(sg_f16_to_f32((uint16_t)a), sg_f16_to_f32((uint16_t)b));
		break;
	default:
		s = order_f(sg_bf16_to_f32((uint16_t)a), sg_bf16_to_f32((uint16_t)b));
		break;
	}
	return rel(c, s);
}

static inline bool combine(int bop, bool r, bool c)
{
	switch (bop) {
	case SG_BOP_AND:
		return r && c;
	case SG_BOP_OR:
		return r || c;
	case SG_BOP_XOR:
		return r != c;
	default:
		return r;
	}
}

/* setp, general: flags = bop | has c << 2 | c negated << 3 */
OP(setp)
{
	bool r = compare(in, A(0), A(1));
	int bop = in->flags & 3;

	if (in->flags & 4) {
		bool c = ((A(2) & 1) ^ ((in->flags >> 3) & 1)) != 0;

		t->r[in->d[0]] = combine(bop, r, c);
		if (in->nd > 1)
			t->r[in->d[1]] = combine(bop, !r, c);
	} else {
		t->r[in->d[0]] = r;
		if (in->nd > 1)
			t->r[in->d[1]] = !r;
	}
	return 0;
}

/* the frequent integer forms */
#define SETP(name, T, op)                            \
	OP(name)                                     \
	{                                            \
		t->r[in->d[0]] = (T)A(0) op(T) A(1); \
		return 0;                            \
	}
SETP(setp_lt_s32, int32_t, <)
SETP(setp_le_s32, int32_t, <=)
SETP(setp_gt_s32, int32_t, >)
SETP(setp_ge_s32, int32_t, >=)
SETP(setp_eq_32, uint32_t, ==)
SETP(setp_ne_32, uint32_t, !=)
SETP(setp_lt_u32, uint32_t, <)
SETP(setp_le_u32, uint32_t, <=)
SETP(setp_gt_u32, uint32_t, >)
SETP(setp_ge_u32, uint32_t, >=)
SETP(setp_lt_s64, int64_t, <)
SETP(setp_ge_s64, int64_t, >=)
SETP(setp_eq_64, uint64_t, ==)
SETP(setp_ne_64, uint64_t, !=)

/* set: writes 0xffffffff / 1.0f for true (imm = true value) */
OP(set)
{
	bool r = compare(in, A(0), A(1));
	int bop = in->flags & 3;

	if (in->flags & 4)
		r = combine(bop, r, ((A(2) & 1) ^ ((in->flags >> 3) & 1)) != 0);
	t->r[in->d[0]] = r ? (uint64_t)in->imm : 0;
	return 0;
}

OP(selp)
{
	t->r[in->d[0]] = (A(2) & 1) ? A(0) : A(1);
	return 0;
}

OP(slct_s32)
{
	t->r[in->d[0]] = (int32_t)A(2) >= 0 ? A(0) : A(1);
	return 0;
}

OP(slct_f32)
{
	float c = sg_f32(A(2));

	if (in->flags & 1)
		c = sg_ftz32(c);
	t->r[in->d[0]] = c >= 0.0f ? A(0) : A(1);
	return 0;
}

static int tclass(int type)
{
	switch (type) {
	case SG_S16:
		return TC_S16;
	case SG_U16:
	case SG_B16:
		return TC_U16;
	case SG_S32:
		return TC_S32;
	case SG_U32:
	case SG_B32:
		return TC_U32;
	case SG_S64:
		return TC_S64;
	case SG_U64:
	case SG_B64:
		return TC_U64;
	case SG_F32:
		return TC_F32;
	case SG_F64:
		return TC_F64;
	case SG_F16:
		return TC_F16;
	case SG_BF16:
		return TC_BF16;
	default:
		return -1;
	}
}

static sg_fn fast_setp(int cmp, int type)
{
	switch (type) {
	case SG_S32:
		switch (cmp) {
		case SG_LT:
			return setp_lt_s32;
		case SG_LE:
			return setp_le_s32;
		case SG_GT:
			return setp_gt_s32;
		case SG_GE:
			return setp_ge_s32;
		case SG_EQ:
			return setp_eq_32;
		case SG_NE:
			return setp_ne_32;
		}
		break;
	case SG_U32:
	case SG_B32:
		switch (cmp) {
		case SG_LT:
		case SG_LO:
			return setp_lt_u32;
		case SG_LE:
		case SG_LS:
			return setp_le_u32;
		case SG_GT:
		case SG_HI:
			return setp_gt_u32;
		case SG_GE:
		case SG_HS:
			return setp_ge_u32;
		case SG_EQ:
			return setp_eq_32;
		case SG_NE:
			return setp_ne_32;
		}
		break;
	case SG_S64:
		switch (cmp) {
		case SG_LT:
			return setp_lt_s64;
		case SG_GE:
			return setp_ge_s64;
		case SG_EQ:
			return setp_eq_64;
		case SG_NE:
			return setp_ne_64;
		}
		break;
	case SG_U64:
	case SG_B64:
		switch (cmp) {
		case SG_EQ:
			return setp_eq_64;
		case SG_NE:
			return setp_ne_64;
		}
		break;
	}
	return NULL;
}

static int lower_compare(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
			 int nops, int ctype, struct sg_insn *in)
{
	int tc = tclass(ctype);
	bool isf = sg_type_float(ctype);
	int c = o->cmp;

	if (tc < 0 || c == SG_CMP_NONE)
		return sg_lower_unsupported(L, o);
	if (!isf && c >= SG_EQU)
		return sg_lower_unsupported(L, o);
	if (isf && c >= SG_LO && c <= SG_HS)
		return sg_lower_unsupported(L, o);
	if (sg_lower_src(L, &ops[1], ctype, &in->s[0]) ||
	    sg_lower_src(L, &ops[2], ctype, &in->s[1]))
		return L->errcode;
	in->ns = 2;
	in->aux = (uint32_t)c | (uint32_t)tc << 8 | ((o->f & SG_F_FTZ) ? 1u << 12 : 0);
	if (nops == 4) {
		bool neg;

		if (o->bop == SG_BOP_NONE || o->bop == SG_BOP_POPC)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "%s: a fourth operand needs .and/.or/.xor", o->text);
		if (sg_lower_pred(L, &ops[3], &in->s[2], &neg))
			return L->errcode;
		in->ns = 3;
		in->flags = (uint8_t)(o->bop | 4 | (neg ? 8 : 0));
	} else if (o->bop != SG_BOP_NONE) {
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s needs a predicate operand",
				      o->text);
	}
	return 0;
}

int sg_lower_cmp(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	switch (o->base) {
	case SG_B_SETP:
		if (o->ntypes != 1 || (nops != 3 && nops != 4))
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad %s", o->text);
		if (sg_lower_dst(L, &ops[0], &in->d[0]))
			return L->errcode;
		in->nd = 1;
		if (ops[0].pair) {
			if (sg_lower_dst(L, ops[0].pair, &in->d[1]))
				return L->errcode;
			in->nd = 2;
		}
		if (lower_compare(L, o, ops, nops, o->types[0], in))
			return L->errcode;
		in->fn = setp;
		if (in->nd == 1 && nops == 3 && !(o->f & SG_F_FTZ)) {
			sg_fn f = fast_setp(o->cmp, o->types[0]);

			if (f)
				in->fn = f;
		}
		return 0;
	case SG_B_SET: {
		int dt = o->types[0];

		if (o->ntypes != 2 || (nops != 3 && nops != 4) ||
		    (dt != SG_U32 && dt != SG_S32 && dt != SG_F32 && dt != SG_B32))
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]))
			return L->errcode;
		in->nd = 1;
		if (lower_compare(L, o, ops, nops, o->types[1], in))
			return L->errcode;
		in->imm = dt == SG_F32 ? 0x3f800000 : 0xffffffff;
		in->fn = set;
		return 0;
	}
	case SG_B_SELP: {
		bool neg;

		if (o->ntypes != 1 || nops != 4)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad %s", o->text);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], o->types[0], &in->s[0]) ||
		    sg_lower_src(L, &ops[2], o->types[0], &in->s[1]) ||
		    sg_lower_pred(L, &ops[3], &in->s[2], &neg))
			return L->errcode;
		if (neg)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'!' in selp");
		in->nd = 1;
		in->ns = 3;
		in->fn = selp;
		return 0;
	}
	case SG_B_SLCT:
		if (o->ntypes != 2 || nops != 4 || (o->types[1] != SG_S32 && o->types[1] != SG_F32))
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], o->types[0], &in->s[0]) ||
		    sg_lower_src(L, &ops[2], o->types[0], &in->s[1]) ||
		    sg_lower_src(L, &ops[3], o->types[1], &in->s[2]))
			return L->errcode;
		in->nd = 1;
		in->ns = 3;
		in->flags = (o->f & SG_F_FTZ) ? 1 : 0;
		in->fn = o->types[1] == SG_S32 ? slct_s32 : slct_f32;
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
