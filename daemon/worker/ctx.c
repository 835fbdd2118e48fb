/* ctx.c -- contexts the session creates, and the devices' primary contexts. */
#include "worker.h"

CUresult gp__ctx_create(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			uint64_t *out, size_t *nout)
{
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	uint64_t id;

	unsigned n = 0;

	if (a[0] >= (uint64_t)w->ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	for (uint32_t i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind == GP_H_CTX && !w->handles[i].primary)
			n++;
	if (n >= GP_MAX_CONTEXTS)
		return CUDA_ERROR_OUT_OF_MEMORY; /* each context costs device memory */
	r = w->drv.cuDeviceGet(&dev, (int)a[0]);
	if (r != CUDA_SUCCESS)
		return r;
	r = w->drv.cuCtxCreate_v4(&ctx, NULL, (unsigned)a[1], dev);
	if (r != CUDA_SUCCESS)
		return r;
	w->current = ctx;
	id = gp__handle_new(w, GP_H_CTX, ctx);
	if (!id) {
		w->drv.cuCtxDestroy_v2(ctx);
		w->current = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_CTX)->device = (int)a[0];
	out[0] = id;
	*nout = 1;
	return CUDA_SUCCESS;
}

CUresult gp__ctx_destroy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			 uint64_t *out, size_t *nout)
{
	struct gp_handle *h = gp__handle_get(w, a[0], GP_H_CTX);
	CUresult r;

	if (!h || h->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = w->drv.cuCtxDestroy_v2(h->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (w->current == h->ptr)
		w->current = NULL;
	gp__forget_ctx(w, a[0]);
	gp__handle_release(w, a[0]);
	return CUDA_SUCCESS;
}

CUresult gp__ctx_synchronize(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout)
{
	CUresult r = gp__use_ctx(w, a[0], NULL);

	return r != CUDA_SUCCESS ? r : w->drv.cuCtxSynchronize();
}

/* ---- primary contexts --------------------------------------------------------
 * The worker retains a device's primary context once per client retain, as the
 * driver counts them, and keeps one handle per device for as long as any
 * retain is outstanding. */

static CUresult device_of(struct gp_worker *w, uint64_t ordinal, CUdevice *dev)
{
	if (ordinal >= (uint64_t)w->ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return w->drv.cuDeviceGet(dev, (int)ordinal);
}

CUresult gp__primary_retain(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout)
{
	struct gp_handle *h;
	CUcontext ctx;
	CUdevice dev;
	CUresult r = device_of(w, a[0], &dev);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuDevicePrimaryCtxRetain, &ctx, dev);
	if (r != CUDA_SUCCESS)
		return r;
	h = gp__handle_get(w, w->primary[a[0]], GP_H_CTX);
	if (!h) {
		w->primary[a[0]] = gp__handle_new(w, GP_H_CTX, ctx);
		h = gp__handle_get(w, w->primary[a[0]], GP_H_CTX);
		if (!h) {
			w->drv.cuDevicePrimaryCtxRelease_v2(dev);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		h->device = (int)a[0];
		h->primary = true;
	}
	h->ptr = ctx;
	w->primary_refs[a[0]]++;
	out[0] = w->primary[a[0]];
	*nout = 1;
	return CUDA_SUCCESS;
}

CUresult gp__primary_release(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			     uint64_t *out, size_t *nout)
{
	CUdevice dev;
	CUresult r = device_of(w, a[0], &dev);

	if (r != CUDA_SUCCESS)
		return r;
	if (w->primary_refs[a[0]] == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = GP_DRV(w, cuDevicePrimaryCtxRelease_v2, dev);
	if (r != CUDA_SUCCESS)
		return r;
	if (--w->primary_refs[a[0]] == 0) {
		/* The driver destroyed it, and with it all it held. */
		struct gp_handle *h = gp__handle_get(w, w->primary[a[0]], GP_H_CTX);

		if (h && w->current == h->ptr)
			w->current = NULL;
		gp__forget_ctx(w, w->primary[a[0]]);
		gp__handle_release(w, w->primary[a[0]]);
		w->primary[a[0]] = 0;
	}
	return CUDA_SUCCESS;
}

CUresult gp__primary_reset(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	CUdevice dev;
	CUresult r = device_of(w, a[0], &dev);

	if (r != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuDevicePrimaryCtxReset_v2, dev);
	if (r != CUDA_SUCCESS)
		return r;
	/* Everything the primary context held is gone, its limits included; its handle stays
	 * for its retainers. */
	if (w->primary[a[0]]) {
		struct gp_handle *ph = gp__handle_get(w, w->primary[a[0]], GP_H_CTX);

		gp__forget_ctx(w, w->primary[a[0]]);
		if (ph) {
			for (int i = 0; i < 3; i++) {
				gp__charge(w, ph->device, -(int64_t)ph->limit_charge[i]);
				ph->limit_charge[i] = 0;
			}
		}
	}
	w->current = NULL;
	return CUDA_SUCCESS;
}

CUresult gp__primary_set_flags(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			       uint64_t *out, size_t *nout)
{
	CUdevice dev;
	CUresult r = device_of(w, a[0], &dev);

	return r != CUDA_SUCCESS ? r
				 : GP_DRV(w, cuDevicePrimaryCtxSetFlags_v2, dev, (unsigned)a[1]);
}

/* ---- limits ---------------------------------------------------------------- */

CUresult gp__ctx_get_limit(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	size_t v = 0;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuCtxGetLimit, &v, (CUlimit)a[1]);
	out[0] = v;
	*nout = 1;
	return r;
}

/*
 * Limits that size device memory are counted against the session's limit: the malloc
 * heap and the printf buffer as asked, the stack as asked times the threads that can be
 * resident at once (what the driver must reserve). The others cost no memory.
 */
CUresult gp__ctx_set_limit(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	uint64_t cost = 0;
	int slot = -1, sms = 0, per_sm = 0;
	CUdevice dev;
	CUresult r = gp__use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	switch ((CUlimit)a[1]) {
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		slot = 0;
		cost = a[2];
		break;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
		slot = 1;
		cost = a[2];
		break;
	case CU_LIMIT_STACK_SIZE:
		slot = 2;
		r = w->drv.cuDeviceGet(&dev, ctx->device);
		if (r == CUDA_SUCCESS)
			r = w->drv.cuDeviceGetAttribute(
				&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
		if (r == CUDA_SUCCESS)
			r = w->drv.cuDeviceGetAttribute(
				&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
		if (r != CUDA_SUCCESS)
			return r;
		if (a[2] > UINT64_MAX / ((uint64_t)sms * (uint64_t)per_sm + 1))
			return CUDA_ERROR_OUT_OF_MEMORY;
		cost = a[2] * (uint64_t)sms * (uint64_t)per_sm;
		break;
	default:
		break;
	}
	if (slot >= 0 && cost > ctx->limit_charge[slot] &&
	    !gp__charge_fits(w, ctx->device, cost - ctx->limit_charge[slot]))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuCtxSetLimit, (CUlimit)a[1], (size_t)a[2]);
	if (r == CUDA_SUCCESS && slot >= 0) {
		gp__charge(w, ctx->device, (int64_t)(cost - ctx->limit_charge[slot]));
		ctx->limit_charge[slot] = cost;
	}
	return r;
}

CUresult gp__ctx_stream_priorities(struct gp_worker *w, const struct gp_frame_hdr *f,
				   const uint64_t *a, uint64_t *out, size_t *nout)
{
	int least = 0, greatest = 0;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuCtxGetStreamPriorityRange, &least, &greatest);
	out[0] = (uint64_t)(int64_t)least;
	out[1] = (uint64_t)(int64_t)greatest;
	*nout = 2;
	return r;
}
