/* schedule.c — cutting a tensor graph into kernels (schedule.h).
 *
 *   roots ──known──> graph with computed nodes replaced by BUFFER views
 *         ──cache──> a schedule made before for this graph (cache.c), or:
 *         ──cuts───> STAGE(x) around each root and each broadcast REDUCE;
 *                    STAGE(x, B) for a root written into BUFFER B
 *         ──fuse───> cuts taken back into kernels that reduce (fuse.c)
 *         ──budget─> cuts that keep each kernel, and each value several
 *                    kernels compute, within a size (budget_cuts)
 *         ──kernels> (STAGE x) -> RESHAPE(BUFFER): x's kernel (rangeify),
 *                    made bottom-up, so producers come before consumers
 *         ──plan───> deps, levels, temps sharing slabs of memory
 * Cuts depend on a node's users, which rules do not see, so they are a
 * substitution (graph_substitute); the kernels are one rewrite rule. Every
 * step costs what the graph holds (docs/schedule.md, "Cost"): the marks
 * are by node (Cuts, a NodeMap), the fusion tries look at a bounded cone,
 * the budget's exact counts stop at the budget, the plan's walks at
 * PLAN_MAX_VISITS items. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"
#include "uop/alu.h"
#include "uop/movement.h"

typedef struct Scheduler {
  Ctx *ctx;
  int64_t *next_id;
  const ScheduleTarget *target;
  const Cuts *cuts; /* which nodes to wrap in a STAGE, and into what */
  ScheduleItem *items;
  size_t nitems, cap;
} Scheduler;

const UOp *schedule_view_buffer(const UOp *view) {
  return view && view->op == UJ_OP_RESHAPE && view->src[0]->op == UJ_OP_BUFFER ? view->src[0] : NULL;
}

/* ---- cuts ---- */

uint32_t cuts_add(Cuts *c, const UOp *u) {
  uint32_t k = nodemap_add(&c->num, u);
  if (k == NODEMAP_NONE || k < c->cap) return k;
  size_t cap = c->cap ? 2 * c->cap : 256;
  while (cap <= k) cap *= 2;
  unsigned char *cut = realloc(c->cut, cap);
  if (cut) c->cut = cut;
  const UOp **into = cut ? realloc(c->into, cap * sizeof *into) : NULL;
  if (!into) return ctx_set_error(c->num.ctx, "schedule: out of memory"), NODEMAP_NONE;
  c->into = into;
  memset(c->cut + c->cap, 0, cap - c->cap), memset(c->into + c->cap, 0, (cap - c->cap) * sizeof *c->into);
  c->cap = cap;
  return k;
}

bool cuts_is_cut(const Cuts *c, const UOp *u) {
  uint32_t k = nodemap_find(&c->num, u);
  return k != NODEMAP_NONE && c->cut[k];
}

const UOp *cuts_into(const Cuts *c, const UOp *u) {
  uint32_t k = nodemap_find(&c->num, u);
  return k == NODEMAP_NONE ? NULL : c->into[k];
}

bool cuts_set(Cuts *c, const UOp *u, bool cut) {
  uint32_t k = cuts_add(c, u);
  if (k != NODEMAP_NONE) c->cut[k] = cut;
  return k != NODEMAP_NONE;
}

void cuts_free(Cuts *c) {
  nodemap_free(&c->num);
  free(c->cut), free(c->into);
  c->cut = NULL, c->into = NULL, c->cap = 0;
}

static uint32_t at(const Cuts *c, const UOp *u) { return nodemap_find(&c->num, u); }

static bool is_tensor_reduce(const UOp *u) { return u->op == UJ_OP_REDUCE && u->nsrc == 1; }

static unsigned real_axes(const UOp *u) {
  unsigned n = 0;
  for (unsigned k = 0; k < u->ndim; k++) n += u->shape[k] != 1;
  return n;
}

/* A RESHAPE that merges axes a PERMUTE reordered (attention's heads put
 * back side by side, (B, H, T, E) -> (B, T, H·E)): an element's index
 * then takes a division and a modulo per axis, and neighbouring elements
 * of a row are not neighbours in memory. Read by a matmul (broadcast), it
 * is computed again for every row of the other operand, with no vector
 * loads; in a buffer of its own it is computed once and read in rows. */
static bool merges_permuted(const UOp *u) {
  return u->op == UJ_OP_RESHAPE && u->src[0]->op == UJ_OP_PERMUTE && real_axes(u) < real_axes(u->src[0]);
}

bool schedule_is_costly(const UOp *u) {
  switch (u->op) {
  case UJ_OP_EXP2: case UJ_OP_LOG2: case UJ_OP_SIN: case UJ_OP_SQRT: case UJ_OP_RECIP: case UJ_OP_FDIV: return true;
  default: return false;
  }
}

enum { BROADCAST_MIN = 8 };    /* an EXPAND by less (a pair of rows) leaves its value in */
enum { BROADCAST_BUDGET = 8 }; /* a broadcast value weighing more is cut */

/* Sources first: the value an EXPAND broadcasts by BROADCAST_MIN or more
 * (through movement ops: what a matmul reads of an operand), when it is an
 * ALU op that is not cut and its kernel weighs more than BROADCAST_BUDGET
 * (schedule_kernel_weight), is cut. Left in, it is computed again for
 * every block of the broadcast axis (a GEMM's column blocks): a GELU's
 * gradient inside the next GEMM's rows took 30 scalar ops for each of its
 * 16 multiply-adds a column block, the residual stream and a layernorm
 * under a weight gradient more; in a buffer of its own it is computed
 * once and read as a load. A relu or a bias (weight 2 or 3) stays in.
 * false (error set) when out of memory. */
