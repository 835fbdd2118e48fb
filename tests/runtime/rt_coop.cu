// rt_coop.cu -- cooperative launches: grid-wide barriers (cooperative_groups grid.sync())
// through cudaLaunchCooperativeKernel and cudaLaunchKernelEx, the grid-size limit, the
// device attribute, and cluster launches refused by a device without clusters.
#include <cooperative_groups.h>
#include <cstdint>
#include <cstring>
#include <vector>

#include <cuda.h>

#include "rt_check.h"

namespace cg = cooperative_groups;

#define BLOCK 256
#define ROUNDS 3

// Several phases separated by grid.sync(): every phase reads what other blocks wrote in the
// one before, so a barrier that does not wait for the whole grid gives a wrong answer.
//   1. each block sums its slice of x into partial[block] (shared-memory tree)
//   2. block 0 sums the partials into *total
//   3. ROUNDS times: y[i] += y[(i + 1) % n] + *total, with a barrier between read and write
__global__ void phases(const unsigned *x, unsigned *partial, unsigned *total, unsigned *y,
		       unsigned n)
{
	__shared__ unsigned s[BLOCK];
	cg::grid_group grid = cg::this_grid();
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x, acc = 0;

	for (unsigned k = i; k < n; k += gridDim.x * blockDim.x)
		acc += x[k];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (unsigned w = BLOCK / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s[0];
	grid.sync();
	if (blockIdx.x == 0) {
		unsigned t = 0;

		for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
			t += partial[b];
		s[threadIdx.x] = t;
		__syncthreads();
		if (threadIdx.x == 0) {
			for (unsigned k = 1; k < BLOCK; k++)
				t += s[k];
			*total = t;
		}
	}
	grid.sync();
	for (int r = 0; r < ROUNDS; r++) {
		unsigned mine = 0, next = 0;

		if (i < n) {
			mine = y[i];
			next = y[(i + 1) % n];
		}
		grid.sync();
		if (i < n)
			y[i] = mine + next + *total;
		grid.sync();
	}
}

struct result {
	unsigned total;
	std::vector<unsigned> y;
};

static result cpu(const std::vector<unsigned> &x, const std::vector<unsigned> &y0)
{
	result r;
	size_t n = x.size();

	r.total = 0;
	for (unsigned v : x)
		r.total += v;
	r.y = y0;
	for (int k = 0; k < ROUNDS; k++) {
		std::vector<unsigned> old = r.y;

		for (size_t i = 0; i < n; i++)
			r.y[i] = old[i] + old[(i + 1) % n] + r.total;
	}
	return r;
}

static void check(const result &want, unsigned *d_total, unsigned *d_y, unsigned n, const char *how)
{
	unsigned total;
	std::vector<unsigned> y(n);

	CK(cudaMemcpy(&total, d_total, sizeof(total), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(y.data(), d_y, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
	EXPECT(total == want.total, "%s: total %u, want %u", how, total, want.total);
	for (unsigned i = 0; i < n; i++)
		EXPECT(y[i] == want.y[i], "%s: y[%u] = %u, want %u", how, i, y[i], want.y[i]);
}

__global__ void cluster_kernel(int *out)
{
	out[blockIdx.x] = 1;
}

int main()
{
	int dev = 0, coop = 0, sms = 0, per_sm = 0;

	CK(cudaSetDevice(dev));
	CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
	EXPECT(coop == 1, "cudaDevAttrCooperativeLaunch = %d", coop);
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, BLOCK, 0));
	EXPECT(per_sm > 0 && sms > 0, "occupancy %d blocks x %d SMs", per_sm, sms);

	// Every block that fits at once; x and y have n elements, fewer than the grid's
	// threads (those beyond n only take part in the barriers) but more than the grid's
	// blocks, so each partial sum adds several.
	unsigned blocks = (unsigned)(per_sm * sms), n = blocks * BLOCK - 5;
	std::vector<unsigned> x(n), y0(n);
	for (unsigned i = 0; i < n; i++) {
		x[i] = (i * 2654435761u) >> 20;
		y0[i] = i ^ 0x5a5a;
	}
	unsigned *d_x, *d_partial, *d_total, *d_y;
	CK(cudaMalloc(&d_x, n * sizeof(unsigned)));
	CK(cudaMalloc(&d_partial, blocks * sizeof(unsigned)));
	CK(cudaMalloc(&d_total, sizeof(unsigned)));
	CK(cudaMalloc(&d_y, n * sizeof(unsigned)));
	CK(cudaMemcpy(d_x, x.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));

	// cudaLaunchCooperativeKernel with the largest grid allowed.
	CK(cudaMemcpy(d_y, y0.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
	CK(cudaMemset(d_total, 0, sizeof(unsigned)));
	void *args[] = {&d_x, &d_partial, &d_total, &d_y, &n};
	CK(cudaLaunchCooperativeKernel((void *)phases, dim3(blocks), dim3(BLOCK), args, 0, 0));
	CK(cudaDeviceSynchronize());
	check(cpu(x, y0), d_total, d_y, n, "cudaLaunchCooperativeKernel");

	// The same through cudaLaunchKernelEx's cooperative attribute, on a stream, with a
	// smaller grid (the rounds then cover the grid's threads only).
	cudaStream_t st;
	CK(cudaStreamCreate(&st));
	unsigned small_blocks = blocks / 3 ? blocks / 3 : 1, ns = small_blocks * BLOCK;
	std::vector<unsigned> ys(y0.begin(), y0.begin() + ns);
	CK(cudaMemcpyAsync(d_y, ys.data(), ns * sizeof(unsigned), cudaMemcpyHostToDevice, st));
	{
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute attr[2];
		int lo = 0, hi = 0;

		// A priority travels with it (the pool forwards both).
		CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
		attr[0].id = cudaLaunchAttributeCooperative;
		attr[0].val.cooperative = 1;
		attr[1].id = cudaLaunchAttributePriority;
		attr[1].val.priority = hi;
		cfg.gridDim = dim3(small_blocks);
		cfg.blockDim = dim3(BLOCK);
		cfg.stream = st;
		cfg.attrs = attr;
		cfg.numAttrs = 2;
		CK(cudaLaunchKernelEx(&cfg, phases, (const unsigned *)d_x, d_partial, d_total, d_y,
				      ns));
	}
	CK(cudaStreamSynchronize(st));
	{
		result w = cpu(std::vector<unsigned>(x.begin(), x.begin() + ns), ys);
		check(w, d_total, d_y, ns, "cudaLaunchKernelEx cooperative");
	}

	// A cooperative launch captured into a graph stays cooperative when the graph runs.
	{
		cudaGraph_t g;
		cudaGraphExec_t ge;
		unsigned nc = ns;

		CK(cudaMemcpy(d_y, ys.data(), ns * sizeof(unsigned), cudaMemcpyHostToDevice));
		CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
		void *cargs[] = {&d_x, &d_partial, &d_total, &d_y, &nc};
		CK(cudaLaunchCooperativeKernel((void *)phases, dim3(small_blocks), dim3(BLOCK),
					       cargs, 0, st));
		CK(cudaStreamEndCapture(st, &g));
		CK(cudaGraphInstantiate(&ge, g, 0));
		CK(cudaGraphLaunch(ge, st));
		CK(cudaStreamSynchronize(st));
		result w = cpu(std::vector<unsigned>(x.begin(), x.begin() + ns), ys);
		check(w, d_total, d_y, ns, "a captured cooperative launch");
		CK(cudaGraphExecDestroy(ge));
		CK(cudaGraphDestroy(g));
	}

	// One block more than fits at once: refused, and the context stays usable.
	{
		cudaError_t e = cudaLaunchCooperativeKernel((void *)phases, dim3(blocks + 1),
							    dim3(BLOCK), args, 0, 0);
		EXPECT(e == cudaErrorCooperativeLaunchTooLarge, "grid of %u blocks: %s", blocks + 1,
		       cudaGetErrorName(e));
		EXPECT(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge, "last error");
		CK(cudaDeviceSynchronize());
	}

	// Cluster launches need compute capability 9.0: refused where the device says so.
	{
		int clusters = -1;
		int *d_out;
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute attr[1];

		CK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev));
		CK(cudaMalloc(&d_out, 8 * sizeof(int)));
		attr[0].id = cudaLaunchAttributeClusterDimension;
		attr[0].val.clusterDim.x = 2;
		attr[0].val.clusterDim.y = 1;
		attr[0].val.clusterDim.z = 1;
		cfg.gridDim = dim3(8);
		cfg.blockDim = dim3(32);
		cfg.attrs = attr;
		cfg.numAttrs = 1;
		cudaError_t e = cudaLaunchKernelEx(&cfg, cluster_kernel, d_out);
		if (clusters == 0) {
			EXPECT(e == cudaErrorNotSupported, "cluster launch: %s",
			       cudaGetErrorName(e));
			(void)cudaGetLastError();
		} else {
			CK(e);
		}
		CK(cudaDeviceSynchronize());
		CK(cudaFree(d_out));
	}

	// An attribute whose effect would be missing is refused, not dropped: a launch
	// completion event that nothing would record.
	{
		int *d_out;
		cudaEvent_t ev;
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute attr[1];

		CK(cudaMalloc(&d_out, 8 * sizeof(int)));
		CK(cudaEventCreate(&ev));
		attr[0].id = cudaLaunchAttributeLaunchCompletionEvent;
		attr[0].val.launchCompletionEvent.event = ev;
		attr[0].val.launchCompletionEvent.flags = 0;
		cfg.gridDim = dim3(8);
		cfg.blockDim = dim3(32);
		cfg.attrs = attr;
		cfg.numAttrs = 1;
		cudaError_t e = cudaLaunchKernelEx(&cfg, cluster_kernel, d_out);
		EXPECT(e == cudaErrorNotSupported, "launch completion event: %s",
		       cudaGetErrorName(e));
		(void)cudaGetLastError();
		CK(cudaDeviceSynchronize());
		CK(cudaEventDestroy(ev));
		CK(cudaFree(d_out));
	}

	// Tensor maps need compute capability 9.0 (TMA): encoding one is refused where the
	// device says it has no tensor map access.
	{
		int tma = -1;
		void *fn = NULL;
		cudaDriverEntryPointQueryResult q;
		alignas(64) CUtensorMap map;
		cuuint64_t dim[2] = {64, 64}, stride[1] = {64 * sizeof(float)};
		cuuint32_t box[2] = {16, 16}, es[2] = {1, 1};

		CK(cudaDeviceGetAttribute(
			&tma, (cudaDeviceAttr)CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED,
			dev));
		CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
						    cudaEnableDefault, &q));
		EXPECT(fn && q == cudaDriverEntryPointSuccess, "cuTensorMapEncodeTiled found");
		CUresult r = ((decltype(&cuTensorMapEncodeTiled))fn)(
			&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, d_x, dim, stride, box, es,
			CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
			CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
		if (tma == 0)
			EXPECT(r == CUDA_ERROR_NOT_SUPPORTED, "tensor map without TMA: %d", (int)r);
		else
			EXPECT(r == CUDA_SUCCESS, "tensor map: %d", (int)r);
	}

	CK(cudaStreamDestroy(st));
	CK(cudaFree(d_x));
	CK(cudaFree(d_partial));
	CK(cudaFree(d_total));
	CK(cudaFree(d_y));
	// grid.sync() in a grid not launched cooperatively has no workspace: the kernel traps
	// (the context is unusable afterwards, so this comes last).
	{
		unsigned *d_b;

		CK(cudaMalloc(&d_b, (BLOCK * 2 + 1) * sizeof(unsigned)));
		phases<<<1, BLOCK>>>(d_b, d_b, d_b, d_b, 1);
		cudaError_t e = cudaDeviceSynchronize();
		EXPECT(e == cudaErrorLaunchFailure, "grid.sync() without a cooperative launch: %s",
		       cudaGetErrorName(e));
	}
	std::printf("rt_coop: %u blocks of %u threads, %d rounds: PASSED\n", blocks, BLOCK, ROUNDS);
	return 0;
}
