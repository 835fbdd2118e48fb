/* ops_mem.c -- ld, ldu, st, prefetch in every state space, scalar and vector. */
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

/*
 * in->flags: state space (SG_SP_*) | LOCALREL | ADDR32; in->aux: element size | signed
 * << 8 | vector length << 12; in->imm: constant offset. Stores keep their data
 * slots in in->d[] (read, not written).
 */
#define F_LOCALREL 0x10
#define F_ADDR32 0x20 /* a 32-bit base register: base + offset wraps at 2^32 */
#define SPACE(in) ((in)->flags & 0xf)

static inline uint64_t ea(const struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = t->r[in->s[0]] + (uint64_t)in->imm;

	if (in->flags & F_ADDR32)
		a = (uint32_t)a;
	if (in->flags & F_LOCALREL)
		a += t->local_base;
	return a;
}

/*
 * Accesses are relaxed atomics: blocks on other host threads may touch the same
 * global memory (racy guest programs are legal PTX), and on x86 these compile
 * to plain moves. sg_addr has checked the alignment.
 */
static inline uint64_t load(const uint8_t *p, unsigned size, bool sgn)
{
	switch (size) {
	case 1: {
		uint8_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

		return sgn ? (uint64_t)(int64_t)(int8_t)v : v;
	}
	case 2: {
		uint16_t v = __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED);

		return sgn ? (uint64_t)(int64_t)(int16_t)v : v;
	}
	case 4: {
		uint32_t v = __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);

		return sgn ? (uint64_t)(int64_t)(int32_t)v : v;
	}
	default:
		return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	}
}

static inline void store(uint8_t *p, unsigned size, uint64_t v)
{
	switch (size) {
	case 1:
		__atomic_store_n(p, (uint8_t)v, __ATOMIC_RELAXED);
		break;
	case 2:
		__atomic_store_n((uint16_t *)p, (uint16_t)v, __ATOMIC_RELAXED);
		break;
	case 4:
		__atomic_store_n((uint32_t *)p, (uint32_t)v, __ATOMIC_RELAXED);
		break;
	default:
		__atomic_store_n((uint64_t *)p, v, __ATOMIC_RELAXED);
		break;
	}
}

static int op_ld(struct sg_thread *t, const struct sg_insn *in)
{
	unsigned es = in->aux & 0xff, vec = (in->aux >> 12) & 7;
	bool sgn = (in->aux >> 8) & 1;
	const uint8_t *p = sg_addr(t, SPACE(in), ea(t, in), es * vec, false);

	if (p == NULL)
		return SG_STOP_FAULT;
	for (unsigned k = 0; k < vec; k++)
		t->r[in->d[k]] = load(p + k * es, es, sgn);
	return 0;
}

static int op_st(struct sg_thread *t, const struct sg_insn *in)
{
	unsigned es = in->aux & 0xff, vec = (in->aux >> 12) & 7;
	uint8_t *p = sg_addr(t, SPACE(in), ea(t, in), es * vec, true);

	if (p == NULL)
		return SG_STOP_FAULT;
	for (unsigned k = 0; k < vec; k++)
		store(p + k * es, es, t->r[in->d[k]]);
	return 0;
}

/* The common scalar 32-bit global and shared cases, without the size switch. */
static int op_ld_global32(struct sg_thread *t, const struct sg_insn *in)
{
	const uint8_t *p = sg_addr(t, SG_SP_GLOBAL, ea(t, in), 4, false);

	if (p == NULL)
		return SG_STOP_FAULT;
	t->r[in->d[0]] = __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
	return 0;
}

static int op_st_global32(struct sg_thread *t, const struct sg_insn *in)
{
	uint8_t *p = sg_addr(t, SG_SP_GLOBAL, ea(t, in), 4, true);

	if (p == NULL)
		return SG_STOP_FAULT;
	__atomic_store_n((uint32_t *)p, (uint32_t)t->r[in->d[0]], __ATOMIC_RELAXED);
	return 0;
}

static int op_ld_shared32(struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = ea(t, in);
	const struct sg_block *b = t->blk;
	uint32_t v;

	if ((a & 3) || a >= b->shared_size || b->shared_size - a < 4)
		return sg_addr(t, SG_SP_SHARED, a, 4, false) ? 0 : SG_STOP_FAULT;
	memcpy(&v, b->shared + a, 4);
	t->r[in->d[0]] = v;
	return 0;
}

