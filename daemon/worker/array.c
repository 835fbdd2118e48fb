/* array.c -- CUDA arrays, 3-D copies, texture and surface objects of the session.
 *
 * An array is a handle of kind GP_H_ARRAY whose ptr is the driver's CUarray: the client's
 * CUarray is that id, so a stale or foreign one is refused by its generation. An array is
 * charged to the session on its context's device from creation to destruction (or its
 * context's end), by what it needs at most: rows padded to GP_ARRAY_ROW_ALIGN bytes, times
 * its rows and slices, the whole rounded up to GP_ARRAY_ALIGN. The driver does not say
 * what an ordinary array costs (cuArrayGetMemoryRequirements answers only for deferred
 * mapping arrays), and a cuMemGetInfo difference would count other sessions' work on the
 * same GPU, so the charge is computed: at least what softgpu allocates (the packed bytes);
 * NVIDIA's layouts of large arrays may take more than this, which the pool does not see.
 *
 * A mipmapped array is a handle of kind GP_H_MIPMAP, charged every level; its levels, asked
 * for, are GP_H_MIPLEVEL handles that copies, textures and surfaces take as arrays.
 *
 * Texture and surface objects are handles too (GP_H_TEXOBJ, GP_H_SURFOBJ; at most
 * GP_ARRAY_OBJECTS_MAX of them together, then CUDA_ERROR_OUT_OF_MEMORY), but the client
 * holds the driver's value, because kernels read it: each call that names one finds it
 * among the session's handles first, so the driver never sees a value it did not make.
 * Their resource descriptors name arrays by handle and memory by address: each is checked
 * (the array the session's, the whole range in one allocation of the session) before the
 * driver sees it, and the driver's answers name arrays by handle again.
 *
 * A copy's description (struct gp_copy3d) is checked side by side: a device side's whole
 * box must lie in one allocation of the session, an array side's box inside the array (as
 * the driver describes it), a host side's packed size must be the bulk's. Every product and
 * sum is overflow-checked. Host bytes are copied between the array and the connection's
 * staging chunk in pieces of whole rows of one slice, with partial rows at the ends.
 *
 * All of it runs on the main thread under w->lock; the driver frees what is left when the
 * session's process exits. cuArrayDestroy is called on the main thread (drivers do not wait
 * for the device there).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "worker.h"

#define GP_ARRAY_ROW_ALIGN 512u
#define GP_ARRAY_ALIGN 4096u
/* Texture and surface objects one session may hold at once: each holds driver host memory,
 * and finding one is a walk of the session's handles. */
#define GP_ARRAY_OBJECTS_MAX 65536u
/* Larger than any dimension a driver accepts, small enough that products stay checked. */
#define GP_ARRAY_DIM_MAX (1ull << 24)

/* Bytes of one element of a format (0: not one the pool forwards). */
static unsigned format_bytes(uint32_t format)
{
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

static unsigned elem_bytes(uint32_t format, uint32_t channels)
{
	if (channels != 1 && channels != 2 && channels != 4)
		return 0;
	return format_bytes(format) * channels;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* What an array of these extents is charged; 0 when it overflows. */
static uint64_t array_charge(uint64_t width, uint64_t height, uint64_t depth, unsigned elem)
{
	uint64_t row = round_up(width * elem, GP_ARRAY_ROW_ALIGN), bytes;

	if (__builtin_mul_overflow(row, height ? height : 1, &bytes) ||
	    __builtin_mul_overflow(bytes, depth ? depth : 1, &bytes) ||
	    bytes > UINT64_MAX - GP_ARRAY_ALIGN)
		return 0;
	return round_up(bytes, GP_ARRAY_ALIGN);
}

/* An array of the session, or a level of one of its mipmapped arrays. */
static struct gp_handle *array_get(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_ARRAY);

	return h ? h : gp__handle_get(w, id, GP_H_MIPLEVEL);
}

/* The session's handle of a driver object of kind, by the driver's value; 0: none. */
static uint64_t find_by_value(struct gp_worker *w, uint32_t kind, uint64_t value)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		const struct gp_handle *h = &w->handles[i];

		if (h->kind == kind && (uint64_t)(uintptr_t)h->ptr == value)
			return gp__handle_id(w, h);
	}
	return 0;
}

/* Whether the session may make one more texture or surface object. */
static bool objects_room(struct gp_worker *w)
{
	return gp_owner_count(&w->own, GP_H_TEXOBJ) + gp_owner_count(&w->own, GP_H_SURFOBJ) <
	       GP_ARRAY_OBJECTS_MAX;
}

/* The session's handle of a driver array (a mipmap level's too); 0: none. */
static uint64_t array_id_of(struct gp_worker *w, CUarray a)
{
	uint64_t id = find_by_value(w, GP_H_ARRAY, (uint64_t)(uintptr_t)a);

	return id ? id : find_by_value(w, GP_H_MIPLEVEL, (uint64_t)(uintptr_t)a);
}

