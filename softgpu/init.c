/* init.c -- cuInit, cuDriverGetVersion and the device table. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

struct sg_device *sg_devices;
int sg_ndevices;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static volatile int inited;

/* A stable UUID per (name, ordinal), shaped as an RFC 4122 version-4 UUID. */
static void make_uuid(struct sg_device *d)
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x9e3779b97f4a7c15ull;
	char key[300];
	int n = snprintf(key, sizeof(key), "softgpu/%s/%d", d->name, d->ordinal);

	for (int i = 0; i < n; i++) {
		h1 = (h1 ^ (unsigned char)key[i]) * 0x100000001b3ull;
		h2 = (h2 ^ (unsigned char)key[i]) * 0xff51afd7ed558ccdull + 0x2545f4914f6cdd1dull;
	}
	memcpy(d->uuid.bytes, &h1, 8);
	memcpy(d->uuid.bytes + 8, &h2, 8);
	d->uuid.bytes[6] = (char)((d->uuid.bytes[6] & 0x0f) | 0x40);
	d->uuid.bytes[8] = (char)((d->uuid.bytes[8] & 0x3f) | 0x80);
}

/* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", as nvidia-smi and CUDA_VISIBLE_DEVICES spell it */
static void uuid_string(const CUuuid *u, char *out, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(out, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
		 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
		 b[14], b[15]);
}

/* A device CUDA may enumerate: a whole GPU (mig -1) or a MIG instance of one. */
struct cand {
	int phys, mig;
};

/* The devices in the order a process without CUDA_VISIBLE_DEVICES sees them: the GPUs not in
 * MIG mode, and in its GPU's place the first instance of the first GPU in MIG mode that has
 * one (NVIDIA's CUDA enumerates one MIG instance per process). */
static int default_devices(int n, struct cand *out)
{
	bool mig = false;
	int count = 0;

	for (int i = 0; i < n; i++) {
		if (!sg_mig[i].enabled)
			out[count++] = (struct cand){i, -1};
		else if (!mig && sg_mig[i].ninst > 0)
			out[count++] = (struct cand){i, 0}, mig = true;
	}
	return count;
}

/*
 * CUDA_VISIBLE_DEVICES, as NVIDIA's driver reads it: indices (into the list a process without
 * it sees), (prefixes of) GPU UUIDs or MIG instance UUIDs, comma-separated, in the order given;
 * an entry that names no device ends the list; an empty value hides every device. A GPU in MIG
 * mode named by its GPU UUID stands for its first instance. Only the first MIG instance listed
 * is enumerated (CUDA 11 and later enumerate one per process); later ones are passed over.
 * Fills map and returns how many are visible.
 */
static int visible_devices(const struct sg_device *all, int n, struct cand *map)
{
	const char *env = getenv("CUDA_VISIBLE_DEVICES");
	char buf[1024], *save = NULL;
	struct cand def[16];
	int count = 0, ndef = default_devices(n, def);
	bool mig = false;

	if (env == NULL) {
		memcpy(map, def, sizeof(def[0]) * (size_t)ndef);
		return ndef;
	}
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *tok = strtok_r(buf, ",", &save); tok && count < n;
	     tok = strtok_r(NULL, ",", &save)) {
		struct cand found = {-1, -1};
		bool dup = false;

		while (*tok == ' ')
			tok++;
		if (strncmp(tok, "GPU-", 4) == 0) {
			for (int i = 0; i < n && found.phys < 0; i++) {
				char u[64];

				uuid_string(&all[i].uuid, u, sizeof(u));
				if (strncmp(u, tok, strlen(tok)) != 0)
					continue;
				if (!sg_mig[i].enabled)
					found = (struct cand){i, -1};
				else if (sg_mig[i].ninst > 0)
					found = (struct cand){i, 0};
			}
		} else if (strncmp(tok, "MIG-", 4) == 0) {
			for (int i = 0; i < n && found.phys < 0; i++) {
				for (int k = 0; k < sg_mig[i].ninst && found.phys < 0; k++) {
					char u[64];

					sg_mig_uuid_string(&sg_mig[i].inst[k].uuid, u, sizeof(u));
					if (strncmp(u, tok, strlen(tok)) == 0)
						found = (struct cand){i, k};
				}
			}
		} else {
			char *end;
			long v = strtol(tok, &end, 10);

			if (end != tok && *end == 0 && v >= 0 && v < ndef)
				found = def[v];
		}
		if (found.phys < 0)
			break;
		for (int k = 0; k < count; k++)
			dup = dup || (map[k].phys == found.phys && map[k].mig == found.mig);
		if (dup)
			break;
		if (found.mig >= 0 && mig) {
			sg_log("CUDA_VISIBLE_DEVICES: %s passed over: a process uses one MIG "
			       "instance",
			       tok);
			continue;
		}
		mig = mig || found.mig >= 0;
		map[count++] = found;
	}
	return count;
}

