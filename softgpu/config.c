/* config.c -- softgpu's configuration from the environment, and its diagnostics. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h" /* gp_parse_size, shared with the daemon (src/config.c) */
#include "softgpu.h"

/*
 * SOFTGPU_DEVICES  number of devices (default 1, at most 16)
 * SOFTGPU_MEMORY   memory per device, with K/M/G/T suffixes (default 4G)
 * SOFTGPU_NAME     device name (default "softgpu")
 * SOFTGPU_LOG      any value but "0": diagnostics on stderr
 * SOFTGPU_THREADS  host threads that run blocks (default: online CPUs)
 * SOFTGPU_CC       compute capability presented, "7.5" (default), "8.0", "8.6", "8.9", "9.0",
 *                  "12.0" or "13.0", with the limits of that architecture (device_attr.c)
 * SOFTGPU_SMS      multiprocessors reported (default: as the GPU SOFTGPU_CC models, 40 for 7.5
 *                  and 13.0)
 * SOFTGPU_STATS    per-launch instruction counts on stderr
 * SOFTGPU_MIG      GPUs in MIG mode and their instances, "0:1g.2gb,2g.4gb;1:3g.8gb" (mig.c)
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE  as an MPS client (1-100): that share of the SMs
 *                  reported and of the threads that run blocks, each at least 1
 * softgpu prints nothing else: stdout belongs to the program (and device printf).
 */

struct sg_config sg_cfg;

void sg_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (!sg_cfg.log)
		return;
	n = snprintf(buf, sizeof(buf), "softgpu[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(buf);
	buf[n++] = '\n';
	(void)!write(2, buf, (size_t)n);
}

static int env_uint(const char *name, unsigned def, unsigned min, unsigned max, unsigned *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	*out = def;
	if (v == NULL || *v == 0)
		return 0;
	x = strtoul(v, &end, 10);
	if (*end != 0 || x < min || x > max) {
		sg_log("%s=%s is not a number in [%u, %u]", name, v, min, max);
		return -1;
	}
	*out = (unsigned)x;
	return 0;
}

int sg_config_load(void)
{
	const char *v;
	unsigned devices;
	long ncpu;

	memset(&sg_cfg, 0, sizeof(sg_cfg));
	v = getenv("SOFTGPU_LOG");
	sg_cfg.log = v && *v && strcmp(v, "0") != 0;
	v = getenv("SOFTGPU_STATS");
	sg_cfg.stats = v && *v && strcmp(v, "0") != 0;
	sg_cfg.log = sg_cfg.log || sg_cfg.stats;
	if (env_uint("SOFTGPU_DEVICES", 1, 0, 16, &devices))
		return CUDA_ERROR_INVALID_VALUE;
	sg_cfg.devices = (int)devices;
	sg_cfg.memory = 4ull << 30;
	v = getenv("SOFTGPU_MEMORY");
	if (v && *v && (gp_parse_size(v, &sg_cfg.memory) || sg_cfg.memory < (1u << 20))) {
		sg_log("SOFTGPU_MEMORY=%s: expected a size of at least 1M (e.g. 512M, 4G)", v);
		return CUDA_ERROR_INVALID_VALUE;
	}
	v = getenv("SOFTGPU_NAME");
	snprintf(sg_cfg.name, sizeof(sg_cfg.name), "%s", v && *v ? v : "softgpu");
	v = getenv("SOFTGPU_CC");
	sg_cfg.arch = sg_arch_find(v && *v ? v : "7.5");
	if (sg_cfg.arch == NULL) {
		char list[128];

		sg_arch_list(list, sizeof(list));
		sg_log("SOFTGPU_CC=%s: softgpu presents compute capability %s", v, list);
		return CUDA_ERROR_INVALID_VALUE;
	}
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (env_uint("SOFTGPU_THREADS", ncpu > 0 ? (unsigned)ncpu : 1, 1, 1024, &sg_cfg.threads) ||
	    env_uint("SOFTGPU_SMS", (unsigned)sg_cfg.arch->sm_count, 1, 1024, &sg_cfg.sm_count) ||
	    env_uint("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", 100, 1, 100, &sg_cfg.thread_pct))
		return CUDA_ERROR_INVALID_VALUE;
	/* An MPS client with a thread percentage sees that share of the SMs. */
	sg_cfg.sm_full = sg_cfg.sm_count;
	sg_cfg.sm_count = sg_cfg.sm_count * sg_cfg.thread_pct / 100;
	if (sg_cfg.sm_count == 0)
		sg_cfg.sm_count = 1;
	return sg_mig_load();
}

unsigned sg_block_threads(void)
{
	unsigned n = sg_cfg.threads * sg_cfg.thread_pct / 100;

	return n ? n : 1;
}
