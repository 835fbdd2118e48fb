/* inventory.c -- `gpupool-worker --inventory`: the GPUs the driver shows, sent to the
 * supervisor on the control channel (the supervisor's half is supervisor/inventory.c; it
 * never loads CUDA itself).
 *
 * MIG: CUDA lists one MIG instance per process, so the GPUs in MIG mode and their instances
 * come from NVML (nvml.c); the CUDA device that is an instance is left out of the whole GPUs
 * (its memory and SMs checked against NVML's), and each GPU in MIG mode follows the whole
 * GPUs, numbered as src/slice.h says, with its instances after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "worker.h"

int gp__worker_inventory(const char *driver)
{
	Gp__Inventory inv = GP__INVENTORY__INIT;
	Gp__GpuInfo *infos = NULL, **ptrs = NULL;
	static struct gp__mig_list mig;
	size_t kept = 0;
	struct gp_conn *ctl = gp_conn_new(GP_WORKER_FD_CONTROL);
	struct gp_driver drv;
	char err[512], names[GP_STATS_MAX_DEVICES][256], nvml_lib[4096], nvml_version[96];
	CUuuid uuids[GP_STATS_MAX_DEVICES];
	int n = 0, ver = 0, ret;
	CUresult r;

	if (!ctl)
		return 1;
	if (gp_driver_load(&drv, driver, err, sizeof(err))) {
		inv.status = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		inv.message = err;
		goto out_send;
	}
	r = drv.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = drv.cuDriverGetVersion(&ver);
	if (r == CUDA_SUCCESS)
		r = drv.cuDeviceGetCount(&n);
	if (r != CUDA_SUCCESS) {
		snprintf(err, sizeof(err), "driver %s: cuInit/cuDeviceGetCount failed: %s", driver,
			 gp_driver_err_name(&drv, r));
		inv.status = r;
		inv.message = err;
		goto out_send;
	}
	if (n > GP_STATS_MAX_DEVICES)
		n = GP_STATS_MAX_DEVICES;
	infos = calloc((size_t)n + GP_MIG_ENTRIES + 1, sizeof(*infos));
	ptrs = calloc((size_t)n + GP_MIG_ENTRIES + 1, sizeof(*ptrs));
	if (!infos || !ptrs)
		return 1;
	inv.driver_version = ver;
	for (int i = 0; i < n; i++) {
		CUdevice d;
		size_t total = 0;
		int sms = 0;

		gp__gpu_info__init(&infos[i]);
		names[i][0] = '\0';
		memset(&uuids[i], 0, sizeof(uuids[i]));
		if (drv.cuDeviceGet(&d, i) == CUDA_SUCCESS) {
			drv.cuDeviceGetName(names[i], sizeof(names[i]), d);
			drv.cuDeviceTotalMem_v2(&total, d);
			drv.cuDeviceGetUuid_v2(&uuids[i], d);
			drv.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
		}
		infos[i].index = (uint32_t)i;
		infos[i].name = names[i];
		infos[i].uuid.data = (uint8_t *)uuids[i].bytes;
		infos[i].uuid.len = sizeof(uuids[i].bytes);
		infos[i].total_mem = total;
		infos[i].sms = sms > 0 ? (uint32_t)sms : 0;
		ptrs[i] = &infos[i];
	}
	inv.n_gpu = (size_t)n;
	inv.gpu = ptrs;
	if (gp__nvml_crosscheck(driver, &inv, nvml_lib, sizeof(nvml_lib), nvml_version,
				sizeof(nvml_version), &mig) > 0)
		gp_log_warnx("NVML %s disagrees with CUDA (above); the pool uses CUDA's answers",
			     nvml_lib);
	/* The whole GPUs, then each GPU in MIG mode and its instances. */
	for (size_t i = 0; i < inv.n_gpu; i++)
		if (!ptrs[i]->instance)
			ptrs[kept++] = ptrs[i];
	for (unsigned i = 0; i < mig.n; i++) {
		const struct gp__mig_entry *e = &mig.e[i];
		Gp__GpuInfo *g = &infos[n + i];

		gp__gpu_info__init(g);
		g->name = (char *)e->name;
		g->uuid.data = (uint8_t *)e->uuid;
		g->uuid.len = 16;
		g->total_mem = e->memory;
		g->nvml = (char *)e->nvml;
		g->sms = e->sms;
		if (e->instance) {
			g->instance = true;
			g->index = GP_SLICE_INSTANCE_INDEX(e->gpu, e->k);
			g->parent = GP_SLICE_GPU_INDEX(e->gpu);
			g->profile = (char *)e->profile;
			g->gpu_instance = e->gi;
			g->compute_instance = e->ci;
		} else {
			g->mig = true;
			g->index = GP_SLICE_GPU_INDEX(e->gpu);
		}
		ptrs[kept++] = g;
	}
	inv.n_gpu = kept;
out_send:
	ret = gp_conn_send(ctl, GP_MSG_INVENTORY, 0, 0, &inv.base, NULL, 0);
	if (!ret)
		ret = gp_conn_flush(ctl);
	free(infos);
	free(ptrs);
	gp_conn_free(ctl);
	return ret ? 1 : 0;
}
