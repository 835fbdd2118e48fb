/* gpupool.h -- version and the wire constants every part of gpupool shares. */
#ifndef GPUPOOL_GPUPOOL_H
#define GPUPOOL_GPUPOOL_H

#include <stdint.h>

#define GP_VERSION_MAJOR 0
#define GP_VERSION_MINOR 1
#define GP_VERSION_PATCH 0
#define GP_VERSION_STRING "0.1.0"

/*
 * Protocol version carried in Hello. Bumped on any incompatible change to the
 * envelope or to the meaning of a message; a peer with another version is
 * refused with a message naming both versions.
 */
#define GP_PROTOCOL_VERSION 3

/* Default TCP port of gpupoold. */
#define GP_DEFAULT_PORT 7420

#endif
