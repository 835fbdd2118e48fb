/* worker.h -- gpupool-worker: one process per client session.
 *
 * worker.c    process setup, TLS, Hello, admission, the request loop
 * calls.c     replies, deferred errors, bulk input, the dispatch table
 * ctx.c       contexts, primary contexts, limits
 * mem.c       allocations, copies, memsets
 * module.c    modules, libraries, kernels, globals, occupancy
 * exec.c      launches, streams, events
 * state.c     what the session owns: handles and device allocations
 * output.c    what kernels print: stdout captured by a reader thread, sent to the client
 * driver.c    the dlopen'd libcuda
 *
 * DESIGN: one thread (the main thread) does all the session's work: it reads
 * one frame at a time from the client, executes it on the driver and answers
 * (unless the call was sent without waiting for a reply). Only it touches the
 * connection, the session's tables (state.c) and the driver, so none of those
 * has a lock. The one other thread of our own is output.c's reader, which
 * drains the stdout pipe into a buffer that it and the main thread share under
 * output.c's lock; it calls nothing else. The driver may run threads of its own
 * (softgpu's block pool and stream threads, NVIDIA's); they never call back into
 * the worker. Everything it allocates on the device belongs to this one
 * session; when the session ends the process exits and the driver releases
 * whatever is left.
 */
#ifndef GP_WORKER_H
#define GP_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cuda.h>

#include "codec.h"
#include "conn.h"
#include "driver.h"
#include "stats.h"

/* Inherited descriptors, set up by the supervisor at spawn. */
#define GP_WORKER_FD_CLIENT 3
#define GP_WORKER_FD_CONTROL 4
#define GP_WORKER_FD_STATS 5

/* Set when the pool asks the worker to end (SIGTERM). */
extern volatile sig_atomic_t gp__worker_stop;

/* Largest module image a client may upload. */
#define GP_IMAGE_MAX (1ull << 30)

enum gp_handle_kind {
	GP_H_CTX = 1,
	GP_H_MODULE,
	GP_H_FUNCTION,
	GP_H_STREAM,
	GP_H_EVENT,
	GP_H_LIBRARY,
	GP_H_KERNEL,
};

struct gp_fn_info {
	uint32_t nparams;
	uint32_t param_bytes; /* end of the last parameter */
	uint32_t *offset;
	uint32_t *size;
	uint64_t module; /* handle of the module or library it belongs to */
};

struct gp_handle {
	uint32_t kind; /* 0: free slot */
	uint32_t gen;
	void *ptr;	 /* the driver's handle */
	void *aux;	 /* kind-specific: struct gp_fn_info for functions */
	int device;	 /* for contexts: the session's device index */
	bool primary;	 /* for contexts: a device's primary context */
	uint64_t parent; /* the context a module/stream/event belongs to */
	/* Device memory the object costs beyond explicit allocations, counted against the
	 * session's limit: a module's globals and code, a context's limits (heap, printf
	 * buffer, stack) indexed by CUlimit below GP_CHARGED_LIMITS. */
	uint64_t charge;
	uint64_t limit_charge[3];
};

/* A library's module in one context: the driver makes it on first use there, and what it
 * costs on the device is the session's until the library or the context goes. */
struct gp_libinst {
	uint64_t lib, ctx;
	int device;
	uint64_t charge;
	bool usable; /* false: it did not fit the session's limit, so it is never used */
};

/* Contexts a session may create besides the primary ones (each costs device memory). */
#define GP_MAX_CONTEXTS 16

struct gp_alloc {
	CUdeviceptr ptr;
	size_t size;
	uint64_t ctx;
	int device;
	uint64_t module; /* a module's global: not freeable, not counted as allocated */
};

struct gp_worker {
	struct gp_conn *client;
	struct gp_conn *ctl;
	struct gp_stats *stats;
	struct gp_driver drv;
	bool driver_loaded;

	uint64_t session_id;
	char tenant[128];
	char client_addr[128];
	int ndev;
	uint64_t mem_limit; /* bytes per device; 0: the device's own size */

	struct gp_handle *handles;
	uint32_t nhandles, cap_handles;

	struct gp_alloc *allocs; /* sorted by ptr */
	size_t nallocs, cap_allocs;
	uint64_t dev_used[GP_STATS_MAX_DEVICES];
	uint64_t mem_used, mem_peak;

	struct gp_libinst *libinst;
	size_t nlibinst, cap_libinst;

	CUcontext current;			/* what the worker made current last */
	uint64_t primary[GP_STATS_MAX_DEVICES]; /* handle of each device's primary context */
	unsigned primary_refs[GP_STATS_MAX_DEVICES];

	bool has_deferred;
	int32_t deferred_result;
	uint64_t deferred_request;
	uint32_t deferred_type;

	uint8_t *staging; /* one chunk, for copies through host memory */
	time_t started;
	uint64_t calls;
};

/* state.c */
uint64_t gp__handle_new(struct gp_worker *w, uint32_t kind, void *ptr);
struct gp_handle *gp__handle_get(struct gp_worker *w, uint64_t id, uint32_t kind);
uint64_t gp__handle_id(struct gp_worker *w, const struct gp_handle *h);
void gp__handle_release(struct gp_worker *w, uint64_t id);
int gp__alloc_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, int device);
int gp__global_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx,
		   uint64_t module);
