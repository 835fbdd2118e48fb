/* gpupool_bench.c -- gpupool-bench: what a CUDA program pays through the pool on this
 * machine, as ratios to baselines measured in the same run (docs/performance.md).
 *
 * usage: gpupool-bench [--json] [--short] [--copies] [--sizes MIB,...] [--repeats N]
 *
 * It starts gpupoold on loopback (TLS, plain TCP and a Unix socket) with softgpu, or
 * GPUPOOL_BENCH_DRIVER, as its driver; with GPUPOOL_SERVER (and GPUPOOL_CA) set it measures
 * that pool over TLS instead. Each measurement is a child process (bench_cuda.c) that
 * dlopens either the interposer or the driver itself; pool and baseline alternate, every
 * measurement is repeated, and medians are reported. Nothing here judges the numbers.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define TOKEN "gpupool-bench-token-0123456789"
#define N_HIDE 100

struct opts {
	bool json, quick, copies; /* copies: the baselines and the copy step only */
	int repeats;
	int rounds, launches, graph_iters, hide_rounds, load_launches, wire_mib;
	const char *sizes;
};

struct paths {
	char prefix[PATH_MAX / 2], daemon[PATH_MAX], poolctl[PATH_MAX], interposer[PATH_MAX];
	char driver[PATH_MAX], self[PATH_MAX], dir[64];
	char tls[128], plain[128], unix_path[PATH_MAX], ca[PATH_MAX];
	pid_t daemon_pid;
	bool own_daemon;
};

static struct paths P;
static int failures; /* measurements that did not complete: the run exits 1 */

/* ---- results: named lists of samples; reported as their medians ---- */

#define MAX_KEYS 256
#define MAX_SAMPLES 64

static struct {
	char key[64];
	double v[MAX_SAMPLES];
	size_t n;
} res[MAX_KEYS];
static size_t nres;

static void add(const char *key, double v)
{
	size_t i;

	for (i = 0; i < nres && strcmp(res[i].key, key); i++)
		;
	if (i == nres) {
		if (nres == MAX_KEYS)
			return;
		snprintf(res[nres++].key, sizeof(res[0].key), "%s", key);
	}
	if (res[i].n < MAX_SAMPLES)
		res[i].v[res[i].n++] = v;
}

/* The median of key's samples; NAN when none were taken. */
static double get(const char *key)
{
	for (size_t i = 0; i < nres; i++)
		if (!strcmp(res[i].key, key))
			return bench_median(res[i].v, res[i].n);
	return __builtin_nan("");
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : __builtin_nan("");
}

/* ---- children ---- */

/* Runs `gpupool-bench --child ...` with extra environment, adding each "key value" line
 * of its output as prefix_key. 0, or -1 when it failed (its stderr says why). */
static int run_child(const char *prefix, char *const env[], char *const args[])
{
	char *argv[16] = {P.self, "--child"}, line[256];
	int fd[2], st, n = 2;
	FILE *f;
	pid_t pid;

	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(P.self, argv);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char k[64], key[160];
		double v;

		if (sscanf(line, "%63s %lf", k, &v) == 2) {
			snprintf(key, sizeof(key), "%s_%s", prefix, k);
			add(key, v);
		}
	}
	if (f)
		fclose(f);
	else
		close(fd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "gpupool-bench: the %s measurement failed\n", prefix);
		failures++;
		return -1;
	}
	return 0;
}

/* The environment a child needs to reach the pool at server. A pool that does not admit
 * the session fails it within 20 s, not cuInit's minute. */
static void pool_env(char *env[8], char store[6][PATH_MAX + 32], const char *server)
{
	int n = 0;

	snprintf(store[0], sizeof(store[0]), "GPUPOOL_SERVER=%s", server);
	snprintf(store[1], sizeof(store[1]), "GPUPOOL_CA=%s", P.ca);
	snprintf(store[2], sizeof(store[2]), "GPUPOOL_TOKEN=%s", TOKEN);
	snprintf(store[3], sizeof(store[3]), "GPUPOOL_CONNECT_TIMEOUT=20");
	env[n++] = store[0];
	env[n++] = store[1];
	if (P.own_daemon)
		env[n++] = store[2];
	env[n++] = store[3];
	env[n] = NULL;
}

