/* api_device.c -- cuInit, versions and devices, answered from the session's snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/gpupool.h>

#include <cudaProfiler.h>

#include "interposer.h"
#include "log.h"

static void init_logging(void)
{
	const char *s = getenv("GPUPOOL_LOG");
	int lvl = GP_LOG_NONE;

	if (s && *s) {
		lvl = gp_log_parse_level(s);
		if (lvl < 0)
			lvl = GP_LOG_INFO;
	}
	gp_log_init("gpupool", lvl);
}

GP_CUDA_EXPORT CUresult cuInit(unsigned int flags)
{
	struct gp_client *c = &gp__client;
	CUresult r;

	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->lock);
	if (!atomic_load_explicit(&c->init_tried, memory_order_relaxed)) {
		init_logging();
		c->init_result = gp__connect();
		c->ready = c->init_result == CUDA_SUCCESS;
		/* Publishes the result and the snapshot to gp__ready's lock-free readers. */
		atomic_store_explicit(&c->init_tried, true, memory_order_release);
	}
	r = c->init_result;
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* The CUDA version this library implements; cudart checks it before cuInit. */
GP_CUDA_EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = CUDA_VERSION;
	return CUDA_SUCCESS;
}

static CUresult device_of(CUdevice dev, struct gp_idevice **out)
{
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = &gp__client.dev[dev];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetCount(int *count)
{
	CUresult r;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	*count = gp__client.ndev;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (ordinal < 0 || ordinal >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	strncpy(name, d->name, (size_t)len - 1);
	name[len - 1] = '\0';
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	*bytes = d->total_mem;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	if ((int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX || !d->attr_ok[attrib])
		return CUDA_ERROR_INVALID_VALUE;
	*pi = d->attr[attrib];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	*uuid = d->uuid;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

GP_CUDA_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	*major = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	*minor = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	struct gp_idevice *d;
	char buf[32];
	CUresult r;

	if (!id || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	snprintf(buf, sizeof(buf), "%08x:%02x:%02x.0", d->attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
		 d->attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
		 d->attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
	strncpy(id, buf, (size_t)len - 1);
	id[len - 1] = '\0';
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	unsigned dom = 0, bus, devn;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!dev || !id)
		return CUDA_ERROR_INVALID_VALUE;
	if (sscanf(id, "%x:%x:%x", &dom, &bus, &devn) != 3) {
		dom = 0;
		if (sscanf(id, "%x:%x", &bus, &devn) != 2)
			return CUDA_ERROR_INVALID_VALUE;
	}
	for (int i = 0; i < gp__client.ndev; i++) {
		const int32_t *a = gp__client.dev[i].attr;

		if ((unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] == dom &&
		    (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] == bus &&
		    (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] == devn) {
			*dev = i;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_DEVICE;
}

/* Peer access between a session's GPUs is not forwarded: none can reach another. */
GP_CUDA_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	struct gp_idevice *d;
	CUresult r;

	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r == CUDA_SUCCESS)
		r = device_of(peer, &d);
	if (r == CUDA_SUCCESS)
		*can = 0;
	return r;
}

/* The same answer for every peer attribute: peer access is not forwarded, so no access,
 * no native atomics, no array access, and no performance rank between the pair. */
GP_CUDA_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
						CUdevice src, CUdevice dst)
{
	struct gp_idevice *d;
	CUresult r;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(src, &d);
	if (r == CUDA_SUCCESS)
		r = device_of(dst, &d);
	if (r != CUDA_SUCCESS)
		return r;
	if (src == dst)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
	case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
		*value = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* No profiler is ever attached to the interposer: these succeed and do nothing, as
 * NVIDIA's driver does without one. */
GP_CUDA_EXPORT CUresult cuProfilerStart(void)
{
	return gp__ready();
}

GP_CUDA_EXPORT CUresult cuProfilerStop(void)
{
	return gp__ready();
}

GP_CUDA_EXPORT CUresult cuProfilerInitialize(const char *config, const char *out,
					     CUoutput_mode mode)
{
	CUresult r = gp__ready();

	if (r == CUDA_SUCCESS && (!config || !out || (unsigned)mode > CU_OUT_CSV))
		r = CUDA_ERROR_INVALID_VALUE;
	return r;
}

GP_CUDA_EXPORT CUresult cuDeviceGetProperties(CUdevprop *p, CUdevice dev)
{
	struct gp_idevice *d;
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_of(dev, &d);
	if (r != CUDA_SUCCESS)
		return r;
	p->maxThreadsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	p->maxThreadsDim[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
	p->maxThreadsDim[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
	p->maxThreadsDim[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
	p->maxGridSize[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
	p->maxGridSize[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
	p->maxGridSize[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
	p->sharedMemPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
	p->totalConstantMemory = d->attr[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
	p->SIMDWidth = d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
	p->memPitch = d->attr[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
	p->regsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
	p->clockRate = d->attr[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
	p->textureAlign = d->attr[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
	return CUDA_SUCCESS;
}
