/* errors.c -- error names for softgpu's own log lines (cuGetErrorName and cuGetErrorString
 * themselves are src/cuda_entry.c, on the table both libraries share). */
#include "cuda_errors_api.h"
#include "softgpu.h"

const char *sg_error_name(CUresult e)
{
	const char *n = gp_cuda_error_name((int)e);

	return n ? n : "CUDA_ERROR_UNKNOWN";
}
