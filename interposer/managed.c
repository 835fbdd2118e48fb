/* managed.c -- managed memory and mapped page-locked memory: one address on both sides.
 *
 * cuMemAllocManaged, and cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP, allocate on the
 * pool (MANAGED_ALLOC: the worker's driver's managed memory) and map anonymous memory
 * here at the same address, so the program's host code dereferences the pointer it got
 * and kernels use the same one. Coherence moves only pages that changed:
 *
 *   - host writes: every page is write-protected after it was sent or received; the
 *     first write to it faults, our SIGSEGV handler marks it dirty and lets the write
 *     through. Before any call that may read device memory (every stream-ordered call
 *     starts with gp__ctx_stream, which calls gp__managed_push) the dirty pages go to
 *     the pool in bulk (MANAGED_PUSH) and are protected again. A registration that is
 *     not page-aligned shares its first and last pages with the program's other data,
 *     which a system call must be able to write (read(2) into a protected page fails
 *     with EFAULT): those are never protected, and every push compares the registered
 *     bytes on them with what they held at the last push or pull;
 *   - device writes: at CUDA's synchronization points (context, stream and event
 *     synchronize, a query that reports completion, a synchronous copy or memset) the
 *     worker finds the pages that differ from what this process holds (MANAGED_DIFF) and
 *     sends them (MANAGED_FETCH); they are written here and protected again.
 *
 * So the host must not touch managed memory while kernels run (the pool reports
 * concurrentManagedAccess 0, as CUDA does for devices where that is the rule).
 *
 * The SIGSEGV handler is installed at the first such allocation, and chains: a fault
 * that is not a write to one of our protected pages goes to the handler that was there
 * before (with its SA_SIGINFO form and its mask; SIG_DFL and SIG_IGN end the process as
 * the default action would). A program that installs its own SIGSEGV handler later must
 * chain to ours, as with any library that write-protects memory. The handler is
 * async-signal-safe: it reads the slot table with atomic loads only, calls mprotect
 * (a plain system call), stores atomic flags, and takes no lock (THREADS in
 * interposer.h).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <gpupool/wire.h>

#include "interposer.h"
#include "log.h"

#define PAGE 4096u
#define SLOTS 4096u		    /* managed allocations at once (the worker's bound too) */
#define ALIAS_RETRIES 8		    /* as api_memory.c's */
#define RUNS_MAX (GP_BLOB_MAX / 16) /* runs in one MANAGED_PUSH */
#define PUSH_BATCH (8u << 20)	    /* bytes in one MANAGED_PUSH */
#define PULL_ROUND (16u << 20)	    /* bytes in one MANAGED_DIFF round */

/* One managed allocation. The handler reads base (acquire) and then the rest, which is
 * written before base is published. To use dirty it counts itself in busy and checks base
 * again; slot_drop clears base, waits for busy to be 0, then frees dirty (both sides
 * sequentially consistent: one of them sees the other). */
struct slot {
	_Atomic uintptr_t base; /* 0: free */
	atomic_uint busy;	/* handlers (and gp__managed_write) using this slot's pages */
	size_t len;		/* whole pages */
	atomic_uchar *dirty;	/* one per page: written here since it was last pushed */
	/* The pool's address of base: base itself, but for registered memory (the program's
	 * own pages, mirrored by an allocation elsewhere on the pool). */
	uintptr_t dbase;
	/* The bytes the pool's changes may be written to: all of it, but for registered
	 * memory, whose first and last pages may hold the program's other data. Such an
	 * edge page is never write-protected (a read(2) into a heap object there must not
	 * fail with EFAULT); each push compares its part of [lo, hi) with edge, what it
	 * held at the last push or pull, and sends that part when it changed. */
	uintptr_t lo, hi;
	uint8_t *edge; /* 2 pages (first, last) under managed_lock; NULL when aligned */
	bool edge_valid;
	const void *owner;   /* a library whose __managed__ variables these pages hold */
	struct gp_ictx *ctx; /* the context it was made in */
	/* Advice and prefetches, per allocation (cuMemAdvise, cuMemRangeGetAttribute). */
	bool read_mostly;
	int preferred, last_prefetch; /* a device ordinal, CU_DEVICE_CPU or -2 (none) */
	uint32_t accessed_by;	      /* bit 0: the CPU, bit 1 + d: device d */
};

static struct slot slots[SLOTS];
static pthread_mutex_t managed_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint nlive;	   /* slots in use: no synchronization point pulls without */
static atomic_bool any_dirty;	   /* some page was written since the last push */
static atomic_bool pushing;	   /* a push is under way: another caller waits for it */
static atomic_uint nedged;	   /* registrations with edge pages: every push compares those */
static struct sigaction prev_segv; /* written once, before ours is installed */
static volatile sig_atomic_t prev_reset; /* prev_segv had SA_RESETHAND and ran once */
static bool installed;
static bool conflict_said; /* a page both sides wrote was logged (under managed_lock) */

