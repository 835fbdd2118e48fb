/* client.c -- the interposer's session with the pool: connect, Hello, calls, bulk copies. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "config.h"
#include "error.h"
#include "interposer.h"
#include "log.h"

#define CONNECT_TIMEOUT_MS 10000

struct gp_client gp__client = {.lock = PTHREAD_MUTEX_INITIALIZER};

/*
 * The one place where transport and protocol failures become a CUresult.
 * Once the connection is broken the session is gone (the worker has freed
 * everything), so every later call fails the same way, like a GPU that fell
 * off the bus: CUDA_ERROR_DEVICE_UNAVAILABLE. Called with the lock held.
 */
static CUresult transport_failed(int err, const char *what)
{
	struct gp_client *c = &gp__client;

	if (!c->lost)
		gp_log_error("connection to the pool lost during %s: %s (%s)", what,
			     c->conn && c->conn->err[0] ? c->conn->err : gp_strerror(err),
			     gp_err_name(err));
	c->lost = true;
	return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

/*
 * The result a caller sees. A deferred error from earlier asynchronous work is kept, and
 * returned by the next synchronizing call that itself succeeded. Any other call returns
 * its own result: an allocation or a free that happened must say so, or its object leaks
 * (or a freed range comes back).
 */
static CUresult merge_deferred(struct gp_client *c, unsigned type, CUresult r,
			       const Gp__DeferredError *d)
{
	if (d) {
		gp_log_debug("deferred error %d from request %llu (%s)", d->result,
			     (unsigned long long)d->request_id,
			     gp_msg_name(d->type) ? gp_msg_name(d->type) : "?");
		if (c->pending == CUDA_SUCCESS)
			c->pending = (CUresult)d->result;
	}
	if (r == CUDA_SUCCESS && c->pending != CUDA_SUCCESS && gp_call_info(type) &&
	    (gp_call_info(type)->flags & GP_C_SYNC)) {
		r = c->pending;
		c->pending = CUDA_SUCCESS;
	}
	return r;
}

void gp__pending_clear(void)
{
	pthread_mutex_lock(&gp__client.lock);
	gp__client.pending = CUDA_SUCCESS;
	pthread_mutex_unlock(&gp__client.lock);
}

CUresult gp__ready(void)
{
	struct gp_client *c = &gp__client;

	if (!c->ready)
		return c->init_tried ? c->init_result : CUDA_ERROR_NOT_INITIALIZED;
	if (c->lost)
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	return CUDA_SUCCESS;
}

/* ---- connecting ---------------------------------------------------------------- */

/*
 * A forked child does not inherit the session: the TLS state belongs to the parent, and the
 * child's copy of the socket must not keep the session alive after the parent is gone (the
 * worker ends the session when the connection closes). CUDA is unusable in the child, as
 * with a local GPU.
 */
static void after_fork_child(void)
{
	if (gp__client.conn && gp__client.conn->fd >= 0)
		close(gp__client.conn->fd);
	gp__client.conn = NULL;
	if (gp__client.ready)
		gp__client.lost = true;
	pthread_mutex_init(&gp__client.lock, NULL);
}

static int read_hello_reply(struct gp_client *c, Gp__HelloReply **out)
{
	struct gp_frame_hdr h;
	int ret = gp_conn_recv(c->conn, &h);

	if (ret)
		return ret;
	if (h.type != GP_MSG_HELLO_REPLY || h.bulk_len)
		return GP_ETYPE;
	*out = (Gp__HelloReply *)gp_msg_unpack(h.type, c->conn->msg, h.msg_len);
	return *out ? 0 : GP_EDECODE;
}

static CUresult take_snapshot(struct gp_client *c, const Gp__HelloReply *rep)
{
	c->dev = calloc(rep->n_device ? rep->n_device : 1, sizeof(*c->dev));
	if (!c->dev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < rep->n_device; i++) {
		const Gp__Device *src = rep->device[i];
		struct gp_idevice *d = &c->dev[i];

		snprintf(d->name, sizeof(d->name), "%s", src->name);
		if (src->uuid.len == sizeof(d->uuid.bytes))
			memcpy(d->uuid.bytes, src->uuid.data, sizeof(d->uuid.bytes));
		d->total_mem = src->total_mem;
		for (size_t a = 1; a < src->n_attribute && a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
			d->attr[a] = src->attribute[a];
			d->attr_ok[a] = true;
		}
		for (size_t k = 0; k < src->n_unsupported_attribute; k++)
			if (src->unsupported_attribute[k] < CU_DEVICE_ATTRIBUTE_MAX)
				d->attr_ok[src->unsupported_attribute[k]] = false;
	}
	c->ndev = (int)rep->n_device;
	/* Primary context handles exist from the start; cudart asks for them before retaining. */
	c->primary = calloc(rep->n_device ? rep->n_device : 1, sizeof(*c->primary));
	if (!c->primary)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < c->ndev; i++) {
		c->primary[i].magic = GP_MAGIC_CTX;
		c->primary[i].device = i;
		c->primary[i].primary = true;
		c->primary[i].id = gp__next_object_id();
	}
	return CUDA_SUCCESS;
}

