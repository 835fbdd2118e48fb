/* api_graph.c -- CUDA graphs and stream capture, forwarded to the pool's driver.
 *
 * A graph, node and executable graph here is a small object naming the worker's handle;
 * the graph itself lives on the pool's driver, built by one call per node (its edges by
 * one more) and launched by one GRAPH_LAUNCH message, sent without waiting, whatever the
 * number of nodes. Capture is the driver's: the worker's stream captures what the worker
 * queues on it, so kernels, device copies, memsets, event records and waits and host
 * functions (a host node that runs here at every launch) are captured as on a local GPU.
 *
 * A copy between this process's memory and the device, captured or as a memcpy node, is
 * registered here under a token (address, rows, direction) and sent as GRAPH_CLIENT_COPY:
 * each time the node runs, the worker asks for the bytes of the token (HOST_CALL kind 2)
 * or pushes them (kind 3), and client.c moves them after checking the token, direction
 * and size (gp__cmem_get), so the worker never names an address of this process. Tokens
 * live as long as the process. A stream callback in a capture is refused
 * (STREAM_CAPTURE_UNSUPPORTED) and ends the capture invalidated, as in CUDA.
 *
 * Queries (GRAPH_QUERY) list what the worker names: each node as (first, last, type), a
 * client-memory copy's two worker nodes as one MEMCPY node. A node this process never made
 * (a clone's, a captured graph's) gets its object here on first sight, kept in the graph's
 * list and found there again by its first handle; its parameters are unknown (`known`)
 * until set here, so its get-params calls answer NOT_SUPPORTED.
 *
 * DESIGN: `caps` (the captures this process began) is under `cap_lock`; graph objects are
 * the caller's, as CUDA's are.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpupool/wire.h>

#include "interposer.h"
#include "log.h"

struct gp_igraph {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx;
	struct gp_inode *nodes; /* those made here, freed with the graph */
	bool body;		/* a conditional node's body: its node's, not destroyed alone */
};

struct gp_inode {
	uint32_t magic;
	uint64_t remote;      /* where edges into it go */
	uint64_t remote_last; /* where edges out of it leave (a client-memory copy: two nodes) */
	struct gp_igraph *graph;
	CUgraphNodeType type;
	/* Made here: the parameters below are its own, answered locally. A node first seen
	 * in a query (a clone's, a captured graph's) has only its type. */
	bool known;
	CUDA_HOST_NODE_PARAMS host; /* host nodes */
	CUevent event;		    /* event nodes */
	CUDA_MEMSET_NODE_PARAMS memset;
	CUDA_MEMCPY3D copy;
	CUDA_MEM_ALLOC_NODE_PARAMS alloc; /* allocation nodes (no access descriptors kept) */
	CUdeviceptr free_ptr;		  /* free nodes */
	CUgraph *bodies;		  /* conditional nodes: their body graphs, the node's */
	unsigned nbodies;
	/* kernel nodes: kernelParams points into kbuf, both the node's, as CUDA keeps them
	 * until the node is destroyed or its parameters set again */
	CUDA_KERNEL_NODE_PARAMS kernel;
	uint8_t *kbuf;
	void **kargs;
	struct gp_inode *next;
};

struct gp_iexec {
	uint32_t magic;
	uint64_t remote;
	struct gp_ictx *ctx;
	unsigned long long flags;
	/* its graph has allocation nodes: a launch can fail for memory the program has not
	 * freed yet, which CUDA reports from cuGraphLaunch itself, so it waits for the answer */
	bool waits;
	uint64_t graph; /* the worker's graph it was made from */
};

static void gmem_forget(uint64_t graph, uint64_t capture);
static void gmem_orphan(uint64_t graph);
static bool gmem_any(uint64_t graph);
static void gexec_count(uint64_t graph, int delta);
static void gmem_sweep(void);
static void gmem_forget_base(uintptr_t base);

static CUresult client_copy(struct gp_ictx *c, uint64_t sid, uint64_t graph, CUdeviceptr dev,
			    uint64_t dpitch, void *host, uint64_t hpitch, uint64_t width,
			    uint64_t height, bool to_device, struct gp_out_graph_client_copy *o);

static struct gp_igraph *graph_obj(CUgraph h)
{
	struct gp_igraph *g = (struct gp_igraph *)h;

	return g && g->magic == GP_MAGIC_GRAPH && gp__ctx_valid(g->ctx) ? g : NULL;
}

static struct gp_inode *node_obj(CUgraphNode h)
{
	struct gp_inode *n = (struct gp_inode *)h;

	return n && n->magic == GP_MAGIC_GNODE ? n : NULL;
}

static struct gp_iexec *exec_obj(CUgraphExec h)
{
	struct gp_iexec *x = (struct gp_iexec *)h;

	return x && x->magic == GP_MAGIC_GEXEC && gp__ctx_valid(x->ctx) ? x : NULL;
}

static void graph_free(struct gp_igraph *g);

static void node_free(struct gp_inode *n)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->nbodies; i++)
		if (n->bodies[i])
			graph_free((struct gp_igraph *)n->bodies[i]);
	free(n->bodies);
	free(n->kbuf);
	free(n->kargs);
	n->magic = GP_MAGIC_DEAD;
	free(n);
}

static void graph_free(struct gp_igraph *g)
{
	while (g->nodes) {
		struct gp_inode *n = g->nodes;

		g->nodes = n->next;
		node_free(n);
	}
	g->magic = GP_MAGIC_DEAD;
	free(g);
}

static CUresult graph_wrap(struct gp_ictx *c, uint64_t remote, CUgraph *out)
{
	struct gp_igraph *g = calloc(1, sizeof(*g));

	if (!g) {
		gp__rpc_graph_destroy(
			0, &(struct gp_in_graph_destroy){.ctx = c->remote, .graph = remote}, NULL);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*g = (struct gp_igraph){.magic = GP_MAGIC_GRAPH, .remote = remote, .ctx = c};
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

/* ---- graphs ---- */

GP_CUDA_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct gp_out_graph_create out;
	struct gp_ictx *c;
	CUresult r = gp__ctx_need(&c);

	if (r)
		return r;
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_create(0, &(struct gp_in_graph_create){.ctx = c->remote}, &out);
	return r ? r : graph_wrap(c, out.graph, phGraph);
}

GP_CUDA_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	struct gp_igraph *g = graph_obj(hGraph);
	CUresult r;

	if (!g || g->body)
		return CUDA_ERROR_INVALID_VALUE; /* a body goes with its conditional node */
	r = gp__rpc_graph_destroy(
		0, &(struct gp_in_graph_destroy){.ctx = g->ctx->remote, .graph = g->remote}, NULL);
	if (r)
		return r;
	gmem_orphan(g->remote); /* memory its executables allocated lives on until freed */
	graph_free(g);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	struct gp_igraph *g = graph_obj(originalGraph);
	struct gp_out_graph_clone out;
	CUresult r;

	if (!g || !phGraphClone)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_clone(
		0, &(struct gp_in_graph_clone){.ctx = g->ctx->remote, .graph = g->remote}, &out);
	return r ? r : graph_wrap(g->ctx, out.graph, phGraphClone);
}

/* ---- queries ---- */

/* Most entries one query brings (the worker's cap): 65,536 nodes or 32,768 edges. */
#define QUERY_MAX (1u << 16)

/*
 * The graph's nodes, roots, edges or a node's neighbours as the worker lists them: count
 * entries of (first, last, type), an edge two of them. *list (of room entries, freed by the
 * caller) is asked for only when want; one round trip when at most 64 entries.
 */
static CUresult query(struct gp_igraph *g, uint64_t node, uint32_t what, bool want, uint64_t **list,
		      uint64_t *count)
{
	uint64_t per = what == 2 ? 2 : 1, room = want ? 64 : 0;
	struct gp_out_graph_query o;
	CUresult r;

	*list = NULL;
	for (;;) {
		uint64_t *l = room ? calloc(room * per, 24) : NULL;

		if (room && !l)
			return CUDA_ERROR_OUT_OF_MEMORY;
		r = gp__rpc_graph_query(0,
					&(struct gp_in_graph_query){.ctx = g->ctx->remote,
								    .graph = g->remote,
								    .what = what,
								    .node = node,
								    .list = l,
								    .list_len = room * per * 24},
					&o);
		if (r || !want || o.count <= room) {
			if (r)
				free(l);
			else
				*list = l;
			*count = o.count;
			return r;
		}
		free(l);
		if (o.count * per > QUERY_MAX)
			return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
		room = o.count;
	}
}

/* The object of a node the worker named: the one given out, or (first sight) a new one. */
static struct gp_inode *node_found(struct gp_igraph *g, const uint64_t *e)
{
	struct gp_inode *n;

	for (n = g->nodes; n; n = n->next)
		if (n->remote == e[0])
			return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	*n = (struct gp_inode){.magic = GP_MAGIC_GNODE,
			       .remote = e[0],
			       .remote_last = e[1],
			       .graph = g,
			       .type = (CUgraphNodeType)e[2],
			       .next = g->nodes};
	g->nodes = n;
	return n;
}

/*
 * As CUDA: with no array, how many; with one, *num entries, those past the last NULL and
 * *num lowered to how many there are (an array too small holds the first *num).
 */
