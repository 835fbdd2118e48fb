/* test_owner.c -- a session's ownership tables: handle generations, ranges, charges. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "owner.h"

#define KIND_A 1
#define KIND_B 2
#define TOP UINT64_MAX

static int setup(void **state)
{
	struct gp_owner *o = malloc(sizeof(*o));

	if (!o)
		return -1;
	gp_owner_init(o, 0, 0);
	*state = o;
	return 0;
}

static int teardown(void **state)
{
	gp_owner_deinit(*state);
	free(*state);
	return 0;
}

/* ---- invalid arguments first ---- */

static void test_handle_invalid(void **state)
{
	struct gp_owner *o = *state;
	struct gp_handle other = {.kind = KIND_A};
	void *aux = &aux;
	uint64_t id;

	assert_int_equal(gp_owner_handle_new(NULL, KIND_A, NULL), 0);
	assert_int_equal(gp_owner_handle_new(o, 0, NULL), 0); /* 0 marks a free slot */
	assert_int_equal(gp_owner_handle_new(o, GP_OWNER_KIND_MAX + 1, NULL), 0);
	assert_null(gp_owner_handle_get(NULL, 1, KIND_A));
	assert_null(gp_owner_handle_get(o, 0, 0));
	assert_null(gp_owner_handle_get(o, (uint64_t)KIND_A << 56 | 1ull << 32 | 1, KIND_A));
	assert_int_equal(gp_owner_handle_id(o, NULL), 0);
	assert_int_equal(gp_owner_handle_id(NULL, &other), 0);
	assert_int_equal(gp_owner_handle_free(o, 12345, &aux), -ENOENT);
	assert_null(aux);
	assert_int_equal(gp_owner_handle_free(NULL, 12345, NULL), -ENOENT);

	id = gp_owner_handle_new(o, KIND_A, &other);
	assert_int_not_equal(id, 0);
	/* wrong kind, wrong slot, a pointer that is not in the table, or not at a slot */
	assert_null(gp_owner_handle_get(o, id, KIND_B));
	assert_null(gp_owner_handle_get(o, id + 1, KIND_A));
	assert_null(gp_owner_handle_get(o, id & ~0xffffffffull, KIND_A)); /* slot 0 */
	assert_int_equal(gp_owner_handle_id(o, &other), 0);
	assert_int_equal(gp_owner_handle_id(o, (struct gp_handle *)((char *)o->handles + 1)), 0);
	assert_int_equal(gp_owner_handle_id(o, &o->handles[1]), 0); /* never used */
}

static void test_alloc_invalid(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(NULL, 0x1000, 16, 1, 0), -EINVAL);
	assert_int_equal(gp_owner_alloc_add(o, 0x1000, 0, 1, 0), -EINVAL);
	assert_int_equal(gp_owner_global_add(NULL, 0x1000, 16, 1, 7), -EINVAL);
	assert_int_equal(gp_owner_global_add(o, 0x1000, 16, 1, 0), -EINVAL); /* no module */
	assert_int_equal(o->nallocs, 0);
	assert_int_equal(o->mem_used, 0);
	assert_null(gp_owner_alloc_find(NULL, 0x1000));
	assert_null(gp_owner_alloc_find(o, 0x1000));
	assert_false(gp_owner_range(NULL, 0x1000, 0));
	assert_false(gp_owner_range(o, 0, 0));
	assert_false(gp_owner_range2d(NULL, 0x1000, 16, 16, 2));
	gp_owner_alloc_remove(o, NULL); /* ignored */
	gp_owner_alloc_remove(NULL, NULL);
	gp_owner_alloc_forget(o, 0, 0);
}

