/* ops_warp.c -- synchronization: bar/barrier, bar.warp.sync, membar/fence, shfl, vote, match, redux, activemask. */
#include <cuda.h>

#include "ops.h"

/*
 * These handlers only record what the thread brings to the exchange and stop
 * it; exec.c performs the exchange once every participant waits (see the
 * DESIGN comment there).
 */

static int op_bar(struct sg_thread *t, const struct sg_insn *in)
{
	uint32_t id = (uint32_t)A(0) & 15;

	t->bar_id = id;
	t->bar_count = in->ns > 1 ? (uint32_t)A(1) : 0;
	t->wait_insn = in;
	t->wait_a = (in->flags & 1) ? ((A(2) ^ (in->flags >> 1)) & 1) : 0;
	t->state = SG_T_BAR;
	t->blk->bar_arrived[id]++;
	return SG_STOP_BAR;
}

static int op_bar_arrive(struct sg_thread *t, const struct sg_insn *in)
{
	t->blk->bar_arrived[(uint32_t)A(0) & 15]++;
	return 0;
}

static int op_fence(struct sg_thread *t, const struct sg_insn *in)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

static int wait(struct sg_thread *t, const struct sg_insn *in, int kind, uint32_t mask)
{
	t->wait_kind = (uint8_t)kind;
	t->wait_insn = in;
	t->wait_mask = mask;
	t->state = SG_T_WARP;
	return SG_STOP_WARP;
}

static int op_warpsync(struct sg_thread *t, const struct sg_insn *in)
{
	return wait(t, in, SG_W_WARPSYNC, (uint32_t)A(0));
}

static int op_shfl(struct sg_thread *t, const struct sg_insn *in)
{
	t->wait_a = (uint32_t)A(0);
	t->wait_b = (uint32_t)A(1);
	t->wait_c = (uint32_t)A(2);
	return wait(t, in, SG_W_SHFL, in->ns > 3 ? (uint32_t)A(3) : 0xffffffffu);
}

static int op_vote(struct sg_thread *t, const struct sg_insn *in)
{
	t->wait_a = (A(0) ^ in->flags) & 1;
	return wait(t, in, SG_W_VOTE, in->ns > 1 ? (uint32_t)A(1) : 0xffffffffu);
}

static int op_match(struct sg_thread *t, const struct sg_insn *in)
{
	t->wait_a = in->flags ? A(0) : (uint32_t)A(0);
	return wait(t, in, SG_W_MATCH, (uint32_t)A(1));
}

static int op_redux(struct sg_thread *t, const struct sg_insn *in)
{
	t->wait_a = (uint32_t)A(0);
	return wait(t, in, SG_W_REDUX, (uint32_t)A(1));
}

static int op_activemask(struct sg_thread *t, const struct sg_insn *in)
{
	return wait(t, in, SG_W_ACTIVEMASK, 0);
}

static int srcs(struct sg_lower *L, const struct sg_operand *ops, int from, int n, int type,
		struct sg_insn *in)
{
	for (int i = 0; i < n; i++)
		if (sg_lower_src(L, &ops[from + i], type, &in->s[i]))
			return L->errcode;
	in->ns = (uint8_t)n;
	return 0;
}

