/* integrity.h -- the answer to cudart's integrity check (export table INTEGRITY_CHECK, slot 1). */
#ifndef GP_INTEGRITY_H
#define GP_INTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_host.h"
#include "md2.h"

/*
 * cudart 13 calls INTEGRITY_CHECK slot 1, CUresult (u32 version, u64 unix_seconds, u64
 * out[2]), and refuses every runtime call (cudaErrorSoftwareValidityNotEstablished) unless
 * the 16 bytes match what it computes itself:
 *   version % 10 == 0 or 1: two fixed answers;
 *   otherwise HMAC-MD2 under GP_INTEGRITY_KEY of a 48-byte header (below, native-endian,
 *   no padding) followed by 28 bytes per device in ordinal order (16-byte UUID, then the
 *   PCI domain, bus and device as i32).
 * out[] receives the 16 digest bytes as they are (two native-endian u64).
 */

#define GP_INTEGRITY_HEADER_SIZE 48
#define GP_INTEGRITY_DEVICE_SIZE 28

extern const uint8_t gp__integrity_key[16];

struct gp__integrity_header {
	uint32_t driver_version;     /* what cuDriverGetVersion reports */
	uint32_t version;	     /* the argument */
	uint32_t pid;		     /* getpid() */
	uint32_t thread;	     /* pthread_self(), truncated to 32 bits */
	const void *cudart_table;    /* the CUDART_INTERFACE table handed out */
	const void *integrity_table; /* the INTEGRITY_CHECK table handed out */
	const void *check_fn;	     /* that table's slot 1 */
	uint64_t unix_seconds;	     /* the argument */
};

struct gp__integrity_device {
	uint8_t uuid[16]; /* cuDeviceGetUuid_v2 */
	int32_t pci_domain, pci_bus, pci_device;
};

struct gp__integrity {
	struct gp__hmac_md2 hmac;
};

/* The fixed answers: true with out[] set when version % 10 is 0 or 1, else false. */
bool gp__integrity_fixed(uint32_t version, uint64_t out[2]);

/* The HMAC in three steps, so devices can be streamed in. */
void gp__integrity_begin(struct gp__integrity *ic, const struct gp__integrity_header *hdr);
void gp__integrity_add_device(struct gp__integrity *ic, const struct gp__integrity_device *dev);
void gp__integrity_end(struct gp__integrity *ic, uint64_t out[2]);

/* The whole answer for given inputs (fixed or HMAC); -EINVAL for NULL hdr/out, or devs NULL
 * with ndevs > 0. */
int gp__integrity_answer(const struct gp__integrity_header *hdr,
			 const struct gp__integrity_device *devs, size_t ndevs, uint64_t out[2]);

/*
 * Slot 1's work: gathers the inputs exactly as NOTES.md section 3 says -- getpid(), the
 * calling thread's pthread_self(), the two table pointers, integrity_table[1] as the slot-1
 * function, the driver version and devices from host -- and answers. CUDA_ERROR_INVALID_VALUE
 * for NULL arguments; a host callback's error is returned as is (out[] untouched).
 */
CUresult gp__integrity_check(const struct gp__cuda_host *host, const void *cudart_table,
			     const void *const *integrity_table, uint32_t version,
			     uint64_t unix_seconds, uint64_t out[2]);

#endif
