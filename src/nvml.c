/* nvml.c -- gpupool's libnvidia-ml.so.1: NVML answered from the libcuda.so.1 beside it.
 * Compiled into each of our NVML builds (GP_NVML_SOURCES): softgpu's (its CPU devices) and the
 * client shim (the session's devices, through the interposer). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cuda.h>

#include "nvml_abi.h"
#include "nvml_source.h"

/*
 * DESIGN: nvmlInit finds the libcuda.so.1 in this library's own directory (dladdr), loads it
 * (the same object when the program or the daemon's worker already has it: the loader matches
 * the file) and asks it for gpupool's NVML source table (nvml_source.h). A libcuda that has no
 * such table is not ours: NVML_ERROR_LIBRARY_NOT_FOUND. Devices, names, UUIDs and PCI ids are
 * that library's CUDA answers for the same ordinals, so NVML and CUDA agree by construction.
 * The library is never unloaded, so the table and entry points stay valid after nvmlShutdown.
 *
 * MIG (a source with mig_gpu: softgpu's SOFTGPU_MIG): NVML's devices are CUDA's, less those
 * that are MIG instances, then every GPU in MIG mode (whatever CUDA_VISIBLE_DEVICES says, as
 * NVIDIA's NVML lists every GPU). A GPU in MIG mode answers its name, UUID, memory, MIG mode
 * and MIG handles; its instances are MIG handles (nvmlDeviceGetMigDeviceHandleByIndex) with
 * name, UUID, memory, attributes and instance ids. Other queries on either answer
 * NVML_ERROR_NOT_SUPPORTED: they would need a CUDA device to ask.
 *
 * lock guards refs (init/shutdown pairs) and the per-device utilization samples; the loaded
 * library, its entry points and the handles' ordinals are written once, before the first
 * successful init, and read after an acquire load of refs. Every entry point may run on any thread.
 */

#define GP_NVML_EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 64

struct nvmlDevice_st {
	int ordinal;  /* NVML's index; a MIG handle: the MIG GPU's number (mig_gpu's i) */
	int mig;      /* a MIG handle: the instance's index; -1: a device */
	bool sampled; /* busy/at hold the previous utilization sample */
	uint64_t busy[2];
	uint64_t at;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int refs;
static const struct gp__nvml_source *src;
static struct {
	CUresult (*get_name)(char *name, int len, CUdevice dev);
	CUresult (*get_uuid)(CUuuid *uuid, CUdevice dev);
	CUresult (*get_attribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);
	CUresult (*driver_version)(int *version);
} cu;
static struct nvmlDevice_st devices[MAX_DEVICES];
static struct nvmlDevice_st mig_handles[MAX_DEVICES][GP_NVML_MIG_MAX];

static nvmlReturn_t from_cu(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return NVML_SUCCESS;
	case CUDA_ERROR_NOT_SUPPORTED:
		return NVML_ERROR_NOT_SUPPORTED;
	case CUDA_ERROR_NOT_FOUND:
		return NVML_ERROR_NOT_FOUND;
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_INVALID_VALUE:
		return NVML_ERROR_INVALID_ARGUMENT;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
		return NVML_ERROR_UNINITIALIZED;
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
		return NVML_ERROR_GPU_IS_LOST;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return NVML_ERROR_MEMORY;
	default:
		return NVML_ERROR_UNKNOWN;
	}
}

/* CUDA's devices now; 0 when the source has none (no session, every device hidden). */
static int cuda_count(void)
{
	int n = 0;

	if (src->device_count(&n) != CUDA_SUCCESS || n < 0)
		return 0;
	return n < MAX_DEVICES ? n : MAX_DEVICES;
}

/* MIG GPU g, or false when there is none. */
static bool mig_info(int g, struct gp__nvml_mig_gpu *out)
{
	if (src->mig_gpu == NULL || g < 0 || g >= MAX_DEVICES)
		return false;
	if (src->mig_gpu(g, out) != CUDA_SUCCESS)
		return false;
	if (out->ninstances > GP_NVML_MIG_MAX)
		out->ninstances = GP_NVML_MIG_MAX;
	return true;
}

/* The CUDA ordinal whose UUID is u, or -1. */
static int cuda_of_uuid(const CUuuid *u)
{
	int n = cuda_count();

	for (int o = 0; o < n; o++) {
		CUuuid x;

		if (cu.get_uuid(&x, o) == CUDA_SUCCESS && memcmp(x.bytes, u->bytes, 16) == 0)
			return o;
	}
	return -1;
}

