/* fuse.c — online and row fusion: a kernel that reduces after a softmax
 * (attention's matmul with v) takes in the softmax's max, sum, quotient
 * and scores, and a kernel that normalizes rows (a softmax, a layernorm)
 * its max and sum or mean and variance, which the cutting rules gave
 * kernels of their own; it keeps them when the optimized kernel computes
 * nothing again for loops it does not depend on (docs/schedule.md,
 * "Online fusion", "Row fusion").
 *
 * In: the tensor graph (a SINK of roots) and the cuts find_cuts chose
 * (Cuts: by node). Out: those cuts less the ones taken into a kernel. Cut
 * nodes are tried sources first, each within its cone: the nodes reached
 * from it through at most FUSE_DEPTH cut nodes (at most FUSE_MAX_CONE
 * nodes, else no try), so a try costs what its neighbourhood holds and the
 * whole pass is linear in the graph (a walk of the whole graph per try
 * made a chain of n cut kernels cost n^2, and more). A try's set is the
 * cut max, the cuts above it and the cuts its kernel reads (online_set),
 * else the cuts at the kernel's edge whose kernels reduce (row_set), taken
 * when each lands in the kernel (not in another root's, which no try
 * checks) and nothing they compute is read from outside it (alone: the
 * users of each node, listed once for the graph). The trial kernel
 * (trial_graph: the kernel's region, the other cuts read as placeholder
 * buffers) is rangeified and shaped by the heuristics (lib/opt: opt_shadow
 * makes the sums that read the max run over its RANGE, the renderer runs
 * them in one loop as online softmax; opt_hoist stores a row's reductions
 * once before the loop over its outputs); it is kept when no REDUCE and no
 * costly op in it sits in a loop, of more than one step, over a RANGE it
 * does not read. A kept kernel that gathers an input reads it through a
 * transposed copy (stage_gathered): the node is then replaced in the SINK
 * by a new one, and its users, rebuilt, keep their marks (follow). */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"
#include "symbolic/symbolic.h"
#include "uop/movement.h"
#include "uop/nodemap.h"

enum { FUSE_MAX_RANGES = 64 };
enum { FUSE_DEPTH = 6 };        /* cut nodes a try looks through below its root */
enum { FUSE_MAX_CONE = 1024 };  /* nodes a try looks at, at most (attention's: 65) */

static bool is_reduce(const UOp *u) { return u->op == UJ_OP_REDUCE && u->nsrc == 1; }
static bool is_max(const UOp *u) { return is_reduce(u) && !strcmp(u->name, "MAX"); }

/* Whether kernel computes a REDUCE or costly op in a loop over a RANGE
 * (more than one step) that it does not read (taken as so when the kernel
 * has more RANGEs than fit a mask); a `local` RANGE is a workgroup's
 * threads, which run side by side, not a loop, and a LOAD of an ALLOC
 * reads every loop around it (a store may change it in any step). *ok
 * false when out of memory. */
