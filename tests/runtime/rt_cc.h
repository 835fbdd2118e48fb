// rt_cc.h -- for the runtime-API test programs run at a SOFTGPU_CC (NVIDIA's libraries): the
// device they see has the compute capability SOFTGPU_CC names; operands up and results down.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

#include "rt_check.h"

// A device copy of a host vector, and back (the library tests' operands and results).
template <typename T> static T *upload(const std::vector<T> &h)
{
	T *d;

	CK(cudaMalloc(&d, h.size() * sizeof(T)));
	CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
	return d;
}

template <typename T> static std::vector<T> download(const T *d, size_t n)
{
	std::vector<T> h(n);

	CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
	return h;
}

// Through the pool the interposer answers it from the worker's device snapshot, and this
// process's SOFTGPU_CC reaches only the worker's softgpu (through the daemon's environment).
static inline void rt_check_softgpu_cc()
{
	const char *want = std::getenv("SOFTGPU_CC");
	cudaDeviceProp p;
	int major, minor, wmaj, wmin;

	EXPECT(want && std::sscanf(want, "%d.%d", &wmaj, &wmin) == 2,
	       "SOFTGPU_CC (%s) names the compute capability to expect", want ? want : "unset");
	CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
	CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
	CK(cudaGetDeviceProperties(&p, 0));
	EXPECT(major == wmaj && minor == wmin, "compute capability %d.%d, want %s", major, minor,
	       want);
	EXPECT(p.major == major && p.minor == minor, "properties say %d.%d", p.major, p.minor);
	std::printf("device %s, compute capability %d.%d\n", p.name, major, minor);
}
