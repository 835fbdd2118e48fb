/* image.c -- recognise, size and unpack CUDA module images (NOTES.md §4). */
#include "image.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "error.h"

#define FATBIN_HEADER_SIZE 16
#define ENTRY_MIN_HEADER 64

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Whether b starts with the little-endian bytes of magic. A byte at a time:
 * no magic holds a 0, so PTX text shorter than 4 bytes is not read past its NUL.
 */
static bool has_magic(const uint8_t *b, uint32_t magic)
{
	for (int i = 0; i < 4; i++)
		if (b[i] != (uint8_t)(magic >> (8 * i)))
			return false;
	return true;
}

enum gp_image_kind gp_image_kind(const void *p)
{
	const uint8_t *b = p;

	if (b == NULL)
		return GP_IMAGE_UNKNOWN;
	if (has_magic(b, GP_FATBIN_WRAPPER_MAGIC))
		return GP_IMAGE_WRAPPER;
	if (has_magic(b, GP_FATBIN_MAGIC))
		return GP_IMAGE_FATBIN;
	if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
		return GP_IMAGE_ELF;
	if (has_magic(b, GP_LINK_MAGIC))
		return GP_IMAGE_LINK;
	return GP_IMAGE_PTX;
}

static size_t max_size(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* The size an image's caller holds when it does not know it (gp_image_size). */
#define UNBOUNDED SIZE_MAX

/* Whether len bytes at off lie within avail bytes. */
static bool fits(uint64_t off, uint64_t len, size_t avail)
{
	return off <= avail && len <= avail - off;
}

/*
 * Extent of a 64-bit little-endian ELF: headers, section table, sections,
 * segments. Each table must lie within avail bytes before it is read, and no
 * extent may pass avail (or wrap).
 */
static int elf_size(const uint8_t *b, size_t avail, size_t *size)
{
	uint64_t phoff, shoff;
	uint16_t phentsize, phnum, shentsize, shnum;
	size_t end;

	if (avail < 0x40 || b[4] != 2 || b[5] != 1) /* ELFCLASS64, little endian */
		return GP_EIMAGE;
	phoff = rd64(b + 0x20);
	shoff = rd64(b + 0x28);
	phentsize = rd16(b + 0x36);
	phnum = rd16(b + 0x38);
	shentsize = rd16(b + 0x3a);
	shnum = rd16(b + 0x3c);
	if ((shnum && shentsize < 0x40) || (phnum && phentsize < 0x38))
		return GP_EIMAGE;
	if (!fits(phoff, (uint64_t)phnum * phentsize, avail) ||
	    !fits(shoff, (uint64_t)shnum * shentsize, avail))
		return GP_EIMAGE;
	end = 0x40;
	end = max_size(end, phoff + (size_t)phnum * phentsize);
	end = max_size(end, shoff + (size_t)shnum * shentsize);
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = b + shoff + (size_t)i * shentsize;
		uint32_t type = rd32(sh + 4);

		if (type == 8) /* SHT_NOBITS occupies no file space */
			continue;
		if (!fits(rd64(sh + 0x18), rd64(sh + 0x20), avail))
			return GP_EIMAGE;
		end = max_size(end, rd64(sh + 0x18) + rd64(sh + 0x20));
	}
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *ph = b + phoff + (size_t)i * phentsize;

		if (!fits(rd64(ph + 0x08), rd64(ph + 0x20), avail))
			return GP_EIMAGE;
		end = max_size(end, rd64(ph + 0x08) + rd64(ph + 0x20));
	}
	*size = end;
	return 0;
}

/* A fatbin's length from its header: the header and what it says follows, within avail. */
static int fatbin_size(const uint8_t *b, size_t avail, size_t *size)
{
	if (avail < FATBIN_HEADER_SIZE || rd16(b + 6) != FATBIN_HEADER_SIZE ||
	    rd64(b + 8) > avail - FATBIN_HEADER_SIZE)
		return GP_EIMAGE;
	*size = FATBIN_HEADER_SIZE + rd64(b + 8);
	return 0;
}

