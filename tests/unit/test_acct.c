/* test_acct.c -- accounting records: JSON lines both ways, RFC 3339 times, the tally. */
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "acct.h"
#include "error.h"

static struct gp_acct_record sample(void)
{
	struct gp_acct_record r = {0};

	r.session = 42;
	snprintf(r.pool_host, sizeof(r.pool_host), "gpu1");
	snprintf(r.tenant, sizeof(r.tenant), "alice");
	snprintf(r.client_cert, sizeof(r.client_cert), "alice-laptop");
	snprintf(r.client_addr, sizeof(r.client_addr), "10.0.0.7:51234");
	snprintf(r.client_host, sizeof(r.client_host), "laptop");
	r.client_pid = 4321;
	snprintf(r.program, sizeof(r.program), "vector_add");
	r.start_ms = 1764587890123; /* 2025-12-01T11:18:10.123Z */
	r.admitted_ms = 1764587890500;
	r.end_ms = 1764587900500;
	r.held_s = 10.0;
	r.ngpus = 2;
	r.gpu[0] = 0;
	r.gpu[1] = 3;
	snprintf(r.gpu_uuid[0], GP_ACCT_UUID, "GPU-00000000-0000-0000-0000-000000000001");
	snprintf(r.gpu_uuid[1], GP_ACCT_UUID, "GPU-00000000-0000-0000-0000-000000000004");
	r.mem_limit = 1ull << 30;
	r.gpu_seconds = 20.0;
	r.mem_gib_seconds = 20.0;
	r.mem_peak = 123456789;
	r.bytes_in = UINT64_MAX - 1; /* exact, not through a double */
	r.bytes_out = 77;
	r.calls = 1000;
	snprintf(r.ended, sizeof(r.ended), "client_closed");
	return r;
}

static int parse_str(const char *s, struct gp_acct_record *r)
{
	return gp_acct_parse(s, strlen(s), r);
}

/* ---- invalid arguments and input first ---- */

