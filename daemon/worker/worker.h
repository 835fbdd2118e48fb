/* worker.h -- gpupool-worker: one process per client session.
 *
 * worker.c    process setup (a warm start ahead of its client), TLS, Hello, admission, the request loop
 * calls.c     replies, deferred errors, bulk input, the dispatch table
 * ctx.c       contexts, primary contexts, limits
 * mem.c       allocations, copies, memsets
 * module.c    modules, libraries, kernels, globals, occupancy
 * exec.c      launches, tensor maps, streams, events
 * state.c     what the session owns, for the handlers: owner.c's tables and the stats page
 * owner.c     the ownership core, no I/O: generation-checked handles, allocation ranges,
 *             per-device charges (owner.h; tests/unit/test_owner.c)
 * inventory.c `--inventory`: the GPUs the driver shows, for the supervisor
 * nvml.c      the inventory's cross-check of those GPUs with NVML, where it is present
 * waits.c     synchronizing calls wait on waiter threads, which answer them
 * hostfn.c    host functions: run in the client when their stream reaches them
 * graph.c     graphs, graph nodes, executable graphs and stream capture on the driver
 * vmm.c       virtual memory management: reservations, allocations (charged), mappings
 * mempool.c   memory pools and stream-ordered allocation; what pools hold is charged
 * graphmem.c  graph memory: allocation and free nodes, their ranges, what they cost
 * managed.c   managed and mapped memory: the client's pages kept coherent with a shadow
 * array.c     CUDA arrays (charged), 3-D and array copies, texture and surface objects
 * output.c    what kernels print: stdout captured by a reader thread, sent to the client
 * watchdog.c  a thread that ends the session when a long call keeps the main one busy
 * busy.c      GPU busy time: a thread samples the driver's, for the stats page; a compute
 *             share held by time (launches wait behind a gate on their stream while the
 *             session is over its share)
 * ipc.c       CUDA IPC between sessions of one tenant: exports and opens through the supervisor
 * driver.c    the dlopen'd libcuda
 * seccomp.c   worker_seccomp: the syscall filter (an allow-list, or the denylist) set before the
 *             tenant's first call (seccomp.h; tests/unit/test_seccomp.c)
 *
 * DESIGN: the main thread reads every frame from the client, in order, and runs
 * each call on the driver under w->lock (the session's tables, state.c/owner.c,
 * and the driver calls that change them). It decodes a call into an arena that
 * is emptied when the call ends (calls.c), so a call costs no heap allocation;
 * frames come out of the connection's 64 KiB read buffer, so a batch of calls
 * costs one read. Other threads of ours: waiter threads
 * (waits.c), which wait for the device on the main thread's behalf and answer
 * those calls (a synchronize of work already done is answered by the main thread
 * itself, gp__ctx_idle); the driver's own threads running host-function callbacks
 * (hostfn.c), which send HOST_CALL and wait for the client; the watchdog
 * (watchdog.c), which ends the session when the client is gone or a call runs
 * past kernel_timeout; output.c's reader, which drains the stdout pipe; mem.c's
 * sender, which sends a streamed device-to-host copy unit by unit as the device
 * finishes each (it waits only for events, never for a callback). Every
 * frame goes out under the connection's send lock (src/conn.h, concurrent mode;
 * lock order: w->lock, then the send lock). The driver may run threads of its
 * own (softgpu's block pool and stream threads, NVIDIA's). Everything the
 * session allocates on the device belongs to it alone; when the session ends
 * the process exits and the driver releases whatever is left.
 */
#ifndef GP_WORKER_H
#define GP_WORKER_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cuda.h>

#include "bulk.h"
#include "calls.h"
#include "codec.h"
#include "conn.h"
#include "driver.h"
#include "owner.h"
#include "slice.h"
#include "seccomp.h"
#include "stats.h"

/* Inherited descriptors, set up by the supervisor at spawn. */
#define GP_WORKER_FD_CLIENT 3
#define GP_WORKER_FD_CONTROL 4
#define GP_WORKER_FD_STATS 5
#define GP_WORKER_FD_IPC 6 /* CUDA IPC requests to the supervisor (ipc.c) */

/* Set when the pool asks the worker to end (SIGTERM). */
extern volatile sig_atomic_t gp__worker_stop;
/* Set when the pool saw a call run past kernel_timeout (SIGUSR1); with gp__worker_stop. */
extern volatile sig_atomic_t gp__worker_timed_out;
/* SIGUSR2s from the pool (docs/scheduling.md): 1, the session was chosen to be preempted
 * after preempt_grace; 2 or more, it is being ended for that (a SIGTERM follows). */
