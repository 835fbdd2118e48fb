/* test_scratch.c -- what a block can read before it writes (registers, local and shared
 * memory) is zero, never what an earlier block or launch left in softgpu's reused scratch;
 * device addresses are not where the data lies in the host process. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgtest.h"

/*
 * Each thread first reads what it has not written: shared word tid, local words 0 and 63,
 * and registers %r10-%r17 (never written before the reads), ORs them into out[block*64+tid],
 * then fills all of those with the launch's secret. Blocks run one after another on one host
 * thread (SOFTGPU_THREADS=1), so each block's reads land on the scratch the previous block,
 * or the previous launch, filled.
 */
static const char ptx[] = ".version 7.0\n"
			  ".target sm_75\n"
			  ".address_size 64\n"
			  ".visible .entry peek_then_fill(.param .u64 out, .param .u32 secret)\n"
			  "{\n"
			  "	.reg .b32 %r<20>;\n"
			  "	.reg .b64 %rd<8>;\n"
			  "	.local .align 4 .b8 loc[256];\n"
			  "	.shared .align 4 .b8 sh[256];\n"
			  "	ld.param.u64 %rd1, [out];\n"
			  "	ld.param.u32 %r1, [secret];\n"
			  "	mov.u32 %r2, %tid.x;\n"
			  "	mov.u32 %r3, %ctaid.x;\n"
			  "	shl.b32 %r4, %r2, 2;\n"
			  "	mov.u32 %r5, sh;\n"
			  "	add.u32 %r5, %r5, %r4;\n"
			  "	ld.shared.u32 %r6, [%r5];\n"
			  "	ld.local.u32 %r7, [loc];\n"
			  "	ld.local.u32 %r8, [loc+252];\n"
			  "	or.b32 %r6, %r6, %r7;\n"
			  "	or.b32 %r6, %r6, %r8;\n"
			  "	or.b32 %r6, %r6, %r10;\n"
			  "	or.b32 %r6, %r6, %r11;\n"
			  "	or.b32 %r6, %r6, %r12;\n"
			  "	or.b32 %r6, %r6, %r13;\n"
			  "	or.b32 %r6, %r6, %r14;\n"
			  "	or.b32 %r6, %r6, %r15;\n"
			  "	or.b32 %r6, %r6, %r16;\n"
			  "	or.b32 %r6, %r6, %r17;\n"
			  "	shl.b32 %r9, %r3, 6;\n"
			  "	add.u32 %r9, %r9, %r2;\n"
			  "	mul.wide.u32 %rd2, %r9, 4;\n"
			  "	add.u64 %rd3, %rd1, %rd2;\n"
			  "	st.global.u32 [%rd3], %r6;\n"
			  "	bar.sync 0;\n"
			  "	st.shared.u32 [%r5], %r1;\n"
			  "	st.local.u32 [loc], %r1;\n"
			  "	st.local.u32 [loc+252], %r1;\n"
			  "	mov.u32 %r10, %r1;\n"
			  "	mov.u32 %r11, %r1;\n"
			  "	mov.u32 %r12, %r1;\n"
			  "	mov.u32 %r13, %r1;\n"
			  "	mov.u32 %r14, %r1;\n"
			  "	mov.u32 %r15, %r1;\n"
			  "	mov.u32 %r16, %r1;\n"
			  "	mov.u32 %r17, %r1;\n"
			  "	ret;\n"
			  "}\n";

#define BLOCKS 8
#define THREADS 64

static void test_no_stale_scratch(void **state)
{
	uint32_t got[BLOCKS * THREADS];
	CUdeviceptr out;
	CUmodule m;
	CUfunction fn;

	(void)state;
	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&fn, m, "peek_then_fill"));
	CK(cuMemAlloc(&out, sizeof(got)));
	for (uint32_t launch = 0; launch < 3; launch++) {
		uint32_t secret = 0x5ec0e700u + launch + 1;
		void *args[] = {&out, &secret};

		CK(cuMemsetD32(out, 0xffffffffu, BLOCKS * THREADS));
		CK(cuLaunchKernel(fn, BLOCKS, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
		CK(cuMemcpyDtoH(got, out, sizeof(got)));
		for (int i = 0; i < BLOCKS * THREADS; i++)
			if (got[i] != 0)
				fail_msg("launch %u block %d thread %d read 0x%08x left by another "
					 "block",
					 launch, i / THREADS, i % THREADS, got[i]);
	}
	CK(cuMemFree(out));
	CK(cuModuleUnload(m));
}

/* The permissions of the mapping of /proc/self/maps holding addr ("rw-p"...), or "" if none. */
static void mapping_of(uint64_t addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	perms[0] = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;
		char p[5];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s", &lo, &hi, p) == 3 && addr >= lo &&
		    addr < hi) {
			memcpy(perms, p, 5);
			break;
		}
	}
	fclose(f);
}

/*
 * A device pointer names no host memory of the process: it lies in softgpu's reserved
 * window (PROT_NONE), while the bytes live in a mapping elsewhere, so a pointer a kernel or a
 * tenant sees tells nothing of where the process keeps its memory, and a host access through
 * it faults instead of reading device memory.
 */
static void test_device_window(void **state)
{
	static const uint32_t pattern[4] = {0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u};
	uint32_t back[4];
	CUdeviceptr p;
	char perms[5];

	(void)state;
	CK(cuMemAlloc(&p, 1 << 20));
	CK(cuMemcpyHtoD(p + 4096, pattern, sizeof(pattern)));
	mapping_of(p + 4096, perms);
	assert_string_equal(perms, "---p");
	CK(cuMemcpyDtoH(back, p + 4096, sizeof(back)));
	assert_memory_equal(back, pattern, sizeof(pattern));
	CK(cuMemFree(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_stale_scratch, sgt_setup, sgt_teardown),
		cmocka_unit_test_setup_teardown(test_device_window, sgt_setup, sgt_teardown),
	};

	setenv("SOFTGPU_THREADS", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
