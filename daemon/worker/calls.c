/* calls.c -- the request path: each call of <gpupool/calls.h> decoded, checked by argument
 * kind and device range, handed to its handler, and answered; deferred errors. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

/* ---- replies and deferred errors ---------------------------------------- */

static bool take_deferred(struct gp_worker *w, Gp__DeferredError *d)
{
	if (!w->has_deferred)
		return false;
	d->result = w->deferred_result;
	d->request_id = w->deferred_request;
	d->type = w->deferred_type;
	w->has_deferred = false;
	return true;
}

/* A call sent without waiting failed: keep the first such error for the next reply. */
void gp__defer_error(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r)
{
	gp_log_debug("deferred %s from %s (request %llu)", gp_driver_err_name(&w->drv, r),
		     gp_msg_name(h->type), (unsigned long long)h->request_id);
	if (w->has_deferred)
		return;
	w->has_deferred = true;
	w->deferred_result = (int32_t)r;
	w->deferred_request = h->request_id;
	w->deferred_type = h->type;
}

/* ---- helpers -------------------------------------------------------------- */

CUresult gp__use_ctx(struct gp_worker *w, uint64_t id, struct gp_handle **out)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_CTX);
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (w->current != h->ptr) {
		r = w->drv.cuCtxSetCurrent(h->ptr);
		if (r != CUDA_SUCCESS)
			return r;
		w->current = h->ptr;
	}
	if (out)
		*out = h;
	return CUDA_SUCCESS;
}

CUresult gp__use_stream(struct gp_worker *w, uint64_t id, CUstream *out)
{
	struct gp_handle *h;

	switch (id) {
	case 0:
		*out = NULL;
		return CUDA_SUCCESS;
	case 1:
		*out = CU_STREAM_LEGACY;
		return CUDA_SUCCESS;
	case 2:
		*out = CU_STREAM_PER_THREAD;
		return CUDA_SUCCESS;
	default:
		h = gp__handle_get(w, id, GP_H_STREAM);
		if (!h)
			return CUDA_ERROR_INVALID_HANDLE;
		*out = h->ptr;
		return CUDA_SUCCESS;
	}
}

struct gp_handle *gp__launchable(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_FUNCTION);

	return h ? h : gp__handle_get(w, id, GP_H_KERNEL);
}

/* ---- arguments, by kind ---------------------------------------------------------- */

static CUresult arg_ctx(struct gp_worker *w, uint64_t id, int *dev)
{
	struct gp_handle *h;
	CUresult r = gp__use_ctx(w, id, &h);

	if (r == CUDA_SUCCESS)
		*dev = h->device;
	return r;
}

static CUresult arg_ctx_opt(struct gp_worker *w, uint64_t id, int *dev)
{
	*dev = -1;
	return id ? arg_ctx(w, id, dev) : CUDA_SUCCESS;
}

static CUresult arg_device(struct gp_worker *w, uint64_t ordinal, CUdevice *dev)
{
	if (ordinal >= (uint64_t)w->ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return w->drv.cuDeviceGet(dev, (int)ordinal);
}

static CUresult arg_handle(struct gp_worker *w, uint64_t id, uint32_t kind, void *out)
{
	struct gp_handle *h = gp__handle_get(w, id, kind);

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	memcpy(out, &h->ptr, sizeof(h->ptr));
	return CUDA_SUCCESS;
}

static CUresult arg_modlib(struct gp_worker *w, uint64_t id, void **drv, bool *is_library)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_MODULE);

	*is_library = !h;
	if (!h)
		h = gp__handle_get(w, id, GP_H_LIBRARY);
	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	*drv = h->ptr;
	return CUDA_SUCCESS;
}

/* A function or kernel, described; a kernel's module is made in the call's context on
 * first use. */
static CUresult arg_func(struct gp_worker *w, uint64_t id, uint64_t ctx, void **drv,
			 const struct gp_fn_info **info, bool *is_kernel)
{
	struct gp_handle *h = gp__launchable(w, id);

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult r = ctx ? gp__kernel_in_ctx(w, h, ctx) : CUDA_SUCCESS;

	*drv = h->ptr;
	*info = h->aux;
	*is_kernel = h->kind == GP_H_KERNEL;
	/* Its layout is known before a call in a context uses it (the first use asks the
	 * driver); FUNC_DESCRIBE, whose context comes after, describes it itself. */
	return r == CUDA_SUCCESS && ctx ? gp__fn_described(w, h, ctx) : r;
}