/* The pool's last word on a preemption: 0 none or cancelled, 1 noticed, 2 ending; and how
 * many notices came (each is told). Set by SIGUSR2 (worker.c). */
extern volatile sig_atomic_t gp__worker_preempted, gp__worker_preempt_gen;

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
	GP_H_GRAPH,	 /* parent: 0, or a conditional node's (its body; aux its index) */
	GP_H_GRAPH_NODE, /* parent: its graph's handle */
	GP_H_GRAPH_EXEC, /* parent: the context it was made in */
	GP_H_VMEM,	 /* a cuMemCreate allocation (vmm.c): aux its record, charged */
	GP_H_MEMPOOL,	 /* a memory pool (the session's, not a context's): mempool.c */
	GP_H_ARRAY,	 /* a CUDA array (array.c): parent its context, charged */
	GP_H_TEXOBJ,	 /* a texture object (array.c): ptr is the driver's value */
	GP_H_SURFOBJ,	 /* a surface object (array.c): ptr is the driver's value */
	GP_H_MIPMAP,	 /* a mipmapped array (array.c): parent its context, charged */
	GP_H_MIPLEVEL,	 /* a mipmapped array's level (array.c): an array that goes with it */
};

/* Memory pools one session may hold at once (created ones and the devices' default ones). */
#define GP_POOLS_MAX 256

struct gp_fn_info {
	uint32_t nparams;
	uint32_t param_bytes; /* end of the last parameter */
	uint32_t *offset;
	uint32_t *size;
	uint64_t module; /* handle of the module or library it belongs to */
	bool described;	 /* the layout above is known (gp__fn_described) */
};

struct gp_worker {
	struct gp_conn *client;
	struct gp_conn *ctl;
	struct gp_stats *stats;
	struct gp_driver drv;
	bool driver_loaded;
	bool client_stderr; /* its Hello takes OUTPUT_ERR: the driver's stderr is the client's */
	int driver_ndev;    /* devices the driver shows */

	uint64_t session_id;
	char tenant[128];
	char client_addr[128];
	int ndev;
	unsigned compute; /* percent of each GPU granted; 0: no share */
	/* A session spanning daemons (va_window.h): the window Hello asked for, the one its
	 * memory is placed in (0: none), and whether mem.c places it (the driver cannot). */
	uint32_t va_asked, va_window;
	bool va_vmm;
	bool compute_by_time; /* compute_enforce time or both: busy.c holds launches */

	/* What the session owns (owner.h), also named directly: w->handles, w->dev_used. */
	union {
		struct gp_owner own;
		struct {
			GP_OWNER_MEMBERS
		};
	};

	CUcontext current;			/* what the worker made current last */
	uint64_t primary[GP_STATS_MAX_DEVICES]; /* handle of each device's primary context */
	unsigned primary_refs[GP_STATS_MAX_DEVICES];
	/* A last release or a reset handed to a waiter and not done yet: a retain, or a call in
	 * that primary context, until then would race the driver's destroy (ctx.c). */
	bool primary_ending[GP_STATS_MAX_DEVICES];
	/* Each primary context's default heap and printf buffer, charged while it lives. */
	uint64_t primary_limits[GP_STATS_MAX_DEVICES][2];
	/* mempool.c: each device's default and current pool (handles; 0 until asked for), and
	 * every pool handle of the session. */
	uint64_t pool_default[GP_STATS_MAX_DEVICES], pool_current[GP_STATS_MAX_DEVICES];
	uint64_t pools[GP_POOLS_MAX];
	unsigned npools;
	/* graphmem.c: whether any graph memory was made, and what the driver reserves for
	 * graphs on each device beyond what the executable graphs are charged */
	bool graphmem_seen;
	uint64_t graphmem_extra[GP_STATS_MAX_DEVICES];

	bool has_deferred;
	int32_t deferred_result;
	uint64_t deferred_request;
	uint32_t deferred_type;

	uint8_t *staging; /* one chunk, for copies through host memory */
	/* The session: held by the main thread while it runs a call, by a waiter thread
	 * while it answers one (waits.c). */
	pthread_mutex_t lock;
	time_t started;
	uint64_t calls;
	/* What one session may hold at once (config max_*, WorkerSetup): contexts besides the
	 * primary ones, streams, events, modules and libraries together. */
	struct {
		uint32_t contexts, streams, events, modules;
	} caps;
};

