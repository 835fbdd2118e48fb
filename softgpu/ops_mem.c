/* ops_mem.c -- ld, ldu, st, prefetch in every state space, scalar and vector; cp.async,
 * createpolicy. */
#include <string.h>

#include <cuda.h>

#include "ops.h"

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

SG_HOT int op_ld(struct sg_thread *t, const struct sg_insn *in)
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

SG_HOT int op_st(struct sg_thread *t, const struct sg_insn *in)
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
SG_HOT int op_ld_global32(struct sg_thread *t, const struct sg_insn *in)
{
	const uint8_t *p = sg_addr(t, SG_SP_GLOBAL, ea(t, in), 4, false);

	if (p == NULL)
		return SG_STOP_FAULT;
	t->r[in->d[0]] = __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
	return 0;
}

SG_HOT int op_st_global32(struct sg_thread *t, const struct sg_insn *in)
{
	uint8_t *p = sg_addr(t, SG_SP_GLOBAL, ea(t, in), 4, true);

	if (p == NULL)
		return SG_STOP_FAULT;
	__atomic_store_n((uint32_t *)p, (uint32_t)t->r[in->d[0]], __ATOMIC_RELAXED);
	return 0;
}

SG_HOT int op_ld_shared32(struct sg_thread *t, const struct sg_insn *in)
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

SG_HOT int op_st_shared32(struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = ea(t, in);
	const struct sg_block *b = t->blk;
	uint32_t v = (uint32_t)t->r[in->d[0]];

	if ((a & 3) || a >= b->shared_size || b->shared_size - a < 4)
		return sg_addr(t, SG_SP_SHARED, a, 4, true) ? 0 : SG_STOP_FAULT;
	memcpy(b->shared + a, &v, 4);
	return 0;
}

/* Global memory of any width and vector length: op_ld/op_st, with the warp-wide form below. */
SG_HOT int op_ld_global(struct sg_thread *t, const struct sg_insn *in)
{
	return op_ld(t, in);
}

SG_HOT int op_st_global(struct sg_thread *t, const struct sg_insn *in)
{
	return op_st(t, in);
}

/* Shared memory of any width and vector length, checked inline; op_ld/op_st fault. */
SG_HOT int op_ld_shared(struct sg_thread *t, const struct sg_insn *in)
{
	unsigned es = in->aux & 0xff, vec = (in->aux >> 12) & 7, n = es * vec;
	bool sgn = (in->aux >> 8) & 1;
	uint64_t a = ea(t, in);
	const struct sg_block *b = t->blk;

	if ((a & (n - 1)) || a >= b->shared_size || b->shared_size - a < n)
		return op_ld(t, in);
	for (unsigned k = 0; k < vec; k++)
		t->r[in->d[k]] = load(b->shared + a + k * es, es, sgn);
	return 0;
}

SG_HOT int op_st_shared(struct sg_thread *t, const struct sg_insn *in)
{
	unsigned es = in->aux & 0xff, vec = (in->aux >> 12) & 7, n = es * vec;
	uint64_t a = ea(t, in);
	const struct sg_block *b = t->blk;

	if ((a & (n - 1)) || a >= b->shared_size || b->shared_size - a < n)
		return op_st(t, in);
	for (unsigned k = 0; k < vec; k++)
		store(b->shared + a + k * es, es, t->r[in->d[k]]);
	return 0;
}

/* Kernel parameters (ld.param of an entry's arguments), checked inline; op_ld faults. */
SG_HOT int op_ld_param(struct sg_thread *t, const struct sg_insn *in)
{
	unsigned es = in->aux & 0xff, vec = (in->aux >> 12) & 7, n = es * vec;
	bool sgn = (in->aux >> 8) & 1;
	uint64_t a = ea(t, in);
	const struct sg_grid *g = t->blk->grid;

	if ((a & (n - 1)) || a >= g->param_size || g->param_size - a < n)
		return op_ld(t, in);
	for (unsigned k = 0; k < vec; k++)
		t->r[in->d[k]] = load(g->params + a + k * es, es, sgn);
	return 0;
}

