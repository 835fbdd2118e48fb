/* conn.h -- a blocking framed connection over TLS (or a plain socket). */
#ifndef GP_CONN_H
#define GP_CONN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>
#include <protobuf-c/protobuf-c.h>

#include "frame.h"

/*
 * Used by the worker and the interposer: from one thread at a time until
 * gp_conn_concurrent() (below), then by one reader and writers under the send lock.
 * Nothing it does raises SIGPIPE: the interposer lives in other people's processes.
 * Writes are buffered so that small messages sent without waiting for a reply go out
 * in one TLS record; gp_conn_flush() sends them (and, before concurrent mode, a read).
 */
struct gp_conn {
	int fd;
	SSL *ssl;
	/* When set and non-zero after a read is interrupted by a signal, the read
	 * returns -EINTR instead of retrying. Set it before gp_conn_concurrent: that call
	 * gives such a connection its quarter-second receive timeout, so that the reader's
	 * blocking wait looks at the flag; set later, the reader does not. */
	volatile sig_atomic_t *interrupt;
	/* When non-zero, an instant of gp_now_us(): every blocking read and write, the TLS
	 * handshake's included, waits at most until then and then fails as a timeout
	 * (-ETIMEDOUT, GP_ETLS from a handshake, "timed out"). One deadline for a whole
	 * exchange, where the socket's SO_RCVTIMEO bounds each read only: a peer that sends
	 * a byte at a time cannot stretch it. Blocking mode only. */
	int64_t deadline_us;
	/* When non-zero, the largest message body gp_conn_recv accepts (GP_ETOOBIG above). */
	uint32_t msg_max;
	uint8_t *wbuf;
	size_t wlen, wcap;
	uint8_t *rbuf;
	size_t rpos, rlen, rcap;
	uint8_t *msg; /* the last received message body */
	size_t msg_cap;
	_Atomic uint64_t bytes_in,
		bytes_out; /* written by the reader and the writers, read by anyone */
	/* Why the last call failed, for logs and clients. In concurrent mode the reader and
	 * the writers each fail on their own: it is written under `io` only (gp_conn_set_err)
	 * and read through gp_conn_error; before that, by the one thread that uses c. */
	char err[256];
	/* Concurrent mode: `io` serialises the SSL object (held only around one read or
	 * write, never while waiting); `send` is the writers' lock (gp_conn_send_lock). */
	bool concurrent;
	pthread_mutex_t io, send;
	/* The last read from the socket got less than it asked for: the socket was empty. A
	 * hint for the reader, set under `io` by whoever reads the socket (a writer's SSL_write
	 * may read too). */
	_Atomic bool drained;
	/* Concurrent mode over TLS: what the reader's blocking recv took from the socket, for
	 * OpenSSL to read through the BIO (raw_pos..raw_len). The reader fills it without `io`
	 * only while it is empty and `raw_filling` is set (then nobody reads the socket but
	 * the reader); everything else about it is under `io`. */
	uint8_t *raw;
	size_t raw_pos, raw_len;
	bool raw_filling, raw_eof; /* raw_eof: that recv saw the peer's end */
	/* A plain Unix socket: the reader waits in poll() and then reads, as before (measured:
	 * a blocking recv there costs more context switches than it saves; docs/performance.md). */
	bool wait_in_poll;
};

/* TLS contexts. On failure return NULL and write the reason into err. */
SSL_CTX *gp_tls_server_ctx_new(const char *cert, const char *key, const char *ca, char *err,
			       size_t errlen);
SSL_CTX *gp_tls_client_ctx_new(const char *ca, const char *cert, const char *key, char *err,
			       size_t errlen);

/* OpenSSL's first-use costs paid now (cert, a public certificate file, may be NULL). */
void gp_tls_warm_up(const char *cert);

/* Takes ownership of fd. Returns NULL only when out of memory. */
struct gp_conn *gp_conn_new(int fd);
void gp_conn_free(struct gp_conn *c);
/* Runs the TLS handshake. A client checks the server's certificate against
 * host (a name or an address literal). Returns 0 or GP_ETLS with c->err set. */
int gp_conn_tls_accept(struct gp_conn *c, SSL_CTX *ctx);
/* After an accept, for a process that serves this one connection (a worker): drops the
 * server's private key from the connection and from its context (gp_tls_server_ctx_new keeps
 * it apart for handshakes), so that no copy stays. */
