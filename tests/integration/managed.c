/* managed.c -- managed and mapped page-locked memory, checked against the CPU: host writes
 * then kernels then host reads, sparse host writes between launches over many rounds and
 * several allocations, copies and memsets into managed memory, pointer attributes, free
 * and reuse, the errors of bad arguments, and a SIGSEGV handler of the program's own that
 * still gets its own faults. Runs directly on softgpu and through the pool; prints one line
 * per failed check and "managed: ok" when all hold.
 *
 *   managed          the checks above
 *   managed sparse   for test-managed.sh: makes 4 MiB of managed memory, writes and syncs it
 *                    once, prints "ready"; after a line on stdin runs ROUNDS rounds of three
 *                    host writes to three pages and a kernel that changes one element, each
 *                    synchronized, prints "done" and waits for a line before it ends
 *   managed limit    for test-managed.sh, in a 64 MiB session: prints "ready"; after a line
 *                    makes 32 MiB of managed memory and 8 MiB of mapped page-locked memory,
 *                    expects 64 MiB more to be CUDA_ERROR_OUT_OF_MEMORY, prints "held";
 *                    after another frees them and prints "freed"; ends after a third
 *   managed crash    with no SIGSEGV handler of its own, uses managed memory, then writes to
 *                    an inaccessible page of its own: the process must end by SIGSEGV
 *   managed efault   copies into mapped page-locked memory while a stream-ordered call on
 *                    another stream (this thread's, then another thread's) pushes managed
 *                    pages before the bytes come: the copies land, the session lives (run
 *                    over each transport: a plain socket's recv() into a protected page
 *                    fails where OpenSSL's memcpy would fault)
 *   managed edge     read(2) from a pipe into the program's heap objects on the first and
 *                    last pages of a registration that are not all its own, after a push */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda.h>

#include "triple_ptx.h"

#define ROUNDS 20

static int bad;

static void expect(const char *what, CUresult got, CUresult want)
{
	const char *g = NULL, *w = NULL;

	if (got == want)
		return;
	cuGetErrorName(got, &g);
	cuGetErrorName(want, &w);
	printf("FAIL %s: %s, expected %s\n", what, g ? g : "?", w ? w : "?");
	bad = 1;
}

static void truth(const char *what, int cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		bad = 1;
	}
}

static CUfunction fn;

static CUresult launch(CUdeviceptr p, unsigned n, CUstream s)
{
	void *params[] = {&p, &n};

	return cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, params, NULL);
}

static void triple_ref(unsigned *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		v[i] = v[i] * 3 + 1;
}

/* Compares n elements with the CPU's reference; says where the first difference is. */
static void same(const char *what, const unsigned *got, const unsigned *want, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			printf("FAIL %s: element %u is %u, expected %u\n", what, i, got[i],
			       want[i]);
			bad = 1;
			return;
		}
	}
}

/* ---- the program's own SIGSEGV handler ------------------------------------------------ */

static sigjmp_buf own_jmp;
static volatile sig_atomic_t own_faults;
static void *own_page; /* PROT_NONE: the program's own fault */

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_addr == own_page) {
		own_faults++;
		siglongjmp(own_jmp, 1);
	}
	abort(); /* a fault the program did not expect */
}

/* Writes to the program's own inaccessible page: its handler must get the fault. */
static void own_fault(const char *what)
{
	int before = own_faults;

	if (sigsetjmp(own_jmp, 1) == 0)
		*(volatile int *)own_page = 1;
	truth(what, own_faults == before + 1);
}

/* ---- the checks ------------------------------------------------------------------------- */

