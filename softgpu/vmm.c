/* vmm.c -- virtual memory management: address reservations, physical allocations, mappings. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softgpu.h"
#include "grow.h"

/*
 * DESIGN: as everywhere in softgpu, a device address is not a host address. A reservation
 * (cuMemAddressReserve) is two ranges of the process's address space: the device range,
 * PROT_NONE for ever (it only numbers device bytes; a host dereference faults as on a GPU),
 * and a host shadow of the same size. A physical allocation (cuMemCreate) is a memfd; its
 * bytes count against the device's memory as cuMemAlloc's do. Mapping one at device
 * address va maps the memfd MAP_SHARED|MAP_FIXED at the same offset of the shadow, so two
 * mappings of one allocation alias, and mappings side by side in a reservation are side by
 * side in host memory too (a copy may span them). Unmapping puts private anonymous memory
 * back over the shadow rather than PROT_NONE, so a kernel racing the unmap reads junk
 * instead of crashing the process. cuMemAddressFree does unmap the shadow: a kernel
 * still running over a reservation that was unmapped and freed under it (undefined in CUDA)
 * can fault the process, which through the pool is only that session's worker.
 *
 * A mapping is an entry of memory.c's allocation table (SG_MEM_VMM) from cuMemMap on, so
 * cuMemGetAddressRange and pointer attributes know it; kernels and copies reach it only
 * once cuMemSetAccess gave a device read-write access (the entry's SG_VMM_ACCESS bits).
 * Access is kept per mapping: a cuMemSetAccess range must cover whole mappings.
 *
 * Everything here is under vmm_lock; memory.c's table lock is taken inside it, never the
 * other way round.
 */

#define GRANULE (2ull << 20)
#define MAX_DEVICES 16 /* SG_VMM_ACCESS has a bit per device */

struct phys {
	uint64_t handle;
	struct sg_device *dev;
	uint64_t size;
	uint64_t charge_off; /* the device memory it counts against (sg_mem_charge) */
	int fd;
	unsigned handle_refs; /* cuMemCreate and each cuMemRetainAllocationHandle */
	unsigned maps;
	CUmemAllocationProp prop;
};

struct mapping {
	uint64_t va, size, offset;
	struct phys *p;
};

struct resv {
	uint64_t base, size;
	uint8_t *shadow;
	struct mapping *maps; /* sorted by va */
	size_t nmaps, cap;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct phys **phys;
static size_t nphys, cap_phys;
static struct resv *resv;
static size_t nresv, cap_resv;
static uint64_t next_handle = 1;

/* A live handle (one the program still holds), or NULL. */
static struct phys *phys_get(uint64_t handle)
{
	for (size_t i = 0; i < nphys; i++)
		if (phys[i]->handle == handle)
			return phys[i]->handle_refs ? phys[i] : NULL;
	return NULL;
}

/* Frees an allocation nothing holds or maps any more. */
static void phys_maybe_free(struct phys *p)
{
	if (p->handle_refs || p->maps)
		return;
	for (size_t i = 0; i < nphys; i++) {
		if (phys[i] != p)
			continue;
		phys[i] = phys[--nphys];
		break;
	}
	close(p->fd);
	sg_mem_uncharge(p->dev, p->charge_off, p->size);
	free(p);
}

/* The reservation containing [va, va+size), or NULL. */
static struct resv *resv_find(uint64_t va, uint64_t size)
{
	for (size_t i = 0; i < nresv; i++)
		if (va - resv[i].base < resv[i].size && size <= resv[i].size - (va - resv[i].base))
			return &resv[i];
	return NULL;
}

uint8_t *sg_vmm_shadow(uint64_t va)
{
	struct resv *rv;
	uint8_t *h;

	pthread_mutex_lock(&vmm_lock);
	rv = resv_find(va, 1);
	h = rv ? rv->shadow + (va - rv->base) : NULL;
	pthread_mutex_unlock(&vmm_lock);
	return h;
}

/* The mapping containing va, or NULL; *rp its reservation. */
static struct mapping *map_find(uint64_t va, struct resv **rp)
{
	struct resv *r = resv_find(va, 1);

