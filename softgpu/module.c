/* module.c -- modules and libraries: loading images, functions, kernels, globals, parameter info. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image.h"
#include "softgpu.h"

/*
 * An image (PTX text, a fatbin, cudart's fatbin wrapper) is parsed once into
 * a struct sg_image (the lowered program). A module is that program
 * instantiated in one context: its .global/.const variables allocated in the
 * context's device memory and each function's register template patched with
 * their addresses. A library (cuLibraryLoadData) holds the image and makes a
 * module per context on first use; its CUkernel handles work as CUfunction
 * handles in launches, as with the real driver.
 */

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
/* Guards making the per-module register templates of functions lowered on first use. */
static pthread_mutex_t tmpl_lock = PTHREAD_MUTEX_INITIALIZER;

static void image_unref(struct sg_image *img)
{
	if (img && __atomic_sub_fetch(&img->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		sg_prog_free(img->prog);
		free(img);
	}
}

static CUresult image_new(struct sg_prog *prog, struct sg_image **out)
{
	struct sg_image *img = calloc(1, sizeof(*img));

	if (img == NULL) {
		sg_prog_free(prog);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	img->prog = prog;
	img->refs = 1;
	*out = img;
	return CUDA_SUCCESS;
}

/*
 * An nvcc -rdc=true program's image: its device-linked fatbin holds SASS only (nvlink's
 * output), so the PTX of each translation unit's own fatbin is linked here, as a driver
 * JIT-links them for a device the SASS is not for. The fatbins are this process's, sized
 * from their headers.
 */
static CUresult prelinked_load(const void *const *fatbins, struct sg_image **out, char *err,
			       size_t errlen)
{
	struct sg_link_texts t = {0};
	struct sg_prog *prog;
	char name[32];
	size_t size;
	CUresult r = CUDA_SUCCESS;

	for (unsigned i = 0; r == CUDA_SUCCESS && fatbins[i]; i++) {
		snprintf(name, sizeof(name), "translation unit %u", i);
		if (gp_image_kind(fatbins[i]) != GP_IMAGE_FATBIN ||
		    gp_image_size(fatbins[i], &size)) {
			snprintf(err, errlen, "%s: malformed fatbin", name);
			r = CUDA_ERROR_INVALID_IMAGE;
		} else {
			r = sg_link_collect(&t, CU_JIT_INPUT_FATBINARY, fatbins[i], size, name, err,
					    errlen);
		}
	}
	if (r == CUDA_SUCCESS && t.n == 0) {
		snprintf(err, errlen, "the -rdc image has no translation unit");
		r = CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	if (r == CUDA_SUCCESS)
		r = (CUresult)sg_ptx_link((const char *const *)t.text, (const char *const *)t.name,
					  t.n, &prog, err, errlen);
	sg_link_texts_deinit(&t);
	return r ? r : image_new(prog, out);
}

/* Parses an image; on failure err holds the reason. */
static CUresult image_load(const void *image, struct sg_image **out, char *err, size_t errlen)
{
	const uint8_t *fatbin;
	size_t fsize;
	struct gp_fatbin_entry e;
	uint8_t *text = NULL;
	size_t tlen;
	struct sg_prog *prog;
	int r;

	err[0] = 0;
	if (image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	switch (gp_image_kind(image)) {
	case GP_IMAGE_PTX:
		r = sg_ptx_load(image, &prog, err, errlen);
		break;
	case GP_IMAGE_FATBIN:
	case GP_IMAGE_WRAPPER:
		if (gp_image_fatbin(image, &fatbin, &fsize)) {
			snprintf(err, errlen, "malformed fatbin");
			return CUDA_ERROR_INVALID_IMAGE;
		}
		/*
		 * The newest PTX not above the device's compute capability, as a
		 * driver picks; failing that, the newest PTX of all (NVIDIA's libraries
		 * ship PTX only for their newest target): softgpu interprets PTX of
		 * any target, and an instruction it cannot run fails only the kernel
		 * that uses it.
		 */
		r = gp_fatbin_best_ptx(fatbin, fsize, SG_SM, &e);
		if (r == 0)
			r = gp_fatbin_best_ptx(fatbin, fsize, UINT_MAX, &e);
		if (r == 0 && gp_image_prelinked(image))
			return prelinked_load(gp_image_prelinked(image), out, err, errlen);
		if (r < 0) {
			snprintf(err, errlen, "malformed fatbin entry");
			return CUDA_ERROR_INVALID_IMAGE;
		}
		if (r == 0) {
			snprintf(err, errlen, "the fatbin has no PTX (softgpu cannot run SASS)");
			return CUDA_ERROR_NO_BINARY_FOR_GPU;
		}
		if (gp_fatbin_entry_unpack(&e, &text, &tlen)) {
			snprintf(err, errlen, "cannot unpack the fatbin's PTX (compute_%u)", e.sm);
			return CUDA_ERROR_INVALID_IMAGE;
		}
		r = sg_ptx_load((const char *)text, &prog, err, errlen);
		free(text);
		break;
	case GP_IMAGE_ELF:
		snprintf(err, errlen, "cubin (SASS) images cannot run on softgpu; embed PTX");
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	case GP_IMAGE_LINK: {
		/* a linked image (cuLinkComplete's): its texts parsed as one program */
		struct sg_link_texts t = {0};
		size_t size;

		if (gp_image_size(image, &size)) {
			snprintf(err, errlen, "malformed link bundle");
			return CUDA_ERROR_INVALID_IMAGE;
		}
		r = sg_link_collect(&t, CU_JIT_INPUT_CUBIN, image, size, "bundle", err, errlen);
		if (r == 0 && t.n == 0) {
			snprintf(err, errlen, "empty link bundle");
			r = CUDA_ERROR_INVALID_IMAGE;
		}
		if (r == 0)
			r = sg_ptx_link((const char *const *)t.text, (const char *const *)t.name,
					t.n, &prog, err, errlen);
		sg_link_texts_deinit(&t);
		break;
	}
	default:
		return CUDA_ERROR_INVALID_IMAGE;
	}
	if (r)
		return (CUresult)r;
	return image_new(prog, out);
}

void sg_module_free(struct sg_module *m)
{
	const struct sg_prog *p;

	if (m == NULL)
		return;
	p = m->img->prog;
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		if (m->funcs)
			sg_handle_del(&m->funcs[i]);
		if (m->tmpl)
			free(m->tmpl[i]);
	}
	free(m->tmpl);
	free(m->funcs);
	if (m->gbase && sg_handle_ok(m->ctx, SG_K_CTX))
		sg_mem_free(m->ctx, m->gbase, p->has_managed ? SG_MEM_MANAGED : SG_MEM_MODULE);
	sg_handle_del(m);
	image_unref(m->img);
	free(m);
}

/* Makes the program live in ctx: globals allocated and initialised, templates patched. */
static CUresult instantiate(struct sg_ctx *ctx, struct sg_image *img, struct sg_module **out)
{
	const struct sg_prog *p = img->prog;
	struct sg_module *m = calloc(1, sizeof(*m));
	uint8_t *g = NULL;
	CUresult r;

	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->ctx = ctx;
	m->img = img;
	__atomic_add_fetch(&img->refs, 1, __ATOMIC_ACQ_REL);
	m->tmpl = calloc(p->nfuncs + 1, sizeof(*m->tmpl));
	m->funcs = calloc(p->nfuncs + 1, sizeof(*m->funcs));
	if (m->tmpl == NULL || m->funcs == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	if (p->global_size) {
		/* with __managed__ variables the block lives in host-accessible managed memory */
		if (p->has_managed)
			r = sg_mem_alloc_managed(ctx, p->global_size, &m->gbase);
		else
			r = sg_mem_alloc(ctx, p->global_size, SG_MEM_MODULE, &m->gbase);
		if (r)
			goto out_free;
		g = sg_mem_xlate(m->gbase, p->global_size, false, &r);
		memset(g, 0, p->global_size);
		for (uint32_t i = 0; i < p->nvars; i++) {
			const struct sg_var *v = &p->vars[i];

			if ((v->space == SG_SP_GLOBAL || v->space == SG_SP_CONST) && v->init)
				memcpy(g + v->offset, v->init, v->size);
		}
		for (uint32_t i = 0; i < p->ndre; i++) {
			const struct sg_dreloc *d = &p->dre[i];
			uint64_t a = m->gbase + p->vars[d->target].offset + (uint64_t)d->addend;

			memcpy(g + p->vars[d->var].offset + d->offset, &a, d->size);
		}
	}
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		const struct sg_func *f = &p->funcs[i];

		m->funcs[i].mod = m;
		m->funcs[i].index = (int)i;
		m->funcs[i].max_dyn_shared = -1;
		m->funcs[i].carveout = -1;
		if (!f->defined)
			continue;
		if (f->is_entry) {
			m->nentries++;
			if (sg_handle_add(&m->funcs[i], SG_K_FUNC)) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				goto out_free;
			}
		}
	}
	if (sg_handle_add(m, SG_K_MODULE)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	pthread_mutex_lock(&ctx->lock);
	m->next = ctx->modules;
	ctx->modules = m;
	pthread_mutex_unlock(&ctx->lock);
	*out = m;
	return CUDA_SUCCESS;

out_free:
	sg_module_free(m);
	return r;
}

/* The register template of lowered function i in module m: its global addresses patched in. */
static uint64_t *make_tmpl(const struct sg_module *m, uint32_t i)
{
	const struct sg_prog *p = m->img->prog;
	const struct sg_func *f = &p->funcs[i];
	uint64_t *t = malloc((size_t)f->nslots * 8 + 8);

	if (t == NULL)
		return NULL;
	memcpy(t, f->tmpl, (size_t)f->nslots * 8);
	for (uint32_t k = 0; k < f->nrelocs; k++)
		t[f->relocs[k].slot] =
			m->gbase + p->vars[f->relocs[k].var].offset + (uint64_t)f->relocs[k].addend;
	return t;
}

/*
 * A kernel of a module becomes runnable on first use (get-function, attributes, launch): the
 * program lowers it and what it calls, then the module gets their register templates. A
 * kernel that cannot be lowered fails here, and only this kernel.
 */
CUresult sg_function_ready(struct sg_function *f)
{
	struct sg_module *m = f->mod;
	struct sg_prog *p = m->img->prog;
	const char *msg = NULL;
	CUresult r;

	if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE))
		return CUDA_SUCCESS;
	r = (CUresult)sg_prog_lower(p, f->index, &msg);
	if (r) {
		sg_log("kernel cannot run (%s): %s", sg_error_name(r), msg);
		return r;
	}
	pthread_mutex_lock(&tmpl_lock);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		int st = __atomic_load_n(&p->funcs[i].lstate, __ATOMIC_ACQUIRE);

		if ((st == SG_FN_LOWERED || st == SG_FN_READY) && m->tmpl[i] == NULL) {
			uint64_t *t = make_tmpl(m, i);

			if (t == NULL) {
				pthread_mutex_unlock(&tmpl_lock);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			__atomic_store_n(&m->tmpl[i], t, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&tmpl_lock);
	__atomic_store_n(&f->ready, true, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

/* Removes a module from its context's list and frees it (after the context's work is done). */
static void module_unload(struct sg_module *m)
{
	struct sg_module **pp;

	sg_ctx_sync(m->ctx);
	pthread_mutex_lock(&m->ctx->lock);
	for (pp = &m->ctx->modules; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_unlock(&m->ctx->lock);
	sg_module_free(m);
}

/* JIT log options: the buffer gets the text (cut to its size), its size option the bytes
 * written with the NUL, as the driver's JIT fills them. */
static void jit_log_one(unsigned n, CUjit_option *opts, void **vals, CUjit_option buf_opt,
			CUjit_option size_opt, const char *msg)
{
	char *buf = NULL;
	size_t size = 0;

	for (unsigned i = 0; i < n; i++) {
		if (opts[i] == buf_opt)
			buf = vals[i];
		else if (opts[i] == size_opt)
			size = (size_t)(uintptr_t)vals[i];
	}
	if (buf && size) {
		int w = *msg ? snprintf(buf, size, "softgpu: %s", msg) : (buf[0] = 0);

		for (unsigned i = 0; i < n; i++)
			if (opts[i] == size_opt)
				vals[i] = (void *)(uintptr_t)(w < 0		 ? 0
							      : (size_t)w < size ? (size_t)w + 1
										 : size);
	}
}

/* The JIT outputs of a load: the error (if any) in the error log, an empty info log (softgpu
 * compiles nothing ahead: PTX is interpreted), and the load's wall time in milliseconds (a
 * float in the option value's bytes). */
void sg_jit_outputs(unsigned n, CUjit_option *opts, void **vals, const char *err,
		    const struct timespec *t0)
{
	struct timespec t1;

	if (opts == NULL || vals == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	jit_log_one(n, opts, vals, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
		    err);
	jit_log_one(n, opts, vals, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
	for (unsigned i = 0; i < n; i++) {
		if (opts[i] == CU_JIT_WALL_TIME) {
			float ms = (float)((double)(t1.tv_sec - t0->tv_sec) * 1e3 +
					   (double)(t1.tv_nsec - t0->tv_nsec) / 1e6);

			memcpy(&vals[i], &ms, sizeof(ms));
		}
	}
}

static CUresult load(CUmodule *mod, const void *image, unsigned n, CUjit_option *opts, void **vals)
{
	struct sg_ctx *c;
	struct sg_image *img;
	struct sg_module *m;
	char err[512];
	struct timespec t0;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (mod == NULL || image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = image_load(image, &img, err, sizeof(err));
	if (r) {
		sg_log("module load failed (%s): %s", sg_error_name(r), err);
		sg_jit_outputs(n, opts, vals, err, &t0);
		return r;
	}
	r = instantiate(c, img, &m);
	image_unref(img);
	sg_jit_outputs(n, opts, vals, r ? sg_error_name(r) : "", &t0);
	if (r)
		return r;
	*mod = (CUmodule)m;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	return load(module, image, 0, NULL, NULL);
}

SG_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				      CUjit_option *options, void **optionValues)
{
	return load(module, image, numOptions, options, optionValues);
}

SG_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return load(module, fatCubin, 0, NULL, NULL);
}

void *sg_read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else if (buf) {
			buf[n] = 0;
			if (size)
				*size = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

SG_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	struct sg_ctx *c;
	void *data;
	CUresult r = sg_ctx_current(&c, true);

	if (r)
		return r;
	if (module == NULL || fname == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	data = sg_read_file(fname, NULL);
	if (data == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = load(module, data, 0, NULL, NULL);
	free(data);
	return r;
}

SG_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	struct sg_module *m = (struct sg_module *)hmod;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(m, SG_K_MODULE))
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->lib)
		return CUDA_ERROR_NOT_PERMITTED; /* it goes with its library (cuLibraryUnload) */
	module_unload(m);
	return CUDA_SUCCESS;
}

static CUresult module_arg(CUmodule h, struct sg_module **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(h, SG_K_MODULE))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct sg_module *)h;
	return CUDA_SUCCESS;
}

static int find_entry(const struct sg_prog *p, const char *name)
{
	int i = sg_prog_find_func(p, name);

	return (i >= 0 && p->funcs[i].is_entry && p->funcs[i].defined) ? i : -1;
}

SG_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct sg_module *m;
	CUresult r = module_arg(hmod, &m);
	int i;

	if (r)
		return r;
	if (hfunc == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	i = find_entry(m->img->prog, name);
	if (i < 0)
		return CUDA_ERROR_NOT_FOUND;
	r = sg_function_ready(&m->funcs[i]);
	if (r)
		return r;
	*hfunc = (CUfunction)&m->funcs[i];
	return CUDA_SUCCESS;
}

static CUresult global_of(struct sg_module *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	const struct sg_prog *p = m->img->prog;
	int i;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	i = sg_prog_find_var(p, name);
	if (i < 0 || (p->vars[i].space != SG_SP_GLOBAL && p->vars[i].space != SG_SP_CONST))
		return CUDA_ERROR_NOT_FOUND;
	if (dptr)
		*dptr = m->gbase + p->vars[i].offset;
	if (bytes)
		*bytes = p->vars[i].size;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
					const char *name)
{
	struct sg_module *m;
	CUresult r = module_arg(hmod, &m);

	if (r)
		return r;
	return global_of(m, name, dptr, bytes);
}

SG_EXPORT CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	struct sg_module *m;
	CUresult r = module_arg(mod, &m);

	if (r)
		return r;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*count = m->nentries;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
					      CUmodule mod)
{
	struct sg_module *m;
	const struct sg_prog *p;
	unsigned k = 0;
	CUresult r = module_arg(mod, &m);

	if (r)
		return r;
	if (functions == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	p = m->img->prog;
	for (uint32_t i = 0; i < p->nfuncs && k < numFunctions; i++)
		if (p->funcs[i].is_entry && p->funcs[i].defined)
			functions[k++] = (CUfunction)&m->funcs[i];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (mode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = CU_MODULE_LAZY_LOADING;
	return CUDA_SUCCESS;
}

/* ---- functions ---- */

static CUresult func_arg(CUfunction h, struct sg_function **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(h, SG_K_FUNC))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct sg_function *)h;
	return CUDA_SUCCESS;
}

static const struct sg_func *pfunc(const struct sg_function *f)
{
	return &f->mod->img->prog->funcs[f->index];
}

SG_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct sg_function *f;
	CUresult r = func_arg(hfunc, &f);

	if (r)
		return r;
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*name = pfunc(f)->name;
	return CUDA_SUCCESS;
}

static CUresult param_info(const struct sg_func *pf, size_t index, size_t *off, size_t *size)
{
	if (index >= pf->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	if (off)
		*off = pf->params[index].offset;
	if (size)
		*size = pf->params[index].size;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
				      size_t *paramSize)
{
	struct sg_function *f;
	CUresult r = func_arg(func, &f);

	if (r)
		return r;
	return param_info(pfunc(f), paramIndex, paramOffset, paramSize);
}

SG_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct sg_function *f;
	CUresult r = func_arg(hfunc, &f);

	if (r)
		return r;
	if (hmod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*hmod = (CUmodule)f->mod;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
	struct sg_function *f;
	CUresult r = func_arg(function, &f);

	if (r)
		return r;
	if (state == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*state = __atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) ? CU_FUNCTION_LOADING_STATE_LOADED
							      : CU_FUNCTION_LOADING_STATE_UNLOADED;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuFuncLoad(CUfunction function)
{
	struct sg_function *f;
	CUresult r = func_arg(function, &f);

	return r ? r : sg_function_ready(f);
}

/* Registers per thread reported for every kernel: PTX has virtual registers only. */
#define SG_NUM_REGS 32

static uint32_t const_bytes(const struct sg_prog *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->nvars; i++)
		if (p->vars[i].space == SG_SP_CONST)
			n += p->vars[i].size;
	return (uint32_t)n;
}

static int max_threads(const struct sg_func *pf)
{
	int n = 1024;

	if (pf->maxntid[0])
		n = (int)(pf->maxntid[0] * (pf->maxntid[1] ? pf->maxntid[1] : 1) *
			  (pf->maxntid[2] ? pf->maxntid[2] : 1));
	if (pf->reqntid[0])
		n = (int)(pf->reqntid[0] * (pf->reqntid[1] ? pf->reqntid[1] : 1) *
			  (pf->reqntid[2] ? pf->reqntid[2] : 1));
	return n > 1024 ? 1024 : n;
}

static CUresult func_attr(const struct sg_function *f, CUfunction_attribute a, int *v)
{
	const struct sg_func *pf = pfunc(f);
	const struct sg_prog *p = f->mod->img->prog;

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*v = max_threads(pf);
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
		*v = (int)pf->shared_static;
		break;
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
		*v = (int)const_bytes(p);
		break;
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
		*v = (int)pf->local_total;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*v = SG_NUM_REGS;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
		*v = (int)(p->target_sm ? p->target_sm : SG_SM);
		break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*v = SG_SM;
		break;
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
		*v = 0;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*v = f->max_dyn_shared >= 0 ? f->max_dyn_shared : 49152 - (int)pf->shared_static;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*v = f->carveout;
		break;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*v = 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult func_set_attr(struct sg_function *f, CUfunction_attribute a, int v)
{
	const struct sg_func *pf = pfunc(f);

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (v < 0 || v + (int)pf->shared_static > sg_arch()->smem_optin)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_shared = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (v < -1 || v > 100)
			return CUDA_ERROR_INVALID_VALUE;
		f->carveout = v;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

SG_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	struct sg_function *f;
	CUresult r = func_arg(hfunc, &f);

	if (r)
		return r;
	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sg_function_ready(f)))
		return r;
	return func_attr(f, attrib, pi);
}

SG_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct sg_function *f;
	CUresult r = func_arg(hfunc, &f);

	if (r || (r = sg_function_ready(f)))
		return r;
	return func_set_attr(f, attrib, value);
}

SG_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct sg_function *f;
	CUresult r = func_arg(hfunc, &f);

	if (r == CUDA_SUCCESS)
		f->cache_config = config;
	return r;
}

