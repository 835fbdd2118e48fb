/* discover.c -- choosing where a session goes: quotes from the candidates, then an order to
 * try them in (docs/operations.md, "Many hosts").
 *
 * Before cuInit connects, it asks candidates for a quote at their admin endpoint: the same
 * address, port GPUPOOL_QUOTE_PORT, or the session port + 1 (admin_listen's convention,
 * 7421 beside 7420). All candidates are asked when there are at most QUOTE_ALL of them,
 * otherwise two drawn at random (the power of two choices). A quote is authenticated as the
 * session will be (GPUPOOL_CERT/GPUPOOL_KEY, or GPUPOOL_TOKEN in the request) and costs the
 * daemon no worker. Candidates are then tried best first under GPUPOOL_PLACEMENT (spread:
 * the most room left on a GPU that fits; binpack: the least), then those whose quote says
 * ending preemptible sessions would let it in (its priority, GPUPOOL_PRIORITY, is in the
 * quote), then those where it would wait (fewest before it in the queue's order first),
 * then those not asked or not answering, in DNS order, then draining ones. Each candidate
 * but the last is asked (Hello's no_wait) to refuse the session rather than queue it, so
 * that one that filled up since its quote passes the session on; the last queues it as
 * usual, and so does the first that would preempt: the session waits there for the
 * preemption. GPUPOOL_PLACEMENT=order asks for no quote and keeps the
 * list's order (as before quotes). A quote is not a reservation: the first candidate can
 * still turn the session away, and cuInit then goes on down the list.
 *
 * Runs on cuInit's thread with the client lock held; blocking. The quotes are asked at once,
 * each on a thread of its own, and each within QUOTE_TIMEOUT_MS (connect, TLS, answer): one
 * deadline for all of it, not a timeout per read, so that a candidate sending a byte at a
 * time cannot hold cuInit (conn.h, deadline_us), and a candidate that drops packets costs
 * cuInit that deadline once however many are asked. An answer longer than QUOTE_REPLY_MAX
 * is no quote.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "config.h"
#include "conn.h"
#include "error.h"
#include "interposer.h"
#include "log.h"
#include "resolve.h"

#define QUOTE_ALL 4
#define QUOTE_TIMEOUT_MS 2000
#define QUOTE_REPLY_MAX 8192 /* an AdminReply with a Quote: tens of bytes, and two strings */

enum rank {
	RANK_FITS = 0,
	RANK_PREEMPTS, /* in after preempt_grace, once preemptible sessions are ended */
	RANK_WAITS,
	RANK_UNKNOWN, /* not asked, or no answer */
	RANK_DRAINING,
};

struct cand {
	struct gp_endpoint ep;
	enum rank rank;
	uint64_t room;	   /* room_max (spread) or room_min (binpack) */
	uint32_t queue;	   /* waiting sessions its priority puts before it */
	uint32_t sessions; /* on that daemon */
	size_t order;	   /* its place in DNS order */
};

