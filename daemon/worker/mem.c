/* mem.c -- device memory: allocations within the session's limit, copies, memsets.
 *
 * Every pointer a client sends is checked, with its length, against the
 * session's own allocations (and the module globals it looked up) before the
 * driver sees it. Calls that arrive with GP_F_NO_REPLY are the client's async
 * variants and go on the stream they name; the others are synchronous. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/va_window.h>

#include "error.h"
#include "grow.h"
#include "log.h"
#include "worker.h"

/*
 * A copy's device layout: height rows of width bytes, pitch apart (pitch 0, or one row:
 * packed). Both directions walk it the same way; the call's GP_RANGE has checked it.
 */
struct layout {
	CUdeviceptr base;
	uint64_t width, height, pitch;
};

/* The device address of packed offset off, and how many bytes follow it contiguously. */
static CUdeviceptr layout_at(const struct layout *l, uint64_t off, uint64_t *run)
{
	if (l->pitch == 0 || l->height == 1) {
		*run = l->width * l->height - off;
		return l->base + off;
	}
	*run = l->width - off % l->width;
	return l->base + (off / l->width) * l->pitch + off % l->width;
}

/* The packed size of a layout; the range check made sure it does not overflow. */
static uint64_t layout_bytes(const struct layout *l)
{
	return l->width * l->height;
}

/* ---- windowed allocations ----------------------------------------------------
 *
 * A session spanning daemons keeps its device addresses in its window (va_window.h). softgpu
 * places its whole arena there (SOFTGPU_VA_WINDOW); NVIDIA's cuMemAlloc cannot be placed, so
 * there (and on softgpu under the test hook GPUPOOL_WORKER_VA_VMM=1) cuMemAlloc and
 * cuMemAllocPitch are served by the virtual memory calls instead: an address range reserved
 * at a chosen address of the device's TiB of the window, one physical allocation mapped into
 * it, read-write access for its device. The records below are the allocator: a new range
 * goes in the lowest gap of the device's TiB that holds it. They are touched by the main
 * thread (allocations, forgotten contexts) and by waiter threads (frees): under wlock.
 */
#define WIN_MAX 65536u /* windowed allocations one session may hold at once */

struct win_alloc {
	CUdeviceptr ptr;
	size_t size; /* reserved and mapped: a multiple of the granularity */
	CUmemGenericAllocationHandle h;
	uint64_t ctx;
	int dev;
};

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static struct win_alloc *wins; /* sorted by ptr */
static size_t nwins, cap_wins;
static size_t granule[GP_STATS_MAX_DEVICES];

static CUdeviceptr win_device_base(const struct gp_worker *w, int dev)
{
	return GP_VA_WINDOW_BASE + (CUdeviceptr)w->va_window * GP_VA_WINDOW_SIZE +
	       (CUdeviceptr)dev * GP_VA_DEVICE_STRIDE;
}

bool gp__mem_in_window(const struct gp_worker *w, int dev, CUdeviceptr p, uint64_t len)
{
	CUdeviceptr lo = win_device_base(w, dev);

	return p >= lo && len <= GP_VA_DEVICE_STRIDE && p - lo <= GP_VA_DEVICE_STRIDE - len;
}

static void win_prop(CUmemAllocationProp *prop, int dev)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = dev;
}

/* The lowest address of dev's TiB where size bytes fit between the records (under wlock);
 * 0 when none. *at: where such a record goes in wins. */
static CUdeviceptr win_gap(const struct gp_worker *w, int dev, size_t size, size_t align,
			   uint32_t *at)
{
	CUdeviceptr lo = win_device_base(w, dev), hi = lo + GP_VA_DEVICE_STRIDE, p = lo;
	uint32_t i;

	for (i = 0; i < nwins && wins[i].ptr < hi; i++) {
		if (wins[i].ptr + wins[i].size <= lo)
			continue;
		if (wins[i].ptr >= p + size)
			break;
		p = (wins[i].ptr + wins[i].size + align - 1) / align * align;
	}
	*at = i;
	return p + size <= hi ? p : 0;
}

/* Gives a windowed range back to the driver: unmapped, released, unreserved. */
static void win_release(struct gp_worker *w, const struct win_alloc *a)
{
	GP_DRV(w, cuMemUnmap, a->ptr, a->size);
	GP_DRV(w, cuMemRelease, a->h);
	GP_DRV(w, cuMemAddressFree, a->ptr, a->size);
}

/* bytes of device dev's memory at an address of its TiB of the window, for context ctx.
 * A range the driver reserves anywhere but where it was asked is given back: the
 * window is not to be left. CUresult. */
static CUresult win_alloc(struct gp_worker *w, int dev, uint64_t ctx, uint64_t bytes,
			  CUdeviceptr *out)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, dev},
			       CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUmemGenericAllocationHandle h;
	struct win_alloc a;
	CUdeviceptr want, got = 0;
	size_t g, size;
	uint32_t at;
	CUresult r;

	if (dev < 0 || dev >= GP_STATS_MAX_DEVICES || bytes > GP_VA_DEVICE_STRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	win_prop(&prop, dev);
	if (!granule[dev]) {
		r = GP_DRV(w, cuMemGetAllocationGranularity, &g, &prop,
			   CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
		if (r != CUDA_SUCCESS)
			return r;
		if (g == 0 || (g & (g - 1)))
			return CUDA_ERROR_NOT_SUPPORTED;
		granule[dev] = g;
	}
	g = granule[dev];
	size = (size_t)((bytes + g - 1) / g * g);
	pthread_mutex_lock(&wlock);
	if (nwins >= WIN_MAX || !GP_GROW(wins, cap_wins, nwins)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_unlock;
	}
	want = win_gap(w, dev, size, g, &at);
	if (!want) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_unlock;
	}
	r = GP_DRV(w, cuMemAddressReserve, &got, size, g, want, 0);
	if (r != CUDA_SUCCESS)
		goto out_unlock;
	if (got != want) {
		gp_log_warnx("session %llu: the driver reserved %#llx, not %#llx in window %u",
			     (unsigned long long)w->session_id, (unsigned long long)got,
			     (unsigned long long)want, w->va_window);
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free_va;
	}
	r = GP_DRV(w, cuMemCreate, &h, size, &prop, 0);
	if (r != CUDA_SUCCESS)
		goto out_free_va;
	r = GP_DRV(w, cuMemMap, got, size, 0, h, 0);
	if (r != CUDA_SUCCESS)
		goto out_release;
	r = GP_DRV(w, cuMemSetAccess, got, size, &acc, 1);
	if (r != CUDA_SUCCESS)
		goto out_unmap;
	a = (struct win_alloc){.ptr = got, .size = size, .h = h, .ctx = ctx, .dev = dev};
	memmove(&wins[at + 1], &wins[at], (nwins - at) * sizeof(*wins));
	wins[at] = a;
	nwins++;
	pthread_mutex_unlock(&wlock);
	*out = got;
	return CUDA_SUCCESS;

out_unmap:
	GP_DRV(w, cuMemUnmap, got, size);
out_release:
	GP_DRV(w, cuMemRelease, h);
out_free_va:
	GP_DRV(w, cuMemAddressFree, got, size);
out_unlock:
	pthread_mutex_unlock(&wlock);
	return r;
}

