/* ops_tex.c -- texture and surface instructions: tex, tld4, txq, suld.b, sust.b, suq. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ops.h"

/*
 * Each instruction names its object by a 64-bit handle register (a texture or surface
 * object, array.c); the handler looks the object up at every execution (a copy under the
 * table's read lock), so a destroyed or made-up handle faults the launch
 * (CUDA_ERROR_ILLEGAL_ADDRESS) rather than reading freed memory. Texels are read through
 * the same checked translation as ld.global, in the context of the launch.
 *
 * Sampling follows the CUDA C++ Programming Guide's "Texture Fetching" appendix:
 *   - normalized coordinates are scaled by the size; wrap (x - floor(x)) and mirror apply to
 *     them, and only to them: with unnormalized coordinates wrap and mirror act as clamp;
 *   - point filtering reads texel floor(x);
 *   - linear filtering reads texels floor(xB) and floor(xB) + 1 with xB = x - 0.5 and weight
 *     a = frac(xB) held, as the hardware holds it, in 9-bit fixed point with 8 fractional
 *     bits: a is rounded to the nearest multiple of 1/256 (1.0 included). The weighted sum
 *     is then taken in f32: (1-a)T0 + aT1, and per dimension for 2-D and 3-D;
 *   - each texel index is addressed on its own: clamp to [0, N-1], wrap modulo N, mirror
 *     with period 2N, border reads the border colour for an index outside [0, N-1];
 *   - 8- and 16-bit integer texels read as normalized floats unless the object reads
 *     integers: unsigned to [0, 1] (v / 255, v / 65535), signed to [-1, 1]
 *     (max(v / 127, -1), max(v / 32767, -1)); 32-bit integers always read as integers;
 *     half texels read as f32. A missing channel reads 0, a missing alpha 1 (1.0 for float
 *     results).
 * A layer index is clamped to the layers there are. A mipmapped texture picks its level(s)
 * from tex.level's level of detail or tex.grad's gradients (mip_sample).
 */

enum { K_TEX = 1, K_TLD4, K_TXQ, K_SULD, K_SUST, K_SUQ };
enum { M_TRAP = 0, M_CLAMP, M_ZERO };

/* aux: geometry | kind << 4 | components << 8 | component bytes << 12 | mode << 16 |
 * query or gather component << 20; flags bit 0: integer coordinates */
#define AUX_GEOM(a) ((a)&0xf)
#define AUX_KIND(a) (((a) >> 4) & 0xf)
#define AUX_NV(a) (((a) >> 8) & 0xf)
#define AUX_CSZ(a) (((a) >> 12) & 0xf)
#define AUX_MODE(a) (((a) >> 16) & 0xf)
#define AUX_Q(a) (((a) >> 20) & 0xff)
#define F_INTC 1
#define F_LEVEL 2 /* tex.level: the level of detail in slot imm */
#define F_GRAD 4  /* tex.grad: the gradients in consecutive slots from imm */

/* txq / suq queries */
enum {
	Q_WIDTH = 1,
	Q_HEIGHT,
	Q_DEPTH,
	Q_CHTYPE,
	Q_CHORDER,
	Q_NORM,
	Q_FILTER,
	Q_ADDR0,
	Q_ADDR1,
	Q_ADDR2,
	Q_ARRAY,
	Q_MIPS,
};

static const char *geom_name(unsigned g)
{
	static const char *const n[] = {"?",   "buffer", "1d",	 "2d",	 "3d",
					"a1d", "a2d",	 "cube", "acube"};

	return g < sizeof(n) / sizeof(n[0]) ? n[g] : "?";
}

static int no_object(struct sg_thread *t, uint64_t h, bool surface)
{
	return sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS, "0x%llx is not a live %s object",
			(unsigned long long)h, surface ? "surface" : "texture");
}

static int wrong_geom(struct sg_thread *t, const struct sg_texref *tr, unsigned g)
{
	return sg_fault(t, CUDA_ERROR_ILLEGAL_INSTRUCTION, "a %s instruction on a %s object",
			geom_name(g), geom_name(tr->geom));
}

/* The instruction's geometry fits the object's (a 1-D one reads buffers and 1-D arrays). */
static bool geom_fits(const struct sg_texref *tr, unsigned g, bool intc)
{
	if (g == SG_TG_CUBE || g == SG_TG_ACUBE)
		return tr->geom == g && !intc;
	if (g == SG_TG_1D)
		return tr->geom == SG_TG_1D || (tr->geom == SG_TG_BUF && intc);
	return tr->geom == g;
}

/* ---- texels ---- */

struct texel {
	union {
		float f[4];
		uint32_t u[4];
	};
};

static float unorm(uint32_t v, uint32_t max)
{
	return (float)v / (float)max;
}

static float snorm(int32_t v, int32_t max)
{
	float f = (float)v / (float)max;

	return f < -1.0f ? -1.0f : f;
}

/* Whether the object's texels read as floats (else as integers). */
static bool reads_float(const struct sg_texref *tr)
{
	return tr->fmt == CU_AD_FORMAT_FLOAT || tr->fmt == CU_AD_FORMAT_HALF || !tr->read_int;
}

