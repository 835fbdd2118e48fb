/* ptx_lex.c -- PTX tokens: words, directives, numbers, strings, punctuation. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_int.h"

void sg_lex_init(struct sg_lower *L, const char *src)
{
	L->src = src;
	L->pos = 0;
	L->line = 1;
	L->have_ahead = false;
	memset(&L->tok, 0, sizeof(L->tok));
}

static bool word_start(int c)
{
	return isalpha(c) || c == '_' || c == '$' || c == '%';
}

static bool word_char(int c)
{
	return isalnum(c) || c == '_' || c == '$' || c == '.';
}

static void skip_space(struct sg_lower *L)
{
	const char *s = L->src;

	for (;;) {
		char c = s[L->pos];

		if (c == '\n') {
			L->line++;
			L->pos++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			L->pos++;
		} else if (c == '/' && s[L->pos + 1] == '/') {
			while (s[L->pos] && s[L->pos] != '\n')
				L->pos++;
		} else if (c == '/' && s[L->pos + 1] == '*') {
			L->pos += 2;
			while (s[L->pos] && !(s[L->pos] == '*' && s[L->pos + 1] == '/')) {
				if (s[L->pos] == '\n')
					L->line++;
				L->pos++;
			}
			if (s[L->pos])
				L->pos += 2;
		} else {
			return;
		}
	}
}

/* A word runs over [A-Za-z0-9_$.] and `::` (ld.global.L1::evict_last.f32). */
static size_t word_len(const char *p)
{
	size_t n = 0;

	for (;;) {
		if (word_char((unsigned char)p[n]))
			n++;
		else if (p[n] == ':' && p[n + 1] == ':')
			n += 2;
		else
			return n;
	}
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void lex_number(struct sg_lower *L, struct sg_tok *t)
{
	const char *p = L->src + L->pos;
	size_t n = 0;
	uint64_t v = 0;

	t->kind = SG_TK_INT;
	if (p[0] == '0' && (p[1] == 'f' || p[1] == 'F' || p[1] == 'd' || p[1] == 'D')) {
		int digits = (p[1] == 'f' || p[1] == 'F') ? 8 : 16;
		int k;

		for (k = 0; k < digits && hexval((unsigned char)p[2 + k]) >= 0; k++)
			v = v << 4 | (uint64_t)hexval((unsigned char)p[2 + k]);
		if (k != digits) {
			t->kind = SG_TK_BAD;
			t->len = 2 + k;
			return;
		}
		t->kind = SG_TK_FLOAT;
		t->fkind = digits == 8 ? 32 : 64;
		t->i = v;
		t->len = 2 + digits;
		return;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		n = 2;
		while (hexval((unsigned char)p[n]) >= 0)
			v = v << 4 | (uint64_t)hexval((unsigned char)p[n++]);
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		n = 2;
		while (p[n] == '0' || p[n] == '1')
			v = v << 1 | (uint64_t)(p[n++] - '0');
	} else {
		size_t m = 0;
		bool isfloat = false;

		while (isdigit((unsigned char)p[m]))
			m++;
		if (p[m] == '.' && isdigit((unsigned char)p[m + 1]))
			isfloat = true;
		if ((p[m] == 'e' || p[m] == 'E') &&
		    (isdigit((unsigned char)p[m + 1]) ||
		     ((p[m + 1] == '-' || p[m + 1] == '+') && isdigit((unsigned char)p[m + 2]))))
			isfloat = true;
		if (isfloat) {
			char *end;

			t->kind = SG_TK_FLOAT;
			t->fkind = 0;
			t->f = strtod(p, &end);
			t->len = (uint32_t)(end - p);
			return;
		}
		if (p[0] == '0') { /* octal */
			n = 1;
			while (p[n] >= '0' && p[n] <= '7')
				v = v * 8 + (uint64_t)(p[n++] - '0');
		} else {
			while (isdigit((unsigned char)p[n]))
				v = v * 10 + (uint64_t)(p[n++] - '0');
		}
	}
	if (p[n] == 'U' || p[n] == 'u') {
		t->is_unsigned = true;
		n++;
	}
	if (word_char((unsigned char)p[n]) && p[n] != '.')
		t->kind = SG_TK_BAD;
	t->i = v;
	t->len = (uint32_t)n;
}

static void lex_one(struct sg_lower *L, struct sg_tok *t)
{
	const char *p;

	skip_space(L);
	memset(t, 0, sizeof(*t));
	p = L->src + L->pos;
	t->p = p;
	t->line = L->line;
	if (*p == 0) {
		t->kind = SG_TK_EOF;
	} else if (*p == '.' && (isalpha((unsigned char)p[1]) || p[1] == '_')) {
		t->kind = SG_TK_DIR;
		t->len = (uint32_t)(1 + word_len(p + 1));
	} else if (word_start((unsigned char)*p)) {
		t->kind = SG_TK_WORD;
		t->len = (uint32_t)(1 + word_len(p + 1));
	} else if (isdigit((unsigned char)*p)) {
		lex_number(L, t);
	} else if (*p == '"') {
		size_t n = 1;

		while (p[n] && p[n] != '"' && p[n] != '\n') {
			if (p[n] == '\\' && p[n + 1])
				n++;
			n++;
		}
		t->kind = p[n] == '"' ? SG_TK_STR : SG_TK_BAD;
		t->len = (uint32_t)(p[n] == '"' ? n + 1 : n);
	} else if (strchr(",;:[]{}()@!+-|<>=", *p)) {
		t->kind = SG_TK_PUNCT;
		t->len = 1;
	} else {
		t->kind = SG_TK_BAD;
		t->len = 1;
	}
	L->pos += t->len;
}

int sg_lex_next(struct sg_lower *L)
{
	if (L->have_ahead) {
		L->tok = L->ahead;
		L->have_ahead = false;
	} else {
		lex_one(L, &L->tok);
	}
	return L->tok.kind;
}

const struct sg_tok *sg_lex_peek(struct sg_lower *L)
{
	if (!L->have_ahead) {
		lex_one(L, &L->ahead);
		L->have_ahead = true;
	}
	return &L->ahead;
}

bool sg_tok_is(const struct sg_tok *t, int kind, const char *text)
{
	size_t n = strlen(text);

	return t->kind == kind && t->len == n && memcmp(t->p, text, n) == 0;
}

bool sg_tok_punct(const struct sg_tok *t, char c)
{
	return t->kind == SG_TK_PUNCT && t->p[0] == c;
}
