/* error.h -- gpupool's own error codes, kept apart from errno and CUresult. */
#ifndef GP_ERROR_H
#define GP_ERROR_H

/*
 * Functions return 0 or a negative code: either -errno (system and transport
 * errors) or one of the codes below (protocol and configuration errors).
 * CUDA's CUresult never travels in this domain; it is data inside replies.
 */
#define GP_ERRNO_MAP(X)                                   \
	X(EFRAME, -1001, "malformed frame")               \
	X(ETOOBIG, -1002, "frame exceeds size limit")     \
	X(ETYPE, -1003, "unexpected message type")        \
	X(EDECODE, -1004, "message does not decode")      \
	X(EVERSION, -1005, "protocol version mismatch")   \
	X(ECLOSED, -1006, "connection closed by peer")    \
	X(ETLS, -1007, "TLS error")                       \
	X(ECONFIG, -1008, "invalid configuration")        \
	X(EREFUSED, -1009, "session refused by the pool") \
	X(ENOTREADY, -1010, "not connected")              \
	X(EIMAGE, -1011, "unrecognised module image")

enum gp_errno {
#define GP_ERR_ENUM(name, val, msg) GP_##name = (val),
	GP_ERRNO_MAP(GP_ERR_ENUM)
#undef GP_ERR_ENUM
};

/* A message for any code this project returns (-errno or GP_*). */
const char *gp_strerror(int err);
/* The symbolic name ("GP_EFRAME", "ENOMEM") of a code. */
const char *gp_err_name(int err);

#endif
