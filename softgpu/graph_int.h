/* graph_int.h -- what graph.c and capture.c share: graphs and nodes, and their lock. */
#ifndef SG_GRAPH_INT_H
#define SG_GRAPH_INT_H

#include "softgpu.h"

struct sg_graph {
	struct sg_gnode **nodes;
	size_t n, cap;
	bool visible;		 /* its nodes are handles (not an executable's private copy) */
	struct sg_gcond **conds; /* the conditional handles made on it (references) */
	size_t nconds, capconds;
	bool is_body; /* a conditional node's body: the node's, not the program's to destroy */
};

struct sg_gnode {
	struct sg_graph *graph;
	CUgraphNodeType type;
	struct sg_ctx *ctx;
	struct sg_gnode **deps, **outs;
	size_t ndeps, capdeps, nouts, capouts;
	const struct sg_gnode *orig; /* the node this one was cloned from */
	bool enabled;
	bool have_params;	  /* copy/memset: made from API parameters (not captured) */
	struct sg_launch *launch; /* kernel: the template */
	void **kparams;		  /* kernel: pointers into the template's parameters */
	struct sg_copy copy;
	CUDA_MEMCPY3D p3d;
	struct sg_set set;
	CUDA_MEMSET_NODE_PARAMS pset;
	CUDA_HOST_NODE_PARAMS host;
	struct sg_event *event;
	struct sg_graph *child; /* owned */
	/* memory nodes: the allocation's memory (a reference); an allocation's parameters */
	struct sg_gmem *gmem;
	CUDA_MEM_ALLOC_NODE_PARAMS palloc;
	CUmemAccessDesc *acc; /* palloc.accessDescs: the node's copy */
	/* conditional nodes: the handle (a reference), the bodies (owned; each body's order
	 * filled in by instantiation), what phGraph_out names */
	struct sg_gcond *cond;
	CUgraphConditionalNodeType ctype;
	unsigned nbodies;
	struct sg_gbody {
		struct sg_graph *g;
		struct sg_gnode **order;
		size_t norder;
	} * bodies;
	CUgraph *bodies_out;
};

/* A conditional handle (cuGraphConditionalHandleCreate): counted by the graphs and
 * executables that hold it; the value is read and written atomically. */
struct sg_gcond {
	uint32_t value, dflt;
	unsigned flags;
	int refs;
	struct sg_ctx *ctx;
};

struct sg_gexec {
	struct sg_graph *g;   /* private clone, xg's */
	struct sg_xgraph *xg; /* counted: the nodes that queued conditional ops run */
	unsigned long long flags;
	struct sg_gnode **order;
	size_t norder;
	struct sg_gcond **conds; /* every handle its nodes use, with a default to apply */
	size_t nconds, capconds;
	struct sg_gmem **gmems; /* every allocation node's memory (one instantiation each) */
	size_t ngmems, capgmems;
	/* Launches run one after another, whatever their streams (cuGraphLaunch's rule): the
	 * first op of launch k waits until launch k - 1's last op ran. launches: those queued
	 * (under sg_glock); lorder: the count of finished ones, shared with the queued ops. */
	uint64_t launches;
	struct sg_lorder *lorder;
};

/* An executable's private graph, counted by it and by its queued conditional nodes' ops, which
 * run the nodes of their bodies: those never keep the executable, and what it claims (its
 * allocation nodes' memory), alive. */
struct sg_xgraph {
	struct sg_graph *g;
	int refs;
};

struct sg_launch_job; /* graph.c's: one launch's gate or finish op */

/* An executable's finished launches, counted by it and its queued gate and finish ops (so
 * that those never keep the executable, and what it holds, alive). */
struct sg_lorder {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t finished; /* under mu, signalled on cv */
	/* Launches that ended without running (never queued, or their stream torn down) while
	 * the one before had not finished: each finishes once that one has (their finish ops'
	 * jobs, kept here until then; under mu). */
	struct sg_launch_job *ahead;
	int refs;
};

/* Guards every graph, executable, capture and the capture fields of streams and events;
 * taken before stream.c's qlock, never held while a stream op runs. */
