/* test_bulk.c -- bulk transfers (src/bulk.c) between two connections over a socketpair: the
 * sender runs in a child process, so transfers larger than the socket buffer flow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "bulk.h"
#include "error.h"

#define LEN (3 * GP_CHUNK_SIZE + GP_CHUNK_SIZE / 2)

static uint8_t *pattern(size_t n)
{
	uint8_t *p = malloc(n);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131u + (i >> 20));
	return p;
}

/* A child that runs send(conn) and exits; the parent gets the other end. */
static struct gp_conn *spawn(void (*send)(struct gp_conn *c), pid_t *pid)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0) {
		struct gp_conn *c = gp_conn_new(sv[1]);

		close(sv[0]);
		send(c);
		gp_conn_flush(c);
		gp_conn_free(c);
		_exit(0);
	}
	close(sv[1]);
	return gp_conn_new(sv[0]);
}

static void reap(pid_t pid, struct gp_conn *c)
{
	int st;

	gp_conn_free(c);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A frame that follows a transfer, to show the stream stayed in step. */
static void send_marker(struct gp_conn *c)
{
	gp_conn_send(c, GP_MSG_GOODBYE, 0, 99, NULL, NULL, 0);
}

static void expect_marker(struct gp_conn *c)
{
	struct gp_frame_hdr h;

	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(h.type, GP_MSG_GOODBYE);
	assert_int_equal(h.request_id, 99);
}

/* ---- invalid transfers first ---- */

static void send_too_much(struct gp_conn *c)
{
	static const uint8_t ten[10];

	gp_conn_send(c, GP_MSG_MEMCPY_HTOD, 0, 1, NULL, ten, sizeof(ten));
}

static void test_more_than_announced(void **state)
{
	struct gp_bulk_sink sink = {0};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_too_much, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, 5, &sink), GP_EFRAME);
	reap(pid, c);
}

static void send_then_reply(struct gp_conn *c)
{
	static const uint8_t ten[10];

	/* MORE promised, then something that is not DATA for the request. */
	gp_conn_send(c, GP_MSG_MEMCPY_HTOD, GP_F_MORE, 1, NULL, ten, sizeof(ten));
	gp_conn_send(c, GP_MSG_REPLY, 0, 1, NULL, NULL, 0);
}

static void test_not_data(void **state)
{
	struct gp_bulk_sink sink = {0};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_then_reply, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, 100, &sink), GP_ETYPE);
	reap(pid, c);
}

/* ---- whole transfers ---- */

static void send_request(struct gp_conn *c)
{
	uint8_t *p = pattern(LEN);
	struct gp_bulk_source src = {.src = p};

	gp_bulk_send(c, GP_MSG_MEMCPY_HTOD, GP_F_NO_REPLY, 7, NULL, LEN, &src);
	send_marker(c);
	free(p);
}

static void test_in_place(void **state)
{
	uint8_t *want = pattern(LEN), *got = calloc(1, LEN);
	struct gp_bulk_sink sink = {.dst = got};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_request, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(h.type, GP_MSG_MEMCPY_HTOD);
	assert_int_equal(h.flags, GP_F_NO_REPLY | GP_F_MORE); /* the caller's flags kept */
	assert_int_equal(h.bulk_len, GP_CHUNK_SIZE);	      /* one chunk in the request */
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.got, LEN);
	assert_memory_equal(got, want, LEN);
	expect_marker(c);
	reap(pid, c);
	free(want);
	free(got);
}

struct written {
	uint8_t *buf;
	uint64_t next;
	uint64_t fail_at; /* answer an error for the piece at this offset */
	unsigned calls;
};

static int write_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct written *w = arg;

	assert_int_equal(off, w->next); /* in order, nothing skipped */
	assert_true(n <= GP_CHUNK_SIZE);
	w->calls++;
	if (w->fail_at && off >= w->fail_at)
		return 42;
	memcpy(w->buf + off, p, n);
	w->next = off + n;
	return 0;
}

static void test_through_staging(void **state)
{
	uint8_t *want = pattern(LEN), *staging = malloc(GP_CHUNK_SIZE);
	struct written w = {.buf = calloc(1, LEN)};
	struct gp_bulk_sink sink = {.write = write_piece, .arg = &w, .staging = staging};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_request, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.err, 0);
	assert_int_equal(sink.got, LEN);
	assert_int_equal(w.calls, 4);
	assert_memory_equal(w.buf, want, LEN);
	expect_marker(c);
	reap(pid, c);

	/* A sink that fails part-way keeps its first error; the rest is still read. */
	free(w.buf);
	memset(&w, 0, sizeof(w));
	w.buf = calloc(1, LEN);
	w.fail_at = 2 * GP_CHUNK_SIZE;
	sink = (struct gp_bulk_sink){.write = write_piece, .arg = &w, .staging = staging};
	c = spawn(send_request, &pid);
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.err, 42);
	assert_int_equal(sink.got, LEN);
	assert_int_equal(w.calls, 3); /* no write after the failure */
	expect_marker(c);
	reap(pid, c);
	free(w.buf);
	free(want);
	free(staging);
}

