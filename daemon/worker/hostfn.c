/* hostfn.c -- host functions run in the client, in stream order.
 *
 * cuLaunchHostFunc and cuStreamAddCallback name a function of the client's process. The
 * worker queues a callback of its own on the stream (cuStreamAddCallback); when the stream
 * reaches it, the driver's thread sends HOST_CALL to the client and waits for HOST_DONE,
 * so the stream's later work waits for the client's function, as CUDA orders it. The main
 * thread reads HOST_DONE and wakes that callback.
 *
 * A host function queued on a capturing stream, and a graph's host node, become a driver
 * host node whose function does the same at every launch (gp__hostfn_node_run).
 *
 * DESIGN: `calls` (the callbacks waiting for the client) and `nodes` are under `lock`; a callback sends
 * under the connection's send lock and holds neither lock while it waits.
 */
#include <pthread.h>
#include <stdlib.h>

#include "error.h"
#include "log.h"
#include "worker.h"

struct hostfn {
	struct gp_worker *w;
	uint64_t id; /* the LAUNCH_HOST_FUNC's request id, echoed by HOST_CALL and HOST_DONE */
	uint64_t fn, data, client_stream;
	uint32_t kind;
	bool done;
	uint8_t *bytes; /* kinds 2 and 3: the staging buffer the bytes come into or go from */
	uint64_t nbytes;
	struct hostfn *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static struct hostfn *calls;

/* Sends HOST_CALL for hf and waits for its HOST_DONE; hf is off the list afterwards. */
static void call_client(struct hostfn *hf, CUresult status)
{
	uint64_t args[5] = {hf->fn, hf->data, hf->client_stream, hf->kind, (uint64_t)status};
	Gp__Call call = GP__CALL__INIT;
	int ret;

	call.arg = args;
	call.n_arg = 5;
	gp_conn_send_lock(hf->w->client);
	if (hf->kind == 3) {
		struct gp_bulk_source src = {.src = hf->bytes};

		ret = gp_bulk_send(hf->w->client, GP_MSG_HOST_CALL, 0, hf->id, &call.base,
				   hf->nbytes, &src);
	} else {
		ret = gp_conn_send(hf->w->client, GP_MSG_HOST_CALL, 0, hf->id, &call.base, NULL, 0);
	}
	if (!ret)
		ret = gp_conn_flush(hf->w->client);
	gp_conn_send_unlock(hf->w->client);
	pthread_mutex_lock(&lock);
	/* A client that is gone never answers; the session ends without it. */
	while (!ret && !hf->done)
		pthread_cond_wait(&done_cv, &lock);
	for (struct hostfn **p = &calls; *p; p = &(*p)->next) {
		if (*p == hf) {
			*p = hf->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
}

static void CUDA_CB on_stream(CUstream s, CUresult status, void *arg)
{
	struct hostfn *hf = arg;

	(void)s;
	call_client(hf, status);
	free(hf);
}

/*
 * Repeatable host functions: a graph's host node (or a host function captured into a
 * graph) runs once per launch. Each run sends HOST_CALL under an id of its own, from a
 * range request ids do not reach (the top bit set), so HOST_DONE finds it.
 */
struct hostnode {
	struct gp_worker *w;
	uint64_t fn, data, client_stream;
	uint32_t kind;
	uint8_t *bytes; /* kinds 2, 3: staging of nbytes, as long as the session */
	uint64_t nbytes;
	struct hostnode *next;
};

static struct hostnode *nodes; /* under lock; they live as long as the session */
static uint64_t nnodes;
static uint64_t next_run_id = 1;
/* Repeatable host functions a session may make (each is a few dozen bytes, kept). */
#define HOSTNODES_MAX (1u << 20)

void *gp__hostfn_node_new(struct gp_worker *w, uint64_t fn, uint64_t data, uint64_t client_stream,
			  uint32_t kind)
{
	struct hostnode *n;

	pthread_mutex_lock(&lock);
	if (nnodes >= HOSTNODES_MAX) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	nnodes++;
	pthread_mutex_unlock(&lock);
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	*n = (struct hostnode){
		.w = w, .fn = fn, .data = data, .client_stream = client_stream, .kind = kind};
	pthread_mutex_lock(&lock);
	n->next = nodes;
	nodes = n;
	pthread_mutex_unlock(&lock);
	return n;
}

void *gp__hostfn_copy_new(struct gp_worker *w, uint64_t token, uint64_t nbytes, bool fetch,
			  uint8_t **staging)
{
	struct hostnode *n;
	uint8_t *b = malloc(nbytes ? nbytes : 1);

	if (!b)
		return NULL;
	n = gp__hostfn_node_new(w, token, nbytes, 0, fetch ? 2 : 3);
	if (!n) {
		free(b);
		return NULL;
	}
	n->bytes = b;
	n->nbytes = nbytes;
	*staging = b;
	return n;
}

bool gp__hostfn_is_copy(void *node, bool *fetch)
{
	const struct hostnode *n = node;

	*fetch = n->kind == 2;
	return n->kind == 2 || n->kind == 3;
}

void CUDA_CB gp__hostfn_node_run(void *arg)
{
	struct hostnode *n = arg;
	struct hostfn hf = {.w = n->w,
			    .fn = n->fn,
			    .data = n->data,
			    .client_stream = n->client_stream,
			    .kind = n->kind,
			    .bytes = n->bytes,
			    .nbytes = n->nbytes};

	pthread_mutex_lock(&lock);
	hf.id = (1ull << 63) | next_run_id++;
	hf.next = calls;
	calls = &hf;
	pthread_mutex_unlock(&lock);
	call_client(&hf, CUDA_SUCCESS);
}

CUresult gp__serve_launch_host_func(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_launch_host_func *a,
				    struct gp_out_launch_host_func *o)
{
	struct hostfn *hf;
	CUresult r;

	if (a->kind > 1 || !a->fn)
		return CUDA_ERROR_INVALID_VALUE;
	if (gp__stream_capturing(w, a->stream_drv)) {
		void *n;

		/* captured: a host node that runs in the client at every launch of the graph */
		if (a->kind != 0)
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* as CUDA: no callbacks */
		n = gp__hostfn_node_new(w, a->fn, a->data, a->client_stream, a->kind);
		if (!n)
			return CUDA_ERROR_OUT_OF_MEMORY;
		return GP_DRV(w, cuLaunchHostFunc, a->stream_drv, gp__hostfn_node_run, n);
	}
	hf = calloc(1, sizeof(*hf));
	if (!hf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*hf = (struct hostfn){.w = w,
			      .id = rq->h->request_id,
			      .fn = a->fn,
			      .data = a->data,
			      .client_stream = a->client_stream,
			      .kind = a->kind};
	pthread_mutex_lock(&lock);
	hf->next = calls;
	calls = hf;
	pthread_mutex_unlock(&lock);
	r = GP_DRV(w, cuStreamAddCallback, a->stream_drv, on_stream, hf, 0);
	if (r != CUDA_SUCCESS) {
		pthread_mutex_lock(&lock);
		calls = hf->next;
		pthread_mutex_unlock(&lock);
		free(hf);
	}
	return r;
}

int gp__host_done(struct gp_worker *w, const struct gp_frame_hdr *h)
{
	struct hostfn *hf;

	if (h->msg_len)
		return GP_EFRAME;
	pthread_mutex_lock(&lock);
	for (hf = calls; hf && hf->id != h->request_id; hf = hf->next)
		;
	if (hf && !hf->done && hf->kind == 2) {
		/* a fetch: exactly the bytes asked for, into the staging buffer (the waiting
		 * callback holds hf; nothing else touches it until done) */
		struct gp_bulk_sink sink = {.dst = hf->bytes};
		int ret;

		pthread_mutex_unlock(&lock);
		ret = gp_bulk_recv(w->client, h, hf->nbytes, &sink);
		if (!ret && sink.got != hf->nbytes)
			ret = GP_EFRAME;
		if (ret)
			return ret; /* the callback stays waiting; the session ends */
		pthread_mutex_lock(&lock);
	} else if (h->bulk_len || (h->flags & GP_F_MORE)) {
		pthread_mutex_unlock(&lock);
		return GP_EFRAME;
	}
	if (hf && !hf->done) {
		hf->done = true;
		pthread_cond_broadcast(&done_cv);
	}
	pthread_mutex_unlock(&lock);
	if (!hf) {
		gp_log_warnx("session %llu: HOST_DONE for request %llu, which waits for none",
			     (unsigned long long)w->session_id, (unsigned long long)h->request_id);
		return GP_ETYPE;
	}
	return 0;
}

bool gp__host_calls_pending(void)
{
	bool b;

	pthread_mutex_lock(&lock);
	b = calls != NULL;
	pthread_mutex_unlock(&lock);
	return b;
}
