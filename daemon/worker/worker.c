/* worker.c -- gpupool-worker: TLS endpoint and executor of one client session.
 *
 * Spawned by gpupoold with the accepted client socket on fd 3, a control
 * socketpair to the supervisor on fd 4 and the session's stats page on fd 5.
 * `gpupool-worker --warm --driver PATH [--tls-cert FILE]` is started ahead of any client: it
 * loads the driver (not cuInit: that follows the placement) and pays OpenSSL's first-use
 * costs (gp_tls_warm_up), then waits for its client socket, which the
 * supervisor passes over fd 4 (one byte with SCM_RIGHTS) when a connection comes;
 * from there it is any session's worker, and ends with it as every worker does.
 * `gpupool-worker --inventory --driver PATH` instead lists the GPUs the driver
 * shows on fd 4 and exits (the supervisor itself never loads CUDA).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <gpupool/gpupool.h>
#include <gpupool/va_window.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "proof.h"
#include "worker.h"

/* Set by SIGTERM (poolctl evict, idle timeout, drain): finish the current call, then end. */
volatile sig_atomic_t gp__worker_stop;

volatile sig_atomic_t gp__worker_preempted, gp__worker_preempt_gen;

static volatile sig_atomic_t handshake_expired;

static void on_sigterm(int sig)
{
	gp__worker_stop = 1;
}

static void on_sigusr1(int sig)
{
	gp__worker_timed_out = 1;
	gp__worker_stop = 1;
}

/* The pool's word on a preemption: the value it queued (enum gp_preempt_signal). A plain
 * SIGUSR2 (no value) counts as the next step, notice then end. */
static void on_sigusr2(int sig, siginfo_t *si, void *uc)
{
	int what = si && si->si_code == SI_QUEUE
			   ? si->si_value.sival_int
			   : (gp__worker_preempted ? GP_PREEMPT_END : GP_PREEMPT_NOTICE);

	(void)sig;
	(void)uc;
	if (what == GP_PREEMPT_CANCEL) {
		gp__worker_preempted = 0;
	} else if (what == GP_PREEMPT_NOTICE) {
		gp__worker_preempted = 1;
		gp__worker_preempt_gen++; /* each notice is told (watchdog.c) */
	} else {
		gp__worker_preempted = 2;
	}
}

/* The handshake's deadline: whatever read is blocked returns, and the worker ends. */
static void on_alarm(int sig)
{
	handshake_expired = 1;
	gp__worker_stop = 1;
}

static void stats_touch(struct gp_worker *w)
{
	if (!w->stats)
		return;
	atomic_store_explicit(&w->stats->calls, w->calls, memory_order_relaxed);
	atomic_store_explicit(&w->stats->bytes_in, w->client->bytes_in, memory_order_relaxed);
	atomic_store_explicit(&w->stats->bytes_out, w->client->bytes_out, memory_order_relaxed);
	atomic_store_explicit(&w->stats->last_active, (int64_t)time(NULL), memory_order_relaxed);
	atomic_fetch_sub_explicit(&w->stats->in_call, 1, memory_order_relaxed);
}

static void set_state(struct gp_worker *w, enum gp_session_state s)
{
	if (w->stats)
		atomic_store_explicit(&w->stats->state, s, memory_order_relaxed);
}

/* How the session ended, for the supervisor's accounting record (stats.h). */
static void set_ended(struct gp_worker *w, enum gp_worker_end e)
{
	if (w->stats)
		atomic_store_explicit(&w->stats->ended, e, memory_order_relaxed);
}

/* The counters as they are at the end: stats_touch runs only after calls, and the record
 * the supervisor writes should say what this worker logs. */
static void stats_final(struct gp_worker *w)
{
	if (!w->stats)
		return;
	atomic_store_explicit(&w->stats->calls, w->calls, memory_order_relaxed);
	atomic_store_explicit(&w->stats->bytes_in, w->client->bytes_in, memory_order_relaxed);
	atomic_store_explicit(&w->stats->bytes_out, w->client->bytes_out, memory_order_relaxed);
}

/* Reads one control frame of the expected type; returns the unpacked body. */
static ProtobufCMessage *ctl_recv(struct gp_conn *ctl, unsigned type)
{
	struct gp_frame_hdr h;
	ProtobufCMessage *m;

	if (gp_conn_recv(ctl, &h)) {
		gp_log_error("control channel: %s", ctl->err);
		return NULL;
	}
	if (h.type != type || h.bulk_len) {
		gp_log_error("control channel: expected %s, got type %u", gp_msg_name(type),
			     h.type);
		return NULL;
	}
	m = gp_msg_unpack(type, ctl->msg, h.msg_len);
	if (!m)
		gp_log_error("control channel: %s does not decode", gp_msg_name(type));
	return m;
}

/* ---- session setup ------------------------------------------------------------ */

static int refuse(struct gp_worker *w, int status, const char *msg)
{
	Gp__HelloReply rep = GP__HELLO_REPLY__INIT;

	rep.status = status;
	rep.message = (char *)msg;
	rep.protocol_version = GP_PROTOCOL_VERSION;
	rep.session_id = w->session_id;
	gp_log_info("session %llu refused: %s", (unsigned long long)w->session_id, msg);
	if (gp_conn_send(w->client, GP_MSG_HELLO_REPLY, 0, 0, &rep.base, NULL, 0) == 0)
		gp_conn_shutdown(w->client);
	return 1;
}

