/* fuzz_dispatch.c -- the worker's call dispatch, with softgpu behind it.
 *
 * The worker's files (daemon/worker/ but worker.c, whose main and handshake are not
 * reached) are compiled in; softgpu's libcuda is dlopen'd as the daemon does. One input is a
 * session: a client thread turns the input into calls and writes them on one end of a
 * socketpair, the worker's request loop (serve() of worker.c, reproduced below) reads the
 * other end and runs gp__worker_dispatch on each, and a reader thread takes every frame the
 * worker sends and checks it. The input, one op after another:
 *
 *	op     a call number of <gpupool/calls.h> (any other byte: the call at byte % calls;
 *	       0xff: a raw frame, below, which ends the ops)
 *	flags  bit 0: sent without waiting (GP_F_NO_REPLY), where the call allows it; bit 1:
 *	       a MODLIB argument takes a library rather than a module
 *	then per argument, in the call's order:
 *	  scalar   a value (value(): its first byte says how it is made)
 *	  NAME     byte b: below 0x80 one of symbols[]; else b & 0x7f bytes of text
 *	  BLOB     byte b: 0xfe: a length byte (times 256, at most GP_BLOB_MAX + 8) and a fill
 *	           byte; else with 0x80 set, b & 0x7f bytes (0x7f: and twice the next byte
 *	           more); else b % 9 values of 8 bytes, the last (b >> 4) & 7 bytes cut off
 *	  BULK_IN  byte b: an image: b & 3 below 3 the PTX (b >> 2) % 4, else a length byte and
 *	           that many bytes; other bulk: b & 0x80 width * height bytes, else a value's
 *	           worth (at most 1 MiB), each byte b
 *	  BULK_OUT a value
 *	raw    type (2 bytes), flags (bit 0), length, body: a well-formed frame of any type
 *
 * Values come from small literals, 64-bit literals, or what earlier replies answered
 * (handles, device pointers), by kind: a CTX argument takes a context the session made.
 * Module images are the PTX texts of corpus/ptx (no kernel there loops), or input bytes.
 * Launch dimensions are kept small, so a launch ends in milliseconds.
 *
 * What must hold: no crash or sanitizer report; every call sent waiting gets exactly one
 * Reply (answering its request id, its outs as many as the call has on success and none
 * on failure), unless the session ended with a protocol error there; a call sent without
 * waiting gets none; bulk a call brings back (DATA) is never more than its BULK_OUT
 * argument asked, and all of it on success; a deferred error names an earlier call sent
 * without waiting; HOST_CALLs name a request of the session (or a host node's run). After the ops the client tears
 * down what the session holds by calls (synchronize, unmap, free, unload, destroy, reset),
 * and the session must then own nothing: no allocation, no handle, no charge.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gpupool/calls.h>
#include <gpupool/wire.h>

#include "bulk.h"
#include "codec.h"
#include "error.h"
#include "fuzz.h"
#include "log.h"
#include "worker.h"

/* worker.c is not compiled in: what the other files use of it. */
volatile sig_atomic_t gp__worker_stop, gp__worker_preempted, gp__worker_preempt_gen;

int gp__worker_preempt_tell(struct gp_worker *w, bool ending)
{
	(void)w;
	(void)ending;
	return 0;
}

/* ---- the calls, from the table ---------------------------------------------------- */

enum akind {
	AK_END,
	AK_CTX,
	AK_CTX_OPT,
	AK_DEVICE,
	AK_STREAM,
	AK_EVENT,
	AK_MODULE,
	AK_LIBRARY,
	AK_MODLIB,
	AK_FUNC,
	AK_DPTR,
	AK_U64,
	AK_U32,
	AK_I32,
	AK_NAME,
	AK_BLOB,
	AK_BULK_IN,
	AK_BULK_OUT
};

struct argdesc {
	enum akind kind;
	const char *name;
};

/* A device range the worker checks (GP_RANGE; GP_RANGE1: height and pitch NULL). */
struct rangedesc {
	const char *base, *width, *height, *pitch;
};

struct calldesc {
	const char *name;
	unsigned num, flags;
	const struct argdesc *args;
	const char *const *outs;
	const struct rangedesc *ranges;
};

#define GP_ARG(kind, f) {AK_##kind, #f},
#define GP_OUT(f) #f,
#define GP_RANGE(base, width, height, pitch) {#base, #width, #height, #pitch},
#define GP_RANGE1(base, bytes) {#base, #bytes, NULL, NULL},
#define DESC(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)             \
	static const struct argdesc args_##name[] = {ARGS{AK_END, NULL}}; \
	static const char *const outs_##name[] = {OUTS NULL};             \
	static const struct rangedesc ranges_##name[] = {RANGES{NULL, NULL, NULL, NULL}};