/* One quote; 0 with q filled, or a negative code (logged at debug). */
static int ask_quote(SSL_CTX *ctx, const struct gp_endpoint *ep, uint16_t port, Gp__Quote *out)
{
	Gp__AdminRequest req = GP__ADMIN_REQUEST__INIT;
	Gp__QuoteQuery q = GP__QUOTE_QUERY__INIT;
	char addr[160], err[256], *colon;
	Gp__AdminReply *rep = NULL;
	struct gp_frame_hdr h;
	struct gp_conn *c;
	int64_t deadline = gp_now_us() + (int64_t)QUOTE_TIMEOUT_MS * 1000;
	const char *s;
	int fd, r;

	snprintf(addr, sizeof(addr), "%s", ep->addr);
	colon = strrchr(addr, ':');
	if (!colon)
		return GP_ECONFIG;
	snprintf(colon + 1, sizeof(addr) - (size_t)(colon + 1 - addr), "%u", port);
	fd = gp_tcp_connect(addr, QUOTE_TIMEOUT_MS, err, sizeof(err));
	if (fd < 0) {
		gp_log_debug("quote from %s: %s", addr, err);
		return fd;
	}
	c = gp_conn_new(fd);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->deadline_us = deadline; /* what the connect left: TLS, request and answer share it */
	c->msg_max = QUOTE_REPLY_MAX;
	s = getenv("GPUPOOL_GPUS");
	q.gpus = s && *s ? (uint32_t)strtoul(s, NULL, 10) : 0;
	s = getenv("GPUPOOL_MEMORY");
	if (s && *s && gp_parse_size(s, &q.memory))
		q.memory = 0;		      /* as Hello asks: the default (fill_hello warns) */
	q.compute = gp__compute_asked(false); /* fill_hello says when it is not a share */
	q.priority_set = gp__priority_asked(false, &q.priority);
	s = getenv("GPUPOOL_SLICE"); /* gp__connect has checked it */
	q.slice = (char *)(s ? s : "");
	s = getenv("GPUPOOL_TOKEN");
	q.token = (char *)(s ? s : "");
	req.command = "quote";
	req.quote = &q;
	r = gp_conn_tls_connect(c, ctx, ep->name);
	if (!r)
		r = gp_conn_send(c, GP_MSG_ADMIN_REQUEST, 0, 1, &req.base, NULL, 0);
	if (!r)
		r = gp_conn_flush(c);
	if (!r)
		r = gp_conn_recv(c, &h);
	if (!r && (h.type != GP_MSG_ADMIN_REPLY ||
		   !(rep = (Gp__AdminReply *)gp_msg_unpack(h.type, c->msg, h.msg_len))))
		r = GP_EDECODE;
	if (r) {
		gp_log_debug("quote from %s: %s", addr, c->err[0] ? c->err : gp_strerror(r));
		goto out;
	}
	if (rep->status || !rep->quote) {
		gp_log_debug("quote from %s: refused: %s", addr, rep->message);
		r = GP_EREFUSED;
		goto out;
	}
	*out = *rep->quote;
	out->tenant = out->reason = NULL; /* freed with rep */
	gp_log_debug("quote from %s: %s, %u free GPU%s, room %llu..%llu, %u waiting (%u before "
		     "it at priority %u), %u to preempt%s",
		     addr, out->fits ? "fits" : "does not fit", out->free_gpus,
		     out->free_gpus == 1 ? "" : "s", (unsigned long long)out->room_min,
		     (unsigned long long)out->room_max, out->queue, out->ahead, out->priority,
		     out->preempt, out->draining ? ", draining" : "");
out:
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	gp_conn_free(c);
	return r;
}

/* One candidate's quote, asked on a thread of its own. */
struct asking {
	SSL_CTX *ctx;
	const struct gp_endpoint *ep;
	uint16_t port;
	Gp__Quote q;
	int r; /* ask_quote's, -1 until asked */
	bool started;
	pthread_t thread;
};

static void *ask_thread(void *arg)
{
	struct asking *a = arg;

	a->q = (Gp__Quote)GP__QUOTE__INIT;
	a->r = ask_quote(a->ctx, a->ep, a->port, &a->q);
	return NULL;
}

