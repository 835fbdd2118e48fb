/* ipc.c -- CUDA IPC between sessions of one tenant: the pool's handles and what they stand for.
 *
 * A client's cuIpcGetMemHandle or cuIpcGetEventHandle is answered with a pool handle: this
 * daemon's id, the exporting session's id and 16 random bytes this file made. Behind it the
 * supervisor keeps what the exporting worker registered: the driver's own handle and, on
 * softgpu, the descriptors behind it (sent with SCM_RIGHTS). An importing worker presents
 * the pool handle; it gets the driver's handle and the descriptors only when its session's
 * tenant, as the supervisor itself named it at admission, is the exporter's, and the
 * exporter's worker still runs. Everything a worker sends is a claim of a possibly
 * compromised process: the only thing taken from the socket is which session it is.
 *
 * Each worker has its own socket (fd 6, SOCK_SEQPACKET: one request a datagram, its
 * descriptors beside it), read here through a uv_poll_t with non-blocking recvmsg and
 * answered with non-blocking sendmsg: the supervisor never waits on a worker. A worker asks
 * one thing at a time and waits for the answer, so its socket's buffer never fills but by a
 * worker that sends without reading; that session is ended.
 *
 * Bounds: IPC_MAX_EXPORTS handles per session (then CUDA_ERROR_OUT_OF_MEMORY), and at most
 * IPC_MAX_FDS distinct descriptors held for it (softgpu needs two: the device memory's memfd
 * and the registry's). All of it goes when the exporter's worker exits: later opens fail
 * with CUDA_ERROR_INVALID_HANDLE, as CUDA's do once the exporter has gone. A memory export
 * goes earlier when its worker withdraws it (the allocation was freed, or its context went):
 * a worker withdraws only its own, named by the driver's handle it registered, and the
 * descriptors no export of it names any more are closed. Mappings already opened keep
 * their pages (the importing worker holds its own descriptors).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "gpupool.pb-c.h"
#include "fdpass.h"
#include "log.h"

#define IPC_MAX_EXPORTS 256
#define IPC_MAX_FDS 8
#define IPC_MSG_MAX 1024
#define IPC_READS_PER_WAKE 16 /* then the loop serves others before this worker again */
#define IPC_HANDLE_BYTES 64
#define IPC_SECRET_BYTES 16

/* CUresult values (the supervisor does not include cuda.h). */
#define CU_OK 0u
#define CU_INVALID_VALUE 1u
#define CU_OUT_OF_MEMORY 2u
#define CU_INVALID_CONTEXT 201u
#define CU_INVALID_HANDLE 400u

enum { IPC_OP_EXPORT = 1, IPC_OP_OPEN = 2, IPC_OP_WITHDRAW = 3 };
enum { IPC_KIND_MEM = 1, IPC_KIND_EVENT = 2 };

struct ipc_export {
	uint8_t secret[IPC_SECRET_BYTES];
	uint32_t kind;
	uint8_t handle[IPC_HANDLE_BYTES];
	int fd[2]; /* indices into the channel's fds, -1: none */
	unsigned nfds;
};

struct gp_ipc_chan {
	struct gp_session *s; /* NULL once its worker has gone */
	uv_poll_t poll;
	int fd;
	struct ipc_export *exp;
	unsigned nexp;
	struct {
		int fd; /* -1: a slot free again */
		dev_t dev;
		ino_t ino;
	} fds[IPC_MAX_FDS];
	unsigned nfds; /* slots used, free ones included */
};

static uint64_t host_id;

