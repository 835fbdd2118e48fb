/* ops_float.c -- f32 and f64 arithmetic: add, sub, mul, fma/mad, div, abs, neg, min, max, copysign, testp. */
#include <math.h>
#include <string.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

/*
 * f32 is computed in f32 and f64 in f64; fma is a real fused multiply-add.
 * Round-to-nearest has fast handlers; .rz/.rm/.rp, .ftz and .sat go through
 * the general ones. As on NVIDIA GPUs, an f32 operation that yields a NaN
 * yields the canonical 0x7fffffff (CUDA C Programming Guide, floating-point
 * standard); f64 NaNs pass through as the host produces them.
 */

#define F_FTZ 1
#define F_SAT 2
#define F_NAN 4
#define F_XORSIGN 8
#define F_ABS 16

OP(add_f32)
{
	DST = sg_b32(sg_f32(A(0)) + sg_f32(A(1)));
	return 0;
}
OP(sub_f32)
{
	DST = sg_b32(sg_f32(A(0)) - sg_f32(A(1)));
	return 0;
}
OP(mul_f32)
{
	DST = sg_b32(sg_f32(A(0)) * sg_f32(A(1)));
	return 0;
}
OP(fma_f32)
{
	DST = sg_b32(fmaf(sg_f32(A(0)), sg_f32(A(1)), sg_f32(A(2))));
	return 0;
}
OP(div_f32)
{
	DST = sg_b32(sg_f32(A(0)) / sg_f32(A(1)));
	return 0;
}
OP(add_f64)
{
	DST = sg_b64(sg_f64(A(0)) + sg_f64(A(1)));
	return 0;
}
OP(sub_f64)
{
	DST = sg_b64(sg_f64(A(0)) - sg_f64(A(1)));
	return 0;
}
OP(mul_f64)
{
	DST = sg_b64(sg_f64(A(0)) * sg_f64(A(1)));
	return 0;
}
OP(fma_f64)
{
	DST = sg_b64(fma(sg_f64(A(0)), sg_f64(A(1)), sg_f64(A(2))));
	return 0;
}
OP(div_f64)
{
	DST = sg_b64(sg_f64(A(0)) / sg_f64(A(1)));
	return 0;
}

static float sat(float x)
{
	if (!(x > 0.0f))
		return 0.0f; /* also NaN */
	return x > 1.0f ? 1.0f : x;
}

/* general f32: aux = SG_FOP_*, imm = rounding mode, flags = F_FTZ | F_SAT; aux bit 8: div.approx */
OP(gen_f32)
{
	bool ftz = in->flags & F_FTZ;
	float a = sg_f32(A(0)), b = in->ns > 1 ? sg_f32(A(1)) : 0,
	      c = in->ns > 2 ? sg_f32(A(2)) : 0, r;
	int op = (int)(in->aux & 0xff), rnd = (int)in->imm;

	if (ftz) {
		a = sg_ftz32(a);
		b = sg_ftz32(b);
		c = sg_ftz32(c);
	}
	if ((in->aux & 0x100) && isfinite(a) && isfinite(b) && fabsf(b) > 0x1p126f) {
		r = copysignf(0.0f, a) * copysignf(1.0f, b); /* div.approx of a huge divisor */
	} else if (rnd == SG_RZ || rnd == SG_RM || rnd == SG_RP) {
		r = sg_round_f32(rnd, op, a, b, c);
	} else {
		switch (op) {
		case SG_FOP_ADD:
			r = a + b;
			break;
		case SG_FOP_SUB:
			r = a - b;
			break;
		case SG_FOP_MUL:
			r = a * b;
			break;
		case SG_FOP_DIV:
			r = a / b;
			break;
		case SG_FOP_FMA:
			r = fmaf(a, b, c);
			break;
		case SG_FOP_SQRT:
			r = sqrtf(a);
			break;
		default:
			r = 1.0f / a;
			break;
		}
	}
	if (ftz)
		r = sg_ftz32(r);
	if (in->flags & F_SAT)
		r = sat(r);
	DST = sg_b32(r);
	return 0;
}

