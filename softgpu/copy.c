/* copy.c -- cuMemcpy* and cuMemset*: synchronous and asynchronous, 1-D, 2-D and 3-D, with
 * host, device and CUDA array endpoints. */
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

/*
 * Every copy and memset is checked when it is called: device ranges must lie
 * inside one live allocation (CUDA_ERROR_INVALID_VALUE otherwise, as the
 * driver answers), D16/D32 destinations must be aligned. Then it is queued on
 * its stream. As with a GPU: a synchronous call returns when the work is done;
 * an async copy from pageable host memory takes a snapshot of the source at
 * the call; an async copy into pageable host memory completes before
 * returning; copies involving pinned memory are truly asynchronous.
 */

void sg_copy_run(const struct sg_copy *c)
{
	size_t depth = c->depth ? c->depth : 1;

	for (size_t z = 0; z < depth; z++)
		for (size_t y = 0; y < c->height; y++)
			memmove(c->dst + z * c->dslice + y * c->dpitch,
				c->src + z * c->sslice + y * c->spitch, c->width);
}

void sg_set_run(const struct sg_set *s)
{
	for (size_t y = 0; y < s->height; y++) {
		uint8_t *row = s->dst + y * s->pitch;

		switch (s->elem) {
		case 1:
			memset(row, (int)(s->value & 0xff), s->width);
			break;
		case 2: {
			uint16_t v = (uint16_t)s->value;

			for (size_t i = 0; i < s->width; i++)
				memcpy(row + 2 * i, &v, 2);
			break;
		}
		default:
			for (size_t i = 0; i < s->width; i++)
				memcpy(row + 4 * i, &s->value, 4);
			break;
		}
	}
}

static bool pinned(const void *p)
{
	struct sg_alloc a;

	return sg_mem_find((uint64_t)(uintptr_t)p, &a) &&
	       (a.kind == SG_MEM_HOST || a.kind == SG_MEM_REGISTERED || a.kind == SG_MEM_MANAGED);
}

enum side { DEV, HOST, ANY };

/*
 * The bytes a strided access touches: rows-1 pitches and one more row. False when that does
 * not fit in 64 bits — a pitch from the caller must never wrap a range check into a small one.
 */
static bool strided_span(size_t rows, size_t pitch, size_t row, size_t *span)
{
	size_t a;

	if (rows == 0) {
		*span = 0;
		return true;
	}
	return !__builtin_mul_overflow(rows - 1, pitch, &a) &&
	       !__builtin_add_overflow(a, row, span);
}

/* Host address of `span` bytes at p as `side` sees it; NULL with *err on a bad range. */
static uint8_t *resolve(uint64_t p, size_t span, enum side side, CUresult *err)
{
	if (p == 0) {
		*err = CUDA_ERROR_INVALID_VALUE;
		return NULL;
	}
	return sg_mem_xlate(p, span, side != DEV, err);
}

/*
 * Queues a copy: async on `h` when async, else on the calling thread's
 * default stream and waits. src_host/dst_host say which sides are host
 * memory (for the pageable rules).
 */
static CUresult do_copy(struct sg_copy *c, bool src_host, bool dst_host, CUstream h, bool async,
			bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_op *op;
	size_t span;
	CUresult r = sg_stream_resolve(async ? h : NULL, pt, &ctx, &s);

	if (r)
		return r;
	if ((r = (CUresult)__atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE)))
		return r;
	if (c->width == 0 || c->height == 0)
		return CUDA_SUCCESS;
	op = sg_op_new(SG_OP_COPY);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (async && sg_stream_capturing(s)) {
		/* captured: the node reads and writes host memory when the graph runs */
		op->u.copy = *c;
		return sg_stream_submit(s, op);
	}
	if (async && src_host && !pinned(c->src)) {
		span = ((c->depth ? c->depth : 1) - 1) * c->sslice + (c->height - 1) * c->spitch +
		       c->width;
		op->staging = malloc(span);
		if (op->staging == NULL) {
			sg_op_free(op);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(op->staging, c->src, span);
		c->src = op->staging;
	}
	op->u.copy = *c;
	if (!async || (dst_host && !pinned(c->dst)))
		return sg_stream_submit_wait(s, op);
	return sg_stream_submit(s, op);
}

