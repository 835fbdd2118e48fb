/* drip.c -- a peer that never finishes: accepts TCP connections and sends each one the start
 * of a TLS record announcing 16 KiB, then one more byte a second, for as long as it is read.
 * A client whose wait is a timeout per read rather than a deadline never gets to the end.
 *
 * usage: drip HOST:PORT
 *        drip HOST:PORT CERT KEY LEN
 * Binds HOST:PORT (an IPv4 address); keeps up to 64 connections at once. With CERT and KEY
 * it completes the TLS handshake instead, one connection at a time, reads a request and
 * answers with a frame announcing a LEN-byte message, whose bytes then follow one a
 * second (each its own TLS record).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "frame.h"

#define CONNS_MAX 64

/* The TLS mode: serves the connections one after the other. */
static int serve_tls(int lfd, const char *cert, const char *key, uint32_t len)
{
	char err[256];
	SSL_CTX *ctx = gp_tls_server_ctx_new(cert, key, NULL, err, sizeof(err));

	if (!ctx) {
		fprintf(stderr, "drip: %s\n", err);
		return 1;
	}
	for (;;) {
		struct gp_frame_hdr h;
		uint8_t raw[GP_FRAME_HDR_SIZE];
		int fd = accept(lfd, NULL, NULL);
		struct gp_conn *c = fd >= 0 ? gp_conn_new(fd) : NULL;

		if (c && !gp_conn_tls_accept(c, ctx) && !gp_conn_recv(c, &h)) {
			h = (struct gp_frame_hdr){
				.type = GP_MSG_ADMIN_REPLY, .msg_len = len, .request_id = 1};
			gp_frame_hdr_encode(&h, raw);
			if (!gp_conn_write(c, raw, sizeof(raw)) && !gp_conn_flush(c))
				for (uint32_t i = 0; i < len; i++) {
					if (gp_conn_write(c, "", 1) || gp_conn_flush(c))
						break;
					sleep(1);
				}
		}
		if (c)
			gp_conn_free(c);
		else if (fd >= 0)
			close(fd);
	}
}

int main(int argc, char **argv)
{
	/* A handshake record, TLS 1.0 in its header as servers write it, 16384 bytes long. */
	static const unsigned char head[] = {0x16, 0x03, 0x01, 0x40, 0x00};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int lfd, one = 1, conns[CONNS_MAX], n = 0;
	char host[64], *colon;

	if ((argc != 2 && argc != 5) ||
	    snprintf(host, sizeof(host), "%s", argv[1]) >= (int)sizeof(host) ||
	    !(colon = strrchr(host, ':'))) {
		fprintf(stderr, "usage: drip HOST:PORT [CERT KEY LEN]\n");
		return 2;
	}
	*colon = 0;
	sa.sin_port = htons((unsigned short)atoi(colon + 1));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16)) {
		perror("drip: bind");
		return 1;
	}
	if (argc == 5)
		return serve_tls(lfd, argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 10));
	for (;;) {
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};

		if (poll(&pfd, 1, 1000) == 1) {
			int fd = accept(lfd, NULL, NULL);

			if (fd >= 0 && (n == CONNS_MAX ||
					send(fd, head, sizeof(head), MSG_NOSIGNAL) != sizeof(head)))
				close(fd);
			else if (fd >= 0)
				conns[n++] = fd;
			continue;
		}
		for (int i = 0; i < n; i++) /* a second has passed: one more byte each */
			if (send(conns[i], "", 1, MSG_NOSIGNAL) != 1) {
				close(conns[i]);
				conns[i--] = conns[--n];
			}
	}
}
