/* ops_simd.c -- video instructions: the SIMD ones on 2x16 and 4x8 lanes (vadd2/4, vsub, vavrg,
 * vabsdiff, vmin, vmax with lane selectors, saturation, merge masks, .add), and the scalar ones
 * (vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr, vset with byte/half selectors, .sat,
 * .add/.min/.max, merge; vmad with negation, .po and scaling). */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

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

OP(op_simd)
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

/* ---- scalar video instructions ---- */

/*
 * The PTX ISA's stages: each source's selected byte, half-word or word is sign-
 * or zero-extended by its type (33 bits), the operation gives a 34-bit value,
 * .sat clamps it to the destination's range (that of the merged byte or
 * half-word when d has a selector), then either a secondary .add/.min/.max with
 * c (signed by the destination type) or the merge of the low byte/half into c.
 * in->aux = op | a signed << 4 | b signed << 5 | d signed << 6 | sat << 7 |
 * op2 << 8 | shift mode << 10 | cmp << 12; in->imm = asel | bsel << 4 | dsel << 8,
 * each selector 0 (word), 1-4 (.b0-.b3) or 5-6 (.h0, .h1).
 */
enum { S_ADD, S_SUB, S_ABSDIFF, S_MIN, S_MAX, S_SHL, S_SHR, S_SET };
enum { OP2_NONE, OP2_ADD, OP2_MIN, OP2_MAX };
enum { SH_NONE, SH_CLAMP, SH_WRAP };

static int64_t part(uint32_t v, unsigned sel, bool sgn)
{
	if (sel >= 1 && sel <= 4) {
		uint8_t b = (uint8_t)(v >> (8 * (sel - 1)));

		return sgn ? (int8_t)b : b;
	}
	if (sel >= 5) {
		uint16_t h = (uint16_t)(v >> (16 * (sel - 5)));

		return sgn ? (int16_t)h : h;
	}
	return sgn ? (int64_t)(int32_t)v : (int64_t)v;
}

static bool vcmp(int cmp, int64_t a, int64_t b)
{
	switch (cmp) {
	case SG_EQ:
		return a == b;
	case SG_NE:
		return a != b;
	case SG_LT:
		return a < b;
	case SG_LE:
		return a <= b;
	case SG_GT:
		return a > b;
	default:
		return a >= b;
	}
}

OP(op_video)
{
	uint32_t a = (uint32_t)t->r[in->s[0]], b = (uint32_t)t->r[in->s[1]];
	uint32_t c = (uint32_t)t->r[in->s[2]], aux = in->aux;
	unsigned asel = in->imm & 0xf, bsel = (in->imm >> 4) & 0xf, dsel = (in->imm >> 8) & 0xf;
	bool ds = aux & 0x40;
	int64_t ta = part(a, asel, aux & 0x10), tb = part(b, bsel, aux & 0x20), tc;
	__int128 r; /* exact: a left shift by 32 of a 33-bit value needs 65 bits */

	switch (aux & 0xf) {
	case S_ADD:
		r = ta + tb;
		break;
	case S_SUB:
		r = ta - tb;
		break;
	case S_ABSDIFF:
		r = ta > tb ? ta - tb : tb - ta;
		break;
	case S_MIN:
		r = ta < tb ? ta : tb;
		break;
	case S_MAX:
		r = ta > tb ? ta : tb;
		break;
	case S_SET:
		r = vcmp((int)(aux >> 12), ta, tb);
		break;
	default: /* shifts: tb is unsigned */
		if (((aux >> 10) & 3) == SH_CLAMP && tb > 32)
			tb = 32;
		else if (((aux >> 10) & 3) == SH_WRAP)
			tb &= 0x1f;
		if ((aux & 0xf) == S_SHR)
			r = ta >> tb; /* arithmetic for a signed source */
		else
			r = (__int128)ta * ((__int128)1 << tb);
		break;
	}
	if (aux & 0x80) {
		unsigned bits = dsel == 0 ? 32 : dsel <= 4 ? 8 : 16;
		int64_t lo = ds ? -(1ll << (bits - 1)) : 0;
		int64_t hi = ds ? (1ll << (bits - 1)) - 1 : (1ll << bits) - 1;

		r = r < lo ? lo : r > hi ? hi : r;
	}
	tc = ds ? (int64_t)(int32_t)c : (int64_t)c;
	switch ((aux >> 8) & 3) {
	case OP2_ADD:
		r += tc;
		break;
	case OP2_MIN:
		r = r < tc ? r : tc;
		break;
	case OP2_MAX:
		r = r > tc ? r : tc;
		break;
	}
	if (dsel >= 1 && dsel <= 4) {
		unsigned sh = 8 * (dsel - 1);

		r = (((uint32_t)r & 0xffu) << sh) | (c & ~(0xffu << sh));
	} else if (dsel >= 5) {
		unsigned sh = 16 * (dsel - 5);

		r = (((uint32_t)r & 0xffffu) << sh) | (c & ~(0xffffu << sh));
	}
	t->r[in->d[0]] = (uint32_t)r;
	return 0;
}

