// rt_managed.cu -- unified memory from the runtime API: cudaMallocManaged written by the
// host, then kernels, then read by the host, over rounds of sparse host writes and several
// allocations on two streams; stream attachment, prefetches and advice with the range
// attributes they report; pointer attributes; zero-copy through cudaHostAlloc(Mapped) and
// cudaHostGetDevicePointer; __managed__ variables with initial values. Every result is
// checked against the CPU.
#include <cstring>
#include <vector>

#include "rt_check.h"

__global__ void axpb(int *v, int n, int a, int b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = v[i] * a + b;
}

__managed__ int total = 5;
__managed__ int marr[3000];

__global__ void count_into(int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		atomicAdd(&total, 1);
		marr[i] += i;
	}
}

// A host function between two kernels of a stream: it sees the first kernel's writes and the
// second kernel sees its own.
struct hostfn_arg {
	int *m;
	int seen;
};

static void CUDART_CB host_step(void *p)
{
	hostfn_arg *a = (hostfn_arg *)p;
	a->seen = a->m[10];
	a->m[10] = a->seen * 10;
}

static void axpb_ref(std::vector<int> &v, int a, int b)
{
	for (auto &x : v)
		x = x * a + b;
}

static void same(const char *what, const int *got, const std::vector<int> &want)
{
	for (size_t i = 0; i < want.size(); i++)
		EXPECT(got[i] == want[i], "%s: [%zu] = %d, expected %d", what, i, got[i], want[i]);
}