/* The most a link bundle may hold: what the worker takes as one image. */
#define LINK_MAX (1ull << 30)

/* One bundle entry at off of a bundle of size bytes, checked to lie within it. */
static int link_entry(const uint8_t *b, size_t size, size_t off, struct gp_link_entry *e,
		      size_t *next)
{
	uint32_t name_len;
	uint64_t data_len;

	if (size - off < GP_LINK_ENTRY_HEADER)
		return GP_EIMAGE;
	name_len = rd32(b + off + 4);
	data_len = rd64(b + off + 8);
	off += GP_LINK_ENTRY_HEADER;
	if (name_len == 0 || name_len > GP_LINK_MAX_NAME || name_len > size - off)
		return GP_EIMAGE;
	if (b[off + name_len - 1] != 0 || memchr(b + off, 0, name_len - 1) != NULL)
		return GP_EIMAGE; /* one NUL, at the end */
	if (data_len > size - off - name_len)
		return GP_EIMAGE;
	e->type = rd32(b + off - GP_LINK_ENTRY_HEADER);
	e->name = (const char *)(b + off);
	e->data = b + off + name_len;
	e->size = (size_t)data_len;
	*next = off + name_len + (size_t)data_len;
	return 0;
}

/*
 * A bundle's length from its header, every entry checked to lie within it and the last to
 * end at it, and all of it within avail: the worker hands the entries to its driver.
 */
static int link_size(const uint8_t *b, size_t avail, size_t *size)
{
	struct gp_link_entry e;
	uint64_t total;
	uint32_t count;
	size_t off = GP_LINK_HEADER_SIZE;

	if (avail < GP_LINK_HEADER_SIZE || rd16(b + 4) != GP_LINK_VERSION ||
	    rd16(b + 6) != GP_LINK_HEADER_SIZE || rd32(b + 12) != 0)
		return GP_EIMAGE;
	count = rd32(b + 8);
	total = rd64(b + 16);
	if (count > GP_LINK_MAX_ENTRIES || total < GP_LINK_HEADER_SIZE || total > LINK_MAX ||
	    total > avail)
		return GP_EIMAGE;
	for (uint32_t i = 0; i < count; i++)
		if (link_entry(b, (size_t)total, off, &e, &off))
			return GP_EIMAGE;
	if (off != total)
		return GP_EIMAGE;
	*size = (size_t)total;
	return 0;
}

/* The image's length, all of it within avail bytes (UNBOUNDED: the caller does not know). */
static int image_size(const uint8_t *b, size_t avail, size_t *size)
{
	size_t n;

	/* Fewer bytes than a magic can only be PTX text. */
	switch (avail < 4 ? GP_IMAGE_PTX : gp_image_kind(b)) {
	case GP_IMAGE_WRAPPER:
		if (avail != UNBOUNDED)
			return GP_EIMAGE; /* what it wraps lies elsewhere */
		*size = 8 + 2 * sizeof(void *);
		return 0;
	case GP_IMAGE_FATBIN:
		return fatbin_size(b, avail, size);
	case GP_IMAGE_ELF:
		return elf_size(b, avail, size);
	case GP_IMAGE_LINK:
		return link_size(b, avail, size);
	case GP_IMAGE_PTX:
		n = avail == UNBOUNDED ? strlen((const char *)b) : strnlen((const char *)b, avail);
		if (n == avail)
			return GP_EIMAGE; /* no NUL */
		*size = n + 1;
		return 0;
	default:
		return GP_EIMAGE;
	}
}

int gp_image_size(const void *p, size_t *size)
{
	if (p == NULL || size == NULL)
		return -EINVAL;
	return image_size(p, UNBOUNDED, size);
}

int gp_image_size_within(const void *p, size_t len, size_t *size)
{
	if (p == NULL || size == NULL)
		return -EINVAL;
	return image_size(p, len, size);
}