/* Fills a device snapshot: everything the client answers without a round trip. */
static CUresult snapshot_device(struct gp_worker *w, int ordinal, Gp__Device *dv, char *name,
				CUuuid *uuid, int32_t *attrs, uint32_t *unsup, size_t *nunsup)
{
	CUdevice d;
	size_t total;
	CUresult r;

	r = w->drv.cuDeviceGet(&d, ordinal);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuDeviceGetName(name, 256, d);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuDeviceTotalMem_v2(&total, d);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuDeviceGetUuid_v2(uuid, d);
	if (r != CUDA_SUCCESS)
		return r;
	if (w->mem_limit && w->mem_limit < total)
		total = w->mem_limit;
	*nunsup = 0;
	attrs[0] = 0;
	for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
		int v = 0;

		if (w->drv.cuDeviceGetAttribute(&v, (CUdevice_attribute)a, d) != CUDA_SUCCESS) {
			unsup[(*nunsup)++] = (uint32_t)a;
			v = 0;
		}
		attrs[a] = v;
	}
	/* Memory the worker places in a window itself (mem.c) leaves out what the driver would
	 * place elsewhere: managed memory (and so mapped host memory), pools' memory and the
	 * client's own reservations are refused there, so the device claims none of them. */
	if (w->va_vmm) {
		attrs[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 0;
		attrs[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0;
		attrs[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 0;
		attrs[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 0;
	}
	dv->name = name;
	dv->uuid.data = (uint8_t *)uuid->bytes;
	dv->uuid.len = sizeof(uuid->bytes);
	dv->total_mem = total;
	dv->n_attribute = CU_DEVICE_ATTRIBUTE_MAX;
	dv->attribute = attrs;
	dv->n_unsupported_attribute = *nunsup;
	dv->unsupported_attribute = unsup;
	return CUDA_SUCCESS;
}

static int send_hello_reply(struct gp_worker *w)
{
	Gp__HelloReply rep = GP__HELLO_REPLY__INIT;
	static char names[GP_STATS_MAX_DEVICES][256];
	static CUuuid uuids[GP_STATS_MAX_DEVICES];
	static int32_t attrs[GP_STATS_MAX_DEVICES][CU_DEVICE_ATTRIBUTE_MAX];
	static uint32_t unsup[GP_STATS_MAX_DEVICES][CU_DEVICE_ATTRIBUTE_MAX];
	Gp__Device devs[GP_STATS_MAX_DEVICES], *ptrs[GP_STATS_MAX_DEVICES];
	int ver = 0;
	CUresult r;

	r = w->drv.cuDriverGetVersion(&ver);
	if (r != CUDA_SUCCESS)
		return refuse(w, GP_ENOTREADY, "the pool's driver does not report its version");
	for (int i = 0; i < w->ndev; i++) {
		size_t nunsup;

		gp__device__init(&devs[i]);
		r = snapshot_device(w, i, &devs[i], names[i], &uuids[i], attrs[i], unsup[i],
				    &nunsup);
		if (r != CUDA_SUCCESS) {
			char msg[256];

			snprintf(msg, sizeof(msg), "device %d of the pool is unusable: %s", i,
				 gp_driver_err_name(&w->drv, r));
			return refuse(w, GP_ENOTREADY, msg);
		}
		ptrs[i] = &devs[i];
	}
	rep.protocol_version = GP_PROTOCOL_VERSION;
	rep.session_id = w->session_id;
	rep.driver_version = ver;
	rep.n_device = (size_t)w->ndev;
	rep.device = ptrs;
	rep.tenant = w->tenant;
	rep.va_window = w->va_window;
	if (gp_conn_send(w->client, GP_MSG_HELLO_REPLY, 0, 0, &rep.base, NULL, 0) ||
	    gp_conn_flush(w->client)) {
		gp_log_warnx("session %llu: sending HelloReply: %s",
			     (unsigned long long)w->session_id, w->client->err);
		return 1;
	}
	return 0;
}

/*
 * While the session waits in the supervisor's queue, the client may give up.
 * Returns true when the supervisor has answered, false when the client left
 * (the worker then ends, and the supervisor reaps it and forgets the waiter).
 */
static bool wait_admission(struct gp_worker *w)
{
	struct pollfd pfd[2] = {{w->ctl->fd, POLLIN, 0}, {w->client->fd, POLLIN | POLLRDHUP, 0}};
	char b;

	if (w->ctl->rlen > w->ctl->rpos)
		return true; /* already buffered */
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR && !gp__worker_stop)
				continue;
			return false;
		}
		if (pfd[0].revents)
			return true;
		/* The client may only speak after HelloReply: a hang-up, or a read that finds
		 * the end of the stream, is it leaving. */
		if ((pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) ||
		    (pfd[1].revents && recv(w->client->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)) {
			gp_log_info("session %llu: the client left while waiting for room",
				    (unsigned long long)w->session_id);
			return false;
		}
		if (pfd[1].revents)
			pfd[1].events =
				POLLRDHUP; /* TLS bytes (a ticket): still watch for leaving */
	}
}

static void socket_timeouts(int fd, unsigned secs);

/* What a client with a certificate proved (prove()), for AdmitRequest. */
struct proof {
	ProtobufCBinaryData chain[GP_PROOF_CHAIN_MAX]; /* DER, the leaf first; OPENSSL_malloc'd */
	size_t nchain;
	uint8_t exporter[GP_PROOF_EXPORTER_LEN];
	ProtobufCBinaryData sig; /* malloc'd */
};

static void proof_free(struct proof *p)
{
	for (size_t i = 0; i < p->nchain; i++)
		OPENSSL_free(p->chain[i].data);
	free(p->sig.data);
	memset(p, 0, sizeof(*p));
}

static int chain_add(struct proof *p, X509 *x)
{
	unsigned char *der = NULL;
	int len;

	if (p->nchain >= GP_PROOF_CHAIN_MAX)
		return -1;
	len = i2d_X509(x, &der);
	if (len <= 0)
		return -1;
	p->chain[p->nchain].data = der;
	p->chain[p->nchain++].len = (size_t)len;
	return 0;
}

/*
 * A client that presented a certificate proves it holds the certificate's key, for the nonce
 * the supervisor gave this session (src/proof.h): TENANT_CHALLENGE, then its TENANT_PROOF,
 * within what is left of the handshake's deadline (limit seconds). What it sends is kept for
 * admit(): the supervisor checks it, this worker does not (its word would not count). Without
 * a certificate there is nothing to prove and no round trip. Returns 0 to go on, else the
 * session is over.
 */
static int prove(struct gp_worker *w, const Gp__WorkerSetup *setup, const Gp__Hello *hello,
		 unsigned limit, struct proof *p)
{
	Gp__TenantChallenge ch = GP__TENANT_CHALLENGE__INIT;
	Gp__TenantProof *tp;
	SSL *ssl = w->client->ssl;
	X509 *leaf = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
	STACK_OF(X509) *rest = leaf ? SSL_get_peer_cert_chain(ssl) : NULL;
	struct gp_frame_hdr h;
	int ret;

	if (!leaf)
		return 0;
	if (!hello->tenant_proof)
		return refuse(
			w, GP_EREFUSED,
			"this client does not answer the pool's tenant proof (TENANT_CHALLENGE): "
			"its interposer is older than the pool");
	if (setup->tenant_nonce.len != GP_PROOF_NONCE_LEN) {
		gp_log_error("session %llu: the supervisor gave no nonce for the tenant proof",
			     (unsigned long long)w->session_id);
		return refuse(w, GP_ENOTREADY, "the pool's supervisor gave no tenant nonce");
	}
	if (gp_proof_exporter(ssl, p->exporter))
		return refuse(w, GP_ENOTREADY,
			      "the pool cannot bind a tenant proof to this TLS connection");
	if (chain_add(p, leaf))
		return refuse(w, GP_ENOTREADY, "the client certificate cannot be forwarded");
	/* On a server the peer's chain holds what it sent after its leaf. */
	for (int i = 0; i < sk_X509_num(rest); i++) {
		X509 *x = sk_X509_value(rest, i);

		if (X509_cmp(x, leaf) != 0 && chain_add(p, x))
			return refuse(w, GP_EREFUSED, "the client's certificate chain is too long");
	}
	ch.nonce = setup->tenant_nonce;
	if (gp_conn_send(w->client, GP_MSG_TENANT_CHALLENGE, 0, 0, &ch.base, NULL, 0) ||
	    gp_conn_flush(w->client)) {
		gp_log_info("session %llu: sending TENANT_CHALLENGE: %s",
			    (unsigned long long)w->session_id, w->client->err);
		return 1;
	}
	alarm(limit);
	socket_timeouts(w->client->fd, limit);
	ret = gp_conn_recv(w->client, &h);
	alarm(0);
	socket_timeouts(w->client->fd, 0);
	if (ret || h.type != GP_MSG_TENANT_PROOF || h.bulk_len) {
		gp_log_info("session %llu from %s: no TENANT_PROOF: %s",
			    (unsigned long long)w->session_id, w->client_addr,
			    handshake_expired	? "none within the deadline"
			    : w->client->err[0] ? w->client->err
						: "wrong message");
		return ret ? 1
			   : refuse(w, GP_EREFUSED, "expected TENANT_PROOF after the challenge");
	}
	tp = (Gp__TenantProof *)gp_msg_unpack(GP_MSG_TENANT_PROOF, w->client->msg, h.msg_len);
	if (!tp)
		return refuse(w, GP_EREFUSED, "TENANT_PROOF does not decode");
	if (tp->signature.len > 0 && tp->signature.len <= GP_PROOF_SIG_MAX) {
		p->sig.data = malloc(tp->signature.len);
		if (p->sig.data) {
			memcpy(p->sig.data, tp->signature.data, tp->signature.len);
			p->sig.len = tp->signature.len;
		}
	}
	protobuf_c_message_free_unpacked(&tp->base, NULL);
	/* An empty or oversized signature goes on as none: the supervisor says why. */
	return 0;
}

/* Asks the supervisor to place the session. Returns 0 when admitted. */
static int admit(struct gp_worker *w, const Gp__Hello *hello, const struct proof *proof)
{
	Gp__AdmitRequest req = GP__ADMIT_REQUEST__INIT;
	Gp__AdmitReply *rep;
	char vis[GP_STATS_MAX_DEVICES * 48 + 1] = "";
	char msg[512];
	int ret = 1;

	req.tenant = w->tenant; /* our view only: the supervisor derives the tenant itself */
	req.n_peer_chain = proof->nchain;
	req.peer_chain = (ProtobufCBinaryData *)proof->chain;
	req.proof_signature = proof->sig;
	if (proof->nchain) {
		req.proof_exporter.data = (uint8_t *)proof->exporter;
		req.proof_exporter.len = sizeof(proof->exporter);
	}
	req.token = hello->token;
	req.gpus = hello->gpus;
	req.memory = hello->memory;
	req.compute = hello->compute;
	req.preemptible = hello->preemptible;
	req.priority = hello->priority;
	req.priority_set = hello->priority_set;
	req.client_host = hello->client_host;
	req.client_pid = hello->client_pid;
	req.program = hello->program;
	req.no_wait = hello->no_wait;
	req.slice = hello->slice;
	if (gp_conn_send(w->ctl, GP_MSG_ADMIT_REQUEST, 0, 0, &req.base, NULL, 0) ||
	    gp_conn_flush(w->ctl)) {
		gp_log_error("control channel: %s", w->ctl->err);
		return refuse(w, GP_ENOTREADY, "the pool's supervisor is gone");
	}
	set_state(w, GP_SESSION_QUEUED);
	if (!wait_admission(w))
		return 1;
	rep = (Gp__AdmitReply *)ctl_recv(w->ctl, GP_MSG_ADMIT_REPLY);
	if (!rep)
		return refuse(w, GP_ENOTREADY, "the pool's supervisor is gone");
	if (rep->tenant && *rep->tenant)
		snprintf(w->tenant, sizeof(w->tenant), "%s", rep->tenant);
	if (rep->status != 0) {
		snprintf(msg, sizeof(msg), "%s",
			 rep->message && *rep->message ? rep->message : "refused");
		ret = refuse(w, rep->status, msg);
		goto out_free;
	}
	if (rep->n_device == 0 || rep->n_device > GP_STATS_MAX_DEVICES) {
		ret = refuse(w, GP_EREFUSED, "placement named no devices");
		goto out_free;
	}
	for (size_t i = 0; i < rep->n_device; i++) {
		size_t l = strlen(vis);

		/* A MIG instance by its MIG-<uuid> (AdmitReply.visible), a GPU by its ordinal. */
		if (rep->n_visible == rep->n_device && strlen(rep->visible[i]) < 48)
			snprintf(vis + l, sizeof(vis) - l, "%s%s", i ? "," : "", rep->visible[i]);
		else
			snprintf(vis + l, sizeof(vis) - l, "%s%u", i ? "," : "", rep->device[i]);
	}
	/* The driver must see only the placement's devices, before it loads. */
	setenv("CUDA_VISIBLE_DEVICES", vis, 1);
	w->ndev = (int)rep->n_device;
	w->mem_limit = rep->memory_limit;
	/* A compute share: the MPS client limit NVIDIA's driver (under an MPS control daemon)
	 * and softgpu read at cuInit. Without one the session is not limited. */
	w->compute = rep->compute < 100 ? rep->compute : 0;
	w->compute_by_time = rep->compute_enforce && (strcmp(rep->compute_enforce, "time") == 0 ||
						      strcmp(rep->compute_enforce, "both") == 0);
	if (rep->compute > 0 && rep->compute < 100 &&
	    (!rep->compute_enforce || !*rep->compute_enforce ||
	     strcmp(rep->compute_enforce, "mps") == 0 ||
	     strcmp(rep->compute_enforce, "both") == 0)) {
		char pct[16];

		snprintf(pct, sizeof(pct), "%u", rep->compute);
		setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, 1);
	} else {
		unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	}
	/* An MPS control daemon the pool runs for this GPU (gpu N mps on): its client, with
	 * the session's memory limit pinned (device 0 as this process sees it). */
	if (rep->mps_pipe_directory && *rep->mps_pipe_directory) {
		char lim[32];

		setenv("CUDA_MPS_PIPE_DIRECTORY", rep->mps_pipe_directory, 1);
		snprintf(lim, sizeof(lim), "0=%lluM",
			 (unsigned long long)((rep->memory_limit + (1u << 20) - 1) >> 20));
		setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", lim, 1);
		gp_log_info("session %llu: MPS client of %s, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s",
			    (unsigned long long)w->session_id, rep->mps_pipe_directory, lim);
	} else {
		unsetenv("CUDA_MPS_PIPE_DIRECTORY");
		unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	}
	gp_log_debug("session %llu placed on devices %s, limit %llu bytes, compute %u%%",
		     (unsigned long long)w->session_id, vis, (unsigned long long)w->mem_limit,
		     rep->compute ? rep->compute : 100);
	ret = 0;
out_free:
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	return ret;
}

