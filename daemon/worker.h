/* worker.h -- gpupool-worker: one process per client session.
 *
 * worker.c        process setup, TLS, Hello, admission, the request loop
 * worker_calls.c  one handler per call type
 * worker_state.c  what the session owns: handles and device allocations
 * driver.c        the dlopen'd libcuda
 *
 * DESIGN: the worker is single-threaded. It reads one frame at a time from
 * the client, executes it on the driver and answers (unless the call was
 * sent without waiting for a reply). Everything it allocates on the device
 * belongs to this one session; when the session ends the process exits and
 * the driver releases whatever is left.
 */
#ifndef GP_WORKER_H
#define GP_WORKER_H

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

/* Largest module image a client may upload. */
#define GP_IMAGE_MAX (1ull << 30)

enum gp_handle_kind {
	GP_H_CTX = 1,
	GP_H_MODULE,
	GP_H_FUNCTION,
	GP_H_STREAM,
	GP_H_EVENT,
};

struct gp_fn_info {
	uint32_t nparams;
	uint32_t param_bytes; /* end of the last parameter */
	uint32_t *offset;
	uint32_t *size;
	uint64_t module; /* handle of the module it belongs to */
};

struct gp_handle {
	uint32_t kind; /* 0: free slot */
	uint32_t gen;
	void *ptr;     /* the driver's handle */
	void *aux;     /* kind-specific: struct gp_fn_info for functions */
	int device;    /* for contexts: the session's device index */
	uint64_t parent; /* the context a module/stream/event belongs to */
};

struct gp_alloc {
	CUdeviceptr ptr;
	size_t size;
	uint64_t ctx;
	int device;
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

	CUcontext current; /* what the worker made current last */

	bool has_deferred;
	int32_t deferred_result;
	uint64_t deferred_request;
	uint32_t deferred_type;

	uint8_t *staging; /* one chunk, for copies through host memory */
	time_t started;
	uint64_t calls;
};

/* worker_state.c */
uint64_t gp__handle_new(struct gp_worker *w, uint32_t kind, void *ptr);
struct gp_handle *gp__handle_get(struct gp_worker *w, uint64_t id, uint32_t kind);
void gp__handle_release(struct gp_worker *w, uint64_t id);
int gp__alloc_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, int device);
struct gp_alloc *gp__alloc_find(struct gp_worker *w, CUdeviceptr ptr);
bool gp__range_owned(struct gp_worker *w, CUdeviceptr ptr, uint64_t len);
void gp__alloc_remove(struct gp_worker *w, struct gp_alloc *a);
void gp__publish_mem(struct gp_worker *w);

/* worker_calls.c */
/* Executes one request whose header was just read. Returns 0 to go on, or a
 * negative code when the session must end (client gone, protocol error). */
int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h);

#endif
