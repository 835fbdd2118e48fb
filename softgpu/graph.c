/* graph.c -- CUDA graphs: nodes, edges, clone, instantiate, launch, exec update; stream capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softgpu.h"

/*
 * DESIGN: a graph is an array of nodes in creation order; each node keeps its
 * incoming edges (deps) and outgoing ones (outs). A kernel node holds a
 * checked, marshalled launch (launch.c) used as a template; copy and memset
 * nodes hold their ranges resolved to host addresses (softgpu's device memory
 * is host memory), so a node from or to pageable host memory reads and writes
 * it when the node runs, not when it was made.
 *
 * Instantiating clones the graph (later edits of the graph leave the
 * executable alone) and fixes one topological order, child graphs flattened
 * into it. A launch turns that order into stream ops (a fresh copy of each
 * kernel launch) and queues them on the stream as one unit; one FIFO stream
 * running them in a topological order honours every edge. Exec update and the
 * exec SetParams calls rewrite the executable's own nodes.
 *
 * Capture: a capturing stream has a capture (its graph) and a frontier (the
 * nodes the next op depends on). submit() in stream.c offers every op here
 * while any capture is in progress; a captured op becomes a node depending on
 * the frontier, which then becomes that node. An event recorded on a capturing
 * stream remembers the frontier; a stream waiting for it joins the capture
 * with that frontier (fork), and a capturing stream waiting for it merges it
 * (join). Modes: a thread that began a non-relaxed capture, or (in global
 * mode) any thread while another thread's global capture runs, may not make
 * potentially unsafe calls (sg_capture_unsafe).
 *
 * Locking: one mutex (glock) guards every graph, exec, capture and the capture
 * fields of streams and events. It is taken before stream.c's qlock and never
 * held while a stream op runs; ops are queued after it is released.
 */

struct sg_graph {
	struct sg_gnode **nodes;
	size_t n, cap;
	bool visible; /* its nodes are handles (not an executable's private copy) */
};

struct sg_gnode {
	struct sg_graph *graph;
	CUgraphNodeType type;
	struct sg_ctx *ctx;
	struct sg_gnode **deps, **outs;
	size_t ndeps, capdeps, nouts, capouts;
	const struct sg_gnode *orig; /* the node this one was cloned from */
	bool enabled;
	bool have_params;	     /* copy/memset: made from API parameters (not captured) */
	struct sg_launch *launch; /* kernel: the template */
	void **kparams;		  /* kernel: pointers into the template's parameters */
	struct sg_copy copy;
	CUDA_MEMCPY3D p3d;
	struct sg_set set;
	CUDA_MEMSET_NODE_PARAMS pset;
	CUDA_HOST_NODE_PARAMS host;
	struct sg_event *event;
	struct sg_graph *child; /* owned */
};

struct sg_gexec {
	struct sg_graph *g; /* private clone */
	unsigned long long flags;
	struct sg_gnode **order;
	size_t norder;
};

struct sg_capture {
	struct sg_graph *g;
	bool own_graph; /* made by BeginCapture (not ToGraph) */
	struct sg_stream *origin;
	CUstreamCaptureMode mode;
	uint64_t id;
	bool invalid;
	pthread_t thread;
	struct sg_stream **members; /* every stream taking part, origin first */
	size_t nmembers;
	struct sg_capture *next;
};

int sg_captures_active;
static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static struct sg_capture *captures;
static uint64_t next_capture_id = 1;
static int global_captures; /* non-relaxed... global-mode captures of every thread */
static __thread CUstreamCaptureMode tl_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static __thread int tl_captures;	/* non-relaxed captures this thread began */
static __thread int tl_global_captures; /* global-mode ones among them */

/* ---- nodes and edges ---- */

static bool push(struct sg_gnode ***arr, size_t *n, size_t *cap, struct sg_gnode *x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		struct sg_gnode **a = realloc(*arr, nc * sizeof(*a));

		if (a == NULL)
			return false;
		*arr = a;
		*cap = nc;
	}
	(*arr)[(*n)++] = x;
	return true;
}

static bool drop(struct sg_gnode **arr, size_t *n, const struct sg_gnode *x)
{
	for (size_t i = 0; i < *n; i++) {
		if (arr[i] == x) {
			memmove(arr + i, arr + i + 1, (*n - i - 1) * sizeof(*arr));
			(*n)--;
			return true;
		}
	}
	return false;
}

static bool has(struct sg_gnode *const *arr, size_t n, const struct sg_gnode *x)
{
	for (size_t i = 0; i < n; i++)
		if (arr[i] == x)
			return true;
	return false;
}

static CUresult add_edge(struct sg_gnode *from, struct sg_gnode *to)
{
	if (has(to->deps, to->ndeps, from))
		return CUDA_SUCCESS;
	if (!push(&to->deps, &to->ndeps, &to->capdeps, from))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!push(&from->outs, &from->nouts, &from->capouts, to)) {
		to->ndeps--;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static struct sg_graph *graph_new(bool visible)
{
	struct sg_graph *g = calloc(1, sizeof(*g));

	if (g && visible && sg_handle_add(g, SG_K_GRAPH)) {
		free(g);
		return NULL;
	}
	if (g)
		g->visible = visible;
	return g;
}

static void graph_free(struct sg_graph *g);

static void node_free(struct sg_gnode *n)
{
	if (n == NULL)
		return;
	if (n->graph && n->graph->visible)
		sg_handle_del(n);
	sg_launch_free(n->launch);
	free(n->kparams);
	graph_free(n->child);
	free(n->deps);
	free(n->outs);
	free(n);
}

static void graph_free(struct sg_graph *g)
{
	if (g == NULL)
		return;
	if (g->visible)
		sg_handle_del(g);
	for (size_t i = 0; i < g->n; i++)
		node_free(g->nodes[i]);
	free(g->nodes);
	free(g);
}

/* kernelParams for GetParams: pointers at each parameter in the template's buffer. */
static CUresult kernel_params(struct sg_gnode *n)
{
	const struct sg_func *pf = n->launch->g.entry;
	void **kp = calloc(pf->nparams ? pf->nparams : 1, sizeof(*kp));

	if (kp == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < pf->nparams; i++)
		kp[i] = n->launch->params + pf->params[i].offset;
	free(n->kparams);
	n->kparams = kp;
	return CUDA_SUCCESS;
}

/* A new node of g after deps (each checked to be g's). */
static CUresult node_new(struct sg_graph *g, CUgraphNodeType type, struct sg_gnode *const *deps,
			 size_t ndeps, struct sg_gnode **out)
{
	struct sg_gnode *n;
	CUresult r = CUDA_SUCCESS;

	for (size_t i = 0; i < ndeps; i++) {
		if (!sg_handle_ok(deps[i], SG_K_GNODE) || deps[i]->graph != g)
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < i; j++)
			if (deps[j] == deps[i])
				return CUDA_ERROR_INVALID_VALUE;
	}
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->graph = g;
	n->type = type;
	n->enabled = true;
	for (size_t i = 0; i < ndeps && r == CUDA_SUCCESS; i++)
		r = add_edge(deps[i], n);
	if (r == CUDA_SUCCESS && g->visible && sg_handle_add(n, SG_K_GNODE))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS && !push(&g->nodes, &g->n, &g->cap, n)) {
		if (g->visible)
			sg_handle_del(n);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r) {
		for (size_t i = 0; i < n->ndeps; i++)
			drop(n->deps[i]->outs, &n->deps[i]->nouts, n);
		free(n->deps);
		free(n);
		return r;
	}
	*out = n;
	return CUDA_SUCCESS;
}

static void node_unlink(struct sg_gnode *n)
{
	struct sg_graph *g = n->graph;

	for (size_t i = 0; i < n->ndeps; i++)
		drop(n->deps[i]->outs, &n->deps[i]->nouts, n);
	for (size_t i = 0; i < n->nouts; i++)
		drop(n->outs[i]->deps, &n->outs[i]->ndeps, n);
	drop(g->nodes, &g->n, n);
}

