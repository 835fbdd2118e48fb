/* ptx_operand.c -- PTX operands and instruction statements: registers, special registers,
 * symbols, addresses, vectors, call lists; an instruction is parsed here and lowered by
 * ptx_lower.c. */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

#define syntax sg_parse_syntax
#define oom sg_parse_oom
#define expect_punct sg_parse_expect_punct
#define expect_int sg_parse_expect_int
#define tokdup sg_parse_tokdup

int sg_find_reg(struct sg_lower *L, const char *p, size_t len)
{
	int slot = sg_map_get(&L->regs, p, len);
	size_t k = len;
	uint64_t idx = 0, mul = 1;
	int r;

	if (slot >= 0)
		return slot;
	while (k > 0 && p[k - 1] >= '0' && p[k - 1] <= '9')
		k--;
	if (k == len || k == 0 || len - k > 9)
		return -1;
	for (size_t j = len; j > k; j--) {
		idx += (uint64_t)(p[j - 1] - '0') * mul;
		mul *= 10;
	}
	r = sg_map_get(&L->ranges, p, k);
	if (r < 0 || idx >= L->rng[r].count)
		return -1;
	return (int)(L->rng[r].first + idx);
}

/* ---- operands ---- */

static const struct {
	const char *name;
	int id;
} sregs[] = {
	{"%tid.x", SG_SR_TID_X},
	{"%tid.y", SG_SR_TID_Y},
	{"%tid.z", SG_SR_TID_Z},
	{"%ntid.x", SG_SR_NTID_X},
	{"%ntid.y", SG_SR_NTID_Y},
	{"%ntid.z", SG_SR_NTID_Z},
	{"%ctaid.x", SG_SR_CTAID_X},
	{"%ctaid.y", SG_SR_CTAID_Y},
	{"%ctaid.z", SG_SR_CTAID_Z},
	{"%nctaid.x", SG_SR_NCTAID_X},
	{"%nctaid.y", SG_SR_NCTAID_Y},
	{"%nctaid.z", SG_SR_NCTAID_Z},
	{"%laneid", SG_SR_LANEID},
	{"%warpid", SG_SR_WARPID},
	{"%nwarpid", SG_SR_NWARPID},
	{"%smid", SG_SR_SMID},
	{"%nsmid", SG_SR_NSMID},
	{"%gridid", SG_SR_GRIDID},
	{"%lanemask_eq", SG_SR_LANEMASK_EQ},
	{"%lanemask_le", SG_SR_LANEMASK_LE},
	{"%lanemask_lt", SG_SR_LANEMASK_LT},
	{"%lanemask_ge", SG_SR_LANEMASK_GE},
	{"%lanemask_gt", SG_SR_LANEMASK_GT},
	{"%clock", SG_SR_CLOCK},
	{"%clock_hi", SG_SR_CLOCK_HI},
	{"%clock64", SG_SR_CLOCK64},
	{"%globaltimer", SG_SR_GLOBALTIMER},
	{"%globaltimer_lo", SG_SR_GLOBALTIMER_LO},
	{"%globaltimer_hi", SG_SR_GLOBALTIMER_HI},
	{"%total_smem_size", SG_SR_TOTAL_SMEM},
	{"%dynamic_smem_size", SG_SR_DYNAMIC_SMEM},
	{"%tid", SG_SR_TID},
	{"%ntid", SG_SR_NTID},
	{"%ctaid", SG_SR_CTAID},
	{"%nctaid", SG_SR_NCTAID},
};

static int find_sreg(const char *p, size_t len)
{
	for (size_t i = 0; i < sizeof(sregs) / sizeof(sregs[0]); i++)
		if (strlen(sregs[i].name) == len && memcmp(sregs[i].name, p, len) == 0)
			return sregs[i].id;
	if (len == 8 && memcmp(p, "%envreg1", 8) == 0)
		return SG_SR_ENVREG1;
	if (len == 8 && memcmp(p, "%envreg2", 8) == 0)
		return SG_SR_ENVREG2;
	if (len > 7 && memcmp(p, "%envreg", 7) == 0)
		return SG_SR_ENVREG;
	if (len == 4 && memcmp(p, "%pm", 3) == 0 && p[3] >= '0' && p[3] <= '7')
		return SG_SR_PM;
	return 0;
}

