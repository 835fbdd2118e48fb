/* daemon.h -- gpupoold, the supervisor: one libuv loop, never touches CUDA.
 *
 * gpupoold.c    main: options, configuration, signals, start and stop
 * inventory.c   the GPU list, from a short-lived gpupool-worker --inventory
 *               (worker/inventory.c is the other half)
 * supervisor.c  accepting clients, spawning and reaping workers (warm ones ahead), the control channel
 * pending.c     connections before their worker: the first-message watch, per-listener
 *               and per-address budgets, the FIFO to handshake slots
 * admission.c   admission's I/O: who the tenant is (found here, never the worker's word:
 *               SO_PEERCRED, a tenant proof checked with src/proof.h), replies and logs
 *               over pool.c's decisions
 * pool.c        the admission core, no I/O: placement (memory and compute shares), the
 *               reservation ledger, tenant limits and guarantees, the wait queue and its
 *               order (pool.h; docs/scheduling.md; tests/unit/test_pool.c)
 * admin.c       the admin socket poolctl talks to, and the commands both admin doors share
 * remote.c      the admin endpoint over TLS (admin_listen): mTLS on the loop through memory
 *               BIOs, roles from admin_ca/admin_name, quotes for tenants' certificates
 * quote.c       what this daemon could give a tenant now (the "quote" command), read from
 *               the pool's ledger without changing it
 * accounting.c  a record per ended session, written and fsync'd by its own thread; the
 *               sums `poolctl usage` asks for, read on libuv's threadpool (src/acct.h)
 * metrics.c     the Prometheus endpoint (metrics_listen)
 * util.c        utilization: each GPU's and tenant's busy time over the last minute and hour,
 *               from the sessions' stats pages (daemon/worker/busy.c measures)
 * status.c      the pool's state as one snapshot, for the admin socket and metrics
 * listen.c      listening sockets: TCP for clients, Unix for local clients and admin
 * cgroup.c      a cgroup per worker (v2 delegated, or v1): host memory, tasks and CPU
 *               limits, its memory for status, why the kernel ended it
 * mps.c         the MPS control daemons the pool owns (gpu N mps on): started per GPU,
 *               restarted with backoff when one dies, stopped at exit
 * uids.c        worker_uids: each worker's own uid from the range, and whether the daemon can
 *               have workers switch to it (worker/worker.c switches)
 * ipc.c         CUDA IPC between sessions of one tenant: the pool's handles, what workers
 *               registered behind them (descriptors too), each worker's IPC socket
 *
 * DESIGN: everything runs on the one loop thread; no locks. Each session is
 * a worker process with the client's socket, a control socketpair (read
 * here through the frame decoder) and a shared stats page the worker writes
 * and the supervisor only reads. A session's memory belongs to the worker
 * process; the supervisor keeps only the reservation ledger. The one other thread
 * of ours is accounting.c's writer (it has its own DESIGN block), and usage queries
 * run on libuv's threadpool; neither touches a session or the pool.
 */
#ifndef GP_DAEMON_H
#define GP_DAEMON_H

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

#include "acct.h"
#include "codec.h"
#include "config.h"
#include "frame.h"
#include "pool.h"
#include "stats.h"

