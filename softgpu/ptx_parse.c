/* ptx_parse.c -- PTX module structure: directives, variables, functions, statements. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

#define syntax sg_parse_syntax
#define oom sg_parse_oom
#define expect_punct sg_parse_expect_punct
#define expect_int sg_parse_expect_int
#define tokdup sg_parse_tokdup

/* No variable, and no module's .global/.const block, is larger (sizes stay far from wrapping). */
#define VAR_MAX (1ull << 40)
/* Braces nest this deep at most in an initializer (the parser recurses on each). */
#define INIT_DEPTH_MAX 32

/*
 * A recursive-descent parser over ptx_lex.c's tokens. Declarations build the
 * struct sg_prog directly; each instruction is parsed into operands and handed
 * to ptx_lower.c, which appends lowered instructions to the current function.
 * The first error stops everything: it is recorded with its line in L->err.
 */

int sg_lower_error(struct sg_lower *L, int cuerr, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (L->errcode)
		return L->errcode;
	L->errcode = cuerr;
	if (L->err && L->errlen) {
		if (L->ntexts > 1)
			n = snprintf(L->err, L->errlen, "%s, line %u: ", L->scopes[L->text].name,
				     L->insn_line ? L->insn_line : L->tok.line);
		else
			n = snprintf(L->err, L->errlen,
				     "line %u: ", L->insn_line ? L->insn_line : L->tok.line);
		if (n < 0 || (size_t)n >= L->errlen)
			return cuerr;
		va_start(ap, fmt);
		vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return cuerr;
}

int sg_parse_syntax(struct sg_lower *L, const char *what)
{
	const struct sg_tok *t = &L->tok;

	L->insn_line = t->line;
	if (t->kind == SG_TK_EOF)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "expected %s, found end of input",
				      what);
	return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "expected %s, found '%.*s'", what,
			      (int)(t->len > 40 ? 40 : t->len), t->p);
}

int sg_parse_oom(struct sg_lower *L)
{
	return sg_lower_error(L, CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
}

int sg_parse_expect_punct(struct sg_lower *L, char c)
{
	char what[4] = {'\'', c, '\'', 0};

	sg_lex_next(L);
	if (!sg_tok_punct(&L->tok, c))
		return syntax(L, what);
	return 0;
}

int sg_parse_expect_int(struct sg_lower *L, uint64_t *v)
{
	sg_lex_next(L);
	if (L->tok.kind != SG_TK_INT)
		return syntax(L, "a number");
	*v = L->tok.i;
	return 0;
}

int sg_parse_find_var(const struct sg_lower *L, const char *p, size_t len)
{
	int v = L->ntexts > 1 ? sg_map_get(&L->scopes[L->text].vars, p, len) : -1;

	return v >= 0 ? v : sg_map_get(&L->vars, p, len);
}

int sg_parse_find_func(const struct sg_lower *L, const char *p, size_t len)
{
	int v = L->ntexts > 1 ? sg_map_get(&L->scopes[L->text].funcs, p, len) : -1;

	return v >= 0 ? v : sg_map_get(&L->funcs, p, len);
}

/* Where a module-scope name is declared: the link's names, or its own text's. */
static struct sg_map *decl_vars(struct sg_lower *L, bool linked)
{
	return L->ntexts > 1 && !linked ? &L->scopes[L->text].vars : &L->vars;
}

static struct sg_map *decl_funcs(struct sg_lower *L, bool linked)
{
	return L->ntexts > 1 && !linked ? &L->scopes[L->text].funcs : &L->funcs;
}

static bool is_dir(const struct sg_tok *t, const char *name)
{
	return sg_tok_is(t, SG_TK_DIR, name);
}

char *sg_parse_tokdup(const struct sg_tok *t)
{
	return sg_strndup(t->p, t->len);
}

/* Skips the rest of the current source line (.loc, .file: no semicolon). */
static void skip_line(struct sg_lower *L)
{
	uint32_t line = L->tok.line;

	while (sg_lex_peek(L)->kind != SG_TK_EOF && sg_lex_peek(L)->line == line)
		sg_lex_next(L);
}

/* Skips a balanced { ... } group; the current token is the '{'. */
static int skip_braces(struct sg_lower *L)
{
	int depth = 1;

	while (depth > 0) {
		if (sg_lex_next(L) == SG_TK_EOF)
			return syntax(L, "'}'");
		if (sg_tok_punct(&L->tok, '{'))
			depth++;
		else if (sg_tok_punct(&L->tok, '}'))
			depth--;
	}
	return 0;
}

/* ---- types and declarations ---- */

static int tok_type(const struct sg_tok *t)
{
	if (t->kind != SG_TK_DIR)
		return SG_NOTYPE;
	return sg_type_from_name(t->p + 1, t->len - 1);
}

/*
 * Parses "[.space] [.align N] [.vN] .type [.ptr [.space] [.align N]]" as found
 * in variable and parameter declarations. The current token is the first of
 * them; on return it is the last. Everything after .ptr describes the pointee
 * (PTX ISA, "Kernel Function Parameter Attributes"): its .align is the
 * alignment of what the pointer points to, not of the parameter, which keeps
 * its type's natural alignment.
 */
struct decl_attrs {
	int type;
	uint32_t align;
	int vec;
	bool managed;
};

static int parse_attrs(struct sg_lower *L, struct decl_attrs *a)
{
	bool pointee = false;

	memset(a, 0, sizeof(*a));
	for (;;) {
		const struct sg_tok *t = &L->tok;
		int type = tok_type(t);

		if (type != SG_NOTYPE) {
			a->type = type;
		} else if (is_dir(t, ".align")) {
			uint64_t v = 0;

			if (expect_int(L, &v))
				return L->errcode;
			if (v == 0 || (v & (v - 1)) || v > 4096)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "bad alignment %llu", (unsigned long long)v);
			if (!pointee)
				a->align = (uint32_t)v;
		} else if (is_dir(t, ".v2") || is_dir(t, ".v4")) {
			a->vec = t->p[2] - '0';
		} else if (is_dir(t, ".attribute")) {
			/* .attribute(.managed): __managed__ variables */
			if (expect_punct(L, '('))
				return L->errcode;
			sg_lex_next(L);
			if (is_dir(&L->tok, ".managed"))
				a->managed = true;
			else if (!is_dir(&L->tok, ".unified"))
				return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
						      "unsupported attribute '%.*s'",
						      (int)L->tok.len, L->tok.p);
			if (expect_punct(L, ')'))
				return L->errcode;
		} else if (is_dir(t, ".ptr")) {
			pointee = true;
		} else if (is_dir(t, ".texref") || is_dir(t, ".samplerref") ||
			   is_dir(t, ".surfref")) {
			/* the pre-object texture API; softgpu runs texture and surface objects */
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "texture, sampler and surface references ('%.*s') "
					      "are not supported",
					      (int)t->len, t->p);
		} else if (is_dir(t, ".global") || is_dir(t, ".shared") || is_dir(t, ".local") ||
			   is_dir(t, ".const")) {
			/* the pointee's state space: informative only */
		} else {
			return syntax(L, "a type");
		}
		if (sg_lex_peek(L)->kind != SG_TK_DIR)
			break;
		sg_lex_next(L);
	}
	if (a->type == SG_NOTYPE)
		return syntax(L, "a type");
	if (a->vec)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "vector variables (.v%d) are not supported", a->vec);
	if (a->align == 0)
		a->align = sg_type_size(a->type);
	return 0;
}

