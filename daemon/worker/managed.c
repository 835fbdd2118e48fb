/* managed.c -- managed memory (and mapped page-locked memory) shared with the client.
 *
 * The client maps anonymous memory at the very address of each managed allocation, so
 * one pointer is valid on both sides (interposer/managed.c). The worker allocates it
 * with its driver's cuMemAllocManaged, so it can read and write it from the host here,
 * and keeps a shadow: a copy of what the client holds of it. The client pushes the
 * pages it wrote before anything that may read device memory (MANAGED_PUSH: written to
 * the allocation and to the shadow); at CUDA's synchronization points it asks which
 * pages the device changed (MANAGED_DIFF compares the allocation with the shadow, keeps
 * those pages, and makes the shadow equal them) and fetches them (MANAGED_FETCH). So
 * only pages that changed move, in either direction (docs/protocol.md, "Managed memory").
 *
 * The worker touches the allocations from the host only between the client's
 * synchronization and its next launch: CUDA lets the host touch managed memory only
 * then when concurrentManagedAccess is 0, which is what the pool reports. Every address
 * a push names is checked against these records; the diff reads only them.
 *
 * Everything here runs on the main thread with w->lock held.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

#define PAGE 4096u
#define MANAGED_MAX 4096u		 /* managed allocations one session may hold at once */
#define DIFF_MIN (64ull << 10)		 /* the smallest round a client may ask for */
#define DIFF_MAX (256ull << 20)		 /* and the largest */
#define BYTES_MAX (1ull << 40)		 /* one allocation */
#define RUN_BYTES (2 * sizeof(uint64_t)) /* a run's header: address, bytes */

struct mrec {
	CUdeviceptr ptr;
	uint64_t len; /* whole pages */
	uint64_t ctx;
	uint64_t module; /* a library's block of __managed__ variables; 0: an allocation */
	uint8_t *shadow;
};

static struct mrec recs[MANAGED_MAX];
static unsigned nrecs;
static uint8_t *kept; /* MANAGED_DIFF's answer until MANAGED_FETCH takes it */
static uint64_t kept_len;

static struct mrec *rec_of(CUdeviceptr p, uint64_t n)
{
	for (unsigned i = 0; i < nrecs; i++) {
		struct mrec *m = &recs[i];

		if (p >= m->ptr && p - m->ptr < m->len && n <= m->len - (p - m->ptr))
			return m;
	}
	return NULL;
}

static void rec_drop(unsigned i)
{
	free(recs[i].shadow);
	recs[i] = recs[--nrecs];
}

void gp__managed_forget(struct gp_worker *w, CUdeviceptr ptr)
{
	(void)w;
	for (unsigned i = 0; i < nrecs; i++) {
		if (recs[i].ptr == ptr) {
			rec_drop(i);
			return;
		}
	}
}

void gp__managed_forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	(void)w;
	for (unsigned i = nrecs; i-- > 0;)
		if (recs[i].ctx == ctx)
			rec_drop(i);
}

void gp__managed_forget_module(struct gp_worker *w, uint64_t module)
{
	(void)w;
	for (unsigned i = nrecs; i-- > 0;)
		if (module && recs[i].module == module)
			rec_drop(i);
}