static bool cut_costly_broadcasts(Ctx *ctx, const UOp *const *nodes, size_t n, Cuts *c) {
  KernelWalk w = {.num = nodemap_make(ctx)};
  bool ok = true;
  for (size_t k = 0; ok && k < n; k++) {
    const UOp *e = nodes[k], *v = e->op == UJ_OP_EXPAND ? e->src[0] : NULL;
    while (v && op_has((Op)v->op, OPF_MOVEMENT) && !c->cut[at(c, v)]) v = v->src[0];
    if (!v || !op_has((Op)v->op, OPF_ALU) || c->cut[at(c, v)] ||
        shape_numel(e->shape, e->ndim) < BROADCAST_MIN * shape_numel(e->src[0]->shape, e->src[0]->ndim))
      continue;
    size_t weight = schedule_kernel_weight(&w, c, v, BROADCAST_BUDGET);
    ok = weight != SIZE_MAX;
    if (ok && weight > BROADCAST_BUDGET) c->cut[at(c, v)] = 1;
  }
  kernel_walk_free(&w);
  return ok;
}

/* Users before sources: a node is broadcast when an EXPAND reads it, or
 * a node that is broadcast and not cut does. A broadcast REDUCE is cut,
 * and so is a broadcast costly op (schedule_is_costly) and a broadcast
 * RESHAPE merging permuted axes (merges_permuted), and a REDUCE that a PAD
 * reads (the gradient of a tensor cut in parts, c_attn's q, k and v, is a
 * sum of padded GEMMs: fused, one kernel ran the three reductions element
 * by element with masked loads). Then sources first: a node
 * holding a REDUCE that is not cut, read by two nodes, is cut (attention's
 * scaled scores: their max and their exp would each compute them). bcast
 * bit 1: broadcast; bit 2: holds a REDUCE not cut. The sink's nodes are
 * numbered in c (its `into` set for the roots given one) in topological
 * order. */
static bool find_cuts(Ctx *ctx, const UOp *sink, const UOp *const *into, Cuts *c) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, sink, &nodes);
  unsigned char *bcast = n ? calloc(n, 1) : NULL, *users = n ? calloc(n, 1) : NULL; /* users: distinct, up to 2 */
  bool ok = bcast && users && nodemap_reserve(&c->num, n);
  for (size_t k = 0; ok && k < n; k++) ok = cuts_add(c, nodes[k]) == k;
  if (!ok) {
    free(nodes), free(bcast), free(users);
    return ctx_set_error(ctx, "schedule: out of memory"), false;
  }
  unsigned char *cut = c->cut;
  for (uint32_t i = 0; into && i < sink->nsrc; i++) c->into[at(c, sink->src[i])] = into[i];
  for (size_t k = 0; k < n; k++)
    for (uint32_t i = 0; nodes[k] != sink && i < nodes[k]->nsrc; i++) {
      bool again = false; /* a source read twice by one user counts once */
      for (uint32_t j = 0; j < i && !again; j++) again = nodes[k]->src[j] == nodes[k]->src[i];
      if (!again && users[at(c, nodes[k]->src[i])] < 2) users[at(c, nodes[k]->src[i])]++;
    }
  for (uint32_t i = 0; i < sink->nsrc; i++) { /* a root that is a buffer needs no kernel (unless it goes elsewhere) */
    const UOp *r = sink->src[i], *b = schedule_view_buffer(r), *to = c->into[at(c, r)];
    cut[at(c, r)] = !b || (to && to != b);
  }
  for (size_t k = n; k-- > 0;) {
    const UOp *u = nodes[k];
    if ((is_tensor_reduce(u) || schedule_is_costly(u) || merges_permuted(u)) && bcast[k]) cut[k] = 1;
    if (u->op == UJ_OP_SCATTER) cut[k] = 1; /* its kernel loops over its values, not its elements */
    if (u->op == UJ_OP_PAD) { /* a padded reduction is cut: fused, it would run for the pad's zeros too */
      const UOp *v = u->src[0];
      while (op_has((Op)v->op, OPF_MOVEMENT) && !cut[at(c, v)]) v = v->src[0];
      if (is_tensor_reduce(v)) cut[at(c, v)] = 1;
    }
    for (uint32_t i = 0; u != sink && i < u->nsrc; i++)
      bcast[at(c, u->src[i])] |= u->op == UJ_OP_EXPAND || (bcast[k] && !cut[k]); /* bit 1 only so far */
  }
  if (!cut_costly_broadcasts(ctx, nodes, n, c)) {
    free(nodes), free(bcast), free(users);
    return false;
  }
  /* sources first: a node that holds a fused REDUCE and has two users is cut, or each computes the reduction */
  for (size_t k = 0; k < n; k++) {
    const UOp *u = nodes[k];
    bool holds = is_tensor_reduce(u);
    for (uint32_t i = 0; u != sink && i < u->nsrc && !holds; i++) holds = bcast[at(c, u->src[i])] & 2 && !cut[at(c, u->src[i])];
    if (holds && users[k] > 1 && u != sink) cut[k] = 1;
    bcast[k] |= holds ? 2 : 0;
  }
  free(nodes), free(bcast), free(users);
  return true;
}

