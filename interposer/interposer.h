/* interposer.h -- gpupool's libcuda.so.1 for the client side.
 *
 * client.c       the session: configuration, connect, Hello, the call path,
 *                transport failures turned into CUresult (one place)
 * discover.c     where the session goes: quotes from the candidates GPUPOOL_SERVER names,
 *                ordered under GPUPOOL_PLACEMENT (src/resolve.c resolves the names)
 * registry.c     what the client knows locally: device and host allocations
 * api_device.c   cuInit, versions, devices (answered from the snapshot)
 * api_context.c  contexts, primary contexts, the per-thread context stack
 * api_memory.c   allocations, copies, memsets, host memory, pointer attributes
 * api_vmm.c      virtual memory management: reservations, allocations, mappings, access
 * api_array.c    CUDA arrays, 3-D and array copies, texture and surface objects
 * api_module.c   modules, libraries (loaded lazily), kernels, globals, attributes
 * api_link.c     JIT linking: inputs collected into a link bundle the pool links at load
 * api_launch.c   kernel launches, occupancy
 * api_stream.c   streams, events, host functions
 * api_graph.c    graphs, stream capture, client memory in graphs (tokens for HOST_CALL)
 * api_mempool.c  memory pools and stream-ordered allocation (cuMemAllocAsync, cuMemPool*)
 * managed.c      managed and mapped memory: one address here and on the pool, pages kept
 *                coherent (write-protection and a SIGSEGV handler here, a shadow there)
 * api_ptds.c     the _ptds/_ptsz per-thread-default-stream entry points
 * api_ipc.c      CUDA IPC between sessions of one tenant: the pool's handles
 * nvml_source.c  what the NVML shim (libnvidia-ml.so.1, src/nvml.c) asks of the session
 * (cuGetProcAddress and cuGetExportTable are src/cuda_entry.c's, served locally)
 *
 * DESIGN: one TLS connection per process, opened by cuInit. Any thread may
 * call, and threads do not wait on each other's calls: a request goes out whole
 * under the connection's send lock, and its answer is read by whichever waiting
 * thread holds the read token, often the caller itself (THREADS below). Calls CUDA defines as
 * asynchronous (launches, async copies and memsets, event records, stream
 * waits) are sent without waiting; the worker reports their errors in the
 * next reply. Device and function attributes come from snapshots the worker
 * sends (at Hello and with each module) and never cross the network again.
 * Nothing is printed unless GPUPOOL_LOG is set: stdout and stderr belong to
 * the user's program.
 *
 * THREADS. The interposer runs on the program's threads, plus three of its
 * own: the reader (client.c, started by cuInit), which reads the pool's frames
 * when no call does (a host function's HOST_CALL, the answer to a copy nobody
 * waits for, anything that comes unasked while no call is made), and when the
 * program is idle sleeps in poll(2) on the socket and an eventfd; the flusher
 * (client.c), which sends calls batched without waiting at most 50 us after
 * the first of them; and the host-function thread (client.c, started on the
 * first HOST_CALL), which runs the program's host functions and stream
 * callbacks in the order the pool asks for them, with no lock of ours held.
 * None takes a signal, but for SIGSEGV and SIGBUS in the reader and the
 * host-function thread, which write to the program's memory and run its code.
 * Any thread may take our SIGSEGV handler (managed.c) when it writes a
 * write-protected page of managed memory: the handler takes no lock; it finds
 * the page with acquire loads of the slots' base (published with release after
 * the rest of the slot is written), counts itself in the slot's busy counter and
 * loads base again (slot_drop clears base, waits for busy to be 0, frees the
 * dirty flags, and only then are the pages unmapped: a write racing a free
 * faults into no slot and ends the process), makes the page writable with
 * mprotect, and stores atomic flags (the page's dirty flag, any_dirty), all
 * lock-free and async-signal-safe; a fault not its own goes to the handler that
 * was installed before. The reader puts bulk for managed memory there the same
 * lock-free way (gp__managed_write: the handler's steps, then memcpy, which may
 * fault into the handler), never with recv() straight into it, since a push
 * (under managed_lock, which a puller holds while the reader delivers its
 * answer, so the reader must not take it) may protect those pages meanwhile. One thread at a time reads the connection, the one that
 * holds the read token (`reading`, under gp__client.lock): a thread that waits
 * for an answer takes it when it is free and reads until its answer has come,
 * delivering the others' on the way; otherwise it sleeps on its own condition
 * variable (marked `sleeping`) until its answer comes or the token is passed
 * to it. The token is only passed to a sleeping call (or to the reader, when
 * frames may come unasked): one still sending finds it down when it comes to
 * wait. Either way it holds no lock of ours while it waits, so other threads'
 * calls go on meanwhile. Once the connection is lost (transport_failed, on
 * any thread: a failed send, read or flush) every waiting call is completed
 * with the failure, by that thread when the token is down, else by the
 * token's holder as it puts it down (its read fails on the socket
 * transport_failed shut down), never while the holder may still write into a
 * waiter's buffer; so no call waits on after the session is gone. The locks,
 * outermost first:
 *
 *   managed_lock     managed.c      the managed allocations (slots, their dirty
 *                                   flags' clearing, advice), a push or pull under
 *                                   way; held across the calls that make, push and
 *                                   pull them; taken with no other lock of ours held
 *                                   but primary_lock (a last primary release or a
 *                                   reset forgets the context's managed memory)
 *   primary_lock     api_context.c  each primary context's refs, remote and
 *                                   flags, so that one retain creates it and
 *                                   the last release destroys it; held across
 *                                   the call that does it
 *                                   (and across the NVML shim's cuMemGetInfo
 *                                   through it, gp__ctx_mem_info)
 *   load_lock        api_module.c   a library's lazy load (loaded, load_result,
 *                                   image); held across the upload
 *   the send lock    src/conn.c     the connection's writers: one request (and
 *                                   its bulk) goes out whole
 *   gp__client.lock  client.c       the rest of gp__client: the waiting calls,
 *                                   request ids, the kept deferred error, cuInit
 *   describe_lock    api_module.c   a function's first description; held across
 *                                   the call that asks for it
 *   host_lock        client.c       the host functions waiting to run, and the
 *                                   ones this process handed over
 *   flush_lock       client.c       whether the flusher has something to send
 *   gmem_lock        api_graph.c    graph memory's ranges and their graphs (the
 *                                   registry lock is taken inside it)
 *   the io lock      src/conn.c     the SSL object, around one read or write
 *                                   only, never while waiting for the socket
 *   registry lock    registry.c     (a rwlock) the ranges and reservations
 *   vmm_lock         api_vmm.c      the mappings and allocation handles it knows (a leaf)
 *   cls_lock         src/cuda_cls.c cudart's context-local storage
 *
 * primary_lock and load_lock are never held together; either may be held
 * while taking those below. A caller takes the send lock, then gp__client.lock
 * to register its wait, releases both once sent, and waits (or reads). Whoever
 * holds the read token takes gp__client.lock, host_lock (for HOST_CALL) and
 * stdout's lock (for OUTPUT), one at a time (and the io lock inside reads), and
 * no lock while it waits for the socket; the idle reader thread polls the
 * socket with no lock held and reads only after taking the token under
 * gp__client.lock. gp__host_fn_allow takes
 * gp__client.lock after host_lock is dropped, never inside it. gp__client.lock,
 * host_lock, flush_lock (taken under the send lock), the registry lock and
 * cls_lock are leaves: nothing else of ours is taken while one is held. A CLS destructor (cudart's) runs after cls_lock
 * is dropped, but with primary_lock still held when a primary release or reset
 * runs it, so it must not call the primary-context entry points.
 *
 * Read without a lock:
 *   - gp__client.init_tried, an atomic that cuInit stores with release once
 *     ready, init_result and the device snapshot (ndev, dev, primary,
 *     driver_version, session_id) are written; gp__ready() loads it with
 *     acquire, after which those fields are final and read bare (the
 *     primary array is; its entries' refs, remote and flags are primary_lock's);
 *   - gp__client.lost, an atomic flag, never cleared; it carries no data, and
 *     a call checks it again under gp__client.lock before it registers;
 *     whoever sets it then completes the waiters under that lock (above), so
 *     a call registered before it was set is completed, one after sees it;
 *   - a waiting call's buffer for bulk answers: the token's holder writes it
 *     while the call is registered and its owner is waiting (or is the holder);
 *   - the connection's fd, which the idle reader thread polls, and the
 *     reader's eventfd: both made before the reader starts, never changed
 *     (a forked child closes the fd, with no reader of its own);
 *   - each thread's context stack and capture mode (thread-local);
 *   - managed.c's nlive, any_dirty and pushing (atomics: whether a push or pull has
 *     anything to do; a caller that sees a push under way waits for managed_lock);
 *   - object ids (registry.c, an atomic counter) and the exported hooks'
 *     host vtable (src/exptables.c, an atomic pointer);
 *   - handles the program passes in: a handle is the program's to share, and
 *     CUDA makes using one while another thread destroys it undefined. So
 *     the calls that use a context read its remote id bare; a primary
 *     context's changes only at its first retain and last release.
 * After fork the child keeps no session (after_fork_child): it has neither of
 * our threads, and its lock is made anew, since another thread may have held
 * it when the parent forked.
 */
