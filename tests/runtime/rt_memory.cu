// rt_memory.cu -- the rest of everyday memory work: pitched allocations with 2-D copies and
// memsets (sync and async), unified copies (cudaMemcpyDefault), registered host memory,
// pointer attributes, device-to-device 2-D copies of several rows, dynamic shared memory
// with a raised limit, and cudaLaunchKernelEx.
#include <cstring>
#include <vector>

#include "rt_check.h"

__global__ void scale_rows(float *m, size_t pitch, int w, int h, float k)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x < w && y < h) {
		float *row = (float *)((char *)m + y * pitch);
		row[x] = row[x] * k + y;
	}
}

// Reverses each block's slice through dynamic shared memory.
__global__ void reverse_blocks(int *v)
{
	extern __shared__ int tile[];
	int t = threadIdx.x, base = blockIdx.x * blockDim.x;
	tile[t] = v[base + t];
	__syncthreads();
	v[base + t] = tile[blockDim.x - 1 - t];
}

int main()
{
	const int w = 37, h = 23; // odd sizes: rows narrower than the pitch
	std::vector<float> a(w * h), b(w * h);
	for (int i = 0; i < w * h; i++)
		a[i] = i * 0.5f;

	float *d;
	size_t pitch = 0;
	CK(cudaMallocPitch(&d, &pitch, w * sizeof(float), h));
	EXPECT(pitch >= w * sizeof(float), "pitch %zu", pitch);
	CK(cudaMemset2D(d, pitch, 0, w * sizeof(float), h));
	CK(cudaMemcpy2D(d, pitch, a.data(), w * sizeof(float), w * sizeof(float), h,
			cudaMemcpyHostToDevice));
	scale_rows<<<dim3(2, h), 32>>>(d, pitch, w, h, 2.0f);
	CK(cudaMemcpy2D(b.data(), w * sizeof(float), d, pitch, w * sizeof(float), h,
			cudaMemcpyDeviceToHost));
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			EXPECT(b[y * w + x] == a[y * w + x] * 2.0f + y, "[%d][%d] = %g", y, x,
			       b[y * w + x]);

	// Async 2-D: a sub-rectangle, with host rows wider than the copy.
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	std::vector<float> sub(8 * 5, -1.0f);
	CK(cudaMemset2DAsync(d, pitch, 0, 4 * sizeof(float), 3, s));
	CK(cudaMemcpy2DAsync(sub.data(), 8 * sizeof(float), d, pitch, 5 * sizeof(float), 5,
			     cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 8; x++) {
			float want = x >= 5 ? -1.0f : (y < 3 && x < 4) ? 0.0f : b[y * w + x];
			EXPECT(sub[y * 8 + x] == want, "sub[%d][%d] = %g, want %g", y, x,
			       sub[y * 8 + x], want);
		}

	// Device to device, several rows, between two pitched allocations: a 20x7 block from
	// (3, 4) of d to (1, 2) of d2, sync and then async; d2's other bytes stay as set.
	float *d2;
	size_t pitch2 = 0;
	CK(cudaMallocPitch(&d2, &pitch2, 29 * sizeof(float), 13));
	for (int pass = 0; pass < 2; pass++) {
		std::vector<float> c(29 * 13);
		CK(cudaMemset2D(d2, pitch2, 0xff, 29 * sizeof(float), 13));
		float *src = (float *)((char *)d + 4 * pitch) + 3;
		float *dst = (float *)((char *)d2 + 2 * pitch2) + 1;
		if (pass == 0)
			CK(cudaMemcpy2D(dst, pitch2, src, pitch, 20 * sizeof(float), 7,
					cudaMemcpyDeviceToDevice));
		else
			CK(cudaMemcpy2DAsync(dst, pitch2, src, pitch, 20 * sizeof(float), 7,
					     cudaMemcpyDeviceToDevice, s));
		CK(cudaMemcpy2DAsync(c.data(), 29 * sizeof(float), d2, pitch2, 29 * sizeof(float),
				     13, cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		for (int y = 0; y < 13; y++)
			for (int x = 0; x < 29; x++) {
				bool in = y >= 2 && y < 9 && x >= 1 && x < 21;
				float got = c[y * 29 + x];
				if (in) {
					float want = b[(y + 2) * w + (x + 2)];
					EXPECT(got == want, "pass %d d2[%d][%d] = %g, want %g", pass,
					       y, x, got, want);
				} else {
					EXPECT(got != got, "pass %d d2[%d][%d] = %g, want untouched",
					       pass, y, x, got);
				}
			}
	}
	CK(cudaFree(d2));

	// Unified copies and pointer attributes.
	int *dv, *reg = (int *)std::malloc(4096 * sizeof(int));
	std::vector<int> hv(4096);
	for (int i = 0; i < 4096; i++)
		hv[i] = i ^ 0x5a5a;
	CK(cudaMalloc(&dv, 4096 * sizeof(int)));
	CK(cudaHostRegister(reg, 4096 * sizeof(int), cudaHostRegisterDefault));
	CK(cudaMemcpy(dv, hv.data(), 4096 * sizeof(int), cudaMemcpyDefault));
	CK(cudaMemcpy(reg, dv, 4096 * sizeof(int), cudaMemcpyDefault));
	EXPECT(std::memcmp(reg, hv.data(), 4096 * sizeof(int)) == 0, "unified round trip");
	cudaPointerAttributes pa;
	CK(cudaPointerGetAttributes(&pa, dv + 10));
	EXPECT(pa.type == cudaMemoryTypeDevice, "device pointer type %d", (int)pa.type);
	EXPECT(pa.devicePointer == dv + 10, "device pointer");
	CK(cudaPointerGetAttributes(&pa, reg));
	EXPECT(pa.type == cudaMemoryTypeHost, "registered host pointer type %d", (int)pa.type);
	int stack_var = 0;
	CK(cudaPointerGetAttributes(&pa, &stack_var));
	EXPECT(pa.type == cudaMemoryTypeUnregistered, "plain host pointer type %d", (int)pa.type);
	CK(cudaHostUnregister(reg));
	std::free(reg);

	// Dynamic shared memory past the default 48 KiB needs the attribute raised first.
	const int threads = 1024;
	size_t big = 64 * 1024;
	CK(cudaFuncSetAttribute(reverse_blocks, cudaFuncAttributeMaxDynamicSharedMemorySize,
				(int)big));
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, reverse_blocks));
	EXPECT(fa.maxDynamicSharedSizeBytes == (int)big, "max dynamic shared %d",
	       fa.maxDynamicSharedSizeBytes);
	int *dr;
	std::vector<int> r(2 * threads);
	for (int i = 0; i < 2 * threads; i++)
		r[i] = i;
	CK(cudaMalloc(&dr, r.size() * sizeof(int)));
	CK(cudaMemcpy(dr, r.data(), r.size() * sizeof(int), cudaMemcpyHostToDevice));
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(2);
	cfg.blockDim = dim3(threads);
	cfg.dynamicSmemBytes = big;
	cfg.stream = s;
	CK(cudaLaunchKernelEx(&cfg, reverse_blocks, dr));
	CK(cudaMemcpyAsync(r.data(), dr, r.size() * sizeof(int), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (int i = 0; i < 2 * threads; i++) {
		int blk = i / threads, t = i % threads;
		EXPECT(r[i] == blk * threads + threads - 1 - t, "reversed[%d] = %d", i, r[i]);
	}

	CK(cudaStreamDestroy(s));
	CK(cudaFree(d));
	CK(cudaFree(dv));
	CK(cudaFree(dr));
	std::printf("rt_memory: PASSED\n");
	return 0;
}