static void convert(const struct sg_texref *tr, const uint8_t *p, struct texel *out)
{
	bool fl = reads_float(tr);

	for (unsigned c = 0; c < 4; c++) {
		uint32_t u = 0;
		float f = 0;

		if (c >= tr->nch) {
			if (fl)
				out->f[c] = c == 3 ? 1.0f : 0.0f;
			else
				out->u[c] = c == 3 ? 1 : 0;
			continue;
		}
		switch (tr->fmt) {
		case CU_AD_FORMAT_UNSIGNED_INT8:
			u = p[c];
			f = unorm(u, 255);
			break;
		case CU_AD_FORMAT_SIGNED_INT8:
			u = (uint32_t)(int32_t)(int8_t)p[c];
			f = snorm((int8_t)p[c], 127);
			break;
		case CU_AD_FORMAT_UNSIGNED_INT16: {
			uint16_t v;

			memcpy(&v, p + 2 * c, 2);
			u = v;
			f = unorm(v, 65535);
			break;
		}
		case CU_AD_FORMAT_SIGNED_INT16: {
			int16_t v;

			memcpy(&v, p + 2 * c, 2);
			u = (uint32_t)(int32_t)v;
			f = snorm(v, 32767);
			break;
		}
		case CU_AD_FORMAT_HALF: {
			uint16_t v;

			memcpy(&v, p + 2 * c, 2);
			f = sg_f16_to_f32(v);
			break;
		}
		case CU_AD_FORMAT_FLOAT:
			memcpy(&f, p + 4 * c, 4);
			break;
		default: /* 32-bit integers */
			memcpy(&u, p + 4 * c, 4);
			break;
		}
		if (fl)
			out->f[c] = f;
		else
			out->u[c] = u;
	}
}

/* An index along a dimension of n texels under an address mode; false: outside (border). */
static bool address(int64_t i, uint64_t n, unsigned mode, bool norm, uint64_t *out)
{
	int64_t m = (int64_t)n;

	if (!norm && (mode == CU_TR_ADDRESS_MODE_WRAP || mode == CU_TR_ADDRESS_MODE_MIRROR))
		mode = CU_TR_ADDRESS_MODE_CLAMP;
	switch (mode) {
	case CU_TR_ADDRESS_MODE_WRAP:
		i %= m;
		if (i < 0)
			i += m;
		break;
	case CU_TR_ADDRESS_MODE_MIRROR:
		i %= 2 * m;
		if (i < 0)
			i += 2 * m;
		if (i >= m)
			i = 2 * m - 1 - i;
		break;
	case CU_TR_ADDRESS_MODE_BORDER:
		if (i < 0 || i >= m)
			return false;
		break;
	default:
		i = i < 0 ? 0 : i >= m ? m - 1 : i;
		break;
	}
	*out = (uint64_t)i;
	return true;
}

/* The texel at integer coordinates (i, j, k) and layer; false after a fault. */
static bool texel_at(struct sg_thread *t, const struct sg_texref *tr, const int64_t *ijk,
		     unsigned dims, uint32_t layer, struct texel *out)
{
	uint64_t n[3] = {tr->w, tr->h, tr->d}, x[3] = {0, 0, 0};
	uint64_t addr;
	const uint8_t *p;

	for (unsigned k = 0; k < dims; k++) {
		if (!address(ijk[k], n[k], tr->addr[k], tr->norm, &x[k])) {
			if (reads_float(tr))
				memcpy(out->f, tr->border, sizeof(out->f));
			else
				memcpy(out->u, tr->border, sizeof(out->u));
			return true;
		}
	}
	if (tr->geom == SG_TG_A1D || tr->geom == SG_TG_A2D || tr->geom == SG_TG_CUBE ||
	    tr->geom == SG_TG_ACUBE)
		x[2] = layer;
	addr = tr->base + x[2] * tr->slice + x[1] * tr->pitch + x[0] * tr->esize;
	p = sg_addr(t, SG_SP_GLOBAL, addr, tr->esize, false);
	if (p == NULL)
		return false;
	convert(tr, p, out);
	return true;
}

/* A float coordinate's integer part, safely (NaN reads 0; huge values are clamped). */
static int64_t ifloor(float x)
{
	if (!(x == x))
		return 0;
	if (x < -1e15f)
		return -1000000000000000ll;
	if (x > 1e15f)
		return 1000000000000000ll;
	return (int64_t)floorf(x);
}

/* Scaled coordinate along a dimension of n texels: wrap and mirror on normalized ones. */
static float scaled(float x, uint64_t n, unsigned mode, bool norm)
{
	if (!norm)
		return x;
	if (mode == CU_TR_ADDRESS_MODE_WRAP) {
		x = x - floorf(x);
	} else if (mode == CU_TR_ADDRESS_MODE_MIRROR) {
		float fl = floorf(x);

		x = x - fl;
		if (fmodf(fl, 2.0f) != 0.0f)
			x = 1.0f - x;
	}
	return x * (float)n;
}

/* The linear filter's weight: frac(xB) in 9-bit fixed point, 8 fractional bits. */
static float weight(float frac)
{
	return rintf(frac * 256.0f) / 256.0f;
}

