/* client.c -- the interposer's session with the pool: connect, Hello, calls, bulk copies. */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gpupool/gpupool.h>

#include "config.h"
#include "error.h"
#include "interposer.h"
#include "log.h"
#include "proof.h"
#include "resolve.h"
#include "slice.h"

#define CONNECT_TIMEOUT_MS 10000

struct gp_client gp__client = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Who reads the connection ("who reads", below), all under gp__client.lock. */
static pthread_cond_t reader_cv; /* the reader thread waits here (CLOCK_MONOTONIC) */
static bool reading;		 /* a thread holds the read token */
static unsigned long activity;	 /* calls sent and frames read by calling threads */
static bool host_fns_given;	 /* a host function was handed over: HOST_CALL may come */
static bool reader_polling;	 /* the reader thread waits in poll(2), not on reader_cv */
static int reader_wake_fd = -1;	 /* an eventfd that ends the reader's poll (wake_reader) */
/* Frames read by waiting calls and by the reader thread, said at exit (GPUPOOL_LOG=debug):
 * tests check that a lone caller reads its own answers. */
static atomic_ulong frames_by_calls, frames_by_reader;

/* With gp__client.lock held: frames may come that no call waits for, the reader reads. */
static void wake_reader(void)
{
	uint64_t one = 1;
	ssize_t w;

	pthread_cond_signal(&reader_cv);
	if (reader_polling) {
		w = write(reader_wake_fd, &one, sizeof(one)); /* full: it is awake anyway */
		(void)w;
	}
}

static void fail_waiters(struct gp_client *c, int err);

/*
 * The one place where transport and protocol failures become a CUresult.
 * Once the connection is broken the session is gone (the worker has freed
 * everything), so every later call fails the same way, like a GPU that fell
 * off the bus: CUDA_ERROR_DEVICE_UNAVAILABLE. Called without the lock; takes it to
 * complete the calls that wait.
 */
static CUresult transport_failed(int err, const char *what)
{
	struct gp_client *c = &gp__client;
	bool first;

	first = !atomic_exchange_explicit(&c->lost, true, memory_order_relaxed);
	/* The session is over: the worker sees it at once, whatever was half sent. */
	if (first && c->conn && c->conn->fd >= 0)
		shutdown(c->conn->fd, SHUT_RDWR);
	if (first) {
		char why[sizeof(c->conn->err)];
		const char *e = c->conn ? gp_conn_error(c->conn, why, sizeof(why)) : "";

		gp_log_error("connection to the pool lost during %s: %s (%s)", what,
			     e[0] ? e : gp_strerror(err), gp_err_name(err));
	}
	/* No call may wait for an answer that cannot come: each is completed now, or by the
	 * token's holder when it puts the token down (its read fails on the shut socket). */
	pthread_mutex_lock(&c->lock);
	fail_waiters(c, err);
	pthread_mutex_unlock(&c->lock);
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

/*
 * Called without the lock by every entry point. The acquire load pairs with cuInit's
 * release store: once init_tried reads true, ready, init_result and the device snapshot
 * are visible and final. `lost` only ever goes from false to true and carries no data, so
 * a relaxed load will do: a call that misses it here sees it under the lock in gp__rpc().
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
	if (atomic_load_explicit(&c->said_goodbye, memory_order_acquire))
		return CUDA_ERROR_DEINITIALIZED;
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
	gp__client.waiting = NULL; /* their threads are the parent's */
	reading = false;
	reader_polling = false; /* the parent's reader: its eventfd is the parent's too */
	if (gp__client.ready)
		atomic_store_explicit(&gp__client.lost, true, memory_order_relaxed);
	pthread_mutex_init(&gp__client.lock, NULL);
}

/*
 * At exit(): tells the worker the program ended the session itself, so that the pool's
 * accounting record says "client_closed" and not "client_gone" (killed, crashed). Only when
 * no other thread is in the middle of a frame (the send lock is free): a program's exit must
 * never wait here. Everything batched before it goes first. A forked child has no session.
 */
static void say_goodbye(void)
{
	struct gp_client *c = &gp__client;
	struct gp_conn *conn = c->conn;

	if (!conn || !c->ready || atomic_load_explicit(&c->lost, memory_order_relaxed))
		return;
	gp_log_debug("frames read: %lu by waiting calls, %lu by the reader thread",
		     atomic_load_explicit(&frames_by_calls, memory_order_relaxed),
		     atomic_load_explicit(&frames_by_reader, memory_order_relaxed));
	if (conn->concurrent && pthread_mutex_trylock(&conn->send) != 0)
		return;
	atomic_store_explicit(&c->said_goodbye, true, memory_order_release);
	if (gp_conn_send(conn, GP_MSG_GOODBYE, 0, 0, NULL, NULL, 0) == 0)
		gp_conn_flush(conn);
	if (conn->concurrent)
		pthread_mutex_unlock(&conn->send);
}

/*
 * The pool's TENANT_CHALLENGE (src/proof.h), which comes before HelloReply when this client
 * presented a certificate: sign the supervisor's nonce, bound to this TLS connection, with
 * the certificate's key, and send the TENANT_PROOF. Returns 0, or an error with conn->err set.
 */
static int answer_challenge(struct gp_client *c, const struct gp_frame_hdr *h)
{
	Gp__TenantChallenge *ch;
	Gp__TenantProof tp = GP__TENANT_PROOF__INIT;
	uint8_t exporter[GP_PROOF_EXPORTER_LEN];
	EVP_PKEY *key = c->conn->ssl ? SSL_get_privatekey(c->conn->ssl) : NULL;
	uint8_t *sig = NULL;
	size_t siglen = 0;
	int ret = GP_EREFUSED;

	if (h->bulk_len)
		return GP_ETYPE;
	ch = (Gp__TenantChallenge *)gp_msg_unpack(h->type, c->conn->msg, h->msg_len);
	if (!ch)
		return GP_EDECODE;
	if (ch->nonce.len != GP_PROOF_NONCE_LEN) {
		snprintf(c->conn->err, sizeof(c->conn->err),
			 "the pool's tenant challenge has a %zu-byte nonce", ch->nonce.len);
	} else if (!key) {
		snprintf(c->conn->err, sizeof(c->conn->err),
			 "the pool asked for a tenant proof, and no GPUPOOL_KEY is loaded");
	} else if (gp_proof_exporter(c->conn->ssl, exporter)) {
		snprintf(c->conn->err, sizeof(c->conn->err),
			 "no TLS exporter for the tenant proof");
	} else if (gp_proof_sign(key, ch->nonce.data, exporter, &sig, &siglen, c->conn->err,
				 sizeof(c->conn->err)) == 0) {
		tp.signature.data = sig;
		tp.signature.len = siglen;
		ret = gp_conn_send(c->conn, GP_MSG_TENANT_PROOF, 0, 0, &tp.base, NULL, 0);
		if (!ret)
			ret = gp_conn_flush(c->conn);
	}
	OPENSSL_free(sig);
	protobuf_c_message_free_unpacked(&ch->base, NULL);
	return ret;
}