static int run_all(const char *prefix, const char *lib, const char *server, const struct opts *o)
{
	char rounds[16], launches[16], iters[16], store[6][PATH_MAX + 32], *env[8] = {NULL};
	char *args[] = {"all", (char *)lib, rounds, launches, (char *)o->sizes, iters, NULL};

	snprintf(rounds, sizeof(rounds), "%d", o->rounds);
	snprintf(launches, sizeof(launches), "%d", o->launches);
	snprintf(iters, sizeof(iters), "%d", o->graph_iters);
	if (server)
		pool_env(env, store, server);
	return run_child(prefix, env, args);
}

/* n sessions at once, each launching: the aggregate launch rate from the start signal to
 * the last one done. */
static int run_sessions(int n, const char *lib, const char *server, const struct opts *o,
			double *per_s)
{
	char launches[16], store[6][PATH_MAX + 32], *env[8] = {NULL}, line[128];
	char *argv[] = {P.self, "--child", "load", (char *)lib, launches, "0", NULL};
	int in[16][2], out[16][2], ok = 0, st;
	pid_t pid[16];
	double t0;

	snprintf(launches, sizeof(launches), "%d", o->load_launches);
	if (server) {
		/* a small share each, so that 16 fit on one GPU */
		pool_env(env, store, server);
		for (int k = 0; k < 7; k++) {
			if (!env[k]) {
				snprintf(store[5], sizeof(store[5]), "GPUPOOL_MEMORY=128M");
				env[k] = store[5];
				env[k + 1] = NULL;
				break;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (pipe(in[i]) || pipe(out[i]))
			return -1;
		pid[i] = fork();
		if (pid[i] == 0) {
			dup2(in[i][0], STDIN_FILENO);
			dup2(out[i][1], STDOUT_FILENO);
			for (int k = 0; k <= i; k++) {
				close(in[k][0]);
				close(in[k][1]);
				close(out[k][0]);
				close(out[k][1]);
			}
			for (int k = 0; env[k]; k++)
				putenv(env[k]);
			execv(P.self, argv);
			_exit(127);
		}
		close(in[i][0]);
		close(out[i][1]);
	}
	for (int i = 0; i < n; i++) { /* every session set up before any works */
		ssize_t k = read(out[i][0], line, sizeof(line) - 1);

		ok += k > 0 && !strncmp(line, "ready", 5);
	}
	t0 = bench_now();
	for (int i = 0; i < n; i++) {
		if (write(in[i][1], "g", 1) != 1)
			ok = 0;
		close(in[i][1]);
	}
	for (int i = 0; i < n; i++) {
		while (read(out[i][0], line, sizeof(line)) > 0)
			;
		close(out[i][0]);
	}
	*per_s = (double)n * o->load_launches / (bench_now() - t0);
	for (int i = 0; i < n; i++)
		if (waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	if (ok != n) {
		fprintf(stderr, "gpupool-bench: %d concurrent sessions failed\n", n);
		failures++;
	}
	return ok == n ? 0 : -1;
}

/* ---- the daemon ---- */

static int write_conf(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f,
		"listen 127.0.0.1:0\nlisten_plain 127.0.0.1:0\nlisten_unix %s/client.sock\n"
		"tls_cert %s/server.pem\ntls_key %s/server.key\ndriver %s\n"
		"admin_socket %s/admin.sock\nlog_level warn\nmax_sessions 64\n"
		"max_handshakes 32\ntoken %s bench\n",
		P.dir, P.dir, P.dir, P.driver, P.dir, TOKEN);
	return fclose(f);
}

/* The value of "key":"..." in poolctl's JSON. */
static void json_str(const char *json, const char *key, char *out, size_t outlen)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	out[0] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(json, pat);
	if (!p)
		return;
	for (p += strlen(pat); *p && *p != '"' && n + 1 < outlen; p++)
		out[n++] = *p;
	out[n] = '\0';
}

static int start_daemon(void)
{
	char conf[PATH_MAX], log[PATH_MAX], cmd[3 * PATH_MAX], json[8192];

	snprintf(conf, sizeof(conf), "%s/gpupoold.conf", P.dir);
	snprintf(log, sizeof(log), "%s/daemon.log", P.dir);
	if (write_conf(conf))
		return -1;
	P.daemon_pid = fork();
	if (P.daemon_pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, STDERR_FILENO);
		dup2(fd, STDOUT_FILENO);
		execl(P.daemon, P.daemon, "-f", conf, (char *)NULL);
		_exit(127);
	}
	if (P.daemon_pid < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s -s %s/admin.sock status --json 2>/dev/null", P.poolctl,
		 P.dir);
	for (int i = 0; i < 200; i++) {
		FILE *f = popen(cmd, "r");
		size_t n = f ? fread(json, 1, sizeof(json) - 1, f) : 0;

		if (f && pclose(f) == 0 && n > 0) {
			json[n] = '\0';
			json_str(json, "listen", P.tls, sizeof(P.tls));
			json_str(json, "listen_plain", P.plain, sizeof(P.plain));
			if (P.tls[0] && P.plain[0])
				return 0;
		}
		usleep(50000);
	}
	fprintf(stderr, "gpupool-bench: the daemon did not start (its log: %s)\n", log);
	return -1;
}

