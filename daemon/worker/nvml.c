/* nvml.c -- the inventory's NVML cross-check: per GPU the driver shows, NVML must list the same
 * UUID with the same memory; and the GPUs in MIG mode with their instances, which only NVML
 * lists in full. Runs only in `gpupool-worker --inventory` (the supervisor never loads NVML). */
#include <ctype.h>
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
	/* MIG, optional all together (NVML's names since R450) */
	nvmlReturn_t (*count)(unsigned int *n);
	nvmlReturn_t (*by_index)(unsigned int i, nvmlDevice_t *device);
	nvmlReturn_t (*name)(nvmlDevice_t device, char *name, unsigned int length);
	nvmlReturn_t (*uuid)(nvmlDevice_t device, char *uuid, unsigned int length);
	nvmlReturn_t (*mig_mode)(nvmlDevice_t device, unsigned int *current, unsigned int *pending);
	nvmlReturn_t (*max_mig)(nvmlDevice_t device, unsigned int *count);
	nvmlReturn_t (*mig_by_index)(nvmlDevice_t device, unsigned int i, nvmlDevice_t *mig);
	nvmlReturn_t (*attributes)(nvmlDevice_t device, nvmlDeviceAttributes_t *a);
	nvmlReturn_t (*gi_id)(nvmlDevice_t device, unsigned int *id);
	nvmlReturn_t (*ci_id)(nvmlDevice_t device, unsigned int *id);
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
	*(void **)&nv->count = dlsym(nv->lib, "nvmlDeviceGetCount_v2");
	*(void **)&nv->by_index = dlsym(nv->lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&nv->name = dlsym(nv->lib, "nvmlDeviceGetName");
	*(void **)&nv->uuid = dlsym(nv->lib, "nvmlDeviceGetUUID");
	*(void **)&nv->mig_mode = dlsym(nv->lib, "nvmlDeviceGetMigMode");
	*(void **)&nv->max_mig = dlsym(nv->lib, "nvmlDeviceGetMaxMigDeviceCount");
	*(void **)&nv->mig_by_index = dlsym(nv->lib, "nvmlDeviceGetMigDeviceHandleByIndex");
	*(void **)&nv->attributes = dlsym(nv->lib, "nvmlDeviceGetAttributes_v2");
	*(void **)&nv->gi_id = dlsym(nv->lib, "nvmlDeviceGetGpuInstanceId");
	*(void **)&nv->ci_id = dlsym(nv->lib, "nvmlDeviceGetComputeInstanceId");
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

/* "GPU-8932f937-..." or "MIG-..." to its 16 bytes. */
static bool uuid_bytes(const char *s, uint8_t out[16])
{
	int n = 0;

	if (strncmp(s, "GPU-", 4) != 0 && strncmp(s, "MIG-", 4) != 0)
		return false;
	for (s += 4; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			return false;
		out[n / 2] = (uint8_t)((n % 2 ? out[n / 2] << 4 : 0) |
				       (isdigit((unsigned char)*s)
						? *s - '0'
						: tolower((unsigned char)*s) - 'a' + 10));
		n++;
	}
	return n == 32 && *s == 0;
}

/* NVIDIA names an instance "<GPU> MIG 1g.10gb": the profile is what follows " MIG ". */
static void profile_of(const char *name, char *out, size_t len)
{
	const char *m = strstr(name, " MIG ");

	snprintf(out, len, "%s", m ? m + 5 : "");
}

static bool mig_supported(const struct nvml *nv)
{
	return nv->count && nv->by_index && nv->name && nv->uuid && nv->mig_mode && nv->max_mig &&
	       nv->mig_by_index && nv->attributes && nv->gi_id && nv->ci_id;
}

/* h's memory as CUDA counts it: NVML's v2 total less its reserve, or its v1 total; 0 when
 * NVML does not say. */
static uint64_t cuda_total(const struct nvml *nv, nvmlDevice_t h)
{
	nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
	nvmlMemory_t m1;

	if (nv->memory_v2 && nv->memory_v2(h, &m2) == NVML_SUCCESS && m2.total >= m2.reserved)
		return m2.total - m2.reserved;
	if (nv->memory(h, &m1) == NVML_SUCCESS)
		return m1.total;
	return 0;
}

/* Adds MIG GPU g's instances (handle h) to mig. */
static void list_instances(const struct nvml *nv, nvmlDevice_t h, unsigned g,
			   struct gp__mig_list *mig)
{
	unsigned max = 0;

	if (nv->max_mig(h, &max) != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < max && i < GP_SLICE_MIG_INSTANCES && mig->n < GP_MIG_ENTRIES;
	     i++) {
		struct gp__mig_entry *e = &mig->e[mig->n];
		nvmlDeviceAttributes_t a;
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		nvmlDevice_t m;

		if (nv->mig_by_index(h, i, &m) != NVML_SUCCESS)
			continue; /* NOT_FOUND: no instance at that index */
		memset(e, 0, sizeof(*e));
		if (nv->uuid(m, uuid, sizeof(uuid)) != NVML_SUCCESS || !uuid_bytes(uuid, e->uuid) ||
		    nv->name(m, e->name, sizeof(e->name)) != NVML_SUCCESS ||
		    nv->attributes(m, &a) != NVML_SUCCESS || nv->gi_id(m, &e->gi) != NVML_SUCCESS ||
		    nv->ci_id(m, &e->ci) != NVML_SUCCESS) {
			gp_log_warnx("NVML: MIG instance %u of GPU %u does not answer; left out", i,
				     g);
			continue;
		}
		e->instance = true;
		e->gpu = g;
		e->k = i;
		e->cuda = -1;
		e->nvml = GP_NVML_MATCH;
		profile_of(e->name, e->profile, sizeof(e->profile));
		e->sms = a.multiprocessorCount;
		e->memory = cuda_total(nv, m);
		if (e->memory == 0)
			e->memory = a.memorySizeMB << 20;
		mig->n++;
	}
}

/* The GPUs NVML says are in MIG mode, each followed by its instances. */
static void list_mig(const struct nvml *nv, struct gp__mig_list *mig)
{
	unsigned n = 0, g = 0;

	mig->n = 0;
	if (!mig_supported(nv) || nv->count(&n) != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < n && g < GP_SLICE_MIG_GPUS && mig->n < GP_MIG_ENTRIES; i++) {
		struct gp__mig_entry *e = &mig->e[mig->n];
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		unsigned cur = 0, pending = 0;
		nvmlDevice_t h;

		if (nv->by_index(i, &h) != NVML_SUCCESS ||
		    nv->mig_mode(h, &cur, &pending) != NVML_SUCCESS ||
		    cur != NVML_DEVICE_MIG_ENABLE)
			continue;
		memset(e, 0, sizeof(*e));
		if (nv->uuid(h, uuid, sizeof(uuid)) != NVML_SUCCESS || !uuid_bytes(uuid, e->uuid) ||
		    nv->name(h, e->name, sizeof(e->name)) != NVML_SUCCESS) {
			gp_log_warnx("NVML: GPU %u is in MIG mode but does not answer; left out",
				     i);
			continue;
		}
		e->gpu = g;
		e->cuda = -1;
		e->nvml = GP_NVML_MATCH;
		e->memory = cuda_total(nv, h);
		mig->n++;
		list_instances(nv, h, g, mig);
		g++;
	}
}

/* A GPU CUDA lists that is one of mig's instances: CUDA and NVML must agree on its memory and
 * multiprocessors. */
static struct gp__mig_entry *check_instance(struct gp__mig_list *mig, Gp__GpuInfo *gi)
{
	for (unsigned i = 0; i < mig->n; i++) {
		struct gp__mig_entry *e = &mig->e[i];

		if (!e->instance || gi->uuid.len != 16 || memcmp(e->uuid, gi->uuid.data, 16) != 0)
			continue;
		e->cuda = (int)gi->index;
		if (e->memory != gi->total_mem || e->sms != gi->sms) {
			gp_log_warnx(
				"MIG instance %s: NVML reports %llu bytes and %u SMs, CUDA %llu "
				"and %u",
				e->name, (unsigned long long)e->memory, e->sms,
				(unsigned long long)gi->total_mem, gi->sms);
			e->nvml = GP_NVML_MISMATCH;
		}
		return e;
	}
	return NULL;
}

int gp__nvml_crosscheck(const char *driver, Gp__Inventory *inv, char *lib, size_t liblen,
			char *version, size_t verlen, struct gp__mig_list *mig)
{
	struct nvml nv;
	nvmlReturn_t r;
	int bad = 0;

	mig->n = 0;
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
	list_mig(&nv, mig);
	for (size_t i = 0; i < inv->n_gpu; i++) {
		struct gp__mig_entry *e = check_instance(mig, inv->gpu[i]);

		inv->gpu[i]->instance = e != NULL;
		inv->gpu[i]->nvml = (char *)(e ? e->nvml : check_gpu(&nv, inv->gpu[i]));
		bad += strcmp(inv->gpu[i]->nvml, GP_NVML_MATCH) != 0;
	}
	nv.shutdown();
	inv->nvml_library = lib;
	inv->nvml_driver_version = version;
	return bad;
}
