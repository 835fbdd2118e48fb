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

static void do_init(void)
{
	int r = sg_config_load();

	if (r) {
		init_result = (CUresult)r;
		return;
	}
	if (sg_cfg.devices == 0) {
		init_result = CUDA_ERROR_NO_DEVICE;
		return;
	}
	sg_devices = calloc((size_t)sg_cfg.devices, sizeof(*sg_devices));
	if (sg_devices == NULL) {
		init_result = CUDA_ERROR_OUT_OF_MEMORY;
		return;
	}
	for (int i = 0; i < sg_cfg.devices; i++) {
		struct sg_device *d = &sg_devices[i];

		d->ordinal = i;
		snprintf(d->name, sizeof(d->name), "%s", sg_cfg.name);
		d->mem_total = sg_cfg.memory;
		d->pci_bus = 1 + i;
		make_uuid(d);
		if (sg_memory_init(d)) {
			sg_log("cannot reserve %llu bytes of address space for device %d",
			       (unsigned long long)d->mem_total, i);
			init_result = CUDA_ERROR_OUT_OF_MEMORY;
			return;
		}
	}
	sg_ndevices = sg_cfg.devices;
	sg_log("%d device(s) \"%s\", %llu MiB each, %u block thread(s)", sg_ndevices, sg_cfg.name,
	       (unsigned long long)(sg_cfg.memory >> 20), sg_cfg.threads);
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
