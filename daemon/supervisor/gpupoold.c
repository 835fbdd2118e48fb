/* gpupoold.c -- the pool daemon: configuration, signals, the event loop. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <gpupool/gpupool.h>

#include "conn.h"
#include "daemon.h"
#include "error.h"
#include "log.h"

static void usage(void)
{
	fprintf(stderr, "usage: gpupoold [-n] [-d] [-f FILE]\n"
			"  -f FILE  configuration file (default " GP_CONFIG_DEFAULT_PATH ")\n"
			"  -n       check the configuration and exit\n"
			"  -d       log at debug level\n"
			"  -V       print the version and exit\n");
	exit(2);
}

/* The worker lives at ../libexec/gpupool/gpupool-worker from the daemon's own bin/. */
static int find_worker(struct gp_daemon *d)
{
	char self[PATH_MAX];
	ssize_t n;

	if (d->cfg->worker) {
		snprintf(d->worker_path, sizeof(d->worker_path), "%s", d->cfg->worker);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -errno;
		self[n] = '\0';
		snprintf(d->worker_path, sizeof(d->worker_path),
			 "%s/../libexec/gpupool/gpupool-worker", dirname(self));
	}
	if (access(d->worker_path, X_OK) != 0) {
		gp_log_error("worker %s: %s", d->worker_path, strerror(errno));
		return -ENOENT;
	}
	return 0;
}

/* Loads the certificate and key once at start, so a bad pair fails here. */
static int check_tls(const struct gp_config *cfg)
{
	char err[512];
	SSL_CTX *ctx =
		gp_tls_server_ctx_new(cfg->tls_cert, cfg->tls_key, cfg->tls_ca, err, sizeof(err));

	if (!ctx) {
		gp_log_error("%s: %s", cfg->path, err);
		return -1;
	}
	SSL_CTX_free(ctx);
	return 0;
}

/* Puts the running value of a bound setting back into a new configuration; true when the
 * file asked for a change. (A failed copy leaves NULL: the caller checks the required.) */
static bool keep_bound(char **slot, const char *running)
{
	bool changed = (*slot == NULL) != (running == NULL) ||
		       (*slot && running && strcmp(*slot, running) != 0);

	free(*slot);
	*slot = running ? strdup(running) : NULL;
	return changed;
}

