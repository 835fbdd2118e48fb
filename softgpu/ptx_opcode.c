/* ptx_opcode.c -- split an opcode word (ld.global.nc.v4.f32) into base and modifiers. */
#include <string.h>

#include "ptx_int.h"

static const char *const base_names[SG_B_COUNT] = {[SG_B_UNKNOWN] = "?",
#define SG_BASE_NAME(name, text) [SG_B_##name] = text,
						   SG_BASE_MAP(SG_BASE_NAME)
#undef SG_BASE_NAME
};

const char *sg_base_name(int base)
{
	if (base < 0 || base >= SG_B_COUNT)
		return "?";
	return base_names[base];
}

static const struct {
	const char *name;
	int type;
} type_names[] = {
	{"b8", SG_B8},	       {"b16", SG_B16},	      {"b32", SG_B32},	     {"b64", SG_B64},
	{"b128", SG_B128},     {"u8", SG_U8},	      {"u16", SG_U16},	     {"u32", SG_U32},
	{"u64", SG_U64},       {"s8", SG_S8},	      {"s16", SG_S16},	     {"s32", SG_S32},
	{"s64", SG_S64},       {"f16", SG_F16},	      {"f16x2", SG_F16X2},   {"bf16", SG_BF16},
	{"bf16x2", SG_BF16X2}, {"f32", SG_F32},	      {"f64", SG_F64},	     {"pred", SG_PRED},
	{"tf32", SG_TF32},     {"e4m3x2", SG_E4M3X2}, {"e5m2x2", SG_E5M2X2},
};

int sg_type_from_name(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strlen(type_names[i].name) == n && memcmp(type_names[i].name, s, n) == 0)
			return type_names[i].type;
	return SG_NOTYPE;
}

const char *sg_type_name(int type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	return "?";
}

unsigned sg_type_size(int type)
{
	switch (type) {
	case SG_B8:
	case SG_U8:
	case SG_S8:
		return 1;
	case SG_B16:
	case SG_E4M3X2:
	case SG_E5M2X2:
	case SG_U16:
	case SG_S16:
	case SG_F16:
	case SG_BF16:
		return 2;
	case SG_B32:
	case SG_TF32:
	case SG_U32:
	case SG_S32:
	case SG_F32:
	case SG_F16X2:
	case SG_BF16X2:
		return 4;
	case SG_B64:
	case SG_U64:
	case SG_S64:
	case SG_F64:
		return 8;
	case SG_B128:
		return 16;
	case SG_PRED:
		return 1;
	default:
		return 0;
	}
}

bool sg_type_signed(int type)
{
	return type == SG_S8 || type == SG_S16 || type == SG_S32 || type == SG_S64;
}

bool sg_type_float(int type)
{
	return type == SG_F16 || type == SG_F16X2 || type == SG_BF16 || type == SG_BF16X2 ||
	       type == SG_F32 || type == SG_F64;
}

enum field {
	F_FLAG,
	F_SPACE,
	F_RND,
	F_CMP,
	F_BOP,
	F_AOP,
	F_MODE,
	F_VEC,
	F_IGNORE,
	F_BOOLAOP,
	F_LOHI,
	F_ALLANY,
	F_UNI
};

