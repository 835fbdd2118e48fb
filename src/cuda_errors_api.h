/* cuda_errors_api.h -- CUresult names and meanings (cuGetErrorName/cuGetErrorString). */
#ifndef GP_CUDA_ERRORS_API_H
#define GP_CUDA_ERRORS_API_H

/* "CUDA_ERROR_OUT_OF_MEMORY", or NULL for a value cuda.h does not define. */
const char *gp_cuda_error_name(int r);
/* A one-line meaning, or NULL for a value cuda.h does not define. */
const char *gp_cuda_error_string(int r);

#endif