#ifndef GP_INTERPOSER_H
#define GP_INTERPOSER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "bulk.h"
#include "calls.h"
#include "codec.h"
#include "conn.h"
#include "resolve.h"
#include "cuda_table.h"

/* Handle kinds carry a magic so a wrong or stale handle is refused, not followed. */
#define GP_MAGIC_CTX 0x47504358u     /* GPCX */
#define GP_MAGIC_MODULE 0x47504d44u  /* GPMD */
#define GP_MAGIC_LIBRARY 0x47504c42u /* GPLB */
#define GP_MAGIC_FUNC 0x47504655u    /* GPFU */
#define GP_MAGIC_STREAM 0x47505354u  /* GPST */
#define GP_MAGIC_EVENT 0x47504556u   /* GPEV */
#define GP_MAGIC_GRAPH 0x47504752u   /* GPGR */
#define GP_MAGIC_GNODE 0x47504e44u   /* GPND */
#define GP_MAGIC_GEXEC 0x47505845u   /* GPXE */
#define GP_MAGIC_POOL 0x4750504cu    /* GPPL */
#define GP_MAGIC_LINK 0x47504c4bu    /* GPLK */
#define GP_MAGIC_DEAD 0xdeadbeefu

/* Stream ids on the wire for the special handles (see wire.h). */
#define GP_STREAM_NULL 0
#define GP_STREAM_LEGACY_ID 1
#define GP_STREAM_PER_THREAD_ID 2