/* Is CUDA's device o a MIG instance (listed under its GPU, not as a device)? */
static bool cuda_is_mig(int o)
{
	struct gp__nvml_mig_gpu m;
	CUuuid x;

	if (src->mig_gpu == NULL || cu.get_uuid(&x, o) != CUDA_SUCCESS)
		return false;
	for (int g = 0; mig_info(g, &m); g++)
		for (unsigned k = 0; k < m.ninstances; k++)
			if (memcmp(m.instance[k].uuid.bytes, x.bytes, 16) == 0)
				return true;
	return false;
}

/* NVML's index i: CUDA's device *cuda, or MIG GPU *mig (the other -1); false: none. */
static bool resolve(int i, int *cuda, int *mig)
{
	struct gp__nvml_mig_gpu m;
	int n = cuda_count(), k = 0;

	*cuda = *mig = -1;
	for (int o = 0; o < n; o++) {
		if (cuda_is_mig(o))
			continue;
		if (k++ == i) {
			*cuda = o;
			return true;
		}
	}
	if (i - k >= 0 && mig_info(i - k, &m)) {
		*mig = i - k;
		return true;
	}
	return false;
}

/* The devices NVML lists now. */
static int device_count(void)
{
	int n = 0, cuda, mig;

	while (n < MAX_DEVICES && resolve(n, &cuda, &mig))
		n++;
	return n;
}

/* NVML's index of CUDA's device o (o not a MIG instance). */
static int nvml_index(int o)
{
	int k = 0;

	for (int x = 0; x < o; x++)
		k += !cuda_is_mig(x);
	return k;
}

static nvmlReturn_t ready(void)
{
	return atomic_load_explicit(&refs, memory_order_acquire) > 0 ? NVML_SUCCESS
								     : NVML_ERROR_UNINITIALIZED;
}

/*
 * A handle this library gave out, for a device or MIG instance still listed: CUDA's device
 * *cuda, or MIG GPU *mig with its instance *inst (-1: the GPU itself); the others -1. m (may
 * be NULL) gets the MIG GPU.
 */
static nvmlReturn_t any_arg(nvmlDevice_t h, int *cuda, int *mig, int *inst,
			    struct gp__nvml_mig_gpu *m)
{
	uintptr_t p = (uintptr_t)h, base = (uintptr_t)devices, mbase = (uintptr_t)mig_handles;
	struct gp__nvml_mig_gpu tmp;
	nvmlReturn_t r = ready();

	if (r != NVML_SUCCESS)
		return r;
	if (m == NULL)
		m = &tmp;
	*cuda = *mig = *inst = -1;
	if (p >= mbase && p < mbase + sizeof(mig_handles) &&
	    (p - mbase) % sizeof(mig_handles[0][0]) == 0) {
		if (!mig_info(h->ordinal, m) || h->mig < 0 || (unsigned)h->mig >= m->ninstances)
			return NVML_ERROR_INVALID_ARGUMENT;
		*mig = h->ordinal;
		*inst = h->mig;
		return NVML_SUCCESS;
	}
	if (p < base || p >= base + sizeof(devices) || (p - base) % sizeof(devices[0]) != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!resolve(h->ordinal, cuda, mig))
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*mig >= 0 && !mig_info(*mig, m))
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

/* A handle of a CUDA device still listed: its CUDA ordinal. A GPU in MIG mode or an instance:
 * NVML_ERROR_NOT_SUPPORTED (no CUDA device to ask). */
