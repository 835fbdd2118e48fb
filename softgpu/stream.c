/* stream.c -- streams, events, host functions, and the ordering rules between them. */
#include <fenv.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>

#include "softgpu.h"

/*
 * DESIGN: a stream is a FIFO of operations run by its own worker thread,
 * started at the first operation; operations therefore run in order and
 * asynchronously to the host, as on a GPU (a launch returns at once, a grid
 * runs on the block pool of engine.c). One mutex (qlock) and one condition
 * variable guard every queue, sequence counter and event of every context:
 * submitters append, workers pop, synchronizers wait for a stream's done_seq
 * to reach the enq_seq they saw.
 *
 * Ordering: the legacy default stream (NULL) waits for all prior work of the
 * context's blocking streams, and blocking streams wait for prior work of the
 * legacy stream; this is recorded as explicit dependencies when an operation
 * is queued. cuStreamWaitEvent queues a WAIT that runs once the event's
 * record has completed. Events are reference-counted by the operations that
 * name them, so destroying an event with work pending is safe.
 *
 * After a kernel faults, the context's error is sticky: later launches,
 * copies and host functions of that context are skipped, events still
 * complete, and synchronizing calls return the error.
 *
 * Stream capture (graph.c) sits in front of the queue: while any capture is in
 * progress, submit() and the event calls first offer the op to graph.c, which
 * turns it into a node of the capturing stream's graph instead of queuing it.
 * graph.c's lock is taken before qlock, never while holding it.
 */

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;
static uint64_t next_stream_id = 1;

struct sg_evref {
	struct sg_event ev;
	int refs;
	bool destroyed;
};

uint64_t sg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct sg_op *sg_op_new(int kind)
{
	struct sg_op *op = calloc(1, sizeof(*op));

	if (op)
		op->kind = kind;
	return op;
}

static void ev_unref_locked(struct sg_event *e)
{
	struct sg_evref *r = (struct sg_evref *)e;

	if (--r->refs == 0 && r->destroyed) {
		if (r->ev.ipc)
			sg_ipc_event_release(&r->ev);
		free(r->ev.cdeps);
		free(r);
	}
}

void sg_op_free(struct sg_op *op)
{
	if (op == NULL)
		return;
	if (op->kind == SG_OP_LAUNCH)
		sg_launch_free(op->u.launch);
	if (op->kind == SG_OP_GRAPHFN && op->u.gfn.done)
		op->u.gfn.done(op->u.gfn.data);
	if ((op->kind == SG_OP_RECORD || op->kind == SG_OP_WAIT) && op->u.ev.ev) {
		pthread_mutex_lock(&qlock);
		ev_unref_locked(op->u.ev.ev);
		pthread_mutex_unlock(&qlock);
	}
	free(op->deps);
	free(op->staging);
	free(op);
}

/*
 * An interprocess event's records are counted in memory it shares with other processes
 * (ipc.c): read and written atomically there, and waited for by polling, since the other
 * process cannot signal qcond.
 */
static uint64_t ev_gen(const struct sg_event *e)
{
	return e->ipc ? __atomic_load_n(&e->ipc->gen, __ATOMIC_ACQUIRE) : e->gen;
}

static uint64_t ev_done(const struct sg_event *e)
{
	return e->ipc ? __atomic_load_n(&e->ipc->done, __ATOMIC_ACQUIRE) : e->done_gen;
}

