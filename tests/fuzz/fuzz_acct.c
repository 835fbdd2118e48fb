/* fuzz_acct.c -- accounting records (src/acct.c) from arbitrary lines.
 *
 * The daemon reads its accounting files back to sum them, and a file may hold anything a
 * crash, a full disk or a person left there. A line either is a record or is counted as
 * skipped; one that parses is written again (gp_acct_format always fits) and reads back
 * with the same numbers; a time that parses formats and parses to the same instant.
 */
#include <string.h>

#include "acct.h"
#include "escape.h"
#include "fuzz.h"

static bool time_in_range(int64_t ms)
{
	/* Years 0001 to 9998 (four digits either side of any offset). */
	return ms >= -62135596800000 + 86400000 && ms <= 253370764800000 - 86400000;
}

/* Only bytes that are not UTF-8 grow when written and read back (to U+FFFD). */
static bool utf8(const char *s)
{
	size_t n = strlen(s);

	while (n) {
		size_t c = (unsigned char)*s < 0x80 ? 1 : gp_utf8_char((const unsigned char *)s, n);

		if (!c && n > 1 && (unsigned char)s[0] == 0xc2 && (unsigned char)s[1] >= 0x80 &&
		    (unsigned char)s[1] <= 0x9f)
			c = 2; /* a C1 control: escaped, and read back as the same two bytes */
		if (!c)
			return false;
		s += c;
		n -= c;
	}
	return true;
}

static bool strings_utf8(const struct gp_acct_record *r)
{
	const char *all[] = {r->pool_host,   r->tenant,	 r->client_cert, r->client_addr,
			     r->client_host, r->program, r->ended,	 r->detail};

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!utf8(all[i]))
			return false;
	for (uint32_t i = 0; i < r->ngpus; i++)
		if (!utf8(r->gpu_uuid[i]))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[65536]; /* a parsed record holds longer strings than the daemon writes */
	struct gp_acct_record r, back;
	struct gp_acct_tally t;
	char text[64], again[32];
	int64_t ms, ms2;
	int n;

	gp_acct_tally_init(&t, GP_ACCT_BY_DAY, 0, INT64_MAX);
	FUZZ_CHECK(gp_acct_tally_line(&t, (const char *)data, size) == 0);
	FUZZ_CHECK(t.records + t.skipped == 1);
	gp_acct_tally_deinit(&t);

	if (gp_acct_parse((const char *)data, size, &r) == 0) {
		FUZZ_CHECK(r.ngpus <= GP_STATS_MAX_DEVICES);
		FUZZ_CHECK(memchr(r.tenant, '\0', sizeof(r.tenant)) != NULL);
		n = gp_acct_format(&r, line, sizeof(line));
		FUZZ_CHECK(n > 0 && line[n - 1] == '\n' && !memchr(line, '\n', (size_t)n - 1));
		if (time_in_range(r.start_ms) && time_in_range(r.admitted_ms) &&
		    time_in_range(r.end_ms) && strings_utf8(&r)) {
			FUZZ_CHECK(gp_acct_parse(line, (size_t)n, &back) == 0);
			FUZZ_CHECK(back.session == r.session && back.client_pid == r.client_pid);
			FUZZ_CHECK(back.start_ms == r.start_ms && back.end_ms == r.end_ms &&
				   back.admitted_ms == r.admitted_ms);
			FUZZ_CHECK(back.ngpus == r.ngpus && back.mem_limit == r.mem_limit &&
				   back.bytes_in == r.bytes_in && back.bytes_out == r.bytes_out &&
				   back.calls == r.calls && back.mem_peak == r.mem_peak);
			FUZZ_CHECK(memcmp(back.gpu, r.gpu, r.ngpus * sizeof(r.gpu[0])) == 0);
		}
	}

	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (gp_time_parse(text, &ms) == 0 && time_in_range(ms)) {
			gp_time_format(ms, again, sizeof(again));
			FUZZ_CHECK(gp_time_parse(again, &ms2) == 0 && ms2 == ms);
		}
	}
	return 0;
}
