/* mem.c -- device memory: allocations within the session's limit, copies, memsets.
 *
 * Every pointer a client sends is checked, with its length, against the
 * session's own allocations (and the module globals it looked up) before the
 * driver sees it. Calls that arrive with GP_F_NO_REPLY are the client's async
 * variants and go on the stream they name; the others are synchronous. */
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

static bool is_async(const struct gp_frame_hdr *h)
{
	return (h->flags & GP_F_NO_REPLY) != 0;
}

/*
 * A copy's device layout: `bytes` packed bytes that are, with pitch 0, one range at base,
 * else rows of `width` bytes `pitch` apart. Both directions walk it the same way.
 */
struct layout {
	CUdeviceptr base;
	uint64_t bytes, pitch, width;
};

/* The device range a layout touches, checked against what the session owns. */
static bool layout_owned(struct gp_worker *w, const struct layout *l)
{
	uint64_t rows;

	if (l->pitch == 0)
		return gp__range_owned(w, l->base, l->bytes);
	if (l->width == 0 || l->width > l->pitch || l->bytes % l->width)
		return false;
	rows = l->bytes / l->width;
	if (rows == 0)
		return true;
	return gp__range2d_owned(w, l->base, l->pitch, l->width, rows);
}

/* The device address of packed offset off, and how many bytes follow it contiguously. */
static CUdeviceptr layout_at(const struct layout *l, uint64_t off, uint64_t *run)
{
	if (l->pitch == 0) {
		*run = l->bytes - off;
		return l->base + off;
	}
	*run = l->width - off % l->width;
	return l->base + (off / l->width) * l->pitch + off % l->width;
}

