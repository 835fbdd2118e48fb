/* exec.c -- kernel launches, streams and events. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

int gp__launch(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Launch *l = (Gp__Launch *)gp_msg_unpack(GP_MSG_LAUNCH, w->client->msg, h->msg_len);
	struct gp_handle *fh = NULL;
	struct gp_fn_info *fi;
	void **args = NULL;
	CUstream s = NULL;
	CUresult r;

	if (!l || !l->grid || !l->block || h->bulk_len) {
		if (l)
			protobuf_c_message_free_unpacked(&l->base, NULL);
		return GP_EDECODE;
	}
	r = gp__use_ctx(w, l->context, NULL);
	if (r == CUDA_SUCCESS && !(fh = gp__launchable(w, l->function)))
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS)
		r = gp__kernel_in_ctx(w, fh, l->context);
	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, l->stream, &s);
	if (r == CUDA_SUCCESS) {
		fi = fh->aux;
		/* The buffer must hold every parameter the kernel reads. */
		if (l->params.len < fi->param_bytes) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (fi->nparams) {
			args = calloc(fi->nparams, sizeof(*args));
			if (!args)
				r = CUDA_ERROR_OUT_OF_MEMORY;
			for (uint32_t i = 0; args && i < fi->nparams; i++)
				args[i] = l->params.data + fi->offset[i];
		}
	}
	if (r == CUDA_SUCCESS)
		r = w->drv.cuLaunchKernel(fh->ptr, l->grid->x, l->grid->y, l->grid->z, l->block->x,
					  l->block->y, l->block->z, l->shared_mem, s, args, NULL);
	free(args);
	protobuf_c_message_free_unpacked(&l->base, NULL);
	return gp__reply(w, h, r, NULL, 0);
}

/* ---- streams ------------------------------------------------------------------ */

/* arg: ctx, flags, priority; out: stream */
CUresult gp__stream_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	CUstream s;
	uint64_t id;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuStreamCreateWithPriority, &s, (unsigned)a[1], (int)(int64_t)a[2]);
	if (r != CUDA_SUCCESS)
		return r;
	id = gp__handle_new(w, GP_H_STREAM, s);
	if (!id) {
		w->drv.cuStreamDestroy_v2(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_STREAM)->parent = a[0];
	out[0] = id;
	*nout = 1;
	return CUDA_SUCCESS;
}

CUresult gp__stream_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout)
{
	struct gp_handle *sh;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	sh = gp__handle_get(w, a[1], GP_H_STREAM);
	if (!sh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = GP_DRV(w, cuStreamDestroy_v2, sh->ptr);
	if (r == CUDA_SUCCESS)
		gp__handle_release(w, a[1]);
	return r;
}

CUresult gp__stream_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f,
				const uint64_t *a, uint64_t *out, size_t *nout)
{
	CUstream s;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, a[1], &s);
	return r != CUDA_SUCCESS ? r : GP_DRV(w, cuStreamSynchronize, s);
}

CUresult gp__stream_query(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout)
{
	CUstream s;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, a[1], &s);
	return r != CUDA_SUCCESS ? r : GP_DRV(w, cuStreamQuery, s);
}

/* arg: ctx, stream, event, flags */
CUresult gp__stream_wait_event(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout)
{
	struct gp_handle *eh;
	CUstream s;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, a[1], &s);
	if (r != CUDA_SUCCESS)
		return r;
	eh = gp__handle_get(w, a[2], GP_H_EVENT);
	if (!eh)
		return CUDA_ERROR_INVALID_HANDLE;
	return GP_DRV(w, cuStreamWaitEvent, s, eh->ptr, (unsigned)a[3]);
}

/* ---- events --------------------------------------------------------------------- */

/* arg: ctx, flags; out: event */
CUresult gp__event_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout)
{
	CUevent e;
	uint64_t id;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuEventCreate, &e, (unsigned)a[1]);
	if (r != CUDA_SUCCESS)
		return r;
	id = gp__handle_new(w, GP_H_EVENT, e);
	if (!id) {
		w->drv.cuEventDestroy_v2(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_EVENT)->parent = a[0];
	out[0] = id;
	*nout = 1;
	return CUDA_SUCCESS;
}

static CUresult event_of(struct gp_worker *w, uint64_t ctx, uint64_t id, CUevent *e)
{
	struct gp_handle *eh;
	CUresult r = gp__use_ctx(w, ctx, NULL);

	if (r != CUDA_SUCCESS)
		return r;
	eh = gp__handle_get(w, id, GP_H_EVENT);
	if (!eh)
		return CUDA_ERROR_INVALID_HANDLE;
	*e = eh->ptr;
	return CUDA_SUCCESS;
}

CUresult gp__event_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	CUevent e;
	CUresult r = event_of(w, a[0], a[1], &e);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuEventDestroy_v2, e);
	if (r == CUDA_SUCCESS)
		gp__handle_release(w, a[1]);
	return r;
}

/* arg: ctx, event, stream */
CUresult gp__event_record(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout)
{
	CUstream s;
	CUevent e;
	CUresult r = event_of(w, a[0], a[1], &e);

	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, a[2], &s);
	return r != CUDA_SUCCESS ? r : GP_DRV(w, cuEventRecord, e, s);
}

CUresult gp__event_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout)
{
	CUevent e;
	CUresult r = event_of(w, a[0], a[1], &e);

	return r != CUDA_SUCCESS ? r : GP_DRV(w, cuEventSynchronize, e);
}

CUresult gp__event_query(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout)
{
	CUevent e;
	CUresult r = event_of(w, a[0], a[1], &e);

	return r != CUDA_SUCCESS ? r : GP_DRV(w, cuEventQuery, e);
}

/* arg: ctx, start, end; out: the float's bits */
CUresult gp__event_elapsed(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	CUevent start, end;
	float ms = 0;
	uint32_t bits;
	CUresult r = event_of(w, a[0], a[1], &start);

	if (r == CUDA_SUCCESS)
		r = event_of(w, a[0], a[2], &end);
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuEventElapsedTime_v2, &ms, start, end);
	memcpy(&bits, &ms, sizeof(bits));
	out[0] = bits;
	*nout = 1;
	return r;
}
