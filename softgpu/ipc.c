/* ipc.c -- cuIpc*: device memory and events shared with another process, and the pool's
 * descriptor hand-over (src/softgpu_ipc.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_host.h"
#include "softgpu.h"
#include "softgpu_ipc.h"

/*
 * DESIGN: each device's memory is one memfd (memory.c), so an allocation is a range of a
 * file another process can map. A process that exports anything also makes a registry: one
 * memfd page of records, one per exported allocation (a random tag, its offset and size)
 * and one per interprocess event (a tag and the event's two counters). A handle names the
 * exporter (pid and a random instance id), the two descriptors' numbers there, the record
 * and its tag. The importer reaches the descriptors through /proc/PID/fd/N, which the kernel
 * allows exactly to those who may read the exporter's file descriptors (same user, exporter
 * dumpable, or CAP_SYS_PTRACE: PTRACE_MODE_READ, which Yama's ptrace_scope leaves alone), or
 * is handed them (the pool, provide_fds); it maps the registry, checks that the record is
 * live and that the tag, offset, size and descriptor agree, and only then maps the allocation's
 * pages at a new device address of its own. Both memfds are sealed at their size, and an
 * importer maps nothing else (sealed_memfd): a handle cannot make it map, with its own rights,
 * another file the exporter holds, nor can an exporter shrink a mapping under it (SIGBUS). The tag keeps a guessed or stale handle from opening
 * anything; it is not what protects the memory: whoever can open the exporter's descriptors
 * can map the whole device memfd, as such a process could already read the exporter's memory
 * by other means. An allocation freed by its exporter leaves the registry at once (new opens
 * fail); a mapping already open keeps the memfd and sees whatever the exporter puts at those
 * offsets next (zeros once the pages are given back), never another process's memory, and
 * never faults: CUDA leaves this undefined.
 *
 * Events: an interprocess event's gen and done counters live in its registry slot, written
 * atomically by both processes' stream workers (stream.c polls them while it waits).
 *
 * ipc_lock guards this file's lists and the registry's allocation; it is a leaf, taken under
 * stream.c's queue lock (an event's last reference) and never around a call into another file
 * that locks.
 */

#define MAX_MEM 512
#define MAX_EV 512
#define REG_MAGIC "sgipc01"

struct mem_rec {
	uint64_t tag[2];
	uint64_t off, size;
	uint64_t alloc_id;
	int32_t mem_fd; /* the device memfd's number here */
	uint32_t live;
};

struct registry {
	char magic[8];
	uint8_t instance[8];
	struct mem_rec mem[MAX_MEM];
	struct sg_ipc_evslot ev[MAX_EV];
};

/* The 64 bytes of a CUipcMemHandle or CUipcEventHandle. */
struct handle {
	char magic[4]; /* "sgIM" or "sgIE" */
	uint32_t pid;
	uint8_t instance[8];
	uint64_t tag[2];
	int32_t mem_fd, reg_fd;
	uint32_t slot, pad;
	uint64_t off, size;
};
_Static_assert(sizeof(struct handle) == CU_IPC_HANDLE_SIZE, "a handle is CUDA's 64 bytes");

struct import {
	struct import *next;
	uint8_t instance[8];
	uint32_t slot;
	uint64_t tag[2];
	struct sg_ctx *ctx;
	uint64_t dptr;
	uint8_t *map;
	size_t maplen;
	int refs;
};

/* Descriptors handed over (provide_fds): one entry per exporter and device memfd (its number
 * there; -1 for an event's, which brings only the registry). */
struct provided {
	struct provided *next;
	uint8_t instance[8];
	int32_t exp_mem_fd;
	int mem_fd, reg_fd;
};

static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct registry *reg; /* this process's, once it exports */
static int reg_fd = -1;
static uint8_t instance[8];
static struct import *imports;
static struct provided *provided;

static size_t reg_len(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return (sizeof(struct registry) + (size_t)page - 1) / (size_t)page * (size_t)page;
}

static void random_bytes(void *p, size_t n)
{
	uint8_t *b = p;

	while (n > 0) {
		ssize_t k = getrandom(b, n, 0);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			abort(); /* no randomness: a predictable tag would be worse */
		}
		b += k;
		n -= (size_t)k;
	}
}

