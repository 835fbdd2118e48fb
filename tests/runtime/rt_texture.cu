// rt_texture.cu -- CUDA arrays, texture objects and surface objects, each result checked
// against a CPU reference: a 2-D float texture with linear filtering and normalized coordinates
// in every address mode (the reference computes the hardware's 8-bit fixed-point weights),
// point sampling of uchar4 read as elements and as normalized floats, tex1Dfetch on linear
// memory, a pitch-2D resource, tex2Dgather, a layered texture, txq/suq, a surface
// read-modify-write with the clamp and zero boundary modes, a 3-D array copy round trip
// (cudaMemcpy3D) with tex3D, and an array larger than the free memory.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "rt_check.h"

// ---- kernels ----

__global__ void sample2d(cudaTextureObject_t t, const float2 *xy, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = tex2D<float>(t, xy[i].x, xy[i].y);
}

__global__ void sample_uc4(cudaTextureObject_t te, cudaTextureObject_t tn, const float2 *xy,
			   uchar4 *oe, float4 *on, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		oe[i] = tex2D<uchar4>(te, xy[i].x, xy[i].y);
		on[i] = tex2D<float4>(tn, xy[i].x, xy[i].y);
	}
}

__global__ void fetch1d(cudaTextureObject_t t, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = tex1Dfetch<float>(t, i - 2); // two below the start, some past the end
}

__global__ void gather(cudaTextureObject_t t, const float2 *xy, float4 *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = tex2Dgather<float4>(t, xy[i].x, xy[i].y, 0);
}

__global__ void layered(cudaTextureObject_t t, float *out, int w, int h, int layers)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < w * h * layers) {
		int x = i % w, y = i / w % h, l = i / (w * h);
		out[i] = tex2DLayered<float>(t, x + 0.5f, y + 0.5f, l);
	}
}

__global__ void layered1d(cudaTextureObject_t t, const float *x, float *out, int n, int layers)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n * layers)
		out[i] = tex1DLayered<float>(t, x[i % n], i / n);
}

__global__ void sample3d(cudaTextureObject_t t, float *out, int w, int h, int d)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < w * h * d) {
		int x = i % w, y = i / w % h, z = i / (w * h);
		out[i] = tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f);
	}
}

__global__ void cube(cudaTextureObject_t t, const float4 *dir, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = texCubemap<float>(t, dir[i].x, dir[i].y, dir[i].z);
}

__global__ void lods(cudaTextureObject_t t, const float *lod, float *out, int n, float gx)
{
	int i = threadIdx.x;
	if (i < n)
		out[i] = tex2DLod<float>(t, 0.3f, 0.6f, lod[i]);
	if (i == 0)
		out[n] =
			tex2DGrad<float>(t, 0.3f, 0.6f, make_float2(gx, 0), make_float2(0, gx / 2));
}

__global__ void cube_layered(cudaTextureObject_t t, const float4 *dir, float *out, int n,
			     int layers)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n * layers)
		out[i] = texCubemapLayered<float>(t, dir[i % n].x, dir[i % n].y, dir[i % n].z,
						  i / n);
}

__global__ void query(cudaTextureObject_t t, cudaSurfaceObject_t s, int *out)
{
	int w, h, sw, sh;
	asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
	asm("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(t));
	asm("suq.width.b32 %0, [%1];" : "=r"(sw) : "l"(s));
	asm("suq.height.b32 %0, [%1];" : "=r"(sh) : "l"(s));
	out[0] = w;
	out[1] = h;
	out[2] = sw;
	out[3] = sh;
}

__global__ void surf_rmw(cudaSurfaceObject_t s, int w, int h, float *edge)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
	if (x < w && y < h) {
		float v;
		surf2Dread(&v, s, x * 4, y);
		surf2Dwrite(v * 2.0f + 1.0f, s, x * 4, y);
	}
	if (x == 0 && y == 0) {
		float z, c;
		surf2Dread(&z, s, -4, 0, cudaBoundaryModeZero);		     // outside: 0
		surf2Dread(&c, s, w * 4 + 40, h + 3, cudaBoundaryModeClamp); // the last texel
		surf2Dwrite(123.0f, s, w * 4, 0, cudaBoundaryModeZero);	     // outside: dropped
		edge[0] = z;
		edge[1] = c;
	}
}

// ---- CPU references ----

static int wrap_index(int i, int n, cudaTextureAddressMode m, bool *border)
{
	*border = false;
	switch (m) {
	case cudaAddressModeWrap:
		i %= n;
		return i < 0 ? i + n : i;
	case cudaAddressModeMirror:
		i %= 2 * n;
		if (i < 0)
			i += 2 * n;
		return i >= n ? 2 * n - 1 - i : i;
	case cudaAddressModeBorder:
		*border = i < 0 || i >= n;
		return *border ? 0 : i;
	default:
		return i < 0 ? 0 : i >= n ? n - 1 : i;
	}
}

