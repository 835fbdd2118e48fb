/* array.c -- CUDA arrays, texture objects and surface objects (cuArray*, cuTexObject*,
 * cuSurfObject*); the table of objects kernels reach through their 64-bit handles. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"
#include "util.h"

/*
 * An array is device memory of its context (charged like cuMemAlloc, an allocation of kind
 * SG_MEM_ARRAY that cuMemFree does not take), laid out plainly: texel (x, y, z) at
 * ((z * height + y) * width + x) * element size, so rows, slices and layers follow each
 * other without padding and a linear offset (cuMemcpyHtoA) is a byte offset. No tiling: the
 * layout is invisible to programs, which reach an array only through copies and
 * texture/surface instructions.
 *
 * Texture and surface objects are entries of one table; a handle is (generation << 24) |
 * (index + 1), so a destroyed object's handle, or any number a kernel makes up, finds no
 * entry (a fault in the kernel, CUDA_ERROR_INVALID_VALUE in the API). The interpreter copies
 * an entry out under the table's read lock at each texture or surface instruction.
 */

struct sg_array {
	struct sg_ctx *ctx;
	uint64_t dptr;
	CUDA_ARRAY3D_DESCRIPTOR desc; /* as created (Height/Depth 0 where the geometry has none) */
	unsigned esize;
	uint64_t bytes;
	uint64_t id; /* its allocation's (memory.c): a later allocation at the address is not it */
	bool level;  /* a mipmapped array's level: destroyed with it, not by cuArrayDestroy */
};

struct sg_mipmap {
	CUDA_ARRAY3D_DESCRIPTOR desc; /* of level 0 */
	unsigned nlevels;
	CUarray level[SG_TEX_LEVELS];
};

