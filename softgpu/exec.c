/* exec.c -- run one thread block: the per-thread interpreter loop, barriers and warp exchanges. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "ptx.h"

/*
 * DESIGN: a block runs on one OS thread at a time (engine.c hands blocks to
 * workers; a cooperative grid's block may pause and go on on another, handed
 * over under the grid's lock), so nothing here locks. Threads are scheduled cooperatively, with
 * independent thread scheduling as on sm_70+: each thread has its own pc and
 * registers and runs until it exits, yields (a spin loop used up its budget)
 * or reaches a synchronizing instruction. bar.sync waits for the block;
 * shfl/vote/match/redux/bar.warp.sync wait for the lanes in their member
 * mask; once every lane a collective needs is waiting there, the exchange is
 * done for all of them at once and they run on. No reconvergence stack.
 *
 * Warps are run one at a time until every lane of the warp is blocked;
 * pending warp collectives are resolved and the warp runs again. Within a
 * warp, the lanes at one pc run as a group (run_warp): a run of
 * straight-line instructions is run one instruction at a time for the whole
 * group, through one call of its warp-wide handler where it has one
 * (registers only, plain loads and stores) and lane after lane otherwise, a
 * branch by all of them at once, and lanes that went apart meet again at the
 * lowest pc first. That is one valid order of independent threads among
 * many; it spends no scheduling work per instruction and, for the warp-wide
 * handlers, one indirect call per instruction instead of one per lane.
 * When all warps are blocked, barriers are resolved. A block with waiting
 * threads and nothing runnable is deadlocked: the launch fails instead of
 * hanging.
 */

#define SG_YIELD_BUDGET 4096
/*
 * A block of a cooperative grid pauses after a round in which a thread
 * yielded (engine.c then runs another block): a short budget keeps what a
 * block spinning at grid.sync() costs before it pauses small.
 */
#define SG_COOP_YIELD_BUDGET 256

