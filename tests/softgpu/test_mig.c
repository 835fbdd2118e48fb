/* test_mig.c -- softgpu's MIG emulation (SOFTGPU_MIG): the instances CUDA enumerates, with and
 * without CUDA_VISIBLE_DEVICES naming them, their memory and SMs; NVML's view of the GPUs in MIG
 * mode and their instances; bad values refused with a message. cuInit reads the environment
 * once per process, so each case runs in a child process. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvml_abi.h"
#include "sgtest.h"

#define MAXI 7

struct view {
	CUresult init;
	int count;
	char name[2][128];
	size_t mem[2];
	int sms[2];
	CUuuid uuid[2];
	size_t info_total;  /* cuMemGetInfo's total on device 0 */
	CUresult big_alloc; /* device 0's memory and 1 MiB more */
	CUresult fit_alloc; /* 1 MiB */
	nvmlReturn_t nv_init;
	unsigned nv_count;
	unsigned mode[2], max[2], ninst[2];
	char gpu_uuid[2][48];
	char uuid_s[2][MAXI][48], iname[2][MAXI][96];
	unsigned isms[2][MAXI], gi[2][MAXI], ci[2][MAXI], slices[2][MAXI];
	unsigned long long imb[2][MAXI], itotal[2][MAXI];
	int parent_ok[2][MAXI], by_uuid_ok[2][MAXI], is_mig[2][MAXI], index_ok[2][MAXI];
	nvmlReturn_t attr_gpu, past_last, gi_gpu, pci_mig;
	char err[600]; /* what softgpu logged (SOFTGPU_LOG=1) */
};

static void nvml_view(struct view *v)
{
	v->nv_init = nvmlInit_v2();
	if (v->nv_init != NVML_SUCCESS || nvmlDeviceGetCount_v2(&v->nv_count) != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < v->nv_count && i < 2; i++) {
		unsigned pending;
		nvmlDevice_t h;

		if (nvmlDeviceGetHandleByIndex_v2(i, &h) != NVML_SUCCESS)
			continue;
		nvmlDeviceGetUUID(h, v->gpu_uuid[i], sizeof(v->gpu_uuid[i]));
		nvmlDeviceGetMigMode(h, &v->mode[i], &pending);
		nvmlDeviceGetMaxMigDeviceCount(h, &v->max[i]);
		if (i == 0) {
			nvmlDeviceAttributes_t a;
			unsigned id;

			v->attr_gpu = nvmlDeviceGetAttributes_v2(h, &a);
			v->gi_gpu = nvmlDeviceGetGpuInstanceId(h, &id);
		}
		for (unsigned k = 0; k < v->max[i] && k < MAXI; k++) {
			nvmlDeviceAttributes_t a;
			nvmlMemory_t m;
			nvmlDevice_t mh, back, by;
			nvmlPciInfo_t pci;
			unsigned is, idx = ~0u;
			nvmlReturn_t r = nvmlDeviceGetMigDeviceHandleByIndex(h, k, &mh);

			if (r != NVML_SUCCESS) {
				v->past_last = r;
				break;
			}
			v->ninst[i]++;
			nvmlDeviceGetUUID(mh, v->uuid_s[i][k], sizeof(v->uuid_s[i][k]));
			nvmlDeviceGetName(mh, v->iname[i][k], sizeof(v->iname[i][k]));
			if (nvmlDeviceGetAttributes_v2(mh, &a) == NVML_SUCCESS) {
				v->isms[i][k] = a.multiprocessorCount;
				v->imb[i][k] = a.memorySizeMB;
				v->slices[i][k] = a.gpuInstanceSliceCount;
			}
			if (nvmlDeviceGetMemoryInfo(mh, &m) == NVML_SUCCESS)
				v->itotal[i][k] = m.total;
			nvmlDeviceGetGpuInstanceId(mh, &v->gi[i][k]);
			nvmlDeviceGetComputeInstanceId(mh, &v->ci[i][k]);
			v->parent_ok[i][k] = nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
						     mh, &back) == NVML_SUCCESS &&
					     back == h;
			v->by_uuid_ok[i][k] =
				nvmlDeviceGetHandleByUUID(v->uuid_s[i][k], &by) == NVML_SUCCESS &&
				by == mh;
			v->is_mig[i][k] =
				nvmlDeviceIsMigDeviceHandle(mh, &is) == NVML_SUCCESS && is;
			v->pci_mig = nvmlDeviceGetPciInfo_v3(mh, &pci);
			/* NVIDIA: a MIG handle's index is the one that gives it back. */
			v->index_ok[i][k] =
				nvmlDeviceGetIndex(mh, &idx) == NVML_SUCCESS && idx == k;
		}
	}
	nvmlShutdown();
}

