/* test_resolve.c -- gp_resolve() on lists and literals, and RFC 2782's SRV ordering.
 * Names looked up in DNS are tested end to end (tests/integration/test-fleet-dns.sh, with
 * a responder of its own). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "error.h"
#include "resolve.h"

/* ---- invalid arguments first ---- */

static void test_empty_and_malformed(void **state)
{
	struct gp_endpoints e = {0};
	uint32_t seed = 1;
	char err[512];

	assert_int_equal(gp_resolve(NULL, &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(gp_resolve("", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(gp_resolve("nocolon", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_non_null(strstr(err, "'nocolon' is not HOST:PORT"));
	assert_int_equal(gp_resolve("127.0.0.1:0", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(gp_resolve("127.0.0.1:99999", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(gp_resolve("unix:", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(gp_resolve("srv:", &seed, &e, err, sizeof(err)), GP_ECONFIG);
	assert_int_equal(e.n, 0);
	gp_endpoints_deinit(&e);
	gp_endpoints_deinit(NULL);
}

static void test_resolv_conf_errors(void **state)
{
	struct gp_endpoints e = {0};
	uint32_t seed = 1;
	char err[512];

	setenv("GPUPOOL_RESOLV_CONF", "/nonexistent/resolv.conf", 1);
	assert_int_not_equal(gp_resolve("pool.test:7420", &seed, &e, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "/nonexistent/resolv.conf"));
	/* A literal needs no resolver, but the list opens it before knowing: still named. */
	unsetenv("GPUPOOL_RESOLV_CONF");
	assert_int_equal(e.n, 0);
}

/* ---- lists ---- */

static void test_literals_keep_order(void **state)
{
	struct gp_endpoints e = {0};
	uint32_t seed = 1;
	char err[512];

	assert_int_equal(gp_resolve("127.0.0.3:7420, [::1]:7421,plain:127.0.0.2:9,unix:/run/p.sock",
				    &seed, &e, err, sizeof(err)),
			 0);
	assert_int_equal(e.n, 4);
	assert_string_equal(e.v[0].addr, "127.0.0.3:7420");
	assert_string_equal(e.v[0].name, "127.0.0.3");
	assert_int_equal(e.v[0].kind, GP_EP_TLS);
	assert_string_equal(e.v[1].addr, "[::1]:7421");
	assert_string_equal(e.v[1].name, "::1");
	assert_int_equal(e.v[1].port, 7421);
	assert_int_equal(e.v[2].kind, GP_EP_PLAIN);
	assert_string_equal(e.v[2].addr, "127.0.0.2:9");
	assert_int_equal(e.v[3].kind, GP_EP_UNIX);
	assert_string_equal(e.v[3].name, "/run/p.sock");
	gp_endpoints_deinit(&e);
}

/* One bad entry among good ones is logged; the others still count. */
static void test_partial_failure(void **state)
{
	struct gp_endpoints e = {0};
	uint32_t seed = 1;
	char err[512];

	assert_int_equal(gp_resolve("bad,127.0.0.2:1", &seed, &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 1);
	assert_non_null(strstr(err, "'bad'"));
	gp_endpoints_deinit(&e);
}

/* ---- RFC 2782 ordering ---- */

static void test_srv_priority_first(void **state)
{
	struct gp_srv v[4] = {
		{.priority = 20, .weight = 5, .target = "c"},
		{.priority = 10, .weight = 0, .target = "a"},
		{.priority = 30, .weight = 1, .target = "d"},
		{.priority = 10, .weight = 0, .target = "b"},
	};
	uint32_t seed = 7;

	gp__srv_order(v, 4, &seed);
	assert_int_equal(v[0].priority, 10);
	assert_int_equal(v[1].priority, 10);
	assert_string_equal(v[2].target, "c");
	assert_string_equal(v[3].target, "d");
	gp__srv_order(v, 0, &seed); /* nothing to order */
}

/* Weights 3:1 within a priority: the heavier first about three times in four. */
static void test_srv_weights(void **state)
{
	unsigned heavy_first = 0, zero_first = 0, n = 4000;
	uint32_t seed = 12345;

	for (unsigned i = 0; i < n; i++) {
		struct gp_srv v[3] = {
			{.priority = 1, .weight = 1, .target = "light"},
			{.priority = 1, .weight = 3, .target = "heavy"},
			{.priority = 1, .weight = 0, .target = "zero"},
		};

		gp__srv_order(v, 3, &seed);
		heavy_first += strcmp(v[0].target, "heavy") == 0;
		zero_first += strcmp(v[0].target, "zero") == 0;
	}
	/* Expected 3/4 of the draws that do not land on 0 (1 in 5): ~2400 of 4000. */
	assert_in_range(heavy_first, n * 55 / 100, n * 65 / 100);
	assert_true(zero_first < n * 30 / 100);
	assert_true(zero_first > 0); /* rare, not never (RFC 2782) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_malformed),
		cmocka_unit_test(test_resolv_conf_errors),
		cmocka_unit_test(test_literals_keep_order),
		cmocka_unit_test(test_partial_failure),
		cmocka_unit_test(test_srv_priority_first),
		cmocka_unit_test(test_srv_weights),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
