/* pool.h -- admission policy with no I/O: placement, the reservation ledger, tenant limits
 * and shares, the wait queue and its order, preemption.
 *
 * A claim asks for N GPUs and M bytes on each (M 0: the pool's default_memory, or a whole
 * GPU when that is 0). It is admitted when its tenant's limits allow it and N GPUs that are
 * not draining each have M bytes unreserved; the memory is then reserved on each until the
 * claim is released. A claim that could never fit is refused at once. One that does not fit
 * now waits. A tenant has at most its queue limit waiting (queue=N on its line, else
 * max_queued_per_tenant); past it a claim is refused, and a tenant whose queue limit is 0 is
 * admitted at once or not at all. When the pool is at max_sessions, a newcomer may take the
 * place of the newest waiter of the tenant with the most waiters, so that one tenant's
 * waiters never lock another out (gp_pool_displace). spread places on the GPUs with the most
 * room left, binpack on those with the least that still fit; ties go to fewer sessions, then
 * the lower slot.
 *
 * MIG (docs/operations.md "Slicing and sharing"): a GPU in MIG mode (mig) takes no claim
 * itself; each of its instances (instance) is a target of its own, with its own memory,
 * compute shares and sessions, and counts as one GPU toward tenant limits. A claim with a
 * slice (GPUPOOL_SLICE, src/slice.h) goes only on instances that match it; one without goes
 * on whole GPUs and instances alike, by memory. Draining a GPU in MIG mode drains its
 * instances.
 *
 * A compute share (percent of a GPU, docs/scheduling.md) is the claim's own, cut to its
 * tenant's compute=, else its tenant's default_compute; a claim with one is placed only on
 * GPUs whose granted shares leave room for it (no GPU is promised more than 100%). A claim
 * without one is not counted and not limited.
 *
 * Priorities (docs/scheduling.md): a claim's priority is its tenant's (priority=N, 0 without),
 * or what its client asked for when that is lower. Priority comes first, everywhere: the
 * queue serves higher priorities first, and what follows orders waiters of one priority.
 *
 * The queue's order (docs/scheduling.md): a tenant may have a guaranteed share of the pool
 * (guarantee_gpus, guarantee_memory) and borrow what is idle beyond it. Each tenant with
 * waiters is ranked by its oldest one: first tenants whom that waiter, admitted, would keep
 * within their guarantee ("entitled"), then the others ("borrowing"); within each group the
 * tenant holding the least of its guarantee first (weighted fair queueing, the guarantee
 * being the weight; a tenant without one comes after those with one). Waiters are served
 * by their tenant's rank, then in arrival order, so one tenant's go in the order they came.
 * The first waiter in that order that waits for capacity holds up those after it (so a
 * large claim is not starved by small ones); a waiter held back only by its own tenant's
 * limits holds up nobody.
 *
 * Preemption (gp_pool_preempt): when the first waiter in the queue's order waits for room,
 * admitted preemptible claims it may preempt are chosen, the lowest priority first and
 * within one priority the newest first (the least work lost), until their release would
 * make room, and those it would not need (their GPUs do not help) are spared; the
 * caller ends them after a grace, if that still lets the first waiter in then. A waiter may
 * preempt a preemptible claim of lower priority (of any tenant, its own included, within
 * its guarantee or not), and, when it is entitled, one of the same or lower priority of
 * another tenant that is borrowing; never one of higher priority.
 *
 * Nothing here sends, logs or reads a clock: time comes in as an argument, decisions come
 * back as values, and admission.c does the I/O (tests/unit/test_pool.c tests this alone).
 * The pool does not own claims: the caller embeds them (struct gp_session) and must
 * release a claim before freeing it.
 */
#ifndef GP_POOL_H
#define GP_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "slice.h"
#include "stats.h"

/* Ledger entries: whole GPUs, GPUs in MIG mode and their instances. */
#define GP_POOL_MAX_GPUS 64

struct gp_pool_gpu {
	uint32_t index; /* the GPU's ordinal on this host */
	uint64_t total_mem;
	uint64_t reserved; /* sum of the memory limits of claims placed here */
	unsigned sessions;
	unsigned compute; /* percent of its compute granted to claims placed here, at most 100 */
	bool draining;	  /* takes no new claims */
	/* MIG: set by the caller after gp_pool_add_gpu */
	bool mig;      /* in MIG mode: not a target itself */
	bool instance; /* a MIG instance of the GPU whose index is parent */
	uint32_t parent;
	uint32_t sms;	  /* multiprocessors; 0: not known */
	char profile[16]; /* an instance's, "1g.10gb" */
};

enum gp_claim_state {
	GP_CLAIM_IDLE = 0, /* not asked, refused, expired or released */
	GP_CLAIM_QUEUED,
	GP_CLAIM_ADMITTED,
};