static void fill_hello(Gp__Hello *hello, char *host, size_t hostlen)
{
	uint64_t mem = 0;
	const char *s;

	hello->protocol_version = GP_PROTOCOL_VERSION;
	hello->cuda_version = CUDA_VERSION;
	if (gethostname(host, hostlen) != 0)
		snprintf(host, hostlen, "unknown");
	host[hostlen - 1] = '\0';
	hello->client_host = host;
	hello->client_pid = (uint32_t)getpid();
	hello->program = program_invocation_short_name;
	s = getenv("GPUPOOL_GPUS");
	if (s && *s)
		hello->gpus = (uint32_t)strtoul(s, NULL, 10);
	s = getenv("GPUPOOL_MEMORY");
	if (s && *s) {
		if (gp_parse_size(s, &mem))
			gp_log_warnx("GPUPOOL_MEMORY=%s is not a size; asking for the default", s);
		hello->memory = mem;
	}
	s = getenv("GPUPOOL_TOKEN");
	hello->token = (char *)(s ? s : "");
}

/* A pool turns a connection away by closing it (full, or shutting down): a hint for that. */
static const char *turned_away(const char *err)
{
	return strstr(err, "closed by") || strstr(err, "reset by peer")
		       ? " (the pool may be full or shutting down; its log says)"
		       : "";
}

/*
 * Opens the connection to one pool entry of GPUPOOL_SERVER: "HOST:PORT" (TLS), "unix:PATH"
 * (a pool on this host) or "plain:HOST:PORT" (no TLS: only when the entry says so). The
 * TLS context is made on first need and kept in *ctx. 0: open; 1: the pool closed it
 * during TLS (busy); -1: failed, the reason logged.
 */
static int open_pool(struct gp_client *c, SSL_CTX **ctx, const char *server)
{
	char err[512], host[256], port[16];
	bool tls = true;
	int fd;

	if (strncmp(server, "unix:", 5) == 0) {
		fd = gp_unix_connect(server + 5, CONNECT_TIMEOUT_MS, err, sizeof(err));
		tls = false;
	} else {
		if (strncmp(server, "plain:", 6) == 0) {
			server += 6;
			tls = false;
		}
		if (gp_split_hostport(server, host, sizeof(host), port, sizeof(port))) {
			gp_log_error("GPUPOOL_SERVER: '%s' is not HOST:PORT, unix:PATH or "
				     "plain:HOST:PORT",
				     server);
			return -1;
		}
		fd = gp_tcp_connect(server, CONNECT_TIMEOUT_MS, err, sizeof(err));
	}
	if (fd < 0) {
		gp_log_error("pool unreachable: %s", err);
		return -1;
	}
	c->conn = gp_conn_new(fd);
	if (!c->conn) {
		close(fd);
		return -1;
	}
	if (!tls)
		return 0;
	if (!*ctx) {
		*ctx = gp_tls_client_ctx_new(getenv("GPUPOOL_CA"), getenv("GPUPOOL_CERT"),
					     getenv("GPUPOOL_KEY"), err, sizeof(err));
		if (!*ctx) {
			gp_log_error("TLS setup: %s", err);
			return -1;
		}
	}
	if (gp_conn_tls_connect(c->conn, *ctx, host)) {
		if (*turned_away(c->conn->err)) {
			gp_log_debug("pool %s: %s during TLS", server, c->conn->err);
			return 1; /* busy: gp__connect tries again */
		}
		gp_log_error("pool %s: %s", server, c->conn->err);
		return -1;
	}
	return 0;
}

