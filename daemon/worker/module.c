/* module.c -- modules and libraries: load, describe their kernels, globals, occupancy.
 *
 * A load answers with every function (or library kernel) it holds: a handle,
 * its parameter layout and its attributes, so the client serialises
 * kernelParams and answers cuFuncGetAttribute without further round trips. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "escape.h"
#include "image.h"
#include "log.h"
#include "worker.h"

/*
 * Receives a module image of `len` bytes into a buffer of its own (in place, no staging
 * copy); NULL when it cannot be taken (the bytes are still read, to stay in step). The
 * driver sizes an image from its own headers, so they must not reach past the bytes
 * sent, and a cudart wrapper (a pointer into the client's process) is refused.
 */
static CUresult recv_image(struct gp_worker *w, struct gp_req *rq, uint64_t len, uint8_t **out)
{
	struct gp_bulk_sink sink = {0};
	size_t size;
	CUresult r = CUDA_SUCCESS;

	*out = NULL;
	if (len == 0 || len > GP_IMAGE_MAX)
		r = CUDA_ERROR_INVALID_IMAGE;
	if (r == CUDA_SUCCESS) {
		/* One spare NUL so PTX text is always terminated. */
		sink.dst = calloc(1, (size_t)len + 1);
		if (!sink.dst)
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__req_recv(w, rq, len, &sink);
	if (rq->err || r != CUDA_SUCCESS) {
		free(sink.dst);
		return rq->err ? CUDA_ERROR_UNKNOWN : r;
	}
	if (gp_image_size_within(sink.dst, (size_t)len + 1, &size)) {
		free(sink.dst);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	*out = sink.dst;
	return CUDA_SUCCESS;
}

/*
 * Whether a bundle entry may go to the driver, which sizes an image from its own headers as
 * a module load does: PTX with its NUL, a fatbin or ELF (cubin, host object) that lies within
 * the entry's bytes. Archives, NVVM, nested bundles and unknown types are refused.
 */
static bool entry_ok(const struct gp_link_entry *e)
{
	size_t n;

	if (e->size == 0)
		return false;
	switch (e->type) {
	case CU_JIT_INPUT_PTX:
		return e->data[e->size - 1] == 0;
	case CU_JIT_INPUT_CUBIN:
	case CU_JIT_INPUT_FATBINARY:
	case CU_JIT_INPUT_OBJECT:
		if (e->size < 4 || gp_image_size_within(e->data, e->size, &n))
			return false;
		return gp_image_kind(e->data) == GP_IMAGE_FATBIN ||
		       gp_image_kind(e->data) == GP_IMAGE_ELF;
	default:
		return false;
	}
}

/*
 * A link bundle (what the interposer's cuLinkComplete answers) is linked here by the driver's
 * own cuLink*, and the linked image loaded in its place: *use is the image to load, owned by
 * *ls (destroyed by the caller after the load; the drivers copy what they load). Anything
 * else is loaded as it came (*ls NULL). recv_image checked that every entry lies within the
 * image, and entry_ok checks each entry's own headers as recv_image checks a module's.
 */
static CUresult link_bundle(struct gp_worker *w, const uint8_t *image, uint64_t len,
			    CUlinkState *ls, const void **use)
{
	char log[1024] = "", esc[1024];
	CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *ov[] = {log, (void *)sizeof(log)};
	struct gp_link_entry e;
	size_t size, off = 0, cubin_size = 0;
	void *cubin = NULL;
	CUresult r;
	int more;

	*ls = NULL;
	*use = image;
	if (gp_image_kind(image) != GP_IMAGE_LINK)
		return CUDA_SUCCESS;
	if (gp_image_size_within(image, (size_t)len + 1, &size))
		return CUDA_ERROR_INVALID_IMAGE;
	if (!w->drv.cuLinkCreate_v2 || !w->drv.cuLinkAddData_v2 || !w->drv.cuLinkComplete ||
	    !w->drv.cuLinkDestroy)
		return CUDA_ERROR_NOT_SUPPORTED;
	r = w->drv.cuLinkCreate_v2(2, o, ov, ls);
	if (r != CUDA_SUCCESS) {
		*ls = NULL;
		return r;
	}
	while (r == CUDA_SUCCESS && (more = gp_link_next(image, size, &off, &e)) == 1) {
		if (!entry_ok(&e))
			r = CUDA_ERROR_INVALID_IMAGE;
		else
			r = w->drv.cuLinkAddData_v2(*ls, (CUjitInputType)e.type, (void *)e.data,
						    e.size, e.name, 0, NULL, NULL);
	}
	if (r == CUDA_SUCCESS && more < 0)
		r = CUDA_ERROR_INVALID_IMAGE;
	if (r == CUDA_SUCCESS)
		r = w->drv.cuLinkComplete(*ls, &cubin, &cubin_size);
	if (r != CUDA_SUCCESS) {
		gp_escape(esc, sizeof(esc), log, NULL);
		gp_log_debug("session %llu: link failed: %s: %s", (unsigned long long)w->session_id,
			     gp_driver_err_name(&w->drv, r), esc);
		w->drv.cuLinkDestroy(*ls);
		*ls = NULL;
		return r;
	}
	*use = cubin;
	return CUDA_SUCCESS;
}

static void link_done(struct gp_worker *w, CUlinkState ls)
{
	if (ls)
		w->drv.cuLinkDestroy(ls);
}

/* The parameter layout of one function or kernel, into fi (once). */
static CUresult describe_params(struct gp_worker *w, void *fn, bool kernel, struct gp_fn_info *fi)
{
	size_t off, sz;
	uint32_t np = 0;
	CUresult r;

	if (fi->described)
		return CUDA_SUCCESS;
	for (;;) {
		uint32_t *no, *ns;

		r = kernel ? GP_DRV(w, cuKernelGetParamInfo, fn, np, &off, &sz)
			   : w->drv.cuFuncGetParamInfo(fn, np, &off, &sz);
		if (r != CUDA_SUCCESS)
			break;
		if (off > UINT32_MAX - sz)
			return CUDA_ERROR_INVALID_VALUE;
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
	/* The driver ends the list with INVALID_VALUE; anything else is a real failure (on
	 * softgpu, a kernel it cannot run says so here, at its first use). */
	if (r != CUDA_ERROR_INVALID_VALUE)
		return r;
	fi->nparams = np;
	fi->described = true;
	return CUDA_SUCCESS;
}

/*
 * A library kernel is described in a context that holds its library's module, measured and
 * charged there (asking the driver about a kernel can make the module in the current
 * context, which would then be the session's uncharged): one that has it already, else
 * ctx_id, where it is made (and charged) now. The worker's current context is put back.
 */
static CUresult in_instance(struct gp_worker *w, struct gp_handle *h, uint64_t ctx_id,
			    CUcontext *saved)
{
	const struct gp_fn_info *fi = h->aux;

	*saved = w->current;
	for (size_t i = 0; i < w->nlibinst; i++) {
		const struct gp_libinst *li = &w->libinst[i];

		if (li->lib == fi->module && li->usable)
			return gp__use_ctx(w, li->ctx, NULL);
	}
	if (!ctx_id)
		return CUDA_ERROR_INVALID_CONTEXT;
	{
		CUresult r = gp__use_ctx(w, ctx_id, NULL);

		return r != CUDA_SUCCESS ? r : gp__kernel_in_ctx(w, h, ctx_id);
	}
}

static void restore_current(struct gp_worker *w, CUcontext saved)
{
	if (w->current != saved && w->drv.cuCtxSetCurrent(saved) == CUDA_SUCCESS)
		w->current = saved;
}

CUresult gp__fn_described(struct gp_worker *w, struct gp_handle *h, uint64_t ctx_id)
{
	struct gp_fn_info *fi = h->aux;
	CUcontext saved;
	CUresult r;

	if (fi->described || h->kind != GP_H_KERNEL)
		return describe_params(w, h->ptr, false, fi);
	r = in_instance(w, h, ctx_id, &saved);
	if (r == CUDA_SUCCESS)
		r = describe_params(w, h->ptr, true, fi);
	restore_current(w, saved);
	return r;
}

/* The reply's entry for one function: its layout and attributes (on `device` for kernels). */
static CUresult describe(struct gp_worker *w, void *fn, bool kernel, int device, Gp__Function *f,
			 struct gp_fn_info *fi)
{
	CUdevice dev = 0;
	CUresult r = describe_params(w, fn, kernel, fi);

	if (r != CUDA_SUCCESS)
		return r;
	f->n_param = fi->nparams;
	f->param = calloc(fi->nparams ? fi->nparams : 1, sizeof(*f->param));
	f->attribute = calloc(CU_FUNC_ATTRIBUTE_MAX, sizeof(int32_t));
	if (!f->param || !f->attribute)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t k = 0; k < fi->nparams; k++) {
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

/* Registers one function or kernel and lists it, by name, in the reply; its layout and
 * attributes are described on first use (FUNC_DESCRIBE, or a launch), so that a library of
 * thousands of kernels loads without the driver preparing each of them. */
static CUresult add_function(struct gp_worker *w, struct gp_req *rq, void *fn, bool kernel,
			     uint64_t owner, uint64_t ctx_id, int device)
{
	Gp__Function *f = calloc(1, sizeof(*f));
	struct gp_fn_info *fi = calloc(1, sizeof(*fi));
	struct gp_handle *h;
	const char *name = NULL;
	CUresult r;

	(void)device;
	if (!f || !fi) {
		free(f);
		free(fi);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__function__init(f);
	rq->functions[rq->n_functions++] = f;
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
	return CUDA_SUCCESS;
}

CUresult gp__serve_func_describe(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_func_describe *a,
				 struct gp_out_func_describe *o)
{
	struct gp_handle *h = gp__launchable(w, a->func);
	const char *name = NULL;
	Gp__Function *f;
	CUresult r;

	rq->functions = calloc(1, sizeof(*rq->functions));
	f = calloc(1, sizeof(*f));
	if (!rq->functions || !f) {
		free(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__function__init(f);
	rq->functions[rq->n_functions++] = f;
	r = a->func_is_kernel ? GP_DRV(w, cuKernelGetName, &name, h->ptr)
			      : w->drv.cuFuncGetName(&name, h->ptr);
	if (r != CUDA_SUCCESS)
		return r;
	f->name = (char *)name;
	f->handle = a->func;
	if (!a->func_is_kernel)
		return describe(w, h->ptr, false, 0, f, h->aux);
	{
		CUcontext saved;

		r = in_instance(w, h, a->ctx, &saved);
		if (r == CUDA_SUCCESS)
			r = describe(w, h->ptr, true, a->ctx_dev < 0 ? 0 : a->ctx_dev, f, h->aux);
		restore_current(w, saved);
		return r;
	}
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

/* The session holds max_modules modules and libraries already (WorkerSetup). */
static bool modules_full(struct gp_worker *w)
{
	return gp_owner_count(&w->own, GP_H_MODULE) + gp_owner_count(&w->own, GP_H_LIBRARY) >=
	       w->caps.modules;
}

/* The function list of the reply, for count functions or kernels. */
static CUresult reply_functions(struct gp_req *rq, unsigned count)
{
	rq->functions = calloc(count ? count : 1, sizeof(*rq->functions));
	return rq->functions ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult gp__serve_module_load(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_module_load *a, struct gp_out_module_load *o)
{
	uint64_t mod_id = 0;
	unsigned int count = 0;
	CUfunction *fns = NULL;
	uint8_t *image;
	CUmodule mod = NULL;
	CUlinkState ls;
	const void *use;
	size_t before = 0;
	CUresult r = recv_image(w, rq, a->image_len, &image);

	if (r != CUDA_SUCCESS)
		return r;
	if (modules_full(w)) {
		free(image); /* read all the same, to stay in step */
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = link_bundle(w, image, a->image_len, &ls, &use);
	if (r != CUDA_SUCCESS) {
		free(image);
		return r;
	}
	before = free_now(w);
	r = w->drv.cuModuleLoadData(&mod, use);
	/* Drivers copy what they need (NVIDIA's, softgpu): the image goes at once, so a session
	 * holds at most one image's worth of host memory on the GPU host. */
	link_done(w, ls);
	free(image);
	if (r != CUDA_SUCCESS)
		return r;
	mod_id = gp__handle_new(w, GP_H_MODULE, mod);
	if (!mod_id) {
		w->drv.cuModuleUnload(mod);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, mod_id, GP_H_MODULE)->parent = a->ctx;
	r = charge_load(w, gp__handle_get(w, mod_id, GP_H_MODULE), a->ctx_dev, before);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuModuleGetFunctionCount(&count, mod);
	if (r == CUDA_SUCCESS)
		r = reply_functions(rq, count);
	if (r == CUDA_SUCCESS && count) {
		fns = calloc(count, sizeof(*fns));
		r = fns ? w->drv.cuModuleEnumerateFunctions(fns, count, mod)
			: CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++)
		r = add_function(w, rq, fns[i], false, mod_id, a->ctx, a->ctx_dev);
	free(fns);
	gp_log_debug("session %llu: module loaded: %llu bytes, %u function(s): %s",
		     (unsigned long long)w->session_id, (unsigned long long)a->image_len, count,
		     gp_driver_err_name(&w->drv, r));
	if (r != CUDA_SUCCESS) {
		gp__forget_module(w, mod_id);
		gp__handle_release(w, mod_id);
		w->drv.cuModuleUnload(mod);
		return r;
	}
	o->module = mod_id;
	return CUDA_SUCCESS;
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

CUresult gp__serve_library_load(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_library_load *a,
				struct gp_out_library_load *o)
{
	unsigned int count = 0;
	uint64_t ctx_id = a->ctx, lib_id = 0;
	CUkernel *ks = NULL;
	CUlibrary lib = NULL;
	uint8_t *image;
	CUlinkState ls;
	const void *use;
	size_t before = 0;
	CUresult r;
	int device = a->ctx_dev < 0 ? 0 : a->ctx_dev;

	/* The library's module is made, and measured, in the client's current context; without
	 * one, in the context the driver has current here (describing the kernels can make it
	 * there), or a primary one. */
	if (!ctx_id)
		ctx_id = current_ctx(w);
	if (!ctx_id)
		for (int d = 0; d < w->ndev && !ctx_id; d++)
			ctx_id = w->primary[d];
	if (ctx_id && !a->ctx) {
		struct gp_handle *ch;

		r = gp__use_ctx(w, ctx_id, &ch);
		if (r != CUDA_SUCCESS)
			return r;
		device = ch->device;
	}
	if (!w->drv.cuLibraryLoadData || !w->drv.cuLibraryGetKernelCount ||
	    !w->drv.cuLibraryEnumerateKernels)
		return CUDA_ERROR_NOT_SUPPORTED; /* the image is still read, to stay in step */
	r = recv_image(w, rq, a->image_len, &image);
	if (r != CUDA_SUCCESS)
		return r;
	if (modules_full(w)) {
		free(image);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = link_bundle(w, image, a->image_len, &ls, &use);
	if (r != CUDA_SUCCESS) {
		free(image);
		return r;
	}
	before = free_now(w);
	r = w->drv.cuLibraryLoadData(&lib, use, NULL, NULL, 0, NULL, NULL, 0);
	/* not CU_LIBRARY_BINARY_IS_PRESERVED: the driver keeps its own copy */
	link_done(w, ls);
	free(image);
	if (r != CUDA_SUCCESS)
		return r;
	lib_id = gp__handle_new(w, GP_H_LIBRARY, lib);
	if (!lib_id) {
		GP_DRV(w, cuLibraryUnload, lib);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = w->drv.cuLibraryGetKernelCount(&count, lib);
	if (r == CUDA_SUCCESS)
		r = reply_functions(rq, count);
	if (r == CUDA_SUCCESS && count) {
		ks = calloc(count, sizeof(*ks));
		r = ks ? w->drv.cuLibraryEnumerateKernels(ks, count, lib)
		       : CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned i = 0; r == CUDA_SUCCESS && i < count; i++)
		r = add_function(w, rq, ks[i], true, lib_id, 0, device);
	free(ks);
	/* Everything the load, the enumeration and the descriptions took, in that context. */
	if (r == CUDA_SUCCESS)
		r = instantiate(w, lib_id, lib, ctx_id, device, before, true);
	gp_log_debug("session %llu: library loaded: %llu bytes, %u kernel(s): %s",
		     (unsigned long long)w->session_id, (unsigned long long)a->image_len, count,
		     gp_driver_err_name(&w->drv, r));
	if (r != CUDA_SUCCESS) {
		gp__forget_module(w, lib_id);
		gp__handle_release(w, lib_id);
		GP_DRV(w, cuLibraryUnload, lib);
		return r;
	}
	o->library = lib_id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_module_unload(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_module_unload *a,
				 struct gp_out_module_unload *o)
{
	/* The driver may wait for the device before it unloads: a waiter thread makes the call
	 * and answers (waits.c); the module and its functions are the session's no more. */
	gp__forget_module(w, a->module);
	gp__handle_release(w, a->module);
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_MODULE_UNLOAD, .ctx = w->current, .module = a->module_drv};
	return CUDA_SUCCESS;
}

CUresult gp__serve_library_unload(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_library_unload *a,
				  struct gp_out_library_unload *o)
{
	/* As a module's unload (above). */
	gp__forget_module(w, a->library);
	gp__handle_release(w, a->library);
	rq->wait = (struct gp_wait){
		.kind = GP_WAIT_LIBRARY_UNLOAD, .ctx = w->current, .library = a->library_drv};
	return CUDA_SUCCESS;
}

/* The global's range becomes the session's to copy to and from. */
CUresult gp__serve_get_global(struct gp_worker *w, struct gp_req *rq,
			      const struct gp_wargs_get_global *a, struct gp_out_get_global *o)
{
	CUdeviceptr p = 0;
	size_t bytes = 0;
	CUresult r;

	if (!a->module_is_library) {
		r = GP_DRV(w, cuModuleGetGlobal_v2, &p, &bytes, a->module_drv, a->symbol);
	} else {
		r = instantiate(w, a->module, a->module_drv, a->ctx, a->ctx_dev, 0, false);
		if (r == CUDA_SUCCESS)
			r = GP_DRV(w, cuLibraryGetGlobal, &p, &bytes, a->module_drv, a->symbol);
	}
	if (r == CUDA_SUCCESS && gp__global_add(w, p, bytes, a->ctx, a->module))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	o->dptr = p;
	o->bytes = bytes;
	return r;
}

/* A library's __managed__ variable: made in the call's context; its block of managed memory
 * is kept coherent with the client's like an allocation (managed.c). */
CUresult gp__serve_managed_global(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_managed_global *a,
				  struct gp_out_managed_global *o)
{
	CUdeviceptr p = 0, base = 0;
	size_t bytes = 0, size = 0;
	CUresult r = instantiate(w, a->library, a->library_drv, a->ctx, a->ctx_dev, 0, false);

	(void)rq;
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuLibraryGetManaged, &p, &bytes, a->library_drv, a->symbol);
	if (r == CUDA_SUCCESS)
		r = GP_DRV(w, cuMemGetAddressRange_v2, &base, &size, p);
	if (r != CUDA_SUCCESS)
		return r;
	if (p < base || bytes > size || p - base > size - bytes)
		return CUDA_ERROR_NOT_SUPPORTED;
	r = gp__managed_global_add(w, base, size, a->ctx, a->library, &o->base, &o->len);
	if (r == CUDA_SUCCESS && gp__global_add(w, p, bytes, a->ctx, a->library))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	o->dptr = p;
	o->bytes = bytes;
	return r;
}

CUresult gp__serve_occupancy(struct gp_worker *w, struct gp_req *rq,
			     const struct gp_wargs_occupancy *a, struct gp_out_occupancy *o)
{
	int n = 0;
	CUresult r = GP_DRV(w, cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, &n,
			    a->func_drv, a->block, (size_t)a->smem, a->flags);

	o->blocks = (uint64_t)n;
	return r;
}

CUresult gp__serve_func_set_attribute(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_func_set_attribute *a,
				      struct gp_out_func_set_attribute *o)
{
	CUdevice dev;
	CUresult r;

	if (!a->func_is_kernel)
		return GP_DRV(w, cuFuncSetAttribute, a->func_drv,
			      (CUfunction_attribute)a->attribute, a->value);
	r = w->drv.cuDeviceGet(&dev, a->ctx_dev);
	return r != CUDA_SUCCESS
		       ? r
		       : GP_DRV(w, cuKernelSetAttribute, (CUfunction_attribute)a->attribute,
				a->value, a->func_drv, dev);
}