/* Samples at float coordinates c[dims]; false after a fault. */
static bool sample(struct sg_thread *t, const struct sg_texref *tr, const float *c, unsigned dims,
		   uint32_t layer, struct texel *out)
{
	uint64_t n[3] = {tr->w, tr->h, tr->d};
	int64_t i0[3] = {0, 0, 0};
	float a[3] = {0, 0, 0};

	if (tr->filter != CU_TR_FILTER_MODE_LINEAR) {
		for (unsigned k = 0; k < dims; k++)
			i0[k] = ifloor(scaled(c[k], n[k], tr->addr[k], tr->norm));
		return texel_at(t, tr, i0, dims, layer, out);
	}
	for (unsigned k = 0; k < dims; k++) {
		float xb = scaled(c[k], n[k], tr->addr[k], tr->norm) - 0.5f;

		i0[k] = ifloor(xb);
		a[k] = (xb == xb && fabsf(xb) < 1e15f) ? weight(xb - floorf(xb)) : 0.0f;
	}
	memset(out, 0, sizeof(*out));
	for (unsigned corner = 0; corner < (1u << dims); corner++) {
		int64_t ijk[3];
		float w = 1.0f;
		struct texel tx;

		for (unsigned k = 0; k < dims; k++) {
			bool hi = (corner >> k) & 1;

			ijk[k] = i0[k] + hi;
			w *= hi ? a[k] : 1.0f - a[k];
		}
		if (!texel_at(t, tr, ijk, dims, layer, &tx))
			return false;
		for (unsigned ch = 0; ch < 4; ch++)
			out->f[ch] += w * tx.f[ch];
	}
	return true;
}

/*
 * The face and face coordinates of direction (x, y, z), as the programming guide's cubemap
 * table gives them: the major axis m picks the face, (s/|m| + 1)/2 and (t/|m| + 1)/2 are the
 * normalized coordinates on it.
 */
static void cube_face(float x, float y, float z, uint32_t *face, float *c)
{
	float ax = fabsf(x), ay = fabsf(y), az = fabsf(z), m, s, t;

	if (ax >= ay && ax >= az) {
		*face = x >= 0 ? 0 : 1;
		m = ax;
		s = x >= 0 ? -z : z;
		t = -y;
	} else if (ay >= az) {
		*face = y >= 0 ? 2 : 3;
		m = ay;
		s = x;
		t = y >= 0 ? z : -z;
	} else {
		*face = z >= 0 ? 4 : 5;
		m = az;
		s = z >= 0 ? x : -x;
		t = -y;
	}
	c[0] = m > 0 ? (s / m + 1.0f) * 0.5f : 0.5f;
	c[1] = m > 0 ? (t / m + 1.0f) * 0.5f : 0.5f;
}

static uint32_t layer_of(const struct sg_texref *tr, uint64_t v)
{
	int32_t l = (int32_t)v;

	return l < 0 ? 0 : (uint32_t)l >= tr->d ? tr->d - 1 : (uint32_t)l;
}

static unsigned geom_dims(unsigned g)
{
	return g == SG_TG_3D ? 3 : g == SG_TG_2D || g == SG_TG_A2D ? 2 : 1;
}

static void put4(struct sg_thread *t, const struct sg_insn *in, const uint32_t *v)
{
	for (unsigned i = 0; i < in->nd; i++)
		t->r[in->d[i]] = v[i];
}

/* ---- mipmaps ---- */

/* The level of detail: tex.level's operand, tex.grad's from the gradients, else 0. */
static float lod_of(const struct sg_thread *t, const struct sg_insn *in, const struct sg_texref *tr,
		    unsigned dims)
{
	if (in->flags & F_LEVEL)
		return sg_f32(t->r[in->imm]);
	if (in->flags & F_GRAD) {
		const uint64_t *gr = &t->r[in->imm]; /* dims of d/dx, then dims of d/dy */
		float n[3] = {(float)tr->w, (float)tr->h, (float)tr->d}, px = 0, py = 0;

		for (unsigned k = 0; k < dims; k++) {
			float s = tr->norm ? n[k] : 1.0f;
			float gx = sg_f32(gr[k]) * s, gy = sg_f32(gr[dims + k]) * s;

			px += gx * gx;
			py += gy * gy;
		}
		return 0.5f * log2f(px > py ? px : py); /* log2 of the longer footprint */
	}
	return 0.0f;
}

static void use_level(struct sg_texref *tr, unsigned l)
{
	const struct sg_texlevel *v = &tr->lv[l];

	tr->base = v->base;
	tr->w = v->w;
	tr->h = v->h;
	tr->d = v->d;
	tr->pitch = v->pitch;
	tr->slice = (uint64_t)v->pitch * v->h;
}

/*
 * A mipmapped texture: level of detail plus the bias, clamped to the descriptor's
 * [min, max] and the levels there are; point mipmap filtering takes the nearest level (0 up
 * to 0.5), linear blends the two around it by the fraction (in f32, not quantized).
 */
