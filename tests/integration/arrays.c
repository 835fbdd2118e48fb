/* arrays.c -- CUDA arrays, 2-D and 3-D copies to and from them, texture and surface objects,
 * checked against the CPU. Runs directly on softgpu and through the pool; prints one line
 * per failed check and "arrays: ok" when all hold.
 *
 *   arrays          descriptors; 2-D copies host -> array -> device -> array -> host with
 *                   offsets and pitches; a 3-D round trip through a layered-free 3-D array
 *                   and pitched device memory; the 1-D copies; copies past an array's
 *                   extents refused; a 3 MiB 3-D box to an array and back (past the
 *                   pool's 1 MiB chunks, which end inside rows); textures over an array (point filtering with clamp
 *                   and border addressing, normalized coordinates with wrap, linear
 *                   filtering, 8-bit reads as normalized floats) and a surface written by a
 *                   kernel, each read back and compared
 *                   (ARRAYS_POOL set: through the pool, whose devices claim no sparse or
 *                   deferred-mapping arrays, which it does not forward); a mipmapped array:
 *                   its levels' extents, a copy into a level and back, a texture over it
 *   arrays limit    for test-arrays.sh: prints "ready", then makes a 32 MiB array, tries a
 *                   64 MiB one (expects CUDA_ERROR_OUT_OF_MEMORY under a 64 MiB limit) and
 *                   prints "held"; after a line on stdin makes a 5 MiB mipmapped array
 *                   ("mipmapped"), after another destroys both ("released"), after a
 *                   third exits */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

/* out[(ctaid.x) * ntid.x + tid.x] = tex2D(t, u, v).x with x = tid.x - 1, y = ctaid.x - 1,
 * u = (x + shift) * sx + add, v = (y + 0.5) * sy + add. */
static const char tex_ptx[] =
	".version 7.0\n"
	".target sm_52\n"
	".address_size 64\n"
	".visible .entry fetch(.param .u64 t, .param .u64 out, .param .f32 shift,\n"
	"  .param .f32 sx, .param .f32 sy, .param .f32 add)\n"
	"{\n"
	"  .reg .u32 %r<8>;\n"
	"  .reg .u64 %rd<6>;\n"
	"  .reg .f32 %f<16>;\n"
	"  ld.param.u64 %rd1, [t];\n"
	"  ld.param.u64 %rd2, [out];\n"
	"  ld.param.f32 %f10, [shift];\n"
	"  ld.param.f32 %f11, [sx];\n"
	"  ld.param.f32 %f12, [sy];\n"
	"  ld.param.f32 %f13, [add];\n"
	"  mov.u32 %r1, %tid.x;\n"
	"  mov.u32 %r2, %ctaid.x;\n"
	"  mov.u32 %r3, %ntid.x;\n"
	"  sub.s32 %r4, %r1, 1;\n"
	"  sub.s32 %r5, %r2, 1;\n"
	"  cvt.rn.f32.s32 %f1, %r4;\n"
	"  cvt.rn.f32.s32 %f2, %r5;\n"
	"  add.f32 %f1, %f1, %f10;\n"
	"  add.f32 %f2, %f2, 0f3F000000;\n"
	"  fma.rn.f32 %f1, %f1, %f11, %f13;\n"
	"  fma.rn.f32 %f2, %f2, %f12, %f13;\n"
	"  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}];\n"
	"  mad.lo.u32 %r6, %r2, %r3, %r1;\n"
	"  cvta.to.global.u64 %rd2, %rd2;\n"
	"  mul.wide.u32 %rd3, %r6, 4;\n"
	"  add.u64 %rd4, %rd2, %rd3;\n"
	"  st.global.f32 [%rd4], %f3;\n"
	"  ret;\n"
	"}\n"
	/* surface (x, y) of 32-bit elements = y * 1000 + x */
	".visible .entry paint(.param .u64 s)\n"
	"{\n"
	"  .reg .u32 %r<8>;\n"
	"  .reg .u64 %rd<2>;\n"
	"  ld.param.u64 %rd1, [s];\n"
	"  mov.u32 %r1, %tid.x;\n"
	"  mov.u32 %r2, %ctaid.x;\n"
	"  mad.lo.u32 %r3, %r2, 1000, %r1;\n"
	"  shl.b32 %r4, %r1, 2;\n"
	"  sust.b.2d.b32.trap [%rd1, {%r4, %r2}], {%r3};\n"
	"  ret;\n"
	"}\n";

