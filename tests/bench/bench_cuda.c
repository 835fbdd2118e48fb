/* bench_cuda.c -- gpupool-bench's child: drives the libcuda.so.1 it is given (the
 * interposer, or a driver directly) through the driver API and reports what it measured.
 *
 *   --child all  LIB ROUNDS LAUNCHES SIZES GRAPH_ITERS   setup, call round trips, launch
 *                rate, copies of each size (MiB, comma-separated), a graph of 100 kernels
 *   --child hide LIB N ROUNDS     N launches and one synchronize, against one round trip
 *   --child load LIB LAUNCHES COPIES   one session's share of a concurrent load: says
 *                "ready", waits for a byte on stdin, works, reports its time
 *   --child setup LIB             session setup only (scripts/bench-setup.sh runs it):
 *                cuInit to the first answered call, then one launch checked
 *
 * Every kernel adds one to a counter, and the counters are checked: a run whose work did
 * not happen fails instead of reporting a rate.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "bench.h"
#include "bench_pool_kernel.ptx.h"

#define CUDA_FNS(X)             \
	X(cuInit)               \
	X(cuDeviceGet)          \
	X(cuCtxCreate)          \
	X(cuCtxDestroy)         \
	X(cuCtxSynchronize)     \
	X(cuModuleLoadData)     \
	X(cuModuleGetFunction)  \
	X(cuMemAlloc)           \
	X(cuMemFree)            \
	X(cuMemcpyHtoD)         \
	X(cuMemcpyDtoH)         \
	X(cuMemsetD32)          \
	X(cuLaunchKernel)       \
	X(cuGraphCreate)        \
	X(cuGraphAddKernelNode) \
	X(cuGraphInstantiate)   \
	X(cuGraphLaunch)        \
	X(cuGraphExecDestroy)   \
	X(cuGraphDestroy)

/* The entry points by their exported names (cuda.h maps cuCtxCreate to cuCtxCreate_v4). */
#define FIELD(fn) __typeof__(fn) *fn;
static struct {
	CUDA_FNS(FIELD)
} cu;
#undef FIELD

#define STR_(x) #x
#define STR(x) STR_(x)

#define CK(x)                                                                           \
	do {                                                                            \
		CUresult r_ = (x);                                                      \
		if (r_ != CUDA_SUCCESS) {                                               \
			fprintf(stderr, "gpupool-bench: %s failed: %d\n", #x, (int)r_); \
			return 1;                                                       \
		}                                                                       \
	} while (0)

static int load(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "gpupool-bench: %s\n", dlerror());
		return -1;
	}
#define SYM(fn)                                                                 \
	cu.fn = (__typeof__(cu.fn))dlsym(h, STR(fn));                           \
	if (!cu.fn) {                                                           \
		fprintf(stderr, "gpupool-bench: %s has no %s\n", lib, STR(fn)); \
		return -1;                                                      \
	}
	CUDA_FNS(SYM)
#undef SYM
	return 0;
}

struct session {
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr counter;
	double setup_ms; /* cuInit (connect, Hello) to the first answered call */
};

static int open_session(struct session *s)
{
	CUdevice dev;
	double t0 = bench_now();

	CK(cu.cuInit(0));
	CK(cu.cuDeviceGet(&dev, 0));
	CK(cu.cuCtxCreate(&s->ctx, NULL, 0, dev));
	s->setup_ms = (bench_now() - t0) * 1e3;
	CK(cu.cuModuleLoadData(&s->mod, touch_ptx));
	CK(cu.cuModuleGetFunction(&s->fn, s->mod, "touch"));
	CK(cu.cuMemAlloc(&s->counter, sizeof(int)));
	CK(cu.cuMemsetD32(s->counter, 0, 1));
	return 0;
}

/* The counter's value is what the launches so far must have made it. */
static int check_counter(struct session *s, int expect)
{
	int got = -1;

	CK(cu.cuMemcpyDtoH(&got, s->counter, sizeof(got)));
	if (got != expect) {
		fprintf(stderr, "gpupool-bench: %d kernels ran, expected %d\n", got, expect);
		return 1;
	}
	return 0;
}