static void bad_arguments(void)
{
	CUdeviceptr p = 0;
	unsigned *h = NULL;
	CUdeviceptr d;
	unsigned flags = 0;

	expect("managed 0 bytes", cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL),
	       CUDA_ERROR_INVALID_VALUE);
	expect("managed flags 0", cuMemAllocManaged(&p, 4096, 0), CUDA_ERROR_INVALID_VALUE);
	expect("managed flags 4", cuMemAllocManaged(&p, 4096, 4), CUDA_ERROR_INVALID_VALUE);
	expect("managed NULL", cuMemAllocManaged(NULL, 4096, CU_MEM_ATTACH_GLOBAL),
	       CUDA_ERROR_INVALID_VALUE);
	expect("managed past the memory", cuMemAllocManaged(&p, 1ull << 50, CU_MEM_ATTACH_GLOBAL),
	       CUDA_ERROR_OUT_OF_MEMORY);
	expect("host alloc bad flags", cuMemHostAlloc((void **)&h, 4096, 0x80),
	       CUDA_ERROR_INVALID_VALUE);
	/* Page-locked memory that is not mapped has no device pointer. */
	expect("host alloc", cuMemHostAlloc((void **)&h, 4096, 0), CUDA_SUCCESS);
	/* (softgpu, as a driver with unified addressing, maps all page-locked memory) */
	if (getenv("GPUPOOL_SERVER"))
		expect("device pointer of unmapped memory", cuMemHostGetDevicePointer(&d, h, 0),
		       CUDA_ERROR_INVALID_VALUE);
	expect("host flags", cuMemHostGetFlags(&flags, h), CUDA_SUCCESS);
	truth("unmapped host flags", flags == 0);
	expect("free host", cuMemFreeHost(h), CUDA_SUCCESS);
	/* write-combined memory is freed like any (its flag is not the registration's) */
	expect("write-combined mapped",
	       cuMemHostAlloc((void **)&h, 8192,
			      CU_MEMHOSTALLOC_WRITECOMBINED | CU_MEMHOSTALLOC_DEVICEMAP),
	       CUDA_SUCCESS);
	h[2000] = 7;
	expect("free write-combined mapped", cuMemFreeHost(h), CUDA_SUCCESS);
	expect("write-combined", cuMemHostAlloc((void **)&h, 4096, CU_MEMHOSTALLOC_WRITECOMBINED),
	       CUDA_SUCCESS);
	expect("free write-combined", cuMemFreeHost(h), CUDA_SUCCESS);
	expect("device pointer of malloc'd memory", cuMemHostGetDevicePointer(&d, &flags, 0),
	       CUDA_ERROR_INVALID_VALUE);
}