static CUresult copy1d(uint64_t dst, enum side ds, uint64_t src, enum side ss, size_t n, CUstream h,
		       bool async, bool pt)
{
	struct sg_copy c = {0};
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, true), e = CUDA_SUCCESS;

	if (r)
		return r;
	if (n == 0)
		return CUDA_SUCCESS;
	c.dst = resolve(dst, n, ds, &e);
	c.src = c.dst ? resolve(src, n, ss, &e) : NULL;
	if (c.dst == NULL || c.src == NULL)
		return e ? e : CUDA_ERROR_INVALID_VALUE;
	c.width = n;
	c.height = 1;
	c.dpitch = c.spitch = n;
	return do_copy(&c, ss != DEV, ds != DEV, h, async, pt);
}

#define U(p) ((uint64_t)(uintptr_t)(p))

SG_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy1d(dstDevice, DEV, U(srcHost), HOST, ByteCount, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy1d(U(dstHost), HOST, srcDevice, DEV, ByteCount, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy1d(dstDevice, DEV, srcDevice, DEV, ByteCount, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy1d(dst, ANY, src, ANY, ByteCount, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
					size_t ByteCount, CUstream hStream)
{
	return copy1d(dstDevice, DEV, U(srcHost), HOST, ByteCount, hStream, true, false);
}

SG_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					CUstream hStream)
{
	return copy1d(U(dstHost), HOST, srcDevice, DEV, ByteCount, hStream, true, false);
}

SG_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
					size_t ByteCount, CUstream hStream)
{
	return copy1d(dstDevice, DEV, srcDevice, DEV, ByteCount, hStream, true, false);
}

SG_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
				 CUstream hStream)
{
	return copy1d(dst, ANY, src, ANY, ByteCount, hStream, true, false);
}

/* ---- 2-D ---- */

/* A box of an array: x bytes, y rows and z slices from its origin, within it. */
static bool array_box(const struct sg_array_info *ai, size_t x, size_t y, size_t z, size_t wbytes,
		      size_t h, size_t d)
{
	return x <= ai->pitch && wbytes <= ai->pitch - x && y <= ai->height &&
	       h <= ai->height - y && z <= ai->depth && d <= ai->depth - z;
}

/*
 * An endpoint's memory: host, device or unified at its address, an array (ai->dptr set,
 * else 0) at its texels, whose layout (ai->pitch, ai->height) overrides the caller's.
 */
