/* api_array.c -- CUDA arrays, 3-D copies, texture and surface objects through the pool.
 *
 * The pool's driver keeps the objects and the worker checks every handle, address and extent
 * (daemon/worker/array.c). A CUarray here is the worker's handle id as a pointer: nothing
 * here follows it, and a stale or foreign one is refused there. A texture or surface object
 * is the driver's own value, since kernels read it; the worker refuses one the session did
 * not make. Every copy with an array or a third dimension travels as one struct gp_copy3d:
 * a host side's rows are packed here (and scattered here on the way back), so the worker
 * sees a host side only as the bulk's bytes. A CUmipmappedArray is a worker's handle too, and
 * so is each level's CUarray. Sparse and deferred-mapping arrays and the legacy texture and
 * surface references are not forwarded (CUDA_ERROR_NOT_SUPPORTED).
 */
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"

static uint64_t array_id(CUarray a)
{
	return (uint64_t)(uintptr_t)a;
}

/* The current context's pool id, or 0: the worker checks the object, not the context. */
static uint64_t ctx_opt(void)
{
	struct gp_ictx *c = gp__ctx_current();

	return gp__ctx_valid(c) ? c->remote : 0;
}

/* ---- arrays ------------------------------------------------------------------------ */

static CUresult array_create(CUarray *out, uint64_t width, uint64_t height, uint64_t depth,
			     unsigned format, unsigned channels, unsigned flags, bool three_d)
{
	struct gp_out_array_create o;
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_array_create(0,
				 &(struct gp_in_array_create){.ctx = c->remote,
							      .width = width,
							      .height = height,
							      .depth = depth,
							      .format = format,
							      .channels = channels,
							      .flags = flags,
							      .three_d = three_d},
				 &o);
	if (r == CUDA_SUCCESS)
		*out = (CUarray)(uintptr_t)o.array;
	return r;
}

GP_CUDA_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return array_create(pHandle, d->Width, d->Height, 0, d->Format, d->NumChannels, 0, false);
}

GP_CUDA_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	return array_create(pHandle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels,
			    d->Flags, true);
}

GP_CUDA_EXPORT CUresult cuArrayDestroy(CUarray a)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_array_destroy(
		0, &(struct gp_in_array_destroy){.ctx = ctx_opt(), .array = array_id(a)}, NULL);
}

static CUresult describe(CUarray a, bool three_d, struct gp_out_array_descriptor *o)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_array_descriptor(0,
					&(struct gp_in_array_descriptor){.ctx = ctx_opt(),
									 .array = array_id(a),
									 .three_d = three_d},
					o);
}

GP_CUDA_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d, CUarray a)
{
	struct gp_out_array_descriptor o;
	CUresult r;

	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	r = describe(a, false, &o);
	if (r != CUDA_SUCCESS)
		return r;
	memset(d, 0, sizeof(*d));
	d->Width = o.width;
	d->Height = o.height;
	d->Format = (CUarray_format)(o.kind & 0xffff);
	d->NumChannels = (unsigned)(o.kind >> 16 & 0xffff);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray a)
{
	struct gp_out_array_descriptor o;
	CUresult r;

	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	r = describe(a, true, &o);
	if (r != CUDA_SUCCESS)
		return r;
	memset(d, 0, sizeof(*d)); /* padding too: callers compare descriptors whole */
	d->Width = o.width;
	d->Height = o.height;
	d->Depth = o.depth;
	d->Format = (CUarray_format)(o.kind & 0xffff);
	d->NumChannels = (unsigned)(o.kind >> 16 & 0xffff);
	d->Flags = (unsigned)(o.kind >> 32);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, CUarray a,
						     CUdevice dev)
{
	struct gp_out_array_requirements o;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!req)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_array_requirements(0,
				       &(struct gp_in_array_requirements){.ctx = ctx_opt(),
									  .array = array_id(a),
									  .device = (uint64_t)dev},
				       &o);
	if (r != CUDA_SUCCESS)
		return r;
	memset(req, 0, sizeof(*req));
	req->size = o.size;
	req->alignment = o.alignment;
	return CUDA_SUCCESS;
}

/* ---- mipmapped arrays ------------------------------------------------------------------ */

