/* test_nvml.c -- softgpu's libnvidia-ml.so.1 against softgpu's own CUDA answers: the same
 * devices, names, UUIDs, PCI ids and memory; used memory, processes and busy time after known
 * allocations and a known kernel; and what it must refuse. Runs with SOFTGPU_DEVICES=2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvml_abi.h"
#include "nvml_source.h"
#include "sgtest.h"

#define NV(x) assert_int_equal((x), NVML_SUCCESS)

static void uuid_text(const CUuuid *u, char out[48])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, 48,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/* What a fresh process lists with CUDA_VISIBLE_DEVICES=vis: count, then device 0's UUID. */
static void look(const char *vis, unsigned *count, char uuid[48])
{
	char buf[64] = {0};
	int fd[2];
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		nvmlDevice_t d;
		unsigned n = 0;

		close(fd[0]);
		setenv("CUDA_VISIBLE_DEVICES", vis, 1);
		if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetCount_v2(&n) != NVML_SUCCESS)
			_exit(1);
		memcpy(buf, &n, sizeof(n));
		if (n > 0 && (nvmlDeviceGetHandleByIndex_v2(0, &d) != NVML_SUCCESS ||
			      nvmlDeviceGetUUID(d, buf + 8, 48) != NVML_SUCCESS))
			_exit(1);
		if (write(fd[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	memcpy(count, buf, sizeof(*count));
	memcpy(uuid, buf + 8, 48);
}

/* First, while this process has not initialized anything: the uninitialized contract, and
 * CUDA_VISIBLE_DEVICES in children (softgpu reads the environment once per process). */
static void test_before_init(void **state)
{
	char one[48], none[48], want[48];
	unsigned n = 99, nvis, nnone;
	nvmlDevice_t d;
	CUuuid u;

	(void)state;
	assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, &d), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlInitWithFlags(0x100), NVML_ERROR_INVALID_ARGUMENT);
	assert_string_equal(nvmlErrorString(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
	assert_string_equal(nvmlErrorString((nvmlReturn_t)12345), "Unknown Error");

	look("1", &nvis, one);
	look("", &nnone, none);
	assert_int_equal(nvis, 1);
	assert_int_equal(nnone, 0);
	CK(cuInit(0));
	CK(cuDeviceGetUuid_v2(&u, 1));
	uuid_text(&u, want);
	assert_string_equal(one, want);
}

static void test_devices_match_cuda(void **state)
{
	unsigned n;
	int count;

	(void)state;
	NV(nvmlInit_v2());
	CK(cuDeviceGetCount(&count));
	NV(nvmlDeviceGetCount_v2(&n));
	assert_int_equal(count, 2);
	assert_int_equal(n, (unsigned)count);
	for (int i = 0; i < count; i++) {
		char name[256], nname[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[48], nuuid[96],
			bus[32];
		nvmlDevice_t d, by;
		nvmlPciInfo_t pci;
		nvmlMemory_t mem;
		nvmlMemory_v2_t mem2 = {.version = nvmlMemory_v2};
		nvmlComputeMode_t mode;
		unsigned idx, cur, pend;
		int pbus, pdev, pdom, cmode, ma, mi;
		size_t total;
		CUuuid u;

		NV(nvmlDeviceGetHandleByIndex_v2((unsigned)i, &d));
		NV(nvmlDeviceGetIndex(d, &idx));
		assert_int_equal(idx, (unsigned)i);
		CK(cuDeviceGetName(name, sizeof(name), i));
		NV(nvmlDeviceGetName(d, nname, sizeof(nname)));
		assert_string_equal(nname, name);
		CK(cuDeviceGetUuid_v2(&u, i));
		uuid_text(&u, uuid);
		NV(nvmlDeviceGetUUID(d, nuuid, sizeof(nuuid)));
		assert_string_equal(nuuid, uuid);
		NV(nvmlDeviceGetHandleByUUID(uuid, &by));
		assert_ptr_equal(by, d);

		CK(cuDeviceGetAttribute(&pbus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i));
		CK(cuDeviceGetAttribute(&pdev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, i));
		CK(cuDeviceGetAttribute(&pdom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, i));
		NV(nvmlDeviceGetPciInfo_v3(d, &pci));
		assert_int_equal(pci.bus, (unsigned)pbus);
		assert_int_equal(pci.device, (unsigned)pdev);
		assert_int_equal(pci.domain, (unsigned)pdom);
		/* NVML's bus id is CUDA's with an 8-digit domain */
		CK(cuDeviceGetPCIBusId(bus, sizeof(bus), i));
		assert_string_equal(pci.busIdLegacy, bus);
		assert_string_equal(pci.busId + 4, bus);
		NV(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &by));
		assert_ptr_equal(by, d);
		NV(nvmlDeviceGetHandleByPciBusId_v2(bus, &by));
		assert_ptr_equal(by, d);

		CK(cuDeviceTotalMem_v2(&total, i));
		NV(nvmlDeviceGetMemoryInfo(d, &mem));
		assert_int_equal(mem.total, total);
		assert_int_equal(mem.free + mem.used, mem.total);
		NV(nvmlDeviceGetMemoryInfo_v2(d, &mem2));
		assert_int_equal(mem2.total, total);
		assert_int_equal(mem2.reserved, 0);

		CK(cuDeviceGetAttribute(&cmode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, i));
		NV(nvmlDeviceGetComputeMode(d, &mode));
		assert_int_equal(mode, cmode);
		CK(cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i));
		CK(cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i));
		NV(nvmlDeviceGetCudaComputeCapability(d, &pbus, &pdev));
		assert_int_equal(pbus, ma);
		assert_int_equal(pdev, mi);
		NV(nvmlDeviceGetMigMode(d, &cur, &pend));
		assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
		assert_int_equal(pend, NVML_DEVICE_MIG_DISABLE);
	}
	NV(nvmlShutdown());
}

