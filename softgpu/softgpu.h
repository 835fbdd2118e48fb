/* softgpu.h -- softgpu, a CPU implementation of libcuda.so.1: the map of its files. */
#ifndef SG_SOFTGPU_H
#define SG_SOFTGPU_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "ptx.h"

/*
 * softgpu answers the CUDA driver API on a machine without a GPU. Device
 * memory is host memory behind its own address numbering; kernels are PTX,
 * parsed and lowered once per module (ptx_*.c) and interpreted (exec.c and
 * ops_*.c) on a pool of host threads (engine.c); streams are worker threads
 * running their operations in order (stream.c).
 *
 * Files:
 *   config.c     SOFTGPU_* environment, diagnostics to stderr (SOFTGPU_LOG)
 *   handle.c     registry of live handles, so stale ones are errors, not crashes
 *   init.c       cuInit, driver version, the device table
 *   device.c     cuDevice* queries; device_attr.c: the architectures softgpu can present
 *                (SOFTGPU_CC) and every CUdevice_attribute
 *   context.c    contexts, primary contexts, the per-thread current-context stack
 *   memory.c     device memory arenas, the allocation table, host-pinned memory,
 *                pointer attributes, device-side malloc
 *   vmm.c        virtual memory management: reservations, physical allocations (memfds),
 *                mappings and their access
 *   ipc.c        cuIpc*: device memory and events shared with another process (the
 *                arena's memfd, a registry page of exports), and the pool's fd hand-over
 *   mempool.c    memory pools and stream-ordered allocation (cuMemAllocAsync, cuMemPool*)
 *   copy.c       cuMemcpy* and cuMemset*, sync and async, 1-D, 2-D, 3-D and peer, with
 *                host, device and array endpoints
 *   array.c      CUDA arrays, texture and surface objects, the table kernels read them from
 *   stream.c     streams, events, host functions, legacy default-stream ordering
 *   graph.c      CUDA graphs: nodes, clone, instantiate, launch, update (graph_int.h)
 *   capture.c    stream capture: a capturing stream's ops become graph nodes
 *   module.c     modules, libraries, functions, kernels, globals, parameter info
 *   link.c       JIT linking (cuLink*): PTX inputs joined, answered as a link bundle
 *   launch.c     cuLaunchKernel(Ex), parameter marshalling, occupancy
 *   engine.c     the block thread pool that runs a grid
 *   errors.c     cuGetErrorName, cuGetErrorString
 *   nvml_source.c  what softgpu's libnvidia-ml.so.1 (src/nvml.c) asks of it: memory in
 *                use, engine busy time, whether this process uses a device, MIG
 *   mig.c        MIG emulation: SOFTGPU_MIG's instances, their UUIDs, which CUDA enumerates
 *   abi.c        what cudart's export tables need of softgpu (the primary context handles)
 *                and the pre-11.0 names it still asks for; the tables themselves are
 *                src/'s, shared with the interposer
 *   printf.c     device printf and assert output
 *
 * The PTX side (ptx.h; ptx_int.h is the front end's state, ops.h the handlers' shorthands):
 *   ptx_lex.c    tokens
 *   ptx_parse.c  module structure: directives, variables, functions, statements
 *   ptx_operand.c  operands and instruction statements
 *   ptx_opcode.c an opcode word split into base and modifiers
 *   ptx_lower.c  parsed instructions to register-slot form; the helpers the families share
 *   ops_*.c      one instruction family each (int, bits, float, math, half, simd, cmp, cvt,
 *                mov, mem, atom, warp, ctrl): its lowering and its handlers
 *   ops_mma.c    warp matrix instructions: ldmatrix, stmatrix, mma.sync, wmma
 *   ops_tex.c    texture and surface instructions: tex, tld4, txq, suld, sust, suq
 *   exec.c       one thread block: the interpreter loop, barriers, warp exchanges
 *   fp.c         rounding, flush-to-zero, f16/bf16 conversions
 *   util.c       a string map and a growable array (util.h)
 */

