/* client.c -- the interposer's session with the pool: connect, Hello, calls, bulk copies. */
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

	if (!atomic_load_explicit(&c->lost, memory_order_relaxed))
		gp_log_error("connection to the pool lost during %s: %s (%s)", what,
			     c->conn && c->conn->err[0] ? c->conn->err : gp_strerror(err),
			     gp_err_name(err));
	atomic_store_explicit(&c->lost, true, memory_order_relaxed);
	return CUDA_ERROR_DEVICE_UNAVAILABLE;
}

/* Calls that wait for earlier asynchronous work, so may report its failure, as CUDA
 * reports an asynchronous error from the next synchronizing call. */
static bool synchronizes(unsigned type)
{
	switch (type) {
	case GP_MSG_CTX_SYNCHRONIZE:
	case GP_MSG_STREAM_SYNCHRONIZE:
	case GP_MSG_STREAM_QUERY:
	case GP_MSG_EVENT_SYNCHRONIZE:
	case GP_MSG_EVENT_QUERY:
	case GP_MSG_MEMCPY_HTOD:
	case GP_MSG_MEMCPY_DTOH:
	case GP_MSG_MEMCPY_DTOD:
	case GP_MSG_MEMSET:
		return true;
	default:
		return false;
	}
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
	if (r == CUDA_SUCCESS && c->pending != CUDA_SUCCESS && synchronizes(type)) {
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

/*
 * Called without the lock by every entry point, and again under it by begin(). The
 * acquire load pairs with cuInit's release store: once init_tried reads true, ready,
 * init_result and the device snapshot are visible and final. `lost` only ever goes from
 * false to true and carries no data, so a relaxed load will do: a call that misses it here
 * sees it under the lock in begin().
 */
CUresult gp__ready(void)
{
	struct gp_client *c = &gp__client;

	if (!atomic_load_explicit(&c->init_tried, memory_order_acquire))
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!c->ready)
		return c->init_result;
	if (atomic_load_explicit(&c->lost, memory_order_relaxed))
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
		atomic_store_explicit(&gp__client.lost, true, memory_order_relaxed);
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
 * TLS context is made on first need and kept in *ctx.
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
		gp_log_error("pool %s: %s%s", server, c->conn->err, turned_away(c->conn->err));
		return -1;
	}
	return 0;
}

/* Tries one pool: connect, TLS, Hello. CUDA_SUCCESS with the session open and its
 * snapshot taken; otherwise the connection is closed and the reason logged. */
