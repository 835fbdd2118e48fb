/* raw_client.c -- speaks the gpupool protocol by hand to test how the pool
 * treats clients that misbehave. Each mode states what the pool must do and
 * exits 0 only if it did.
 *
 * usage: raw_client MODE   (GPUPOOL_SERVER and GPUPOOL_CA from the environment)
 *   version   Hello with another protocol version: refused, message names both
 *   garbage   a frame with a bad magic after Hello: the pool closes the session
 *   oversize  a frame claiming a 2 GiB body: closed without allocating it
 *   type      a frame of an unknown type: closed
 *   foreign   pointers and handles the session does not own: refused with
 *             CUDA_ERROR_INVALID_VALUE / INVALID_CONTEXT, session goes on
 *   vmm       virtual memory calls with addresses, sizes and handles the session does not
 *             own, or that wrap: refused with CUDA's errors, the session goes on
 *   managed   MANAGED_PUSH runs outside the session's managed memory (device memory, past
 *             an allocation's end, wrapping), malformed run lists and byte counts, a
 *             fetch without a diff or of another size, bad allocation flags: refused
 *             with CUDA_ERROR_INVALID_VALUE, a good push still lands, session goes on
 *   pools     memory pool calls with forged, stale and foreign handles, bad attributes,
 *             sizes and access maps, and pointers freed or not their own: refused with
 *             CUDA errors, session goes on
 *   image     module images that point outside the bytes sent (a cudart
 *             wrapper, a fatbin claiming more): refused with
 *             CUDA_ERROR_INVALID_IMAGE, session goes on
 *   handles   thousands of events, then module loads whose own handles make the
 *             worker's handle table grow, in a 64 MiB session (RAW_MEMORY): the
 *             globals are still charged (16 MiB fit, 60 MiB more do not)
 *   contexts  retains device 0's primary context, then creates contexts until one is
 *             refused: prints how many and the error, then "held" (ends at EOF on stdin)
 *   hold      a session with a context: prints "held", ends at EOF on stdin
 *   arrays    array copies with hostile boxes (host byte counts that do not match, rows,
 *             slices and x past the array, linear offsets past its bytes, pitches and
 *             slices that wrap, device memory not the session's), forged and stale array
 *             and mipmapped-array handles, a level destroyed as an array, texture descriptors
 *             naming memory or arrays not the session's, texture and surface objects it
 *             never made or already destroyed: refused with CUDA's errors, session goes on;
 *             with RAW_ARRAY_OBJECTS set, texture objects until the bound (65536, then
 *             CUDA_ERROR_OUT_OF_MEMORY; one destroyed makes room); with RAW_MEMORY set
 *             (456 MiB), mipmapped arrays whose every level's layers or cubemap faces are
 *             past the limit: CUDA_ERROR_OUT_OF_MEMORY
 *   launch-ex LAUNCH_EX with attributes the worker must refuse (unknown ones, an
 *             access window over memory not the session's, a cooperative grid too
 *             large, clusters softgpu lacks, parameters too short), each with its
 *             CUDA error; a window over its own memory works; then TENSOR_MAP_ENCODE
 *             of tensors not in the session's memory (INVALID_VALUE) and of one in it
 *             (softgpu cannot: NOT_SUPPORTED); session goes on
 *
 * RAW_MEMORY (bytes) is the memory the Hello asks for; RAW_PROGRAM and RAW_HOST
 * replace the program name and client host it sends; RAW_SLICE is its slice (GPUPOOL_SLICE,
 * unchecked: the pool must judge it); RAW_PRIORITY its priority, any int32 (unchecked too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include <gpupool/gpupool.h>

#include "calls.h"
#include "codec.h"
#include "conn.h"
#include "error.h"
#include "image.h"
#include "../common/zstd_bomb.h"

static struct gp_conn *c;

static void die(const char *what)
{
	fprintf(stderr, "raw_client: %s (%s)\n", what, c && c->err[0] ? c->err : "");
	exit(1);
}

static void connect_pool(void)
{
	const char *server = getenv("GPUPOOL_SERVER");
	char err[512], host[256], port[16];
	SSL_CTX *ctx;
	int fd;

	if (!server || gp_split_hostport(server, host, sizeof(host), port, sizeof(port)))
		die("GPUPOOL_SERVER");
	ctx = gp_tls_client_ctx_new(getenv("GPUPOOL_CA"), NULL, NULL, err, sizeof(err));
	if (!ctx)
		die(err);
	fd = gp_tcp_connect(server, 5000, err, sizeof(err));
	if (fd < 0)
		die(err);
	c = gp_conn_new(fd);
	if (gp_conn_tls_connect(c, ctx, host))
		die("TLS");
}

static Gp__HelloReply *hello(uint32_t version)
{
	Gp__Hello h = GP__HELLO__INIT;
	struct gp_frame_hdr fh;
	Gp__HelloReply *rep;

	h.protocol_version = version;
	h.program = getenv("RAW_PROGRAM") ? getenv("RAW_PROGRAM") : "raw_client";
	h.client_host = getenv("RAW_HOST") ? getenv("RAW_HOST") : "test";
	h.memory = getenv("RAW_MEMORY") ? strtoull(getenv("RAW_MEMORY"), NULL, 0) : 0;
	h.slice = getenv("RAW_SLICE") ? getenv("RAW_SLICE") : "";
	if (getenv("RAW_PRIORITY")) { /* any int32, as a hostile client may send */
		h.priority = (int32_t)strtol(getenv("RAW_PRIORITY"), NULL, 0);
		h.priority_set = true;
	}
	if (gp_conn_send(c, GP_MSG_HELLO, 0, 0, &h.base, NULL, 0) || gp_conn_recv(c, &fh))
		die("Hello");
	if (fh.type != GP_MSG_HELLO_REPLY)
		die("no HelloReply");
	rep = (Gp__HelloReply *)gp_msg_unpack(fh.type, c->msg, fh.msg_len);
	if (!rep)
		die("HelloReply does not decode");
	return rep;
}

static void hello_ok(void)
{
	Gp__HelloReply *rep = hello(GP_PROTOCOL_VERSION);

	if (rep->status != 0)
		die(rep->message);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
}

static uint64_t next_id = 1;

/* Sends a packed Call (with its BULK_IN bytes in the frame) and returns its result; out gets
 * the reply's outputs. The reply must come at once: no DATA frames before it. */
static CUresult send_call(unsigned type, const Gp__Call *call, const struct gp_bulk_ref *b,
			  uint64_t *out, size_t nout)
{
	struct gp_frame_hdr fh;
	Gp__Reply *rep;
	CUresult r;
	uint64_t id = next_id++;

	if (gp_conn_send(c, type, 0, id, &call->base, b->src, b->src ? b->len : 0) ||
	    gp_conn_recv(c, &fh))
		die("call");
	if (fh.type != GP_MSG_REPLY || fh.request_id != id)
		die("unexpected reply");
	rep = gp__reply__unpack(NULL, fh.msg_len, c->msg);
	if (!rep)
		die("reply does not decode");
	r = (CUresult)rep->result;
	for (size_t i = 0; i < nout && i < rep->n_out; i++)
		out[i] = rep->out[i];
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return r;
}

