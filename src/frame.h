/* frame.h -- the frame envelope: header codec and an incremental decoder. */
#ifndef GP_FRAME_H
#define GP_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <gpupool/wire.h>

struct gp_frame_hdr {
	uint32_t msg_len;
	uint32_t bulk_len;
	uint64_t request_id;
	uint16_t type;
	uint16_t flags;
};

/* Writes the 24-byte header. */
void gp_frame_hdr_encode(const struct gp_frame_hdr *h, uint8_t out[GP_FRAME_HDR_SIZE]);
/* Reads and checks a header: magic, reserved bits, known flags, size caps.
 * Returns 0, GP_EFRAME or GP_ETOOBIG. */
int gp_frame_hdr_decode(const uint8_t in[GP_FRAME_HDR_SIZE], struct gp_frame_hdr *h);
/* The message type's name ("MEM_ALLOC"), or NULL for an unknown type. */
const char *gp_msg_name(unsigned type);

/* A decoded frame; msg and bulk point into the decoder's buffer. */
struct gp_frame {
	struct gp_frame_hdr hdr;
	const uint8_t *msg;
	const uint8_t *bulk;
};

/*
 * Incremental decoder for byte streams that arrive in pieces (libuv reads).
 * Feed bytes, then take frames until it says it needs more. A frame stays
 * valid until the next feed or next call.
 */
struct gp_frame_decoder {
	uint8_t *buf;
	size_t len; /* bytes held */
	size_t off; /* start of the first unconsumed byte */
	size_t cap;
	size_t max; /* bytes it may hold: a frame larger than this is GP_ETOOBIG */
};

void gp_frame_decoder_init(struct gp_frame_decoder *d, size_t max_frame);
void gp_frame_decoder_deinit(struct gp_frame_decoder *d);
/* Appends bytes. Returns 0 or -ENOMEM. */
int gp_frame_decoder_feed(struct gp_frame_decoder *d, const void *data, size_t len);
/* Returns 1 and fills *f when a whole frame is held, 0 when more bytes are
 * needed, or a negative code for a malformed stream (the stream is then dead). */
int gp_frame_decoder_next(struct gp_frame_decoder *d, struct gp_frame *f);

#endif
