/* ops_simd.c -- SIMD video instructions on 2x16 and 4x8 lanes: vadd, vsub, vavrg, vabsdiff, vmin, vmax
 * (2 and 4 forms), with lane selectors, saturation, merge masks and the accumulate (.add) form. */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

/*
 * What the CUDA SIMD intrinsics (__vabsdiffu4, __vsadu2, ...) compile to.
 * in->aux = op | lanes << 4 | a signed << 8 | b signed << 9 | d signed << 10 |
 * sat << 11 | add << 12; in->imm = asel (16 bits) | bsel << 16 | mask << 32,
 * a selector holding one nibble per lane (lane 0 lowest) that indexes the
 * eight bytes (four half-words) of {b, a}.
 */

enum { V_ADD, V_SUB, V_AVRG, V_ABSDIFF, V_MIN, V_MAX };

static int64_t lane(uint64_t ba, unsigned idx, unsigned bits, bool sgn)
{
	uint64_t v = (ba >> (idx * bits)) & ((1ull << bits) - 1);

	if (sgn && (v >> (bits - 1)))
		return (int64_t)(v | ~((1ull << bits) - 1));
	return (int64_t)v;
}

static int op_simd(struct sg_thread *t, const struct sg_insn *in)
{
	uint32_t a = (uint32_t)t->r[in->s[0]], b = (uint32_t)t->r[in->s[1]];
	uint32_t c = (uint32_t)t->r[in->s[2]];
	uint64_t ba = (uint64_t)b << 32 | a;
	unsigned op = in->aux & 0xf, n = (in->aux >> 4) & 0xf, bits = 32 / n;
	bool as = in->aux & 0x100, bs = in->aux & 0x200, ds = in->aux & 0x400;
	bool sat = in->aux & 0x800, add = in->aux & 0x1000;
	uint64_t imm = (uint64_t)in->imm;
	unsigned mask = (unsigned)(imm >> 32) & 0xf;
	uint32_t d = add ? c : 0;

	for (unsigned i = 0; i < n; i++) {
		int64_t va = lane(ba, (unsigned)(imm >> (4 * i)) & 0xf, bits, as);
		int64_t vb = lane(ba, (unsigned)(imm >> (16 + 4 * i)) & 0xf, bits, bs);
		int64_t r;

		switch (op) {
		case V_ADD:
			r = va + vb;
			break;
		case V_SUB:
			r = va - vb;
			break;
		case V_AVRG:
			r = (va + vb >= 0) ? (va + vb + 1) >> 1 : (va + vb) >> 1;
			break;
		case V_ABSDIFF:
			r = va > vb ? va - vb : vb - va;
			break;
		case V_MIN:
			r = va < vb ? va : vb;
			break;
		default:
			r = va > vb ? va : vb;
			break;
		}
		if (sat) {
			int64_t lo = ds ? -(1ll << (bits - 1)) : 0;
			int64_t hi = ds ? (1ll << (bits - 1)) - 1 : (1ll << bits) - 1;

			r = r < lo ? lo : r > hi ? hi : r;
		}
		if (add) {
			if (mask & (1u << i))
				d += (uint32_t)r;
		} else {
			uint32_t v = (mask & (1u << i)) ? (uint32_t)r : (c >> (i * bits));

			d |= (v & (uint32_t)((1ull << bits) - 1)) << (i * bits);
		}
	}
	t->r[in->d[0]] = d;
	return 0;
}

/* ".b3210" / ".h10": digits from the highest lane down; NULL keeps the default. */
static int selector(const char *s, unsigned n, unsigned def, unsigned max, unsigned *out)
{
	size_t len;

	*out = def;
	if (s == NULL)
		return 0;
	len = strlen(s);
	if (len != n + 2 || s[0] != '.' || s[1] != (n == 4 ? 'b' : 'h'))
		return -1;
	*out = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned dgt = (unsigned)(s[2 + (n - 1 - i)] - '0');

		if (dgt > max)
			return -1;
		*out |= dgt << (4 * i);
	}
	return 0;
}

/* ".b310", ".h1": the lanes named */
static int mask_bits(const char *s, unsigned n, unsigned *out)
{
	*out = (1u << n) - 1;
	if (s == NULL)
		return 0;
	if (s[0] != '.' || s[1] != (n == 4 ? 'b' : 'h') || s[2] == 0)
		return -1;
	*out = 0;
	for (const char *p = s + 2; *p; p++) {
		unsigned dgt = (unsigned)(*p - '0');

		if (dgt >= n || (*out & (1u << dgt)))
			return -1;
		*out |= 1u << dgt;
	}
	return 0;
}

int sg_lower_simd(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	unsigned n, op, asel, bsel, mask;
	bool add = o->aop == SG_AOP_ADD;
	struct sg_operand plain[4];

	switch (o->base) {
	case SG_B_VADD2:
	case SG_B_VADD4:
		op = V_ADD;
		break;
	case SG_B_VSUB2:
	case SG_B_VSUB4:
		op = V_SUB;
		break;
	case SG_B_VAVRG2:
	case SG_B_VAVRG4:
		op = V_AVRG;
		break;
	case SG_B_VABSDIFF2:
	case SG_B_VABSDIFF4:
		op = V_ABSDIFF;
		break;
	case SG_B_VMIN2:
	case SG_B_VMIN4:
		op = V_MIN;
		break;
	default:
		op = V_MAX;
		break;
	}
	n = (o->base >= SG_B_VADD4) ? 4 : 2;
	if (o->ntypes != 3 || nops != 4 || (add && (o->f & SG_F_SAT)))
		return sg_lower_unsupported(L, o);
	for (int i = 0; i < 3; i++)
		if (o->types[i] != SG_U32 && o->types[i] != SG_S32)
			return sg_lower_unsupported(L, o);
	if (mask_bits(ops[0].name, n, &mask) ||
	    selector(ops[1].name, n, n == 4 ? 0x3210 : 0x10, n == 4 ? 7 : 3, &asel) ||
	    selector(ops[2].name, n, n == 4 ? 0x7654 : 0x32, n == 4 ? 7 : 3, &bsel) || ops[3].name)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad lane selector or mask in %s",
				      o->text);
	for (int i = 0; i < 4; i++) {
		plain[i] = ops[i];
		if (plain[i].kind == SG_O_REG)
			plain[i].name = NULL;
	}
	if (sg_lower_dst(L, &plain[0], &in->d[0]) ||
	    sg_lower_src(L, &plain[1], SG_U32, &in->s[0]) ||
	    sg_lower_src(L, &plain[2], SG_U32, &in->s[1]) ||
	    sg_lower_src(L, &plain[3], SG_U32, &in->s[2]))
		return L->errcode;
	in->nd = 1;
	in->ns = 3;
	in->aux = op | n << 4 | (o->types[1] == SG_S32 ? 0x100u : 0) |
		  (o->types[2] == SG_S32 ? 0x200u : 0) | (o->types[0] == SG_S32 ? 0x400u : 0) |
		  ((o->f & SG_F_SAT) ? 0x800u : 0) | (add ? 0x1000u : 0);
	in->imm = (int64_t)((uint64_t)asel | (uint64_t)bsel << 16 | (uint64_t)mask << 32);
	in->fn = op_simd;
	return 0;
}