static int mip_sample(struct sg_thread *t, const struct sg_insn *in, struct sg_texref *tr,
		      const float *c, unsigned dims, uint32_t layer)
{
	float lod = lod_of(t, in, tr, dims) + tr->lod_bias, top = (float)(tr->nlevels - 1), f = 0;
	struct texel a, b;
	unsigned l0;

	if (lod > tr->lod_max)
		lod = tr->lod_max;
	if (!(lod >= tr->lod_min))
		lod = tr->lod_min; /* NaN too */
	lod = lod < 0 ? 0 : lod > top ? top : lod;
	if (!(lod == lod))
		lod = 0;
	if (tr->mipfilter == CU_TR_FILTER_MODE_LINEAR) {
		l0 = (unsigned)floorf(lod);
		f = lod - (float)l0;
	} else {
		l0 = lod <= 0.5f ? 0 : (unsigned)ceilf(lod + 0.5f) - 1;
	}
	if (l0 >= tr->nlevels)
		l0 = tr->nlevels - 1;
	use_level(tr, l0);
	if (!sample(t, tr, c, dims, layer, &a))
		return SG_STOP_FAULT;
	if (f > 0 && l0 + 1 < tr->nlevels) {
		use_level(tr, l0 + 1);
		if (!sample(t, tr, c, dims, layer, &b))
			return SG_STOP_FAULT;
		for (unsigned ch = 0; ch < 4; ch++)
			a.f[ch] = (1.0f - f) * a.f[ch] + f * b.f[ch];
	}
	put4(t, in, a.u);
	return 0;
}

OP(op_tex)
{
	unsigned g = AUX_GEOM(in->aux), dims = geom_dims(g);
	bool intc = in->flags & F_INTC, layered = g == SG_TG_A1D || g == SG_TG_A2D;
	struct sg_texref tr;
	struct texel out;
	uint32_t layer = 0;
	unsigned first = layered ? 2 : 1;

	if (!sg_tex_lookup(A(0), &tr) || tr.surface)
		return no_object(t, A(0), false);
	if (!geom_fits(&tr, g, intc))
		return wrong_geom(t, &tr, g);
	if (layered)
		layer = layer_of(&tr, A(1));
	if (g == SG_TG_CUBE || g == SG_TG_ACUBE) {
		float c[2];

		if (g == SG_TG_CUBE) {
			cube_face(sg_f32(A(1)), sg_f32(A(2)), sg_f32(A(3)), &layer, c);
		} else {
			/* {cubemap, x, y, z}: z in slot imm; the cubemap index is clamped */
			int32_t l = (int32_t)A(1), top = (int32_t)(tr.d / 6) - 1;

			cube_face(sg_f32(A(2)), sg_f32(A(3)), sg_f32(t->r[in->imm]), &layer, c);
			layer += 6 * (uint32_t)(l < 0 ? 0 : l > top ? top : l);
		}
		/* each face a 2-D texture in normalized coordinates, clamped at its edges */
		tr.norm = true;
		tr.addr[0] = tr.addr[1] = CU_TR_ADDRESS_MODE_CLAMP;
		if (!sample(t, &tr, c, 2, layer, &out))
			return SG_STOP_FAULT;
	} else if (intc) {
		int64_t ijk[3];

		for (unsigned k = 0; k < dims; k++)
			ijk[k] = (int32_t)A(first + k);
		if (tr.geom == SG_TG_BUF) {
			/* tex1Dfetch: out of range reads zeros */
			if (ijk[0] < 0 || (uint64_t)ijk[0] >= tr.w) {
				memset(&out, 0, sizeof(out));
			} else {
				const uint8_t *p = sg_addr(t, SG_SP_GLOBAL,
							   tr.base + (uint64_t)ijk[0] * tr.esize,
							   tr.esize, false);

				if (p == NULL)
					return SG_STOP_FAULT;
				convert(&tr, p, &out);
			}
		} else {
			tr.norm = false;
			if (!texel_at(t, &tr, ijk, dims, layer, &out))
				return SG_STOP_FAULT;
		}
	} else {
		float c[3];

		for (unsigned k = 0; k < dims; k++)
			c[k] = sg_f32(A(first + k));
		if (tr.nlevels > 1)
			return mip_sample(t, in, &tr, c, dims, layer);
		if (!sample(t, &tr, c, dims, layer, &out))
			return SG_STOP_FAULT;
	}
	put4(t, in, out.u);
	return 0;
}

OP(op_tld4)
{
	unsigned comp = AUX_Q(in->aux);
	static const int corner[4][2] = {{0, 1}, {1, 1}, {1, 0}, {0, 0}};
	struct sg_texref tr;
	int64_t i0[2];
	uint32_t v[4];

	if (!sg_tex_lookup(A(0), &tr) || tr.surface)
		return no_object(t, A(0), false);
	if (tr.geom != SG_TG_2D)
		return wrong_geom(t, &tr, SG_TG_2D);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t n = k ? tr.h : tr.w;

		i0[k] = ifloor(scaled(sg_f32(A(1 + k)), n, tr.addr[k], tr.norm) - 0.5f);
	}
	for (unsigned q = 0; q < 4; q++) {
		int64_t ij[2] = {i0[0] + corner[q][0], i0[1] + corner[q][1]};
		struct texel tx;

		if (!texel_at(t, &tr, ij, 2, 0, &tx))
			return SG_STOP_FAULT;
		v[q] = tx.u[comp];
	}
	put4(t, in, v);
	return 0;
}

