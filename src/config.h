/* config.h -- gpupoold's configuration file: "key value" lines. */
#ifndef GP_CONFIG_H
#define GP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define GP_CONFIG_DEFAULT_PATH "/etc/gpupool/gpupoold.conf"
#define GP_UNIX_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) on Linux */

enum gp_placement {
	GP_PLACE_SPREAD = 0, /* the least loaded GPUs first */
	GP_PLACE_BINPACK,    /* the fullest GPU that still fits first */
};

#define GP_LIMIT_NONE UINT64_MAX
#define GP_PRIORITY_MAX 9	/* priorities are 0 (the default) to 9 */
#define GP_WORKER_GROUPS_MAX 32 /* worker_groups: supplementary groups at most */
#define GP_ACCT_KEEP_MAX 1000	/* accounting_keep: rotated accounting files kept at most */

/* What one session may hold at once unless the file says otherwise (max_contexts etc.). */
#define GP_DEFAULT_MAX_CONTEXTS 16 /* besides the primary ones; each costs device memory */
#define GP_DEFAULT_MAX_STREAMS 4096
#define GP_DEFAULT_MAX_EVENTS 65536
#define GP_DEFAULT_MAX_MODULES 4096 /* modules and libraries together */

/* worker_seccomp (daemon/worker/seccomp.c). */
enum gp_seccomp_mode {
	GP_SECCOMP_OFF = 0,
	GP_SECCOMP_ALLOW, /* on, the default: an allow-list */
	GP_SECCOMP_DENY,  /* denylist: what a worker never needs is denied, the rest allowed */
};

enum { GP_PREEMPT_CLIENT = 0, GP_PREEMPT_YES, GP_PREEMPT_NO };

/* compute_enforce (docs/scheduling.md, "Compute shares"): how a session's compute share is
 * held. Bits: MPS's thread percentage, the worker's time budget (daemon/worker/busy.c). */
enum gp_compute_enforce {
	GP_ENFORCE_OFF = 0,
	GP_ENFORCE_MPS = 1,
	GP_ENFORCE_TIME = 2,
	GP_ENFORCE_BOTH = 3,
};
const char *gp_compute_enforce_name(enum gp_compute_enforce e);

/* cgroup: where each worker's host limits are enforced (daemon/supervisor/cgroup.c). */
enum gp_cgroup_mode {
	GP_CGROUP_AUTO = 0, /* the daemon's own delegated v2 cgroup, else v1 controllers */
	GP_CGROUP_OFF,	    /* none: the worker_* host limits below are not enforced */
	GP_CGROUP_PATH,	    /* cgroup_path, a cgroup as /proc/self/cgroup spells it */
};

/* Host limits per worker unless the file says otherwise (docs/security.md, "Limits"). */
#define GP_DEFAULT_WORKER_HOST_MEMORY (8ull << 30)
#define GP_DEFAULT_WORKER_TASKS 1024 /* threads and processes (softgpu: one per busy stream) */

/* Per-tenant limits; GP_LIMIT_NONE where the file sets none. */
struct gp_tenant {
	char *name; /* "*" matches every tenant without a line of its own */
	uint64_t sessions;
	uint64_t gpus;		 /* GPUs held at once, summed over the tenant's sessions */
	uint64_t memory;	 /* bytes reserved at once, summed over sessions and GPUs */
	uint64_t kernel_timeout; /* seconds one call may run (a kernel, a wait for one) */
	uint64_t queue; /* sessions waiting at once; GP_LIMIT_NONE: max_queued_per_tenant */
	/* Shares (docs/scheduling.md): what the tenant is guaranteed of the pool; it may
	 * borrow what is idle beyond it. 0: no guarantee of that kind. */
	uint64_t guarantee_gpus;
	uint64_t guarantee_memory; /* bytes, summed over sessions and GPUs */
	/* Compute shares, in percent of a GPU: the most one session may have on each of its
	 * GPUs (a larger request is cut to it; 0: 100), and what a session that asks for none
	 * gets (0: none, it is not limited). */
	unsigned compute;
	unsigned default_compute;
	/* May its sessions be ended to admit an entitled one? GP_PREEMPT_CLIENT: as each
	 * client says (GPUPOOL_PREEMPTIBLE); _YES: all of them (preemptible=yes); _NO: none,
	 * whatever the client says (preemptible=no). */
	unsigned preemptible;
	/* Its priority (priority=N, 0 to GP_PRIORITY_MAX; 0 without the key): what its
	 * sessions get, and the most one may ask for (GPUPOOL_PRIORITY). The queue serves higher
	 * priorities first, and a waiter preempts preemptible sessions of lower priority
	 * (docs/scheduling.md). */
	unsigned priority;
	/* Bytes of host memory each of its workers may use (host_memory=SIZE); 0: the file's
	 * worker_host_memory. */
	uint64_t host_memory;
};

