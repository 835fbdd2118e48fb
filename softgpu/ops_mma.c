/* ops_mma.c -- warp matrix instructions: ldmatrix, stmatrix, mma.sync and wmma (load, store,
 * mma). */
#include <assert.h>
#include <math.h>
#include <string.h>

#include <cuda.h>

#include "ops.h"

/*
 * DESIGN: ldmatrix, stmatrix, mma.sync and wmma.mma are warp collectives. Their
 * handler (op_wait) only stops the thread at SG_W_MATRIX with the full warp as
 * its member mask; once all 32 lanes wait at the same instruction, exec.c calls
 * sg_matrix_collective(), which reads every lane's registers, does the whole
 * warp's operation and writes every lane's results. A warp with an exited or
 * missing lane, or lanes at different matrix instructions, faults (the PTX ISA
 * requires all 32 threads to execute the same .aligned instruction).
 *
 * mma and wmma.mma take up to 24 source and 8 destination registers, more than
 * an sg_insn holds: the lowering stages the sources into consecutive slots of
 * the thread's register file (op_movn copies, emitted before the collective),
 * the collective leaves the results in the same slots, and op_movn copies move
 * them to the destinations.
 *
 * mma fragments are laid out exactly as the PTX ISA's figures for each shape.
 * wmma's fragment-to-lane mapping is implementation-defined: softgpu's puts
 * element e of lane l at position (l * P + e) mod (rows * cols), row-major in
 * the matrix's logical coordinates, where P is the elements a lane holds
 * (fragments the ISA makes larger than the matrix hold it replicated).
 * wmma.load and wmma.store apply the .row/.col memory layout, so they are
 * per-thread operations; only wmma.mma exchanges data.
 *
 * Arithmetic: products of f16, bf16, tf32 and FP8 inputs are exact in double;
 * each output element is C plus its K products summed in double in k order,
 * rounded once to the accumulator type (round to nearest even). tf32 inputs
 * use the top 19 bits of their register (the low 13 are ignored). f64 is a
 * chain of fma() in k order starting from C. Integer products are summed
 * exactly in 64 bits; the s32 result wraps, or with .satfinite clamps.
 */

/* ---- element types and the descriptor of one matrix instruction ---- */

enum et { E_NONE, E_F16, E_BF16, E_TF32, E_F32, E_F64, E_S8, E_U8, E_S32, E_E4M3, E_E5M2 };

static unsigned et_bits(int e)
{
	switch (e) {
	case E_S8:
	case E_U8:
	case E_E4M3:
	case E_E5M2:
		return 8;
	case E_F16:
	case E_BF16:
		return 16;
	case E_F64:
		return 64;
	default:
		return 32;
	}
}

/* elements of type e in one register slot */
static unsigned et_per(int e)
{
	return e == E_F64 ? 1 : 32 / et_bits(e);
}

static bool et_int(int e)
{
	return e == E_S8 || e == E_U8 || e == E_S32;
}

static int et_parse(const char *s, size_t n)
{
	static const struct {
		const char *name;
		int e;
	} names[] = {
		{"f16", E_F16},	  {"bf16", E_BF16}, {"tf32", E_TF32}, {"f32", E_F32},
		{"f64", E_F64},	  {"s8", E_S8},	    {"u8", E_U8},     {"s32", E_S32},
		{"e4m3", E_E4M3}, {"e5m2", E_E5M2},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n && memcmp(names[i].name, s, n) == 0)
			return names[i].e;
	return E_NONE;
}

/* Collective kinds (in->aux of an op_wait instruction). */
enum { K_LDM = 1, K_STM, K_MMA };

/*
 * A matrix operation, packed into in->imm: shape, element types of A, B, C, D,
 * register slots per fragment, .satfinite, and whether it is wmma's mapping.
 */
struct mdesc {
	unsigned m, n, k;
	int at, bt, ct, dt;
	unsigned na, nb, nc, nd; /* slots per lane */
	bool sat, wmma;
};

static int64_t desc_pack(const struct mdesc *d)
{
	uint64_t v = 0;

	/* the lowering validated the shape against the ISA's: every field fits */
	assert(d->m < 128 && d->n < 128 && d->k < 128);
	assert(d->at < 16 && d->bt < 16 && d->ct < 16 && d->dt < 16);
	assert(d->na < 32 && d->nb < 32 && d->nc < 32 && d->nd < 32);
	v |= (uint64_t)d->m;
	v |= (uint64_t)d->n << 7;
	v |= (uint64_t)d->k << 14;
	v |= (uint64_t)d->at << 21;
	v |= (uint64_t)d->bt << 25;
	v |= (uint64_t)d->ct << 29;
	v |= (uint64_t)d->dt << 33;
	v |= (uint64_t)d->na << 37;
	v |= (uint64_t)d->nb << 42;
	v |= (uint64_t)d->nc << 47;
	v |= (uint64_t)d->nd << 52;
	v |= (uint64_t)d->sat << 57;
	v |= (uint64_t)d->wmma << 58;
	return (int64_t)v;
}