/* Loads the driver (dlopen and its entry points): what a warm worker does ahead of its
 * session. Not cuInit: the driver reads CUDA_VISIBLE_DEVICES there, and that is the
 * session's placement, known only at admission. Returns 0, or -1 with err set. */
static int driver_open(struct gp_worker *w, const char *path, char *err, size_t errlen)
{
	/* Device printf goes to stdout: to the client, not the daemon's log. */
	if (gp__output_capture())
		gp_log_warn("device output stays in the log");
	if (gp_driver_load(&w->drv, path, err, errlen))
		return -1;
	w->driver_loaded = true;
	return 0;
}

/* The driver, loaded now unless this worker was warm, initialised with only the placement's
 * devices visible (admit() set CUDA_VISIBLE_DEVICES), must show them all. */
static int load_driver(struct gp_worker *w, const char *path)
{
	char err[512];
	CUresult r;

	if (!w->driver_loaded && driver_open(w, path, err, sizeof(err))) {
		gp_log_error("%s", err);
		return refuse(w, GP_ENOTREADY, "the pool's GPU driver cannot be loaded");
	}
	r = w->drv.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = w->drv.cuDeviceGetCount(&w->driver_ndev);
	if (r != CUDA_SUCCESS || w->driver_ndev < w->ndev) {
		snprintf(err, sizeof(err), "the pool's driver failed: %s (%d devices, %d placed)",
			 gp_driver_err_name(&w->drv, r), w->driver_ndev, w->ndev);
		gp_log_error("%s", err);
		return refuse(w, GP_ENOTREADY, err);
	}
	return 0;
}