/* Roles on the admin endpoint (admin_listen): a tenant's certificate may only ask for a
 * quote; read-only sees status and usage; read-write also evicts, drains and reloads. */
enum gp_admin_role {
	GP_ROLE_NONE = 0, /* no certificate: a quote with a token only */
	GP_ROLE_TENANT,
	GP_ROLE_READ_ONLY,
	GP_ROLE_READ_WRITE,
};

/* admin_name NAME ROLE: the role of a certificate of that name (from admin_ca or tls_ca). */
struct gp_admin_name {
	char *name;
	enum gp_admin_role role;
};

/* A bearer token that names a tenant (for clients without certificates). */
struct gp_token {
	char *secret;
	char *tenant;
};

struct gp_config {
	char *path;   /* the file it was read from */
	char *listen; /* HOST:PORT */
	char *tls_cert;
	char *tls_key;
	char *tls_ca; /* NULL: no client certificates asked for */
	char *driver; /* the libcuda workers dlopen */
	char *admin_socket;
	char *worker;		 /* gpupool-worker executable; NULL: beside gpupoold */
	char *admin_group;	 /* group that may use the admin socket; NULL: root only */
	char *metrics_listen;	 /* HOST:PORT of the Prometheus endpoint; NULL: none */
	char *listen_unix;	 /* a Unix socket for clients on this host; NULL: none */
	char *listen_unix_group; /* group that may use it (mode 0660); NULL: everyone (0666) */
	char *listen_plain;	 /* HOST:PORT without TLS, only when set; NULL: none */
	int log_level;
	unsigned max_sessions;
	unsigned max_handshakes;	  /* per listener: workers at once still in TLS/Hello */
	unsigned handshake_timeout;	  /* seconds a connection has for TLS and Hello */
	unsigned first_byte_timeout;	  /* seconds a connection has to send its first message */
	unsigned max_pending;		  /* per listener: connections without a worker yet */
	unsigned max_pending_per_address; /* of those, from one address (or one local user) */
	unsigned max_handshakes_per_address; /* of a listener's handshakes, from one address */
	unsigned max_queued_per_tenant;	     /* sessions of one tenant waiting for room at once */
	enum gp_placement placement;
	unsigned max_contexts, max_streams, max_events, max_modules; /* per session */
	enum gp_seccomp_mode worker_seccomp;	 /* the workers' syscall filter */
	enum gp_compute_enforce compute_enforce; /* default mps */
	/* worker_uids FIRST-LAST: each worker switches to a uid (and the gid of that number)
	 * of its own from this range; 0, 0: workers keep the daemon's. worker_groups: the
	 * supplementary groups they keep (names or numbers, comma-separated; NULL: none). */
	unsigned worker_uid_first, worker_uid_last;
	char *worker_groups;
	/* Host limits per worker, enforced by a cgroup per session (cgroup.c); 0: no limit. */
	enum gp_cgroup_mode cgroup;
	char *cgroup_path;	     /* GP_CGROUP_PATH: the base, e.g. /gpupool.slice */
	uint64_t worker_host_memory; /* bytes */
	unsigned worker_tasks;	     /* threads and processes */
	unsigned worker_cpu;	     /* percent of one CPU: 250 is two and a half */
	unsigned tenant_from; /* enum gp_name_from (conn.h): where a certificate names its tenant */
	uint64_t default_memory; /* per GPU for sessions that ask for none; 0: a whole GPU */
	unsigned queue_timeout;	 /* seconds a session may wait for room; 0: refuse at once */
	unsigned idle_timeout;	 /* seconds without a call before a session is ended; 0: never */
	unsigned drain_grace;	 /* seconds sessions get to finish after SIGTERM */
	unsigned preempt_grace;	 /* seconds a preempted session gets before it is ended */
	unsigned kernel_timeout; /* seconds one call may run before the session ends; 0: no limit */
	unsigned warm_workers;	 /* per GPU: workers started ahead, driver loaded (0: none) */
	char *accounting_file;	 /* one JSON line per ended session; NULL: none */
	uint64_t accounting_max_bytes; /* rotate past this size; 0: never */
	unsigned accounting_keep;      /* rotated files kept: PATH.1 .. PATH.N */
	/* The admin endpoint over TLS (daemon/supervisor/remote.c, docs/operations.md "Many
	 * hosts"). */
	char *admin_listen;		   /* HOST:PORT; NULL: none */
	char *admin_ca;			   /* CA whose certificates are admins; NULL: none */
	enum gp_admin_role admin_ca_role;  /* of admin_ca's certificates not named below */
	struct gp_admin_name *admin_names; /* admin_name lines */
	size_t nadmin_names;
	unsigned admin_max_connections; /* at once */
	unsigned admin_max_per_address; /* of those, from one address */
	struct gp_tenant *tenants;
	size_t ntenants;
	struct gp_token *tokens;
	size_t ntokens;
	/* MPS (daemon/supervisor/mps.c, docs/scheduling.md): the GPUs (by index, bit i for GPU
	 * i) the daemon runs an MPS control daemon for (gpu N mps on), the control program, and
	 * the directory under which each gets its pipe and log directories. */
	uint64_t mps_gpus;
	char *mps_control; /* default nvidia-cuda-mps-control, found on PATH */
	char *mps_dir;	   /* default /run/gpupool/mps */
};