static const struct {
	const char *name;
	int field;
	int value;
} mods[] = {
	{"ftz", F_FLAG, SG_F_FTZ},
	{"sat", F_FLAG, SG_F_SAT},
	{"approx", F_FLAG, SG_F_APPROX},
	{"full", F_FLAG, SG_F_FULL},
	{"cc", F_FLAG, SG_F_CC},
	{"nc", F_FLAG, SG_F_NC},
	{"volatile", F_FLAG, SG_F_VOLATILE},
	{"sync", F_FLAG, SG_F_SYNC},
	{"aligned", F_FLAG, SG_F_ALIGNED},
	{"shiftamt", F_FLAG, SG_F_SHIFTAMT},
	{"NaN", F_FLAG, SG_F_NAN},
	{"wrap", F_FLAG, SG_F_WRAP},
	{"clamp", F_FLAG, SG_F_CLAMP},
	{"to", F_FLAG, SG_F_TO},
	{"relu", F_FLAG, SG_F_RELU},
	{"abs", F_FLAG, SG_F_ABS},
	{"xorsign", F_FLAG, SG_F_XORSIGN},
	{"arrive", F_FLAG, SG_F_ARRIVE},
	{"red", F_FLAG, SG_F_RED},
	{"noftz", F_FLAG, SG_F_NOFTZ},
	{"satfinite", F_FLAG, SG_F_SATFINITE},
	{"warp", F_FLAG, SG_F_WARP},
	{"global", F_SPACE, SG_SP_GLOBAL},
	{"shared", F_SPACE, SG_SP_SHARED},
	{"shared::cta", F_SPACE, SG_SP_SHARED},
	{"local", F_SPACE, SG_SP_LOCAL},
	{"param", F_SPACE, SG_SP_PARAM},
	{"param::entry", F_SPACE, SG_SP_PARAM},
	{"param::func", F_SPACE, SG_SP_FPARAM},
	{"const", F_SPACE, SG_SP_CONST},
	{"rn", F_RND, SG_RN},
	{"rz", F_RND, SG_RZ},
	{"rm", F_RND, SG_RM},
	{"rp", F_RND, SG_RP},
	{"rni", F_RND, SG_RNI},
	{"rzi", F_RND, SG_RZI},
	{"rmi", F_RND, SG_RMI},
	{"rpi", F_RND, SG_RPI},
	{"rna", F_RND, SG_RNA},
	{"eq", F_CMP, SG_EQ},
	{"ne", F_CMP, SG_NE},
	{"lt", F_CMP, SG_LT},
	{"le", F_CMP, SG_LE},
	{"gt", F_CMP, SG_GT},
	{"ge", F_CMP, SG_GE},
	{"ls", F_CMP, SG_LS},
	{"hs", F_CMP, SG_HS},
	{"equ", F_CMP, SG_EQU},
	{"neu", F_CMP, SG_NEU},
	{"ltu", F_CMP, SG_LTU},
	{"leu", F_CMP, SG_LEU},
	{"gtu", F_CMP, SG_GTU},
	{"geu", F_CMP, SG_GEU},
	{"num", F_CMP, SG_NUM},
	{"nan", F_CMP, SG_NAN},
	{"lo", F_LOHI, SG_M_LO},
	{"hi", F_LOHI, SG_M_HI},
	{"wide", F_MODE, SG_M_WIDE},
	{"and", F_BOOLAOP, SG_BOP_AND},
	{"or", F_BOOLAOP, SG_BOP_OR},
	{"xor", F_BOOLAOP, SG_BOP_XOR},
	{"popc", F_BOP, SG_BOP_POPC},
	{"add", F_AOP, SG_AOP_ADD},
	{"min", F_AOP, SG_AOP_MIN},
	{"max", F_AOP, SG_AOP_MAX},
	{"inc", F_AOP, SG_AOP_INC},
	{"dec", F_AOP, SG_AOP_DEC},
	{"exch", F_AOP, SG_AOP_EXCH},
	{"cas", F_AOP, SG_AOP_CAS},
	{"up", F_MODE, SG_M_UP},
	{"down", F_MODE, SG_M_DOWN},
	{"bfly", F_MODE, SG_M_BFLY},
	{"idx", F_MODE, SG_M_IDX},
	{"all", F_ALLANY, SG_M_ALL},
	{"any", F_ALLANY, SG_M_ANY},
	{"uni", F_UNI, SG_M_UNIV},
	{"ballot", F_MODE, SG_M_BALLOT},
	{"l", F_MODE, SG_M_L},
	{"r", F_MODE, SG_M_R},
	{"f4e", F_MODE, SG_M_F4E},
	{"b4e", F_MODE, SG_M_B4E},
	{"rc8", F_MODE, SG_M_RC8},
	{"ecl", F_MODE, SG_M_ECL},
	{"ecr", F_MODE, SG_M_ECR},
	{"rc16", F_MODE, SG_M_RC16},
	{"finite", F_MODE, SG_M_FINITE},
	{"infinite", F_MODE, SG_M_INFINITE},
	{"number", F_MODE, SG_M_NUMBER},
	{"notanumber", F_MODE, SG_M_NOTANUMBER},
	{"normal", F_MODE, SG_M_NORMAL},
	{"subnormal", F_MODE, SG_M_SUBNORMAL},
	{"v2", F_VEC, 2},
	{"v4", F_VEC, 4},
	/* cache operators, memory-order semantics and scopes: no effect on a CPU */
	{"ca", F_IGNORE, 0},
	{"cg", F_IGNORE, 0},
	{"cs", F_IGNORE, 0},
	{"lu", F_IGNORE, 0},
	{"cv", F_IGNORE, 0},
	{"wb", F_IGNORE, 0},
	{"wt", F_IGNORE, 0},
	{"relaxed", F_IGNORE, 0},
	{"acquire", F_IGNORE, 0},
	{"release", F_IGNORE, 0},
	{"acq_rel", F_IGNORE, 0},
	{"sc", F_IGNORE, 0},
	{"weak", F_IGNORE, 0},
	{"cta", F_IGNORE, 0},
	{"gpu", F_IGNORE, 0},
	{"sys", F_IGNORE, 0},
	{"gl", F_IGNORE, 0},
};

