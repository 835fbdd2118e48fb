/* gate_flag.c -- a kernel that waits for a later call, in a session whose launches are held
 * for its compute share (compute_enforce time, daemon/worker/busy.c).
 *
 * usage: gate_flag   Launches waiter W on stream 1: it spins until a flag in device memory
 *                    is set, then writes flag + 1. Prints "SPINNING", then reads a line from
 *                    stdin (the test waits meanwhile until the session is over its share),
 *                    launches kernel K on stream 2 (its flag set already: it writes 6) and
 *                    sets W's flag to 41 with cuMemcpyHtoDAsync on stream 3, a call after the
 *                    held launch. Prints "DONE ok" when both wrote what they should, "DONE
 *                    WRONG ..." or "ERROR call code" otherwise; then waits for EOF on stdin.
 * The streams are non-blocking, so only the flag orders W after the copy. */
#include <stdint.h>
#include <stdio.h>

#include <cuda.h>

#define CK(x)                                                 \
	do {                                                  \
		CUresult r_ = (x);                            \
		if (r_ != CUDA_SUCCESS) {                     \
			printf("ERROR %s %d\n", #x, (int)r_); \
			fflush(stdout);                       \
			return 1;                             \
		}                                             \
	} while (0)

/* wait_flag(flag, out): spins until *flag != 0, then *out = *flag + 1. */
static const char wait_ptx[] = ".version 7.0\n"
			       ".target sm_52\n"
			       ".address_size 64\n"
			       ".visible .entry wait_flag(.param .u64 flag, .param .u64 out)\n"
			       "{\n"
			       "  .reg .pred %q;\n"
			       "  .reg .u32 %r<3>;\n"
			       "  .reg .u64 %rd<3>;\n"
			       "  ld.param.u64 %rd1, [flag];\n"
			       "  ld.param.u64 %rd2, [out];\n"
			       "  cvta.to.global.u64 %rd1, %rd1;\n"
			       "  cvta.to.global.u64 %rd2, %rd2;\n"
			       "SPIN:\n"
			       "  ld.volatile.global.u32 %r1, [%rd1];\n"
			       "  setp.eq.u32 %q, %r1, 0;\n"
			       "  @%q bra SPIN;\n"
			       "  add.u32 %r2, %r1, 1;\n"
			       "  st.global.u32 [%rd2], %r2;\n"
			       "  ret;\n"
			       "}\n";

int main(void)
{
	uint32_t flag = 41, k_flag = 5, got[2] = {0, 0};
	CUdeviceptr mem; /* W's flag, W's out, K's flag, K's out */
	CUdeviceptr w_flag, w_out, k_flag_p, k_out;
	CUstream s[3];
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	char line[64];
	void *w_args[] = {&w_flag, &w_out}, *k_args[] = {&k_flag_p, &k_out};

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, wait_ptx));
	CK(cuModuleGetFunction(&fn, mod, "wait_flag"));
	CK(cuMemAlloc(&mem, 16));
	CK(cuMemsetD32(mem, 0, 4));
	w_flag = mem;
	w_out = mem + 4;
	k_flag_p = mem + 8;
	k_out = mem + 12;
	CK(cuMemcpyHtoD(k_flag_p, &k_flag, sizeof(k_flag)));
	for (int i = 0; i < 3; i++)
		CK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s[0], w_args, NULL));
	printf("SPINNING\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s[1], k_args, NULL));
	CK(cuMemcpyHtoDAsync(w_flag, &flag, sizeof(flag), s[2]));
	for (int i = 0; i < 3; i++)
		CK(cuStreamSynchronize(s[i]));
	CK(cuMemcpyDtoH(&got[0], w_out, sizeof(got[0])));
	CK(cuMemcpyDtoH(&got[1], k_out, sizeof(got[1])));
	if (got[0] == flag + 1 && got[1] == k_flag + 1)
		printf("DONE ok\n");
	else
		printf("DONE WRONG waiter %u kernel %u\n", got[0], got[1]);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return got[0] == flag + 1 && got[1] == k_flag + 1 ? 0 : 1;
}
