// rt_basic.cu -- the runtime API's everyday calls: allocation, copies, memsets, several
// kernels, device properties, memory info, function attributes and occupancy. Every
// result is checked against the CPU.
#include <cmath>
#include <cstring>
#include <vector>

#include "rt_check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void saxpy(float a, const float *x, float *y, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		y[i] = a * x[i] + y[i];
}

// Block sums in shared memory, then one atomic per block.
__global__ void sum(const int *v, int n, unsigned long long *out)
{
	__shared__ int part[256];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	part[threadIdx.x] = i < n ? v[i] : 0;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, (unsigned long long)part[0]);
}

struct Params {
	int n;
	char tag;
	double scale;
	short pad[3];
};

// A struct by value with odd-sized members.
__global__ void scale_by(Params p, double *v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < p.n)
		v[i] = v[i] * p.scale + p.tag + p.pad[2];
}

int main()
{
	const int n = 5000;
	int count = 0;
	CK(cudaGetDeviceCount(&count));
	EXPECT(count >= 1, "%d devices", count);

	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	EXPECT(prop.name[0] != '\0', "a device name");
	EXPECT(prop.warpSize == 32, "warpSize %d", prop.warpSize);
	EXPECT(prop.major >= 7, "compute capability %d.%d", prop.major, prop.minor);
	EXPECT(prop.maxThreadsPerBlock >= 1024, "maxThreadsPerBlock %d", prop.maxThreadsPerBlock);
	EXPECT(prop.totalGlobalMem > 0, "totalGlobalMem");
	std::printf("device: %s, cc %d.%d, %zu MiB, %d SMs\n", prop.name, prop.major, prop.minor,
		    prop.totalGlobalMem >> 20, prop.multiProcessorCount);

	std::vector<float> a(n), b(n), c(n);
	for (int i = 0; i < n; i++) {
		a[i] = i * 0.25f;
		b[i] = 1000.0f - i;
	}
	float *da, *db, *dc;
	CK(cudaMalloc(&da, n * sizeof(float)));
	CK(cudaMalloc(&db, n * sizeof(float)));
	CK(cudaMalloc(&dc, n * sizeof(float)));

	size_t fr = 0, tot = 0;
	CK(cudaMemGetInfo(&fr, &tot));
	EXPECT(tot > 0 && fr <= tot, "free %zu total %zu", fr, tot);

	CK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(dc, 0xff, n * sizeof(float)));
	add<<<(n + 127) / 128, 128>>>(da, db, dc, n);
	CK(cudaGetLastError());
	CK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(c[i] == a[i] + b[i], "c[%d] = %g, want %g", i, c[i], a[i] + b[i]);

	saxpy<<<4, 64>>>(2.0f, da, db, n); // grid-stride loop: 256 threads for 5000 items
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(c.data(), db, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(c[i] == 2.0f * a[i] + b[i], "saxpy[%d] = %g", i, c[i]);

	// Device-to-device copy and a memset that must land exactly.
	CK(cudaMemcpy(dc, da, n * sizeof(float), cudaMemcpyDeviceToDevice));
	CK(cudaMemset(dc, 0, 16 * sizeof(float)));
	CK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(c[i] == (i < 16 ? 0.0f : a[i]), "dtod[%d] = %g", i, c[i]);

	std::vector<int> v(n);
	unsigned long long want = 0, got = 0;
	for (int i = 0; i < n; i++) {
		v[i] = (i * 7919) % 1000 - 300;
		want += (unsigned long long)(long long)v[i];
	}
	int *dv;
	unsigned long long *dsum;
	CK(cudaMalloc(&dv, n * sizeof(int)));
	CK(cudaMalloc(&dsum, sizeof(*dsum)));
	CK(cudaMemcpy(dv, v.data(), n * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemset(dsum, 0, sizeof(*dsum)));
	sum<<<(n + 255) / 256, 256>>>(dv, n, dsum);
	CK(cudaMemcpy(&got, dsum, sizeof(got), cudaMemcpyDeviceToHost));
	EXPECT(got == want, "sum %lld, want %lld", (long long)got, (long long)want);

	std::vector<double> d(n), dback(n);
	for (int i = 0; i < n; i++)
		d[i] = i / 3.0;
	double *dd;
	CK(cudaMalloc(&dd, n * sizeof(double)));
	CK(cudaMemcpy(dd, d.data(), n * sizeof(double), cudaMemcpyHostToDevice));
	Params p = {n, 'x', 1.5, {1, 2, 3}};
	scale_by<<<(n + 255) / 256, 256>>>(p, dd);
	CK(cudaMemcpy(dback.data(), dd, n * sizeof(double), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(dback[i] == d[i] * 1.5 + 'x' + 3, "struct param [%d] = %g", i, dback[i]);

	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, sum));
	EXPECT(fa.maxThreadsPerBlock >= 256, "maxThreadsPerBlock %d", fa.maxThreadsPerBlock);
	EXPECT(fa.sharedSizeBytes == 256 * sizeof(int), "sharedSizeBytes %zu", fa.sharedSizeBytes);
	int blocks = 0;
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, sum, 256, 0));
	EXPECT(blocks >= 1, "occupancy %d blocks", blocks);
	int min_grid = 0, best = 0;
	CK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best, add));
	EXPECT(best >= 32 && best <= 1024 && best % 32 == 0, "best block size %d", best);

	CK(cudaFree(da));
	CK(cudaFree(db));
	CK(cudaFree(dc));
	CK(cudaFree(dv));
	CK(cudaFree(dsum));
	CK(cudaFree(dd));
	std::printf("rt_basic: PASSED\n");
	return 0;
}
