/* ptx_lower.c -- turn parsed instructions into register-slot form; finish functions and modules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

static int oom(struct sg_lower *L)
{
	return sg_lower_error(L, CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
}

uint32_t sg_lower_new_slots(struct sg_lower *L, uint32_t n)
{
	uint32_t first = L->nslots;
	uint32_t cap = L->cap_slots;

	if (n == 0)
		return first;
	if ((uint64_t)first + n > (1u << 24))
		return UINT32_MAX;
	if (sg_grow(&L->tmpl, &cap, first + n - 1, sizeof(*L->tmpl)))
		return UINT32_MAX;
	cap = L->cap_slots;
	if (sg_grow(&L->is_const, &cap, first + n - 1, sizeof(*L->is_const)))
		return UINT32_MAX;
	cap = L->cap_slots;
	if (sg_grow(&L->narrow, &cap, first + n - 1, sizeof(*L->narrow)))
		return UINT32_MAX;
	L->cap_slots = cap;
	L->nslots += n;
	return first;
}

bool sg_lower_in_entry(const struct sg_lower *L)
{
	return L->fn && L->fn->is_entry;
}

uint32_t sg_lower_const(struct sg_lower *L, uint64_t value)
{
	char key[24];
	int n = snprintf(key, sizeof(key), "#%llx", (unsigned long long)value);
	int slot = sg_map_get(&L->consts, key, (size_t)n);
	uint32_t s;

	if (slot >= 0)
		return (uint32_t)slot;
	s = sg_lower_new_slots(L, 1);
	if (s == UINT32_MAX || sg_map_put(&L->consts, key, (size_t)n, (int)s)) {
		oom(L);
		return SG_SLOT_TRUE;
	}
	L->tmpl[s] = value;
	L->is_const[s] = true;
	return s;
}

/* A slot holding the address of variable `var` plus addend, filled by relocation. */
static uint32_t reloc_const(struct sg_lower *L, int var, int64_t addend)
{
	char key[48];
	int n = snprintf(key, sizeof(key), "@%d%+lld", var, (long long)addend);
	int slot = sg_map_get(&L->consts, key, (size_t)n);
	uint32_t s;

	if (slot >= 0)
		return (uint32_t)slot;
	s = sg_lower_new_slots(L, 1);
	if (s == UINT32_MAX || sg_map_put(&L->consts, key, (size_t)n, (int)s) ||
	    sg_grow(&L->relocs, &L->cap_relocs, L->nrelocs, sizeof(*L->relocs))) {
		oom(L);
		return SG_SLOT_TRUE;
	}
	L->is_const[s] = true;
	L->relocs[L->nrelocs++] = (struct sg_reloc){.slot = s, .var = var, .addend = addend};
	return s;
}

struct sg_insn *sg_lower_emit(struct sg_lower *L)
{
	struct sg_insn *in;

	if (sg_grow(&L->code, &L->cap_code, L->ncode, sizeof(*L->code))) {
		oom(L);
		return NULL;
	}
	in = &L->code[L->ncode++];
	memset(in, 0, sizeof(*in));
	in->guard = SG_SLOT_TRUE;
	in->line = L->insn_line;
	return in;
}

static uint32_t temp_slot(struct sg_lower *L)
{
	uint32_t s = sg_lower_new_slots(L, 1);

	if (s == UINT32_MAX) {
		oom(L);
		return SG_SLOT_SINK;
	}
	return s;
}

static int note_shared(struct sg_lower *L, int var)
{
	for (uint32_t i = 0; i < L->nshared_used; i++)
		if (L->shared_used[i] == var)
			return 0;
	if (sg_grow(&L->shared_used, &L->cap_shared_used, L->nshared_used, sizeof(int)))
		return oom(L);
	L->shared_used[L->nshared_used++] = var;
	return 0;
}

