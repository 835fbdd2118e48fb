/* exptables.c -- the export tables cudart asks cuGetExportTable for, served in-process. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exptables.h"
#include "integrity.h"
#include "log.h"
#include "nvml_source.h"
#include "softgpu_ipc.h"

/*
 * DESIGN: the tables are constant arrays built at compile time; the only state is the host
 * callbacks (an atomic pointer, set once at library init), the CLS store (cuda_cls.c, its own
 * lock) and the two hook buffers, which cudart owns once handed out.
 */

static _Atomic(const struct gp__cuda_host *) host_ops;

int gp__exptables_init(const struct gp__cuda_host *host)
{
	if (!host || !host->primary_ctx || !host->ctx_get_current || !host->driver_get_version ||
	    !host->device_get_count || !host->device_get || !host->device_get_uuid ||
	    !host->device_get_attribute)
		return -EINVAL;
	atomic_store(&host_ops, host);
	return 0;
}

void gp__exptables_deinit(void)
{
	atomic_store(&host_ops, NULL);
	gp__cls_clear();
}

/* ---------------------------------------------------------------------------------------- */
/* Slots whose purpose is unknown */

static CUresult unknown_slot(const char *table, int slot)
{
	gp_log_debug("export table %s slot %d called: not supported", table, slot);
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define UNKNOWN(table, n)                       \
	static CUresult table##_slot##n(void)   \
	{                                       \
		return unknown_slot(#table, n); \
	}

UNKNOWN(CUDART_INTERFACE, 1)
UNKNOWN(CUDART_INTERFACE, 3)
UNKNOWN(CUDART_INTERFACE, 4)
UNKNOWN(CUDART_INTERFACE, 5)
UNKNOWN(CUDART_INTERFACE, 6)
UNKNOWN(CUDART_INTERFACE, 7)
UNKNOWN(CUDART_INTERFACE, 8)
UNKNOWN(CUDART_INTERFACE, 9)
UNKNOWN(CUDART_INTERFACE, 10)
UNKNOWN(CUDART_INTERFACE, 11)
UNKNOWN(CUDART_INTERFACE, 12)
UNKNOWN(TOOLS_RUNTIME_CALLBACK_HOOKS, 1)
UNKNOWN(TOOLS_RUNTIME_CALLBACK_HOOKS, 3)
UNKNOWN(TOOLS_RUNTIME_CALLBACK_HOOKS, 4)
UNKNOWN(TOOLS_RUNTIME_CALLBACK_HOOKS, 5)
UNKNOWN(TOOLS_TLS, 1)
UNKNOWN(TOOLS_TLS, 3)
UNKNOWN(CONTEXT_LOCAL_STORAGE, 3)
UNKNOWN(CONTEXT_CHECKS, 1)
UNKNOWN(INTEGRITY_CHECK, 2)
UNKNOWN(TOOLS_MODULE, 1)
UNKNOWN(TOOLS_MODULE, 2)
UNKNOWN(TOOLS_MODULE, 3)
UNKNOWN(TOOLS_MODULE, 4)
UNKNOWN(TOOLS_MODULE, 5)
UNKNOWN(TOOLS_MODULE, 6)

/* TOOLS_CONTEXT has 94 slots (CUDA 13.4's driver serves 95 entries with the size); all but two
 * are unknown. */
/* A hand-laid list: clang-format cannot lay it out stably. */
/* clang-format off */
#define TC_UNKNOWN_SLOTS(X) \
	X(1) X(2) X(3) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) \
	X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) \
	X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) \
	X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) X(50) X(52) \
	X(53) X(54) X(55) X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63) X(64) \
	X(65) X(66) X(67) X(68) X(69) X(70) X(71) X(72) X(73) X(74) X(75) X(76) \
	X(77) X(78) X(79) X(80) X(81) X(82) X(83) X(84) X(85) X(86) X(87) X(88) \
	X(89) X(90) X(91) X(92) X(93) X(94)
/* clang-format on */
#define TC_UNKNOWN(n) UNKNOWN(TOOLS_CONTEXT, n)
TC_UNKNOWN_SLOTS(TC_UNKNOWN)
#undef TC_UNKNOWN

/* ---------------------------------------------------------------------------------------- */
/* The known slots */

static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev);
static void hooks_buffer_2(void **buf, size_t *size);
static void hooks_buffer_6(void **buf, size_t *size);
static CUresult cls_put(CUcontext ctx, void *key, void *value, gp__cls_dtor dtor);
static CUresult cls_delete(CUcontext ctx, void *key);
static CUresult cls_get(void **value, CUcontext ctx, void *key);
static CUresult context_check(CUcontext ctx, uint32_t *r1, void **r2);
static uint32_t context_check_3(void);
static CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t out[2]);
static CUresult tools_tls_current_ctx(CUcontext *pctx);
static CUresult tools_ctx_id(CUcontext ctx, unsigned long long *id);
static CUresult tools_ctx_stream_object(CUcontext ctx, CUstream h, void **obj, int per_thread);
static CUresult tools_ctx_stream_id(CUcontext ctx, void *obj, unsigned long long *id);
static int tools_module_functions(CUcontext ctx, CUmodule mod, gp__module_fn_cb cb, void *user);