static bool recomputes(Ctx *ctx, const UOp *kernel, bool *ok) {
  Topo t;
  const UOp *ranges[FUSE_MAX_RANGES];
  size_t nranges = 0;
  *ok = topo_make(ctx, kernel, &t);
  size_t n = t.n;
  uint64_t *reads = *ok ? calloc(n, sizeof *reads) : NULL, *inside = *ok ? calloc(n, sizeof *inside) : NULL; /* by place */
  *ok = reads && inside;
  bool again = false;
  for (size_t i = 0; *ok && i < n && !again; i++) {
    const UOp *u = t.nodes[i];
    if (u->op == UJ_OP_RANGE && range_kind(u) == AXIS_LOCAL) continue; /* a workgroup's threads: not steps in time */
    if (u->op == UJ_OP_RANGE) {
      if (nranges == FUSE_MAX_RANGES) again = true;
      else ranges[nranges] = u, reads[i] = 1ull << nranges++;
      continue;
    }
    uint64_t bound = 0;
    if (uop_loads_alloc(u)) reads[i] = ~0ull; /* may change in any step around it (docs/semantics.md "ALLOC") */
    for (uint32_t k = 0; k < u->nsrc; k++) {
      if (u->op == UJ_OP_REDUCE && k > 0) bound |= reads[topo_at(&t, u->src[k])];
      else if (u->op != UJ_OP_END || k > 0) reads[i] |= reads[topo_at(&t, u->src[k])];
    }
    reads[i] &= ~bound; /* a REDUCE's own RANGEs are bound in it */
  }
  for (size_t i = n; *ok && !again && i-- > 0;) { /* users first: the loops around each node */
    const UOp *u = t.nodes[i];
    uint64_t around = inside[i];
    if (u->op == UJ_OP_END) around |= reads[topo_at(&t, u->src[0])];
    for (uint32_t k = 0; k < u->nsrc; k++) {
      uint64_t more = around;
      if (u->op == UJ_OP_REDUCE && k == 0)
        for (uint32_t j = 1; j < u->nsrc; j++) more |= reads[topo_at(&t, u->src[j])];
      inside[topo_at(&t, u->src[k])] |= more;
    }
  }
  for (size_t i = 0; *ok && i < n && !again; i++) {
    const UOp *u = t.nodes[i];
    if (u->op != UJ_OP_REDUCE && !schedule_is_costly(u)) continue;
    uint64_t own = 0;
    for (uint32_t k = 1; u->op == UJ_OP_REDUCE && k < u->nsrc; k++) own |= reads[topo_at(&t, u->src[k])];
    uint64_t idle = inside[i] & ~own & ~reads[i];
    for (size_t r = 0; r < nranges && !again; r++) {
      const UOp *b = ranges[r]->src[0];
      again = idle >> r & 1 && !(b->op == UJ_OP_CONST && (int64_t)uop_const_value(b) <= 1);
    }
  }
  topo_free(&t), free(reads), free(inside);
  return again;
}

/* The input slot and element stride of a vector of loads whose lanes step
 * through memory by a constant other than 1 (a gather): 0 when vec is not
 * one. */
static int64_t gather_slot(Ctx *ctx, const UOp *vec, int64_t *stride) {
  if (vec->op != UJ_OP_VECTORIZE || vec->nsrc < 2) return 0;
  const UOp *first = vec->src[0];
  if (first->op != UJ_OP_LOAD || first->src[0]->op != UJ_OP_INDEX || first->src[0]->nsrc != 2 ||
      first->src[0]->src[0]->op != UJ_OP_PARAM)
    return 0;
  const UOp *param = first->src[0]->src[0], *base = first->src[0]->src[1];
  for (uint32_t u = 1; u < vec->nsrc; u++) {
    const UOp *x = vec->src[u];
    if (x->op != UJ_OP_LOAD || x->src[0]->op != UJ_OP_INDEX || x->src[0]->nsrc != 2 || x->src[0]->src[0] != param) return 0;
    const UOp *step = symbolic_simplify(ctx, uop_binary(ctx, UJ_OP_SUB, x->src[0]->src[1], base));
    if (!step || step->op != UJ_OP_CONST) return 0;
    int64_t v = (int64_t)uop_const_value(step);
    if (u == 1) *stride = v;
    if (v != *stride * (int64_t)u) return 0;
  }
  return *stride > 1 ? param->ints[0] : 0;
}

/* root with each BUFFER view its optimized kernel k gathers from (lanes a
 * stride s apart: attention's k, read along j for a chunk of scores)
 * read through a copy that has the axis of stride s last:
 * PERMUTE(STAGE(PERMUTE(view, p)), p^-1), so the lanes load one vector. */
