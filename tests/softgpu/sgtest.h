/* sgtest.h -- helpers for softgpu's tests: context setup, loading the nvcc-built kernels. */
#ifndef SGTEST_H
#define SGTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cuda.h>

/* Fails the test with the CUresult's name when x is not CUDA_SUCCESS. */
#define CK(x) sgt_check((x), #x, __FILE__, __LINE__)
/* Fails unless x returns exactly `want`. */
#define CK_EQ(x, want) sgt_check_eq((x), (want), #x, __FILE__, __LINE__)

void sgt_check(CUresult r, const char *expr, const char *file, int line);
void sgt_check_eq(CUresult r, CUresult want, const char *expr, const char *file, int line);

/* cuInit, device 0, a new context made current (cmocka setup/teardown shapes). */
int sgt_setup(void **state);
int sgt_teardown(void **state);

/* Loads KERNEL_DIR/<name> (PTX or fatbin) as a module of the current context. */
CUmodule sgt_module(const char *name);
/* The file's bytes, NUL-terminated; free() them. */
void *sgt_read(const char *name, size_t *size);
CUfunction sgt_function(CUmodule m, const char *name);

/* Deterministic pseudo-random numbers for inputs. */
uint32_t sgt_rand(uint32_t *state);
float sgt_randf(uint32_t *state, float lo, float hi);

/* ulp distance between two floats (0 when bitwise equal, huge for NaN vs number) */
uint32_t sgt_ulp(float a, float b);

#endif
