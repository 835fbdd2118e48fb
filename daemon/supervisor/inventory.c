/* inventory.c -- learn the GPUs through a short-lived worker: the supervisor never loads CUDA. */
#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conn.h"
#include "daemon.h"
#include "error.h"
#include "log.h"

#define INVENTORY_TIMEOUT_MS 60000

extern char **environ;

/* What CUDA_VISIBLE_DEVICES names pool GPU index by: the ordinal, or a MIG instance's UUID. */
void gp__visible_name(const struct gp_daemon *d, uint32_t index, char *out, size_t len)
{
	for (uint32_t g = 0; g < d->pool.ngpus; g++) {
		const uint8_t *b = d->gpus[g].uuid;

		if (d->pool.gpu[g].index != index || !d->pool.gpu[g].instance)
			continue;
		snprintf(out, len,
			 "MIG-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			 b[12], b[13], b[14], b[15]);
		return;
	}
	snprintf(out, len, "%u", index);
}

/* Runs `gpupool-worker --inventory --driver PATH` and reads its INVENTORY frame. */
int gp__inventory(struct gp_daemon *d)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {d->worker_path, "--inventory", "--driver", d->cfg->driver, NULL};
	struct pollfd pfd;
	struct gp_frame_hdr h;
	struct gp_conn *c = NULL;
	Gp__Inventory *inv = NULL;
	int sv[2], status, ret = -1, r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		gp_log_warn("socketpair");
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 4);
	r = posix_spawn(&pid, d->worker_path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (r) {
		errno = r;
		gp_log_warn("cannot run %s", d->worker_path);
		close(sv[0]);
		return -1;
	}
	pfd.fd = sv[0];
	pfd.events = POLLIN;
	do
		r = poll(&pfd, 1, INVENTORY_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		gp_log_error("GPU inventory: the worker did not answer in %d s",
			     INVENTORY_TIMEOUT_MS / 1000);
		kill(pid, SIGKILL);
		close(sv[0]);
		goto out_wait;
	}
	c = gp_conn_new(sv[0]);
	if (!c) {
		close(sv[0]);
		goto out_wait;
	}
	if (gp_conn_recv(c, &h) || h.type != GP_MSG_INVENTORY ||
	    !(inv = (Gp__Inventory *)gp_msg_unpack(h.type, c->msg, h.msg_len))) {
		gp_log_error("GPU inventory: no answer from the worker (%s)", c->err);
		goto out_wait;
	}
	if (inv->status != 0) {
		gp_log_error("GPU inventory: %s", inv->message);
		goto out_wait;
	}
	d->driver_version = inv->driver_version;
	snprintf(d->nvml_library, sizeof(d->nvml_library), "%s", inv->nvml_library);
	snprintf(d->nvml_driver_version, sizeof(d->nvml_driver_version), "%s",
		 inv->nvml_driver_version);
	if (d->nvml_library[0])
		gp_log_info("NVML %s (driver %s) cross-checked the GPUs", d->nvml_library,
			    d->nvml_driver_version);
	else
		gp_log_info("no NVML beside the driver: GPUs from CUDA alone");
	gp_pool_init(&d->pool);
	for (size_t i = 0; i < inv->n_gpu && i < GP_POOL_MAX_GPUS; i++) {
		struct gp_gpu *g = &d->gpus[d->pool.ngpus];
		const Gp__GpuInfo *gi = inv->gpu[i];
		uint32_t index = gi->index;
		uint64_t total = gi->total_mem;
		struct gp_pool_gpu *pg;

		memset(g, 0, sizeof(*g));
		snprintf(g->name, sizeof(g->name), "%s", inv->gpu[i]->name);
		if (inv->gpu[i]->uuid.len == 16)
			memcpy(g->uuid, inv->gpu[i]->uuid.data, 16);
		snprintf(g->nvml, sizeof(g->nvml), "%s", inv->gpu[i]->nvml);
		if (gp_pool_add_gpu(&d->pool, index, total)) {
			gp_log_warnx("GPU %u (%s): left out: no memory, or its index twice", index,
				     g->name);
			continue;
		}
		pg = gp_pool_gpu(&d->pool, index);
		pg->mig = gi->mig;
		pg->instance = gi->instance;
		pg->parent = gi->parent;
		pg->sms = gi->sms;
		snprintf(pg->profile, sizeof(pg->profile), "%s", gi->instance ? gi->profile : "");
		g->gpu_instance = gi->gpu_instance;
		g->compute_instance = gi->compute_instance;
		if (gi->instance)
			gp_log_info("GPU %u: MIG instance %s of GPU %u, %llu MiB, %u SMs", index,
				    pg->profile, pg->parent, (unsigned long long)(total >> 20),
				    pg->sms);
		else
			gp_log_info("GPU %u: %s, %llu MiB%s", index, g->name,
				    (unsigned long long)(total >> 20),
				    gi->mig ? ", in MIG mode (its instances take sessions)" : "");
	}
	ret = 0;
out_wait:
	if (inv)
		protobuf_c_message_free_unpacked(&inv->base, NULL);
	gp_conn_free(c);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return ret;
}
