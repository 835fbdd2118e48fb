/* ops_cvt.c -- cvt between every integer and floating type, with PTX's rounding, .sat, .ftz, .relu;
 * tf32 and FP8 (e4m3x2, e5m2x2). */
#include <math.h>
#include <string.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

/*
 * Float-to-integer conversions clamp to the destination's range and turn NaN
 * into 0, as NVIDIA GPUs do. Narrow floating formats (f16, bf16) are rounded
 * once from the exact source value (fp.c), never through an intermediate.
 */

#define F_FTZ 1
#define F_SAT 2
#define F_RELU 4

static inline uint64_t mask(unsigned bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static inline int64_t sext(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return (int64_t)v;
	v &= mask(bits);
	if (v >> (bits - 1))
		v |= ~mask(bits);
	return (int64_t)v;
}

/* integer -> integer without .sat: aux = src bits | dst bits << 8 | src signed << 16 */
OP(cvt_i2i)
{
	unsigned sw = in->aux & 0xff, dw = (in->aux >> 8) & 0xff;
	uint64_t v = A(0);

	v = (in->aux & 0x10000) ? (uint64_t)sext(v, sw) : v & mask(sw);
	DST = v & mask(dw);
	return 0;
}

OP(cvt_rn_f32_s32)
{
	DST = sg_b32((float)(int32_t)A(0));
	return 0;
}
OP(cvt_rn_f32_u32)
{
	DST = sg_b32((float)(uint32_t)A(0));
	return 0;
}
OP(cvt_f64_f32)
{
	DST = sg_b64((double)sg_f32(A(0)));
	return 0;
}
OP(cvt_rn_f32_f64)
{
	DST = sg_b32((float)sg_f64(A(0)));
	return 0;
}
OP(cvt_rn_f64_s32)
{
	DST = sg_b64((double)(int32_t)A(0));
	return 0;
}

static double round_int(double x, int rnd)
{
	switch (rnd) {
	case SG_RNI:
		return nearbyint(x);
	case SG_RMI:
		return floor(x);
	case SG_RPI:
		return ceil(x);
	default:
		return trunc(x);
	}
}

static uint64_t float_to_int(double x, int dt, int rnd)
{
	unsigned bits = sg_type_size(dt) * 8;
	bool sgn = sg_type_signed(dt);
	double lo, hi;

	if (isnan(x))
		return 0;
	x = round_int(x, rnd);
	if (sgn) {
		lo = -ldexp(1.0, (int)bits - 1);
		hi = ldexp(1.0, (int)bits - 1);
		if (x <= lo)
			return (uint64_t)(int64_t)lo & mask(bits);
		if (x >= hi)
			return mask(bits - 1);
		return (uint64_t)(int64_t)x & mask(bits);
	}
	hi = ldexp(1.0, (int)bits);
	if (x <= 0)
		return 0;
	if (x >= hi)
		return mask(bits);
	return (uint64_t)x;
}

static uint64_t sat_int(int64_t sv, uint64_t uv, bool src_signed, int dt)
{
	unsigned bits = sg_type_size(dt) * 8;

	if (sg_type_signed(dt)) {
		int64_t hi = (int64_t)mask(bits - 1), lo = -hi - 1;

		if (src_signed)
			return (uint64_t)(sv > hi ? hi : sv < lo ? lo : sv) & mask(bits);
		return (uint64_t)(uv > (uint64_t)hi ? hi : (int64_t)uv) & mask(bits);
	}
	if (src_signed && sv < 0)
		return 0;
	return uv > mask(bits) ? mask(bits) : uv;
}

/* x is the exact source value; rounds once to dt */
static uint64_t float_out(double x, int dt, int rnd, unsigned fl)
{
	int r = rnd == SG_RND_NONE ? SG_RN : rnd;

	if ((fl & F_RELU) && !(x != x) && x < 0)
		x = 0;
	if ((fl & F_SAT) && dt != SG_F64)
		x = x != x ? 0.0 : x < 0 ? 0.0 : x > 1 ? 1.0 : x;
	switch (dt) {
	case SG_F64:
		if (fl & F_SAT)
			x = x != x ? 0.0 : x < 0 ? 0.0 : x > 1 ? 1.0 : x;
		return sg_b64(x);
	case SG_F32: {
		float f = r == SG_RN ? (float)x : sg_f64_to_f32_rnd(x, r);

		if (fl & F_FTZ)
			f = sg_ftz32(f);
		return sg_b32(f);
	}
	case SG_F16:
		return sg_f64_to_f16(x, r);
	default: /* bf16 */
		return sg_f64_to_bf16(x, r);
	}
}

/* general: aux = dtype | atype << 8, imm = rounding, flags F_* */
OP(cvt_gen)
{
	int dt = (int)(in->aux & 0xff), at = (int)((in->aux >> 8) & 0xff);
	int rnd = (int)in->imm;
	uint64_t a = A(0);

	if (sg_type_float(at)) {
		double x;

		switch (at) {
		case SG_F16:
			x = sg_f16_to_f32((uint16_t)a);
			break;
		case SG_BF16:
			x = sg_bf16_to_f32((uint16_t)a);
			break;
		case SG_F32:
			x = (in->flags & F_FTZ) ? sg_ftz32(sg_f32(a)) : sg_f32(a);
			break;
		default:
			x = sg_f64(a);
			break;
		}
		if (!sg_type_float(dt)) {
			DST = float_to_int(x, dt, rnd);
			return 0;
		}
		if (rnd >= SG_RNI && rnd <= SG_RPI) { /* round to integral, same format */
			x = round_int(x, rnd);
			rnd = SG_RN;
		}
		DST = float_out(x, dt, rnd, in->flags);
		return 0;
	}
	{
		unsigned sw = sg_type_size(at) * 8;
		bool ss = sg_type_signed(at);
		int64_t sv = sext(a, sw);
		uint64_t uv = a & mask(sw);

		if (sg_type_float(dt)) {
			int r = rnd == SG_RND_NONE ? SG_RN : rnd;

			if (dt == SG_F32) {
				float f = r == SG_RN
						  ? (ss ? (float)sv : (float)uv)
						  : sg_i64_to_f32_rnd(ss ? sv : (int64_t)uv, ss, r);

				DST = float_out(f, dt, SG_RN, in->flags);
			} else if (dt == SG_F64) {
				double d = r == SG_RN ? (ss ? (double)sv : (double)uv)
						      : sg_i64_to_f64_rnd(ss ? sv : (int64_t)uv, ss,
									  r);

				DST = float_out(d, dt, SG_RN, in->flags);
			} else {
				DST = float_out(ss ? (double)sv : (double)uv, dt, r, in->flags);
			}
			return 0;
		}
		if (in->flags & F_SAT)
			DST = sat_int(sv, uv, ss, dt);
		else
			DST = (ss ? (uint64_t)sv : uv) & mask(sg_type_size(dt) * 8);
		return 0;
	}
}

/* cvt.rn{.relu}.{f16x2,bf16x2}.f32 d, a, b: a to the upper half, b to the lower */
OP(cvt_pack)
{
	float a = sg_f32(A(0)), b = sg_f32(A(1));
	uint16_t ha, hb;

	if (in->flags & F_RELU) {
		a = a < 0 ? 0 : a;
		b = b < 0 ? 0 : b;
	}
	if (in->aux == SG_F16X2) {
		ha = sg_f32_to_f16(a, (int)in->imm);
		hb = sg_f32_to_f16(b, (int)in->imm);
	} else {
		ha = sg_f64_to_bf16(a, (int)in->imm);
		hb = sg_f64_to_bf16(b, (int)in->imm);
	}
	DST = (uint32_t)ha << 16 | hb;
	return 0;
}

/* cvt.{rn,rna,rz}.tf32.f32 d, a: imm = rounding (.relu and .satfinite, sm_100's, are not taken) */
OP(cvt_tf32)
{
	DST = sg_f32_to_tf32((uint32_t)A(0), (int)in->imm, false);
	return 0;
}

/* FP8 pairs: aux = destination type; .relu makes negative inputs (not NaN) +0. */
static uint8_t to_fp8(double x, bool e5m2, unsigned fl)
{
	if ((fl & F_RELU) && x < 0)
		x = 0;
	return sg_f64_to_fp8(x, e5m2, true);
}

/* cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b: a to the upper byte, b to the lower */
OP(cvt_fp8_f32)
{
	bool e5 = in->aux == SG_E5M2X2;

	DST = (uint32_t)to_fp8(sg_f32(A(0)), e5, in->flags) << 8 |
	      to_fp8(sg_f32(A(1)), e5, in->flags);
	return 0;
}

/* cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a: each half to the byte in its place */
OP(cvt_fp8_f16x2)
{
	bool e5 = in->aux == SG_E5M2X2;
	uint32_t a = (uint32_t)A(0);

	DST = (uint32_t)to_fp8(sg_f16_to_f32((uint16_t)(a >> 16)), e5, in->flags) << 8 |
	      to_fp8(sg_f16_to_f32((uint16_t)a), e5, in->flags);
	return 0;
}

/* cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a: exact; aux = source type */
OP(cvt_f16x2_fp8)
{
	bool e5 = in->aux == SG_E5M2X2;
	uint32_t a = (uint32_t)A(0), r = 0;

	for (int i = 0; i < 2; i++) {
		double x = sg_fp8_to_f64((uint8_t)(a >> (8 * i)), e5);

		if ((in->flags & F_RELU) && x < 0)
			x = 0;
		r |= (uint32_t)sg_f64_to_f16(x, SG_RN) << (16 * i);
	}
	DST = r;
	return 0;
}

/* tf32 and FP8 conversions; 1 when the opcode is none of them */
static int lower_narrow(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
			int nops, struct sg_insn *in)
{
	int dt = o->types[0], at = o->types[1];
	bool f8d = dt == SG_E4M3X2 || dt == SG_E5M2X2, f8s = at == SG_E4M3X2 || at == SG_E5M2X2;
	unsigned allowed = SG_F_RELU | SG_F_SATFINITE;

	if (dt != SG_TF32 && !f8d && !f8s)
		return 1;
	if (o->f & ~allowed)
		return sg_lower_unsupported(L, o);
	in->flags = (uint8_t)(((o->f & SG_F_RELU) ? F_RELU : 0) |
			      ((o->f & SG_F_SATFINITE) ? F_SAT : 0));
	if (dt == SG_TF32 && at == SG_F32) {
		if ((o->rnd != SG_RN && o->rnd != SG_RNA && o->rnd != SG_RZ) || o->f)
			return sg_lower_unsupported(L, o);
		in->imm = o->rnd;
		in->fn = cvt_tf32;
	} else if (f8d && (at == SG_F32 || at == SG_F16X2)) {
		/* the ISA makes .satfinite mandatory here */
		if (o->rnd != SG_RN || !(o->f & SG_F_SATFINITE))
			return sg_lower_unsupported(L, o);
		in->aux = (uint32_t)dt;
		in->fn = at == SG_F32 ? cvt_fp8_f32 : cvt_fp8_f16x2;
	} else if (dt == SG_F16X2 && f8s) {
		if (o->rnd != SG_RN || (o->f & SG_F_SATFINITE))
			return sg_lower_unsupported(L, o);
		in->aux = (uint32_t)at;
		in->fn = cvt_f16x2_fp8;
	} else {
		return sg_lower_unsupported(L, o);
	}
	if (nops != (in->fn == cvt_fp8_f32 ? 3 : 2))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
	if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
	    sg_lower_src(L, &ops[1], at == SG_F32 ? SG_F32 : SG_B32, &in->s[0]) ||
	    (nops == 3 && sg_lower_src(L, &ops[2], SG_F32, &in->s[1])))
		return L->errcode;
	in->nd = 1;
	in->ns = (uint8_t)(nops - 1);
	return 0;
}

