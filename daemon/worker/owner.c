/* owner.c -- what one session owns, with no I/O: handles, device allocations, charges. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "owner.h"

#define ID_SLOT(id) ((uint32_t)((id)&0xffffffffu))
#define ID_GEN(id) ((uint32_t)(((id) >> 32) & GP_OWNER_GEN_MAX))
#define ID_KIND(id) ((uint32_t)((id) >> 56))
#define ID_TAG(id) ((uint32_t)((id) >> GP_VA_HANDLE_SHIFT) & GP_VA_HANDLE_TAG_MAX)

void gp_owner_init(struct gp_owner *o, uint32_t max_handles, uint64_t mem_limit)
{
	memset(o, 0, sizeof(*o));
	o->max_handles = max_handles;
	o->mem_limit = mem_limit;
}

static uint32_t max_handles(const struct gp_owner *o)
{
	return o->max_handles ? o->max_handles : GP_OWNER_MAX_HANDLES;
}

void gp_owner_deinit(struct gp_owner *o)
{
	if (!o)
		return;
	if (o->handles)
		munmap(o->handles, (size_t)max_handles(o) * sizeof(*o->handles));
	free(o->allocs);
	free(o->libinst);
	o->handles = NULL;
	o->allocs = NULL;
	o->libinst = NULL;
	o->nhandles = o->free_hint = 0;
	o->nallocs = o->cap_allocs = 0;
	o->nlibinst = o->cap_libinst = 0;
}

/* ---- handles ------------------------------------------------------------------ */

