// rt_check.h -- shared by the runtime-API test programs: fail loudly with the call, the
// error's name and where, and a CPU-side comparison helper.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                                \
	do {                                                                                    \
		cudaError_t e_ = (call);                                                        \
		if (e_ != cudaSuccess) {                                                        \
			std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, \
				     #call, cudaGetErrorName(e_), cudaGetErrorString(e_));      \
			std::exit(1);                                                           \
		}                                                                               \
	} while (0)

#define EXPECT(cond, ...)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			std::fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond); \
			std::fprintf(stderr, __VA_ARGS__);                                       \
			std::fprintf(stderr, "\n");                                              \
			std::exit(1);                                                            \
		}                                                                                \
	} while (0)
