/* resolve.c -- pool names to candidate endpoints: lists, A/AAAA records, SRV (RFC 2782).
 *
 * A name is looked up with getaddrinfo (so /etc/hosts and nsswitch apply), unless
 * GPUPOOL_RESOLV_CONF names a file in resolv.conf's format: then A and AAAA records, like
 * SRV records always, are asked of its `nameserver`s through libresolv (res_nquery), and
 * nothing else about resolution changes (RES_OPTIONS and LOCALDOMAIN still apply). An
 * address there may carry a port, "127.0.0.1:5353", which is how the tests reach a responder
 * of their own without privileges; glibc's own resolv.conf has no such form.
 *
 * Everything a DNS answer holds is hostile: record lengths are checked against the record
 * type, names are expanded with ns_name_uncompress (presentation form, escaped), and no more
 * than GP_RESOLVE_MAX endpoints come from one entry.
 *
 * Time is bounded as well, since cuInit waits for all of it: libresolv tries each question
 * at most QUERY_TRIES times, QUERY_RETRANS_S apart at first (caps on what resolv.conf and
 * RES_OPTIONS say), no question is started that could end past RESOLVE_BUDGET_S from the
 * list's first, at most SRV_TARGETS_MAX of an SRV answer's targets are resolved (in RFC
 * 2782's order), and a target's A/AAAA records in the answer's additional section are taken
 * as they are, with no question of their own.
 */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "conn.h"
#include "error.h"
#include "log.h"
#include "resolve.h"

#define ANSWER_MAX 65536
#define RESOLV_NS_MAX MAXNS
#define RESOLVE_BUDGET_S 10 /* for a whole list, through libresolv */
#define QUERY_RETRANS_S 1   /* libresolv's first wait for an answer; it doubles per try */
#define QUERY_TRIES 2
#define SRV_TARGETS_MAX 16

uint32_t gp__rand(uint32_t *seed)
{
	uint32_t x = *seed ? *seed : 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*seed = x;
	return x;
}

void gp_endpoints_deinit(struct gp_endpoints *e)
{
	if (!e)
		return;
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
}

static struct gp_endpoint *push(struct gp_endpoints *e)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 8;
		struct gp_endpoint *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		e->v = v;
		e->cap = cap;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[0]));
	return &e->v[e->n++];
}

static void errf(char *err, size_t errlen, const char *fmt, ...) GP_PRINTF(3, 4);
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
	size_t used = strnlen(err, errlen);
	va_list ap;

	if (used + 3 >= errlen)
		return;
	if (used) {
		strcpy(err + used, "; ");
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

static void format_addr(const struct sockaddr *sa, char *out, size_t len, uint16_t *port)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		*port = ntohs(a->sin6_port);
		snprintf(out, len, "[%s]:%u", ip, *port);
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		*port = ntohs(a->sin_port);
		snprintf(out, len, "%s:%u", ip, *port);
	}
}

/* ---- libresolv, configured from GPUPOOL_RESOLV_CONF -------------------------------- */

struct resolver {
	struct __res_state st;
	bool open;
	int64_t start_us; /* the list's first question (gp_now_us), 0 before it */
	bool spent;	  /* RESOLVE_BUDGET_S is: no more questions */
};

/* Caps libresolv's waits (the file's or RES_OPTIONS' timeout and attempts may be longer). */
static void resolver_bound(struct resolver *r)
{
	if (r->st.retrans > QUERY_RETRANS_S || r->st.retrans <= 0)
		r->st.retrans = QUERY_RETRANS_S;
	if (r->st.retry > QUERY_TRIES || r->st.retry <= 0)
		r->st.retry = QUERY_TRIES;
}

/* The longest one res_nquery can wait, in microseconds, over-counted to hold for glibc's
 * versions: each try asks every server, waiting retrans << (the try, or the server's
 * place), divided among the servers past the first, at least 1 s. */
