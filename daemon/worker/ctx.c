/* ctx.c -- contexts the session creates, and the devices' primary contexts. */
#include "worker.h"

/*
 * A new context already holds device memory: its default malloc heap (8 MiB on NVIDIA's
 * driver) and printf buffer. Measured with cuCtxGetLimit while the context is current and
 * charged as the limits it holds (limit_charge), so cuCtxSetLimit later charges only the
 * difference; a context they do not fit in is refused. Returns what was charged in total.
 */
static const CUlimit default_limits[2] = {CU_LIMIT_MALLOC_HEAP_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE};

static CUresult charge_default_limits(struct gp_worker *w, uint64_t id, uint64_t charged[2])
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_CTX);
	uint64_t cost = 0;

	for (int i = 0; i < 2; i++) {
		size_t v = 0;
		CUresult r = GP_DRV(w, cuCtxGetLimit, &v, default_limits[i]);

		if (r != CUDA_SUCCESS)
			return r; /* what it costs cannot be told: not allowed */
		charged[i] = v;
		if (v > UINT64_MAX - cost)
			return CUDA_ERROR_OUT_OF_MEMORY;
		cost += v;
	}
	if (!h || !gp__charge_fits(w, h->device, cost))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < 2; i++) {
		h->limit_charge[i] = charged[i];
		gp__charge(w, h->device, (int64_t)charged[i]);
	}
	return CUDA_SUCCESS;
}