static CUresult node_list(struct gp_igraph *g, uint64_t node, uint32_t what, CUgraphNode *a,
			  CUgraphNode *b, CUgraphEdgeData *ed, size_t *num)
{
	uint64_t *list, count;
	CUresult r;

	if (!num || (what == 2 && !a != !b))
		return CUDA_ERROR_INVALID_VALUE;
	r = query(g, node, what, a != NULL, &list, &count);
	if (r)
		return r;
	if (!a) {
		*num = count;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < *num && r == CUDA_SUCCESS; i++) {
		a[i] = NULL;
		if (b)
			b[i] = NULL;
		if (ed)
			memset(&ed[i], 0, sizeof(ed[i]));
		if (i >= count)
			continue;
		if (what == 2) {
			a[i] = (CUgraphNode)node_found(g, list + 6 * i);
			b[i] = (CUgraphNode)node_found(g, list + 6 * i + 3);
			if (!a[i] || !b[i])
				r = CUDA_ERROR_OUT_OF_MEMORY;
		} else if (!(a[i] = (CUgraphNode)node_found(g, list + 3 * i))) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (r == CUDA_SUCCESS && count < *num)
		*num = count;
	free(list);
	return r;
}

static CUresult graph_list(CUgraph h, CUgraphNode *nodes, size_t *num, bool roots)
{
	struct gp_igraph *g = graph_obj(h);

	return g ? node_list(g, 0, roots, nodes, NULL, NULL, num) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	return graph_list(hGraph, nodes, numNodes, false);
}

GP_CUDA_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
					    size_t *numRootNodes)
{
	return graph_list(hGraph, rootNodes, numRootNodes, true);
}

GP_CUDA_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
					   CUgraphEdgeData *edgeData, size_t *numEdges)
{
	struct gp_igraph *g = graph_obj(hGraph);

	return g ? node_list(g, 0, 2, from, to, edgeData, numEdges) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
					size_t *numEdges)
{
	return cuGraphGetEdges_v2(hGraph, from, to, NULL, numEdges);
}

static CUresult neighbours(CUgraphNode h, CUgraphNode *a, CUgraphEdgeData *ed, size_t *num,
			   bool outs)
{
	struct gp_inode *n = node_obj(h);

	if (!n || !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	return node_list(n->graph, n->remote, outs ? 4 : 3, a, NULL, ed, num);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
						      CUgraphEdgeData *edgeData,
						      size_t *numDependencies)
{
	return neighbours(hNode, dependencies, edgeData, numDependencies, false);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
						   size_t *numDependencies)
{
	return neighbours(hNode, dependencies, NULL, numDependencies, false);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode,
							CUgraphNode *dependentNodes,
							CUgraphEdgeData *edgeData,
							size_t *numDependentNodes)
{
	return neighbours(hNode, dependentNodes, edgeData, numDependentNodes, true);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
						     size_t *numDependentNodes)
{
	return neighbours(hNode, dependentNodes, NULL, numDependentNodes, true);
}

static const char *type_name(CUgraphNodeType t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return "kernel";
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		return "memcpy";
	case CU_GRAPH_NODE_TYPE_MEMSET:
		return "memset";
	case CU_GRAPH_NODE_TYPE_HOST:
		return "host";
	case CU_GRAPH_NODE_TYPE_GRAPH:
		return "graph";
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return "empty";
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return "event_wait";
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return "event_record";
	default:
		return "other";
	}
}

/*
 * Written here, from the graph's structure as queried (the pool's driver would write its
 * file on the pool's host): each node by index and type, each edge; a child graph node's
 * graph is not drawn, and flags add nothing.
 */
GP_CUDA_EXPORT CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
	struct gp_igraph *g = graph_obj(hGraph);
	uint64_t *nodes = NULL, *edges = NULL, nn, ne;
	CUresult r;
	FILE *f;

	(void)flags;
	if (!g || !path)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = query(g, 0, 0, true, &nodes, &nn)) || (r = query(g, 0, 2, true, &edges, &ne)))
		goto out;
	f = fopen(path, "w");
	if (!f) {
		r = CUDA_ERROR_OPERATING_SYSTEM;
		goto out;
	}
	fprintf(f, "digraph gpupool {\n");
	for (uint64_t i = 0; i < nn; i++)
		fprintf(f, "\"n%llu\" [label=\"%llu: %s\"];\n", (unsigned long long)i,
			(unsigned long long)i, type_name((CUgraphNodeType)nodes[3 * i + 2]));
	for (uint64_t i = 0; i < ne; i++) {
		uint64_t a = nn, b = nn;

		for (uint64_t j = 0; j < nn; j++) {
			if (nodes[3 * j] == edges[6 * i])
				a = j;
			if (nodes[3 * j] == edges[6 * i + 3])
				b = j;
		}
		if (a < nn && b < nn)
			fprintf(f, "\"n%llu\" -> \"n%llu\";\n", (unsigned long long)a,
				(unsigned long long)b);
	}
	fprintf(f, "}\n");
	r = fclose(f) ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS;
out:
	free(nodes);
	free(edges);
	return r;
}

static CUresult node_op(struct gp_inode *n, struct gp_iexec *x, struct gp_igraph *clone,
			uint32_t op, uint32_t value, struct gp_out_graph_node_op *o)
{
	return gp__rpc_graph_node_op(
		0,
		&(struct gp_in_graph_node_op){.ctx = n->graph->ctx->remote,
					      .node = n->remote,
					      .exec = x ? x->remote : 0,
					      .graph = clone ? clone->remote : 0,
					      .op = op,
					      .value = value},
		o);
}

GP_CUDA_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
	struct gp_inode *n = node_obj(hNode), **p;
	struct gp_out_graph_node_op ao = {0};
	CUresult r;

	if (!n || !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	/* an allocation node's address goes with it */
	if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
		if (n->known)
			ao.value = n->alloc.dptr;
		else if ((r = node_op(n, NULL, NULL, 4, 0, &ao)))
			return r;
	}
	r = node_op(n, NULL, NULL, 0, 0, NULL);
	if (r)
		return r;
	if (ao.value)
		gmem_forget_base((uintptr_t)ao.value);
	for (p = &n->graph->nodes; *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			break;
		}
	}
	node_free(n);
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
					      unsigned int isEnabled)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	struct gp_inode *n = node_obj(hNode);

	if (!x || !n || !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	return node_op(n, x, NULL, 2, isEnabled != 0, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
					      unsigned int *isEnabled)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	struct gp_inode *n = node_obj(hNode);
	struct gp_out_graph_node_op o;
	CUresult r;

	if (!x || !n || !isEnabled || !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	r = node_op(n, x, NULL, 1, 0, &o);
	if (r == CUDA_SUCCESS)
		*isEnabled = (unsigned int)o.value;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
					       CUgraph hClonedGraph)
{
	struct gp_inode *n = node_obj(hOriginalNode), *c;
	struct gp_igraph *clone = graph_obj(hClonedGraph);
	struct gp_out_graph_node_op o;
	CUresult r;

	if (!phNode || !n || !clone || !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	r = node_op(n, NULL, clone, 3, 0, &o);
	if (r)
		return r;
	c = node_found(clone, (const uint64_t[3]){o.value, o.last, o.type});
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phNode = (CUgraphNode)c;
	return CUDA_SUCCESS;
}

/* ---- nodes ---- */

/* Sends (from, to) pairs; from/to are nodes of g (checked by the caller). */
static CUresult send_edges(struct gp_igraph *g, struct gp_inode *const *from,
			   struct gp_inode *const *to, size_t n, bool remove)
{
	uint64_t pairs[GP_BLOB_MAX / 8];
	CUresult r = CUDA_SUCCESS;

	for (size_t done = 0; done < n && r == CUDA_SUCCESS;) {
		size_t k = 0;

		for (; done < n && k + 2 <= GP_BLOB_MAX / 8; done++) {
			pairs[k++] = from[done]->remote_last;
			pairs[k++] = to[done]->remote;
		}
		r = gp__rpc_graph_edges(0,
					&(struct gp_in_graph_edges){.ctx = g->ctx->remote,
								    .graph = g->remote,
								    .remove = remove,
								    .edges = pairs,
								    .edges_len = k * 8},
					NULL);
	}
	return r;
}

static CUresult deps_check(struct gp_igraph *g, const CUgraphNode *deps, size_t n)
{
	if (n && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		struct gp_inode *d = node_obj(deps[i]);

		if (!d || d->graph != g)
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < i; j++)
			if (deps[j] == deps[i])
				return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* The new node's object, after its dependencies are sent. */
static CUresult node_finish2(struct gp_igraph *g, uint64_t remote, uint64_t last,
			     CUgraphNodeType type, const CUgraphNode *deps, size_t ndeps,
			     CUgraphNode *out)
{
	struct gp_inode *n = calloc(1, sizeof(*n));
	struct gp_inode **from, **to;
	CUresult r = CUDA_SUCCESS;

	*out = NULL;
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*n = (struct gp_inode){.magic = GP_MAGIC_GNODE,
			       .remote = remote,
			       .remote_last = last,
			       .graph = g,
			       .type = type,
			       .known = true};
	if (ndeps) {
		from = calloc(ndeps, sizeof(*from));
		to = calloc(ndeps, sizeof(*to));
		if (!from || !to) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			for (size_t i = 0; i < ndeps; i++) {
				from[i] = node_obj(deps[i]);
				to[i] = n;
			}
			r = send_edges(g, from, to, ndeps, false);
		}
		free(from);
		free(to);
	}
	/* a node whose edges failed stays in the graph, unordered: the caller learns of it */
	n->next = g->nodes;
	g->nodes = n;
	*out = (CUgraphNode)n;
	return r;
}

static CUresult node_finish(struct gp_igraph *g, uint64_t remote, CUgraphNodeType type,
			    const CUgraphNode *deps, size_t ndeps, CUgraphNode *out)
{
	return node_finish2(g, remote, remote, type, deps, ndeps, out);
}

/* The node keeps its parameters, kernelParams pointing into buf (its layout is f's). */
static CUresult kernel_keep(struct gp_inode *n, const CUDA_KERNEL_NODE_PARAMS *p,
			    const struct gp_ifunc *f, uint8_t *buf)
{
	void **args = NULL;

	if (f->nparams && !(args = calloc(f->nparams, sizeof(*args))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < f->nparams; i++)
		args[i] = buf + f->offset[i];
	free(n->kbuf);
	free(n->kargs);
	n->kbuf = buf;
	n->kargs = args;
	n->kernel = *p;
	n->kernel.kernelParams = args;
	n->kernel.extra = NULL;
	return CUDA_SUCCESS;
}

/*
 * Kernel parameters as a launch lays them out; node/exec select SetParams forms. With
 * keep, the node keeps what was set (not an executable's copy: exec 0).
 */
static CUresult kernel_call(struct gp_igraph *g, struct gp_ictx *c,
			    const CUDA_KERNEL_NODE_PARAMS *p, uint64_t node, uint64_t exec,
			    uint64_t *out, struct gp_inode *keep)
{
	struct gp_out_graph_add_kernel o;
	struct gp_ifunc *f;
	uint8_t *buf = NULL;
	size_t len = 0;
	CUfunction fn;
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	fn = p->func ? p->func : (CUfunction)p->kern;
	r = gp__func_described(fn, &f);
	if (r)
		return r;
	if (f->module->magic == GP_MAGIC_MODULE && f->module->ctx != c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
	    !p->blockDimZ)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__launch_pack(f, p->kernelParams, p->extra, &buf, &len);
	if (r)
		return r;
	if (len > GP_BLOB_MAX) {
		free(buf);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = gp__rpc_graph_add_kernel(
		0,
		&(struct gp_in_graph_add_kernel){.ctx = c->remote,
						 .graph = g ? g->remote : 0,
						 .func = f->remote,
						 .grid_x = p->gridDimX,
						 .grid_y = p->gridDimY,
						 .grid_z = p->gridDimZ,
						 .block_x = p->blockDimX,
						 .block_y = p->blockDimY,
						 .block_z = p->blockDimZ,
						 .shared_mem = p->sharedMemBytes,
						 .node = node,
						 .exec = exec,
						 .params = buf,
						 .params_len = len},
		&o);
	if (r == CUDA_SUCCESS && keep && kernel_keep(keep, p, f, buf) == CUDA_SUCCESS) {
		buf = NULL;
		keep->known = true;
	} else if (r == CUDA_SUCCESS && keep)
		keep->known = false; /* its parameters are no longer known here */
	free(buf);
	if (r == CUDA_SUCCESS && out)
		*out = o.node;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
						const CUgraphNode *dependencies,
						size_t numDependencies,
						const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gp_igraph *g = graph_obj(hGraph);
	uint64_t remote;
	CUresult r;

	if (!g || !phGraphNode)
		return CUDA_ERROR_INVALID_VALUE;
	struct gp_inode k = {0};

	if ((r = deps_check(g, dependencies, numDependencies)) ||
	    (r = kernel_call(g, g->ctx, nodeParams, 0, 0, &remote, &k)))
		return r;
	r = node_finish(g, remote, CU_GRAPH_NODE_TYPE_KERNEL, dependencies, numDependencies,
			phGraphNode);
	if (*phGraphNode) {
		struct gp_inode *n = (struct gp_inode *)*phGraphNode;

		n->kernel = k.kernel;
		n->kbuf = k.kbuf;
		n->kargs = k.kargs;
		n->known = k.known;
	} else {
		free(k.kbuf);
		free(k.kargs);
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
						      const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	return kernel_call(n->graph, n->graph->ctx, nodeParams, n->remote, 0, NULL, n);
}

GP_CUDA_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
							  const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	struct gp_inode *n = node_obj(hNode);

	if (!x || !n || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_INVALID_VALUE;
	return kernel_call(NULL, x->ctx, nodeParams, n->remote, x->remote, NULL, NULL);
}

static CUDA_KERNEL_NODE_PARAMS kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS k = {0};

	memcpy(&k, p, sizeof(*p)); /* v2 begins with v1's fields */
	return k;
}

GP_CUDA_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies,
					     const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;

	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	k = kernel_v2(nodeParams);
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &k);
}

GP_CUDA_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						       const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;

	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	k = kernel_v2(nodeParams);
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &k);
}