#define SIZE(nslots) ((const void *)(uintptr_t)((nslots) * sizeof(void *)))
#define FN(f) ((const void *)(f))

static const void *const cudart_interface[13] = {
	SIZE(13),
	FN(CUDART_INTERFACE_slot1),
	FN(cudart_primary_ctx),
	FN(CUDART_INTERFACE_slot3),
	FN(CUDART_INTERFACE_slot4),
	FN(CUDART_INTERFACE_slot5),
	FN(CUDART_INTERFACE_slot6),
	FN(CUDART_INTERFACE_slot7),
	FN(CUDART_INTERFACE_slot8),
	FN(CUDART_INTERFACE_slot9),
	FN(CUDART_INTERFACE_slot10),
	FN(CUDART_INTERFACE_slot11),
	FN(CUDART_INTERFACE_slot12),
};

static const void *const tools_runtime_callback_hooks[7] = {
	SIZE(7),
	FN(TOOLS_RUNTIME_CALLBACK_HOOKS_slot1),
	FN(hooks_buffer_2),
	FN(TOOLS_RUNTIME_CALLBACK_HOOKS_slot3),
	FN(TOOLS_RUNTIME_CALLBACK_HOOKS_slot4),
	FN(TOOLS_RUNTIME_CALLBACK_HOOKS_slot5),
	FN(hooks_buffer_6),
};

static const void *const tools_tls[4] = {
	SIZE(4),
	FN(TOOLS_TLS_slot1),
	FN(tools_tls_current_ctx),
	FN(TOOLS_TLS_slot3),
};

#define TC_SLOT(n) [n] = FN(TOOLS_CONTEXT_slot##n),
static const void *const tools_context[95] = {
	[0] = SIZE(95),
	TC_UNKNOWN_SLOTS(TC_SLOT)[4] = FN(tools_ctx_id),
	[39] = FN(tools_ctx_stream_id),
	[51] = FN(tools_ctx_stream_object),
};
#undef TC_SLOT

/* cuFFT requires a size above 0x37 bytes and calls only slot 7. */
static const void *const tools_module[8] = {
	SIZE(8),
	FN(TOOLS_MODULE_slot1),
	FN(TOOLS_MODULE_slot2),
	FN(TOOLS_MODULE_slot3),
	FN(TOOLS_MODULE_slot4),
	FN(TOOLS_MODULE_slot5),
	FN(TOOLS_MODULE_slot6),
	FN(tools_module_functions),
};

/* No size slot. The fourth entry is a guard: ZLUDA's catalog gives this table 4 entries. */
static const void *const context_local_storage[4] = {
	FN(cls_put),
	FN(cls_delete),
	FN(cls_get),
	FN(CONTEXT_LOCAL_STORAGE_slot3),
};

static const void *const context_checks[4] = {
	SIZE(4),
	FN(CONTEXT_CHECKS_slot1),
	FN(context_check),
	FN(context_check_3),
};

static const void *const integrity_table[3] = {
	SIZE(3),
	FN(integrity_check),
	FN(INTEGRITY_CHECK_slot2),
};

static const struct {
	const char *name;
	uint8_t id[16];
	const void *const *table;
} tables[] = {
	{"CUDART_INTERFACE",
	 {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
	  0xf9},
	 cudart_interface},
	{"TOOLS_RUNTIME_CALLBACK_HOOKS",
	 {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
	  0x66},
	 tools_runtime_callback_hooks},
	{"TOOLS_TLS",
	 {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
	  0xdc},
	 tools_tls},
	{"CONTEXT_LOCAL_STORAGE",
	 {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
	  0x93},
	 context_local_storage},
	{"CONTEXT_CHECKS",
	 {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
	  0x7e},
	 context_checks},
	{"INTEGRITY_CHECK",
	 {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
	  0xf2},
	 integrity_table},
	/* cuBLAS (dot, nrm2, the reductions) and cuFFT ask for it; NVIDIA's name for it is
	 * CU_ETID_ToolsContext (public reverse-engineering notes). */
	{"TOOLS_CONTEXT",
	 {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
	  0xf2},
	 tools_context},
	/* cuFFT asks for it; NVIDIA's name for it is CU_ETID_ToolsModule. */
	{"TOOLS_MODULE",
	 {0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99,
	  0x1e},
	 tools_module},
};

