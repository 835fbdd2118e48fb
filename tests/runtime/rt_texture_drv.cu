// rt_texture_drv.cu -- the driver API's arrays, texture and surface objects: the error codes
// of each call, the linear array copies (cuMemcpyHtoA and the rest), and hand-written PTX for
// forms rt_texture.cu's CUDA C does not reach (integer reads of signed 16-bit texels, half and
// signed-normalized texels, txq's other queries, 64-bit and vector surface accesses on a
// layered surface, the clamp and trap boundary modes), each against a CPU reference.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda.h>
#include <cuda_fp16.h>

#define CU(call)                                                                                  \
	do {                                                                                      \
		CUresult r_ = (call);                                                             \
		if (r_ != CUDA_SUCCESS) {                                                         \
			const char *n_ = "?";                                                     \
			cuGetErrorName(r_, &n_);                                                  \
			std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
				     n_);                                                         \
			std::exit(1);                                                             \
		}                                                                                 \
	} while (0)

#define EXPECT(cond, ...)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			std::fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond); \
			std::fprintf(stderr, __VA_ARGS__);                                       \
			std::fprintf(stderr, "\n");                                              \
			std::exit(1);                                                            \
		}                                                                                \
	} while (0)

#define EXPECT_RC(call, want)                                                               \
	do {                                                                                \
		CUresult r_ = (call);                                                       \
		const char *n_ = "?";                                                       \
		cuGetErrorName(r_, &n_);                                                    \
		EXPECT(r_ == (want), "%s gave %s (%d), not %s", #call, n_, (int)r_, #want); \
	} while (0)

static const char *ptx = R"(
.version 8.0
.target sm_75
.address_size 64

.visible .entry tex_int(.param .u64 t, .param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [t];
	ld.param.u64 %rd2, [out];
	mov.u32 %r5, 2;
	mov.u32 %r6, 1;
	tex.2d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r5, %r6}];
	st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
	ret;
}

.visible .entry tex_1d(.param .u64 t, .param .u64 x, .param .u64 out, .param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<4>;
	.reg .f32 %f<6>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [t];
	ld.param.u64 %rd2, [x];
	ld.param.u64 %rd3, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	setp.ge.u32 %p, %r2, %r1;
	@%p ret;
	mul.wide.u32 %rd4, %r2, 4;
	add.u64 %rd5, %rd2, %rd4;
	ld.global.f32 %f1, [%rd5];
	tex.1d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1}];
	add.u64 %rd6, %rd3, %rd4;
	st.global.f32 [%rd6], %f2;
	ret;
}

.visible .entry queries(.param .u64 t, .param .u64 s, .param .u64 out)
{
	.reg .b32 %r<16>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [t];
	ld.param.u64 %rd2, [s];
	ld.param.u64 %rd3, [out];
	txq.channel_data_type.b32 %r1, [%rd1];
	txq.channel_order.b32 %r2, [%rd1];
	txq.normalized_coords.b32 %r3, [%rd1];
	txq.filter_mode.b32 %r4, [%rd1];
	txq.addr_mode_0.b32 %r5, [%rd1];
	txq.addr_mode_1.b32 %r6, [%rd1];
	txq.array_size.b32 %r7, [%rd1];
	txq.num_mipmap_levels.b32 %r8, [%rd1];
	txq.depth.b32 %r9, [%rd1];
	suq.width.b32 %r10, [%rd2];
	suq.array_size.b32 %r11, [%rd2];
	suq.channel_data_type.b32 %r12, [%rd2];
	st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};
	st.global.v4.u32 [%rd3+16], {%r5, %r6, %r7, %r8};
	st.global.v4.u32 [%rd3+32], {%r9, %r10, %r11, %r12};
	ret;
}

