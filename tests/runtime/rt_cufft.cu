// rt_cufft.cu -- NVIDIA's cuFFT (the toolkit's shared libcufft) on softgpu: a 1-D complex
// transform of 1024 points, forward and inverse, and a real-to-complex one of the same size,
// each checked against a direct O(n^2) DFT computed on the CPU in double; and one of 65536
// points (a plan of two kernels), 64 of its outputs checked against the direct DFT's, and its
// inverse against n times the input.
//
// Tolerance: for a float FFT of n = 2^t points Higham's bound (Accuracy and Stability of
// Numerical Algorithms, 2nd ed., Thm. 24.2) is ||y - Y||_2 <= t * eta / (1 - t * eta) * ||Y||_2,
// eta = mu + gamma_4 * (sqrt(2) + mu), with mu the twiddle factors' error: about
// 10 * 7.7 * 2^-24 = 4.6e-6 relative for n = 1024 and mu = 2^-23. cuFFT's radix kernels are no
// radix-2 Cooley-Tukey, so the test allows four times that, 2e-5 (3e-5 for 65536 points,
// t = 16), on the whole vector and on
// every element against the vector's norm; a wrong element (a lost twiddle, a swapped index)
// is off by about |x|, five orders of magnitude more. The CPU's DFT in double is exact to
// about 1e-13, far below.
//
// cuFFT plans by loading its kernels' modules and, for a module whose kernel it does not name,
// asking the private TOOLS_MODULE table for the module's function (docs/softgpu.md "cuFFT").
// It runs with SOFTGPU_CC=13.0 (set by the test, directly and in the pool's environment),
// where cuFFT takes the PTX of every kernel it loads: at 7.5, 8.0 and 9.0 the 65536-point
// plan's module holds only SASS (CUFFT_INTERNAL_ERROR). The program checks that the device it
// sees has the compute capability SOFTGPU_CC names.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include <cufft.h>

#include "rt_cc.h"