static size_t index_of(const struct sg_graph *g, const struct sg_gnode *n)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->nodes[i] == n)
			return i;
	return (size_t)-1;
}

static struct sg_graph *graph_clone(const struct sg_graph *src, bool visible);

/* Copies what a node does (not its edges) from src into n. */
static CUresult node_copy_params(struct sg_gnode *n, const struct sg_gnode *src, bool visible)
{
	CUresult r = CUDA_SUCCESS;

	n->ctx = src->ctx;
	n->enabled = src->enabled;
	n->have_params = src->have_params;
	n->copy = src->copy;
	n->p3d = src->p3d;
	n->set = src->set;
	n->pset = src->pset;
	n->host = src->host;
	n->event = src->event;
	if (src->launch) {
		struct sg_launch *l = sg_launch_dup(src->launch);

		if (l == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		sg_launch_free(n->launch);
		n->launch = l;
		r = kernel_params(n);
	}
	if (r == CUDA_SUCCESS && src->child) {
		struct sg_graph *c = graph_clone(src->child, visible);

		if (c == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		graph_free(n->child);
		n->child = c;
	}
	return r;
}

static struct sg_graph *graph_clone(const struct sg_graph *src, bool visible)
{
	struct sg_graph *g = graph_new(visible);

	if (g == NULL)
		return NULL;
	for (size_t i = 0; i < src->n; i++) {
		const struct sg_gnode *s = src->nodes[i];
		struct sg_gnode *n;

		if (node_new(g, s->type, NULL, 0, &n) || node_copy_params(n, s, visible))
			goto fail;
		n->orig = s;
	}
	for (size_t i = 0; i < src->n; i++) {
		const struct sg_gnode *s = src->nodes[i];

		for (size_t d = 0; d < s->ndeps; d++)
			if (add_edge(g->nodes[index_of(src, s->deps[d])], g->nodes[i]))
				goto fail;
	}
	return g;
fail:
	graph_free(g);
	return NULL;
}

/* ---- topological order ---- */

/* Appends g's nodes in a topological order to *order, child graphs expanded. */
static CUresult topo(const struct sg_graph *g, struct sg_gnode ***order, size_t *n, size_t *cap)
{
	size_t *indeg = calloc(g->n ? g->n : 1, sizeof(*indeg));
	size_t *queue = calloc(g->n ? g->n : 1, sizeof(*queue));
	size_t head = 0, tail = 0;
	CUresult r = CUDA_SUCCESS;

	if (indeg == NULL || queue == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < g->n; i++) {
		indeg[i] = g->nodes[i]->ndeps;
		if (indeg[i] == 0)
			queue[tail++] = i;
	}
	while (head < tail && r == CUDA_SUCCESS) {
		struct sg_gnode *x = g->nodes[queue[head++]];

		if (x->type == CU_GRAPH_NODE_TYPE_GRAPH)
			r = topo(x->child, order, n, cap);
		else if (!push(order, n, cap, x))
			r = CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t o = 0; o < x->nouts; o++) {
			size_t k = index_of(g, x->outs[o]);

			if (--indeg[k] == 0)
				queue[tail++] = k;
		}
	}
	if (r == CUDA_SUCCESS && tail != g->n)
		r = CUDA_ERROR_INVALID_VALUE; /* a cycle */
out:
	free(indeg);
	free(queue);
	return r;
}

/* ---- graphs ---- */

#define LOCKED(expr)                           \
	do {                                   \
		CUresult r_;                   \
		pthread_mutex_lock(&glock);    \
		r_ = (expr);                   \
		pthread_mutex_unlock(&glock);  \
		return r_;                     \
	} while (0)

static bool graph_ok(CUgraph h)
{
	return sg_handle_ok(h, SG_K_GRAPH);
}

static bool node_ok(CUgraphNode h)
{
	return sg_handle_ok(h, SG_K_GNODE);
}

SG_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct sg_graph *g;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (phGraph == NULL || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&glock);
	g = graph_new(true);
	pthread_mutex_unlock(&glock);
	if (g == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phGraph = (CUgraph)g;
	return CUDA_SUCCESS;
}

static CUresult graph_destroy(CUgraph h)
{
	if (!graph_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	for (struct sg_capture *c = captures; c; c = c->next)
		if (c->g == (struct sg_graph *)h)
			return CUDA_ERROR_ILLEGAL_STATE; /* still being captured into */
	graph_free((struct sg_graph *)h);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	LOCKED(graph_destroy(hGraph));
}

static CUresult graph_clone_api(CUgraph *out, CUgraph h)
{
	struct sg_graph *g;

	if (out == NULL || !graph_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	g = graph_clone((struct sg_graph *)h, true);
	if (g == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	LOCKED(graph_clone_api(phGraphClone, originalGraph));
}

static struct sg_gnode *find_clone(struct sg_graph *g, const struct sg_gnode *orig)
{
	for (size_t i = 0; i < g->n; i++) {
		struct sg_gnode *n = g->nodes[i], *c;

		if (n->orig == orig)
			return n;
		if (n->child && (c = find_clone(n->child, orig)))
			return c;
	}
	return NULL;
}

static CUresult find_in_clone(CUgraphNode *out, CUgraphNode orig, CUgraph clone)
{
	struct sg_gnode *n;

	if (out == NULL || !node_ok(orig) || !graph_ok(clone))
		return CUDA_ERROR_INVALID_VALUE;
	n = find_clone((struct sg_graph *)clone, (struct sg_gnode *)orig);
	if (n == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (CUgraphNode)n;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
					  CUgraph hClonedGraph)
{
	LOCKED(find_in_clone(phNode, hOriginalNode, hClonedGraph));
}

/* ---- adding nodes ---- */

/* The context a node runs in: the given one, else the current one. */
static CUresult node_ctx(CUcontext h, struct sg_ctx **out)
{
	return h ? sg_ctx_resolve(h, out, false) : sg_ctx_current(out, false);
}

static CUresult kernel_set(struct sg_gnode *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sg_ctx *ctx;
	struct sg_launch *l;
	CUfunction f;
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	f = p->func ? p->func : (CUfunction)p->kern;
	r = node_ctx(p->func ? NULL : p->ctx, &ctx);
	if (r)
		return r;
	if (f == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = sg_launch_new(ctx, f, (unsigned[3]){p->gridDimX, p->gridDimY, p->gridDimZ},
			  (unsigned[3]){p->blockDimX, p->blockDimY, p->blockDimZ},
			  p->sharedMemBytes, p->kernelParams, p->extra, &l);
	if (r)
		return r;
	sg_launch_free(n->launch);
	n->launch = l;
	n->ctx = ctx;
	return kernel_params(n);
}

static CUresult memcpy_set(struct sg_gnode *n, const CUDA_MEMCPY3D *p, CUcontext hctx)
{
	struct sg_ctx *ctx;
	struct sg_copy c;
	bool sh, dh;
	CUresult r = node_ctx(hctx, &ctx);

	if (r)
		return r;
	if ((r = sg_copy_prepare3d(p, &c, &sh, &dh)))
		return r;
	n->ctx = ctx;
	n->copy = c;
	n->p3d = *p;
	n->have_params = true;
	return CUDA_SUCCESS;
}

static CUresult memset_set(struct sg_gnode *n, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext hctx)
{
	struct sg_ctx *ctx;
	struct sg_set s;
	CUresult r = node_ctx(hctx, &ctx);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = sg_set_prepare(p->dst, p->pitch, p->value, p->elementSize, p->width, p->height, &s);
	if (r)
		return r;
	n->ctx = ctx;
	n->set = s;
	n->pset = *p;
	n->have_params = true;
	return CUDA_SUCCESS;
}

static CUresult host_set(struct sg_gnode *n, const CUDA_HOST_NODE_PARAMS *p)
{
	if (p == NULL || p->fn == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	n->host = *p;
	return CUDA_SUCCESS;
}

static CUresult event_set(struct sg_gnode *n, CUevent e)
{
	if (!sg_handle_ok(e, SG_K_EVENT))
		return CUDA_ERROR_INVALID_VALUE;
	n->event = (struct sg_event *)e;
	return CUDA_SUCCESS;
}

/* What an add call sets on its new node. */
struct add_args {
	const CUDA_KERNEL_NODE_PARAMS *kernel;
	const CUDA_MEMCPY3D *copy;
	const CUDA_MEMSET_NODE_PARAMS *set;
	const CUDA_HOST_NODE_PARAMS *host;
	CUcontext ctx;
	CUevent event;
	CUgraph child;
};

static CUresult add_node(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
			 CUgraphNodeType type, const struct add_args *a)
{
	struct sg_graph *g = (struct sg_graph *)hg;
	struct sg_gnode *n;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (out == NULL || !graph_ok(hg) || (ndeps && deps == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&glock);
	r = node_new(g, type, (struct sg_gnode *const *)deps, ndeps, &n);
	if (r == CUDA_SUCCESS) {
		switch (type) {
		case CU_GRAPH_NODE_TYPE_KERNEL:
			r = kernel_set(n, a->kernel);
			break;
		case CU_GRAPH_NODE_TYPE_MEMCPY:
			r = memcpy_set(n, a->copy, a->ctx);
			break;
		case CU_GRAPH_NODE_TYPE_MEMSET:
			r = memset_set(n, a->set, a->ctx);
			break;
		case CU_GRAPH_NODE_TYPE_HOST:
			r = host_set(n, a->host);
			break;
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
			r = event_set(n, a->event);
			break;
		case CU_GRAPH_NODE_TYPE_GRAPH:
			if (!graph_ok(a->child) || a->child == hg)
				r = CUDA_ERROR_INVALID_VALUE;
			else if ((n->child = graph_clone((struct sg_graph *)a->child, true)) == NULL)
				r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		case CU_GRAPH_NODE_TYPE_EMPTY:
			break;
		default:
			r = CUDA_ERROR_NOT_SUPPORTED;
			break;
		}
		if (r) {
			node_unlink(n);
			node_free(n);
		}
	}
	pthread_mutex_unlock(&glock);
	if (r == CUDA_SUCCESS)
		*out = (CUgraphNode)n;
	return r;
}

SG_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_KERNEL, &(struct add_args){.kernel = nodeParams});
}

SG_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_MEMCPY, &(struct add_args){.copy = copyParams, .ctx = ctx});
}

SG_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_MEMSET, &(struct add_args){.set = memsetParams, .ctx = ctx});
}

SG_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				      const CUgraphNode *dependencies, size_t numDependencies,
				      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_HOST, &(struct add_args){.host = nodeParams});
}

