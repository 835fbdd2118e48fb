/* acct.c -- accounting records as JSON lines, RFC 3339 times and the tally (see acct.h). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acct.h"
#include "error.h"
#include "escape.h"
#include "log.h"

/* ---- times ------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil):
 * no timegm, so no time zone or locale can change the answer. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void gp_time_format(int64_t ms, char *out, size_t cap)
{
	int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
	time_t t = (time_t)secs;
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(out, cap, "invalid");
		return;
	}
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - secs * 1000));
}

/* n decimal digits at *s into v, moving *s past them. */
static int digits(const char **s, int n, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (**s < '0' || **s > '9')
			return -EINVAL;
		*v = *v * 10 + (unsigned)(**s - '0');
	}
	return 0;
}

int gp_time_parse(const char *s, int64_t *ms)
{
	static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	unsigned y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, oh, om;
	int64_t off = 0, leap;

	if (!s || !ms)
		return -EINVAL;
	if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' ||
	    digits(&s, 2, &d))
		return -EINVAL;
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
		return -EINVAL;
	if (*s) {
		if (*s != 'T' && *s != 't' && *s != ' ')
			return -EINVAL;
		s++;
		if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) || h > 23 || mi > 59)
			return -EINVAL;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &sec) || sec > 60)
				return -EINVAL;
			if (*s == '.') {
				unsigned scale = 100, n = 0;

				for (s++; *s >= '0' && *s <= '9'; s++, n++) {
					frac += (unsigned)(*s - '0') * scale;
					scale /= 10;
				}
				if (n == 0 || n > 9)
					return -EINVAL;
			}
		}
		if (*s == 'Z' || *s == 'z') {
			s++;
		} else if (*s == '+' || *s == '-') {
			int sign = *s++ == '-' ? -1 : 1;

			if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om) || oh > 23 ||
			    om > 59)
				return -EINVAL;
			off = sign * (int64_t)(oh * 3600 + om * 60);
		} else {
			return -EINVAL;
		}
		if (*s)
			return -EINVAL;
	}
	*ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) - off) * 1000 + frac;
	return 0;
}

void gp_uuid_format(const uint8_t uuid[16], char out[GP_ACCT_UUID])
{
	int k = sprintf(out, "GPU-");

	for (int i = 0; i < 16; i++) {
		k += sprintf(out + k, "%02x", uuid[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			out[k++] = '-';
	}
	out[k] = '\0';
}

const char *gp_acct_ended(const char *pool_code, int sig, int64_t status, uint32_t worker_seen,
			  char *detail, size_t len)
{
	if (sig)
		snprintf(detail, len, "worker ended by signal %d (%s)", sig, strsignal(sig));
	else if (status)
		snprintf(detail, len, "worker exit status %lld", (long long)status);
	else if (len)
		detail[0] = '\0';
	if (pool_code)
		return pool_code;
	if (sig)
		return sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP
			       ? "killed"
			       : "crashed";
	switch (worker_seen) {
	case GP_WORKER_END_GOODBYE:
		return "client_closed";
	case GP_WORKER_END_CLIENT_GONE:
		return "client_gone";
	case GP_WORKER_END_PROTOCOL:
		return "protocol_error";
	case GP_WORKER_END_POOL:
		/* Told to end by a signal, but not by the pool, which would have said why. */
		if (len && !detail[0])
			snprintf(detail, len,
				 "worker told to end by a signal the pool did not send");
		return "killed";
	}
	return status ? "worker_failed" : "unknown";
}

/* ---- writing a record --------------------------------------------------------------- */

struct out {
	char *p;
	size_t cap, len;
	bool over;
};

static void put(struct out *o, const char *fmt, ...) GP_PRINTF(2, 3);

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len)
		o->over = true;
	else
		o->len += (size_t)n;
}

/* A JSON string: every string of a record may be the client's choice (escape.h). */
static void put_str(struct out *o, const char *v)
{
	size_t n;

	put(o, "\"");
	if (o->over)
		return;
	n = gp_json_escape(o->p + o->len, o->cap - o->len, v);
	if (n >= o->cap - o->len) {
		o->over = true;
		return;
	}
	o->len += n;
	put(o, "\"");
}

static void put_key_str(struct out *o, const char *key, const char *v)
{
	put(o, ",\"%s\":", key);
	put_str(o, v);
}

static void put_key_time(struct out *o, const char *key, int64_t ms)
{
	char t[32];

	gp_time_format(ms, t, sizeof(t));
	put(o, ",\"%s\":\"%s\"", key, t);
}