/* ---- libraries and kernels ---- */

static void library_free(struct sg_library *l)
{
	struct sg_libmod *lm = l->mods;

	while (lm) {
		struct sg_libmod *n = lm->next;

		if (sg_handle_ok(lm->ctx, SG_K_CTX) && sg_handle_ok(lm->mod, SG_K_MODULE) &&
		    lm->mod->ctx == lm->ctx)
			module_unload(lm->mod);
		free(lm);
		lm = n;
	}
	for (uint32_t i = 0; i < l->nkernels; i++)
		sg_handle_del(&l->kernels[i]);
	free(l->kernels);
	pthread_mutex_destroy(&l->lock);
	image_unref(l->img);
	free(l);
}

SG_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				     void **jitOptionsValues, unsigned int numJitOptions,
				     CUlibraryOption *libraryOptions, void **libraryOptionValues,
				     unsigned int numLibraryOptions)
{
	struct sg_library *l;
	struct sg_image *img;
	char err[512];
	struct timespec t0;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (library == NULL || code == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = image_load(code, &img, err, sizeof(err));
	sg_jit_outputs(numJitOptions, jitOptions, jitOptionsValues, r ? err : "", &t0);
	if (r) {
		sg_log("library load failed (%s): %s", sg_error_name(r), err);
		return r;
	}
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		image_unref(img);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&l->lock, NULL);
	l->img = img;
	l->nkernels = img->prog->nfuncs;
	l->kernels = calloc(l->nkernels + 1, sizeof(*l->kernels));
	if (l->kernels == NULL) {
		library_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < l->nkernels; i++) {
		l->kernels[i].lib = l;
		l->kernels[i].index = (int)i;
		if (img->prog->funcs[i].is_entry && img->prog->funcs[i].defined &&
		    sg_handle_add(&l->kernels[i], SG_K_KERNEL)) {
			library_free(l);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (sg_handle_add(l, SG_K_LIBRARY)) {
		library_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*library = (CUlibrary)l;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
					 CUjit_option *jitOptions, void **jitOptionsValues,
					 unsigned int numJitOptions,
					 CUlibraryOption *libraryOptions,
					 void **libraryOptionValues, unsigned int numLibraryOptions)
{
	void *data;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (fileName == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	data = sg_read_file(fileName, NULL);
	if (data == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = cuLibraryLoadData(library, data, jitOptions, jitOptionsValues, numJitOptions,
			      libraryOptions, libraryOptionValues, numLibraryOptions);
	free(data);
	return r;
}

SG_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
	struct sg_library *l = (struct sg_library *)library;
	CUresult r = sg_inited();

	if (r)
		return r;
	pthread_mutex_lock(&lib_lock);
	if (!sg_handle_ok(l, SG_K_LIBRARY)) {
		pthread_mutex_unlock(&lib_lock);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	sg_handle_del(l);
	pthread_mutex_unlock(&lib_lock);
	library_free(l);
	return CUDA_SUCCESS;
}

/* The library's module in ctx, made on first use. */
static CUresult library_module(struct sg_library *l, struct sg_ctx *ctx, struct sg_module **out)
{
	struct sg_libmod *lm;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&l->lock);
	for (lm = l->mods; lm; lm = lm->next) {
		if (lm->ctx == ctx && sg_handle_ok(lm->mod, SG_K_MODULE) && lm->mod->ctx == ctx &&
		    lm->mod->lib == l)
			break;
	}
	if (lm == NULL) {
		lm = calloc(1, sizeof(*lm));
		if (lm == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if ((r = instantiate(ctx, l->img, &lm->mod)) != CUDA_SUCCESS) {
			free(lm);
			lm = NULL;
		} else {
			lm->ctx = ctx;
			lm->mod->lib = l;
			lm->next = l->mods;
			l->mods = lm;
		}
	}
	if (lm)
		*out = lm->mod;
	pthread_mutex_unlock(&l->lock);
	return r;
}

static CUresult library_arg(CUlibrary h, struct sg_library **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(h, SG_K_LIBRARY))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct sg_library *)h;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct sg_library *l;
	CUresult r = library_arg(library, &l);
	int i;

	if (r)
		return r;
	if (pKernel == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	i = find_entry(l->img->prog, name);
	if (i < 0)
		return CUDA_ERROR_NOT_FOUND;
	/* the kernel is lowered now (once for every context): one that cannot run fails here */
	{
		const char *msg = NULL;

		r = (CUresult)sg_prog_lower(l->img->prog, i, &msg);
		if (r) {
			sg_log("kernel cannot run (%s): %s", sg_error_name(r), msg);
			return r;
		}
	}
	*pKernel = (CUkernel)&l->kernels[i];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	struct sg_library *l;
	const struct sg_prog *p;
	CUresult r = library_arg(lib, &l);

	if (r)
		return r;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	p = l->img->prog;
	*count = 0;
	for (uint32_t i = 0; i < p->nfuncs; i++)
		if (p->funcs[i].is_entry && p->funcs[i].defined)
			(*count)++;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
					     CUlibrary lib)
{
	struct sg_library *l;
	const struct sg_prog *p;
	unsigned k = 0;
	CUresult r = library_arg(lib, &l);

	if (r)
		return r;
	if (kernels == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	p = l->img->prog;
	for (uint32_t i = 0; i < p->nfuncs && k < numKernels; i++)
		if (p->funcs[i].is_entry && p->funcs[i].defined)
			kernels[k++] = (CUkernel)&l->kernels[i];
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct sg_library *l;
	struct sg_module *m;
	struct sg_ctx *c;
	CUresult r = library_arg(library, &l);

	if (r || (r = sg_ctx_current(&c, true)))
		return r;
	if (pMod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = library_module(l, c, &m);
	if (r == CUDA_SUCCESS)
		*pMod = (CUmodule)m;
	return r;
}

SG_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
				      const char *name)
{
	struct sg_library *l;
	struct sg_module *m;
	struct sg_ctx *c;
	CUresult r = library_arg(library, &l);

	if (r || (r = sg_ctx_current(&c, true)))
		return r;
	r = library_module(l, c, &m);
	if (r)
		return r;
	return global_of(m, name, dptr, bytes);
}

SG_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
				       const char *name)
{
	struct sg_library *l;
	struct sg_module *m;
	struct sg_ctx *c;
	int i;
	CUresult r = library_arg(library, &l);

	if (r)
		return r;
	/* A library's managed variables do not need a current context: cudart asks for them
	 * when it registers them, before it makes one current. They live in device 0's
	 * primary context then. */
	r = sg_ctx_current(&c, true);
	if (r == CUDA_ERROR_INVALID_CONTEXT)
		r = sg_primary_ctx_handle(0, (CUcontext *)&c);
	if (r)
		return r;
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	i = sg_prog_find_var(l->img->prog, name);
	if (i < 0 || !l->img->prog->vars[i].managed)
		return CUDA_ERROR_NOT_FOUND;
	r = library_module(l, c, &m);
	if (r)
		return r;
	return global_of(m, name, dptr, bytes);
}

static CUresult kernel_arg(CUkernel h, struct sg_kernel **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!sg_handle_ok(h, SG_K_KERNEL))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct sg_kernel *)h;
	return CUDA_SUCCESS;
}

CUresult sg_function_resolve(CUfunction h, struct sg_ctx *ctx, struct sg_function **out)
{
	struct sg_module *m;
	CUresult r;

	switch (sg_handle_kind(h)) {
	case SG_K_FUNC:
		*out = (struct sg_function *)h;
		if ((*out)->mod->ctx != ctx)
			return CUDA_ERROR_INVALID_HANDLE;
		return sg_function_ready(*out);
	case SG_K_KERNEL: {
		struct sg_kernel *k = (struct sg_kernel *)h;

		r = library_module(k->lib, ctx, &m);
		if (r)
			return r;
		*out = &m->funcs[k->index];
		return sg_function_ready(*out);
	}
	default:
		return CUDA_ERROR_INVALID_HANDLE;
	}
}

SG_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct sg_kernel *k;
	struct sg_function *f;
	struct sg_ctx *c;
	CUresult r = kernel_arg(kernel, &k);

	if (r || (r = sg_ctx_current(&c, true)))
		return r;
	if (pFunc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = sg_function_resolve((CUfunction)kernel, c, &f);
	if (r == CUDA_SUCCESS)
		*pFunc = (CUfunction)f;
	return r;
}

SG_EXPORT CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct sg_kernel *k;
	CUresult r = kernel_arg(kernel, &k);

	if (r)
		return r;
	if (pLib == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*pLib = (CUlibrary)k->lib;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	struct sg_kernel *k;
	CUresult r = kernel_arg(hfunc, &k);

	if (r)
		return r;
	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*name = k->lib->img->prog->funcs[k->index].name;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
					size_t *paramSize)
{
	struct sg_kernel *k;
	CUresult r = kernel_arg(kernel, &k);

	if (r)
		return r;
	return param_info(&k->lib->img->prog->funcs[k->index], paramIndex, paramOffset, paramSize);
}

/* Kernel attributes are per device: answered from the primary context's view of it. */
static CUresult kernel_function(CUkernel kernel, CUdevice dev, struct sg_function **out)
{
	struct sg_kernel *k;
	struct sg_device *d;
	struct sg_ctx *c;
	CUresult r = kernel_arg(kernel, &k);

	if (r || (r = sg_device_get(dev, &d)))
		return r;
	r = sg_ctx_current(&c, false);
	if (r || c->dev != d)
		return r ? r : CUDA_ERROR_INVALID_DEVICE;
	return sg_function_resolve((CUfunction)kernel, c, out);
}

SG_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
					CUdevice dev)
{
	struct sg_function *f;
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = kernel_function(kernel, dev, &f);
	if (r)
		return r;
	return func_attr(f, attrib, pi);
}

SG_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
					CUdevice dev)
{
	struct sg_function *f;
	CUresult r = kernel_function(kernel, dev, &f);

	if (r)
		return r;
	return func_set_attr(f, attrib, val);
}

SG_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	struct sg_function *f;

	return kernel_function(kernel, dev, &f);
}
