/* ctx_staging.c -- copies in two contexts while one of them is destroyed. First, rounds of
 * a 32 MiB copy from the device in context A, each with a context B made, copied in and
 * destroyed; then a copy in A queued behind a host function that waits until a context
 * that copied before it has been destroyed (the copy must not use that context's
 * page-locked memory, which went with it). Every byte is compared with what the host
 * wrote. usage: ctx_staging [pause] (with "pause": after the first round it prints
 * "round 1" and waits for a line on stdin, after the last "round N" and waits again, so
 * that the caller can read the pool's report of the session in between); prints PASS or
 * what failed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define CK(x)                                                                     \
	do {                                                                      \
		CUresult r_ = (x);                                                \
		if (r_ != CUDA_SUCCESS) {                                         \
			printf("ERROR line %d: %s: %d\n", __LINE__, #x, (int)r_); \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

#define ROUND_BYTES (32u << 20)
#define ROUNDS 8
#define SMALL (1u << 20)
#define QUEUED (48u << 20) /* more than A's staging of the rounds: only B's would do */

static volatile int go;

static int check(const char *what, const uint8_t *p, size_t n, uint8_t want)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != want) {
			printf("FAIL %s: byte %zu is %u, not %u\n", what, i, p[i], want);
			return 1;
		}
	}
	return 0;
}

/* A context of its own: memset on the device and copied back, synchronously. */
static int copy_in(CUcontext c, size_t n, uint8_t v, const char *what)
{
	uint8_t *h = malloc(n);
	CUdeviceptr d;
	int bad;

	CK(cuCtxSetCurrent(c));
	CK(cuMemAlloc(&d, n));
	CK(cuMemsetD8(d, v, n));
	memset(h, 0, n);
	CK(cuMemcpyDtoH(h, d, n));
	bad = check(what, h, n, v);
	CK(cuMemFree(d));
	free(h);
	return bad;
}

static void pause_for(const char *what, int on)
{
	char line[16];

	if (!on)
		return;
	printf("%s\n", what);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(2);
}

/* Waits until the caller sets go (10 s at most). */
static void CUDA_CB wait_go(void *arg)
{
	struct timespec tick = {0, 10 * 1000 * 1000};

	(void)arg;
	for (int i = 0; i < 1000 && !__atomic_load_n(&go, __ATOMIC_ACQUIRE); i++)
		nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
	int paused = argc > 1 && !strcmp(argv[1], "pause");
	CUcontext a, b;
	CUdevice dev;
	CUdeviceptr d;
	CUstream s;
	uint8_t *pinned;
	char msg[32];
	int bad = 0;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&a, NULL, 0, dev));
	for (int r = 1; r <= ROUNDS && !bad; r++) {
		bad = copy_in(a, ROUND_BYTES, (uint8_t)(0x30 + r), "a copy in context A");
		CK(cuCtxCreate(&b, NULL, 0, dev));
		bad = bad || copy_in(b, SMALL, (uint8_t)(0x60 + r), "a copy in context B");
		CK(cuCtxDestroy(b));
		if (r == 1)
			pause_for("round 1", paused);
	}
	bad = bad || copy_in(a, ROUND_BYTES, 0x3f, "a copy in context A after the rounds");
	snprintf(msg, sizeof(msg), "round %d", ROUNDS);
	pause_for(msg, paused && !bad);

	/* B copies (its staging stays with the pool), then A queues a copy behind a host
	 * function, and B goes before the stream gets to it. */
	CK(cuCtxCreate(&b, NULL, 0, dev));
	bad = bad || copy_in(b, QUEUED, 0x44, "a copy in context B");
	CK(cuCtxSetCurrent(a));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, QUEUED));
	CK(cuMemsetD8(d, 0x55, QUEUED));
	CK(cuMemAllocHost((void **)&pinned, QUEUED));
	memset(pinned, 0, QUEUED);
	CK(cuLaunchHostFunc(s, wait_go, NULL));
	CK(cuMemcpyDtoHAsync(pinned, d, QUEUED, s));
	CK(cuCtxSetCurrent(b));
	CK(cuCtxDestroy(b));
	CK(cuCtxSetCurrent(a));
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	CK(cuStreamSynchronize(s));
	bad = bad || check("a copy in A queued while B was destroyed", pinned, QUEUED, 0x55);
	CK(cuMemFreeHost(pinned));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
	CK(cuCtxDestroy(a));
	printf(bad ? "FAIL\n" : "PASS\n");
	return bad;
}