static void basic(void)
{
	enum { NA = 3 };
	static const unsigned count[NA] = {1u << 18, (64u << 10) / 4 + 25, 1u << 20};
	CUdeviceptr p[NA];
	unsigned *ref[NA];
	int v = -1;
	unsigned mt = 0;
	void *hp = NULL;

	for (int a = 0; a < NA; a++) {
		expect("cuMemAllocManaged",
		       cuMemAllocManaged(&p[a], count[a] * 4, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
		ref[a] = malloc(count[a] * 4);
		if (bad)
			return;
	}
	/* The host writes it all, the kernel changes it all, the host reads it. */
	for (int a = 0; a < NA; a++) {
		unsigned *h = (unsigned *)(uintptr_t)p[a];

		for (unsigned i = 0; i < count[a]; i++)
			h[i] = ref[a][i] = i * 7u + (unsigned)a;
		expect("launch", launch(p[a], count[a], NULL), CUDA_SUCCESS);
		triple_ref(ref[a], count[a]);
	}
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	for (int a = 0; a < NA; a++)
		same("kernel writes seen by the host", (unsigned *)(uintptr_t)p[a], ref[a],
		     count[a]);
	/* Sparse host writes between launches; each round synchronized one way or another. */
	for (int round = 0; round < ROUNDS; round++) {
		for (int a = 0; a < NA; a++) {
			unsigned *h = (unsigned *)(uintptr_t)p[a];
			unsigned at[3] = {(unsigned)round * 131u % count[a], count[a] / 2,
					  count[a] - 1 - (unsigned)round};

			for (int k = 0; k < 3; k++)
				h[at[k]] = ref[a][at[k]] = (unsigned)(round * 1000 + k);
			expect("launch", launch(p[a], count[a], NULL), CUDA_SUCCESS);
			triple_ref(ref[a], count[a]);
		}
		if (round % 3 == 0) {
			expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		} else if (round % 3 == 1) {
			expect("stream synchronize", cuStreamSynchronize(NULL), CUDA_SUCCESS);
		} else {
			CUevent e;

			expect("event", cuEventCreate(&e, 0), CUDA_SUCCESS);
			expect("record", cuEventRecord(e, NULL), CUDA_SUCCESS);
			expect("event synchronize", cuEventSynchronize(e), CUDA_SUCCESS);
			cuEventDestroy(e);
		}
		for (int a = 0; a < NA; a++)
			same("sparse rounds", (unsigned *)(uintptr_t)p[a], ref[a], count[a]);
	}
	/* Copies and memsets into managed memory are seen by the host after they return. */
	{
		unsigned src[64];

		for (int i = 0; i < 64; i++)
			src[i] = ref[0][i] = 0xabc000u + (unsigned)i;
		expect("copy into managed memory", cuMemcpyHtoD(p[0], src, sizeof(src)),
		       CUDA_SUCCESS);
		expect("memset managed memory", cuMemsetD32(p[1], 0x5a5a5a5au, count[1]),
		       CUDA_SUCCESS);
		for (unsigned i = 0; i < count[1]; i++)
			ref[1][i] = 0x5a5a5a5au;
		expect("device to device into managed", cuMemcpyDtoD(p[2] + 4096, p[0], 256),
		       CUDA_SUCCESS);
		memcpy(ref[2] + 1024, ref[0], 256);
		for (int a = 0; a < NA; a++)
			same("copies and memsets", (unsigned *)(uintptr_t)p[a], ref[a], count[a]);
		/* and what the host wrote is what a copy out of it sees */
		((unsigned *)(uintptr_t)p[2])[7] = ref[2][7] = 77;
		memset(src, 0, sizeof(src));
		expect("copy out of managed memory", cuMemcpyDtoH(src, p[2], sizeof(src)),
		       CUDA_SUCCESS);
		same("copy out of managed memory", src, ref[2], 64);
	}
	expect("pointer: managed", cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_IS_MANAGED, p[1]),
	       CUDA_SUCCESS);
	truth("IS_MANAGED is 1", v == 1);
	expect("pointer: memory type",
	       cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p[1] + 8),
	       CUDA_SUCCESS);
	truth("managed memory is device memory by type", mt == CU_MEMORYTYPE_DEVICE);
	expect("pointer: host pointer",
	       cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p[1] + 8),
	       CUDA_SUCCESS);
	truth("the host pointer is the pointer", hp == (void *)(uintptr_t)(p[1] + 8));
	/* Free and reuse. */
	for (int a = 0; a < NA; a++) {
		expect("free managed", cuMemFree(p[a]), CUDA_SUCCESS);
		free(ref[a]);
	}
	expect("free twice", cuMemFree(p[0]), CUDA_ERROR_INVALID_VALUE);
	for (int again = 0; again < 4; again++) {
		CUdeviceptr q;
		unsigned want[1000];

		expect("managed again", cuMemAllocManaged(&q, sizeof(want), CU_MEM_ATTACH_HOST),
		       CUDA_SUCCESS);
		if (bad)
			return;
		for (unsigned i = 0; i < 1000; i++)
			((unsigned *)(uintptr_t)q)[i] = want[i] = i + (unsigned)again;
		expect("launch", launch(q, 1000, NULL), CUDA_SUCCESS);
		triple_ref(want, 1000);
		expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		same("reused", (unsigned *)(uintptr_t)q, want, 1000);
		expect("free", cuMemFree(q), CUDA_SUCCESS);
	}
}