static void desc_unpack(int64_t iv, struct mdesc *d)
{
	uint64_t v = (uint64_t)iv;

	d->m = v & 0x7f;
	d->n = (v >> 7) & 0x7f;
	d->k = (v >> 14) & 0x7f;
	d->at = (int)((v >> 21) & 0xf);
	d->bt = (int)((v >> 25) & 0xf);
	d->ct = (int)((v >> 29) & 0xf);
	d->dt = (int)((v >> 33) & 0xf);
	d->na = (v >> 37) & 0x1f;
	d->nb = (v >> 42) & 0x1f;
	d->nc = (v >> 47) & 0x1f;
	d->nd = (v >> 52) & 0x1f;
	d->sat = (v >> 57) & 1;
	d->wmma = (v >> 58) & 1;
}

/* ---- fragment layouts ---- */

enum { MAT_A, MAT_B, MAT_C };

/* wmma: element e of lane l (of P per lane) in a rows x cols matrix */
static void wmma_coord(unsigned rows, unsigned cols, unsigned P, unsigned lane, unsigned e,
		       unsigned *row, unsigned *col)
{
	unsigned f = (lane * P + e) % (rows * cols);

	*row = f / cols;
	*col = f % cols;
}

/* Where element e of lane `lane` of fragment `which` lies in its matrix. */
static void frag_coord(const struct mdesc *d, int which, unsigned lane, unsigned e, unsigned *row,
		       unsigned *col)
{
	unsigned g = lane >> 2, t = lane & 3;

	if (d->wmma) {
		switch (which) {
		case MAT_A:
			wmma_coord(d->m, d->k, d->na * et_per(d->at), lane, e, row, col);
			return;
		case MAT_B:
			wmma_coord(d->k, d->n, d->nb * et_per(d->bt), lane, e, row, col);
			return;
		default:
			wmma_coord(d->m, d->n, d->nc * et_per(d->ct), lane, e, row, col);
			return;
		}
	}
	if (d->m == 8) { /* m8n8k4 .f64 */
		switch (which) {
		case MAT_A:
			*row = g;
			*col = t;
			return;
		case MAT_B:
			*row = t;
			*col = g;
			return;
		default:
			*row = g;
			*col = 2 * t + e;
			return;
		}
	}
	/* m16n8kK: the ISA's figures for every input type, by elements per register */
	switch (which) {
	case MAT_A: {
		unsigned per = et_per(d->at), r = e / per, j = e % per;

		*row = g + 8 * (r & 1);
		*col = per * t + j + (r >> 1) * (d->k / 2);
		return;
	}
	case MAT_B: {
		unsigned per = et_per(d->bt), r = e / per, j = e % per;

		*row = per * t + j + r * (d->k / 2);
		*col = g;
		return;
	}
	default:
		*row = g + 8 * (e >> 1);
		*col = 2 * t + (e & 1);
		return;
	}
}

/* ---- element values ---- */

static double elem_f(int e, uint64_t v)
{
	switch (e) {
	case E_F16:
		return sg_f16_to_f32((uint16_t)v);
	case E_BF16:
		return sg_bf16_to_f32((uint16_t)v);
	case E_TF32:
		return sg_f32(v & 0xffffe000u);
	case E_F32:
		return sg_f32(v);
	case E_F64:
		return sg_f64(v);
	case E_E4M3:
		return sg_fp8_to_f64((uint8_t)v, false);
	case E_E5M2:
		return sg_fp8_to_f64((uint8_t)v, true);
	default:
		return 0;
	}
}

static int64_t elem_i(int e, uint64_t v)
{
	switch (e) {
	case E_S8:
		return (int8_t)v;
	case E_U8:
		return (uint8_t)v;
	default:
		return (int32_t)v;
	}
}

/* Element e of a fragment whose register slots start at slot `base` of lane t. */
static uint64_t frag_get(const struct sg_thread *t, uint32_t base, int type, unsigned e)
{
	unsigned bits = et_bits(type), per = et_per(type);
	uint64_t v = t->r[base + e / per];

	if (bits == 64)
		return v;
	return (v >> (bits * (e % per))) & ((1ull << bits) - 1);
}

static void frag_set(struct sg_thread *t, uint32_t base, int type, unsigned e, uint64_t x)
{
	unsigned bits = et_bits(type), per = et_per(type);
	uint64_t *r = &t->r[base + e / per];
	unsigned sh = bits * (e % per);

	if (bits == 64) {
		*r = x;
		return;
	}
	if (e % per == 0)
		*r = 0;
	*r |= (x & ((1ull << bits) - 1)) << sh;
}

/* ---- the collectives ---- */

