/* copy_chunks.c -- host <-> device copies at the sizes around the transfer's 1 MiB chunks
 * (0, 1, chunk - 1, chunk, chunk + 1, 3 chunks + 7, 64 MiB), both ways, synchronous and
 * asynchronous on several streams at once, ordered with kernels that write the same
 * buffers, pitched copies whose rows straddle chunks, a copy into memory freed right after
 * its stream synchronized, and copies of invalid ranges that fail while the session goes
 * on. Every byte is compared with what the host computed; prints PASS or the first
 * mismatch. usage: copy_chunks [MIB [big]] (the largest size, 64 by default; with "big",
 * only synchronous copies and kernels on streams at that size: one past the worker's
 * staging bound goes through its ring of page-locked chunks; with "behind", a copy through
 * the ring on a stream where answers of copies before it are still queued) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "fill_ptx.h"

#define CK(x)                                                                     \
	do {                                                                      \
		CUresult r_ = (x);                                                \
		if (r_ != CUDA_SUCCESS) {                                         \
			printf("ERROR line %d: %s: %d\n", __LINE__, #x, (int)r_); \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

#define CHUNK (1u << 20)
#define NSTREAMS 3
#define FILL_THREADS 256 /* fill() writes 4 bytes each: the first 1 KiB */

static CUfunction fill;

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131 + (i >> 12) * 7 + seed) ^ (i >> 20));
}

static int check(const char *what, size_t size, const uint8_t *got, const uint8_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			printf("FAIL %s (%zu bytes): byte %zu is %u, not %u\n", what, size, i,
			       got[i], want[i]);
			return 1;
		}
	}
	return 0;
}

static void launch_fill(CUdeviceptr d, uint32_t v, CUstream s)
{
	void *params[] = {&d, &v};

	CK(cuLaunchKernel(fill, 1, 1, 1, FILL_THREADS, 1, 1, 0, s, params, NULL));
}

/* What fill(v) leaves in the first bytes of a buffer that held want. */
static void apply_fill(uint8_t *want, size_t n, uint32_t v)
{
	for (size_t i = 0; i < FILL_THREADS * 4 && i + 4 <= n; i += 4)
		memcpy(want + i, &v, 4);
}

/* Synchronous both ways from pageable memory. */
static int sync_copy(size_t size)
{
	uint8_t *h = malloc(size + 1), *back = malloc(size + 1);
	CUdeviceptr d;
	int bad;

	pattern(h, size, 1);
	memset(back, 0xee, size + 1);
	CK(cuMemAlloc(&d, size ? size : 1));
	CK(cuMemcpyHtoD(d, h, size));
	CK(cuMemcpyDtoH(back, d, size));
	bad = check("sync HtoD then DtoH", size, back, h, size);
	if (!bad && back[size] != 0xee) {
		printf("FAIL sync DtoH of %zu bytes wrote past its end\n", size);
		bad = 1;
	}
	CK(cuMemFree(d));
	free(h);
	free(back);
	return bad;
}

/* On each stream at once: an async HtoD, a kernel over the same buffer, an async DtoH into
 * page-locked memory; the kernel sees the copy's bytes and the DtoH sees its result. */
static int async_streams(size_t size, CUstream *s)
{
	uint8_t *h[NSTREAMS], *back[NSTREAMS], *want = malloc(size + 1);
	CUdeviceptr d[NSTREAMS];
	int bad = 0;

	for (int k = 0; k < NSTREAMS; k++) {
		CK(cuMemAllocHost((void **)&h[k], size + 1));
		CK(cuMemAllocHost((void **)&back[k], size + 1));
		CK(cuMemAlloc(&d[k], size ? size : 1));
		pattern(h[k], size, 10 + k);
		memset(back[k], 0, size + 1);
	}
	for (int k = 0; k < NSTREAMS; k++) {
		CK(cuMemcpyHtoDAsync(d[k], h[k], size, s[k]));
		if (size >= 4)
			launch_fill(d[k], 0xa0b0c000u + k, s[k]);
		CK(cuMemcpyDtoHAsync(back[k], d[k], size, s[k]));
	}
	for (int k = NSTREAMS - 1; k >= 0; k--)
		CK(cuStreamSynchronize(s[k]));
	for (int k = 0; k < NSTREAMS && !bad; k++) {
		memcpy(want, h[k], size);
		apply_fill(want, size, 0xa0b0c000u + k);
		bad = check("async HtoD, kernel, DtoH on one stream", size, back[k], want, size);
	}
	for (int k = 0; k < NSTREAMS; k++) {
		CK(cuMemFreeHost(h[k]));
		CK(cuMemFreeHost(back[k]));
		CK(cuMemFree(d[k]));
	}
	free(want);
	return bad;
}

