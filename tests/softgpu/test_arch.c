/* test_arch.c -- SOFTGPU_CC: every compute capability softgpu presents, its attributes, the
 * fatbin PTX it takes, and the shared-memory opt-in that follows it. cuInit reads the
 * environment once per process, so each case runs in a child process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sgtest.h"

/* cuDeviceComputeCapability is deprecated in cuda.h, and still exported and asked for. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct seen {
	CUresult init;
	int major, minor, cc_major, cc_minor;
	int smem_block, smem_sm, optin, reserved, threads_sm, blocks_sm, regs_sm, regs_block;
	int sms, l2, cluster, tensor_map, persisting_l2, policy_window;
	int ptx_version, binary_version; /* of va_multi.fatbin's vector_add */
	CUresult set_optin, set_optin_over, launch_big, launch_over;
	int occ_big;	 /* cuOccupancyMaxActiveBlocksPerMultiprocessor, 1 block needing optin */
	size_t avail_1;	 /* cuOccupancyAvailableDynamicSMemPerBlock, 1 block of 32 */
	CUresult failed; /* the first call that failed, where one did */
	int failed_line;
};

#define TRY(s, x)                                             \
	do {                                                  \
		CUresult r_ = (x);                            \
		if (r_ != CUDA_SUCCESS && (s)->failed == 0) { \
			(s)->failed = r_;                     \
			(s)->failed_line = __LINE__;          \
		}                                             \
	} while (0)

static void attr(struct seen *s, int *v, CUdevice_attribute a)
{
	TRY(s, cuDeviceGetAttribute(v, a, 0));
}