static void free_operand(struct sg_operand *o)
{
	for (int i = 0; i < o->nvec; i++)
		free_operand(&o->vec[i]);
	free(o->vec);
	free(o->name);
	if (o->pair) {
		free_operand(o->pair);
		free(o->pair);
	}
	memset(o, 0, sizeof(*o));
}

/* Operands nest (!, -, {}, (), a|b) this deep at most: the parser recurses on each. */
#define OPERAND_DEPTH_MAX 8

static int parse_operand(struct sg_lower *L, struct sg_operand *o, unsigned depth);

static int parse_group(struct sg_lower *L, struct sg_operand *o, int kind, char close,
		       unsigned depth)
{
	uint32_t cap = 0, n = 0;

	o->kind = kind;
	if (sg_tok_punct(sg_lex_peek(L), close)) {
		sg_lex_next(L);
		return 0;
	}
	for (;;) {
		if (sg_grow(&o->vec, &cap, n, sizeof(*o->vec)))
			return oom(L);
		o->nvec = (int)n + 1;
		if (parse_operand(L, &o->vec[n], depth + 1))
			return L->errcode;
		n++;
		sg_lex_next(L);
		if (sg_tok_punct(&L->tok, close))
			return 0;
		if (!sg_tok_punct(&L->tok, ','))
			return syntax(L, "',' in operand list");
	}
}

/* Names in operands: register, special register, variable, function or label. */
static int resolve_name(struct sg_lower *L, struct sg_operand *o, const struct sg_tok *t)
{
	int v;

	if (sg_tok_is(t, SG_TK_WORD, "_")) {
		o->kind = SG_O_SINK;
		return 0;
	}
	if (sg_tok_is(t, SG_TK_WORD, "WARP_SZ")) {
		o->kind = SG_O_IMM;
		o->i = 32;
		return 0;
	}
	v = sg_find_reg(L, t->p, t->len);
	if (v >= 0) {
		o->kind = SG_O_REG;
		o->slot = v;
		return 0;
	}
	/* a register with a lane selector or mask: %r1.b10, %r2.h01 (SIMD video instructions) */
	{
		const char *dot = memchr(t->p + 1, '.', t->len - 1);

		if (dot && (v = sg_find_reg(L, t->p, (size_t)(dot - t->p))) >= 0) {
			o->kind = SG_O_REG;
			o->slot = v;
			o->name = sg_strndup(dot, t->len - (size_t)(dot - t->p));
			return o->name ? 0 : oom(L);
		}
	}
	if (t->p[0] == '%') {
		o->sreg = find_sreg(t->p, t->len);
		if (o->sreg == 0)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "unknown register '%.*s'",
					      (int)t->len, t->p);
		o->kind = SG_O_SREG;
		return 0;
	}
	o->name = tokdup(t);
	if (o->name == NULL)
		return oom(L);
	o->var = -1;
	o->func = -1;
	o->slot = -1;
	v = sg_map_get(&L->lsyms, t->p, t->len);
	if (v >= 0) {
		o->kind = SG_O_SYM;
		o->slot = v; /* index into L->ls */
		return 0;
	}
	v = sg_parse_find_var(L, t->p, t->len);
	if (v >= 0) {
		o->kind = SG_O_SYM;
		o->var = v;
		return 0;
	}
	v = sg_parse_find_func(L, t->p, t->len);
	if (v >= 0) {
		o->kind = SG_O_SYM;
		o->func = v;
		return 0;
	}
	o->kind = SG_O_LABEL;
	return 0;
}

static int parse_offset(struct sg_lower *L, int64_t *off)
{
	bool neg = false;

	while (sg_tok_punct(sg_lex_peek(L), '+') || sg_tok_punct(sg_lex_peek(L), '-')) {
		uint64_t v = 0;

		sg_lex_next(L);
		neg = L->tok.p[0] == '-';
		if (sg_tok_punct(sg_lex_peek(L), '-')) {
			sg_lex_next(L);
			neg = !neg;
		}
		if (expect_int(L, &v))
			return L->errcode;
		/* wraps as addresses do, without signed overflow */
		*off = (int64_t)((uint64_t)*off + (neg ? 0 - v : v));
	}
	return 0;
}