static float norm_coord(float x, cudaTextureAddressMode m)
{
	if (m == cudaAddressModeWrap)
		return x - floorf(x);
	if (m == cudaAddressModeMirror) {
		float f = floorf(x);
		x -= f;
		return fmodf(f, 2.0f) != 0.0f ? 1.0f - x : x;
	}
	return x;
}

// The CUDA programming guide's linear filtering, weights in 9-bit fixed point (8 fraction bits).
static float bilinear(const std::vector<float> &img, int w, int h, float u, float v,
		      cudaTextureAddressMode m, float border, bool normalized)
{
	float x = normalized ? norm_coord(u, m) * w : u, y = normalized ? norm_coord(v, m) * h : v;
	float xb = x - 0.5f, yb = y - 0.5f;
	int i = (int)floorf(xb), j = (int)floorf(yb);
	float a = rintf((xb - floorf(xb)) * 256.0f) / 256.0f;
	float b = rintf((yb - floorf(yb)) * 256.0f) / 256.0f;
	float sum = 0;
	for (int c = 0; c < 4; c++) {
		int di = c & 1, dj = c >> 1;
		bool bx, by;
		// wrap and mirror need normalized coordinates: else they act as clamp
		cudaTextureAddressMode im =
			normalized || m == cudaAddressModeBorder ? m : cudaAddressModeClamp;
		int ii = wrap_index(i + di, w, im, &bx);
		int jj = wrap_index(j + dj, h, im, &by);
		float t = bx || by ? border : img[jj * w + ii];
		float wt = (di ? a : 1.0f - a) * (dj ? b : 1.0f - b);
		sum += wt * t;
	}
	return sum;
}

template <typename T> static T *dev_copy(const std::vector<T> &v)
{
	T *d;
	CK(cudaMalloc(&d, v.size() * sizeof(T)));
	CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
	return d;
}

static uint32_t rng = 12345;
static float frand()
{
	rng = rng * 1664525u + 1013904223u;
	return (float)(rng >> 8) / 16777216.0f;
}

static void test_linear_modes()
{
	const int w = 13, h = 7;
	std::vector<float> img(w * h);
	for (auto &v : img)
		v = frand();
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	CK(cudaMallocArray(&arr, &cd, w, h));
	CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), w * sizeof(float), w * sizeof(float), h,
			       cudaMemcpyHostToDevice));

	std::vector<float2> xy;
	for (int k = 0; k < 400; k++)
		xy.push_back(make_float2(frand() * 3.2f - 1.1f, frand() * 3.2f - 1.1f));
	// fractions where the 8-bit weight differs from the exact one by about 1/512
	xy.push_back(make_float2((3 + 0.5f + 0.3f) / w, (2 + 0.5f + 0.7f) / h));
	xy.push_back(make_float2((5 + 0.5f + 0.123f) / w, (1 + 0.5f) / h));
	int n = (int)xy.size();
	float2 *dxy = dev_copy(xy);
	float *dout;
	CK(cudaMalloc(&dout, n * sizeof(float)));

	const cudaTextureAddressMode modes[] = {cudaAddressModeClamp, cudaAddressModeWrap,
						cudaAddressModeMirror, cudaAddressModeBorder};
	const char *names[] = {"clamp", "wrap", "mirror", "border"};
	for (int mi = 0; mi < 4; mi++) {
		cudaResourceDesc rd = {};
		rd.resType = cudaResourceTypeArray;
		rd.res.array.array = arr;
		cudaTextureDesc td = {};
		td.addressMode[0] = td.addressMode[1] = modes[mi];
		td.filterMode = cudaFilterModeLinear;
		td.readMode = cudaReadModeElementType;
		td.normalizedCoords = 1;
		td.borderColor[0] = 0.25f;
		cudaTextureObject_t t;
		CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
		sample2d<<<(n + 127) / 128, 128>>>(t, dxy, dout, n);
		CK(cudaGetLastError());
		std::vector<float> out(n);
		CK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
		for (int k = 0; k < n; k++) {
			float ref = bilinear(img, w, h, xy[k].x, xy[k].y, modes[mi], 0.25f, true);
			// same weights, the sum in another order: a few ulps of values below 1
			EXPECT(fabsf(out[k] - ref) <= 2e-6f, "%s (%g, %g): %.9g, CPU %.9g",
			       names[mi], xy[k].x, xy[k].y, out[k], ref);
		}
		CK(cudaDestroyTextureObject(t));
	}
	// the weights are 8-bit: a texel step 0 -> 1 sampled at fraction 0.3 reads 77/256
	{
		std::vector<float> step(w * h, 0.0f);
		for (int y = 0; y < h; y++)
			for (int x = 4; x < w; x++)
				step[y * w + x] = 1.0f;
		CK(cudaMemcpy2DToArray(arr, 0, 0, step.data(), w * sizeof(float), w * sizeof(float),
				       h, cudaMemcpyHostToDevice));
		cudaResourceDesc rd = {};
		rd.resType = cudaResourceTypeArray;
		rd.res.array.array = arr;
		cudaTextureDesc td = {};
		td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
		td.filterMode = cudaFilterModeLinear;
		td.readMode = cudaReadModeElementType;
		cudaTextureObject_t t;
		CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
		std::vector<float2> p = {make_float2(3.5f + 0.3f, 2.5f)};
		CK(cudaMemcpy(dxy, p.data(), sizeof(float2), cudaMemcpyHostToDevice));
		sample2d<<<1, 1>>>(t, dxy, dout, 1);
		float v;
		CK(cudaMemcpy(&v, dout, sizeof(float), cudaMemcpyDeviceToHost));
		EXPECT(v == 77.0f / 256.0f, "fraction 0.3 reads %.9g, not 77/256", v);
		CK(cudaDestroyTextureObject(t));
	}
	CK(cudaFree(dxy));
	CK(cudaFree(dout));
	CK(cudaFreeArray(arr));
	std::printf("linear filtering, normalized coordinates, clamp/wrap/mirror/border: ok\n");
}