// a 1-D layered surface of uint2: each element (a, b) becomes the 64-bit (b:a) + layer, and
// a clamped read at x = -8 gives element 0
.visible .entry surf_layered(.param .u64 s, .param .u64 out)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [s];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	shl.b32 %r3, %r1, 3;
	suld.b.a1d.v2.b32.trap {%r4, %r5}, [%rd1, {%r2, %r3}];
	mov.b64 %rd3, {%r4, %r5};
	cvt.u64.u32 %rd4, %r2;
	add.u64 %rd3, %rd3, %rd4;
	sust.b.a1d.b64.trap [%rd1, {%r2, %r3}], %rd3;
	mov.u32 %r6, -8;
	suld.b.a1d.b32.clamp {%r7}, [%rd1, {%r2, %r6}];
	mul.wide.u32 %rd5, %r2, 4;
	add.u64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r7;
	ret;
}

.visible .entry surf_trap(.param .u64 s, .param .u32 x)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [s];
	ld.param.u32 %r1, [x];
	mov.u32 %r2, 0;
	suld.b.a1d.b32.trap {%r3}, [%rd1, {%r2, %r1}];
	ret;
}
)";

static CUDA_ARRAY3D_DESCRIPTOR desc3(size_t w, size_t h, size_t d, CUarray_format f, unsigned nch,
				     unsigned flags)
{
	CUDA_ARRAY3D_DESCRIPTOR a = {};
	a.Width = w;
	a.Height = h;
	a.Depth = d;
	a.Format = f;
	a.NumChannels = nch;
	a.Flags = flags;
	return a;
}

static CUDA_RESOURCE_DESC res_array(CUarray a)
{
	CUDA_RESOURCE_DESC r = {};
	r.resType = CU_RESOURCE_TYPE_ARRAY;
	r.res.array.hArray = a;
	return r;
}

