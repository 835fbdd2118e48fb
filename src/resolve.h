/* resolve.h -- pool names to candidate endpoints: explicit lists, every A/AAAA record of a
 * DNS name, and SRV records ordered as RFC 2782 says (docs/operations.md, "Many hosts").
 *
 * Used by the interposer (GPUPOOL_SERVER) and poolctl (--pool). No event loop: blocking
 * getaddrinfo, or glibc's libresolv when GPUPOOL_RESOLV_CONF names the servers to ask.
 */
#ifndef GP_RESOLVE_H
#define GP_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

/* What one entry of a list may resolve to, at most (a hostile DNS answer is cut there). */
#define GP_RESOLVE_MAX 256

enum gp_ep_kind {
	GP_EP_TLS = 0,
	GP_EP_PLAIN, /* plain:HOST:PORT */
	GP_EP_UNIX,  /* unix:PATH */
};

struct gp_endpoint {
	enum gp_ep_kind kind;
	char entry[300]; /* the list entry it came from, for messages */
	char name[256];	 /* the name TLS checks the certificate for (unix: the path) */
	char addr[128];	 /* "IP:PORT" or "[IP6]:PORT" to connect to ("" for unix) */
	uint16_t port;
};

struct gp_endpoints {
	struct gp_endpoint *v;
	size_t n, cap;
};

/*
 * Resolves a comma- or space-separated list: "HOST:PORT" (a literal address or a name:
 * every A and AAAA record is a candidate, in the answer's order), "srv:_SERVICE._tcp.DOMAIN"
 * (every SRV target's addresses, targets ordered by priority and, within one, weighted at
 * random by *seed), "plain:HOST:PORT", "unix:PATH". Entries keep their order. Appends to out.
 * Returns 0 when at least one endpoint came out (an entry that failed is logged as a
 * warning); otherwise GP_ECONFIG (malformed) or -EHOSTUNREACH (nothing resolved) with every
 * entry's reason, naming it, in err.
 */
int gp_resolve(const char *list, uint32_t *seed, struct gp_endpoints *out, char *err,
	       size_t errlen);
void gp_endpoints_deinit(struct gp_endpoints *e);

/* One SRV record, for the ordering below. */
struct gp_srv {
	uint16_t priority, weight, port;
	char target[256];
};

/* Orders n records in place as RFC 2782 §"Usage rules" says: ascending priority; within
 * one priority, repeatedly the record a weighted random draw picks (zero weights first in
 * the running sum, so they are picked rarely). Exposed for tests/unit/test_resolve.c. */
void gp__srv_order(struct gp_srv *v, size_t n, uint32_t *seed);

/* A xorshift step: the pseudo-random numbers resolution and placement draw. */
uint32_t gp__rand(uint32_t *seed);

#endif