/* What the pool knows of GPU g besides its ledger entry, d->pool.gpu[g]. */
struct gp_gpu {
	char name[256];
	uint8_t uuid[16];
	char nvml[16]; /* the inventory's NVML cross-check: "match", "mismatch", "" (no NVML) */
	uint32_t gpu_instance, compute_instance; /* a MIG instance's NVML ids */
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
	bool evicted;	  /* ended by poolctl evict or the idle timeout */
	bool refused;	  /* turned away by admission: its worker is on its way out */
	bool admit_asked; /* its worker sent its AdmitRequest (only one is taken) */
	bool warm;	  /* started ahead (warm_workers): no client yet, in d->warm */
	bool cg_failed;	  /* it could not be put in its cgroup: killed, it serves nobody */
	enum gp_transport transport;
	/* Its cgroup (cgroup.c): worker-PID, then session-ID; "" when none. */
	char cg_name[40];
	uint64_t cg_memory; /* the memory limit written there; 0: none */
	char client_addr[128];
	char tenant[128];
	char client_host[128];
	char program[128];
	char slice[80]; /* GPUPOOL_SLICE as the client sent it (cut short) */
	uint32_t client_pid;
	uint32_t uid; /* worker_uids: its worker's own uid, held until it is reaped; 0: none */
	/* What it asked for and, once admitted, holds: its GPUs and per-GPU limit (pool.h).
	 * Times are uv_now(). */
	struct gp_claim claim;
	time_t started;
	uint64_t term_at; /* uv_now() when it was asked to end; 0: not asked */
	/* For its accounting record (accounting.c). */
	char cert_name[128]; /* the certificate's (on the Unix socket: the user's) name, or "" */
	/* What admission names the tenant from, the supervisor's own (admission.c): this
	 * session's TENANT_CHALLENGE nonce, the CA and tenant_from its worker was set up with,
	 * and on the Unix socket the peer's uid as the kernel gave it at hand-over. */
	uint8_t nonce[32];
	bool nonce_set, peer_known, mtls;
	uid_t peer_uid;
	char *tls_ca; /* mtls: the session's TLS asked for a client certificate from this CA */
	int tenant_from;
	int64_t started_ms;   /* unix milliseconds at accept */
	int64_t admitted_ms;  /* unix milliseconds at admission; 0: never admitted */
	uint64_t admitted_at; /* uv_now() at admission */
	const char *end_code; /* why the pool ended it ("evicted", ...); NULL: it did not */
	bool acct_pending;    /* its record is being written: not freed until it is */
	/* Busy time (util.c): how its compute share is held (enum gp_compute_enforce, set at
	 * admission), and whether its last figure was banked at its end. */
	unsigned compute_enforce;
	bool busy_banked;
	/* Preempted (claim.preempting): told at preempt_noticed (uv_now(); 0: not), ended
	 * preempt_grace later (the configuration's now: a reload applies), saying preempt_why. */
	uint64_t preempt_noticed;
	char preempt_why[320];
	struct gp_ipc_chan *ipc; /* its IPC socket and exports (ipc.c); NULL once it exited */
	struct gp_session *next;
};

/* A connection accepted but given no worker yet (pending.c). */
struct gp_pending {
	struct gp_daemon *d;
	uv_poll_t poll; /* readability, never read: the worker gets every byte */
	int fd;		/* -1 once it is a worker's */
	enum gp_transport transport;
	bool partial;	 /* part of its first message came: looked at on each tick */
	bool ready;	 /* its first message is here whole: it waits for its slots */
	uint64_t since;	 /* uv_now() when accepted, then when it became ready */
	char addr[128];	 /* HOST:PORT, or local:uid=U,pid=P */
	char source[64]; /* what max_pending_per_address counts: HOST, or uid=U */
	struct gp_pending *next;
};

/* The accounting file's writer (accounting.c): the settings under lock, the queue. */
struct gp_acct_job;
struct gp_acct {
	pthread_t thread;
	bool running;
	pthread_mutex_t lock; /* the fields below it up to `files` */
	pthread_cond_t cv;
	struct gp_acct_job *queue, **qtail, *done;
	bool stop;
	char *path; /* accounting_file; NULL: records are not kept */
	uint64_t max_bytes;
	unsigned keep;
	/* Held while the files change (a write, a rotation) and while a usage query opens
	 * them, so the query sees each record in exactly one file and whole. */
	pthread_mutex_t files;
	uv_async_t async; /* the writer's "done" to the loop */
	bool async_open;
};

