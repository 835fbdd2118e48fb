/* output.c -- what the session's kernels print goes back to the client.
 *
 * A driver writes device printf output to its process's stdout. The worker points its
 * stdout at a pipe before the driver loads; a reader thread drains the pipe into a buffer
 * (so a kernel that prints a lot never blocks on a full pipe while the main thread waits
 * for it), and the main thread sends what is buffered as OUTPUT frames just before each
 * answer, so the client prints it before the call that waited for the kernel returns.
 *
 * DESIGN: the reader thread owns the pipe's read end; the buffer is shared under `lock`;
 * whoever sends an answer (the main thread, a waiter) sends what is buffered first, under
 * the connection's send lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

/* Most output held for the client; beyond it the rest is dropped, and the client told. */
#define OUTPUT_MAX (16u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *buf;
static size_t len, cap;
static uint64_t dropped;
static int read_fd = -1;

/* Moves what the pipe holds into the buffer; with `lock` held. Non-blocking reads. */
static void drain_locked(void)
{
	uint8_t chunk[16384];

	for (;;) {
		ssize_t n = read(read_fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* empty (EAGAIN), or closed */
		if (len + (size_t)n > OUTPUT_MAX) {
			dropped += (uint64_t)n;
			continue;
		}
		if (len + (size_t)n > cap) {
			size_t ncap = cap ? cap : 65536;
			uint8_t *nb;

			while (ncap < len + (size_t)n)
				ncap *= 2;
			nb = realloc(buf, ncap);
			if (!nb) {
				dropped += (uint64_t)n;
				continue;
			}
			buf = nb;
			cap = ncap;
		}
		memcpy(buf + len, chunk, (size_t)n);
		len += (size_t)n;
	}
}

/* Keeps the pipe from filling while the main thread waits inside the driver. */
static void *reader(void *arg)
{
	struct pollfd pfd = {.events = POLLIN};

	pfd.fd = read_fd;
	for (;;) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return NULL;
		pthread_mutex_lock(&lock);
		drain_locked();
		pthread_mutex_unlock(&lock);
		if (pfd.revents & (POLLHUP | POLLERR))
			return NULL;
	}
}

int gp__output_capture(void)
{
	pthread_t th;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	/* Log lines go to stderr; stdout is the kernels'. */
	if (dup2(fds[1], STDOUT_FILENO) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	close(fds[1]);
	read_fd = fds[0];
	fcntl(read_fd, F_SETFL, fcntl(read_fd, F_GETFL) | O_NONBLOCK);
	if (pthread_create(&th, NULL, reader, NULL)) {
		close(read_fd);
		read_fd = -1;
		return -EAGAIN;
	}
	pthread_detach(th);
	return 0;
}

int gp__output_flush(struct gp_worker *w)
{
	static const char note[] = "\n[gpupool: device output beyond 16 MiB was dropped]\n";
	uint8_t *out;
	size_t n;
	bool lost;
	int ret = 0;

	if (read_fd < 0)
		return 0;
	fflush(stdout); /* anything the driver left in stdio's buffer */
	pthread_mutex_lock(&lock);
	/* Whatever the driver wrote before this answer, even if the reader has not seen it. */
	drain_locked();
	out = buf;
	n = len;
	lost = dropped != 0;
	buf = NULL;
	len = cap = 0;
	dropped = 0;
	pthread_mutex_unlock(&lock);
	for (size_t off = 0; !ret && off < n; off += GP_CHUNK_SIZE)
		ret = gp_conn_send(w->client, GP_MSG_OUTPUT, 0, 0, NULL, out + off,
				   n - off < GP_CHUNK_SIZE ? n - off : GP_CHUNK_SIZE);
	if (!ret && lost)
		ret = gp_conn_send(w->client, GP_MSG_OUTPUT, 0, 0, NULL, note, sizeof(note) - 1);
	free(out);
	return ret;
}