int gp__daemon_reload(struct gp_daemon *d, char *why, size_t whylen)
{
	struct gp_config *cfg;
	uint32_t gids[GP_WORKER_GROUPS_MAX];
	unsigned ngids;
	bool ok = false;
	char err[512];

	cfg = gp_config_load(d->cfg->path, err, sizeof(err));
	if (cfg && check_tls(cfg))
		snprintf(err, sizeof(err), "the TLS certificate or key is unusable");
	else if (cfg && gp__uids_resolve(cfg, gids, &ngids, err, sizeof(err)) == 0)
		ok = true;
	if (!ok) {
		snprintf(why, whylen, "%s", err);
		gp_log_error("reload failed, keeping the running configuration: %s", why);
		gp_config_free(cfg);
		return GP_ECONFIG;
	}
	/* What is bound (addresses, sockets) stays as it was until a restart. */
	if (keep_bound(&cfg->listen, d->cfg->listen) |
	    keep_bound(&cfg->admin_socket, d->cfg->admin_socket) |
	    keep_bound(&cfg->admin_group, d->cfg->admin_group) |
	    keep_bound(&cfg->metrics_listen, d->cfg->metrics_listen) |
	    keep_bound(&cfg->listen_plain, d->cfg->listen_plain) |
	    keep_bound(&cfg->listen_unix, d->cfg->listen_unix) |
	    keep_bound(&cfg->listen_unix_group, d->cfg->listen_unix_group))
		gp_log_warnx("reload: changes to listen, listen_plain, listen_unix(_group), "
			     "metrics_listen and admin_socket/admin_group take effect at restart");
	/* Where workers' cgroups go was settled at start; their limits apply to new ones. */
	if ((cfg->cgroup != d->cfg->cgroup) | keep_bound(&cfg->cgroup_path, d->cfg->cgroup_path))
		gp_log_warnx("reload: a change to cgroup takes effect at restart");
	cfg->cgroup = d->cfg->cgroup;
	if (!cfg->listen || !cfg->admin_socket) {
		gp_config_free(cfg);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	/* Warm workers loaded the old driver: others load the new one. */
	if (strcmp(cfg->driver, d->cfg->driver) != 0)
		gp__warm_drop(d);
	gp_config_free(d->cfg);
	d->cfg = cfg;
	/* Live workers keep their uids; new ones come from the new range (uids.c). */
	memcpy(d->worker_gids, gids, sizeof(gids));
	d->nworker_gids = ngids;
	gp__warm_fill(d);
	gp__acct_configure(d);
	gp_log_set_level(cfg->log_level);
	gp_log_info("configuration reloaded from %s", cfg->path);
	/* New limits or defaults may let waiting sessions in. */
	gp__admit_pump(d);
	return 0;
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct gp_daemon *d = h->data;
	char why[512];

	if (sig == SIGHUP) {
		gp__daemon_reload(d, why, sizeof(why));
		return;
	}
	gp_log_info("%s received", strsignal(sig));
	gp__supervisor_drain(d);
}

static void on_tick(uv_timer_t *t)
{
	gp__supervisor_tick(t->data);
}

int main(int argc, char **argv)
{
	struct gp_daemon d = {0};
	const char *path = GP_CONFIG_DEFAULT_PATH;
	bool check_only = false, debug = false;
	char err[512];
	int c, ret;

	signal(SIGPIPE, SIG_IGN);
	gp_log_init("gpupoold", GP_LOG_INFO);
	while ((c = getopt(argc, argv, "f:ndV")) != -1) {
		switch (c) {
		case 'f':
			path = optarg;
			break;
		case 'n':
			check_only = true;
			break;
		case 'd':
			debug = true;
			break;
		case 'V':
			printf("gpupoold %s (protocol %d)\n", GP_VERSION_STRING,
			       GP_PROTOCOL_VERSION);
			return 0;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	d.cfg = gp_config_load(path, err, sizeof(err));
	if (!d.cfg)
		gp_fatalx("%s", err);
	gp_log_set_level(debug ? GP_LOG_DEBUG : d.cfg->log_level);
	if (check_tls(d.cfg))
		return 1;
	if (gp__uids_resolve(d.cfg, d.worker_gids, &d.nworker_gids, err, sizeof(err)))
		gp_fatalx("%s: %s", d.cfg->path, err);
	/* A worker taken over as root writes what root may (/proc/sys, other processes'
	 * memory): the syscall filter does not contain that, a uid of its own does. */
	if (geteuid() == 0 && !d.cfg->worker_uid_first)
		gp_log_warnx("running as root without worker_uids: every worker runs as root, and "
			     "a tenant who takes one over owns the host (docs/security.md)");
	if (check_only) {
		printf("configuration OK\n");
		gp_config_free(d.cfg);
		return 0;
	}
	if (find_worker(&d))
		return 1;
	if (gp__inventory(&d))
		gp_fatalx("cannot list the GPUs of driver %s", d.cfg->driver);
	if (gp_pool_targets(&d.pool) == 0) /* GPUs, or MIG instances */
		gp_log_warnx("driver %s shows no GPUs; every session will be refused",
			     d.cfg->driver);

	d.loop = uv_default_loop();
	d.started = time(NULL);
	d.next_id = 1;
	if (gethostname(d.hostname, sizeof(d.hostname)) < 0)
		snprintf(d.hostname, sizeof(d.hostname), "unknown");
	d.hostname[sizeof(d.hostname) - 1] = '\0';
	if (gp__acct_start(&d)) {
		gp_config_free(d.cfg);
		return 1;
	}
	if (gp__supervisor_listen(&d) || gp__admin_listen(&d) || gp__metrics_listen(&d) ||
	    gp__remote_listen(&d)) {
		gp_config_free(d.cfg); /* a socket refused (logged): nothing else to undo */
		return 1;
	}
	/* After the admin socket, which notes the unit's cgroup as it was at start. */
	if (gp__cgroup_start(&d)) {
		gp__admin_close(&d);
		gp_config_free(d.cfg);
		return 1;
	}
	/* Before any worker: warm ones are told the pipe directory at admission. */
	if (gp__mps_start(&d)) {
		gp__mps_stop(&d);
		gp__cgroup_stop(&d);
		gp__admin_close(&d);
		gp_config_free(d.cfg);
		return 1;
	}
	uv_signal_init(d.loop, &d.sigterm);
	uv_signal_init(d.loop, &d.sigint);
	uv_signal_init(d.loop, &d.sighup);
	d.sigterm.data = d.sigint.data = d.sighup.data = &d;
	uv_signal_start(&d.sigterm, on_signal, SIGTERM);
	uv_signal_start(&d.sigint, on_signal, SIGINT);
	uv_signal_start(&d.sighup, on_signal, SIGHUP);
	uv_timer_init(d.loop, &d.tick);
	d.tick.data = &d;
	uv_timer_start(&d.tick, on_tick, 250, 250);
	gp__warm_fill(&d);

	gp_log_info("gpupoold %s listening on %s, admin socket %s, driver %s", GP_VERSION_STRING,
		    d.listen_addr, d.cfg->admin_socket, d.cfg->driver);
	sd_notifyf(0, "READY=1\nSTATUS=0 sessions, %u GPU%s\nMAINPID=%d", gp_pool_targets(&d.pool),
		   gp_pool_targets(&d.pool) == 1 ? "" : "s", getpid());
	ret = uv_run(d.loop, UV_RUN_DEFAULT);
	gp__mps_stop(&d);
	gp__cgroup_stop(&d);
	gp_log_info("stopped");
	uv_loop_close(d.loop);
	gp_config_free(d.cfg);
	return ret ? 1 : 0;
}
