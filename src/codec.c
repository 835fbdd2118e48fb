/* codec.c -- map frame types to protobuf descriptors and unpack bodies. */
#include <gpupool/wire.h>

#include "codec.h"

#define gp__none__descriptor (*(const ProtobufCMessageDescriptor *)NULL)

const ProtobufCMessageDescriptor *gp_msg_descriptor(unsigned type)
{
	switch (type) {
#define GP_MSG_DESC(name, num, body) \
	case num:                    \
		return &gp__##body##__descriptor;
		GP_MSG_MAP(GP_MSG_DESC)
#undef GP_MSG_DESC
	default:
		return NULL;
	}
}

ProtobufCMessage *gp_msg_unpack(unsigned type, const uint8_t *data, size_t len)
{
	const ProtobufCMessageDescriptor *d = gp_msg_descriptor(type);

	if (!d)
		return NULL;
	return protobuf_c_message_unpack(d, NULL, len, data);
}