static void test_system(void **state)
{
	char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE], nv[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	int cuda, drv;

	(void)state;
	NV(nvmlInit_v2());
	NV(nvmlSystemGetCudaDriverVersion(&cuda));
	CK(cuDriverGetVersion(&drv));
	assert_int_equal(cuda, drv);
	NV(nvmlSystemGetDriverVersion(v, sizeof(v)));
	NV(nvmlSystemGetNVMLVersion(nv, sizeof(nv)));
	assert_true(strlen(v) > 0);
	assert_non_null(strstr(nv, v));
	assert_int_equal(nvmlSystemGetDriverVersion(v, 1), NVML_ERROR_INSUFFICIENT_SIZE);
	NV(nvmlShutdown());
}

/* Init and shutdown pair up: handles stay valid until the last shutdown. */
static void test_refcount(void **state)
{
	nvmlDevice_t d;
	unsigned n;

	(void)state;
	NV(nvmlInit_v2());
	NV(nvmlInit());
	NV(nvmlDeviceGetHandleByIndex_v2(0, &d));
	NV(nvmlShutdown());
	NV(nvmlDeviceGetCount_v2(&n));
	NV(nvmlDeviceGetIndex(d, &n));
	NV(nvmlShutdown());
	assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlDeviceGetIndex(d, &n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

static void test_refusals(void **state)
{
	char small[4];
	nvmlDevice_t d, bogus;
	nvmlMemory_v2_t mem2 = {.version = 1};
	nvmlUtilization_t ut;
	unsigned v;

	(void)state;
	NV(nvmlInit_v2());
	NV(nvmlDeviceGetHandleByIndex_v2(0, &d));
	bogus = (nvmlDevice_t)((char *)d + 1);
	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetHandleByIndex_v2(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetIndex(bogus, &v), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetIndex(NULL, &v), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetUtilizationRates(bogus, &ut), NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-nope", &bogus), NVML_ERROR_NOT_FOUND);
	assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("00000000:63:00.0", &bogus),
			 NVML_ERROR_NOT_FOUND);
	assert_int_equal(nvmlDeviceGetHandleByPciBusId_v2("zz", &bogus),
			 NVML_ERROR_INVALID_ARGUMENT);
	assert_int_equal(nvmlDeviceGetName(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(nvmlDeviceGetUUID(d, small, sizeof(small)), NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(nvmlDeviceGetMemoryInfo_v2(d, &mem2),
			 NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
	/* what a CPU device cannot answer honestly */
	assert_int_equal(nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v),
			 NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceGetPowerUsage(d, &v), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v), NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(nvmlDeviceGetMinorNumber(d, &v), NVML_ERROR_NOT_SUPPORTED);
	NV(nvmlShutdown());
}

/* Used memory is softgpu's allocator charge; a context makes this process listed. */
static void test_memory_and_processes(void **state)
{
	nvmlProcessInfo_t p[2];
	nvmlMemory_t m0, m1, m2;
	nvmlDevice_t d;
	CUcontext ctx;
	CUdeviceptr ptr;
	unsigned n = 0;

	(void)state;
	NV(nvmlInit_v2());
	NV(nvmlDeviceGetHandleByIndex_v2(1, &d));
	NV(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, NULL));
	assert_int_equal(n, 0);
	CK(cuCtxCreate(&ctx, NULL, 0, 1));
	NV(nvmlDeviceGetMemoryInfo(d, &m0));
	CK(cuMemAlloc(&ptr, 3 << 20));
	NV(nvmlDeviceGetMemoryInfo(d, &m1));
	assert_int_equal(m1.used - m0.used, 3 << 20);
	n = 0;
	assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, p),
			 NVML_ERROR_INSUFFICIENT_SIZE);
	assert_int_equal(n, 1);
	n = 2;
	NV(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, p));
	assert_int_equal(n, 1);
	assert_int_equal(p[0].pid, (unsigned)getpid());
	assert_int_equal(p[0].usedGpuMemory, m1.used);
	assert_int_equal(p[0].gpuInstanceId, 0xFFFFFFFFu);
	CK(cuMemFree(ptr));
	NV(nvmlDeviceGetMemoryInfo(d, &m2));
	assert_int_equal(m2.used, m0.used);
	CK(cuCtxDestroy(ctx));
	n = 2;
	NV(nvmlDeviceGetComputeRunningProcesses_v3(d, &n, p));
	assert_int_equal(n, 0);
	NV(nvmlShutdown());
}

/* Busy time is exact: nothing runs, nothing counts; a kernel counts no more than the time
 * between the events around it, and more than nothing. */
static void test_busy_time(void **state)
{
	static const CUuuid id = {.bytes = GP_NVML_SOURCE_ID_BYTES};
	const struct gp__nvml_source *src = NULL;
	enum { N = 1 << 18 };
	uint64_t b0[2], b1[2], t0, t1;
	nvmlUtilization_t u;
	nvmlDevice_t d;
	CUcontext ctx;
	CUmodule m;
	CUfunction f;
	CUevent e0, e1;
	CUdeviceptr a, b, c;
	int n = N;
	void *args[] = {&a, &b, &c, &n};
	float ms;

	(void)state;
	CK(cuGetExportTable((const void **)&src, &id));
	assert_non_null(src);
	NV(nvmlInit_v2());
	NV(nvmlDeviceGetHandleByIndex_v2(0, &d));
	CK(cuCtxCreate(&ctx, NULL, 0, 0));
	m = sgt_module("vector_add.ptx");
	f = sgt_function(m, "vector_add");
	CK(cuMemAlloc(&a, N * 4));
	CK(cuMemAlloc(&b, N * 4));
	CK(cuMemAlloc(&c, N * 4));
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));

	/* an idle period: exactly zero */
	CK(cuCtxSynchronize());
	NV(nvmlDeviceGetUtilizationRates(d, &u));
	CK(src->busy(0, b0, &t0));
	CK(src->busy(0, b1, &t1));
	assert_memory_equal(b0, b1, sizeof(b0));
	NV(nvmlDeviceGetUtilizationRates(d, &u));
	assert_int_equal(u.gpu, 0);
	assert_int_equal(u.memory, 0);

	CK(src->busy(0, b0, &t0));
	CK(cuEventRecord(e0, NULL));
	CK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CK(cuEventRecord(e1, NULL));
	CK(cuEventSynchronize(e1));
	CK(src->busy(0, b1, &t1));
	CK(cuEventElapsedTime(&ms, e0, e1));
	assert_true(b1[0] > b0[0]);
	assert_true(b1[0] - b0[0] <= (uint64_t)(ms * 1e6) + 1000);
	assert_true(b1[1] - b0[1] >= b1[0] - b0[0]); /* the memory count includes kernels */
	assert_true(b1[1] - b0[1] <= t1 - t0);
	NV(nvmlDeviceGetUtilizationRates(d, &u));
	assert_true(u.gpu <= 100);
	assert_true(u.memory >= u.gpu);

	/* a copy is memory time, not kernel time */
	CK(src->busy(0, b0, &t0));
	CK(cuMemcpyDtoD(c, a, N * 4));
	CK(cuCtxSynchronize());
	CK(src->busy(0, b1, &t1));
	assert_int_equal(b1[0], b0[0]);
	assert_true(b1[1] > b0[1]);

	CK(cuCtxDestroy(ctx));
	NV(nvmlShutdown());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_init), cmocka_unit_test(test_devices_match_cuda),
		cmocka_unit_test(test_system),	    cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_refusals),    cmocka_unit_test(test_memory_and_processes),
		cmocka_unit_test(test_busy_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