/* Adds a memset node to g, or (node[, x]) sets an existing one's parameters. */
static CUresult memset_call(struct gp_ictx *c, struct gp_igraph *g, struct gp_inode *n,
			    struct gp_iexec *x, const CUDA_MEMSET_NODE_PARAMS *p, uint64_t *out)
{
	struct gp_out_graph_add_memset o;
	uint64_t bytes;
	CUresult r;

	if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
	    __builtin_mul_overflow((uint64_t)p->width, (uint64_t)p->elementSize, &bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (n && n->type != CU_GRAPH_NODE_TYPE_MEMSET)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_add_memset(
		0,
		&(struct gp_in_graph_add_memset){.ctx = c->remote,
						 .graph = g ? g->remote : 0,
						 .dst = p->dst,
						 .value = p->value,
						 .esize = p->elementSize,
						 .width = bytes,
						 .height = p->height,
						 .pitch = p->height > 1 ? p->pitch : 0,
						 .node = n ? n->remote : 0,
						 .exec = x ? x->remote : 0},
		&o);
	if (r == CUDA_SUCCESS && n && !x) {
		n->memset = *p;
		n->known = true;
	}
	if (r == CUDA_SUCCESS && out)
		*out = o.node;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies,
					     const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	struct gp_igraph *g = graph_obj(hGraph);
	uint64_t remote;
	CUresult r;

	(void)ctx; /* the graph's context */
	if (!g || !phGraphNode)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = deps_check(g, dependencies, numDependencies)) ||
	    (r = memset_call(g->ctx, g, NULL, NULL, p, &remote)))
		return r;
	r = node_finish(g, remote, CU_GRAPH_NODE_TYPE_MEMSET, dependencies, numDependencies,
			phGraphNode);
	if (*phGraphNode)
		((struct gp_inode *)*phGraphNode)->memset = *p;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
						   const CUDA_MEMSET_NODE_PARAMS *p)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	return memset_call(n->graph->ctx, NULL, n, NULL, p, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						       const CUDA_MEMSET_NODE_PARAMS *p,
						       CUcontext ctx)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	struct gp_inode *n = node_obj(hNode);

	(void)ctx;
	if (!x || !n)
		return CUDA_ERROR_INVALID_VALUE;
	return memset_call(x->ctx, NULL, n, x, p, NULL);
}

/* One side of a node copy: a device address, or (*is_host) this process's memory. */
static CUresult copy_side(CUmemorytype t, CUdeviceptr dev, const void *host, uint64_t *out,
			  bool *is_host)
{
	struct gp_range rg;

	*is_host = false;
	switch (t) {
	case CU_MEMORYTYPE_DEVICE:
		*out = dev;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		*out = dev;
		*is_host = !(gp__range_find((uintptr_t)dev, &rg) && rg.kind != GP_MEM_HOST);
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_HOST:
		if (!host)
			return CUDA_ERROR_INVALID_VALUE;
		*out = (uint64_t)(uintptr_t)host;
		*is_host = true;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_NOT_SUPPORTED; /* arrays */
	}
}

GP_CUDA_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies, const CUDA_MEMCPY3D *p,
					     CUcontext ctx)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_add_copy o;
	uint64_t src, dst, sp, dp;
	bool shost, dhost;
	CUresult r;

	(void)ctx;
	if (!g || !phGraphNode || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = deps_check(g, dependencies, numDependencies)))
		return r;
	if ((r = copy_side(p->srcMemoryType, p->srcDevice, p->srcHost, &src, &shost)) ||
	    (r = copy_side(p->dstMemoryType, p->dstDevice, p->dstHost, &dst, &dhost)))
		return r;
	if (p->Depth > 1 || p->srcZ || p->dstZ || p->srcLOD || p->dstLOD)
		return CUDA_ERROR_NOT_SUPPORTED; /* 3-D copies are not forwarded */
	sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
	dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
	src += p->srcY * sp + p->srcXInBytes;
	dst += p->dstY * dp + p->dstXInBytes;
	if (shost && dhost)
		return CUDA_ERROR_NOT_SUPPORTED; /* host to host in a graph: not forwarded */
	if (shost || dhost) {
		struct gp_out_graph_client_copy cc;
		uint64_t h = p->Height ? p->Height : 1;

		r = client_copy(g->ctx, 0, g->remote, shost ? dst : src, shost ? dp : sp,
				(void *)(uintptr_t)(shost ? src : dst), shost ? sp : dp,
				p->WidthInBytes, h, shost, &cc);
		if (r)
			return r;
		r = node_finish2(g, cc.first, cc.last, CU_GRAPH_NODE_TYPE_MEMCPY, dependencies,
				 numDependencies, phGraphNode);
		if (*phGraphNode)
			((struct gp_inode *)*phGraphNode)->copy = *p;
		return r;
	}
	r = gp__rpc_graph_add_copy(
		0,
		&(struct gp_in_graph_add_copy){.ctx = g->ctx->remote,
					       .graph = g->remote,
					       .dst = dst,
					       .src = src,
					       .width = p->WidthInBytes,
					       .height = p->Height ? p->Height : 1,
					       .dst_pitch = p->Height > 1 ? dp : 0,
					       .src_pitch = p->Height > 1 ? sp : 0},
		&o);
	if (r)
		return r;
	r = node_finish(g, o.node, CU_GRAPH_NODE_TYPE_MEMCPY, dependencies, numDependencies,
			phGraphNode);
	if (*phGraphNode)
		((struct gp_inode *)*phGraphNode)->copy = *p;
	return r;
}