struct gp_ictx {
	uint32_t magic;
	int device;
	uint64_t remote; /* 0: a primary context not retained (yet, or any more) */
	bool primary;
	unsigned refs; /* primary: retains outstanding */
	unsigned flags;
	unsigned long long id;
	CUfunc_cache cache_config;
	/* Bumped whenever the pool's context (and every stream in it) goes: destroy, the last
	 * primary release, a primary reset. Threads' default streams are made per epoch. */
	_Atomic unsigned epoch;
	/* TOOLS_CONTEXT slot 51's objects for the legacy and the per-thread default stream
	 * (api_stream.c): only their addresses mean anything. */
	char default_stream_obj[2];
};

struct gp_ifunc {
	uint32_t magic;
	uint64_t remote;
	char *name;
	uint32_t nparams;
	uint32_t param_bytes;
	uint32_t *offset;
	uint32_t *size;
	int32_t attr[CU_FUNC_ATTRIBUTE_MAX];
	struct gp_imodule *module;
	/* The layout and attributes above are known: asked for on first use (FUNC_DESCRIBE),
	 * set once with release under describe_lock (api_module.c). */
	_Atomic bool described;
};

/* A module (bound to a context) or a library (context-independent, loaded on first use). */
struct gp_imodule {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx; /* modules only */
	const void *image;   /* libraries until loaded: the image to ship */
	size_t image_len;
	void *image_copy; /* owned copy when the caller did not promise to keep it */
	bool loaded;
	CUresult load_result; /* a failed lazy load keeps failing the same way */
	uint32_t nfuncs;
	struct gp_ifunc *funcs;
	/* A library's module in one context (cuLibraryGetModule): a view sharing the
	 * library's functions and remote handle, made once per context, never unloaded by
	 * itself. `views` lists a library's, under load_lock (api_module.c). */
	struct gp_imodule *lib;
	struct gp_imodule *views;
};