/* Whether page pg of s is an edge page of a registration, holding other data too: read
 * lock-free (lo and hi are written before base is published). */
static bool is_edge(const struct slot *s, uintptr_t base, size_t pg)
{
	return (pg == 0 && s->lo > base) || (pg == s->len / PAGE - 1 && s->hi < base + s->len);
}

/* ---- the fault handler ---------------------------------------------------------------- */

static void forward(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &prev_segv;
	struct sigaction dfl;
	sigset_t old;

	if (!prev_reset && (p->sa_flags & SA_SIGINFO) && p->sa_sigaction) {
		pthread_sigmask(SIG_BLOCK, &p->sa_mask, &old);
		if (p->sa_flags & SA_RESETHAND)
			prev_reset = 1;
		p->sa_sigaction(sig, si, uc);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	if (!prev_reset && !(p->sa_flags & SA_SIGINFO) && p->sa_handler != SIG_DFL &&
	    p->sa_handler != SIG_IGN) {
		pthread_sigmask(SIG_BLOCK, &p->sa_mask, &old);
		if (p->sa_flags & SA_RESETHAND)
			prev_reset = 1;
		p->sa_handler(sig);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	/* Ignored: a SIGSEGV another process sent is dropped; a real fault cannot be ignored
	 * (the kernel would end the process), so neither here. */
	if (!prev_reset && p->sa_handler == SIG_IGN && si->si_code <= 0)
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	/* A fault happens again when the instruction does, now with the default action; a
	 * sent signal is sent again, delivered once this handler returns. */
	if (si->si_code <= 0)
		raise(sig);
}

/* True when the fault is a write (x86-64 says so in the page-fault error code). */
static bool is_write(const void *uc)
{
#if defined(__x86_64__)
	return (((const ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
	(void)uc;
	return true;
#endif
}

/* Makes the page at a of a live slot writable and dirty, and says whether it was one:
 * lock-free and async-signal-safe (the handler's and gp__managed_write's). */
static bool unprotect(uintptr_t a)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_acquire);
		size_t page;

		if (!base || a < base || a - base >= slots[i].len)
			continue;
		atomic_fetch_add(&slots[i].busy, 1);
		/* Still the slot it was (or one made since at that address): slot_drop now
		 * waits for us before it frees dirty or unmaps the pages. */
		if (atomic_load(&slots[i].base) != base || a - base >= slots[i].len ||
		    is_edge(&slots[i], base, (a - base) / PAGE)) {
			atomic_fetch_sub(&slots[i].busy, 1);
			return false; /* dropped, or an edge page, never protected: not ours */
		}
		page = (a - base) / PAGE;
		/* Writable first, then dirty: a push that clears the flag in between
		 * protects the page again and the write faults once more. */
		if (mprotect((void *)(base + page * PAGE), PAGE, PROT_READ | PROT_WRITE)) {
			atomic_fetch_sub(&slots[i].busy, 1);
			return false;
		}
		atomic_store_explicit(&slots[i].dirty[page], 1, memory_order_release);
		atomic_store_explicit(&any_dirty, true, memory_order_release);
		atomic_fetch_sub(&slots[i].busy, 1);
		return true;
	}
	return false;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (si->si_code == SEGV_ACCERR && is_write(uc) && unprotect((uintptr_t)si->si_addr)) {
		errno = saved;
		return;
	}
	errno = saved;
	forward(sig, si, uc);
}

/* With managed_lock held. */
static int install(void)
{
	struct sigaction sa;

	if (installed)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &prev_segv))
		return -errno;
	installed = true;
	return 0;
}

/* ---- slots (under managed_lock) ---------------------------------------------------------- */

static struct slot *slot_of(uintptr_t p, size_t n)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_relaxed);

		if (base && p >= base && p - base < slots[i].len && n <= slots[i].len - (p - base))
			return &slots[i];
	}
	return NULL;
}

/* The slot whose pool-side pages hold all of [d, d + n). */
static struct slot *slot_of_device(uintptr_t d, size_t n)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];

		if (atomic_load_explicit(&s->base, memory_order_relaxed) && d >= s->dbase &&
		    d - s->dbase < s->len && n <= s->len - (d - s->dbase))
			return s;
	}
	return NULL;
}

static int slot_add(struct gp_ictx *c, uintptr_t base, size_t len, uintptr_t dbase, uintptr_t lo,
		    uintptr_t hi, bool dirty)
{
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];

		if (atomic_load_explicit(&s->base, memory_order_relaxed))
			continue;
		s->dirty = calloc(len / PAGE, sizeof(*s->dirty));
		if (!s->dirty)
			return -ENOMEM;
		for (size_t pg = 0; dirty && pg < len / PAGE; pg++)
			atomic_init(&s->dirty[pg], 1);
		if (dirty)
			atomic_store(&any_dirty, true);
		s->len = len;
		s->dbase = dbase;
		s->lo = lo;
		s->hi = hi;
		s->edge = NULL;
		s->edge_valid = false;
		if ((lo > base || hi < base + len) && !(s->edge = malloc(2 * PAGE))) {
			free(s->dirty);
			s->dirty = NULL;
			return -ENOMEM;
		}
		if (s->edge)
			atomic_fetch_add(&nedged, 1);
		s->owner = NULL;
		s->ctx = c;
		s->read_mostly = false;
		s->preferred = s->last_prefetch = CU_DEVICE_INVALID;
		s->accessed_by = 0;
		atomic_store_explicit(&s->base, base, memory_order_release);
		atomic_fetch_add(&nlive, 1);
		return 0;
	}
	return -ENOSPC;
}