struct gp_claim {
	/* The request, set by the caller before gp_pool_enqueue. */
	const char *tenant;    /* must outlive the claim */
	uint32_t want_gpus;    /* 0: 1 */
	uint64_t want_memory;  /* per GPU; 0: the pool's default_memory, or a whole GPU */
	uint32_t want_compute; /* percent of each GPU's compute; 0: its tenant's default_compute */
	bool preemptible;  /* its client's word (GPUPOOL_PREEMPTIBLE); its tenant's counts too */
	bool priority_set; /* its client asked for a priority (GPUPOOL_PRIORITY) */
	int32_t want_priority; /* that priority, 0-9, capped by its tenant's (gp_pool_priority) */
	struct gp_slice slice; /* GPUPOOL_SLICE: only MIG instances that match it */
	/* The pool's, read-only to the caller. */
	enum gp_claim_state state;
	uint64_t queued_at; /* the `now` it was queued at */
	uint64_t seq;	    /* arrival order in the queue */
	uint32_t ndev;
	uint32_t dev[GP_STATS_MAX_DEVICES]; /* struct gp_pool_gpu.index of each */
	uint64_t mem_limit;		    /* per GPU, as reserved */
	uint32_t compute;		    /* percent of each GPU's compute, as granted; 0: none */
	bool preempting; /* chosen by gp_pool_preempt: the caller ends it after preempt_grace */
	struct gp_claim *qnext, *anext;
	/* Its tenant's place in the queue's order, set afresh on each look at the queue. */
	unsigned ord_prio; /* its priority (gp_pool_priority) */
	unsigned ord_tier; /* 0: entitled, 1: borrowing */
	double ord_share;  /* what its tenant holds over its guarantee; DBL_MAX: none */
	bool ord_seen;
};

struct gp_pool {
	struct gp_pool_gpu gpu[GP_POOL_MAX_GPUS];
	uint32_t ngpus;
	struct gp_claim *queue;	   /* waiting, oldest first */
	struct gp_claim *admitted; /* holding reservations */
	uint64_t next_seq;
};

/* Why a waiter waits (gp_pool_waiting_for). */
enum gp_pool_wait {
	GP_POOL_WAIT_NONE = 0, /* not queued, or would go now */
	GP_POOL_WAIT_TENANT,   /* its own tenant's limits (sessions, gpus, memory) */
	GP_POOL_WAIT_CAPACITY, /* no room on enough GPUs */
	GP_POOL_WAIT_BEHIND,   /* room, but a waiter before it in the queue's order waits */
};

/* What a tenant holds now, summed over its admitted claims. */
struct gp_pool_usage {
	uint64_t sessions, gpus, memory;
};

void gp_pool_init(struct gp_pool *p);
/* Adds a GPU to the ledger. -EINVAL: total_mem 0 or the index is there already;
 * -ENOSPC: GP_POOL_MAX_GPUS GPUs already. */
int gp_pool_add_gpu(struct gp_pool *p, uint32_t index, uint64_t total_mem);
/* The ledger entry of the GPU with that index, or NULL. */
struct gp_pool_gpu *gp_pool_gpu(struct gp_pool *p, uint32_t index);
/* May g take claims at all: not a GPU in MIG mode (draining aside)? */
bool gp_pool_target(const struct gp_pool_gpu *g);
/* How many entries are targets: whole GPUs and MIG instances. */
uint32_t gp_pool_targets(const struct gp_pool *p);
/* Could c go on g, room aside: a target, not draining (nor its GPU, for an instance), and a
 * MIG instance matching c's slice when c has one? */
bool gp_pool_eligible(const struct gp_pool *p, const struct gp_claim *c,
		      const struct gp_pool_gpu *g);

/*
 * Queues a claim at now, or refuses one that could never fit (the pool is too small, or
 * the tenant may never hold that much) with the reason in why. 0: queued (call
 * gp_pool_admit_next to see whether it goes at once); GP_EREFUSED: refused, the claim
 * stays idle; -EINVAL: missing arguments; -EALREADY: the claim is queued or admitted.
 */
int gp_pool_enqueue(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
		    uint64_t now, char *why, size_t whylen);
/* May a queued claim that could not be admitted at once stay in the queue? Not when
 * queue_timeout is 0 or its tenant's queue limit is 0: the caller then releases and refuses
 * it. */
bool gp_pool_may_wait(const struct gp_pool *p, const struct gp_config *cfg,
		      const struct gp_claim *c);
/* The compute share the claim gets (percent; 0: none): its own request cut to its tenant's
 * compute=, or its tenant's default_compute. */
uint32_t gp_pool_compute_share(const struct gp_config *cfg, const struct gp_claim *c);
/* Preemptible: its tenant's line says so (preemptible=yes), or says nothing and its client
 * does. */
bool gp_pool_preemptible(const struct gp_config *cfg, const struct gp_claim *c);
/* Its priority: what its client asked for, at most its tenant's priority=; without a request
 * its tenant's (0 without priority=). */
