/* api_module.c -- modules and libraries: images are shipped once (libraries on first use),
 * then functions, kernels and their attributes are answered locally. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpupool/wire.h>

#include "error.h"
#include "image.h"
#include "interposer.h"

/*
 * An nvcc -rdc=true program's image (a version-2 wrapper) ships as a link bundle of its
 * translation units' fatbins, which the worker links with its driver (docs/conformance.md):
 * its device-linked fatbin may hold nothing the pool's device runs (none at all for PTX-only
 * builds, SASS only on softgpu), and the units' PTX is what a driver JIT-links then.
 */
static CUresult prelinked_bundle(const void *const *fatbins, uint8_t **out, size_t *len)
{
	struct gp_link_builder b;
	char name[32];
	size_t size;
	int ret = 0;

	gp_link_builder_init(&b);
	for (unsigned i = 0; ret == 0 && fatbins[i]; i++) {
		snprintf(name, sizeof(name), "translation unit %u", i);
		if (gp_image_kind(fatbins[i]) != GP_IMAGE_FATBIN ||
		    gp_image_size(fatbins[i], &size))
			ret = GP_EIMAGE;
		else
			ret = gp_link_add(&b, CU_JIT_INPUT_FATBINARY, name, fatbins[i], size);
	}
	if (ret == 0)
		ret = gp_link_finish(&b, out, len);
	gp_link_builder_deinit(&b);
	if (ret == -ENOMEM)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return ret ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}

/*
 * The bytes to ship for an image passed without a length: a cudart wrapper is
 * followed to its fatbin (the wrapper holds pointers into this process), or made
 * a link bundle (-rdc; *owned is then the caller's to free); a fatbin, cubin,
 * link bundle or PTX text is sized from its own header or terminator.
 */
static CUresult image_bytes(const void *image, const void **out, size_t *len, uint8_t **owned)
{
	const void *const *prelinked = gp_image_prelinked(image);
	const uint8_t *fb;
	int ret;

	*owned = NULL;
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	if (prelinked && prelinked[0]) {
		CUresult r = prelinked_bundle(prelinked, owned, len);

		*out = *owned;
		return r;
	}
	if (gp_image_kind(image) == GP_IMAGE_WRAPPER) {
		ret = gp_image_fatbin(image, &fb, len);
		*out = fb;
	} else {
		ret = gp_image_size(image, len);
		*out = image;
	}
	return ret ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
}

static bool module_valid(const struct gp_imodule *m, uint32_t magic)
{
	return m && m->magic == magic;
}

static void module_free_funcs(struct gp_imodule *m)
{
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		m->funcs[i].magic = GP_MAGIC_DEAD;
		free(m->funcs[i].name);
		free(m->funcs[i].offset);
		free(m->funcs[i].size);
	}
	/* The function array stays so stale CUfunction handles read as dead. */
	gp__managed_forget_owner(m);
	gp__range_forget_owner(m);
	free(m->image_copy);
	m->image_copy = NULL;
	m->magic = GP_MAGIC_DEAD;
}

/* ---- modules --------------------------------------------------------------------- */

GP_CUDA_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct gp_imodule *m;
	struct gp_ictx *c;
	const void *bytes;
	uint8_t *owned;
	size_t len;
	CUresult r;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	r = image_bytes(image, &bytes, &len, &owned);
	if (r != CUDA_SUCCESS)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m) {
		free(owned);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = GP_MAGIC_MODULE;
	m->ctx = c;
	r = gp__image_load(false, c->remote, bytes, len, m);
	free(owned); /* shipped */
	if (r != CUDA_SUCCESS) {
		module_free_funcs(m);
		free(m->funcs);
		free(m);
		return r;
	}
	*module = (CUmodule)m;
	return CUDA_SUCCESS;
}

/* A log option's buffer gets `text` (cut to its size, NUL-terminated), and its size option
 * the bytes written with the NUL, as softgpu's driver fills them. */