/* OpenCL's cl_channel_type and cl_channel_order, which the PTX ISA's txq/suq answer. */
static uint32_t cl_type(const struct sg_texref *tr)
{
	bool i = !reads_float(tr) || tr->surface;

	switch (tr->fmt) {
	case CU_AD_FORMAT_SIGNED_INT8:
		return i ? 0x10D7 : 0x10D0;
	case CU_AD_FORMAT_SIGNED_INT16:
		return i ? 0x10D8 : 0x10D1;
	case CU_AD_FORMAT_UNSIGNED_INT8:
		return i ? 0x10DA : 0x10D2;
	case CU_AD_FORMAT_UNSIGNED_INT16:
		return i ? 0x10DB : 0x10D3;
	case CU_AD_FORMAT_SIGNED_INT32:
		return 0x10D9;
	case CU_AD_FORMAT_UNSIGNED_INT32:
		return 0x10DC;
	case CU_AD_FORMAT_HALF:
		return 0x10DD;
	default:
		return 0x10DE;
	}
}

/* PTX's address-mode numbers: wrap 0, mirror 1, clamp_ogl 2, clamp_to_edge 3, border 4. */
static uint32_t ptx_addr(unsigned m)
{
	switch (m) {
	case CU_TR_ADDRESS_MODE_WRAP:
		return 0;
	case CU_TR_ADDRESS_MODE_MIRROR:
		return 1;
	case CU_TR_ADDRESS_MODE_BORDER:
		return 4;
	default:
		return 3;
	}
}

OP(op_query)
{
	bool surface = AUX_KIND(in->aux) == K_SUQ;
	bool layered;
	struct sg_texref tr;
	uint32_t v = 0;

	if (!sg_tex_lookup(A(0), &tr) || tr.surface != surface)
		return no_object(t, A(0), surface);
	layered = tr.geom == SG_TG_A1D || tr.geom == SG_TG_A2D;
	switch (AUX_Q(in->aux)) {
	case Q_WIDTH:
		v = (uint32_t)tr.w;
		break;
	case Q_HEIGHT:
		v = tr.geom == SG_TG_A1D ? 1 : tr.h;
		break;
	case Q_DEPTH:
		v = tr.geom == SG_TG_3D ? tr.d : 1;
		break;
	case Q_CHTYPE:
		v = cl_type(&tr);
		break;
	case Q_CHORDER:
		v = tr.nch == 1 ? 0x10B0 : tr.nch == 2 ? 0x10B2 : 0x10B5;
		break;
	case Q_NORM:
		v = tr.norm;
		break;
	case Q_FILTER:
		v = tr.filter == CU_TR_FILTER_MODE_LINEAR;
		break;
	case Q_ADDR0:
	case Q_ADDR1:
	case Q_ADDR2:
		v = ptx_addr(tr.addr[AUX_Q(in->aux) - Q_ADDR0]);
		break;
	case Q_ARRAY:
		v = layered ? tr.d : tr.geom == SG_TG_ACUBE ? tr.d / 6 : 1;
		break;
	default: /* Q_MIPS */
		v = tr.nlevels;
		break;
	}
	DST = v;
	return 0;
}

/*
 * A surface access: the byte offset of its first component, or false (*skip for .zero
 * outside, else after a fault). Coordinates: x in bytes, y and z in rows and slices.
 */
static bool surf_at(struct sg_thread *t, const struct sg_insn *in, const struct sg_texref *tr,
		    uint64_t *addr, bool *skip)
{
	unsigned g = AUX_GEOM(in->aux), dims = geom_dims(g), mode = AUX_MODE(in->aux);
	unsigned acc = AUX_NV(in->aux) * AUX_CSZ(in->aux);
	bool layered = g == SG_TG_A1D || g == SG_TG_A2D;
	unsigned first = layered ? 2 : 1;
	int64_t c[4] = {0, 0, 0, 0}, lim[4];
	unsigned nc = dims + (layered ? 1 : 0);

	*skip = false;
	if (tr->w * tr->esize < acc) {
		sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS,
			 "a surface access of %u bytes to rows of %llu", acc,
			 (unsigned long long)(tr->w * tr->esize));
		return false;
	}
	for (unsigned k = 0; k < dims; k++)
		c[k] = (int32_t)A(first + k);
	if (layered)
		c[dims] = (int32_t)A(1);
	lim[0] = (int64_t)(tr->w * tr->esize - acc);
	lim[1] = (int64_t)tr->h - 1;
	lim[2] = (int64_t)tr->d - 1;
	if (layered)
		lim[dims] = (int64_t)tr->d - 1;
	if (c[0] % AUX_CSZ(in->aux)) {
		sg_fault(t, CUDA_ERROR_MISALIGNED_ADDRESS,
			 "surface x %lld (bytes) is not a multiple of %u", (long long)c[0],
			 AUX_CSZ(in->aux));
		return false;
	}
	for (unsigned k = 0; k < nc; k++) {
		if (c[k] >= 0 && c[k] <= lim[k])
			continue;
		if (mode == M_ZERO) {
			*skip = true;
			return false;
		}
		if (mode == M_TRAP) {
			sg_fault(t, CUDA_ERROR_ILLEGAL_ADDRESS,
				 "surface coordinate %u is %lld, outside [0, %lld]", k,
				 (long long)c[k], (long long)lim[k]);
			return false;
		}
		c[k] = c[k] < 0 ? 0 : lim[k];
		if (k == 0)
			c[0] -= c[0] % AUX_CSZ(in->aux);
	}
	if (layered) {
		c[2] = c[dims];
		if (dims == 1)
			c[1] = 0;
	}
	*addr = tr->base + (uint64_t)c[2] * tr->slice + (uint64_t)c[1] * tr->pitch + (uint64_t)c[0];
	return true;
}