static void do_init(void)
{
	struct sg_device *all;
	struct cand *map;
	int nvis;
	int r = sg_config_load();

	if (r) {
		init_result = (CUresult)r;
		return;
	}
	all = calloc((size_t)sg_cfg.devices + 1, sizeof(*all));
	map = calloc((size_t)sg_cfg.devices + 1, sizeof(*map));
	if (all == NULL || map == NULL) {
		free(all);
		free(map);
		init_result = CUDA_ERROR_OUT_OF_MEMORY;
		return;
	}
	/* the physical devices, then the ones CUDA_VISIBLE_DEVICES lets through */
	for (int i = 0; i < sg_cfg.devices; i++) {
		snprintf(all[i].name, sizeof(all[i].name), "%s", sg_cfg.name);
		all[i].ordinal = i;
		all[i].pci_bus = 1 + i;
		make_uuid(&all[i]);
		sg_mig_attach(i, &all[i].uuid, all[i].pci_bus);
	}
	nvis = visible_devices(all, sg_cfg.devices, map);
	if (nvis == 0) {
		free(all);
		free(map);
		init_result = CUDA_ERROR_NO_DEVICE;
		return;
	}
	sg_devices = calloc((size_t)nvis, sizeof(*sg_devices));
	if (sg_devices == NULL) {
		free(all);
		free(map);
		init_result = CUDA_ERROR_OUT_OF_MEMORY;
		return;
	}
	for (int i = 0; i < nvis; i++) {
		struct sg_device *d = &sg_devices[i];

		*d = all[map[i].phys];
		d->ordinal = i;
		d->phys = map[i].phys;
		d->mig = map[i].mig;
		d->mem_total = sg_cfg.memory;
		d->sm_count = sg_cfg.sm_count;
		if (d->mig >= 0) {
			const struct sg_mig_instance *in = &sg_mig[d->phys].inst[d->mig];

			/* NVIDIA names an instance "<GPU> MIG 1g.10gb" and reports its UUID. */
			snprintf(d->name, sizeof(d->name), "%.200s MIG %s", sg_cfg.name,
				 in->profile);
			d->uuid = in->uuid;
			d->mem_total = in->memory;
			d->sm_count = in->sm_count * sg_cfg.thread_pct / 100;
			if (d->sm_count == 0)
				d->sm_count = 1;
		}
		pthread_mutex_init(&d->busy_lock, NULL);
		if (sg_memory_init(d)) {
			sg_log("cannot reserve %llu bytes of address space for device %d",
			       (unsigned long long)d->mem_total, i);
			free(all);
			free(map);
			init_result = CUDA_ERROR_OUT_OF_MEMORY;
			return;
		}
	}
	free(all);
	free(map);
	sg_ndevices = nvis;
	sg_log("%d device(s) \"%s\", compute capability %d.%d (%s), %llu MiB each, %u SMs, "
	       "%u block thread(s) (%u%% of the device)",
	       sg_ndevices, sg_cfg.name, sg_cfg.arch->major, sg_cfg.arch->minor, sg_cfg.arch->model,
	       (unsigned long long)(sg_cfg.memory >> 20), sg_cfg.sm_count, sg_block_threads(),
	       sg_cfg.thread_pct);
	init_result = CUDA_SUCCESS;
	__atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
}

SG_EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&once, do_init);
	return init_result;
}

CUresult sg_inited(void)
{
	if (__atomic_load_n(&inited, __ATOMIC_ACQUIRE))
		return CUDA_SUCCESS;
	return CUDA_ERROR_NOT_INITIALIZED;
}

SG_EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (version == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*version = SG_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult sg_device_get(CUdevice d, struct sg_device **out)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (d < 0 || d >= sg_ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = &sg_devices[d];
	return CUDA_SUCCESS;
}