static int bad;

static void expect(const char *what, CUresult got, CUresult want)
{
	const char *g = NULL, *w = NULL;

	if (got == want)
		return;
	cuGetErrorName(got, &g);
	cuGetErrorName(want, &w);
	printf("FAIL %s: %s, expected %s\n", what, g ? g : "?", w ? w : "?");
	bad = 1;
}

static void truth(const char *what, int cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		bad = 1;
	}
}

static void wait_line(void)
{
	char line[64];

	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(3);
}

static CUresult array2d(CUarray *a, size_t w, size_t h, CUarray_format f, unsigned ch)
{
	CUDA_ARRAY_DESCRIPTOR d = {.Width = w, .Height = h, .Format = f, .NumChannels = ch};

	return cuArrayCreate(a, &d);
}

static int limit_mode(void)
{
	CUDA_ARRAY3D_DESCRIPTOR big = {.Width = 1024,
				       .Height = 1024,
				       .Depth = 16,
				       .Format = CU_AD_FORMAT_FLOAT,
				       .NumChannels = 1};
	CUDA_ARRAY3D_DESCRIPTOR level0 = {
		.Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	CUmipmappedArray m;
	CUarray a, b;

	printf("ready\n");
	wait_line();
	/* 2048 floats a row (8 KiB, already aligned), 4096 rows: 32 MiB */
	expect("32 MiB array", array2d(&a, 2048, 4096, CU_AD_FORMAT_FLOAT, 1), CUDA_SUCCESS);
	expect("64 MiB more", cuArray3DCreate(&b, &big), CUDA_ERROR_OUT_OF_MEMORY);
	printf("held\n");
	wait_line();
	/* 1024 x 1024 floats and 512 x 512: 5 MiB */
	expect("a mipmapped array", cuMipmappedArrayCreate(&m, &level0, 2), CUDA_SUCCESS);
	printf("mipmapped\n");
	wait_line();
	expect("destroy the mipmapped array", cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
	expect("destroy", cuArrayDestroy(a), CUDA_SUCCESS);
	printf("released\n");
	wait_line();
	return bad;
}

/* 2-D: host (pitched, offset) -> array (offset) -> device (pitched) -> another array -> host */
static void copies_2d(void)
{
	enum { W = 37, H = 23, HP = 50 * 4 };
	CUDA_ARRAY_DESCRIPTOR d;
	CUDA_MEMCPY2D c;
	CUarray a, b;
	CUdeviceptr dev;
	size_t dpitch;
	float *src = calloc(HP / 4 * (H + 2), sizeof(float)), *back = calloc(W * H, sizeof(float));

	for (int i = 0; i < HP / 4 * (H + 2); i++)
		src[i] = (float)i * 0.25f;
	expect("create 2-D", array2d(&a, W + 3, H + 1, CU_AD_FORMAT_FLOAT, 1), CUDA_SUCCESS);
	expect("create 2-D b", array2d(&b, W, H, CU_AD_FORMAT_FLOAT, 1), CUDA_SUCCESS);
	expect("descriptor", cuArrayGetDescriptor(&d, a), CUDA_SUCCESS);
	truth("descriptor says 40x24 float1", d.Width == W + 3 && d.Height == H + 1 &&
						      d.Format == CU_AD_FORMAT_FLOAT &&
						      d.NumChannels == 1);
	expect("pitched device memory", cuMemAllocPitch(&dev, &dpitch, W * 4, H, 4), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = HP;
	c.srcXInBytes = 8;
	c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.dstXInBytes = 12;
	c.dstY = 1;
	c.WidthInBytes = W * 4;
	c.Height = H;
	expect("host to array", cuMemcpy2D(&c), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.srcXInBytes = 12;
	c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = dpitch;
	c.WidthInBytes = W * 4;
	c.Height = H;
	expect("array to device", cuMemcpy2D(&c), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = dpitch;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = b;
	c.WidthInBytes = W * 4;
	c.Height = H;
	expect("device to array", cuMemcpy2DAsync(&c, NULL), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = b;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.WidthInBytes = W * 4;
	c.Height = H;
	expect("array to host", cuMemcpy2D(&c), CUDA_SUCCESS);
	for (int y = 0, ok = 1; y < H && ok; y++)
		for (int x = 0; x < W && ok; x++)
			if (back[y * W + x] != src[(y + 1) * (HP / 4) + x + 2]) {
				printf("FAIL 2-D round trip at (%d, %d): %g, expected %g\n", x, y,
				       back[y * W + x], src[(y + 1) * (HP / 4) + x + 2]);
				bad = ok = 0;
			}
	/* one row too many, one byte too wide: refused */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = b;
	c.WidthInBytes = W * 4;
	c.Height = H + 1;
	expect("rows past the array", cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.Height = 1;
	c.dstXInBytes = 4;
	expect("a row past the array's width", cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	cuMemFree(dev);
	expect("destroy a", cuArrayDestroy(a), CUDA_SUCCESS);
	expect("destroy b", cuArrayDestroy(b), CUDA_SUCCESS);
	free(src);
	free(back);
}

/* 3-D: host -> 3-D array (offset box) -> pitched device -> host; then the 1-D copies */
static void copies_3d(void)
{
	enum { W = 9, H = 7, D = 5 };
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = W + 2,
				      .Height = H + 1,
				      .Depth = D + 1,
				      .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 4},
				got;
	unsigned char *src = malloc(W * H * D * 4), *back = calloc(W * H * D, 4);
	unsigned char line[64], line2[64];
	CUDA_MEMCPY3D c;
	CUdeviceptr dev;
	CUarray a, one;
	size_t pitch = 64, dheight = H + 3;
	CUDA_ARRAY_DESCRIPTOR d1 = {
		.Width = 16, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4};

	for (int i = 0; i < W * H * D * 4; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	expect("create 3-D", cuArray3DCreate(&a, &d3), CUDA_SUCCESS);
	expect("3-D descriptor", cuArray3DGetDescriptor(&got, a), CUDA_SUCCESS);
	truth("3-D descriptor says 11x8x6 uchar4",
	      got.Width == W + 2 && got.Height == H + 1 && got.Depth == D + 1 &&
		      got.Format == CU_AD_FORMAT_UNSIGNED_INT8 && got.NumChannels == 4);
	expect("device box", cuMemAlloc(&dev, pitch * dheight * D), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = W * 4;
	c.srcHeight = H;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.dstXInBytes = 4;
	c.dstY = 1;
	c.dstZ = 1;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("host to 3-D array", cuMemcpy3D(&c), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.srcXInBytes = 4;
	c.srcY = 1;
	c.srcZ = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = pitch;
	c.dstHeight = dheight;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("3-D array to device", cuMemcpy3DAsync(&c, NULL), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = pitch;
	c.srcHeight = dheight;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("device box to host", cuMemcpy3D(&c), CUDA_SUCCESS);
	truth("3-D round trip", memcmp(src, back, W * H * D * 4) == 0);
	/* host -> pitched device box at an offset -> host, no array */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = back;
	c.srcPitch = W * 4;
	c.srcHeight = H;
	c.srcZ = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = pitch;
	c.dstHeight = dheight;
	c.dstXInBytes = 8;
	c.dstY = 2;
	c.WidthInBytes = W * 4 - 8;
	c.Height = H - 1;
	c.Depth = D - 1;
	expect("host to device box", cuMemcpy3D(&c), CUDA_SUCCESS);
	{
		unsigned char *box = calloc(pitch * dheight, D);

		expect("device to host whole", cuMemcpyDtoH(box, dev, pitch * dheight * D),
		       CUDA_SUCCESS);
		for (int z = 0, ok = 1; z < D - 1 && ok; z++)
			for (int y = 0; y < H - 1 && ok; y++)
				if (memcmp(box + (z * dheight + y + 2) * pitch + 8,
					   src + ((z + 1) * H + y) * W * 4, W * 4 - 8)) {
					printf("FAIL host to device box at slice %d row %d\n", z,
					       y);
					bad = ok = 0;
				}
		free(box);
	}
	/* a box one slice too deep: refused */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.dstZ = 2;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("slices past the array", cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
	/* 1-D: host -> array -> device -> array -> array -> host */
	expect("create 1-D", cuArrayCreate(&one, &d1), CUDA_SUCCESS);
	for (int i = 0; i < 64; i++)
		line[i] = (unsigned char)(200 - i);
	memset(line2, 0, sizeof(line2));
	expect("HtoA", cuMemcpyHtoA(one, 8, line, 40), CUDA_SUCCESS);
	expect("AtoD", cuMemcpyAtoD(dev, one, 8, 40), CUDA_SUCCESS);
	expect("DtoA", cuMemcpyDtoA(one, 20, dev, 40), CUDA_SUCCESS);
	expect("AtoH", cuMemcpyAtoH(line2, one, 20, 40), CUDA_SUCCESS);
	truth("1-D round trip", memcmp(line, line2, 40) == 0);
	expect("AtoA", cuMemcpyAtoA(a, 0, one, 20, 40), CUDA_SUCCESS);
	memset(line2, 0, sizeof(line2));
	expect("AtoHAsync", cuMemcpyAtoHAsync(line2, a, 0, 40, NULL), CUDA_SUCCESS);
	expect("synchronize", cuCtxSynchronize(), CUDA_SUCCESS);
	truth("AtoA lands", memcmp(line, line2, 40) == 0);
	expect("HtoA past the end", cuMemcpyHtoA(one, 60, line, 8), CUDA_ERROR_INVALID_VALUE);
	cuMemFree(dev);
	expect("destroy 3-D", cuArrayDestroy(a), CUDA_SUCCESS);
	expect("destroy 1-D", cuArrayDestroy(one), CUDA_SUCCESS);
	free(src);
	free(back);
}

struct tex_case {
	const char *name;
	CUaddress_mode mode;
	CUfilter_mode filter;
	unsigned flags;
	float shift, add;
	int normalized, unorm8;
};

static float texel(const float *v, int w, int h, int x, int y, const struct tex_case *t)
{
	if (t->mode == CU_TR_ADDRESS_MODE_WRAP) {
		x = (x % w + w) % w;
		y = (y % h + h) % h;
	} else if (x < 0 || y < 0 || x >= w || y >= h) {
		if (t->mode == CU_TR_ADDRESS_MODE_BORDER)
			return 0.0f;
		x = x < 0 ? 0 : x >= w ? w - 1 : x;
		y = y < 0 ? 0 : y >= h ? h - 1 : y;
	}
	return v[y * w + x];
}

static void textures(CUmodule mod)
{
	enum { W = 12, H = 9, OW = W + 2, OH = H + 2 };
	static const struct tex_case cases[] = {
		{"clamp, point", CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0.5f, 0, 0,
		 0},
		{"border, point", CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_POINT, 0, 0.5f, 0, 0,
		 0},
		{"wrap, normalized", CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT,
		 CU_TRSF_NORMALIZED_COORDINATES, 0.5f, 1.0f, 1, 0},
		{"clamp, linear", CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 1.0f, 0, 0,
		 0},
		{"8-bit as normalized float", CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0,
		 0.5f, 0, 0, 1},
	};
	float vals[W * H], out[OW * OH];
	unsigned char bytes[W * H];
	CUfunction fetch;
	CUarray af, a8;
	CUdeviceptr dout;

	for (int i = 0; i < W * H; i++) {
		vals[i] = (float)(i % 17) * 1.5f - 3.0f;
		bytes[i] = (unsigned char)(i * 13);
	}
	expect("fetch kernel", cuModuleGetFunction(&fetch, mod, "fetch"), CUDA_SUCCESS);
	expect("float array", array2d(&af, W, H, CU_AD_FORMAT_FLOAT, 1), CUDA_SUCCESS);
	expect("8-bit array", array2d(&a8, W, H, CU_AD_FORMAT_UNSIGNED_INT8, 1), CUDA_SUCCESS);
	{
		CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
				   .srcHost = vals,
				   .srcPitch = W * 4,
				   .dstMemoryType = CU_MEMORYTYPE_ARRAY,
				   .dstArray = af,
				   .WidthInBytes = W * 4,
				   .Height = H};

		expect("fill float 2-D", cuMemcpy2D(&c), CUDA_SUCCESS);
		c.srcHost = bytes;
		c.srcPitch = W;
		c.dstArray = a8;
		c.WidthInBytes = W;
		expect("fill 8-bit 2-D", cuMemcpy2D(&c), CUDA_SUCCESS);
	}
	expect("output", cuMemAlloc(&dout, sizeof(out)), CUDA_SUCCESS);
	if (bad)
		return;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct tex_case *t = &cases[k];
		CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY};
		CUDA_TEXTURE_DESC td, back;
		CUDA_RESOURCE_DESC rback;
		float sx = t->normalized ? 1.0f / W : 1.0f, sy = t->normalized ? 1.0f / H : 1.0f;
		void *params[6];
		CUtexObject tex = 0;
		int wrong = 0;

		res.res.array.hArray = t->unorm8 ? a8 : af;
		memset(&td, 0, sizeof(td));
		td.addressMode[0] = td.addressMode[1] = t->mode;
		td.filterMode = t->filter;
		td.flags = t->flags;
		expect(t->name, cuTexObjectCreate(&tex, &res, &td, NULL), CUDA_SUCCESS);
		if (!tex)
			continue;
		expect("texture's resource", cuTexObjectGetResourceDesc(&rback, tex), CUDA_SUCCESS);
		truth("its resource is the array",
		      rback.resType == CU_RESOURCE_TYPE_ARRAY &&
			      rback.res.array.hArray == res.res.array.hArray);
		expect("texture's description", cuTexObjectGetTextureDesc(&back, tex),
		       CUDA_SUCCESS);
		truth("its description", back.addressMode[0] == t->mode &&
						 back.filterMode == t->filter &&
						 back.flags == t->flags);
		params[0] = &tex;
		params[1] = &dout;
		params[2] = (void *)&t->shift;
		params[3] = &sx;
		params[4] = &sy;
		params[5] = (void *)&t->add;
		cuMemsetD8(dout, 0xff, sizeof(out));
		expect("fetch", cuLaunchKernel(fetch, OH, 1, 1, OW, 1, 1, 0, NULL, params, NULL),
		       CUDA_SUCCESS);
		expect("fetched", cuMemcpyDtoH(out, dout, sizeof(out)), CUDA_SUCCESS);
		for (int y = -1; y <= H && !wrong; y++) {
			for (int x = -1; x <= W && !wrong; x++) {
				float want, got = out[(y + 1) * OW + x + 1];

				if (t->unorm8) {
					int cx = x < 0 ? 0 : x >= W ? W - 1 : x;
					int cy = y < 0 ? 0 : y >= H ? H - 1 : y;

					want = bytes[cy * W + cx] / 255.0f;
				} else if (t->filter == CU_TR_FILTER_MODE_LINEAR) {
					want = 0.5f * (texel(vals, W, H, x, y, t) +
						       texel(vals, W, H, x + 1, y, t));
				} else {
					want = texel(vals, W, H, x, y, t);
				}
				if (fabsf(got - want) > 1e-2f * (1.0f + fabsf(want))) {
					printf("FAIL %s at (%d, %d): %g, expected %g\n", t->name, x,
					       y, got, want);
					bad = wrong = 1;
				}
			}
		}
		expect("destroy texture", cuTexObjectDestroy(tex), CUDA_SUCCESS);
	}
	cuMemFree(dout);
	cuArrayDestroy(af);
	cuArrayDestroy(a8);
}

static void surfaces(CUmodule mod)
{
	enum { W = 20, H = 6 };
	CUDA_ARRAY3D_DESCRIPTOR d = {.Width = W,
				     .Height = H,
				     .Format = CU_AD_FORMAT_UNSIGNED_INT32,
				     .NumChannels = 1,
				     .Flags = CUDA_ARRAY3D_SURFACE_LDST};
	CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_ARRAY}, back;
	unsigned got[W * H];
	CUsurfObject s = 0;
	CUfunction paint;
	CUarray a;
	void *params[1] = {&s};
	CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_ARRAY,
			   .dstMemoryType = CU_MEMORYTYPE_HOST,
			   .dstHost = got,
			   .WidthInBytes = W * 4,
			   .Height = H};

	expect("paint kernel", cuModuleGetFunction(&paint, mod, "paint"), CUDA_SUCCESS);
	expect("surface array", cuArray3DCreate(&a, &d), CUDA_SUCCESS);
	res.res.array.hArray = a;
	expect("surface", cuSurfObjectCreate(&s, &res), CUDA_SUCCESS);
	if (!s)
		return;
	expect("surface's resource", cuSurfObjectGetResourceDesc(&back, s), CUDA_SUCCESS);
	truth("its resource is the array",
	      back.resType == CU_RESOURCE_TYPE_ARRAY && back.res.array.hArray == a);
	expect("paint", cuLaunchKernel(paint, H, 1, 1, W, 1, 1, 0, NULL, params, NULL),
	       CUDA_SUCCESS);
	c.srcArray = a;
	expect("painted", cuMemcpy2D(&c), CUDA_SUCCESS);
	for (int i = 0, ok = 1; i < W * H && ok; i++)
		if (got[i] != (unsigned)(i / W * 1000 + i % W)) {
			printf("FAIL surface at %d: %u\n", i, got[i]);
			bad = ok = 0;
		}
	expect("destroy surface", cuSurfObjectDestroy(s), CUDA_SUCCESS);
	expect("destroy its array", cuArrayDestroy(a), CUDA_SUCCESS);
}

static void mipmaps(void)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 16,
				     .Height = 12,
				     .Format = CU_AD_FORMAT_FLOAT,
				     .NumChannels = 1},
				got;
	CUDA_RESOURCE_DESC res = {.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY}, back;
	CUDA_TEXTURE_DESC td;
	float in[8 * 6], out[8 * 6];
	CUmipmappedArray m;
	CUtexObject t = 0;
	CUarray l0, l1, l1again;
	CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
			   .srcHost = in,
			   .srcPitch = 8 * 4,
			   .dstMemoryType = CU_MEMORYTYPE_ARRAY,
			   .WidthInBytes = 8 * 4,
			   .Height = 6};

	for (int i = 0; i < 8 * 6; i++)
		in[i] = (float)i + 0.5f;
	expect("mipmapped array", cuMipmappedArrayCreate(&m, &d, 3), CUDA_SUCCESS);
	expect("level 0", cuMipmappedArrayGetLevel(&l0, m, 0), CUDA_SUCCESS);
	expect("level 1", cuMipmappedArrayGetLevel(&l1, m, 1), CUDA_SUCCESS);
	expect("level 1 again", cuMipmappedArrayGetLevel(&l1again, m, 1), CUDA_SUCCESS);
	truth("a level is one array", l1 == l1again && l0 != l1);
	expect("level 3 of 3", cuMipmappedArrayGetLevel(&l1again, m, 3), CUDA_ERROR_INVALID_VALUE);
	expect("level 1's extents", cuArray3DGetDescriptor(&got, l1), CUDA_SUCCESS);
	truth("level 1 is 8x6", got.Width == 8 && got.Height == 6);
	c.dstArray = l1;
	expect("into level 1", cuMemcpy2D(&c), CUDA_SUCCESS);
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = l1;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = out;
	c.dstPitch = 8 * 4;
	memset(out, 0, sizeof(out));
	expect("out of level 1", cuMemcpy2D(&c), CUDA_SUCCESS);
	truth("level 1 round trip", memcmp(in, out, sizeof(in)) == 0);
	res.res.mipmap.hMipmappedArray = m;
	memset(&td, 0, sizeof(td));
	td.filterMode = CU_TR_FILTER_MODE_POINT;
	td.mipmapFilterMode = CU_TR_FILTER_MODE_POINT;
	td.maxMipmapLevelClamp = 2.0f;
	expect("texture over it", cuTexObjectCreate(&t, &res, &td, NULL), CUDA_SUCCESS);
	expect("its resource", cuTexObjectGetResourceDesc(&back, t), CUDA_SUCCESS);
	truth("its resource is the mipmapped array",
	      back.resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY &&
		      back.res.mipmap.hMipmappedArray == m);
	expect("destroy the texture", cuTexObjectDestroy(t), CUDA_SUCCESS);
	expect("destroy it", cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
	if (getenv("ARRAYS_POOL"))
		expect("a level once it is gone", cuArray3DGetDescriptor(&got, l1),
		       CUDA_ERROR_INVALID_HANDLE);
}

/* A 3-D box of 3 MiB to and from the host: through the pool it travels in 1 MiB chunks,
 * which end inside rows and slices of 1000 bytes by 700 rows. */
static void copies_big(void)
{
	enum { W = 250, H = 700, D = 5 };
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = W,
				      .Height = H,
				      .Depth = D,
				      .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 4};
	size_t n = (size_t)W * 4 * H * D;
	unsigned char *src = malloc(n), *back = calloc(n, 1);
	CUDA_MEMCPY3D c;
	CUarray a;

	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 13 + i / 997);
	expect("create 3 MiB 3-D", cuArray3DCreate(&a, &d3), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("3 MiB host to array", cuMemcpy3D(&c), CUDA_SUCCESS);
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	expect("3 MiB array to host", cuMemcpy3D(&c), CUDA_SUCCESS);
	truth("3 MiB round trip", memcmp(src, back, n) == 0);
	expect("destroy 3 MiB", cuArrayDestroy(a), CUDA_SUCCESS);
	free(src);
	free(back);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
		return 2;
	if (argc > 1 && strcmp(argv[1], "limit") == 0)
		return limit_mode();
	if (getenv("ARRAYS_POOL")) {
		/* what the pool does not forward, its devices do not claim */
		static const CUdevice_attribute absent[] = {
			CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
			CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
		};
		CUDA_ARRAY3D_DESCRIPTOR sd = {.Width = 64,
					      .Height = 64,
					      .Format = CU_AD_FORMAT_FLOAT,
					      .NumChannels = 1,
					      .Flags = CUDA_ARRAY3D_SPARSE};
		CUarray sp;
		int v;

		for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
			v = -1;
			expect("attribute", cuDeviceGetAttribute(&v, absent[i], dev), CUDA_SUCCESS);
			if (v != 0) {
				printf("FAIL attribute %d is %d through the pool\n", absent[i], v);
				bad = 1;
			}
		}
		expect("a sparse array", cuArray3DCreate(&sp, &sd), CUDA_ERROR_NOT_SUPPORTED);
		v = 0;
		expect("mipmapped 2-D width",
		       cuDeviceGetAttribute(
			       &v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, dev),
		       CUDA_SUCCESS);
		truth("mipmapped arrays claimed (they are forwarded)", v > 0);
		v = 0;
		expect("2-D texture width",
		       cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, dev),
		       CUDA_SUCCESS);
		truth("2-D textures claimed", v > 0);
	}
	copies_2d();
	copies_3d();
	copies_big();
	mipmaps();
	expect("module", cuModuleLoadData(&mod, tex_ptx), CUDA_SUCCESS);
	if (!bad) {
		textures(mod);
		surfaces(mod);
	}
	if (bad)
		return 1;
	printf("arrays: ok\n");
	return 0;
}
