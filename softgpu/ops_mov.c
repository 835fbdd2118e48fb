/* ops_mov.c -- mov (registers, immediates, addresses, special registers, packing), cvta, isspacep. */
#include <string.h>
#include <time.h>

#include <cuda.h>

#define SG_OPS_PURE /* every OP here only touches registers (ops.h) */
#include "ops.h"

OP(op_mov64)
{
	t->r[in->d[0]] = t->r[in->s[0]];
	return 0;
}

OP(op_mov32)
{
	t->r[in->d[0]] = (uint32_t)t->r[in->s[0]];
	return 0;
}

OP(op_mov16)
{
	t->r[in->d[0]] = (uint16_t)t->r[in->s[0]];
	return 0;
}

OP(op_mov8)
{
	t->r[in->d[0]] = (uint8_t)t->r[in->s[0]];
	return 0;
}

OP(op_movp)
{
	t->r[in->d[0]] = t->r[in->s[0]] & 1;
	return 0;
}

/* mov.bN d, {a, b, ...}: element k of width aux bits goes to bits [k*w, (k+1)*w). */
OP(op_pack)
{
	uint64_t v = 0, mask = in->aux >= 64 ? ~0ull : (1ull << in->aux) - 1;

	for (unsigned k = 0; k < in->ns; k++)
		v |= (t->r[in->s[k]] & mask) << (k * in->aux);
	t->r[in->d[0]] = v;
	return 0;
}

OP(op_unpack)
{
	uint64_t v = t->r[in->s[0]], mask = in->aux >= 64 ? ~0ull : (1ull << in->aux) - 1;

	for (unsigned k = 0; k < in->nd; k++)
		t->r[in->d[k]] = (v >> (k * in->aux)) & mask;
	return 0;
}

