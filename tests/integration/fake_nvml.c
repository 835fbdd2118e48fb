/* fake_nvml.c -- a test double of NVIDIA's libnvidia-ml.so.1 that disagrees with the driver:
 * it lists only the GPU whose UUID is in FAKE_NVML_UUID, with FAKE_NVML_TOTAL bytes of memory.
 * test-nvml-inventory.sh puts it beside softgpu's libcuda.so.1 to reach the inventory's
 * warnings; nothing else uses it. */
#include <stdlib.h>
#include <string.h>

#include "nvml_abi.h"

static int dummy;

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void)
{
	return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void)
{
	return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char *nvmlErrorString(nvmlReturn_t r)
{
	return r == NVML_ERROR_NOT_FOUND ? "Not Found" : "Unknown Error";
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char *v,
									       unsigned int len)
{
	if (len < 5)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(v, "fake", 5);
	return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid,
									      nvmlDevice_t *device)
{
	const char *only = getenv("FAKE_NVML_UUID");

	if (only == NULL || strcmp(uuid, only) != 0)
		return NVML_ERROR_NOT_FOUND;
	*device = (nvmlDevice_t)&dummy;
	return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
									    nvmlMemory_t *m)
{
	const char *total = getenv("FAKE_NVML_TOTAL");

	(void)device;
	m->total = total ? strtoull(total, NULL, 10) : 0;
	m->used = 0;
	m->free = m->total;
	return NVML_SUCCESS;
}