static void probe(struct seen *s)
{
	CUcontext ctx;
	CUmodule m;
	CUfunction f;
	CUdeviceptr a;
	void *img;
	size_t n;

	attr(s, &s->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	attr(s, &s->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
	TRY(s, cuDeviceComputeCapability(&s->cc_major, &s->cc_minor, 0));
	attr(s, &s->smem_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
	attr(s, &s->smem_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	attr(s, &s->optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	attr(s, &s->reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
	attr(s, &s->threads_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	attr(s, &s->blocks_sm, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
	attr(s, &s->regs_sm, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
	attr(s, &s->regs_block, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
	attr(s, &s->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	attr(s, &s->l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
	attr(s, &s->cluster, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH);
	attr(s, &s->tensor_map, CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED);
	attr(s, &s->persisting_l2, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
	attr(s, &s->policy_window, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE);

	TRY(s, cuCtxCreate(&ctx, NULL, 0, 0));
	img = sgt_read("va_multi.fatbin", &n);
	TRY(s, cuModuleLoadData(&m, img));
	free(img);
	TRY(s, cuModuleGetFunction(&f, m, "vector_add"));
	TRY(s, cuFuncGetAttribute(&s->ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
	TRY(s, cuFuncGetAttribute(&s->binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));

	/* The opt-in limit, and a launch that needs it (vector_add ignores its shared memory). */
	TRY(s, cuMemAlloc(&a, 3 * 64 * sizeof(float)));
	{
		CUdeviceptr x = a, y = a + 64 * 4, z = a + 128 * 4;
		int cnt = 64;
		void *params[] = {&x, &y, &z, &cnt};

		s->launch_over =
			cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 49152 + 1024, NULL, params, NULL);
		s->set_optin_over = cuFuncSetAttribute(
			f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, s->optin + 1);
		s->set_optin = cuFuncSetAttribute(
			f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, s->optin);
		s->launch_big = cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, (unsigned)s->optin, NULL,
					       params, NULL);
		TRY(s, cuCtxSynchronize());
	}
	TRY(s, cuOccupancyMaxActiveBlocksPerMultiprocessor(&s->occ_big, f, 32, (size_t)s->optin));
	TRY(s, cuOccupancyAvailableDynamicSMemPerBlock(&s->avail_1, f, 1, 32));
	TRY(s, cuMemFree(a));
	TRY(s, cuModuleUnload(m));
	TRY(s, cuCtxDestroy(ctx));
}

/* What a fresh process sees with SOFTGPU_CC=cc (NULL: unset). */
static struct seen look(const char *cc)
{
	struct seen s;
	int fd[2];
	pid_t pid;

	memset(&s, 0, sizeof(s));
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		unsetenv("SOFTGPU_SMS");
		if (cc)
			setenv("SOFTGPU_CC", cc, 1);
		else
			unsetenv("SOFTGPU_CC");
		s.init = cuInit(0);
		if (s.init == CUDA_SUCCESS)
			probe(&s);
		if (write(fd[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	assert_int_equal(read(fd[0], &s, sizeof(s)), (ssize_t)sizeof(s));
	close(fd[0]);
	waitpid(pid, NULL, 0);
	if (s.failed)
		fail_msg("SOFTGPU_CC=%s: line %d failed with %d", cc ? cc : "(unset)",
			 s.failed_line, (int)s.failed);
	return s;
}

/*
 * The CUDA C++ Programming Guide's technical specifications per compute capability: shared
 * memory per SM and per block (opt-in), resident threads and blocks per SM; the SM count of
 * the GPU each one models (SOFTGPU_SMS's default).
 */
static const struct {
	const char *cc;
	int sm; /* as PTX numbers it */
	int smem_sm, optin, threads_sm, blocks_sm, sms;
	int ptx; /* the PTX of va_multi.fatbin (compute_75, 80, 86) softgpu takes */
} table[] = {
	{"7.5", 75, 64 * 1024, 64 * 1024, 1024, 16, 40, 75},
	{"8.0", 80, 164 * 1024, 163 * 1024, 2048, 32, 108, 80},
	{"8.6", 86, 100 * 1024, 99 * 1024, 1536, 16, 72, 86},
	{"8.9", 89, 100 * 1024, 99 * 1024, 1536, 24, 58, 86},
	{"9.0", 90, 228 * 1024, 227 * 1024, 2048, 32, 132, 86},
	{"12.0", 120, 100 * 1024, 99 * 1024, 1536, 32, 170, 86},
	{"13.0", 130, 100 * 1024, 99 * 1024, 1536, 32, 40, 86}, /* no GPU's: 12.0's limits */
};

static void test_each_cc(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct seen s = look(table[i].cc);

		print_message("SOFTGPU_CC=%s: %d SMs, %d B shared per SM, opt-in %d, PTX %d\n",
			      table[i].cc, s.sms, s.smem_sm, s.optin, s.ptx_version);
		assert_int_equal(s.init, CUDA_SUCCESS);
		/* the attribute and cuDeviceComputeCapability agree */
		assert_int_equal(s.major * 10 + s.minor, table[i].sm);
		assert_int_equal(s.cc_major, s.major);
		assert_int_equal(s.cc_minor, s.minor);
		assert_int_equal(s.smem_block, 48 * 1024);
		assert_int_equal(s.smem_sm, table[i].smem_sm);
		assert_int_equal(s.optin, table[i].optin);
		/* what a block can opt into plus what the system reserves per block fills an SM */
		assert_int_equal(s.optin + s.reserved, s.smem_sm);
		assert_int_equal(s.reserved, table[i].sm >= 80 ? 1024 : 0);
		assert_int_equal(s.threads_sm, table[i].threads_sm);
		assert_int_equal(s.blocks_sm, table[i].blocks_sm);
		assert_int_equal(s.regs_sm, 64 * 1024);
		assert_int_equal(s.regs_block, 64 * 1024);
		assert_int_equal(s.sms, table[i].sms);
		assert_true(s.l2 >= 4 << 20);
		/* what softgpu cannot do is absent at every CC */
		assert_int_equal(s.cluster, 0);
		assert_int_equal(s.tensor_map, 0);
		assert_int_equal(s.persisting_l2, 0);
		assert_int_equal(s.policy_window, 0);
		/* the fatbin's newest PTX not above the device (compute_75, 80, 86 offered) */
		assert_int_equal(s.ptx_version, table[i].ptx);
		assert_int_equal(s.binary_version, table[i].sm);
		/* past 48 KiB only after opting in, up to the architecture's opt-in limit */
		assert_int_equal(s.launch_over, CUDA_ERROR_INVALID_VALUE);
		assert_int_equal(s.set_optin_over, CUDA_ERROR_INVALID_VALUE);
		assert_int_equal(s.set_optin, CUDA_SUCCESS);
		assert_int_equal(s.launch_big, CUDA_SUCCESS);
		assert_int_equal(s.occ_big, 1);
		assert_int_equal(s.avail_1, (size_t)s.optin);
	}
}

static void test_default_and_invalid(void **state)
{
	struct seen s = look(NULL);

	(void)state;
	assert_int_equal(s.init, CUDA_SUCCESS);
	assert_int_equal(s.major * 10 + s.minor, 75);
	assert_int_equal(s.sms, 40);
	/* a compute capability softgpu does not present, or no number at all, fails cuInit */
	assert_int_equal(look("7.0").init, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(look("10.0").init, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(look("12.1").init, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(look("8").init, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(look("8.0x").init, CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(look("sm_80").init, CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_cc),
		cmocka_unit_test(test_default_and_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
