/* cuda_errors.c -- names and meanings of CUresult values, for both of our libcuda builds. */
#include <stddef.h>

#include "cuda_errors.h"
#include "cuda_errors_api.h"

const char *gp_cuda_error_name(int r)
{
	switch (r) {
#define GP_CUERR_NAME(name, val, msg) \
	case val:                     \
		return #name;
		GP_CUDA_ERRORS(GP_CUERR_NAME)
#undef GP_CUERR_NAME
	default:
		return NULL;
	}
}

const char *gp_cuda_error_string(int r)
{
	switch (r) {
#define GP_CUERR_MSG(name, val, msg) \
	case val:                    \
		return msg;
		GP_CUDA_ERRORS(GP_CUERR_MSG)
#undef GP_CUERR_MSG
	default:
		return NULL;
	}
}
