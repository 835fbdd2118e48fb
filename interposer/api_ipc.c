/* api_ipc.c -- CUDA IPC between client processes of one tenant, through the pool.
 *
 * A handle's 64 bytes here are the pool's, never the driver's: a magic naming the kind, the
 * daemon's id, the exporting session's id and 16 random bytes the daemon made
 * (daemon/supervisor/ipc.c). They are sent back as they came; the pool checks them (the
 * tenant, the exporter still running) and refuses anything else with
 * CUDA_ERROR_INVALID_HANDLE. Memory opened is a device range of the registry
 * (GP_RANGE_IPC), so copies and pointer queries know it, until its last close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interposer.h"
#include "log.h"

/* "gpipc", the kind ('M' memory, 'E' event), the layout's version, 0. */
#define HANDLE_MAGIC_LEN 8

struct pool_handle {
	uint64_t host, session, secret_hi, secret_lo;
};

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void make_magic(unsigned char *m, char kind)
{
	memcpy(m, "gpipc", 5);
	m[5] = (unsigned char)kind;
	m[6] = 1;
	m[7] = 0;
}

static void encode(char reserved[64], char kind, const struct pool_handle *h)
{
	unsigned char *b = (unsigned char *)reserved;

	memset(b, 0, 64);
	make_magic(b, kind);
	put64(b + 8, h->host);
	put64(b + 16, h->session);
	put64(b + 24, h->secret_hi);
	put64(b + 32, h->secret_lo);
}

/* false: not a pool handle of this kind (the pool is not asked). */
static bool decode(const char reserved[64], char kind, struct pool_handle *h)
{
	const unsigned char *b = (const unsigned char *)reserved;
	unsigned char m[HANDLE_MAGIC_LEN];

	make_magic(m, kind);
	if (memcmp(b, m, sizeof(m)) != 0)
		return false;
	for (int i = 40; i < 64; i++)
		if (b[i])
			return false;
	h->host = get64(b + 8);
	h->session = get64(b + 16);
	h->secret_hi = get64(b + 24);
	h->secret_lo = get64(b + 32);
	return true;
}

GP_CUDA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
	struct gp_out_ipc_mem_export out;
	struct gp_ictx *c;
	CUresult r;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_ipc_mem_export(
		0, &(struct gp_in_ipc_mem_export){.ctx = c->remote, .dptr = dptr}, &out);
	if (r != CUDA_SUCCESS)
		return r;
	encode(handle->reserved, 'M',
	       &(struct pool_handle){out.host, out.session, out.secret_hi, out.secret_lo});
	return CUDA_SUCCESS;
}

static CUresult open_mem(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned flags)
{
	struct gp_out_ipc_mem_open out;
	struct pool_handle h;
	struct gp_range rg;
	struct gp_ictx *c;
	CUresult r;
	int ret;

	if (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (!decode(handle.reserved, 'M', &h))
		return CUDA_ERROR_INVALID_HANDLE;
	r = gp__rpc_ipc_mem_open(0,
				 &(struct gp_in_ipc_mem_open){.ctx = c->remote,
							      .host = h.host,
							      .session = h.session,
							      .secret_hi = h.secret_hi,
							      .secret_lo = h.secret_lo,
							      .flags = flags},
				 &out);
	if (r != CUDA_SUCCESS)
		return r;
	/* Opened before in this context: the same range, already known here. */
	if (gp__range_find((uintptr_t)out.dptr, &rg) && rg.base == out.dptr &&
	    (rg.flags & GP_RANGE_IPC) && rg.ctx == c) {
		*pdptr = (CUdeviceptr)out.dptr;
		return CUDA_SUCCESS;
	}
	ret = gp__range_add((uintptr_t)out.dptr, (size_t)out.bytes, GP_MEM_DEVICE, c, GP_RANGE_IPC);
	if (ret) {
		struct gp_out_ipc_mem_close unused;

		gp_log_warnx("IPC memory at %#llx: its address is taken here (%s)",
			     (unsigned long long)out.dptr, strerror(-ret));
		gp__rpc_ipc_mem_close(
			0, &(struct gp_in_ipc_mem_close){.ctx = c->remote, .dptr = out.dptr},
			&unused);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pdptr = (CUdeviceptr)out.dptr;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
					      unsigned int flags)
{
	return open_mem(pdptr, handle, flags);
}

#undef cuIpcOpenMemHandle
GP_CUDA_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
					   unsigned int flags);
GP_CUDA_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
					   unsigned int flags)
{
	return open_mem(pdptr, handle, flags);
}

GP_CUDA_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct gp_out_ipc_mem_close out = {0};
	struct gp_range rg;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!gp__range_find((uintptr_t)dptr, &rg) || rg.base != dptr ||
	    !(rg.flags & GP_RANGE_IPC) || !gp__ctx_valid(rg.ctx) || rg.ctx->remote == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_ipc_mem_close(
		0, &(struct gp_in_ipc_mem_close){.ctx = rg.ctx->remote, .dptr = dptr}, &out);
	if (r == CUDA_SUCCESS && out.last)
		gp__range_remove((uintptr_t)dptr, GP_MEM_DEVICE);
	return r;
}

GP_CUDA_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *handle, CUevent event)
{
	struct gp_ievent *ev = (struct gp_ievent *)event;
	struct gp_out_ipc_event_export out;
	CUresult r = gp__ready();

	if (r != CUDA_SUCCESS)
		return r;
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ev || ev->magic != GP_MAGIC_EVENT || !gp__ctx_valid(ev->ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	r = gp__rpc_ipc_event_export(
		0, &(struct gp_in_ipc_event_export){.ctx = ev->ctx->remote, .event = ev->remote},
		&out);
	if (r != CUDA_SUCCESS)
		return r;
	encode(handle->reserved, 'E',
	       &(struct pool_handle){out.host, out.session, out.secret_hi, out.secret_lo});
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuIpcOpenEventHandle(CUevent *pe, CUipcEventHandle handle)
{
	struct gp_out_ipc_event_open out;
	struct pool_handle h;
	struct gp_ievent *ev;
	struct gp_ictx *c;
	CUresult r;

	if (!pe)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__ctx_need(&c);
	if (r != CUDA_SUCCESS)
		return r;
	if (!decode(handle.reserved, 'E', &h))
		return CUDA_ERROR_INVALID_HANDLE;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_ipc_event_open(0,
				   &(struct gp_in_ipc_event_open){.ctx = c->remote,
								  .host = h.host,
								  .session = h.session,
								  .secret_hi = h.secret_hi,
								  .secret_lo = h.secret_lo},
				   &out);
	if (r != CUDA_SUCCESS) {
		free(ev);
		return r;
	}
	ev->magic = GP_MAGIC_EVENT;
	ev->remote = out.event;
	ev->ctx = c;
	ev->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
	*pe = (CUevent)ev;
	return CUDA_SUCCESS;
}