/* state.c: the owner core (owner.h) for the handlers, with the stats page kept current */
/* Pointers from gp__handle_get stay valid until that handle is released. */
uint64_t gp__handle_new(struct gp_worker *w, uint32_t kind, void *ptr);
struct gp_handle *gp__handle_get(struct gp_worker *w, uint64_t id, uint32_t kind);
uint64_t gp__handle_id(struct gp_worker *w, const struct gp_handle *h);
void gp__handle_release(struct gp_worker *w, uint64_t id);
int gp__alloc_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx, int device);
int gp__global_add(struct gp_worker *w, CUdeviceptr ptr, size_t size, uint64_t ctx,
		   uint64_t module);
/* The allocation containing ptr; the pointer is valid until the next add or remove. */
struct gp_alloc *gp__alloc_find(struct gp_worker *w, CUdeviceptr ptr);
bool gp__range_owned(struct gp_worker *w, CUdeviceptr ptr, uint64_t len);
/* True when height rows of width bytes, pitch apart from base, lie in one allocation. */
bool gp__range2d_owned(struct gp_worker *w, CUdeviceptr base, uint64_t pitch, uint64_t width,
		       uint64_t height);
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

/* hostfn.c: a host function of the client that may run many times (a graph's host node,
 * or a host function queued on a capturing stream): the driver calls gp__hostfn_node_run
 * with it; it lives as long as the session. NULL when out of memory. */
void *gp__hostfn_node_new(struct gp_worker *w, uint64_t fn, uint64_t data, uint64_t client_stream,
			  uint32_t kind);
void CUDA_CB gp__hostfn_node_run(void *node);
/* One that moves nbytes of client memory (the client's token) through *staging: a fetch
 * brings them into it, a push sends them from it; the client checks token and size. */
void *gp__hostfn_copy_new(struct gp_worker *w, uint64_t token, uint64_t nbytes, bool fetch,
			  uint8_t **staging);
/* Whether a repeatable host function (one gp__hostfn_node_run is given) moves client memory;
 * *fetch: to the device. */
bool gp__hostfn_is_copy(void *node, bool *fetch);
/* graph.c: whether the driver's stream is capturing now */
bool gp__stream_capturing(struct gp_worker *w, CUstream s);

/* mempool.c */
/* Each pool's charge (on device, or every device: -1) made what the driver says it holds;
 * with w->lock held. */
void gp__pools_refresh(struct gp_worker *w, int device);
/* graphmem.c: graph memory's ranges (tagged with the driver's graph) and charges. */
/* (graph: the graph's handle id) */
int gp__graphmem_note(struct gp_worker *w, uint64_t graph, CUdeviceptr p, uint64_t bytes,
		      uint64_t ctx, int device);
void gp__graphmem_forget(struct gp_worker *w, uint64_t graph);
/* The graph was destroyed, an executable was destroyed, graph memory a was freed outside a
 * graph: which ranges are nobody's now. */
void gp__graphmem_graph_gone(struct gp_worker *w, uint64_t graph);
void gp__graphmem_exec_gone(struct gp_worker *w);
void gp__graphmem_freed(struct gp_worker *w, struct gp_alloc *a);
/* Charges an executable graph (x) its graph's allocation nodes; OUT_OF_MEMORY past the
 * session's limit. */
CUresult gp__graphmem_charge_exec(struct gp_worker *w, CUgraph g, uint64_t graph,
				  struct gp_handle *x);
/* What the driver keeps reserved for graphs on device (-1: every device), charged anew. */
void gp__graphmem_refresh(struct gp_worker *w, int device);
/* graph.c: a handle for a node just made in graph. */
uint64_t gp__graph_node_new(struct gp_worker *w, CUgraphNode n, uint64_t graph);
/* graph.c: whether the graph is a conditional node's body. */
bool gp__graph_is_body(struct gp_worker *w, uint64_t graph);
/* graph.c: the handle of a graph being captured (the one given out, or a new one). */
CUresult gp__graph_name(struct gp_worker *w, CUgraph g, uint64_t ctx, uint64_t *out);
/* An allocation of pool (0: none) was freed (and removed from the table). */
void gp__pool_alloc_freed(struct gp_worker *w, uint64_t pool);

/* managed.c: a managed allocation freed, or every one of a context that went */
void gp__managed_forget(struct gp_worker *w, CUdeviceptr ptr);
void gp__managed_forget_ctx(struct gp_worker *w, uint64_t ctx);
/* A library's block of managed memory [ptr, ptr + size) joins the coherent memory (once:
 * its other variables find it there); *base, *len: the pages it covers. */
