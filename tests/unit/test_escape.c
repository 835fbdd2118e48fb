/* test_escape.c -- gp_escape(): client text made safe for logs, terminals and tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escape.h"

static const char *esc(const char *s, const char *also)
{
	static char buf[256];

	gp_escape(buf, sizeof(buf), s, also);
	return buf;
}

/* ---- invalid arguments first ---- */

static void test_null_and_empty(void **state)
{
	char buf[4] = "xyz";

	assert_int_equal(gp_escape(buf, 0, "abc", NULL), 0);
	assert_string_equal(buf, "xyz"); /* nothing written without room */
	assert_int_equal(gp_escape(buf, sizeof(buf), NULL, NULL), 0);
	assert_string_equal(buf, "");
	assert_int_equal(gp_escape(buf, 1, "abc", NULL), 0);
	assert_string_equal(buf, "");
	assert_int_equal(gp_utf8_char((const unsigned char *)"a", 0), 0);
}

/* ---- normal text ---- */

static void test_printable_kept(void **state)
{
	assert_string_equal(esc("vector_add pid 12", NULL), "vector_add pid 12");
	/* well-formed UTF-8 of printable characters stays as it is */
	assert_string_equal(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NULL),
			    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

/* ---- what a hostile client sends ---- */

static void test_forged_log_line(void **state)
{
	assert_string_equal(esc("x\n gpupoold: info: forged\x1b[2J", NULL),
			    "x\\x0a gpupoold: info: forged\\x1b[2J");
	assert_string_equal(esc("a\rb\tc\x7f", NULL), "a\\x0db\\x09c\\x7f");
}

static void test_backslash_escaped(void **state)
{
	/* a literal "\x1b" from the client cannot pass for an escaped byte */
	assert_string_equal(esc("\\x1b", NULL), "\\x5cx1b");
}

static void test_c1_controls(void **state)
{
	/* U+009B is CSI on terminals that take 8-bit controls; U+0085 is NEL */
	assert_string_equal(esc("\xc2\x9b"
				"2J\xc2\x85",
				NULL),
			    "\\xc2\\x9b2J\\xc2\\x85");
	assert_string_equal(esc("\xc2\xa0", NULL), "\xc2\xa0"); /* U+00A0 is printable */
}

static void test_malformed_utf8(void **state)
{
	assert_string_equal(esc("\xff\xfe", NULL), "\\xff\\xfe");
	assert_string_equal(esc("\xc0\x8a", NULL), "\\xc0\\x8a");	   /* overlong \n */
	assert_string_equal(esc("\xe0\x80\x8a", NULL), "\\xe0\\x80\\x8a"); /* overlong */
	assert_string_equal(esc("\xed\xa0\x80", NULL), "\\xed\\xa0\\x80"); /* surrogate */
	assert_string_equal(esc("\xf4\x90\x80\x80", NULL), "\\xf4\\x90\\x80\\x80"); /* > 10FFFF */
	assert_string_equal(esc("ab\xe2\x82", NULL), "ab\\xe2\\x82");		    /* cut short */
	assert_string_equal(esc("\x80z", NULL), "\\x80z");			    /* lone tail */
}

static void test_also(void **state)
{
	assert_string_equal(esc("two words|x", " |"), "two\\x20words\\x7cx");
	assert_string_equal(esc("two words", NULL), "two words");
}

/* ---- limits ---- */

static void test_cut_between_whole_escapes(void **state)
{
	char buf[8];

	/* "ab" + "\x1b" would need 7 bytes and the NUL: only "ab" fits in 6 */
	assert_int_equal(gp_escape(buf, 6, "ab\x1b", NULL), 2);
	assert_string_equal(buf, "ab");
	assert_int_equal(gp_escape(buf, 7, "ab\x1b", NULL), 6);
	assert_string_equal(buf, "ab\\x1b");
	/* a UTF-8 character is never split */
	assert_int_equal(gp_escape(buf, 3, "a\xe2\x82\xac", NULL), 1);
	assert_string_equal(buf, "a");
	assert_int_equal(gp_escape(buf, 5, "a\xe2\x82\xac", NULL), 4);
}

/* ---- JSON strings ---- */

static void test_json_escape(void **state)
{
	char buf[64];

	assert_int_equal(gp_json_escape(buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "");
	gp_json_escape(buf, sizeof(buf), "a\"b\\c\n\x1b\x7f\xc2\x9b\xff\xc3\xa9");
	assert_string_equal(buf, "a\\\"b\\\\c\\u000a\\u001b\\u007f\\u009b\\ufffd\xc3\xa9");
	/* Cut between whole escapes; the return says how much the whole needs. */
	assert_int_equal(gp_json_escape(buf, 8, "ab\ncd"), 10);
	assert_string_equal(buf, "ab");
	assert_int_equal(gp_json_escape(buf, 0, "ab"), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_and_empty),
		cmocka_unit_test(test_printable_kept),
		cmocka_unit_test(test_forged_log_line),
		cmocka_unit_test(test_backslash_escaped),
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_c1_controls),
		cmocka_unit_test(test_malformed_utf8),
		cmocka_unit_test(test_also),
		cmocka_unit_test(test_cut_between_whole_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
