/* nvml.c -- the inventory's NVML cross-check: per GPU the driver shows, NVML must list the same
 * UUID with the same memory. Runs only in `gpupool-worker --inventory` (the supervisor never
 * loads NVML). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "nvml_abi.h"
#include "worker.h"

/*
 * Which NVML: the libnvidia-ml.so.1 in the configured driver's directory when the driver is a
 * path (softgpu's beside softgpu's libcuda; NVIDIA's beside NVIDIA's), the loader's
 * "libnvidia-ml.so.1" when the driver is a bare name. A host without NVML still works: the
 * inventory says NVML is absent and the GPUs come from CUDA alone.
 *
 * NVML is matched by UUID, not by index: NVIDIA's NVML numbers GPUs in PCI order and ignores
 * CUDA_VISIBLE_DEVICES, so its index need not be CUDA's ordinal.
 */

struct nvml {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t r);
	nvmlReturn_t (*driver_version)(char *version, unsigned int length);
	nvmlReturn_t (*by_uuid)(const char *uuid, nvmlDevice_t *device);
	nvmlReturn_t (*memory)(nvmlDevice_t device, nvmlMemory_t *memory);
	nvmlReturn_t (*memory_v2)(nvmlDevice_t device, nvmlMemory_v2_t *memory); /* optional */
};

static void nvml_path(const char *driver, char *out, size_t len)
{
	const char *slash = strrchr(driver, '/');

	if (slash == NULL)
		snprintf(out, len, "libnvidia-ml.so.1");
	else
		snprintf(out, len, "%.*s/libnvidia-ml.so.1", (int)(slash - driver), driver);
}

static int nvml_open(struct nvml *nv, const char *path)
{
	memset(nv, 0, sizeof(*nv));
	nv->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (nv->lib == NULL) {
		gp_log_debug("NVML %s: %s", path, dlerror());
		return -1;
	}
	*(void **)&nv->init = dlsym(nv->lib, "nvmlInit_v2");
	*(void **)&nv->shutdown = dlsym(nv->lib, "nvmlShutdown");
	*(void **)&nv->error_string = dlsym(nv->lib, "nvmlErrorString");
	*(void **)&nv->driver_version = dlsym(nv->lib, "nvmlSystemGetDriverVersion");
	*(void **)&nv->by_uuid = dlsym(nv->lib, "nvmlDeviceGetHandleByUUID");
	*(void **)&nv->memory = dlsym(nv->lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&nv->memory_v2 = dlsym(nv->lib, "nvmlDeviceGetMemoryInfo_v2");
	if (!nv->init || !nv->shutdown || !nv->error_string || !nv->driver_version ||
	    !nv->by_uuid || !nv->memory) {
		gp_log_warnx("NVML %s: not an NVML library (entry points missing); ignored", path);
		return -1;
	}
	return 0;
}

static void uuid_text(const uint8_t *b, char out[48])
{
	snprintf(out, 48,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/*
 * Whether NVML's memory for h is CUDA's total: NVML's v1 total, or v2's total less what the
 * driver reserves for itself (NVIDIA's NVML counts that reserve in its total, CUDA does not).
 */
static bool memory_matches(const struct nvml *nv, nvmlDevice_t h, uint64_t cuda_total,
			   uint64_t *nvml_total)
{
	nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
	nvmlMemory_t m1;

	*nvml_total = 0;
	if (nv->memory_v2 && nv->memory_v2(h, &m2) == NVML_SUCCESS) {
		*nvml_total = m2.total;
		if (m2.total >= m2.reserved && m2.total - m2.reserved == cuda_total)
			return true;
	}
	if (nv->memory(h, &m1) == NVML_SUCCESS) {
		*nvml_total = m1.total;
		return m1.total == cuda_total;
	}
	return false;
}

static const char *check_gpu(const struct nvml *nv, const Gp__GpuInfo *g)
{
	char uuid[48];
	nvmlDevice_t h;
	uint64_t total;
	nvmlReturn_t r;

	if (g->uuid.len != 16)
		return GP_NVML_MISMATCH;
	uuid_text(g->uuid.data, uuid);
	r = nv->by_uuid(uuid, &h);
	if (r != NVML_SUCCESS) {
		gp_log_warnx("GPU %u (%s, %s): NVML does not list this GPU (%s); CUDA and NVML "
			     "disagree about the devices",
			     g->index, g->name, uuid, nv->error_string(r));
		return GP_NVML_MISMATCH;
	}
	if (!memory_matches(nv, h, g->total_mem, &total)) {
		gp_log_warnx("GPU %u (%s, %s): NVML reports %llu bytes of memory, CUDA %llu",
			     g->index, g->name, uuid, (unsigned long long)total,
			     (unsigned long long)g->total_mem);
		return GP_NVML_MISMATCH;
	}
	return GP_NVML_MATCH;
}

int gp__nvml_crosscheck(const char *driver, Gp__Inventory *inv, char *lib, size_t liblen,
			char *version, size_t verlen)
{
	struct nvml nv;
	nvmlReturn_t r;
	int bad = 0;

	nvml_path(driver, lib, liblen);
	version[0] = '\0';
	if (nvml_open(&nv, lib)) {
		gp_log_info("no NVML (%s): the GPUs are CUDA's alone", lib);
		lib[0] = '\0';
		return 0;
	}
	r = nv.init();
	if (r != NVML_SUCCESS) {
		gp_log_warnx("NVML %s: nvmlInit failed: %s; the GPUs are CUDA's alone", lib,
			     nv.error_string(r));
		lib[0] = '\0';
		return 0;
	}
	if (nv.driver_version(version, (unsigned)verlen) != NVML_SUCCESS)
		version[0] = '\0';
	for (size_t i = 0; i < inv->n_gpu; i++) {
		inv->gpu[i]->nvml = (char *)check_gpu(&nv, inv->gpu[i]);
		bad += strcmp(inv->gpu[i]->nvml, GP_NVML_MATCH) != 0;
	}
	nv.shutdown();
	inv->nvml_library = lib;
	inv->nvml_driver_version = version;
	return bad;
}
