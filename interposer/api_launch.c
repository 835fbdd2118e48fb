/* api_launch.c -- kernel launches (sent without waiting for an answer) and occupancy. */
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"

/* Parameter bytes a launch lays out on its own stack: most kernels take far fewer, and
 * only a larger list costs a heap allocation (freed by the launch). */
#define PARAMS_LOCAL 1024

/*
 * Lays kernelParams (one pointer per parameter, no sizes) or `extra`'s buffer out as the
 * kernel reads them: in local (local_len bytes) when it fits, else in a buffer malloc'd for
 * the caller to free. *buf is where they are.
 */
static CUresult pack_params(const struct gp_ifunc *f, void **params, void **extra, uint8_t *local,
			    size_t local_len, uint8_t **buf, size_t *len)
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
		*buf = local && esize <= local_len ? local : malloc(esize ? esize : 1);
		if (!*buf)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(*buf, ebuf, esize);
		*len = esize;
		return CUDA_SUCCESS;
	}
	if (f->nparams && !params)
		return CUDA_ERROR_INVALID_VALUE;
	for (uint32_t i = 0; i < f->nparams; i++)
		if (!params[i])
			return CUDA_ERROR_INVALID_VALUE;
	if (local && f->param_bytes <= local_len) {
		*buf = local;
		memset(local, 0, f->param_bytes); /* the padding between parameters */
	} else {
		*buf = calloc(1, f->param_bytes ? f->param_bytes : 1);
		if (!*buf)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < f->nparams; i++)
		memcpy(*buf + f->offset[i], params[i], f->size[i]);
	*len = f->param_bytes;
	return CUDA_SUCCESS;
}

CUresult gp__launch_pack(const struct gp_ifunc *f, void **params, void **extra, uint8_t **buf,
			 size_t *len)
{
	return pack_params(f, params, extra, NULL, 0, buf, len);
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

/* The cuLaunchKernelEx attributes a launch forwards (LAUNCH_EX), as its request carries them. */
struct launch_attrs {
	uint32_t mask; /* GP_LA_* */
	uint32_t cooperative;
	int32_t priority;
	uint32_t cluster[3];
	uint32_t cluster_policy;
	CUaccessPolicyWindow window;
};

static CUresult launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
		       void **extra, bool pt, const struct launch_attrs *la)
{
	uint8_t local[PARAMS_LOCAL] __attribute__((aligned(16)));
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
		r = pack_params(f, params, extra, local, sizeof(local), &buf, &len);
	if (r != CUDA_SUCCESS)
		return r;
	if (len > GP_BLOB_MAX) {
		if (buf != local)
			free(buf);
		return CUDA_ERROR_INVALID_VALUE; /* past CUDA's own parameter limit */
	}
	if (!la) {
		r = gp__rpc_launch(GP_F_NO_REPLY,
				   &(struct gp_in_launch){.ctx = c->remote,
							  .func = f->remote,
							  .grid_x = gx,
							  .grid_y = gy,
							  .grid_z = gz,
							  .block_x = bx,
							  .block_y = by,
							  .block_z = bz,
							  .shared_mem = shmem,
							  .stream = sid,
							  .params = buf,
							  .params_len = len},
				   NULL);
	} else {
		uint32_t ratio;

		memcpy(&ratio, &la->window.hitRatio, sizeof(ratio));
		/* A cooperative launch waits for its answer: CUDA refuses a grid too large for
		 * the device from the launch call itself, and only the worker's driver knows. */
		r = gp__rpc_launch_ex(
			la->cooperative ? 0 : GP_F_NO_REPLY,
			&(struct gp_in_launch_ex){.ctx = c->remote,
						  .func = f->remote,
						  .grid_x = gx,
						  .grid_y = gy,
						  .grid_z = gz,
						  .block_x = bx,
						  .block_y = by,
						  .block_z = bz,
						  .shared_mem = shmem,
						  .stream = sid,
						  .attrs = la->mask,
						  .cooperative = la->cooperative,
						  .priority = la->priority,
						  .cluster_x = la->cluster[0],
						  .cluster_y = la->cluster[1],
						  .cluster_z = la->cluster[2],
						  .cluster_policy = la->cluster_policy,
						  .window_base =
							  (uint64_t)(uintptr_t)la->window.base_ptr,
						  .window_bytes = la->window.num_bytes,
						  .window_hit_ratio = ratio,
						  .window_hit_prop = (uint32_t)la->window.hitProp,
						  .window_miss_prop = (uint32_t)la->window.missProp,
						  .params = buf,
						  .params_len = len},
			NULL);
	}
	if (buf != local)
		free(buf);
	return r;
}

