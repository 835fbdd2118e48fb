/* link.c -- JIT linking (cuLink*): PTX inputs joined into one program, answered as a bundle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image.h"
#include "softgpu.h"

/*
 * softgpu compiles nothing ahead: a "linked image" is the inputs' PTX texts in a
 * gpupool link bundle (src/image.h), each entry of type CU_JIT_INPUT_PTX. The
 * module loaders parse such a bundle with sg_ptx_link, which resolves one text's
 * .extern functions to another's .visible ones. cuLinkComplete parses the inputs
 * the same way, so a link that cannot be loaded fails there, as with the driver,
 * and the bundle it answers belongs to the link state until cuLinkDestroy.
 *
 * Inputs taken: PTX; a fatbin's best PTX; softgpu's own link output (its entries).
 * A cubin (SASS) cannot run here, LTO-IR and libraries are not supported.
 * A link state is used by one thread at a time, as CUDA asks of the caller.
 */

struct sg_link {
	struct sg_link_texts t;
	/* the output options of cuLinkCreate (the caller keeps them valid until destroy) */
	unsigned nopts;
	CUjit_option *opts;
	void **vals; /* the caller's */
	struct timespec t0;
	uint8_t *out; /* the answer of cuLinkComplete */
};

static bool link_live(const struct sg_link *l)
{
	return sg_handle_ok(l, SG_K_LINK);
}

void sg_link_texts_deinit(struct sg_link_texts *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->text[i]);
		free(t->name[i]);
	}
	free(t->text);
	free(t->name);
	memset(t, 0, sizeof(*t));
}