/* call(name, &in, &out): one call of <gpupool/calls.h>, encoded as the interposer does. */
#define call(name, in, outp)                                                          \
	({                                                                            \
		Gp__Call call_ = GP__CALL__INIT;                                      \
		uint64_t args_[GP_CALL_ARGS_MAX], o_[GP_CALL_OUTS_MAX] = {0};         \
		struct gp_bulk_ref b_;                                                \
		CUresult r_;                                                          \
                                                                                      \
		gp_call_pack_##name((in), &call_, args_, &b_);                        \
		r_ = send_call(gp__msg_of_##name, &call_, &b_, o_, GP_CALL_OUTS_MAX); \
		struct gp_out_##name *p_ = (outp);                                    \
		if (p_)                                                               \
			gp_call_outs_##name(o_, p_);                                  \
		r_;                                                                   \
	})
#define GP__MSG_OF(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) gp__msg_of_##name = NUM,
enum { GP_CALL_MAP(GP__MSG_OF) };
#undef GP__MSG_OF

/* Sends MODULE_LOAD with the image as bulk and returns its result. */
static CUresult module_load(uint64_t ctx, const void *image, size_t len)
{
	struct gp_in_module_load in = {.ctx = ctx, .image = image, .image_len = len};

	return call(module_load, &in, (struct gp_out_module_load *)NULL);
}

/* MODULE_LOAD of PTX; *fn: the handle of its first function. */
static CUresult module_load_fn(uint64_t ctx, const char *ptx, size_t len, uint64_t *fn)
{
	struct gp_in_module_load in = {.ctx = ctx, .image = ptx, .image_len = len};
	Gp__Call call = GP__CALL__INIT;
	uint64_t args[GP_CALL_ARGS_MAX], id = next_id++;
	struct gp_bulk_ref b;
	struct gp_frame_hdr fh;
	Gp__Reply *rep;
	CUresult r;

	gp_call_pack_module_load(&in, &call, args, &b);
	if (gp_conn_send(c, GP_MSG_MODULE_LOAD, 0, id, &call.base, b.src, b.len) ||
	    gp_conn_recv(c, &fh))
		die("MODULE_LOAD");
	if (fh.type != GP_MSG_REPLY || fh.request_id != id)
		die("unexpected reply");
	rep = gp__reply__unpack(NULL, fh.msg_len, c->msg);
	if (!rep)
		die("reply does not decode");
	r = (CUresult)rep->result;
	if (r == CUDA_SUCCESS && rep->n_function < 1)
		die("MODULE_LOAD listed no function");
	if (r == CUDA_SUCCESS)
		*fn = rep->function[0]->handle;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return r;
}

/* PTX text with a global of `bytes` bytes into buf; its length. */
static size_t module_with(unsigned long long bytes, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len,
				".version 8.0\n.target sm_75\n.address_size 64\n"
				".visible .global .align 8 .b8 big[%llu];\n"
				".visible .entry touch(.param .u64 p)\n{\n\tret;\n}\n",
				bytes);
}

/* The pool must close the connection: the next read sees EOF. */
static int expect_closed(void)
{
	struct gp_frame_hdr fh;
	int r = gp_conn_recv(c, &fh);

	if (r == 0) {
		fprintf(stderr, "raw_client: the pool answered type %u instead of closing\n",
			fh.type);
		return 1;
	}
	printf("closed by the pool: %s\n", c->err);
	return 0;
}