/* The record of the windowed allocation at ptr, removed into *a; false if none. */
static bool win_take(CUdeviceptr ptr, struct win_alloc *a)
{
	uint32_t lo = 0, hi;

	pthread_mutex_lock(&wlock);
	hi = nwins;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (wins[mid].ptr < ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= nwins || wins[lo].ptr != ptr) {
		pthread_mutex_unlock(&wlock);
		return false;
	}
	*a = wins[lo];
	memmove(&wins[lo], &wins[lo + 1], (nwins - lo - 1) * sizeof(*wins));
	nwins--;
	pthread_mutex_unlock(&wlock);
	return true;
}

CUresult gp__mem_drv_free(struct gp_worker *w, CUdeviceptr dptr)
{
	struct win_alloc a;
	CUresult r;

	if (!w->va_vmm || !win_take(dptr, &a))
		return w->drv.cuMemFree_v2(dptr);
	/* cuMemFree waits for the device; unmapping does not: the context is current. */
	r = w->drv.cuCtxSynchronize();
	win_release(w, &a);
	return r;
}

void gp__mem_window_forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	uint32_t i = 0;

	if (!w->va_vmm)
		return;
	pthread_mutex_lock(&wlock);
	while (i < nwins) {
		if (wins[i].ctx != ctx) {
			i++;
			continue;
		}
		win_release(w, &wins[i]);
		memmove(&wins[i], &wins[i + 1], (nwins - i - 1) * sizeof(*wins));
		nwins--;
	}
	pthread_mutex_unlock(&wlock);
}

bool gp__mem_window_probe(struct gp_worker *w)
{
	for (int d = 0; d < w->ndev; d++) {
		CUdeviceptr p;
		struct win_alloc a;
		CUresult r = win_alloc(w, d, 0, 1, &p);

		if (r != CUDA_SUCCESS) {
			gp_log_info("session %llu: no windowed memory on device %d: %s",
				    (unsigned long long)w->session_id, d,
				    gp_driver_err_name(&w->drv, r));
			return false;
		}
		if (win_take(p, &a))
			win_release(w, &a);
	}
	return true;
}

/* The driver's allocation of bytes for the session's device dev, in its window when it
 * has one and the driver cannot place cuMemAlloc there. */
static CUresult drv_alloc(struct gp_worker *w, int dev, uint64_t ctx, uint64_t bytes,
			  CUdeviceptr *p)
{
	if (w->va_vmm)
		return win_alloc(w, dev, ctx, bytes, p);
	return w->drv.cuMemAlloc_v2(p, (size_t)bytes);
}

/* A pitched allocation the windowed way: CUDA's rules for the element size, the rows padded
 * to the device's texture pitch alignment as its own cuMemAllocPitch pads them. */
static CUresult drv_alloc_pitch(struct gp_worker *w, int dev, uint64_t ctx, uint64_t width,
				uint64_t height, unsigned esize, CUdeviceptr *p, size_t *pitch)
{
	CUdevice d;
	int align = 0;

	if (!w->va_vmm)
		return GP_DRV(w, cuMemAllocPitch_v2, p, pitch, (size_t)width, (size_t)height,
			      esize);
	if (esize != 4 && esize != 8 && esize != 16)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->drv.cuDeviceGet(&d, dev) != CUDA_SUCCESS ||
	    w->drv.cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, d) !=
		    CUDA_SUCCESS ||
	    align <= 0 || (align & (align - 1)))
		align = 512;
	*pitch = (size_t)((width + (uint64_t)align - 1) / (uint64_t)align * (uint64_t)align);
	if (height > GP_VA_DEVICE_STRIDE / *pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return win_alloc(w, dev, ctx, (uint64_t)*pitch * height, p);
}