static int op_st_shared32(struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = ea(t, in);
	const struct sg_block *b = t->blk;
	uint32_t v = (uint32_t)t->r[in->d[0]];

	if ((a & 3) || a >= b->shared_size || b->shared_size - a < 4)
		return sg_addr(t, SG_SP_SHARED, a, 4, true) ? 0 : SG_STOP_FAULT;
	memcpy(b->shared + a, &v, 4);
	return 0;
}

static int op_nop(struct sg_thread *t, const struct sg_insn *in)
{
	return 0;
}

/* Chooses the state space from the opcode and what the address names. */
static int final_space(struct sg_lower *L, const struct sg_opc *o, int hint, bool store,
		       uint8_t *flags)
{
	bool rel = hint == (SG_SP_LOCAL | 0x100);
	int sp = o->space;

	if (rel)
		hint = SG_SP_LOCAL;
	if (sp == SG_SP_GENERIC) {
		if (hint == SG_SP_SHARED || hint == SG_SP_LOCAL)
			sp = hint;
		else if (hint == SG_SP_GLOBAL || hint == SG_SP_CONST)
			sp = SG_SP_GLOBAL;
		else if (hint == SG_SP_PARAM || hint == SG_SP_FPARAM)
			sp = hint;
	} else if (sp == SG_SP_PARAM || sp == SG_SP_FPARAM) {
		if (hint == SG_SP_FPARAM || store)
			sp = SG_SP_FPARAM;
		else if (hint == SG_SP_PARAM)
			sp = SG_SP_PARAM;
		else if (hint == SG_SP_GENERIC)
			sp = sg_lower_in_entry(L) ? SG_SP_PARAM : SG_SP_FPARAM;
		else
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s of a non-param symbol",
					      o->text);
	} else if (hint != SG_SP_GENERIC && hint != sp &&
		   !(sp == SG_SP_GLOBAL && hint == SG_SP_CONST) &&
		   !(sp == SG_SP_CONST && hint == SG_SP_GLOBAL)) {
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				      "%s names a variable of another state space", o->text);
	}
	if (store && (sp == SG_SP_CONST || sp == SG_SP_PARAM))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: read-only state space",
				      o->text);
	if (rel && sp != SG_SP_LOCAL)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s of a .local variable",
				      o->text);
	*flags = (uint8_t)(sp | (rel ? F_LOCALREL : 0));
	return 0;
}

int sg_lower_mem(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	bool store = o->base == SG_B_ST;
	const struct sg_operand *data, *addr;
	int type = o->types[0], hint, vec = o->vec ? o->vec : 1;
	unsigned es = sg_type_size(type);
	bool wrap32;

	if (o->base == SG_B_PREFETCH || o->base == SG_B_PREFETCHU) {
		in->fn = op_nop;
		return 0;
	}
	if (nops != 2 || o->ntypes != 1)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s takes two operands", o->text);
	if (es == 0 || es > 8 || type == SG_PRED)
		return sg_lower_unsupported(L, o);
	data = store ? &ops[1] : &ops[0];
	addr = store ? &ops[0] : &ops[1];
	if (sg_lower_addr(L, addr, &hint, &in->s[0], &in->imm, &wrap32))
		return L->errcode;
	in->ns = 1;
	if (final_space(L, o, hint, store, &in->flags))
		return L->errcode;
	if (wrap32)
		in->flags |= F_ADDR32;
	if (vec > 1) {
		if (data->kind != SG_O_VEC || data->nvec != vec)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s needs a {..} of %d",
					      o->text, vec);
		for (int k = 0; k < vec; k++) {
			if (store ? sg_lower_src(L, &data->vec[k], type, &in->d[k])
				  : sg_lower_dst(L, &data->vec[k], &in->d[k]))
				return L->errcode;
		}
	} else if (store ? sg_lower_src(L, data, type, &in->d[0])
			 : sg_lower_dst(L, data, &in->d[0])) {
		return L->errcode;
	}
	in->nd = (uint8_t)vec;
	in->aux = es | (sg_type_signed(type) ? 1u << 8 : 0) | (unsigned)vec << 12;
	in->fn = store ? op_st : op_ld;
	if (vec == 1 && es == 4 && !sg_type_signed(type) && !(in->flags & F_LOCALREL)) {
		if (SPACE(in) == SG_SP_GLOBAL)
			in->fn = store ? op_st_global32 : op_ld_global32;
		else if (SPACE(in) == SG_SP_SHARED)
			in->fn = store ? op_st_shared32 : op_ld_shared32;
	}
	return 0;
}