static CUresult side_of(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray arr,
			uint64_t *addr, enum side *side, struct sg_array_info *ai)
{
	CUresult r;

	ai->dptr = 0;
	switch (t) {
	case CU_MEMORYTYPE_HOST:
		*addr = U(host);
		*side = HOST;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		*addr = dev;
		*side = DEV;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		*addr = dev;
		*side = ANY;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		if ((r = sg_array_get(arr, ai)))
			return r;
		*addr = ai->dptr;
		*side = DEV;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream h, bool async, bool pt)
{
	struct sg_copy c = {0};
	struct sg_ctx *ctx;
	struct sg_array_info sai, dai;
	enum side ss, ds;
	uint64_t sa, da;
	size_t spitch, dpitch, sspan, dspan;
	CUresult r = sg_ctx_current(&ctx, true), e = CUDA_SUCCESS;

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, &sa, &ss,
			 &sai)) ||
	    (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &da, &ds, &dai)))
		return r;
	if (p->WidthInBytes == 0 || p->Height == 0)
		return CUDA_SUCCESS;
	spitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
	dpitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
	if (sai.dptr) {
		spitch = sai.pitch;
		if (!array_box(&sai, p->srcXInBytes, p->srcY, 0, p->WidthInBytes, p->Height, 1))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (dai.dptr) {
		dpitch = dai.pitch;
		if (!array_box(&dai, p->dstXInBytes, p->dstY, 0, p->WidthInBytes, p->Height, 1))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if ((p->Height > 1 && (spitch < p->WidthInBytes || dpitch < p->WidthInBytes)) ||
	    spitch > 2147483647u || dpitch > 2147483647u)
		return CUDA_ERROR_INVALID_VALUE;
	sa += p->srcY * spitch + p->srcXInBytes;
	da += p->dstY * dpitch + p->dstXInBytes;
	if (!strided_span(p->Height, spitch, p->WidthInBytes, &sspan) ||
	    !strided_span(p->Height, dpitch, p->WidthInBytes, &dspan))
		return CUDA_ERROR_INVALID_VALUE;
	c.dst = resolve(da, dspan, ds, &e);
	c.src = c.dst ? resolve(sa, sspan, ss, &e) : NULL;
	if (c.dst == NULL || c.src == NULL)
		return e ? e : CUDA_ERROR_INVALID_VALUE;
	c.width = p->WidthInBytes;
	c.height = p->Height;
	c.spitch = spitch;
	c.dpitch = dpitch;
	return do_copy(&c, ss != DEV, ds != DEV, h, async, pt);
}

SG_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
	return copy2d(pCopy, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
	return copy2d(pCopy, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy2d(pCopy, hStream, true, false);
}

/* ---- 3-D ---- */

CUresult sg_copy_prepare3d(const CUDA_MEMCPY3D *p, struct sg_copy *out, bool *src_host,
			   bool *dst_host)
{
	struct sg_copy c = {0};
	struct sg_array_info sai, dai;
	enum side ss, ds;
	uint64_t sa, da;
	size_t sp, dp, sh, dh, sspan, dspan;
	CUresult r, e = CUDA_SUCCESS;

	*out = c;
	if (p == NULL || p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, &sa, &ss,
			 &sai)) ||
	    (r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &da, &ds, &dai)))
		return r;
	if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0)
		return CUDA_SUCCESS; /* an empty copy: width 0 */
	sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
	dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
	sh = p->srcHeight ? p->srcHeight : p->Height;
	dh = p->dstHeight ? p->dstHeight : p->Height;
	if (sai.dptr) {
		sp = sai.pitch;
		sh = sai.height;
		if (!array_box(&sai, p->srcXInBytes, p->srcY, p->srcZ, p->WidthInBytes, p->Height,
			       p->Depth))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (dai.dptr) {
		dp = dai.pitch;
		dh = dai.height;
		if (!array_box(&dai, p->dstXInBytes, p->dstY, p->dstZ, p->WidthInBytes, p->Height,
			       p->Depth))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (sp < p->WidthInBytes || dp < p->WidthInBytes ||
	    (p->Depth > 1 && (sh < p->Height || dh < p->Height)))
		return CUDA_ERROR_INVALID_VALUE;
	sa += (p->srcZ * sh + p->srcY) * sp + p->srcXInBytes;
	da += (p->dstZ * dh + p->dstY) * dp + p->dstXInBytes;
	{
		size_t sslice, dslice, srows, drows;

		/* A 3-D box: depth-1 slices, then a 2-D span in the last one. */
		if (__builtin_mul_overflow(sh, sp, &sslice) ||
		    __builtin_mul_overflow(dh, dp, &dslice) ||
		    !strided_span(p->Height, sp, p->WidthInBytes, &srows) ||
		    !strided_span(p->Height, dp, p->WidthInBytes, &drows) ||
		    !strided_span(p->Depth, sslice, srows, &sspan) ||
		    !strided_span(p->Depth, dslice, drows, &dspan))
			return CUDA_ERROR_INVALID_VALUE;
	}
	c.dst = resolve(da, dspan, ds, &e);
	c.src = c.dst ? resolve(sa, sspan, ss, &e) : NULL;
	if (c.dst == NULL || c.src == NULL)
		return e ? e : CUDA_ERROR_INVALID_VALUE;
	c.width = p->WidthInBytes;
	c.height = p->Height;
	c.depth = p->Depth;
	c.spitch = sp;
	c.dpitch = dp;
	c.sslice = sh * sp;
	c.dslice = dh * dp;
	*out = c;
	*src_host = ss != DEV;
	*dst_host = ds != DEV;
	return CUDA_SUCCESS;
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream h, bool async, bool pt)
{
	struct sg_copy c;
	struct sg_ctx *ctx;
	bool sh = false, dh = false;
	CUresult r = sg_ctx_current(&ctx, true);

	if (r)
		return r;
	r = sg_copy_prepare3d(p, &c, &sh, &dh);
	if (r || c.width == 0)
		return r;
	return do_copy(&c, sh, dh, h, async, pt);
}

SG_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
	return copy3d(pCopy, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy3d(pCopy, hStream, true, false);
}

/* ---- arrays as linear bytes (cuMemcpyHtoA and the rest) ---- */

/* The device address of n bytes at byte offset off of array h: 0 with *err if not inside. */
static uint64_t array_at(CUarray h, size_t off, size_t n, CUresult *err)
{
	struct sg_array_info ai;

	if ((*err = sg_array_get(h, &ai)))
		return 0;
	if (off > ai.bytes || n > ai.bytes - off) {
		*err = CUDA_ERROR_INVALID_VALUE;
		return 0;
	}
	return ai.dptr + off;
}

static CUresult copy_array(CUarray da, size_t doff, uint64_t dst, enum side ds, CUarray sa,
			   size_t soff, uint64_t src, enum side ss, size_t n, CUstream h,
			   bool async, bool pt)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, true);

	if (r)
		return r;
	if (da && (dst = array_at(da, doff, n, &r)) == 0)
		return r;
	if (sa && (src = array_at(sa, soff, n, &r)) == 0)
		return r;
	return copy1d(dst, ds, src, ss, n, h, async, pt);
}