/* The whole table at once, so that no handle ever moves; untouched pages cost nothing. */
static int reserve_handles(struct gp_owner *o)
{
	void *p = mmap(NULL, (size_t)max_handles(o) * sizeof(*o->handles), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	o->handles = p;
	return 0;
}

uint64_t gp_owner_handle_new(struct gp_owner *o, uint32_t kind, void *ptr)
{
	struct gp_handle *h;
	uint32_t i;

	if (!o || kind == 0 || kind > GP_OWNER_KIND_MAX)
		return 0;
	if (!o->handles && reserve_handles(o))
		return 0;
	for (i = o->free_hint; i < o->nhandles; i++)
		if (o->handles[i].kind == 0 && o->handles[i].gen < GP_OWNER_GEN_MAX)
			break;
	if (i == o->nhandles) {
		if (o->nhandles == max_handles(o))
			return 0;
		o->nhandles++; /* a fresh slot: zero, as mmap made it */
	}
	o->free_hint = i + 1;
	h = &o->handles[i];
	*h = (struct gp_handle){.kind = kind, .gen = h->gen + 1, .ptr = ptr, .device = -1};
	if (kind < GP_OWNER_COUNTED)
		o->live[kind]++;
	return (uint64_t)kind << 56 | (uint64_t)o->tag << GP_VA_HANDLE_SHIFT |
	       (uint64_t)h->gen << 32 | (uint64_t)(i + 1);
}

struct gp_handle *gp_owner_handle_get(const struct gp_owner *o, uint64_t id, uint32_t kind)
{
	uint32_t slot = ID_SLOT(id);
	struct gp_handle *h;

	if (!o || kind == 0 || ID_KIND(id) != kind || ID_TAG(id) != o->tag || slot == 0 ||
	    slot > o->nhandles)
		return NULL;
	h = &o->handles[slot - 1];
	if (h->kind != kind || h->gen != ID_GEN(id))
		return NULL;
	return h;
}

uint64_t gp_owner_handle_id(const struct gp_owner *o, const struct gp_handle *h)
{
	uintptr_t at, base;

	if (!o || !h || !o->handles)
		return 0;
	at = (uintptr_t)h;
	base = (uintptr_t)o->handles;
	if (at < base || at >= base + (uintptr_t)o->nhandles * sizeof(*h) ||
	    (at - base) % sizeof(*h) || h->kind == 0)
		return 0;
	return (uint64_t)h->kind << 56 | (uint64_t)o->tag << GP_VA_HANDLE_SHIFT |
	       (uint64_t)h->gen << 32 |
	       (uint64_t)((at - base) / sizeof(*h) + 1);
}

uint32_t gp_owner_count(const struct gp_owner *o, uint32_t kind)
{
	return o && kind < GP_OWNER_COUNTED ? o->live[kind] : 0;
}

uint32_t gp_owner_id_kind(uint64_t id)
{
	return ID_KIND(id);
}

int gp_owner_handle_free(struct gp_owner *o, uint64_t id, void **aux)
{
	struct gp_handle *h = gp_owner_handle_get(o, id, ID_KIND(id));
	uint32_t slot = ID_SLOT(id) - 1;

	if (aux)
		*aux = NULL;
	if (!h)
		return -ENOENT;
	/* What the object cost on the device goes with it. */
	gp_owner_charge(o, h->device,
			-(int64_t)(h->charge + h->limit_charge[0] + h->limit_charge[1] +
				   h->limit_charge[2]));
	if (aux)
		*aux = h->aux;
	if (h->kind < GP_OWNER_COUNTED)
		o->live[h->kind]--;
	/* The generation stays: the next use of the slot moves it on. */
	*h = (struct gp_handle){.gen = h->gen};
	if (slot < o->free_hint)
		o->free_hint = slot;
	return 0;
}

/* ---- allocations -------------------------------------------------------------- */

/* The last byte of [ptr, ptr+size), size > 0; false when the range wraps. */
static bool last_byte(uint64_t ptr, uint64_t size, uint64_t *last)
{
	if (size - 1 > UINT64_MAX - ptr)
		return false;
	*last = ptr + (size - 1);
	return true;
}

/* Index of the first entry whose ptr is > p. */
static size_t upper_bound(const struct gp_owner *o, uint64_t p)
{
	size_t lo = 0, hi = o->nallocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->allocs[mid].ptr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a sized entry overlaps [ptr, last]. Sized entries never overlap one another, so
 * only the one starting last at or below `last` can (size-0 entries hold no bytes). */
static bool overlaps(const struct gp_owner *o, uint64_t ptr, uint64_t last)
{
	for (size_t i = upper_bound(o, last); i-- > 0;) {
		const struct gp_alloc *a = &o->allocs[i];

		if (a->size == 0)
			continue;
		return a->ptr + (a->size - 1) >= ptr;
	}
	return false;
}

static int insert(struct gp_owner *o, const struct gp_alloc *a)
{
	uint64_t last;
	size_t at;

	if (a->size && !last_byte(a->ptr, a->size, &last))
		return -EINVAL;
	if (a->size && overlaps(o, a->ptr, last))
		return -EEXIST;
	if (o->nallocs == o->cap_allocs) {
		size_t cap = o->cap_allocs ? o->cap_allocs * 2 : 64;
		struct gp_alloc *na = realloc(o->allocs, cap * sizeof(*na));

		if (!na)
			return -ENOMEM;
		o->allocs = na;
		o->cap_allocs = cap;
	}
	at = upper_bound(o, a->ptr);
	memmove(&o->allocs[at + 1], &o->allocs[at], (o->nallocs - at) * sizeof(*o->allocs));
	o->allocs[at] = *a;
	o->nallocs++;
	return 0;
}

int gp_owner_alloc_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device)
{
	struct gp_alloc a = {ptr, size, ctx, device, 0, 0, 0};
	int ret;

	if (!o || size == 0)
		return -EINVAL;
	ret = insert(o, &a);
	if (ret)
		return ret;
	if (device >= 0 && device < GP_STATS_MAX_DEVICES)
		o->dev_used[device] += size;
	o->mem_used += size;
	if (o->mem_used > o->mem_peak)
		o->mem_peak = o->mem_used;
	return 0;
}

int gp_owner_global_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx,
			uint64_t module)
{
	struct gp_alloc a = {ptr, size, ctx, -1, module, 0, 0};

	if (!o || module == 0)
		return -EINVAL;
	for (size_t i = upper_bound(o, ptr); i-- > 0 && o->allocs[i].ptr == ptr;)
		if (o->allocs[i].module == module)
			return 0; /* asked for twice */
	return insert(o, &a);
}