/* The slot goes: no handler finds it from now on, and none still uses it on return. The
 * caller unmaps its pages after this, so that a write racing a free faults into a slot
 * that is gone and ends the program (forward) instead of being let through. */
static void slot_drop(struct slot *s)
{
	atomic_store(&s->base, 0);
	while (atomic_load(&s->busy))
		sched_yield();
	free(s->dirty);
	s->dirty = NULL;
	if (s->edge)
		atomic_fetch_sub(&nedged, 1);
	free(s->edge);
	s->edge = NULL;
	atomic_fetch_sub(&nlive, 1);
}

/* ---- allocation and free ------------------------------------------------------------------ */

static size_t pages_of(size_t bytes)
{
	return (bytes + PAGE - 1) / PAGE * PAGE;
}

static CUresult free_remote(struct gp_ictx *c, uint64_t dptr)
{
	return gp__rpc_mem_free(0, &(struct gp_in_mem_free){.ctx = c->remote, .dptr = dptr}, NULL);
}

/* Maps the pages here, over the registry's reservation of them (registry.c). */
static int map_here(uintptr_t p, size_t len)
{
	void *want = (void *)p;

	return mmap(want, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == want
		       ? 0
		       : -ENOMEM;
}

/* Undoes map_here: the pages go back to the registry's inaccessible reservation. */
static void unmap_here(uintptr_t p, size_t len)
{
	mmap((void *)p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
	     0);
}

CUresult gp__managed_alloc(struct gp_ictx *c, size_t bytes, unsigned flags, bool host,
			   unsigned host_flags, CUdeviceptr *out)
{
	uint64_t aside[ALIAS_RETRIES];
	int naside = 0, ret = -EEXIST;
	size_t len = pages_of(bytes);
	uint64_t p = 0;
	CUresult r = CUDA_SUCCESS;

	if (sysconf(_SC_PAGESIZE) != PAGE)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&managed_lock);
	if (install()) {
		pthread_mutex_unlock(&managed_lock);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	while (naside < ALIAS_RETRIES) {
		struct gp_out_managed_alloc o;

		r = gp__rpc_managed_alloc(0,
					  &(struct gp_in_managed_alloc){
						  .ctx = c->remote, .bytes = bytes, .flags = flags},
					  &o);
		if (r != CUDA_SUCCESS)
			break;
		p = o.dptr;
		/* Reserved here first (-EEXIST: something of this process is there), then
		 * mapped over the reservation. */
		ret = gp__range_add((uintptr_t)p, bytes, host ? GP_MEM_HOST : GP_MEM_DEVICE, c,
				    (host ? host_flags : 0) | GP_RANGE_MANAGED);
		if (!ret && map_here((uintptr_t)p, len)) {
			gp__range_remove((uintptr_t)p, host ? GP_MEM_HOST : GP_MEM_DEVICE);
			ret = -ENOMEM;
		}
		if (ret != -EEXIST)
			break;
		aside[naside++] = p; /* host memory here sits at that address: take another */
	}
	if (r == CUDA_SUCCESS && !ret) {
		ret = slot_add(c, (uintptr_t)p, len, (uintptr_t)p, (uintptr_t)p, (uintptr_t)p + len,
			       false);
		if (ret) {
			unmap_here((uintptr_t)p, len);
			gp__range_remove((uintptr_t)p, host ? GP_MEM_HOST : GP_MEM_DEVICE);
		}
	}
	if (r == CUDA_SUCCESS && ret) {
		if (ret != -EEXIST)
			free_remote(c, p);
		gp_log_warnx("managed allocation: no address free in both processes");
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&managed_lock);
	while (naside > 0)
		free_remote(c, aside[--naside]);
	if (r == CUDA_SUCCESS)
		*out = (CUdeviceptr)p;
	return r;
}

CUresult gp__managed_free(const struct gp_range *rg)
{
	bool host = rg->kind == GP_MEM_HOST;
	size_t len = pages_of(rg->size);
	struct slot *s;

	pthread_mutex_lock(&managed_lock);
	s = slot_of(rg->base, len);
	if (!s || atomic_load(&s->base) != rg->base) {
		pthread_mutex_unlock(&managed_lock);
		return CUDA_ERROR_INVALID_VALUE; /* another thread freed it first */
	}
	/* The slot goes first, so a write from now on is not let through; then back to the
	 * registry's reservation before the registry lets that go. */
	slot_drop(s);
	unmap_here(rg->base, len);
	gp__range_remove(rg->base, host ? GP_MEM_HOST : GP_MEM_DEVICE);
	pthread_mutex_unlock(&managed_lock);
	return free_remote(rg->ctx, rg->base);
}

/* The program's own pages [p, p + n), mirrored by managed memory of the pool at another
 * address (*dptr is p's there): every page is sent before the next stream-ordered call,
 * then write-protected and kept coherent like managed memory. */
CUresult gp__managed_register(struct gp_ictx *c, void *p, size_t n, unsigned flags,
			      CUdeviceptr *dptr)
{
	uintptr_t hbase = (uintptr_t)p / PAGE * PAGE;
	size_t len = pages_of((uintptr_t)p + n - hbase);
	struct gp_out_managed_alloc o;
	CUresult r;
	int ret;

	if (sysconf(_SC_PAGESIZE) != PAGE)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&managed_lock);
	if (install()) {
		pthread_mutex_unlock(&managed_lock);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* A page is one slot's: the edge pages of another registration are taken. */
	for (uintptr_t a = hbase; a < hbase + len; a += PAGE) {
		if (slot_of(a, 1)) {
			r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
			goto out;
		}
	}
	r = gp__rpc_managed_alloc(0,
				  &(struct gp_in_managed_alloc){.ctx = c->remote,
								.bytes = len,
								.flags = CU_MEM_ATTACH_GLOBAL},
				  &o);
	if (r != CUDA_SUCCESS)
		goto out;
	/* The mirror's address is device memory here too (unified copies tell by address). */
	ret = gp__range_add((uintptr_t)o.dptr, len, GP_MEM_DEVICE, c, GP_RANGE_MIRROR);
	if (!ret) {
		ret = gp__range_add((uintptr_t)p, n, GP_MEM_HOST, c,
				    flags | GP_RANGE_REGISTERED | GP_RANGE_MANAGED);
		if (ret)
			gp__range_remove((uintptr_t)o.dptr, GP_MEM_DEVICE);
	}
	if (!ret) {
		ret = slot_add(c, hbase, len, (uintptr_t)o.dptr, (uintptr_t)p, (uintptr_t)p + n,
			       true);
		if (ret) {
			gp__range_remove((uintptr_t)p, GP_MEM_HOST);
			gp__range_remove((uintptr_t)o.dptr, GP_MEM_DEVICE);
		}
	}
	if (ret) {
		free_remote(c, o.dptr);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*dptr = (CUdeviceptr)(o.dptr + ((uintptr_t)p - hbase));
out:
	pthread_mutex_unlock(&managed_lock);
	return r;
}

/* Ends a registration made by gp__managed_register: the pages are the program's again,
 * writable, with what they held at the last synchronization point. */
CUresult gp__managed_unregister(const struct gp_range *rg)
{
	uintptr_t hbase = rg->base / PAGE * PAGE;
	struct slot *s;
	uintptr_t d;

	pthread_mutex_lock(&managed_lock);
	s = slot_of(rg->base, 1);
	if (!s || atomic_load(&s->base) != hbase || s->lo != rg->base) {
		pthread_mutex_unlock(&managed_lock);
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	}
	d = s->dbase;
	mprotect((void *)hbase, s->len, PROT_READ | PROT_WRITE);
	slot_drop(s);
	gp__range_remove(rg->base, GP_MEM_HOST);
	gp__range_remove(d, GP_MEM_DEVICE);
	pthread_mutex_unlock(&managed_lock);
	return free_remote(rg->ctx, d);
}

bool gp__managed_device_ptr(const void *p, CUdeviceptr *d)
{
	struct slot *s;

	if (!atomic_load_explicit(&nlive, memory_order_acquire))
		return false;
	pthread_mutex_lock(&managed_lock);
	s = slot_of((uintptr_t)p, 1);
	if (s)
		*d = (CUdeviceptr)(s->dbase + ((uintptr_t)p - atomic_load(&s->base)));
	pthread_mutex_unlock(&managed_lock);
	return s != NULL;
}

CUresult gp__managed_global(struct gp_ictx *c, const struct gp_imodule *m, const char *name,
			    CUdeviceptr *dptr, size_t *bytes)
{
	struct gp_out_managed_global o;
	struct gp_range rg;
	struct slot *s;
	bool fresh = false;
	CUresult r;

	if (sysconf(_SC_PAGESIZE) != PAGE)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&managed_lock);
	if (install()) {
		r = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	r = gp__rpc_managed_global(0,
				   &(struct gp_in_managed_global){
					   .ctx = c->remote, .library = m->remote, .symbol = name},
				   &o);
	if (r != CUDA_SUCCESS)
		goto out;
	if (o.base % PAGE || o.len % PAGE || o.len == 0 || o.dptr < o.base ||
	    o.bytes > o.len - (o.dptr - o.base)) {
		r = CUDA_ERROR_UNKNOWN;
		goto out;
	}
	s = slot_of((uintptr_t)o.base, (size_t)o.len);
	if (s && (atomic_load(&s->base) != o.base || s->len != o.len || s->owner != m)) {
		r = CUDA_ERROR_NOT_SUPPORTED; /* pages shared with other managed memory */
		goto out;
	}
	if (!s) {
		/* The block's addresses are reserved here as the library's (a global range), then
		 * mapped over that reservation. */
		if (gp__range_add_global((uintptr_t)o.base, (size_t)o.len, c, m) ||
		    !gp__range_find((uintptr_t)o.base, &rg) || (rg.flags & GP_RANGE_UNSHADOWED) ||
		    map_here((uintptr_t)o.base, (size_t)o.len) ||
		    slot_add(c, (uintptr_t)o.base, (size_t)o.len, (uintptr_t)o.base,
			     (uintptr_t)o.base, (uintptr_t)(o.base + o.len), false)) {
			r = CUDA_ERROR_NOT_SUPPORTED; /* host memory here sits at those addresses */
			goto out;
		}
		s = slot_of((uintptr_t)o.base, (size_t)o.len);
		s->owner = m;
		fresh = true;
	}
	if (dptr)
		*dptr = (CUdeviceptr)o.dptr;
	if (bytes)
		*bytes = (size_t)o.bytes;
out:
	pthread_mutex_unlock(&managed_lock);
	/* The variables' initial values come with the first pull. */
	return r == CUDA_SUCCESS && fresh ? gp__managed_pull() : r;
}

void gp__managed_forget_ctx(struct gp_ictx *c)
{
	if (!atomic_load_explicit(&nlive, memory_order_acquire))
		return;
	pthread_mutex_lock(&managed_lock);
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		uintptr_t base = atomic_load_explicit(&s->base, memory_order_relaxed);

		if (!base || s->ctx != c)
			continue;
		/* The program's registered pages stay its own, writable; the rest goes back to
		 * the reservation the registry is about to let go. */
		if (s->dbase != base) {
			mprotect((void *)base, s->len, PROT_READ | PROT_WRITE);
			slot_drop(s);
		} else {
			slot_drop(s);
			unmap_here(base, s->len);
		}
	}
	pthread_mutex_unlock(&managed_lock);
}

void gp__managed_forget_owner(const void *owner)
{
	if (!atomic_load_explicit(&nlive, memory_order_acquire))
		return;
	pthread_mutex_lock(&managed_lock);
	for (unsigned i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		uintptr_t base = atomic_load_explicit(&s->base, memory_order_relaxed);

		if (base && s->owner == owner) {
			slot_drop(s);
			unmap_here(base, s->len);
		}
	}
	pthread_mutex_unlock(&managed_lock);
}

/* ---- host writes to the pool ---------------------------------------------------------------- */

struct batch {
	uint64_t runs[RUNS_MAX][2];
	size_t nruns;
	uint8_t *data;
	size_t used;
};

static CUresult batch_send(struct batch *b)
{
	CUresult r;

	if (b->nruns == 0)
		return CUDA_SUCCESS;
	r = gp__rpc_managed_push(GP_F_NO_REPLY,
				 &(struct gp_in_managed_push){.runs = b->runs,
							      .runs_len = b->nruns * 16,
							      .data = b->data,
							      .data_len = b->used},
				 NULL);
	b->nruns = 0;
	b->used = 0;
	return r;
}

/* The edge pages of registration s: the part of each in [lo, hi) goes when it is not what
 * it was at the last push or pull (the pool takes runs of any length). Only that part: a
 * device write there since then must not be undone by the program's other data. */
static CUresult push_edges(struct batch *b, struct slot *s, uintptr_t base)
{
	size_t last = s->len / PAGE - 1;
	CUresult r = CUDA_SUCCESS;

	for (int e = 0; e < 2 && r == CUDA_SUCCESS; e++) {
		size_t pg = e ? last : 0;
		uintptr_t page = base + pg * PAGE;
		uintptr_t lo = s->lo > page ? s->lo : page;
		uintptr_t hi = s->hi < page + PAGE ? s->hi : page + PAGE;
		uint8_t *snap = s->edge + e * PAGE + (lo - page);

		if (!is_edge(s, base, pg) || (e && last == 0) || lo >= hi)
			continue;
		atomic_store(&s->dirty[pg], 0);
		if (s->edge_valid && !memcmp(snap, (const void *)lo, hi - lo))
			continue;
		memcpy(snap, (const void *)lo, hi - lo);
		if (b->nruns == RUNS_MAX || b->used + (hi - lo) > PUSH_BATCH)
			r = batch_send(b);
		b->runs[b->nruns][0] = s->dbase + (lo - base);
		b->runs[b->nruns][1] = hi - lo;
		b->nruns++;
		memcpy(b->data + b->used, snap, hi - lo);
		b->used += hi - lo;
	}
	s->edge_valid = true;
	return r;
}

CUresult gp__managed_push(void)
{
	struct batch *b;
	CUresult r = CUDA_SUCCESS;

	/* Edge pages are never protected, so whether they changed is not known without
	 * looking: while a registration has some, every push looks. */
	if (!atomic_load_explicit(&any_dirty, memory_order_acquire) &&
	    !atomic_load_explicit(&pushing, memory_order_acquire) &&
	    !atomic_load_explicit(&nedged, memory_order_acquire))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&managed_lock);
	atomic_store(&pushing, true);
	atomic_store(&any_dirty, false);
	b = malloc(sizeof(*b));
	if (b)
		b->data = malloc(PUSH_BATCH);
	if (!b || !b->data) {
		atomic_store(&any_dirty, true); /* nothing was taken: try again next time */
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	b->nruns = b->used = 0;
	for (unsigned i = 0; i < SLOTS && r == CUDA_SUCCESS; i++) {
		struct slot *s = &slots[i];
		uintptr_t base = atomic_load_explicit(&s->base, memory_order_relaxed);
		size_t npages = base ? s->len / PAGE : 0;

		if (base && s->edge)
			r = push_edges(b, s, base);
		for (size_t pg = 0; pg < npages && r == CUDA_SUCCESS; pg++) {
			size_t end = pg + 1, n;

			if (!atomic_exchange(&s->dirty[pg], 0) || is_edge(s, base, pg))
				continue;
			while (end < npages && end - pg < PUSH_BATCH / PAGE &&
			       !is_edge(s, base, end) && atomic_exchange(&s->dirty[end], 0))
				end++;
			n = (end - pg) * PAGE;
			/* Clean now, protected, then read: a write after the flag was cleared
			 * either made it into the bytes read or faults and marks it again. */
			mprotect((void *)(base + pg * PAGE), n, PROT_READ);
			if (b->nruns == RUNS_MAX || b->used + n > PUSH_BATCH)
				r = batch_send(b);
			b->runs[b->nruns][0] = s->dbase + pg * PAGE;
			b->runs[b->nruns][1] = n;
			b->nruns++;
			memcpy(b->data + b->used, (const void *)(base + pg * PAGE), n);
			b->used += n;
			pg = end - 1;
		}
	}
	if (r == CUDA_SUCCESS)
		r = batch_send(b);
out:
	if (b)
		free(b->data);
	free(b);
	atomic_store(&pushing, false);
	pthread_mutex_unlock(&managed_lock);
	return r;
}

bool gp__managed_holds(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;

	if (!n || !atomic_load_explicit(&nlive, memory_order_acquire))
		return false;
	for (unsigned i = 0; i < SLOTS; i++) {
		uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_acquire);

		if (base && a < base + slots[i].len && base < a + n)
			return true;
	}
	return false;
}

