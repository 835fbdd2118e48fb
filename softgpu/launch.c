/* launch.c -- cuLaunchKernel(Ex): checks, parameter marshalling, queuing; occupancy queries. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

/*
 * A launch is checked as the driver checks it (dimensions, shared memory,
 * parameters), its parameters are copied into a buffer laid out as the PTX
 * .entry declares them (kernelParams) or taken as given (the `extra` buffer),
 * and it is queued on its stream: the call returns before the grid runs.
 * Faults during the run are reported by later calls (sticky error).
 */

void sg_launch_free(struct sg_launch *l)
{
	if (l == NULL)
		return;
	sg_pout_free(l->out);
	free(l->params);
	free(l);
}

static const struct sg_func *pfunc(const struct sg_function *f)
{
	return &f->mod->img->prog->funcs[f->index];
}

/* A launch the driver refuses: SOFTGPU_LOG says why. */
static CUresult refuse(const struct sg_func *pf, CUresult r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static CUresult refuse(const struct sg_func *pf, CUresult r, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (!sg_cfg.log)
		return r;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	sg_log("launch of '%s' refused (%d): %s", pf->name, (int)r, why);
	return r;
}

static CUresult marshal(const struct sg_func *pf, void **params, void **extra, uint8_t **out)
{
	uint32_t size = pf->param_size;
	uint8_t *buf = calloc(1, size ? size : 1);

	if (buf == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (extra) {
		void *ptr = NULL;
		size_t *psize = NULL;

		if (params) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				ptr = extra[i + 1];
			else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				psize = extra[i + 1];
			else {
				free(buf);
				return CUDA_ERROR_INVALID_VALUE;
			}
		}
		if ((size && (ptr == NULL || psize == NULL)) || (psize && *psize < size)) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (size)
			memcpy(buf, ptr, size);
	} else if (pf->nparams) {
		if (params == NULL) {
			free(buf);
			return CUDA_ERROR_INVALID_VALUE;
		}
		for (uint32_t i = 0; i < pf->nparams; i++) {
			if (params[i] == NULL) {
				free(buf);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memcpy(buf + pf->params[i].offset, params[i], pf->params[i].size);
		}
	}
	*out = buf;
	return CUDA_SUCCESS;
}

CUresult sg_launch_new(struct sg_ctx *ctx, CUfunction hf, const unsigned grid[3],
		       const unsigned block[3], unsigned shmem, void **params, void **extra,
		       struct sg_launch **out)
{
	struct sg_function *f;
	const struct sg_func *pf;
	struct sg_launch *l;
	unsigned gx = grid[0], gy = grid[1], gz = grid[2], bx = block[0], by = block[1],
		 bz = block[2];
	uint64_t threads = (uint64_t)bx * by * bz;
	int maxdyn;
	CUresult r = sg_function_resolve(hf, ctx, &f);

	if (r)
		return r;
	pf = pfunc(f);
	if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 ||
	    threads > 1024 || gx > 2147483647u || gy > 65535 || gz > 65535)
		return refuse(pf, CUDA_ERROR_INVALID_VALUE, "grid (%u,%u,%u) block (%u,%u,%u)", gx,
			      gy, gz, bx, by, bz);
	if (pf->reqntid[0] &&
	    (bx != pf->reqntid[0] || by != (pf->reqntid[1] ? pf->reqntid[1] : 1) ||
	     bz != (pf->reqntid[2] ? pf->reqntid[2] : 1)))
		return refuse(pf, CUDA_ERROR_INVALID_VALUE, "block (%u,%u,%u) is not its .reqntid",
			      bx, by, bz);
	if (pf->maxntid[0] && threads > (uint64_t)pf->maxntid[0] *
						(pf->maxntid[1] ? pf->maxntid[1] : 1) *
						(pf->maxntid[2] ? pf->maxntid[2] : 1))
		return refuse(pf, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
			      "%llu threads exceed its .maxntid", (unsigned long long)threads);
	maxdyn = f->max_dyn_shared >= 0 ? f->max_dyn_shared : 49152 - (int)pf->shared_static;
	if ((int64_t)shmem > maxdyn)
		return refuse(pf, CUDA_ERROR_INVALID_VALUE,
			      "%u bytes of dynamic shared memory, at most %d allowed", shmem,
			      maxdyn);
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = marshal(pf, params, extra, &l->params);
	if (r) {
		free(l);
		return refuse(pf, r, "its parameters (kernelParams %p, extra %p)", (void *)params,
			      (void *)extra);
	}
	l->out = sg_pout_new(ctx->limit_printf);
	if (l->out == NULL) {
		sg_launch_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->ctx = ctx;
	l->mod = f->mod;
	l->func = hf;
	l->g.prog = f->mod->img->prog;
	l->g.entry = pf;
	l->g.tmpl = f->mod->tmpl;
	l->g.grid[0] = gx;
	l->g.grid[1] = gy;
	l->g.grid[2] = gz;
	l->g.block[0] = bx;
	l->g.block[1] = by;
	l->g.block[2] = bz;
	l->g.nthreads = (uint32_t)threads;
	l->g.dyn_shared = shmem;
	l->g.shared_size = l->g.prog->dyn_base + shmem;
	l->g.params = l->params;
	l->g.param_size = pf->param_size;
	l->g.local_size = (pf->local_total + 15) & ~15u;
	if (pf->recursive)
		l->g.local_size += (uint32_t)((ctx->limit_stack + 15) & ~(size_t)15);
	l->g.max_depth = 1024;
	l->g.ctx = ctx;
	l->g.sm_count = ctx->dev->sm_count;
	l->g.out = l->out;
	*out = l;
	return CUDA_SUCCESS;
}

struct sg_launch *sg_launch_dup(const struct sg_launch *t)
{
	struct sg_launch *l = calloc(1, sizeof(*l));
	uint32_t size = t->g.param_size ? t->g.param_size : 1;

	if (l == NULL)
		return NULL;
	*l = *t;
	l->params = malloc(size);
	l->out = sg_pout_new(t->ctx->limit_printf);
	if (l->params == NULL || l->out == NULL) {
		free(l->params);
		sg_pout_free(l->out);
		free(l);
		return NULL;
	}
	memcpy(l->params, t->params, size);
	l->g.params = l->params;
	l->g.out = l->out;
	return l;
}

static int occupancy(const struct sg_function *f, int block, size_t dyn);

CUresult sg_launch_make_coop(struct sg_launch *l)
{
	struct sg_function *f;
	const struct sg_grid *g = &l->g;
	uint64_t blocks = (uint64_t)g->grid[0] * g->grid[1] * g->grid[2], fit;
	CUresult r = sg_function_resolve(l->func, l->ctx, &f);

	if (r)
		return r;
	/* CUDA's rule: every block must be resident at once, as the occupancy says. */
	fit = (uint64_t)occupancy(f, (int)g->nthreads, g->dyn_shared) * l->ctx->dev->sm_count;
	if (blocks > fit)
		return refuse(pfunc(f), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
			      "a cooperative grid of %llu blocks, at most %llu fit at once",
			      (unsigned long long)blocks, (unsigned long long)fit);
	l->g.coop = true;
	return CUDA_SUCCESS;
}

static CUresult launch(CUfunction hf, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned shmem, CUstream hs, void **params,
		       void **extra, bool pt, bool coop)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_launch *l;
	struct sg_op *op;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if ((r = (CUresult)__atomic_load_n(&ctx->sticky, __ATOMIC_ACQUIRE)))
		return r;
	r = sg_launch_new(ctx, hf, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, shmem,
			  params, extra, &l);
	if (r)
		return r;
	if (coop && (r = sg_launch_make_coop(l))) {
		sg_launch_free(l);
		return r;
	}
	op = sg_op_new(SG_OP_LAUNCH);
	if (op == NULL) {
		sg_launch_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	op->u.launch = l;
	return sg_stream_submit(s, op);
}

SG_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				  unsigned int gridDimZ, unsigned int blockDimX,
				  unsigned int blockDimY, unsigned int blockDimZ,
				  unsigned int sharedMemBytes, CUstream hStream,
				  void **kernelParams, void **extra)
{
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, extra, false, false);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			  void **extra, bool pt)
{
	bool coop = false;

	if (config == NULL || (config->numAttrs && config->attrs == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < config->numAttrs; i++) {
		const CUlaunchAttribute *a = &config->attrs[i];

		switch (a->id) {
		case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
			coop = a->value.cooperative != 0;
			break;
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
			if (a->value.clusterDim.x > 1 || a->value.clusterDim.y > 1 ||
			    a->value.clusterDim.z > 1)
				return CUDA_ERROR_NOT_SUPPORTED; /* no clusters before sm_90 */
			break;
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
			return CUDA_ERROR_NOT_SUPPORTED; /* would be an event never recorded */
		case CU_LAUNCH_ATTRIBUTE_IGNORE:
		case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
		case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
			/* Hints, or permissions to overlap, that change no result: grids
			 * run in stream order, one stream's kernels one after another. */
			break;
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
		      config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
		      kernelParams, extra, pt, coop);
}

SG_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				    void **extra)
{
	return launch_ex(config, f, kernelParams, extra, false);
}

SG_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				       unsigned int gridDimZ, unsigned int blockDimX,
				       unsigned int blockDimY, unsigned int blockDimZ,
				       unsigned int sharedMemBytes, CUstream hStream,
				       void **kernelParams, void **extra);
