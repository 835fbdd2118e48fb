/* mem.c -- device memory: allocations within the session's limit, copies, memsets.
 *
 * Every pointer a client sends is checked, with its length, against the
 * session's own allocations (and the module globals it looked up) before the
 * driver sees it. Calls that arrive with GP_F_NO_REPLY are the client's async
 * variants and go on the stream they name; the others are synchronous. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

/*
 * A copy's device layout: height rows of width bytes, pitch apart (pitch 0, or one row:
 * packed). Both directions walk it the same way; the call's GP_RANGE has checked it.
 */
struct layout {
	CUdeviceptr base;
	uint64_t width, height, pitch;
};

/* The device address of packed offset off, and how many bytes follow it contiguously. */
static CUdeviceptr layout_at(const struct layout *l, uint64_t off, uint64_t *run)
{
	if (l->pitch == 0 || l->height == 1) {
		*run = l->width * l->height - off;
		return l->base + off;
	}
	*run = l->width - off % l->width;
	return l->base + (off / l->width) * l->pitch + off % l->width;
}

/* The packed size of a layout; the range check made sure it does not overflow. */
static uint64_t layout_bytes(const struct layout *l)
{
	return l->width * l->height;
}

CUresult gp__serve_mem_alloc(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_mem_alloc *a, struct gp_out_mem_alloc *o)
{
	int dev = a->ctx_dev;
	CUdeviceptr p;
	CUresult r;

	if (a->bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!gp__charge_fits(w, dev, a->bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = w->drv.cuMemAlloc_v2(&p, (size_t)a->bytes);
	if (r != CUDA_SUCCESS)
		return r;
	if (gp__alloc_add(w, p, (size_t)a->bytes, a->ctx, dev)) {
		w->drv.cuMemFree_v2(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->dptr = p;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_alloc_pitch(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_mem_alloc_pitch *a,
				   struct gp_out_mem_alloc_pitch *o)
{
	int dev = a->ctx_dev;
	CUdeviceptr p;
	size_t pitch;
	uint64_t bytes;
	CUresult r;

	if (a->width == 0 || a->height == 0 || a->width > (1ull << 40) || a->height > (1ull << 40))
		return CUDA_ERROR_INVALID_VALUE;
	/* The limit is checked against the unpadded size first, the padded one after (each
	 * factor is below 2^40, so the product is checked before it is used). */
	if (a->height > UINT64_MAX / a->width ||
	    (w->mem_limit && !gp__charge_fits(w, dev, a->width * a->height)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuMemAllocPitch_v2, &p, &pitch, (size_t)a->width, (size_t)a->height,
		   a->esize);
	if (r != CUDA_SUCCESS)
		return r;
	bytes = (uint64_t)pitch * a->height;
	if (!gp__charge_fits(w, dev, bytes) ||
	    gp__alloc_add(w, p, (size_t)bytes, a->ctx, dev)) {
		w->drv.cuMemFree_v2(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->dptr = p;
	o->pitch = pitch;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_free(struct gp_worker *w, struct gp_req *rq,
			    const struct gp_wargs_mem_free *a, struct gp_out_mem_free *o)
{
	struct gp_alloc *al = gp__alloc_find(w, a->dptr);
	CUresult r;

	if (!al || al->ptr != a->dptr || al->module)
		return CUDA_ERROR_INVALID_VALUE;
	r = w->drv.cuMemFree_v2(al->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	gp__alloc_remove(w, al);
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_get_info(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_mem_get_info *a, struct gp_out_mem_get_info *o)
{
	size_t fr, tot;
	CUresult r = w->drv.cuMemGetInfo_v2(&fr, &tot);

	if (r != CUDA_SUCCESS)
		return r;
	/* The session sees its limit as the device's size. */
	if (w->mem_limit && w->mem_limit < tot) {
		uint64_t used = w->dev_used[a->ctx_dev];
		uint64_t room = used < w->mem_limit ? w->mem_limit - used : 0;

		tot = w->mem_limit;
		if (fr > room)
			fr = room;
	}
	o->free = fr;
	o->total = tot;
	return CUDA_SUCCESS;
}

CUresult gp__serve_memcpy_dtod(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_dtod *a, struct gp_out_memcpy_dtod *o)
{
	bool packed = a->height == 1;
	CUresult r = CUDA_SUCCESS;

	if (a->height == 0 || (a->height > 1 && (!a->dst_pitch || !a->src_pitch)))
		return CUDA_ERROR_INVALID_VALUE;
	for (uint64_t row = 0; r == CUDA_SUCCESS && row < a->height; row++) {
		CUdeviceptr d = packed ? a->dst : a->dst + row * a->dst_pitch;
		CUdeviceptr s = packed ? a->src : a->src + row * a->src_pitch;

		if (rq->async)
			r = GP_DRV(w, cuMemcpyDtoDAsync_v2, d, s, (size_t)a->width, a->stream_drv);
		else
			r = GP_DRV(w, cuMemcpyDtoD_v2, d, s, (size_t)a->width);
	}
	return r;
}

CUresult gp__serve_memset(struct gp_worker *w, struct gp_req *rq, const struct gp_wargs_memset *a,
			  struct gp_out_memset *o)
{
	uint64_t esize = a->esize, count, pitch = a->pitch, height = a->height;
	bool async = rq->async;
	unsigned v = a->value;
	CUdeviceptr dst = a->dst;
	CUstream s = a->stream_drv;

	if ((esize != 1 && esize != 2 && esize != 4) || a->width % esize || dst % esize ||
	    height > (1ull << 32))
		return CUDA_ERROR_INVALID_VALUE;
	count = a->width / esize;
	if (count == 0 || height == 0)
		return CUDA_SUCCESS;
	if (pitch == 0) {
		if (height != 1)
			return CUDA_ERROR_INVALID_VALUE;
		switch (esize) {
		case 1:
			return async ? GP_DRV(w, cuMemsetD8Async, dst, (unsigned char)v, count, s)
				     : GP_DRV(w, cuMemsetD8_v2, dst, (unsigned char)v, count);
		case 2:
			return async ? GP_DRV(w, cuMemsetD16Async, dst, (unsigned short)v, count, s)
				     : GP_DRV(w, cuMemsetD16_v2, dst, (unsigned short)v, count);
		default:
			return async ? GP_DRV(w, cuMemsetD32Async, dst, v, count, s)
				     : GP_DRV(w, cuMemsetD32_v2, dst, v, count);
		}
	}
	switch (esize) {
	case 1:
		return async ? GP_DRV(w, cuMemsetD2D8Async, dst, pitch, (unsigned char)v, count,
				      height, s)
			     : GP_DRV(w, cuMemsetD2D8_v2, dst, pitch, (unsigned char)v, count,
				      height);
	case 2:
		return async ? GP_DRV(w, cuMemsetD2D16Async, dst, pitch, (unsigned short)v, count,
				      height, s)
			     : GP_DRV(w, cuMemsetD2D16_v2, dst, pitch, (unsigned short)v, count,
				      height);
	default:
		return async ? GP_DRV(w, cuMemsetD2D32Async, dst, pitch, v, count, height, s)
			     : GP_DRV(w, cuMemsetD2D32_v2, dst, pitch, v, count, height);
	}
}

/* ---- host <-> device ----------------------------------------------------------- */

struct htod {
	struct gp_worker *w;
	struct layout l;
	CUstream stream;
	bool async;
};

static int htod_write(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct htod *c = arg;
	struct gp_worker *w = c->w;
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr dst = layout_at(&c->l, off, &run);
		size_t k = run < n ? (size_t)run : n;

		/* From pageable memory the driver consumes the source before an async copy
		 * returns, so the staging buffer may be reused at once. */
		if (c->async)
			r = GP_DRV(w, cuMemcpyHtoDAsync_v2, dst, p, k, c->stream);
		else
			r = w->drv.cuMemcpyHtoD_v2(dst, p, k);
		off += k;
		p += k;
		n -= k;
	}
	return (int)r;
}

CUresult gp__serve_memcpy_htod(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_htod *a, struct gp_out_memcpy_htod *o)
{
	struct htod cp = {w, {a->dst, a->width, a->height, a->pitch}, a->stream_drv, rq->async};
	struct gp_bulk_sink sink = {.write = htod_write, .arg = &cp, .staging = w->staging};

	if (a->data_len != layout_bytes(&cp.l))
		return CUDA_ERROR_INVALID_VALUE; /* the bytes are still read, to stay in step */
	return gp__req_recv(w, rq, a->data_len, &sink);
}

/* Fills the staging buffer with n packed bytes from offset off, in stream order on a
 * created stream (after the work queued before it, and no more). */
struct dtoh {
	struct gp_worker *w;
	struct layout l;
	uint64_t sid;
	CUstream stream;
};

static const uint8_t *dtoh_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct dtoh *c = arg;
	struct gp_worker *w = c->w;
	uint8_t *buf = w->staging;
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr src = layout_at(&c->l, off, &run);
		size_t k = run < n ? (size_t)run : n;

		if (c->sid >= 2)
			r = GP_DRV(w, cuMemcpyDtoHAsync_v2, buf, src, k, c->stream);
		else
			r = w->drv.cuMemcpyDtoH_v2(buf, src, k);
		off += k;
		buf += k;
		n -= k;
	}
	if (r == CUDA_SUCCESS && c->sid >= 2)
		r = GP_DRV(w, cuStreamSynchronize, c->stream);
	*err = (int)r;
	return r == CUDA_SUCCESS ? w->staging : NULL;
}

/* DATA frames with the bytes, then the reply; a failed copy stops its DATA early. */
CUresult gp__serve_memcpy_dtoh(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_dtoh *a, struct gp_out_memcpy_dtoh *o)
{
	struct dtoh cp = {w, {a->src, a->width, a->height, a->pitch}, a->stream, a->stream_drv};
	struct gp_bulk_source src = {.read = dtoh_read, .arg = &cp};
	int ret;

	if (a->data_len != layout_bytes(&cp.l))
		return CUDA_ERROR_INVALID_VALUE;
	if (a->data_len == 0)
		return CUDA_SUCCESS;
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, a->data_len, &src);
	gp_conn_send_unlock(w->client);
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return (CUresult)src.err;
}

/* ---- asynchronous device to host ------------------------------------------------------
 * cuMemcpyDtoHAsync into the client's page-locked memory does not make its caller wait:
 * the copy is queued in stream order into page-locked staging here, and a stream callback
 * queued after it sends the bytes (DATA) and the Reply when the stream gets there. The
 * stream's later work waits for that callback, so anything that observes the copy done —
 * a synchronize, a query, an event recorded after it — is answered after the bytes went
 * out on the same connection. Staging is bounded per session; past the bound the copy is
 * made at once, as a synchronous one (same bytes, same order, the caller waits). */

#define DTOH_ASYNC_MAX (256ull << 20)

struct dtoh_async {
	struct gp_worker *w;
	uint64_t id, bytes;
	void *buf;
	struct dtoh_async *next;
};

static pthread_mutex_t dtoh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dtoh_async *dtoh_sent; /* sent: their staging goes on the main thread */
static uint64_t dtoh_staged;	     /* bytes of staging held */

static void CUDA_CB dtoh_async_done(CUstream s, CUresult status, void *arg)
{
	struct dtoh_async *d = arg;
	struct gp_worker *w = d->w;
	struct gp_bulk_source src = {.src = d->buf};
	struct gp_frame_hdr h = {.type = GP_MSG_MEMCPY_DTOH_ASYNC, .request_id = d->id};
	Gp__Reply rep = GP__REPLY__INIT;
	int ret = 0;

	(void)s;
	rep.result = (int32_t)status;
	gp_conn_send_lock(w->client);
	if (status == CUDA_SUCCESS)
		ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, h.request_id, NULL, d->bytes, &src);
	if (!ret)
		ret = gp_conn_send(w->client, GP_MSG_REPLY, 0, h.request_id, &rep.base, NULL, 0);
	if (!ret)
		gp_conn_flush(w->client);
	gp_conn_send_unlock(w->client);
	pthread_mutex_lock(&dtoh_lock);
	d->next = dtoh_sent;
	dtoh_sent = d;
	pthread_mutex_unlock(&dtoh_lock);
}

void gp__dtoh_async_reap(struct gp_worker *w)
{
	struct dtoh_async *d;

	pthread_mutex_lock(&dtoh_lock);
	d = dtoh_sent;
	dtoh_sent = NULL;
	pthread_mutex_unlock(&dtoh_lock);
	while (d) {
		struct dtoh_async *next = d->next;

		GP_DRV(w, cuMemFreeHost, d->buf);
		pthread_mutex_lock(&dtoh_lock);
		dtoh_staged -= d->bytes;
		pthread_mutex_unlock(&dtoh_lock);
		free(d);
		d = next;
	}
}

CUresult gp__serve_memcpy_dtoh_async(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_memcpy_dtoh_async *a,
				     struct gp_out_memcpy_dtoh_async *o)
{
	struct gp_wargs_memcpy_dtoh sync = {.ctx = a->ctx, .ctx_dev = a->ctx_dev, .src = a->src,
					    .width = a->bytes, .height = 1, .stream = a->stream,
					    .stream_drv = a->stream_drv, .data_len = a->bytes};
	struct dtoh_async *d;
	bool fits;
	CUresult r;

	gp__dtoh_async_reap(w);
	pthread_mutex_lock(&dtoh_lock);
	fits = a->bytes <= DTOH_ASYNC_MAX - dtoh_staged;
	if (fits)
		dtoh_staged += a->bytes;
	pthread_mutex_unlock(&dtoh_lock);
	if (!fits || a->bytes == 0 || !w->drv.cuMemHostAlloc || !w->drv.cuStreamAddCallback) {
		if (fits) {
			pthread_mutex_lock(&dtoh_lock);
			dtoh_staged -= a->bytes;
			pthread_mutex_unlock(&dtoh_lock);
		}
		/* At once, as a synchronous copy: DATA, then the Reply finish() sends. */
		return gp__serve_memcpy_dtoh(w, rq, &sync, NULL);
	}
	d = calloc(1, sizeof(*d));
	r = d ? GP_DRV(w, cuMemHostAlloc, &d->buf, (size_t)a->bytes, 0) : CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuMemcpyDtoHAsync_v2, d->buf, a->src, (size_t)a->bytes, a->stream_drv);
	if (r == CUDA_SUCCESS) {
		d->w = w;
		d->id = rq->h->request_id;
		d->bytes = a->bytes;
		r = GP_DRV(w, cuStreamAddCallback, a->stream_drv, dtoh_async_done, d, 0);
	}
	if (r != CUDA_SUCCESS) {
		if (d && d->buf)
			GP_DRV(w, cuMemFreeHost, d->buf);
		free(d);
		pthread_mutex_lock(&dtoh_lock);
		dtoh_staged -= a->bytes;
		pthread_mutex_unlock(&dtoh_lock);
		return r;
	}
	rq->answered_later = true;
	return CUDA_SUCCESS;
}