/* Tries one pool: connect, TLS, Hello. CUDA_SUCCESS with the session open and its
 * snapshot taken; otherwise the connection is closed and the reason logged, or when the
 * pool closed it before answering Hello (it was busy), *busy set for gp__connect. */
static CUresult try_pool(struct gp_client *c, SSL_CTX **ctx, const char *server, bool *busy)
{
	Gp__Hello hello = GP__HELLO__INIT;
	Gp__HelloReply *rep = NULL;
	CUresult r = CUDA_ERROR_NO_DEVICE;
	char me[256];
	int ret;

	*busy = false;
	ret = open_pool(c, ctx, server);
	if (ret) {
		*busy = ret > 0;
		goto out_conn;
	}
	fill_hello(&hello, me, sizeof(me));
	if (strncmp(server, "unix:", 5) == 0)
		hello.token = ""; /* the user is the identity there: no secret to send */
	ret = gp_conn_send(c->conn, GP_MSG_HELLO, 0, 0, &hello.base, NULL, 0);
	if (!ret)
		ret = read_hello_reply(c, &rep);
	if (ret) {
		const char *err = c->conn->err[0] ? c->conn->err : gp_strerror(ret);

		*busy = ret == GP_ECLOSED || *turned_away(err);
		if (*busy)
			gp_log_debug("pool %s: no answer to Hello: %s", server, err);
		else
			gp_log_error("pool %s: no answer to Hello: %s", server, err);
		goto out_conn;
	}
	if (rep->status != 0) {
		gp_log_error("pool %s refused the session: %s", server, rep->message);
		goto out_conn;
	}
	r = take_snapshot(c, rep);
	if (r != CUDA_SUCCESS)
		goto out_conn;
	c->session_id = rep->session_id;
	c->driver_version = rep->driver_version;
	gp_log_info("session %llu on %s: %d device%s, tenant %s",
		    (unsigned long long)rep->session_id, server, c->ndev, c->ndev == 1 ? "" : "s",
		    rep->tenant);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return CUDA_SUCCESS;

out_conn:
	if (rep)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	gp_conn_free(c->conn);
	c->conn = NULL;
	return r;
}

/* GPUPOOL_CONNECT_TIMEOUT: seconds cuInit keeps trying pools that are busy. */
#define CONNECT_RETRY_DEFAULT_S 60.0
#define RETRY_FIRST_MS 50
#define RETRY_MAX_MS 2000

