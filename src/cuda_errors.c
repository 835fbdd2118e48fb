/* cuda_errors.c -- names and meanings of CUresult values, for both of our libcuda builds. */
#include <stddef.h>

#include <cuda.h>

#include "cuda_errors.h"
#include "cuda_errors_api.h"

static const struct {
	int code;
	const char *name;
	const char *text;
} errs[] = {
#define GP_CUERR_ROW(code, text) {code, #code, text},
	GP_CUDA_ERRORS(GP_CUERR_ROW)
#undef GP_CUERR_ROW
};

const char *gp_cuda_error_name(int r)
{
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == r)
			return errs[i].name;
	return NULL;
}

const char *gp_cuda_error_string(int r)
{
	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (errs[i].code == r)
			return errs[i].text;
	return NULL;
}
