/* exec.c -- kernel launches (and the tensor maps they take), streams and events. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

/* Parameters a launch points at from its own stack; a kernel with more costs an allocation. */
#define ARGS_LOCAL 64

/* kernelParams pointing into the request's buffer, which must hold every parameter the
 * kernel reads: in local (ARGS_LOCAL entries) when they fit, else calloc'd (freed by
 * free_args); *args NULL for a kernel without parameters. */
static CUresult launch_args(const struct gp_fn_info *fi, const uint8_t *params, size_t len,
			    void **local, void ***args)
{
	*args = NULL;
	if (!fi || len < fi->param_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (fi->nparams) {
		*args = fi->nparams <= ARGS_LOCAL ? local : calloc(fi->nparams, sizeof(**args));
		if (!*args)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (uint32_t i = 0; i < fi->nparams; i++)
			(*args)[i] = (void *)(params + fi->offset[i]);
	}
	return CUDA_SUCCESS;
}

static void free_args(void **args, void **local)
{
	if (args != local)
		free(args);
}

CUresult gp__serve_launch(struct gp_worker *w, struct gp_req *rq, const struct gp_wargs_launch *a,
			  struct gp_out_launch *o)
{
	void *local[ARGS_LOCAL], **args;
	CUresult r = launch_args(a->func_info, a->params, a->params_len, local, &args);

	if (r != CUDA_SUCCESS)
		return r;
	gp__share_gate(w, a->stream_drv);
	r = w->drv.cuLaunchKernel(a->func_drv, a->grid_x, a->grid_y, a->grid_z, a->block_x,
				  a->block_y, a->block_z, a->shared_mem, a->stream_drv, args, NULL);
	free_args(args, local);
	return r;
}

/*
 * cuLaunchKernelEx with the attributes the client gave: the driver checks them as it would
 * for a local program (a cooperative grid too large, clusters on a device without them).
 * Only an access policy window names memory; it must be the session's, though the driver
 * only uses it as a cache hint.
 */
CUresult gp__serve_launch_ex(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_launch_ex *a, struct gp_out_launch_ex *o)
{
	CUlaunchAttribute attr[5];
	CUlaunchConfig cfg = {.gridDimX = a->grid_x,
			      .gridDimY = a->grid_y,
			      .gridDimZ = a->grid_z,
			      .blockDimX = a->block_x,
			      .blockDimY = a->block_y,
			      .blockDimZ = a->block_z,
			      .sharedMemBytes = a->shared_mem,
			      .hStream = a->stream_drv,
			      .attrs = attr};
	void *local[ARGS_LOCAL], **args;
	CUresult r;

	if (a->attrs & ~(GP_LA_COOPERATIVE | GP_LA_PRIORITY | GP_LA_CLUSTER_DIM |
			 GP_LA_CLUSTER_POLICY | GP_LA_ACCESS_WINDOW))
		return CUDA_ERROR_INVALID_VALUE;
	memset(attr, 0, sizeof(attr));
	if (a->attrs & GP_LA_COOPERATIVE) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[cfg.numAttrs++].value.cooperative = (int)(a->cooperative != 0);
	}
	if (a->attrs & GP_LA_PRIORITY) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		attr[cfg.numAttrs++].value.priority = a->priority;
	}
	if (a->attrs & GP_LA_CLUSTER_DIM) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[cfg.numAttrs].value.clusterDim.x = a->cluster_x;
		attr[cfg.numAttrs].value.clusterDim.y = a->cluster_y;
		attr[cfg.numAttrs++].value.clusterDim.z = a->cluster_z;
	}
	if (a->attrs & GP_LA_CLUSTER_POLICY) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
		attr[cfg.numAttrs++].value.clusterSchedulingPolicyPreference =
			(CUclusterSchedulingPolicy)a->cluster_policy;
	}
	if (a->attrs & GP_LA_ACCESS_WINDOW) {
		CUaccessPolicyWindow *win = &attr[cfg.numAttrs].value.accessPolicyWindow;
		float ratio;

		if (a->window_bytes && !gp_owner_range(&w->own, a->window_base, a->window_bytes))
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(&ratio, &a->window_hit_ratio, sizeof(ratio));
		attr[cfg.numAttrs++].id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
		win->base_ptr = (void *)(uintptr_t)a->window_base;
		win->num_bytes = a->window_bytes;
		win->hitRatio = ratio;
		win->hitProp = (CUaccessProperty)a->window_hit_prop;
		win->missProp = (CUaccessProperty)a->window_miss_prop;
	}
	r = launch_args(a->func_info, a->params, a->params_len, local, &args);
	if (r != CUDA_SUCCESS)
		return r;
	gp__share_gate(w, cfg.hStream);
	r = GP_DRV(w, cuLaunchKernelEx, &cfg, a->func_drv, args, NULL);
	free_args(args, local);
	return r;
}

/* ---- tensor maps --------------------------------------------------------------- */

/* Bytes per 16 elements of each CUtensorMapDataType cuda.h 13.0 knows (sub-byte types pack). */
static const uint8_t tensor_bytes16[] = {16,  32, 64, 64, 128, 128, 32, 64,
					 128, 32, 64, 64, 64,  8,   16, 16};