/* ---- kernel size ---- */

unsigned schedule_weight(const UOp *u) {
  switch (u->op) {
  case UJ_OP_EXP2: case UJ_OP_LOG2: case UJ_OP_SIN: return 32;
  case UJ_OP_BUFFER: case UJ_OP_CONST: case UJ_OP_DEFINE_VAR: return 0;
  default: return 1;
  }
}

enum { WEIGHT_CAP = 1 << 30 }; /* estimates saturate here (shared nodes counted on every path grow fast) */

void kernel_walk_free(KernelWalk *w) {
  nodemap_free(&w->num);
  free(w->stamp), free(w->stack), free(w->scopes);
  memset(w, 0, sizeof *w);
}

/* Room for one more on a stack of UOp pointers; false when out of memory. */
static bool room(const UOp ***stack, size_t n, size_t *cap) {
  if (n < *cap) return true;
  size_t grown = *cap ? 2 * *cap : 256;
  const UOp **s = realloc(*stack, grown * sizeof *s);
  if (!s) return false;
  *stack = s, *cap = grown;
  return true;
}

/* Whether u was met in this scope already; marks it (*ok false when out
 * of memory). */
static bool met(KernelWalk *w, const UOp *u, bool *ok) {
  uint32_t k = nodemap_add(&w->num, u);
  if (k != NODEMAP_NONE && k >= w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 256;
    while (cap <= k) cap *= 2;
    uint32_t *stamp = realloc(w->stamp, cap * sizeof *stamp);
    if (!stamp) k = NODEMAP_NONE;
    else memset(stamp + w->cap, 0, (cap - w->cap) * sizeof *stamp), w->stamp = stamp, w->cap = cap;
  }
  if (k == NODEMAP_NONE) return *ok = false, true;
  bool before = w->stamp[k] == w->walk;
  w->stamp[k] = w->walk;
  return before;
}

/* The walk of schedule_kernel_weight; with loads_of, what it counts is
 * instead the full-size reads (BUFFERs and cut nodes of at least
 * loads_of elements), and it stops after `limit` nodes too. */
static size_t kernel_walk(KernelWalk *w, const Cuts *cuts, const UOp *top, size_t limit, int64_t loads_of) {
  size_t total = 0, nscopes = 0, sp = 0, seen = 0;
  bool ok = room(&w->scopes, 0, &w->cap_scopes);
  if (ok) w->scopes[nscopes++] = top;
  while (ok && nscopes > 0 && total <= limit) { /* a scope: top's, or a REDUCE's value */
    w->walk++;
    const UOp *x = w->scopes[--nscopes];
    ok = room(&w->stack, 0, &w->cap_stack);
    if (ok && !met(w, x, &ok)) w->stack[sp++] = x;
    while (ok && sp > 0 && total <= limit) {
      const UOp *u = w->stack[--sp];
      w->num.ctx->work++;
      bool read = u != top && cuts_is_cut(cuts, u);
      if (loads_of) {
        int64_t n = u->op == UJ_OP_BUFFER ? u->ints[1] : shape_numel(u->shape, u->ndim);
        read = (read || u->op == UJ_OP_BUFFER) && n >= loads_of;
        total += read;
        if (++seen > limit) break;
        if (u != top && cuts_is_cut(cuts, u)) continue;
      } else if (read) {
        total += 1;
        continue;
      } else total += schedule_weight(u);
      if (is_tensor_reduce(u)) {
        ok = room(&w->scopes, nscopes, &w->cap_scopes);
        if (ok) w->scopes[nscopes++] = u->src[0];
        continue;
      }
      for (uint32_t i = 0; ok && i < u->nsrc; i++)
        if (!met(w, u->src[i], &ok) && (ok = room(&w->stack, sp, &w->cap_stack))) w->stack[sp++] = u->src[i];
    }
    sp = 0;
  }
  if (!ok) ctx_set_error(w->num.ctx, "schedule: out of memory");
  return ok ? total : SIZE_MAX;
}

size_t schedule_kernel_weight(KernelWalk *w, const Cuts *cuts, const UOp *top, size_t limit) {
  return kernel_walk(w, cuts, top, limit, 0);
}

/* The kernels' sizes, sources first: est, by place in t, is the weight of
 * a node's kernel were it cut, an upper bound from its sources' (shared
 * nodes counted on every path), counted exactly when over the budget. */
typedef struct Budget {
  Topo t;
  Cuts *cuts;
  uint32_t *est;
  KernelWalk walk;
} Budget;

/* What source s adds to its user's kernel: a load when it is cut. */
static uint32_t contrib(const Budget *b, const UOp *s) {
  return cuts_is_cut(b->cuts, s) ? 1 : b->est[topo_at(&b->t, s)];
}

/* Whether s may be cut (written out): it computes something (an ALU op or
 * a REDUCE: no view, no movement) and is no bigger than its largest source
 * that is not an EXPAND (no broadcast product, as a matmul's, which no
 * program holds as a tensor). */
static bool cuttable(const Cuts *cuts, const UOp *s) {
  if (cuts_is_cut(cuts, s) || !(op_has((Op)s->op, OPF_ALU) || is_tensor_reduce(s))) return false;
  int64_t n = shape_numel(s->shape, s->ndim);
  for (uint32_t i = 0; i < s->nsrc; i++)
    if (s->src[i]->op != UJ_OP_EXPAND && shape_numel(s->src[i]->shape, s->src[i]->ndim) >= n) return true;
  return false;
}