static int64_t query_max_us(const struct resolver *r)
{
	int64_t ns = r->st.nscount > 0 ? r->st.nscount : 1, s = 0;

	for (int t = 0; t < r->st.retry; t++)
		for (int k = 0; k < ns; k++) {
			int shift = t > k ? t : k;
			int64_t each = (int64_t)r->st.retrans << shift;

			if (shift > 0)
				each /= ns;
			s += each > 0 ? each : 1;
		}
	return s * 1000000;
}

/* "A.B.C.D", "A.B.C.D:PORT" or an IPv6 address (port 53 only: res_state holds IPv6
 * servers apart, and glibc takes them only from its own file). */
static int resolver_open(struct resolver *r, const char *path, char *err, size_t errlen)
{
	char line[512];
	unsigned lineno = 0, n = 0;
	FILE *f;

	memset(r, 0, sizeof(*r));
	if (res_ninit(&r->st)) {
		errf(err, errlen, "the resolver does not start");
		return -EHOSTUNREACH;
	}
	r->open = true;
	f = fopen(path, "re");
	if (!f) {
		errf(err, errlen, "GPUPOOL_RESOLV_CONF %s: %s", path, strerror(errno));
		return GP_ECONFIG;
	}
	while (fgets(line, sizeof(line), f)) {
		char addr[128], *colon;
		struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(53)};
		unsigned long port;

		lineno++;
		if (sscanf(line, " nameserver %127s", addr) != 1)
			continue; /* everything else is res_ninit's, from the system's file */
		colon = strchr(addr, ':');
		if (colon && strchr(colon + 1, ':')) {
			errf(err, errlen,
			     "%s:%u: IPv6 nameserver %s: only IPv4 servers are taken from "
			     "GPUPOOL_RESOLV_CONF",
			     path, lineno, addr);
			fclose(f);
			return GP_ECONFIG;
		}
		if (colon) {
			char *end;

			*colon = 0;
			port = strtoul(colon + 1, &end, 10);
			if (*end || port == 0 || port > 65535) {
				errf(err, errlen, "%s:%u: '%s' is not a port", path, lineno,
				     colon + 1);
				fclose(f);
				return GP_ECONFIG;
			}
			sin.sin_port = htons((uint16_t)port);
		}
		if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
			errf(err, errlen, "%s:%u: '%s' is not an IPv4 address", path, lineno, addr);
			fclose(f);
			return GP_ECONFIG;
		}
		if (n == RESOLV_NS_MAX)
			continue; /* as glibc: the first MAXNS count */
		r->st.nsaddr_list[n++] = sin;
	}
	fclose(f);
	if (!n) {
		errf(err, errlen, "GPUPOOL_RESOLV_CONF %s names no nameserver", path);
		return GP_ECONFIG;
	}
	r->st.nscount = (int)n;
	/* Only our servers: none of the system's IPv6 ones, which res_ninit keeps apart (in
	 * memory of its own, which res_nclose would free). */
	for (int i = 0; i < MAXNS; i++) {
		free(r->st._u._ext.nsaddrs[i]);
		r->st._u._ext.nsaddrs[i] = NULL;
	}
	return 0;
}

static void resolver_close(struct resolver *r)
{
	if (r->open)
		res_nclose(&r->st);
	r->open = false;
}

static const char *type_name(int type)
{
	return type == T_A ? "A" : type == T_AAAA ? "AAAA" : type == T_SRV ? "SRV" : "?";
}

static const char *herror_text(int h)
{
	switch (h) {
	case HOST_NOT_FOUND:
		return "no such name (NXDOMAIN)";
	case NO_DATA:
		return "no records of that type";
	case TRY_AGAIN:
		return "no DNS server answered (or it failed: SERVFAIL)";
	default:
		return "the DNS answer was refused or malformed";
	}
}

/* Asks for name's records of type; the answer in ans, its length returned, or -1 with the
 * reason in err. */