static void test_uchar4_point()
{
	const int w = 9, h = 5;
	std::vector<uchar4> img(w * h);
	for (int i = 0; i < w * h; i++)
		img[i] = make_uchar4(i * 5, 255 - i, i * 3 + 1, 200);
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<uchar4>();
	cudaArray_t arr;
	CK(cudaMallocArray(&arr, &cd, w, h));
	CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaTextureDesc td = {};
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t te, tn;
	CK(cudaCreateTextureObject(&te, &rd, &td, nullptr));
	td.readMode = cudaReadModeNormalizedFloat;
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeBorder;
	td.borderColor[0] = 0.5f;
	td.borderColor[3] = 1.0f;
	CK(cudaCreateTextureObject(&tn, &rd, &td, nullptr));
	std::vector<float2> xy;
	for (int k = 0; k < 200; k++)
		xy.push_back(make_float2(frand() * 13 - 2, frand() * 9 - 2));
	int n = (int)xy.size();
	float2 *dxy = dev_copy(xy);
	uchar4 *de;
	float4 *dn;
	CK(cudaMalloc(&de, n * sizeof(uchar4)));
	CK(cudaMalloc(&dn, n * sizeof(float4)));
	sample_uc4<<<(n + 63) / 64, 64>>>(te, tn, dxy, de, dn, n);
	CK(cudaGetLastError());
	std::vector<uchar4> oe(n);
	std::vector<float4> on(n);
	CK(cudaMemcpy(oe.data(), de, n * sizeof(uchar4), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(on.data(), dn, n * sizeof(float4), cudaMemcpyDeviceToHost));
	for (int k = 0; k < n; k++) {
		int i = (int)floorf(xy[k].x), j = (int)floorf(xy[k].y);
		int ci = i < 0 ? 0 : i >= w ? w - 1 : i, cj = j < 0 ? 0 : j >= h ? h - 1 : j;
		uchar4 e = img[cj * w + ci];
		EXPECT(oe[k].x == e.x && oe[k].y == e.y && oe[k].z == e.z && oe[k].w == e.w,
		       "uchar4 at (%g, %g)", xy[k].x, xy[k].y);
		bool out = i < 0 || i >= w || j < 0 || j >= h;
		float4 r = out ? make_float4(0.5f, 0, 0, 1.0f)
			       : make_float4(img[j * w + i].x / 255.0f, img[j * w + i].y / 255.0f,
					     img[j * w + i].z / 255.0f, img[j * w + i].w / 255.0f);
		EXPECT(on[k].x == r.x && on[k].y == r.y && on[k].z == r.z && on[k].w == r.w,
		       "normalized at (%g, %g): %g %g %g %g, CPU %g %g %g %g", xy[k].x, xy[k].y,
		       on[k].x, on[k].y, on[k].z, on[k].w, r.x, r.y, r.z, r.w);
	}
	CK(cudaDestroyTextureObject(te));
	CK(cudaDestroyTextureObject(tn));
	CK(cudaFree(dxy));
	CK(cudaFree(de));
	CK(cudaFree(dn));
	CK(cudaFreeArray(arr));
	std::printf("point filtering, uchar4 as elements and as normalized floats, border: ok\n");
}

static void test_fetch_and_pitch()
{
	const int n = 100;
	std::vector<float> v(n);
	for (int i = 0; i < n; i++)
		v[i] = i * 0.5f - 7;
	float *dv = dev_copy(v), *dout;
	CK(cudaMalloc(&dout, (n + 4) * sizeof(float)));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeLinear;
	rd.res.linear.devPtr = dv;
	rd.res.linear.desc = cudaCreateChannelDesc<float>();
	rd.res.linear.sizeInBytes = n * sizeof(float);
	cudaTextureDesc td = {};
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	fetch1d<<<1, n + 4>>>(t, dout, n + 4);
	std::vector<float> out(n + 4);
	CK(cudaMemcpy(out.data(), dout, (n + 4) * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n + 4; i++) {
		float ref = i - 2 >= 0 && i - 2 < n ? v[i - 2] : 0.0f;
		EXPECT(out[i] == ref, "tex1Dfetch(%d) = %g, CPU %g", i - 2, out[i], ref);
	}
	CK(cudaDestroyTextureObject(t));

	// pitch-2D: cudaMallocPitch memory, linear filtering with unnormalized coordinates
	const int w = 20, h = 11;
	std::vector<float> img(w * h);
	for (auto &x : img)
		x = frand();
	float *dp;
	size_t pitch;
	CK(cudaMallocPitch(&dp, &pitch, w * sizeof(float), h));
	CK(cudaMemcpy2D(dp, pitch, img.data(), w * sizeof(float), w * sizeof(float), h,
			cudaMemcpyHostToDevice));
	rd = {};
	rd.resType = cudaResourceTypePitch2D;
	rd.res.pitch2D.devPtr = dp;
	rd.res.pitch2D.desc = cudaCreateChannelDesc<float>();
	rd.res.pitch2D.width = w;
	rd.res.pitch2D.height = h;
	rd.res.pitch2D.pitchInBytes = pitch;
	td = {};
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModeLinear;
	td.readMode = cudaReadModeElementType;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	std::vector<float2> xy;
	for (int k = 0; k < 100; k++)
		xy.push_back(make_float2(frand() * 24 - 2, frand() * 15 - 2));
	float2 *dxy = dev_copy(xy);
	float *ds;
	CK(cudaMalloc(&ds, xy.size() * sizeof(float)));
	sample2d<<<1, (int)xy.size()>>>(t, dxy, ds, (int)xy.size());
	std::vector<float> s(xy.size());
	CK(cudaMemcpy(s.data(), ds, s.size() * sizeof(float), cudaMemcpyDeviceToHost));
	for (size_t k = 0; k < xy.size(); k++) {
		float ref = bilinear(img, w, h, xy[k].x, xy[k].y, cudaAddressModeClamp, 0, false);
		EXPECT(fabsf(s[k] - ref) <= 2e-6f, "pitch2D (%g, %g): %.9g, CPU %.9g", xy[k].x,
		       xy[k].y, s[k], ref);
	}
	CK(cudaDestroyTextureObject(t));
	CK(cudaFree(dv));
	CK(cudaFree(dout));
	CK(cudaFree(dp));
	CK(cudaFree(dxy));
	CK(cudaFree(ds));
	std::printf("tex1Dfetch on linear memory, pitch-2D linear filtering: ok\n");
}

static void test_gather_layered_query()
{
	const int w = 8, h = 6;
	std::vector<float> img(w * h);
	for (int i = 0; i < w * h; i++)
		img[i] = (float)i;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	CK(cudaMallocArray(&arr, &cd, w, h, cudaArrayTextureGather | cudaArraySurfaceLoadStore));
	CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaTextureDesc td = {};
	td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	std::vector<float2> xy;
	for (int k = 0; k < 64; k++)
		xy.push_back(make_float2(frand() * 10 - 1, frand() * 8 - 1));
	int n = (int)xy.size();
	float2 *dxy = dev_copy(xy);
	float4 *dg;
	CK(cudaMalloc(&dg, n * sizeof(float4)));
	gather<<<1, n>>>(t, dxy, dg, n);
	std::vector<float4> g(n);
	CK(cudaMemcpy(g.data(), dg, n * sizeof(float4), cudaMemcpyDeviceToHost));
	for (int k = 0; k < n; k++) {
		int i = (int)floorf(xy[k].x - 0.5f), j = (int)floorf(xy[k].y - 0.5f);
		auto at = [&](int x, int y) {
			x = x < 0 ? 0 : x >= w ? w - 1 : x;
			y = y < 0 ? 0 : y >= h ? h - 1 : y;
			return img[y * w + x];
		};
		// the PTX ISA's order: (i, j+1), (i+1, j+1), (i+1, j), (i, j)
		EXPECT(g[k].x == at(i, j + 1) && g[k].y == at(i + 1, j + 1) &&
			       g[k].z == at(i + 1, j) && g[k].w == at(i, j),
		       "gather at (%g, %g): %g %g %g %g", xy[k].x, xy[k].y, g[k].x, g[k].y, g[k].z,
		       g[k].w);
	}
	cudaSurfaceObject_t s;
	CK(cudaCreateSurfaceObject(&s, &rd));
	int *dq, q[4];
	CK(cudaMalloc(&dq, sizeof(q)));
	query<<<1, 1>>>(t, s, dq);
	CK(cudaMemcpy(q, dq, sizeof(q), cudaMemcpyDeviceToHost));
	EXPECT(q[0] == w && q[1] == h && q[2] == w && q[3] == h, "txq/suq: %d %d %d %d", q[0], q[1],
	       q[2], q[3]);
	CK(cudaGetTextureObjectResourceDesc(&rd, t));
	EXPECT(rd.resType == cudaResourceTypeArray && rd.res.array.array == arr,
	       "the resource descriptor comes back");
	CK(cudaDestroySurfaceObject(s));
	CK(cudaDestroyTextureObject(t));
	CK(cudaFreeArray(arr));

	// a 2-D layered float texture
	const int lw = 5, lh = 4, layers = 3;
	std::vector<float> lv(lw * lh * layers);
	for (size_t i = 0; i < lv.size(); i++)
		lv[i] = (float)(i * 3 % 17);
	cudaArray_t la;
	CK(cudaMalloc3DArray(&la, &cd, make_cudaExtent(lw, lh, layers), cudaArrayLayered));
	cudaMemcpy3DParms p = {};
	p.srcPtr = make_cudaPitchedPtr(lv.data(), lw * 4, lw, lh);
	p.dstArray = la;
	p.extent = make_cudaExtent(lw, lh, layers);
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = la;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	float *dl;
	CK(cudaMalloc(&dl, lv.size() * sizeof(float)));
	layered<<<1, (int)lv.size()>>>(t, dl, lw, lh, layers);
	std::vector<float> lo(lv.size());
	CK(cudaMemcpy(lo.data(), dl, lo.size() * sizeof(float), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < lv.size(); i++)
		EXPECT(lo[i] == lv[i], "layered texel %zu: %g, CPU %g", i, lo[i], lv[i]);
	CK(cudaDestroyTextureObject(t));
	CK(cudaFreeArray(la));
	CK(cudaFree(dl));

	// a 1-D layered texture, linear filtering, unnormalized, border: each layer on its own
	const int w1 = 11, l1 = 4, nx = 40;
	std::vector<float> v1(w1 * l1), x1(nx);
	for (auto &x : v1)
		x = frand();
	for (auto &x : x1)
		x = frand() * 15 - 2;
	CK(cudaMalloc3DArray(&la, &cd, make_cudaExtent(w1, 0, l1), cudaArrayLayered));
	p = {};
	p.srcPtr = make_cudaPitchedPtr(v1.data(), w1 * 4, w1, 1);
	p.dstArray = la;
	p.extent = make_cudaExtent(w1, 1, l1);
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = la;
	cudaTextureDesc t1 = {};
	t1.addressMode[0] = cudaAddressModeBorder;
	t1.filterMode = cudaFilterModeLinear;
	t1.readMode = cudaReadModeElementType;
	t1.borderColor[0] = -3.0f;
	CK(cudaCreateTextureObject(&t, &rd, &t1, nullptr));
	float *dx1 = dev_copy(x1), *do1;
	CK(cudaMalloc(&do1, nx * l1 * sizeof(float)));
	layered1d<<<1, nx * l1>>>(t, dx1, do1, nx, l1);
	std::vector<float> o1(nx * l1);
	CK(cudaMemcpy(o1.data(), do1, o1.size() * sizeof(float), cudaMemcpyDeviceToHost));
	for (int l = 0; l < l1; l++)
		for (int k = 0; k < nx; k++) {
			float xb = x1[k] - 0.5f;
			int i0 = (int)floorf(xb);
			float a = rintf((xb - floorf(xb)) * 256.0f) / 256.0f;
			auto at = [&](int i) { return i < 0 || i >= w1 ? -3.0f : v1[l * w1 + i]; };
			float ref = (1 - a) * at(i0) + a * at(i0 + 1);
			EXPECT(fabsf(o1[l * nx + k] - ref) <= 2e-6f,
			       "1-D layer %d at %g: %.9g, CPU %.9g", l, x1[k], o1[l * nx + k], ref);
		}
	CK(cudaDestroyTextureObject(t));
	CK(cudaFreeArray(la));
	CK(cudaFree(dx1));
	CK(cudaFree(do1));
	CK(cudaFree(dxy));
	CK(cudaFree(dg));
	CK(cudaFree(dq));
	std::printf("tex2Dgather, txq/suq, tex2DLayered, tex1DLayered: ok\n");
}

static void test_surface()
{
	const int w = 37, h = 9;
	std::vector<float> img(w * h);
	for (int i = 0; i < w * h; i++)
		img[i] = i * 0.25f;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	CK(cudaMallocArray(&arr, &cd, w, h, cudaArraySurfaceLoadStore));
	CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), w * 4, w * 4, h, cudaMemcpyHostToDevice));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaSurfaceObject_t s;
	CK(cudaCreateSurfaceObject(&s, &rd));
	float *de, edge[2];
	CK(cudaMalloc(&de, sizeof(edge)));
	surf_rmw<<<dim3(2, h), 32>>>(s, w, h, de);
	CK(cudaGetLastError());
	CK(cudaMemcpy(edge, de, sizeof(edge), cudaMemcpyDeviceToHost));
	std::vector<float> out(w * h);
	CK(cudaMemcpy2DFromArray(out.data(), w * 4, arr, 0, 0, w * 4, h, cudaMemcpyDeviceToHost));
	for (int i = 0; i < w * h; i++)
		EXPECT(out[i] == img[i] * 2 + 1, "surface texel %d: %g, CPU %g", i, out[i],
		       img[i] * 2 + 1);
	EXPECT(edge[0] == 0.0f, "zero mode read %g", edge[0]);
	// the clamped read sees the last texel, before or after its thread's update
	float last = img[w * h - 1];
	EXPECT(edge[1] == last || edge[1] == last * 2 + 1, "clamp mode read %g", edge[1]);
	// a surface needs cudaArraySurfaceLoadStore
	cudaArray_t plain;
	CK(cudaMallocArray(&plain, &cd, w, h));
	rd.res.array.array = plain;
	cudaSurfaceObject_t bad;
	EXPECT(cudaCreateSurfaceObject(&bad, &rd) != cudaSuccess,
	       "a surface on an array without the flag");
	cudaGetLastError();
	CK(cudaDestroySurfaceObject(s));
	CK(cudaFreeArray(arr));
	CK(cudaFreeArray(plain));
	CK(cudaFree(de));
	std::printf("surface read-modify-write, zero and clamp boundary modes: ok\n");
}