static bool valid_type(int t)
{
	return t != SG_NOTYPE && t < SG_PRED && t != SG_B128 && t != SG_F16X2 && t != SG_BF16X2 &&
	       !(t >= SG_B8 && t <= SG_B64);
}

int sg_lower_cvt(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	int dt = o->types[0], at = o->types[1];
	int rnd = o->rnd;
	bool df = sg_type_float(dt), af = sg_type_float(at);

	if (o->ntypes != 2)
		return sg_lower_unsupported(L, o);
	if (lower_narrow(L, o, ops, nops, in) != 1)
		return L->errcode;
	if ((dt == SG_F16X2 || dt == SG_BF16X2) && at == SG_F32) {
		if (nops != 3 || (rnd != SG_RN && rnd != SG_RZ && rnd != SG_RM && rnd != SG_RP) ||
		    (o->f & ~SG_F_RELU))
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], SG_F32, &in->s[0]) ||
		    sg_lower_src(L, &ops[2], SG_F32, &in->s[1]))
			return L->errcode;
		in->nd = 1;
		in->ns = 2;
		in->aux = (uint32_t)dt;
		in->imm = rnd;
		in->flags = (o->f & SG_F_RELU) ? F_RELU : 0;
		in->fn = cvt_pack;
		return 0;
	}
	if (nops != 2 || !valid_type(dt) || !valid_type(at))
		return sg_lower_unsupported(L, o);
	if (o->f & ~(SG_F_FTZ | SG_F_SAT | SG_F_RELU))
		return sg_lower_unsupported(L, o);
	/* the rounding modifier each direction takes */
	if (af && !df) {
		if (rnd != SG_RNI && rnd != SG_RZI && rnd != SG_RMI && rnd != SG_RPI)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "%s needs an integer rounding modifier", o->text);
	} else if (!af && df) {
		if (rnd != SG_RN && rnd != SG_RZ && rnd != SG_RM && rnd != SG_RP)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "%s needs a rounding modifier", o->text);
	} else if (af && df) {
		bool narrowing = sg_type_size(dt) < sg_type_size(at) ||
				 (dt == SG_BF16 && at == SG_F16) || (dt == SG_F16 && at == SG_BF16);

		if (dt == at) {
			if (rnd != SG_RNI && rnd != SG_RZI && rnd != SG_RMI && rnd != SG_RPI &&
			    rnd != SG_RND_NONE)
				return sg_lower_unsupported(L, o);
		} else if (narrowing) {
			if (rnd != SG_RN && rnd != SG_RZ && rnd != SG_RM && rnd != SG_RP)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "%s needs a rounding modifier", o->text);
		} else {
			rnd = SG_RND_NONE; /* widening is exact */
		}
	} else if (rnd != SG_RND_NONE) {
		return sg_lower_unsupported(L, o);
	}
	if (sg_lower_dst(L, &ops[0], &in->d[0]) || sg_lower_src(L, &ops[1], at, &in->s[0]))
		return L->errcode;
	in->nd = 1;
	in->ns = 1;
	in->aux = (uint32_t)dt | (uint32_t)at << 8;
	in->imm = rnd;
	in->flags = (uint8_t)(((o->f & SG_F_FTZ) ? F_FTZ : 0) | ((o->f & SG_F_SAT) ? F_SAT : 0) |
			      ((o->f & SG_F_RELU) ? F_RELU : 0));
	in->fn = cvt_gen;
	if (in->flags == 0) {
		if (!af && !df) {
			in->aux = sg_type_size(at) * 8 | sg_type_size(dt) * 8 << 8 |
				  (sg_type_signed(at) ? 0x10000u : 0);
			in->fn = cvt_i2i;
		} else if (dt == SG_F32 && at == SG_S32 && rnd == SG_RN) {
			in->fn = cvt_rn_f32_s32;
		} else if (dt == SG_F32 && at == SG_U32 && rnd == SG_RN) {
			in->fn = cvt_rn_f32_u32;
		} else if (dt == SG_F64 && at == SG_F32 && rnd == SG_RND_NONE) {
			in->fn = cvt_f64_f32;
		} else if (dt == SG_F32 && at == SG_F64 && rnd == SG_RN) {
			in->fn = cvt_rn_f32_f64;
		} else if (dt == SG_F64 && at == SG_S32 && rnd == SG_RN) {
			in->fn = cvt_rn_f64_s32;
		}
	}
	return 0;
}