static void jit_log(unsigned n, const CUjit_option *options, void **values, CUjit_option buf_opt,
		    CUjit_option size_opt, const char *text)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	int size_at = -1;

	for (unsigned i = 0; i < n; i++) {
		if (options[i] == buf_opt)
			buf = values[i];
		else if (options[i] == size_opt)
			cap = (size_t)(uintptr_t)values[i], size_at = (int)i;
	}
	if (buf && cap) {
		len = strnlen(text, cap - 1);
		memcpy(buf, text, len);
		buf[len++] = '\0';
	}
	if (size_at >= 0)
		values[size_at] = (void *)(uintptr_t)len;
}

/* The JIT outputs of a load that began at t0 and gave r: the pool's driver's own logs do
 * not come back, so the info log is empty and the error log names the error; the wall
 * time is the load's, as seen here. */
static void jit_outputs(unsigned n, CUjit_option *options, void **values, CUresult r,
			const struct timespec *t0)
{
	struct timespec t1;
	const char *name = NULL;
	char err[128] = "";

	if (!n)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r != CUDA_SUCCESS) {
		cuGetErrorName(r, &name);
		snprintf(err, sizeof(err), "the pool's driver did not load the image: %s",
			 name ? name : "unknown error");
	}
	jit_log(n, options, values, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
	jit_log(n, options, values, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
		err);
	for (unsigned i = 0; i < n; i++) {
		if (options[i] == CU_JIT_WALL_TIME) {
			float ms = (float)((double)(t1.tv_sec - t0->tv_sec) * 1e3 +
					   (double)(t1.tv_nsec - t0->tv_nsec) / 1e6);

			memcpy(&values[i], &ms, sizeof(ms)); /* a float in the pointer's bytes */
		}
	}
}

/* JIT options only tune a compilation the pool does; none change what the module computes. */
GP_CUDA_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
					   CUjit_option *options, void **values)
{
	struct timespec t0;
	CUresult r;

	if (n && (!options || !values))
		return CUDA_ERROR_INVALID_VALUE;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = cuModuleLoadData(module, image);
	jit_outputs(n, options, values, r, &t0);
	return r;
}

CUresult gp__read_image_file(const char *fname, uint8_t **out, size_t *len)
{
	uint8_t *buf = NULL;
	FILE *f = fopen(fname, "rb");
	long n = -1;

	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0)
		buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*out = buf;
		if (len)
			*len = (size_t)n;
		fclose(f);
		return CUDA_SUCCESS;
	}
	fclose(f);
	free(buf);
	return buf ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The file is this process's: it is read here and shipped as any image is. */
GP_CUDA_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	uint8_t *buf;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module || !fname)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__read_image_file(fname, &buf, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	r = cuModuleLoadData(module, buf);
	free(buf); /* the module load copied what it shipped */
	return r;
}

GP_CUDA_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatbin)
{
	return cuModuleLoadData(module, fatbin);
}

GP_CUDA_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;
	CUresult r;

	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m, GP_MAGIC_MODULE))
		return CUDA_ERROR_INVALID_HANDLE;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		if (strcmp(m->funcs[i].name, name) == 0) {
			*hfunc = (CUfunction)&m->funcs[i];
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_NOT_FOUND;
}

GP_CUDA_EXPORT CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	if (!module_valid(m, GP_MAGIC_MODULE))
		return CUDA_ERROR_INVALID_HANDLE;
	*count = m->nfuncs;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *fns, unsigned int n, CUmodule hmod)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;

	if (!fns)
		return CUDA_ERROR_INVALID_VALUE;
	if (!module_valid(m, GP_MAGIC_MODULE))
		return CUDA_ERROR_INVALID_HANDLE;
	for (uint32_t i = 0; i < n && i < m->nfuncs; i++)
		fns[i] = (CUfunction)&m->funcs[i];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m, GP_MAGIC_MODULE) || !gp__ctx_valid(m->ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->lib)
		return CUDA_ERROR_NOT_PERMITTED; /* a library's module goes with the library */
	r = gp__rpc_module_unload(
		0, &(struct gp_in_module_unload){.ctx = m->ctx->remote, .module = m->remote}, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	module_free_funcs(m);
	return CUDA_SUCCESS;
}