SG_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					    const CUgraphNode *dependencies,
					    size_t numDependencies, CUgraph childGraph)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_GRAPH, &(struct add_args){.child = childGraph});
}

SG_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				       const CUgraphNode *dependencies, size_t numDependencies)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_EMPTY, &(struct add_args){0});
}

SG_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					     const CUgraphNode *dependencies,
					     size_t numDependencies, CUevent event)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_EVENT_RECORD, &(struct add_args){.event = event});
}

SG_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					   const CUgraphNode *dependencies, size_t numDependencies,
					   CUevent event)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_WAIT_EVENT, &(struct add_args){.event = event});
}

/* cuGraphAddNode's generic parameters as an add call's; NOT_SUPPORTED for other types. */
static CUresult generic_args(const CUgraphNodeParams *p, struct add_args *a,
			     CUDA_KERNEL_NODE_PARAMS *k, CUDA_MEMSET_NODE_PARAMS *m,
			     CUDA_HOST_NODE_PARAMS *h)
{
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	memset(a, 0, sizeof(*a));
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		memcpy(k, &p->kernel, sizeof(*k)); /* v3 begins with v2's fields */
		a->kernel = k;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (p->memcpy.flags || p->memcpy.reserved)
			return CUDA_ERROR_INVALID_VALUE;
		a->copy = &p->memcpy.copyParams;
		a->ctx = p->memcpy.copyCtx;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMSET:
		*m = (CUDA_MEMSET_NODE_PARAMS){p->memset.dst, p->memset.pitch, p->memset.value,
					       p->memset.elementSize, p->memset.width,
					       p->memset.height};
		a->set = m;
		a->ctx = p->memset.ctx;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_HOST:
		*h = (CUDA_HOST_NODE_PARAMS){p->host.fn, p->host.userData};
		a->host = h;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
			return CUDA_ERROR_NOT_SUPPORTED;
		a->child = p->graph.graph;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		a->event = p->eventRecord.event;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		a->event = p->eventWait.event;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

static bool edges_default(const CUgraphEdgeData *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++) {
		static const CUgraphEdgeData zero;

		if (memcmp(&d[i], &zero, sizeof(zero)))
			return false;
	}
	return true;
}

SG_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
				  const CUgraphNode *dependencies,
				  const CUgraphEdgeData *dependencyData, size_t numDependencies,
				  CUgraphNodeParams *nodeParams)
{
	struct add_args a;
	CUDA_KERNEL_NODE_PARAMS k;
	CUDA_MEMSET_NODE_PARAMS m;
	CUDA_HOST_NODE_PARAMS h;
	CUresult r = generic_args(nodeParams, &a, &k, &m, &h);

	if (r)
		return r;
	if (!edges_default(dependencyData, numDependencies))
		return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges */
	return add_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->type, &a);
}

/* ---- querying and editing nodes ---- */

static CUresult node_get(CUgraphNode h, CUgraphNodeType type, struct sg_gnode **out)
{
	if (!node_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	if (((struct sg_gnode *)h)->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (struct sg_gnode *)h;
	return CUDA_SUCCESS;
}

static CUresult node_type(CUgraphNode h, CUgraphNodeType *type)
{
	if (!node_ok(h) || type == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*type = ((struct sg_gnode *)h)->type;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	LOCKED(node_type(hNode, type));
}

static CUresult kernel_get(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_KERNEL, &n);
	const struct sg_launch *l;

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	l = n->launch;
	memset(p, 0, sizeof(*p));
	if (sg_handle_kind(l->func) == SG_K_KERNEL)
		p->kern = (CUkernel)l->func;
	else
		p->func = l->func;
	p->gridDimX = l->g.grid[0];
	p->gridDimY = l->g.grid[1];
	p->gridDimZ = l->g.grid[2];
	p->blockDimX = l->g.block[0];
	p->blockDimY = l->g.block[1];
	p->blockDimZ = l->g.block[2];
	p->sharedMemBytes = l->g.dyn_shared;
	p->kernelParams = n->kparams;
	p->ctx = (CUcontext)n->ctx;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	LOCKED(kernel_get(hNode, nodeParams));
}

static CUresult kernel_setp(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_KERNEL, &n);

	return r ? r : kernel_set(n, p);
}

SG_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
					      const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	LOCKED(kernel_setp(hNode, nodeParams));
}

static CUresult memcpy_get(CUgraphNode h, CUDA_MEMCPY3D *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEMCPY, &n);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->have_params)
		return CUDA_ERROR_NOT_SUPPORTED; /* captured: only host addresses are kept */
	*p = n->p3d;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
	LOCKED(memcpy_get(hNode, nodeParams));
}

static CUresult memcpy_setp(CUgraphNode h, const CUDA_MEMCPY3D *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEMCPY, &n);

	return r ? r : memcpy_set(n, p, (CUcontext)n->ctx);
}

SG_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
	LOCKED(memcpy_setp(hNode, nodeParams));
}

static CUresult memset_get(CUgraphNode h, CUDA_MEMSET_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEMSET, &n);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (!n->have_params)
		return CUDA_ERROR_NOT_SUPPORTED; /* captured: only host addresses are kept */
	*p = n->pset;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	LOCKED(memset_get(hNode, nodeParams));
}

static CUresult memset_setp(CUgraphNode h, const CUDA_MEMSET_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEMSET, &n);

	return r ? r : memset_set(n, p, (CUcontext)n->ctx);
}

