/* api_stream.c -- streams, events and host functions. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "cuda_host.h"
#include "interposer.h"

/* ---- per-thread default streams ----------------------------------------------------
 * Each thread's default stream (the _ptds/_ptsz entry points' NULL, CU_STREAM_PER_THREAD)
 * is a stream of the pool's of its own, made on first use in each context: a blocking
 * stream, which synchronizes with the legacy default stream as the per-thread default
 * stream does. So threads' per-thread work runs side by side in the pool, as it does on a
 * local GPU. A context's streams go with it: an entry is made again when the context's
 * epoch has moved. A thread's streams are destroyed when the thread ends. */

#define PT_STREAMS 8

struct pt_stream {
	struct gp_ictx *ctx;
	unsigned epoch;
	uint64_t remote;
};

static __thread struct pt_stream pt_streams[PT_STREAMS];
static pthread_key_t pt_key;
static pthread_once_t pt_once = PTHREAD_ONCE_INIT;

static void pt_streams_end(void *arg)
{
	struct pt_stream *ps = arg;

	for (int i = 0; i < PT_STREAMS; i++) {
		if (!ps[i].remote || !gp__ctx_valid(ps[i].ctx) || ps[i].ctx->epoch != ps[i].epoch)
			continue;
		gp__rpc_stream_destroy(0,
				       &(struct gp_in_stream_destroy){.ctx = ps[i].ctx->remote,
								      .stream = ps[i].remote},
				       NULL);
		ps[i].remote = 0;
	}
}

static void pt_init(void)
{
	pthread_key_create(&pt_key, pt_streams_end);
}

static CUresult per_thread_stream(uint64_t *id)
{
	struct gp_ictx *c = gp__ctx_current();
	struct gp_out_stream_create out;
	struct pt_stream *free_slot = NULL;
	CUresult r;

	if (!c || !gp__ctx_valid(c) || !c->remote)
		return CUDA_ERROR_INVALID_CONTEXT;
	for (int i = 0; i < PT_STREAMS; i++) {
		struct pt_stream *ps = &pt_streams[i];

		if (ps->remote && ps->ctx == c && ps->epoch == c->epoch) {
			*id = ps->remote;
			return CUDA_SUCCESS;
		}
		if (!free_slot &&
		    (!ps->remote || !gp__ctx_valid(ps->ctx) || ps->ctx->epoch != ps->epoch))
			free_slot = ps;
	}
	if (!free_slot) {
		/* More contexts than slots on one thread: slot 0's stream goes. */
		if (gp__ctx_valid(pt_streams[0].ctx) &&
		    pt_streams[0].ctx->epoch == pt_streams[0].epoch)
			gp__rpc_stream_destroy(
				0,
				&(struct gp_in_stream_destroy){.ctx = pt_streams[0].ctx->remote,
							       .stream = pt_streams[0].remote},
				NULL);
		free_slot = &pt_streams[0];
	}
	pthread_once(&pt_once, pt_init);
	pthread_setspecific(pt_key, pt_streams);
	r = gp__rpc_stream_create(0, &(struct gp_in_stream_create){.ctx = c->remote}, &out);
	if (r != CUDA_SUCCESS)
		return r;
	*free_slot = (struct pt_stream){.ctx = c, .epoch = c->epoch, .remote = out.stream};
	*id = out.stream;
	return CUDA_SUCCESS;
}

CUresult gp__stream_id(CUstream s, bool per_thread, uint64_t *id)
{
	struct gp_istream *st = (struct gp_istream *)s;

	if (!s) {
		if (per_thread)
			return per_thread_stream(id);
		*id = GP_STREAM_NULL;
		return CUDA_SUCCESS;
	}
	if (s == CU_STREAM_LEGACY) {
		*id = GP_STREAM_LEGACY_ID;
		return CUDA_SUCCESS;
	}
	if (s == CU_STREAM_PER_THREAD)
		return per_thread_stream(id);
	if (st->magic != GP_MAGIC_STREAM)
		return CUDA_ERROR_INVALID_HANDLE;
	*id = st->remote;
	return CUDA_SUCCESS;
}