/* What a fresh process sees with this environment (vis NULL: CUDA_VISIBLE_DEVICES unset). */
static struct view look(const char *devices, const char *mig, const char *vis, const char *mps)
{
	char path[] = "/tmp/sg_mig_XXXXXX";
	struct view v;
	int fd[2], logfd = mkstemp(path);
	pid_t pid;

	memset(&v, 0, sizeof(v));
	assert_true(logfd >= 0);
	unlink(path);
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		CUcontext ctx;
		CUdeviceptr p;

		close(fd[0]);
		dup2(logfd, 2);
		setenv("SOFTGPU_DEVICES", devices, 1);
		setenv("SOFTGPU_MEMORY", "8G", 1);
		setenv("SOFTGPU_SMS", "70", 1);
		setenv("SOFTGPU_LOG", "1", 1);
		setenv("SOFTGPU_MIG", mig, 1);
		if (vis)
			setenv("CUDA_VISIBLE_DEVICES", vis, 1);
		else
			unsetenv("CUDA_VISIBLE_DEVICES");
		if (mps)
			setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", mps, 1);
		v.init = cuInit(0);
		if (v.init == CUDA_SUCCESS && cuDeviceGetCount(&v.count) == CUDA_SUCCESS) {
			for (int d = 0; d < v.count && d < 2; d++) {
				cuDeviceGetName(v.name[d], sizeof(v.name[d]), d);
				cuDeviceTotalMem(&v.mem[d], d);
				cuDeviceGetAttribute(&v.sms[d],
						     CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
				cuDeviceGetUuid_v2(&v.uuid[d], d);
			}
			if (cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS &&
			    cuCtxSetCurrent(ctx) == CUDA_SUCCESS) {
				size_t fr;

				cuMemGetInfo(&fr, &v.info_total);
				v.big_alloc = cuMemAlloc(&p, v.mem[0] + (1u << 20));
				v.fit_alloc = cuMemAlloc(&p, 1u << 20);
			}
			nvml_view(&v);
		}
		if (write(fd[1], &v, sizeof(v)) != (ssize_t)sizeof(v))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &v, sizeof(v)), (ssize_t)sizeof(v));
	close(fd[0]);
	waitpid(pid, NULL, 0);
	assert_true(pread(logfd, v.err, sizeof(v.err) - 1, 0) >= 0);
	close(logfd);
	return v;
}

static void mig_text(const CUuuid *u, char out[48])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, 48,
		 "MIG-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/* One GPU with two instances: CUDA sees the first alone; NVML lists the GPU and both. */
