/* fuzz_image.c -- recognising, sizing and walking module images (fatbin, cubin, PTX, link
 * bundles).
 *
 * The input is the image, followed by a NUL so that PTX text ends: a copy of
 * exactly that size, so any read past it is a sanitizer report. A cudart
 * wrapper holds a pointer, so the input is never taken as one: the target
 * builds its own wrapper around the input instead. Every entry a walk yields
 * lies inside the bytes walked, and unpacking gives what the entry says.
 */
#include <stdbool.h>
#include <string.h>

#include "error.h"
#include "fuzz.h"
#include "image.h"

/* Unpacks bigger than this are skipped: image.c allows claims up to 4 GiB. */
#define UNPACK_MAX ((size_t)64 << 20)

struct wrapper {
	uint32_t magic;
	uint32_t version;
	const void *data;
	const void *filename;
};

static void check_unpack(const struct gp_fatbin_entry *e)
{
	uint8_t *out;
	size_t n;

	if (e->size > UNPACK_MAX)
		return;
	if (gp_fatbin_entry_unpack(e, &out, &n) != 0)
		return;
	FUZZ_CHECK(n == e->size);
	FUZZ_CHECK(out[n] == 0);
	if (e->compression == GP_FATBIN_PLAIN)
		FUZZ_CHECK(memcmp(out, e->payload, n) == 0);
	free(out);
}

/* A link bundle that sized: every entry lies inside it, the walk ends at its total. */
static void check_link(const uint8_t *b, size_t size)
{
	struct gp_link_entry e;
	size_t off = 0;
	int r;

	while ((r = gp_link_next(b, size, &off, &e)) == 1) {
		FUZZ_CHECK(e.data >= b + GP_LINK_HEADER_SIZE + GP_LINK_ENTRY_HEADER);
		FUZZ_CHECK(e.size <= size && e.data + e.size == b + off && off <= size);
		FUZZ_CHECK(e.name > (const char *)b && e.name[strlen(e.name)] == 0 &&
			   (const uint8_t *)e.name + strlen(e.name) < e.data);
	}
	FUZZ_CHECK(r == 0 && off == size);
}

/* Device capabilities to pick PTX for: none, softgpu's, any. */
static const unsigned sms[] = {0, 75, 1000};
#define NSMS (sizeof(sms) / sizeof(sms[0]))

/*
 * Walks a fatbin of `size` bytes, checking each entry; returns how the walk
 * ended (0 or an error) and, per sms[i], 1 + the best PTX's sm or 0 for none.
 */
static int walk(const uint8_t *fb, size_t size, unsigned best[NSMS])
{
	struct gp_fatbin_entry e;
	size_t off = 0, prev = 16;
	int r;

	memset(best, 0, NSMS * sizeof(best[0]));
	while ((r = gp_fatbin_next(fb, size, &off, &e)) == 1) {
		FUZZ_CHECK(off > prev && off <= size);
		FUZZ_CHECK(e.payload >= fb + prev + 64);
		FUZZ_CHECK(e.payload_size <= (size_t)(fb + off - e.payload));
		FUZZ_CHECK(e.compression >= GP_FATBIN_PLAIN && e.compression <= GP_FATBIN_ZSTD);
		if (e.compression == GP_FATBIN_PLAIN)
			FUZZ_CHECK(e.size == e.payload_size);
		else
			FUZZ_CHECK(e.size > 0 && e.payload_size > 0);
		for (size_t i = 0; i < NSMS; i++)
			if (e.kind == GP_FATBIN_ENTRY_PTX && e.sm <= sms[i] && e.sm + 1 > best[i])
				best[i] = e.sm + 1;
		check_unpack(&e);
		prev = off;
	}
	return r;
}