/* Lazy unless CUDA_MODULE_LOADING=EAGER, as NVIDIA's driver since CUDA 12.2. */
static bool lazy_loading(void)
{
	const char *env = getenv("CUDA_MODULE_LOADING");

	return !(env && strcmp(env, "EAGER") == 0);
}

GP_CUDA_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	/* Lazy: cudart then registers a fatbin only when one of its kernels is first used. */
	*mode = lazy_loading() ? CU_MODULE_LAZY_LOADING : CU_MODULE_EAGER_LOADING;
	return CUDA_SUCCESS;
}

/* ---- globals ----------------------------------------------------------------------- */

static CUresult get_global(struct gp_ictx *c, const struct gp_imodule *m, const char *name,
			   CUdeviceptr *dptr, size_t *bytes)
{
	struct gp_out_get_global out;
	CUresult r;

	if (!name || !*name || strlen(name) > GP_NAME_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_get_global(
		0,
		&(struct gp_in_get_global){.ctx = c->remote, .module = m->remote, .symbol = name},
		&out);
	if (r != CUDA_SUCCESS)
		return r;
	gp__range_add_global((uintptr_t)out.dptr, (size_t)out.bytes, c, m);
	if (dptr)
		*dptr = (CUdeviceptr)out.dptr;
	if (bytes)
		*bytes = (size_t)out.bytes;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
					     const char *name)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;
	CUresult r;

	if (!name || (!dptr && !bytes))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m, GP_MAGIC_MODULE) || !gp__ctx_valid(m->ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	return get_global(m->ctx, m, name, dptr, bytes);
}

/* ---- libraries (context-independent, shipped on first use) --------------------------- */

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* Ships a library the first time something in it is needed. */
static CUresult library_need(CUlibrary lib, struct gp_imodule **out)
{
	struct gp_imodule *m = (struct gp_imodule *)lib;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m, GP_MAGIC_LIBRARY))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&load_lock);
	if (!m->loaded && m->load_result == CUDA_SUCCESS) {
		struct gp_ictx *c = gp__ctx_current();

		/* Made in the current context at once (if there is one), as a local load is. */
		r = gp__image_load(true, c && gp__ctx_valid(c) ? c->remote : 0, m->image,
				   m->image_len, m);
		if (r == CUDA_SUCCESS) {
			free(m->image_copy);
			m->image_copy = NULL;
			m->image = NULL;
		} else {
			m->load_result = r;
		}
	}
	r = m->load_result;
	pthread_mutex_unlock(&load_lock);
	*out = m;
	return r;
}

static CUresult library_load(CUlibrary *library, const void *code, CUlibraryOption *libraryOptions,
			     void **libraryOptionValues, unsigned int numLibraryOptions);

/* The JIT outputs as cuModuleLoadDataEx fills them; loaded lazily (the default), a library's
 * error comes at its first use, and the logs here stay empty. */
GP_CUDA_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
					  CUjit_option *jitOptions, void **jitOptionsValues,
					  unsigned int numJitOptions,
					  CUlibraryOption *libraryOptions,
					  void **libraryOptionValues,
					  unsigned int numLibraryOptions)
{
	struct timespec t0;
	CUresult r;

	if (numJitOptions && (!jitOptions || !jitOptionsValues))
		return CUDA_ERROR_INVALID_VALUE;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = library_load(library, code, libraryOptions, libraryOptionValues, numLibraryOptions);
	jit_outputs(numJitOptions, jitOptions, jitOptionsValues, r, &t0);
	return r;
}