static void test_charge_invalid(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_charge(NULL, 0, 1), -EINVAL);
	assert_int_equal(gp_owner_charge(o, -1, 1), -EINVAL);
	assert_int_equal(gp_owner_charge(o, GP_STATS_MAX_DEVICES, 1), -EINVAL);
	assert_int_equal(gp_owner_libinst_add(o, 0, 1, 0, 10, true), -EINVAL);
	assert_int_equal(gp_owner_libinst_add(o, 1, 0, 0, 10, true), -EINVAL);
	assert_int_equal(gp_owner_libinst_add(NULL, 1, 1, 0, 10, true), -EINVAL);
	assert_null(gp_owner_libinst_find(NULL, 1, 1));
	assert_int_equal(gp_owner_libinst_cost(NULL, 1), 0);
	gp_owner_libinst_forget(NULL, 1, 1);
	assert_int_equal(o->mem_used, 0);
	gp_owner_deinit(NULL);
}

/* ---- handles ---- */

static void test_handle_new_get_id(void **state)
{
	struct gp_owner *o = *state;
	int x, y;
	uint64_t a = gp_owner_handle_new(o, KIND_A, &x);
	uint64_t b = gp_owner_handle_new(o, KIND_B, &y);
	struct gp_handle *ha = gp_owner_handle_get(o, a, KIND_A);

	assert_int_not_equal(a, b);
	assert_int_equal(gp_owner_id_kind(a), KIND_A);
	assert_int_equal(gp_owner_id_kind(b), KIND_B);
	assert_non_null(ha);
	assert_ptr_equal(ha->ptr, &x);
	assert_int_equal(ha->device, -1);
	assert_int_equal(ha->charge, 0);
	assert_ptr_equal(gp_owner_handle_get(o, b, KIND_B)->ptr, &y);
	assert_int_equal(gp_owner_handle_id(o, ha), a);
	assert_int_equal(o->nhandles, 2);
}

/* A stale id keeps failing after its slot is reused, and cannot free the new object. */
static void test_handle_reuse_refuses_stale(void **state)
{
	struct gp_owner *o = *state;
	int x, y;
	uint64_t old = gp_owner_handle_new(o, KIND_A, &x), fresh;
	void *aux;

	gp_owner_handle_get(o, old, KIND_A)->aux = &x;
	assert_int_equal(gp_owner_handle_free(o, old, &aux), 0);
	assert_ptr_equal(aux, &x); /* handed back for the caller to free */
	assert_null(gp_owner_handle_get(o, old, KIND_A));
	assert_int_equal(gp_owner_handle_free(o, old, NULL), -ENOENT); /* twice */

	fresh = gp_owner_handle_new(o, KIND_A, &y);
	assert_int_equal(o->nhandles, 1); /* the same slot */
	assert_int_equal(fresh & 0xffffffffu, old & 0xffffffffu);
	assert_int_not_equal(fresh, old);
	assert_null(gp_owner_handle_get(o, old, KIND_A));
	assert_int_equal(gp_owner_handle_free(o, old, NULL), -ENOENT);
	assert_ptr_equal(gp_owner_handle_get(o, fresh, KIND_A)->ptr, &y);

	/* Reused as another kind: neither the old id nor the old kind names it. */
	assert_int_equal(gp_owner_handle_free(o, fresh, NULL), 0);
	fresh = gp_owner_handle_new(o, KIND_B, &y);
	assert_null(gp_owner_handle_get(o, old, KIND_A));
	assert_null(gp_owner_handle_get(o, (fresh & ~(0xffull << 56)) | (uint64_t)KIND_A << 56,
					KIND_A));
	assert_non_null(gp_owner_handle_get(o, fresh, KIND_B));
}

/* Live handles are counted per kind, for the worker's per-session caps. */
static void test_handle_counts(void **state)
{
	struct gp_owner *o = *state;
	int x;
	uint64_t a = gp_owner_handle_new(o, KIND_A, &x);
	uint64_t a2 = gp_owner_handle_new(o, KIND_A, &x);

	gp_owner_handle_new(o, KIND_B, &x);
	assert_int_equal(gp_owner_count(o, KIND_A), 2);
	assert_int_equal(gp_owner_count(o, KIND_B), 1);
	assert_int_equal(gp_owner_handle_free(o, a, NULL), 0);
	assert_int_equal(gp_owner_handle_free(o, a, NULL), -ENOENT); /* not counted twice */
	assert_int_equal(gp_owner_count(o, KIND_A), 1);
	assert_int_equal(gp_owner_handle_free(o, a2, NULL), 0);
	assert_int_equal(gp_owner_count(o, KIND_A), 0);
	assert_int_equal(gp_owner_count(o, GP_OWNER_COUNTED), 0);
	assert_int_equal(gp_owner_count(NULL, KIND_A), 0);
}

