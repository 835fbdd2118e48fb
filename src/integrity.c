/* integrity.c -- cudart's integrity check: HMAC-MD2 over process, tables and devices. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "integrity.h"

_Static_assert(sizeof(void *) == 8, "the integrity header assumes 64-bit pointers");

const uint8_t gp__integrity_key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
				       0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

bool gp__integrity_fixed(uint32_t version, uint64_t out[2])
{
	switch (version % 10) {
	case 0:
		out[0] = 0x3341181C03CB675CULL;
		out[1] = 0x8ED383AA1F4CD1E8ULL;
		return true;
	case 1:
		out[0] = 0x1841181C03CB675CULL;
		out[1] = 0x8ED383AA1F4CD1E8ULL;
		return true;
	default:
		return false;
	}
}

/* Appends an object's bytes as they lie in memory (native-endian) at *p. */
#define PUT(p, v)                             \
	do {                                  \
		memcpy((p), &(v), sizeof(v)); \
		(p) += sizeof(v);             \
	} while (0)

void gp__integrity_begin(struct gp__integrity *ic, const struct gp__integrity_header *hdr)
{
	uint8_t buf[GP_INTEGRITY_HEADER_SIZE], *p = buf;

	PUT(p, hdr->driver_version);
	PUT(p, hdr->version);
	PUT(p, hdr->pid);
	PUT(p, hdr->thread);
	PUT(p, hdr->cudart_table);
	PUT(p, hdr->integrity_table);
	PUT(p, hdr->check_fn);
	PUT(p, hdr->unix_seconds);
	gp__hmac_md2_init(&ic->hmac, gp__integrity_key, sizeof(gp__integrity_key));
	gp__hmac_md2_update(&ic->hmac, buf, (size_t)(p - buf));
}

void gp__integrity_add_device(struct gp__integrity *ic, const struct gp__integrity_device *dev)
{
	uint8_t buf[GP_INTEGRITY_DEVICE_SIZE], *p = buf;

	memcpy(p, dev->uuid, sizeof(dev->uuid));
	p += sizeof(dev->uuid);
	PUT(p, dev->pci_domain);
	PUT(p, dev->pci_bus);
	PUT(p, dev->pci_device);
	gp__hmac_md2_update(&ic->hmac, buf, (size_t)(p - buf));
}

void gp__integrity_end(struct gp__integrity *ic, uint64_t out[2])
{
	uint8_t digest[GP_MD2_DIGEST_SIZE];

	gp__hmac_md2_final(&ic->hmac, digest);
	memcpy(out, digest, sizeof(digest));
}

int gp__integrity_answer(const struct gp__integrity_header *hdr,
			 const struct gp__integrity_device *devs, size_t ndevs, uint64_t out[2])
{
	struct gp__integrity ic;

	if (!hdr || !out || (!devs && ndevs))
		return -EINVAL;
	if (gp__integrity_fixed(hdr->version, out))
		return 0;
	gp__integrity_begin(&ic, hdr);
	for (size_t i = 0; i < ndevs; i++)
		gp__integrity_add_device(&ic, &devs[i]);
	gp__integrity_end(&ic, out);
	return 0;
}

static CUresult device_info(const struct gp__cuda_host *host, int ordinal,
			    struct gp__integrity_device *d)
{
	CUdevice dev;
	CUuuid uuid;
	int domain, bus, device;
	CUresult r;

	if ((r = host->device_get(&dev, ordinal)) != CUDA_SUCCESS ||
	    (r = host->device_get_uuid(&uuid, dev)) != CUDA_SUCCESS ||
	    (r = host->device_get_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev)) !=
		    CUDA_SUCCESS ||
	    (r = host->device_get_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev)) !=
		    CUDA_SUCCESS ||
	    (r = host->device_get_attribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev)) !=
		    CUDA_SUCCESS)
		return r;
	memcpy(d->uuid, uuid.bytes, sizeof(d->uuid));
	d->pci_domain = domain;
	d->pci_bus = bus;
	d->pci_device = device;
	return CUDA_SUCCESS;
}

CUresult gp__integrity_check(const struct gp__cuda_host *host, const void *cudart_table,
			     const void *const *integrity_table, uint32_t version,
			     uint64_t unix_seconds, uint64_t out[2])
{
	struct gp__integrity_header hdr;
	struct gp__integrity ic;
	pthread_t self = pthread_self();
	uintptr_t thread = 0;
	int driver, count;
	CUresult r;

	if (!out || !host || !cudart_table || !integrity_table)
		return CUDA_ERROR_INVALID_VALUE;
	if (gp__integrity_fixed(version, out))
		return CUDA_SUCCESS;
	if ((r = host->driver_get_version(&driver)) != CUDA_SUCCESS ||
	    (r = host->device_get_count(&count)) != CUDA_SUCCESS)
		return r;
	if (count < 0)
		return CUDA_ERROR_UNKNOWN;

	memcpy(&thread, &self, sizeof(self) < sizeof(thread) ? sizeof(self) : sizeof(thread));
	hdr.driver_version = (uint32_t)driver;
	hdr.version = version;
	hdr.pid = (uint32_t)getpid();
	hdr.thread = (uint32_t)thread;
	hdr.cudart_table = cudart_table;
	hdr.integrity_table = integrity_table;
	hdr.check_fn = integrity_table[1];
	hdr.unix_seconds = unix_seconds;

	gp__integrity_begin(&ic, &hdr);
	for (int i = 0; i < count; i++) {
		struct gp__integrity_device d;

		r = device_info(host, i, &d);
		if (r != CUDA_SUCCESS) {
			memset(&ic, 0, sizeof(ic));
			return r;
		}
		gp__integrity_add_device(&ic, &d);
	}
	gp__integrity_end(&ic, out);
	return CUDA_SUCCESS;
}