int gp_image_fatbin(const void *p, const uint8_t **fatbin, size_t *size)
{
	const uint8_t *b = p;
	const uint8_t *data;

	if (b == NULL || fatbin == NULL || size == NULL)
		return -EINVAL;
	switch (gp_image_kind(p)) {
	case GP_IMAGE_WRAPPER:
		memcpy(&data, b + 8, sizeof(data));
		if (data == NULL || gp_image_kind(data) != GP_IMAGE_FATBIN)
			return GP_EIMAGE;
		b = data;
		/* fall through */
	case GP_IMAGE_FATBIN:
		if (fatbin_size(b, UNBOUNDED, size))
			return GP_EIMAGE;
		*fatbin = b;
		return 0;
	default:
		return GP_EIMAGE;
	}
}

const void *const *gp_image_prelinked(const void *p)
{
	const uint8_t *b = p;
	const void *const *fatbins;

	if (b == NULL || gp_image_kind(p) != GP_IMAGE_WRAPPER || rd32(b + 4) != 2)
		return NULL;
	memcpy(&fatbins, b + 8 + sizeof(void *), sizeof(fatbins));
	return fatbins;
}

int gp_fatbin_next(const uint8_t *fatbin, size_t size, size_t *off, struct gp_fatbin_entry *e)
{
	const uint8_t *h;
	uint32_t header_size;
	uint64_t payload_size, compressed;

	if (fatbin == NULL || off == NULL || e == NULL)
		return -EINVAL;
	if (*off == 0)
		*off = FATBIN_HEADER_SIZE;
	if (*off >= size)
		return 0;
	if (size - *off < ENTRY_MIN_HEADER)
		return GP_EIMAGE;
	h = fatbin + *off;
	header_size = rd32(h + 4);
	payload_size = rd64(h + 8);
	if (header_size < ENTRY_MIN_HEADER || header_size > size - *off ||
	    payload_size > size - *off - header_size)
		return GP_EIMAGE;
	memset(e, 0, sizeof(*e));
	e->kind = rd16(h);
	e->sm = rd32(h + 28);
	e->flags = rd64(h + 40);
	e->payload = h + header_size;
	e->payload_size = payload_size;
	compressed = rd32(h + 16);
	if (header_size >= 64)
		e->size = rd64(h + 56);
	if (e->flags & GP_FATBIN_FLAG_ZSTD)
		e->compression = GP_FATBIN_ZSTD;
	else if (e->flags & GP_FATBIN_FLAG_LZ4)
		e->compression = GP_FATBIN_LZ4;
	if (e->compression != GP_FATBIN_PLAIN) {
		if (compressed == 0 || compressed > payload_size || e->size == 0)
			return GP_EIMAGE;
		e->payload_size = compressed;
	} else {
		e->size = payload_size;
	}
	*off += header_size + payload_size;
	return 1;
}

int gp_fatbin_entry_unpack(const struct gp_fatbin_entry *e, uint8_t **out, size_t *out_size)
{
	uint8_t *buf;
	size_t n;

	if (e == NULL || out == NULL || out_size == NULL)
		return -EINVAL;
	/* The header's size decides the allocation: a compression bomb (kilobytes that
	 * claim gigabytes, honestly or not) is refused before anything is allocated. */
	if (e->size > GP_FATBIN_UNPACK_MAX)
		return GP_EIMAGE;
	if (e->compression != GP_FATBIN_PLAIN && e->size / GP_FATBIN_RATIO_MAX > e->payload_size)
		return GP_EIMAGE;
	buf = malloc(e->size + 1);
	if (buf == NULL)
		return -ENOMEM;
	switch (e->compression) {
	case GP_FATBIN_PLAIN:
		memcpy(buf, e->payload, e->size);
		n = e->size;
		break;
	case GP_FATBIN_LZ4: {
		int r = -1;

		if (e->payload_size <= INT_MAX) /* e->size is, by the cap above */
			r = LZ4_decompress_safe((const char *)e->payload, (char *)buf,
						(int)e->payload_size, (int)e->size);
		if (r < 0)
			goto out_bad;
		n = (size_t)r;
		break;
	}
	case GP_FATBIN_ZSTD:
		n = ZSTD_decompress(buf, e->size, e->payload, e->payload_size);
		if (ZSTD_isError(n))
			goto out_bad;
		break;
	default:
		goto out_bad;
	}
	if (e->compression != GP_FATBIN_PLAIN && n != e->size)
		goto out_bad; /* the header's size must be what came out */
	buf[n] = 0;
	*out = buf;
	*out_size = n;
	return 0;

out_bad:
	free(buf);
	return GP_EIMAGE;
}