/* The lowest free slot is reused first; others keep their ids. */
static void test_handle_free_slot_order(void **state)
{
	struct gp_owner *o = *state;
	uint64_t id[4];

	for (int i = 0; i < 4; i++)
		id[i] = gp_owner_handle_new(o, KIND_A, NULL);
	gp_owner_handle_free(o, id[2], NULL);
	gp_owner_handle_free(o, id[1], NULL);
	assert_int_equal(gp_owner_handle_new(o, KIND_A, NULL) & 0xffffffffu, 2);
	assert_int_equal(gp_owner_handle_new(o, KIND_A, NULL) & 0xffffffffu, 3);
	assert_int_equal(gp_owner_handle_new(o, KIND_A, NULL) & 0xffffffffu, 5);
	assert_non_null(gp_owner_handle_get(o, id[0], KIND_A));
	assert_non_null(gp_owner_handle_get(o, id[3], KIND_A));
}

/* The bug class this guards: a handle pointer held across gp_owner_handle_new. */
static void test_handle_pointers_stay_put(void **state)
{
	struct gp_owner *o = *state;
	uint64_t first = gp_owner_handle_new(o, KIND_A, NULL);
	struct gp_handle *h = gp_owner_handle_get(o, first, KIND_A);

	h->device = 3;
	for (int i = 0; i < 10000; i++)
		assert_int_not_equal(gp_owner_handle_new(o, KIND_B, NULL), 0);
	assert_ptr_equal(gp_owner_handle_get(o, first, KIND_A), h);
	h->parent = 42; /* still the live slot (ASan would catch a moved table) */
	assert_int_equal(gp_owner_handle_get(o, first, KIND_A)->parent, 42);
	assert_int_equal(gp_owner_handle_get(o, first, KIND_A)->device, 3);
}

/* Freeing a handle releases what it was charged, on its device. */
static void test_handle_free_releases_charges(void **state)
{
	struct gp_owner *o = *state;
	uint64_t id = gp_owner_handle_new(o, KIND_A, NULL);
	struct gp_handle *h = gp_owner_handle_get(o, id, KIND_A);

	h->device = 1;
	h->charge = 1000;
	h->limit_charge[0] = 10;
	h->limit_charge[2] = 5;
	assert_int_equal(gp_owner_charge(o, 1, 1015), 0);
	assert_int_equal(o->dev_used[1], 1015);
	assert_int_equal(gp_owner_handle_free(o, id, NULL), 0);
	assert_int_equal(o->dev_used[1], 0);
	assert_int_equal(o->mem_used, 0);
	assert_int_equal(o->mem_peak, 1015);
	/* the slot comes back clean */
	id = gp_owner_handle_new(o, KIND_A, NULL);
	h = gp_owner_handle_get(o, id, KIND_A);
	assert_int_equal(h->charge + h->limit_charge[0] + h->limit_charge[2], 0);
	assert_int_equal(h->device, -1);
}

/* ---- allocations and ranges ---- */

static void test_alloc_overlap_refused(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(o, 0x1000, 0x1000, 1, 0), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0x1000, 0x1000, 1, 0), -EEXIST); /* same */
	assert_int_equal(gp_owner_alloc_add(o, 0x1800, 0x1000, 1, 0), -EEXIST); /* its end */
	assert_int_equal(gp_owner_alloc_add(o, 0x0800, 0x1000, 1, 0), -EEXIST); /* its start */
	assert_int_equal(gp_owner_alloc_add(o, 0x1100, 0x10, 1, 0), -EEXIST);	/* inside */
	assert_int_equal(gp_owner_alloc_add(o, 0x0, 0x10000, 1, 0), -EEXIST);	/* around */
	assert_int_equal(gp_owner_alloc_add(o, 0x1fff, 1, 1, 0), -EEXIST);	/* last byte */
	assert_int_equal(gp_owner_global_add(o, 0x1ff0, 0x20, 1, 9), -EEXIST);
	assert_int_equal(o->nallocs, 1);
	assert_int_equal(o->mem_used, 0x1000);
	assert_int_equal(o->dev_used[0], 0x1000);
}