void gp__managed_write(void *dst, const void *src, size_t n)
{
	uintptr_t first = (uintptr_t)dst / PAGE * PAGE, end = (uintptr_t)dst + n;

	/* Writable and dirty first, then written: a push in between protects a page again,
	 * and the copy faults into the handler, which does the same (a bulk read straight
	 * into such a page would fail with EFAULT instead). */
	for (uintptr_t a = first;
	     n && atomic_load_explicit(&nlive, memory_order_acquire) && a < end; a += PAGE)
		unprotect(a);
	memcpy(dst, src, n);
}

/* ---- device writes from the pool ------------------------------------------------------------ */

/* The pool's bytes [lo, hi) were written to registration s: what its edge pages hold of
 * them is what the next push compares with. */
static void edge_note(struct slot *s, uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	size_t last = s->len / PAGE - 1;

	if (!s->edge_valid)
		return; /* not pushed yet: the first push sends the edges whole */
	for (int e = 0; e < 2; e++) {
		uintptr_t page = base + (e ? last : 0) * PAGE;
		uintptr_t a = lo > page ? lo : page, z = hi < page + PAGE ? hi : page + PAGE;

		if (a < z && is_edge(s, base, e ? last : 0))
			memcpy(s->edge + e * PAGE + (a - page), (const void *)a, z - a);
	}
}