CUresult gp__serve_mem_alloc(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_mem_alloc *a, struct gp_out_mem_alloc *o)
{
	int dev = a->ctx_dev;
	CUdeviceptr p;
	CUresult r;

	if (a->bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!gp__charge_fits(w, dev, a->bytes))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = drv_alloc(w, dev, a->ctx, a->bytes, &p);
	if (r != CUDA_SUCCESS)
		return r;
	if (gp__alloc_add(w, p, (size_t)a->bytes, a->ctx, dev)) {
		gp__mem_drv_free(w, p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->dptr = p;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_alloc_pitch(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_mem_alloc_pitch *a,
				   struct gp_out_mem_alloc_pitch *o)
{
	int dev = a->ctx_dev;
	CUdeviceptr p;
	size_t pitch;
	uint64_t bytes;
	CUresult r;

	if (a->width == 0 || a->height == 0 || a->width > (1ull << 40) || a->height > (1ull << 40))
		return CUDA_ERROR_INVALID_VALUE;
	/* The limit is checked against the unpadded size first, the padded one after (each
	 * factor is below 2^40, so the product is checked before it is used). */
	if (a->height > UINT64_MAX / a->width ||
	    (w->mem_limit && !gp__charge_fits(w, dev, a->width * a->height)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = drv_alloc_pitch(w, dev, a->ctx, a->width, a->height, a->esize, &p, &pitch);
	if (r != CUDA_SUCCESS)
		return r;
	bytes = (uint64_t)pitch * a->height;
	if (!gp__charge_fits(w, dev, bytes) || gp__alloc_add(w, p, (size_t)bytes, a->ctx, dev)) {
		gp__mem_drv_free(w, p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->dptr = p;
	o->pitch = pitch;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_free(struct gp_worker *w, struct gp_req *rq,
			    const struct gp_wargs_mem_free *a, struct gp_out_mem_free *o)
{
	struct gp_alloc *al = gp__alloc_find(w, a->dptr);
	uint64_t pool;
	CUresult r;

	if (!al || al->ptr != a->dptr || al->module)
		return CUDA_ERROR_INVALID_VALUE;
	/* The driver waits for the device before it frees: a waiter thread makes the call and
	 * answers. The range is the session's no more from now on (the client waits for the
	 * answer; a failed free is only logged by the answer's result). Memory from a pool goes
	 * back to it (cuMemFree takes it too). */
	pool = al->pool;
	if (al->graph) {
		/* graph memory's range stays its graph's (graphmem.c) */
		gp__graphmem_freed(w, al);
	} else {
		gp__managed_forget(w, a->dptr);
		gp__alloc_remove(w, al);
		gp__pool_alloc_freed(w, pool);
	}
	rq->wait = (struct gp_wait){.kind = GP_WAIT_MEM_FREE, .ctx = w->current, .dptr = a->dptr};
	(void)r;
	return CUDA_SUCCESS;
}

CUresult gp__serve_mem_get_info(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_mem_get_info *a,
				struct gp_out_mem_get_info *o)
{
	size_t fr, tot;
	CUresult r = w->drv.cuMemGetInfo_v2(&fr, &tot);

	if (r != CUDA_SUCCESS)
		return r;
	/* The session sees its limit as the device's size. */
	if (w->mem_limit && w->mem_limit < tot) {
		uint64_t used = w->dev_used[a->ctx_dev];
		uint64_t room = used < w->mem_limit ? w->mem_limit - used : 0;

		tot = w->mem_limit;
		if (fr > room)
			fr = room;
	}
	o->free = fr;
	o->total = tot;
	return CUDA_SUCCESS;
}

CUresult gp__serve_memcpy_dtod(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_dtod *a, struct gp_out_memcpy_dtod *o)
{
	CUresult r = CUDA_SUCCESS;

	if (a->height == 0 ||
	    (a->height > 1 && (a->dst_pitch < a->width || a->src_pitch < a->width)))
		return CUDA_ERROR_INVALID_VALUE; /* rows that overlap: CUDA refuses them too */
	/* One driver call however many rows (no bytes: none): a copy of a great many rows of
	 * few bytes must not queue as many copies. */
	if (a->width && a->height == 1) {
		r = GP_DRV(w, cuMemcpyDtoDAsync_v2, a->dst, a->src, (size_t)a->width,
			   a->stream_drv);
	} else if (a->width) {
		CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
				   .srcDevice = a->src,
				   .srcPitch = (size_t)a->src_pitch,
				   .dstMemoryType = CU_MEMORYTYPE_DEVICE,
				   .dstDevice = a->dst,
				   .dstPitch = (size_t)a->dst_pitch,
				   .WidthInBytes = (size_t)a->width,
				   .Height = (size_t)a->height};

		r = GP_DRV(w, cuMemcpy2DAsync_v2, &c, a->stream_drv);
	}
	/* Queued on its stream; a synchronous one is answered from there. */
	return r == CUDA_SUCCESS ? gp__answer_on_stream(w, rq, a->stream_drv) : r;
}

CUresult gp__serve_memset(struct gp_worker *w, struct gp_req *rq, const struct gp_wargs_memset *a,
			  struct gp_out_memset *o)
{
	uint64_t esize = a->esize, count, pitch = a->pitch, height = a->height;
	CUresult r;
	unsigned v = a->value;
	CUdeviceptr dst = a->dst;
	CUstream s = a->stream_drv;

	if ((esize != 1 && esize != 2 && esize != 4) || a->width % esize || dst % esize ||
	    height > (1ull << 32))
		return CUDA_ERROR_INVALID_VALUE;
	count = a->width / esize;
	if (count == 0 || height == 0)
		return CUDA_SUCCESS;
	if (pitch == 0) {
		if (height != 1)
			return CUDA_ERROR_INVALID_VALUE;
		/* Queued on its stream; a synchronous one is answered from there. */
		switch (esize) {
		case 1:
			r = GP_DRV(w, cuMemsetD8Async, dst, (unsigned char)v, count, s);
			break;
		case 2:
			r = GP_DRV(w, cuMemsetD16Async, dst, (unsigned short)v, count, s);
			break;
		default:
			r = GP_DRV(w, cuMemsetD32Async, dst, v, count, s);
		}
	} else {
		switch (esize) {
		case 1:
			r = GP_DRV(w, cuMemsetD2D8Async, dst, pitch, (unsigned char)v, count,
				   height, s);
			break;
		case 2:
			r = GP_DRV(w, cuMemsetD2D16Async, dst, pitch, (unsigned short)v, count,
				   height, s);
			break;
		default:
			r = GP_DRV(w, cuMemsetD2D32Async, dst, pitch, v, count, height, s);
		}
	}
	return r == CUDA_SUCCESS ? gp__answer_on_stream(w, rq, s) : r;
}

/* ---- host <-> device ----------------------------------------------------------- */

struct htod {
	struct gp_worker *w;
	struct layout l;
	CUstream stream;
	bool async;
};

static int htod_write(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct htod *c = arg;
	struct gp_worker *w = c->w;
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr dst = layout_at(&c->l, off, &run);
		size_t k = run < n ? (size_t)run : n;

		/* From pageable memory the driver consumes the source before an async copy
		 * returns, so the staging buffer may be reused at once. */
		if (c->async)
			r = GP_DRV(w, cuMemcpyHtoDAsync_v2, dst, p, k, c->stream);
		else
			r = w->drv.cuMemcpyHtoD_v2(dst, p, k);
		off += k;
		p += k;
		n -= k;
	}
	return (int)r;
}

/* ---- answers from the stream --------------------------------------------------------
 * The main thread reads every frame, HOST_DONE included, and a stream can be held by a
 * host function waiting for one: so it never waits for a stream itself. A copy or memset
 * is queued on its stream (through page-locked staging for host memory), and a stream
 * callback queued after it sends the answer (and, device to host, the bytes first) when
 * the stream gets there; the stream's later work waits for that callback, so whatever
 * observes the copy done is answered after it. A synchronous call's client waits for that
 * answer; for cuMemcpyDtoHAsync into page-locked memory it does not (MEMCPY_DTOH_ASYNC).
 * Staging is bounded per session; past the bound a copy is made at once on this thread. */

#define STAGING_MAX (256ull << 20)

/* How much of a streamed copy is handed to the stream at once (a multiple of the wire's
 * chunk): each hand-over is a copy queued and, on softgpu, a stream thread woken, which on
 * a loaded machine costs a scheduling delay; measured in docs/performance.md. */
#define COPY_UNIT (4ull * GP_CHUNK_SIZE)

struct on_stream {
	struct gp_worker *w;
	uint64_t id;
	bool reply; /* send a Reply (the call was not sent without waiting) */
	bool data;  /* send the staging's bytes as DATA first (device to host) */
	void *buf;  /* page-locked staging (cap bytes of it), back to `spare` after */
	uint64_t bytes, cap;
	CUcontext ctx;	/* the context current when it was taken, its staging's */
	unsigned epoch; /* that context's epoch then */
	struct on_stream *next;
	/* Streamed device to host (more than one COPY_UNIT): the sender thread sends each
	 * unit once the event recorded after it has completed. All under staging_lock. */
	bool streamed;
	bool queued, enqueued, sent; /* handed to the sender; all queued on the stream; sent */
	uint64_t units;		     /* units queued on the stream, an event after each */
	CUevent *ev;		     /* made and destroyed by the main thread */
	CUresult status;	     /* the first failure the stream or the queueing saw */
	struct on_stream *qnext;     /* the sender's queue */
};

/* Staging is made once and kept for the session: freeing page-locked memory synchronizes
 * the device on some drivers (softgpu's), which the main thread must never wait for. It is
 * made in the context current then and goes with it: a spare is reused only in that context
 * (a copy queued in another could outlive it), and is dropped when that context goes, but
 * not when another does. */
struct spare {
	void *buf;
	uint64_t cap;
	CUcontext ctx; /* made in it */
	struct spare *next;
};

/* A context with staging made in it, and its epoch: staging tagged with another epoch (its
 * context went since, and the driver may hand out its address again) is not kept. */
struct ctx_epoch {
	CUcontext ctx;
	unsigned epoch;
	struct ctx_epoch *next;
};

static pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;
static struct on_stream *answered; /* done: their staging is free again */
static struct spare *spares;	   /* staging not in use */
static uint64_t staged;		   /* bytes of staging made (at most STAGING_MAX) */
static unsigned outstanding;	   /* answers queued on streams, not yet reaped */
static struct ctx_epoch *epochs;   /* the live contexts staging was made in */
static unsigned last_epoch;	   /* the epoch a context last got (0: none) */

/* With staging_lock held: ctx's epoch, 0 if it has none; with make, a new one then (0 still
 * if none can be recorded: its staging is not kept). */
static unsigned epoch_of(CUcontext ctx, bool make)
{
	struct ctx_epoch *e;

	for (e = epochs; e; e = e->next)
		if (e->ctx == ctx)
			return e->epoch;
	if (!make || !(e = malloc(sizeof(*e))))
		return 0;
	if (++last_epoch == 0)
		last_epoch = 1;
	*e = (struct ctx_epoch){ctx, last_epoch, epochs};
	epochs = e;
	return e->epoch;
}

/* With staging_lock held: whether staging tagged (ctx, epoch) is still its context's. */
static bool epoch_live(CUcontext ctx, unsigned epoch)
{
	return epoch && epoch_of(ctx, false) == epoch;
}

static void CUDA_CB stream_reached(CUstream s, CUresult status, void *arg)
{
	struct on_stream *o = arg;
	struct gp_worker *w = o->w;
	struct gp_bulk_source src = {.src = o->buf};
	Gp__Reply rep = GP__REPLY__INIT;
	int ret = 0;

	(void)s;
	rep.result = (int32_t)status;
	if (o->reply) {
		gp_conn_send_lock(w->client);
		if (o->data && status == CUDA_SUCCESS)
			ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, o->id, NULL, o->bytes, &src);
		if (!ret)
			ret = gp_conn_send(w->client, GP_MSG_REPLY, 0, o->id, &rep.base, NULL, 0);
		if (!ret)
			gp_conn_flush(w->client);
		gp_conn_send_unlock(w->client);
	}
	pthread_mutex_lock(&staging_lock);
	o->next = answered;
	answered = o;
	pthread_mutex_unlock(&staging_lock);
}

/* With staging_lock held: o's staging is free for another copy. */
static void give_back(struct on_stream *o)
{
	struct spare *sp = o->buf && epoch_live(o->ctx, o->epoch) ? malloc(sizeof(*sp)) : NULL;

	if (sp) {
		*sp = (struct spare){o->buf, o->cap, o->ctx, spares};
		spares = sp;
	} else if (o->buf) {
		staged -= o->cap; /* not kept: the process frees it at its end */
	}
	outstanding--;
	free(o->ev);
	free(o);
}

/* On the main thread, without staging_lock: a streamed copy's events, unless their
 * context went (and they with it). */
static void drop_events(struct gp_worker *w, struct on_stream *o, uint64_t n)
{
	bool live;

	pthread_mutex_lock(&staging_lock);
	live = epoch_live(o->ctx, o->epoch);
	pthread_mutex_unlock(&staging_lock);
	for (uint64_t i = 0; live && o->ev && i < n; i++)
		GP_DRV(w, cuEventDestroy_v2, o->ev[i]);
}

void gp__dtoh_async_reap(struct gp_worker *w)
{
	struct on_stream *o, *list;

	pthread_mutex_lock(&staging_lock);
	list = answered;
	answered = NULL;
	pthread_mutex_unlock(&staging_lock);
	while ((o = list) != NULL) {
		list = o->next;
		if (o->ev)
			drop_events(w, o, (o->bytes + COPY_UNIT - 1) / COPY_UNIT);
		pthread_mutex_lock(&staging_lock);
		give_back(o);
		pthread_mutex_unlock(&staging_lock);
	}
}

void gp__staging_forget(CUcontext ctx)
{
	struct spare **pp = &spares;
	struct ctx_epoch **ep = &epochs;

	pthread_mutex_lock(&staging_lock);
	while (*pp) {
		struct spare *sp = *pp;

		if (sp->ctx != ctx) {
			pp = &sp->next;
			continue;
		}
		*pp = sp->next;
		staged -= sp->cap;
		free(sp);
	}
	/* Staging of ctx still on a stream is not kept when it comes back. */
	while (*ep && (*ep)->ctx != ctx)
		ep = &(*ep)->next;
	if (*ep) {
		struct ctx_epoch *e = *ep;

		*ep = e->next;
		free(e);
	}
	pthread_mutex_unlock(&staging_lock);
}

bool gp__stream_answers_pending(struct gp_worker *w)
{
	bool b;

	gp__dtoh_async_reap(w);
	pthread_mutex_lock(&staging_lock);
	b = outstanding > 0;
	pthread_mutex_unlock(&staging_lock);
	return b;
}

/* An answer from the stream with staging of `bytes` (0: none), or NULL when the bound or
 * the driver says no. */
static struct on_stream *stage(struct gp_worker *w, const struct gp_req *rq, uint64_t bytes)
{
	struct on_stream *o;
	struct spare **pp, *sp = NULL;
	void *buf = NULL;
	uint64_t cap = 0;
	unsigned epoch;
	bool make = false;

	gp__dtoh_async_reap(w);
	if (!w->drv.cuStreamAddCallback || (bytes && !w->drv.cuMemHostAlloc))
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	pthread_mutex_lock(&staging_lock);
	epoch = epoch_of(w->current, true);
	for (pp = &spares; bytes && *pp; pp = &(*pp)->next) {
		if ((*pp)->ctx == w->current && (*pp)->cap >= bytes) {
			sp = *pp;
			*pp = sp->next;
			break;
		}
	}
	if (!sp && bytes && bytes <= STAGING_MAX - staged) {
		staged += bytes;
		make = true;
	}
	pthread_mutex_unlock(&staging_lock);
	if (sp) {
		buf = sp->buf;
		cap = sp->cap;
		free(sp);
	} else if (make) {
		/* Portable: a copy in any of the session's contexts may use it. */
		if (GP_DRV(w, cuMemHostAlloc, &buf, (size_t)bytes, CU_MEMHOSTALLOC_PORTABLE) ==
		    CUDA_SUCCESS) {
			cap = bytes;
		} else {
			pthread_mutex_lock(&staging_lock);
			staged -= bytes;
			pthread_mutex_unlock(&staging_lock);
			buf = NULL;
		}
	}
	if (bytes && !buf) {
		free(o);
		return NULL;
	}
	*o = (struct on_stream){.w = w,
				.id = rq->h->request_id,
				.reply = !rq->async,
				.buf = buf,
				.bytes = bytes,
				.cap = cap,
				.ctx = w->current,
				.epoch = epoch};
	pthread_mutex_lock(&staging_lock);
	outstanding++;
	pthread_mutex_unlock(&staging_lock);
	return o;
}

/* Queues the answer after what was queued on s: from here the call is the callback's. */
static CUresult answer_on(struct gp_worker *w, struct gp_req *rq, struct on_stream *o, CUstream s,
			  CUresult r)
{
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuStreamAddCallback, s, stream_reached, o, 0);
	if (r != CUDA_SUCCESS) {
		/* Copies queued before the failure may still use the staging: it is not given
		 * back (the process frees it at its end). */
		pthread_mutex_lock(&staging_lock);
		o->buf = NULL;
		give_back(o);
		pthread_mutex_unlock(&staging_lock);
		return r;
	}
	rq->answered_later = true;
	return CUDA_SUCCESS;
}

/* Runs of a layout copied between it and staging at p, on stream s. */
static CUresult copy_runs(struct gp_worker *w, const struct layout *l, uint8_t *p, CUstream s,
			  bool to_host)
{
	uint64_t off = 0, total = layout_bytes(l);
	CUresult r = CUDA_SUCCESS;

	while (off < total && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr d = layout_at(l, off, &run);

		r = to_host ? GP_DRV(w, cuMemcpyDtoHAsync_v2, p + off, d, (size_t)run, s)
			    : GP_DRV(w, cuMemcpyHtoDAsync_v2, d, p + off, (size_t)run, s);
		off += run;
	}
	return r;
}

/* Packed bytes [off, off + n) of a layout copied from staging at p + off, on stream s. */
static CUresult copy_part(struct gp_worker *w, const struct layout *l, const uint8_t *p,
			  uint64_t off, uint64_t n, CUstream s)
{
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr d = layout_at(l, off, &run);
		uint64_t k = run < n ? run : n;

		r = GP_DRV(w, cuMemcpyHtoDAsync_v2, d, p + off, (size_t)k, s);
		off += k;
		n -= k;
	}
	return r;
}

/* Packed bytes [off, off + n) of a layout copied into staging at p + off, on stream s. */
static CUresult copy_part_out(struct gp_worker *w, const struct layout *l, uint8_t *p, uint64_t off,
			      uint64_t n, CUstream s)
{
	CUresult r = CUDA_SUCCESS;

	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr d = layout_at(l, off, &run);
		uint64_t k = run < n ? run : n;

		r = GP_DRV(w, cuMemcpyDtoHAsync_v2, p + off, d, (size_t)k, s);
		off += k;
		n -= k;
	}
	return r;
}

/*
 * Host to device through staging, streamed: each frame's bytes land in place in the staging
 * and are queued on the stream a COPY_UNIT at a time, so the device copies one unit while
 * the next is received (the staging holds the whole copy: no bytes are overwritten while a
 * copy may still read them). The stream keeps its order: the pieces are queued in turn and
 * nothing else is queued on it before the last; a synchronous call's answer comes from the
 * stream after the last piece.
 */
struct htod_stream {
	struct gp_worker *w;
	const struct layout *l;
	CUstream s;
	uint64_t queued; /* packed bytes queued on the stream */
};

/* Bytes landed up to off + n: queued a COPY_UNIT at a time, and at the end. */
static int htod_landed(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct htod_stream *hs = arg;
	const uint8_t *base = p - off;
	uint64_t end = off + n;
	CUresult r = CUDA_SUCCESS;

	if (end - hs->queued >= COPY_UNIT || end == layout_bytes(hs->l)) {
		r = copy_part(hs->w, hs->l, base, hs->queued, end - hs->queued, hs->s);
		hs->queued = end;
	}
	return (int)r;
}

static CUresult htod_staged(struct gp_worker *w, struct gp_req *rq, struct on_stream *o,
			    const struct layout *l, uint64_t len, CUstream s)
{
	struct htod_stream hs = {w, l, s, 0};
	struct gp_bulk_sink sink = {.dst = o->buf, .write = htod_landed, .arg = &hs};
	CUresult r = gp__req_recv(w, rq, len, &sink);

	if (rq->err)
		r = CUDA_ERROR_UNKNOWN;
	return answer_on(w, rq, o, s, r);
}

/*
 * Past the staging bound, a copy goes through a ring of RING_SLOTS page-locked units on
 * this thread: host to device, each unit is received into a slot and queued on the stream
 * while the next is received into the next slot; device to host, the stream copies the next
 * units into the other slots while one is sent. A slot is reused once an event recorded
 * after its copy has completed. The copy waits for its last units before it returns (the
 * path this replaces waited for every chunk), so the ring is free for the next one. Whoever
 * waits here waits for the stream on the main thread, as past the bound it always did.
 */
#define RING_SLOTS 4

struct ring {
	struct gp_worker *w;
	const struct layout *l;
	CUstream s;
	struct gp_bulk_sink *sink; /* host to device: whose staging moves slot to slot */
	CUevent ev[RING_SLOTS];
	bool busy[RING_SLOTS]; /* a copy from or into the slot may still run */
	unsigned cur;	       /* host to device: the slot being filled */
	uint64_t queued;       /* packed bytes queued on the stream */
	bool closed;	       /* its events destroyed */
};

/* The ring serves copies in any context while its own lives: each copy through it has
 * completed before it returns, and a context goes only between calls. */
static uint8_t *ring_mem;   /* RING_SLOTS units, page-locked, kept */
static CUcontext ring_ctx;  /* made in it */
static unsigned ring_epoch; /* its epoch then */

static uint8_t *slot(unsigned k)
{
	return ring_mem + (size_t)k * COPY_UNIT;
}

/* Until slot k is free: the copy queued from or into it has completed. */
static CUresult slot_wait(struct ring *g, unsigned k)
{
	CUresult r = CUDA_SUCCESS;

	if (g->busy[k])
		r = GP_DRV(g->w, cuEventSynchronize, g->ev[k]);
	g->busy[k] = false;
	return r;
}

static CUresult ring_open(struct ring *g)
{
	const char *no_ring = getenv("GPUPOOL_WORKER_NO_RING");
	struct gp_worker *w = g->w;
	unsigned epoch;
	bool live;
	void *p;

	/* A test hook: copies past the staging bound go chunk by chunk, as when the ring's
	 * page-locked memory cannot be made. */
	if (no_ring && strcmp(no_ring, "1") == 0) {
		gp_log_debug(
			"a copy past the staging bound without the ring (GPUPOOL_WORKER_NO_RING)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&staging_lock);
	live = ring_mem && epoch_live(ring_ctx, ring_epoch);
	epoch = live ? ring_epoch : epoch_of(w->current, true);
	pthread_mutex_unlock(&staging_lock);
	if (!live)
		ring_mem = NULL; /* made in a context that went, and gone with it */
	if (!ring_mem) {
		if (GP_DRV(w, cuMemHostAlloc, &p, (size_t)RING_SLOTS * COPY_UNIT,
			   CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
		ring_mem = p;
		ring_ctx = w->current;
		ring_epoch = epoch;
	}
	for (unsigned k = 0; k < RING_SLOTS; k++) {
		CUresult r = GP_DRV(w, cuEventCreate, &g->ev[k], CU_EVENT_DISABLE_TIMING);

		if (r != CUDA_SUCCESS) {
			while (k--)
				GP_DRV(w, cuEventDestroy_v2, g->ev[k]);
			return r;
		}
	}
	return CUDA_SUCCESS;
}

/* Waits for every slot; the first failure is the copy's, if it had none. */
static CUresult ring_close(struct ring *g, CUresult r)
{
	if (g->closed)
		return r;
	g->closed = true;
	for (unsigned k = 0; k < RING_SLOTS; k++) {
		CUresult e = slot_wait(g, k);

		if (r == CUDA_SUCCESS)
			r = e;
		GP_DRV(g->w, cuEventDestroy_v2, g->ev[k]);
	}
	return r;
}

/*
 * Host to device: piece [off, off + n) has landed in the sink's staging, in the slot being
 * filled. The slot is queued on the stream once the next piece (a frame, at most a chunk,
 * of whatever size the client chose) might not fit, or at the end; the next piece lands in
 * the next slot once that one's last copy has completed.
 */
static int ring_landed(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct ring *g = arg;
	unsigned k = g->cur, next = (k + 1) % RING_SLOTS;
	uint64_t end = off + n, fill = end - g->queued;
	CUresult r = CUDA_SUCCESS;

	if (fill + GP_CHUNK_SIZE <= COPY_UNIT && end < layout_bytes(g->l)) {
		g->sink->staging = slot(k) + fill;
		return 0;
	}
	r = copy_part(g->w, g->l, slot(k) - g->queued, g->queued, fill, g->s);
	if (r == CUDA_SUCCESS)
		r = GP_DRV(g->w, cuEventRecord, g->ev[k], g->s);
	g->busy[k] = r == CUDA_SUCCESS;
	g->queued = end;
	if (r == CUDA_SUCCESS)
		r = slot_wait(g, next);
	if (r != CUDA_SUCCESS) {
		/* The rest is read and dropped into a slot no copy reads any more. */
		r = ring_close(g, r);
		return (int)(r != CUDA_SUCCESS ? r : CUDA_ERROR_UNKNOWN);
	}
	g->cur = next;
	g->sink->staging = slot(next);
	return 0;
}

static bool htod_ring(struct gp_worker *w, struct gp_req *rq, const struct layout *l, uint64_t len,
		      CUstream s, CUresult *res)
{
	struct gp_bulk_sink sink = {.write = ring_landed};
	struct ring g = {.w = w, .l = l, .s = s, .sink = &sink};
	CUresult r;

	if (ring_open(&g) != CUDA_SUCCESS)
		return false;
	sink.arg = &g;
	sink.staging = slot(0);
	r = gp__req_recv(w, rq, len, &sink);
	/* After a failure ring_landed has closed the ring already. */
	*res = ring_close(&g, r);
	return true;
}

/* Device to host: unit i of the copy queued into slot i % RING_SLOTS. */
static CUresult ring_queue(struct ring *g, uint64_t total)
{
	unsigned k = (unsigned)(g->queued / COPY_UNIT % RING_SLOTS);
	uint64_t n = total - g->queued < COPY_UNIT ? total - g->queued : COPY_UNIT;
	CUresult r = copy_part_out(g->w, g->l, slot(k) - g->queued, g->queued, n, g->s);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(g->w, cuEventRecord, g->ev[k], g->s);
	g->busy[k] = r == CUDA_SUCCESS;
	g->queued += n;
	return r;
}

/* The sender's source (chunks at multiples of GP_CHUNK_SIZE, our own sender's): the
 * bytes at off once their unit is copied. At a unit's start the unit sent before it is on
 * the wire, and its slot takes the unit RING_SLOTS - 1 ahead. */
static const uint8_t *ring_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct ring *g = arg;
	uint64_t total = layout_bytes(g->l);
	unsigned k = (unsigned)(off / COPY_UNIT % RING_SLOTS);
	CUresult r = CUDA_SUCCESS;

	(void)n;
	if (off % COPY_UNIT == 0) {
		while (r == CUDA_SUCCESS && g->queued < total &&
		       g->queued < off + (uint64_t)RING_SLOTS * COPY_UNIT)
			r = ring_queue(g, total);
		if (r == CUDA_SUCCESS)
			r = slot_wait(g, k);
	}
	*err = (int)r;
	return r == CUDA_SUCCESS ? slot(k) + off % COPY_UNIT : NULL;
}

CUresult gp__serve_memcpy_htod(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_htod *a, struct gp_out_memcpy_htod *o)
{
	struct htod cp = {w, {a->dst, a->width, a->height, a->pitch}, a->stream_drv, rq->async};
	struct gp_bulk_sink sink = {.write = htod_write, .arg = &cp, .staging = w->staging};
	struct on_stream *st;
	CUresult r;

	if (a->data_len != layout_bytes(&cp.l))
		return CUDA_ERROR_INVALID_VALUE; /* the bytes are still read, to stay in step */
	st = a->data_len ? stage(w, rq, a->data_len) : NULL;
	if (st)
		return htod_staged(w, rq, st, &cp.l, a->data_len, a->stream_drv);
	/* Past the staging bound: through the ring, or chunk by chunk without it. */
	if (a->data_len && htod_ring(w, rq, &cp.l, a->data_len, a->stream_drv, &r))
		return r;
	return gp__req_recv(w, rq, a->data_len, &sink);
}

/* Fills the staging buffer with n packed bytes from offset off, in stream order on a
 * created stream (after the work queued before it, and no more). The path past the staging
 * bound only. */
struct dtoh {
	struct gp_worker *w;
	struct layout l;
	uint64_t sid;
	CUstream stream;
	bool first_read; /* the first chunk is in the staging buffer already */
};

static const uint8_t *dtoh_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct dtoh *c = arg;
	struct gp_worker *w = c->w;
	uint8_t *buf = w->staging;
	CUresult r = CUDA_SUCCESS;

	if (off == 0 && c->first_read) {
		c->first_read = false;
		*err = 0;
		return w->staging;
	}
	while (n && r == CUDA_SUCCESS) {
		uint64_t run;
		CUdeviceptr src = layout_at(&c->l, off, &run);
		size_t k = run < n ? (size_t)run : n;

		if (c->sid >= 2)
			r = GP_DRV(w, cuMemcpyDtoHAsync_v2, buf, src, k, c->stream);
		else
			r = w->drv.cuMemcpyDtoH_v2(buf, src, k);
		off += k;
		buf += k;
		n -= k;
	}
	if (r == CUDA_SUCCESS && c->sid >= 2)
		r = GP_DRV(w, cuStreamSynchronize, c->stream);
	*err = (int)r;
	return r == CUDA_SUCCESS ? w->staging : NULL;
}

/*
 * Device to host, streamed. A copy of more than one COPY_UNIT is queued on its stream unit
 * by unit into the staging, an event recorded after each; a stream callback after the first
 * unit hands the copy to the sender thread, which sends each unit (in chunks) once its event
 * has completed, while the stream copies the next. A callback after the last unit waits
 * until the bytes and the answer are sent, so the stream's later work (and whatever
 * observes it) still comes after the answer, as with one callback. The sender holds the
 * send lock from the first chunk to the answer (the client reads a transfer's DATA frames
 * in one piece) and meanwhile waits only for events of units queued back to back on one
 * stream whose first is done: for the device, never for a callback, since a driver may run
 * the callbacks of all streams on one thread, where one waiting for the send lock would
 * hold up any callback the sender waited for.
 */
static pthread_cond_t sender_cv = PTHREAD_COND_INITIALIZER;
static struct on_stream *send_head, **send_tail = &send_head;
static bool sender_started;

/* With staging_lock held: o goes to the sender, once. */
static void to_sender(struct on_stream *o, CUresult status)
{
	if (status != CUDA_SUCCESS && o->status == CUDA_SUCCESS)
		o->status = status;
	if (!o->queued) {
		o->queued = true;
		o->qnext = NULL;
		*send_tail = o;
		send_tail = &o->qnext;
	}
	pthread_cond_broadcast(&sender_cv);
}

static void CUDA_CB first_copied(CUstream s, CUresult status, void *arg)
{
	(void)s;
	pthread_mutex_lock(&staging_lock);
	to_sender(arg, status);
	pthread_mutex_unlock(&staging_lock);
}

static void CUDA_CB stream_copied(CUstream s, CUresult status, void *arg)
{
	struct on_stream *o = arg;

	(void)s;
	pthread_mutex_lock(&staging_lock);
	to_sender(o, status);
	while (!o->sent)
		pthread_cond_wait(&sender_cv, &staging_lock);
	o->next = answered;
	answered = o;
	pthread_mutex_unlock(&staging_lock);
}

/* The sender's source: the n bytes at off once their unit is copied; NULL (the transfer
 * ends early) when the copy failed or was not queued that far. */
static const uint8_t *streamed_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct on_stream *o = arg;
	uint64_t u = off / COPY_UNIT;
	CUresult r;

	(void)n;
	pthread_mutex_lock(&staging_lock);
	while (!o->enqueued)
		pthread_cond_wait(&sender_cv, &staging_lock);
	r = o->status;
	if (r == CUDA_SUCCESS && u >= o->units)
		r = CUDA_ERROR_UNKNOWN;
	pthread_mutex_unlock(&staging_lock);
	/* The first unit is done: its callback handed the copy over. */
	if (r == CUDA_SUCCESS && u > 0 && off % COPY_UNIT == 0)
		r = GP_DRV(o->w, cuEventSynchronize, o->ev[u]);
	if (r != CUDA_SUCCESS) {
		pthread_mutex_lock(&staging_lock);
		if (o->status == CUDA_SUCCESS)
			o->status = r;
		pthread_mutex_unlock(&staging_lock);
	}
	*err = (int)r;
	return r == CUDA_SUCCESS ? (const uint8_t *)o->buf + off : NULL;
}

static void *sender_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct gp_bulk_source src = {.read = streamed_read};
		Gp__Reply rep = GP__REPLY__INIT;
		struct on_stream *o;
		struct gp_worker *w;
		int ret;

		pthread_mutex_lock(&staging_lock);
		while (!send_head)
			pthread_cond_wait(&sender_cv, &staging_lock);
		o = send_head;
		send_head = o->qnext;
		if (!send_head)
			send_tail = &send_head;
		pthread_mutex_unlock(&staging_lock);
		w = o->w;
		src.arg = o;
		gp_conn_send_lock(w->client);
		ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, o->id, NULL, o->bytes, &src);
		pthread_mutex_lock(&staging_lock);
		rep.result = (int32_t)o->status;
		pthread_mutex_unlock(&staging_lock);
		if (!ret)
			ret = gp_conn_send(w->client, GP_MSG_REPLY, 0, o->id, &rep.base, NULL, 0);
		if (!ret)
			gp_conn_flush(w->client);
		gp_conn_send_unlock(w->client);
		/* A failed send ends the session (the main thread sees the connection go). */
		pthread_mutex_lock(&staging_lock);
		o->sent = true;
		pthread_cond_broadcast(&sender_cv);
		pthread_mutex_unlock(&staging_lock);
	}
	return NULL;
}