OP(gen_f64)
{
	double a = sg_f64(A(0)), b = in->ns > 1 ? sg_f64(A(1)) : 0,
	       c = in->ns > 2 ? sg_f64(A(2)) : 0, r;
	int op = (int)(in->aux & 0xff), rnd = (int)in->imm;

	if (rnd == SG_RZ || rnd == SG_RM || rnd == SG_RP) {
		r = sg_round_f64(rnd, op, a, b, c);
	} else {
		switch (op) {
		case SG_FOP_ADD:
			r = a + b;
			break;
		case SG_FOP_SUB:
			r = a - b;
			break;
		case SG_FOP_MUL:
			r = a * b;
			break;
		case SG_FOP_DIV:
			r = a / b;
			break;
		case SG_FOP_FMA:
			r = fma(a, b, c);
			break;
		case SG_FOP_SQRT:
			r = sqrt(a);
			break;
		default:
			r = 1.0 / a;
			break;
		}
	}
	DST = sg_b64(r);
	return 0;
}

OP(abs_f32)
{
	float a = sg_f32(A(0));

	if (in->flags & F_FTZ)
		a = sg_ftz32(a);
	DST = sg_b32(fabsf(a));
	return 0;
}
OP(neg_f32)
{
	float a = sg_f32(A(0));

	if (in->flags & F_FTZ)
		a = sg_ftz32(a);
	DST = sg_b32(-a);
	return 0;
}
OP(abs_f64)
{
	DST = A(0) & 0x7fffffffffffffffull;
	return 0;
}
OP(neg_f64)
{
	DST = A(0) ^ 0x8000000000000000ull;
	return 0;
}

static float minmax32(float a, float b, bool max, unsigned fl)
{
	float r;

	if (a != a || b != b) {
		if ((fl & F_NAN) || (a != a && b != b))
			return NAN;
		r = a != a ? b : a;
	} else if (a == b) {
		/* -0 is below +0 */
		r = max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
	} else {
		r = max ? (a > b ? a : b) : (a < b ? a : b);
	}
	return r;
}

/* flags: F_FTZ F_NAN F_XORSIGN F_ABS; aux 1 = max */
OP(minmax_f32)
{
	float a = sg_f32(A(0)), b = sg_f32(A(1)), r;
	bool neg = signbit(a) != signbit(b);

	if (in->flags & F_FTZ) {
		a = sg_ftz32(a);
		b = sg_ftz32(b);
	}
	if (in->flags & F_ABS) {
		a = fabsf(a);
		b = fabsf(b);
	}
	r = minmax32(a, b, in->aux, in->flags);
	if ((in->flags & F_XORSIGN) && r == r)
		r = copysignf(r, neg ? -1.0f : 1.0f);
	if (in->flags & F_FTZ)
		r = sg_ftz32(r);
	DST = sg_b32(r);
	return 0;
}

OP(minmax_f64)
{
	double a = sg_f64(A(0)), b = sg_f64(A(1)), r;

	if (a != a || b != b) {
		if ((in->flags & F_NAN) || (a != a && b != b))
			r = a != a ? a : b;
		else
			r = a != a ? b : a;
	} else if (a == b) {
		r = in->aux ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
	} else {
		r = in->aux ? (a > b ? a : b) : (a < b ? a : b);
	}
	DST = sg_b64(r);
	return 0;
}

/* copysign d, a, b: b's magnitude with a's sign */
OP(copysign_f32)
{
	DST = ((uint32_t)A(1) & 0x7fffffffu) | ((uint32_t)A(0) & 0x80000000u);
	return 0;
}
OP(copysign_f64)
{
	DST = (A(1) & 0x7fffffffffffffffull) | (A(0) & 0x8000000000000000ull);
	return 0;
}

/* testp: aux = mode, flags bit 0: f64 */
OP(testp)
{
	double x = (in->flags & 1) ? sg_f64(A(0)) : (double)sg_f32(A(0));
	int c = (in->flags & 1) ? fpclassify(x) : fpclassify(sg_f32(A(0)));
	bool r = false;

	switch (in->aux) {
	case SG_M_FINITE:
		r = isfinite(x);
		break;
	case SG_M_INFINITE:
		r = isinf(x);
		break;
	case SG_M_NUMBER:
		r = !isnan(x);
		break;
	case SG_M_NOTANUMBER:
		r = isnan(x);
		break;
	case SG_M_NORMAL:
		r = c == FP_NORMAL;
		break;
	case SG_M_SUBNORMAL:
		r = c == FP_SUBNORMAL;
		break;
	}
	DST = r;
	return 0;
}