static double connect_deadline_s(void)
{
	const char *s = getenv("GPUPOOL_CONNECT_TIMEOUT");
	char *end;
	double v;

	if (!s || !*s)
		return CONNECT_RETRY_DEFAULT_S;
	v = strtod(s, &end);
	if (*end || !(v >= 0) || v > 86400) {
		gp_log_warnx("GPUPOOL_CONNECT_TIMEOUT=%s is not a number of seconds; using %g", s,
			     CONNECT_RETRY_DEFAULT_S);
		return CONNECT_RETRY_DEFAULT_S;
	}
	return v;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Sleeps ms, through signals. */
static void nap_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Connects, says Hello and stores the device snapshot. Called by cuInit with the lock
 * held. GPUPOOL_SERVER may list several pools, comma-separated: they are tried in order
 * and the first that admits the session serves it. A pool that closes the connection
 * before answering Hello is busy, not refusing (a burst past its handshake budget, or
 * max_sessions): the list is tried again after a jittered, doubling pause until
 * GPUPOOL_CONNECT_TIMEOUT seconds have passed. Only admission's own answers are final.
 */
CUresult gp__connect(void)
{
	struct gp_client *c = &gp__client;
	const char *servers = getenv("GPUPOOL_SERVER");
	double limit = connect_deadline_s();
	unsigned delay = RETRY_FIRST_MS, tries = 0;
	CUresult r = CUDA_ERROR_NO_DEVICE;
	SSL_CTX *ctx = NULL;
	struct timespec t0;
	uint32_t seed;

	if (!servers || !*servers) {
		gp_log_error("GPUPOOL_SERVER is not set: no pool to send CUDA calls to");
		return CUDA_ERROR_NO_DEVICE;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)t0.tv_nsec;
	for (;;) {
		char *list = strdup(servers), *save = NULL;
		bool busy = false;
		unsigned ms;

		if (!list) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		tries++;
		for (char *s = strtok_r(list, ", ", &save); s; s = strtok_r(NULL, ", ", &save)) {
			bool b;

			r = try_pool(c, &ctx, s, &b);
			busy |= b;
			if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY)
				break;
		}
		free(list);
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY || !busy)
			break;
		/* Half the delay either way, so a burst of clients does not come back as one. */
		seed ^= seed << 13;
		seed ^= seed >> 17;
		seed ^= seed << 5;
		ms = delay / 2 + seed % (delay + 1);
		if (seconds_since(&t0) + ms / 1000.0 > limit) {
			gp_log_error("the pool was busy: %s closed the connection before answering "
				     "Hello, %u time%s in %.1f s (GPUPOOL_CONNECT_TIMEOUT %g s); "
				     "giving up (it may be full or shutting down; its log says)",
				     servers, tries, tries == 1 ? "" : "s", seconds_since(&t0),
				     limit);
			break;
		}
		gp_log_debug("the pool is busy; trying again in %u ms", ms);
		nap_ms(ms);
		delay = delay * 2 < RETRY_MAX_MS ? delay * 2 : RETRY_MAX_MS;
	}
	if (r == CUDA_SUCCESS)
		pthread_atfork(NULL, NULL, after_fork_child);
	SSL_CTX_free(ctx);
	return r;
}

/* ---- calls ---------------------------------------------------------------------- */

/*
 * One request on the wire. The message goes with its BULK_IN bytes (bulk.h), and unless it
 * carries GP_F_NO_REPLY the answer is awaited: DATA frames first when the call has BULK_OUT
 * (their bytes land in bulk->dst, at most bulk->len of them), then the Reply, whose body is
 * left in c->conn->msg for the caller.
 */
struct exchange {
	unsigned type, flags;
	const ProtobufCMessage *msg;
	const struct gp_bulk_ref *bulk;
};

/*
 * Writes to stdout without raising SIGPIPE in the program when nobody reads it: the signal
 * is blocked around the write and one it raised is taken back (the way libpq does). A
 * closed stdout drops the output; the session goes on.
 */
static void write_stdout(const uint8_t *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	struct timespec zero = {0, 0};
	bool was_pending;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		n -= (size_t)w;
	}
	sigpending(&pending);
	if (!was_pending && sigismember(&pending, SIGPIPE))
		sigtimedwait(&pipe_set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Copies an OUTPUT frame's bytes to stdout, after whatever the program itself buffered. */
static int print_output(struct gp_client *c, uint32_t n)
{
	uint8_t buf[8192];
	int ret = 0;

	fflush(stdout);
	while (!ret && n > 0) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		ret = gp_conn_read(c->conn, buf, k);
		if (!ret)
			write_stdout(buf, k);
		n -= (uint32_t)k;
	}
	return ret;
}

/* Runs one exchange with the lock held. Returns 0 or a transport/protocol code; *got is
 * how many BULK_OUT bytes arrived. */