static int matrix_mma(struct sg_thread **lanes, const struct sg_insn *in)
{
	struct mdesc d;
	/* the largest matrices: 32 x 16 A, 16 x 32 B, 16 x 16 or 32 x 8 C */
	static _Thread_local double fa[512], fb[512], fc[256];
	static _Thread_local int64_t ia[512], ib[512], ic[256];
	uint32_t base = in->s[0];
	bool isint;
	unsigned pa, pb, pc;

	desc_unpack(in->imm, &d);
	assert(d.m * d.k <= 512 && d.k * d.n <= 512 && d.m * d.n <= 256);
	isint = et_int(d.at);
	pa = d.na * et_per(d.at);
	pb = d.nb * et_per(d.bt);
	pc = d.nc * et_per(d.ct);
	for (unsigned l = 0; l < 32; l++) {
		const struct sg_thread *t = lanes[l];
		unsigned row, col;

		for (unsigned e = 0; e < pa; e++) {
			uint64_t v = frag_get(t, base, d.at, e);

			frag_coord(&d, MAT_A, l, e, &row, &col);
			if (isint)
				ia[row * d.k + col] = elem_i(d.at, v);
			else
				fa[row * d.k + col] = elem_f(d.at, v);
		}
		for (unsigned e = 0; e < pb; e++) {
			uint64_t v = frag_get(t, base + d.na, d.bt, e);

			frag_coord(&d, MAT_B, l, e, &row, &col);
			if (isint)
				ib[row * d.n + col] = elem_i(d.bt, v);
			else
				fb[row * d.n + col] = elem_f(d.bt, v);
		}
		for (unsigned e = 0; e < pc; e++) {
			uint64_t v = frag_get(t, base + d.na + d.nb, d.ct, e);

			frag_coord(&d, MAT_C, l, e, &row, &col);
			if (isint)
				ic[row * d.n + col] = elem_i(d.ct, v);
			else
				fc[row * d.n + col] = elem_f(d.ct, v);
		}
	}
	for (unsigned l = 0; l < 32; l++) {
		struct sg_thread *t = lanes[l];
		unsigned pd = d.nd * et_per(d.dt), row, col;

		for (unsigned e = 0; e < pd; e++) {
			uint64_t out;

			frag_coord(&d, MAT_C, l, e, &row, &col);
			if (isint) {
				int64_t acc = ic[row * d.n + col];

				for (unsigned k = 0; k < d.k; k++)
					acc += ia[row * d.k + k] * ib[k * d.n + col];
				if (d.sat)
					acc = acc > INT32_MAX	? INT32_MAX
					      : acc < INT32_MIN ? INT32_MIN
								: acc;
				out = (uint32_t)(int32_t)(uint32_t)acc;
			} else if (d.dt == E_F64) {
				double acc = fc[row * d.n + col];

				for (unsigned k = 0; k < d.k; k++)
					acc = fma(fa[row * d.k + k], fb[k * d.n + col], acc);
				out = sg_b64(acc);
			} else {
				double acc = fc[row * d.n + col];

				for (unsigned k = 0; k < d.k; k++)
					acc += fa[row * d.k + k] * fb[k * d.n + col];
				out = d.dt == E_F16 ? sg_f64_to_f16(acc, SG_RN)
						    : (uint32_t)sg_b32((float)acc);
			}
			frag_set(t, base, d.dt, e, out);
		}
	}
	return 0;
}

/* in->aux of ldmatrix/stmatrix: K_* | matrices << 4 | .trans << 8; in->flags: space */
#define LDM_NUM(in) (((in)->aux >> 4) & 7)
#define LDM_TRANS(in) (((in)->aux >> 8) & 1)

static int matrix_ldst(struct sg_thread **lanes, const struct sg_insn *in, bool store)
{
	uint16_t mat[4][8][8];
	unsigned num = LDM_NUM(in);
	bool trans = LDM_TRANS(in);

	if (store) {
		for (unsigned m = 0; m < num; m++)
			for (unsigned r = 0; r < 8; r++)
				for (unsigned c = 0; c < 8; c++) {
					/* fragment element (i, j) is lane i*4 + j/2, half j&1 */
					unsigned i = trans ? c : r, j = trans ? r : c;
					uint32_t v = (uint32_t)lanes[i * 4 + j / 2]->r[in->d[m]];

					mat[m][r][c] = (uint16_t)(v >> (16 * (j & 1)));
				}
	}
	for (unsigned m = 0; m < num; m++) {
		for (unsigned r = 0; r < 8; r++) {
			struct sg_thread *src = lanes[m * 8 + r];
			uint8_t *p = sg_addr(src, in->flags & 0xf, src->wait_a, 16, store);

			if (p == NULL)
				return SG_STOP_FAULT;
			if (store)
				memcpy(p, mat[m][r], 16);
			else
				memcpy(mat[m][r], p, 16);
		}
	}
	if (store)
		return 0;
	for (unsigned l = 0; l < 32; l++) {
		unsigned i = l / 4, j = 2 * (l % 4);

		for (unsigned m = 0; m < num; m++) {
			uint32_t lo = trans ? mat[m][j][i] : mat[m][i][j];
			uint32_t hi = trans ? mat[m][j + 1][i] : mat[m][i][j + 1];

			lanes[l]->r[in->d[m]] = lo | hi << 16;
		}
	}
	return 0;
}