/* A device-to-device node's new parameters; a copy with client memory is not re-aimed. */
static CUresult memcpy_set(struct gp_ictx *c, struct gp_inode *n, struct gp_iexec *x,
			   const CUDA_MEMCPY3D *p)
{
	uint64_t src, dst, sp, dp;
	bool shost, dhost;
	CUresult r;

	if (!n || n->type != CU_GRAPH_NODE_TYPE_MEMCPY || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = copy_side(p->srcMemoryType, p->srcDevice, p->srcHost, &src, &shost)) ||
	    (r = copy_side(p->dstMemoryType, p->dstDevice, p->dstHost, &dst, &dhost)))
		return r;
	if (shost || dhost || n->remote != n->remote_last || p->Depth > 1 || p->srcZ || p->dstZ ||
	    p->srcLOD || p->dstLOD)
		return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
	sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
	dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
	src += p->srcY * sp + p->srcXInBytes;
	dst += p->dstY * dp + p->dstXInBytes;
	r = gp__rpc_graph_add_copy(
		0,
		&(struct gp_in_graph_add_copy){.ctx = c->remote,
					       .dst = dst,
					       .src = src,
					       .width = p->WidthInBytes,
					       .height = p->Height ? p->Height : 1,
					       .dst_pitch = p->Height > 1 ? dp : 0,
					       .src_pitch = p->Height > 1 ? sp : 0,
					       .node = n->remote,
					       .exec = x ? x->remote : 0},
		NULL);
	if (r == CUDA_SUCCESS && !x) {
		n->copy = *p;
		n->known = true;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *p)
{
	struct gp_inode *n = node_obj(hNode);

	return n ? memcpy_set(n->graph->ctx, n, NULL, p) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						       const CUDA_MEMCPY3D *p, CUcontext ctx)
{
	struct gp_iexec *x = exec_obj(hGraphExec);

	(void)ctx;
	return x ? memcpy_set(x->ctx, node_obj(hNode), x, p) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					   const CUgraphNode *dependencies, size_t numDependencies,
					   const CUDA_HOST_NODE_PARAMS *p)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_add_host o;
	CUresult r;

	if (!g || !phGraphNode || !p || !p->fn)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = deps_check(g, dependencies, numDependencies)))
		return r;
	gp__host_fn_allow((uint64_t)(uintptr_t)p->fn, (uint64_t)(uintptr_t)p->userData);
	r = gp__rpc_graph_add_host(
		0,
		&(struct gp_in_graph_add_host){.ctx = g->ctx->remote,
					       .graph = g->remote,
					       .fn = (uint64_t)(uintptr_t)p->fn,
					       .data = (uint64_t)(uintptr_t)p->userData},
		&o);
	if (r)
		return r;
	r = node_finish(g, o.node, CU_GRAPH_NODE_TYPE_HOST, dependencies, numDependencies,
			phGraphNode);
	if (r == CUDA_SUCCESS)
		((struct gp_inode *)*phGraphNode)->host = *p;
	return r;
}

static CUresult host_set(struct gp_ictx *c, struct gp_inode *n, struct gp_iexec *x,
			 const CUDA_HOST_NODE_PARAMS *p)
{
	CUresult r;

	if (!n || n->type != CU_GRAPH_NODE_TYPE_HOST || !p || !p->fn)
		return CUDA_ERROR_INVALID_VALUE;
	gp__host_fn_allow((uint64_t)(uintptr_t)p->fn, (uint64_t)(uintptr_t)p->userData);
	r = gp__rpc_graph_add_host(
		0,
		&(struct gp_in_graph_add_host){.ctx = c->remote,
					       .fn = (uint64_t)(uintptr_t)p->fn,
					       .data = (uint64_t)(uintptr_t)p->userData,
					       .node = n->remote,
					       .exec = x ? x->remote : 0},
		NULL);
	if (r == CUDA_SUCCESS && !x) {
		n->host = *p;
		n->known = true;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *p)
{
	struct gp_inode *n = node_obj(hNode);

	return n ? host_set(n->graph->ctx, n, NULL, p) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						     const CUDA_HOST_NODE_PARAMS *p)
{
	struct gp_iexec *x = exec_obj(hGraphExec);

	return x ? host_set(x->ctx, node_obj(hNode), x, p) : CUDA_ERROR_INVALID_VALUE;
}

GP_CUDA_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *p)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_HOST || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->known)
		return CUDA_ERROR_NOT_SUPPORTED; /* a clone's, a captured graph's: docs/conformance.md */
	*p = n->host;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_KERNEL || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->known)
		return CUDA_ERROR_NOT_SUPPORTED;
	*p = n->kernel;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS k;
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuGraphKernelNodeGetParams_v2(hNode, &k);
	if (r == CUDA_SUCCESS)
		memcpy(p, &k, sizeof(*p)); /* v2 begins with v1's fields */
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *p)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_MEMSET || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->known)
		return CUDA_ERROR_NOT_SUPPORTED;
	*p = n->memset;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *p)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != CU_GRAPH_NODE_TYPE_MEMCPY || !p)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->known)
		return CUDA_ERROR_NOT_SUPPORTED;
	*p = n->copy;
	return CUDA_SUCCESS;
}

static CUresult add_other(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t n,
			  CUgraphNodeType type, CUevent ev, CUgraph child)
{
	struct gp_igraph *g = graph_obj(hGraph), *cg = NULL;
	const struct gp_ievent *e = (const struct gp_ievent *)ev;
	struct gp_out_graph_add_other o;
	CUresult r;

	if (!g || !out)
		return CUDA_ERROR_INVALID_VALUE;
	if (ev && (e->magic != GP_MAGIC_EVENT))
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_GRAPH_NODE_TYPE_GRAPH && (!(cg = graph_obj(child)) || cg == g))
		return CUDA_ERROR_INVALID_VALUE;
	if ((type == CU_GRAPH_NODE_TYPE_EVENT_RECORD || type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) &&
	    !ev)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = deps_check(g, deps, n)))
		return r;
	r = gp__rpc_graph_add_other(0,
				    &(struct gp_in_graph_add_other){.ctx = g->ctx->remote,
								    .graph = g->remote,
								    .type = type,
								    .event = ev ? e->remote : 0,
								    .child = cg ? cg->remote : 0},
				    &o);
	if (r)
		return r;
	r = node_finish(g, o.node, type, deps, n, out);
	if (r == CUDA_SUCCESS)
		((struct gp_inode *)*out)->event = ev;
	return r;
}

/* An event node's event, or (exec only) a child graph node's graph. */
static CUresult other_set(CUgraphExec hx, CUgraphNode hn, CUgraphNodeType type, CUevent ev,
			  CUgraph child)
{
	struct gp_iexec *x = hx ? exec_obj(hx) : NULL;
	struct gp_inode *n = node_obj(hn);
	const struct gp_ievent *e = (const struct gp_ievent *)ev;
	struct gp_igraph *cg = child ? graph_obj(child) : NULL;
	CUresult r;

	if ((hx && !x) || !n || n->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_GRAPH_NODE_TYPE_GRAPH && (!e || e->magic != GP_MAGIC_EVENT))
		return CUDA_ERROR_INVALID_VALUE;
	if (type == CU_GRAPH_NODE_TYPE_GRAPH && !cg)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_add_other(
		0,
		&(struct gp_in_graph_add_other){.ctx = (x ? x->ctx : n->graph->ctx)->remote,
						.type = type,
						.event = e ? e->remote : 0,
						.child = cg ? cg->remote : 0,
						.node = n->remote,
						.exec = x ? x->remote : 0},
		NULL);
	if (r == CUDA_SUCCESS && !x && ev) {
		n->event = ev;
		n->known = true;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return other_set(NULL, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return other_set(NULL, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec,
							   CUgraphNode hNode, CUevent event)
{
	return other_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
							 CUevent event)
{
	return other_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec,
							   CUgraphNode hNode, CUgraph childGraph)
{
	if (!hGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	return other_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_GRAPH, NULL, childGraph);
}

static CUresult event_get(CUgraphNode hNode, CUgraphNodeType type, CUevent *out)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || n->type != type || !out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->known)
		return CUDA_ERROR_NOT_SUPPORTED;
	*out = n->event;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return event_get(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

GP_CUDA_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return event_get(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

GP_CUDA_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					    const CUgraphNode *dependencies, size_t numDependencies)
{
	return add_other(phGraphNode, hGraph, dependencies, numDependencies,
			 CU_GRAPH_NODE_TYPE_EMPTY, NULL, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						  const CUgraphNode *dependencies,
						  size_t numDependencies, CUevent event)
{
	return add_other(phGraphNode, hGraph, dependencies, numDependencies,
			 CU_GRAPH_NODE_TYPE_EVENT_RECORD, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						const CUgraphNode *dependencies,
						size_t numDependencies, CUevent event)
{
	return add_other(phGraphNode, hGraph, dependencies, numDependencies,
			 CU_GRAPH_NODE_TYPE_WAIT_EVENT, event, NULL);
}

GP_CUDA_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						 const CUgraphNode *dependencies,
						 size_t numDependencies, CUgraph childGraph)
{
	return add_other(phGraphNode, hGraph, dependencies, numDependencies,
			 CU_GRAPH_NODE_TYPE_GRAPH, NULL, childGraph);
}

/* ---- graph memory ---- */

/*
 * An allocation node's address is its graph's while the graph lives (CUDA fixes it at the
 * node's creation), so it is a device range here from then to the graph's destroy
 * (GP_RANGE_GRAPH), whether the memory is allocated at the moment or not: the pool's driver
 * answers for that, as a local one does. A captured allocation's range is kept under its
 * capture's id too, and goes if no graph comes of the capture. Under gmem_lock (the
 * registry's lock is taken inside it).
 */
static pthread_mutex_t gmem_lock = PTHREAD_MUTEX_INITIALIZER;
struct gmem {
	uintptr_t base;
	uint64_t graph;	  /* the worker's graph */
	uint64_t capture; /* the driver's capture id while it is being captured; else 0 */
	bool orphan;	  /* its graph was destroyed */
	bool swept;	  /* asked about in the sweep under way */
	struct gp_ictx *ctx;
};
static struct gmem *gmems;
static size_t ngmems, capgmems;
/* The live executables of each graph with allocation nodes (under gmem_lock). */
static struct gexec {
	uint64_t graph;
	unsigned n;
} * gexecs;
static size_t ngexecs, capgexecs;

static int gmem_add(uintptr_t base, size_t size, struct gp_ictx *c, uint64_t graph,
		    uint64_t capture)
{
	int ret = gp__range_add(base, size, GP_MEM_DEVICE, c, GP_RANGE_GRAPH);

	if (ret)
		return ret;
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = ngmems; i-- > 0;)
		if (gmems[i].base == base)
			gmems[i] = gmems[--ngmems]; /* a stale one: the range took its place */
	if (ngmems == capgmems) {
		size_t nc = capgmems ? capgmems * 2 : 16;
		struct gmem *m = realloc(gmems, nc * sizeof(*m));

		if (m) {
			gmems = m;
			capgmems = nc;
		}
	}
	if (ngmems < capgmems)
		gmems[ngmems++] =
			(struct gmem){.base = base, .graph = graph, .capture = capture, .ctx = c};
	else
		ret = -ENOMEM;
	pthread_mutex_unlock(&gmem_lock);
	if (ret)
		gp__range_remove(base, GP_MEM_DEVICE);
	return ret;
}

/* Forgets the ranges of a graph (graph != 0) or of a capture (capture != 0). */
static void gmem_forget(uint64_t graph, uint64_t capture)
{
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = ngmems; i-- > 0;) {
		if ((graph && gmems[i].graph == graph) ||
		    (capture && gmems[i].capture == capture)) {
			gp__range_remove(gmems[i].base, GP_MEM_DEVICE);
			gmems[i] = gmems[--ngmems];
		}
	}
	pthread_mutex_unlock(&gmem_lock);
}

static void gmem_forget_base(uintptr_t base)
{
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = ngmems; i-- > 0;) {
		if (gmems[i].base == base) {
			gp__range_remove(base, GP_MEM_DEVICE);
			gmems[i] = gmems[--ngmems];
		}
	}
	pthread_mutex_unlock(&gmem_lock);
}

/*
 * A destroyed graph: the memory its executables allocated lives on until it is freed, so
 * its addresses stay known here (until the pool's driver gives one to another allocation
 * node, which takes its place); the pool's worker answers for whether one is still in use.
 */
static void gmem_orphan(uint64_t graph)
{
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < ngmems; i++)
		if (gmems[i].graph == graph)
			gmems[i].orphan = true;
	pthread_mutex_unlock(&gmem_lock);
	gmem_sweep();
}

