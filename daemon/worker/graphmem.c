/* graphmem.c -- graph memory: allocation and free nodes, their ranges, what they cost.
 *
 * An allocation node's address range is fixed while its graph lives (CUDA's rule), so the
 * range is the session's from the node's creation (explicit, or a cuMemAllocAsync on a
 * capturing stream): owner records tagged with the graph's handle id, never reused
 * (gp_owner_graphmem_add), which the range checks of copies and memsets accept. Whether
 * the memory is mapped at a given moment (allocated by a launch, not freed yet) is the
 * driver's to say: a copy into graph memory that is not allocated fails there, as it would
 * on a local GPU.
 *
 * Memory an executable allocated lives on until it is freed, also after its graph and the
 * executable are gone (CUDA's rule), so a destroyed graph's ranges stay, orphaned, until no
 * executable of that graph lives and the driver has no memory there any more (or it is
 * freed outside a graph, or the driver gives the address to a new allocation node).
 *
 * What it costs the session's memory limit:
 *  - an executable graph is charged, from its instantiation to its destroy, the sum of its
 *    graph's allocation nodes, each rounded up to the device's allocation granularity (the
 *    most its launches can hold at once), walked in the driver's graph; an instantiation
 *    past the session's limit is CUDA_ERROR_OUT_OF_MEMORY;
 *  - beyond that, what the driver keeps reserved for graphs on the device
 *    (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: allocations left unfreed by an executable that
 *    is gone, memory cached until a trim) is charged as `graphmem_extra`, measured again
 *    after each launch of an executable with allocation nodes, executable destroy, graph
 *    destroy, context destroy, trim and attribute reset.
 * A worker is one process for one session, so the driver's per-device figures are the
 * session's own.
 *
 * Graph memory from several devices in one graph is refused at instantiation
 * (CUDA_ERROR_NOT_SUPPORTED): the executable's charge is on one device.
 */
#include <stdlib.h>
#include <string.h>

#include "worker.h"

static CUresult drv_device(struct gp_worker *w, int dev, CUdevice *out)
{
	return w->drv.cuDeviceGet(out, dev);
}

void gp__graphmem_refresh(struct gp_worker *w, int device)
{
	if (!w->graphmem_seen)
		return; /* no graph memory was ever made: nothing reserved, no driver call */
	for (int d = 0; d < w->ndev && d < GP_STATS_MAX_DEVICES; d++) {
		cuuint64_t reserved = 0;
		uint64_t execs = 0, extra;
		int64_t delta;
		CUdevice drv;

		if ((device >= 0 && d != device) || drv_device(w, d, &drv) ||
		    GP_DRV(w, cuDeviceGetGraphMemAttribute, drv,
			   CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved))
			continue;
		for (uint32_t i = 0; i < w->nhandles; i++)
			if (w->handles[i].kind == GP_H_GRAPH_EXEC && w->handles[i].device == d)
				execs += w->handles[i].charge;
		extra = reserved > execs ? reserved - execs : 0;
		if (extra == w->graphmem_extra[d])
			continue;
		delta = (int64_t)extra - (int64_t)w->graphmem_extra[d];
		if (gp_owner_charge(&w->own, d, delta) == 0)
			w->graphmem_extra[d] = extra;
		gp__publish_mem(w);
	}
}

void gp__graphmem_forget(struct gp_worker *w, uint64_t graph)
{
	gp_owner_graphmem_forget(&w->own, graph);
}

/* Whether an executable instantiated from the graph tagged so still lives. */
static bool exec_alive(struct gp_worker *w, uint64_t tag)
{
	for (uint32_t i = 0; i < w->nhandles; i++)
		if (w->handles[i].kind == GP_H_GRAPH_EXEC &&
		    (uint64_t)(uintptr_t)w->handles[i].aux == tag)
			return true;
	return false;
}

/* An orphaned range (its graph gone) goes once no executable of its graph lives and the
 * driver no longer has memory there (freed by its graph, outside it, or never allocated). */