/* Bytes of one channel of a format; 0 for a format softgpu does not sample. */
static unsigned channel_size(CUarray_format f)
{
	switch (f) {
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

/* A format and channel count: CUDA_SUCCESS with the texel size, or why not. */
static CUresult format_ok(CUarray_format f, unsigned nch, unsigned *esize)
{
	unsigned c = channel_size(f);

	if (nch != 1 && nch != 2 && nch != 4)
		return CUDA_ERROR_INVALID_VALUE;
	if (c == 0)
		return (unsigned)f > 0 && (unsigned)f < 0x100 ? CUDA_ERROR_NOT_SUPPORTED
							      : CUDA_ERROR_INVALID_VALUE;
	*esize = c * nch;
	return CUDA_SUCCESS;
}

/* Limits: the device attributes' (device_attr.c), texture or surface ones. */
static CUresult dims_ok(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	bool layered = d->Flags & CUDA_ARRAY3D_LAYERED, surf = d->Flags & CUDA_ARRAY3D_SURFACE_LDST;
	size_t w = d->Width, h = d->Height, z = d->Depth;

	if (w == 0 || (z && !h && !layered))
		return CUDA_ERROR_INVALID_VALUE;
	if (d->Flags & CUDA_ARRAY3D_CUBEMAP) /* 6 faces, or 6 per layer (at most 2046) */
		return w == h && w <= 32768 && (layered ? z && z % 6 == 0 && z / 6 <= 2046 : z == 6)
			       ? CUDA_SUCCESS
			       : CUDA_ERROR_INVALID_VALUE;
	if (layered) {
		if (z == 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (h == 0) /* 1-D layered */
			return w <= 32768 && z <= 2048 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
		return w <= 32768 && h <= 32768 && z <= 2048 ? CUDA_SUCCESS
							     : CUDA_ERROR_INVALID_VALUE;
	}
	if (h == 0)
		return w <= (surf ? 32768u : 131072u) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (z == 0)
		return w <= 131072 && h <= 65536 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	/* 3-D: 16384 cubed, or the alternate 8192 x 8192 x 32768 (not for surfaces) */
	if (w <= 16384 && h <= 16384 && z <= 16384)
		return CUDA_SUCCESS;
	return !surf && w <= 8192 && h <= 8192 && z <= 32768 ? CUDA_SUCCESS
							     : CUDA_ERROR_INVALID_VALUE;
}

static CUresult array_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	const unsigned known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
			       CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER |
			       CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT |
			       CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING |
			       CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;
	struct sg_ctx *ctx;
	struct sg_array *a;
	unsigned esize = 0;
	uint64_t n;
	CUresult r = sg_ctx_current(&ctx, true);

	if (r)
		return r;
	if (out == NULL || d == NULL || (d->Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = format_ok(d->Format, d->NumChannels, &esize)))
		return r;
	/* depth textures, graphics attachments, sparse and deferred arrays: not here */
	if (d->Flags & ~(CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
			 CUDA_ARRAY3D_TEXTURE_GATHER))
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((r = dims_ok(d)))
		return r;
	/* gather is for 2-D arrays, up to MAXIMUM_TEXTURE2D_GATHER_WIDTH/HEIGHT */
	if ((d->Flags & CUDA_ARRAY3D_TEXTURE_GATHER) &&
	    (d->Height == 0 || d->Depth != 0 || d->Width > 32768 || d->Height > 32768))
		return CUDA_ERROR_INVALID_VALUE;
	n = (uint64_t)d->Width * esize * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1);
	if ((r = sg_capture_unsafe()))
		return r;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = sg_mem_alloc(ctx, n, SG_MEM_ARRAY, &a->dptr);
	if (r) {
		free(a);
		return r;
	}
	{
		struct sg_alloc m;

		a->id = sg_mem_find(a->dptr, &m) ? m.id : 0;
	}
	a->ctx = ctx;
	a->desc = *d;
	a->esize = esize;
	a->bytes = n;
	if (sg_handle_add(a, SG_K_ARRAY)) {
		sg_mem_free(ctx, a->dptr, SG_MEM_ARRAY);
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (CUarray)a;
	return CUDA_SUCCESS;
}

CUresult sg_array_get(CUarray h, struct sg_array_info *out)
{
	const struct sg_array *a = (const struct sg_array *)h;
	struct sg_alloc m;

	if (h == NULL || !sg_handle_ok(a, SG_K_ARRAY))
		return CUDA_ERROR_INVALID_HANDLE;
	/* its context was destroyed (and its memory with it) */
	if (!sg_mem_find(a->dptr, &m) || m.base != a->dptr || m.kind != SG_MEM_ARRAY ||
	    m.ctx != a->ctx || m.id != a->id)
		return CUDA_ERROR_INVALID_HANDLE;
	out->dptr = a->dptr;
	out->desc = a->desc;
	out->esize = a->esize;
	out->width = a->desc.Width;
	out->height = a->desc.Height ? a->desc.Height : 1;
	out->depth = a->desc.Depth ? a->desc.Depth : 1;
	out->pitch = (uint64_t)a->desc.Width * a->esize;
	out->bytes = a->bytes;
	out->ctx = a->ctx;
	out->level = a->level;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *p)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {0};

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	d.Width = p->Width;
	d.Height = p->Height;
	d.Format = p->Format;
	d.NumChannels = p->NumChannels;
	return array_create(pHandle, &d);
}

SG_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *p)
{
	return array_create(pHandle, p);
}

static CUresult array_free(struct sg_array *a);

SG_EXPORT CUresult cuArrayDestroy(CUarray h)
{
	struct sg_array *a = (struct sg_array *)h;
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (h == NULL || !sg_handle_ok(a, SG_K_ARRAY))
		return CUDA_ERROR_INVALID_HANDLE;
	if (a->level)
		return CUDA_ERROR_INVALID_VALUE; /* cuMipmappedArrayDestroy frees it */
	return array_free(a);
}

static CUresult array_free(struct sg_array *a)
{
	struct sg_array_info ai;

	if (sg_array_get((CUarray)a, &ai) == CUDA_SUCCESS) {
		/* a GPU frees memory only once the work using it is done */
		sg_ctx_sync(a->ctx);
		sg_mem_free(a->ctx, a->dptr, SG_MEM_ARRAY);
	}
	sg_handle_del(a);
	free(a);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *p, CUarray h)
{
	struct sg_array_info ai;
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sg_array_get(h, &ai)))
		return r;
	p->Width = ai.desc.Width;
	p->Height = ai.desc.Height;
	p->Format = ai.desc.Format;
	p->NumChannels = ai.desc.NumChannels;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *p, CUarray h)
{
	struct sg_array_info ai;
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sg_array_get(h, &ai)))
		return r;
	*p = ai.desc;
	return CUDA_SUCCESS;
}

