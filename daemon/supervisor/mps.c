/* mps.c -- the MPS control daemons the pool owns: one per GPU whose line says `gpu N mps on`,
 * started at start with its own pipe and log directories under mps_dir and that GPU alone
 * visible, restarted when it dies (with backoff, logged), and stopped at exit (`quit` through
 * the control program, then SIGTERM, then SIGKILL). Workers placed on such a GPU get its pipe
 * directory (admission.c, AdmitReply.mps_pipe_directory). docs/scheduling.md says what of this
 * was checked only against the stand-in of tests/integration/fake_mps_control.c.
 *
 * The processes are forked here, not through libuv: libuv reaps only the children it spawned,
 * so these are reaped by gp__mps_tick (waitpid on each pid, WNOHANG). Stopping never waits in
 * the supervisor's loop: gp__mps_stop_begin sends every control daemon its quit at once, and
 * each tick moves each one on when it has ended or its time is up (MPS_QUIT_WAIT_MS, then
 * SIGTERM and MPS_TERM_WAIT_MS, then SIGKILL and MPS_TERM_WAIT_MS more, then it is given up
 * on, logged), so all GPUs take at most those 9 s together; the loop answers meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

#define MPS_BACKOFF_FIRST_MS 1000
#define MPS_BACKOFF_MAX_MS 60000
#define MPS_STABLE_MS 60000 /* up that long: the next death starts the backoff afresh */
#define MPS_QUIT_WAIT_MS 5000
#define MPS_TERM_WAIT_MS 2000

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[sizeof(((struct gp_mps *)0)->pipe_dir)];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The environment a control program runs with: the daemon's, its directories and its one GPU
 * visible. Built before fork (the child only execs). NULL when out of memory. */
static char **control_env(const struct gp_daemon *d, const struct gp_mps *m)
{
	extern char **environ;
	size_t n = 0, k = 0;
	char vis[48], **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) != 0 &&
		    strncmp(environ[i], "CUDA_MPS_LOG_DIRECTORY=", 23) != 0 &&
		    strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) != 0)
			env[k++] = environ[i];
	gp__visible_name(d, m->gpu, vis, sizeof(vis));
	if (asprintf(&env[k++], "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir) < 0 ||
	    asprintf(&env[k++], "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir) < 0 ||
	    asprintf(&env[k++], "CUDA_VISIBLE_DEVICES=%s", vis) < 0) {
		free(env); /* a leak of at most two strings, out of memory */
		return NULL;
	}
	return env;
}

static void env_free(char **env, size_t keep)
{
	size_t n = 0;

	if (!env)
		return;
	while (env[n])
		n++;
	for (size_t i = keep; i < n; i++)
		free(env[i]);
	free(env);
}

/* How many entries of control_env's result are the daemon's own (not to be freed). */
static size_t env_own(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	return n - 3;
}

/* In the child: stdin from fd, default signals, then the control program (-f: in the
 * foreground, so that the pid is the control daemon's own). */
static void exec_control(const struct gp_daemon *d, char **env, int in, bool daemon_mode)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (in >= 0 && in != 0) {
		dup2(in, 0);
		close(in);
	}
	if (daemon_mode)
		execvpe(d->cfg->mps_control, (char *[]){d->cfg->mps_control, "-f", NULL}, env);
	else
		execvpe(d->cfg->mps_control, (char *[]){d->cfg->mps_control, NULL}, env);
	_exit(127);
}

static void start(struct gp_daemon *d, struct gp_mps *m)
{
	char **env = control_env(d, m);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid_t pid = env && in >= 0 ? fork() : -1;

	if (pid == 0)
		exec_control(d, env, in, true);
	if (in >= 0)
		close(in);
	if (env)
		env_free(env, env_own(env));
	if (pid < 0) {
		gp_log_warnx("GPU %u: cannot start its MPS control daemon; again in %u ms", m->gpu,
			     m->backoff_ms);
		m->next_start = mono_ms() + m->backoff_ms;
		return;
	}
	m->pid = pid;
	m->started_at = mono_ms();
	m->starts++;
	gp_log_info("GPU %u: MPS control daemon started (%s -f, pid %d, pipes in %s)", m->gpu,
		    d->cfg->mps_control, (int)pid, m->pipe_dir);
}