static int exchange(struct gp_client *c, const struct exchange *x, struct gp_frame_hdr *h,
		    uint64_t *got)
{
	uint64_t id = ++c->next_id;
	struct gp_bulk_source src = {.src = x->bulk->src};
	struct gp_bulk_sink sink = {.dst = x->bulk->dst};
	bool received = false;
	int ret = gp_bulk_send(c->conn, x->type, x->flags, id, x->msg, x->bulk->src ? x->bulk->len : 0,
			       &src);

	*got = 0;
	if (ret)
		return ret;
	if (x->flags & GP_F_NO_REPLY)
		return gp_conn_flush(c->conn); /* sent now, so the GPU starts at once */
	for (;;) {
		ret = gp_conn_recv(c->conn, h);
		if (ret)
			return ret;
		if (h->type == GP_MSG_OUTPUT && !h->msg_len) {
			/* What the kernels printed, for this process's stdout, in order. */
			ret = print_output(c, h->bulk_len);
			if (ret)
				return ret;
			continue;
		}
		if (h->request_id != id || h->type != GP_MSG_DATA || !x->bulk->dst || received)
			break;
		/* The bulk answer, straight into the caller's buffer. */
		ret = gp_bulk_recv(c->conn, h, x->bulk->len, &sink);
		if (ret)
			return ret;
		*got = sink.got;
		received = true;
	}
	if (h->type != GP_MSG_REPLY || h->request_id != id || h->bulk_len) {
		snprintf(c->conn->err, sizeof(c->conn->err),
			 "expected REPLY for request %llu, got %s for %llu", (unsigned long long)id,
			 gp_msg_name(h->type) ? gp_msg_name(h->type) : "unknown type",
			 (unsigned long long)h->request_id);
		return GP_ETYPE;
	}
	return 0;
}

/* Takes the connection for one call; on success the caller must unlock c->lock. */
static CUresult begin(struct gp_client *c)
{
	CUresult r;

	pthread_mutex_lock(&c->lock);
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		pthread_mutex_unlock(&c->lock);
	return r;
}

/* Unpacks the Reply into its result and outputs; hands the message to *keep when asked. */
static CUresult finish_reply(struct gp_client *c, unsigned type, const struct gp_frame_hdr *h,
			     uint64_t *out, size_t nout, bool short_bulk, Gp__Reply **keep)
{
	Gp__Reply *rep = gp__reply__unpack(NULL, h->msg_len, c->conn->msg);
	const char *what = gp_msg_name(type);
	CUresult r;

	if (!rep)
		return transport_failed(GP_EDECODE, what);
	r = (CUresult)rep->result;
	/* A failed copy stops its DATA early; a successful one brought every byte. */
	if (r == CUDA_SUCCESS && (rep->n_out < nout || short_bulk)) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return transport_failed(GP_EFRAME, what);
	}
	for (size_t i = 0; r == CUDA_SUCCESS && i < nout; i++)
		out[i] = rep->out[i];
	if (rep->message && *rep->message)
		gp_log_info("%s: %s", what, rep->message);
	r = merge_deferred(c, type, r, rep->deferred);
	if (keep && r == CUDA_SUCCESS)
		*keep = rep;
	else
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	return r;
}