/* ---- mipmapped arrays: a level is an array of its own, each side halved (at least 1) ---- */

SG_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
					  const CUDA_ARRAY3D_DESCRIPTOR *p, unsigned int numLevels)
{
	struct sg_mipmap *m;
	size_t big;
	unsigned most = 1;
	CUresult r = CUDA_SUCCESS;

	if (pHandle == NULL || p == NULL || numLevels == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->Flags & (CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER))
		return CUDA_ERROR_NOT_SUPPORTED; /* mipmapped cubemaps, gather: not here */
	/* MAXIMUM_TEXTURE{1D,2D}_MIPMAPPED_*: 32768 */
	if (!(p->Depth && !(p->Flags & CUDA_ARRAY3D_LAYERED)) &&
	    (p->Width > 32768 || p->Height > 32768))
		return CUDA_ERROR_INVALID_VALUE;
	big = p->Width > p->Height ? p->Width : p->Height;
	if (!(p->Flags & CUDA_ARRAY3D_LAYERED) && p->Depth > big)
		big = p->Depth;
	while (most < SG_TEX_LEVELS && (big >> most))
		most++;
	if (numLevels > most)
		return CUDA_ERROR_INVALID_VALUE;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->desc = *p;
	for (unsigned l = 0; l < numLevels && r == CUDA_SUCCESS; l++) {
		CUDA_ARRAY3D_DESCRIPTOR d = *p;

		d.Width = p->Width >> l ? p->Width >> l : 1;
		d.Height = p->Height == 0 ? 0 : p->Height >> l ? p->Height >> l : 1;
		if (!(p->Flags & CUDA_ARRAY3D_LAYERED))
			d.Depth = p->Depth == 0 ? 0 : p->Depth >> l ? p->Depth >> l : 1;
		r = array_create(&m->level[l], &d);
		if (r == CUDA_SUCCESS) {
			((struct sg_array *)m->level[l])->level = true;
			m->nlevels = l + 1;
		}
	}
	if (r == CUDA_SUCCESS && sg_handle_add(m, SG_K_MIPMAP))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r) {
		for (unsigned l = 0; l < m->nlevels; l++)
			array_free((struct sg_array *)m->level[l]);
		free(m);
		return r;
	}
	*pHandle = (CUmipmappedArray)m;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray h,
					    unsigned int level)
{
	const struct sg_mipmap *m = (const struct sg_mipmap *)h;

	if (h == NULL || !sg_handle_ok(m, SG_K_MIPMAP))
		return CUDA_ERROR_INVALID_HANDLE;
	if (pLevelArray == NULL || level >= m->nlevels)
		return CUDA_ERROR_INVALID_VALUE;
	*pLevelArray = m->level[level];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	struct sg_mipmap *m = (struct sg_mipmap *)h;
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (h == NULL || !sg_handle_ok(m, SG_K_MIPMAP))
		return CUDA_ERROR_INVALID_HANDLE;
	sg_handle_del(m);
	for (unsigned l = 0; l < m->nlevels; l++)
		array_free((struct sg_array *)m->level[l]);
	free(m);
	return CUDA_SUCCESS;
}

/* Only arrays made with CUDA_ARRAY3D_DEFERRED_MAPPING have requirements, and softgpu makes
 * none: CUDA's answer for every other array. */
SG_EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *memoryRequirements,
						CUarray array, CUdevice device)
{
	struct sg_array_info ai;
	CUresult r;

	(void)device;
	if (memoryRequirements == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sg_array_get(array, &ai)))
		return r;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the object table ---- */

struct tobj {
	uint32_t gen;
	bool live;
	struct sg_texref ref;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
};

#define TOBJ_MAX (1u << 20)

static pthread_rwlock_t tlock = PTHREAD_RWLOCK_INITIALIZER;
static struct tobj *tobjs;
static uint32_t ntobjs, cap_tobjs, tfree_hint;

static struct tobj *tobj_find(uint64_t handle)
{
	uint64_t i = (handle & 0xffffff) - 1;

