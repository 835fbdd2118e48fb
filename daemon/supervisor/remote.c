/* remote.c -- the admin endpoint over TLS (admin_listen): poolctl on another host, and
 * clients asking for a quote before they connect (docs/operations.md, "Many hosts").
 *
 * DESIGN: everything here runs on the loop thread, as the rest of the supervisor. TLS is
 * terminated without a worker: each connection's SSL object reads from and writes to memory
 * BIOs, and libuv moves the ciphertext, so no socket call ever blocks the loop. What a peer
 * may cost is bounded before anything else: admin_max_connections at once, at most
 * admin_max_per_address of them from one address, handshake_timeout seconds for the TLS
 * handshake, then IDLE_S seconds between requests, and frames of at most MAX_FRAME bytes.
 * A connection that breaks any of it, or sends a frame that does not decode, is closed;
 * nothing else is touched. Peer text (certificate names, commands) is escaped in logs.
 *
 * Refusals cost the peer, not the loop: the first refused request of a connection is logged,
 * the rest are only counted (the count is logged when it closes); a refusal never extends the
 * idle deadline; a peer that is not an admin (a tenant's certificate, or none) is closed after
 * its first refused request, a wrong token included. Slots: connections that are not yet, or
 * not, admins (in the handshake, a tenant's certificate, none) hold at most half of
 * admin_max_connections between them; past that a newcomer takes a slot of the admins' half
 * and must prove an admin certificate, and when every slot is taken the oldest such newcomer
 * still in its handshake gives way. Quotes and floods cannot lock the admins out.
 *
 * Who may ask what: a certificate that chains to admin_ca is an admin, with admin_ca_role
 * unless an admin_name line names it; one that chains to tls_ca (a tenant's) may only ask
 * for a quote, for its own tenant; admin_name applies to it only where no admin_ca is
 * configured (then admin_name is the only way to an admin); a connection without
 * a certificate may only ask for a quote with a token. read-only: status, usage, quote;
 * read-write: also evict, drain, undrain, reload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <gpupool/gpupool.h>

#include "conn.h"
#include "daemon.h"
#include "error.h"
#include "escape.h"
#include "log.h"

#define MAX_FRAME (64u * 1024)
#define IDLE_S 60
#define READ_CHUNK 16384
#define WRITE_QUEUE_MAX (8u << 20)

struct gp_remote {
	uv_tcp_t tcp;
	struct gp_daemon *d;
	SSL *ssl;
	BIO *rbio, *wbio; /* network bytes in (we write them), out (we read and send them) */
	struct gp_frame_decoder dec;
	char addr[128];	  /* HOST:PORT */
	char source[128]; /* HOST: what admin_max_per_address counts */
	char name[128];	  /* the certificate's name, escaped; "" without one */
	char tenant[128]; /* the name unescaped, for quotes */
	enum gp_admin_role role;
	bool handshaken;
	bool querying; /* a usage query runs on the threadpool: frames wait for it */
	bool closing;  /* uv_close called; freed in its callback unless querying */
	bool closed;
	bool ending; /* refused and closing once its answer is written: nothing more read */
	uv_shutdown_t shutdown;
	bool admin;	   /* identified with role read-only or read-write */
	bool reserved;	   /* took a slot of the admins' half: closed unless it is an admin */
	unsigned refused;  /* requests refused; the first is logged, the rest at close */
	uint64_t deadline; /* uv_now() by which the handshake, or the next request, must come */
	struct gp_remote *next;
};

