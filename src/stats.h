/* stats.h -- the live accounting a worker publishes for its session.
 *
 * The supervisor creates one page of shared memory per session (a memfd),
 * maps it, and hands the fd to the worker, which maps it too and updates the
 * counters with relaxed atomic stores as calls happen. The supervisor (and so
 * poolctl and /metrics) read it without asking the worker. Only the worker
 * writes; the supervisor only reads, so a torn 64-bit read cannot happen on
 * the 64-bit targets we build for and no lock is needed.
 */
#ifndef GP_STATS_H
#define GP_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define GP_STATS_MAGIC 0x47505354u /* "GPST" */
#define GP_STATS_MAX_DEVICES 16

enum gp_session_state {
	GP_SESSION_HANDSHAKE = 1, /* TLS and Hello */
	GP_SESSION_QUEUED,	  /* waiting for admission */
	GP_SESSION_ACTIVE,	  /* calls flowing */
	GP_SESSION_CLOSING,
};

/* How a session's client reached the pool (the supervisor tells the worker). */
enum gp_transport {
	GP_TRANSPORT_TLS = 0, /* TCP with TLS: listen */
	GP_TRANSPORT_PLAIN,   /* TCP without TLS: listen_plain */
	GP_TRANSPORT_UNIX,    /* a Unix socket on this host: listen_unix */
};

/* How the session ended as the worker saw it, set just before it exits (0 when it died
 * first); the supervisor adds what only it knows (eviction, timeouts, signals). */
enum gp_worker_end {
	GP_WORKER_END_UNKNOWN = 0,
	GP_WORKER_END_GOODBYE,	   /* the client said goodbye: it closed the session */
	GP_WORKER_END_CLIENT_GONE, /* the connection ended without a goodbye */
	GP_WORKER_END_PROTOCOL,	   /* the client sent what the protocol does not allow */
	GP_WORKER_END_POOL,	   /* the pool asked it to end (SIGTERM, SIGUSR1) */
};

/* What the supervisor's SIGUSR2 to a worker says, as sigqueue's value (docs/scheduling.md,
 * Preemption): each changes what the worker would tell its client at the end. */
enum gp_preempt_signal {
	GP_PREEMPT_CANCEL = 0, /* no longer to be preempted: its room is not needed now */
	GP_PREEMPT_NOTICE = 1, /* chosen to be preempted after preempt_grace: the client is told */
	GP_PREEMPT_END = 2,    /* ended for the preemption: the SIGTERM follows */
};

struct gp_stats {
	uint32_t magic;
	_Atomic uint32_t state;
	_Atomic uint64_t mem_used; /* bytes allocated on all devices */
	_Atomic uint64_t mem_peak;
	_Atomic uint64_t calls;
	_Atomic uint64_t bytes_in; /* from the client, TLS payload bytes */
	_Atomic uint64_t bytes_out;
	_Atomic int64_t last_active; /* unix seconds: when the last call started or ended */
	_Atomic uint32_t in_call;    /* calls running or waiting: a long kernel is not idleness */
	_Atomic uint64_t dev_mem_used[GP_STATS_MAX_DEVICES];
	_Atomic uint32_t ended; /* enum gp_worker_end */
	/* Managed and mapped memory (daemon/worker/managed.c): page bytes the client pushed
	 * (its writes) and page bytes sent back (the device's changes). */
	_Atomic uint64_t managed_in;
	_Atomic uint64_t managed_out;
	/* GPU busy time (daemon/worker/busy.c): nanoseconds in which each device ran a kernel
	 * of this session, as its driver measures it. busy_known: GP_BUSY_NOT_YET until the
	 * worker serves its first call (no kernel of the session can have run: 0 so far),
	 * GP_BUSY_KNOWN, or GP_BUSY_CANNOT when its driver cannot tell. held_ns: time launches
	 * were held back to keep the compute share (compute_enforce time). */
	_Atomic uint32_t busy_known;
	_Atomic uint64_t dev_busy_ns[GP_STATS_MAX_DEVICES];
	_Atomic uint64_t held_ns;
};

#define GP_BUSY_NOT_YET 0
#define GP_BUSY_KNOWN 1
#define GP_BUSY_CANNOT 2

#define GP_STATS_SIZE 4096

_Static_assert(sizeof(struct gp_stats) <= GP_STATS_SIZE, "stats page");

#endif
