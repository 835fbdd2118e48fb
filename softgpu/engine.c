/* engine.c -- the block pool: runs the blocks of a grid in parallel on host threads. */
#include <fenv.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "softgpu.h"

/*
 * DESIGN: a pool of sg_block_threads() - 1 workers (SOFTGPU_THREADS cut to an MPS
 * thread percentage), started at the first launch,
 * plus the stream thread that runs the launch, take the blocks of active
 * grids by index (an atomic counter per grid). A block belongs to one host
 * thread from start to end (exec.c needs no locks); blocks of a grid, and of
 * concurrent grids from different streams, run in parallel. The first fault
 * stops the grid: no new blocks start, running ones finish, and the launch
 * reports that fault. Each host thread keeps its scratch (thread states,
 * registers, local, shared memory) across blocks and grids.
 *
 * A cooperative grid's blocks must all be resident at once (grid.sync()
 * waits for every block), and there are more of them than host threads. Each
 * of its blocks gets scratch of its own and is run in turns: a host thread
 * takes a block from the grid's run queue, runs it until a round in which
 * one of its threads yielded (a spin loop, such as grid.sync()'s wait, used
 * up its budget: exec.c), and puts it back at the tail. A block so moves
 * between host threads, handed over under qlock; between turns no thread
 * touches it. The launch's limit (cuOccupancy... x SMs blocks, launch.c)
 * bounds the memory this takes.
 *
 * plock guards the job list and each job's `inside` count; blocks are taken
 * with atomics, a cooperative grid's under its qlock (taken after plock,
 * never with it held). A cooperative job's qlen is written under qlock and
 * read without it (atomics) to decide whether to join the job.
 */

struct scratch {
	struct sg_thread *threads;
	uint32_t cap_threads;
	uint8_t *regs, *local, *frames, *shared;
	size_t cap_regs, cap_local, cap_frames, cap_shared;
};

/* A block of a cooperative grid, alive from its first turn to its end. */
struct cblock {
	struct sg_block b;
	struct scratch s;
};

struct job {
	struct sg_launch *l;
	uint64_t nblocks;
	uint64_t next;	 /* atomic: next block to start */
	int err;	 /* atomic: first fault */
	unsigned inside; /* threads working on it (plock) */
	char msg[200];
	uint64_t icount; /* atomic */
	struct job *link;
	/* cooperative grids only (qlock) */
	bool coop;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;	/* a block was queued or ended, or the grid failed */
	struct cblock **blocks; /* by index; NULL before its first turn and after its end */
	uint64_t *queue;	/* ring of block indexes waiting for a turn */
	uint64_t qhead, qlen;	/* qlen: also read atomically without qlock */
	uint64_t running;	/* blocks taking a turn now */
};

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcond = PTHREAD_COND_INITIALIZER;
static struct job *jobs;
static bool started;
static unsigned worker_count;
static __thread struct scratch *tls_scratch;
static __thread unsigned tls_worker;
static pthread_key_t scratch_key;

static void scratch_deinit(struct scratch *s)
{
	for (uint32_t i = 0; i < s->cap_threads; i++) {
		free(s->threads[i].cs.mem);
		free(s->threads[i].cs.frames);
	}
	free(s->threads);
	free(s->regs);
	free(s->local);
	free(s->frames);
	free(s->shared);
}

static void scratch_free(void *p)
{
	if (p == NULL)
		return;
	scratch_deinit(p);
	free(p);
}

static int fit(uint8_t **p, size_t *cap, size_t need)
{
	uint8_t *n;

	if (need <= *cap)
		return 0;
	n = realloc(*p, need);
	if (n == NULL)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}