static size_t gexec_at(uint64_t graph)
{
	size_t i = 0;

	while (i < ngexecs && gexecs[i].graph != graph)
		i++;
	return i;
}

/* An executable of a graph with allocation nodes was made (+1) or destroyed (-1). */
static void gexec_count(uint64_t graph, int delta)
{
	size_t i;

	pthread_mutex_lock(&gmem_lock);
	i = gexec_at(graph);
	if (delta > 0 && i == ngexecs) {
		if (ngexecs == capgexecs) {
			size_t nc = capgexecs ? capgexecs * 2 : 8;
			struct gexec *m = realloc(gexecs, nc * sizeof(*m));

			if (m) {
				gexecs = m;
				capgexecs = nc;
			}
		}
		if (ngexecs < capgexecs)
			gexecs[ngexecs++] = (struct gexec){.graph = graph};
	}
	if (i < ngexecs) {
		if (delta > 0)
			gexecs[i].n++;
		else if (gexecs[i].n && --gexecs[i].n == 0)
			gexecs[i] = gexecs[--ngexecs];
	}
	pthread_mutex_unlock(&gmem_lock);
}

/*
 * An address of a destroyed graph whose executables are all gone is forgotten once the pool
 * no longer counts it as the session's (freed by its graph or outside it): asked, one
 * address at a time, with no lock held (a graph's allocation nodes: a handful).
 */
void gp__graphmem_sweep(void)
{
	gmem_sweep();
}

static void gmem_sweep(void)
{
	for (;;) {
		struct gp_out_device_graph_mem o = {0};
		uintptr_t base = 0;
		struct gp_ictx *c = NULL;
		bool found = false;

		pthread_mutex_lock(&gmem_lock);
		for (size_t i = 0; i < ngmems && !found; i++) {
			if (gmems[i].orphan && !gmems[i].capture &&
			    gexec_at(gmems[i].graph) == ngexecs && !gmems[i].swept) {
				gmems[i].swept = true;
				base = gmems[i].base;
				c = gmems[i].ctx;
				found = true;
			}
		}
		pthread_mutex_unlock(&gmem_lock);
		if (!found)
			break;
		if (!gp__ctx_valid(c) ||
		    (gp__rpc_device_graph_mem(
			     0,
			     &(struct gp_in_device_graph_mem){
				     .device = (uint64_t)c->device, .op = 3, .value = base},
			     &o) == CUDA_SUCCESS &&
		     !o.value))
			gmem_forget_base(base);
	}
	/* the ones kept are asked again at the next sweep */
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < ngmems; i++)
		gmems[i].swept = false;
	pthread_mutex_unlock(&gmem_lock);
}

/* Whether the graph has allocation nodes. */
static bool gmem_any(uint64_t graph)
{
	bool any = false;

	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < ngmems && !any; i++)
		any = gmems[i].graph == graph;
	pthread_mutex_unlock(&gmem_lock);
	return any;
}

/* A capture that became a graph: its ranges are that graph's alone. */
static void gmem_captured(uint64_t capture)
{
	pthread_mutex_lock(&gmem_lock);
	for (size_t i = 0; i < ngmems; i++)
		if (gmems[i].capture == capture)
			gmems[i].capture = 0;
	pthread_mutex_unlock(&gmem_lock);
}

/* What the pool serves of an allocation node's parameters; the rest is refused. */
static CUresult alloc_params_check(const struct gp_igraph *g, const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	const CUmemPoolProps *pp = &p->poolProps;

	if (p->bytesize == 0 || pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return pp->location.type == CU_MEM_LOCATION_TYPE_INVALID ? CUDA_ERROR_INVALID_VALUE
									 : CUDA_ERROR_NOT_SUPPORTED;
	if (pp->location.id < 0 || pp->location.id >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	/* the range is kept with the graph's context: graph memory of another device than the
	 * context's, shareable handles and access from other devices are not forwarded */
	if (pp->location.id != g->ctx->device || pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
		return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
	if (p->accessDescCount && !p->accessDescs)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < p->accessDescCount; i++) {
		const CUmemAccessDesc *d = &p->accessDescs[i];

		if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    d->location.id != pp->location.id ||
		    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_NOT_SUPPORTED; /* peer access */
	}
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					       const CUgraphNode *dependencies,
					       size_t numDependencies,
					       CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_add_mem o;
	CUresult r;

	if (!g || !phGraphNode || !nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = alloc_params_check(g, nodeParams)) ||
	    (r = deps_check(g, dependencies, numDependencies)))
		return r;
	r = gp__rpc_graph_add_mem(0,
				  &(struct gp_in_graph_add_mem){.ctx = g->ctx->remote,
								.graph = g->remote,
								.device = (uint64_t)g->ctx->device,
								.bytes = nodeParams->bytesize},
				  &o);
	if (r)
		return r;
	if (gmem_add((uintptr_t)o.dptr, nodeParams->bytesize, g->ctx, g->remote, 0)) {
		/* its address sits on host memory here (or the table is full): not given out */
		gp__rpc_graph_node_op(
			0, &(struct gp_in_graph_node_op){.ctx = g->ctx->remote, .node = o.node},
			NULL);
		gp_log_warnx("graph allocation node: its address is not free in this process");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* a node whose edges failed stays in the graph (node_finish): its address with it */
	r = node_finish(g, o.node, CU_GRAPH_NODE_TYPE_MEM_ALLOC, dependencies, numDependencies,
			phGraphNode);
	if (r == CUDA_SUCCESS)
		nodeParams->dptr = (CUdeviceptr)o.dptr;
	if (*phGraphNode) {
		struct gp_inode *n = (struct gp_inode *)*phGraphNode;

		n->alloc = *nodeParams;
		n->alloc.accessDescs = NULL;
		n->alloc.accessDescCount = 0;
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					      const CUgraphNode *dependencies,
					      size_t numDependencies, CUdeviceptr dptr)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_add_mem o;
	struct gp_range rg;
	CUresult r;

	if (!g || !phGraphNode)
		return CUDA_ERROR_INVALID_VALUE;
	if (!gp__range_find(dptr, &rg) || rg.kind != GP_MEM_DEVICE || rg.base != dptr ||
	    !(rg.flags & GP_RANGE_GRAPH))
		return CUDA_ERROR_INVALID_VALUE; /* not a graph allocation */
	if ((r = deps_check(g, dependencies, numDependencies)))
		return r;
	r = gp__rpc_graph_add_mem(0,
				  &(struct gp_in_graph_add_mem){.ctx = g->ctx->remote,
								.graph = g->remote,
								.device = (uint64_t)g->ctx->device,
								.dptr = dptr},
				  &o);
	if (r)
		return r;
	r = node_finish(g, o.node, CU_GRAPH_NODE_TYPE_MEM_FREE, dependencies, numDependencies,
			phGraphNode);
	if (*phGraphNode)
		((struct gp_inode *)*phGraphNode)->free_ptr = dptr;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
						     CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	struct gp_inode *n = node_obj(hNode);
	struct gp_out_graph_node_op o;
	CUresult r;

	if (!n || !params_out || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
	    !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	if (n->known) {
		*params_out = n->alloc;
		return CUDA_SUCCESS;
	}
	/* a captured one: what the pool's driver says (no access descriptors: it was made on
	 * its own device only) */
	if ((r = node_op(n, NULL, NULL, 4, 0, &o)))
		return r;
	memset(params_out, 0, sizeof(*params_out));
	params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	params_out->poolProps.location.id = (int)o.type;
	params_out->bytesize = (size_t)o.last;
	params_out->dptr = (CUdeviceptr)o.value;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	struct gp_inode *n = node_obj(hNode);
	struct gp_out_graph_node_op o;
	CUresult r;

	if (!n || !dptr_out || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE ||
	    !graph_obj((CUgraph)n->graph))
		return CUDA_ERROR_INVALID_VALUE;
	if (n->known) {
		*dptr_out = n->free_ptr;
		return CUDA_SUCCESS;
	}
	if ((r = node_op(n, NULL, NULL, 5, 0, &o)))
		return r;
	*dptr_out = (CUdeviceptr)o.value;
	return CUDA_SUCCESS;
}

static CUresult device_graph_mem(CUdevice device, uint32_t op, CUgraphMem_attribute attr,
				 uint64_t value, uint64_t *out)
{
	struct gp_out_device_graph_mem o;
	CUresult r = gp__ready();

	if (r)
		return r;
	if (device < 0 || device >= gp__client.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	r = gp__rpc_device_graph_mem(0,
				     &(struct gp_in_device_graph_mem){.device = (uint64_t)device,
								      .op = op,
								      .attr = (uint32_t)attr,
								      .value = value},
				     &o);
	if (r == CUDA_SUCCESS && out)
		*out = o.value;
	return r;
}

GP_CUDA_EXPORT CUresult cuDeviceGraphMemTrim(CUdevice device)
{
	return device_graph_mem(device, 2, 0, 0, NULL);
}

GP_CUDA_EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						     void *value)
{
	uint64_t v;
	CUresult r;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	r = device_graph_mem(device, 0, attr, 0, &v);
	if (r == CUDA_SUCCESS)
		*(cuuint64_t *)value = v;
	return r;
}

GP_CUDA_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
						     void *value)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	return device_graph_mem(device, 1, attr, *(const cuuint64_t *)value, NULL);
}

/* ---- conditional nodes ---- */

GP_CUDA_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out,
						       CUgraph hGraph, CUcontext ctx,
						       unsigned int defaultLaunchValue,
						       unsigned int flags)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_ictx *c = (struct gp_ictx *)ctx;
	struct gp_out_graph_cond_handle o;
	CUresult r;

	if (!g || !pHandle_out || !gp__ctx_valid(c) || c->remote == 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_cond_handle(0,
				      &(struct gp_in_graph_cond_handle){.ctx = c->remote,
									.graph = g->remote,
									.dflt = defaultLaunchValue,
									.flags = flags},
				      &o);
	if (r == CUDA_SUCCESS)
		*pHandle_out = (CUgraphConditionalHandle)o.handle;
	return r;
}