/* A warm worker's wait for its client: one byte on the control socket carrying the client
 * socket (SCM_RIGHTS), put on fd 3 as a spawned worker has it. Read before anything reads
 * the control connection, and only that byte: the frames after it are the connection's.
 * Returns 0, or -1 when the supervisor ended it first (SIGTERM, or the socket closed). */
static int warm_wait(void)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	/* Polled, so that a SIGTERM that came before the wait (during the driver's start) is
	 * seen within a second rather than never. */
	for (;;) {
		struct pollfd p = {.fd = GP_WORKER_FD_CONTROL, .events = POLLIN};

		if (gp__worker_stop)
			return -1;
		if (poll(&p, 1, 1000) > 0)
			break;
	}
	do {
		n = recvmsg(GP_WORKER_FD_CONTROL, &m, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR && !gp__worker_stop);
	if (n != 1 || gp__worker_stop)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	if (dup2(fd, GP_WORKER_FD_CLIENT) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The name of the user at the other end of a Unix socket (gp_user_name), "" when the kernel
 * does not say. Only this worker's view, for its log and its claim: the supervisor reads the
 * peer's credentials itself when it accepts the connection. */
static void local_user(int fd, char *out, size_t outlen)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	out[0] = '\0';
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
		gp_user_name(cr.uid, out, outlen);
}

/* Blocking reads and writes on fd give up after secs seconds of silence (0: never). */
/*
 * What the session may hold (WorkerSetup's max_*, 0: the defaults), and the process limits
 * set before any tenant's call runs here:
 *   - RLIMIT_CORE 0: a crashing worker leaves no core holding the pool's TLS key or a
 *     tenant's data (PR_SET_DUMPABLE 0 already keeps it from dumping where it can).
 *   - RLIMIT_NOFILE at most GP_WORKER_NOFILE: the worker needs its few sockets and the
 *     driver's device files, not the supervisor's many.
 * Not set, on purpose: RLIMIT_AS and RLIMIT_DATA (the CUDA driver reserves address space
 * the size of all device and host memory for unified addressing, and fails under either);
 * RLIMIT_NPROC (per user: every worker runs as the same user, so one tenant's threads would
 * use up the others'); RLIMIT_FSIZE (the driver writes its JIT cache and would be killed by
 * SIGXFSZ). Host memory belongs to a cgroup's memory.max (docs/security.md).
 */
#define GP_WORKER_NOFILE 1024

static void lower_limit(int resource, rlim_t max, const char *name)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl))
		return;
	if (rl.rlim_max > max)
		rl.rlim_max = max;
	if (rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	if (setrlimit(resource, &rl))
		gp_log_warn("setrlimit %s", name);
}

static void session_limits(struct gp_worker *w, const Gp__WorkerSetup *setup)
{
	w->caps.contexts = setup->max_contexts ? setup->max_contexts : GP_DEFAULT_MAX_CONTEXTS;
	w->caps.streams = setup->max_streams ? setup->max_streams : GP_DEFAULT_MAX_STREAMS;
	w->caps.events = setup->max_events ? setup->max_events : GP_DEFAULT_MAX_EVENTS;
	w->caps.modules = setup->max_modules ? setup->max_modules : GP_DEFAULT_MAX_MODULES;
	lower_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
	lower_limit(RLIMIT_NOFILE, GP_WORKER_NOFILE, "RLIMIT_NOFILE");
}

static void socket_timeouts(int fd, unsigned secs)
{
	struct timeval tv = {.tv_sec = secs};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* What the client sent first, looked at without taking it: a client of the other kind (TLS on
 * a listener without it, or the reverse) is told so in words it understands, instead of
 * seeing a closed connection it would take for a busy pool and try again. Returns true
 * when it was told (the session is over). */
static bool wrong_kind(struct gp_worker *w, bool tls)
{
	/* A fatal TLS alert record: protocol_version (70). */
	static const uint8_t alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 70};
	uint8_t b[GP_FRAME_HDR_SIZE];
	struct gp_frame_hdr h;
	ssize_t n;

	do {
		n = recv(w->client->fd, b, sizeof(b), MSG_PEEK | MSG_WAITALL);
	} while (n < 0 && errno == EINTR && !gp__worker_stop);
	if (n < 2)
		return false; /* nothing yet: the handshake's own reads say what happened */
	/* A TLS record starts 16 03; so may a frame's length: a whole valid header is a frame. */
	if (!tls && b[0] == 0x16 && b[1] == 0x03 &&
	    !(n == (ssize_t)sizeof(b) && gp_frame_hdr_decode(b, &h) == 0)) {
		gp_log_info("session %llu from %s: a TLS client on a listener without TLS",
			    (unsigned long long)w->session_id, w->client_addr);
		if (write(w->client->fd, alert, sizeof(alert)) < 0)
			gp_log_debug("session %llu: the alert was not sent",
				     (unsigned long long)w->session_id);
		return true;
	}
	if (tls && n == (ssize_t)sizeof(b) && gp_frame_hdr_decode(b, &h) == 0 &&
	    h.type == GP_MSG_HELLO) {
		gp_log_info("session %llu from %s: a client without TLS on the TLS listener",
			    (unsigned long long)w->session_id, w->client_addr);
		refuse(w, GP_EREFUSED, "this pool address speaks TLS: name it without plain:");
		return true;
	}
	return false;
}

