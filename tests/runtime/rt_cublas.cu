// rt_cublas.cu -- NVIDIA's cuBLAS (the toolkit's shared libcublas) on softgpu: level-1
// SSCAL, SAXPY, SDOT, DDOT, level-2 DGEMV (N and T) and level-3 SGEMM at two sizes, each
// checked against a CPU reference. The inputs are small integers, so every product and sum is
// exact in float and double whatever order the GPU code adds in: the results must equal the
// CPU's exactly.
//
// It runs with SOFTGPU_CC=13.0 (set by the test, directly and in the pool's environment):
// cuBLAS 13 ships SASS up to sm_121 and PTX for compute_120 only, so only on a device newer
// than every SASS it has does it take its PTX, the one code softgpu runs (docs/softgpu.md).
// The program checks that the device it sees, directly or through the pool, has the compute
// capability SOFTGPU_CC names.
#include <cstdlib>
#include <vector>

#include <cublas_v2.h>

#include "rt_cc.h"

#define CB(call)                                                                           \
	do {                                                                               \
		cublasStatus_t s_ = (call);                                                \
		EXPECT(s_ == CUBLAS_STATUS_SUCCESS, "%s returned cublasStatus %d", #call, \
		       (int)s_);                                                           \
	} while (0)

static void level1(cublasHandle_t h)
{
	const int n = 3000; // several blocks and a partial one
	std::vector<float> x(n), y(n);
	float a = 3, dot = 0, want_dot = 0;

	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 17 - 8);
		y[i] = (float)(i % 11 - 5);
	}
	float *dx = upload(x), *dy = upload(y);

	CB(cublasSscal(h, n, &a, dx, 1)); // x = 3x
	CB(cublasSaxpy(h, n, &a, dx, 1, dy, 1)); // y = 3x' + y = 9x + y
	CB(cublasSdot(h, n, dx, 1, dy, 1, &dot)); // host result: synchronous
	std::vector<float> gx = download(dx, n), gy = download(dy, n);
	for (int i = 0; i < n; i++) {
		EXPECT(gx[i] == 3 * x[i], "sscal x[%d] = %g, want %g", i, gx[i], 3 * x[i]);
		EXPECT(gy[i] == 9 * x[i] + y[i], "saxpy y[%d] = %g, want %g", i, gy[i],
		       9 * x[i] + y[i]);
		want_dot += (3 * x[i]) * (9 * x[i] + y[i]);
	}
	EXPECT(dot == want_dot, "sdot %g, want %g", dot, want_dot);
	std::printf("SSCAL SAXPY SDOT   n=%d, dot %.0f\n", n, dot);
	CK(cudaFree(dx));
	CK(cudaFree(dy));
}

static void double_precision(cublasHandle_t h)
{
	const int m = 300, n = 200; // a column-major m x n matrix
	std::vector<double> A((size_t)m * n), x(n), y(m, -1);
	double one = 1, two = 2, dot = 0, want_dot = 0;

	for (size_t i = 0; i < A.size(); i++)
		A[i] = (double)((int)(i % 13) - 6);
	for (int i = 0; i < n; i++)
		x[i] = (double)(i % 5 - 2);
	for (int i = 0; i < m; i++)
		y[i] = (double)(i % 3);
	double *dA = upload(A), *dx = upload(x), *dy = upload(y);

	CB(cublasDdot(h, n, dx, 1, dx, 1, &dot));
	for (int i = 0; i < n; i++)
		want_dot += x[i] * x[i];
	EXPECT(dot == want_dot, "ddot %g, want %g", dot, want_dot);
	CB(cublasDgemv(h, CUBLAS_OP_N, m, n, &two, dA, m, dx, 1, &one, dy, 1)); // y = 2Ax + y
	std::vector<double> gy = download(dy, m);
	for (int r = 0; r < m; r++) {
		double want = y[r];

		for (int c = 0; c < n; c++)
			want += 2 * A[(size_t)c * m + r] * x[c];
		EXPECT(gy[r] == want, "dgemv y[%d] = %g, want %g", r, gy[r], want);
	}
	// The transposed product reads A by rows: x' = A^T y'
	std::vector<double> xt(n, 0);
	double *dxt = upload(xt), zero = 0;
	CB(cublasDgemv(h, CUBLAS_OP_T, m, n, &one, dA, m, dy, 1, &zero, dxt, 1));
	std::vector<double> gxt = download(dxt, n);
	for (int c = 0; c < n; c++) {
		double want = 0;

		for (int r = 0; r < m; r++)
			want += A[(size_t)c * m + r] * gy[r];
		EXPECT(gxt[c] == want, "dgemv^T x[%d] = %g, want %g", c, gxt[c], want);
	}
	std::printf("DDOT DGEMV (N, T)  %dx%d, dot %.0f\n", m, n, dot);
	CK(cudaFree(dA));
	CK(cudaFree(dx));
	CK(cudaFree(dy));
	CK(cudaFree(dxt));
}