int sg_opc_parse(struct sg_lower *L, const char *word, size_t len, struct sg_opc *o)
{
	const char *p = word, *end = word + len;
	const char *dot;
	size_t n;

	memset(o, 0, sizeof(*o));
	n = len < sizeof(o->text) - 1 ? len : sizeof(o->text) - 1;
	memcpy(o->text, word, n);
	dot = memchr(p, '.', len);
	n = dot ? (size_t)(dot - p) : len;
	for (int b = 1; b < SG_B_COUNT; b++) {
		if (strlen(base_names[b]) == n && memcmp(base_names[b], p, n) == 0) {
			o->base = b;
			break;
		}
	}
	if (o->base == SG_B_UNKNOWN)
		return -1;
	if (SG_BASE_OWN_MODS(o->base))
		return 0;
	p += n;
	while (p < end) {
		const char *m = p + 1;
		const char *next = m;
		int type;
		size_t k;
		bool found = false;

		while (next < end && *next != '.')
			next++;
		k = (size_t)(next - m);
		p = next;
		type = sg_type_from_name(m, k);
		if (type != SG_NOTYPE) {
			if (o->ntypes == 3)
				return -1;
			o->types[o->ntypes++] = type;
			continue;
		}
		for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
			int v = mods[i].value;

			if (strlen(mods[i].name) != k || memcmp(mods[i].name, m, k) != 0)
				continue;
			found = true;
			switch (mods[i].field) {
			case F_FLAG:
				o->f |= (unsigned)v;
				break;
			case F_SPACE:
				o->space = v;
				break;
			case F_RND:
				o->rnd = v;
				break;
			case F_CMP:
				o->cmp = v;
				break;
			case F_BOP:
				o->bop = v;
				break;
			case F_AOP:
				o->aop = v;
				break;
			case F_MODE:
				o->mode = v;
				break;
			case F_VEC:
				o->vec = v;
				break;
			case F_BOOLAOP:
				o->bop = v;
				o->aop = v == SG_BOP_AND  ? SG_AOP_AND
					 : v == SG_BOP_OR ? SG_AOP_OR
							  : SG_AOP_XOR;
				break;
			case F_LOHI:
				if (o->base == SG_B_SETP || o->base == SG_B_SET)
					o->cmp = v == SG_M_LO ? SG_LO : SG_HI;
				else
					o->mode = v;
				break;
			case F_ALLANY:
				o->mode = v;
				break;
			case F_UNI:
				if (o->base == SG_B_VOTE)
					o->mode = SG_M_UNIV;
				else
					o->f |= SG_F_UNI;
				break;
			default:
				break;
			}
			break;
		}
		if (found)
			continue;
		/* Cache-eviction hints (L1::evict_last, L2::128B, level::...) change nothing here. */
		if (k > 3 && (memcmp(m, "L1::", 4) == 0 || memcmp(m, "L2::", 4) == 0))
			continue;
		if (k > 7 && memcmp(m, "level::", 7) == 0)
			continue;
		return -1;
	}
	return 0;
}
