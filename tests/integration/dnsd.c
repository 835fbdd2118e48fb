/* dnsd.c -- a tiny DNS responder for the tests: answers A, AAAA and SRV questions over UDP
 * on 127.0.0.1 from a zone file it reads again for each question, so that a test controls
 * what names resolve to without a real DNS server (docs/operations.md, "Many hosts").
 *
 * usage: dnsd ZONEFILE PORTFILE
 * Binds 127.0.0.1 on a free port and writes the port to PORTFILE. Zone lines:
 *   NAME A 127.0.0.2
 *   NAME AAAA ::1
 *   NAME SRV PRIORITY WEIGHT PORT TARGET
 *   NAME DROP      questions for NAME get no answer at all (a server that drops them)
 *   * ADDITIONAL   SRV answers carry their targets' A/AAAA lines (additional section)
 * A name with no line is NXDOMAIN; a name with lines of other types only has no data.
 * Names compare without case and without a final dot.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define T_A 1
#define T_AAAA 28
#define T_SRV 33
#define TARGETS_MAX 128

static void strip_dot(char *s)
{
	size_t n = strlen(s);

	if (n > 1 && s[n - 1] == '.')
		s[n - 1] = 0;
}

/* The question's name in dotted form; the offset after it, or 0 when malformed. */
static size_t read_name(const uint8_t *q, size_t len, size_t off, char *out, size_t outlen)
{
	size_t o = 0;

	while (off < len) {
		unsigned l = q[off++];

		if (l == 0) {
			out[o] = 0;
			return off;
		}
		if (l > 63 || off + l > len || o + l + 2 > outlen)
			return 0;
		if (o)
			out[o++] = '.';
		memcpy(out + o, q + off, l);
		o += l;
		off += l;
	}
	return 0;
}