CUresult gp__serve_ctx_create(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_ctx_create *a, struct gp_out_ctx_create *o)
{
	CUcontext ctx;
	CUresult r;
	uint64_t id;
	unsigned n = 0;

	for (uint32_t i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind == GP_H_CTX && !w->handles[i].primary)
			n++;
	if (n >= w->caps.contexts)
		return CUDA_ERROR_OUT_OF_MEMORY; /* max_contexts: each costs device memory */
	r = w->drv.cuCtxCreate_v4(&ctx, NULL, a->flags, a->device_drv);
	if (r != CUDA_SUCCESS)
		return r;
	w->current = ctx;
	id = gp__handle_new(w, GP_H_CTX, ctx);
	if (!id) {
		w->drv.cuCtxDestroy_v2(ctx);
		w->current = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_CTX)->device = (int)a->device;
	r = charge_default_limits(w, id, (uint64_t[2]){0});
	if (r != CUDA_SUCCESS) {
		gp__handle_release(w, id);
		w->drv.cuCtxDestroy_v2(ctx);
		w->current = NULL;
		return r;
	}
	o->ctx = id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_ctx_destroy(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_ctx_destroy *a, struct gp_out_ctx_destroy *o)
{
	struct gp_handle *h = gp__handle_get(w, a->ctx, GP_H_CTX);
	CUcontext ctx;

	if (!h || h->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	/* The driver waits for the context's work before it destroys it: a waiter thread makes
	 * the call and answers (waits.c). All the context held is the session's no more. */
	ctx = h->ptr;
	if (w->current == ctx) {
		w->current = NULL;
		w->drv.cuCtxSetCurrent(NULL);
	}
	gp__staging_forget(ctx);
	gp__forget_ctx(w, a->ctx);
	gp__handle_release(w, a->ctx);
	rq->wait = (struct gp_wait){.kind = GP_WAIT_CTX_DESTROY, .ctx = ctx};
	return CUDA_SUCCESS;
}

CUresult gp__serve_ctx_synchronize(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_ctx_synchronize *a,
				   struct gp_out_ctx_synchronize *o)
{
	/* Already idle: answered here, without a thread's hand-over (exec.c); the pools'
	 * trim at a synchronize is charged anew first, as a waiter does (waits.c). */
	if (gp__ctx_idle(w, a->ctx))
		return gp__synchronized(w, w->drv.cuCtxSynchronize());
	/* A waiter thread waits and answers (waits.c). */
	rq->wait = (struct gp_wait){.kind = GP_WAIT_CTX, .ctx = w->current};
	return CUDA_SUCCESS;
}

/* ---- primary contexts --------------------------------------------------------
 * The worker retains a device's primary context once per client retain, as the
 * driver counts them, and keeps one handle per device for as long as any
 * retain is outstanding. */

CUresult gp__serve_primary_retain(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_primary_retain *a,
				  struct gp_out_primary_retain *o)
{
	uint64_t d = a->device;
	struct gp_handle *h;
	CUcontext ctx;
	CUresult r;

	/* Retained while the driver is still to destroy it (a waiter has the last release), it
	 * would outlive its release with nothing of it the session's: refused until then. */
	if (w->primary_ending[d])
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	r = GP_DRV(w, cuDevicePrimaryCtxRetain, &ctx, a->device_drv);
	if (r != CUDA_SUCCESS)
		return r;
	h = gp__handle_get(w, w->primary[d], GP_H_CTX);
	if (!h) {
		w->primary[d] = gp__handle_new(w, GP_H_CTX, ctx);
		h = gp__handle_get(w, w->primary[d], GP_H_CTX);
		if (!h) {
			GP_DRV(w, cuDevicePrimaryCtxRelease_v2, a->device_drv);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		h->device = (int)d;
		h->primary = true;
		/* Its default limits are measured with it current, then the client's current
		 * context is the driver's again. */
		r = w->drv.cuCtxSetCurrent(ctx);
		if (r == CUDA_SUCCESS)
			r = charge_default_limits(w, w->primary[d], w->primary_limits[d]);
		if (w->current != ctx)
			w->drv.cuCtxSetCurrent(w->current);
		if (r != CUDA_SUCCESS) {
			gp__handle_release(w, w->primary[d]);
			w->primary[d] = 0;
			GP_DRV(w, cuDevicePrimaryCtxRelease_v2, a->device_drv);
			return r;
		}
	}
	h->ptr = ctx;
	w->primary_refs[d]++;
	o->ctx = w->primary[d];
	return CUDA_SUCCESS;
}

CUresult gp__serve_primary_release(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_primary_release *a,
				   struct gp_out_primary_release *o)
{
	uint64_t d = a->device;
	struct gp_handle *h;

	if (w->primary_refs[d] == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (w->primary_ending[d])
		return CUDA_ERROR_CONTEXT_IS_DESTROYED; /* a reset is under way */
	if (w->primary_refs[d] > 1) {
		CUresult r = GP_DRV(w, cuDevicePrimaryCtxRelease_v2, a->device_drv);

		if (r == CUDA_SUCCESS)
			w->primary_refs[d]--;
		return r;
	}
	/* The last release: the driver waits for the context's work, then destroys it and all
	 * it held. A waiter thread makes the call and answers (waits.c); the context is the
	 * session's no more from now on. */
	h = gp__handle_get(w, w->primary[d], GP_H_CTX);
	if (h && w->current == h->ptr) {
		w->current = NULL;
		w->drv.cuCtxSetCurrent(NULL);
	}
	w->primary_refs[d] = 0;
	if (h)
		gp__staging_forget(h->ptr);
	gp__forget_ctx(w, w->primary[d]);
	gp__handle_release(w, w->primary[d]);
	w->primary[d] = 0;
	w->primary_ending[d] = true;
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_PRIMARY_RELEASE, .device = a->device_drv, .session_device = (int)d};
	return CUDA_SUCCESS;
}

CUresult gp__serve_primary_reset(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_primary_reset *a,
				 struct gp_out_primary_reset *o)
{
	uint64_t d = a->device;

	/* The driver waits for the context's work before it resets it: a waiter thread makes
	 * the call and answers (waits.c). Everything the primary context held is the session's
	 * no more from now on, its limits back to their defaults (still charged, as when it was
	 * first retained); its handle stays for its retainers. */
	if (w->primary_ending[d])
		return CUDA_ERROR_CONTEXT_IS_DESTROYED; /* a release or reset is under way */
	w->primary_ending[d] = true;
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_PRIMARY_RESET, .device = a->device_drv, .session_device = (int)d};
	if (w->primary[d]) {
		struct gp_handle *ph = gp__handle_get(w, w->primary[d], GP_H_CTX);

		if (ph)
			gp__staging_forget(ph->ptr);
		gp__forget_ctx(w, w->primary[d]);
		ph = gp__handle_get(w, w->primary[d], GP_H_CTX);
		if (ph) {
			for (int i = 0; i < 3; i++) {
				uint64_t keep = i < 2 ? w->primary_limits[d][i] : 0;

				gp__charge(w, ph->device,
					   (int64_t)keep - (int64_t)ph->limit_charge[i]);
				ph->limit_charge[i] = keep;
			}
		}
	}
	w->current = NULL;
	return CUDA_SUCCESS;
}

CUresult gp__serve_primary_set_flags(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_primary_set_flags *a,
				     struct gp_out_primary_set_flags *o)
{
	return GP_DRV(w, cuDevicePrimaryCtxSetFlags_v2, a->device_drv, a->flags);
}

/* ---- limits ---------------------------------------------------------------- */

CUresult gp__serve_ctx_get_limit(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_ctx_get_limit *a,
				 struct gp_out_ctx_get_limit *o)
{
	size_t v = 0;
	CUresult r = GP_DRV(w, cuCtxGetLimit, &v, (CUlimit)a->limit);

	o->value = v;
	return r;
}

/*
 * Limits that size device memory are counted against the session's limit: the malloc
 * heap and the printf buffer as asked, the stack as asked times the threads that can be
 * resident at once (what the driver must reserve). The others cost no memory.
 */
CUresult gp__serve_ctx_set_limit(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_ctx_set_limit *a,
				 struct gp_out_ctx_set_limit *o)
{
	struct gp_handle *ctx = gp__handle_get(w, a->ctx, GP_H_CTX);
	uint64_t cost = 0;
	int slot = -1, sms = 0, per_sm = 0;
	CUdevice dev;
	CUresult r;

	switch ((CUlimit)a->limit) {
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		slot = 0;
		cost = a->value;
		break;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
		slot = 1;
		cost = a->value;
		break;
	case CU_LIMIT_STACK_SIZE:
		slot = 2;
		r = w->drv.cuDeviceGet(&dev, a->ctx_dev);
		if (r == CUDA_SUCCESS)
			r = w->drv.cuDeviceGetAttribute(
				&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
		if (r == CUDA_SUCCESS)
			r = w->drv.cuDeviceGetAttribute(
				&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
		if (r != CUDA_SUCCESS)
			return r;
		if (a->value > UINT64_MAX / ((uint64_t)sms * (uint64_t)per_sm + 1))
			return CUDA_ERROR_OUT_OF_MEMORY;
		cost = a->value * (uint64_t)sms * (uint64_t)per_sm;
		break;
	default:
		break;
	}
	if (slot >= 0 && cost > ctx->limit_charge[slot] &&
	    !gp__charge_fits(w, ctx->device, cost - ctx->limit_charge[slot]))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuCtxSetLimit, (CUlimit)a->limit, (size_t)a->value);
	if (r == CUDA_SUCCESS && slot >= 0) {
		gp__charge(w, ctx->device, (int64_t)(cost - ctx->limit_charge[slot]));
		ctx->limit_charge[slot] = cost;
	}
	return r;
}

CUresult gp__serve_ctx_stream_priorities(struct gp_worker *w, struct gp_req *rq,
					 const struct gp_wargs_ctx_stream_priorities *a,
					 struct gp_out_ctx_stream_priorities *o)
{
	int least = 0, greatest = 0;
	CUresult r = GP_DRV(w, cuCtxGetStreamPriorityRange, &least, &greatest);

	o->least = (uint64_t)(int64_t)least;
	o->greatest = (uint64_t)(int64_t)greatest;
	return r;
}