int sg_matrix_collective(struct sg_thread **lanes, uint32_t group)
{
	struct sg_thread *t0 = lanes[__builtin_ctz(group)];
	const struct sg_insn *in = t0->wait_insn;

	if (group != 0xffffffffu)
		return sg_fault(t0, CUDA_ERROR_LAUNCH_FAILED,
				"warp matrix instruction with %d of the warp's 32 lanes "
				"(.aligned needs all of them)",
				__builtin_popcount(group));
	for (int l = 0; l < 32; l++)
		if (lanes[l]->wait_insn != in)
			return sg_fault(lanes[l], CUDA_ERROR_LAUNCH_FAILED,
					"lanes of a warp at different warp matrix instructions "
					"(line %u and %u)",
					lanes[l]->wait_insn->line, in->line);
	switch (in->aux & 0xf) {
	case K_LDM:
		return matrix_ldst(lanes, in, false);
	case K_STM:
		return matrix_ldst(lanes, in, true);
	default:
		return matrix_mma(lanes, in);
	}
}

/* ---- handlers ---- */

#define F_ADDR32 0x10 /* in->flags: a 32-bit base register, the address wraps at 2^32 */

static uint64_t addr_of(const struct sg_thread *t, const struct sg_insn *in)
{
	uint64_t a = t->r[in->s[0]] + (uint64_t)in->imm;

	return (in->flags & F_ADDR32) ? (uint32_t)a : a;
}

/* ldmatrix/stmatrix: the row address this lane gives; mma: nothing */
OP(op_wait)
{
	if ((in->aux & 0xf) != K_MMA)
		t->wait_a = addr_of(t, in);
	t->wait_kind = SG_W_MATRIX;
	t->wait_insn = in;
	t->wait_mask = 0xffffffffu;
	t->state = SG_T_WARP;
	return SG_STOP_WARP;
}

/* copies s[i] to d[i]: staging of mma operands */
OP(op_movn)
{
	uint64_t v[4];

	for (unsigned i = 0; i < in->ns; i++)
		v[i] = t->r[in->s[i]];
	for (unsigned i = 0; i < in->ns; i++)
		t->r[in->d[i]] = v[i];
	return 0;
}

/*
 * wmma.load / wmma.store of up to 4 register slots of a fragment. in->aux:
 * rows/4 | cols/4 << 4 | P << 8 | type << 14 | .col << 18 | first slot << 19;
 * in->flags: space | F_ADDR32; s[0] address, s[1] stride (elements); data in d[].
 */
#define WM_ROWS(a) (((a)&0xf) * 4)
#define WM_COLS(a) ((((a) >> 4) & 0xf) * 4)
#define WM_P(a) (((a) >> 8) & 0x3f)
#define WM_TYPE(a) ((int)(((a) >> 14) & 0xf))
#define WM_COLMAJ(a) (((a) >> 18) & 1)
#define WM_FIRST(a) (((a) >> 19) & 0x1f)

static int wmma_ldst(struct sg_thread *t, const struct sg_insn *in, bool store)
{
	uint32_t a = in->aux;
	int type = WM_TYPE(a);
	unsigned bits = et_bits(type), per = et_per(type), es = bits / 8;
	uint64_t base = addr_of(t, in), ldm = (uint32_t)t->r[in->s[1]];
	int space = in->flags & 0xf;

	for (unsigned i = 0; i < in->nd; i++) {
		uint64_t v = store ? t->r[in->d[i]] : 0;

		for (unsigned j = 0; j < per; j++) {
			unsigned e = (WM_FIRST(a) + i) * per + j, row, col;
			uint64_t idx, x = 0;
			uint8_t *p;

			wmma_coord(WM_ROWS(a), WM_COLS(a), WM_P(a), t->lane, e, &row, &col);
			idx = WM_COLMAJ(a) ? (uint64_t)col * ldm + row : (uint64_t)row * ldm + col;
			p = sg_addr(t, space, base + idx * es, es, store);
			if (p == NULL)
				return SG_STOP_FAULT;
			if (store) {
				x = bits == 64 ? v : (v >> (bits * j)) & ((1ull << bits) - 1);
				memcpy(p, &x, es);
			} else {
				memcpy(&x, p, es);
				v |= bits == 64 ? x : x << (bits * j);
			}
		}
		if (!store)
			t->r[in->d[i]] = v;
	}
	return 0;
}

OP(op_wmma_ld)
{
	return wmma_ldst(t, in, false);
}

OP(op_wmma_st)
{
	return wmma_ldst(t, in, true);
}

/* ---- lowering ---- */

int sg_opc_words(const struct sg_opc *o, struct sg_words *ws)
{
	const char *p = strchr(o->text, '.');

	ws->count = 0;
	while (p) {
		const char *s = p + 1, *e = strchr(s, '.');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (ws->count == 16)
			return -1;
		ws->w[ws->count] = s;
		ws->n[ws->count++] = n;
		p = e;
	}
	return 0;
}

bool sg_word_is(const struct sg_words *ws, int i, const char *s)
{
	return i < ws->count && strlen(s) == ws->n[i] && memcmp(ws->w[i], s, ws->n[i]) == 0;
}

static bool has(const struct sg_words *ws, const char *s)
{
	for (int i = 0; i < ws->count; i++)
		if (sg_word_is(ws, i, s))
			return true;
	return false;
}