static int query(struct resolver *r, const char *name, int type, uint8_t *ans, char *err,
		 size_t errlen)
{
	int64_t now = gp_now_us();
	int n;

	if (!r->start_us)
		r->start_us = now;
	else if (r->spent ||
		 now - r->start_us + query_max_us(r) > (int64_t)RESOLVE_BUDGET_S * 1000000) {
		r->spent = true;
		errf(err, errlen, "%s %s: not asked: resolution's %d s are spent", name,
		     type_name(type), RESOLVE_BUDGET_S);
		return -1;
	}
	n = res_nquery(&r->st, name, C_IN, type, ans, ANSWER_MAX);
	if (n < 0) {
		if (r->st.res_h_errno != NO_DATA || type == T_SRV)
			errf(err, errlen, "%s %s: %s", name, type_name(type),
			     herror_text(r->st.res_h_errno));
		return r->st.res_h_errno == NO_DATA ? 0 : -1;
	}
	if (n > ANSWER_MAX)
		n = ANSWER_MAX; /* truncated: what came is parsed */
	return n;
}

/* The A or AAAA records in one section of a parsed message, each with port, appended to
 * out; only those of owner when it is not NULL. */
static int take_records(const ns_msg *msgp, ns_sect sect, const char *owner, int type,
			const char *entry, const char *name, uint16_t port, enum gp_ep_kind kind,
			struct gp_endpoints *out, size_t *added)
{
	ns_msg msg = *msgp;
	ns_rr rr;

	for (int i = 0; i < ns_msg_count(msg, sect); i++) {
		struct sockaddr_storage ss = {0};
		struct gp_endpoint *ep;

		if (ns_parserr(&msg, sect, i, &rr))
			break;
		if (ns_rr_class(rr) != ns_c_in || (int)ns_rr_type(rr) != type)
			continue; /* a CNAME on the way, or something not asked for */
		if (owner && strcasecmp(ns_rr_name(rr), owner) != 0)
			continue; /* another target's, in an additional section */
		if (type == T_A && ns_rr_rdlen(rr) == 4) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			a->sin_family = AF_INET;
			a->sin_port = htons(port);
			memcpy(&a->sin_addr, ns_rr_rdata(rr), 4);
		} else if (type == T_AAAA && ns_rr_rdlen(rr) == 16) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			a->sin6_family = AF_INET6;
			a->sin6_port = htons(port);
			memcpy(&a->sin6_addr, ns_rr_rdata(rr), 16);
		} else {
			continue; /* a record of the wrong length */
		}
		if (*added >= GP_RESOLVE_MAX)
			break;
		ep = push(out);
		if (!ep)
			return -ENOMEM;
		ep->kind = kind;
		snprintf(ep->entry, sizeof(ep->entry), "%s", entry);
		snprintf(ep->name, sizeof(ep->name), "%s", name);
		format_addr((struct sockaddr *)&ss, ep->addr, sizeof(ep->addr), &ep->port);
		(*added)++;
	}
	return 0;
}

/* The A or AAAA records of an answer, each with port, appended to out. */
static int take_addresses(const uint8_t *ans, int len, int type, const char *entry,
			  const char *name, uint16_t port, enum gp_ep_kind kind,
			  struct gp_endpoints *out, size_t *added)
{
	ns_msg msg;

	if (len <= 0 || ns_initparse(ans, len, &msg))
		return 0;
	return take_records(&msg, ns_s_an, NULL, type, entry, name, port, kind, out, added);
}

/* ---- one name ----------------------------------------------------------------------- */