static void flush_out(struct gp_remote *c);
static void process(struct gp_remote *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* ---- lifetime ------------------------------------------------------------------------ */

static void remote_free(struct gp_remote *c)
{
	SSL_free(c->ssl); /* frees both BIOs */
	gp_frame_decoder_deinit(&c->dec);
	free(c);
}

static void on_closed(uv_handle_t *h)
{
	struct gp_remote *c = h->data;

	c->closed = true;
	if (!c->querying)
		remote_free(c);
}

static void remote_close(struct gp_remote *c, const char *why)
{
	struct gp_daemon *d = c->d;

	if (c->closing)
		return;
	c->closing = true;
	if (why)
		gp_log_info("admin endpoint: %s%s%s: %s", c->addr, c->name[0] ? " " : "", c->name,
			    why);
	if (c->refused > 1)
		gp_log_warnx("admin endpoint: %s: %u more requests refused, not logged", c->addr,
			     c->refused - 1);
	for (struct gp_remote **pp = &d->remotes; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			d->nremotes--;
			break;
		}
	uv_close((uv_handle_t *)&c->tcp, on_closed);
}

/* ---- sending ----------------------------------------------------------------------- */

struct out_write {
	uv_write_t req;
	char bytes[];
};

static void on_written(uv_write_t *req, int status)
{
	free(req->data);
}

/* Sends what TLS has written into wbio. */
static void flush_out(struct gp_remote *c)
{
	size_t pending;

	while (!c->closing && (pending = BIO_ctrl_pending(c->wbio)) > 0) {
		struct out_write *w = malloc(sizeof(*w) + pending);
		uv_buf_t buf;
		int n;

		if (!w) {
			remote_close(c, "out of memory");
			return;
		}
		n = BIO_read(c->wbio, w->bytes, (int)pending);
		if (n <= 0) {
			free(w);
			return;
		}
		w->req.data = w;
		buf = uv_buf_init(w->bytes, (unsigned)n);
		if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written)) {
			free(w);
			remote_close(c, "write failed");
			return;
		}
	}
}

static void send_reply(struct gp_remote *c, Gp__AdminReply *rep)
{
	if (c->closing)
		return;
	/* A peer that asks and never reads its answers would have them pile up here. */
	if (c->tcp.write_queue_size > WRITE_QUEUE_MAX) {
		remote_close(c, "it does not read its answers");
		return;
	}
	size_t mlen = protobuf_c_message_get_packed_size(&rep->base);
	struct gp_frame_hdr h = {.type = GP_MSG_ADMIN_REPLY};
	uint8_t *buf;

	if (mlen > GP_FRAME_MSG_MAX) {
		Gp__AdminReply big = GP__ADMIN_REPLY__INIT;

		big.status = GP_ETOOBIG;
		big.message = "the answer is larger than one message holds";
		send_reply(c, &big);
		return;
	}
	h.msg_len = (uint32_t)mlen;
	buf = malloc(GP_FRAME_HDR_SIZE + mlen);
	if (!buf) {
		remote_close(c, "out of memory");
		return;
	}
	gp_frame_hdr_encode(&h, buf);
	protobuf_c_message_pack(&rep->base, buf + GP_FRAME_HDR_SIZE);
	/* A memory BIO takes all of it: SSL_write completes at once. */
	if (SSL_write(c->ssl, buf, (int)(GP_FRAME_HDR_SIZE + mlen)) <= 0)
		remote_close(c, "TLS write failed");
	free(buf);
	flush_out(c);
}

/* ---- who is asking ----------------------------------------------------------------- */

static bool from_admin_ca(struct gp_remote *c)
{
	STACK_OF(X509) *roots = c->d->remote_roots;
	STACK_OF(X509) *chain = SSL_get0_verified_chain(c->ssl);
	X509 *top;

	if (!roots || !chain || sk_X509_num(chain) < 1)
		return false;
	top = sk_X509_value(chain, sk_X509_num(chain) - 1);
	for (int i = 0; i < sk_X509_num(roots); i++)
		if (X509_cmp(top, sk_X509_value(roots, i)) == 0)
			return true;
	return false;
}

