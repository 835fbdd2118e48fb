/* frame.c -- encode and check frame headers; split a byte stream into frames. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "frame.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void gp_frame_hdr_encode(const struct gp_frame_hdr *h, uint8_t out[GP_FRAME_HDR_SIZE])
{
	put32(out, h->msg_len);
	put32(out + 4, h->bulk_len);
	put64(out + 8, h->request_id);
	put16(out + 16, h->type);
	put16(out + 18, h->flags);
	put16(out + 20, GP_FRAME_MAGIC);
	put16(out + 22, 0);
}

int gp_frame_hdr_decode(const uint8_t in[GP_FRAME_HDR_SIZE], struct gp_frame_hdr *h)
{
	if (get16(in + 20) != GP_FRAME_MAGIC || get16(in + 22) != 0)
		return GP_EFRAME;
	h->msg_len = get32(in);
	h->bulk_len = get32(in + 4);
	h->request_id = get64(in + 8);
	h->type = get16(in + 16);
	h->flags = get16(in + 18);
	if (h->flags & ~GP_F_KNOWN)
		return GP_EFRAME;
	if (h->msg_len > GP_FRAME_MSG_MAX || h->bulk_len > GP_FRAME_BULK_MAX)
		return GP_ETOOBIG;
	return 0;
}

const char *gp_msg_name(unsigned type)
{
	switch (type) {
#define GP_MSG_CASE(name, num, body) \
	case num:                    \
		return #name;
#define GP_CALL_CASE(NAME, name, num, flags, args, outs, ranges, doc) \
	case num:                                                     \
		return #NAME;
		GP_MSG_MAP(GP_MSG_CASE)
		GP_CALL_MAP(GP_CALL_CASE)
#undef GP_CALL_CASE
#undef GP_MSG_CASE
	default:
		return NULL;
	}
}

void gp_frame_decoder_init(struct gp_frame_decoder *d, size_t max_frame)
{
	memset(d, 0, sizeof(*d));
	d->max = max_frame;
}

void gp_frame_decoder_deinit(struct gp_frame_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

int gp_frame_decoder_feed(struct gp_frame_decoder *d, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	/* Drop consumed bytes before growing. */
	if (d->off > 0) {
		memmove(d->buf, d->buf + d->off, d->len - d->off);
		d->len -= d->off;
		d->off = 0;
	}
	if (d->len + len > d->cap) {
		size_t cap = d->cap ? d->cap : 4096;
		uint8_t *nb;

		while (cap < d->len + len)
			cap *= 2;
		nb = realloc(d->buf, cap);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->cap = cap;
	}
	memcpy(d->buf + d->len, data, len);
	d->len += len;
	return 0;
}

int gp_frame_decoder_next(struct gp_frame_decoder *d, struct gp_frame *f)
{
	size_t avail = d->len - d->off;
	const uint8_t *p = d->buf + d->off;
	size_t total;
	int err;

	if (avail < GP_FRAME_HDR_SIZE)
		return 0;
	err = gp_frame_hdr_decode(p, &f->hdr);
	if (err)
		return err;
	total = GP_FRAME_HDR_SIZE + (size_t)f->hdr.msg_len + f->hdr.bulk_len;
	if (total > d->max)
		return GP_ETOOBIG;
	if (avail < total)
		return 0;
	f->msg = p + GP_FRAME_HDR_SIZE;
	f->bulk = f->msg + f->hdr.msg_len;
	d->off += total;
	if (d->off == d->len)
		d->off = d->len = 0; /* the frame's bytes stay in place until the next feed */
	return 1;
}