	if ((handle & 0xffffff) == 0 || i >= ntobjs || !tobjs[i].live ||
	    tobjs[i].gen != (uint32_t)(handle >> 24) || handle >> 56)
		return NULL;
	return &tobjs[i];
}

bool sg_tex_lookup(uint64_t handle, struct sg_texref *out)
{
	const struct tobj *o;

	pthread_rwlock_rdlock(&tlock);
	o = tobj_find(handle);
	if (o)
		memcpy(out, &o->ref,
		       offsetof(struct sg_texref, lv) + o->ref.nlevels * sizeof(o->ref.lv[0]));
	pthread_rwlock_unlock(&tlock);
	return o != NULL;
}

static CUresult tobj_add(const struct sg_texref *ref, const CUDA_RESOURCE_DESC *res,
			 const CUDA_TEXTURE_DESC *tex, uint64_t *handle)
{
	uint32_t i;

	pthread_rwlock_wrlock(&tlock);
	for (i = tfree_hint; i < ntobjs && tobjs[i].live; i++)
		;
	if (i == ntobjs) {
		if (ntobjs == TOBJ_MAX || sg_grow(&tobjs, &cap_tobjs, ntobjs, sizeof(*tobjs))) {
			pthread_rwlock_unlock(&tlock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memset(&tobjs[ntobjs], 0, sizeof(*tobjs));
		ntobjs++;
	}
	tobjs[i].live = true;
	tobjs[i].gen = (tobjs[i].gen + 1) & 0xffffffffu;
	tobjs[i].ref = *ref;
	tobjs[i].res = *res;
	if (tex)
		tobjs[i].tex = *tex;
	*handle = (uint64_t)tobjs[i].gen << 24 | (i + 1);
	tfree_hint = i + 1;
	pthread_rwlock_unlock(&tlock);
	return CUDA_SUCCESS;
}

static CUresult tobj_del(uint64_t handle, bool surface)
{
	struct tobj *o;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_rwlock_wrlock(&tlock);
	o = tobj_find(handle);
	if (o && o->ref.surface == surface) {
		o->live = false;
		if ((uint32_t)(o - tobjs) < tfree_hint)
			tfree_hint = (uint32_t)(o - tobjs);
		r = CUDA_SUCCESS;
	}
	pthread_rwlock_unlock(&tlock);
	return r;
}

static CUresult tobj_get(uint64_t handle, bool surface, CUDA_RESOURCE_DESC *res,
			 CUDA_TEXTURE_DESC *tex)
{
	const struct tobj *o;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	pthread_rwlock_rdlock(&tlock);
	o = tobj_find(handle);
	if (o && o->ref.surface == surface) {
		if (res)
			*res = o->res;
		if (tex)
			*tex = o->tex;
		r = CUDA_SUCCESS;
	}
	pthread_rwlock_unlock(&tlock);
	return r;
}

/* The texels a resource names: geometry, memory, layout. */
static CUresult resource(const CUDA_RESOURCE_DESC *res, bool surface, struct sg_texref *ref)
{
	struct sg_array_info ai;
	struct sg_alloc m;
	unsigned esize = 0;
	uint64_t span;
	CUresult r;

	if (res->flags)
		return CUDA_ERROR_INVALID_VALUE;
	switch (res->resType) {
	case CU_RESOURCE_TYPE_ARRAY: {
		unsigned fl;

		if ((r = sg_array_get(res->res.array.hArray, &ai)))
			return r;
		fl = ai.desc.Flags;
		/* CUDA documents the flag; NVIDIA's cuda-samples bindlessTexture writes surfaces
		 * into mipmap levels made without it, so levels are taken */
		if (surface && !(fl & CUDA_ARRAY3D_SURFACE_LDST) && !ai.level)
			return CUDA_ERROR_INVALID_VALUE;
		ref->base = ai.dptr;
		ref->fmt = (uint8_t)ai.desc.Format;
		ref->nch = (uint8_t)ai.desc.NumChannels;
		ref->esize = (uint8_t)ai.esize;
		ref->w = ai.width;
		ref->h = (uint32_t)ai.height;
		ref->d = (uint32_t)ai.depth;
		ref->pitch = ai.pitch;
		ref->slice = ai.pitch * ai.height;
		ref->nlevels = 1;
		ref->lv[0].base = ref->base;
		ref->lv[0].w = (uint32_t)ref->w;
		ref->lv[0].h = ref->h;
		ref->lv[0].d = ref->d;
		ref->lv[0].pitch = (uint32_t)ref->pitch;
		if (fl & CUDA_ARRAY3D_CUBEMAP)
			ref->geom = fl & CUDA_ARRAY3D_LAYERED ? SG_TG_ACUBE : SG_TG_CUBE;
		else if (fl & CUDA_ARRAY3D_LAYERED)
			ref->geom = ai.desc.Height ? SG_TG_A2D : SG_TG_A1D;
		else
			ref->geom = ai.desc.Depth ? SG_TG_3D : ai.desc.Height ? SG_TG_2D : SG_TG_1D;
		return CUDA_SUCCESS;
	}
	case CU_RESOURCE_TYPE_LINEAR:
	case CU_RESOURCE_TYPE_PITCH2D: {
		bool lin = res->resType == CU_RESOURCE_TYPE_LINEAR;
		CUdeviceptr p = lin ? res->res.linear.devPtr : res->res.pitch2D.devPtr;
		CUarray_format f = lin ? res->res.linear.format : res->res.pitch2D.format;
		unsigned nch = lin ? res->res.linear.numChannels : res->res.pitch2D.numChannels;

		if (surface)
			return CUDA_ERROR_INVALID_VALUE; /* surfaces are arrays only */
		if ((r = format_ok(f, nch, &esize)))
			return r;
		/* TEXTURE_ALIGNMENT and TEXTURE_PITCH_ALIGNMENT (device_attr.c), the linear limits */
		if (p == 0 || p % 512)
			return CUDA_ERROR_INVALID_VALUE;
		ref->base = p;
		ref->fmt = (uint8_t)f;
		ref->nch = (uint8_t)nch;
		ref->esize = (uint8_t)esize;
		ref->d = 1;
		if (lin) {
			size_t n = res->res.linear.sizeInBytes;

			if (n < esize || n / esize > 268435456u)
				return CUDA_ERROR_INVALID_VALUE;
			ref->geom = SG_TG_BUF;
			ref->w = n / esize;
			ref->h = 1;
			ref->pitch = ref->slice = n;
			span = n;
		} else {
			size_t w = res->res.pitch2D.width, h = res->res.pitch2D.height,
			       pitch = res->res.pitch2D.pitchInBytes;

			if (w == 0 || h == 0 || w > 131072 || h > 65000 || pitch % 32 ||
			    pitch > 2097120 || pitch < w * esize)
				return CUDA_ERROR_INVALID_VALUE;
			ref->geom = SG_TG_2D;
			ref->w = w;
			ref->h = (uint32_t)h;
			ref->pitch = pitch;
			ref->slice = pitch * h;
			span = (h - 1) * pitch + w * esize;
		}
		/* inside one allocation (CUDA does not check; a kernel would fault at each read) */
		ref->nlevels = 1; /* lv[] is read only with mipmaps */
		if (!sg_mem_find(p, &m) || span > m.size - (p - m.base))
			return CUDA_ERROR_INVALID_VALUE;
		return CUDA_SUCCESS;
	}
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
		const struct sg_mipmap *mm =
			(const struct sg_mipmap *)res->res.mipmap.hMipmappedArray;
		CUDA_RESOURCE_DESC one = {0};

		if (mm == NULL || !sg_handle_ok(mm, SG_K_MIPMAP))
			return CUDA_ERROR_INVALID_HANDLE;
		if (surface)
			return CUDA_ERROR_INVALID_VALUE; /* a surface takes one level's array */
		one.resType = CU_RESOURCE_TYPE_ARRAY;
		for (unsigned l = mm->nlevels; l-- > 0;) {
			one.res.array.hArray = mm->level[l];
			if ((r = resource(&one, false, ref)))
				return r;
			ref->lv[l] = ref->lv[0];
		}
		ref->nlevels = (uint8_t)mm->nlevels;
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static bool int_format(uint8_t f)
{
	return f != CU_AD_FORMAT_FLOAT && f != CU_AD_FORMAT_HALF;
}

SG_EXPORT CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
				     const CUDA_TEXTURE_DESC *pTexDesc,
				     const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	const unsigned known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
			       CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
			       CU_TRSF_SEAMLESS_CUBEMAP;
	struct sg_texref ref = {0};
	struct sg_ctx *ctx;
	uint64_t h;
	CUresult r = sg_ctx_current(&ctx, true);

	if (r)
		return r;
	if (pTexObject == NULL || pResDesc == NULL || pTexDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (pResViewDesc)
		return CUDA_ERROR_NOT_SUPPORTED; /* resource views: not implemented */
	if ((r = resource(pResDesc, false, &ref)))
		return r;
	for (int i = 0; i < 3; i++) {
		if ((unsigned)pTexDesc->addressMode[i] > CU_TR_ADDRESS_MODE_BORDER)
			return CUDA_ERROR_INVALID_VALUE;
		ref.addr[i] = (uint8_t)pTexDesc->addressMode[i];
	}
	if ((unsigned)pTexDesc->filterMode > CU_TR_FILTER_MODE_LINEAR || (pTexDesc->flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	if (pTexDesc->flags & CU_TRSF_SRGB)
		return CUDA_ERROR_NOT_SUPPORTED;
	ref.filter = (uint8_t)pTexDesc->filterMode;
	if ((unsigned)pTexDesc->mipmapFilterMode > CU_TR_FILTER_MODE_LINEAR)
		return CUDA_ERROR_INVALID_VALUE;
	ref.mipfilter = (uint8_t)pTexDesc->mipmapFilterMode;
	ref.lod_bias = pTexDesc->mipmapLevelBias;
	ref.lod_min = pTexDesc->minMipmapLevelClamp;
	ref.lod_max = pTexDesc->maxMipmapLevelClamp;
	ref.norm = pTexDesc->flags & CU_TRSF_NORMALIZED_COORDINATES;
	ref.read_int = int_format(ref.fmt) && ((pTexDesc->flags & CU_TRSF_READ_AS_INTEGER) ||
					       channel_size((CUarray_format)ref.fmt) == 4);
	/* filtering needs floating-point texels: floats, or 8/16-bit read as normalized */
	if ((ref.filter == CU_TR_FILTER_MODE_LINEAR ||
	     (ref.nlevels > 1 && ref.mipfilter == CU_TR_FILTER_MODE_LINEAR)) &&
	    ref.read_int)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(ref.border, pTexDesc->borderColor, sizeof(ref.border));
	ref.ctx = ctx;
	if ((r = tobj_add(&ref, pResDesc, pTexDesc, &h)))
		return r;
	memcpy(pTexObject, &h, sizeof(h)); /* callers hand unaligned ones too */
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuTexObjectDestroy(CUtexObject texObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	return r ? r : tobj_del(texObject, false);
}

SG_EXPORT CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (pResDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return tobj_get(texObject, false, pResDesc, NULL);
}

SG_EXPORT CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (pTexDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return tobj_get(texObject, false, NULL, pTexDesc);
}

SG_EXPORT CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc,
						  CUtexObject texObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (pResViewDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = tobj_get(texObject, false, NULL, NULL)))
		return r;
	/* no object has a view (cuTexObjectCreate refuses them) */
	return CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
	struct sg_texref ref = {0};
	struct sg_ctx *ctx;
	uint64_t h;
	CUresult r = sg_ctx_current(&ctx, true);

	if (r)
		return r;
	if (pSurfObject == NULL || pResDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = resource(pResDesc, true, &ref)))
		return r;
	ref.surface = true;
	ref.read_int = true;
	ref.ctx = ctx;
	if ((r = tobj_add(&ref, pResDesc, NULL, &h)))
		return r;
	memcpy(pSurfObject, &h, sizeof(h));
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	return r ? r : tobj_del(surfObject, true);
}

SG_EXPORT CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc,
					       CUsurfObject surfObject)
{
	struct sg_ctx *ctx;
	CUresult r = sg_ctx_current(&ctx, false);

	if (r)
		return r;
	if (pResDesc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return tobj_get(surfObject, true, pResDesc, NULL);
}
