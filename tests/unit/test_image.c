/* test_image.c -- src/image.c: recognising, sizing, walking and unpacking module images. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lz4.h>
#include <zstd.h>

#include "error.h"
#include "image.h"
#include "../common/zstd_bomb.h"

static const char PTX75[] = ".version 9.0\n.target sm_75\n.address_size 64\n// seventy-five\n";
static const char PTX70[] = ".version 9.0\n.target sm_70\n// seventy\n";
static const char PTX86[] = ".version 9.0\n.target sm_86\n// eighty-six\n";

/* Builds a fatbin in buf: entries of (kind, sm, compression, payload). */
struct entry_spec {
	unsigned kind, sm;
	int compression;
	const void *data;
	size_t size;
};

static size_t put_entry(uint8_t *p, const struct entry_spec *e)
{
	uint8_t payload[4096];
	size_t stored;
	uint64_t flags = 0x11, size64;
	uint32_t hs = e->kind == 1 ? 80 : 64, u32;
	uint16_t u16;

	if (e->compression == GP_FATBIN_ZSTD) {
		stored = ZSTD_compress(payload, sizeof(payload), e->data, e->size, 3);
		flags |= GP_FATBIN_FLAG_ZSTD;
	} else if (e->compression == GP_FATBIN_LZ4) {
		stored = (size_t)LZ4_compress_default(e->data, (char *)payload, (int)e->size,
						      (int)sizeof(payload));
		flags |= GP_FATBIN_FLAG_LZ4;
	} else {
		memcpy(payload, e->data, e->size);
		stored = e->size;
	}
	size64 = (stored + 7) & ~7ull; /* payloads are padded to 8 */
	memset(p, 0, hs + size64);
	u16 = (uint16_t)e->kind;
	memcpy(p, &u16, 2);
	memcpy(p + 4, &hs, 4);
	memcpy(p + 8, &size64, 8);
	u32 = e->compression ? (uint32_t)stored : 0;
	memcpy(p + 16, &u32, 4);
	u32 = e->sm;
	memcpy(p + 28, &u32, 4);
	memcpy(p + 40, &flags, 8);
	size64 = e->compression ? e->size : 0;
	memcpy(p + 56, &size64, 8);
	memcpy(p + hs, payload, stored);
	return hs + ((stored + 7) & ~7ull);
}

static size_t make_fatbin(uint8_t *buf, const struct entry_spec *es, int n)
{
	uint32_t magic = GP_FATBIN_MAGIC;
	uint16_t version = 1, hs = 16;
	uint64_t size = 0;

	for (int i = 0; i < n; i++)
		size += put_entry(buf + 16 + size, &es[i]);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &hs, 2);
	memcpy(buf + 8, &size, 8);
	return 16 + size;
}

static void test_invalid_arguments(void **state)
{
	size_t n;
	const uint8_t *f;
	struct gp_fatbin_entry e;
	size_t off = 0;
	uint8_t *out;

	assert_int_equal(gp_image_kind(NULL), GP_IMAGE_UNKNOWN);
	assert_int_equal(gp_image_size(NULL, &n), -EINVAL);
	assert_int_equal(gp_image_size(PTX75, NULL), -EINVAL);
	assert_int_equal(gp_image_fatbin(NULL, &f, &n), -EINVAL);
	assert_int_equal(gp_image_fatbin(PTX75, &f, &n), GP_EIMAGE);
	assert_int_equal(gp_fatbin_next(NULL, 0, &off, &e), -EINVAL);
	assert_int_equal(gp_fatbin_entry_unpack(NULL, &out, &n), -EINVAL);
}

static void test_ptx(void **state)
{
	size_t n;

	assert_int_equal(gp_image_kind(PTX75), GP_IMAGE_PTX);
	assert_int_equal(gp_image_size(PTX75, &n), 0);
	assert_int_equal(n, sizeof(PTX75));
}

