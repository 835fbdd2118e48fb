/* test_calls.c -- the call table (<gpupool/calls.h>): its rules, the encoder, and its rows in
 * docs/protocol.md. `test_calls --print` writes the rows (to paste into the doc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "calls.h"
#include "frame.h"

#define BEGIN_MARK "<!-- calls: generated from include/gpupool/calls.h by test_calls --print -->\n"
#define END_MARK "<!-- calls: end -->\n"

/* ---- the description's text, as the docs show it --------------------------------- */

/* Renders the macro invocations `tag(a, b, ...)` in text: "b `a`" with_kind, else "a, b". */
static void render(char *out, size_t cap, const char *text, const char *tag, bool with_kind,
		   const char *sep)
{
	size_t taglen = strlen(tag), used = strlen(out);
	const char *p = text;

	while ((p = strstr(p, tag)) != NULL) {
		const char *open = p + taglen, *close = strchr(open, ')');
		char inner[256];
		size_t n = (size_t)(close - open);

		if (!close || n >= sizeof(inner))
			break;
		memcpy(inner, open, n);
		inner[n] = '\0';
		if (with_kind) {
			char *comma = strchr(inner, ',');

			*comma = '\0';
			used += (size_t)snprintf(out + used, cap - used, "%s%s `%s`",
						 used ? ", " : "", comma + 2, inner);
		} else {
			used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? sep : "",
						 inner);
		}
		p = close + 1;
	}
	if (!used)
		snprintf(out, cap, "—");
}

/* The table of every call, as docs/protocol.md has it. */
static char *calls_table(void)
{
	size_t n, cap = 1 << 16, used = 0;
	const struct gp_call_info *all = gp_call_all(&n);
	char *t = malloc(cap);

	assert_non_null(t);
	used += (size_t)snprintf(
		t + used, cap - used, "%s%s%s", BEGIN_MARK,
		"| call | type | flags | arguments (`kind`) | outputs | ranges checked "
		"| serves |\n",
		"| --- | --- | --- | --- | --- | --- | --- |\n");
	for (size_t i = 0; i < n; i++) {
		char args[1024] = "", outs[256] = "", ranges[512] = "", flags[64] = "";

		render(args, sizeof(args), all[i].args, "GP_ARG(", true, ", ");
		render(outs, sizeof(outs), all[i].outs, "GP_OUT(", false, ", ");
		render(ranges, sizeof(ranges), all[i].ranges, "GP_RANGE(", false, "; ");
		if (strcmp(ranges, "—") == 0)
			ranges[0] = '\0';
		render(ranges, sizeof(ranges), all[i].ranges, "GP_RANGE1(", false, "; ");
		snprintf(flags, sizeof(flags), "%s%s%s", all[i].flags & GP_C_SYNC ? "sync " : "",
			 all[i].flags & GP_C_ASYNC ? "async " : "",
			 all[i].flags & GP_C_FUNCTIONS ? "functions " : "");
		if (!flags[0])
			snprintf(flags, sizeof(flags), "—");
		else
			flags[strlen(flags) - 1] = '\0';
		used += (size_t)snprintf(t + used, cap - used,
					 "| `%s` | %u | %s | %s | %s | %s | %s |\n", all[i].name,
					 all[i].type, flags, args, outs, ranges, all[i].doc);
		assert_true(used < cap);
	}
	snprintf(t + used, cap - used, "%s", END_MARK);
	return t;
}

/* ---- the contract ---------------------------------------------------------------- */

static void test_not_calls(void **state)
{
	(void)state;
	assert_null(gp_call_info(0));
	assert_null(gp_call_info(GP_MSG_REPLY));
	assert_null(gp_call_info(GP_MSG_DATA));
	assert_null(gp_call_info(GP_MSG_ADMIT_REQUEST));
	assert_null(gp_call_info(4242));
	assert_null(gp_call_info(121)); /* the retired MODULE_LOAD_REPLY */
}

static void test_table_rules(void **state)
{
	size_t n;
	const struct gp_call_info *all = gp_call_all(&n);

	(void)state;
	assert_true(n >= 30);
	for (size_t i = 0; i < n; i++) {
		const struct gp_call_info *c = &all[i];
		const char *last = NULL, *p = c->args;
		unsigned count = 0;

		/* Found by type, named as the frame layer names it. */
		assert_ptr_equal(gp_call_info(c->type), c);
		assert_string_equal(gp_msg_name(c->type), c->name);
		for (size_t k = 0; k < i; k++)
			assert_int_not_equal(all[k].type, c->type);
		/* Every scalar argument has a slot; NAME and BLOB travel beside them. */
		while ((p = strstr(p, "GP_ARG(")) != NULL) {
			last = p;
			if (strncmp(p, "GP_ARG(NAME", 11) != 0 &&
			    strncmp(p, "GP_ARG(BLOB", 11) != 0)
				count++;
			p++;
		}
		assert_int_equal(count, c->nargs);
		assert_true(c->nargs >= 1 && c->nargs <= GP_CALL_ARGS_MAX);
		assert_true(c->nouts <= GP_CALL_OUTS_MAX);
		/* Bulk is the last argument: the worker finds its count there even when it
		 * refuses the call before decoding (to read the bytes and stay in step). */
		if (c->kinds & (GP_K_BULK_IN | GP_K_BULK_OUT)) {
			assert_non_null(last);
			assert_true(strncmp(last, "GP_ARG(BULK_", 12) == 0);
			assert_false((c->kinds & GP_K_BULK_IN) && (c->kinds & GP_K_BULK_OUT));
		}
		/* An answer that carries bytes or functions cannot be skipped. */
		if (c->flags & GP_C_ASYNC) {
			assert_false(c->kinds & GP_K_BULK_OUT);
			assert_false(c->flags & GP_C_FUNCTIONS);
		}
		assert_true(strlen(c->doc) > 0);
	}
}

