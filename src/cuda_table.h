/* cuda_table.h -- the table of CUDA driver entry points a gpupool libcuda.so.1 links. */
#ifndef GP_CUDA_TABLE_H
#define GP_CUDA_TABLE_H

/*
 * Usable with and without cuda.h: nothing here needs a CUDA type. The table itself is defined
 * in cuda_stubs.c, which each of our libcuda.so.1 builds compiles in (GP_CUDA_STUB_SOURCES),
 * so an address in it is whatever definition that library links: its own strong one, or the
 * weak stub that answers CUDA_ERROR_NOT_SUPPORTED.
 */

#include <stddef.h>

#include "cuda_entries.h"

/* Which stream semantics an entry point has (the kind field of GP_CUDA_ENTRIES). */
enum gp__cuda_kind {
	GP_CUDA_LEGACY = 0, /* the plain ABI: the legacy default stream */
	GP_CUDA_PTDS = 1,   /* _ptds: per-thread default stream, synchronous call */
	GP_CUDA_PTSZ = 2,   /* _ptsz: per-thread default stream, takes a stream */
};

struct gp__cuda_entry {
	const char *sym;	/* exported symbol: "cuMemAlloc_v2" */
	const char *base;	/* the name cuGetProcAddress is asked for: "cuMemAlloc" */
	const char *legacy;	/* for _ptds/_ptsz, the symbol it is the twin of; else sym */
	void *addr;		/* the definition this library links */
	int version;		/* CUDA version that introduced this ABI (or this twin) */
	unsigned char kind;	/* enum gp__cuda_kind */
	unsigned char exported; /* 1: in libcuda 13.0's export list; 0: resolvable only */
};

/* GP_CUDA_NENTRIES entries in GP_CUDA_ENTRIES order: sorted by base, then as listed there. */
extern const struct gp__cuda_entry gp__cuda_entries[GP_CUDA_NENTRIES];

/* Makes a strong definition in a hidden-visibility build visible to the version script. */
#define GP_CUDA_EXPORT __attribute__((visibility("default")))

/* CUDA_ERROR_NOT_SUPPORTED, for files that do not include cuda.h. */
#define GP_CUDA_ERROR_NOT_SUPPORTED 801

#endif
