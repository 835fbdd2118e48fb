/* codec.h -- which protobuf message a frame type carries, and unpacking it. */
#ifndef GP_CODEC_H
#define GP_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "gpupool.pb-c.h"

/* The descriptor of the body a frame of this type carries; NULL for types
 * without a body (DATA, GOODBYE) and for unknown types. */
const ProtobufCMessageDescriptor *gp_msg_descriptor(unsigned type);

/* Unpacks a frame body of the given type. Returns NULL when the type has no
 * body or the bytes are not a valid message of that type. Free with
 * protobuf_c_message_free_unpacked(msg, NULL). */
ProtobufCMessage *gp_msg_unpack(unsigned type, const uint8_t *data, size_t len);

#endif
