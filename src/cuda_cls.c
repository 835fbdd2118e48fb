/* cuda_cls.c -- context-local storage: a mutex-guarded list of (ctx, key) -> value entries. */
#include <pthread.h>
#include <stdlib.h>

#include "cuda_cls.h"

/*
 * DESIGN: a singly linked list in insertion order, guarded by cls_lock. It holds a handful
 * of entries (cudart uses one key per context), so a list beats a hash table. Destructors
 * are called after the entries are unlinked and the lock is released.
 */
struct cls_entry {
	struct cls_entry *next;
	CUcontext ctx;
	void *key;
	void *value;
	gp__cls_dtor dtor;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cls_entry *cls_head;
static size_t cls_n;

/* The link that points at (ctx, key), or at the list's end. Call with cls_lock held. */
static struct cls_entry **find(CUcontext ctx, void *key)
{
	struct cls_entry **pp;

	for (pp = &cls_head; *pp; pp = &(*pp)->next)
		if ((*pp)->ctx == ctx && (*pp)->key == key)
			break;
	return pp;
}

CUresult gp__cls_put(CUcontext ctx, void *key, void *value, gp__cls_dtor dtor)
{
	struct cls_entry **pp, *e;

	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&cls_lock);
	pp = find(ctx, key);
	if (*pp) {
		(*pp)->value = value;
		(*pp)->dtor = dtor;
		pthread_mutex_unlock(&cls_lock);
		return CUDA_SUCCESS;
	}
	e = malloc(sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&cls_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*e = (struct cls_entry){.ctx = ctx, .key = key, .value = value, .dtor = dtor};
	*pp = e; /* find() stopped at the end: append */
	cls_n++;
	pthread_mutex_unlock(&cls_lock);
	return CUDA_SUCCESS;
}

CUresult gp__cls_get(void **value, CUcontext ctx, void *key)
{
	struct cls_entry *e;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&cls_lock);
	e = *find(ctx, key);
	if (e)
		*value = e->value;
	pthread_mutex_unlock(&cls_lock);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult gp__cls_delete(CUcontext ctx, void *key)
{
	struct cls_entry **pp, *e;

	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&cls_lock);
	pp = find(ctx, key);
	e = *pp;
	if (e) {
		*pp = e->next;
		cls_n--;
	}
	pthread_mutex_unlock(&cls_lock);
	free(e);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

void gp__cls_context_destroyed(CUcontext ctx)
{
	struct cls_entry *gone = NULL, **tail = &gone, **pp, *e;

	if (!ctx)
		return;
	pthread_mutex_lock(&cls_lock);
	for (pp = &cls_head; (e = *pp);) {
		if (e->ctx != ctx) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = NULL;
		*tail = e;
		tail = &e->next;
		cls_n--;
	}
	pthread_mutex_unlock(&cls_lock);
	while ((e = gone)) {
		gone = e->next;
		if (e->dtor)
			e->dtor(e->ctx, e->key, e->value);
		free(e);
	}
}

size_t gp__cls_count(void)
{
	size_t n;

	pthread_mutex_lock(&cls_lock);
	n = cls_n;
	pthread_mutex_unlock(&cls_lock);
	return n;
}

void gp__cls_clear(void)
{
	struct cls_entry *e;

	pthread_mutex_lock(&cls_lock);
	e = cls_head;
	cls_head = NULL;
	cls_n = 0;
	pthread_mutex_unlock(&cls_lock);
	while (e) {
		struct cls_entry *next = e->next;

		free(e);
		e = next;
	}
}