static void close_all(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* This daemon's id in its handles: random per start, never 0. */
static uint64_t host(void)
{
	while (host_id == 0)
		if (getrandom(&host_id, sizeof(host_id), 0) != sizeof(host_id))
			host_id = 0;
	return host_id;
}

static bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

static void reply(struct gp_ipc_chan *c, Gp__IpcReply *rep, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	uint8_t buf[IPC_MSG_MAX];
	struct iovec iov = {.iov_base = buf};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t len = protobuf_c_message_get_packed_size(&rep->base);
	ssize_t n;

	if (len > sizeof(buf) || nfds > 2)
		return;
	iov.iov_len = protobuf_c_message_pack(&rep->base, buf);
	(void)gp_fdpass_attach(&m, u.buf, sizeof(u.buf), fds, nfds); /* nfds <= 2: fits */
	do {
		n = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && c->s) {
		/* Full: a worker that sends without reading its answers. (Any other error:
		 * the worker is gone, and its exit is on its way.) */
		gp_log_warnx("session %llu: its IPC socket does not take answers (%s); ending it",
			     (unsigned long long)c->s->id, strerror(errno));
		gp__session_kill(c->s, SIGKILL);
	}
}

/* The channel's index of a descriptor like fd (the same file), taking fd; -1 when full. */
static int keep_fd(struct gp_ipc_chan *c, int fd)
{
	struct stat st;
	unsigned slot = c->nfds;

	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	for (unsigned i = 0; i < c->nfds; i++) {
		if (c->fds[i].fd >= 0 && c->fds[i].dev == st.st_dev && c->fds[i].ino == st.st_ino) {
			close(fd);
			return (int)i;
		}
		if (c->fds[i].fd < 0 && slot == c->nfds)
			slot = i;
	}
	if (slot == IPC_MAX_FDS) {
		close(fd);
		return -1;
	}
	c->fds[slot].fd = fd;
	c->fds[slot].dev = st.st_dev;
	c->fds[slot].ino = st.st_ino;
	if (slot == c->nfds)
		c->nfds++;
	return (int)slot;
}

/* Only what softgpu hands over: a regular file sealed at its size (a memfd). The importer's
 * softgpu checks the same again; this keeps the supervisor from carrying anything else. */
static bool sealed_memfd(int fd)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 &&
	       (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW);
}

static unsigned do_export(struct gp_ipc_chan *c, const Gp__IpcRequest *rq, int *fds, unsigned nfds,
			  Gp__IpcReply *rep, uint8_t *secret)
{
	struct gp_session *s = c->s;
	struct ipc_export *e, *grown;

	if ((rq->kind != IPC_KIND_MEM && rq->kind != IPC_KIND_EVENT) ||
	    rq->handle.len != IPC_HANDLE_BYTES || rq->nfds != nfds || nfds > 2)
		return CU_INVALID_VALUE;
	for (unsigned i = 0; i < nfds; i++)
		if (!sealed_memfd(fds[i]))
			return CU_INVALID_VALUE;
	if (!s->admitted_ms || s->refused)
		return CU_INVALID_CONTEXT;
	/* The same driver handle again (another pointer into one allocation): the same pool
	 * handle, as CUDA gives the same bytes. */
	for (unsigned i = 0; i < c->nexp; i++) {
		e = &c->exp[i];
		if (e->kind == rq->kind &&
		    memcmp(e->handle, rq->handle.data, IPC_HANDLE_BYTES) == 0) {
			memcpy(secret, e->secret, IPC_SECRET_BYTES);
			goto answer;
		}
	}
	if (c->nexp == IPC_MAX_EXPORTS)
		return CU_OUT_OF_MEMORY;
	grown = realloc(c->exp, (c->nexp + 1) * sizeof(*c->exp));
	if (!grown)
		return CU_OUT_OF_MEMORY;
	c->exp = grown;
	e = &c->exp[c->nexp];
	memset(e, 0, sizeof(*e));
	e->fd[0] = e->fd[1] = -1;
	if (getrandom(e->secret, sizeof(e->secret), 0) != sizeof(e->secret))
		return CU_OUT_OF_MEMORY;
	for (unsigned i = 0; i < nfds; i++) {
		e->fd[i] = keep_fd(c, fds[i]);
		fds[i] = -1;
		if (e->fd[i] < 0)
			return CU_OUT_OF_MEMORY; /* the ones kept stay with the channel */
	}
	e->nfds = nfds;
	e->kind = rq->kind;
	memcpy(e->handle, rq->handle.data, IPC_HANDLE_BYTES);
	memcpy(secret, e->secret, IPC_SECRET_BYTES);
	c->nexp++;
answer:
	rep->host = host();
	rep->session = s->id;
	rep->secret.data = secret;
	rep->secret.len = IPC_SECRET_BYTES;
	return CU_OK;
}

