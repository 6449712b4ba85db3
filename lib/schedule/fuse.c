/* fuse.c — online fusion: a root whose graph holds a max that the
 * cutting rules give its own kernel (softmax's) is tried as one kernel,
 * and kept so when the optimized kernel computes nothing again for loops
 * it does not depend on (docs/schedule.md, "Online fusion").
 *
 * In: the tensor graph (a SINK of roots) and the cuts find_cuts chose.
 * Out: those cuts, less the ones inside a root's graph that fused into
 * the root's kernel. A cut inside a root's graph may go only when all its
 * users are in that graph. The trial kernel is rangeified and shaped by
 * the heuristics (lib/opt: opt_shadow makes the sums that read the max
 * run over its RANGE, the renderer runs them in one loop as online
 * softmax); it is kept when no REDUCE and no costly op in it sits in a
 * loop, of more than one step, over a RANGE it does not read. So attention
 * softmax(q k^T) v is one kernel with no score matrix in memory, while a
 * softmax alone keeps its three kernels (its max would run again for
 * every element of a row). A kept kernel that gathers an input reads it
 * through a transposed copy instead (stage_gathered): the root is then a
 * new node, replaced in the SINK. */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "symbolic/symbolic.h"

#include "opt/opt.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"

enum { FUSE_MAX_RANGES = 64 };

static bool is_max(const UOp *u) { return u->op == UJ_OP_REDUCE && u->nsrc == 1 && !strcmp(u->name, "MAX"); }

static bool is_costly(const UOp *u) {
  switch (u->op) {
  case UJ_OP_EXP2: case UJ_OP_LOG2: case UJ_OP_SIN: case UJ_OP_SQRT: case UJ_OP_RECIP: case UJ_OP_FDIV: return true;
  default: return u->op == UJ_OP_REDUCE;
  }
}

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
    if (!is_costly(u)) continue;
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
    size_t m = buffer ? uop_toposort(ctx, root, &cone) : 0;
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
/* root's graph as one kernel, when it recomputes nothing (with the
 * inputs it gathers from staged: stage_gathered); else NULL (*ok false
 * when out of memory). */
static const UOp *fused_root(Ctx *ctx, const UOp *root, const ScheduleTarget *t, bool *ok) {
  const UOp **inputs = NULL;
  size_t ninputs = 0;
  const UOp *k = rangeify_kernel(ctx, root, t->index_bits, &inputs, &ninputs);
  OptConfig heuristics = {0};
  k = k ? opt_apply(ctx, k, &t->opt, &heuristics) : NULL;
  *ok = k != NULL;
  const UOp *fused = k && !recomputes(ctx, k, ok) && *ok ? stage_gathered(ctx, root, k, inputs, ninputs) : NULL;
  free(inputs);
  return fused;
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

bool schedule_fuse_online(Ctx *ctx, const UOp **sink_io, unsigned char **cut_io, const UOp ***into_io, const ScheduleTarget *t) {
  const UOp *sink = *sink_io, **all = NULL, **cone = NULL;
  size_t n = uop_toposort(ctx, sink, &all), size = ctx->nnodes;
  unsigned char *in = n ? calloc(ctx->nnodes, 1) : NULL;
  bool ok = in != NULL;
  for (uint32_t r = 0; ok && r < sink->nsrc; r++) {
    unsigned char *cut = *cut_io;
    const UOp *root = sink->src[r];
    size_t m = uop_toposort(ctx, root, &cone);
    ok = m > 0;
    bool max = false, alone = true;
    for (size_t i = 0; ok && i < m; i++) in[cone[i]->id] = 1, max |= is_max(cone[i]) && cut[cone[i]->id];
    for (size_t i = 0; ok && max && i < n && alone; i++) /* a cut used outside root's graph stays */
      for (uint32_t k = 0; k < all[i]->nsrc && alone; k++)
        alone = !(cut[all[i]->src[k]->id] && in[all[i]->src[k]->id] && all[i]->src[k] != root && (!in[all[i]->id] || all[i] == sink));
    const UOp *fused = ok && max && alone ? fused_root(ctx, root, t, &ok) : NULL;
    for (size_t i = 0; fused && i < m; i++) cut[cone[i]->id] = cone[i] == root ? cut[root->id] : 0;
    for (size_t i = 0; i < m; i++) in[cone[i]->id] = 0;
    free(cone), cone = NULL;
    if (fused && fused != root) { /* the root reads a staged copy: a new node, in the sink and the tables */
      const UOp **src = malloc(sink->nsrc * sizeof *src);
      ok = src && grow_tables(ctx, &size, cut_io, into_io);
      if (ok) {
        memcpy(src, sink->src, sink->nsrc * sizeof *src);
        src[r] = fused;
        (*cut_io)[fused->id] = (*cut_io)[root->id], (*into_io)[fused->id] = (*into_io)[root->id];
        sink = uop_replace_src(ctx, sink, src, sink->nsrc);
        ok = sink && grow_tables(ctx, &size, cut_io, into_io);
      }
      free(src);
      unsigned char *grown = ok ? realloc(in, ctx->nnodes) : NULL;
      if (grown) in = grown, memset(in, 0, ctx->nnodes);
      ok = ok && grown;
    }
  }
  free(all), free(in);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "schedule: out of memory");
  *sink_io = sink;
  return ok;
}