/* u's estimate from its sources' (each distinct one once); when over the
 * budget, counted exactly, and its heaviest sources cut until it fits (or
 * none can be). Then, when u is in several kernels (shared) and weighs
 * more than SCHEDULE_SHARED_BUDGET, u itself is cut: each of them would
 * compute it again. false when out of memory. */
static bool budget_node(Budget *b, const UOp *u, bool shared) {
  uint64_t e = schedule_weight(u);
  for (uint32_t i = 0; i < u->nsrc; i++) {
    bool again = false;
    for (uint32_t j = 0; j < i && !again; j++) again = u->src[j] == u->src[i];
    if (!again) e += contrib(b, u->src[i]);
  }
  if (e > SCHEDULE_KERNEL_BUDGET) e = schedule_kernel_weight(&b->walk, b->cuts, u, SCHEDULE_KERNEL_BUDGET);
  while (e > SCHEDULE_KERNEL_BUDGET && e != SIZE_MAX) {
    const UOp *heaviest = NULL;
    for (uint32_t i = 0; i < u->nsrc; i++)
      if (cuttable(b->cuts, u->src[i]) && (!heaviest || contrib(b, u->src[i]) > contrib(b, heaviest))) heaviest = u->src[i];
    if (!heaviest) break; /* nothing to cut: the kernel stays big */
    if (!cuts_set(b->cuts, heaviest, true)) return false;
    e = schedule_kernel_weight(&b->walk, b->cuts, u, SCHEDULE_KERNEL_BUDGET);
  }
  if (shared && e > SCHEDULE_SHARED_BUDGET && e != SIZE_MAX && cuttable(b->cuts, u)) {
    e = schedule_kernel_weight(&b->walk, b->cuts, u, SCHEDULE_SHARED_BUDGET);
    if (e > SCHEDULE_SHARED_BUDGET && e != SIZE_MAX && !cuts_set(b->cuts, u, true)) return false;
  }
  /* a value read in several kernels that reads more than SCHEDULE_SHARED_LOADS
   * arrays of its own size (a transformer's residual stream, the sum of every
   * layer's outputs so far) is written once, not summed again in each (n
   * arrays take n - 1 ops at least: a lighter value reads too few) */
  if (shared && e != SIZE_MAX && e >= SCHEDULE_SHARED_LOADS && cuttable(b->cuts, u) && !cuts_is_cut(b->cuts, u)) {
    size_t loads = kernel_walk(&b->walk, b->cuts, u, SCHEDULE_SHARED_BUDGET, shape_numel(u->shape, u->ndim));
    if (loads == SIZE_MAX) return false;
    if (loads > SCHEDULE_SHARED_LOADS && !cuts_set(b->cuts, u, true)) return false;
  }
  if (e == SIZE_MAX) return false;
  b->est[topo_at(&b->t, u)] = e < WEIGHT_CAP ? (uint32_t)e : WEIGHT_CAP;
  return true;
}

enum { OWNER_NONE = UINT32_MAX, OWNER_MANY = UINT32_MAX - 1 };

/* Users first: by place, the cut node whose kernel holds each node
 * (OWNER_MANY when several do: the node is computed in each). */
static uint32_t *find_owners(const Budget *b, const UOp *sink) {
  uint32_t *owner = malloc((b->t.n ? b->t.n : 1) * sizeof *owner);
  for (size_t k = 0; owner && k < b->t.n; k++) owner[k] = OWNER_NONE;
  for (size_t k = b->t.n; owner && k-- > 0;) {
    const UOp *u = b->t.nodes[k];
    if (u == sink) continue;
    uint32_t mine = cuts_is_cut(b->cuts, u) ? (uint32_t)k : owner[k];
    for (uint32_t i = 0; i < u->nsrc; i++) {
      uint32_t *o = &owner[topo_at(&b->t, u->src[i])];
      *o = *o == OWNER_NONE ? mine : *o == mine ? mine : OWNER_MANY;
    }
  }
  return owner;
}

/* Cuts that keep kernels small, sources first: a node whose kernel would
 * weigh more than SCHEDULE_KERNEL_BUDGET has its heaviest sources cut, and
 * a node computed in several kernels is cut when it weighs more than
 * SCHEDULE_SHARED_BUDGET. A chain of n ops becomes n / budget kernels, a
 * chain of n kernels that each read the last one's value no longer
 * computes all of it again (n^2); a graph that fits is left as it is.
 * Linear: the exact counts stop at the budget. */
static bool budget_cuts(Ctx *ctx, const UOp *sink, Cuts *cuts) {
  Budget b = {.cuts = cuts, .walk = {.num = nodemap_make(ctx)}};
  bool ok = topo_make(ctx, sink, &b.t);
  b.est = ok ? calloc(b.t.n, sizeof *b.est) : NULL;
  uint32_t *owner = b.est ? find_owners(&b, sink) : NULL;
  ok = owner != NULL;
  for (size_t k = 0; ok && k < b.t.n; k++) ok = b.t.nodes[k] == sink || budget_node(&b, b.t.nodes[k], owner[k] == OWNER_MANY);
  topo_free(&b.t), free(b.est), free(owner), kernel_walk_free(&b.walk);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "schedule: out of memory");
  return ok;
}