unsigned gp_pool_priority(const struct gp_config *cfg, const struct gp_claim *c);
/* Would waiter w, first in the queue's order, preempt admitted claim x by priority (x's
 * priority is lower) rather than by entitlement? For the reason given. */
bool gp_pool_preempt_by_priority(const struct gp_config *cfg, const struct gp_claim *x,
				 const struct gp_claim *w);
/* While claims are preempting, the waiter that ending them would let in now (the first in
 * the queue's order, when it waits for room); else NULL. For poolctl. */
struct gp_claim *gp_pool_preempt_waiter(struct gp_pool *p, const struct gp_config *cfg);
/*
 * When the first waiter in the queue's order (past those held by their own tenant's limits)
 * waits for room, chooses admitted preemptible claims it may preempt (above), the lowest
 * priority first, then the newest, until releasing them would let the waiter in, then spares
 * each one (the latest chosen first) without which it would still get in; marks them
 * preempting, puts them in victims (at most max) and the waiter in *waiter, and returns how
 * many. 0, marking none: no preemption is due, one is under way (a claim is preempting), or
 * no such claims would make room.
 */
unsigned gp_pool_preempt(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim **victims,
			 unsigned max, struct gp_claim **waiter);
/* Is a preemption still due: the first waiter in the order waits for room, it may preempt
 * every preempting claim, and (when claims are preempting) ending them would let it in now?
 * The waiter they were chosen for may have been admitted meanwhile and another come first,
 * whom they may not help, or who may not preempt them. If
 * not due, every preempting mark is cleared and false returned: the caller ends no one. */
bool gp_pool_preempt_due(struct gp_pool *p, const struct gp_config *cfg);
/* How many claims of the tenant wait now. */
unsigned gp_pool_tenant_waiting(const struct gp_pool *p, const char *tenant);
/*
 * The pool is over max_sessions because a session of tenant came in (queued or admitted
 * already): the waiter of another tenant that gives up its place, taken out of the queue
 * (IDLE) for the caller to refuse, or NULL when the newcomer is the one to go. It is the
 * newest waiter of the tenant with the most (ties: the one whose waiter came last), and
 * only when that tenant, having lost it, still has as many waiting as tenant has.
 */
struct gp_claim *gp_pool_displace(struct gp_pool *p, const char *tenant);
/* Admits the next waiter that fits now, oldest first, and returns it (now ADMITTED with its
 * GPUs and limit), or NULL when no more can go. Call until NULL after anything that may
 * make room: an enqueue, a release, a GPU's drain ending, a new configuration. */
struct gp_claim *gp_pool_admit_next(struct gp_pool *p, const struct gp_config *cfg);
/* The oldest waiter that has waited timeout_ms or more at now, taken out of the queue
 * (IDLE), or NULL. timeout_ms 0 takes every waiter. */
struct gp_claim *gp_pool_expire_next(struct gp_pool *p, uint64_t now, uint64_t timeout_ms);
/* Ends a claim whatever its state: out of the queue, its reservation returned. Idempotent. */
void gp_pool_release(struct gp_pool *p, struct gp_claim *c);
void gp_pool_tenant_usage(const struct gp_pool *p, const char *tenant, struct gp_pool_usage *u);
/* Does the tenant hold no more than its guarantee (and has one)? */
bool gp_pool_tenant_entitled(const struct gp_pool *p, const struct gp_config *cfg,
			     const char *tenant);
/* Why a queued claim waits now, and its place in the queue's order (1: next; 0 when not
 * queued). */
enum gp_pool_wait gp_pool_waiting_for(struct gp_pool *p, const struct gp_config *cfg,
				      const struct gp_claim *c, unsigned *place);
/* How many waiters of higher priority than queued claim c's wait (all of them come before it
 * in the queue's order); 0 when c is not queued. */
unsigned gp_pool_ahead_higher(const struct gp_pool *p, const struct gp_config *cfg,
			      const struct gp_claim *c);

/* What a claim that is not queued (a quote's) would meet if it were queued now. */
struct gp_pool_prospect {
	unsigned priority;     /* its priority (gp_pool_priority) */
	unsigned ahead;	       /* waiters the queue's order would put before it */
	unsigned ahead_higher; /* of them, those of higher priority */
	bool held_up;	       /* one of them waits for room: it would wait behind them */
	bool fits;	       /* it would be admitted at once */
	bool tenant;	       /* it would wait for its own tenant's limits */
	/* Not held up and without room: how many preemptible claims it may preempt would be
	 * ended to let it in (chosen as gp_pool_preempt would, none marked); 0: none would. */
	unsigned preempt;
};
/* Fills o for claim c, its request set and idle (-EINVAL otherwise); changes nothing but the
 * queue's order marks. 0 on success. */
int gp_pool_prospect(struct gp_pool *p, const struct gp_config *cfg, struct gp_claim *c,
		     struct gp_pool_prospect *o);
/* "tenant", "capacity", "behind", "" */
const char *gp_pool_wait_name(enum gp_pool_wait w);

#endif