static size_t put_name(uint8_t *p, size_t cap, const char *name)
{
	size_t o = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", name);
	strip_dot(buf);
	if (strcmp(buf, ".") != 0)
		for (char *l = strtok_r(buf, ".", &save); l; l = strtok_r(NULL, ".", &save)) {
			size_t n = strlen(l);

			if (n > 63 || o + n + 2 > cap)
				return 0;
			p[o++] = (uint8_t)n;
			memcpy(p + o, l, n);
			o += n;
		}
	p[o++] = 0;
	return o;
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* One resource record at p (its owner's name written out, or the question's when name is
 * NULL); its length, or 0 when it does not fit in cap. */
static size_t put_rr(uint8_t *p, size_t cap, const char *name, unsigned t, const uint8_t *rd,
		     size_t rdlen)
{
	size_t o = 2;

	if (name) {
		o = put_name(p, cap, name);
		if (!o)
			return 0;
	} else if (cap >= 2) {
		put16(p, 0xC00C); /* the question's name */
	}
	if (o + 10 + rdlen > cap)
		return 0;
	put16(p + o, t);
	put16(p + o + 2, 1);	 /* IN */
	memset(p + o + 4, 0, 4); /* TTL 0: asked again each time */
	put16(p + o + 8, (unsigned)rdlen);
	memcpy(p + o + 10, rd, rdlen);
	return o + 10 + rdlen;
}

/* The A and AAAA lines of the zone for name, as additional records at p; how many. */
static unsigned put_glue(const char *zone, const char *name, uint8_t *r, size_t cap, size_t *o)
{
	char line[512], n[256], type[16], a1[256];
	unsigned count = 0;
	FILE *z = fopen(zone, "r");

	while (z && fgets(line, sizeof(line), z)) {
		uint8_t rd[16];
		size_t rdlen = 0, k;

		if (sscanf(line, "%255s %15s %255s", n, type, a1) != 3)
			continue;
		strip_dot(n);
		if (strcasecmp(n, name) != 0)
			continue;
		if (!strcmp(type, "A") && inet_pton(AF_INET, a1, rd) == 1)
			rdlen = 4;
		else if (!strcmp(type, "AAAA") && inet_pton(AF_INET6, a1, rd) == 1)
			rdlen = 16;
		else
			continue;
		k = put_rr(r + *o, cap - *o, name, rdlen == 4 ? T_A : T_AAAA, rd, rdlen);
		if (!k)
			break;
		*o += k;
		count++;
	}
	if (z)
		fclose(z);
	return count;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t salen = sizeof(sa);
	FILE *pf;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: dnsd ZONEFILE PORTFILE\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen)) {
		perror("dnsd: bind");
		return 1;
	}
	pf = fopen(argv[2], "w");
	if (!pf)
		return 1;
	fprintf(pf, "%u\n", ntohs(sa.sin_port));
	fclose(pf);
	for (;;) {
		uint8_t q[512], r[16384];
		char targets[TARGETS_MAX][256];
		unsigned ntargets = 0, ar = 0;
		int drop = 0, additional = 0;
		struct sockaddr_in from;
		socklen_t fromlen = sizeof(from);
		char qname[256], line[512];
		unsigned qtype, an = 0;
		size_t qend, o;
		int found = 0;
		ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fromlen);
		FILE *z;

		if (n < 12 || (q[2] & 0x80))
			continue;
		qend = read_name(q, (size_t)n, 12, qname, sizeof(qname));
		if (!qend || qend + 4 > (size_t)n)
			continue;
		qtype = (unsigned)(q[qend] << 8 | q[qend + 1]);
		qend += 4;
		memcpy(r, q, qend);
		o = qend;
		z = fopen(argv[1], "r");
		while (z && fgets(line, sizeof(line), z)) {
			char name[256], type[16], a1[256] = "", a2[64] = "", a3[64] = "",
						  a4[256] = "";
			uint8_t rd[300];
			size_t rdlen = 0;
			unsigned t;

			if (sscanf(line, "%255s %15s %255s %63s %63s %255s", name, type, a1, a2, a3,
				   a4) < 2)
				continue;
			if (!strcmp(type, "ADDITIONAL")) {
				additional = 1;
				continue;
			}
			strip_dot(name);
			if (strcasecmp(name, qname) != 0)
				continue;
			found = 1;
			if (!strcmp(type, "DROP")) {
				drop = 1;
				continue;
			}
			t = !strcmp(type, "A") ? T_A : !strcmp(type, "AAAA") ? T_AAAA : T_SRV;
			if (t != qtype)
				continue;
			if (t == T_A && inet_pton(AF_INET, a1, rd) == 1) {
				rdlen = 4;
			} else if (t == T_AAAA && inet_pton(AF_INET6, a1, rd) == 1) {
				rdlen = 16;
			} else if (t == T_SRV) {
				put16(rd, (unsigned)atoi(a1));
				put16(rd + 2, (unsigned)atoi(a2));
				put16(rd + 4, (unsigned)atoi(a3));
				rdlen = put_name(rd + 6, sizeof(rd) - 6, a4);
				if (!rdlen)
					continue;
				rdlen += 6;
				if (ntargets < TARGETS_MAX) {
					snprintf(targets[ntargets], sizeof(targets[0]), "%s", a4);
					strip_dot(targets[ntargets++]);
				}
			} else {
				continue;
			}
			rdlen = put_rr(r + o, sizeof(r) - o, NULL, t, rd, rdlen);
			if (!rdlen)
				break;
			o += rdlen;
			an++;
		}
		if (z)
			fclose(z);
		if (drop)
			continue;
		for (unsigned i = 0; additional && i < ntargets; i++)
			ar += put_glue(argv[1], targets[i], r, sizeof(r), &o);
		r[2] = (uint8_t)(0x84 | (q[2] & 0x01)); /* QR, AA, RD as asked */
		r[3] = (uint8_t)(0x80 |
				 (found ? 0 : 3)); /* RA; NXDOMAIN when the name is unknown */
		put16(r + 6, an);
		put16(r + 8, 0);
		put16(r + 10, ar);
		sendto(fd, r, o, 0, (struct sockaddr *)&from, fromlen);
	}
}