/* A body graph of a conditional node: an object of the node's. */
static struct gp_igraph *body_wrap(struct gp_ictx *c, uint64_t remote)
{
	struct gp_igraph *b = calloc(1, sizeof(*b));

	if (b)
		*b = (struct gp_igraph){
			.magic = GP_MAGIC_GRAPH, .remote = remote, .ctx = c, .body = true};
	return b;
}

static CUresult add_cond(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
			 const CUgraphEdgeData *edata, size_t ndeps, CUgraphNodeParams *p);

/* cuGraphAddNode: each type by its own call here (host nodes, batch memops and semaphores
 * are not forwarded). */
static CUresult add_node(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
			 const CUgraphEdgeData *edata, size_t ndeps, CUgraphNodeParams *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; edata && i < ndeps; i++) {
		static const CUgraphEdgeData none;

		if (memcmp(&edata[i], &none, sizeof(none)))
			return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges */
	}
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL: {
		const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
		CUDA_KERNEL_NODE_PARAMS kp = {.func = k->func,
					      .gridDimX = k->gridDimX,
					      .gridDimY = k->gridDimY,
					      .gridDimZ = k->gridDimZ,
					      .blockDimX = k->blockDimX,
					      .blockDimY = k->blockDimY,
					      .blockDimZ = k->blockDimZ,
					      .sharedMemBytes = k->sharedMemBytes,
					      .kernelParams = k->kernelParams,
					      .extra = k->extra,
					      .kern = k->kern,
					      .ctx = k->ctx};

		return cuGraphAddKernelNode_v2(out, hGraph, deps, ndeps, &kp);
	}
	case CU_GRAPH_NODE_TYPE_MEMSET: {
		const CUDA_MEMSET_NODE_PARAMS_v2 *m = &p->memset;
		CUDA_MEMSET_NODE_PARAMS mp = {.dst = m->dst,
					      .pitch = m->pitch,
					      .value = m->value,
					      .elementSize = m->elementSize,
					      .width = m->width,
					      .height = m->height};

		return cuGraphAddMemsetNode(out, hGraph, deps, ndeps, &mp, m->ctx);
	}
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return cuGraphAddEmptyNode(out, hGraph, deps, ndeps);
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
			return CUDA_ERROR_NOT_SUPPORTED; /* a child graph moved into the node */
		return cuGraphAddChildGraphNode(out, hGraph, deps, ndeps, p->graph.graph);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return cuGraphAddEventRecordNode(out, hGraph, deps, ndeps, p->eventRecord.event);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return cuGraphAddEventWaitNode(out, hGraph, deps, ndeps, p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
		CUDA_MEM_ALLOC_NODE_PARAMS ap = {.poolProps = p->alloc.poolProps,
						 .accessDescs = p->alloc.accessDescs,
						 .accessDescCount = p->alloc.accessDescCount,
						 .bytesize = p->alloc.bytesize};
		CUresult r = cuGraphAddMemAllocNode(out, hGraph, deps, ndeps, &ap);

		if (r == CUDA_SUCCESS)
			p->alloc.dptr = ap.dptr;
		return r;
	}
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return cuGraphAddMemFreeNode(out, hGraph, deps, ndeps, p->free.dptr);
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return add_cond(out, hGraph, deps, edata, ndeps, p);
	default:
		return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
	}
}

/* A conditional node and its bodies. */
static CUresult add_cond(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
			 const CUgraphEdgeData *edata, size_t ndeps, CUgraphNodeParams *p)
{
	struct gp_igraph *g = graph_obj(hGraph);
	CUDA_CONDITIONAL_NODE_PARAMS *cp;
	struct gp_out_graph_add_cond o;
	struct gp_ictx *c;
	struct gp_inode *n;
	CUgraph *bodies;
	CUresult r;

	(void)edata; /* checked by add_node */
	if (!g || !out)
		return CUDA_ERROR_INVALID_VALUE;
	cp = &p->conditional;
	c = (struct gp_ictx *)cp->ctx;
	if (!c && (r = gp__ctx_need(&c))) /* none: the current context */
		return r;
	if (!gp__ctx_valid(c) || c->remote == 0 || cp->size == 0 ||
	    (cp->type == CU_GRAPH_COND_TYPE_IF && cp->size > 2) ||
	    (cp->type == CU_GRAPH_COND_TYPE_WHILE && cp->size != 1))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = deps_check(g, deps, ndeps)))
		return r;
	if (!(bodies = calloc(cp->size, sizeof(*bodies))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_graph_add_cond(0,
				   &(struct gp_in_graph_add_cond){.ctx = c->remote,
								  .graph = g->remote,
								  .handle = cp->handle,
								  .type = (uint32_t)cp->type,
								  .size = cp->size},
				   &o);
	if (r) {
		free(bodies);
		return r;
	}
	for (unsigned i = 0; i < cp->size && r == CUDA_SUCCESS; i++) {
		struct gp_out_graph_node_op bo = {.value = o.body};

		if (i > 0)
			r = gp__rpc_graph_node_op(
				0,
				&(struct gp_in_graph_node_op){
					.ctx = c->remote, .node = o.node, .op = 6, .value = i},
				&bo);
		if (r == CUDA_SUCCESS && !(bodies[i] = (CUgraph)body_wrap(c, bo.value)))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* the node is in the graph now, whatever comes: its object holds what was named */
	{
		CUresult r2 =
			node_finish(g, o.node, CU_GRAPH_NODE_TYPE_CONDITIONAL, deps, ndeps, out);

		if (r == CUDA_SUCCESS)
			r = r2;
	}
	n = (struct gp_inode *)*out;
	if (!n) {
		for (unsigned i = 0; i < cp->size; i++)
			if (bodies[i])
				graph_free((struct gp_igraph *)bodies[i]);
		free(bodies);
		return r;
	}
	n->bodies = bodies;
	n->nbodies = cp->size;
	if (r == CUDA_SUCCESS)
		cp->phGraph_out = bodies;
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
					  const CUgraphNode *dependencies,
					  const CUgraphEdgeData *dependencyData,
					  size_t numDependencies, CUgraphNodeParams *nodeParams)
{
	return add_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
			nodeParams);
}

GP_CUDA_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				       const CUgraphNode *dependencies, size_t numDependencies,
				       CUgraphNodeParams *nodeParams)
{
	return add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

GP_CUDA_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct gp_inode *n = node_obj(hNode);

	if (!n || !type)
		return CUDA_ERROR_INVALID_VALUE;
	*type = n->type;
	return CUDA_SUCCESS;
}

