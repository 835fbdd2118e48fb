/* output.c -- what the session's kernels print goes back to the client.
 *
 * A driver writes device printf output to its process's stdout, and device assert messages
 * to its stderr. The worker points both at pipes before the driver loads (its own log goes
 * to a copy of the original stderr: the daemon's log); a reader thread drains the pipes
 * into buffers (so a kernel that prints a lot never blocks on a full pipe while the main
 * thread waits for it), and whoever sends an answer sends what is buffered first, as
 * OUTPUT (stdout) and OUTPUT_ERR (stderr) frames, so the client prints it before the call
 * that waited for the kernel returns. A client whose Hello does not take OUTPUT_ERR gets
 * the driver's stderr in the daemon's log, as before.
 *
 * Under AddressSanitizer the worker's stderr stays the log's: a report written there just
 * before the process aborts would otherwise sit unread in a pipe.
 *
 * DESIGN: the reader thread owns the pipes' read ends; the buffers are shared under `lock`;
 * whoever sends an answer (the main thread, a waiter) sends what is buffered first, under
 * the connection's send lock, after one poll of both pipes for what the reader has not seen.
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

/* Most output held for the client, per stream; beyond it the rest is dropped, and the
 * client told. */
#define OUTPUT_MAX (16u << 20)

/* The driver's stdout, then its stderr. */
struct stream {
	int read_fd;
	uint8_t *buf;
	size_t len, cap;
	uint64_t dropped;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream streams[2] = {{.read_fd = -1}, {.read_fd = -1}};
static FILE *log_file; /* the daemon's log, where fd 2 was */

/* Moves what the pipe holds into the buffer; with `lock` held. Non-blocking reads. */
static void drain_locked(struct stream *st)
{
	uint8_t chunk[16384];

	if (st->read_fd < 0)
		return;
	for (;;) {
		ssize_t n = read(st->read_fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* empty (EAGAIN), or closed */
		if (st->len + (size_t)n > OUTPUT_MAX) {
			st->dropped += (uint64_t)n;
			continue;
		}
		if (st->len + (size_t)n > st->cap) {
			size_t ncap = st->cap ? st->cap : 65536;
			uint8_t *nb;

			while (ncap < st->len + (size_t)n)
				ncap *= 2;
			nb = realloc(st->buf, ncap);
			if (!nb) {
				st->dropped += (uint64_t)n;
				continue;
			}
			st->buf = nb;
			st->cap = ncap;
		}
		memcpy(st->buf + st->len, chunk, (size_t)n);
		st->len += (size_t)n;
	}
}

/* Keeps the pipes from filling while the main thread waits inside the driver. */
static void *reader(void *arg)
{
	struct pollfd pfd[2];

	for (int i = 0; i < 2; i++)
		pfd[i] = (struct pollfd){.fd = streams[i].read_fd, .events = POLLIN};
	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return NULL;
		pthread_mutex_lock(&lock);
		for (int i = 0; i < 2; i++)
			drain_locked(&streams[i]);
		pthread_mutex_unlock(&lock);
		for (int i = 0; i < 2; i++)
			if (pfd[i].revents & (POLLHUP | POLLERR))
				pfd[i].fd = -1; /* poll ignores it from now on */
		if (pfd[0].fd < 0 && pfd[1].fd < 0)
			return NULL;
	}
}

/* Points fd at a new pipe whose read end becomes st's. */
static int capture(int fd, struct stream *st)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (dup2(fds[1], fd) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	close(fds[1]);
	st->read_fd = fds[0];
	fcntl(st->read_fd, F_SETFL, fcntl(st->read_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

int gp__output_capture(void)
{
	pthread_t th;
	int r = capture(STDOUT_FILENO, &streams[0]);

	if (r)
		return r;
#ifndef __SANITIZE_ADDRESS__
	{
		int logfd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);

		log_file = logfd >= 0 ? fdopen(logfd, "w") : NULL;
		if (log_file) {
			setvbuf(log_file, NULL, _IOLBF, 0);
			gp_log_to(log_file);
			if (capture(STDERR_FILENO, &streams[1])) {
				gp_log_to(NULL);
				fclose(log_file);
				log_file = NULL;
			}
		} else if (logfd >= 0) {
			close(logfd);
		}
	}
#endif
	if (pthread_create(&th, NULL, reader, NULL)) {
		for (int i = 0; i < 2; i++) {
			if (streams[i].read_fd >= 0)
				close(streams[i].read_fd);
			streams[i].read_fd = -1;
		}
		return -EAGAIN;
	}
	pthread_detach(th);
	return 0;
}

/* The driver's stderr for a client that does not take it: into the log a line at a time,
 * escaped as every logged string is (the text can hold what the client chose, e.g. the names
 * in its PTX), so it can neither forge a log line nor drive a terminal. */
static void log_lines(struct gp_worker *w, const uint8_t *p, size_t n)
{
	char line[1024];

	while (n > 0) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) : n;
		size_t k = len < sizeof(line) - 1 ? len : sizeof(line) - 1;

		memcpy(line, p, k);
		line[k] = '\0';
		gp_log_info("session %llu: the driver says: %s", (unsigned long long)w->session_id,
			    line);
		len += nl != NULL;
		p += len;
		n -= len;
	}
}

/* Sends (or, for a client without OUTPUT_ERR, logs) what stream i holds. */
static int flush_stream(struct gp_worker *w, int i)
{
	static const char note[] = "\n[gpupool: device output beyond 16 MiB was dropped]\n";
	struct stream *st = &streams[i];
	unsigned type = i ? GP_MSG_OUTPUT_ERR : GP_MSG_OUTPUT;
	uint8_t *out;
	size_t n;
	bool lost;
	int ret = 0;

	pthread_mutex_lock(&lock);
	/* Whatever the driver wrote before this answer, even if the reader has not seen it. */
	drain_locked(st);
	out = st->buf;
	n = st->len;
	lost = st->dropped != 0;
	st->buf = NULL;
	st->len = st->cap = 0;
	st->dropped = 0;
	pthread_mutex_unlock(&lock);
	if (i && !w->client_stderr) {
		log_lines(w, out, n);
		free(out);
		return 0;
	}
	for (size_t off = 0; !ret && off < n; off += GP_CHUNK_SIZE)
		ret = gp_conn_send(w->client, type, 0, 0, NULL, out + off,
				   n - off < GP_CHUNK_SIZE ? n - off : GP_CHUNK_SIZE);
	if (!ret && lost)
		ret = gp_conn_send(w->client, type, 0, 0, NULL, note, sizeof(note) - 1);
	free(out);
	return ret;
}

int gp__output_flush(struct gp_worker *w)
{
	struct pollfd pfd[2];
	bool held[2];
	int ret = 0;

	if (streams[0].read_fd < 0)
		return 0;
	fflush(stdout); /* anything the driver left in stdio's buffers */
	fflush(stderr);
	/* Most answers follow no output: one look at both pipes (a read end of -1 is not
	 * looked at) instead of a read of each that finds nothing. */
	for (int i = 0; i < 2; i++)
		pfd[i] = (struct pollfd){.fd = streams[i].read_fd, .events = POLLIN};
	if (poll(pfd, 2, 0) < 0)
		pfd[0].revents = pfd[1].revents = POLLIN; /* not known: read them */
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 2; i++)
		held[i] = streams[i].len || streams[i].dropped;
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 2 && !ret; i++)
		if (held[i] || pfd[i].revents)
			ret = flush_stream(w, i);
	return ret;
}
