/* nvml_client.c -- an NVML program (as monitoring tools and frameworks are: dlopen of
 * "libnvidia-ml.so.1") run through the pool's NVML shim.
 *
 *   nvml_client cuda BYTES   cuInit, the primary context of device 0 and BYTES allocated; then
 *                            every device as NVML and as CUDA report it
 *   nvml_client nocuda       NVML alone, CUDA never initialized
 *   nvml_client late BYTES   NVML first (no devices yet), then as `cuda`
 *   nvml_client util MS      device 0's utilization: 0 while idle, then over a kernel busy
 *                            for MS milliseconds by the device's timer (util_check); exits
 *
 * Prints "nvml ..." and "cuda ..." lines for the test to compare with the pool's own report,
 * then "ready", and waits for a line on stdin before it shuts NVML down and exits (so the test
 * can look at the pool meanwhile). Exits 1 with a reason on any unexpected answer. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "nvml_abi.h"
#include "spin_kernel.ptx.h"

#define DIE(...)                              \
	do {                                  \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr);          \
		exit(1);                      \
	} while (0)

static void *nvml;

static void *sym(const char *name)
{
	void *p = dlsym(nvml, name);

	if (p == NULL)
		DIE("libnvidia-ml.so.1 has no %s", name);
	return p;
}

#define NV(fn, ...)                                                         \
	do {                                                                \
		nvmlReturn_t r_ = ((__typeof__(&fn))sym(#fn))(__VA_ARGS__); \
		if (r_ != NVML_SUCCESS)                                     \
			DIE("%s: %d", #fn, (int)r_);                        \
	} while (0)
#define NVR(fn, ...) (((__typeof__(&fn))sym(#fn))(__VA_ARGS__))

static void uuid_text(const CUuuid *u, char out[48])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, 48,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

static void list_nvml(void)
{
	unsigned n;

	NV(nvmlDeviceGetCount_v2, &n);
	printf("nvml count %u\n", n);
	for (unsigned i = 0; i < n; i++) {
		char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		nvmlDevice_t d, by;
		nvmlMemory_t m;
		nvmlUtilization_t u;
		unsigned cur, pend, cnt = 0;

		NV(nvmlDeviceGetHandleByIndex_v2, i, &d);
		NV(nvmlDeviceGetName, d, name, sizeof(name));
		NV(nvmlDeviceGetUUID, d, uuid, sizeof(uuid));
		NV(nvmlDeviceGetHandleByUUID, uuid, &by);
		if (by != d)
			DIE("nvmlDeviceGetHandleByUUID(%s) is another device", uuid);
		NV(nvmlDeviceGetMigMode, d, &cur, &pend);
		printf("nvml dev %u name=%s uuid=%s\n", i, name, uuid);
		if (NVR(nvmlDeviceGetMemoryInfo, d, &m) == NVML_SUCCESS)
			printf("nvml mem %u total=%llu used=%llu free=%llu\n", i, m.total, m.used,
			       m.free);
		else
			printf("nvml mem %u unsupported\n", i);
		printf("nvml util %u %d\n", i, (int)NVR(nvmlDeviceGetUtilizationRates, d, &u));
		printf("nvml procs %u %d\n", i,
		       (int)NVR(nvmlDeviceGetComputeRunningProcesses_v3, d, &cnt, NULL));
	}
}

static void list_cuda(void)
{
	int n;

	if (cuDeviceGetCount(&n) != CUDA_SUCCESS)
		DIE("cuDeviceGetCount");
	printf("cuda count %d\n", n);
	for (int i = 0; i < n; i++) {
		char name[256], uuid[48];
		size_t total;
		CUuuid u;

		if (cuDeviceGetName(name, sizeof(name), i) || cuDeviceGetUuid_v2(&u, i) ||
		    cuDeviceTotalMem(&total, i))
			DIE("cuda device %d", i);
		uuid_text(&u, uuid);
		printf("cuda dev %d name=%s uuid=%s\n", i, name, uuid);
		printf("cuda mem %d total=%zu\n", i, total);
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * util: device 0's utilization over a period in which a kernel ran for ms milliseconds by the
 * device's own timer. The period lies within [t0, t1] of this host's clock (the readings are
 * taken during the two calls), so the percentage, rounded down from busy / period, is at least
 * the kernel's time over t1 - t0, rounded down, and at most 100: a ratio of two measurements,
 * whatever the machine's speed. Before that, a period with no kernel reads 0.
 */