/* After the handshake: the role and the name. false: the connection is to be closed. */
static bool identify(struct gp_remote *c)
{
	struct gp_daemon *d = c->d;
	X509 *cert = SSL_get0_peer_certificate(c->ssl);
	enum gp_admin_role named;
	bool admin_ca;
	char why[256];

	if (!cert) {
		c->role = GP_ROLE_NONE;
		return true;
	}
	if (SSL_get_verify_result(c->ssl) != X509_V_OK)
		return false; /* the handshake fails first; checked all the same */
	if (gp_cert_name(cert, (enum gp_name_from)d->cfg->tenant_from, c->tenant, sizeof(c->tenant),
			 why, sizeof(why))) {
		gp_log_warnx("admin endpoint: %s: certificate refused: %s", c->addr, why);
		return false;
	}
	gp_escape(c->name, sizeof(c->name), c->tenant, NULL);
	admin_ca = from_admin_ca(c);
	/* With admin_ca, a name makes an admin only of a certificate admin_ca issued: a tenant
	 * may not choose a name that an admin_name line grants. */
	named = admin_ca || !d->cfg->admin_ca ? gp_config_admin_role(d->cfg, c->tenant)
					      : GP_ROLE_NONE;
	if (named != GP_ROLE_NONE)
		c->role = named;
	else if (admin_ca)
		c->role = d->cfg->admin_ca_role;
	else
		c->role = GP_ROLE_TENANT;
	gp_log_info("admin endpoint: %s: %s, %s", c->addr, c->name[0] ? c->name : "(no name)",
		    gp_admin_role_name(c->role));
	return true;
}

/* ---- answering --------------------------------------------------------------------- */

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct gp_remote *c = req->data;

	if (status == UV_ECANCELED || c->closing)
		return; /* closed meanwhile; c is freed in on_closed, after this */
	remote_close(c, NULL);
}

/* Stops reading, sends what is queued and TLS's close_notify, then closes. */
static void end_after_writes(struct gp_remote *c)
{
	if (c->closing || c->ending)
		return;
	c->ending = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	SSL_shutdown(c->ssl);
	flush_out(c);
	c->shutdown.data = c;
	if (!c->closing && uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown))
		remote_close(c, NULL);
}

/* Answers a refused request. Only the connection's first refusal is logged; a peer that is
 * not an admin is closed after it, and none extends the idle deadline. */
static void refuse(struct gp_remote *c, const char *msg)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;

	if (c->refused++ == 0)
		gp_log_warnx("admin endpoint: %s: refused: %s", c->addr, msg);
	rep.status = -EACCES;
	rep.message = (char *)msg;
	send_reply(c, &rep);
	if (!c->admin)
		end_after_writes(c);
}

static void extend_idle(struct gp_remote *c)
{
	c->deadline = uv_now(c->d->loop) + IDLE_S * 1000ull;
}

static void on_usage(void *arg, Gp__AdminReply *rep)
{
	struct gp_remote *c = arg;

	c->querying = false;
	if (c->closed) {
		remote_free(c);
		return;
	}
	if (c->closing)
		return;
	rep->role = (char *)gp_admin_role_name(c->role);
	send_reply(c, rep);
	process(c); /* requests that came meanwhile */
	if (!c->closing && !c->ending && !c->querying &&
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read))
		remote_close(c, "cannot read");
}

static void answer_quote(struct gp_remote *c, const Gp__AdminRequest *req)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	Gp__QuoteQuery none = GP__QUOTE_QUERY__INIT;
	const Gp__QuoteQuery *q = req->quote ? req->quote : &none;
	Gp__Quote quote = GP__QUOTE__INIT;
	const char *tenant = NULL;
	char reason[256] = "";

	if (q->token && q->token[0])
		tenant = gp_config_token_tenant(c->d->cfg, q->token);
	if (!tenant && c->role != GP_ROLE_NONE && c->tenant[0])
		tenant = c->tenant;
	if (!tenant) {
		refuse(c, q->token && q->token[0] ? "quote: the token names no tenant"
						  : "quote: a certificate or a token is needed");
		return;
	}
	extend_idle(c);
	gp__quote(c->d, tenant, q, &quote, reason, sizeof(reason));
	rep.quote = &quote;
	rep.host = c->d->hostname;
	rep.listen = c->d->listen_addr;
	rep.role = (char *)gp_admin_role_name(c->role);
	send_reply(c, &rep);
}