/* CUDART_INTERFACE slot 2: the primary context handle of a device. */
static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	return h->primary_ctx(pctx, dev);
}

/*
 * TOOLS_RUNTIME_CALLBACK_HOOKS slots 2 and 6: buffers through which a profiling tool would
 * ask cudart for callbacks; all zero means none is attached. The sizes are 1024 bytes and
 * 14 u32 (NOTES.md); the buffers are four times larger in case the size is an element count.
 */
static _Alignas(64) uint8_t hooks_buf2[4096];
static _Alignas(64) uint32_t hooks_buf6[4 * 14];

static void hooks_buffer_2(void **buf, size_t *size)
{
	if (buf)
		*buf = hooks_buf2;
	if (size)
		*size = 1024;
}

static void hooks_buffer_6(void **buf, size_t *size)
{
	if (buf)
		*buf = hooks_buf6;
	if (size)
		*size = 14 * sizeof(uint32_t);
}

/* ctx NULL means the calling thread's current context. */
static CUresult resolve_ctx(CUcontext *ctx)
{
	const struct gp__cuda_host *h;
	CUcontext cur = NULL;
	CUresult r;

	if (*ctx)
		return CUDA_SUCCESS;
	h = atomic_load(&host_ops);
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	r = h->ctx_get_current(&cur);
	if (r != CUDA_SUCCESS)
		return r;
	if (!cur)
		return CUDA_ERROR_INVALID_CONTEXT;
	*ctx = cur;
	return CUDA_SUCCESS;
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, gp__cls_dtor dtor)
{
	CUresult r = resolve_ctx(&ctx);

	return r != CUDA_SUCCESS ? r : gp__cls_put(ctx, key, value, dtor);
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	CUresult r = resolve_ctx(&ctx);

	return r != CUDA_SUCCESS ? r : gp__cls_delete(ctx, key);
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	CUresult r;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	r = resolve_ctx(&ctx);
	return r != CUDA_SUCCESS ? r : gp__cls_get(value, ctx, key);
}

/* CONTEXT_CHECKS slot 2: cudart (and cuBLAS) ask about a context; 0 is the answer that lets
 * them proceed. What a non-zero answer or r2 would mean is not known. */
static CUresult context_check(CUcontext ctx, uint32_t *r1, void **r2)
{
	if (!r1)
		return CUDA_ERROR_INVALID_VALUE;
	*r1 = 0;
	return CUDA_SUCCESS;
}

static uint32_t context_check_3(void)
{
	return 0;
}

static CUresult integrity_check(uint32_t version, uint64_t unix_seconds, uint64_t out[2])
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (gp__integrity_fixed(version, out))
		return CUDA_SUCCESS;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	return gp__integrity_check(h, cudart_interface, integrity_table, version, unix_seconds,
				   out);
}

/* TOOLS_TLS slot 2: the calling thread's current context (NULL when none). cuBLAS calls it
 * first and hands the context to the TOOLS_CONTEXT slots. */
static CUresult tools_tls_current_ctx(CUcontext *pctx)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	return h->ctx_get_current(pctx);
}

/* TOOLS_CONTEXT slot 4: (ctx, &id) -> the context's unique id, cuCtxGetId's (NULL: current). */
static CUresult tools_ctx_id(CUcontext ctx, unsigned long long *id)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);
	CUresult r;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!h->ctx_get_id)
		return unknown_slot("TOOLS_CONTEXT", 4);
	r = resolve_ctx(&ctx);
	return r != CUDA_SUCCESS ? r : h->ctx_get_id(ctx, id);
}

/*
 * TOOLS_CONTEXT slot 51: (ctx, stream handle, &object, per_thread) -> the driver's object for
 * that stream; cuBLAS passes per_thread = (stream == CU_STREAM_PER_THREAD). Slot 39:
 * (ctx, object, &key) -> a 64-bit key, which cuBLAS uses to find its per-stream workspace
 * (it pairs the key with the calling thread). We answer the stream's id, unique per stream
 * for the life of the process, so two streams never share a workspace.
 */
static CUresult tools_ctx_stream_object(CUcontext ctx, CUstream hs, void **obj, int per_thread)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);
	CUresult r;

	if (!obj)
		return CUDA_ERROR_INVALID_VALUE;
	*obj = NULL;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!h->stream_object)
		return unknown_slot("TOOLS_CONTEXT", 51);
	r = resolve_ctx(&ctx);
	return r != CUDA_SUCCESS ? r : h->stream_object(ctx, hs, per_thread, obj);
}

static CUresult tools_ctx_stream_id(CUcontext ctx, void *obj, unsigned long long *id)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);
	CUresult r;

	if (!obj || !id)
		return CUDA_ERROR_INVALID_VALUE;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!h->stream_object_id)
		return unknown_slot("TOOLS_CONTEXT", 39);
	r = resolve_ctx(&ctx);
	return r != CUDA_SUCCESS ? r : h->stream_object_id(ctx, obj, id);
}

