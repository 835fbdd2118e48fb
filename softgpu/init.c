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

/*
 * CUDA_VISIBLE_DEVICES, as NVIDIA's driver reads it: indices or (prefixes of)
 * GPU UUIDs, comma-separated, in the order given; an entry that names no
 * device ends the list; an empty value hides every device. Fills map with
 * physical indices and returns how many are visible.
 */
static int visible_devices(const struct sg_device *all, int n, int *map)
{
	const char *env = getenv("CUDA_VISIBLE_DEVICES");
	char buf[1024], *save = NULL;
	int count = 0;

	if (env == NULL) {
		for (int i = 0; i < n; i++)
			map[i] = i;
		return n;
	}
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *tok = strtok_r(buf, ",", &save); tok && count < n;
	     tok = strtok_r(NULL, ",", &save)) {
		int found = -1;

		while (*tok == ' ')
			tok++;
		if (strncmp(tok, "GPU-", 4) == 0) {
			for (int i = 0; i < n && found < 0; i++) {
				char u[64];

				uuid_string(&all[i].uuid, u, sizeof(u));
				if (strncmp(u, tok, strlen(tok)) == 0)
					found = i;
			}
		} else {
			char *end;
			long v = strtol(tok, &end, 10);

			if (end != tok && *end == 0 && v >= 0 && v < n)
				found = (int)v;
		}
		if (found < 0)
			break;
		for (int k = 0; k < count; k++)
			if (map[k] == found)
				found = -1;
		if (found < 0)
			break;
		map[count++] = found;
	}
	return count;
}

static void do_init(void)
{
	struct sg_device *all;
	int *map, nvis;
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

		*d = all[map[i]];
		d->ordinal = i;
		d->mem_total = sg_cfg.memory;
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
