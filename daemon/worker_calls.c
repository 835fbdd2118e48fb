/* worker_calls.c -- execute the client's calls on the driver, checking ownership first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

/* ---- replies and deferred errors ---------------------------------------- */

static void fill_deferred(struct gp_worker *w, Gp__DeferredError *d)
{
	d->result = w->deferred_result;
	d->request_id = w->deferred_request;
	d->type = w->deferred_type;
	w->has_deferred = false;
}

/* A call sent without waiting failed: keep the first such error for the next reply. */
static void defer_error(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r)
{
	gp_log_debug("deferred %s from %s (request %llu)", gp_driver_err_name(&w->drv, r),
		     gp_msg_name(h->type), (unsigned long long)h->request_id);
	if (w->has_deferred)
		return;
	w->has_deferred = true;
	w->deferred_result = (int32_t)r;
	w->deferred_request = h->request_id;
	w->deferred_type = h->type;
}

static int send_reply(struct gp_worker *w, const struct gp_frame_hdr *h, CUresult r,
		      const uint64_t *out, size_t nout, const char *message)
{
	Gp__Reply rep = GP__REPLY__INIT;
	Gp__DeferredError d = GP__DEFERRED_ERROR__INIT;

	if (h->flags & GP_F_NO_REPLY) {
		if (r != CUDA_SUCCESS)
			defer_error(w, h, r);
		return 0;
	}
	rep.result = (int32_t)r;
	rep.n_out = nout;
	rep.out = (uint64_t *)out;
	if (message)
		rep.message = (char *)message;
	if (w->has_deferred) {
		fill_deferred(w, &d);
		rep.deferred = &d;
	}
	return gp_conn_send(w->client, GP_MSG_REPLY, 0, h->request_id, &rep.base, NULL, 0);
}

/* ---- helpers ------------------------------------------------------------ */

/* Makes the session's context `id` current; INVALID_CONTEXT if it is not ours. */
static CUresult use_ctx(struct gp_worker *w, uint64_t id, struct gp_handle **out)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_CTX);
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (w->current != h->ptr) {
		r = w->drv.cuCtxSetCurrent(h->ptr);
		if (r != CUDA_SUCCESS)
			return r;
		w->current = h->ptr;
	}
	if (out)
		*out = h;
	return CUDA_SUCCESS;
}

typedef CUresult (*sink_fn)(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p,
			    size_t n);

/*
 * Reads the bulk of a request: the bytes in its own frame, then DATA frames
 * with the same id until one without GP_F_MORE. Every piece goes to sink; if
 * the sink fails the rest is still read (the stream stays in step) and the
 * first failure is returned in *res. Returns a negative code when the client
 * broke the protocol: the session then ends.
 */
static int recv_bulk(struct gp_worker *w, const struct gp_frame_hdr *first, uint64_t total,
		     sink_fn sink, void *arg, CUresult *res)
{
	struct gp_frame_hdr h = *first;
	uint64_t got = 0;
	int ret;

	*res = CUDA_SUCCESS;
	for (;;) {
		uint32_t left = h.bulk_len;

		if (h.bulk_len > total - got) {
			gp_log_warnx("bulk of request %llu exceeds its %llu bytes",
				     (unsigned long long)first->request_id,
				     (unsigned long long)total);
			return GP_EFRAME;
		}
		while (left > 0) {
			size_t n = left < GP_FRAME_BULK_MAX ? left : GP_FRAME_BULK_MAX;

			ret = gp_conn_read(w->client, w->staging, n);
			if (ret)
				return ret;
			if (*res == CUDA_SUCCESS && sink)
				*res = sink(w, arg, got, w->staging, n);
			got += n;
			left -= (uint32_t)n;
		}
		if (!(h.flags & GP_F_MORE))
			break;
		ret = gp_conn_recv(w->client, &h);
		if (ret)
			return ret;
		if (h.type != GP_MSG_DATA || h.request_id != first->request_id || h.msg_len != 0) {
			gp_log_warnx("expected DATA for request %llu, got %s",
				     (unsigned long long)first->request_id,
				     gp_msg_name(h.type) ? gp_msg_name(h.type) : "unknown type");
			return GP_ETYPE;
		}
	}
	if (got != total) {
		gp_log_warnx("request %llu carried %llu of %llu bytes",
			     (unsigned long long)first->request_id, (unsigned long long)got,
			     (unsigned long long)total);
		return GP_EFRAME;
	}
	return 0;
}

