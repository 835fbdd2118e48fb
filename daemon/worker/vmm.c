/* vmm.c -- virtual memory management: the session's reservations, allocations and mappings.
 *
 * The driver keeps the real objects; this file keeps what the session may name, so every
 * address, size and handle from the client is checked against it before the driver sees
 * it. An allocation (cuMemCreate) is a handle of kind GP_H_VMEM, charged to the session on
 * its device from creation until its last release and last unmapping, as the driver
 * keeps the memory. Reservations are bounded (GP_VMM_RESV_MAX of them, GP_VMM_VA_MAX bytes
 * together); they are not charged. A mapping becomes part of the session's allocation table
 * once some device may access it: each run of accessible mappings side by side in one
 * reservation is one entry (a "global" whose owner key is the reservation's base, so it is
 * neither freeable nor counted twice), so copies and memsets across mappings pass the range
 * checks, and an unmapped or inaccessible range does not.
 *
 * All of it is the main thread's, under w->lock, like the rest of the session's tables.
 * When the session ends the process exits and the driver releases what is left.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "worker.h"
#include "grow.h"

/* What one session may reserve: reservations and bytes of address space together. */
#define GP_VMM_RESV_MAX 4096u
#define GP_VMM_VA_MAX (1ull << 40)

struct vmem {
	uint64_t id; /* the GP_H_VMEM handle: what the client holds */
	CUmemGenericAllocationHandle drv;
	int device;
	uint64_t bytes;
	unsigned refs; /* cuMemCreate and each retain, less the releases */
	unsigned maps;
};

struct vmap {
	uint64_t va, bytes;
	struct vmem *mem;
	uint64_t access; /* devices (bits) that may access it */
};

struct vresv {
	uint64_t base, bytes;
	struct vmap *maps; /* sorted by va, never overlapping */
	size_t nmaps, cap;
};

static struct vmem **mems; /* every live allocation record, so none is unreachable */
static size_t nmems, cap_mems;
static struct vresv *resv;
static size_t nresv, cap_resv;
static uint64_t va_total;

/* An allocation the client still holds a handle to, or NULL. */
static struct vmem *mem_get(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_VMEM);
	struct vmem *m = h ? h->aux : NULL;

	return m && m->refs ? m : NULL;
}

/* Forgets an allocation nothing holds or maps any more: its charge goes with its handle. */
static void mem_maybe_free(struct gp_worker *w, struct vmem *m)
{
	struct gp_handle *h;

	if (m->refs || m->maps)
		return;
	h = gp__handle_get(w, m->id, GP_H_VMEM);
	if (h)
		h->aux = NULL;
	gp__handle_release(w, m->id);
	for (size_t i = 0; i < nmems; i++) {
		if (mems[i] == m) {
			mems[i] = mems[--nmems];
			break;
		}
	}
	free(m);
}

/* The reservation holding [va, va+bytes), or NULL (bytes 0: holding va). */
static struct vresv *resv_find(uint64_t va, uint64_t bytes)
{
	for (size_t i = 0; i < nresv; i++) {
		uint64_t off = va - resv[i].base;

		if (off < resv[i].bytes && bytes <= resv[i].bytes - off)
			return &resv[i];
	}
	return NULL;
}

static struct vmap *map_find(uint64_t va, struct vresv **out)
{
	struct vresv *rv = resv_find(va, 0);

	if (!rv)
		return NULL;
	for (size_t i = 0; i < rv->nmaps; i++) {
		if (va - rv->maps[i].va < rv->maps[i].bytes) {
			*out = rv;
			return &rv->maps[i];
		}
	}
	return NULL;
}

/* Mappings [*first, *last] of one reservation covering [va, va+bytes) exactly, in order. */
static struct vresv *whole_maps(uint64_t va, uint64_t bytes, size_t *first, size_t *last)
{
	struct vresv *rv = bytes ? resv_find(va, bytes) : NULL;
	uint64_t at = va, end = va + bytes;
	size_t i = 0;

	if (!rv)
		return NULL;
	while (i < rv->nmaps && rv->maps[i].va != va)
		i++;
	*first = i;
	for (; i < rv->nmaps && rv->maps[i].va == at && at < end; i++) {
		at += rv->maps[i].bytes;
		if (at == end) {
			*last = i;
			return rv;
		}
	}
	return NULL;
}

/* Makes the session's allocation table hold exactly rv's accessible runs. */
static CUresult publish(struct gp_worker *w, struct vresv *rv)
{
	CUresult r = CUDA_SUCCESS;

	gp_owner_alloc_forget(&w->own, 0, rv->base);
	for (size_t i = 0; i < rv->nmaps;) {
		uint64_t start = rv->maps[i].va, len = 0;

		if (!rv->maps[i].access) {
			i++;
			continue;
		}
		while (i < rv->nmaps && rv->maps[i].access && rv->maps[i].va == start + len)
			len += rv->maps[i++].bytes;
		if (gp__global_add(w, start, len, 0, rv->base))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	return r;
}

CUresult gp__serve_vmm_granularity(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_vmm_granularity *a,
				   struct gp_out_vmm_granularity *o)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, a->device_drv}};
	size_t g = 0;
	CUresult r = GP_DRV(w, cuMemGetAllocationGranularity, &g, &prop,
			    (CUmemAllocationGranularity_flags)a->option);

	o->granularity = g;
	return r;
}