static void test_fatbin_walk_and_unpack(void **state)
{
	static uint8_t buf[16384];
	const char elf[] = "\x7f"
			   "ELF not really";
	struct entry_spec es[] = {
		{2, 75, GP_FATBIN_PLAIN, elf, sizeof(elf)},
		{1, 75, GP_FATBIN_ZSTD, PTX75, sizeof(PTX75) - 1},
		{1, 70, GP_FATBIN_LZ4, PTX70, sizeof(PTX70) - 1},
		{1, 86, GP_FATBIN_PLAIN, PTX86, sizeof(PTX86)},
	};
	size_t total = make_fatbin(buf, es, 4), n, off = 0;
	struct gp_fatbin_entry e;
	const uint8_t *f;
	uint8_t *text;
	int count = 0;

	assert_int_equal(gp_image_kind(buf), GP_IMAGE_FATBIN);
	assert_int_equal(gp_image_size(buf, &n), 0);
	assert_int_equal(n, total);
	assert_int_equal(gp_image_fatbin(buf, &f, &n), 0);
	assert_ptr_equal(f, buf);
	while (gp_fatbin_next(buf, total, &off, &e) == 1) {
		assert_int_equal(e.kind, es[count].kind);
		assert_int_equal(e.sm, es[count].sm);
		assert_int_equal(e.compression, es[count].compression);
		assert_int_equal(gp_fatbin_entry_unpack(&e, &text, &n), 0);
		assert_memory_equal(text, es[count].data, es[count].size);
		assert_int_equal(text[n], 0);
		free(text);
		count++;
	}
	assert_int_equal(count, 4);
	/* best PTX for sm_75: the compute_75 one; for sm_72: compute_70; for sm_60: none */
	assert_int_equal(gp_fatbin_best_ptx(buf, total, 75, &e), 1);
	assert_int_equal(e.sm, 75);
	assert_int_equal(gp_fatbin_best_ptx(buf, total, 72, &e), 1);
	assert_int_equal(e.sm, 70);
	assert_int_equal(gp_fatbin_best_ptx(buf, total, 60, &e), 0);
}

static void test_wrapper(void **state)
{
	static uint8_t buf[4096] __attribute__((aligned(8)));
	struct entry_spec es[] = {{1, 75, GP_FATBIN_PLAIN, PTX75, sizeof(PTX75)}};
	size_t total = make_fatbin(buf, es, 1), n;
	struct {
		int magic, version;
		const void *data;
		void *filename;
	} w = {(int)GP_FATBIN_WRAPPER_MAGIC, 1, buf, NULL};
	const uint8_t *f;

	assert_int_equal(gp_image_kind(&w), GP_IMAGE_WRAPPER);
	assert_int_equal(gp_image_size(&w, &n), 0);
	assert_int_equal(n, sizeof(w));
	assert_int_equal(gp_image_fatbin(&w, &f, &n), 0);
	assert_ptr_equal(f, buf);
	assert_int_equal(n, total);
	w.data = PTX75; /* a wrapper must point at a fatbin */
	assert_int_equal(gp_image_fatbin(&w, &f, &n), GP_EIMAGE);
}

static void test_malformed(void **state)
{
	static uint8_t buf[4096];
	struct entry_spec es[] = {{1, 75, GP_FATBIN_ZSTD, PTX75, sizeof(PTX75) - 1}};
	size_t total = make_fatbin(buf, es, 1), off = 0, n;
	struct gp_fatbin_entry e;
	uint8_t *text;
	uint64_t huge = 1ull << 40;

	/* truncated: the entry no longer fits */
	assert_int_equal(gp_fatbin_next(buf, total - 8, &off, &e), GP_EIMAGE);
	off = 0;
	assert_int_equal(gp_fatbin_next(buf, 40, &off, &e), GP_EIMAGE);
	/* a payload size beyond the fatbin */
	memcpy(buf + 16 + 8, &huge, 8);
	off = 0;
	assert_int_equal(gp_fatbin_next(buf, total, &off, &e), GP_EIMAGE);
	/* a claimed uncompressed size that is wrong */
	total = make_fatbin(buf, es, 1);
	huge = sizeof(PTX75) + 10;
	memcpy(buf + 16 + 56, &huge, 8);
	off = 0;
	assert_int_equal(gp_fatbin_next(buf, total, &off, &e), 1);
	assert_int_equal(gp_fatbin_entry_unpack(&e, &text, &n), GP_EIMAGE);
	/* a header whose size field is wrong */
	buf[6] = 99;
	assert_int_equal(gp_image_size(buf, &n), GP_EIMAGE);
}

/* One ZSTD entry whose stored bytes are `stored` (stored_len of them), claiming `claim`
 * bytes unpacked, walked into e. */
static void bomb_entry(uint8_t *buf, const uint8_t *stored, size_t stored_len, uint64_t claim,
		       struct gp_fatbin_entry *e)
{
	uint32_t hs = 80, u32 = (uint32_t)stored_len;
	uint64_t flags = 0x11 | GP_FATBIN_FLAG_ZSTD, padded = (stored_len + 7) & ~7ull;
	uint64_t total = hs + padded;
	uint32_t magic = GP_FATBIN_MAGIC;
	uint16_t version = 1, fhs = 16, kind = 1;
	size_t off = 0;

