/* bulk.h -- bulk transfers: the first chunk in the message's own frame, the rest in DATA
 * frames of GP_CHUNK_SIZE with the same request id, GP_F_MORE on all but the last.
 *
 * Both ends of every transfer use these two functions: the client sends a host-to-device
 * copy or a module image and receives a device-to-host copy; the worker does the opposite.
 * A sender whose source fails part-way ends the transfer early with an empty DATA frame
 * without GP_F_MORE, so the stream stays in step (one that fails before its first chunk
 * sends nothing, or only the message); the receiver sees fewer bytes than announced and
 * learns why from the answer that follows.
 */
#ifndef GP_BULK_H
#define GP_BULK_H

#include <stdint.h>

#include "conn.h"

/* Where received bytes go. With dst set they land in place at dst + offset (the buffer
 * holds the whole transfer); otherwise each piece is read into staging (GP_CHUNK_SIZE
 * bytes) and handed to write(), whose first non-zero answer is kept in err while the rest
 * is still read and dropped; write() may point staging elsewhere for the next piece (a
 * ring of buffers), which must then hold GP_CHUNK_SIZE bytes. With both dst and write set,
 * the bytes land in place and write() is told of each piece once it is there (a receiver
 * that streams them on), until its first non-zero answer. With neither, the bytes are
 * dropped. */
typedef int (*gp_bulk_write_fn)(void *arg, uint64_t off, const uint8_t *p, size_t n);
struct gp_bulk_sink {
	uint8_t *dst;
	gp_bulk_write_fn write;
	void *arg;
	uint8_t *staging;
	int err;
	uint64_t got; /* bytes the transfer brought */
};

/*
 * Receives the transfer that starts with *first, a frame already received by
 * gp_conn_recv whose bulk has not been read: its bytes, then DATA frames while
 * GP_F_MORE is set. At most `total` bytes are accepted. Returns 0 when the transfer
 * ended (sink->got may be less than total if the sender stopped early), or a negative
 * code when the peer broke the protocol or the connection failed.
 */
int gp_bulk_recv(struct gp_conn *c, const struct gp_frame_hdr *first, uint64_t total,
		 struct gp_bulk_sink *sink);

/* Where sent bytes come from: src (the whole transfer, sent without a copy), or read(),
 * which returns a pointer to the n bytes at off (or NULL with *err set to stop early). */
typedef const uint8_t *(*gp_bulk_read_fn)(void *arg, uint64_t off, size_t n, int *err);
struct gp_bulk_source {
	const uint8_t *src;
	gp_bulk_read_fn read;
	void *arg;
	int err; /* what read() said when it stopped the transfer */
};

/*
 * Sends a frame of `type` carrying msg (NULL for DATA) and `len` bulk bytes from the
 * source, continued in DATA frames. Returns 0 or a transport error; a source that stops
 * early ends the transfer as described above, returns 0 and leaves its error in
 * source->err.
 */
int gp_bulk_send(struct gp_conn *c, unsigned type, unsigned flags, uint64_t id,
		 const ProtobufCMessage *msg, uint64_t len, struct gp_bulk_source *source);

#endif