SG_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
					      const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	LOCKED(memset_setp(hNode, nodeParams));
}

static CUresult host_get(CUgraphNode h, CUDA_HOST_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_HOST, &n);

	if (r)
		return r;
	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*p = n->host;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
	LOCKED(host_get(hNode, nodeParams));
}

static CUresult host_setp(CUgraphNode h, const CUDA_HOST_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_HOST, &n);

	return r ? r : host_set(n, p);
}

SG_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode,
					    const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	LOCKED(host_setp(hNode, nodeParams));
}

static CUresult child_get(CUgraphNode h, CUgraph *out)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_GRAPH, &n);

	if (r)
		return r;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (CUgraph)n->child;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
	LOCKED(child_get(hNode, phGraph));
}

static CUresult event_get(CUgraphNode h, CUgraphNodeType t, CUevent *out)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, t, &n);

	if (r)
		return r;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (CUevent)n->event;
	return CUDA_SUCCESS;
}

static CUresult event_setp(CUgraphNode h, CUgraphNodeType t, CUevent e)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, t, &n);

	return r ? r : event_set(n, e);
}

SG_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	LOCKED(event_get(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out));
}

SG_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	LOCKED(event_setp(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event));
}

SG_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	LOCKED(event_get(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out));
}

SG_EXPORT CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	LOCKED(event_setp(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event));
}

/* Copies up to *count handles out (all when arr is NULL: just the count). */
static void list_out(struct sg_gnode *const *src, size_t n, CUgraphNode *arr,
		     CUgraphEdgeData *edges, size_t *count)
{
	if (arr == NULL) {
		*count = n;
		return;
	}
	for (size_t i = 0; i < *count; i++) {
		arr[i] = i < n ? (CUgraphNode)src[i] : NULL;
		if (edges)
			memset(&edges[i], 0, sizeof(edges[i]));
	}
	if (n < *count)
		*count = n;
}

static CUresult get_nodes(CUgraph h, CUgraphNode *nodes, size_t *num, bool roots)
{
	struct sg_graph *g = (struct sg_graph *)h;
	struct sg_gnode **tmp;
	size_t k = 0;

	if (!graph_ok(h) || num == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	tmp = malloc((g->n ? g->n : 1) * sizeof(*tmp));
	if (tmp == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < g->n; i++)
		if (!roots || g->nodes[i]->ndeps == 0)
			tmp[k++] = g->nodes[i];
	list_out(tmp, k, nodes, NULL, num);
	free(tmp);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	LOCKED(get_nodes(hGraph, nodes, numNodes, false));
}

SG_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
	LOCKED(get_nodes(hGraph, rootNodes, numRootNodes, true));
}

static CUresult get_edges(CUgraph h, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *ed,
			  size_t *num)
{
	struct sg_graph *g = (struct sg_graph *)h;
	size_t k = 0, total = 0;

	if (!graph_ok(h) || num == NULL || (from == NULL) != (to == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < g->n; i++)
		total += g->nodes[i]->ndeps;
	if (from == NULL) {
		*num = total;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < g->n; i++) {
		struct sg_gnode *n = g->nodes[i];

		for (size_t d = 0; d < n->ndeps && k < *num; d++, k++) {
			from[k] = (CUgraphNode)n->deps[d];
			to[k] = (CUgraphNode)n;
			if (ed)
				memset(&ed[k], 0, sizeof(ed[k]));
		}
	}
	for (size_t i = k; i < *num; i++) {
		from[i] = to[i] = NULL;
		if (ed)
			memset(&ed[i], 0, sizeof(ed[i]));
	}
	*num = k;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
				   CUgraphEdgeData *edgeData, size_t *numEdges)
{
	LOCKED(get_edges(hGraph, from, to, edgeData, numEdges));
}

static CUresult node_deps(CUgraphNode h, CUgraphNode *arr, CUgraphEdgeData *ed, size_t *num,
			  bool outs)
{
	struct sg_gnode *n = (struct sg_gnode *)h;

	if (!node_ok(h) || num == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (outs)
		list_out(n->outs, n->nouts, arr, ed, num);
	else
		list_out(n->deps, n->ndeps, arr, ed, num);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
					      CUgraphEdgeData *edgeData, size_t *numDependencies)
{
	LOCKED(node_deps(hNode, dependencies, edgeData, numDependencies, false));
}

SG_EXPORT CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes,
						CUgraphEdgeData *edgeData,
						size_t *numDependentNodes)
{
	LOCKED(node_deps(hNode, dependentNodes, edgeData, numDependentNodes, true));
}

static CUresult edges_edit(CUgraph h, const CUgraphNode *from, const CUgraphNode *to,
			   const CUgraphEdgeData *ed, size_t num, bool add)
{
	struct sg_graph *g = (struct sg_graph *)h;
	CUresult r = CUDA_SUCCESS;

	if (!graph_ok(h) || (num && (from == NULL || to == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_default(ed, num))
		return CUDA_ERROR_NOT_SUPPORTED;
	for (size_t i = 0; i < num; i++) {
		struct sg_gnode *a = (struct sg_gnode *)from[i], *b = (struct sg_gnode *)to[i];

		if (!node_ok(from[i]) || !node_ok(to[i]) || a->graph != g || b->graph != g ||
		    a == b)
			return CUDA_ERROR_INVALID_VALUE;
		if (add && has(b->deps, b->ndeps, a))
			return CUDA_ERROR_INVALID_VALUE; /* CUDA refuses a duplicate edge */
		if (!add && !has(b->deps, b->ndeps, a))
			return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < num && r == CUDA_SUCCESS; i++) {
		struct sg_gnode *a = (struct sg_gnode *)from[i], *b = (struct sg_gnode *)to[i];

		if (add) {
			r = add_edge(a, b);
		} else {
			drop(b->deps, &b->ndeps, a);
			drop(a->outs, &a->nouts, b);
		}
	}
	return r;
}

SG_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
					  const CUgraphNode *to, const CUgraphEdgeData *edgeData,
					  size_t numDependencies)
{
	LOCKED(edges_edit(hGraph, from, to, edgeData, numDependencies, true));
}

SG_EXPORT CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
					     const CUgraphNode *to, const CUgraphEdgeData *edgeData,
					     size_t numDependencies)
{
	LOCKED(edges_edit(hGraph, from, to, edgeData, numDependencies, false));
}

static CUresult destroy_node(CUgraphNode h)
{
	struct sg_gnode *n = (struct sg_gnode *)h;

	if (!node_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	node_unlink(n);
	node_free(n);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
	LOCKED(destroy_node(hNode));
}

/* ---- executable graphs ---- */

static void exec_free(struct sg_gexec *x)
{
	if (x == NULL)
		return;
	graph_free(x->g);
	free(x->order);
	free(x);
}

static CUresult instantiate(CUgraphExec *out, CUgraph h, unsigned long long flags)
{
	struct sg_gexec *x;
	size_t cap = 0;
	CUresult r;

	if (out == NULL || !graph_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
					  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
					  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
					  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
		return CUDA_ERROR_NOT_SUPPORTED; /* no device-side graph launch */
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->flags = flags;
	x->g = graph_clone((struct sg_graph *)h, false);
	if (x->g == NULL) {
		free(x);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = topo(x->g, &x->order, &x->norder, &cap);
	if (r == CUDA_SUCCESS && sg_handle_add(x, SG_K_GEXEC))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r) {
		exec_free(x);
		return r;
	}
	*out = (CUgraphExec)x;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
					       unsigned long long flags)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	LOCKED(instantiate(phGraphExec, hGraph, flags));
}

static CUresult graph_upload(CUgraphExec hx, CUstream hs, bool pt);

static CUresult instantiate_params(CUgraphExec *out, CUgraph h, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
				   bool pt)
{
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	p->hErrNode_out = NULL;
	pthread_mutex_lock(&glock);
	r = instantiate(out, h, p->flags);
	pthread_mutex_unlock(&glock);
	p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
		r = graph_upload(*out, p->hUploadStream, pt);
	return r;
}

SG_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
						CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	CUresult r = sg_inited();

	return r ? r : instantiate_params(phGraphExec, hGraph, instantiateParams, false);
}

SG_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
						     CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
SG_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
						     CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	CUresult r = sg_inited();

	return r ? r : instantiate_params(phGraphExec, hGraph, instantiateParams, true);
}

