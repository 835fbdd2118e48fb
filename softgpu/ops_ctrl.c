/* ops_ctrl.c -- control flow: bra, call (with the builtin device functions), ret, exit, trap;
 * griddepcontrol. */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ptx_int.h"

#define SG_MAX_DEPTH_DEFAULT 1024

static int op_bra(struct sg_thread *t, const struct sg_insn *in)
{
	uint32_t target = (uint32_t)in->imm;

	if (target < t->pc && --t->budget == 0) {
		t->pc = target;
		return SG_STOP_YIELD;
	}
	t->pc = target;
	return 0;
}

static int op_exit(struct sg_thread *t, const struct sg_insn *in)
{
	return SG_STOP_EXIT;
}

static int op_trap(struct sg_thread *t, const struct sg_insn *in)
{
	return sg_fault(t, CUDA_ERROR_LAUNCH_FAILED, "trap instruction");
}

static int op_nop(struct sg_thread *t, const struct sg_insn *in)
{
	return 0;
}

static int op_nanosleep(struct sg_thread *t, const struct sg_insn *in)
{
	return SG_STOP_YIELD; /* let the thread it waits for run */
}

static uint64_t frame_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int builtin(struct sg_thread *t, const struct sg_call *c, const struct sg_func *f)
{
	uint8_t *fr = t->pframe;
	int32_t ret = 0;
	uint64_t p;

	switch (f->builtin) {
	case SG_BUILTIN_VPRINTF:
		if (c->nargs != 2)
			break;
		if (sg_builtin_vprintf(t, frame_u64(fr + c->arg_off[0]),
				       frame_u64(fr + c->arg_off[1]), &ret))
			return SG_STOP_FAULT;
		if (c->nrets)
			memcpy(fr + c->ret_off[0], &ret, 4);
		return 0;
	case SG_BUILTIN_ASSERTFAIL: {
		uint32_t line;

		if (c->nargs < 4)
			break;
		memcpy(&line, fr + c->arg_off[2], 4);
		return sg_builtin_assertfail(t, frame_u64(fr + c->arg_off[0]),
					     frame_u64(fr + c->arg_off[1]), line,
					     frame_u64(fr + c->arg_off[3]));
	}
	case SG_BUILTIN_MALLOC:
		if (c->nargs != 1 || c->nrets != 1)
			break;
		p = sg_builtin_malloc(t, frame_u64(fr + c->arg_off[0]));
		memcpy(fr + c->ret_off[0], &p, 8);
		return 0;
	case SG_BUILTIN_FREE:
		if (c->nargs != 1)
			break;
		sg_builtin_free(t, frame_u64(fr + c->arg_off[0]));
		return 0;
	case SG_BUILTIN_SET_CONDITIONAL: {
		uint32_t v;

		if (c->nargs != 2)
			break;
		memcpy(&v, fr + c->arg_off[1], 4);
		if (sg_graph_set_conditional(frame_u64(fr + c->arg_off[0]), v))
			return sg_fault(t, CUDA_ERROR_LAUNCH_FAILED,
					"cudaGraphSetConditional of an unknown handle");
		return 0;
	}
	}
	return sg_fault(t, CUDA_ERROR_LAUNCH_FAILED, "call of '%s' with an unexpected signature",
			f->name);
}

static int cstack_reserve(struct sg_thread *t, size_t need)
{
	struct sg_cstack *cs = &t->cs;
	size_t roff = 0, poff = 0;
	uint8_t *mem;
	size_t cap;

	if (cs->nframes + 1 > cs->cap_frames) {
		uint32_t n = cs->cap_frames ? cs->cap_frames * 2 : 16;
		struct sg_frame *f = realloc(cs->frames, n * sizeof(*f));

		if (f == NULL)
			return -1;
		cs->frames = f;
		cs->cap_frames = n;
	}
	if (cs->top + need <= cs->cap)
		return 0;
	if (t->depth > 0) {
		roff = (size_t)((uint8_t *)t->r - cs->mem);
		poff = (size_t)(t->pframe - cs->mem);
	}
	cap = cs->cap ? cs->cap * 2 : 4096;
	while (cap < cs->top + need)
		cap *= 2;
	mem = realloc(cs->mem, cap);
	if (mem == NULL)
		return -1;
	cs->mem = mem;
	cs->cap = cap;
	if (t->depth > 0) {
		t->r = (uint64_t *)(mem + roff);
		t->pframe = mem + poff;
	}
	return 0;
}

/* A call of function fi from call site c: a new frame, the arguments copied in. */
static int enter(struct sg_thread *t, const struct sg_call *c, int fi)
{
	const struct sg_grid *g = t->blk->grid;
	const struct sg_func *f = &g->prog->funcs[fi];
	uint32_t local = t->local_base + ((t->fn->local_size + 15) & ~15u);
	size_t rsize = (size_t)f->nslots * 8, need = rsize + f->frame_size;
	struct sg_frame *fr;
	uint8_t *regs, *frame;

	if (f->builtin)
		return builtin(t, c, f);
	if (t->depth + 1 >= (g->max_depth ? g->max_depth : SG_MAX_DEPTH_DEFAULT) ||
	    local + f->local_size > t->local_size)
		return sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS,
				"call stack overflow calling '%s' (depth %u)", f->name, t->depth);
	if (cstack_reserve(t, need))
		return sg_fault(t, CUDA_ERROR_OUT_OF_MEMORY, "no host memory for a call frame");
	fr = &t->cs.frames[t->cs.nframes++];
	fr->fn = t->fn;
	fr->call = c;
	fr->ret_pc = t->pc;
	fr->local_base = t->local_base;
	fr->stack_top = t->cs.top;
	fr->regs_off = t->depth ? (size_t)((uint8_t *)t->r - t->cs.mem) : 0;
	fr->pframe_off = t->depth ? (size_t)(t->pframe - t->cs.mem) : 0;
	regs = t->cs.mem + t->cs.top;
	frame = regs + rsize;
	t->cs.top += (need + 15) & ~(size_t)15;
	memcpy(regs, g->tmpl[fi], rsize);
	memset(frame, 0, f->frame_size);
	for (uint32_t k = 0; k < c->nargs; k++)
		memcpy(frame + f->params[k].offset, t->pframe + c->arg_off[k], f->params[k].size);
	t->fn = f;
	t->code = f->code;
	t->pc = 0;
	t->r = (uint64_t *)regs;
	t->pframe = frame;
	t->local_base = local;
	t->depth++;
	return 0;
}