/* ---- the encoder ------------------------------------------------------------------ */

static void test_pack_in_order(void **state)
{
	static const char bytes[] = "0123456789";
	struct gp_in_memcpy_htod in = {.ctx = 7,
				       .dst = 0x1000,
				       .width = 5,
				       .height = 2,
				       .pitch = 64,
				       .stream = 2,
				       .data = bytes,
				       .data_len = 10};
	uint64_t args[GP_CALL_ARGS_MAX];
	Gp__Call c = GP__CALL__INIT;
	struct gp_bulk_ref b;

	(void)state;
	gp_call_pack_memcpy_htod(&in, &c, args, &b);
	assert_int_equal(c.n_arg, GP_NARGS_MEMCPY_HTOD);
	assert_int_equal(c.n_arg, 7);
	assert_int_equal(c.arg[0], 7);
	assert_int_equal(c.arg[1], 0x1000);
	assert_int_equal(c.arg[2], 5);
	assert_int_equal(c.arg[3], 2);
	assert_int_equal(c.arg[4], 64);
	assert_int_equal(c.arg[5], 2);
	assert_int_equal(c.arg[6], 10); /* the bulk's count */
	assert_ptr_equal(b.src, bytes);
	assert_null(b.dst);
	assert_int_equal(b.len, 10);
}

static void test_pack_signed_name_blob(void **state)
{
	uint64_t args[GP_CALL_ARGS_MAX], o[GP_CALL_OUTS_MAX] = {0x1234, 77};
	struct gp_in_stream_create sc = {.ctx = 1, .flags = 1, .priority = -3};
	struct gp_in_get_global gg = {.ctx = 1, .module = 2, .symbol = "counter"};
	static const uint8_t params[12] = {1, 2, 3};
	struct gp_in_launch ln = {
		.ctx = 1, .func = 9, .grid_x = 1, .params = params, .params_len = sizeof(params)};
	struct gp_out_get_global out;
	Gp__Call c = GP__CALL__INIT;
	struct gp_bulk_ref b;

	(void)state;
	gp_call_pack_stream_create(&sc, &c, args, &b);
	assert_int_equal(c.n_arg, 3);
	assert_int_equal((int64_t)c.arg[2], -3); /* two's complement in 64 bits */
	assert_null(b.src);
	assert_null(b.dst);

	c = (Gp__Call)GP__CALL__INIT;
	gp_call_pack_get_global(&gg, &c, args, &b);
	assert_int_equal(c.n_arg, 2); /* the name is not a slot */
	assert_string_equal(c.name, "counter");
	gp_call_outs_get_global(o, &out);
	assert_int_equal(out.dptr, 0x1234);
	assert_int_equal(out.bytes, 77);

	c = (Gp__Call)GP__CALL__INIT;
	gp_call_pack_launch(&ln, &c, args, &b);
	assert_int_equal(c.n_arg, GP_NARGS_LAUNCH);
	assert_int_equal(c.n_arg, 10);
	assert_ptr_equal(c.blob.data, params);
	assert_int_equal(c.blob.len, sizeof(params));
	assert_int_equal(c.arg[1], 9);
}

/* ---- the docs --------------------------------------------------------------------- */

static void test_docs_rows(void **state)
{
	char *want = calls_table(), *doc, *begin, *end;
	FILE *f = fopen(GP_PROTOCOL_DOC, "rb");
	long len;

	(void)state;
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	doc = calloc(1, (size_t)len + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	begin = strstr(doc, BEGIN_MARK);
	end = begin ? strstr(begin, END_MARK) : NULL;
	if (!begin || !end || strncmp(begin, want, strlen(want)) != 0 ||
	    (size_t)(end + strlen(END_MARK) - begin) != strlen(want)) {
		fprintf(stderr,
			"docs/protocol.md's call table differs from include/gpupool/calls.h;"
			" regenerate it with: test_calls --print\n");
		fail();
	}
	free(doc);
	free(want);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_calls),     cmocka_unit_test(test_table_rules),
		cmocka_unit_test(test_pack_in_order), cmocka_unit_test(test_pack_signed_name_blob),
		cmocka_unit_test(test_docs_rows),
	};

	if (argc > 1 && strcmp(argv[1], "--print") == 0) {
		char *t = calls_table();

		fputs(t, stdout);
		free(t);
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
