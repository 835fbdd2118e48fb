/* md2.h -- MD2 (RFC 1319) and HMAC-MD2 (RFC 2104), for cudart's integrity check. */
#ifndef GP_MD2_H
#define GP_MD2_H

#include <stddef.h>
#include <stdint.h>

/*
 * MD2 is broken as a hash and is here only because cudart's integrity check (integrity.h)
 * is built on it; OpenSSL 3's default provider no longer has it. The checksum step is the
 * errata-corrected one (C[j] ^= S[M[j] ^ L]) that RFC 1319's test vectors use.
 *
 * All functions return 0, or -EINVAL for a NULL context/output or NULL data with len > 0.
 */

#define GP_MD2_BLOCK_SIZE 16
#define GP_MD2_DIGEST_SIZE 16

struct gp__md2 {
	uint8_t x[48];			/* the state */
	uint8_t c[GP_MD2_BLOCK_SIZE];	/* the running checksum */
	uint8_t l;			/* the checksum's last byte */
	uint8_t buf[GP_MD2_BLOCK_SIZE]; /* a partial block */
	size_t nbuf;
};

int gp__md2_init(struct gp__md2 *md);
int gp__md2_update(struct gp__md2 *md, const void *data, size_t len);
/* Pads, appends the checksum and writes the digest; md must be initialised again to reuse. */
int gp__md2_final(struct gp__md2 *md, uint8_t out[GP_MD2_DIGEST_SIZE]);
int gp__md2(const void *data, size_t len, uint8_t out[GP_MD2_DIGEST_SIZE]);

/* HMAC over MD2: B = 16, so ipad/opad are 16 bytes; keys longer than 16 bytes are hashed. */
struct gp__hmac_md2 {
	struct gp__md2 inner;
	uint8_t opad_key[GP_MD2_BLOCK_SIZE];
};

int gp__hmac_md2_init(struct gp__hmac_md2 *h, const void *key, size_t keylen);
int gp__hmac_md2_update(struct gp__hmac_md2 *h, const void *data, size_t len);
int gp__hmac_md2_final(struct gp__hmac_md2 *h, uint8_t out[GP_MD2_DIGEST_SIZE]);
int gp__hmac_md2(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[GP_MD2_DIGEST_SIZE]);

#endif
