/* ipc.c -- CUDA IPC between sessions of one tenant, through the supervisor.
 *
 * The client never sees the driver's handle: cuIpcGetMemHandle and cuIpcGetEventHandle
 * register it with the supervisor (with, on softgpu, the descriptors behind it, from
 * softgpu's own export table, src/softgpu_ipc.h) and answer the pool handle the supervisor
 * made. An open asks the supervisor for what a pool handle stands for; only a session of the
 * exporter's tenant, while the exporter runs, gets the driver's handle (and the descriptors,
 * given to softgpu before the driver's own open). daemon/supervisor/ipc.c decides; this
 * file trusts it no more than it must: what the driver opens is the driver's to check.
 *
 * Memory opened here is the session's to copy to and from and to launch on (a range of its
 * table, like a module's global: not freeable and not charged, so the exporter alone pays
 * for it) until cuIpcCloseMemHandle has closed every open of it. An opened event is an
 * ordinary event handle of the session.
 *
 * An export of the session's memory lasts as long as its allocation: when it is freed, or
 * its context goes, the worker withdraws it (before the driver frees it), so a later open of
 * its pool handle is refused, and memory the session allocates later at the same address is
 * never reached through it.
 *
 * The supervisor is asked on the worker's IPC socket (GP_WORKER_FD_IPC, SOCK_SEQPACKET), one
 * request at a time under w->lock, waiting at most IPC_WAIT_MS for the answer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpupool.pb-c.h"
#include "fdpass.h"
#include "log.h"
#include "softgpu_ipc.h"
#include "worker.h"

#define IPC_WAIT_MS 10000
#define IPC_MSG_MAX 1024
#define IPC_MAX_IMPORTS 512
/* The owner of an opened range in the session's table (a module id never is all ones). */
#define IPC_OWNER UINT64_MAX

enum { IPC_OP_EXPORT = 1, IPC_OP_OPEN = 2, IPC_OP_WITHDRAW = 3 };
enum { IPC_KIND_MEM = 1, IPC_KIND_EVENT = 2 };

/* The driver's IPC entry points, found on first use (NVIDIA's and softgpu's both have them). */
static struct {
	bool looked;
	CUresult (*get_mem)(CUipcMemHandle *, CUdeviceptr);
	CUresult (*open_mem)(CUdeviceptr *, CUipcMemHandle, unsigned);
	CUresult (*close_mem)(CUdeviceptr);
	CUresult (*get_event)(CUipcEventHandle *, CUevent);
	CUresult (*open_event)(CUevent *, CUipcEventHandle);
	CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr);
	const struct gp__softgpu_ipc *fds; /* softgpu's export table; NULL: the driver's own IPC */
	bool sock_ok;
} drv;

/* One opened allocation: where, in which context, how many opens are outstanding. */
struct import {
	CUdeviceptr dptr;
	uint64_t ctx;
	unsigned opens;
};
static struct import imports[IPC_MAX_IMPORTS];
static unsigned nimports;
static uint32_t next_seq;

/* One allocation of the session's that was exported, and its driver handle (as many as the
 * supervisor keeps a session). */
#define IPC_MAX_EXPORTS 256
struct mem_export {
	CUdeviceptr ptr;
	uint64_t ctx;
	CUipcMemHandle h;
};
static struct mem_export exports[IPC_MAX_EXPORTS];
static unsigned nexports;

