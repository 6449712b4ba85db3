/* fuse.c — online and row fusion: a kernel that reduces after a softmax
 * (attention's matmul with v) takes in the softmax's max, sum, quotient
 * and scores, and a kernel that normalizes rows (a softmax, a layernorm)
 * its max and sum or mean and variance, which the cutting rules gave
 * kernels of their own; it keeps them when the optimized kernel computes
 * nothing again for loops it does not depend on (docs/schedule.md,
 * "Online fusion", "Row fusion").
 *
 * In: the tensor graph (a SINK of roots), the cuts find_cuts chose, and the
 * tables by node id (cut, into). Out: those cuts less the ones taken into
 * a kernel. Cut nodes are tried sources first; a try's set is the cut max,
 * the cuts above it and the cuts its kernel reads (online_set), else the
 * cuts at the kernel's edge whose kernels reduce (row_set), taken when
 * nothing they compute is read from outside the kernel. The trial kernel
 * (trial_kernel: the other cuts read as placeholder buffers) is
 * rangeified and shaped by the heuristics (lib/opt: opt_shadow makes the
 * sums that read the max run over its RANGE, the renderer runs them in one
 * loop as online softmax; opt_hoist stores a row's reductions once before
 * the loop over its outputs); it is kept when no REDUCE and no costly op in
 * it sits in a loop, of more than one step, over a RANGE it does not read.
 * A kept kernel that gathers an input reads it through a transposed copy
 * (stage_gathered): the node is then replaced in the SINK by a new one,
 * and its users, rebuilt, keep their cut and into (follow). */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "symbolic/symbolic.h"
#include "uop/movement.h"

#include "opt/opt.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"

enum { FUSE_MAX_RANGES = 64 };

static bool is_reduce(const UOp *u) { return u->op == UJ_OP_REDUCE && u->nsrc == 1; }
static bool is_max(const UOp *u) { return is_reduce(u) && !strcmp(u->name, "MAX"); }

/* Whether kernel computes a REDUCE or costly op in a loop over a RANGE
 * (more than one step) that it does not read (taken as so when the kernel
 * has more RANGEs than fit a mask); *ok false when out of memory. */
static bool recomputes(Ctx *ctx, const UOp *kernel, bool *ok) {
  const UOp **nodes = NULL, *ranges[FUSE_MAX_RANGES];
  size_t n = uop_toposort(ctx, kernel, &nodes), nranges = 0;
  uint64_t *reads = n ? calloc(ctx->nnodes, sizeof *reads) : NULL, *inside = n ? calloc(ctx->nnodes, sizeof *inside) : NULL;
  *ok = reads && inside;
  bool again = false;
  for (size_t i = 0; *ok && i < n && !again; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_RANGE) {
      if (nranges == FUSE_MAX_RANGES) again = true;
      else ranges[nranges] = u, reads[u->id] = 1ull << nranges++;
      continue;
    }
    uint64_t bound = 0;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      if (u->op == UJ_OP_REDUCE && k > 0) bound |= reads[u->src[k]->id];
      else if (u->op != UJ_OP_END || k > 0) reads[u->id] |= reads[u->src[k]->id];
    }
    reads[u->id] &= ~bound; /* a REDUCE's own RANGEs are bound in it */
  }
  for (size_t i = n; *ok && !again && i-- > 0;) { /* users first: the loops around each node */
    const UOp *u = nodes[i];
    uint64_t around = inside[u->id];
    if (u->op == UJ_OP_END) around |= reads[u->src[0]->id];
    for (uint32_t k = 0; k < u->nsrc; k++) {
      uint64_t more = around;
      if (u->op == UJ_OP_REDUCE && k == 0)
        for (uint32_t j = 1; j < u->nsrc; j++) more |= reads[u->src[j]->id];
      inside[u->src[k]->id] |= more;
    }
  }
  for (size_t i = 0; *ok && i < n && !again; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_REDUCE && !schedule_is_costly(u)) continue;
    uint64_t own = 0;
    for (uint32_t k = 1; u->op == UJ_OP_REDUCE && k < u->nsrc; k++) own |= reads[u->src[k]->id];
    uint64_t idle = inside[u->id] & ~own & ~reads[u->id];
    for (size_t r = 0; r < nranges && !again; r++) {
      const UOp *b = ranges[r]->src[0];
      again = idle >> r & 1 && !(b->op == UJ_OP_CONST && (int64_t)uop_const_value(b) <= 1);
    }
  }
  free(nodes), free(reads), free(inside);
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