int gp_owner_pooled_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device,
			uint64_t pool)
{
	struct gp_alloc a = {ptr, size, ctx, device, 0, pool, 0};

	if (!o || size == 0 || pool == 0)
		return -EINVAL;
	return insert(o, &a);
}

int gp_owner_graphmem_add(struct gp_owner *o, uint64_t ptr, uint64_t size, uint64_t ctx, int device,
			  uint64_t graph)
{
	struct gp_alloc a = {ptr, size, ctx, device, 0, 0, graph};
	uint64_t last;
	int ret;

	if (!o || size == 0 || graph == 0 || (graph & GP_GRAPHMEM_ORPHAN))
		return -EINVAL;
	ret = insert(o, &a);
	if (ret != -EEXIST || !last_byte(ptr, size, &last))
		return ret;
	/* Overlapped: by orphaned graph ranges only, the driver reused their addresses. */
	for (size_t i = 0; i < o->nallocs; i++) {
		const struct gp_alloc *b = &o->allocs[i];
		uint64_t blast;

		if (b->size && last_byte(b->ptr, b->size, &blast) && b->ptr <= last &&
		    ptr <= blast && !(b->graph & GP_GRAPHMEM_ORPHAN))
			return -EEXIST;
	}
	for (size_t i = o->nallocs; i-- > 0;) {
		struct gp_alloc *b = &o->allocs[i];
		uint64_t blast;

		if (b->size && last_byte(b->ptr, b->size, &blast) && b->ptr <= last && ptr <= blast)
			gp_owner_alloc_remove(o, b);
	}
	return insert(o, &a);
}

void gp_owner_graphmem_orphan(struct gp_owner *o, uint64_t graph)
{
	if (!o || !graph)
		return;
	for (size_t i = 0; i < o->nallocs; i++)
		if (o->allocs[i].graph == graph)
			o->allocs[i].graph |= GP_GRAPHMEM_ORPHAN;
}

void gp_owner_graphmem_forget(struct gp_owner *o, uint64_t graph)
{
	if (!o || !graph)
		return;
	for (size_t i = o->nallocs; i-- > 0;)
		if (o->allocs[i].graph == graph)
			gp_owner_alloc_remove(o, &o->allocs[i]);
}

struct gp_alloc *gp_owner_alloc_find(const struct gp_owner *o, uint64_t ptr)
{
	struct gp_alloc *point = NULL;

	if (!o)
		return NULL;
	/* Walk back over size-0 entries to the sized one that may contain ptr. */
	for (size_t i = upper_bound(o, ptr); i-- > 0;) {
		struct gp_alloc *a = &o->allocs[i];

		if (a->size == 0) {
			if (a->ptr == ptr && !point)
				point = a;
			continue;
		}
		if (ptr - a->ptr < a->size)
			return a;
		break;
	}
	return point;
}

void gp_owner_alloc_remove(struct gp_owner *o, struct gp_alloc *a)
{
	size_t at;

	if (!o || !a || a < o->allocs || a >= o->allocs + o->nallocs)
		return;
	at = (size_t)(a - o->allocs);
	if (a->module == 0 && a->pool == 0 && a->graph == 0) {
		if (a->device >= 0 && a->device < GP_STATS_MAX_DEVICES)
			o->dev_used[a->device] -= a->size;
		o->mem_used -= a->size;
	}
	memmove(&o->allocs[at], &o->allocs[at + 1], (o->nallocs - at - 1) * sizeof(*o->allocs));
	o->nallocs--;
}

void gp_owner_alloc_forget(struct gp_owner *o, uint64_t ctx, uint64_t module)
{
	if (!o || (!ctx && !module))
		return;
	for (size_t i = o->nallocs; i-- > 0;)
		if ((ctx && o->allocs[i].ctx == ctx) || (module && o->allocs[i].module == module))
			gp_owner_alloc_remove(o, &o->allocs[i]);
}

