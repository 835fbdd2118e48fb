/* module.c -- modules and libraries: load, describe their kernels, globals, occupancy.
 *
 * A load answers with every function (or library kernel) it holds: a handle,
 * its parameter layout and its attributes, so the client serialises
 * kernelParams and answers cuFuncGetAttribute without further round trips. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "image.h"
#include "log.h"
#include "worker.h"

static CUresult image_sink(struct gp_worker *w, void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	memcpy((uint8_t *)arg + off, p, n);
	return CUDA_SUCCESS;
}

/*
 * Receives a module image of `len` bytes; NULL (and *r set) when it cannot be
 * taken. The driver sizes an image from its own headers, so they must not
 * reach past the bytes sent, and a cudart wrapper (a pointer into the
 * client's process) is refused.
 */
static int recv_image(struct gp_worker *w, const struct gp_frame_hdr *h, uint64_t len, CUresult *r,
		      uint8_t **out)
{
	CUresult sr;
	size_t size;
	int ret;

	*out = NULL;
	if (*r == CUDA_SUCCESS && (len == 0 || len > GP_IMAGE_MAX))
		*r = CUDA_ERROR_INVALID_IMAGE;
	if (*r == CUDA_SUCCESS) {
		/* One spare NUL so PTX text is always terminated. */
		*out = calloc(1, (size_t)len + 1);
		if (!*out)
			*r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	ret = gp__recv_bulk(w, h, len, *out ? image_sink : NULL, *out, &sr);
	if (ret || (*out && gp_image_size_within(*out, (size_t)len + 1, &size))) {
		free(*out);
		*out = NULL;
		if (ret == 0)
			*r = CUDA_ERROR_INVALID_IMAGE;
	}
	return ret;
}

/* Parameter layout and attributes of one function or kernel. */
static CUresult describe(struct gp_worker *w, void *fn, bool kernel, int device, Gp__Function *f,
			 struct gp_fn_info *fi)
{
	size_t off, sz;
	uint32_t np = 0;
	CUdevice dev = 0;
	CUresult r;

	for (;;) {
		uint32_t *no, *ns;

		r = kernel ? GP_DRV(w, cuKernelGetParamInfo, fn, np, &off, &sz)
			   : w->drv.cuFuncGetParamInfo(fn, np, &off, &sz);
		if (r != CUDA_SUCCESS)
			break;
		no = realloc(fi->offset, (np + 1) * sizeof(uint32_t));
		if (no)
			fi->offset = no;
		ns = realloc(fi->size, (np + 1) * sizeof(uint32_t));
		if (ns)
			fi->size = ns;
		if (!no || !ns)
			return CUDA_ERROR_OUT_OF_MEMORY;
		fi->offset[np] = (uint32_t)off;
		fi->size[np] = (uint32_t)sz;
		if (off + sz > fi->param_bytes)
			fi->param_bytes = (uint32_t)(off + sz);
		np++;
	}
	/* The driver ends the list with INVALID_VALUE; anything else is a real failure. */
	if (r != CUDA_ERROR_INVALID_VALUE)
		return r;
	fi->nparams = np;
	f->n_param = np;
	f->param = calloc(np ? np : 1, sizeof(*f->param));
	f->attribute = calloc(CU_FUNC_ATTRIBUTE_MAX, sizeof(int32_t));
	if (!f->param || !f->attribute)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t k = 0; k < np; k++) {
		f->param[k] = calloc(1, sizeof(Gp__Param));
		if (!f->param[k]) {
			f->n_param = k;
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		gp__param__init(f->param[k]);
		f->param[k]->offset = fi->offset[k];
		f->param[k]->size = fi->size[k];
	}
	if (kernel)
		w->drv.cuDeviceGet(&dev, device);
	f->n_attribute = CU_FUNC_ATTRIBUTE_MAX;
	for (int a = 0; a < CU_FUNC_ATTRIBUTE_MAX; a++) {
		int v = 0;

		if (kernel)
			GP_DRV(w, cuKernelGetAttribute, &v, (CUfunction_attribute)a, fn, dev);
		else
			GP_DRV(w, cuFuncGetAttribute, &v, (CUfunction_attribute)a, fn);
		f->attribute[a] = v;
	}
	return CUDA_SUCCESS;
}

/* Registers one function or kernel and describes it into the reply. */
static CUresult add_function(struct gp_worker *w, Gp__ModuleLoadReply *rep, void *fn, bool kernel,
			     uint64_t owner, uint64_t ctx_id, int device)
{
	Gp__Function *f = calloc(1, sizeof(*f));
	struct gp_fn_info *fi = calloc(1, sizeof(*fi));
	struct gp_handle *h;
	const char *name = NULL;
	CUresult r;

	if (!f || !fi) {
		free(f);
		free(fi);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__function__init(f);
	rep->function[rep->n_function++] = f;
	r = kernel ? GP_DRV(w, cuKernelGetName, &name, fn) : w->drv.cuFuncGetName(&name, fn);
	if (r != CUDA_SUCCESS) {
		free(fi);
		return r;
	}
	f->name = (char *)name;
	fi->module = owner;
	f->handle = gp__handle_new(w, kernel ? GP_H_KERNEL : GP_H_FUNCTION, fn);
	h = gp__handle_get(w, f->handle, kernel ? GP_H_KERNEL : GP_H_FUNCTION);
	if (!h) {
		free(fi);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->aux = fi; /* freed with the handle */
	h->parent = ctx_id;
	return describe(w, fn, kernel, device, f, fi);
}

static void free_reply_functions(Gp__ModuleLoadReply *rep)
{
	for (size_t i = 0; i < rep->n_function; i++) {
		Gp__Function *f = rep->function[i];

		for (size_t k = 0; k < f->n_param; k++)
			free(f->param[k]);
		free(f->param);
		free(f->attribute);
		free(f);
	}
	free(rep->function);
}

static int send_load_reply(struct gp_worker *w, const struct gp_frame_hdr *h,
			   Gp__ModuleLoadReply *rep, CUresult r)
{
	Gp__DeferredError d = GP__DEFERRED_ERROR__INIT;
	int ret;

	rep->result = (int32_t)r;
	if (r != CUDA_SUCCESS)
		rep->module = 0;
	if (gp__output_flush(w))
		return GP_ECLOSED;
	if (gp__take_deferred(w, &d))
		rep->deferred = &d;
	ret = gp_conn_send(w->client, GP_MSG_MODULE_LOAD_REPLY, 0, h->request_id, &rep->base, NULL,
			   0);
	free_reply_functions(rep);
	return ret;
}

/*
 * What a load costs on the device (globals, code) is not an allocation the session made, yet
 * it is device memory: measured as the drop in free memory across the load and counted
 * against the session's limit; a load that does not fit is undone. On a GPU shared with
 * other sessions the measure can include their concurrent allocations or frees, so it is
 * approximate there (exact on softgpu, where each worker has its own device).
 */
static size_t free_now(struct gp_worker *w)
{
	size_t fr = 0, tot = 0;

	if (!w->current || w->drv.cuMemGetInfo_v2(&fr, &tot) != CUDA_SUCCESS)
		return 0;
	return fr;
}

/* The device memory taken since free_now() answered `before` (0 when it cannot be told). */
static uint64_t taken_since(struct gp_worker *w, size_t before)
{
	size_t after = free_now(w);

	return before > after && after ? before - after : 0;
}

static CUresult charge_load(struct gp_worker *w, struct gp_handle *h, int device, size_t before)
{
	uint64_t cost = taken_since(w, before);

	if (!gp__charge_fits(w, device, cost))
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->device = device;
	h->charge = cost;
	gp__charge(w, device, (int64_t)cost);
	return CUDA_SUCCESS;
}

/* arg: ctx, image bytes; bulk: the image */
int gp__module_load(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__ModuleLoadReply rep = GP__MODULE_LOAD_REPLY__INIT;
	Gp__Call *c = gp__unpack_call(w, h, 2);
	uint64_t ctx_id, len, mod_id = 0;
	unsigned int count = 0;
	CUfunction *fns = NULL;
	struct gp_handle *ctx = NULL;
	uint8_t *image;
	CUmodule mod = NULL;
	size_t before = 0;
	CUresult r;
	int ret;

	if (!c)
		return GP_EDECODE;
	ctx_id = c->arg[0];
	len = c->arg[1];
	protobuf_c_message_free_unpacked(&c->base, NULL);
	r = gp__use_ctx(w, ctx_id, &ctx);
	ret = recv_image(w, h, len, &r, &image);
	if (ret)
		return ret;
	if (r == CUDA_SUCCESS) {
		before = free_now(w);
		r = w->drv.cuModuleLoadData(&mod, image);
	}
	/* Drivers copy what they need (NVIDIA's, softgpu): the image goes at once, so a session
	 * holds at most one image's worth of host memory on the GPU host. */
	free(image);
	if (r == CUDA_SUCCESS) {
		mod_id = gp__handle_new(w, GP_H_MODULE, mod);
		if (!mod_id) {
			w->drv.cuModuleUnload(mod);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (r != CUDA_SUCCESS)
		return send_load_reply(w, h, &rep, r);
	gp__handle_get(w, mod_id, GP_H_MODULE)->parent = ctx_id;
	rep.module = mod_id;
	r = charge_load(w, gp__handle_get(w, mod_id, GP_H_MODULE), ctx->device, before);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuModuleGetFunctionCount(&count, mod);
	if (r == CUDA_SUCCESS && count) {
		fns = calloc(count, sizeof(*fns));
		rep.function = calloc(count, sizeof(*rep.function));
		r = fns && rep.function ? w->drv.cuModuleEnumerateFunctions(fns, count, mod)
					: CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++)
		r = add_function(w, &rep, fns[i], false, mod_id, ctx_id, ctx->device);
	free(fns);
	gp_log_debug("session %llu: module loaded: %llu bytes, %u function(s): %s",
		     (unsigned long long)w->session_id, (unsigned long long)len, count,
		     gp_driver_err_name(&w->drv, r));
	if (r != CUDA_SUCCESS) {
		gp__forget_module(w, mod_id);
		gp__handle_release(w, mod_id);
		w->drv.cuModuleUnload(mod);
	}
	return send_load_reply(w, h, &rep, r);
}

/*
 * A library belongs to no context: the driver makes its module (globals, code) in each
 * context that uses it, on first use. Each such module is measured when it is made and
 * charged to the session until the library is unloaded or the context goes. The load makes
 * it in the current context at once; other contexts make theirs through the calls below.
 */
/* The handle of the context the driver has current in this worker, or 0. */
static uint64_t current_ctx(struct gp_worker *w)
{
	for (uint32_t i = 0; w->current && i < w->nhandles; i++)
		if (w->handles[i].kind == GP_H_CTX && w->handles[i].ptr == w->current)
			return gp__handle_id(w, &w->handles[i]);
	return 0;
}

/*
 * Makes the library's module in the current context (ctx_id, on device) if it has none yet,
 * measuring the free memory it took since `before`. Where one context's module already
 * shows what it costs, a context it would not fit in gets none. A module that turns out not
 * to fit stays the session's (only unloading the library undoes it): it is charged, and
 * every call that needs it in that context fails with CUDA_ERROR_OUT_OF_MEMORY.
 */
static CUresult instantiate(struct gp_worker *w, uint64_t lib_id, CUlibrary lib, uint64_t ctx_id,
			    int device, size_t before, bool measured)
{
	const struct gp_libinst *li;
	uint64_t known, cost;
	CUmodule mod;
	bool fits;
	CUresult r;

	if (!ctx_id)
		return CUDA_SUCCESS;
	li = gp__libinst_find(w, lib_id, ctx_id);
	if (li)
		return li->usable ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	if (!w->drv.cuLibraryGetModule)
		return CUDA_ERROR_NOT_SUPPORTED; /* cannot be measured, so not allowed */
	known = gp__libinst_cost(w, lib_id);
	if (known && !gp__charge_fits(w, device, known))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!measured)
		before = free_now(w);
	r = w->drv.cuLibraryGetModule(&mod, lib);
	if (r != CUDA_SUCCESS)
		return r;
	cost = taken_since(w, before);
	fits = gp__charge_fits(w, device, cost);
	if (gp__libinst_add(w, lib_id, ctx_id, device, cost, fits))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return fits ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult gp__kernel_in_ctx(struct gp_worker *w, const struct gp_handle *fh, uint64_t ctx_id)
{
	const struct gp_fn_info *fi = fh->aux;
	struct gp_handle *lh, *ch;

	if (fh->kind != GP_H_KERNEL || !fi)
		return CUDA_SUCCESS;
	lh = gp__handle_get(w, fi->module, GP_H_LIBRARY);
	ch = gp__handle_get(w, ctx_id, GP_H_CTX);
	if (!lh || !ch)
		return CUDA_ERROR_INVALID_HANDLE;
	return instantiate(w, fi->module, lh->ptr, ctx_id, ch->device, 0, false);
}

/* arg: image bytes; bulk: the image. */
int gp__library_load(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__ModuleLoadReply rep = GP__MODULE_LOAD_REPLY__INIT;
	Gp__Call *c = gp__unpack_call(w, h, 2);
	unsigned int count = 0;
	uint64_t len, ctx_id, lib_id = 0;
	CUkernel *ks = NULL;
	CUlibrary lib = NULL;
	struct gp_handle *ch = NULL;
	uint8_t *image;
	size_t before = 0;
	CUresult r = CUDA_SUCCESS;
	int ret, device = 0;

	if (!c)
		return GP_EDECODE;
	len = c->arg[0];
	ctx_id = c->arg[1];
	protobuf_c_message_free_unpacked(&c->base, NULL);
	/* The library's module is made, and measured, in the client's current context; without
	 * one, in the context the driver has current here (describing the kernels can make it
	 * there), or a primary one. */
	if (!ctx_id)
		ctx_id = current_ctx(w);
	if (!ctx_id)
		for (int d = 0; d < w->ndev && !ctx_id; d++)
			ctx_id = w->primary[d];
	if (ctx_id) {
		r = gp__use_ctx(w, ctx_id, &ch);
		device = ch ? ch->device : 0;
	}
	if (r == CUDA_SUCCESS && (!w->drv.cuLibraryLoadData || !w->drv.cuLibraryGetKernelCount ||
				  !w->drv.cuLibraryEnumerateKernels))
		r = CUDA_ERROR_NOT_SUPPORTED;
	ret = recv_image(w, h, len, &r, &image);
	if (ret)
		return ret;
	if (r == CUDA_SUCCESS) {
		before = free_now(w);
		r = w->drv.cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
	}
	free(image); /* not CU_LIBRARY_BINARY_IS_PRESERVED: the driver keeps its own copy */
	if (r == CUDA_SUCCESS) {
		lib_id = gp__handle_new(w, GP_H_LIBRARY, lib);
		if (!lib_id) {
			w->drv.cuLibraryUnload(lib);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (r != CUDA_SUCCESS)
		return send_load_reply(w, h, &rep, r);
	rep.module = lib_id;
	r = w->drv.cuLibraryGetKernelCount(&count, lib);
	if (r == CUDA_SUCCESS && count) {
		ks = calloc(count, sizeof(*ks));
		rep.function = calloc(count, sizeof(*rep.function));
		r = ks && rep.function ? w->drv.cuLibraryEnumerateKernels(ks, count, lib)
				       : CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++)
		r = add_function(w, &rep, ks[i], true, lib_id, 0, device);
	free(ks);
	/* Everything the load, the enumeration and the descriptions took, in that context. */
	if (r == CUDA_SUCCESS)
		r = instantiate(w, lib_id, lib, ctx_id, device, before, true);
	gp_log_debug("session %llu: library loaded: %llu bytes, %u kernel(s): %s",
		     (unsigned long long)w->session_id, (unsigned long long)len, count,
		     gp_driver_err_name(&w->drv, r));
	if (r != CUDA_SUCCESS) {
		gp__forget_module(w, lib_id);
		gp__handle_release(w, lib_id);
		w->drv.cuLibraryUnload(lib);
	}
	return send_load_reply(w, h, &rep, r);
}

CUresult gp__module_unload(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			   uint64_t *out, size_t *nout)
{
	struct gp_handle *mh;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	mh = gp__handle_get(w, a[1], GP_H_MODULE);
	if (!mh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = w->drv.cuModuleUnload(mh->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	gp__forget_module(w, a[1]);
	gp__handle_release(w, a[1]);
	return CUDA_SUCCESS;
}

CUresult gp__library_unload(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
			    uint64_t *out, size_t *nout)
{
	struct gp_handle *lh = gp__handle_get(w, a[0], GP_H_LIBRARY);
	CUresult r;

	if (!lh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = GP_DRV(w, cuLibraryUnload, lh->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	gp__forget_module(w, a[0]);
	gp__handle_release(w, a[0]);
	return CUDA_SUCCESS;
}

/* arg: ctx, module or library; name: the symbol. out: dptr, bytes. The global's range
 * becomes the session's to copy to and from. */
int gp__get_global(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	Gp__Call *c = gp__unpack_call(w, h, 2);
	uint64_t out[2] = {0, 0};
	struct gp_handle *mh, *ch;
	CUdeviceptr p = 0;
	size_t bytes = 0;
	CUresult r;

	if (!c || h->bulk_len || !c->name) {
		if (c)
			protobuf_c_message_free_unpacked(&c->base, NULL);
		return GP_EDECODE;
	}
	r = gp__use_ctx(w, c->arg[0], &ch);
	if (r == CUDA_SUCCESS) {
		if ((mh = gp__handle_get(w, c->arg[1], GP_H_MODULE)) != NULL)
			r = GP_DRV(w, cuModuleGetGlobal_v2, &p, &bytes, mh->ptr, c->name);
		else if ((mh = gp__handle_get(w, c->arg[1], GP_H_LIBRARY)) != NULL) {
			r = instantiate(w, c->arg[1], mh->ptr, c->arg[0], ch->device, 0, false);
			if (r == CUDA_SUCCESS)
				r = GP_DRV(w, cuLibraryGetGlobal, &p, &bytes, mh->ptr, c->name);
		} else
			r = CUDA_ERROR_INVALID_HANDLE;
	}
	if (r == CUDA_SUCCESS && gp__global_add(w, p, bytes, c->arg[0], c->arg[1]))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	out[0] = p;
	out[1] = bytes;
	protobuf_c_message_free_unpacked(&c->base, NULL);
	return gp__reply(w, h, r, out, 2);
}

/* arg: ctx, function or kernel, block size, dynamic shared bytes, flags; out: blocks per SM */
CUresult gp__occupancy(struct gp_worker *w, const struct gp_frame_hdr *f, const uint64_t *a,
		       uint64_t *out, size_t *nout)
{
	struct gp_handle *fh;
	int n = 0;
	CUresult r = gp__use_ctx(w, a[0], NULL);

	if (r != CUDA_SUCCESS)
		return r;
	fh = gp__launchable(w, a[1]);
	if (!fh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = gp__kernel_in_ctx(w, fh, a[0]);
	if (r != CUDA_SUCCESS)
		return r;
	r = GP_DRV(w, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, &n, fh->ptr, (int)a[2],
		   (size_t)a[3], (unsigned)a[4]);
	out[0] = (uint64_t)n;
	*nout = 1;
	return r;
}

/* arg: ctx, function or kernel, attribute, value */
CUresult gp__func_set_attribute(struct gp_worker *w, const struct gp_frame_hdr *f,
				const uint64_t *a, uint64_t *out, size_t *nout)
{
	struct gp_handle *fh, *ctx;
	CUdevice dev;
	CUresult r = gp__use_ctx(w, a[0], &ctx);

	if (r != CUDA_SUCCESS)
		return r;
	fh = gp__launchable(w, a[1]);
	if (!fh)
		return CUDA_ERROR_INVALID_HANDLE;
	r = gp__kernel_in_ctx(w, fh, a[0]);
	if (r != CUDA_SUCCESS)
		return r;
	if (fh->kind == GP_H_FUNCTION)
		return GP_DRV(w, cuFuncSetAttribute, fh->ptr, (CUfunction_attribute)a[2],
			      (int)a[3]);
	r = w->drv.cuDeviceGet(&dev, ctx->device);
	return r != CUDA_SUCCESS ? r
				 : GP_DRV(w, cuKernelSetAttribute, (CUfunction_attribute)a[2],
					  (int)a[3], fh->ptr, dev);
}