	if (!r)
		return NULL;
	for (size_t i = 0; i < r->nmaps; i++) {
		if (va - r->maps[i].va < r->maps[i].size) {
			*rp = r;
			return &r->maps[i];
		}
	}
	return NULL;
}

/* A device of the process for a location; CUDA_ERROR_INVALID_DEVICE for another ordinal. */
static CUresult location_dev(const CUmemLocation *loc, struct sg_device **out)
{
	if (loc->type == CU_MEM_LOCATION_TYPE_HOST || loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CUDA_ERROR_NOT_SUPPORTED; /* host VMM: its attribute says 0 */
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (loc->id >= MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	return sg_device_get(loc->id, out);
}

/* What cuMemCreate and the granularity query accept as properties. */
static CUresult prop_check(const CUmemAllocationProp *prop, struct sg_device **dev)
{
	if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return prop && prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED
			       ? CUDA_ERROR_NOT_SUPPORTED
			       : CUDA_ERROR_INVALID_VALUE;
	return location_dev(&prop->location, dev);
}

SG_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
						 const CUmemAllocationProp *prop,
						 CUmemAllocationGranularity_flags option)
{
	struct sg_device *dev;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
				    option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	r = prop_check(prop, &dev);
	if (r == CUDA_SUCCESS)
		*granularity = GRANULE; /* NVIDIA's, for both */
	return r;
}

SG_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			       const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct sg_device *dev;
	struct phys *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (handle == NULL || flags != 0 || size == 0 || size % GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	r = prop_check(prop, &dev);
	if (r)
		return r;
	/* No export: the POSIX fd and fabric attributes are 0 (see docs/softgpu.md). */
	if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE || prop->win32HandleMetaData)
		return CUDA_ERROR_NOT_SUPPORTED;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->dev = dev;
	p->size = size;
	p->prop = *prop;
	/* what softgpu gives, whatever was asked: no compression, no GPUDirect RDMA */
	p->prop.allocFlags.compressionType = 0;
	p->prop.allocFlags.gpuDirectRDMACapable = 0;
	p->handle_refs = 1;
	r = sg_mem_charge(dev, size, &p->charge_off);
	if (r)
		goto out_free;
	p->fd = memfd_create("softgpu-vmm", MFD_CLOEXEC);
	if (p->fd < 0 || ftruncate(p->fd, (off_t)size)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_close;
	}
	pthread_mutex_lock(&vmm_lock);
	if (!GP_GROW(phys, cap_phys, nphys)) {
		pthread_mutex_unlock(&vmm_lock);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_close;
	}
	p->handle = next_handle++;
	phys[nphys++] = p;
	*handle = p->handle;
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;

out_close:
	if (p->fd >= 0)
		close(p->fd);
	sg_mem_uncharge(dev, p->charge_off, size);
out_free:
	free(p);
	return r;
}

SG_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct phys *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	p = phys_get(handle);
	if (p) {
		p->handle_refs--;
		phys_maybe_free(p); /* the memory stays while it is mapped */
	}
	pthread_mutex_unlock(&vmm_lock);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
							  CUmemGenericAllocationHandle handle)
{
	struct phys *p;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (prop == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	p = phys_get(handle);
	if (p)
		*prop = p->prop;
	pthread_mutex_unlock(&vmm_lock);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	struct mapping *m;
	struct resv *rv;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (handle == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	m = map_find((uint64_t)(uintptr_t)addr, &rv);
	if (m) {
		m->p->handle_refs++;
		*handle = m->p->handle;
	}
	pthread_mutex_unlock(&vmm_lock);
	return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- address reservations ---- */

/* size bytes of PROT_NONE address space at a multiple of align; the hint first, when free. */
static uint64_t reserve_va(uint64_t size, uint64_t align, uint64_t hint)
{
	uint8_t *p, *a;

	if (hint && hint % align == 0) {
		p = mmap((void *)(uintptr_t)hint, size, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)(uintptr_t)hint)
			return hint;
		if (p != MAP_FAILED) /* a kernel older than 4.17 took it as a hint */
			munmap(p, size);
	}
	if (size + align < size)
		return 0;
	p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	a = (uint8_t *)(((uintptr_t)p + align - 1) / align * align);
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + size < p + size + align)
		munmap(a + size, (size_t)(p + size + align - (a + size)));
	return (uint64_t)(uintptr_t)a;
}

SG_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				       CUdeviceptr addr, unsigned long long flags)
{
	uint64_t base, align = alignment < GRANULE ? GRANULE : alignment;
	uint8_t *shadow;
	CUresult r = sg_inited();

	if (r)
		return r;
	/* a hint off the alignment is taken as no hint; off a page it is invalid, as in CUDA */
	if (ptr == NULL || size == 0 || size % GRANULE || flags != 0 ||
	    (alignment & (alignment - 1)) || addr % (uint64_t)sysconf(_SC_PAGESIZE))
		return CUDA_ERROR_INVALID_VALUE;
	/* A device address window (SOFTGPU_VA_WINDOW): a reservation without a hint, or whose
	 * hint is taken, stays inside it (memory.c). */
	base = reserve_va(size, align, addr);
	if (addr == 0 || base != addr) {
		uint64_t w = sg_mem_window_reserve(size, align);

		if (w) {
			if (base)
				munmap((void *)(uintptr_t)base, size);
			base = w == UINT64_MAX ? 0 : w;
		}
	}
	if (base == 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	shadow = mmap(NULL, size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (shadow == MAP_FAILED)
		goto out_va;
	pthread_mutex_lock(&vmm_lock);
	if (!GP_GROW(resv, cap_resv, nresv) || sg_mem_reserve_add(base, size)) {
		pthread_mutex_unlock(&vmm_lock);
		munmap(shadow, size);
		goto out_va;
	}
	resv[nresv++] = (struct resv){.base = base, .size = size, .shadow = shadow};
	pthread_mutex_unlock(&vmm_lock);
	*ptr = base;
	return CUDA_SUCCESS;

out_va:
	munmap((void *)(uintptr_t)base, size);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

SG_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct resv *rv = NULL;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	for (size_t i = 0; i < nresv; i++)
		if (resv[i].base == ptr && resv[i].size == size)
			rv = &resv[i];
	if (rv == NULL || rv->nmaps) { /* still mapped: unmap first */
		pthread_mutex_unlock(&vmm_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	sg_mem_reserve_del(rv->base);
	munmap((void *)(uintptr_t)rv->base, rv->size);
	munmap(rv->shadow, rv->size);
	free(rv->maps);
	*rv = resv[--nresv];
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

/* ---- mappings ---- */

SG_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct sg_alloc a = {0};
	struct phys *p;
	struct resv *rv;
	size_t at;
	void *h;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (flags != 0 || size == 0 || ptr % GRANULE || size % GRANULE || offset % GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	r = CUDA_ERROR_INVALID_VALUE;
	p = phys_get(handle);
	rv = resv_find(ptr, size);
	if (!p || !rv || offset > p->size || size > p->size - offset)
		goto out_unlock;
	for (at = 0; at < rv->nmaps && rv->maps[at].va < ptr; at++)
		;
	/* no overlap with the mappings before and after: a range is mapped once */
	if ((at > 0 && rv->maps[at - 1].va + rv->maps[at - 1].size > ptr) ||
	    (at < rv->nmaps && rv->maps[at].va < ptr + size))
		goto out_unlock;
	r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!GP_GROW(rv->maps, rv->cap, rv->nmaps))
		goto out_unlock;
	h = rv->shadow + (ptr - rv->base);
	if (mmap(h, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, p->fd, (off_t)offset) !=
	    h)
		goto out_unlock;
	a.base = ptr;
	a.size = size;
	a.host = h;
	a.kind = SG_MEM_VMM;
	a.flags = (unsigned)p->dev->ordinal << 16; /* no access until cuMemSetAccess */
	if (sg_mem_map_add(&a)) {
		mmap(h, size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		goto out_unlock;
	}
	memmove(&rv->maps[at + 1], &rv->maps[at], (rv->nmaps - at) * sizeof(*rv->maps));
	rv->maps[at] = (struct mapping){ptr, size, offset, p};
	rv->nmaps++;
	p->maps++;
	r = CUDA_SUCCESS;
out_unlock:
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

/*
 * The mappings [*first, *last] of the reservation that cover [ptr, ptr+size) exactly, one
 * after the other; false when the range starts or ends inside a mapping or has a hole.
 */
static bool whole_maps(uint64_t ptr, uint64_t size, struct resv **rvp, size_t *first, size_t *last)
{
	struct resv *rv = resv_find(ptr, size);
	uint64_t end = ptr + size;
	size_t i;

	if (!rv || size == 0)
		return false;
	for (i = 0; i < rv->nmaps && rv->maps[i].va != ptr; i++)
		;
	if (i == rv->nmaps)
		return false;
	*first = i;
	for (uint64_t at = ptr; i < rv->nmaps && rv->maps[i].va == at; i++) {
		at += rv->maps[i].size;
		if (at == end) {
			*rvp = rv;
			*last = i;
			return true;
		}
		if (at > end)
			return false;
	}
	return false;
}

SG_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct resv *rv;
	size_t first, last;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&vmm_lock);
	if (!whole_maps(ptr, size, &rv, &first, &last)) {
		pthread_mutex_unlock(&vmm_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = first; i <= last; i++) {
		struct mapping *m = &rv->maps[i];

		sg_mem_map_del(m->va);
		mmap(rv->shadow + (m->va - rv->base), m->size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		m->p->maps--;
		phys_maybe_free(m->p);
	}
	memmove(&rv->maps[first], &rv->maps[last + 1], (rv->nmaps - last - 1) * sizeof(*rv->maps));
	rv->nmaps -= last + 1 - first;
	pthread_mutex_unlock(&vmm_lock);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				  size_t count)
{
	unsigned set = 0, clear = 0;
	struct resv *rv;
	size_t first, last;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (desc == NULL || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		struct sg_device *dev;

		r = location_dev(&desc[i].location, &dev);
		if (r)
			return r;
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			set |= 1u << dev->ordinal;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE)
			clear |= 1u << dev->ordinal;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
			return CUDA_ERROR_NOT_SUPPORTED; /* softgpu cannot enforce read-only */
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_lock(&vmm_lock);
	r = CUDA_ERROR_INVALID_VALUE;
	if (whole_maps(ptr, size, &rv, &first, &last)) {
		for (size_t i = first; i <= last; i++) {
			struct sg_alloc a;
			unsigned f;

			if (!sg_mem_find(rv->maps[i].va, &a))
				continue;
			f = (a.flags & ~0xffffu) | ((SG_VMM_ACCESS(a.flags) | set) & ~clear);
			sg_mem_map_flags(rv->maps[i].va, f);
		}
		r = CUDA_SUCCESS;
	} else if (resv_find(ptr, size)) {
		/* mapped, but the range cuts a mapping: access is kept per mapping here */
		struct mapping *m;
		struct resv *r2;

		m = map_find(ptr, &r2);
		if (m && map_find(ptr + size - 1, &r2))
			r = CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_unlock(&vmm_lock);
	return r;
}

SG_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
				  CUdeviceptr ptr)
{
	struct sg_device *dev;
	struct sg_alloc a;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (flags == NULL || location == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = location_dev(location, &dev);
	if (r)
		return r;
	if (!sg_mem_find(ptr, &a) || a.kind != SG_MEM_VMM)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = (SG_VMM_ACCESS(a.flags) >> dev->ordinal) & 1 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
							      : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	return CUDA_SUCCESS;
}