static int compare(const void *a, const void *b, void *arg)
{
	const struct cand *x = a, *y = b;
	bool binpack = *(const bool *)arg;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->rank == RANK_FITS && x->room != y->room)
		return (x->room < y->room) == binpack ? -1 : 1;
	if (x->rank == RANK_FITS && x->sessions != y->sessions)
		return (x->sessions < y->sessions) != binpack ? -1 : 1;
	if ((x->rank == RANK_WAITS || x->rank == RANK_PREEMPTS) && x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int gp__discover_order(struct gp_endpoints *cands, SSL_CTX **ctx, uint32_t *seed, size_t *queue_at)
{
	const char *placement = getenv("GPUPOOL_PLACEMENT"), *qp = getenv("GPUPOOL_QUOTE_PORT");
	size_t n = cands->n, ask[2] = {0, 1}, nask;
	struct asking asks[QUOTE_ALL];
	unsigned long quote_port = 0;
	bool binpack;
	struct cand *v;
	char err[512];

	if (placement && *placement && strcmp(placement, "spread") != 0 &&
	    strcmp(placement, "binpack") != 0 && strcmp(placement, "order") != 0) {
		gp_log_error("GPUPOOL_PLACEMENT=%s: expected spread, binpack or order", placement);
		return GP_ECONFIG;
	}
	if (n < 2 || (placement && strcmp(placement, "order") == 0))
		return 0; /* nothing to choose, or the list's order is the choice */
	binpack = placement && strcmp(placement, "binpack") == 0;
	if (qp && *qp) {
		char *end;

		quote_port = strtoul(qp, &end, 10);
		if (*end || quote_port == 0 || quote_port > 65535) {
			gp_log_error("GPUPOOL_QUOTE_PORT=%s is not a port", qp);
			return GP_ECONFIG;
		}
	}
	if (!*ctx) {
		*ctx = gp_tls_client_ctx_new(getenv("GPUPOOL_CA"), getenv("GPUPOOL_CERT"),
					     getenv("GPUPOOL_KEY"), err, sizeof(err));
		if (!*ctx) {
			gp_log_error("TLS setup: %s", err);
			return GP_ETLS;
		}
	}
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct cand){.ep = cands->v[i], .rank = RANK_UNKNOWN, .order = i};
	nask = n <= QUOTE_ALL ? n : 2;
	if (n > QUOTE_ALL) { /* two distinct ones at random */
		ask[0] = gp__rand(seed) % n;
		ask[1] = (ask[0] + 1 + gp__rand(seed) % (n - 1)) % n;
	}
	for (size_t k = 0; k < nask; k++) {
		struct cand *x = &v[n <= QUOTE_ALL ? k : ask[k]];
		uint16_t port = quote_port ? (uint16_t)quote_port
					   : (uint16_t)(x->ep.port < 65535 ? x->ep.port + 1 : 0);

		asks[k] = (struct asking){.ctx = *ctx, .ep = &x->ep, .port = port, .r = -1};
		if (x->ep.kind != GP_EP_TLS || !port)
			continue;
		/* Each quote in a thread of its own, so that a silent candidate costs its
		 * deadline once, not once per candidate; one that cannot start is asked here. */
		asks[k].started = pthread_create(&asks[k].thread, NULL, ask_thread, &asks[k]) == 0;
		if (!asks[k].started)
			ask_thread(&asks[k]);
	}
	for (size_t k = 0; k < nask; k++) {
		struct cand *x = &v[n <= QUOTE_ALL ? k : ask[k]];
		const Gp__Quote *q = &asks[k].q;

		if (asks[k].started)
			pthread_join(asks[k].thread, NULL);
		if (asks[k].r != 0)
			continue;
		x->rank = q->draining  ? RANK_DRAINING
			  : q->fits    ? RANK_FITS
			  : q->preempt ? RANK_PREEMPTS
				       : RANK_WAITS;
		x->room = binpack ? q->room_min : q->room_max;
		x->queue = q->ahead;
		x->sessions = q->sessions;
	}
	qsort_r(v, n, sizeof(*v), compare, &binpack);
	*queue_at = n - 1;
	for (size_t i = n; i-- > 0;) {
		cands->v[i] = v[i].ep;
		if (v[i].rank == RANK_PREEMPTS)
			*queue_at = i;
	}
	gp_log_debug("candidates under %s, best first: %s%s", binpack ? "binpack" : "spread",
		     cands->v[0].addr, n > 1 ? ", ..." : "");
	free(v);
	return 1;
}