/* Encodes an immediate for an instruction operating on `type`. */
static uint64_t imm_bits(const struct sg_operand *o, int type)
{
	uint64_t bits;

	if (o->kind == SG_O_IMM) {
		if (type == SG_F32) {
			float f = (float)o->i;
			uint32_t b;

			memcpy(&b, &f, 4);
			return b;
		}
		if (type == SG_F64) {
			double d = (double)o->i;

			memcpy(&bits, &d, 8);
			return bits;
		}
		return (uint64_t)o->i;
	}
	/* floating literal */
	if (type == SG_F64) {
		double d = o->f;

		if (o->fkind == 64)
			return (uint64_t)o->i;
		if (o->fkind == 32) {
			float f;
			uint32_t b = (uint32_t)o->i;

			memcpy(&f, &b, 4);
			d = f;
		}
		memcpy(&bits, &d, 8);
		return bits;
	}
	if (type == SG_F32 || o->fkind == 0) {
		float f = (float)o->f;
		uint32_t b;

		if (o->fkind == 32)
			return (uint32_t)o->i;
		if (o->fkind == 64) {
			double d;

			memcpy(&d, &o->i, 8);
			f = (float)d;
		}
		memcpy(&b, &f, 4);
		return b;
	}
	return (uint64_t)o->i; /* 0f/0d bits used as an integer (mov.b32 %r, 0f3F800000) */
}

/* The value of a symbol used as an operand: its address in its own space. */
/* Function fi is reached from the function being lowered (sg_prog_lower lowers it too). */
static int add_callee(struct sg_lower *L, int fi)
{
	for (uint32_t k = 0; k < L->ncallees; k++)
		if (L->callees[k] == fi)
			return 0;
	if (sg_grow(&L->callees, &L->cap_callees, L->ncallees, sizeof(int)))
		return oom(L);
	L->callees[L->ncallees++] = fi;
	return 0;
}

static int sym_slot(struct sg_lower *L, const struct sg_operand *o, int64_t extra, uint32_t *slot,
		    int *space)
{
	int64_t off = (int64_t)((uint64_t)o->off + (uint64_t)extra); /* wraps, as addresses do */

	if (o->func >= 0) {
		const struct sg_func *f = &L->prog->funcs[o->func];

		/* a function's address (mov.u64 %rd, f): it may be called from here on */
		if (f->builtin || f->is_entry || off != 0)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED, "the address of '%s'",
					      o->name);
		*space = SG_SP_GENERIC;
		if (add_callee(L, o->func))
			return L->errcode;
		*slot = sg_lower_const(L, SG_FUNC_ADDR(o->func));
		return L->errcode;
	}
	if (o->var < 0 && o->slot >= 0) {
		const struct sg_lsym *ls = &L->ls[o->slot];

		*space = ls->space;
		switch (ls->space) {
		case SG_SP_SHARED:
			if (note_shared(L, ls->var))
				return L->errcode;
			*slot = reloc_const(L, ls->var, off);
			return L->errcode;
		case SG_SP_LOCAL: {
			struct sg_insn *in = sg_lower_emit(L);
			uint32_t t = temp_slot(L);

			if (in == NULL)
				return L->errcode;
			in->fn = sg_op_mov_localaddr;
			in->gneg = SG_INSN_STRAIGHT; /* it never sets a pc */
			in->d[0] = t;
			in->nd = 1;
			in->imm = (int64_t)(ls->offset + (uint64_t)off);
			*slot = t;
			return L->errcode;
		}
		default: /* PARAM, FPARAM: offsets in the parameter buffer or frame */
			*slot = sg_lower_const(L, ls->offset + (uint64_t)off);
			return L->errcode;
		}
	}
	if (o->var < 0)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "unknown symbol '%s'", o->name);
	*space = L->prog->vars[o->var].space;
	if (*space == SG_SP_SHARED && note_shared(L, o->var))
		return L->errcode;
	*slot = reloc_const(L, o->var, off);
	return L->errcode;
}

int sg_lower_src(struct sg_lower *L, const struct sg_operand *o, int type, uint32_t *slot)
{
	int space;

	if (o->neg && o->kind != SG_O_REG)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'!' on a non-register operand");
	if (o->minus)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'-' on a register operand");
	switch (o->kind) {
	case SG_O_REG:
		if (o->neg)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "'!' is only allowed on predicate operands");
		if (o->name)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "operand selector '%s' is not supported here",
					      o->name);
		*slot = (uint32_t)o->slot;
		return 0;
	case SG_O_IMM:
	case SG_O_FIMM:
		*slot = sg_lower_const(L, imm_bits(o, type));
		return L->errcode;
	case SG_O_SREG: {
		struct sg_insn *in;
		uint32_t t;
		sg_wfn w;

		if (o->sreg >= SG_SR_TID)
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "vector special registers");
		in = sg_lower_emit(L);
		t = temp_slot(L);
		if (in == NULL)
			return L->errcode;
		/* straight, with its warp-wide form, as mov's own reads are (sg_lower_insn) */
		in->fn = sg_op_mov_sreg;
		in->gneg = SG_INSN_STRAIGHT;
		if ((w = sg_warp_of(sg_op_mov_sreg)) != NULL) {
			in->wfn = w;
			in->gneg |= SG_INSN_WARP;
		}
		in->d[0] = t;
		in->nd = 1;
		in->aux = (uint32_t)o->sreg;
		*slot = t;
		return L->errcode;
	}
	case SG_O_SYM:
		return sym_slot(L, o, 0, slot, &space);
	case SG_O_LABEL:
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "unknown name '%s'", o->name);
	default:
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "unexpected operand");
	}
}