CUresult gp__serve_vmm_create(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_vmm_create *a, struct gp_out_vmm_create *o)
{
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
				    .location = {CU_MEM_LOCATION_TYPE_DEVICE, a->device_drv}};
	int dev = (int)a->device;
	struct gp_handle *h;
	struct vmem *m;
	CUresult r;

	if (a->bytes == 0 || a->compression > 0xff || a->usage > 0xffff)
		return CUDA_ERROR_INVALID_VALUE;
	if (!gp__charge_fits(w, dev, a->bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	prop.allocFlags.compressionType = (unsigned char)a->compression;
	prop.allocFlags.usage = (unsigned short)a->usage;
	m = calloc(1, sizeof(*m));
	if (!m || !GP_GROW(mems, cap_mems, nmems)) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = GP_DRV(w, cuMemCreate, &m->drv, (size_t)a->bytes, &prop, 0);
	if (r != CUDA_SUCCESS) {
		free(m);
		return r;
	}
	m->id = gp__handle_new(w, GP_H_VMEM, NULL);
	h = m->id ? gp__handle_get(w, m->id, GP_H_VMEM) : NULL;
	if (!h) {
		(void)GP_DRV(w, cuMemRelease, m->drv);
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->aux = m;
	h->device = dev;
	h->charge = a->bytes;
	gp__charge(w, dev, (int64_t)a->bytes);
	m->device = dev;
	m->bytes = a->bytes;
	m->refs = 1;
	mems[nmems++] = m;
	o->handle = m->id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_release(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_vmm_release *a, struct gp_out_vmm_release *o)
{
	struct vmem *m = mem_get(w, a->handle);
	CUresult r;

	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemRelease, m->drv);
	if (r == CUDA_SUCCESS) {
		m->refs--;
		mem_maybe_free(w, m); /* mapped: the memory and its charge stay */
	}
	return r;
}

CUresult gp__serve_vmm_props(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_vmm_props *a, struct gp_out_vmm_props *o)
{
	struct vmem *m = mem_get(w, a->handle);
	CUmemAllocationProp prop;
	CUresult r;

	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&prop, 0, sizeof(prop));
	r = GP_DRV(w, cuMemGetAllocationPropertiesFromHandle, &prop, m->drv);
	o->type = (uint64_t)prop.type;
	o->device = (uint64_t)m->device; /* the session's ordinal, not the driver's */
	o->compression = prop.allocFlags.compressionType;
	o->usage = prop.allocFlags.usage;
	return r;
}

CUresult gp__serve_vmm_retain(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_vmm_retain *a, struct gp_out_vmm_retain *o)
{
	struct vresv *rv;
	struct vmap *mp = map_find(a->addr, &rv);
	CUmemGenericAllocationHandle d;
	CUresult r;

	if (!mp)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemRetainAllocationHandle, &d, (void *)(uintptr_t)a->addr);
	if (r != CUDA_SUCCESS)
		return r;
	if (d != mp->mem->drv) { /* the driver disagrees with our record: keep nothing */
		(void)GP_DRV(w, cuMemRelease, d);
		gp_log_warnx("cuMemRetainAllocationHandle: not the mapped allocation");
		return CUDA_ERROR_UNKNOWN;
	}
	mp->mem->refs++;
	o->handle = mp->mem->id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_reserve(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_vmm_reserve *a, struct gp_out_vmm_reserve *o)
{
	CUdeviceptr p = 0;
	CUresult r;

	if (a->bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->va_vmm)
		return CUDA_ERROR_NOT_SUPPORTED; /* mem.c places the window's ranges itself */
	if (nresv >= GP_VMM_RESV_MAX || a->bytes > GP_VMM_VA_MAX - va_total)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!GP_GROW(resv, cap_resv, nresv))
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* The hint goes to the driver as it came: a window at one address in the client and
	 * here depends on it. */
	r = GP_DRV(w, cuMemAddressReserve, &p, (size_t)a->bytes, (size_t)a->alignment,
		   (CUdeviceptr)a->addr, a->flags);
	if (r != CUDA_SUCCESS)
		return r;
	for (size_t i = 0; i < nresv; i++) {
		if (p < resv[i].base + resv[i].bytes && resv[i].base < p + a->bytes) {
			gp_log_warnx("cuMemAddressReserve: the driver returned a reserved range");
			GP_DRV(w, cuMemAddressFree, p, (size_t)a->bytes);
			return CUDA_ERROR_UNKNOWN;
		}
	}
	resv[nresv++] = (struct vresv){.base = p, .bytes = a->bytes};
	va_total += a->bytes;
	o->ptr = p;
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_address_free(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_vmm_address_free *a,
				    struct gp_out_vmm_address_free *o)
{
	struct vresv *rv = resv_find(a->ptr, a->bytes);
	CUresult r;

	if (!rv || rv->base != a->ptr || rv->bytes != a->bytes || rv->nmaps)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemAddressFree, a->ptr, (size_t)a->bytes);
	if (r != CUDA_SUCCESS)
		return r;
	va_total -= rv->bytes;
	free(rv->maps);
	*rv = resv[--nresv];
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_map(struct gp_worker *w, struct gp_req *rq, const struct gp_wargs_vmm_map *a,
			   struct gp_out_vmm_map *o)
{
	struct vresv *rv = a->bytes ? resv_find(a->ptr, a->bytes) : NULL;
	struct vmem *m = mem_get(w, a->handle);
	size_t at = 0;
	CUresult r;

	if (!rv || !m || a->offset > m->bytes || a->bytes > m->bytes - a->offset)
		return CUDA_ERROR_INVALID_VALUE; /* outside its reservation or its allocation */
	while (at < rv->nmaps && rv->maps[at].va < a->ptr)
		at++;
	/* a range is mapped once: nothing before it reaches into it, nothing starts inside */
	if ((at > 0 && rv->maps[at - 1].va + rv->maps[at - 1].bytes > a->ptr) ||
	    (at < rv->nmaps && rv->maps[at].va - a->ptr < a->bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (!GP_GROW(rv->maps, rv->cap, rv->nmaps))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuMemMap, a->ptr, (size_t)a->bytes, (size_t)a->offset, m->drv, a->flags);
	if (r != CUDA_SUCCESS)
		return r;
	memmove(&rv->maps[at + 1], &rv->maps[at], (rv->nmaps - at) * sizeof(*rv->maps));
	rv->maps[at] = (struct vmap){a->ptr, a->bytes, m, 0}; /* no access yet */
	rv->nmaps++;
	m->maps++;
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_unmap(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_vmm_unmap *a, struct gp_out_vmm_unmap *o)
{
	size_t first, last;
	struct vresv *rv = whole_maps(a->ptr, a->bytes, &first, &last);
	CUresult r;

	if (!rv)
		return CUDA_ERROR_INVALID_VALUE;
	/* out of the table first: nothing checked from now on may use the range */
	gp_owner_alloc_forget(&w->own, 0, rv->base);
	r = GP_DRV(w, cuMemUnmap, a->ptr, (size_t)a->bytes);
	if (r == CUDA_SUCCESS) {
		for (size_t i = first; i <= last; i++) {
			struct vmem *m = rv->maps[i].mem;

			m->maps--;
			mem_maybe_free(w, m);
		}
		memmove(&rv->maps[first], &rv->maps[last + 1],
			(rv->nmaps - last - 1) * sizeof(*rv->maps));
		rv->nmaps -= last + 1 - first;
	}
	publish(w, rv);
	gp__publish_mem(w);
	return r;
}

/* One access descriptor per device named in the masks; a device in two masks is invalid. */
static CUresult access_descs(struct gp_worker *w, const struct gp_wargs_vmm_set_access *a,
			     CUmemAccessDesc *d, size_t *n)
{
	uint64_t all = a->rw_devices | a->read_devices | a->none_devices;

	if ((a->rw_devices & a->read_devices) || (a->rw_devices & a->none_devices) ||
	    (a->read_devices & a->none_devices) || all == 0)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 0;
	for (int i = 0; i < 64; i++) {
		CUdevice dev;
		CUresult r;

		if (!(all >> i & 1))
			continue;
		if (i >= w->ndev)
			return CUDA_ERROR_INVALID_DEVICE;
		r = w->drv.cuDeviceGet(&dev, i);
		if (r != CUDA_SUCCESS)
			return r;
		d[*n].location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, dev};
		d[*n].flags = a->rw_devices >> i & 1	 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
			      : a->read_devices >> i & 1 ? CU_MEM_ACCESS_FLAGS_PROT_READ
							 : CU_MEM_ACCESS_FLAGS_PROT_NONE;
		(*n)++;
	}
	return CUDA_SUCCESS;
}

CUresult gp__serve_vmm_set_access(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_vmm_set_access *a,
				  struct gp_out_vmm_set_access *o)
{
	CUmemAccessDesc d[64];
	size_t n, first, last;
	struct vresv *rv = whole_maps(a->ptr, a->bytes, &first, &last);
	CUresult r;

	if (!rv)
		return CUDA_ERROR_INVALID_VALUE;
	r = access_descs(w, a, d, &n);
	if (r != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuMemSetAccess, a->ptr, (size_t)a->bytes, d, n);
	if (r != CUDA_SUCCESS)
		return r;
	for (size_t i = first; i <= last; i++)
		rv->maps[i].access =
			(rv->maps[i].access | a->rw_devices | a->read_devices) & ~a->none_devices;
	return publish(w, rv);
}

CUresult gp__serve_vmm_get_access(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_vmm_get_access *a,
				  struct gp_out_vmm_get_access *o)
{
	CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, a->device_drv};
	unsigned long long f = 0;
	struct vresv *rv;
	CUresult r;

	if (!map_find(a->ptr, &rv))
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuMemGetAccess, &f, &loc, a->ptr);
	o->flags = f;
	return r;
}
