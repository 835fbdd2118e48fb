/* image.h -- module image inspection: PTX text, fatbins, cudart wrappers, cubins. */
#ifndef GP_IMAGE_H
#define GP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The CUDA module-load calls pass an image without a length. These functions
 * recognise an image from its first bytes, size it, walk a fatbin's entries
 * and unpack an entry's payload (plain, LZ4 or zstd). They touch only the
 * bytes they are given and return 0 or a negative code from error.h
 * (GP_EIMAGE for anything malformed, -ENOMEM).
 */

#define GP_FATBIN_MAGIC 0xBA55ED50u
#define GP_FATBIN_WRAPPER_MAGIC 0x466243B1u
#define GP_LINK_MAGIC 0x4B4E4C47u /* the bytes "GLNK" */

enum gp_image_kind {
	GP_IMAGE_UNKNOWN = 0,
	GP_IMAGE_PTX,	  /* NUL-terminated PTX text */
	GP_IMAGE_FATBIN,  /* fatbin: header + entries */
	GP_IMAGE_WRAPPER, /* cudart's __fatBinC_Wrapper_t pointing at a fatbin */
	GP_IMAGE_ELF,	  /* a cubin */
	GP_IMAGE_LINK,	  /* a link bundle: the inputs of a cuLink* link (below) */
};

enum gp_fatbin_kind {
	GP_FATBIN_ENTRY_PTX = 1,
	GP_FATBIN_ENTRY_ELF = 2,
};

enum gp_fatbin_compression {
	GP_FATBIN_PLAIN = 0,
	GP_FATBIN_LZ4,
	GP_FATBIN_ZSTD,
};

/* Entry flags (NOTES.md §4). */
#define GP_FATBIN_FLAG_64BIT 0x1ull
#define GP_FATBIN_FLAG_LINUX 0x10ull
#define GP_FATBIN_FLAG_LZ4 0x2000ull
#define GP_FATBIN_FLAG_ZSTD 0x8000ull

/* One fatbin entry, pointing into the fatbin it came from. */
struct gp_fatbin_entry {
	unsigned kind;		/* enum gp_fatbin_kind */
	unsigned sm;		/* 75 for sm_75 / compute_75 */
	uint64_t flags;		/* GP_FATBIN_FLAG_* */
	int compression;	/* enum gp_fatbin_compression */
	const uint8_t *payload; /* stored bytes */
	size_t payload_size;	/* bytes stored (compressed size when compressed) */
	size_t size;		/* bytes once unpacked (0 when the header does not say) */
};

/* What kind of image starts at p (reads at most 4 bytes, none past a NUL; NULL is UNKNOWN). */
enum gp_image_kind gp_image_kind(const void *p);

/*
 * The image's length in bytes: the wrapper struct itself for a wrapper, 16 +
 * size for a fatbin, the extent of headers and sections for an ELF, strlen + 1
 * for PTX. For callers that hold no length (cuModuleLoadData): the image's
 * headers are trusted, and the tables they point at are read.
 */
int gp_image_size(const void *p, size_t *size);

/*
 * The same for an image held in len bytes (one that came over the network):
 * GP_EIMAGE unless all of it lies within them. Reads nothing past len. A
 * wrapper is GP_EIMAGE: what it points at is not in those bytes.
 */
int gp_image_size_within(const void *p, size_t len, size_t *size);

/*
 * The fatbin inside an image: a fatbin image is itself, a wrapper is followed
 * to its data. Anything else is GP_EIMAGE.
 */
int gp_image_fatbin(const void *p, const uint8_t **fatbin, size_t *size);

/*
 * The translation units' fatbins of a cudart wrapper of version 2 (what an nvcc -rdc=true
 * program registers: its `data` is the device-linked fatbin, its fourth field a
 * NULL-terminated array of each unit's own fatbin, which a driver links when `data` holds
 * nothing it can run); NULL for any other image. The array is the caller's process's.
 */
