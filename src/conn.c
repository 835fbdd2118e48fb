/* conn.c -- blocking framed I/O over TLS 1.3 or a plain socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "conn.h"
#include "error.h"
#include "escape.h"

#define WBUF_FLUSH_AT (64u * 1024)
#define RBUF_SIZE (64u * 1024)
/* What the reader's blocking recv takes at once over TLS in concurrent mode: a whole record
 * (16 KiB and its overhead), and no more, so that a stream's bytes mostly go from the socket
 * straight into OpenSSL's buffer and only the first after each wait through this one. */
#define RAW_SIZE (18u * 1024)

static void tls_err(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[200];

	if (e) {
		ERR_error_string_n(e, buf, sizeof(buf));
		snprintf(err, errlen, "%s: %s", what, buf);
	} else {
		snprintf(err, errlen, "%s", what);
	}
	ERR_clear_error();
}

static SSL_CTX *ctx_new(const SSL_METHOD *m, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(m);

	if (!ctx) {
		tls_err(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
	return ctx;
}

static int load_pair(SSL_CTX *ctx, const char *cert, const char *key, char *err, size_t errlen)
{
	char what[512];

	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		snprintf(what, sizeof(what), "certificate %s", cert);
		tls_err(err, errlen, what);
		return GP_ETLS;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		/* OpenSSL checks the pair as it takes the key: say so in words. */
		if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
			snprintf(what, sizeof(what), "key %s does not match certificate %s", key,
				 cert);
		else
			snprintf(what, sizeof(what), "private key %s", key);
		tls_err(err, errlen, what);
		return GP_ETLS;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(what, sizeof(what), "key %s does not match certificate %s", key, cert);
		tls_err(err, errlen, what);
		return GP_ETLS;
	}
	return 0;
}

/* ---- the server's private key ------------------------------------------------------
 *
 * A server context does not hold its private key where connections would copy it (each SSL
 * keeps the context's certificates and key for its whole life): the context keeps it aside,
 * in its ex data, and a cert_cb hands it to a connection's handshake only. Once the handshake
 * is done gp_conn_tls_forget_key drops both, and the key is freed (OpenSSL clears a private
 * key's numbers as it frees them). TLS 1.3 only: nothing after the handshake signs again. The
 * file is read with read(2), not stdio, into a buffer that is cleansed, so no copy of its text
 * stays in freed memory.
 */
#define KEY_FILE_MAX (1u << 20)

static int key_index = -1;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void key_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	EVP_PKEY_free(ptr);
}

static void key_index_init(void)
{
	key_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, key_ex_free);
}

static int give_key(SSL *ssl, void *arg)
{
	EVP_PKEY *pkey = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), key_index);

	return pkey && SSL_use_PrivateKey(ssl, pkey) == 1;
}

static EVP_PKEY *key_load(const char *path, char *err, size_t errlen)
{
	EVP_PKEY *pkey = NULL;
	char what[512];
	size_t len = 0;
	ssize_t n;
	char *buf;
	BIO *bio;
	int fd;

	snprintf(what, sizeof(what), "private key %s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", what, strerror(errno));
		return NULL;
	}
	buf = OPENSSL_malloc(KEY_FILE_MAX);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", what);
		goto out_close;
	}
	while (len < KEY_FILE_MAX && (n = read(fd, buf + len, KEY_FILE_MAX - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "%s: %s", what, strerror(errno));
			goto out_free;
		}
		len += (size_t)n;
	}
	bio = BIO_new_mem_buf(buf, (int)len);
	if (bio)
		pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!pkey)
		tls_err(err, errlen, what);
out_free:
	OPENSSL_clear_free(buf, KEY_FILE_MAX);
out_close:
	close(fd);
	return pkey;
}

void gp_conn_tls_forget_key(struct gp_conn *c)
{
	SSL_CTX *ctx;

	if (!c || !c->ssl || key_index < 0)
		return;
	SSL_certs_clear(c->ssl);
	ctx = SSL_get_SSL_CTX(c->ssl);
	EVP_PKEY_free(SSL_CTX_get_ex_data(ctx, key_index));
	SSL_CTX_set_ex_data(ctx, key_index, NULL);
}

/*
 * What OpenSSL does once per process, the first time: reading its configuration, loading
 * its provider and fetching the algorithms a context and the PEM decoders need (measured
 * here: ~5 ms of CPU for the first SSL_CTX_new, ~2 more for the first certificate and key
 * decoded). A warm worker pays it before it has a client (worker.c), so that a session's
 * handshake does not wait for it. The certificate (public) is decoded and dropped; the key
 * decoders are exercised on a key made for that and freed, never on the pool's key.
 */
void gp_tls_warm_up(const char *cert)
{
	SSL_CTX *ctx;
	EVP_PKEY *k, *back = NULL;
	BIO *bio;

	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL);
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx && cert && *cert)
		SSL_CTX_use_certificate_chain_file(ctx, cert);
	SSL_CTX_free(ctx);
	k = EVP_EC_gen("P-256");
	bio = k ? BIO_new(BIO_s_mem()) : NULL;
	if (bio && PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) == 1)
		back = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio); /* a key made for this and thrown away: nothing secret */
	EVP_PKEY_free(back);
	EVP_PKEY_free(k);
	ERR_clear_error();
}