static void stop_daemon(void)
{
	if (P.daemon_pid > 0) {
		kill(P.daemon_pid, SIGTERM);
		waitpid(P.daemon_pid, NULL, 0);
	}
}

/* ---- what openssl says AES-GCM costs here, for context ---- */

static double openssl_aes_gcm(void)
{
	FILE *f = popen("openssl speed -evp aes-128-gcm -seconds 1 -bytes 16384 2>/dev/null", "r");
	char line[512];
	double v = __builtin_nan("");

	while (f && fgets(line, sizeof(line), f)) {
		double k;

		/* "AES-128-GCM  123456.78k" : thousands of bytes per second at 16 KiB */
		if (!strncasecmp(line, "aes-128-gcm", 11) && sscanf(line + 11, "%lfk", &k) == 1)
			v = k * 1000 / (1 << 20);
	}
	if (f)
		pclose(f);
	return v;
}

/* ---- the run ---- */

static const char *wire_name[] = {"tls", "tcp", "unix"};

static void measure(const struct opts *o)
{
	char server[3][PATH_MAX + 8], key[64];
	static const unsigned delays[] = {0, 200, 2000};
	int ntransport = P.own_daemon ? 3 : 1;

	snprintf(server[0], sizeof(server[0]), "%s", P.tls);
	snprintf(server[1], sizeof(server[1]), "plain:%s", P.plain);
	snprintf(server[2], sizeof(server[2]), "unix:%s", P.unix_path);
	for (int r = 0; r < o->repeats; r++) {
		for (int t = 0; t < 3; t++) {
			struct bench_wire w;

			if (bench_wire_measure((enum bench_transport)t, P.dir, o->rounds,
					       o->wire_mib, &w)) {
				failures++;
			} else {
				snprintf(key, sizeof(key), "%s_rtt_p50_us", wire_name[t]);
				add(key, w.rtt_p50_us);
				snprintf(key, sizeof(key), "%s_rtt_p99_us", wire_name[t]);
				add(key, w.rtt_p99_us);
				snprintf(key, sizeof(key), "%s_up_mib_s", wire_name[t]);
				add(key, w.up_mib_s);
				snprintf(key, sizeof(key), "%s_down_mib_s", wire_name[t]);
				add(key, w.down_mib_s);
			}
		}
		run_all("direct", P.driver, NULL, o);
		for (int t = 0; t < ntransport; t++) {
			snprintf(key, sizeof(key), "pool_%s", wire_name[t]);
			run_all(key, P.interposer, server[t], o);
		}
	}
	if (o->copies)
		return;
	/* latency hiding, through the relay at each added delay */
	for (size_t d = 0; d < sizeof(delays) / sizeof(delays[0]); d++) {
		char via[160], n[16], rounds[16], store[6][PATH_MAX + 32], *env[8] = {NULL};
		char *args[] = {"hide", P.interposer, n, rounds, NULL};
		int port = delays[d] ? bench_relay_start(P.tls, delays[d]) : 0;

		if (port < 0)
			continue;
		if (port)
			snprintf(via, sizeof(via), "127.0.0.1:%d", port);
		else
			snprintf(via, sizeof(via), "%s", P.tls);
		snprintf(n, sizeof(n), "%d", N_HIDE);
		snprintf(rounds, sizeof(rounds), "%d", o->hide_rounds);
		pool_env(env, store, via);
		snprintf(key, sizeof(key), "hide_%uus", delays[d]);
		for (int r = 0; r < o->repeats; r++)
			run_child(key, env, args);
	}
	/* concurrent sessions, pool and direct alternating */
	for (int n = 1; n <= 16; n *= 4) {
		for (int r = 0; r < o->repeats; r++) {
			double v;

			snprintf(key, sizeof(key), "sessions_%d_direct_launch_per_s", n);
			if (run_sessions(n, P.driver, NULL, o, &v) == 0)
				add(key, v);
			snprintf(key, sizeof(key), "sessions_%d_launch_per_s", n);
			if (run_sessions(n, P.interposer, server[0], o, &v) == 0)
				add(key, v);
		}
	}
	add("openssl_aes_gcm_mib_s", openssl_aes_gcm());
}

