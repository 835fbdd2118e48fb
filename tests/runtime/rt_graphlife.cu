// rt_graphlife.cu -- an executable destroyed while its launch waits on the stream: the launch
// still runs (its conditional node and the op applying the handle's default included), but
// the executable's claim on its allocation node's memory goes at once: the device's graph
// memory in use (after a first launch made it) is 0 right after the destroy, as with no
// conditional node, and the graph can be instantiated again while that launch is queued. The launch waits behind a host
// function until then; the IF body's memset is checked after it ran.
#include <cstdint>
#include <cstring>
#include <unistd.h>

#include "rt_check.h"

static const size_t BYTES = 1 << 20;

static volatile int go;

static void CUDART_CB wait_go(void *)
{
	for (int i = 0; i < 2000 && !__atomic_load_n(&go, __ATOMIC_ACQUIRE); i++)
		usleep(5000);
}

static unsigned long long used_now()
{
	unsigned long long v = 0;
	CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
	return v;
}

// alloc -> [IF(h, default 1) { memset(out, 7) } ->] free
static void build(cudaGraph_t *g, unsigned char *out, bool cond)
{
	cudaMemAllocNodeParams p;
	cudaGraphNodeParams c = {};
	cudaGraphNode_t an, cn, fn;
	cudaGraphConditionalHandle h;
	cudaMemsetParams m;

	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = cudaMemAllocationTypePinned;
	p.poolProps.location.type = cudaMemLocationTypeDevice;
	p.poolProps.location.id = 0;
	p.bytesize = BYTES;
	CK(cudaGraphCreate(g, 0));
	CK(cudaGraphAddMemAllocNode(&an, *g, NULL, 0, &p));
	cn = an;
	if (cond) {
		CK(cudaGraphConditionalHandleCreate(&h, *g, 1, cudaGraphCondAssignDefault));
		c.type = cudaGraphNodeTypeConditional;
		c.conditional.handle = h;
		c.conditional.type = cudaGraphCondTypeIf;
		c.conditional.size = 1;
		CK(cudaGraphAddNode(&cn, *g, &an, NULL, 1, &c));
		memset(&m, 0, sizeof(m));
		m.dst = out;
		m.value = 7;
		m.elementSize = 1;
		m.width = 64;
		m.height = 1;
		cudaGraphNode_t ms;
		CK(cudaGraphAddMemsetNode(&ms, c.conditional.phGraph_out[0], NULL, 0, &m));
	}
	CK(cudaGraphAddMemFreeNode(&fn, *g, &cn, 1, p.dptr));
}

static void round_trip(bool cond)
{
	const char *what = cond ? "with a conditional node" : "without one";
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t x, again;
	unsigned char *out, back[64];

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&out, 64));
	CK(cudaMemset(out, 0, 64));
	build(&g, out, cond);
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s)); /* the allocation's memory made, held by x */
	CK(cudaStreamSynchronize(s));
	EXPECT(used_now() > 0, "%s: the executable's memory is in use", what);
	__atomic_store_n(&go, 0, __ATOMIC_RELEASE);
	CK(cudaLaunchHostFunc(s, wait_go, NULL));
	CK(cudaGraphLaunch(x, s));
	CK(cudaGraphExecDestroy(x));
	unsigned long long used = used_now();
	cudaError_t e = cudaGraphInstantiate(&again, g, 0);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	CK(cudaStreamSynchronize(s));
	EXPECT(used == 0, "%s: %llu bytes of graph memory in use after the destroy", what, used);
	EXPECT(e == cudaSuccess, "%s: instantiated again while the launch was queued: %s", what,
	       cudaGetErrorName(e));
	CK(cudaMemcpy(back, out, sizeof(back), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 64; i++)
		EXPECT(back[i] == (cond ? 7 : 0), "%s: byte %d is %d", what, i, back[i]);
	CK(cudaMemset(out, 0, 64));
	CK(cudaGraphLaunch(again, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(back, out, sizeof(back), cudaMemcpyDeviceToHost));
	EXPECT(back[0] == (cond ? 7 : 0), "%s: the second executable's launch: %d", what, back[0]);
	CK(cudaGraphExecDestroy(again));
	CK(cudaGraphDestroy(g));
	CK(cudaDeviceGraphMemTrim(0));
	CK(cudaFree(out));
	CK(cudaStreamDestroy(s));
}

int main()
{
	round_trip(false);
	round_trip(true);
	std::printf("rt_graphlife: PASSED\n");
	return 0;
}