const void *const *gp_image_prelinked(const void *p);

/*
 * Walks the entries of a fatbin of `size` bytes (header included). *off starts
 * at 0. Returns 1 and fills *e while there is an entry, 0 at the end,
 * GP_EIMAGE when an entry does not fit.
 */
int gp_fatbin_next(const uint8_t *fatbin, size_t size, size_t *off, struct gp_fatbin_entry *e);

/* The most one entry may unpack to, and to how many times the bytes it stores (zstd and
 * LZ4 shrink PTX some 5-20 times; a claim past either is a compression bomb). */
#define GP_FATBIN_UNPACK_MAX (1ull << 30)
#define GP_FATBIN_RATIO_MAX 1024u

/*
 * Unpacks an entry into a new malloc'd buffer with a NUL byte after the data
 * (so PTX is a C string); *out_size excludes that NUL. GP_EIMAGE when the entry
 * claims more than GP_FATBIN_UNPACK_MAX bytes, or (compressed) more than
 * GP_FATBIN_RATIO_MAX times its stored size, before anything is allocated.
 */
int gp_fatbin_entry_unpack(const struct gp_fatbin_entry *e, uint8_t **out, size_t *out_size);

/*
 * The best PTX entry for a device of compute capability `sm` (75 for 7.5):
 * the highest PTX version not above sm. Returns 1 and fills *e, 0 when the
 * fatbin has no usable PTX, GP_EIMAGE when it is malformed.
 */
int gp_fatbin_best_ptx(const uint8_t *fatbin, size_t size, unsigned sm, struct gp_fatbin_entry *e);

/*
 * A link bundle holds the inputs of a JIT link, one after another, each with its
 * CUjitInputType and a name (docs/protocol.md, "Link bundles"). The interposer's
 * cuLinkComplete answers one and the worker links it with its driver's cuLink* when it is
 * loaded; softgpu's own cuLinkComplete answers one holding only PTX. Native-endian:
 *   header (24 bytes): u32 magic "GLNK"; u16 version (1); u16 header size (24);
 *                      u32 entry count; u32 zero; u64 total bytes (header included)
 *   entry:             u32 type; u32 name bytes (with its NUL); u64 data bytes;
 *                      the name; the data
 * The entries end exactly at the total. Sizing (gp_image_size*) checks all of it.
 */
#define GP_LINK_VERSION 1
#define GP_LINK_HEADER_SIZE 24
#define GP_LINK_ENTRY_HEADER 16
#define GP_LINK_MAX_ENTRIES 4096
#define GP_LINK_MAX_NAME 4096

struct gp_link_entry {
	unsigned type;	     /* CUjitInputType */
	const char *name;    /* NUL-terminated, inside the bundle */
	const uint8_t *data; /* inside the bundle */
	size_t size;
};

/*
 * Walks the entries of a bundle of `size` bytes (checked by gp_image_size_within first).
 * *off starts at 0. 1 and *e while there is an entry, 0 at the end, GP_EIMAGE when one does
 * not fit.
 */
int gp_link_next(const uint8_t *bundle, size_t size, size_t *off, struct gp_link_entry *e);

/* A bundle being built: _add copies each input, _finish hands over the buffer. */
struct gp_link_builder {
	uint8_t *buf;
	size_t len;
	size_t cap;
	uint32_t count;
};

void gp_link_builder_init(struct gp_link_builder *b);
void gp_link_builder_deinit(struct gp_link_builder *b);
/* 0, -ENOMEM, -EINVAL (a name too long, too many entries, a total past 1 GiB). */
int gp_link_add(struct gp_link_builder *b, unsigned type, const char *name, const void *data,
		size_t size);
/* The finished bundle (malloc'd, the caller's) and its size; the builder is empty after. */
int gp_link_finish(struct gp_link_builder *b, uint8_t **out, size_t *size);

#endif