struct gp_istream {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx;
	unsigned flags;
	int priority;
	unsigned long long id;
};

struct gp_ievent {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx;
	unsigned flags;
	bool recorded;
};

/* A memory pool of the worker's (api_mempool.c). */
struct gp_ipool {
	uint32_t magic;
	uint64_t remote;
	int device;
	bool is_default; /* a device's default pool: not destroyed */
};

struct gp_idevice {
	char name[256];
	CUuuid uuid;
	uint64_t total_mem;
	int32_t attr[CU_DEVICE_ATTRIBUTE_MAX];
	bool attr_ok[CU_DEVICE_ATTRIBUTE_MAX];
};

struct gp_client {
	pthread_mutex_t lock;
	struct gp_conn *conn;
	/* Published by cuInit's release store of init_tried; read after an acquire load of it
	 * (gp__ready), they and the snapshot below never change again. */
	bool ready;	      /* cuInit succeeded */
	CUresult init_result; /* cuInit's sticky answer once tried */
	atomic_bool init_tried;
	atomic_bool lost; /* the connection broke: every call fails (transport_failed) */
	/* GOODBYE went at exit(): exit handlers that run after ours (cudart's unregistration,
	 * static destructors) get CUDA_ERROR_DEINITIALIZED, and send nothing after it. */
	atomic_bool said_goodbye;
	uint64_t next_id;
	uint64_t session_id;
	int driver_version; /* the pool's */
	int ndev;
	struct gp_idevice *dev;
	struct gp_ictx *primary; /* one per device, valid from cuInit on */
	/* The first failure of an asynchronous call the pool reported, kept until a
	 * synchronizing call can return it (client.c). */
	CUresult pending;
	struct waiter *waiting; /* calls waiting for their answers (client.c) */
	pthread_t reader;	/* reads every answer (client.c) */
};

extern struct gp_client gp__client;

/* client.c */
CUresult gp__connect(void);
/* GPUPOOL_COMPUTE: the percent of each GPU asked for (1-100), 0 when unset or not a share
 * (logged when warn). */
uint32_t gp__compute_asked(bool warn);
/* GPUPOOL_PRIORITY (docs/scheduling.md): true with 0-9 in *priority when it names one;
 * false (warned about when warn and it is set) otherwise. */
bool gp__priority_asked(bool warn, int32_t *priority);

/* discover.c */
/* Orders the candidates best first by their quotes (GPUPOOL_PLACEMENT); makes the TLS
 * context in *ctx if needed. 1: ordered by quotes, *queue_at the candidate to queue at
 * (the first whose quote says ending preemptible sessions lets the session in; else the
 * last); 0: left in the list's order (one candidate, or GPUPOOL_PLACEMENT=order); a
 * negative code for a bad setting (logged). */
int gp__discover_order(struct gp_endpoints *cands, SSL_CTX **ctx, uint32_t *seed, size_t *queue_at);
/* Drops a kept asynchronous error: the context it came from is gone (destroyed, reset). */
void gp__pending_clear(void);
/*
 * One call to the pool: Call message, its bulk (BULK_IN bytes to send, or where BULK_OUT
 * bytes land), outputs. With GP_F_NO_REPLY in flags (calls marked GP_C_ASYNC only) it
 * returns once the call is sent. keep, when set, receives the Reply of a successful call
 * (the caller frees it).
 */
CUresult gp__rpc(unsigned type, unsigned flags, const Gp__Call *call, const struct gp_bulk_ref *b,
		 uint64_t *out, size_t nout, Gp__Reply **keep);
/* A host function (and its argument) this process hands to the pool; HOST_CALL may ask
 * for no other. */
void gp__host_fn_allow(uint64_t fn, uint64_t data);
/* Waits until every call nobody waits for has been answered (before host memory goes). */
void gp__detached_drain(void);
/* Sends a call whose answer nobody waits for: BULK_OUT bytes land in b->dst when it comes,
 * and a failure is kept for the next synchronizing call (an asynchronous copy). */