static void test_errors()
{
	CUarray a;
	CUDA_ARRAY3D_DESCRIPTOR d;

	d = desc3(16, 0, 0, CU_AD_FORMAT_FLOAT, 3, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 16, 0, CU_AD_FORMAT_BC1_UNORM, 4, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_NOT_SUPPORTED);
	d = desc3(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0x10000);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_NOT_SUPPORTED);
	d = desc3(0, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(131073, 2, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 8, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 16, 13, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE); // not 6 faces a layer
	d = desc3(16, 16, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP);
	CUmipmappedArray mc;
	EXPECT_RC(cuMipmappedArrayCreate(&mc, &d, 2), CUDA_ERROR_NOT_SUPPORTED);
	d = desc3(16, 0, 4, CU_AD_FORMAT_FLOAT, 1, 0); // depth without height
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 16, 4, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_TEXTURE_GATHER); // not 2-D
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	// the alternate 3-D limits (MAXIMUM_TEXTURE3D_*_ALTERNATE), which surfaces lack
	d = desc3(16, 16, 20000, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0);
	CU(cuArray3DCreate(&a, &d));
	CU(cuArrayDestroy(a));
	d.Flags = CUDA_ARRAY3D_SURFACE_LDST;
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16385, 16, 16, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	// a 16384-cubed float4 array is within the limits and beyond the memory
	d = desc3(16384, 16384, 16384, CU_AD_FORMAT_FLOAT, 4, 0);
	EXPECT_RC(cuArray3DCreate(&a, &d), CUDA_ERROR_OUT_OF_MEMORY);
	// mipmapped arrays: at most 1 + log2 of the longest side levels; a level is not
	// cuArrayDestroy's
	CUmipmappedArray m;
	d = desc3(16, 5, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	EXPECT_RC(cuMipmappedArrayCreate(&m, &d, 6), CUDA_ERROR_INVALID_VALUE);
	EXPECT_RC(cuMipmappedArrayCreate(&m, &d, 0), CUDA_ERROR_INVALID_VALUE);
	d = desc3(32769, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	EXPECT_RC(cuMipmappedArrayCreate(&m, &d, 2), CUDA_ERROR_INVALID_VALUE);
	d = desc3(16, 5, 0, CU_AD_FORMAT_FLOAT, 1, 0);
	CU(cuMipmappedArrayCreate(&m, &d, 5));
	CU(cuMipmappedArrayGetLevel(&a, m, 4));
	CUDA_ARRAY3D_DESCRIPTOR lv;
	CU(cuArray3DGetDescriptor(&lv, a));
	EXPECT(lv.Width == 1 && lv.Height == 1 && lv.Depth == 0, "level 4 of 16 x 5: %zu x %zu",
	       lv.Width, lv.Height);
	EXPECT_RC(cuArrayDestroy(a), CUDA_ERROR_INVALID_VALUE);
	EXPECT_RC(cuMipmappedArrayGetLevel(&a, m, 5), CUDA_ERROR_INVALID_VALUE);
	CU(cuMipmappedArrayDestroy(m));
	EXPECT_RC(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
	EXPECT_RC(cuArray3DGetDescriptor(&lv, a), CUDA_ERROR_INVALID_HANDLE);
	int v = -1;
	CUdevice dev;
	CU(cuCtxGetDevice(&dev));
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, dev));
	EXPECT(v == 32768, "MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH %d", v);

	// descriptors come back; a destroyed array is an invalid handle
	size_t free0, free1, total;
	CU(cuMemGetInfo(&free0, &total));
	d = desc3(100, 30, 5, CU_AD_FORMAT_SIGNED_INT16, 2, CUDA_ARRAY3D_SURFACE_LDST);
	CU(cuArray3DCreate(&a, &d));
	CU(cuMemGetInfo(&free1, &total));
	EXPECT(free0 - free1 >= 100 * 30 * 5 * 4, "the array took %zu bytes", free0 - free1);
	CUDA_ARRAY3D_DESCRIPTOR g;
	CU(cuArray3DGetDescriptor(&g, a));
	EXPECT(!std::memcmp(&g, &d, sizeof(d)), "cuArray3DGetDescriptor gives what was made");
	CUDA_ARRAY_MEMORY_REQUIREMENTS req;
	EXPECT_RC(cuArrayGetMemoryRequirements(&req, a, dev),
		  CUDA_ERROR_INVALID_VALUE); // not deferred
	CUDA_ARRAY_DESCRIPTOR g2;
	CU(cuArrayGetDescriptor(&g2, a));
	EXPECT(g2.Width == 100 && g2.Height == 30 && g2.Format == CU_AD_FORMAT_SIGNED_INT16 &&
		       g2.NumChannels == 2,
	       "cuArrayGetDescriptor");

	// linear copies: host -> array -> device -> array -> array -> host
	size_t bytes = 100 * 30 * 5 * 4;
	std::vector<uint8_t> h(bytes), back(bytes, 0);
	for (size_t i = 0; i < bytes; i++)
		h[i] = (uint8_t)(i * 13 + 7);
	CUarray b;
	CU(cuArray3DCreate(&b, &d));
	CUdeviceptr dp;
	CU(cuMemAlloc(&dp, bytes));
	CU(cuMemcpyHtoA(a, 0, h.data(), bytes));
	CU(cuMemcpyAtoD(dp, a, 0, bytes));
	CU(cuMemsetD8(dp + 100, 0, 4)); // 4 bytes changed on the way
	CU(cuMemcpyDtoA(b, 0, dp, bytes));
	CU(cuMemcpyAtoA(a, 8, b, 0, bytes - 8));
	CU(cuMemcpyAtoH(back.data(), a, 0, bytes));
	for (size_t i = 0; i < bytes; i++) {
		uint8_t want = i < 8 ? h[i] : (i - 8 >= 100 && i - 8 < 104) ? 0 : h[i - 8];
		EXPECT(back[i] == want, "array copies: byte %zu is %u, not %u", i, back[i], want);
	}
	EXPECT_RC(cuMemcpyHtoA(a, 1, h.data(), bytes), CUDA_ERROR_INVALID_VALUE);
	EXPECT_RC(cuMemcpyAtoH(back.data(), a, bytes, 1), CUDA_ERROR_INVALID_VALUE);
	// a 2-D copy box past the array's rows
	CUDA_MEMCPY2D c2 = {};
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = h.data();
	c2.srcPitch = 400;
	c2.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c2.dstArray = a;
	c2.WidthInBytes = 400;
	c2.Height = 31;
	EXPECT_RC(cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
	c2.Height = 30;
	CU(cuMemcpy2D(&c2));

	// texture objects: the checks on their resources and descriptors
	CUDA_RESOURCE_DESC rd = {};
	rd.resType = CU_RESOURCE_TYPE_LINEAR;
	rd.res.linear.devPtr = dp + 4;
	rd.res.linear.format = CU_AD_FORMAT_FLOAT;
	rd.res.linear.numChannels = 1;
	rd.res.linear.sizeInBytes = 64;
	CUDA_TEXTURE_DESC td = {};
	CUtexObject t;
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_INVALID_VALUE);
	rd.res.linear.devPtr = dp;
	rd.res.linear.sizeInBytes = bytes + 4; // past the allocation
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_INVALID_VALUE);
	rd = {};
	rd.resType = CU_RESOURCE_TYPE_PITCH2D;
	rd.res.pitch2D.devPtr = dp;
	rd.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
	rd.res.pitch2D.numChannels = 1;
	rd.res.pitch2D.width = 10;
	rd.res.pitch2D.height = 10;
	rd.res.pitch2D.pitchInBytes = 48; // not a multiple of 32
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_INVALID_VALUE);
	CUsurfObject s;
	EXPECT_RC(cuSurfObjectCreate(&s, &rd), CUDA_ERROR_INVALID_VALUE); // not an array
	rd = res_array(a);
	CUDA_RESOURCE_VIEW_DESC view = {};
	view.format = CU_RES_VIEW_FORMAT_SINT_2X16;
	view.width = 100;
	view.height = 30;
	view.depth = 5;
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, &view), CUDA_ERROR_NOT_SUPPORTED);
	td.flags = CU_TRSF_SRGB;
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_NOT_SUPPORTED);
	td.flags = CU_TRSF_READ_AS_INTEGER;
	td.filterMode = CU_TR_FILTER_MODE_LINEAR;
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_INVALID_VALUE);
	td.filterMode = CU_TR_FILTER_MODE_POINT;
	td.addressMode[1] = (CUaddress_mode)7;
	EXPECT_RC(cuTexObjectCreate(&t, &rd, &td, nullptr), CUDA_ERROR_INVALID_VALUE);
	td.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
	td.borderColor[2] = 0.5f;
	CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
	CUDA_TEXTURE_DESC tback;
	CU(cuTexObjectGetTextureDesc(&tback, t));
	EXPECT(!std::memcmp(&tback, &td, sizeof(td)), "cuTexObjectGetTextureDesc");
	CUDA_RESOURCE_DESC rback;
	CU(cuTexObjectGetResourceDesc(&rback, t));
	EXPECT(rback.resType == CU_RESOURCE_TYPE_ARRAY && rback.res.array.hArray == a,
	       "cuTexObjectGetResourceDesc");
	EXPECT_RC(cuTexObjectGetResourceViewDesc(&view, t), CUDA_ERROR_INVALID_VALUE);
	CU(cuSurfObjectCreate(&s, &rd));
	EXPECT_RC(cuTexObjectDestroy(s), CUDA_ERROR_INVALID_VALUE); // a surface, not a texture
	EXPECT_RC(cuSurfObjectDestroy(t), CUDA_ERROR_INVALID_VALUE);
	CU(cuSurfObjectDestroy(s));
	CU(cuTexObjectDestroy(t));
	EXPECT_RC(cuTexObjectDestroy(t), CUDA_ERROR_INVALID_VALUE);
	EXPECT_RC(cuTexObjectGetTextureDesc(&tback, t), CUDA_ERROR_INVALID_VALUE);
	EXPECT_RC(cuTexObjectDestroy(0x1234567), CUDA_ERROR_INVALID_VALUE);
	CU(cuArrayDestroy(a));
	CU(cuArrayDestroy(b));
	EXPECT_RC(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
	EXPECT_RC(cuArray3DGetDescriptor(&g, a), CUDA_ERROR_INVALID_HANDLE);
	CU(cuMemGetInfo(&free1, &total));
	CU(cuMemFree(dp));
	std::printf("error codes, descriptors, linear array copies: ok\n");
}