/* Zero-copy: the kernel works on page-locked memory through its device pointer. */
static void mapped(void)
{
	enum { N = 5000 };
	unsigned *h = NULL, want[N];
	CUdeviceptr d = 0;
	unsigned flags = 0;
	int m = 0;

	expect("mapped host alloc", cuMemHostAlloc((void **)&h, N * 4, CU_MEMHOSTALLOC_DEVICEMAP),
	       CUDA_SUCCESS);
	if (bad)
		return;
	expect("device pointer", cuMemHostGetDevicePointer(&d, h, 0), CUDA_SUCCESS);
	expect("device pointer flags", cuMemHostGetDevicePointer(&d, h, 1),
	       CUDA_ERROR_INVALID_VALUE);
	expect("host flags", cuMemHostGetFlags(&flags, h), CUDA_SUCCESS);
	truth("DEVICEMAP in the flags", flags == CU_MEMHOSTALLOC_DEVICEMAP);
	expect("pointer: managed", cuPointerGetAttribute(&m, CU_POINTER_ATTRIBUTE_IS_MANAGED, d),
	       CUDA_SUCCESS);
	truth("mapped memory is not managed", m == 0);
	for (int round = 0; round < 3; round++) {
		for (unsigned i = 0; i < N; i++)
			if (round == 0 || i % 977 == 0)
				h[i] = want[i] = i ^ 0x3c3cu;
		expect("launch", launch(d, N, NULL), CUDA_SUCCESS);
		triple_ref(want, N);
		expect("stream synchronize", cuStreamSynchronize(NULL), CUDA_SUCCESS);
		same("zero-copy", h, want, N);
	}
	/* A copy into it from the device is seen by the host and then by kernels. */
	{
		CUdeviceptr dev;
		unsigned src[N];

		for (unsigned i = 0; i < N; i++)
			src[i] = want[i] = i * 5u;
		expect("alloc", cuMemAlloc(&dev, sizeof(src)), CUDA_SUCCESS);
		expect("copy", cuMemcpyHtoD(dev, src, sizeof(src)), CUDA_SUCCESS);
		expect("copy into mapped memory", cuMemcpyDtoH(h, dev, sizeof(src)), CUDA_SUCCESS);
		same("copied into mapped memory", h, want, N);
		expect("launch", launch(d, N, NULL), CUDA_SUCCESS);
		triple_ref(want, N);
		expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		same("kernel after a copy into mapped memory", h, want, N);
		cuMemFree(dev);
	}
	expect("free mapped", cuMemFreeHost(h), CUDA_SUCCESS);
}

/* Registered memory mapped into the device: the program's own pages, unaligned, with its
 * other data on the same pages left alone. */