/* no_new_privs, once the driver is initialised (cuInit may run the setuid nvidia-modprobe to
 * create device nodes) and before the tenant's first call: nothing the worker or anything it
 * starts execs gains privileges (setuid, file capabilities). It cannot be cleared, and
 * survives fork and exec: the supervisor refuses admin connections that carry it. */
static int no_new_privs(struct gp_worker *w)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		gp_log_warn("session %llu: PR_SET_NO_NEW_PRIVS", (unsigned long long)w->session_id);
		return refuse(w, GP_ENOTREADY, "the pool's worker cannot drop its privileges");
	}
	return 0;
}

/*
 * worker_uids: the worker becomes a user of its own, the uid the supervisor picked for this
 * session (supervisor/uids.c), the gid of that number, and worker_groups as its only
 * supplementary groups. Real, effective and saved ids all: nothing is left to switch back
 * to, and that is checked. This comes after everything that needs the daemon's identity:
 * the pool's key was read and has served its handshake (and was dropped), the driver is
 * initialised (cuInit may exec nvidia-modprobe; it opened the device nodes, which stay
 * open), and before the tenant's first call is read. The key file, and whatever else only
 * the daemon's user may read, is then out of reach. What ran before it as the daemon's user
 * with the client's bytes: the TLS handshake, Hello's decoding, admission.
 */
/* Every thread of this process (the driver's too) runs as uid and the gid of that number,
 * with no capability: each one's /proc/self/task/TID/status says so. */
static bool threads_dropped(uid_t uid)
{
	char want[64], wantg[64], path[64], buf[4096];
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	bool ok = dir != NULL;

	snprintf(want, sizeof(want), "\nUid:\t%u\t%u\t%u\t%u\n", (unsigned)uid, (unsigned)uid,
		 (unsigned)uid, (unsigned)uid);
	snprintf(wantg, sizeof(wantg), "\nGid:\t%u\t%u\t%u\t%u\n", (unsigned)uid, (unsigned)uid,
		 (unsigned)uid, (unsigned)uid);
	while (ok && (de = readdir(dir))) {
		int fd;
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/status", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* a thread that has just ended */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		ok = n > 0 && strstr(buf, want) && strstr(buf, wantg) &&
		     strstr(buf, "\nCapPrm:\t0000000000000000\n") &&
		     strstr(buf, "\nCapEff:\t0000000000000000\n") &&
		     strstr(buf, "\nCapAmb:\t0000000000000000\n");
	}
	if (dir)
		closedir(dir);
	return ok;
}

static int drop_identity(struct gp_worker *w, const Gp__WorkerSetup *setup)
{
	uid_t uid = (uid_t)setup->uid, was = geteuid(), r, e, sv;
	gid_t gid = (gid_t)setup->uid, wasg = getegid(), rg, eg, sg;
	gid_t groups[GP_WORKER_GROUPS_MAX];
	struct __user_cap_header_struct caph = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[2] = {0};

	if (!setup->uid)
		return 0;
	if (setup->n_groups > GP_WORKER_GROUPS_MAX)
		return refuse(w, GP_ENOTREADY, "the pool's worker got too many groups");
	for (size_t i = 0; i < setup->n_groups; i++)
		groups[i] = (gid_t)setup->groups[i];
	/* glibc applies each to every thread, the driver's too. The kernel clears a thread's
	 * capabilities (permitted, effective, ambient) when its uids go from any of them being
	 * 0 to none: a daemon that is not root (CAP_SETUID ambient) first makes its saved uid
	 * 0, which changes neither its file access nor its capabilities, so that its last step
	 * clears them on every thread as it does from root. */
	if ((was != 0 && setresuid((uid_t)-1, (uid_t)-1, 0)) ||
	    setgroups(setup->n_groups, groups) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid)) {
		gp_log_error("session %llu: cannot switch to uid %u: %s",
			     (unsigned long long)w->session_id, (unsigned)uid, strerror(errno));
		return refuse(w, GP_ENOTREADY, "the pool's worker cannot switch to its own user");
	}
	/* Nothing to inherit either (only on exec, which no_new_privs and the filter bar). */
	if (syscall(SYS_capset, &caph, caps) || !threads_dropped(uid))
		gp_fatalx("session %llu: uid %u: a thread of the worker kept its capabilities "
			  "or ids",
			  (unsigned long long)w->session_id, (unsigned)uid);
	if (getresuid(&r, &e, &sv) || getresgid(&rg, &eg, &sg) || r != uid || e != uid ||
	    sv != uid || rg != gid || eg != gid || sg != gid ||
	    (was != uid && setresuid(was, was, was) == 0) || setresuid(0, 0, 0) == 0 ||
	    (wasg != gid && setresgid(wasg, wasg, wasg) == 0))
		gp_fatalx("session %llu: uid %u: the worker could switch back",
			  (unsigned long long)w->session_id, (unsigned)uid);
#ifndef __SANITIZE_ADDRESS__
	/* A change of ids resets it: other processes of this uid may not ptrace it either. */
	prctl(PR_SET_DUMPABLE, 0);
#else
	prctl(PR_SET_DUMPABLE, 1); /* LeakSanitizer ptraces its own threads at exit */
#endif
	gp_log_debug("session %llu: running as uid %u gid %u", (unsigned long long)w->session_id,
		     (unsigned)uid, (unsigned)gid);
	return 0;
}

/* worker_seccomp: after no_new_privs, which an unprivileged filter needs. */
static int seccomp_filter(struct gp_worker *w, enum gp_seccomp_mode mode)
{
	int r = gp__worker_seccomp(mode);

	if (r) {
		gp_log_error("session %llu: worker_seccomp: %s", (unsigned long long)w->session_id,
			     strerror(-r));
		return refuse(w, GP_ENOTREADY, "the pool's worker cannot set its syscall filter");
	}
	return 0;
}

/* ---- the device address window of a session spanning daemons (va_window.h) ---- */

/* Before cuInit: softgpu places its devices' memory in the window it is told of
 * (SOFTGPU_VA_WINDOW, softgpu/memory.c); other drivers ignore it. Not for more devices than
 * a window holds, nor when the test hook GPUPOOL_WORKER_VA_VMM=1 asks for the path NVIDIA's
 * driver takes (mem.c's windowed allocations). */
static void va_window_tell(struct gp_worker *w)
{
	const char *vmm = getenv("GPUPOOL_WORKER_VA_VMM");
	char k[16];

	if (w->va_asked && w->ndev <= (int)(GP_VA_WINDOW_SIZE / GP_VA_DEVICE_STRIDE) &&
	    !(vmm && strcmp(vmm, "1") == 0)) {
		snprintf(k, sizeof(k), "%u", w->va_asked);
		setenv("SOFTGPU_VA_WINDOW", k, 1);
	} else {
		unsetenv("SOFTGPU_VA_WINDOW");
	}
}