GP_CUDA_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
					       const CUDA_ARRAY3D_DESCRIPTOR *d,
					       unsigned int levels)
{
	struct gp_out_mipmap_create o;
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!pHandle || !d)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_mipmap_create(0,
				  &(struct gp_in_mipmap_create){.ctx = c->remote,
								.width = d->Width,
								.height = d->Height,
								.depth = d->Depth,
								.format = d->Format,
								.channels = d->NumChannels,
								.flags = d->Flags,
								.levels = levels},
				  &o);
	if (r == CUDA_SUCCESS)
		*pHandle = (CUmipmappedArray)(uintptr_t)o.mipmap;
	return r;
}

GP_CUDA_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray m,
						 unsigned int level)
{
	struct gp_out_mipmap_level o;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!pLevelArray)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_mipmap_level(0,
				 &(struct gp_in_mipmap_level){.ctx = ctx_opt(),
							      .mipmap = (uint64_t)(uintptr_t)m,
							      .level = level},
				 &o);
	if (r == CUDA_SUCCESS)
		*pLevelArray = (CUarray)(uintptr_t)o.array;
	return r;
}

GP_CUDA_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray m)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_mipmap_destroy(
		0,
		&(struct gp_in_mipmap_destroy){.ctx = ctx_opt(), .mipmap = (uint64_t)(uintptr_t)m},
		NULL);
}

/* ---- copies ------------------------------------------------------------------------ */

/* One side of a copy as the caller described it, and where its host rows are. */
struct end {
	struct gp_copy_side w; /* what the worker is told */
	uint8_t *host;	       /* HOST: the box's first byte */
	uint64_t hpitch, hheight;
};

static CUresult end_of(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray array, size_t x,
		       size_t y, size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D *p,
		       struct end *e)
{
	struct gp_range rg;
	uint64_t off;