/* ---- the report ---- */

struct out_key {
	char name[96];
	double v;
};

static struct out_key outk[MAX_KEYS];
static size_t nout;

static void put(const char *name, double v)
{
	if (nout < MAX_KEYS) {
		snprintf(outk[nout].name, sizeof(outk[0].name), "%s", name);
		outk[nout++].v = v;
	}
}

static void derive(const struct opts *o)
{
	char key[96], k2[96], last[16] = "1";
	static const unsigned delays[] = {0, 200, 2000};
	double direct_launch = get("direct_launch_per_s");

	/* the largest size copied, for the summary ratios */
	for (const char *p = o->sizes; *p;) {
		size_t n = strcspn(p, ",");

		snprintf(last, sizeof(last), "%.*s", (int)n, p);
		p += n + (p[n] == ',');
	}
	for (int t = 0; t < 3; t++) {
		const char *w = wire_name[t];

		snprintf(key, sizeof(key), "%s_rtt_p50_us", w);
		put(key, get(key));
		snprintf(key, sizeof(key), "%s_rtt_p99_us", w);
		put(key, get(key));
		snprintf(key, sizeof(key), "%s_up_mib_s", w);
		put(key, get(key));
		snprintf(key, sizeof(key), "%s_down_mib_s", w);
		put(key, get(key));
	}
	put("openssl_aes_gcm_mib_s", get("openssl_aes_gcm_mib_s"));
	put("direct_launch_per_s", direct_launch);
	put("direct_setup_ms", get("direct_setup_ms"));
	snprintf(key, sizeof(key), "direct_htod_%s_mib_s", last);
	put("direct_htod_mib_s", get(key));
	snprintf(key, sizeof(key), "direct_dtoh_%s_mib_s", last);
	put("direct_dtoh_mib_s", get(key));
	put("rtt_p50_us", get("pool_tls_rtt_p50_us"));
	put("rtt_p99_us", get("pool_tls_rtt_p99_us"));
	put("rtt_ratio", ratio(get("pool_tls_rtt_p50_us"), get("tls_rtt_p50_us")));
	put("rtt_tcp_ratio", ratio(get("pool_tcp_rtt_p50_us"), get("tcp_rtt_p50_us")));
	put("rtt_unix_ratio", ratio(get("pool_unix_rtt_p50_us"), get("unix_rtt_p50_us")));
	put("launch_per_s", get("pool_tls_launch_per_s"));
	put("launch_ratio", ratio(get("pool_tls_launch_per_s"), direct_launch));
	put("launch_tcp_ratio", ratio(get("pool_tcp_launch_per_s"), direct_launch));
	put("launch_unix_ratio", ratio(get("pool_unix_launch_per_s"), direct_launch));
	for (int t = 0; t < 3; t++) {
		const char *w = wire_name[t];
		double up, down;

		for (const char *p = o->sizes; *p;) {
			size_t n = strcspn(p, ",");
			char sz[16];

			snprintf(sz, sizeof(sz), "%.*s", (int)n, p);
			p += n + (p[n] == ',');
			snprintf(k2, sizeof(k2), "pool_%s_htod_%s_mib_s", w, sz);
			snprintf(key, sizeof(key), "htod_%s_%s_mib_s", w, sz);
			put(key, get(k2));
			snprintf(k2, sizeof(k2), "pool_%s_dtoh_%s_mib_s", w, sz);
			snprintf(key, sizeof(key), "dtoh_%s_%s_mib_s", w, sz);
			put(key, get(k2));
		}
		/* the largest copy against the bare stream the same way */
		snprintf(k2, sizeof(k2), "pool_%s_htod_%s_mib_s", w, last);
		snprintf(key, sizeof(key), "%s_up_mib_s", w);
		up = ratio(get(k2), get(key));
		snprintf(k2, sizeof(k2), "pool_%s_dtoh_%s_mib_s", w, last);
		snprintf(key, sizeof(key), "%s_down_mib_s", w);
		down = ratio(get(k2), get(key));
		snprintf(key, sizeof(key), "htod_%s_ratio", w);
		put(key, up);
		snprintf(key, sizeof(key), "dtoh_%s_ratio", w);
		put(key, down);
	}
	put("setup_ms", get("pool_tls_setup_ms"));
	for (size_t d = 0; d < sizeof(delays) / sizeof(delays[0]); d++) {
		double rtt, batch, work = N_HIDE / direct_launch;

		snprintf(key, sizeof(key), "hide_%uus_rtt_p50_us", delays[d]);
		rtt = get(key);
		put(key, rtt);
		snprintf(key, sizeof(key), "hide_%uus_batch_p50_us", delays[d]);
		batch = get(key);
		put(key, batch);
		/* round trips paid beyond the work itself: ideal 1 */
		snprintf(key, sizeof(key), "hide_%uus_rtts", delays[d]);
		put(key, ratio(batch - work * 1e6, rtt));
	}
	put("graph_pool_s", get("pool_tls_graph_s"));
	put("graph_direct_s", get("direct_graph_s"));
	put("graph_ratio", ratio(get("direct_graph_s"), get("pool_tls_graph_s")));
	for (int n = 1; n <= 16; n *= 4) {
		snprintf(key, sizeof(key), "sessions_%d_launch_per_s", n);
		snprintf(k2, sizeof(k2), "sessions_%d_direct_launch_per_s", n);
		put(key, get(key));
		put(k2, get(k2));
		snprintf(key, sizeof(key), "sessions_%d_ratio", n);
		put(key, ratio(outk[nout - 2].v, outk[nout - 1].v));
	}
}