int gp_acct_format(const struct gp_acct_record *r, char *dst, size_t cap)
{
	struct out o = {.p = dst, .cap = cap};

	if (!r || !dst || cap == 0)
		return -EINVAL;
	put(&o, "{\"v\":%d,\"session\":%llu", GP_ACCT_VERSION, (unsigned long long)r->session);
	put_key_str(&o, "pool_host", r->pool_host);
	put_key_str(&o, "tenant", r->tenant);
	put_key_str(&o, "client_cert", r->client_cert);
	put_key_str(&o, "client_addr", r->client_addr);
	put_key_str(&o, "client_host", r->client_host);
	put(&o, ",\"client_pid\":%u", r->client_pid);
	put_key_str(&o, "program", r->program);
	put_key_time(&o, "start", r->start_ms);
	put_key_time(&o, "admitted", r->admitted_ms);
	put_key_time(&o, "end", r->end_ms);
	put(&o, ",\"held_s\":%.3f,\"gpus\":[", r->held_s);
	for (uint32_t i = 0; i < r->ngpus && i < GP_STATS_MAX_DEVICES; i++)
		put(&o, "%s%u", i ? "," : "", r->gpu[i]);
	put(&o, "],\"gpu_uuids\":[");
	for (uint32_t i = 0; i < r->ngpus && i < GP_STATS_MAX_DEVICES; i++) {
		if (i)
			put(&o, ",");
		put_str(&o, r->gpu_uuid[i]);
	}
	put(&o, "],\"mem_limit\":%llu,\"gpu_seconds\":%.3f", (unsigned long long)r->mem_limit,
	    r->gpu_seconds);
	if (r->busy_known)
		put(&o, ",\"gpu_busy_seconds\":%.6f", r->gpu_busy_seconds);
	else
		put(&o, ",\"gpu_busy_seconds\":null");
	put(&o,
	    ",\"mem_gib_seconds\":%.6f,\"mem_peak\":%llu,\"bytes_in\":%llu,\"bytes_out\":%llu,"
	    "\"calls\":%llu",
	    r->mem_gib_seconds, (unsigned long long)r->mem_peak, (unsigned long long)r->bytes_in,
	    (unsigned long long)r->bytes_out, (unsigned long long)r->calls);
	put_key_str(&o, "ended", r->ended);
	put_key_str(&o, "detail", r->detail);
	put(&o, "}\n");
	return o.over ? -ENOSPC : (int)o.len;
}

/* ---- reading a record --------------------------------------------------------------- */

struct jp {
	const char *s, *end;
};