/* Every address of name (a literal or a DNS name) at port, appended. */
static int resolve_host(struct resolver *r, const char *entry, const char *name, uint16_t port,
			enum gp_ep_kind kind, struct gp_endpoints *out, size_t *added, char *err,
			size_t errlen)
{
	struct addrinfo hints = {0}, *res, *ai;
	char portstr[8];
	size_t before = *added;
	int e;

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	snprintf(portstr, sizeof(portstr), "%u", port);
	if (r && getaddrinfo(name, portstr, &hints, &res) != 0) {
		uint8_t *ans = malloc(ANSWER_MAX);
		int n4, n6;

		if (!ans)
			return -ENOMEM;
		n4 = query(r, name, T_A, ans, err, errlen);
		e = take_addresses(ans, n4, T_A, entry, name, port, kind, out, added);
		n6 = e || *added >= GP_RESOLVE_MAX ? 0 : query(r, name, T_AAAA, ans, err, errlen);
		if (!e)
			e = take_addresses(ans, n6, T_AAAA, entry, name, port, kind, out, added);
		free(ans);
		if (e)
			return e;
		if (*added == before) {
			if (n4 >= 0 && n6 >= 0)
				errf(err, errlen, "%s has no A or AAAA record", name);
			return -EHOSTUNREACH;
		}
		return 0;
	}
	if (!r) {
		hints.ai_flags = 0;
		hints.ai_family = AF_UNSPEC;
		e = getaddrinfo(name, portstr, &hints, &res);
		if (e) {
			errf(err, errlen, "cannot resolve %s: %s", name, gai_strerror(e));
			return -EHOSTUNREACH;
		}
	}
	for (ai = res; ai && *added < GP_RESOLVE_MAX; ai = ai->ai_next) {
		struct gp_endpoint *ep;
		bool dup = false;

		/* getaddrinfo gives an address once per protocol it could be: once is enough. */
		for (size_t i = out->n - (*added - before); i < out->n && !dup; i++) {
			char a[128];
			uint16_t p;

			format_addr(ai->ai_addr, a, sizeof(a), &p);
			dup = strcmp(a, out->v[i].addr) == 0;
		}
		if (dup)
			continue;
		ep = push(out);
		if (!ep) {
			freeaddrinfo(res);
			return -ENOMEM;
		}
		ep->kind = kind;
		snprintf(ep->entry, sizeof(ep->entry), "%s", entry);
		snprintf(ep->name, sizeof(ep->name), "%s", name);
		format_addr(ai->ai_addr, ep->addr, sizeof(ep->addr), &ep->port);
		(*added)++;
	}
	freeaddrinfo(res);
	return 0;
}

void gp__srv_order(struct gp_srv *v, size_t n, uint32_t *seed)
{
	/* By priority (insertion sort: stable, and n is small). */
	for (size_t i = 1; i < n; i++) {
		struct gp_srv t = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1].priority > t.priority; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
	for (size_t lo = 0; lo < n;) {
		size_t hi = lo;

		while (hi < n && v[hi].priority == v[lo].priority)
			hi++;
		/* Zero weights to the front of the not-yet-ordered part, then draw. */
		for (size_t k = lo; k < hi; k++) {
			uint64_t sum = 0, pick, run = 0;
			size_t z = k, chosen = k;

			for (size_t i = k; i < hi; i++)
				if (v[i].weight == 0) {
					struct gp_srv t = v[z];

					v[z++] = v[i];
					v[i] = t;
				}
			for (size_t i = k; i < hi; i++)
				sum += v[i].weight;
			pick = gp__rand(seed) % (sum + 1);
			for (size_t i = k; i < hi; i++) {
				run += v[i].weight;
				if (run >= pick) {
					chosen = i;
					break;
				}
			}
			if (chosen != k) {
				struct gp_srv t = v[k];

				v[k] = v[chosen];
				v[chosen] = t;
			}
		}
		lo = hi;
	}
}