static void ev_complete(struct sg_event *e, uint64_t gen)
{
	uint64_t d;

	if (e->ipc == NULL) {
		if (e->done_gen < gen)
			e->done_gen = gen;
		return;
	}
	d = __atomic_load_n(&e->ipc->done, __ATOMIC_ACQUIRE);
	while (d < gen && !__atomic_compare_exchange_n(&e->ipc->done, &d, gen, false,
						       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

/* Waits on qcond (qlock held); for an interprocess event, at most 200 us. */
static void qwait(const struct sg_event *e)
{
	struct timespec ts;

	if (e == NULL || e->ipc == NULL) {
		pthread_cond_wait(&qcond, &qlock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 200000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&qcond, &qlock, &ts);
}

/* ---- workers ---- */

static bool ready(const struct sg_op *op)
{
	for (unsigned i = 0; i < op->ndeps; i++)
		if (op->deps[i].stream->done_seq < op->deps[i].seq)
			return false;
	if (op->kind == SG_OP_WAIT && ev_done(op->u.ev.ev) < op->u.ev.gen)
		return false;
	return true;
}

static void execute(struct sg_stream *s, struct sg_op *op)
{
	struct sg_ctx *ctx = s->ctx;
	int sticky = __atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE);
	int rc;

	switch (op->kind) {
	case SG_OP_LAUNCH:
		if (sticky)
			break;
		sg_busy_enter(ctx->dev, true);
		rc = sg_engine_run(op->u.launch);
		sg_busy_leave(ctx->dev, true);
		if (rc)
			sg_ctx_set_sticky(ctx, rc);
		break;
	case SG_OP_COPY:
		if (sticky)
			break;
		sg_busy_enter(ctx->dev, false);
		sg_copy_run(&op->u.copy);
		sg_busy_leave(ctx->dev, false);
		break;
	case SG_OP_SET:
		if (sticky)
			break;
		sg_busy_enter(ctx->dev, false);
		sg_set_run(&op->u.set);
		sg_busy_leave(ctx->dev, false);
		break;
	case SG_OP_HOSTFN:
		if (!sticky)
			op->u.host.fn(op->u.host.data);
		break;
	case SG_OP_CALLBACK:
		op->u.cb.fn(s->is_null ? NULL : (CUstream)s, (CUresult)sticky, op->u.cb.data);
		break;
	case SG_OP_MEMFREE: /* memory goes back even after a fault, as events complete */
		sg_mempool_free_run(op);
		break;
	case SG_OP_GRAPHFN:
		op->u.gfn.run(s, op->u.gfn.data, sticky);
		break;
	default:
		break;
	}
}

void sg_stream_run_now(struct sg_stream *s, struct sg_op *op)
{
	execute(s, op);
	sg_op_free(op);
}

static void *worker(void *arg)
{
	struct sg_stream *s = arg;

	/* a GPU keeps subnormals unless asked (.ftz): whatever the host program set */
	fesetenv(FE_DFL_ENV);
	_mm_setcsr(0x1f80);
	pthread_mutex_lock(&qlock);
	for (;;) {
		struct sg_op *op;

		while ((s->head == NULL || s->inline_busy) && !s->stopping)
			pthread_cond_wait(&qcond, &qlock);
		if (s->head == NULL)
			break;
		op = s->head;
		while (!ready(op) || s->inline_busy)
			qwait(op->kind == SG_OP_WAIT ? op->u.ev.ev : NULL);
		pthread_mutex_unlock(&qlock);
		execute(s, op);
		pthread_mutex_lock(&qlock);
		if (op->kind == SG_OP_RECORD) {
			struct sg_event *e = op->u.ev.ev;

			e->time_ns = sg_now_ns();
			ev_complete(e, op->u.ev.gen);
		}
		s->head = op->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->done_seq = op->seq;
		pthread_cond_broadcast(&qcond);
		pthread_mutex_unlock(&qlock);
		sg_op_free(op);
		pthread_mutex_lock(&qlock);
	}
	pthread_mutex_unlock(&qlock);
	return NULL;
}

/* ---- streams ---- */

CUresult sg_stream_new(struct sg_ctx *ctx, unsigned flags, int priority, struct sg_stream **out)
{
	struct sg_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->ctx = ctx;
	s->flags = flags;
	s->priority = priority;
	s->id = __atomic_fetch_add(&next_stream_id, 1, __ATOMIC_RELAXED);
	*out = s;
	return CUDA_SUCCESS;
}

void sg_stream_free(struct sg_stream *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&qlock);
	s->stopping = true;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	while (s->head) {
		struct sg_op *n = s->head->next;

		sg_op_free(s->head);
		s->head = n;
	}
	free(s->cdeps);
	free(s);
}

static CUresult add_dep(struct sg_op *op, struct sg_stream *t)
{
	struct sg_dep *d;

	if (t->enq_seq == t->done_seq)
		return CUDA_SUCCESS;
	d = realloc(op->deps, (op->ndeps + 1) * sizeof(*d));
	if (d == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->deps = d;
	d[op->ndeps].stream = t;
	d[op->ndeps].seq = t->enq_seq;
	op->ndeps++;
	return CUDA_SUCCESS;
}

/*
 * Queues op on s; with `inline_ok` (a synchronous caller about to wait) an op
 * that could start right now runs on the calling thread instead, sparing two
 * thread hand-offs: the stream is marked busy so nothing queued behind it
 * starts first. Returns the op's sequence number in *seq.
 */
static CUresult submit(struct sg_stream *s, struct sg_op *op, uint64_t *seq, bool inline_ok)
{
	struct sg_ctx *ctx = s->ctx;
	CUresult r = CUDA_SUCCESS;

	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE)) {
		int c = sg_capture_op(s, op, inline_ok);

		if (c != SG_NOT_CAPTURED) {
			if (seq)
				*seq = 0;
			return (CUresult)c;
		}
	}
	pthread_mutex_lock(&qlock);
	if (s->is_null) {
		for (struct sg_stream *t = ctx->streams; t && r == CUDA_SUCCESS; t = t->next)
			if (!(t->flags & CU_STREAM_NON_BLOCKING))
				r = add_dep(op, t);
	} else if (!(s->flags & CU_STREAM_NON_BLOCKING) && ctx->null_stream) {
		r = add_dep(op, ctx->null_stream);
	}
	if (r == CUDA_SUCCESS && inline_ok && s->head == NULL && !s->inline_busy && ready(op)) {
		uint64_t my = ++s->enq_seq;

		s->inline_busy = true;
		pthread_mutex_unlock(&qlock);
		execute(s, op);
		pthread_mutex_lock(&qlock);
		s->inline_busy = false;
		s->done_seq = my;
		pthread_cond_broadcast(&qcond);
		pthread_mutex_unlock(&qlock);
		sg_op_free(op);
		if (seq)
			*seq = my;
		return CUDA_SUCCESS;
	}
	if (r == CUDA_SUCCESS && !s->thread_started) {
		if (pthread_create(&s->thread, NULL, worker, s))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else
			s->thread_started = true;
	}
	if (r) {
		pthread_mutex_unlock(&qlock);
		sg_op_free(op);
		return r;
	}
	op->seq = ++s->enq_seq;
	if (seq)
		*seq = op->seq;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	return CUDA_SUCCESS;
}

CUresult sg_stream_submit(struct sg_stream *s, struct sg_op *op)
{
	return submit(s, op, NULL, false);
}

static CUresult wait_seq(struct sg_stream *s, uint64_t seq)
{
	pthread_mutex_lock(&qlock);
	while (s->done_seq < seq)
		pthread_cond_wait(&qcond, &qlock);
	pthread_mutex_unlock(&qlock);
	return (CUresult)__atomic_load_n(&s->ctx->sticky, __ATOMIC_ACQUIRE);
}

CUresult sg_stream_submit_list(struct sg_stream *s, struct sg_op **ops, size_t n)
{
	struct sg_ctx *ctx = s->ctx;
	CUresult r = CUDA_SUCCESS;
	int c;

	if (n == 0)
		return CUDA_SUCCESS;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE) &&
	    (c = sg_capture_op(s, NULL, false)) != SG_NOT_CAPTURED)
		r = (CUresult)c;
	pthread_mutex_lock(&qlock);
	if (r == CUDA_SUCCESS && s->is_null) {
		for (struct sg_stream *t = ctx->streams; t && r == CUDA_SUCCESS; t = t->next)
			if (!(t->flags & CU_STREAM_NON_BLOCKING))
				r = add_dep(ops[0], t);
	} else if (r == CUDA_SUCCESS && !(s->flags & CU_STREAM_NON_BLOCKING) && ctx->null_stream) {
		r = add_dep(ops[0], ctx->null_stream);
	}
	if (r == CUDA_SUCCESS && !s->thread_started) {
		if (pthread_create(&s->thread, NULL, worker, s))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else
			s->thread_started = true;
	}
	if (r) {
		pthread_mutex_unlock(&qlock);
		for (size_t i = 0; i < n; i++)
			sg_op_free(ops[i]);
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		ops[i]->seq = ++s->enq_seq;
		ops[i]->next = NULL;
		if (s->tail)
			s->tail->next = ops[i];
		else
			s->head = ops[i];
		s->tail = ops[i];
	}
	pthread_cond_broadcast(&qcond);
	pthread_mutex_unlock(&qlock);
	return CUDA_SUCCESS;
}