/* Writes what MANAGED_FETCH brought; every run must lie in one of our allocations. */
static CUresult apply(const uint8_t *buf, uint64_t bytes, uint64_t nruns)
{
	const uint8_t *data;
	uint64_t sum = 0;

	if (nruns == 0 || nruns > bytes / 16)
		return CUDA_ERROR_UNKNOWN;
	for (uint64_t i = 0; i < nruns; i++) {
		uint64_t run[2];

		memcpy(run, buf + i * 16, sizeof(run));
		if (run[1] == 0 || run[0] % PAGE || run[1] % PAGE ||
		    !slot_of_device((uintptr_t)run[0], (size_t)run[1]))
			return CUDA_ERROR_UNKNOWN;
		sum += run[1];
	}
	if (sum != bytes - nruns * 16)
		return CUDA_ERROR_UNKNOWN;
	data = buf + nruns * 16;
	for (uint64_t i = 0; i < nruns; i++) {
		uint64_t run[2];
		struct slot *s;
		uintptr_t base, h, lo, hi;

		memcpy(run, buf + i * 16, sizeof(run));
		s = slot_of_device((uintptr_t)run[0], (size_t)run[1]);
		base = atomic_load_explicit(&s->base, memory_order_relaxed);
		h = base + ((uintptr_t)run[0] - s->dbase);
		/* Only the slot's own bytes: a registration's edge pages hold other data too. */
		lo = h > s->lo ? h : s->lo;
		hi = h + run[1] < s->hi ? h + run[1] : s->hi;
		for (uint64_t off = 0; off < run[1] && !conflict_said; off += PAGE) {
			size_t pg = (h + off - base) / PAGE;

			if (!is_edge(s, base, pg) && atomic_load(&s->dirty[pg])) {
				/* CUDA leaves this undefined; say so once, when asked to talk. */
				gp_log_warnx(
					"managed memory at %#lx: written by the host and by the "
					"device since the last synchronization (the host must "
					"not touch managed memory while kernels run: "
					"concurrentManagedAccess is 0); the device's bytes win",
					(unsigned long)(h + off));
				conflict_said = true;
			}
		}
		mprotect((void *)h, run[1], PROT_READ | PROT_WRITE);
		if (lo < hi)
			memcpy((void *)lo, data + (lo - h), hi - lo);
		data += run[1];
		if (s->edge && lo < hi)
			edge_note(s, base, lo, hi);
		/* Pages written here and not pushed yet stay writable, and edge pages; the rest
		 * is protected. */
		for (uint64_t off = 0; off < run[1];) {
			size_t pg = (h + off - base) / PAGE, k = 0;

			while (off + k * PAGE < run[1] && !atomic_load(&s->dirty[pg + k]) &&
			       !is_edge(s, base, pg + k))
				k++;
			if (k)
				mprotect((void *)(h + off), k * PAGE, PROT_READ);
			off += (k ? k : 1) * PAGE;
		}
	}
	return CUDA_SUCCESS;
}

