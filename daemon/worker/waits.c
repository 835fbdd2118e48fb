/* waits.c -- calls that wait for the device run on threads of their own, so that one client
 * thread's cuStreamSynchronize never holds up another thread's calls.
 *
 * DESIGN: the main thread reads every request and runs it under w->lock (the session's
 * tables and the driver calls that change them). A handler whose call would wait for the
 * device (stream, event or context synchronize; and frees, unloads, destroys and a primary
 * context's reset and last release, which the driver makes wait: worker.h, enum
 * gp_wait_kind) does not wait: it hands the wait to gp__wait_start(), and the main thread
 * goes on reading. A waiter thread makes the call's
 * context current, waits without any lock, then takes w->lock (to take a kept deferred
 * error) and the connection's send lock and sends the call's reply. Lock order: w->lock,
 * then jobs_lock or the send lock; jobs_lock is never held while taking another.
 *
 * Ordering is CUDA's: the work a wait covers was queued by the main thread before the wait
 * was handed over, and the client thread that asked waits for this reply before it sends
 * anything else. The first waiter is made before the tenant's first call
 * (gp__waits_prestart), the others on demand (at most GP_WAITERS_MAX; a wait beyond that,
 * or one whose thread cannot be made, queues for the first free one); they live as long as
 * the process.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "log.h"
#include "worker.h"

#define GP_WAITERS_MAX 64

struct job {
	struct gp_wait wait;
	uint64_t request_id;
	uint16_t type;
	struct job *next;
	struct job *active_next; /* in `active` while a waiter waits on it */
};

static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cond = PTHREAD_COND_INITIALIZER;
static struct job *jobs_head, **jobs_tail = &jobs_head;
static struct job *active; /* being waited for: answered by the watchdog on kernel_timeout */
static unsigned nwaiters, idle, busy;