CUresult gp__launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		    unsigned bz, unsigned shmem, CUstream s, void **params, void **extra, bool pt)
{
	return launch(fn, gx, gy, gz, bx, by, bz, shmem, s, params, extra, pt, NULL);
}

GP_CUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
				       unsigned int gz, unsigned int bx, unsigned int by,
				       unsigned int bz, unsigned int shmem, CUstream s,
				       void **params, void **extra)
{
	return gp__launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra, false);
}

/*
 * cuLaunchKernelEx: the attributes the pool forwards go to the worker's driver, which checks
 * them as CUDA does; clusters only where the pool's device has them (compute capability 9.0).
 * Any other attribute is refused rather than dropped.
 */
CUresult gp__launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra,
		       bool pt)
{
	struct launch_attrs la;
	struct gp_ictx *c;
	CUresult r;

	if (!cfg || (cfg->numAttrs && !cfg->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&la, 0, sizeof(la));
	for (unsigned i = 0; i < cfg->numAttrs; i++) {
		const CUlaunchAttributeValue *v = &cfg->attrs[i].value;

		switch (cfg->attrs[i].id) {
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
			break;
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			la.mask |= GP_LA_COOPERATIVE;
			la.cooperative = v->cooperative != 0;
			break;
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
			la.mask |= GP_LA_PRIORITY;
			la.priority = v->priority;
			break;
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
			la.mask |= GP_LA_ACCESS_WINDOW;
			la.window = v->accessPolicyWindow;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
			la.mask |= GP_LA_CLUSTER_DIM;
			la.cluster[0] = v->clusterDim.x;
			la.cluster[1] = v->clusterDim.y;
			la.cluster[2] = v->clusterDim.z;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
			la.mask |= GP_LA_CLUSTER_POLICY;
			la.cluster_policy = (uint32_t)v->clusterSchedulingPolicyPreference;
			break;
		default:
			return CUDA_ERROR_NOT_SUPPORTED; /* not forwarded by the pool */
		}
	}
	if (la.mask & (GP_LA_CLUSTER_DIM | GP_LA_CLUSTER_POLICY)) {
		r = gp__ctx_need(&c);
		if (r != CUDA_SUCCESS)
			return r;
		/* A device without clusters is refused here as its driver would refuse it;
		 * dimensions of 1 are a launch without clusters anywhere. */
		if (!gp__client.dev[c->device].attr[CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH]) {
			if ((la.mask & GP_LA_CLUSTER_POLICY) ||
			    (uint64_t)la.cluster[0] * la.cluster[1] * la.cluster[2] > 1)
				return CUDA_ERROR_NOT_SUPPORTED;
			la.mask &= ~GP_LA_CLUSTER_DIM;
		}
	}
	if (la.mask & GP_LA_COOPERATIVE && !la.cooperative)
		la.mask &= ~GP_LA_COOPERATIVE;
	return launch(f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX,
		      cfg->blockDimY, cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params,
		      extra, pt, la.mask ? &la : NULL);
}

GP_CUDA_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
					 void **extra)
{
	return gp__launch_ex(config, f, params, extra, false);
}

CUresult gp__launch_coop(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			 unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
			 bool pt)
{
	struct launch_attrs la = {.mask = GP_LA_COOPERATIVE, .cooperative = 1};

	return launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL, pt, &la);
}

