/* capture.c -- stream capture: ops submitted to a capturing stream become graph nodes. */
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

/*
 * DESIGN: a capturing stream has a capture (its graph) and a frontier (the nodes the next
 * op depends on). submit() in stream.c offers every op here while any capture is in
 * progress; a captured op becomes a node depending on the frontier, which then becomes
 * that node. An event recorded on a capturing stream remembers the frontier; a stream
 * waiting for it joins the capture with that frontier (fork), and a capturing stream
 * waiting for it merges it (join). Modes: a thread that began a non-relaxed capture, or
 * (in global mode) any thread while another thread's global capture runs, may not make
 * potentially unsafe calls (sg_capture_unsafe). Everything here is under sg_glock
 * (graph_int.h), except the thread-local mode and counts, which only their thread touches.
 */

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

static struct sg_capture *captures;
static uint64_t next_capture_id = 1;
static int global_captures; /* non-relaxed... global-mode captures of every thread */
static __thread CUstreamCaptureMode tl_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static __thread int tl_captures;	/* non-relaxed captures this thread began */
static __thread int tl_global_captures; /* global-mode ones among them */

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
		if (!sg_gnodes_has(s->cdeps, s->ncdeps, deps[i]) &&
		    !sg_gnodes_push(&s->cdeps, &s->ncdeps, &s->cdeps_cap, deps[i]))
			return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* A node of s's capture after s's frontier, which becomes that node. */