static int read_hello_reply(struct gp_client *c, Gp__HelloReply **out)
{
	struct gp_frame_hdr h;
	int ret = gp_conn_recv(c->conn, &h);

	if (!ret && h.type == GP_MSG_TENANT_CHALLENGE) {
		ret = answer_challenge(c, &h);
		if (!ret)
			ret = gp_conn_recv(c->conn, &h);
	}
	if (ret)
		return ret;
	if (h.type != GP_MSG_HELLO_REPLY || h.bulk_len)
		return GP_ETYPE;
	*out = (Gp__HelloReply *)gp_msg_unpack(h.type, c->conn->msg, h.msg_len);
	return *out ? 0 : GP_EDECODE;
}

/* Device features the interposer answers CUDA_ERROR_NOT_SUPPORTED for. */
static const CUdevice_attribute not_forwarded[] = {
	/* managed memory is forwarded (managed.c), but the host must not touch it while
	 * kernels run, and only through this process's copy of its pages */
	CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
	CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
	CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
	CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
	CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
	CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH,
	/* VMM is forwarded (api_vmm.c), but not export handles, GPUDirect RDMA, host-located
	 * allocations or multicast */
	CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED,
	/* memory pools are forwarded (api_mempool.c), but not shareable or host-located ones */
	CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
	CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED,
	/* arrays, textures and surfaces are forwarded (api_array.c), but not sparse or
	 * deferred-mapping arrays */
	CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED,
	CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
};

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
		/* What the pool's device can do but the pool does not forward is reported absent,
		 * so programs skip it instead of failing on it (docs/conformance.md). */
		for (size_t k = 0; k < sizeof(not_forwarded) / sizeof(not_forwarded[0]); k++)
			d->attr[not_forwarded[k]] = 0;
		/* Mapped page-locked memory is the pool's managed memory (managed.c). */
		d->attr[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] =
			d->attr[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] ? 1 : 0;
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

/* GPUPOOL_PRIORITY (0-9) in *priority and true, or false when unset or not one (said when
 * warn). */
bool gp__priority_asked(bool warn, int32_t *priority)
{
	const char *s = getenv("GPUPOOL_PRIORITY"); /* 0-9, capped by the tenant's */

	*priority = 0;
	if (!s || !*s)
		return false;
	if (s[0] >= '0' && s[0] <= '9' && s[1] == '\0') {
		*priority = s[0] - '0';
		return true;
	}
	if (warn)
		gp_log_warnx("GPUPOOL_PRIORITY=%s: expected 0 to 9; asking for none (its tenant's)",
			     s);
	return false;
}

/* GPUPOOL_COMPUTE as a percent (1-100), or 0 when unset or not a share (said when warn). */
uint32_t gp__compute_asked(bool warn)
{
	const char *s = getenv("GPUPOOL_COMPUTE");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 0;
	v = strtoul(s, &end, 10);
	if (*end == '%')
		end++;
	if (!isdigit((unsigned char)*s) || *end || v < 1 || v > 100) {
		if (warn)
			gp_log_warnx(
				"GPUPOOL_COMPUTE=%s is not a share of 1%% to 100%%; asking for "
				"none",
				s);
		return 0;
	}
	return (uint32_t)v;
}

static void fill_hello(Gp__Hello *hello, char *host, size_t hostlen)
{
	uint64_t mem = 0;
	const char *s;

	hello->protocol_version = GP_PROTOCOL_VERSION;
	hello->cuda_version = CUDA_VERSION;
	hello->stderr_output = true;
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
	hello->compute = gp__compute_asked(true);
	s = getenv("GPUPOOL_PREEMPTIBLE");
	if (s && *s && strcmp(s, "1") != 0 && strcmp(s, "0") != 0)
		gp_log_warnx("GPUPOOL_PREEMPTIBLE=%s: expected 1 or 0; not preemptible", s);
	hello->preemptible = s && strcmp(s, "1") == 0;
	hello->priority_set = gp__priority_asked(true, &hello->priority);
	s = getenv("GPUPOOL_TOKEN");
	hello->token = (char *)(s ? s : "");
	hello->tenant_proof = true;  /* answer_challenge */
	s = getenv("GPUPOOL_SLICE"); /* checked by gp__connect */
	hello->slice = (char *)(s ? s : "");
	s = getenv("GPUPOOL_VA_WINDOW"); /* test hook (docs/operations.md), checked by the pool */
	if (s && *s) {
		unsigned long k = strtoul(s, NULL, 10);

		/* past 32 bits it is no window either: the pool refuses it, never a wrapped one */
		hello->va_window = k > UINT32_MAX ? UINT32_MAX : (uint32_t)k;
	}
}

/* A pool turns a connection away by closing it (full, or shutting down): a hint for that. */
static const char *turned_away(const char *err)
{
	return strstr(err, "closed by") || strstr(err, "reset by peer")
		       ? " (the pool may be full or shutting down; its log says)"
		       : "";
}

/*
 * Opens the connection to one candidate of GPUPOOL_SERVER (src/resolve.h): an address
 * with TLS, which checks the certificate for the name the candidate came from; a Unix
 * socket; or a plain address (only when the entry says plain:). The TLS context is made
 * on first need and kept in *ctx. 0: open; 1: the pool closed it during TLS (busy); -1:
 * failed, the reason logged.
 */
