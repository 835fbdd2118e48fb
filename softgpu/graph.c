/* graph.c -- CUDA graphs: nodes (memory and conditional ones too), edges, clone, instantiate,
 * launch, exec update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

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
 * running them in a topological order honours every edge. Launches of one
 * executable are also ordered with each other, whatever their streams, as
 * cuGraphLaunch documents: each launch's first op waits until the previous
 * launch's last op ran (the executable's launch counters). Exec update and the
 * exec SetParams calls rewrite the executable's own nodes.
 *
 * Memory nodes: an allocation node holds its memory (mempool.c's struct sg_gmem, shared
 * with its copies in executables); at a launch it becomes an op that maps the memory, a
 * free node one that unmaps it. Conditional nodes: the handle is a registered struct
 * sg_gcond whose value kernels set (cudaGraphSetConditional, a builtin); the node is one
 * op that, when the stream reaches it, reads the value and runs the chosen body's ops there
 * and then (sg_stream_run_now), again while a WHILE's value holds. Such ops keep only
 * the executable's private graph (struct sg_xgraph) alive until they are done, and the op
 * applying the handles' defaults only the handles: the executable itself goes, with its
 * claim on its allocation nodes' memory, when it is destroyed.
 *
 * Stream capture is capture.c; it builds graphs with the functions of graph_int.h.
 *
 * Locking: one mutex (sg_glock) guards every graph, exec, capture and the capture
 * fields of streams and events. It is taken before stream.c's qlock and never
 * held while a stream op runs; ops are queued after it is released.
 */

int sg_captures_active;
pthread_mutex_t sg_glock = PTHREAD_MUTEX_INITIALIZER;

/* ---- nodes and edges ---- */

bool sg_gnodes_push(struct sg_gnode ***arr, size_t *n, size_t *cap, struct sg_gnode *x)
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

bool sg_gnodes_has(struct sg_gnode *const *arr, size_t n, const struct sg_gnode *x)
{
	for (size_t i = 0; i < n; i++)
		if (arr[i] == x)
			return true;
	return false;
}

static CUresult add_edge(struct sg_gnode *from, struct sg_gnode *to)
{
	if (sg_gnodes_has(to->deps, to->ndeps, from))
		return CUDA_SUCCESS;
	if (!sg_gnodes_push(&to->deps, &to->ndeps, &to->capdeps, from))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!sg_gnodes_push(&from->outs, &from->nouts, &from->capouts, to)) {
		to->ndeps--;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

struct sg_graph *sg_graph_new(bool visible)
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

void sg_graph_free(struct sg_graph *g);

/* ---- conditional handles ---- */

/*
 * A kernel sets a handle's value (sg_graph_set_conditional, from a block's thread) while the
 * API may drop the handle's last reference (cuGraphDestroy, cuGraphExecDestroy): cond_lock,
 * read-held by a setter from its handle check through its store and write-held by the last
 * release from the decrement through the handle's removal, keeps a setter off freed memory.
 * A setter coming after the removal finds no handle (the kernel faults, as CUDA's
 * undefined use of a destroyed handle may). References are taken atomically by holders that
 * have one already (or under sg_glock), so only the last one needs the lock.
 */
static pthread_rwlock_t cond_lock = PTHREAD_RWLOCK_INITIALIZER;

static void cond_unref(struct sg_gcond *c)
{
	bool last;

	if (c == NULL)
		return;
	pthread_rwlock_wrlock(&cond_lock);
	last = __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0;
	if (last)
		sg_handle_del(c);
	pthread_rwlock_unlock(&cond_lock);
	if (last)
		free(c);
}

static bool conds_push(struct sg_gcond ***arr, size_t *n, size_t *cap, struct sg_gcond *c)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == c)
			return true;
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		struct sg_gcond **a = realloc(*arr, nc * sizeof(*a));

		if (a == NULL)
			return false;
		*arr = a;
		*cap = nc;
	}
	(*arr)[(*n)++] = c;
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	return true;
}

int sg_graph_set_conditional(uint64_t handle, uint32_t value)
{
	struct sg_gcond *c = (struct sg_gcond *)(uintptr_t)handle;
	int r = -1;

	pthread_rwlock_rdlock(&cond_lock);
	if (sg_handle_ok(c, SG_K_GCOND)) {
		__atomic_store_n(&c->value, value, __ATOMIC_RELEASE);
		r = 0;
	}
	pthread_rwlock_unlock(&cond_lock);
	return r;
}

static void node_free(struct sg_gnode *n)
{
	if (n == NULL)
		return;
	if (n->graph && n->graph->visible)
		sg_handle_del(n);
	sg_launch_free(n->launch);
	free(n->kparams);
	sg_graph_free(n->child);
	sg_gmem_unref(n->gmem);
	free(n->acc);
	cond_unref(n->cond);
	for (unsigned i = 0; i < n->nbodies; i++) {
		sg_graph_free(n->bodies[i].g);
		free(n->bodies[i].order);
	}
	free(n->bodies);
	free(n->bodies_out);
	free(n->deps);
	free(n->outs);
	free(n);
}

void sg_graph_free(struct sg_graph *g)
{
	if (g == NULL)
		return;
	if (g->visible)
		sg_handle_del(g);
	for (size_t i = 0; i < g->n; i++)
		node_free(g->nodes[i]);
	for (size_t i = 0; i < g->nconds; i++)
		cond_unref(g->conds[i]);
	free(g->conds);
	free(g->nodes);
	free(g);
}