/* Where workers' cgroups go (cgroup.c): base[c] per controller (v2: the same for all). */
enum { GP_CG_MEMORY, GP_CG_PIDS, GP_CG_CPU, GP_CG_NCTL };
struct gp_cg_gone {
	char name[40]; /* a worker's cgroup still busy at its exit, retried each tick */
	unsigned tries;
	struct gp_cg_gone *next;
};
struct gp_cgroup {
	int version; /* 2, 1, or 0: no cgroups, nothing enforced */
	char base[GP_CG_NCTL][4096];
	bool cpu_ok; /* the cpu controller is there for worker_cpu */
	struct gp_cg_gone *gone;
};

/* An MPS control daemon the pool runs for one GPU (mps.c). */
struct gp_mps {
	uint32_t gpu;			 /* pool GPU index */
	int pid;			 /* 0: not running (next_start says when it starts again) */
	uint64_t started_at, next_start; /* monotonic ms */
	unsigned backoff_ms;		 /* before the next restart, doubled up to 60 s */
	unsigned starts;
	char pipe_dir[256], log_dir[256]; /* mps_dir/gpuN/pipe, mps_dir/gpuN/log */
	/* Stopping (mps.c): quit sent, then SIGTERM, then SIGKILL, each given until stop_at. */
	enum { GP_MPS_RUN, GP_MPS_QUIT, GP_MPS_TERM, GP_MPS_KILL, GP_MPS_DONE } stop;
	uint64_t stop_at; /* monotonic ms */
	int quit_pid;	  /* the control program sending quit; 0: reaped */
};

struct gp_daemon {
	uv_loop_t *loop;
	struct gp_config *cfg;
	char worker_path[4096];
	char listen_addr[128]; /* as bound: a configured port 0 resolved */
	uv_tcp_t listener;
	uv_tcp_t plain;	      /* listen_plain */
	uv_pipe_t local;      /* listen_unix */
	char plain_addr[128]; /* as bound */
	bool plain_open, local_open;
	uv_pipe_t admin;
	uv_tcp_t metrics;
	bool metrics_open;
	uv_signal_t sigterm, sigint, sighup;
	uv_timer_t tick;
	bool listening, admin_open, stopping;
	bool admin_has_gid; /* admin_group was given: admin_gid may use the admin socket */
	unsigned admin_gid;
	bool own_nnp;		 /* the daemon itself runs with no_new_privs: it marks no worker */
	char *unit_cgroup;	 /* /proc/self/cgroup when a systemd unit's main process, or NULL */
	uint64_t drain_deadline; /* uv_now() after which draining sessions are ended */
	time_t started;
	int driver_version;
	char nvml_library[512]; /* the NVML the inventory cross-checked with, "" when none */
	char nvml_driver_version[96];
	struct gp_gpu gpus[GP_POOL_MAX_GPUS]; /* names of pool.gpu[0..pool.ngpus) */
	struct gp_pool pool;		      /* the GPUs' ledger, who holds what, who waits */
	struct gp_session *sessions;
	unsigned nsessions;
	struct gp_pending *pending; /* oldest first */
	unsigned npending[3];	    /* per listener: TLS, plain, Unix */
	unsigned pending_shed;	    /* closed or displaced at a limit since the last tick */
	uint64_t next_id;
	/* Workers started ahead, driver loaded, waiting for a client (warm_workers). After one
	 * ends on its own, none is started before warm_retry_at (uv_now()). */
	struct gp_session *warm;
	uint64_t warm_retry_at;
	char hostname[128]; /* this host's name, for accounting records */
	/* The admin endpoint over TLS (remote.c). */
	uv_tcp_t remote;
	bool remote_open;
	char remote_addr[128]; /* as bound */
	void *remote_ctx;      /* SSL_CTX */
	void *remote_roots;    /* STACK_OF(X509): admin_ca's certificates */
	struct gp_remote *remotes;
	unsigned nremotes;
	struct gp_acct acct;
	struct gp_cgroup cg;
	/* worker_uids (uids.c): worker_groups resolved, and where the next pick starts. */
	uint32_t worker_gids[GP_WORKER_GROUPS_MAX];
	unsigned nworker_gids;
	uint32_t uid_next;
	struct gp_mps mps[GP_POOL_MAX_GPUS];
	unsigned nmps;
	bool mps_stop_told; /* the last control daemon stopped: gp__supervisor_stop went on */
};