/* The worker's own memory export of this driver handle goes (its allocation was freed), and
 * the descriptors no other export names. */
static unsigned do_withdraw(struct gp_ipc_chan *c, const Gp__IpcRequest *rq)
{
	struct ipc_export gone;
	unsigned i;

	if (rq->kind != IPC_KIND_MEM || rq->handle.len != IPC_HANDLE_BYTES || rq->nfds)
		return CU_INVALID_VALUE;
	for (i = 0; i < c->nexp; i++)
		if (c->exp[i].kind == rq->kind &&
		    memcmp(c->exp[i].handle, rq->handle.data, IPC_HANDLE_BYTES) == 0)
			break;
	if (i == c->nexp)
		return CU_INVALID_VALUE;
	gone = c->exp[i];
	c->exp[i] = c->exp[--c->nexp];
	for (unsigned k = 0; k < gone.nfds; k++) {
		int f = gone.fd[k];
		bool named = false;

		for (unsigned j = 0; j < c->nexp && !named; j++)
			named = (c->exp[j].nfds > 0 && c->exp[j].fd[0] == f) ||
				(c->exp[j].nfds > 1 && c->exp[j].fd[1] == f);
		if (!named && f >= 0 && c->fds[f].fd >= 0) {
			close(c->fds[f].fd);
			c->fds[f].fd = -1;
		}
	}
	gp_log_debug("session %llu withdrew an IPC memory export", (unsigned long long)c->s->id);
	return CU_OK;
}

static unsigned do_open(struct gp_ipc_chan *c, const Gp__IpcRequest *rq, Gp__IpcReply *rep,
			int *fds, unsigned *nfds)
{
	struct gp_session *s = c->s, *x;
	const struct ipc_export *e = NULL;

	if (rq->kind != IPC_KIND_MEM && rq->kind != IPC_KIND_EVENT)
		return CU_INVALID_VALUE;
	if (!s->admitted_ms || s->refused)
		return CU_INVALID_CONTEXT;
	/* Another daemon's, a session not known (any more), a guessed secret: the same answer,
	 * CUDA's for a handle that opens nothing. */
	if (rq->host != host() || rq->secret.len != IPC_SECRET_BYTES)
		return CU_INVALID_HANDLE;
	x = gp__session_find(s->d, rq->session);
	if (!x || x->exited || !x->ipc || !x->admitted_ms || x->refused)
		return CU_INVALID_HANDLE;
	for (unsigned i = 0; i < x->ipc->nexp; i++) {
		if (x->ipc->exp[i].kind == rq->kind &&
		    same_bytes(x->ipc->exp[i].secret, rq->secret.data, IPC_SECRET_BYTES)) {
			e = &x->ipc->exp[i];
			break;
		}
	}
	if (!e)
		return CU_INVALID_HANDLE;
	if (strcmp(x->tenant, s->tenant) != 0 || !s->tenant[0]) {
		gp_log_warnx("session %llu (tenant %s) presented an IPC handle of session %llu "
			     "(tenant %s): refused",
			     (unsigned long long)s->id, s->tenant, (unsigned long long)x->id,
			     x->tenant);
		return CU_INVALID_HANDLE;
	}
	if (x == s)
		return CU_INVALID_CONTEXT; /* CUDA: a process cannot open its own handle */
	for (unsigned i = 0; i < e->nfds; i++)
		fds[i] = x->ipc->fds[e->fd[i]].fd;
	*nfds = e->nfds;
	rep->handle.data = (uint8_t *)e->handle;
	rep->handle.len = IPC_HANDLE_BYTES;
	gp_log_debug("session %llu opened an IPC handle of session %llu (tenant %s)",
		     (unsigned long long)s->id, (unsigned long long)x->id, x->tenant);
	return CU_OK;
}

