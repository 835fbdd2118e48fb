/* mig.c -- MIG emulation: SOFTGPU_MIG puts GPUs in MIG mode with the instances it lists, each
 * with its share of the GPU's memory and multiprocessors and a MIG-... UUID of its own. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

/*
 * SOFTGPU_MIG=GPU:PROFILE[,PROFILE...][;GPU:...], e.g. "0:1g.2gb,2g.4gb;1:3g.8gb". GPU is a
 * physical index below SOFTGPU_DEVICES, each at most once; "1:" puts GPU 1 in MIG mode with no
 * instances. A PROFILE is NVIDIA's spelling, Ng.Mgb: N compute slices of the GPU's 7 and M GiB
 * of its memory. On a GPU the slices add up to at most 7 and the memory to at most
 * SOFTGPU_MEMORY; an instance has N/7 of SOFTGPU_SMS (at least 1), and CUDA_MPS_ACTIVE_THREAD_
 * PERCENTAGE cuts that as it cuts a whole GPU's. At most 7 instances a GPU. Each instance is one
 * GPU instance with one compute instance spanning it (NVML: GPU instance id index + 1, compute
 * instance id 0).
 *
 * A GPU in MIG mode is no CUDA device itself; which instances CUDA enumerates is init.c's
 * (visible_devices): one per process, as NVIDIA's CUDA 11 and later.
 */

struct sg_mig_gpu sg_mig[16];

static int bad(const char *v, const char *why)
{
	sg_log("SOFTGPU_MIG=%s: %s (expected e.g. \"0:1g.2gb,2g.4gb;1:3g.8gb\")", v, why);
	return CUDA_ERROR_INVALID_VALUE;
}

/* "Ng.Mgb" at *p, up to ',' ';' or the end. */
static int profile(const char *v, const char **p, struct sg_mig_instance *in)
{
	char *end;
	unsigned long n, m;

	if (!isdigit((unsigned char)**p))
		return bad(v, "a profile is Ng.Mgb: N compute slices (1-7), M GiB");
	n = strtoul(*p, &end, 10);
	if (strncmp(end, "g.", 2) != 0 || !isdigit((unsigned char)end[2]))
		return bad(v, "a profile is Ng.Mgb: N compute slices (1-7), M GiB");
	m = strtoul(end + 2, &end, 10);
	if (strncmp(end, "gb", 2) != 0 || (end[2] != 0 && end[2] != ',' && end[2] != ';'))
		return bad(v, "a profile is Ng.Mgb: N compute slices (1-7), M GiB");
	if (n < 1 || n > 7)
		return bad(v, "an instance has 1 to 7 compute slices");
	if (m < 1 || m > (1u << 20))
		return bad(v, "an instance has at least 1 GiB");
	*p = end + 2;
	in->slices = (unsigned)n;
	in->memory = (uint64_t)m << 30;
	snprintf(in->profile, sizeof(in->profile), "%lug.%lugb", n, m);
	in->sm_count = sg_cfg.sm_full * (unsigned)n / 7;
	if (in->sm_count == 0)
		in->sm_count = 1;
	return 0;
}

int sg_mig_load(void)
{
	const char *v = getenv("SOFTGPU_MIG"), *p;

	memset(sg_mig, 0, sizeof(sg_mig));
	if (v == NULL || *v == 0)
		return 0;
	for (p = v; *p;) {
		struct sg_mig_gpu *g;
		unsigned slices = 0;
		uint64_t mem = 0;
		char *end;
		unsigned long gpu;

		if (!isdigit((unsigned char)*p))
			return bad(v, "each entry starts with a GPU index and ':'");
		gpu = strtoul(p, &end, 10);
		if (*end != ':')
			return bad(v, "each entry starts with a GPU index and ':'");
		if (gpu >= (unsigned long)sg_cfg.devices)
			return bad(v, "a GPU index is below SOFTGPU_DEVICES");
		g = &sg_mig[gpu];
		if (g->enabled)
			return bad(v, "a GPU is listed twice");
		g->enabled = true;
		p = end + 1;
		while (*p && *p != ';') {
			if (g->ninst == SG_MIG_MAX)
				return bad(v, "a GPU has at most 7 instances");
			if (profile(v, &p, &g->inst[g->ninst]))
				return CUDA_ERROR_INVALID_VALUE;
			slices += g->inst[g->ninst].slices;
			mem += g->inst[g->ninst].memory;
			g->ninst++;
			if (*p == ',' && (p[1] == 0 || p[1] == ',' || p[1] == ';'))
				return bad(v, "an empty profile");
			if (*p == ',')
				p++;
		}
		if (slices > 7)
			return bad(v, "a GPU's instances have at most 7 compute slices together");
		if (mem > sg_cfg.memory)
			return bad(v, "a GPU's instances have at most SOFTGPU_MEMORY together");
		if (*p == ';')
			p++;
	}
	return 0;
}

void sg_mig_attach(int i, const CUuuid *parent, int pci_bus)
{
	struct sg_mig_gpu *g = &sg_mig[i];

	g->parent = *parent;
	g->pci_bus = pci_bus;
	for (int k = 0; k < g->ninst; k++) {
		uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
		unsigned char key[17];
		CUuuid *u = &g->inst[k].uuid;

		/* Stable: the parent's UUID and the instance's index. */
		memcpy(key, parent->bytes, 16);
		key[16] = (unsigned char)k;
		for (int b = 0; b < 17; b++) {
			h1 = (h1 ^ key[b]) * 0x100000001b3ull;
			h2 = (h2 ^ key[b]) * 0xff51afd7ed558ccdull + 0x2545f4914f6cdd1dull;
		}
		memcpy(u->bytes, &h1, 8);
		memcpy(u->bytes + 8, &h2, 8);
		u->bytes[6] = (char)((u->bytes[6] & 0x0f) | 0x40);
		u->bytes[8] = (char)((u->bytes[8] & 0x3f) | 0x80);
	}
}

void sg_mig_uuid_string(const CUuuid *u, char *out, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, len,
		 "MIG-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}
