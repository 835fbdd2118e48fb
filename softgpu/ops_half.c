/* ops_half.c -- f16, f16x2, bf16 and bf16x2 arithmetic: add, sub, mul, fma, neg, abs, min, max, ex2, tanh. */
#include <math.h>

#include <cuda.h>

#define SG_OPS_PURE /* op_half only touches registers (ops.h) */
#include "ops.h"

/*
 * Each half is widened exactly, computed in double and rounded once to the
 * narrow format (fp.c). add/sub/mul results are exact in double, so the
 * single rounding gives the correctly rounded f16/bf16 result.
 */

enum { H_ADD, H_SUB, H_MUL, H_FMA, H_NEG, H_ABS, H_MIN, H_MAX, H_EX2, H_TANH };

#define F_FTZ 1
#define F_SAT 2
#define F_RELU 4
#define F_NAN 8
#define F_BF 16
#define F_X2 32

static double widen(uint16_t h, bool bf)
{
	return bf ? sg_bf16_to_f32(h) : sg_f16_to_f32(h);
}

static uint16_t ftz16(uint16_t h, bool bf)
{
	uint16_t expmask = bf ? 0x7f80 : 0x7c00;

	if ((h & expmask) == 0)
		return h & 0x8000;
	return h;
}

static uint16_t one(const struct sg_insn *in, uint16_t a, uint16_t b, uint16_t c)
{
	unsigned fl = in->flags;
	bool bf = fl & F_BF, ftz = fl & F_FTZ;
	double x, y, z, r;
	uint16_t out;

	if (ftz) {
		a = ftz16(a, bf);
		b = ftz16(b, bf);
		c = ftz16(c, bf);
	}
	switch (in->aux) {
	case H_NEG:
		return a ^ 0x8000;
	case H_ABS:
		return a & 0x7fff;
	default:
		break;
	}
	x = widen(a, bf);
	y = widen(b, bf);
	z = widen(c, bf);
	switch (in->aux) {
	case H_ADD:
		r = x + y;
		break;
	case H_SUB:
		r = x - y;
		break;
	case H_MUL:
		r = x * y;
		break;
	case H_FMA:
		r = fma(x, y, z);
		break;
	case H_EX2:
		r = exp2(x);
		break;
	case H_TANH:
		r = tanh(x);
		break;
	case H_MIN:
	case H_MAX:
		if (x != x || y != y) {
			if ((fl & F_NAN) || (x != x && y != y))
				return 0x7fff;
			return x != x ? b : a;
		}
		if (x == y)
			return (in->aux == H_MIN) == !!(a & 0x8000) ? a : b;
		return (in->aux == H_MIN) == (x < y) ? a : b;
	default:
		r = NAN;
		break;
	}
	if ((fl & F_RELU) && r < 0)
		r = 0;
	if (fl & F_SAT)
		r = r != r ? 0.0 : r < 0 ? 0.0 : r > 1 ? 1.0 : r;
	out = bf ? sg_f64_to_bf16(r, SG_RN) : sg_f64_to_f16(r, SG_RN);
	return ftz ? ftz16(out, bf) : out;
}

OP(op_half)
{
	uint32_t a = (uint32_t)A(0), b = in->ns > 1 ? (uint32_t)A(1) : 0;
	uint32_t c = in->ns > 2 ? (uint32_t)A(2) : 0;
	uint32_t lo = one(in, (uint16_t)a, (uint16_t)b, (uint16_t)c);

	if (in->flags & F_X2) {
		uint32_t hi =
			one(in, (uint16_t)(a >> 16), (uint16_t)(b >> 16), (uint16_t)(c >> 16));

		t->r[in->d[0]] = hi << 16 | lo;
	} else {
		t->r[in->d[0]] = lo;
	}
	return 0;
}

int sg_lower_half(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	int type = o->types[0], h, want = 3;

	if (o->ntypes != 1)
		return sg_lower_unsupported(L, o);
	if (o->rnd != SG_RND_NONE && o->rnd != SG_RN)
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_ADD:
		h = H_ADD;
		break;
	case SG_B_SUB:
		h = H_SUB;
		break;
	case SG_B_MUL:
		h = H_MUL;
		break;
	case SG_B_FMA:
		h = H_FMA;
		want = 4;
		break;
	case SG_B_NEG:
		h = H_NEG;
		want = 2;
		break;
	case SG_B_ABS:
		h = H_ABS;
		want = 2;
		break;
	case SG_B_MIN:
		h = H_MIN;
		break;
	case SG_B_MAX:
		h = H_MAX;
		break;
	case SG_B_EX2:
		h = H_EX2;
		want = 2;
		break;
	case SG_B_TANH:
		h = H_TANH;
		want = 2;
		break;
	default:
		return sg_lower_unsupported(L, o);
	}
	if ((h == H_EX2 || h == H_TANH) && !(o->f & SG_F_APPROX))
		return sg_lower_unsupported(L, o);
	if (o->f & ~(SG_F_FTZ | SG_F_SAT | SG_F_RELU | SG_F_NAN | SG_F_APPROX | SG_F_NOFTZ))
		return sg_lower_unsupported(L, o);
	if (sg_lower_operands(L, o, ops, nops, want, SG_B32, in))
		return L->errcode;
	in->aux = (uint32_t)h;
	in->flags = (uint8_t)(((o->f & SG_F_FTZ) ? F_FTZ : 0) | ((o->f & SG_F_SAT) ? F_SAT : 0) |
			      ((o->f & SG_F_RELU) ? F_RELU : 0) | ((o->f & SG_F_NAN) ? F_NAN : 0) |
			      (type == SG_BF16 || type == SG_BF16X2 ? F_BF : 0) |
			      (type == SG_F16X2 || type == SG_BF16X2 ? F_X2 : 0));
	in->fn = op_half;
	return 0;
}