static void answer(struct gp_remote *c, const Gp__AdminRequest *req)
{
	Gp__AdminReply rep = GP__ADMIN_REPLY__INIT;
	char msg[512] = "", cmd[64];
	bool built;

	gp_escape(cmd, sizeof(cmd), req->command, NULL);
	if (strcmp(req->command, "quote") == 0) {
		answer_quote(c, req);
		return;
	}
	if (c->role < GP_ROLE_READ_ONLY ||
	    (c->role < GP_ROLE_READ_WRITE && gp__admin_writes(req->command))) {
		snprintf(msg, sizeof(msg), "%s: not allowed for %s (%s)", cmd,
			 c->name[0] ? c->name : "a client without a certificate",
			 c->role == GP_ROLE_READ_ONLY ? "read-only"
			 : c->role == GP_ROLE_TENANT  ? "a tenant: quotes only"
						      : "quotes with a token only");
		refuse(c, msg);
		return;
	}
	extend_idle(c);
	if (strcmp(req->command, "usage") == 0) {
		/* Nothing more is read meanwhile (on_usage reads on), so what a peer sends
		 * while it waits stays in the kernel's buffers, not ours. */
		c->querying = true;
		uv_read_stop((uv_stream_t *)&c->tcp);
		gp__acct_usage(c->d, req->usage, on_usage, c);
		return;
	}
	if (gp__admin_writes(req->command)) {
		char arg[64] = "";

		if (req->n_arg)
			gp_escape(arg, sizeof(arg), req->arg[0], NULL);
		gp_log_info("admin endpoint: %s %s: %s%s%s", c->addr, c->name, cmd,
			    arg[0] ? " " : "", arg);
	}
	built = gp__admin_answer(c->d, req, &rep, msg, sizeof(msg));
	rep.host = c->d->hostname;
	rep.admin_listen = c->d->remote_addr;
	rep.role = (char *)gp_admin_role_name(c->role);
	send_reply(c, &rep);
	if (built)
		gp__status_free(&rep);
}

/* Decodes and answers whole frames, until one is answered later. */
static void process(struct gp_remote *c)
{
	struct gp_frame f;
	int r = 0;

	while (!c->closing && !c->ending && !c->querying &&
	       (r = gp_frame_decoder_next(&c->dec, &f)) == 1) {
		Gp__AdminRequest *req;

		if (f.hdr.type != GP_MSG_ADMIN_REQUEST ||
		    !(req = (Gp__AdminRequest *)gp_msg_unpack(f.hdr.type, f.msg, f.hdr.msg_len))) {
			r = GP_ETYPE;
			break;
		}
		answer(c, req);
		protobuf_c_message_free_unpacked(&req->base, NULL);
	}
	if (r < 0 && !c->closing)
		remote_close(c, gp_strerror(r));
}

/* ---- reading ----------------------------------------------------------------------- */