GP_CALL_MAP(DESC)
#undef DESC
#define ROW(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC) \
	{#NAME, NUM, FLAGS, args_##name, outs_##name, ranges_##name},
static const struct calldesc calls[] = {GP_CALL_MAP(ROW)};
#undef ROW
#undef GP_RANGE1
#undef GP_RANGE
#undef GP_OUT
#undef GP_ARG
#define NCALLS (sizeof(calls) / sizeof(calls[0]))
#define OP_RAW 0xff

static const struct calldesc *call_of(unsigned num)
{
	for (size_t i = 0; i < NCALLS; i++)
		if (calls[i].num == num)
			return &calls[i];
	return NULL;
}

static unsigned nargs_of(const struct calldesc *d)
{
	unsigned n = 0;

	while (d->args[n].kind != AK_END)
		n++;
	return n;
}

static unsigned nouts_of(const struct calldesc *d)
{
	unsigned n = 0;

	while (d->outs[n])
		n++;
	return n;
}

/* ---- what earlier replies answered, by category ----------------------------------- */

enum cat {
	C_ANY,
	C_CTX,
	C_STREAM,
	C_EVENT,
	C_MODULE,
	C_LIBRARY,
	C_FUNC,
	C_DPTR,
	C_GRAPH,
	C_NODE,
	C_EXEC,
	C_POOL,
	C_VMEM,
	C_MAX
};

#define POOL_SLOTS 32

struct seen {
	uint64_t v[C_MAX][POOL_SLOTS];
	unsigned n[C_MAX];
};

static enum cat cat_of_name(const char *n)
{
	static const struct {
		const char *name;
		enum cat c;
	} names[] = {{"ctx", C_CTX},	   {"stream", C_STREAM},   {"event", C_EVENT},
		     {"module", C_MODULE}, {"library", C_LIBRARY}, {"dptr", C_DPTR},
		     {"ptr", C_DPTR},	   {"dst", C_DPTR},	   {"src", C_DPTR},
		     {"base", C_DPTR},	   {"addr", C_DPTR},	   {"global", C_DPTR},
		     {"graph", C_GRAPH},   {"child", C_GRAPH},	   {"node", C_NODE},
		     {"exec", C_EXEC},	   {"pool", C_POOL},	   {"handle", C_VMEM}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(n, names[i].name))
			return names[i].c;
	return C_ANY;
}

static enum cat cat_of_arg(const struct argdesc *a, unsigned pick)
{
	switch (a->kind) {
	case AK_CTX:
	case AK_CTX_OPT:
		return C_CTX;
	case AK_STREAM:
		return C_STREAM;
	case AK_EVENT:
		return C_EVENT;
	case AK_MODULE:
		return C_MODULE;
	case AK_LIBRARY:
		return C_LIBRARY;
	case AK_MODLIB:
		return pick & 1 ? C_LIBRARY : C_MODULE;
	case AK_FUNC:
		return C_FUNC;
	case AK_DPTR:
		return C_DPTR;
	default:
		return cat_of_name(a->name);
	}
}

static void seen_add(struct seen *s, enum cat c, uint64_t v)
{
	s->v[c][s->n[c]++ % POOL_SLOTS] = v;
	if (c != C_ANY)
		seen_add(s, C_ANY, v);
}

/* The k-th latest value of the category (0 when there is none). */
static uint64_t seen_get(const struct seen *s, enum cat c, unsigned k)
{
	unsigned n = s->n[c] < POOL_SLOTS ? s->n[c] : POOL_SLOTS;

	if (!n)
		return 0;
	return s->v[c][(s->n[c] - 1 - k % n) % POOL_SLOTS];
}

/* ---- the input ---------------------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned u8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t u64(struct in *in)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)u8(in) << (8 * i);
	return v;
}

/* One value: the top 3 bits of its first byte say how it is made, the low 5 (k) what. */
static uint64_t value(struct in *in, const struct seen *s, enum cat c)
{
	unsigned b = u8(in), k = b & 31;

	switch (b >> 5) {
	case 0:
		return k;
	case 1:
		return seen_get(s, c, k); /* of the argument's kind */
	case 2:
		return seen_get(s, c, 0) + (uint64_t)k * 4; /* inside the latest one */
	case 3:
		return u64(in);
	case 4:
		return seen_get(s, C_ANY, k); /* anything answered */
	case 5:
		return (uint64_t)1 << k; /* sizes */
	case 6:
		return (uint64_t)k << 12; /* pages */
	default:
		return seen_get(s, c, 0) + ((uint64_t)u8(in) << (k & 15)); /* further inside */
	}
}

/* Module images: the PTX of corpus/ptx, with the NUL a client sends. */
static const char *const ptx_names[] = {"vector_add.ptx", "printf.ptx", "managed.ptx",
					"initializers.ptx"};
#define NPTX (sizeof(ptx_names) / sizeof(ptx_names[0]))
static uint8_t *ptx[NPTX];
static size_t ptx_len[NPTX];

static const char *const symbols[] = {"vector_add", "hello", "add_to_total", "read_all",
				      "total",	    "fs",    "ds",	     "is",
				      "ptrs",	    "addrs", "wide",	     "$str"};

/* The bytes of a call's BULK_IN argument. */
struct bulk {
	const uint8_t *src;
	uint64_t len;
	uint8_t fill;
};

#define BULK_MAX (1u << 20) /* host-to-device bytes one call sends */

static uint8_t fill_buf[GP_CHUNK_SIZE];

static const uint8_t *fill_read(void *arg, uint64_t off, size_t n, int *err)
{
	(void)arg;
	(void)off;
	(void)err;
	return n <= sizeof(fill_buf) ? fill_buf : NULL;
}

/* ---- one session -------------------------------------------------------------------- */

struct req {
	const struct calldesc *d; /* NULL: a raw frame */
	bool async, maybe;	  /* maybe: a raw frame may be answered or not */
	unsigned replies;
	uint64_t asked; /* BULK_OUT bytes; UINT64_MAX: none asked */
	uint64_t data;	/* DATA bytes that came */
	int32_t result;
	uint64_t out[GP_CALL_OUTS_MAX];
	size_t nout;
	uint64_t *funcs; /* the Reply's function handles */
	size_t nfuncs;
};

#define REQS_MAX 8192

static struct {
	struct gp_worker *w;
	struct gp_conn *c; /* the client's end */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct req req[REQS_MAX];
	uint64_t next_id;
	uint64_t ended_id; /* the request whose dispatch ended the session (0: none) */
	bool ended;	   /* a protocol error ended it (the ops stop) */
	bool eof;	   /* the reader saw the worker's end close */
	uint64_t vmaps[64][2], vresv[64][2];
	unsigned nvmaps, nvresv;
	struct seen seen;
	uint64_t mem[256][2]; /* device memory replies gave the session: base, bytes */
	unsigned nmem;
} S;

static struct gp_worker W;
static bool trace; /* FUZZ_DISPATCH_LOG: each answer on stderr, the worker's log too */
static struct gp_driver drv;
static uint8_t *staging;

/* Waits for request id's reply; false when the session ended with it unanswered. */
static bool await(uint64_t id)
{
	struct timespec dl;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	pthread_mutex_lock(&S.lock);
	while (!S.req[id].replies && S.ended_id != id && !S.eof) {
		if (pthread_cond_timedwait(&S.cv, &S.lock, &dl) == ETIMEDOUT) {
			fprintf(stderr, "fuzz_dispatch: no reply to %s (request %llu) in 20 s\n",
				S.req[id].d ? S.req[id].d->name : "a raw frame",
				(unsigned long long)id);
			FUZZ_CHECK(!"every call is answered");
		}
	}
	ok = S.req[id].replies != 0;
	pthread_mutex_unlock(&S.lock);
	return ok;
}

/* Sends one call (args already made) with its bulk; returns its request id, 0 when the
 * table is full or the connection is gone. */
static uint64_t send_call(const struct calldesc *d, bool async, const uint64_t *args, size_t nargs,
			  const char *name, const uint8_t *blob, size_t blob_len,
			  const struct bulk *bk, uint64_t asked)
{
	Gp__Call call = GP__CALL__INIT;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&S.lock);
	if (S.next_id >= REQS_MAX || S.eof) {
		pthread_mutex_unlock(&S.lock);
		return 0;
	}
	id = S.next_id++;
	S.req[id] = (struct req){.d = d, .async = async, .asked = asked};
	pthread_mutex_unlock(&S.lock);
	if (trace) {
		fprintf(stderr, "fuzz_dispatch: %llu %s%s(", (unsigned long long)id, d->name,
			async ? " (no reply)" : "");
		for (size_t i = 0; i < nargs; i++)
			fprintf(stderr, "%s0x%llx", i ? ", " : "", (unsigned long long)args[i]);
		fprintf(stderr, ")%s%s, blob %zu, bulk %llu\n", name ? " name " : "",
			name ? name : "", blob_len, bk ? (unsigned long long)bk->len : 0ull);
	}
	call.n_arg = nargs;
	call.arg = (uint64_t *)args;
	call.name = (char *)(name ? name : "");
	call.blob.data = (uint8_t *)blob;
	call.blob.len = blob_len;
	gp_conn_send_lock(S.c);
	if (bk) {
		struct gp_bulk_source src = {.src = bk->src};

		if (!bk->src) {
			memset(fill_buf, bk->fill, sizeof(fill_buf));
			src.read = fill_read;
		}
		ret = gp_bulk_send(S.c, d->num, async ? GP_F_NO_REPLY : 0, id, &call.base, bk->len,
				   &src);
	} else {
		ret = gp_conn_send(S.c, d->num, async ? GP_F_NO_REPLY : 0, id, &call.base, NULL, 0);
	}
	if (!ret)
		ret = gp_conn_flush(S.c);
	gp_conn_send_unlock(S.c);
	return ret ? 0 : id;
}

