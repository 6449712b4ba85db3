/* nodemap.h — numbering the nodes a walk meets, so that its side tables
 * are as long as what it visits, not as the context.
 *
 * A context keeps every node it ever made; a session's grows with every
 * step. A table indexed by node id (calloc(ctx->nnodes)) makes a walk
 * cost what the whole context holds, however small its graph: one walk
 * per step made a session of n steps O(n^2) (docs/schedule.md, "Cost").
 * A NodeMap gives the nodes a walk meets the numbers 0, 1, 2, ... in the
 * order it meets them (open addressing on the id, grown at half full);
 * the walk keeps its tables as dense arrays by that number.
 *
 * Each map counts the slots it makes in its context's `work` (uop.h), with
 * the nodes the walks visit: the deterministic measure of graph work that
 * the tests compare across sizes (test_scale.c). */
#ifndef UJ_NODEMAP_H
#define UJ_NODEMAP_H

#include "uop/uop.h"

enum { NODEMAP_NONE = UINT32_MAX };

typedef struct NodeSlot {
  uint32_t key; /* id + 1; 0: empty */
  uint32_t num; /* the number of that id */
} NodeSlot;

typedef struct NodeMap {
  Ctx *ctx;        /* counts the slots made in ctx->work */
  NodeSlot *slot;  /* open addressing, linear probing */
  size_t count;    /* numbers given: 0 .. count - 1 */
  size_t cap;      /* slots, a power of two (0 until the first add) */
  uint32_t hi;     /* the greatest id numbered (count > 0) */
  uint32_t lo, span; /* after nodemap_densify: ids lo .. lo + span - 1 are in dense */
  uint32_t *dense; /* the number of id lo + d at d (NODEMAP_NONE: none); NULL: not densified */
} NodeMap;

static inline NodeMap nodemap_make(Ctx *ctx) { return (NodeMap){.ctx = ctx}; }
void nodemap_free(NodeMap *m);
uint32_t nodemap_find_slot(const NodeMap *m, const UOp *u);
/* u's number, or NODEMAP_NONE when it has none. */
static inline uint32_t nodemap_find(const NodeMap *m, const UOp *u) {
  uint32_t d = u->id - m->lo; /* ids below lo wrap past the span */
  if (d < m->span) return m->dense[d];
  return nodemap_find_slot(m, u);
}
/* A table by id for lookups without hashing, over the newest ids numbered:
 * a span of at most four times their count, ending at the greatest. A
 * graph built together (a kernel) lies almost all in it, its older
 * shared nodes (interned constants) are hashed. The hot loops of the
 * evaluators look a node up at every step. Later adds inside the span
 * are written to it. Nothing when out of memory (lookups hash). */
void nodemap_densify(NodeMap *m);
/* u's number, given now (the next one, `count`) when it had none;
 * NODEMAP_NONE when out of memory (the error set). */
uint32_t nodemap_add(NodeMap *m, const UOp *u);
/* Room for n numbers without growing; false when out of memory. */
bool nodemap_reserve(NodeMap *m, size_t n);

/* The nodes of a toposorted list numbered by their place in it: after
 * nodemap_number(m, nodes, n) on an empty map, nodemap_find(m, nodes[k])
 * == k. Densified (nodemap_densify). */
bool nodemap_number(NodeMap *m, const UOp *const *nodes, size_t n);

/* A graph's nodes in topological order (uop_toposort), each numbered by
 * its place: a pass's tables by node are arrays of n, indexed by
 * topo_at(&t, u). */
typedef struct Topo {
  const UOp **nodes;
  size_t n;
  NodeMap num;
} Topo;

/* false (error set, t empty) when out of memory. */
bool topo_make(Ctx *ctx, const UOp *root, Topo *t);
void topo_free(Topo *t);
/* u's place in t->nodes; NODEMAP_NONE when u is not in the graph. */
static inline uint32_t topo_at(const Topo *t, const UOp *u) { return nodemap_find(&t->num, u); }

#endif