/* Their warp-wide forms (they return 0 or SG_STOP_FAULT, as SG_WARP_OF needs). */
SG_WARP_OF(op_ld);
SG_WARP_OF(op_st);

/*
 * The warp-wide forms of the shared and global accesses: the block's shared memory, or the
 * translation its last global access hit, read once for the group and kept in locals (a
 * store through a byte pointer could alias them, and the compiler would load them again
 * for every lane). A lane whose access falls outside them goes through the handler itself,
 * with its pc set (it translates, or faults):
 * - SG_WARP_FAST (global): that lane alone, and the translation it hit is read again for the
 *   lanes after it (a kernel's accesses move between allocations);
 * - SG_WARP_FAST_COLD (shared, where only a fault falls outside): that lane and all after it
 *   one by one, in name##_lanes, out of line, so that the loop over the lanes calls nothing
 *   and keeps its values in registers.
 */
#define SG_WARP_LOOP(name, vars, setup, ok, body, miss)                                           \
	static int name##_warp(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *ip) \
	{                                                                                         \
		const struct sg_insn c = *ip, *in = &c;                                           \
		struct sg_block *b = gl[0]->blk;                                                  \
		vars;                                                                             \
                                                                                                  \
		setup;                                                                            \
		for (uint32_t k = 0; k < n; k++) {                                                \
			struct sg_thread *t = gl[k];                                              \
			uint64_t a;                                                               \
                                                                                                  \
			if (!((t->r[in->guard] ^ in->gneg) & 1))                                  \
				continue;                                                         \
			a = ea(t, in);                                                            \
			if (ok) {                                                                 \
				body;                                                             \
				continue;                                                         \
			}                                                                         \
			miss;                                                                     \
		}                                                                                 \
		return 0;                                                                         \
	}                                                                                         \
	SG_WOP(name)

#define SG_WARP_FAST(name, vars, setup, ok, body)     \
	SG_WARP_LOOP(name, vars, setup, ok, body, {   \
		t->pc = (uint32_t)(ip - t->code) + 1; \
		if (name(t, in) != 0)                 \
			return SG_STOP_FAULT;         \
		setup;                                \
	})

