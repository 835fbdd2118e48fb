/* api_memory.c -- device memory: allocations, copies, memory info. */
#include <gpupool/wire.h>

#include "interposer.h"

GP_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct gp_ictx *c;
	uint64_t args[2], out[1];
	CUresult r;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	args[0] = c->remote;
	args[1] = bytesize;
	r = gp__call(GP_MSG_MEM_ALLOC, args, 2, out, 1);
	if (r == CUDA_SUCCESS)
		*dptr = (CUdeviceptr)out[0];
	return r;
}

GP_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct gp_ictx *c;
	uint64_t args[2];
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (dptr == 0)
		return CUDA_SUCCESS; /* freeing NULL is a no-op, as in the driver */
	args[0] = c->remote;
	args[1] = dptr;
	return gp__call(GP_MSG_MEM_FREE, args, 2, NULL, 0);
}

GP_CUDA_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
	struct gp_ictx *c;
	uint64_t args[1], out[2];
	CUresult r;

	if (!free_bytes || !total_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	args[0] = c->remote;
	r = gp__call(GP_MSG_MEM_GET_INFO, args, 1, out, 2);
	if (r == CUDA_SUCCESS) {
		*free_bytes = (size_t)out[0];
		*total_bytes = (size_t)out[1];
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!src && bytes)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__copy_to_remote(c->remote, dst, src, bytes);
}

GP_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!dst && bytes)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__copy_from_remote(c->remote, dst, src, bytes);
}