static void test_3d()
{
	const int w = 7, h = 5, d = 4;
	std::vector<float> v(w * h * d);
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (float)i + 0.5f;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	CK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(w, h, d)));
	cudaExtent e;
	cudaChannelFormatDesc got;
	unsigned flags;
	CK(cudaArrayGetInfo(&got, &e, &flags, arr));
	EXPECT(e.width == w && e.height == h && e.depth == d && got.x == 32 &&
		       got.f == cudaChannelFormatKindFloat,
	       "cudaArrayGetInfo: %zu %zu %zu, %d bits", e.width, e.height, e.depth, got.x);
	cudaMemcpy3DParms p = {};
	p.srcPtr = make_cudaPitchedPtr(v.data(), w * 4, w, h);
	p.dstArray = arr;
	p.extent = make_cudaExtent(w, h, d);
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	// back into a padded host box: 3 floats of row padding, 2 rows of slice padding
	const int pw = w + 3, ph = h + 2;
	std::vector<float> back(pw * ph * d, -1.0f);
	p = {};
	p.srcArray = arr;
	p.dstPtr = make_cudaPitchedPtr(back.data(), pw * 4, w, ph);
	p.extent = make_cudaExtent(w, h, d);
	p.kind = cudaMemcpyDeviceToHost;
	CK(cudaMemcpy3D(&p));
	for (int z = 0; z < d; z++)
		for (int y = 0; y < ph; y++)
			for (int x = 0; x < pw; x++) {
				float got1 = back[(z * ph + y) * pw + x];
				float ref = x < w && y < h ? v[(z * h + y) * w + x] : -1.0f;
				EXPECT(got1 == ref, "3-D round trip (%d, %d, %d): %g, CPU %g", x, y,
				       z, got1, ref);
			}
	// a box of the array outside it is refused
	p = {};
	p.srcArray = arr;
	p.srcPos = make_cudaPos(1, 0, 0);
	p.dstPtr = make_cudaPitchedPtr(back.data(), pw * 4, w, ph);
	p.extent = make_cudaExtent(w, h, d);
	p.kind = cudaMemcpyDeviceToHost;
	EXPECT(cudaMemcpy3D(&p) != cudaSuccess, "a copy past the array's width");
	cudaGetLastError();
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaTextureDesc td = {};
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	float *dout;
	CK(cudaMalloc(&dout, v.size() * sizeof(float)));
	sample3d<<<1, (int)v.size()>>>(t, dout, w, h, d);
	std::vector<float> out(v.size());
	CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < v.size(); i++)
		EXPECT(out[i] == v[i], "tex3D texel %zu: %g, CPU %g", i, out[i], v[i]);
	CK(cudaDestroyTextureObject(t));
	CK(cudaFree(dout));
	CK(cudaFreeArray(arr));
	std::printf("3-D array cudaMemcpy3D round trip, tex3D: ok\n");
}