CUresult gp__rpc_later(unsigned type, const Gp__Call *call, const struct gp_bulk_ref *b);
/* gp__rpc_<name>(flags, in, out) for each call of <gpupool/calls.h>; out may be NULL. */
#define GP__RPC_DECL(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)          \
	CUresult gp__rpc_##name(unsigned flags, const struct gp_in_##name *in, \
				struct gp_out_##name *out);
GP_CALL_MAP(GP__RPC_DECL)
#undef GP__RPC_DECL
/* Uploads a module (library false; ctx set) or a library image (ctx: the current context
 * or 0); fills mod from the reply. */
CUresult gp__image_load(bool library, uint64_t ctx, const void *image, size_t len,
			struct gp_imodule *mod);
/* Starts the thread that reads the pool's answers; the connection becomes concurrent. */
int gp__reader_start(struct gp_client *c);
/* Checks init state; returns CUDA_SUCCESS when calls may go out. */
CUresult gp__ready(void);

/* registry.c: what the client tracks locally. */
/* GP_MEM_VMM: a cuMemAddressReserve range (api_vmm.c knows what is mapped in it). */
enum gp_mem_kind { GP_MEM_DEVICE = 1, GP_MEM_HOST, GP_MEM_GLOBAL, GP_MEM_VMM };
struct gp_range {
	uintptr_t base;
	size_t size;
	enum gp_mem_kind kind;
	struct gp_ictx *ctx;
	unsigned flags; /* host allocations: CU_MEMHOSTALLOC_* */
	unsigned long long id;
	const void *owner; /* globals: the module or library they belong to; pooled: the pool */
};
/* A global whose address could not be reserved here (it shares one with host memory). */
#define GP_RANGE_UNSHADOWED 0x80000000u
/* A device range from a memory pool (cuMemAllocAsync). */
#define GP_RANGE_POOLED 0x40000000u
/* Managed memory (a device range) or mapped page-locked memory (a host one): managed.c. */
#define GP_RANGE_MANAGED 0x20000000u
/* The pool-side mirror of registered mapped memory (a device range; not freeable). */
#define GP_RANGE_MIRROR 0x10000000u
/* Host memory the program registered (cuMemHostRegister), not allocated here. */
#define GP_RANGE_REGISTERED 0x08000000u
/* Another session's memory opened through IPC (api_ipc.c): not freeable, not this one's. */
#define GP_RANGE_IPC 0x04000000u
/* Graph memory (an allocation node's range, fixed while its graph lives): api_graph.c. */
#define GP_RANGE_GRAPH 0x02000000u
/* Records a range. Device ranges are reserved in this process's address space first:
 * -EEXIST when host memory already sits there (the caller should take another). */
int gp__range_add(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
		  unsigned flags);
/* The same, for a range that belongs to an object (a pool allocation: its pool's proxy). */
int gp__range_add_owned(uintptr_t base, size_t size, enum gp_mem_kind kind, struct gp_ictx *ctx,
			unsigned flags, const void *owner);
/* Finds the range containing p; copies it out. */
bool gp__range_find(uintptr_t p, struct gp_range *out);
/* Removes the range starting at base; false if there is none of that kind. */
bool gp__range_remove(uintptr_t base, enum gp_mem_kind kind);
/* Forgets the device ranges (and mapped page-locked memory) of a context that was destroyed
 * or reset. */
void gp__range_forget_ctx(struct gp_ictx *ctx);
/* Records a module's global (owner: the module or library), or forgets all of one owner's. */
int gp__range_add_global(uintptr_t base, size_t size, struct gp_ictx *ctx, const void *owner);
void gp__range_forget_owner(const void *owner);
unsigned long long gp__next_object_id(void);

/* managed.c */
/* Allocates managed memory (host false: flags CU_MEM_ATTACH_*) or mapped page-locked
 * memory (host true: flags CU_MEM_ATTACH_GLOBAL, host_flags the CU_MEMHOSTALLOC_* ones) at
 * one address here and on the pool. */
CUresult gp__managed_alloc(struct gp_ictx *c, size_t bytes, unsigned flags, bool host,
			   unsigned host_flags, CUdeviceptr *out);
/* Frees a range made by gp__managed_alloc, here and on the pool. */
CUresult gp__managed_free(const struct gp_range *rg);
/* cuMemHostRegister with DEVICEMAP: the program's pages [p, p + n), mirrored on the pool at
 * *dptr (flags: the CU_MEMHOSTREGISTER_* ones); and its end. */