/* mNnNkN, each N of at most 3 decimal digits (sscanf's %u has no defined overflow) */
static bool parse_shape(const struct sg_words *ws, int i, unsigned *m, unsigned *n, unsigned *k)
{
	const char *p = ws->w[i], *end = p + ws->n[i];
	static const char names[3] = {'m', 'n', 'k'};
	unsigned *dims[3] = {m, n, k};

	for (int j = 0; j < 3; j++) {
		unsigned v = 0, digits = 0;

		if (p == end || *p++ != names[j])
			return false;
		for (; p < end && *p >= '0' && *p <= '9'; p++) {
			if (++digits > 3)
				return false;
			v = v * 10 + (unsigned)(*p - '0');
		}
		if (digits == 0)
			return false;
		*dims[j] = v;
	}
	return p == end;
}

static int bad_operands(struct sg_lower *L, const struct sg_opc *o)
{
	return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s: wrong operands", o->text);
}

static struct sg_insn *emit_like(struct sg_lower *L, const struct sg_insn *in)
{
	struct sg_insn *e = sg_lower_emit(L);

	if (e) {
		e->guard = in->guard;
		e->gneg = in->gneg;
	}
	return e;
}

/*
 * Copies n slots between src[] and dst[] in groups of 4: all groups but the last
 * are emitted; the last is left in `last` (the caller's instruction when it is
 * the final one).
 */
static int copies(struct sg_lower *L, const struct sg_insn *in, const uint32_t *src,
		  const uint32_t *dst, unsigned n, struct sg_insn *last)
{
	for (unsigned i = 0; i < n; i += 4) {
		unsigned c = n - i < 4 ? n - i : 4;
		struct sg_insn *e = last && i + 4 >= n ? last : emit_like(L, in);

		if (e == NULL)
			return L->errcode;
		e->fn = op_movn;
		e->ns = e->nd = (uint8_t)c;
		for (unsigned j = 0; j < c; j++) {
			e->s[j] = src[i + j];
			e->d[j] = dst[i + j];
		}
	}
	return 0;
}

/*
 * The register slots of a {..} operand of exactly `want` registers: sources, or
 * destinations, into slots[], which holds `cap`.
 */
static int vec_slots(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *op,
		     unsigned want, bool dst, int type, uint32_t *slots, unsigned cap)
{
	if (want > cap)
		return sg_lower_error(L, CUDA_ERROR_NOT_SUPPORTED,
				      "%s: a fragment of %u registers (softgpu's limit is %u)",
				      o->text, want, cap);
	if (op->kind != SG_O_VEC || op->nvec < 0 || (unsigned)op->nvec != want)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX, "%s needs a {..} of %u registers",
				      o->text, want);
	for (unsigned i = 0; i < want; i++)
		if (dst ? sg_lower_dst(L, &op->vec[i], &slots[i])
			: sg_lower_src(L, &op->vec[i], type, &slots[i]))
			return L->errcode;
	return 0;
}