#define CF(call)                                                                           \
	do {                                                                               \
		cufftResult r_ = (call);                                                   \
		EXPECT(r_ == CUFFT_SUCCESS, "%s returned cufftResult %d", #call, (int)r_); \
	} while (0)

static const int N = 1024;
static const double TOL = 2e-5;
static const int NL = 65536;
static const double TOL_L = 3e-5;

struct cplx {
	double re, im;
};

// X[k] = sum_j x[j] e^(sign 2 pi i j k / n), the angle reduced mod n before the cosine.
static std::vector<cplx> dft(const std::vector<cplx> &x, int sign)
{
	int n = (int)x.size();
	std::vector<cplx> X(n);

	for (int k = 0; k < n; k++) {
		double re = 0, im = 0;

		for (int j = 0; j < n; j++) {
			double a = sign * 2 * M_PI * (double)(((long)j * k) % n) / n;
			double c = std::cos(a), s = std::sin(a);

			re += x[j].re * c - x[j].im * s;
			im += x[j].re * s + x[j].im * c;
		}
		X[k] = {re, im};
	}
	return X;
}

// Deterministic values in [-1, 1).
static float value(unsigned i)
{
	unsigned h = i * 2654435761u;

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return (float)((h >> 8) / 8388608.0 - 1.0);
}

// The GPU's m elements against the reference's: the relative L2 error and the largest element
// error relative to the reference's norm, each within tol (n: the transform's size).
static void compare(const char *what, const cufftComplex *got, const std::vector<cplx> &want, int m,
		    int n = N, double tol = TOL)
{
	double norm = 0, err = 0, worst = 0;
	int at = 0;

	for (int k = 0; k < m; k++) {
		double dr = got[k].x - want[k].re, di = got[k].y - want[k].im,
		       e = dr * dr + di * di;

		norm += want[k].re * want[k].re + want[k].im * want[k].im;
		err += e;
		if (e > worst) {
			worst = e;
			at = k;
		}
	}
	norm = std::sqrt(norm);
	EXPECT(norm > 0, "%s: a reference with norm %g", what, norm);
	EXPECT(std::sqrt(err) <= tol * norm, "%s: relative L2 error %.3g (tolerance %.1g)", what,
	       std::sqrt(err) / norm, tol);
	EXPECT(std::sqrt(worst) <= tol * norm,
	       "%s: element %d = (%g, %g), want (%g, %g): error %.3g of the norm", what, at,
	       got[at].x, got[at].y, want[at].re, want[at].im, std::sqrt(worst) / norm);
	std::printf("%-24s n=%d, relative L2 error %.2e, worst element %.2e\n", what, n,
		    std::sqrt(err) / norm, std::sqrt(worst) / norm);
}

static void c2c()
{
	std::vector<cufftComplex> h(N), g(N);
	std::vector<cplx> x(N);
	cufftComplex *d;
	cufftHandle plan;

	for (int i = 0; i < N; i++) {
		h[i].x = value(2 * i);
		h[i].y = value(2 * i + 1);
		x[i] = {h[i].x, h[i].y};
	}
	CK(cudaMalloc(&d, N * sizeof(cufftComplex)));
	CK(cudaMemcpy(d, h.data(), N * sizeof(cufftComplex), cudaMemcpyHostToDevice));
	CF(cufftPlan1d(&plan, N, CUFFT_C2C, 1));

	// Forward in place, e^(-2 pi i j k / n).
	CF(cufftExecC2C(plan, d, d, CUFFT_FORWARD));
	CK(cudaMemcpy(g.data(), d, N * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	std::vector<cplx> X = dft(x, -1);
	compare("C2C forward", g.data(), X, N);

	// Inverse of the input (unnormalized, e^(+2 pi i j k / n)), out of place.
	cufftComplex *o;
	CK(cudaMalloc(&o, N * sizeof(cufftComplex)));
	CK(cudaMemcpy(d, h.data(), N * sizeof(cufftComplex), cudaMemcpyHostToDevice));
	CF(cufftExecC2C(plan, d, o, CUFFT_INVERSE));
	CK(cudaMemcpy(g.data(), o, N * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	compare("C2C inverse", g.data(), dft(x, 1), N);

	// The round trip: inverse(forward(x)) = n x.
	CF(cufftExecC2C(plan, d, o, CUFFT_FORWARD));
	CF(cufftExecC2C(plan, o, o, CUFFT_INVERSE));
	CK(cudaMemcpy(g.data(), o, N * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	std::vector<cplx> nx(N);
	for (int i = 0; i < N; i++)
		nx[i] = {(double)N * x[i].re, (double)N * x[i].im};
	compare("C2C inverse(forward)", g.data(), nx, N);

	CF(cufftDestroy(plan));
	CK(cudaFree(d));
	CK(cudaFree(o));
}

// 65536 points: a direct DFT of every output would be 2^32 products, so 64 outputs spread over
// the spectrum (0, 1, n - 1 and steps of an odd stride) are checked against theirs, each
// within TOL_L of the spectrum's norm, which Parseval gives exactly (sqrt(n) |x|); then the
// inverse of the GPU's spectrum against n x, every element.
static void c2c_large()
{
	std::vector<cufftComplex> h(NL), g(NL);
	cufftComplex *d, *o;
	cufftHandle plan;
	double xnorm = 0, worst = 0;

	for (int i = 0; i < NL; i++) {
		h[i].x = value(2 * i + 5);
		h[i].y = value(2 * i + 6);
		xnorm += (double)h[i].x * h[i].x + (double)h[i].y * h[i].y;
	}
	double Xnorm = std::sqrt((double)NL * xnorm);
	CK(cudaMalloc(&d, NL * sizeof(cufftComplex)));
	CK(cudaMalloc(&o, NL * sizeof(cufftComplex)));
	CK(cudaMemcpy(d, h.data(), NL * sizeof(cufftComplex), cudaMemcpyHostToDevice));
	CF(cufftPlan1d(&plan, NL, CUFFT_C2C, 1));
	CF(cufftExecC2C(plan, d, o, CUFFT_FORWARD));
	CK(cudaMemcpy(g.data(), o, NL * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	for (int s = 0; s < 64; s++) {
		int k = s == 0 ? 0 : s == 1 ? 1 : s == 2 ? NL - 1 : (int)((long)s * 1021 % NL);
		double re = 0, im = 0;

		for (int j = 0; j < NL; j++) {
			double a = -2 * M_PI * (double)(((long)j * k) % NL) / NL;
			double c = std::cos(a), si = std::sin(a);

			re += h[j].x * c - h[j].y * si;
			im += h[j].x * si + h[j].y * c;
		}
		double e = std::hypot(g[k].x - re, g[k].y - im);
		EXPECT(e <= TOL_L * Xnorm, "C2C %d: element %d = (%g, %g), want (%g, %g)", NL, k,
		       g[k].x, g[k].y, re, im);
		worst = std::max(worst, e / Xnorm);
	}
	std::printf("%-24s n=%d, 64 elements, worst %.2e\n", "C2C forward", NL, worst);
	CF(cufftExecC2C(plan, o, o, CUFFT_INVERSE));
	CK(cudaMemcpy(g.data(), o, NL * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	std::vector<cplx> nx(NL);
	for (int i = 0; i < NL; i++)
		nx[i] = {(double)NL * h[i].x, (double)NL * h[i].y};
	compare("C2C inverse(forward)", g.data(), nx, NL, NL, TOL_L);
	CF(cufftDestroy(plan));
	CK(cudaFree(d));
	CK(cudaFree(o));
}

// Real input, the n/2 + 1 non-redundant outputs.
static void r2c()
{
	std::vector<float> h(N);
	std::vector<cufftComplex> g(N / 2 + 1);
	std::vector<cplx> x(N);
	cufftReal *d;
	cufftComplex *o;
	cufftHandle plan;

	for (int i = 0; i < N; i++) {
		h[i] = value(3 * i + 7);
		x[i] = {h[i], 0};
	}
	CK(cudaMalloc(&d, N * sizeof(cufftReal)));
	CK(cudaMalloc(&o, (N / 2 + 1) * sizeof(cufftComplex)));
	CK(cudaMemcpy(d, h.data(), N * sizeof(cufftReal), cudaMemcpyHostToDevice));
	CF(cufftPlan1d(&plan, N, CUFFT_R2C, 1));
	CF(cufftExecR2C(plan, d, o));
	CK(cudaMemcpy(g.data(), o, (N / 2 + 1) * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
	compare("R2C", g.data(), dft(x, -1), N / 2 + 1);
	CF(cufftDestroy(plan));
	CK(cudaFree(d));
	CK(cudaFree(o));
}

int main()
{
	int version;

	rt_check_softgpu_cc();
	CF(cufftGetVersion(&version));
	std::printf("cuFFT %d\n", version);
	// A refusal of cuFFT's own: no plan of size 0.
	cufftHandle bad;
	EXPECT(cufftPlan1d(&bad, 0, CUFFT_C2C, 1) == CUFFT_INVALID_SIZE, "a plan of 0 points");
	c2c();
	r2c();
	c2c_large();
	std::printf("PASSED\n");
	return 0;
}