static void registered(void)
{
	enum { N = 3000 };
	unsigned char *buf = malloc(N * 4 + 3 * 4096);
	unsigned *h = (unsigned *)(buf + 4096 + 100), want[N];
	volatile unsigned *before = h - 1, *after = h + N; /* the program's, not registered */
	CUdeviceptr d = 0, d2 = 0;

	for (unsigned i = 0; i < N; i++)
		h[i] = want[i] = i + 11;
	*before = 0xb4;
	*after = 0xaf;
	expect("register mapped", cuMemHostRegister(h, N * 4, CU_MEMHOSTREGISTER_DEVICEMAP),
	       CUDA_SUCCESS);
	if (bad)
		return;
	expect("register again", cuMemHostRegister(h + 8, 64, CU_MEMHOSTREGISTER_DEVICEMAP),
	       CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	expect("device pointer", cuMemHostGetDevicePointer(&d, h, 0), CUDA_SUCCESS);
	expect("device pointer inside", cuMemHostGetDevicePointer(&d2, h + 5, 0), CUDA_SUCCESS);
	truth("device pointers are contiguous", d2 == d + 20);
	for (int round = 0; round < 3; round++) {
		h[round * 500] = want[round * 500] = 7u * (unsigned)round;
		expect("launch", launch(d, N, NULL), CUDA_SUCCESS);
		triple_ref(want, N);
		/* the program's own neighbours change while the kernel runs on the range */
		*before = 0xb0u + (unsigned)round;
		*after = 0xa0u + (unsigned)round;
		expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		same("registered mapped memory", h, want, N);
		truth("the byte before the range is the program's",
		      *before == 0xb0u + (unsigned)round);
		truth("the byte after the range is the program's",
		      *after == 0xa0u + (unsigned)round);
	}
	expect("unregister", cuMemHostUnregister(h), CUDA_SUCCESS);
	expect("unregister twice", cuMemHostUnregister(h), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	for (unsigned i = 0; i < N; i++)
		h[i] = 0; /* writable as any memory again */
	free(buf);
}

/* Managed and mapped memory of a context that is destroyed goes with it; later allocations
 * (at the addresses it had, perhaps) work. */
static void context_end(CUcontext main_ctx, CUdevice dev)
{
	CUcontext other;
	CUdeviceptr p, q;
	void *h = NULL;

	expect("second context", cuCtxCreate(&other, NULL, 0, dev), CUDA_SUCCESS);
	if (bad)
		return;
	expect("managed there", cuMemAllocManaged(&p, 3 * 4096, CU_MEM_ATTACH_GLOBAL),
	       CUDA_SUCCESS);
	expect("mapped there", cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
	if (bad)
		return;
	((unsigned *)(uintptr_t)p)[5] = 5;
	((unsigned *)h)[5] = 5;
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	expect("destroy it", cuCtxDestroy(other), CUDA_SUCCESS);
	expect("back to the first", cuCtxSetCurrent(main_ctx), CUDA_SUCCESS);
	expect("its managed memory is gone", cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	for (int i = 0; i < 4; i++) {
		unsigned want[1024];

		expect("managed after", cuMemAllocManaged(&q, sizeof(want), CU_MEM_ATTACH_GLOBAL),
		       CUDA_SUCCESS);
		if (bad)
			return;
		for (unsigned k = 0; k < 1024; k++)
			((unsigned *)(uintptr_t)q)[k] = want[k] = k * (unsigned)i;
		expect("launch", launch(q, 1024, NULL), CUDA_SUCCESS);
		triple_ref(want, 1024);
		expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
		same("after a context went", (unsigned *)(uintptr_t)q, want, 1024);
		expect("free", cuMemFree(q), CUDA_SUCCESS);
	}
}

static void wait_line(void)
{
	char line[64];

	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(3);
}

static int limit_mode(void)
{
	CUdeviceptr p, q;
	void *h;

	printf("ready\n");
	wait_line();
	expect("32 MiB managed", cuMemAllocManaged(&p, 32u << 20, CU_MEM_ATTACH_GLOBAL),
	       CUDA_SUCCESS);
	expect("8 MiB mapped", cuMemHostAlloc(&h, 8u << 20, CU_MEMHOSTALLOC_DEVICEMAP),
	       CUDA_SUCCESS);
	expect("64 MiB more", cuMemAllocManaged(&q, 64u << 20, CU_MEM_ATTACH_GLOBAL),
	       CUDA_ERROR_OUT_OF_MEMORY);
	((char *)(uintptr_t)p)[12345] = 1; /* usable meanwhile */
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	printf("held\n");
	wait_line();
	expect("free managed", cuMemFree(p), CUDA_SUCCESS);
	expect("free mapped", cuMemFreeHost(h), CUDA_SUCCESS);
	printf("freed\n");
	wait_line();
	return bad;
}

enum { EF_N = 1 << 20 };

/* Keeps s busy: what is queued behind this waits for it. */
static void busy(CUdeviceptr big, size_t nb, CUstream s)
{
	for (int i = 0; i < 4; i++)
		expect("busy memset", cuMemsetD8Async(big, (unsigned char)i, nb, s), CUDA_SUCCESS);
}

static int all_bytes(const unsigned char *h, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (h[i] != v)
			return 0;
	return 1;
}

struct pusher {
	CUcontext ctx;
	CUdeviceptr d;
	CUstream s;
	volatile int stop;
	unsigned char *mine; /* managed memory this thread writes, so that pushes happen */
};

static void *pusher_main(void *arg)
{
	struct pusher *p = arg;

	cuCtxSetCurrent(p->ctx);
	for (unsigned i = 0; !p->stop; i++) {
		p->mine[(i % 64) * 4096] = (unsigned char)i;
		if (cuMemsetD8Async(p->d, (unsigned char)i, 4096, p->s) != CUDA_SUCCESS)
			break;
	}
	return NULL;
}

static int efault_mode(CUcontext ctx)
{
	size_t nb = 64u << 20;
	CUdeviceptr big = 0, d = 0, d2 = 0;
	CUstream s1, s2;
	unsigned char *h = NULL, *mine = NULL;
	struct pusher pu = {.ctx = ctx};
	pthread_t t;

	expect("stream", cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	expect("stream", cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	expect("host alloc", cuMemHostAlloc((void **)&h, EF_N, CU_MEMHOSTALLOC_DEVICEMAP),
	       CUDA_SUCCESS);
	expect("host alloc", cuMemHostAlloc((void **)&mine, 64 * 4096, CU_MEMHOSTALLOC_DEVICEMAP),
	       CUDA_SUCCESS);
	expect("alloc", cuMemAlloc(&big, nb), CUDA_SUCCESS);
	expect("alloc", cuMemAlloc(&d, EF_N), CUDA_SUCCESS);
	expect("alloc", cuMemAlloc(&d2, EF_N), CUDA_SUCCESS);
	if (bad)
		return 1;
	memset(h, 1, EF_N);
	expect("memset", cuMemsetD8(d, 7, EF_N), CUDA_SUCCESS);

	/* Asynchronous, into page-locked memory: the push comes while the copy waits on s1. */
	busy(big, nb, s1);
	expect("async copy into mapped memory", cuMemcpyDtoHAsync(h, d, EF_N, s1), CUDA_SUCCESS);
	expect("memset on another stream", cuMemsetD8Async(d2, 3, EF_N, s2), CUDA_SUCCESS);
	expect("synchronize s1", cuStreamSynchronize(s1), CUDA_SUCCESS);
	truth("the asynchronous copy landed", all_bytes(h, EF_N, 7));

	/* Synchronous, with another thread pushing while the copy waits. */
	pu.d = d2;
	pu.s = s2;
	pu.mine = mine;
	if (pthread_create(&t, NULL, pusher_main, &pu)) {
		truth("thread", 0);
		return 1;
	}
	for (int round = 0; round < 4; round++) {
		expect("memset", cuMemsetD8Async(d, (unsigned char)(20 + round), EF_N, s1),
		       CUDA_SUCCESS);
		busy(big, nb, s1);
		expect("synchronous copy into mapped memory", cuMemcpyDtoH(h, d, EF_N),
		       CUDA_SUCCESS);
		expect("synchronize s1", cuStreamSynchronize(s1), CUDA_SUCCESS);
		expect("async copy into mapped memory", cuMemcpyDtoHAsync(h, d, EF_N, s1),
		       CUDA_SUCCESS);
		expect("synchronize s1", cuStreamSynchronize(s1), CUDA_SUCCESS);
		truth("the copies landed", all_bytes(h, EF_N, (unsigned char)(20 + round)));
	}
	pu.stop = 1;
	pthread_join(t, NULL);
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	/* The copies' bytes reach the device side of the mapped memory too. */
	expect("copy back", cuMemcpyDtoH(mine, (CUdeviceptr)h, 4096), CUDA_SUCCESS);
	truth("the device sees the copied bytes", all_bytes(mine, 4096, 23));
	cuMemFreeHost(h);
	cuMemFreeHost(mine);
	cuMemFree(big);
	cuMemFree(d);
	cuMemFree(d2);
	printf(bad ? "managed efault: FAIL\n" : "managed efault: ok\n");
	return bad;
}

/* read(2) of a pipe into obj: the kernel writes there, so a protected page fails it. */
static void pipe_into(const char *what, char *obj)
{
	int fd[2];
	ssize_t n;

	if (pipe(fd)) {
		truth("pipe", 0);
		return;
	}
	if (write(fd[1], "hello", 5) != 5)
		truth("pipe write", 0);
	n = read(fd[0], obj, 5);
	if (n != 5)
		perror(what);
	truth(what, n == 5 && memcmp(obj, "hello", 5) == 0);
	close(fd[0]);
	close(fd[1]);
}

static int edge_mode(void)
{
	enum { N = 2 * 4096 };
	char *buf = aligned_alloc(4096, 4 * 4096);
	char *head = buf + 16, *reg = buf + 512, *tail = reg + N + 256;
	CUdeviceptr d = 0, scratch = 0;
	unsigned want[N / 4];

	if (!buf)
		return 1;
	memset(buf, 0, 4 * 4096);
	for (unsigned i = 0; i < N / 4; i++)
		((unsigned *)reg)[i] = want[i] = i;
	expect("register", cuMemHostRegister(reg, N, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
	expect("device pointer", cuMemHostGetDevicePointer(&d, reg, 0), CUDA_SUCCESS);
	expect("alloc", cuMemAlloc(&scratch, 16), CUDA_SUCCESS);
	if (bad)
		return 1;
	/* A stream-ordered call pushes the registration's pages. */
	expect("memset", cuMemsetD8Async(scratch, 0, 16, NULL), CUDA_SUCCESS);
	pipe_into("read(2) into a heap object on the first page", head);
	pipe_into("read(2) into a heap object on the last page", tail);
	/* The edge pages still move both ways. */
	((unsigned *)reg)[0] = want[0] = 41;
	((unsigned *)reg)[N / 4 - 1] = want[N / 4 - 1] = 43;
	expect("launch", launch(d, N / 4, NULL), CUDA_SUCCESS);
	triple_ref(want, N / 4);
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	same("registered memory after a kernel", (unsigned *)reg, want, N / 4);
	/* A host write on an edge page outside the range does not undo the kernel's work. */
	expect("launch", launch(d, N / 4, NULL), CUDA_SUCCESS);
	triple_ref(want, N / 4);
	head[0] = 'x';
	expect("memset", cuMemsetD8Async(scratch, 0, 16, NULL), CUDA_SUCCESS);
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	same("registered memory after a neighbour's write", (unsigned *)reg, want, N / 4);
	truth("the neighbours are the program's", head[0] == 'x' && !memcmp(tail, "hello", 5));
	expect("unregister", cuMemHostUnregister(reg), CUDA_SUCCESS);
	cuMemFree(scratch);
	free(buf);
	printf(bad ? "managed edge: FAIL\n" : "managed edge: ok\n");
	return bad;
}

static int crash_mode(void)
{
	CUdeviceptr p;

	signal(SIGSEGV, SIG_DFL);
	expect("managed", cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	((volatile int *)(uintptr_t)p)[0] = 1; /* our handler's fault */
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	printf("writing to the program's own inaccessible page\n");
	fflush(stdout);
	*(volatile int *)own_page = 1; /* not ours: the default action ends the process */
	printf("FAIL still running after a fault\n");
	return 1;
}

static int sparse_mode(void)
{
	enum { N = 1u << 20 }; /* 4 MiB */
	unsigned *ref = malloc(N * 4), *h;
	CUdeviceptr p;
	char line[64];

	expect("cuMemAllocManaged", cuMemAllocManaged(&p, N * 4, CU_MEM_ATTACH_GLOBAL),
	       CUDA_SUCCESS);
	if (bad)
		return 1;
	h = (unsigned *)(uintptr_t)p;
	for (unsigned i = 0; i < N; i++)
		h[i] = ref[i] = i;
	expect("launch", launch(p, N, NULL), CUDA_SUCCESS);
	triple_ref(ref, N);
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	for (unsigned round = 0; round < ROUNDS; round++) {
		/* three pages written here, one element (one page) changed by the kernel */
		unsigned at[3] = {round * 1024, N / 2 + round * 1024, N - 1 - round * 1024};
		unsigned k = (round * 7919u) % N;

		for (int j = 0; j < 3; j++)
			h[at[j]] = ref[at[j]] = round + (unsigned)j;
		expect("launch", launch(p + 4ull * k, 1, NULL), CUDA_SUCCESS);
		triple_ref(ref + k, 1);
		expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	}
	same("sparse rounds", h, ref, N);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	cuMemFree(p);
	free(ref);
	return bad;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;
	int v = 0;

	/* The program's own handler is there before the driver's first call. */
	own_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);

	expect("cuInit", cuInit(0), CUDA_SUCCESS);
	expect("cuDeviceGet", cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	expect("cuCtxCreate", cuCtxCreate(&ctx, NULL, 0, dev), CUDA_SUCCESS);
	expect("cuModuleLoadData", cuModuleLoadData(&mod, triple_ptx), CUDA_SUCCESS);
	expect("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "triple"), CUDA_SUCCESS);
	if (bad)
		return 1;
	if (argc > 1 && strcmp(argv[1], "sparse") == 0)
		return sparse_mode();
	if (argc > 1 && strcmp(argv[1], "limit") == 0)
		return limit_mode();
	if (argc > 1 && strcmp(argv[1], "crash") == 0)
		return crash_mode();
	if (argc > 1 && strcmp(argv[1], "efault") == 0)
		return efault_mode(ctx);
	if (argc > 1 && strcmp(argv[1], "edge") == 0)
		return edge_mode();
	expect("attribute", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev),
	       CUDA_SUCCESS);
	truth("managedMemory is 1", v == 1);
	expect("attribute", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev),
	       CUDA_SUCCESS);
	truth("canMapHostMemory is 1", v == 1);
	own_fault("own fault before managed memory");
	bad_arguments();
	basic();
	own_fault("own fault with managed memory in use");
	mapped();
	registered();
	context_end(ctx, dev);
	own_fault("own fault after managed memory");
	cuModuleUnload(mod);
	cuCtxDestroy(ctx);
	if (!bad)
		printf("managed: ok\n");
	return bad;
}