static const UOp *stage_gathered(Ctx *ctx, const UOp *root, const UOp *k, const UOp *const *inputs, size_t ninputs) {
  const UOp **nodes = NULL, *from[8], *to[8];
  size_t n = uop_toposort(ctx, k, &nodes), nswap = 0;
  for (size_t i = 0; i < n && nswap < 8; i++) {
    int64_t stride = 0, slot = gather_slot(ctx, nodes[i], &stride);
    const UOp *buffer = slot >= 1 && (size_t)slot <= ninputs ? inputs[slot - 1] : NULL, **cone = NULL, *view = NULL;
    if (buffer && buffer->ints[0] < 0) view = ctx->nodes[-1 - buffer->ints[0]]; /* a cut node's (trial_kernel) */
    size_t m = buffer && !view ? uop_toposort(ctx, root, &cone) : 0;
    for (size_t c = 0; c < m && !view; c++)
      if (schedule_view_buffer(cone[c]) == buffer) view = cone[c];
    free(cone);
    bool seen = false;
    for (size_t w = 0; w < nswap; w++) seen |= from[w] == view;
    if (!view || seen || view->ndim < 2 || view->ndim > 8) continue;
    int64_t at = 1, axis = -1;
    for (unsigned d = view->ndim; d-- > 0 && axis < 0;) { /* C order: the axis whose stride is s */
      if (at == stride && view->shape[d] > 1) axis = d;
      at *= view->shape[d];
    }
    if (axis < 0 || axis == (int64_t)view->ndim - 1) continue;
    int64_t order[8], back[8];
    for (unsigned d = 0, o = 0; d < view->ndim; d++)
      if (d != axis) order[o++] = d;
    order[view->ndim - 1] = axis;
    for (unsigned d = 0; d < view->ndim; d++) back[order[d]] = d;
    const UOp *moved = uop_new(ctx, UJ_OP_PERMUTE, view->dtype, &view, 1, (Arg){NULL, order, view->ndim});
    const UOp *copy = moved ? uop_new(ctx, UJ_OP_STAGE, view->dtype, &moved, 1, arg_none()) : NULL;
    const UOp *read = copy ? uop_new(ctx, UJ_OP_PERMUTE, view->dtype, &copy, 1, (Arg){NULL, back, view->ndim}) : NULL;
    if (!read) break;
    from[nswap] = view, to[nswap++] = read;
  }
  free(nodes);
  return nswap ? opt_substitute(ctx, root, from, to, nswap) : root;
}

/* ---- a try's cone ---- */

/* The nodes a try looks at: those reached from its root through at most
 * FUSE_DEPTH cut nodes (a node's level: the fewest cut nodes on a way down
 * to it; the root's kernel is level 0), numbered as met, with tables by
 * number. Every node of a kernel in the cone is in it; cut nodes one level
 * further are not (a kernel built from the cone reads them as buffers). */
typedef struct Cone {
  Ctx *ctx;
  const Cuts *cuts;
  NodeMap num;
  const UOp **nodes;   /* by number */
  const UOp **order;   /* the same, sorted by id: sources first */
  size_t n;
  unsigned char *region, *set, *seen; /* by number */
  const UOp **stack;   /* scratch */
  uint32_t *queue, *next; /* scratch of cone_make: this level's numbers, the next's */
} Cone;

static uint32_t num_of(const Cone *c, const UOp *u) { return nodemap_find(&c->num, u); }
static bool is_cut(const Cone *c, const UOp *u) { return cuts_is_cut(c->cuts, u); }

static void cone_free(Cone *c) {
  nodemap_free(&c->num);
  void *owned[] = {c->nodes, c->order, c->region, c->set, c->seen, c->stack, c->queue, c->next};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
  memset(c, 0, sizeof *c);
}

/* Adds u to the cone (level by level: the caller puts it in this level's
 * list or the next's); false when the cone is full or out of memory. */
static bool cone_add(Cone *c, const UOp *u) {
  if (c->num.count == FUSE_MAX_CONE || nodemap_add(&c->num, u) == NODEMAP_NONE) return false;
  c->nodes[c->num.count - 1] = u;
  return true;
}

/* top's cone, in c (freed by cone_free); false when it has more than
 * FUSE_MAX_CONE nodes (no try) or when out of memory (*ok false). */