CUresult sg_stream_submit_wait(struct sg_stream *s, struct sg_op *op)
{
	uint64_t seq;
	CUresult r = sg_capture_unsafe();

	if (r) {
		sg_op_free(op);
		return r;
	}
	r = submit(s, op, &seq, true);

	if (r)
		return r;
	return wait_seq(s, seq);
}

CUresult sg_stream_sync(struct sg_stream *s)
{
	uint64_t seq;

	pthread_mutex_lock(&qlock);
	seq = s->enq_seq;
	pthread_mutex_unlock(&qlock);
	return wait_seq(s, seq);
}

CUresult sg_ctx_sync(struct sg_ctx *ctx)
{
	pthread_mutex_lock(&qlock);
	for (;;) {
		bool busy =
			ctx->null_stream && ctx->null_stream->done_seq < ctx->null_stream->enq_seq;

		for (struct sg_stream *t = ctx->streams; t && !busy; t = t->next)
			busy = t->done_seq < t->enq_seq;
		if (!busy)
			break;
		pthread_cond_wait(&qcond, &qlock);
	}
	pthread_mutex_unlock(&qlock);
	return (CUresult)__atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE);
}

void sg_streams_release(struct sg_ctx *ctx)
{
	struct sg_stream *s;
	struct sg_event *e;

	pthread_mutex_lock(&qlock);
	s = ctx->streams;
	e = ctx->events;
	ctx->streams = NULL;
	ctx->events = NULL;
	pthread_mutex_unlock(&qlock);
	while (s) {
		struct sg_stream *n = s->next;

		sg_handle_del(s);
		sg_stream_free(s);
		s = n;
	}
	while (e) {
		struct sg_event *n = e->next;
		struct sg_evref *r = (struct sg_evref *)e;

		sg_handle_del(e);
		pthread_mutex_lock(&qlock);
		r->destroyed = true;
		ev_unref_locked(e); /* the context's reference: ops still queued hold theirs */
		pthread_mutex_unlock(&qlock);
		e = n;
	}
	if (ctx->null_stream) {
		sg_stream_free(ctx->null_stream);
		ctx->null_stream = NULL;
	}
}

