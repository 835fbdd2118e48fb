/* handle.c -- the registry of live handles: a stale or foreign handle is an error, not a crash. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "softgpu.h"

/*
 * Every handle softgpu gives out (contexts, streams, events, modules,
 * functions, libraries, kernels) is registered here with its kind and removed
 * when destroyed; API calls check a handle before touching it. An open-
 * addressing hash set of pointers under a read-write lock.
 */

struct slot {
	const void *p;
	int kind; /* 0 empty, -1 deleted */
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct slot *tab;
static size_t cap, used;

static size_t hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct slot *find(const void *p)
{
	size_t i;

	if (cap == 0)
		return NULL;
	i = hash(p) & (cap - 1);
	for (size_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		if (tab[i].kind == 0)
			return NULL;
		if (tab[i].kind > 0 && tab[i].p == p)
			return &tab[i];
	}
	return NULL;
}

static int rehash(size_t ncap)
{
	struct slot *old = tab, *n = calloc(ncap, sizeof(*n));
	size_t ocap = cap;

	if (n == NULL)
		return -ENOMEM;
	tab = n;
	cap = ncap;
	used = 0;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].kind > 0) {
			size_t j = hash(old[i].p) & (cap - 1);

			while (tab[j].kind != 0)
				j = (j + 1) & (cap - 1);
			tab[j] = old[i];
			used++;
		}
	}
	free(old);
	return 0;
}

int sg_handle_add(const void *p, int kind)
{
	size_t i;
	int r = 0;

	pthread_rwlock_wrlock(&lock);
	if ((used + 1) * 2 > cap && (r = rehash(cap ? cap * 2 : 256)) != 0)
		goto out;
	i = hash(p) & (cap - 1);
	while (tab[i].kind > 0 && tab[i].p != p)
		i = (i + 1) & (cap - 1);
	if (tab[i].kind <= 0)
		used++;
	tab[i].p = p;
	tab[i].kind = kind;
out:
	pthread_rwlock_unlock(&lock);
	return r;
}

void sg_handle_del(const void *p)
{
	struct slot *s;

	pthread_rwlock_wrlock(&lock);
	s = find(p);
	if (s)
		s->kind = -1; /* tombstone: keeps probe chains intact */
	pthread_rwlock_unlock(&lock);
}

int sg_handle_kind(const void *p)
{
	struct slot *s;
	int k;

	if (p == NULL)
		return 0;
	pthread_rwlock_rdlock(&lock);
	s = find(p);
	k = s ? s->kind : 0;
	pthread_rwlock_unlock(&lock);
	return k;
}

bool sg_handle_ok(const void *p, int kind)
{
	return p != NULL && sg_handle_kind(p) == kind;
}