static bool cone_make(Ctx *ctx, const Cuts *cuts, const UOp *top, Cone *c, bool *ok) {
  *c = (Cone){.ctx = ctx, .cuts = cuts, .num = nodemap_make(ctx)};
  c->nodes = malloc(FUSE_MAX_CONE * sizeof *c->nodes);
  c->queue = malloc(FUSE_MAX_CONE * sizeof *c->queue), c->next = malloc(FUSE_MAX_CONE * sizeof *c->next);
  *ok = c->nodes && c->queue && c->next && cone_add(c, top);
  bool fits = *ok;
  size_t nq = fits ? 1 : 0, nnext = 0;
  if (fits) c->queue[0] = 0;
  for (unsigned level = 0; fits && nq > 0; level++) {
    for (size_t i = 0; fits && i < nq; i++) { /* the queue grows with this level's nodes */
      const UOp *u = c->nodes[c->queue[i]];
      for (uint32_t k = 0; fits && k < u->nsrc; k++) {
        const UOp *s = u->src[k];
        if (num_of(c, s) != NODEMAP_NONE) continue;
        bool deeper = is_cut(c, s); /* a kernel of its own: one level down */
        if (deeper && level == FUSE_DEPTH) continue;
        fits = cone_add(c, s);
        if (fits && deeper) c->next[nnext++] = (uint32_t)(c->num.count - 1);
        else if (fits) c->queue[nq++] = (uint32_t)(c->num.count - 1);
      }
    }
    uint32_t *q = c->queue;
    c->queue = c->next, c->next = q, nq = nnext, nnext = 0;
  }
  c->n = c->num.count;
  if (!fits) {
    *ok = *ok && c->num.count == FUSE_MAX_CONE; /* full, not out of memory */
    return false;
  }
  c->order = malloc(c->n * sizeof *c->order);
  c->region = calloc(c->n, 1), c->set = calloc(c->n, 1), c->seen = calloc(c->n, 1);
  c->stack = malloc((c->n + 1) * sizeof *c->stack);
  *ok = c->order && c->region && c->set && c->seen && c->stack;
  if (*ok) memcpy(c->order, c->nodes, c->n * sizeof *c->order), qsort(c->order, c->n, sizeof *c->order, uop_cmp_id);
  ctx->work += c->n;
  return *ok;
}

/* Marks in region[] the nodes of x's kernel: reached from x without
 * passing a cut node other than x (the cut nodes at its edge marked too). */
static void mark_region(Cone *c, const UOp *x) {
  memset(c->region, 0, c->n);
  size_t sp = 0;
  c->stack[sp++] = x, c->region[num_of(c, x)] = 1;
  while (sp > 0) {
    const UOp *u = c->stack[--sp];
    if (u != x && is_cut(c, u)) continue;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      uint32_t at = num_of(c, u->src[k]);
      if (at != NODEMAP_NONE && !c->region[at]) c->region[at] = 1, c->stack[sp++] = u->src[k];
    }
  }
}

/* In seen[]: the nodes of the cone whose graph (within the cone) holds m. */
static void mark_holders(Cone *c, const UOp *m) {
  memset(c->seen, 0, c->n);
  for (size_t i = 0; i < c->n; i++) {
    const UOp *u = c->order[i];
    bool holds = u == m;
    for (uint32_t k = 0; k < u->nsrc && !holds; k++) {
      uint32_t at = num_of(c, u->src[k]);
      holds = at != NODEMAP_NONE && c->seen[at];
    }
    c->seen[num_of(c, u)] = holds;
  }
}

/* The set of cuts a try takes into top's kernel, marked in set[]: for each
 * cut max M in top's cone, the cuts whose graph holds M (the softmax
 * between M and top: its quotient, its sum), M, and the cuts M's own
 * kernel reads (its scores); not top, not roots. false when there is none,
 * or when top's kernel reduces nothing of its own (top is the softmax
 * itself, not a matmul after it: it would still write the T·T matrix). */
static bool online_set(Cone *c, const UOp *top, const NodeMap *roots) {
  bool any = false, reduces = false;
  mark_region(c, top);
  for (size_t i = 0; i < c->n; i++)
    reduces |= c->region[i] && c->nodes[i]->op == UJ_OP_REDUCE && (c->nodes[i] == top || !is_cut(c, c->nodes[i]));
  for (size_t i = 0; reduces && i < c->n; i++) {
    const UOp *max = c->order[i];
    if (max == top || !is_max(max) || !is_cut(c, max)) continue;
    c->set[num_of(c, max)] = 1, any = true;
    mark_holders(c, max); /* cuts above M */
    for (size_t k = 0; k < c->n; k++)
      if (c->nodes[k] != top && c->nodes[k] != max && is_cut(c, c->nodes[k]) && c->seen[k]) c->set[k] = 1;
    mark_region(c, max); /* cuts at the edge of M's kernel */
    for (size_t k = 0; k < c->n; k++)
      if (c->nodes[k] != max && c->region[k] && is_cut(c, c->nodes[k]) && !schedule_view_buffer(c->nodes[k])) c->set[k] = 1;
  }
  for (size_t k = 0; k < c->n; k++) /* roots and scatters stay kernels of their own */
    if (c->nodes[k] != top && (nodemap_find(roots, c->nodes[k]) != NODEMAP_NONE || c->nodes[k]->op == UJ_OP_SCATTER)) c->set[k] = 0;
  memset(c->seen, 0, c->n);
  return any;
}