	memset(e, 0, sizeof(*e));
	if (t == CU_MEMORYTYPE_UNIFIED) {
		t = gp__range_find(dev, &rg) && rg.kind != GP_MEM_HOST ? CU_MEMORYTYPE_DEVICE
								       : CU_MEMORYTYPE_HOST;
		host = (const void *)(uintptr_t)dev;
	}
	switch (t) {
	case CU_MEMORYTYPE_HOST:
		if (!host)
			return CUDA_ERROR_INVALID_VALUE;
		e->w.kind = GP_SIDE_HOST;
		e->hpitch = pitch ? pitch : p->WidthInBytes;
		e->hheight = height ? height : p->Height;
		if (e->hpitch < p->WidthInBytes || (p->Depth > 1 && e->hheight < p->Height) ||
		    __builtin_mul_overflow(z, e->hheight, &off) ||
		    __builtin_add_overflow(off, y, &off) ||
		    __builtin_mul_overflow(off, e->hpitch, &off) ||
		    __builtin_add_overflow(off, x, &off))
			return CUDA_ERROR_INVALID_VALUE;
		e->host = (uint8_t *)host + off;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		e->w = (struct gp_copy_side){.kind = GP_SIDE_DEVICE,
					     .addr = dev,
					     .x = x,
					     .y = y,
					     .z = z,
					     .pitch = pitch,
					     .height = height};
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		if (!array)
			return CUDA_ERROR_INVALID_VALUE;
		e->w = (struct gp_copy_side){
			.kind = GP_SIDE_ARRAY, .addr = array_id(array), .x = x, .y = y, .z = z};
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* Host rows of a box moved between their place and packed bytes. */
static void host_rows(const struct end *e, uint8_t *packed, const struct gp_copy3d *d,
		      bool to_packed)
{
	for (uint64_t z = 0; z < d->depth; z++) {
		for (uint64_t y = 0; y < d->height; y++) {
			uint8_t *h = e->host + (z * e->hheight + y) * e->hpitch;
			uint8_t *q = packed + (z * d->height + y) * d->width;

			if (to_packed)
				memcpy(q, h, d->width);
			else
				memcpy(h, q, d->width);
		}
	}
}

static bool host_packed(const struct end *e, const struct gp_copy3d *d)
{
	return (e->hpitch == d->width || d->height * d->depth == 1) &&
	       (d->depth == 1 || e->hheight == d->height);
}

/* A 3-D copy; flags GP_COPY_LINEAR: the 1-D array copies (offsets into an array's bytes). */
static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream s, bool async, bool pt, uint32_t flags)
{
	struct gp_copy3d d;
	struct end src, dst;
	struct gp_ictx *c;
	uint8_t *buf = NULL;
	uint64_t sid, n;
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_stream(s, pt, &c, &sid);
	if (r != CUDA_SUCCESS)
		return r;
	if (p->reserved0 || p->reserved1 || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0)
		return CUDA_SUCCESS;
	r = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY,
		   p->srcZ, p->srcPitch, p->srcHeight, p, &src);
	if (r == CUDA_SUCCESS)
		r = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
			   p->dstY, p->dstZ, p->dstPitch, p->dstHeight, p, &dst);
	if (r != CUDA_SUCCESS)
		return r;
	d = (struct gp_copy3d){.src = src.w,
			       .dst = dst.w,
			       .width = p->WidthInBytes,
			       .height = p->Height,
			       .depth = p->Depth,
			       .flags = flags};
	if (__builtin_mul_overflow(d.width, d.height, &n) || __builtin_mul_overflow(n, d.depth, &n))
		return CUDA_ERROR_INVALID_VALUE;
	if (src.w.kind == GP_SIDE_HOST && dst.w.kind == GP_SIDE_HOST) {
		/* host to host: ordered after the stream's earlier work, as a copy would be */
		r = async ? gp__stream_sync(s, pt) : gp__ready();
		for (uint64_t z = 0; r == CUDA_SUCCESS && z < d.depth; z++)
			for (uint64_t y = 0; y < d.height; y++)
				memmove(dst.host + (z * dst.hheight + y) * dst.hpitch,
					src.host + (z * src.hheight + y) * src.hpitch, d.width);
		return r;
	}
	/* the pool cannot capture these copies: the capture ends invalidated */
	if (gp__capture_refuse(c, sid))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (src.w.kind != GP_SIDE_HOST && dst.w.kind != GP_SIDE_HOST) {
		r = gp__rpc_array_copy(
			async ? GP_F_NO_REPLY : 0,
			&(struct gp_in_array_copy){
				.ctx = c->remote, .stream = sid, .desc = &d, .desc_len = sizeof(d)},
			NULL);
		return r == CUDA_SUCCESS && !async ? gp__managed_pull() : r;
	}
	if (src.w.kind == GP_SIDE_HOST) {
		const uint8_t *from = src.host;

		if (!host_packed(&src, &d)) {
			buf = malloc(n);
			if (!buf)
				return CUDA_ERROR_OUT_OF_MEMORY;
			host_rows(&src, buf, &d, true);
			from = buf;
		}
		r = gp__rpc_array_copy_in(async ? GP_F_NO_REPLY : 0,
					  &(struct gp_in_array_copy_in){.ctx = c->remote,
									.stream = sid,
									.desc = &d,
									.desc_len = sizeof(d),
									.data = from,
									.data_len = n},
					  NULL);
		free(buf);
		return r == CUDA_SUCCESS && !async ? gp__managed_pull() : r;
	}
	/* to the host: the caller waits for the bytes, async or not */
	if (!host_packed(&dst, &d)) {
		buf = malloc(n);
		if (!buf)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = gp__rpc_array_copy_out(0,
				   &(struct gp_in_array_copy_out){.ctx = c->remote,
								  .stream = sid,
								  .desc = &d,
								  .desc_len = sizeof(d),
								  .data = buf ? buf : dst.host,
								  .data_len = n},
				   NULL);
	if (r == CUDA_SUCCESS && buf)
		host_rows(&dst, buf, &d, false);
	free(buf);
	return r == CUDA_SUCCESS ? gp__managed_pull() : r;
}

CUresult gp__memcpy_3d(const CUDA_MEMCPY3D *p, CUstream s, bool async, bool pt)
{
	return copy_3d(p, s, async, pt, 0);
}