#define SG_EXPORT __attribute__((visibility("default")))

#define SG_DRIVER_VERSION 13000

/* ---- config.c, device_attr.c: the architecture every softgpu device presents ---- */

/* A compute capability softgpu can present (SOFTGPU_CC) and the limits that go with it. */
struct sg_arch {
	int major, minor;
	const char *model; /* the GPU the other numbers come from */
	int smem_per_sm;   /* bytes */
	int smem_optin;	   /* per block, with cuFuncSetAttribute's opt-in */
	int smem_reserved; /* per block, reserved by the system */
	int threads_per_sm;
	int blocks_per_sm;
	int l2_size;
	int clock_khz, mem_clock_khz, bus_width;
	int sm_count;	   /* SOFTGPU_SMS's default */
	int fp32_per_fp64; /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
	unsigned pci_device_id, pci_subsystem_id;
};

/* The entry for "MAJOR.MINOR", or NULL when softgpu does not present that one. */
const struct sg_arch *sg_arch_find(const char *cc);
/* The configured architecture (7.5 before cuInit). */
const struct sg_arch *sg_arch(void);
/* "7.5, 8.0, ..." into buf. */
void sg_arch_list(char *buf, size_t size);
/* The configured compute capability as PTX and fatbins number it (75, 120). */
#define SG_SM ((unsigned)(sg_arch()->major * 10 + sg_arch()->minor))

struct sg_config {
	int devices;
	uint64_t memory;
	char name[256];
	bool log;
	unsigned threads;	    /* block workers (SOFTGPU_THREADS, default: online CPUs) */
	unsigned sm_count;	    /* reported multiprocessors */
	unsigned sm_full;	    /* SOFTGPU_SMS before the MPS cut (a MIG instance's share) */
	bool stats;		    /* SOFTGPU_STATS: per-launch instruction counts */
	const struct sg_arch *arch; /* SOFTGPU_CC */
	/* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, as an MPS client: the share of the device this
	 * process gets (100: all). sm_count is cut to it; the block pool is sg_block_threads. */
	unsigned thread_pct;
};

extern struct sg_config sg_cfg;

/* Reads SOFTGPU_DEVICES, SOFTGPU_MEMORY, SOFTGPU_NAME, SOFTGPU_LOG, ...; 0 or a CUresult. */
int sg_config_load(void);
/* Host threads that run blocks: threads cut to thread_pct, at least 1. */
unsigned sg_block_threads(void);
void sg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- handle.c ---- */

enum sg_kind {
	SG_K_CTX = 1,
	SG_K_STREAM,
	SG_K_EVENT,
	SG_K_MODULE,
	SG_K_FUNC,
	SG_K_LIBRARY,
	SG_K_KERNEL,
	SG_K_GRAPH,
	SG_K_GNODE,
	SG_K_GEXEC,
	SG_K_MEMPOOL,
	SG_K_LINK,
	SG_K_ARRAY,
	SG_K_MIPMAP,
	SG_K_GCOND, /* a graph conditional handle (graph.c) */
};

int sg_handle_add(const void *p, int kind);
void sg_handle_del(const void *p);
bool sg_handle_ok(const void *p, int kind);
/* The kind of a live handle, 0 if none. */
int sg_handle_kind(const void *p);

/* ---- init.c, device.c, device_attr.c ---- */

struct sg_arena;

struct sg_device {
	int ordinal;
	char name[256];
	CUuuid uuid; /* a MIG instance's own (MIG-...) */
	uint64_t mem_total;
	int pci_bus;
	int phys;	   /* the physical GPU (SOFTGPU_DEVICES' numbering) */
	int mig;	   /* a MIG instance of it: the instance's index; -1: the whole GPU */
	unsigned sm_count; /* reported multiprocessors (an instance's share, MPS-cut) */
	struct sg_arena *arena;
	struct sg_ctx *primary;
	int contexts; /* active contexts (atomic): this process uses the device */
	/* Engine time for NVML's utilization (nvml_source.c), under busy_lock: [0] counts
	 * kernels, [1] kernels, copies and memsets. */
	pthread_mutex_t busy_lock;
	unsigned busy_active[2];
	uint64_t busy_since[2];
	uint64_t busy_ns[2];
	/* mempool.c, under its lock: the default pool (made on first use), the current one */
	struct sg_mempool *default_pool, *mem_pool;
};