static const UOp *wrap_cut(void *user, const UOp *u, const UOp *rebuilt) {
  Scheduler *s = user;
  const UOp *src[2] = {rebuilt, cuts_into(s->cuts, u)};
  return cuts_is_cut(s->cuts, u) ? uop_new(s->ctx, UJ_OP_STAGE, rebuilt->dtype, src, src[1] ? 2 : 1, arg_none()) : rebuilt;
}

/* ---- kernels ---- */

/* "R_..." when the kernel as rangeify made it reduces (the optimizer may
 * turn a REDUCE into loops over memory: stream.c), "S_..." (the values'
 * shape) when it scatters, else "E_...". */
static void item_name(Ctx *ctx, ScheduleItem *it, const UOp *kernel, const UOp *t) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  bool reduce = false;
  for (size_t i = 0; i < n; i++) reduce |= nodes[i]->op == UJ_OP_REDUCE;
  free(nodes);
  bool scatter = t->op == UJ_OP_SCATTER;
  if (scatter) t = t->src[0];
  size_t at = (size_t)snprintf(it->name, sizeof it->name, "%c", scatter ? 'S' : reduce ? 'R' : 'E');
  for (unsigned k = 0; k < t->ndim && at < sizeof it->name; k++)
    at += (size_t)snprintf(it->name + at, sizeof it->name - at, "_%lld", (long long)t->shape[k]);
}

static const UOp *view_of(Ctx *ctx, const UOp *buffer, const UOp *like) {
  return uop_new(ctx, UJ_OP_RESHAPE, like->dtype, &buffer, 1, (Arg){NULL, like->shape, like->ndim});
}

/* A new item: x's kernel, writing `output` (NULL: a new BUFFER). */
static ScheduleItem *add_item(Scheduler *s, const UOp *x, const UOp *output) {
  Ctx *ctx = s->ctx;
  if (s->nitems == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    ScheduleItem *items = realloc(s->items, cap * sizeof *items);
    if (!items) return ctx_set_error(ctx, "schedule: out of memory"), NULL;
    s->items = items, s->cap = cap;
  }
  ScheduleItem *it = &s->items[s->nitems];
  memset(it, 0, sizeof *it);
  it->kernel = rangeify_kernel(ctx, x, s->target->index_bits, &it->inputs, &it->ninputs);
  const UOp *raw = it->kernel;
  if (raw) it->kernel = opt_kernel(ctx, raw, &s->target->opt); /* shaped for the target (lib/opt) */
  if (!it->kernel) return free(it->inputs), NULL;
  s->nitems++;
  if (!output) {
    int64_t arg[2] = {(*s->next_id)++, shape_numel(x->shape, x->ndim)};
    DType p = uj_dtype_ptr((uj_scalar)x->dtype.scalar, x->dtype.lanes, UJ_AS_GLOBAL);
    output = uop_new(ctx, UJ_OP_BUFFER, p, NULL, 0, (Arg){ctx_intern_string(ctx, s->target->device, strlen(s->target->device)), arg, 2});
  }
  it->output = output;
  item_name(ctx, it, raw, x);
  return it;
}

/* Zeros of x's shape and dtype, as a tensor graph. */
static const UOp *zeros_like(Ctx *ctx, const UOp *x) {
  int64_t ones[255];
  for (unsigned k = 0; k < x->ndim; k++) ones[k] = 1;
  const UOp *z = uop_const_word(ctx, x->dtype, 0); /* +0.0 for floats */
  z = uop_new(ctx, UJ_OP_RESHAPE, x->dtype, &z, 1, (Arg){NULL, ones, x->ndim});
  return uop_new(ctx, UJ_OP_EXPAND, x->dtype, &z, 1, (Arg){NULL, x->shape, x->ndim});
}

/* A SCATTER x into `output` (NULL: a new BUFFER): a kernel writes zeros
 * there, then x's kernel adds its values in. The BUFFER, or NULL. */
static const UOp *add_scatter(Scheduler *s, const UOp *x, const UOp *output) {
  ScheduleItem *zeros = add_item(s, zeros_like(s->ctx, x), output);
  const UOp *into = zeros ? zeros->output : NULL;
  return into && add_item(s, x, into) ? into : NULL;
}

/* Whether BUFFER b is under x (x reads it). */
static bool reads_buffer(Ctx *ctx, const UOp *x, const UOp *b) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) found = nodes[i] == b;
  free(nodes);
  return found;
}

static const UOp *rw_stage(Rewriter *rw, const UOp *root, const Binds *m) {
  if (schedule_view_buffer(m->x)) return m->x; /* already a buffer */
  if (m->x->op == UJ_OP_SCATTER) {
    const UOp *b = add_scatter(rw->user, m->x, NULL);
    return b ? view_of(rw->ctx, b, m->x) : NULL;
  }
  ScheduleItem *it = add_item(rw->user, m->x, NULL);
  return it ? view_of(rw->ctx, it->output, m->x) : NULL;
}

/* Whether every load through PARAM slot reads the element the kernel's
 * STORE writes (then the kernel may write where it reads). */
static bool reads_only_where_written(Ctx *ctx, const UOp *kernel, int64_t slot, bool *ok) {
  const UOp **nodes = NULL, *at = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  *ok = n > 0;
  for (size_t i = 0; i < n; i++)
    if (nodes[i]->op == UJ_OP_STORE) at = nodes[i]->src[0]->src[1];
  bool same = at != NULL;
  for (size_t i = 0; same && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_INDEX && u->src[0]->op == UJ_OP_PARAM && u->src[0]->ints[0] == slot) same = u->src[1] == at;
  }
  free(nodes);
  return same;
}