SG_EXPORT CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
				   size_t ByteCount)
{
	if (dstArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(dstArray, dstOffset, 0, DEV, NULL, 0, U(srcHost), HOST, ByteCount, NULL,
			  false, false);
}

SG_EXPORT CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset,
				   size_t ByteCount)
{
	if (srcArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(NULL, 0, U(dstHost), HOST, srcArray, srcOffset, 0, DEV, ByteCount, NULL,
			  false, false);
}

SG_EXPORT CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
				   size_t ByteCount)
{
	if (dstArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(dstArray, dstOffset, 0, DEV, NULL, 0, srcDevice, DEV, ByteCount, NULL,
			  false, false);
}

SG_EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
				   size_t ByteCount)
{
	if (srcArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(NULL, 0, dstDevice, DEV, srcArray, srcOffset, 0, DEV, ByteCount, NULL,
			  false, false);
}

SG_EXPORT CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray,
				   size_t srcOffset, size_t ByteCount)
{
	if (dstArray == NULL || srcArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(dstArray, dstOffset, 0, DEV, srcArray, srcOffset, 0, DEV, ByteCount, NULL,
			  false, false);
}

SG_EXPORT CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
					size_t ByteCount, CUstream hStream)
{
	if (dstArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(dstArray, dstOffset, 0, DEV, NULL, 0, U(srcHost), HOST, ByteCount,
			  hStream, true, false);
}

SG_EXPORT CUresult cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset,
					size_t ByteCount, CUstream hStream)
{
	if (srcArray == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	return copy_array(NULL, 0, U(dstHost), HOST, srcArray, srcOffset, 0, DEV, ByteCount,
			  hStream, true, false);
}

/* ---- between contexts: all memory is one address space here ---- */

static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
		     CUstream h, bool async, bool pt)
{
	struct sg_ctx *a, *b;
	CUresult r = sg_ctx_resolve(dctx, &a, true);

	if (r || (r = sg_ctx_resolve(sctx, &b, true)))
		return r;
	if (dctx == NULL || sctx == NULL)
		return CUDA_ERROR_INVALID_CONTEXT;
	return copy1d(dst, DEV, src, DEV, n, h, async, pt);
}

SG_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
				CUcontext srcContext, size_t ByteCount)
{
	return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, false, false);
}

SG_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
				     CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
				     CUstream hStream)
{
	return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, true, false);
}

/* ---- memset ---- */