CUresult gp__managed_pull(void)
{
	struct gp_out_managed_diff o = {0};
	CUresult r = CUDA_SUCCESS;

	if (!atomic_load_explicit(&nlive, memory_order_acquire))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&managed_lock);
	do {
		uint8_t *buf;

		r = gp__rpc_managed_diff(0, &(struct gp_in_managed_diff){.max = PULL_ROUND}, &o);
		if (r != CUDA_SUCCESS || o.bytes == 0)
			break;
		if (o.bytes > PULL_ROUND) {
			r = CUDA_ERROR_UNKNOWN;
			break;
		}
		buf = malloc((size_t)o.bytes);
		if (!buf) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		r = gp__rpc_managed_fetch(
			0, &(struct gp_in_managed_fetch){.diff = buf, .diff_len = o.bytes}, NULL);
		if (r == CUDA_SUCCESS)
			r = apply(buf, o.bytes, o.runs);
		free(buf);
	} while (r == CUDA_SUCCESS && o.more);
	pthread_mutex_unlock(&managed_lock);
	if (r == CUDA_ERROR_UNKNOWN)
		gp_log_warnx("managed memory: the pool's changes did not fit our allocations");
	return r;
}

/* ---- prefetch, advice, attachment ----------------------------------------------------------
 * Pages move at launches and synchronization points whatever the program advises, so these
 * check their arguments as CUDA does and record what range queries report back; none
 * changes where the data is. Advice and prefetches are kept per allocation: a range is
 * answered with what was last said of any part of its allocation. */