/* util.c: a sample a second (from the tick); an ended session's busy time banked (before
 * its claim is released); the utilization fields of a status reply (their arrays freed by
 * gp__util_free, which gp__status_free calls). */
void gp__util_tick(struct gp_daemon *d);
void gp__util_session_end(struct gp_session *s);
int gp__util_fill(struct gp_daemon *d, Gp__AdminReply *rep);
void gp__util_free(Gp__AdminReply *rep);

/* gpupoold.c */
/* Re-reads the configuration; on failure keeps the old one and says why. */
int gp__daemon_reload(struct gp_daemon *d, char *why, size_t whylen);

/* inventory.c */
int gp__inventory(struct gp_daemon *d);
/* What CUDA_VISIBLE_DEVICES names pool GPU index by: its ordinal, or a MIG instance's MIG-. */
void gp__visible_name(const struct gp_daemon *d, uint32_t index, char *out, size_t len);

/* mps.c */
/* Starts an MPS control daemon for each GPU with mps on; -1 when its directories cannot be
 * made (the daemon does not start). */
int gp__mps_start(struct gp_daemon *d);
/* Reaps one that died and restarts it after its backoff (from the supervisor's tick); while
 * they stop, moves each one's stop on, and once the last is done calls
 * gp__supervisor_stop again. */
void gp__mps_tick(struct gp_daemon *d);
/* Starts stopping them all at once without waiting: quit through the control program, then
 * SIGTERM, then SIGKILL, each given its time by gp__mps_tick. Idempotent. */
void gp__mps_stop_begin(struct gp_daemon *d);
/* Are they all stopped (or given up on after SIGKILL)? */
bool gp__mps_stopped(const struct gp_daemon *d);
/* The same, waited for here (at most about 9 s whatever the number of GPUs): for exit paths
 * without a loop. */
void gp__mps_stop(struct gp_daemon *d);
/* The pipe directory of the GPU's control daemon, or NULL without one. */
const char *gp__mps_pipe_dir(const struct gp_daemon *d, uint32_t gpu);

/* supervisor.c */
/* Starts warm workers up to warm_workers per GPU (none while stopping). */
void gp__warm_fill(struct gp_daemon *d);
/* Ends the warm workers (a reload or a stop): later ones start from the new configuration. */
void gp__warm_drop(struct gp_daemon *d);
/* Warm workers ready for a client. */
unsigned gp__warm_ready(const struct gp_daemon *d);
int gp__supervisor_listen(struct gp_daemon *d);
/* Stops accepting and, once every session is gone, closes what keeps the loop alive. */
void gp__supervisor_stop(struct gp_daemon *d);
/* SIGTERM/SIGINT: stop accepting, refuse the queue, give sessions drain_grace. */
void gp__supervisor_drain(struct gp_daemon *d);
/* Runs every 250 ms: queue timeouts, idle sessions, drain and eviction deadlines. */
void gp__supervisor_tick(struct gp_daemon *d);
struct gp_session *gp__session_find(struct gp_daemon *d, uint64_t id);
/* Starts a worker for the connection on client_fd, which it takes (closes) either way. */
void gp__session_spawn(struct gp_daemon *d, int client_fd, const char *addr,
		       enum gp_transport transport);
