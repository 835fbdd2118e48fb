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
#define GP_CALL_DESC(NAME, name, num, flags, args, outs, ranges, doc) case num:
		GP_MSG_MAP(GP_MSG_DESC)
		GP_CALL_MAP(GP_CALL_DESC)
		return &gp__call__descriptor;
#undef GP_CALL_DESC
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