int sg_lower_dst(struct sg_lower *L, const struct sg_operand *o, uint32_t *slot)
{
	if (o->kind == SG_O_SINK) {
		*slot = SG_SLOT_SINK;
		return 0;
	}
	if (o->kind != SG_O_REG || o->neg || o->minus)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "destination is not a register");
	if (o->name)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "operand selector '%s' is not supported here", o->name);
	*slot = (uint32_t)o->slot;
	return 0;
}

int sg_lower_pred(struct sg_lower *L, const struct sg_operand *o, uint32_t *slot, bool *neg)
{
	*neg = o->neg;
	if (o->minus)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "'-' on a predicate");
	if (o->kind == SG_O_REG && o->name)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "operand selector '%s' is not supported here", o->name);
	if (o->kind == SG_O_REG) {
		*slot = (uint32_t)o->slot;
		return 0;
	}
	if (o->kind == SG_O_IMM) {
		*slot = sg_lower_const(L, o->i ? 1 : 0);
		return L->errcode;
	}
	return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "expected a predicate");
}

int sg_lower_operands(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		      int nops, int want, int stype, struct sg_insn *in)
{
	if (nops != want)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s takes %d operands", o->text,
				      want);
	if (sg_lower_dst(L, &ops[0], &in->d[0]))
		return L->errcode;
	in->nd = 1;
	for (int i = 1; i < nops; i++) {
		if (stype == SG_PRED) {
			bool neg;

			if (sg_lower_pred(L, &ops[i], &in->s[i - 1], &neg))
				return L->errcode;
			if (neg)
				return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
						      "'!' operand in %s", o->text);
		} else if (sg_lower_src(L, &ops[i], stype, &in->s[i - 1])) {
			return L->errcode;
		}
	}
	in->ns = (uint8_t)(nops - 1);
	return 0;
}

int sg_lower_addr(struct sg_lower *L, const struct sg_operand *o, int *space, uint32_t *slot,
		  int64_t *off, bool *wrap32)
{
	if (o->kind != SG_O_ADDR)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "expected an address [..]");
	if (o->nvec)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "coordinates in a memory address");
	*off = o->off;
	*space = SG_SP_GENERIC;
	*wrap32 = false;
	switch (o->base_kind) {
	case SG_O_NONE:
		*slot = sg_lower_const(L, 0);
		return L->errcode;
	case SG_O_REG:
		*slot = (uint32_t)o->slot;
		*wrap32 = L->narrow[o->slot];
		return 0;
	case SG_O_SYM:
		if (o->var < 0 && o->slot >= 0) {
			const struct sg_lsym *ls = &L->ls[o->slot];

			*space = ls->space;
			if (ls->space == SG_SP_SHARED) {
				if (note_shared(L, ls->var))
					return L->errcode;
				*slot = reloc_const(L, ls->var, 0);
				return L->errcode;
			}
			/* local, param, frame: constant offset (local: from the frame base) */
			*off = (int64_t)((uint64_t)*off + ls->offset);
			*slot = sg_lower_const(L, 0);
			if (ls->space == SG_SP_LOCAL)
				*space = SG_SP_LOCAL | 0x100;
			return L->errcode;
		}
		*space = L->prog->vars[o->var].space;
		if (*space == SG_SP_SHARED && note_shared(L, o->var))
			return L->errcode;
		*slot = reloc_const(L, o->var, 0);
		return L->errcode;
	default:
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad address");
	}
}