static bool exec_ok(CUgraphExec h)
{
	return sg_handle_ok(h, SG_K_GEXEC);
}

static CUresult exec_flags(CUgraphExec h, cuuint64_t *flags)
{
	if (!exec_ok(h) || flags == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = ((struct sg_gexec *)h)->flags;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	LOCKED(exec_flags(hGraphExec, flags));
}

static CUresult exec_destroy(CUgraphExec h)
{
	if (!exec_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	sg_handle_del(h);
	exec_free((struct sg_gexec *)h);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	LOCKED(exec_destroy(hGraphExec));
}

/* The executable's own copy of a node of the graph it was made from (or of that graph's child). */
static CUresult exec_node(CUgraphExec hx, CUgraphNode hn, CUgraphNodeType t, struct sg_gnode **out)
{
	struct sg_gnode *n;

	if (!exec_ok(hx) || !node_ok(hn))
		return CUDA_ERROR_INVALID_VALUE;
	n = find_clone(((struct sg_gexec *)hx)->g, (struct sg_gnode *)hn);
	if (n == NULL || n->type != t)
		return CUDA_ERROR_INVALID_VALUE;
	*out = n;
	return CUDA_SUCCESS;
}

static CUresult xkernel(CUgraphExec hx, CUgraphNode hn, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = exec_node(hx, hn, CU_GRAPH_NODE_TYPE_KERNEL, &n);

	return r ? r : kernel_set(n, p);
}

SG_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	LOCKED(xkernel(hGraphExec, hNode, nodeParams));
}

static CUresult xmemcpy(CUgraphExec hx, CUgraphNode hn, const CUDA_MEMCPY3D *p, CUcontext c)
{
	struct sg_gnode *n;
	CUresult r = exec_node(hx, hn, CU_GRAPH_NODE_TYPE_MEMCPY, &n);

	return r ? r : memcpy_set(n, p, c);
}

SG_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	LOCKED(xmemcpy(hGraphExec, hNode, copyParams, ctx));
}

static CUresult xmemset(CUgraphExec hx, CUgraphNode hn, const CUDA_MEMSET_NODE_PARAMS *p,
			CUcontext c)
{
	struct sg_gnode *n;
	CUresult r = exec_node(hx, hn, CU_GRAPH_NODE_TYPE_MEMSET, &n);

	return r ? r : memset_set(n, p, c);
}

SG_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_MEMSET_NODE_PARAMS *memsetParams,
						  CUcontext ctx)
{
	LOCKED(xmemset(hGraphExec, hNode, memsetParams, ctx));
}

static CUresult xhost(CUgraphExec hx, CUgraphNode hn, const CUDA_HOST_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = exec_node(hx, hn, CU_GRAPH_NODE_TYPE_HOST, &n);

	return r ? r : host_set(n, p);
}

SG_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	LOCKED(xhost(hGraphExec, hNode, nodeParams));
}

static CUresult xevent(CUgraphExec hx, CUgraphNode hn, CUgraphNodeType t, CUevent e)
{
	struct sg_gnode *n;
	CUresult r = exec_node(hx, hn, t, &n);

	return r ? r : event_set(n, e);
}

SG_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
						      CUevent event)
{
	LOCKED(xevent(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event));
}

SG_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
						    CUevent event)
{
	LOCKED(xevent(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event));
}

static CUresult xenable(CUgraphExec hx, CUgraphNode hn, unsigned *get, unsigned set)
{
	struct sg_gnode *n;
	CUgraphNodeType t;

	if (!node_ok(hn))
		return CUDA_ERROR_INVALID_VALUE;
	t = ((struct sg_gnode *)hn)->type;
	if (t != CU_GRAPH_NODE_TYPE_KERNEL && t != CU_GRAPH_NODE_TYPE_MEMCPY &&
	    t != CU_GRAPH_NODE_TYPE_MEMSET)
		return CUDA_ERROR_INVALID_VALUE;
	if (exec_node(hx, hn, t, &n))
		return CUDA_ERROR_INVALID_VALUE;
	if (get) {
		*get = n->enabled;
		return CUDA_SUCCESS;
	}
	n->enabled = set != 0;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
					 unsigned int isEnabled)
{
	LOCKED(xenable(hGraphExec, hNode, NULL, isEnabled));
}

SG_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
					 unsigned int *isEnabled)
{
	if (isEnabled == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED(xenable(hGraphExec, hNode, isEnabled, 0));
}

/* Same shape: node i of a has node i's type and dependencies (by index) in b, recursively. */
static bool same_topology(const struct sg_graph *a, const struct sg_graph *b,
			  CUgraphExecUpdateResultInfo *info)
{
	if (a->n != b->n) {
		info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		return false;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct sg_gnode *x = a->nodes[i], *y = b->nodes[i];

		info->errorNode = (CUgraphNode)y;
		if (x->type != y->type) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
			return false;
		}
		if (x->ndeps != y->ndeps) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
			return false;
		}
		for (size_t d = 0; d < y->ndeps; d++) {
			size_t k = index_of(b, y->deps[d]);

			if (!has(x->deps, x->ndeps, a->nodes[k])) {
				info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
				info->errorFromNode = (CUgraphNode)y->deps[d];
				return false;
			}
		}
		if (x->child && !same_topology(x->child, y->child, info))
			return false;
	}
	return true;
}

static CUresult update_params(struct sg_graph *a, const struct sg_graph *b)
{
	CUresult r = CUDA_SUCCESS;

	for (size_t i = 0; i < a->n && r == CUDA_SUCCESS; i++) {
		struct sg_gnode *x = a->nodes[i];
		const struct sg_gnode *y = b->nodes[i];

		if (x->child) {
			r = update_params(x->child, y->child);
		} else {
			r = node_copy_params(x, y, false);
			x->enabled = true;
		}
		/* x->orig stays: SetParams names nodes of the graph it was instantiated from */
	}
	return r;
}

static CUresult exec_update(CUgraphExec hx, CUgraph h, CUgraphExecUpdateResultInfo *info)
{
	struct sg_gexec *x = (struct sg_gexec *)hx;
	CUgraphExecUpdateResultInfo tmp;
	size_t cap = 0, n = 0;
	struct sg_gnode **order = NULL;
	CUresult r;

	if (info == NULL)
		info = &tmp;
	memset(info, 0, sizeof(*info));
	if (!exec_ok(hx) || !graph_ok(h)) {
		info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!same_topology(x->g, (struct sg_graph *)h, info))
		return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	info->errorNode = NULL;
	r = update_params(x->g, (struct sg_graph *)h);
	if (r == CUDA_SUCCESS)
		r = topo(x->g, &order, &n, &cap);
	if (r) {
		free(order);
		info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
		return r;
	}
	free(x->order);
	x->order = order;
	x->norder = n;
	info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
				     CUgraphExecUpdateResultInfo *resultInfo)
{
	LOCKED(exec_update(hGraphExec, hGraph, resultInfo));
}

/* ---- launching ---- */

static CUresult capture_add_child(struct sg_stream *s, struct sg_gexec *x);

