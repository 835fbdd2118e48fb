/* driver.c -- dlopen a libcuda (NVIDIA's or softgpu) and resolve what the worker calls. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"

int gp_driver_load(struct gp_driver *drv, const char *path, char *err, size_t errlen)
{
	memset(drv, 0, sizeof(*drv));
	snprintf(drv->path, sizeof(drv->path), "%s", path);
	drv->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!drv->dl) {
		snprintf(err, errlen, "cannot load driver %s: %s", path, dlerror());
		return -1;
	}
#define GP_DRV_RESOLVE(name, req)                                         \
	drv->name = (__typeof__(&name))dlsym(drv->dl, #name);             \
	if (!drv->name && (req)) {                                        \
		snprintf(err, errlen, "driver %s lacks %s", path, #name); \
		goto out_close;                                           \
	}
	GP_DRIVER_FUNCS(GP_DRV_RESOLVE)
#undef GP_DRV_RESOLVE
	return 0;

out_close:
	dlclose(drv->dl);
	drv->dl = NULL;
	return -1;
}

void gp_driver_unload(struct gp_driver *drv)
{
	if (drv && drv->dl) {
		dlclose(drv->dl);
		drv->dl = NULL;
	}
}

const char *gp_driver_err_name(const struct gp_driver *drv, CUresult r)
{
	const char *s = NULL;

	if (drv->cuGetErrorName && drv->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "CUDA_ERROR_UNKNOWN";
}