/* ---- per-thread default streams ---- */

struct pts {
	struct sg_ctx *ctx;
	struct sg_stream *s;
};
static __thread struct pts pts[8];

static CUresult per_thread_stream(struct sg_ctx *ctx, struct sg_stream **out)
{
	struct sg_stream *s;
	CUresult r;
	int free_slot = -1;

	for (int i = 0; i < 8; i++) {
		if (pts[i].ctx == ctx && sg_handle_ok(pts[i].s, SG_K_STREAM) &&
		    pts[i].s->ctx == ctx) {
			*out = pts[i].s;
			return CUDA_SUCCESS;
		}
		if (free_slot < 0 && (pts[i].ctx == NULL || !sg_handle_ok(pts[i].s, SG_K_STREAM)))
			free_slot = i;
	}
	r = sg_stream_new(ctx, 0, 0, &s);
	if (r)
		return r;
	s->per_thread = true;
	if (sg_handle_add(s, SG_K_STREAM)) {
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&qlock);
	s->next = ctx->streams;
	ctx->streams = s;
	pthread_mutex_unlock(&qlock);
	pts[free_slot < 0 ? 0 : free_slot] = (struct pts){ctx, s};
	*out = s;
	return CUDA_SUCCESS;
}

CUresult sg_stream_resolve(CUstream h, bool per_thread, struct sg_ctx **ctx, struct sg_stream **out)
{
	struct sg_ctx *c;
	CUresult r;

	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		r = sg_ctx_current(&c, false);
		if (r)
			return r;
		*ctx = c;
		if (h == CU_STREAM_PER_THREAD || (h == NULL && per_thread))
			return per_thread_stream(c, out);
		*out = c->null_stream;
		return CUDA_SUCCESS;
	}
	r = sg_inited();
	if (r)
		return r;
	if (!sg_handle_ok(h, SG_K_STREAM))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct sg_stream *)h;
	*ctx = (*out)->ctx;
	if (!sg_handle_ok(*ctx, SG_K_CTX) || !(*ctx)->active)
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

CUresult sg_stream_object(CUcontext hctx, CUstream h, int per_thread, void **obj)
{
	struct sg_ctx *want, *c;
	struct sg_stream *s;
	CUresult r = sg_ctx_resolve(hctx, &want, false);

	if (r)
		return r;
	r = sg_stream_resolve(h, per_thread != 0, &c, &s);
	if (r)
		return r;
	if (c != want)
		return CUDA_ERROR_INVALID_HANDLE; /* a stream of another context */
	*obj = s;
	return CUDA_SUCCESS;
}

