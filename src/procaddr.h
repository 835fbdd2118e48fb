/* procaddr.h -- cuGetProcAddress: the entry point a (name, version, flags) request means. */
#ifndef GP_PROCADDR_H
#define GP_PROCADDR_H

#include <cuda.h>

#include "cuda_table.h"

/*
 * The rule (docs/cuda-abi.md): among the ABIs of `symbol` (a base name such as "cuMemAlloc")
 * serve the newest whose version is <= cudaVersion; with the per-thread flag
 * (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) serve that ABI's _ptds/_ptsz twin instead
 * where one exists and is itself not newer than cudaVersion. Flags 0 (DEFAULT) and
 * LEGACY_STREAM serve the legacy ABI: DEFAULT's per-thread meaning is applied by cuda.h in
 * the caller, not here; both bits set count as per-thread.
 *
 * Results:
 *   CUDA_SUCCESS, *pfn set, status CU_GET_PROC_ADDRESS_SUCCESS;
 *   CUDA_ERROR_NOT_FOUND, *pfn = NULL, status CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND for a
 *     name we do not know (the empty-name probe included);
 *   CUDA_ERROR_NOT_FOUND, *pfn = NULL, status CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
 *     when every ABI of the name is newer than cudaVersion;
 *   CUDA_ERROR_INVALID_VALUE for symbol or pfn NULL or flags with bits CUDA does not define
 *     (*pfn = NULL where pfn is not NULL; status untouched).
 * status may be NULL. The address is the library's own definition (strong or weak stub).
 */
CUresult gp__proc_resolve(const char *symbol, int cudaVersion, cuuint64_t flags, void **pfn,
			  CUdriverProcAddressQueryResult *status);

/*
 * The same lookup without the pointer plumbing: the entry served, or NULL with *status
 * (which must not be NULL) saying why. flags are not checked here.
 */
const struct gp__cuda_entry *gp__proc_lookup(const char *symbol, int cudaVersion, cuuint64_t flags,
					     CUdriverProcAddressQueryResult *status);

/* The entry of an exact symbol name ("cuMemAlloc_v2", "cuMemcpy_ptds"); NULL if unknown. */
const struct gp__cuda_entry *gp__cuda_entry_find(const char *sym);

#endif