CUresult gp__mem_alloc(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		       uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	CUdeviceptr p;
	CUresult r = gp__use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	if (a[1] == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->mem_limit && (a[1] > w->mem_limit || w->dev_used[ctx->device] > w->mem_limit - a[1]))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = w->drv.cuMemAlloc_v2(&p, (size_t)a[1]);
	if (r != CUDA_SUCCESS)
		return r;
	if (gp__alloc_add(w, p, (size_t)a[1], a[0], ctx->device)) {
		w->drv.cuMemFree_v2(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	out[0] = p;
	*nout = 1;
	return CUDA_SUCCESS;
}

CUresult gp__mem_alloc_pitch(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	CUdeviceptr p;
	size_t pitch;
	uint64_t bytes;
	CUresult r = gp__use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	if (a[1] == 0 || a[2] == 0 || a[1] > (1ull << 40) || a[2] > (1ull << 40))
		return CUDA_ERROR_INVALID_VALUE;
	/* The limit is checked against the unpadded size first, the padded one after. */
	if (w->mem_limit && w->dev_used[ctx->device] + a[1] * a[2] > w->mem_limit)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuMemAllocPitch_v2, &p, &pitch, (size_t)a[1], (size_t)a[2], (unsigned)a[3]);
	if (r != CUDA_SUCCESS)
		return r;
	bytes = (uint64_t)pitch * a[2];
	if ((w->mem_limit && w->dev_used[ctx->device] + bytes > w->mem_limit) ||
	    gp__alloc_add(w, p, (size_t)bytes, a[0], ctx->device)) {
		w->drv.cuMemFree_v2(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	out[0] = p;
	out[1] = pitch;
	*nout = 2;
	return CUDA_SUCCESS;
}

CUresult gp__mem_free(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		      uint64_t *out, size_t *nout)
{
	struct gp_alloc *al;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	al = gp__alloc_find(w, (CUdeviceptr)a[1]);
	if (!al || al->ptr != a[1] || al->module)
		return CUDA_ERROR_INVALID_VALUE;
	r = w->drv.cuMemFree_v2(al->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	gp__alloc_remove(w, al);
	return CUDA_SUCCESS;
}

CUresult gp__mem_get_info(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	size_t fr, tot;
	CUresult r = gp__use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	r = w->drv.cuMemGetInfo_v2(&fr, &tot);
	if (r != CUDA_SUCCESS)
		return r;
	/* The session sees its limit as the device's size. */
	if (w->mem_limit && w->mem_limit < tot) {
		uint64_t used = w->dev_used[ctx->device];
		uint64_t room = used < w->mem_limit ? w->mem_limit - used : 0;

		tot = w->mem_limit;
		if (fr > room)
			fr = room;
	}
	out[0] = fr;
	out[1] = tot;
	*nout = 2;
	return CUDA_SUCCESS;
}

/* arg: ctx, dst, src, width, stream, dst pitch, src pitch, height (1 and pitches 0: 1-D) */
CUresult gp__memcpy_dtod(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout)
{
	uint64_t width = a[3], height = a[7];
	struct layout dl = {a[1], width * height, a[5], width};
	struct layout sl = {a[2], width * height, a[6], width};
	CUstream s;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS && (height == 0 || (height > 1 && (!a[5] || !a[6])) ||
				  (height > 1 && width > UINT64_MAX / height)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (height == 1)
		dl.pitch = sl.pitch = 0;
	if (r == CUDA_SUCCESS && (!layout_owned(w, &dl) || !layout_owned(w, &sl)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, a[4], &s);
	for (uint64_t row = 0; r == CUDA_SUCCESS && row < height; row++) {
		CUdeviceptr d = a[1] + row * a[5], src = a[2] + row * a[6];

		if (height == 1) {
			d = a[1];
			src = a[2];
		}
		if (is_async(f))
			r = GP_DRV(w, cuMemcpyDtoDAsync_v2, d, src, (size_t)width, s);
		else
			r = GP_DRV(w, cuMemcpyDtoD_v2, d, src, (size_t)width);
	}
	return r;
}

/* arg: ctx, dst, value, element size, count, stream, pitch, height */
CUresult gp__memset(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		    uint64_t *out, size_t *nout)
{
	uint64_t esize = a[3], count = a[4], pitch = a[6], height = a[7];
	struct layout l;
	bool async = is_async(f);
	unsigned v = (unsigned)a[2];
	CUstream s;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	if ((esize != 1 && esize != 2 && esize != 4) || count > (1ull << 48) ||
	    height > (1ull << 32) || (a[1] % esize) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* The same overflow-checked walk as copies: rows of count * esize bytes, pitch apart. */
	l.base = a[1];
	l.width = count * esize;
	l.pitch = pitch;
	if (pitch == 0) {
		l.bytes = l.width;
	} else if (height == 0 || l.width > UINT64_MAX / height) {
		return CUDA_ERROR_INVALID_VALUE;
	} else {
		l.bytes = l.width * height;
		if (l.width == 0)
			return CUDA_SUCCESS;
	}
	if (!layout_owned(w, &l))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__use_stream(w, a[5], &s);
	if (r != CUDA_SUCCESS)
		return r;
	if (pitch == 0) {
		switch (esize) {
		case 1:
			return async ? GP_DRV(w, cuMemsetD8Async, a[1], (unsigned char)v, count, s)
				     : GP_DRV(w, cuMemsetD8_v2, a[1], (unsigned char)v, count);
		case 2:
			return async ? GP_DRV(w, cuMemsetD16Async, a[1], (unsigned short)v, count,
					      s)
				     : GP_DRV(w, cuMemsetD16_v2, a[1], (unsigned short)v, count);
		default:
			return async ? GP_DRV(w, cuMemsetD32Async, a[1], v, count, s)
				     : GP_DRV(w, cuMemsetD32_v2, a[1], v, count);
		}
	}
	switch (esize) {
	case 1:
		return async ? GP_DRV(w, cuMemsetD2D8Async, a[1], pitch, (unsigned char)v, count,
				      height, s)
			     : GP_DRV(w, cuMemsetD2D8_v2, a[1], pitch, (unsigned char)v, count,
				      height);
	case 2:
		return async ? GP_DRV(w, cuMemsetD2D16Async, a[1], pitch, (unsigned short)v, count,
				      height, s)
			     : GP_DRV(w, cuMemsetD2D16_v2, a[1], pitch, (unsigned short)v, count,
				      height);
	default:
		return async ? GP_DRV(w, cuMemsetD2D32Async, a[1], pitch, v, count, height, s)
			     : GP_DRV(w, cuMemsetD2D32_v2, a[1], pitch, v, count, height);
	}
}

/* ---- host <-> device ----------------------------------------------------------- */

struct htod {
	struct layout l;
	CUstream stream;
	bool async;
};

static CUresult htod_sink(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct htod *c = arg;
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
	return r;
}

/* arg: ctx, dst, bytes, stream, pitch, width; bulk: the bytes */
int gp__memcpy_htod(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Call *c = gp__unpack_call(w, h, 6);
	struct htod cp = {0};
	CUresult r, sr;
	int ret;

	if (!c)
		return GP_EDECODE;
	cp.l = (struct layout){c->arg[1], c->arg[2], c->arg[4], c->arg[5]};
	cp.async = is_async(h);
	r = gp__use_ctx(w, c->arg[0], NULL);
	if (r == CUDA_SUCCESS && !layout_owned(w, &cp.l))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, c->arg[3], &cp.stream);
	protobuf_c_message_free_unpacked(&c->base, NULL);
	/* The bytes are read even when the copy is refused, to stay in step. */
	ret = gp__recv_bulk(w, h, cp.l.bytes, r == CUDA_SUCCESS ? htod_sink : NULL, &cp, &sr);
	if (ret)
		return ret;
	return gp__reply(w, h, r != CUDA_SUCCESS ? r : sr, NULL, 0);
}

/* Fills buf with n packed bytes from offset off, in stream order when sid names a stream. */
static CUresult dtoh_chunk(struct gp_worker *w, const struct layout *l, uint64_t off, size_t n,
			   uint64_t sid, CUstream s, uint8_t *buf)
{
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr src = layout_at(l, off, &run);
		size_t k = run < n ? (size_t)run : n;

		/* On a stream: after the work queued before it, and no more. */
		if (sid >= 2)
			r = GP_DRV(w, cuMemcpyDtoHAsync_v2, buf, src, k, s);
		else
			r = w->drv.cuMemcpyDtoH_v2(buf, src, k);
		off += k;
		buf += k;
		n -= k;
	}
	if (r == CUDA_SUCCESS && sid >= 2)
		r = GP_DRV(w, cuStreamSynchronize, s);
	return r;
}

/* arg: ctx, src, bytes, stream, pitch, width. DATA frames with the bytes, then a REPLY. */
int gp__memcpy_dtoh(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Call *c = gp__unpack_call(w, h, 6);
	struct layout l;
	uint64_t off = 0, sid;
	CUstream s = NULL;
	CUresult r;
	int ret;

	if (!c)
		return GP_EDECODE;
	l = (struct layout){c->arg[1], c->arg[2], c->arg[4], c->arg[5]};
	sid = c->arg[3];
	r = gp__use_ctx(w, c->arg[0], NULL);
	protobuf_c_message_free_unpacked(&c->base, NULL);
	if (h->bulk_len || is_async(h))
		return GP_EFRAME; /* the answer carries the bytes: it cannot be skipped */
	if (r == CUDA_SUCCESS && !layout_owned(w, &l))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		r = gp__use_stream(w, sid, &s);
	while (r == CUDA_SUCCESS && off < l.bytes) {
		size_t n = l.bytes - off < GP_CHUNK_SIZE ? (size_t)(l.bytes - off) : GP_CHUNK_SIZE;

		r = dtoh_chunk(w, &l, off, n, sid, s, w->staging);
		if (r != CUDA_SUCCESS)
			break;
		off += n;
		ret = gp_conn_send(w->client, GP_MSG_DATA, off < l.bytes ? GP_F_MORE : 0,
				   h->request_id, NULL, w->staging, n);
		if (ret)
			return ret;
	}
	/* The bytes of a failed copy are not sent; the reply says how it ended. */
	return gp__reply(w, h, r, NULL, 0);
}