/* Whether root's graph fuses into one kernel that recomputes nothing. */
/* The kernel of node top with the nodes cut[] marks (other than top)
 * read as buffers (placeholder BUFFERs, id -1 - node id: stage_gathered
 * maps them back), rangeified and shaped by the heuristics; *inputs: its
 * input BUFFERs (malloc'd). */
typedef struct Trial {
  Ctx *ctx;
  const unsigned char *cut;
  const UOp *top;
  const char *device;
} Trial;

static const UOp *as_buffer(void *user, const UOp *u, const UOp *rebuilt) {
  const Trial *t = user;
  if (u == t->top || !t->cut[u->id] || schedule_view_buffer(u)) return rebuilt;
  int64_t arg[2] = {-1 - (int64_t)u->id, shape_numel(u->shape, u->ndim)};
  DType p = uj_dtype_ptr((uj_scalar)u->dtype.scalar, u->dtype.lanes, UJ_AS_GLOBAL);
  const UOp *b = uop_new(t->ctx, UJ_OP_BUFFER, p, NULL, 0, (Arg){t->device, arg, 2});
  return b ? uop_new(t->ctx, UJ_OP_RESHAPE, u->dtype, &b, 1, (Arg){NULL, u->shape, u->ndim}) : NULL;
}

static const UOp *trial_kernel(Ctx *ctx, const UOp *top, const unsigned char *cut, const ScheduleTarget *t,
                               const UOp ***inputs, size_t *ninputs) {
  Trial tr = {ctx, cut, top, ctx_intern_string(ctx, t->device, strlen(t->device))};
  const UOp *x = graph_substitute(ctx, top, as_buffer, &tr);
  const UOp *k = x ? rangeify_kernel(ctx, x, t->index_bits, inputs, ninputs) : NULL;
  OptConfig heuristics = {0};
  return k ? opt_apply(ctx, k, &t->opt, &heuristics) : NULL;
}

/* Marks in region[] the nodes of top's kernel: reached from top without
 * passing a cut node other than top (the cut nodes at its edge marked too). */
static void mark_region(const UOp *top, const unsigned char *cut, unsigned char *region, const UOp **stack) {
  size_t sp = 0;
  stack[sp++] = top, region[top->id] = 1;
  while (sp > 0) {
    const UOp *u = stack[--sp];
    if (u != top && cut[u->id]) continue;
    for (uint32_t k = 0; k < u->nsrc; k++)
      if (!region[u->src[k]->id]) region[u->src[k]->id] = 1, stack[sp++] = u->src[k];
  }
}

/* Room for the nodes made since the tables were sized: zeroed entries. */
static bool grow_tables(Ctx *ctx, size_t *size, unsigned char **cut, const UOp ***into) {
  if (ctx->nnodes <= *size) return true;
  unsigned char *c = realloc(*cut, ctx->nnodes);
  if (c) *cut = c;
  const UOp **i = c ? realloc(*into, ctx->nnodes * sizeof *i) : NULL;
  if (i) *into = i;
  if (!i) return false;
  memset(c + *size, 0, ctx->nnodes - *size), memset(i + *size, 0, (ctx->nnodes - *size) * sizeof *i);
  *size = ctx->nnodes;
  return true;
}

/* A substitution of one node whose rebuilt users take their originals'
 * cut and into (tables by node id, grown as nodes are made). */
typedef struct Follow {
  Ctx *ctx;
  const UOp *from, *to;
  unsigned char **cut;
  const UOp ***into;
  size_t *size;
  bool ok;
} Follow;