static CUresult texts_add(struct sg_link_texts *t, const char *text, size_t len, const char *name)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 4;
		char **nt = realloc(t->text, cap * sizeof(*nt));
		char **nn;

		if (nt == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		t->text = nt;
		nn = realloc(t->name, cap * sizeof(*nn));
		if (nn == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		t->name = nn;
		t->cap = cap;
	}
	t->text[t->n] = malloc(len + 1);
	t->name[t->n] = strdup(name);
	if (t->text[t->n] == NULL || t->name[t->n] == NULL) {
		free(t->text[t->n]);
		free(t->name[t->n]);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(t->text[t->n], text, len);
	t->text[t->n][len] = 0;
	t->n++;
	return CUDA_SUCCESS;
}

/* A fatbin's PTX, chosen as module loads choose it. */
static CUresult add_fatbin(struct sg_link_texts *t, const uint8_t *fb, size_t size,
			   const char *name, char *err, size_t errlen)
{
	struct gp_fatbin_entry e;
	uint8_t *text;
	size_t tlen;
	int r = gp_fatbin_best_ptx(fb, size, SG_SM, &e);
	CUresult cr;

	if (r == 0)
		r = gp_fatbin_best_ptx(fb, size, UINT32_MAX, &e);
	if (r < 0 || (r == 1 && gp_fatbin_entry_unpack(&e, &text, &tlen))) {
		snprintf(err, errlen, "'%s': malformed fatbin", name);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	if (r == 0) {
		snprintf(err, errlen, "'%s': the fatbin has no PTX (softgpu cannot run SASS)",
			 name);
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	cr = texts_add(t, (const char *)text, strnlen((const char *)text, tlen), name);
	free(text);
	return cr;
}

static CUresult collect(struct sg_link_texts *t, int type, const void *data, size_t size,
			const char *name, bool nested, char *err, size_t errlen)
{
	const uint8_t *b = data;
	size_t n;

	err[0] = 0;
	if (type == CU_JIT_INPUT_PTX)
		return texts_add(t, data, strnlen(data, size), name);
	if (type != CU_JIT_INPUT_CUBIN && type != CU_JIT_INPUT_FATBINARY &&
	    type != CU_JIT_INPUT_OBJECT) {
		snprintf(err, errlen, "'%s': input type %d is not supported by softgpu", name,
			 type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (size >= 4 && gp_image_kind(b) == GP_IMAGE_LINK) {
		struct gp_link_entry e;
		size_t off = 0;
		int r;

		/* a link's output holds no bundle (inputs are flattened as they are added) */
		if (nested || gp_image_size_within(b, size, &n)) {
			snprintf(err, errlen, "'%s': malformed link bundle", name);
			return CUDA_ERROR_INVALID_IMAGE;
		}
		while ((r = gp_link_next(b, n, &off, &e)) == 1) {
			CUresult cr =
				collect(t, (int)e.type, e.data, e.size, e.name, true, err, errlen);

			if (cr)
				return cr;
		}
		return r ? CUDA_ERROR_INVALID_IMAGE : CUDA_SUCCESS;
	}
	if (size >= 4 && gp_image_kind(b) == GP_IMAGE_FATBIN) {
		if (gp_image_size_within(b, size, &n)) {
			snprintf(err, errlen, "'%s': malformed fatbin", name);
			return CUDA_ERROR_INVALID_IMAGE;
		}
		return add_fatbin(t, b, n, name, err, errlen);
	}
	snprintf(err, errlen, "'%s': cubin (SASS) and object inputs cannot run on softgpu", name);
	return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

CUresult sg_link_collect(struct sg_link_texts *t, int type, const void *data, size_t size,
			 const char *name, char *err, size_t errlen)
{
	return collect(t, type, data, size, name, false, err, errlen);
}

/* The log options of the link: the latest error, an empty info log, the time since create. */
static void link_outputs(struct sg_link *l, const char *err)
{
	sg_jit_outputs(l->nopts, l->opts, l->vals, err, &l->t0);
}

static void link_free(struct sg_link *l)
{
	sg_link_texts_deinit(&l->t);
	free(l->opts);
	free(l->out);
	free(l);
}

SG_EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
				   void **optionValues, CUlinkState *stateOut)
{
	struct sg_ctx *c;
	struct sg_link *l;
	CUresult r = sg_ctx_current(&c, false);

	if (r)
		return r;
	if (stateOut == NULL || (numOptions && (options == NULL || optionValues == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	clock_gettime(CLOCK_MONOTONIC, &l->t0);
	if (numOptions) {
		/* the option kinds are copied; the values array is the caller's, written to */
		l->opts = malloc(numOptions * sizeof(*l->opts));
		if (l->opts == NULL) {
			link_free(l);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(l->opts, options, numOptions * sizeof(*l->opts));
		l->nopts = numOptions;
		l->vals = optionValues;
	}
	if (sg_handle_add(l, SG_K_LINK)) {
		link_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*stateOut = (CUlinkState)l;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
				CUlinkState *stateOut)
{
	return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

SG_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size,
				    const char *name, unsigned int numOptions,
				    CUjit_option *options, void **optionValues)
{
	struct sg_link *l = (struct sg_link *)state;
	char err[512];
	uint32_t before;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!link_live(l))
		return CUDA_ERROR_INVALID_HANDLE;
	if (data == NULL || (size == 0 && type != CU_JIT_INPUT_PTX) ||
	    (numOptions && (options == NULL || optionValues == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if (l->out)
		return CUDA_ERROR_INVALID_VALUE; /* completed: nothing more goes in */
	sg_log("link %p: input '%s', type %d, %zu bytes", (void *)l, name ? name : "input",
	       (int)type, size);
	before = l->t.n;
	r = sg_link_collect(&l->t, (int)type, data, size ? size : strlen(data) + 1,
			    name ? name : "input", err, sizeof(err));
	/* each PTX input is parsed now, so a malformed one fails here, as with the driver */
	for (uint32_t i = before; r == CUDA_SUCCESS && i < l->t.n; i++) {
		struct sg_prog *p;
		char perr[480];

		r = (CUresult)sg_ptx_load(l->t.text[i], &p, perr, sizeof(perr));
		if (r)
			snprintf(err, sizeof(err), "'%s': %s", l->t.name[i], perr);
		else
			sg_prog_free(p);
	}
	if (r) {
		while (l->t.n > before) {
			l->t.n--;
			free(l->t.text[l->t.n]);
			free(l->t.name[l->t.n]);
		}
		sg_log("link input failed (%s): %s", sg_error_name(r), err);
		link_outputs(l, err);
	}
	return r;
}

SG_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
				 const char *name, unsigned int numOptions, CUjit_option *options,
				 void **optionValues)
{
	return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

SG_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
				    unsigned int numOptions, CUjit_option *options,
				    void **optionValues)
{
	struct sg_link *l = (struct sg_link *)state;
	size_t size;
	void *data;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!link_live(l))
		return CUDA_ERROR_INVALID_HANDLE;
	if (path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	data = sg_read_file(path, &size);
	if (data == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = cuLinkAddData_v2(state, type, data, size + 1, path, numOptions, options, optionValues);
	free(data);
	return r;
}

SG_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
				 unsigned int numOptions, CUjit_option *options,
				 void **optionValues)
{
	return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

SG_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	struct sg_link *l = (struct sg_link *)state;
	struct gp_link_builder b;
	struct sg_prog *p;
	char err[512];
	size_t size;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (!link_live(l))
		return CUDA_ERROR_INVALID_HANDLE;
	if (cubinOut == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (l->t.n == 0) {
		link_outputs(l, "no input to link");
		return CUDA_ERROR_INVALID_VALUE;
	}
	sg_log("link %p: complete, %u PTX text(s)", (void *)l, l->t.n);
	if (l->out == NULL) {
		r = (CUresult)sg_ptx_link((const char *const *)l->t.text,
					  (const char *const *)l->t.name, l->t.n, &p, err,
					  sizeof(err));
		if (r) {
			sg_log("link failed (%s): %s", sg_error_name(r), err);
			link_outputs(l, err);
			return r;
		}
		sg_prog_free(p);
		gp_link_builder_init(&b);
		for (uint32_t i = 0; r == CUDA_SUCCESS && i < l->t.n; i++)
			if (gp_link_add(&b, CU_JIT_INPUT_PTX, l->t.name[i], l->t.text[i],
					strlen(l->t.text[i]) + 1))
				r = CUDA_ERROR_OUT_OF_MEMORY;
		if (r == CUDA_SUCCESS && gp_link_finish(&b, &l->out, &size))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		gp_link_builder_deinit(&b);
		if (r)
			return r;
	}
	gp_image_size(l->out, &size);
	link_outputs(l, "");
	*cubinOut = l->out;
	if (sizeOut)
		*sizeOut = size;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
	struct sg_link *l = (struct sg_link *)state;

	if (!link_live(l))
		return CUDA_ERROR_INVALID_HANDLE;
	sg_handle_del(l);
	link_free(l);
	return CUDA_SUCCESS;
}