static int open_pool(struct gp_client *c, SSL_CTX **ctx, const struct gp_endpoint *ep)
{
	char err[512];
	int fd;

	if (ep->kind == GP_EP_UNIX)
		fd = gp_unix_connect(ep->name, CONNECT_TIMEOUT_MS, err, sizeof(err));
	else
		fd = gp_tcp_connect(ep->addr, CONNECT_TIMEOUT_MS, err, sizeof(err));
	if (fd < 0) {
		if (ep->kind == GP_EP_UNIX || strcmp(ep->entry, ep->addr) == 0)
			gp_log_error("pool unreachable: %s", err);
		else /* one of the addresses a name stands for */
			gp_log_error("pool unreachable: %s (%s)", err, ep->entry);
		return -1;
	}
	c->conn = gp_conn_new(fd);
	if (!c->conn) {
		close(fd);
		return -1;
	}
	gp_log_debug("setup: connected to %s", ep->kind == GP_EP_UNIX ? ep->name : ep->addr);
	if (ep->kind != GP_EP_TLS)
		return 0;
	if (!*ctx) {
		*ctx = gp_tls_client_ctx_new(getenv("GPUPOOL_CA"), getenv("GPUPOOL_CERT"),
					     getenv("GPUPOOL_KEY"), err, sizeof(err));
		if (!*ctx) {
			gp_log_error("TLS setup: %s", err);
			return -1;
		}
		gp_log_debug("setup: TLS context made");
	}
	if (gp_conn_tls_connect(c->conn, *ctx, ep->name)) {
		if (*turned_away(c->conn->err)) {
			gp_log_debug("pool %s (%s): %s during TLS", ep->entry, ep->addr,
				     c->conn->err);
			return 1; /* busy: gp__connect tries again */
		}
		/* The pool's answer to TLS on a listener without it (worker.c wrong_kind). */
		gp_log_error("pool %s (%s): %s%s", ep->entry, ep->addr, c->conn->err,
			     strstr(c->conn->err, "alert protocol version")
				     ? " (a listener without TLS? then name it plain:HOST:PORT)"
				     : "");
		return -1;
	}
	gp_log_debug("setup: TLS handshake done%s",
		     SSL_session_reused(c->conn->ssl) ? " (session resumed)" : "");
	return 0;
}

/* Tries one pool: connect, TLS, Hello. CUDA_SUCCESS with the session open and its
 * snapshot taken; otherwise the connection is closed and the reason logged, or when the
 * pool closed it before answering Hello (it was busy), *busy set for gp__connect. */
static CUresult try_pool(struct gp_client *c, SSL_CTX **ctx, const struct gp_endpoint *ep,
			 bool no_wait, bool *busy)
{
	const char *server = ep->kind == GP_EP_UNIX ? ep->entry : ep->addr;
	Gp__Hello hello = GP__HELLO__INIT;
	Gp__HelloReply *rep = NULL;
	CUresult r = CUDA_ERROR_NO_DEVICE;
	char me[256];
	int ret;

	*busy = false;
	ret = open_pool(c, ctx, ep);
	if (ret) {
		*busy = ret > 0;
		goto out_conn;
	}
	fill_hello(&hello, me, sizeof(me));
	hello.no_wait = no_wait;
	if (ep->kind == GP_EP_UNIX)
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
 * held. GPUPOOL_SERVER may list several pools, comma-separated, and each entry may be a
 * name with several addresses or an SRV name (src/resolve.h): the candidates are tried in
 * that order and the first that admits the session serves it. A pool that closes the
 * connection before answering Hello is busy, not refusing (a burst past its handshake
 * budget, or max_sessions): the names are resolved and the candidates tried again after a
 * jittered, doubling pause until GPUPOOL_CONNECT_TIMEOUT seconds have passed. Only
 * admission's own answers are final.
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
	{
		struct gp_slice sl;
		char why[512];

		/* A slice the pool could never read is the program's mistake: no pool is asked. */
		if (gp_slice_parse(getenv("GPUPOOL_SLICE"), &sl, why, sizeof(why))) {
			gp_log_error("%s", why);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	gp_log_debug("setup: connecting to %s", servers);
	seed = (uint32_t)getpid() * 2654435761u ^ (uint32_t)t0.tv_nsec;
	for (;;) {
		struct gp_endpoints cands = {0};
		char err[1024];
		bool busy = false;
		size_t queue_at = 0;
		unsigned ms;
		int e;

		tries++;
		e = gp_resolve(servers, &seed, &cands, err, sizeof(err));
		if (e) {
			gp_log_error("GPUPOOL_SERVER=%s: %s", servers, err);
			r = e == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_NO_DEVICE;
			break;
		}
		e = gp__discover_order(&cands, &ctx, &seed, &queue_at);
		if (e < 0) {
			gp_endpoints_deinit(&cands);
			r = e == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_NO_DEVICE;
			break;
		}
		for (size_t i = 0; i < cands.n; i++) {
			bool b;

			/* Ordered by quotes: each but the last is asked not to queue the session,
			 * so that one that filled up since its quote passes it on; it queues at
			 * one that would preempt for it. */
			r = try_pool(c, &ctx, &cands.v[i],
				     e == 1 && i + 1 < cands.n && i != queue_at, &b);
			busy |= b;
			if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY)
				break;
		}
		gp_endpoints_deinit(&cands);
		if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY || !busy)
			break;
		/* Half the delay either way, so a burst of clients does not come back as one. */
		ms = delay / 2 + gp__rand(&seed) % (delay + 1);
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
	if (r == CUDA_SUCCESS && gp__reader_start(c)) {
		gp_log_error("cannot start the thread that reads the pool's answers");
		gp_conn_free(c->conn);
		c->conn = NULL;
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS) {
		pthread_atfork(NULL, NULL, after_fork_child);
		atexit(say_goodbye);
	}
	SSL_CTX_free(ctx);
	return r;
}

/* ---- calls ---------------------------------------------------------------------- */

/*
 * A call waiting for its answer: registered before its request is sent, completed by the
 * reader thread (the Reply, and before it the BULK_OUT bytes, straight into dst). Lives on
 * the waiting thread's stack; in c->waiting while incomplete, under c->lock.
 */
struct waiter {
	uint64_t id;
	pthread_cond_t done_cv;
	bool done, data_seen;
	int err;	/* the connection failed before the answer came */
	Gp__Reply *rep; /* the answer, for the waiter to free */
	void *dst;	/* BULK_OUT: where the bytes land, at most dst_len of them */
	uint64_t dst_len, got;
	bool detached; /* nobody waits: the reader completes and frees it (gp__rpc_later) */
	bool sleeping; /* its thread is in pthread_cond_wait on done_cv (c->lock) */
	unsigned type;
	struct waiter *next;
};

static pthread_cond_t detached_cv = PTHREAD_COND_INITIALIZER;
static unsigned detached; /* calls nobody waits for, not yet answered (gp__client.lock) */

/* The waiter of request id, unlinked when `take` (with c->lock held). */
static struct waiter *find_waiter(struct gp_client *c, uint64_t id, bool take)
{
	for (struct waiter **pw = &c->waiting; *pw; pw = &(*pw)->next) {
		struct waiter *wt = *pw;

		if (wt->id != id)
			continue;
		if (take)
			*pw = wt->next;
		return wt;
	}
	return NULL;
}

/*
 * Writes to stdout without raising SIGPIPE in the program when nobody reads it: the signal
 * is blocked around the write and one it raised is taken back (the way libpq does). A
 * closed stdout drops the output; the session goes on.
 */
static void write_out(int fd, const uint8_t *p, size_t n)
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
		ssize_t w = write(fd, p, n);

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
/* What the pool's driver wrote to stdout (fd 1) or stderr (fd 2), to this process's. */
static int print_output(struct gp_client *c, uint32_t n, int fd)
{
	uint8_t buf[8192];
	int ret = 0;

	fflush(fd == STDOUT_FILENO ? stdout : stderr);
	while (!ret && n > 0) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		ret = gp_conn_read(c->conn, buf, k);
		if (!ret)
			write_out(fd, buf, k);
		n -= (uint32_t)k;
	}
	return ret;
}

