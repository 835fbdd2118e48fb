/* slice.c -- GPUPOOL_SLICE's syntax (slice.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h" /* gp_parse_size */
#include "slice.h"

#define SYNTAX \
	"expected a MIG profile such as 1g.10gb, or mem>=SIZE and/or sms>=N, e.g. mem>=8G,sms>=20"

static int fail(char *err, size_t len, const char *s, const char *why)
{
	if (err && len)
		snprintf(err, len, "GPUPOOL_SLICE=%.64s%s: %s (%s)", s, strlen(s) > 64 ? "..." : "",
			 why, SYNTAX);
	return -1;
}

/* "Ng.Mgb" exactly (case aside): N 1-7, M 1-99999, no leading zeros (so it fits profile[]). */
static bool is_profile(const char *s)
{
	const char *p = s;
	char *end;
	unsigned long n, m;

	if (!isdigit((unsigned char)*p) || *p == '0')
		return false;
	n = strtoul(p, &end, 10);
	if (tolower((unsigned char)end[0]) != 'g' || end[1] != '.' ||
	    !isdigit((unsigned char)end[2]) || end[2] == '0')
		return false;
	m = strtoul(end + 2, &end, 10);
	return n >= 1 && n <= 7 && m >= 1 && m <= 99999 && strcasecmp(end, "gb") == 0 &&
	       end - s + 2 < (ptrdiff_t)sizeof(((struct gp_slice *)0)->profile);
}

int gp_slice_parse(const char *s, struct gp_slice *out, char *err, size_t errlen)
{
	char buf[128], *save = NULL;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		*err = '\0';
	if (s == NULL || *s == 0)
		return 0;
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, s, "too long");
	if (is_profile(s)) {
		out->set = true;
		for (size_t i = 0; s[i]; i++)
			out->profile[i] = (char)tolower((unsigned char)s[i]);
		return 0;
	}
	if (strncmp(s, "mem", 3) != 0 && strncmp(s, "sms", 3) != 0)
		return fail(err, errlen, s, "not a profile");
	if (s[strlen(s) - 1] == ',' || strstr(s, ",,"))
		return fail(err, errlen, s, "an empty minimum");
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strncmp(tok, "mem>=", 5) == 0) {
			if (out->min_mem || gp_parse_size(tok + 5, &out->min_mem) ||
			    out->min_mem == 0)
				return fail(err, errlen, s, "mem>= takes a size above 0, once");
		} else if (strncmp(tok, "sms>=", 5) == 0) {
			char *end;
			unsigned long v;

			if (!isdigit((unsigned char)tok[5]))
				return fail(err, errlen, s, "sms>= takes a count above 0, once");
			v = strtoul(tok + 5, &end, 10);
			if (*end || v == 0 || v > 100000 || out->min_sms)
				return fail(err, errlen, s, "sms>= takes a count above 0, once");
			out->min_sms = (uint32_t)v;
		} else {
			return fail(err, errlen, s, "a minimum is mem>=SIZE or sms>=N");
		}
	}
	if (!out->min_mem && !out->min_sms)
		return fail(err, errlen, s, "no minimum");
	out->set = true;
	return 0;
}

bool gp_slice_matches(const struct gp_slice *sl, const char *profile, uint64_t mem, uint32_t sms)
{
	if (!sl->set)
		return true;
	if (sl->profile[0])
		return profile && strcasecmp(sl->profile, profile) == 0;
	return mem >= sl->min_mem && sms >= sl->min_sms;
}
