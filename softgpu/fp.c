/* fp.c -- floating-point helpers: directed rounding, flush-to-zero, f16, bf16, tf32 and FP8
 * conversions. */
#include <fenv.h>
#include <math.h>
#include <string.h>

#include "ptx.h"

/*
 * This file is compiled with -frounding-math: the operations below run under
 * a rounding mode set with fesetround() and must not be folded or moved by
 * the compiler. The common round-to-nearest cases never come here.
 */

static int fe_mode(int rnd)
{
	switch (rnd) {
	case SG_RZ:
	case SG_RZI:
		return FE_TOWARDZERO;
	case SG_RM:
	case SG_RMI:
		return FE_DOWNWARD;
	case SG_RP:
	case SG_RPI:
		return FE_UPWARD;
	default:
		return FE_TONEAREST;
	}
}

float sg_ftz32(float x)
{
	if (fpclassify(x) == FP_SUBNORMAL)
		return copysignf(0.0f, x);
	return x;
}

double sg_ftz64(double x)
{
	if (fpclassify(x) == FP_SUBNORMAL)
		return copysign(0.0, x);
	return x;
}

float sg_round_f32(int rnd, int op, float a, float b, float c)
{
	volatile float va = a, vb = b, vc = c;
	volatile float r = 0;
	int old = fegetround();

	fesetround(fe_mode(rnd));
	switch (op) {
	case SG_FOP_ADD:
		r = va + vb;
		break;
	case SG_FOP_SUB:
		r = va - vb;
		break;
	case SG_FOP_MUL:
		r = va * vb;
		break;
	case SG_FOP_DIV:
		r = va / vb;
		break;
	case SG_FOP_FMA:
		r = fmaf(va, vb, vc);
		break;
	case SG_FOP_SQRT:
		r = sqrtf(va);
		break;
	case SG_FOP_RCP:
		r = 1.0f / va;
		break;
	}
	fesetround(old);
	return r;
}

double sg_round_f64(int rnd, int op, double a, double b, double c)
{
	volatile double va = a, vb = b, vc = c;
	volatile double r = 0;
	int old = fegetround();

	fesetround(fe_mode(rnd));
	switch (op) {
	case SG_FOP_ADD:
		r = va + vb;
		break;
	case SG_FOP_SUB:
		r = va - vb;
		break;
	case SG_FOP_MUL:
		r = va * vb;
		break;
	case SG_FOP_DIV:
		r = va / vb;
		break;
	case SG_FOP_FMA:
		r = fma(va, vb, vc);
		break;
	case SG_FOP_SQRT:
		r = sqrt(va);
		break;
	case SG_FOP_RCP:
		r = 1.0 / va;
		break;
	}
	fesetround(old);
	return r;
}

float sg_f64_to_f32_rnd(double x, int rnd)
{
	volatile double vx = x;
	volatile float r;
	int old = fegetround();

	fesetround(fe_mode(rnd));
	r = (float)vx;
	fesetround(old);
	return r;
}

float sg_i64_to_f32_rnd(int64_t x, bool is_signed, int rnd)
{
	volatile int64_t vx = x;
	volatile float r;
	int old = fegetround();

	fesetround(fe_mode(rnd));
	r = is_signed ? (float)vx : (float)(uint64_t)vx;
	fesetround(old);
	return r;
}

double sg_i64_to_f64_rnd(int64_t x, bool is_signed, int rnd)
{
	volatile int64_t vx = x;
	volatile double r;
	int old = fegetround();

	fesetround(fe_mode(rnd));
	r = is_signed ? (double)vx : (double)(uint64_t)vx;
	fesetround(old);
	return r;
}

/* Rounds a non-negative magnitude q to an integer in mode rnd, for a value of sign neg. */
static double round_mag(double q, int rnd, bool neg)
{
	switch (rnd) {
	case SG_RZ:
		return trunc(q);
	case SG_RM:
		return neg ? ceil(q) : floor(q);
	case SG_RP:
		return neg ? floor(q) : ceil(q);
	default: {
		double f = floor(q), d = q - f;

		if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
			return f + 1.0;
		return f;
	}
	}
}

/*
 * A narrow binary format from a double, rounded once: `mant` fraction bits,
 * exponent bias `bias`, `maxexp` the largest unbiased exponent.
 */