static bool surf_object(struct sg_thread *t, const struct sg_insn *in, struct sg_texref *tr)
{
	if (!sg_tex_lookup(A(0), tr) || !tr->surface) {
		no_object(t, A(0), true);
		return false;
	}
	if (tr->geom != AUX_GEOM(in->aux) &&
	    !((tr->geom == SG_TG_CUBE || tr->geom == SG_TG_ACUBE) &&
	      AUX_GEOM(in->aux) == SG_TG_A2D)) {
		wrong_geom(t, tr, AUX_GEOM(in->aux));
		return false;
	}
	return true;
}

OP(op_suld)
{
	unsigned nv = AUX_NV(in->aux), csz = AUX_CSZ(in->aux);
	struct sg_texref tr;
	uint64_t addr;
	bool skip;

	if (!surf_object(t, in, &tr))
		return SG_STOP_FAULT;
	if (!surf_at(t, in, &tr, &addr, &skip)) {
		if (!skip)
			return SG_STOP_FAULT;
		for (unsigned i = 0; i < nv; i++)
			t->r[in->d[i]] = 0;
		return 0;
	}
	for (unsigned i = 0; i < nv; i++) {
		const uint8_t *p = sg_addr(t, SG_SP_GLOBAL, addr + i * csz, csz, false);
		uint64_t v = 0;

		if (p == NULL)
			return SG_STOP_FAULT;
		memcpy(&v, p, csz);
		t->r[in->d[i]] = v;
	}
	return 0;
}

OP(op_sust)
{
	unsigned nv = AUX_NV(in->aux), csz = AUX_CSZ(in->aux);
	struct sg_texref tr;
	uint64_t addr;
	bool skip;

	if (!surf_object(t, in, &tr))
		return SG_STOP_FAULT;
	if (!surf_at(t, in, &tr, &addr, &skip))
		return skip ? 0 : SG_STOP_FAULT;
	for (unsigned i = 0; i < nv; i++) {
		uint8_t *p = sg_addr(t, SG_SP_GLOBAL, addr + i * csz, csz, true);
		uint64_t v = t->r[in->d[i]];

		if (p == NULL)
			return SG_STOP_FAULT;
		memcpy(p, &v, csz);
	}
	return 0;
}

/* ---- lowering ---- */

static unsigned parse_geom(const struct sg_words *ws, int i)
{
	static const char *const n[] = {"1d", "2d", "3d", "a1d", "a2d", "cube", "acube"};
	static const unsigned g[] = {SG_TG_1D,	SG_TG_2D,   SG_TG_3D,	SG_TG_A1D,
				     SG_TG_A2D, SG_TG_CUBE, SG_TG_ACUBE};

	for (unsigned k = 0; k < 7; k++)
		if (sg_word_is(ws, i, n[k]))
			return g[k];
	return 0;
}

static int bad(struct sg_lower *L, const struct sg_opc *o)
{
	return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
}

/* [handle, {coords}]: the handle into s[0], `want` coordinates into s[1..] */
static int lower_target(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *a,
			unsigned want, unsigned have_min, int ctype, bool layered,
			struct sg_insn *in)
{
	if (a->kind != SG_O_ADDR || a->off)
		return bad(L, o);
	if (a->base_kind != SG_O_REG)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "%s: texture and surface references (only objects: a "
				      "handle in a register)",
				      o->text);
	in->s[0] = (uint32_t)a->slot;
	if ((unsigned)a->nvec < have_min || (unsigned)a->nvec > 4)
		return bad(L, o);
	for (unsigned k = 0; k < want; k++) {
		int type = layered && k == 0 ? SG_S32 : ctype;

		if (sg_lower_src(L, &a->vec[k], type, &in->s[1 + k]))
			return L->errcode;
	}
	in->ns = (uint8_t)(1 + want);
	return 0;
}

static int dsts(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *op, unsigned n,
		struct sg_insn *in, bool store)
{
	if (op->kind == SG_O_VEC) {
		if ((unsigned)op->nvec != n)
			return bad(L, o);
		for (unsigned i = 0; i < n; i++)
			if (store ? sg_lower_src(L, &op->vec[i], SG_B64, &in->d[i])
				  : sg_lower_dst(L, &op->vec[i], &in->d[i]))
				return L->errcode;
	} else if (n == 1) {
		if (store ? sg_lower_src(L, op, SG_B64, &in->d[0]) : sg_lower_dst(L, op, &in->d[0]))
			return L->errcode;
	} else {
		return bad(L, o);
	}
	in->nd = (uint8_t)n;
	return 0;
}

