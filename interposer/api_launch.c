/* api_launch.c -- kernel launches (sent without waiting for an answer) and occupancy. */
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"

/* Lays kernelParams (one pointer per parameter, no sizes) out as the kernel reads them. */
CUresult gp__launch_pack(const struct gp_ifunc *f, void **params, void **extra, uint8_t **buf,
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

/* What the client can check exactly itself, so these errors come from the launch as on a
 * GPU. The rest (shared memory, resources) the driver checks; that error comes later. */
static CUresult check_config(const struct gp_ifunc *f, int dev, unsigned gx, unsigned gy,
			     unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem)
{
	const struct gp_idevice *d = &gp__client.dev[dev];
	uint64_t threads = (uint64_t)bx * by * bz;

	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	if (bx > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X] ||
	    by > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y] ||
	    bz > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z] ||
	    gx > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X] ||
	    gy > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y] ||
	    gz > (unsigned)d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z])
		return CUDA_ERROR_INVALID_VALUE;
	if (threads > (uint64_t)f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] &&
	    f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] > 0)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult gp__launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		    unsigned bz, unsigned shmem, CUstream s, void **params, void **extra, bool pt)
{
	struct gp_in_launch in = {.grid_x = gx,
				  .grid_y = gy,
				  .grid_z = gz,
				  .block_x = bx,
				  .block_y = by,
				  .block_z = bz,
				  .shared_mem = shmem};
	struct gp_ifunc *f;
	struct gp_ictx *c;
	uint8_t *buf = NULL;
	uint64_t sid;
	size_t len = 0;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r == CUDA_SUCCESS)
		r = gp__func_described(fn, &f);
	if (r != CUDA_SUCCESS)
		return r;
	/* A module's function runs in its module's context; a library kernel in any. */
	if (f->module->magic == GP_MAGIC_MODULE && f->module->ctx != c)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = check_config(f, c->device, gx, gy, gz, bx, by, bz, shmem);
	if (r == CUDA_SUCCESS)
		r = gp__launch_pack(f, params, extra, &buf, &len);
	if (r != CUDA_SUCCESS)
		return r;
	if (len > GP_BLOB_MAX) {
		free(buf);
		return CUDA_ERROR_INVALID_VALUE; /* past CUDA's own parameter limit */
	}
	in.ctx = c->remote;
	in.func = f->remote;
	in.stream = sid;
	in.params = buf;
	in.params_len = len;
	r = gp__rpc_launch(GP_F_NO_REPLY, &in, NULL);
	free(buf);
	return r;
}

GP_CUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
				       unsigned int gz, unsigned int bx, unsigned int by,
				       unsigned int bz, unsigned int shmem, CUstream s,
				       void **params, void **extra)
{
	return gp__launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra, false);
}

/* cuLaunchKernelEx: the attributes that only tune scheduling are accepted; those that change
 * what a launch means (clusters, cooperative grids, programmatic events) are not forwarded. */
CUresult gp__launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra,
		       bool pt)
{
	if (!cfg)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < cfg->numAttrs; i++) {
		switch (cfg->attrs[i].id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
			break;
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			if (cfg->attrs[i].value.cooperative)
				return CUDA_ERROR_NOT_SUPPORTED;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
			if (cfg->attrs[i].value.clusterDim.x * cfg->attrs[i].value.clusterDim.y *
				    cfg->attrs[i].value.clusterDim.z >
			    1)
				return CUDA_ERROR_NOT_SUPPORTED;
			break;
		default:
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	return gp__launch(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX,
			  cfg->blockDimY, cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params,
			  extra, pt);
}

GP_CUDA_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
					 void **extra)
{
	return gp__launch_ex(config, f, params, extra, false);
}

/* ---- occupancy -------------------------------------------------------------------------- */

static CUresult max_active_blocks(int *n, CUfunction func, int block, size_t smem, unsigned flags)
{
	struct gp_ifunc *f;
	struct gp_ictx *c;
	struct gp_out_occupancy out;
	CUresult r;

	if (!n || block <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = gp__func_described(func, &f);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_occupancy(0,
			      &(struct gp_in_occupancy){.ctx = c->remote,
							.func = f->remote,
							.block = block,
							.smem = smem,
							.flags = flags},
			      &out);
	if (r == CUDA_SUCCESS)
		*n = (int)out.blocks;
	return r;
}

GP_CUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block,
								    size_t smem)
{
	return max_active_blocks(n, f, block, smem, 0);
}

GP_CUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f,
									     int block, size_t smem,
									     unsigned int flags)
{
	return max_active_blocks(n, f, block, smem, flags);
}

/*
 * The block size with the best occupancy: tried client-side over the multiples of the warp
 * size, because the dynamic shared memory callback is a function of this process.
 */
GP_CUDA_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *min_grid, int *block_size,
								  CUfunction func,
								  CUoccupancyB2DSize smem_fn,
								  size_t smem, int limit,
								  unsigned int flags)
{
	struct gp_ifunc *f;
	struct gp_ictx *c;
	int best = 0, best_blocks = 0, warp, maxt, sms;
	CUresult r;

	if (!min_grid || !block_size)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = gp__func_described(func, &f);
	if (r != CUDA_SUCCESS)
		return r;
	warp = gp__client.dev[c->device].attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
	sms = gp__client.dev[c->device].attr[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];
	maxt = f->attr[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (limit > 0 && limit < maxt)
		maxt = limit;
	if (warp <= 0)
		warp = 32;
	for (int b = maxt - maxt % warp; b >= warp; b -= warp) {
		size_t dyn = smem_fn ? smem_fn(b) : smem;
		int n = 0;

		r = max_active_blocks(&n, func, b, dyn, flags);
		if (r != CUDA_SUCCESS)
			return r;
		if (n * b > best_blocks * best) {
			best = b;
			best_blocks = n;
		}
	}
	*block_size = best;
	*min_grid = best_blocks * sms;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block_size,
							 CUfunction func,
							 CUoccupancyB2DSize smem_fn, size_t smem,
							 int limit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, func, smem_fn, smem,
							 limit, 0);
}