SG_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				       unsigned int gridDimZ, unsigned int blockDimX,
				       unsigned int blockDimY, unsigned int blockDimZ,
				       unsigned int sharedMemBytes, CUstream hStream,
				       void **kernelParams, void **extra)
{
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, extra, true, false);
}

SG_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
					 void **kernelParams, void **extra);
SG_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
					 void **kernelParams, void **extra)
{
	return launch_ex(config, f, kernelParams, extra, true);
}

/* Cooperative launches: their blocks run all at once, so grid.sync() can complete. */
SG_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					     unsigned int gridDimY, unsigned int gridDimZ,
					     unsigned int blockDimX, unsigned int blockDimY,
					     unsigned int blockDimZ, unsigned int sharedMemBytes,
					     CUstream hStream, void **kernelParams)
{
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, NULL, false, true);
}

SG_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
						  unsigned int gridDimY, unsigned int gridDimZ,
						  unsigned int blockDimX, unsigned int blockDimY,
						  unsigned int blockDimZ,
						  unsigned int sharedMemBytes, CUstream hStream,
						  void **kernelParams);
SG_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
						  unsigned int gridDimY, unsigned int gridDimZ,
						  unsigned int blockDimX, unsigned int blockDimY,
						  unsigned int blockDimZ,
						  unsigned int sharedMemBytes, CUstream hStream,
						  void **kernelParams)
{
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		      sharedMemBytes, hStream, kernelParams, NULL, true, true);
}

