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
 * every element of a row). */
#include <stdlib.h>
#include <string.h>

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
 * (more than one step) that it does not read; *ok false when out of
 * memory or the kernel has more RANGEs than fit a mask. */
static bool recomputes(Ctx *ctx, const UOp *kernel, bool *ok) {
  const UOp **nodes = NULL, *ranges[FUSE_MAX_RANGES];
  size_t n = uop_toposort(ctx, kernel, &nodes), nranges = 0;
  uint64_t *reads = n ? calloc(ctx->nnodes, sizeof *reads) : NULL, *inside = n ? calloc(ctx->nnodes, sizeof *inside) : NULL;
  *ok = reads && inside;
  for (size_t i = 0; *ok && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_RANGE) {
      if (nranges == FUSE_MAX_RANGES) *ok = false;
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
  for (size_t i = n; *ok && i-- > 0;) { /* users first: the loops around each node */
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
  bool again = false;
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

/* Whether root's graph fuses into one kernel that recomputes nothing. */
static bool fuses(Ctx *ctx, const UOp *root, const ScheduleTarget *t, bool *ok) {
  const UOp **inputs = NULL;
  size_t ninputs = 0;
  const UOp *k = rangeify_kernel(ctx, root, t->index_bits, &inputs, &ninputs);
  free(inputs);
  OptConfig heuristics = {0};
  k = k ? opt_apply(ctx, k, &t->opt, &heuristics) : NULL;
  *ok = k != NULL;
  return k && !recomputes(ctx, k, ok);
}

bool schedule_fuse_online(Ctx *ctx, const UOp *sink, unsigned char *cut, const ScheduleTarget *t) {
  const UOp **all = NULL, **cone = NULL;
  size_t n = uop_toposort(ctx, sink, &all);
  unsigned char *in = n ? calloc(ctx->nnodes, 1) : NULL;
  bool ok = in != NULL;
  for (uint32_t r = 0; ok && r < sink->nsrc; r++) {
    const UOp *root = sink->src[r];
    size_t m = uop_toposort(ctx, root, &cone);
    ok = m > 0;
    bool max = false, alone = true;
    for (size_t i = 0; ok && i < m; i++) in[cone[i]->id] = 1, max |= is_max(cone[i]) && cut[cone[i]->id];
    for (size_t i = 0; ok && max && i < n && alone; i++) /* a cut used outside root's graph stays */
      for (uint32_t k = 0; k < all[i]->nsrc && alone; k++)
        alone = !(cut[all[i]->src[k]->id] && in[all[i]->src[k]->id] && all[i]->src[k] != root && (!in[all[i]->id] || all[i] == sink));
    if (ok && max && alone && fuses(ctx, root, t, &ok))
      for (size_t i = 0; i < m; i++) cut[cone[i]->id] = cone[i] == root ? cut[root->id] : 0;
    for (size_t i = 0; i < m; i++) in[cone[i]->id] = 0;
    free(cone), cone = NULL;
  }
  free(all), free(in);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "schedule: out of memory");
  return ok;
}
