/* nvml_source.c -- what softgpu's libnvidia-ml.so.1 asks of softgpu (src/nvml_source.h):
 * devices, memory in use, engine busy time, whether this process uses a device, and the GPUs
 * in MIG mode (mig.c). */
#include <stdio.h>
#include <string.h>

#include <gpupool/gpupool.h>

#include "cuda_host.h"
#include "nvml_source.h"
#include "softgpu.h"

/*
 * softgpu lives inside one process, so everything here is that process's view: "used" memory
 * is what its allocator has charged on the device (device allocations, module globals, the
 * device-side heap; not page-locked host memory), busy time is the time this process's streams
 * ran kernels (and copies and memsets) on the device, and the one process it can list is itself.
 *
 * Busy time: a device is busy while at least one operation of the kind runs on it, so grids
 * running concurrently on several streams count once. busy_lock is a leaf, taken for a few
 * instructions at the start and end of each stream operation.
 */

void sg_busy_enter(struct sg_device *dev, bool kernel)
{
	uint64_t now = sg_now_ns();

	pthread_mutex_lock(&dev->busy_lock);
	for (int k = kernel ? 0 : 1; k < 2; k++)
		if (dev->busy_active[k]++ == 0)
			dev->busy_since[k] = now;
	pthread_mutex_unlock(&dev->busy_lock);
}

void sg_busy_leave(struct sg_device *dev, bool kernel)
{
	uint64_t now = sg_now_ns();

	pthread_mutex_lock(&dev->busy_lock);
	for (int k = kernel ? 0 : 1; k < 2; k++)
		if (--dev->busy_active[k] == 0)
			dev->busy_ns[k] += now - dev->busy_since[k];
	pthread_mutex_unlock(&dev->busy_lock);
}

/* NVML lists what CUDA lists: cuInit's devices (CUDA_VISIBLE_DEVICES applied), none when
 * every device is hidden. */
static CUresult device_count(int *count)
{
	CUresult r = cuInit(0);

	if (r == CUDA_ERROR_NO_DEVICE) {
		*count = 0;
		return CUDA_SUCCESS;
	}
	if (r)
		return r;
	*count = sg_ndevices;
	return CUDA_SUCCESS;
}

static CUresult memory(CUdevice d, uint64_t *used, uint64_t *total)
{
	struct sg_device *dev;
	uint64_t fr;
	CUresult r = sg_device_get(d, &dev);

	if (r)
		return r;
	sg_mem_info(dev, &fr, total);
	*used = *total - fr;
	return CUDA_SUCCESS;
}

static CUresult busy(CUdevice d, uint64_t out[2], uint64_t *now_ns)
{
	struct sg_device *dev;
	CUresult r = sg_device_get(d, &dev);
	uint64_t now;

	if (r)
		return r;
	pthread_mutex_lock(&dev->busy_lock);
	now = sg_now_ns();
	for (int k = 0; k < 2; k++)
		out[k] = dev->busy_ns[k] + (dev->busy_active[k] ? now - dev->busy_since[k] : 0);
	pthread_mutex_unlock(&dev->busy_lock);
	*now_ns = now;
	return CUDA_SUCCESS;
}

static CUresult process(CUdevice d, uint64_t *used)
{
	uint64_t total;
	struct sg_device *dev;
	CUresult r = sg_device_get(d, &dev);

	if (r)
		return r;
	if (__atomic_load_n(&dev->contexts, __ATOMIC_RELAXED) == 0)
		return CUDA_ERROR_NOT_FOUND;
	return memory(d, used, &total);
}

/* The i-th GPU in MIG mode (SOFTGPU_MIG), whatever CUDA_VISIBLE_DEVICES lets this process
 * see: NVML lists every GPU. */
static CUresult mig_gpu(int i, struct gp__nvml_mig_gpu *out)
{
	CUresult r = cuInit(0);

	if (r && r != CUDA_ERROR_NO_DEVICE)
		return r;
	for (int p = 0; p < sg_cfg.devices; p++) {
		const struct sg_mig_gpu *g = &sg_mig[p];

		if (!g->enabled || i-- > 0)
			continue;
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "%.80s", sg_cfg.name);
		out->uuid = g->parent;
		out->memory = sg_cfg.memory;
		out->sm_count = sg_cfg.sm_full;
		out->pci_bus = g->pci_bus;
		out->ninstances = (unsigned)g->ninst;
		for (int k = 0; k < g->ninst && k < GP_NVML_MIG_MAX; k++) {
			struct gp__nvml_mig_instance *in = &out->instance[k];

			snprintf(in->profile, sizeof(in->profile), "%s", g->inst[k].profile);
			in->uuid = g->inst[k].uuid;
			in->memory = g->inst[k].memory;
			in->sm_count = g->inst[k].sm_count;
			in->slices = g->inst[k].slices;
			in->gpu_instance = (unsigned)k + 1;
			in->compute_instance = 0;
		}
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

const struct gp__nvml_source gp__nvml_source = {
	.size = sizeof(struct gp__nvml_source),
	.device_count = device_count,
	.memory = memory,
	.busy = busy,
	.process = process,
	.driver_version = GP_VERSION_STRING,
	.mig_gpu = mig_gpu,
};