static void test_alloc_adjacent_and_ranges(void **state)
{
	struct gp_owner *o = *state;

	/* added out of order; [0x1000,0x2000) [0x2000,0x3000) and [0x800,0x1000) touch */
	assert_int_equal(gp_owner_alloc_add(o, 0x2000, 0x1000, 1, 0), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0x1000, 0x1000, 1, 1), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0x800, 0x800, 1, 0), 0);
	assert_int_equal(o->nallocs, 3);
	for (size_t i = 1; i < o->nallocs; i++)
		assert_true(o->allocs[i - 1].ptr < o->allocs[i].ptr);
	assert_int_equal(gp_owner_alloc_find(o, 0x1fff)->ptr, 0x1000);
	assert_int_equal(gp_owner_alloc_find(o, 0x2000)->ptr, 0x2000);
	assert_null(gp_owner_alloc_find(o, 0x7ff));
	assert_null(gp_owner_alloc_find(o, 0x3000));

	assert_true(gp_owner_range(o, 0x1000, 0x1000));
	assert_true(gp_owner_range(o, 0x1800, 0x800));	/* up to the end exactly */
	assert_false(gp_owner_range(o, 0x1800, 0x801)); /* into the next: two allocations */
	assert_false(gp_owner_range(o, 0x800, 0x2000));
	assert_true(gp_owner_range(o, 0x2fff, 1));
	assert_true(gp_owner_range(o, 0x2fff, 0));
	assert_false(gp_owner_range(o, 0x3000, 0)); /* one past the end owns nothing */
	assert_false(gp_owner_range(o, 0x2fff, 2));
	assert_false(gp_owner_range(o, 0x1000, TOP));
	assert_int_equal(o->dev_used[0], 0x1800);
	assert_int_equal(o->dev_used[1], 0x1000);
}

/* Nothing may wrap the top of the address space; ending exactly at it is fine. */
static void test_ranges_that_wrap(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(o, TOP - 0xf, 0x11, 1, 0), -EINVAL);
	assert_int_equal(gp_owner_alloc_add(o, TOP, 2, 1, 0), -EINVAL);
	assert_int_equal(gp_owner_alloc_add(o, 0x10, TOP, 1, 0), -EINVAL);
	assert_int_equal(gp_owner_global_add(o, TOP - 0xf, 0x20, 1, 9), -EINVAL);
	assert_int_equal(gp_owner_alloc_add(o, TOP - 0xf, 0x10, 1, 0), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0, 0x10, 1, 0), 0); /* the bottom, too */

	assert_true(gp_owner_range(o, TOP - 0xf, 0x10));
	assert_true(gp_owner_range(o, TOP, 1));
	assert_false(gp_owner_range(o, TOP, 2));
	assert_false(gp_owner_range(o, TOP - 0xf, 0x11));
	assert_false(gp_owner_range(o, TOP - 0xf, TOP));
	assert_false(gp_owner_range(o, TOP - 0x8, 0x18)); /* would come round to [0, 0x10) */
	assert_false(gp_owner_range2d(o, TOP - 0xf, 0x8, 0x8, 3));
	assert_true(gp_owner_range2d(o, TOP - 0xf, 0x8, 0x8, 2));
}

