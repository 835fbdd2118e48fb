/* md2.c -- MD2 (RFC 1319, with its errata) and HMAC-MD2 (RFC 2104). */
#include <errno.h>
#include <string.h>

#include "md2.h"

/* RFC 1319 appendix A.3: a permutation of 0..255 built from the digits of pi. */
/* clang-format off */
static const uint8_t pi_subst[256] = {
	 41,  46,  67, 201, 162, 216, 124,   1,  61,  54,  84, 161, 236, 240,   6,  19,
	 98, 167,   5, 243, 192, 199, 115, 140, 152, 147,  43, 217, 188,  76, 130, 202,
	 30, 155,  87,  60, 253, 212, 224,  22, 103,  66, 111,  24, 138,  23, 229,  18,
	190,  78, 196, 214, 218, 158, 222,  73, 160, 251, 245, 142, 187,  47, 238, 122,
	169, 104, 121, 145,  21, 178,   7,  63, 148, 194,  16, 137,  11,  34,  95,  33,
	128, 127,  93, 154,  90, 144,  50,  39,  53,  62, 204, 231, 191, 247, 151,   3,
	255,  25,  48, 179,  72, 165, 181, 209, 215,  94, 146,  42, 172,  86, 170, 198,
	 79, 184,  56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116,   4, 241,
	 69, 157, 112,  89, 100, 113, 135,  32, 134,  91, 207, 101, 230,  45, 168,   2,
	 27,  96,  37, 173, 174, 176, 185, 246,  28,  70,  97, 105,  52,  64, 126,  15,
	 85,  71, 163,  35, 221,  81, 175,  58, 195,  92, 249, 206, 186, 197, 234,  38,
	 44,  83,  13, 110, 133,  40, 132,   9, 211, 223, 205, 244,  65, 129,  77,  82,
	106, 220,  55, 200, 108, 193, 171, 250,  36, 225, 123,   8,  12, 189, 177,  74,
	120, 136, 149, 139, 227,  99, 232, 109, 233, 203, 213, 254,  59,   0,  29,  57,
	242, 239, 183,  14, 102,  88, 208, 228, 166, 119, 114, 248, 235, 117,  75,  10,
	 49,  68,  80, 180, 143, 237,  31,  26, 219, 153, 141,  51, 159,  17, 131,  20,
};
/* clang-format on */

/* One 16-byte block: RFC 1319 steps 3.3 (checksum, errata form) and 3.4 (state). */
static void md2_block(struct gp__md2 *md, const uint8_t *m)
{
	uint8_t t = 0;

	for (int j = 0; j < 16; j++) {
		md->c[j] ^= pi_subst[m[j] ^ md->l];
		md->l = md->c[j];
	}
	for (int j = 0; j < 16; j++) {
		md->x[16 + j] = m[j];
		md->x[32 + j] = (uint8_t)(m[j] ^ md->x[j]);
	}
	for (int j = 0; j < 18; j++) {
		for (int k = 0; k < 48; k++)
			t = md->x[k] ^= pi_subst[t];
		t = (uint8_t)(t + j);
	}
}

int gp__md2_init(struct gp__md2 *md)
{
	if (!md)
		return -EINVAL;
	memset(md, 0, sizeof(*md));
	return 0;
}

int gp__md2_update(struct gp__md2 *md, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (!md || (!data && len))
		return -EINVAL;
	while (len) {
		size_t n = GP_MD2_BLOCK_SIZE - md->nbuf;

		if (n > len)
			n = len;
		memcpy(md->buf + md->nbuf, p, n);
		md->nbuf += n;
		p += n;
		len -= n;
		if (md->nbuf == GP_MD2_BLOCK_SIZE) {
			md2_block(md, md->buf);
			md->nbuf = 0;
		}
	}
	return 0;
}

int gp__md2_final(struct gp__md2 *md, uint8_t out[GP_MD2_DIGEST_SIZE])
{
	uint8_t pad, sum[GP_MD2_BLOCK_SIZE];

	if (!md || !out)
		return -EINVAL;
	/* Step 3.1: i bytes of value i, 1 <= i <= 16, always at least one. */
	pad = (uint8_t)(GP_MD2_BLOCK_SIZE - md->nbuf);
	memset(md->buf + md->nbuf, pad, pad);
	md2_block(md, md->buf);
	/* Step 3.2: the checksum is appended as one more block. md2_block also folds it into
	 * the checksum, which is no longer read. */
	memcpy(sum, md->c, sizeof(sum));
	md2_block(md, sum);
	memcpy(out, md->x, GP_MD2_DIGEST_SIZE);
	memset(md, 0, sizeof(*md));
	return 0;
}

int gp__md2(const void *data, size_t len, uint8_t out[GP_MD2_DIGEST_SIZE])
{
	struct gp__md2 md;
	int err;

	if (!out || (!data && len))
		return -EINVAL;
	gp__md2_init(&md);
	err = gp__md2_update(&md, data, len);
	if (err)
		return err;
	return gp__md2_final(&md, out);
}

int gp__hmac_md2_init(struct gp__hmac_md2 *h, const void *key, size_t keylen)
{
	uint8_t k[GP_MD2_BLOCK_SIZE] = {0}, ipad_key[GP_MD2_BLOCK_SIZE];

	if (!h || (!key && keylen))
		return -EINVAL;
	if (keylen > GP_MD2_BLOCK_SIZE)
		gp__md2(key, keylen, k);
	else if (keylen)
		memcpy(k, key, keylen);
	for (int i = 0; i < GP_MD2_BLOCK_SIZE; i++) {
		ipad_key[i] = k[i] ^ 0x36;
		h->opad_key[i] = k[i] ^ 0x5c;
	}
	gp__md2_init(&h->inner);
	return gp__md2_update(&h->inner, ipad_key, sizeof(ipad_key));
}

int gp__hmac_md2_update(struct gp__hmac_md2 *h, const void *data, size_t len)
{
	if (!h)
		return -EINVAL;
	return gp__md2_update(&h->inner, data, len);
}

int gp__hmac_md2_final(struct gp__hmac_md2 *h, uint8_t out[GP_MD2_DIGEST_SIZE])
{
	struct gp__md2 outer;
	uint8_t inner[GP_MD2_DIGEST_SIZE];

	if (!h || !out)
		return -EINVAL;
	gp__md2_final(&h->inner, inner);
	gp__md2_init(&outer);
	gp__md2_update(&outer, h->opad_key, sizeof(h->opad_key));
	gp__md2_update(&outer, inner, sizeof(inner));
	gp__md2_final(&outer, out);
	memset(h, 0, sizeof(*h));
	return 0;
}

int gp__hmac_md2(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[GP_MD2_DIGEST_SIZE])
{
	struct gp__hmac_md2 h;
	int err;

	if (!out || (!data && len))
		return -EINVAL;
	err = gp__hmac_md2_init(&h, key, keylen);
	if (err)
		return err;
	gp__hmac_md2_update(&h, data, len);
	return gp__hmac_md2_final(&h, out);
}
