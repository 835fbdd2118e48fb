/* cuda_host.h -- what the shared ABI code asks of the libcuda.so.1 it is linked into. */
#ifndef GP_CUDA_HOST_H
#define GP_CUDA_HOST_H

#include <cuda.h>

struct gp__nvml_source;
struct gp__softgpu_ipc;

/*
 * The library-specific facts behind the export tables and the integrity check, passed to
 * gp__exptables_init() before any CUDA call can arrive (a constructor: cudart asks for export
 * tables before cuInit). Every member is required except those marked optional (NULL: the
 * slots that need them answer CUDA_ERROR_NOT_SUPPORTED). The signatures are the driver API's
 * own; the values must be exactly what the library's entry points report, because cudart
 * compares (the integrity check hashes them). Our two libcuda.so.1 builds do not fill one
 * each: cuda_entry.c holds the one table, made of their own entry points, gp__primary_ctx and
 * (where the library defines them) gp__stream_object and gp__stream_object_id.
 *
 * Callbacks may run on any thread, concurrently.
 */
struct gp__cuda_host {
	/* CUDART_INTERFACE slot 2: the primary context handle of dev (the handle that
	 * cuDevicePrimaryCtxRetain will return). cudart calls it once per device at init and
	 * retains the context itself later, so this need not retain. */
	CUresult (*primary_ctx)(CUcontext *pctx, CUdevice dev);
	/* cuCtxGetCurrent: the calling thread's current context, NULL when there is none.
	 * Context-local storage calls with ctx == NULL mean this context. */
	CUresult (*ctx_get_current)(CUcontext *pctx);
	/* cuDriverGetVersion: the value hashed by the integrity check. */
	CUresult (*driver_get_version)(int *driverVersion);
	/* cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid_v2 and cuDeviceGetAttribute (asked for
	 * CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, _PCI_BUS_ID, _PCI_DEVICE_ID): the device list the
	 * integrity check hashes, in ordinal order. */
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *device, int ordinal);
	CUresult (*device_get_uuid)(CUuuid *uuid, CUdevice dev);
	CUresult (*device_get_attribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
	/* Optional. TOOLS_CONTEXT slot 4: cuCtxGetId, the context's id, unique for the life of
	 * the process (cuBLASLt keys its kernel registry with it). */
	CUresult (*ctx_get_id)(CUcontext ctx, unsigned long long *id);
	/* Optional. TOOLS_CONTEXT slot 51: the library's own object for stream h of context
	 * ctx (NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD resolved as a launch on it
	 * would be: per_thread selects the per-thread default stream for NULL), valid while
	 * the stream lives; CUDA_ERROR_INVALID_HANDLE for a stream that is not one. */
	CUresult (*stream_object)(CUcontext ctx, CUstream h, int per_thread, void **obj);
	/* Optional. TOOLS_CONTEXT slot 39: the id (cuStreamGetId's) of a stream object that
	 * stream_object gave for ctx; CUDA_ERROR_INVALID_HANDLE for anything else. */
	CUresult (*stream_object_id)(CUcontext ctx, void *obj, unsigned long long *id);
	/* Optional, both or neither. ToolsModule slot 7 (exptables.h): cuModuleGetFunctionCount
	 * and cuModuleEnumerateFunctions, a module's kernels as the library's own handles. */
	CUresult (*module_get_function_count)(unsigned int *count, CUmodule mod);
	CUresult (*module_enumerate_functions)(CUfunction *fns, unsigned int n, CUmodule mod);
	/* Optional. gpupool's own table for the NVML library beside this one (nvml_source.h). */
	const struct gp__nvml_source *nvml_source;
	/* Optional. softgpu's IPC descriptor hand-over for the pool (softgpu_ipc.h). */
	const struct gp__softgpu_ipc *softgpu_ipc;
};

/* CUDART_INTERFACE slot 2, which each library that compiles in cuda_entry.c defines: the
 * primary context handle of dev, not retained (host->primary_ctx there). */
CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev);
/* stream_object and stream_object_id, where the library defines them (weak: NULL if not). */
CUresult gp__stream_object(CUcontext ctx, CUstream h, int per_thread, void **obj)
	__attribute__((weak));
CUresult gp__stream_object_id(CUcontext ctx, void *obj, unsigned long long *id)
	__attribute__((weak));
/* The NVML source table, where the library defines it (weak: NULL if not). */
extern const struct gp__nvml_source gp__nvml_source __attribute__((weak));
/* softgpu's IPC table, where the library defines it (weak: NULL if not). */
extern const struct gp__softgpu_ipc gp__softgpu_ipc __attribute__((weak));

#endif