CUresult gp__ctx_stream(CUstream s, bool per_thread, struct gp_ictx **ctx, uint64_t *id)
{
	CUresult r = gp__ctx_need(ctx);

	if (r == CUDA_SUCCESS)
		r = gp__stream_id(s, per_thread, id);
	/* What the host wrote to managed memory reaches the pool before the call may read it. */
	return r != CUDA_SUCCESS ? r : gp__managed_push();
}

/* STREAM_SYNCHRONIZE or STREAM_QUERY: the same request. */
static CUresult stream_call(bool query, CUstream s, bool pt)
{
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (query)
		r = gp__rpc_stream_query(
			0, &(struct gp_in_stream_query){.ctx = c->remote, .stream = sid}, NULL);
	else
		r = gp__rpc_stream_synchronize(
			0, &(struct gp_in_stream_synchronize){.ctx = c->remote, .stream = sid},
			NULL);
	/* Done: what the device wrote to managed memory is visible to the host. */
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

CUresult gp__stream_sync(CUstream s, bool pt)
{
	return stream_call(false, s, pt);
}

CUresult gp__stream_query(CUstream s, bool pt)
{
	return stream_call(true, s, pt);
}

GP_CUDA_EXPORT CUresult cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority)
{
	struct gp_istream *st;
	struct gp_ictx *c;
	struct gp_out_stream_create out;
	CUresult r;

	if (!ps || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	st = calloc(1, sizeof(*st));
	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_stream_create(0,
				  &(struct gp_in_stream_create){
					  .ctx = c->remote, .flags = flags, .priority = priority},
				  &out);
	if (r != CUDA_SUCCESS) {
		free(st);
		return r;
	}
	st->magic = GP_MAGIC_STREAM;
	st->remote = out.stream;
	st->ctx = c;
	st->flags = flags;
	st->priority = priority;
	st->id = gp__next_object_id();
	*ps = (CUstream)st;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
	return cuStreamCreateWithPriority(ps, flags, 0);
}

static CUresult stream_obj(CUstream s, struct gp_istream **out)
{
	struct gp_istream *st = (struct gp_istream *)s;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!st || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
	    st->magic != GP_MAGIC_STREAM)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = st;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	struct gp_istream *st;
	CUresult r = stream_obj(s, &st);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_stream_destroy(
		0, &(struct gp_in_stream_destroy){.ctx = st->ctx->remote, .stream = st->remote},
		NULL);
	if (r == CUDA_SUCCESS)
		st->magic = GP_MAGIC_DEAD; /* kept so a stale handle reads as dead */
	return r;
}

GP_CUDA_EXPORT CUresult cuStreamDestroy(CUstream s)
{
	return cuStreamDestroy_v2(s);
}

GP_CUDA_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	return gp__stream_sync(s, false);
}

GP_CUDA_EXPORT CUresult cuStreamQuery(CUstream s)
{
	return gp__stream_query(s, false);
}

/* Properties of the special streams are those of the context's default stream. */
static CUresult stream_props(CUstream s, struct gp_istream *def, struct gp_istream **out)
{
	struct gp_ictx *c;
	CUresult r;

	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
		r = gp__ctx_need(&c);
		if (r != CUDA_SUCCESS)
			return r;
		memset(def, 0, sizeof(*def));
		def->ctx = c;
		def->id = s == CU_STREAM_PER_THREAD ? 2 : 1;
		*out = def;
		return CUDA_SUCCESS;
	}
	return stream_obj(s, out);
}

/* The getters: check the output, find the stream (or the default one), read one field. */
#define STREAM_GETTER(name, type, value)                    \
	GP_CUDA_EXPORT CUresult name(CUstream s, type *out) \
	{                                                   \
		struct gp_istream def, *st;                 \
		CUresult r;                                 \
                                                            \
		if (!out)                                   \
			return CUDA_ERROR_INVALID_VALUE;    \
		r = stream_props(s, &def, &st);             \
		if (r == CUDA_SUCCESS)                      \
			*out = (value);                     \
		return r;                                   \
	}

STREAM_GETTER(cuStreamGetFlags, unsigned int, st->flags)
STREAM_GETTER(cuStreamGetPriority, int, st->priority)
STREAM_GETTER(cuStreamGetCtx, CUcontext, (CUcontext)st->ctx)
STREAM_GETTER(cuStreamGetId, unsigned long long, st->id)
STREAM_GETTER(cuStreamGetDevice, CUdevice, st->ctx->device)