/*
 * Reads a configuration file into a new struct. On error returns NULL and
 * writes "FILE:LINE: reason" into err. Unset keys take their defaults.
 */
struct gp_config *gp_config_load(const char *path, char *err, size_t errlen);
/* The same from a string (tests, -n checks of stdin); name is used in errors. */
struct gp_config *gp_config_parse(const char *text, const char *name, char *err, size_t errlen);
void gp_config_free(struct gp_config *cfg);

/* The limits that apply to a tenant: its own line, else "*", else NULL (unlimited). */
const struct gp_tenant *gp_config_tenant(const struct gp_config *cfg, const char *name);
/* The host memory a tenant's workers may use (its line's host_memory=, else the file's
 * worker_host_memory); 0: no limit. */
uint64_t gp_config_host_memory(const struct gp_config *cfg, const char *tenant);
/* The kernel_timeout that applies to a tenant's sessions (its line's, else the file's);
 * 0: none. */
unsigned gp_config_kernel_timeout(const struct gp_config *cfg, const char *tenant);
/* The tenant a token names, or NULL. Compares in constant time. */
const char *gp_config_token_tenant(const struct gp_config *cfg, const char *secret);

/* The role admin_name gives a certificate name, or GP_ROLE_NONE. */
enum gp_admin_role gp_config_admin_role(const struct gp_config *cfg, const char *name);
/* "read-only", "read-write", "tenant", "none". */
const char *gp_admin_role_name(enum gp_admin_role r);

/* Parses "4096", "512K", "8M", "16G", "1T" (powers of 1024). Returns 0 or GP_ECONFIG. */
int gp_parse_size(const char *s, uint64_t *out);

#endif
