/* bulk.c -- one implementation of bulk transfers for both ends (bulk.h). */
#include <gpupool/wire.h>

#include "bulk.h"
#include "error.h"

/* Reads n bytes of the current frame's bulk into the sink at offset off. */
static int take(struct gp_conn *c, struct gp_bulk_sink *s, uint64_t off, uint32_t n)
{
	int ret;

	if (s->dst) {
		ret = gp_conn_read(c, s->dst + off, n);
		if (!ret && n && s->write && !s->err)
			s->err = s->write(s->arg, off, s->dst + off, n);
		return ret;
	}
	if (!s->write || !s->staging)
		return gp_conn_skip(c, n);
	while (n > 0) {
		size_t k = n < GP_CHUNK_SIZE ? n : GP_CHUNK_SIZE;

		ret = gp_conn_read(c, s->staging, k);
		if (ret)
			return ret;
		if (!s->err)
			s->err = s->write(s->arg, off, s->staging, k);
		off += k;
		n -= (uint32_t)k;
	}
	return 0;
}

int gp_bulk_recv(struct gp_conn *c, const struct gp_frame_hdr *first, uint64_t total,
		 struct gp_bulk_sink *s)
{
	struct gp_frame_hdr h = *first;
	int ret;

	s->got = 0;
	s->err = 0;
	for (;;) {
		if (h.bulk_len > total - s->got)
			return GP_EFRAME; /* more than was announced */
		ret = take(c, s, s->got, h.bulk_len);
		if (ret)
			return ret;
		s->got += h.bulk_len;
		if (!(h.flags & GP_F_MORE))
			return 0;
		ret = gp_conn_recv(c, &h);
		if (ret)
			return ret;
		if (h.type != GP_MSG_DATA || h.request_id != first->request_id || h.msg_len != 0)
			return GP_ETYPE;
	}
}

int gp_bulk_send(struct gp_conn *c, unsigned type, unsigned flags, uint64_t id,
		 const ProtobufCMessage *msg, uint64_t len, struct gp_bulk_source *s)
{
	uint64_t off = 0;
	bool sent_more = false;
	int ret;

	s->err = 0;
	do {
		size_t n = len - off < GP_CHUNK_SIZE ? (size_t)(len - off) : GP_CHUNK_SIZE;
		const uint8_t *p = s->src ? s->src + off : NULL;
		unsigned more = off + n < len ? GP_F_MORE : 0;

		if (!s->src && n)
			p = s->read(s->arg, off, n, &s->err);
		if (n && !p) {
			/* Stopped early: end what was started, or send the message alone. */
			if (sent_more)
				return gp_conn_send(c, GP_MSG_DATA, 0, id, NULL, NULL, 0);
			return msg ? gp_conn_send(c, type, flags, id, msg, NULL, 0) : 0;
		}
		ret = gp_conn_send(c, off ? GP_MSG_DATA : type, (off ? 0 : flags) | more, id,
				   off ? NULL : msg, p, n);
		if (ret)
			return ret;
		sent_more = more != 0;
		off += n;
	} while (off < len);
	return 0;
}