/*
 * TOOLS_CONTEXT slots 51 and 39 (src/cuda_host.h): cuBLAS asks for the driver's object of
 * the stream it runs on, then for that object's 64-bit key, to find its per-stream workspace.
 * A stream's object is its handle here; the default streams' are the context's, with the ids
 * cuStreamGetId gives them (1 legacy, 2 per-thread).
 */
CUresult gp__stream_object(CUcontext hctx, CUstream h, int per_thread, void **obj)
{
	struct gp_ictx *c = (struct gp_ictx *)hctx;
	struct gp_istream *st = (struct gp_istream *)h;

	if (!gp__ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (h == CU_STREAM_LEGACY || (!h && !per_thread)) {
		*obj = &c->default_stream_obj[0];
		return CUDA_SUCCESS;
	}
	if (!h || h == CU_STREAM_PER_THREAD) {
		*obj = &c->default_stream_obj[1];
		return CUDA_SUCCESS;
	}
	if (st->magic != GP_MAGIC_STREAM || st->ctx != c)
		return CUDA_ERROR_INVALID_HANDLE;
	*obj = st;
	return CUDA_SUCCESS;
}

CUresult gp__stream_object_id(CUcontext hctx, void *obj, unsigned long long *id)
{
	struct gp_ictx *c = (struct gp_ictx *)hctx;
	struct gp_istream *st = obj;

	if (!gp__ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (obj == &c->default_stream_obj[0] || obj == &c->default_stream_obj[1]) {
		*id = obj == &c->default_stream_obj[0] ? 1 : 2;
		return CUDA_SUCCESS;
	}
	if (st->magic != GP_MAGIC_STREAM || st->ctx != c)
		return CUDA_ERROR_INVALID_HANDLE;
	*id = st->id;
	return CUDA_SUCCESS;
}

/* ---- events ------------------------------------------------------------------------ */

static CUresult event_obj(CUevent e, struct gp_ievent **out)
{
	struct gp_ievent *ev = (struct gp_ievent *)e;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!ev || ev->magic != GP_MAGIC_EVENT || !gp__ctx_valid(ev->ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = ev;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags)
{
	struct gp_ievent *ev;
	struct gp_ictx *c;
	struct gp_out_event_create out;
	CUresult r;

	if (!pe ||
	    (flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_event_create(0, &(struct gp_in_event_create){.ctx = c->remote, .flags = flags},
				 &out);
	if (r != CUDA_SUCCESS) {
		free(ev);
		return r;
	}
	ev->magic = GP_MAGIC_EVENT;
	ev->remote = out.event;
	ev->ctx = c;
	ev->flags = flags;
	*pe = (CUevent)ev;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	struct gp_ievent *ev;
	CUresult r = event_obj(e, &ev);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_event_destroy(
		0, &(struct gp_in_event_destroy){.ctx = ev->ctx->remote, .event = ev->remote},
		NULL);
	if (r == CUDA_SUCCESS)
		ev->magic = GP_MAGIC_DEAD;
	return r;
}

GP_CUDA_EXPORT CUresult cuEventDestroy(CUevent e)
{
	return cuEventDestroy_v2(e);
}

CUresult gp__event_record(CUevent e, CUstream s, bool pt)
{
	struct gp_ievent *ev;
	struct gp_in_event_record in = {0};
	CUresult r = event_obj(e, &ev);

	if (r == CUDA_SUCCESS)
		r = gp__stream_id(s, pt, &in.stream);
	if (r != CUDA_SUCCESS)
		return r;
	in.ctx = ev->ctx->remote;
	in.event = ev->remote;
	/* An interprocess event's record is seen by other processes once this returns (they
	 * wait on it through their own sessions): it is in the pool driver's stream by then,
	 * so the call waits for the answer; others are sent without waiting. */
	r = gp__rpc_event_record((ev->flags & CU_EVENT_INTERPROCESS) ? 0 : GP_F_NO_REPLY, &in,
				 NULL);
	if (r == CUDA_SUCCESS)
		ev->recorded = true;
	return r;
}

GP_CUDA_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	return gp__event_record(e, s, false);
}

GP_CUDA_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
	if (flags & ~CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags)
		return CUDA_ERROR_NOT_SUPPORTED; /* external records belong to graphs */
	return gp__event_record(e, s, false);
}

GP_CUDA_EXPORT CUresult cuEventSynchronize(CUevent e)
{
	struct gp_ievent *ev;
	CUresult r = event_obj(e, &ev);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_event_synchronize(
		0, &(struct gp_in_event_synchronize){.ctx = ev->ctx->remote, .event = ev->remote},
		NULL);
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

GP_CUDA_EXPORT CUresult cuEventQuery(CUevent e)
{
	struct gp_ievent *ev;
	CUresult r = event_obj(e, &ev);

	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_event_query(
		0, &(struct gp_in_event_query){.ctx = ev->ctx->remote, .event = ev->remote}, NULL);
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

GP_CUDA_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
	struct gp_ievent *a, *b;
	struct gp_out_event_elapsed out;
	uint32_t bits;
	CUresult r;

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	r = event_obj(start, &a);
	if (r == CUDA_SUCCESS)
		r = event_obj(end, &b);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_event_elapsed(0,
				  &(struct gp_in_event_elapsed){.ctx = a->ctx->remote,
								.start = a->remote,
								.end = b->remote},
				  &out);
	if (r == CUDA_SUCCESS) {
		bits = (uint32_t)out.ms_bits;
		memcpy(ms, &bits, sizeof(*ms));
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
	return cuEventElapsedTime_v2(ms, start, end);
}

CUresult gp__stream_wait_event(CUstream s, CUevent e, unsigned flags, bool pt)
{
	struct gp_ievent *ev;
	struct gp_ictx *c;
	struct gp_in_stream_wait_event in = {.flags = flags};
	CUresult r = gp__ctx_stream(s, pt, &c, &in.stream);

	if (r == CUDA_SUCCESS)
		r = event_obj(e, &ev);
	if (r != CUDA_SUCCESS)
		return r;
	in.ctx = c->remote;
	in.event = ev->remote;
	return gp__rpc_stream_wait_event(GP_F_NO_REPLY, &in, NULL);
}

GP_CUDA_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
	return gp__stream_wait_event(s, e, flags, false);
}

/* ---- host functions ---------------------------------------------------------------------
 * The function belongs to this process, so it runs here, on the interposer's own thread,
 * when the pool's stream reaches it; the stream's later work waits for it, as CUDA orders
 * it, and the caller does not wait. */

/* The function runs in this process when the stream reaches it (client.c's host-function
 * thread), and the stream's later work waits for it: the call itself returns at once. */
static CUresult host_func(CUstream s, uint64_t fn, void *data, uint32_t kind, bool pt)
{
	struct gp_in_launch_host_func in = {.fn = fn,
					    .data = (uint64_t)(uintptr_t)data,
					    .client_stream = (uint64_t)(uintptr_t)s,
					    .kind = kind};
	struct gp_ictx *c;
	CUresult r = gp__ctx_stream(s, pt, &c, &in.stream);

	if (r != CUDA_SUCCESS)
		return r;
	in.ctx = c->remote;
	/* a stream callback cannot be captured (CUDA refuses it); say so now, not later */
	if (kind == 1 && gp__capture_refuse(c, in.stream))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	gp__host_fn_allow(in.fn, in.data);
	return gp__rpc_launch_host_func(GP_F_NO_REPLY, &in, NULL);
}

CUresult gp__launch_host_func(CUstream s, CUhostFn fn, void *data, bool pt)
{
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	return host_func(s, (uint64_t)(uintptr_t)fn, data, 0, pt);
}

GP_CUDA_EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
	return gp__launch_host_func(s, fn, data, false);
}

CUresult gp__stream_add_callback(CUstream s, CUstreamCallback cb, void *data, unsigned flags,
				 bool pt)
{
	if (!cb || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The callback learns the stream's state, an earlier error included. */
	return host_func(s, (uint64_t)(uintptr_t)cb, data, 1, pt);
}

GP_CUDA_EXPORT CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *data,
					    unsigned int flags)
{
	return gp__stream_add_callback(s, cb, data, flags, false);
}
