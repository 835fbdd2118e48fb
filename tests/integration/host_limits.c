/* host_limits.c -- makes a session's worker use host resources past its cgroup's limits
 * (test-host-limits.sh). On softgpu device memory is the worker's host memory.
 *
 * usage: host_limits grow BYTES   allocate BYTES and set them all: past worker_host_memory
 *                                 the worker is OOM-killed; prints "grow: RESULT" (the
 *                                 memset's, or the allocation's) and exits 0 on an error
 *        host_limits streams N    N streams, an async memset on each (softgpu starts a thread
 *                                 per busy stream): prints "streams: N sync: RESULT", then,
 *                                 with the streams destroyed, whether the session still
 *                                 works ("after: RESULT" from a copy there and back checked
 *                                 against the host); exits 0 when it does
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

static const char *name(CUresult r)
{
	const char *n = NULL;

	cuGetErrorName(r, &n);
	return n ? n : "?";
}

static int grow(size_t bytes)
{
	CUdeviceptr d;
	CUresult r;

	r = cuMemAlloc(&d, bytes);
	if (r == CUDA_SUCCESS)
		r = cuMemsetD8(d, 0x5a, bytes);
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	printf("grow: %s\n", name(r));
	return r == CUDA_SUCCESS;
}

static int streams(int n)
{
	CUstream *s = calloc((size_t)n, sizeof(*s));
	unsigned char h[4096], back[4096];
	CUdeviceptr d;
	CUresult r, sync;
	int made = 0;

	if (!s || cuMemAlloc(&d, (size_t)n * 4096) != CUDA_SUCCESS)
		return 2;
	/* No wait comes before the streams take the threads there are: the worker's first
	 * thread for waits was made before this session's first call (waits.c), so the
	 * synchronize and the destroys below still run. */
	for (; made < n; made++)
		if ((r = cuStreamCreate(&s[made], CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
			break;
	for (int i = 0; i < made; i++)
		cuMemsetD8Async(d + (size_t)i * 4096, (unsigned char)i, 4096, s[i]);
	sync = cuCtxSynchronize();
	printf("streams: %d sync: %s\n", made, name(sync));
	for (int i = 0; i < made; i++)
		if ((r = cuStreamDestroy(s[i])) != CUDA_SUCCESS)
			printf("destroy %d: %s\n", i, name(r));
	free(s);
	/* Whatever the memsets left to report is reported here, once. */
	printf("drain: %s\n", name(cuCtxSynchronize()));
	/* The session goes on: a copy there and back, and a clean synchronize. */
	for (size_t i = 0; i < sizeof(h); i++)
		h[i] = (unsigned char)(i * 7 + 1);
	r = cuMemcpyHtoD(d, h, sizeof(h));
	if (r == CUDA_SUCCESS)
		r = cuMemcpyDtoH(back, d, sizeof(back));
	if (r == CUDA_SUCCESS && memcmp(h, back, sizeof(h)) != 0)
		r = CUDA_ERROR_UNKNOWN;
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	printf("after: %s\n", name(r));
	return r != CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUdevice dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 3)
		return 2;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev)) {
		printf("no session\n");
		return 2;
	}
	if (strcmp(argv[1], "grow") == 0)
		return grow(strtoull(argv[2], NULL, 0));
	if (strcmp(argv[1], "streams") == 0)
		return streams(atoi(argv[2]));
	return 2;
}
