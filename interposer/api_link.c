/* api_link.c -- JIT linking: the inputs are collected here, and linked by the pool's driver
 * when the image that cuLinkComplete answers (a link bundle) is loaded. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "image.h"
#include "interposer.h"

/*
 * No call of this file crosses the network: cuLinkComplete answers a gpupool link bundle
 * (src/image.h, docs/protocol.md) holding each input's type, name and bytes, and the worker
 * links it with its own driver's cuLink* when the bundle is loaded (cuModuleLoadData(Ex),
 * cuLibraryLoadData), whichever driver that is. So a link error (an unresolved or doubly
 * defined symbol) is the load's error, not cuLinkComplete's (docs/conformance.md). The
 * compiler and linker options are not shipped: none of them changes what the code computes,
 * and the output options are filled in here as cuModuleLoadDataEx fills them. A link state
 * is used by one thread at a time, as CUDA asks of the caller.
 */

struct gp_ilink {
	uint32_t magic; /* GP_MAGIC_LINK while alive */
	struct gp_link_builder b;
	unsigned nopts;
	CUjit_option *opts;
	void **vals; /* the caller's, written to until cuLinkDestroy */
	struct timespec t0;
	uint8_t *out; /* cuLinkComplete's answer, the state's until destroyed */
	size_t out_size;
	struct gp_ilink *next_dead;
};

/* Destroyed states stay, so that a stale handle reads as dead (as streams and modules do). */
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gp_ilink *dead;

static bool link_valid(const struct gp_ilink *l)
{
	return l && l->magic == GP_MAGIC_LINK;
}

/* A log option's buffer gets `text` (cut to its size), its size option the bytes with the NUL. */
static void log_out(const struct gp_ilink *l, CUjit_option buf_opt, CUjit_option size_opt,
		    const char *text)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	int size_at = -1;

	for (unsigned i = 0; i < l->nopts; i++) {
		if (l->opts[i] == buf_opt)
			buf = l->vals[i];
		else if (l->opts[i] == size_opt)
			cap = (size_t)(uintptr_t)l->vals[i], size_at = (int)i;
	}
	if (buf && cap) {
		len = strnlen(text, cap - 1);
		memcpy(buf, text, len);
		buf[len++] = '\0';
	}
	if (size_at >= 0 && buf && cap)
		l->vals[size_at] = (void *)(uintptr_t)len;
}

static void link_outputs(const struct gp_ilink *l, const char *err)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_out(l, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "");
	log_out(l, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, err);
	for (unsigned i = 0; i < l->nopts; i++) {
		if (l->opts[i] == CU_JIT_WALL_TIME) {
			float ms = (float)((double)(t1.tv_sec - l->t0.tv_sec) * 1e3 +
					   (double)(t1.tv_nsec - l->t0.tv_nsec) / 1e6);

			memcpy(&l->vals[i], &ms, sizeof(ms)); /* a float in the pointer's bytes */
		}
	}
}