CUresult gp__rpc(unsigned type, unsigned flags, const Gp__Call *call, const struct gp_bulk_ref *b,
		 uint64_t *out, size_t nout, Gp__Reply **keep)
{
	struct gp_client *c = &gp__client;
	const struct gp_call_info *ci = gp_call_info(type);
	struct exchange x = {.type = type, .flags = flags, .msg = &call->base, .bulk = b};
	const char *what = gp_msg_name(type);
	struct gp_frame_hdr h;
	uint64_t got;
	CUresult r;
	int ret;

	/* Only what CUDA defines as asynchronous may go without an answer. */
	assert(ci && (!(flags & GP_F_NO_REPLY) || (ci->flags & GP_C_ASYNC)));
	(void)ci;
	if (keep)
		*keep = NULL;
	r = begin(c);
	if (r != CUDA_SUCCESS)
		return r;
	ret = exchange(c, &x, &h, &got);
	if (ret)
		r = transport_failed(ret, what);
	else if (!(flags & GP_F_NO_REPLY))
		r = finish_reply(c, type, &h, out, nout, b->dst && got != b->len, keep);
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* The client's function of each call: gp__rpc_<name>(flags, in, out). */
#define GP__RPC(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)                                 \
	CUresult gp__rpc_##name(unsigned flags, const struct gp_in_##name *in,                   \
				struct gp_out_##name *out)                                       \
	{                                                                                        \
		Gp__Call call = GP__CALL__INIT;                                                  \
		uint64_t args[GP_CALL_ARGS_MAX], o[GP_CALL_OUTS_MAX];                            \
		struct gp_bulk_ref b;                                                            \
		CUresult r;                                                                      \
                                                                                                 \
		gp_call_pack_##name(in, &call, args, &b);                                        \
		r = gp__rpc(GP_MSG_##NAME, flags, &call, &b, o, GP_NOUTS_##NAME, NULL);          \
		if (r == CUDA_SUCCESS && out)                                                    \
			gp_call_outs_##name(o, out);                                             \
		return r;                                                                        \
	}
GP_CALL_MAP(GP__RPC)
#undef GP__RPC

/* Copies the function list of a load's reply into the client's module. */
static CUresult take_functions(struct gp_imodule *mod, const Gp__Reply *rep)
{
	mod->funcs = calloc(rep->n_function ? rep->n_function : 1, sizeof(*mod->funcs));
	if (!mod->funcs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < rep->n_function; i++) {
		const Gp__Function *src = rep->function[i];
		struct gp_ifunc *f = &mod->funcs[i];
		uint32_t n = (uint32_t)src->n_param;

		f->magic = GP_MAGIC_FUNC;
		f->remote = src->handle;
		f->module = mod;
		f->name = strdup(src->name);
		for (size_t a = 0; a < src->n_attribute && a < CU_FUNC_ATTRIBUTE_MAX; a++)
			f->attr[a] = src->attribute[a];
		f->offset = calloc(n ? n : 1, sizeof(uint32_t));
		f->size = calloc(n ? n : 1, sizeof(uint32_t));
		mod->nfuncs = (uint32_t)i + 1;
		if (!f->name || !f->offset || !f->size)
			return CUDA_ERROR_OUT_OF_MEMORY;
		f->nparams = n;
		for (uint32_t k = 0; k < n; k++) {
			f->offset[k] = src->param[k]->offset;
			f->size[k] = src->param[k]->size;
			if (f->offset[k] + f->size[k] > f->param_bytes)
				f->param_bytes = f->offset[k] + f->size[k];
		}
	}
	return CUDA_SUCCESS;
}

CUresult gp__image_load(bool library, uint64_t ctx, const void *image, size_t len,
			struct gp_imodule *mod)
{
	Gp__Call call = GP__CALL__INIT;
	uint64_t args[GP_CALL_ARGS_MAX], out[GP_CALL_OUTS_MAX];
	struct gp_bulk_ref b;
	Gp__Reply *rep;
	CUresult r;

	if (library) {
		struct gp_in_library_load in = {.ctx = ctx, .image = image, .image_len = len};

		gp_call_pack_library_load(&in, &call, args, &b);
		r = gp__rpc(GP_MSG_LIBRARY_LOAD, 0, &call, &b, out, GP_NOUTS_LIBRARY_LOAD, &rep);
	} else {
		struct gp_in_module_load in = {.ctx = ctx, .image = image, .image_len = len};

		gp_call_pack_module_load(&in, &call, args, &b);
		r = gp__rpc(GP_MSG_MODULE_LOAD, 0, &call, &b, out, GP_NOUTS_MODULE_LOAD, &rep);
	}
	if (r != CUDA_SUCCESS)
		return r;
	mod->remote = out[0];
	mod->loaded = true;
	r = take_functions(mod, rep);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return r;
}