extern struct sg_device *sg_devices;
extern int sg_ndevices;

/* CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED (or cuInit's failure). */
CUresult sg_inited(void);
/* A device by ordinal after the init check. */
CUresult sg_device_get(CUdevice d, struct sg_device **out);
/* Value of a CUdevice_attribute; CUDA_ERROR_INVALID_VALUE for unknown ones. */
CUresult sg_device_attr(const struct sg_device *dev, int attr, int *value);

/* ---- mig.c: MIG emulation (SOFTGPU_MIG) ---- */

#define SG_MIG_MAX 7 /* instances per GPU, as on NVIDIA's A100 and H100 */

struct sg_mig_instance {
	char profile[16]; /* "1g.10gb" */
	unsigned slices;  /* compute slices, of 7 */
	uint64_t memory;
	unsigned sm_count; /* before the MPS cut */
	CUuuid uuid;
};

struct sg_mig_gpu {
	bool enabled;
	int ninst;
	CUuuid parent; /* the GPU's own UUID */
	int pci_bus;
	struct sg_mig_instance inst[SG_MIG_MAX];
};

/* Per physical GPU, set by sg_mig_load (at cuInit). */
extern struct sg_mig_gpu sg_mig[16];
/* Parses SOFTGPU_MIG against sg_cfg (devices, memory, SMs); 0 or CUDA_ERROR_INVALID_VALUE
 * with the reason logged. */
int sg_mig_load(void);
/* Gives physical GPU i's instances their UUIDs, derived from the GPU's. */
void sg_mig_attach(int i, const CUuuid *parent, int pci_bus);
/* "MIG-xxxxxxxx-xxxx-..." */
void sg_mig_uuid_string(const CUuuid *u, char *out, size_t len);

/* ---- context.c ---- */

struct sg_stream;
struct sg_module;

struct sg_ctx {
	struct sg_device *dev;
	unsigned flags;
	bool primary;
	bool active;	     /* a primary context is active while retained */
	int refcount;	     /* primary: retain count */
	volatile int sticky; /* a sticky launch error (CUresult), 0 when healthy */
	struct sg_stream *null_stream;
	struct sg_stream *streams; /* list through ->next */
	struct sg_module *modules; /* list through ->next */
	struct sg_event *events;   /* list through ->next */
	size_t limit_stack;
	size_t limit_printf;
	size_t limit_heap;
	size_t heap_used;
	uint64_t id;
	pthread_mutex_t lock;
};

/*
 * The current context, checked: initialised, a current context, alive and
 * active; with check_sticky, a context that faulted returns its error.
 */
CUresult sg_ctx_current(struct sg_ctx **out, bool check_sticky);
/* Validates an explicit context handle (NULL means current). */
CUresult sg_ctx_resolve(CUcontext h, struct sg_ctx **out, bool check_sticky);
void sg_ctx_set_sticky(struct sg_ctx *ctx, int err);
/* Frees everything a context owns (modules, streams, events, memory). */
void sg_ctx_release_resources(struct sg_ctx *ctx);
/*
 * For the export tables linked into this library: called when a context is
 * destroyed, or a primary context released to zero or reset, before its
 * resources go (context-local-storage destructors run there).
 */
typedef void (*sg_ctx_hook)(CUcontext ctx);
void sg_ctx_set_release_hook(sg_ctx_hook fn);
/* A device's primary context handle without retaining it (CUDART_INTERFACE slot 2). */
CUresult sg_primary_ctx_handle(CUdevice dev, CUcontext *pctx);

/* ---- memory.c ---- */