SSL_CTX *gp_tls_server_ctx_new(const char *cert, const char *key, const char *ca, char *err,
			       size_t errlen)
{
	SSL_CTX *ctx = ctx_new(TLS_server_method(), err, errlen);
	EVP_PKEY *pkey;
	char what[512];

	if (!ctx)
		return NULL;
	if (!cert || !key) {
		snprintf(err, errlen, "a server needs tls_cert and tls_key");
		goto out_free;
	}
	pthread_once(&key_once, key_index_init);
	if (key_index < 0) {
		tls_err(err, errlen, "SSL_CTX_get_ex_new_index");
		goto out_free;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		snprintf(what, sizeof(what), "certificate %s", cert);
		tls_err(err, errlen, what);
		goto out_free;
	}
	pkey = key_load(key, err, errlen);
	if (!pkey)
		goto out_free;
	if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), pkey) != 1) {
		snprintf(what, sizeof(what), "key %s does not match certificate %s", key, cert);
		tls_err(err, errlen, what);
		EVP_PKEY_free(pkey);
		goto out_free;
	}
	SSL_CTX_set_ex_data(ctx, key_index, pkey); /* freed with ctx, or when forgotten */
	SSL_CTX_set_cert_cb(ctx, give_key, NULL);
	if (ca && *ca) {
		if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
			snprintf(what, sizeof(what), "CA file %s", ca);
			tls_err(err, errlen, what);
			goto out_free;
		}
		/* Clients must present a certificate the CA signed. */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;

out_free:
	SSL_CTX_free(ctx);
	return NULL;
}

SSL_CTX *gp_tls_client_ctx_new(const char *ca, const char *cert, const char *key, char *err,
			       size_t errlen)
{
	SSL_CTX *ctx = ctx_new(TLS_client_method(), err, errlen);
	char what[512];

	if (!ctx)
		return NULL;
	if (ca && *ca) {
		if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
			snprintf(what, sizeof(what), "CA file %s", ca);
			tls_err(err, errlen, what);
			goto out_free;
		}
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		tls_err(err, errlen, "system CA store");
		goto out_free;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (cert && *cert) {
		if (load_pair(ctx, cert, key && *key ? key : cert, err, errlen))
			goto out_free;
	}
	return ctx;

out_free:
	SSL_CTX_free(ctx);
	return NULL;
}

struct gp_conn *gp_conn_new(int fd)
{
	struct gp_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = fd;
	c->rcap = RBUF_SIZE;
	c->rbuf = malloc(c->rcap);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	return c;
}

void gp_conn_free(struct gp_conn *c)
{
	if (!c)
		return;
	if (c->ssl)
		SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	free(c->wbuf);
	free(c->rbuf);
	free(c->raw);
	free(c->msg);
	if (c->concurrent) {
		pthread_mutex_destroy(&c->io);
		pthread_mutex_destroy(&c->send);
	}
	free(c);
}

int64_t gp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Before one blocking read or write: the socket's timeout for it (opt, SO_RCVTIMEO or
 * SO_SNDTIMEO) becomes what is left of c's deadline, so that the wait ends with it however
 * the peer paces its bytes. -ETIMEDOUT once the deadline has passed. */
static int arm_deadline(struct gp_conn *c, int opt)
{
	struct timeval tv;
	int64_t left;

	if (!c->deadline_us || c->concurrent)
		return 0;
	left = c->deadline_us - gp_now_us();
	if (left <= 0)
		return -ETIMEDOUT;
	tv.tv_sec = (time_t)(left / 1000000);
	tv.tv_usec = (suseconds_t)(left % 1000000); /* not both 0: that would be no timeout */
	setsockopt(c->fd, SOL_SOCKET, opt, &tv, sizeof(tv));
	return 0;
}

int gp_conn_concurrent(struct gp_conn *c)
{
	struct timeval none = {0, 0}, quarter = {0, 250000};
	int fl = gp_conn_flush(c) ? -1 : fcntl(c->fd, F_GETFL);

	/* Blocking, for the reader's recv (read_some_concurrent); writers pass MSG_DONTWAIT. */
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return -errno;
	if (c->ssl && !c->raw && !(c->raw = malloc(RAW_SIZE)))
		return -ENOMEM;
	if (!c->ssl) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		c->wait_in_poll = getsockname(c->fd, (struct sockaddr *)&ss, &sl) == 0 &&
				  ss.ss_family == AF_UNIX;
	}
	/* The handshake's socket timeouts no longer apply. A reader that can be interrupted
	 * wakes every quarter second to look at its flag, as its poll() did. */
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, c->interrupt ? &quarter : &none, sizeof(none));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	pthread_mutex_init(&c->io, NULL);
	pthread_mutex_init(&c->send, NULL);
	c->concurrent = true;
	return 0;
}

void gp_conn_send_lock(struct gp_conn *c)
{
	if (c->concurrent)
		pthread_mutex_lock(&c->send);
}

void gp_conn_send_unlock(struct gp_conn *c)
{
	if (c->concurrent)
		pthread_mutex_unlock(&c->send);
}

void gp_conn_set_err(struct gp_conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->concurrent)
		pthread_mutex_lock(&c->io);
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	if (c->concurrent)
		pthread_mutex_unlock(&c->io);
}

const char *gp_conn_error(struct gp_conn *c, char *buf, size_t len)
{
	if (c->concurrent)
		pthread_mutex_lock(&c->io);
	snprintf(buf, len, "%s", c->err);
	if (c->concurrent)
		pthread_mutex_unlock(&c->io);
	return buf;
}