	memset(buf, 0, 16 + total);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &fhs, 2);
	memcpy(buf + 8, &total, 8);
	memcpy(buf + 16, &kind, 2);
	memcpy(buf + 16 + 4, &hs, 4);
	memcpy(buf + 16 + 8, &padded, 8);
	memcpy(buf + 16 + 16, &u32, 4);
	u32 = 75;
	memcpy(buf + 16 + 28, &u32, 4);
	memcpy(buf + 16 + 40, &flags, 8);
	memcpy(buf + 16 + 56, &claim, 8);
	memcpy(buf + 16 + hs, stored, stored_len);
	assert_int_equal(gp_fatbin_next(buf, 16 + total, &off, e), 1);
}

/* A compression bomb is refused before anything is allocated for it: an entry may unpack to
 * at most GP_FATBIN_UNPACK_MAX, and to at most GP_FATBIN_RATIO_MAX times what it stores. */
static void test_unpack_bounded(void **state)
{
	static uint8_t frame[6 + 4 * 2048], buf[16 + 80 + sizeof(frame) + 8];
	static uint8_t big[(GP_FATBIN_UNPACK_MAX / GP_FATBIN_RATIO_MAX) + 64];
	struct gp_fatbin_entry e;
	size_t len, n;
	uint8_t *text = NULL;

	/* 8 KiB that unpack to 256 MiB: an honest header, a ratio of 32768 */
	len = zstd_bomb(frame, 2048, 'x');
	bomb_entry(buf, frame, len, 2048ull * ZSTD_BOMB_BLOCK, &e);
	assert_int_equal(gp_fatbin_entry_unpack(&e, &text, &n), GP_EIMAGE);
	assert_null(text);
	/* past the absolute cap, whatever the ratio: refused without decompressing */
	e.payload = big;
	e.payload_size = sizeof(big);
	e.size = GP_FATBIN_UNPACK_MAX + 1;
	assert_int_equal(gp_fatbin_entry_unpack(&e, &text, &n), GP_EIMAGE);
	e.compression = GP_FATBIN_LZ4;
	assert_int_equal(gp_fatbin_entry_unpack(&e, &text, &n), GP_EIMAGE);
	assert_null(text);
}

static void test_elf_size(void **state)
{
	static uint8_t elf[2048];
	uint64_t shoff = 1024, sec_off = 200, sec_size = 300;
	uint16_t shentsize = 64, shnum = 3;
	size_t n;

	memcpy(elf,
	       "\x7f"
	       "ELF",
	       4);
	elf[4] = 2; /* 64-bit */
	elf[5] = 1; /* little endian */
	memcpy(elf + 0x28, &shoff, 8);
	memcpy(elf + 0x3a, &shentsize, 2);
	memcpy(elf + 0x3c, &shnum, 2);
	/* section 1: PROGBITS at 200..500; section 2: NOBITS that would end at 1900 */
	elf[shoff + 64 + 4] = 1;
	memcpy(elf + shoff + 64 + 0x18, &sec_off, 8);
	memcpy(elf + shoff + 64 + 0x20, &sec_size, 8);
	elf[shoff + 128 + 4] = 8;
	sec_size = 1700;
	memcpy(elf + shoff + 128 + 0x18, &sec_off, 8);
	memcpy(elf + shoff + 128 + 0x20, &sec_size, 8);
	assert_int_equal(gp_image_kind(elf), GP_IMAGE_ELF);
	assert_int_equal(gp_image_size(elf, &n), 0);
	assert_int_equal(n, 1024 + 3 * 64);
	/* held in fewer bytes than it spans, or in exactly those */
	assert_int_equal(gp_image_size_within(elf, 1024 + 3 * 64, &n), 0);
	assert_int_equal(n, 1024 + 3 * 64);
	assert_int_equal(gp_image_size_within(elf, 1024 + 3 * 64 - 1, &n), GP_EIMAGE);
	assert_int_equal(gp_image_size_within(elf, 0x3f, &n), GP_EIMAGE);
	/* offsets that wrap around: no extent is taken from them */
	sec_off = UINT64_MAX - 8;
	memcpy(elf + shoff + 64 + 0x18, &sec_off, 8);
	assert_int_equal(gp_image_size(elf, &n), GP_EIMAGE);
	shoff = UINT64_MAX - 0x3f;
	memcpy(elf + 0x28, &shoff, 8);
	assert_int_equal(gp_image_size(elf, &n), GP_EIMAGE);
	elf[4] = 1; /* 32-bit ELF: not a cubin */
	assert_int_equal(gp_image_size(elf, &n), GP_EIMAGE);
}