int gp__mps_start(struct gp_daemon *d)
{
	d->nmps = 0;
	if (!d->cfg->mps_gpus)
		return 0;
	for (uint32_t g = 0; g < 64; g++) {
		struct gp_pool_gpu *pg;
		struct gp_mps *m;
		int r;

		if (!(d->cfg->mps_gpus & (1ull << g)))
			continue;
		pg = gp_pool_gpu(&d->pool, g);
		if (!pg || !gp_pool_target(pg) || pg->instance) {
			gp_log_warnx("gpu %u mps on: %s; no MPS control daemon for it", g,
				     !pg ? "the pool has no such GPU" : "a GPU in MIG mode");
			continue;
		}
		m = &d->mps[d->nmps];
		*m = (struct gp_mps){.gpu = g, .backoff_ms = MPS_BACKOFF_FIRST_MS};
		if (snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s/gpu%u/pipe", d->cfg->mps_dir,
			     g) >= (int)sizeof(m->pipe_dir) ||
		    snprintf(m->log_dir, sizeof(m->log_dir), "%s/gpu%u/log", d->cfg->mps_dir, g) >=
			    (int)sizeof(m->log_dir)) {
			gp_log_warnx("mps_dir %s: too long", d->cfg->mps_dir);
			return -1;
		}
		/* Workers (other uids under worker_uids) must reach the pipes. */
		r = mkdir_p(m->pipe_dir, 0755);
		if (!r)
			r = mkdir_p(m->log_dir, 0755);
		if (r) {
			gp_log_warnx("GPU %u: cannot make its MPS directories under %s: %s", g,
				     d->cfg->mps_dir, strerror(-r));
			return -1;
		}
		d->nmps++;
		start(d, m);
	}
	return 0;
}

const char *gp__mps_pipe_dir(const struct gp_daemon *d, uint32_t gpu)
{
	for (unsigned i = 0; i < d->nmps; i++)
		if (d->mps[i].gpu == gpu)
			return d->mps[i].pipe_dir;
	return NULL;
}

static void describe(int status, char *out, size_t len)
{
	if (WIFEXITED(status))
		snprintf(out, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, len, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, len, "ended");
}

static void stop_step(struct gp_mps *m, uint64_t now);

void gp__mps_tick(struct gp_daemon *d)
{
	uint64_t now = mono_ms();
	bool stopping = false;

	for (unsigned i = 0; i < d->nmps; i++)
		if (d->mps[i].stop != GP_MPS_RUN) {
			if (d->mps[i].stop != GP_MPS_DONE)
				stop_step(&d->mps[i], now);
			stopping = true;
		}
	if (stopping) {
		/* The last one done: the supervisor's stop goes on (it waited for them). */
		if (gp__mps_stopped(d) && !d->mps_stop_told) {
			d->mps_stop_told = true;
			gp__supervisor_stop(d);
		}
		return;
	}
	for (unsigned i = 0; i < d->nmps; i++) {
		struct gp_mps *m = &d->mps[i];
		char how[64];
		int status;

		if (m->pid > 0) {
			if (waitpid(m->pid, &status, WNOHANG) != m->pid)
				continue;
			describe(status, how, sizeof(how));
			if (now - m->started_at >= MPS_STABLE_MS)
				m->backoff_ms = MPS_BACKOFF_FIRST_MS;
			gp_log_warnx("GPU %u: its MPS control daemon (pid %d) %s; restarting it in "
				     "%u ms",
				     m->gpu, (int)m->pid, how, m->backoff_ms);
			m->pid = 0;
			m->next_start = now + m->backoff_ms;
			m->backoff_ms = m->backoff_ms * 2 > MPS_BACKOFF_MAX_MS ? MPS_BACKOFF_MAX_MS
									       : m->backoff_ms * 2;
			continue;
		}
		if (!d->stopping && now >= m->next_start)
			start(d, m);
	}
}

/* Reaps pid if it has ended; true when it has (or is not our child). */
static bool reaped(pid_t pid, int *status)
{
	pid_t r = waitpid(pid, status, WNOHANG);

	return r == pid || (r < 0 && errno == ECHILD);
}

/* `quit` as NVIDIA documents it: the control program, without -f, reads commands on its
 * stdin and passes them to the daemon through the pipe directory. Not waited for: its pid
 * (0 when it could not start) is reaped by stop_step. */
static int send_quit(struct gp_daemon *d, const struct gp_mps *m)
{
	char **env = control_env(d, m);
	int fds[2];
	pid_t pid;

	if (!env || pipe2(fds, O_CLOEXEC) != 0) {
		env_free(env, env ? env_own(env) : 0);
		gp_log_warnx("GPU %u: cannot run %s to send quit", m->gpu, d->cfg->mps_control);
		return 0;
	}
	pid = fork();
	if (pid == 0)
		exec_control(d, env, fds[0], false);
	env_free(env, env_own(env));
	close(fds[0]);
	/* Five bytes into an empty pipe: this write does not block. */
	if (pid > 0 && write(fds[1], "quit\n", 5) != 5)
		gp_log_warnx("GPU %u: could not send quit to its MPS control daemon", m->gpu);
	close(fds[1]);
	return pid > 0 ? pid : 0;
}

