/* idle_flood.c -- holds N TCP connections to HOST:PORT for SECONDS: most say nothing, every
 * fourth trickles one byte of a TLS record header each half second, and every one the
 * server closes is opened again within a second. Prints "open N" once all N are open, then
 * "done: R reopened" when the time is up. Loopback only: it is the unauthenticated lock-out
 * of the pool, for tests. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024

static struct sockaddr_in peer;

static int open_one(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&peer, sizeof(peer)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static int fd[MAX_CONNS];
	static struct pollfd pfd[MAX_CONNS];
	int n, open_now = 0;
	unsigned long reopened = 0;
	double end, next_trickle, next_reopen;
	bool announced = false;

	if (argc != 5 || strcmp(argv[1], "127.0.0.1") != 0) {
		fprintf(stderr, "usage: idle_flood 127.0.0.1 PORT N SECONDS\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (n < 1 || n > MAX_CONNS)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	peer.sin_family = AF_INET;
	peer.sin_port = htons((uint16_t)atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &peer.sin_addr);
	end = now_s() + atof(argv[4]);
	next_trickle = next_reopen = now_s();
	for (int i = 0; i < n; i++)
		fd[i] = -1;
	while (now_s() < end) {
		double t = now_s();

		if (t >= next_reopen) {
			for (int i = 0; i < n; i++) {
				if (fd[i] >= 0)
					continue;
				fd[i] = open_one();
				if (fd[i] >= 0 && announced)
					reopened++;
			}
			next_reopen = t + 1.0;
		}
		open_now = 0;
		for (int i = 0; i < n; i++)
			open_now += fd[i] >= 0;
		if (!announced && open_now == n) {
			printf("open %d\n", n);
			fflush(stdout);
			announced = true;
		}
		if (t >= next_trickle) {
			for (int i = 0; i < n; i += 4)
				if (fd[i] >= 0)
					(void)!write(fd[i], "\026", 1);
			next_trickle = t + 0.5;
		}
		for (int i = 0; i < n; i++) {
			pfd[i].fd = fd[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, (nfds_t)n, 100) < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < n; i++) {
			char b[64];

			if (fd[i] < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (read(fd[i], b, sizeof(b)) <= 0) {
				close(fd[i]);
				fd[i] = -1;
			}
		}
	}
	printf("done: %lu reopened\n", reopened);
	return 0;
}