CUresult gp__managed_global_add(struct gp_worker *w, CUdeviceptr ptr, uint64_t size, uint64_t ctx,
				uint64_t module, uint64_t *base, uint64_t *len)
{
	uint64_t n = (size + PAGE - 1) / PAGE * PAGE;
	uint8_t *shadow;

	(void)w;
	if (ptr % PAGE || size == 0 || size > BYTES_MAX)
		return CUDA_ERROR_NOT_SUPPORTED; /* pages shared with other memory */
	for (unsigned i = 0; i < nrecs; i++) {
		if (recs[i].ptr == ptr && recs[i].len == n && recs[i].module == module) {
			*base = ptr;
			*len = n;
			return CUDA_SUCCESS;
		}
		if (ptr < recs[i].ptr + recs[i].len && recs[i].ptr < ptr + n)
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (nrecs == MANAGED_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* The client maps zeroes: the first MANAGED_DIFF brings the initial values. */
	shadow = calloc(1, (size_t)n);
	if (!shadow)
		return CUDA_ERROR_OUT_OF_MEMORY;
	recs[nrecs++] = (struct mrec){ptr, n, ctx, module, shadow};
	*base = ptr;
	*len = n;
	return CUDA_SUCCESS;
}

static void count(struct gp_worker *w, bool pushed, uint64_t bytes)
{
	if (w->stats)
		atomic_fetch_add_explicit(pushed ? &w->stats->managed_in : &w->stats->managed_out,
					  bytes, memory_order_relaxed);
}

CUresult gp__serve_managed_alloc(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_managed_alloc *a,
				 struct gp_out_managed_alloc *o)
{
	static const uint8_t zero[PAGE];
	int dev = a->ctx_dev;
	uint64_t len;
	CUdeviceptr p;
	uint8_t *shadow;
	CUresult r;

	(void)rq;
	if (w->va_vmm)
		return CUDA_ERROR_NOT_SUPPORTED; /* managed memory cannot be put in a window */
	if (a->bytes == 0 || (a->flags != CU_MEM_ATTACH_GLOBAL && a->flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	if (sysconf(_SC_PAGESIZE) != PAGE)
		return CUDA_ERROR_NOT_SUPPORTED; /* the client's pages are 4 KiB */
	if (a->bytes > BYTES_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	len = (a->bytes + PAGE - 1) / PAGE * PAGE;
	if (nrecs == MANAGED_MAX || !gp__charge_fits(w, dev, len))
		return CUDA_ERROR_OUT_OF_MEMORY;
	shadow = calloc(1, (size_t)len); /* what the client holds: zeroes */
	if (!shadow)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuMemAllocManaged, &p, (size_t)len, a->flags);
	if (r != CUDA_SUCCESS)
		goto out_free_shadow;
	if (p % PAGE) {
		/* Pages shared with another allocation could not be tracked apart. */
		gp_log_warnx("managed allocation at %#llx is not page-aligned",
			     (unsigned long long)p);
		r = CUDA_ERROR_NOT_SUPPORTED;
		goto out_free_mem;
	}
	if (gp__alloc_add(w, p, (size_t)len, a->ctx, dev)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free_mem;
	}
	/* The client's mapping starts as zeroes: so does the allocation. Only pages that are
	 * not zero already are written (reading a fresh page does not commit it). */
	for (uint64_t off = 0; off < len; off += PAGE)
		if (memcmp((uint8_t *)(uintptr_t)p + off, zero, PAGE))
			memset((uint8_t *)(uintptr_t)p + off, 0, PAGE);
	recs[nrecs++] = (struct mrec){p, len, a->ctx, 0, shadow};
	o->dptr = p;
	return CUDA_SUCCESS;
out_free_mem:
	w->drv.cuMemFree_v2(p);
out_free_shadow:
	free(shadow);
	return r;
}

/* ---- host writes: MANAGED_PUSH ------------------------------------------------------- */

struct push {
	const uint8_t *runs; /* the checked (address, bytes) pairs */
	size_t nruns;
	size_t at;	  /* the run being written */
	uint64_t run_off; /* bytes of it written */
	uint64_t base;	  /* packed offset where run `at` starts */
};

static void run_get(const uint8_t *runs, size_t i, uint64_t *addr, uint64_t *bytes)
{
	memcpy(addr, runs + i * RUN_BYTES, sizeof(*addr));
	memcpy(bytes, runs + i * RUN_BYTES + sizeof(*addr), sizeof(*bytes));
}

static int push_write(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct push *c = arg;

	(void)off; /* the bytes come in order, packed */
	while (n) {
		uint64_t addr, bytes, k;
		struct mrec *m;

		if (c->at == c->nruns)
			return (int)
				CUDA_ERROR_INVALID_VALUE; /* cannot happen: the sum was checked */
		run_get(c->runs, c->at, &addr, &bytes);
		k = bytes - c->run_off < n ? bytes - c->run_off : n;
		m = rec_of(addr, bytes); /* checked before the bytes were read */
		memcpy((uint8_t *)(uintptr_t)(addr + c->run_off), p, (size_t)k);
		memcpy(m->shadow + (addr - m->ptr) + c->run_off, p, (size_t)k);
		c->run_off += k;
		p += k;
		n -= (size_t)k;
		if (c->run_off == bytes) {
			c->at++;
			c->run_off = 0;
		}
	}
	return 0;
}

CUresult gp__serve_managed_push(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_managed_push *a,
				struct gp_out_managed_push *o)
{
	struct push cp = {.runs = a->runs, .nruns = a->runs_len / RUN_BYTES};
	struct gp_bulk_sink sink = {.write = push_write, .arg = &cp, .staging = w->staging};
	uint64_t total = 0;
	CUresult r;

	(void)o;
	if (a->runs_len % RUN_BYTES || cp.nruns == 0)
		return CUDA_ERROR_INVALID_VALUE; /* the bytes are still read, to stay in step */
	for (size_t i = 0; i < cp.nruns; i++) {
		uint64_t addr, bytes;

		run_get(a->runs, i, &addr, &bytes);
		if (bytes == 0 || !rec_of(addr, bytes) || total + bytes < total)
			return CUDA_ERROR_INVALID_VALUE;
		total += bytes;
	}
	if (total != a->data_len)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__req_recv(w, rq, a->data_len, &sink);
	if (r == CUDA_SUCCESS)
		count(w, true, total);
	return r;
}

/* ---- device writes: MANAGED_DIFF, MANAGED_FETCH ---------------------------------------- */

struct run {
	const struct mrec *m;
	uint64_t off, len;
};

CUresult gp__serve_managed_diff(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_managed_diff *a,
				struct gp_out_managed_diff *o)
{
	struct run *runs = NULL;
	size_t nruns = 0, cap = 0;
	uint64_t used = 0, data = 0;
	uint8_t *buf, *at;
	bool more = false;

	(void)rq;
	free(kept);
	kept = NULL;
	kept_len = 0;
	if (a->max < DIFF_MIN || a->max > DIFF_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < nrecs && !more; i++) {
		const struct mrec *m = &recs[i];
		const uint8_t *dev = (const uint8_t *)(uintptr_t)m->ptr;

		for (uint64_t off = 0; off < m->len; off += PAGE) {
			bool joins = nruns && runs[nruns - 1].m == m &&
				     runs[nruns - 1].off + runs[nruns - 1].len == off;

			if (!memcmp(dev + off, m->shadow + off, PAGE))
				continue;
			if (used + PAGE + (joins ? 0 : RUN_BYTES) > a->max) {
				more = true;
				break;
			}
			if (joins) {
				runs[nruns - 1].len += PAGE;
			} else {
				if (nruns == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct run *nr = realloc(runs, ncap * sizeof(*nr));

					if (!nr) {
						free(runs);
						return CUDA_ERROR_OUT_OF_MEMORY;
					}
					runs = nr;
					cap = ncap;
				}
				runs[nruns++] = (struct run){m, off, PAGE};
				used += RUN_BYTES;
			}
			used += PAGE;
			data += PAGE;
		}
	}
	o->more = more;
	if (nruns == 0) {
		free(runs);
		return CUDA_SUCCESS;
	}
	buf = malloc((size_t)used);
	if (!buf) {
		free(runs);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* Runs first, then their bytes; the shadow becomes what the client will hold. */
	at = buf + nruns * RUN_BYTES;
	for (size_t i = 0; i < nruns; i++) {
		uint64_t addr = runs[i].m->ptr + runs[i].off;

		memcpy(buf + i * RUN_BYTES, &addr, sizeof(addr));
		memcpy(buf + i * RUN_BYTES + sizeof(addr), &runs[i].len, sizeof(runs[i].len));
		memcpy(at, (const uint8_t *)(uintptr_t)addr, (size_t)runs[i].len);
		memcpy(runs[i].m->shadow + runs[i].off, at, (size_t)runs[i].len);
		at += runs[i].len;
	}
	free(runs);
	kept = buf;
	kept_len = used;
	o->bytes = used;
	o->runs = nruns;
	count(w, false, data);
	return CUDA_SUCCESS;
}

CUresult gp__serve_managed_fetch(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_managed_fetch *a,
				 struct gp_out_managed_fetch *o)
{
	struct gp_bulk_source src = {.src = kept};
	int ret;

	(void)o;
	if (!kept || a->diff_len != kept_len)
		return CUDA_ERROR_INVALID_VALUE;
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, kept_len, &src);
	gp_conn_send_unlock(w->client);
	free(kept);
	kept = NULL;
	kept_len = 0;
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
}
