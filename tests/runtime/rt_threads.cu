// rt_threads.cu -- several host threads use the GPU at once, each with its own memory,
// stream and results.
#include <thread>
#include <vector>

#include "rt_check.h"

__global__ void mul(const int *a, int *b, int n, int k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		b[i] = a[i] * k + k;
}

static void worker(int id, int *failures)
{
	const int n = 3000 + id * 17;
	std::vector<int> a(n), b(n);
	for (int i = 0; i < n; i++)
		a[i] = i - id;
	cudaStream_t s;
	int *da, *db;
	for (int round = 0; round < 5; round++) {
		CK(cudaStreamCreate(&s));
		CK(cudaMalloc(&da, n * sizeof(int)));
		CK(cudaMalloc(&db, n * sizeof(int)));
		CK(cudaMemcpyAsync(da, a.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
		mul<<<(n + 255) / 256, 256, 0, s>>>(da, db, n, id + round);
		CK(cudaMemcpyAsync(b.data(), db, n * sizeof(int), cudaMemcpyDeviceToHost, s));
		CK(cudaStreamSynchronize(s));
		for (int i = 0; i < n; i++)
			if (b[i] != a[i] * (id + round) + id + round)
				(*failures)++;
		CK(cudaFree(da));
		CK(cudaFree(db));
		CK(cudaStreamDestroy(s));
	}
}

int main()
{
	const int nthreads = 6;
	std::vector<std::thread> ts;
	std::vector<int> failures(nthreads, 0);
	CK(cudaFree(0)); // initialise before the threads race
	for (int t = 0; t < nthreads; t++)
		ts.emplace_back(worker, t, &failures[t]);
	for (auto &t : ts)
		t.join();
	for (int t = 0; t < nthreads; t++)
		EXPECT(failures[t] == 0, "thread %d: %d wrong results", t, failures[t]);
	std::printf("rt_threads: PASSED\n");
	return 0;
}
