/* nvml_source.c -- what the client's NVML shim asks of the interposer (src/nvml_source.h):
 * the session's devices, as the program sees them through CUDA. */
#include <gpupool/gpupool.h>

#include "cuda_host.h"
#include "interposer.h"
#include "nvml_source.h"

/*
 * The shim never opens a session: a session reserves GPUs and memory in the pool, and a program
 * that only asks NVML (a monitoring tool, a framework's probe before it decides to use CUDA) must
 * not take them. Until cuInit has opened one, NVML lists no devices. Once open, it lists the
 * session's devices in CUDA's order, from the snapshot cuInit received, with the session's limit
 * as each device's memory, and the session's own busy time as each device's utilization (the
 * slice's, not the whole GPU's: other sessions' work is not the program's to see). The pool does
 * not report other processes to a session, so those are not supported.
 */

/* Whether cuInit opened the session (device_count's test). */
static bool session_open(void)
{
	struct gp_client *c = &gp__client;

	return atomic_load_explicit(&c->init_tried, memory_order_acquire) && c->ready;
}

static CUresult device_count(int *count)
{
	/* the acquire pairs with cuInit's release store: ready and ndev are final after it */
	*count = session_open() ? gp__client.ndev : 0;
	return CUDA_SUCCESS;
}

/* Through cuMemGetInfo: total is the session's limit (the device's size without one), used what
 * the session holds there (the whole device's use when the session has no limit). */
static CUresult memory(CUdevice dev, uint64_t *used, uint64_t *total)
{
	uint64_t fr = 0, tot = 0;
	CUresult r = gp__ctx_mem_info(dev, &fr, &tot);

	if (r == CUDA_ERROR_NOT_FOUND)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (r != CUDA_SUCCESS)
		return r;
	*total = tot;
	*used = fr < tot ? tot - fr : 0;
	return CUDA_SUCCESS;
}

/* The session's busy time on dev, as its worker's driver counts it (DEVICE_BUSY): the
 * utilization of the session's slice, its kernels only, not other sessions' on the same GPU.
 * NOT_SUPPORTED where the worker's driver does not tell it (NVIDIA's: docs/operations.md,
 * "GPU busy time"); never opens a session (NOT_SUPPORTED before one is open). */
static CUresult busy(CUdevice dev, uint64_t out[2], uint64_t *now_ns)
{
	struct gp_out_device_busy o;
	CUresult r;

	if (!session_open())
		return CUDA_ERROR_NOT_SUPPORTED;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (dev < 0 || dev >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	r = gp__rpc_device_busy(0, &(struct gp_in_device_busy){.device = (uint64_t)dev}, &o);
	if (r != CUDA_SUCCESS)
		return r;
	out[0] = o.kernel_ns;
	out[1] = o.any_ns;
	*now_ns = o.now_ns;
	return CUDA_SUCCESS;
}

static CUresult process(CUdevice dev, uint64_t *used)
{
	(void)dev;
	(void)used;
	return CUDA_ERROR_NOT_SUPPORTED;
}

const struct gp__nvml_source gp__nvml_source = {
	.size = sizeof(struct gp__nvml_source),
	.device_count = device_count,
	.memory = memory,
	.busy = busy,
	.process = process,
	.driver_version = GP_VERSION_STRING,
};