int sg_lower_label(struct sg_lower *L, const struct sg_operand *o, struct sg_insn *in)
{
	if (o->kind != SG_O_LABEL)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "expected a label");
	L->pending_label = o->name;
	in->imm = -1;
	return 0;
}

int sg_lower_unsupported(struct sg_lower *L, const struct sg_opc *o)
{
	return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED, "unsupported instruction '%s'", o->text);
}

static int frame_param_offset(struct sg_lower *L, const struct sg_operand *o, uint32_t *off,
			      uint32_t *size)
{
	const struct sg_lsym *ls;

	if (o->kind != SG_O_SYM || o->var >= 0 || o->slot < 0)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "call arguments must be .param variables");
	ls = &L->ls[o->slot];
	if (ls->space != SG_SP_FPARAM)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "call argument '%s' is not a .param variable", o->name);
	*off = ls->offset + (uint32_t)o->off;
	*size = ls->size;
	return 0;
}

/* The caller-frame offsets and sizes of a call's argument or return list (sg_call). */
static int call_list(struct sg_lower *L, const struct sg_operand *list, uint32_t n, uint32_t **out)
{
	uint32_t *off = calloc(2 * (size_t)n + 1, sizeof(uint32_t));

	*out = off;
	if (off == NULL)
		return oom(L);
	for (uint32_t k = 0; k < n; k++)
		if (frame_param_offset(L, &list->vec[k], &off[k], &off[n + k]))
			return L->errcode;
	return 0;
}

/*
 * call (rets), f, (args); and the indirect form call (rets), %rd, (args), proto; (or a
 * .calltargets list, ignored too): the callee's signature is checked against the call's
 * arguments when it is made. The possible targets of an indirect call are the functions
 * whose address the program takes: those named in initializers (vtables, tables of function
 * pointers) and those this function's code takes (sym_slot), all lowered with it.
 */
int sg_lower_call(struct sg_lower *L, const struct sg_opc *op, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	const struct sg_operand *rets = NULL, *fn = NULL, *args = NULL;
	const struct sg_func *callee = NULL;
	struct sg_call *c;
	uint32_t nargs, nrets;
	int i = 0;

	if (i < nops && ops[i].kind == SG_O_LIST)
		rets = &ops[i++];
	if (i < nops)
		fn = &ops[i++];
	if (i < nops && ops[i].kind == SG_O_LIST)
		args = &ops[i++];
	if (fn == NULL)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "call without a target");
	nargs = args ? (uint32_t)args->nvec : 0;
	nrets = rets ? (uint32_t)rets->nvec : 0;
	if (fn->kind == SG_O_REG) {
		if (i + 1 != nops || (ops[i].kind != SG_O_LABEL && ops[i].kind != SG_O_LIST))
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "indirect call without a prototype");
		if (L->narrow[fn->slot])
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "indirect call through a 32-bit register");
		for (uint32_t k = 0; k < L->prog->nfuncs; k++)
			if (L->prog->funcs[k].addr_taken && add_callee(L, (int)k))
				return L->errcode;
		in->s[0] = (uint32_t)fn->slot;
		in->ns = 1;
	} else {
		if (i < nops)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "unexpected operand after a call's arguments");
		if (fn->kind != SG_O_SYM || fn->func < 0)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "call of unknown function '%s'",
					      fn->name ? fn->name : "?");
		callee = &L->prog->funcs[fn->func];
		if (callee->is_entry)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "call of kernel '%s'",
					      callee->name);
		if (nargs != callee->nparams || nrets != callee->nrets)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "call of '%s' with the wrong number of arguments",
					      callee->name);
	}
	if (sg_grow(&L->calls, &L->cap_calls, L->ncalls, sizeof(*L->calls)))
		return oom(L);
	c = &L->calls[L->ncalls];
	memset(c, 0, sizeof(*c));
	c->callee = callee ? fn->func : -1;
	c->nargs = nargs;
	c->nrets = nrets;
	L->ncalls++;
	if (call_list(L, args, nargs, &c->arg_off) || call_list(L, rets, nrets, &c->ret_off))
		return L->errcode;
	for (uint32_t k = 0; callee && k < nargs; k++)
		if (c->arg_off[nargs + k] < callee->params[k].size)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "argument %u of '%s' is too small", k, callee->name);
	for (uint32_t k = 0; callee && k < nrets; k++)
		if (c->ret_off[nrets + k] < callee->rets[k].size)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
					      "return value %u of '%s' is too small", k,
					      callee->name);
	if (callee && add_callee(L, fn->func))
		return L->errcode;
	in->aux = L->ncalls - 1;
	return 0;
}