static void send_raw_header(uint32_t msg_len, uint16_t type, uint16_t magic)
{
	uint8_t raw[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h = {.msg_len = msg_len, .type = type, .request_id = 99};

	gp_frame_hdr_encode(&h, raw);
	raw[20] = (uint8_t)magic;
	raw[21] = (uint8_t)(magic >> 8);
	if (gp_conn_write(c, raw, sizeof(raw)) || gp_conn_flush(c))
		die("flush");
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	connect_pool();
	if (strcmp(mode, "version") == 0 || strcmp(mode, "old-version") == 0) {
		/* A newer client, or one of the version before (its calls had other slots). */
		unsigned v = mode[0] == 'o' ? GP_PROTOCOL_VERSION - 1 : GP_PROTOCOL_VERSION + 98;
		Gp__HelloReply *rep = hello(v);
		char theirs[32], ours[32];
		int ok;

		snprintf(theirs, sizeof(theirs), "client speaks %u", v);
		snprintf(ours, sizeof(ours), "pool speaks %u", GP_PROTOCOL_VERSION);
		printf("status %d: %s\n", rep->status, rep->message);
		ok = rep->status == GP_EVERSION && strstr(rep->message, theirs) &&
		     strstr(rep->message, ours);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return ok ? 0 : 1;
	}
	hello_ok();
	if (strcmp(mode, "garbage") == 0) {
		send_raw_header(0, GP_MSG_MEM_ALLOC, 0x1234);
		return expect_closed();
	}
	if (strcmp(mode, "oversize") == 0) {
		send_raw_header(0x80000000u, GP_MSG_MEM_ALLOC, GP_FRAME_MAGIC);
		return expect_closed();
	}
	if (strcmp(mode, "type") == 0) {
		send_raw_header(0, 4242, GP_FRAME_MAGIC);
		return expect_closed();
	}
	if (strcmp(mode, "managed") == 0) {
		struct gp_out_ctx_create cc;
		struct gp_out_mem_alloc ma;
		struct gp_out_managed_alloc mg;
		struct gp_out_managed_diff df;
		uint8_t data[8192], back[64];
		uint64_t runs[4][2], ctx, m;
		int bad = 0;

		memset(data, 0x5c, sizeof(data));
		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		if (call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &ma) != CUDA_SUCCESS ||
		    call(managed_alloc,
			 (&(struct gp_in_managed_alloc){.ctx = ctx, .bytes = 5000, .flags = 1}),
			 &mg) != CUDA_SUCCESS)
			die("managed setup");
		m = mg.dptr;
#define PUSH(nr, nbytes)                                                                   \
	call(managed_push,                                                                 \
	     (&(struct gp_in_managed_push){                                                \
		     .runs = runs, .runs_len = (nr), .data = data, .data_len = (nbytes)}), \
	     (struct gp_out_managed_push *)NULL)
#define M_EXPECT(what, r, want)                 \
	do {                                    \
		CUresult got_ = (r);            \
		printf("%s: %d\n", what, got_); \
		bad |= got_ != (want);          \
	} while (0)
		M_EXPECT("flags 0",
			 call(managed_alloc,
			      (&(struct gp_in_managed_alloc){.ctx = ctx, .bytes = 64}),
			      (struct gp_out_managed_alloc *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = ma.dptr, runs[0][1] = 64;
		M_EXPECT("push into device memory", PUSH(16, 64), CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = m + 8192 - 32, runs[0][1] = 64;
		M_EXPECT("push past the end", PUSH(16, 64), CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = m + 64, runs[0][1] = UINT64_MAX - 63;
		M_EXPECT("push that wraps", PUSH(16, 64), CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = m, runs[0][1] = 64, runs[1][0] = m + 4096, runs[1][1] = UINT64_MAX;
		M_EXPECT("runs whose sum wraps", PUSH(32, 64), CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = m, runs[0][1] = 64;
		M_EXPECT("a run list cut short", PUSH(12, 64), CUDA_ERROR_INVALID_VALUE);
		M_EXPECT("more bytes than the runs", PUSH(16, 128), CUDA_ERROR_INVALID_VALUE);
		M_EXPECT("no runs", PUSH(0, 64), CUDA_ERROR_INVALID_VALUE);
		M_EXPECT("a zero-length run", (runs[0][1] = 0, PUSH(16, 0)),
			 CUDA_ERROR_INVALID_VALUE);
		runs[0][0] = m + 100, runs[0][1] = 64, runs[1][0] = m + 8000, runs[1][1] = 192;
		M_EXPECT("a good push", PUSH(32, 256), CUDA_SUCCESS);
		/* The device did not change what was pushed: nothing comes back. */
		M_EXPECT("diff",
			 call(managed_diff, (&(struct gp_in_managed_diff){.max = 1u << 20}), &df),
			 CUDA_SUCCESS);
		M_EXPECT("nothing changed", df.bytes == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN,
			 CUDA_SUCCESS);
		M_EXPECT("a round too small",
			 call(managed_diff, (&(struct gp_in_managed_diff){.max = 4096}),
			      (struct gp_out_managed_diff *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		M_EXPECT("fetch without a diff",
			 call(managed_fetch,
			      (&(struct gp_in_managed_fetch){.diff = back,
							     .diff_len = sizeof(back)}),
			      (struct gp_out_managed_fetch *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		/* What was pushed is there: a copy out of the allocation sees it. */
		{
			uint8_t got[64];
			Gp__Call call_ = GP__CALL__INIT;
			uint64_t args_[GP_CALL_ARGS_MAX];
			struct gp_bulk_ref b_;
			struct gp_frame_hdr fh;
			uint64_t id = next_id++;

			gp_call_pack_memcpy_dtoh(&(struct gp_in_memcpy_dtoh){.ctx = ctx,
									     .src = m + 100,
									     .width = 64,
									     .height = 1,
									     .data = got,
									     .data_len = 64},
						 &call_, args_, &b_);
			if (gp_conn_send(c, GP_MSG_MEMCPY_DTOH, 0, id, &call_.base, NULL, 0) ||
			    gp_conn_recv(c, &fh) || fh.type != GP_MSG_DATA || fh.bulk_len != 64 ||
			    gp_conn_read(c, got, 64))
				die("MEMCPY_DTOH");
			if (gp_conn_recv(c, &fh) || fh.type != GP_MSG_REPLY)
				die("MEMCPY_DTOH reply");
			M_EXPECT("pushed bytes landed",
				 memcmp(got, data, 64) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS,
				 CUDA_SUCCESS);
		}
#undef PUSH
#undef M_EXPECT
		return bad;
	}
	if (strcmp(mode, "vmm") == 0) {
		const uint64_t g = 2ull << 20;
		struct gp_out_ctx_create cc;
		struct gp_out_mem_alloc ma;
		struct gp_out_vmm_create vc;
		struct gp_out_vmm_reserve vr;
		uint64_t ctx, dptr, h, va;
		int bad = 0;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		if (call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &ma) != CUDA_SUCCESS ||
		    call(vmm_create, (&(struct gp_in_vmm_create){.ctx = ctx, .bytes = g}), &vc) !=
			    CUDA_SUCCESS ||
		    call(vmm_reserve, (&(struct gp_in_vmm_reserve){.ctx = ctx, .bytes = 2 * g}),
			 &vr) != CUDA_SUCCESS)
			die("VMM setup");
		dptr = ma.dptr;
		h = vc.handle;
		va = vr.ptr;
#define VMM_EXPECT(what, r, want)               \
	do {                                    \
		CUresult got_ = (r);            \
		printf("%s: %d\n", what, got_); \
		bad |= got_ != (want);          \
	} while (0)
#define MAP(p, n, off, hd)                                                                    \
	call(vmm_map,                                                                         \
	     (&(struct gp_in_vmm_map){                                                        \
		     .ctx = ctx, .ptr = (p), .bytes = (n), .offset = (off), .handle = (hd)}), \
	     (struct gp_out_vmm_map *)NULL)
		VMM_EXPECT("map a context's id", MAP(va, g, 0, ctx), CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map a stale handle", MAP(va, g, 0, h ^ (1ull << 32)),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map over cuMemAlloc memory", MAP(dptr, g, 0, h),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map past the reservation", MAP(va + g, 2 * g, 0, h),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map a size that wraps", MAP(va + g, UINT64_MAX - g + 1, 0, h),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map an offset that wraps", MAP(va, g, UINT64_MAX - g + 1, h),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("set access, unmapped",
			   call(vmm_set_access,
				(&(struct gp_in_vmm_set_access){
					.ctx = ctx, .ptr = va, .bytes = g, .rw_devices = 1}),
				(struct gp_out_vmm_set_access *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("map", MAP(va, g, 0, h), CUDA_SUCCESS);
		VMM_EXPECT(
			"set access for device 63",
			call(vmm_set_access,
			     (&(struct gp_in_vmm_set_access){
				     .ctx = ctx, .ptr = va, .bytes = g, .rw_devices = 1ull << 63}),
			     (struct gp_out_vmm_set_access *)NULL),
			CUDA_ERROR_INVALID_DEVICE);
		VMM_EXPECT("set access both ways",
			   call(vmm_set_access,
				(&(struct gp_in_vmm_set_access){.ctx = ctx,
								.ptr = va,
								.bytes = g,
								.rw_devices = 1,
								.none_devices = 1}),
				(struct gp_out_vmm_set_access *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("unmap a size that wraps",
			   call(vmm_unmap,
				(&(struct gp_in_vmm_unmap){
					.ctx = ctx, .ptr = va, .bytes = UINT64_MAX - g + 1}),
				(struct gp_out_vmm_unmap *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("free cuMemAlloc memory as a reservation",
			   call(vmm_address_free,
				(&(struct gp_in_vmm_address_free){
					.ctx = ctx, .ptr = dptr, .bytes = g}),
				(struct gp_out_vmm_address_free *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("retain a foreign address",
			   call(vmm_retain,
				(&(struct gp_in_vmm_retain){.ctx = ctx, .addr = 0x10000}),
				(struct gp_out_vmm_retain *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT("release a context's id",
			   call(vmm_release,
				(&(struct gp_in_vmm_release){.ctx = ctx, .handle = ctx}),
				(struct gp_out_vmm_release *)NULL),
			   CUDA_ERROR_INVALID_VALUE);
		VMM_EXPECT(
			"access of device 5",
			call(vmm_get_access,
			     (&(struct gp_in_vmm_get_access){.ctx = ctx, .device = 5, .ptr = va}),
			     (struct gp_out_vmm_get_access *)NULL),
			CUDA_ERROR_INVALID_DEVICE);
		VMM_EXPECT(
			"reserve more than a session may",
			call(vmm_reserve,
			     (&(struct gp_in_vmm_reserve){.ctx = ctx, .bytes = (1ull << 40) + g}),
			     (struct gp_out_vmm_reserve *)NULL),
			CUDA_ERROR_OUT_OF_MEMORY);
		/* and the session still works */
		VMM_EXPECT("unmap",
			   call(vmm_unmap, (&(struct gp_in_vmm_unmap){ctx, va, g}),
				(struct gp_out_vmm_unmap *)NULL),
			   CUDA_SUCCESS);
#undef MAP
#undef VMM_EXPECT
		return bad;
	}
	if (strcmp(mode, "foreign") == 0) {
		struct gp_out_ctx_create cc;
		struct gp_out_mem_alloc ma;
		uint64_t ctx, dptr;
		CUresult r;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		/* a stale generation of the same slot */
		r = call(mem_alloc, (&(struct gp_in_mem_alloc){ctx ^ 0x100000000ull, 4096}),
			 (struct gp_out_mem_alloc *)NULL);
		printf("alloc on a forged context: %d\n", r);
		if (r != CUDA_ERROR_INVALID_CONTEXT)
			return 1;
		if (call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &ma) != CUDA_SUCCESS)
			die("MEM_ALLOC");
		dptr = ma.dptr;
		/* inside, but not the start of, an allocation */
		r = call(mem_free, (&(struct gp_in_mem_free){ctx, dptr + 8}),
			 (struct gp_out_mem_free *)NULL);
		printf("free of an inner pointer: %d\n", r);
		if (r != CUDA_ERROR_INVALID_VALUE)
			return 1;
		{
			static uint8_t buf[8192];
			struct {
				const char *what;
				uint64_t src, width, height, pitch;
			} reads[] = {
				{"read past an allocation", dptr + 4000, 200, 1, 0},
				{"read of a foreign address", 0x10000, 16, 1, 0},
				/* 4 rows of 1 KiB, 2 KiB apart, run past 4 KiB */
				{"2-D read past an allocation", dptr, 1024, 4, 2048},
				/* rows that wrap the address space */
				{"2-D read whose pitch wraps", dptr, 16, 3, UINT64_MAX / 2 + 1},
				{"read whose size wraps", dptr, UINT64_MAX / 2 + 2, 2, 0},
			};

			for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
				struct gp_in_memcpy_dtoh in = {.ctx = ctx,
							       .src = reads[i].src,
							       .width = reads[i].width,
							       .height = reads[i].height,
							       .pitch = reads[i].pitch,
							       .data = buf,
							       .data_len = sizeof(buf)};

				r = call(memcpy_dtoh, &in, (struct gp_out_memcpy_dtoh *)NULL);
				printf("%s: %d\n", reads[i].what, r);
				if (r != CUDA_ERROR_INVALID_VALUE)
					return 1;
			}
		}
		{
			/* A 2-D memset whose pitch wraps the range check around to row 1 landing
			 * on another allocation: must be refused, not written. */
			struct gp_out_mem_alloc b, big;
			struct gp_in_memset m = {
				.ctx = ctx, .value = 0x41, .esize = 1, .height = 2};

			if (call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &b) !=
				    CUDA_SUCCESS ||
			    call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 1 << 20}), &big) !=
				    CUDA_SUCCESS)
				die("MEM_ALLOC");
			m.dst = big.dptr;
			m.width = big.dptr > b.dptr ? big.dptr - b.dptr : b.dptr - big.dptr;
			m.pitch = b.dptr - big.dptr; /* wraps row 1 onto b */
			r = call(memset, &m, (struct gp_out_memset *)NULL);
			printf("2-D memset with a wrapping pitch: %d\n", r);
			if (r != CUDA_ERROR_INVALID_VALUE)
				return 1;
		}
		r = call(mem_free, (&(struct gp_in_mem_free){ctx, dptr}),
			 (struct gp_out_mem_free *)NULL);
		printf("free of its own allocation: %d\n", r);
		return r == CUDA_SUCCESS ? 0 : 1;
	}
	if (strcmp(mode, "pools") == 0) {
		struct gp_out_ctx_create cc;
		struct gp_out_pool_of_device def;
		struct gp_out_pool_create pc;
		struct gp_out_mem_alloc_async aa;
		uint32_t bad_dev[2] = {5, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
		uint64_t ctx;
		int fails = 0;
		CUresult r;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS ||
		    call(pool_of_device, (&(struct gp_in_pool_of_device){0, 0}), &def) !=
			    CUDA_SUCCESS ||
		    call(pool_create, (&(struct gp_in_pool_create){0, 0}), &pc) != CUDA_SUCCESS)
			die("setup");
		ctx = cc.ctx;
#define EXPECT_R(what, got, want)            \
	do {                                 \
		r = (got);                   \
		printf("%s: %d\n", what, r); \
		fails += r != (want);        \
	} while (0)
		EXPECT_R("destroy of a context id as a pool",
			 call(pool_destroy, (&(struct gp_in_pool_destroy){ctx}),
			      (struct gp_out_pool_destroy *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("destroy of a default pool",
			 call(pool_destroy, (&(struct gp_in_pool_destroy){def.pool}),
			      (struct gp_out_pool_destroy *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("an unknown attribute",
			 call(pool_get_attribute, (&(struct gp_in_pool_get_attribute){pc.pool, 99}),
			      (struct gp_out_pool_get_attribute *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("an allocation of 0 bytes",
			 call(mem_alloc_async, (&(struct gp_in_mem_alloc_async){ctx, 0, 0, 0}),
			      (struct gp_out_mem_alloc_async *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("an allocation from a context id as a pool",
			 call(mem_alloc_async, (&(struct gp_in_mem_alloc_async){ctx, 64, ctx, 0}),
			      (struct gp_out_mem_alloc_async *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("an access map of 7 bytes",
			 call(pool_set_access,
			      (&(struct gp_in_pool_set_access){pc.pool, bad_dev, 7}),
			      (struct gp_out_pool_set_access *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("access for a device the session does not have",
			 call(pool_set_access,
			      (&(struct gp_in_pool_set_access){pc.pool, bad_dev, 8}),
			      (struct gp_out_pool_set_access *)NULL),
			 CUDA_ERROR_INVALID_DEVICE);
		if (call(mem_alloc_async, (&(struct gp_in_mem_alloc_async){ctx, 4096, pc.pool, 0}),
			 &aa) != CUDA_SUCCESS)
			die("MEM_ALLOC_ASYNC");
		EXPECT_R("a free of an inner pointer",
			 call(mem_free_async, (&(struct gp_in_mem_free_async){ctx, aa.dptr + 8, 0}),
			      (struct gp_out_mem_free_async *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("a memset of a pool allocation",
			 call(memset,
			      (&(struct gp_in_memset){.ctx = ctx,
						      .dst = aa.dptr,
						      .esize = 1,
						      .width = 4096,
						      .height = 1}),
			      (struct gp_out_memset *)NULL),
			 CUDA_SUCCESS);
		EXPECT_R("its free",
			 call(mem_free_async, (&(struct gp_in_mem_free_async){ctx, aa.dptr, 0}),
			      (struct gp_out_mem_free_async *)NULL),
			 CUDA_SUCCESS);
		EXPECT_R("a memset of it once freed",
			 call(memset,
			      (&(struct gp_in_memset){.ctx = ctx,
						      .dst = aa.dptr,
						      .esize = 1,
						      .width = 16,
						      .height = 1}),
			      (struct gp_out_memset *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("a second free",
			 call(mem_free_async, (&(struct gp_in_mem_free_async){ctx, aa.dptr, 0}),
			      (struct gp_out_mem_free_async *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("destroy of its pool",
			 call(pool_destroy, (&(struct gp_in_pool_destroy){pc.pool}),
			      (struct gp_out_pool_destroy *)NULL),
			 CUDA_SUCCESS);
		EXPECT_R("a trim of the destroyed pool",
			 call(pool_trim, (&(struct gp_in_pool_trim){pc.pool, 0}),
			      (struct gp_out_pool_trim *)NULL),
			 CUDA_ERROR_INVALID_VALUE);
		EXPECT_R("the default pool made current again",
			 call(pool_set_current, (&(struct gp_in_pool_set_current){0, def.pool}),
			      (struct gp_out_pool_set_current *)NULL),
			 CUDA_SUCCESS);
#undef EXPECT_R
		return fails ? 1 : 0;
	}
	if (strcmp(mode, "image") == 0) {
		static const char ptx[] = ".version 7.0\n.target sm_75\n.address_size 64\n";
		struct gp_out_ctx_create cc;
		uint64_t ctx;
		uint8_t img[80] = {0};
		uint32_t u32;
		uint64_t u64;
		CUresult r;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		/* a cudart wrapper: its fatbin pointer means nothing in the worker */
		u32 = 0x466243B1u;
		memcpy(img, &u32, 4);
		u64 = 0x1000;
		memcpy(img + 8, &u64, 8);
		r = module_load(ctx, img, 24);
		printf("a wrapper image: %d\n", r);
		if (r != CUDA_ERROR_INVALID_IMAGE)
			return 1;
		/* a fatbin whose header claims a megabyte after the 80 bytes sent */
		memset(img, 0, sizeof(img));
		u32 = 0xBA55ED50u;
		memcpy(img, &u32, 4);
		img[4] = 1;
		img[6] = 16;
		u64 = 1 << 20;
		memcpy(img + 8, &u64, 8);
		img[16] = 1; /* a PTX entry, 64-byte header, whose payload runs on */
		img[20] = 64;
		u64 -= 64;
		memcpy(img + 24, &u64, 8);
		r = module_load(ctx, img, sizeof(img));
		printf("a fatbin larger than sent: %d\n", r);
		if (r != CUDA_ERROR_INVALID_IMAGE)
			return 1;
		r = module_load(ctx, ptx, sizeof(ptx) - 1);
		printf("then PTX text: %d\n", r);
		return r == CUDA_SUCCESS ? 0 : 1;
	}
	if (strcmp(mode, "contexts") == 0) {
		struct gp_out_primary_retain pr;
		struct gp_out_ctx_create cc;
		char line[64];
		CUresult r;
		int n = 0;

		if (call(primary_retain, (&(struct gp_in_primary_retain){0}), &pr) != CUDA_SUCCESS)
			die("PRIMARY_RETAIN");
		while ((r = call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc)) ==
			       CUDA_SUCCESS &&
		       n < 1000)
			n++;
		printf("%d contexts, then %d\nheld\n", n, r);
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			;
		return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
	}
	if (strcmp(mode, "hold") == 0) {
		struct gp_out_ctx_create cc;
		char line[64];

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		printf("held\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			;
		return 0;
	}
	if (strcmp(mode, "handles") == 0) {
		struct gp_out_ctx_create cc;
		struct gp_out_event_create ev;
		char ptx[512];
		uint64_t ctx;
		CUresult r;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		/* The worker's table doubles from 64 slots: with 4096 handles (the context and
		 * 4095 events) the module's own handle is the one that moves the table. */
		for (int i = 0; i < 4095; i++)
			if (call(event_create, (&(struct gp_in_event_create){ctx, 0}), &ev) !=
			    CUDA_SUCCESS)
				die("EVENT_CREATE");
		r = module_load(ctx, ptx, module_with(16ull << 20, ptx, sizeof(ptx)));
		printf("4096 handles, then a module with 16 MiB of globals: %d\n", r);
		if (r != CUDA_SUCCESS)
			return 1;
		/* Its module and function make 4098: 4094 more events fill 8192 slots. */
		for (int i = 0; i < 4094; i++)
			if (call(event_create, (&(struct gp_in_event_create){ctx, 0}), &ev) !=
			    CUDA_SUCCESS)
				die("EVENT_CREATE");
		r = module_load(ctx, ptx, module_with(60ull << 20, ptx, sizeof(ptx)));
		printf("8192 handles, then a module with 60 MiB more: %d\n", r);
		return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
	}
	if (strcmp(mode, "caps") == 0) {
		/* Run under max_streams 8, max_events 8, max_modules 2: each past its cap is
		 * CUDA_ERROR_OUT_OF_MEMORY, a freed one makes room, and the session goes on. */
		struct gp_out_ctx_create cc;
		struct gp_out_stream_create sc;
		struct gp_out_event_create ev;
		struct gp_out_mem_alloc ma;
		char ptx[512];
		size_t plen = module_with(64, ptx, sizeof(ptx));
		uint64_t ctx, last = 0;
		CUresult r;
		int n;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		for (n = 0; n < 1000; n++) {
			r = call(stream_create, (&(struct gp_in_stream_create){ctx, 0, 0}), &sc);
			if (r != CUDA_SUCCESS)
				break;
			last = sc.stream;
		}
		printf("%d streams, then %d\n", n, r);
		if (r != CUDA_ERROR_OUT_OF_MEMORY ||
		    call(stream_destroy, (&(struct gp_in_stream_destroy){ctx, last}),
			 (struct gp_out_stream_destroy *)NULL) != CUDA_SUCCESS ||
		    call(stream_create, (&(struct gp_in_stream_create){ctx, 0, 0}), &sc) !=
			    CUDA_SUCCESS)
			return 1;
		for (n = 0; n < 1000; n++)
			if ((r = call(event_create, (&(struct gp_in_event_create){ctx, 0}), &ev)) !=
			    CUDA_SUCCESS)
				break;
		printf("%d events, then %d\n", n, r);
		if (r != CUDA_ERROR_OUT_OF_MEMORY)
			return 1;
		for (n = 0; n < 1000; n++)
			if ((r = module_load(ctx, ptx, plen)) != CUDA_SUCCESS)
				break;
		printf("%d modules, then %d\n", n, r);
		if (r != CUDA_ERROR_OUT_OF_MEMORY)
			return 1;
		r = call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &ma);
		printf("then an allocation: %d\n", r);
		return r == CUDA_SUCCESS ? 0 : 1;
	}
	if (strcmp(mode, "bomb") == 0) {
		/* A fatbin whose PTX entry is 96 KiB of zstd that unpacks to 3 GiB, and says
		 * so: refused as an invalid image without unpacking it; the session goes on. */
		enum { NBLOCKS = 3 * 8192, HS = 80 };
		size_t flen = 6 + 4 * (size_t)NBLOCKS, padded = (flen + 7) & ~(size_t)7;
		uint8_t *img = calloc(1, 16 + HS + padded);
		uint64_t total = HS + padded, claim = (uint64_t)NBLOCKS * ZSTD_BOMB_BLOCK;
		uint64_t flags = 0x11 | GP_FATBIN_FLAG_ZSTD, padded64 = padded;
		uint32_t magic = GP_FATBIN_MAGIC, hs = HS, stored = (uint32_t)flen, sm = 75;
		uint16_t version = 1, fhs = 16, kind = 1;
		struct gp_out_ctx_create cc;
		char ptx[512];
		CUresult r;

		if (!img)
			die("calloc");
		memcpy(img, &magic, 4);
		memcpy(img + 4, &version, 2);
		memcpy(img + 6, &fhs, 2);
		memcpy(img + 8, &total, 8);
		memcpy(img + 16, &kind, 2);
		memcpy(img + 16 + 4, &hs, 4);
		memcpy(img + 16 + 8, &padded64, 8);
		memcpy(img + 16 + 16, &stored, 4);
		memcpy(img + 16 + 28, &sm, 4);
		memcpy(img + 16 + 40, &flags, 8);
		memcpy(img + 16 + 56, &claim, 8);
		zstd_bomb(img + 16 + HS, NBLOCKS, 'x');
		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		r = module_load(cc.ctx, img, 16 + HS + padded);
		free(img);
		printf("a fatbin of %zu bytes claiming 3 GiB of PTX: %d\n", 16 + HS + padded, r);
		if (r != CUDA_ERROR_INVALID_IMAGE)
			return 1;
		r = module_load(cc.ctx, ptx, module_with(64, ptx, sizeof(ptx)));
		printf("then PTX text: %d\n", r);
		return r == CUDA_SUCCESS ? 0 : 1;
	}
	if (strcmp(mode, "arrays") == 0) {
		struct gp_out_ctx_create cc;
		struct gp_out_mem_alloc ma;
		struct gp_out_array_create ac;
		struct gp_out_tex_create tc;
		static uint8_t bytes[8192];
		uint64_t ctx, dptr, arr, stale;
		int bad = 0;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		ctx = cc.ctx;
		if (call(mem_alloc, (&(struct gp_in_mem_alloc){ctx, 4096}), &ma) != CUDA_SUCCESS)
			die("MEM_ALLOC");
		dptr = ma.dptr;
#define ARR_EXPECT(what, r, want)               \
	do {                                    \
		CUresult got_ = (r);            \
		printf("%s: %d\n", what, got_); \
		bad |= got_ != (want);          \
	} while (0)
#define CREATE(w, h, d, fmt, ch, three)                          \
	call(array_create,                                       \
	     (&(struct gp_in_array_create){.ctx = ctx,           \
					   .width = (w),         \
					   .height = (h),        \
					   .depth = (d),         \
					   .format = (fmt),      \
					   .channels = (ch),     \
					   .three_d = (three)}), \
	     &ac)
		/* 64 floats by 16 rows: rows of 256 bytes */
		ARR_EXPECT("create 64x16 float", CREATE(64, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0),
			   CUDA_SUCCESS);
		arr = ac.array;
		ARR_EXPECT("create and destroy another", CREATE(8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0),
			   CUDA_SUCCESS);
		stale = ac.array;
		ARR_EXPECT("destroy it",
			   call(array_destroy, (&(struct gp_in_array_destroy){ctx, stale}),
				(struct gp_out_array_destroy *)NULL),
			   CUDA_SUCCESS);
		ARR_EXPECT("an array whose size overflows",
			   CREATE(1u << 24, 1u << 24, 1u << 24, CU_AD_FORMAT_FLOAT, 4, 1),
			   CUDA_ERROR_OUT_OF_MEMORY);
		ARR_EXPECT("an array wider than any",
			   CREATE(1ull << 40, 1, 0, CU_AD_FORMAT_FLOAT, 1, 0),
			   CUDA_ERROR_INVALID_VALUE);
		ARR_EXPECT("three channels", CREATE(8, 8, 0, CU_AD_FORMAT_FLOAT, 3, 0),
			   CUDA_ERROR_INVALID_VALUE);
		ARR_EXPECT("a sparse array",
			   call(array_create,
				(&(struct gp_in_array_create){.ctx = ctx,
							      .width = 64,
							      .height = 64,
							      .format = CU_AD_FORMAT_FLOAT,
							      .channels = 1,
							      .flags = CUDA_ARRAY3D_SPARSE,
							      .three_d = 1}),
				&ac),
			   CUDA_ERROR_NOT_SUPPORTED);
		ARR_EXPECT("destroy a stale array",
			   call(array_destroy, (&(struct gp_in_array_destroy){ctx, stale}),
				(struct gp_out_array_destroy *)NULL),
			   CUDA_ERROR_INVALID_HANDLE);
		ARR_EXPECT("destroy a context's id as an array",
			   call(array_destroy, (&(struct gp_in_array_destroy){ctx, ctx}),
				(struct gp_out_array_destroy *)NULL),
			   CUDA_ERROR_INVALID_HANDLE);
		ARR_EXPECT("describe a forged array",
			   call(array_descriptor,
				(&(struct gp_in_array_descriptor){ctx, arr ^ (1ull << 32), 1}),
				(struct gp_out_array_descriptor *)NULL),
			   CUDA_ERROR_INVALID_HANDLE);
		{
			const struct gp_copy_side host = {.kind = GP_SIDE_HOST};
			const struct gp_copy_side to_arr = {.kind = GP_SIDE_ARRAY, .addr = arr};
			const struct gp_copy_side dev = {.kind = GP_SIDE_DEVICE, .addr = dptr};
			struct {
				const char *what;
				struct gp_copy3d d;
				uint64_t data; /* bytes sent (COPY_IN), or ~0: a device copy */
				CUresult want;
			} cases[] = {
				{"host bytes fewer than the box",
				 {host, to_arr, 256, 16, 1, 0, 0},
				 100,
				 CUDA_ERROR_INVALID_VALUE},
				{"host bytes more than the box",
				 {host, to_arr, 256, 1, 1, 0, 0},
				 300,
				 CUDA_ERROR_INVALID_VALUE},
				{"rows past the array",
				 {host, to_arr, 256, 17, 1, 0, 0},
				 256 * 17,
				 CUDA_ERROR_INVALID_VALUE},
				{"a slice past the array",
				 {host, to_arr, 256, 16, 2, 0, 0},
				 8192,
				 CUDA_ERROR_INVALID_VALUE},
				{"x past the array",
				 {host,
				  {.kind = GP_SIDE_ARRAY, .addr = arr, .x = 4},
				  256,
				  1,
				  1,
				  0,
				  0},
				 256,
				 CUDA_ERROR_INVALID_VALUE},
				{"y that wraps",
				 {host,
				  {.kind = GP_SIDE_ARRAY, .addr = arr, .y = UINT64_MAX},
				  256,
				  2,
				  1,
				  0,
				  0},
				 512,
				 CUDA_ERROR_INVALID_VALUE},
				{"a stale array",
				 {host, {.kind = GP_SIDE_ARRAY, .addr = stale}, 32, 1, 1, 0, 0},
				 32,
				 CUDA_ERROR_INVALID_HANDLE},
				{"a forged array",
				 {host, {.kind = GP_SIDE_ARRAY, .addr = arr + 1}, 32, 1, 1, 0, 0},
				 32,
				 CUDA_ERROR_INVALID_HANDLE},
				{"a host side on both ends",
				 {host, host, 32, 1, 1, 0, 0},
				 32,
				 CUDA_ERROR_INVALID_VALUE},
				{"an unknown side",
				 {host, {.kind = 7, .addr = dptr}, 32, 1, 1, 0, 0},
				 32,
				 CUDA_ERROR_INVALID_VALUE},
				{"device rows past the allocation",
				 {dev, to_arr, 256, 17, 1, 0, 0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"a device pitch that wraps",
				 {{.kind = GP_SIDE_DEVICE, .addr = dptr, .pitch = 1ull << 63},
				  to_arr,
				  256,
				  3,
				  1,
				  0,
				  0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"device slices that wrap",
				 {{.kind = GP_SIDE_DEVICE,
				   .addr = dptr,
				   .pitch = 256,
				   .height = (UINT64_MAX >> 8) + 2},
				  dev,
				  16,
				  1,
				  2,
				  0,
				  0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"a device pitch below the width",
				 {{.kind = GP_SIDE_DEVICE, .addr = dptr, .pitch = 16},
				  to_arr,
				  32,
				  2,
				  1,
				  0,
				  0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"device memory not the session's",
				 {{.kind = GP_SIDE_DEVICE, .addr = 0x10000},
				  to_arr,
				  256,
				  1,
				  1,
				  0,
				  0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"an empty box",
				 {dev, to_arr, 0, 1, 1, 0, 0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"unknown copy flags",
				 {dev, to_arr, 32, 1, 1, 0x80, 0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"linear bytes past the array's",
				 {host,
				  {.kind = GP_SIDE_ARRAY, .addr = arr, .x = 4000},
				  200,
				  1,
				  1,
				  GP_COPY_LINEAR,
				  0},
				 200,
				 CUDA_ERROR_INVALID_VALUE},
				{"a linear copy of two rows",
				 {host, to_arr, 32, 2, 1, GP_COPY_LINEAR, 0},
				 64,
				 CUDA_ERROR_INVALID_VALUE},
				{"a linear device side with an offset",
				 {{.kind = GP_SIDE_DEVICE, .addr = dptr, .x = 8},
				  to_arr,
				  4096,
				  1,
				  1,
				  GP_COPY_LINEAR,
				  0},
				 ~0ull,
				 CUDA_ERROR_INVALID_VALUE},
				{"all of its memory into all of its array, linearly",
				 {dev, to_arr, 4096, 1, 1, GP_COPY_LINEAR, 0},
				 ~0ull,
				 CUDA_SUCCESS},
			};

			for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
				CUresult r;

				if (cases[k].data == ~0ull)
					r = call(array_copy,
						 (&(struct gp_in_array_copy){
							 .ctx = ctx,
							 .desc = &cases[k].d,
							 .desc_len = sizeof(cases[k].d)}),
						 (struct gp_out_array_copy *)NULL);
				else
					r = call(array_copy_in,
						 (&(struct gp_in_array_copy_in){
							 .ctx = ctx,
							 .desc = &cases[k].d,
							 .desc_len = sizeof(cases[k].d),
							 .data = bytes,
							 .data_len = cases[k].data}),
						 (struct gp_out_array_copy_in *)NULL);
				ARR_EXPECT(cases[k].what, r, cases[k].want);
			}
			{
				struct gp_copy3d out = {to_arr, host, 256, 16, 1, 0, 0};

				out.src = to_arr;
				out.dst = host;
				ARR_EXPECT("bytes out fewer than the box",
					   call(array_copy_out,
						(&(struct gp_in_array_copy_out){.ctx = ctx,
										.desc = &out,
										.desc_len =
											sizeof(out),
										.data = bytes,
										.data_len = 10}),
						(struct gp_out_array_copy_out *)NULL),
					   CUDA_ERROR_INVALID_VALUE);
				ARR_EXPECT("a description of the wrong size",
					   call(array_copy_out,
						(&(struct gp_in_array_copy_out){
							.ctx = ctx,
							.desc = &out,
							.desc_len = sizeof(out) - 8,
							.data = bytes,
							.data_len = 4096}),
						(struct gp_out_array_copy_out *)NULL),
					   CUDA_ERROR_INVALID_VALUE);
			}
			/* the session goes on: its own device memory into its own array */
			{
				struct gp_copy3d ok = {dev, to_arr, 256, 16, 1, 0, 0};

				ARR_EXPECT(
					"device to array",
					call(array_copy,
					     (&(struct gp_in_array_copy){.ctx = ctx,
									 .desc = &ok,
									 .desc_len = sizeof(ok)}),
					     (struct gp_out_array_copy *)NULL),
					CUDA_SUCCESS);
			}
		}
		{
			struct gp_tex_desc td;
			struct {
				const char *what;
				struct gp_res_desc res;
				CUresult want;
			} cases[] = {
				{"a texture over memory not the session's",
				 {.type = CU_RESOURCE_TYPE_LINEAR,
				  .format = CU_AD_FORMAT_FLOAT,
				  .channels = 1,
				  .dptr = 0x10000,
				  .bytes = 4096},
				 CUDA_ERROR_INVALID_VALUE},
				{"a linear texture past its allocation",
				 {.type = CU_RESOURCE_TYPE_LINEAR,
				  .format = CU_AD_FORMAT_FLOAT,
				  .channels = 1,
				  .dptr = dptr,
				  .bytes = 8192},
				 CUDA_ERROR_INVALID_VALUE},
				{"a pitched texture past its allocation",
				 {.type = CU_RESOURCE_TYPE_PITCH2D,
				  .format = CU_AD_FORMAT_FLOAT,
				  .channels = 1,
				  .dptr = dptr,
				  .width = 64,
				  .height = 17,
				  .pitch = 256},
				 CUDA_ERROR_INVALID_VALUE},
				{"a pitched texture whose rows wrap",
				 {.type = CU_RESOURCE_TYPE_PITCH2D,
				  .format = CU_AD_FORMAT_FLOAT,
				  .channels = 1,
				  .dptr = dptr,
				  .width = 64,
				  .height = 3,
				  .pitch = 1ull << 63},
				 CUDA_ERROR_INVALID_VALUE},
				{"a texture of a stale array",
				 {.type = CU_RESOURCE_TYPE_ARRAY, .handle = stale},
				 CUDA_ERROR_INVALID_HANDLE},
				{"a texture of a context's id as an array",
				 {.type = CU_RESOURCE_TYPE_ARRAY, .handle = ctx},
				 CUDA_ERROR_INVALID_HANDLE},
				{"resource flags",
				 {.type = CU_RESOURCE_TYPE_ARRAY, .handle = arr, .flags = 1},
				 CUDA_ERROR_INVALID_VALUE},
			};

			for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
				memset(&td, 0, sizeof(td));
				td.res = cases[k].res;
				ARR_EXPECT(
					cases[k].what,
					call(tex_create,
					     (&(struct gp_in_tex_create){.ctx = ctx,
									 .desc = &td,
									 .desc_len = sizeof(td)}),
					     (struct gp_out_tex_create *)NULL),
					cases[k].want);
			}
			ARR_EXPECT("destroy a texture never made",
				   call(tex_destroy, (&(struct gp_in_tex_destroy){ctx, 0xdeadbeef}),
					(struct gp_out_tex_destroy *)NULL),
				   CUDA_ERROR_INVALID_VALUE);
			ARR_EXPECT("destroy a surface never made",
				   call(surf_destroy, (&(struct gp_in_surf_destroy){ctx, 1}),
					(struct gp_out_surf_destroy *)NULL),
				   CUDA_ERROR_INVALID_VALUE);
			ARR_EXPECT("a surface of a stale array",
				   call(surf_create, (&(struct gp_in_surf_create){ctx, stale}),
					(struct gp_out_surf_create *)NULL),
				   CUDA_ERROR_INVALID_HANDLE);
			/* a texture of its own, destroyed once */
			memset(&td, 0, sizeof(td));
			td.res =
				(struct gp_res_desc){.type = CU_RESOURCE_TYPE_ARRAY, .handle = arr};
			ARR_EXPECT("a texture of its array",
				   call(tex_create,
					(&(struct gp_in_tex_create){
						.ctx = ctx, .desc = &td, .desc_len = sizeof(td)}),
					&tc),
				   CUDA_SUCCESS);
			ARR_EXPECT("destroy a value next to it",
				   call(tex_destroy, (&(struct gp_in_tex_destroy){ctx, tc.obj + 1}),
					(struct gp_out_tex_destroy *)NULL),
				   CUDA_ERROR_INVALID_VALUE);
			ARR_EXPECT("destroy it",
				   call(tex_destroy, (&(struct gp_in_tex_destroy){ctx, tc.obj}),
					(struct gp_out_tex_destroy *)NULL),
				   CUDA_SUCCESS);
			ARR_EXPECT("destroy it again",
				   call(tex_destroy, (&(struct gp_in_tex_destroy){ctx, tc.obj}),
					(struct gp_out_tex_destroy *)NULL),
				   CUDA_ERROR_INVALID_VALUE);
		}
		{
			struct gp_out_mipmap_create mc;
			struct gp_out_mipmap_level ml;
			struct gp_tex_desc td;
			uint64_t mm, lvl;

			ARR_EXPECT("a mipmapped array of no levels",
				   call(mipmap_create,
					(&(struct gp_in_mipmap_create){.ctx = ctx,
								       .width = 16,
								       .height = 16,
								       .format = CU_AD_FORMAT_FLOAT,
								       .channels = 1}),
					&mc),
				   CUDA_ERROR_INVALID_VALUE);
			ARR_EXPECT("a mipmapped array",
				   call(mipmap_create,
					(&(struct gp_in_mipmap_create){.ctx = ctx,
								       .width = 16,
								       .height = 16,
								       .format = CU_AD_FORMAT_FLOAT,
								       .channels = 1,
								       .levels = 3}),
					&mc),
				   CUDA_SUCCESS);
			mm = mc.mipmap;
			ARR_EXPECT(
				"its level 1",
				call(mipmap_level, (&(struct gp_in_mipmap_level){ctx, mm, 1}), &ml),
				CUDA_SUCCESS);
			lvl = ml.array;
			ARR_EXPECT("a level of an array's id",
				   call(mipmap_level, (&(struct gp_in_mipmap_level){ctx, arr, 1}),
					(struct gp_out_mipmap_level *)NULL),
				   CUDA_ERROR_INVALID_HANDLE);
			ARR_EXPECT("a level destroyed as an array",
				   call(array_destroy, (&(struct gp_in_array_destroy){ctx, lvl}),
					(struct gp_out_array_destroy *)NULL),
				   CUDA_ERROR_INVALID_VALUE);
			memset(&td, 0, sizeof(td));
			td.res = (struct gp_res_desc){.type = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY,
						      .handle = arr};
			ARR_EXPECT("a mipmapped texture of a plain array",
				   call(tex_create,
					(&(struct gp_in_tex_create){
						.ctx = ctx, .desc = &td, .desc_len = sizeof(td)}),
					(struct gp_out_tex_create *)NULL),
				   CUDA_ERROR_INVALID_HANDLE);
			ARR_EXPECT("destroy the mipmapped array",
				   call(mipmap_destroy, (&(struct gp_in_mipmap_destroy){ctx, mm}),
					(struct gp_out_mipmap_destroy *)NULL),
				   CUDA_SUCCESS);
			ARR_EXPECT("its level, once it is gone",
				   call(array_descriptor,
					(&(struct gp_in_array_descriptor){ctx, lvl, 1}),
					(struct gp_out_array_descriptor *)NULL),
				   CUDA_ERROR_INVALID_HANDLE);
			ARR_EXPECT("destroy it again",
				   call(mipmap_destroy, (&(struct gp_in_mipmap_destroy){ctx, mm}),
					(struct gp_out_mipmap_destroy *)NULL),
				   CUDA_ERROR_INVALID_HANDLE);
		}
		if (getenv("RAW_MEMORY")) {
			/* a cubemap keeps its 6 faces at every level: 4096 x 4096 floats, 2 levels
			 * are 384 + 96 MiB, past a 456 MiB session (with 3 faces at level 1 it
			 * would fit beside the context's charges: 432 MiB) */
			struct gp_in_mipmap_create mi = {.ctx = ctx,
							 .width = 4096,
							 .height = 4096,
							 .depth = 6,
							 .format = CU_AD_FORMAT_FLOAT,
							 .channels = 1,
							 .flags = CUDA_ARRAY3D_LAYERED,
							 .levels = 2};

			ARR_EXPECT("6 layers of 2 levels, past the limit",
				   call(mipmap_create, &mi, (struct gp_out_mipmap_create *)NULL),
				   CUDA_ERROR_OUT_OF_MEMORY);
			mi.flags = CUDA_ARRAY3D_CUBEMAP;
			ARR_EXPECT("a cubemap of 2 levels, past the limit",
				   call(mipmap_create, &mi, (struct gp_out_mipmap_create *)NULL),
				   CUDA_ERROR_OUT_OF_MEMORY);
		}
		if (getenv("RAW_ARRAY_OBJECTS")) {
			/* texture objects until the bound: 65536, then OUT_OF_MEMORY */
			struct gp_tex_desc td = {
				.res = {.type = CU_RESOURCE_TYPE_ARRAY, .handle = arr}};
			unsigned made = 0;
			uint64_t last = 0;
			CUresult r;

			while ((r = call(tex_create,
					 (&(struct gp_in_tex_create){
						 .ctx = ctx, .desc = &td, .desc_len = sizeof(td)}),
					 &tc)) == CUDA_SUCCESS &&
			       made < 70000) {
				last = tc.obj;
				made++;
			}
			printf("texture objects made: %u, then %d\n", made, r);
			bad |= made != 65536 || r != CUDA_ERROR_OUT_OF_MEMORY;
			ARR_EXPECT("destroy one",
				   call(tex_destroy, (&(struct gp_in_tex_destroy){ctx, last}),
					(struct gp_out_tex_destroy *)NULL),
				   CUDA_SUCCESS);
			ARR_EXPECT("a texture in its place",
				   call(tex_create,
					(&(struct gp_in_tex_create){
						.ctx = ctx, .desc = &td, .desc_len = sizeof(td)}),
					&tc),
				   CUDA_SUCCESS);
		}
		ARR_EXPECT("destroy the array",
			   call(array_destroy, (&(struct gp_in_array_destroy){ctx, arr}),
				(struct gp_out_array_destroy *)NULL),
			   CUDA_SUCCESS);
#undef CREATE
#undef ARR_EXPECT
		return bad;
	}
	if (strcmp(mode, "launch-ex") == 0) {
		static char ptx[512];
		struct gp_out_ctx_create cc;
		struct gp_out_mem_alloc ma;
		uint64_t fn, param = 0;
		CUresult r;

		if (call(ctx_create, (&(struct gp_in_ctx_create){0}), &cc) != CUDA_SUCCESS)
			die("CTX_CREATE");
		if (call(mem_alloc, (&(struct gp_in_mem_alloc){cc.ctx, 4096}), &ma) != CUDA_SUCCESS)
			die("MEM_ALLOC");
		if (module_load_fn(cc.ctx, ptx, module_with(64, ptx, sizeof(ptx)), &fn))
			die("MODULE_LOAD");
		struct {
			const char *what;
			uint32_t grid, attrs, cluster;
			uint64_t base, bytes;
			size_t params_len;
			CUresult want;
		} cases[] = {
			{"an unknown attribute", 1, 0x100, 0, 0, 0, 8, CUDA_ERROR_INVALID_VALUE},
			{"a window over foreign memory", 1, GP_LA_ACCESS_WINDOW, 0, 0x10000, 4096,
			 8, CUDA_ERROR_INVALID_VALUE},
			{"a window past its allocation", 1, GP_LA_ACCESS_WINDOW, 0, ma.dptr, 8192,
			 8, CUDA_ERROR_INVALID_VALUE},
			{"a window over its own memory", 1, GP_LA_ACCESS_WINDOW, 0, ma.dptr, 4096,
			 8, CUDA_SUCCESS},
			{"a cooperative grid too large", 1u << 20, GP_LA_COOPERATIVE, 0, 0, 0, 8,
			 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE},
			{"a cooperative grid that fits", 2, GP_LA_COOPERATIVE, 0, 0, 0, 8,
			 CUDA_SUCCESS},
			{"clusters on softgpu", 2, GP_LA_CLUSTER_DIM, 2, 0, 0, 8,
			 CUDA_ERROR_NOT_SUPPORTED},
			{"parameters too short", 1, GP_LA_PRIORITY, 0, 0, 0, 4,
			 CUDA_ERROR_INVALID_VALUE},
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct gp_in_launch_ex in = {
				.ctx = cc.ctx,
				.func = fn,
				.grid_x = cases[i].grid,
				.grid_y = 1,
				.grid_z = 1,
				.block_x = 32,
				.block_y = 1,
				.block_z = 1,
				.attrs = cases[i].attrs,
				.cooperative = 1,
				.cluster_x = cases[i].cluster ? cases[i].cluster : 1,
				.cluster_y = 1,
				.cluster_z = 1,
				.window_base = cases[i].base,
				.window_bytes = cases[i].bytes,
				.params = (const uint8_t *)&param,
				.params_len = cases[i].params_len};

			r = call(launch_ex, &in, (struct gp_out_launch_ex *)NULL);
			printf("%s: %d\n", cases[i].what, r);
			if (r != cases[i].want)
				return 1;
		}
		{
			static uint8_t map[GP_TENSOR_MAP_BYTES];
			/* 32 x 32 floats, rows 128 bytes apart: 4 KiB */
			struct gp_tensor_desc d = {.dim = {32, 32},
						   .stride = {128},
						   .data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
						   .rank = 2,
						   .box = {8, 8},
						   .elem_stride = {1, 1}};
			struct gp_tensor_desc tall = d, huge = d, bad = d;
			struct {
				const char *what;
				uint64_t global;
				const struct gp_tensor_desc *d;
				size_t len;
				CUresult want;
			} maps[] = {
				{"a tensor map description of the wrong size", ma.dptr, &d, 8,
				 CUDA_ERROR_INVALID_VALUE},
				{"a tensor map of foreign memory", 0x10000, &d, sizeof(d),
				 CUDA_ERROR_INVALID_VALUE},
				{"a tensor map past its allocation", ma.dptr, &tall, sizeof(d),
				 CUDA_ERROR_INVALID_VALUE},
				{"a tensor map whose extent wraps", ma.dptr, &huge, sizeof(d),
				 CUDA_ERROR_INVALID_VALUE},
				{"a tensor map of rank 0", ma.dptr, &bad, sizeof(d),
				 CUDA_ERROR_INVALID_VALUE},
				{"a tensor map of its own memory on softgpu", ma.dptr, &d,
				 sizeof(d), CUDA_ERROR_NOT_SUPPORTED},
			};

			tall.dim[1] = 33;
			huge.rank = 3;
			huge.dim[2] = 1ull << 32;
			huge.stride[1] = (1ull << 40) - 1;
			bad.rank = 0;
			for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
				struct gp_in_tensor_map_encode in = {
					.ctx = cc.ctx,
					.global = maps[i].global,
					.desc = (const uint8_t *)maps[i].d,
					.desc_len = maps[i].len,
					.map = map,
					.map_len = sizeof(map)};

				r = call(tensor_map_encode, &in,
					 (struct gp_out_tensor_map_encode *)NULL);
				printf("%s: %d\n", maps[i].what, r);
				if (r != maps[i].want)
					return 1;
			}
		}
		r = call(ctx_synchronize, (&(struct gp_in_ctx_synchronize){cc.ctx}),
			 (struct gp_out_ctx_synchronize *)NULL);
		printf("then the context synchronizes: %d\n", r);
		return r == CUDA_SUCCESS ? 0 : 1;
	}
	fprintf(stderr, "usage: raw_client version|old-version|garbage|oversize|type|foreign|pools|"
			"vmm|image|handles|contexts|caps|bomb|hold|launch-ex\n");
	return 2;
}