static CUresult library_load(CUlibrary *library, const void *code, CUlibraryOption *libraryOptions,
			     void **libraryOptionValues, unsigned int numLibraryOptions)
{
	struct gp_imodule *m;
	bool preserved = false;
	const void *bytes;
	uint8_t *owned;
	size_t len;
	CUresult r;

	if (!library)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	r = image_bytes(code, &bytes, &len, &owned);
	if (r != CUDA_SUCCESS)
		return r;
	for (unsigned i = 0; i < numLibraryOptions && libraryOptions; i++)
		/* Option values travel in the pointer itself, as JIT options do. */
		if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED && libraryOptionValues)
			preserved = (uintptr_t)libraryOptionValues[i] != 0;
	m = calloc(1, sizeof(*m));
	if (!m) {
		free(owned);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->magic = GP_MAGIC_LIBRARY;
	m->image_len = len;
	if (owned) {
		m->image_copy = owned; /* made here: the library's until it ships */
		m->image = owned;
	} else if (preserved) {
		m->image = bytes; /* the caller keeps it alive until cuLibraryUnload */
	} else {
		m->image_copy = malloc(len);
		if (!m->image_copy) {
			free(m);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(m->image_copy, bytes, len);
		m->image = m->image_copy;
	}
	*library = (CUlibrary)m;
	/* Asked to load eagerly: ship it now, so a bad image fails here as it would locally. */
	if (!lazy_loading()) {
		r = library_need(*library, &m);
		if (r != CUDA_SUCCESS) {
			module_free_funcs(m);
			free(m->funcs);
			free(m);
			*library = NULL;
		}
	}
	return r;
}

/* As cuModuleLoad: the file is read here; the library keeps its own copy until it ships. */
GP_CUDA_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fname,
					      CUjit_option *jitOptions, void **jitOptionsValues,
					      unsigned int numJitOptions,
					      CUlibraryOption *libraryOptions,
					      void **libraryOptionValues,
					      unsigned int numLibraryOptions)
{
	uint8_t *buf;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!library || !fname)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__read_image_file(fname, &buf, NULL);
	if (r != CUDA_SUCCESS)
		return r;
	/* Not preserved whatever the options say: the buffer is ours and goes now. */
	r = cuLibraryLoadData(library, buf, jitOptions, jitOptionsValues, numJitOptions, NULL, NULL,
			      0);
	free(buf);
	return r;
}

GP_CUDA_EXPORT CUresult cuLibraryUnload(CUlibrary lib)
{
	struct gp_imodule *m = (struct gp_imodule *)lib;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m, GP_MAGIC_LIBRARY))
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->loaded) {
		r = gp__rpc_library_unload(0, &(struct gp_in_library_unload){.library = m->remote},
					   NULL);
		if (r != CUDA_SUCCESS)
			return r;
	}
	pthread_mutex_lock(&load_lock);
	for (struct gp_imodule *v = m->views; v; v = v->views) {
		gp__range_forget_owner(v);
		v->magic = GP_MAGIC_DEAD;
	}
	pthread_mutex_unlock(&load_lock);
	module_free_funcs(m);
	return CUDA_SUCCESS;
}

/* The library's module in the current context: the same one each time it is asked for. */
static CUresult library_module(struct gp_imodule *m, struct gp_ictx *c, CUmodule *out)
{
	struct gp_imodule *v;

	pthread_mutex_lock(&load_lock);
	for (v = m->views; v && v->ctx != c; v = v->views)
		;
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&load_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		v->magic = GP_MAGIC_MODULE;
		v->lib = m;
		v->ctx = c;
		v->remote = m->remote;
		v->loaded = true;
		v->nfuncs = m->nfuncs;
		v->funcs = m->funcs;
		v->views = m->views;
		m->views = v;
	}
	pthread_mutex_unlock(&load_lock);
	*out = (CUmodule)v;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuLibraryGetModule(CUmodule *pmod, CUlibrary lib)
{
	struct gp_imodule *m;
	struct gp_ictx *c;
	CUresult r;

	if (!pmod)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = library_need(lib, &m);
	return r != CUDA_SUCCESS ? r : library_module(m, c, pmod);
}

