/* registry.c -- the client's own record of memory: device allocations, module
 * globals it looked up, and host allocations it made. It answers pointer
 * attributes, address ranges and the direction of unified copies locally.
 *
 * Device addresses come from another process, so nothing stops one from equalling the
 * address of host memory here — and unified copies tell device from host by address, as
 * UVA does. So device ranges are also reserved in this process's address space
 * (PROT_NONE, no memory behind them): no host mapping can appear there later, and a device
 * range that lands on existing host memory is reported (-EEXIST) so the caller can take
 * another. Reservations are whole 2 MiB chunks, counted, since small allocations share
 * pages. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "interposer.h"

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct gp_range *ranges; /* sorted by base */
static size_t nranges, cap;
static atomic_ullong next_id = 1;

/* ---- address-space reservations (under lock) ---------------------------------------------- */

#define CHUNK_SHIFT 21

struct chunk {
	uintptr_t index; /* address >> CHUNK_SHIFT */
	unsigned refs;
};

static struct chunk *chunks; /* sorted by index */
static size_t nchunks, chunk_cap;

static size_t chunk_at(uintptr_t index)
{
	size_t lo = 0, hi = nchunks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (chunks[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void chunk_unref(uintptr_t index)
{
	size_t at = chunk_at(index);

	if (at == nchunks || chunks[at].index != index || --chunks[at].refs)
		return;
	munmap((void *)(index << CHUNK_SHIFT), (size_t)1 << CHUNK_SHIFT);
	memmove(&chunks[at], &chunks[at + 1], (nchunks - at - 1) * sizeof(*chunks));
	nchunks--;
}

/* 0, -EEXIST when part of the range is host memory here, -ENOMEM. */
static int chunk_ref(uintptr_t index)
{
	size_t at = chunk_at(index);
	void *want = (void *)(index << CHUNK_SHIFT), *got;

	if (at < nchunks && chunks[at].index == index) {
		chunks[at].refs++;
		return 0;
	}
	if (nchunks == chunk_cap) {
		size_t ncap = chunk_cap ? chunk_cap * 2 : 64;
		struct chunk *nc = realloc(chunks, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		chunks = nc;
		chunk_cap = ncap;
	}
	got = mmap(want, (size_t)1 << CHUNK_SHIFT, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (got != want) {
		/* Kernels before 4.17 treat the address as a hint: not ours either way. */
		if (got != MAP_FAILED)
			munmap(got, (size_t)1 << CHUNK_SHIFT);
		return -EEXIST;
	}
	memmove(&chunks[at + 1], &chunks[at], (nchunks - at) * sizeof(*chunks));
	chunks[at] = (struct chunk){index, 1};
	nchunks++;
	return 0;
}

static void shadow_release(uintptr_t base, size_t size)
{
	uintptr_t last = (base + (size ? size : 1) - 1) >> CHUNK_SHIFT;

	for (uintptr_t i = base >> CHUNK_SHIFT; i <= last; i++)
		chunk_unref(i);
}

static int shadow_reserve(uintptr_t base, size_t size)
{
	uintptr_t first = base >> CHUNK_SHIFT, last = (base + (size ? size : 1) - 1) >> CHUNK_SHIFT;

	if (base + size < base)
		return -EEXIST;
	for (uintptr_t i = first; i <= last; i++) {
		int ret = chunk_ref(i);

		if (ret) {
			while (i-- > first)
				chunk_unref(i);
			return ret;
		}
	}
	return 0;
}

unsigned long long gp__next_object_id(void)
{
	return atomic_fetch_add(&next_id, 1);
}

/* Device ranges are reserved here, and so is mapped page-locked memory (managed.c maps it
 * over its reservation at the pool's address); the program's own registered pages are not. */
static bool reserves(enum gp_mem_kind kind, unsigned flags)
{
	return kind != GP_MEM_HOST ||
	       ((flags & GP_RANGE_MANAGED) && !(flags & GP_RANGE_REGISTERED));
}

static void release_range(const struct gp_range *r)
{
	if (reserves(r->kind, r->flags) && !(r->flags & GP_RANGE_UNSHADOWED))
		shadow_release(r->base, r->size);
}

/* Index of the first range whose base is > p. */
static size_t upper_bound(uintptr_t p)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void remove_at(size_t i)
{
	release_range(&ranges[i]);
	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(*ranges));
	nranges--;
}

static int range_add(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
		     unsigned flags, const void *owner)
{
	size_t at;
	int ret = 0;

	pthread_rwlock_wrlock(&lock);
	at = upper_bound(base);
	/* A global looked up twice is recorded once. */
	if (at > 0 && ranges[at - 1].base == base && kind == GP_MEM_GLOBAL &&
	    ranges[at - 1].kind == GP_MEM_GLOBAL)
		goto out_unlock;
	if (nranges == cap) {
		size_t ncap = cap ? cap * 2 : 64;
		struct gp_range *nr = realloc(ranges, ncap * sizeof(*nr));

		if (!nr) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		ranges = nr;
		cap = ncap;
	}
	/* Live host memory here is never displaced by an address the pool chose. */
	if (at > 0 && ranges[at - 1].base == base && ranges[at - 1].kind == GP_MEM_HOST &&
	    kind != GP_MEM_HOST) {
		ret = -EEXIST;
		goto out_unlock;
	}
	/* Reserved before anything is dropped, so a failure leaves the registry as it was;
	 * chunks are counted, so a stale range's reservation does not stand in the way. */
	if (reserves(kind, flags)) {
		ret = shadow_reserve(base, size);
		/* A global's address is the module's: taken as it is, collision or not. */
		if (ret && kind != GP_MEM_GLOBAL)
			goto out_unlock;
		if (ret)
			flags |= GP_RANGE_UNSHADOWED;
		ret = 0;
	}
	/* Any other range at the same base is stale (its memory is gone): dropped. */
	if (at > 0 && ranges[at - 1].base == base)
		remove_at(--at);
	memmove(&ranges[at + 1], &ranges[at], (nranges - at) * sizeof(*ranges));
	ranges[at] = (struct gp_range){base, size, kind, ctx, flags, gp__next_object_id(), owner};
	nranges++;
out_unlock:
	pthread_rwlock_unlock(&lock);
	return ret;
}

int gp__range_add(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
		  unsigned flags)
{
	return range_add(base, size, kind, ctx, flags, NULL);
}

int gp__range_add_owned(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
			unsigned flags, const void *owner)
{
	return range_add(base, size, kind, ctx, flags, owner);
}

int gp__range_add_global(uintptr_t base, size_t size, struct gp_ictx *ctx, const void *owner)
{
	return range_add(base, size, GP_MEM_GLOBAL, ctx, 0, owner);
}

void gp__range_forget_owner(const void *owner)
{
	pthread_rwlock_wrlock(&lock);
	for (size_t i = nranges; i-- > 0;)
		if (ranges[i].kind == GP_MEM_GLOBAL && ranges[i].owner == owner)
			remove_at(i);
	pthread_rwlock_unlock(&lock);
}

bool gp__range_find(uintptr_t p, struct gp_range *out)
{
	bool found = false;
	size_t at;

	pthread_rwlock_rdlock(&lock);
	at = upper_bound(p);
	if (at > 0) {
		struct gp_range *r = &ranges[at - 1];

		if (p - r->base < r->size || (r->size == 0 && p == r->base)) {
			*out = *r;
			found = true;
		}
	}
	pthread_rwlock_unlock(&lock);
	return found;
}

bool gp__range_remove(uintptr_t base, enum gp_mem_kind kind)
{
	bool found = false;
	size_t at;

	pthread_rwlock_wrlock(&lock);
	at = upper_bound(base);
	if (at > 0 && ranges[at - 1].base == base && ranges[at - 1].kind == kind) {
		remove_at(at - 1);
		found = true;
	}
	pthread_rwlock_unlock(&lock);
	return found;
}

void gp__range_forget_ctx(struct gp_ictx *ctx)
{
	gp__managed_forget_ctx(ctx); /* its managed memory went with it: first, unmapped */
	pthread_rwlock_wrlock(&lock);
	for (size_t i = nranges; i-- > 0;)
		if ((ranges[i].kind != GP_MEM_HOST || (ranges[i].flags & GP_RANGE_MANAGED)) &&
		    ranges[i].ctx == ctx)
			remove_at(i);
	pthread_rwlock_unlock(&lock);
}