static int launch_one(struct session *s)
{
	void *params[] = {&s->counter};

	CK(cu.cuLaunchKernel(s->fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

double bench_median(double *v, size_t n)
{
	return bench_percentile(v, n, 0.5);
}

/* Round trips of a call that waits (cuCtxSynchronize of an idle context). */
static int round_trips(int rounds, double *p50, double *p99)
{
	double *t = calloc((size_t)rounds, sizeof(*t));

	if (!t)
		return 1;
	for (int i = 0; i < 50; i++)
		CK(cu.cuCtxSynchronize());
	for (int i = 0; i < rounds; i++) {
		double t0 = bench_now();

		CK(cu.cuCtxSynchronize());
		t[i] = (bench_now() - t0) * 1e6;
	}
	*p50 = bench_median(t, (size_t)rounds);
	if (p99)
		*p99 = bench_percentile(t, (size_t)rounds, 0.99);
	free(t);
	return 0;
}

/* A graph of 100 kernels in a chain, launched iters times. */
static int graph_run(struct session *s, int iters, int *expect)
{
	void *params[] = {&s->counter};
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraphNode prev = NULL, node;
	CUgraphExec exec;
	CUgraph g;
	double t0;

	CK(cu.cuGraphCreate(&g, 0));
	memset(&kp, 0, sizeof(kp));
	kp.func = s->fn;
	kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 32;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = params;
	for (int i = 0; i < 100; i++) {
		CK(cu.cuGraphAddKernelNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &kp));
		prev = node;
	}
	CK(cu.cuGraphInstantiate(&exec, g, 0));
	t0 = bench_now();
	for (int i = 0; i < iters; i++)
		CK(cu.cuGraphLaunch(exec, NULL));
	CK(cu.cuCtxSynchronize());
	printf("graph_s %.6f\n", bench_now() - t0);
	*expect += 100 * iters;
	CK(cu.cuGraphExecDestroy(exec));
	CK(cu.cuGraphDestroy(g));
	return 0;
}

static int mode_all(int argc, char **argv)
{
	int rounds = atoi(argv[0]), launches = atoi(argv[1]), iters = atoi(argv[3]);
	char *sizes = strdup(argv[2]), *save = NULL;
	static struct session s; /* its handles outlive this function: see the end */
	double p50, p99, t0;
	int expect = 0;

	if (!sizes || rounds < 1 || launches < 1 || open_session(&s))
		return 1;
	printf("setup_ms %.3f\n", s.setup_ms);
	if (round_trips(rounds, &p50, &p99))
		return 1;
	printf("rtt_p50_us %.3f\nrtt_p99_us %.3f\n", p50, p99);
	for (int i = 0; i < 100; i++, expect++) /* warm up */
		if (launch_one(&s))
			return 1;
	CK(cu.cuCtxSynchronize());
	t0 = bench_now();
	for (int i = 0; i < launches; i++, expect++)
		if (launch_one(&s))
			return 1;
	CK(cu.cuCtxSynchronize());
	printf("launch_per_s %.1f\n", launches / (bench_now() - t0));
	if (check_counter(&s, expect))
		return 1;
	for (char *m = strtok_r(sizes, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
		size_t mib = strtoul(m, NULL, 10), bytes = mib << 20;
		uint8_t *h = malloc(bytes), *back = malloc(bytes);
		CUdeviceptr d;
		double up, down;

		if (!h || !back)
			return 1;
		for (size_t i = 0; i < bytes; i += 4096)
			h[i] = (uint8_t)(i >> 12);
		/* Touched, so that page faults are not the copy's: with a nonzero byte, since
		 * the compiler turns malloc and memset(0) into calloc, whose fresh pages the
		 * copy would then fault in. */
		memset(back, 0xa5, bytes);
		CK(cu.cuMemAlloc(&d, bytes));
		/* nor the device's: softgpu's memory is host pages, faulted in on first touch */
		CK(cu.cuMemsetD32(d, 0, bytes / 4));
		CK(cu.cuCtxSynchronize());
		t0 = bench_now();
		CK(cu.cuMemcpyHtoD(d, h, bytes));
		up = (double)mib / (bench_now() - t0);
		t0 = bench_now();
		CK(cu.cuMemcpyDtoH(back, d, bytes));
		down = (double)mib / (bench_now() - t0);
		if (memcmp(h, back, bytes)) {
			fprintf(stderr, "gpupool-bench: %zu MiB came back different\n", mib);
			return 1;
		}
		printf("htod_%zu_mib_s %.1f\ndtoh_%zu_mib_s %.1f\n", mib, up, mib, down);
		CK(cu.cuMemFree(d));
		free(h);
		free(back);
	}
	free(sizes);
	if (iters > 0 && graph_run(&s, iters, &expect))
		return 1;
	if (check_counter(&s, expect))
		return 1;
	/* The session ends with the process, as in the other modes. Its handles stay
	 * reachable until then: the interposer's record of a module is reached only through
	 * the program's handle (it is not freed at cuModuleUnload or cuCtxDestroy either, a
	 * known leak of a few hundred bytes per module that LeakSanitizer would report). */
	return 0;
}

/* Latency hiding: N launches and one synchronize, against one round trip, each the median
 * of ROUNDS. */
static int mode_hide(int argc, char **argv)
{
	int n = atoi(argv[0]), rounds = atoi(argv[1]), expect = 0;
	double *t = calloc(rounds > 0 ? (size_t)rounds : 1, sizeof(*t)), p50;
	static struct session s; /* reachable until the process ends: see mode_all */

	if (!t || n < 1 || rounds < 1 || open_session(&s))
		return 1;
	if (round_trips(rounds, &p50, NULL))
		return 1;
	for (int r = 0; r < rounds; r++) {
		double t0 = bench_now();

		for (int i = 0; i < n; i++, expect++)
			if (launch_one(&s))
				return 1;
		CK(cu.cuCtxSynchronize());
		t[r] = (bench_now() - t0) * 1e6;
	}
	if (check_counter(&s, expect))
		return 1;
	printf("rtt_p50_us %.3f\nbatch_p50_us %.3f\n", p50, bench_median(t, (size_t)rounds));
	free(t);
	return 0;
}

/* One session of a concurrent load: launches, then copies of 1 MiB each way. */
static int mode_load(int argc, char **argv)
{
	int launches = atoi(argv[0]), copies = atoi(argv[1]);
	size_t bytes = 1u << 20;
	uint8_t *h = malloc(bytes);
	static struct session s; /* reachable until the process ends: see mode_all */
	CUdeviceptr d;
	char go;
	double t0;

	if (!h || open_session(&s))
		return 1;
	memset(h, 1, bytes);
	CK(cu.cuMemAlloc(&d, bytes));
	printf("ready 1\n");
	fflush(stdout);
	if (read(STDIN_FILENO, &go, 1) != 1)
		return 1;
	t0 = bench_now();
	for (int i = 0; i < launches; i++)
		if (launch_one(&s))
			return 1;
	CK(cu.cuCtxSynchronize());
	for (int i = 0; i < copies; i++) {
		CK(cu.cuMemcpyHtoD(d, h, bytes));
		CK(cu.cuMemcpyDtoH(h, d, bytes));
	}
	printf("elapsed_s %.6f\n", bench_now() - t0);
	if (check_counter(&s, launches))
		return 1;
	free(h);
	return 0;
}

static int mode_setup(int argc, char **argv)
{
	static struct session s; /* reachable until the process ends: see mode_all */

	if (open_session(&s))
		return 1;
	printf("setup_ms %.3f\n", s.setup_ms);
	if (launch_one(&s))
		return 1;
	CK(cu.cuCtxSynchronize());
	return check_counter(&s, 1);
}

int bench_child_main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int nargs;
		int (*fn)(int, char **);
	} modes[] = {{"all", 4, mode_all},
		     {"hide", 2, mode_hide},
		     {"load", 2, mode_load},
		     {"setup", 0, mode_setup}};

	if (argc < 2)
		return 2;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[0], modes[i].name) != 0)
			continue;
		if (argc - 2 != modes[i].nargs || load(argv[1]))
			return 2;
		return modes[i].fn(argc - 2, argv + 2);
	}
	return 2;
}