/* Array dimensions after a name: [N][M] or [] (size 0, extern). */
static int parse_dims(struct sg_lower *L, uint64_t *count, bool *unsized)
{
	*count = 1;
	*unsized = false;
	while (sg_tok_punct(sg_lex_peek(L), '[')) {
		sg_lex_next(L);
		if (sg_tok_punct(sg_lex_peek(L), ']')) {
			sg_lex_next(L);
			*unsized = true;
			*count = 0;
			continue;
		}
		uint64_t n = 0;

		if (expect_int(L, &n) || expect_punct(L, ']'))
			return L->errcode;
		if (n && *count > VAR_MAX / n)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "array too large");
		*count *= n;
	}
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return a ? (v + a - 1) / a * a : v;
}

static int new_var(struct sg_lower *L, struct sg_var **out)
{
	struct sg_prog *P = L->prog;

	if (sg_grow(&P->vars, &L->cap_vars, P->nvars, sizeof(*P->vars)))
		return oom(L);
	*out = &P->vars[P->nvars];
	memset(*out, 0, sizeof(**out));
	(*out)->func = -1;
	P->nvars++;
	return 0;
}

static void store_elem(uint8_t *dst, int type, const struct sg_tok *t, bool neg)
{
	unsigned size = sg_type_size(type);
	uint64_t bits;

	if (t->kind == SG_TK_FLOAT) {
		if (type == SG_F32) {
			float f = t->fkind == 32 ? 0 : (float)t->f;
			uint32_t b;

			if (t->fkind == 32) {
				b = (uint32_t)t->i;
			} else {
				if (t->fkind == 64) {
					double d;

					memcpy(&d, &t->i, 8);
					f = (float)d;
				}
				memcpy(&b, &f, 4);
			}
			bits = neg ? b ^ 0x80000000u : b;
		} else if (type == SG_F64) {
			double d = t->f;

			if (t->fkind == 64)
				memcpy(&d, &t->i, 8);
			else if (t->fkind == 32) {
				float f;
				uint32_t b = (uint32_t)t->i;

				memcpy(&f, &b, 4);
				d = f;
			}
			if (neg)
				d = -d;
			memcpy(&bits, &d, 8);
		} else {
			bits = t->i;
		}
	} else if (type == SG_F32) {
		float f = neg ? -(float)t->i : (float)t->i;
		uint32_t b;

		memcpy(&b, &f, 4);
		bits = b;
	} else if (type == SG_F64) {
		double d = neg ? -(double)t->i : (double)t->i;

		memcpy(&bits, &d, 8);
	} else {
		bits = neg ? 0 - t->i : t->i;
	}
	/* little endian: the low bytes; a .b128 element's high half stays 0 */
	memcpy(dst, &bits, size < sizeof(bits) ? size : sizeof(bits));
}

/*
 * An initializer element naming a function: its address (SG_FUNC_ADDR), the same in every
 * context, so no relocation. Such a function may be the target of any indirect call in the
 * program (sg_lower_call adds it to the callees of a function making one). Builtins are
 * known only once the module is parsed: a call through one's address faults (op_call_indirect).
 */
static int init_func_addr(struct sg_lower *L, struct sg_var *v, int fi, unsigned esz, uint64_t *idx)
{
	struct sg_func *f = &L->prog->funcs[fi];
	uint64_t a = SG_FUNC_ADDR(fi);

	if (esz != 8)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				      "function address '%s' in a %u-byte element", f->name, esz);
	memcpy(v->init + *idx * esz, &a, sizeof(a));
	/* a kernel's address is data (the device runtime's tables): no call can reach it */
	f->addr_taken = !f->is_entry;
	(*idx)++;
	return 0;
}

/* Initializer: scalar, {list}, nested {{...}}, generic(var), var[+off], a function's name. */
static int parse_init(struct sg_lower *L, int vi, int type, uint64_t *idx, uint64_t count,
		      unsigned depth)
{
	unsigned esz = sg_type_size(type);

	sg_lex_next(L);
	if (sg_tok_punct(&L->tok, '{')) {
		if (depth == INIT_DEPTH_MAX)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "initializer nested too deeply");
		if (sg_tok_punct(sg_lex_peek(L), '}')) {
			sg_lex_next(L);
			return 0;
		}
		for (;;) {
			if (parse_init(L, vi, type, idx, count, depth + 1))
				return L->errcode;
			sg_lex_next(L);
			if (sg_tok_punct(&L->tok, '}'))
				return 0;
			if (!sg_tok_punct(&L->tok, ','))
				return syntax(L, "',' or '}' in initializer");
		}
	}
	if (*idx >= count)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "too many initializers");
	struct sg_var *v = &L->prog->vars[vi];
	bool neg = false;

	if (sg_tok_punct(&L->tok, '-')) {
		neg = true;
		sg_lex_next(L);
	}
	if (L->tok.kind == SG_TK_INT || L->tok.kind == SG_TK_FLOAT) {
		store_elem(v->init + *idx * esz, type, &L->tok, neg);
	} else if (L->tok.kind == SG_TK_WORD) {
		bool generic = sg_tok_is(&L->tok, SG_TK_WORD, "generic");
		int target;
		int64_t addend = 0;

		if (generic) {
			if (expect_punct(L, '('))
				return L->errcode;
			sg_lex_next(L);
		}
		target = sg_parse_find_var(L, L->tok.p, L->tok.len);
		if (target < 0 && !generic) {
			int fi = sg_parse_find_func(L, L->tok.p, L->tok.len);

			if (fi >= 0)
				return init_func_addr(L, v, fi, esz, idx);
		}
		if (target < 0)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "initializer names '%.*s', which is not a variable",
					      (int)L->tok.len, L->tok.p);
		if (generic && expect_punct(L, ')'))
			return L->errcode;
		if (sg_tok_punct(sg_lex_peek(L), '+')) {
			uint64_t off = 0;

			sg_lex_next(L);
			if (expect_int(L, &off))
				return L->errcode;
			addend = (int64_t)off;
		}
		if (esz != 8 && esz != 4)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "address initializer in a %u-byte element", esz);
		if (sg_grow(&L->prog->dre, &L->cap_dre, L->prog->ndre, sizeof(*L->prog->dre)))
			return oom(L);
		L->prog->dre[L->prog->ndre++] = (struct sg_dreloc){.var = vi,
								   .offset = *idx * esz,
								   .target = target,
								   .addend = addend,
								   .size = esz};
	} else {
		return syntax(L, "an initializer");
	}
	(*idx)++;
	return 0;
}