static void tls_failed(struct gp_remote *c, const char *what)
{
	char why[256], esc[300];
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "the peer closed the connection");
	ERR_clear_error();
	gp_escape(esc, sizeof(esc), why, NULL);
	flush_out(c); /* an alert, if TLS has one to send */
	gp_log_warnx("admin endpoint: %s: %s: %s", c->addr, what, esc);
	remote_close(c, NULL);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char slab[READ_CHUNK];

	*buf = uv_buf_init(slab, sizeof(slab));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct gp_remote *c = stream->data;
	char plain[READ_CHUNK];
	int n = 0;

	if (c->closing || c->ending)
		return;
	if (nread < 0) {
		remote_close(c, c->handshaken ? NULL : "closed during the handshake");
		return;
	}
	if (nread == 0)
		return;
	if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
		remote_close(c, "out of memory");
		return;
	}
	if (!c->handshaken) {
		int r = SSL_do_handshake(c->ssl);

		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);

			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
				flush_out(c);
				return;
			}
			tls_failed(c, "TLS handshake");
			return;
		}
		flush_out(c);
		c->handshaken = true;
		if (!identify(c)) {
			remote_close(c, "refused");
			return;
		}
		c->admin = c->role >= GP_ROLE_READ_ONLY;
		if (c->reserved && !c->admin) {
			remote_close(c, "the slots for connections that are not admins are taken");
			return;
		}
		c->reserved = false;
		extend_idle(c);
	}
	while (!c->closing && (n = SSL_read(c->ssl, plain, sizeof(plain))) > 0) {
		if (gp_frame_decoder_feed(&c->dec, plain, (size_t)n)) {
			remote_close(c, "a frame past the size limit");
			return;
		}
	}
	if (c->closing)
		return;
	if (n <= 0) {
		int e = SSL_get_error(c->ssl, n);

		if (e == SSL_ERROR_ZERO_RETURN) {
			remote_close(c, NULL);
			return;
		}
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			tls_failed(c, "TLS");
			return;
		}
	}
	flush_out(c); /* session tickets and key updates */
	process(c);
}

/* ---- accepting ---------------------------------------------------------------------- */

static void on_refused_closed(uv_handle_t *h)
{
	free(h);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct gp_daemon *d = server->data;
	struct sockaddr_storage ss;
	int sslen = sizeof(ss);
	unsigned from_source = 0, others = 0;
	unsigned share = d->cfg->admin_max_connections / 2;
	struct gp_remote *c, *give_way = NULL;
	bool reserved;
	char *colon;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		uv_tcp_t *t = malloc(sizeof(*t));

		/* Accept and close: a connection left in the backlog would be accepted again. */
		if (t && !uv_tcp_init(d->loop, t) && !uv_accept(server, (uv_stream_t *)t))
			uv_close((uv_handle_t *)t, on_refused_closed);
		else
			free(t);
		return;
	}
	c->d = d;
	uv_tcp_init(d->loop, &c->tcp);
	c->tcp.data = c;
	c->closing = true; /* not in the list yet */
	if (uv_accept(server, (uv_stream_t *)&c->tcp)) {
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	memset(&ss, 0, sizeof(ss));
	uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sslen);
	gp__format_addr(&ss, c->addr, sizeof(c->addr));
	snprintf(c->source, sizeof(c->source), "%s", c->addr);
	colon = strrchr(c->source, ':');
	if (colon)
		*colon = 0;
	/* The list is newest first: the last reserved one in its handshake is the oldest. */
	for (struct gp_remote *o = d->remotes; o; o = o->next) {
		from_source += strcmp(o->source, c->source) == 0;
		others += !o->admin && !o->reserved;
		if (o->reserved && !o->handshaken && !o->closing)
			give_way = o;
	}
	if (share == 0)
		share = 1;
	reserved = others >= share;
	if (from_source >= d->cfg->admin_max_per_address ||
	    (d->nremotes >= d->cfg->admin_max_connections && !give_way)) {
		gp_log_warnx("admin endpoint: %s: closed: %s", c->addr,
			     from_source >= d->cfg->admin_max_per_address
				     ? "admin_max_per_address connections from there already"
				     : "admin_max_connections reached");
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	if (d->nremotes >= d->cfg->admin_max_connections)
		remote_close(give_way, "gives way: every slot is taken and it is not an admin yet");
	gp_frame_decoder_init(&c->dec, MAX_FRAME);
	c->ssl = SSL_new(d->remote_ctx);
	c->rbio = BIO_new(BIO_s_mem());
	c->wbio = BIO_new(BIO_s_mem());
	if (!c->ssl || !c->rbio || !c->wbio) {
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		c->rbio = c->wbio = NULL;
		uv_close((uv_handle_t *)&c->tcp, on_closed);
		return;
	}
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	SSL_set_accept_state(c->ssl);
	c->closing = false;
	c->reserved = reserved;
	c->next = d->remotes;
	d->remotes = c;
	d->nremotes++;
	c->deadline = uv_now(d->loop) +
		      (d->cfg->handshake_timeout ? d->cfg->handshake_timeout : 15) * 1000ull;
	uv_tcp_nodelay(&c->tcp, 1);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read))
		remote_close(c, "cannot read");
}