/* A 2-D copy with an array side, as the 3-D copy of one slice. */
CUresult gp__memcpy_2d_array(const CUDA_MEMCPY2D *p, CUstream s, bool async, bool pt)
{
	CUDA_MEMCPY3D c = {
		.srcXInBytes = p->srcXInBytes,
		.srcY = p->srcY,
		.srcMemoryType = p->srcMemoryType,
		.srcHost = p->srcHost,
		.srcDevice = p->srcDevice,
		.srcArray = p->srcArray,
		.srcPitch = p->srcPitch,
		.dstXInBytes = p->dstXInBytes,
		.dstY = p->dstY,
		.dstMemoryType = p->dstMemoryType,
		.dstHost = p->dstHost,
		.dstDevice = p->dstDevice,
		.dstArray = p->dstArray,
		.dstPitch = p->dstPitch,
		.WidthInBytes = p->WidthInBytes,
		.Height = p->Height,
		.Depth = 1,
	};

	return gp__memcpy_3d(&c, s, async, pt);
}

GP_CUDA_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p)
{
	return gp__memcpy_3d(p, NULL, false, false);
}

GP_CUDA_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s)
{
	return gp__memcpy_3d(p, s, true, false);
}

/* The 1-D array copies: n bytes at a byte offset into the array, as the pool's driver lays
 * its bytes out (softgpu: rows, then slices, packed). */
CUresult gp__memcpy_array_1d(CUmemorytype dt, void *dh, CUdeviceptr dd, CUarray da, size_t doff,
			     CUmemorytype st, const void *sh, CUdeviceptr sd, CUarray sa,
			     size_t soff, size_t n, CUstream s, bool async, bool pt)
{
	CUDA_MEMCPY3D c = {
		.srcXInBytes = st == CU_MEMORYTYPE_ARRAY ? soff : 0,
		.srcMemoryType = st,
		.srcHost = sh,
		.srcDevice = sd,
		.srcArray = sa,
		.dstXInBytes = dt == CU_MEMORYTYPE_ARRAY ? doff : 0,
		.dstMemoryType = dt,
		.dstHost = dh,
		.dstDevice = dd,
		.dstArray = da,
		.WidthInBytes = n,
		.Height = 1,
		.Depth = 1,
	};

	if ((st == CU_MEMORYTYPE_ARRAY && !sa) || (dt == CU_MEMORYTYPE_ARRAY && !da))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_3d(&c, s, async, pt, GP_COPY_LINEAR);
}

#define HOST CU_MEMORYTYPE_HOST
#define DEV CU_MEMORYTYPE_DEVICE
#define ARR CU_MEMORYTYPE_ARRAY