static int handshake_done(struct gp_conn *c, int rc, const char *what)
{
	int e;

	if (rc == 1)
		return 0;
	e = SSL_get_error(c->ssl, rc);
	if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		/* No TLS error: the socket failed, timed out or was closed by the peer. */
		snprintf(c->err, sizeof(c->err), "%s: %s", what,
			 errno == EAGAIN || errno == EWOULDBLOCK ? "timed out"
			 : errno && errno != EPIPE		 ? strerror(errno)
								 : "connection closed by the peer");
		ERR_clear_error();
	} else if (SSL_get_verify_result(c->ssl) != X509_V_OK) {
		snprintf(c->err, sizeof(c->err), "%s: certificate verification failed: %s", what,
			 X509_verify_cert_error_string(SSL_get_verify_result(c->ssl)));
		ERR_clear_error();
	} else {
		tls_err(c->err, sizeof(c->err), what);
	}
	return GP_ETLS;
}

/* ---- a socket BIO that never raises SIGPIPE ---------------------------------------
 * The interposer lives in someone else's process and must not change its signal
 * dispositions, and OpenSSL writes on its own (alerts during a handshake, close_notify):
 * so TLS goes through this BIO, which sends with MSG_NOSIGNAL. Blocking sockets; EINTR and
 * receive timeouts surface as retries, which SSL reports as WANT_READ/WANT_WRITE. The BIO's
 * data is the connection, whose deadline (arm_deadline) bounds each wait: a deadline that
 * has passed reads as a timeout (EAGAIN) without waiting. */

static int nosig_write(BIO *b, const char *data, int len)
{
	struct gp_conn *c = BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	if (arm_deadline(c, SO_SNDTIMEO)) {
		errno = EAGAIN;
		BIO_set_retry_write(b);
		return -1;
	}
	n = send(c->fd, data, (size_t)len, MSG_NOSIGNAL | (c->concurrent ? MSG_DONTWAIT : 0));
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)n;
}

static int nosig_read(BIO *b, char *data, int len)
{
	struct gp_conn *c = BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	if (arm_deadline(c, SO_RCVTIMEO)) {
		errno = EAGAIN;
		BIO_set_retry_read(b);
		return -1;
	}
	if (c->concurrent && c->raw_len > c->raw_pos) {
		/* What the reader's recv took (read_some_concurrent), before anything after it. */
		n = (ssize_t)(c->raw_len - c->raw_pos < (size_t)len ? c->raw_len - c->raw_pos
								    : (size_t)len);
		memcpy(data, c->raw + c->raw_pos, (size_t)n);
		c->raw_pos += (size_t)n;
		if (c->raw_pos == c->raw_len)
			c->raw_pos = c->raw_len = 0;
		return (int)n;
	}
	if (c->concurrent && c->raw_eof)
		return 0; /* as the socket's recv said, for OpenSSL to tell */
	if (c->concurrent && c->raw_filling) {
		/* The reader is in recv: bytes read here could overtake the ones it gets. */
		errno = EAGAIN;
		BIO_set_retry_read(b);
		return -1;
	}
	n = recv(c->fd, data, (size_t)len, c->concurrent ? MSG_DONTWAIT : 0);
	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	/* Less than OpenSSL asked for (it asks for its whole buffer, read-ahead): the socket
	 * was emptied, so the next read most likely has to wait (read_some_concurrent). */
	c->drained = n < len;
	return (int)n;
}

static int nosig_puts(BIO *b, const char *str)
{
	return nosig_write(b, str, (int)strlen(str));
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int nosig_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static BIO_METHOD *nosig_method;
static pthread_once_t nosig_once = PTHREAD_ONCE_INIT;

static void nosig_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gpupool socket");

	if (!m)
		return;
	BIO_meth_set_write(m, nosig_write);
	BIO_meth_set_read(m, nosig_read);
	BIO_meth_set_puts(m, nosig_puts);
	BIO_meth_set_ctrl(m, nosig_ctrl);
	BIO_meth_set_create(m, nosig_create);
	nosig_method = m;
}

/* A new SSL on c's socket through the BIO above. */
static int new_ssl(struct gp_conn *c, SSL_CTX *ctx)
{
	BIO *bio;

	pthread_once(&nosig_once, nosig_init);
	c->ssl = SSL_new(ctx);
	bio = nosig_method ? BIO_new(nosig_method) : NULL;
	if (!c->ssl || !bio) {
		BIO_free(bio);
		tls_err(c->err, sizeof(c->err), "SSL_new");
		return GP_ETLS;
	}
	BIO_set_data(bio, c);
	SSL_set_bio(c->ssl, bio, bio);
	/* Read-ahead: OpenSSL reads as much as the socket has into its buffer, so a record
	 * costs one recv, not two (header, then body). What it holds the socket no longer
	 * shows: anyone who polls the socket asks gp_conn_pending() first. */
	SSL_set_read_ahead(c->ssl, 1);
	return 0;
}

int gp_conn_tls_accept(struct gp_conn *c, SSL_CTX *ctx)
{
	if (new_ssl(c, ctx))
		return GP_ETLS;
	errno = 0;
	return handshake_done(c, SSL_accept(c->ssl), "TLS accept");
}