/* Whether cut node x's own kernel computes a REDUCE (the cuts at its edge
 * count); seen[] zero before and after (the nodes visited are
 * stack[0 .. tail), a queue). */
static bool holds_reduce(Cone *c, const UOp *x) {
  size_t head = 0, tail = 0;
  bool found = false;
  c->stack[tail++] = x, c->seen[num_of(c, x)] = 1;
  while (head < tail && !found) {
    const UOp *u = c->stack[head++];
    found = is_reduce(u);
    if (u != x && is_cut(c, u)) continue;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      uint32_t at = num_of(c, u->src[k]);
      if (at != NODEMAP_NONE && !c->seen[at]) c->seen[at] = 1, c->stack[tail++] = u->src[k];
    }
  }
  while (tail > 0) c->seen[num_of(c, c->stack[--tail])] = 0;
  return found;
}

/* The set of cuts a row try takes into top's kernel, marked in set[] and
 * cleared in the cuts: the cuts at the edge of top's kernel whose own
 * kernels reduce (a normalization's mean, and its 1/sqrt(variance), cut as
 * a broadcast costly op; softmax's max and sum), then those at the edge of
 * the kernel so grown, until none is left (in the cone); not roots, not
 * buffers. The optimizer then stores each reduction once per row before
 * the loop over the row's outputs (lib/opt/hoist.c), and the trial is kept
 * only if nothing is computed again for a loop it does not read. false
 * when there is none; *ok false when out of memory. */
static bool row_set(Cone *c, const UOp *top, const NodeMap *roots, Cuts *cuts, bool *ok) {
  bool any = false, grew = true;
  while (grew && *ok) {
    grew = false;
    mark_region(c, top);
    for (size_t i = 0; i < c->n && *ok; i++) {
      const UOp *x = c->order[i];
      uint32_t at = num_of(c, x);
      if (x == top || !c->region[at] || !is_cut(c, x) || nodemap_find(roots, x) != NODEMAP_NONE || schedule_view_buffer(x) ||
          x->op == UJ_OP_SCATTER) /* a kernel of its own, always */
        continue;
      if (holds_reduce(c, x)) c->set[at] = 1, *ok = cuts_set(cuts, x, false), any = grew = true;
    }
  }
  return any;
}

/* ---- the users of each node, for the alone check ---- */

/* The graph's nodes (toposorted, numbered by place) and, for each, the
 * nodes that read it: users[first[k] .. first[k + 1]). */
typedef struct Users {
  Topo t;
  size_t *first;
  const UOp **users;
} Users;

static void users_free(Users *g) {
  topo_free(&g->t);
  free(g->first), free(g->users);
  memset(g, 0, sizeof *g);
}

static bool users_make(Ctx *ctx, const UOp *sink, Users *g) {
  *g = (Users){0};
  if (!topo_make(ctx, sink, &g->t)) return false;
  size_t n = g->t.n, edges = 0;
  g->first = calloc(n + 2, sizeof *g->first);
  for (size_t k = 0; g->first && k < n; k++) {
    edges += g->t.nodes[k]->nsrc;
    for (uint32_t i = 0; i < g->t.nodes[k]->nsrc; i++) g->first[topo_at(&g->t, g->t.nodes[k]->src[i]) + 2]++;
  }
  g->users = g->first ? malloc((edges ? edges : 1) * sizeof *g->users) : NULL;
  if (!g->users) return users_free(g), ctx_set_error(ctx, "schedule: out of memory"), false;
  for (size_t k = 2; k < n + 2; k++) g->first[k] += g->first[k - 1]; /* first[k + 1]: where k's users go, then end */
  for (size_t k = 0; k < n; k++)
    for (uint32_t i = 0; i < g->t.nodes[k]->nsrc; i++) g->users[g->first[topo_at(&g->t, g->t.nodes[k]->src[i]) + 1]++] = g->t.nodes[k];
  return true;
}

/* Whether nothing computed in top's kernel (region[], marked) but top is
 * read from outside it: each of its nodes, cut ones aside, has all its
 * users inside (and none is the sink). */