static CUfunction fn(CUmodule m, const char *name)
{
	CUfunction f;
	CU(cuModuleGetFunction(&f, m, name));
	return f;
}

static void test_kernels(CUmodule mod)
{
	// signed 16-bit, 2 channels, read as integers: sign-extended, z = 0, w = 1
	CUarray a;
	CUDA_ARRAY3D_DESCRIPTOR d = desc3(4, 3, 0, CU_AD_FORMAT_SIGNED_INT16, 2, 0);
	CU(cuArray3DCreate(&a, &d));
	std::vector<int16_t> s16(4 * 3 * 2);
	for (size_t i = 0; i < s16.size(); i++)
		s16[i] = (int16_t)(i * 3000 - 30000);
	CU(cuMemcpyHtoA(a, 0, s16.data(), s16.size() * 2));
	CUDA_RESOURCE_DESC rd = res_array(a);
	CUDA_TEXTURE_DESC td = {};
	td.flags = CU_TRSF_READ_AS_INTEGER;
	CUtexObject t;
	CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
	CUdeviceptr out;
	CU(cuMemAlloc(&out, 256));
	void *args1[] = {&t, &out};
	CU(cuLaunchKernel(fn(mod, "tex_int"), 1, 1, 1, 1, 1, 1, 0, nullptr, args1, nullptr));
	int32_t r[4];
	CU(cuMemcpyDtoH(r, out, sizeof(r)));
	int idx = (1 * 4 + 2) * 2;
	EXPECT(r[0] == s16[idx] && r[1] == s16[idx + 1] && r[2] == 0 && r[3] == 1,
	       "s16x2 as integers at (2, 1): %d %d %d %d, CPU %d %d 0 1", r[0], r[1], r[2], r[3],
	       s16[idx], s16[idx + 1]);
	CU(cuTexObjectDestroy(t));
	CU(cuArrayDestroy(a));

	// half texels, linear filtering, unnormalized: against the CPU's fixed-point weights;
	// signed 8-bit normalized: -128 and -127 read -1
	const int n = 64;
	std::vector<float> xs(n), res(n);
	for (int i = 0; i < n; i++)
		xs[i] = -1.0f + i * 0.173f;
	CUdeviceptr dx, dr;
	CU(cuMemAlloc(&dx, n * 4));
	CU(cuMemAlloc(&dr, n * 4));
	CU(cuMemcpyHtoD(dx, xs.data(), n * 4));
	const int w = 9;
	std::vector<__half> hv(w);
	std::vector<float> hf(w);
	for (int i = 0; i < w; i++) {
		hv[i] = __float2half(i * i * 0.37f - 2.0f);
		hf[i] = __half2float(hv[i]);
	}
	d = desc3(w, 0, 0, CU_AD_FORMAT_HALF, 1, 0);
	CU(cuArray3DCreate(&a, &d));
	CU(cuMemcpyHtoA(a, 0, hv.data(), w * 2));
	rd = res_array(a);
	td = {};
	td.filterMode = CU_TR_FILTER_MODE_LINEAR;
	td.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP;
	CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
	unsigned un = n;
	void *args2[] = {&t, &dx, &dr, &un};
	CU(cuLaunchKernel(fn(mod, "tex_1d"), 1, 1, 1, n, 1, 1, 0, nullptr, args2, nullptr));
	CU(cuMemcpyDtoH(res.data(), dr, n * 4));
	for (int i = 0; i < n; i++) {
		float xb = xs[i] - 0.5f;
		int i0 = (int)floorf(xb);
		float al = rintf((xb - floorf(xb)) * 256.0f) / 256.0f;
		auto at = [&](int k) { return hf[k < 0 ? 0 : k >= w ? w - 1 : k]; };
		float ref = (1.0f - al) * at(i0) + al * at(i0 + 1);
		EXPECT(fabsf(res[i] - ref) <= 1e-5f * (1 + fabsf(ref)),
		       "half at %g: %.9g, CPU %.9g", xs[i], res[i], ref);
	}
	CU(cuTexObjectDestroy(t));
	CU(cuArrayDestroy(a));
	int8_t s8[4] = {-128, -127, 127, 64};
	d = desc3(4, 0, 0, CU_AD_FORMAT_SIGNED_INT8, 1, 0);
	CU(cuArray3DCreate(&a, &d));
	CU(cuMemcpyHtoA(a, 0, s8, 4));
	rd = res_array(a);
	td = {};
	CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
	float px[4] = {0.5f, 1.5f, 2.5f, 3.5f}, pr[4];
	CU(cuMemcpyHtoD(dx, px, sizeof(px)));
	un = 4;
	CU(cuLaunchKernel(fn(mod, "tex_1d"), 1, 1, 1, 4, 1, 1, 0, nullptr, args2, nullptr));
	CU(cuMemcpyDtoH(pr, dr, sizeof(pr)));
	EXPECT(pr[0] == -1.0f && pr[1] == -1.0f && pr[2] == 1.0f && pr[3] == 64.0f / 127.0f,
	       "s8 normalized: %g %g %g %g", pr[0], pr[1], pr[2], pr[3]);

	// txq and suq on a layered surface-capable array
	CU(cuTexObjectDestroy(t));
	CU(cuArrayDestroy(a));
	d = desc3(16, 0, 3, CU_AD_FORMAT_UNSIGNED_INT32, 2,
		  CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST);
	CU(cuArray3DCreate(&a, &d));
	rd = res_array(a);
	td = {};
	td.flags = CU_TRSF_NORMALIZED_COORDINATES;
	td.addressMode[0] = CU_TR_ADDRESS_MODE_MIRROR;
	td.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
	CU(cuTexObjectCreate(&t, &rd, &td, nullptr));
	CUsurfObject s;
	CU(cuSurfObjectCreate(&s, &rd));
	void *args3[] = {&t, &s, &out};
	CU(cuLaunchKernel(fn(mod, "queries"), 1, 1, 1, 1, 1, 1, 0, nullptr, args3, nullptr));
	uint32_t q[12];
	CU(cuMemcpyDtoH(q, out, sizeof(q)));
	// OpenCL's CL_UNSIGNED_INT32 and CL_RG; mirror 1, border 4 (PTX's numbering)
	const uint32_t want[12] = {0x10DC, 0x10B2, 1, 0, 1, 4, 3, 1, 1, 16, 3, 0x10DC};
	for (int i = 0; i < 12; i++)
		EXPECT(q[i] == want[i], "query %d: %u, not %u", i, q[i], want[i]);

	// the layered surface: 64-bit stores over uint2 elements, a clamped read
	std::vector<uint32_t> sv(16 * 2 * 3);
	for (size_t i = 0; i < sv.size(); i++)
		sv[i] = (uint32_t)(i * 0x9e3779b9u);
	CU(cuMemcpyHtoA(a, 0, sv.data(), sv.size() * 4));
	void *args4[] = {&s, &out};
	CU(cuLaunchKernel(fn(mod, "surf_layered"), 3, 1, 1, 16, 1, 1, 0, nullptr, args4, nullptr));
	std::vector<uint32_t> sb(sv.size());
	CU(cuMemcpyAtoH(sb.data(), a, 0, sb.size() * 4));
	uint32_t clamped[3];
	CU(cuMemcpyDtoH(clamped, out, sizeof(clamped)));
	for (int l = 0; l < 3; l++) {
		for (int x = 0; x < 16; x++) {
			size_t e = (l * 16 + x) * 2;
			uint64_t v = ((uint64_t)sv[e + 1] << 32 | sv[e]) + (uint64_t)l;
			EXPECT(sb[e] == (uint32_t)v && sb[e + 1] == (uint32_t)(v >> 32),
			       "layer %d element %d", l, x);
		}
		size_t e0 = (size_t)l * 32;
		EXPECT(clamped[l] == sv[e0] || clamped[l] == sb[e0], "clamped read in layer %d", l);
	}
	std::printf("integer, half and signed-normalized texels, txq/suq, a layered surface: ok\n");

	// .trap past the end fails the launch (in a context of its own: the error is sticky)
	CUcontext mine, other;
	CU(cuCtxGetCurrent(&mine));
	CUdevice dev;
	CU(cuCtxGetDevice(&dev));
	CU(cuCtxCreate(&other, nullptr, 0, dev));
	CUmodule m2;
	CU(cuModuleLoadData(&m2, ptx));
	CUarray a2;
	CU(cuArray3DCreate(&a2, &d));
	CUDA_RESOURCE_DESC rd2 = res_array(a2);
	CUsurfObject s2;
	CU(cuSurfObjectCreate(&s2, &rd2));
	unsigned past = 16 * 8;
	void *args5[] = {&s2, &past};
	CU(cuLaunchKernel(fn(m2, "surf_trap"), 1, 1, 1, 1, 1, 1, 0, nullptr, args5, nullptr));
	EXPECT_RC(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CU(cuCtxDestroy(other));
	CU(cuCtxSetCurrent(mine));
	// the destroyed context's array is gone with it
	CUDA_ARRAY3D_DESCRIPTOR g;
	EXPECT_RC(cuArray3DGetDescriptor(&g, a2), CUDA_ERROR_INVALID_HANDLE);
	CU(cuSurfObjectDestroy(s));
	CU(cuTexObjectDestroy(t));
	CU(cuArrayDestroy(a));
	CU(cuMemFree(out));
	CU(cuMemFree(dx));
	CU(cuMemFree(dr));
	std::printf("a trapping surface access fails its launch: ok\n");
}

// Malformed or unsupported texture PTX fails the kernel that uses it, with the CUresult a
// load of bad PTX gives (INVALID_PTX) or NOT_SUPPORTED for a form softgpu does not run.
static void test_bad_ptx()
{
	struct {
		const char *insn;
		CUresult want;
		const char *decl;
	} cases[] = {
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1}];", CUDA_ERROR_INVALID_PTX},
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3}, [%rd1, {%f1, %f2}];", CUDA_ERROR_INVALID_PTX},
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, %f1];", CUDA_ERROR_INVALID_PTX},
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f1, %f2}], {%r1, %r1};",
		 CUDA_ERROR_NOT_SUPPORTED},
		// a module with a texture reference does not load (valid PTX softgpu does not run)
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tref, {%f1, %f2}];",
		 CUDA_ERROR_NOT_SUPPORTED, ".global .texref tref;\n"},
		// a texture operand that is not a register: a variable's address
		{"tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [gv, {%f1, %f2}];",
		 CUDA_ERROR_NOT_SUPPORTED},
		{"tex.2dms.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %r1, %r1, %r1}];",
		 CUDA_ERROR_NOT_SUPPORTED},
		{"tex.level.acube.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %f1, %f2, %f3}], "
		 "%f1;",
		 CUDA_ERROR_NOT_SUPPORTED},
		{"sust.p.2d.v4.b32.trap [%rd1, {%r1, %r1}], {%r1, %r1, %r1, %r1};",
		 CUDA_ERROR_NOT_SUPPORTED},
		{"suld.b.2d.v4.b64.trap {%rd1, %rd1, %rd1, %rd1}, [%rd1, {%r1, %r1}];",
		 CUDA_ERROR_NOT_SUPPORTED},
		{"txq.num_samples.b32 %r1, [%rd1];", CUDA_ERROR_NOT_SUPPORTED},
		{"ld.global.f32 %f1, [%rd1, {%r1}];", CUDA_ERROR_INVALID_PTX},
	};
	for (auto &c : cases) {
		char text[1024];
		std::snprintf(text, sizeof(text),
			      ".version 8.0\n.target sm_75\n.address_size 64\n"
			      ".global .u64 gv;\n%s"
			      ".visible .entry k(.param .u64 t)\n{\n"
			      "\t.reg .b32 %%r<4>;\n\t.reg .f32 %%f<6>;\n\t.reg .b64 %%rd<4>;\n"
			      "\tld.param.u64 %%rd1, [t];\n\tmov.u32 %%r1, 0;\n\t%s\n\tret;\n}\n",
			      c.decl ? c.decl : "", c.insn);
		CUmodule m;
		CUresult r = cuModuleLoadData(&m, text);
		if (r == CUDA_SUCCESS) {
			CUfunction f;
			r = cuModuleGetFunction(&f, m, "k");
			CU(cuModuleUnload(m));
		}
		const char *n = "?";
		cuGetErrorName(r, &n);
		EXPECT(r == c.want, "'%s' gave %s", c.insn, n);
	}
	std::printf("malformed and unsupported texture PTX fails the kernel: ok\n");
}

int main()
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadData(&mod, ptx));
	test_errors();
	test_bad_ptx();
	test_kernels(mod);
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	std::printf("PASSED\n");
	return 0;
}