void gp__mps_stop_begin(struct gp_daemon *d)
{
	uint64_t now = mono_ms();

	for (unsigned i = 0; i < d->nmps; i++) {
		struct gp_mps *m = &d->mps[i];

		if (m->stop != GP_MPS_RUN)
			continue;
		if (m->pid <= 0) {
			m->stop = GP_MPS_DONE;
			continue;
		}
		m->quit_pid = send_quit(d, m);
		m->stop = GP_MPS_QUIT;
		m->stop_at = now + MPS_QUIT_WAIT_MS;
	}
}

bool gp__mps_stopped(const struct gp_daemon *d)
{
	for (unsigned i = 0; i < d->nmps; i++)
		if (d->mps[i].stop != GP_MPS_DONE)
			return false;
	return true;
}

/* One look at a stopping control daemon: ended, or its time up for this step. */
static void stop_step(struct gp_mps *m, uint64_t now)
{
	char how[64];
	int status = 0;

	/* The control program sending quit: reaped when it ends; killed once the quit's time
	 * is up or the daemon is gone (then reaped at the next look). */
	if (m->quit_pid > 0) {
		if (reaped(m->quit_pid, NULL))
			m->quit_pid = 0;
		else if (m->stop != GP_MPS_QUIT || now >= m->stop_at || m->pid <= 0)
			kill(m->quit_pid, SIGKILL);
	}
	if (m->pid > 0 && reaped(m->pid, &status)) {
		describe(status, how, sizeof(how));
		if (m->stop == GP_MPS_QUIT)
			gp_log_info("GPU %u: MPS control daemon (pid %d) quit", m->gpu,
				    (int)m->pid);
		else
			gp_log_info("GPU %u: MPS control daemon (pid %d) %s", m->gpu, (int)m->pid,
				    how);
		m->pid = 0;
	}
	if (m->pid <= 0) {
		if (m->quit_pid > 0 && now >= m->stop_at + MPS_TERM_WAIT_MS) {
			/* a quit program that outlives SIGKILL (stuck in the kernel) is not
			 * waited for forever either */
			gp_log_warnx("GPU %u: MPS quit program (pid %d) not reaped after SIGKILL; "
				     "giving up on it",
				     m->gpu, (int)m->quit_pid);
			m->quit_pid = 0;
		}
		if (m->quit_pid <= 0)
			m->stop = GP_MPS_DONE;
		return;
	}
	if (now < m->stop_at)
		return;
	switch (m->stop) {
	case GP_MPS_QUIT:
		gp_log_warnx("GPU %u: MPS control daemon (pid %d) did not quit; SIGTERM", m->gpu,
			     (int)m->pid);
		kill(m->pid, SIGTERM);
		m->stop = GP_MPS_TERM;
		m->stop_at = now + MPS_TERM_WAIT_MS;
		break;
	case GP_MPS_TERM:
		gp_log_warnx("GPU %u: MPS control daemon (pid %d) did not end on SIGTERM; SIGKILL",
			     m->gpu, (int)m->pid);
		kill(m->pid, SIGKILL);
		m->stop = GP_MPS_KILL;
		m->stop_at = now + MPS_TERM_WAIT_MS;
		break;
	default:
		gp_log_warnx("GPU %u: MPS control daemon (pid %d) not reaped after SIGKILL; "
			     "giving up on it",
			     m->gpu, (int)m->pid);
		m->pid = 0;
		if (m->quit_pid > 0 && reaped(m->quit_pid, NULL))
			m->quit_pid = 0;
		if (m->quit_pid > 0) {
			/* killed above; not waited for past this (a zombie at worst) */
			gp_log_warnx(
				"GPU %u: MPS quit program (pid %d) not reaped; giving up on it",
				m->gpu, (int)m->quit_pid);
			m->quit_pid = 0;
		}
		m->stop = GP_MPS_DONE;
		break;
	}
}

void gp__mps_stop(struct gp_daemon *d)
{
	gp__mps_stop_begin(d);
	while (!gp__mps_stopped(d)) {
		uint64_t now = mono_ms();

		for (unsigned i = 0; i < d->nmps; i++)
			if (d->mps[i].stop != GP_MPS_DONE)
				stop_step(&d->mps[i], now);
		if (!gp__mps_stopped(d))
			nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL);
	}
	d->nmps = 0;
}
