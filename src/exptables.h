/* exptables.h -- cuGetExportTable: cudart's private ("dark API") tables, served locally. */
#ifndef GP_EXPTABLES_H
#define GP_EXPTABLES_H

#include <cuda.h>

#include "cuda_cls.h"
#include "cuda_host.h"

/*
 * The tables hold pointers into the calling process, so each libcuda.so.1 serves them itself
 * and never forwards them (docs/cuda-abi.md lists every slot):
 *   CUDART_INTERFACE              13 slots; slot 2 = host->primary_ctx
 *   TOOLS_RUNTIME_CALLBACK_HOOKS   7 slots; slots 2 and 6 hand out zeroed static buffers
 *   TOOLS_TLS                      4 slots; slot 2 = host->ctx_get_current
 *   TOOLS_CONTEXT                 95 slots; slots 4, 51, 39 = host->ctx_get_id, stream_object,
 *                                 stream_object_id (optional members; else NOT_SUPPORTED)
 *   TOOLS_MODULE                   8 slots; slot 7 hands a module's kernels to a callback
 *                                 (host->module_get_function_count, _enumerate_functions)
 *   CONTEXT_LOCAL_STORAGE          put/delete/get (cuda_cls.h), no size slot
 *   CONTEXT_CHECKS                 4 slots; slot 2 sets *r1 = 0, slot 3 returns 0
 *   INTEGRITY_CHECK                3 slots; slot 1 = the integrity check (integrity.h)
 * Slot 0 holds the table's size in bytes, except for CONTEXT_LOCAL_STORAGE. Every slot whose
 * purpose we do not know holds a function that logs its table and slot (debug) and returns
 * CUDA_ERROR_NOT_SUPPORTED, so a caller gets an error rather than a jump to NULL.
 */

/* TOOLS_MODULE slot 7's callback: called with the caller's user pointer and one CUfunction. */
typedef void (*gp__module_fn_cb)(void *user, void *fn);

/* Registers the library's callbacks (cuda_host.h); host must stay valid until
 * gp__exptables_deinit. Call before CUDA calls can arrive. 0, or -EINVAL when host or any
 * required member is NULL. Until then the slots that need it return CUDA_ERROR_NOT_INITIALIZED. */
int gp__exptables_init(const struct gp__cuda_host *host);

/* Forgets the callbacks and drops all context-local storage without destructors. */
void gp__exptables_deinit(void);

/*
 * cuGetExportTable. CUDA_SUCCESS with *table set for the ids above; CUDA_ERROR_NOT_FOUND and
 * *table = NULL for any other id (the f8cff951-... probe cudart makes first included);
 * CUDA_ERROR_INVALID_VALUE for NULL arguments. Logs every request at debug level.
 */
CUresult gp__get_export_table(const void **table, const CUuuid *id);

/* The name of a table we serve ("CUDART_INTERFACE"), or NULL. */
const char *gp__exptable_name(const CUuuid *id);

/* Writes id as 8-4-4-4-12 lowercase hex of its bytes in memory order, NUL-terminated. */
#define GP_UUID_STRLEN 37
void gp__uuid_format(const CUuuid *id, char out[GP_UUID_STRLEN]);

#endif