static uint64_t arg_named(const struct calldesc *d, const uint64_t *full, const char *name)
{
	for (unsigned i = 0; d->args[i].kind != AK_END; i++)
		if (!strcmp(d->args[i].name, name))
			return full[i];
	FUZZ_CHECK(!"a range names arguments of its call");
	return 0;
}

static uint64_t out_named(const struct calldesc *d, const struct req *r, const char *name)
{
	for (unsigned i = 0; i < r->nout; i++)
		if (!strcmp(d->outs[i], name))
			return r->out[i];
	return 0;
}

static void mem_add(uint64_t base, uint64_t bytes)
{
	if (bytes && S.nmem < 256) {
		S.mem[S.nmem][0] = base;
		S.mem[S.nmem++][1] = bytes;
	}
}

/*
 * A call that succeeded touched only device memory some reply gave the session (an
 * allocation, a global, a mapping: all of one of them; the worker's own table is not
 * asked). Memory freed since still counts: this catches reaching outside the session, not
 * use after free.
 */
static void check_ranges(const struct calldesc *d, const uint64_t *full)
{
	for (const struct rangedesc *g = d->ranges; g->base; g++) {
		uint64_t base = arg_named(d, full, g->base), width = arg_named(d, full, g->width);
		uint64_t height = g->height ? arg_named(d, full, g->height) : 1;
		uint64_t pitch = g->pitch ? arg_named(d, full, g->pitch) : 0, ext, end;
		bool inside = false;

		if (width == 0 || height == 0)
			continue;
		if (!pitch)
			pitch = width;
		/* rows of width bytes, pitch apart: the last row ends at (height - 1) * pitch +
		 * width */
		FUZZ_CHECK(!__builtin_mul_overflow(height - 1, pitch, &ext) &&
			   !__builtin_add_overflow(ext, width, &ext) &&
			   !__builtin_add_overflow(base, ext, &end));
		for (unsigned i = 0; i < S.nmem && !inside; i++)
			inside = base >= S.mem[i][0] && end - S.mem[i][0] <= S.mem[i][1];
		if (!inside) {
			fprintf(stderr,
				"fuzz_dispatch: %s succeeded on [0x%llx, 0x%llx), which no reply "
				"gave "
				"the session\n",
				d->name, (unsigned long long)base, (unsigned long long)end);
			FUZZ_CHECK(!"a call touches only the session's device memory");
		}
	}
}