/* Whether a small cuMemAlloc on every device lands in the device's TiB of the window: the
 * driver placed its memory there. Each device's primary context is taken for it and given
 * back. */
static bool va_window_allocs_placed(struct gp_worker *w)
{
	bool placed = true;

	for (int d = 0; d < w->ndev && placed; d++) {
		CUcontext ctx = NULL;
		CUdeviceptr p = 0;
		CUdevice dev;

		placed = w->drv.cuDeviceGet(&dev, d) == CUDA_SUCCESS &&
			 GP_DRV(w, cuDevicePrimaryCtxRetain, &ctx, dev) == CUDA_SUCCESS;
		if (!placed)
			break;
		placed = w->drv.cuCtxSetCurrent(ctx) == CUDA_SUCCESS &&
			 w->drv.cuMemAlloc_v2(&p, 4096) == CUDA_SUCCESS;
		if (placed) {
			placed = gp__mem_in_window(w, d, p, 4096);
			w->drv.cuMemFree_v2(p);
		}
		w->drv.cuCtxSetCurrent(NULL);
		GP_DRV(w, cuDevicePrimaryCtxRelease_v2, dev);
	}
	return placed;
}

/* After cuInit: the window the session's memory goes in, if any (HelloReply.va_window).
 * The driver's own placement when it made one; else mem.c's windowed allocations, when the
 * driver reserves address ranges where it is asked to. */
static void va_window_place(struct gp_worker *w)
{
	const char *how = NULL;

	w->va_window = 0;
	w->va_vmm = false;
	if (!w->va_asked)
		return;
	if (w->ndev > (int)(GP_VA_WINDOW_SIZE / GP_VA_DEVICE_STRIDE)) {
		gp_log_info("session %llu: %d devices do not fit device address window %u",
			    (unsigned long long)w->session_id, w->ndev, w->va_asked);
		return;
	}
	w->va_window = w->va_asked;
	if (getenv("SOFTGPU_VA_WINDOW") && va_window_allocs_placed(w)) {
		how = "the driver places its memory there";
	} else {
		w->va_vmm = true;
		if (gp__mem_window_probe(w))
			how = "allocations mapped there";
	}
	if (!how) {
		w->va_window = 0;
		w->va_vmm = false;
		gp_log_info("session %llu: device address window %u: the driver cannot place "
			    "memory there; none",
			    (unsigned long long)w->session_id, w->va_asked);
		return;
	}
	gp_log_info("session %llu: device address window %u (%#llx): %s",
		    (unsigned long long)w->session_id, w->va_window,
		    (unsigned long long)(GP_VA_WINDOW_BASE +
					 (uint64_t)w->va_window * GP_VA_WINDOW_SIZE),
		    how);
}

static int handshake(struct gp_worker *w, const Gp__WorkerSetup *setup)
{
	struct sigaction sa = {.sa_handler = on_alarm};
	struct gp_frame_hdr h;
	struct proof proof = {0};
	Gp__Hello *hello;
	SSL_CTX *ctx = NULL;
	unsigned limit = setup->handshake_timeout ? setup->handshake_timeout : 15, left;
	char err[512], msg[256], badname[256] = "";
	int ret = 1;

	if (setup->transport == GP_TRANSPORT_TLS) {
		ctx = gp_tls_server_ctx_new(setup->tls_cert, setup->tls_key,
					    setup->tls_ca && *setup->tls_ca ? setup->tls_ca : NULL,
					    err, sizeof(err));
		if (!ctx) {
			gp_log_error("session %llu: %s", (unsigned long long)w->session_id, err);
			return 1;
		}
	}
	/* TLS and Hello within one deadline: a client that connects and says nothing, or
	 * trickles a byte at a time, must not hold a worker. (No SA_RESTART.) */
	sigaction(SIGALRM, &sa, NULL);
	alarm(limit);
	/* The alarm can fire just before a read blocks; socket timeouts catch that case. */
	socket_timeouts(w->client->fd, limit);
	if (wrong_kind(w, ctx != NULL))
		goto out_ctx;
	if (ctx && gp_conn_tls_accept(w->client, ctx)) {
		gp_log_info("session %llu from %s: %s", (unsigned long long)w->session_id,
			    w->client_addr,
			    handshake_expired ? "no TLS handshake within the deadline"
					      : w->client->err);
		goto out_ctx;
	}
	gp_log_debug("session %llu: setup: TLS handshake done", (unsigned long long)w->session_id);
	/* Who it is: the certificate's name, or on this host the user the kernel names. */
	if (ctx) {
		gp_conn_peer_name(w->client, setup->tenant_from, w->tenant, sizeof(w->tenant),
				  badname, sizeof(badname));
		/* The pool's key served its one handshake: no copy stays for a tenant to read. */
		gp_conn_tls_forget_key(w->client);
	} else if (setup->transport == GP_TRANSPORT_UNIX)
		local_user(w->client->fd, w->tenant, sizeof(w->tenant));
	if (gp_conn_recv(w->client, &h) || h.type != GP_MSG_HELLO || h.bulk_len) {
		gp_log_info("session %llu from %s: no Hello: %s", (unsigned long long)w->session_id,
			    w->client_addr,
			    handshake_expired	? "none within the deadline"
			    : w->client->err[0] ? w->client->err
						: "wrong message");
		goto out_ctx;
	}
	left = alarm(0); /* what the proof, if any, may still take */
	socket_timeouts(w->client->fd, 0);
	hello = (Gp__Hello *)gp_msg_unpack(GP_MSG_HELLO, w->client->msg, h.msg_len);
	if (!hello) {
		gp_log_info("session %llu: Hello does not decode",
			    (unsigned long long)w->session_id);
		goto out_ctx;
	}
	if (gp__worker_stop) {
		ret = 1; /* ended by the pool while saying hello */
	} else if (hello->protocol_version != GP_PROTOCOL_VERSION) {
		snprintf(msg, sizeof(msg),
			 "protocol version mismatch: client speaks %u, pool speaks %u",
			 hello->protocol_version, GP_PROTOCOL_VERSION);
		ret = refuse(w, GP_EVERSION, msg);
	} else if (badname[0]) {
		/* Said after Hello, so that the client reads the reason. */
		ret = refuse(w, GP_EREFUSED, badname);
	} else if (hello->va_window > GP_VA_WINDOW_MAX) {
		snprintf(msg, sizeof(msg),
			 "device address window %u asked for: a window is 1 to %d (0: none)",
			 hello->va_window, GP_VA_WINDOW_MAX);
		ret = refuse(w, GP_EREFUSED, msg);
	} else {
		w->va_asked = hello->va_window;
		w->tag = hello->va_window; /* in every handle from now on (owner.h) */
		gp_log_info("session %llu: %s pid %u (%s) from %s%s%s",
			    (unsigned long long)w->session_id, hello->program, hello->client_pid,
			    hello->client_host, w->client_addr,
			    !w->tenant[0] ? ""
			    : ctx	  ? ", certificate "
					  : ", user ",
			    w->tenant);
		w->client_stderr = hello->stderr_output;
		ret = prove(w, setup, hello, left ? left : 1, &proof);
		if (ret == 0)
			ret = admit(w, hello, &proof);
	}
	proof_free(&proof);
	protobuf_c_message_free_unpacked(&hello->base, NULL);
	if (ret == 0) {
		va_window_tell(w);
		ret = load_driver(w, setup->driver);
	}
	if (ret == 0) {
		gp_log_debug("session %llu: setup: driver initialised",
			     (unsigned long long)w->session_id);
		va_window_place(w);
	}
	if (ret == 0)
		ret = drop_identity(w, setup);
	if (ret == 0)
		ret = no_new_privs(w);
	if (ret == 0 && setup->seccomp)
		ret = seccomp_filter(w, (enum gp_seccomp_mode)setup->seccomp);
	if (ret == 0)
		ret = send_hello_reply(w);
	if (ret == 0)
		gp_log_debug("session %llu: setup: HelloReply sent",
			     (unsigned long long)w->session_id);
out_ctx:
	SSL_CTX_free(ctx);
	return ret;
}

