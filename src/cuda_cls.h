/* cuda_cls.h -- context-local storage: cudart's per-context state, keyed by (context, key). */
#ifndef GP_CUDA_CLS_H
#define GP_CUDA_CLS_H

#include <stddef.h>

#include <cuda.h>

/*
 * Behind the CONTEXT_LOCAL_STORAGE export table (exptables.c resolves ctx == NULL to the
 * current context before calling these). cudart stores its per-context state here: a get
 * at the start of every runtime call, a put when it first uses a context, a delete at exit.
 *
 * Thread-safe: one mutex guards the store; destructors run without it held, so they may call
 * back in. ctx must not be NULL here (CUDA_ERROR_INVALID_CONTEXT).
 */

typedef void (*gp__cls_dtor)(CUcontext ctx, void *key, void *value);

/* Stores value (and dtor, which may be NULL) under (ctx, key), replacing an earlier entry
 * without running its destructor. CUDA_ERROR_OUT_OF_MEMORY when the entry cannot be made. */
CUresult gp__cls_put(CUcontext ctx, void *key, void *value, gp__cls_dtor dtor);

/* The value under (ctx, key); CUDA_ERROR_INVALID_HANDLE when there is none (cudart treats any
 * error as a miss), CUDA_ERROR_INVALID_VALUE for value == NULL. */
CUresult gp__cls_get(void **value, CUcontext ctx, void *key);

/* Removes (ctx, key) without running its destructor: cudart deletes what it tears down
 * itself. CUDA_ERROR_INVALID_HANDLE when there is no such entry. */
CUresult gp__cls_delete(CUcontext ctx, void *key);

/*
 * The library's hook: call it when ctx stops existing or loses its state -- cuCtxDestroy,
 * cuDevicePrimaryCtxReset, and the last cuDevicePrimaryCtxRelease of a primary context --
 * after the context is gone or reset and before its handle can be reused. Runs the destructor
 * of every entry of ctx (in the order they were put) and removes them. NULL is ignored.
 */
void gp__cls_context_destroyed(CUcontext ctx);

/* How many entries are stored (all contexts). */
size_t gp__cls_count(void);

/* Drops every entry without running destructors (library unload, tests). */
void gp__cls_clear(void);

#endif