/* A sent call answered: what it made joins the values later calls use, and the device
 * memory it touched was the session's. full: the arguments by the table's index. */
static void note_reply(const struct calldesc *d, const uint64_t *full, uint64_t id)
{
	const struct req *r = &S.req[id];
	const uint64_t *args = full; /* the calls below have no NAME or BLOB */

	if (r->result != CUDA_SUCCESS)
		return;
	check_ranges(d, full);
	switch (d->num) {
	case GP_MSG_MEM_ALLOC:
	case GP_MSG_MEM_ALLOC_ASYNC:
		mem_add(out_named(d, r, "dptr"), arg_named(d, full, "bytes"));
		break;
	case GP_MSG_MANAGED_ALLOC: /* page-aligned: whole pages */
		mem_add(out_named(d, r, "dptr"), (arg_named(d, full, "bytes") + 4095) & ~4095ull);
		break;
	case GP_MSG_MEM_ALLOC_PITCH:
		mem_add(out_named(d, r, "dptr"),
			out_named(d, r, "pitch") * arg_named(d, full, "height"));
		break;
	case GP_MSG_GET_GLOBAL:
		mem_add(out_named(d, r, "dptr"), out_named(d, r, "bytes"));
		break;
	case GP_MSG_MANAGED_GLOBAL:
		mem_add(out_named(d, r, "dptr"), out_named(d, r, "bytes"));
		mem_add(out_named(d, r, "base"), out_named(d, r, "len"));
		break;
	case GP_MSG_VMM_MAP:
		mem_add(arg_named(d, full, "ptr"), arg_named(d, full, "bytes"));
		break;
	}
	for (size_t i = 0; i < r->nout; i++)
		seen_add(&S.seen, cat_of_name(d->outs[i]), r->out[i]);
	for (size_t i = 0; i < r->nfuncs; i++)
		seen_add(&S.seen, C_FUNC, r->funcs[i]);
	if (d->num == GP_MSG_VMM_RESERVE && S.nvresv < 64 && r->nout == 1) {
		S.vresv[S.nvresv][0] = r->out[0];
		S.vresv[S.nvresv++][1] = args[1];
	}
	if (d->num == GP_MSG_VMM_MAP && S.nvmaps < 64) {
		S.vmaps[S.nvmaps][0] = args[1];
		S.vmaps[S.nvmaps++][1] = args[2];
	}
}

/* A call of the table with the given args, waited for; its result (or -1). */
static int32_t teardown_call(unsigned num, const uint64_t *args, size_t nargs)
{
	const struct calldesc *d = call_of(num);
	uint64_t id = send_call(d, false, args, nargs, NULL, NULL, 0, NULL, UINT64_MAX);

	if (!id || !await(id))
		return -1;
	return S.req[id].result;
}

