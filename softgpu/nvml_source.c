/* nvml_source.c -- what softgpu's libnvidia-ml.so.1 asks of softgpu (src/nvml_source.h):
 * devices, memory in use, engine busy time and whether this process uses a device. */
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

const struct gp__nvml_source gp__nvml_source = {
	.size = sizeof(struct gp__nvml_source),
	.device_count = device_count,
	.memory = memory,
	.busy = busy,
	.process = process,
	.driver_version = GP_VERSION_STRING,
};