static int parse_operand(struct sg_lower *L, struct sg_operand *o, unsigned depth)
{
	memset(o, 0, sizeof(*o));
	if (depth > OPERAND_DEPTH_MAX)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "operand nested too deeply");
	sg_lex_next(L);
	if (sg_tok_punct(&L->tok, '!')) {
		if (parse_operand(L, o, depth + 1))
			return L->errcode;
		o->neg = !o->neg;
		return 0;
	}
	if (sg_tok_punct(&L->tok, '-')) {
		if (parse_operand(L, o, depth + 1))
			return L->errcode;
		if (o->kind == SG_O_IMM) {
			o->i = (int64_t)(0 - (uint64_t)o->i);
		} else if (o->kind == SG_O_FIMM) {
			if (o->fkind == 32)
				o->i ^= 0x80000000u;
			else if (o->fkind == 64)
				o->i ^= (int64_t)0x8000000000000000ull;
			else
				o->f = -o->f;
		} else if (o->kind == SG_O_REG && !o->minus) {
			o->minus = true; /* sg_lower_src refuses it; vmad reads it */
		} else {
			return syntax(L, "a number or register after '-'");
		}
		return 0;
	}
	if (L->tok.kind == SG_TK_INT) {
		o->kind = SG_O_IMM;
		o->i = (int64_t)L->tok.i;
	} else if (L->tok.kind == SG_TK_FLOAT) {
		o->kind = SG_O_FIMM;
		o->fkind = L->tok.fkind;
		o->i = (int64_t)L->tok.i;
		o->f = L->tok.f;
	} else if (sg_tok_punct(&L->tok, '{')) {
		return parse_group(L, o, SG_O_VEC, '}', depth);
	} else if (sg_tok_punct(&L->tok, '(')) {
		return parse_group(L, o, SG_O_LIST, ')', depth);
	} else if (sg_tok_punct(&L->tok, '[')) {
		struct sg_operand base;

		o->kind = SG_O_ADDR;
		o->base_kind = SG_O_NONE;
		sg_lex_next(L);
		if (L->tok.kind == SG_TK_INT) {
			o->off = (int64_t)L->tok.i;
		} else if (L->tok.kind == SG_TK_WORD) {
			memset(&base, 0, sizeof(base));
			if (resolve_name(L, &base, &L->tok))
				return L->errcode;
			if (base.kind == SG_O_REG) {
				o->base_kind = SG_O_REG;
				o->slot = base.slot;
			} else if (base.kind == SG_O_SYM && base.func < 0) {
				o->base_kind = SG_O_SYM;
				o->slot = base.slot;
				o->var = base.var;
				o->name = base.name;
				base.name = NULL;
			} else {
				free_operand(&base);
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "bad address '%.*s'", (int)L->tok.len,
						      L->tok.p);
			}
			free_operand(&base);
		} else {
			return syntax(L, "an address");
		}
		if (parse_offset(L, &o->off))
			return L->errcode;
		/* [handle, {coordinates}]: texture and surface instructions (ops_tex.c) */
		if (sg_tok_punct(sg_lex_peek(L), ',')) {
			struct sg_operand c;

			sg_lex_next(L);
			if (!sg_tok_punct(sg_lex_peek(L), '{'))
				return syntax(L, "'{' after ',' in an address");
			if (parse_operand(L, &c, depth + 1)) {
				free_operand(&c);
				return L->errcode;
			}
			o->vec = c.vec;
			o->nvec = c.nvec;
		}
		if (expect_punct(L, ']'))
			return L->errcode;
	} else if (L->tok.kind == SG_TK_WORD) {
		if (resolve_name(L, o, &L->tok))
			return L->errcode;
		if (o->kind == SG_O_SYM && parse_offset(L, &o->off))
			return L->errcode;
	} else {
		return syntax(L, "an operand");
	}
	if (sg_tok_punct(sg_lex_peek(L), '|')) {
		sg_lex_next(L);
		o->pair = calloc(1, sizeof(*o->pair));
		if (o->pair == NULL)
			return oom(L);
		return parse_operand(L, o->pair, depth + 1);
	}
	return 0;
}