/* The slot holding all of [p, p + n), taken with managed_lock held; NULL when there is none. */
static struct slot *range_slot(CUdeviceptr p, size_t n)
{
	if (n == 0)
		return NULL;
	return slot_of((uintptr_t)p, n);
}

/* A location as one int: a device ordinal, CU_DEVICE_CPU, or -2 for one CUDA refuses. */
static int location_of(CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return loc.id >= 0 && loc.id < gp__client.ndev ? loc.id : -2;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return CU_DEVICE_CPU;
	default:
		return -2;
	}
}

/* CUDA takes a GPU as a prefetch target or in location advice only where the device has
 * concurrent managed access, which the pool does not report. */
static bool gpu_refused(int where)
{
	return where >= 0 &&
	       !gp__client.dev[where].attr[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS];
}

static CUresult prefetch(CUdeviceptr p, size_t n, int where, unsigned flags, CUstream s, bool pt)
{
	struct gp_ictx *c;
	struct slot *sl;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (where == -2 || gpu_refused(where))
		return CUDA_ERROR_INVALID_DEVICE;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&managed_lock);
	sl = range_slot(p, n);
	if (sl)
		sl->last_prefetch = where;
	pthread_mutex_unlock(&managed_lock);
	return sl ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUdevice dev, CUstream s)
{
	return prefetch(p, n,
			dev == CU_DEVICE_CPU || (dev >= 0 && dev < gp__client.ndev) ? dev : -2, 0,
			s, false);
}