static void print_json(const struct opts *o)
{
	printf("{\"short\":%s,\"repeats\":%d,\"cpus\":%ld,\"driver\":\"%s\"",
	       o->quick ? "true" : "false", o->repeats, sysconf(_SC_NPROCESSORS_ONLN), P.driver);
	for (size_t i = 0; i < nout; i++) {
		if (outk[i].v == outk[i].v)
			printf(",\"%s\":%.4g", outk[i].name, outk[i].v);
		else
			printf(",\"%s\":null", outk[i].name);
	}
	printf("}\n");
}

static void print_table(const struct opts *o)
{
	printf("gpupool-bench: %ld CPU(s), driver %s, %s, medians of %d\n",
	       sysconf(_SC_NPROCESSORS_ONLN), P.driver, o->quick ? "short" : "full", o->repeats);
	for (size_t i = 0; i < nout; i++)
		printf("  %-36s %12.4g\n", outk[i].name, outk[i].v);
}

static int find_paths(void)
{
	const char *pre = getenv("GPUPOOL_BENCH_PREFIX"), *drv = getenv("GPUPOOL_BENCH_DRIVER");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return -1;
	exe[n] = '\0';
	snprintf(P.self, sizeof(P.self), "%s", exe);
	if (pre && *pre)
		snprintf(P.prefix, sizeof(P.prefix), "%s", pre);
	else
		snprintf(P.prefix, sizeof(P.prefix), "%s", dirname(dirname(exe)));
	snprintf(P.daemon, sizeof(P.daemon), "%s/bin/gpupoold", P.prefix);
	snprintf(P.poolctl, sizeof(P.poolctl), "%s/bin/poolctl", P.prefix);
	snprintf(P.interposer, sizeof(P.interposer), "%s/%s/gpupool/libcuda.so.1", P.prefix,
		 GP_BENCH_LIBDIR);
	if (access(P.interposer, R_OK))
		snprintf(P.interposer, sizeof(P.interposer), "%s/lib/gpupool/libcuda.so.1",
			 P.prefix);
	if (drv && *drv) {
		snprintf(P.driver, sizeof(P.driver), "%s", drv);
	} else {
		snprintf(P.driver, sizeof(P.driver), "%s/%s/gpupool/softgpu/libcuda.so.1", P.prefix,
			 GP_BENCH_LIBDIR);
		if (access(P.driver, R_OK))
			snprintf(P.driver, sizeof(P.driver), "%s/lib/gpupool/softgpu/libcuda.so.1",
				 P.prefix);
	}
	return 0;
}

