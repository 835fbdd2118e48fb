/* remote.c -- talking to daemons' admin endpoints (admin_listen) over mutual TLS.
 *
 * The certificate poolctl shows comes from --cert/--key (or GPUPOOL_ADMIN_CERT,
 * GPUPOOL_ADMIN_KEY), the CA it checks daemons against from --ca (GPUPOOL_ADMIN_CA, else
 * GPUPOOL_CA, else the system store). A daemon that does not answer within ASK_TIMEOUT_S
 * seconds (connect, handshake and reply) counts as down.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "conn.h"
#include "error.h"
#include "poolctl.h"

#define ASK_TIMEOUT_S 10

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	timed_out = 1;
}

static SSL_CTX *client_ctx(struct poolctl *pc, char *err, size_t len)
{
	static SSL_CTX *ctx;

	if (!ctx)
		ctx = gp_tls_client_ctx_new(pc->ca, pc->cert, pc->key, err, len);
	return ctx;
}

Gp__AdminReply *poolctl_ask(struct poolctl *pc, const struct gp_endpoint *ep, Gp__AdminRequest *req,
			    char *err, size_t len)
{
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct timeval tick = {1, 0};
	Gp__AdminReply *rep = NULL;
	struct gp_conn *c = NULL;
	struct gp_frame_hdr h;
	SSL_CTX *ctx;
	int fd;

	if (ep->kind != GP_EP_TLS) {
		snprintf(err, len, "%s: an admin endpoint is HOST:PORT with TLS", ep->entry);
		return NULL;
	}
	ctx = client_ctx(pc, err, len);
	if (!ctx)
		return NULL;
	fd = gp_tcp_connect(ep->addr, ASK_TIMEOUT_S * 1000, err, len);
	if (fd < 0)
		return NULL;
	/* Reads wake each second to look at the deadline (conn.h: interrupt). */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tick, sizeof(tick));
	c = gp_conn_new(fd);
	if (!c) {
		close(fd);
		snprintf(err, len, "out of memory");
		return NULL;
	}
	timed_out = 0;
	c->interrupt = &timed_out;
	sigaction(SIGALRM, &sa, &old);
	alarm(ASK_TIMEOUT_S);
	if (gp_conn_tls_connect(c, ctx, ep->name)) {
		snprintf(err, len, "%s", c->err);
		goto out;
	}
	if (gp_conn_send(c, GP_MSG_ADMIN_REQUEST, 0, 1, &req->base, NULL, 0) || gp_conn_flush(c) ||
	    gp_conn_recv(c, &h)) {
		snprintf(err, len, "%s", timed_out ? "no answer in time" : c->err);
		goto out;
	}
	if (h.type != GP_MSG_ADMIN_REPLY ||
	    !(rep = (Gp__AdminReply *)gp_msg_unpack(h.type, c->msg, h.msg_len)))
		snprintf(err, len, "an answer that is not an admin reply");
out:
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	gp_conn_free(c);
	return rep;
}