static void test_default(void **state)
{
	struct view v = look("1", "0:1g.2gb,2g.4gb", NULL, NULL);
	char u[48];

	(void)state;
	CK(v.init);
	assert_int_equal(v.count, 1);
	assert_string_equal(v.name[0], "softgpu MIG 1g.2gb");
	assert_int_equal(v.mem[0], 2ull << 30);
	assert_int_equal(v.sms[0], 10); /* 70 SMs x 1/7 */
	assert_int_equal(v.info_total, 2ull << 30);
	assert_int_equal(v.big_alloc, CUDA_ERROR_OUT_OF_MEMORY);
	CK(v.fit_alloc);
	/* NVML: the GPU in MIG mode, not the instance, is the device. */
	assert_int_equal(v.nv_init, NVML_SUCCESS);
	assert_int_equal(v.nv_count, 1);
	assert_int_equal(v.mode[0], NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(v.max[0], 7);
	assert_int_equal(v.ninst[0], 2);
	assert_int_equal(v.past_last, NVML_ERROR_NOT_FOUND);
	assert_int_equal(v.attr_gpu, NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(v.gi_gpu, NVML_ERROR_NOT_SUPPORTED);
	assert_int_equal(v.pci_mig, NVML_ERROR_NOT_SUPPORTED);
	assert_true(strncmp(v.gpu_uuid[0], "GPU-", 4) == 0);
	mig_text(&v.uuid[0], u);
	assert_string_equal(v.uuid_s[0][0], u); /* CUDA's device is NVML's first instance */
	assert_true(strncmp(v.uuid_s[0][1], "MIG-", 4) == 0);
	assert_string_not_equal(v.uuid_s[0][0], v.uuid_s[0][1]);
	assert_string_equal(v.iname[0][0], "softgpu MIG 1g.2gb");
	assert_string_equal(v.iname[0][1], "softgpu MIG 2g.4gb");
	assert_int_equal(v.isms[0][0], 10);
	assert_int_equal(v.isms[0][1], 20);
	assert_int_equal(v.imb[0][0], 2048);
	assert_int_equal(v.imb[0][1], 4096);
	assert_int_equal(v.itotal[0][1], 4ull << 30);
	assert_int_equal(v.slices[0][1], 2);
	assert_int_equal(v.gi[0][0], 1);
	assert_int_equal(v.gi[0][1], 2);
	assert_int_equal(v.ci[0][1], 0);
	for (int k = 0; k < 2; k++) {
		assert_true(v.parent_ok[0][k]);
		assert_true(v.by_uuid_ok[0][k]);
		assert_true(v.is_mig[0][k]);
		assert_true(v.index_ok[0][k]);
	}
}

/* CUDA_VISIBLE_DEVICES=MIG-... selects that instance, as device 0 with its memory and SMs; its
 * UUID is stable across processes. Naming two gives the first alone. */
static void test_select(void **state)
{
	struct view a = look("1", "0:1g.2gb,2g.4gb", NULL, NULL), b, c, d;
	char u[48];

	(void)state;
	b = look("1", "0:1g.2gb,2g.4gb", a.uuid_s[0][1], NULL);
	CK(b.init);
	assert_int_equal(b.count, 1);
	assert_int_equal(b.mem[0], 4ull << 30);
	assert_int_equal(b.sms[0], 20);
	assert_int_equal(b.info_total, 4ull << 30);
	mig_text(&b.uuid[0], u);
	assert_string_equal(u, a.uuid_s[0][1]);
	/* NVML still lists the GPU and both instances. */
	assert_int_equal(b.ninst[0], 2);
	assert_string_equal(b.uuid_s[0][0], a.uuid_s[0][0]);

	char two[100];

	snprintf(two, sizeof(two), "%s,%s", a.uuid_s[0][1], a.uuid_s[0][0]);
	c = look("1", "0:1g.2gb,2g.4gb", two, NULL);
	CK(c.init);
	assert_int_equal(c.count, 1);
	assert_int_equal(c.mem[0], 4ull << 30);
	/* A prefix selects too; the GPU's own UUID stands for its first instance. */
	snprintf(two, sizeof(two), "%.12s", a.uuid_s[0][1]);
	d = look("1", "0:1g.2gb,2g.4gb", two, NULL);
	CK(d.init);
	assert_int_equal(d.mem[0], 4ull << 30);
	d = look("1", "0:1g.2gb,2g.4gb", a.gpu_uuid[0], NULL);
	CK(d.init);
	assert_int_equal(d.mem[0], 2ull << 30);
	/* An MPS client's thread percentage cuts an instance's SMs as a GPU's. */
	d = look("1", "0:1g.2gb,2g.4gb", a.uuid_s[0][1], "50");
	CK(d.init);
	assert_int_equal(d.sms[0], 10);
}

/* Two GPUs, the second in MIG mode: CUDA sees GPU 0 whole and the first instance; NVML lists
 * GPU 0 (MIG off) and then GPU 1 (MIG on). */
static void test_mixed(void **state)
{
	struct view v = look("2", "1:3g.4gb", NULL, NULL), w;

	(void)state;
	CK(v.init);
	assert_int_equal(v.count, 2);
	assert_int_equal(v.mem[0], 8ull << 30);
	assert_int_equal(v.sms[0], 70);
	assert_int_equal(v.mem[1], 4ull << 30);
	assert_int_equal(v.sms[1], 30);
	assert_int_equal(v.nv_count, 2);
	assert_int_equal(v.mode[0], NVML_DEVICE_MIG_DISABLE);
	assert_int_equal(v.max[0], 0);
	assert_int_equal(v.mode[1], NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(v.ninst[1], 1);
	assert_int_equal(v.imb[1][0], 4096);
	/* An index means the list a process without CUDA_VISIBLE_DEVICES sees. */
	w = look("2", "1:3g.4gb", "1", NULL);
	CK(w.init);
	assert_int_equal(w.count, 1);
	assert_int_equal(w.mem[0], 4ull << 30);
	/* Hiding the instance: NVML still lists GPU 1 in MIG mode. */
	w = look("2", "1:3g.4gb", "0", NULL);
	CK(w.init);
	assert_int_equal(w.count, 1);
	assert_int_equal(w.nv_count, 2);
	assert_int_equal(w.ninst[1], 1);
	/* Two GPUs in MIG mode: CUDA lists GPU 0's first instance alone; naming GPU 1's and then
	 * GPU 0's gives GPU 1's alone, the other passed over (and said so). */
	w = look("2", "0:1g.1gb;1:2g.2gb", NULL, NULL);
	CK(w.init);
	assert_int_equal(w.count, 1);
	assert_int_equal(w.mem[0], 1ull << 30);
	assert_int_equal(w.nv_count, 2);
	assert_int_equal(w.mode[0], NVML_DEVICE_MIG_ENABLE);
	assert_int_equal(w.mode[1], NVML_DEVICE_MIG_ENABLE);
	{
		char two[100];
		struct view x;

		snprintf(two, sizeof(two), "%s,%s", w.uuid_s[1][0], w.uuid_s[0][0]);
		x = look("2", "0:1g.1gb;1:2g.2gb", two, NULL);
		CK(x.init);
		assert_int_equal(x.count, 1);
		assert_int_equal(x.mem[0], 2ull << 30);
		assert_int_equal(x.sms[0], 20);
		assert_non_null(strstr(x.err, "passed over: a process uses one MIG instance"));
	}
	/* A GPU in MIG mode with no instance is no CUDA device. */
	w = look("1", "0:", NULL, NULL);
	assert_int_equal(w.init, CUDA_ERROR_NO_DEVICE);
}

static void test_bad(void **state)
{
	static const struct {
		const char *mig, *why;
	} cases[] = {
		{"0:1g.2gbx", "a profile is Ng.Mgb"},
		{"0:1g2gb", "a profile is Ng.Mgb"},
		{"0:8g.1gb", "1 to 7 compute slices"},
		{"0:0g.1gb", "1 to 7 compute slices"},
		{"0:1g.0gb", "at least 1 GiB"},
		{"0:4g.2gb,4g.2gb", "at most 7 compute slices together"},
		{"0:1g.5gb,1g.5gb", "at most SOFTGPU_MEMORY together"},
		{"1:1g.1gb", "below SOFTGPU_DEVICES"},
		{"0:1g.1gb;0:1g.1gb", "listed twice"},
		{"0:1g.1gb,,1g.1gb", "an empty profile"},
		{"x", "starts with a GPU index"},
		{"0", "starts with a GPU index"},
		{"0:1g.1gb,1g.1gb,1g.1gb,1g.1gb,1g.1gb,1g.1gb,1g.1gb,1g.1gb",
		 "at most 7 instances"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct view v = look("1", cases[i].mig, NULL, NULL);

		if (v.init != CUDA_ERROR_INVALID_VALUE || !strstr(v.err, "SOFTGPU_MIG=") ||
		    !strstr(v.err, cases[i].why))
			fail_msg("SOFTGPU_MIG=%s: cuInit %d, said \"%s\"", cases[i].mig, v.init,
				 v.err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