struct gp_alloc *gp__alloc_find(struct gp_worker *w, CUdeviceptr ptr);
bool gp__range_owned(struct gp_worker *w, CUdeviceptr ptr, uint64_t len);
void gp__alloc_remove(struct gp_worker *w, struct gp_alloc *a);
/* Forgets what a destroyed or reset context owned; the driver has freed it. */
void gp__forget_ctx(struct gp_worker *w, uint64_t ctx);
/* Forgets a module's functions and globals (a library's: and its modules' charges). */
void gp__forget_module(struct gp_worker *w, uint64_t module);
/* Records a library's module in a context and charges its cost. */
int gp__libinst_add(struct gp_worker *w, uint64_t lib, uint64_t ctx, int device, uint64_t charge,
		    bool usable);
const struct gp_libinst *gp__libinst_find(const struct gp_worker *w, uint64_t lib, uint64_t ctx);
/* The most one of the library's modules was measured to cost (0: none measured yet). */
uint64_t gp__libinst_cost(const struct gp_worker *w, uint64_t lib);

/* module.c */
/* A library kernel's module in the context: made (and charged) on first use there. */
CUresult gp__kernel_in_ctx(struct gp_worker *w, const struct gp_handle *fh, uint64_t ctx_id);

/* state.c: memory the session holds */
void gp__publish_mem(struct gp_worker *w);
/* Frees the session's bookkeeping at exit (the driver frees the device side). */
void gp__worker_state_free(struct gp_worker *w);
/* Whether `bytes` more fit in the session's limit on a device. */
bool gp__charge_fits(struct gp_worker *w, int device, uint64_t bytes);
/* Counts (or with a negative delta, releases) device memory not from an allocation. */
void gp__charge(struct gp_worker *w, int device, int64_t delta);

/* calls.c: helpers for the handlers */
typedef CUresult (*gp_sink_fn)(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p,
			       size_t n);
int gp__reply(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r, const uint64_t *out,
	      size_t nout);
void gp__defer_error(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r);
/* Moves a kept deferred error into d (for replies that are not Reply). */
bool gp__take_deferred(struct gp_worker *w, Gp__DeferredError *d);
int gp__recv_bulk(struct gp_worker *w, const struct gp_frame_hdr *first, uint64_t total,
		  gp_sink_fn sink, void *arg, CUresult *res);
Gp__Call *gp__unpack_call(struct gp_worker *w, const struct gp_frame_hdr *h, size_t nargs);
CUresult gp__use_ctx(struct gp_worker *w, uint64_t id, struct gp_handle **out);
/* A stream id from the client: 0 or 1 the legacy default stream, 2 the per-thread one. */
CUresult gp__use_stream(struct gp_worker *w, uint64_t id, CUstream *out);
/* A launchable handle: a module's function or a library's kernel (used as CUfunction). */
struct gp_handle *gp__launchable(struct gp_worker *w, uint64_t id);
int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h);

/* Handlers. "Simple" ones take the call's arguments and fill outputs. */
typedef CUresult (*gp_call_fn)(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout);
/* Frame handlers read their own bulk and send their own replies. */
typedef int (*gp_frame_fn)(struct gp_worker *w, const struct gp_frame_hdr *h);

/* output.c */
/* Points stdout at a pipe drained by a thread; before the driver is loaded. */
int gp__output_capture(void);
/* Sends what the kernels printed since the last call, ahead of an answer. */
int gp__output_flush(struct gp_worker *w);

/* ctx.c */
CUresult gp__ctx_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			uint64_t *out, size_t *nout);
CUresult gp__ctx_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout);
CUresult gp__ctx_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout);
CUresult gp__primary_retain(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout);
CUresult gp__primary_release(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout);
CUresult gp__primary_reset(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);
CUresult gp__primary_set_flags(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout);
CUresult gp__ctx_get_limit(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);
CUresult gp__ctx_set_limit(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);

CUresult gp__ctx_stream_priorities(struct gp_worker *w, const struct gp_frame_hdr *f,
				   const uint64_t *a, uint64_t *out, size_t *nout);

/* mem.c */
CUresult gp__mem_alloc(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		       uint64_t *out, size_t *nout);
CUresult gp__mem_alloc_pitch(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout);
CUresult gp__mem_free(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		      uint64_t *out, size_t *nout);
CUresult gp__mem_get_info(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout);
CUresult gp__memcpy_dtod(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout);
CUresult gp__memset(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		    uint64_t *out, size_t *nout);
int gp__memcpy_htod(struct gp_worker *w, const struct gp_frame_hdr *h);
int gp__memcpy_dtoh(struct gp_worker *w, const struct gp_frame_hdr *h);

/* module.c */
int gp__module_load(struct gp_worker *w, const struct gp_frame_hdr *h);
int gp__library_load(struct gp_worker *w, const struct gp_frame_hdr *h);
CUresult gp__module_unload(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);
CUresult gp__library_unload(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout);
int gp__get_global(struct gp_worker *w, const struct gp_frame_hdr *h);
CUresult gp__occupancy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		       uint64_t *out, size_t *nout);
CUresult gp__func_set_attribute(struct gp_worker *w, const struct gp_frame_hdr *f,
				const uint64_t *a, uint64_t *out, size_t *nout);

/* exec.c */
int gp__launch(struct gp_worker *w, const struct gp_frame_hdr *h);
CUresult gp__stream_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);
CUresult gp__stream_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout);
CUresult gp__stream_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f,
				const uint64_t *a, uint64_t *out, size_t *nout);
CUresult gp__stream_query(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout);
CUresult gp__stream_wait_event(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout);
CUresult gp__event_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout);
CUresult gp__event_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);
CUresult gp__event_record(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			  uint64_t *out, size_t *nout);
CUresult gp__event_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout);
CUresult gp__event_query(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout);
CUresult gp__event_elapsed(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout);

#endif
