/* busy.c -- the session's GPU busy time, and its compute share held by time.
 *
 * DESIGN: a sampler thread reads, every SAMPLE_MS (THROTTLE_MS while a share is held by
 * time), how long each of the session's devices has run a kernel of this process, and
 * publishes it on the stats page (src/stats.h: dev_busy_ns, busy_known), where the
 * supervisor reads it for status, utilization and the accounting record. The launch path
 * costs no driver call for it: the sampler alone asks the driver.
 *
 * Where the figure comes from: the driver's gpupool NVML source table (src/nvml_source.h),
 * asked for through cuGetExportTable. softgpu serves it, and since a worker is one process
 * for one session, its busy() is exactly this session's kernel time on each device (grids
 * running at once on several streams count once). NVIDIA's libcuda answers NOT_FOUND:
 * there the figure is unknown (GP_BUSY_CANNOT, null in the record) rather than guessed;
 * docs/operations.md, "Utilization", says why.
 *
 * Compute share by time (compute_enforce time|both, docs/scheduling.md): each device has a
 * token bucket that fills at share x elapsed time, holds at most share x WINDOW_NS, and is
 * drained by the device's busy time. While any device's bucket is below zero the sampler
 * raises `hold`. A launch while it is raised (gp__share_gate, one relaxed load when nothing
 * is held) queues a gate before it on its stream: a host function the driver runs when the
 * stream gets there, which waits for the hold to drop, so the launch and the stream's later
 * work wait with it. The main thread does not wait: it goes on decoding calls, so a held
 * kernel that waits for a later call (a flag a later copy on another stream writes) gets
 * it, and a long hold is no long call (kernel_timeout). Work already queued on the device
 * runs on: it is paid for by holding the launches after it, so the share holds on average
 * over the window, not per kernel. A gate waits on the driver's thread for that stream's
 * host functions, and makes no CUDA call. On a capturing stream nothing runs, so nothing is
 * held (the graph's launch will be); a driver that cannot queue the gate holds the launch
 * on the main thread as before (gp__share_wait).
 *
 * Threads: the sampler writes gp__share_held, read by the main thread and the gates;
 * gate_lock guards gates_waiting and gates_since, the time since which one has waited
 * (held_ns counts time during which any gate waited, once however many).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "nvml_source.h"
#include "worker.h"

#define SAMPLE_MS 100
#define THROTTLE_MS 5
#define WINDOW_NS 1000000000ll /* the bucket: a second's worth of the share */
#define HOLD_POLL_NS 2000000   /* a held launch looks again every 2 ms */

atomic_bool gp__share_held;

static struct {
	const struct gp__nvml_source *src;
	struct gp_worker *w;
	int ndev;
	unsigned share; /* percent held by time; 0: not held */
	pthread_t thread;
	bool started;
	/* The sampler's own: last reading and each bucket, in ns. */
	uint64_t last_busy[GP_STATS_MAX_DEVICES], last_now[GP_STATS_MAX_DEVICES];
	int64_t tokens[GP_STATS_MAX_DEVICES];
} bs;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One reading of every device: published, and the buckets moved. Returns whether any
 * bucket is below zero. */
static bool sample(void)
{
	bool over = false;

	for (int i = 0; i < bs.ndev; i++) {
		uint64_t b[2], now;

		if (bs.src->busy(i, b, &now) != CUDA_SUCCESS)
			continue;
		atomic_store_explicit(&bs.w->stats->dev_busy_ns[i], b[0], memory_order_relaxed);
		if (bs.share) {
			int64_t cap = WINDOW_NS * bs.share / 100;

			bs.tokens[i] += (int64_t)((now - bs.last_now[i]) * bs.share / 100);
			bs.tokens[i] -= (int64_t)(b[0] - bs.last_busy[i]);
			if (bs.tokens[i] > cap)
				bs.tokens[i] = cap;
			over |= bs.tokens[i] < 0;
		}
		bs.last_busy[i] = b[0];
		bs.last_now[i] = now;
	}
	return over;
}