int gp_conn_tls_connect(struct gp_conn *c, SSL_CTX *ctx, const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (new_ssl(c, ctx))
		return GP_ETLS;
	if (host && *host) {
		X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);

		if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1) {
			X509_VERIFY_PARAM_set1_ip_asc(vp, host);
		} else {
			SSL_set_tlsext_host_name(c->ssl, host);
			SSL_set1_host(c->ssl, host);
		}
	}
	errno = 0;
	return handshake_done(c, SSL_connect(c->ssl), "TLS connect");
}

static const char *const name_from_what[] = {
	[GP_NAME_FROM_CN] = "subject commonName",
	[GP_NAME_FROM_SAN_URI] = "subjectAltName URI",
	[GP_NAME_FROM_SAN_DNS] = "subjectAltName DNS name",
};

/* Copies one decoded name into out after checking it can be a tenant's. */
static int take_name(const unsigned char *p, int len, enum gp_name_from from, char *out,
		     size_t outlen, char *why, size_t whylen)
{
	int i;

	if (len <= 0) {
		snprintf(why, whylen, "the certificate's %s is empty", name_from_what[from]);
		return GP_EREFUSED;
	}
	for (i = 0; i < len;) {
		size_t k;

		if (p[i] == '\0') {
			snprintf(why, whylen, "the certificate's %s has an embedded NUL",
				 name_from_what[from]);
			return GP_EREFUSED;
		}
		if (p[i] < 0x80 && (p[i] < 0x20 || p[i] == 0x7f)) {
			snprintf(why, whylen, "the certificate's %s has a control character",
				 name_from_what[from]);
			return GP_EREFUSED;
		}
		k = p[i] < 0x80 ? 1 : gp_utf8_char(p + i, (size_t)(len - i));
		if (k == 0) {
			snprintf(why, whylen,
				 "the certificate's %s is not well-formed UTF-8 of printable "
				 "characters",
				 name_from_what[from]);
			return GP_EREFUSED;
		}
		i += (int)k;
	}
	if ((size_t)len >= outlen) {
		snprintf(why, whylen,
			 "the certificate's %s is %d bytes; a tenant name has at most %zu",
			 name_from_what[from], len, outlen - 1);
		return GP_EREFUSED;
	}
	memcpy(out, p, (size_t)len);
	out[len] = '\0';
	return 0;
}

static int cert_cn(X509 *cert, char *out, size_t outlen, char *why, size_t whylen)
{
	X509_NAME *subj = X509_get_subject_name(cert);
	ASN1_STRING *s;
	unsigned char *utf8 = NULL;
	int idx, len, ret;

	idx = subj ? X509_NAME_get_index_by_NID(subj, NID_commonName, -1) : -1;
	if (idx < 0)
		return 0;
	if (X509_NAME_get_index_by_NID(subj, NID_commonName, idx) >= 0) {
		snprintf(why, whylen, "the certificate's subject has more than one commonName");
		return GP_EREFUSED;
	}
	s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, idx));
	len = s ? ASN1_STRING_to_UTF8(&utf8, s) : -1;
	if (len < 0) {
		snprintf(why, whylen, "the certificate's commonName does not decode as UTF-8 text");
		return GP_EREFUSED;
	}
	ret = take_name(utf8, len, GP_NAME_FROM_CN, out, outlen, why, whylen);
	OPENSSL_free(utf8);
	return ret;
}

static int cert_san(X509 *cert, enum gp_name_from from, char *out, size_t outlen, char *why,
		    size_t whylen)
{
	int type = from == GP_NAME_FROM_SAN_URI ? GEN_URI : GEN_DNS;
	GENERAL_NAMES *names;
	const ASN1_IA5STRING *found = NULL;
	int crit = -1, i, ret = 0;

	names = X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, NULL);
	if (!names) {
		if (crit == -2) {
			snprintf(why, whylen, "the certificate has more than one subjectAltName");
			return GP_EREFUSED;
		}
		if (crit >= 0) {
			snprintf(why, whylen, "the certificate's subjectAltName does not decode");
			return GP_EREFUSED;
		}
		return 0;
	}
	for (i = 0; i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);

		if (g->type != type)
			continue;
		if (found) {
			snprintf(why, whylen, "the certificate has more than one %s",
				 name_from_what[from]);
			ret = GP_EREFUSED;
			goto out_free;
		}
		found = type == GEN_URI ? g->d.uniformResourceIdentifier : g->d.dNSName;
	}
	if (found)
		ret = take_name(ASN1_STRING_get0_data(found), ASN1_STRING_length(found), from, out,
				outlen, why, whylen);
out_free:
	GENERAL_NAMES_free(names);
	return ret;
}

int gp_cert_name(X509 *cert, enum gp_name_from from, char *out, size_t outlen, char *why,
		 size_t whylen)
{
	int ret;

	if (!out || outlen == 0)
		return GP_EREFUSED;
	out[0] = '\0';
	if (why && whylen)
		why[0] = '\0';
	if (!cert)
		return 0;
	if (from == GP_NAME_FROM_CN)
		ret = cert_cn(cert, out, outlen, why, whylen);
	else if (from == GP_NAME_FROM_SAN_URI || from == GP_NAME_FROM_SAN_DNS)
		ret = cert_san(cert, from, out, outlen, why, whylen);
	else {
		snprintf(why, whylen, "no such certificate name source (%d)", (int)from);
		ret = GP_EREFUSED;
	}
	if (ret)
		out[0] = '\0';
	return ret;
}

