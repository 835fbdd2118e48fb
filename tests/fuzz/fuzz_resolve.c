/* fuzz_resolve.c -- DNS answers (src/resolve.c) from arbitrary bytes.
 *
 * Every byte of a DNS answer is the network's: a record's length, a compressed name's
 * pointers, counts that promise more records than there are. An answer yields at most
 * GP_RESOLVE_MAX addresses, each a well-formed "IP:PORT", and SRV records with terminated
 * targets, which gp__srv_order orders by priority without losing or inventing one.
 */
#include <string.h>

#include "fuzz.h"
#include "resolve.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gp_srv srv[GP_RESOLVE_MAX];
	struct gp_endpoints out = {0};
	uint32_t seed = 1, sum = 0, sum2 = 0;
	size_t added = 0, n;
	ns_msg msg;

	if (size > 65535)
		return 0;
	take_addresses(data, (int)size, T_A, "e", "n", 7420, GP_EP_TLS, &out, &added);
	take_addresses(data, (int)size, T_AAAA, "e", "n", 7420, GP_EP_TLS, &out, &added);
	FUZZ_CHECK(out.n == added && added <= GP_RESOLVE_MAX);
	for (size_t i = 0; i < out.n; i++) {
		size_t len = strnlen(out.v[i].addr, sizeof(out.v[i].addr));

		FUZZ_CHECK(len > 0 && len < sizeof(out.v[i].addr));
		FUZZ_CHECK(strstr(out.v[i].addr, ":7420") != NULL && out.v[i].port == 7420);
	}
	gp_endpoints_deinit(&out);
	if (ns_initparse(data, (int)size, &msg))
		return 0;
	n = parse_srv(&msg, srv, GP_RESOLVE_MAX);
	FUZZ_CHECK(n <= GP_RESOLVE_MAX);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(memchr(srv[i].target, 0, sizeof(srv[i].target)) != NULL);
		sum += srv[i].priority + 3u * srv[i].weight + 7u * srv[i].port;
	}
	gp__srv_order(srv, n, &seed);
	for (size_t i = 0; i < n; i++) {
		sum2 += srv[i].priority + 3u * srv[i].weight + 7u * srv[i].port;
		FUZZ_CHECK(i == 0 || srv[i - 1].priority <= srv[i].priority);
	}
	FUZZ_CHECK(sum == sum2); /* the same records, reordered */
	return 0;
}
