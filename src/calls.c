/* calls.c -- what each remoted call is, from <gpupool/calls.h>, for both ends and the docs. */
#include "calls.h"

#define GP_ARG(kind, f) | GP__KBIT_##kind
#define GP_OUT(f)
#define GP_RANGE(base, width, height, pitch)
#define GP__INFO(NAME, n, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) \
	{.type = NUM,                                          \
	 .name = #NAME,                                        \
	 .flags = FLAGS,                                       \
	 .nargs = GP_NARGS_##NAME,                             \
	 .nouts = GP_NOUTS_##NAME,                             \
	 .kinds = 0 ARGS,                                      \
	 .args = #ARGS,                                        \
	 .outs = #OUTS,                                        \
	 .ranges = #RANGES,                                    \
	 .doc = DOC},
static const struct gp_call_info calls[] = {GP_CALL_MAP(GP__INFO)};
#undef GP__INFO
#undef GP_RANGE
#undef GP_OUT
#undef GP_ARG

/* Every call fits the fixed arrays both ends use. */
#define GP__FITS(NAME, n, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)                             \
	_Static_assert(GP_NARGS_##NAME <= GP_CALL_ARGS_MAX, #NAME ": too many arguments"); \
	_Static_assert(GP_NOUTS_##NAME <= GP_CALL_OUTS_MAX, #NAME ": too many outputs");   \
	_Static_assert((NUM >= 100 && NUM < 200) || (NUM >= 204 && NUM < 210),             \
		       #NAME ": calls are types 100-199 and 204-209");
GP_CALL_MAP(GP__FITS)
#undef GP__FITS

const struct gp_call_info *gp_call_info(unsigned type)
{
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].type == type)
			return &calls[i];
	return NULL;
}

const struct gp_call_info *gp_call_all(size_t *n)
{
	*n = sizeof(calls) / sizeof(calls[0]);
	return calls;
}