/* The SRV records of a parsed answer, at most max of them, into v; how many. */
static size_t parse_srv(ns_msg *msgp, struct gp_srv *srv, size_t max)
{
	ns_msg msg = *msgp;
	size_t nsrv = 0;
	ns_rr rr;

	for (int i = 0; i < ns_msg_count(msg, ns_s_an) && nsrv < max; i++) {
		const uint8_t *p;

		if (ns_parserr(&msg, ns_s_an, i, &rr))
			break;
		if (ns_rr_class(rr) != ns_c_in || ns_rr_type(rr) != ns_t_srv || ns_rr_rdlen(rr) < 7)
			continue;
		p = ns_rr_rdata(rr);
		srv[nsrv].priority = (uint16_t)(p[0] << 8 | p[1]);
		srv[nsrv].weight = (uint16_t)(p[2] << 8 | p[3]);
		srv[nsrv].port = (uint16_t)(p[4] << 8 | p[5]);
		if (ns_name_uncompress(ns_msg_base(msg), ns_msg_end(msg), p + 6, srv[nsrv].target,
				       sizeof(srv[nsrv].target)) < 0)
			continue;
		nsrv++;
	}
	return nsrv;
}

static int resolve_srv(struct resolver *r, const char *entry, const char *name,
		       enum gp_ep_kind kind, uint32_t *seed, struct gp_endpoints *out, char *err,
		       size_t errlen)
{
	struct gp_srv *srv = NULL;
	size_t nsrv = 0, added = 0, tried = 0;
	uint8_t *ans;
	ns_msg msg;
	int len, e = 0;

	ans = malloc(ANSWER_MAX);
	srv = calloc(GP_RESOLVE_MAX, sizeof(*srv));
	if (!ans || !srv) {
		e = -ENOMEM;
		goto out_free;
	}
	len = query(r, name, T_SRV, ans, err, errlen);
	if (len <= 0 || ns_initparse(ans, len, &msg)) {
		if (len > 0)
			errf(err, errlen, "%s SRV: the answer does not parse", name);
		e = -EHOSTUNREACH;
		goto out_free;
	}
	nsrv = parse_srv(&msg, srv, GP_RESOLVE_MAX);
	if (nsrv == 1 && (!strcmp(srv[0].target, ".") || !srv[0].target[0])) {
		/* RFC 2782: a target of "." says the service is decidedly not there. */
		errf(err, errlen, "%s SRV: the service is not offered there (target \".\")", name);
		e = -EHOSTUNREACH;
		goto out_free;
	}
	if (!nsrv) {
		errf(err, errlen, "%s has no SRV record", name);
		e = -EHOSTUNREACH;
		goto out_free;
	}
	gp__srv_order(srv, nsrv, seed);
	for (size_t i = 0; i < nsrv && added < GP_RESOLVE_MAX; i++) {
		char why[512] = "";
		size_t before = added;

		if (srv[i].port == 0 || !strcmp(srv[i].target, "."))
			continue;
		if (tried == SRV_TARGETS_MAX || r->spent) {
			if (r->spent)
				gp_log_warnx("%s: SRV targets from %s on not tried: resolution's "
					     "time is spent",
					     entry, srv[i].target);
			else
				gp_log_warnx("%s: SRV targets from %s on not tried: at most %d are",
					     entry, srv[i].target, SRV_TARGETS_MAX);
			break;
		}
		tried++;
		/* Addresses the answer brought along (its additional section) need no question. */
		e = take_records(&msg, ns_s_ar, srv[i].target, T_A, entry, srv[i].target,
				 srv[i].port, kind, out, &added);
		if (!e)
			e = take_records(&msg, ns_s_ar, srv[i].target, T_AAAA, entry, srv[i].target,
					 srv[i].port, kind, out, &added);
		if (!e && added == before)
			e = resolve_host(r, entry, srv[i].target, srv[i].port, kind, out, &added,
					 why, sizeof(why));
		if (e == -ENOMEM)
			goto out_free;
		if (e)
			gp_log_warnx("%s: SRV target %s:%u: %s", entry, srv[i].target, srv[i].port,
				     why);
	}
	e = 0;
	if (!added) {
		errf(err, errlen, "none of the %zu SRV target%s of %s resolved", nsrv,
		     nsrv == 1 ? "" : "s", name);
		e = -EHOSTUNREACH;
	}
out_free:
	free(srv);
	free(ans);
	return e;
}

/* ---- the list ----------------------------------------------------------------------- */

