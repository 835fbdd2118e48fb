/* error.c -- names and messages for gpupool's error codes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

const char *gp_strerror(int err)
{
	switch (err) {
#define GP_ERR_MSG(name, val, msg) \
	case GP_##name:            \
		return msg;
		GP_ERRNO_MAP(GP_ERR_MSG)
#undef GP_ERR_MSG
	default:
		break;
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}

const char *gp_err_name(int err)
{
	switch (err) {
#define GP_ERR_NAME(name, val, msg) \
	case GP_##name:             \
		return "GP_" #name;
		GP_ERRNO_MAP(GP_ERR_NAME)
#undef GP_ERR_NAME
	default:
		break;
	}
	if (err == 0)
		return "OK";
	if (err < 0 && err > -4096) {
		const char *n = strerrorname_np(-err);
		if (n)
			return n;
	}
	return "UNKNOWN";
}