static void test_size_within(void **state)
{
	static uint8_t buf[4096];
	struct entry_spec es[] = {{1, 75, GP_FATBIN_PLAIN, PTX75, sizeof(PTX75)}};
	size_t total = make_fatbin(buf, es, 1), n;
	struct {
		int magic, version;
		const void *data;
		void *filename;
	} w = {(int)GP_FATBIN_WRAPPER_MAGIC, 1, buf, NULL};
	uint64_t huge = UINT64_MAX - 8;
	const uint8_t *f;

	assert_int_equal(gp_image_size_within(NULL, 1, &n), -EINVAL);
	assert_int_equal(gp_image_size_within(PTX75, sizeof(PTX75), NULL), -EINVAL);
	assert_int_equal(gp_image_size_within(PTX75, sizeof(PTX75), &n), 0);
	assert_int_equal(n, sizeof(PTX75));
	assert_int_equal(gp_image_size_within(PTX75, sizeof(PTX75) - 1, &n), GP_EIMAGE);
	assert_int_equal(gp_image_size_within("", 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(gp_image_size_within("\x7f"
					      "EL",
					      3, &n),
			 GP_EIMAGE);
	assert_int_equal(gp_image_size_within(buf, total, &n), 0);
	assert_int_equal(n, total);
	assert_int_equal(gp_image_size_within(buf, total - 1, &n), GP_EIMAGE);
	assert_int_equal(gp_image_size_within(buf, 15, &n), GP_EIMAGE);
	/* a wrapper's fatbin is not in its bytes */
	assert_int_equal(gp_image_size_within(&w, sizeof(w), &n), GP_EIMAGE);
	/* a fatbin size that wraps around */
	memcpy(buf + 8, &huge, 8);
	assert_int_equal(gp_image_size(buf, &n), GP_EIMAGE);
	assert_int_equal(gp_image_fatbin(buf, &f, &n), GP_EIMAGE);
}

/* A bundle of two PTX inputs, as the interposer's cuLinkComplete makes it. */
static void make_bundle(uint8_t **out, size_t *size)
{
	struct gp_link_builder b;

	gp_link_builder_init(&b);
	assert_int_equal(gp_link_add(&b, 1, "a.ptx", PTX75, sizeof(PTX75)), 0);
	assert_int_equal(gp_link_add(&b, 1, "b.ptx", PTX70, sizeof(PTX70)), 0);
	assert_int_equal(gp_link_finish(&b, out, size), 0);
	assert_null(b.buf);
}

static void test_link_bundle(void **state)
{
	struct gp_link_builder b;
	struct gp_link_entry e;
	uint8_t *bundle, *empty;
	size_t size, n, off = 0;
	char longname[GP_LINK_MAX_NAME + 1];

	/* invalid arguments first */
	assert_int_equal(gp_link_next(NULL, 0, &off, &e), -EINVAL);
	gp_link_builder_init(&b);
	assert_int_equal(gp_link_add(&b, 1, NULL, "x", 1), -EINVAL);
	assert_int_equal(gp_link_add(&b, 1, "x", NULL, 1), -EINVAL);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(gp_link_add(&b, 1, longname, "x", 1), -EINVAL);
	assert_int_equal(gp_link_finish(&b, &empty, &size), 0);
	assert_int_equal(size, GP_LINK_HEADER_SIZE);
	assert_int_equal(gp_image_kind(empty), GP_IMAGE_LINK);
	assert_int_equal(gp_image_size_within(empty, size, &n), 0);
	assert_int_equal(gp_link_next(empty, size, &off, &e), 0);
	free(empty);
	gp_link_builder_deinit(NULL);

	make_bundle(&bundle, &size);
	assert_int_equal(gp_image_kind(bundle), GP_IMAGE_LINK);
	assert_int_equal(gp_image_size(bundle, &n), 0);
	assert_int_equal(n, size);
	assert_int_equal(gp_image_size_within(bundle, size, &n), 0);
	off = 0;
	assert_int_equal(gp_link_next(bundle, size, &off, &e), 1);
	assert_int_equal(e.type, 1);
	assert_string_equal(e.name, "a.ptx");
	assert_int_equal(e.size, sizeof(PTX75));
	assert_memory_equal(e.data, PTX75, sizeof(PTX75));
	assert_int_equal(gp_link_next(bundle, size, &off, &e), 1);
	assert_string_equal(e.name, "b.ptx");
	assert_memory_equal(e.data, PTX70, sizeof(PTX70));
	assert_int_equal(gp_link_next(bundle, size, &off, &e), 0);

	/* every truncation is refused, never read past */
	for (size_t cut = 0; cut < size; cut++) {
		uint8_t *t = malloc(cut ? cut : 1);

		memcpy(t, bundle, cut);
		assert_int_equal(gp_image_size_within(t, cut, &n), GP_EIMAGE);
		free(t);
	}
	free(bundle);
}

/* Each length field set to values around and past what holds: refused, or still exact. */
static void test_link_bundle_lengths(void **state)
{
	static const uint64_t vals[] = {0,
					1,
					23,
					24,
					25,
					0x7fffffff,
					0xffffffff,
					1ull << 30,
					(1ull << 30) + 1,
					UINT64_MAX - 8,
					UINT64_MAX};
	/* offsets of: count, zero word, total, entry 0 name length, entry 0 data length,
	 * entry 1 name length (entry 0 is 16 + 6 + sizeof(PTX75) bytes) */
	const size_t e1 = GP_LINK_HEADER_SIZE + GP_LINK_ENTRY_HEADER + 6 + sizeof(PTX75);
	const struct {
		size_t off, width;
	} fields[] = {{8, 4}, {12, 4}, {16, 8}, {28, 4}, {32, 8}, {e1 + 4, 4}, {e1 + 8, 8}};
	uint8_t *bundle, *t;
	size_t size, n;

	make_bundle(&bundle, &size);
	t = malloc(size);
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
			uint32_t v32 = (uint32_t)vals[v];
			struct gp_link_entry e;
			size_t off = 0;
			int r;

			memcpy(t, bundle, size);
			if (fields[f].width == 4)
				memcpy(t + fields[f].off, &v32, 4);
			else
				memcpy(t + fields[f].off, &vals[v], 8);
			r = gp_image_size_within(t, size, &n);
			if (memcmp(t, bundle, size) == 0) {
				assert_int_equal(r, 0); /* the value it had */
				continue;
			}
			assert_int_equal(r, GP_EIMAGE);
			/* the walker alone stays within the bytes too */
			while ((r = gp_link_next(t, size, &off, &e)) == 1)
				assert_true(e.data + e.size <= t + size);
			assert_true(r == 0 || r == GP_EIMAGE);
		}
	}
	/* a name without its NUL, and a version we do not know */
	memcpy(t, bundle, size);
	t[GP_LINK_HEADER_SIZE + GP_LINK_ENTRY_HEADER + 5] = 'x';
	assert_int_equal(gp_image_size_within(t, size, &n), GP_EIMAGE);
	memcpy(t, bundle, size);
	t[4] = 2;
	assert_int_equal(gp_image_size_within(t, size, &n), GP_EIMAGE);
	free(t);
	free(bundle);
}