/* One datagram: its descriptors taken (closed unless kept), answered. */
static void serve(struct gp_ipc_chan *c, const uint8_t *buf, size_t len, int *fds, unsigned nfds)
{
	Gp__IpcReply rep = GP__IPC_REPLY__INIT;
	Gp__IpcRequest *rq = gp__ipc_request__unpack(NULL, len, buf);
	uint8_t secret[IPC_SECRET_BYTES];
	int out[2];
	unsigned nout = 0;

	if (!rq) {
		gp_log_warnx("session %llu: an IPC request that does not parse; ending it",
			     (unsigned long long)c->s->id);
		gp__session_kill(c->s, SIGKILL);
		close_all(fds, nfds);
		return;
	}
	rep.seq = rq->seq;
	if (rq->op == IPC_OP_EXPORT)
		rep.result = do_export(c, rq, fds, nfds, &rep, secret);
	else if (rq->op == IPC_OP_OPEN && nfds == 0)
		rep.result = do_open(c, rq, &rep, out, &nout);
	else if (rq->op == IPC_OP_WITHDRAW && nfds == 0)
		rep.result = do_withdraw(c, rq);
	else
		rep.result = CU_INVALID_VALUE;
	close_all(fds, nfds);
	if (rep.result != CU_OK)
		nout = 0;
	rep.nfds = nout;
	reply(c, &rep, out, nout);
	gp__ipc_request__free_unpacked(rq, NULL);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct gp_ipc_chan *c = p->data;

	for (int k = 0; k < IPC_READS_PER_WAKE && c->s; k++) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} u;
		uint8_t buf[IPC_MSG_MAX];
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr m = {.msg_iov = &iov,
				   .msg_iovlen = 1,
				   .msg_control = u.buf,
				   .msg_controllen = sizeof(u.buf)};
		int fds[4];
		unsigned nfds = 0;
		ssize_t n;

		n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			uv_poll_stop(p); /* the worker closed it, or is gone */
			return;
		}
		nfds = gp_fdpass_take(&m, fds, 4);
		if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
			close_all(fds, nfds);
			gp_log_warnx("session %llu: an IPC request too large; ending it",
				     (unsigned long long)c->s->id);
			gp__session_kill(c->s, SIGKILL);
			return;
		}
		serve(c, buf, (size_t)n, fds, nfds);
	}
	(void)status;
	(void)events;
}

int gp__ipc_attach(struct gp_session *s, int fd)
{
	struct gp_ipc_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->s = s;
	c->fd = fd;
	if (uv_poll_init(s->d->loop, &c->poll, fd)) {
		free(c);
		return -1;
	}
	c->poll.data = c;
	uv_poll_start(&c->poll, UV_READABLE, on_readable);
	s->ipc = c;
	return 0;
}

static void on_poll_closed(uv_handle_t *h)
{
	struct gp_ipc_chan *c = h->data;

	close(c->fd);
	free(c);
}

void gp__ipc_detach(struct gp_session *s)
{
	struct gp_ipc_chan *c = s->ipc;

	if (!c)
		return;
	s->ipc = NULL;
	c->s = NULL;
	for (unsigned i = 0; i < c->nfds; i++)
		if (c->fds[i].fd >= 0)
			close(c->fds[i].fd);
	free(c->exp);
	c->exp = NULL;
	c->nexp = c->nfds = 0;
	uv_close((uv_handle_t *)&c->poll, on_poll_closed);
}
