/* api_ptds.c -- the per-thread-default-stream entry points (nvcc --default-stream per-thread,
 * or cuGetProcAddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).
 *
 * _ptsz functions take a stream and read NULL as the calling thread's default stream. The
 * worker serves all of a session's threads from one thread, so every client thread shares
 * its per-thread stream: ordering is at least as strict as CUDA's, never looser.
 * _ptds functions are synchronous; they complete before returning, as in CUDA. */
#include "interposer.h"

GP_CUDA_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
	return gp__memcpy_htod(dst, src, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_dtoh(dst, src, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_dtod(dst, src, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return gp__memcpy_any(dst, src, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n,
						  CUstream s)
{
	return gp__memcpy_htod(dst, src, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	return gp__memcpy_dtoh(dst, src, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
						  CUstream s)
{
	return gp__memcpy_dtod(dst, src, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return gp__memcpy_any(dst, src, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p)
{
	return gp__memcpy_2d(p, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p)
{
	return gp__memcpy_2d(p, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s)
{
	return gp__memcpy_2d(p, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p)
{
	return gp__memcpy_3d(p, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s)
{
	return gp__memcpy_3d(p, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoA_v2_ptds(CUarray dst, size_t off, const void *src, size_t n)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_HOST, src,
				   0, NULL, 0, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoH_v2_ptds(void *dst, CUarray src, size_t off, size_t n)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL,
				   0, src, off, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dst, size_t off, const void *src,
						  size_t n, CUstream s)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_HOST, src,
				   0, NULL, 0, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dst, CUarray src, size_t off, size_t n,
						  CUstream s)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_HOST, dst, 0, NULL, 0, CU_MEMORYTYPE_ARRAY, NULL,
				   0, src, off, n, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, CUarray src, size_t off, size_t n)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_DEVICE, NULL, dst, NULL, 0, CU_MEMORYTYPE_ARRAY,
				   NULL, 0, src, off, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoA_v2_ptds(CUarray dst, size_t off, CUdeviceptr src, size_t n)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, off, CU_MEMORYTYPE_DEVICE,
				   NULL, src, NULL, 0, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemcpyAtoA_v2_ptds(CUarray dst, size_t doff, CUarray src, size_t soff,
					     size_t n)
{
	return gp__memcpy_array_1d(CU_MEMORYTYPE_ARRAY, NULL, 0, dst, doff, CU_MEMORYTYPE_ARRAY,
				   NULL, 0, src, soff, n, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n)
{
	return gp__memset(d, 0, v, 1, n, 1, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n)
{
	return gp__memset(d, 0, v, 2, n, 1, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n)
{
	return gp__memset(d, 0, v, 4, n, 1, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 1, n, 1, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 2, n, 1, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
	return gp__memset(d, 0, v, 4, n, 1, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
					     size_t h)
{
	return gp__memset(d, pitch, v, 1, w, h, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t pitch, unsigned short v,
					      size_t w, size_t h)
{
	return gp__memset(d, pitch, v, 2, w, h, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t pitch, unsigned int v, size_t w,
					      size_t h)
{
	return gp__memset(d, pitch, v, 4, w, h, NULL, false, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t pitch, unsigned char v,
					       size_t w, size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 1, w, h, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t pitch, unsigned short v,
						size_t w, size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 2, w, h, s, true, true);
}

GP_CUDA_EXPORT CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t pitch, unsigned int v,
						size_t w, size_t h, CUstream s)
{
	return gp__memset(d, pitch, v, 4, w, h, s, true, true);
}

GP_CUDA_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
					    unsigned int gz, unsigned int bx, unsigned int by,
					    unsigned int bz, unsigned int shmem, CUstream s,
					    void **params, void **extra)
{
	return gp__launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra, true);
}

GP_CUDA_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
					      void **params, void **extra)
{
	return gp__launch_ex(config, f, params, extra, true);
}

GP_CUDA_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx,
						       unsigned int gy, unsigned int gz,
						       unsigned int bx, unsigned int by,
						       unsigned int bz, unsigned int shmem,
						       CUstream s, void **params)
{
	return gp__launch_coop(f, gx, gy, gz, bx, by, bz, shmem, s, params, true);
}

GP_CUDA_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data)
{
	return gp__launch_host_func(s, fn, data, true);
}

GP_CUDA_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *data,
						 unsigned int flags)
{
	return gp__stream_add_callback(s, cb, data, flags, true);
}

GP_CUDA_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s)
{
	return gp__event_record(e, s, true);
}

GP_CUDA_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{
	if (flags & ~CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	return flags ? CUDA_ERROR_NOT_SUPPORTED : gp__event_record(e, s, true);
}

GP_CUDA_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
	return gp__stream_wait_event(s, e, flags, true);
}

GP_CUDA_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
	return gp__stream_sync(s, true);
}

GP_CUDA_EXPORT CUresult cuStreamQuery_ptsz(CUstream s)
{
	return gp__stream_query(s, true);
}

GP_CUDA_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned int *flags)
{
	return cuStreamGetFlags(s ? s : CU_STREAM_PER_THREAD, flags);
}

GP_CUDA_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream s, int *priority)
{
	return cuStreamGetPriority(s ? s : CU_STREAM_PER_THREAD, priority);
}

GP_CUDA_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *pctx)
{
	return cuStreamGetCtx(s ? s : CU_STREAM_PER_THREAD, pctx);
}

GP_CUDA_EXPORT CUresult cuStreamGetId_ptsz(CUstream s, unsigned long long *id)
{
	return cuStreamGetId(s ? s : CU_STREAM_PER_THREAD, id);
}

GP_CUDA_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream s, CUdevice *dev)
{
	return cuStreamGetDevice(s ? s : CU_STREAM_PER_THREAD, dev);
}

GP_CUDA_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status)
{
	return cuStreamIsCapturing(s ? s : CU_STREAM_PER_THREAD, status);
}

GP_CUDA_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
	return gp__mem_alloc_async(dptr, bytes, NULL, s, true);
}

GP_CUDA_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
						     CUmemoryPool pool, CUstream s)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__mem_alloc_async(dptr, bytes, pool, s, true);
}

GP_CUDA_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
	return gp__mem_free_async(dptr, s, true);
}