enum sg_alloc_kind {
	SG_MEM_DEVICE = 1,
	SG_MEM_HOST,	   /* cuMemHostAlloc / cuMemAllocHost: device address == host address */
	SG_MEM_REGISTERED, /* cuMemHostRegister */
	SG_MEM_MANAGED,
	SG_MEM_MODULE, /* a module's .global/.const variables */
	SG_MEM_HEAP,   /* device-side malloc */
	SG_MEM_VMM,    /* a mapping of a cuMemCreate allocation (vmm.c); flags: SG_VMM_* */
	SG_MEM_POOL,   /* stream-ordered, from a memory pool (mempool.c); owner: its chunk */
	SG_MEM_IPC,    /* another process's allocation opened here (ipc.c); owner: the import */
	SG_MEM_ARRAY,  /* a CUDA array's texels (array.c): not cuMemFree's */
};

/* A VMM mapping's flags: the devices that may access it (bit per ordinal), and its device. */
#define SG_VMM_ACCESS(flags) ((flags)&0xffffu)
#define SG_VMM_DEV(flags) ((int)((flags) >> 16))

struct sg_alloc {
	uint64_t base;
	uint64_t size;
	uint8_t *host;
	int kind;
	struct sg_ctx *ctx;
	unsigned flags;
	uint64_t id;
	uint64_t charged; /* bytes taken from the device arena */
	void *owner;	  /* SG_MEM_POOL: the pool chunk it lives in; SG_MEM_IPC: the import */
};

int sg_memory_init(struct sg_device *dev);
/* Device memory (DEVICE, MODULE, HEAP) from ctx's device; CUresult. */
CUresult sg_mem_alloc(struct sg_ctx *ctx, uint64_t size, int kind, uint64_t *dptr);
CUresult sg_mem_free(struct sg_ctx *ctx, uint64_t dptr, int kind);
/* Host-accessible managed memory (modules with __managed__ variables). */
CUresult sg_mem_alloc_managed(struct sg_ctx *ctx, uint64_t size, uint64_t *dptr);
/* Frees every allocation a context owns. */
void sg_mem_free_ctx(struct sg_ctx *ctx);
/* Copies out the allocation containing addr; false if none. */
bool sg_mem_find(uint64_t addr, struct sg_alloc *out);
/*
 * Host address of [addr, addr+size): inside one allocation (device or pinned)
 * when the address is registered, else the address itself when `host_ok`
 * (pageable host memory). NULL with *err set otherwise.
 */
uint8_t *sg_mem_xlate(uint64_t addr, uint64_t size, bool host_ok, CUresult *err);
void sg_mem_info(const struct sg_device *dev, uint64_t *free, uint64_t *total);
/* For vmm.c: takes size bytes of dev's memory (*off names them for sg_mem_uncharge); CUresult. */
CUresult sg_mem_charge(struct sg_device *dev, uint64_t size, uint64_t *off);
void sg_mem_uncharge(struct sg_device *dev, uint64_t off, uint64_t size);
/* vmm.c: the host shadow of reserved device address va (mapped or not), or NULL. */
uint8_t *sg_vmm_shadow(uint64_t va);
/* mempool.c: the host memory of [addr, addr+size) inside one graph allocation node's
 * memory, mapped or not (a copy or memset node made before it runs), or NULL. */
uint8_t *sg_gmem_host(uint64_t addr, uint64_t size);
/* cuMemFree of dptr: true when it is a graph allocation's address (*r: the result). */
bool sg_gmem_free_sync(uint64_t dptr, CUresult *r);
/* Device address space reserved by vmm.c: never taken for host memory by copies. */
int sg_mem_reserve_add(uint64_t base, uint64_t size);
void sg_mem_reserve_del(uint64_t base);
/* A mapping's entry (kind SG_MEM_VMM) in the table: added, removed, its flags set. 0 or -errno. */
int sg_mem_map_add(const struct sg_alloc *a);
int sg_mem_map_del(uint64_t base);
int sg_mem_map_flags(uint64_t base, unsigned flags);
/*
 * For memory pools: bytes of a device's arena taken (*cap: size rounded up) and given
 * back, without an allocation table entry; and an entry of kind SG_MEM_POOL made and
 * removed for an allocation served from such bytes. CUresult / 0 or -ENOENT.
 */
