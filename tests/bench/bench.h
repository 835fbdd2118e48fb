/* bench.h -- gpupool-bench: what a CUDA program pays through the pool, against baselines
 * measured by the same program in the same run (docs/performance.md).
 *
 * gpupool_bench.c  the run: starts a daemon on loopback (or uses GPUPOOL_SERVER), runs
 *                  each measurement as child processes, alternating pool and baseline,
 *                  and reports medians as a table or JSON
 * bench_cuda.c     the child that drives a libcuda.so.1 it dlopens (the interposer or
 *                  the driver itself): calls, launches, copies, graphs, sessions
 * bench_net.c      transport baselines (TLS, TCP and Unix ping-pong and streams between
 *                  two processes with src/conn.c), the delay relay, certificates
 *
 * DESIGN: the parent is single-threaded but for the relay's threads (bench_net.c), which
 * share nothing with it but the listening socket they are given. Children report one
 * "key value" line per result on stdout; the parent reads them from a pipe.
 */
#ifndef GP_BENCH_H
#define GP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One result a child reported. */
struct bench_kv {
	char key[64];
	double value;
};

/* bench_cuda.c: `gpupool-bench --child MODE LIBCUDA [ARGS]`; returns the exit status. */
int bench_child_main(int argc, char **argv);

/* bench_net.c */
enum bench_transport { BENCH_TLS, BENCH_TCP, BENCH_UNIX };
/* Writes a self-signed certificate for 127.0.0.1 (its own CA) and its key. 0 or -1. */
int bench_make_cert(const char *cert_path, const char *key_path);
/* A ping-pong of small frames and streams both ways between this process and a child
 * serving the same framing over the transport. Fills the medians; 0 or -1. */
struct bench_wire {
	double rtt_p50_us, rtt_p99_us;
	double up_mib_s, down_mib_s; /* client to server, server to client */
};
int bench_wire_measure(enum bench_transport t, const char *dir, int rounds, int mib,
		       struct bench_wire *out);
/* A relay on 127.0.0.1 that forwards every connection to target (host:port), delaying
 * each byte by delay_us in each direction. Returns its port, or -1. Runs until exit. */
int bench_relay_start(const char *target, unsigned delay_us);

/* gpupool_bench.c */
double bench_now(void);
double bench_median(double *v, size_t n);
double bench_percentile(double *v, size_t n, double p);

#endif