GP_CUDA_EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
					void **optionValues, CUlinkState *stateOut)
{
	struct gp_ictx *c;
	struct gp_ilink *l;
	CUresult r;

	if (!stateOut || (numOptions && (!options || !optionValues)))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c); /* a link is made for the current context's device */
	if (r != CUDA_SUCCESS)
		return r;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (numOptions) {
		l->opts = malloc(numOptions * sizeof(*l->opts));
		if (!l->opts) {
			free(l);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(l->opts, options, numOptions * sizeof(*l->opts));
		l->nopts = numOptions;
		l->vals = optionValues;
	}
	gp_link_builder_init(&l->b);
	clock_gettime(CLOCK_MONOTONIC, &l->t0);
	l->magic = GP_MAGIC_LINK;
	*stateOut = (CUlinkState)l;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options,
				     void **optionValues, CUlinkState *stateOut)
{
	return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

/* One input into the bundle; a bundle (an earlier link's output) adds its entries. */
static CUresult add_input(struct gp_ilink *l, CUjitInputType type, const void *data, size_t size,
			  const char *name, bool nested)
{
	size_t n;
	int ret;

	if (type == CU_JIT_INPUT_PTX) {
		/* the text and its NUL, however the caller counted */
		n = strnlen(data, size);
		if (n == size) {
			char *t = malloc(n + 1);

			if (!t)
				return CUDA_ERROR_OUT_OF_MEMORY;
			memcpy(t, data, n);
			t[n] = '\0';
			ret = gp_link_add(&l->b, type, name, t, n + 1);
			free(t);
		} else {
			ret = gp_link_add(&l->b, type, name, data, n + 1);
		}
	} else if (size >= 4 && gp_image_kind(data) == GP_IMAGE_LINK) {
		struct gp_link_entry e;
		size_t off = 0;

		/* a link's output holds no bundle (inputs are flattened as they are added) */
		if (nested || gp_image_size_within(data, size, &n))
			return CUDA_ERROR_INVALID_IMAGE;
		while ((ret = gp_link_next(data, n, &off, &e)) == 1) {
			CUresult r =
				add_input(l, (CUjitInputType)e.type, e.data, e.size, e.name, true);

			if (r != CUDA_SUCCESS)
				return r;
		}
	} else {
		ret = gp_link_add(&l->b, type, name, data, size);
	}
	if (ret == -ENOMEM)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return ret ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
					 size_t size, const char *name, unsigned int numOptions,
					 CUjit_option *options, void **optionValues)
{
	struct gp_ilink *l = (struct gp_ilink *)state;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!link_valid(l))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!data || (numOptions && (!options || !optionValues)) || l->out)
		return CUDA_ERROR_INVALID_VALUE;
	/* LTO-IR needs link options (CU_JIT_LTO) that the bundle does not carry; an archive's
	 * members cannot be sized for the worker's checks (daemon/worker/module.c) */
	if ((unsigned)type >= CU_JIT_NUM_INPUT_TYPES)
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_JIT_INPUT_NVVM || type == CU_JIT_INPUT_LIBRARY)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (type == CU_JIT_INPUT_PTX && size == 0)
		size = strlen(data) + 1;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = add_input(l, type, data, size, name ? name : "input", false);
	if (r != CUDA_SUCCESS)
		link_outputs(l, "the input cannot be added to the link");
	return r;
}

GP_CUDA_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
				      size_t size, const char *name, unsigned int numOptions,
				      CUjit_option *options, void **optionValues)
{
	return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

/* The file is this process's: read here and added as its bytes. */
GP_CUDA_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
					 unsigned int numOptions, CUjit_option *options,
					 void **optionValues)
{
	uint8_t *buf;
	size_t len = 0;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!link_valid((struct gp_ilink *)state))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__read_image_file(path, &buf, &len);
	if (r != CUDA_SUCCESS)
		return r;
	r = cuLinkAddData_v2(state, type, buf, type == CU_JIT_INPUT_PTX ? len + 1 : len, path,
			     numOptions, options, optionValues);
	free(buf);
	return r;
}

GP_CUDA_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
				      unsigned int numOptions, CUjit_option *options,
				      void **optionValues)
{
	return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

GP_CUDA_EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	struct gp_ilink *l = (struct gp_ilink *)state;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!link_valid(l))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cubinOut)
		return CUDA_ERROR_INVALID_VALUE;
	if (!l->out) {
		if (l->b.count == 0) {
			link_outputs(l, "no input to link");
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (gp_link_finish(&l->b, &l->out, &l->out_size))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	link_outputs(l, "");
	*cubinOut = l->out;
	if (sizeOut)
		*sizeOut = l->out_size;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuLinkDestroy(CUlinkState state)
{
	struct gp_ilink *l = (struct gp_ilink *)state;

	if (!link_valid(l))
		return CUDA_ERROR_INVALID_HANDLE;
	l->magic = GP_MAGIC_DEAD;
	gp_link_builder_deinit(&l->b);
	free(l->opts);
	free(l->out);
	l->opts = NULL;
	l->out = NULL;
	pthread_mutex_lock(&dead_lock);
	l->next_dead = dead;
	dead = l;
	pthread_mutex_unlock(&dead_lock);
	return CUDA_SUCCESS;
}