static CUresult arg_u32(uint64_t v, uint32_t *out)
{
	if (v > UINT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (uint32_t)v;
	return CUDA_SUCCESS;
}

static CUresult arg_i32(uint64_t v, int32_t *out)
{
	int64_t s = (int64_t)v;

	if (s < INT32_MIN || s > INT32_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (int32_t)s;
	return CUDA_SUCCESS;
}

static CUresult arg_name(const char *s, const char **out)
{
	size_t n = s ? strnlen(s, GP_NAME_MAX + 1) : 0;

	if (n == 0 || n > GP_NAME_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*out = s;
	return CUDA_SUCCESS;
}

/* A call's device range: height rows of width bytes, pitch apart (pitch 0: packed), checked
 * by the ownership core with every product and sum overflow-checked. A range of no bytes
 * touches nothing. */
static bool range_owned(struct gp_worker *w, CUdeviceptr base, uint64_t width, uint64_t height,
			uint64_t pitch)
{
	if (width == 0 || height == 0)
		return true;
	return gp__range2d_owned(w, base, pitch ? pitch : width, width, height);
}

/* ---- the decoder of each call, from the table -------------------------------------- */

#define GP__DEC_CTX(f)                                           \
	a->f = c->arg[i++];                                      \
	if ((r = arg_ctx(w, a->f, &a->f##_dev)) != CUDA_SUCCESS) \
		return r;                                        \
	ctx = a->f;
#define GP__DEC_CTX_OPT(f)                                           \
	a->f = c->arg[i++];                                          \
	if ((r = arg_ctx_opt(w, a->f, &a->f##_dev)) != CUDA_SUCCESS) \
		return r;                                            \
	ctx = a->f;
#define GP__DEC_DEVICE(f)                                           \
	a->f = c->arg[i++];                                         \
	if ((r = arg_device(w, a->f, &a->f##_drv)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_STREAM(f)                                               \
	a->f = c->arg[i++];                                             \
	if ((r = gp__use_stream(w, a->f, &a->f##_drv)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_HANDLE(f, kind)                                           \
	a->f = c->arg[i++];                                               \
	if ((r = arg_handle(w, a->f, kind, &a->f##_drv)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_EVENT(f) GP__DEC_HANDLE(f, GP_H_EVENT)
#define GP__DEC_MODULE(f) GP__DEC_HANDLE(f, GP_H_MODULE)
#define GP__DEC_LIBRARY(f) GP__DEC_HANDLE(f, GP_H_LIBRARY)
#define GP__DEC_MODLIB(f)                                                               \
	a->f = c->arg[i++];                                                             \
	if ((r = arg_modlib(w, a->f, &a->f##_drv, &a->f##_is_library)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_FUNC(f)                                                                   \
	a->f = c->arg[i++];                                                               \
	if ((r = arg_func(w, a->f, ctx, &a->f##_drv, &a->f##_info, &a->f##_is_kernel)) != \
	    CUDA_SUCCESS)                                                                 \
		return r;
#define GP__DEC_DPTR(f) a->f = c->arg[i++];
#define GP__DEC_U64(f) a->f = c->arg[i++];
#define GP__DEC_U32(f)                                         \
	if ((r = arg_u32(c->arg[i++], &a->f)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_I32(f)                                         \
	if ((r = arg_i32(c->arg[i++], &a->f)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_NAME(f)                                     \
	if ((r = arg_name(c->name, &a->f)) != CUDA_SUCCESS) \
		return r;
#define GP__DEC_BLOB(f)      \
	a->f = c->blob.data; \
	a->f##_len = c->blob.len;
#define GP__DEC_BULK_IN(f) a->f##_len = c->arg[i++];
#define GP__DEC_BULK_OUT(f) a->f##_len = c->arg[i++];

#define GP_ARG(kind, f) GP__DEC_##kind(f)
#define GP_OUT(f) out[nout++] = o.f;
#define GP_RANGE(base, width, height, pitch)                         \
	if (!range_owned(w, a->base, a->width, a->height, a->pitch)) \
		return CUDA_ERROR_INVALID_VALUE;
#define GP_RANGE1(base, bytes)                        \
	if (!range_owned(w, a->base, a->bytes, 1, 0)) \
		return CUDA_ERROR_INVALID_VALUE;
#define GP__DECODE(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)                        \
	static CUresult decode_##name(struct gp_worker *w, const Gp__Call *c,              \
				      struct gp_wargs_##name *a)                           \
	{                                                                                  \
		uint64_t ctx = 0;                                                          \
		size_t i = 0;                                                              \
		CUresult r = CUDA_SUCCESS;                                                 \
                                                                                           \
		ARGS RANGES(void) ctx;                                                     \
		(void)i;                                                                   \
		return r;                                                                  \
	}                                                                                  \
	static int serve_##name(struct gp_worker *w, struct gp_req *rq, const Gp__Call *c) \
	{                                                                                  \
		struct gp_wargs_##name a;                                                  \
		struct gp_out_##name o;                                                    \
		uint64_t out[GP_CALL_OUTS_MAX];                                            \
		size_t nout = 0;                                                           \
		CUresult r;                                                                \
                                                                                           \
		memset(&a, 0, sizeof(a));                                                  \
		memset(&o, 0, sizeof(o));                                                  \
		r = decode_##name(w, c, &a);                                               \
		if (r == CUDA_SUCCESS) {                                                   \
			gp__watch_enter(rq->h, !(gp_call_info(rq->h->type)->kinds &        \
						 (GP_K_BULK_IN | GP_K_BULK_OUT)));         \
			r = gp__serve_##name(w, rq, &a, &o);                               \
			gp__watch_leave();                                                 \
		}                                                                          \
		OUTS return finish(w, rq, r, out, nout);                                   \
	}

/* ---- answers -------------------------------------------------------------------- */

static void free_functions(struct gp_req *rq)
{
	for (size_t i = 0; i < rq->n_functions; i++) {
		Gp__Function *f = rq->functions[i];

		if (!f)
			continue;
		for (size_t k = 0; k < f->n_param; k++)
			free(f->param[k]);
		free(f->param);
		free(f->attribute);
		free(f);
	}
	free(rq->functions);
	rq->functions = NULL;
	rq->n_functions = 0;
}

CUresult gp__req_recv(struct gp_worker *w, struct gp_req *rq, uint64_t total,
		      struct gp_bulk_sink *sink)
{
	int ret;

	rq->bulk_taken = true;
	ret = gp_bulk_recv(w->client, rq->h, total, sink);
	if (!ret && sink->got != total)
		ret = GP_EFRAME;
	if (ret) {
		gp_log_warnx("%s (request %llu): its bulk of %llu bytes: %s",
			     gp_msg_name(rq->h->type), (unsigned long long)rq->h->request_id,
			     (unsigned long long)total, gp_strerror(ret));
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return (CUresult)sink->err;
}

int gp__send_reply(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r,
		   const uint64_t *out, size_t nout, Gp__Function **functions, size_t nfunctions)
{
	Gp__Reply rep = GP__REPLY__INIT;
	Gp__DeferredError d = GP__DEFERRED_ERROR__INIT;
	int ret;

	rep.result = (int32_t)r;
	rep.n_out = r == CUDA_SUCCESS ? nout : 0;
	rep.out = (uint64_t *)out;
	if (r == CUDA_SUCCESS) {
		rep.n_function = nfunctions;
		rep.function = functions;
	}
	if (take_deferred(w, &d))
		rep.deferred = &d;
	gp_conn_send_lock(w->client);
	/* What kernels printed reaches the client before the answer to the call that waited. */
	ret = gp__output_flush(w) ? GP_ECLOSED : 0;
	if (!ret)
		ret = gp_conn_send(w->client, GP_MSG_REPLY, 0, h->request_id, &rep.base, NULL, 0);
	if (!ret)
		ret = gp_conn_flush(w->client);
	gp_conn_send_unlock(w->client);
	return ret;
}

/*
 * Ends a call: the request's bulk is read if its handler did not (a refused copy still
 * brings its bytes), then the answer goes back unless the call was sent without waiting,
 * in which case a failure is kept for the next answer. A handler that handed a wait to a
 * waiter thread leaves the answer to it.
 */
static int finish(struct gp_worker *w, struct gp_req *rq, CUresult r, const uint64_t *out,
		  size_t nout)
{
	struct gp_bulk_sink drop = {0};
	const struct gp_call_info *ci = gp_call_info(rq->h->type);
	int ret = rq->err;

	if (!ret && (ci->kinds & GP_K_BULK_IN) && !rq->bulk_taken) {
		gp__req_recv(w, rq, rq->bulk_total, &drop);
		ret = rq->err;
	}
	if (ret)
		goto out;
	if (r == CUDA_SUCCESS && rq->answered_later)
		goto out;
	if (r == CUDA_SUCCESS && rq->wait.kind != GP_WAIT_NONE) {
		r = gp__wait_start(w, rq);
		if (r == CUDA_SUCCESS)
			goto out; /* the waiter answers */
	}
	if (rq->async) {
		if (r != CUDA_SUCCESS)
			gp__defer_error(w, rq->h, r);
		goto out;
	}
	ret = gp__send_reply(w, rq->h, r, out, nout, rq->functions, rq->n_functions);
out:
	free_functions(rq);
	return ret;
}

GP_CALL_MAP(GP__DECODE)
#undef GP__DECODE
#undef GP_RANGE1
#undef GP_RANGE
#undef GP_OUT
#undef GP_ARG

/* ---- dispatch ------------------------------------------------------------------- */

/*
 * A request's Call is unpacked into an arena that is emptied when the call ends, so a call
 * costs no heap allocation on the way in: protobuf-c asks for the message and its arrays,
 * the arena hands out ARENA_SIZE bytes in turn and mallocs only what does not fit (a large
 * blob or name), which goes at the reset too. Used by the main thread alone (DESIGN).
 */
#define ARENA_SIZE (64u * 1024)

struct arena_big {
	struct arena_big *next;
	max_align_t data[];
};

static struct {
	ProtobufCAllocator pa;
	size_t used;
	struct arena_big *big;
	max_align_t buf[ARENA_SIZE / sizeof(max_align_t)];
} arena;

static void *arena_alloc(void *data, size_t n)
{
	size_t k = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct arena_big *b;

	(void)data;
	if (k >= n && k <= sizeof(arena.buf) - arena.used) {
		void *p = (uint8_t *)arena.buf + arena.used;

		arena.used += k;
		return p;
	}
	if (n > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + n);
	if (!b)
		return NULL;
	b->next = arena.big;
	arena.big = b;
	return b->data;
}

static void arena_free(void *data, void *p)
{
	(void)data; /* everything goes at arena_reset */
	(void)p;
}

static void arena_reset(void)
{
	while (arena.big) {
		struct arena_big *b = arena.big;

		arena.big = b->next;
		free(b);
	}
	arena.used = 0;
}

typedef int (*serve_fn)(struct gp_worker *w, struct gp_req *rq, const Gp__Call *c);

static serve_fn server_of(unsigned type)
{
	switch (type) {
#define GP__CASE(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) \
	case NUM:                                                 \
		return serve_##name;
		GP_CALL_MAP(GP__CASE)
#undef GP__CASE
	default:
		return NULL;
	}
}

int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	const struct gp_call_info *ci = gp_call_info(h->type);
	serve_fn serve = server_of(h->type);
	struct gp_req rq = {.h = h, .async = (h->flags & GP_F_NO_REPLY) != 0};
	const char *what = gp_msg_name(h->type) ? gp_msg_name(h->type) : "unknown type";
	Gp__Call *c;
	int ret;

	if (!ci || !serve) {
		gp_log_warnx("unexpected message type %u (%s)", h->type, what);
		return GP_ETYPE;
	}
	if (rq.async && !(ci->flags & GP_C_ASYNC)) {
		gp_log_warnx("%s cannot be sent without waiting for its answer", what);
		return GP_EFRAME;
	}
	if ((h->bulk_len || (h->flags & GP_F_MORE)) && !(ci->kinds & GP_K_BULK_IN)) {
		gp_log_warnx("%s carries no bulk", what);
		return GP_EFRAME;
	}
	arena.pa = (ProtobufCAllocator){.alloc = arena_alloc, .free = arena_free};
	c = gp__call__unpack(&arena.pa, h->msg_len, w->client->msg);
	if (!c) {
		arena_reset();
		gp_log_warnx("%s: body does not decode", what);
		return GP_EDECODE;
	}
	if (c->n_arg != ci->nargs || (c->name[0] && !(ci->kinds & GP_K_NAME)) ||
	    (c->blob.len && !(ci->kinds & GP_K_BLOB)) || c->blob.len > GP_BLOB_MAX) {
		gp_log_warnx("%s: %zu arguments (expected %u), name %zu bytes, blob %zu bytes",
			     what, c->n_arg, ci->nargs, strlen(c->name), c->blob.len);
		arena_reset();
		return GP_EDECODE;
	}
	/* A BULK_IN argument is a call's last (a test checks the table): the bytes to read even
	 * when the call is refused before its handler runs. */
	if (ci->kinds & GP_K_BULK_IN)
		rq.bulk_total = c->arg[c->n_arg - 1];
	ret = serve(w, &rq, c);
	arena_reset(); /* the Call, unpacked there */
	return ret;
}