static uint32_t new_shared_offset(struct sg_lower *L, uint64_t size, uint32_t align)
{
	struct sg_prog *P = L->prog;
	uint32_t off = (uint32_t)align_up(P->shared_size, align);

	P->shared_size = off + (uint32_t)size;
	if (align > P->shared_align)
		P->shared_align = align;
	return off;
}

static int note_shared_use(struct sg_lower *L, int var)
{
	for (uint32_t i = 0; i < L->nshared_used; i++)
		if (L->shared_used[i] == var)
			return 0;
	if (sg_grow(&L->shared_used, &L->cap_shared_used, L->nshared_used, sizeof(int)))
		return oom(L);
	L->shared_used[L->nshared_used++] = var;
	return 0;
}

static int add_lsym(struct sg_lower *L, const char *name, size_t len, struct sg_lsym s)
{
	if (sg_grow(&L->ls, &L->cap_ls, L->nls, sizeof(*L->ls)))
		return oom(L);
	L->ls[L->nls] = s;
	if (sg_map_put(&L->lsyms, name, len, (int)L->nls))
		return oom(L);
	L->nls++;
	return 0;
}

/* The function-scope .shared variable `name` of the function being lowered, or -1. */
static int func_shared_var(struct sg_lower *L, const struct sg_tok *name)
{
	const struct sg_prog *P = L->prog;

	for (uint32_t i = 0; i < P->nvars; i++)
		if (P->vars[i].func == L->fn_index && P->vars[i].space == SG_SP_SHARED &&
		    strlen(P->vars[i].name) == name->len &&
		    memcmp(P->vars[i].name, name->p, name->len) == 0)
			return (int)i;
	return -1;
}

/*
 * A variable declaration; the current token is the state-space directive.
 * In a function, .shared becomes a module-wide shared variable used by this
 * function, .local a slot in the function's local frame, .param a slot in its
 * parameter frame.
 */
static int parse_var(struct sg_lower *L, int space, bool is_extern, bool visible, bool weak,
		     bool in_func)
{
	struct decl_attrs a;

	sg_lex_next(L);
	if (parse_attrs(L, &a))
		return L->errcode;
	for (;;) {
		struct sg_tok name;
		uint64_t count, size;
		bool unsized;

		sg_lex_next(L);
		if (L->tok.kind != SG_TK_WORD)
			return syntax(L, "a variable name");
		name = L->tok;
		if (parse_dims(L, &count, &unsized))
			return L->errcode;
		size = count * sg_type_size(a.type);
		if (size > VAR_MAX)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'%.*s' is too large",
					      (int)name.len, name.p);
		if (in_func && (space == SG_SP_LOCAL || space == SG_SP_PARAM)) {
			struct sg_lsym s = {.space = space == SG_SP_LOCAL ? SG_SP_LOCAL
									  : SG_SP_FPARAM,
					    .var = -1,
					    .size = (uint32_t)size,
					    .type = a.type};

			uint32_t *total =
				space == SG_SP_LOCAL ? &L->fn->local_size : &L->frame_size;

			if (size > (1u << 24) || align_up(*total, a.align) + size > UINT32_MAX)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "'%.*s' is too large", (int)name.len, name.p);
			if (space == SG_SP_LOCAL) {
				s.offset = (uint32_t)align_up(L->fn->local_size, a.align);
				L->fn->local_size = s.offset + (uint32_t)size;
			} else {
				s.offset = (uint32_t)align_up(L->frame_size, a.align);
				L->frame_size = s.offset + (uint32_t)size;
			}
			if (add_lsym(L, name.p, name.len, s))
				return L->errcode;
		} else if (in_func && space == SG_SP_SHARED && L->relower) {
			/* made when the module loaded (scan_body); now only named here */
			int vi = func_shared_var(L, &name);

			if (vi < 0)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "'%.*s' was not seen when the module loaded",
						      (int)name.len, name.p);
			if (note_shared_use(L, vi) ||
			    add_lsym(L, name.p, name.len,
				     (struct sg_lsym){.space = SG_SP_SHARED, .var = vi}))
				return L->errcode;
			if (sg_tok_punct(sg_lex_peek(L), '='))
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "initializer on a .shared variable");
		} else {
			struct sg_var *v = NULL;
			bool dropped = false;
			int vi, prev;

			if (space == SG_SP_LOCAL || space == SG_SP_PARAM)
				return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
						      "module-scope .local/.param variables");
			/* a link joins functions only: an .extern variable (but each text's
			 * view of dynamic shared memory) would silently be a second one */
			if (!in_func && L->ntexts > 1 && is_extern &&
			    !(space == SG_SP_SHARED && unsized))
				return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
						      ".extern variable '%.*s' (softgpu's linker "
						      "resolves functions only)",
						      (int)name.len, name.p);
			if (!in_func && L->ntexts > 1 && visible && space != SG_SP_SHARED &&
			    (prev = sg_map_get(&L->vars, name.p, name.len)) >= 0) {
				/* two .weak definitions: the first is kept, as a linker keeps one
				 * (this one is parsed into storage nothing names) */
				if (!weak || !L->prog->vars[prev].weak)
					return sg_lower_error(
						L, CUDA_ERROR_INVALID_PTX,
						"'%.*s' is defined in two link inputs",
						(int)name.len, name.p);
				dropped = true;
			}
			if (new_var(L, &v))
				return L->errcode;
			vi = (int)L->prog->nvars - 1;
			v->name = tokdup(&name);
			v->space = space;
			v->type = a.type;
			v->align = a.align;
			v->size = size;
			v->is_extern = is_extern;
			v->visible = visible;
			v->managed = a.managed;
			v->weak = weak;
			if (a.managed)
				L->prog->has_managed = true;
			v->func = in_func ? L->fn_index : -1;
			if (v->name == NULL)
				return oom(L);
			if (space == SG_SP_SHARED) {
				if (unsized) {
					v->dynamic = true;
					L->prog->uses_dynamic_shared = true;
				} else {
					if (align_up(L->prog->shared_size, a.align) + size >
					    UINT32_MAX)
						return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
								      "'%s' is too large", v->name);
					v->offset = new_shared_offset(L, size, a.align);
				}
				if (in_func && note_shared_use(L, vi))
					return L->errcode;
			} else {
				struct sg_prog *P = L->prog;

				if (unsized || (is_extern && size == 0))
					return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
							      "extern variable '%s' (softgpu links "
							      "functions only)",
							      v->name);
				v->offset = align_up(P->global_size, a.align);
				if (v->offset + size > VAR_MAX)
					return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
							      "'%s' is too large", v->name);
				P->global_size = v->offset + size;
				if (a.align > P->global_align)
					P->global_align = a.align;
			}
			if (in_func) {
				struct sg_lsym s = {.space = SG_SP_SHARED, .var = vi};

				if (space != SG_SP_SHARED)
					return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
							      "function-scope .global/.const");
				if (add_lsym(L, name.p, name.len, s))
					return L->errcode;
			} else if (!dropped &&
				   sg_map_put(decl_vars(L, visible && space != SG_SP_SHARED),
					      name.p, name.len, vi)) {
				return oom(L);
			}
			if (sg_tok_punct(sg_lex_peek(L), '=')) {
				uint64_t idx = 0;

				sg_lex_next(L);
				if (space != SG_SP_GLOBAL && space != SG_SP_CONST)
					return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
							      "initializer on a .shared variable");
				v->init = calloc(1, size ? size : 1);
				if (v->init == NULL)
					return oom(L);
				if (parse_init(L, vi, a.type, &idx, count, 0))
					return L->errcode;
			}
		}
		sg_lex_next(L);
		if (sg_tok_punct(&L->tok, ';'))
			return 0;
		if (!sg_tok_punct(&L->tok, ','))
			return syntax(L, "';'");
	}
}