CUresult gp__managed_global_add(struct gp_worker *w, CUdeviceptr ptr, uint64_t size, uint64_t ctx,
				uint64_t module, uint64_t *base, uint64_t *len);
/* A module or library that went takes its blocks along. */
void gp__managed_forget_module(struct gp_worker *w, uint64_t module);

/* module.c */
/* A function's parameter layout, asked of the driver on first use. */
CUresult gp__fn_described(struct gp_worker *w, struct gp_handle *h, uint64_t ctx_id);
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

/* calls.c: the request path. Every call of <gpupool/calls.h> is decoded, its arguments
 * checked by kind and its device ranges against what the session owns, before its
 * handler gp__serve_<name>() runs; the handler sees the checked values in a struct
 * gp_wargs_<name> (the wire fields by name, plus each handle's driver object) and fills
 * the call's struct gp_out_<name>. */
/* A wait a handler hands to a waiter thread instead of blocking (waits.c). The kinds
 * after GP_WAIT_EVENT are driver calls that wait for the device themselves (the driver
 * synchronizes before it frees, unloads or destroys): on the main thread, a host function
 * waiting for a HOST_DONE only that thread reads would never end. Their handler forgets
 * what the call ends before it hands the call over, so nothing of it is the session's from
 * then on. */
enum gp_wait_kind {
	GP_WAIT_NONE,
	GP_WAIT_CTX,
	GP_WAIT_STREAM,
	GP_WAIT_EVENT,
	GP_WAIT_MEM_FREE,
	GP_WAIT_STREAM_DESTROY,
	GP_WAIT_MODULE_UNLOAD,
	GP_WAIT_LIBRARY_UNLOAD,
	GP_WAIT_CTX_DESTROY,	 /* ctx is destroyed, not made current */
	GP_WAIT_PRIMARY_RELEASE, /* device's last retain: the driver destroys the context */
	GP_WAIT_PRIMARY_RESET
};
struct gp_wait {
	enum gp_wait_kind kind;
	CUcontext ctx; /* made current on the waiter's thread */
	CUstream stream;
	CUevent event;
	CUdeviceptr dptr;
	CUmodule module;
	CUlibrary library;
	CUdevice device;
	int session_device; /* PRIMARY_*: the session's device index (primary_ending) */
};

struct gp_req {
	const struct gp_frame_hdr *h;
	struct gp_wait wait;	  /* set by a handler: the reply comes when this wait ends */
	bool answered_later;	  /* the handler arranged for the reply to come from elsewhere */
	bool async;		  /* sent with GP_F_NO_REPLY: no answer goes back */
	bool bulk_taken;	  /* the handler read the request's bulk (BULK_IN) */
	uint64_t bulk_total;	  /* BULK_IN: the bytes that follow the request */
	int err;		  /* a transport or protocol failure: the session ends */
	Gp__Function **functions; /* GP_C_FUNCTIONS: listed in the reply, then freed */
	size_t n_functions;
};

/* The worker's view of a call's arguments, by kind (see <gpupool/calls.h>). */
#define GP__W_CTX(f) \
	uint64_t f;  \
	int f##_dev;
#define GP__W_CTX_OPT(f) \
	uint64_t f;      \
	int f##_dev; /* -1: none */
#define GP__W_DEVICE(f) \
	uint64_t f;     \
	CUdevice f##_drv;
#define GP__W_STREAM(f) \
	uint64_t f;     \
	CUstream f##_drv;
#define GP__W_EVENT(f) \
	uint64_t f;    \
	CUevent f##_drv;
#define GP__W_MODULE(f) \
	uint64_t f;     \
	CUmodule f##_drv;
#define GP__W_LIBRARY(f) \
	uint64_t f;      \
	CUlibrary f##_drv;
#define GP__W_MODLIB(f) \
	uint64_t f;     \
	void *f##_drv;  \
	bool f##_is_library;
#define GP__W_FUNC(f)                               \
	uint64_t f;                                 \
	void *f##_drv; /* CUfunction or CUkernel */ \
	const struct gp_fn_info *f##_info;          \
	bool f##_is_kernel;
#define GP__W_DPTR(f) CUdeviceptr f;
#define GP__W_U64(f) uint64_t f;
#define GP__W_U32(f) uint32_t f;
#define GP__W_I32(f) int32_t f;
#define GP__W_NAME(f) const char *f;
#define GP__W_BLOB(f)     \
	const uint8_t *f; \
	size_t f##_len;