/*
 * With c->lock held, once the connection is lost: completes every waiter with err, so that
 * no call waits for an answer that cannot come. Only while nobody holds the read token: the
 * holder may be writing a waiter's bulk answer into its buffer (and the waiter, completed,
 * would return and take its buffer and its stack away), so it is the holder that completes
 * them when it puts the token down (read_with_token), its read failing on the shut socket.
 */
static void fail_waiters(struct gp_client *c, int err)
{
	atomic_store_explicit(&c->lost, true, memory_order_relaxed);
	if (reading)
		return;
	pthread_cond_broadcast(&detached_cv); /* gp__detached_drain gives up on a lost session */
	while (c->waiting) {
		struct waiter *wt = c->waiting;

		c->waiting = wt->next;
		if (wt->detached) {
			free(wt);
			if (--detached == 0)
				pthread_cond_broadcast(&detached_cv);
			continue;
		}
		wt->err = err;
		wt->done = true;
		pthread_cond_signal(&wt->done_cv);
	}
}

/* The answer to a call nobody waits for (gp__rpc_later): its failure is kept, as an
 * asynchronous call's, for the next synchronizing call. With c->lock held. */
void gp__detached_drain(void)
{
	struct gp_client *c = &gp__client;

	pthread_mutex_lock(&c->lock);
	while (detached && !c->lost)
		pthread_cond_wait(&detached_cv, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

static int complete_detached(struct gp_client *c, struct waiter *wt, Gp__Reply *rep)
{
	CUresult r = (CUresult)rep->result;
	int ret = 0;

	if (r == CUDA_SUCCESS && wt->dst && wt->got != wt->dst_len)
		ret = GP_EFRAME; /* a copy that succeeded brought every byte */
	merge_deferred(c, wt->type, CUDA_SUCCESS, rep->deferred);
	if (r != CUDA_SUCCESS && c->pending == CUDA_SUCCESS)
		c->pending = r;
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	free(wt);
	if (--detached == 0)
		pthread_cond_broadcast(&detached_cv);
	return ret;
}

/* ---- host functions ---------------------------------------------------------------
 * The worker sends HOST_CALL when a stream reaches a host function of this process, and
 * the stream waits until HOST_DONE comes back. They run, in the order they come, on a
 * thread of ours (started on first need): never on the reader, which must go on
 * delivering answers (a host function may wait for what the caller does next).
 *
 * Two more kinds move client memory for graphs (api_graph.c's tokens): a fetch (kind 2)
 * answers HOST_DONE with the token's bytes, read now; a push (kind 3) brings the bytes
 * with the HOST_CALL, and the reader writes them to the token's memory before HOST_DONE
 * is queued. A token, direction or size that does not match ends the session. */

struct host_call {
	uint64_t id, fn, data, stream;
	uint32_t kind;
	CUresult status;
	struct gp_cmem mem; /* kinds 2 and 3 */
	struct host_call *next;
};

/* Rows of client memory as one packed transfer (gp_bulk's read and write callbacks); a
 * read packs each chunk's rows into buf (GP_CHUNK_SIZE bytes). */
struct cmem_io {
	struct gp_cmem *m;
	uint8_t *buf;
};

static const uint8_t *cmem_read(void *arg, uint64_t off, size_t n, int *err)
{
	struct cmem_io *io = arg;
	struct gp_cmem *m = io->m;

	if (!io->buf || n > GP_CHUNK_SIZE) {
		*err = io->buf ? -EINVAL : -ENOMEM; /* the transfer ends early */
		return NULL;
	}
	for (size_t done = 0; done < n;) {
		uint64_t row = (off + done) / m->width, col = (off + done) % m->width;
		size_t k = m->width - col < n - done ? m->width - col : n - done;

		memcpy(io->buf + done, m->addr + row * m->pitch + col, k);
		done += k;
	}
	return io->buf;
}

static int cmem_write(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	struct gp_cmem *m = ((struct cmem_io *)arg)->m;

	while (n) {
		uint64_t row = off / m->width, col = off % m->width;
		size_t k = m->width - col < n ? m->width - col : n;

		gp__managed_write(m->addr + row * m->pitch + col, p, k);
		off += k;
		p += k;
		n -= k;
	}
	return 0;
}

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t host_cv = PTHREAD_COND_INITIALIZER;
static struct host_call *host_head, **host_tail = &host_head;
static bool host_thread_started;

static void *host_thread(void *arg)
{
	struct gp_client *c = arg;

	gp__managed_thread_faults(); /* program code runs here */

	for (;;) {
		struct host_call *hc;
		int ret;

		pthread_mutex_lock(&host_lock);
		while (!host_head)
			pthread_cond_wait(&host_cv, &host_lock);
		hc = host_head;
		host_head = hc->next;
		if (!host_head)
			host_tail = &host_head;
		pthread_mutex_unlock(&host_lock);
		/* A host function sees managed memory as its stream's earlier work left it, and
		 * its own writes reach the pool before HOST_DONE lets the stream go on. */
		if (hc->kind <= 1)
			gp__managed_pull();
		if (hc->kind == 0)
			((CUhostFn)(uintptr_t)hc->fn)((void *)(uintptr_t)hc->data);
		else if (hc->kind == 1)
			((CUstreamCallback)(uintptr_t)hc->fn)((CUstream)(uintptr_t)hc->stream,
							      hc->status,
							      (void *)(uintptr_t)hc->data);
		if (hc->kind <= 1)
			gp__managed_push();
		gp_conn_send_lock(c->conn);
		if (hc->kind == 2) {
			/* a fetch: the bytes as they are now, packed */
			struct cmem_io io = {.m = &hc->mem};
			struct gp_bulk_source src = {.read = cmem_read, .arg = &io};

			/* out of memory the transfer ends early, and the worker ends the session */
			if (hc->mem.pitch == hc->mem.width)
				src = (struct gp_bulk_source){.src = hc->mem.addr};
			else
				io.buf = malloc(GP_CHUNK_SIZE);
			ret = gp_bulk_send(c->conn, GP_MSG_HOST_DONE, 0, hc->id, NULL,
					   hc->mem.width * hc->mem.height, &src);
			free(io.buf);
		} else {
			ret = gp_conn_send(c->conn, GP_MSG_HOST_DONE, 0, hc->id, NULL, NULL, 0);
		}
		if (!ret)
			ret = gp_conn_flush(c->conn);
		gp_conn_send_unlock(c->conn);
		free(hc);
		if (ret)
			transport_failed(ret, "a host function's answer");
	}
	return NULL;
}

/* The host functions this process has handed to the pool (under host_lock): a HOST_CALL
 * may only ask for one of them, so a peer that can forge frames cannot make this process
 * call an address of its choosing. */
static uint64_t (*host_fns)[2]; /* function, argument */
static size_t n_host_fns, cap_host_fns;

void gp__host_fn_allow(uint64_t fn, uint64_t data)
{
	pthread_mutex_lock(&host_lock);
	for (size_t i = 0; i < n_host_fns; i++) {
		if (host_fns[i][0] == fn && host_fns[i][1] == data) {
			pthread_mutex_unlock(&host_lock);
			return;
		}
	}
	if (n_host_fns == cap_host_fns) {
		size_t ncap = cap_host_fns ? 2 * cap_host_fns : 16;
		uint64_t(*nf)[2] = realloc(host_fns, ncap * sizeof(*nf));

		if (!nf) {
			pthread_mutex_unlock(&host_lock);
			return; /* its HOST_CALL will be refused: the session ends, not worse */
		}
		host_fns = nf;
		cap_host_fns = ncap;
	}
	host_fns[n_host_fns][0] = fn;
	host_fns[n_host_fns][1] = data;
	n_host_fns++;
	pthread_mutex_unlock(&host_lock);
	/* From now on HOST_CALL may come while no call waits: the reader thread reads. */
	pthread_mutex_lock(&gp__client.lock);
	if (!host_fns_given) {
		host_fns_given = true;
		if (!reading)
			wake_reader();
	}
	pthread_mutex_unlock(&gp__client.lock);
}

/* With host_lock held. */
static bool host_fn_allowed(uint64_t fn, uint64_t data)
{
	bool ok = false;

	for (size_t i = 0; i < n_host_fns && !ok; i++)
		ok = host_fns[i][0] == fn && host_fns[i][1] == data;
	return ok;
}

/* Queues a HOST_CALL for the host-function thread. Returns 0 or a protocol code. */
static int host_call(struct gp_client *c, const struct gp_frame_hdr *h)
{
	Gp__Call *call = gp__call__unpack(NULL, h->msg_len, c->conn->msg);
	struct host_call *hc = NULL;
	struct gp_cmem mem = {0};
	sigset_t all, old;
	pthread_t t;
	int ret = 0;

	if (!call || call->n_arg != 5 || call->arg[3] > 3 || !call->arg[0] ||
	    (call->arg[3] >= 2 &&
	     !gp__cmem_get(call->arg[0], call->arg[3] == 2, call->arg[1], &mem))) {
		ret = GP_EDECODE;
		goto out;
	}
	if ((h->bulk_len || (h->flags & GP_F_MORE)) && call->arg[3] != 3) {
		ret = GP_EDECODE;
		goto out;
	}
	if (call->arg[3] == 3) {
		/* a push: the bytes land in the token's memory before HOST_DONE goes back */
		struct cmem_io io = {.m = &mem};
		struct gp_bulk_sink sink = {.write = cmem_write, .arg = &io};
		/* In place only into memory no page of which may be write-protected. */
		bool direct = mem.pitch == mem.width &&
			      !gp__managed_holds(mem.addr, mem.width * mem.height);
		uint8_t *staging = direct ? NULL : malloc(GP_CHUNK_SIZE);
		bool usable = direct || staging;

		if (direct)
			sink = (struct gp_bulk_sink){.dst = mem.addr};
		else if (!staging)
			sink = (struct gp_bulk_sink){0}; /* dropped: the session ends below */
		sink.staging = staging;
		ret = gp_bulk_recv(c->conn, h, mem.width * mem.height, &sink);
		free(staging);
		if (!ret && !usable)
			ret = -ENOMEM;
		if (!ret && sink.got != mem.width * mem.height)
			ret = GP_EDECODE;
		if (ret)
			goto out;
	}
	hc = calloc(1, sizeof(*hc));
	if (!hc) {
		ret = -ENOMEM;
		goto out;
	}
	*hc = (struct host_call){.id = h->request_id,
				 .fn = call->arg[0],
				 .data = call->arg[1],
				 .stream = call->arg[2],
				 .kind = (uint32_t)call->arg[3],
				 .status = (CUresult)call->arg[4],
				 .mem = mem};
	pthread_mutex_lock(&host_lock);
	if (hc->kind <= 1 && !host_fn_allowed(hc->fn, hc->data)) {
		pthread_mutex_unlock(&host_lock);
		gp_conn_set_err(c->conn, "HOST_CALL for a function this process never handed over");
		ret = GP_EDECODE;
		goto out;
	}
	if (!host_thread_started) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		host_thread_started = pthread_create(&t, NULL, host_thread, c) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (host_thread_started)
			pthread_detach(t);
	}
	if (host_thread_started) {
		*host_tail = hc;
		host_tail = &hc->next;
		pthread_cond_signal(&host_cv);
		hc = NULL;
	} else {
		ret = -EAGAIN;
	}
	pthread_mutex_unlock(&host_lock);
out:
	free(hc);
	if (call)
		protobuf_c_message_free_unpacked(&call->base, NULL);
	return ret;
}

/*
 * Reads one frame from the worker and delivers it: output to stdout in order, a HOST_CALL
 * to the host-function thread, bulk answers into the buffer their waiter named, a reply to
 * its waiter. Called by whichever thread holds the read token (below), without c->lock.
 * Returns 0, or why the session ends: a frame nobody waits for, or that breaks the
 * protocol, ends it as a failed read does.
 */
/* The staging buffer of bulk into managed memory: the read token's holder's, kept. */
static uint8_t *recv_staging;

static int managed_sink(void *arg, uint64_t off, const uint8_t *p, size_t n)
{
	gp__managed_write((uint8_t *)arg + off, p, n);
	return 0;
}

static int read_frame(struct gp_client *c)
{
	struct gp_frame_hdr h;
	struct waiter *wt;
	Gp__Reply *rep;
	int ret;

	ret = gp_conn_recv(c->conn, &h);
	if (ret)
		return ret;
	if ((h.type == GP_MSG_OUTPUT || h.type == GP_MSG_OUTPUT_ERR) && !h.msg_len) {
		/* What the kernels printed (stdout) or the driver said (stderr: device
		 * asserts), for this process's, in order. */
		return print_output(c, h.bulk_len,
				    h.type == GP_MSG_OUTPUT ? STDOUT_FILENO : STDERR_FILENO);
	}
	if (h.type == GP_MSG_HOST_CALL)
		return host_call(c, &h);
	if (h.type == GP_MSG_DATA) {
		struct gp_bulk_sink sink = {0};

		pthread_mutex_lock(&c->lock);
		wt = find_waiter(c, h.request_id, false);
		if (wt && wt->dst && !wt->data_seen) {
			wt->data_seen = true;
			sink.dst = wt->dst;
		}
		pthread_mutex_unlock(&c->lock);
		if (sink.dst && gp__managed_holds(sink.dst, wt->dst_len)) {
			/* Managed memory may be write-protected, now or by a push before the
			 * bytes come: staged, and put there by gp__managed_write. */
			if (!recv_staging)
				recv_staging = malloc(GP_CHUNK_SIZE);
			if (!recv_staging) {
				gp_conn_set_err(c->conn,
						"out of memory for a copy into managed memory");
				return -ENOMEM;
			}
			sink = (struct gp_bulk_sink){
				.write = managed_sink, .arg = sink.dst, .staging = recv_staging};
		}
		if (!sink.dst && !sink.write) {
			gp_conn_set_err(c->conn, "bulk for request %llu, which expects none",
					(unsigned long long)h.request_id);
			return GP_ETYPE;
		}
		/* The waiter stays registered until its Reply, which only a reader (this
		 * thread, now) delivers: its buffer is ours meanwhile. */
		ret = gp_bulk_recv(c->conn, &h, wt->dst_len, &sink);
		if (!ret)
			wt->got = sink.got;
		return ret;
	}
	rep = h.type == GP_MSG_REPLY && !h.bulk_len
		      ? gp__reply__unpack(NULL, h.msg_len, c->conn->msg)
		      : NULL;
	pthread_mutex_lock(&c->lock);
	wt = rep ? find_waiter(c, h.request_id, true) : NULL;
	if (wt && wt->detached) {
		ret = complete_detached(c, wt, rep);
		pthread_mutex_unlock(&c->lock);
		return ret;
	}
	if (wt) {
		wt->rep = rep;
		wt->done = true;
		pthread_cond_signal(&wt->done_cv);
	}
	pthread_mutex_unlock(&c->lock);
	if (!wt) {
		if (rep)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		gp_conn_set_err(c->conn, "unexpected %s for request %llu",
				gp_msg_name(h.type) ? gp_msg_name(h.type) : "message type",
				(unsigned long long)h.request_id);
		return rep ? GP_ETYPE : GP_EDECODE;
	}
	return 0;
}

/* ---- who reads: the read token ---------------------------------------------------
 * One thread at a time reads the connection: the one holding the read token (`reading`,
 * under c->lock). A call that waits takes the token itself when nobody holds it and reads
 * until its own answer has come, delivering whatever else arrives on the way (leader and
 * followers): so a lone synchronous call is answered on its own thread, with no thread
 * woken on either side of it. When the leader has its answer it puts the token down and
 * wakes one other call that sleeps waiting (`sleeping`), which takes it up. A call that is
 * registered but still sending is not woken: when it comes to wait it finds the token down
 * and takes it itself, so no hand-off is lost on a thread that was not listening.
 *
 * Frames can also come when no call waits: a host function's HOST_CALL, the answer to a
 * copy nobody waits for (gp__rpc_later). The reader thread reads those: it takes the
 * token whenever it is down while either can come (`urgent`: a host function was handed
 * over, or such a copy is outstanding). Otherwise it only looks every READ_IDLE_MS (each
 * look that finds calls made since the last doubles the wait, up to READ_BUSY_MS: a program
 * busy with calls reads its own answers, and a look costs its CPU a wake-up), and
 * reads when no call has been made meanwhile and bytes are waiting (nothing else should
 * come unasked: the worker sends what kernels print before the answer to the call that
 * waited), so that a program busy with calls never has its answers handed over. Once a
 * look finds no call made, none waiting and nothing to read, it stops looking and sleeps
 * in poll(2) on the socket (and its eventfd, which wake_reader writes) until bytes come
 * or the session ends; it reads them, as after a look, only once it has taken the token
 * under c->lock, so it never takes bytes from a thread that holds it. An idle program's
 * reader thread is not woken at all.
 *
 * When the connection is lost (transport_failed) every waiter is completed with the
 * failure (fail_waiters): at once when the token is down, else by its holder as it puts
 * the token down, its read bound to fail on the socket transport_failed shut.
 */

#define READ_IDLE_MS 5
#define READ_BUSY_MS 80

/* With c->lock held: frames may come that no call waits for. */
static bool urgent(void)
{
	return detached > 0 || host_fns_given;
}

/* With c->lock held: a call waits for its answer, and so reads it itself (await_answer
 * takes the token whenever it is free, and pass_token wakes a sleeping one). */
static bool call_waits(const struct gp_client *c)
{
	for (const struct waiter *wt = c->waiting; wt; wt = wt->next)
		if (!wt->detached && !wt->done)
			return true;
	return false;
}

/* With c->lock held, after a reader put the token down: wakes the next one, a call that
 * sleeps waiting, else the reader thread when frames may come unasked. A call that waits
 * but does not sleep (still sending) takes the token itself when it comes to wait. */
static void pass_token(struct gp_client *c)
{
	if (reading)
		return;
	for (struct waiter *wt = c->waiting; wt; wt = wt->next) {
		if (wt->sleeping && !wt->done) {
			pthread_cond_signal(&wt->done_cv);
			return;
		}
	}
	if (urgent())
		wake_reader();
}

/* With c->lock held and the token down: bytes wait to be read, in the connection's buffer,
 * OpenSSL's (read-ahead) or the socket. */
static bool frame_came(struct gp_client *c)
{
	struct pollfd pfd = {.fd = c->conn->fd, .events = POLLIN};

	return gp_conn_pending(c->conn) || poll(&pfd, 1, 0) > 0;
}

/* Reads one frame with the token; c->lock held on entry and on return. A failure ends the
 * session; so does a loss another thread saw meanwhile: every waiter is completed with it
 * as the token goes down (and c->lost is set). */
static int read_with_token(struct gp_client *c, bool caller)
{
	int ret;

	reading = true;
	pthread_mutex_unlock(&c->lock);
	ret = read_frame(c);
	if (ret)
		transport_failed(ret, "a read"); /* says so the first time only */
	pthread_mutex_lock(&c->lock);
	reading = false;
	if (atomic_load_explicit(&c->lost, memory_order_relaxed))
		fail_waiters(c, ret ? ret : GP_ECLOSED);
	if (caller)
		activity++;
	atomic_fetch_add_explicit(caller ? &frames_by_calls : &frames_by_reader, 1,
				  memory_order_relaxed);
	return ret;
}

/* Waits for a registered call's answer, reading it (and others') when nobody else does. */
static void await_answer(struct gp_client *c, struct waiter *wt)
{
	pthread_mutex_lock(&c->lock);
	while (!wt->done) {
		if (!reading && atomic_load_explicit(&c->lost, memory_order_relaxed)) {
			fail_waiters(c, GP_ECLOSED); /* completes this one too */
		} else if (!reading) {
			read_with_token(c, true);
		} else {
			wt->sleeping = true;
			pthread_cond_wait(&wt->done_cv, &c->lock);
			wt->sleeping = false;
		}
	}
	pass_token(c);
	pthread_mutex_unlock(&c->lock);
}

/* The reader thread's look after ms, or a wake_reader; with c->lock held. */
static void wait_tick(struct gp_client *c, unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&reader_cv, &c->lock, &until);
}