/* kernelParams for GetParams: pointers at each parameter in the template's buffer. */
CUresult sg_gnode_kernel_params(struct sg_gnode *n)
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
CUresult sg_gnode_new(struct sg_graph *g, CUgraphNodeType type, struct sg_gnode *const *deps,
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
	if (r == CUDA_SUCCESS && !sg_gnodes_push(&g->nodes, &g->n, &g->cap, n)) {
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

struct sg_graph *sg_graph_clone(const struct sg_graph *src, bool visible);

/* A conditional node's handle and bodies, from src into n (which has none). */
static CUresult cond_copy(struct sg_gnode *n, const struct sg_gnode *src, bool visible)
{
	n->cond = src->cond;
	__atomic_add_fetch(&n->cond->refs, 1, __ATOMIC_ACQ_REL);
	n->ctype = src->ctype;
	n->bodies = calloc(src->nbodies, sizeof(*n->bodies));
	n->bodies_out = calloc(src->nbodies, sizeof(*n->bodies_out));
	if (n->bodies == NULL || n->bodies_out == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (unsigned i = 0; i < src->nbodies; i++) {
		n->bodies[i].g = sg_graph_clone(src->bodies[i].g, visible);
		if (n->bodies[i].g == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->bodies[i].g->is_body = true;
		n->bodies_out[i] = (CUgraph)n->bodies[i].g;
		n->nbodies = i + 1;
	}
	return CUDA_SUCCESS;
}

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
		r = sg_gnode_kernel_params(n);
	}
	if (r == CUDA_SUCCESS && src->child) {
		struct sg_graph *c = sg_graph_clone(src->child, visible);

		if (c == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		sg_graph_free(n->child);
		n->child = c;
	}
	if (r == CUDA_SUCCESS && src->gmem != n->gmem) {
		sg_gmem_unref(n->gmem);
		n->gmem = src->gmem;
		if (n->gmem)
			sg_gmem_ref(n->gmem);
	}
	n->palloc = src->palloc;
	if (r == CUDA_SUCCESS && src->acc && n->acc == NULL) {
		n->acc = malloc(src->palloc.accessDescCount * sizeof(*n->acc));
		if (n->acc == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memcpy(n->acc, src->acc, src->palloc.accessDescCount * sizeof(*n->acc));
	}
	n->palloc.accessDescs = n->acc;
	if (r == CUDA_SUCCESS && src->cond && n->cond == NULL)
		r = cond_copy(n, src, visible);
	return r;
}

struct sg_graph *sg_graph_clone(const struct sg_graph *src, bool visible)
{
	struct sg_graph *g = sg_graph_new(visible);

	if (g == NULL)
		return NULL;
	for (size_t i = 0; i < src->n; i++) {
		const struct sg_gnode *s = src->nodes[i];
		struct sg_gnode *n;

		if (sg_gnode_new(g, s->type, NULL, 0, &n) || node_copy_params(n, s, visible))
			goto fail;
		n->orig = s;
	}
	for (size_t i = 0; i < src->nconds; i++)
		if (!conds_push(&g->conds, &g->nconds, &g->capconds, src->conds[i]))
			goto fail;
	for (size_t i = 0; i < src->n; i++) {
		const struct sg_gnode *s = src->nodes[i];

		for (size_t d = 0; d < s->ndeps; d++)
			if (add_edge(g->nodes[index_of(src, s->deps[d])], g->nodes[i]))
				goto fail;
	}
	return g;
fail:
	sg_graph_free(g);
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
		else if (!sg_gnodes_push(order, n, cap, x))
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

#define LOCKED(expr)                             \
	do {                                     \
		CUresult r_;                     \
		pthread_mutex_lock(&sg_glock);   \
		r_ = (expr);                     \
		pthread_mutex_unlock(&sg_glock); \
		return r_;                       \
	} while (0)

bool sg_graph_ok(CUgraph h)
{
	return sg_handle_ok(h, SG_K_GRAPH);
}

bool sg_gnode_ok(CUgraphNode h)
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
	pthread_mutex_lock(&sg_glock);
	g = sg_graph_new(true);
	pthread_mutex_unlock(&sg_glock);
	if (g == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phGraph = (CUgraph)g;
	return CUDA_SUCCESS;
}

/* Whether a capture in progress builds g or a conditional body inside it. */
static bool graph_captured(const struct sg_graph *g)
{
	if (sg_capture_uses_graph(g))
		return true;
	for (size_t i = 0; i < g->n; i++)
		for (unsigned b = 0; b < g->nodes[i]->nbodies; b++)
			if (graph_captured(g->nodes[i]->bodies[b].g))
				return true;
	return false;
}

static CUresult graph_destroy(CUgraph h)
{
	if (!sg_graph_ok(h) || ((struct sg_graph *)h)->is_body)
		return CUDA_ERROR_INVALID_VALUE; /* a body goes with its conditional node */
	if (graph_captured((struct sg_graph *)h))
		return CUDA_ERROR_ILLEGAL_STATE; /* still being captured into */
	sg_graph_free((struct sg_graph *)h);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
	LOCKED(graph_destroy(hGraph));
}

static bool has_mem_nodes(const struct sg_graph *g);

static CUresult graph_clone_api(CUgraph *out, CUgraph h)
{
	struct sg_graph *g;

	if (out == NULL || !sg_graph_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	if (has_mem_nodes((struct sg_graph *)h))
		return CUDA_ERROR_NOT_SUPPORTED; /* CUDA does not clone graphs with memory nodes */
	g = sg_graph_clone((struct sg_graph *)h, true);
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

	if (out == NULL || !sg_gnode_ok(orig) || !sg_graph_ok(clone))
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
	return sg_gnode_kernel_params(n);
}

static CUresult memcpy_set(struct sg_gnode *n, const CUDA_MEMCPY3D *p, CUcontext hctx)
{
	struct sg_ctx *ctx;
	struct sg_copy c;
	bool sh, dh;
	CUresult r = node_ctx(hctx, &ctx);

	if (r)
		return r;
	sg_gmem_building = true;
	r = sg_copy_prepare3d(p, &c, &sh, &dh);
	sg_gmem_building = false;
	if (r)
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
	sg_gmem_building = true;
	r = sg_set_prepare(p->dst, p->pitch, p->value, p->elementSize, p->width, p->height, &s);
	sg_gmem_building = false;
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

/* ---- memory and conditional nodes ---- */

static CUresult alloc_set(struct sg_gnode *n, const CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	const CUmemPoolProps *pp;
	uint64_t va;
	CUresult r;

	if (p == NULL || p->bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pp = &p->poolProps;
	if (pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    pp->location.type != CU_MEM_LOCATION_TYPE_DEVICE || pp->location.id < 0 ||
	    pp->location.id >= sg_ndevices || pp->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->accessDescCount > (size_t)sg_ndevices || (p->accessDescCount && !p->accessDescs))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < p->accessDescCount; i++) {
		const CUmemAccessDesc *a = &p->accessDescs[i];

		if (a->location.type != CU_MEM_LOCATION_TYPE_DEVICE || a->location.id < 0 ||
		    a->location.id >= sg_ndevices)
			return CUDA_ERROR_INVALID_VALUE;
		if (a->location.id != pp->location.id)
			return CUDA_ERROR_NOT_SUPPORTED; /* no peer access in softgpu */
		if (a->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE; /* the owning device always reads and writes */
	}
	n->acc = malloc((p->accessDescCount ? p->accessDescCount : 1) * sizeof(*n->acc));
	if (n->acc == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (p->accessDescCount)
		memcpy(n->acc, p->accessDescs, p->accessDescCount * sizeof(*n->acc));
	r = sg_gmem_new(&sg_devices[pp->location.id], p->bytesize, &n->gmem, &va);
	if (r)
		return r;
	n->palloc = *p;
	n->palloc.accessDescs = n->acc;
	n->palloc.dptr = va;
	return CUDA_SUCCESS;
}

static CUresult free_set(struct sg_gnode *n, uint64_t dptr)
{
	struct sg_graph *g = n->graph;
	struct sg_gmem *m = sg_gmem_find(dptr);
	bool own = false;

	if (m == NULL)
		return CUDA_ERROR_INVALID_VALUE; /* not an allocation node's address */
	for (size_t i = 0; i < g->n; i++) {
		const struct sg_gnode *o = g->nodes[i];

		if (o != n && o->gmem == m && o->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
			return CUDA_ERROR_INVALID_VALUE; /* freed twice in one graph */
		if (o->gmem == m && o->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
			own = true;
	}
	sg_gmem_ref(m);
	n->gmem = m;
	n->palloc.dptr = dptr;
	if (own)
		sg_gmem_set_graph_frees(m);
	return CUDA_SUCCESS;
}

static CUresult cond_set(struct sg_gnode *n, const CUDA_CONDITIONAL_NODE_PARAMS *p)
{
	struct sg_gcond *c;
	struct sg_ctx *ctx;
	CUresult r;

	if (p == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	c = (struct sg_gcond *)(uintptr_t)p->handle;
	if (!sg_handle_ok(c, SG_K_GCOND))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = node_ctx(p->ctx, &ctx)))
		return r;
	if (ctx != c->ctx)
		return CUDA_ERROR_INVALID_VALUE; /* the handle's context only */
	switch (p->type) {
	case CU_GRAPH_COND_TYPE_IF:
		if (p->size != 1 && p->size != 2)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_GRAPH_COND_TYPE_WHILE:
		if (p->size != 1)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	case CU_GRAPH_COND_TYPE_SWITCH:
		if (p->size == 0 || p->size > 4096)
			return CUDA_ERROR_INVALID_VALUE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	n->bodies = calloc(p->size, sizeof(*n->bodies));
	n->bodies_out = calloc(p->size, sizeof(*n->bodies_out));
	if (n->bodies == NULL || n->bodies_out == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (unsigned i = 0; i < p->size; i++) {
		n->bodies[i].g = sg_graph_new(true);
		if (n->bodies[i].g == NULL)
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->bodies[i].g->is_body = true;
		n->bodies_out[i] = (CUgraph)n->bodies[i].g;
		n->nbodies = i + 1;
	}
	n->ctx = ctx;
	n->ctype = p->type;
	n->cond = c;
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	return CUDA_SUCCESS;
}

/* Whether g (or a graph inside it) has memory nodes: such a graph is not cloned. */
static bool has_mem_nodes(const struct sg_graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct sg_gnode *n = g->nodes[i];

		if (n->gmem || (n->child && has_mem_nodes(n->child)))
			return true;
		for (unsigned b = 0; b < n->nbodies; b++)
			if (has_mem_nodes(n->bodies[b].g))
				return true;
	}
	return false;
}

static CUresult cond_create(CUgraphConditionalHandle *out, CUgraph h, CUcontext hctx, unsigned dflt,
			    unsigned flags)
{
	struct sg_graph *g = (struct sg_graph *)h;
	struct sg_gcond *c;
	struct sg_ctx *ctx;
	CUresult r;

	if (out == NULL || !sg_graph_ok(h) || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = node_ctx(hctx, &ctx)))
		return r;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*c = (struct sg_gcond){.value = dflt, .dflt = dflt, .flags = flags, .ctx = ctx};
	if (sg_handle_add(c, SG_K_GCOND)) {
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!conds_push(&g->conds, &g->nconds, &g->capconds, c)) {
		sg_handle_del(c);
		free(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (CUgraphConditionalHandle)(uintptr_t)c;
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out,
						  CUgraph hGraph, CUcontext ctx,
						  unsigned int defaultLaunchValue,
						  unsigned int flags)
{
	CUresult r = sg_inited();

	if (r)
		return r;
	LOCKED(cond_create(pHandle_out, hGraph, ctx, defaultLaunchValue, flags));
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
	const CUDA_MEM_ALLOC_NODE_PARAMS *alloc;
	uint64_t free_ptr;
	const CUDA_CONDITIONAL_NODE_PARAMS *cond;
};

static CUresult add_node(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
			 CUgraphNodeType type, const struct add_args *a)
{
	struct sg_graph *g = (struct sg_graph *)hg;
	struct sg_gnode *n;
	CUresult r = sg_inited();

	if (r)
		return r;
	if (out == NULL || !sg_graph_ok(hg) || (ndeps && deps == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sg_glock);
	r = sg_gnode_new(g, type, (struct sg_gnode *const *)deps, ndeps, &n);
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
			if (!sg_graph_ok(a->child) || a->child == hg ||
			    has_mem_nodes((struct sg_graph *)a->child))
				r = CUDA_ERROR_INVALID_VALUE; /* memory nodes: only moved, in CUDA */
			else if ((n->child = sg_graph_clone((struct sg_graph *)a->child, true)) ==
				 NULL)
				r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		case CU_GRAPH_NODE_TYPE_EMPTY:
			break;
		case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
			r = alloc_set(n, a->alloc);
			break;
		case CU_GRAPH_NODE_TYPE_MEM_FREE:
			r = free_set(n, a->free_ptr);
			break;
		case CU_GRAPH_NODE_TYPE_CONDITIONAL:
			r = cond_set(n, a->cond);
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
	pthread_mutex_unlock(&sg_glock);
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
			CU_GRAPH_NODE_TYPE_MEMCPY,
			&(struct add_args){.copy = copyParams, .ctx = ctx});
}

SG_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_MEMSET,
			&(struct add_args){.set = memsetParams, .ctx = ctx});
}

SG_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				      const CUgraphNode *dependencies, size_t numDependencies,
				      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_HOST,
			&(struct add_args){.host = nodeParams});
}

SG_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					    const CUgraphNode *dependencies, size_t numDependencies,
					    CUgraph childGraph)
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

CUresult sg_gnode_mem_alloc(struct sg_graph *g, struct sg_gnode *const *deps, size_t ndeps,
			    const CUDA_MEM_ALLOC_NODE_PARAMS *p, struct sg_ctx *ctx,
			    struct sg_gnode **out)
{
	CUresult r = sg_gnode_new(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC, deps, ndeps, out);

	if (r)
		return r;
	(*out)->ctx = ctx;
	if ((r = alloc_set(*out, p))) {
		node_unlink(*out);
		node_free(*out);
	}
	return r;
}

CUresult sg_gnode_mem_free(struct sg_graph *g, struct sg_gnode *const *deps, size_t ndeps,
			   uint64_t dptr, struct sg_gnode **out)
{
	CUresult r = sg_gnode_new(g, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, ndeps, out);

	if (r)
		return r;
	if ((r = free_set(*out, dptr))) {
		node_unlink(*out);
		node_free(*out);
	}
	return r;
}

SG_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					  const CUgraphNode *dependencies, size_t numDependencies,
					  CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	CUresult r =
		add_node(phGraphNode, hGraph, dependencies, numDependencies,
			 CU_GRAPH_NODE_TYPE_MEM_ALLOC, &(struct add_args){.alloc = nodeParams});

	if (r == CUDA_SUCCESS)
		nodeParams->dptr = ((struct sg_gnode *)*phGraphNode)->palloc.dptr;
	return r;
}

SG_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					 const CUgraphNode *dependencies, size_t numDependencies,
					 CUdeviceptr dptr)
{
	return add_node(phGraphNode, hGraph, dependencies, numDependencies,
			CU_GRAPH_NODE_TYPE_MEM_FREE, &(struct add_args){.free_ptr = dptr});
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
		*m = (CUDA_MEMSET_NODE_PARAMS){p->memset.dst,	p->memset.pitch,
					       p->memset.value, p->memset.elementSize,
					       p->memset.width, p->memset.height};
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
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		a->alloc = (const CUDA_MEM_ALLOC_NODE_PARAMS *)&p->alloc; /* v1 and v2 agree */
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		a->free_ptr = p->free.dptr;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		a->cond = &p->conditional;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

bool sg_edges_default(const CUgraphEdgeData *d, size_t n)
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
	if (!sg_edges_default(dependencyData, numDependencies))
		return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges */
	r = add_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->type, &a);
	if (r == CUDA_SUCCESS && nodeParams->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
		nodeParams->alloc.dptr = ((struct sg_gnode *)*phGraphNode)->palloc.dptr;
	if (r == CUDA_SUCCESS && nodeParams->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
		nodeParams->conditional.phGraph_out = ((struct sg_gnode *)*phGraphNode)->bodies_out;
	return r;
}

/* ---- querying and editing nodes ---- */

static CUresult node_get(CUgraphNode h, CUgraphNodeType type, struct sg_gnode **out);

static CUresult alloc_get(CUgraphNode h, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &n);

	if (r == CUDA_SUCCESS && p == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		*p = n->palloc;
	return r;
}

SG_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
						CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
	LOCKED(alloc_get(hNode, params_out));
}

static CUresult free_get(CUgraphNode h, CUdeviceptr *p)
{
	struct sg_gnode *n;
	CUresult r = node_get(h, CU_GRAPH_NODE_TYPE_MEM_FREE, &n);

	if (r == CUDA_SUCCESS && p == NULL)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		*p = n->palloc.dptr;
	return r;
}

SG_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
	LOCKED(free_get(hNode, dptr_out));
}

static CUresult node_get(CUgraphNode h, CUgraphNodeType type, struct sg_gnode **out)
{
	if (!sg_gnode_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	if (((struct sg_gnode *)h)->type != type)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (struct sg_gnode *)h;
	return CUDA_SUCCESS;
}

static CUresult node_type(CUgraphNode h, CUgraphNodeType *type)
{
	if (!sg_gnode_ok(h) || type == NULL)
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

SG_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
						 CUDA_KERNEL_NODE_PARAMS *nodeParams)
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

SG_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode,
					      CUDA_MEMSET_NODE_PARAMS *nodeParams)
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

	if (!sg_graph_ok(h) || num == NULL)
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

	if (!sg_graph_ok(h) || num == NULL || (from == NULL) != (to == NULL))
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

	if (!sg_gnode_ok(h) || num == NULL)
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

	if (!sg_graph_ok(h) || (num && (from == NULL || to == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!sg_edges_default(ed, num))
		return CUDA_ERROR_NOT_SUPPORTED;
	for (size_t i = 0; i < num; i++) {
		struct sg_gnode *a = (struct sg_gnode *)from[i], *b = (struct sg_gnode *)to[i];

		if (!sg_gnode_ok(from[i]) || !sg_gnode_ok(to[i]) || a->graph != g ||
		    b->graph != g || a == b)
			return CUDA_ERROR_INVALID_VALUE;
		if (add && sg_gnodes_has(b->deps, b->ndeps, a))
			return CUDA_ERROR_INVALID_VALUE; /* CUDA refuses a duplicate edge */
		if (!add && !sg_gnodes_has(b->deps, b->ndeps, a))
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
						const CUgraphNode *to,
						const CUgraphEdgeData *edgeData,
						size_t numDependencies)
{
	LOCKED(edges_edit(hGraph, from, to, edgeData, numDependencies, false));
}

static CUresult destroy_node(CUgraphNode h)
{
	struct sg_gnode *n = (struct sg_gnode *)h;

	if (!sg_gnode_ok(h))
		return CUDA_ERROR_INVALID_VALUE;
	if (has_mem_nodes(n->graph))
		return CUDA_ERROR_NOT_SUPPORTED; /* CUDA keeps the nodes of such graphs */
	for (unsigned b = 0; b < n->nbodies; b++)
		if (graph_captured(n->bodies[b].g))
			return CUDA_ERROR_ILLEGAL_STATE; /* a body still being captured into */
	node_unlink(n);
	node_free(n);
	return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
	LOCKED(destroy_node(hNode));
}

/* ---- executable graphs ---- */

static void lorder_unref(struct sg_lorder *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_cond_destroy(&o->cv);
		pthread_mutex_destroy(&o->mu);
		free(o);
	}
}

static void xgraph_unref(struct sg_xgraph *xg)
{
	if (xg && __atomic_sub_fetch(&xg->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		sg_graph_free(xg->g);
		free(xg);
	}
}

static void exec_free(struct sg_gexec *x)
{
	if (x == NULL)
		return;
	for (size_t i = 0; i < x->ngmems; i++)
		sg_gmem_unclaim(x->gmems[i]);
	free(x->gmems);
	for (size_t i = 0; i < x->nconds; i++)
		cond_unref(x->conds[i]);
	free(x->conds);
	if (x->xg)
		xgraph_unref(x->xg);
	else
		sg_graph_free(x->g);
	free(x->order);
	lorder_unref(x->lorder);
	free(x);
}

/*
 * Instantiation's walk of g (an executable's private graph): each conditional body's order,
 * the handles whose default applies at each launch, each allocation node's memory (claimed:
 * one instantiation at a time). in_body: g is inside a conditional body, where CUDA allows
 * only kernels, empty nodes, child graphs, memsets, copies and conditionals.
 */
static CUresult exec_walk(struct sg_gexec *x, struct sg_graph *g, bool in_body)
{
	CUresult r = CUDA_SUCCESS;

	for (size_t i = 0; i < g->nconds && r == CUDA_SUCCESS; i++)
		if ((g->conds[i]->flags & CU_GRAPH_COND_ASSIGN_DEFAULT) &&
		    !conds_push(&x->conds, &x->nconds, &x->capconds, g->conds[i]))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < g->n && r == CUDA_SUCCESS; i++) {
		struct sg_gnode *n = g->nodes[i];
		struct sg_gmem **a;

		switch (n->type) {
		case CU_GRAPH_NODE_TYPE_KERNEL:
		case CU_GRAPH_NODE_TYPE_EMPTY:
		case CU_GRAPH_NODE_TYPE_MEMSET:
		case CU_GRAPH_NODE_TYPE_MEMCPY:
			break;
		case CU_GRAPH_NODE_TYPE_GRAPH:
			r = exec_walk(x, n->child, in_body);
			break;
		case CU_GRAPH_NODE_TYPE_CONDITIONAL:
			for (unsigned b = 0; b < n->nbodies && r == CUDA_SUCCESS; b++) {
				size_t cap = 0;

				r = topo(n->bodies[b].g, &n->bodies[b].order, &n->bodies[b].norder,
					 &cap);
				if (r == CUDA_SUCCESS)
					r = exec_walk(x, n->bodies[b].g, true);
			}
			break;
		case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
			if (in_body) {
				r = CUDA_ERROR_INVALID_VALUE;
				break;
			}
			a = realloc(x->gmems, (x->ngmems + 1) * sizeof(*a));
			if (a == NULL) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
				break;
			}
			x->gmems = a;
			if (!sg_gmem_claim(n->gmem))
				r = CUDA_ERROR_INVALID_VALUE; /* instantiated already */
			else
				x->gmems[x->ngmems++] = n->gmem;
			break;
		default:
			if (in_body)
				r = CUDA_ERROR_INVALID_VALUE;
			break;
		}
	}
	return r;
}

static CUresult instantiate(CUgraphExec *out, CUgraph h, unsigned long long flags)
{
	struct sg_gexec *x;
	size_t cap = 0;
	CUresult r;

	if (out == NULL || !sg_graph_ok(h))
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
	x->lorder = calloc(1, sizeof(*x->lorder));
	x->xg = x->lorder ? calloc(1, sizeof(*x->xg)) : NULL;
	x->g = x->xg ? sg_graph_clone((struct sg_graph *)h, false) : NULL;
	if (x->lorder) {
		pthread_mutex_init(&x->lorder->mu, NULL);
		pthread_cond_init(&x->lorder->cv, NULL);
		x->lorder->refs = 1;
	}
	if (x->g == NULL) {
		free(x->xg);
		x->xg = NULL;
		exec_free(x);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*x->xg = (struct sg_xgraph){x->g, 1};
	r = topo(x->g, &x->order, &x->norder, &cap);
	if (r == CUDA_SUCCESS)
		r = exec_walk(x, x->g, false);
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
	pthread_mutex_lock(&sg_glock);
	r = instantiate(out, h, p->flags);
	pthread_mutex_unlock(&sg_glock);
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

SG_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(
	CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
SG_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(
	CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
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
	exec_free((struct sg_gexec *)h); /* queued ops hold what they need of it */
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

	if (!exec_ok(hx) || !sg_gnode_ok(hn))
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

	if (!sg_gnode_ok(hn))
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
		if (x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL || x->gmem != y->gmem) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
			return false;
		}
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

			if (!sg_gnodes_has(x->deps, x->ndeps, a->nodes[k])) {
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
	if (!exec_ok(hx) || !sg_graph_ok(h)) {
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

struct alloc_job {
	struct sg_gmem *m;
	bool ran;
};

static void alloc_op_run(struct sg_stream *s, void *data, int sticky)
{
	struct alloc_job *j = data;
	CUresult r;

	(void)sticky; /* mapped even so: the free that follows expects it */
	j->ran = true;
	if ((r = sg_gmem_alloc_run(j->m)))
		sg_ctx_set_sticky(s->ctx, (int)r);
}

static void alloc_op_done(void *data)
{
	struct alloc_job *j = data;

	if (!j->ran)
		sg_gmem_unprepare(j->m);
	sg_gmem_unref(j->m);
	free(j);
}

static void free_op_run(struct sg_stream *s, void *data, int sticky)
{
	(void)s;
	(void)sticky;
	sg_gmem_free_run(data);
}

static void gmem_op_done(void *data)
{
	sg_gmem_unref(data);
}

struct cond_job {
	struct sg_xgraph *xg;
	struct sg_gnode *n; /* xg's */
};

/* The handles whose default a launch applies, a reference on each. */
struct defaults_job {
	size_t n;
	struct sg_gcond *c[];
};

static void defaults_run(struct sg_stream *s, void *data, int sticky)
{
	struct defaults_job *j = data;

	(void)s;
	(void)sticky;
	for (size_t i = 0; i < j->n; i++)
		__atomic_store_n(&j->c[i]->value, j->c[i]->dflt, __ATOMIC_RELEASE);
}

static void defaults_done(void *data)
{
	struct defaults_job *j = data;

	for (size_t i = 0; i < j->n; i++)
		cond_unref(j->c[i]);
	free(j);
}

/* Under sg_glock: the op that applies x's handles' defaults. */
static struct sg_op *defaults_op(const struct sg_gexec *x)
{
	struct defaults_job *j = malloc(sizeof(*j) + x->nconds * sizeof(j->c[0]));
	struct sg_op *op = j ? sg_op_new(SG_OP_GRAPHFN) : NULL;

	if (op == NULL) {
		free(j);
		return NULL;
	}
	j->n = x->nconds;
	for (size_t i = 0; i < j->n; i++) {
		j->c[i] = x->conds[i];
		__atomic_add_fetch(&j->c[i]->refs, 1, __ATOMIC_ACQ_REL);
	}
	op->u.gfn.run = defaults_run;
	op->u.gfn.done = defaults_done;
	op->u.gfn.data = j;
	return op;
}

static CUresult order_ops(struct sg_xgraph *xg, unsigned long long flags,
			  struct sg_gnode *const *order, size_t norder, struct sg_op ***out,
			  size_t *nops);

/* One run of a conditional body, now, on s's thread: 0, or -1 after a failure. */
static int body_run(struct sg_stream *s, struct sg_xgraph *xg, const struct sg_gbody *b)
{
	struct sg_op **ops = NULL;
	size_t n = 0;
	CUresult r;

	/* Exec SetParams calls may edit the nodes. A body holds no allocation or free node
	 * (exec_walk), so the executable's flags do not matter here. */
	pthread_mutex_lock(&sg_glock);
	r = order_ops(xg, 0, b->order, b->norder, &ops, &n);
	pthread_mutex_unlock(&sg_glock);
	if (r) {
		sg_ctx_set_sticky(s->ctx, (int)r);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		sg_stream_run_now(s, ops[i]);
	free(ops);
	return 0;
}

/* A conditional node running: its value read now picks the body (or ends the loop). */
static void cond_op_run(struct sg_stream *s, void *data, int sticky)
{
	struct cond_job *j = data;
	const struct sg_gnode *n = j->n;

	while (!sticky) {
		uint32_t v = __atomic_load_n(&n->cond->value, __ATOMIC_ACQUIRE);
		long b = -1;

		if (n->ctype == CU_GRAPH_COND_TYPE_SWITCH)
			b = v < n->nbodies ? (long)v : -1;
		else if (v)
			b = 0;
		else if (n->ctype == CU_GRAPH_COND_TYPE_IF && n->nbodies == 2)
			b = 1; /* else */
		if (b < 0 || body_run(s, j->xg, &n->bodies[b]) ||
		    n->ctype != CU_GRAPH_COND_TYPE_WHILE)
			break;
		sticky = __atomic_load_n(&s->ctx->sticky, __ATOMIC_ACQUIRE);
	}
}

static void cond_op_done(void *data)
{
	struct cond_job *j = data;

	xgraph_unref(j->xg);
	free(j);
}

/* The op of conditional node n of xg (taking a reference on xg). */
static struct sg_op *cond_op(struct sg_xgraph *xg, struct sg_gnode *n)
{
	struct cond_job *j = malloc(sizeof(*j));
	struct sg_op *op = j ? sg_op_new(SG_OP_GRAPHFN) : NULL;

	if (op == NULL) {
		free(j);
		return NULL;
	}
	*j = (struct cond_job){xg, n};
	__atomic_add_fetch(&xg->refs, 1, __ATOMIC_ACQ_REL);
	op->u.gfn.run = cond_op_run;
	op->u.gfn.done = cond_op_done;
	op->u.gfn.data = j;
	return op;
}

static struct sg_op *gmem_op(unsigned long long flags, struct sg_gnode *n, CUresult *err)
{
	struct alloc_job *j;
	struct sg_op *op = sg_op_new(SG_OP_GRAPHFN);

	if (op == NULL)
		return NULL;
	if (n->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
		sg_gmem_ref(n->gmem);
		op->u.gfn.run = free_op_run;
		op->u.gfn.done = gmem_op_done;
		op->u.gfn.data = n->gmem;
		return op;
	}
	j = calloc(1, sizeof(*j));
	if (j == NULL) {
		sg_op_free(op);
		return NULL;
	}
	*err = sg_gmem_prepare(n->gmem, flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
	if (*err) {
		free(j);
		sg_op_free(op);
		return NULL;
	}
	sg_gmem_ref(n->gmem);
	j->m = n->gmem;
	op->u.gfn.run = alloc_op_run;
	op->u.gfn.done = alloc_op_done;
	op->u.gfn.data = j;
	return op;
}

/* The ops a run of order (xg's nodes, of an executable instantiated with flags) makes, in that
 * order (nodes that do nothing have none). */
static CUresult order_ops(struct sg_xgraph *xg, unsigned long long flags,
			  struct sg_gnode *const *order, size_t norder, struct sg_op ***out,
			  size_t *nops)
{
	struct sg_op **ops = calloc(norder + 1, sizeof(*ops));
	size_t k = 0;
	CUresult err = CUDA_ERROR_OUT_OF_MEMORY;

	if (ops == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < norder; i++) {
		struct sg_gnode *n = order[i];
		struct sg_op *op = NULL;

		if (!n->enabled)
			continue;
		switch (n->type) {
		case CU_GRAPH_NODE_TYPE_KERNEL:
			if ((op = sg_op_new(SG_OP_LAUNCH)) &&
			    !(op->u.launch = sg_launch_dup(n->launch))) {
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
				err = CUDA_ERROR_INVALID_HANDLE; /* destroyed since */
				break;
			}
			op = sg_event_op_new(n->event, n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
							       ? SG_OP_RECORD
							       : SG_OP_WAIT);
			break;
		case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		case CU_GRAPH_NODE_TYPE_MEM_FREE:
			op = gmem_op(flags, n, &err);
			break;
		case CU_GRAPH_NODE_TYPE_CONDITIONAL:
			op = cond_op(xg, n);
			break;
		default:
			continue; /* empty */
		}
		if (op == NULL) {
			for (size_t j = 0; j < k; j++)
				sg_op_free(ops[j]);
			free(ops);
			return err;
		}
		ops[k++] = op;
	}
	*out = ops;
	*nops = k;
	return CUDA_SUCCESS;
}

/*
 * Launch k of an executable: its first op (the gate) waits for launch k - 1 to finish, its
 * last marks launch k finished. Launches on one stream pass the gate at once; on two, the
 * second stream's worker waits there, as a WAIT op waits for an event. A finish op freed
 * without running (its launch's queueing failed, or its stream was torn down) still marks
 * its launch finished, but only once launch k - 1 has: until then it waits in the counter's
 * list, so launch k + 1 still waits for k - 1.
 */
struct sg_launch_job {
	struct sg_lorder *o;
	uint64_t k;
	bool ran;
	struct sg_launch_job *next; /* in o->ahead */
};

static void gate_run(struct sg_stream *s, void *data, int sticky)
{
	struct sg_launch_job *j = data;

	(void)s;
	(void)sticky;
	pthread_mutex_lock(&j->o->mu);
	while (j->o->finished < j->k - 1)
		pthread_cond_wait(&j->o->cv, &j->o->mu);
	pthread_mutex_unlock(&j->o->mu);
}

static void gate_done(void *data);

/*
 * Launch k finished. early: its finish job, which did not run; kept in o->ahead (true
 * returned) when launch k - 1 has not finished yet. Otherwise the count moves to k, and past
 * the launches kept there that follow, whose jobs go.
 */
static bool launch_finish(struct sg_lorder *o, uint64_t k, struct sg_launch_job *early)
{
	struct sg_launch_job *gone = NULL, **pp;
	bool moved = true;

	pthread_mutex_lock(&o->mu);
	if (early && k > o->finished + 1) {
		early->next = o->ahead;
		o->ahead = early;
		pthread_mutex_unlock(&o->mu);
		return true;
	}
	if (o->finished < k)
		o->finished = k;
	while (moved) {
		moved = false;
		for (pp = &o->ahead; *pp; pp = &(*pp)->next) {
			struct sg_launch_job *j = *pp;

			if (j->k <= o->finished + 1) {
				*pp = j->next;
				if (o->finished < j->k)
					o->finished = j->k;
				j->next = gone;
				gone = j;
				moved = true;
				break;
			}
		}
	}
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	/* The caller's job still holds o. */
	while (gone) {
		struct sg_launch_job *j = gone;

		gone = j->next;
		gate_done(j);
	}
	return false;
}

static void finish_run(struct sg_stream *s, void *data, int sticky)
{
	struct sg_launch_job *j = data;

	(void)s;
	(void)sticky;
	j->ran = true;
	launch_finish(j->o, j->k, NULL); /* its gate saw launch k - 1 finished */
}

static void gate_done(void *data)
{
	struct sg_launch_job *j = data;

	lorder_unref(j->o);
	free(j);
}

static void finish_done(void *data)
{
	struct sg_launch_job *j = data;

	if (!j->ran && launch_finish(j->o, j->k, j))
		return; /* kept until launch k - 1 finishes */
	gate_done(j);
}

static struct sg_op *launch_op(struct sg_gexec *x, uint64_t k, bool finish)
{
	struct sg_launch_job *j = malloc(sizeof(*j));
	struct sg_op *op = j ? sg_op_new(SG_OP_GRAPHFN) : NULL;

	if (op == NULL) {
		free(j);
		return NULL;
	}
	*j = (struct sg_launch_job){x->lorder, k, false, NULL};
	__atomic_add_fetch(&x->lorder->refs, 1, __ATOMIC_ACQ_REL);
	op->u.gfn.run = finish ? finish_run : gate_run;
	op->u.gfn.done = finish ? finish_done : gate_done;
	op->u.gfn.data = j;
	return op;
}

/* The ops one launch of x queues (under sg_glock): the gate, its handles' defaults, its
 * order, the finish. */
static CUresult launch_ops(struct sg_gexec *x, struct sg_op ***out, size_t *nops)
{
	struct sg_op *gate, *fin, *d = NULL, **body = NULL, **ops;
	size_t nbody = 0, k = 0;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

	gate = launch_op(x, x->launches + 1, false);
	fin = launch_op(x, x->launches + 1, true);
	if (gate == NULL || fin == NULL)
		goto out_free;
	if (x->nconds && (d = defaults_op(x)) == NULL)
		goto out_free;
	if ((r = order_ops(x->xg, x->flags, x->order, x->norder, &body, &nbody)))
		goto out_free;
	ops = malloc((nbody + 3) * sizeof(*ops));
	if (ops == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	ops[k++] = gate;
	if (d)
		ops[k++] = d;
	memcpy(ops + k, body, nbody * sizeof(*ops));
	k += nbody;
	ops[k++] = fin;
	free(body);
	x->launches++;
	*out = ops;
	*nops = k;
	return CUDA_SUCCESS;

out_free:
	for (size_t i = 0; i < nbody; i++)
		sg_op_free(body[i]);
	free(body);
	sg_op_free(d);
	if (fin)
		((struct sg_launch_job *)fin->u.gfn.data)->ran =
			true; /* never queued: finishes nothing */
	sg_op_free(fin);
	sg_op_free(gate);
	return r;
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
	pthread_mutex_lock(&sg_glock);
	if (!exec_ok(hx))
		r = CUDA_ERROR_INVALID_VALUE;
	else if (s->cap)
		r = sg_capture_add_child(s, (struct sg_gexec *)hx);
	else
		r = launch_ops((struct sg_gexec *)hx, &ops, &n);
	pthread_mutex_unlock(&sg_glock);
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
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		return "mem_alloc";
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return "mem_free";
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return "conditional";
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
			fprintf(f, "subgraph cluster_%s%zu {\nlabel=\"graph %zu\";\n", prefix, i,
				i);
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

	if (!sg_graph_ok(h) || path == NULL)
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

/* ---- the older entry points (pre-12.3 edges, v1 kernel parameters) ---- */

static CUDA_KERNEL_NODE_PARAMS kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	return (CUDA_KERNEL_NODE_PARAMS){
		p->func,	 p->gridDimX,  p->gridDimY,  p->gridDimZ,
		p->blockDimX,	 p->blockDimY, p->blockDimZ, p->sharedMemBytes,
		p->kernelParams, p->extra,     NULL,	     NULL};
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

/* ---- per-thread default stream variants ---- */

#define PTSZ(ret, name, params)    \
	SG_EXPORT ret name params; \
	SG_EXPORT ret name params

PTSZ(CUresult, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
{
	return graph_launch(hGraphExec, hStream, true);
}

PTSZ(CUresult, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
{
	return graph_upload(hGraphExec, hStream, true);
}