static void sweep(struct gp_worker *w)
{
	for (size_t i = w->nallocs; i-- > 0;) {
		struct gp_alloc *a = &w->allocs[i];
		CUdeviceptr base;
		size_t size;
		CUresult r;

		if (!(a->graph & GP_GRAPHMEM_ORPHAN) ||
		    exec_alive(w, a->graph & ~GP_GRAPHMEM_ORPHAN))
			continue;
		r = GP_DRV(w, cuMemGetAddressRange_v2, &base, &size, a->ptr);
		/* only the driver's "no memory there" drops it (not, say, a context error) */
		if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE)
			gp__alloc_remove(w, a);
	}
}

void gp__graphmem_graph_gone(struct gp_worker *w, uint64_t graph)
{
	if (!w->graphmem_seen)
		return;
	gp_owner_graphmem_orphan(&w->own, graph);
	sweep(w);
}

void gp__graphmem_exec_gone(struct gp_worker *w)
{
	if (!w->graphmem_seen)
		return;
	sweep(w);
	gp__graphmem_refresh(w, -1);
}

void gp__graphmem_freed(struct gp_worker *w, struct gp_alloc *a)
{
	/* freed outside its graph: with the graph and its executables gone, nothing can
	 * allocate it again */
	if ((a->graph & GP_GRAPHMEM_ORPHAN) && !exec_alive(w, a->graph & ~GP_GRAPHMEM_ORPHAN))
		gp__alloc_remove(w, a);
}

int gp__graphmem_note(struct gp_worker *w, uint64_t graph, CUdeviceptr p, uint64_t bytes,
		      uint64_t ctx, int device)
{
	w->graphmem_seen = true;
	return gp_owner_graphmem_add(&w->own, p, bytes, ctx, device, graph);
}