int gp_conn_peer_name(struct gp_conn *c, enum gp_name_from from, char *out, size_t outlen,
		      char *why, size_t whylen)
{
	X509 *peer;
	int ret;

	if (outlen)
		out[0] = '\0';
	if (!c->ssl)
		return 0;
	peer = SSL_get1_peer_certificate(c->ssl);
	if (!peer)
		return 0;
	ret = gp_cert_name(peer, from, out, outlen, why, whylen);
	X509_free(peer);
	return ret;
}

void gp_user_name(uid_t uid, char *out, size_t outlen)
{
	struct passwd pw, *found = NULL;
	size_t bufsize = 1024;
	char *buf = NULL;
	int e = ERANGE;

	/* Entries can be long (many groups, long fields): grow the buffer until one fits. */
	while (e == ERANGE && bufsize <= (1u << 20)) {
		char *nb = realloc(buf, bufsize);

		if (!nb)
			break;
		buf = nb;
		e = getpwuid_r(uid, &pw, buf, bufsize, &found);
		bufsize *= 4;
	}
	if (e == 0 && found)
		snprintf(out, outlen, "%s", found->pw_name);
	else
		snprintf(out, outlen, "uid:%u", (unsigned)uid);
	free(buf);
}

void gp_conn_shutdown(struct gp_conn *c)
{
	if (!c)
		return;
	gp_conn_flush(c);
	if (c->ssl)
		SSL_shutdown(c->ssl);
}

/* ---- raw I/O ---------------------------------------------------------- */

static void wait_ready(struct gp_conn *c, short events);

/* raw_write in concurrent mode: the SSL object under c->io, waits without it. */
static int write_concurrent(struct gp_conn *c, const uint8_t *p, size_t len)
{
	while (len > 0) {
		short want = POLLOUT;
		size_t n = 0;
		int ret = 0, e = 0;

		pthread_mutex_lock(&c->io);
		errno = 0;
		if (c->ssl) {
			ERR_clear_error(); /* SSL_get_error reads this thread's queue */
			if (SSL_write_ex(c->ssl, p, len, &n) != 1) {
				e = errno;
				n = 0;
				switch (SSL_get_error(c->ssl, 0)) {
				case SSL_ERROR_WANT_WRITE:
					break;
				case SSL_ERROR_WANT_READ:
					want = POLLIN;
					break;
				case SSL_ERROR_SYSCALL:
					if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK)
						break;
					snprintf(c->err, sizeof(c->err), "write: %s",
						 e ? strerror(e) : "connection closed");
					ret = e == EPIPE || e == 0 ? GP_ECLOSED : -e;
					break;
				case SSL_ERROR_ZERO_RETURN:
					snprintf(c->err, sizeof(c->err),
						 "write: connection closed");
					ret = GP_ECLOSED;
					break;
				default:
					tls_err(c->err, sizeof(c->err), "TLS write");
					ret = GP_ETLS;
				}
			}
		} else {
			ssize_t k = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

			e = errno;
			if (k > 0) {
				n = (size_t)k;
			} else if (e != EINTR && e != EAGAIN && e != EWOULDBLOCK) {
				snprintf(c->err, sizeof(c->err), "write: %s", strerror(e));
				ret = e == EPIPE ? GP_ECLOSED : -e;
			}
		}
		pthread_mutex_unlock(&c->io);
		if (ret)
			return ret;
		if (n == 0) {
			/* A TLS write that wants to read (TLS 1.3 as configured here never does:
			 * no renegotiation, no post-handshake authentication) would poll for bytes
			 * the reader's blocking recv may take first: it looks again every 10 ms
			 * rather than wait for a byte that may not come. */
			if (want == POLLIN)
				poll(&(struct pollfd){.fd = c->fd, .events = POLLIN}, 1, 10);
			else
				wait_ready(c, want);
			continue;
		}
		p += n;
		len -= n;
		c->bytes_out += (uint64_t)n;
	}
	return 0;
}

/* Writes all of buf. Neither path raises SIGPIPE (MSG_NOSIGNAL, the BIO above). */
static int raw_write(struct gp_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int ret = 0;

	if (c->concurrent)
		return write_concurrent(c, p, len);
	while (len > 0) {
		ssize_t n;

		if (c->ssl) {
			size_t w = 0;
			int r;

			errno = 0;
			ERR_clear_error(); /* SSL_get_error reads this thread's queue */
			r = SSL_write_ex(c->ssl, p, len, &w);

			if (r != 1) {
				int e = SSL_get_error(c->ssl, 0);

				if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) &&
				    (errno == EAGAIN || errno == EWOULDBLOCK)) {
					snprintf(c->err, sizeof(c->err), "write: timed out");
					ret = -ETIMEDOUT;
					break;
				}
				if ((e == SSL_ERROR_SYSCALL && errno == EINTR) ||
				    e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
					continue;
				if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
					snprintf(c->err, sizeof(c->err), "write: %s",
						 errno ? strerror(errno) : "connection closed");
					ret = errno == EPIPE || errno == 0 ? GP_ECLOSED : -errno;
				} else {
					tls_err(c->err, sizeof(c->err), "TLS write");
					ret = GP_ETLS;
				}
				break;
			}
			n = (ssize_t)w;
		} else {
			if (arm_deadline(c, SO_SNDTIMEO)) {
				n = -1;
				errno = EAGAIN; /* the deadline has passed: as a timeout */
			} else {
				n = send(c->fd, p, len, MSG_NOSIGNAL);
			}
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					snprintf(c->err, sizeof(c->err), "write: timed out");
					ret = -ETIMEDOUT;
					break;
				}
				snprintf(c->err, sizeof(c->err), "write: %s", strerror(errno));
				ret = errno == EPIPE ? GP_ECLOSED : -errno;
				break;
			}
		}
		p += n;
		len -= (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	return ret;
}