static bool alone(const Cone *c, const UOp *top, const UOp *sink, const Users *g) {
  for (size_t k = 0; k < c->n; k++) {
    const UOp *x = c->nodes[k];
    if (!c->region[k] || x == top || is_cut(c, x)) continue;
    uint32_t at = topo_at(&g->t, x);
    for (size_t i = g->first[at]; i < g->first[at + 1]; i++) {
      uint32_t in = num_of(c, g->users[i]);
      if (g->users[i] == sink || in == NODEMAP_NONE || !c->region[in]) return false;
    }
  }
  return true;
}

/* ---- the trial kernel ---- */

/* A cut node read by a trial kernel: a placeholder BUFFER (id -1 - the
 * node's id: stage_gathered maps it back). */
static const UOp *placeholder(Ctx *ctx, const UOp *u, const char *device) {
  int64_t arg[2] = {-1 - (int64_t)u->id, shape_numel(u->shape, u->ndim)};
  DType p = uj_dtype_ptr((uj_scalar)u->dtype.scalar, u->dtype.lanes, UJ_AS_GLOBAL);
  const UOp *b = uop_new(ctx, UJ_OP_BUFFER, p, NULL, 0, (Arg){device, arg, 2});
  return b ? uop_new(ctx, UJ_OP_RESHAPE, u->dtype, &b, 1, (Arg){NULL, u->shape, u->ndim}) : NULL;
}

/* top's kernel as a graph: its region (marked), each cut node it reads
 * (not a buffer view) a placeholder; built sources first, so it costs the
 * region, not top's whole graph. */
static const UOp *trial_graph(Cone *c, const UOp *top, const char *device) {
  const UOp **built = calloc(c->n, sizeof *built), *out = NULL; /* by number */
  bool ok = built != NULL;
  for (size_t i = 0; ok && i < c->n; i++) {
    const UOp *u = c->order[i];
    uint32_t at = num_of(c, u);
    if (!c->region[at]) continue;
    if (u != top && is_cut(c, u) && !schedule_view_buffer(u)) {
      ok = (built[at] = placeholder(c->ctx, u, device)) != NULL;
      continue;
    }
    const UOp *small[8], **src = u->nsrc <= 8 ? small : malloc(u->nsrc * sizeof *src);
    ok = src != NULL;
    for (uint32_t k = 0; ok && k < u->nsrc; k++) { /* a source out of the region is a cut node a level further */
      uint32_t s = num_of(c, u->src[k]);
      if (s != NODEMAP_NONE && c->region[s]) src[k] = built[s];
      else src[k] = schedule_view_buffer(u->src[k]) ? u->src[k] : placeholder(c->ctx, u->src[k], device);
      ok = src[k] != NULL;
    }
    if (ok) ok = (built[at] = uop_replace_src(c->ctx, u, src, u->nsrc)) != NULL;
    if (src != small) free(src);
  }
  if (ok) out = built[num_of(c, top)];
  free(built);
  return out;
}

/* The kernel of top's region, rangeified and shaped by the heuristics;
 * *inputs: its input BUFFERs (malloc'd). */
static const UOp *trial_kernel(Cone *c, const UOp *top, const ScheduleTarget *t, const UOp ***inputs, size_t *ninputs) {
  Ctx *ctx = c->ctx;
  const UOp *x = trial_graph(c, top, ctx_intern_string(ctx, t->device, strlen(t->device)));
  const UOp *k = x ? rangeify_kernel(ctx, x, t->index_bits, inputs, ninputs) : NULL;
  OptConfig heuristics = {0};
  return k ? opt_apply(ctx, k, &t->opt, &heuristics) : NULL;
}

/* ---- the pass ---- */

/* A substitution of one node whose rebuilt users take their originals'
 * marks. */
typedef struct Follow {
  const UOp *from, *to;
  Cuts *cuts;
  bool ok;
} Follow;

static const UOp *follow(void *user, const UOp *u, const UOp *rebuilt) {
  Follow *f = user;
  const UOp *out = u == f->from ? f->to : rebuilt;
  if (out != u && out && f->ok) {
    uint32_t from = cuts_add(f->cuts, u), to = from != NODEMAP_NONE ? cuts_add(f->cuts, out) : NODEMAP_NONE;
    f->ok = to != NODEMAP_NONE;
    if (f->ok) f->cuts->cut[to] = f->cuts->cut[from], f->cuts->into[to] = f->cuts->into[from];
  }
  return out;
}