CUresult sg_mem_reserve(struct sg_device *dev, uint64_t size, uint64_t *dptr, uint64_t *cap);
void sg_mem_unreserve(struct sg_device *dev, uint64_t dptr, uint64_t cap);
CUresult sg_mem_map(struct sg_ctx *ctx, uint64_t dptr, uint64_t size, void *owner);
int sg_mem_unmap(uint64_t dptr);
/*
 * For ipc.c: the cuMemAlloc allocation containing addr, with the arena's memfd and the
 * allocation's offset in it (false if addr is in none); a device address hint for an
 * import of len bytes (after the arena, in the device window); an import's entry removed
 * from the table and released (0 or -ENOENT).
 */
bool sg_mem_ipc_source(uint64_t addr, struct sg_alloc *out, int *fd, uint64_t *off);
void *sg_mem_ipc_hint(struct sg_device *dev, uint64_t len);
/* For vmm.c: size bytes of PROT_NONE address space at a multiple of align in the
 * SOFTGPU_VA_WINDOW window of the current context's device; 0 when there is no window,
 * UINT64_MAX when it has no room. */
uint64_t sg_mem_window_reserve(uint64_t size, uint64_t align);
int sg_mem_ipc_del(uint64_t base);

/* ---- ipc.c ---- */

/* An interprocess event's counters, in a page shared with the processes that opened it. */
struct sg_ipc_evslot {
	uint64_t gen;  /* records issued, by any process */
	uint64_t done; /* the highest record completed */
	uint64_t tag[2];
	uint32_t live, pad;
};

/* An exported allocation is freed: its handle opens nothing any more. */
void sg_ipc_forget(uint64_t alloc_id);
/* An import's entry leaves the table (close, or its context goes): unmap it. */
void sg_ipc_unmap(const struct sg_alloc *a);
/* An interprocess event: a new slot (handle NULL) or an exported one opened; CUresult. */
CUresult sg_ipc_event_attach(struct sg_event *e, const void *handle);
/* Its last reference goes (under stream.c's queue lock: takes only ipc.c's). */
void sg_ipc_event_release(struct sg_event *e);

/* ---- mempool.c ---- */

struct sg_mempool;
struct sg_op;

/* Runs a stream-ordered free when its stream reaches it (stream.c's worker). */
void sg_mempool_free_run(struct sg_op *op);
/* After a stream, event or context synchronize: pools give back what they hold above their
 * release threshold. */
void sg_mempool_sync_release(void);
/* A context goes: the pool allocations made in it go back to their pools. */
void sg_mempool_forget_ctx(struct sg_ctx *ctx);
/* The pool the pool allocation starting at base came from (NULL: none). */
CUmemoryPool sg_mempool_of(uint64_t base);
/* cuMemFree of a pool allocation: back to its pool at once (the caller synchronized). */
CUresult sg_mempool_free_now(uint64_t dptr);

/* ---- array.c ---- */

/* A live CUDA array as copies and texture objects see it. */
struct sg_array_info {
	uint64_t dptr;
	CUDA_ARRAY3D_DESCRIPTOR desc;  /* as created */
	unsigned esize;		       /* bytes per element */
	uint64_t width, height, depth; /* elements, rows, slices or layers (1 where none) */
	uint64_t pitch;		       /* bytes per row: width * esize */
	uint64_t bytes;
	struct sg_ctx *ctx;
	bool level; /* a mipmapped array's level */
};

/* CUDA_ERROR_INVALID_HANDLE unless h is a live array (in a live context). */
CUresult sg_array_get(CUarray h, struct sg_array_info *out);

/* ---- copy.c ---- */

struct sg_copy {
	uint8_t *dst;
	const uint8_t *src;
	size_t width;
	size_t height;
	size_t depth; /* 0 or 1 for 1-D and 2-D copies */
	size_t dpitch;
	size_t spitch;
	size_t dslice; /* bytes between 3-D slices */
	size_t sslice;
};