/* A kernel, then a synchronous DtoH on the legacy stream: the copy sees the kernel's
 * result; an async HtoD from pageable memory whose source is overwritten at once. */
static int kernel_then_sync(size_t size, CUstream s)
{
	uint8_t *h = malloc(size + 1), *want = malloc(size + 1), *back = malloc(size + 1);
	CUdeviceptr d;
	int bad;

	pattern(h, size, 3);
	memcpy(want, h, size);
	CK(cuMemAlloc(&d, size ? size : 1));
	CK(cuMemcpyHtoDAsync(d, h, size, s));
	memset(h, 0x11, size); /* pageable: the call took the bytes before it returned */
	if (size >= 4) {
		launch_fill(d, 0x01020304u, s);
		apply_fill(want, size, 0x01020304u);
	}
	CK(cuStreamSynchronize(s));
	CK(cuMemcpyDtoH(back, d, size));
	bad = check("pageable async HtoD, kernel, sync DtoH", size, back, want, size);
	CK(cuMemFree(d));
	free(h);
	free(want);
	free(back);
	return bad;
}

/* Async DtoH into memory the program frees as soon as the stream is synchronized. */
static int free_after_sync(size_t size, CUstream s)
{
	uint8_t *h = malloc(size + 1), *pinned, *pageable = malloc(size + 1);
	CUdeviceptr d;
	int bad;

	pattern(h, size, 5);
	CK(cuMemAlloc(&d, size ? size : 1));
	CK(cuMemcpyHtoD(d, h, size));
	CK(cuMemAllocHost((void **)&pinned, size + 1));
	CK(cuMemcpyDtoHAsync(pinned, d, size, s));
	CK(cuMemcpyDtoHAsync(pageable, d, size, s));
	CK(cuStreamSynchronize(s));
	bad = check("DtoH into page-locked memory", size, pinned, h, size) ||
	      check("async DtoH into pageable memory", size, pageable, h, size);
	CK(cuMemFreeHost(pinned));
	free(pageable);
	CK(cuMemFree(d));
	free(h);
	return bad;
}

/* Rows of 1000 bytes, 4096 apart, 3000 of them: runs straddle every chunk boundary. */
static int pitched(CUstream s)
{
	size_t w = 1000, hgt = 3000, pitch, n = w * hgt;
	uint8_t *h = malloc(n), *back = malloc(n);
	CUdeviceptr d;
	int bad;

	pattern(h, n, 7);
	CK(cuMemAllocPitch(&d, &pitch, w, hgt, 4));
	CUDA_MEMCPY2D up = {.srcMemoryType = CU_MEMORYTYPE_HOST,
			    .srcHost = h,
			    .srcPitch = w,
			    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			    .dstDevice = d,
			    .dstPitch = pitch,
			    .WidthInBytes = w,
			    .Height = hgt};
	CUDA_MEMCPY2D down = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			      .srcDevice = d,
			      .srcPitch = pitch,
			      .dstMemoryType = CU_MEMORYTYPE_HOST,
			      .dstHost = back,
			      .dstPitch = w,
			      .WidthInBytes = w,
			      .Height = hgt};
	(void)s;
	CK(cuMemcpy2D(&up));
	memset(back, 0, n);
	CK(cuMemcpy2D(&down));
	bad = check("pitched 2-D copy", n, back, h, n);
	CK(cuMemFree(d));
	free(h);
	free(back);
	return bad;
}