GP_CUDA_EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary lib, const char *name)
{
	struct gp_imodule *m;
	CUresult r;

	if (!kernel || !name)
		return CUDA_ERROR_INVALID_VALUE;
	r = library_need(lib, &m);
	if (r != CUDA_SUCCESS)
		return r;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		if (strcmp(m->funcs[i].name, name) == 0) {
			*kernel = (CUkernel)&m->funcs[i];
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_NOT_FOUND;
}

GP_CUDA_EXPORT CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	struct gp_imodule *m;
	CUresult r;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	r = library_need(lib, &m);
	if (r == CUDA_SUCCESS)
		*count = m->nfuncs;
	return r;
}

GP_CUDA_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n, CUlibrary lib)
{
	struct gp_imodule *m;
	CUresult r;

	if (!kernels)
		return CUDA_ERROR_INVALID_VALUE;
	r = library_need(lib, &m);
	for (uint32_t i = 0; r == CUDA_SUCCESS && i < n && i < m->nfuncs; i++)
		kernels[i] = (CUkernel)&m->funcs[i];
	return r;
}

GP_CUDA_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib,
					   const char *name)
{
	struct gp_imodule *m;
	struct gp_ictx *c;
	CUresult r;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = library_need(lib, &m);
	return r != CUDA_SUCCESS ? r : get_global(c, m, name, dptr, bytes);
}

/* A __managed__ variable: host code dereferences the address (managed.c maps it here).
 * cudart asks before any context is current: the variables live in device 0's primary
 * context then, which is retained for the purpose (and stays so). */
GP_CUDA_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary lib,
					    const char *name)
{
	struct gp_imodule *m;
	struct gp_ictx *c;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!name || !*name || strlen(name) > GP_NAME_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	c = gp__ctx_current();
	if (!c || !gp__ctx_valid(c) || c->remote == 0) {
		CUcontext pc;

		if (gp__client.ndev < 1)
			return CUDA_ERROR_NO_DEVICE;
		r = cuDevicePrimaryCtxRetain(&pc, 0);
		if (r != CUDA_SUCCESS)
			return r;
		c = (struct gp_ictx *)pc;
	}
	r = library_need(lib, &m);
	return r != CUDA_SUCCESS ? r : gp__managed_global(c, m, name, dptr, bytes);
}

/* ---- functions and kernels ------------------------------------------------------------ */

CUresult gp__func_check(CUfunction f, struct gp_ifunc **out)
{
	struct gp_ifunc *fn = (struct gp_ifunc *)f;

	if (!fn || fn->magic != GP_MAGIC_FUNC)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = fn;
	return CUDA_SUCCESS;
}

static pthread_mutex_t describe_lock = PTHREAD_MUTEX_INITIALIZER;

/* A load lists its functions by name; what a call needs of one (its parameter layout, its
 * attributes) is asked of the pool on first use, once. A function softgpu cannot run fails
 * here, at its first use, as a lazily loaded module fails on a local GPU. */
CUresult gp__func_described(CUfunction func, struct gp_ifunc **out)
{
	struct gp_ifunc *f;
	struct gp_ictx *c;
	Gp__Call call = GP__CALL__INIT;
	uint64_t args[GP_CALL_ARGS_MAX], o[GP_CALL_OUTS_MAX];
	struct gp_bulk_ref b;
	Gp__Reply *rep;
	CUresult r = gp__func_check(func, &f);

	if (r != CUDA_SUCCESS)
		return r;
	*out = f;
	if (atomic_load_explicit(&f->described, memory_order_acquire))
		return CUDA_SUCCESS;
	c = gp__ctx_current();
	gp_call_pack_func_describe(
		&(struct gp_in_func_describe){.ctx = c && gp__ctx_valid(c) ? c->remote : 0,
					      .func = f->remote},
		&call, args, &b);
	pthread_mutex_lock(&describe_lock);
	if (!f->described) {
		r = gp__rpc(GP_MSG_FUNC_DESCRIBE, 0, &call, &b, o, 0, &rep);
		if (r == CUDA_SUCCESS && rep->n_function != 1)
			r = CUDA_ERROR_UNKNOWN;
		if (r == CUDA_SUCCESS)
			r = gp__func_fill(f, rep->function[0]);
		if (r == CUDA_SUCCESS)
			atomic_store_explicit(&f->described, true, memory_order_release);
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
	}
	pthread_mutex_unlock(&describe_lock);
	return r;
}