/* Whether the sender thread runs (started on the first streamed copy). */
static bool sender_up(void)
{
	pthread_t t;
	bool up;

	pthread_mutex_lock(&staging_lock);
	if (!sender_started && pthread_create(&t, NULL, sender_main, NULL) == 0) {
		pthread_detach(t);
		sender_started = true;
	}
	up = sender_started;
	pthread_mutex_unlock(&staging_lock);
	return up;
}

/*
 * Queues a streamed copy on s (above); false when its events cannot be made (the caller
 * then queues it whole). From the first unit's callback on, the stream and the sender
 * answer it; a failure to queue before that is *r, the caller's to answer (the staging is
 * not given back: copies queued may still use it); one after it is the answer's result,
 * after the units queued before it (the transfer ends early).
 */
static bool dtoh_streamed(struct gp_worker *w, struct gp_req *rq, struct on_stream *o,
			  const struct layout *l, CUstream s, CUresult *res)
{
	uint64_t nunits = (o->bytes + COPY_UNIT - 1) / COPY_UNIT, u, made = 0;
	CUresult r = CUDA_SUCCESS;
	bool handed = false;

	o->ev = calloc(nunits, sizeof(*o->ev));
	while (o->ev && made < nunits &&
	       GP_DRV(w, cuEventCreate, &o->ev[made], CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS)
		made++;
	if (made < nunits) {
		drop_events(w, o, made);
		free(o->ev);
		o->ev = NULL;
		return false;
	}
	o->streamed = true;
	for (u = 0; u < nunits && r == CUDA_SUCCESS; u++) {
		uint64_t off = u * COPY_UNIT;
		uint64_t n = o->bytes - off < COPY_UNIT ? o->bytes - off : COPY_UNIT;

		r = copy_part_out(w, l, o->buf, off, n, s);
		if (r == CUDA_SUCCESS)
			r = GP_DRV(w, cuEventRecord, o->ev[u], s);
		if (r == CUDA_SUCCESS && u == 0) {
			r = GP_DRV(w, cuStreamAddCallback, s, first_copied, o, 0);
			handed = r == CUDA_SUCCESS;
		}
		if (r != CUDA_SUCCESS)
			break;
	}
	if (!handed) {
		/* Nothing will hand it to the sender: answered by the caller. */
		drop_events(w, o, nunits);
		pthread_mutex_lock(&staging_lock);
		o->buf = NULL;
		give_back(o);
		pthread_mutex_unlock(&staging_lock);
		*res = r;
		return true;
	}
	pthread_mutex_lock(&staging_lock);
	o->units = u;
	o->enqueued = true;
	if (r != CUDA_SUCCESS && o->status == CUDA_SUCCESS)
		o->status = r;
	pthread_cond_broadcast(&sender_cv);
	pthread_mutex_unlock(&staging_lock);
	r = GP_DRV(w, cuStreamAddCallback, s, stream_copied, o, 0);
	if (r != CUDA_SUCCESS) {
		/* The sender still answers, after what was queued; nothing gives o back (the
		 * process frees it), and the stream's later work is not held for the answer. */
		gp_log_warnx("a device-to-host copy's last callback: %d", (int)r);
		pthread_mutex_lock(&staging_lock);
		if (o->status == CUDA_SUCCESS)
			o->status = r;
		pthread_mutex_unlock(&staging_lock);
	}
	rq->answered_later = true;
	*res = CUDA_SUCCESS;
	return true;
}

/* Device to host: into staging on the stream, the bytes and the answer when it gets there;
 * past the staging bound, at once on this thread (DATA, then the Reply finish() sends). */
static CUresult dtoh(struct gp_worker *w, struct gp_req *rq, const struct layout *l, uint64_t sid,
		     CUstream s)
{
	struct dtoh cp = {w, *l, sid, s, false};
	struct gp_bulk_source src = {.read = dtoh_read, .arg = &cp};
	struct ring g = {.w = w, .l = l, .s = s};
	uint64_t bytes = layout_bytes(l);
	struct on_stream *o;
	bool ringed = false;
	CUresult r;
	int ret;

	if (bytes == 0)
		return CUDA_SUCCESS;
	o = stage(w, rq, bytes);
	if (o && bytes > COPY_UNIT && sender_up()) {
		o->data = true;
		o->reply = true;
		if (dtoh_streamed(w, rq, o, l, s, &r))
			return r;
	}
	if (o) {
		o->data = true;
		o->reply = true;
		return answer_on(w, rq, o, s, copy_runs(w, l, o->buf, s, true));
	}
	if (ring_open(&g) == CUDA_SUCCESS) {
		int err;

		src = (struct gp_bulk_source){.read = ring_read, .arg = &g};
		ringed = true;
		/* The first unit before the send lock: the stream may hold answers queued
		 * before this copy, which take the send lock to go out. The units after it are
		 * copies queued back to back, which need nobody. A failure here sends nothing,
		 * as a source that fails at once. */
		if (!ring_read(&g, 0, 0, &err))
			return ring_close(&g, (CUresult)err);
	} else {
		size_t n = bytes < GP_CHUNK_SIZE ? (size_t)bytes : GP_CHUNK_SIZE;
		int err;

		/* Chunk by chunk without the ring: the first likewise before the send lock (it
		 * waits for the stream, and the stream for those answers). */
		if (!dtoh_read(&cp, 0, n, &err))
			return (CUresult)err;
		cp.first_read = true;
	}
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, bytes, &src);
	gp_conn_send_unlock(w->client);
	r = ringed ? ring_close(&g, (CUresult)src.err) : (CUresult)src.err;
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return r;
}