/* ".b0".."b3", ".h0", ".h1" -> 1..6; NULL (no selector) -> 0; -1 if malformed */
static int scalar_sel(const char *s)
{
	if (s == NULL)
		return 0;
	if (strlen(s) != 3 || s[0] != '.')
		return -1;
	if (s[1] == 'b' && s[2] >= '0' && s[2] <= '3')
		return 1 + (s[2] - '0');
	if (s[1] == 'h' && (s[2] == '0' || s[2] == '1'))
		return 5 + (s[2] - '0');
	return -1;
}

static int lower_video(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		       int nops, struct sg_insn *in)
{
	static const struct {
		int base, op;
	} ops_of[] = {
		{SG_B_VADD, S_ADD}, {SG_B_VSUB, S_SUB}, {SG_B_VABSDIFF, S_ABSDIFF},
		{SG_B_VMIN, S_MIN}, {SG_B_VMAX, S_MAX}, {SG_B_VSHL, S_SHL},
		{SG_B_VSHR, S_SHR}, {SG_B_VSET, S_SET},
	};
	int op = -1, dt, at, bt, asel, bsel, dsel, op2 = OP2_NONE, mode = SH_NONE;
	bool shift, set;
	struct sg_operand plain[4];

	for (size_t i = 0; i < sizeof(ops_of) / sizeof(ops_of[0]); i++)
		if (ops_of[i].base == o->base)
			op = ops_of[i].op;
	shift = op == S_SHL || op == S_SHR;
	set = op == S_SET;
	/* vset has no destination type: .atype.btype.cmp */
	if (o->ntypes != (set ? 2 : 3) || (set != (o->cmp != SG_CMP_NONE)))
		return sg_lower_unsupported(L, o);
	dt = set ? SG_U32 : o->types[0];
	at = o->types[set ? 0 : 1];
	bt = o->types[set ? 1 : 2];
	if ((dt != SG_U32 && dt != SG_S32) || (at != SG_U32 && at != SG_S32) ||
	    (bt != SG_U32 && bt != SG_S32) || (shift && bt != SG_U32) ||
	    (set && (o->f & SG_F_SAT)) || (set && (o->cmp < SG_EQ || o->cmp > SG_GE)))
		return sg_lower_unsupported(L, o);
	if (o->f & ~(SG_F_SAT | SG_F_CLAMP | SG_F_WRAP))
		return sg_lower_unsupported(L, o);
	if (shift) {
		if (!!(o->f & SG_F_CLAMP) == !!(o->f & SG_F_WRAP))
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s needs .clamp or .wrap",
					      o->text);
		mode = (o->f & SG_F_CLAMP) ? SH_CLAMP : SH_WRAP;
	} else if (o->f & (SG_F_CLAMP | SG_F_WRAP)) {
		return sg_lower_unsupported(L, o);
	}
	switch (o->aop) {
	case SG_AOP_NONE:
		break;
	case SG_AOP_ADD:
		op2 = OP2_ADD;
		break;
	case SG_AOP_MIN:
		op2 = OP2_MIN;
		break;
	case SG_AOP_MAX:
		op2 = OP2_MAX;
		break;
	default:
		return sg_lower_unsupported(L, o);
	}
	if (nops < 3 || nops > 4)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
	dsel = scalar_sel(ops[0].name);
	asel = scalar_sel(ops[1].name);
	bsel = scalar_sel(ops[2].name);
	if (dsel < 0 || asel < 0 || bsel < 0 ||
	    (nops == 4 && ops[3].kind == SG_O_REG && ops[3].name))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad selector in %s", o->text);
	/* c is there exactly when a secondary operation or a merge (d with a selector) needs it */
	if ((nops == 4) != (op2 != OP2_NONE || dsel != 0) || (op2 != OP2_NONE && dsel != 0))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
	for (int i = 0; i < nops; i++) {
		plain[i] = ops[i];
		if (plain[i].kind == SG_O_REG)
			plain[i].name = NULL;
	}
	if (sg_lower_dst(L, &plain[0], &in->d[0]) ||
	    sg_lower_src(L, &plain[1], SG_U32, &in->s[0]) ||
	    sg_lower_src(L, &plain[2], SG_U32, &in->s[1]))
		return L->errcode;
	if (nops == 4) {
		if (sg_lower_src(L, &plain[3], SG_U32, &in->s[2]))
			return L->errcode;
	} else {
		in->s[2] = sg_lower_const(L, 0);
	}
	in->nd = 1;
	in->ns = 3;
	in->aux = (uint32_t)op | (at == SG_S32 ? 0x10u : 0) | (bt == SG_S32 ? 0x20u : 0) |
		  (dt == SG_S32 ? 0x40u : 0) | ((o->f & SG_F_SAT) ? 0x80u : 0) |
		  (uint32_t)op2 << 8 | (uint32_t)mode << 10 | (uint32_t)o->cmp << 12;
	in->imm = asel | bsel << 4 | dsel << 8;
	in->fn = op_video;
	return 0;
}

