/* cuda_host.h -- what the shared ABI code asks of the libcuda.so.1 it is linked into. */
#ifndef GP_CUDA_HOST_H
#define GP_CUDA_HOST_H

#include <cuda.h>

/*
 * The library-specific facts behind the export tables and the integrity check, passed to
 * gp__exptables_init() before any CUDA call can arrive (a constructor: cudart asks for export
 * tables before cuInit). Every member is required. The signatures are the driver API's own;
 * the values must be exactly what the library's entry points report, because cudart compares
 * (the integrity check hashes them). Our two libcuda.so.1 builds do not fill one each:
 * cuda_entry.c holds the one table, made of their own entry points and gp__primary_ctx.
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
};

/* CUDART_INTERFACE slot 2, which each library that compiles in cuda_entry.c defines: the
 * primary context handle of dev, not retained (host->primary_ctx there). */
CUresult gp__primary_ctx(CUcontext *pctx, CUdevice dev);

#endif
