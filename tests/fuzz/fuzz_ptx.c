/* fuzz_ptx.c -- softgpu's PTX parser and lowering on arbitrary text (nothing is run).
 *
 * An input with a NUL byte is also linked (sg_ptx_link) as the two texts either side of it.
 *
 * Text that loads gives a program whose functions and variables are whole and
 * findable by name; text that does not gives one of the documented CUresults
 * and a message. Nothing leaks either way (LeakSanitizer).
 */
#include <string.h>

#include <cuda.h>

#include "fuzz.h"
#include "ptx.h"

/*
 * A variable with an initializer gets a zeroed buffer of its whole size (up
 * to 1 TiB) while parsing. Where malloc is lazy that costs nothing, but ASan
 * backs every allocation with shadow memory, an eighth of its size: here an
 * allocation above 1 GiB fails, as it would on a small machine, and the
 * parser must answer OUT_OF_MEMORY.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

/* linked: names local to each text may repeat, so a name finds its first function */
static void check_prog(const struct sg_prog *p, bool linked)
{
	FUZZ_CHECK(p->nfuncs == 0 || p->funcs);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		const struct sg_func *f = &p->funcs[i];
		int found;

		FUZZ_CHECK(f->name);
		found = sg_prog_find_func(p, f->name);
		FUZZ_CHECK(linked ? found >= 0 && found <= (int)i : found == (int)i);
		FUZZ_CHECK(f->nparams == 0 || f->params);
		FUZZ_CHECK(f->ncode == 0 || f->code);
		FUZZ_CHECK(f->nslots == 0 || f->tmpl);
		for (uint32_t k = 0; k < f->ncode; k++) {
			const struct sg_insn *in = &f->code[k];

			FUZZ_CHECK(in->fn && in->guard < f->nslots);
			for (unsigned j = 0; j < in->nd && j < 4; j++)
				FUZZ_CHECK(in->d[j] < f->nslots);
			for (unsigned j = 0; j < in->ns && j < 4; j++)
				FUZZ_CHECK(in->s[j] < f->nslots);
		}
		for (uint32_t k = 0; k < f->nrelocs; k++)
			FUZZ_CHECK(f->relocs[k].slot < f->nslots && f->relocs[k].var >= 0 &&
				   (uint32_t)f->relocs[k].var < p->nvars);
		for (uint32_t k = 0; k < f->ncalls; k++)
			FUZZ_CHECK(f->calls[k].callee >= 0 &&
				   (uint32_t)f->calls[k].callee < p->nfuncs);
	}
	FUZZ_CHECK(p->nvars == 0 || p->vars);
	for (uint32_t i = 0; i < p->nvars; i++)
		FUZZ_CHECK(p->vars[i].name);
}

/* Loads (or links) and checks: a program whose every entry lowers or fails with a reason, or
 * a documented error with a message. */
static void check_load(const char *const *texts, uint32_t n)
{
	static const char *const names[] = {"a.ptx", "b.ptx"};
	struct sg_prog *prog = NULL;
	char err[512];
	int r;

	err[0] = '\0';
	r = n == 1 ? sg_ptx_load(texts[0], &prog, err, sizeof(err))
		   : sg_ptx_link(texts, names, n, &prog, err, sizeof(err));
	if (r == 0) {
		FUZZ_CHECK(prog != NULL);
		/* functions are lowered on first use: lower every entry, as launches would */
		for (uint32_t i = 0; i < prog->nfuncs; i++) {
			const char *msg = NULL;
			int lr;

			if (!prog->funcs[i].is_entry || !prog->funcs[i].defined)
				continue;
			lr = sg_prog_lower(prog, (int)i, &msg);
			FUZZ_CHECK(lr == 0 || ((lr == CUDA_ERROR_INVALID_PTX ||
						lr == CUDA_ERROR_NOT_SUPPORTED ||
						lr == CUDA_ERROR_OUT_OF_MEMORY) &&
					       msg && msg[0]));
		}
		check_prog(prog, n > 1);
		sg_prog_free(prog);
	} else {
		FUZZ_CHECK(r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_NOT_SUPPORTED ||
			   r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
			   r == CUDA_ERROR_OUT_OF_MEMORY);
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *texts[2];
	char *text;
	size_t first;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	texts[0] = text;
	check_load(texts, 1);
	first = strlen(text);
	if (first < size) {
		texts[1] = text + first + 1;
		check_load(texts, 2);
	}
	free(text);
	return 0;
}