/* The idle reader thread's sleep: until bytes come on the socket (or it is shut), or
 * wake_reader writes the eventfd. Only polls, reads nothing; c->lock held on entry and on
 * return, dropped meanwhile. */
static void wait_socket(struct gp_client *c)
{
	struct pollfd pfd[2] = {{.fd = c->conn->fd, .events = POLLIN},
				{.fd = reader_wake_fd, .events = POLLIN}};
	uint64_t n;
	ssize_t r;

	if (gp_conn_pending(c->conn))
		return; /* received already, where the socket does not show it */
	reader_polling = true;
	pthread_mutex_unlock(&c->lock);
	poll(pfd, 2, -1);
	pthread_mutex_lock(&c->lock);
	reader_polling = false;
	r = read(reader_wake_fd, &n, sizeof(n)); /* non-blocking: fails when nothing came */
	(void)r;
}

/* The reader thread: reads when no call does (above). Ends with the session, and sees
 * that no call waits on after it. */
static void *reader(void *arg)
{
	struct gp_client *c = arg;
	bool quiet = false; /* the last look saw no call made, none waiting, nothing to read */
	unsigned tick_ms = READ_IDLE_MS;

	gp__managed_thread_faults(); /* it writes to the program's memory */
	pthread_mutex_lock(&c->lock);
	while (!c->lost) {
		unsigned long seen = activity;

		if (!reading && urgent()) {
			if (read_with_token(c, false))
				break;
			if (!urgent()) /* else it reads on, and the waiting calls stay asleep */
				pass_token(c);
			continue;
		}
		if (quiet && !reading && !c->waiting && reader_wake_fd >= 0)
			wait_socket(c);
		else
			wait_tick(c, tick_ms);
		quiet = false;
		if (reading || c->lost || urgent() || activity != seen || call_waits(c)) {
			/* A call reads, or did lately, or will: look again later. */
			tick_ms = tick_ms * 2 < READ_BUSY_MS ? tick_ms * 2 : READ_BUSY_MS;
			continue;
		}
		tick_ms = READ_IDLE_MS;
		if (!frame_came(c)) {
			quiet = !c->waiting;
			continue;
		}
		/* Idle, and a frame came that no call waits for: read it. */
		if (read_with_token(c, false))
			break;
		pass_token(c);
	}
	fail_waiters(c, GP_ECLOSED); /* none left, unless the token's holder completes them */
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- batching calls sent without waiting --------------------------------------------
 * A call sent without waiting stays in the connection's write buffer, so that a run of
 * them (a loop of launches) goes out as one write and one TLS record. The buffer goes out
 * when a call that waits is sent, when it reaches the connection's threshold, or at the
 * latest FLUSH_DELAY_US after the first call in it: the flusher thread sees to that, so
 * the device never idles for long on work the program has already asked for. */

#define FLUSH_DELAY_US 50

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cv = PTHREAD_COND_INITIALIZER;
static bool flush_wanted;

static void *flusher(void *arg)
{
	struct gp_client *c = arg;
	struct timespec delay = {0, FLUSH_DELAY_US * 1000};

	for (;;) {
		int ret;

		pthread_mutex_lock(&flush_lock);
		while (!flush_wanted)
			pthread_cond_wait(&flush_cv, &flush_lock);
		flush_wanted = false;
		pthread_mutex_unlock(&flush_lock);
		nanosleep(&delay, NULL);
		gp_conn_send_lock(c->conn);
		ret = gp_conn_flush(c->conn);
		gp_conn_send_unlock(c->conn);
		if (ret)
			transport_failed(ret, "sending calls");
	}
	return NULL;
}

/* With the send lock held: something waits in the buffer; the flusher sends it soon. */
static void flush_soon(struct gp_client *c)
{
	if (c->conn->wlen == 0)
		return;
	pthread_mutex_lock(&flush_lock);
	if (!flush_wanted) {
		flush_wanted = true;
		pthread_cond_signal(&flush_cv);
	}
	pthread_mutex_unlock(&flush_lock);
}

int gp__reader_start(struct gp_client *c)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	pthread_t t;
	int ret;

	if (gp_conn_concurrent(c->conn))
		return -1;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&reader_cv, &ca);
	pthread_condattr_destroy(&ca);
	/* Without it the idle reader looks every READ_IDLE_MS instead of sleeping in poll. */
	reader_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	/* The thread takes no signal: they are the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&c->reader, NULL, reader, c);
	if (!ret) {
		pthread_detach(c->reader);
		ret = pthread_create(&t, NULL, flusher, c);
		if (!ret)
			pthread_detach(t);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret ? -1 : 0;
}

/* Unpacks the Reply into its result and outputs; hands the message to *keep when asked. */
static CUresult finish_reply(struct gp_client *c, unsigned type, Gp__Reply *rep, uint64_t *out,
			     size_t nout, bool short_bulk, Gp__Reply **keep)
{
	const char *what = gp_msg_name(type);
	CUresult r = (CUresult)rep->result;

	/* A failed copy stops its DATA early; a successful one brought every byte. */
	if (r == CUDA_SUCCESS && (rep->n_out < nout || short_bulk)) {
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		return transport_failed(GP_EFRAME, what);
	}
	for (size_t i = 0; r == CUDA_SUCCESS && i < nout; i++)
		out[i] = rep->out[i];
	if (rep->message && *rep->message)
		gp_log_info("%s: %s", what, rep->message);
	pthread_mutex_lock(&c->lock);
	r = merge_deferred(c, type, r, rep->deferred);
	pthread_mutex_unlock(&c->lock);
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
	struct gp_bulk_source src = {.src = b->src};
	struct waiter wt = {.dst = b->dst, .dst_len = b->dst ? b->len : 0};
	bool wait = !(flags & GP_F_NO_REPLY);
	const char *what = gp_msg_name(type);
	CUresult r;
	int ret;

	/* Only what CUDA defines as asynchronous may go without an answer. */
	assert(ci && (wait || (ci->flags & GP_C_ASYNC)));
	(void)ci;
	if (keep)
		*keep = NULL;
	r = gp__ready();
	if (r != CUDA_SUCCESS)
		return r;
	if (wait)
		pthread_cond_init(&wt.done_cv, NULL);
	/* Sent whole, under the send lock; registered first, so the answer finds its waiter. */
	gp_conn_send_lock(c->conn);
	pthread_mutex_lock(&c->lock);
	wt.id = ++c->next_id;
	if (c->lost) {
		pthread_mutex_unlock(&c->lock);
		gp_conn_send_unlock(c->conn);
		r = CUDA_ERROR_DEVICE_UNAVAILABLE;
		goto out;
	}
	if (wait) {
		wt.next = c->waiting;
		c->waiting = &wt;
	}
	activity++;
	pthread_mutex_unlock(&c->lock);
	ret = gp_bulk_send(c->conn, type, flags, wt.id, &call->base, b->src ? b->len : 0, &src);
	/* A call that waits goes now, with whatever was batched before it. */
	if (!ret && wait)
		ret = gp_conn_flush(c->conn);
	else if (!ret)
		flush_soon(c);
	gp_conn_send_unlock(c->conn);
	if (ret) {
		r = transport_failed(ret, what);
		if (!wait)
			goto out;
		/* Completed by transport_failed, or by the token's holder, which may be
		 * writing an answer into our buffer if the request went out before the
		 * failure: the buffer and wt are ours again only once it has. */
		await_answer(c, &wt);
		if (wt.rep)
			protobuf_c_message_free_unpacked(&wt.rep->base, NULL);
		goto out;
	}
	if (!wait)
		return CUDA_SUCCESS;
	await_answer(c, &wt);
	if (wt.err || !wt.rep)
		r = transport_failed(wt.err ? wt.err : GP_ECLOSED, what);
	else
		r = finish_reply(c, type, wt.rep, out, nout, b->dst && wt.got != b->len, keep);
out:
	if (wait)
		pthread_cond_destroy(&wt.done_cv);
	return r;
}