/* The ops one launch of x queues, in its order (NULL entries for nodes that do nothing). */
static CUresult launch_ops(struct sg_gexec *x, struct sg_op ***out, size_t *nops)
{
	struct sg_op **ops = calloc(x->norder ? x->norder : 1, sizeof(*ops));
	size_t k = 0;

	if (ops == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < x->norder; i++) {
		struct sg_gnode *n = x->order[i];
		struct sg_op *op = NULL;

		if (!n->enabled)
			continue;
		switch (n->type) {
		case CU_GRAPH_NODE_TYPE_KERNEL:
			if ((op = sg_op_new(SG_OP_LAUNCH)) && !(op->u.launch = sg_launch_dup(n->launch))) {
				sg_op_free(op);
				op = NULL;
			}
			break;
		case CU_GRAPH_NODE_TYPE_MEMCPY:
			if (n->copy.width == 0)
				continue;
			if ((op = sg_op_new(SG_OP_COPY)))
				op->u.copy = n->copy;
			break;
		case CU_GRAPH_NODE_TYPE_MEMSET:
			if (n->set.dst == NULL)
				continue;
			if ((op = sg_op_new(SG_OP_SET)))
				op->u.set = n->set;
			break;
		case CU_GRAPH_NODE_TYPE_HOST:
			if ((op = sg_op_new(SG_OP_HOSTFN))) {
				op->u.host.fn = n->host.fn;
				op->u.host.data = n->host.userData;
			}
			break;
		case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
			if (!sg_handle_ok(n->event, SG_K_EVENT)) {
				for (size_t j = 0; j < k; j++)
					sg_op_free(ops[j]);
				free(ops);
				return CUDA_ERROR_INVALID_HANDLE; /* destroyed since */
			}
			op = sg_event_op_new(n->event, n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
							       ? SG_OP_RECORD
							       : SG_OP_WAIT);
			break;
		default:
			continue; /* empty */
		}
		if (op == NULL) {
			for (size_t j = 0; j < k; j++)
				sg_op_free(ops[j]);
			free(ops);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		ops[k++] = op;
	}
	*out = ops;
	*nops = k;
	return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec hx, CUstream hs, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	struct sg_op **ops = NULL;
	size_t n = 0;
	CUresult r = sg_stream_resolve(hs, pt, &c, &s);

	if (r)
		return r;
	if ((r = (CUresult)__atomic_load_n(&c->sticky, __ATOMIC_ACQUIRE)))
		return r;
	pthread_mutex_lock(&glock);
	if (!exec_ok(hx))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (s->cap)
		r = capture_add_child(s, (struct sg_gexec *)hx);
	else
		r = launch_ops((struct sg_gexec *)hx, &ops, &n);
	pthread_mutex_unlock(&glock);
	if (r || ops == NULL)
		return r;
	r = sg_stream_submit_list(s, ops, n);
	free(ops);
	return r;
}

SG_EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, false);
}

/* Everything is ready at instantiation: an upload only checks its arguments. */
static CUresult graph_upload(CUgraphExec hx, CUstream hs, bool pt)
{
	struct sg_ctx *c;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hs, pt, &c, &s);

	if (r)
		return r;
	return exec_ok(hx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_upload(hGraphExec, hStream, false);
}

/* ---- debug output ---- */

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

static void dot_graph(FILE *f, const struct sg_graph *g, const char *prefix)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct sg_gnode *n = g->nodes[i];

		if (n->child) {
			char sub[64];

			snprintf(sub, sizeof(sub), "%s%zu_", prefix, i);
			fprintf(f, "subgraph cluster_%s%zu {\nlabel=\"graph %zu\";\n", prefix, i, i);
			dot_graph(f, n->child, sub);
			fprintf(f, "}\n");
		}
		fprintf(f, "\"%s%zu\" [label=\"%zu: %s\"];\n", prefix, i, i, type_name(n->type));
		for (size_t d = 0; d < n->ndeps; d++)
			fprintf(f, "\"%s%zu\" -> \"%s%zu\";\n", prefix, index_of(g, n->deps[d]),
				prefix, i);
	}
}