static int resolve_entry(struct resolver **rp, struct resolver *store, const char *entry,
			 uint32_t *seed, struct gp_endpoints *out, char *err, size_t errlen)
{
	const char *s = entry, *conf = getenv("GPUPOOL_RESOLV_CONF");
	enum gp_ep_kind kind = GP_EP_TLS;
	char host[256], port[16], *end;
	unsigned long p;
	size_t added = 0;
	int e;

	if (strncmp(s, "unix:", 5) == 0) {
		struct gp_endpoint *ep;

		if (!s[5] || strlen(s + 5) >= sizeof(ep->name)) {
			errf(err, errlen, "'%s': unix: needs a socket path", entry);
			return GP_ECONFIG;
		}
		ep = push(out);
		if (!ep)
			return -ENOMEM;
		ep->kind = GP_EP_UNIX;
		snprintf(ep->entry, sizeof(ep->entry), "%s", entry);
		snprintf(ep->name, sizeof(ep->name), "%s", s + 5);
		return 0;
	}
	if (strncmp(s, "plain:", 6) == 0) {
		s += 6;
		kind = GP_EP_PLAIN;
	}
	/* libresolv is needed for SRV, and for names when the test's (or anyone's) servers
	 * are named: opened once per list. */
	if (!*rp && (strncmp(s, "srv:", 4) == 0 || (conf && *conf))) {
		char why[512] = "";

		if (conf && *conf)
			e = resolver_open(store, conf, why, sizeof(why));
		else
			e = res_ninit(&store->st) ? -EHOSTUNREACH : 0;
		if (!e) {
			store->open = true;
			resolver_bound(store);
		}
		if (e) {
			resolver_close(store);
			errf(err, errlen, "%s: %s", entry,
			     why[0] ? why : "the resolver does not start");
			return e;
		}
		*rp = store;
	}
	if (strncmp(s, "srv:", 4) == 0) {
		if (!s[4] || strlen(s + 4) >= 254) {
			errf(err, errlen,
			     "'%s': srv: needs a name such as _gpupool._tcp.example.com", entry);
			return GP_ECONFIG;
		}
		return resolve_srv(*rp, entry, s + 4, kind, seed, out, err, errlen);
	}
	if (gp_split_hostport(s, host, sizeof(host), port, sizeof(port)) || !host[0]) {
		errf(err, errlen, "'%s' is not HOST:PORT, srv:NAME, unix:PATH or plain:HOST:PORT",
		     entry);
		return GP_ECONFIG;
	}
	p = strtoul(port, &end, 10);
	if (*end || !port[0] || p == 0 || p > 65535) {
		errf(err, errlen, "'%s': '%s' is not a port", entry, port);
		return GP_ECONFIG;
	}
	return resolve_host(*rp, entry, host, (uint16_t)p, kind, out, &added, err, errlen);
}

int gp_resolve(const char *list, uint32_t *seed, struct gp_endpoints *out, char *err, size_t errlen)
{
	struct resolver store, *r = NULL;
	char *copy, *save = NULL;
	size_t before = out->n;
	bool malformed = false;
	int e = 0;

	if (errlen)
		err[0] = 0;
	if (!list || !*list) {
		errf(err, errlen, "no pool named");
		return GP_ECONFIG;
	}
	memset(&store, 0, sizeof(store));
	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (char *s = strtok_r(copy, ", ", &save); s; s = strtok_r(NULL, ", ", &save)) {
		char why[1024] = "";

		e = resolve_entry(&r, &store, s, seed, out, why, sizeof(why));
		if (e == -ENOMEM)
			break;
		if (e) {
			malformed |= e == GP_ECONFIG;
			errf(err, errlen, "%s", why);
			gp_log_warnx("pool %s: %s", s, why);
		}
	}
	free(copy);
	resolver_close(&store);
	if (e == -ENOMEM)
		return e;
	if (out->n > before)
		return 0;
	return malformed ? GP_ECONFIG : -EHOSTUNREACH;
}