CUresult sg_stream_object_id(CUcontext hctx, void *obj, unsigned long long *id)
{
	struct sg_ctx *c;
	struct sg_stream *s = obj;
	CUresult r = sg_ctx_resolve(hctx, &c, false);

	if (r)
		return r;
	if (s != c->null_stream && !(sg_handle_ok(s, SG_K_STREAM) && s->ctx == c))
		return CUDA_ERROR_INVALID_HANDLE;
	*id = s->id;
	return CUDA_SUCCESS;
}

static CUresult sticky_of(struct sg_ctx *c)
{
	return (CUresult)__atomic_load_n(&c->sticky, __ATOMIC_ACQUIRE);
}

static CUresult stream_create(CUstream *ph, unsigned int flags, int priority)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (ph == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	r = sg_stream_new(c, flags, priority, &s);
	if (r)
		return r;
	if (sg_handle_add(s, SG_K_STREAM)) {
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&qlock);
	s->next = c->streams;
	c->streams = s;
	pthread_mutex_unlock(&qlock);
	*ph = (CUstream)s;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0);
}

SG_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	return stream_create(phStream, flags, priority);
}

/* Drops dependencies on a stream that is idle and about to go (qlock held). */
static void forget_deps(struct sg_ctx *ctx, struct sg_stream *gone)
{
	struct sg_stream *lists[2] = {ctx->null_stream, ctx->streams};

	for (int l = 0; l < 2; l++) {
		for (struct sg_stream *t = lists[l]; t; t = l ? t->next : NULL) {
			for (struct sg_op *op = t->head; op; op = op->next) {
				unsigned k = 0;

				for (unsigned i = 0; i < op->ndeps; i++)
					if (op->deps[i].stream != gone)
						op->deps[k++] = op->deps[i];
				op->ndeps = k;
			}
		}
	}
}

SG_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
	struct sg_stream *s = (struct sg_stream *)hStream, **pp;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(s, SG_K_STREAM))
		return CUDA_ERROR_INVALID_HANDLE;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE))
		sg_capture_stream_sync(s, true);
	/* work already queued completes first, as on a GPU */
	sg_stream_sync(s);
	sg_handle_del(s);
	pthread_mutex_lock(&qlock);
	for (pp = &s->ctx->streams; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	forget_deps(s->ctx, s);
	pthread_mutex_unlock(&qlock);
	sg_stream_free(s);
	return CUDA_SUCCESS;
}

/* The legacy stream, and every blocking stream it orders with, reach what was queued. */
static CUresult legacy_sync(struct sg_ctx *ctx)
{
	pthread_mutex_lock(&qlock);
	for (;;) {
		bool busy = ctx->null_stream->done_seq < ctx->null_stream->enq_seq;

		for (struct sg_stream *t = ctx->streams; t && !busy; t = t->next)
			busy = !(t->flags & CU_STREAM_NON_BLOCKING) && t->done_seq < t->enq_seq;
		if (!busy)
			break;
		pthread_cond_wait(&qcond, &qlock);
	}
	pthread_mutex_unlock(&qlock);
	return (CUresult)__atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE);
}

static CUresult stream_sync(CUstream h, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE) &&
	    (r = sg_capture_stream_sync(s, false)))
		return r;
	r = s->is_null ? legacy_sync(c) : sg_stream_sync(s);
	sg_mempool_sync_release(); /* pools give back what they hold above their threshold */
	return r;
}

SG_EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
	return stream_sync(hStream, false);
}

static CUresult stream_query(CUstream h, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	bool busy;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE) &&
	    (r = sg_capture_stream_sync(s, false)))
		return r;
	pthread_mutex_lock(&qlock);
	busy = s->done_seq < s->enq_seq;
	pthread_mutex_unlock(&qlock);
	if ((r = sticky_of(c)))
		return r;
	return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamQuery(CUstream hStream)
{
	return stream_query(hStream, false);
}

static CUresult stream_getflags(CUstream h, unsigned int *flags, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = s->flags;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	return stream_getflags(hStream, flags, false);
}

static CUresult get_priority(CUstream hStream, int *priority, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hStream, pt, &c, &s);

	if (r)
		return r;
	if (priority == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*priority = s->priority;
	return CUDA_SUCCESS;
}

