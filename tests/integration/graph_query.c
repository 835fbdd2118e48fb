/* graph_query.c -- a graph's structure read back as it was built: nodes, roots, edges and
 * each node's dependencies both ways, node types and parameters, for a graph made here
 * (kernel, memset, host, device-to-device and host-memory copy nodes), its clone (nodes
 * found in it, destroyed in it) and a captured graph; nodes enabled and disabled in an
 * executable graph; the dot file; CUDA's answers to wrong arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "graphs_kernel.ptx.h"

#define CK(x)                                                  \
	do {                                                   \
		CUresult r_ = (x);                             \
		if (r_ != CUDA_SUCCESS) {                      \
			printf("ERROR %s: %d\n", #x, (int)r_); \
			exit(1);                               \
		}                                              \
	} while (0)
#define WANT(x, want)                                                                \
	do {                                                                         \
		CUresult r_ = (x);                                                   \
		if (r_ != (want)) {                                                  \
			printf("ERROR %s: %d, want %d\n", #x, (int)r_, (int)(want)); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)
#define CHECK(cond, ...)                            \
	do {                                        \
		if (!(cond)) {                      \
			printf("FAIL %s: ", #cond); \
			printf(__VA_ARGS__);        \
			printf("\n");               \
			exit(1);                    \
		}                                   \
	} while (0)

#define N 1024
#define MAXN 16

static CUfunction add_one;
static int host_calls;

static void CUDA_CB count(void *arg)
{
	(void)arg;
	host_calls++;
}

/* Whether list (n entries) holds exactly the nodes of want (m entries), in any order. */
static int same_set(const CUgraphNode *list, size_t n, const CUgraphNode *want, size_t m)
{
	if (n != m)
		return 0;
	for (size_t i = 0; i < m; i++) {
		size_t k = 0;

		for (size_t j = 0; j < n; j++)
			k += list[j] == want[i];
		if (k != 1)
			return 0;
	}
	return 1;
}

static size_t deps(CUgraphNode n, CUgraphNode *out, int outs)
{
	size_t k = 0, got = MAXN;

	if (outs) {
		CK(cuGraphNodeGetDependentNodes_v2(n, NULL, NULL, &k));
		CK(cuGraphNodeGetDependentNodes_v2(n, out, NULL, &got));
	} else {
		CK(cuGraphNodeGetDependencies_v2(n, NULL, NULL, &k));
		CK(cuGraphNodeGetDependencies_v2(n, out, NULL, &got));
	}
	CHECK(k == got, "count %zu, array %zu", k, got);
	return k;
}