static uint32_t narrow(double x, int rnd, int mant, int bias, int maxexp, uint32_t nan)
{
	uint32_t sign = signbit(x) ? 1u << (mant + (bias == 15 ? 5 : 8)) : 0;
	uint32_t expbits = bias == 15 ? 5 : 8;
	uint32_t inf = ((1u << expbits) - 1) << mant;
	double a = fabs(x), q;
	int e, exp, minexp = 1 - bias;
	uint64_t m;

	if (isnan(x))
		return nan;
	if (isinf(a))
		return sign | inf;
	if (a == 0)
		return sign;
	frexp(a, &e);
	exp = e - 1;
	if (exp < minexp) {
		q = ldexp(a, mant - minexp); /* units of the smallest subnormal */
		m = (uint64_t)round_mag(q, rnd, sign != 0);
		return sign | (uint32_t)m; /* m == 1 << mant is the smallest normal */
	}
	q = ldexp(a, mant - exp);
	m = (uint64_t)round_mag(q, rnd, sign != 0);
	if (m == (2ull << mant)) {
		m >>= 1;
		exp++;
	}
	if (exp > maxexp) {
		bool to_max = rnd == SG_RZ || (rnd == SG_RM && !sign) || (rnd == SG_RP && sign);

		return sign | (to_max ? inf - 1 : inf);
	}
	return sign | ((uint32_t)(exp + bias) << mant) | (uint32_t)(m - (1ull << mant));
}

uint16_t sg_f64_to_f16(double f, int rnd)
{
	return (uint16_t)narrow(f, rnd, 10, 15, 15, 0x7fff);
}

uint16_t sg_f32_to_f16(float f, int rnd)
{
	return sg_f64_to_f16((double)f, rnd);
}

uint16_t sg_f64_to_bf16(double f, int rnd)
{
	return (uint16_t)narrow(f, rnd, 7, 127, 127, 0x7fff);
}

uint16_t sg_f32_to_bf16(float f, int rnd)
{
	return sg_f64_to_bf16((double)f, rnd);
}

float sg_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float f;

	if (e == 0x1f) {
		uint32_t bits = sign | 0x7f800000u | (m << 13);

		memcpy(&f, &bits, 4);
		return f;
	}
	f = e ? ldexpf((float)(m | 0x400), (int)e - 25) : ldexpf((float)m, -24);
	return sign ? -f : f;
}

float sg_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

/*
 * FP8 (OCP formats the PTX ISA uses): e4m3 has 4 exponent bits (bias 7), 3
 * fraction bits, no infinities, NaN as S.1111.111, 448 the largest finite;
 * e5m2 has 5 (bias 15) and 2, IEEE-like with infinities, 57344 the largest.
 */
double sg_fp8_to_f64(uint8_t v, bool e5m2)
{
	int mant = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, emax = e5m2 ? 31 : 15;
	int e = (v & 0x7f) >> mant, m = v & ((1 << mant) - 1);
	double r;

	if (e == emax && (e5m2 || m == 7)) {
		if (e5m2 && m == 0)
			return (v & 0x80) ? -INFINITY : INFINITY;
		return NAN;
	}
	r = e ? ldexp((double)((1 << mant) | m), e - bias - mant)
	      : ldexp((double)m, 1 - bias - mant);
	return (v & 0x80) ? -r : r;
}

uint8_t sg_f64_to_fp8(double x, bool e5m2, bool satfinite)
{
	int mant = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, e, exp;
	uint8_t sign = signbit(x) ? 0x80 : 0, maxf = e5m2 ? 0x7b : 0x7e;
	uint8_t over = e5m2 ? 0x7c : 0x7f; /* e4m3 has no infinity: NaN */
	double a = fabs(x);
	uint64_t m;
	uint32_t code;

	if (isnan(x))
		return 0x7f;
	if (isinf(a))
		return satfinite ? sign | maxf : (e5m2 ? sign | over : over);
	if (a == 0)
		return sign;
	frexp(a, &e);
	exp = e - 1;
	if (exp < 1 - bias) {
		m = (uint64_t)round_mag(ldexp(a, mant - (1 - bias)), SG_RN, false);
		return sign | (uint8_t)m; /* m == 1 << mant is the smallest normal */
	}
	m = (uint64_t)round_mag(ldexp(a, mant - exp), SG_RN, false);
	if (m == (2ull << mant)) {
		m >>= 1;
		exp++;
	}
	code = exp + bias > 31 ? 0xff
			       : (uint32_t)(exp + bias) << mant | (uint32_t)(m - (1ull << mant));
	if (code > maxf)
		return satfinite ? sign | maxf : (e5m2 ? sign | over : over);
	return sign | (uint8_t)code;
}

uint32_t sg_f32_to_tf32(uint32_t b, int rnd, bool satfinite)
{
	uint32_t r;

	if ((b & 0x7fffffffu) > 0x7f800000u)
		return 0x7fffffffu;
	if ((b & 0x7fffffffu) == 0x7f800000u)
		return satfinite ? (b & 0x80000000u) | 0x7f7fe000u : b;
	switch (rnd) {
	case SG_RZ:
		r = b;
		break;
	case SG_RNA:
		r = b + 0x1000u;
		break;
	default: /* rn: ties to even */
		r = b + 0xfffu + ((b >> 13) & 1);
		break;
	}
	r &= ~0x1fffu;
	if (satfinite && (r & 0x7fffffffu) == 0x7f800000u)
		r = (r & 0x80000000u) | 0x7f7fe000u;
	return r;
}
