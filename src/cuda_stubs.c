/* cuda_stubs.c -- a weak CUDA_ERROR_NOT_SUPPORTED definition of every driver entry point. */

/*
 * Compiled into each of our libcuda.so.1 builds (the interposer, softgpu), never archived:
 * a weak definition in a static library would satisfy the reference and keep the linker from
 * pulling in the archive member with the strong one. A library defines what it implements
 * strongly (marked GP_CUDA_EXPORT) in its own sources; everything else lands here.
 *
 * Deliberately does not include cuda.h: its prototypes would clash with these. The stubs are
 * declared int (void); every caller passes CUDA's real arguments, which the System V calling
 * convention lets a callee ignore, and CUresult is an int-sized enum.
 *
 * Names that libcuda 13.0 does not export (exported = 0 in cuda_entries.h) get hidden stubs:
 * cuGetProcAddress can hand them out but dlsym cannot find them.
 */
#include "cuda_table.h"
#include "log.h"

#define STUB_VIS_1 __attribute__((visibility("default")))
#define STUB_VIS_0 __attribute__((visibility("hidden")))
#define STUB_VIS(exported) STUB_VIS_##exported

/* One shared body, so each stub is a tail call and the debug log names what was missed. */
__attribute__((visibility("hidden"), noinline)) int gp__cuda_stub_called(const char *name);

int gp__cuda_stub_called(const char *name)
{
	gp_log_debug("%s: not supported", name);
	return GP_CUDA_ERROR_NOT_SUPPORTED;
}

#define STUB(sym, base, version, kind, legacy, exported)        \
	STUB_VIS(exported) __attribute__((weak)) int sym(void); \
	int sym(void)                                           \
	{                                                       \
		return gp__cuda_stub_called(#sym);              \
	}
GP_CUDA_ENTRIES(STUB)
#undef STUB

const struct gp__cuda_entry gp__cuda_entries[GP_CUDA_NENTRIES] = {
#define ENTRY(sym, base, version, kind, legacy, exported) \
	{#sym, #base, #legacy, (void *)sym, version, kind, exported},
	GP_CUDA_ENTRIES(ENTRY)
#undef ENTRY
};
