/* zstd_bomb.h -- a zstd frame of RLE blocks: 4 bytes a block, 128 KiB each once unpacked,
 * for the tests of decompression bounds (a "compression bomb" built without compressing). */
#ifndef GP_TEST_ZSTD_BOMB_H
#define GP_TEST_ZSTD_BOMB_H

#include <stddef.h>
#include <stdint.h>

#define ZSTD_BOMB_BLOCK (128u << 10)

/* Writes a frame that unpacks to nblocks * 128 KiB bytes of `byte` into buf (room for
 * 6 + 4 * nblocks bytes); its length. */
static inline size_t zstd_bomb(uint8_t *buf, size_t nblocks, uint8_t byte)
{
	size_t n = 0;

	buf[n++] = 0x28; /* magic 0xFD2FB528, little-endian */
	buf[n++] = 0xb5;
	buf[n++] = 0x2f;
	buf[n++] = 0xfd;
	buf[n++] = 0x00;   /* no content size, no checksum, no dictionary: a window follows */
	buf[n++] = 7 << 3; /* window 2^(10+7) = 128 KiB */
	for (size_t i = 0; i < nblocks; i++) {
		uint32_t h = ZSTD_BOMB_BLOCK << 3 | 1u << 1 | (i + 1 == nblocks); /* RLE, last */

		buf[n++] = (uint8_t)h;
		buf[n++] = (uint8_t)(h >> 8);
		buf[n++] = (uint8_t)(h >> 16);
		buf[n++] = byte;
	}
	return n;
}

#endif