static unsigned coord_count(unsigned g)
{
	return g == SG_TG_3D || g == SG_TG_CUBE || g == SG_TG_ACUBE ? 3
	       : g == SG_TG_2D					    ? 2
	       : g == SG_TG_A2D					    ? 3
	       : g == SG_TG_A1D					    ? 2
								    : 1;
}

/* operands the PTX vector holds: 3-D and a2d pad to 4 */
static unsigned coord_vec(unsigned g)
{
	return g == SG_TG_3D || g == SG_TG_A2D || g == SG_TG_CUBE || g == SG_TG_ACUBE
		       ? 4
		       : coord_count(g);
}

OP(op_movn)
{
	uint64_t v[4];

	for (unsigned i = 0; i < in->ns; i++)
		v[i] = A(i);
	for (unsigned i = 0; i < in->nd; i++)
		t->r[in->d[i]] = v[i];
	return 0;
}

/* tex.grad's two gradient vectors: their first `dims` each, copied to consecutive slots. */
static int stage_grads(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *gv,
		       unsigned dims, struct sg_insn *in)
{
	uint32_t base = sg_lower_new_slots(L, 2 * dims);
	struct sg_insn *e;

	if (base == UINT32_MAX)
		return sg_lower_error(L, CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
	for (unsigned v = 0; v < 2; v++) {
		if (gv[v].kind != SG_O_VEC || gv[v].nvec < (int)dims)
			return bad(L, o);
		e = sg_lower_emit(L);
		if (e == NULL)
			return L->errcode;
		e->guard = in->guard;
		e->gneg = in->gneg | SG_INSN_STRAIGHT;
		e->line = in->line;
		e->fn = op_movn;
		for (unsigned k = 0; k < dims; k++) {
			if (sg_lower_src(L, &gv[v].vec[k], SG_F32, &e->s[k]))
				return L->errcode;
			e->d[k] = base + v * dims + k;
		}
		e->ns = e->nd = (uint8_t)dims;
	}
	in->flags |= F_GRAD;
	in->imm = base;
	return 0;
}

static int lower_tex(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
		     const struct sg_operand *ops, int nops, struct sg_insn *in, bool gather)
{
	int i = 0, extra = 0;
	unsigned g, comp = 0;
	int ctype;

	if (gather) {
		static const char *const c[] = {"r", "g", "b", "a"};

		for (comp = 0; comp < 4 && !sg_word_is(ws, 0, c[comp]); comp++)
			;
		if (comp == 4)
			return sg_lower_unsupported(L, o);
		i = 1;
	} else if (sg_word_is(ws, 0, "level")) {
		extra = 1;
		i = 1;
	} else if (sg_word_is(ws, 0, "grad")) {
		extra = 2;
		i = 1;
	} else if (sg_word_is(ws, 0, "base")) {
		i = 1;
	}
	g = parse_geom(ws, i);
	if (g == 0 || (gather && g != SG_TG_2D) || ws->count != i + 4 ||
	    !sg_word_is(ws, i + 1, "v4") ||
	    !(sg_word_is(ws, i + 2, "f32") || sg_word_is(ws, i + 2, "s32") ||
	      sg_word_is(ws, i + 2, "u32")) ||
	    !(sg_word_is(ws, i + 3, "f32") || sg_word_is(ws, i + 3, "s32")))
		return sg_lower_unsupported(L, o);
	ctype = sg_word_is(ws, i + 3, "s32") ? SG_S32 : SG_F32;
	if (gather && ctype != SG_F32)
		return sg_lower_unsupported(L, o);
	/* d, [h, {c}], then the level or the two gradients (level 0 is the only level) */
	if (nops != 2 + extra)
		return nops > 2 + extra ? sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
							 "%s: offsets and depth compare", o->text)
					: bad(L, o);
	if (dsts(L, o, &ops[0], 4, in, false) ||
	    lower_target(L, o, &ops[1], coord_count(g), coord_vec(g), ctype,
			 g == SG_TG_A1D || g == SG_TG_A2D || g == SG_TG_ACUBE, in))
		return L->errcode;
	if (g == SG_TG_ACUBE) {
		/* {cubemap, x, y, z}: the fifth source, z, goes in imm */
		uint32_t slot;

		if (extra || ctype != SG_F32)
			return sg_lower_unsupported(L, o);
		if (sg_lower_src(L, &ops[1].vec[3], SG_F32, &slot))
			return L->errcode;
		in->imm = slot;
	}
	if (ctype == SG_S32)
		in->flags |= F_INTC;
	if (extra == 1) {
		uint32_t slot;

		if (sg_lower_src(L, &ops[2], SG_F32, &slot))
			return L->errcode;
		in->flags |= F_LEVEL;
		in->imm = slot;
	} else if (extra == 2 && stage_grads(L, o, &ops[2], geom_dims(g), in)) {
		return L->errcode;
	}
	in->aux = g | (gather ? K_TLD4 : K_TEX) << 4 | comp << 20;
	in->fn = gather ? op_tld4 : op_tex;
	return 0;
}