struct sg_set {
	uint8_t *dst;
	uint32_t value;
	unsigned elem; /* 1, 2, 4 */
	size_t width;  /* elements per row */
	size_t height;
	size_t pitch;
};

void sg_copy_run(const struct sg_copy *c);
void sg_set_run(const struct sg_set *s);
/*
 * Checks a CUDA_MEMCPY3D and resolves both sides to host addresses (width 0: nothing to
 * copy); *src_host and *dst_host say which sides are host memory. CUresult.
 */
CUresult sg_copy_prepare3d(const CUDA_MEMCPY3D *p, struct sg_copy *c, bool *src_host,
			   bool *dst_host);
/* Checks a memset of height rows of width elements of elem bytes at dst (dst NULL: empty). */
CUresult sg_set_prepare(uint64_t dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
			size_t height, struct sg_set *out);

/* ---- stream.c ---- */

enum sg_op_kind {
	SG_OP_LAUNCH = 1,
	SG_OP_COPY,
	SG_OP_SET,
	SG_OP_RECORD,
	SG_OP_WAIT,
	SG_OP_HOSTFN,
	SG_OP_CALLBACK,
	SG_OP_NOP,
	SG_OP_MEMFREE, /* cuMemFreeAsync (mempool.c) */
	SG_OP_GRAPHFN, /* graph.c: a memory or conditional node; always run, done() when freed */
};

struct sg_event {
	struct sg_ctx *ctx;
	unsigned flags;
	uint64_t gen;	   /* records issued */
	uint64_t done_gen; /* records completed */
	uint64_t time_ns;
	struct sg_ipc_evslot *ipc; /* CU_EVENT_INTERPROCESS: the shared counters, else NULL */
	void *ipc_map;		   /* ipc.c: the registry mapping it holds (opened events) */
	struct sg_event *next;
	/* graph.c, under its lock: the capture that last recorded it, and what it recorded */
	uint64_t cap_id;
	struct sg_gnode **cdeps;
	size_t ncdeps;
};

struct sg_launch;

struct sg_op {
	struct sg_op *next;
	int kind;
	uint64_t seq;
	/* implicit dependencies (legacy default stream): wait until these streams reach these seqs */
	struct sg_dep {
		struct sg_stream *stream;
		uint64_t seq;
	} * deps;
	unsigned ndeps;
	union {
		struct sg_launch *launch;
		struct sg_copy copy;
		struct sg_set set;
		struct {
			struct sg_event *ev;
			uint64_t gen;
		} ev;
		struct {
			CUhostFn fn;
			void *data;
		} host;
		struct {
			CUstreamCallback fn;
			void *data;
		} cb;
		struct {
			uint64_t dptr;
			struct sg_ctx *ctx;
			uint64_t stream; /* the freeing stream's id */
			uint64_t
				gen; /* the allocation's (a chunk's use), so a stale op does nothing */
			bool pooled; /* from a pool; else a cuMemAlloc allocation */
		} mfree;
		struct {
			void (*run)(struct sg_stream *s, void *data, int sticky);
			void (*done)(void *data);
			void *data;
		} gfn;
	} u;
	void *staging; /* freed when the op completes */
};

struct sg_stream {
	struct sg_ctx *ctx;
	unsigned flags;
	int priority;
	bool is_null;
	bool per_thread;
	pthread_t thread;
	bool thread_started;
	bool stopping;
	bool inline_busy; /* a synchronous op runs on its caller's thread */
	struct sg_op *head, *tail;
	uint64_t enq_seq;  /* ops submitted */
	uint64_t done_seq; /* ops completed */
	uint64_t id;
	struct sg_stream *next;
	/* graph.c, under its lock: the capture this stream takes part in, and its frontier */
	struct sg_capture *cap;
	struct sg_gnode **cdeps;
	size_t ncdeps, cdeps_cap;
};

