/* daemon.h -- gpupoold, the supervisor: one libuv loop, never touches CUDA.
 *
 * gpupoold.c    main: options, configuration, signals, start and stop
 * inventory.c   the GPU list, from a short-lived gpupool-worker --inventory
 * supervisor.c  accepting clients, spawning and reaping workers, admission
 * admin.c       the admin socket poolctl talks to
 *
 * DESIGN: everything runs on the one loop thread; no locks. Each session is
 * a worker process with the client's socket, a control socketpair (read
 * here through the frame decoder) and a shared stats page the worker writes
 * and the supervisor only reads. A session's memory belongs to the worker
 * process; the supervisor keeps only the reservation ledger.
 */
#ifndef GP_DAEMON_H
#define GP_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

#include "codec.h"
#include "config.h"
#include "frame.h"
#include "stats.h"

struct gp_gpu {
	uint32_t index;
	char name[256];
	uint8_t uuid[16];
	uint64_t total_mem;
	uint64_t reserved;  /* sum of the memory limits of sessions placed here */
	unsigned sessions;
	bool draining;
};

struct gp_session {
	struct gp_daemon *d;
	uint64_t id;
	uv_process_t proc;
	uv_pipe_t ctl;
	struct gp_frame_decoder dec;
	struct gp_stats *stats;
	int state; /* enum gp_session_state, as the supervisor sees it */
	bool exited, ctl_closed, proc_closed;
	char client_addr[128];
	char tenant[128];
	char client_host[128];
	char program[128];
	uint32_t client_pid;
	uint32_t ndev;
	uint32_t dev[GP_STATS_MAX_DEVICES];
	uint64_t mem_limit;
	time_t started;
	struct gp_session *next;
};

struct gp_daemon {
	uv_loop_t *loop;
	struct gp_config *cfg;
	char worker_path[4096];
	char listen_addr[128]; /* as bound: a configured port 0 resolved */
	uv_tcp_t listener;
	uv_pipe_t admin;
	uv_signal_t sigterm, sigint, sighup;
	bool listening, admin_open, stopping;
	time_t started;
	int driver_version;
	struct gp_gpu gpus[GP_STATS_MAX_DEVICES];
	uint32_t ngpus;
	struct gp_session *sessions;
	unsigned nsessions;
	uint64_t next_id;
};

/* inventory.c */
int gp__inventory(struct gp_daemon *d);

/* supervisor.c */
int gp__supervisor_listen(struct gp_daemon *d);
void gp__supervisor_stop(struct gp_daemon *d);
struct gp_session *gp__session_find(struct gp_daemon *d, uint64_t id);
void gp__session_kill(struct gp_session *s, int sig);

/* admin.c */
int gp__admin_listen(struct gp_daemon *d);
void gp__admin_close(struct gp_daemon *d);

#endif