static void test_invalid(void **state)
{
	struct gp_acct_record r = sample();
	char buf[64];
	int64_t ms;

	assert_int_equal(gp_acct_format(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(gp_acct_format(&r, buf, sizeof(buf)), -ENOSPC); /* does not fit */
	assert_int_equal(gp_acct_parse(NULL, 0, &r), -EINVAL);
	assert_int_equal(gp_time_parse(NULL, &ms), -EINVAL);
	static const char *bad_times[] = {
		"",
		"2026",
		"2026-13-01",
		"2026-02-30",
		"2025-02-29",
		"2026-12-01T",
		"2026-12-01T25:00Z",
		"2026-12-01T10:00",
		"2026-12-01T10:00:00",
		"2026-12-01T10:00:00.Z",
		"2026-12-01T10:00:00+1",
		"2026-12-01x",
		"2026-12-01T10:00:00Zjunk",
		"yesterday",
	};
	for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++)
		if (gp_time_parse(bad_times[i], &ms) != -EINVAL)
			fail_msg("'%s' should not parse", bad_times[i]);
}

static void test_not_records(void **state)
{
	static const char *bad[] = {
		"",
		"{}",
		"[]",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\"",				    /* torn */
		"{\"v\":1,\"session\":1,\"tenant\":\"a\"}", /* no end */
		"{\"v\":2,\"session\":1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\"}", /* newer */
		"{\"v\":1,\"session\":-1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\"}",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\"} x",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\\u0000b\",\"end\":\"2026-12-"
		"01T00:00:00Z\"}",
		"{\"v\":1,\"session\":1,\"tenant\":\"\\ud800\",\"end\":\"2026-12-"
		"01T00:00:00Z\"}",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\tb\",\"end\":\"2026-12-"
		"01T00:00:00Z\"}",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\",\"end\":\"noon\"}",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\",\"x\":[[[[[[[[[["
		"[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}",
		"{\"v\":1,\"session\":1,\"tenant\":\"a\",\"end\":\"2026-12-01T00:"
		"00:00Z\",\"gpus\":[1,]}",
		"\x01\xff garbage",
	};
	struct gp_acct_record r;
	char longname[600];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (parse_str(bad[i], &r) != GP_EDECODE)
			fail_msg("line %zu should not be a record: %s", i, bad[i]);
	/* A string longer than its field holds is not cut silently. */
	memset(longname, 'x', sizeof(longname));
	snprintf(longname, sizeof(longname),
		 "{\"v\":1,\"session\":1,\"end\":\"2026-12-01T00:00:00Z\",\"tenant\":\"%0390d\"}",
		 0);
	assert_int_equal(parse_str(longname, &r), GP_EDECODE);
}

/* ---- normal behaviour ---- */

static void test_times(void **state)
{
	char buf[32];
	int64_t ms;

	assert_int_equal(gp_time_parse("1970-01-01", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(gp_time_parse("2026-12-01T11:18:10.123Z", &ms), 0);
	gp_time_format(ms, buf, sizeof(buf));
	assert_string_equal(buf, "2026-12-01T11:18:10.123Z");
	assert_int_equal(gp_time_parse("2026-12-01 12:18:10.123+01:00", &ms), 0);
	gp_time_format(ms, buf, sizeof(buf));
	assert_string_equal(buf, "2026-12-01T11:18:10.123Z");
	assert_int_equal(gp_time_parse("2024-02-29T23:59:59-00:30", &ms), 0);
	gp_time_format(ms, buf, sizeof(buf));
	assert_string_equal(buf, "2024-03-01T00:29:59.000Z");
	assert_int_equal(gp_time_parse("2026-12-01T11:18Z", &ms), 0);
	gp_time_format(ms, buf, sizeof(buf));
	assert_string_equal(buf, "2026-12-01T11:18:00.000Z");
	gp_time_format(-1, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59.999Z");
}

static void test_round_trip(void **state)
{
	struct gp_acct_record r = sample(), back;
	char line[GP_ACCT_LINE_MAX];
	int n = gp_acct_format(&r, line, sizeof(line));

	assert_true(n > 0);
	assert_int_equal(line[n - 1], '\n');
	assert_null(memchr(line, '\n', (size_t)n - 1)); /* one line */
	assert_non_null(strstr(line, "\"gpu_busy_seconds\":null"));
	assert_non_null(strstr(line, "\"start\":\"2025-12-01T11:18:10.123Z\""));
	assert_int_equal(gp_acct_parse(line, (size_t)n, &back), 0);
	assert_int_equal(back.session, 42);
	assert_string_equal(back.tenant, "alice");
	assert_string_equal(back.client_cert, "alice-laptop");
	assert_string_equal(back.client_addr, "10.0.0.7:51234");
	assert_string_equal(back.program, "vector_add");
	assert_int_equal(back.client_pid, 4321);
	assert_int_equal(back.start_ms, r.start_ms);
	assert_int_equal(back.admitted_ms, r.admitted_ms);
	assert_int_equal(back.end_ms, r.end_ms);
	assert_int_equal(back.ngpus, 2);
	assert_int_equal(back.gpu[1], 3);
	assert_string_equal(back.gpu_uuid[1], r.gpu_uuid[1]);
	assert_int_equal(back.mem_limit, 1ull << 30);
	assert_true(back.bytes_in == UINT64_MAX - 1);
	assert_int_equal(back.bytes_out, 77);
	assert_false(back.busy_known);
	assert_true(back.gpu_seconds == 20.0 && back.mem_gib_seconds == 20.0);
	assert_string_equal(back.ended, "client_closed");
	/* A measured busy time travels as a number. */
	r.busy_known = true;
	r.gpu_busy_seconds = 1.5;
	n = gp_acct_format(&r, line, sizeof(line));
	assert_int_equal(gp_acct_parse(line, (size_t)n, &back), 0);
	assert_true(back.busy_known && back.gpu_busy_seconds == 1.5);
}

/* ---- what a hostile client sends ---- */

static void test_hostile_strings(void **state)
{
	struct gp_acct_record r = sample(), back;
	char line[GP_ACCT_LINE_MAX];
	int n;

	/* A newline would start a forged record; quotes would end the string; bad UTF-8 and
	 * control characters would make the line unreadable or drive a terminal. */
	snprintf(r.program, sizeof(r.program),
		 "x\"}\n{\"v\":1,\"tenant\":\"mallory\"\x1b[2J\\\xff\xc2\x9b");
	snprintf(r.client_host, sizeof(r.client_host), "caf\xc3\xa9");
	n = gp_acct_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_null(memchr(line, '\n', (size_t)n - 1));
	assert_null(memchr(line, '\x1b', (size_t)n));
	assert_int_equal(gp_acct_parse(line, (size_t)n, &back), 0);
	assert_string_equal(back.tenant, "alice");
	assert_string_equal(back.program,
			    "x\"}\n{\"v\":1,\"tenant\":\"mallory\"\x1b[2J\\\xef\xbf\xbd\xc2\x9b");
	assert_string_equal(back.client_host, "caf\xc3\xa9");
}

/* The daemon's strings hold 127 bytes; the worst of them still reads back whole. */
static void test_longest_hostile_string(void **state)
{
	struct gp_acct_record r = sample(), back;
	char line[GP_ACCT_LINE_MAX];
	int n;

	memset(r.program, 0xff, 127);
	r.program[127] = '\0';
	memset(r.client_host, '\n', 127);
	r.client_host[127] = '\0';
	n = gp_acct_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_int_equal(gp_acct_parse(line, (size_t)n, &back), 0);
	assert_int_equal(strlen(back.program), 3 * 127);
	assert_memory_equal(back.program, "\xef\xbf\xbd\xef\xbf\xbd", 6);
	assert_int_equal(strlen(back.client_host), 127);
}

static void test_unknown_keys_skipped(void **state)
{
	struct gp_acct_record r;

	assert_int_equal(parse_str(" {\"future\":{\"a\":[1,2.5e3,true,null,\"\\u20ac\"]},\"v\":1,"
				   "\"session\":7,\"tenant\":\"\\u00e9\\ud83d\\ude00\",\"end\":"
				   "\"2026-12-01T00:00:00Z\"}\r\n",
				   &r),
			 0);
	assert_int_equal(r.session, 7);
	assert_string_equal(r.tenant, "\xc3\xa9\xf0\x9f\x98\x80");
	assert_int_equal(r.ngpus, 0);
}

/* ---- how a session ended ---- */

static void test_ended(void **state)
{
	char d[128];

	/* What the pool did wins, whatever followed (a SIGKILL after an ignored SIGTERM). */
	assert_string_equal(gp_acct_ended("evicted", SIGKILL, 0, GP_WORKER_END_POOL, d, sizeof(d)),
			    "evicted");
	assert_non_null(strstr(d, "signal 9"));
	assert_string_equal(gp_acct_ended(NULL, SIGKILL, 0, 0, d, sizeof(d)), "killed");
	assert_string_equal(gp_acct_ended(NULL, SIGSEGV, 0, 0, d, sizeof(d)), "crashed");
	assert_string_equal(gp_acct_ended(NULL, SIGABRT, 0, GP_WORKER_END_GOODBYE, d, sizeof(d)),
			    "crashed");
	assert_string_equal(gp_acct_ended(NULL, 0, 0, GP_WORKER_END_GOODBYE, d, sizeof(d)),
			    "client_closed");
	assert_string_equal(d, "");
	assert_string_equal(gp_acct_ended(NULL, 0, 0, GP_WORKER_END_CLIENT_GONE, d, sizeof(d)),
			    "client_gone");
	assert_string_equal(gp_acct_ended(NULL, 0, 0, GP_WORKER_END_PROTOCOL, d, sizeof(d)),
			    "protocol_error");
	assert_string_equal(gp_acct_ended(NULL, 0, 1, GP_WORKER_END_POOL, d, sizeof(d)), "killed");
	assert_string_equal(d, "worker exit status 1");
	assert_string_equal(gp_acct_ended(NULL, 0, 0, GP_WORKER_END_POOL, d, sizeof(d)), "killed");
	assert_non_null(strstr(d, "the pool did not send"));
	assert_string_equal(gp_acct_ended(NULL, 0, 2, 0, d, sizeof(d)), "worker_failed");
	assert_string_equal(gp_acct_ended(NULL, 0, 0, 0, d, sizeof(d)), "unknown");
}

/* ---- the tally ---- */

static void add(struct gp_acct_tally *t, const char *tenant, const char *host, int64_t end,
		uint64_t in, uint64_t peak)
{
	struct gp_acct_record r = sample();
	char line[GP_ACCT_LINE_MAX];
	int n;

	snprintf(r.tenant, sizeof(r.tenant), "%s", tenant);
	snprintf(r.client_host, sizeof(r.client_host), "%s", host);
	r.end_ms = end;
	r.bytes_in = in;
	r.mem_peak = peak;
	n = gp_acct_format(&r, line, sizeof(line));
	assert_true(n > 0);
	assert_int_equal(gp_acct_tally_line(t, line, (size_t)n), 0);
}

static void test_tally(void **state)
{
	const int64_t day = 86400000, d0 = 1764547200000; /* 2025-12-01T00:00:00Z */
	struct gp_acct_tally t;

	gp_acct_tally_init(&t, GP_ACCT_BY_TENANT, d0, d0 + 2 * day);
	add(&t, "bob", "h1", d0 + 5, 10, 100);
	add(&t, "alice", "h1", d0 + day + 5, 20, 300);
	add(&t, "bob", "h2", d0 + day, 30, 200);
	add(&t, "bob", "h2", d0 - 1, 1000, 1);	     /* before since */
	add(&t, "bob", "h2", d0 + 2 * day, 1000, 1); /* until is not included */
	assert_int_equal(gp_acct_tally_line(&t, "{\"v\":1,\"sess", 12), 0); /* torn */
	gp_acct_tally_sort(&t);
	assert_int_equal(t.records, 5);
	assert_int_equal(t.skipped, 1);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(t.rows[0].key, "alice");
	assert_int_equal(t.rows[0].sessions, 1);
	assert_string_equal(t.rows[1].key, "bob");
	assert_int_equal(t.rows[1].sessions, 2);
	assert_int_equal(t.rows[1].bytes_in, 40);
	assert_int_equal(t.rows[1].mem_peak, 200); /* the largest, not the sum */
	assert_true(t.rows[1].gpu_seconds == 40.0);
	assert_int_equal(t.rows[1].busy_sessions, 0);
	assert_int_equal(t.rows[1].calls, 2000);
	gp_acct_tally_deinit(&t);

	gp_acct_tally_init(&t, GP_ACCT_BY_DAY, 0, INT64_MAX);
	add(&t, "bob", "h1", d0 + 5, 10, 100);
	add(&t, "alice", "h1", d0 + day + 5, 20, 300);
	add(&t, "bob", "h2", d0 + day, 30, 200);
	gp_acct_tally_sort(&t);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(t.rows[0].key, "2025-12-01");
	assert_int_equal(t.rows[0].sessions, 1);
	assert_string_equal(t.rows[1].key, "2025-12-02");
	assert_int_equal(t.rows[1].bytes_in, 50);
	gp_acct_tally_deinit(&t);

	gp_acct_tally_init(&t, GP_ACCT_BY_HOST, 0, INT64_MAX);
	add(&t, "bob", "h1", d0 + 5, 10, 100);
	add(&t, "alice", "h1", d0 + day + 5, 20, 300);
	add(&t, "bob", "h2", d0 + day, 30, 200);
	gp_acct_tally_sort(&t);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(t.rows[0].key, "h1");
	assert_int_equal(t.rows[0].bytes_in, 30);
	gp_acct_tally_deinit(&t);

	/* An empty range counts records but adds none. */
	gp_acct_tally_init(&t, GP_ACCT_BY_TENANT, d0, d0);
	add(&t, "bob", "h1", d0, 10, 100);
	assert_int_equal(t.records, 1);
	assert_int_equal(t.nrows, 0);
	gp_acct_tally_deinit(&t);
}

/* ---- limits ---- */

static void test_row_limit(void **state)
{
	struct gp_acct_tally t;
	struct gp_acct_record r = sample();
	enum gp_acct_by by;

	gp_acct_tally_init(&t, GP_ACCT_BY_TENANT, 0, INT64_MAX);
	for (int i = 0; i < GP_ACCT_MAX_ROWS; i++) {
		snprintf(r.tenant, sizeof(r.tenant), "t%d", i);
		assert_int_equal(gp_acct_tally_add(&t, &r), 0);
	}
	snprintf(r.tenant, sizeof(r.tenant), "one-too-many");
	assert_int_equal(gp_acct_tally_add(&t, &r), -ENOSPC);
	snprintf(r.tenant, sizeof(r.tenant), "t7"); /* an existing group still adds */
	assert_int_equal(gp_acct_tally_add(&t, &r), 0);
	gp_acct_tally_deinit(&t);
	gp_acct_tally_deinit(NULL);

	assert_int_equal(gp_acct_by_parse("day", &by), 0);
	assert_int_equal(by, GP_ACCT_BY_DAY);
	assert_string_equal(gp_acct_by_name(by), "day");
	assert_int_equal(gp_acct_by_parse("week", &by), -EINVAL);
	/* A line past the limit is not read at all. */
	gp_acct_tally_init(&t, GP_ACCT_BY_TENANT, 0, INT64_MAX);
	{
		size_t n = GP_ACCT_LINE_MAX + 1;
		char *big = malloc(n);

		assert_non_null(big);
		memset(big, ' ', n);
		assert_int_equal(gp_acct_tally_line(&t, big, n), 0);
		free(big);
	}
	assert_int_equal(t.skipped, 1);
	gp_acct_tally_deinit(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_not_records),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_hostile_strings),
		cmocka_unit_test(test_longest_hostile_string),
		cmocka_unit_test(test_unknown_keys_skipped),
		cmocka_unit_test(test_ended),
		cmocka_unit_test(test_tally),
		cmocka_unit_test(test_row_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