/* A library kernel serves as a function in any context. */
GP_CUDA_EXPORT CUresult cuKernelGetFunction(CUfunction *pfunc, CUkernel kernel)
{
	struct gp_ifunc *f;
	struct gp_ictx *c;
	CUresult r;

	if (!pfunc)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = gp__func_check((CUfunction)kernel, &f);
	if (r == CUDA_SUCCESS)
		*pfunc = (CUfunction)f;
	return r;
}

GP_CUDA_EXPORT CUresult cuFuncGetName(const char **name, CUfunction func)
{
	struct gp_ifunc *f;
	CUresult r;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__func_check(func, &f);
	if (r == CUDA_SUCCESS)
		*name = f->name;
	return r;
}

GP_CUDA_EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel)
{
	return cuFuncGetName(name, (CUfunction)kernel);
}

GP_CUDA_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset,
					   size_t *size)
{
	struct gp_ifunc *f;
	CUresult r = gp__func_described(func, &f);

	if (r != CUDA_SUCCESS)
		return r;
	if (index >= f->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	if (offset)
		*offset = f->offset[index];
	if (size)
		*size = f->size[index];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset,
					     size_t *size)
{
	return cuFuncGetParamInfo((CUfunction)kernel, index, offset, size);
}

GP_CUDA_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction func)
{
	struct gp_ifunc *f;
	CUresult r;

	if (!pi || (unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__func_described(func, &f);
	if (r == CUDA_SUCCESS)
		*pi = f->attr[attrib];
	return r;
}

GP_CUDA_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
					     CUdevice dev)
{
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

static CUresult set_attribute(CUfunction func, CUfunction_attribute attrib, int value)
{
	struct gp_ifunc *f;
	struct gp_ictx *c;
	CUresult r;

	if ((unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r == CUDA_SUCCESS)
		r = gp__func_described(func, &f);
	if (r != CUDA_SUCCESS)
		return r;
	r = gp__rpc_func_set_attribute(
		0,
		&(struct gp_in_func_set_attribute){.ctx = c->remote,
						   .func = f->remote,
						   .attribute = (uint32_t)attrib,
						   .value = value},
		NULL);
	if (r == CUDA_SUCCESS)
		f->attr[attrib] = value;
	return r;
}

GP_CUDA_EXPORT CUresult cuFuncSetAttribute(CUfunction func, CUfunction_attribute attrib, int value)
{
	return set_attribute(func, attrib, value);
}

GP_CUDA_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int value,
					     CUkernel kernel, CUdevice dev)
{
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return set_attribute((CUfunction)kernel, attrib, value);
}

/* Cache preferences are hints a driver may ignore; they are checked and accepted. */
GP_CUDA_EXPORT CUresult cuFuncSetCacheConfig(CUfunction func, CUfunc_cache config)
{
	struct gp_ifunc *f;

	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__func_check(func, &f);
}

GP_CUDA_EXPORT CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

GP_CUDA_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction func)
{
	struct gp_ifunc *f;
	CUresult r;

	if (!hmod)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__func_check(func, &f);
	if (r != CUDA_SUCCESS)
		return r;
	if (f->module->magic == GP_MAGIC_LIBRARY) {
		/* A library kernel's function: the library's module in the current context. */
		struct gp_ictx *c;

		r = gp__ctx_need(&c);
		return r != CUDA_SUCCESS ? r : library_module(f->module, c, hmod);
	}
	*hmod = (CUmodule)f->module;
	return CUDA_SUCCESS;
}
