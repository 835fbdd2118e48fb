/* engine.c -- the block pool: runs the blocks of a grid in parallel on host threads. */
#include <fenv.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "softgpu.h"

/*
 * DESIGN: a pool of SOFTGPU_THREADS - 1 workers, started at the first launch,
 * plus the stream thread that runs the launch, take the blocks of active
 * grids by index (an atomic counter per grid). A block belongs to one host
 * thread from start to end (exec.c needs no locks); blocks of a grid, and of
 * concurrent grids from different streams, run in parallel. The first fault
 * stops the grid: no new blocks start, running ones finish, and the launch
 * reports that fault. Each host thread keeps its scratch (thread states,
 * registers, local, shared memory) across blocks and grids.
 *
 * plock guards the job list and each job's `inside` count; blocks are taken
 * with atomics.
 */

struct job {
	struct sg_launch *l;
	uint64_t nblocks;
	uint64_t next;	 /* atomic: next block to start */
	int err;	 /* atomic: first fault */
	unsigned inside; /* threads working on it (plock) */
	char msg[200];
	uint64_t icount; /* atomic */
	struct job *link;
};

struct scratch {
	struct sg_thread *threads;
	uint32_t cap_threads;
	uint8_t *regs, *local, *frames, *shared;
	size_t cap_regs, cap_local, cap_frames, cap_shared;
};

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcond = PTHREAD_COND_INITIALIZER;
static struct job *jobs;
static bool started;
static unsigned worker_count;
static __thread struct scratch *tls_scratch;
static __thread unsigned tls_worker;
static pthread_key_t scratch_key;

static void scratch_free(void *p)
{
	struct scratch *s = p;

	if (s == NULL)
		return;
	for (uint32_t i = 0; i < s->cap_threads; i++) {
		free(s->threads[i].cs.mem);
		free(s->threads[i].cs.frames);
	}
	free(s->threads);
	free(s->regs);
	free(s->local);
	free(s->frames);
	free(s->shared);
	free(s);
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

static struct scratch *scratch_get(const struct sg_grid *g)
{
	struct scratch *s = tls_scratch;
	uint32_t n = g->nthreads;

	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return NULL;
		tls_scratch = s;
		pthread_setspecific(scratch_key, s);
	}
	if (n > s->cap_threads) {
		struct sg_thread *t = realloc(s->threads, n * sizeof(*t));

		if (t == NULL)
			return NULL;
		memset(t + s->cap_threads, 0, (n - s->cap_threads) * sizeof(*t));
		s->threads = t;
		s->cap_threads = n;
	}
	if (fit(&s->regs, &s->cap_regs, (size_t)n * g->entry->nslots * 8 + 8) ||
	    fit(&s->local, &s->cap_local, (size_t)n * g->local_size + 16) ||
	    fit(&s->frames, &s->cap_frames, (size_t)n * g->entry->frame_size + 16) ||
	    fit(&s->shared, &s->cap_shared, (size_t)g->shared_size + 16))
		return NULL;
	return s;
}

static int run_block(struct job *j, struct scratch *s, uint64_t index, uint64_t *icount)
{
	const struct sg_grid *g = &j->l->g;
	struct sg_block b;
	int rc;

	memset(&b, 0, sizeof(b));
	b.grid = g;
	b.ctaid[0] = (uint32_t)(index % g->grid[0]);
	b.ctaid[1] = (uint32_t)((index / g->grid[0]) % g->grid[1]);
	b.ctaid[2] = (uint32_t)(index / ((uint64_t)g->grid[0] * g->grid[1]));
	b.shared = s->shared;
	b.shared_size = g->shared_size;
	b.threads = s->threads;
	b.nthreads = g->nthreads;
	b.worker = tls_worker;
	for (uint32_t i = 0; i < g->nthreads; i++) {
		struct sg_thread *t = &s->threads[i];

		t->r0 = (uint64_t *)(s->regs + (size_t)i * g->entry->nslots * 8);
		t->pframe0 = s->frames + (size_t)i * g->entry->frame_size;
		t->local = s->local + (size_t)i * g->local_size;
	}
	rc = sg_block_run(&b);
	*icount += b.icount;
	if (rc) {
		int zero = 0;

		if (__atomic_compare_exchange_n(&j->err, &zero, rc, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			memcpy(j->msg, b.errmsg, sizeof(j->msg));
	}
	return rc;
}

/* Takes blocks of j until none are left or the grid failed. */
static void work_on(struct job *j)
{
	struct scratch *s = scratch_get(&j->l->g);
	uint64_t icount = 0;

	if (s == NULL) {
		int zero = 0;

		__atomic_compare_exchange_n(&j->err, &zero, CUDA_ERROR_OUT_OF_MEMORY, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
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
	return __atomic_load_n(&j->err, __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&j->next, __ATOMIC_RELAXED) < j->nblocks;
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
	for (unsigned i = 1; i < sg_cfg.threads; i++) {
		pthread_t t;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, worker, (void *)(uintptr_t)i) == 0)
			worker_count++;
		pthread_attr_destroy(&attr);
	}
}

int sg_engine_run(struct sg_launch *l)
{
	struct job j, **pp;
	uint64_t t0 = sg_cfg.stats ? sg_now_ns() : 0;
	const struct sg_grid *g = &l->g;

	memset(&j, 0, sizeof(j));
	j.l = l;
	j.nblocks = (uint64_t)g->grid[0] * g->grid[1] * g->grid[2];
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