int main()
{
	// __managed__ variables: the host sees the initial value, then kernels' updates.
	EXPECT(total == 5, "initial value of a __managed__ variable: %d", total);
	std::vector<int> mref(3000, 1);
	for (int i = 0; i < 3000; i++)
		marr[i] = 1;
	for (int round = 0; round < 3; round++) {
		marr[round] = mref[round] = 100; // a sparse host write between launches
		count_into<<<12, 256>>>(3000);
		for (int i = 0; i < 3000; i++)
			mref[i] += i;
		CK(cudaDeviceSynchronize());
		EXPECT(total == 5 + 3000 * (round + 1), "__managed__ total %d", total);
		same("__managed__ array", marr, mref);
	}

	int dev = 0, v = 0;
	CK(cudaDeviceGetAttribute(&v, cudaDevAttrManagedMemory, dev));
	EXPECT(v == 1, "managedMemory %d", v);
	CK(cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, dev));
	EXPECT(v == 1, "canMapHostMemory %d", v);
	int concurrent = 0;
	CK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));

	// Two allocations, each on its own stream (attached to it), sparse host writes between
	// rounds.
	const int n[2] = {300000, 5000};
	int *m[2];
	std::vector<int> ref[2];
	cudaStream_t s[2];
	for (int k = 0; k < 2; k++) {
		CK(cudaMallocManaged(&m[k], n[k] * sizeof(int)));
		CK(cudaStreamCreate(&s[k]));
		CK(cudaStreamAttachMemAsync(s[k], m[k], 0, cudaMemAttachSingle));
		CK(cudaStreamSynchronize(s[k]));
		ref[k].resize(n[k]);
		for (int i = 0; i < n[k]; i++)
			m[k][i] = ref[k][i] = i - 1000 * k;
	}
	for (int round = 0; round < 12; round++) {
		for (int k = 0; k < 2; k++) {
			for (int j = 0; j < 4; j++) {
				int at = (round * 7919 + j * 104729) % n[k];
				m[k][at] = ref[k][at] = round * 100 + j;
			}
			axpb<<<(n[k] + 255) / 256, 256, 0, s[k]>>>(m[k], n[k], 3, round);
			axpb_ref(ref[k], 3, round);
		}
		if (round % 2)
			CK(cudaDeviceSynchronize());
		else
			for (int k = 0; k < 2; k++)
				CK(cudaStreamSynchronize(s[k]));
		for (int k = 0; k < 2; k++)
			same("managed rounds", m[k], ref[k]);
	}

	// Prefetch and advice: accepted and reported back by the range attributes.
	cudaMemLocation here = {cudaMemLocationTypeDevice, dev};
	CK(cudaMemAdvise(m[0], n[0] * sizeof(int), cudaMemAdviseSetReadMostly, here));
	CK(cudaMemRangeGetAttribute(&v, sizeof(v), cudaMemRangeAttributeReadMostly, m[0],
				    n[0] * sizeof(int)));
	EXPECT(v == 1, "read mostly %d", v);
	// A GPU as a location needs concurrent managed access (the pool reports none).
	int where = concurrent ? dev : cudaCpuDeviceId;
	cudaMemLocation loc = {concurrent ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost,
			       concurrent ? dev : 0};
	CK(cudaMemAdvise(m[0], n[0] * sizeof(int), cudaMemAdviseSetPreferredLocation, loc));
	CK(cudaMemRangeGetAttribute(&v, sizeof(v), cudaMemRangeAttributePreferredLocation, m[0],
				    n[0] * sizeof(int)));
	EXPECT(v == where, "preferred location %d", v);
	if (!concurrent) {
		EXPECT(cudaMemAdvise(m[0], 4, cudaMemAdviseSetAccessedBy, here) ==
			       cudaErrorInvalidDevice,
		       "a GPU accessing without concurrent managed access");
		EXPECT(cudaMemPrefetchAsync(m[0], 4, here, 0, s[0]) == cudaErrorInvalidDevice,
		       "a prefetch to a GPU without concurrent managed access");
		cudaGetLastError();
	}
	CK(cudaMemPrefetchAsync(m[0], n[0] * sizeof(int), loc, 0, s[0]));
	CK(cudaStreamSynchronize(s[0]));
	CK(cudaMemRangeGetAttribute(&v, sizeof(v), cudaMemRangeAttributeLastPrefetchLocation,
				    m[0], n[0] * sizeof(int)));
	EXPECT(v == where, "last prefetch location %d", v);
	same("after prefetch", m[0], ref[0]);

	// A host function in stream order.
	{
		hostfn_arg a = {m[1], 0};
		m[1][10] = ref[1][10] = 4;
		axpb<<<(n[1] + 255) / 256, 256, 0, s[1]>>>(m[1], n[1], 2, 1);
		axpb_ref(ref[1], 2, 1);
		CK(cudaLaunchHostFunc(s[1], host_step, &a));
		ref[1][10] *= 10;
		axpb<<<(n[1] + 255) / 256, 256, 0, s[1]>>>(m[1], n[1], 2, 1);
		axpb_ref(ref[1], 2, 1);
		CK(cudaStreamSynchronize(s[1]));
		EXPECT(a.seen == 9, "the host function saw %d", a.seen);
		same("around a host function", m[1], ref[1]);
	}

	// Pointer attributes.
	cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, m[1] + 10));
	EXPECT(pa.type == cudaMemoryTypeManaged, "type %d", (int)pa.type);
	EXPECT(pa.devicePointer == m[1] + 10 && pa.hostPointer == m[1] + 10, "pointers");

	// A copy into managed memory and one out of it.
	std::vector<int> src(1000);
	for (int i = 0; i < 1000; i++)
		src[i] = ref[1][i] = 7 * i;
	CK(cudaMemcpy(m[1], src.data(), 1000 * sizeof(int), cudaMemcpyHostToDevice));
	same("copy into managed", m[1], ref[1]);
	m[1][3] = ref[1][3] = -3;
	CK(cudaMemcpy(src.data(), m[1], 1000 * sizeof(int), cudaMemcpyDefault));
	EXPECT(src[3] == -3, "copy out of managed: %d", src[3]);

	for (int k = 0; k < 2; k++) {
		CK(cudaFree(m[k]));
		CK(cudaStreamDestroy(s[k]));
	}

	// Zero-copy: mapped page-locked memory used by a kernel through its device pointer.
	const int z = 10000;
	int *h, *d;
	std::vector<int> zr(z);
	CK(cudaHostAlloc(&h, z * sizeof(int), cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer(&d, h, 0));
	for (int i = 0; i < z; i++)
		h[i] = zr[i] = i * 2;
	for (int round = 0; round < 3; round++) {
		h[round * 333] = zr[round * 333] = -round;
		axpb<<<(z + 255) / 256, 256>>>(d, z, 2, 1);
		axpb_ref(zr, 2, 1);
		CK(cudaDeviceSynchronize());
		same("zero-copy", h, zr);
	}
	CK(cudaFreeHost(h));

	// Page-locked memory from cudaMallocHost still works for copies.
	int *p, *dv;
	CK(cudaMallocHost(&p, 4096 * sizeof(int)));
	CK(cudaMalloc(&dv, 4096 * sizeof(int)));
	for (int i = 0; i < 4096; i++)
		p[i] = i;
	CK(cudaMemcpyAsync(dv, p, 4096 * sizeof(int), cudaMemcpyHostToDevice));
	axpb<<<16, 256>>>(dv, 4096, 5, 0);
	CK(cudaMemcpyAsync(p, dv, 4096 * sizeof(int), cudaMemcpyDeviceToHost));
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < 4096; i++)
		EXPECT(p[i] == 5 * i, "pinned [%d] = %d", i, p[i]);
	CK(cudaFree(dv));
	CK(cudaFreeHost(p));
	printf("PASSED\n");
	return 0;
}
