/* memory.c -- device memory: per-device arenas, the allocation table, pinned and managed memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpupool/va_window.h>

#include "softgpu.h"
#include "util.h"

/*
 * DESIGN: a device's memory is one memfd mapped shared (sized, not committed)
 * carved by a first-fit allocator; shared so that another process can map an
 * allocation exported by cuIpcGetMemHandle (ipc.c). Device addresses are NOT host
 * addresses: each device also reserves an inaccessible (PROT_NONE) range of
 * the same size, and a device address is an offset into that range, so a host
 * dereference of a device pointer faults as it would with a GPU, and device
 * addresses never collide with host memory. Pinned, registered and managed
 * host memory keep their host address as device address (unified
 * addressing).
 *
 * Every allocation is in one table sorted by device address, under a
 * read-write lock: kernels (via per-block caches), copies and pointer queries
 * read it; allocation and free write it. Memory is never unmapped while the
 * process lives, so even a racing use of freed memory cannot crash the host.
 * (vmm.c's mappings are entries too, of kind SG_MEM_VMM, reachable only once
 * access is set; a reservation's addresses are never taken for host memory.)
 */

#define ALIGN 512

struct sg_arena {
	pthread_mutex_t lock;
	uint64_t dbase;
	uint8_t *hbase;
	int fd; /* the memfd behind hbase, for ipc.c */
	uint64_t size;
	uint64_t used;
	bool windowed;	       /* placed in a SOFTGPU_VA_WINDOW window, at hint (zones below) */
	uint64_t zone_next[2]; /* where the managed and reservation zones' next search starts */
	struct range {
		uint64_t off, len;
	} * free;
	uint32_t nfree, cap;
};

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sg_alloc *table;
static uint32_t ntable, cap_table;
static uint64_t next_id = 1;
/* vmm.c's address reservations (under table_lock): device addresses even where unmapped. */
static struct range *reserved;
static uint32_t nreserved, cap_reserved;

/*
 * Device addresses live in a window of their own: the arena's reservation is asked for at
 * 32 TiB + 1 TiB per device, where processes map nothing of their own (glibc maps top down
 * from 0x7f..., ASan's allocator is at 0x6000..., Go's heap at 0xc0...). Through the pool
 * the client must have nothing at a device address (interposer/api_memory.c); in the mmap
 * area, a worker's device addresses kept landing on a client's own mappings. A hint only:
 * taken elsewhere it still works. Not under ThreadSanitizer, whose application ranges leave
 * that window out.
 *
 * SOFTGPU_VA_WINDOW=k (1..GP_VA_WINDOW_MAX, include/gpupool/va_window.h) moves device d to
 * window k's d-th TiB, for a session that spans daemons (the worker sets it). There every
 * device address of the process is kept inside the device's TiB, laid out as
 *	[0, 1/4)    the arena (cuMemAlloc, pools, module variables, the heap)
 *	[1/4, 3/8)  managed memory (its host address is its device address)
 *	[3/8, 1/2)  vmm.c's address reservations without a hint of their own
 *	[1/2, 1)    ipc.c's imports (sg_mem_ipc_hint)
 * A device past the window's eighth, or larger than the arena's quarter, is not placed at
 * all (its memory is wherever mmap puts it): the worker checks where its memory landed.
 */
#define SG_DEVICE_WINDOW GP_VA_WINDOW_BASE
#define SG_DEVICE_STRIDE GP_VA_DEVICE_STRIDE
#define ZONE_MANAGED (SG_DEVICE_STRIDE / 4)
#define ZONE_VMM (SG_DEVICE_STRIDE / 8 * 3)
#define ZONE_END (SG_DEVICE_STRIDE / 2)
#define ZONE_STEP (2ull << 20)

/* SOFTGPU_VA_WINDOW: 0 (softgpu's own placement), 1..GP_VA_WINDOW_MAX, or -1 (invalid). */
static int va_window(void)
{
	const char *v = getenv("SOFTGPU_VA_WINDOW");
	char *end;
	unsigned long k;

	if (v == NULL || *v == 0)
		return 0;
	k = strtoul(v, &end, 10);
	if (*end != 0 || k > GP_VA_WINDOW_MAX) {
		sg_log("SOFTGPU_VA_WINDOW=%s is not a window in [0, %d]", v, GP_VA_WINDOW_MAX);
		return -1;
	}
	return (int)k;
}