static const UOp *follow(void *user, const UOp *u, const UOp *rebuilt) {
  Follow *f = user;
  const UOp *out = u == f->from ? f->to : rebuilt;
  if (out != u && out && (f->ok = f->ok && grow_tables(f->ctx, f->size, f->cut, f->into)))
    (*f->cut)[out->id] = (*f->cut)[u->id], (*f->into)[out->id] = (*f->into)[u->id];
  return out;
}

/* The set of cuts a try takes into top's kernel, marked in set[]: for each
 * cut max M in top's graph, the cuts whose graph holds M (the softmax
 * between M and top: its quotient, its sum), M, and the cuts M's own
 * kernel reads (its scores); not top, not roots. false when there is none,
 * or when top's kernel reduces nothing of its own (top is the softmax
 * itself, not a matmul after it: it would still write the T·T matrix). */
static bool online_set(Ctx *ctx, const UOp *top, const UOp *const *cone, size_t m, const unsigned char *cut,
                       const unsigned char *root, unsigned char *set, unsigned char *region, const UOp **stack) {
  bool any = false, reduces = false;
  for (size_t c = 0; c < m; c++) region[cone[c]->id] = 0;
  mark_region(top, cut, region, stack);
  for (size_t c = 0; c < m; c++) reduces |= region[cone[c]->id] && cone[c]->op == UJ_OP_REDUCE && (cone[c] == top || !cut[cone[c]->id]);
  for (size_t i = 0; reduces && i < m; i++) {
    const UOp *max = cone[i];
    if (max == top || !is_max(max) || !cut[max->id]) continue;
    set[max->id] = 1, any = true;
    for (size_t c = 0; c < m; c++) /* cuts above M */
      if (cone[c] != top && cut[cone[c]->id] && cone[c] != max && opt_contains(ctx, cone[c], max)) set[cone[c]->id] = 1;
    for (size_t c = 0; c < m; c++) region[cone[c]->id] = 0;
    mark_region(max, cut, region, stack); /* cuts at the edge of M's kernel */
    for (size_t c = 0; c < m; c++)
      if (cone[c] != max && region[cone[c]->id] && cut[cone[c]->id] && !schedule_view_buffer(cone[c])) set[cone[c]->id] = 1;
  }
  for (size_t i = 0; i < m; i++)
    if (root[cone[i]->id] && cone[i] != top) set[cone[i]->id] = 0;
  return any;
}

/* Whether cut node x's own kernel computes a REDUCE (the cuts at its edge
 * count); seen[]: scratch by node id, zero before and after (the nodes
 * visited are stack[0 .. tail), a queue). */
static bool holds_reduce(const UOp *x, const unsigned char *cut, unsigned char *seen, const UOp **stack) {
  size_t head = 0, tail = 0;
  bool found = false;
  stack[tail++] = x, seen[x->id] = 1;
  while (head < tail && !found) {
    const UOp *u = stack[head++];
    found = is_reduce(u);
    if (u != x && cut[u->id]) continue;
    for (uint32_t k = 0; k < u->nsrc; k++)
      if (!seen[u->src[k]->id]) seen[u->src[k]->id] = 1, stack[tail++] = u->src[k];
  }
  while (tail > 0) seen[stack[--tail]->id] = 0;
  return found;
}

/* The set of cuts a row try takes into top's kernel, marked in set[] and
 * cleared in cut[]: the cuts at the edge of top's kernel whose own kernels
 * reduce (a normalization's mean, and its 1/sqrt(variance), cut as a
 * broadcast costly op; softmax's max and sum), then those at the edge of
 * the kernel so grown, until none is left; not roots, not buffers. The
 * optimizer then stores each reduction once per row before the loop over
 * the row's outputs (lib/opt/hoist.c), and the trial is kept only if
 * nothing is computed again for a loop it does not read. false when there
 * is none. */