static void ws(struct jp *j)
{
	while (j->s < j->end && (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r'))
		j->s++;
}

static bool eat(struct jp *j, char c)
{
	ws(j);
	if (j->s < j->end && *j->s == c) {
		j->s++;
		return true;
	}
	return false;
}

static int hex4(struct jp *j, unsigned *v)
{
	*v = 0;
	if (j->end - j->s < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = *j->s++;

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

/* Appends n bytes to out (cap with the terminator); out NULL: only checks. */
static int emit(char *out, size_t cap, size_t *k, const char *b, size_t n)
{
	if (!out)
		return 0;
	if (*k + n >= cap)
		return -1;
	memcpy(out + *k, b, n);
	*k += n;
	return 0;
}

/* A JSON string into out (decoded, terminated); out NULL skips it. */
static int jstring(struct jp *j, char *out, size_t cap)
{
	size_t k = 0;

	if (!eat(j, '"'))
		return -1;
	while (j->s < j->end && *j->s != '"') {
		unsigned char c = (unsigned char)*j->s++;
		char b[4];
		unsigned cp, lo;

		if (c < 0x20)
			return -1;
		if (c != '\\') {
			if (emit(out, cap, &k, (const char *)&c, 1))
				return -1;
			continue;
		}
		if (j->s >= j->end)
			return -1;
		c = (unsigned char)*j->s++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			b[0] = (char)c;
			break;
		case 'b':
			b[0] = '\b';
			break;
		case 'f':
			b[0] = '\f';
			break;
		case 'n':
			b[0] = '\n';
			break;
		case 'r':
			b[0] = '\r';
			break;
		case 't':
			b[0] = '\t';
			break;
		case 'u':
			if (hex4(j, &cp))
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->end - j->s < 6 || j->s[0] != '\\' || j->s[1] != 'u')
					return -1;
				j->s += 2;
				if (hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
				return -1; /* a lone low surrogate; a NUL no C string holds */
			}
			if (cp < 0x80) {
				b[0] = (char)cp;
				if (emit(out, cap, &k, b, 1))
					return -1;
			} else if (cp < 0x800) {
				b[0] = (char)(0xc0 | cp >> 6);
				b[1] = (char)(0x80 | (cp & 0x3f));
				if (emit(out, cap, &k, b, 2))
					return -1;
			} else if (cp < 0x10000) {
				b[0] = (char)(0xe0 | cp >> 12);
				b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				b[2] = (char)(0x80 | (cp & 0x3f));
				if (emit(out, cap, &k, b, 3))
					return -1;
			} else {
				b[0] = (char)(0xf0 | cp >> 18);
				b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
				b[3] = (char)(0x80 | (cp & 0x3f));
				if (emit(out, cap, &k, b, 4))
					return -1;
			}
			continue;
		default:
			return -1;
		}
		if (emit(out, cap, &k, b, 1))
			return -1;
	}
	if (j->s >= j->end)
		return -1;
	j->s++;
	if (out)
		out[k] = '\0';
	return 0;
}

/* A JSON number; integral ones without a sign also exactly, as u (is_uint). */
static int jnumber(struct jp *j, double *d, uint64_t *u, bool *is_uint)
{
	const char *p, *start;
	char buf[64];
	bool integral = true;

	ws(j);
	p = start = j->s;
	if (p < j->end && *p == '-')
		p++;
	if (p >= j->end || *p < '0' || *p > '9')
		return -1;
	if (*p == '0')
		p++;
	else
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	if (p < j->end && *p == '.') {
		integral = false;
		if (++p >= j->end || *p < '0' || *p > '9')
			return -1;
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		integral = false;
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return -1;
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if ((size_t)(p - start) >= sizeof(buf))
		return -1;
	memcpy(buf, start, (size_t)(p - start));
	buf[p - start] = '\0';
	j->s = p;
	*d = strtod(buf, NULL);
	*is_uint = integral && buf[0] != '-';
	if (*is_uint) {
		errno = 0;
		*u = strtoull(buf, NULL, 10);
		if (errno)
			*is_uint = false;
	}
	return 0;
}

static bool word(struct jp *j, const char *w)
{
	size_t n = strlen(w);

	ws(j);
	if ((size_t)(j->end - j->s) >= n && memcmp(j->s, w, n) == 0) {
		j->s += n;
		return true;
	}
	return false;
}

/* Any JSON value, not kept: keys a newer writer added. */
static int jskip(struct jp *j, int depth)
{
	double d;
	uint64_t u;
	bool b;

	if (depth > 16)
		return -1;
	ws(j);
	if (j->s >= j->end)
		return -1;
	switch (*j->s) {
	case '"':
		return jstring(j, NULL, 0);
	case '{':
	case '[': {
		char close = *j->s == '{' ? '}' : ']';

		j->s++;
		if (eat(j, close))
			return 0;
		do {
			if (close == '}' && (jstring(j, NULL, 0) || !eat(j, ':')))
				return -1;
			if (jskip(j, depth + 1))
				return -1;
		} while (eat(j, ','));
		return eat(j, close) ? 0 : -1;
	}
	default:
		if (word(j, "true") || word(j, "false") || word(j, "null"))
			return 0;
		return jnumber(j, &d, &u, &b);
	}
}

enum ftype {
	F_VERSION,
	F_U64,
	F_U32,
	F_STR,
	F_TIME,
	F_DBL,
	F_DBL_OR_NULL,
	F_GPUS,
	F_UUIDS,
};

/* Fields the tally needs to trust a record. */
#define REQ_VERSION 1u
#define REQ_SESSION 2u
#define REQ_TENANT 4u
#define REQ_END 8u
#define REQ_ALL (REQ_VERSION | REQ_SESSION | REQ_TENANT | REQ_END)

#define R(f) offsetof(struct gp_acct_record, f)
static const struct field {
	const char *name;
	enum ftype type;
	size_t off, size;
	unsigned req;
} fields[] = {
	{"v", F_VERSION, 0, 0, REQ_VERSION},
	{"session", F_U64, R(session), 0, REQ_SESSION},
	{"pool_host", F_STR, R(pool_host), GP_ACCT_STR, 0},
	{"tenant", F_STR, R(tenant), GP_ACCT_STR, REQ_TENANT},
	{"client_cert", F_STR, R(client_cert), GP_ACCT_STR, 0},
	{"client_addr", F_STR, R(client_addr), GP_ACCT_STR, 0},
	{"client_host", F_STR, R(client_host), GP_ACCT_STR, 0},
	{"client_pid", F_U32, R(client_pid), 0, 0},
	{"program", F_STR, R(program), GP_ACCT_STR, 0},
	{"start", F_TIME, R(start_ms), 0, 0},
	{"admitted", F_TIME, R(admitted_ms), 0, 0},
	{"end", F_TIME, R(end_ms), 0, REQ_END},
	{"held_s", F_DBL, R(held_s), 0, 0},
	{"gpus", F_GPUS, 0, 0, 0},
	{"gpu_uuids", F_UUIDS, 0, 0, 0},
	{"mem_limit", F_U64, R(mem_limit), 0, 0},
	{"gpu_seconds", F_DBL, R(gpu_seconds), 0, 0},
	{"gpu_busy_seconds", F_DBL_OR_NULL, R(gpu_busy_seconds), 0, 0},
	{"mem_gib_seconds", F_DBL, R(mem_gib_seconds), 0, 0},
	{"mem_peak", F_U64, R(mem_peak), 0, 0},
	{"bytes_in", F_U64, R(bytes_in), 0, 0},
	{"bytes_out", F_U64, R(bytes_out), 0, 0},
	{"calls", F_U64, R(calls), 0, 0},
	{"ended", F_STR, R(ended), sizeof(((struct gp_acct_record *)0)->ended), 0},
	{"detail", F_STR, R(detail), GP_ACCT_STR, 0},
};
#undef R

static int jfield(struct jp *j, const struct field *f, struct gp_acct_record *r)
{
	char *at = (char *)r + f->off, t[64];
	double d;
	uint64_t u;
	bool is_uint;
	uint32_t n = 0;

	switch (f->type) {
	case F_VERSION:
		return jnumber(j, &d, &u, &is_uint) || !is_uint || u != GP_ACCT_VERSION ? -1 : 0;
	case F_U64:
		if (jnumber(j, &d, &u, &is_uint) || !is_uint)
			return -1;
		memcpy(at, &u, sizeof(u));
		return 0;
	case F_U32: {
		uint32_t v;

		if (jnumber(j, &d, &u, &is_uint) || !is_uint || u > UINT32_MAX)
			return -1;
		v = (uint32_t)u;
		memcpy(at, &v, sizeof(v));
		return 0;
	}
	case F_STR:
		return jstring(j, at, f->size);
	case F_TIME: {
		int64_t ms;

		if (jstring(j, t, sizeof(t)) || gp_time_parse(t, &ms))
			return -1;
		memcpy(at, &ms, sizeof(ms));
		return 0;
	}
	case F_DBL_OR_NULL:
		if (word(j, "null")) {
			r->busy_known = false;
			return 0;
		}
		r->busy_known = true;
		/* fall through */
	case F_DBL:
		if (jnumber(j, &d, &u, &is_uint))
			return -1;
		memcpy(at, &d, sizeof(d));
		return 0;
	case F_GPUS:
	case F_UUIDS:
		if (!eat(j, '['))
			return -1;
		if (eat(j, ']'))
			goto done;
		do {
			if (n == GP_STATS_MAX_DEVICES)
				return -1;
			if (f->type == F_UUIDS) {
				if (jstring(j, r->gpu_uuid[n], GP_ACCT_UUID))
					return -1;
			} else {
				if (jnumber(j, &d, &u, &is_uint) || !is_uint || u > UINT32_MAX)
					return -1;
				r->gpu[n] = (uint32_t)u;
			}
			n++;
		} while (eat(j, ','));
		if (!eat(j, ']'))
			return -1;
	done:
		if (f->type == F_GPUS)
			r->ngpus = n;
		return 0;
	}
	return -1;
}

int gp_acct_parse(const char *line, size_t len, struct gp_acct_record *r)
{
	struct jp j = {line, line + len};
	const size_t nfields = sizeof(fields) / sizeof(fields[0]);
	unsigned seen = 0;
	size_t next = 0; /* the writer's order: the key after the last one is tried first */
	char key[64];

	if (!line || !r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	if (!eat(&j, '{'))
		return GP_EDECODE;
	if (!eat(&j, '}')) {
		do {
			const struct field *f = NULL;

			if (jstring(&j, key, sizeof(key)) || !eat(&j, ':'))
				return GP_EDECODE;
			for (size_t k = 0; k < nfields && !f; k++) {
				size_t i = (next + k) % nfields;

				if (strcmp(fields[i].name, key) == 0) {
					f = &fields[i];
					next = i + 1;
				}
			}
			if (f ? jfield(&j, f, r) : jskip(&j, 0))
				return GP_EDECODE;
			if (f)
				seen |= f->req;
		} while (eat(&j, ','));
		if (!eat(&j, '}'))
			return GP_EDECODE;
	}
	ws(&j);
	if (j.s != j.end || (seen & REQ_ALL) != REQ_ALL)
		return GP_EDECODE;
	return 0;
}

/* ---- the tally ---------------------------------------------------------------------- */

int gp_acct_by_parse(const char *s, enum gp_acct_by *by)
{
	if (!s || !by)
		return -EINVAL;
	if (strcmp(s, "tenant") == 0)
		*by = GP_ACCT_BY_TENANT;
	else if (strcmp(s, "host") == 0)
		*by = GP_ACCT_BY_HOST;
	else if (strcmp(s, "day") == 0)
		*by = GP_ACCT_BY_DAY;
	else
		return -EINVAL;
	return 0;
}

const char *gp_acct_by_name(enum gp_acct_by by)
{
	switch (by) {
	case GP_ACCT_BY_TENANT:
		return "tenant";
	case GP_ACCT_BY_HOST:
		return "host";
	case GP_ACCT_BY_DAY:
		return "day";
	}
	return "?";
}

void gp_acct_tally_init(struct gp_acct_tally *t, enum gp_acct_by by, int64_t since_ms,
			int64_t until_ms)
{
	memset(t, 0, sizeof(*t));
	t->by = by;
	t->since_ms = since_ms;
	t->until_ms = until_ms;
}

void gp_acct_tally_deinit(struct gp_acct_tally *t)
{
	if (!t)
		return;
	free(t->rows);
	t->rows = NULL;
	t->nrows = t->cap = 0;
}

int gp_acct_tally_add(struct gp_acct_tally *t, const struct gp_acct_record *r)
{
	struct gp_acct_row *row = NULL;
	char key[GP_ACCT_STR];

	t->records++;
	if (r->end_ms < t->since_ms || r->end_ms >= t->until_ms)
		return 0;
	if (t->by == GP_ACCT_BY_TENANT) {
		snprintf(key, sizeof(key), "%s", r->tenant);
	} else if (t->by == GP_ACCT_BY_HOST) {
		snprintf(key, sizeof(key), "%s", r->client_host);
	} else {
		gp_time_format(r->end_ms, key, sizeof(key));
		key[10] = '\0'; /* YYYY-MM-DD */
	}
	/* Linear: the rows are tenants, hosts or days, a few hundred at most in practice. */
	for (size_t i = 0; i < t->nrows && !row; i++)
		if (strcmp(t->rows[i].key, key) == 0)
			row = &t->rows[i];
	if (!row) {
		if (t->nrows == GP_ACCT_MAX_ROWS)
			return -ENOSPC;
		if (t->nrows == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct gp_acct_row *nr = realloc(t->rows, cap * sizeof(*nr));

			if (!nr)
				return -ENOMEM;
			t->rows = nr;
			t->cap = cap;
		}
		row = &t->rows[t->nrows++];
		memset(row, 0, sizeof(*row));
		memcpy(row->key, key, sizeof(key));
	}
	row->sessions++;
	row->gpu_seconds += r->gpu_seconds;
	row->mem_gib_seconds += r->mem_gib_seconds;
	if (r->busy_known) {
		row->busy_sessions++;
		row->gpu_busy_seconds += r->gpu_busy_seconds;
	}
	if (r->mem_peak > row->mem_peak)
		row->mem_peak = r->mem_peak;
	row->bytes_in += r->bytes_in;
	row->bytes_out += r->bytes_out;
	row->calls += r->calls;
	return 0;
}

int gp_acct_tally_line(struct gp_acct_tally *t, const char *line, size_t len)
{
	struct gp_acct_record r;

	if (len > GP_ACCT_LINE_MAX || gp_acct_parse(line, len, &r)) {
		t->skipped++;
		return 0;
	}
	return gp_acct_tally_add(t, &r);
}

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gp_acct_row *)a)->key, ((const struct gp_acct_row *)b)->key);
}

void gp_acct_tally_sort(struct gp_acct_tally *t)
{
	if (t->nrows > 1)
		qsort(t->rows, t->nrows, sizeof(*t->rows), row_cmp);
}