static void test_range2d(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(o, 0x10000, 2048, 1, 0), 0);
	/* 4 rows of 256 bytes, 512 apart: the extent is 3 * 512 + 256 */
	assert_true(gp_owner_range2d(o, 0x10000, 512, 256, 4));
	assert_true(gp_owner_range2d(o, 0x10000 + 256, 512, 256, 4)); /* ends at the end */
	assert_false(gp_owner_range2d(o, 0x10000 + 257, 512, 256, 4));
	assert_false(gp_owner_range2d(o, 0x10000, 512, 256, 5));
	assert_false(gp_owner_range2d(o, 0x0fff0, 512, 256, 2)); /* starts before */
	/* rows that overlap, or a pitch of 0, are no 2-D range */
	assert_false(gp_owner_range2d(o, 0x10000, 128, 256, 2));
	assert_false(gp_owner_range2d(o, 0x10000, 0, 16, 2));
	/* one row: the pitch does not matter */
	assert_true(gp_owner_range2d(o, 0x10000, 0, 2048, 1));
	assert_false(gp_owner_range2d(o, 0x10000, 0, 2049, 1));
	/* nothing touched: as a 1-D range of 0 */
	assert_true(gp_owner_range2d(o, 0x10000, 512, 0, 4));
	assert_true(gp_owner_range2d(o, 0x10000, 512, 256, 0));
	assert_false(gp_owner_range2d(o, 0x20000, 512, 256, 0));
}

/* pitch * height past 2^64: the wrapped product would look small and owned. */
static void test_range2d_overflow(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(o, 0x10000, 0x1000, 1, 0), 0);
	/* (3 - 1) * 2^63 wraps to 0: a naive extent of 16 bytes */
	assert_false(gp_owner_range2d(o, 0x10000, 1ull << 63, 16, 3));
	/* (2^32 + 1 - 1) * 2^32 = 2^64 */
	assert_false(gp_owner_range2d(o, 0x10000, 1ull << 32, 1, (1ull << 32) + 1));
	/* (height - 1) * pitch fits, + width does not */
	assert_false(gp_owner_range2d(o, 0x10000, TOP - 1, 2, 2));
	assert_false(gp_owner_range2d(o, 0x10000, TOP, TOP, TOP));
	assert_false(gp_owner_range2d(o, 0x10000, 1, 1, TOP));
}

static void test_globals(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_global_add(o, 0x5000, 64, 1, 7), 0);
	assert_int_equal(gp_owner_global_add(o, 0x5000, 64, 1, 7), 0); /* asked for twice */
	assert_int_equal(o->nallocs, 1);
	assert_int_equal(gp_owner_global_add(o, 0x5000, 64, 1, 8), -EEXIST); /* another's */
	assert_int_equal(o->mem_used, 0);				     /* not counted */
	assert_true(gp_owner_range(o, 0x5000, 64));

	/* a size-0 global owns only its address, and no byte of anything else */
	assert_int_equal(gp_owner_global_add(o, 0x6000, 0, 1, 7), 0);
	assert_int_equal(gp_owner_global_add(o, 0x5020, 0, 1, 7), 0); /* inside another */
	assert_true(gp_owner_range(o, 0x6000, 0));
	assert_false(gp_owner_range(o, 0x6000, 1));
	assert_true(gp_owner_range(o, 0x5020, 0x20)); /* the sized one still contains it */
	assert_int_equal(gp_owner_alloc_find(o, 0x5020)->size, 64);
	assert_int_equal(gp_owner_alloc_add(o, 0x6000, 16, 1, 0), 0); /* a point holds no byte */
	assert_int_equal(gp_owner_alloc_find(o, 0x6000)->size, 16);
}

static void test_alloc_remove_and_forget(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_alloc_add(o, 0x1000, 100, 1, 0), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0x2000, 200, 2, 0), 0);
	assert_int_equal(gp_owner_alloc_add(o, 0x3000, 300, 1, 1), 0);
	assert_int_equal(gp_owner_global_add(o, 0x4000, 64, 1, 7), 0);
	assert_int_equal(gp_owner_global_add(o, 0x5000, 64, 2, 8), 0);
	assert_int_equal(o->mem_used, 600);
	assert_int_equal(o->mem_peak, 600);

	gp_owner_alloc_remove(o, gp_owner_alloc_find(o, 0x2000));
	assert_int_equal(o->mem_used, 400);
	assert_null(gp_owner_alloc_find(o, 0x2000));
	assert_false(gp_owner_range(o, 0x2000, 1));

	gp_owner_alloc_forget(o, 0, 8); /* module 8's globals only */
	assert_null(gp_owner_alloc_find(o, 0x5000));
	assert_int_equal(o->nallocs, 3);
	gp_owner_alloc_forget(o, 1, 0); /* everything of context 1 */
	assert_int_equal(o->nallocs, 0);
	assert_int_equal(o->mem_used, 0);
	assert_int_equal(o->dev_used[0], 0);
	assert_int_equal(o->dev_used[1], 0);
	assert_int_equal(o->mem_peak, 600);
}

