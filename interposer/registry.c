/* registry.c -- the client's own record of memory: device allocations, module
 * globals it looked up, and host allocations it made. It answers pointer
 * attributes, address ranges and the direction of unified copies locally. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "interposer.h"

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct gp_range *ranges; /* sorted by base */
static size_t nranges, cap;
static atomic_ullong next_id = 1;

unsigned long long gp__next_object_id(void)
{
	return atomic_fetch_add(&next_id, 1);
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

int gp__range_add(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
		  unsigned flags)
{
	size_t at;
	int ret = 0;

	pthread_rwlock_wrlock(&lock);
	at = upper_bound(base);
	/* A global looked up twice is recorded once; any other range at the same base is
	 * stale (its memory is gone) and the new one replaces it. */
	if (at > 0 && ranges[at - 1].base == base) {
		if (kind != GP_MEM_GLOBAL || ranges[at - 1].kind != GP_MEM_GLOBAL)
			ranges[at - 1] = (struct gp_range){base, size,	kind,
							   ctx,	 flags, gp__next_object_id()};
		goto out_unlock;
	}
	if (nranges == cap) {
		size_t ncap = cap ? cap * 2 : 64;
		struct gp_range *nr = realloc(ranges, ncap * sizeof(*nr));

		if (!nr) {
			ret = -1;
			goto out_unlock;
		}
		ranges = nr;
		cap = ncap;
	}
	memmove(&ranges[at + 1], &ranges[at], (nranges - at) * sizeof(*ranges));
	ranges[at] = (struct gp_range){base, size, kind, ctx, flags, gp__next_object_id()};
	nranges++;
out_unlock:
	pthread_rwlock_unlock(&lock);
	return ret;
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

static void remove_at(size_t i)
{
	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(*ranges));
	nranges--;
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
	pthread_rwlock_wrlock(&lock);
	for (size_t i = nranges; i-- > 0;)
		if (ranges[i].kind != GP_MEM_HOST && ranges[i].ctx == ctx)
			remove_at(i);
	pthread_rwlock_unlock(&lock);
}