int sg_op_mov_localaddr(struct sg_thread *t, const struct sg_insn *in)
{
	t->r[in->d[0]] = t->local_base + (uint64_t)in->imm;
	return 0;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sg_op_mov_sreg(struct sg_thread *t, const struct sg_insn *in)
{
	const struct sg_block *b = t->blk;
	const struct sg_grid *g = b->grid;
	uint32_t lane = t->lane;
	uint64_t v = 0;

	switch (in->aux) {
	case SG_SR_TID_X:
		v = t->tid[0];
		break;
	case SG_SR_TID_Y:
		v = t->tid[1];
		break;
	case SG_SR_TID_Z:
		v = t->tid[2];
		break;
	case SG_SR_NTID_X:
		v = g->block[0];
		break;
	case SG_SR_NTID_Y:
		v = g->block[1];
		break;
	case SG_SR_NTID_Z:
		v = g->block[2];
		break;
	case SG_SR_CTAID_X:
		v = b->ctaid[0];
		break;
	case SG_SR_CTAID_Y:
		v = b->ctaid[1];
		break;
	case SG_SR_CTAID_Z:
		v = b->ctaid[2];
		break;
	case SG_SR_NCTAID_X:
		v = g->grid[0];
		break;
	case SG_SR_NCTAID_Y:
		v = g->grid[1];
		break;
	case SG_SR_NCTAID_Z:
		v = g->grid[2];
		break;
	case SG_SR_LANEID:
		v = lane;
		break;
	case SG_SR_WARPID:
		v = t->warp;
		break;
	case SG_SR_NWARPID:
		v = 32;
		break;
	case SG_SR_SMID:
		v = g->sm_count ? b->worker % g->sm_count : 0;
		break;
	case SG_SR_NSMID:
		v = g->sm_count;
		break;
	case SG_SR_GRIDID:
		v = g->gridid;
		break;
	case SG_SR_LANEMASK_EQ:
		v = 1u << lane;
		break;
	case SG_SR_LANEMASK_LE:
		v = (uint32_t)((2ull << lane) - 1);
		break;
	case SG_SR_LANEMASK_LT:
		v = (1u << lane) - 1;
		break;
	case SG_SR_LANEMASK_GE:
		v = ~((1u << lane) - 1);
		break;
	case SG_SR_LANEMASK_GT:
		v = (uint32_t) ~((2ull << lane) - 1);
		break;
	case SG_SR_CLOCK:
		v = (uint32_t)(now_ns(CLOCK_MONOTONIC) * 3 / 2);
		break;
	case SG_SR_CLOCK_HI:
		v = (uint32_t)((now_ns(CLOCK_MONOTONIC) * 3 / 2) >> 32);
		break;
	case SG_SR_CLOCK64:
		v = now_ns(CLOCK_MONOTONIC) * 3 / 2;
		break;
	case SG_SR_GLOBALTIMER:
		v = now_ns(CLOCK_REALTIME);
		break;
	case SG_SR_GLOBALTIMER_LO:
		v = (uint32_t)now_ns(CLOCK_REALTIME);
		break;
	case SG_SR_GLOBALTIMER_HI:
		v = now_ns(CLOCK_REALTIME) >> 32;
		break;
	case SG_SR_TOTAL_SMEM:
		v = g->entry->shared_static + g->dyn_shared;
		break;
	case SG_SR_DYNAMIC_SMEM:
		v = g->dyn_shared;
		break;
	case SG_SR_ENVREG1:
		v = g->coop_ws >> 32;
		break;
	case SG_SR_ENVREG2:
		v = (uint32_t)g->coop_ws;
		break;
	default:
		v = 0;
		break;
	}
	t->r[in->d[0]] = v;
	return 0;
}

/*
 * sg_op_mov_sreg for a converged group: the thread's own coordinates and the
 * block's and grid's shape read for every lane in one pass, anything else
 * (lane masks, clocks, ...) lane after lane through sg_op_mov_sreg.
 */
static int sg_op_mov_sreg_warp(struct sg_thread *const *gl, uint32_t n, const struct sg_insn *ip)
{
	const struct sg_insn c = *ip, *in = &c;
	const struct sg_block *b = gl[0]->blk;
	const struct sg_grid *g = b->grid;
	uint32_t d = in->d[0], v;

	switch (in->aux) {
	case SG_SR_TID_X:
	case SG_SR_TID_Y:
	case SG_SR_TID_Z: {
		uint32_t k3 = in->aux - SG_SR_TID_X;

		for (uint32_t k = 0; k < n; k++)
			if ((gl[k]->r[in->guard] ^ in->gneg) & 1)
				gl[k]->r[d] = gl[k]->tid[k3];
		return 0;
	}
	case SG_SR_NTID_X:
	case SG_SR_NTID_Y:
	case SG_SR_NTID_Z:
		v = g->block[in->aux - SG_SR_NTID_X];
		break;
	case SG_SR_CTAID_X:
	case SG_SR_CTAID_Y:
	case SG_SR_CTAID_Z:
		v = b->ctaid[in->aux - SG_SR_CTAID_X];
		break;
	case SG_SR_NCTAID_X:
	case SG_SR_NCTAID_Y:
	case SG_SR_NCTAID_Z:
		v = g->grid[in->aux - SG_SR_NCTAID_X];
		break;
	default:
		for (uint32_t k = 0; k < n; k++)
			if ((gl[k]->r[in->guard] ^ in->gneg) & 1)
				(void)sg_op_mov_sreg(gl[k], in);
		return 0;
	}
	for (uint32_t k = 0; k < n; k++)
		if ((gl[k]->r[in->guard] ^ in->gneg) & 1)
			gl[k]->r[d] = v;
	return 0;
}
SG_WOP(sg_op_mov_sreg);

static int op_cvta_shared(struct sg_thread *t, const struct sg_insn *in)
{
	t->r[in->d[0]] = SG_WIN_SHARED + (uint32_t)t->r[in->s[0]];
	return 0;
}

static int op_cvta_local(struct sg_thread *t, const struct sg_insn *in)
{
	t->r[in->d[0]] = SG_WIN_LOCAL + (uint32_t)t->r[in->s[0]];
	return 0;
}

static int op_cvta_param(struct sg_thread *t, const struct sg_insn *in)
{
	t->r[in->d[0]] = SG_WIN_PARAM + (uint32_t)t->r[in->s[0]];
	return 0;
}

/* cvta.to.{shared,local,param}: the offset inside the window (imm = window base). */
static int op_cvta_to(struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t v = t->r[in->s[0]] - (uint64_t)in->imm;

	t->r[in->d[0]] = in->aux == 32 ? (uint32_t)v : v;
	return 0;
}

static int op_isspacep(struct sg_thread *t, const struct sg_insn *in)
{
	t->r[in->d[0]] = (t->r[in->s[0]] >> SG_WIN_SHIFT) == (uint64_t)in->imm;
	return 0;
}

static int lower_mov(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		     int nops, struct sg_insn *in)
{
	int type = o->types[0];
	unsigned size = sg_type_size(type);

	if (nops != 2 || o->ntypes != 1)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "mov takes d, a");
	if (ops[0].kind == SG_O_VEC) { /* unpack */
		if (ops[0].nvec < 2 || ops[0].nvec > 4 || (size * 8) % (unsigned)ops[0].nvec)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad vector mov");
		for (int k = 0; k < ops[0].nvec; k++)
			if (sg_lower_dst(L, &ops[0].vec[k], &in->d[k]))
				return L->errcode;
		in->nd = (uint8_t)ops[0].nvec;
		in->aux = size * 8 / (unsigned)ops[0].nvec;
		in->ns = 1;
		in->fn = op_unpack;
		return sg_lower_src(L, &ops[1], type, &in->s[0]);
	}
	if (sg_lower_dst(L, &ops[0], &in->d[0]))
		return L->errcode;
	in->nd = 1;
	if (ops[1].kind == SG_O_VEC) { /* pack */
		if (ops[1].nvec < 2 || ops[1].nvec > 4 || (size * 8) % (unsigned)ops[1].nvec)
			return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "bad vector mov");
		for (int k = 0; k < ops[1].nvec; k++)
			if (sg_lower_src(L, &ops[1].vec[k], SG_B64, &in->s[k]))
				return L->errcode;
		in->ns = (uint8_t)ops[1].nvec;
		in->aux = size * 8 / (unsigned)ops[1].nvec;
		in->fn = op_pack;
		return 0;
	}
	if (ops[1].kind == SG_O_SREG && ops[1].sreg < SG_SR_TID) {
		in->fn = sg_op_mov_sreg;
		in->aux = (uint32_t)ops[1].sreg;
		return 0;
	}
	if (sg_lower_src(L, &ops[1], type, &in->s[0]))
		return L->errcode;
	in->ns = 1;
	switch (type == SG_PRED ? 0 : size) {
	case 0:
		in->fn = op_movp;
		break;
	case 1:
		in->fn = op_mov8;
		break;
	case 2:
		in->fn = op_mov16;
		break;
	case 4:
		in->fn = op_mov32;
		break;
	case 8:
		in->fn = op_mov64;
		break;
	default:
		return sg_lower_unsupported(L, o);
	}
	return 0;
}

