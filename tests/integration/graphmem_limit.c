/* graphmem_limit.c -- graph memory against a session's memory limit.
 *
 * usage: graphmem_limit over   (under a 64 MiB limit) an executable graph holds its
 *                              allocation nodes' memory while it lives: a plain
 *                              allocation or a second instantiation past the limit is
 *                              CUDA_ERROR_OUT_OF_MEMORY, an allocation node past the limit
 *                              too; memory the driver keeps for graphs after the
 *                              executable is gone counts until a trim; the graph's memory
 *                              holds what its memset node wrote; small nodes cost the
 *                              allocation granularity each; prints OK
 *        graphmem_limit hold   says BASE, waits for a line; instantiates a graph with a
 *                              32 MiB allocation node, says HELD, waits; destroys the
 *                              executable, trims, says FREED, waits; then ends
 */
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "drv_check.h"

#define MIB (1ull << 20)

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;

	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.poolProps.location.id = 0;
	p.bytesize = bytes;
	return p;
}

/* A graph of one allocation node of bytes, and a memset node writing 0x5a over it. */
static int make_graph(CUgraph *g, size_t bytes, CUdeviceptr *dptr, CUcontext ctx)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(bytes);
	CUDA_MEMSET_NODE_PARAMS m;
	CUgraphNode a, s;

	OK(cuGraphCreate(g, 0));
	OK(cuGraphAddMemAllocNode(&a, *g, NULL, 0, &p));
	memset(&m, 0, sizeof(m));
	m.dst = p.dptr;
	m.value = 0x5a;
	m.elementSize = 1;
	m.width = bytes;
	m.height = 1;
	OK(cuGraphAddMemsetNode(&s, *g, &a, 1, &m, ctx));
	*dptr = p.dptr;
	return 0;
}

static cuuint64_t reserved(void)
{
	cuuint64_t v = ~0ull;

	if (cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v))
		return ~0ull;
	return v;
}

static int over(CUstream s, CUcontext ctx)
{
	CUDA_MEM_ALLOC_NODE_PARAMS big = alloc_params(80 * MIB);
	CUgraph g, g2, g3;
	CUgraphExec x, x2;
	CUgraphNode n;
	CUdeviceptr d, d2, b;
	unsigned v = 0;

	/* an allocation node larger than the session's device */
	OK(cuGraphCreate(&g3, 0));
	CHECK(cuGraphAddMemAllocNode(&n, g3, NULL, 0, &big), CUDA_ERROR_OUT_OF_MEMORY);
	/* 40 one-byte nodes cost 40 allocations of the device's granularity (2 MiB here), not
	 * 40 bytes: past the 64 MiB limit */
	for (int i = 0; i < 40; i++) {
		CUDA_MEM_ALLOC_NODE_PARAMS one = alloc_params(1);

		OK(cuGraphAddMemAllocNode(&n, g3, NULL, 0, &one));
	}
	CHECK(cuGraphInstantiate(&x, g3, 0), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuGraphDestroy(g3));

	if (make_graph(&g, 40 * MIB, &d, ctx) || make_graph(&g2, 40 * MIB, &d2, ctx))
		return 1;
	OK(cuGraphInstantiate(&x, g, 0));
	/* 40 of the 64 MiB are the executable's, launched or not */
	CHECK(cuMemAlloc(&b, 40 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(cuGraphInstantiate(&x2, g2, 0), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuGraphLaunch(x, s));
	OK(cuStreamSynchronize(s));
	OK(cuMemcpyDtoH(&v, d + 20 * MIB, sizeof(v)));
	if (v != 0x5a5a5a5au) {
		printf("ERROR graph memory holds %#x, not 0x5a5a5a5a\n", v);
		return 1;
	}
	/* not freed by its graph: freed outside it */
	OK(cuMemFreeAsync(d, s));
	OK(cuStreamSynchronize(s));
	OK(cuGraphExecDestroy(x));
	/* what the driver keeps reserved for graphs is the session's until trimmed */
	if (reserved() < 40 * MIB) {
		printf("ERROR reserved for graphs after the executable: %llu\n",
		       (unsigned long long)reserved());
		return 1;
	}
	CHECK(cuMemAlloc(&b, 40 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuDeviceGraphMemTrim(0));
	if (reserved() != 0) {
		printf("ERROR reserved for graphs after a trim: %llu\n",
		       (unsigned long long)reserved());
		return 1;
	}
	OK(cuMemAlloc(&b, 40 * MIB));
	CHECK(cuGraphInstantiate(&x2, g2, 0), CUDA_ERROR_OUT_OF_MEMORY);
	OK(cuMemFree(b));
	OK(cuGraphInstantiate(&x2, g2, 0));
	OK(cuGraphExecDestroy(x2));
	OK(cuGraphDestroy(g2));
	OK(cuGraphDestroy(g));
	/* the destroyed graph's address is nobody's */
	CHECK(cuMemsetD8(d, 0, 16), CUDA_ERROR_INVALID_VALUE);
	printf("OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "over";
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	CUgraph g;
	CUgraphExec x;
	CUdeviceptr d;

	OK(cuInit(0));
	OK(cuDeviceGet(&dev, 0));
	OK(cuCtxCreate(&ctx, NULL, 0, dev));
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (strcmp(mode, "over") == 0)
		return over(s, ctx);
	step("BASE");
	if (make_graph(&g, 32 * MIB, &d, ctx))
		return 1;
	OK(cuGraphInstantiate(&x, g, 0));
	step("HELD");
	OK(cuGraphExecDestroy(x));
	OK(cuDeviceGraphMemTrim(0));
	step("FREED");
	OK(cuGraphDestroy(g));
	OK(cuStreamDestroy(s));
	OK(cuCtxDestroy(ctx));
	printf("DONE\n");
	return 0;
}