static int lower_query(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
		       const struct sg_operand *ops, int nops, struct sg_insn *in, bool surface)
{
	static const struct {
		const char *name;
		unsigned q;
		bool surf;
	} qs[] = {
		{"width", Q_WIDTH, true},
		{"height", Q_HEIGHT, true},
		{"depth", Q_DEPTH, true},
		{"channel_data_type", Q_CHTYPE, true},
		{"channel_order", Q_CHORDER, true},
		{"array_size", Q_ARRAY, true},
		{"normalized_coords", Q_NORM, false},
		{"filter_mode", Q_FILTER, false},
		{"addr_mode_0", Q_ADDR0, false},
		{"addr_mode_1", Q_ADDR1, false},
		{"addr_mode_2", Q_ADDR2, false},
		{"num_mipmap_levels", Q_MIPS, false},
	};
	unsigned q = 0;

	if (ws->count != 2 || !sg_word_is(ws, 1, "b32"))
		return sg_lower_unsupported(L, o);
	for (unsigned k = 0; k < sizeof(qs) / sizeof(qs[0]); k++)
		if (sg_word_is(ws, 0, qs[k].name) && (qs[k].surf || !surface))
			q = qs[k].q;
	if (q == 0)
		return sg_lower_unsupported(L, o);
	if (nops != 2 || ops[1].kind != SG_O_ADDR || ops[1].nvec || ops[1].off)
		return bad(L, o);
	if (ops[1].base_kind != SG_O_REG)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "%s: texture and surface references (only objects)", o->text);
	if (sg_lower_dst(L, &ops[0], &in->d[0]))
		return L->errcode;
	in->nd = 1;
	in->s[0] = (uint32_t)ops[1].slot;
	in->ns = 1;
	in->aux = (surface ? K_SUQ : K_TXQ) << 4 | q << 20;
	in->fn = op_query;
	return 0;
}

static int lower_surf(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
		      const struct sg_operand *ops, int nops, struct sg_insn *in, bool store)
{
	int i = 2;
	unsigned g, nv = 1, csz, mode;

	if (!sg_word_is(ws, 0, "b"))
		return sg_lower_unsupported(L, o); /* sust.p: formatted stores */
	g = parse_geom(ws, 1);
	if (g == 0 || g == SG_TG_CUBE || g == SG_TG_ACUBE)
		return sg_lower_unsupported(L, o);
	/* cache operators: no effect here */
	while (sg_word_is(ws, i, "ca") || sg_word_is(ws, i, "cg") || sg_word_is(ws, i, "cs") ||
	       sg_word_is(ws, i, "cv") || sg_word_is(ws, i, "wb") || sg_word_is(ws, i, "wt"))
		i++;
	if (sg_word_is(ws, i, "v2") || sg_word_is(ws, i, "v4")) {
		nv = ws->w[i][1] - '0';
		i++;
	}
	if (sg_word_is(ws, i, "b8"))
		csz = 1;
	else if (sg_word_is(ws, i, "b16"))
		csz = 2;
	else if (sg_word_is(ws, i, "b32"))
		csz = 4;
	else if (sg_word_is(ws, i, "b64"))
		csz = 8;
	else
		return sg_lower_unsupported(L, o);
	i++;
	if (sg_word_is(ws, i, "trap"))
		mode = M_TRAP;
	else if (sg_word_is(ws, i, "clamp"))
		mode = M_CLAMP;
	else if (sg_word_is(ws, i, "zero"))
		mode = M_ZERO;
	else
		return sg_lower_unsupported(L, o);
	if (ws->count != i + 1 || nops != 2 || (nv == 4 && csz == 8))
		return ws->count != i + 1 || nv == 4 ? sg_lower_unsupported(L, o) : bad(L, o);
	if (dsts(L, o, &ops[store ? 1 : 0], nv, in, store) ||
	    lower_target(L, o, &ops[store ? 0 : 1], coord_count(g), coord_vec(g), SG_S32,
			 g == SG_TG_A1D || g == SG_TG_A2D, in))
		return L->errcode;
	in->aux = g | (store ? K_SUST : K_SULD) << 4 | nv << 8 | csz << 12 | mode << 16;
	in->fn = store ? op_sust : op_suld;
	return 0;
}

int sg_lower_tex(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops, int nops,
		 struct sg_insn *in)
{
	struct sg_words ws;

	if (sg_opc_words(o, &ws))
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_TEX:
		return lower_tex(L, o, &ws, ops, nops, in, false);
	case SG_B_TLD4:
		return lower_tex(L, o, &ws, ops, nops, in, true);
	case SG_B_TXQ:
		return lower_query(L, o, &ws, ops, nops, in, false);
	case SG_B_SUQ:
		return lower_query(L, o, &ws, ops, nops, in, true);
	case SG_B_SULD:
		return lower_surf(L, o, &ws, ops, nops, in, false);
	case SG_B_SUST:
		return lower_surf(L, o, &ws, ops, nops, in, true);
	default:
		return sg_lower_unsupported(L, o);
	}
}
