/* calls.c -- replies, deferred errors, bulk input and the table of calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

/* ---- replies and deferred errors ---------------------------------------- */

bool gp__take_deferred(struct gp_worker *w, Gp__DeferredError *d)
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

int gp__reply(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r, const uint64_t *out,
	      size_t nout)
{
	Gp__Reply rep = GP__REPLY__INIT;
	Gp__DeferredError d = GP__DEFERRED_ERROR__INIT;

	if (h->flags & GP_F_NO_REPLY) {
		if (r != CUDA_SUCCESS)
			gp__defer_error(w, h, r);
		return 0;
	}
	/* What kernels printed reaches the client before the answer to the call that waited. */
	if (gp__output_flush(w))
		return GP_ECLOSED;
	rep.result = (int32_t)r;
	rep.n_out = r == CUDA_SUCCESS ? nout : 0;
	rep.out = (uint64_t *)out;
	if (gp__take_deferred(w, &d))
		rep.deferred = &d;
	return gp_conn_send(w->client, GP_MSG_REPLY, 0, h->request_id, &rep.base, NULL, 0);
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

/*
 * Reads the bulk of a request: the bytes in its own frame, then DATA frames
 * with the same id until one without GP_F_MORE. Every piece goes to sink
 * (NULL: dropped); if the sink fails the rest is still read, so the stream
 * stays in step, and the first failure is returned in *res. Returns a
 * negative code when the client broke the protocol: the session then ends.
 */
int gp__recv_bulk(struct gp_worker *w, const struct gp_frame_hdr *first, uint64_t total,
		  gp_sink_fn sink, void *arg, CUresult *res)
{
	struct gp_frame_hdr h = *first;
	uint64_t got = 0;
	int ret;

	*res = CUDA_SUCCESS;
	for (;;) {
		uint32_t left = h.bulk_len;

		if (h.bulk_len > total - got) {
			gp_log_warnx("bulk of request %llu exceeds its %llu bytes",
				     (unsigned long long)first->request_id,
				     (unsigned long long)total);
			return GP_EFRAME;
		}
		while (left > 0) {
			size_t n = left < GP_FRAME_BULK_MAX ? left : GP_FRAME_BULK_MAX;

			ret = gp_conn_read(w->client, w->staging, n);
			if (ret)
				return ret;
			if (*res == CUDA_SUCCESS && sink)
				*res = sink(w, arg, got, w->staging, n);
			got += n;
			left -= (uint32_t)n;
		}
		if (!(h.flags & GP_F_MORE))
			break;
		ret = gp_conn_recv(w->client, &h);
		if (ret)
			return ret;
		if (h.type != GP_MSG_DATA || h.request_id != first->request_id || h.msg_len != 0) {
			gp_log_warnx("expected DATA for request %llu, got %s",
				     (unsigned long long)first->request_id,
				     gp_msg_name(h.type) ? gp_msg_name(h.type) : "unknown type");
			return GP_ETYPE;
		}
	}
	if (got != total) {
		gp_log_warnx("request %llu carried %llu of %llu bytes",
			     (unsigned long long)first->request_id, (unsigned long long)got,
			     (unsigned long long)total);
		return GP_EFRAME;
	}
	return 0;
}

Gp__Call *gp__unpack_call(struct gp_worker *w, const struct gp_frame_hdr *h, size_t nargs)
{
	Gp__Call *c = gp__call__unpack(NULL, h->msg_len, w->client->msg);

	if (!c) {
		gp_log_warnx("%s: body does not decode", gp_msg_name(h->type));
		return NULL;
	}
	if (c->n_arg != nargs) {
		gp_log_warnx("%s: %zu arguments, expected %zu", gp_msg_name(h->type), c->n_arg,
			     nargs);
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return NULL;
	}
	return c;
}

/* ---- dispatch ------------------------------------------------------------ */

static const struct {
	uint16_t type;
	uint8_t nargs;
	gp_call_fn fn;
} simple_calls[] = {
	{GP_MSG_CTX_CREATE, 2, gp__ctx_create},
	{GP_MSG_CTX_DESTROY, 1, gp__ctx_destroy},
	{GP_MSG_CTX_SYNCHRONIZE, 1, gp__ctx_synchronize},
	{GP_MSG_PRIMARY_RETAIN, 1, gp__primary_retain},
	{GP_MSG_PRIMARY_RELEASE, 1, gp__primary_release},
	{GP_MSG_PRIMARY_RESET, 1, gp__primary_reset},
	{GP_MSG_PRIMARY_SET_FLAGS, 2, gp__primary_set_flags},
	{GP_MSG_CTX_GET_LIMIT, 2, gp__ctx_get_limit},
	{GP_MSG_CTX_SET_LIMIT, 3, gp__ctx_set_limit},
	{GP_MSG_CTX_STREAM_PRIORITIES, 1, gp__ctx_stream_priorities},
	{GP_MSG_MEM_ALLOC, 2, gp__mem_alloc},
	{GP_MSG_MEM_ALLOC_PITCH, 4, gp__mem_alloc_pitch},
	{GP_MSG_MEM_FREE, 2, gp__mem_free},
	{GP_MSG_MEM_GET_INFO, 1, gp__mem_get_info},
	{GP_MSG_MEMCPY_DTOD, 8, gp__memcpy_dtod},
	{GP_MSG_MEMSET, 8, gp__memset},
	{GP_MSG_MODULE_UNLOAD, 2, gp__module_unload},
	{GP_MSG_LIBRARY_UNLOAD, 1, gp__library_unload},
	{GP_MSG_OCCUPANCY, 5, gp__occupancy},
	{GP_MSG_FUNC_SET_ATTRIBUTE, 4, gp__func_set_attribute},
	{GP_MSG_STREAM_CREATE, 3, gp__stream_create},
	{GP_MSG_STREAM_DESTROY, 2, gp__stream_destroy},
	{GP_MSG_STREAM_SYNCHRONIZE, 2, gp__stream_synchronize},
	{GP_MSG_STREAM_QUERY, 2, gp__stream_query},
	{GP_MSG_STREAM_WAIT_EVENT, 4, gp__stream_wait_event},
	{GP_MSG_EVENT_CREATE, 2, gp__event_create},
	{GP_MSG_EVENT_DESTROY, 2, gp__event_destroy},
	{GP_MSG_EVENT_RECORD, 3, gp__event_record},
	{GP_MSG_EVENT_SYNCHRONIZE, 2, gp__event_synchronize},
	{GP_MSG_EVENT_QUERY, 2, gp__event_query},
	{GP_MSG_EVENT_ELAPSED, 3, gp__event_elapsed},
};

static const struct {
	uint16_t type;
	gp_frame_fn fn;
} frame_calls[] = {
	{GP_MSG_MEMCPY_HTOD, gp__memcpy_htod}, {GP_MSG_MEMCPY_DTOH, gp__memcpy_dtoh},
	{GP_MSG_MODULE_LOAD, gp__module_load}, {GP_MSG_LIBRARY_LOAD, gp__library_load},
	{GP_MSG_GET_GLOBAL, gp__get_global},   {GP_MSG_LAUNCH, gp__launch},
};

int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	uint64_t out[4];
	size_t nout = 0;
	Gp__Call *c;
	CUresult r;

	for (size_t i = 0; i < sizeof(frame_calls) / sizeof(frame_calls[0]); i++)
		if (frame_calls[i].type == h->type)
			return frame_calls[i].fn(w, h);
	for (size_t i = 0; i < sizeof(simple_calls) / sizeof(simple_calls[0]); i++) {
		if (simple_calls[i].type != h->type)
			continue;
		if (h->bulk_len)
			return GP_EFRAME;
		c = gp__unpack_call(w, h, simple_calls[i].nargs);
		if (!c)
			return GP_EDECODE;
		r = simple_calls[i].fn(w, h, c->arg, out, &nout);
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return gp__reply(w, h, r, out, nout);
	}
	gp_log_warnx("unexpected message type %u (%s)", h->type,
		     gp_msg_name(h->type) ? gp_msg_name(h->type) : "unknown");
	return GP_ETYPE;
}