/* This process's registry, made on first export (ipc_lock held). */
static int registry_locked(void)
{
	int fd;
	void *m;

	if (reg)
		return 0;
	fd = memfd_create("softgpu-ipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)reg_len()) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		close(fd);
		return -ENOMEM;
	}
	m = mmap(NULL, reg_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	reg = m;
	reg_fd = fd;
	random_bytes(instance, sizeof(instance));
	memcpy(reg->instance, instance, sizeof(instance));
	memcpy(reg->magic, REG_MAGIC, sizeof(reg->magic));
	return 0;
}

static bool mine(const struct handle *h)
{
	return reg && memcmp(h->instance, instance, sizeof(instance)) == 0;
}

/* ---- memory ---- */

SG_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct handle h = {.magic = "sgIM"};
	struct sg_alloc a;
	struct sg_ctx *c;
	struct mem_rec *rec = NULL;
	uint64_t off;
	int fd;
	struct sg_alloc now;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (pHandle == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* any cuMemAlloc'd pointer: the handle names its whole allocation */
	if (!sg_mem_ipc_source(dptr, &a, &fd, &off))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&ipc_lock);
	if (registry_locked()) {
		pthread_mutex_unlock(&ipc_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < MAX_MEM && rec == NULL; i++)
		if (reg->mem[i].live && reg->mem[i].alloc_id == a.id)
			rec = &reg->mem[i];
	for (uint32_t i = 0; i < MAX_MEM && rec == NULL; i++) {
		if (reg->mem[i].live)
			continue;
		rec = &reg->mem[i];
		random_bytes(rec->tag, sizeof(rec->tag));
		rec->off = off;
		rec->size = a.size;
		rec->alloc_id = a.id;
		rec->mem_fd = fd;
		__atomic_store_n(&rec->live, 1, __ATOMIC_RELEASE);
	}
	if (rec) {
		h.pid = (uint32_t)getpid();
		memcpy(h.instance, instance, sizeof(instance));
		memcpy(h.tag, rec->tag, sizeof(h.tag));
		h.mem_fd = fd;
		h.reg_fd = reg_fd;
		h.slot = (uint32_t)(rec - reg->mem);
		h.off = rec->off;
		h.size = rec->size;
	}
	pthread_mutex_unlock(&ipc_lock);
	if (rec == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY; /* MAX_MEM allocations exported at once */
	/* A cuMemFree racing this export may have forgotten the allocation's records before the
	 * one above was made; if the allocation has gone, its free will not come again. */
	if (!sg_mem_find(dptr, &now) || now.id != a.id) {
		sg_ipc_forget(a.id);
		return CUDA_ERROR_INVALID_VALUE;
	}
	memcpy(pHandle, &h, sizeof(h));
	return CUDA_SUCCESS;
}

void sg_ipc_forget(uint64_t alloc_id)
{
	pthread_mutex_lock(&ipc_lock);
	for (uint32_t i = 0; reg && i < MAX_MEM; i++) {
		if (!reg->mem[i].live || reg->mem[i].alloc_id != alloc_id)
			continue;
		__atomic_store_n(&reg->mem[i].live, 0, __ATOMIC_RELEASE);
		memset(reg->mem[i].tag, 0, sizeof(reg->mem[i].tag));
	}
	pthread_mutex_unlock(&ipc_lock);
}

/*
 * Whether fd is a memfd as softgpu makes them, sealed at its size (its size in *size): then a
 * mapping of it cannot fault however its maker behaves, and a handle cannot make this process
 * map, with its own rights, any other file the exporter holds (one it opened read-only).
 */
static bool sealed_memfd(int fd, uint64_t *size)
{
	struct stat st;
	int seals;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return false;
	*size = (uint64_t)st.st_size;
	return true;
}

/* Another process's descriptor through /proc: only a regular file is opened at all (no
 * device, FIFO or terminal a crafted handle or a reused pid names), and never as a
 * controlling terminal or blocking. */
static int open_proc_fd(uint32_t pid, int32_t fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -1;
	return open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

/* The exporter's descriptors for h: handed over, or through /proc. -1 where unreachable. */
static void reach(const struct handle *h, bool want_mem, int *mem_fd, int *rfd)
{
	*mem_fd = *rfd = -1;
	pthread_mutex_lock(&ipc_lock);
	for (struct provided *p = provided; p; p = p->next) {
		/* a memory handle: the device memfd it names (an exporter has one per device) */
		if (memcmp(p->instance, h->instance, sizeof(p->instance)) ||
		    (want_mem && p->exp_mem_fd != h->mem_fd))
			continue;
		*rfd = fcntl(p->reg_fd, F_DUPFD_CLOEXEC, 0);
		if (want_mem && p->mem_fd >= 0)
			*mem_fd = fcntl(p->mem_fd, F_DUPFD_CLOEXEC, 0);
		pthread_mutex_unlock(&ipc_lock);
		return;
	}
	pthread_mutex_unlock(&ipc_lock);
	if (h->pid == 0 || h->reg_fd < 0 || (want_mem && h->mem_fd < 0))
		return;
	*rfd = open_proc_fd(h->pid, h->reg_fd);
	if (want_mem)
		*mem_fd = open_proc_fd(h->pid, h->mem_fd);
}

/* The exporter's registry from its descriptor, if it is one and is h's; NULL otherwise. */
static struct registry *registry_of(int fd, const struct handle *h)
{
	struct registry *m;
	uint64_t size;

	if (!sealed_memfd(fd, &size) || size < reg_len())
		return NULL;
	m = mmap(NULL, reg_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (memcmp(m->magic, REG_MAGIC, sizeof(m->magic)) ||
	    memcmp(m->instance, h->instance, sizeof(m->instance))) {
		munmap(m, reg_len());
		return NULL;
	}
	return m;
}

static bool mem_rec_matches(const struct registry *m, const struct handle *h)
{
	const struct mem_rec *rec;

	if (h->slot >= MAX_MEM)
		return false;
	rec = &m->mem[h->slot];
	return __atomic_load_n(&rec->live, __ATOMIC_ACQUIRE) &&
	       memcmp(rec->tag, h->tag, sizeof(h->tag)) == 0 && rec->off == h->off &&
	       rec->size == h->size && rec->mem_fd == h->mem_fd;
}

/* Maps h's allocation from the exporter's device memfd at a new device address. */
static CUresult map_import(struct sg_ctx *c, const struct handle *h, int mem_fd, struct import *im)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), lo, len, size;
	struct sg_alloc a = {0};
	uint8_t *m, *res;

	if (!sealed_memfd(mem_fd, &size) || h->size == 0 || h->off > size ||
	    h->size > size - h->off)
		return CUDA_ERROR_INVALID_HANDLE;
	lo = h->off / page * page;
	len = (h->off + h->size + page - 1) / page * page - lo;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mem_fd, (off_t)lo);
	if (m == MAP_FAILED)
		return CUDA_ERROR_MAP_FAILED;
	/* the device address: an inaccessible reservation, as the arena's */
	res = mmap(sg_mem_ipc_hint(c->dev, len), len, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED) {
		munmap(m, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a.base = (uint64_t)(uintptr_t)res + (h->off - lo);
	a.size = h->size;
	a.host = m + (h->off - lo);
	a.kind = SG_MEM_IPC;
	a.ctx = c;
	a.owner = im;
	im->map = m;
	im->maplen = len;
	im->dptr = a.base;
	if (sg_mem_reserve_add((uint64_t)(uintptr_t)res, len)) {
		munmap(res, len);
		munmap(m, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (sg_mem_map_add(&a)) {
		sg_mem_reserve_del((uint64_t)(uintptr_t)res);
		munmap(res, len);
		munmap(m, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static CUresult open_mem(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	struct handle h;
	struct sg_ctx *c;
	struct registry *m;
	struct import *im;
	int mem_fd, rfd;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (pdptr == NULL || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&h, &handle, sizeof(h));
	if (memcmp(h.magic, "sgIM", 4))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&ipc_lock);
	if (mine(&h)) { /* CUDA: a handle cannot be opened in the process that made it */
		pthread_mutex_unlock(&ipc_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	for (im = imports; im; im = im->next) {
		if (im->ctx == c && im->slot == h.slot &&
		    memcmp(im->instance, h.instance, sizeof(h.instance)) == 0 &&
		    memcmp(im->tag, h.tag, sizeof(h.tag)) == 0) {
			im->refs++; /* opened again here: the same address */
			*pdptr = im->dptr;
			pthread_mutex_unlock(&ipc_lock);
			return CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&ipc_lock);
	reach(&h, true, &mem_fd, &rfd);
	m = registry_of(rfd, &h);
	if (m == NULL || mem_fd < 0 || !mem_rec_matches(m, &h)) {
		sg_log("cuIpcOpenMemHandle: the handle names no live export of process %u", h.pid);
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	im = calloc(1, sizeof(*im));
	if (im == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	memcpy(im->instance, h.instance, sizeof(h.instance));
	memcpy(im->tag, h.tag, sizeof(h.tag));
	im->slot = h.slot;
	im->ctx = c;
	im->refs = 1;
	r = map_import(c, &h, mem_fd, im);
	if (r) {
		free(im);
		goto out;
	}
	pthread_mutex_lock(&ipc_lock);
	im->next = imports;
	imports = im;
	pthread_mutex_unlock(&ipc_lock);
	*pdptr = im->dptr;
out:
	if (m)
		munmap(m, reg_len());
	if (mem_fd >= 0)
		close(mem_fd);
	if (rfd >= 0)
		close(rfd);
	return r;
}

SG_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
					 unsigned int Flags)
{
	return open_mem(pdptr, handle, Flags);
}

#undef cuIpcOpenMemHandle
SG_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
				      unsigned int Flags);
SG_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	return open_mem(pdptr, handle, Flags);
}

SG_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct import **pp, *im = NULL;
	bool last = false;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&ipc_lock);
	for (pp = &imports; *pp; pp = &(*pp)->next) {
		if ((*pp)->dptr != dptr)
			continue;
		im = *pp;
		if (--im->refs == 0) {
			*pp = im->next;
			im->next = NULL;
			last = true;
		}
		break;
	}
	pthread_mutex_unlock(&ipc_lock);
	if (im == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	/* the entry's release (sg_ipc_unmap) frees the import; if the context went first, it
	 * already did */
	if (last)
		sg_mem_ipc_del(dptr);
	return CUDA_SUCCESS;
}

/*
 * The entry leaves the table (close, or its context is destroyed). Kernels may still hold
 * the host address in a block's cache: the pages are replaced by zeros instead of unmapped,
 * and the device address stays reserved, so a racing or stale use reads zeros, not a fault.
 */
void sg_ipc_unmap(const struct sg_alloc *a)
{
	struct import *im = a->owner, **pp;

	pthread_mutex_lock(&ipc_lock);
	for (pp = &imports; *pp; pp = &(*pp)->next) {
		if (*pp == im) {
			*pp = im->next;
			break;
		}
	}
	pthread_mutex_unlock(&ipc_lock);
	mmap(im->map, im->maplen, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	free(im);
}

/* ---- events ---- */

CUresult sg_ipc_event_attach(struct sg_event *e, const void *handle)
{
	struct handle h;
	struct registry *m;
	struct sg_ipc_evslot *slot = NULL;
	int mem_fd, rfd;

	if (handle == NULL) { /* a new interprocess event: a slot of this process's registry */
		pthread_mutex_lock(&ipc_lock);
		if (registry_locked() == 0) {
			for (uint32_t i = 0; i < MAX_EV && slot == NULL; i++) {
				uint64_t g, d;

				if (reg->ev[i].live)
					continue;
				g = __atomic_load_n(&reg->ev[i].gen, __ATOMIC_ACQUIRE);
				d = __atomic_load_n(&reg->ev[i].done, __ATOMIC_ACQUIRE);
				/* the counters go on from where the slot's last event left them:
				 * a process still holding that one (opened, destroyed here) can
				 * only complete records at or below them, never the new event's */
				slot = &reg->ev[i];
				random_bytes(slot->tag, sizeof(slot->tag));
				__atomic_store_n(&slot->gen, g > d ? g : d, __ATOMIC_RELAXED);
				__atomic_store_n(&slot->done, g > d ? g : d, __ATOMIC_RELAXED);
				__atomic_store_n(&slot->live, 1, __ATOMIC_RELEASE);
			}
		}
		pthread_mutex_unlock(&ipc_lock);
		if (slot == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		e->ipc = slot;
		return CUDA_SUCCESS;
	}
	memcpy(&h, handle, sizeof(h));
	if (memcmp(h.magic, "sgIE", 4) || h.slot >= MAX_EV)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&ipc_lock);
	if (mine(&h)) {
		pthread_mutex_unlock(&ipc_lock);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	pthread_mutex_unlock(&ipc_lock);
	reach(&h, false, &mem_fd, &rfd);
	m = registry_of(rfd, &h);
	if (rfd >= 0)
		close(rfd);
	if (m == NULL || !__atomic_load_n(&m->ev[h.slot].live, __ATOMIC_ACQUIRE) ||
	    memcmp(m->ev[h.slot].tag, h.tag, sizeof(h.tag))) {
		if (m)
			munmap(m, reg_len());
		sg_log("cuIpcOpenEventHandle: the handle names no live event of process %u", h.pid);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	e->ipc = &m->ev[h.slot];
	e->ipc_map = m;
	return CUDA_SUCCESS;
}

void sg_ipc_event_release(struct sg_event *e)
{
	if (e->ipc_map) { /* opened here: the exporter's registry goes */
		munmap(e->ipc_map, reg_len());
	} else if (e->ipc) { /* made here: the slot is free again, its handles open nothing */
		pthread_mutex_lock(&ipc_lock);
		memset(e->ipc->tag, 0, sizeof(e->ipc->tag));
		__atomic_store_n(&e->ipc->live, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ipc_lock);
	}
	e->ipc = NULL;
	e->ipc_map = NULL;
}

SG_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
	struct sg_event *e = (struct sg_event *)event;
	struct handle h = {.magic = "sgIE"};
	CUresult r = sg_inited();

	if (r)
		return r;
	if (pHandle == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_handle_ok(e, SG_K_EVENT) || e->ipc == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (e->ipc_map) /* an opened event is not exported again */
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ipc_lock);
	h.pid = (uint32_t)getpid();
	memcpy(h.instance, instance, sizeof(instance));
	memcpy(h.tag, e->ipc->tag, sizeof(h.tag));
	h.mem_fd = -1;
	h.reg_fd = reg_fd;
	h.slot = (uint32_t)(e->ipc - reg->ev);
	pthread_mutex_unlock(&ipc_lock);
	memcpy(pHandle, &h, sizeof(h));
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (phEvent == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return sg_event_new(c, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, &handle, phEvent);
}

/* ---- the pool's hand-over (src/softgpu_ipc.h) ---- */

static CUresult export_fds(const void *handle, int fds[2])
{
	struct handle h;
	CUresult r = CUDA_ERROR_INVALID_VALUE;

	if (handle == NULL || fds == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&h, handle, sizeof(h));
	fds[0] = fds[1] = -1;
	pthread_mutex_lock(&ipc_lock);
	if (!mine(&h) || h.reg_fd != reg_fd)
		goto out;
	if (memcmp(h.magic, "sgIM", 4) == 0) {
		/* and the memfd it names is the one the export was made from */
		if (h.slot >= MAX_MEM || !reg->mem[h.slot].live ||
		    memcmp(reg->mem[h.slot].tag, h.tag, sizeof(h.tag)) ||
		    reg->mem[h.slot].mem_fd != h.mem_fd)
			goto out;
		fds[0] = fcntl(h.mem_fd, F_DUPFD_CLOEXEC, 0);
	} else if (memcmp(h.magic, "sgIE", 4) == 0) {
		if (h.slot >= MAX_EV || !reg->ev[h.slot].live ||
		    memcmp(reg->ev[h.slot].tag, h.tag, sizeof(h.tag)))
			goto out;
	} else {
		goto out;
	}
	fds[1] = fcntl(reg_fd, F_DUPFD_CLOEXEC, 0);
	if (fds[1] < 0 || (memcmp(h.magic, "sgIM", 4) == 0 && fds[0] < 0)) {
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		fds[0] = fds[1] = -1;
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&ipc_lock);
	return r;
}

static CUresult provide_fds(const void *handle, const int fds[2])
{
	struct handle h;
	struct provided *p, *old;
	struct registry *m;
	uint64_t size;

	if (handle == NULL || fds == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&h, handle, sizeof(h));
	if (memcmp(h.magic, "sgIM", 4) && memcmp(h.magic, "sgIE", 4))
		return CUDA_ERROR_INVALID_VALUE;
	m = registry_of(fds[1], &h); /* the registry must be the handle's exporter's */
	if (m == NULL || (fds[0] >= 0 && !sealed_memfd(fds[0], &size))) {
		if (m)
			munmap(m, reg_len());
		return CUDA_ERROR_INVALID_VALUE;
	}
	munmap(m, reg_len());
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(p->instance, h.instance, sizeof(p->instance));
	p->exp_mem_fd = fds[0] >= 0 ? h.mem_fd : -1;
	p->reg_fd = fcntl(fds[1], F_DUPFD_CLOEXEC, 0);
	p->mem_fd = fds[0] >= 0 ? fcntl(fds[0], F_DUPFD_CLOEXEC, 0) : -1;
	if (p->reg_fd < 0 || (fds[0] >= 0 && p->mem_fd < 0)) {
		if (p->reg_fd >= 0)
			close(p->reg_fd);
		if (p->mem_fd >= 0)
			close(p->mem_fd);
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&ipc_lock);
	/* the latest for one exporter's device memfd (or its events) replaces the earlier */
	for (old = provided; old; old = old->next)
		if (memcmp(old->instance, p->instance, sizeof(p->instance)) == 0 &&
		    old->exp_mem_fd == p->exp_mem_fd)
			break;
	if (old) {
		close(old->reg_fd);
		if (old->mem_fd >= 0)
			close(old->mem_fd);
		old->reg_fd = p->reg_fd;
		old->mem_fd = p->mem_fd;
		free(p);
	} else {
		p->next = provided;
		provided = p;
	}
	pthread_mutex_unlock(&ipc_lock);
	return CUDA_SUCCESS;
}

const struct gp__softgpu_ipc gp__softgpu_ipc = {
	.size = sizeof(struct gp__softgpu_ipc),
	.export_fds = export_fds,
	.provide_fds = provide_fds,
};