GP_CUDA_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t n, CUdevice dev, CUstream s)
{
	return prefetch(p, n,
			dev == CU_DEVICE_CPU || (dev >= 0 && dev < gp__client.ndev) ? dev : -2, 0,
			s, true);
}

GP_CUDA_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation loc,
					      unsigned int flags, CUstream s)
{
	return prefetch(p, n, location_of(loc), flags, s, false);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags,
				    CUstream s);
GP_CUDA_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n, CUmemLocation loc,
						   unsigned int flags, CUstream s)
{
	return prefetch(p, n, location_of(loc), flags, s, true);
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, int where)
{
	struct slot *sl;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		return CUDA_ERROR_INVALID_VALUE;
	/* Read-mostly needs no location; the others a device or the CPU. */
	if (advice > CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
	    advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION && (where == -2 || gpu_refused(where)))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&managed_lock);
	sl = range_slot(p, n);
	if (sl) {
		switch (advice) {
		case CU_MEM_ADVISE_SET_READ_MOSTLY:
		case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
			sl->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
			break;
		case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
			sl->preferred = where;
			break;
		case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
			sl->preferred = CU_DEVICE_INVALID;
			break;
		case CU_MEM_ADVISE_SET_ACCESSED_BY:
			sl->accessed_by |= 1u << (where + 1);
			break;
		default:
			sl->accessed_by &= ~(1u << (where + 1));
		}
	}
	pthread_mutex_unlock(&managed_lock);
	return sl ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUdevice dev)
{
	return advise(p, n, advice,
		      dev == CU_DEVICE_CPU || (dev >= 0 && dev < gp__client.ndev) ? dev : -2);
}

GP_CUDA_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, CUmem_advise advice,
				       CUmemLocation loc)
{
	return advise(p, n, advice, location_of(loc));
}

/* One attribute of a slot (managed_lock held). */
static CUresult range_attr(const struct slot *sl, void *data, size_t size,
			   CUmem_range_attribute attr)
{
	int v;

	if (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY) {
		size_t k = 0;

		if (size == 0 || size % 4)
			return CUDA_ERROR_INVALID_VALUE;
		for (int d = -1; d < gp__client.ndev && (k + 1) * 4 <= size; d++)
			if (sl->accessed_by & (1u << (d + 1)))
				((int *)data)[k++] = d;
		for (; (k + 1) * 4 <= size; k++)
			((int *)data)[k] = CU_DEVICE_INVALID;
		return CUDA_SUCCESS;
	}
	if (size != 4)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		v = sl->read_mostly;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		v = sl->preferred;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		v = sl->last_prefetch;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: {
		int w = attr == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE ? sl->preferred
									       : sl->last_prefetch;

		v = w == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST
		    : w >= 0	       ? CU_MEM_LOCATION_TYPE_DEVICE
				       : CU_MEM_LOCATION_TYPE_INVALID;
		break;
	}
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
		v = sl->preferred >= 0 ? sl->preferred : CU_DEVICE_INVALID;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
		v = sl->last_prefetch >= 0 ? sl->last_prefetch : CU_DEVICE_INVALID;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	*(int *)data = v;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *sizes,
						CUmem_range_attribute *attrs, size_t n,
						CUdeviceptr p, size_t count)
{
	struct slot *sl;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!data || !sizes || !attrs || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&managed_lock);
	sl = range_slot(p, count);
	r = sl ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
		r = data[i] ? range_attr(sl, data[i], sizes[i], attrs[i])
			    : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&managed_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
					       CUdeviceptr p, size_t count)
{
	return cuMemRangeGetAttributes(&data, &size, &attr, 1, p, count);
}

/* Attachment says which streams' kernels may use the memory; here it changes nothing
 * (pages move at launches and synchronizations), so it is checked and succeeds. */
static CUresult attach(CUstream s, CUdeviceptr p, size_t len, unsigned flags, bool pt)
{
	struct gp_ictx *c;
	struct slot *sl;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r != CUDA_SUCCESS)
		return r;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&managed_lock);
	sl = slot_of((uintptr_t)p, 1);
	/* The whole allocation, from its start: length 0 or its size. */
	r = sl && atomic_load_explicit(&sl->base, memory_order_relaxed) == p &&
			    (len == 0 || pages_of(len) == sl->len)
		    ? CUDA_SUCCESS
		    : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&managed_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t len,
					       unsigned int flags)
{
	return attach(s, p, len, flags, false);
}

GP_CUDA_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t len,
						    unsigned int flags)
{
	return attach(s, p, len, flags, true);
}

void gp__managed_thread_faults(void)
{
	sigset_t faults;

	sigemptyset(&faults);
	sigaddset(&faults, SIGSEGV);
	sigaddset(&faults, SIGBUS);
	pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}