// A cubemap: every texel of every face read back through the direction of its centre (the
// programming guide's face table, inverted).
static void test_cubemap()
{
	const int w = 4, n = w * w * 6;
	std::vector<float> v(n);
	for (int i = 0; i < n; i++)
		v[i] = (float)(i * 7 % 31);
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaArray_t arr;
	CK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(w, w, 6), cudaArrayCubemap));
	cudaMemcpy3DParms p = {};
	p.srcPtr = make_cudaPitchedPtr(v.data(), w * 4, w, w);
	p.dstArray = arr;
	p.extent = make_cudaExtent(w, w, 6);
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	std::vector<float4> dir(n);
	for (int f = 0; f < 6; f++)
		for (int y = 0; y < w; y++)
			for (int x = 0; x < w; x++) {
				float s = (x + 0.5f) / w * 2 - 1, t = (y + 0.5f) / w * 2 - 1;
				float4 d;
				switch (f) {
				case 0:
					d = make_float4(1, -t, -s, 0);
					break;
				case 1:
					d = make_float4(-1, -t, s, 0);
					break;
				case 2:
					d = make_float4(s, 1, t, 0);
					break;
				case 3:
					d = make_float4(s, -1, -t, 0);
					break;
				case 4:
					d = make_float4(s, -t, 1, 0);
					break;
				default:
					d = make_float4(-s, -t, -1, 0);
					break;
				}
				dir[(f * w + y) * w + x] = d;
			}
	float4 *dd = dev_copy(dir);
	float *dout;
	CK(cudaMalloc(&dout, n * sizeof(float)));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeArray;
	rd.res.array.array = arr;
	cudaTextureDesc td = {};
	td.filterMode = cudaFilterModePoint;
	td.readMode = cudaReadModeElementType;
	td.normalizedCoords = 1;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	cube<<<1, n>>>(t, dd, dout, n);
	std::vector<float> out(n);
	CK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		EXPECT(out[i] == v[i], "cubemap face %d texel %d: %g, CPU %g", i / (w * w),
		       i % (w * w), out[i], v[i]);
	CK(cudaDestroyTextureObject(t));
	CK(cudaFreeArray(arr));

	// a layered cubemap: 3 cubemaps, each texel through its direction and layer
	const int layers = 3;
	std::vector<float> lv(n * layers);
	for (size_t i = 0; i < lv.size(); i++)
		lv[i] = (float)(i * 11 % 97);
	CK(cudaMalloc3DArray(&arr, &cd, make_cudaExtent(w, w, 6 * layers),
			     cudaArrayCubemap | cudaArrayLayered));
	p = {};
	p.srcPtr = make_cudaPitchedPtr(lv.data(), w * 4, w, w);
	p.dstArray = arr;
	p.extent = make_cudaExtent(w, w, 6 * layers);
	p.kind = cudaMemcpyHostToDevice;
	CK(cudaMemcpy3D(&p));
	rd.res.array.array = arr;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	float *dlo;
	CK(cudaMalloc(&dlo, lv.size() * sizeof(float)));
	cube_layered<<<1, (int)lv.size()>>>(t, dd, dlo, n, layers);
	std::vector<float> lo(lv.size());
	CK(cudaMemcpy(lo.data(), dlo, lo.size() * sizeof(float), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < lv.size(); i++)
		EXPECT(lo[i] == lv[i], "layered cubemap %zu, face %zu texel %zu: %g, CPU %g", i / n,
		       i % n / (w * w), i % (w * w), lo[i], lv[i]);
	CK(cudaDestroyTextureObject(t));
	CK(cudaFreeArray(arr));
	CK(cudaFree(dlo));
	CK(cudaFree(dd));
	CK(cudaFree(dout));
	std::printf("texCubemap, texCubemapLayered: ok\n");
}