#define GP__W_BULK_IN(f) uint64_t f##_len;
#define GP__W_BULK_OUT(f) uint64_t f##_len;

#define GP_ARG(kind, f) GP__W_##kind(f)
#define GP_OUT(f)
#define GP_RANGE(base, width, height, pitch)
#define GP__WARGS(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)        \
	struct gp_wargs_##name {                                          \
		ARGS                                                      \
	};                                                                \
	CUresult gp__serve_##name(struct gp_worker *w, struct gp_req *rq, \
				  const struct gp_wargs_##name *a, struct gp_out_##name *o);
GP_CALL_MAP(GP__WARGS)
#undef GP__WARGS
#undef GP_RANGE
#undef GP_OUT
#undef GP_ARG

int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h);
/* Sends a call's Reply (what kernels printed first, and a kept deferred error with it),
 * under the connection's send lock; with w->lock held. */
int gp__send_reply(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r,
		   const uint64_t *out, size_t nout, Gp__Function **functions, size_t nfunctions);
/* Receives the request's bulk (total bytes, as its BULK_IN argument said) into the sink.
 * Returns the sink's CUresult; a broken transfer sets rq->err. */
CUresult gp__req_recv(struct gp_worker *w, struct gp_req *rq, uint64_t total,
		      struct gp_bulk_sink *sink);
void gp__defer_error(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r);
CUresult gp__use_ctx(struct gp_worker *w, uint64_t id, struct gp_handle **out);
/* A stream id from the client: 0 or 1 the legacy default stream, 2 the per-thread one. */
CUresult gp__use_stream(struct gp_worker *w, uint64_t id, CUstream *out);
/* A launchable handle: a module's function or a library's kernel (used as CUfunction). */
struct gp_handle *gp__launchable(struct gp_worker *w, uint64_t id);

/* busy.c: see its DESIGN block. Started once the session is admitted and the driver is up:
 * 0, or -1 when the driver does not tell busy time (the session's figure stays unknown).
 * share: percent to hold by time, 0 for none. gp__busy_final publishes a last reading. */
int gp__busy_start(struct gp_worker *w, unsigned share);
void gp__busy_final(struct gp_worker *w);
extern atomic_bool gp__share_held;
void gp__share_hold(struct gp_worker *w, CUstream stream);
/* Before a launch on stream: while the session is over its compute share (busy.c), queues
 * a gate on the stream that holds the launch and the stream's later work until the share
 * allows them; the main thread goes on with the next call. */
static inline void gp__share_gate(struct gp_worker *w, CUstream stream)
{
	if (atomic_load_explicit(&gp__share_held, memory_order_relaxed))
		gp__share_hold(w, stream);
}

/* watchdog.c: see its DESIGN block. Started once the session is admitted. */
int gp__watch_start(struct gp_worker *w);
/* Answers request_id with CUDA_ERROR_LAUNCH_TIMEOUT, if the connection is free to. */
void gp__watch_answer_timeout(struct gp_worker *w, uint64_t request_id);
/* worker.c: tells the client's stderr (an OUTPUT_ERR frame) that the session is to be
 * preempted, or (ending) that it was; each once. Called by the main thread, or by the
 * watchdog under its lock while the connection is the main thread's; takes the send lock
 * without waiting. 0: said (or nothing to say: the client takes no OUTPUT_ERR); -EBUSY: try
 * again. */
int gp__worker_preempt_tell(struct gp_worker *w, bool ending);
/* Around a call's handler; quiet: the handler does no I/O on the connection. */
void gp__watch_enter(const struct gp_frame_hdr *h, bool quiet);
void gp__watch_leave(void);
/* The main thread has left its loop: it is ending. */
void gp__watch_done(void);

/* inventory.c: lists the driver's GPUs on the control channel; the process's exit code. */
int gp__worker_inventory(const char *driver);
/* nvml.c: checks each GPU of inv against the NVML beside driver (GpuInfo.nvml set to one of
 * these), logging a warning per disagreement, and names the NVML in inv (lib and version are
 * its storage; lib "" when there is none). The number of GPUs that disagree. */
#define GP_NVML_MATCH "match"
#define GP_NVML_MISMATCH "mismatch"
/* A GPU in MIG mode (instance false) or one of its instances, as NVML lists it; cuda: CUDA's
 * ordinal for it in this process, -1 when CUDA does not list it (CUDA lists one instance). */
