/* acct.h -- per-session accounting records: one JSON line per ended session, and their sums.
 *
 * The supervisor writes a record when a session that held GPUs ends (daemon/supervisor/
 * accounting.c does the file I/O); `poolctl usage` asks it to sum the records over a time
 * range. This file is the I/O-free half: the record's JSON form both ways, RFC 3339 times,
 * and the tally (tests/unit/test_acct.c). docs/operations.md ("Metering") defines each
 * field; the sums add up across daemons, so a fleet poolctl can add the answers of several.
 *
 * The reader is a small JSON parser of exactly what the writer writes (one flat object of
 * strings, numbers, null and arrays of those); unknown keys are skipped, whatever their
 * value, so that a newer writer's records still sum. Anything else is not a record.
 */
#ifndef GP_ACCT_H
#define GP_ACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define GP_ACCT_VERSION 1
#define GP_ACCT_LINE_MAX 16384 /* longer lines are not records */
#define GP_ACCT_MAX_ROWS 10000 /* groups one tally may hold */
/* Every string field, terminator included: three times the daemon's 128-byte strings, as
 * a byte that is not UTF-8 is written as U+FFFD and so reads back as three. */
#define GP_ACCT_STR 384
#define GP_ACCT_UUID 41 /* "GPU-" and the 36 characters of a UUID, terminated */

struct gp_acct_record {
	uint64_t session;
	char pool_host[GP_ACCT_STR]; /* the daemon's host name */
	char tenant[GP_ACCT_STR];
	char client_cert[GP_ACCT_STR];	       /* the certificate's (or local user's) name, or "" */
	char client_addr[GP_ACCT_STR];	       /* HOST:PORT, or local:uid=U,pid=P */
	char client_host[GP_ACCT_STR];	       /* as the Hello says */
	uint32_t client_pid;		       /* as the Hello says */
	char program[GP_ACCT_STR];	       /* as the Hello says */
	int64_t start_ms, admitted_ms, end_ms; /* unix milliseconds */
	double held_s;			       /* seconds from admission to the end */
	uint32_t ngpus;
	uint32_t gpu[GP_STATS_MAX_DEVICES];
	char gpu_uuid[GP_STATS_MAX_DEVICES][GP_ACCT_UUID];
	uint64_t mem_limit; /* bytes reserved on each GPU */
	double gpu_seconds; /* ngpus * held_s */
	bool busy_known;    /* false: gpu_busy_seconds is null (not measured) */
	double gpu_busy_seconds;
	double mem_gib_seconds; /* mem_limit * ngpus / 2^30 * held_s */
	uint64_t mem_peak, bytes_in, bytes_out, calls;
	char ended[32];		  /* how it ended: "client_closed", "evicted", ... */
	char detail[GP_ACCT_STR]; /* e.g. the signal that killed the worker; "" */
};

/* Writes r as one JSON line, '\n' included, every string JSON-escaped. Returns its length,
 * or -ENOSPC when cap is too small (then dst holds nothing usable). */
int gp_acct_format(const struct gp_acct_record *r, char *dst, size_t cap);
/* Reads one line (without or with its '\n') into r. 0, or GP_EDECODE when it is not a
 * record: not JSON of this shape, a string too long, a required field (v, session, tenant,
 * end) missing, or a version this reader does not know. */
int gp_acct_parse(const char *line, size_t len, struct gp_acct_record *r);

/*
 * How a session ended, for its record's `ended`, first match wins: what the pool did
 * (pool_code: "evicted", "idle_timeout", "drained", "kernel_timeout"; NULL when it did
 * not end the session), then a signal that killed the worker ("killed": SIGKILL, SIGTERM,
 * SIGINT, SIGHUP; "crashed": any other), then what the worker saw (enum gp_worker_end;
 * told to end by a signal the pool did not send is "killed" too),
 * then a failing exit status ("worker_failed"), else "unknown". detail gets the signal
 * or exit status, or "".
 */
const char *gp_acct_ended(const char *pool_code, int sig, int64_t status, uint32_t worker_seen,
			  char *detail, size_t len);

/* A GPU's UUID as NVIDIA writes it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
void gp_uuid_format(const uint8_t uuid[16], char out[GP_ACCT_UUID]);

/* "2026-12-01T11:18:10.123Z" for unix milliseconds ms; out needs 32 bytes. */
void gp_time_format(int64_t ms, char *out, size_t cap);
/* Parses an RFC 3339 time ("2026-12-01T11:18:10Z", fractions and +HH:MM offsets allowed,
 * a space for the T) or a date ("2026-12-01", midnight UTC) into unix milliseconds.
 * 0 or -EINVAL. */
int gp_time_parse(const char *s, int64_t *ms);

enum gp_acct_by {
	GP_ACCT_BY_TENANT = 0,
	GP_ACCT_BY_HOST, /* the client's host, as its Hello says */
	GP_ACCT_BY_DAY,	 /* the UTC day the session ended */
};

/* "tenant", "host", "day" to the enum: 0 or -EINVAL. */
int gp_acct_by_parse(const char *s, enum gp_acct_by *by);
const char *gp_acct_by_name(enum gp_acct_by by);

/* The sums of one group. Every figure adds across records and daemons, but mem_peak,
 * which is the largest. */
struct gp_acct_row {
	char key[GP_ACCT_STR];
	uint64_t sessions;
	double gpu_seconds, mem_gib_seconds;
	uint64_t busy_sessions; /* of sessions, those with a measured gpu_busy_seconds */
	double gpu_busy_seconds;
	uint64_t mem_peak, bytes_in, bytes_out, calls;
};

struct gp_acct_tally {
	enum gp_acct_by by;
	int64_t since_ms, until_ms; /* a record counts when since <= end < until */
	struct gp_acct_row *rows;
	size_t nrows, cap;
	uint64_t records; /* well-formed records seen, in the range or not */
	uint64_t skipped; /* lines that were not records */
};

/* until_ms <= since_ms is an empty range; INT64_MAX: no end. */
void gp_acct_tally_init(struct gp_acct_tally *t, enum gp_acct_by by, int64_t since_ms,
			int64_t until_ms);
void gp_acct_tally_deinit(struct gp_acct_tally *t);
/* Counts one line: a record in the range is added to its group, one that is not a record
 * is counted in skipped. 0, -ENOMEM, or -ENOSPC past GP_ACCT_MAX_ROWS groups. */
int gp_acct_tally_line(struct gp_acct_tally *t, const char *line, size_t len);
/* Adds one record as gp_acct_tally_line does (it is counted in records). */
int gp_acct_tally_add(struct gp_acct_tally *t, const struct gp_acct_record *r);
/* Orders the rows by key. */
void gp_acct_tally_sort(struct gp_acct_tally *t);

#endif