typedef struct Renumber {
  Ctx *ctx;
  int64_t slot; /* becomes 0; the slots above it move down one */
} Renumber;

static const UOp *renumber_param(void *user, const UOp *u, const UOp *rebuilt) {
  const Renumber *r = user;
  if (u->op != UJ_OP_PARAM || u->ints[0] < r->slot) return rebuilt;
  int64_t slot = u->ints[0] == r->slot ? 0 : u->ints[0] - 1;
  return uop_new(r->ctx, UJ_OP_PARAM, u->dtype, NULL, 0, (Arg){NULL, &slot, 1});
}

/* STAGE(x, target): x written into an existing BUFFER. A kernel that reads
 * the target only at the element it writes runs in place (its loads go
 * through the output's PARAM); one that reads it elsewhere (a transpose,
 * a reduction) would see its own writes, so x goes to a new buffer first
 * and a second kernel copies it into the target. */
static const UOp *rw_stage_into(Rewriter *rw, const UOp *root, const Binds *m) {
  Scheduler *s = rw->user;
  const UOp *x = m->x, *target = m->y;
  if (schedule_view_buffer(x) == target) return x; /* there already */
  if (x->op == UJ_OP_SCATTER && !reads_buffer(rw->ctx, x, target)) /* zeros, then additions, in place */
    return add_scatter(s, x, target) ? view_of(rw->ctx, target, x) : NULL;
  if (x->op == UJ_OP_SCATTER) { /* it reads the target: into a new buffer, then copied */
    const UOp *b = add_scatter(s, x, NULL);
    return b && add_item(s, view_of(rw->ctx, b, x), target) ? view_of(rw->ctx, target, x) : NULL;
  }
  ScheduleItem *it = add_item(s, x, target);
  if (!it) return NULL;
  size_t alias = 0;
  while (alias < it->ninputs && it->inputs[alias] != target) alias++;
  if (alias == it->ninputs) return view_of(rw->ctx, target, x);
  bool ok;
  if (reads_only_where_written(rw->ctx, it->kernel, (int64_t)alias + 1, &ok)) {
    Renumber r = {rw->ctx, (int64_t)alias + 1};
    it->kernel = graph_substitute(rw->ctx, it->kernel, renumber_param, &r);
    memmove(it->inputs + alias, it->inputs + alias + 1, (it->ninputs - alias - 1) * sizeof *it->inputs);
    it->ninputs--;
    return it->kernel ? view_of(rw->ctx, target, x) : NULL;
  }
  if (!ok) return NULL;
  int64_t arg[2] = {(*s->next_id)++, shape_numel(x->shape, x->ndim)}; /* x into a new buffer, then copied */
  it->output = uop_new(rw->ctx, UJ_OP_BUFFER, target->dtype, NULL, 0, (Arg){target->name, arg, 2});
  ScheduleItem *copy = add_item(s, view_of(rw->ctx, it->output, x), target);
  return copy ? view_of(rw->ctx, target, x) : NULL;
}

static const Rule stage_rules[] = {
  {"(STAGE x)", rw_stage},        // STAGE(x) -> RESHAPE(BUFFER): a kernel writes x there
  {"(STAGE x y)", rw_stage_into}, // STAGE(x, B) -> RESHAPE(B): a kernel writes x into B
};

/* ---- the plan ---- */

enum { PLAN_MAX_VISITS = 64 };     /* items a walk down the deps looks at */
enum { PLAN_MAX_CANDIDATES = 8 };  /* dead slabs an item tries, the latest first */

/* What the plan knows, linear in the items and their inputs: each
 * BUFFER's producer and readers (by its number in bufs), each item's last
 * reader, and a stamp per item for the walks down the deps. */
typedef struct Plan {
  Schedule *s;
  NodeMap bufs;
  long *producer;          /* by buffer: the first item that writes it, or -1 */
  size_t *first, *readers; /* by buffer: the items that read it, readers[first[b] .. first[b + 1]) */
  size_t *last;            /* by item: the last item that reads its output (itself when none) */
  uint32_t *stamp, walk;   /* by item */
  size_t *stack;
} Plan;

static void plan_free(Plan *p) {
  nodemap_free(&p->bufs);
  free(p->producer), free(p->first), free(p->readers), free(p->last), free(p->stamp), free(p->stack);
}

/* Numbers every BUFFER written or read; lists producers and readers. */
static bool plan_index(Plan *p) {
  const Schedule *s = p->s;
  size_t n = s->nitems, edges = 0;
  for (size_t i = 0; i < n; i++) {
    if (nodemap_add(&p->bufs, s->items[i].output) == NODEMAP_NONE) return false;
    for (size_t k = 0; k < s->items[i].ninputs; k++, edges++)
      if (nodemap_add(&p->bufs, s->items[i].inputs[k]) == NODEMAP_NONE) return false;
  }
  size_t nb = p->bufs.count;
  p->producer = malloc((nb + 1) * sizeof *p->producer), p->first = calloc(nb + 2, sizeof *p->first);
  p->readers = malloc((edges + 1) * sizeof *p->readers), p->last = malloc((n + 1) * sizeof *p->last);
  p->stamp = calloc(n + 1, sizeof *p->stamp), p->stack = malloc((n + 1) * sizeof *p->stack);
  if (!p->producer || !p->first || !p->readers || !p->last || !p->stamp || !p->stack) return false;
  for (size_t b = 0; b < nb; b++) p->producer[b] = -1;
  for (size_t i = n; i-- > 0;) p->producer[nodemap_find(&p->bufs, s->items[i].output)] = (long)i; /* the first wins */
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < s->items[i].ninputs; k++) p->first[nodemap_find(&p->bufs, s->items[i].inputs[k]) + 2]++;
  for (size_t b = 2; b < nb + 2; b++) p->first[b] += p->first[b - 1];
  for (size_t i = 0; i < n; i++) /* each buffer's readers in item order */
    for (size_t k = 0; k < s->items[i].ninputs; k++) p->readers[p->first[nodemap_find(&p->bufs, s->items[i].inputs[k]) + 1]++] = i;
  for (size_t i = 0; i < n; i++) {
    uint32_t b = nodemap_find(&p->bufs, s->items[i].output);
    p->last[i] = i;
    for (size_t r = p->first[b]; r < p->first[b + 1]; r++)
      if (p->readers[r] > p->last[i]) p->last[i] = p->readers[r];
  }
  return true;
}