/* Makes and sends one op; false when the ops end. */
static bool one_op(struct in *in)
{
	unsigned op = u8(in), fl = u8(in);
	const struct calldesc *d;
	uint64_t args[32], full[32];
	char name[256];
	static uint8_t blob[GP_BLOB_MAX + 8]; /* the client thread's */
	size_t blob_len = 0, nargs;
	const char *nm = NULL;
	struct bulk bk, *bkp = NULL;
	uint64_t asked = UINT64_MAX, width = 0, height = 1, id;

	if (op == OP_RAW) {
		/* A well-formed frame of any type and body: the stream stays in step. */
		struct gp_frame_hdr h;
		uint8_t hdr[GP_FRAME_HDR_SIZE];
		unsigned type = u8(in) | u8(in) << 8, len = u8(in);

		len = len < in->n ? len : (unsigned)in->n;
		pthread_mutex_lock(&S.lock);
		id = S.next_id < REQS_MAX ? S.next_id++ : 0;
		if (id)
			S.req[id] = (struct req){.maybe = true, .asked = UINT64_MAX};
		pthread_mutex_unlock(&S.lock);
		h = (struct gp_frame_hdr){.msg_len = len,
					  .request_id = id,
					  .type = type,
					  .flags = fl & GP_F_NO_REPLY};
		gp_frame_hdr_encode(&h, hdr);
		gp_conn_send_lock(S.c);
		if (!gp_conn_write(S.c, hdr, sizeof(hdr)) && !gp_conn_write(S.c, in->p, len))
			gp_conn_flush(S.c);
		gp_conn_send_unlock(S.c);
		return false;
	}
	d = call_of(op);
	if (!d)
		d = &calls[op % NCALLS];
	nargs = nargs_of(d);
	FUZZ_CHECK(nargs <= sizeof(args) / sizeof(args[0]));
	for (size_t i = 0; i < nargs; i++) {
		const struct argdesc *a = &d->args[i];
		enum cat c = cat_of_arg(a, fl >> 1);
		uint64_t v;

		if (a->kind == AK_NAME) {
			unsigned b = u8(in);

			if (b < 0x80) {
				nm = symbols[b % (sizeof(symbols) / sizeof(symbols[0]))];
			} else {
				size_t l = b & 0x7f;

				l = l < in->n ? l : in->n;
				memcpy(name, in->p, l);
				name[l] = '\0';
				in->p += l;
				in->n -= l;
				nm = name;
			}
			args[i] = 0; /* not an argument of Call.arg */
			continue;
		}
		if (a->kind == AK_BLOB) {
			unsigned b = u8(in);

			if (b == 0xfe) {
				/* large: up to the protocol's limit and past it, one byte over */
				blob_len = (size_t)u8(in) << 8;
				blob_len = blob_len > GP_BLOB_MAX + 8 ? GP_BLOB_MAX + 8 : blob_len;
				memset(blob, (int)u8(in), blob_len);
			} else if (b & 0x80) {
				blob_len = b & 0x7f;
				if (blob_len == 0x7f) /* longer: a tensor map's description */
					blob_len += 2 * u8(in);
				blob_len = blob_len < in->n ? blob_len : in->n;
				memcpy(blob, in->p, blob_len);
				in->p += blob_len;
				in->n -= blob_len;
			} else {
				unsigned words = b % 9, trim = (b >> 4) & 7;

				for (unsigned k = 0; k < words; k++) {
					uint64_t x = value(in, &S.seen, k < 3 ? C_DPTR : C_ANY);

					memcpy(blob + 8 * k, &x, 8);
				}
				blob_len = words * 8 > trim ? words * 8 - trim : 0;
			}
			args[i] = 0;
			continue;
		}
		if (a->kind == AK_BULK_IN) {
			unsigned b = u8(in);

			bk = (struct bulk){.fill = (uint8_t)b};
			if (!strcmp(a->name, "image") && (b & 3) != 3) {
				unsigned k = (b >> 2) % NPTX;

				bk.src = ptx[k];
				bk.len = ptx_len[k];
			} else if (!strcmp(a->name, "image")) {
				size_t l = u8(in);

				l = l < in->n ? l : in->n;
				bk.src = in->p;
				bk.len = l;
				in->p += l;
				in->n -= l;
			} else if (b & 0x80) {
				/* as many as the copy's width and height say */
				bk.len = width * height;
			} else {
				bk.len = value(in, &S.seen, C_ANY);
			}
			if (bk.len > BULK_MAX)
				bk.len = bk.src ? bk.len : bk.len % (BULK_MAX + 1);
			v = bk.len;
			bkp = &bk;
		} else {
			v = value(in, &S.seen, c);
		}
		if (a->kind == AK_BULK_OUT) {
			/* as asked: what comes back is bounded by the session's memory */
			asked = v;
		}
		/* Launches stay small: at most 27 blocks of 512 threads. */
		if (!strncmp(a->name, "grid_", 5))
			v %= 4;
		else if (!strncmp(a->name, "block_", 6))
			v %= 9;
		else if (!strncmp(a->name, "cluster_", 8))
			v %= 3;
		if (!strcmp(a->name, "width") || !strcmp(a->name, "bytes"))
			width = v;
		if (!strcmp(a->name, "height"))
			height = v;
		args[i] = v;
	}
	/* NAME and BLOB travel beside Call.arg: drop their placeholders. */
	memcpy(full, args, nargs * sizeof(args[0]));
	{
		size_t k = 0;

		for (size_t i = 0; i < nargs; i++)
			if (d->args[i].kind != AK_NAME && d->args[i].kind != AK_BLOB)
				args[k++] = args[i];
		nargs = k;
	}
	id = send_call(d, (fl & 1) && (d->flags & GP_C_ASYNC), args, nargs, nm, blob, blob_len, bkp,
		       asked);
	if (!id)
		return false;
	if (S.req[id].async)
		return true;
	if (!await(id))
		return false; /* the session ended there */
	note_reply(d, full, id);
	return true;
}