static Gp__Call *unpack_call(struct gp_worker *w, const struct gp_frame_hdr *h, size_t nargs)
{
	Gp__Call *c = gp__call__unpack(NULL, h->msg_len, w->client->msg);

	if (!c) {
		gp_log_warnx("%s: body does not decode", gp_msg_name(h->type));
		return NULL;
	}
	if (c->n_arg != nargs) {
		gp_log_warnx("%s: %zu arguments, expected %zu", gp_msg_name(h->type), c->n_arg,
			     nargs);
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return NULL;
	}
	return c;
}

/* ---- contexts ------------------------------------------------------------ */

static CUresult ctx_create(struct gp_worker *w, const uint64_t *a, uint64_t *out, size_t *nout)
{
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	uint64_t id;

	if (a[0] >= (uint64_t)w->ndev)
		return CUDA_ERROR_INVALID_DEVICE;
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

/* Forget everything that belonged to a context the driver has destroyed. */
static void forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	for (size_t i = w->nallocs; i-- > 0;)
		if (w->allocs[i].ctx == ctx)
			gp__alloc_remove(w, &w->allocs[i]);
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];
		uint64_t id = (uint64_t)h->kind << 56 | (uint64_t)h->gen << 32 | (i + 1);

		if (h->kind && h->kind != GP_H_CTX && h->parent == ctx) {
			if (h->kind == GP_H_MODULE)
				free(h->aux);
			gp__handle_release(w, id);
		}
	}
}