static sg_lower_fn family(const struct sg_opc *o)
{
	int t = o->types[0];
	bool half = t == SG_F16 || t == SG_F16X2 || t == SG_BF16 || t == SG_BF16X2;
	bool flt = t == SG_F32 || t == SG_F64;

	switch (o->base) {
	case SG_B_ADD:
	case SG_B_SUB:
	case SG_B_MUL:
	case SG_B_MAD:
	case SG_B_FMA:
	case SG_B_DIV:
	case SG_B_ABS:
	case SG_B_NEG:
	case SG_B_MIN:
	case SG_B_MAX:
		return half ? sg_lower_half : flt ? sg_lower_float : sg_lower_int;
	case SG_B_REM:
	case SG_B_SAD:
	case SG_B_MUL24:
	case SG_B_MAD24:
	case SG_B_ADDC:
	case SG_B_SUBC:
	case SG_B_MADC:
		return sg_lower_int;
	case SG_B_COPYSIGN:
	case SG_B_TESTP:
		return sg_lower_float;
	case SG_B_RCP:
	case SG_B_SQRT:
	case SG_B_RSQRT:
	case SG_B_SIN:
	case SG_B_COS:
	case SG_B_LG2:
	case SG_B_EX2:
	case SG_B_TANH:
		return half ? sg_lower_half : sg_lower_math;
	case SG_B_AND:
	case SG_B_OR:
	case SG_B_XOR:
	case SG_B_NOT:
	case SG_B_CNOT:
	case SG_B_LOP3:
	case SG_B_SHL:
	case SG_B_SHR:
	case SG_B_SHF:
	case SG_B_POPC:
	case SG_B_CLZ:
	case SG_B_BFIND:
	case SG_B_BREV:
	case SG_B_BFE:
	case SG_B_BFI:
	case SG_B_FNS:
	case SG_B_PRMT:
	case SG_B_BMSK:
	case SG_B_SZEXT:
	case SG_B_DP4A:
	case SG_B_DP2A:
		return sg_lower_bits;
	case SG_B_SETP:
	case SG_B_SET:
	case SG_B_SELP:
	case SG_B_SLCT:
		return sg_lower_cmp;
	case SG_B_CVT:
		return sg_lower_cvt;
	case SG_B_MOV:
	case SG_B_CVTA:
	case SG_B_ISSPACEP:
		return sg_lower_mov;
	case SG_B_LD:
	case SG_B_LDU:
	case SG_B_ST:
	case SG_B_PREFETCH:
	case SG_B_PREFETCHU:
		return sg_lower_mem;
	case SG_B_ATOM:
	case SG_B_RED:
		return sg_lower_atom;
	case SG_B_BRA:
	case SG_B_CALL:
	case SG_B_RET:
	case SG_B_EXIT:
	case SG_B_TRAP:
	case SG_B_BRKPT:
	case SG_B_NANOSLEEP:
	case SG_B_PMEVENT:
		return sg_lower_ctrl;
	case SG_B_BAR:
	case SG_B_BARRIER:
	case SG_B_MEMBAR:
	case SG_B_FENCE:
	case SG_B_SHFL:
	case SG_B_VOTE:
	case SG_B_MATCH:
	case SG_B_REDUX:
	case SG_B_ACTIVEMASK:
		return sg_lower_sync;
	case SG_B_VADD2:
	case SG_B_VSUB2:
	case SG_B_VAVRG2:
	case SG_B_VABSDIFF2:
	case SG_B_VMIN2:
	case SG_B_VMAX2:
	case SG_B_VADD4:
	case SG_B_VSUB4:
	case SG_B_VAVRG4:
	case SG_B_VABSDIFF4:
	case SG_B_VMIN4:
	case SG_B_VMAX4:
	case SG_B_VADD:
	case SG_B_VSUB:
	case SG_B_VABSDIFF:
	case SG_B_VMIN:
	case SG_B_VMAX:
	case SG_B_VSHL:
	case SG_B_VSHR:
	case SG_B_VSET:
	case SG_B_VMAD:
		return sg_lower_simd;
	case SG_B_LDMATRIX:
	case SG_B_STMATRIX:
	case SG_B_MMA:
	case SG_B_WMMA:
		return sg_lower_matrix;
	case SG_B_CP:
	case SG_B_CREATEPOLICY:
		return sg_lower_mem;
	case SG_B_GRIDDEPCONTROL:
		return sg_lower_ctrl;
	case SG_B_TEX:
	case SG_B_TLD4:
	case SG_B_TXQ:
	case SG_B_SULD:
	case SG_B_SUST:
	case SG_B_SUQ:
		return sg_lower_tex;
	default:
		return NULL;
	}
}

