/* util.h -- small containers for softgpu: a string map and a growable array. */
#ifndef SG_UTIL_H
#define SG_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* String -> int map, open addressing. Keys are copied. */
struct sg_map {
	char **keys;
	int *vals;
	size_t cap;
	size_t n;
};

void sg_map_init(struct sg_map *m);
void sg_map_deinit(struct sg_map *m);
/* Inserts or overwrites; 0 or -ENOMEM. */
int sg_map_put(struct sg_map *m, const char *key, size_t keylen, int val);
/* The value, or -1 when absent. */
int sg_map_get(const struct sg_map *m, const char *key, size_t keylen);

/* Grows *arr (of elements of size `elem`) so that index `need` fits; 0 or -ENOMEM. */
int sg_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem);

char *sg_strndup(const char *s, size_t n);
/* A new string formatted as printf does, or NULL when out of memory. */
char *sg_strdup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