/* ---- main ----------------------------------------------------------------- */

/* The pool's SIGUSR2s (docs/scheduling.md): a notice when it chooses the session to be
 * preempted (the watchdog tells the client, each time), a cancel when the room is not
 * needed after all, an end just before its SIGTERM. Before the
 * connection closes the client's stderr is told why; its next call then fails with
 * CUDA_ERROR_DEVICE_UNAVAILABLE. A thread stuck while sending holds the connection: then
 * the client sees only the close. */
int gp__worker_preempt_tell(struct gp_worker *w, bool ending)
{
	static const char notice[] =
		"gpupool: this session is preemptible (GPUPOOL_PREEMPTIBLE or its tenant's "
		"preemptible=yes), and its GPU room is needed for a session of higher priority or "
		"within its tenant's guarantee: the pool will end it after preempt_grace unless "
		"the room is no longer "
		"needed\n";
	static const char end[] = "gpupool: the pool ended this session: it was preemptible, and "
				  "its GPU room went to "
				  "a session of higher priority or within its tenant's guarantee "
				  "after preempt_grace\n";
	static atomic_bool told_end; /* the watchdog and the main thread may both end it */
	const char *msg = ending ? end : notice;
	size_t len = ending ? sizeof(end) - 1 : sizeof(notice) - 1;

	if (!w->client_stderr || (ending && atomic_load(&told_end)))
		return 0;
	if (pthread_mutex_trylock(&w->client->send) != 0)
		return -EBUSY;
	if ((!ending || !atomic_exchange(&told_end, true)) &&
	    gp_conn_send(w->client, GP_MSG_OUTPUT_ERR, 0, 0, NULL, msg, len) == 0)
		gp_conn_flush(w->client);
	pthread_mutex_unlock(&w->client->send);
	return 0;
}

static void serve(struct gp_worker *w)
{
	struct gp_frame_hdr h;
	bool goodbye = false; /* nothing more may come but the connection's end */
	int ret;

	set_state(w, GP_SESSION_ACTIVE);
	/* From here this thread reads while waiter threads may answer (waits.c). */
	if (gp_conn_concurrent(w->client)) {
		gp_log_warnx("session %llu: cannot set up the connection for waiter threads",
			     (unsigned long long)w->session_id);
		return;
	}
	if (gp__watch_start(w))
		gp_log_warnx("session %llu: no watchdog thread; a long call cannot be cut short",
			     (unsigned long long)w->session_id);
	gp__busy_start(w, w->compute_by_time ? w->compute : 0);
	if (gp__waits_prestart(w))
		gp_log_warnx("session %llu: no thread to wait on; synchronizing calls will fail",
			     (unsigned long long)w->session_id);
	for (;;) {
		ret = gp__worker_stop ? -EINTR : gp_conn_recv(w->client, &h);
		if (ret == -EINTR && gp__worker_timed_out) {
			/* A wait ran past kernel_timeout (a call of this thread's is the
			 * watchdog's to answer): the waits say why, then the session ends. */
			gp_log_error("session %llu: a wait ran past the pool's kernel_timeout; "
				     "ending the session",
				     (unsigned long long)w->session_id);
			gp__waits_answer_timeout(w);
			set_ended(w, GP_WORKER_END_POOL);
			break;
		}
		if (ret == -EINTR && gp__worker_preempted >= 2) {
			gp_log_info("session %llu: preempted by the pool",
				    (unsigned long long)w->session_id);
			gp__worker_preempt_tell(w, true);
		}
		if (ret == -EINTR) {
			set_ended(w, GP_WORKER_END_POOL);
			gp_log_info("session %llu: ended by the pool%s",
				    (unsigned long long)w->session_id,
				    gp__waits_busy() ? " in the middle of a call" : "");
			break;
		}
		if (ret == GP_EFRAME || ret == GP_ETOOBIG) {
			set_ended(w, GP_WORKER_END_PROTOCOL);
			char why[sizeof(w->client->err)];

			gp_log_warnx("session %llu: closing: %s from the client (%s)",
				     (unsigned long long)w->session_id, gp_strerror(ret),
				     gp_conn_error(w->client, why, sizeof(why)));
			break;
		}
		if (ret && !goodbye) /* whatever else ended the read: the connection is gone */
			set_ended(w, GP_WORKER_END_CLIENT_GONE);
		if (ret && gp__waits_busy()) {
			/* Work it queued is still running for nobody: it ends with the process. */
			gp_log_info(
				"session %llu: the client is gone while a call runs; ending the "
				"session",
				(unsigned long long)w->session_id);
			break;
		}
		if (ret == GP_ECLOSED) {
			gp_log_debug("session %llu: the client closed the connection",
				     (unsigned long long)w->session_id);
			break;
		}
		if (ret) {
			/* A client process that exits closes its socket without a TLS
			 * goodbye; one that crashes or is killed does the same. */
			char why[sizeof(w->client->err)];

			gp_log_debug("session %llu: the client disconnected: %s",
				     (unsigned long long)w->session_id,
				     gp_conn_error(w->client, why, sizeof(why)));
			break;
		}
		if (h.type == GP_MSG_HOST_DONE) {
			ret = gp__host_done(w, &h);
			if (ret)
				break;
			continue;
		}
		if (goodbye) {
			gp_log_warnx("session %llu: closing: %s after the client's goodbye",
				     (unsigned long long)w->session_id,
				     gp_msg_name(h.type) ? gp_msg_name(h.type) : "a frame");
			set_ended(w, GP_WORKER_END_PROTOCOL);
			break;
		}
		if (h.type == GP_MSG_GOODBYE) {
			/* The interposer says it at exit(): the connection closes when its process
			 * is gone. Closing first would wake its reader thread while exit() tears
			 * OpenSSL down under it. */
			set_ended(w, GP_WORKER_END_GOODBYE);
			gp_log_debug("session %llu: the client said goodbye",
				     (unsigned long long)w->session_id);
			goodbye = true;
			continue;
		}
		w->calls++;
		if (w->stats) {
			atomic_fetch_add_explicit(&w->stats->in_call, 1, memory_order_relaxed);
			atomic_store_explicit(&w->stats->last_active, (int64_t)time(NULL),
					      memory_order_relaxed);
		}
		pthread_mutex_lock(&w->lock);
		ret = gp__worker_dispatch(w, &h);
		pthread_mutex_unlock(&w->lock);
		stats_touch(w);
		if (ret) {
			set_ended(w, GP_WORKER_END_PROTOCOL);
			gp_log_warnx("session %llu: closing: %s in %s",
				     (unsigned long long)w->session_id, gp_strerror(ret),
				     gp_msg_name(h.type) ? gp_msg_name(h.type) : "unknown");
			break;
		}
		/* Every answer was flushed by whoever sent it (the connection is concurrent). */
	}
	gp__watch_done();
	set_state(w, GP_SESSION_CLOSING);
}