// C = alpha op(A) op(B) + beta C, column-major, with leading dimensions above the minimum
// (the padding must stay as it was). Inputs are small integers and alpha/beta small, so every
// partial sum is an integer below 2^24: exact in float in any order, also split over k.
static void sgemm(cublasHandle_t h, cublasOperation_t ta, int m, int n, int k, int lda, int ldb,
		  int ldc, float alpha, float beta)
{
	int acols = ta == CUBLAS_OP_N ? k : m;
	std::vector<float> A((size_t)lda * acols), B((size_t)ldb * n), C((size_t)ldc * n);

	for (size_t i = 0; i < A.size(); i++)
		A[i] = (float)((int)(i * 7 % 9) - 4);
	for (size_t i = 0; i < B.size(); i++)
		B[i] = (float)((int)(i * 5 % 7) - 3);
	for (size_t i = 0; i < C.size(); i++)
		C[i] = (float)((int)(i % 5) - 2);
	float *dA = upload(A), *dB = upload(B), *dC = upload(C);

	CB(cublasSgemm(h, ta, CUBLAS_OP_N, m, n, k, &alpha, dA, lda, dB, ldb, &beta, dC, ldc));
	std::vector<float> gC = download(dC, C.size());
	for (int c = 0; c < n; c++)
		for (int r = 0; r < ldc; r++) {
			float want = C[(size_t)c * ldc + r];

			if (r < m) {
				float sum = 0;

				for (int i = 0; i < k; i++) {
					float a = ta == CUBLAS_OP_N ? A[(size_t)i * lda + r]
								    : A[(size_t)r * lda + i];
					sum += a * B[(size_t)c * ldb + i];
				}
				want = alpha * sum + beta * want;
			}
			EXPECT(gC[(size_t)c * ldc + r] == want, "sgemm %dx%dx%d C[%d,%d] = %g, want %g",
			       m, n, k, r, c, gC[(size_t)c * ldc + r], want);
		}
	std::printf("SGEMM %s %dx%dx%d (lda %d ldb %d ldc %d, alpha %g beta %g)\n",
		    ta == CUBLAS_OP_N ? "NN" : "TN", m, n, k, lda, ldb, ldc, alpha, beta);
	CK(cudaFree(dA));
	CK(cudaFree(dB));
	CK(cudaFree(dC));
}

int main()
{
	cublasHandle_t h;

	rt_check_softgpu_cc();
	CB(cublasCreate(&h));
	level1(h);
	double_precision(h);
	sgemm(h, CUBLAS_OP_T, 64, 48, 32, 40, 32, 64, 1, 0);
	sgemm(h, CUBLAS_OP_N, 300, 257, 129, 310, 140, 305, 2, -3);
	CB(cublasDestroy(h));
	std::printf("PASSED\n");
	return 0;
}