static nvmlReturn_t device_arg(nvmlDevice_t h, int *ordinal)
{
	int mig, inst;
	nvmlReturn_t r = any_arg(h, ordinal, &mig, &inst, NULL);

	if (r == NVML_SUCCESS && *ordinal < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	return r;
}

static nvmlReturn_t copy_string(char *dst, unsigned int len, const char *s)
{
	size_t n = strlen(s);

	if (dst == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, s, n + 1);
	return NVML_SUCCESS;
}

/* ---- loading the source -------------------------------------------------------------- */

static void *sibling(const char *name)
{
	char path[4096];
	Dl_info info;
	const char *slash;

	if (!dladdr((void *)&sibling, &info) || info.dli_fname == NULL)
		return NULL;
	slash = strrchr(info.dli_fname, '/');
	if (slash == NULL)
		return NULL;
	if (snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
		     name) >= (int)sizeof(path))
		return NULL;
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Called with lock held, once per process until it succeeds. */
static nvmlReturn_t load(void)
{
	static const CUuuid id = {.bytes = GP_NVML_SOURCE_ID_BYTES};
	CUresult (*get_table)(const void **table, const CUuuid *id);
	const struct gp__nvml_source *t = NULL;
	void *h;

	if (src)
		return NVML_SUCCESS;
	h = sibling("libcuda.so.1");
	if (h == NULL)
		return NVML_ERROR_LIBRARY_NOT_FOUND;
	get_table = (CUresult(*)(const void **, const CUuuid *))dlsym(h, "cuGetExportTable");
	cu.get_name = (CUresult(*)(char *, int, CUdevice))dlsym(h, "cuDeviceGetName");
	cu.get_uuid = (CUresult(*)(CUuuid *, CUdevice))dlsym(h, "cuDeviceGetUuid_v2");
	cu.get_attribute =
		(CUresult(*)(int *, CUdevice_attribute, CUdevice))dlsym(h, "cuDeviceGetAttribute");
	cu.driver_version = (CUresult(*)(int *))dlsym(h, "cuDriverGetVersion");
	if (!get_table || !cu.get_name || !cu.get_uuid || !cu.get_attribute || !cu.driver_version ||
	    get_table((const void **)&t, &id) != CUDA_SUCCESS || t == NULL ||
	    t->size < sizeof(*t)) {
		/* Not one of ours; it stays loaded, as a dlclose here could unload what the
		 * program itself uses. */
		return NVML_ERROR_LIBRARY_NOT_FOUND;
	}
	for (int i = 0; i < MAX_DEVICES; i++) {
		devices[i].ordinal = i;
		devices[i].mig = -1;
		for (int k = 0; k < GP_NVML_MIG_MAX; k++)
			mig_handles[i][k] = (struct nvmlDevice_st){.ordinal = i, .mig = k};
	}
	src = t;
	return NVML_SUCCESS;
}

/* The utilization sample a device's first nvmlDeviceGetUtilizationRates measures from. */
static void sample_all(void)
{
	int n = device_count();

	for (int i = 0; i < MAX_DEVICES; i++) {
		struct nvmlDevice_st *d = &devices[i];
		int o = -1, mig;

		d->sampled = i < n && resolve(i, &o, &mig) && o >= 0 &&
			     src->busy(o, d->busy, &d->at) == CUDA_SUCCESS;
	}
}

GP_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	nvmlReturn_t r;

	if (flags & ~(unsigned)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&lock);
	r = load();
	if (r == NVML_SUCCESS) {
		if (atomic_load_explicit(&refs, memory_order_relaxed) == 0)
			sample_all();
		atomic_fetch_add_explicit(&refs, 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

GP_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return nvmlInitWithFlags(0);
}

GP_NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
	return nvmlInitWithFlags(0);
}

GP_NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	nvmlReturn_t r = NVML_SUCCESS;

	pthread_mutex_lock(&lock);
	if (atomic_load_explicit(&refs, memory_order_relaxed) == 0)
		r = NVML_ERROR_UNINITIALIZED;
	else
		atomic_fetch_sub_explicit(&refs, 1, memory_order_release);
	pthread_mutex_unlock(&lock);
	return r;
}

GP_NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_ALREADY_INITIALIZED:
		return "Already Initialized";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_INSUFFICIENT_POWER:
		return "Insufficient External Power";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT:
		return "Timeout";
	case NVML_ERROR_IRQ_ISSUE:
		return "Interrupt request issue";
	case NVML_ERROR_LIBRARY_NOT_FOUND:
		return "NVML Shared Library Not Found";
	case NVML_ERROR_FUNCTION_NOT_FOUND:
		return "Function Not Found";
	case NVML_ERROR_CORRUPTED_INFOROM:
		return "Corrupted infoROM";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_RESET_REQUIRED:
		return "GPU requires restart";
	case NVML_ERROR_OPERATING_SYSTEM:
		return "The operating system has blocked the request.";
	case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
		return "RM has detected an NVML/RM version mismatch.";
	case NVML_ERROR_IN_USE:
		return "In use by another client";
	case NVML_ERROR_MEMORY:
		return "Insufficient Memory";
	case NVML_ERROR_NO_DATA:
		return "No data";
	case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
		return "Not supported when ECC is enabled";
	case NVML_ERROR_INSUFFICIENT_RESOURCES:
		return "Insufficient resources";
	case NVML_ERROR_FREQ_NOT_SUPPORTED:
		return "Frequency not supported";
	case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
		return "Argument version mismatch";
	case NVML_ERROR_DEPRECATED:
		return "Deprecated";
	case NVML_ERROR_NOT_READY:
		return "Not ready";
	case NVML_ERROR_GPU_NOT_FOUND:
		return "GPU not found";
	case NVML_ERROR_INVALID_STATE:
		return "Invalid state";
	default:
		return "Unknown Error";
	}
}

