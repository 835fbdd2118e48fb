/* test_codec.c -- message bodies: type to descriptor, unpacking checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gpupool/wire.h>

#include "codec.h"

static void test_types_without_body(void **state)
{
	assert_null(gp_msg_descriptor(GP_MSG_DATA));
	assert_null(gp_msg_descriptor(GP_MSG_GOODBYE));
	assert_null(gp_msg_descriptor(12345));
	assert_null(gp_msg_unpack(GP_MSG_DATA, (const uint8_t *)"", 0));
}

static void test_garbage_does_not_decode(void **state)
{
	/* A field tag with wire type 7 does not exist. */
	const uint8_t junk[] = {0x0f, 0xff, 0xff, 0xff};

	assert_null(gp_msg_unpack(GP_MSG_HELLO, junk, sizeof(junk)));
	/* A length that runs past the end. */
	const uint8_t trunc[] = {0x2a, 0x50, 'a'};

	assert_null(gp_msg_unpack(GP_MSG_HELLO, trunc, sizeof(trunc)));
}

static void test_call_roundtrip(void **state)
{
	Gp__Call c = GP__CALL__INIT, *back;
	uint64_t args[3] = {1, 0xffffffffffffffffull, 42};
	uint8_t buf[128];
	size_t n;

	c.n_arg = 3;
	c.arg = args;
	assert_ptr_equal(gp_msg_descriptor(GP_MSG_MEM_ALLOC), &gp__call__descriptor);
	n = protobuf_c_message_pack(&c.base, buf);
	back = (Gp__Call *)gp_msg_unpack(GP_MSG_MEM_ALLOC, buf, n);
	assert_non_null(back);
	assert_int_equal(back->n_arg, 3);
	assert_int_equal(back->arg[1], 0xffffffffffffffffull);
	protobuf_c_message_free_unpacked(&back->base, NULL);
}

static void test_hello_roundtrip(void **state)
{
	Gp__Hello h = GP__HELLO__INIT, *back;
	uint8_t buf[256];
	size_t n;

	h.protocol_version = 1;
	h.program = "vector_add";
	h.memory = 1ull << 33;
	n = protobuf_c_message_pack(&h.base, buf);
	back = (Gp__Hello *)gp_msg_unpack(GP_MSG_HELLO, buf, n);
	assert_non_null(back);
	assert_string_equal(back->program, "vector_add");
	assert_int_equal(back->memory, 1ull << 33);
	protobuf_c_message_free_unpacked(&back->base, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_without_body),
		cmocka_unit_test(test_garbage_does_not_decode),
		cmocka_unit_test(test_call_roundtrip),
		cmocka_unit_test(test_hello_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