static int op_call(struct sg_thread *t, const struct sg_insn *in)
{
	const struct sg_call *c = &t->fn->calls[in->aux];

	return enter(t, c, c->callee);
}

/*
 * call through a register: the value must be a function's address (SG_FUNC_ADDR) of this
 * program, lowered with the kernel (sg_lower_call), whose parameters and return values
 * match the call's in number and fit in their sizes; else the launch faults, as a call
 * through a bad pointer does on a GPU.
 */
static int op_call_indirect(struct sg_thread *t, const struct sg_insn *in)
{
	const struct sg_call *c = &t->fn->calls[in->aux];
	const struct sg_grid *g = t->blk->grid;
	uint64_t a = t->r[in->s[0]];
	int64_t fi = SG_FUNC_INDEX(a);
	const struct sg_func *f;
	int st;

	if (fi < 0 || (uint64_t)fi >= g->prog->nfuncs)
		return sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS,
				"indirect call of 0x%llx, which is no function's address",
				(unsigned long long)a);
	f = &g->prog->funcs[fi];
	st = __atomic_load_n(&f->lstate, __ATOMIC_ACQUIRE);
	if (f->builtin || f->is_entry || (st != SG_FN_LOWERED && st != SG_FN_READY) ||
	    __atomic_load_n(&g->tmpl[fi], __ATOMIC_ACQUIRE) == NULL)
		return sg_fault(t, CUDA_ERROR_LAUNCH_FAILED,
				"indirect call of '%s', which the kernel does not reach", f->name);
	if (c->nargs != f->nparams || c->nrets != f->nrets)
		goto mismatch;
	for (uint32_t k = 0; k < c->nargs; k++)
		if (c->arg_off[c->nargs + k] < f->params[k].size)
			goto mismatch;
	for (uint32_t k = 0; k < c->nrets; k++)
		if (c->ret_off[c->nrets + k] < f->rets[k].size)
			goto mismatch;
	return enter(t, c, (int)fi);
mismatch:
	return sg_fault(t, CUDA_ERROR_LAUNCH_FAILED,
			"indirect call of '%s' with a prototype that does not match it", f->name);
}

int sg_op_ret(struct sg_thread *t, const struct sg_insn *in)
{
	const struct sg_func *f = t->fn;
	struct sg_frame *fr;
	uint8_t *caller_frame;

	if (t->depth == 0)
		return SG_STOP_EXIT;
	fr = &t->cs.frames[--t->cs.nframes];
	t->depth--;
	caller_frame = t->depth ? t->cs.mem + fr->pframe_off : t->pframe0;
	for (uint32_t k = 0; k < fr->call->nrets; k++)
		memcpy(caller_frame + fr->call->ret_off[k], t->pframe + f->rets[k].offset,
		       f->rets[k].size);
	t->fn = fr->fn;
	t->code = fr->fn->code;
	t->pc = fr->ret_pc;
	t->r = t->depth ? (uint64_t *)(t->cs.mem + fr->regs_off) : t->r0;
	t->pframe = caller_frame;
	t->local_base = fr->local_base;
	t->cs.top = fr->stack_top;
	return 0;
}

int sg_lower_ctrl(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	switch (o->base) {
	case SG_B_BRA:
		if (nops != 1)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bra takes one label");
		in->fn = op_bra;
		in->gneg |= SG_INSN_BRA; /* exec.c runs it for a group at once, as op_bra would */
		return sg_lower_label(L, &ops[0], in);
	case SG_B_CALL:
		if (sg_lower_call(L, o, ops, nops, in))
			return L->errcode;
		in->fn = L->calls[in->aux].callee < 0 ? op_call_indirect : op_call;
		return 0;
	case SG_B_RET:
		in->fn = sg_op_ret;
		return 0;
	case SG_B_EXIT:
		in->fn = op_exit;
		return 0;
	case SG_B_TRAP:
	case SG_B_BRKPT:
		in->fn = op_trap;
		return 0;
	case SG_B_NANOSLEEP:
		in->fn = op_nanosleep;
		return 0;
	case SG_B_PMEVENT:
		in->fn = op_nop;
		return 0;
	case SG_B_GRIDDEPCONTROL:
		/*
		 * Programmatic dependent launch: a stream runs its grids one after
		 * another, each starting after the one before has finished (stream.c),
		 * so the grid a .wait waits for has completed, and .launch_dependents
		 * has nothing to start early.
		 */
		if (nops != 0 || (strcmp(o->text, "griddepcontrol.wait") != 0 &&
				  strcmp(o->text, "griddepcontrol.launch_dependents") != 0))
			return sg_lower_unsupported(L, o);
		in->fn = op_nop;
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
