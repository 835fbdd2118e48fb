/* graph.c -- graphs, graph nodes, executable graphs and stream capture, on the driver.
 *
 * The client keeps each graph, node and executable graph as a handle of the session
 * (GP_H_GRAPH, GP_H_GRAPH_NODE, GP_H_GRAPH_EXEC); they travel as U64 arguments, so every
 * handler here checks the kind and generation itself before the driver sees anything.
 * Nodes only name device memory of the session (the ranges are checked by the call's
 * description) or the client's functions: a host node is a driver host node whose function
 * sends HOST_CALL at every run (hostfn.c). Copies between client memory and the device are
 * refused by the client before they are sent (docs/conformance.md).
 *
 * Queries (GRAPH_QUERY, GRAPH_NODE_OP) show the client a client-memory copy (a host node
 * whose function moves client memory, and its memcpy node) as one node, named by its first
 * node's handle; nodes the client never made are named on first sight, once each.
 *
 * Capture: the driver's stream captures what this worker queues on it; a capture always
 * runs on the worker's main thread, so for the driver every client thread is the capturing
 * thread.
 */
#include <stdlib.h>
#include <string.h>

#include "worker.h"

/* The most bodies a SWITCH node may have here (CUDA sets no bound), and how deep
 * conditional nodes may nest (bodies within bodies). */
#define GP_COND_BODIES_MAX 1024u
#define GP_COND_DEPTH_MAX 16u

/* Captures into a graph of the program's (STREAM_CAPTURE_TO_GRAPH), by stream: their end
 * leaves that graph to the program. Main thread only. */
#define INTO_MAX 64u
static struct {
	uint64_t stream, graph; /* stream: the stream's id + 1; 0: free */
} into_caps[INTO_MAX];

static CUgraph graph_of(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_GRAPH);

	return h ? (CUgraph)h->ptr : NULL;
}

static CUgraphExec exec_of(struct gp_worker *w, uint64_t id)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_GRAPH_EXEC);

	return h ? (CUgraphExec)h->ptr : NULL;
}

/* A node of the session; with graph != 0, one of that graph. */
static CUgraphNode node_of(struct gp_worker *w, uint64_t id, uint64_t graph)
{
	struct gp_handle *h = gp__handle_get(w, id, GP_H_GRAPH_NODE);

	if (!h || (graph && h->parent != graph))
		return NULL;
	return (CUgraphNode)h->ptr;
}

static uint64_t new_handle(struct gp_worker *w, uint32_t kind, void *ptr, uint64_t parent)
{
	uint64_t id = gp__handle_new(w, kind, ptr);

	if (id)
		gp__handle_get(w, id, kind)->parent = parent;
	return id;
}

uint64_t gp__graph_node_new(struct gp_worker *w, CUgraphNode n, uint64_t graph)
{
	return new_handle(w, GP_H_GRAPH_NODE, n, graph);
}

bool gp__stream_capturing(struct gp_worker *w, CUstream s)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (GP_DRV(w, cuStreamGetCaptureInfo_v3, s, &st, NULL, NULL, NULL, NULL, NULL))
		return false;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ---- graphs ---- */

/* A graph belongs to no context (CUDA's do not), so destroying one leaves it alone. */
static CUresult graph_answer(struct gp_worker *w, CUgraph g, uint64_t ctx, uint64_t *out)
{
	uint64_t id = new_handle(w, GP_H_GRAPH, g, 0);

	(void)ctx;

	if (!id) {
		GP_DRV(w, cuGraphDestroy, g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = id;
	return CUDA_SUCCESS;
}

/*
 * Releases a graph's handle, its nodes' and those of its conditional nodes' bodies (a body's
 * handle has its node's handle as parent, and its index in the node's bodies as aux), which
 * the driver destroys with the graph. (Bodies hold no graph memory: GRAPH_ADD_MEM and a
 * captured allocation refuse one there, as CUDA does.)
 */
static void graph_unname_tree(struct gp_worker *w, uint64_t graph)
{
	/* the bodies of this graph's conditional nodes first (one pass over the handles per
	 * level of nesting, which GRAPH_ADD_COND bounds) */
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];
		struct gp_handle *node;

		if (h->kind != GP_H_GRAPH || !h->parent)
			continue;
		node = gp__handle_get(w, h->parent, GP_H_GRAPH_NODE);
		if (node && node->parent == graph)
			graph_unname_tree(w, gp__handle_id(w, h));
	}
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (h->kind == GP_H_GRAPH_NODE && h->parent == graph)
			gp__handle_release(w, gp__handle_id(w, h));
	}
	gp__handle_release(w, graph);
}

/* Whether a capture under way goes into graph or into a body within it. */
static bool captured_into(struct gp_worker *w, uint64_t graph)
{
	for (unsigned i = 0; i < INTO_MAX; i++) {
		uint64_t id = into_caps[i].graph;
		unsigned depth = 0;

		while (into_caps[i].stream && id && depth++ <= GP_COND_DEPTH_MAX) {
			struct gp_handle *g = gp__handle_get(w, id, GP_H_GRAPH);
			struct gp_handle *node;

			if (id == graph)
				return true;
			node = g && g->parent ? gp__handle_get(w, g->parent, GP_H_GRAPH_NODE)
					      : NULL;
			id = node ? node->parent : 0;
		}
	}
	return false;
}

CUresult gp__serve_graph_create(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_graph_create *a,
				struct gp_out_graph_create *o)
{
	CUgraph g;
	CUresult r = GP_DRV(w, cuGraphCreate, &g, a->flags);

	(void)rq;
	return r ? r : graph_answer(w, g, a->ctx, &o->graph);
}

