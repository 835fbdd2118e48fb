/* util.c -- a string map and a growable array for the PTX parser. */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

void sg_map_init(struct sg_map *m)
{
	memset(m, 0, sizeof(*m));
}

void sg_map_deinit(struct sg_map *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->keys[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t find(const struct sg_map *m, const char *key, size_t len)
{
	size_t i = hash(key, len) & (m->cap - 1);

	while (m->keys[i] != NULL) {
		if (strncmp(m->keys[i], key, len) == 0 && m->keys[i][len] == 0)
			return i;
		i = (i + 1) & (m->cap - 1);
	}
	return i;
}

static int rehash(struct sg_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	char **keys = calloc(ncap, sizeof(*keys));
	int *vals = calloc(ncap, sizeof(*vals));
	struct sg_map old = *m;

	if (keys == NULL || vals == NULL) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	for (size_t i = 0; i < old.cap; i++) {
		size_t j;

		if (old.keys[i] == NULL)
			continue;
		j = find(m, old.keys[i], strlen(old.keys[i]));
		m->keys[j] = old.keys[i];
		m->vals[j] = old.vals[i];
	}
	free(old.keys);
	free(old.vals);
	return 0;
}

int sg_map_put(struct sg_map *m, const char *key, size_t len, int val)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && rehash(m) != 0)
		return -ENOMEM;
	i = find(m, key, len);
	if (m->keys[i] == NULL) {
		m->keys[i] = sg_strndup(key, len);
		if (m->keys[i] == NULL)
			return -ENOMEM;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

int sg_map_get(const struct sg_map *m, const char *key, size_t len)
{
	size_t i;

	if (m->cap == 0)
		return -1;
	i = find(m, key, len);
	return m->keys[i] ? m->vals[i] : -1;
}

int sg_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem)
{
	void **p = arr;
	uint32_t ncap;
	void *n;

	if (need < *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap <= need) {
		if (ncap > UINT32_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	n = realloc(*p, (size_t)ncap * elem);
	if (n == NULL)
		return -ENOMEM;
	memset((char *)n + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
	*p = n;
	*cap = ncap;
	return 0;
}

char *sg_strndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *sg_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (s == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}