/* What the tries share: the graph, its roots and users, the cuts. */
typedef struct Fuse {
  Ctx *ctx;
  const UOp *sink;
  NodeMap roots;
  Users users;
  Cuts *cuts;
  const ScheduleTarget *target;
  KernelWalk walk; /* weighs a try's kernel */
} Fuse;

/* One try with top's cone: the set's cuts cleared and, when the kernel is
 * kept, *staged the node to put in top's place (top itself when none). A
 * kernel past SCHEDULE_KERNEL_BUDGET is not tried. */
static bool try_fuse(Fuse *f, Cone *c, const UOp *top, const UOp **staged) {
  Ctx *ctx = c->ctx;
  bool ok = true, any = online_set(c, top, &f->roots);
  if (!any) any = row_set(c, top, &f->roots, f->cuts, &ok);
  for (size_t k = 0; any && ok && k < c->n; k++)
    if (c->set[k]) ok = cuts_set(f->cuts, c->nodes[k], false);
  size_t weight = any && ok ? schedule_kernel_weight(&f->walk, f->cuts, top, SCHEDULE_KERNEL_BUDGET) : 0;
  ok = ok && weight != SIZE_MAX;
  if (any && ok) mark_region(c, top);
  bool inside = true; /* a cut taken in must land in top's kernel, not in another one that nobody checks */
  for (size_t k = 0; any && ok && k < c->n && inside; k++) inside = !c->set[k] || c->region[k];
  bool fits = any && ok && inside && weight <= SCHEDULE_KERNEL_BUDGET && alone(c, top, f->sink, &f->users);
  const UOp **inputs = NULL, *kernel = NULL;
  size_t ninputs = 0;
  if (fits) kernel = trial_kernel(c, top, f->target, &inputs, &ninputs), ok = kernel != NULL;
  bool keep = kernel && !recomputes(ctx, kernel, &ok) && ok;
  if (keep) *staged = stage_gathered(ctx, top, kernel, inputs, ninputs), ok = *staged != NULL;
  free(inputs);
  for (size_t k = 0; any && !keep && k < c->n; k++) /* a try not kept puts its cuts back */
    if (c->set[k] && !cuts_set(f->cuts, c->nodes[k], true)) ok = false;
  return ok;
}

bool schedule_fuse_online(Ctx *ctx, const UOp **sink_io, Cuts *cuts, const ScheduleTarget *t) {
  Fuse f = {.ctx = ctx, .sink = *sink_io, .roots = nodemap_make(ctx), .cuts = cuts, .target = t, .walk = {.num = nodemap_make(ctx)}};
  bool ok = users_make(ctx, f.sink, &f.users);
  for (uint32_t r = 0; ok && r < f.sink->nsrc; r++) ok = nodemap_add(&f.roots, f.sink->src[r]) != NODEMAP_NONE;
  for (size_t i = 0; ok && i < f.users.t.n; i++) { /* sources first: a softmax joins the nearest kernel that can take it */
    const UOp *top = f.users.t.nodes[i], *staged = top;
    if (top == f.sink || !cuts_is_cut(cuts, top) || top->op == UJ_OP_SCATTER) continue;
    Cone c;
    if (cone_make(ctx, cuts, top, &c, &ok)) ok = try_fuse(&f, &c, top, &staged);
    cone_free(&c);
    if (!ok || staged == top) continue;
    /* top reads a staged copy: a new node in place of top; its users are rebuilt, their marks follow */
    Follow fw = {top, staged, cuts, true};
    f.sink = graph_substitute(ctx, f.sink, follow, &fw);
    users_free(&f.users);
    ok = f.sink && fw.ok && users_make(ctx, f.sink, &f.users);
    for (i = 0; ok && i < f.users.t.n && f.users.t.nodes[i] != staged; i++) {} /* go on above the new node */
  }
  users_free(&f.users);
  nodemap_free(&f.roots);
  kernel_walk_free(&f.walk);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "schedule: out of memory");
  if (f.sink) *sink_io = f.sink;
  return ok;
}