/* The bytes the tensor spans from its base, or 0 when the description is impossible. */
static uint64_t tensor_extent(const struct gp_tensor_desc *d)
{
	uint64_t end, last;

	if (d->data_type >= sizeof(tensor_bytes16) || d->rank < 1 || d->rank > 5)
		return 0;
	for (uint32_t i = 0; i < d->rank; i++)
		if (d->dim[i] == 0 || d->dim[i] > (1ull << 32))
			return 0; /* CUDA's limit: at most 2^32 elements a dimension */
	/* dimension 0 is packed; each further one adds (dim - 1) strides */
	end = (d->dim[0] * tensor_bytes16[d->data_type] + 15) / 16;
	for (uint32_t i = 1; i < d->rank; i++) {
		if (d->stride[i - 1] >= (1ull << 40))
			return 0; /* CUDA's limit: strides below 2^40 */
		/* may wrap: checked below */
		last = (d->dim[i] - 1) * d->stride[i - 1];
		if (d->dim[i] - 1 && last / (d->dim[i] - 1) != d->stride[i - 1])
			return 0;
		if (end + last < end)
			return 0;
		end += last;
	}
	return end;
}

static const uint8_t *tensor_map_read(void *arg, uint64_t off, size_t n, int *err)
{
	*err = 0;
	return (const uint8_t *)arg + off;
}

/*
 * A tensor map is encoded on the host by the driver; only the pool's driver knows the
 * encoding of its GPU, so it runs here. The map holds the tensor's address, which must lie
 * in the session's memory with the whole tensor the description spans.
 */
CUresult gp__serve_tensor_map_encode(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_tensor_map_encode *a,
				     struct gp_out_tensor_map_encode *o)
{
	struct gp_tensor_desc d;
	CUtensorMap map;
	struct gp_bulk_source src = {.read = tensor_map_read, .arg = &map};
	uint64_t bytes;
	CUresult r;
	int ret;

	_Static_assert(sizeof(map) == GP_TENSOR_MAP_BYTES, "CUtensorMap is 128 bytes");
	if (a->desc_len != sizeof(d) || a->map_len != sizeof(map) || a->kind > 1)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&d, a->desc, sizeof(d));
	bytes = tensor_extent(&d);
	if (bytes == 0 || !gp_owner_range(&w->own, a->global, bytes))
		return CUDA_ERROR_INVALID_VALUE;
	memset(&map, 0, sizeof(map));
	if (a->kind == 0)
		r = GP_DRV(w, cuTensorMapEncodeTiled, &map, (CUtensorMapDataType)d.data_type,
			   d.rank, (void *)(uintptr_t)a->global, d.dim, d.stride, d.box,
			   d.elem_stride, (CUtensorMapInterleave)d.interleave,
			   (CUtensorMapSwizzle)d.swizzle, (CUtensorMapL2promotion)d.l2_promotion,
			   (CUtensorMapFloatOOBfill)d.oob_fill);
	else if (d.rank < 3)
		r = CUDA_ERROR_INVALID_VALUE; /* im2col: at least one spatial dimension */
	else
		r = GP_DRV(w, cuTensorMapEncodeIm2col, &map, (CUtensorMapDataType)d.data_type,
			   d.rank, (void *)(uintptr_t)a->global, d.dim, d.stride, d.lower, d.upper,
			   d.channels, d.pixels, d.elem_stride, (CUtensorMapInterleave)d.interleave,
			   (CUtensorMapSwizzle)d.swizzle, (CUtensorMapL2promotion)d.l2_promotion,
			   (CUtensorMapFloatOOBfill)d.oob_fill);
	if (r != CUDA_SUCCESS)
		return r;
	gp_conn_send_lock(w->client);
	ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, sizeof(map), &src);
	gp_conn_send_unlock(w->client);
	if (ret) {
		rq->err = ret;
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
}

/* ---- streams ------------------------------------------------------------------ */

CUresult gp__serve_stream_create(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_stream_create *a,
				 struct gp_out_stream_create *o)
{
	CUstream s;
	uint64_t id;
	CUresult r;

