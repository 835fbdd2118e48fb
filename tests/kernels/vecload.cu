// vecload.cu -- vector loads and stores (float4, int2, double2) and narrow signed/unsigned loads.
extern "C" __global__ void vecload(const float4 *a, const int2 *b, const double2 *c,
				   const signed char *sc, const unsigned short *us, float4 *fo,
				   int2 *io, double2 *dout, int *narrow, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float4 v = a[i];
	int2 w = b[i];
	double2 d = c[i];
	fo[i] = make_float4(v.w, v.z, v.y, v.x + 1.0f);
	io[i] = make_int2(w.x + w.y, w.x - w.y);
	dout[i] = make_double2(d.y * 2.0, d.x + 0.5);
	narrow[2 * i] = sc[i] * 3;
	narrow[2 * i + 1] = us[i] + 1;
}
