/* ops_int.c -- integer arithmetic: add, sub, mul, mad, div, rem, abs, neg, min, max, sad, carries. */
#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

/*
 * Values live in 64-bit slots; an N-bit result is stored zero-extended and an
 * N-bit operand is read from the low N bits, so narrow registers never see
 * stale high bits. Arithmetic is done in unsigned types (wrapping, as PTX
 * integers do) promoted enough that C never overflows a signed int.
 */

typedef unsigned __int128 u128;
typedef __int128 s128;

#define INT_OPS(W, U, S, P, WU, WS)                                                         \
	OP(add_##W)                                                                         \
	{                                                                                   \
		DST = (U)((P)(U)A(0) + (P)(U)A(1));                                         \
		return 0;                                                                   \
	}                                                                                   \
	OP(sub_##W)                                                                         \
	{                                                                                   \
		DST = (U)((P)(U)A(0) - (P)(U)A(1));                                         \
		return 0;                                                                   \
	}                                                                                   \
	OP(mul_lo_##W)                                                                      \
	{                                                                                   \
		DST = (U)((P)(U)A(0) * (P)(U)A(1));                                         \
		return 0;                                                                   \
	}                                                                                   \
	OP(mul_hi_u_##W)                                                                    \
	{                                                                                   \
		DST = (U)(((WU)(U)A(0) * (WU)(U)A(1)) >> W);                                \
		return 0;                                                                   \
	}                                                                                   \
	OP(mul_hi_s_##W)                                                                    \
	{                                                                                   \
		DST = (U)(((WS)(S)A(0) * (WS)(S)A(1)) >> W);                                \
		return 0;                                                                   \
	}                                                                                   \
	OP(mad_lo_##W)                                                                      \
	{                                                                                   \
		DST = (U)((P)(U)A(0) * (P)(U)A(1) + (P)(U)A(2));                            \
		return 0;                                                                   \
	}                                                                                   \
	OP(mad_hi_u_##W)                                                                    \
	{                                                                                   \
		DST = (U)((U)(((WU)(U)A(0) * (WU)(U)A(1)) >> W) + (P)(U)A(2));              \
		return 0;                                                                   \
	}                                                                                   \
	OP(mad_hi_s_##W)                                                                    \
	{                                                                                   \
		DST = (U)((U)(((WS)(S)A(0) * (WS)(S)A(1)) >> W) + (P)(U)A(2));              \
		return 0;                                                                   \
	}                                                                                   \
	OP(div_u_##W)                                                                       \
	{                                                                                   \
		U a = (U)A(0), b = (U)A(1);                                                 \
		DST = b ? (U)(a / b) : (U) ~(U)0;                                           \
		return 0;                                                                   \
	}                                                                                   \
	OP(div_s_##W)                                                                       \
	{                                                                                   \
		S a = (S)A(0), b = (S)A(1);                                                 \
		if (b == 0)                                                                 \
			DST = (U) ~(U)0;                                                    \
		else if (b == -1)                                                           \
			DST = (U)(0 - (P)(U)a);                                             \
		else                                                                        \
			DST = (U)(a / b);                                                   \
		return 0;                                                                   \
	}                                                                                   \
	OP(rem_u_##W)                                                                       \
	{                                                                                   \
		U a = (U)A(0), b = (U)A(1);                                                 \
		DST = b ? (U)(a % b) : a;                                                   \
		return 0;                                                                   \
	}                                                                                   \
	OP(rem_s_##W)                                                                       \
	{                                                                                   \
		S a = (S)A(0), b = (S)A(1);                                                 \
		DST = (U)(b == 0 ? a : b == -1 ? 0 : a % b);                                \
		return 0;                                                                   \
	}                                                                                   \
	OP(abs_##W)                                                                         \
	{                                                                                   \
		S a = (S)A(0);                                                              \
		DST = (U)(a < 0 ? (U)(0 - (P)(U)a) : (U)a);                                 \
		return 0;                                                                   \
	}                                                                                   \
	OP(neg_##W)                                                                         \
	{                                                                                   \
		DST = (U)(0 - (P)(U)A(0));                                                  \
		return 0;                                                                   \
	}                                                                                   \
	OP(min_u_##W)                                                                       \
	{                                                                                   \
		U a = (U)A(0), b = (U)A(1);                                                 \
		DST = a < b ? a : b;                                                        \
		return 0;                                                                   \
	}                                                                                   \
	OP(max_u_##W)                                                                       \
	{                                                                                   \
		U a = (U)A(0), b = (U)A(1);                                                 \
		DST = a > b ? a : b;                                                        \
		return 0;                                                                   \
	}                                                                                   \
	OP(min_s_##W)                                                                       \
	{                                                                                   \
		S a = (S)A(0), b = (S)A(1);                                                 \
		DST = (U)(a < b ? a : b);                                                   \
		return 0;                                                                   \
	}                                                                                   \
	OP(max_s_##W)                                                                       \
	{                                                                                   \
		S a = (S)A(0), b = (S)A(1);                                                 \
		DST = (U)(a > b ? a : b);                                                   \
		return 0;                                                                   \
	}                                                                                   \
	OP(sad_u_##W)                                                                       \
	{                                                                                   \
		U a = (U)A(0), b = (U)A(1);                                                 \
		DST = (U)((P)(a > b ? (P)a - b : (P)b - a) + (P)(U)A(2));                   \
		return 0;                                                                   \
	}                                                                                   \
	OP(sad_s_##W)                                                                       \
	{                                                                                   \
		S a = (S)A(0), b = (S)A(1);                                                 \
		DST = (U)((P)(a > b ? (P)(U)a - (P)(U)b : (P)(U)b - (P)(U)a) + (P)(U)A(2)); \
		return 0;                                                                   \
	}

INT_OPS(16, uint16_t, int16_t, uint32_t, uint32_t, int32_t)
INT_OPS(32, uint32_t, int32_t, uint32_t, uint64_t, int64_t)
INT_OPS(64, uint64_t, int64_t, uint64_t, u128, s128)

/* wide forms: N x N -> 2N bits (mul.wide, mad.wide) */
OP(mul_wide_u_16)
{
	DST = (uint32_t)(uint16_t)A(0) * (uint16_t)A(1);
	return 0;
}
OP(mul_wide_s_16)
{
	DST = (uint32_t)((int32_t)(int16_t)A(0) * (int16_t)A(1));
	return 0;
}
OP(mul_wide_u_32)
{
	DST = (uint64_t)(uint32_t)A(0) * (uint32_t)A(1);
	return 0;
}
OP(mul_wide_s_32)
{
	DST = (uint64_t)((int64_t)(int32_t)A(0) * (int32_t)A(1));
	return 0;
}
OP(mad_wide_u_16)
{
	DST = (uint32_t)((uint32_t)(uint16_t)A(0) * (uint16_t)A(1) + (uint32_t)A(2));
	return 0;
}
OP(mad_wide_s_16)
{
	DST = (uint32_t)((uint32_t)((int32_t)(int16_t)A(0) * (int16_t)A(1)) + (uint32_t)A(2));
	return 0;
}
OP(mad_wide_u_32)
{
	DST = (uint64_t)(uint32_t)A(0) * (uint32_t)A(1) + A(2);
	return 0;
}
OP(mad_wide_s_32)
{
	DST = (uint64_t)((int64_t)(int32_t)A(0) * (int32_t)A(1)) + A(2);
	return 0;
}

/* saturating s32 forms */
static uint32_t sat32(int64_t v)
{
	return (uint32_t)(int32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v);
}
OP(add_sat_s32)
{
	DST = sat32((int64_t)(int32_t)A(0) + (int32_t)A(1));
	return 0;
}
OP(sub_sat_s32)
{
	DST = sat32((int64_t)(int32_t)A(0) - (int32_t)A(1));
	return 0;
}
OP(mad_hi_sat_s32)
{
	int64_t p = ((int64_t)(int32_t)A(0) * (int32_t)A(1)) >> 32;

	DST = sat32(p + (int32_t)A(2));
	return 0;
}

/* 24-bit multiplies */
static int64_t s24(uint64_t v)
{
	return (int64_t)((int32_t)((uint32_t)v << 8) >> 8);
}
OP(mul24_lo_u)
{
	DST = (uint32_t)((A(0) & 0xffffff) * (A(1) & 0xffffff));
	return 0;
}
OP(mul24_lo_s)
{
	DST = (uint32_t)(uint64_t)(s24(A(0)) * s24(A(1)));
	return 0;
}
OP(mul24_hi_u)
{
	DST = (uint32_t)(((A(0) & 0xffffff) * (A(1) & 0xffffff)) >> 16);
	return 0;
}
OP(mul24_hi_s)
{
	DST = (uint32_t)((uint64_t)(s24(A(0)) * s24(A(1))) >> 16);
	return 0;
}
OP(mad24_lo_u)
{
	DST = (uint32_t)((A(0) & 0xffffff) * (A(1) & 0xffffff) + (uint32_t)A(2));
	return 0;
}
OP(mad24_lo_s)
{
	DST = (uint32_t)((uint64_t)(s24(A(0)) * s24(A(1))) + (uint32_t)A(2));
	return 0;
}
OP(mad24_hi_u)
{
	DST = (uint32_t)((((A(0) & 0xffffff) * (A(1) & 0xffffff)) >> 16) + (uint32_t)A(2));
	return 0;
}
OP(mad24_hi_s)
{
	DST = (uint32_t)(((uint64_t)(s24(A(0)) * s24(A(1))) >> 16) + (uint32_t)A(2));
	return 0;
}

/* extended precision: in->flags & 1 = writes the carry (.cc), & 2 = reads it (addc...) */
OP(addcc_32)
{
	uint64_t r = (uint64_t)(uint32_t)A(0) + (uint32_t)A(1) + ((in->flags & 2) ? t->cc : 0);

	DST = (uint32_t)r;
	if (in->flags & 1)
		t->cc = (uint8_t)(r >> 32);
	return 0;
}
OP(subcc_32)
{
	uint64_t b = (uint64_t)(uint32_t)A(1) + ((in->flags & 2) ? t->cc : 0);
	uint32_t a = (uint32_t)A(0);

	DST = (uint32_t)(a - b);
	if (in->flags & 1)
		t->cc = a < b;
	return 0;
}
OP(addcc_64)
{
	u128 r = (u128)A(0) + A(1) + ((in->flags & 2) ? t->cc : 0);

	DST = (uint64_t)r;
	if (in->flags & 1)
		t->cc = (uint8_t)(r >> 64);
	return 0;
}
OP(subcc_64)
{
	u128 b = (u128)A(1) + ((in->flags & 2) ? t->cc : 0);
	uint64_t a = A(0);

	DST = (uint64_t)(a - b);
	if (in->flags & 1)
		t->cc = a < b;
	return 0;
}
/* mad{c}.{lo,hi}{.cc}: aux 0 lo, 1 hi; signedness in aux bit 1 */
OP(madcc_32)
{
	uint64_t p = (in->aux & 2) ? (uint64_t)((int64_t)(int32_t)A(0) * (int32_t)A(1))
				   : (uint64_t)(uint32_t)A(0) * (uint32_t)A(1);
	uint64_t part = (in->aux & 1) ? p >> 32 : (uint32_t)p;
	uint64_t r = (uint32_t)part + (uint64_t)(uint32_t)A(2) + ((in->flags & 2) ? t->cc : 0);

	DST = (uint32_t)r;
	if (in->flags & 1)
		t->cc = (uint8_t)(r >> 32);
	return 0;
}
OP(madcc_64)
{
	u128 p = (in->aux & 2) ? (u128)((s128)(int64_t)A(0) * (int64_t)A(1)) : (u128)A(0) * A(1);
	uint64_t part = (in->aux & 1) ? (uint64_t)(p >> 64) : (uint64_t)p;
	u128 r = (u128)part + A(2) + ((in->flags & 2) ? t->cc : 0);

	DST = (uint64_t)r;
	if (in->flags & 1)
		t->cc = (uint8_t)(r >> 64);
	return 0;
}

#define BY_W(name)                              \
	{                                       \
		name##_16, name##_32, name##_64 \
	}
static const sg_fn f_add[3] = BY_W(add), f_sub[3] = BY_W(sub), f_mul_lo[3] = BY_W(mul_lo),
		   f_mul_hi_u[3] = BY_W(mul_hi_u), f_mul_hi_s[3] = BY_W(mul_hi_s),
		   f_mad_lo[3] = BY_W(mad_lo), f_mad_hi_u[3] = BY_W(mad_hi_u),
		   f_mad_hi_s[3] = BY_W(mad_hi_s), f_div_u[3] = BY_W(div_u),
		   f_div_s[3] = BY_W(div_s), f_rem_u[3] = BY_W(rem_u), f_rem_s[3] = BY_W(rem_s),
		   f_abs[3] = BY_W(abs), f_neg[3] = BY_W(neg), f_min_u[3] = BY_W(min_u),
		   f_max_u[3] = BY_W(max_u), f_min_s[3] = BY_W(min_s), f_max_s[3] = BY_W(max_s),
		   f_sad_u[3] = BY_W(sad_u), f_sad_s[3] = BY_W(sad_s);

int sg_lower_int(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	int type = o->types[0];
	unsigned size = sg_type_size(type);
	bool sgn = sg_type_signed(type);
	int w = size == 2 ? 0 : size == 4 ? 1 : size == 8 ? 2 : -1;
	bool wide = o->mode == SG_M_WIDE, hi = o->mode == SG_M_HI;

	if (o->ntypes != 1 || w < 0 || sg_type_float(type) || type == SG_PRED)
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_ADD:
	case SG_B_SUB:
	case SG_B_ADDC:
	case SG_B_SUBC: {
		bool add = o->base == SG_B_ADD || o->base == SG_B_ADDC;

		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		if (o->f & SG_F_SAT) {
			if (type != SG_S32 || o->base == SG_B_ADDC || o->base == SG_B_SUBC)
				return sg_lower_unsupported(L, o);
			in->fn = add ? add_sat_s32 : sub_sat_s32;
		} else if ((o->f & SG_F_CC) || o->base == SG_B_ADDC || o->base == SG_B_SUBC) {
			if (w == 0)
				return sg_lower_unsupported(L, o);
			in->flags =
				(uint8_t)(((o->f & SG_F_CC) ? 1 : 0) |
					  (o->base == SG_B_ADDC || o->base == SG_B_SUBC ? 2 : 0));
			in->fn = add ? (w == 1 ? addcc_32 : addcc_64)
				     : (w == 1 ? subcc_32 : subcc_64);
		} else {
			in->fn = add ? f_add[w] : f_sub[w];
		}
		return 0;
	}
	case SG_B_MUL:
		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		if (wide) {
			if (w == 2)
				return sg_lower_unsupported(L, o);
			in->fn = w == 0 ? (sgn ? mul_wide_s_16 : mul_wide_u_16)
					: (sgn ? mul_wide_s_32 : mul_wide_u_32);
		} else {
			in->fn = hi ? (sgn ? f_mul_hi_s[w] : f_mul_hi_u[w]) : f_mul_lo[w];
		}
		return 0;
	case SG_B_MAD:
	case SG_B_MADC:
		if (sg_lower_operands(L, o, ops, nops, 4, type, in))
			return L->errcode;
		if ((o->f & SG_F_CC) || o->base == SG_B_MADC) {
			if (w == 0 || wide)
				return sg_lower_unsupported(L, o);
			in->flags = (uint8_t)(((o->f & SG_F_CC) ? 1 : 0) |
					      (o->base == SG_B_MADC ? 2 : 0));
			in->aux = (hi ? 1u : 0) | (sgn ? 2u : 0);
			in->fn = w == 1 ? madcc_32 : madcc_64;
		} else if (o->f & SG_F_SAT) {
			if (type != SG_S32 || !hi)
				return sg_lower_unsupported(L, o);
			in->fn = mad_hi_sat_s32;
		} else if (wide) {
			if (w == 2)
				return sg_lower_unsupported(L, o);
			in->fn = w == 0 ? (sgn ? mad_wide_s_16 : mad_wide_u_16)
					: (sgn ? mad_wide_s_32 : mad_wide_u_32);
		} else {
			in->fn = hi ? (sgn ? f_mad_hi_s[w] : f_mad_hi_u[w]) : f_mad_lo[w];
		}
		return 0;
	case SG_B_MUL24:
	case SG_B_MAD24: {
		bool mad = o->base == SG_B_MAD24;

		if (w != 1 || (o->f & SG_F_SAT))
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, mad ? 4 : 3, type, in))
			return L->errcode;
		if (mad)
			in->fn = hi ? (sgn ? mad24_hi_s : mad24_hi_u)
				    : (sgn ? mad24_lo_s : mad24_lo_u);
		else
			in->fn = hi ? (sgn ? mul24_hi_s : mul24_hi_u)
				    : (sgn ? mul24_lo_s : mul24_lo_u);
		return 0;
	}
	case SG_B_DIV:
	case SG_B_REM:
		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		if (o->base == SG_B_DIV)
			in->fn = sgn ? f_div_s[w] : f_div_u[w];
		else
			in->fn = sgn ? f_rem_s[w] : f_rem_u[w];
		return 0;
	case SG_B_ABS:
	case SG_B_NEG:
		if (sg_lower_operands(L, o, ops, nops, 2, type, in))
			return L->errcode;
		in->fn = o->base == SG_B_ABS ? f_abs[w] : f_neg[w];
		return 0;
	case SG_B_MIN:
	case SG_B_MAX:
		if ((o->f & SG_F_RELU) || sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		if (o->base == SG_B_MIN)
			in->fn = sgn ? f_min_s[w] : f_min_u[w];
		else
			in->fn = sgn ? f_max_s[w] : f_max_u[w];
		return 0;
	case SG_B_SAD:
		if (sg_lower_operands(L, o, ops, nops, 4, type, in))
			return L->errcode;
		in->fn = sgn ? f_sad_s[w] : f_sad_u[w];
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