CUresult gp__serve_graph_destroy(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_graph_destroy *a,
				 struct gp_out_graph_destroy *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUresult r;

	(void)rq;
	(void)o;
	if (!g || gp__handle_get(w, a->graph, GP_H_GRAPH)->parent)
		return CUDA_ERROR_INVALID_VALUE; /* a conditional node's body is its node's */
	if (captured_into(w, a->graph))
		return CUDA_ERROR_ILLEGAL_STATE; /* a capture goes into it or one of its bodies */
	r = GP_DRV(w, cuGraphDestroy, g);
	if (r)
		return r;
	gp__graphmem_graph_gone(w, a->graph);
	gp__graphmem_refresh(w, -1);
	graph_unname_tree(w, a->graph);
	return CUDA_SUCCESS;
}

CUresult gp__serve_graph_clone(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_graph_clone *a, struct gp_out_graph_clone *o)
{
	CUgraph g = graph_of(w, a->graph), c;
	CUresult r;

	(void)rq;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuGraphClone, &c, g);
	return r ? r : graph_answer(w, c, a->ctx, &o->graph);
}

CUresult gp__serve_graph_node_count(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_graph_node_count *a,
				    struct gp_out_graph_node_count *o)
{
	CUgraph g = graph_of(w, a->graph);
	size_t n = 0;
	CUresult r;

	(void)rq;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	r = a->roots ? GP_DRV(w, cuGraphGetRootNodes, g, NULL, &n)
		     : GP_DRV(w, cuGraphGetNodes, g, NULL, &n);
	o->count = n;
	return r;
}

/* ---- nodes ---- */

/*
 * The add calls also set an existing node's parameters: node 0 adds one to graph; a node
 * alone is that node of the graph; node and exec are the executable's copy of it.
 */
struct target {
	CUgraph g;
	CUgraphNode n;
	CUgraphExec x;
};