#define SG_WARP_FAST_COLD(name, vars, setup, ok, body)                              \
	static __attribute__((noinline, cold)) int name##_lanes(                    \
		struct sg_thread *const *gl, uint32_t n, const struct sg_insn *in)  \
	{                                                                           \
		uint32_t pc = (uint32_t)(in - gl[0]->code) + 1;                     \
                                                                                    \
		for (uint32_t k = 0; k < n; k++) {                                  \
			struct sg_thread *t = gl[k];                                \
                                                                                    \
			t->pc = pc;                                                 \
			if (((t->r[in->guard] ^ in->gneg) & 1) && name(t, in) != 0) \
				return SG_STOP_FAULT;                               \
		}                                                                   \
		return 0;                                                           \
	}                                                                           \
	SG_WARP_LOOP(name, vars, setup, ok, body, return name##_lanes(gl + k, n - k, ip))

#define SHARED_VARS  \
	uint8_t *sh; \
	uint32_t ssz
#define SHARED_SETUP (sh = b->shared, ssz = b->shared_size)
#define SHARED_OK (!(a & 3) && a < ssz && ssz - a >= 4)
#define GLOBAL_VARS  \
	uint64_t lo; \
	uint64_t hi; \
	uint8_t *host
#define GLOBAL_SETUP (lo = b->xc[b->xlast].lo, hi = b->xc[b->xlast].hi, host = b->xc[b->xlast].host)
#define GLOBAL_OKN(n) (!(a & ((n)-1)) && a >= lo && a + (n) <= hi && a + (n) > a)
#define GLOBAL_OK GLOBAL_OKN(4)
#define SIZES                               \
	unsigned es = in->aux & 0xff;       \
	unsigned vec = (in->aux >> 12) & 7; \
	unsigned nb = es * vec

SG_WARP_FAST_COLD(op_ld_shared32, SHARED_VARS, SHARED_SETUP, SHARED_OK, {
	uint32_t v;

	memcpy(&v, sh + a, 4);
	t->r[in->d[0]] = v;
});
SG_WARP_FAST_COLD(op_st_shared32, SHARED_VARS, SHARED_SETUP, SHARED_OK, {
	uint32_t v = (uint32_t)t->r[in->d[0]];

	memcpy(sh + a, &v, 4);
});
SG_WARP_FAST(op_ld_global32, GLOBAL_VARS, GLOBAL_SETUP, GLOBAL_OK, {
	t->r[in->d[0]] = __atomic_load_n((const uint32_t *)(host + (a - lo)), __ATOMIC_RELAXED);
});
SG_WARP_FAST(op_st_global32, GLOBAL_VARS, GLOBAL_SETUP, GLOBAL_OK, {
	__atomic_store_n((uint32_t *)(host + (a - lo)), (uint32_t)t->r[in->d[0]], __ATOMIC_RELAXED);
});
SG_WARP_FAST(op_ld_global, SIZES; bool sgn = (in->aux >> 8) & 1;
	     GLOBAL_VARS, GLOBAL_SETUP, GLOBAL_OKN(nb), {
		     for (unsigned j = 0; j < vec; j++)
			     t->r[in->d[j]] = load(host + (a - lo) + j * es, es, sgn);
	     });
SG_WARP_FAST(op_st_global, SIZES; GLOBAL_VARS, GLOBAL_SETUP, GLOBAL_OKN(nb), {
	for (unsigned j = 0; j < vec; j++)
		store(host + (a - lo) + j * es, es, t->r[in->d[j]]);
});
SG_WARP_OF(op_ld_shared);
SG_WARP_OF(op_st_shared);

/*
 * ld.param for a converged group: a kernel's parameters are read-only and nearly always
 * read at one address by every lane, so a lane whose address is the one before it takes
 * the values that lane loaded; a lane at another address loads (and faults) as alone.
 */
static int op_ld_param_warp(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *ip)
{
	const struct sg_insn c = *ip, *in = &c;
	uint32_t pc = (uint32_t)(ip - gl[0]->code) + 1;
	unsigned vec = (in->aux >> 12) & 7;
	uint64_t last = UINT64_MAX, v[8];

	for (uint32_t k = 0; k < n; k++) {
		struct sg_thread *t = gl[k];
		uint64_t a;

		if (!((t->r[in->guard] ^ in->gneg) & 1))
			continue;
		a = ea(t, in);
		if (a == last) {
			for (unsigned j = 0; j < vec; j++)
				t->r[in->d[j]] = v[j];
			continue;
		}
		t->pc = pc;
		if (op_ld_param(t, in) != 0)
			return SG_STOP_FAULT;
		for (unsigned j = 0; j < vec; j++)
			v[j] = t->r[in->d[j]];
		last = a;
	}
	return 0;
}
SG_WOP(op_ld_param);

static int op_nop(struct sg_thread *t, const struct sg_insn *in)
{
	return 0;
}

OP(op_movpolicy)
{
	DST = A(0);
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

/* ---- cp.async ---- */

/*
 * cp.async copies at issue time: the ISA makes the data visible only after
 * cp.async.wait_group/wait_all, so a correct program cannot tell (it does not
 * read the destination, nor write the source, before the wait), and
 * commit_group/wait_group/wait_all have nothing left to wait for. Faults (an
 * out-of-bounds or misaligned source or destination) are reported at the
 * cp.async itself.
 *
 * in->s[0] destination base, in->imm its offset; s[1] source base, in->aux its
 * offset (32 bits); s[2] the src-size, or the ignore-src predicate with
 * CP_IGNORE; in->flags: copy size (4, 8, 16) | CP_* bits.
 */
#define CP_SIZE(in) ((in)->flags & 0x1f)
#define CP_DST32 0x20
#define CP_SRC32 0x40
#define CP_IGNORE 0x80

OP(op_cp_async)
{
	uint32_t n = CP_SIZE(in), have;
	uint64_t d = t->r[in->s[0]] + (uint64_t)in->imm;
	uint64_t s = t->r[in->s[1]] + (uint64_t)(int64_t)(int32_t)in->aux;
	uint8_t *dp, buf[16];
	const uint8_t *sp;

	if (in->flags & CP_DST32)
		d = (uint32_t)d;
	if (in->flags & CP_SRC32)
		s = (uint32_t)s;
	if (in->flags & CP_IGNORE)
		have = (t->r[in->s[2]] & 1) ? 0 : n;
	else
		have = (uint32_t)t->r[in->s[2]];
	if (have > n)
		return sg_fault(t, CUDA_ERROR_ILLEGAL_INSTRUCTION,
				"cp.async src-size %u larger than the copy size %u", have, n);
	dp = sg_addr(t, SG_SP_SHARED, d, n, true);
	if (dp == NULL)
		return SG_STOP_FAULT;
	if (s & (n - 1))
		return sg_fault(t, CUDA_ERROR_MISALIGNED_ADDRESS,
				"misaligned cp.async global read of %u bytes at 0x%llx", n,
				(unsigned long long)s);
	memset(buf, 0, sizeof(buf));
	if (have) { /* aligned to n, so aligned to have's alignment as sg_addr checks it */
		sp = sg_addr(t, SG_SP_GLOBAL, s, have, false);
		if (sp == NULL)
			return SG_STOP_FAULT;
		for (uint32_t i = 0; i < have; i++)
			buf[i] = __atomic_load_n(sp + i, __ATOMIC_RELAXED);
	}
	memcpy(dp, buf, n);
	return 0;
}

/* The words of an opcode after its base; 0 on success. */
static bool word_is(const char *w, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(w, s, n) == 0;
}

static int lower_cp(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		    int nops, struct sg_insn *in)
{
	const char *p = strchr(o->text, '.');
	bool async = false, ca = false, cg = false, dst_sh = false, src_gl = false, hint = false;
	bool commit = false, waitg = false, waitall = false, wrap32;
	int sp, extra;
	int64_t off;
	uint64_t size;

	for (int i = 0; p; i++) {
		const char *w = p + 1, *e = strchr(w, '.');
		size_t n = e ? (size_t)(e - w) : strlen(w);

		if (i == 0 && word_is(w, n, "async"))
			async = true;
		else if (i == 1 && word_is(w, n, "ca"))
			ca = true;
		else if (i == 1 && word_is(w, n, "cg"))
			cg = true;
		else if (i == 1 && word_is(w, n, "commit_group"))
			commit = true;
		else if (i == 1 && word_is(w, n, "wait_group"))
			waitg = true;
		else if (i == 1 && word_is(w, n, "wait_all"))
			waitall = true;
		else if (i == 2 && (word_is(w, n, "shared") || word_is(w, n, "shared::cta")))
			dst_sh = true;
		else if (i == 3 && word_is(w, n, "global"))
			src_gl = true;
		else if (i >= 4 && word_is(w, n, "L2::cache_hint"))
			hint = true;
		else if (!(i >= 4 && (word_is(w, n, "L2::64B") || word_is(w, n, "L2::128B") ||
				      word_is(w, n, "L2::256B"))))
			return sg_lower_unsupported(L, o);
		p = e;
	}
	if (!async)
		return sg_lower_unsupported(L, o);
	if (commit || waitall || waitg) { /* the copies are complete already (see above) */
		if (dst_sh || src_gl || hint || nops != (waitg ? 1 : 0) ||
		    (waitg && ops[0].kind != SG_O_IMM))
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands",
					      o->text);
		in->fn = op_nop;
		return 0;
	}
	if (!(ca || cg) || !dst_sh || !src_gl)
		return sg_lower_unsupported(L, o);
	extra = nops - 3 - (hint ? 1 : 0);
	if (extra < 0 || extra > 1 || ops[2].kind != SG_O_IMM)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
	size = (uint64_t)ops[2].i;
	if ((size != 4 && size != 8 && size != 16) || (cg && size != 16))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: copy size %llu", o->text,
				      (unsigned long long)size);
	if (sg_lower_addr(L, &ops[0], &sp, &in->s[0], &in->imm, &wrap32))
		return L->errcode;
	if (sp != SG_SP_GENERIC && sp != SG_SP_SHARED)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: destination not .shared",
				      o->text);
	in->flags = (uint8_t)(size | (wrap32 ? CP_DST32 : 0));
	if (sg_lower_addr(L, &ops[1], &sp, &in->s[1], &off, &wrap32))
		return L->errcode;
	if ((sp != SG_SP_GENERIC && sp != SG_SP_GLOBAL) || off != (int32_t)off)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: source not .global", o->text);
	in->aux = (uint32_t)(int32_t)off;
	in->flags |= wrap32 ? CP_SRC32 : 0;
	if (extra == 0) {
		in->s[2] = sg_lower_const(L, size);
	} else if (ops[3].kind == SG_O_REG && !L->narrow[ops[3].slot]) {
		/* a .pred register (src-size is a .u32): the ignore-src form */
		bool neg;

		if (sg_lower_pred(L, &ops[3], &in->s[2], &neg))
			return L->errcode;
		if (neg)
			return sg_lower_unsupported(L, o);
		in->flags |= CP_IGNORE;
	} else if (sg_lower_src(L, &ops[3], SG_U32, &in->s[2])) {
		return L->errcode;
	}
	/* the cache-policy operand, when there is one, is a hint: not read */
	in->ns = 3;
	in->fn = op_cp_async;
	return 0;
}