static void util_check(long long ms)
{
	long long ns = ms * 1000000, got[2] = {0, 0};
	nvmlUtilization_t u;
	nvmlDevice_t d;
	void *params[2];
	CUdeviceptr out;
	CUmodule mod;
	CUfunction fn;
	uint64_t t0, t1;
	unsigned low;

	NV(nvmlDeviceGetHandleByIndex_v2, 0, &d);
	if (cuModuleLoadData(&mod, spin_ptx) || cuModuleGetFunction(&fn, mod, "spin_for") ||
	    cuMemAlloc(&out, sizeof(got)))
		DIE("spin_for setup");
	/* starts a period (NOT_READY when nvmlInit's reading was the same instant) */
	(void)NVR(nvmlDeviceGetUtilizationRates, d, &u);
	usleep(200000);
	NV(nvmlDeviceGetUtilizationRates, d, &u);
	printf("nvml idle util gpu=%u memory=%u\n", u.gpu, u.memory);
	if (u.gpu != 0)
		DIE("no kernel ran, yet utilization %u%%", u.gpu);
	t0 = mono_ns();
	NV(nvmlDeviceGetUtilizationRates, d, &u);
	params[0] = &ns;
	params[1] = &out;
	if (cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) || cuCtxSynchronize() ||
	    cuMemcpyDtoH(got, out, sizeof(got)))
		DIE("spin_for");
	NV(nvmlDeviceGetUtilizationRates, d, &u);
	t1 = mono_ns();
	if (got[0] < ns)
		DIE("the kernel saw %lld ns pass, not %lld", got[0], ns);
	low = (unsigned)((uint64_t)got[0] * 100 / (t1 - t0));
	printf("nvml busy util gpu=%u memory=%u kernel_ns=%lld period_max_ns=%llu at_least=%u\n",
	       u.gpu, u.memory, got[0], (unsigned long long)(t1 - t0), low);
	if (u.gpu < low || u.gpu > 100 || u.memory < u.gpu)
		DIE("utilization %u%% (memory %u%%): the kernel alone was at least %u%%", u.gpu,
		    u.memory, low);
}

static void cuda_setup(const char *bytes)
{
	CUcontext ctx;
	CUdeviceptr p;
	size_t fr, tot;

	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
	    cuMemAlloc(&p, strtoull(bytes, NULL, 0)))
		DIE("CUDA setup failed");
	if (cuMemGetInfo(&fr, &tot))
		DIE("cuMemGetInfo");
	printf("cuda meminfo free=%zu total=%zu\n", fr, tot);
	list_cuda();
}

int main(int argc, char **argv)
{
	char line[16], v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	const char *mode = argc > 1 ? argv[1] : "";
	bool util = strcmp(mode, "util") == 0;
	bool cuda = util || strcmp(mode, "cuda") == 0, late = strcmp(mode, "late") == 0;
	int cv;

	if (!cuda && !late && strcmp(mode, "nocuda") != 0)
		DIE("usage: nvml_client cuda BYTES | late BYTES | util MILLISECONDS | nocuda");
	if ((cuda || late) && argc < 3)
		DIE("%s needs BYTES", mode);
	nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (nvml == NULL)
		DIE("dlopen libnvidia-ml.so.1: %s", dlerror());
	if (cuda)
		cuda_setup(util ? "4096" : argv[2]);
	NV(nvmlInit_v2);
	NV(nvmlSystemGetDriverVersion, v, sizeof(v));
	NV(nvmlSystemGetCudaDriverVersion, &cv);
	printf("nvml driver %s cuda %d\n", v, cv);
	if (util) {
		util_check(atoll(argv[2]));
		NV(nvmlShutdown);
		return 0;
	}
	list_nvml();
	if (late) {
		/* the session cuInit opens shows up in the NVML already initialized */
		cuda_setup(argv[2]);
		list_nvml();
	}
	printf("ready\n");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		DIE("stdin closed");
	/* still what it was: the shim opened nothing meanwhile */
	list_nvml();
	NV(nvmlShutdown);
	if (NVR(nvmlShutdown) != NVML_ERROR_UNINITIALIZED)
		DIE("a second nvmlShutdown should be refused");
	return 0;
}
