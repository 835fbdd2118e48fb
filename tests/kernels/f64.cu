// f64.cu -- double precision: sqrt, division, fma, conversions, and libdevice math (exp, log, sin).
extern "C" __global__ void f64_ops(const double *a, const double *b, double *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	double x = a[i], y = b[i];
	out[8 * i + 0] = x / y;
	out[8 * i + 1] = sqrt(fabs(x));
	out[8 * i + 2] = fma(x, y, 1.0);
	out[8 * i + 3] = (double)(long long)(x * 1000.0);
	out[8 * i + 4] = (double)(float)x;
	out[8 * i + 5] = exp(y * 0.01);
	out[8 * i + 6] = log(fabs(x) + 1.0);
	out[8 * i + 7] = sin(x) + cos(y);
}
