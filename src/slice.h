/* slice.h -- GPUPOOL_SLICE, what a session asks of a MIG instance, and the pool's numbering of
 * GPUs in MIG mode and their instances (docs/operations.md "Slicing and sharing"). Shared by
 * the interposer (which checks the value before it asks) and the supervisor (which parses the
 * client's text again: it trusts no client). */
#ifndef GP_SLICE_H
#define GP_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * GPUPOOL_SLICE is one of:
 *   a profile name, "1g.10gb": NVIDIA's spelling (N compute slices of 7, M GB), matched
 *     exactly (letters in any case);
 *   minimums, "mem>=8G,sms>=20": either or both, comma-separated; mem takes a size with
 *     K/M/G/T (powers of 1024), sms a count of multiprocessors.
 * Either way the session is placed on a MIG instance only.
 */
struct gp_slice {
	bool set;
	char profile[16]; /* "" when minimums */
	uint64_t min_mem; /* bytes; 0: any */
	uint32_t min_sms; /* 0: any */
};

/* Parses s ("" or NULL: no slice asked for). 0, or -1 with why in err. */
int gp_slice_parse(const char *s, struct gp_slice *out, char *err, size_t errlen);
/* Does an instance with this profile, memory and multiprocessor count satisfy sl? */
bool gp_slice_matches(const struct gp_slice *sl, const char *profile, uint64_t mem, uint32_t sms);

/* Pool indices: a whole GPU's is its CUDA ordinal (below 64); the g-th GPU in MIG mode (in
 * NVML's order) is 64 + g; its instance k is 128 + 8 * g + k. */
#define GP_SLICE_MIG_GPUS 8
#define GP_SLICE_MIG_INSTANCES 7
#define GP_SLICE_GPU_INDEX(g) (64u + (unsigned)(g))
#define GP_SLICE_INSTANCE_INDEX(g, k) (128u + 8u * (unsigned)(g) + (unsigned)(k))

#endif