/* What one allocation node costs: its size rounded up to the device's granularity. */
static uint64_t node_cost(struct gp_worker *w, int dev, uint64_t bytes)
{
	CUmemAllocationProp prop;
	size_t gran = 0;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	if (GP_DRV(w, cuMemGetAllocationGranularity, &gran, &prop,
		   CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
	    gran == 0 || (gran & (gran - 1)))
		gran = (size_t)2 << 20; /* the common one */
	if (bytes > UINT64_MAX - (gran - 1))
		return UINT64_MAX;
	return (bytes + gran - 1) & ~(uint64_t)(gran - 1);
}

/*
 * The sum of the graph's allocation nodes, from the driver's own graph (so a node whose
 * range could not be recorded is charged too), and their device; NOT_SUPPORTED for nodes on
 * several devices.
 */
static CUresult graph_cost(struct gp_worker *w, CUgraph g, uint64_t *sum, int *dev)
{
	CUgraphNode *nodes = NULL;
	size_t n = 0;
	CUresult r = GP_DRV(w, cuGraphGetNodes, g, NULL, &n);

	*sum = 0;
	*dev = -1;
	if (r || n == 0)
		return r;
	if (!(nodes = calloc(n, sizeof(*nodes))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuGraphGetNodes, g, nodes, &n);
	for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
		CUgraphNodeType t;
		CUDA_MEM_ALLOC_NODE_PARAMS p;
		uint64_t c;

		if ((r = GP_DRV(w, cuGraphNodeGetType, nodes[i], &t)) ||
		    t != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			continue;
		if ((r = GP_DRV(w, cuGraphMemAllocNodeGetParams, nodes[i], &p)))
			break;
		if (*dev >= 0 && p.poolProps.location.id != *dev) {
			r = CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
			break;
		}
		*dev = p.poolProps.location.id;
		c = node_cost(w, *dev, p.bytesize);
		*sum = c > UINT64_MAX - *sum ? UINT64_MAX : *sum + c;
	}
	free(nodes);
	return r;
}

CUresult gp__graphmem_charge_exec(struct gp_worker *w, CUgraph g, uint64_t graph,
				  struct gp_handle *x)
{
	uint64_t sum;
	int dev;
	CUresult r;

	x->aux = (void *)(uintptr_t)graph; /* its graph, for graph memory outliving the graph */
	if (!w->graphmem_seen)
		return CUDA_SUCCESS; /* no allocation node was ever made: no walk */
	if ((r = graph_cost(w, g, &sum, &dev)))
		return r;
	if (dev < 0 || dev >= w->ndev)
		return dev < 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; /* no graph memory */
	if (!gp__charge_fits(w, dev, sum)) {
		/* memory cached for graphs goes first, as under the driver's own pressure */
		CUdevice drv;

		if (drv_device(w, dev, &drv) == CUDA_SUCCESS)
			GP_DRV(w, cuDeviceGraphMemTrim, drv);
		gp__graphmem_refresh(w, dev);
		if (!gp__charge_fits(w, dev, sum))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (gp_owner_charge(&w->own, dev, (int64_t)sum))
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->device = dev;
	x->charge = sum;
	gp__publish_mem(w);
	return CUDA_SUCCESS;
}

CUresult gp__serve_graph_add_mem(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_graph_add_mem *a,
				 struct gp_out_graph_add_mem *o)
{
	struct gp_handle *gh = gp__handle_get(w, a->graph, GP_H_GRAPH);
	CUgraphNode n = NULL;
	CUresult r;

	(void)rq;
	if (!gh || gh->parent)
		return CUDA_ERROR_INVALID_VALUE; /* none in a conditional node's body (CUDA's rule) */
	if (a->dptr) {
		/* a free node: of a graph allocation (any graph's, as CUDA allows) */
		const struct gp_alloc *al = gp__alloc_find(w, a->dptr);

		if (!al || al->ptr != a->dptr || !al->graph)
			return CUDA_ERROR_INVALID_VALUE;
		r = GP_DRV(w, cuGraphAddMemFreeNode, &n, (CUgraph)gh->ptr, NULL, 0, a->dptr);
		o->dptr = a->dptr;
	} else {
		CUDA_MEM_ALLOC_NODE_PARAMS p;

		if (a->bytes == 0)
			return CUDA_ERROR_INVALID_VALUE;
		/* the session's limit is its device's size: past it, as past a device's memory */
		if (w->mem_limit && a->bytes > w->mem_limit)
			return CUDA_ERROR_OUT_OF_MEMORY;
		if (w->va_vmm)
			return CUDA_ERROR_NOT_SUPPORTED; /* graph memory cannot be put in a window */
		memset(&p, 0, sizeof(p));
		p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
		p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		p.poolProps.location.id = (int)a->device; /* an ordinal */
		p.bytesize = (size_t)a->bytes;
		r = GP_DRV(w, cuGraphAddMemAllocNode, &n, (CUgraph)gh->ptr, NULL, 0, &p);
		if (r)
			return r;
		if (gp__graphmem_note(w, a->graph, p.dptr, a->bytes, a->ctx, (int)a->device)) {
			/* our table is full, or the range is already someone's: not given out. The
			 * driver may keep the node (a graph with memory nodes loses none): its
			 * address is not the session's, and the instantiation charges it anyway. */
			GP_DRV(w, cuGraphDestroyNode, n);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		o->dptr = p.dptr;
	}
	if (r)
		return r;
	o->node = gp__graph_node_new(w, n, a->graph);
	return o->node ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult gp__serve_device_graph_mem(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_device_graph_mem *a,
				    struct gp_out_device_graph_mem *o)
{
	cuuint64_t v = a->value;
	CUresult r;

	(void)rq;
	switch (a->op) {
	case 0:
		if (a->attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
			return CUDA_ERROR_INVALID_VALUE;
		r = GP_DRV(w, cuDeviceGetGraphMemAttribute, a->device_drv,
			   (CUgraphMem_attribute)a->attr, &v);
		o->value = v;
		return r;
	case 1:
		/* only the high marks can be set, and only to 0: the driver checks */
		r = GP_DRV(w, cuDeviceSetGraphMemAttribute, a->device_drv,
			   (CUgraphMem_attribute)a->attr, &v);
		break;
	case 2:
		r = GP_DRV(w, cuDeviceGraphMemTrim, a->device_drv);
		break;
	case 3: {
		/* whether value is still the start of graph memory of the session's (the client
		 * forgets an address of a destroyed graph once it is not) */
		const struct gp_alloc *al = gp__alloc_find(w, a->value);

		o->value = al && al->ptr == a->value && al->graph;
		return CUDA_SUCCESS;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	gp__graphmem_refresh(w, (int)a->device);
	return r;
}
