/* owner.h -- what one session owns, with no I/O: handles, device allocations, charges.
 *
 * The worker's promises about a session's objects live here, so cmocka can test them
 * without a driver (tests/unit/test_owner.c):
 *
 *  - A handle id the client sees is (kind << 56) | (generation << 32) | (slot + 1). A
 *    slot's generation changes every time it is reused, so an id kept after its object
 *    was destroyed never names a new one; a slot whose generation would wrap is retired.
 *  - Handle slots never move: a struct gp_handle pointer stays valid until that handle is
 *    freed, even across gp_owner_handle_new (the table is reserved once, at its largest,
 *    and the pages appear as they are used).
 *  - Allocations are kept sorted by address and never overlap or wrap the address space;
 *    a range is owned only if it lies inside one of them. struct gp_alloc pointers are
 *    only valid until the next add or remove (that table moves).
 *  - What the session holds on each device (allocations and charges) is counted against
 *    its per-device limit and released with whatever held it.
 *
 * A zeroed struct gp_owner is an empty one with the default handle limit.
 */
#ifndef GP_OWNER_H
#define GP_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpupool/va_window.h>

#include "stats.h"

/* Live handles a session may hold at once (slots are reused once freed). */
#define GP_OWNER_MAX_HANDLES (1u << 20)
/* The largest generation; a slot that reaches it is not reused. An id is
 * kind (8 bits) | tag (4 bits) | generation (20 bits) | slot (32 bits): the tag is the
 * session's device address window (GP_VA_HANDLE_SHIFT, <gpupool/va_window.h>), so that a
 * client spanning daemons tells whose handle it holds, and a handle of another daemon's
 * is never taken for one of this session's. */
#define GP_OWNER_GEN_MAX 0xfffffu
/* Kinds are 1..255: 0 marks a free slot and the kind has 8 bits in an id. */
#define GP_OWNER_KIND_MAX 0xffu

struct gp_handle {
	uint32_t kind; /* 0: free slot */
	uint32_t gen;
	void *ptr;    /* the driver's handle */
	void *aux;    /* kind-specific; the caller frees it (gp_owner_handle_free hands it back) */
	int device;   /* for contexts: the session's device index; -1: none */
	bool primary; /* for contexts: a device's primary context */
	uint64_t parent; /* the context a module/stream/event belongs to */
	/* Device memory the object costs beyond explicit allocations, counted against the
	 * session's limit on `device` and released with the handle: a module's globals and
	 * code, a context's limits (heap, printf buffer, stack) indexed by CUlimit below
	 * GP_CHARGED_LIMITS. */
	uint64_t charge;
	uint64_t limit_charge[3];
};

struct gp_alloc {
	uint64_t ptr;
	uint64_t size;
	uint64_t ctx;
	int device;
	uint64_t module; /* a module's global: not freeable, not counted as allocated */
	uint64_t pool;	 /* from a memory pool: freeable, counted by the pool's charge */
	/* graph memory (an allocation node's address range, fixed while its graph lives): the
	 * driver's graph; not counted (the executable graphs and graphmem.c's refresh charge it) */
	uint64_t graph;
};

/* A library's module in one context: the driver makes it on first use there, and what it
 * costs on the device is the session's until the library or the context goes. */
struct gp_libinst {
	uint64_t lib, ctx;
	int device;
	uint64_t charge;
	bool usable; /* false: it did not fit the session's limit, so it is never used */
};

/*
 * The members, as a list, so that struct gp_worker can embed them and still let handlers
 * name w->handles or w->dev_used directly (the kernel's struct_group idiom): worker.h puts
 * this list and a struct gp_owner in one anonymous union.
 */
/* Kinds whose live handles are counted (gp_owner_count); the worker's are all below it. */
#define GP_OWNER_COUNTED 16u

#define GP_OWNER_MEMBERS                                                               \
	struct gp_handle *handles; /* max_handles slots, reserved once; never moved */ \
	uint32_t nhandles;	   /* slots ever used: iterate handles[0..nhandles) */ \
	uint32_t max_handles;	   /* 0: GP_OWNER_MAX_HANDLES */                       \
	uint32_t free_hint;	   /* no free slot below this one */                   \
	uint32_t tag;		   /* in every id (0..GP_VA_HANDLE_TAG_MAX): the window */ \
	struct gp_alloc *allocs;   /* sorted by ptr */                                 \
	size_t nallocs, cap_allocs;                                                    \
	struct gp_libinst *libinst;                                                    \
	size_t nlibinst, cap_libinst;                                                  \
	uint64_t mem_limit; /* bytes per device; 0: no limit */                        \
	uint64_t dev_used[GP_STATS_MAX_DEVICES];                                       \
	uint64_t mem_used, mem_peak;                                                   \
	uint32_t live[GP_OWNER_COUNTED]; /* live handles of each kind below GP_OWNER_COUNTED */

struct gp_owner {
	GP_OWNER_MEMBERS
};

/* Empties o; max_handles 0 means GP_OWNER_MAX_HANDLES. */
void gp_owner_init(struct gp_owner *o, uint32_t max_handles, uint64_t mem_limit);
/* Frees the tables (not what handles' aux points at: free those first). Accepts NULL. */
void gp_owner_deinit(struct gp_owner *o);