static CUresult edges(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
		      const CUgraphEdgeData *ed, size_t n, bool remove)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_inode **f, **t;
	CUresult r = CUDA_SUCCESS;

	if (!g || (n && (!from || !to)))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; ed && i < n; i++) {
		static const CUgraphEdgeData zero;

		if (memcmp(&ed[i], &zero, sizeof(zero)))
			return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges */
	}
	if (n == 0)
		return CUDA_SUCCESS;
	f = calloc(n, sizeof(*f));
	t = calloc(n, sizeof(*t));
	if (!f || !t)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		f[i] = node_obj(from[i]);
		t[i] = node_obj(to[i]);
		if (!f[i] || !t[i] || f[i]->graph != g || t[i]->graph != g)
			r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS)
		r = send_edges(g, f, t, n, remove);
	free(f);
	free(t);
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
						  const CUgraphNode *to,
						  const CUgraphEdgeData *edgeData,
						  size_t numDependencies)
{
	return edges(hGraph, from, to, edgeData, numDependencies, false);
}

GP_CUDA_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
					       const CUgraphNode *to, size_t numDependencies)
{
	return edges(hGraph, from, to, NULL, numDependencies, false);
}

GP_CUDA_EXPORT CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
						     const CUgraphNode *to,
						     const CUgraphEdgeData *edgeData,
						     size_t numDependencies)
{
	return edges(hGraph, from, to, edgeData, numDependencies, true);
}

GP_CUDA_EXPORT CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
						  const CUgraphNode *to, size_t numDependencies)
{
	return edges(hGraph, from, to, NULL, numDependencies, true);
}

/* ---- executable graphs ---- */

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph, unsigned long long flags)
{
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_instantiate o;
	struct gp_iexec *x;
	CUresult r;

	if (!g || !out)
		return CUDA_ERROR_INVALID_VALUE;
	x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gp__rpc_graph_instantiate(0,
				      &(struct gp_in_graph_instantiate){.ctx = g->ctx->remote,
									.graph = g->remote,
									.flags = flags},
				      &o);
	if (r) {
		free(x);
		return r;
	}
	*x = (struct gp_iexec){.magic = GP_MAGIC_GEXEC,
			       .remote = o.exec,
			       .ctx = g->ctx,
			       .flags = flags,
			       .waits = gmem_any(g->remote),
			       .graph = g->remote};
	if (x->waits)
		gexec_count(g->remote, 1);
	*out = (CUgraphExec)x;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
						    unsigned long long flags)
{
	return instantiate(phGraphExec, hGraph, flags);
}

static CUresult graph_launch(CUgraphExec hx, CUstream s, bool upload, bool pt)
{
	struct gp_iexec *x = exec_obj(hx);
	struct gp_ictx *c;
	uint64_t sid;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r)
		return r;
	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	return gp__rpc_graph_launch(
		x->waits ? 0 : GP_F_NO_REPLY,
		&(struct gp_in_graph_launch){
			.ctx = x->ctx->remote, .exec = x->remote, .stream = sid, .upload = upload},
		NULL);
}

static CUresult instantiate_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
				   bool pt)
{
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	p->hErrNode_out = NULL;
	r = instantiate(out, g, p->flags);
	p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
		r = graph_launch(*out, p->hUploadStream, true, pt);
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
						     CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiate_params(phGraphExec, hGraph, p, false);
}

GP_CUDA_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
							  CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiate_params(phGraphExec, hGraph, p, true);
}

GP_CUDA_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	struct gp_iexec *x = exec_obj(hGraphExec);

	if (!x || !flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = x->flags;
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	CUresult r;

	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_graph_exec_destroy(
		0, &(struct gp_in_graph_exec_destroy){.ctx = x->ctx->remote, .exec = x->remote},
		NULL);
	if (r == CUDA_SUCCESS) {
		bool waits = x->waits;
		uint64_t graph = x->graph;

		x->magic = GP_MAGIC_DEAD;
		free(x);
		if (waits) {
			gexec_count(graph, -1);
			gmem_sweep();
		}
	}
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, false, false);
}

GP_CUDA_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, false, true);
}

GP_CUDA_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, true, false);
}

GP_CUDA_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, true, true);
}

GP_CUDA_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
					     CUgraphExecUpdateResultInfo *info)
{
	struct gp_iexec *x = exec_obj(hGraphExec);
	struct gp_igraph *g = graph_obj(hGraph);
	struct gp_out_graph_exec_update o = {0};
	CUresult r;

	if (info)
		memset(info, 0, sizeof(*info));
	if (!x || !g) {
		if (info)
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = gp__rpc_graph_exec_update(0,
				      &(struct gp_in_graph_exec_update){.ctx = x->ctx->remote,
									.exec = x->remote,
									.graph = g->remote},
				      &o);
	if (info)
		info->result = (CUgraphExecUpdateResult)o.result; /* the nodes are not named */
	return r;
}

GP_CUDA_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
					  CUgraphNode *hErrorNode_out,
					  CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResultInfo info;
	CUresult r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);

	if (hErrorNode_out)
		*hErrorNode_out = NULL;
	if (updateResult_out)
		*updateResult_out = info.result;
	return r;
}

/* ---- stream capture ---- */

#define CAPS_MAX 64

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cap {
	uint64_t sid;  /* the stream it began on; 0: free */
	uint64_t id;   /* the driver's capture id */
	bool invalid;  /* a call was refused: EndCapture answers INVALIDATED */
	CUgraph graph; /* the graph being captured, once asked for; EndCapture returns it */
	bool into;     /* graph is the program's (cuStreamBeginCaptureToGraph): not freed here */
} caps[CAPS_MAX];
static int ncaps; /* live entries */

static struct gp_out_stream_capture_info capture_info(struct gp_ictx *c, uint64_t sid, CUresult *r)
{
	struct gp_out_stream_capture_info o = {0};

	*r = gp__rpc_stream_capture_info(
		0, &(struct gp_in_stream_capture_info){.ctx = c->remote, .stream = sid}, &o);
	return o;
}

/* ---- client memory in graphs ---- */

static struct gp_cmem *cmems; /* token - 1 indexes it; under cap_lock; never shrinks */
static size_t ncmems, capcmems;

static uint64_t cmem_add(void *addr, uint64_t width, uint64_t height, uint64_t pitch,
			 bool to_device)
{
	uint64_t token = 0;

	pthread_mutex_lock(&cap_lock);
	if (ncmems == capcmems) {
		size_t nc = capcmems ? capcmems * 2 : 16;
		struct gp_cmem *m = realloc(cmems, nc * sizeof(*m));

		if (m) {
			cmems = m;
			capcmems = nc;
		}
	}
	if (ncmems < capcmems) {
		cmems[ncmems++] = (struct gp_cmem){.addr = addr,
						   .width = width,
						   .height = height,
						   .pitch = pitch,
						   .to_device = to_device};
		token = ncmems;
	}
	pthread_mutex_unlock(&cap_lock);
	return token;
}

bool gp__cmem_get(uint64_t token, bool fetch, uint64_t nbytes, struct gp_cmem *out)
{
	bool ok = false;

	pthread_mutex_lock(&cap_lock);
	if (token && token <= ncmems) {
		*out = cmems[token - 1];
		ok = out->to_device == fetch && out->width * out->height == nbytes;
	}
	pthread_mutex_unlock(&cap_lock);
	return ok;
}

/* Adds the client-memory copy to the stream's capture (graph 0) or to a graph. */
static CUresult client_copy(struct gp_ictx *c, uint64_t sid, uint64_t graph, CUdeviceptr dev,
			    uint64_t dpitch, void *host, uint64_t hpitch, uint64_t width,
			    uint64_t height, bool to_device, struct gp_out_graph_client_copy *o)
{
	uint64_t token;

	if (!host || width == 0 || height == 0 || width > UINT64_MAX / height)
		return CUDA_ERROR_INVALID_VALUE;
	token = cmem_add(host, width, height, height > 1 ? hpitch : width, to_device);
	if (!token)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return gp__rpc_graph_client_copy(
		0,
		&(struct gp_in_graph_client_copy){.ctx = c->remote,
						  .dev = dev,
						  .width = width,
						  .height = height,
						  .pitch = height > 1 ? dpitch : 0,
						  .stream = sid,
						  .graph = graph,
						  .token = token,
						  .to_device = to_device},
		o);
}

static bool capturing(struct gp_ictx *c, uint64_t sid, uint64_t *id)
{
	struct gp_out_stream_capture_info o;
	CUresult r;
	int any;

	pthread_mutex_lock(&cap_lock);
	any = ncaps;
	pthread_mutex_unlock(&cap_lock);
	if (!any)
		return false; /* nothing this process began is capturing: no round trip */
	o = capture_info(c, sid, &r);
	*id = o.id;
	return r == CUDA_SUCCESS && o.status != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void invalidate(uint64_t id)
{
	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < CAPS_MAX; i++)
		if (caps[i].sid && caps[i].id == id)
			caps[i].invalid = true;
	pthread_mutex_unlock(&cap_lock);
}

CUresult gp__capture_copy(struct gp_ictx *c, uint64_t sid, CUdeviceptr dev, uint64_t dpitch,
			  void *host, uint64_t hpitch, uint64_t width, uint64_t height,
			  bool to_device, bool *taken)
{
	struct gp_out_graph_client_copy o;
	uint64_t id = 0;
	CUresult r;

	*taken = capturing(c, sid, &id);
	if (!*taken)
		return CUDA_SUCCESS;
	r = client_copy(c, sid, 0, dev, dpitch, host, hpitch, width, height, to_device, &o);
	if (r)
		invalidate(id); /* as CUDA ends a capture whose call failed */
	return r;
}