/* Waits until the socket is ready for `events`, or a quarter second when the caller can
 * be interrupted (so it notices). */
static void wait_ready(struct gp_conn *c, short events)
{
	struct pollfd pfd = {.fd = c->fd, .events = events};

	poll(&pfd, 1, c->interrupt ? 250 : -1);
}

/*
 * Concurrent mode (gp_conn_concurrent): one thread reads while others write. The SSL object
 * is used under c->io only, never while waiting. A writer that would block releases the lock
 * and polls; the reader waits in one blocking recv, without the lock: on a plain socket into
 * the caller's buffer, over TLS into c->raw, which OpenSSL then reads through the BIO
 * (nosig_read). So a message that has to be waited for costs one system call, not a poll and
 * a read. On a plain Unix socket the reader polls and then reads (c->wait_in_poll).
 *
 * The reader's wait: > 0 bytes received, 0 when none came (a signal, or the quarter-second
 * receive timeout of a connection that can be interrupted: the caller looks at its flag), or
 * a negative code with c->err set. Over TLS only with c->raw empty (OpenSSL asked for more
 * than it holds), and c->raw_filling keeps writers' reads off the socket meanwhile.
 */
static ssize_t wait_recv(struct gp_conn *c, void *buf, size_t len)
{
	bool tls = c->ssl != NULL;
	ssize_t n;
	int e;

	if (tls) {
		pthread_mutex_lock(&c->io);
		if (c->raw_len > c->raw_pos) {
			pthread_mutex_unlock(&c->io);
			return 0; /* OpenSSL has bytes to read first */
		}
		c->raw_filling = true;
		pthread_mutex_unlock(&c->io);
		buf = c->raw;
		len = RAW_SIZE;
	}
	n = recv(c->fd, buf, len, 0);
	e = errno;
	pthread_mutex_lock(&c->io);
	if (tls) {
		c->raw_filling = false;
		c->raw_pos = 0;
		c->raw_len = n > 0 ? (size_t)n : 0;
	}
	if (n > 0) {
		c->drained = (size_t)n < len;
	} else if (n == 0 && tls) {
		c->raw_eof = true; /* OpenSSL reads the end and says what it was, as before */
	} else if (n == 0) {
		snprintf(c->err, sizeof(c->err), "connection closed by peer");
		n = GP_ECLOSED;
	} else if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK) {
		n = 0;
	} else {
		snprintf(c->err, sizeof(c->err), "read: %s", strerror(e));
		n = -e;
	}
	pthread_mutex_unlock(&c->io);
	return n;
}

static ssize_t read_some_concurrent(struct gp_conn *c, void *buf, size_t len)
{
	/* The last read emptied the socket and nothing is held: the bytes wanted now (an
	 * answer to what was just sent, say) are still on their way, and a read tried first
	 * would only fail. Wait for them at once. */
	bool wait = c->drained && !gp_conn_pending(c);

	for (;;) {
		bool again = false;
		ssize_t ret = 0;
		int e = 0;

		if (wait && c->wait_in_poll) {
			wait_ready(c, POLLIN); /* bounded when c->interrupt is set */
			if (c->interrupt && *c->interrupt)
				return -EINTR;
			wait = false;
			continue;
		}
		if (wait) {
			ret = wait_recv(c, buf, len);
			if (ret < 0 || (ret > 0 && !c->ssl))
				return ret; /* on a plain socket the bytes are in buf */
			if (ret == 0 && c->interrupt && *c->interrupt)
				return -EINTR;
			wait = false;
			continue; /* OpenSSL reads what came from c->raw; or nothing came */
		}
		pthread_mutex_lock(&c->io);
		errno = 0;
		if (c->ssl) {
			size_t got = 0;

			ERR_clear_error(); /* SSL_get_error reads this thread's queue */
			if (SSL_read_ex(c->ssl, buf, len, &got) == 1) {
				ret = (ssize_t)got;
			} else {
				e = errno;
				switch (SSL_get_error(c->ssl, 0)) {
				case SSL_ERROR_WANT_READ:
					wait = true;
					break;
				case SSL_ERROR_WANT_WRITE:
					again = true;
					break;
				case SSL_ERROR_ZERO_RETURN:
					snprintf(c->err, sizeof(c->err),
						 "connection closed by peer");
					ret = GP_ECLOSED;
					break;
				case SSL_ERROR_SYSCALL:
					if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK) {
						wait = true;
						break;
					}
					snprintf(c->err, sizeof(c->err), "read: %s",
						 e ? strerror(e) : "connection closed by peer");
					ERR_clear_error();
					ret = e ? -e : GP_ECLOSED;
					break;
				default:
					tls_err(c->err, sizeof(c->err), "TLS read");
					ret = GP_ETLS;
				}
			}
		} else {
			ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);

			e = errno;
			c->drained = n < (ssize_t)len;
			if (n > 0) {
				ret = n;
			} else if (n == 0) {
				snprintf(c->err, sizeof(c->err), "connection closed by peer");
				ret = GP_ECLOSED;
			} else if (e != EINTR && e != EAGAIN && e != EWOULDBLOCK) {
				snprintf(c->err, sizeof(c->err), "read: %s", strerror(e));
				ret = -e;
			} else {
				wait = true;
			}
		}
		pthread_mutex_unlock(&c->io);
		if (ret)
			return ret;
		if (c->interrupt && *c->interrupt)
			return -EINTR;
		if (again)
			wait_ready(c, POLLOUT);
	}
}