static void test_pooled(void **state)
{
	struct gp_owner *o = *state;
	uint64_t pool = gp_owner_handle_new(o, 11, (void *)0x99);
	struct gp_handle *h = gp_owner_handle_get(o, pool, 11);

	assert_int_equal(gp_owner_pooled_add(o, 0x1000, 100, 1, 0, 0), -EINVAL); /* no pool */
	assert_int_equal(gp_owner_pooled_add(o, 0x1000, 0, 1, 0, pool), -EINVAL);
	/* the pool's charge counts what it holds, its allocations only make ranges ownable */
	h->device = 0;
	h->charge = 4096;
	assert_int_equal(gp_owner_charge(o, 0, 4096), 0);
	assert_int_equal(gp_owner_pooled_add(o, 0x1000, 100, 1, 0, pool), 0);
	assert_int_equal(gp_owner_pooled_add(o, 0x1050, 10, 1, 0, pool), -EEXIST);
	assert_true(gp_owner_range(o, 0x1000, 100));
	assert_false(gp_owner_range(o, 0x1000, 101));
	assert_int_equal(o->dev_used[0], 4096);
	assert_int_equal(gp_owner_alloc_find(o, 0x1010)->pool, pool);
	gp_owner_alloc_remove(o, gp_owner_alloc_find(o, 0x1000));
	assert_false(gp_owner_range(o, 0x1000, 1));
	assert_int_equal(o->dev_used[0], 4096); /* still held by the pool */
	assert_int_equal(gp_owner_handle_free(o, pool, NULL), 0);
	assert_int_equal(o->dev_used[0], 0);
	assert_int_equal(o->mem_used, 0);
}

static void test_graphmem(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_graphmem_add(o, 0x1000, 100, 1, 0, 0), -EINVAL); /* no graph */
	assert_int_equal(gp_owner_graphmem_add(o, 0x1000, 0, 1, 0, 0x77), -EINVAL);
	/* ownable, not counted: the executable graphs carry the charge */
	assert_int_equal(gp_owner_graphmem_add(o, 0x1000, 100, 1, 0, 0x77), 0);
	assert_int_equal(gp_owner_graphmem_add(o, 0x2000, 50, 1, 0, 0x77), 0);
	assert_int_equal(gp_owner_graphmem_add(o, 0x3000, 50, 1, 0, 0x88), 0);
	assert_int_equal(gp_owner_graphmem_add(o, 0x1050, 10, 1, 0, 0x88), -EEXIST);
	assert_true(gp_owner_range(o, 0x1000, 100));
	assert_int_equal(o->dev_used[0], 0);
	assert_int_equal(o->mem_used, 0);
	assert_int_equal(gp_owner_alloc_find(o, 0x2010)->graph, 0x77);
	/* one graph's ranges go with it, the other's stay */
	gp_owner_graphmem_forget(o, 0x77);
	assert_false(gp_owner_range(o, 0x1000, 1));
	assert_false(gp_owner_range(o, 0x2000, 1));
	assert_true(gp_owner_range(o, 0x3000, 50));
	gp_owner_graphmem_forget(o, 0);
	assert_true(gp_owner_range(o, 0x3000, 50));
	/* a graph that is gone leaves its ranges, orphaned; the driver giving an address out
	 * again drops the orphan there, a live graph's range is never displaced */
	assert_int_equal(gp_owner_graphmem_add(o, 0x4000, 64, 1, 0, 0x99), 0);
	gp_owner_graphmem_orphan(o, 0x88);
	assert_int_equal(gp_owner_alloc_find(o, 0x3000)->graph, 0x88 | GP_GRAPHMEM_ORPHAN);
	assert_true(gp_owner_range(o, 0x3000, 50));
	assert_int_equal(gp_owner_graphmem_add(o, 0x3000, 10, 1, 0, 0x88 | GP_GRAPHMEM_ORPHAN),
			 -EINVAL);
	assert_int_equal(gp_owner_graphmem_add(o, 0x3fc0, 0x80, 1, 0, 0xaa), -EEXIST);
	assert_int_equal(gp_owner_graphmem_add(o, 0x2ff0, 0x20, 1, 0, 0xaa), 0);
	assert_int_equal(gp_owner_alloc_find(o, 0x3000)->graph, 0xaa);
	assert_false(gp_owner_range(o, 0x3010, 1)); /* the orphan's rest went with it */
	assert_int_equal(gp_owner_alloc_add(o, 0x5000, 16, 1, 0), 0);
	gp_owner_graphmem_orphan(o, 0x99);
	/* an ordinary allocation is never displaced either */
	assert_int_equal(gp_owner_graphmem_add(o, 0x4ff0, 0x20, 1, 0, 0xbb), -EEXIST);
	assert_true(gp_owner_range(o, 0x4000, 64));
	gp_owner_alloc_remove(o, gp_owner_alloc_find(o, 0x5000));
	gp_owner_alloc_remove(o, gp_owner_alloc_find(o, 0x4000));
	gp_owner_alloc_remove(o, gp_owner_alloc_find(o, 0x2ff0));
	assert_int_equal(o->dev_used[0], 0);
	assert_int_equal(o->nallocs, 0);
}