/* Stages A, B, C, runs the collective, copies D out; `in` becomes the last copy. */
static int lower_mma_common(struct sg_lower *L, const struct sg_opc *o,
			    const struct sg_operand *ops, int nops, struct sg_insn *in,
			    const struct mdesc *d)
{
	uint32_t src[24], dst[8], stage[24];
	unsigned ns = d->na + d->nb + d->nc, n;
	uint32_t base;
	struct sg_insn *w;

	if (nops != 4 || d->nd > 8 || ns > 24)
		return bad_operands(L, o);
	if (vec_slots(L, o, &ops[0], d->nd, true, SG_B32, dst, 8) ||
	    vec_slots(L, o, &ops[1], d->na, false, SG_B32, src, 24) ||
	    vec_slots(L, o, &ops[2], d->nb, false, SG_B32, src + d->na, 24 - d->na) ||
	    vec_slots(L, o, &ops[3], d->nc, false, d->ct == E_F64 ? SG_F64 : SG_B32,
		      src + d->na + d->nb, 24 - d->na - d->nb))
		return L->errcode;
	n = ns > d->nd ? ns : d->nd;
	base = sg_lower_new_slots(L, n);
	if (base == UINT32_MAX)
		return sg_lower_error(L, CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
	for (unsigned i = 0; i < n; i++)
		stage[i] = base + i;
	if (copies(L, in, src, stage, ns, NULL))
		return L->errcode;
	w = emit_like(L, in);
	if (w == NULL)
		return L->errcode;
	w->fn = op_wait;
	w->s[0] = base;
	w->ns = 1;
	w->aux = K_MMA;
	w->imm = desc_pack(d);
	return copies(L, in, stage, dst, d->nd, in);
}

static unsigned slots_for(unsigned rows, unsigned cols, int type)
{
	return rows * cols / (32 * et_per(type));
}

static int lower_mma(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		     int nops, struct sg_insn *in)
{
	struct sg_words ws;
	struct mdesc d;
	int types[4], nt = 0;
	bool ok = false;

	memset(&d, 0, sizeof(d));
	if (sg_opc_words(o, &ws) || ws.count < 4 || !sg_word_is(&ws, 0, "sync") ||
	    !sg_word_is(&ws, 1, "aligned") || !parse_shape(&ws, 2, &d.m, &d.n, &d.k))
		return sg_lower_unsupported(L, o);
	for (int i = 3; i < ws.count; i++) {
		int e = et_parse(ws.w[i], ws.n[i]);

		if (e != E_NONE && nt < 4)
			types[nt++] = e;
		else if (sg_word_is(&ws, i, "satfinite"))
			d.sat = true;
		else if (!(i == 3 && sg_word_is(&ws, i, "row")) &&
			 !(i == 4 && sg_word_is(&ws, i, "col")) && !sg_word_is(&ws, i, "rn"))
			return sg_lower_unsupported(L, o);
	}
	if (nt != 4 || !sg_word_is(&ws, 3, "row") || !sg_word_is(&ws, 4, "col"))
		return sg_lower_unsupported(L, o);
	d.dt = types[0];
	d.at = types[1];
	d.bt = types[2];
	d.ct = types[3];
	if (d.m == 16 && d.n == 8) {
		bool f16 = d.at == E_F16 && d.bt == E_F16 && d.ct == d.dt &&
			   (d.dt == E_F16 || d.dt == E_F32);
		bool f32acc = d.ct == E_F32 && d.dt == E_F32;
		bool i8 = (d.at == E_S8 || d.at == E_U8) && (d.bt == E_S8 || d.bt == E_U8) &&
			  d.ct == E_S32 && d.dt == E_S32;
		bool f8 = (d.at == E_E4M3 || d.at == E_E5M2) && (d.bt == E_E4M3 || d.bt == E_E5M2);

		switch (d.k) {
		case 16:
			ok = f16 || (d.at == E_BF16 && d.bt == E_BF16 && f32acc) || i8;
			break;
		case 8:
			ok = f16 || (d.at == E_BF16 && d.bt == E_BF16 && f32acc) ||
			     (d.at == E_TF32 && d.bt == E_TF32 && f32acc);
			break;
		case 4:
			ok = d.at == E_TF32 && d.bt == E_TF32 && f32acc;
			break;
		case 32:
			ok = i8 || (f8 && f32acc);
			break;
		}
	} else if (d.m == 8 && d.n == 8 && d.k == 4) {
		ok = d.at == E_F64 && d.bt == E_F64 && d.ct == E_F64 && d.dt == E_F64;
	}
	if (!ok || (d.sat && !et_int(d.at)))
		return sg_lower_unsupported(L, o);
	d.na = slots_for(d.m, d.k, d.at);
	d.nb = slots_for(d.k, d.n, d.bt);
	d.nc = slots_for(d.m, d.n, d.ct);
	d.nd = slots_for(d.m, d.n, d.dt);
	return lower_mma_common(L, o, ops, nops, in, &d);
}

/* Register slots of a wmma fragment (the ISA's table: f16 A and B always take 8). */
static unsigned wmma_slots(const struct mdesc *d, int which, int type)
{
	if (which != MAT_C && type == E_F16)
		return 8;
	switch (which) {
	case MAT_A:
		return slots_for(d->m, d->k, type);
	case MAT_B:
		return slots_for(d->k, d->n, type);
	default:
		return slots_for(d->m, d->n, type);
	}
}

static bool wmma_shape(const struct mdesc *d, int in_type)
{
	if (d->m == 16 && d->n == 16 && d->k == 16)
		return in_type == E_F16 || in_type == E_BF16 || in_type == E_S8 || in_type == E_U8;
	if ((d->m == 32 && d->n == 8 && d->k == 16) || (d->m == 8 && d->n == 32 && d->k == 16))
		return in_type == E_F16 || in_type == E_BF16 || in_type == E_S8 || in_type == E_U8;
	if (d->m == 16 && d->n == 16 && d->k == 8)
		return in_type == E_TF32;
	if (d->m == 8 && d->n == 8 && d->k == 4)
		return in_type == E_F64;
	return false;
}

/*
 * Whether the ISA has a wmma C or D fragment of `type` in this shape: f16, f32 or s32
 * in the 16-bit and 8-bit shapes (m16n16k16, m32n8k16, m8n32k16), f32 in tf32's
 * m16n16k8, f64 in m8n8k4.
 */
static bool wmma_shape_c(const struct mdesc *d, int type)
{
	if ((d->m == 16 && d->n == 16 && d->k == 16) || (d->m == 32 && d->n == 8 && d->k == 16) ||
	    (d->m == 8 && d->n == 32 && d->k == 16))
		return type == E_F16 || type == E_F32 || type == E_S32;
	if (d->m == 16 && d->n == 16 && d->k == 8)
		return type == E_F32;
	if (d->m == 8 && d->n == 8 && d->k == 4)
		return type == E_F64;
	return false;
}

/* The state space of a matrix load/store: from the opcode, else what the address names. */
static int mspace(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws, int hint,
		  bool allow_global, int *space)
{
	int sp = SG_SP_GENERIC;

	if (has(ws, "shared") || has(ws, "shared::cta"))
		sp = SG_SP_SHARED;
	else if (allow_global && has(ws, "global"))
		sp = SG_SP_GLOBAL;
	if (sp == SG_SP_GENERIC && (hint == SG_SP_SHARED || (allow_global && hint == SG_SP_GLOBAL)))
		sp = hint;
	if (hint != SG_SP_GENERIC && hint != sp)
		return sg_lower_error(L, CUDA_ERROR_INVALID_PTX,
				      "%s names a variable of another state space", o->text);
	*space = sp;
	return 0;
}

static int lower_wmma_ldst(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
			   const struct sg_operand *ops, int nops, struct sg_insn *in)
{
	bool store = sg_word_is(ws, 0, "store");
	struct mdesc d;
	int which, type = E_NONE, hint, space;
	const struct sg_operand *data = store ? &ops[1] : &ops[0],
				*addr = store ? &ops[0] : &ops[1];
	uint32_t slots[8], aslot, sslot;
	unsigned n, rows, cols, p;
	int64_t off;
	bool wrap32, colmaj, fits;

	memset(&d, 0, sizeof(d));
	if (ws->count < 7 || !sg_word_is(ws, 2, "sync") || !sg_word_is(ws, 3, "aligned") ||
	    !(sg_word_is(ws, 4, "row") || sg_word_is(ws, 4, "col")) ||
	    !parse_shape(ws, 5, &d.m, &d.n, &d.k))
		return sg_lower_unsupported(L, o);
	if (store ? !sg_word_is(ws, 1, "d")
		  : !(sg_word_is(ws, 1, "a") || sg_word_is(ws, 1, "b") || sg_word_is(ws, 1, "c")))
		return sg_lower_unsupported(L, o);
	which = sg_word_is(ws, 1, "a") ? MAT_A : sg_word_is(ws, 1, "b") ? MAT_B : MAT_C;
	colmaj = sg_word_is(ws, 4, "col");
	for (int i = 6; i < ws->count; i++) {
		int e = et_parse(ws->w[i], ws->n[i]);

		if (e != E_NONE && type == E_NONE)
			type = e;
		else if (!sg_word_is(ws, i, "global") && !sg_word_is(ws, i, "shared") &&
			 !sg_word_is(ws, i, "shared::cta"))
			return sg_lower_unsupported(L, o);
	}
	/* before any slot is counted: the slot arrays and aux's fields hold the ISA's shapes */
	if (which == MAT_C ? !wmma_shape_c(&d, type) : !wmma_shape(&d, type))
		return sg_lower_unsupported(L, o);
	if (nops != 3)
		return bad_operands(L, o);
	n = wmma_slots(&d, which, type);
	rows = which == MAT_B ? d.k : d.m;
	cols = which == MAT_A ? d.k : d.n;
	p = n * et_per(type);
	/* aux's fields: rows/4 and cols/4 in 4 bits, P in 6 (wmma_coord divides by rows * cols) */
	fits = rows && cols && rows % 4 == 0 && cols % 4 == 0 && rows / 4 <= 0xf &&
	       cols / 4 <= 0xf && p && p <= 0x3f && n <= 8;
	assert(fits);
	if (!fits)
		return sg_lower_unsupported(L, o);
	if (vec_slots(L, o, data, n, !store, SG_B32, slots, 8) ||
	    sg_lower_addr(L, addr, &hint, &aslot, &off, &wrap32) ||
	    mspace(L, o, ws, hint, true, &space) || sg_lower_src(L, &ops[2], SG_U32, &sslot))
		return L->errcode;
	/* one instruction per 4 slots: all but the last emitted */
	for (unsigned i = 0; i < n; i += 4) {
		unsigned c = n - i < 4 ? n - i : 4;
		struct sg_insn *e = i + 4 >= n ? in : emit_like(L, in);

		if (e == NULL)
			return L->errcode;
		e->fn = store ? op_wmma_st : op_wmma_ld;
		e->s[0] = aslot;
		e->s[1] = sslot;
		e->ns = 2;
		e->nd = (uint8_t)c;
		for (unsigned j = 0; j < c; j++)
			e->d[j] = slots[i + j];
		e->imm = off;
		e->flags = (uint8_t)(space | (wrap32 ? F_ADDR32 : 0));
		e->aux = rows / 4 | (cols / 4) << 4 | p << 8 | (uint32_t)type << 14 |
			 (colmaj ? 1u : 0) << 18 | i << 19;
	}
	return 0;
}

static int lower_wmma_mma(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
			  const struct sg_operand *ops, int nops, struct sg_insn *in)
{
	struct mdesc d;
	int types[4], nt = 0;

	memset(&d, 0, sizeof(d));
	d.wmma = true;
	if (ws->count < 7 || !sg_word_is(ws, 1, "sync") || !sg_word_is(ws, 2, "aligned") ||
	    !(sg_word_is(ws, 3, "row") || sg_word_is(ws, 3, "col")) ||
	    !(sg_word_is(ws, 4, "row") || sg_word_is(ws, 4, "col")) ||
	    !parse_shape(ws, 5, &d.m, &d.n, &d.k))
		return sg_lower_unsupported(L, o);
	for (int i = 6; i < ws->count; i++) {
		int e = et_parse(ws->w[i], ws->n[i]);

		if (e != E_NONE && nt < 4)
			types[nt++] = e;
		else if (sg_word_is(ws, i, "satfinite"))
			d.sat = true;
		else if (!sg_word_is(ws, i, "rn"))
			return sg_lower_unsupported(L, o);
	}
	if (nt == 2) { /* .dtype.ctype: f16 inputs */
		d.dt = types[0];
		d.ct = types[1];
		d.at = d.bt = E_F16;
		if ((d.dt != E_F16 && d.dt != E_F32) || (d.ct != E_F16 && d.ct != E_F32))
			return sg_lower_unsupported(L, o);
	} else if (nt == 4) {
		d.dt = types[0];
		d.at = types[1];
		d.bt = types[2];
		d.ct = types[3];
		if (d.at == E_BF16 || d.at == E_TF32) {
			if (d.bt != d.at || d.ct != E_F32 || d.dt != E_F32)
				return sg_lower_unsupported(L, o);
		} else if (d.at == E_S8 || d.at == E_U8) {
			if (d.bt != d.at || d.ct != E_S32 || d.dt != E_S32)
				return sg_lower_unsupported(L, o);
		} else if (d.at != E_F64 || d.bt != E_F64 || d.ct != E_F64 || d.dt != E_F64) {
			return sg_lower_unsupported(L, o);
		}
	} else {
		return sg_lower_unsupported(L, o);
	}
	if (!wmma_shape(&d, d.at) || !wmma_shape_c(&d, d.ct) || !wmma_shape_c(&d, d.dt) ||
	    (d.sat && !et_int(d.at)))
		return sg_lower_unsupported(L, o);
	d.na = wmma_slots(&d, MAT_A, d.at);
	d.nb = wmma_slots(&d, MAT_B, d.bt);
	d.nc = wmma_slots(&d, MAT_C, d.ct);
	d.nd = wmma_slots(&d, MAT_C, d.dt);
	return lower_mma_common(L, o, ops, nops, in, &d);
}

static int lower_ldstmatrix(struct sg_lower *L, const struct sg_opc *o, const struct sg_words *ws,
			    const struct sg_operand *ops, int nops, struct sg_insn *in)
{
	bool store = o->base == SG_B_STMATRIX, trans = false;
	unsigned num = 0;
	int hint, space;
	bool wrap32;
	uint32_t slots[4];

	if (ws->count < 5 || !sg_word_is(ws, 0, "sync") || !sg_word_is(ws, 1, "aligned") ||
	    !sg_word_is(ws, 2, "m8n8") || !sg_word_is(ws, ws->count - 1, "b16"))
		return sg_lower_unsupported(L, o);
	for (int i = 3; i < ws->count - 1; i++) {
		if (sg_word_is(ws, i, "x1") || sg_word_is(ws, i, "x2") || sg_word_is(ws, i, "x4"))
			num = (unsigned)(ws->w[i][1] - '0');
		else if (sg_word_is(ws, i, "trans"))
			trans = true;
		else if (!sg_word_is(ws, i, "shared") && !sg_word_is(ws, i, "shared::cta"))
			return sg_lower_unsupported(L, o);
	}
	if (num == 0 || nops != 2)
		return num ? bad_operands(L, o) : sg_lower_unsupported(L, o);
	if (vec_slots(L, o, store ? &ops[1] : &ops[0], num, !store, SG_B32, slots, 4) ||
	    sg_lower_addr(L, store ? &ops[0] : &ops[1], &hint, &in->s[0], &in->imm, &wrap32) ||
	    mspace(L, o, ws, hint, false, &space))
		return L->errcode;
	for (unsigned i = 0; i < num; i++)
		in->d[i] = slots[i];
	in->nd = (uint8_t)(store ? 0 : num);
	in->ns = 1;
	in->flags = (uint8_t)(space | (wrap32 ? F_ADDR32 : 0));
	in->aux = (store ? K_STM : K_LDM) | num << 4 | (trans ? 1u : 0) << 8;
	in->fn = op_wait;
	return 0;
}

int sg_lower_matrix(struct sg_lower *L, const struct sg_opc *o, const struct sg_operand *ops,
		    int nops, struct sg_insn *in)
{
	struct sg_words ws;

	if (sg_opc_words(o, &ws))
		return sg_lower_unsupported(L, o);
	switch (o->base) {
	case SG_B_MMA:
		return lower_mma(L, o, ops, nops, in);
	case SG_B_LDMATRIX:
	case SG_B_STMATRIX:
		return lower_ldstmatrix(L, o, &ws, ops, nops, in);
	case SG_B_WMMA:
		if (ws.count > 0 && (sg_word_is(&ws, 0, "load") || sg_word_is(&ws, 0, "store")))
			return lower_wmma_ldst(L, o, &ws, ops, nops, in);
		if (ws.count > 0 && sg_word_is(&ws, 0, "mma"))
			return lower_wmma_mma(L, o, &ws, ops, nops, in);
		return sg_lower_unsupported(L, o);
	default:
		return sg_lower_unsupported(L, o);
	}
}