static CUresult target_of(struct gp_worker *w, uint64_t graph, uint64_t node, uint64_t exec,
			  struct target *t)
{
	*t = (struct target){0};
	if (exec && !node)
		return CUDA_ERROR_INVALID_VALUE;
	if (!node && !(t->g = graph_of(w, graph)))
		return CUDA_ERROR_INVALID_VALUE;
	if (node && !(t->n = node_of(w, node, 0)))
		return CUDA_ERROR_INVALID_VALUE;
	if (exec && !(t->x = exec_of(w, exec)))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult node_answer(struct gp_worker *w, CUgraphNode n, uint64_t graph, uint64_t *out)
{
	uint64_t id = new_handle(w, GP_H_GRAPH_NODE, n, graph);

	if (!id)
		return CUDA_ERROR_OUT_OF_MEMORY; /* the node stays in the graph, unnamed */
	*out = id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_graph_add_kernel(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_graph_add_kernel *a,
				    struct gp_out_graph_add_kernel *o)
{
	const struct gp_fn_info *fi = a->func_info;
	CUDA_KERNEL_NODE_PARAMS p = {0};
	void **args = NULL;
	CUgraph g = NULL;
	CUgraphNode n = NULL;
	CUgraphExec x = NULL;
	CUresult r;

	(void)rq;
	if (a->node == 0 && !(g = graph_of(w, a->graph)))
		return CUDA_ERROR_INVALID_VALUE;
	if (a->node && !(n = node_of(w, a->node, 0)))
		return CUDA_ERROR_INVALID_VALUE;
	if (a->exec && !(x = exec_of(w, a->exec)))
		return CUDA_ERROR_INVALID_VALUE;
	/* The buffer must hold every parameter the kernel reads. */
	if (!fi || a->params_len < fi->param_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (fi->nparams) {
		args = calloc(fi->nparams, sizeof(*args));
		if (!args)
			return CUDA_ERROR_OUT_OF_MEMORY;
		for (uint32_t i = 0; i < fi->nparams; i++)
			args[i] = (void *)(a->params + fi->offset[i]);
	}
	if (a->func_is_kernel) {
		p.kern = (CUkernel)a->func_drv;
		p.ctx = w->current;
	} else {
		p.func = (CUfunction)a->func_drv;
	}
	p.gridDimX = a->grid_x;
	p.gridDimY = a->grid_y;
	p.gridDimZ = a->grid_z;
	p.blockDimX = a->block_x;
	p.blockDimY = a->block_y;
	p.blockDimZ = a->block_z;
	p.sharedMemBytes = a->shared_mem;
	p.kernelParams = args;
	if (x)
		r = GP_DRV(w, cuGraphExecKernelNodeSetParams_v2, x, n, &p);
	else if (n)
		r = GP_DRV(w, cuGraphKernelNodeSetParams_v2, n, &p);
	else if ((r = GP_DRV(w, cuGraphAddKernelNode_v2, &n, g, NULL, 0, &p)) == CUDA_SUCCESS)
		r = node_answer(w, n, a->graph, &o->node);
	free(args);
	return r;
}

CUresult gp__serve_graph_add_memset(struct gp_worker *w, struct gp_req *rq,
				    const struct gp_wargs_graph_add_memset *a,
				    struct gp_out_graph_add_memset *o)
{
	CUDA_MEMSET_NODE_PARAMS p = {0};
	struct target t;
	CUgraphNode n;
	CUresult r = target_of(w, a->graph, a->node, a->exec, &t);

	(void)rq;
	if (r)
		return r;
	if ((a->esize != 1 && a->esize != 2 && a->esize != 4) || a->width % a->esize)
		return CUDA_ERROR_INVALID_VALUE;
	p.dst = a->dst;
	p.pitch = a->pitch;
	p.value = a->value;
	p.elementSize = a->esize;
	p.width = a->width / a->esize;
	p.height = a->height;
	if (t.x)
		return GP_DRV(w, cuGraphExecMemsetNodeSetParams, t.x, t.n, &p, w->current);
	if (t.n)
		return GP_DRV(w, cuGraphMemsetNodeSetParams, t.n, &p);
	r = GP_DRV(w, cuGraphAddMemsetNode, &n, t.g, NULL, 0, &p, w->current);
	return r ? r : node_answer(w, n, a->graph, &o->node);
}

CUresult gp__serve_graph_add_copy(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_graph_add_copy *a,
				  struct gp_out_graph_add_copy *o)
{
	CUDA_MEMCPY3D p = {0};
	struct target t;
	CUgraphNode n;
	CUresult r = target_of(w, a->graph, a->node, a->exec, &t);

	(void)rq;
	if (r)
		return r;
	p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p.srcDevice = a->src;
	p.srcPitch = a->src_pitch ? a->src_pitch : a->width;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = a->dst;
	p.dstPitch = a->dst_pitch ? a->dst_pitch : a->width;
	p.WidthInBytes = a->width;
	p.Height = a->height;
	p.Depth = 1;
	if (t.x)
		return GP_DRV(w, cuGraphExecMemcpyNodeSetParams, t.x, t.n, &p, w->current);
	if (t.n)
		return GP_DRV(w, cuGraphMemcpyNodeSetParams, t.n, &p);
	r = GP_DRV(w, cuGraphAddMemcpyNode, &n, t.g, NULL, 0, &p, w->current);
	return r ? r : node_answer(w, n, a->graph, &o->node);
}

CUresult gp__serve_graph_add_host(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_graph_add_host *a,
				  struct gp_out_graph_add_host *o)
{
	CUDA_HOST_NODE_PARAMS p;
	struct target t;
	CUgraphNode n;
	CUresult r = target_of(w, a->graph, a->node, a->exec, &t);

	(void)rq;
	if (r)
		return r;
	if (!a->fn)
		return CUDA_ERROR_INVALID_VALUE;
	p.fn = gp__hostfn_node_run;
	p.userData = gp__hostfn_node_new(w, a->fn, a->data, 0, 0);
	if (!p.userData)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (t.x)
		return GP_DRV(w, cuGraphExecHostNodeSetParams, t.x, t.n, &p);
	if (t.n)
		return GP_DRV(w, cuGraphHostNodeSetParams, t.n, &p);
	r = GP_DRV(w, cuGraphAddHostNode, &n, t.g, NULL, 0, &p);
	return r ? r : node_answer(w, n, a->graph, &o->node);
}

CUresult gp__serve_graph_add_other(struct gp_worker *w, struct gp_req *rq,
				   const struct gp_wargs_graph_add_other *a,
				   struct gp_out_graph_add_other *o)
{
	CUgraph g, child;
	struct gp_handle *e;
	struct target t;
	CUgraphNode n;
	CUresult r = target_of(w, a->graph, a->node, a->exec, &t);

	(void)rq;
	if (r)
		return r;
	g = t.g;
	if (t.n) {
		/* an existing node's event or (executable only) child graph */
		bool rec = a->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD;

		switch (a->type) {
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
			if (!(e = gp__handle_get(w, a->event, GP_H_EVENT)))
				return CUDA_ERROR_INVALID_VALUE;
			if (t.x)
				return rec ? GP_DRV(w, cuGraphExecEventRecordNodeSetEvent, t.x, t.n,
						    (CUevent)e->ptr)
					   : GP_DRV(w, cuGraphExecEventWaitNodeSetEvent, t.x, t.n,
						    (CUevent)e->ptr);
			return rec ? GP_DRV(w, cuGraphEventRecordNodeSetEvent, t.n, (CUevent)e->ptr)
				   : GP_DRV(w, cuGraphEventWaitNodeSetEvent, t.n, (CUevent)e->ptr);
		case CU_GRAPH_NODE_TYPE_GRAPH:
			if (!t.x || !(child = graph_of(w, a->child)))
				return CUDA_ERROR_INVALID_VALUE;
			return GP_DRV(w, cuGraphExecChildGraphNodeSetParams, t.x, t.n, child);
		default:
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	switch (a->type) {
	case CU_GRAPH_NODE_TYPE_EMPTY:
		r = GP_DRV(w, cuGraphAddEmptyNode, &n, g, NULL, 0);
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (!(e = gp__handle_get(w, a->event, GP_H_EVENT)))
			return CUDA_ERROR_INVALID_VALUE;
		r = a->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
			    ? GP_DRV(w, cuGraphAddEventRecordNode, &n, g, NULL, 0, (CUevent)e->ptr)
			    : GP_DRV(w, cuGraphAddEventWaitNode, &n, g, NULL, 0, (CUevent)e->ptr);
		break;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (!(child = graph_of(w, a->child)) || child == g)
			return CUDA_ERROR_INVALID_VALUE;
		r = GP_DRV(w, cuGraphAddChildGraphNode, &n, g, NULL, 0, child);
		break;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return r ? r : node_answer(w, n, a->graph, &o->node);
}

/* Edges come as (from, to) pairs of node handles, each pair's nodes of the graph. */
#define EDGES_MAX (GP_BLOB_MAX / 16)

CUresult gp__serve_graph_edges(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_graph_edges *a, struct gp_out_graph_edges *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUgraphNode from[EDGES_MAX], to[EDGES_MAX];
	size_t n = a->edges_len / 16;

	(void)rq;
	(void)o;
	if (!g || a->edges_len % 16 || n == 0 || a->remove > 1)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		uint64_t f, t;

		memcpy(&f, a->edges + 16 * i, 8);
		memcpy(&t, a->edges + 16 * i + 8, 8);
		from[i] = node_of(w, f, a->graph);
		to[i] = node_of(w, t, a->graph);
		if (!from[i] || !to[i])
			return CUDA_ERROR_INVALID_VALUE;
	}
	return a->remove ? GP_DRV(w, cuGraphRemoveDependencies_v2, g, from, to, NULL, n)
			 : GP_DRV(w, cuGraphAddDependencies_v2, g, from, to, NULL, n);
}

/* ---- client memory ---- */

/* Staging for the client-memory copies of a session: it lives as long as the session (any
 * graph or executable may still run it), so all of them together are capped. */
#define CLIENT_COPY_MAX (1ull << 30)
static uint64_t client_copy_bytes;

/*
 * A copy between client memory and the device, as two steps that run every time: to the
 * device, a host function fetches the client's bytes into staging and a copy moves them
 * to the device; from it, a copy fills staging and a host function pushes the bytes to
 * the client and waits for its answer, so they are there before later work (and the
 * launch's completion) can be seen. On a capturing stream both are captured; with a
 * graph they are two nodes, first -> last.
 */
CUresult gp__serve_graph_client_copy(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_graph_client_copy *a,
				     struct gp_out_graph_client_copy *o)
{
	CUgraph g = NULL;
	CUDA_MEMCPY2D c = {0};
	CUDA_MEMCPY3D c3 = {0};
	uint64_t bytes;
	uint8_t *staging;
	void *hn;
	CUresult r;

	(void)rq;
	if (a->to_device > 1 || !a->token || a->width == 0 || a->height == 0 ||
	    __builtin_mul_overflow(a->width, a->height, &bytes) || bytes > CLIENT_COPY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes > CLIENT_COPY_MAX - client_copy_bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (a->graph && !(g = graph_of(w, a->graph)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!g && !gp__stream_capturing(w, a->stream_drv))
		return CUDA_ERROR_ILLEGAL_STATE; /* only captured copies take this path */
	hn = gp__hostfn_copy_new(w, a->token, bytes, a->to_device, &staging);
	if (!hn)
		return CUDA_ERROR_OUT_OF_MEMORY;
	client_copy_bytes += bytes;
	c.WidthInBytes = a->width;
	c.Height = a->height;
	if (a->to_device) {
		c.srcMemoryType = CU_MEMORYTYPE_HOST;
		c.srcHost = staging;
		c.srcPitch = a->width;
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = a->dev;
		c.dstPitch = a->pitch ? a->pitch : a->width;
	} else {
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = a->dev;
		c.srcPitch = a->pitch ? a->pitch : a->width;
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = staging;
		c.dstPitch = a->width;
	}
	if (!g) {
		if (a->to_device) {
			r = GP_DRV(w, cuLaunchHostFunc, a->stream_drv, gp__hostfn_node_run, hn);
			if (r == CUDA_SUCCESS)
				r = GP_DRV(w, cuMemcpy2DAsync_v2, &c, a->stream_drv);
		} else {
			r = GP_DRV(w, cuMemcpy2DAsync_v2, &c, a->stream_drv);
			if (r == CUDA_SUCCESS)
				r = GP_DRV(w, cuLaunchHostFunc, a->stream_drv, gp__hostfn_node_run,
					   hn);
		}
		return r;
	}
	{
		CUDA_HOST_NODE_PARAMS hp = {gp__hostfn_node_run, hn};
		CUgraphNode hnode, cnode, from, to;

		c3.srcMemoryType = c.srcMemoryType;
		c3.srcHost = c.srcHost;
		c3.srcDevice = c.srcDevice;
		c3.srcPitch = c.srcPitch;
		c3.dstMemoryType = c.dstMemoryType;
		c3.dstHost = c.dstHost;
		c3.dstDevice = c.dstDevice;
		c3.dstPitch = c.dstPitch;
		c3.WidthInBytes = c.WidthInBytes;
		c3.Height = c.Height;
		c3.Depth = 1;
		r = GP_DRV(w, cuGraphAddHostNode, &hnode, g, NULL, 0, &hp);
		if (r)
			return r;
		r = GP_DRV(w, cuGraphAddMemcpyNode, &cnode, g, NULL, 0, &c3, w->current);
		if (r)
			return r;
		from = a->to_device ? hnode : cnode;
		to = a->to_device ? cnode : hnode;
		r = GP_DRV(w, cuGraphAddDependencies_v2, g, &from, &to, NULL, 1);
		if (r == CUDA_SUCCESS)
			r = node_answer(w, from, a->graph, &o->first);
		if (r == CUDA_SUCCESS)
			r = node_answer(w, to, a->graph, &o->last);
		return r;
	}
}

/* ---- conditional nodes ---- */

/* How many conditional nodes' bodies the graph lies within (0: a graph of the program's). */
static unsigned cond_depth(struct gp_worker *w, uint64_t graph)
{
	unsigned depth = 0;
	struct gp_handle *g = gp__handle_get(w, graph, GP_H_GRAPH);

	while (g && g->parent && depth <= GP_COND_DEPTH_MAX) {
		struct gp_handle *node = gp__handle_get(w, g->parent, GP_H_GRAPH_NODE);

		depth++;
		g = node ? gp__handle_get(w, node->parent, GP_H_GRAPH) : NULL;
	}
	return depth;
}

bool gp__graph_is_body(struct gp_worker *w, uint64_t graph)
{
	struct gp_handle *g = gp__handle_get(w, graph, GP_H_GRAPH);

	return g && g->parent;
}

CUresult gp__serve_graph_cond_handle(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_graph_cond_handle *a,
				     struct gp_out_graph_cond_handle *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUgraphConditionalHandle h = 0;
	CUresult r;

	(void)rq;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	/* the handle is the driver's value: the session's kernels pass it to
	 * cudaGraphSetConditional, which the driver checks */
	r = GP_DRV(w, cuGraphConditionalHandleCreate, &h, g, w->current, a->dflt, a->flags);
	o->handle = h;
	return r;
}

CUresult gp__serve_graph_add_cond(struct gp_worker *w, struct gp_req *rq,
				  const struct gp_wargs_graph_add_cond *a,
				  struct gp_out_graph_add_cond *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUgraphNodeParams p;
	CUgraphNode n = NULL;
	CUresult r;

	(void)rq;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	if (a->size == 0 || a->size > GP_COND_BODIES_MAX)
		return a->size ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
	if (cond_depth(w, a->graph) >= GP_COND_DEPTH_MAX)
		return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
	memset(&p, 0, sizeof(p));
	p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
	p.conditional.handle = a->handle;
	p.conditional.type = (CUgraphConditionalNodeType)a->type;
	p.conditional.size = a->size;
	p.conditional.ctx = w->current;
	r = GP_DRV(w, cuGraphAddNode_v2, &n, g, NULL, NULL, 0, &p);
	if (r)
		return r;
	if (!(o->node = new_handle(w, GP_H_GRAPH_NODE, n, a->graph)))
		return CUDA_ERROR_OUT_OF_MEMORY; /* the node stays in the graph, unnamed */
	/* its bodies: graphs of the node's, named with the node as parent, aux their index */
	for (unsigned i = 0; i < a->size; i++) {
		uint64_t id = new_handle(w, GP_H_GRAPH, p.conditional.phGraph_out[i], o->node);

		if (!id) {
			/* out of handles: the node goes again, with what was named of it */
			for (uint32_t j = 0; j < w->nhandles; j++)
				if (w->handles[j].kind == GP_H_GRAPH &&
				    w->handles[j].parent == o->node)
					gp__handle_release(w, gp__handle_id(w, &w->handles[j]));
			gp__handle_release(w, o->node);
			GP_DRV(w, cuGraphDestroyNode, n);
			o->node = 0;
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		gp__handle_get(w, id, GP_H_GRAPH)->aux = (void *)(uintptr_t)i;
		if (i == 0)
			o->body = id;
	}
	return CUDA_SUCCESS;
}

/* A conditional node's body i (GRAPH_NODE_OP op 6). */
static uint64_t cond_body(struct gp_worker *w, uint64_t node, uint32_t i)
{
	for (uint32_t j = 0; j < w->nhandles; j++)
		if (w->handles[j].kind == GP_H_GRAPH && w->handles[j].parent == node &&
		    (uintptr_t)w->handles[j].aux == i)
			return gp__handle_id(w, &w->handles[j]);
	return 0;
}

CUresult gp__serve_stream_capture_to_graph(struct gp_worker *w, struct gp_req *rq,
					   const struct gp_wargs_stream_capture_to_graph *a,
					   struct gp_out_stream_capture_to_graph *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUresult r;

	(void)rq;
	(void)o;
	if (!g || a->mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned slot = INTO_MAX;

	for (unsigned i = 0; i < INTO_MAX; i++) {
		if (into_caps[i].stream == a->stream + 1)
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* capturing already */
		if (!into_caps[i].stream && slot == INTO_MAX)
			slot = i;
	}
	if (slot == INTO_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = GP_DRV(w, cuStreamBeginCaptureToGraph, a->stream_drv, g, NULL, NULL, 0,
		   (CUstreamCaptureMode)a->mode);
	/* until the capture's end, which then leaves the graph to the program */
	if (r == CUDA_SUCCESS) {
		into_caps[slot].stream = a->stream + 1; /* stream ids 0 and 1 are both legacy */
		into_caps[slot].graph = a->graph;
	}
	return r;
}

/* ---- executable graphs ---- */

CUresult gp__serve_graph_instantiate(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_graph_instantiate *a,
				     struct gp_out_graph_instantiate *o)
{
	CUgraph g = graph_of(w, a->graph);
	CUgraphExec x;
	uint64_t id;
	CUresult r;

	(void)rq;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuGraphInstantiateWithFlags, &x, g, a->flags);
	if (r)
		return r;
	id = new_handle(w, GP_H_GRAPH_EXEC, x, a->ctx);
	if (!id) {
		GP_DRV(w, cuGraphExecDestroy, x);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* its graph memory is charged while it lives (graphmem.c) */
	r = gp__graphmem_charge_exec(w, g, a->graph, gp__handle_get(w, id, GP_H_GRAPH_EXEC));
	if (r) {
		gp__handle_release(w, id);
		GP_DRV(w, cuGraphExecDestroy, x);
		return r;
	}
	o->exec = id;
	return CUDA_SUCCESS;
}

CUresult gp__serve_graph_exec_destroy(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_graph_exec_destroy *a,
				      struct gp_out_graph_exec_destroy *o)
{
	CUgraphExec x = exec_of(w, a->exec);
	CUresult r;

	(void)rq;
	(void)o;
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuGraphExecDestroy, x);
	if (r == CUDA_SUCCESS) {
		gp__handle_release(w, a->exec); /* and its charge */
		gp__graphmem_exec_gone(w);	/* what the driver keeps reserved past it */
	}
	return r;
}

CUresult gp__serve_graph_launch(struct gp_worker *w, struct gp_req *rq,
				const struct gp_wargs_graph_launch *a,
				struct gp_out_graph_launch *o)
{
	struct gp_handle *h = gp__handle_get(w, a->exec, GP_H_GRAPH_EXEC);
	CUgraphExec x = h ? (CUgraphExec)h->ptr : NULL;
	CUresult r;

	(void)rq;
	(void)o;
	if (!x || a->upload > 1)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a->upload)
		gp__share_gate(w, a->stream_drv);
	r = a->upload ? GP_DRV(w, cuGraphUpload, x, a->stream_drv)
		      : GP_DRV(w, cuGraphLaunch, x, a->stream_drv);
	/* its graph memory is the driver's now: what it reserves is charged as measured */
	if (h->charge)
		gp__graphmem_refresh(w, h->device);
	return r;
}

CUresult gp__serve_graph_exec_update(struct gp_worker *w, struct gp_req *rq,
				     const struct gp_wargs_graph_exec_update *a,
				     struct gp_out_graph_exec_update *o)
{
	CUgraphExec x = exec_of(w, a->exec);
	CUgraph g = graph_of(w, a->graph);
	CUgraphExecUpdateResultInfo info = {0};
	CUresult r;

	(void)rq;
	if (!x || !g)
		return CUDA_ERROR_INVALID_VALUE;
	r = GP_DRV(w, cuGraphExecUpdate_v2, x, g, &info);
	o->result = (uint64_t)info.result;
	return r;
}

/* ---- stream capture ---- */

/* The handle of a graph being captured: the one already given out, or a new one. */
static CUresult graph_named(struct gp_worker *w, CUgraph g, uint64_t ctx, uint64_t *out)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		if (w->handles[i].kind == GP_H_GRAPH && w->handles[i].ptr == g) {
			*out = gp__handle_id(w, &w->handles[i]);
			return CUDA_SUCCESS;
		}
	}
	return graph_answer(w, g, ctx, out);
}

CUresult gp__graph_name(struct gp_worker *w, CUgraph g, uint64_t ctx, uint64_t *out)
{
	return graph_named(w, g, ctx, out);
}

/* A captured graph the driver dropped (or that is dropped here): its handle and its
 * allocation nodes' ranges go. */
static void graph_unname(struct gp_worker *w, CUgraph g)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		if (w->handles[i].kind == GP_H_GRAPH && w->handles[i].ptr == g) {
			uint64_t id = gp__handle_id(w, &w->handles[i]);

			gp__graphmem_forget(w, id);
			gp__handle_release(w, id);
		}
	}
}

CUresult gp__serve_stream_begin_capture(struct gp_worker *w, struct gp_req *rq,
					const struct gp_wargs_stream_begin_capture *a,
					struct gp_out_stream_begin_capture *o)
{
	(void)rq;
	(void)o;
	if (a->mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	return GP_DRV(w, cuStreamBeginCapture_v2, a->stream_drv, (CUstreamCaptureMode)a->mode);
}

CUresult gp__serve_stream_end_capture(struct gp_worker *w, struct gp_req *rq,
				      const struct gp_wargs_stream_end_capture *a,
				      struct gp_out_stream_end_capture *o)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUgraph g = NULL, capturing = NULL;
	bool into = false;
	CUresult r;

	(void)rq;
	/* the graph being captured, whose allocation ranges go if no graph comes of it */
	if (GP_DRV(w, cuStreamGetCaptureInfo_v3, a->stream_drv, &st, NULL, &capturing, NULL, NULL,
		   NULL) != CUDA_SUCCESS)
		capturing = NULL;
	r = GP_DRV(w, cuStreamEndCapture, a->stream_drv, &g);
	/* a capture into the program's own graph (STREAM_CAPTURE_TO_GRAPH) leaves that graph:
	 * known by the stream, never by what the client says */
	for (unsigned i = 0; i < INTO_MAX; i++) {
		if (into_caps[i].stream && into_caps[i].stream == a->stream + 1) {
			into = true;
			if (r != CUDA_ERROR_STREAM_CAPTURE_UNMATCHED &&
			    r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
				into_caps[i].stream = 0;
		}
	}
	if (r) {
		if (capturing && !into && r != CUDA_ERROR_STREAM_CAPTURE_UNMATCHED &&
		    r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
			/* the driver dropped the graph: so do its name and its ranges */
			graph_unname(w, capturing);
		}
		return r;
	}
	if (a->invalid) {
		/* the client refused a call it could not capture: no graph, as CUDA does (a
		 * graph the program captured into stays the program's) */
		if (!into) {
			graph_unname(w, g);
			GP_DRV(w, cuGraphDestroy, g);
		}
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	return graph_named(w, g, a->ctx, &o->graph);
}

CUresult gp__serve_stream_capture_info(struct gp_worker *w, struct gp_req *rq,
				       const struct gp_wargs_stream_capture_info *a,
				       struct gp_out_stream_capture_info *o)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	cuuint64_t id = 0;
	size_t ndeps = 0;
	CUgraph g = NULL;
	CUresult r = GP_DRV(w, cuStreamGetCaptureInfo_v3, a->stream_drv, &st, &id, &g, NULL, NULL,
			    &ndeps);

	(void)rq;
	o->status = (uint64_t)st;
	o->id = id;
	o->ndeps = ndeps;
	o->graph = 0;
	/* the graph being captured: named once, by a handle the capture's end reuses */
	if (r == CUDA_SUCCESS && g)
		r = graph_named(w, g, a->ctx, &o->graph);
	return r;
}

/* ---- queries ---- */

/*
 * What the client sees of a graph: its nodes, except that a client-memory copy (a copy
 * host node and its memcpy node, first -> last) is one node of type MEMCPY, named by its
 * first node's handle; edges into it reach first, edges out of it leave last. Nodes the
 * client never made (a clone's, a captured graph's) are named on first sight, once each.
 */
struct lnode {
	CUgraphNode first, last;
	CUgraphNodeType type;
};

/* The node's only neighbour on one side, when it has exactly one. */
static CUgraphNode only_neighbour(struct gp_worker *w, CUgraphNode n, bool outs)
{
	CUgraphNode one[2] = {0};
	size_t k = 2;
	CUresult r = outs ? GP_DRV(w, cuGraphNodeGetDependentNodes_v2, n, one, NULL, &k)
			  : GP_DRV(w, cuGraphNodeGetDependencies_v2, n, one, NULL, &k);

	return r == CUDA_SUCCESS && k == 1 ? one[0] : NULL;
}

static bool copy_host(struct gp_worker *w, CUgraphNode n, bool *fetch)
{
	CUgraphNodeType t;
	CUDA_HOST_NODE_PARAMS p;

	if (GP_DRV(w, cuGraphNodeGetType, n, &t) || t != CU_GRAPH_NODE_TYPE_HOST ||
	    GP_DRV(w, cuGraphHostNodeGetParams, n, &p) || p.fn != gp__hostfn_node_run)
		return false;
	return gp__hostfn_is_copy(p.userData, fetch);
}

static CUresult logical(struct gp_worker *w, CUgraphNode n, struct lnode *l)
{
	CUgraphNode o;
	bool fetch;
	CUresult r = GP_DRV(w, cuGraphNodeGetType, n, &l->type);

	l->first = l->last = n;
	if (r)
		return r;
	if (l->type == CU_GRAPH_NODE_TYPE_HOST && copy_host(w, n, &fetch)) {
		/* to the device: host -> memcpy; from it: memcpy -> host */
		o = only_neighbour(w, n, fetch);
		if (o) {
			l->type = CU_GRAPH_NODE_TYPE_MEMCPY;
			if (fetch)
				l->last = o;
			else
				l->first = o;
		}
	} else if (l->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
		if ((o = only_neighbour(w, n, false)) && copy_host(w, o, &fetch) && fetch &&
		    only_neighbour(w, o, true) == n)
			l->first = o;
		else if ((o = only_neighbour(w, n, true)) && copy_host(w, o, &fetch) && !fetch &&
			 only_neighbour(w, o, false) == n)
			l->last = o;
	}
	return CUDA_SUCCESS;
}

/* The handle of a node of graph: the one given out, or a new one. */
static uint64_t node_name(struct gp_worker *w, CUgraphNode n, uint64_t graph)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (h->kind == GP_H_GRAPH_NODE && h->ptr == n && h->parent == graph)
			return gp__handle_id(w, h);
	}
	return new_handle(w, GP_H_GRAPH_NODE, n, graph);
}

/* Appends the logical node of n, as (first, last, type), if there is room. */
static CUresult put_node(struct gp_worker *w, uint64_t graph, const struct lnode *l, uint64_t *out,
			 uint64_t room, uint64_t *count)
{
	if (*count < room) {
		uint64_t *e = out + 3 * *count;

		e[0] = node_name(w, l->first, graph);
		e[1] = node_name(w, l->last, graph);
		e[2] = (uint64_t)l->type;
		if (!e[0] || !e[1])
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	(*count)++;
	return CUDA_SUCCESS;
}

/* The driver's list of nodes (what 0, 1) or edges (2) or a node's neighbours (3, 4). */
static CUresult driver_list(struct gp_worker *w, CUgraph g, CUgraphNode n, uint32_t what,
			    CUgraphNode **from, CUgraphNode **to, size_t *num)
{
	CUgraphEdgeData *ed = NULL;
	CUresult r;

	*from = *to = NULL;
	*num = 0;
	switch (what) {
	case 0:
		r = GP_DRV(w, cuGraphGetNodes, g, NULL, num);
		break;
	case 1:
		r = GP_DRV(w, cuGraphGetRootNodes, g, NULL, num);
		break;
	case 2:
		r = GP_DRV(w, cuGraphGetEdges_v2, g, NULL, NULL, NULL, num);
		break;
	case 3:
		r = GP_DRV(w, cuGraphNodeGetDependencies_v2, n, NULL, NULL, num);
		break;
	default:
		r = GP_DRV(w, cuGraphNodeGetDependentNodes_v2, n, NULL, NULL, num);
		break;
	}
	if (r || *num == 0)
		return r;
	*from = calloc(*num, sizeof(**from));
	*to = calloc(*num, sizeof(**to));
	ed = calloc(*num, sizeof(*ed));
	if (!*from || !*to || !ed) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	switch (what) {
	case 0:
		r = GP_DRV(w, cuGraphGetNodes, g, *from, num);
		break;
	case 1:
		r = GP_DRV(w, cuGraphGetRootNodes, g, *from, num);
		break;
	case 2:
		r = GP_DRV(w, cuGraphGetEdges_v2, g, *from, *to, ed, num);
		break;
	case 3:
		r = GP_DRV(w, cuGraphNodeGetDependencies_v2, n, *from, ed, num);
		break;
	default:
		r = GP_DRV(w, cuGraphNodeGetDependentNodes_v2, n, *from, ed, num);
		break;
	}
	for (size_t i = 0; r == CUDA_SUCCESS && i < *num; i++) {
		static const CUgraphEdgeData zero;

		if (memcmp(&ed[i], &zero, sizeof(zero)))
			r = CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges: not forwarded */
	}
out:
	free(ed);
	if (r) {
		free(*from);
		free(*to);
		*from = *to = NULL;
	}
	return r;
}

/* Sent in full: an answer of list_len bytes, its entries past count zero. */
#define QUERY_MAX (24u << 16)

static const uint8_t *query_read(void *arg, uint64_t off, size_t n, int *err)
{
	(void)n;
	*err = 0;
	return (const uint8_t *)arg + off;
}

CUresult gp__serve_graph_query(struct gp_worker *w, struct gp_req *rq,
			       const struct gp_wargs_graph_query *a, struct gp_out_graph_query *o)
{
	struct gp_bulk_source src = {.read = query_read};
	struct gp_handle *h;
	CUgraphNode *from = NULL, *to = NULL, n = NULL;
	uint64_t graph = a->graph, room, count = 0, *list = NULL;
	struct lnode l, lt;
	size_t num;
	CUgraph g;
	CUresult r;
	int ret;

	if (a->what > 4 || a->list_len % 24 || a->list_len > QUERY_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (a->what >= 3) {
		/* a node's neighbours: its dependencies reach first, its dependents leave last */
		if (!(h = gp__handle_get(w, a->node, GP_H_GRAPH_NODE)))
			return CUDA_ERROR_INVALID_VALUE;
		graph = h->parent;
		if ((r = logical(w, (CUgraphNode)h->ptr, &l)))
			return r;
		n = a->what == 3 ? l.first : l.last;
	}
	if (!(g = graph_of(w, graph)))
		return CUDA_ERROR_INVALID_VALUE;
	room = a->list_len / 24;
	if (a->what == 2)
		room /= 2;
	list = calloc(1, a->list_len ? a->list_len : 1);
	if (!list)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = driver_list(w, g, n, a->what, &from, &to, &num);
	for (size_t i = 0; r == CUDA_SUCCESS && i < num; i++) {
		if ((r = logical(w, from[i], &l)))
			break;
		if (a->what == 2) {
			/* an edge leaves its node's last and reaches the other's first */
			if ((r = logical(w, to[i], &lt)) || l.first == lt.first)
				continue; /* inside a client-memory copy */
			if (l.last != from[i] || lt.first != to[i])
				continue;
			if (count < room) {
				uint64_t c2 = 2 * count;

				if ((r = put_node(w, graph, &l, list, 2 * room, &c2)) ||
				    (r = put_node(w, graph, &lt, list, 2 * room, &c2)))
					break;
			}
			count++;
			continue;
		}
		if (a->what <= 1 && l.first != from[i])
			continue; /* the second half of a client-memory copy */
		r = put_node(w, graph, &l, list, room, &count);
	}
	free(from);
	free(to);
	if (r == CUDA_SUCCESS && a->list_len) {
		src.arg = list;
		gp_conn_send_lock(w->client);
		ret = gp_bulk_send(w->client, GP_MSG_DATA, 0, rq->h->request_id, NULL, a->list_len,
				   &src);
		gp_conn_send_unlock(w->client);
		if (ret) {
			rq->err = ret;
			r = CUDA_ERROR_UNKNOWN;
		}
	}
	free(list);
	o->count = count;
	return r;
}

/* Releases the handles naming n (a node of graph). */
static void node_unname(struct gp_worker *w, CUgraphNode n, uint64_t graph)
{
	for (uint32_t i = 0; i < w->nhandles; i++) {
		struct gp_handle *h = &w->handles[i];

		if (h->kind == GP_H_GRAPH_NODE && h->ptr == n && h->parent == graph)
			gp__handle_release(w, gp__handle_id(w, h));
	}
}

CUresult gp__serve_graph_node_op(struct gp_worker *w, struct gp_req *rq,
				 const struct gp_wargs_graph_node_op *a,
				 struct gp_out_graph_node_op *o)
{
	struct gp_handle *h = gp__handle_get(w, a->node, GP_H_GRAPH_NODE);
	CUgraphExec x = NULL;
	CUgraph clone;
	CUgraphNode found;
	unsigned int v = 0;
	uint64_t graph;
	struct lnode l;
	CUresult r;

	(void)rq;
	if (!h || a->op > 6 || (a->op == 2 && a->value > 1))
		return CUDA_ERROR_INVALID_VALUE;
	if (a->op == 6) {
		o->value = cond_body(w, a->node, a->value);
		return o->value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	}
	graph = h->parent;
	if ((a->op == 1 || a->op == 2) && !(x = exec_of(w, a->exec)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = logical(w, (CUgraphNode)h->ptr, &l)))
		return r;
	switch (a->op) {
	case 0: {
		CUDA_MEM_ALLOC_NODE_PARAMS mp;
		bool alloc = l.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
			     GP_DRV(w, cuGraphMemAllocNodeGetParams, l.first, &mp) == CUDA_SUCCESS;

		/* a client-memory copy goes whole */
		if (l.last != l.first && (r = GP_DRV(w, cuGraphDestroyNode, l.last)))
			return r;
		if ((r = GP_DRV(w, cuGraphDestroyNode, l.first)))
			return r;
		/* a conditional node's bodies go with it */
		for (uint32_t j = 0; j < w->nhandles; j++)
			if (w->handles[j].kind == GP_H_GRAPH && w->handles[j].parent == a->node)
				graph_unname_tree(w, gp__handle_id(w, &w->handles[j]));
		node_unname(w, l.last, graph);
		node_unname(w, l.first, graph);
		if (alloc) {
			/* an allocation node's range goes with it */
			struct gp_alloc *al = gp__alloc_find(w, mp.dptr);

			if (al && al->ptr == mp.dptr && al->graph)
				gp__alloc_remove(w, al);
		}
		return CUDA_SUCCESS;
	}
	case 4: {
		/* an allocation node's parameters: its address, size and device */
		CUDA_MEM_ALLOC_NODE_PARAMS mp;

		if (l.type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			return CUDA_ERROR_INVALID_VALUE;
		if ((r = GP_DRV(w, cuGraphMemAllocNodeGetParams, l.first, &mp)))
			return r;
		o->value = mp.dptr;
		o->last = mp.bytesize;
		/* the session's device ordinals are the driver's */
		o->type = (uint64_t)mp.poolProps.location.id;
		return CUDA_SUCCESS;
	}
	case 5: {
		CUdeviceptr p = 0;

		if (l.type != CU_GRAPH_NODE_TYPE_MEM_FREE)
			return CUDA_ERROR_INVALID_VALUE;
		r = GP_DRV(w, cuGraphMemFreeNodeGetParams, l.first, &p);
		o->value = p;
		return r;
	}
	case 1:
	case 2:
		/*
		 * A client-memory copy is enabled or not by its memcpy node. Disabled, a copy
		 * to the device still fetches the bytes (into staging only); one from it would
		 * still push staging's old bytes to the client, so it is not disabled.
		 */
		if (l.last != l.first) {
			CUgraphNodeType t = CU_GRAPH_NODE_TYPE_HOST;
			bool push;

			if ((r = GP_DRV(w, cuGraphNodeGetType, l.first, &t)))
				return r;
			push = t == CU_GRAPH_NODE_TYPE_MEMCPY;
			if (a->op == 2 && push)
				return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
			l.first = push ? l.first : l.last;
		}
		if (a->op == 2)
			return GP_DRV(w, cuGraphNodeSetEnabled, x, l.first, a->value);
		r = GP_DRV(w, cuGraphNodeGetEnabled, x, l.first, &v);
		o->value = v;
		return r;
	default: /* 3 */
		if (!(clone = graph_of(w, a->graph)))
			return CUDA_ERROR_INVALID_VALUE;
		if ((r = GP_DRV(w, cuGraphNodeFindInClone, &found, l.first, clone)) ||
		    (r = logical(w, found, &l)))
			return r;
		o->value = node_name(w, l.first, a->graph);
		o->last = node_name(w, l.last, a->graph);
		o->type = (uint64_t)l.type;
		return o->value && o->last ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
}
