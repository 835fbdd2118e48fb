/* graph_int.h -- what graph.c and capture.c share: graphs and nodes, and their lock. */
#ifndef SG_GRAPH_INT_H
#define SG_GRAPH_INT_H

#include "softgpu.h"

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
};

struct sg_gexec {
	struct sg_graph *g; /* private clone */
	unsigned long long flags;
	struct sg_gnode **order;
	size_t norder;
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

#endif
