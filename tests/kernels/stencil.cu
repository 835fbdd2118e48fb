// stencil.cu -- 2-D 5-point Jacobi step on a w x h grid (edges copied), 2-D blocks.
extern "C" __global__ void stencil2d(const float *in, float *out, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x >= w || y >= h)
		return;
	if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
		out[y * w + x] = in[y * w + x];
		return;
	}
	out[y * w + x] = 0.2f * (in[y * w + x] + in[y * w + x - 1] + in[y * w + x + 1] +
				 in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}