/* Marks (stamp == the walk) the items j waits for, directly or through
 * others, down to item `lowest` (deps point to earlier items): a walk down
 * from j, each item once, expanding at most PLAN_MAX_VISITS of them (an
 * item past that is taken as not waited for, which only gives up a reuse). */
static uint32_t walk_down(Plan *p, size_t j, size_t lowest) {
  uint32_t walk = ++p->walk;
  size_t top = 0, visits = 0;
  p->stack[top++] = j, p->stamp[j] = walk;
  while (top > 0 && visits++ < PLAN_MAX_VISITS) {
    const ScheduleItem *it = &p->s->items[p->stack[--top]];
    for (size_t k = 0; k < it->ndeps; k++) {
      size_t d = it->deps[k];
      if (d >= lowest && p->stamp[d] != walk) p->stamp[d] = walk, p->stack[top++] = d;
    }
  }
  return walk;
}

/* Whether j already waits for every item that wrote or read item o's
 * output: then j may reuse that memory without ordering anything new, so
 * independent kernels stay independent. One walk for all of them. */
static bool after_users_of(Plan *p, size_t j, size_t o) {
  uint32_t walk = walk_down(p, j, o);
  if (p->stamp[o] != walk) return false;
  uint32_t b = nodemap_find(&p->bufs, p->s->items[o].output);
  for (size_t r = p->first[b]; r < p->first[b + 1]; r++)
    if (p->readers[r] > o && p->readers[r] < j && p->stamp[p->readers[r]] != walk) return false;
  return true;
}

/* Temps take the smallest slab whose occupant is dead (its last reader is
 * an item this one waits for anyway), growing one if none is big enough,
 * else a new one. A slab is a candidate once its occupant's last reader
 * has run (the items in order); an item tries the latest PLAN_MAX_CANDIDATES. */
static bool plan_memory(Plan *p, const NodeMap *roots) {
  Schedule *s = p->s;
  size_t n = s->nitems, ndead = 0;
  size_t *occupant = calloc(n + 1, sizeof *occupant), *dead = malloc((n + 1) * sizeof *dead);
  long *head = malloc((n + 1) * sizeof *head), *next = malloc((n + 1) * sizeof *next); /* slabs by their occupant's last reader */
  s->slab_of_item = malloc((n ? n : 1) * sizeof *s->slab_of_item);
  s->slab_bytes = calloc(n ? n : 1, sizeof *s->slab_bytes);
  bool ok = occupant && dead && head && next && s->slab_of_item && s->slab_bytes;
  for (size_t t = 0; ok && t < n; t++) head[t] = -1;
  for (size_t j = 0; ok && j < n; j++) {
    for (long k = j > 0 ? head[j - 1] : -1; k >= 0; k = next[k]) dead[ndead++] = (size_t)k;
    const UOp *out = s->items[j].output;
    s->slab_of_item[j] = -1;
    if (nodemap_find(roots, out) != NODEMAP_NONE) continue; /* a root's: memory of its own */
    long first = p->producer[nodemap_find(&p->bufs, out)];
    if (first < (long)j) { /* written before (a SCATTER's zeros): that memory */
      s->slab_of_item[j] = s->slab_of_item[first];
      continue;
    }
    size_t bytes = (size_t)out->ints[1] * elem_bytes(dt_base(out->dtype));
    long best = -1; /* a place in dead */
    for (size_t c = ndead, tried = 0; c-- > 0 && tried < PLAN_MAX_CANDIDATES; tried++) {
      size_t k = dead[c];
      if (!after_users_of(p, j, occupant[k])) continue;
      size_t kb = s->slab_bytes[k], bb = best >= 0 ? s->slab_bytes[dead[best]] : 0;
      bool fits = kb >= bytes, best_fits = best >= 0 && bb >= bytes;
      if (best < 0 || (fits && (!best_fits || kb < bb)) || (!fits && !best_fits && kb > bb)) best = (long)c;
    }
    size_t slab = best >= 0 ? dead[best] : s->nslabs++;
    if (best >= 0) dead[best] = dead[--ndead];
    if (s->slab_bytes[slab] < bytes) s->slab_bytes[slab] = bytes;
    occupant[slab] = j, s->slab_of_item[j] = (long)slab;
    next[slab] = head[p->last[j]], head[p->last[j]] = (long)slab;
  }
  free(occupant), free(dead), free(head), free(next);
  return ok;
}