int sg_fault(struct sg_thread *t, int cuerr, const char *fmt, ...)
{
	struct sg_block *b = t->blk;
	va_list ap;
	int n;

	if (b->err == 0) {
		b->err = cuerr;
		n = snprintf(b->errmsg, sizeof(b->errmsg),
			     "%s line %u: thread (%u,%u,%u) block (%u,%u,%u): ",
			     t->fn ? t->fn->name : "?", t->pc > 0 ? t->code[t->pc - 1].line : 0,
			     t->tid[0], t->tid[1], t->tid[2], b->ctaid[0], b->ctaid[1],
			     b->ctaid[2]);
		if (n > 0 && (size_t)n < sizeof(b->errmsg)) {
			va_start(ap, fmt);
			vsnprintf(b->errmsg + n, sizeof(b->errmsg) - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return SG_STOP_FAULT;
}

static const char *space_name(int space)
{
	switch (space) {
	case SG_SP_GLOBAL:
		return "global";
	case SG_SP_SHARED:
		return "shared";
	case SG_SP_LOCAL:
		return "local";
	case SG_SP_PARAM:
		return "param";
	case SG_SP_CONST:
		return "const";
	case SG_SP_FPARAM:
		return "param";
	default:
		return "generic";
	}
}

static void *bad(struct sg_thread *t, int space, uint64_t addr, uint32_t size, bool write)
{
	sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS, "out-of-bounds %s %s of %u bytes at 0x%llx",
		 space_name(space), write ? "write" : "read", size, (unsigned long long)addr);
	return NULL;
}

static void *global_addr(struct sg_thread *t, int space, uint64_t addr, uint32_t size, bool write)
{
	struct sg_block *b = t->blk;
	uint8_t *h;

	for (unsigned i = 0; i < SG_XCACHE; i++) {
		const struct sg_xcache *c = &b->xc[i];

		if (addr >= c->lo && addr + size <= c->hi && addr + size > addr) {
			b->xlast = i;
			return c->host + (addr - c->lo);
		}
	}
	h = sg_mem_kernel_lookup(addr, size, b->grid->ctx, &b->xc[b->xnext % SG_XCACHE]);
	if (h == NULL)
		return bad(t, space, addr, size, write);
	b->xlast = b->xnext % SG_XCACHE;
	b->xnext++;
	return h;
}

void *sg_addr_slow(struct sg_thread *t, int space, uint64_t addr, uint32_t size, bool write)
{
	struct sg_block *b = t->blk;

	if (addr & (size - 1)) {
		sg_fault(t, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned %s %s of %u bytes at 0x%llx",
			 space_name(space), write ? "write" : "read", size,
			 (unsigned long long)addr);
		return NULL;
	}
	if (space == SG_SP_GENERIC) {
		switch (addr >> SG_WIN_SHIFT) {
		case 0:
			return global_addr(t, SG_SP_GENERIC, addr, size, write);
		case 1:
			space = SG_SP_SHARED;
			addr -= SG_WIN_SHARED;
			break;
		case 2:
			space = SG_SP_LOCAL;
			addr -= SG_WIN_LOCAL;
			break;
		case 3:
			space = SG_SP_PARAM;
			addr -= SG_WIN_PARAM;
			break;
		default:
			return bad(t, SG_SP_GENERIC, addr, size, write);
		}
	}
	switch (space) {
	case SG_SP_GLOBAL:
	case SG_SP_CONST:
		return global_addr(t, space, addr, size, write);
	case SG_SP_SHARED:
		if (addr >= b->shared_size || size > b->shared_size - addr)
			return bad(t, space, addr, size, write);
		return b->shared + addr;
	case SG_SP_LOCAL:
		if (addr >= t->local_size || size > t->local_size - addr)
			return bad(t, space, addr, size, write);
		return t->local + addr;
	case SG_SP_PARAM:
		if (write || addr >= b->grid->param_size || size > b->grid->param_size - addr)
			return bad(t, space, addr, size, write);
		return (void *)(b->grid->params + addr);
	case SG_SP_FPARAM: {
		uint32_t fs = t->depth ? t->fn->frame_size : b->grid->entry->frame_size;

		if (addr >= fs || size > fs - addr)
			return bad(t, space, addr, size, write);
		return t->pframe + addr;
	}
	default:
		return bad(t, space, addr, size, write);
	}
}

/*
 * The lanes of `todo` at the lowest pc, with the code of the lowest of them:
 * the group that runs next. Lanes that branched ahead wait for the others to
 * reach them, so an if/else or a loop with a per-lane trip count reconverges
 * where the paths meet, as nvcc lays them out.
 */
static uint32_t pick_group(const struct sg_thread *base, uint32_t todo, uint32_t *rest_pc)
{
	uint32_t best = 0, pc = UINT32_MAX, rpc = UINT32_MAX;
	const struct sg_insn *code = NULL;

	/* one pass: a lane below the lowest pc so far sends the lanes found there to the rest */
	for (uint32_t m = todo; m; m &= m - 1) {
		int l = __builtin_ctz(m);
		const struct sg_thread *t = &base[l];

		if (t->pc < pc) {
			if (best && pc < rpc)
				rpc = pc;
			pc = t->pc;
			code = t->code;
			best = 1u << l;
		} else if (t->pc == pc && t->code == code) {
			best |= 1u << l;
		} else if (t->pc < rpc) {
			rpc = t->pc;
		}
	}
	*rest_pc = rpc;
	return best;
}

/*
 * The warp-wide handlers of the straight run from pc p on, each once for the
 * group gl, up to stop or the first instruction without one: the pc reached,
 * and *rc (0, or SG_STOP_FAULT with the pc that of the faulting instruction).
 * Apart from run_warp so that the few values it needs across the indirect
 * calls stay in registers.
 */
static __attribute__((noinline)) uint32_t run_wide(struct sg_thread *const *gl, uint32_t ng,
						   const struct sg_insn *code, uint32_t p,
						   uint32_t stop, int *rc)
{
	const struct sg_insn *i = code + p, *end = code + stop;
	int r = 0;

	for (; i < end && (i->gneg & SG_INSN_WARP); i++)
		if ((r = i->wfn(gl, ng, i)) != 0)
			break;
	*rc = r;
	return (uint32_t)(i - code);
}

/*
 * Runs every ready lane of a warp until it exits, yields or stops at a
 * barrier or warp collective: 0, or SG_STOP_FAULT. The lanes at one pc run
 * together: a run of straight-line instructions (SG_INSN_STRAIGHT) one
 * instruction at a time for all of them (SG_INSN_WARP: one warp-wide call),
 * ending after an instruction that stopped a lane, where the others stand
 * together; a bra in one pass for the group (SG_INSN_BRA), the lanes at the
 * lower pc going on if it split; any other instruction for the lanes in
 * turn, after which the lanes whose pcs still agree go on together and the
 * others wait for their pcs to meet (pick_group). Which lane runs an
 * instruction first is not a promise of the PTX ISA; the yield budget,
 * faults and counts are each lane's, as when every lane ran alone.
 */
static int run_warp(struct sg_block *b, struct sg_thread *base, uint32_t n, bool *yielded)
{
	uint32_t budget = b->grid->coop ? SG_COOP_YIELD_BUDGET : SG_YIELD_BUDGET;
	uint32_t todo = 0, group, rest_pc;
	struct sg_thread *lp[32], *gl[32];
	uint32_t ng = 0, gmask = 0;
	uint64_t count = 0;
	int rc = 0;

	for (uint32_t l = 0; l < n; l++) {
		lp[l] = &base[l];
		if (base[l].state == SG_T_READY) {
			base[l].budget = budget;
			todo |= 1u << l;
		}
	}
	if (todo == 0)
		return 0;
	group = pick_group(base, todo, &rest_pc);
	for (;;) {
		const struct sg_thread *lead = lp[__builtin_ctz(group)];
		const struct sg_insn *code = lead->code, *in;
		uint32_t pc = lead->pc, npc = UINT32_MAX, stay = 0;

		if (group != gmask) {
			gmask = group;
			ng = 0;
			for (uint32_t m = group; m; m &= m - 1)
				gl[ng++] = lp[__builtin_ctz(m)];
		}
		in = code + pc;
		if (in->gneg & SG_INSN_STRAIGHT) {
			/*
			 * A run of straight-line instructions (they never set a pc), one
			 * instruction at a time for the whole group: a warp-wide handler
			 * once (SG_INSN_WARP: registers only, it never stops), any other
			 * handler lane after lane. The run ends at a branch, at lanes
			 * waiting ahead, or after an instruction that stopped a lane, so
			 * the group's lanes are together again at its end.
			 */
			uint32_t stop = pc + 1 > rest_pc ? pc + 1 : rest_pc, left = 0, p = pc;
			const struct sg_insn *i = in;

			while (p < stop && (i->gneg & SG_INSN_STRAIGHT)) {
				if (i->gneg & SG_INSN_WARP) {
					uint32_t q = run_wide(gl, ng, code, p, stop, &rc);

					/* a faulting instruction counts, as it did lane by lane */
					count += (uint64_t)(q - p + (rc != 0)) * ng;
					if (rc != 0)
						goto out;
					p = q;
					i = code + p;
					continue;
				}
				count += ng;
				p++;
				for (uint32_t k = 0; k < ng; k++) {
					struct sg_thread *t = gl[k];

					t->pc = p;
					if (!((t->r[i->guard] ^ i->gneg) & 1) ||
					    (rc = i->fn(t, i)) == 0)
						continue;
					if (rc == SG_STOP_FAULT)
						goto out;
					left |= 1u << t->lane;
					if (rc == SG_STOP_EXIT) {
						t->state = SG_T_EXITED;
						b->nexited++;
					} else if (rc == SG_STOP_YIELD) {
						*yielded = true;
					}
				}
				i++;
				if (left)
					break;
			}
			rc = 0;
			if (left) {
				todo &= ~left;
				group &= ~left;
			}
			pc = p;
			in = code + pc;
			/*
			 * The lanes' pcs are stored where the group ends or goes on
			 * through the loop's start; an instruction of the general path
			 * stores them itself.
			 */
			if (group == 0 || pc >= rest_pc || (in->gneg & SG_INSN_STRAIGHT)) {
				for (uint32_t k = 0; k < ng; k++)
					gl[k]->pc = p;
				if (group != 0 && pc < rest_pc)
					continue;
				if (todo == 0)
					break;
				group = pick_group(base, todo, &rest_pc);
				continue;
			}
			if (group != gmask) {
				gmask = group;
				ng = 0;
				for (uint32_t m = group; m; m &= m - 1)
					gl[ng++] = lp[__builtin_ctz(m)];
			}
		}
		if (in->gneg & SG_INSN_BRA) {
			/*
			 * A branch, for the whole group in one pass (op_bra's rule for each
			 * lane: a taken backward branch spends the lane's budget, and the
			 * lane yields when it is used up). Lanes that disagree split: those
			 * at the lower pc go on as the group, the others wait there.
			 */
			uint32_t target = (uint32_t)in->imm, taken = 0, spent = 0, lo, hi, lom;
			uint32_t guard = in->guard, gneg = in->gneg & 1, next = pc + 1;

			count += ng;
			/* gl holds the group's lanes in the order of its bits */
			for (uint32_t m = group, k = 0; m; m &= m - 1, k++) {
				struct sg_thread *t = gl[k];
				bool take = (t->r[guard] ^ gneg) & 1;

				t->pc = take ? target : next;
				taken |= take ? m & -m : 0;
			}
			/* op_bra's target < t->pc, t->pc being pc + 1: a backward branch */
			if (target <= pc) {
				for (uint32_t m = taken; m; m &= m - 1)
					if (--lp[__builtin_ctz(m)]->budget == 0)
						spent |= m & -m;
			}
			if (spent) {
				*yielded = true;
				todo &= ~spent;
				group &= ~spent;
				taken &= ~spent;
			}
			if (taken == 0 || taken == group || target == pc + 1) {
				lo = taken ? target : pc + 1;
				lom = group;
				hi = UINT32_MAX;
			} else if (target < pc + 1) {
				lo = target;
				lom = taken;
				hi = pc + 1;
			} else {
				lo = pc + 1;
				lom = group & ~taken;
				hi = target;
			}
			if (lom && lo < rest_pc) {
				group = lom;
				if (hi < rest_pc)
					rest_pc = hi;
				continue;
			}
			if (todo == 0)
				break;
			group = pick_group(base, todo, &rest_pc);
			continue;
		}
		count += ng;
		for (uint32_t k = 0; k < ng; k++) {
			struct sg_thread *t = gl[k];

			t->pc = pc + 1;
			if (((t->r[in->guard] ^ in->gneg) & 1) && (rc = in->fn(t, in)) != 0) {
				todo &= ~(1u << t->lane);
				if (rc == SG_STOP_FAULT)
					goto out;
				if (rc == SG_STOP_EXIT) {
					t->state = SG_T_EXITED;
					b->nexited++;
				} else if (rc == SG_STOP_YIELD) {
					*yielded = true;
				}
				continue;
			}
			if (npc == UINT32_MAX)
				npc = t->pc;
			if (t->pc == npc && t->code == code)
				stay |= 1u << t->lane;
		}
		rc = 0;
		/* the group goes on together unless it split or reached lanes that wait ahead */
		if (stay == (group & todo) && stay && npc < rest_pc) {
			group = stay;
			continue;
		}
		if (todo == 0)
			break;
		group = pick_group(base, todo, &rest_pc);
	}
out:
	b->icount += count;
	return rc;
}

/* ---- warp collectives ---- */

static uint32_t lane_bits(const struct sg_block *b, uint32_t w)
{
	uint32_t first = w * 32;
	uint32_t n = b->nthreads - first;

	return n >= 32 ? 0xffffffffu : (1u << n) - 1;
}

static void shfl_one(struct sg_thread **lanes, struct sg_thread *t, uint32_t group)
{
	const struct sg_insn *in = t->wait_insn;
	uint32_t lane = t->lane, bval = (uint32_t)t->wait_b & 0x1f;
	uint32_t c = (uint32_t)t->wait_c, cval = c & 0x1f, segmask = (c >> 8) & 0x1f;
	uint32_t maxl = (lane & segmask) | (cval & ~segmask), minl = lane & segmask;
	int32_t j = 0;
	bool p = false;

	switch (in->aux) {
	case SG_M_UP:
		j = (int32_t)lane - (int32_t)bval;
		p = j >= (int32_t)maxl;
		break;
	case SG_M_DOWN:
		j = (int32_t)(lane + bval);
		p = j <= (int32_t)maxl;
		break;
	case SG_M_BFLY:
		j = (int32_t)(lane ^ bval);
		p = j <= (int32_t)maxl;
		break;
	default: /* idx */
		j = (int32_t)(minl | (bval & ~segmask));
		p = j <= (int32_t)maxl;
		break;
	}
	if (!p)
		j = (int32_t)lane;
	/*
	 * A source lane in range that takes no part in this exchange (outside the
	 * member mask, inactive, exited or never launched) gives 0. The PTX ISA
	 * calls that value unpredictable; 0 is what NVIDIA's sm_70+ GPUs return
	 * (observed in TVM #12274 and CINN #938), and what code relying on it
	 * expects: cuda-samples' reduce7 sums a partial final warp that way.
	 */
	if (j < 0 || j > 31 || !(group & (1u << j)) || lanes[j] == NULL)
		t->r[in->d[0]] = 0;
	else
		t->r[in->d[0]] = (uint32_t)lanes[j]->wait_a;
	if (in->nd > 1)
		t->r[in->d[1]] = p;
}

static void redux_all(struct sg_thread **lanes, uint32_t group, const struct sg_insn *in)
{
	uint32_t acc = 0;
	bool first = true;

	for (int l = 0; l < 32; l++) {
		uint32_t v;

		if (!(group & (1u << l)))
			continue;
		v = (uint32_t)lanes[l]->wait_a;
		if (first) {
			acc = v;
			first = false;
			continue;
		}
		switch (in->aux & 0xff) {
		case SG_AOP_ADD:
			acc += v;
			break;
		case SG_AOP_AND:
			acc &= v;
			break;
		case SG_AOP_OR:
			acc |= v;
			break;
		case SG_AOP_XOR:
			acc ^= v;
			break;
		case SG_AOP_MIN:
			if (in->aux & 0x100)
				acc = (int32_t)v < (int32_t)acc ? v : acc;
			else
				acc = v < acc ? v : acc;
			break;
		case SG_AOP_MAX:
			if (in->aux & 0x100)
				acc = (int32_t)v > (int32_t)acc ? v : acc;
			else
				acc = v > acc ? v : acc;
			break;
		}
	}
	for (int l = 0; l < 32; l++)
		if (group & (1u << l))
			lanes[l]->r[lanes[l]->wait_insn->d[0]] = acc;
}

/* Performs the collective of the waiting lanes in `group` (all at the same kind and mask). */
static void collective(struct sg_thread **lanes, uint32_t group, int kind)
{
	uint32_t ballot = 0, any = 0, all = 1;
	int first = __builtin_ctz(group);
	const struct sg_insn *in0 = lanes[first]->wait_insn;

	if (kind == SG_W_MATRIX) { /* a fault stays on the block: sg_block_resume returns it */
		sg_matrix_collective(lanes, group);
		for (int l = 0; l < 32; l++)
			if (group & (1u << l))
				lanes[l]->state = SG_T_READY;
		return;
	}

	for (int l = 0; l < 32; l++) {
		if (!(group & (1u << l)))
			continue;
		if (lanes[l]->wait_a & 1)
			ballot |= 1u << l;
	}
	any = ballot != 0;
	all = ballot == group;
	for (int l = 0; l < 32; l++) {
		struct sg_thread *t = lanes[l];
		const struct sg_insn *in;

		if (!(group & (1u << l)))
			continue;
		in = t->wait_insn;
		switch (kind) {
		case SG_W_SHFL:
			shfl_one(lanes, t, group);
			break;
		case SG_W_VOTE:
			switch (in->aux) {
			case SG_M_ALL:
				t->r[in->d[0]] = all;
				break;
			case SG_M_ANY:
				t->r[in->d[0]] = any;
				break;
			case SG_M_UNIV:
				t->r[in->d[0]] = all || !any;
				break;
			default:
				t->r[in->d[0]] = ballot;
				break;
			}
			break;
		case SG_W_MATCH: {
			uint32_t same = 0;

			for (int k = 0; k < 32; k++)
				if ((group & (1u << k)) && lanes[k]->wait_a == t->wait_a)
					same |= 1u << k;
			if (in->aux == SG_M_ANY) {
				t->r[in->d[0]] = same;
			} else {
				bool eq = same == group;

				t->r[in->d[0]] = eq ? group : 0;
				if (in->nd > 1)
					t->r[in->d[1]] = eq;
			}
			break;
		}
		default:
			break;
		}
	}
	if (kind == SG_W_REDUX)
		redux_all(lanes, group, in0);
	for (int l = 0; l < 32; l++)
		if (group & (1u << l))
			lanes[l]->state = SG_T_READY;
}

/* Resolves what can be resolved in warp w; true when some lane can run again. */
static bool resolve_warp(struct sg_block *b, uint32_t w)
{
	struct sg_thread *lanes[32];
	uint32_t exist = lane_bits(b, w), live = 0, waiting = 0, ready = 0;
	bool released = false;

	for (int l = 0; l < 32; l++) {
		struct sg_thread *t;

		lanes[l] = NULL;
		if (!(exist & (1u << l)))
			continue;
		t = &b->threads[w * 32 + (uint32_t)l];
		lanes[l] = t;
		if (t->state != SG_T_EXITED)
			live |= 1u << l;
		if (t->state == SG_T_WARP)
			waiting |= 1u << l;
		if (t->state == SG_T_READY)
			ready |= 1u << l;
	}
	while (waiting) {
		int l = __builtin_ctz(waiting);
		struct sg_thread *t = lanes[l];
		uint32_t group, need;
		bool ok = true;

		if (t->wait_kind == SG_W_ACTIVEMASK) {
			/* the lanes converged here are those waiting at this same instruction */
			uint32_t same = 0;

			if (ready) {
				waiting &= ~(1u << l);
				continue;
			}
			for (int k = 0; k < 32; k++)
				if ((waiting & (1u << k)) &&
				    lanes[k]->wait_kind == SG_W_ACTIVEMASK &&
				    lanes[k]->wait_insn == t->wait_insn)
					same |= 1u << k;
			for (int k = 0; k < 32; k++) {
				if (!(same & (1u << k)))
					continue;
				lanes[k]->r[lanes[k]->wait_insn->d[0]] = same;
				lanes[k]->state = SG_T_READY;
			}
			waiting &= ~same;
			released = true;
			continue;
		}
		need = (t->wait_mask | (1u << l)) & live;
		for (int k = 0; k < 32 && ok; k++) {
			struct sg_thread *o = lanes[k];

			if (!(need & (1u << k)))
				continue;
			if (o->state != SG_T_WARP || o->wait_kind != t->wait_kind ||
			    (o->wait_mask | (1u << k)) != (t->wait_mask | (1u << l)))
				ok = false;
		}
		group = need;
		if (ok) {
			collective(lanes, group, t->wait_kind);
			released = true;
			waiting &= ~group;
		} else {
			waiting &= ~(1u << l);
		}
	}
	return released;
}

/* ---- CTA barriers ---- */

static bool resolve_bars(struct sg_block *b)
{
	bool released = false;
	uint32_t live = b->nthreads - b->nexited;

	for (uint32_t id = 0; id < 16; id++) {
		uint32_t expected = live, waiters = 0, popc = 0;

		if (b->bar_arrived[id] == 0)
			continue;
		for (uint32_t i = 0; i < b->nthreads; i++) {
			struct sg_thread *t = &b->threads[i];

			if (t->state != SG_T_BAR || t->bar_id != id)
				continue;
			waiters++;
			if (t->bar_count)
				expected = t->bar_count;
			popc += (uint32_t)(t->wait_a & 1);
		}
		if (b->bar_arrived[id] < expected || waiters == 0)
			continue;
		b->bar_arrived[id] -= expected < b->bar_arrived[id] ? expected : b->bar_arrived[id];
		for (uint32_t i = 0; i < b->nthreads; i++) {
			struct sg_thread *t = &b->threads[i];
			const struct sg_insn *in = t->wait_insn;

			if (t->state != SG_T_BAR || t->bar_id != id)
				continue;
			if (in->flags & 1) { /* bar.red */
				switch (in->aux) {
				case SG_BOP_POPC:
					t->r[in->d[0]] = popc;
					break;
				case SG_BOP_AND:
					t->r[in->d[0]] = popc == waiters;
					break;
				case SG_BOP_OR:
					t->r[in->d[0]] = popc != 0;
					break;
				}
			}
			t->state = SG_T_READY;
		}
		released = true;
	}
	return released;
}

/* ---- the block ---- */

/* Sets thread i of the block, at (x, y, z) in it, at the entry's start, its registers from tmpl. */
static void init_thread(struct sg_block *b, struct sg_thread *t, uint32_t i, const uint32_t xyz[3],
			const uint64_t *tmpl)
{
	const struct sg_grid *g = b->grid;
	const struct sg_func *e = g->entry;

	t->blk = b;
	t->linear = i;
	t->tid[0] = xyz[0];
	t->tid[1] = xyz[1];
	t->tid[2] = xyz[2];
	t->lane = (uint8_t)(i & 31);
	t->warp = i >> 5;
	t->state = SG_T_READY;
	t->pc = 0;
	t->code = e->code;
	t->fn = e;
	t->depth = 0;
	t->cc = 0;
	t->local_base = 0;
	t->local_size = g->local_size;
	t->r = t->r0;
	t->pframe = t->pframe0;
	memcpy(t->r0, tmpl, (size_t)e->nslots * 8);
	t->cs.top = 0;
	t->cs.nframes = 0;
}

void sg_block_start(struct sg_block *b)
{
	const struct sg_grid *g = b->grid;
	const uint64_t *tmpl = g->tmpl[g->entry - g->prog->funcs];
	uint32_t xyz[3] = {0, 0, 0};

	b->nwarps = (b->nthreads + 31) / 32;
	b->err = 0;
	b->errmsg[0] = 0;
	b->nexited = 0;
	memset(b->bar_arrived, 0, sizeof(b->bar_arrived));
	memset(b->xc, 0, sizeof(b->xc));
	b->xnext = 0;
	b->xlast = 0;
	/* the thread's index counted in x, then y, then z, without a division per thread */
	for (uint32_t i = 0; i < b->nthreads; i++) {
		init_thread(b, &b->threads[i], i, xyz, tmpl);
		if (++xyz[0] == g->block[0]) {
			xyz[0] = 0;
			if (++xyz[1] == g->block[1]) {
				xyz[1] = 0;
				xyz[2]++;
			}
		}
	}
}

int sg_block_resume(struct sg_block *b, bool pause)
{
	uint32_t nwarps = b->nwarps;

	for (;;) {
		bool progress = false, any_yield = false;

		for (uint32_t w = 0; w < nwarps; w++) {
			struct sg_thread *base = &b->threads[w * 32];
			uint32_t n = b->nthreads - w * 32 < 32 ? b->nthreads - w * 32 : 32;

			for (;;) {
				bool yielded = false, released;

				for (uint32_t l = 0; l < n && !progress; l++)
					progress = base[l].state == SG_T_READY;
				if (run_warp(b, base, n, &yielded) == SG_STOP_FAULT)
					return b->err;
				any_yield |= yielded;
				released = resolve_warp(b, w);
				if (b->err) /* a warp collective faulted */
					return b->err;
				if (!released || yielded)
					break;
			}
		}
		if (b->nexited == b->nthreads)
			return 0;
		if (resolve_bars(b))
			progress = true;
		if (pause && any_yield)
			return SG_BLOCK_PAUSED;
		if (!progress) {
			struct sg_thread *t = NULL;

			for (uint32_t i = 0; i < b->nthreads && t == NULL; i++)
				if (b->threads[i].state != SG_T_EXITED)
					t = &b->threads[i];
			return t ? (sg_fault(t, CUDA_ERROR_LAUNCH_FAILED,
					     "deadlock: threads wait at a barrier or warp "
					     "collective that can never complete"),
				    b->err)
				 : 0;
		}
	}
}

int sg_block_run(struct sg_block *b)
{
	sg_block_start(b);
	return sg_block_resume(b, false);
}
