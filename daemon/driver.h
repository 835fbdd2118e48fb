/* driver.h -- the libcuda a worker executes through, loaded with dlopen. */
#ifndef GP_DRIVER_H
#define GP_DRIVER_H

#include <cuda.h>

/*
 * Entry points the worker uses, by their exported (versioned) names.
 * X(name, required): a missing required one makes the load fail.
 */
#define GP_DRIVER_FUNCS(X)                                                                         \
	X(cuInit, 1)                                                                                \
	X(cuDriverGetVersion, 1)                                                                    \
	X(cuGetErrorName, 1)                                                                        \
	X(cuDeviceGetCount, 1)                                                                      \
	X(cuDeviceGet, 1)                                                                           \
	X(cuDeviceGetName, 1)                                                                       \
	X(cuDeviceTotalMem_v2, 1)                                                                   \
	X(cuDeviceGetAttribute, 1)                                                                  \
	X(cuDeviceGetUuid_v2, 1)                                                                    \
	X(cuCtxCreate_v4, 1)                                                                        \
	X(cuCtxDestroy_v2, 1)                                                                       \
	X(cuCtxSetCurrent, 1)                                                                       \
	X(cuCtxSynchronize, 1)                                                                      \
	X(cuMemAlloc_v2, 1)                                                                         \
	X(cuMemFree_v2, 1)                                                                          \
	X(cuMemGetInfo_v2, 1)                                                                       \
	X(cuMemcpyHtoD_v2, 1)                                                                       \
	X(cuMemcpyDtoH_v2, 1)                                                                       \
	X(cuModuleLoadData, 1)                                                                      \
	X(cuModuleUnload, 1)                                                                        \
	X(cuModuleGetFunctionCount, 1)                                                              \
	X(cuModuleEnumerateFunctions, 1)                                                            \
	X(cuFuncGetName, 1)                                                                         \
	X(cuFuncGetParamInfo, 1)                                                                    \
	X(cuLaunchKernel, 1)

struct gp_driver {
	void *dl;
	char path[512];
#define GP_DRV_MEMBER(name, req) __typeof__(&name) name;
	GP_DRIVER_FUNCS(GP_DRV_MEMBER)
#undef GP_DRV_MEMBER
};

/* dlopens path and resolves the table. Returns 0 or -1 with err set. */
int gp_driver_load(struct gp_driver *drv, const char *path, char *err, size_t errlen);
void gp_driver_unload(struct gp_driver *drv);
/* "CUDA_ERROR_OUT_OF_MEMORY" for any CUresult, without trusting the driver. */
const char *gp_driver_err_name(const struct gp_driver *drv, CUresult r);

#endif