GP_CUDA_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
						  unsigned int gz, unsigned int bx, unsigned int by,
						  unsigned int bz, unsigned int shmem, CUstream s,
						  void **params)
{
	return gp__launch_coop(f, gx, gy, gz, bx, by, bz, shmem, s, params, false);
}

/* ---- tensor maps ------------------------------------------------------------------------ */

/*
 * Encoded by the pool's driver (TENSOR_MAP_ENCODE), which knows its GPU's format, on a
 * device that has tensor map access (compute capability 9.0+); elsewhere NOT_SUPPORTED,
 * as there is nothing that could use the map.
 */
static CUresult tensor_map_encode(CUtensorMap *map, uint32_t kind, void *global,
				  const struct gp_tensor_desc *d)
{
	struct gp_ictx *c;
	CUresult r;

	if (!map || !global || d->rank < 1 || d->rank > 5)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__client.dev[c->device].attr[CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED])
		return CUDA_ERROR_NOT_SUPPORTED;
	return gp__rpc_tensor_map_encode(
		0,
		&(struct gp_in_tensor_map_encode){.ctx = c->remote,
						  .kind = kind,
						  .global = (uint64_t)(uintptr_t)global,
						  .desc = (const uint8_t *)d,
						  .desc_len = sizeof(*d),
						  .map = map,
						  .map_len = sizeof(*map)},
		NULL);
}

/* The arrays every encoding has: rank dimensions, rank - 1 strides, rank element strides. */
static CUresult tensor_desc(struct gp_tensor_desc *d, CUtensorMapDataType type, cuuint32_t rank,
			    const cuuint64_t *dim, const cuuint64_t *stride,
			    const cuuint32_t *estride, CUtensorMapInterleave il,
			    CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
			    CUtensorMapFloatOOBfill oob)
{
	memset(d, 0, sizeof(*d));
	if (rank < 1 || rank > 5 || !dim || (rank > 1 && !stride) || !estride)
		return CUDA_ERROR_INVALID_VALUE;
	d->data_type = (uint32_t)type;
	d->rank = rank;
	for (cuuint32_t i = 0; i < rank; i++) {
		d->dim[i] = dim[i];
		d->elem_stride[i] = estride[i];
		if (i + 1 < rank)
			d->stride[i] = stride[i];
	}
	d->interleave = (uint32_t)il;
	d->swizzle = (uint32_t)sw;
	d->l2_promotion = (uint32_t)l2;
	d->oob_fill = (uint32_t)oob;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type,
					       cuuint32_t rank, void *global, const cuuint64_t *dim,
					       const cuuint64_t *stride, const cuuint32_t *box,
					       const cuuint32_t *estride, CUtensorMapInterleave il,
					       CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
					       CUtensorMapFloatOOBfill oob)
{
	struct gp_tensor_desc d;
	CUresult r = tensor_desc(&d, type, rank, dim, stride, estride, il, sw, l2, oob);

	if (r != CUDA_SUCCESS)
		return r;
	if (!box)
		return CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; i < rank; i++)
		d.box[i] = box[i];
	return tensor_map_encode(map, 0, global, &d);
}

GP_CUDA_EXPORT CUresult cuTensorMapEncodeIm2col(
	CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *global,
	const cuuint64_t *dim, const cuuint64_t *stride, const int *lower, const int *upper,
	cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *estride, CUtensorMapInterleave il,
	CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	struct gp_tensor_desc d;
	CUresult r = tensor_desc(&d, type, rank, dim, stride, estride, il, sw, l2, oob);

	if (r != CUDA_SUCCESS)
		return r;
	/* rank - 2 spatial dimensions: the corners have one entry each */
	if (rank < 3 || !lower || !upper)
		return CUDA_ERROR_INVALID_VALUE;
	for (cuuint32_t i = 0; i + 2 < rank; i++) {
		d.lower[i] = lower[i];
		d.upper[i] = upper[i];
	}
	d.channels = channels;
	d.pixels = pixels;
	return tensor_map_encode(map, 1, global, &d);
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