/* Sessions whose worker has not been turned away or exited. */
unsigned gp__sessions_live(const struct gp_daemon *d);
/* Of those, how many of one transport are still in TLS and Hello. */
unsigned gp__sessions_handshaking(const struct gp_daemon *d, enum gp_transport transport);
/* Tells the worker of a preemption's notice, cancel or end (SIGUSR2 with the value). */
void gp__session_preempt_signal(struct gp_session *s, enum gp_preempt_signal what);
void gp__session_kill(struct gp_session *s, int sig);
/* Asks a session's worker to end (SIGTERM, then SIGKILL if it lingers); code is what its
 * accounting record says of how it ended ("evicted", "idle_timeout", ...). */
void gp__session_end(struct gp_session *s, const char *code, const char *why);
/* Its record is written (or could not be): it may be freed once its handles are closed. */
void gp__session_accounted(struct gp_session *s);
int gp__uv_send(uv_stream_t *s, unsigned type, const ProtobufCMessage *msg);

/* ipc.c: a worker's IPC socket (the supervisor's end, taken), and its end at the exit. */
int gp__ipc_attach(struct gp_session *s, int fd);
void gp__ipc_detach(struct gp_session *s);

/* pending.c */
/* Takes an accepted connection (fd and all) until its first message is in and a slot is
 * free, or closes it at a limit. */
void gp__pending_add(struct gp_daemon *d, int fd, const char *addr, enum gp_transport t);
/* Hands waiting connections to workers while their slots allow, oldest first. */
void gp__pending_pump(struct gp_daemon *d);
/* first_byte_timeout and the wait limit; part-sent first messages looked at again. */
void gp__pending_tick(struct gp_daemon *d);
void gp__pending_close_all(struct gp_daemon *d);

/* admission.c */
void gp__admit_request(struct gp_session *s, const Gp__AdmitRequest *req);
/* Releases a session's reservation (or its place in the queue) and admits waiters. */
void gp__admit_release(struct gp_session *s);
/* Admits whoever now fits, oldest first. */
void gp__admit_pump(struct gp_daemon *d);
/* Refuses queued sessions that waited past queue_timeout (all of them when stopping). */
void gp__admit_expire(struct gp_daemon *d, bool all, const char *why);
/* Ends preempted sessions whose preempt_grace is over, if their preemption is still due. */
void gp__admit_preempt_tick(struct gp_daemon *d);
/* When a preempted session is to be ended (uv_now()); 0 when it is not preempted. */
uint64_t gp__admit_preempt_deadline(const struct gp_session *s);

/* admin.c */
int gp__admin_listen(struct gp_daemon *d);
void gp__admin_close(struct gp_daemon *d);
/* Answers an admin request other than "usage" (asynchronous, gp__acct_usage) and "quote"
 * (remote.c) into rep, with msg as its message's storage; true when rep holds a status
 * snapshot to free with gp__status_free. */
bool gp__admin_answer(struct gp_daemon *d, const Gp__AdminRequest *req, Gp__AdminReply *rep,
		      char *msg, size_t len);
/* Whether a command changes the pool (evict, drain, undrain, reload): read-write only. */
bool gp__admin_writes(const char *command);

/* remote.c */
/* Opens admin_listen (if configured). 0 or a negative code, logged. */
int gp__remote_listen(struct gp_daemon *d);
/* Stops accepting and closes every connection. */
void gp__remote_close(struct gp_daemon *d);
/* The handshake and idle deadlines, every tick. */
void gp__remote_tick(struct gp_daemon *d);
/* A quote for a session of tenant (quote.c, no I/O). */
void gp__quote(struct gp_daemon *d, const char *tenant, const Gp__QuoteQuery *q, Gp__Quote *out,
	       char *reason, size_t len);

/* accounting.c */
/* Opens the accounting file (if one is configured) and starts the writer: at start, where a
 * file that cannot be opened is fatal. 0 or a negative code, logged. */
