/* driver.h -- the libcuda a worker executes through, loaded with dlopen. */
#ifndef GP_DRIVER_H
#define GP_DRIVER_H

#include <cuda.h>

/*
 * Entry points the worker uses, by their exported (versioned) names.
 * X(name, required): a missing required one makes the load fail.
 */
#define GP_DRIVER_FUNCS(X)                                                         \
	X(cuInit, 1)                                                               \
	X(cuDriverGetVersion, 1)                                                   \
	X(cuGetErrorName, 1)                                                       \
	X(cuDeviceGetCount, 1)                                                     \
	X(cuDeviceGet, 1)                                                          \
	X(cuDeviceGetName, 1)                                                      \
	X(cuDeviceTotalMem_v2, 1)                                                  \
	X(cuDeviceGetAttribute, 1)                                                 \
	X(cuDeviceGetUuid_v2, 1)                                                   \
	X(cuCtxCreate_v4, 1)                                                       \
	X(cuCtxDestroy_v2, 1)                                                      \
	X(cuCtxSetCurrent, 1)                                                      \
	X(cuCtxSynchronize, 1)                                                     \
	X(cuMemAlloc_v2, 1)                                                        \
	X(cuMemFree_v2, 1)                                                         \
	X(cuMemGetInfo_v2, 1)                                                      \
	X(cuMemcpyHtoD_v2, 1)                                                      \
	X(cuMemcpyDtoH_v2, 1)                                                      \
	X(cuModuleLoadData, 1)                                                     \
	X(cuModuleUnload, 1)                                                       \
	X(cuModuleGetFunctionCount, 1)                                             \
	X(cuModuleEnumerateFunctions, 1)                                           \
	X(cuFuncGetName, 1)                                                        \
	X(cuFuncGetParamInfo, 1)                                                   \
	X(cuLaunchKernel, 1)                                                       \
	/* Optional: a driver without one answers that call with NOT_SUPPORTED. */ \
	X(cuDevicePrimaryCtxRetain, 0)                                             \
	X(cuGetExportTable, 0)                                                     \
	X(cuLaunchKernelEx, 0)                                                     \
	X(cuMemAllocManaged, 0)                                                    \
	X(cuLibraryGetManaged, 0)                                                  \
	X(cuMemGetAddressRange_v2, 0)                                              \
	X(cuTensorMapEncodeTiled, 0)                                               \
	X(cuTensorMapEncodeIm2col, 0)                                              \
	X(cuDevicePrimaryCtxRelease_v2, 0)                                         \
	X(cuDevicePrimaryCtxReset_v2, 0)                                           \
	X(cuDevicePrimaryCtxSetFlags_v2, 0)                                        \
	X(cuCtxGetLimit, 0)                                                        \
	X(cuCtxSetLimit, 0)                                                        \
	X(cuCtxGetStreamPriorityRange, 0)                                          \
	X(cuMemAllocPitch_v2, 0)                                                   \
	X(cuMemcpyHtoDAsync_v2, 0)                                                 \
	X(cuMemcpyDtoHAsync_v2, 0)                                                 \
	X(cuMemcpyDtoD_v2, 0)                                                      \
	X(cuMemcpyDtoDAsync_v2, 0)                                                 \
	X(cuMemsetD8_v2, 0)                                                        \
	X(cuMemsetD16_v2, 0)                                                       \
	X(cuMemsetD32_v2, 0)                                                       \
	X(cuMemsetD8Async, 0)                                                      \
	X(cuMemsetD16Async, 0)                                                     \
	X(cuMemsetD32Async, 0)                                                     \
	X(cuMemsetD2D8_v2, 0)                                                      \
	X(cuMemsetD2D16_v2, 0)                                                     \
	X(cuMemsetD2D32_v2, 0)                                                     \
	X(cuMemsetD2D8Async, 0)                                                    \
	X(cuMemsetD2D16Async, 0)                                                   \
	X(cuMemsetD2D32Async, 0)                                                   \
	X(cuModuleGetGlobal_v2, 0)                                                 \
	X(cuLibraryLoadData, 0)                                                    \
	X(cuLinkCreate_v2, 0)                                                      \
	X(cuLinkAddData_v2, 0)                                                     \
	X(cuLinkComplete, 0)                                                       \
	X(cuLinkDestroy, 0)                                                        \
	X(cuLibraryUnload, 0)                                                      \
	X(cuLibraryGetKernelCount, 0)                                              \
	X(cuLibraryEnumerateKernels, 0)                                            \
	X(cuLibraryGetGlobal, 0)                                                   \
	X(cuLibraryGetModule, 0)                                                   \
	X(cuKernelGetName, 0)                                                      \
	X(cuKernelGetParamInfo, 0)                                                 \
	X(cuKernelGetAttribute, 0)                                                 \
	X(cuKernelSetAttribute, 0)                                                 \
	X(cuFuncGetAttribute, 0)                                                   \
	X(cuFuncSetAttribute, 0)                                                   \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 0)                 \
	X(cuStreamCreateWithPriority, 0)                                           \
	X(cuStreamDestroy_v2, 0)                                                   \
	X(cuStreamSynchronize, 0)                                                  \
	X(cuStreamQuery, 0)                                                        \
	X(cuStreamWaitEvent, 0)                                                    \
	X(cuStreamAddCallback, 0)                                                  \
	X(cuMemHostAlloc, 0)                                                       \
	X(cuMemFreeHost, 0)                                                        \
	X(cuEventCreate, 0)                                                        \
	X(cuEventDestroy_v2, 0)                                                    \
	X(cuEventRecord, 0)                                                        \
	X(cuEventSynchronize, 0)                                                   \
	X(cuEventQuery, 0)                                                         \
	X(cuEventElapsedTime_v2, 0)                                                \
	X(cuLaunchHostFunc, 0)                                                     \
	X(cuMemcpy2DAsync_v2, 0)                                                   \
	X(cuStreamBeginCapture_v2, 0)                                              \
	X(cuStreamEndCapture, 0)                                                   \
	X(cuStreamGetCaptureInfo_v3, 0)                                            \
	X(cuGraphCreate, 0)                                                        \
	X(cuGraphDestroy, 0)                                                       \
	X(cuGraphClone, 0)                                                         \
	X(cuGraphGetNodes, 0)                                                      \
	X(cuGraphGetRootNodes, 0)                                                  \
	X(cuGraphAddKernelNode_v2, 0)                                              \
	X(cuGraphKernelNodeSetParams_v2, 0)                                        \
	X(cuGraphExecKernelNodeSetParams_v2, 0)                                    \
	X(cuGraphAddMemsetNode, 0)                                                 \
	X(cuGraphAddMemcpyNode, 0)                                                 \
	X(cuGraphAddHostNode, 0)                                                   \
	X(cuGraphAddEmptyNode, 0)                                                  \
	X(cuGraphAddEventRecordNode, 0)                                            \
	X(cuGraphAddEventWaitNode, 0)                                              \
	X(cuGraphAddChildGraphNode, 0)                                             \
	X(cuGraphAddDependencies_v2, 0)                                            \
	X(cuGraphRemoveDependencies_v2, 0)                                         \
	X(cuGraphInstantiateWithFlags, 0)                                          \
	X(cuGraphExecDestroy, 0)                                                   \
	X(cuGraphLaunch, 0)                                                        \
	X(cuGraphUpload, 0)                                                        \
	X(cuGraphExecUpdate_v2, 0)                                                 \
	X(cuGraphMemsetNodeSetParams, 0)                                           \
	X(cuGraphExecMemsetNodeSetParams, 0)                                       \
	X(cuGraphMemcpyNodeSetParams, 0)                                           \
	X(cuGraphExecMemcpyNodeSetParams, 0)                                       \
	X(cuGraphHostNodeSetParams, 0)                                             \
	X(cuGraphExecHostNodeSetParams, 0)                                         \
	X(cuGraphEventRecordNodeSetEvent, 0)                                       \
	X(cuGraphEventWaitNodeSetEvent, 0)                                         \
	X(cuGraphExecEventRecordNodeSetEvent, 0)                                   \
	X(cuGraphExecEventWaitNodeSetEvent, 0)                                     \
	X(cuGraphExecChildGraphNodeSetParams, 0)                                   \
	X(cuGraphGetEdges_v2, 0)                                                   \
	X(cuGraphNodeGetDependencies_v2, 0)                                        \
	X(cuGraphNodeGetDependentNodes_v2, 0)                                      \
	X(cuGraphDestroyNode, 0)                                                   \
	X(cuGraphNodeSetEnabled, 0)                                                \
	X(cuGraphNodeGetEnabled, 0)                                                \
	X(cuGraphNodeFindInClone, 0)                                               \
	X(cuGraphHostNodeGetParams, 0)                                             \
	X(cuGraphNodeGetType, 0)                                                   \
	X(cuGraphAddMemAllocNode, 0)                                               \
	X(cuGraphAddMemFreeNode, 0)                                                \
	X(cuGraphMemAllocNodeGetParams, 0)                                         \
	X(cuGraphMemFreeNodeGetParams, 0)                                          \
	X(cuDeviceGetGraphMemAttribute, 0)                                         \
	X(cuDeviceSetGraphMemAttribute, 0)                                         \
	X(cuDeviceGraphMemTrim, 0)                                                 \
	X(cuGraphConditionalHandleCreate, 0)                                       \
	X(cuGraphAddNode_v2, 0)                                                    \
	X(cuStreamBeginCaptureToGraph, 0)                                          \
	X(cuMemGetAllocationGranularity, 0)                                        \
	X(cuMemCreate, 0)                                                          \
	X(cuMemRelease, 0)                                                         \
	X(cuMemGetAllocationPropertiesFromHandle, 0)                               \
	X(cuMemRetainAllocationHandle, 0)                                          \
	X(cuMemAddressReserve, 0)                                                  \
	X(cuMemAddressFree, 0)                                                     \
	X(cuMemMap, 0)                                                             \
	X(cuMemUnmap, 0)                                                           \
	X(cuMemSetAccess, 0)                                                       \
	X(cuMemGetAccess, 0)                                                       \
	X(cuMemAllocFromPoolAsync, 0)                                              \
	X(cuMemFreeAsync, 0)                                                       \
	X(cuMemPoolCreate, 0)                                                      \
	X(cuMemPoolDestroy, 0)                                                     \
	X(cuMemPoolSetAttribute, 0)                                                \
	X(cuMemPoolGetAttribute, 0)                                                \
	X(cuMemPoolTrimTo, 0)                                                      \
	X(cuMemPoolSetAccess, 0)                                                   \
	X(cuMemPoolGetAccess, 0)                                                   \
	X(cuDeviceGetDefaultMemPool, 0)                                            \
	X(cuDeviceSetMemPool, 0)                                                   \
	X(cuArrayCreate_v2, 0)                                                     \
	X(cuArray3DCreate_v2, 0)                                                   \
	X(cuArrayDestroy, 0)                                                       \
	X(cuArrayGetDescriptor_v2, 0)                                              \
	X(cuArray3DGetDescriptor_v2, 0)                                            \
	X(cuMemcpy3D_v2, 0)                                                        \
	X(cuMemcpy3DAsync_v2, 0)                                                   \
	X(cuMemcpyHtoA_v2, 0)                                                      \
	X(cuMemcpyAtoH_v2, 0)                                                      \
	X(cuMemcpyHtoAAsync_v2, 0)                                                 \
	X(cuMemcpyAtoHAsync_v2, 0)                                                 \
	X(cuMemcpyAtoD_v2, 0)                                                      \
	X(cuMemcpyDtoA_v2, 0)                                                      \
	X(cuMemcpyAtoA_v2, 0)                                                      \
	X(cuTexObjectCreate, 0)                                                    \
	X(cuTexObjectDestroy, 0)                                                   \
	X(cuTexObjectGetResourceDesc, 0)                                           \
	X(cuTexObjectGetTextureDesc, 0)                                            \
	X(cuTexObjectGetResourceViewDesc, 0)                                       \
	X(cuSurfObjectCreate, 0)                                                   \
	X(cuSurfObjectDestroy, 0)                                                  \
	X(cuSurfObjectGetResourceDesc, 0)                                          \
	X(cuMipmappedArrayCreate, 0)                                               \
	X(cuMipmappedArrayGetLevel, 0)                                             \
	X(cuMipmappedArrayDestroy, 0)                                              \
	X(cuArrayGetMemoryRequirements, 0)

/* Calls an optional entry point, or answers NOT_SUPPORTED when the driver lacks it. */
#define GP_DRV(w, name, ...) ((w)->drv.name ? (w)->drv.name(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED)

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
