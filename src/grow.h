/* grow.h -- room for one more element in a realloc'd array (worker, interposer, softgpu). */
#ifndef GP_GROW_H
#define GP_GROW_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The array with room for element n: arr itself while n < *cap, else arr reallocated to
 * twice its capacity (16 at first) with *cap updated; NULL when out of memory (arr and
 * *cap unchanged). The caller stores what it returns: arr = p. */
static inline void *gp_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *na;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > (size_t)-1 / elem)
		return NULL;
	na = realloc(arr, ncap * elem);
	if (na)
		*cap = ncap;
	return na;
}

/* Stores grown, when not NULL, in the array pointer at slot (a T **): by memcpy, since a
 * T * is not a void * to write through. */
static inline bool gp_grow_store(void *slot, void *grown)
{
	if (!grown)
		return false;
	memcpy(slot, &grown, sizeof(grown));
	return true;
}

/* Room for element n of arr, a T * variable with its capacity cap: false when out of memory. */
#define GP_GROW(arr, cap, n) gp_grow_store(&(arr), gp_grow((arr), &(cap), (n), sizeof(*(arr))))

#endif