static CUresult run_wait(struct gp_worker *w, const struct gp_wait *wt)
{
	CUresult r;

	/* These end a context: none is made current for them. */
	switch (wt->kind) {
	case GP_WAIT_CTX_DESTROY:
		return w->drv.cuCtxDestroy_v2(wt->ctx);
	case GP_WAIT_PRIMARY_RELEASE:
		return GP_DRV(w, cuDevicePrimaryCtxRelease_v2, wt->device);
	case GP_WAIT_PRIMARY_RESET:
		return GP_DRV(w, cuDevicePrimaryCtxReset_v2, wt->device);
	default:
		break;
	}
	r = w->drv.cuCtxSetCurrent(wt->ctx);
	if (r != CUDA_SUCCESS)
		return r;
	switch (wt->kind) {
	case GP_WAIT_CTX:
		return w->drv.cuCtxSynchronize();
	case GP_WAIT_STREAM:
		return GP_DRV(w, cuStreamSynchronize, wt->stream);
	case GP_WAIT_EVENT:
		return GP_DRV(w, cuEventSynchronize, wt->event);
	case GP_WAIT_MEM_FREE:
		return gp__mem_drv_free(w, wt->dptr);
	case GP_WAIT_STREAM_DESTROY:
		return GP_DRV(w, cuStreamDestroy_v2, wt->stream);
	case GP_WAIT_MODULE_UNLOAD:
		return w->drv.cuModuleUnload(wt->module);
	case GP_WAIT_LIBRARY_UNLOAD:
		return GP_DRV(w, cuLibraryUnload, wt->library);
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static void *waiter(void *arg)
{
	struct gp_worker *w = arg;
	sigset_t all;

	/* Signals are the main thread's (SIGTERM ends the session between calls). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct gp_frame_hdr h = {0};
		struct job *j;
		CUresult r;
		int ret;

		pthread_mutex_lock(&jobs_lock);
		idle++;
		while (!jobs_head)
			pthread_cond_wait(&jobs_cond, &jobs_lock);
		idle--;
		j = jobs_head;
		jobs_head = j->next;
		if (!jobs_head)
			jobs_tail = &jobs_head;
		j->active_next = active;
		active = j;
		pthread_mutex_unlock(&jobs_lock);

		r = run_wait(w, &j->wait);
		pthread_mutex_lock(&jobs_lock);
		for (struct job **p = &active; *p; p = &(*p)->active_next) {
			if (*p == j) {
				*p = j->active_next;
				break;
			}
		}
		pthread_mutex_unlock(&jobs_lock);
		h.type = j->type;
		h.request_id = j->request_id;
		pthread_mutex_lock(&w->lock);
		if (j->wait.kind == GP_WAIT_PRIMARY_RELEASE ||
		    j->wait.kind == GP_WAIT_PRIMARY_RESET)
			w->primary_ending[j->wait.session_device] = false;
		/* A synchronize (or a free) is where pools give back what they hold above their
		 * release threshold: what they hold is charged anew before the client hears. */
		if (j->wait.kind != GP_WAIT_STREAM_DESTROY)
			gp__pools_refresh(w, -1);
		ret = gp__send_reply(w, &h, r, NULL, 0, NULL, 0);
		pthread_mutex_unlock(&w->lock);
		if (ret)
			gp_log_debug("session %llu: the reply to %s could not be sent: %s",
				     (unsigned long long)w->session_id, gp_msg_name(h.type),
				     gp_strerror(ret));
		free(j);
		if (w->stats) {
			atomic_store_explicit(&w->stats->last_active, (int64_t)time(NULL),
					      memory_order_relaxed);
			atomic_fetch_sub_explicit(&w->stats->in_call, 1, memory_order_relaxed);
		}
		pthread_mutex_lock(&jobs_lock);
		busy--;
		pthread_mutex_unlock(&jobs_lock);
	}
	return NULL;
}

CUresult gp__wait_start(struct gp_worker *w, const struct gp_req *rq)
{
	struct job *j = calloc(1, sizeof(*j));
	bool spawn;
	pthread_t t;

	if (!j)
		return CUDA_ERROR_OUT_OF_MEMORY;
	j->wait = rq->wait;
	j->request_id = rq->h->request_id;
	j->type = rq->h->type;
	pthread_mutex_lock(&jobs_lock);
	spawn = idle <= busy && nwaiters < GP_WAITERS_MAX;
	if (spawn)
		nwaiters++;
	pthread_mutex_unlock(&jobs_lock);
	if (spawn && pthread_create(&t, NULL, waiter, w) != 0) {
		bool none;

		pthread_mutex_lock(&jobs_lock);
		none = --nwaiters == 0;
		pthread_mutex_unlock(&jobs_lock);
		if (none) {
			gp_log_warnx("session %llu: cannot start a thread to wait on",
				     (unsigned long long)w->session_id);
			free(j);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	} else if (spawn) {
		pthread_detach(t);
	}
	if (w->stats)
		atomic_fetch_add_explicit(&w->stats->in_call, 1, memory_order_relaxed);
	pthread_mutex_lock(&jobs_lock);
	*jobs_tail = j;
	jobs_tail = &j->next;
	busy++;
	pthread_cond_signal(&jobs_cond);
	pthread_mutex_unlock(&jobs_lock);
	return CUDA_SUCCESS;
}

int gp__waits_prestart(struct gp_worker *w)
{
	pthread_t t;
	bool first;

	pthread_mutex_lock(&jobs_lock);
	first = nwaiters == 0;
	if (first)
		nwaiters++;
	pthread_mutex_unlock(&jobs_lock);
	if (!first)
		return 0;
	if (pthread_create(&t, NULL, waiter, w) != 0) {
		pthread_mutex_lock(&jobs_lock);
		nwaiters--;
		pthread_mutex_unlock(&jobs_lock);
		return -1;
	}
	pthread_detach(t);
	return 0;
}

void gp__waits_answer_timeout(struct gp_worker *w)
{
	static bool answered; /* by the main thread or the watchdog, whichever comes first */

	pthread_mutex_lock(&jobs_lock);
	if (answered) {
		pthread_mutex_unlock(&jobs_lock);
		return;
	}
	answered = true;
	for (struct job *j = active; j; j = j->active_next)
		gp__watch_answer_timeout(w, j->request_id);
	for (struct job *j = jobs_head; j; j = j->next)
		gp__watch_answer_timeout(w, j->request_id);
	pthread_mutex_unlock(&jobs_lock);
}

bool gp__waits_busy(void)
{
	bool b;

	pthread_mutex_lock(&jobs_lock);
	b = busy > 0;
	pthread_mutex_unlock(&jobs_lock);
	return b;
}