/*
 * vmad.dtype.atype.btype{.po}{.sat}{.shr7,.shr15} d, {-}a{.asel}, {-}b{.bsel}, {-}c, by the
 * PTX ISA's pseudo-code: the product of the selected parts in 128 bits, negated as ~p + 1
 * when exactly one of a and b is (or c as ~c + 1 when it is), c sign-extended when the final
 * result is signed, .po adding 1; then the scale shift, .sat's clamp to the s32 or u32 range,
 * and the low 32 bits. in->aux = a signed | b signed << 1 | product negated << 2 | c negated
 * << 3 | .po << 4 | .sat << 5 | shift << 8; in->imm = asel | bsel << 4.
 */
OP(op_vmad)
{
	uint32_t a = (uint32_t)t->r[in->s[0]], b = (uint32_t)t->r[in->s[1]];
	uint32_t c = (uint32_t)t->r[in->s[2]], aux = in->aux;
	bool as = aux & 1, bs = aux & 2, pneg = aux & 4, cneg = aux & 8, po = aux & 16;
	bool sgn = as || bs || pneg || cneg;
	__int128 p = (__int128)part(a, in->imm & 0xf, as) * part(b, (in->imm >> 4) & 0xf, bs);
	int lsb = 0;
	int64_t r;

	if (po) {
		lsb = 1;
	} else if (pneg) {
		p = ~p;
		lsb = 1;
	} else if (cneg) {
		c = ~c;
		lsb = 1;
	}
	p += (sgn ? (__int128)(int32_t)c : (__int128)c) + lsb;
	r = (int64_t)(p >> (aux >> 8)); /* the low 64 bits */
	if (aux & 32) {
		if (sgn)
			r = r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r;
		else
			r = (uint64_t)r > UINT32_MAX ? UINT32_MAX : r;
	}
	t->r[in->d[0]] = (uint32_t)r;
	return 0;
}

static int lower_vmad(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		      int nops, struct sg_insn *in)
{
	const char *p = strchr(o->text, '.');
	int types[3], nt = 0, asel, bsel;
	unsigned shift = 0;
	bool po = false, sat = false, pneg, cneg;
	struct sg_operand plain[4];

	while (p) {
		const char *w = p + 1, *e = strchr(w, '.');
		size_t n = e ? (size_t)(e - w) : strlen(w);

		if (nt < 3 && n == 3 && (memcmp(w, "u32", 3) == 0 || memcmp(w, "s32", 3) == 0))
			types[nt++] = w[0] == 's' ? SG_S32 : SG_U32;
		else if (nt == 3 && n == 2 && memcmp(w, "po", 2) == 0)
			po = true;
		else if (nt == 3 && n == 3 && memcmp(w, "sat", 3) == 0)
			sat = true;
		else if (nt == 3 && shift == 0 && n == 4 && memcmp(w, "shr7", 4) == 0)
			shift = 7;
		else if (nt == 3 && shift == 0 && n == 5 && memcmp(w, "shr15", 5) == 0)
			shift = 15;
		else
			return sg_lower_unsupported(L, o);
		p = e;
	}
	if (nt != 3)
		return sg_lower_unsupported(L, o);
	if (nops != 4)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
	pneg = ops[1].minus != ops[2].minus;
	cneg = ops[3].minus;
	/* the ISA negates the product or c, not both, and nothing in .po mode */
	if ((pneg && cneg) || (po && (ops[1].minus || ops[2].minus || cneg)))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: negated operands", o->text);
	asel = scalar_sel(ops[1].name);
	bsel = scalar_sel(ops[2].name);
	if (asel < 0 || bsel < 0 || ops[0].name || (ops[3].kind == SG_O_REG && ops[3].name))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad selector in %s", o->text);
	for (int i = 0; i < 4; i++) {
		plain[i] = ops[i];
		plain[i].minus = false;
		if (plain[i].kind == SG_O_REG)
			plain[i].name = NULL;
	}
	if (sg_lower_dst(L, &ops[0], &in->d[0]) || sg_lower_src(L, &plain[1], SG_U32, &in->s[0]) ||
	    sg_lower_src(L, &plain[2], SG_U32, &in->s[1]) ||
	    sg_lower_src(L, &plain[3], SG_U32, &in->s[2]))
		return L->errcode;
	in->nd = 1;
	in->ns = 3;
	in->aux = (types[1] == SG_S32 ? 1u : 0) | (types[2] == SG_S32 ? 2u : 0) | (pneg ? 4u : 0) |
		  (cneg ? 8u : 0) | (po ? 16u : 0) | (sat ? 32u : 0) | shift << 8;
	in->imm = asel | bsel << 4;
	in->fn = op_vmad;
	return 0;
}

int sg_lower_simd(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	unsigned n, op, asel, bsel, mask;
	bool add = o->aop == SG_AOP_ADD;
	struct sg_operand plain[4];

	if (o->base == SG_B_VMAD)
		return lower_vmad(L, o, ops, nops, in);
	if (o->base >= SG_B_VADD && o->base <= SG_B_VSET)
		return lower_video(L, o, ops, nops, in);
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