static CUresult get_ctx(CUstream hStream, CUcontext *pctx, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hStream, pt, &c, &s);

	if (r)
		return r;
	if (pctx == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

static CUresult get_ctx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx, bool pt)
{
	CUresult r = get_ctx(hStream, pCtx, pt);

	if (r == CUDA_SUCCESS && pGreenCtx)
		*pGreenCtx = NULL;
	return r;
}

static CUresult get_id(CUstream hStream, unsigned long long *streamId, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hStream, pt, &c, &s);

	if (r)
		return r;
	if (streamId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*streamId = s->id;
	return CUDA_SUCCESS;
}

static CUresult get_device(CUstream hStream, CUdevice *device, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hStream, pt, &c, &s);

	if (r)
		return r;
	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*device = c->dev->ordinal;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	return get_priority(hStream, priority, false);
}

SG_EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return get_ctx(hStream, pctx, false);
}

SG_EXPORT CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
	return get_ctx_v2(hStream, pCtx, pGreenCtx, false);
}

SG_EXPORT CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	return get_id(hStream, streamId, false);
}

SG_EXPORT CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	return get_device(hStream, device, false);
}

static CUresult host_func(CUstream h, CUhostFn fn, void *data, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	struct sg_op *op;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if ((r = sticky_of(c)))
		return r;
	if (fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	op = sg_op_new(SG_OP_HOSTFN);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.host.fn = fn;
	op->u.host.data = data;
	return sg_stream_submit(s, op);
}

SG_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return host_func(hStream, fn, userData, false);
}

static CUresult add_callback(CUstream h, CUstreamCallback cb, void *data, unsigned flags, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	struct sg_op *op;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (cb == NULL || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	op = sg_op_new(SG_OP_CALLBACK);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.cb.fn = cb;
	op->u.cb.data = data;
	return sg_stream_submit(s, op);
}

SG_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
				       unsigned int flags)
{
	return add_callback(hStream, callback, userData, flags, false);
}

/* ---- events ---- */

