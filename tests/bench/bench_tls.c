/* bench_tls.c -- the baseline gpupool is measured against: a bare TLS 1.3 connection on
 * loopback, with the same library, certificates and framing, but no CUDA and no daemon.
 * The echo server runs in a child process, as a worker does. Prints the round-trip time of
 * a small frame and one-way bulk throughput.
 *
 * usage: bench_tls CERT KEY CA [ROUNDS] [MIB]
 */
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "error.h"

static const char *cert, *key, *ca;
static int listen_fd;

static void pin(const char *env)
{
	const char *v = getenv(env);
	cpu_set_t set;

	if (!v || !*v)
		return;
	CPU_ZERO(&set);
	CPU_SET(atoi(v), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Echoes every frame without bulk; swallows bulk frames, answering the last one. */
static void *server(void *arg)
{
	char err[256];
	SSL_CTX *ctx = gp_tls_server_ctx_new(cert, key, NULL, err, sizeof(err));
	struct gp_conn *c = gp_conn_new(accept(listen_fd, NULL, NULL));
	struct gp_frame_hdr h;
	static uint8_t sink[GP_FRAME_BULK_MAX];

	if (!ctx || gp_conn_tls_accept(c, ctx))
		return NULL;
	while (gp_conn_recv(c, &h) == 0) {
		if (h.bulk_len) {
			gp_conn_read(c, sink, h.bulk_len);
			if (!(h.flags & GP_F_MORE))
				gp_conn_send(c, GP_MSG_REPLY, 0, h.request_id, NULL, NULL, 0);
			continue;
		}
		gp_conn_send(c, GP_MSG_REPLY, 0, h.request_id, NULL, c->msg, h.msg_len);
	}
	gp_conn_free(c);
	SSL_CTX_free(ctx);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int rounds = argc > 4 ? atoi(argv[4]) : 2000, mib = argc > 5 ? atoi(argv[5]) : 256;
	char err[256], addr[64];
	struct gp_frame_hdr h;
	pthread_t th;
	SSL_CTX *ctx;
	struct gp_conn *c;
	uint8_t *bulk;
	double t0, rtt, bw;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: bench_tls CERT KEY CA [ROUNDS] [MIB]\n");
		return 2;
	}
	cert = argv[1];
	key = argv[2];
	ca = argv[3];
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(listen_fd, 1) ||
	    getsockname(listen_fd, (struct sockaddr *)&sa, &sl))
		return 1;
	/* The server is another process, as the pool's worker is. GP_BENCH_SERVER_CPU and
	 * GP_BENCH_CLIENT_CPU pin the two, so the baseline sees the placement the pool does. */
	if (fork() == 0) {
		pin("GP_BENCH_SERVER_CPU");
		server(NULL);
		_exit(0);
	}
	pin("GP_BENCH_CLIENT_CPU");
	(void)th;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	ctx = gp_tls_client_ctx_new(ca, NULL, NULL, err, sizeof(err));
	fd = gp_tcp_connect(addr, 5000, err, sizeof(err));
	c = gp_conn_new(fd);
	if (!ctx || fd < 0 || gp_conn_tls_connect(c, ctx, "127.0.0.1")) {
		fprintf(stderr, "bench_tls: %s %s\n", err, c ? c->err : "");
		return 1;
	}
	/* Round trips of a 64-byte message, as small calls are. */
	uint8_t msg[64] = {0};
	for (int i = 0; i < 100; i++) { /* warm up */
		gp_conn_write(c, msg, 0);
		gp_conn_send(c, GP_MSG_DATA, 0, i, NULL, NULL, 0);
		if (gp_conn_recv(c, &h)) {
			fprintf(stderr, "bench_tls: %s\n", c->err);
			return 1;
		}
	}
	t0 = now();
	for (int i = 0; i < rounds; i++) {
		struct gp_frame_hdr q = {.msg_len = sizeof(msg), .type = GP_MSG_REPLY};
		uint8_t raw[GP_FRAME_HDR_SIZE];

		gp_frame_hdr_encode(&q, raw);
		gp_conn_write(c, raw, sizeof(raw));
		gp_conn_write(c, msg, sizeof(msg));
		if (gp_conn_recv(c, &h) || gp_conn_skip(c, h.bulk_len)) {
			fprintf(stderr, "bench_tls: %s\n", c->err);
			return 1;
		}
	}
	rtt = (now() - t0) / rounds * 1e6;
	/* Bulk one way in 1 MiB frames, then one answer. */
	bulk = calloc(1, GP_CHUNK_SIZE);
	t0 = now();
	for (int i = 0; i < mib; i++)
		gp_conn_send(c, GP_MSG_DATA, i + 1 < mib ? GP_F_MORE : 0, 1, NULL, bulk,
			     GP_CHUNK_SIZE);
	if (gp_conn_recv(c, &h)) {
		fprintf(stderr, "bench_tls: %s\n", c->err);
		return 1;
	}
	bw = mib / (now() - t0);
	printf("tls_rtt_us %.2f\ntls_mib_per_s %.1f\n", rtt, bw);
	gp_conn_free(c);
	SSL_CTX_free(ctx);
	free(bulk);
	return 0;
}