/* Everything the session holds, let go by calls, as a client's cleanup would. */
static void teardown(void)
{
	struct gp_worker *w = S.w;
	static struct {
		uint32_t kind;
		uint64_t id;
		bool primary;
	} hs[REQS_MAX]; /* every handle made: one request each at most */
	size_t n = 0;
	uint64_t dev0 = 0, t = 0;

	/* Graphs belong to no context; their calls run in device 0's primary one. */
	if (teardown_call(GP_MSG_PRIMARY_RETAIN, &dev0, 1) == CUDA_SUCCESS)
		t = S.req[S.next_id - 1].out[0];
	pthread_mutex_lock(&w->lock);
	for (uint32_t i = 0; i < w->nhandles && n < REQS_MAX; i++) {
		struct gp_handle *h = &w->handles[i];

		if (!h->kind)
			continue;
		hs[n].kind = h->kind;
		hs[n].id = gp__handle_id(w, h);
		hs[n].primary = h->primary;
		n++;
	}
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++)
		if (hs[i].kind == GP_H_CTX)
			teardown_call(GP_MSG_CTX_SYNCHRONIZE, &hs[i].id, 1);
	for (unsigned i = 0; i < S.nvmaps; i++) {
		uint64_t a[3] = {0, S.vmaps[i][0], S.vmaps[i][1]};

		teardown_call(GP_MSG_VMM_UNMAP, a, 3);
	}
	for (unsigned i = 0; i < S.nvresv; i++) {
		uint64_t a[3] = {0, S.vresv[i][0], S.vresv[i][1]};

		teardown_call(GP_MSG_VMM_ADDRESS_FREE, a, 3);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t a[2] = {t, hs[i].id};

		switch (hs[i].kind) {
		case GP_H_VMEM:
			a[0] = 0;
			/* once for the create and once for each retain */
			for (int k = 0;
			     k < REQS_MAX && teardown_call(GP_MSG_VMM_RELEASE, a, 2) == 0; k++)
				;
			break;
		case GP_H_GRAPH_EXEC:
			teardown_call(GP_MSG_GRAPH_EXEC_DESTROY, a, 2);
			break;
		case GP_H_LIBRARY:
			teardown_call(GP_MSG_LIBRARY_UNLOAD, &hs[i].id, 1);
			break;
		case GP_H_MEMPOOL:
			teardown_call(GP_MSG_POOL_DESTROY, &hs[i].id, 1);
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t a[2] = {t, hs[i].id};

		if (hs[i].kind == GP_H_GRAPH)
			teardown_call(GP_MSG_GRAPH_DESTROY, a, 2);
	}
	for (size_t i = 0; i < n; i++)
		if (hs[i].kind == GP_H_CTX && !hs[i].primary)
			teardown_call(GP_MSG_CTX_DESTROY, &hs[i].id, 1);
	/* Each retain released (the last destroys the context), then a reset for good measure. */
	for (int dev = 0; dev < w->ndev; dev++) {
		uint64_t a = (uint64_t)dev;

		for (int k = 0; k < REQS_MAX && teardown_call(GP_MSG_PRIMARY_RELEASE, &a, 1) == 0;
		     k++)
			;
		teardown_call(GP_MSG_PRIMARY_RESET, &a, 1);
	}
	/* What the pools still hold (a default pool's memory outlives the contexts) goes back,
	 * and a created pool that held allocations goes now. */
	n = 0;
	pthread_mutex_lock(&w->lock);
	for (uint32_t i = 0; i < w->nhandles && n < REQS_MAX; i++)
		if (w->handles[i].kind == GP_H_MEMPOOL)
			hs[n++].id = gp__handle_id(w, &w->handles[i]);
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++) {
		uint64_t a[2] = {hs[i].id, 0};

		teardown_call(GP_MSG_POOL_TRIM, a, 2);
		teardown_call(GP_MSG_POOL_DESTROY, a, 1);
	}
}

static void *client(void *arg)
{
	struct in *in = arg;

	while (in->n && one_op(in))
		;
	teardown();
	/* The end of the session: the worker's loop sees the connection close. */
	shutdown(S.c->fd, SHUT_WR);
	return NULL;
}

/* ---- the reader: every frame the worker sends ------------------------------------- */

static void reply_in(const struct gp_frame_hdr *h)
{
	Gp__Reply *rep;
	struct req *r;

	FUZZ_CHECK(h->bulk_len == 0 && !(h->flags & GP_F_MORE));
	FUZZ_CHECK(h->request_id > 0 && h->request_id < REQS_MAX);
	rep = (Gp__Reply *)gp_msg_unpack(GP_MSG_REPLY, S.c->msg, h->msg_len);
	FUZZ_CHECK(rep != NULL);
	pthread_mutex_lock(&S.lock);
	FUZZ_CHECK(h->request_id < S.next_id);
	r = &S.req[h->request_id];
	/* exactly one reply, to a call that waits for one */
	FUZZ_CHECK(r->replies == 0);
	FUZZ_CHECK(!r->async);
	r->replies++;
	r->result = rep->result;
	if (trace)
		fprintf(stderr, "fuzz_dispatch: %llu %s: %d%s\n", (unsigned long long)h->request_id,
			r->d ? r->d->name : "raw", rep->result, rep->deferred ? " (deferred)" : "");
	if (r->d) {
		/* its outs on success, none on failure */
		FUZZ_CHECK(rep->n_out == (rep->result == CUDA_SUCCESS ? nouts_of(r->d) : 0));
		FUZZ_CHECK(rep->n_function == 0 ||
			   (gp_call_info(r->d->num)->flags & GP_C_FUNCTIONS));
		/* a device-to-host copy that succeeded brought all it asked, never more */
		FUZZ_CHECK(r->data <= r->asked);
		if (rep->result == CUDA_SUCCESS && r->d->num == GP_MSG_MEMCPY_DTOH)
			FUZZ_CHECK(r->data == r->asked);
	}
	FUZZ_CHECK(rep->n_out <= GP_CALL_OUTS_MAX);
	if (rep->n_out)
		memcpy(r->out, rep->out, rep->n_out * sizeof(uint64_t));
	r->nout = rep->n_out;
	if (rep->n_function) {
		r->funcs = calloc(rep->n_function, sizeof(uint64_t));
		FUZZ_CHECK(r->funcs != NULL);
		for (size_t i = 0; i < rep->n_function; i++)
			r->funcs[i] = rep->function[i]->handle;
		r->nfuncs = rep->n_function;
	}
	if (rep->deferred) {
		uint64_t did = rep->deferred->request_id;

		/* an error of an earlier call sent without waiting */
		FUZZ_CHECK(did > 0 && did < h->request_id);
		FUZZ_CHECK(S.req[did].async || S.req[did].maybe);
		FUZZ_CHECK(rep->deferred->result != CUDA_SUCCESS);
	}
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.lock);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
}