/* ---- registers ---- */

static int declare_reg(struct sg_lower *L, const char *name, size_t len, bool narrow)
{
	uint32_t slot = sg_lower_new_slots(L, 1);

	if (slot == UINT32_MAX || sg_map_put(&L->regs, name, len, (int)slot))
		return oom(L);
	L->narrow[slot] = narrow;
	return 0;
}

/* .reg .type %r<N>; or .reg .type a, b, c; */
static int parse_reg(struct sg_lower *L)
{
	struct decl_attrs a;
	bool narrow;

	sg_lex_next(L);
	if (parse_attrs(L, &a))
		return L->errcode;
	narrow = a.type != SG_PRED && sg_type_size(a.type) - 1 < 4; /* 1 to 4 bytes */
	for (;;) {
		struct sg_tok name;

		sg_lex_next(L);
		if (L->tok.kind != SG_TK_WORD)
			return syntax(L, "a register name");
		name = L->tok;
		if (sg_tok_punct(sg_lex_peek(L), '<')) {
			uint64_t n = 0;
			uint32_t first;

			sg_lex_next(L);
			if (expect_int(L, &n) || expect_punct(L, '>'))
				return L->errcode;
			if (n > (1u << 20))
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "too many registers");
			first = sg_lower_new_slots(L, (uint32_t)n);
			if (first == UINT32_MAX)
				return oom(L);
			if (sg_grow(&L->rng, &L->cap_rng, L->nrng, sizeof(*L->rng)))
				return oom(L);
			memset(L->narrow + first, narrow, (size_t)n);
			L->rng[L->nrng] = (struct sg_range){.first = first, .count = (uint32_t)n};
			if (sg_map_put(&L->ranges, name.p, name.len, (int)L->nrng))
				return oom(L);
			L->nrng++;
		} else if (declare_reg(L, name.p, name.len, narrow)) {
			return L->errcode;
		}
		sg_lex_next(L);
		if (sg_tok_punct(&L->tok, ';'))
			return 0;
		if (!sg_tok_punct(&L->tok, ','))
			return syntax(L, "';'");
	}
}

static int parse_body(struct sg_lower *L)
{
	int depth = 1;

	for (;;) {
		const struct sg_tok *t;

		sg_lex_next(L);
		t = &L->tok;
		if (t->kind == SG_TK_EOF)
			return syntax(L, "'}'");
		if (sg_tok_punct(t, '}')) {
			if (--depth == 0)
				return 0;
		} else if (sg_tok_punct(t, '{')) {
			depth++;
		} else if (is_dir(t, ".reg")) {
			if (parse_reg(L))
				return L->errcode;
		} else if (is_dir(t, ".local")) {
			if (parse_var(L, SG_SP_LOCAL, false, false, false, true))
				return L->errcode;
		} else if (is_dir(t, ".shared")) {
			if (parse_var(L, SG_SP_SHARED, false, false, false, true))
				return L->errcode;
		} else if (is_dir(t, ".param")) {
			if (parse_var(L, SG_SP_PARAM, false, false, false, true))
				return L->errcode;
		} else if (is_dir(t, ".loc") || is_dir(t, ".file")) {
			skip_line(L);
		} else if (is_dir(t, ".pragma")) {
			while (sg_lex_next(L) != SG_TK_EOF && !sg_tok_punct(&L->tok, ';'))
				;
		} else if (t->kind == SG_TK_DIR) {
			L->insn_line = t->line;
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "unsupported directive '%.*s' in a function body",
					      (int)t->len, t->p);
		} else if (t->kind == SG_TK_WORD && sg_tok_punct(sg_lex_peek(L), ':')) {
			struct sg_tok name = *t;

			sg_lex_next(L);
			if (is_dir(sg_lex_peek(L), ".callprototype")) {
				while (sg_lex_next(L) != SG_TK_EOF && !sg_tok_punct(&L->tok, ';'))
					;
				continue;
			}
			if (sg_map_get(&L->labels, name.p, name.len) >= 0) {
				L->insn_line = name.line;
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "label '%.*s' defined twice", (int)name.len,
						      name.p);
			}
			if (sg_map_put(&L->labels, name.p, name.len, (int)L->ncode))
				return oom(L);
		} else {
			if (sg_parse_insn(L))
				return L->errcode;
		}
	}
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.';
}

/*
 * Loading a module does not lower its functions: a body is only scanned for its
 * end (braces, outside comments and strings) and for its .shared declarations,
 * which are laid out with the module's other shared variables now, so that
 * every address is fixed before any function is lowered. The lexer position is
 * just after the body's '{'; on return L->tok is its '}'.
 */
static int scan_body(struct sg_lower *L)
{
	const char *s = L->src;
	size_t i = L->pos;
	uint32_t line = L->line;
	int depth = 1;
	bool start = true; /* at the start of a statement */

	L->have_ahead = false;
	for (;;) {
		char c = s[i];

		if (c == 0) {
			L->pos = i;
			L->line = line;
			sg_lex_next(L);
			return syntax(L, "'}'");
		}
		if (c == '\n') {
			line++;
			i++;
			start = true;
		} else if (c == '/' && s[i + 1] == '/') {
			while (s[i] && s[i] != '\n')
				i++;
		} else if (c == '/' && s[i + 1] == '*') {
			for (i += 2; s[i] && !(s[i] == '*' && s[i + 1] == '/'); i++)
				if (s[i] == '\n')
					line++;
			if (s[i])
				i += 2;
		} else if (c == '"') {
			for (i++; s[i] && s[i] != '"' && s[i] != '\n'; i++)
				if (s[i] == '\\' && s[i + 1] && s[i + 1] != '\n')
					i++;
			if (s[i] == '"')
				i++;
			start = false;
		} else if (c == '{' || c == '}' || c == ';' || c == ':') {
			if (c == '{')
				depth++;
			else if (c == '}' && --depth == 0) {
				L->pos = i;
				L->line = line;
				sg_lex_next(L);
				return 0;
			}
			i++;
			start = true;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			i++;
		} else if (start && c == '.' && strncmp(s + i, ".shared", 7) == 0 &&
			   !ident_char(s[i + 7])) {
			L->pos = i;
			L->line = line;
			sg_lex_next(L);
			if (parse_var(L, SG_SP_SHARED, false, false, false, true))
				return L->errcode;
			i = L->pos;
			line = L->line;
			start = true;
		} else {
			i++;
			start = false;
		}
	}
}