extern pthread_mutex_t sg_glock;

/* graph.c */
bool sg_gnodes_push(struct sg_gnode ***arr, size_t *n, size_t *cap, struct sg_gnode *x);
bool sg_gnodes_has(struct sg_gnode *const *arr, size_t n, const struct sg_gnode *x);
/* A new node of g after deps (each checked to be g's); CUresult. */
CUresult sg_gnode_new(struct sg_graph *g, CUgraphNodeType type, struct sg_gnode *const *deps,
		      size_t ndeps, struct sg_gnode **out);
/* kernelParams for GetParams: pointers at each parameter in the template's buffer. */
CUresult sg_gnode_kernel_params(struct sg_gnode *n);
/* visible: its nodes are handles (not an executable's private copy). */
struct sg_graph *sg_graph_new(bool visible);
void sg_graph_free(struct sg_graph *g);
struct sg_graph *sg_graph_clone(const struct sg_graph *src, bool visible);
bool sg_graph_ok(CUgraph h);
bool sg_gnode_ok(CUgraphNode h);
/* True when every edge of d[0..n) is a default one (d may be NULL). */
bool sg_edges_default(const CUgraphEdgeData *d, size_t n);

/* capture.c */
/* A launch of x on a capturing stream: a child graph node of the capture. */
CUresult sg_capture_add_child(struct sg_stream *s, struct sg_gexec *x);
/* Whether a capture in progress builds g. */
bool sg_capture_uses_graph(const struct sg_graph *g);
/*
 * cuMemAllocAsync (alloc_size, *dptr out) or cuMemFreeAsync (free_ptr) on s while a capture
 * is in progress: an allocation or free node of s's capture (CUresult), refused as
 * sg_capture_op refuses, or SG_NOT_CAPTURED.
 */
int sg_capture_mem(struct sg_stream *s, uint64_t alloc_size, uint64_t free_ptr, uint64_t *dptr);

/* graph.c: an allocation (*va) or free node of g after deps, as the API calls make them. */
CUresult sg_gnode_mem_alloc(struct sg_graph *g, struct sg_gnode *const *deps, size_t ndeps,
			    const CUDA_MEM_ALLOC_NODE_PARAMS *p, struct sg_ctx *ctx,
			    struct sg_gnode **out);
CUresult sg_gnode_mem_free(struct sg_graph *g, struct sg_gnode *const *deps, size_t ndeps,
			   uint64_t dptr, struct sg_gnode **out);

/*
 * mempool.c: graph memory. An allocation node's memory: its address reserved at once
 * (sg_gmem_new), its physical memory made when a launch is queued (sg_gmem_prepare:
 * INVALID_VALUE when its last allocation is not freed and the launch may not free it),
 * mapped when the node runs and unmapped by a free (node, cuMemFreeAsync, relaunch).
 */
struct sg_gmem;
CUresult sg_gmem_new(struct sg_device *dev, uint64_t size, struct sg_gmem **out, uint64_t *va);
void sg_gmem_ref(struct sg_gmem *m);
void sg_gmem_unref(struct sg_gmem *m);
uint64_t sg_gmem_va(const struct sg_gmem *m);
/* The memory of the allocation node whose address is va, or NULL. */
struct sg_gmem *sg_gmem_find(uint64_t va);
/* Its own graph has a free node for it: no one else may free it. */
void sg_gmem_set_graph_frees(struct sg_gmem *m);
/* One executable at a time: false when one holds it already. */
bool sg_gmem_claim(struct sg_gmem *m);
void sg_gmem_unclaim(struct sg_gmem *m);
CUresult sg_gmem_prepare(struct sg_gmem *m, bool auto_free);
void sg_gmem_unprepare(struct sg_gmem *m); /* a prepared launch that never ran */
CUresult sg_gmem_alloc_run(struct sg_gmem *m);
void sg_gmem_free_run(struct sg_gmem *m);
/* Set while this thread makes a graph's copy or memset node: graph memory that is not mapped
 * (freed, or not allocated yet) resolves to its shadow, for the node's later runs. */
extern _Thread_local bool sg_gmem_building;

#endif