static CUresult dot_print(CUgraph h, const char *path)
{
	FILE *f;

	if (!graph_ok(h) || path == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	f = fopen(path, "w");
	if (f == NULL)
		return CUDA_ERROR_OPERATING_SYSTEM;
	fprintf(f, "digraph softgpu {\n");
	dot_graph(f, (struct sg_graph *)h, "n");
	fprintf(f, "}\n");
	return fclose(f) ? CUDA_ERROR_OPERATING_SYSTEM : CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags)
{
	(void)flags;
	LOCKED(dot_print(hGraph, path));
}

/* ---- stream capture ---- */

static struct sg_capture *capture_by_id(uint64_t id)
{
	for (struct sg_capture *c = captures; c && id; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static CUresult set_frontier(struct sg_stream *s, struct sg_gnode *const *deps, size_t n)
{
	s->ncdeps = 0;
	for (size_t i = 0; i < n; i++)
		if (!has(s->cdeps, s->ncdeps, deps[i]) &&
		    !push(&s->cdeps, &s->ncdeps, &s->cdeps_cap, deps[i]))
			return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* A node of s's capture after s's frontier, which becomes that node. */
static CUresult capture_node(struct sg_stream *s, CUgraphNodeType type, struct sg_gnode **out)
{
	struct sg_gnode *n;
	CUresult r = node_new(s->cap->g, type, s->cdeps, s->ncdeps, &n);

	if (r)
		return r;
	n->ctx = s->ctx;
	r = set_frontier(s, &n, 1);
	if (r)
		return r;
	*out = n;
	return CUDA_SUCCESS;
}

static void invalidate(struct sg_capture *c)
{
	if (c)
		c->invalid = true;
}

static CUresult capture_add_child(struct sg_stream *s, struct sg_gexec *x)
{
	struct sg_gnode *n;
	struct sg_graph *child;
	CUresult r;

	if (s->cap->invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	child = graph_clone(x->g, true);
	if (child == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = capture_node(s, CU_GRAPH_NODE_TYPE_GRAPH, &n);
	if (r) {
		graph_free(child);
		return r;
	}
	n->child = child;
	return CUDA_SUCCESS;
}

/* The capture that blocks legacy-stream work of ctx (a blocking stream of ctx capturing). */
static struct sg_capture *blocking_capture(struct sg_ctx *ctx)
{
	for (struct sg_capture *c = captures; c; c = c->next)
		for (size_t i = 0; i < c->nmembers; i++)
			if (c->members[i]->ctx == ctx &&
			    !(c->members[i]->flags & CU_STREAM_NON_BLOCKING))
				return c;
	return NULL;
}

int sg_capture_op(struct sg_stream *s, struct sg_op *op, bool sync)
{
	struct sg_gnode *n;
	struct sg_capture *c;
	int r = SG_NOT_CAPTURED;

	pthread_mutex_lock(&glock);
	if (s->cap == NULL) {
		if (s->is_null && (c = blocking_capture(s->ctx))) {
			/* the legacy stream would join a capturing stream: CUDA refuses */
			invalidate(c);
			r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		}
		goto out;
	}
	if (op == NULL) {
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	if (s->cap->invalid) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		goto out;
	}
	if (sync || op->kind == SG_OP_CALLBACK) {
		invalidate(s->cap);
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	switch (op->kind) {
	case SG_OP_LAUNCH:
		r = capture_node(s, CU_GRAPH_NODE_TYPE_KERNEL, &n);
		if (r == CUDA_SUCCESS) {
			n->launch = op->u.launch;
			n->ctx = op->u.launch->ctx;
			op->u.launch = NULL;
			r = kernel_params(n);
		}
		break;
	case SG_OP_COPY:
		r = capture_node(s, CU_GRAPH_NODE_TYPE_MEMCPY, &n);
		if (r == CUDA_SUCCESS)
			n->copy = op->u.copy;
		break;
	case SG_OP_SET:
		r = capture_node(s, CU_GRAPH_NODE_TYPE_MEMSET, &n);
		if (r == CUDA_SUCCESS)
			n->set = op->u.set;
		break;
	case SG_OP_HOSTFN:
		r = capture_node(s, CU_GRAPH_NODE_TYPE_HOST, &n);
		if (r == CUDA_SUCCESS)
			n->host = (CUDA_HOST_NODE_PARAMS){op->u.host.fn, op->u.host.data};
		break;
	default: /* event records and waits are captured by sg_capture_event */
		r = CUDA_SUCCESS; /* nothing to do */
		break;
	}
	if (r)
		invalidate(s->cap);
out:
	pthread_mutex_unlock(&glock);
	if (r != SG_NOT_CAPTURED) {
		if (op && op->kind == SG_OP_LAUNCH && op->u.launch == NULL)
			op->kind = SG_OP_NOP;
		sg_op_free(op);
	}
	return r;
}

static CUresult join(struct sg_capture *c, struct sg_stream *s)
{
	struct sg_stream **m = realloc(c->members, (c->nmembers + 1) * sizeof(*m));

	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->members = m;
	m[c->nmembers++] = s;
	s->cap = c;
	s->ncdeps = 0;
	return CUDA_SUCCESS;
}

int sg_capture_event(struct sg_stream *s, struct sg_event *e, int kind, unsigned flags)
{
	struct sg_capture *ec;
	int r = SG_NOT_CAPTURED;

	pthread_mutex_lock(&glock);
	ec = capture_by_id(e->cap_id);
	if (s->cap == NULL && s->is_null && blocking_capture(s->ctx)) {
		invalidate(blocking_capture(s->ctx));
		r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		goto out;
	}
	if (s->cap && !s->cap->invalid &&
	    (flags & (CU_EVENT_RECORD_EXTERNAL | CU_EVENT_WAIT_EXTERNAL))) {
		/* an event record or wait node (the two flags share a bit per call) */
		struct sg_gnode *n;

		r = capture_node(s, kind == SG_OP_RECORD ? CU_GRAPH_NODE_TYPE_EVENT_RECORD
							 : CU_GRAPH_NODE_TYPE_WAIT_EVENT,
				 &n);
		if (r == CUDA_SUCCESS)
			n->event = e;
		else
			invalidate(s->cap);
		goto out;
	}
	if (kind == SG_OP_RECORD) {
		if (s->cap == NULL) {
			e->cap_id = 0; /* recorded outside any capture again */
			goto out;
		}
		if (s->cap->invalid) {
			r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
			goto out;
		}
		/* remembers the frontier, for streams that wait for it */
		free(e->cdeps);
		e->ncdeps = 0;
		e->cdeps = malloc((s->ncdeps ? s->ncdeps : 1) * sizeof(*e->cdeps));
		if (e->cdeps == NULL) {
			invalidate(s->cap);
			r = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		memcpy(e->cdeps, s->cdeps, s->ncdeps * sizeof(*e->cdeps));
		e->ncdeps = s->ncdeps;
		e->cap_id = s->cap->id;
		r = CUDA_SUCCESS;
		goto out;
	}
	if (ec == NULL) {
		if (s->cap == NULL)
			goto out; /* an ordinary wait */
		invalidate(s->cap);
		r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		goto out;
	}
	if (s->cap && s->cap != ec) {
		invalidate(s->cap);
		invalidate(ec);
		r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		goto out;
	}
	if (ec->invalid) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		goto out;
	}
	r = CUDA_SUCCESS;
	if (s->cap == NULL)
		r = join(ec, s); /* fork: s captures into ec from the event's frontier */
	for (size_t i = 0; i < e->ncdeps && r == CUDA_SUCCESS; i++)
		if (!has(s->cdeps, s->ncdeps, e->cdeps[i]) &&
		    !push(&s->cdeps, &s->ncdeps, &s->cdeps_cap, e->cdeps[i]))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r)
		invalidate(ec);
out:
	pthread_mutex_unlock(&glock);
	return r;
}

bool sg_stream_capturing(struct sg_stream *s)
{
	bool c;

	if (!__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&glock);
	c = s->cap != NULL;
	pthread_mutex_unlock(&glock);
	return c;
}

CUresult sg_capture_unsafe(void)
{
	int others;

	if (!__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE) ||
	    tl_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	if (tl_captures > 0)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&glock);
	others = global_captures - tl_global_captures;
	pthread_mutex_unlock(&glock);
	if (tl_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && others > 0)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return CUDA_SUCCESS;
}

static void leave(struct sg_stream *s)
{
	struct sg_capture *c = s->cap;

	for (size_t i = 0; c && i < c->nmembers; i++) {
		if (c->members[i] == s) {
			memmove(c->members + i, c->members + i + 1,
				(c->nmembers - i - 1) * sizeof(*c->members));
			c->nmembers--;
			break;
		}
	}
	s->cap = NULL;
	s->ncdeps = 0;
}

static void capture_remove(struct sg_capture *c);

CUresult sg_capture_stream_sync(struct sg_stream *s, bool destroying)
{
	CUresult r = CUDA_SUCCESS;
	struct sg_capture *c;

	pthread_mutex_lock(&glock);
	if (s->cap) {
		c = s->cap;
		invalidate(c);
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		if (destroying) {
			/* the stream goes: it leaves; without its origin nobody can end the
			 * capture, so it ends here once no stream takes part any more */
			leave(s);
			if (c->origin == s)
				c->origin = NULL;
			if (c->origin == NULL && c->nmembers == 0)
				capture_remove(c);
		}
	} else if (s->is_null && (c = blocking_capture(s->ctx))) {
		invalidate(c);
		r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	}
	pthread_mutex_unlock(&glock);
	return r;
}

static CUresult begin_capture(CUstream hs, CUgraph into, const CUgraphNode *deps, size_t ndeps,
			      CUstreamCaptureMode mode, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_capture *c;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if (s->is_null)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot capture */
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&glock);
	if (s->cap) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else if (into) {
		if (!graph_ok(into))
			r = CUDA_ERROR_INVALID_VALUE;
		for (size_t i = 0; i < ndeps && r == CUDA_SUCCESS; i++)
			if (!node_ok(deps[i]) ||
			    ((struct sg_gnode *)deps[i])->graph != (struct sg_graph *)into)
				r = CUDA_ERROR_INVALID_VALUE;
		c->g = (struct sg_graph *)into;
	} else if ((c->g = graph_new(true)) == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		c->own_graph = true;
	}
	if (r == CUDA_SUCCESS && (r = join(c, s)) == CUDA_SUCCESS)
		r = set_frontier(s, (struct sg_gnode *const *)deps, into ? ndeps : 0);
	if (r) {
		if (s->cap == c)
			leave(s);
		if (c->own_graph)
			graph_free(c->g);
		free(c->members);
		free(c);
		pthread_mutex_unlock(&glock);
		return r;
	}
	c->origin = s;
	c->mode = mode;
	c->id = next_capture_id++;
	c->thread = pthread_self();
	c->next = captures;
	captures = c;
	if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		tl_captures++;
	if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
		global_captures++;
		tl_global_captures++;
	}
	__atomic_add_fetch(&sg_captures_active, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&glock);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, NULL, NULL, 0, mode, false);
}

SG_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
					       const CUgraphNode *dependencies,
					       const CUgraphEdgeData *dependencyData,
					       size_t numDependencies, CUstreamCaptureMode mode)
{
	if (hGraph == NULL || (numDependencies && dependencies == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_default(dependencyData, numDependencies))
		return CUDA_ERROR_NOT_SUPPORTED;
	return begin_capture(hStream, hGraph, dependencies, numDependencies, mode, false);
}

/* Undoes a capture's counts (the thread-local ones only on the thread that began it). */
static void uncount(struct sg_capture *c)
{
	bool mine = pthread_equal(c->thread, pthread_self());

	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && mine)
		tl_captures--;
	if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
		global_captures--;
		if (mine)
			tl_global_captures--;
	}
	__atomic_sub_fetch(&sg_captures_active, 1, __ATOMIC_RELEASE);
}

