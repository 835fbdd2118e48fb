/* device.c -- cuDevice* queries: count, handles, name, memory, UUID, PCI id, attributes. */
#include <stdio.h>
#include <string.h>

#include <cudaProfiler.h>

#include "softgpu.h"

SG_EXPORT CUresult cuDeviceGetCount(int *count)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*count = sg_ndevices;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	struct sg_device *d;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (device == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = sg_device_get(ordinal, &d);
	if (r)
		return r;
	*device = ordinal;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (name == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", d->name);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (bytes == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = d->mem_total;
	return CUDA_SUCCESS;
}

/* the CUDA 2.0 ABI: 32-bit size */
#undef cuDeviceTotalMem
SG_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev);
SG_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	size_t b;
	CUresult r = cuDeviceTotalMem_v2(bytes ? &b : NULL, dev);

	if (r == CUDA_SUCCESS)
		*bytes = b > 0xffffffffu ? 0xffffffffu : (unsigned int)b;
	return r;
}

SG_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (uuid == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*uuid = d->uuid;
	return CUDA_SUCCESS;
}

#undef cuDeviceGetUuid
SG_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
SG_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

SG_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return sg_device_attr(d, (int)attrib, pi);
}

SG_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (major == NULL || minor == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*major = sg_arch()->major;
	*minor = sg_arch()->minor;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (prop == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(prop, 0, sizeof(*prop));
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &prop->maxThreadsPerBlock);
	for (int i = 0; i < 3; i++) {
		sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i, &prop->maxThreadsDim[i]);
		sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i, &prop->maxGridSize[i]);
	}
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
		       &prop->sharedMemPerBlock);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, &prop->totalConstantMemory);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE, &prop->SIMDWidth);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_PITCH, &prop->memPitch);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &prop->regsPerBlock);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &prop->clockRate);
	sg_device_attr(d, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, &prop->textureAlign);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	struct sg_device *d;
	CUresult r = sg_device_get(dev, &d);

	if (r)
		return r;
	if (pciBusId == NULL || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", d->pci_bus);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	unsigned dom, bus, devn, fn;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (dev == NULL || pciBusId == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &devn, &fn) != 4 &&
	    (dom = 0, sscanf(pciBusId, "%x:%x.%x", &bus, &devn, &fn) != 3))
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < sg_ndevices; i++) {
		if (dom == 0 && bus == (unsigned)sg_devices[i].pci_bus && devn == 0 && fn == 0) {
			*dev = i;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_DEVICE;
}

SG_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	struct sg_device *a, *b;
	CUresult r = sg_device_get(dev, &a);

	if (r == CUDA_SUCCESS)
		r = sg_device_get(peerDev, &b);
	if (r)
		return r;
	if (canAccessPeer == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*canAccessPeer = 0; /* peer access is not implemented */
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
					   CUdevice srcDevice, CUdevice dstDevice)
{
	struct sg_device *a, *b;
	CUresult r = sg_device_get(srcDevice, &a);

	if (r == CUDA_SUCCESS)
		r = sg_device_get(dstDevice, &b);
	if (r)
		return r;
	if (value == NULL || srcDevice == dstDevice)
		return CUDA_ERROR_INVALID_DEVICE;
	*value = 0;
	return CUDA_SUCCESS;
}

/* No profiler attaches to softgpu: these succeed and do nothing, as NVIDIA's driver does
 * without one. */
SG_EXPORT CUresult cuProfilerStart(void)
{
	return sg_inited();
}

SG_EXPORT CUresult cuProfilerStop(void)
{
	return sg_inited();
}

SG_EXPORT CUresult cuProfilerInitialize(const char *configFile, const char *outputFile,
					CUoutput_mode outputMode)
{
	CUresult r = sg_inited();

	if (r == CUDA_SUCCESS &&
	    (configFile == NULL || outputFile == NULL || (unsigned)outputMode > CU_OUT_CSV))
		r = CUDA_ERROR_INVALID_VALUE;
	return r;
}