/*
 * The families whose handlers never set a thread's pc (they may stop it:
 * a fault, a barrier, a warp collective). A family not named here, such as
 * control flow or one added later, runs on exec.c's general path, which
 * looks at every lane's pc after each instruction.
 */
static bool straight(sg_lower_fn fam)
{
	return fam == sg_lower_int || fam == sg_lower_bits || fam == sg_lower_float ||
	       fam == sg_lower_math || fam == sg_lower_half || fam == sg_lower_cmp ||
	       fam == sg_lower_cvt || fam == sg_lower_mov || fam == sg_lower_mem ||
	       fam == sg_lower_atom || fam == sg_lower_sync || fam == sg_lower_simd ||
	       fam == sg_lower_tex;
}

/*
 * The pure families' handler pairs (ops.h's OP with SG_OPS_PURE), which the
 * linker gathers in the section sg_wops, sorted by handler once for lookups.
 */
extern const struct sg_wop __start_sg_wops[], __stop_sg_wops[];
static struct sg_wop *wops;
static size_t nwops;
static pthread_once_t wops_once = PTHREAD_ONCE_INIT;

static int wop_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct sg_wop *)a)->fn;
	uintptr_t y = (uintptr_t)((const struct sg_wop *)b)->fn;

	return x < y ? -1 : x > y;
}

static void wops_init(void)
{
	size_t n = (size_t)(__stop_sg_wops - __start_sg_wops);

	wops = malloc(n * sizeof(*wops));
	if (wops == NULL) /* no table: every instruction keeps its per-lane handler */
		return;
	memcpy(wops, __start_sg_wops, n * sizeof(*wops));
	qsort(wops, n, sizeof(*wops), wop_cmp);
	nwops = n;
}