static void *sampler(void *arg)
{
	struct timespec ts;

	(void)arg;
	for (;;) {
		bool over = sample();

		atomic_store_explicit(&gp__share_held, over, memory_order_relaxed);
		ts.tv_sec = 0;
		ts.tv_nsec = (bs.share ? THROTTLE_MS : SAMPLE_MS) * 1000000l;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int gp__busy_start(struct gp_worker *w, unsigned share)
{
	static const char id_bytes[] = GP_NVML_SOURCE_ID_BYTES;
	const void *table = NULL;
	CUuuid id;
	CUresult r;

	if (!w->stats || w->ndev <= 0)
		return -1;
	memcpy(id.bytes, id_bytes, sizeof(id.bytes));
	r = GP_DRV(w, cuGetExportTable, &table, &id);
	bs.src = table;
	if (r != CUDA_SUCCESS || !bs.src || bs.src->size < sizeof(*bs.src) || !bs.src->busy) {
		gp_log_debug("session %llu: the driver does not tell GPU busy time",
			     (unsigned long long)w->session_id);
		bs.src = NULL;
		atomic_store_explicit(&w->stats->busy_known, GP_BUSY_CANNOT, memory_order_relaxed);
		if (share)
			gp_log_warnx("session %llu: compute share %u%% cannot be held by time: the "
				     "driver does not tell busy time",
				     (unsigned long long)w->session_id, share);
		return -1;
	}
	bs.w = w;
	bs.ndev = w->ndev < GP_STATS_MAX_DEVICES ? w->ndev : GP_STATS_MAX_DEVICES;
	bs.share = share > 0 && share < 100 ? share : 0;
	for (int i = 0; i < bs.ndev; i++) {
		uint64_t b[2], now;

		/* The driver may not count a device until its first kernel. */
		if (bs.src->busy(i, b, &now) != CUDA_SUCCESS) {
			b[0] = 0;
			now = mono_ns();
		}
		bs.last_busy[i] = b[0];
		bs.last_now[i] = now;
		bs.tokens[i] = WINDOW_NS * bs.share / 100;
		atomic_store_explicit(&w->stats->dev_busy_ns[i], b[0], memory_order_relaxed);
	}
	atomic_store_explicit(&w->stats->busy_known, GP_BUSY_KNOWN, memory_order_relaxed);
	if (pthread_create(&bs.thread, NULL, sampler, NULL)) {
		gp_log_warnx("session %llu: no thread to measure GPU busy time",
			     (unsigned long long)w->session_id);
		atomic_store_explicit(&w->stats->busy_known, GP_BUSY_CANNOT, memory_order_relaxed);
		bs.src = NULL;
		return -1;
	}
	bs.started = true;
	if (bs.share)
		gp_log_debug("session %llu: compute share %u%% held by time",
			     (unsigned long long)w->session_id, bs.share);
	return 0;
}

/* Set as the session ends: gates still queued let their streams go, so the teardown (which
 * waits for the streams) is not held by a share nobody uses any more. */
static atomic_bool share_over;

static bool holding(void)
{
	return atomic_load_explicit(&gp__share_held, memory_order_relaxed) && !gp__worker_stop &&
	       !atomic_load_explicit(&share_over, memory_order_relaxed);
}

void gp__busy_final(struct gp_worker *w)
{
	atomic_store_explicit(&share_over, true, memory_order_relaxed);
	/* A last reading as the session ends; the sampler may be publishing at once, and both
	 * write the same counters, which only grow. */
	if (bs.started && w->stats)
		for (int i = 0; i < bs.ndev; i++) {
			uint64_t b[2], now;

			if (bs.src->busy(i, b, &now) == CUDA_SUCCESS)
				atomic_store_explicit(&w->stats->dev_busy_ns[i], b[0],
						      memory_order_relaxed);
		}
}

/* DEVICE_BUSY: the NVML shim's utilization of the session's slice. A fresh reading, not the
 * sampler's: the shim divides two readings' difference by their clocks' (src/nvml.c). */
CUresult gp__serve_device_busy(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_device_busy *a, struct gp_out_device_busy *o)
{
	uint64_t b[2], now;
	CUresult r;

	(void)w;
	(void)rq;
	if (!bs.src)
		return CUDA_ERROR_NOT_SUPPORTED;
	r = bs.src->busy(a->device_drv, b, &now);
	if (r != CUDA_SUCCESS)
		return r;
	o->kernel_ns = b[0];
	o->any_ns = b[1];
	o->now_ns = now;
	return CUDA_SUCCESS;
}

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned gates_waiting;
static uint64_t gates_since;

/* The gate: on the driver's thread, as the stream reaches it. */
static void CUDA_CB gate(void *arg)
{
	struct gp_worker *w = arg;
	struct timespec ts = {0, HOLD_POLL_NS};

	pthread_mutex_lock(&gate_lock);
	if (gates_waiting++ == 0)
		gates_since = mono_ns();
	pthread_mutex_unlock(&gate_lock);
	while (holding())
		nanosleep(&ts, NULL);
	pthread_mutex_lock(&gate_lock);
	if (--gates_waiting == 0 && w->stats)
		atomic_fetch_add_explicit(&w->stats->held_ns, mono_ns() - gates_since,
					  memory_order_relaxed);
	pthread_mutex_unlock(&gate_lock);
}

/* Waits on the main thread while held (a driver without cuLaunchHostFunc). */
static void share_wait(struct gp_worker *w)
{
	struct timespec ts = {0, HOLD_POLL_NS};
	uint64_t t0 = mono_ns();

	while (holding())
		nanosleep(&ts, NULL);
	if (w->stats)
		atomic_fetch_add_explicit(&w->stats->held_ns, mono_ns() - t0, memory_order_relaxed);
}

void gp__share_hold(struct gp_worker *w, CUstream stream)
{
	if (gp__stream_capturing(w, stream))
		return;
	if (GP_DRV(w, cuLaunchHostFunc, stream, gate, w) != CUDA_SUCCESS)
		share_wait(w);
}
