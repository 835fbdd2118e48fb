/* test_md2.c -- MD2 against RFC 1319's test suite, HMAC-MD2 against an independent reference. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "md2.h"

static void hex(const uint8_t *d, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_invalid_arguments(void **state)
{
	struct gp__md2 md;
	struct gp__hmac_md2 h;
	uint8_t out[16];

	assert_int_equal(gp__md2_init(NULL), -EINVAL);
	assert_int_equal(gp__md2_update(NULL, "a", 1), -EINVAL);
	gp__md2_init(&md);
	assert_int_equal(gp__md2_update(&md, NULL, 1), -EINVAL);
	assert_int_equal(gp__md2_update(&md, NULL, 0), 0);
	assert_int_equal(gp__md2_final(&md, NULL), -EINVAL);
	assert_int_equal(gp__md2_final(NULL, out), -EINVAL);
	assert_int_equal(gp__md2(NULL, 1, out), -EINVAL);
	assert_int_equal(gp__md2("a", 1, NULL), -EINVAL);
	assert_int_equal(gp__md2(NULL, 0, out), 0);

	assert_int_equal(gp__hmac_md2_init(NULL, "k", 1), -EINVAL);
	assert_int_equal(gp__hmac_md2_init(&h, NULL, 1), -EINVAL);
	assert_int_equal(gp__hmac_md2_init(&h, NULL, 0), 0);
	assert_int_equal(gp__hmac_md2_update(NULL, "a", 1), -EINVAL);
	assert_int_equal(gp__hmac_md2_update(&h, NULL, 1), -EINVAL);
	assert_int_equal(gp__hmac_md2_final(&h, NULL), -EINVAL);
	assert_int_equal(gp__hmac_md2_final(NULL, out), -EINVAL);
	assert_int_equal(gp__hmac_md2(NULL, 1, "a", 1, out), -EINVAL);
	assert_int_equal(gp__hmac_md2("k", 1, NULL, 1, out), -EINVAL);
	assert_int_equal(gp__hmac_md2("k", 1, "a", 1, NULL), -EINVAL);
}

/* RFC 1319 appendix A.5, the whole suite. */
static const struct {
	const char *msg;
	const char *digest;
} rfc1319[] = {
	{"", "8350e5a3e24c153df2275c9f80692773"},
	{"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"},
	{"abc", "da853b0d3f88d99b30283a69e6ded6bb"},
	{"message digest", "ab4f496bfb2a530b219ff33031fe06b0"},
	{"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"},
	{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	 "da33def2a42df13975352846c30338cd"},
	{"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	 "d5976f79d83d3a0dc9806c3c66f3efd8"},
};

static void test_rfc1319_suite(void **state)
{
	for (size_t i = 0; i < sizeof(rfc1319) / sizeof(rfc1319[0]); i++) {
		uint8_t d[16];
		char h[33];

		assert_int_equal(gp__md2(rfc1319[i].msg, strlen(rfc1319[i].msg), d), 0);
		hex(d, h);
		assert_string_equal(h, rfc1319[i].digest);
	}
}

/* Any split of the input gives the same digest (block boundaries, empty updates). */
static void test_incremental(void **state)
{
	const char *msg = rfc1319[6].msg;
	size_t len = strlen(msg);

	for (size_t step = 1; step <= 33; step++) {
		struct gp__md2 md;
		uint8_t d[16];
		char h[33];

		gp__md2_init(&md);
		for (size_t off = 0; off < len; off += step) {
			size_t n = len - off < step ? len - off : step;

			assert_int_equal(gp__md2_update(&md, msg + off, n), 0);
			assert_int_equal(gp__md2_update(&md, msg, 0), 0);
		}
		assert_int_equal(gp__md2_final(&md, d), 0);
		hex(d, h);
		assert_string_equal(h, rfc1319[6].digest);
	}
}

/* Known answers from tests/unit/ref_md2_hmac.py (independent Python, S-table from pi). */
static const struct {
	const char *key;
	size_t keylen;
	const char *msg;
	uint8_t mac[16];
} hmac_kat[] = {
	{"",
	 0,
	 "",
	 {0x6f, 0x6e, 0x03, 0x12, 0x23, 0xb3, 0x6c, 0xd2, 0xa9, 0x97, 0x78, 0x7a, 0x03, 0xd1, 0x6b,
	  0xf5}},
	{"key",
	 3,
	 "The quick brown fox jumps over the lazy dog",
	 {0x13, 0x75, 0x8b, 0x95, 0x34, 0xbf, 0xb3, 0x8d, 0x85, 0x04, 0x57, 0x81, 0x46, 0x13, 0xb0,
	  0xc1}},
	{"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
	 16,
	 "exactly one block",
	 {0x91, 0x32, 0xbc, 0x01, 0x6a, 0xd6, 0x93, 0xd3, 0x91, 0xc2, 0x40, 0xe2, 0xb8, 0x4a, 0x2c,
	  0x25}},
	{"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
	 "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
	 "\x20\x21\x22\x23\x24\x25\x26\x27",
	 40,
	 "a key longer than the block is hashed first",
	 {0xe8, 0x0f, 0xbb, 0x60, 0xc1, 0xf3, 0xd7, 0xad, 0x84, 0x17, 0x3e, 0x87, 0xe6, 0x78, 0x1c,
	  0x6e}},
	{"\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b",
	 16,
	 "Hi There",
	 {0xb5, 0x24, 0xbe, 0x01, 0x96, 0xe4, 0x91, 0xed, 0x44, 0x82, 0x37, 0x46, 0xcd, 0x89, 0x23,
	  0xaf}},
};

static void test_hmac_known_answers(void **state)
{
	for (size_t i = 0; i < sizeof(hmac_kat) / sizeof(hmac_kat[0]); i++) {
		const char *msg = hmac_kat[i].msg;
		struct gp__hmac_md2 h;
		uint8_t mac[16];

		assert_int_equal(
			gp__hmac_md2(hmac_kat[i].key, hmac_kat[i].keylen, msg, strlen(msg), mac),
			0);
		assert_memory_equal(mac, hmac_kat[i].mac, 16);

		/* The same, a byte at a time. */
		assert_int_equal(gp__hmac_md2_init(&h, hmac_kat[i].key, hmac_kat[i].keylen), 0);
		for (size_t j = 0; msg[j]; j++)
			assert_int_equal(gp__hmac_md2_update(&h, msg + j, 1), 0);
		assert_int_equal(gp__hmac_md2_final(&h, mac), 0);
		assert_memory_equal(mac, hmac_kat[i].mac, 16);
	}
}

/* A large input goes through without trouble and differs from a one-byte change. */
static void test_large_input(void **state)
{
	size_t n = 1 << 20;
	uint8_t *buf = calloc(1, n), a[16], b[16];

	assert_non_null(buf);
	assert_int_equal(gp__md2(buf, n, a), 0);
	buf[n - 1] = 1;
	assert_int_equal(gp__md2(buf, n, b), 0);
	assert_memory_not_equal(a, b, 16);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_arguments), cmocka_unit_test(test_rfc1319_suite),
		cmocka_unit_test(test_incremental),	  cmocka_unit_test(test_hmac_known_answers),
		cmocka_unit_test(test_large_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
