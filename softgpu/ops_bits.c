/* ops_bits.c -- logic and bit manipulation: and/or/xor/not/cnot/lop3, shifts, popc, clz, bfind, brev, bfe, bfi, fns, prmt, bmsk, szext, dp4a, dp2a. */
#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

#define LOGIC(W, U)                                   \
	OP(and_##W)                                   \
	{                                             \
		DST = (U)(A(0) & A(1));               \
		return 0;                             \
	}                                             \
	OP(or_##W)                                    \
	{                                             \
		DST = (U)(A(0) | A(1));               \
		return 0;                             \
	}                                             \
	OP(xor_##W)                                   \
	{                                             \
		DST = (U)(A(0) ^ A(1));               \
		return 0;                             \
	}                                             \
	OP(not_##W)                                   \
	{                                             \
		DST = (U)~A(0);                       \
		return 0;                             \
	}                                             \
	OP(cnot_##W)                                  \
	{                                             \
		DST = (U)A(0) == 0;                   \
		return 0;                             \
	}                                             \
	OP(shl_##W)                                   \
	{                                             \
		uint32_t n = (uint32_t)A(1);          \
		DST = n >= W ? 0 : (U)((U)A(0) << n); \
		return 0;                             \
	}                                             \
	OP(shr_u_##W)                                 \
	{                                             \
		uint32_t n = (uint32_t)A(1);          \
		DST = n >= W ? 0 : (U)((U)A(0) >> n); \
		return 0;                             \
	}

LOGIC(16, uint16_t)
LOGIC(32, uint32_t)
LOGIC(64, uint64_t)

OP(and_p)
{
	DST = (A(0) & A(1)) & 1;
	return 0;
}
OP(or_p)
{
	DST = (A(0) | A(1)) & 1;
	return 0;
}
OP(xor_p)
{
	DST = (A(0) ^ A(1)) & 1;
	return 0;
}
OP(not_p)
{
	DST = (A(0) & 1) ^ 1;
	return 0;
}

OP(shr_s_16)
{
	uint32_t n = (uint32_t)A(1);
	int16_t a = (int16_t)A(0);

	DST = (uint16_t)(n >= 16 ? (a < 0 ? -1 : 0) : a >> n);
	return 0;
}
OP(shr_s_32)
{
	uint32_t n = (uint32_t)A(1);
	int32_t a = (int32_t)A(0);

	DST = (uint32_t)(n >= 32 ? (a < 0 ? -1 : 0) : a >> n);
	return 0;
}
OP(shr_s_64)
{
	uint32_t n = (uint32_t)A(1);
	int64_t a = (int64_t)A(0);

	DST = (uint64_t)(n >= 64 ? (a < 0 ? -1 : 0) : a >> n);
	return 0;
}

OP(lop3)
{
	uint32_t a = (uint32_t)A(0), b = (uint32_t)A(1), c = (uint32_t)A(2), r = 0;
	uint32_t lut = in->aux;

	for (int i = 0; i < 8; i++)
		if (lut & (1u << i))
			r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
	DST = r;
	return 0;
}

/* shf.{l,r}.{wrap,clamp}.b32: aux bit 0 right, bit 1 clamp */
OP(shf)
{
	uint64_t v = (uint64_t)(uint32_t)A(1) << 32 | (uint32_t)A(0);
	uint32_t n = (uint32_t)A(2);

	n = (in->aux & 2) ? (n > 32 ? 32 : n) : (n & 31);
	if (in->aux & 1)
		DST = (uint32_t)(v >> n);
	else
		DST = (uint32_t)((v << n) >> 32);
	return 0;
}

OP(popc_32)
{
	DST = (uint32_t)__builtin_popcount((uint32_t)A(0));
	return 0;
}
OP(popc_64)
{
	DST = (uint32_t)__builtin_popcountll(A(0));
	return 0;
}
OP(clz_32)
{
	uint32_t a = (uint32_t)A(0);

	DST = a ? (uint32_t)__builtin_clz(a) : 32;
	return 0;
}
OP(clz_64)
{
	uint64_t a = A(0);

	DST = a ? (uint32_t)__builtin_clzll(a) : 64;
	return 0;
}

/* bfind: aux = width | signed << 8 | shiftamt << 9 */
OP(bfind)
{
	unsigned w = in->aux & 0xff;
	uint64_t a = w == 32 ? (uint32_t)A(0) : A(0);
	uint32_t r;

	if ((in->aux & 0x100) && (a >> (w - 1)) & 1)
		a = ~a & (w == 32 ? 0xffffffffull : ~0ull);
	if (a == 0) {
		DST = 0xffffffffu;
		return 0;
	}
	r = 63 - (uint32_t)__builtin_clzll(a);
	if (in->aux & 0x200)
		r = (w - 1) - r;
	DST = r;
	return 0;
}

OP(brev_32)
{
	uint32_t a = (uint32_t)A(0), r = 0;

	for (int i = 0; i < 32; i++)
		r |= ((a >> i) & 1u) << (31 - i);
	DST = r;
	return 0;
}
OP(brev_64)
{
	uint64_t a = A(0), r = 0;

	for (int i = 0; i < 64; i++)
		r |= ((a >> i) & 1ull) << (63 - i);
	DST = r;
	return 0;
}

/* bfe: aux = width | signed << 8 */
OP(bfe)
{
	unsigned w = in->aux & 0xff, msb = w - 1;
	uint64_t a = A(0), d = 0;
	uint32_t pos = (uint32_t)A(1) & 0xff, len = (uint32_t)A(2) & 0xff;
	uint64_t sbit = 0;

	if ((in->aux & 0x100) && len != 0) {
		uint32_t top = pos + len - 1 < msb ? pos + len - 1 : msb;

		sbit = (a >> top) & 1;
	}
	for (unsigned i = 0; i <= msb; i++) {
		uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;

		d |= bit << i;
	}
	DST = w == 32 ? (uint32_t)d : d;
	return 0;
}

OP(bfi)
{
	unsigned w = in->aux & 0xff, msb = w - 1;
	uint64_t f = A(0), d = A(1);
	uint32_t pos = (uint32_t)A(2) & 0xff, len = (uint32_t)A(3) & 0xff;

	for (unsigned i = 0; i < len && pos + i <= msb; i++)
		d = (d & ~(1ull << (pos + i))) | (((f >> i) & 1) << (pos + i));
	DST = w == 32 ? (uint32_t)d : d;
	return 0;
}

OP(fns)
{
	uint32_t mask = (uint32_t)A(0), base = (uint32_t)A(1);
	int32_t offset = (int32_t)A(2);
	uint32_t d = 0xffffffffu;

	if (offset == 0) {
		if (base < 32 && (mask >> base) & 1)
			d = base;
	} else {
		int32_t pos = (int32_t)base, inc = offset > 0 ? 1 : -1;
		uint32_t count = (uint32_t)(offset > 0 ? offset : -offset) - 1;

		while (pos >= 0 && pos < 32) {
			if ((mask >> pos) & 1) {
				if (count == 0) {
					d = (uint32_t)pos;
					break;
				}
				count--;
			}
			pos += inc;
		}
	}
	DST = d;
	return 0;
}

/* prmt byte selections for the named modes: for d.b0..b3, index into {b, a} bytes */
static const uint8_t prmt_modes[6][4][4] = {
	/* f4e */ {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
	/* b4e */ {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
	/* rc8 */ {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
	/* ecl */ {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
	/* ecr */ {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
	/* rc16 */ {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
};

OP(prmt)
{
	uint64_t v = (uint64_t)(uint32_t)A(1) << 32 | (uint32_t)A(0);
	uint32_t c = (uint32_t)A(2), d = 0;

	for (int i = 0; i < 4; i++) {
		uint32_t byte;

		if (in->aux == 0) {
			uint32_t sel = (c >> (4 * i)) & 0xf;

			byte = (uint32_t)(v >> (8 * (sel & 7))) & 0xff;
			if (sel & 8)
				byte = (byte & 0x80) ? 0xff : 0;
		} else {
			uint32_t idx = prmt_modes[in->aux - 1][c & 3][i];

			byte = (uint32_t)(v >> (8 * idx)) & 0xff;
		}
		d |= byte << (8 * i);
	}
	DST = d;
	return 0;
}

/* bmsk / szext: aux bit 0 clamp, bit 1 signed (szext) */
OP(bmsk)
{
	uint32_t a = (uint32_t)A(0), b = (uint32_t)A(1);
	uint64_t m;

	if (in->aux & 1) {
		a = a > 32 ? 32 : a;
		b = b > 32 ? 32 : b;
	} else {
		a &= 31;
		b &= 31;
	}
	m = ((1ull << b) - 1) << a;
	DST = (uint32_t)m;
	return 0;
}

OP(szext)
{
	uint32_t a = (uint32_t)A(0), b = (uint32_t)A(1);

	b = (in->aux & 1) ? (b > 32 ? 32 : b) : (b & 31);
	if (b == 0) {
		DST = 0;
	} else if (b >= 32) {
		DST = a;
	} else if (in->aux & 2) {
		DST = (uint32_t)((int32_t)(a << (32 - b)) >> (32 - b));
	} else {
		DST = a & ((1u << b) - 1);
	}
	return 0;
}

/* dp4a / dp2a: aux bit 0 a signed, bit 1 b signed, bit 2 dp2a hi */
static int32_t ext(uint32_t v, unsigned bits, bool sgn)
{
	uint32_t m = (1u << bits) - 1;

	v &= m;
	if (sgn && (v >> (bits - 1)))
		return (int32_t)(v | ~m);
	return (int32_t)v;
}

OP(dp4a)
{
	uint32_t a = (uint32_t)A(0), b = (uint32_t)A(1);
	uint32_t acc = (uint32_t)A(2);

	for (int i = 0; i < 4; i++)
		acc += (uint32_t)(ext(a >> (8 * i), 8, in->aux & 1) *
				  ext(b >> (8 * i), 8, in->aux & 2));
	DST = acc;
	return 0;
}

OP(dp2a)
{
	uint32_t a = (uint32_t)A(0), b = (uint32_t)A(1);
	uint32_t acc = (uint32_t)A(2);
	unsigned base = (in->aux & 4) ? 2 : 0;

	for (int i = 0; i < 2; i++)
		acc += (uint32_t)(ext(a >> (16 * i), 16, in->aux & 1) *
				  ext(b >> (8 * (base + (unsigned)i)), 8, in->aux & 2));
	DST = acc;
	return 0;
}

#define PICK(name, w) ((w) == 2 ? name##_16 : (w) == 4 ? name##_32 : name##_64)

int sg_lower_bits(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	int type = o->types[0];
	unsigned w = sg_type_size(type);
	bool pred = type == SG_PRED, sgn = sg_type_signed(type);
	bool w_ok = w == 2 || w == 4 || w == 8;

	switch (o->base) {
	case SG_B_AND:
	case SG_B_OR:
	case SG_B_XOR:
		if (!pred && !w_ok)
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, 3, type, in))
			return L->errcode;
		if (pred)
			in->fn = o->base == SG_B_AND ? and_p : o->base == SG_B_OR ? or_p : xor_p;
		else if (o->base == SG_B_AND)
			in->fn = PICK(and, w);
		else if (o->base == SG_B_OR)
			in->fn = PICK(or, w);
		else
			in->fn = PICK(xor, w);
		return 0;
	case SG_B_NOT:
	case SG_B_CNOT:
		if ((!pred && !w_ok) || (pred && o->base == SG_B_CNOT))
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, 2, type, in))
			return L->errcode;
		in->fn = pred ? not_p : o->base == SG_B_NOT ? PICK(not, w) : PICK(cnot, w);
		return 0;
	case SG_B_LOP3:
		if (type != SG_B32 || nops != 5 || ops[4].kind != SG_O_IMM)
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, 4, 4, type, in))
			return L->errcode;
		in->aux = (uint32_t)ops[4].i & 0xff;
		in->fn = lop3;
		return 0;
	case SG_B_SHL:
	case SG_B_SHR:
		if (!w_ok || pred)
			return sg_lower_unsupported(L, o);
		if (nops != 3 || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], type, &in->s[0]) ||
		    sg_lower_src(L, &ops[2], SG_U32, &in->s[1]))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		in->ns = 2;
		if (o->base == SG_B_SHL)
			in->fn = PICK(shl, w);
		else if (sgn)
			in->fn = PICK(shr_s, w);
		else
			in->fn = PICK(shr_u, w);
		return 0;
	case SG_B_SHF:
		if (type != SG_B32 || (o->mode != SG_M_L && o->mode != SG_M_R))
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, 4, SG_B32, in))
			return L->errcode;
		in->aux = (o->mode == SG_M_R ? 1u : 0) | ((o->f & SG_F_CLAMP) ? 2u : 0);
		in->fn = shf;
		return 0;
	case SG_B_POPC:
	case SG_B_CLZ:
	case SG_B_BREV:
		if (w != 4 && w != 8)
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, 2, type, in))
			return L->errcode;
		if (o->base == SG_B_POPC)
			in->fn = w == 4 ? popc_32 : popc_64;
		else if (o->base == SG_B_CLZ)
			in->fn = w == 4 ? clz_32 : clz_64;
		else
			in->fn = w == 4 ? brev_32 : brev_64;
		return 0;
	case SG_B_BFIND:
		if (w != 4 && w != 8)
			return sg_lower_unsupported(L, o);
		if (sg_lower_operands(L, o, ops, nops, 2, type, in))
			return L->errcode;
		in->aux = w * 8 | (sgn ? 0x100u : 0) | ((o->f & SG_F_SHIFTAMT) ? 0x200u : 0);
		in->fn = bfind;
		return 0;
	case SG_B_BFE:
		if (w != 4 && w != 8)
			return sg_lower_unsupported(L, o);
		if (nops != 4 || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], type, &in->s[0]) ||
		    sg_lower_src(L, &ops[2], SG_U32, &in->s[1]) ||
		    sg_lower_src(L, &ops[3], SG_U32, &in->s[2]))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		in->ns = 3;
		in->aux = w * 8 | (sgn ? 0x100u : 0);
		in->fn = bfe;
		return 0;
	case SG_B_BFI:
		if (w != 4 && w != 8)
			return sg_lower_unsupported(L, o);
		if (nops != 5 || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], type, &in->s[0]) ||
		    sg_lower_src(L, &ops[2], type, &in->s[1]) ||
		    sg_lower_src(L, &ops[3], SG_U32, &in->s[2]) ||
		    sg_lower_src(L, &ops[4], SG_U32, &in->s[3]))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		in->ns = 4;
		in->aux = w * 8;
		in->fn = bfi;
		return 0;
	case SG_B_FNS:
		if (type != SG_B32 || sg_lower_operands(L, o, ops, nops, 4, SG_B32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->fn = fns;
		return 0;
	case SG_B_PRMT:
		if (type != SG_B32 || sg_lower_operands(L, o, ops, nops, 4, SG_B32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		switch (o->mode) {
		case SG_M_NONE:
			in->aux = 0;
			break;
		case SG_M_F4E:
			in->aux = 1;
			break;
		case SG_M_B4E:
			in->aux = 2;
			break;
		case SG_M_RC8:
			in->aux = 3;
			break;
		case SG_M_ECL:
			in->aux = 4;
			break;
		case SG_M_ECR:
			in->aux = 5;
			break;
		case SG_M_RC16:
			in->aux = 6;
			break;
		default:
			return sg_lower_unsupported(L, o);
		}
		in->fn = prmt;
		return 0;
	case SG_B_BMSK:
	case SG_B_SZEXT:
		if (w != 4 || sg_lower_operands(L, o, ops, nops, 3, SG_U32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->aux = ((o->f & SG_F_CLAMP) ? 1u : 0) | (sgn ? 2u : 0);
		in->fn = o->base == SG_B_BMSK ? bmsk : szext;
		return 0;
	case SG_B_DP4A:
	case SG_B_DP2A:
		if (o->ntypes != 2 || sg_type_size(o->types[0]) != 4 ||
		    sg_type_size(o->types[1]) != 4 ||
		    sg_lower_operands(L, o, ops, nops, 4, SG_U32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->aux = (sg_type_signed(o->types[0]) ? 1u : 0) |
			  (sg_type_signed(o->types[1]) ? 2u : 0) | (o->mode == SG_M_HI ? 4u : 0);
		in->fn = o->base == SG_B_DP4A ? dp4a : dp2a;
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