#define DEPS(node, outs, ...)                                                            \
	do {                                                                             \
		CUgraphNode want_[] = {__VA_ARGS__}, got_[MAXN];                         \
		size_t k_ = deps(node, got_, outs);                                      \
		CHECK(same_set(got_, k_, want_, sizeof(want_) / sizeof(want_[0])),       \
		      "%s of %s: %zu", outs ? "dependents" : "dependencies", #node, k_); \
	} while (0)
#define NO_DEPS(node, outs)                                                                  \
	do {                                                                                 \
		CUgraphNode got_[MAXN];                                                      \
		CHECK(deps(node, got_, outs) == 0, "%s of %s", outs ? "dependents" : "deps", \
		      #node);                                                                \
	} while (0)

static size_t nodes_of(CUgraph g, CUgraphNode *out, int roots)
{
	size_t k = 0, got = MAXN;

	if (roots) {
		CK(cuGraphGetRootNodes(g, NULL, &k));
		CK(cuGraphGetRootNodes(g, out, &got));
	} else {
		CK(cuGraphGetNodes(g, NULL, &k));
		CK(cuGraphGetNodes(g, out, &got));
	}
	CHECK(k == got, "count %zu, array %zu", k, got);
	for (size_t i = k; i < MAXN; i++)
		CHECK(out[i] == NULL, "entry %zu past the last", i);
	return k;
}

static size_t edges_of(CUgraph g, CUgraphNode *from, CUgraphNode *to)
{
	size_t k = 0, got = MAXN;

	CK(cuGraphGetEdges_v2(g, NULL, NULL, NULL, &k));
	CK(cuGraphGetEdges_v2(g, from, to, NULL, &got));
	CHECK(k == got, "count %zu, array %zu", k, got);
	return k;
}

static int has_edge(const CUgraphNode *from, const CUgraphNode *to, size_t n, CUgraphNode a,
		    CUgraphNode b)
{
	int k = 0;

	for (size_t i = 0; i < n; i++)
		k += from[i] == a && to[i] == b;
	return k == 1;
}

static void count_types(CUgraph g, int *t)
{
	CUgraphNode list[MAXN];
	size_t n = nodes_of(g, list, 0);

	memset(t, 0, sizeof(int) * 16);
	for (size_t i = 0; i < n; i++) {
		CUgraphNodeType ty;

		CK(cuGraphNodeGetType(list[i], &ty));
		CHECK((int)ty < 16, "type %d", (int)ty);
		t[ty]++;
	}
}

static void launch(CUgraphExec x, CUstream s)
{
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUstream s;
	CUdeviceptr d, d2, d3, d4, d5;
	CUgraph g, g2, g3;
	CUgraphExec x;
	CUgraphNode K, M, H, C, X, Y, list[MAXN], from[MAXN], to[MAXN];
	int *h = malloc(N * 4), *hin = malloc(N * 4), *hc = malloc(N * 4), *tmp = malloc(N * 4);
	int n = N, t[16];
	size_t k;

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuCtxCreate(&ctx, NULL, 0, dev));
	CK(cuModuleLoadData(&mod, graphs_ptx));
	CK(cuModuleGetFunction(&add_one, mod, "add_one"));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, N * 4));
	CK(cuMemAlloc(&d2, N * 4));
	CK(cuMemAlloc(&d3, N * 4));
	CK(cuMemAlloc(&d4, N * 4));
	CK(cuMemAlloc(&d5, N * 4));
	CK(cuMemsetD32(d, 1, N));
	for (int i = 0; i < N; i++)
		hin[i] = 9;

	/* K, M (roots) -> H -> C (d to d3) -> X (d2 to h); Y (hin to d4) alone */
	CK(cuGraphCreate(&g, 0));
	{
		void *args[] = {&d, &n};
		CUDA_KERNEL_NODE_PARAMS kp = {.func = add_one,
					      .gridDimX = N / 64,
					      .gridDimY = 1,
					      .gridDimZ = 1,
					      .blockDimX = 64,
					      .blockDimY = 1,
					      .blockDimZ = 1,
					      .sharedMemBytes = 16,
					      .kernelParams = args};
		CUDA_MEMSET_NODE_PARAMS mp = {
			.dst = d2, .value = 5, .elementSize = 4, .width = N, .height = 1};
		CUDA_HOST_NODE_PARAMS hp = {.fn = count};
		CUDA_MEMCPY3D cp = {0}, xp = {0}, yp = {0};
		CUgraphNode km[] = {K, M};

		CK(cuGraphAddKernelNode(&K, g, NULL, 0, &kp));
		CK(cuGraphAddMemsetNode(&M, g, NULL, 0, &mp, ctx));
		km[0] = K;
		km[1] = M;
		CK(cuGraphAddHostNode(&H, g, km, 2, &hp));
		cp.srcMemoryType = cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		cp.srcDevice = d;
		cp.dstDevice = d3;
		cp.WidthInBytes = N * 4;
		cp.Height = cp.Depth = 1;
		CK(cuGraphAddMemcpyNode(&C, g, &H, 1, &cp, ctx));
		xp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		xp.srcDevice = d2;
		xp.dstMemoryType = CU_MEMORYTYPE_HOST;
		xp.dstHost = h;
		xp.WidthInBytes = N * 4;
		xp.Height = xp.Depth = 1;
		CK(cuGraphAddMemcpyNode(&X, g, &C, 1, &xp, ctx));
		yp.srcMemoryType = CU_MEMORYTYPE_HOST;
		yp.srcHost = hin;
		yp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		yp.dstDevice = d4;
		yp.WidthInBytes = N * 4;
		yp.Height = yp.Depth = 1;
		CK(cuGraphAddMemcpyNode(&Y, g, NULL, 0, &yp, ctx));
	}

	/* wrong arguments */
	WANT(cuGraphGetNodes(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphGetNodes(NULL, NULL, &k), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphGetRootNodes(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	k = MAXN;
	WANT(cuGraphGetEdges_v2(g, from, NULL, NULL, &k), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphGetEdges_v2(g, NULL, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphNodeGetDependencies_v2(H, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphNodeGetDependencies_v2(NULL, NULL, NULL, &k), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphNodeGetDependentNodes_v2(H, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	{
		CUDA_KERNEL_NODE_PARAMS kp;
		CUDA_MEMSET_NODE_PARAMS mp;

		WANT(cuGraphKernelNodeGetParams_v2(M, &kp), CUDA_ERROR_INVALID_VALUE);
		WANT(cuGraphKernelNodeGetParams_v2(K, NULL), CUDA_ERROR_INVALID_VALUE);
		WANT(cuGraphMemsetNodeGetParams(K, &mp), CUDA_ERROR_INVALID_VALUE);
		WANT(cuGraphNodeFindInClone(&C, K, NULL), CUDA_ERROR_INVALID_VALUE);
	}

	/* nodes and roots; an array too small holds as many as it can, one too big ends in NULL */
	{
		CUgraphNode all[] = {K, M, H, C, X, Y}, roots[] = {K, M, Y}, few[3];

		k = nodes_of(g, list, 0);
		CHECK(same_set(list, k, all, 6), "%zu nodes", k);
		k = nodes_of(g, list, 1);
		CHECK(same_set(list, k, roots, 3), "%zu roots", k);
		k = 3;
		CK(cuGraphGetNodes(g, few, &k));
		CHECK(k == 3, "a 3-entry array: %zu", k);
		for (int i = 0; i < 3; i++)
			CHECK(few[i] == K || few[i] == M || few[i] == H || few[i] == C ||
				      few[i] == X || few[i] == Y,
			      "entry %d", i);
	}
	count_types(g, t);
	CHECK(t[CU_GRAPH_NODE_TYPE_KERNEL] == 1 && t[CU_GRAPH_NODE_TYPE_MEMSET] == 1 &&
		      t[CU_GRAPH_NODE_TYPE_HOST] == 1 && t[CU_GRAPH_NODE_TYPE_MEMCPY] == 3,
	      "types %d %d %d %d", t[CU_GRAPH_NODE_TYPE_KERNEL], t[CU_GRAPH_NODE_TYPE_MEMSET],
	      t[CU_GRAPH_NODE_TYPE_HOST], t[CU_GRAPH_NODE_TYPE_MEMCPY]);

	/* edges, and dependencies both ways */
	k = edges_of(g, from, to);
	CHECK(k == 4 && has_edge(from, to, k, K, H) && has_edge(from, to, k, M, H) &&
		      has_edge(from, to, k, H, C) && has_edge(from, to, k, C, X),
	      "%zu edges", k);
	{
		CUgraphEdgeData ed[MAXN];

		memset(ed, 0xff, sizeof(ed));
		k = MAXN;
		CK(cuGraphGetEdges_v2(g, from, to, ed, &k));
		CHECK(k == 4 && ed[0].type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT &&
			      ed[0].from_port == 0,
		      "edge data");
	}
	DEPS(H, 0, K, M);
	DEPS(H, 1, C);
	DEPS(K, 1, H);
	DEPS(M, 1, H);
	DEPS(C, 0, H);
	DEPS(C, 1, X);
	DEPS(X, 0, C);
	NO_DEPS(K, 0);
	NO_DEPS(X, 1);
	NO_DEPS(Y, 0);
	NO_DEPS(Y, 1);

	/* the dot file is written here, one line per node and per edge */
	{
		char path[64], line[256];
		int nlabel = 0, nedge = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/graph_query.%d.dot", (int)getpid());
		WANT(cuGraphDebugDotPrint(g, NULL, 0), CUDA_ERROR_INVALID_VALUE);
		CK(cuGraphDebugDotPrint(g, path, 0));
		f = fopen(path, "r");
		CHECK(f, "no dot file at %s", path);
		while (fgets(line, sizeof(line), f)) {
			nlabel += strstr(line, "[label") != NULL;
			nedge += strstr(line, "->") != NULL;
		}
		fclose(f);
		unlink(path);
		CHECK(nlabel == 6 && nedge == 4, "dot file: %d nodes, %d edges", nlabel, nedge);
	}

	/* parameters, as given */
	{
		CUDA_KERNEL_NODE_PARAMS kp;
		CUDA_MEMSET_NODE_PARAMS mp;

		CK(cuGraphKernelNodeGetParams_v2(K, &kp));
		CHECK(kp.func == add_one && kp.gridDimX == N / 64 && kp.gridDimY == 1 &&
			      kp.blockDimX == 64 && kp.blockDimZ == 1 && kp.sharedMemBytes == 16,
		      "kernel params");
		CHECK(kp.kernelParams && *(CUdeviceptr *)kp.kernelParams[0] == d &&
			      *(int *)kp.kernelParams[1] == N,
		      "kernel arguments");
		CUDA_MEMCPY3D cp;

		CK(cuGraphMemcpyNodeGetParams(C, &cp));
		CHECK(cp.srcDevice == d && cp.dstDevice == d3 && cp.WidthInBytes == N * 4,
		      "device copy params");
		CK(cuGraphMemcpyNodeGetParams(X, &cp));
		CHECK(cp.srcDevice == d2 && cp.dstMemoryType == CU_MEMORYTYPE_HOST &&
			      cp.dstHost == h && cp.WidthInBytes == N * 4,
		      "host-memory copy params");
		WANT(cuGraphMemcpyNodeGetParams(K, &cp), CUDA_ERROR_INVALID_VALUE);
		CK(cuGraphMemsetNodeGetParams(M, &mp));
		CHECK(mp.dst == d2 && mp.value == 5 && mp.elementSize == 4 && mp.width == N &&
			      mp.height == 1,
		      "memset params");
	}

	/* it runs; a kernel node and a copy to the device disabled and enabled again */
	CK(cuGraphInstantiate(&x, g, 0));
	launch(x, s);
	CK(cuMemcpyDtoH(tmp, d3, N * 4));
	CHECK(tmp[7] == 2 && h[7] == 5 && host_calls == 1, "ran: %d %d %d", tmp[7], h[7],
	      host_calls);
	CK(cuMemcpyDtoH(tmp, d4, N * 4));
	CHECK(tmp[7] == 9, "copy to the device: %d", tmp[7]);
	{
		unsigned int on = 7;

		CK(cuGraphNodeGetEnabled(x, K, &on));
		CHECK(on == 1, "enabled %u", on);
		CK(cuGraphNodeGetEnabled(x, Y, &on));
		CHECK(on == 1, "enabled %u", on);
		WANT(cuGraphNodeGetEnabled(x, K, NULL), CUDA_ERROR_INVALID_VALUE);
		WANT(cuGraphNodeGetEnabled(x, H, &on), CUDA_ERROR_INVALID_VALUE); /* a host node */
		CK(cuGraphNodeSetEnabled(x, K, 0));
		CK(cuGraphNodeSetEnabled(x, Y, 0));
		CK(cuGraphNodeGetEnabled(x, Y, &on));
		CHECK(on == 0, "disabled %u", on);
		for (int i = 0; i < N; i++)
			hin[i] = 11;
		launch(x, s);
		CK(cuMemcpyDtoH(tmp, d3, N * 4));
		CHECK(tmp[7] == 2 && host_calls == 2, "kernel disabled: %d", tmp[7]);
		CK(cuMemcpyDtoH(tmp, d4, N * 4));
		CHECK(tmp[7] == 9, "copy to the device disabled: %d", tmp[7]);
		CK(cuGraphNodeSetEnabled(x, K, 1));
		CK(cuGraphNodeSetEnabled(x, Y, 1));
		launch(x, s);
		CK(cuMemcpyDtoH(tmp, d3, N * 4));
		CHECK(tmp[7] == 3, "kernel enabled: %d", tmp[7]);
		CK(cuMemcpyDtoH(tmp, d4, N * 4));
		CHECK(tmp[7] == 11, "copy to the device enabled: %d", tmp[7]);
	}
	CK(cuGraphExecDestroy(x));

	/* a clone: its own nodes, the same shape, found again by the same handles */
	CK(cuGraphClone(&g2, g));
	count_types(g2, t);
	CHECK(t[CU_GRAPH_NODE_TYPE_KERNEL] == 1 && t[CU_GRAPH_NODE_TYPE_MEMSET] == 1 &&
		      t[CU_GRAPH_NODE_TYPE_HOST] == 1 && t[CU_GRAPH_NODE_TYPE_MEMCPY] == 3,
	      "clone's types");
	{
		CUgraphNode K2, M2, H2, C2, X2, Y2, again[MAXN];
		CUgraphNodeType ty;

		CK(cuGraphNodeFindInClone(&K2, K, g2));
		CK(cuGraphNodeFindInClone(&M2, M, g2));
		CK(cuGraphNodeFindInClone(&H2, H, g2));
		CK(cuGraphNodeFindInClone(&C2, C, g2));
		CK(cuGraphNodeFindInClone(&X2, X, g2));
		CK(cuGraphNodeFindInClone(&Y2, Y, g2));
		CHECK(K2 != K && X2 != X, "a clone's nodes are its own");
		WANT(cuGraphNodeFindInClone(&K2, K, g), CUDA_ERROR_INVALID_VALUE);
		WANT(cuGraphNodeFindInClone(NULL, K, g2), CUDA_ERROR_INVALID_VALUE);
		CK(cuGraphNodeFindInClone(&K2, K, g2));
		CK(cuGraphNodeGetType(X2, &ty));
		CHECK(ty == CU_GRAPH_NODE_TYPE_MEMCPY, "host-memory copy's type %d", (int)ty);
		CK(cuGraphNodeGetType(H2, &ty));
		CHECK(ty == CU_GRAPH_NODE_TYPE_HOST, "host node's type %d", (int)ty);
		{
			CUgraphNode all[] = {K2, M2, H2, C2, X2, Y2};

			k = nodes_of(g2, list, 0);
			CHECK(same_set(list, k, all, 6), "clone's nodes");
			nodes_of(g2, again, 0);
			CHECK(memcmp(list, again, sizeof(list)) == 0, "the same handles again");
		}
		k = edges_of(g2, from, to);
		CHECK(k == 4 && has_edge(from, to, k, K2, H2) && has_edge(from, to, k, M2, H2) &&
			      has_edge(from, to, k, H2, C2) && has_edge(from, to, k, C2, X2),
		      "clone's edges");
		DEPS(H2, 0, K2, M2);
		DEPS(X2, 0, C2);
		DEPS(C2, 1, X2);

		/* nodes destroyed: a host-memory copy goes whole, with its edges */
		WANT(cuGraphDestroyNode(NULL), CUDA_ERROR_INVALID_VALUE);
		CK(cuGraphDestroyNode(X2));
		k = nodes_of(g2, list, 0);
		CHECK(k == 5, "after destroying a copy: %zu nodes", k);
		k = edges_of(g2, from, to);
		CHECK(k == 3, "after destroying a copy: %zu edges", k);
		NO_DEPS(C2, 1);
		CK(cuGraphDestroyNode(C2));
		{
			CUgraphNode left[] = {K2, M2, H2, Y2};

			k = nodes_of(g2, list, 0);
			CHECK(same_set(list, k, left, 4), "after destroying two: %zu nodes", k);
		}
		k = edges_of(g2, from, to);
		CHECK(k == 2, "after destroying two: %zu edges", k);
		NO_DEPS(H2, 1);
		for (int i = 0; i < N; i++)
			h[i] = 0;
		CK(cuGraphInstantiate(&x, g2, 0));
		launch(x, s);
		CHECK(h[7] == 0 && host_calls == 4, "the clone ran without its copies: %d %d", h[7],
		      host_calls);
		CK(cuGraphExecDestroy(x));
	}

	/* a captured graph: memset -> kernel -> copy to pageable memory */
	{
		void *args[] = {&d5, &n};
		CUgraphNode roots[MAXN];
		CUgraphNodeType ty[3];

		CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
		CK(cuMemsetD32Async(d5, 3, N, s));
		CK(cuLaunchKernel(add_one, N / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
		CK(cuMemcpyDtoHAsync(hc, d5, N * 4, s));
		CK(cuStreamEndCapture(s, &g3));
		k = nodes_of(g3, list, 0);
		CHECK(k == 3, "captured: %zu nodes", k);
		k = nodes_of(g3, roots, 1);
		CHECK(k == 1, "captured: %zu roots", k);
		CK(cuGraphNodeGetType(roots[0], &ty[0]));
		CHECK(ty[0] == CU_GRAPH_NODE_TYPE_MEMSET, "captured root %d", (int)ty[0]);
		k = edges_of(g3, from, to);
		CHECK(k == 2, "captured: %zu edges", k);
		for (size_t i = 0; i < k; i++) {
			CK(cuGraphNodeGetType(from[i], &ty[1]));
			CK(cuGraphNodeGetType(to[i], &ty[2]));
			CHECK((ty[1] == CU_GRAPH_NODE_TYPE_MEMSET &&
			       ty[2] == CU_GRAPH_NODE_TYPE_KERNEL) ||
				      (ty[1] == CU_GRAPH_NODE_TYPE_KERNEL &&
				       ty[2] == CU_GRAPH_NODE_TYPE_MEMCPY),
			      "captured edge %d -> %d", (int)ty[1], (int)ty[2]);
		}
		DEPS(roots[0], 1, to[from[0] == roots[0] ? 0 : 1]);
		CK(cuGraphInstantiate(&x, g3, 0));
		launch(x, s);
		CHECK(hc[7] == 4, "captured graph ran: %d", hc[7]);
		CK(cuGraphExecDestroy(x));
	}
	CK(cuGraphDestroy(g3));
	CK(cuGraphDestroy(g2));
	CK(cuGraphDestroy(g));
	printf("OK\n");
	return 0;
}