	if (gp_owner_count(&w->own, GP_H_STREAM) >= w->caps.streams)
		return CUDA_ERROR_OUT_OF_MEMORY; /* max_streams: each holds driver memory */
	r = GP_DRV(w, cuStreamCreateWithPriority, &s, a->flags, a->priority);
	if (r != CUDA_SUCCESS)
		return r;
	id = gp__handle_new(w, GP_H_STREAM, s);
	if (!id) {
		GP_DRV(w, cuStreamDestroy_v2, s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_STREAM)->parent = a->ctx;
	o->stream = id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_stream_destroy(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_stream_destroy *a,
				  struct gp_out_stream_destroy *o)
{
	CUresult r;

	if (!gp__handle_get(w, a->stream, GP_H_STREAM))
		return CUDA_ERROR_INVALID_HANDLE; /* a default stream cannot be destroyed */
	/* The driver waits for the stream's work: a waiter thread makes the call and answers;
	 * the handle is gone from now on. */
	gp__handle_release(w, a->stream);
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_STREAM_DESTROY, .ctx = w->current, .stream = a->stream_drv};
	(void)r;
	return CUDA_SUCCESS;
}

CUresult gp__synchronized(struct gp_worker *w, CUresult r)
{
	gp__pools_refresh(w, -1);
	return r;
}

/*
 * Whether the context's work is all done: no waiter is busy, and the context's default
 * streams and every stream of the session in it say so. Then a synchronize returns at
 * once, and the main thread can make it itself without a waiter thread's hand-over. A
 * session with very many streams is left to a waiter.
 */
#define IDLE_SCAN_STREAMS 64

bool gp__ctx_idle(struct gp_worker *w, uint64_t ctx)
{
	uint32_t seen = 0;

	if (gp__waits_busy() || gp_owner_count(&w->own, GP_H_STREAM) > IDLE_SCAN_STREAMS)
		return false;
	if (GP_DRV(w, cuStreamQuery, CU_STREAM_LEGACY) != CUDA_SUCCESS ||
	    GP_DRV(w, cuStreamQuery, CU_STREAM_PER_THREAD) != CUDA_SUCCESS)
		return false;
	for (uint32_t i = 0; i < w->nhandles && seen < w->live[GP_H_STREAM]; i++) {
		const struct gp_handle *h = &w->handles[i];

		if (h->kind != GP_H_STREAM)
			continue;
		seen++;
		if (h->parent == ctx && GP_DRV(w, cuStreamQuery, h->ptr) != CUDA_SUCCESS)
			return false;
	}
	return true;
}

CUresult gp__serve_stream_synchronize(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_stream_synchronize *a,
				      struct gp_out_stream_synchronize *o)
{
	/* The per-thread default stream is this thread's: waited for here. Any other is waited
	 * for by a waiter thread, which answers (waits.c). */
	if (a->stream_drv == CU_STREAM_PER_THREAD)
		return gp__synchronized(w, GP_DRV(w, cuStreamSynchronize, a->stream_drv));
	/* Already idle: answered here, without a thread's hand-over. */
	if (GP_DRV(w, cuStreamQuery, a->stream_drv) == CUDA_SUCCESS)
		return gp__synchronized(w, GP_DRV(w, cuStreamSynchronize, a->stream_drv));
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_STREAM, .ctx = w->current, .stream = a->stream_drv};
	return CUDA_SUCCESS;
}

CUresult gp__serve_stream_query(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_stream_query *a,
				struct gp_out_stream_query *o)
{
	return GP_DRV(w, cuStreamQuery, a->stream_drv);
}

CUresult gp__serve_stream_wait_event(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_stream_wait_event *a,
				     struct gp_out_stream_wait_event *o)
{
	return GP_DRV(w, cuStreamWaitEvent, a->stream_drv, a->event_drv, a->flags);
}

/* ---- events --------------------------------------------------------------------- */

CUresult gp__serve_event_create(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_event_create *a,
				struct gp_out_event_create *o)
{
	CUevent e;
	uint64_t id;
	CUresult r;

	if (gp_owner_count(&w->own, GP_H_EVENT) >= w->caps.events)
		return CUDA_ERROR_OUT_OF_MEMORY; /* max_events */
	r = GP_DRV(w, cuEventCreate, &e, a->flags);
	if (r != CUDA_SUCCESS)
		return r;
	id = gp__handle_new(w, GP_H_EVENT, e);
	if (!id) {
		GP_DRV(w, cuEventDestroy_v2, e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_EVENT)->parent = a->ctx;
	o->event = id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_event_destroy(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_event_destroy *a,
				 struct gp_out_event_destroy *o)
{
	CUresult r = GP_DRV(w, cuEventDestroy_v2, a->event_drv);

	if (r == CUDA_SUCCESS)
		gp__handle_release(w, a->event);
	return r;
}

CUresult gp__serve_event_record(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_event_record *a,
				struct gp_out_event_record *o)
{
	return GP_DRV(w, cuEventRecord, a->event_drv, a->stream_drv);
}

CUresult gp__serve_event_synchronize(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_event_synchronize *a,
				     struct gp_out_event_synchronize *o)
{
	if (GP_DRV(w, cuEventQuery, a->event_drv) == CUDA_SUCCESS)
		return gp__synchronized(w, GP_DRV(w, cuEventSynchronize, a->event_drv));
	rq->wait =
		(struct gp_wait){.kind = GP_WAIT_EVENT, .ctx = w->current, .event = a->event_drv};
	return CUDA_SUCCESS;
}

CUresult gp__serve_event_query(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_event_query *a, struct gp_out_event_query *o)
{
	return GP_DRV(w, cuEventQuery, a->event_drv);
}

CUresult gp__serve_event_elapsed(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_event_elapsed *a,
				 struct gp_out_event_elapsed *o)
{
	float ms = 0;
	uint32_t bits;
	CUresult r = GP_DRV(w, cuEventElapsedTime_v2, &ms, a->start_drv, a->end_drv);

	memcpy(&bits, &ms, sizeof(bits));
	o->ms_bits = bits;
	return r;
}