/* Grows s to what a block of g needs; 0 or -1. */
static int scratch_fit(struct scratch *s, const struct sg_grid *g)
{
	uint32_t n = g->nthreads;

	if (n > s->cap_threads) {
		struct sg_thread *t = realloc(s->threads, n * sizeof(*t));

		if (t == NULL)
			return -1;
		memset(t + s->cap_threads, 0, (n - s->cap_threads) * sizeof(*t));
		s->threads = t;
		s->cap_threads = n;
	}
	if (fit(&s->regs, &s->cap_regs, (size_t)n * g->entry->nslots * 8 + 8) ||
	    fit(&s->local, &s->cap_local, (size_t)n * g->local_size + 16) ||
	    fit(&s->frames, &s->cap_frames, (size_t)n * g->entry->frame_size + 16) ||
	    fit(&s->shared, &s->cap_shared, (size_t)g->shared_size + 16))
		return -1;
	return 0;
}

static struct scratch *scratch_get(const struct sg_grid *g)
{
	struct scratch *s = tls_scratch;

	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return NULL;
		tls_scratch = s;
		pthread_setspecific(scratch_key, s);
	}
	return scratch_fit(s, g) ? NULL : s;
}

/* Sets up block `index` of g to run in s. */
static void block_init(struct sg_block *b, const struct sg_grid *g, struct scratch *s,
		       uint64_t index)
{
	memset(b, 0, sizeof(*b));
	b->grid = g;
	b->ctaid[0] = (uint32_t)(index % g->grid[0]);
	b->ctaid[1] = (uint32_t)((index / g->grid[0]) % g->grid[1]);
	b->ctaid[2] = (uint32_t)(index / ((uint64_t)g->grid[0] * g->grid[1]));
	b->shared = s->shared;
	b->shared_size = g->shared_size;
	b->threads = s->threads;
	b->nthreads = g->nthreads;
	b->worker = tls_worker;
	/*
	 * A block reads nothing an earlier block or launch left: scratch is reused, so what a
	 * kernel may read before it writes (local, call frames, shared) starts at 0, and
	 * sg_block_start sets every register from the entry's template (0 but for constants).
	 */
	memset(s->local, 0, (size_t)g->nthreads * g->local_size);
	memset(s->frames, 0, (size_t)g->nthreads * g->entry->frame_size);
	memset(s->shared, 0, g->shared_size);
	for (uint32_t i = 0; i < g->nthreads; i++) {
		struct sg_thread *t = &s->threads[i];

		t->r0 = (uint64_t *)(s->regs + (size_t)i * g->entry->nslots * 8);
		t->pframe0 = s->frames + (size_t)i * g->entry->frame_size;
		t->local = s->local + (size_t)i * g->local_size;
	}
}

static void job_fail(struct job *j, int rc, const char *msg)
{
	int zero = 0;

	if (__atomic_compare_exchange_n(&j->err, &zero, rc, false, __ATOMIC_SEQ_CST,
					__ATOMIC_SEQ_CST) &&
	    msg)
		memcpy(j->msg, msg, sizeof(j->msg));
}

static int run_block(struct job *j, struct scratch *s, uint64_t index, uint64_t *icount)
{
	struct sg_block b;
	int rc;

	block_init(&b, &j->l->g, s, index);
	rc = sg_block_run(&b);
	*icount += b.icount;
	if (rc)
		job_fail(j, rc, b.errmsg);
	return rc;
}

