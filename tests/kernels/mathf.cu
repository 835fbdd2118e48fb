// mathf.cu -- f32 math library (libdevice, compiled into the PTX) and the fast intrinsics.
extern "C" __global__ void mathf(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float x = in[i];
	float *o = out + 16 * i;
	o[0] = sinf(x);
	o[1] = cosf(x);
	o[2] = expf(x * 0.1f);
	o[3] = logf(fabsf(x) + 1e-3f);
	o[4] = powf(fabsf(x), 1.3f);
	o[5] = sqrtf(fabsf(x));
	o[6] = rsqrtf(fabsf(x) + 1.0f);
	o[7] = tanhf(x * 0.3f);
	o[8] = __expf(x * 0.1f);
	o[9] = __sinf(x);
	o[10] = __cosf(x);
	o[11] = __logf(fabsf(x) + 1.0f);
	o[12] = atan2f(x, 2.0f);
	o[13] = erff(x * 0.2f);
	o[14] = 1.0f / (x + 0.5f);
	o[15] = __fdividef(x, 3.0f);
}
