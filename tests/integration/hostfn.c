/* hostfn.c -- host functions are asynchronous and in stream order: cuLaunchHostFunc returns
 * before its function runs (the function waits for a flag the caller sets only after the
 * call returned), the function runs after the stream's earlier work (the bytes of an
 * earlier copy are there) and before its later work (a synchronize after later work sees
 * the function done), and cuStreamAddCallback gets its stream and status. Then blocking
 * copies right behind a host function, on the legacy stream and on a stream, and a
 * blocking copy behind an asynchronous one into page-locked memory, and a free and a stream
 * destroy behind host functions (the driver waits for the device there), and the same for a
 * module and a library unload, a context destroy, a primary context reset and its last
 * release: each must complete (the pool must go on reading the client's answers while the
 * call waits for the stream). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "fill_ptx.h"

#define CK(x)                                                  \
	do {                                                   \
		CUresult r_ = (x);                             \
		if (r_ != CUDA_SUCCESS) {                      \
			printf("ERROR %s: %d\n", #x, (int)r_); \
			exit(1);                               \
		}                                              \
	} while (0)

static volatile int go, saw_go, saw_bytes, fn_done, cb_ok;
static unsigned char host_buf[4096];

static void CUDA_CB first(void *arg)
{
	struct timespec tick = {0, 10 * 1000 * 1000};

	/* The caller sets go after cuLaunchHostFunc returned: run inline, this would wait
	 * out its 10 s and see nothing. */
	for (int i = 0; i < 1000 && !__atomic_load_n(&go, __ATOMIC_ACQUIRE); i++)
		nanosleep(&tick, NULL);
	saw_go = __atomic_load_n(&go, __ATOMIC_ACQUIRE);
	saw_bytes = host_buf[0] == 0x5a && host_buf[sizeof(host_buf) - 1] == 0x5a;
	nanosleep(&tick, NULL);
	__atomic_store_n(&fn_done, *(int *)arg, __ATOMIC_RELEASE);
}

static void CUDA_CB nap(void *arg)
{
	struct timespec t = {0, 20 * 1000 * 1000};

	nanosleep(&t, NULL);
	(*(int *)arg)++;
}

static void CUDA_CB second(CUstream s, CUresult status, void *arg)
{
	cb_ok = s == (CUstream)arg && status == CUDA_SUCCESS && fn_done == 7;
}

int main(void)
{
	static int seven = 7;
	CUdeviceptr d;
	CUcontext ctx;
	CUstream s;
	CUdevice dev;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, sizeof(host_buf)));
	CK(cuMemsetD8Async(d, 0x5a, sizeof(host_buf), s));
	CK(cuMemcpyDtoHAsync(host_buf, d, sizeof(host_buf), s));
	CK(cuLaunchHostFunc(s, first, &seven));
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	CK(cuStreamAddCallback(s, second, s, 0));
	CK(cuMemsetD8Async(d, 0, sizeof(host_buf), s)); /* later work */
	CK(cuStreamSynchronize(s));
	printf("host function: saw the flag %d, the earlier bytes %d, done before the sync %d; "
	       "callback %d\n",
	       saw_go, saw_bytes, fn_done == 7, cb_ok);
	{
		static unsigned char page[4096];
		unsigned char *pinned;
		int naps = 0;

		CK(cuMemAllocHost((void **)&pinned, sizeof(page)));
		CK(cuLaunchHostFunc(NULL, nap, &naps));
		CK(cuMemcpyDtoH(page, d, sizeof(page))); /* legacy stream, behind the function */
		CK(cuLaunchHostFunc(NULL, nap, &naps));
		CK(cuMemcpyHtoD(d, page, sizeof(page)));
		CK(cuLaunchHostFunc(s, nap, &naps));
		CK(cuMemcpyDtoHAsync(page, d, sizeof(page), s)); /* pageable: blocking */
		CK(cuMemcpyDtoHAsync(pinned, d, sizeof(page), s));
		CK(cuMemcpyDtoH(page, d, sizeof(page)));
		CK(cuMemsetD8(d, 1, sizeof(page)));
		CK(cuCtxSynchronize());
		{
			/* Frees and stream destroys the driver makes wait for the device. */
			CUdeviceptr d2;
			CUstream s2;

			CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
			CK(cuMemAlloc(&d2, 4096));
			CK(cuLaunchHostFunc(s2, nap, &naps));
			CK(cuMemFree(d2));
			CK(cuLaunchHostFunc(s2, nap, &naps));
			CK(cuStreamDestroy(s2));
		}
		CK(cuCtxSynchronize());
		printf("blocking copies, frees and destroys behind host functions: done, %d host "
		       "functions ran\n",
		       naps);
		if (naps != 5)
			return 1;
		CK(cuMemFreeHost(pinned));
	}
	{
		/* Unloads and context ends behind host functions; then the contexts' ends took
		 * what they held: a function of the unloaded module is refused. */
		CUmodule mod;
		CUlibrary lib;
		CUfunction f;
		CUcontext c2, primary;
		int naps = 0;

		CK(cuModuleLoadData(&mod, fill_ptx));
		CK(cuModuleGetFunction(&f, mod, "fill"));
		CK(cuLaunchHostFunc(s, nap, &naps));
		CK(cuModuleUnload(mod));
		CK(cuLibraryLoadData(&lib, fill_ptx, NULL, NULL, 0, NULL, NULL, 0));
		CK(cuLaunchHostFunc(s, nap, &naps));
		CK(cuLibraryUnload(lib));
		CK(cuStreamSynchronize(s));

		CK(cuCtxCreate(&c2, NULL, 0, dev));
		CK(cuLaunchHostFunc(NULL, nap, &naps));
		CK(cuCtxDestroy(c2));
		CK(cuCtxSetCurrent(ctx));

		CK(cuDevicePrimaryCtxRetain(&primary, dev));
		CK(cuCtxSetCurrent(primary));
		CK(cuLaunchHostFunc(NULL, nap, &naps));
		CK(cuDevicePrimaryCtxReset(dev));
		CK(cuCtxSetCurrent(primary));
		CK(cuLaunchHostFunc(NULL, nap, &naps));
		CK(cuDevicePrimaryCtxRelease(dev));
		CK(cuCtxSetCurrent(ctx));
		printf("unloads, a context destroy, a primary reset and release behind host "
		       "functions: done, %d host functions ran\n",
		       naps);
		if (naps != 5)
			return 1;
	}
	return saw_go && saw_bytes && fn_done == 7 && cb_ok ? 0 : 1;
}