/* (.param .type name, ...) for a function's parameters or return values. */
static int parse_params(struct sg_lower *L, struct sg_param **out, uint32_t *n)
{
	uint32_t cap = 0;

	*out = NULL;
	*n = 0;
	if (sg_tok_punct(sg_lex_peek(L), ')')) {
		sg_lex_next(L);
		return 0;
	}
	for (;;) {
		struct decl_attrs a;
		struct sg_param *p;
		uint64_t count;
		bool unsized;

		sg_lex_next(L);
		if (is_dir(&L->tok, ".reg"))
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      ".reg parameters (only .param)");
		if (!is_dir(&L->tok, ".param"))
			return syntax(L, "'.param'");
		sg_lex_next(L);
		if (parse_attrs(L, &a))
			return L->errcode;
		sg_lex_next(L);
		if (L->tok.kind != SG_TK_WORD)
			return syntax(L, "a parameter name");
		if (sg_grow(out, &cap, *n, sizeof(**out)))
			return oom(L);
		p = &(*out)[*n];
		(*n)++;
		p->name = tokdup(&L->tok);
		if (p->name == NULL)
			return oom(L);
		if (parse_dims(L, &count, &unsized))
			return L->errcode;
		if (unsized)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED, "unsized parameter '%s'",
					      p->name);
		if (count * sg_type_size(a.type) > (1u << 24))
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'%s' is too large",
					      p->name);
		p->type = a.type;
		p->size = (uint32_t)(count * sg_type_size(a.type));
		p->align = a.align;
		sg_lex_next(L);
		if (sg_tok_punct(&L->tok, ')'))
			return 0;
		if (!sg_tok_punct(&L->tok, ','))
			return syntax(L, "',' or ')'");
	}
}

static void free_params(struct sg_param *p, uint32_t n)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(p[i].name);
	free(p);
}

static void reset_func_state(struct sg_lower *L)
{
	sg_map_deinit(&L->regs);
	sg_map_deinit(&L->ranges);
	sg_map_deinit(&L->lsyms);
	sg_map_deinit(&L->labels);
	sg_map_deinit(&L->consts);
	for (uint32_t i = 0; i < L->nfix; i++)
		free(L->fix[i].label);
	free(L->rng);
	free(L->ls);
	free(L->fix);
	free(L->tmpl);
	free(L->is_const);
	free(L->narrow);
	free(L->code);
	free(L->relocs);
	for (uint32_t i = 0; L->calls && i < L->ncalls; i++) {
		free(L->calls[i].arg_off);
		free(L->calls[i].ret_off);
	}
	free(L->calls);
	free(L->shared_used);
	free(L->callees);
	L->rng = NULL;
	L->ls = NULL;
	L->fix = NULL;
	L->tmpl = NULL;
	L->is_const = NULL;
	L->narrow = NULL;
	L->code = NULL;
	L->relocs = NULL;
	L->calls = NULL;
	L->shared_used = NULL;
	L->callees = NULL;
	L->nrng = L->cap_rng = L->nls = L->cap_ls = L->nfix = L->cap_fix = 0;
	L->nslots = L->cap_slots = L->ncode = L->cap_code = L->nrelocs = L->cap_relocs = 0;
	L->ncalls = L->cap_calls = L->nshared_used = L->cap_shared_used = 0;
	L->ncallees = L->cap_callees = 0;
	L->frame_size = 0;
	L->fn = NULL;
	L->fn_index = -1;
}

static int uint_directive(struct sg_lower *L, uint32_t *v, int max)
{
	for (int i = 0; i < max; i++) {
		uint64_t x = 0;

		if (expect_int(L, &x))
			return L->errcode;
		v[i] = (uint32_t)x;
		if (!sg_tok_punct(sg_lex_peek(L), ','))
			break;
		sg_lex_next(L);
	}
	return 0;
}

