// rt_mempool.cu -- stream-ordered allocation and memory pools: cudaMallocAsync rounds checked
// against the CPU, the default pool's attributes, an explicit pool with a release threshold,
// trim and its used/reserved counters, stream order between streams, and the refusals.
#include <cstdint>
#include <cstring>
#include <vector>

#include "rt_check.h"

__global__ void scale_add(int *v, int n, int mul, int add)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		v[i] = v[i] * mul + add;
}

// Fills slowly, so that the stream is still busy when the host queues more.
__global__ void slow_fill(int *v, int n, int value)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		int x = value;
		for (int k = 0; k < 200; k++)
			x = (x * 3 + 1) % 1000003;
		v[i] = value + (x & 0);
	}
}

static uint64_t pool_u64(cudaMemPool_t p, cudaMemPoolAttr a)
{
	uint64_t v = ~0ull;
	CK(cudaMemPoolGetAttribute(p, a, &v));
	return v;
}

static int pool_int(cudaMemPool_t p, cudaMemPoolAttr a)
{
	int v = -1;
	CK(cudaMemPoolGetAttribute(p, a, &v));
	return v;
}

static void expect_error(cudaError_t got, cudaError_t want, const char *what)
{
	EXPECT(got == want, "%s: %s, expected %s", what, cudaGetErrorName(got),
	       cudaGetErrorName(want));
	(void)cudaGetLastError();
}