int gp__acct_start(struct gp_daemon *d);
/* After a reload: the writer takes the new file and rotation settings for the next record. */
void gp__acct_configure(struct gp_daemon *d);
/* A session that was admitted has ended (its worker exited with status or signal sig):
 * queues its record, and sets s->acct_pending until the record is written. */
void gp__acct_session_ended(struct gp_session *s, int64_t status, int sig);
/* The wall clock in unix milliseconds (accounting records' times). */
int64_t gp__wall_ms(void);
/* Every record queued is written; the writer ends. */
void gp__acct_stop(struct gp_daemon *d);
typedef void (*gp_acct_usage_cb)(void *arg, Gp__AdminReply *rep);
/* Sums the records for q off the loop thread; cb gets the reply (valid during the call). */
void gp__acct_usage(struct gp_daemon *d, const Gp__UsageQuery *q, gp_acct_usage_cb cb, void *arg);

/* status.c */
/* The pool's state as poolctl sees it; pointers into d, valid until the loop runs on. */
int gp__status_build(struct gp_daemon *d, Gp__AdminReply *rep);
void gp__status_free(Gp__AdminReply *rep);

/* uids.c */
/* worker_uids and worker_groups of cfg: whether this daemon can have its workers switch
 * (root, or the capabilities; see uids.c), and the groups' ids. 0, or -errno with why set. */
int gp__uids_resolve(const struct gp_config *cfg, uint32_t *gids, unsigned *ngids, char *why,
		     size_t whylen);
/* A uid of worker_uids that no live worker holds; -EAGAIN when every one is held. */
int gp__uid_pick(struct gp_daemon *d, uint32_t *uid);

/* listen.c */
/* Binds and listens on HOST:PORT; writes the bound address (port 0 resolved) to bound. */
int gp__tcp_listen(struct gp_daemon *d, uv_tcp_t *tcp, const char *hostport, uv_connection_cb cb,
		   char *bound, size_t boundlen);
/* Binds and listens on a Unix socket at path (a stale one there goes), mode 0660 with
 * group's gid, or 0666 when everyone may connect; `what` names it in errors. */
int gp__unix_listen(struct gp_daemon *d, uv_pipe_t *pipe, const char *path, const char *group,
		    bool everyone, uv_connection_cb cb, const char *what);
/* "host:port" or "[v6]:port" of an IPv4 or IPv6 address. */
void gp__format_addr(const struct sockaddr_storage *ss, char *out, size_t len);

/* cgroup.c */
/* Finds where workers' cgroups go (the `cgroup` key) and prepares it; logs what it uses, or
 * once that nothing is enforced. A negative code (logged) only for an unusable cgroup PATH. */
int gp__cgroup_start(struct gp_daemon *d);
/* Removes what is left: busy worker cgroups, v1's per-daemon directories. */
void gp__cgroup_stop(struct gp_daemon *d);
/* Retries removing worker cgroups that were busy at their worker's exit. */
void gp__cgroup_tick(struct gp_daemon *d);
/* A new worker (s->proc.pid) gets its cgroup, limits first; 0, or a negative code (logged):
 * then it must not serve anyone. */
int gp__cgroup_enter(struct gp_session *s);
/* The worker has its session: its cgroup is renamed session-<id>. */
void gp__cgroup_name(struct gp_session *s);
/* Its tenant is known: the tenant's host_memory= applies. */
void gp__cgroup_admitted(struct gp_session *s);
/* The worker's host memory: its cgroup's usage, else its resident set (from_cgroup false). */
uint64_t gp__cgroup_memory(const struct gp_session *s, bool *from_cgroup);
/* The worker exited (signal sig): writes into why (when the kernel ended it for its memory)
 * and returns "host_memory", else NULL; kills what is left in its cgroup and removes it. */
const char *gp__cgroup_leave(struct gp_session *s, int sig, char *why, size_t len);

/* metrics.c */
int gp__metrics_listen(struct gp_daemon *d);
void gp__metrics_close(struct gp_daemon *d);

#endif
