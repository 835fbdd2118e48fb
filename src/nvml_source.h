/* nvml_source.h -- gpupool's own export table: what an NVML library asks the libcuda.so.1
 * beside it (softgpu's, or the interposer) about the devices that library reports. */
#ifndef GP_NVML_SOURCE_H
#define GP_NVML_SOURCE_H

#include <stdint.h>

#include <cuda.h>

/*
 * Served by cuGetExportTable(&table, &GP_NVML_SOURCE_ID) of each gpupool libcuda.so.1 that
 * defines gp__nvml_source (cuda_host.h); any other libcuda answers CUDA_ERROR_NOT_FOUND, which
 * is how our libnvidia-ml.so.1 (nvml.c) knows it sits beside the wrong library. The table is
 * in-process only (function pointers), so it exports no name of ours: the libcuda builds keep
 * exporting exactly CUDA's names.
 *
 * Device ordinals are the CUDA ordinals of the same library, so NVML and CUDA list the same
 * devices in the same order with the same UUIDs. Every function may run on any thread.
 */

/* "gpupool-nvml-src": the bytes of the id, in memory order. */
#define GP_NVML_SOURCE_ID_BYTES "gpupool-nvml-src"

/* MIG: a GPU in MIG mode and its instances (one compute instance each), as NVML lists them. */
#define GP_NVML_MIG_MAX 7

struct gp__nvml_mig_instance {
	char profile[16]; /* "1g.10gb": compute slices (of 7) and memory */
	CUuuid uuid;	  /* "MIG-..." in text */
	uint64_t memory;  /* bytes */
	unsigned sm_count;
	unsigned slices; /* GPU instance slices, of 7 */
	/* NVML's ids */
	unsigned gpu_instance, compute_instance;
};

struct gp__nvml_mig_gpu {
	char name[96];
	CUuuid uuid; /* "GPU-..." in text */
	uint64_t memory;
	unsigned sm_count;
	int pci_bus;
	unsigned ninstances;
	struct gp__nvml_mig_instance instance[GP_NVML_MIG_MAX];
};

struct gp__nvml_source {
	uint64_t size; /* sizeof(struct gp__nvml_source), as the dark-API tables' slot 0 */
	/* The devices as CUDA numbers them now: softgpu brings itself up (cuInit, which touches
	 * nothing outside the process); the interposer answers the open session's devices and
	 * 0 when none is open, and never opens one. CUresult. */
	CUresult (*device_count)(int *count);
	/* Bytes in use on dev and the device's size, as this library defines them (softgpu: its
	 * allocator's charge in this process; the interposer: the session's, via cuMemGetInfo).
	 * CUDA_ERROR_NOT_SUPPORTED when it cannot tell. */
	CUresult (*memory)(CUdevice dev, uint64_t *used, uint64_t *total);
	/* Cumulative nanoseconds in which dev ran a kernel (busy[0]) and in which it ran a kernel,
	 * copy or memset (busy[1]), read at *now_ns (CLOCK_MONOTONIC). NOT_SUPPORTED if unknown. */
	CUresult (*busy)(CUdevice dev, uint64_t busy[2], uint64_t *now_ns);
	/* Whether this process uses dev (holds a context on it) and the bytes it holds there;
	 * CUDA_ERROR_NOT_FOUND when it does not, NOT_SUPPORTED when that cannot be known. */
	CUresult (*process)(CUdevice dev, uint64_t *used);
	/* What nvmlSystemGetDriverVersion reports: the library's own name and version. */
	const char *driver_version;
	/* The GPUs in MIG mode, whatever CUDA_VISIBLE_DEVICES says, numbered from 0: fills *out
	 * for gpu i, CUDA_ERROR_INVALID_VALUE past the last. NULL: no GPU is partitioned (the
	 * interposer). NVML lists these after CUDA's devices and leaves out the CUDA devices
	 * that are their instances (an instance is a MIG handle of its GPU, not a device). */
	CUresult (*mig_gpu)(int i, struct gp__nvml_mig_gpu *out);
};

#endif