int sg_memory_init(struct sg_device *dev)
{
	struct sg_arena *a;
	void *res, *back, *hint = NULL;
	int k = va_window();
	uint64_t max = k ? ZONE_MANAGED : SG_DEVICE_STRIDE;

	if (k < 0)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
#ifndef __SANITIZE_THREAD__
	if (dev->mem_total <= max &&
	    (k == 0 || (uint64_t)dev->ordinal < GP_VA_WINDOW_SIZE / SG_DEVICE_STRIDE)) {
		hint = (void *)(uintptr_t)(SG_DEVICE_WINDOW + (uint64_t)k * GP_VA_WINDOW_SIZE +
					   (uint64_t)dev->ordinal * SG_DEVICE_STRIDE);
		a->windowed = k > 0;
	}
#endif
	res = mmap(hint, dev->mem_total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		   0);
	/* sealed at its size: an importer's mapping of it (ipc.c) can never fault */
	a->fd = memfd_create("softgpu-device", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	back = MAP_FAILED;
	if (a->fd >= 0 && ftruncate(a->fd, (off_t)dev->mem_total) == 0 &&
	    fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
		back = mmap(NULL, dev->mem_total, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_NORESERVE, a->fd, 0);
	if (res == MAP_FAILED || back == MAP_FAILED) {
		if (res != MAP_FAILED)
			munmap(res, dev->mem_total);
		if (back != MAP_FAILED)
			munmap(back, dev->mem_total);
		if (a->fd >= 0)
			close(a->fd);
		free(a);
		return -ENOMEM;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->dbase = (uint64_t)(uintptr_t)res;
	if (res != hint)
		a->windowed = false;
	else if (a->windowed)
		sg_log("device %d at %#llx: window %d", dev->ordinal, (unsigned long long)a->dbase,
		       k);
	a->hbase = back;
	a->size = dev->mem_total;
	a->cap = 16;
	a->free = calloc(a->cap, sizeof(*a->free));
	if (a->free == NULL) {
		munmap(res, dev->mem_total);
		munmap(back, dev->mem_total);
		close(a->fd);
		free(a);
		return -ENOMEM;
	}
	a->free[0] = (struct range){0, a->size};
	a->nfree = 1;
	dev->arena = a;
	return 0;
}

/*
 * len bytes (a multiple of the page) of fresh anonymous memory at a multiple of align inside
 * a zone of a windowed device's TiB (ZONE_MANAGED or ZONE_VMM), mapped with prot; NULL when
 * the device is not windowed, MAP_FAILED when the zone has no room. The kernel's own map is
 * the allocator: MAP_FIXED_NOREPLACE fails where anything lies, and the search goes on past
 * it, from where the last one ended (round robin, so freed ranges come back into use).
 */
static void *zone_map(struct sg_device *dev, int zone, uint64_t len, uint64_t align, int prot)
{
	struct sg_arena *a = dev->arena;
	uint64_t lo = a->dbase + (zone ? ZONE_VMM : ZONE_MANAGED);
	uint64_t hi = a->dbase + (zone ? ZONE_END : ZONE_VMM), at, step;
	unsigned tries;

	if (!a->windowed)
		return NULL;
	if (align < ZONE_STEP)
		align = ZONE_STEP;
	/* lo is a multiple of any power of two up to the zone's size: a search that starts
	 * over from lo stays aligned */
	if (len == 0 || len > hi - lo || align > hi - lo || (align & (align - 1)))
		return MAP_FAILED;
	step = (len + align - 1) & ~(align - 1);
	pthread_mutex_lock(&a->lock);
	at = a->zone_next[zone];
	for (tries = 0; tries < 4096; tries++) {
		void *p;

		at = (at + align - 1) & ~(align - 1);
		if (at < lo || at > hi - len)
			at = lo;
		p = mmap((void *)(uintptr_t)at, len, prot,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
				 (prot == PROT_NONE ? MAP_NORESERVE : 0),
			 -1, 0);
		if (p == (void *)(uintptr_t)at) {
			a->zone_next[zone] = at + step;
			pthread_mutex_unlock(&a->lock);
			return p;
		}
		if (p != MAP_FAILED) /* a kernel older than 4.17: a hint, taken elsewhere */
			munmap(p, len);
		at += step;
	}
	pthread_mutex_unlock(&a->lock);
	return MAP_FAILED;
}

/* vmm.c: a reservation of size bytes at a multiple of align in the window of the current
 * context's device (device 0 without one): its address, 0 when no window is set, or
 * UINT64_MAX when the window has no room. */
uint64_t sg_mem_window_reserve(uint64_t size, uint64_t align)
{
	struct sg_ctx *c;
	struct sg_device *d = sg_ndevices ? &sg_devices[0] : NULL;
	void *p;

	if (sg_ctx_current(&c, false) == CUDA_SUCCESS)
		d = c->dev;
	if (d == NULL)
		return 0;
	p = zone_map(d, 1, size, align, PROT_NONE);
	if (p == NULL)
		return 0;
	return p == MAP_FAILED ? UINT64_MAX : (uint64_t)(uintptr_t)p;
}

static int arena_alloc(struct sg_arena *a, uint64_t size, uint64_t *off)
{
	int r = -ENOMEM;

	pthread_mutex_lock(&a->lock);
	for (uint32_t i = 0; i < a->nfree; i++) {
		if (a->free[i].len < size)
			continue;
		*off = a->free[i].off;
		a->free[i].off += size;
		a->free[i].len -= size;
		if (a->free[i].len == 0) {
			memmove(&a->free[i], &a->free[i + 1],
				(a->nfree - i - 1) * sizeof(*a->free));
			a->nfree--;
		}
		a->used += size;
		r = 0;
		break;
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}

/*
 * A freed range must read as zeros when it is reallocated. Up to KEEP_MAX its pages stay and
 * are cleared in place: faulting shared memory in again costs far more than the memset (2,000
 * touches and frees of 1 MiB on the loaded build machine: 38 s punched, 0.9 s cleared), and the
 * first-fit allocator hands small ranges out again first. Pages never touched (or swapped
 * out: mincore cannot tell) are punched instead, so a free commits nothing new; larger ranges
 * are punched whole, giving their memory back. The partial pages at either end, shared with
 * neighbours, are cleared.
 */
#define KEEP_MAX (4u << 20)

static void punch(struct sg_arena *a, uint64_t lo, uint64_t hi)
{
	if (hi > lo)
		fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)lo,
			  (off_t)(hi - lo));
}

static void arena_zero(struct sg_arena *a, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo, hi, n;
	unsigned char vec[256];

	lo = (off + page - 1) / page * page;
	hi = (off + len) / page * page;
	if (hi <= lo) {
		memset(a->hbase + off, 0, len);
		return;
	}
	memset(a->hbase + off, 0, lo - off);
	memset(a->hbase + hi, 0, off + len - hi);
	if (hi - lo > KEEP_MAX) {
		punch(a, lo, hi);
		return;
	}
	for (uint64_t at = lo; at < hi; at += n * page) {
		n = (hi - at) / page < sizeof(vec) ? (hi - at) / page : sizeof(vec);
		if (mincore(a->hbase + at, n * page, vec)) {
			punch(a, at, hi);
			return;
		}
		for (uint64_t i = 0, j; i < n; i = j) {
			for (j = i + 1; j < n && (vec[j] & 1) == (vec[i] & 1); j++)
				;
			if (vec[i] & 1)
				memset(a->hbase + at + i * page, 0, (j - i) * page);
			else
				punch(a, at + i * page, at + j * page);
		}
	}
}

static void arena_free(struct sg_arena *a, uint64_t off, uint64_t len)
{
	uint32_t i;

	arena_zero(a, off, len);
	pthread_mutex_lock(&a->lock);
	a->used -= len;
	for (i = 0; i < a->nfree && a->free[i].off < off; i++)
		;
	if (i > 0 && a->free[i - 1].off + a->free[i - 1].len == off) {
		a->free[i - 1].len += len;
		if (i < a->nfree && off + len == a->free[i].off) {
			a->free[i - 1].len += a->free[i].len;
			memmove(&a->free[i], &a->free[i + 1],
				(a->nfree - i - 1) * sizeof(*a->free));
			a->nfree--;
		}
	} else if (i < a->nfree && off + len == a->free[i].off) {
		a->free[i].off = off;
		a->free[i].len += len;
	} else {
		if (a->nfree == a->cap) {
			struct range *n = realloc(a->free, a->cap * 2 * sizeof(*n));

			if (n == NULL) { /* leak the range rather than corrupt the list */
				pthread_mutex_unlock(&a->lock);
				return;
			}
			a->free = n;
			a->cap *= 2;
		}
		memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof(*a->free));
		a->free[i] = (struct range){off, len};
		a->nfree++;
	}
	pthread_mutex_unlock(&a->lock);
}

/* Index of the first entry with base > addr (callers hold table_lock). */
static uint32_t upper(uint64_t addr)
{
	uint32_t lo = 0, hi = ntable;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (table[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct sg_alloc *lookup(uint64_t addr)
{
	uint32_t i = upper(addr);

	if (i == 0)
		return NULL;
	if (addr - table[i - 1].base < table[i - 1].size)
		return &table[i - 1];
	return NULL;
}

static int table_insert(const struct sg_alloc *a)
{
	uint32_t i;
	int r = 0;

	pthread_rwlock_wrlock(&table_lock);
	if (sg_grow(&table, &cap_table, ntable, sizeof(*table))) {
		r = -ENOMEM;
		goto out;
	}
	i = upper(a->base);
	memmove(&table[i + 1], &table[i], (ntable - i) * sizeof(*table));
	table[i] = *a;
	table[i].id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	ntable++;
out:
	pthread_rwlock_unlock(&table_lock);
	return r;
}

static bool vmm_reserved(uint64_t addr)
{
	for (uint32_t i = 0; i < nreserved; i++)
		if (addr - reserved[i].off < reserved[i].len)
			return true;
	return false;
}

/* Is addr inside a device's reserved address range? */
static struct sg_device *device_range(uint64_t addr)
{
	for (int i = 0; i < sg_ndevices; i++) {
		struct sg_arena *a = sg_devices[i].arena;

		if (a && addr - a->dbase < a->size)
			return &sg_devices[i];
	}
	return NULL;
}

CUresult sg_mem_alloc(struct sg_ctx *ctx, uint64_t size, int kind, uint64_t *dptr)
{
	struct sg_arena *ar = ctx->dev->arena;
	struct sg_alloc a = {0};
	uint64_t charged, off;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > ar->size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	charged = (size + ALIGN - 1) / ALIGN * ALIGN;
	if (arena_alloc(ar, charged, &off))
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.base = ar->dbase + off;
	a.size = size;
	a.host = ar->hbase + off;
	a.kind = kind;
	a.ctx = ctx;
	a.charged = charged;
	if (table_insert(&a)) {
		arena_free(ar, off, charged);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*dptr = a.base;
	return CUDA_SUCCESS;
}

static void release(const struct sg_alloc *a)
{
	struct sg_device *d;

	switch (a->kind) {
	case SG_MEM_DEVICE:
		sg_ipc_forget(a->id);
		/* fall through */
	case SG_MEM_MODULE:
	case SG_MEM_HEAP:
	case SG_MEM_ARRAY:
		d = device_range(a->base);
		if (d)
			arena_free(d->arena, a->base - d->arena->dbase, a->charged);
		break;
	case SG_MEM_HOST:
	case SG_MEM_MANAGED:
		munmap(a->host, a->charged);
		break;
	case SG_MEM_IPC:
		sg_ipc_unmap(a);
		break;
	default: /* registered: the caller's memory */
		break;
	}
}

/* Removes the allocation starting at base if its kind is allowed; 0 or -ENOENT. */
static int table_remove(uint64_t base, unsigned kinds, struct sg_alloc *out)
{
	uint32_t i;
	int r = -ENOENT;

	pthread_rwlock_wrlock(&table_lock);
	i = upper(base);
	if (i > 0 && table[i - 1].base == base && (kinds & (1u << table[i - 1].kind))) {
		*out = table[i - 1];
		memmove(&table[i - 1], &table[i], (ntable - i) * sizeof(*table));
		ntable--;
		r = 0;
	}
	pthread_rwlock_unlock(&table_lock);
	return r;
}

CUresult sg_mem_free(struct sg_ctx *ctx, uint64_t dptr, int kind)
{
	struct sg_alloc a;
	unsigned kinds = 1u << kind;

	if (kind == SG_MEM_DEVICE)
		kinds |= 1u << SG_MEM_MANAGED;
	if (table_remove(dptr, kinds, &a))
		return CUDA_ERROR_INVALID_VALUE;
	if (a.kind == SG_MEM_HEAP)
		__atomic_fetch_sub(&a.ctx->heap_used, a.charged, __ATOMIC_RELAXED);
	release(&a);
	return CUDA_SUCCESS;
}

void sg_mem_free_ctx(struct sg_ctx *ctx)
{
	for (;;) {
		struct sg_alloc a;
		bool found = false;

		pthread_rwlock_wrlock(&table_lock);
		for (uint32_t i = 0; i < ntable; i++) {
			if (table[i].ctx != ctx)
				continue;
			a = table[i];
			memmove(&table[i], &table[i + 1], (ntable - i - 1) * sizeof(*table));
			ntable--;
			found = true;
			break;
		}
		pthread_rwlock_unlock(&table_lock);
		if (!found)
			return;
		release(&a);
	}
}

bool sg_mem_find(uint64_t addr, struct sg_alloc *out)
{
	struct sg_alloc *a;

	pthread_rwlock_rdlock(&table_lock);
	a = lookup(addr);
	if (a)
		*out = *a;
	pthread_rwlock_unlock(&table_lock);
	return a != NULL;
}

/*
 * Whether size bytes at addr lie in accessible VMM mappings that follow each other in
 * address and in host memory (the mappings side by side in one reservation are), starting
 * with a, the one containing addr (callers hold table_lock).
 */
static bool vmm_run(const struct sg_alloc *a, uint64_t addr, uint64_t size)
{
	uint64_t have = a->size - (addr - a->base);

	if (SG_VMM_ACCESS(a->flags) == 0)
		return false;
	while (size > have) {
		const struct sg_alloc *n = a + 1;

		if (n == table + ntable || n->kind != SG_MEM_VMM || !SG_VMM_ACCESS(n->flags) ||
		    n->base != a->base + a->size || n->host != a->host + a->size)
			return false;
		have += n->size;
		a = n;
	}
	return true;
}

uint8_t *sg_mem_xlate(uint64_t addr, uint64_t size, bool host_ok, CUresult *err)
{
	struct sg_alloc *a;
	uint8_t *h = NULL;

	pthread_rwlock_rdlock(&table_lock);
	a = lookup(addr);
	if (a) {
		if (a->kind == SG_MEM_VMM && !vmm_run(a, addr, size))
			*err = CUDA_ERROR_INVALID_VALUE;
		else if (a->kind == SG_MEM_VMM || size <= a->size - (addr - a->base))
			h = a->host + (addr - a->base);
		else
			*err = CUDA_ERROR_INVALID_VALUE;
	} else if (host_ok && addr != 0 && device_range(addr) == NULL && !vmm_reserved(addr)) {
		h = (uint8_t *)(uintptr_t)addr;
	} else {
		*err = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_rwlock_unlock(&table_lock);
	if (h == NULL && (h = sg_gmem_host(addr, size)))
		*err = CUDA_SUCCESS; /* graph memory not allocated yet (its lock is taken first) */
	return h;
}

uint8_t *sg_mem_kernel_lookup(uint64_t addr, uint64_t size, const void *ctx, struct sg_xcache *fill)
{
	struct sg_alloc *a;
	uint8_t *h = NULL;

	pthread_rwlock_rdlock(&table_lock);
	a = lookup(addr);
	if (a && size <= a->size - (addr - a->base) &&
	    (a->kind == SG_MEM_VMM
		     ? (SG_VMM_ACCESS(a->flags) >> ((const struct sg_ctx *)ctx)->dev->ordinal) & 1
		     : (a->ctx == ctx || a->kind == SG_MEM_HOST || a->kind == SG_MEM_REGISTERED ||
			a->kind == SG_MEM_MANAGED ||
			(a->kind == SG_MEM_POOL &&
			 a->ctx->dev == ((const struct sg_ctx *)ctx)->dev)))) {
		h = a->host + (addr - a->base);
		fill->lo = a->base;
		fill->hi = a->base + a->size;
		fill->host = a->host;
	}
	pthread_rwlock_unlock(&table_lock);
	return h;
}

CUresult sg_mem_reserve(struct sg_device *dev, uint64_t size, uint64_t *dptr, uint64_t *cap)
{
	struct sg_arena *ar = dev->arena;
	uint64_t off, c;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (size > ar->size)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = (size + ALIGN - 1) / ALIGN * ALIGN;
	if (arena_alloc(ar, c, &off))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*dptr = ar->dbase + off;
	*cap = c;
	return CUDA_SUCCESS;
}

void sg_mem_unreserve(struct sg_device *dev, uint64_t dptr, uint64_t cap)
{
	arena_free(dev->arena, dptr - dev->arena->dbase, cap);
}

CUresult sg_mem_map(struct sg_ctx *ctx, uint64_t dptr, uint64_t size, void *owner)
{
	struct sg_arena *ar = ctx->dev->arena;
	struct sg_alloc a = {0};

	a.base = dptr;
	a.size = size;
	a.host = ar->hbase + (dptr - ar->dbase);
	a.kind = SG_MEM_POOL;
	a.ctx = ctx;
	a.owner = owner;
	return table_insert(&a) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

int sg_mem_unmap(uint64_t dptr)
{
	struct sg_alloc a;

	return table_remove(dptr, 1u << SG_MEM_POOL, &a);
}

/* ---- for ipc.c ---- */

bool sg_mem_ipc_source(uint64_t addr, struct sg_alloc *out, int *fd, uint64_t *off)
{
	struct sg_device *d;

	if (!sg_mem_find(addr, out) || out->kind != SG_MEM_DEVICE)
		return false;
	d = device_range(out->base);
	if (d == NULL)
		return false;
	*fd = d->arena->fd;
	*off = out->base - d->arena->dbase;
	return true;
}

void *sg_mem_ipc_hint(struct sg_device *dev, uint64_t len)
{
	static uint64_t cursor[64];
	struct sg_arena *a = dev->arena;
	uint64_t step = (len + (2u << 20) - 1) & ~((uint64_t)(2u << 20) - 1), at;

	if (dev->ordinal >= 64 || a->size > SG_DEVICE_STRIDE / 2)
		return NULL;
	at = __atomic_fetch_add(&cursor[dev->ordinal], step, __ATOMIC_RELAXED);
	if (at + step > SG_DEVICE_STRIDE / 2)
		return NULL;
	return (void *)(uintptr_t)(a->dbase + SG_DEVICE_STRIDE / 2 + at);
}

int sg_mem_ipc_del(uint64_t base)
{
	struct sg_alloc a;

	if (table_remove(base, 1u << SG_MEM_IPC, &a))
		return -ENOENT;
	release(&a);
	return 0;
}

void sg_mem_info(const struct sg_device *dev, uint64_t *freeb, uint64_t *total)
{
	struct sg_arena *a = dev->arena;

	pthread_mutex_lock(&a->lock);
	*freeb = a->size - a->used;
	*total = a->size;
	pthread_mutex_unlock(&a->lock);
}

/* ---- for vmm.c ---- */

CUresult sg_mem_charge(struct sg_device *dev, uint64_t size, uint64_t *off)
{
	return size <= dev->arena->size && arena_alloc(dev->arena, size, off) == 0
		       ? CUDA_SUCCESS
		       : CUDA_ERROR_OUT_OF_MEMORY;
}

void sg_mem_uncharge(struct sg_device *dev, uint64_t off, uint64_t size)
{
	arena_free(dev->arena, off, size);
}

int sg_mem_reserve_add(uint64_t base, uint64_t size)
{
	int r = 0;

	pthread_rwlock_wrlock(&table_lock);
	if (sg_grow(&reserved, &cap_reserved, nreserved, sizeof(*reserved)))
		r = -ENOMEM;
	else
		reserved[nreserved++] = (struct range){base, size};
	pthread_rwlock_unlock(&table_lock);
	return r;
}

void sg_mem_reserve_del(uint64_t base)
{
	pthread_rwlock_wrlock(&table_lock);
	for (uint32_t i = 0; i < nreserved; i++) {
		if (reserved[i].off != base)
			continue;
		reserved[i] = reserved[--nreserved];
		break;
	}
	pthread_rwlock_unlock(&table_lock);
}

int sg_mem_map_add(const struct sg_alloc *a)
{
	return table_insert(a);
}

int sg_mem_map_del(uint64_t base)
{
	struct sg_alloc a;

	return table_remove(base, 1u << SG_MEM_VMM, &a);
}

int sg_mem_map_flags(uint64_t base, unsigned flags)
{
	struct sg_alloc *a;
	int r = -ENOENT;

	pthread_rwlock_wrlock(&table_lock);
	a = lookup(base);
	if (a && a->base == base && a->kind == SG_MEM_VMM) {
		a->flags = flags;
		r = 0;
	}
	pthread_rwlock_unlock(&table_lock);
	return r;
}

/* ---- device-side malloc/free ---- */

uint64_t sg_builtin_malloc(struct sg_thread *t, uint64_t size)
{
	struct sg_ctx *ctx = (struct sg_ctx *)t->blk->grid->ctx;
	uint64_t charged = (size + ALIGN - 1) / ALIGN * ALIGN, p = 0;

	if (size == 0)
		return 0;
	if (__atomic_add_fetch(&ctx->heap_used, charged, __ATOMIC_RELAXED) > ctx->limit_heap ||
	    sg_mem_alloc(ctx, size, SG_MEM_HEAP, &p) != CUDA_SUCCESS) {
		__atomic_fetch_sub(&ctx->heap_used, charged, __ATOMIC_RELAXED);
		return 0;
	}
	return p;
}

void sg_builtin_free(struct sg_thread *t, uint64_t ptr)
{
	if (ptr)
		sg_mem_free((struct sg_ctx *)t->blk->grid->ctx, ptr, SG_MEM_HEAP);
}

/* ---- the API ---- */

SG_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (dptr == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sg_capture_unsafe()))
		return r; /* cudaMalloc during a global-mode capture */
	return sg_mem_alloc(c, bytesize, SG_MEM_DEVICE, (uint64_t *)dptr);
}

SG_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width,
				      size_t height, unsigned int elementSizeBytes)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);
	size_t pitch;

	if (r)
		return r;
	if (dptr == NULL || pPitch == NULL || width == 0 || height == 0 ||
	    (elementSizeBytes != 4 && elementSizeBytes != 8 && elementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (width + ALIGN - 1) / ALIGN * ALIGN;
	if (height > UINT64_MAX / pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = sg_mem_alloc(c, (uint64_t)pitch * height, SG_MEM_DEVICE, (uint64_t *)dptr);
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

static void advice_forget(uint64_t base);

SG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct sg_ctx *c;
	struct sg_alloc a = {0};
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (dptr == 0)
		return CUDA_SUCCESS;
	/* a GPU frees memory only once the work using it is done */
	if (sg_mem_find(dptr, &a) && a.base == dptr && sg_handle_ok(a.ctx, SG_K_CTX))
		sg_ctx_sync(a.ctx);
	if (a.kind == SG_MEM_POOL && a.base == dptr)
		return sg_mempool_free_now(dptr); /* memory from cuMemAllocAsync goes back */
	if (a.kind == SG_MEM_MANAGED && a.base == dptr)
		advice_forget(dptr); /* the address may come back for another allocation */
	if (sg_gmem_free_sync(dptr, &r))
		return r; /* a graph allocation node's memory */
	return sg_mem_free(c, dptr, SG_MEM_DEVICE);
}

SG_EXPORT CUresult cuMemGetInfo_v2(size_t *freeb, size_t *total)
{
	struct sg_ctx *c;
	uint64_t f, t;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (freeb == NULL || total == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	sg_mem_info(c->dev, &f, &t);
	*freeb = f;
	*total = t;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct sg_ctx *c;
	struct sg_alloc a;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (!sg_mem_find(dptr, &a))
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = a.base;
	if (psize)
		*psize = a.size;
	return CUDA_SUCCESS;
}

static CUresult host_alloc(struct sg_ctx *c, void **pp, size_t size, unsigned flags, int kind)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
	struct sg_alloc a = {0};
	void *p;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* managed memory of a windowed device is a device address in its window */
	p = kind == SG_MEM_MANAGED ? zone_map(c->dev, 0, len, 0, PROT_READ | PROT_WRITE) : NULL;
	if (p == NULL)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.base = (uint64_t)(uintptr_t)p;
	a.size = size;
	a.host = p;
	a.kind = kind;
	a.ctx = c;
	a.flags = flags;
	a.charged = len;
	if (table_insert(&a)) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult sg_mem_alloc_managed(struct sg_ctx *ctx, uint64_t size, uint64_t *dptr)
{
	void *p;
	CUresult r = host_alloc(ctx, &p, size, CU_MEM_ATTACH_GLOBAL, SG_MEM_MANAGED);

	if (r == CUDA_SUCCESS)
		*dptr = (uint64_t)(uintptr_t)p;
	return r;
}

SG_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (pp == NULL ||
	    (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
				 CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(c, pp, bytesize, flags, SG_MEM_HOST);
}

SG_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

SG_EXPORT CUresult cuMemFreeHost(void *p)
{
	struct sg_ctx *c;
	struct sg_alloc a;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_SUCCESS; /* free(NULL) semantics, as the driver */
	if (sg_mem_find((uint64_t)(uintptr_t)p, &a) && a.base == (uint64_t)(uintptr_t)p &&
	    sg_handle_ok(a.ctx, SG_K_CTX))
		sg_ctx_sync(a.ctx);
	return sg_mem_free(c, (uint64_t)(uintptr_t)p, SG_MEM_HOST);
}

SG_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct sg_ctx *c;
	void *p;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	r = host_alloc(c, &p, bytesize, flags, SG_MEM_MANAGED);
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

SG_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	struct sg_ctx *c;
	struct sg_alloc a;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (pdptr == NULL || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_mem_find((uint64_t)(uintptr_t)p, &a) ||
	    (a.kind != SG_MEM_HOST && a.kind != SG_MEM_REGISTERED))
		return CUDA_ERROR_INVALID_VALUE;
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct sg_ctx *c;
	struct sg_alloc a;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (pFlags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_mem_find((uint64_t)(uintptr_t)p, &a) ||
	    (a.kind != SG_MEM_HOST && a.kind != SG_MEM_REGISTERED))
		return CUDA_ERROR_INVALID_VALUE;
	*pFlags = a.flags;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	struct sg_ctx *c;
	struct sg_alloc a = {0}, old;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (p == NULL || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (sg_mem_find((uint64_t)(uintptr_t)p, &old) ||
	    sg_mem_find((uint64_t)(uintptr_t)p + bytesize - 1, &old))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	a.base = (uint64_t)(uintptr_t)p;
	a.size = bytesize;
	a.host = p;
	a.kind = SG_MEM_REGISTERED;
	a.ctx = c;
	a.flags = Flags;
	return table_insert(&a) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemHostUnregister(void *p)
{
	struct sg_ctx *c;
	struct sg_alloc a;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (table_remove((uint64_t)(uintptr_t)p, 1u << SG_MEM_REGISTERED, &a))
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	return CUDA_SUCCESS;
}

/* ---- pointer attributes ---- */

static CUresult attr(const struct sg_alloc *a, bool found, CUpointer_attribute at, void *data,
		     uint64_t ptr)
{
	bool host = found && (a->kind == SG_MEM_HOST || a->kind == SG_MEM_REGISTERED);
	bool managed = found && a->kind == SG_MEM_MANAGED;
	bool vmm = found && a->kind == SG_MEM_VMM; /* no context: a device's memory */

	switch (at) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = found ? (CUcontext)a->ctx : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = !found ? 0 : host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = found ? (CUdeviceptr)ptr : 0;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (found && !host && !managed)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = found ? (void *)(uintptr_t)ptr : NULL;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		*(unsigned long long *)data = found ? a->id : 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(int *)data = managed;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = !found ? -2 : vmm ? SG_VMM_DEV(a->flags) : a->ctx->dev->ordinal;
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: /* cuMemAlloc's: ipc.c */
		*(int *)data = found && a->kind == SG_MEM_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = found ? a->base : 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = found ? a->size : 0;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(int *)data = found;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = !found ? 0
				    : vmm && !SG_VMM_ACCESS(a->flags)
					    ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
					    : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data =
			found && a->kind == SG_MEM_POOL ? sg_mempool_of(a->base) : NULL;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct sg_alloc a;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_mem_find(ptr, &a) || (a.kind != SG_MEM_VMM && !sg_handle_ok(a.ctx, SG_K_CTX)))
		return CUDA_ERROR_INVALID_VALUE;
	return attr(&a, true, attribute, data, ptr);
}

SG_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
					  CUpointer_attribute *attributes, void **data,
					  CUdeviceptr ptr)
{
	struct sg_alloc a;
	bool found;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (attributes == NULL || data == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	found = sg_mem_find(ptr, &a) && (a.kind == SG_MEM_VMM || sg_handle_ok(a.ctx, SG_K_CTX));
	for (unsigned i = 0; i < numAttributes; i++) {
		if (data[i] == NULL)
			return CUDA_ERROR_INVALID_VALUE;
		r = attr(&a, found, attributes[i], data[i], ptr);
		if (r == CUDA_ERROR_INVALID_VALUE &&
		    attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
			*(void **)data[i] = NULL;
		else if (r)
			return r;
	}
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attribute,
					 CUdeviceptr ptr)
{
	struct sg_alloc a;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_mem_find(ptr, &a))
		return CUDA_ERROR_INVALID_VALUE;
	return attribute == CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ? CUDA_SUCCESS
							     : CUDA_ERROR_INVALID_VALUE;
}

/* ---- managed memory: prefetch, advice, attachment ----
 * Managed memory is host memory the device reads in place, so a prefetch or an attachment
 * moves nothing; they are checked as CUDA checks them (the range must be managed memory,
 * the location valid) and what range queries report is recorded, per allocation: a range
 * is answered with what was last said of any part of its allocation. */

#define ADVICE_MAX 4096

struct advice {
	uint64_t base; /* 0: free */
	bool read_mostly;
	int preferred, last_prefetch; /* a device ordinal, CU_DEVICE_CPU, CU_DEVICE_INVALID */
	uint32_t accessed_by;	      /* bit 0: the CPU, bit 1 + d: device d */
};

static pthread_mutex_t advice_lock = PTHREAD_MUTEX_INITIALIZER;
static struct advice advices[ADVICE_MAX];

/* The managed allocation holding all of [p, p + n): its advice record (made on first use),
 * under advice_lock; NULL when the range is not one allocation's managed memory. */
static struct advice *advice_of(uint64_t p, uint64_t n)
{
	struct sg_alloc a;
	struct advice *free_slot = NULL;

	if (n == 0 || !sg_mem_find(p, &a) || a.kind != SG_MEM_MANAGED || n > a.size - (p - a.base))
		return NULL;
	for (int i = 0; i < ADVICE_MAX; i++) {
		if (advices[i].base == a.base)
			return &advices[i];
		if (!free_slot && advices[i].base == 0)
			free_slot = &advices[i];
	}
	if (!free_slot) {
		/* Records of freed allocations go first. */
		for (int i = 0; i < ADVICE_MAX && !free_slot; i++) {
			struct sg_alloc other;

			if (!sg_mem_find(advices[i].base, &other) || other.base != advices[i].base)
				free_slot = &advices[i];
		}
		if (!free_slot)
			return NULL;
	}
	*free_slot = (struct advice){a.base, false, CU_DEVICE_INVALID, CU_DEVICE_INVALID, 0};
	return free_slot;
}

static void advice_forget(uint64_t base)
{
	pthread_mutex_lock(&advice_lock);
	for (int i = 0; i < ADVICE_MAX; i++)
		if (advices[i].base == base)
			advices[i].base = 0;
	pthread_mutex_unlock(&advice_lock);
}

/* A location as one int: a device ordinal, CU_DEVICE_CPU, or -2 for one CUDA refuses. */
static int location_of(CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return loc.id >= 0 && loc.id < sg_ndevices ? loc.id : -2;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return CU_DEVICE_CPU;
	default:
		return -2;
	}
}

static int device_of(CUdevice d)
{
	return d == CU_DEVICE_CPU || (d >= 0 && d < sg_ndevices) ? d : -2;
}

static CUresult prefetch(CUdeviceptr p, size_t n, int where, unsigned flags, CUstream h, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	struct advice *ad;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (where == -2)
		return CUDA_ERROR_INVALID_DEVICE;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&advice_lock);
	ad = advice_of(p, n);
	if (ad)
		ad->last_prefetch = where;
	pthread_mutex_unlock(&advice_lock);
	return ad ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dev, CUstream s)
{
	return prefetch(p, n, device_of(dev), 0, s, false);
}

SG_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dev, CUstream s)
{
	return prefetch(p, n, device_of(dev), 0, s, true);
}

SG_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc,
					 unsigned int flags, CUstream s)
{
	return prefetch(p, n, location_of(loc), flags, s, false);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags,
				    CUstream s);
SG_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc,
					      unsigned int flags, CUstream s)
{
	return prefetch(p, n, location_of(loc), flags, s, true);
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, int where)
{
	struct advice *ad;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		return CUDA_ERROR_INVALID_VALUE;
	if (advice > CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
	    advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION && where == -2)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&advice_lock);
	ad = advice_of(p, n);
	if (ad) {
		switch (advice) {
		case CU_MEM_ADVISE_SET_READ_MOSTLY:
		case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
			ad->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
			break;
		case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
			ad->preferred = where;
			break;
		case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
			ad->preferred = CU_DEVICE_INVALID;
			break;
		case CU_MEM_ADVISE_SET_ACCESSED_BY:
			ad->accessed_by |= 1u << (where + 1);
			break;
		default:
			ad->accessed_by &= ~(1u << (where + 1));
		}
	}
	pthread_mutex_unlock(&advice_lock);
	return ad ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
{
	return advise(p, n, advice, device_of(dev));
}

SG_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
	return advise(p, n, advice, location_of(loc));
}

static int location_type(int where)
{
	return where == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
	       : where >= 0	      ? CU_MEM_LOCATION_TYPE_DEVICE
				      : CU_MEM_LOCATION_TYPE_INVALID;
}

static CUresult range_attr(const struct advice *ad, void *data, size_t size,
			   CUmem_range_attribute attr)
{
	int v;

	if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
		size_t k = 0;

		if (size == 0 || size % 4)
			return CUDA_ERROR_INVALID_VALUE;
		for (int d = -1; d < sg_ndevices && (k + 1) * 4 <= size; d++)
			if (ad->accessed_by & (1u << (d + 1)))
				((int *)data)[k++] = d;
		for (; (k + 1) * 4 <= size; k++)
			((int *)data)[k] = CU_DEVICE_INVALID;
		return CUDA_SUCCESS;
	}
	if (size != 4)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		v = ad->read_mostly;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		v = ad->preferred;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		v = ad->last_prefetch;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
		v = location_type(ad->preferred);
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
		v = location_type(ad->last_prefetch);
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
		v = ad->preferred >= 0 ? ad->preferred : CU_DEVICE_INVALID;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
		v = ad->last_prefetch >= 0 ? ad->last_prefetch : CU_DEVICE_INVALID;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	*(int *)data = v;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *sizes, CUmem_range_attribute *attrs,
					   size_t n, CUdeviceptr p, size_t count)
{
	struct advice *ad;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!data || !sizes || !attrs || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&advice_lock);
	ad = advice_of(p, count);
	r = ad ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
		r = data[i] ? range_attr(ad, data[i], sizes[i], attrs[i])
			    : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&advice_lock);
	return r;
}

SG_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
					  CUdeviceptr p, size_t count)
{
	return cuMemRangeGetAttributes(&data, &size, &attr, 1, p, count);
}

static CUresult attach(CUstream h, CUdeviceptr p, size_t len, unsigned flags, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	struct sg_alloc a;
	CUresult r = sg_stream_resolve(h, pt, &c, &s);

	if (r)
		return r;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	/* Managed memory, from its start, the whole allocation: length 0 or its size. */
	if (!sg_mem_find(p, &a) || a.kind != SG_MEM_MANAGED || a.base != p ||
	    (len != 0 && len != a.size))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t len, unsigned int flags)
{
	return attach(s, p, len, flags, false);
}

SG_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t len,
					       unsigned int flags)
{
	return attach(s, p, len, flags, true);
}