CUresult gp__rpc_later(unsigned type, const Gp__Call *call, const struct gp_bulk_ref *b)
{
	struct gp_client *c = &gp__client;
	struct waiter *wt = calloc(1, sizeof(*wt));
	struct gp_bulk_source src = {.src = b->src};
	uint64_t id;
	CUresult r = gp__ready();
	int ret;

	if (!wt || r != CUDA_SUCCESS) {
		free(wt);
		return r != CUDA_SUCCESS ? r : CUDA_ERROR_OUT_OF_MEMORY;
	}
	wt->detached = true;
	wt->type = type;
	wt->dst = b->dst;
	wt->dst_len = b->dst ? b->len : 0;
	gp_conn_send_lock(c->conn);
	pthread_mutex_lock(&c->lock);
	id = wt->id = ++c->next_id;
	if (c->lost) {
		pthread_mutex_unlock(&c->lock);
		gp_conn_send_unlock(c->conn);
		free(wt);
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	}
	wt->next = c->waiting;
	c->waiting = wt; /* whoever reads completes it from here on */
	if (detached++ == 0 && !reading)
		wake_reader(); /* urgent now: the reader thread reads */
	pthread_mutex_unlock(&c->lock);
	ret = gp_bulk_send(c->conn, type, 0, id, &call->base, b->src ? b->len : 0, &src);
	if (!ret)
		flush_soon(c);
	gp_conn_send_unlock(c->conn);
	/* A failure completes (frees) the waiter with all the others, as the list's. */
	if (ret)
		return transport_failed(ret, gp_msg_name(type));
	return CUDA_SUCCESS;
}