int gp_fatbin_best_ptx(const uint8_t *fatbin, size_t size, unsigned sm, struct gp_fatbin_entry *e)
{
	struct gp_fatbin_entry cur;
	size_t off = 0;
	int found = 0;
	int r;

	while ((r = gp_fatbin_next(fatbin, size, &off, &cur)) == 1) {
		if (cur.kind != GP_FATBIN_ENTRY_PTX || cur.sm > sm)
			continue;
		if (!found || cur.sm > e->sm) {
			*e = cur;
			found = 1;
		}
	}
	return r < 0 ? r : found;
}

/* ---- link bundles ---------------------------------------------------------------- */

int gp_link_next(const uint8_t *bundle, size_t size, size_t *off, struct gp_link_entry *e)
{
	if (bundle == NULL || off == NULL || e == NULL)
		return -EINVAL;
	if (size < GP_LINK_HEADER_SIZE)
		return GP_EIMAGE;
	if (*off == 0)
		*off = GP_LINK_HEADER_SIZE;
	if (*off >= size)
		return 0;
	return link_entry(bundle, size, *off, e, off) ? GP_EIMAGE : 1;
}

void gp_link_builder_init(struct gp_link_builder *b)
{
	memset(b, 0, sizeof(*b));
}

void gp_link_builder_deinit(struct gp_link_builder *b)
{
	if (b == NULL)
		return;
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

static void wr32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void wr64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

int gp_link_add(struct gp_link_builder *b, unsigned type, const char *name, const void *data,
		size_t size)
{
	size_t name_len, need;

	if (b == NULL || name == NULL || (data == NULL && size))
		return -EINVAL;
	name_len = strlen(name) + 1;
	if (name_len > GP_LINK_MAX_NAME || b->count >= GP_LINK_MAX_ENTRIES || size > LINK_MAX)
		return -EINVAL;
	if (b->len == 0)
		b->len = GP_LINK_HEADER_SIZE;
	need = b->len + GP_LINK_ENTRY_HEADER + name_len + size;
	if (need > LINK_MAX)
		return -EINVAL;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *nb;

		while (cap < need)
			cap *= 2;
		nb = realloc(b->buf, cap);
		if (nb == NULL)
			return -ENOMEM;
		b->buf = nb;
		b->cap = cap;
	}
	wr32(b->buf + b->len, type);
	wr32(b->buf + b->len + 4, (uint32_t)name_len);
	wr64(b->buf + b->len + 8, size);
	memcpy(b->buf + b->len + GP_LINK_ENTRY_HEADER, name, name_len);
	if (size)
		memcpy(b->buf + b->len + GP_LINK_ENTRY_HEADER + name_len, data, size);
	b->len = need;
	b->count++;
	return 0;
}

int gp_link_finish(struct gp_link_builder *b, uint8_t **out, size_t *size)
{
	uint16_t v16;

	if (b == NULL || out == NULL || size == NULL)
		return -EINVAL;
	if (b->buf == NULL) {
		b->buf = malloc(GP_LINK_HEADER_SIZE);
		if (b->buf == NULL)
			return -ENOMEM;
		b->len = b->cap = GP_LINK_HEADER_SIZE;
	}
	wr32(b->buf, GP_LINK_MAGIC);
	v16 = GP_LINK_VERSION;
	memcpy(b->buf + 4, &v16, 2);
	v16 = GP_LINK_HEADER_SIZE;
	memcpy(b->buf + 6, &v16, 2);
	wr32(b->buf + 8, b->count);
	wr32(b->buf + 12, 0);
	wr64(b->buf + 16, b->len);
	*out = b->buf;
	*size = b->len;
	memset(b, 0, sizeof(*b));
	return 0;
}
