/* ops_math.c -- rcp, sqrt, rsqrt and the approximate transcendentals (sin, cos, lg2, ex2, tanh). */
#include <math.h>
#include <string.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

/*
 * Correctly rounded forms (.rn, .rz, .rm, .rp) are computed exactly. The
 * .approx forms are computed with the host's libm (at most about 1 ulp off),
 * which is inside every bound the PTX ISA states for them (rcp/sqrt 1 ulp,
 * rsqrt 2^-22.9 relative, ex2 2 ulp, lg2 2^-22 absolute/relative, sin/cos
 * 2^-20.9 absolute, tanh 2^-10.987 relative): results match a GPU's within
 * those bounds, not bit for bit.
 */

enum { M_RCP, M_SQRT, M_RSQRT, M_SIN, M_COS, M_LG2, M_EX2, M_TANH };

/* aux = M_*, imm = rounding mode (directed ones only), flags bit 0 = ftz */
OP(math_f32)
{
	bool ftz = in->flags & 1;
	float a = sg_f32(A(0)), r;
	int rnd = (int)in->imm;

	if (ftz)
		a = sg_ftz32(a);
	switch (in->aux) {
	case M_RCP:
		r = rnd ? sg_round_f32(rnd, SG_FOP_RCP, a, 0, 0) : 1.0f / a;
		break;
	case M_SQRT:
		r = rnd ? sg_round_f32(rnd, SG_FOP_SQRT, a, 0, 0) : sqrtf(a);
		break;
	case M_RSQRT:
		r = (float)(1.0 / sqrt((double)a));
		break;
	case M_SIN:
		r = sinf(a);
		break;
	case M_COS:
		r = cosf(a);
		break;
	case M_LG2:
		r = log2f(a);
		break;
	case M_EX2:
		r = exp2f(a);
		break;
	default:
		r = tanhf(a);
		break;
	}
	if (ftz)
		r = sg_ftz32(r);
	DST = sg_b32(r);
	return 0;
}

OP(math_f64)
{
	bool ftz = in->flags & 1;
	double a = sg_f64(A(0)), r;
	int rnd = (int)in->imm;

	if (ftz)
		a = sg_ftz64(a);
	switch (in->aux) {
	case M_RCP:
		r = rnd ? sg_round_f64(rnd, SG_FOP_RCP, a, 0, 0) : 1.0 / a;
		break;
	case M_SQRT:
		r = rnd ? sg_round_f64(rnd, SG_FOP_SQRT, a, 0, 0) : sqrt(a);
		break;
	case M_RSQRT:
		r = 1.0 / sqrt(a);
		break;
	default:
		r = NAN;
		break;
	}
	if (ftz)
		r = sg_ftz64(r);
	DST = sg_b64(r);
	return 0;
}

/* the two most frequent ones without the switch */
OP(rcp_rn_f32)
{
	DST = sg_b32(1.0f / sg_f32(A(0)));
	return 0;
}
OP(sqrt_rn_f32)
{
	DST = sg_b32(sqrtf(sg_f32(A(0))));
	return 0;
}
OP(ex2_ftz_f32)
{
	DST = sg_b32(sg_ftz32(exp2f(sg_ftz32(sg_f32(A(0))))));
	return 0;
}

int sg_lower_math(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	int type = o->types[0];
	bool d = type == SG_F64, approx = o->f & SG_F_APPROX;
	int rnd = o->rnd;
	int m;

	if (o->ntypes != 1 || (type != SG_F32 && type != SG_F64) || nops != 2)
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_RCP:
		m = M_RCP;
		break;
	case SG_B_SQRT:
		m = M_SQRT;
		break;
	case SG_B_RSQRT:
		m = M_RSQRT;
		break;
	case SG_B_SIN:
		m = M_SIN;
		break;
	case SG_B_COS:
		m = M_COS;
		break;
	case SG_B_LG2:
		m = M_LG2;
		break;
	case SG_B_EX2:
		m = M_EX2;
		break;
	default:
		m = M_TANH;
		break;
	}
	/* which forms exist */
	if (m == M_RCP || m == M_SQRT) {
		if (approx == (rnd != SG_RND_NONE))
			return sg_lower_unsupported(L, o);
		if (rnd != SG_RND_NONE && rnd != SG_RN && rnd != SG_RZ && rnd != SG_RM &&
		    rnd != SG_RP)
			return sg_lower_unsupported(L, o);
		if (d && approx && (m == M_SQRT || !(o->f & SG_F_FTZ)))
			return sg_lower_unsupported(L, o);
	} else {
		if (!approx || rnd != SG_RND_NONE)
			return sg_lower_unsupported(L, o);
		if (d && m != M_RSQRT)
			return sg_lower_unsupported(L, o);
	}
	if (d && (o->f & SG_F_FTZ) && !approx)
		return sg_lower_unsupported(L, o);
	if (sg_lower_dst(L, &ops[0], &in->d[0]) || sg_lower_src(L, &ops[1], type, &in->s[0]))
		return L->errcode;
	in->nd = 1;
	in->ns = 1;
	in->aux = (uint32_t)m;
	in->flags = (o->f & SG_F_FTZ) ? 1 : 0;
	in->imm = (rnd == SG_RZ || rnd == SG_RM || rnd == SG_RP) ? rnd : 0;
	in->fn = d ? math_f64 : math_f32;
	if (!d && in->imm == 0 && !in->flags && (m == M_RCP || m == M_SQRT) && rnd == SG_RN)
		in->fn = m == M_RCP ? rcp_rn_f32 : sqrt_rn_f32;
	if (!d && m == M_EX2 && in->flags)
		in->fn = ex2_ftz_f32;
	return 0;
}