int main()
{
	const int n = 1 << 14, rounds = 20;
	const size_t bytes = n * sizeof(int);
	int supported = 0;

	CK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
	EXPECT(supported == 1, "memory pools supported: %d", supported);

	// ---- the default pool: what a fresh one reports ----
	cudaMemPool_t def, cur;
	CK(cudaDeviceGetDefaultMemPool(&def, 0));
	CK(cudaDeviceGetMemPool(&cur, 0));
	EXPECT(def == cur, "the current pool is the default one");
	EXPECT(pool_u64(def, cudaMemPoolAttrReleaseThreshold) == 0, "default threshold 0");
	EXPECT(pool_int(def, cudaMemPoolReuseFollowEventDependencies) == 1, "follow events");
	EXPECT(pool_int(def, cudaMemPoolReuseAllowOpportunistic) == 1, "opportunistic");
	EXPECT(pool_int(def, cudaMemPoolReuseAllowInternalDependencies) == 1, "internal deps");
	EXPECT(pool_u64(def, cudaMemPoolAttrUsedMemCurrent) == 0, "nothing used yet");
	cudaMemLocation loc = {cudaMemLocationTypeDevice, 0};
	cudaMemAccessFlags fl = cudaMemAccessFlagsProtNone;
	CK(cudaMemPoolGetAccess(&fl, def, &loc));
	EXPECT(fl == cudaMemAccessFlagsProtReadWrite, "own device has access: %d", (int)fl);

	// ---- twenty rounds: allocate, fill, compute, copy back, free; all in stream order ----
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	int *h_in, *h_out;
	CK(cudaMallocHost(&h_in, bytes));
	CK(cudaMallocHost(&h_out, bytes * rounds));
	for (int i = 0; i < n; i++)
		h_in[i] = i - n / 2;
	for (int r = 0; r < rounds; r++) {
		int *d = nullptr;
		CK(cudaMallocAsync(&d, bytes, s));
		EXPECT(d != nullptr, "round %d: an address", r);
		CK(cudaMemcpyAsync(d, h_in, bytes, cudaMemcpyHostToDevice, s));
		scale_add<<<(n + 255) / 256, 256, 0, s>>>(d, n, r + 1, r);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(h_out + (size_t)r * n, d, bytes, cudaMemcpyDeviceToHost, s));
		CK(cudaFreeAsync(d, s));
	}
	CK(cudaStreamSynchronize(s));
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++) {
			int want = h_in[i] * (r + 1) + r;
			EXPECT(h_out[(size_t)r * n + i] == want, "round %d [%d] = %d, want %d", r,
			       i, h_out[(size_t)r * n + i], want);
		}
	// A threshold of 0: what the default pool held went back at the synchronize.
	EXPECT(pool_u64(def, cudaMemPoolAttrUsedMemCurrent) == 0, "default pool used 0");
	EXPECT(pool_u64(def, cudaMemPoolAttrReservedMemCurrent) == 0, "default pool reserved %llu",
	       (unsigned long long)pool_u64(def, cudaMemPoolAttrReservedMemCurrent));
	EXPECT(pool_u64(def, cudaMemPoolAttrUsedMemHigh) >= bytes, "used high watermark");

	// On the default stream as well (the per-thread one in a per-thread build).
	{
		int *d = nullptr;
		CK(cudaMallocAsync(&d, bytes, 0));
		CK(cudaMemsetAsync(d, 0, bytes, 0));
		scale_add<<<(n + 255) / 256, 256>>>(d, n, 1, 7);
		CK(cudaMemcpyAsync(h_out, d, bytes, cudaMemcpyDeviceToHost, 0));
		CK(cudaFreeAsync(d, 0));
		CK(cudaDeviceSynchronize());
		for (int i = 0; i < n; i++)
			EXPECT(h_out[i] == 7, "default stream [%d] = %d", i, h_out[i]);
	}

	// ---- an explicit pool that keeps up to 4 MiB ----
	cudaMemPoolProps props;
	std::memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location = loc;
	cudaMemPool_t pool;
	CK(cudaMemPoolCreate(&pool, &props));
	uint64_t keep = 4ull << 20;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
	EXPECT(pool_u64(pool, cudaMemPoolAttrReleaseThreshold) == keep, "threshold set");
	const size_t mib = 1 << 20;
	int *a[3];
	for (int k = 0; k < 3; k++) {
		CK(cudaMallocFromPoolAsync((void **)&a[k], mib, pool, s));
		CK(cudaMemsetAsync(a[k], 0, mib, s));
		scale_add<<<(n + 255) / 256, 256, 0, s>>>(a[k], n, 1, k + 1);
	}
	EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemCurrent) >= 3 * mib, "3 MiB used: %llu",
	       (unsigned long long)pool_u64(pool, cudaMemPoolAttrUsedMemCurrent));
	EXPECT(pool_u64(pool, cudaMemPoolAttrReservedMemCurrent) >= 3 * mib, "3 MiB reserved");
	for (int k = 0; k < 3; k++) {
		CK(cudaMemcpyAsync(h_out + k * n, a[k], bytes, cudaMemcpyDeviceToHost, s));
		CK(cudaFreeAsync(a[k], s));
	}
	CK(cudaStreamSynchronize(s));
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < n; i++)
			EXPECT(h_out[k * n + i] == k + 1, "pool buffer %d [%d] = %d", k, i,
			       h_out[k * n + i]);
	uint64_t held = pool_u64(pool, cudaMemPoolAttrReservedMemCurrent);
	EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemCurrent) == 0, "used back at 0");
	EXPECT(held >= 3 * mib, "below its threshold the pool keeps its memory: %llu",
	       (unsigned long long)held);
	// Reused, not reserved anew.
	int *again = nullptr;
	CK(cudaMallocFromPoolAsync((void **)&again, mib, pool, s));
	EXPECT(pool_u64(pool, cudaMemPoolAttrReservedMemCurrent) == held, "reused what it held");
	CK(cudaFreeAsync(again, s));
	CK(cudaStreamSynchronize(s));
	uint64_t zero = 0;
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
	EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemHigh) == 0, "used high reset");
	CK(cudaMemPoolTrimTo(pool, 0));
	EXPECT(pool_u64(pool, cudaMemPoolAttrReservedMemCurrent) == 0, "trimmed to nothing");
	CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero));
	EXPECT(pool_u64(pool, cudaMemPoolAttrReservedMemHigh) == 0, "reserved high reset");

	// ---- stream order between two streams: a free on s1 is not reused on s2 early ----
	cudaStream_t s2;
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	for (int r = 0; r < 4; r++) {
		int *p1 = nullptr, *p2 = nullptr;
		CK(cudaMallocFromPoolAsync((void **)&p1, bytes, pool, s));
		slow_fill<<<(n + 255) / 256, 256, 0, s>>>(p1, n, 1000 + r);
		CK(cudaMemcpyAsync(h_out, p1, bytes, cudaMemcpyDeviceToHost, s));
		CK(cudaFreeAsync(p1, s));
		CK(cudaMallocFromPoolAsync((void **)&p2, bytes, pool, s2));
		slow_fill<<<(n + 255) / 256, 256, 0, s2>>>(p2, n, 2000 + r);
		CK(cudaMemcpyAsync(h_out + n, p2, bytes, cudaMemcpyDeviceToHost, s2));
		CK(cudaFreeAsync(p2, s2));
		CK(cudaDeviceSynchronize());
		for (int i = 0; i < n; i++) {
			EXPECT(h_out[i] == 1000 + r, "s1 round %d [%d] = %d", r, i, h_out[i]);
			EXPECT(h_out[n + i] == 2000 + r, "s2 round %d [%d] = %d", r, i,
			       h_out[n + i]);
		}
	}

	// ---- a pool destroyed with an allocation out: the allocation stays usable ----
	cudaMemPool_t gone;
	CK(cudaMemPoolCreate(&gone, &props));
	int *kept = nullptr;
	CK(cudaMallocFromPoolAsync((void **)&kept, bytes, gone, s));
	CK(cudaMemPoolDestroy(gone));
	CK(cudaMemcpyAsync(kept, h_in, bytes, cudaMemcpyHostToDevice, s));
	scale_add<<<(n + 255) / 256, 256, 0, s>>>(kept, n, 3, 0);
	CK(cudaMemcpyAsync(h_out, kept, bytes, cudaMemcpyDeviceToHost, s));
	CK(cudaFreeAsync(kept, s));
	CK(cudaStreamSynchronize(s));
	for (int i = 0; i < n; i++)
		EXPECT(h_out[i] == h_in[i] * 3, "destroyed pool's buffer [%d] = %d", i, h_out[i]);

	// ---- cudaFree takes stream-ordered memory too (after the work queued before it) ----
	{
		int *d = nullptr;
		CK(cudaMallocAsync(&d, bytes, s));
		CK(cudaMemcpyAsync(d, h_in, bytes, cudaMemcpyHostToDevice, s));
		scale_add<<<(n + 255) / 256, 256, 0, s>>>(d, n, 2, 1);
		CK(cudaMemcpyAsync(h_out, d, bytes, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		CK(cudaFree(d));
		for (int i = 0; i < n; i++)
			EXPECT(h_out[i] == h_in[i] * 2 + 1, "before cudaFree [%d] = %d", i, h_out[i]);
		expect_error(cudaFreeAsync(d, s), cudaErrorInvalidValue, "a free after cudaFree");
	}

	// ---- the current pool of the device ----
	CK(cudaDeviceSetMemPool(0, pool));
	CK(cudaDeviceGetMemPool(&cur, 0));
	EXPECT(cur == pool, "the current pool is the one set");
	int *from_cur = nullptr;
	CK(cudaMallocAsync(&from_cur, mib, s));
	EXPECT(pool_u64(pool, cudaMemPoolAttrUsedMemCurrent) >= mib, "served by the current pool");
	CK(cudaFreeAsync(from_cur, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaDeviceSetMemPool(0, def));

	// ---- refusals ----
	int *p = nullptr;
	CK(cudaMallocAsync(&p, bytes, s));
	CK(cudaFreeAsync(p, s));
	expect_error(cudaFreeAsync(p, s), cudaErrorInvalidValue, "a second free");
	int local = 0;
	expect_error(cudaFreeAsync(&local, s), cudaErrorInvalidValue, "a free of host memory");
	expect_error(cudaMemPoolDestroy(def), cudaErrorInvalidValue, "destroying a default pool");
	uint64_t two = 2;
	expect_error(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &two),
		     cudaErrorInvalidValue, "a high watermark set to non-zero");
	expect_error(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero),
		     cudaErrorInvalidValue, "setting a current size");
	size_t freeb = 0, total = 0;
	CK(cudaMemGetInfo(&freeb, &total));
	int *huge = nullptr;
	expect_error(cudaMallocAsync(&huge, total + (1ull << 30), s), cudaErrorMemoryAllocation,
		     "more than the device");
	CK(cudaStreamSynchronize(s));
	CK(cudaMemPoolDestroy(pool));
	CK(cudaStreamDestroy(s2));
	CK(cudaStreamDestroy(s));
	CK(cudaFreeHost(h_in));
	CK(cudaFreeHost(h_out));
	std::printf("rt_mempool: PASSED\n");
	return 0;
}
