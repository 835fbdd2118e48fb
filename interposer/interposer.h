/* interposer.h -- gpupool's libcuda.so.1 for the client side.
 *
 * client.c       the session: configuration, connect, Hello, the call path,
 *                transport failures turned into CUresult (one place)
 * api_device.c   cuInit, versions, devices (answered from the snapshot)
 * api_context.c  contexts and the per-thread current-context stack
 * api_memory.c   allocations, copies, memory info
 * api_module.c   modules and functions
 * api_launch.c   kernel launches
 * api_abi.c      cuGetProcAddress, cuGetExportTable (served locally, src/exptables.c)
 *
 * DESIGN: one TLS connection per process, opened by cuInit. Any thread may
 * call; a mutex serialises the connection, so a request and its reply are
 * never interleaved with another thread's. Calls CUDA defines as
 * asynchronous (launches) are queued without waiting; the worker reports
 * their errors in the next reply. Device attributes come from the snapshot
 * in HelloReply and never cross the network. Nothing is printed unless
 * GPUPOOL_LOG is set: stdout and stderr belong to the user's program.
 */
#ifndef GP_INTERPOSER_H
#define GP_INTERPOSER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#include "codec.h"
#include "conn.h"
#include "cuda_table.h"

/* Handle kinds carry a magic so a wrong or stale handle is refused, not followed. */
#define GP_MAGIC_CTX 0x47504358u    /* GPCX */
#define GP_MAGIC_MODULE 0x47504d44u /* GPMD */
#define GP_MAGIC_FUNC 0x47504655u   /* GPFU */
#define GP_MAGIC_DEAD 0xdeadbeefu

struct gp_ictx {
	uint32_t magic;
	int device;
	uint64_t remote;
};

struct gp_ifunc {
	uint32_t magic;
	uint64_t remote;
	char *name;
	uint32_t nparams;
	uint32_t param_bytes;
	uint32_t *offset;
	uint32_t *size;
	struct gp_imodule *module;
};

struct gp_imodule {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx;
	uint32_t nfuncs;
	struct gp_ifunc *funcs;
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
	bool ready;         /* cuInit succeeded */
	CUresult init_result; /* cuInit's sticky answer once tried */
	bool init_tried;
	bool lost;          /* the connection broke: every call fails */
	uint64_t next_id;
	uint64_t session_id;
	int driver_version; /* the pool's */
	int ndev;
	struct gp_idevice *dev;
};

extern struct gp_client gp__client;

/* client.c */
CUresult gp__connect(void);
/* Sends a Call and waits for its Reply; copies up to nout outputs. */
CUresult gp__call(unsigned type, const uint64_t *args, size_t nargs, uint64_t *out, size_t nout);
/* Queues a call without waiting; its error, if any, comes with a later reply. */
CUresult gp__call_async(unsigned type, const ProtobufCMessage *msg);
/* Bulk copies. */
CUresult gp__copy_to_remote(uint64_t ctx, CUdeviceptr dst, const void *src, size_t len);
CUresult gp__copy_from_remote(uint64_t ctx, void *dst, CUdeviceptr src, size_t len);
/* Uploads a module image; fills mod from ModuleLoadReply. */
CUresult gp__module_load(struct gp_ictx *ctx, const void *image, size_t len,
			 struct gp_imodule *mod);
/* Checks init state; returns CUDA_SUCCESS when calls may go out. */
CUresult gp__ready(void);

/* api_context.c */
struct gp_ictx *gp__ctx_current(void);
/* The current context, or an error for the caller to return. */
CUresult gp__ctx_need(struct gp_ictx **out);

#endif