// A mipmapped array of constant levels (level l holds 10 l): the level of detail from tex2DLod
// and tex2DGrad, point and linear mipmap filtering, the descriptor's clamp, each level's size.
static void test_mipmap()
{
	const int w = 64, h = 32, levels = 5;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	cudaMipmappedArray_t mm;
	CK(cudaMallocMipmappedArray(&mm, &cd, make_cudaExtent(w, h, 0), levels));
	for (int l = 0; l < levels; l++) {
		cudaArray_t a;
		CK(cudaGetMipmappedArrayLevel(&a, mm, l));
		cudaExtent e;
		cudaChannelFormatDesc got;
		unsigned flags;
		CK(cudaArrayGetInfo(&got, &e, &flags, a));
		int lw = w >> l, lh = h >> l;
		EXPECT((int)e.width == lw && (int)e.height == lh, "level %d is %zu x %zu", l,
		       e.width, e.height);
		std::vector<float> v(lw * lh, 10.0f * l);
		CK(cudaMemcpy2DToArray(a, 0, 0, v.data(), lw * 4, lw * 4, lh,
				       cudaMemcpyHostToDevice));
	}
	cudaArray_t extra;
	EXPECT(cudaGetMipmappedArrayLevel(&extra, mm, levels) != cudaSuccess, "a level too many");
	cudaGetLastError();
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeMipmappedArray;
	rd.res.mipmap.mipmap = mm;
	cudaTextureDesc td = {};
	td.normalizedCoords = 1;
	td.filterMode = cudaFilterModeLinear;
	td.mipmapFilterMode = cudaFilterModeLinear;
	td.maxMipmapLevelClamp = levels - 1;
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t lin, pt, clamped;
	CK(cudaCreateTextureObject(&lin, &rd, &td, nullptr));
	td.mipmapFilterMode = cudaFilterModePoint;
	CK(cudaCreateTextureObject(&pt, &rd, &td, nullptr));
	td.maxMipmapLevelClamp = 2;
	td.mipmapLevelBias = 0.5f;
	CK(cudaCreateTextureObject(&clamped, &rd, &td, nullptr));
	std::vector<float> lod = {-1, 0, 0.25f, 1, 1.5f, 2.4f, 2.6f, 3.75f, 4, 9};
	int n = (int)lod.size();
	float *dl = dev_copy(lod), *dout;
	CK(cudaMalloc(&dout, (n + 1) * sizeof(float)));
	const cudaTextureObject_t objs[3] = {lin, pt, clamped};
	// tex2DGrad: d/dx of 8 texels along x (4/64 ... scaled by the width), half that along y
	const float gx = 8.0f / w;
	for (int k = 0; k < 3; k++) {
		lods<<<1, n>>>(objs[k], dl, dout, n, gx);
		std::vector<float> out(n + 1);
		CK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float),
			      cudaMemcpyDeviceToHost));
		for (int i = 0; i <= n; i++) {
			float l = i < n ? lod[i] : 3.0f; // log2(8) for the gradient
			float lo = 0.0f, hi = k == 2 ? 2.0f : levels - 1.0f;
			if (k == 2)
				l += 0.5f;
			l = l < lo ? lo : l > hi ? hi : l;
			float ref;
			if (k == 0)
				ref = 10.0f * l; // linear between two constant levels
			else
				ref = 10.0f * (l <= 0.5f ? 0 : ceilf(l + 0.5f) - 1);
			EXPECT(fabsf(out[i] - ref) <= 1e-4f, "object %d, lod %g: %g, CPU %g", k,
			       i < n ? lod[i] : 3.0f, out[i], ref);
		}
	}
	CK(cudaDestroyTextureObject(lin));
	CK(cudaDestroyTextureObject(pt));
	CK(cudaDestroyTextureObject(clamped));
	CK(cudaFreeMipmappedArray(mm));
	CK(cudaFree(dl));
	CK(cudaFree(dout));
	std::printf(
		"mipmapped array: tex2DLod, tex2DGrad, point and linear mipmap filtering: ok\n");
}

