// rt_cusparse.cu -- NVIDIA's cuSPARSE (the toolkit's shared libcusparse) on softgpu: CSR float
// SpMV, y = alpha op(A) x + beta y, with cusparseSpMV's default algorithm and CSR_ALG2 and with
// A transposed, each checked against a CPU reference. The matrix has rows of different
// lengths (empty ones, one far longer than the rest) and small-integer entries, and alpha and
// beta are small integers, so every partial sum is an integer below 2^24: exact in float in any
// order, and the results must equal the CPU's exactly.
//
// It runs with SOFTGPU_CC=13.0 (set by the test, directly and in the pool's environment), as
// rt_cublas and rt_cufft do: only on a device newer than every SASS a library ships is a
// library sure to take its PTX, the one code softgpu runs (these SpMV kernels also run from
// PTX at 7.5 to 12.0: docs/softgpu.md). The program checks that the device it sees has the
// compute capability SOFTGPU_CC names.
#include <cstdlib>
#include <utility>
#include <vector>

#include <cusparse.h>

#include "rt_cc.h"

#define CS(call)                                                                                   \
	do {                                                                                       \
		cusparseStatus_t s_ = (call);                                                      \
		EXPECT(s_ == CUSPARSE_STATUS_SUCCESS, "%s returned cusparseStatus %d (%s)", #call, \
		       (int)s_, cusparseGetErrorString(s_));                                       \
	} while (0)

struct csr {
	int m, n;
	std::vector<int> ptr, col;
	std::vector<float> val;
};

// m x n with n prime, row r holding (r * 7) % 13 entries (rows 0, 13, 26, ... empty) in
// columns (r * 31 + 17 i) mod n, distinct because n is prime and no row has n of them; row 5
// holds one in every second column. Entries in [-4, 4]; each row's columns sorted, as CSR
// wants.
static csr make_matrix(int m, int n)
{
	csr A{m, n, {0}, {}, {}};

	for (int r = 0; r < m; r++) {
		int len = r == 5 ? n / 2 : (r * 7) % 13, b = A.ptr.back();

		for (int i = 0; i < len; i++) {
			A.col.push_back(r == 5 ? 2 * i : (int)(((long)r * 31 + (long)i * 17) % n));
			A.val.push_back((float)((r + 3 * i) % 9 - 4));
		}
		for (int i = b + 1; i < b + len; i++) // insertion sort: the rows are short
			for (int j = i; j > b && A.col[j - 1] > A.col[j]; j--) {
				std::swap(A.col[j - 1], A.col[j]);
				std::swap(A.val[j - 1], A.val[j]);
			}
		A.ptr.push_back(b + len);
	}
	return A;
}

static void spmv(cusparseHandle_t h, const csr &A, cusparseOperation_t op, cusparseSpMVAlg_t alg,
		 const char *what)
{
	bool t = op == CUSPARSE_OPERATION_TRANSPOSE;
	int xn = t ? A.m : A.n, yn = t ? A.n : A.m;
	std::vector<float> x(xn), y(yn);
	float alpha = 2, beta = -3;

	for (int i = 0; i < xn; i++)
		x[i] = (float)(i % 7 - 3);
	for (int i = 0; i < yn; i++)
		y[i] = (float)(i % 5 - 2);
	int *dptr = upload(A.ptr), *dcol = upload(A.col);
	float *dval = upload(A.val), *dx = upload(x), *dy = upload(y);
	cusparseSpMatDescr_t mat;
	cusparseDnVecDescr_t vx, vy;
	size_t size = 0;
	void *buf = nullptr;

	CS(cusparseCreateCsr(&mat, A.m, A.n, (int64_t)A.val.size(), dptr, dcol, dval,
			     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
			     CUDA_R_32F));
	CS(cusparseCreateDnVec(&vx, xn, dx, CUDA_R_32F));
	CS(cusparseCreateDnVec(&vy, yn, dy, CUDA_R_32F));
	CS(cusparseSpMV_bufferSize(h, op, &alpha, mat, vx, &beta, vy, CUDA_R_32F, alg, &size));
	if (size)
		CK(cudaMalloc(&buf, size));
	CS(cusparseSpMV(h, op, &alpha, mat, vx, &beta, vy, CUDA_R_32F, alg, buf));
	std::vector<float> g = download(dy, yn), want(yn);
	for (int i = 0; i < yn; i++)
		want[i] = beta * y[i];
	for (int r = 0; r < A.m; r++)
		for (int k = A.ptr[r]; k < A.ptr[r + 1]; k++) {
			if (t)
				want[A.col[k]] += alpha * A.val[k] * x[r];
			else
				want[r] += alpha * A.val[k] * x[A.col[k]];
		}
	for (int i = 0; i < yn; i++)
		EXPECT(g[i] == want[i], "%s y[%d] = %g, want %g", what, i, g[i], want[i]);
	std::printf("SpMV %-14s %dx%d, %zu nonzeros, buffer %zu bytes\n", what, A.m, A.n,
		    A.val.size(), size);
	CS(cusparseDestroySpMat(mat));
	CS(cusparseDestroyDnVec(vx));
	CS(cusparseDestroyDnVec(vy));
	CK(cudaFree(buf));
	CK(cudaFree(dptr));
	CK(cudaFree(dcol));
	CK(cudaFree(dval));
	CK(cudaFree(dx));
	CK(cudaFree(dy));
}

int main()
{
	cusparseHandle_t h;
	int version;

	rt_check_softgpu_cc();
	CS(cusparseCreate(&h));
	CS(cusparseGetVersion(h, &version));
	std::printf("cuSPARSE %d\n", version);
	csr A = make_matrix(2000, 1031);
	spmv(h, A, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_SPMV_ALG_DEFAULT, "default");
	spmv(h, A, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_SPMV_CSR_ALG2, "CSR_ALG2");
	spmv(h, A, CUSPARSE_OPERATION_TRANSPOSE, CUSPARSE_SPMV_ALG_DEFAULT, "transposed");
	CS(cusparseDestroy(h));
	std::printf("PASSED\n");
	return 0;
}