/* DATA frames with the bytes, then the reply; a failed copy stops its DATA early. */
CUresult gp__serve_memcpy_dtoh(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_memcpy_dtoh *a, struct gp_out_memcpy_dtoh *o)
{
	struct layout l = {a->src, a->width, a->height, a->pitch};

	if (a->data_len != layout_bytes(&l))
		return CUDA_ERROR_INVALID_VALUE;
	return dtoh(w, rq, &l, a->stream, a->stream_drv);
}

/* cuMemcpyDtoHAsync into the client's page-locked memory: the client does not wait. */
CUresult gp__serve_memcpy_dtoh_async(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_memcpy_dtoh_async *a,
				     struct gp_out_memcpy_dtoh_async *o)
{
	struct layout l = {a->src, a->bytes, 1, 0};

	return dtoh(w, rq, &l, a->stream, a->stream_drv);
}

/* A synchronous memset or device-to-device copy already queued on s: answered from it. */
CUresult gp__answer_on_stream(struct gp_worker *w, struct gp_req *rq, CUstream s)
{
	struct on_stream *o = rq->async ? NULL : stage(w, rq, 0);

	if (!o)
		return rq->async ? CUDA_SUCCESS : GP_DRV(w, cuStreamSynchronize, s);
	return answer_on(w, rq, o, s, CUDA_SUCCESS);
}