CUresult gp__capture_alloc(struct gp_ictx *c, uint64_t sid, uint64_t bytes, uint64_t pool,
			   CUdeviceptr *dptr, bool *taken)
{
	struct gp_out_stream_capture_info ci;
	struct gp_out_mem_alloc_async o;
	CUresult r;
	int any;

	*taken = false;
	pthread_mutex_lock(&cap_lock);
	any = ncaps;
	pthread_mutex_unlock(&cap_lock);
	if (!any)
		return CUDA_SUCCESS; /* nothing this process began is capturing: no round trip */
	ci = capture_info(c, sid, &r);
	if (r || ci.status == CU_STREAM_CAPTURE_STATUS_NONE)
		return CUDA_SUCCESS;
	*taken = true;
	if (ci.status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !ci.graph)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	r = gp__rpc_mem_alloc_async(
		0,
		&(struct gp_in_mem_alloc_async){
			.ctx = c->remote, .bytes = bytes, .pool = pool, .stream = sid},
		&o);
	if (r == CUDA_SUCCESS && gmem_add((uintptr_t)o.dptr, bytes, c, ci.graph, ci.id)) {
		gp_log_warnx("captured allocation: its address is not free in this process");
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r) {
		invalidate(ci.id); /* as CUDA ends a capture whose call failed */
		return r;
	}
	*dptr = (CUdeviceptr)o.dptr;
	return CUDA_SUCCESS;
}

bool gp__capture_refuse(struct gp_ictx *c, uint64_t sid)
{
	uint64_t id = 0;

	if (!capturing(c, sid, &id))
		return false;
	invalidate(id);
	return true;
}

/* Begins a capture on s; into: the program's graph it goes into (cuStreamBeginCaptureToGraph),
 * else a new one. */
static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode, bool pt, struct gp_igraph *into)
{
	struct gp_out_stream_capture_info o;
	struct gp_ictx *c;
	uint64_t sid;
	int slot = -1;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r)
		return r;
	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < CAPS_MAX && slot < 0; i++)
		if (!caps[i].sid)
			slot = i;
	if (slot >= 0) {
		caps[slot] = (struct cap){
			.sid = sid ? sid : ~0ull, .graph = (CUgraph)into, .into = into != NULL};
		ncaps++;
	}
	pthread_mutex_unlock(&cap_lock);
	if (slot < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (into)
		r = gp__rpc_stream_capture_to_graph(
			0,
			&(struct gp_in_stream_capture_to_graph){.ctx = c->remote,
								.stream = sid,
								.graph = into->remote,
								.mode = mode},
			NULL);
	else
		r = gp__rpc_stream_begin_capture(
			0,
			&(struct gp_in_stream_begin_capture){
				.ctx = c->remote, .stream = sid, .mode = mode},
			NULL);
	if (r == CUDA_SUCCESS)
		o = capture_info(c, sid, &r);
	pthread_mutex_lock(&cap_lock);
	if (r) {
		caps[slot].sid = 0;
		ncaps--;
	} else {
		caps[slot].id = o.id;
	}
	pthread_mutex_unlock(&cap_lock);
	return r;
}

GP_CUDA_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, false, NULL);
}

static CUresult capture_to_graph(CUstream s, CUgraph hGraph, const CUgraphNode *deps,
				 const CUgraphEdgeData *edata, size_t ndeps,
				 CUstreamCaptureMode mode, bool pt)
{
	struct gp_igraph *g = graph_obj(hGraph);

	(void)deps;
	(void)edata;
	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	if (ndeps)
		return CUDA_ERROR_NOT_SUPPORTED; /* docs/conformance.md */
	return begin_capture(s, mode, pt, g);
}

GP_CUDA_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
						    const CUgraphNode *dependencies,
						    const CUgraphEdgeData *dependencyData,
						    size_t numDependencies,
						    CUstreamCaptureMode mode)
{
	return capture_to_graph(hStream, hGraph, dependencies, dependencyData, numDependencies,
				mode, false);
}

GP_CUDA_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
							 const CUgraphNode *dependencies,
							 const CUgraphEdgeData *dependencyData,
							 size_t numDependencies,
							 CUstreamCaptureMode mode)
{
	return capture_to_graph(hStream, hGraph, dependencies, dependencyData, numDependencies,
				mode, true);
}

GP_CUDA_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, true, NULL);
}

static CUresult end_capture(CUstream s, CUgraph *out, bool pt)
{
	struct gp_out_stream_end_capture o;
	struct gp_ictx *c;
	uint64_t sid, key, capid = 0;
	bool invalid = false, into = false, want;
	CUgraph named = NULL, none;
	int slot = -1;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r)
		return r;
	/* a capture into the program's graph needs no answer (CUDA takes NULL there) */
	want = out != NULL;
	if (!out)
		out = &none;
	*out = NULL;
	key = sid ? sid : ~0ull;
	pthread_mutex_lock(&cap_lock);
	for (int i = 0; i < CAPS_MAX && slot < 0; i++)
		if (caps[i].sid == key)
			slot = i;
	if (slot >= 0) {
		invalid = caps[slot].invalid;
		named = caps[slot].graph;
		capid = caps[slot].id;
		into = caps[slot].into;
	}
	pthread_mutex_unlock(&cap_lock);
	if (!want && !into)
		return CUDA_ERROR_INVALID_VALUE;
	r = gp__rpc_stream_end_capture(0,
				       &(struct gp_in_stream_end_capture){
					       .ctx = c->remote, .stream = sid, .invalid = invalid},
				       &o);
	/* the capture is over whatever the answer, unless this stream was not its origin */
	if (slot >= 0 && r != CUDA_ERROR_STREAM_CAPTURE_UNMATCHED &&
	    r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
		pthread_mutex_lock(&cap_lock);
		caps[slot].sid = 0;
		caps[slot].graph = NULL;
		ncaps--;
		pthread_mutex_unlock(&cap_lock);
		if (r && named && !into) {
			/* no graph came of the capture: the object given out names nothing */
			graph_free((struct gp_igraph *)named);
			named = NULL;
		}
		/* its allocations' addresses: the new graph's, or nobody's */
		if (r)
			gmem_forget(0, capid);
		else
			gmem_captured(capid);
	}
	if (r)
		return r;
	if (named && ((struct gp_igraph *)named)->remote == o.graph) {
		*out = named;
		return CUDA_SUCCESS;
	}
	return graph_wrap(c, o.graph, out);
}

GP_CUDA_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, false);
}

GP_CUDA_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, true);
}

/* Status, id and dependency count from the driver; no round trip while nothing captures. */
static CUresult capture_query(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
			      const CUgraphNode **deps, size_t *ndeps, bool pt)
{
	struct gp_out_stream_capture_info o = {0};
	struct gp_ictx *c;
	uint64_t sid;
	int any;
	CUresult r = gp__ctx_stream(s, pt, &c, &sid);

	if (r)
		return r;
	if (!st)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cap_lock);
	any = ncaps;
	pthread_mutex_unlock(&cap_lock);
	if (any) {
		o = capture_info(c, sid, &r);
		if (r)
			return r;
	}
	*st = (CUstreamCaptureStatus)o.status;
	if (o.status == CU_STREAM_CAPTURE_STATUS_NONE)
		return CUDA_SUCCESS;
	if (deps && o.ndeps)
		return CUDA_ERROR_NOT_SUPPORTED; /* the frontier's nodes have no handles here */
	if (deps)
		*deps = NULL;
	if (id)
		*id = o.id;
	if (ndeps)
		*ndeps = o.ndeps;
	if (graph) {
		/* one object per capture, the one EndCapture gives back */
		int slot = -1;

		pthread_mutex_lock(&cap_lock);
		for (int i = 0; i < CAPS_MAX && slot < 0; i++)
			if (caps[i].sid && caps[i].id == o.id)
				slot = i;
		if (slot >= 0 && !caps[slot].graph && o.graph) {
			struct gp_igraph *g = calloc(1, sizeof(*g));

			if (g) {
				*g = (struct gp_igraph){
					.magic = GP_MAGIC_GRAPH, .remote = o.graph, .ctx = c};
				caps[slot].graph = (CUgraph)g;
			}
		}
		*graph = slot >= 0 ? caps[slot].graph : NULL;
		pthread_mutex_unlock(&cap_lock);
		if (!*graph)
			return slot < 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

GP_CUDA_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
	return capture_query(s, status, NULL, NULL, NULL, NULL, false);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status,
					       cuuint64_t *id)
{
	return capture_query(s, status, id, NULL, NULL, NULL, false);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *status,
						    cuuint64_t *id)
{
	return capture_query(s, status, id, NULL, NULL, NULL, true);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status,
						  cuuint64_t *id, CUgraph *graph,
						  const CUgraphNode **deps, size_t *ndeps)
{
	return capture_query(s, status, id, graph, deps, ndeps, false);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, CUstreamCaptureStatus *status,
						       cuuint64_t *id, CUgraph *graph,
						       const CUgraphNode **deps, size_t *ndeps)
{
	return capture_query(s, status, id, graph, deps, ndeps, true);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status,
						  cuuint64_t *id, CUgraph *graph,
						  const CUgraphNode **deps,
						  const CUgraphEdgeData **edges, size_t *ndeps)
{
	if (edges)
		*edges = NULL;
	return capture_query(s, status, id, graph, deps, ndeps, false);
}

GP_CUDA_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *status,
						       cuuint64_t *id, CUgraph *graph,
						       const CUgraphNode **deps,
						       const CUgraphEdgeData **edges, size_t *ndeps)
{
	if (edges)
		*edges = NULL;
	return capture_query(s, status, id, graph, deps, ndeps, true);
}

/*
 * The mode is kept per client thread, as CUDA keeps it. The pool's driver applies the
 * capture's own mode on the one worker thread that runs every client thread's calls.
 */
static __thread CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

GP_CUDA_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;

	if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}
