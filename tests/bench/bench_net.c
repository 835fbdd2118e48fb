/* bench_net.c -- gpupool-bench's transport baselines and its delay relay.
 *
 * The baseline is what gpupool's own transport (src/conn.c) does between two processes with
 * nothing else: a server child that echoes small frames and sinks or sources bulk, in
 * GP_CHUNK_SIZE DATA frames as copies travel. The relay (threads of the parent) forwards
 * each connection to the pool, holding every piece it reads for the added delay.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "bench.h"
#include "bulk.h"
#include "conn.h"
#include "error.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a certificate for 127.0.0.1 ---------------------------------------------------- */

static int add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *e;
	int ok;

	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!e)
		return 0;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

int bench_make_cert(const char *cert_path, const char *key_path)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	FILE *f;
	int ok = key && x;

	ok = ok && X509_set_version(x, 2) && ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	ok = ok && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	ok = ok && X509_set_pubkey(x, key) &&
	     X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)"gpupool-bench", -1, -1, 0) &&
	     X509_set_issuer_name(x, X509_get_subject_name(x));
	ok = ok && add_ext(x, NID_basic_constraints, "critical,CA:TRUE") &&
	     add_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign") &&
	     add_ext(x, NID_subject_alt_name, "IP:127.0.0.1") &&
	     add_ext(x, NID_subject_key_identifier, "hash");
	ok = ok && X509_sign(x, key, EVP_sha256()) > 0;
	if (ok && (f = fopen(cert_path, "w"))) {
		ok = PEM_write_X509(f, x);
		ok = fclose(f) == 0 && ok;
	} else {
		ok = 0;
	}
	if (ok && (f = fopen(key_path, "w"))) {
		ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
		ok = fclose(f) == 0 && ok;
	} else {
		ok = 0;
	}
	X509_free(x);
	EVP_PKEY_free(key);
	return ok ? 0 : -1;
}

/* ---- the baseline server ------------------------------------------------------------ */

/* Frames the client sends: a small frame is echoed; a DATA frame's bulk is taken in and the
 * transfer's last answered; a REPLY frame whose body is a count asks for that many MiB. */
static void serve_wire(struct gp_conn *c)
{
	static uint8_t chunk[GP_CHUNK_SIZE];
	struct gp_frame_hdr h;

	while (gp_conn_recv(c, &h) == 0) {
		if (h.type == GP_MSG_DATA) {
			if (gp_conn_read(c, chunk, h.bulk_len))
				break;
			if (!(h.flags & GP_F_MORE) &&
			    (gp_conn_send(c, GP_MSG_REPLY, 0, h.request_id, NULL, NULL, 0) ||
			     gp_conn_flush(c)))
				break;
			continue;
		}
		if (h.type == GP_MSG_HOST_CALL && h.msg_len == 4) {
			uint32_t mib;

			memcpy(&mib, c->msg, 4);
			for (uint32_t i = 0; i < mib; i++)
				if (gp_conn_send(c, GP_MSG_DATA, i + 1 < mib ? GP_F_MORE : 0,
						 h.request_id, NULL, chunk, GP_CHUNK_SIZE))
					return;
			if (gp_conn_flush(c))
				return;
			continue;
		}
		if (gp_conn_skip(c, h.bulk_len) ||
		    gp_conn_send(c, GP_MSG_REPLY, 0, h.request_id, NULL, c->msg, h.msg_len) ||
		    gp_conn_flush(c))
			break;
	}
}

static int listen_on(enum bench_transport t, const char *dir, char *addr, size_t addrlen)
{
	int fd;

	if (t == BENCH_UNIX) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/wire.sock", dir);
		unlink(sa.sun_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4))
			return -1;
		snprintf(addr, addrlen, "%s", sa.sun_path);
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof(sa);

		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4) ||
		    getsockname(fd, (struct sockaddr *)&sa, &sl))
			return -1;
		snprintf(addr, addrlen, "127.0.0.1:%d", ntohs(sa.sin_port));
	}
	return fd;
}