bool gp_owner_range(const struct gp_owner *o, uint64_t ptr, uint64_t len)
{
	const struct gp_alloc *a = gp_owner_alloc_find(o, ptr);

	if (!a)
		return false;
	/* a does not wrap (insert refuses that), so neither does anything inside it. */
	return len <= a->size - (ptr - a->ptr);
}

bool gp_owner_range2d(const struct gp_owner *o, uint64_t base, uint64_t pitch, uint64_t width,
		      uint64_t height)
{
	if (width == 0 || height == 0)
		return gp_owner_range(o, base, 0);
	if (height == 1)
		return gp_owner_range(o, base, width);
	if (pitch < width)
		return false; /* rows would overlap */
	/* extent = (height - 1) * pitch + width, checked for overflow */
	if (height - 1 > (UINT64_MAX - width) / pitch)
		return false;
	return gp_owner_range(o, base, (height - 1) * pitch + width);
}

/* ---- device charges ----------------------------------------------------------- */

bool gp_owner_charge_fits(const struct gp_owner *o, int device, uint64_t bytes)
{
	if (!o || !o->mem_limit || device < 0 || device >= GP_STATS_MAX_DEVICES)
		return true;
	return bytes <= o->mem_limit && o->dev_used[device] <= o->mem_limit - bytes;
}

int gp_owner_charge(struct gp_owner *o, int device, int64_t delta)
{
	uint64_t n;

	if (!o || device < 0 || device >= GP_STATS_MAX_DEVICES)
		return -EINVAL;
	if (delta >= 0) {
		n = (uint64_t)delta;
		if (o->dev_used[device] > UINT64_MAX - n || o->mem_used > UINT64_MAX - n)
			return -ERANGE;
		o->dev_used[device] += n;
		o->mem_used += n;
	} else {
		n = delta == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-delta;
		if (n > o->dev_used[device] || n > o->mem_used)
			return -ERANGE;
		o->dev_used[device] -= n;
		o->mem_used -= n;
	}
	if (o->mem_used > o->mem_peak)
		o->mem_peak = o->mem_used;
	return 0;
}

/* ---- library modules per context ---------------------------------------------- */

int gp_owner_libinst_add(struct gp_owner *o, uint64_t lib, uint64_t ctx, int device,
			 uint64_t charge, bool usable)
{
	if (!o || !lib || !ctx)
		return -EINVAL;
	if (o->nlibinst == o->cap_libinst) {
		size_t cap = o->cap_libinst ? o->cap_libinst * 2 : 16;
		struct gp_libinst *n = realloc(o->libinst, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		o->libinst = n;
		o->cap_libinst = cap;
	}
	o->libinst[o->nlibinst++] = (struct gp_libinst){lib, ctx, device, charge, usable};
	gp_owner_charge(o, device, (int64_t)charge);
	return 0;
}

const struct gp_libinst *gp_owner_libinst_find(const struct gp_owner *o, uint64_t lib, uint64_t ctx)
{
	for (size_t i = 0; o && i < o->nlibinst; i++)
		if (o->libinst[i].lib == lib && o->libinst[i].ctx == ctx)
			return &o->libinst[i];
	return NULL;
}

uint64_t gp_owner_libinst_cost(const struct gp_owner *o, uint64_t lib)
{
	uint64_t most = 0;

	for (size_t i = 0; o && i < o->nlibinst; i++)
		if (o->libinst[i].lib == lib && o->libinst[i].charge > most)
			most = o->libinst[i].charge;
	return most;
}

void gp_owner_libinst_forget(struct gp_owner *o, uint64_t lib, uint64_t ctx)
{
	for (size_t i = o ? o->nlibinst : 0; i-- > 0;) {
		struct gp_libinst *li = &o->libinst[i];

		if ((lib && li->lib == lib) || (ctx && li->ctx == ctx)) {
			gp_owner_charge(o, li->device, -(int64_t)li->charge);
			*li = o->libinst[--o->nlibinst];
		}
	}
}