sg_wfn sg_warp_of(sg_fn fn)
{
	size_t lo = 0, hi;

	pthread_once(&wops_once, wops_init);
	hi = nwops;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (wops[mid].fn == fn)
			return wops[mid].wfn;
		if ((uintptr_t)wops[mid].fn < (uintptr_t)fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int sg_lower_insn(struct sg_lower *L, uint32_t guard, bool gneg, const struct sg_opc *o,
		  struct sg_operand *ops, int nops)
{
	struct sg_insn in;
	sg_lower_fn fam = family(o);
	struct sg_insn *slot;
	int r;

	if (fam == NULL)
		return sg_lower_unsupported(L, o);
	memset(&in, 0, sizeof(in));
	in.guard = guard;
	in.gneg = gneg ? 1 : 0;
	in.line = L->insn_line;
	L->pending_label = NULL;
	r = fam(L, o, ops, nops, &in);
	if (r == 0 && L->errcode)
		r = L->errcode;
	if (r)
		return r;
	if (in.fn == NULL)
		return sg_lower_unsupported(L, o);
	if (straight(fam)) {
		sg_wfn w = sg_warp_of(in.fn);

		in.gneg |= SG_INSN_STRAIGHT;
		if (w != NULL) {
			in.wfn = w;
			in.gneg |= SG_INSN_WARP;
		}
	}
	slot = sg_lower_emit(L);
	if (slot == NULL)
		return L->errcode;
	*slot = in;
	if (L->pending_label) {
		if (sg_grow(&L->fix, &L->cap_fix, L->nfix, sizeof(*L->fix)))
			return oom(L);
		L->fix[L->nfix].insn = L->ncode - 1;
		L->fix[L->nfix].line = L->insn_line;
		L->fix[L->nfix].label = strdup(L->pending_label);
		if (L->fix[L->nfix].label == NULL)
			return oom(L);
		L->nfix++;
		L->pending_label = NULL;
	}
	return 0;
}

int sg_lower_finish_func(struct sg_lower *L)
{
	struct sg_func *f = L->fn;
	struct sg_insn *in;

	for (uint32_t i = 0; i < L->nfix; i++) {
		int target = sg_map_get(&L->labels, L->fix[i].label, strlen(L->fix[i].label));

		if (target < 0) {
			L->insn_line = L->fix[i].line;
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "undefined label '%s'",
					      L->fix[i].label);
		}
		L->code[L->fix[i].insn].imm = target;
	}
	/* Falling off the end returns (labels may point one past the last instruction). */
	L->insn_line = 0;
	in = sg_lower_emit(L);
	if (in == NULL)
		return L->errcode;
	in->fn = sg_op_ret;
	in->line = 0;
	f->code = L->code;
	f->ncode = L->ncode;
	f->tmpl = L->tmpl;
	f->nslots = L->nslots;
	f->relocs = L->relocs;
	f->nrelocs = L->nrelocs;
	f->calls = L->calls;
	f->ncalls = L->ncalls;
	f->frame_size = (L->frame_size + 15) & ~15u;
	L->code = NULL;
	L->tmpl = NULL;
	L->relocs = NULL;
	L->calls = NULL;
	if (sg_grow(&L->fx, &L->cap_fx, (uint32_t)L->fn_index, sizeof(*L->fx)))
		return oom(L);
	L->fx[L->fn_index].shared_used = L->shared_used;
	L->fx[L->fn_index].nshared_used = L->nshared_used;
	L->fx[L->fn_index].callees = L->callees;
	L->fx[L->fn_index].ncallees = L->ncallees;
	L->shared_used = NULL;
	L->callees = NULL;
	return 0;
}

/* ---- whole-module finishing ---- */

static const struct {
	const char *name;
	int builtin;
} builtins[] = {
	{"vprintf", SG_BUILTIN_VPRINTF},
	{"__assertfail", SG_BUILTIN_ASSERTFAIL},
	{"malloc", SG_BUILTIN_MALLOC},
	{"free", SG_BUILTIN_FREE},
	{"cudaGraphSetConditional", SG_BUILTIN_SET_CONDITIONAL},
};

/* A function on local_chain's stack: the next callee to visit, the deepest chain so far. */
struct chain_frame {
	int fi;
	uint32_t next;
	uint32_t best;
};

/*
 * Deepest chain of .local frames from root; marks cycles. state: 0 new, 1 on
 * the stack, 2 done. An explicit stack (a function is on it at most once, so
 * nfuncs entries), not recursion: a call chain may be as long as the module.
 */
static uint32_t local_chain(struct sg_lower *L, int root, uint8_t *state, uint32_t *memo,
			    bool *cycle, struct chain_frame *stack)
{
	uint32_t n = 0;

	if (state[root] == 1) {
		*cycle = true;
		return 0;
	}
	if (state[root] == 2)
		return memo[root];
	state[root] = 1;
	stack[n++] = (struct chain_frame){root, 0, 0};
	while (n > 0) {
		struct chain_frame *fr = &stack[n - 1];
		int fi = fr->fi;

		if ((uint32_t)fi < L->cap_fx && fr->next < L->fx[fi].ncallees) {
			int c = L->fx[fi].callees[fr->next++];

			if (state[c] == 1) {
				*cycle = true;
			} else if (state[c] == 2) {
				if (memo[c] > fr->best)
					fr->best = memo[c];
			} else {
				state[c] = 1;
				stack[n++] = (struct chain_frame){c, 0, 0};
			}
			continue;
		}
		state[fi] = 2;
		memo[fi] = ((L->prog->funcs[fi].local_size + 15) & ~15u) + fr->best;
		if (--n > 0 && memo[fi] > stack[n - 1].best)
			stack[n - 1].best = memo[fi];
	}
	return memo[root];
}

/* Marks what root reaches through calls; the same explicit stack, as functions. */
static void mark_reach(struct sg_lower *L, int root, uint8_t *seen, int *stack)
{
	uint32_t n = 0;

	if (seen[root])
		return;
	seen[root] = 1;
	stack[n++] = root;
	while (n > 0) {
		int fi = stack[--n];

		if ((uint32_t)fi >= L->cap_fx)
			continue;
		for (uint32_t i = 0; i < L->fx[fi].ncallees; i++) {
			int c = L->fx[fi].callees[i];

			if (!seen[c]) {
				seen[c] = 1;
				stack[n++] = c;
			}
		}
	}
}

/*
 * The module as a whole, once it is parsed: which undefined functions are
 * softgpu's built-ins, and where dynamic shared memory starts (after every
 * static .shared variable, all of them known now).
 */
int sg_lower_finish_prog(struct sg_lower *L)
{
	struct sg_prog *P = L->prog;
	uint32_t dyn_align = 16;

	for (uint32_t i = 0; i < P->nfuncs; i++) {
		struct sg_func *f = &P->funcs[i];

		if (f->defined)
			continue;
		for (size_t b = 0; b < sizeof(builtins) / sizeof(builtins[0]); b++)
			if (strcmp(f->name, builtins[b].name) == 0)
				f->builtin = builtins[b].builtin;
	}
	for (uint32_t i = 0; i < P->nvars; i++)
		if (P->vars[i].dynamic && P->vars[i].align > dyn_align)
			dyn_align = P->vars[i].align;
	P->dyn_base = (P->shared_size + dyn_align - 1) / dyn_align * dyn_align;
	return 0;
}

/* A function just lowered: its calls are linkable, its shared addresses filled in. */
int sg_lower_finish_lowered(struct sg_lower *L, int fi)
{
	struct sg_prog *P = L->prog;
	struct sg_func *f = &P->funcs[fi];
	uint32_t keep = 0;

	/* calls of undefined functions that are not builtins cannot be linked */
	for (uint32_t c = 0; c < f->ncalls; c++) {
		struct sg_func *g;

		if (f->calls[c].callee < 0) /* indirect: its target is checked at the call */
			continue;
		g = &P->funcs[f->calls[c].callee];
		if (!g->defined && !g->builtin) {
			L->insn_line = f->line;
			return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
					      "'%s' calls '%s', which is not defined "
					      "(softgpu has no device library: link a definition "
					      "with cuLink*)",
					      f->name, g->name);
		}
	}
	/* shared-memory addresses are module-wide and known: fill them into the template */
	for (uint32_t k = 0; k < f->nrelocs; k++) {
		struct sg_reloc *rl = &f->relocs[k];
		struct sg_var *v = &P->vars[rl->var];

		if (v->space == SG_SP_SHARED)
			f->tmpl[rl->slot] =
				(v->dynamic ? P->dyn_base : v->offset) + (uint64_t)rl->addend;
		else
			f->relocs[keep++] = *rl;
	}
	f->nrelocs = keep;
	return 0;
}