/* .entry / .func; the current token is the directive. */
static int parse_func(struct sg_lower *L, bool is_entry, bool is_extern, bool visible, bool weak)
{
	struct sg_param *rets = NULL, *params = NULL;
	uint32_t nrets = 0, nparams = 0;
	struct sg_prog *P = L->prog;
	struct sg_func *f;
	struct sg_tok name;
	uint32_t line = L->tok.line;
	int fi;

	sg_lex_next(L);
	if (!is_entry && sg_tok_punct(&L->tok, '(')) {
		if (parse_params(L, &rets, &nrets))
			goto out_err;
		sg_lex_next(L);
	}
	if (L->tok.kind != SG_TK_WORD) {
		syntax(L, "a function name");
		goto out_err;
	}
	name = L->tok;
	if (sg_tok_punct(sg_lex_peek(L), '(')) {
		sg_lex_next(L);
		if (parse_params(L, &params, &nparams))
			goto out_err;
	}
	fi = sg_map_get(decl_funcs(L, visible || is_extern), name.p, name.len);
	if (fi < 0) {
		if (sg_grow(&P->funcs, &L->cap_funcs, P->nfuncs, sizeof(*P->funcs))) {
			oom(L);
			goto out_err;
		}
		fi = (int)P->nfuncs++;
		f = &P->funcs[fi];
		memset(f, 0, sizeof(*f));
		f->name = tokdup(&name);
		if (f->name == NULL ||
		    sg_map_put(decl_funcs(L, visible || is_extern), name.p, name.len, fi)) {
			oom(L);
			goto out_err;
		}
		f->line = line;
		f->text = L->text;
	} else {
		f = &P->funcs[fi];
		if (f->is_entry != is_entry || f->nparams != nparams || f->nrets != nrets) {
			sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				       "'%s' declared twice with different signatures", f->name);
			goto out_err;
		}
		free_params(f->params, f->nparams);
		free_params(f->rets, f->nrets);
	}
	f->is_entry = is_entry;
	f->is_extern = is_extern;
	f->visible = f->visible || visible;
	f->params = params;
	f->nparams = nparams;
	f->rets = rets;
	f->nrets = nrets;
	params = rets = NULL;
	nparams = nrets = 0;
	/* Parameter layout: in order, each at a multiple of its alignment. */
	{
		uint64_t off = 0;

		for (uint32_t i = 0; i < f->nparams; i++) {
			off = align_up(off, f->params[i].align);
			f->params[i].offset = (uint32_t)off;
			off += f->params[i].size;
		}
		f->param_size = (uint32_t)off;
		for (uint32_t i = 0; i < f->nrets; i++) {
			off = align_up(off, f->rets[i].align);
			f->rets[i].offset = (uint32_t)off;
			off += f->rets[i].size;
		}
		if (off > UINT32_MAX) {
			sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'%s' has too many parameters",
				       f->name);
			goto out_err;
		}
		if (is_entry && f->param_size > 32764) {
			sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				       "'%s' has %u bytes of parameters (at most 32764)", f->name,
				       f->param_size);
			goto out_err;
		}
	}
	/* performance directives, then ';' (a prototype) or a body */
	for (;;) {
		const struct sg_tok *t = sg_lex_peek(L);

		if (sg_tok_punct(t, ';')) {
			sg_lex_next(L);
			return 0;
		}
		if (sg_tok_punct(t, '{'))
			break;
		sg_lex_next(L);
		t = &L->tok;
		if (is_dir(t, ".maxntid")) {
			if (uint_directive(L, f->maxntid, 3))
				goto out_err;
		} else if (is_dir(t, ".reqntid")) {
			if (uint_directive(L, f->reqntid, 3))
				goto out_err;
		} else if (is_dir(t, ".minnctapersm")) {
			if (uint_directive(L, &f->minctas, 1))
				goto out_err;
		} else if (is_dir(t, ".maxnreg")) {
			if (uint_directive(L, &f->maxnreg, 1))
				goto out_err;
		} else if (is_dir(t, ".maxnctapersm")) {
			uint32_t ignored;

			if (uint_directive(L, &ignored, 1))
				goto out_err;
		} else if (is_dir(t, ".noreturn")) {
			/* nothing to do */
		} else if (is_dir(t, ".pragma")) {
			while (sg_lex_next(L) != SG_TK_EOF && !sg_tok_punct(&L->tok, ';'))
				;
		} else {
			sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				       "unsupported function directive '%.*s'", (int)t->len, t->p);
			goto out_err;
		}
	}
	sg_lex_next(L); /* '{' */
	if (f->defined && L->ntexts > 1 && f->weak && weak) {
		/* another input's .weak definition came first: a linker keeps one of them (nvcc
		 * writes a template or inline function used in several units into each) */
		return skip_braces(L) ? L->errcode : 0;
	}
	if (f->defined) {
		if (L->ntexts > 1 && f->text != L->text)
			sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				       "multiple definition of '%s', first defined in '%s'",
				       f->name, L->scopes[f->text].name);
		else
			sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'%s' defined twice", f->name);
		goto out_err;
	}
	if (is_extern) {
		sg_lower_error(L, CUDA_ERROR_INVALID_PTX, ".extern '%s' has a body", f->name);
		goto out_err;
	}
	reset_func_state(L);
	L->fn = f;
	L->fn_index = fi;
	f->defined = true;
	f->weak = weak;
	f->text = L->text; /* its body, and the names it uses, are this text's */
	f->body_pos = L->pos;
	f->body_line = L->line;
	if (scan_body(L))
		goto out_err;
	reset_func_state(L);
	return 0;

out_err:
	free_params(params, nparams);
	free_params(rets, nrets);
	return L->errcode ? L->errcode : CUDA_ERROR_INVALID_PTX;
}

/* Lowers one function's body (L->fn); the lexer is just after its '{'. */
static int lower_body(struct sg_lower *L)
{
	struct sg_func *f = L->fn;

	/* the function's own parameters and return values live in its frame */
	if (!f->is_entry) {
		for (uint32_t i = 0; i < f->nparams + f->nrets; i++) {
			struct sg_param *p =
				i < f->nparams ? &f->params[i] : &f->rets[i - f->nparams];
			struct sg_lsym s = {.space = SG_SP_FPARAM,
					    .var = -1,
					    .offset = p->offset,
					    .size = p->size,
					    .type = p->type};

			if (add_lsym(L, p->name, strlen(p->name), s))
				return L->errcode;
		}
		L->frame_size = f->nrets ? f->rets[f->nrets - 1].offset + f->rets[f->nrets - 1].size
					 : f->param_size;
	} else {
		for (uint32_t i = 0; i < f->nparams; i++) {
			struct sg_param *p = &f->params[i];
			struct sg_lsym s = {.space = SG_SP_PARAM,
					    .var = -1,
					    .offset = p->offset,
					    .size = p->size,
					    .type = p->type};

			if (add_lsym(L, p->name, strlen(p->name), s))
				return L->errcode;
		}
	}
	if (sg_lower_new_slots(L, SG_SLOT_FIRST) != 0) /* TRUE and SINK */
		return oom(L);
	L->tmpl[SG_SLOT_TRUE] = 1;
	L->is_const[SG_SLOT_TRUE] = true;
	if (parse_body(L) || sg_lower_finish_func(L))
		return L->errcode ? L->errcode : CUDA_ERROR_INVALID_PTX;
	return 0;
}

static int parse_version(struct sg_lower *L)
{
	sg_lex_next(L);
	if (L->tok.kind != SG_TK_FLOAT || L->tok.fkind != 0)
		return syntax(L, "a version number");
	if (!(L->tok.f < 100)) /* also keeps the conversions below in range */
		return sg_lower_error(L, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
				      "PTX ISA %g is newer than softgpu's 9.x", L->tok.f);
	L->prog->version_major = (unsigned)L->tok.f;
	L->prog->version_minor = (unsigned)((L->tok.f - (unsigned)L->tok.f) * 10 + 0.5);
	/*
	 * Every PTX ISA 9.x is taken (CUDA 13.0 writes 9.0, 13.1 writes 9.1): a newer
	 * ISA only adds instructions, and one softgpu does not interpret fails the
	 * function that uses it when that function is lowered.
	 */
	if (L->prog->version_major > 9)
		return sg_lower_error(L, CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
				      "PTX ISA %u.%u is newer than softgpu's 9.x",
				      L->prog->version_major, L->prog->version_minor);
	return 0;
}

static int parse_target(struct sg_lower *L)
{
	for (;;) {
		sg_lex_next(L);
		if (L->tok.kind != SG_TK_WORD)
			return syntax(L, "a target");
		if (L->tok.len > 3 && memcmp(L->tok.p, "sm_", 3) == 0) {
			unsigned sm = (unsigned)strtoul(L->tok.p + 3, NULL, 10);

			/*
			 * Any target (sm_120, sm_90a, sm_100f...): what softgpu runs is
			 * decided per instruction when a function is lowered.
			 */
			L->prog->target_sm = sm;
			if (sm < 10 || sm > 999)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "unknown target '%.*s'", (int)L->tok.len,
						      L->tok.p);
		} else if (!sg_tok_is(&L->tok, SG_TK_WORD, "debug") &&
			   !sg_tok_is(&L->tok, SG_TK_WORD, "texmode_independent") &&
			   !sg_tok_is(&L->tok, SG_TK_WORD, "texmode_unified")) {
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "unsupported target '%.*s'", (int)L->tok.len,
					      L->tok.p);
		}
		if (!sg_tok_punct(sg_lex_peek(L), ','))
			return 0;
		sg_lex_next(L);
	}
}