/*
 * TOOLS_MODULE slot 7: (ctx, module, cb, user) hands each of the module's kernels, as the
 * CUfunction cuModuleEnumerateFunctions gives, to cb(user, fn), in that order, and returns 1
 * once it has: cuFFT, which calls it for a module whose kernel it does not name, takes 1 and
 * only 1 as success. Every failure is a CUresult other than 1 (CUDA_ERROR_INVALID_VALUE is 1,
 * so the arguments' errors are CUDA_ERROR_INVALID_HANDLE) and calls cb for nothing: a module
 * with no kernel is CUDA_ERROR_NOT_FOUND. ctx NULL means the current context; the module
 * handle alone names its functions, so ctx is not checked against it.
 */
static int not_one(CUresult r)
{
	return r == CUDA_ERROR_INVALID_VALUE ? CUDA_ERROR_INVALID_HANDLE : (int)r;
}

static int tools_module_functions(CUcontext ctx, CUmodule mod, gp__module_fn_cb cb, void *user)
{
	const struct gp__cuda_host *h = atomic_load(&host_ops);
	CUfunction *fns;
	unsigned int n = 0;
	CUresult r;

	if (!mod || !cb)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!h)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!h->module_get_function_count || !h->module_enumerate_functions)
		return unknown_slot("TOOLS_MODULE", 7);
	r = resolve_ctx(&ctx);
	if (r == CUDA_SUCCESS)
		r = h->module_get_function_count(&n, mod);
	if (r != CUDA_SUCCESS)
		return not_one(r);
	gp_log_debug("TOOLS_MODULE slot 7: module %p, %u function(s)", (void *)mod, n);
	if (n == 0)
		return CUDA_ERROR_NOT_FOUND;
	fns = malloc((size_t)n * sizeof(*fns));
	if (!fns)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = h->module_enumerate_functions(fns, n, mod);
	if (r == CUDA_SUCCESS)
		for (unsigned int i = 0; i < n; i++)
			cb(user, fns[i]);
	free(fns);
	return r == CUDA_SUCCESS ? 1 : not_one(r);
}

/* ---------------------------------------------------------------------------------------- */
/* cuGetExportTable */

void gp__uuid_format(const CUuuid *id, char out[GP_UUID_STRLEN])
{
	const unsigned char *b = (const unsigned char *)id->bytes;

	snprintf(out, GP_UUID_STRLEN,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
}

/* gpupool's own table (nvml_source.h), served only by a library that defines it. */
static bool nvml_source_id(const CUuuid *id)
{
	return memcmp(id->bytes, GP_NVML_SOURCE_ID_BYTES, sizeof(id->bytes)) == 0;
}

static int find_table(const CUuuid *id)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (memcmp(tables[i].id, id->bytes, sizeof(tables[i].id)) == 0)
			return (int)i;
	return -1;
}

const char *gp__exptable_name(const CUuuid *id)
{
	int i;

	if (!id)
		return NULL;
	i = find_table(id);
	return i < 0 ? NULL : tables[i].name;
}

CUresult gp__get_export_table(const void **table, const CUuuid *id)
{
	char s[GP_UUID_STRLEN];
	int i;

	if (!table)
		return CUDA_ERROR_INVALID_VALUE;
	*table = NULL;
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	i = find_table(id);
	if (i < 0 && memcmp(id->bytes, GP_SOFTGPU_IPC_ID_BYTES, sizeof(id->bytes)) == 0) {
		const struct gp__cuda_host *h = atomic_load(&host_ops);

		if (h && h->softgpu_ipc) {
			*table = h->softgpu_ipc;
			return CUDA_SUCCESS;
		}
	}
	if (i < 0 && nvml_source_id(id)) {
		const struct gp__cuda_host *h = atomic_load(&host_ops);

		if (h && h->nvml_source) {
			gp_log_debug("cuGetExportTable: gpupool's NVML source");
			*table = h->nvml_source;
			return CUDA_SUCCESS;
		}
	}
	if (i < 0) {
		/* Debug, not info: cudart probes an unknown id in every process. */
		if (gp_log_level() >= GP_LOG_DEBUG) {
			gp__uuid_format(id, s);
			gp_log_debug("cuGetExportTable %s: unknown table, CUDA_ERROR_NOT_FOUND", s);
		}
		return CUDA_ERROR_NOT_FOUND;
	}
	if (gp_log_level() >= GP_LOG_DEBUG) {
		gp__uuid_format(id, s);
		gp_log_debug("cuGetExportTable %s: %s", s, tables[i].name);
	}
	*table = tables[i].table;
	return CUDA_SUCCESS;
}