static void data_in(const struct gp_frame_hdr *h)
{
	struct gp_bulk_sink drop = {0};
	struct req *r;
	uint64_t room;

	FUZZ_CHECK(h->request_id > 0 && h->request_id < REQS_MAX && h->msg_len == 0);
	pthread_mutex_lock(&S.lock);
	FUZZ_CHECK(h->request_id < S.next_id);
	r = &S.req[h->request_id];
	FUZZ_CHECK(r->replies == 0);
	room = r->asked == UINT64_MAX ? UINT64_MAX : r->asked - r->data;
	pthread_mutex_unlock(&S.lock);
	/* never more than the call asked for: the receiver accepts at most that */
	FUZZ_CHECK(gp_bulk_recv(S.c, h, room, &drop) == 0);
	pthread_mutex_lock(&S.lock);
	r->data += drop.got;
	pthread_mutex_unlock(&S.lock);
}

/* A host function is due: the client runs it (nothing) and says so, as the interposer does. */
static void host_call_in(const struct gp_frame_hdr *h)
{
	Gp__Call *c = (Gp__Call *)gp_msg_unpack(GP_MSG_HOST_CALL, S.c->msg, h->msg_len);
	struct gp_bulk_sink drop = {0};
	struct gp_bulk_source zeros = {.read = fill_read};
	uint64_t kind, nbytes;
	int ret;

	FUZZ_CHECK(c != NULL && c->n_arg == 5);
	/* a LAUNCH_HOST_FUNC's request, or a graph's host node run (the top bit set) */
	FUZZ_CHECK((h->request_id > 0 && h->request_id < S.next_id) || h->request_id >> 63);
	kind = c->arg[3];
	nbytes = c->arg[1];
	protobuf_c_message_free_unpacked(&c->base, NULL);
	if (kind == 3) /* a push: the bytes for the client's memory follow */
		FUZZ_CHECK(gp_bulk_recv(S.c, h, nbytes, &drop) == 0 && drop.got == nbytes);
	else
		FUZZ_CHECK(h->bulk_len == 0 && !(h->flags & GP_F_MORE));
	gp_conn_send_lock(S.c);
	if (kind == 2) { /* a fetch: the client memory's bytes go back */
		memset(fill_buf, 0, sizeof(fill_buf));
		ret = gp_bulk_send(S.c, GP_MSG_HOST_DONE, 0, h->request_id, NULL, nbytes, &zeros);
	} else {
		ret = gp_conn_send(S.c, GP_MSG_HOST_DONE, 0, h->request_id, NULL, NULL, 0);
	}
	if (!ret)
		gp_conn_flush(S.c);
	gp_conn_send_unlock(S.c);
}

static void *reader(void *arg)
{
	struct gp_frame_hdr h;

	(void)arg;
	while (gp_conn_recv(S.c, &h) == 0) {
		switch (h.type) {
		case GP_MSG_REPLY:
			reply_in(&h);
			break;
		case GP_MSG_DATA:
			data_in(&h);
			break;
		case GP_MSG_HOST_CALL:
			host_call_in(&h);
			break;
		case GP_MSG_OUTPUT:
		case GP_MSG_OUTPUT_ERR:
			FUZZ_CHECK(h.msg_len == 0 && !(h.flags & GP_F_MORE));
			FUZZ_CHECK(gp_conn_skip(S.c, h.bulk_len) == 0);
			break;
		default:
			fprintf(stderr, "fuzz_dispatch: the worker sent message type %u\n", h.type);
			FUZZ_CHECK(!"the worker sends only replies, data, host calls and output");
		}
	}
	pthread_mutex_lock(&S.lock);
	S.eof = true;
	pthread_cond_broadcast(&S.cv);
	pthread_mutex_unlock(&S.lock);
	return NULL;
}

/* ---- the worker's side ---------------------------------------------------------------- */

/* serve() of worker.c, but a protocol error does not end the loop: it ends the input's ops,
 * and the client's teardown calls still run, so that every input leaves nothing behind. */