static void server_child(enum bench_transport t, int lfd, const char *dir)
{
	char cert[512], key[512], err[256];
	SSL_CTX *ctx = NULL;
	struct gp_conn *c;
	int fd, one = 1;

	snprintf(cert, sizeof(cert), "%s/server.pem", dir);
	snprintf(key, sizeof(key), "%s/server.key", dir);
	if (t == BENCH_TLS && !(ctx = gp_tls_server_ctx_new(cert, key, NULL, err, sizeof(err))))
		_exit(1);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(1);
	if (t != BENCH_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = gp_conn_new(fd);
	if (!c || (ctx && gp_conn_tls_accept(c, ctx)))
		_exit(1);
	serve_wire(c);
	gp_conn_free(c);
	SSL_CTX_free(ctx);
	_exit(0);
}

static int ping(struct gp_conn *c, uint64_t id)
{
	static const uint8_t body[64];
	struct gp_frame_hdr q = {.msg_len = sizeof(body), .type = GP_MSG_REPLY, .request_id = id};
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h;

	gp_frame_hdr_encode(&q, raw);
	if (gp_conn_write(c, raw, sizeof(raw)) || gp_conn_write(c, body, sizeof(body)) ||
	    gp_conn_flush(c) || gp_conn_recv(c, &h) || gp_conn_skip(c, h.bulk_len))
		return -1;
	return 0;
}

int bench_wire_measure(enum bench_transport t, const char *dir, int rounds, int mib,
		       struct bench_wire *out)
{
	char addr[256], err[256], ca[512];
	double *rtt = calloc((size_t)rounds, sizeof(*rtt)), t0;
	uint8_t *chunk = calloc(1, GP_CHUNK_SIZE);
	struct gp_conn *c = NULL;
	struct gp_frame_hdr h;
	SSL_CTX *ctx = NULL;
	int lfd, fd, ret = -1, st;
	pid_t pid;

	if (!rtt || !chunk || rounds < 1 || mib < 1)
		goto out_free;
	lfd = listen_on(t, dir, addr, sizeof(addr));
	if (lfd < 0)
		goto out_free;
	pid = fork();
	if (pid == 0)
		server_child(t, lfd, dir);
	close(lfd);
	if (pid < 0)
		goto out_free;
	fd = t == BENCH_UNIX ? gp_unix_connect(addr, 5000, err, sizeof(err))
			     : gp_tcp_connect(addr, 5000, err, sizeof(err));
	if (fd < 0 || !(c = gp_conn_new(fd)))
		goto out_wait;
	if (t == BENCH_TLS) {
		snprintf(ca, sizeof(ca), "%s/server.pem", dir);
		ctx = gp_tls_client_ctx_new(ca, NULL, NULL, err, sizeof(err));
		if (!ctx || gp_conn_tls_connect(c, ctx, "127.0.0.1"))
			goto out_wait;
	}
	for (int i = 0; i < 100; i++)
		if (ping(c, (uint64_t)i))
			goto out_wait;
	for (int i = 0; i < rounds; i++) {
		t0 = bench_now();
		if (ping(c, (uint64_t)i))
			goto out_wait;
		rtt[i] = (bench_now() - t0) * 1e6;
	}
	out->rtt_p50_us = bench_median(rtt, (size_t)rounds);
	out->rtt_p99_us = bench_percentile(rtt, (size_t)rounds, 0.99);
	/* up: mib chunks in DATA frames, then the server's answer */
	t0 = bench_now();
	for (int i = 0; i < mib; i++)
		if (gp_conn_send(c, GP_MSG_DATA, i + 1 < mib ? GP_F_MORE : 0, 1, NULL, chunk,
				 GP_CHUNK_SIZE))
			goto out_wait;
	if (gp_conn_flush(c) || gp_conn_recv(c, &h))
		goto out_wait;
	out->up_mib_s = mib / (bench_now() - t0);
	/* down: one request, mib chunks back */
	{
		uint32_t n = (uint32_t)mib;
		struct gp_frame_hdr q = {.msg_len = 4, .type = GP_MSG_HOST_CALL, .request_id = 2};
		uint8_t raw[GP_FRAME_HDR_SIZE];

		t0 = bench_now();
		gp_frame_hdr_encode(&q, raw);
		if (gp_conn_write(c, raw, sizeof(raw)) || gp_conn_write(c, &n, 4) ||
		    gp_conn_flush(c))
			goto out_wait;
		for (int i = 0; i < mib; i++)
			if (gp_conn_recv(c, &h) || gp_conn_read(c, chunk, h.bulk_len))
				goto out_wait;
		out->down_mib_s = mib / (bench_now() - t0);
	}
	ret = 0;
out_wait:
	if (ret)
		fprintf(stderr, "gpupool-bench: baseline: %s %s\n", err, c ? c->err : "");
	gp_conn_free(c); /* the server sees the end and exits */
	SSL_CTX_free(ctx);
	if (pid > 0)
		waitpid(pid, &st, 0);
out_free:
	free(rtt);
	free(chunk);
	return ret;
}

/* ---- the delay relay -------------------------------------------------------------- */

struct piece {
	double due;
	size_t len;
	struct piece *next;
	uint8_t data[];
};

/* One direction of one connection: a reader queues what it reads, stamped with when it
 * may go on; a writer sends it then. */
struct pipe_dir {
	int from, to;
	unsigned delay_us;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct piece *head, **tail;
	bool eof;
	int refs; /* its two threads: the last to end frees it */
};

/* One of d's threads is done with it. */
static void dir_put(struct pipe_dir *d)
{
	bool last;

	pthread_mutex_lock(&d->lock);
	last = --d->refs == 0;
	pthread_mutex_unlock(&d->lock);
	if (!last)
		return;
	while (d->head) {
		struct piece *p = d->head;

		d->head = p->next;
		free(p);
	}
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cv);
	free(d);
}