struct gp__mig_entry {
	bool instance;
	unsigned gpu, k; /* the GPU's number among those in MIG mode; the instance's index */
	char name[96], profile[16];
	uint8_t uuid[16];
	uint64_t memory;
	uint32_t sms, gi, ci;
	int cuda;
	const char *nvml; /* GP_NVML_MATCH, or GP_NVML_MISMATCH when CUDA disagrees */
};

#define GP_MIG_ENTRIES 64

struct gp__mig_list {
	unsigned n;
	struct gp__mig_entry e[GP_MIG_ENTRIES];
};

/* Also lists the GPUs in MIG mode and their instances in mig (none without NVML or MIG); the
 * GPUs of inv that are MIG instances get instance set (and are checked against NVML's). */
int gp__nvml_crosscheck(const char *driver, Gp__Inventory *inv, char *lib, size_t liblen,
			char *version, size_t verlen, struct gp__mig_list *mig);

/* mem.c, windowed allocations (a session spanning daemons, include/gpupool/va_window.h):
 * whether [p, p+len) lies in device dev's TiB of the session's window; the driver's free of
 * an allocation (a windowed one unmapped and released; the context current); a destroyed
 * context's windowed allocations released (the driver frees only its cuMemAlloc ones); and
 * whether the driver reserves and maps memory at the window's addresses on every device. */
bool gp__mem_in_window(const struct gp_worker *w, int dev, CUdeviceptr p, uint64_t len);
CUresult gp__mem_drv_free(struct gp_worker *w, CUdeviceptr dptr);
void gp__mem_window_forget_ctx(struct gp_worker *w, uint64_t ctx);
bool gp__mem_window_probe(struct gp_worker *w);

/* mem.c: page-locked staging of asynchronous device-to-host copies that have been sent,
 * freed by the main thread (a driver callback may not call the driver). */
void gp__dtoh_async_reap(struct gp_worker *w);
/* A call queued on s (a memset, a device copy) answered when s gets there (the main thread
 * never waits for a stream: a host function there may wait for a frame only it reads). */
CUresult gp__answer_on_stream(struct gp_worker *w, struct gp_req *rq, CUstream s);
/* Context ctx went (destroyed, reset, its last release): staging made in it went too (that
 * of other contexts stays). */
void gp__staging_forget(CUcontext ctx);
/* Whether a stream still owes an answer, or holds staging (the process then _exits). */
bool gp__stream_answers_pending(struct gp_worker *w);

/* ipc.c: the exports of an allocation being freed, or of a context going, withdrawn from
 * the supervisor (before the driver frees the memory). */
void gp__ipc_mem_freed(struct gp_worker *w, CUdeviceptr ptr, uint64_t ctx);
void gp__ipc_forget_ctx(struct gp_worker *w, uint64_t ctx);

/* hostfn.c: HOST_DONE from the client: its host function returned, the stream goes on. */
int gp__host_done(struct gp_worker *w, const struct gp_frame_hdr *h);
/* Whether a host function still waits for the client. */
bool gp__host_calls_pending(void);

/* waits.c */
/* Hands rq->wait to a waiter thread, which sends the call's reply when the wait ends. */
CUresult gp__wait_start(struct gp_worker *w, const struct gp_req *rq);
/* Whether a waiter is inside the driver (the process then ends without unloading it). */
bool gp__waits_busy(void);
/* Starts the first waiter before the tenant's first call, so that a session which reaches
 * its task limit (worker_tasks) still has one to queue its waits on. 0, or -1. */
int gp__waits_prestart(struct gp_worker *w);
/* exec.c: every stream of the context (and its default ones) is idle, no waiter busy. */
/* A synchronize the main thread made itself (the stream, event or context was idle): the
 * pools' trim at a synchronize is charged anew before the client hears, as a waiter does
 * (waits.c). Returns r. */
CUresult gp__synchronized(struct gp_worker *w, CUresult r);
bool gp__ctx_idle(struct gp_worker *w, uint64_t ctx);
/* Answers every call being waited for with CUDA_ERROR_LAUNCH_TIMEOUT (kernel_timeout). */
void gp__waits_answer_timeout(struct gp_worker *w);

/* output.c */
/* Points stdout and stderr at pipes drained by a thread (the log keeps the old stderr);
 * before the driver is loaded. */
int gp__output_capture(void);
/* Sends what the kernels printed (and the driver's stderr) since the last call, ahead of an
 * answer. */
int gp__output_flush(struct gp_worker *w);

/* seccomp.c: gp__worker_seccomp, in seccomp.h. */

#endif