static int rm_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(int argc, char **argv)
{
	struct opts o = {.repeats = 3,
			 .rounds = 2000,
			 .launches = 20000,
			 .graph_iters = 1000,
			 .hide_rounds = 20,
			 .load_launches = 20000,
			 .wire_mib = 256,
			 .sizes = "1,16,256,1024"};
	const char *server = getenv("GPUPOOL_SERVER"), *sizes = NULL;
	char cert[PATH_MAX], key[PATH_MAX];

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return bench_child_main(argc - 2, argv + 2);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			o.json = true;
		} else if (!strcmp(argv[i], "--short")) {
			o.quick = true;
		} else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
			o.repeats = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--copies")) {
			o.copies = true;
		} else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
			sizes = argv[++i];
		} else {
			fprintf(stderr, "usage: gpupool-bench [--json] [--short] [--copies] "
					"[--sizes MIB,...] [--repeats N]\n");
			return 2;
		}
	}
	if (o.quick) {
		o = (struct opts){.json = o.json,
				  .quick = true,
				  .copies = o.copies,
				  .repeats = 1,
				  .rounds = 200,
				  .launches = 2000,
				  .graph_iters = 10,
				  .hide_rounds = 3,
				  .load_launches = 500,
				  .wire_mib = 8,
				  .sizes = "1,4"};
	}
	if (o.copies) {
		/* the other steps kept to what the child needs to get to its copies */
		o.rounds = 10;
		o.launches = 10;
		o.graph_iters = 0;
	}
	if (sizes && strspn(sizes, "0123456789,") == strlen(sizes) && isdigit(sizes[0]))
		o.sizes = sizes;
	if (o.repeats < 1 || o.repeats > MAX_SAMPLES)
		o.repeats = 1;
	signal(SIGPIPE, SIG_IGN);
	if (find_paths())
		return 1;
	snprintf(P.dir, sizeof(P.dir), "/tmp/gpupool-bench.XXXXXX");
	if (!mkdtemp(P.dir))
		return 1;
	snprintf(cert, sizeof(cert), "%s/server.pem", P.dir);
	snprintf(key, sizeof(key), "%s/server.key", P.dir);
	if (bench_make_cert(cert, key)) {
		fprintf(stderr, "gpupool-bench: cannot make a certificate\n");
		rm_dir(P.dir);
		return 1;
	}
	snprintf(P.unix_path, sizeof(P.unix_path), "%s/client.sock", P.dir);
	if (server && *server) {
		const char *ca = getenv("GPUPOOL_CA");

		snprintf(P.tls, sizeof(P.tls), "%s", server);
		snprintf(P.ca, sizeof(P.ca), "%s", ca ? ca : "");
	} else {
		P.own_daemon = true;
		snprintf(P.ca, sizeof(P.ca), "%s", cert);
		if (start_daemon()) {
			stop_daemon();
			return 1;
		}
	}
	measure(&o);
	stop_daemon();
	rm_dir(P.dir);
	derive(&o);
	if (o.json)
		print_json(&o);
	else
		print_table(&o);
	return failures ? 1 : 0;
}