static void *dir_reader(void *arg)
{
	struct pipe_dir *d = arg;

	for (;;) {
		struct piece *p = malloc(sizeof(*p) + 65536);
		ssize_t n = p ? recv(d->from, p->data, 65536, 0) : -1;

		pthread_mutex_lock(&d->lock);
		if (n <= 0) {
			free(p);
			d->eof = true;
			pthread_cond_signal(&d->cv);
			pthread_mutex_unlock(&d->lock);
			dir_put(d);
			return NULL;
		}
		p->len = (size_t)n;
		p->due = bench_now() + d->delay_us / 1e6;
		p->next = NULL;
		*d->tail = p;
		d->tail = &p->next;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->lock);
	}
}

static void *dir_writer(void *arg)
{
	struct pipe_dir *d = arg;

	for (;;) {
		struct piece *p;
		double wait;

		pthread_mutex_lock(&d->lock);
		while (!d->head && !d->eof)
			pthread_cond_wait(&d->cv, &d->lock);
		p = d->head;
		if (p) {
			d->head = p->next;
			if (!d->head)
				d->tail = &d->head;
		}
		pthread_mutex_unlock(&d->lock);
		if (!p)
			break;
		wait = p->due - bench_now();
		if (wait > 0) {
			struct timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		for (size_t off = 0; off < p->len;) {
			ssize_t n = send(d->to, p->data + off, p->len - off, MSG_NOSIGNAL);

			if (n <= 0) {
				free(p);
				goto out;
			}
			off += (size_t)n;
		}
		free(p);
	}
out:
	shutdown(d->to, SHUT_WR);
	dir_put(d);
	return NULL;
}

struct relay {
	int lfd;
	unsigned delay_us;
	char target[256];
};

static void start_dir(int from, int to, unsigned delay_us)
{
	struct pipe_dir *d = calloc(1, sizeof(*d));
	pthread_t t;

	if (!d)
		return;
	*d = (struct pipe_dir){.from = from, .to = to, .delay_us = delay_us, .refs = 2};
	d->tail = &d->head;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cv, NULL);
	if (pthread_create(&t, NULL, dir_reader, d) == 0) {
		pthread_detach(t);
	} else {
		/* no reader: the writer sees the end at once */
		d->eof = true;
		d->refs--;
	}
	if (pthread_create(&t, NULL, dir_writer, d) == 0)
		pthread_detach(t);
	else
		dir_put(d);
}

static void *relay_accept(void *arg)
{
	struct relay *r = arg;
	char err[256];

	for (;;) {
		int a = accept(r->lfd, NULL, NULL), b, one = 1;

		if (a < 0)
			continue;
		b = gp_tcp_connect(r->target, 5000, err, sizeof(err));
		if (b < 0) {
			close(a);
			continue;
		}
		setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		start_dir(a, b, r->delay_us);
		start_dir(b, a, r->delay_us);
	}
	return NULL;
}

int bench_relay_start(const char *target, unsigned delay_us)
{
	struct relay *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	pthread_t t;

	if (!r)
		return -1;
	r->delay_us = delay_us;
	snprintf(r->target, sizeof(r->target), "%s", target);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->lfd < 0 || bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(r->lfd, 16) ||
	    getsockname(r->lfd, (struct sockaddr *)&sa, &sl) ||
	    pthread_create(&t, NULL, relay_accept, r)) {
		free(r);
		return -1;
	}
	pthread_detach(t);
	return ntohs(sa.sin_port);
}
