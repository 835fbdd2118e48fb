/* api_module.c -- modules: upload the image once, then answer function lookups locally. */
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"

/*
 * The load calls carry no length. PTX text is NUL-terminated; fatbins and
 * cubins are sized from their headers (not yet: they are refused for now).
 */
static CUresult image_size(const void *image, size_t *len)
{
	const uint8_t *p = image;

	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((p[0] == 0xb1 && p[1] == 0x43 && p[2] == 0x62 && p[3] == 0x46) ||
	    (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba))
		return CUDA_ERROR_NOT_SUPPORTED;
	*len = strlen(image) + 1;
	return CUDA_SUCCESS;
}

static bool module_valid(const struct gp_imodule *m)
{
	return m && m->magic == GP_MAGIC_MODULE;
}

static void module_free(struct gp_imodule *m)
{
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		m->funcs[i].magic = GP_MAGIC_DEAD;
		free(m->funcs[i].name);
		free(m->funcs[i].offset);
		free(m->funcs[i].size);
	}
	/* The function array stays so stale CUfunction handles read as dead. */
	m->magic = GP_MAGIC_DEAD;
}

GP_CUDA_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct gp_imodule *m;
	struct gp_ictx *c;
	size_t len;
	CUresult r;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	r = image_size(image, &len);
	if (r != CUDA_SUCCESS)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__module_load(c, image, len, m);
	if (r != CUDA_SUCCESS) {
		module_free(m);
		free(m->funcs);
		free(m);
		return r;
	}
	*module = (CUmodule)m;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
				      CUjit_option *options, void **values)
{
	/* JIT options only tune a compilation the pool does remotely; none change the result. */
	return cuModuleLoadData(module, image);
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
	if (!module_valid(m))
		return CUDA_ERROR_INVALID_HANDLE;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		if (strcmp(m->funcs[i].name, name) == 0) {
			*hfunc = (CUfunction)&m->funcs[i];
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_NOT_FOUND;
}

GP_CUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
	struct gp_imodule *m = (struct gp_imodule *)hmod;
	uint64_t args[2];
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!module_valid(m))
		return CUDA_ERROR_INVALID_HANDLE;
	args[0] = m->ctx->remote;
	args[1] = m->remote;
	r = gp__call(GP_MSG_MODULE_UNLOAD, args, 2, NULL, 0);
	if (r != CUDA_SUCCESS)
		return r;
	module_free(m);
	return CUDA_SUCCESS;
}