CUresult gp__managed_register(struct gp_ictx *c, void *p, size_t n, unsigned flags,
			      CUdeviceptr *dptr);
CUresult gp__managed_unregister(const struct gp_range *rg);
/* cuLibraryGetManaged of library m (loaded), made in context c: its block is mapped here. */
CUresult gp__managed_global(struct gp_ictx *c, const struct gp_imodule *m, const char *name,
			    CUdeviceptr *dptr, size_t *bytes);
/* The blocks of __managed__ variables of a module or library that goes. */
void gp__managed_forget_owner(const void *owner);
/* Everything managed.c holds of a context that was destroyed or reset. */
void gp__managed_forget_ctx(struct gp_ictx *c);
/* Unblocks SIGSEGV and SIGBUS in a thread of ours that writes to the program's memory or
 * runs its code: a write to a protected page must reach managed.c's handler (a blocked
 * fault ends the process). Other signals stay blocked there. */
void gp__managed_thread_faults(void);
/* The pool's address of host memory that is managed, mapped or registered mapped. */
bool gp__managed_device_ptr(const void *p, CUdeviceptr *d);
/* Sends the pages written here since the last push: before anything that may read device
 * memory. No lock of ours may be held. */
CUresult gp__managed_push(void);
/* Brings the pages the device changed: at a synchronization point that succeeded. */
CUresult gp__managed_pull(void);
/* Whether [p, p + n) overlaps managed, mapped or registered memory, whose pages may be
 * write-protected: bulk for it must not be read straight into it (recv() into a protected
 * page fails with EFAULT, it does not fault), but staged and put with gp__managed_write.
 * Lock-free (the reader's). */
bool gp__managed_holds(const void *p, size_t n);
/* memcpy into client memory that may hold protected managed pages: they are made writable
 * and dirty first, and the copy faults into the handler if a push protects one again
 * meanwhile. Lock-free, so the reader may call it while a push or pull waits for an
 * answer; the calling thread must take SIGSEGV (gp__managed_thread_faults). */
void gp__managed_write(void *dst, const void *src, size_t n);

/* api_vmm.c: what pointer queries say of an address in a reservation */
CUresult gp__vmm_pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr, bool lenient);
CUresult gp__vmm_address_range(CUdeviceptr ptr, CUdeviceptr *base, size_t *size);

/* api_context.c */
struct gp_ictx *gp__ctx_current(void);
/* The current context, or an error for the caller to return. */
CUresult gp__ctx_need(struct gp_ictx **out);
bool gp__ctx_valid(const struct gp_ictx *c);
/* The primary context handle of a device (CUDART_INTERFACE slot 2). */
CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev);
/* cuMemGetInfo of device dev through a context the session already holds there (the
 * retained primary, else this thread's current one); CUDA_ERROR_NOT_FOUND when none. */
CUresult gp__ctx_mem_info(int dev, uint64_t *free_bytes, uint64_t *total_bytes);

/* api_stream.c */
/* The wire id of a stream handle, checking it; per_thread maps NULL to the
 * per-thread default stream (the _ptsz entry points). */
CUresult gp__stream_id(CUstream s, bool per_thread, uint64_t *id);
CUresult gp__stream_sync(CUstream s, bool per_thread);
/* The current context and a stream's wire id: the start of every stream-ordered call. */
CUresult gp__ctx_stream(CUstream s, bool per_thread, struct gp_ictx **ctx, uint64_t *id);

/* api_graph.c */
/* True when the stream (a wire id) is capturing: the caller refuses a call the pool cannot
 * capture, and the capture ends invalidated, as CUDA ends one after an unsupported call. */
bool gp__capture_refuse(struct gp_ictx *c, uint64_t sid);
/*
 * A copy between this process's memory (host rows of width bytes, hpitch apart) and the
 * device: when the stream is capturing, it is captured as a fetch or push of the bytes at
 * every launch (*taken set, the result returned); otherwise *taken is false.
 */
CUresult gp__capture_copy(struct gp_ictx *c, uint64_t sid, CUdeviceptr dev, uint64_t dpitch,
			  void *host, uint64_t hpitch, uint64_t width, uint64_t height,
			  bool to_device, bool *taken);