static bool plan_deps(Schedule *s) {
  Plan p = {.s = s, .bufs = nodemap_make(NULL)};
  NodeMap roots = nodemap_make(NULL);
  bool ok = plan_index(&p);
  for (size_t r = 0; ok && r < s->noutputs; r++) {
    const UOp *b = schedule_view_buffer(s->outputs[r]);
    ok = !b || nodemap_add(&roots, b) != NODEMAP_NONE;
  }
  long *writer = ok ? malloc((p.bufs.count + 1) * sizeof *writer) : NULL; /* by buffer: its latest writer so far */
  ok = ok && writer;
  for (size_t b = 0; ok && b < p.bufs.count; b++) writer[b] = -1;
  for (size_t j = 0; ok && j < s->nitems; j++) { /* deps: the latest writers of the inputs and of the output, each once */
    ScheduleItem *it = &s->items[j];
    uint32_t walk = ++p.walk, out = nodemap_find(&p.bufs, it->output);
    it->deps = malloc((it->ninputs + 1) * sizeof *it->deps);
    ok = it->deps != NULL;
    for (size_t k = 0; ok && k <= it->ninputs; k++) {
      long d = writer[k < it->ninputs ? nodemap_find(&p.bufs, it->inputs[k]) : out];
      if (d >= 0 && p.stamp[d] != walk) p.stamp[d] = walk, it->deps[it->ndeps++] = (size_t)d;
    }
    writer[out] = (long)j;
  }
  free(writer);
  ok = ok && plan_memory(&p, &roots);
  for (size_t j = 0; ok && j < s->nitems; j++) {
    ScheduleItem *it = &s->items[j];
    for (size_t k = 0; k < it->ndeps; k++)
      if (s->items[it->deps[k]].level + 1 > it->level) it->level = s->items[it->deps[k]].level + 1;
  }
  plan_free(&p);
  nodemap_free(&roots);
  return ok;
}

/* ---- the whole ---- */

static const UOp *cut_and_kernel(Scheduler *st, const UOp *sink, const UOp *const *into) {
  Ctx *ctx = st->ctx;
  Cuts cuts = {.num = nodemap_make(ctx)};
  sink = schedule_split_sums(ctx, sink, st->target->opt.desc);
  bool ok = sink && find_cuts(ctx, sink, into, &cuts) && schedule_fuse_online(ctx, &sink, &cuts, st->target) &&
            budget_cuts(ctx, sink, &cuts);
  st->cuts = &cuts;
  sink = ok ? graph_substitute(ctx, sink, wrap_cut, st) : NULL;
  st->cuts = NULL;
  cuts_free(&cuts);
  RuleSet *rs = sink ? ruleset_new(ctx, stage_rules, sizeof stage_rules / sizeof *stage_rules) : NULL;
  sink = rs ? graph_rewrite(ctx, sink, rs, st) : NULL;
  ruleset_free(rs);
  return sink;
}

/* The schedule of sink (the roots, computed nodes replaced). */
static Schedule *schedule_build(Ctx *ctx, const UOp *sink, const UOp *const *into, int64_t *next_buffer_id,
                                const ScheduleTarget *target) {
  Schedule *s = calloc(1, sizeof *s);
  if (s) s->outputs = calloc(sink->nsrc ? sink->nsrc : 1, sizeof *s->outputs);
  if (!s || !s->outputs) return schedule_free(s), ctx_set_error(ctx, "schedule: out of memory"), NULL;
  Scheduler st = {ctx, next_buffer_id, target, NULL, NULL, 0, 0};
  sink = cut_and_kernel(&st, sink, into);
  s->items = st.items, s->nitems = st.nitems;
  if (!sink) return schedule_free(s), NULL;
  memcpy(s->outputs, sink->src, sink->nsrc * sizeof *s->outputs);
  s->noutputs = sink->nsrc;
  if (!plan_deps(s)) return ctx_set_error(ctx, "schedule: out of memory"), schedule_free(s), NULL;
  return s;
}

Schedule *schedule_make(Ctx *ctx, const UOp *const *roots, size_t nroots, const UOp *const *into, ReplaceFn known,
                        void *user, int64_t *next_buffer_id, const ScheduleTarget *target, ScheduleCache *cache) {
  for (size_t i = 0; i < nroots; i++)
    if (dt_is_ptr(roots[i]->dtype) || dt_is_void(roots[i]->dtype))
      return ctx_set_error(ctx, "schedule: root %zu is not a tensor", i), NULL;
  const UOp *sink = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), roots, nroots, arg_none());
  if (!sink) return ctx_set_error(ctx, "schedule: out of memory"), NULL;
  if (known) sink = graph_substitute(ctx, sink, known, user);
  if (!sink) return NULL;
  CacheKey key;
  if (cache && !schedule_cache_key(ctx, sink, into, &key)) return NULL;
  Schedule *s = cache ? schedule_cache_find(cache, ctx, &key, next_buffer_id) : NULL;
  if (!s) {
    int64_t first_id = *next_buffer_id;
    s = schedule_build(ctx, sink, into, next_buffer_id, target);
    if (s && cache) schedule_cache_put(cache, ctx, &key, s, first_id, *next_buffer_id);
  }
  if (cache) schedule_cache_key_free(&key);
  return s;
}

void schedule_free(Schedule *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nitems; i++) free(s->items[i].inputs), free(s->items[i].deps);
  free(s->items), free(s->outputs), free(s->slab_of_item), free(s->slab_bytes);
  free(s);
}