/* Creates a stream of ctx (flags CU_STREAM_*); CUresult. */
CUresult sg_stream_new(struct sg_ctx *ctx, unsigned flags, int priority, struct sg_stream **out);
void sg_stream_free(struct sg_stream *s);
/*
 * The stream a handle names for the current context: NULL is the legacy
 * default stream (or the per-thread one when per_thread), CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD the special ones.
 */
CUresult sg_stream_resolve(CUstream h, bool per_thread, struct sg_ctx **ctx,
			   struct sg_stream **out);
/*
 * For the TOOLS_CONTEXT export table (abi.c): the stream object for handle h
 * in context ctx (resolved as sg_stream_resolve does, ctx made current for
 * the special handles), and the id of such an object, checked to be a live
 * stream of ctx.
 */
CUresult sg_stream_object(CUcontext ctx, CUstream h, int per_thread, void **obj);
CUresult sg_stream_object_id(CUcontext ctx, void *obj, unsigned long long *id);
/* Queues op (taking ownership) on s. */
CUresult sg_stream_submit(struct sg_stream *s, struct sg_op *op);
/* Queues op and waits for it: synchronous copies and memsets. */
CUresult sg_stream_submit_wait(struct sg_stream *s, struct sg_op *op);
CUresult sg_stream_sync(struct sg_stream *s);
/* Waits for every stream of ctx. */
CUresult sg_ctx_sync(struct sg_ctx *ctx);
/* Frees the streams and events of an idle context. */
void sg_streams_release(struct sg_ctx *ctx);
/* Queues ops[0..n) on s as one unit: nothing queued meanwhile lands between them; takes them. */
CUresult sg_stream_submit_list(struct sg_stream *s, struct sg_op **ops, size_t n);
struct sg_op *sg_op_new(int kind);
void sg_op_free(struct sg_op *op);
/* A RECORD (the event's next generation) or WAIT (its latest) op on e. */
struct sg_op *sg_event_op_new(struct sg_event *e, int kind);
/* Runs op at once on s's own thread (a conditional node's body: graph.c), then frees it;
 * not for event records and waits. */
void sg_stream_run_now(struct sg_stream *s, struct sg_op *op);
/* An event of context c (stream.c); with CU_EVENT_INTERPROCESS, ipc_handle names the exported
 * event it opens (NULL: a new one). CUresult. */
CUresult sg_event_new(struct sg_ctx *c, unsigned flags, const void *ipc_handle, CUevent *out);
uint64_t sg_now_ns(void);

/* ---- capture.c (graphs themselves: graph_int.h) ---- */

struct sg_gnode;
struct sg_capture;

/* Captures in progress in the process: when 0 nothing below needs its lock. */
extern int sg_captures_active;
#define SG_NOT_CAPTURED (-1)
/*
 * An op submitted to s while some capture is in progress: added to s's capture as a node
 * (taking op), or refused (synchronous work on a capturing stream, work on the legacy
 * stream beside a capturing blocking stream; op freed). SG_NOT_CAPTURED: run it as usual.
 * op NULL only checks.
 */
int sg_capture_op(struct sg_stream *s, struct sg_op *op, bool sync);
/* cuEventRecord / cuStreamWaitEvent while a capture is in progress; as sg_capture_op. */
int sg_capture_event(struct sg_stream *s, struct sg_event *e, int kind, unsigned flags);
bool sg_stream_capturing(struct sg_stream *s);
/*
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED when this thread may not make a potentially unsafe
 * call (an allocation, a synchronous copy, a context synchronize) under the capture modes.
 */
CUresult sg_capture_unsafe(void);
/* A stream that is synchronized or destroyed while capturing invalidates its capture. */
CUresult sg_capture_stream_sync(struct sg_stream *s, bool destroying);

/* ---- module.c ---- */

/* A parsed program shared by the modules loaded from one image. */
struct sg_image {
	struct sg_prog *prog;
	int refs;
};

struct sg_function {
	struct sg_module *mod;
	int index;	    /* function index in the program */
	int max_dyn_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
	int carveout;
	unsigned cache_config;
	bool ready; /* lowered, with its module's templates (sg_function_ready); atomic */
};