CUresult sg_set_prepare(uint64_t dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
			size_t height, struct sg_set *out)
{
	struct sg_set set = {0};
	size_t rowbytes, span;
	CUresult e = CUDA_SUCCESS;

	*out = set;
	if (elem != 1 && elem != 2 && elem != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	if (__builtin_mul_overflow(width, (size_t)elem, &rowbytes) || dst % elem ||
	    (height > 1 && (pitch < rowbytes || pitch % elem)) ||
	    !strided_span(height, pitch, rowbytes, &span))
		return CUDA_ERROR_INVALID_VALUE;
	set.dst = resolve(dst, span, DEV, &e);
	if (set.dst == NULL)
		return e;
	set.value = value;
	set.elem = elem;
	set.width = width;
	set.height = height;
	set.pitch = height > 1 ? pitch : rowbytes;
	*out = set;
	return CUDA_SUCCESS;
}

static CUresult memset2d(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
			 size_t height, CUstream h, bool async, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_op *op;
	struct sg_set set;
	CUresult r = sg_stream_resolve(async ? h : NULL, pt, &ctx, &s);

	if (r)
		return r;
	if ((r = (CUresult)__atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE)))
		return r;
	r = sg_set_prepare(dst, pitch, value, elem, width, height, &set);
	if (r || set.dst == NULL)
		return r;
	op = sg_op_new(SG_OP_SET);
	if (op == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.set = set;
	return async ? sg_stream_submit(s, op) : sg_stream_submit_wait(s, op);
}

SG_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset2d(dstDevice, 0, uc, 1, N, 1, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	return memset2d(dstDevice, 0, us, 2, N, 1, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset2d(dstDevice, 0, ui, 4, N, 1, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
				   CUstream hStream)
{
	return memset2d(dstDevice, 0, uc, 1, N, 1, hStream, true, false);
}

SG_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
				    CUstream hStream)
{
	return memset2d(dstDevice, 0, us, 2, N, 1, hStream, true, false);
}

SG_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
				    CUstream hStream)
{
	return memset2d(dstDevice, 0, ui, 4, N, 1, hStream, true, false);
}

SG_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
				   size_t Width, size_t Height)
{
	return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
				    size_t Width, size_t Height)
{
	return memset2d(dstDevice, dstPitch, us, 2, Width, Height, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				    size_t Width, size_t Height)
{
	return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL, false, false);
}

SG_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
				     size_t Width, size_t Height, CUstream hStream)
{
	return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, hStream, true, false);
}

SG_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
				      size_t Width, size_t Height, CUstream hStream)
{
	return memset2d(dstDevice, dstPitch, us, 2, Width, Height, hStream, true, false);
}

SG_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				      size_t Width, size_t Height, CUstream hStream)
{
	return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream, true, false);
}

/* ---- per-thread default stream variants ---- */

#define PT(ret, name, params)      \
	SG_EXPORT ret name params; \
	SG_EXPORT ret name params