/* gp_fatbin_best_ptx agrees with a walk of the same bytes. */
static void check_fatbin(const uint8_t *fb, size_t size)
{
	struct gp_fatbin_entry e;
	unsigned best[NSMS];
	int r = walk(fb, size, best);

	FUZZ_CHECK(r == 0 || r == GP_EIMAGE);
	for (size_t i = 0; i < NSMS; i++) {
		int b = gp_fatbin_best_ptx(fb, size, sms[i], &e);

		if (r < 0) {
			FUZZ_CHECK(b == r);
			continue;
		}
		FUZZ_CHECK(b == (best[i] > 0));
		if (b == 1)
			FUZZ_CHECK(e.kind == GP_FATBIN_ENTRY_PTX && e.sm + 1 == best[i] &&
				   e.payload > fb && e.payload + e.payload_size <= fb + size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wrapper w = {GP_FATBIN_WRAPPER_MAGIC, 1, NULL, NULL};
	const uint8_t *fb;
	size_t fsize, isize, n;
	uint8_t *img;
	int kind, r;

	img = malloc(size + 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	img[size] = 0;

	/* Sized within the bytes held: all of it lies inside them, with or without the NUL. */
	kind = gp_image_kind(img);
	r = gp_image_size_within(img, size + 1, &isize);
	if (r == 0) {
		FUZZ_CHECK(isize <= size + 1 && kind != GP_IMAGE_WRAPPER);
		if (gp_image_size_within(img, size, &n) == 0)
			FUZZ_CHECK(n == isize);
		else
			FUZZ_CHECK(isize == size + 1);
	} else {
		FUZZ_CHECK(r == GP_EIMAGE && gp_image_size_within(img, size, &n) == GP_EIMAGE);
	}

	/* Sized from its headers alone, where those lie in the bytes held: the same. */
	switch (kind) {
	case GP_IMAGE_PTX:
		FUZZ_CHECK(r == 0 && gp_image_size(img, &n) == 0 && n == isize);
		FUZZ_CHECK(isize == strlen((char *)img) + 1);
		FUZZ_CHECK(gp_image_fatbin(img, &fb, &fsize) == GP_EIMAGE);
		break;
	case GP_IMAGE_FATBIN:
		if (size < 16)
			break; /* the header is read whole: an image is never shorter */
		if (gp_image_size(img, &n) == 0) {
			FUZZ_CHECK(r != 0 || n == isize);
			FUZZ_CHECK(gp_image_fatbin(img, &fb, &fsize) == 0);
			FUZZ_CHECK(fb == img && fsize == n);
		} else {
			FUZZ_CHECK(r != 0);
			FUZZ_CHECK(gp_image_fatbin(img, &fb, &fsize) == GP_EIMAGE);
		}
		break;
	case GP_IMAGE_ELF:
		if (r == 0)
			FUZZ_CHECK(gp_image_size(img, &n) == 0 && n == isize);
		FUZZ_CHECK(gp_image_fatbin(img, &fb, &fsize) == GP_EIMAGE);
		break;
	case GP_IMAGE_LINK:
		if (r == 0) {
			FUZZ_CHECK(gp_image_size(img, &n) == 0 && n == isize);
			check_link(img, isize);
		}
		FUZZ_CHECK(gp_image_fatbin(img, &fb, &fsize) == GP_EIMAGE);
		break;
	case GP_IMAGE_WRAPPER:
		/* Its pointer is the input's: only the wrapper's own size is read. */
		FUZZ_CHECK(gp_image_size(img, &n) == 0 && n == sizeof(w));
		break;
	default:
		FUZZ_CHECK(0);
	}

	/* A wrapper around the input finds it when it is a fatbin. */
	w.data = img;
	if (kind == GP_IMAGE_FATBIN && size >= 16) {
		bool ok = gp_image_size(img, &n) == 0;

		FUZZ_CHECK(gp_image_fatbin(&w, &fb, &fsize) == (ok ? 0 : GP_EIMAGE));
		FUZZ_CHECK(!ok || (fb == img && fsize == n));
	} else if (kind != GP_IMAGE_FATBIN) {
		FUZZ_CHECK(gp_image_fatbin(&w, &fb, &fsize) == GP_EIMAGE);
	}

	/* The entry walk on the bytes held, or on fewer where the header says so. */
	fsize = kind == GP_IMAGE_FATBIN && r == 0 && isize <= size ? isize : size;
	check_fatbin(img, fsize);
	free(img);
	return 0;
}