/* ---- instructions and function bodies ---- */

/* Instruction names from the PTX ISA that softgpu does not implement. */
static const char *const known_unsupported[] = {
	"sured",
	"istypep",
	"wmma",
	"mma",
	"ldmatrix",
	"stmatrix",
	"movmatrix",
	"cp",
	"mbarrier",
	"griddepcontrol",
	"elect",
	"multimem",
	"tensormap",
	"setmaxnreg",
	"stackrestore",
	"stacksave",
	"alloca",
	"getctarank",
	"mapa",
	"clusterlaunchcontrol",
	"tcgen05",
	"wgmma",
	"discard",
	"applypriority",
	"createpolicy",
	"cvt.pack",
	"vabsdiff",
	"vadd",
	"vsub",
	"vmin",
	"vmax",
	"vshl",
	"vshr",
	"vmad",
	"vset",
	"vset2",
	"vset4",
	"brx",
	"ldu.global.v8",
	"st.async",
	"red.async",
	"bar.cta",
	"barrier.cluster",
	"prefetch.tensormap",
	"ld.global.nc.L2",
	"isspacep.shared::cluster",
};

int sg_parse_insn(struct sg_lower *L)
{
	struct sg_operand ops[16];
	int nops = 0;
	uint32_t guard = SG_SLOT_TRUE;
	bool gneg = false;
	struct sg_opc o;
	int r = 0;

	L->insn_line = L->tok.line;
	if (sg_tok_punct(&L->tok, '@')) {
		sg_lex_next(L);
		if (sg_tok_punct(&L->tok, '!')) {
			gneg = true;
			sg_lex_next(L);
		}
		int s = L->tok.kind == SG_TK_WORD ? sg_find_reg(L, L->tok.p, L->tok.len) : -1;

		if (s < 0)
			return syntax(L, "a predicate register");
		guard = (uint32_t)s;
		sg_lex_next(L);
	}
	if (L->tok.kind != SG_TK_WORD)
		return syntax(L, "an instruction");
	if (sg_opc_parse(L, L->tok.p, L->tok.len, &o)) {
		size_t n = 0;

		while (n < L->tok.len && L->tok.p[n] != '.')
			n++;
		for (size_t i = 0; i < sizeof(known_unsupported) / sizeof(known_unsupported[0]);
		     i++) {
			size_t k = strlen(known_unsupported[i]);

			if ((k == n && memcmp(known_unsupported[i], L->tok.p, n) == 0) ||
			    (k <= L->tok.len && memcmp(known_unsupported[i], L->tok.p, k) == 0 &&
			     strchr(known_unsupported[i], '.')))
				return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
						      "unsupported instruction '%.*s'",
						      (int)L->tok.len, L->tok.p);
		}
		if (sg_opc_parse(L, L->tok.p, n, &o) == 0)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "unsupported instruction '%.*s'", (int)L->tok.len,
					      L->tok.p);
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "unknown instruction '%.*s'",
				      (int)L->tok.len, L->tok.p);
	}
	if (!sg_tok_punct(sg_lex_peek(L), ';')) {
		for (;;) {
			if (nops == 16) {
				r = sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "too many operands");
				goto out;
			}
			r = parse_operand(L, &ops[nops], 0);
			nops++;
			if (r)
				goto out;
			sg_lex_next(L);
			if (sg_tok_punct(&L->tok, ';'))
				break;
			if (!sg_tok_punct(&L->tok, ',')) {
				r = syntax(L, "',' or ';'");
				goto out;
			}
		}
	} else {
		sg_lex_next(L);
	}
	r = sg_lower_insn(L, guard, gneg, &o, ops, nops);
out:
	for (int i = 0; i < nops; i++)
		free_operand(&ops[i]);
	L->insn_line = 0;
	return r;
}