static bool row_set(const UOp *top, const UOp *const *cone, size_t m, unsigned char *cut, const unsigned char *root,
                    unsigned char *set, unsigned char *region, const UOp **stack, unsigned char *seen) {
  bool any = false, grew = true;
  while (grew) {
    grew = false;
    for (size_t c = 0; c < m; c++) region[cone[c]->id] = 0;
    mark_region(top, cut, region, stack);
    for (size_t c = 0; c < m; c++) {
      const UOp *x = cone[c];
      if (x == top || !region[x->id] || !cut[x->id] || root[x->id] || schedule_view_buffer(x)) continue;
      if (holds_reduce(x, cut, seen, stack)) set[x->id] = 1, cut[x->id] = 0, any = grew = true;
    }
  }
  return any;
}

bool schedule_fuse_online(Ctx *ctx, const UOp **sink_io, unsigned char **cut_io, const UOp ***into_io, const ScheduleTarget *t) {
  const UOp *sink = *sink_io, **all = NULL;
  size_t n = uop_toposort(ctx, sink, &all), size = ctx->nnodes, cap = 0;
  unsigned char *set = NULL, *region = NULL, *root = NULL, *seen = NULL;
  const UOp **stack = NULL;
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) { /* sources first: a softmax joins the nearest kernel that can take it */
    const UOp *top = all[i], **cone = NULL;
    if (ctx->nnodes > cap) { /* by node id, for the nodes made so far (tries make more) */
      free(set), free(region), free(root), free(stack), free(seen);
      cap = ctx->nnodes;
      set = calloc(cap, 1), region = calloc(cap, 1), root = calloc(cap, 1), stack = malloc(cap * sizeof *stack);
      seen = calloc(cap, 1);
      ok = set && region && root && stack && seen;
      for (uint32_t r = 0; ok && r < sink->nsrc; r++) root[sink->src[r]->id] = 1;
    }
    if (!ok || top == sink || !(*cut_io)[top->id]) continue;
    size_t m = uop_toposort(ctx, top, &cone);
    ok = m > 0;
    unsigned char *cut = *cut_io;
    bool any = ok && online_set(ctx, top, cone, m, cut, root, set, region, stack);
    if (ok && !any) any = row_set(top, cone, m, cut, root, set, region, stack, seen);
    for (size_t c = 0; any && c < m; c++) cut[cone[c]->id] &= !set[cone[c]->id];
    bool alone = any; /* nothing computed in top's kernel now is read from outside it (but top) */
    if (alone) memset(region, 0, cap), mark_region(top, cut, region, stack);
    for (size_t u = 0; alone && u < n; u++)
      for (uint32_t k = 0; k < all[u]->nsrc && alone; k++) {
        const UOp *x = all[u]->src[k];
        alone = !(region[x->id] && x != top && !cut[x->id] && (!region[all[u]->id] || all[u] == sink));
      }
    const UOp **inputs = NULL, *kernel = NULL, *staged = NULL;
    size_t ninputs = 0;
    if (alone) kernel = trial_kernel(ctx, top, cut, t, &inputs, &ninputs), ok = kernel != NULL;
    bool keep = kernel && !recomputes(ctx, kernel, &ok) && ok;
    if (keep) staged = stage_gathered(ctx, top, kernel, inputs, ninputs), ok = staged != NULL;
    free(inputs);
    for (size_t c = 0; c < m; c++) { /* a try not kept puts its cuts back */
      if (any && !keep) cut[cone[c]->id] |= set[cone[c]->id];
      set[cone[c]->id] = 0;
    }
    free(cone);
    if (!ok || !keep || staged == top) continue;
    /* top reads a staged copy: a new node in place of top; its users are rebuilt, their cut and into follow */
    Follow f = {ctx, top, staged, cut_io, into_io, &size, true};
    sink = graph_substitute(ctx, sink, follow, &f);
    ok = sink && f.ok;
    free(all), all = NULL;
    n = ok ? uop_toposort(ctx, sink, &all) : 0;
    ok = ok && n > 0 && grow_tables(ctx, &size, cut_io, into_io);
    for (i = 0; ok && i < n && all[i] != staged; i++) {} /* go on above the new node */
  }
  free(all), free(set), free(region), free(root), free(stack), free(seen);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "schedule: out of memory");
  *sink_io = sink;
  return ok;
}