// A destroyed texture object's handle faults the kernel that uses it (last: the error is
// sticky).
static void test_stale_handle()
{
	std::vector<float> v(16, 1.0f);
	float *dv = dev_copy(v), *dout;
	CK(cudaMalloc(&dout, 16 * sizeof(float)));
	cudaResourceDesc rd = {};
	rd.resType = cudaResourceTypeLinear;
	rd.res.linear.devPtr = dv;
	rd.res.linear.desc = cudaCreateChannelDesc<float>();
	rd.res.linear.sizeInBytes = 16 * sizeof(float);
	cudaTextureDesc td = {};
	td.readMode = cudaReadModeElementType;
	cudaTextureObject_t t;
	CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
	CK(cudaDestroyTextureObject(t));
	fetch1d<<<1, 16>>>(t, dout, 16);
	cudaError_t e = cudaDeviceSynchronize();
	EXPECT(e == cudaErrorIllegalAddress, "a destroyed texture object in a kernel: %s",
	       cudaGetErrorName(e));
	std::printf("a stale texture handle faults the launch: ok\n");
}

static void test_memory_limit()
{
	size_t free0, total, free1;
	CK(cudaMemGetInfo(&free0, &total));
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float4>();
	cudaArray_t arr;
	// 4096 x 4096 float4: 256 MiB, charged to the device
	CK(cudaMallocArray(&arr, &cd, 4096, 4096));
	CK(cudaMemGetInfo(&free1, &total));
	EXPECT(free0 - free1 >= (size_t)256 << 20, "an array of 256 MiB took %zu bytes",
	       free0 - free1);
	CK(cudaFreeArray(arr));
	// more than the device has: 16384^3 float4 (64 TiB)
	cudaError_t e = cudaMalloc3DArray(&arr, &cd, make_cudaExtent(16384, 16384, 16384));
	EXPECT(e == cudaErrorMemoryAllocation, "an array past the memory: %s", cudaGetErrorName(e));
	cudaGetLastError();
	// just past what is free
	CK(cudaMemGetInfo(&free1, &total));
	EXPECT(free1 == free0, "the array's memory came back: %zu free, was %zu", free1, free0);
	size_t rows = free1 / (16384 * 16) + 64;
	if (rows <= 65536) {
		e = cudaMallocArray(&arr, &cd, 16384, rows);
		EXPECT(e == cudaErrorMemoryAllocation, "an array just past free memory: %s",
		       cudaGetErrorName(e));
		cudaGetLastError();
	}
	// a mipmapped array whose first level fits and whose levels together do not: out of
	// memory, and the levels made before it ran out are given back
	size_t mh = (size_t)(free1 * 0.9) / (16384 * 16);
	if (mh > 32768)
		mh = 32768;
	if (mh > 0 && 16384 * 16 * mh * 4 / 3 > free1) {
		cudaMipmappedArray_t mm;
		e = cudaMallocMipmappedArray(&mm, &cd, make_cudaExtent(16384, mh, 0), 8);
		EXPECT(e == cudaErrorMemoryAllocation, "a mipmapped array past free memory: %s",
		       cudaGetErrorName(e));
		cudaGetLastError();
		size_t free2;
		CK(cudaMemGetInfo(&free2, &total));
		EXPECT(free2 == free1, "the levels came back: %zu free, was %zu", free2, free1);
	}
	std::printf("arrays charged to device memory, past it out of memory: ok\n");
}

int main()
{
	CK(cudaSetDevice(0));
	test_linear_modes();
	test_uchar4_point();
	test_fetch_and_pitch();
	test_gather_layered_query();
	test_surface();
	test_3d();
	test_cubemap();
	test_mipmap();
	test_memory_limit();
	test_stale_handle();
	std::printf("PASSED\n");
	return 0;
}
