/* test_frame.c -- the frame envelope: header codec and the incremental decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "frame.h"

static size_t make_frame(uint8_t *out, uint16_t type, uint16_t flags, uint64_t id, const char *msg,
			 size_t bulk_len)
{
	struct gp_frame_hdr h = {.msg_len = (uint32_t)strlen(msg),
				 .bulk_len = (uint32_t)bulk_len,
				 .request_id = id,
				 .type = type,
				 .flags = flags};

	gp_frame_hdr_encode(&h, out);
	memcpy(out + GP_FRAME_HDR_SIZE, msg, h.msg_len);
	for (size_t i = 0; i < bulk_len; i++)
		out[GP_FRAME_HDR_SIZE + h.msg_len + i] = (uint8_t)(i * 7);
	return GP_FRAME_HDR_SIZE + h.msg_len + bulk_len;
}

/* ---- invalid input first ---- */

static void test_hdr_rejects_bad_magic(void **state)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h = {.type = GP_MSG_REPLY}, out;

	gp_frame_hdr_encode(&h, raw);
	raw[20] ^= 0xff;
	assert_int_equal(gp_frame_hdr_decode(raw, &out), GP_EFRAME);
}

static void test_hdr_rejects_reserved_and_unknown_flags(void **state)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h = {.type = GP_MSG_REPLY}, out;

	gp_frame_hdr_encode(&h, raw);
	raw[22] = 1;
	assert_int_equal(gp_frame_hdr_decode(raw, &out), GP_EFRAME);
	h.flags = 0x8000;
	gp_frame_hdr_encode(&h, raw);
	assert_int_equal(gp_frame_hdr_decode(raw, &out), GP_EFRAME);
}

static void test_hdr_rejects_oversize(void **state)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h = {.type = GP_MSG_REPLY, .msg_len = GP_FRAME_MSG_MAX + 1}, out;

	gp_frame_hdr_encode(&h, raw);
	assert_int_equal(gp_frame_hdr_decode(raw, &out), GP_ETOOBIG);
	h.msg_len = 0;
	h.bulk_len = GP_FRAME_BULK_MAX + 1;
	gp_frame_hdr_encode(&h, raw);
	assert_int_equal(gp_frame_hdr_decode(raw, &out), GP_ETOOBIG);
}

static void test_decoder_garbage_is_an_error(void **state)
{
	struct gp_frame_decoder d;
	struct gp_frame f;
	const char junk[] = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";

	gp_frame_decoder_init(&d, 1 << 20);
	assert_int_equal(gp_frame_decoder_feed(&d, junk, sizeof(junk)), 0);
	assert_int_equal(gp_frame_decoder_next(&d, &f), GP_EFRAME);
	gp_frame_decoder_deinit(&d);
}

static void test_decoder_frame_over_its_limit(void **state)
{
	struct gp_frame_decoder d;
	struct gp_frame f;
	uint8_t buf[4096];
	size_t n = make_frame(buf, GP_MSG_DATA, 0, 1, "", 2000);

	gp_frame_decoder_init(&d, 1024);
	assert_int_equal(gp_frame_decoder_feed(&d, buf, GP_FRAME_HDR_SIZE), 0);
	assert_int_equal(gp_frame_decoder_next(&d, &f), GP_ETOOBIG);
	(void)n;
	gp_frame_decoder_deinit(&d);
}

/* ---- normal behaviour ---- */

static void test_hdr_roundtrip(void **state)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h = {.msg_len = 1234,
				 .bulk_len = 99999,
				 .request_id = 0x0102030405060708ull,
				 .type = GP_MSG_LAUNCH,
				 .flags = GP_F_NO_REPLY | GP_F_MORE},
			    out;

	gp_frame_hdr_encode(&h, raw);
	/* Little-endian on the wire whatever the host. */
	assert_int_equal(raw[0], 1234 & 0xff);
	assert_int_equal(raw[8], 0x08);
	assert_int_equal(raw[15], 0x01);
	assert_int_equal(gp_frame_hdr_decode(raw, &out), 0);
	assert_int_equal(out.msg_len, h.msg_len);
	assert_int_equal(out.bulk_len, h.bulk_len);
	assert_int_equal(out.request_id, h.request_id);
	assert_int_equal(out.type, h.type);
	assert_int_equal(out.flags, h.flags);
}

static void test_msg_names(void **state)
{
	assert_string_equal(gp_msg_name(GP_MSG_HELLO), "HELLO");
	assert_string_equal(gp_msg_name(GP_MSG_MEMCPY_HTOD), "MEMCPY_HTOD");
	assert_null(gp_msg_name(9999));
}

/* Frames fed one byte at a time come out whole and in order. */
static void test_decoder_byte_by_byte(void **state)
{
	struct gp_frame_decoder d;
	struct gp_frame f;
	uint8_t buf[1024];
	size_t n = 0, got = 0;

	n += make_frame(buf + n, GP_MSG_REPLY, 0, 7, "hello", 0);
	n += make_frame(buf + n, GP_MSG_DATA, GP_F_MORE, 8, "", 100);
	n += make_frame(buf + n, GP_MSG_GOODBYE, 0, 9, "", 0);
	gp_frame_decoder_init(&d, 1 << 20);
	for (size_t i = 0; i < n; i++) {
		int r;

		assert_int_equal(gp_frame_decoder_feed(&d, buf + i, 1), 0);
		while ((r = gp_frame_decoder_next(&d, &f)) == 1) {
			got++;
			if (got == 1) {
				assert_int_equal(f.hdr.request_id, 7);
				assert_memory_equal(f.msg, "hello", 5);
			} else if (got == 2) {
				assert_int_equal(f.hdr.bulk_len, 100);
				assert_int_equal(f.hdr.flags, GP_F_MORE);
				for (int k = 0; k < 100; k++)
					assert_int_equal(f.bulk[k], (uint8_t)(k * 7));
			} else {
				assert_int_equal(f.hdr.type, GP_MSG_GOODBYE);
			}
		}
		assert_int_equal(r, 0);
	}
	assert_int_equal(got, 3);
	gp_frame_decoder_deinit(&d);
}

/* Several frames in one feed. */
static void test_decoder_many_in_one_feed(void **state)
{
	struct gp_frame_decoder d;
	struct gp_frame f;
	uint8_t buf[4096];
	size_t n = 0;
	int count = 0;

	for (int i = 0; i < 10; i++)
		n += make_frame(buf + n, GP_MSG_REPLY, 0, (uint64_t)i, "xy", (size_t)i * 3);
	gp_frame_decoder_init(&d, 1 << 20);
	assert_int_equal(gp_frame_decoder_feed(&d, buf, n), 0);
	while (gp_frame_decoder_next(&d, &f) == 1) {
		assert_int_equal(f.hdr.request_id, (uint64_t)count);
		assert_int_equal(f.hdr.bulk_len, (uint32_t)count * 3);
		count++;
	}
	assert_int_equal(count, 10);
	assert_int_equal(gp_frame_decoder_next(&d, &f), 0);
	gp_frame_decoder_deinit(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_rejects_bad_magic),
		cmocka_unit_test(test_hdr_rejects_reserved_and_unknown_flags),
		cmocka_unit_test(test_hdr_rejects_oversize),
		cmocka_unit_test(test_decoder_garbage_is_an_error),
		cmocka_unit_test(test_decoder_frame_over_its_limit),
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_msg_names),
		cmocka_unit_test(test_decoder_byte_by_byte),
		cmocka_unit_test(test_decoder_many_in_one_feed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