static void look_up(struct gp_worker *w)
{
	CUresult (*table)(const void **, const CUuuid *);
	const void *t = NULL;
	CUuuid id;
	int type = 0;
	socklen_t len = sizeof(type);

	if (drv.looked)
		return;
	drv.looked = true;
	if (!w->drv.dl)
		return;
	drv.get_mem = (__typeof__(drv.get_mem))dlsym(w->drv.dl, "cuIpcGetMemHandle");
	drv.open_mem = (__typeof__(drv.open_mem))dlsym(w->drv.dl, "cuIpcOpenMemHandle_v2");
	drv.close_mem = (__typeof__(drv.close_mem))dlsym(w->drv.dl, "cuIpcCloseMemHandle");
	drv.get_event = (__typeof__(drv.get_event))dlsym(w->drv.dl, "cuIpcGetEventHandle");
	drv.open_event = (__typeof__(drv.open_event))dlsym(w->drv.dl, "cuIpcOpenEventHandle");
	drv.range = (__typeof__(drv.range))dlsym(w->drv.dl, "cuMemGetAddressRange_v2");
	table = (__typeof__(table))dlsym(w->drv.dl, "cuGetExportTable");
	memcpy(id.bytes, GP_SOFTGPU_IPC_ID_BYTES, sizeof(id.bytes));
	if (table && table(&t, &id) == CUDA_SUCCESS && t &&
	    ((const struct gp__softgpu_ipc *)t)->size >= sizeof(struct gp__softgpu_ipc))
		drv.fds = t;
	/* Only the supervisor's socket: a worker started some other way has none there. */
	drv.sock_ok = getsockopt(GP_WORKER_FD_IPC, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
		      type == SOCK_SEQPACKET;
}

static bool usable(struct gp_worker *w)
{
	look_up(w);
	return drv.sock_ok && drv.get_mem && drv.open_mem && drv.close_mem && drv.get_event &&
	       drv.open_event && drv.range;
}

static void close_fds(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int send_request(Gp__IpcRequest *rq, const int *fds, unsigned nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	uint8_t buf[IPC_MSG_MAX];
	struct iovec iov = {.iov_base = buf};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (protobuf_c_message_get_packed_size(&rq->base) > sizeof(buf) || nfds > 2)
		return -EINVAL;
	iov.iov_len = protobuf_c_message_pack(&rq->base, buf);
	(void)gp_fdpass_attach(&m, u.buf, sizeof(u.buf), fds, nfds); /* nfds <= 2: fits */
	do {
		n = sendmsg(GP_WORKER_FD_IPC, &m, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

/* The answer to request seq, with up to two descriptors; NULL when none came in time. A
 * late answer to an earlier request is dropped. */
static Gp__IpcReply *await_reply(uint32_t seq, int *fds, unsigned *nfds)
{
	for (;;) {
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
		struct pollfd p = {GP_WORKER_FD_IPC, POLLIN, 0};
		struct timespec ts = {IPC_WAIT_MS / 1000, 0};
		int got[4];
		unsigned ngot = 0;
		Gp__IpcReply *rep;
		ssize_t n;
		int pr;

		pr = ppoll(&p, 1, &ts, NULL);
		if (pr < 0 && errno == EINTR && !gp__worker_stop)
			continue;
		if (pr <= 0)
			return NULL;
		n = recvmsg(GP_WORKER_FD_IPC, &m, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return NULL;
		ngot = gp_fdpass_take(&m, got, 4);
		rep = gp__ipc_reply__unpack(NULL, (size_t)n, buf);
		if (!rep || rep->seq != seq || ngot > 2 || rep->nfds != ngot ||
		    (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			close_fds(got, ngot);
			if (rep)
				gp__ipc_reply__free_unpacked(rep, NULL);
			continue;
		}
		memcpy(fds, got, ngot * sizeof(int));
		*nfds = ngot;
		return rep;
	}
}

static Gp__IpcReply *ask(Gp__IpcRequest *rq, const int *fds, unsigned nfds, int *rfds,
			 unsigned *nrfds)
{
	rq->seq = ++next_seq;
	*nrfds = 0;
	if (send_request(rq, fds, nfds)) {
		gp_log_warnx("IPC: cannot ask the pool");
		return NULL;
	}
	return await_reply(rq->seq, rfds, nrfds);
}

static void secret_bytes(uint64_t hi, uint64_t lo, uint8_t out[16])
{
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(hi >> (56 - 8 * i));
		out[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
	}
}

static uint64_t secret_half(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* Registers a driver handle (64 bytes) with the supervisor; the pool handle in the outs. */
static CUresult export_handle(uint32_t kind, const void *handle, uint64_t *host, uint64_t *session,
			      uint64_t *hi, uint64_t *lo)
{
	Gp__IpcRequest rq = GP__IPC_REQUEST__INIT;
	Gp__IpcReply *rep;
	int fds[2] = {-1, -1}, send[2], none[2];
	unsigned nsend = 0, nnone;
	CUresult r;

	if (drv.fds) {
		r = drv.fds->export_fds(handle, fds);
		if (r != CUDA_SUCCESS)
			return r;
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				send[nsend++] = fds[i];
	}
	rq.op = IPC_OP_EXPORT;
	rq.kind = kind;
	rq.handle.data = (uint8_t *)handle;
	rq.handle.len = 64;
	rq.nfds = nsend;
	rep = ask(&rq, send, nsend, none, &nnone);
	close_fds(fds, 2);
	close_fds(none, nnone);
	if (!rep)
		return CUDA_ERROR_OPERATING_SYSTEM;
	r = (CUresult)rep->result;
	if (r == CUDA_SUCCESS && rep->secret.len == 16) {
		*host = rep->host;
		*session = rep->session;
		*hi = secret_half(rep->secret.data);
		*lo = secret_half(rep->secret.data + 8);
	} else if (r == CUDA_SUCCESS) {
		r = CUDA_ERROR_OPERATING_SYSTEM;
	}
	gp__ipc_reply__free_unpacked(rep, NULL);
	return r;
}

/* What a pool handle stands for, the driver's handle in handle and softgpu told of its
 * descriptors; the supervisor's refusal otherwise. */
static CUresult open_handle(uint32_t kind, uint64_t host, uint64_t session, uint64_t hi,
			    uint64_t lo, void *handle)
{
	Gp__IpcRequest rq = GP__IPC_REQUEST__INIT;
	uint8_t secret[16];
	Gp__IpcReply *rep;
	int fds[2] = {-1, -1};
	unsigned nfds = 0;
	CUresult r;

	secret_bytes(hi, lo, secret);
	rq.op = IPC_OP_OPEN;
	rq.kind = kind;
	rq.host = host;
	rq.session = session;
	rq.secret.data = secret;
	rq.secret.len = sizeof(secret);
	rep = ask(&rq, NULL, 0, fds, &nfds);
	if (!rep)
		return CUDA_ERROR_OPERATING_SYSTEM;
	r = (CUresult)rep->result;
	if (r == CUDA_SUCCESS && rep->handle.len != 64)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS) {
		memcpy(handle, rep->handle.data, 64);
		if (nfds && !drv.fds) {
			r = CUDA_ERROR_INVALID_HANDLE; /* descriptors for a driver that takes none */
		} else if (nfds) {
			/* Memory: the device memfd and the registry; an event: the registry. */
			int give[2] = {-1, -1};

			if (kind == IPC_KIND_MEM && nfds == 2) {
				give[0] = fds[0];
				give[1] = fds[1];
			} else if (kind == IPC_KIND_EVENT && nfds == 1) {
				give[1] = fds[0];
			} else {
				r = CUDA_ERROR_INVALID_HANDLE;
			}
			if (r == CUDA_SUCCESS)
				r = drv.fds->provide_fds(handle, give);
		}
	}
	close_fds(fds, nfds);
	gp__ipc_reply__free_unpacked(rep, NULL);
	return r;
}

CUresult gp__serve_ipc_mem_export(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_ipc_mem_export *a,
				  struct gp_out_ipc_mem_export *o)
{
	struct gp_alloc *al = gp__alloc_find(w, a->dptr);
	struct mem_export *e = NULL;
	CUipcMemHandle h;
	CUresult r;

	if (!usable(w))
		return CUDA_ERROR_NOT_SUPPORTED;
	/* Only the session's own cuMemAlloc memory: not a global, pool memory or an opened
	 * range (the driver refuses the rest too). */
	if (!al || al->module || al->pool || al->graph)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < nexports && !e; i++)
		if (exports[i].ptr == al->ptr && exports[i].ctx == al->ctx)
			e = &exports[i];
	if (!e && nexports == IPC_MAX_EXPORTS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(&h, 0, sizeof(h));
	r = drv.get_mem(&h, a->dptr);
	if (r != CUDA_SUCCESS)
		return r;
	r = export_handle(IPC_KIND_MEM, &h, &o->host, &o->session, &o->secret_hi, &o->secret_lo);
	if (r == CUDA_SUCCESS && !e)
		exports[nexports++] = (struct mem_export){al->ptr, al->ctx, h};
	return r;
}

/* Export i withdrawn from the supervisor, and from the list. */
static void withdraw(unsigned i)
{
	Gp__IpcRequest rq = GP__IPC_REQUEST__INIT;
	Gp__IpcReply *rep;
	int none[2];
	unsigned nnone;

	rq.op = IPC_OP_WITHDRAW;
	rq.kind = IPC_KIND_MEM;
	rq.handle.data = (uint8_t *)&exports[i].h;
	rq.handle.len = sizeof(exports[i].h);
	rep = ask(&rq, NULL, 0, none, &nnone);
	close_fds(none, nnone);
	/* Not withdrawn (the pool did not answer): its later opens reach the driver, which
	 * checks the handle itself. */
	if (!rep || rep->result != CUDA_SUCCESS)
		gp_log_warnx("IPC: an export of freed memory not withdrawn (%d)",
			     rep ? (int)rep->result : -1);
	if (rep)
		gp__ipc_reply__free_unpacked(rep, NULL);
	exports[i] = exports[--nexports];
}

void gp__ipc_mem_freed(struct gp_worker *w, CUdeviceptr ptr, uint64_t ctx)
{
	(void)w;
	for (unsigned i = 0; i < nexports;) {
		if (exports[i].ptr == ptr && exports[i].ctx == ctx)
			withdraw(i);
		else
			i++;
	}
}

void gp__ipc_forget_ctx(struct gp_worker *w, uint64_t ctx)
{
	(void)w;
	for (unsigned i = 0; i < nexports;) {
		if (exports[i].ctx == ctx)
			withdraw(i);
		else
			i++;
	}
}

/* Opens whose range left the session's table (their context was destroyed, which closes
 * them in the driver too) are forgotten. */
static void prune(struct gp_worker *w)
{
	for (unsigned i = 0; i < nimports;) {
		struct gp_alloc *al = gp__alloc_find(w, imports[i].dptr);

		if (al && al->ptr == imports[i].dptr && al->module == IPC_OWNER &&
		    al->ctx == imports[i].ctx)
			i++;
		else
			imports[i] = imports[--nimports];
	}
}

static struct import *import_find(CUdeviceptr dptr, uint64_t ctx)
{
	for (unsigned i = 0; i < nimports; i++)
		if (imports[i].dptr == dptr && imports[i].ctx == ctx)
			return &imports[i];
	return NULL;
}

CUresult gp__serve_ipc_mem_open(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_ipc_mem_open *a,
				struct gp_out_ipc_mem_open *o)
{
	CUipcMemHandle h;
	CUdeviceptr p = 0, base = 0;
	struct import *im;
	size_t size = 0;
	CUresult r;

	if (!usable(w))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (a->flags & ~(uint32_t)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	r = open_handle(IPC_KIND_MEM, a->host, a->session, a->secret_hi, a->secret_lo, &h);
	if (r != CUDA_SUCCESS)
		return r;
	prune(w);
	r = drv.open_mem(&p, h, a->flags);
	if (r != CUDA_SUCCESS)
		return r;
	r = drv.range(&base, &size, p);
	if (r != CUDA_SUCCESS || base != p || size == 0) {
		drv.close_mem(p);
		return r != CUDA_SUCCESS ? r : CUDA_ERROR_UNKNOWN;
	}
	im = import_find(p, a->ctx);
	if (!im) {
		if (nimports == IPC_MAX_IMPORTS || gp__global_add(w, p, size, a->ctx, IPC_OWNER)) {
			drv.close_mem(p);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		im = &imports[nimports++];
		*im = (struct import){.dptr = p, .ctx = a->ctx};
	}
	im->opens++;
	o->dptr = p;
	o->bytes = size;
	return CUDA_SUCCESS;
}

CUresult gp__serve_ipc_mem_close(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_ipc_mem_close *a,
				 struct gp_out_ipc_mem_close *o)
{
	struct import *im = import_find(a->dptr, a->ctx);
	struct gp_alloc *al;
	CUresult r;

	if (!im)
		return CUDA_ERROR_INVALID_VALUE;
	r = drv.close_mem(a->dptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (--im->opens > 0)
		return CUDA_SUCCESS;
	al = gp__alloc_find(w, a->dptr);
	if (al && al->ptr == a->dptr && al->module == IPC_OWNER)
		gp__alloc_remove(w, al);
	*im = imports[--nimports];
	o->last = 1;
	return CUDA_SUCCESS;
}

CUresult gp__serve_ipc_event_export(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_ipc_event_export *a,
				    struct gp_out_ipc_event_export *o)
{
	CUipcEventHandle h;
	CUresult r;

	if (!usable(w))
		return CUDA_ERROR_NOT_SUPPORTED;
	memset(&h, 0, sizeof(h));
	r = drv.get_event(&h, a->event_drv);
	if (r != CUDA_SUCCESS)
		return r;
	return export_handle(IPC_KIND_EVENT, &h, &o->host, &o->session, &o->secret_hi,
			     &o->secret_lo);
}

CUresult gp__serve_ipc_event_open(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_ipc_event_open *a,
				  struct gp_out_ipc_event_open *o)
{
	CUipcEventHandle h;
	CUevent e;
	uint64_t id;
	CUresult r;

	if (!usable(w))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (gp_owner_count(&w->own, GP_H_EVENT) >= w->caps.events)
		return CUDA_ERROR_OUT_OF_MEMORY; /* max_events */
	r = open_handle(IPC_KIND_EVENT, a->host, a->session, a->secret_hi, a->secret_lo, &h);
	if (r != CUDA_SUCCESS)
		return r;
	r = drv.open_event(&e, h);
	if (r != CUDA_SUCCESS)
		return r;
	id = gp__handle_new(w, GP_H_EVENT, e);
	if (!id) {
		GP_DRV(w, cuEventDestroy_v2, e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	gp__handle_get(w, id, GP_H_EVENT)->parent = a->ctx;
	o->event = id;
	return CUDA_SUCCESS;
}