/* One turn of block `index` of cooperative job j: SG_BLOCK_PAUSED, 0 or a CUresult. */
static int coop_turn(struct job *j, uint64_t index, uint64_t *icount)
{
	const struct sg_grid *g = &j->l->g;
	struct cblock *cb = j->blocks[index];
	int rc;

	if (cb == NULL) {
		cb = calloc(1, sizeof(*cb));
		if (cb == NULL || scratch_fit(&cb->s, g)) {
			if (cb)
				scratch_deinit(&cb->s);
			free(cb);
			job_fail(j, CUDA_ERROR_OUT_OF_MEMORY, NULL);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		block_init(&cb->b, g, &cb->s, index);
		sg_block_start(&cb->b);
		j->blocks[index] = cb;
	}
	cb->b.worker = tls_worker;
	rc = sg_block_resume(&cb->b, true);
	*icount += cb->b.icount;
	cb->b.icount = 0;
	if (rc == SG_BLOCK_PAUSED)
		return rc;
	if (rc)
		job_fail(j, rc, cb->b.errmsg);
	scratch_deinit(&cb->s);
	free(cb);
	j->blocks[index] = NULL;
	return rc;
}

/* Takes turns of j's blocks until every block ended or the grid failed. */
static void work_on_coop(struct job *j)
{
	uint64_t icount = 0;

	pthread_mutex_lock(&j->qlock);
	for (;;) {
		uint64_t index;
		int rc;

		if (__atomic_load_n(&j->err, __ATOMIC_RELAXED))
			break;
		if (j->qlen == 0) {
			if (j->running == 0)
				break; /* every block ended */
			pthread_cond_wait(&j->qcond, &j->qlock);
			continue;
		}
		index = j->queue[j->qhead];
		j->qhead = (j->qhead + 1) % j->nblocks;
		__atomic_store_n(&j->qlen, j->qlen - 1, __ATOMIC_RELAXED);
		j->running++;
		pthread_mutex_unlock(&j->qlock);
		rc = coop_turn(j, index, &icount);
		pthread_mutex_lock(&j->qlock);
		j->running--;
		if (rc == SG_BLOCK_PAUSED) {
			j->queue[(j->qhead + j->qlen) % j->nblocks] = index;
			__atomic_store_n(&j->qlen, j->qlen + 1, __ATOMIC_RELAXED);
		}
		pthread_cond_broadcast(&j->qcond);
	}
	pthread_cond_broadcast(&j->qcond);
	pthread_mutex_unlock(&j->qlock);
	__atomic_fetch_add(&j->icount, icount, __ATOMIC_RELAXED);
}

/* Takes blocks of j until none are left or the grid failed. */
static void work_on(struct job *j)
{
	struct scratch *s;
	uint64_t icount = 0;

	if (j->coop) {
		work_on_coop(j);
		return;
	}
	s = scratch_get(&j->l->g);
	if (s == NULL) {
		job_fail(j, CUDA_ERROR_OUT_OF_MEMORY, NULL);
		return;
	}
	while (__atomic_load_n(&j->err, __ATOMIC_RELAXED) == 0) {
		uint64_t b = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);

		if (b >= j->nblocks)
			break;
		if (run_block(j, s, b, &icount))
			break;
	}
	__atomic_fetch_add(&j->icount, icount, __ATOMIC_RELAXED);
}

static bool has_work(const struct job *j)
{
	if (__atomic_load_n(&j->err, __ATOMIC_RELAXED))
		return false;
	if (j->coop)
		return __atomic_load_n(&j->qlen, __ATOMIC_RELAXED) > 0;
	return __atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->nblocks;
}

static void *worker(void *arg)
{
	tls_worker = (unsigned)(uintptr_t)arg;
	fesetenv(FE_DFL_ENV);
	_mm_setcsr(0x1f80);
	pthread_mutex_lock(&plock);
	for (;;) {
		struct job *j;

		for (j = jobs; j && !has_work(j); j = j->link)
			;
		if (j == NULL) {
			pthread_cond_wait(&pcond, &plock);
			continue;
		}
		j->inside++;
		pthread_mutex_unlock(&plock);
		work_on(j);
		pthread_mutex_lock(&plock);
		j->inside--;
		pthread_cond_broadcast(&pcond);
	}
	return NULL;
}

static void start_pool(void)
{
	pthread_key_create(&scratch_key, scratch_free);
	for (unsigned i = 1; i < sg_block_threads(); i++) {
		pthread_t t;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, worker, (void *)(uintptr_t)i) == 0)
			worker_count++;
		pthread_attr_destroy(&attr);
	}
}