static CUresult try_pool(struct gp_client *c, SSL_CTX **ctx, const char *server)
{
	Gp__Hello hello = GP__HELLO__INIT;
	Gp__HelloReply *rep = NULL;
	CUresult r = CUDA_ERROR_NO_DEVICE;
	char me[256];
	int ret;

	if (open_pool(c, ctx, server))
		goto out_conn;
	fill_hello(&hello, me, sizeof(me));
	if (strncmp(server, "unix:", 5) == 0)
		hello.token = ""; /* the user is the identity there: no secret to send */
	ret = gp_conn_send(c->conn, GP_MSG_HELLO, 0, 0, &hello.base, NULL, 0);
	if (!ret)
		ret = read_hello_reply(c, &rep);
	if (ret) {
		gp_log_error("pool %s: no answer to Hello: %s%s", server,
			     c->conn->err[0] ? c->conn->err : gp_strerror(ret),
			     turned_away(c->conn->err));
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

/*
 * Connects, says Hello and stores the device snapshot. Called by cuInit with the lock
 * held. GPUPOOL_SERVER may list several pools, comma-separated: they are tried in order
 * and the first that admits the session serves it.
 */
CUresult gp__connect(void)
{
	struct gp_client *c = &gp__client;
	const char *servers = getenv("GPUPOOL_SERVER");
	char *list, *save = NULL;
	SSL_CTX *ctx = NULL;
	CUresult r = CUDA_ERROR_NO_DEVICE;

	if (!servers || !*servers) {
		gp_log_error("GPUPOOL_SERVER is not set: no pool to send CUDA calls to");
		return CUDA_ERROR_NO_DEVICE;
	}
	list = strdup(servers);
	if (!list)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (char *s = strtok_r(list, ", ", &save); s; s = strtok_r(NULL, ", ", &save)) {
		r = try_pool(c, &ctx, s);
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY)
			break;
	}
	if (r == CUDA_SUCCESS)
		pthread_atfork(NULL, NULL, after_fork_child);
	free(list);
	SSL_CTX_free(ctx);
	return r;
}

/* ---- calls ---------------------------------------------------------------------- */

/*
 * One request on the wire. The message goes with `bulk` (streamed in chunks), and unless
 * it carries GP_F_NO_REPLY the answer is awaited: DATA frames first when `data` is set
 * (their bytes land there, exactly data_len of them), then a frame of reply_type, whose
 * body is left in c->conn->msg for the caller.
 */
struct exchange {
	unsigned type, flags;
	const ProtobufCMessage *msg;
	const void *bulk;
	size_t bulk_len;
	void *data;
	size_t data_len;
	unsigned reply_type;
};

/* Sends `len` bulk bytes: as many as fit in the request frame, the rest in DATA frames. */
static int send_request(struct gp_client *c, const struct exchange *x, uint64_t id)
{
	const uint8_t *p = x->bulk;
	size_t len = x->bulk_len, first = len < GP_CHUNK_SIZE ? len : GP_CHUNK_SIZE, off = first;
	int ret;

	ret = gp_conn_send(c->conn, x->type, x->flags | (off < len ? GP_F_MORE : 0), id, x->msg, p,
			   first);
	while (!ret && off < len) {
		size_t n = len - off < GP_CHUNK_SIZE ? len - off : GP_CHUNK_SIZE;

		ret = gp_conn_send(c->conn, GP_MSG_DATA, off + n < len ? GP_F_MORE : 0, id, NULL,
				   p + off, n);
		off += n;
	}
	return ret;
}

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

/* Runs one exchange with the lock held. Returns 0 or a transport/protocol code. */
static int exchange(struct gp_client *c, const struct exchange *x, struct gp_frame_hdr *h)
{
	uint64_t id = ++c->next_id, got = 0;
	int ret = send_request(c, x, id);

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
		if (h->request_id != id)
			break;
		if (h->type != GP_MSG_DATA || !x->data)
			break;
		/* Bulk answer: straight into the caller's buffer. */
		if (h->msg_len || h->bulk_len > x->data_len - got)
			return GP_EFRAME;
		ret = gp_conn_read(c->conn, (uint8_t *)x->data + got, h->bulk_len);
		if (ret)
			return ret;
		got += h->bulk_len;
	}
	if (h->type != x->reply_type || h->request_id != id || h->bulk_len) {
		snprintf(c->conn->err, sizeof(c->conn->err),
			 "expected %s for request %llu, got %s for %llu",
			 gp_msg_name(x->reply_type), (unsigned long long)id,
			 gp_msg_name(h->type) ? gp_msg_name(h->type) : "unknown type",
			 (unsigned long long)h->request_id);
		return GP_ETYPE;
	}
	/* A failed copy stops its DATA early; a successful one brought every byte. */
	if (x->data && got != x->data_len) {
		Gp__Reply *rep = gp__reply__unpack(NULL, h->msg_len, c->conn->msg);
		bool failed = rep && rep->result != CUDA_SUCCESS;

		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		if (!failed)
			return GP_EFRAME;
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

/* Unpacks a REPLY body into its result and outputs. */
static CUresult finish_reply(struct gp_client *c, unsigned type, const struct gp_frame_hdr *h,
			     uint64_t *out, size_t nout)
{
	Gp__Reply *rep = gp__reply__unpack(NULL, h->msg_len, c->conn->msg);
	const char *what = gp_msg_name(type);
	CUresult r;

	if (!rep)
		return transport_failed(GP_EDECODE, what);
	r = (CUresult)rep->result;
	if (r == CUDA_SUCCESS && rep->n_out < nout) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return transport_failed(GP_EFRAME, what);
	}
	for (size_t i = 0; r == CUDA_SUCCESS && i < nout; i++)
		out[i] = rep->out[i];
	if (rep->message && *rep->message)
		gp_log_info("%s: %s", what, rep->message);
	r = merge_deferred(c, type, r, rep->deferred);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return r;
}

/* A whole call answered by a REPLY: exchange, then the reply's result and outputs. */
static CUresult call_replied(struct gp_client *c, const struct exchange *x, uint64_t *out,
			     size_t nout)
{
	struct gp_frame_hdr h;
	const char *what = gp_msg_name(x->type);
	CUresult r = begin(c);
	int ret;

	if (r != CUDA_SUCCESS)
		return r;
	ret = exchange(c, x, &h);
	if (ret)
		r = transport_failed(ret, what);
	else if (!(x->flags & GP_F_NO_REPLY))
		r = finish_reply(c, x->type, &h, out, nout);
	pthread_mutex_unlock(&c->lock);
	return r;
}

CUresult gp__call_ex(unsigned type, unsigned flags, const uint64_t *args, size_t nargs,
		     const char *name, uint64_t *out, size_t nout)
{
	Gp__Call call = GP__CALL__INIT;
	struct exchange x = {
		.type = type, .flags = flags, .msg = &call.base, .reply_type = GP_MSG_REPLY};

	call.n_arg = nargs;
	call.arg = (uint64_t *)args;
	call.name = (char *)(name ? name : "");
	return call_replied(&gp__client, &x, out, nout);
}

CUresult gp__call(unsigned type, const uint64_t *args, size_t nargs, uint64_t *out, size_t nout)
{
	return gp__call_ex(type, 0, args, nargs, NULL, out, nout);
}

CUresult gp__call_async(unsigned type, const ProtobufCMessage *msg)
{
	struct exchange x = {.type = type, .flags = GP_F_NO_REPLY, .msg = msg};

	return call_replied(&gp__client, &x, NULL, 0);
}

CUresult gp__copy_to_remote(uint64_t ctx, CUdeviceptr dst, const void *src, size_t len,
			    uint64_t stream, bool async, size_t pitch, size_t width)
{
	uint64_t args[6] = {ctx, dst, len, stream, pitch, width};
	Gp__Call call = GP__CALL__INIT;
	struct exchange x = {.type = GP_MSG_MEMCPY_HTOD,
			     .flags = async ? GP_F_NO_REPLY : 0,
			     .msg = &call.base,
			     .bulk = src,
			     .bulk_len = len,
			     .reply_type = GP_MSG_REPLY};

	call.n_arg = 6;
	call.arg = args;
	return call_replied(&gp__client, &x, NULL, 0);
}

/* DATA frames bring the bytes straight into dst, then the REPLY says how it ended. */
CUresult gp__copy_from_remote(uint64_t ctx, void *dst, CUdeviceptr src, size_t len, uint64_t stream,
			      size_t pitch, size_t width)
{
	uint64_t args[6] = {ctx, src, len, stream, pitch, width};
	Gp__Call call = GP__CALL__INIT;
	struct exchange x = {.type = GP_MSG_MEMCPY_DTOH,
			     .msg = &call.base,
			     .data = dst,
			     .data_len = len,
			     .reply_type = GP_MSG_REPLY};

	call.n_arg = 6;
	call.arg = args;
	return call_replied(&gp__client, &x, NULL, 0);
}

/* Copies the function list of a ModuleLoadReply into the client's module. */
static CUresult take_functions(struct gp_imodule *mod, const Gp__ModuleLoadReply *rep)
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

CUresult gp__image_load(unsigned type, uint64_t ctx, const void *image, size_t len,
			struct gp_imodule *mod)
{
	struct gp_client *c = &gp__client;
	uint64_t args[2] = {ctx, len};
	Gp__Call call = GP__CALL__INIT;
	struct exchange x = {.type = type,
			     .msg = &call.base,
			     .bulk = image,
			     .bulk_len = len,
			     .reply_type = GP_MSG_MODULE_LOAD_REPLY};
	Gp__ModuleLoadReply *rep;
	struct gp_frame_hdr h;
	CUresult r;
	int ret;

	/* MODULE_LOAD: ctx, bytes; LIBRARY_LOAD: bytes, the current context (0: none). */
	if (type == GP_MSG_LIBRARY_LOAD) {
		args[0] = len;
		args[1] = ctx;
	}
	call.n_arg = 2;
	call.arg = args;
	r = begin(c);
	if (r != CUDA_SUCCESS)
		return r;
	ret = exchange(c, &x, &h);
	rep = ret ? NULL : gp__module_load_reply__unpack(NULL, h.msg_len, c->conn->msg);
	if (!rep) {
		r = transport_failed(ret ? ret : GP_EDECODE, gp_msg_name(type));
		goto out_unlock;
	}
	r = (CUresult)rep->result;
	if (r == CUDA_SUCCESS) {
		mod->remote = rep->module;
		mod->loaded = true;
		r = take_functions(mod, rep);
	}
	r = merge_deferred(c, type, r, rep->deferred);
	protobuf_c_message_free_unpacked(&rep->base, NULL);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return r;
}