static int parse_module(struct sg_lower *L)
{
	bool seen_version = false;

	for (;;) {
		bool is_extern = false, visible = false, weak = false;
		const struct sg_tok *t;

		sg_lex_next(L);
		t = &L->tok;
		if (t->kind == SG_TK_EOF)
			break;
		if (is_dir(t, ".version")) {
			if (parse_version(L))
				return L->errcode;
			seen_version = true;
			continue;
		}
		if (!seen_version)
			return syntax(L, "'.version'");
		if (is_dir(t, ".target")) {
			if (parse_target(L))
				return L->errcode;
			continue;
		}
		if (is_dir(t, ".address_size")) {
			uint64_t v = 0;

			if (expect_int(L, &v))
				return L->errcode;
			if (v != 64)
				return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
						      ".address_size %llu (only 64)",
						      (unsigned long long)v);
			continue;
		}
		if (is_dir(t, ".file") || is_dir(t, ".loc")) {
			skip_line(L);
			continue;
		}
		if (is_dir(t, ".section")) {
			while (sg_lex_next(L) != SG_TK_EOF && !sg_tok_punct(&L->tok, '{'))
				;
			if (skip_braces(L))
				return L->errcode;
			continue;
		}
		if (is_dir(t, ".pragma")) {
			while (sg_lex_next(L) != SG_TK_EOF && !sg_tok_punct(&L->tok, ';'))
				;
			continue;
		}
		while (is_dir(t, ".visible") || is_dir(t, ".extern") || is_dir(t, ".weak") ||
		       is_dir(t, ".common")) {
			if (is_dir(t, ".extern"))
				is_extern = true;
			else
				visible = true;
			if (is_dir(t, ".weak"))
				weak = true;
			sg_lex_next(L);
		}
		if (is_dir(t, ".entry") || is_dir(t, ".func")) {
			if (parse_func(L, is_dir(t, ".entry"), is_extern, visible, weak))
				return L->errcode;
		} else if (is_dir(t, ".global")) {
			if (parse_var(L, SG_SP_GLOBAL, is_extern, visible, weak, false))
				return L->errcode;
		} else if (is_dir(t, ".const")) {
			if (parse_var(L, SG_SP_CONST, is_extern, visible, weak, false))
				return L->errcode;
		} else if (is_dir(t, ".shared")) {
			if (parse_var(L, SG_SP_SHARED, is_extern, visible, weak, false))
				return L->errcode;
		} else if (t->kind == SG_TK_DIR) {
			L->insn_line = t->line;
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "unsupported directive '%.*s'", (int)t->len, t->p);
		} else {
			return syntax(L, "a directive");
		}
	}
	if (!seen_version)
		return syntax(L, "'.version'");
	return 0;
}

static void lower_state_free(struct sg_lower *L);

void sg_prog_free(struct sg_prog *p)
{
	if (p == NULL)
		return;
	for (uint32_t i = 0; i < p->nvars; i++) {
		free(p->vars[i].name);
		free(p->vars[i].init);
	}
	free(p->vars);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		struct sg_func *f = &p->funcs[i];

		free(f->name);
		free_params(f->params, f->nparams);
		free_params(f->rets, f->nrets);
		free(f->tmpl);
		free(f->relocs);
		free(f->code);
		for (uint32_t c = 0; c < f->ncalls; c++) {
			free(f->calls[c].arg_off);
			free(f->calls[c].ret_off);
		}
		free(f->calls);
	}
	for (uint32_t i = 0; i < p->nfuncs; i++)
		free(p->funcs[i].lmsg);
	free(p->funcs);
	free(p->dre);
	lower_state_free(p->lz);
	free(p);
}

int sg_prog_find_func(const struct sg_prog *p, const char *name)
{
	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (strcmp(p->funcs[i].name, name) == 0)
			return (int)i;
	return -1;
}