/*
 * A cooperative grid's queue (every block waiting for its first turn) and its
 * workspace: the {size, barrier} pair grid.sync() counts arrivals in, in
 * device memory of the launch's context for the launch's duration.
 */
static int coop_prepare(struct job *j, struct sg_launch *l)
{
	struct sg_alloc a;
	uint32_t ws[2] = {sizeof(ws), 0};

	j->coop = true;
	pthread_mutex_init(&j->qlock, NULL);
	pthread_cond_init(&j->qcond, NULL);
	j->blocks = calloc(j->nblocks, sizeof(*j->blocks));
	j->queue = malloc(j->nblocks * sizeof(*j->queue));
	if (j->blocks == NULL || j->queue == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint64_t i = 0; i < j->nblocks; i++)
		j->queue[i] = i;
	j->qlen = j->nblocks;
	if (sg_mem_alloc(l->ctx, sizeof(ws), SG_MEM_HEAP, &l->g.coop_ws) != CUDA_SUCCESS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!sg_mem_find(l->g.coop_ws, &a))
		return CUDA_ERROR_OUT_OF_MEMORY;
	__atomic_store_n((uint32_t *)a.host, ws[0], __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)a.host + 1, ws[1], __ATOMIC_RELAXED);
	return 0;
}

static void coop_finish(struct job *j, struct sg_launch *l)
{
	if (j->blocks) {
		for (uint64_t i = 0; i < j->nblocks; i++) {
			if (j->blocks[i]) /* left when the grid failed */
				scratch_deinit(&j->blocks[i]->s);
			free(j->blocks[i]);
		}
	}
	free(j->blocks);
	free(j->queue);
	if (l->g.coop_ws)
		sg_mem_free(l->ctx, l->g.coop_ws, SG_MEM_HEAP);
	l->g.coop_ws = 0;
	pthread_cond_destroy(&j->qcond);
	pthread_mutex_destroy(&j->qlock);
}

int sg_engine_run(struct sg_launch *l)
{
	struct job j, **pp;
	uint64_t t0 = sg_cfg.stats ? sg_now_ns() : 0;
	const struct sg_grid *g = &l->g;

	memset(&j, 0, sizeof(j));
	j.l = l;
	j.nblocks = (uint64_t)g->grid[0] * g->grid[1] * g->grid[2];
	if (g->coop) {
		int rc = coop_prepare(&j, l);

		if (rc) {
			coop_finish(&j, l);
			sg_log("launch of %s failed: %s: no memory for its blocks", g->entry->name,
			       sg_error_name(rc));
			return rc;
		}
	}
	pthread_mutex_lock(&plock);
	if (!started) {
		started = true;
		start_pool();
	}
	j.inside = 1; /* this thread */
	j.link = jobs;
	jobs = &j;
	pthread_cond_broadcast(&pcond);
	pthread_mutex_unlock(&plock);

	work_on(&j);

	pthread_mutex_lock(&plock);
	j.inside--;
	while (j.inside > 0)
		pthread_cond_wait(&pcond, &plock);
	for (pp = &jobs; *pp; pp = &(*pp)->link) {
		if (*pp == &j) {
			*pp = j.link;
			break;
		}
	}
	pthread_mutex_unlock(&plock);
	if (j.coop)
		coop_finish(&j, l);
	sg_pout_flush(l->out);
	if (j.err)
		sg_log("launch of %s failed: %s: %s", g->entry->name, sg_error_name(j.err), j.msg);
	if (sg_cfg.stats) {
		double s = (double)(sg_now_ns() - t0) / 1e9;

		sg_log("launch %s <<<(%u,%u,%u),(%u,%u,%u)>>>: %llu instructions in %.3f s, %.1f "
		       "M/s",
		       g->entry->name, g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
		       g->block[2], (unsigned long long)j.icount, s,
		       s > 0 ? (double)j.icount / s / 1e6 : 0.0);
	}
	return j.err;
}