int sg_lower_float(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		   int nops, struct sg_insn *in)
{
	int type = o->types[0];
	bool d = type == SG_F64;
	int rnd = o->rnd == SG_RND_NONE ? SG_RN : o->rnd;
	int fop = -1, want = 3;
	bool directed = rnd == SG_RZ || rnd == SG_RM || rnd == SG_RP;

	if (o->ntypes != 1 || (type != SG_F32 && type != SG_F64))
		return sg_lower_unsupported(L, o);
	if (rnd != SG_RN && !directed)
		return sg_lower_unsupported(L, o);
	if (d && (o->f & (SG_F_FTZ | SG_F_SAT)) && o->base != SG_B_TESTP)
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_ADD:
		fop = SG_FOP_ADD;
		break;
	case SG_B_SUB:
		fop = SG_FOP_SUB;
		break;
	case SG_B_MUL:
		fop = SG_FOP_MUL;
		break;
	case SG_B_FMA:
	case SG_B_MAD:
		fop = SG_FOP_FMA;
		want = 4;
		break;
	case SG_B_DIV:
		fop = SG_FOP_DIV;
		break;
	default:
		break;
	}
	if (fop >= 0) {
		if (sg_lower_operands(L, o, ops, nops, want, type, in))
			return L->errcode;
		in->aux = (uint32_t)fop;
		in->imm = rnd;
		in->flags = (uint8_t)(((o->f & SG_F_FTZ) ? F_FTZ : 0) |
				      ((o->f & SG_F_SAT) ? F_SAT : 0));
		if (fop == SG_FOP_DIV && (o->f & SG_F_APPROX)) {
			if (d)
				return sg_lower_unsupported(L, o);
			in->aux |= 0x100;
		} else if (fop == SG_FOP_DIV && !(o->f & SG_F_FULL) && o->rnd == SG_RND_NONE) {
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "%s needs .approx, .full or a rounding mode",
					      o->text);
		}
		if (d) {
			in->fn = gen_f64;
			if (!directed) {
				sg_fn f64f[] = {add_f64, sub_f64, mul_f64, div_f64, fma_f64};

				in->fn = f64f[fop];
			}
		} else {
			in->fn = gen_f32;
			if (!directed && in->flags == 0 && !(in->aux & 0x100)) {
				sg_fn f32f[] = {add_f32, sub_f32, mul_f32, div_f32, fma_f32};

				in->fn = f32f[fop];
			}
		}
		return 0;
	}
	switch (o->base) {
	case SG_B_ABS:
	case SG_B_NEG:
		if (sg_lower_operands(L, o, ops, nops, 2, type, in))
			return L->errcode;
		in->flags = (o->f & SG_F_FTZ) ? F_FTZ : 0;
		if (o->base == SG_B_ABS)
			in->fn = d ? abs_f64 : abs_f32;
		else
			in->fn = d ? neg_f64 : neg_f32;
		return 0;
	case SG_B_MIN:
	case SG_B_MAX:
		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		in->aux = o->base == SG_B_MAX;
		in->flags = (uint8_t)(((o->f & SG_F_FTZ) ? F_FTZ : 0) |
				      ((o->f & SG_F_NAN) ? F_NAN : 0) |
				      ((o->f & SG_F_XORSIGN) ? F_XORSIGN : 0) |
				      ((o->f & SG_F_ABS) ? F_ABS : 0));
		if (d && (o->f & (SG_F_XORSIGN | SG_F_ABS)))
			return sg_lower_unsupported(L, o);
		in->fn = d ? minmax_f64 : minmax_f32;
		return 0;
	case SG_B_COPYSIGN:
		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		in->fn = d ? copysign_f64 : copysign_f32;
		return 0;
	case SG_B_TESTP:
		if (nops != 2 || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], type, &in->s[0]))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		in->ns = 1;
		in->aux = (uint32_t)o->mode;
		in->flags = d ? 1 : 0;
		in->fn = testp;
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