/* An -rdc program's wrapper (version 2) names its units' fatbins; others name none. */
static void test_prelinked(void **state)
{
	static uint8_t fb[4096];
	struct entry_spec es[] = {{1, 75, GP_FATBIN_PLAIN, PTX75, sizeof(PTX75)}};
	const void *units[] = {fb, NULL};
	struct {
		int magic, version;
		const void *data;
		const void *fatbins;
	} w = {(int)GP_FATBIN_WRAPPER_MAGIC, 2, fb, units};

	make_fatbin(fb, es, 1);
	assert_null(gp_image_prelinked(NULL));
	assert_null(gp_image_prelinked(PTX75));
	assert_null(gp_image_prelinked(fb));
	assert_ptr_equal(gp_image_prelinked(&w), units);
	w.version = 1;
	assert_null(gp_image_prelinked(&w));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_arguments),
		cmocka_unit_test(test_ptx),
		cmocka_unit_test(test_fatbin_walk_and_unpack),
		cmocka_unit_test(test_unpack_bounded),
		cmocka_unit_test(test_wrapper),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_elf_size),
		cmocka_unit_test(test_size_within),
		cmocka_unit_test(test_link_bundle),
		cmocka_unit_test(test_link_bundle_lengths),
		cmocka_unit_test(test_prelinked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
