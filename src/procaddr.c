/* procaddr.c -- cuGetProcAddress resolution over the generated entry table. */
#include <string.h>

#include "procaddr.h"

#define KNOWN_FLAGS                                       \
	((cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | \
		      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))

/* Index of the first entry whose base is >= name (the table is sorted by base). */
static size_t lower_bound(const char *name)
{
	size_t lo = 0, hi = GP_CUDA_NENTRIES;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(gp__cuda_entries[mid].base, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct gp__cuda_entry *gp__proc_lookup(const char *symbol, int cudaVersion, cuuint64_t flags,
					     CUdriverProcAddressQueryResult *status)
{
	const struct gp__cuda_entry *best = NULL, *twin = NULL;
	size_t i, first;

	if (!symbol) {
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return NULL;
	}
	i = first = lower_bound(symbol);

	for (; i < GP_CUDA_NENTRIES && strcmp(gp__cuda_entries[i].base, symbol) == 0; i++) {
		const struct gp__cuda_entry *e = &gp__cuda_entries[i];

		if (e->kind == GP_CUDA_LEGACY && e->version <= cudaVersion &&
		    (!best || e->version > best->version))
			best = e;
	}
	if (i == first) {
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return NULL;
	}
	if (!best) {
		*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return NULL;
	}
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		for (size_t j = first; j < i; j++) {
			const struct gp__cuda_entry *e = &gp__cuda_entries[j];

			if (e->kind != GP_CUDA_LEGACY && e->version <= cudaVersion &&
			    strcmp(e->legacy, best->sym) == 0 &&
			    (!twin || e->version > twin->version))
				twin = e;
		}
		if (twin)
			best = twin;
	}
	*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return best;
}

CUresult gp__proc_resolve(const char *symbol, int cudaVersion, cuuint64_t flags, void **pfn,
			  CUdriverProcAddressQueryResult *status)
{
	const struct gp__cuda_entry *e;
	CUdriverProcAddressQueryResult st;

	if (!pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (!symbol || (flags & ~KNOWN_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	e = gp__proc_lookup(symbol, cudaVersion, flags, &st);
	if (status)
		*status = st;
	if (!e)
		return CUDA_ERROR_NOT_FOUND;
	*pfn = e->addr;
	return CUDA_SUCCESS;
}

const struct gp__cuda_entry *gp__cuda_entry_find(const char *sym)
{
	if (!sym)
		return NULL;
	for (size_t i = 0; i < GP_CUDA_NENTRIES; i++)
		if (strcmp(gp__cuda_entries[i].sym, sym) == 0)
			return &gp__cuda_entries[i];
	return NULL;
}
