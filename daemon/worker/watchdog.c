/* watchdog.c -- ends the session when its call cannot: the client gone, the pool's word.
 *
 * DESIGN: the worker's one thread spends a long call (a kernel that runs for minutes, a
 * synchronize waiting for a queue of them) inside the driver, where it sees neither the
 * client hang up nor the pool ask it to end. This second thread watches for both, every
 * WATCH_MS, and ends the process with _exit() when the main thread has not done so itself
 * within GRACE_MS:
 *   - the client's socket hung up (POLLRDHUP/POLLHUP/POLLERR): nobody is left to answer,
 *     and whatever work is queued holds the GPU for nothing;
 *   - SIGTERM (evict, idle_timeout, drain_grace): the pool's promise is that the session
 *     ends, not that it ends after its current kernel;
 *   - SIGUSR1: the supervisor saw one call run past kernel_timeout. When that call is one
 *     whose handler does no I/O on the connection (no bulk) and waits for an answer, the
 *     watchdog answers it, CUDA_ERROR_LAUNCH_TIMEOUT with a message saying why, before
 *     ending; otherwise the client sees the connection close.
 *   - SIGUSR2 (docs/scheduling.md): the pool chose the session to be preempted; the watchdog
 *     tells the client's stderr (gp__worker_preempt_tell), and once more if it ends it
 *     itself after the SIGUSR2 that says so and the SIGTERM. The value the supervisor
 *     queues with each SIGUSR2 says notice, cancel or end (enum gp_preempt_signal): after a
 *     cancel, an end for another reason is not told as a preemption, and a new notice is
 *     told again.
 * Locking: `lock` guards busy/quiet/async/request_id, which the main thread sets around a
 * handler (gp__watch_enter/leave). The watchdog writes to the connection only under its
 * send lock, taken without waiting (a thread stuck in a send keeps it), and never returns
 * from there. The calls waiter threads are waiting on (waits.c) are answered the same way.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

#define WATCH_MS 100
#define GRACE_MS 1000
/* Once the main thread has left its loop it is ending anyway: more time to do so cleanly
 * (its last log line), less to keep the GPU. */
#define GRACE_DONE_MS 3000

volatile sig_atomic_t gp__worker_timed_out;

static struct {
	pthread_mutex_t lock;
	bool busy, quiet, async, done;
	uint64_t request_id;
	uint32_t type;
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void gp__watch_enter(const struct gp_frame_hdr *h, bool quiet)
{
	pthread_mutex_lock(&watch.lock);
	watch.busy = true;
	watch.quiet = quiet;
	watch.async = (h->flags & GP_F_NO_REPLY) != 0;
	watch.request_id = h->request_id;
	watch.type = h->type;
	pthread_mutex_unlock(&watch.lock);
}

void gp__watch_leave(void)
{
	pthread_mutex_lock(&watch.lock);
	watch.busy = false;
	pthread_mutex_unlock(&watch.lock);
}

void gp__watch_done(void)
{
	pthread_mutex_lock(&watch.lock);
	watch.busy = false;
	watch.done = true;
	pthread_mutex_unlock(&watch.lock);
}

#define TIMEOUT_MESSAGE "the pool's kernel_timeout ended the session: a kernel ran too long"

/* The answer to a call that ran too long, if the connection is free to take it (a thread
 * stuck while sending holds it, and its client then sees the connection close). */
void gp__watch_answer_timeout(struct gp_worker *w, uint64_t request_id)
{
	Gp__Reply rep = GP__REPLY__INIT;

	rep.result = CUDA_ERROR_LAUNCH_TIMEOUT;
	rep.message = TIMEOUT_MESSAGE;
	if (pthread_mutex_trylock(&w->client->send) != 0)
		return;
	if (gp_conn_send(w->client, GP_MSG_REPLY, 0, request_id, &rep.base, NULL, 0) == 0)
		gp_conn_flush(w->client);
	pthread_mutex_unlock(&w->client->send);
}

/* The client's socket and the session's id, taken before the thread starts: once the main
 * thread is done (watch.done) it frees the connection, which this thread must not touch. */
static int watch_fd = -1;
static unsigned long long watch_session;

/* How the session ended, for the accounting record, unless the main thread said first. */
static void watch_ended(struct gp_worker *w, enum gp_worker_end e)
{
	uint32_t none = GP_WORKER_END_UNKNOWN;

	if (w->stats)
		atomic_compare_exchange_strong(&w->stats->ended, &none, e);
}

static void *watchdog(void *arg)
{
	struct gp_worker *w = arg;
	struct pollfd pfd = {.fd = watch_fd, .events = POLLRDHUP};
	uint64_t hup_at = 0, stop_at = 0;
	sig_atomic_t told_gen = 0; /* the last notice told (worker.c, on_sigusr2) */

	for (;;) {
		uint64_t now, grace;

		if (!hup_at) {
			if (poll(&pfd, 1, WATCH_MS) < 0 && errno != EINTR)
				return NULL;
		} else {
			nanosleep(&(struct timespec){.tv_nsec = WATCH_MS * 1000000L}, NULL);
		}
		now = now_ms();
		if (!hup_at && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			hup_at = now;
		if (!stop_at && gp__worker_stop)
			stop_at = now;
		pthread_mutex_lock(&watch.lock);
		grace = watch.done ? GRACE_DONE_MS : GRACE_MS;
		/* While the connection is the main thread's (not done) and the client there. */
		if (gp__worker_preempted == 1 && told_gen != gp__worker_preempt_gen &&
		    !watch.done && !hup_at) {
			sig_atomic_t gen = gp__worker_preempt_gen;

			if (gp__worker_preempt_tell(w, false) == 0)
				told_gen = gen;
		}
		if (gp__worker_timed_out) {
			/* The call that ran too long is the main thread's, or a waiter's. */
			gp_log_error(
				"session %llu: %s ran past the pool's kernel_timeout; ending the "
				"session",
				watch_session,
				watch.busy && gp_msg_name(watch.type) ? gp_msg_name(watch.type)
								      : "a wait");
			if (!hup_at && !watch.done) {
				if (watch.busy && watch.quiet && !watch.async)
					gp__watch_answer_timeout(w, watch.request_id);
				gp__waits_answer_timeout(w);
			}
			watch_ended(w, GP_WORKER_END_POOL);
			_exit(1);
		}
		if (hup_at && now - hup_at >= grace) {
			gp_log_info("session %llu: the client is gone%s; ending the session",
				    watch_session, watch.busy ? " while a call runs" : "");
			watch_ended(w, GP_WORKER_END_CLIENT_GONE);
			_exit(0);
		}
		if (stop_at && now - stop_at >= grace) {
			gp_log_info("session %llu: ended by the pool%s", watch_session,
				    watch.busy ? " in the middle of a call" : "");
			if (gp__worker_preempted >= 2 && !watch.done && !hup_at)
				gp__worker_preempt_tell(w, true);
			watch_ended(w, GP_WORKER_END_POOL);
			_exit(0);
		}
		pthread_mutex_unlock(&watch.lock);
	}
}

int gp__watch_start(struct gp_worker *w)
{
	watch_fd = w->client->fd;
	watch_session = (unsigned long long)w->session_id;
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int ret;

	/* Signals are the main thread's: its blocked reads return on them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &attr, watchdog, w);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -ret;
}