/* In place and told: each piece lands at dst + off, then write() hears of it there. */
static int landed_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct written *w = arg;

	assert_int_equal(off, w->next);
	assert_ptr_equal(p, w->buf + off); /* already in place, not through staging */
	w->calls++;
	w->next = off + n;
	return w->fail_at && off >= w->fail_at ? 42 : 0;
}

static void test_in_place_told(void **state)
{
	uint8_t *want = pattern(LEN);
	struct written w = {.buf = calloc(1, LEN)};
	struct gp_bulk_sink sink = {.dst = w.buf, .write = landed_piece, .arg = &w};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_request, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.err, 0);
	assert_int_equal(sink.got, LEN);
	assert_int_equal(w.calls, 4);
	assert_memory_equal(w.buf, want, LEN);
	expect_marker(c);
	reap(pid, c);

	/* A failure is kept and nothing more is told; the bytes still land, in step. */
	memset(w.buf, 0, LEN);
	w.next = 0;
	w.calls = 0;
	w.fail_at = GP_CHUNK_SIZE;
	sink = (struct gp_bulk_sink){.dst = w.buf, .write = landed_piece, .arg = &w};
	c = spawn(send_request, &pid);
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.err, 42);
	assert_int_equal(w.calls, 2);
	assert_memory_equal(w.buf, want, LEN);
	expect_marker(c);
	reap(pid, c);
	free(w.buf);
	free(want);
}

/* A write() that points the staging at the next of two buffers for the next piece (the
 * worker's ring does): each piece is read where the staging pointed when it came. */
struct two {
	struct gp_bulk_sink *sink;
	uint8_t *slot[2], *out;
	unsigned k;
};

static int ring_piece(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct two *t = arg;

	assert_ptr_equal(p, t->slot[t->k]);
	memcpy(t->out + off, p, n);
	t->k ^= 1;
	t->sink->staging = t->slot[t->k];
	return 0;
}

static void test_staging_moves(void **state)
{
	uint8_t *want = pattern(LEN);
	struct gp_bulk_sink sink = {.write = ring_piece};
	struct two t = {&sink, {malloc(GP_CHUNK_SIZE), malloc(GP_CHUNK_SIZE)}, calloc(1, LEN), 0};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_request, &pid);

	(void)state;
	sink.arg = &t;
	sink.staging = t.slot[0];
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.err, 0);
	assert_memory_equal(t.out, want, LEN);
	expect_marker(c);
	reap(pid, c);
	free(t.slot[0]);
	free(t.slot[1]);
	free(t.out);
	free(want);
}

/* ---- a source that stops: the transfer ends early, in step ---- */

static uint64_t stop_at;

static const uint8_t *read_piece(void *arg, uint64_t off, size_t n, int *err)
{
	if (off >= stop_at) {
		*err = 7;
		return NULL;
	}
	return (const uint8_t *)arg + off;
}

static void send_stopping(struct gp_conn *c)
{
	uint8_t *p = pattern(LEN);
	struct gp_bulk_source src = {.read = read_piece, .arg = p};

	gp_bulk_send(c, GP_MSG_DATA, 0, 3, NULL, LEN, &src);
	if (src.err != 7)
		_exit(1);
	send_marker(c);
	free(p);
}

static void test_source_stops(void **state)
{
	uint8_t *want = pattern(LEN), *got = calloc(1, LEN);
	struct gp_bulk_sink sink = {.dst = got};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c;

	(void)state;
	stop_at = 2 * GP_CHUNK_SIZE; /* two chunks go, then an empty DATA ends it */
	c = spawn(send_stopping, &pid);
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(h.type, GP_MSG_DATA);
	assert_int_equal(gp_bulk_recv(c, &h, LEN, &sink), 0);
	assert_int_equal(sink.got, 2 * GP_CHUNK_SIZE);
	assert_memory_equal(got, want, 2 * GP_CHUNK_SIZE);
	expect_marker(c);
	reap(pid, c);

	stop_at = 0; /* nothing at all is sent */
	c = spawn(send_stopping, &pid);
	expect_marker(c);
	reap(pid, c);
	free(want);
	free(got);
}

static void send_empty(struct gp_conn *c)
{
	struct gp_bulk_source src = {.src = (const uint8_t *)""};

	gp_bulk_send(c, GP_MSG_MODULE_LOAD, 0, 5, NULL, 0, &src);
	send_marker(c);
}

static void test_empty(void **state)
{
	struct gp_bulk_sink sink = {0};
	struct gp_frame_hdr h;
	pid_t pid;
	struct gp_conn *c = spawn(send_empty, &pid);

	(void)state;
	assert_int_equal(gp_conn_recv(c, &h), 0);
	assert_int_equal(h.type, GP_MSG_MODULE_LOAD);
	assert_int_equal(h.flags, 0);
	assert_int_equal(gp_bulk_recv(c, &h, 0, &sink), 0);
	assert_int_equal(sink.got, 0);
	expect_marker(c);
	reap(pid, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_than_announced),
		cmocka_unit_test(test_not_data),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_through_staging),
		cmocka_unit_test(test_in_place_told),
		cmocka_unit_test(test_staging_moves),
		cmocka_unit_test(test_source_stops),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