void gp__remote_tick(struct gp_daemon *d)
{
	uint64_t now = uv_now(d->loop);
	struct gp_remote *c = d->remotes, *next;

	for (; c; c = next) {
		next = c->next;
		if (!c->querying && now >= c->deadline)
			remote_close(c, c->handshaken ? "idle"
						      : "no TLS handshake in handshake_timeout");
	}
}

static STACK_OF(X509) * load_roots(const char *path, char *err, size_t len)
{
	STACK_OF(X509) *roots = sk_X509_new_null();
	FILE *f = fopen(path, "re");
	X509 *x;

	if (!roots || !f) {
		snprintf(err, len, "admin_ca %s: %s", path, f ? "out of memory" : strerror(errno));
		if (f)
			fclose(f);
		sk_X509_free(roots);
		return NULL;
	}
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)))
		sk_X509_push(roots, x);
	ERR_clear_error();
	fclose(f);
	if (sk_X509_num(roots) == 0) {
		snprintf(err, len, "admin_ca %s: no certificate in it", path);
		sk_X509_free(roots);
		return NULL;
	}
	return roots;
}

int gp__remote_listen(struct gp_daemon *d)
{
	const struct gp_config *cfg = d->cfg;
	char err[512];
	SSL_CTX *ctx;
	int r;

	if (!cfg->admin_listen)
		return 0;
	ctx = gp_tls_server_ctx_new(cfg->tls_cert, cfg->tls_key, NULL, err, sizeof(err));
	if (!ctx) {
		gp_log_error("admin_listen: %s", err);
		return GP_ECONFIG;
	}
	if (cfg->admin_ca) {
		d->remote_roots = load_roots(cfg->admin_ca, err, sizeof(err));
		if (!d->remote_roots ||
		    SSL_CTX_load_verify_locations(ctx, cfg->admin_ca, NULL) != 1) {
			gp_log_error("admin_listen: %s",
				     d->remote_roots ? "admin_ca does not load" : err);
			goto out_free;
		}
	}
	if (cfg->tls_ca && SSL_CTX_load_verify_locations(ctx, cfg->tls_ca, NULL) != 1) {
		gp_log_error("admin_listen: tls_ca %s does not load", cfg->tls_ca);
		goto out_free;
	}
	/* A certificate, when sent, must verify; none is allowed for token quotes. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	d->remote_ctx = ctx;
	r = gp__tcp_listen(d, &d->remote, cfg->admin_listen, on_connection, d->remote_addr,
			   sizeof(d->remote_addr));
	if (r) {
		d->remote_ctx = NULL;
		goto out_free;
	}
	d->remote_open = true;
	gp_log_info("admin endpoint on %s (TLS)", d->remote_addr);
	return 0;

out_free:
	SSL_CTX_free(ctx);
	sk_X509_pop_free(d->remote_roots, X509_free);
	d->remote_roots = NULL;
	return GP_ECONFIG;
}

void gp__remote_close(struct gp_daemon *d)
{
	while (d->remotes)
		remote_close(d->remotes, NULL);
	if (d->remote_open)
		uv_close((uv_handle_t *)&d->remote, NULL);
	d->remote_open = false;
	SSL_CTX_free(d->remote_ctx); /* connections still closing hold references of their own */
	d->remote_ctx = NULL;
	sk_X509_pop_free(d->remote_roots, X509_free);
	d->remote_roots = NULL;
}