int sg_prog_find_var(const struct sg_prog *p, const char *name)
{
	for (uint32_t i = 0; i < p->nvars; i++)
		if (p->vars[i].func < 0 && strcmp(p->vars[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void lower_state_free(struct sg_lower *L)
{
	if (L == NULL)
		return;
	reset_func_state(L);
	sg_map_deinit(&L->vars);
	sg_map_deinit(&L->funcs);
	for (uint32_t i = 0; L->scopes && i < L->ntexts; i++) {
		sg_map_deinit(&L->scopes[i].vars);
		sg_map_deinit(&L->scopes[i].funcs);
		free(L->scopes[i].name);
	}
	free(L->scopes);
	if (L->fx) {
		for (uint32_t i = 0; i < L->cap_fx; i++) {
			free(L->fx[i].shared_used);
			free(L->fx[i].callees);
		}
		free(L->fx);
	}
	free((char *)L->src);
	pthread_mutex_destroy(&L->lock);
	free(L);
}

/*
 * Loading parses the module's structure: directives, variables (with their
 * addresses), every function's signature and the extent of its body. The
 * parser's state (the source, the name maps) stays with the program so that
 * sg_prog_lower can lower each function when it is first used.
 */
static int parse_texts(const char *const *texts, const char *const *names, uint32_t n, bool link,
		       struct sg_prog **out, char *err, size_t errlen);

int sg_ptx_load(const char *text, struct sg_prog **out, char *err, size_t errlen)
{
	return parse_texts(&text, NULL, 1, false, out, err, errlen);
}

int sg_ptx_link(const char *const *texts, const char *const *names, uint32_t n,
		struct sg_prog **out, char *err, size_t errlen)
{
	return parse_texts(texts, names, n, true, out, err, errlen);
}

/*
 * After every input of a link is parsed: each .extern function some input defines (or is a
 * builtin). A lone module keeps such a call, and fails only the kernel that makes it.
 */
static int check_resolved(struct sg_lower *L, const char *const *names)
{
	struct sg_prog *P = L->prog;

	for (uint32_t i = 0; i < P->nfuncs; i++) {
		const struct sg_func *f = &P->funcs[i];

		if (f->defined || f->builtin || !f->is_extern)
			continue;
		L->text = f->text;
		L->insn_line = f->line;
		if (L->ntexts > 1) /* the message starts with the input's name */
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "undefined reference to '%s'", f->name);
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				      "undefined reference to '%s' in '%s'", f->name,
				      names && names[0] ? names[0] : "input");
	}
	return 0;
}

/* The texts one after another, each with its NUL (the lexer's end of input). */
static char *join_texts(const char *const *texts, uint32_t n, size_t *starts)
{
	size_t total = 0;
	char *src;

	for (uint32_t i = 0; i < n; i++)
		total += strlen(texts[i]) + 1;
	src = malloc(total ? total : 1);
	if (src == NULL)
		return NULL;
	total = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(texts[i]) + 1;

		starts[i] = total;
		memcpy(src + total, texts[i], len);
		total += len;
	}
	return src;
}

static int parse_texts(const char *const *texts, const char *const *names, uint32_t n, bool link,
		       struct sg_prog **out, char *err, size_t errlen)
{
	struct sg_lower *L = calloc(1, sizeof(*L));
	struct sg_prog *P = calloc(1, sizeof(*P));
	size_t *starts = calloc(n ? n : 1, sizeof(*starts));
	char *src = NULL;
	int r = 0;

	if (err && errlen)
		err[0] = 0;
	if (n == 0 || texts == NULL) {
		free(L);
		free(P);
		free(starts);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (L && P && starts)
		src = join_texts(texts, n, starts);
	if (L == NULL || P == NULL || src == NULL) {
		free(L);
		free(P);
		free(starts);
		free(src);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&L->lock, NULL);
	L->err = err;
	L->errlen = errlen;
	L->fn_index = -1;
	L->prog = P;
	P->lz = L;
	P->shared_align = 16;
	P->global_align = 16;
	sg_lex_init(L, src);
	if (n > 1) {
		L->scopes = calloc(n, sizeof(*L->scopes));
		if (L->scopes == NULL)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else
			L->ntexts = n; /* so that the scopes are freed with the rest */
		for (uint32_t i = 0; r == 0 && i < n; i++) {
			L->scopes[i].name =
				sg_strdup_printf("%s", names && names[i] ? names[i] : "input");
			if (L->scopes[i].name == NULL)
				r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	for (uint32_t i = 0; r == 0 && i < n; i++) {
		L->text = i;
		L->pos = starts[i];
		L->line = 1;
		L->have_ahead = false;
		memset(&L->tok, 0, sizeof(L->tok));
		L->insn_line = 0;
		r = parse_module(L);
	}
	if (r == 0)
		r = sg_lower_finish_prog(L);
	if (r == 0 && link)
		r = check_resolved(L, names);
	reset_func_state(L);
	L->err = NULL;
	L->errlen = 0;
	free(starts);
	if (r) {
		sg_prog_free(P);
		return r;
	}
	*out = P;
	return 0;
}

/* Lowers function fi (defined, not lowered yet); a failure is kept on it. */
static void lower_one(struct sg_lower *L, int fi)
{
	struct sg_func *f = &L->prog->funcs[fi];
	char err[256] = "";
	int r;

	L->err = err;
	L->errlen = sizeof(err);
	L->errcode = 0;
	L->insn_line = 0;
	reset_func_state(L);
	L->fn = f;
	L->fn_index = fi;
	L->text = f->text;
	L->pos = f->body_pos;
	L->line = f->body_line;
	L->have_ahead = false;
	L->relower = true;
	r = lower_body(L);
	if (r == 0)
		r = sg_lower_finish_lowered(L, fi);
	reset_func_state(L);
	L->relower = false;
	L->err = NULL;
	L->errlen = 0;
	if (r) {
		/* a partial lowering leaves nothing behind on the function */
		free(f->code);
		free(f->tmpl);
		free(f->relocs);
		for (uint32_t c = 0; f->calls && c < f->ncalls; c++) {
			free(f->calls[c].arg_off);
			free(f->calls[c].ret_off);
		}
		free(f->calls);
		f->code = NULL;
		f->tmpl = NULL;
		f->relocs = NULL;
		f->calls = NULL;
		f->ncode = f->nslots = f->nrelocs = f->ncalls = 0;
		f->lerr = r;
		f->lmsg = sg_strdup_printf("'%s': %s", f->name, err);
		__atomic_store_n(&f->lstate, SG_FN_FAILED, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&f->lstate, SG_FN_LOWERED, __ATOMIC_RELEASE);
	}
}

/*
 * An entry with every function it reaches, lowered once: the first caller does
 * the work under the program's lock, everyone sees the result. A function that
 * fails to lower fails every entry that reaches it, with its message.
 */
int sg_prog_lower(struct sg_prog *P, int fi, const char **msg)
{
	struct sg_func *e = &P->funcs[fi];
	struct sg_lower *L = P->lz;
	uint8_t *seen = NULL;
	int *stack = NULL;
	uint32_t n = 0;
	int st = __atomic_load_n(&e->lstate, __ATOMIC_ACQUIRE);

	if (st == SG_FN_READY || st == SG_FN_FAILED)
		goto out;
	pthread_mutex_lock(&L->lock);
	st = e->lstate;
	if (st == SG_FN_READY || st == SG_FN_FAILED)
		goto out_unlock;
	seen = calloc(P->nfuncs + 1, 1);
	stack = calloc(P->nfuncs + 1, sizeof(*stack));
	if (seen == NULL || stack == NULL) {
		free(seen);
		free(stack);
		pthread_mutex_unlock(&L->lock);
		if (msg)
			*msg = "out of memory";
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	seen[fi] = 1;
	stack[n++] = fi;
	while (n > 0) {
		int g = stack[--n];
		struct sg_func *gf = &P->funcs[g];

		if (gf->defined && gf->lstate == SG_FN_UNLOWERED)
			lower_one(L, g);
		if (gf->lstate == SG_FN_FAILED) {
			if (g != fi) {
				e->lerr = gf->lerr;
				e->lmsg = sg_strdup_printf("'%s' calls %s", e->name,
							   gf->lmsg ? gf->lmsg : "?");
				__atomic_store_n(&e->lstate, SG_FN_FAILED, __ATOMIC_RELEASE);
			}
			break;
		}
		for (uint32_t k = 0; (uint32_t)g < L->cap_fx && k < L->fx[g].ncallees; k++) {
			int c = L->fx[g].callees[k];

			if (!seen[c]) {
				seen[c] = 1;
				stack[n++] = c;
			}
		}
	}
	free(seen);
	free(stack);
	if (e->lstate != SG_FN_FAILED) {
		int r = sg_lower_finish_entry(L, fi);

		if (r) {
			e->lerr = r;
			e->lmsg = sg_strdup_printf("'%s': out of memory", e->name);
			__atomic_store_n(&e->lstate, SG_FN_FAILED, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&e->lstate, SG_FN_READY, __ATOMIC_RELEASE);
		}
	}
out_unlock:
	pthread_mutex_unlock(&L->lock);
out:
	st = __atomic_load_n(&e->lstate, __ATOMIC_ACQUIRE);
	if (st == SG_FN_FAILED) {
		if (msg)
			*msg = e->lmsg ? e->lmsg : "lowering failed";
		return e->lerr ? e->lerr : CUDA_ERROR_INVALID_PTX;
	}
	return 0;
}