static void serve(struct gp_worker *w)
{
	struct gp_frame_hdr h;
	int ret;

	for (;;) {
		ret = gp_conn_recv(w->client, &h);
		if (ret) {
			/* the client's end closed: the client makes only well-formed frames */
			FUZZ_CHECK(ret == GP_ECLOSED);
			break;
		}
		if (h.type == GP_MSG_HOST_DONE) {
			ret = gp__host_done(w, &h);
		} else if (h.type == GP_MSG_GOODBYE) {
			ret = GP_EFRAME; /* nothing may follow: as if ended */
		} else {
			w->calls++;
			pthread_mutex_lock(&w->lock);
			ret = gp__worker_dispatch(w, &h);
			pthread_mutex_unlock(&w->lock);
		}
		if (ret) {
			pthread_mutex_lock(&S.lock);
			if (!S.ended)
				S.ended_id = h.request_id;
			S.ended = true;
			pthread_cond_broadcast(&S.cv);
			pthread_mutex_unlock(&S.lock);
		}
	}
}

static void init_once(void)
{
	static bool done;
	char err[512];
	int n = 0;

	if (done)
		return;
	done = true;
	trace = getenv("FUZZ_DISPATCH_LOG") != NULL;
	gp_log_init("fuzz_dispatch", trace ? GP_LOG_DEBUG : GP_LOG_NONE);
	/* Two small devices, two block threads. */
	setenv("SOFTGPU_DEVICES", "2", 0);
	setenv("SOFTGPU_MEMORY", "256M", 0);
	setenv("SOFTGPU_THREADS", "2", 0);
	for (size_t i = 0; i < NPTX; i++) {
		char path[4096];
		FILE *f;
		long len;

		snprintf(path, sizeof(path), "%s/%s", GP_FUZZ_PTX_DIR, ptx_names[i]);
		f = fopen(path, "rb");
		FUZZ_CHECK(f != NULL);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		ptx[i] = calloc(1, (size_t)len + 1);
		FUZZ_CHECK(ptx[i] && fread(ptx[i], 1, (size_t)len, f) == (size_t)len);
		ptx_len[i] = (size_t)len + 1;
		fclose(f);
	}
	if (gp_driver_load(&drv, GP_FUZZ_SOFTGPU, err, sizeof(err))) {
		fprintf(stderr, "fuzz_dispatch: %s\n", err);
		FUZZ_CHECK(!"softgpu loads");
	}
	FUZZ_CHECK(drv.cuInit(0) == CUDA_SUCCESS);
	FUZZ_CHECK(drv.cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 2);
	staging = malloc(GP_FRAME_BULK_MAX);
	FUZZ_CHECK(staging != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct gp_worker *w = &W;
	pthread_t tc, tr;
	int sv[2];

	init_once();
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	w->drv = drv;
	w->driver_loaded = true;
	w->driver_ndev = 2;
	w->ndev = 2;
	w->session_id = 1;
	w->mem_limit = 64u << 20; /* the session's limit per device */
	w->caps.contexts = 4;
	w->caps.streams = 16;
	w->caps.events = 16;
	w->caps.modules = 8;
	w->staging = staging;
	w->client = gp_conn_new(sv[0]);
	FUZZ_CHECK(w->client && gp_conn_concurrent(w->client) == 0);

	for (size_t i = 0; i < REQS_MAX; i++)
		free(S.req[i].funcs);
	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.lock, NULL);
	pthread_cond_init(&S.cv, NULL);
	S.w = w;
	S.next_id = 1;
	S.c = gp_conn_new(sv[1]);
	FUZZ_CHECK(S.c && gp_conn_concurrent(S.c) == 0);

	FUZZ_CHECK(pthread_create(&tr, NULL, reader, NULL) == 0);
	FUZZ_CHECK(pthread_create(&tc, NULL, client, &in) == 0);
	serve(w);
	pthread_join(tc, NULL);
	/* Waiters answer what they were handed before the worker's end closes. */
	for (int i = 0; i < 20000 && (gp__waits_busy() || gp__host_calls_pending()); i++)
		usleep(1000);
	FUZZ_CHECK(!gp__waits_busy() && !gp__host_calls_pending());
	shutdown(w->client->fd, SHUT_WR);
	pthread_join(tr, NULL);

	/* Every call that waited was answered once; none that did not wait was. */
	for (uint64_t id = 1; id < S.next_id; id++) {
		const struct req *r = &S.req[id];

		if (r->maybe || r->async)
			FUZZ_CHECK(r->replies <= (r->maybe ? 1u : 0u));
		else if (!S.ended || id != S.ended_id) /* a protocol error ends unanswered */
			FUZZ_CHECK(r->replies == 1);
	}
	/* The teardown left the session owning nothing (what a process exit would free). */
	FUZZ_CHECK(w->nallocs == 0);
	for (int d = 0; d < 2; d++)
		FUZZ_CHECK(w->dev_used[d] == 0);
	for (uint32_t i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind && trace)
			fprintf(stderr, "fuzz_dispatch: left: handle kind %u\n",
				w->handles[i].kind);
	gp__worker_state_free(w);
	gp_conn_free(w->client);
	gp_conn_free(S.c);
	pthread_mutex_destroy(&w->lock);
	return 0;
}