/* Ends a capture nobody can end any more (glock held): its graph goes with it. */
static void capture_remove(struct sg_capture *c)
{
	for (struct sg_capture **pp = &captures; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	uncount(c);
	if (c->own_graph)
		graph_free(c->g);
	free(c->members);
	free(c);
}

static CUresult end_capture(CUstream hs, CUgraph *out, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_capture *c, **pp;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&glock);
	c = s->cap;
	if (c == NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	if (c->origin != s) {
		invalidate(c);
		r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
		goto out;
	}
	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self())) {
		r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
		goto out;
	}
	/* every stream leaves; one that never joined back leaves the capture unjoined */
	while (c->nmembers)
		leave(c->members[c->nmembers - 1]);
	for (pp = &captures; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	uncount(c);
	if (c->invalid) {
		if (c->own_graph)
			graph_free(c->g);
		*out = NULL;
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		*out = (CUgraph)c->g;
	}
	free(c->members);
	free(c);
out:
	pthread_mutex_unlock(&glock);
	return r;
}

SG_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, false);
}

static CUresult is_capturing(CUstream hs, CUstreamCaptureStatus *st, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&glock);
	if (s->cap)
		*st = s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
				      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	else if (s->is_null && blocking_capture(ctx))
		r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	else
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&glock);
	return r;
}

SG_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, captureStatus, false);
}

static CUresult capture_info(CUstream hs, CUstreamCaptureStatus *st, cuuint64_t *id,
			     CUgraph *graph, const CUgraphNode **deps,
			     const CUgraphEdgeData **edges, size_t *ndeps, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&glock);
	if (s->cap == NULL) {
		if (s->is_null && blocking_capture(ctx))
			r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
		goto out;
	}
	*st = s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
			      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	if (id)
		*id = s->cap->id;
	if (graph)
		*graph = (CUgraph)s->cap->g;
	if (deps)
		*deps = (const CUgraphNode *)s->cdeps;
	if (edges)
		*edges = NULL; /* every edge is a default one */
	if (ndeps)
		*ndeps = s->ncdeps;
out:
	pthread_mutex_unlock(&glock);
	return r;
}

SG_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					  cuuint64_t *id_out, CUgraph *graph_out,
					  const CUgraphNode **dependencies_out,
					  const CUgraphEdgeData **edgeData_out,
					  size_t *numDependencies_out)
{
	return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
			    edgeData_out, numDependencies_out, false);
}

SG_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
					     CUstreamCaptureStatus *captureStatus_out,
					     cuuint64_t *id_out, CUgraph *graph_out,
					     const CUgraphNode **dependencies_out,
					     size_t *numDependencies_out);
SG_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
					     CUstreamCaptureStatus *captureStatus_out,
					     cuuint64_t *id_out, CUgraph *graph_out,
					     const CUgraphNode **dependencies_out,
					     size_t *numDependencies_out)
{
	return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
			    numDependencies_out, false);
}

static CUresult update_deps(CUstream hs, CUgraphNode *deps, const CUgraphEdgeData *ed, size_t n,
			    unsigned flags, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if ((n && deps == NULL) || (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
				    flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_default(ed, n))
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&glock);
	if (s->cap == NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!node_ok(deps[i]) || ((struct sg_gnode *)deps[i])->graph != s->cap->g) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		s->ncdeps = 0;
	for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
		if (!has(s->cdeps, s->ncdeps, (struct sg_gnode *)deps[i]) &&
		    !push(&s->cdeps, &s->ncdeps, &s->cdeps_cap, (struct sg_gnode *)deps[i]))
			r = CUDA_ERROR_OUT_OF_MEMORY;
out:
	pthread_mutex_unlock(&glock);
	return r;
}

SG_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
						     const CUgraphEdgeData *dependencyData,
						     size_t numDependencies, unsigned int flags)
{
	return update_deps(hStream, dependencies, dependencyData, numDependencies, flags, false);
}

SG_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode m;

	if (mode == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	m = *mode;
	if (m != CU_STREAM_CAPTURE_MODE_GLOBAL && m != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    m != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = tl_mode;
	tl_mode = m;
	return CUDA_SUCCESS;
}

/* ---- the older entry points (pre-12.3 edges, v1 kernel parameters) ---- */

static CUDA_KERNEL_NODE_PARAMS kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return (CUDA_KERNEL_NODE_PARAMS){p->func,	    p->gridDimX,  p->gridDimY,
					 p->gridDimZ,	    p->blockDimX, p->blockDimY,
					 p->blockDimZ,	    p->sharedMemBytes, p->kernelParams,
					 p->extra,	    NULL,	  NULL};
}

SG_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	k = kernel_v2(nodeParams);
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &k);
}

SG_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
					      CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;
	CUresult r;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuGraphKernelNodeGetParams_v2(hNode, &k);
	if (r)
		return r;
	if (k.func == NULL)
		return CUDA_ERROR_NOT_SUPPORTED; /* a library kernel: v1 has no field for it */
	memcpy(nodeParams, &k, sizeof(*nodeParams));
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
					      const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	k = kernel_v2(nodeParams);
	return cuGraphKernelNodeSetParams_v2(hNode, &k);
}

SG_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						  const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS k;

	if (nodeParams == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	k = kernel_v2(nodeParams);
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &k);
}

SG_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
				     CUgraphNode *hErrorNode_out,
				     CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResultInfo info;
	CUresult r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);

	if (hErrorNode_out)
		*hErrorNode_out = info.errorNode;
	if (updateResult_out)
		*updateResult_out = info.result;
	return r;
}

SG_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
				   size_t *numEdges)
{
	return cuGraphGetEdges_v2(hGraph, from, to, NULL, numEdges);
}

SG_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
					      size_t *numDependencies)
{
	return cuGraphNodeGetDependencies_v2(hNode, dependencies, NULL, numDependencies);
}

SG_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
						size_t *numDependentNodes)
{
	return cuGraphNodeGetDependentNodes_v2(hNode, dependentNodes, NULL, numDependentNodes);
}

SG_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
					  const CUgraphNode *to, size_t numDependencies)
{
	return cuGraphAddDependencies_v2(hGraph, from, to, NULL, numDependencies);
}

SG_EXPORT CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
					     const CUgraphNode *to, size_t numDependencies)
{
	return cuGraphRemoveDependencies_v2(hGraph, from, to, NULL, numDependencies);
}

SG_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				  const CUgraphNode *dependencies, size_t numDependencies,
				  CUgraphNodeParams *nodeParams)
{
	return cuGraphAddNode_v2(phGraphNode, hGraph, dependencies, NULL, numDependencies,
				 nodeParams);
}

SG_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					  cuuint64_t *id_out)
{
	return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL, false);
}

/* ---- per-thread default stream variants ---- */

#define PTSZ(ret, name, params)    \
	SG_EXPORT ret name params; \
	SG_EXPORT ret name params

PTSZ(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode))
{
	return begin_capture(hStream, NULL, NULL, 0, mode, true);
}

PTSZ(CUresult, cuStreamBeginCaptureToGraph_ptsz,
     (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
      const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode))
{
	if (hGraph == NULL || (numDependencies && dependencies == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_default(dependencyData, numDependencies))
		return CUDA_ERROR_NOT_SUPPORTED;
	return begin_capture(hStream, hGraph, dependencies, numDependencies, mode, true);
}

PTSZ(CUresult, cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph))
{
	return end_capture(hStream, phGraph, true);
}

PTSZ(CUresult, cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus))
{
	return is_capturing(hStream, captureStatus, true);
}

PTSZ(CUresult, cuStreamGetCaptureInfo_v3_ptsz,
     (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
      CUgraph *graph_out, const CUgraphNode **dependencies_out,
      const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out))
{
	return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
			    edgeData_out, numDependencies_out, true);
}

PTSZ(CUresult, cuStreamGetCaptureInfo_v2_ptsz,
     (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
      CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out))
{
	return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
			    numDependencies_out, true);
}

PTSZ(CUresult, cuStreamUpdateCaptureDependencies_v2_ptsz,
     (CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
      size_t numDependencies, unsigned int flags))
{
	return update_deps(hStream, dependencies, dependencyData, numDependencies, flags, true);
}

PTSZ(CUresult, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
{
	return graph_launch(hGraphExec, hStream, true);
}

PTSZ(CUresult, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
{
	return graph_upload(hGraphExec, hStream, true);
}