/* ---- charges and limits ---- */

static void test_charge_limit(void **state)
{
	struct gp_owner *o = *state;

	assert_true(gp_owner_charge_fits(o, 0, TOP)); /* no limit */
	o->mem_limit = 1000;
	assert_true(gp_owner_charge_fits(o, 0, 1000));
	assert_false(gp_owner_charge_fits(o, 0, 1001));
	assert_false(gp_owner_charge_fits(o, 0, TOP));
	assert_int_equal(gp_owner_charge(o, 0, 600), 0);
	assert_true(gp_owner_charge_fits(o, 0, 400));
	assert_false(gp_owner_charge_fits(o, 0, 401));
	assert_true(gp_owner_charge_fits(o, 1, 1000)); /* per device */
	assert_true(gp_owner_charge_fits(o, -1, TOP));

	/* releasing more than is held changes nothing */
	assert_int_equal(gp_owner_charge(o, 0, -601), -ERANGE);
	assert_int_equal(gp_owner_charge(o, 0, INT64_MIN), -ERANGE);
	assert_int_equal(o->dev_used[0], 600);
	assert_int_equal(gp_owner_charge(o, 1, -1), -ERANGE);
	assert_int_equal(gp_owner_charge(o, 0, -600), 0);
	assert_int_equal(o->mem_used, 0);
	assert_int_equal(o->mem_peak, 600);

	/* nor does counting past 2^64 */
	assert_int_equal(gp_owner_charge(o, 2, INT64_MAX), 0);
	assert_int_equal(gp_owner_charge(o, 2, INT64_MAX), 0);
	assert_int_equal(gp_owner_charge(o, 2, 2), -ERANGE);
	assert_int_equal(o->dev_used[2], TOP - 1);
}

static void test_libinst_charges(void **state)
{
	struct gp_owner *o = *state;

	assert_int_equal(gp_owner_libinst_add(o, 5, 1, 0, 100, true), 0);
	assert_int_equal(gp_owner_libinst_add(o, 5, 2, 1, 300, true), 0);
	assert_int_equal(gp_owner_libinst_add(o, 6, 1, 0, 50, false), 0);
	assert_int_equal(o->dev_used[0], 150);
	assert_int_equal(o->dev_used[1], 300);
	assert_int_equal(gp_owner_libinst_cost(o, 5), 300);
	assert_int_equal(gp_owner_libinst_cost(o, 7), 0);
	assert_false(gp_owner_libinst_find(o, 6, 1)->usable);
	assert_null(gp_owner_libinst_find(o, 6, 2));

	gp_owner_libinst_forget(o, 0, 1); /* context 1 goes: both libraries' modules there */
	assert_null(gp_owner_libinst_find(o, 5, 1));
	assert_null(gp_owner_libinst_find(o, 6, 1));
	assert_non_null(gp_owner_libinst_find(o, 5, 2));
	assert_int_equal(o->dev_used[0], 0);
	gp_owner_libinst_forget(o, 5, 0); /* library 5 unloaded */
	assert_int_equal(o->nlibinst, 0);
	assert_int_equal(o->mem_used, 0);
}