PT(CUresult, cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void *s, size_t n))
{
	return copy1d(d, DEV, U(s), HOST, n, NULL, false, true);
}
PT(CUresult, cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n))
{
	return copy1d(U(d), HOST, s, DEV, n, NULL, false, true);
}
PT(CUresult, cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n))
{
	return copy1d(d, DEV, s, DEV, n, NULL, false, true);
}
PT(CUresult, cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n))
{
	return copy1d(d, ANY, s, ANY, n, NULL, false, true);
}
PT(CUresult, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void *s, size_t n, CUstream h))
{
	return copy1d(d, DEV, U(s), HOST, n, h, true, true);
}
PT(CUresult, cuMemcpyDtoHAsync_v2_ptsz, (void *d, CUdeviceptr s, size_t n, CUstream h))
{
	return copy1d(U(d), HOST, s, DEV, n, h, true, true);
}
PT(CUresult, cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h))
{
	return copy1d(d, DEV, s, DEV, n, h, true, true);
}
PT(CUresult, cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h))
{
	return copy1d(d, ANY, s, ANY, n, h, true, true);
}
PT(CUresult, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p))
{
	return copy2d(p, NULL, false, true);
}
PT(CUresult, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p))
{
	return copy2d(p, NULL, false, true);
}
PT(CUresult, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *p, CUstream h))
{
	return copy2d(p, h, true, true);
}
PT(CUresult, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p))
{
	return copy3d(p, NULL, false, true);
}
PT(CUresult, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *p, CUstream h))
{
	return copy3d(p, h, true, true);
}
PT(CUresult, cuMemcpyHtoA_v2_ptds, (CUarray d, size_t o, const void *s, size_t n))
{
	return d ? copy_array(d, o, 0, DEV, NULL, 0, U(s), HOST, n, NULL, false, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyAtoH_v2_ptds, (void *d, CUarray s, size_t o, size_t n))
{
	return s ? copy_array(NULL, 0, U(d), HOST, s, o, 0, DEV, n, NULL, false, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyDtoA_v2_ptds, (CUarray d, size_t o, CUdeviceptr s, size_t n))
{
	return d ? copy_array(d, o, 0, DEV, NULL, 0, s, DEV, n, NULL, false, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyAtoD_v2_ptds, (CUdeviceptr d, CUarray s, size_t o, size_t n))
{
	return s ? copy_array(NULL, 0, d, DEV, s, o, 0, DEV, n, NULL, false, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyAtoA_v2_ptds, (CUarray d, size_t dof, CUarray s, size_t so, size_t n))
{
	return d && s ? copy_array(d, dof, 0, DEV, s, so, 0, DEV, n, NULL, false, true)
		      : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyHtoAAsync_v2_ptsz, (CUarray d, size_t o, const void *s, size_t n, CUstream h))
{
	return d ? copy_array(d, o, 0, DEV, NULL, 0, U(s), HOST, n, h, true, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyAtoHAsync_v2_ptsz, (void *d, CUarray s, size_t o, size_t n, CUstream h))
{
	return s ? copy_array(NULL, 0, U(d), HOST, s, o, 0, DEV, n, h, true, true)
		 : CUDA_ERROR_INVALID_HANDLE;
}
PT(CUresult, cuMemcpyPeer_ptds,
   (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n))
{
	return peer(d, dc, s, sc, n, NULL, false, true);
}
PT(CUresult, cuMemcpyPeerAsync_ptsz,
   (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h))
{
	return peer(d, dc, s, sc, n, h, true, true);
}
PT(CUresult, cuMemsetD8_v2_ptds, (CUdeviceptr d, unsigned char v, size_t n))
{
	return memset2d(d, 0, v, 1, n, 1, NULL, false, true);
}
PT(CUresult, cuMemsetD16_v2_ptds, (CUdeviceptr d, unsigned short v, size_t n))
{
	return memset2d(d, 0, v, 2, n, 1, NULL, false, true);
}
PT(CUresult, cuMemsetD32_v2_ptds, (CUdeviceptr d, unsigned int v, size_t n))
{
	return memset2d(d, 0, v, 4, n, 1, NULL, false, true);
}
PT(CUresult, cuMemsetD8Async_ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream h))
{
	return memset2d(d, 0, v, 1, n, 1, h, true, true);
}
PT(CUresult, cuMemsetD16Async_ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream h))
{
	return memset2d(d, 0, v, 2, n, 1, h, true, true);
}
PT(CUresult, cuMemsetD32Async_ptsz, (CUdeviceptr d, unsigned int v, size_t n, CUstream h))
{
	return memset2d(d, 0, v, 4, n, 1, h, true, true);
}
PT(CUresult, cuMemsetD2D8_v2_ptds, (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h))
{
	return memset2d(d, p, v, 1, w, h, NULL, false, true);
}
PT(CUresult, cuMemsetD2D16_v2_ptds, (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h))
{
	return memset2d(d, p, v, 2, w, h, NULL, false, true);
}
PT(CUresult, cuMemsetD2D32_v2_ptds, (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h))
{
	return memset2d(d, p, v, 4, w, h, NULL, false, true);
}
PT(CUresult, cuMemsetD2D8Async_ptsz,
   (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s))
{
	return memset2d(d, p, v, 1, w, h, s, true, true);
}
PT(CUresult, cuMemsetD2D16Async_ptsz,
   (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s))
{
	return memset2d(d, p, v, 2, w, h, s, true, true);
}
PT(CUresult, cuMemsetD2D32Async_ptsz,
   (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s))
{
	return memset2d(d, p, v, 4, w, h, s, true, true);
}