/* ---- occupancy ---- */

/* Resident blocks per multiprocessor of the presented architecture (device_attr.c): its
 * threads, blocks and shared memory per SM, 64K registers at 32 per thread. */
static int occupancy(const struct sg_function *f, int block, size_t dyn)
{
	const struct sg_func *pf = pfunc(f);
	const struct sg_arch *a = sg_arch();
	int warps = (block + 31) / 32, n = a->blocks_per_sm;
	int maxt = 1024;
	size_t smem = pf->shared_static + dyn;

	if (pf->maxntid[0])
		maxt = (int)(pf->maxntid[0] * (pf->maxntid[1] ? pf->maxntid[1] : 1) *
			     (pf->maxntid[2] ? pf->maxntid[2] : 1));
	if (block <= 0 || block > maxt || block > 1024)
		return 0;
	if (a->threads_per_sm / 32 / warps < n)
		n = a->threads_per_sm / 32 / warps;
	if (65536 / (32 * 32 * warps) < n) /* 32 registers per thread */
		n = 65536 / (32 * 32 * warps);
	if (smem) {
		size_t per = (smem + (size_t)a->smem_reserved + 255) / 256 * 256;

		if (smem > (size_t)a->smem_optin)
			return 0;
		if ((int)((size_t)a->smem_per_sm / per) < n)
			n = (int)((size_t)a->smem_per_sm / per);
	}
	return n;
}

static CUresult occ_function(CUfunction h, struct sg_function **out)
{
	struct sg_ctx *c;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	return sg_function_resolve(h, c, out);
}

SG_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
	struct sg_function *f;
	CUresult r = occ_function(func, &f);

	if (r)
		return r;
	if (numBlocks == NULL || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	*numBlocks = occupancy(f, blockSize, dynamicSMemSize);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
							       int blockSize,
							       size_t dynamicSMemSize)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
								    dynamicSMemSize, 0);
}

SG_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
	int *minGridSize, int *blockSize, CUfunction func,
	CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
	unsigned int flags)
{
	struct sg_function *f;
	struct sg_ctx *c;
	int best = 0, best_block = 0, limit;
	CUresult r = occ_function(func, &f);

	if (r == CUDA_SUCCESS)
		r = sg_ctx_current(&c, false);
	if (r)
		return r;
	if (minGridSize == NULL || blockSize == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	limit = blockSizeLimit > 0 && blockSizeLimit < 1024 ? blockSizeLimit : 1024;
	for (int b = (limit + 31) / 32 * 32; b > 0; b -= 32) {
		int bs = b > limit ? limit : b;
		size_t dyn = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(bs)
							: dynamicSMemSize;
		int n = occupancy(f, bs, dyn);

		if (n * bs > best) {
			best = n * bs;
			best_block = bs;
		}
	}
	*blockSize = best_block;
	*minGridSize = best_block ? (best / best_block) * (int)c->dev->sm_count : 0;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
						    CUfunction func,
						    CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						    size_t dynamicSMemSize, int blockSizeLimit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
							 blockSizeToDynamicSMemSize,
							 dynamicSMemSize, blockSizeLimit, 0);
}

SG_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
							   int numBlocks, int blockSize)
{
	struct sg_function *f;
	size_t per;
	CUresult r = occ_function(func, &f);

	if (r)
		return r;
	if (dynamicSmemSize == NULL || numBlocks <= 0 || blockSize <= 0 ||
	    occupancy(f, blockSize, 0) < numBlocks)
		return dynamicSmemSize ? (*dynamicSmemSize = 0, CUDA_SUCCESS)
				       : CUDA_ERROR_INVALID_VALUE;
	per = (size_t)sg_arch()->smem_per_sm / (size_t)numBlocks / 256 * 256;
	per = per > (size_t)sg_arch()->smem_reserved ? per - (size_t)sg_arch()->smem_reserved : 0;
	per = per > (size_t)sg_arch()->smem_optin ? (size_t)sg_arch()->smem_optin : per;
	per = per > pfunc(f)->shared_static ? per - pfunc(f)->shared_static : 0;
	*dynamicSmemSize = per;
	return CUDA_SUCCESS;
}