static void test_handle_limit(void **state)
{
	struct gp_owner o;
	uint64_t id[3];

	gp_owner_init(&o, 3, 0);
	for (int i = 0; i < 3; i++) {
		id[i] = gp_owner_handle_new(&o, KIND_A, NULL);
		assert_int_not_equal(id[i], 0);
	}
	assert_int_equal(gp_owner_handle_new(&o, KIND_A, NULL), 0); /* full */
	assert_int_equal(gp_owner_handle_free(&o, id[1], NULL), 0);
	assert_int_not_equal(gp_owner_handle_new(&o, KIND_A, NULL), 0);
	assert_int_equal(gp_owner_handle_new(&o, KIND_A, NULL), 0);
	gp_owner_deinit(&o);
}

/* A slot whose generation would wrap is retired, so no stale id can ever match again. */
static void test_handle_generation_retires(void **state)
{
	struct gp_owner *o = *state;
	uint64_t id = gp_owner_handle_new(o, KIND_A, NULL), last;

	gp_owner_handle_free(o, id, NULL);
	o->handles[0].gen = GP_OWNER_GEN_MAX - 1; /* as after 2^20 - 2 more uses */
	last = gp_owner_handle_new(o, KIND_A, NULL);
	assert_int_equal(last & 0xffffffffu, 1);
	assert_int_equal((last >> 32) & GP_OWNER_GEN_MAX, GP_OWNER_GEN_MAX);
	assert_non_null(gp_owner_handle_get(o, last, KIND_A));
	gp_owner_handle_free(o, last, NULL);
	id = gp_owner_handle_new(o, KIND_A, NULL);
	assert_int_equal(id & 0xffffffffu, 2); /* slot 1 is not reused */
	assert_null(gp_owner_handle_get(o, last, KIND_A));
	assert_int_equal(o->handles[0].kind, 0);
}

/* A handle carries its owner's tag (the session's address window): one of another tag,
 * otherwise alike, is no handle of this session's. */
static void test_handle_tag(void **state)
{
	struct gp_owner *o = *state;
	uint64_t id, other;

	o->tag = 3;
	id = gp_owner_handle_new(o, KIND_A, NULL);
	assert_int_equal(GP_VA_HANDLE_TAG(id), 3);
	assert_int_equal(id >> 56, KIND_A);
	assert_non_null(gp_owner_handle_get(o, id, KIND_A));
	assert_int_equal(gp_owner_handle_id(o, gp_owner_handle_get(o, id, KIND_A)), id);
	other = (id & ~((uint64_t)GP_VA_HANDLE_TAG_MAX << GP_VA_HANDLE_SHIFT)) |
		(uint64_t)4 << GP_VA_HANDLE_SHIFT;
	assert_null(gp_owner_handle_get(o, other, KIND_A));
	assert_int_equal(gp_owner_handle_free(o, other, NULL), -ENOENT);
	o->tag = 0;
	assert_null(gp_owner_handle_get(o, id, KIND_A));
	o->tag = 3;
	assert_int_equal(gp_owner_handle_free(o, id, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handle_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charge_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_new_get_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_reuse_refuses_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_free_slot_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_pointers_stay_put, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_free_releases_charges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_overlap_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_adjacent_and_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges_that_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range2d, setup, teardown),
		cmocka_unit_test_setup_teardown(test_range2d_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_globals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alloc_remove_and_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pooled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_graphmem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_charge_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_libinst_charges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_tag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_generation_retires, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