/* Copies past the end of an allocation fail, and the session goes on. */
static int invalid_ranges(void)
{
	size_t size = 3 * CHUNK + 7;
	uint8_t *h = malloc(3 * size), *back = malloc(3 * size);
	CUdeviceptr d;
	int bad = 0;

	pattern(h, 3 * size, 9);
	CK(cuMemAlloc(&d, size));
	CK(cuMemcpyHtoD(d, h, size));
	if (cuMemcpyHtoD(d + CHUNK, h + size, 2 * size) == CUDA_SUCCESS) {
		printf("FAIL an HtoD past the allocation's end succeeded\n");
		bad = 1;
	}
	memset(back, 0x33, 3 * size);
	if (cuMemcpyDtoH(back, d + CHUNK, 3 * size) == CUDA_SUCCESS) {
		printf("FAIL a DtoH past the allocation's end succeeded\n");
		bad = 1;
	}
	/* The session goes on, and the allocation holds what the last good copy left. */
	CK(cuMemcpyDtoH(back, d, size));
	bad |= check("the allocation after failed copies", size, back, h, size);
	CK(cuMemFree(d));
	free(h);
	free(back);
	return bad;
}

/* Past the staging bound behind answers still queued on the same stream: a big copy into
 * page-locked memory takes most of the worker's staging, a small one queues its answer
 * after it, and a copy into pageable memory on that stream then goes through the ring,
 * whose copies come after that answer. */
static int ring_behind_answers(CUstream s)
{
	size_t big = 250u << 20, small = 4u << 20, third = 8u << 20;
	uint8_t *hb, *hs, *hp = malloc(third), *want = malloc(big);
	CUdeviceptr d;
	int bad;

	memset(want, 0x5a, big);
	CK(cuMemAlloc(&d, big));
	CK(cuMemsetD8(d, 0x5a, big));
	CK(cuMemAllocHost((void **)&hb, big));
	CK(cuMemAllocHost((void **)&hs, small));
	memset(hp, 0, third);
	CK(cuMemcpyDtoHAsync(hb, d, big, s));
	CK(cuMemcpyDtoHAsync(hs, d, small, s));
	CK(cuMemcpyDtoHAsync(hp, d, third, s));
	CK(cuStreamSynchronize(s));
	bad = check("big async DtoH", big, hb, want, big) ||
	      check("small async DtoH", small, hs, want, small) ||
	      check("DtoH through the ring behind them", third, hp, want, third);
	CK(cuMemFreeHost(hb));
	CK(cuMemFreeHost(hs));
	CK(cuMemFree(d));
	free(hp);
	free(want);
	return bad;
}

int main(int argc, char **argv)
{
	size_t big = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) << 20;
	size_t sizes[] = {0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7, big};
	CUstream s[NSTREAMS];
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	int bad = 0;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, fill_ptx));
	CK(cuModuleGetFunction(&fill, mod, "fill"));
	for (int k = 0; k < NSTREAMS; k++)
		CK(cuStreamCreate(&s[k], k ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
	if (argc > 2 && !strcmp(argv[2], "behind")) {
		bad = ring_behind_answers(s[0]);
		printf(bad ? "FAIL\n" : "PASS\n");
		return bad;
	}
	if (argc > 2 && !strcmp(argv[2], "big")) {
		bad = sync_copy(big) || kernel_then_sync(big, s[1]) ||
		      kernel_then_sync(big, NULL) || invalid_ranges();
		printf(bad ? "FAIL\n" : "PASS\n");
		return bad;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && !bad; i++) {
		size_t n = sizes[i];

		bad = sync_copy(n) || async_streams(n, s) || kernel_then_sync(n, s[1]) ||
		      kernel_then_sync(n, NULL) || free_after_sync(n, s[2]);
		if (!bad)
			printf("ok %zu bytes\n", n);
	}
	if (!bad)
		bad = pitched(s[0]) || invalid_ranges();
	CK(cuCtxSynchronize());
	CK(cuCtxDestroy(ctx));
	printf(bad ? "FAIL\n" : "PASS\n");
	return bad;
}