static uint64_t window(int space)
{
	switch (space) {
	case SG_SP_SHARED:
		return SG_WIN_SHARED;
	case SG_SP_LOCAL:
		return SG_WIN_LOCAL;
	case SG_SP_PARAM:
		return SG_WIN_PARAM;
	default:
		return 0;
	}
}

int sg_lower_mov(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	unsigned size = sg_type_size(o->types[0]);

	if (o->base == SG_B_MOV)
		return lower_mov(L, o, ops, nops, in);
	if (nops != 2 || o->ntypes != 1 || (size != 4 && size != 8))
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s takes d, a", o->text);
	if (sg_lower_dst(L, &ops[0], &in->d[0]) || sg_lower_src(L, &ops[1], o->types[0], &in->s[0]))
		return L->errcode;
	in->nd = 1;
	in->ns = 1;
	in->aux = size * 8;
	if (o->base == SG_B_ISSPACEP) {
		switch (o->space) {
		case SG_SP_GLOBAL:
		case SG_SP_CONST:
			in->imm = 0;
			break;
		case SG_SP_SHARED:
			in->imm = 1;
			break;
		case SG_SP_LOCAL:
			in->imm = 2;
			break;
		case SG_SP_PARAM:
			in->imm = 3;
			break;
		default:
			return sg_lower_unsupported(L, o);
		}
		in->fn = op_isspacep;
		return 0;
	}
	/* cvta */
	switch (o->space) {
	case SG_SP_GLOBAL:
	case SG_SP_CONST:
		in->fn = size == 8 ? op_mov64 : op_mov32;
		return 0;
	case SG_SP_SHARED:
	case SG_SP_LOCAL:
	case SG_SP_PARAM:
		if (o->f & SG_F_TO) {
			in->fn = op_cvta_to;
			in->imm = (int64_t)window(o->space);
		} else if (size != 8) {
			return sg_lower_unsupported(L, o);
		} else {
			in->fn = o->space == SG_SP_SHARED  ? op_cvta_shared
				 : o->space == SG_SP_LOCAL ? op_cvta_local
							   : op_cvta_param;
		}
		return 0;
	default:
		return sg_lower_unsupported(L, o);
	}
}