/* ---- handles ---- */
/* A new handle of kind (1..GP_OWNER_KIND_MAX) for ptr; 0 when kind is invalid, the table
 * is full or memory ran out. The slot starts with device -1 and no charges. */
uint64_t gp_owner_handle_new(struct gp_owner *o, uint32_t kind, void *ptr);
/* The live handle id names, if it is of that kind and not stale; else NULL. */
struct gp_handle *gp_owner_handle_get(const struct gp_owner *o, uint64_t id, uint32_t kind);
/* The id of a live handle in o's table; 0 for anything else. */
uint64_t gp_owner_handle_id(const struct gp_owner *o, const struct gp_handle *h);
/* The kind an id claims to be (whether or not it is live). */
uint32_t gp_owner_id_kind(uint64_t id);
/* Frees a live handle and releases its charges. Hands back its aux for the caller to free
 * (aux may be NULL). 0, or -ENOENT when id names no live handle. */
int gp_owner_handle_free(struct gp_owner *o, uint64_t id, void **aux);

/* Live handles of kind (0 for a kind not below GP_OWNER_COUNTED). */
uint32_t gp_owner_count(const struct gp_owner *o, uint32_t kind);

/* ---- allocations ---- */
/* Records an allocation [ptr, ptr+size) on device and counts it as used. -EINVAL: size 0
 * or the range wraps the address space; -EEXIST: it overlaps one already recorded. */
int gp_owner_alloc_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device);
/* Records a module's global (module != 0): ownable, not counted. The same global asked for
 * twice is 0. Errors as for gp_owner_alloc_add. A global may be of size 0. */
int gp_owner_global_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx,
			uint64_t module);
/* Records an allocation served by a memory pool (pool != 0): ownable and freeable, not
 * counted (the pool's handle carries what the pool holds as its charge). Errors as for
 * gp_owner_alloc_add. */
int gp_owner_pooled_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device,
			uint64_t pool);
/* Records the address range of a graph's allocation node (graph: the driver's graph, not
 * 0): ownable, not counted. A range the driver gives out again was stale: a graph range
 * marked orphan (below) that overlaps it is dropped for it. Errors as for
 * gp_owner_alloc_add. */
int gp_owner_graphmem_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device,
			  uint64_t graph);
/* Removes the ranges of one graph's allocation nodes. */
void gp_owner_graphmem_forget(struct gp_owner *o, uint64_t graph);
/* A graph that is gone: its ranges stay (memory its executables allocated lives on until it
 * is freed), tagged graph | GP_GRAPHMEM_ORPHAN. */
#define GP_GRAPHMEM_ORPHAN (1ull << 63)
void gp_owner_graphmem_orphan(struct gp_owner *o, uint64_t graph);
/* The allocation or global that contains ptr (a size-0 one only at its ptr), or NULL. */
struct gp_alloc *gp_owner_alloc_find(const struct gp_owner *o, uint64_t ptr);
/* Removes an entry gp_owner_alloc_find returned and releases what it counted. */
void gp_owner_alloc_remove(struct gp_owner *o, struct gp_alloc *a);
/* Removes the entries of a context (ctx != 0) or the globals of a module (module != 0). */
void gp_owner_alloc_forget(struct gp_owner *o, uint64_t ctx, uint64_t module);

/* True when [ptr, ptr+len) lies inside one entry (len 0: ptr is in one). */
bool gp_owner_range(const struct gp_owner *o, uint64_t ptr, uint64_t len);
/* True when height rows of width bytes, pitch apart from base, lie inside one entry.
 * height or width 0 touches nothing: as gp_owner_range(o, base, 0). More than one row
 * needs pitch >= width; an extent that overflows or wraps is refused. */
bool gp_owner_range2d(const struct gp_owner *o, uint64_t base, uint64_t pitch, uint64_t width,
		      uint64_t height);

/* ---- device charges ---- */
/* Whether bytes more fit under the per-device limit (no limit, or a device outside the
 * table, always fit). */
bool gp_owner_charge_fits(const struct gp_owner *o, int device, uint64_t bytes);
/* Counts (delta > 0) or releases (delta < 0) device memory. -EINVAL: no such device;
 * -ERANGE: it would release more than is counted or overflow; nothing changes then. */
int gp_owner_charge(struct gp_owner *o, int device, int64_t delta);

/* ---- library modules per context ---- */
int gp_owner_libinst_add(struct gp_owner *o, uint64_t lib, uint64_t ctx, int device,
			 uint64_t charge, bool usable);
const struct gp_libinst *gp_owner_libinst_find(const struct gp_owner *o, uint64_t lib,
					       uint64_t ctx);
/* The most one of the library's modules was measured to cost (0: none measured yet). */
uint64_t gp_owner_libinst_cost(const struct gp_owner *o, uint64_t lib);
/* Drops the records of a library (lib != 0) or of a context (ctx != 0), and their charges. */
void gp_owner_libinst_forget(struct gp_owner *o, uint64_t lib, uint64_t ctx);

#endif