static CUresult capture_node(struct sg_stream *s, CUgraphNodeType type, struct sg_gnode **out)
{
	struct sg_gnode *n;
	CUresult r = sg_gnode_new(s->cap->g, type, s->cdeps, s->ncdeps, &n);

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

CUresult sg_capture_add_child(struct sg_stream *s, struct sg_gexec *x)
{
	struct sg_gnode *n;
	struct sg_graph *child;
	CUresult r;

	if (s->cap->invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	child = sg_graph_clone(x->g, true);
	if (child == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = capture_node(s, CU_GRAPH_NODE_TYPE_GRAPH, &n);
	if (r) {
		sg_graph_free(child);
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

	pthread_mutex_lock(&sg_glock);
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
	/* a stream-ordered free of memory not from an allocation node: refused */
	if (sync || op->kind == SG_OP_CALLBACK || op->kind == SG_OP_MEMFREE) {
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
			r = sg_gnode_kernel_params(n);
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
	default:		  /* event records and waits are captured by sg_capture_event */
		r = CUDA_SUCCESS; /* nothing to do */
		break;
	}
	if (r)
		invalidate(s->cap);
out:
	pthread_mutex_unlock(&sg_glock);
	if (r != SG_NOT_CAPTURED) {
		if (op && op->kind == SG_OP_LAUNCH && op->u.launch == NULL)
			op->kind = SG_OP_NOP;
		sg_op_free(op);
	}
	return r;
}

int sg_capture_mem(struct sg_stream *s, uint64_t alloc_size, uint64_t free_ptr, uint64_t *dptr)
{
	struct sg_gnode *n;
	struct sg_capture *c;
	int r;

	pthread_mutex_lock(&sg_glock);
	if (s->cap == NULL) {
		r = SG_NOT_CAPTURED;
		if (s->is_null && (c = blocking_capture(s->ctx))) {
			invalidate(c);
			r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		}
		goto out;
	}
	if (s->cap->invalid) {
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		goto out;
	}
	if (alloc_size) {
		CUDA_MEM_ALLOC_NODE_PARAMS p = {
			.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				      .location = {CU_MEM_LOCATION_TYPE_DEVICE,
						   s->ctx->dev->ordinal}},
			.bytesize = alloc_size};

		r = sg_gnode_mem_alloc(s->cap->g, s->cdeps, s->ncdeps, &p, s->ctx, &n);
		if (r == CUDA_SUCCESS)
			*dptr = n->palloc.dptr;
	} else {
		r = sg_gnode_mem_free(s->cap->g, s->cdeps, s->ncdeps, free_ptr, &n);
		if (r == CUDA_ERROR_INVALID_VALUE)
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* not graph memory */
	}
	if (r == CUDA_SUCCESS)
		r = set_frontier(s, &n, 1);
	if (r)
		invalidate(s->cap);
out:
	pthread_mutex_unlock(&sg_glock);
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

	pthread_mutex_lock(&sg_glock);
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

		r = capture_node(s,
				 kind == SG_OP_RECORD ? CU_GRAPH_NODE_TYPE_EVENT_RECORD
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
		if (s->ncdeps)
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
		if (!sg_gnodes_has(s->cdeps, s->ncdeps, e->cdeps[i]) &&
		    !sg_gnodes_push(&s->cdeps, &s->ncdeps, &s->cdeps_cap, e->cdeps[i]))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r)
		invalidate(ec);
out:
	pthread_mutex_unlock(&sg_glock);
	return r;
}

bool sg_stream_capturing(struct sg_stream *s)
{
	bool c;

	if (!__atomic_load_n(&sg_captures_active, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&sg_glock);
	c = s->cap != NULL;
	pthread_mutex_unlock(&sg_glock);
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
	pthread_mutex_lock(&sg_glock);
	others = global_captures - tl_global_captures;
	pthread_mutex_unlock(&sg_glock);
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

	pthread_mutex_lock(&sg_glock);
	if (s->cap && destroying && s->cap->origin != s) {
		/* a forked stream destroyed: it leaves, what it captured stays (CUDA lets a
		 * program destroy a stream it joined back, as cuda-samples' graphMemoryNodes
		 * does; softgpu does not check that it was joined) */
		leave(s);
	} else if (s->cap) {
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
	pthread_mutex_unlock(&sg_glock);
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
	pthread_mutex_lock(&sg_glock);
	if (s->cap) {
		r = CUDA_ERROR_ILLEGAL_STATE;
	} else if (into) {
		if (!sg_graph_ok(into))
			r = CUDA_ERROR_INVALID_VALUE;
		for (size_t i = 0; i < ndeps && r == CUDA_SUCCESS; i++)
			if (!sg_gnode_ok(deps[i]) ||
			    ((struct sg_gnode *)deps[i])->graph != (struct sg_graph *)into)
				r = CUDA_ERROR_INVALID_VALUE;
		c->g = (struct sg_graph *)into;
	} else if ((c->g = sg_graph_new(true)) == NULL) {
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
			sg_graph_free(c->g);
		free(c->members);
		free(c);
		pthread_mutex_unlock(&sg_glock);
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
	pthread_mutex_unlock(&sg_glock);
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
	if (!sg_edges_default(dependencyData, numDependencies))
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

/* Ends a capture nobody can end any more (sg_glock held): its graph goes with it. */
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
		sg_graph_free(c->g);
	free(c->members);
	free(c);
}

static CUresult end_capture(CUstream hs, CUgraph *out, bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	struct sg_capture *c, **pp;
	CUgraph none;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	pthread_mutex_lock(&sg_glock);
	c = s->cap;
	if (c == NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	if (out == NULL && c->own_graph) {
		r = CUDA_ERROR_INVALID_VALUE; /* NULL only when capturing into a given graph */
		goto out;
	}
	if (out == NULL)
		out = &none;
	if (c->origin != s) {
		invalidate(c);
		r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
		goto out;
	}
	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
	    !pthread_equal(c->thread, pthread_self())) {
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
			sg_graph_free(c->g);
		*out = NULL;
		r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		*out = (CUgraph)c->g;
	}
	free(c->members);
	free(c);
out:
	pthread_mutex_unlock(&sg_glock);
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
	pthread_mutex_lock(&sg_glock);
	if (s->cap)
		*st = s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
				      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	else if (s->is_null && blocking_capture(ctx))
		r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	else
		*st = CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&sg_glock);
	return r;
}

SG_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, captureStatus, false);
}

static CUresult capture_info(CUstream hs, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
			     const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps,
			     bool pt)
{
	struct sg_ctx *ctx;
	struct sg_stream *s;
	CUresult r = sg_stream_resolve(hs, pt, &ctx, &s);

	if (r)
		return r;
	if (st == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sg_glock);
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
	pthread_mutex_unlock(&sg_glock);
	return r;
}

SG_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
					     CUstreamCaptureStatus *captureStatus_out,
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
	if (!sg_edges_default(ed, n))
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&sg_glock);
	if (s->cap == NULL) {
		r = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!sg_gnode_ok(deps[i]) || ((struct sg_gnode *)deps[i])->graph != s->cap->g) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		s->ncdeps = 0;
	for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
		if (!sg_gnodes_has(s->cdeps, s->ncdeps, (struct sg_gnode *)deps[i]) &&
		    !sg_gnodes_push(&s->cdeps, &s->ncdeps, &s->cdeps_cap,
				    (struct sg_gnode *)deps[i]))
			r = CUDA_ERROR_OUT_OF_MEMORY;
out:
	pthread_mutex_unlock(&sg_glock);
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

SG_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream,
					  CUstreamCaptureStatus *captureStatus_out,
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
	if (!sg_edges_default(dependencyData, numDependencies))
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

bool sg_capture_uses_graph(const struct sg_graph *g)
{
	for (struct sg_capture *c = captures; c; c = c->next)
		if (c->g == g)
			return true;
	return false;
}