/* A new handle of kind for a driver object made in ctx, charged bytes on device. */
static uint64_t object_add(struct gp_worker *w, uint32_t kind, uint64_t value, uint64_t ctx,
			   int device, uint64_t bytes)
{
	uint64_t id = gp__handle_new(w, kind, (void *)(uintptr_t)value);
	struct gp_handle *h = id ? gp__handle_get(w, id, kind) : NULL;

	if (!h)
		return 0;
	h->parent = ctx;
	h->device = device;
	h->charge = bytes;
	gp__charge(w, device, (int64_t)bytes);
	return id;
}

/* ---- arrays ---------------------------------------------------------------------- */

CUresult gp__serve_array_create(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_array_create *a,
				struct gp_out_array_create *o)
{
	unsigned elem = elem_bytes(a->format, a->channels);
	int dev = a->ctx_dev;
	uint64_t bytes, id;
	CUarray arr = NULL;
	CUresult r;

	if (a->width == 0 || a->width > GP_ARRAY_DIM_MAX || a->height > GP_ARRAY_DIM_MAX ||
	    a->depth > GP_ARRAY_DIM_MAX || a->three_d > 1 ||
	    (!a->three_d && (a->depth || a->flags)))
		return CUDA_ERROR_INVALID_VALUE;
	if (elem == 0)
		return format_bytes(a->format) || a->channels > 4 || a->channels == 3 ||
				       a->channels == 0
			       ? CUDA_ERROR_INVALID_VALUE
			       : CUDA_ERROR_NOT_SUPPORTED;
	/* arrays without memory of their own until mapped: cuMemMapArrayAsync is not forwarded */
	if (a->flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return CUDA_ERROR_NOT_SUPPORTED;
	bytes = array_charge(a->width, a->height, a->depth, elem);
	if (bytes == 0 || !gp__charge_fits(w, dev, bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (a->three_d) {
		CUDA_ARRAY3D_DESCRIPTOR d = {.Width = a->width,
					     .Height = a->height,
					     .Depth = a->depth,
					     .Format = (CUarray_format)a->format,
					     .NumChannels = a->channels,
					     .Flags = a->flags};

		r = GP_DRV(w, cuArray3DCreate_v2, &arr, &d);
	} else {
		CUDA_ARRAY_DESCRIPTOR d = {.Width = a->width,
					   .Height = a->height,
					   .Format = (CUarray_format)a->format,
					   .NumChannels = a->channels};

		r = GP_DRV(w, cuArrayCreate_v2, &arr, &d);
	}
	if (r != CUDA_SUCCESS)
		return r;
	id = object_add(w, GP_H_ARRAY, (uint64_t)(uintptr_t)arr, a->ctx, dev, bytes);
	if (!id) {
		(void)GP_DRV(w, cuArrayDestroy, arr);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->array = id;
	o->bytes = bytes;
	return CUDA_SUCCESS;
}

CUresult gp__serve_array_destroy(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_array_destroy *a,
				 struct gp_out_array_destroy *o)
{
	struct gp_handle *h = gp__handle_get(w, a->array, GP_H_ARRAY);
	CUresult r;

	if (!h) /* a level goes with its mipmapped array, as CUDA says */
		return gp__handle_get(w, a->array, GP_H_MIPLEVEL) ? CUDA_ERROR_INVALID_VALUE
								  : CUDA_ERROR_INVALID_HANDLE;
	r = GP_DRV(w, cuArrayDestroy, (CUarray)h->ptr);
	if (r == CUDA_SUCCESS)
		gp__handle_release(w, a->array); /* and its charge */
	return r;
}

CUresult gp__serve_array_requirements(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_array_requirements *a,
				      struct gp_out_array_requirements *o)
{
	struct gp_handle *h = array_get(w, a->array);
	CUDA_ARRAY_MEMORY_REQUIREMENTS req;
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(&req, 0, sizeof(req));
	r = GP_DRV(w, cuArrayGetMemoryRequirements, &req, (CUarray)h->ptr, a->device_drv);
	o->size = req.size;
	o->alignment = req.alignment;
	return r;
}

static CUresult describe(struct gp_worker *w, const struct gp_handle *h, CUDA_ARRAY3D_DESCRIPTOR *d)
{
	memset(d, 0, sizeof(*d));
	return GP_DRV(w, cuArray3DGetDescriptor_v2, d, (CUarray)h->ptr);
}

CUresult gp__serve_array_descriptor(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_array_descriptor *a,
				    struct gp_out_array_descriptor *o)
{
	struct gp_handle *h = array_get(w, a->array);
	CUresult r;

	if (!h || a->three_d > 1)
		return h ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	if (a->three_d) {
		CUDA_ARRAY3D_DESCRIPTOR d;

		r = describe(w, h, &d);
		o->width = d.Width;
		o->height = d.Height;
		o->depth = d.Depth;
		o->kind = (uint64_t)(d.Format & 0xffff) | (uint64_t)(d.NumChannels & 0xffff) << 16 |
			  (uint64_t)d.Flags << 32;
	} else {
		CUDA_ARRAY_DESCRIPTOR d;

		memset(&d, 0, sizeof(d));
		r = GP_DRV(w, cuArrayGetDescriptor_v2, &d, (CUarray)h->ptr);
		o->width = d.Width;
		o->height = d.Height;
		o->kind = (uint64_t)(d.Format & 0xffff) | (uint64_t)(d.NumChannels & 0xffff) << 16;
	}
	return r;
}

/* ---- mipmapped arrays --------------------------------------------------------------
 * The handle is charged every level (each side halved, at least 1, a layered array's layers
 * and a cubemap's faces kept); a level asked for gets a GP_H_MIPLEVEL handle, an array for
 * copies, textures and surfaces but not cuArrayDestroy, which goes when its mipmapped array
 * does. */

#define GP_MIPMAP_LEVELS 32u

static uint64_t halved(uint64_t v, unsigned l)
{
	return v == 0 ? 0 : v >> l ? v >> l : 1;
}

CUresult gp__serve_mipmap_create(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_mipmap_create *a,
				 struct gp_out_mipmap_create *o)
{
	unsigned elem = elem_bytes(a->format, a->channels);
	/* a layered or cubemap array keeps its layers (faces) at every level */
	bool layered = a->flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
	CUDA_ARRAY3D_DESCRIPTOR d = {.Width = a->width,
				     .Height = a->height,
				     .Depth = a->depth,
				     .Format = (CUarray_format)a->format,
				     .NumChannels = a->channels,
				     .Flags = a->flags};
	CUmipmappedArray m = NULL;
	uint64_t bytes = 0, id;
	int dev = a->ctx_dev;
	CUresult r;

	if (a->width == 0 || a->width > GP_ARRAY_DIM_MAX || a->height > GP_ARRAY_DIM_MAX ||
	    a->depth > GP_ARRAY_DIM_MAX || a->levels == 0 || a->levels > GP_MIPMAP_LEVELS)
		return CUDA_ERROR_INVALID_VALUE;
	if (elem == 0)
		return format_bytes(a->format) ? CUDA_ERROR_INVALID_VALUE
					       : CUDA_ERROR_NOT_SUPPORTED;
	if (a->flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return CUDA_ERROR_NOT_SUPPORTED;
	for (unsigned l = 0; l < a->levels; l++) {
		uint64_t b = array_charge(halved(a->width, l), halved(a->height, l),
					  layered ? a->depth : halved(a->depth, l), elem);

		if (b == 0 || __builtin_add_overflow(bytes, b, &bytes))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!gp__charge_fits(w, dev, bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuMipmappedArrayCreate, &m, &d, a->levels);
	if (r != CUDA_SUCCESS)
		return r;
	id = object_add(w, GP_H_MIPMAP, (uint64_t)(uintptr_t)m, a->ctx, dev, bytes);
	if (!id) {
		(void)GP_DRV(w, cuMipmappedArrayDestroy, m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->mipmap = id;
	o->bytes = bytes;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mipmap_destroy(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_mipmap_destroy *a,
				  struct gp_out_mipmap_destroy *o)
{
	struct gp_handle *h = gp__handle_get(w, a->mipmap, GP_H_MIPMAP);
	CUarray levels[GP_MIPMAP_LEVELS];
	unsigned n = 0;
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	/* its levels, while the driver can still name them */
	while (n < GP_MIPMAP_LEVELS && GP_DRV(w, cuMipmappedArrayGetLevel, &levels[n],
					      (CUmipmappedArray)h->ptr, n) == CUDA_SUCCESS)
		n++;
	r = GP_DRV(w, cuMipmappedArrayDestroy, (CUmipmappedArray)h->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	for (unsigned l = 0; l < n; l++) {
		uint64_t lv = find_by_value(w, GP_H_MIPLEVEL, (uint64_t)(uintptr_t)levels[l]);

		if (lv)
			gp__handle_release(w, lv);
	}
	gp__handle_release(w, a->mipmap); /* and its charge */
	return CUDA_SUCCESS;
}

CUresult gp__serve_mipmap_level(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_mipmap_level *a,
				struct gp_out_mipmap_level *o)
{
	struct gp_handle *h = gp__handle_get(w, a->mipmap, GP_H_MIPMAP);
	CUarray lv = NULL;
	uint64_t id;
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	r = GP_DRV(w, cuMipmappedArrayGetLevel, &lv, (CUmipmappedArray)h->ptr, a->level);
	if (r != CUDA_SUCCESS)
		return r;
	id = find_by_value(w, GP_H_MIPLEVEL, (uint64_t)(uintptr_t)lv);
	if (!id)
		id = object_add(w, GP_H_MIPLEVEL, (uint64_t)(uintptr_t)lv, h->parent, h->device, 0);
	if (!id)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->array = id;
	return CUDA_SUCCESS;
}

/* ---- copies ---------------------------------------------------------------------- */

/* One side of a checked copy, as the driver's CUDA_MEMCPY3D names it. */
struct side {
	CUmemorytype type;
	CUdeviceptr dev;
	CUarray array;
	uint64_t x, y, z, pitch, height;
};

/*
 * Checks one side of a copy of width bytes by height rows by depth slices and fills *s
 * (a host side gets no address: the caller's buffer). Device: the box from its first byte
 * to its last lies in one allocation of the session. Array: the box lies in the array.
 */
static CUresult side_check(struct gp_worker *w, const struct gp_copy_side *c,
			   const struct gp_copy3d *d, struct side *s)
{
	memset(s, 0, sizeof(*s));
	switch (c->kind) {
	case GP_SIDE_HOST:
		s->type = CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case GP_SIDE_DEVICE: {
		uint64_t pitch = c->pitch ? c->pitch : d->width;
		uint64_t rows = c->height ? c->height : d->height;
		uint64_t slice, first, last, span, start;

		if (pitch < d->width || (d->depth > 1 && rows < d->height) ||
		    ((d->flags & GP_COPY_LINEAR) && (c->x || c->y || c->z)) ||
		    __builtin_mul_overflow(rows, pitch, &slice) ||
		    /* first: the box's offset from addr; last: its last row's from its first */
		    __builtin_mul_overflow(c->z, slice, &first) ||
		    __builtin_mul_overflow(c->y, pitch, &start) ||
		    __builtin_add_overflow(first, start, &first) ||
		    __builtin_add_overflow(first, c->x, &first) ||
		    __builtin_mul_overflow(d->depth - 1, slice, &last) ||
		    __builtin_mul_overflow(d->height - 1, pitch, &span) ||
		    __builtin_add_overflow(last, span, &last) ||
		    __builtin_add_overflow(last, d->width, &span) ||
		    __builtin_add_overflow(c->addr, first, &start) || start + span < start ||
		    !gp__range_owned(w, start, span))
			return CUDA_ERROR_INVALID_VALUE;
		*s = (struct side){.type = CU_MEMORYTYPE_DEVICE,
				   .dev = c->addr,
				   .x = c->x,
				   .y = c->y,
				   .z = c->z,
				   .pitch = pitch,
				   .height = rows};
		return CUDA_SUCCESS;
	}
	case GP_SIDE_ARRAY: {
		struct gp_handle *h = array_get(w, c->addr);
		CUDA_ARRAY3D_DESCRIPTOR ad;
		uint64_t row, rows, slices;
		unsigned elem;
		CUresult r;

		if (!h)
			return CUDA_ERROR_INVALID_HANDLE;
		r = describe(w, h, &ad);
		if (r != CUDA_SUCCESS)
			return r;
		elem = elem_bytes(ad.Format, ad.NumChannels);
		row = (uint64_t)ad.Width * elem;
		rows = ad.Height ? ad.Height : 1;
		slices = ad.Depth ? ad.Depth : 1;
		if (elem == 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (d->flags & GP_COPY_LINEAR) {
			/* the array's bytes as the driver lays them out: at most row * rows *
			 * slices (each below 2^32 times 16) */
			uint64_t all = row * rows * slices;

			if (c->y || c->z || c->x > all || d->width > all - c->x)
				return CUDA_ERROR_INVALID_VALUE;
		} else if (c->x > row || d->width > row - c->x || c->y > rows ||
			   d->height > rows - c->y || c->z > slices || d->depth > slices - c->z) {
			return CUDA_ERROR_INVALID_VALUE;
		}
		*s = (struct side){.type = CU_MEMORYTYPE_ARRAY,
				   .array = (CUarray)h->ptr,
				   .x = c->x,
				   .y = c->y,
				   .z = c->z};
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult copy_check(struct gp_worker *w, const void *blob, size_t len, struct gp_copy3d *d,
			   struct side *src, struct side *dst)
{
	CUresult r;

	if (len != sizeof(*d))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(d, blob, sizeof(*d));
	if (d->width == 0 || d->height == 0 || d->depth == 0 || d->unused ||
	    (d->flags & ~GP_COPY_LINEAR) ||
	    ((d->flags & GP_COPY_LINEAR) && (d->height != 1 || d->depth != 1)))
		return CUDA_ERROR_INVALID_VALUE;
	r = side_check(w, &d->src, d, src);
	if (r == CUDA_SUCCESS)
		r = side_check(w, &d->dst, d, dst);
	return r;
}

static void side_put(const struct side *s, CUDA_MEMCPY3D *c, bool dst, const void *host,
		     uint64_t width)
{
	if (dst) {
		c->dstMemoryType = s->type;
		c->dstXInBytes = s->x;
		c->dstY = s->y;
		c->dstZ = s->z;
		c->dstDevice = s->dev;
		c->dstArray = s->array;
		c->dstPitch = s->pitch;
		c->dstHeight = s->height;
		if (s->type == CU_MEMORYTYPE_HOST) {
			c->dstHost = (void *)host;
			c->dstPitch = width;
		}
	} else {
		c->srcMemoryType = s->type;
		c->srcXInBytes = s->x;
		c->srcY = s->y;
		c->srcZ = s->z;
		c->srcDevice = s->dev;
		c->srcArray = s->array;
		c->srcPitch = s->pitch;
		c->srcHeight = s->height;
		if (s->type == CU_MEMORYTYPE_HOST) {
			c->srcHost = host;
			c->srcPitch = width;
		}
	}
}

/* A copy in the stream order of the call: queued when it was sent without waiting, else
 * finished before the answer (on a created stream: queued there, then waited for). */
static CUresult run_copy(struct gp_worker *w, const CUDA_MEMCPY3D *c, uint64_t sid, CUstream s,
			 bool async)
{
	CUresult r;

	if (!async && sid < 2)
		return GP_DRV(w, cuMemcpy3D_v2, c);
	r = GP_DRV(w, cuMemcpy3DAsync_v2, c, s);
	if (r == CUDA_SUCCESS && !async)
		r = GP_DRV(w, cuStreamSynchronize, s);
	return r;
}

/* Host bytes at packed offset off (n of them) moved to or from the non-host side. */
struct piecewise {
	struct gp_worker *w;
	struct gp_copy3d d;
	struct side other; /* the side that is not the host's */
	bool to_host;
	uint64_t sid;
	CUstream stream;
	bool async;
};

/* A linear copy between host bytes and an array at byte offset s->x (one row: y, z 0). */
static CUresult linear_host(struct piecewise *p, const struct side *s, uint8_t *host, size_t k)
{
	struct gp_worker *w = p->w;
	CUresult r;

	if (s->type != CU_MEMORYTYPE_ARRAY)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->to_host) {
		if (p->sid < 2)
			return GP_DRV(w, cuMemcpyAtoH_v2, host, s->array, s->x, k);
		r = GP_DRV(w, cuMemcpyAtoHAsync_v2, host, s->array, s->x, k, p->stream);
		return r == CUDA_SUCCESS ? GP_DRV(w, cuStreamSynchronize, p->stream) : r;
	}
	if (!p->async && p->sid < 2)
		return GP_DRV(w, cuMemcpyHtoA_v2, s->array, s->x, host, k);
	r = GP_DRV(w, cuMemcpyHtoAAsync_v2, s->array, s->x, host, k, p->stream);
	return r == CUDA_SUCCESS && !p->async ? GP_DRV(w, cuStreamSynchronize, p->stream) : r;
}

static CUresult pieces(struct piecewise *p, uint64_t off, uint8_t *host, size_t n)
{
	uint64_t width = p->d.width, height = p->d.height;
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t row = off / width, col = off % width, y = row % height;
		uint64_t k, rows = 1;
		CUDA_MEMCPY3D c;
		struct side s = p->other, h = {.type = CU_MEMORYTYPE_HOST};

		if (col || n < width) {
			k = width - col < n ? width - col : n; /* part of one row */
		} else {
			rows = n / width;
			if (rows > height - y)
				rows = height - y; /* whole rows of one slice */
			k = rows * width;
		}
		s.x += col;
		s.y += y;
		s.z += row / height;
		if (p->d.flags & GP_COPY_LINEAR) {
			r = linear_host(p, &s, host, k);
			off += k;
			host += k;
			n -= k;
			continue;
		}
		memset(&c, 0, sizeof(c));
		c.WidthInBytes = rows > 1 ? width : k;
		c.Height = rows;
		c.Depth = 1;
		side_put(&s, &c, !p->to_host, NULL, 0);
		side_put(&h, &c, p->to_host, host, c.WidthInBytes);
		r = run_copy(p->w, &c, p->sid, p->stream, p->async);
		off += k;
		host += k;
		n -= k;
	}
	return r;
}

static int copy_in_write(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	return (int)pieces(arg, off, (uint8_t *)p, n);
}

static const uint8_t *copy_out_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct piecewise *p = arg;
	CUresult r = pieces(p, off, p->w->staging, n);

	*err = (int)r;
	return r == CUDA_SUCCESS ? p->w->staging : NULL;
}

/* The packed bytes of a copy's host side; 0 when they overflow. */
static uint64_t packed_bytes(const struct gp_copy3d *d)
{
	uint64_t n;

	if (__builtin_mul_overflow(d->width, d->height, &n) ||
	    __builtin_mul_overflow(n, d->depth, &n))
		return 0;
	return n;
}

CUresult gp__serve_array_copy(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_array_copy *a, struct gp_out_array_copy *o)
{
	struct gp_copy3d d;
	struct side src, dst;
	CUDA_MEMCPY3D c;
	CUresult r = copy_check(w, a->desc, a->desc_len, &d, &src, &dst);

	if (r != CUDA_SUCCESS)
		return r;
	if (src.type == CU_MEMORYTYPE_HOST || dst.type == CU_MEMORYTYPE_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	if (d.flags & GP_COPY_LINEAR) {
		/* the driver has these only synchronous: done before the answer */
		if (src.type == CU_MEMORYTYPE_ARRAY && dst.type == CU_MEMORYTYPE_ARRAY)
			return GP_DRV(w, cuMemcpyAtoA_v2, dst.array, dst.x, src.array, src.x,
				      d.width);
		if (src.type == CU_MEMORYTYPE_ARRAY)
			return GP_DRV(w, cuMemcpyAtoD_v2, dst.dev, src.array, src.x, d.width);
		if (dst.type == CU_MEMORYTYPE_ARRAY)
			return GP_DRV(w, cuMemcpyDtoA_v2, dst.array, dst.x, src.dev, d.width);
		return CUDA_ERROR_INVALID_VALUE;
	}
	memset(&c, 0, sizeof(c));
	side_put(&src, &c, false, NULL, 0);
	side_put(&dst, &c, true, NULL, 0);
	c.WidthInBytes = d.width;
	c.Height = d.height;
	c.Depth = d.depth;
	r = GP_DRV(w, cuMemcpy3DAsync_v2, &c, a->stream_drv);
	/* Queued on its stream; a synchronous one is answered from there. */
	return r == CUDA_SUCCESS ? gp__answer_on_stream(w, rq, a->stream_drv) : r;
}

CUresult gp__serve_array_copy_in(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_array_copy_in *a,
				 struct gp_out_array_copy_in *o)
{
	struct piecewise p = {
		.w = w, .sid = a->stream, .stream = a->stream_drv, .async = rq->async};
	struct gp_bulk_sink sink = {.write = copy_in_write, .arg = &p, .staging = w->staging};
	struct side src;
	CUresult r = copy_check(w, a->desc, a->desc_len, &p.d, &src, &p.other);

	/* refused: the bytes are still read, to stay in step */
	if (r != CUDA_SUCCESS)
		return r;
	if (src.type != CU_MEMORYTYPE_HOST || p.other.type == CU_MEMORYTYPE_HOST ||
	    a->data_len != packed_bytes(&p.d))
		return CUDA_ERROR_INVALID_VALUE;
	return gp__req_recv(w, rq, a->data_len, &sink);
}

CUresult gp__serve_array_copy_out(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_array_copy_out *a,
				  struct gp_out_array_copy_out *o)
{
	struct piecewise p = {.w = w, .to_host = true, .sid = a->stream, .stream = a->stream_drv};
	struct gp_bulk_source src = {.read = copy_out_read, .arg = &p};
	struct side dst;
	CUresult r = copy_check(w, a->desc, a->desc_len, &p.d, &p.other, &dst);
	int ret;

	if (r != CUDA_SUCCESS)
		return r;
	if (dst.type != CU_MEMORYTYPE_HOST || p.other.type == CU_MEMORYTYPE_HOST ||
	    a->data_len != packed_bytes(&p.d))
		return CUDA_ERROR_INVALID_VALUE;
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, a->data_len, &src);
	gp_conn_send_unlock(w->client);
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return (CUresult)src.err;
}

/* ---- texture objects --------------------------------------------------------------- */

static CUresult res_from_wire(struct gp_worker *w, const struct gp_res_desc *in,
			      CUDA_RESOURCE_DESC *res)
{
	unsigned elem;
	uint64_t row;

	memset(res, 0, sizeof(*res));
	if (in->flags)
		return CUDA_ERROR_INVALID_VALUE;
	res->resType = (CUresourcetype)in->type;
	switch (in->type) {
	case CU_RESOURCE_TYPE_ARRAY: {
		struct gp_handle *h = array_get(w, in->handle);

		if (!h)
			return CUDA_ERROR_INVALID_HANDLE;
		res->res.array.hArray = (CUarray)h->ptr;
		return CUDA_SUCCESS;
	}
	case CU_RESOURCE_TYPE_LINEAR:
		if (!elem_bytes(in->format, in->channels) || in->bytes == 0 ||
		    !gp__range_owned(w, in->dptr, in->bytes))
			return CUDA_ERROR_INVALID_VALUE;
		res->res.linear.devPtr = in->dptr;
		res->res.linear.format = (CUarray_format)in->format;
		res->res.linear.numChannels = in->channels;
		res->res.linear.sizeInBytes = in->bytes;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_PITCH2D:
		elem = elem_bytes(in->format, in->channels);
		if (!elem || in->width == 0 || in->height == 0 || in->width > GP_ARRAY_DIM_MAX ||
		    __builtin_mul_overflow(in->width, (uint64_t)elem, &row) ||
		    !gp__range2d_owned(w, in->dptr, in->pitch, row, in->height))
			return CUDA_ERROR_INVALID_VALUE;
		res->res.pitch2D.devPtr = in->dptr;
		res->res.pitch2D.format = (CUarray_format)in->format;
		res->res.pitch2D.numChannels = in->channels;
		res->res.pitch2D.width = in->width;
		res->res.pitch2D.height = in->height;
		res->res.pitch2D.pitchInBytes = in->pitch;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
		struct gp_handle *h = gp__handle_get(w, in->handle, GP_H_MIPMAP);

		if (!h)
			return CUDA_ERROR_INVALID_HANDLE;
		res->res.mipmap.hMipmappedArray = (CUmipmappedArray)h->ptr;
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static float float_of(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

CUresult gp__serve_tex_create(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_tex_create *a, struct gp_out_tex_create *o)
{
	struct gp_tex_desc d;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	CUtexObject obj = 0;
	CUresult r;

	if (a->desc_len != sizeof(d))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&d, a->desc, sizeof(d));
	if (d.has_view > 1)
		return CUDA_ERROR_INVALID_VALUE;
	if (!objects_room(w))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = res_from_wire(w, &d.res, &res);
	if (r != CUDA_SUCCESS)
		return r;
	memset(&tex, 0, sizeof(tex));
	for (int i = 0; i < 3; i++)
		tex.addressMode[i] = (CUaddress_mode)d.tex.address[i];
	tex.filterMode = (CUfilter_mode)d.tex.filter;
	tex.flags = d.tex.flags;
	tex.maxAnisotropy = d.tex.max_anisotropy;
	tex.mipmapFilterMode = (CUfilter_mode)d.tex.mip_filter;
	tex.mipmapLevelBias = float_of(d.tex.mip_bias);
	tex.minMipmapLevelClamp = float_of(d.tex.min_mip_clamp);
	tex.maxMipmapLevelClamp = float_of(d.tex.max_mip_clamp);
	for (int i = 0; i < 4; i++)
		tex.borderColor[i] = float_of(d.tex.border[i]);
	memset(&view, 0, sizeof(view));
	view.format = (CUresourceViewFormat)d.view.format;
	view.width = d.view.width;
	view.height = d.view.height;
	view.depth = d.view.depth;
	view.firstMipmapLevel = d.view.first_mip;
	view.lastMipmapLevel = d.view.last_mip;
	view.firstLayer = d.view.first_layer;
	view.lastLayer = d.view.last_layer;
	r = GP_DRV(w, cuTexObjectCreate, &obj, &res, &tex, d.has_view ? &view : NULL);
	if (r != CUDA_SUCCESS)
		return r;
	if (find_by_value(w, GP_H_TEXOBJ, obj) ||
	    !object_add(w, GP_H_TEXOBJ, obj, a->ctx, a->ctx_dev, 0)) {
		(void)GP_DRV(w, cuTexObjectDestroy, obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->obj = obj;
	return CUDA_SUCCESS;
}

CUresult gp__serve_tex_destroy(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_tex_destroy *a, struct gp_out_tex_destroy *o)
{
	uint64_t id = find_by_value(w, GP_H_TEXOBJ, a->obj);
	CUresult r;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuTexObjectDestroy, (CUtexObject)a->obj);
	if (r == CUDA_SUCCESS)
		gp__handle_release(w, id);
	return r;
}

static const uint8_t *struct_read(void *arg, uint64_t off, size_t n, int *err)
{
	*err = 0;
	return (const uint8_t *)arg + off;
}

CUresult gp__serve_tex_describe(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_tex_describe *a,
				struct gp_out_tex_describe *o)
{
	struct gp_tex_desc d;
	struct gp_bulk_source src = {.read = struct_read, .arg = &d};
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	CUresult r;
	int ret;

	if (a->desc_len != sizeof(d))
		return CUDA_ERROR_INVALID_VALUE;
	if (!find_by_value(w, GP_H_TEXOBJ, a->obj))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&res, 0, sizeof(res));
	memset(&tex, 0, sizeof(tex));
	memset(&view, 0, sizeof(view));
	r = GP_DRV(w, cuTexObjectGetResourceDesc, &res, (CUtexObject)a->obj);
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuTexObjectGetTextureDesc, &tex, (CUtexObject)a->obj);
	if (r != CUDA_SUCCESS)
		return r;
	memset(&d, 0, sizeof(d));
	d.has_view = GP_DRV(w, cuTexObjectGetResourceViewDesc, &view, (CUtexObject)a->obj) ==
		     CUDA_SUCCESS;
	d.res.type = res.resType;
	switch (res.resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		d.res.handle = array_id_of(w, res.res.array.hArray);
		break;
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		d.res.handle = find_by_value(w, GP_H_MIPMAP,
					     (uint64_t)(uintptr_t)res.res.mipmap.hMipmappedArray);
		break;
	case CU_RESOURCE_TYPE_LINEAR:
		d.res.dptr = res.res.linear.devPtr;
		d.res.format = res.res.linear.format;
		d.res.channels = res.res.linear.numChannels;
		d.res.bytes = res.res.linear.sizeInBytes;
		break;
	case CU_RESOURCE_TYPE_PITCH2D:
		d.res.dptr = res.res.pitch2D.devPtr;
		d.res.format = res.res.pitch2D.format;
		d.res.channels = res.res.pitch2D.numChannels;
		d.res.width = res.res.pitch2D.width;
		d.res.height = res.res.pitch2D.height;
		d.res.pitch = res.res.pitch2D.pitchInBytes;
		break;
	default:
		break;
	}
	for (int i = 0; i < 3; i++)
		d.tex.address[i] = tex.addressMode[i];
	d.tex.filter = tex.filterMode;
	d.tex.flags = tex.flags;
	d.tex.max_anisotropy = tex.maxAnisotropy;
	d.tex.mip_filter = tex.mipmapFilterMode;
	d.tex.mip_bias = bits_of(tex.mipmapLevelBias);
	d.tex.min_mip_clamp = bits_of(tex.minMipmapLevelClamp);
	d.tex.max_mip_clamp = bits_of(tex.maxMipmapLevelClamp);
	for (int i = 0; i < 4; i++)
		d.tex.border[i] = bits_of(tex.borderColor[i]);
	if (d.has_view) {
		d.view.format = view.format;
		d.view.width = view.width;
		d.view.height = view.height;
		d.view.depth = view.depth;
		d.view.first_mip = view.firstMipmapLevel;
		d.view.last_mip = view.lastMipmapLevel;
		d.view.first_layer = view.firstLayer;
		d.view.last_layer = view.lastLayer;
	}
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, sizeof(d), &src);
	gp_conn_send_unlock(w->client);
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
}

/* ---- surface objects --------------------------------------------------------------- */

CUresult gp__serve_surf_create(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_surf_create *a, struct gp_out_surf_create *o)
{
	struct gp_handle *h = array_get(w, a->array);
	CUDA_RESOURCE_DESC res;
	CUsurfObject obj = 0;
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!objects_room(w))
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(&res, 0, sizeof(res));
	res.resType = CU_RESOURCE_TYPE_ARRAY;
	res.res.array.hArray = (CUarray)h->ptr;
	r = GP_DRV(w, cuSurfObjectCreate, &obj, &res);
	if (r != CUDA_SUCCESS)
		return r;
	if (find_by_value(w, GP_H_SURFOBJ, obj) ||
	    !object_add(w, GP_H_SURFOBJ, obj, a->ctx, a->ctx_dev, 0)) {
		(void)GP_DRV(w, cuSurfObjectDestroy, obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->obj = obj;
	return CUDA_SUCCESS;
}

CUresult gp__serve_surf_destroy(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_surf_destroy *a,
				struct gp_out_surf_destroy *o)
{
	uint64_t id = find_by_value(w, GP_H_SURFOBJ, a->obj);
	CUresult r;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuSurfObjectDestroy, (CUsurfObject)a->obj);
	if (r == CUDA_SUCCESS)
		gp__handle_release(w, id);
	return r;
}

CUresult gp__serve_surf_describe(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_surf_describe *a,
				 struct gp_out_surf_describe *o)
{
	CUDA_RESOURCE_DESC res;
	CUresult r;

	if (!find_by_value(w, GP_H_SURFOBJ, a->obj))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&res, 0, sizeof(res));
	r = GP_DRV(w, cuSurfObjectGetResourceDesc, &res, (CUsurfObject)a->obj);
	if (r == CUDA_SUCCESS && res.resType == CU_RESOURCE_TYPE_ARRAY)
		o->array = array_id_of(w, res.res.array.hArray);
	return r;
}