/* Reads at most len bytes (at least one). */
static ssize_t raw_read_some(struct gp_conn *c, void *buf, size_t len)
{
	if (c->concurrent)
		return read_some_concurrent(c, buf, len);
	for (;;) {
		if (c->ssl) {
			size_t got = 0;
			int r;

			errno = 0;
			ERR_clear_error(); /* SSL_get_error reads this thread's queue */
			r = SSL_read_ex(c->ssl, buf, len, &got);
			if (r == 1)
				return (ssize_t)got;
			switch (SSL_get_error(c->ssl, 0)) {
			case SSL_ERROR_WANT_READ:
			case SSL_ERROR_WANT_WRITE:
				/* A blocking socket says this when a signal interrupted the read,
				 * or when a receive timeout (SO_RCVTIMEO) expired. */
				if (c->interrupt && *c->interrupt)
					return -EINTR;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					snprintf(c->err, sizeof(c->err), "read: timed out");
					return -ETIMEDOUT;
				}
				continue;
			case SSL_ERROR_ZERO_RETURN:
				snprintf(c->err, sizeof(c->err), "connection closed by peer");
				return GP_ECLOSED;
			case SSL_ERROR_SYSCALL:
				if (errno == EINTR) {
					if (c->interrupt && *c->interrupt)
						return -EINTR;
					continue;
				}
				snprintf(c->err, sizeof(c->err), "read: %s",
					 errno ? strerror(errno) : "connection closed by peer");
				ERR_clear_error();
				return errno ? -errno : GP_ECLOSED;
			default:
				tls_err(c->err, sizeof(c->err), "TLS read");
				return GP_ETLS;
			}
		} else {
			ssize_t n = -1;

			if (arm_deadline(c, SO_RCVTIMEO))
				errno = EAGAIN; /* the deadline has passed: as a timeout */
			else
				n = recv(c->fd, buf, len, 0);
			if (n > 0)
				return n;
			if (n == 0) {
				snprintf(c->err, sizeof(c->err), "connection closed by peer");
				return GP_ECLOSED;
			}
			if (errno == EINTR) {
				if (c->interrupt && *c->interrupt)
					return -EINTR;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				snprintf(c->err, sizeof(c->err), "read: timed out");
				return -ETIMEDOUT;
			}
			snprintf(c->err, sizeof(c->err), "read: %s", strerror(errno));
			return -errno;
		}
	}
}

bool gp_conn_pending(struct gp_conn *c)
{
	bool ssl_has = false;

	if (c->rlen > c->rpos)
		return true;
	if (!c->ssl)
		return false;
	if (c->concurrent)
		pthread_mutex_lock(&c->io);
	ssl_has = SSL_has_pending(c->ssl) == 1 || c->raw_len > c->raw_pos;
	if (c->concurrent)
		pthread_mutex_unlock(&c->io);
	return ssl_has;
}

int gp_conn_flush(struct gp_conn *c)
{
	int ret;

	if (c->wlen == 0)
		return 0;
	ret = raw_write(c, c->wbuf, c->wlen);
	c->wlen = 0;
	return ret;
}

static int wbuf_reserve(struct gp_conn *c, size_t more)
{
	size_t cap = c->wcap ? c->wcap : 16384;
	uint8_t *nb;

	if (c->wlen + more <= c->wcap)
		return 0;
	while (cap < c->wlen + more)
		cap *= 2;
	nb = realloc(c->wbuf, cap);
	if (!nb)
		return -ENOMEM;
	c->wbuf = nb;
	c->wcap = cap;
	return 0;
}

int gp_conn_write(struct gp_conn *c, const void *buf, size_t len)
{
	int ret = wbuf_reserve(c, len);

	if (ret)
		return ret;
	memcpy(c->wbuf + c->wlen, buf, len);
	c->wlen += len;
	return 0;
}