/* The client's function of each call: gp__rpc_<name>(flags, in, out). */
#define GP__RPC(NAME, name, NUM, FLAGS, ARGS, OUTS, RANGES, DOC)                        \
	CUresult gp__rpc_##name(unsigned flags, const struct gp_in_##name *in,          \
				struct gp_out_##name *out)                              \
	{                                                                               \
		Gp__Call call = GP__CALL__INIT;                                         \
		uint64_t args[GP_CALL_ARGS_MAX], o[GP_CALL_OUTS_MAX];                   \
		struct gp_bulk_ref b;                                                   \
		CUresult r;                                                             \
                                                                                        \
		gp_call_pack_##name(in, &call, args, &b);                               \
		r = gp__rpc(GP_MSG_##NAME, flags, &call, &b, o, GP_NOUTS_##NAME, NULL); \
		if (r == CUDA_SUCCESS && out)                                           \
			gp_call_outs_##name(o, out);                                    \
		return r;                                                               \
	}
GP_CALL_MAP(GP__RPC)
#undef GP__RPC

CUresult gp__func_fill(struct gp_ifunc *f, const Gp__Function *src)
{
	uint32_t n = (uint32_t)src->n_param, *off, *size;

	off = calloc(n ? n : 1, sizeof(uint32_t));
	size = calloc(n ? n : 1, sizeof(uint32_t));
	if (!off || !size) {
		free(off);
		free(size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	free(f->offset);
	free(f->size);
	f->offset = off;
	f->size = size;
	f->nparams = n;
	f->param_bytes = 0;
	for (size_t a = 0; a < src->n_attribute && a < CU_FUNC_ATTRIBUTE_MAX; a++)
		f->attr[a] = src->attribute[a];
	for (uint32_t k = 0; k < n; k++) {
		f->offset[k] = src->param[k]->offset;
		f->size[k] = src->param[k]->size;
		if (f->offset[k] + f->size[k] > f->param_bytes)
			f->param_bytes = f->offset[k] + f->size[k];
	}
	return CUDA_SUCCESS;
}

/* Copies the function list of a load's reply into the client's module: names and handles
 * (each one's layout and attributes come on first use, gp__func_described). */
static CUresult take_functions(struct gp_imodule *mod, const Gp__Reply *rep)
{
	mod->funcs = calloc(rep->n_function ? rep->n_function : 1, sizeof(*mod->funcs));
	if (!mod->funcs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < rep->n_function; i++) {
		const Gp__Function *src = rep->function[i];
		struct gp_ifunc *f = &mod->funcs[i];

		f->magic = GP_MAGIC_FUNC;
		f->remote = src->handle;
		f->module = mod;
		f->name = strdup(src->name);
		mod->nfuncs = (uint32_t)i + 1;
		if (!f->name)
			return CUDA_ERROR_OUT_OF_MEMORY;
		if (src->n_attribute) {
			CUresult r = gp__func_fill(f, src);

			if (r != CUDA_SUCCESS)
				return r;
			f->described = true;
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