static int lower_bar(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		     int nops, struct sg_insn *in)
{
	if (o->f & SG_F_WARP) {
		if (nops != 1 || srcs(L, ops, 0, 1, SG_B32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->fn = op_warpsync;
		return 0;
	}
	if (o->f & SG_F_RED) {
		bool neg;

		if ((nops != 3 && nops != 4) || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    srcs(L, ops, 1, nops - 2, SG_U32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		if (nops == 3) { /* no thread count: move the predicate to s[2] */
			in->s[1] = sg_lower_const(L, 0);
			in->ns = 1;
		}
		if (sg_lower_pred(L, &ops[nops - 1], &in->s[2], &neg))
			return L->errcode;
		in->nd = 1;
		in->flags = (uint8_t)(1 | (neg ? 2 : 0));
		in->aux = (uint32_t)o->bop;
		if (o->bop == SG_BOP_NONE || o->bop == SG_BOP_XOR)
			return sg_lower_unsupported(L, o);
		in->fn = op_bar;
		return 0;
	}
	if (nops < 1 || nops > 2 || srcs(L, ops, 0, nops, SG_U32, in))
		return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
	if (o->f & SG_F_ARRIVE) {
		if (nops != 2)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s needs a thread count",
					      o->text);
		in->fn = op_bar_arrive;
	} else {
		in->fn = op_bar;
	}
	return 0;
}

int sg_lower_sync(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		  int nops, struct sg_insn *in)
{
	switch (o->base) {
	case SG_B_BAR:
	case SG_B_BARRIER:
		return lower_bar(L, o, ops, nops, in);
	case SG_B_MEMBAR:
	case SG_B_FENCE:
		in->fn = op_fence;
		return 0;
	case SG_B_SHFL:
		if (o->types[0] != SG_B32 || (o->mode != SG_M_UP && o->mode != SG_M_DOWN &&
					      o->mode != SG_M_BFLY && o->mode != SG_M_IDX))
			return sg_lower_unsupported(L, o);
		if (nops != ((o->f & SG_F_SYNC) ? 5 : 4) || sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    srcs(L, ops, 1, nops - 1, SG_B32, in))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		if (ops[0].pair) {
			if (sg_lower_dst(L, ops[0].pair, &in->d[1]))
				return L->errcode;
			in->nd = 2;
		}
		in->aux = (uint32_t)o->mode;
		in->fn = op_shfl;
		return 0;
	case SG_B_VOTE: {
		bool neg;
		int want = (o->f & SG_F_SYNC) ? 3 : 2;

		if (o->mode == SG_M_NONE || nops != want ||
		    (o->mode == SG_M_BALLOT) != (o->types[0] == SG_B32))
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_pred(L, &ops[1], &in->s[0], &neg))
			return L->errcode;
		in->ns = 1;
		if (want == 3) {
			if (sg_lower_src(L, &ops[2], SG_B32, &in->s[1]))
				return L->errcode;
			in->ns = 2;
		}
		in->nd = 1;
		in->flags = neg ? 1 : 0;
		in->aux = (uint32_t)o->mode;
		in->fn = op_vote;
		return 0;
	}
	case SG_B_MATCH:
		if ((o->types[0] != SG_B32 && o->types[0] != SG_B64) ||
		    (o->mode != SG_M_ANY && o->mode != SG_M_ALL) || nops != 3)
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) ||
		    sg_lower_src(L, &ops[1], o->types[0], &in->s[0]) ||
		    sg_lower_src(L, &ops[2], SG_B32, &in->s[1]))
			return L->errcode;
		in->nd = 1;
		in->ns = 2;
		if (ops[0].pair) {
			if (o->mode != SG_M_ALL || sg_lower_dst(L, ops[0].pair, &in->d[1]))
				return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
			in->nd = 2;
		}
		in->flags = o->types[0] == SG_B64;
		in->aux = (uint32_t)o->mode;
		in->fn = op_match;
		return 0;
	case SG_B_REDUX: {
		int ty = o->types[0];

		if (nops != 3 || (ty != SG_U32 && ty != SG_S32 && ty != SG_B32) ||
		    o->aop == SG_AOP_NONE)
			return sg_lower_unsupported(L, o);
		if (sg_lower_dst(L, &ops[0], &in->d[0]) || srcs(L, ops, 1, 2, SG_B32, in))
			return L->errcode;
		in->nd = 1;
		in->aux = (uint32_t)o->aop | (ty == SG_S32 ? 0x100u : 0);
		in->fn = op_redux;
		return 0;
	}
	case SG_B_ACTIVEMASK:
		if (nops != 1 || sg_lower_dst(L, &ops[0], &in->d[0]))
			return L->errcode ? L->errcode : sg_lower_unsupported(L, o);
		in->nd = 1;
		in->fn = op_activemask;
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