static CUresult ctx_destroy(struct gp_worker *w, const uint64_t *a, uint64_t *out, size_t *nout)
{
	struct gp_handle *h = gp__handle_get(w, a[0], GP_H_CTX);
	CUresult r;

	if (!h)
		return CUDA_ERROR_INVALID_CONTEXT;
	r = w->drv.cuCtxDestroy_v2(h->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (w->current == h->ptr)
		w->current = NULL;
	forget_ctx(w, a[0]);
	gp__handle_release(w, a[0]);
	return CUDA_SUCCESS;
}

static CUresult ctx_synchronize(struct gp_worker *w, const uint64_t *a, uint64_t *out,
				size_t *nout)
{
	CUresult r = use_ctx(w, a[0], NULL);

	return r != CUDA_SUCCESS ? r : w->drv.cuCtxSynchronize();
}

/* ---- memory ---------------------------------------------------------------- */

static CUresult mem_alloc(struct gp_worker *w, const uint64_t *a, uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	CUdeviceptr p;
	CUresult r = use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	if (a[1] == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (w->mem_limit && (a[1] > w->mem_limit || w->dev_used[ctx->device] > w->mem_limit - a[1]))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = w->drv.cuMemAlloc_v2(&p, (size_t)a[1]);
	if (r != CUDA_SUCCESS)
		return r;
	if (gp__alloc_add(w, p, (size_t)a[1], a[0], ctx->device)) {
		w->drv.cuMemFree_v2(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	out[0] = p;
	*nout = 1;
	return CUDA_SUCCESS;
}

static CUresult mem_free(struct gp_worker *w, const uint64_t *a, uint64_t *out, size_t *nout)
{
	struct gp_alloc *al;
	CUresult r = use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	al = gp__alloc_find(w, (CUdeviceptr)a[1]);
	if (!al || al->ptr != a[1])
		return CUDA_ERROR_INVALID_VALUE;
	r = w->drv.cuMemFree_v2(al->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	gp__alloc_remove(w, al);
	return CUDA_SUCCESS;
}

static CUresult mem_get_info(struct gp_worker *w, const uint64_t *a, uint64_t *out, size_t *nout)
{
	struct gp_handle *ctx;
	size_t fr, tot;
	CUresult r = use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	r = w->drv.cuMemGetInfo_v2(&fr, &tot);
	if (r != CUDA_SUCCESS)
		return r;
	if (w->mem_limit && w->mem_limit < tot) {
		uint64_t room = w->mem_limit - w->dev_used[ctx->device];

		tot = w->mem_limit;
		if (fr > room)
			fr = room;
	}
	out[0] = fr;
	out[1] = tot;
	*nout = 2;
	return CUDA_SUCCESS;
}

static CUresult htod_sink(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	CUdeviceptr dst = *(CUdeviceptr *)arg;

	return w->drv.cuMemcpyHtoD_v2(dst + off, p, n);
}

static int memcpy_htod(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Call *c = unpack_call(w, h, 3);
	CUdeviceptr dst;
	uint64_t len;
	CUresult r, sr;
	int ret;

	if (!c)
		return GP_EDECODE;
	dst = c->arg[1];
	len = c->arg[2];
	r = use_ctx(w, c->arg[0], NULL);
	protobuf_c_message_free_unpacked(&c->base, NULL);
	if (r == CUDA_SUCCESS && !gp__range_owned(w, dst, len))
		r = CUDA_ERROR_INVALID_VALUE;
	/* Read the bytes even when the copy is refused, to stay in step. */
	ret = recv_bulk(w, h, len, r == CUDA_SUCCESS ? htod_sink : NULL, &dst, &sr);
	if (ret)
		return ret;
	return send_reply(w, h, r != CUDA_SUCCESS ? r : sr, NULL, 0, NULL);
}

/* DtoH answers with DATA frames carrying the bytes, then a REPLY with the result. */
static int memcpy_dtoh(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Call *c = unpack_call(w, h, 3);
	CUdeviceptr src;
	uint64_t len, off = 0;
	CUresult r;
	int ret;

	if (!c)
		return GP_EDECODE;
	src = c->arg[1];
	len = c->arg[2];
	r = use_ctx(w, c->arg[0], NULL);
	protobuf_c_message_free_unpacked(&c->base, NULL);
	if (h->bulk_len)
		return GP_EFRAME;
	if (r == CUDA_SUCCESS && !gp__range_owned(w, src, len))
		r = CUDA_ERROR_INVALID_VALUE;
	while (r == CUDA_SUCCESS && off < len) {
		size_t n = len - off < GP_CHUNK_SIZE ? (size_t)(len - off) : GP_CHUNK_SIZE;

		r = w->drv.cuMemcpyDtoH_v2(w->staging, src + off, n);
		if (r != CUDA_SUCCESS)
			break;
		off += n;
		ret = gp_conn_send(w->client, GP_MSG_DATA, off < len ? GP_F_MORE : 0, h->request_id,
				   NULL, w->staging, n);
		if (ret)
			return ret;
	}
	/* The bytes of a failed copy are not sent; the reply says how it ended. */
	return send_reply(w, h, r, NULL, 0, NULL);
}

/* ---- modules ---------------------------------------------------------------- */

static CUresult image_sink(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p,
			   size_t n)
{
	memcpy((uint8_t *)arg + off, p, n);
	return CUDA_SUCCESS;
}

/* Collects every function of a fresh module with its parameter layout. */
static CUresult describe_module(struct gp_worker *w, CUmodule mod, uint64_t mod_id,
				uint64_t ctx_id, Gp__ModuleLoadReply *rep)
{
	unsigned int count = 0;
	CUfunction *fns;
	CUresult r;

	r = w->drv.cuModuleGetFunctionCount(&count, mod);
	if (r != CUDA_SUCCESS)
		return r;
	if (count == 0)
		return CUDA_SUCCESS;
	fns = calloc(count, sizeof(*fns));
	rep->function = calloc(count, sizeof(*rep->function));
	if (!fns || !rep->function) {
		free(fns);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = w->drv.cuModuleEnumerateFunctions(fns, count, mod);
	for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++) {
		Gp__Function *f = calloc(1, sizeof(*f));
		struct gp_fn_info *fi = calloc(1, sizeof(*fi));
		const char *name = NULL;
		size_t off, sz;
		uint32_t np = 0;

		if (!f || !fi) {
			free(f);
			free(fi);
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		gp__function__init(f);
		rep->function[rep->n_function++] = f;
		r = w->drv.cuFuncGetName(&name, fns[i]);
		if (r != CUDA_SUCCESS) {
			free(fi);
			break;
		}
		f->name = (char *)name;
		while (w->drv.cuFuncGetParamInfo(fns[i], np, &off, &sz) == CUDA_SUCCESS) {
			uint32_t *no = realloc(fi->offset, (np + 1) * sizeof(uint32_t));
			uint32_t *ns;

			if (no)
				fi->offset = no;
			ns = realloc(fi->size, (np + 1) * sizeof(uint32_t));
			if (ns)
				fi->size = ns;
			if (!no || !ns) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			fi->offset[np] = (uint32_t)off;
			fi->size[np] = (uint32_t)sz;
			if (off + sz > fi->param_bytes)
				fi->param_bytes = (uint32_t)(off + sz);
			np++;
		}
		fi->nparams = np;
		fi->module = mod_id;
		f->handle = gp__handle_new(w, GP_H_FUNCTION, fns[i]);
		if (!f->handle) {
			free(fi->offset);
			free(fi->size);
			free(fi);
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		gp__handle_get(w, f->handle, GP_H_FUNCTION)->aux = fi;
		gp__handle_get(w, f->handle, GP_H_FUNCTION)->parent = ctx_id;
		f->n_param = np;
		f->param = calloc(np ? np : 1, sizeof(*f->param));
		if (!f->param) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		for (uint32_t k = 0; k < np; k++) {
			f->param[k] = calloc(1, sizeof(Gp__Param));
			if (!f->param[k]) {
				f->n_param = k;
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			gp__param__init(f->param[k]);
			f->param[k]->offset = fi->offset[k];
			f->param[k]->size = fi->size[k];
		}
	}
	free(fns);
	return r;
}

static void free_reply_functions(Gp__ModuleLoadReply *rep)
{
	for (size_t i = 0; i < rep->n_function; i++) {
		Gp__Function *f = rep->function[i];

		for (size_t k = 0; k < f->n_param; k++)
			free(f->param[k]);
		free(f->param);
		free(f);
	}
	free(rep->function);
}

/* Drops the handles of a module's functions. */
static void forget_module(struct gp_worker *w, uint64_t mod_id)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (h->kind == GP_H_FUNCTION && h->aux &&
		    ((struct gp_fn_info *)h->aux)->module == mod_id)
			gp__handle_release(w, (uint64_t)h->kind << 56 | (uint64_t)h->gen << 32 |
						      (i + 1));
	}
}

static int module_load(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__ModuleLoadReply rep = GP__MODULE_LOAD_REPLY__INIT;
	Gp__DeferredError d = GP__DEFERRED_ERROR__INIT;
	Gp__Call *c = unpack_call(w, h, 2);
	uint64_t ctx_id, len, mod_id = 0;
	uint8_t *image = NULL;
	CUmodule mod = NULL;
	CUresult r, sr;
	int ret;

	if (!c)
		return GP_EDECODE;
	ctx_id = c->arg[0];
	len = c->arg[1];
	protobuf_c_message_free_unpacked(&c->base, NULL);
	r = use_ctx(w, ctx_id, NULL);
	if (r == CUDA_SUCCESS && (len == 0 || len > GP_IMAGE_MAX))
		r = CUDA_ERROR_INVALID_IMAGE;
	if (r == CUDA_SUCCESS) {
		/* One spare NUL so PTX text is always terminated. */
		image = calloc(1, (size_t)len + 1);
		if (!image)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	ret = recv_bulk(w, h, len, image ? image_sink : NULL, image, &sr);
	if (ret) {
		free(image);
		return ret;
	}
	if (r == CUDA_SUCCESS)
		r = w->drv.cuModuleLoadData(&mod, image);
	if (r == CUDA_SUCCESS) {
		mod_id = gp__handle_new(w, GP_H_MODULE, mod);
		if (!mod_id)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS) {
		struct gp_handle *mh = gp__handle_get(w, mod_id, GP_H_MODULE);

		/* The image lives as long as the module: a driver may read it lazily. */
		mh->aux = image;
		mh->parent = ctx_id;
		image = NULL;
		r = describe_module(w, mod, mod_id, ctx_id, &rep);
		if (r != CUDA_SUCCESS) {
			forget_module(w, mod_id);
			free(mh->aux);
			gp__handle_release(w, mod_id);
			w->drv.cuModuleUnload(mod);
			mod_id = 0;
		}
	} else if (mod) {
		w->drv.cuModuleUnload(mod);
	}
	free(image);
	rep.result = (int32_t)r;
	rep.module = mod_id;
	if (w->has_deferred) {
		fill_deferred(w, &d);
		rep.deferred = &d;
	}
	ret = gp_conn_send(w->client, GP_MSG_MODULE_LOAD_REPLY, 0, h->request_id, &rep.base, NULL,
			   0);
	free_reply_functions(&rep);
	return ret;
}

static CUresult module_unload(struct gp_worker *w, const uint64_t *a, uint64_t *out,
			      size_t *nout)
{
	struct gp_handle *mh;
	CUresult r = use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	mh = gp__handle_get(w, a[1], GP_H_MODULE);
	if (!mh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = w->drv.cuModuleUnload(mh->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	forget_module(w, a[1]);
	free(mh->aux);
	gp__handle_release(w, a[1]);
	return CUDA_SUCCESS;
}

/* ---- launches ------------------------------------------------------------- */

static int launch(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Launch *l = (Gp__Launch *)gp_msg_unpack(GP_MSG_LAUNCH, w->client->msg, h->msg_len);
	struct gp_handle *fh;
	struct gp_fn_info *fi;
	void **args = NULL;
	CUresult r;
	int ret;

	if (!l || !l->grid || !l->block || h->bulk_len) {
		if (l)
			protobuf_c_message_free_unpacked(&l->base, NULL);
		return GP_EDECODE;
	}
	r = use_ctx(w, l->context, NULL);
	fh = gp__handle_get(w, l->function, GP_H_FUNCTION);
	if (r == CUDA_SUCCESS && !fh)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS && l->stream != 0)
		r = CUDA_ERROR_INVALID_HANDLE; /* streams are not forwarded yet */
	if (r == CUDA_SUCCESS) {
		fi = fh->aux;
		if (l->params.len < fi->param_bytes) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (fi->nparams) {
			args = calloc(fi->nparams, sizeof(*args));
			if (!args)
				r = CUDA_ERROR_OUT_OF_MEMORY;
			for (uint32_t i = 0; args && i < fi->nparams; i++)
				args[i] = l->params.data + fi->offset[i];
		}
	}
	if (r == CUDA_SUCCESS)
		r = w->drv.cuLaunchKernel(fh->ptr, l->grid->x, l->grid->y, l->grid->z, l->block->x,
					  l->block->y, l->block->z, l->shared_mem, NULL, args,
					  NULL);
	free(args);
	protobuf_c_message_free_unpacked(&l->base, NULL);
	ret = send_reply(w, h, r, NULL, 0, NULL);
	return ret;
}

/* ---- dispatch --------------------------------------------------------------- */

typedef CUresult (*call_fn)(struct gp_worker *w, const uint64_t *args, uint64_t *out,
			    size_t *nout);

static const struct {
	uint16_t type;
	uint8_t nargs;
	call_fn fn;
} simple_calls[] = {
	{GP_MSG_CTX_CREATE, 2, ctx_create},
	{GP_MSG_CTX_DESTROY, 1, ctx_destroy},
	{GP_MSG_CTX_SYNCHRONIZE, 1, ctx_synchronize},
	{GP_MSG_MEM_ALLOC, 2, mem_alloc},
	{GP_MSG_MEM_FREE, 2, mem_free},
	{GP_MSG_MEM_GET_INFO, 1, mem_get_info},
	{GP_MSG_MODULE_UNLOAD, 2, module_unload},
};

int gp__worker_dispatch(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	uint64_t out[4];
	size_t nout = 0;
	Gp__Call *c;
	CUresult r;

	switch (h->type) {
	case GP_MSG_MEMCPY_HTOD:
		return memcpy_htod(w, h);
	case GP_MSG_MEMCPY_DTOH:
		return memcpy_dtoh(w, h);
	case GP_MSG_MODULE_LOAD:
		return module_load(w, h);
	case GP_MSG_LAUNCH:
		return launch(w, h);
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(simple_calls) / sizeof(simple_calls[0]); i++) {
		if (simple_calls[i].type != h->type)
			continue;
		if (h->bulk_len)
			return GP_EFRAME;
		c = unpack_call(w, h, simple_calls[i].nargs);
		if (!c)
			return GP_EDECODE;
		r = simple_calls[i].fn(w, c->arg, out, &nout);
		protobuf_c_message_free_unpacked(&c->base, NULL);
		return send_reply(w, h, r, out, nout, NULL);
	}
	gp_log_warnx("unexpected message type %u (%s)", h->type,
		     gp_msg_name(h->type) ? gp_msg_name(h->type) : "unknown");
	return GP_ETYPE;
}