/* ---- the system ---------------------------------------------------------------------- */

GP_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	nvmlReturn_t r = ready();

	return r != NVML_SUCCESS ? r : copy_string(version, length, src->driver_version);
}

/* NVIDIA's form: the CUDA major version, then the driver version ("13.580.65.06"). */
GP_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
	char buf[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	int v = 0;
	nvmlReturn_t r = ready();

	if (r != NVML_SUCCESS)
		return r;
	r = from_cu(cu.driver_version(&v));
	if (r != NVML_SUCCESS)
		return r;
	snprintf(buf, sizeof(buf), "%d.%s", v / 1000, src->driver_version);
	return copy_string(version, length, buf);
}

GP_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	nvmlReturn_t r = ready();

	if (r != NVML_SUCCESS)
		return r;
	if (cudaDriverVersion == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	return from_cu(cu.driver_version(cudaDriverVersion));
}

GP_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* ---- finding devices ----------------------------------------------------------------- */

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	nvmlReturn_t r = ready();

	if (r != NVML_SUCCESS)
		return r;
	if (deviceCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = (unsigned)device_count();
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
	return nvmlDeviceGetCount_v2(deviceCount);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t r = ready();

	if (r != NVML_SUCCESS)
		return r;
	if (device == NULL || index >= (unsigned)device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" (or "MIG-..."), as nvidia-smi and
 * CUDA_VISIBLE_DEVICES spell it. */
static void uuid_bytes_text(const char *prefix, const CUuuid *u, char out[48])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, 48, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 prefix, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

static nvmlReturn_t uuid_text(int ordinal, char out[48])
{
	CUuuid u;
	nvmlReturn_t r = from_cu(cu.get_uuid(&u, ordinal));

	if (r != NVML_SUCCESS)
		return r;
	uuid_bytes_text("GPU-", &u, out);
	return NVML_SUCCESS;
}

/* How many GPUs are in MIG mode. */
static int mig_count(void)
{
	struct gp__nvml_mig_gpu m;
	int g = 0;

	while (g < MAX_DEVICES && mig_info(g, &m))
		g++;
	return g;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
	nvmlReturn_t r = ready();
	int n;

	if (r != NVML_SUCCESS)
		return r;
	if (uuid == NULL || device == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = cuda_count();
	for (int i = 0; i < n; i++) {
		char s[48];

		if (!cuda_is_mig(i) && uuid_text(i, s) == NVML_SUCCESS &&
		    strcasecmp(s, uuid) == 0) {
			*device = &devices[nvml_index(i)];
			return NVML_SUCCESS;
		}
	}
	/* GPUs in MIG mode by their GPU-..., instances (MIG handles) by their MIG-... */
	for (int g = 0; src->mig_gpu; g++) {
		struct gp__nvml_mig_gpu m;
		char s[48];

		if (!mig_info(g, &m))
			break;
		uuid_bytes_text("GPU-", &m.uuid, s);
		if (strcasecmp(s, uuid) == 0) {
			*device = &devices[device_count() - mig_count() + g];
			return NVML_SUCCESS;
		}
		for (unsigned k = 0; k < m.ninstances; k++) {
			uuid_bytes_text("MIG-", &m.instance[k].uuid, s);
			if (strcasecmp(s, uuid) == 0) {
				*device = &mig_handles[g][k];
				return NVML_SUCCESS;
			}
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t attribute(int ordinal, CUdevice_attribute a, int *v)
{
	return from_cu(cu.get_attribute(v, a, ordinal));
}

/* domain:bus:device[.function] (4 or 8 hex digits of domain), or bus:device[.function]. */
static bool parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *dev)
{
	unsigned fn = 0;
	char tail;

	if (sscanf(s, "%x:%x:%x.%x%c", domain, bus, dev, &fn, &tail) == 4 ||
	    sscanf(s, "%x:%x:%x%c", domain, bus, dev, &tail) == 3)
		return fn == 0;
	*domain = 0;
	return sscanf(s, "%x:%x.%x%c", bus, dev, &fn, &tail) == 3 && fn == 0;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId,
							     nvmlDevice_t *device)
{
	unsigned domain, bus, dev;
	nvmlReturn_t r = ready();
	int n;

	if (r != NVML_SUCCESS)
		return r;
	if (pciBusId == NULL || device == NULL || strlen(pciBusId) > 64)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!parse_bus_id(pciBusId, &domain, &bus, &dev))
		return NVML_ERROR_INVALID_ARGUMENT;
	n = cuda_count();
	for (int i = 0; i < n; i++) {
		int d = -1, b = -1, v = -1;

		if (cuda_is_mig(i))
			continue;

		if (attribute(i, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &d) == NVML_SUCCESS &&
		    attribute(i, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &b) == NVML_SUCCESS &&
		    attribute(i, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &v) == NVML_SUCCESS &&
		    (unsigned)d == domain && (unsigned)b == bus && (unsigned)v == dev) {
			*device = &devices[nvml_index(i)];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId,
							  nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, NULL);

	if (r != NVML_SUCCESS)
		return r;
	if (index == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* A MIG handle's index is the one nvmlDeviceGetMigDeviceHandleByIndex takes (NVIDIA's
	 * documented behaviour). */
	*index = inst >= 0 ? (unsigned)inst : (unsigned)device->ordinal;
	return NVML_SUCCESS;
}

/* ---- identity ------------------------------------------------------------------------ */

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	struct gp__nvml_mig_gpu m;
	char buf[256];
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (inst >= 0) /* NVIDIA's spelling: "<GPU> MIG 1g.10gb" */
		snprintf(buf, sizeof(buf), "%s MIG %s", m.name, m.instance[inst].profile);
	else if (mig >= 0)
		snprintf(buf, sizeof(buf), "%s", m.name);
	else
		r = from_cu(cu.get_name(buf, sizeof(buf), o));
	return r != NVML_SUCCESS ? r : copy_string(name, length, buf);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	struct gp__nvml_mig_gpu m;
	char buf[48];
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (inst >= 0)
		uuid_bytes_text("MIG-", &m.instance[inst].uuid, buf);
	else if (mig >= 0)
		uuid_bytes_text("GPU-", &m.uuid, buf);
	else
		r = uuid_text(o, buf);
	return r != NVML_SUCCESS ? r : copy_string(uuid, length, buf);
}

/* CUDA knows the bus address but not the PCI device and subsystem ids: those are 0. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	int o, d, b, v;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	if (pci == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((r = attribute(o, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &d)) != NVML_SUCCESS ||
	    (r = attribute(o, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &b)) != NVML_SUCCESS ||
	    (r = attribute(o, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &v)) != NVML_SUCCESS)
		return r;
	memset(pci, 0, sizeof(*pci));
	pci->domain = (unsigned)d;
	pci->bus = (unsigned)b;
	pci->device = (unsigned)v;
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.0",
		 pci->domain & 0xffff, pci->bus & 0xff, pci->device & 0xff);
	snprintf(pci->busId, sizeof(pci->busId), "%08x:%02x:%02x.0", pci->domain, pci->bus & 0xff,
		 pci->device & 0xff);
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
							       int *minor)
{
	int o;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	if (major == NULL || minor == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = attribute(o, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major);
	return r != NVML_SUCCESS
		       ? r
		       : attribute(o, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
}

/* CUDA's compute modes carry NVML's numbers (DEFAULT 0, PROHIBITED 2, EXCLUSIVE_PROCESS 3). */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
	int o, v;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	if (mode == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = attribute(o, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, &v);
	if (r == NVML_SUCCESS)
		*mode = (nvmlComputeMode_t)v;
	return r;
}

/* A GPU in MIG mode: enabled; other devices: disabled; none pending (modes never change). An
 * instance has no mode: NOT_SUPPORTED. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
						 unsigned int *pendingMode)
{
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, NULL);

	if (r != NVML_SUCCESS)
		return r;
	if (inst >= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (currentMode == NULL || pendingMode == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*currentMode = mig >= 0 ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
	*pendingMode = *currentMode;
	return NVML_SUCCESS;
}

/* The most MIG devices a GPU in MIG mode can hold (7); 0 for any other device. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, NULL);

	if (r != NVML_SUCCESS)
		return r;
	if (inst >= 0 || count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = mig >= 0 ? GP_NVML_MIG_MAX : 0;
	return NVML_SUCCESS;
}

/* The instance at index (below nvmlDeviceGetMaxMigDeviceCount) of a GPU in MIG mode;
 * NOT_FOUND where there is none, NOT_SUPPORTED for a device not in MIG mode. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
								unsigned int index,
								nvmlDevice_t *migDevice)
{
	struct gp__nvml_mig_gpu m;
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (inst >= 0 || migDevice == NULL || index >= GP_NVML_MIG_MAX)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (mig < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (index >= m.ninstances)
		return NVML_ERROR_NOT_FOUND;
	*migDevice = &mig_handles[mig][index];
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
							unsigned int *isMigDevice)
{
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, NULL);

	if (r != NVML_SUCCESS)
		return r;
	if (isMigDevice == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*isMigDevice = inst >= 0;
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
									 nvmlDevice_t *device)
{
	int o, mig, inst;
	nvmlReturn_t r = any_arg(migDevice, &o, &mig, &inst, NULL);

	if (r != NVML_SUCCESS)
		return r;
	if (inst < 0 || device == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[device_count() - mig_count() + mig];
	return NVML_SUCCESS;
}

/* An instance's ids; NOT_SUPPORTED for anything else (NVIDIA's codes). */
static nvmlReturn_t instance_id(nvmlDevice_t device, unsigned int *id, bool compute)
{
	struct gp__nvml_mig_gpu m;
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (id == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (inst < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*id = compute ? m.instance[inst].compute_instance : m.instance[inst].gpu_instance;
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
	return instance_id(device, id, false);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
	return instance_id(device, id, true);
}

/* An instance's multiprocessors, slices and memory; no engine of ours is shared (0). Only MIG
 * handles have attributes, as NVIDIA's NVML: NOT_SUPPORTED for the others. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
						       nvmlDeviceAttributes_t *attributes)
{
	struct gp__nvml_mig_gpu m;
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (attributes == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (inst < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(attributes, 0, sizeof(*attributes));
	attributes->multiprocessorCount = m.instance[inst].sm_count;
	attributes->gpuInstanceSliceCount = m.instance[inst].slices;
	attributes->computeInstanceSliceCount = m.instance[inst].slices;
	attributes->memorySizeMB = m.instance[inst].memory >> 20;
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device,
						    nvmlDeviceAttributes_t *attributes)
{
	return nvmlDeviceGetAttributes_v2(device, attributes);
}

/* ---- memory, utilization, processes --------------------------------------------------- */

/* What this process holds on CUDA's device with UUID u (0 when it is not CUDA's). */
static uint64_t used_by_uuid(const CUuuid *u)
{
	uint64_t used = 0, total;
	int o = cuda_of_uuid(u);

	if (o < 0 || src->memory(o, &used, &total) != CUDA_SUCCESS)
		return 0;
	return used;
}

static nvmlReturn_t memory(nvmlDevice_t device, uint64_t *total, uint64_t *used)
{
	struct gp__nvml_mig_gpu m;
	int o, mig, inst;
	nvmlReturn_t r = any_arg(device, &o, &mig, &inst, &m);

	if (r != NVML_SUCCESS)
		return r;
	if (mig >= 0) {
		/* An instance's size, or the GPU's; used: what this process holds on them. */
		*total = inst >= 0 ? m.instance[inst].memory : m.memory;
		*used = 0;
		for (unsigned k = 0; k < m.ninstances; k++)
			if (inst < 0 || (unsigned)inst == k)
				*used += used_by_uuid(&m.instance[k].uuid);
		if (*used > *total)
			*used = *total;
		return NVML_SUCCESS;
	}
	r = from_cu(src->memory(o, used, total));
	if (r == NVML_SUCCESS && *used > *total)
		*used = *total;
	return r;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *mem)
{
	uint64_t total, used;
	nvmlReturn_t r;

	if (mem == NULL)
		return ready() != NVML_SUCCESS ? NVML_ERROR_UNINITIALIZED
					       : NVML_ERROR_INVALID_ARGUMENT;
	r = memory(device, &total, &used);
	if (r == NVML_SUCCESS) {
		mem->total = total;
		mem->used = used;
		mem->free = total - used;
	}
	return r;
}

/* Nothing is set aside for the driver on our devices: reserved is 0. */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *mem)
{
	uint64_t total, used;
	nvmlReturn_t r;

	if (mem == NULL)
		return ready() != NVML_SUCCESS ? NVML_ERROR_UNINITIALIZED
					       : NVML_ERROR_INVALID_ARGUMENT;
	if (mem->version != nvmlMemory_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = memory(device, &total, &used);
	if (r == NVML_SUCCESS) {
		mem->total = total;
		mem->reserved = 0;
		mem->used = used;
		mem->free = total - used;
	}
	return r;
}

/*
 * The share of the time since the previous call for this device (or since nvmlInit, for the
 * first) in which it ran a kernel (gpu) or touched device memory with a kernel, copy or memset
 * (memory): exact busy time from the source, rounded down to a percent.
 */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
							  nvmlUtilization_t *utilization)
{
	uint64_t busy[2], now;
	struct nvmlDevice_st *d = device;
	int o;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	if (utilization == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = from_cu(src->busy(o, busy, &now));
	if (r != NVML_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	if (!d->sampled || now <= d->at) {
		/* no period to measure over yet: this call starts one */
		r = NVML_ERROR_NOT_READY;
	} else {
		uint64_t period = now - d->at;

		for (int k = 0; k < 2; k++) {
			uint64_t b = busy[k] > d->busy[k] ? busy[k] - d->busy[k] : 0;
			unsigned pct = (unsigned)(b >= period ? 100 : b * 100 / period);

			if (k == 0)
				utilization->gpu = pct;
			else
				utilization->memory = pct;
		}
	}
	memcpy(d->busy, busy, sizeof(busy));
	d->at = now;
	d->sampled = true;
	pthread_mutex_unlock(&lock);
	return r;
}

/*
 * Our libraries know one process: this one. It is listed while it holds a context on the
 * device, with the bytes the source says it holds there.
 */
GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
								    unsigned int *infoCount,
								    nvmlProcessInfo_t *infos)
{
	uint64_t used = 0;
	unsigned n;
	int o;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	if (infoCount == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = from_cu(src->process(o, &used));
	if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND)
		return r;
	n = r == NVML_SUCCESS ? 1 : 0;
	if (*infoCount < n) {
		*infoCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*infoCount = n;
	if (n == 0)
		return NVML_SUCCESS;
	if (infos == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	infos[0].pid = (unsigned)getpid();
	infos[0].usedGpuMemory = used;
	infos[0].gpuInstanceId = 0xFFFFFFFFu;
	infos[0].computeInstanceId = 0xFFFFFFFFu;
	return NVML_SUCCESS;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
								    unsigned int *infoCount,
								    nvmlProcessInfo_t *infos)
{
	return nvmlDeviceGetComputeRunningProcesses_v3(device, infoCount, infos);
}

/* ---- what a CPU or remote device cannot answer honestly ------------------------------ */

/* A device node (/dev/nvidiaN), sensors, clocks, power and fans: none of ours has them. */
static nvmlReturn_t absent(nvmlDevice_t device, const void *out)
{
	int o;
	nvmlReturn_t r = device_arg(device, &o);

	if (r != NVML_SUCCESS)
		return r;
	return out == NULL ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
	return absent(device, minorNumber);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
						     nvmlTemperatureSensors_t sensorType,
						     unsigned int *temp)
{
	(void)sensorType;
	return absent(device, temp);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
	return absent(device, power);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
						   unsigned int *clock)
{
	(void)type;
	return absent(device, clock);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
						      unsigned int *clock)
{
	(void)type;
	return absent(device, clock);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
	return absent(device, speed);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
							      unsigned int *limit)
{
	return absent(device, limit);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
							    unsigned int *limit)
{
	return absent(device, limit);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
								unsigned long long *energy)
{
	return absent(device, energy);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *p)
{
	return absent(device, p);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
							 nvmlEnableState_t *mode)
{
	return absent(device, mode);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
						 nvmlEnableState_t *pending)
{
	(void)pending;
	return absent(device, current);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device,
							nvmlBAR1Memory_t *bar1Memory)
{
	return absent(device, bar1Memory);
}

GP_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
								     unsigned int *infoCount,
								     nvmlProcessInfo_t *infos)
{
	(void)infos;
	return absent(device, infoCount);
}