int gp_conn_send(struct gp_conn *c, unsigned type, unsigned flags, uint64_t request_id,
		 const ProtobufCMessage *msg, const void *bulk, size_t bulk_len)
{
	struct gp_frame_hdr h = {0};
	size_t mlen = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	int ret;

	if (mlen > GP_FRAME_MSG_MAX || bulk_len > GP_FRAME_BULK_MAX)
		return GP_ETOOBIG;
	h.msg_len = (uint32_t)mlen;
	h.bulk_len = (uint32_t)bulk_len;
	h.request_id = request_id;
	h.type = (uint16_t)type;
	h.flags = (uint16_t)flags;
	/* Room for the whole frame at once (its bulk too, when it is small), so a failure
	 * never leaves half a frame queued. */
	ret = wbuf_reserve(c, GP_FRAME_HDR_SIZE + mlen + (bulk_len < WBUF_FLUSH_AT ? bulk_len : 0));
	if (ret)
		return ret;
	gp_frame_hdr_encode(&h, c->wbuf + c->wlen);
	c->wlen += GP_FRAME_HDR_SIZE;
	if (msg)
		c->wlen += protobuf_c_message_pack(msg, c->wbuf + c->wlen);
	if (bulk_len > 0) {
		if (bulk_len >= WBUF_FLUSH_AT) {
			/* Large payloads go straight to the socket after what is queued. */
			ret = gp_conn_flush(c);
			if (ret)
				return ret;
			return raw_write(c, bulk, bulk_len);
		}
		memcpy(c->wbuf + c->wlen, bulk, bulk_len);
		c->wlen += bulk_len;
	}
	if (c->wlen >= WBUF_FLUSH_AT)
		return gp_conn_flush(c);
	return 0;
}

int gp_conn_read(struct gp_conn *c, void *buf, size_t len)
{
	uint8_t *p = buf;
	int ret;

	/* A reader is about to wait: whatever is queued must go out first (in concurrent mode
	 * the writers own the write buffer and flush it themselves). */
	ret = c->concurrent ? 0 : gp_conn_flush(c);
	if (ret)
		return ret;
	while (len > 0) {
		size_t have = c->rlen - c->rpos;
		ssize_t n;

		if (have > 0) {
			size_t take = have < len ? have : len;

			memcpy(p, c->rbuf + c->rpos, take);
			c->rpos += take;
			p += take;
			len -= take;
			continue;
		}
		if (len >= c->rcap) {
			/* Big reads bypass the buffer. */
			n = raw_read_some(c, p, len);
			if (n < 0)
				return (int)n;
			p += n;
			len -= (size_t)n;
			c->bytes_in += (uint64_t)n;
			continue;
		}
		n = raw_read_some(c, c->rbuf, c->rcap);
		if (n < 0)
			return (int)n;
		c->rpos = 0;
		c->rlen = (size_t)n;
		c->bytes_in += (uint64_t)n;
	}
	return 0;
}

int gp_conn_skip(struct gp_conn *c, size_t len)
{
	uint8_t scratch[4096];

	while (len > 0) {
		size_t take = len < sizeof(scratch) ? len : sizeof(scratch);
		int ret = gp_conn_read(c, scratch, take);

		if (ret)
			return ret;
		len -= take;
	}
	return 0;
}

int gp_conn_recv(struct gp_conn *c, struct gp_frame_hdr *h)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	int ret;

	ret = gp_conn_read(c, raw, sizeof(raw));
	if (ret)
		return ret;
	ret = gp_frame_hdr_decode(raw, h);
	if (ret) {
		gp_conn_set_err(c, "bad frame header: %s", gp_strerror(ret));
		return ret;
	}
	if (c->msg_max && h->msg_len > c->msg_max) {
		gp_conn_set_err(c, "a %u-byte message where at most %u were expected", h->msg_len,
				c->msg_max);
		return GP_ETOOBIG;
	}
	if (h->msg_len > c->msg_cap) {
		uint8_t *nb = realloc(c->msg, h->msg_len);

		if (!nb)
			return -ENOMEM;
		c->msg = nb;
		c->msg_cap = h->msg_len;
	}
	return gp_conn_read(c, c->msg, h->msg_len);
}

/* ---- TCP ------------------------------------------------------------- */

int gp_split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;
	size_t hl;

	if (!s || !*s)
		return GP_ECONFIG;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return GP_ECONFIG;
		hl = (size_t)(end - s - 1);
		s++;
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return GP_ECONFIG;
		hl = (size_t)(colon - s);
	}
	if (hl == 0 || hl >= hostlen || strlen(colon + 1) == 0 || strlen(colon + 1) >= portlen)
		return GP_ECONFIG;
	memcpy(host, s, hl);
	host[hl] = '\0';
	strcpy(port, colon + 1);
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return GP_ECONFIG;
	return 0;
}

static int connect_one(const struct addrinfo *ai, int timeout_ms, int *err_out)
{
	struct pollfd pfd;
	socklen_t sl = sizeof(int);
	int fd, soerr = 0, one = 1, r;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0) {
		*err_out = errno;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
		*err_out = errno;
		close(fd);
		return -1;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		*err_out = ETIMEDOUT;
		close(fd);
		return -1;
	}
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
		*err_out = soerr ? soerr : errno;
		close(fd);
		return -1;
	}
	/* Back to blocking; small requests must not wait for Nagle. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	return fd;
}

int gp_tcp_connect(const char *hostport, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo hints = {0}, *res, *ai;
	char host[256], port[16];
	int fd = -1, e = 0, r;

	if (gp_split_hostport(hostport, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "'%s' is not host:port", hostport);
		return GP_ECONFIG;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(r));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, timeout_ms, &e);
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", hostport, strerror(e));
		return -e;
	}
	return fd;
}

int gp_unix_connect(const char *path, int timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000}, none = {0, 0};
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "'%s' is too long for a socket address", path);
		return GP_ECONFIG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	/* A listener whose backlog is full makes connect wait: as long as a send would. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		e = errno == EAGAIN ? ETIMEDOUT : errno;
		close(fd);
		snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(e));
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
	return fd;
}
