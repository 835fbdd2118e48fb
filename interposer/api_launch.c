/* api_launch.c -- kernel launches, sent without waiting for an answer. */
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"

/* Lays kernelParams (one pointer per parameter, no sizes) out as the kernel reads them. */
static CUresult pack_params(const struct gp_ifunc *f, void **params, void **extra, uint8_t **buf,
			    size_t *len)
{
	void *ebuf = NULL;
	size_t esize = 0;
	bool has_size = false;

	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (extra) {
		for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
				ebuf = extra[i + 1];
			} else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
				esize = *(size_t *)extra[i + 1];
				has_size = true;
			} else {
				return CUDA_ERROR_INVALID_VALUE;
			}
		}
		if (!ebuf || !has_size || esize < f->param_bytes)
			return CUDA_ERROR_INVALID_VALUE;
		*buf = malloc(esize ? esize : 1);
		if (!*buf)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(*buf, ebuf, esize);
		*len = esize;
		return CUDA_SUCCESS;
	}
	if (f->nparams && !params)
		return CUDA_ERROR_INVALID_VALUE;
	*buf = calloc(1, f->param_bytes ? f->param_bytes : 1);
	if (!*buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < f->nparams; i++) {
		if (!params[i]) {
			free(*buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		memcpy(*buf + f->offset[i], params[i], f->size[i]);
	}
	*len = f->param_bytes;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
				  unsigned int bx, unsigned int by, unsigned int bz,
				  unsigned int shmem, CUstream stream, void **params, void **extra)
{
	struct gp_ifunc *f = (struct gp_ifunc *)fn;
	Gp__Launch l = GP__LAUNCH__INIT;
	Gp__Dim3 grid = GP__DIM3__INIT, block = GP__DIM3__INIT;
	struct gp_ictx *c;
	uint8_t *buf = NULL;
	size_t len = 0;
	CUresult r = gp__ctx_need(&c);

	if (r != CUDA_SUCCESS)
		return r;
	if (!f || f->magic != GP_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->module->ctx != c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	if (stream)
		return CUDA_ERROR_NOT_SUPPORTED; /* streams are not forwarded yet */
	r = pack_params(f, params, extra, &buf, &len);
	if (r != CUDA_SUCCESS)
		return r;
	grid.x = gx;
	grid.y = gy;
	grid.z = gz;
	block.x = bx;
	block.y = by;
	block.z = bz;
	l.function = f->remote;
	l.grid = &grid;
	l.block = &block;
	l.shared_mem = shmem;
	l.context = c->remote;
	l.params.data = buf;
	l.params.len = len;
	r = gp__call_async(GP_MSG_LAUNCH, &l.base);
	free(buf);
	return r;
}