GP_CUDA_EXPORT CUresult cuMemcpyHtoA_v2(CUarray dst, size_t off, const void *src, size_t n)
{
	return gp__memcpy_array_1d(ARR, NULL, 0, dst, off, HOST, src, 0, NULL, 0, n, NULL, false,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoH_v2(void *dst, CUarray src, size_t off, size_t n)
{
	return gp__memcpy_array_1d(HOST, dst, 0, NULL, 0, ARR, NULL, 0, src, off, n, NULL, false,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t off, const void *src, size_t n,
					     CUstream s)
{
	return gp__memcpy_array_1d(ARR, NULL, 0, dst, off, HOST, src, 0, NULL, 0, n, s, true,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoHAsync_v2(void *dst, CUarray src, size_t off, size_t n,
					     CUstream s)
{
	return gp__memcpy_array_1d(HOST, dst, 0, NULL, 0, ARR, NULL, 0, src, off, n, s, true,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t off, size_t n)
{
	return gp__memcpy_array_1d(DEV, NULL, dst, NULL, 0, ARR, NULL, 0, src, off, n, NULL, false,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoA_v2(CUarray dst, size_t off, CUdeviceptr src, size_t n)
{
	return gp__memcpy_array_1d(ARR, NULL, 0, dst, off, DEV, NULL, src, NULL, 0, n, NULL, false,
				   false);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoA_v2(CUarray dst, size_t doff, CUarray src, size_t soff,
					size_t n)
{
	return gp__memcpy_array_1d(ARR, NULL, 0, dst, doff, ARR, NULL, 0, src, soff, n, NULL, false,
				   false);
}

/* ---- texture objects ------------------------------------------------------------------ */

static uint32_t bits_of(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

static float float_of(uint32_t b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

static CUresult res_to_wire(const CUDA_RESOURCE_DESC *r, struct gp_res_desc *o)
{
	memset(o, 0, sizeof(*o));
	if (r->flags)
		return CUDA_ERROR_INVALID_VALUE;
	o->type = r->resType;
	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		if (!r->res.array.hArray)
			return CUDA_ERROR_INVALID_VALUE;
		o->handle = array_id(r->res.array.hArray);
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_LINEAR:
		o->dptr = r->res.linear.devPtr;
		o->format = r->res.linear.format;
		o->channels = r->res.linear.numChannels;
		o->bytes = r->res.linear.sizeInBytes;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_PITCH2D:
		o->dptr = r->res.pitch2D.devPtr;
		o->format = r->res.pitch2D.format;
		o->channels = r->res.pitch2D.numChannels;
		o->width = r->res.pitch2D.width;
		o->height = r->res.pitch2D.height;
		o->pitch = r->res.pitch2D.pitchInBytes;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		if (!r->res.mipmap.hMipmappedArray)
			return CUDA_ERROR_INVALID_VALUE;
		o->handle = (uint64_t)(uintptr_t)r->res.mipmap.hMipmappedArray;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

GP_CUDA_EXPORT CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *res,
					  const CUDA_TEXTURE_DESC *tex,
					  const CUDA_RESOURCE_VIEW_DESC *view)
{
	struct gp_out_tex_create o;
	struct gp_tex_desc d;
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!pTexObject || !res || !tex)
		return CUDA_ERROR_INVALID_VALUE;
	r = res_to_wire(res, &d.res);
	if (r != CUDA_SUCCESS)
		return r;
	memset(&d.tex, 0, sizeof(d.tex));
	memset(&d.view, 0, sizeof(d.view));
	d.unused = 0;
	for (int i = 0; i < 3; i++)
		d.tex.address[i] = tex->addressMode[i];
	d.tex.filter = tex->filterMode;
	d.tex.flags = tex->flags;
	d.tex.max_anisotropy = tex->maxAnisotropy;
	d.tex.mip_filter = tex->mipmapFilterMode;
	d.tex.mip_bias = bits_of(tex->mipmapLevelBias);
	d.tex.min_mip_clamp = bits_of(tex->minMipmapLevelClamp);
	d.tex.max_mip_clamp = bits_of(tex->maxMipmapLevelClamp);
	for (int i = 0; i < 4; i++)
		d.tex.border[i] = bits_of(tex->borderColor[i]);
	d.has_view = view != NULL;
	if (view) {
		d.view.format = view->format;
		d.view.width = view->width;
		d.view.height = view->height;
		d.view.depth = view->depth;
		d.view.first_mip = view->firstMipmapLevel;
		d.view.last_mip = view->lastMipmapLevel;
		d.view.first_layer = view->firstLayer;
		d.view.last_layer = view->lastLayer;
	}
	r = gp__rpc_tex_create(
		0, &(struct gp_in_tex_create){.ctx = c->remote, .desc = &d, .desc_len = sizeof(d)},
		&o);
	if (r == CUDA_SUCCESS)
		*pTexObject = (CUtexObject)o.obj;
	return r;
}

GP_CUDA_EXPORT CUresult cuTexObjectDestroy(CUtexObject obj)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_tex_destroy(0, &(struct gp_in_tex_destroy){.ctx = ctx_opt(), .obj = obj},
				   NULL);
}

static CUresult tex_describe(CUtexObject obj, struct gp_tex_desc *d)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	memset(d, 0, sizeof(*d));
	return gp__rpc_tex_describe(
		0,
		&(struct gp_in_tex_describe){
			.ctx = ctx_opt(), .obj = obj, .desc = d, .desc_len = sizeof(*d)},
		NULL);
}

GP_CUDA_EXPORT CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUtexObject obj)
{
	struct gp_tex_desc d;
	CUresult r;

	if (!res)
		return CUDA_ERROR_INVALID_VALUE;
	r = tex_describe(obj, &d);
	if (r != CUDA_SUCCESS)
		return r;
	memset(res, 0, sizeof(*res));
	res->resType = (CUresourcetype)d.res.type;
	switch (d.res.type) {
	case CU_RESOURCE_TYPE_ARRAY:
		res->res.array.hArray = (CUarray)(uintptr_t)d.res.handle;
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		res->res.mipmap.hMipmappedArray = (CUmipmappedArray)(uintptr_t)d.res.handle;
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		res->res.linear.devPtr = d.res.dptr;
		res->res.linear.format = (CUarray_format)d.res.format;
		res->res.linear.numChannels = d.res.channels;
		res->res.linear.sizeInBytes = d.res.bytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		res->res.pitch2D.devPtr = d.res.dptr;
		res->res.pitch2D.format = (CUarray_format)d.res.format;
		res->res.pitch2D.numChannels = d.res.channels;
		res->res.pitch2D.width = d.res.width;
		res->res.pitch2D.height = d.res.height;
		res->res.pitch2D.pitchInBytes = d.res.pitch;
		break;
	default:
		break;
	}
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *tex, CUtexObject obj)
{
	struct gp_tex_desc d;
	CUresult r;

	if (!tex)
		return CUDA_ERROR_INVALID_VALUE;
	r = tex_describe(obj, &d);
	if (r != CUDA_SUCCESS)
		return r;
	memset(tex, 0, sizeof(*tex));
	for (int i = 0; i < 3; i++)
		tex->addressMode[i] = (CUaddress_mode)d.tex.address[i];
	tex->filterMode = (CUfilter_mode)d.tex.filter;
	tex->flags = d.tex.flags;
	tex->maxAnisotropy = d.tex.max_anisotropy;
	tex->mipmapFilterMode = (CUfilter_mode)d.tex.mip_filter;
	tex->mipmapLevelBias = float_of(d.tex.mip_bias);
	tex->minMipmapLevelClamp = float_of(d.tex.min_mip_clamp);
	tex->maxMipmapLevelClamp = float_of(d.tex.max_mip_clamp);
	for (int i = 0; i < 4; i++)
		tex->borderColor[i] = float_of(d.tex.border[i]);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *view,
						       CUtexObject obj)
{
	struct gp_tex_desc d;
	CUresult r;

	if (!view)
		return CUDA_ERROR_INVALID_VALUE;
	r = tex_describe(obj, &d);
	if (r != CUDA_SUCCESS)
		return r;
	if (!d.has_view)
		return CUDA_ERROR_INVALID_VALUE; /* made without a view */
	memset(view, 0, sizeof(*view));
	view->format = (CUresourceViewFormat)d.view.format;
	view->width = d.view.width;
	view->height = d.view.height;
	view->depth = d.view.depth;
	view->firstMipmapLevel = d.view.first_mip;
	view->lastMipmapLevel = d.view.last_mip;
	view->firstLayer = d.view.first_layer;
	view->lastLayer = d.view.last_layer;
	return CUDA_SUCCESS;
}

/* ---- surface objects ------------------------------------------------------------------ */

GP_CUDA_EXPORT CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *res)
{
	struct gp_out_surf_create o;
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!pSurfObject || !res || res->resType != CU_RESOURCE_TYPE_ARRAY || res->flags ||
	    !res->res.array.hArray)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_surf_create(0,
				&(struct gp_in_surf_create){
					.ctx = c->remote, .array = array_id(res->res.array.hArray)},
				&o);
	if (r == CUDA_SUCCESS)
		*pSurfObject = (CUsurfObject)o.obj;
	return r;
}

GP_CUDA_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject obj)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	return gp__rpc_surf_destroy(0, &(struct gp_in_surf_destroy){.ctx = ctx_opt(), .obj = obj},
				    NULL);
}

GP_CUDA_EXPORT CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUsurfObject obj)
{
	struct gp_out_surf_describe o;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!res)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_surf_describe(0, &(struct gp_in_surf_describe){.ctx = ctx_opt(), .obj = obj},
				  &o);
	if (r != CUDA_SUCCESS)
		return r;
	memset(res, 0, sizeof(*res));
	res->resType = CU_RESOURCE_TYPE_ARRAY;
	res->res.array.hArray = (CUarray)(uintptr_t)o.array;
	return CUDA_SUCCESS;
}