struct sg_library;

struct sg_module {
	struct sg_ctx *ctx;
	struct sg_image *img;
	uint64_t gbase;		   /* device address of the .global/.const block */
	uint64_t **tmpl;	   /* per function register templates */
	struct sg_function *funcs; /* per program function (entries are handles) */
	uint32_t nentries;
	struct sg_library *lib; /* the library it was made for, or NULL */
	struct sg_module *next;
};

struct sg_kernel {
	struct sg_library *lib;
	int index;
};

struct sg_library {
	struct sg_image *img;
	struct sg_kernel *kernels; /* per program function */
	uint32_t nkernels;
	struct sg_libmod {
		struct sg_ctx *ctx;
		struct sg_module *mod;
		struct sg_libmod *next;
	} * mods;
	pthread_mutex_t lock;
};

/* The function a CUfunction or CUkernel names in the current context. */
CUresult sg_function_resolve(CUfunction f, struct sg_ctx *ctx, struct sg_function **out);
/* Lowers f (and what it calls) on first use and makes its module's templates; the result is kept. */
CUresult sg_function_ready(struct sg_function *f);
void sg_module_free(struct sg_module *m);

/*
 * The JIT outputs of a load or link: err (if any) in the error log, an empty info log, the
 * wall time since t0 (a float in the option value's bytes).
 */
void sg_jit_outputs(unsigned n, CUjit_option *opts, void **vals, const char *err,
		    const struct timespec *t0);
/* A file read whole, with a NUL after its *size bytes; NULL if it cannot be read. */
void *sg_read_file(const char *path, size_t *size);

/* ---- link.c ---- */

/* The PTX texts of a link, each NUL-terminated, with the names its messages use. */
struct sg_link_texts {
	char **text;
	char **name;
	uint32_t n, cap;
};

/*
 * Adds what one input holds: PTX, a fatbin's PTX, a link bundle's entries (size bytes at
 * data, all of it checked). On failure err says why, naming the input.
 */
CUresult sg_link_collect(struct sg_link_texts *t, int type, const void *data, size_t size,
			 const char *name, char *err, size_t errlen);
void sg_link_texts_deinit(struct sg_link_texts *t);

/* ---- launch.c, engine.c ---- */

struct sg_launch {
	struct sg_grid g;
	struct sg_ctx *ctx;
	struct sg_module *mod; /* kept for the templates */
	uint8_t *params;
	struct sg_pout *out;
	CUfunction func; /* the handle it was made from (graph kernel nodes answer it) */
};

/*
 * A checked launch of hf in ctx, its parameters marshalled from kernelParams or `extra`;
 * not queued. CUresult.
 */
CUresult sg_launch_new(struct sg_ctx *ctx, CUfunction hf, const unsigned grid[3],
		       const unsigned block[3], unsigned shmem, void **params, void **extra,
		       struct sg_launch **out);
/*
 * Makes l a cooperative launch: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE when its blocks do
 * not all fit at once (occupancy x SMs); its blocks then run all at once (engine.c).
 */
CUresult sg_launch_make_coop(struct sg_launch *l);
/* A copy of a launch with its own parameter buffer and printf buffer (graph launches). */
struct sg_launch *sg_launch_dup(const struct sg_launch *l);
/* Runs a grid on the block pool; 0 or a CUresult (the launch's fault). */
int sg_engine_run(struct sg_launch *l);
void sg_launch_free(struct sg_launch *l);

/* ---- printf.c ---- */

struct sg_pout;

struct sg_pout *sg_pout_new(size_t limit);
void sg_pout_flush(struct sg_pout *p);
void sg_pout_free(struct sg_pout *p);

/* ---- nvml_source.c ---- */

/* Around each operation a stream runs: a kernel (kernel true) or a copy or memset. */
void sg_busy_enter(struct sg_device *dev, bool kernel);
void sg_busy_leave(struct sg_device *dev, bool kernel);

/* ---- errors.c ---- */

const char *sg_error_name(CUresult e);

#endif