/*
 * cuMemAllocAsync on a stream: when the stream is capturing, the pool's driver makes a graph
 * allocation node and its address is the captured graph's (*taken set, the result
 * returned); otherwise *taken is false.
 */
CUresult gp__capture_alloc(struct gp_ictx *c, uint64_t sid, uint64_t bytes, uint64_t pool,
			   CUdeviceptr *dptr, bool *taken);
/* After graph memory was freed outside a graph: addresses of destroyed graphs the pool no
 * longer counts as the session's are forgotten. */
void gp__graphmem_sweep(void);
/* Client memory a graph node moves, named to the worker only by its token. */
struct gp_cmem {
	uint8_t *addr;
	uint64_t width, height, pitch; /* host rows */
	bool to_device;
};
/* The memory of a token, if the worker's request (fetch: to the device) and size match. */
bool gp__cmem_get(uint64_t token, bool fetch, uint64_t nbytes, struct gp_cmem *out);

/* api_launch.c */
/* kernelParams or `extra` laid out as the kernel reads them (malloc'd into *buf); a launch
 * lays them out on its own stack instead (api_launch.c). */
CUresult gp__launch_pack(const struct gp_ifunc *f, void **params, void **extra, uint8_t **buf,
			 size_t *len);

/* api_module.c */
/* A launchable handle: a module function or a library kernel, loaded if lazy. */
CUresult gp__func_check(CUfunction f, struct gp_ifunc **out);
/* The same, with its parameter layout and attributes known (asked of the pool once). */
CUresult gp__func_described(CUfunction f, struct gp_ifunc **out);
/* Fills a function's layout and attributes from a load's or FUNC_DESCRIBE's entry. */
CUresult gp__func_fill(struct gp_ifunc *f, const Gp__Function *src);
/* An image file of this process's, read whole (one NUL past its *len bytes: PTX text is a
 * string); len may be NULL. */
CUresult gp__read_image_file(const char *fname, uint8_t **out, size_t *len);

/* Shared bodies of the legacy and per-thread entry points. */
CUresult gp__memcpy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, bool async,
			 bool pt);
CUresult gp__memcpy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, bool async, bool pt);
CUresult gp__memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool async,
			 bool pt);
CUresult gp__memcpy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool async,
			bool pt);
CUresult gp__memcpy_2d(const CUDA_MEMCPY2D *p, CUstream s, bool async, bool pt);
/* api_array.c: 3-D copies, 2-D copies with an array side, the 1-D array copies */
CUresult gp__memcpy_3d(const CUDA_MEMCPY3D *p, CUstream s, bool async, bool pt);
CUresult gp__memcpy_2d_array(const CUDA_MEMCPY2D *p, CUstream s, bool async, bool pt);
CUresult gp__memcpy_array_1d(CUmemorytype dt, void *dh, CUdeviceptr dd, CUarray da, size_t doff,
			     CUmemorytype st, const void *sh, CUdeviceptr sd, CUarray sa,
			     size_t soff, size_t n, CUstream s, bool async, bool pt);
CUresult gp__memset(CUdeviceptr dst, size_t pitch, unsigned value, unsigned esize, size_t width,
		    size_t height, CUstream s, bool async, bool pt);
CUresult gp__launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		    unsigned bz, unsigned shmem, CUstream s, void **params, void **extra, bool pt);
CUresult gp__event_record(CUevent e, CUstream s, bool pt);
CUresult gp__stream_wait_event(CUstream s, CUevent e, unsigned flags, bool pt);
CUresult gp__stream_query(CUstream s, bool pt);
CUresult gp__launch_host_func(CUstream s, CUhostFn fn, void *data, bool pt);
CUresult gp__launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra,
		       bool pt);
CUresult gp__mem_alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s,
			     bool pt);
CUresult gp__mem_free_async(CUdeviceptr dptr, CUstream s, bool pt);
/* cuLaunchCooperativeKernel: waits for the worker's answer (a grid too large is refused). */
CUresult gp__launch_coop(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			 unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
			 bool pt);
CUresult gp__stream_add_callback(CUstream s, CUstreamCallback cb, void *data, unsigned flags,
				 bool pt);

#endif