static void *map_stats(int fd)
{
	void *p = mmap(NULL, GP_STATS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static void usage(void)
{
	fprintf(stderr, "usage: gpupool-worker            (spawned by gpupoold)\n"
			"       gpupool-worker --warm --driver PATH [--tls-cert FILE]\n"
			"       gpupool-worker --inventory --driver PATH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"inventory", no_argument, NULL, 'i'},
		{"warm", no_argument, NULL, 'w'},
		{"driver", required_argument, NULL, 'd'},
		{"tls-cert", required_argument, NULL, 'c'},
		{NULL, 0, NULL, 0},
	};
	struct gp_worker w = {.lock = PTHREAD_MUTEX_INITIALIZER};
	Gp__WorkerSetup *setup;
	const char *driver = "libcuda.so.1", *warm_cert = NULL;
	bool inventory = false, warm = false;
	char tag[64];
	double secs;
	int c;

	struct sigaction sa = {0};

	signal(SIGPIPE, SIG_IGN);
#ifndef __SANITIZE_ADDRESS__ /* LeakSanitizer needs to ptrace its own process */
	/* The worker holds the pool's TLS key and a tenant's data: other processes of the
	 * same user (other tenants' workers) may not ptrace it, and it dumps no core. */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	/* No SA_RESTART: a blocked read returns so the worker can end cleanly. */
	sa.sa_handler = on_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_sigusr1; /* kernel_timeout: see watchdog.c */
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_sigusr2; /* preempted: see gp__worker_preempt_tell */
	sa.sa_flags |= SA_SIGINFO;
	sigaction(SIGUSR2, &sa, NULL);
	gp_log_init("gpupool-worker", GP_LOG_INFO);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			inventory = true;
			break;
		case 'w':
			warm = true;
			break;
		case 'd':
			driver = optarg;
			break;
		case 'c':
			warm_cert = optarg;
			break;
		default:
			usage();
		}
	}
	if (inventory)
		return gp__worker_inventory(driver);
	if (warm) {
		char err[512];
		int nul = open("/dev/null", O_RDONLY);

		/* fd 3 is the client's to come: held until then, or the driver could open a
		 * file there that the client's socket would then replace. */
		if (nul >= 0 && nul != GP_WORKER_FD_CLIENT) {
			dup2(nul, GP_WORKER_FD_CLIENT);
			close(nul);
		}

		/* A driver that cannot be loaded ends this worker: the supervisor then starts
		 * sessions' workers cold, whose clients are told why. */
		if (driver_open(&w, driver, err, sizeof(err))) {
			gp_log_error("warm worker: %s", err);
			return 1;
		}
		/* OpenSSL's first-use costs too, so that the handshake does not wait for them. */
		gp_tls_warm_up(warm_cert);
		/* No session was served: the driver's memory goes with the process. */
		if (warm_wait())
			_exit(0);
	}

	w.started = time(NULL);
	/* The supervisor's accept left the socket non-blocking; this process blocks. */
	fcntl(GP_WORKER_FD_CLIENT, F_SETFL, fcntl(GP_WORKER_FD_CLIENT, F_GETFL) & ~O_NONBLOCK);
	w.ctl = gp_conn_new(GP_WORKER_FD_CONTROL);
	w.client = gp_conn_new(GP_WORKER_FD_CLIENT);
	if (w.client)
		w.client->interrupt = &gp__worker_stop;
	w.staging = malloc(GP_FRAME_BULK_MAX);
	if (!w.ctl || !w.client || !w.staging)
		gp_fatalx("out of memory");
	setup = (Gp__WorkerSetup *)ctl_recv(w.ctl, GP_MSG_WORKER_SETUP);
	if (!setup)
		return 1;
	w.session_id = setup->session_id;
	snprintf(w.client_addr, sizeof(w.client_addr), "%s", setup->client_addr);
	snprintf(tag, sizeof(tag), "gpupool-worker[%llu]", (unsigned long long)w.session_id);
	gp_log_init(tag, (int)setup->log_level);
	gp_log_debug("session %llu: setup: %s worker has its client",
		     (unsigned long long)w.session_id, warm ? "a warm" : "a new");
	session_limits(&w, setup);
	w.stats = map_stats(GP_WORKER_FD_STATS);
	if (w.stats && w.stats->magic != GP_STATS_MAGIC)
		w.stats = NULL;
	set_state(&w, GP_SESSION_HANDSHAKE);

	if (handshake(&w, setup) == 0)
		serve(&w);
	protobuf_c_message_free_unpacked(&setup->base, NULL);

	secs = difftime(time(NULL), w.started);
	gp__busy_final(&w);
	stats_final(&w);
	gp_log_info("session %llu ended: tenant %s client %s duration %.0fs peak %llu bytes "
		    "calls %llu in %llu bytes out %llu bytes",
		    (unsigned long long)w.session_id, w.tenant[0] ? w.tenant : "-", w.client_addr,
		    secs, (unsigned long long)w.mem_peak, (unsigned long long)w.calls,
		    (unsigned long long)w.client->bytes_in,
		    (unsigned long long)w.client->bytes_out);
	if (gp__waits_busy() || gp__host_calls_pending() || gp__stream_answers_pending(&w)) {
		/* A waiter thread is inside the driver: the process ends now, and the driver's
		 * memory goes with it, without tearing anything down under that thread. */
		fflush(NULL);
		_exit(0);
	}
	gp_conn_shutdown(w.client);
	gp_conn_free(w.client);
	gp_conn_free(w.ctl);
	free(w.staging);
	gp__worker_state_free(&w);
	/* Exit without unloading: the driver frees the session's device memory. */
	return 0;
}
