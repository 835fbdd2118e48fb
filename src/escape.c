/* escape.c -- client-controlled text made safe to show (see escape.h). */
#include <stdbool.h>
#include <string.h>

#include "escape.h"

size_t gp_utf8_char(const unsigned char *s, size_t n)
{
	unsigned cp, need, min;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] != 0x7f ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1, cp = s[0] & 0x1f, min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2, cp = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3, cp = s[0] & 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, an overlong lead (c0, c1) or past f4 */
	}
	if (n < need + 1)
		return 0;
	for (unsigned i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	if (cp >= 0x80 && cp <= 0x9f)
		return 0; /* C1 controls: CSI is U+009B */
	return need + 1;
}

size_t gp_escape(char *dst, size_t cap, const char *src, const char *also)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)(src ? src : "");
	size_t n = strlen((const char *)s), k = 0;

	if (cap == 0)
		return 0;
	while (n) {
		size_t c = gp_utf8_char(s, n);

		if (c && *s != '\\' && !(c == 1 && also && strchr(also, *s))) {
			if (k + c >= cap)
				break;
			memcpy(dst + k, s, c);
		} else {
			c = 1;
			if (k + 4 >= cap)
				break;
			dst[k] = '\\';
			dst[k + 1] = 'x';
			dst[k + 2] = hex[*s >> 4];
			dst[k + 3] = hex[*s & 15];
			k += 4;
			s++, n--;
			continue;
		}
		k += c;
		s += c;
		n -= c;
	}
	dst[k] = '\0';
	return k;
}

size_t gp_json_escape(char *dst, size_t cap, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)(src ? src : "");
	size_t n = strlen((const char *)s), k = 0;
	bool cut = false;

	while (n) {
		char esc[8];
		const unsigned char *piece = (const unsigned char *)esc;
		size_t c = gp_utf8_char(s, n), plen;

		if (c && *s != '"' && *s != '\\') {
			piece = s;
			plen = c;
		} else if (*s == '"' || *s == '\\') {
			esc[0] = '\\', esc[1] = (char)*s, plen = 2, c = 1;
		} else if (*s < 0x20 || *s == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[*s >> 4], esc[5] = hex[*s & 15], plen = 6, c = 1;
		} else if (*s == 0xc2 && n > 1 && s[1] >= 0x80 && s[1] <= 0x9f) {
			/* a C1 control, U+0080..U+009F, well-formed but not to be shown */
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[s[1] >> 4], esc[5] = hex[s[1] & 15], plen = 6, c = 2;
		} else {
			memcpy(esc, "\\ufffd", 6), plen = 6, c = 1;
		}
		if (!cut && k + plen < cap)
			memcpy(dst + k, piece, plen);
		else if (!cut) {
			cut = true;
			if (cap)
				dst[k] = '\0';
		}
		k += plen;
		s += c;
		n -= c;
	}
	if (!cut && cap)
		dst[k] = '\0';
	return k;
}