/* createpolicy: an L2 eviction policy for .L2::cache_hint operands, which softgpu does not
 * read; every policy is the same opaque value 0. */
static int lower_createpolicy(struct sg_lower *L, const struct sg_opc *o,
			      const struct sg_operand *ops, int nops, struct sg_insn *in)
{
	if (!strstr(o->text, ".b64") || nops < 2 || nops > 4)
		return sg_lower_unsupported(L, o);
	if (sg_lower_dst(L, &ops[0], &in->d[0]))
		return L->errcode;
	in->s[0] = sg_lower_const(L, 0);
	in->ns = 1;
	in->nd = 1;
	in->fn = op_movpolicy;
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

	if (o->base == SG_B_CP)
		return lower_cp(L, o, ops, nops, in);
	if (o->base == SG_B_CREATEPOLICY)
		return lower_createpolicy(L, o, ops, nops, in);
	if (o->base == SG_B_PREFETCH || o->base == SG_B_PREFETCHU) {
		in->fn = op_nop;
		return 0;
	}
	/* ld/st.L2::cache_hint: the last operand is a cache policy, a hint not read */
	if (nops == 3 && strstr(o->text, ".L2::cache_hint"))
		nops = 2;
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
	} else if (SPACE(in) == SG_SP_SHARED && !(in->flags & F_LOCALREL)) {
		in->fn = store ? op_st_shared : op_ld_shared;
	} else if (SPACE(in) == SG_SP_GLOBAL && !(in->flags & F_LOCALREL)) {
		in->fn = store ? op_st_global : op_ld_global;
	}
	if (!store && SPACE(in) == SG_SP_PARAM && !(in->flags & F_LOCALREL))
		in->fn = op_ld_param;
	return 0;
}