/* An entry whose reach is lowered: its .local need, recursion and static .shared size. */
int sg_lower_finish_entry(struct sg_lower *L, int fi)
{
	struct sg_prog *P = L->prog;
	struct sg_func *f = &P->funcs[fi];
	uint8_t *state, *seen, *vseen;
	uint32_t *memo;
	struct chain_frame *chain;
	int *todo;
	bool cycle = false;
	uint64_t sh = 0;
	int r = 0;

	state = calloc(P->nfuncs + 1, 1);
	seen = calloc(P->nfuncs + 1, 1);
	vseen = calloc(P->nvars + 1, 1);
	memo = calloc(P->nfuncs + 1, sizeof(*memo));
	chain = calloc(P->nfuncs + 1, sizeof(*chain));
	todo = calloc(P->nfuncs + 1, sizeof(*todo));
	if (!state || !seen || !vseen || !memo || !chain || !todo) {
		r = oom(L);
		goto out;
	}
	f->local_total = local_chain(L, fi, state, memo, &cycle, chain);
	f->recursive = cycle;
	mark_reach(L, fi, seen, todo);
	for (uint32_t g = 0; g < P->nfuncs && g < L->cap_fx; g++) {
		if (!seen[g])
			continue;
		for (uint32_t k = 0; k < L->fx[g].nshared_used; k++) {
			int v = L->fx[g].shared_used[k];
			struct sg_var *var = &P->vars[v];

			if (vseen[v] || var->dynamic)
				continue;
			vseen[v] = 1;
			sh = (sh + var->align - 1) / var->align * var->align + var->size;
		}
	}
	f->shared_static = (uint32_t)sh;
out:
	free(state);
	free(seen);
	free(vseen);
	free(memo);
	free(chain);
	free(todo);
	return r;
}
