/* fuzz_frame.c -- the frame header codec, the incremental decoder and message unpacking.
 *
 * Input: one byte that seeds how the rest is cut into feeds (0: all at once),
 * one byte that picks the decoder's frame limit (0: the protocol's caps), then
 * the byte stream. Every frame the decoder hands out must be exactly the next
 * bytes of the stream, whole, and within the caps; its body is unpacked as
 * every message the protocol has.
 */
#include <string.h>

#include <gpupool/wire.h>

#include "codec.h"
#include "error.h"
#include "frame.h"
#include "fuzz.h"

#define FRAME_MAX ((size_t)GP_FRAME_HDR_SIZE + GP_FRAME_MSG_MAX + GP_FRAME_BULK_MAX)

static const unsigned msg_types[] = {
#define TYPE(name, num, body) num,
#define CALL_TYPE(NAME, name, num, flags, args, outs, ranges, doc) num,
	GP_MSG_MAP(TYPE) GP_CALL_MAP(CALL_TYPE)
#undef CALL_TYPE
#undef TYPE
};

/* Unpacks a body as each distinct message type; each result is freed at once. */
static void unpack_all(const uint8_t *msg, size_t len)
{
	const ProtobufCMessageDescriptor *seen[sizeof(msg_types) / sizeof(msg_types[0])];
	size_t nseen = 0;

	for (size_t i = 0; i < sizeof(msg_types) / sizeof(msg_types[0]); i++) {
		const ProtobufCMessageDescriptor *d = gp_msg_descriptor(msg_types[i]);
		ProtobufCMessage *m;
		size_t k;

		if (!d) {
			FUZZ_CHECK(gp_msg_unpack(msg_types[i], msg, len) == NULL);
			continue;
		}
		for (k = 0; k < nseen && seen[k] != d; k++)
			;
		if (k < nseen)
			continue;
		seen[nseen++] = d;
		m = gp_msg_unpack(msg_types[i], msg, len);
		if (m) {
			FUZZ_CHECK(m->descriptor == d);
			protobuf_c_message_free_unpacked(m, NULL);
		}
	}
}

/* Checks one frame against the stream: it starts at `done` and all of it was fed. */
static void check_frame(const struct gp_frame_decoder *d, const struct gp_frame *f,
			const uint8_t *stream, size_t done, size_t fed)
{
	struct gp_frame_hdr h;
	uint8_t enc[GP_FRAME_HDR_SIZE];
	size_t total;

	FUZZ_CHECK(f->hdr.msg_len <= GP_FRAME_MSG_MAX && f->hdr.bulk_len <= GP_FRAME_BULK_MAX);
	total = GP_FRAME_HDR_SIZE + (size_t)f->hdr.msg_len + f->hdr.bulk_len;
	FUZZ_CHECK(total <= d->max);
	FUZZ_CHECK(total <= fed - done);
	FUZZ_CHECK(gp_frame_hdr_decode(stream + done, &h) == 0);
	FUZZ_CHECK(h.msg_len == f->hdr.msg_len && h.bulk_len == f->hdr.bulk_len &&
		   h.request_id == f->hdr.request_id && h.type == f->hdr.type &&
		   h.flags == f->hdr.flags);
	gp_frame_hdr_encode(&f->hdr, enc);
	FUZZ_CHECK(memcmp(enc, stream + done, sizeof(enc)) == 0);
	FUZZ_CHECK(f->msg >= d->buf && f->msg + f->hdr.msg_len <= d->buf + d->cap);
	FUZZ_CHECK(f->bulk == f->msg + f->hdr.msg_len);
	FUZZ_CHECK(f->bulk + f->hdr.bulk_len <= d->buf + d->cap);
	FUZZ_CHECK(memcmp(f->msg, stream + done + GP_FRAME_HDR_SIZE, f->hdr.msg_len) == 0);
	FUZZ_CHECK(memcmp(f->bulk, stream + done + GP_FRAME_HDR_SIZE + f->hdr.msg_len,
			  f->hdr.bulk_len) == 0);
	FUZZ_CHECK(gp_msg_name(f->hdr.type) != NULL || gp_msg_descriptor(f->hdr.type) == NULL);
}

/* The decoder wants more: what is held must be less than the next frame. */
static void check_short(const struct gp_frame_decoder *d, const uint8_t *stream, size_t done,
			size_t fed)
{
	struct gp_frame_hdr h;

	if (fed - done < GP_FRAME_HDR_SIZE)
		return;
	FUZZ_CHECK(gp_frame_hdr_decode(stream + done, &h) == 0);
	FUZZ_CHECK(GP_FRAME_HDR_SIZE + (size_t)h.msg_len + h.bulk_len > fed - done);
	FUZZ_CHECK(GP_FRAME_HDR_SIZE + (size_t)h.msg_len + h.bulk_len <= d->max);
}

/* The stream is malformed: the header at `done` says why. */
static void check_error(const struct gp_frame_decoder *d, int err, const uint8_t *stream,
			size_t done, size_t fed)
{
	struct gp_frame_hdr h;
	int herr;

	FUZZ_CHECK(err == GP_EFRAME || err == GP_ETOOBIG);
	FUZZ_CHECK(fed - done >= GP_FRAME_HDR_SIZE);
	herr = gp_frame_hdr_decode(stream + done, &h);
	if (herr == 0)
		FUZZ_CHECK(err == GP_ETOOBIG &&
			   GP_FRAME_HDR_SIZE + (size_t)h.msg_len + h.bulk_len > d->max);
	else
		FUZZ_CHECK(err == herr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gp_frame_decoder d;
	struct gp_frame_hdr h;
	const uint8_t *stream;
	size_t len, fed = 0, done = 0;
	uint32_t rng;
	int err = 0;

	if (size < 2)
		return 0;
	rng = data[0];
	gp_frame_decoder_init(&d, data[1] ? (size_t)data[1] * 64 : FRAME_MAX);
	stream = data + 2;
	len = size - 2;

	/* Any 24 bytes: a header decodes or is refused, and decodes to what it encodes. */
	if (len >= GP_FRAME_HDR_SIZE && gp_frame_hdr_decode(stream, &h) == 0) {
		uint8_t enc[GP_FRAME_HDR_SIZE];

		gp_frame_hdr_encode(&h, enc);
		FUZZ_CHECK(memcmp(enc, stream, sizeof(enc)) == 0);
	}

	while (fed < len && err == 0) {
		size_t n = len - fed;
		struct gp_frame f;
		int r;

		if (rng) {
			rng = rng * 1103515245u + 12345u;
			n = 1 + (rng >> 16) % (n < 256 ? n : 256);
		}
		FUZZ_CHECK(gp_frame_decoder_feed(&d, stream + fed, n) == 0);
		fed += n;
		while ((r = gp_frame_decoder_next(&d, &f)) == 1) {
			check_frame(&d, &f, stream, done, fed);
			unpack_all(f.msg, f.hdr.msg_len);
			done += GP_FRAME_HDR_SIZE + (size_t)f.hdr.msg_len + f.hdr.bulk_len;
		}
		if (r == 0)
			check_short(&d, stream, done, fed);
		else
			check_error(&d, err = r, stream, done, fed);
	}
	gp_frame_decoder_deinit(&d);
	return 0;
}