CUresult sg_event_new(struct sg_ctx *c, unsigned flags, const void *ipc_handle, CUevent *out)
{
	struct sg_evref *e = calloc(1, sizeof(*e));
	CUresult r;

	if (e == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->ev.ctx = c;
	e->ev.flags = flags;
	e->refs = 1;
	if (flags & CU_EVENT_INTERPROCESS) {
		r = sg_ipc_event_attach(&e->ev, ipc_handle);
		if (r) {
			free(e);
			return r;
		}
	}
	if (sg_handle_add(e, SG_K_EVENT)) {
		if (e->ev.ipc)
			sg_ipc_event_release(&e->ev);
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&qlock);
	e->ev.next = c->events;
	c->events = &e->ev;
	pthread_mutex_unlock(&qlock);
	*out = (CUevent)e;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (phEvent == NULL ||
	    (Flags &
	     ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	/* an interprocess event has no timing (CUDA's rule) */
	if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	return sg_event_new(c, Flags, NULL, phEvent);
}

SG_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
	struct sg_event *e = (struct sg_event *)hEvent, **pp;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(e, SG_K_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	sg_handle_del(e);
	pthread_mutex_lock(&qlock);
	for (pp = &e->ctx->events; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	((struct sg_evref *)e)->destroyed = true;
	ev_unref_locked(e);
	pthread_mutex_unlock(&qlock);
	return CUDA_SUCCESS;
}

struct sg_op *sg_event_op_new(struct sg_event *e, int kind)
{
	struct sg_op *op = sg_op_new(kind);

	if (op == NULL)
		return NULL;
	pthread_mutex_lock(&qlock);
	if (e->ipc)
		op->u.ev.gen = kind == SG_OP_RECORD
				       ? __atomic_add_fetch(&e->ipc->gen, 1, __ATOMIC_ACQ_REL)
				       : ev_gen(e);
	else
		op->u.ev.gen = kind == SG_OP_RECORD ? ++e->gen : e->gen;
	op->u.ev.ev = e;
	((struct sg_evref *)e)->refs++;
	pthread_mutex_unlock(&qlock);
	return op;
}

static CUresult event_op(CUevent h, CUstream hs, int kind, unsigned flags, bool pt)
{
	struct sg_event *e = (struct sg_event *)h;
	struct sg_ctx *c;
	struct sg_stream *s;
	struct sg_op *op;
	CUresult r = sg_stream_resolve(hs, pt, &c, &s);

	if (r)
		return r;
	if (!sg_handle_ok(e, SG_K_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	if (kind == SG_OP_RECORD && e->ctx != c)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((r = sticky_of(c)))
		return r;
	if (__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE)) {
		int k = sg_capture_event(s, e, kind, flags);

		if (k != SG_NOT_CAPTURED)
			return (CUresult)k;
	}
	/* a WAIT waits for the most recent record, if any */
	op = sg_event_op_new(e, kind);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return sg_stream_submit(s, op);
}

SG_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return event_op(hEvent, hStream, SG_OP_RECORD, 0, false);
}

SG_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return event_op(hEvent, hStream, SG_OP_RECORD, flags, false);
}

SG_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return event_op(hEvent, hStream, SG_OP_WAIT, Flags, false);
}

SG_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
	struct sg_event *e = (struct sg_event *)hEvent;
	bool done;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(e, SG_K_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&qlock);
	done = ev_done(e) >= ev_gen(e);
	pthread_mutex_unlock(&qlock);
	if ((r = sticky_of(e->ctx)))
		return r;
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SG_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
	struct sg_event *e = (struct sg_event *)hEvent;
	uint64_t gen;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(e, SG_K_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&qlock);
	gen = ev_gen(e);
	while (ev_done(e) < gen)
		qwait(e);
	pthread_mutex_unlock(&qlock);
	sg_mempool_sync_release();
	return sticky_of(e->ctx);
}

SG_EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	struct sg_event *a = (struct sg_event *)hStart, *b = (struct sg_event *)hEnd;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (pMilliseconds == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_handle_ok(a, SG_K_EVENT) || !sg_handle_ok(b, SG_K_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&qlock);
	if (a->gen == 0 || b->gen == 0)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (a->done_gen < a->gen || b->done_gen < b->gen)
		r = CUDA_ERROR_NOT_READY;
	else
		*pMilliseconds = (float)((double)((int64_t)(b->time_ns - a->time_ns)) / 1e6);
	pthread_mutex_unlock(&qlock);
	return r;
}

#undef cuEventElapsedTime
SG_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
SG_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

/* ---- per-thread default stream variants (cuda.h names with _ptsz/_ptds) ---- */

#define PTSZ(ret, name, params)    \
	SG_EXPORT ret name params; \
	SG_EXPORT ret name params

PTSZ(CUresult, cuStreamSynchronize_ptsz, (CUstream hStream))
{
	return stream_sync(hStream, true);
}

PTSZ(CUresult, cuStreamQuery_ptsz, (CUstream hStream))
{
	return stream_query(hStream, true);
}

PTSZ(CUresult, cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags))
{
	return stream_getflags(hStream, flags, true);
}

PTSZ(CUresult, cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData))
{
	return host_func(hStream, fn, userData, true);
}

PTSZ(CUresult, cuStreamAddCallback_ptsz,
     (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags))
{
	return add_callback(hStream, callback, userData, flags, true);
}

PTSZ(CUresult, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream))
{
	return event_op(hEvent, hStream, SG_OP_RECORD, 0, true);
}

PTSZ(CUresult, cuEventRecordWithFlags_ptsz, (CUevent hEvent, CUstream hStream, unsigned int flags))
{
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return event_op(hEvent, hStream, SG_OP_RECORD, flags, true);
}

PTSZ(CUresult, cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags))
{
	if (Flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return event_op(hEvent, hStream, SG_OP_WAIT, Flags, true);
}

PTSZ(CUresult, cuStreamGetPriority_ptsz, (CUstream hStream, int *priority))
{
	return get_priority(hStream, priority, true);
}

PTSZ(CUresult, cuStreamGetCtx_ptsz, (CUstream hStream, CUcontext *pctx))
{
	return get_ctx(hStream, pctx, true);
}

PTSZ(CUresult, cuStreamGetCtx_v2_ptsz, (CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx))
{
	return get_ctx_v2(hStream, pCtx, pGreenCtx, true);
}

PTSZ(CUresult, cuStreamGetId_ptsz, (CUstream hStream, unsigned long long *streamId))
{
	return get_id(hStream, streamId, true);
}

PTSZ(CUresult, cuStreamGetDevice_ptsz, (CUstream hStream, CUdevice *device))
{
	return get_device(hStream, device, true);
}