void gp_conn_tls_forget_key(struct gp_conn *c);
int gp_conn_tls_connect(struct gp_conn *c, SSL_CTX *ctx, const char *host);
/* Where a client certificate's tenant name comes from (config key tenant_from). */
enum gp_name_from {
	GP_NAME_FROM_CN = 0,  /* the subject's commonName */
	GP_NAME_FROM_SAN_URI, /* the subjectAltName's URI */
	GP_NAME_FROM_SAN_DNS, /* the subjectAltName's DNS name */
};

/*
 * The name a certificate gives its holder, decoded to UTF-8, in out (outlen bytes with
 * the NUL). "" when the certificate has no such name. Returns 0, or GP_EREFUSED with the
 * reason in why for a name no tenant can have: an embedded NUL, a control character, an
 * empty name, one longer than outlen - 1 bytes, one that does not decode, or two of them
 * (two CNs, two SAN URIs: which one is meant is ambiguous).
 */
int gp_cert_name(X509 *cert, enum gp_name_from from, char *out, size_t outlen, char *why,
		 size_t whylen);
/* gp_cert_name() of the peer's certificate; "" and 0 without one. */
int gp_conn_peer_name(struct gp_conn *c, enum gp_name_from from, char *out, size_t outlen,
		      char *why, size_t whylen);
/* The name of the user uid, the tenant of a session on the Unix socket; "uid:N" for a uid
 * without one. */
void gp_user_name(uid_t uid, char *out, size_t outlen);
/* The monotonic clock in microseconds, as deadline_us counts it. */
int64_t gp_now_us(void);
/* Sends what is buffered, then shuts TLS down politely. */
void gp_conn_shutdown(struct gp_conn *c);

/*
 * Concurrent mode, after the handshake: one thread reads (gp_conn_recv/read/skip) while
 * any others write, each holding gp_conn_send_lock() from its first gp_conn_send() to its
 * gp_conn_flush() (reads no longer flush what writers queued). The socket stays blocking
 * for the reader, which waits in recv() without holding the SSL object (one system call per
 * message, not a poll and then a read; on a plain Unix socket it polls and reads, which
 * measured faster there); writers send without waiting (MSG_DONTWAIT) and wait in poll() when
 * the socket is full.
 * Lock order for callers with locks of their own: theirs first, then the send lock.
 */
int gp_conn_concurrent(struct gp_conn *c);
void gp_conn_send_lock(struct gp_conn *c);
/* Sets c->err (printf-style), under `io` in concurrent mode. */
void gp_conn_set_err(struct gp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A copy of c->err into buf (len bytes, at least 1), taken under `io` in concurrent mode:
 * buf (empty when c->err is). */
const char *gp_conn_error(struct gp_conn *c, char *buf, size_t len);
void gp_conn_send_unlock(struct gp_conn *c);

/* Queues one frame: header, packed message (may be NULL), bulk (may be NULL).
 * Large bulk is written straight through. Returns 0 or a negative code. */
int gp_conn_send(struct gp_conn *c, unsigned type, unsigned flags, uint64_t request_id,
		 const ProtobufCMessage *msg, const void *bulk, size_t bulk_len);
int gp_conn_flush(struct gp_conn *c);
/* Bytes have been received that no read has taken yet: in the connection's buffer, or
 * in OpenSSL's (read-ahead), where polling the socket does not see them. A thread that
 * polls the socket before reading asks this first. In concurrent mode, from the reading
 * side only (or while nobody reads). */
bool gp_conn_pending(struct gp_conn *c);
/* Queues raw bytes (tests use it to send malformed frames). */
int gp_conn_write(struct gp_conn *c, const void *buf, size_t len);

/* Reads one frame header and its message body (c->msg). The frame's bulk
 * (h->bulk_len bytes) is left for gp_conn_read/gp_conn_skip, so it can land
 * in its destination without an extra copy. */
int gp_conn_recv(struct gp_conn *c, struct gp_frame_hdr *h);
int gp_conn_read(struct gp_conn *c, void *buf, size_t len);
int gp_conn_skip(struct gp_conn *c, size_t len);

/* Connects a TCP socket to "host:port" within timeout_ms. Returns fd or a
 * negative code, with the reason in err. */
int gp_tcp_connect(const char *hostport, int timeout_ms, char *err, size_t errlen);
/* Connects to a Unix socket within timeout_ms. Returns fd or a negative code, with the
 * reason in err. */
int gp_unix_connect(const char *path, int timeout_ms, char *err, size_t errlen);
/* Splits "host:port" / "[v6]:port". Returns 0 or GP_ECONFIG. */
int gp_split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen);

#endif
