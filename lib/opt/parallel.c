/* parallel.c — the outermost loop of a kernel becomes its parallel range
 * (opt.h). Only a kernel that is one loop nest (SINK(END(r, ...))) with r
 * a `loop` RANGE qualifies: an effect outside r's loop would run in every
 * part. Small kernels stay serial. */
#include <stdlib.h>

#include "opt/opt.h"
#include "rewrite/rewrite.h"

/* Iterations of all RANGEs with constant bounds, multiplied (saturating). */
static int64_t work_of(Ctx *ctx, const UOp *kernel) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  int64_t work = 1;
  for (size_t i = 0; i < n; i++) {
    const UOp *b = nodes[i]->op == UJ_OP_RANGE ? nodes[i]->src[0] : NULL;
    if (b && b->op == UJ_OP_CONST && b->bounded && b->vmin > 1 && __builtin_mul_overflow(work, b->vmin, &work))
      work = INT64_MAX;
  }
  free(nodes);
  return work;
}

typedef struct Swap {
  Ctx *ctx;
  const UOp *from, *to;
} Swap;

static const UOp *swap_range(void *user, const UOp *u, const UOp *rebuilt) {
  const Swap *w = user;
  return u == w->from ? w->to : rebuilt;
}

const UOp *opt_parallel(Ctx *ctx, const UOp *kernel, OptSwitch parallel) {
  const UOp *end = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  const UOp *r = end && end->op == UJ_OP_END ? end->src[0] : NULL;
  if (parallel == OPT_OFF || !r || r->op != UJ_OP_RANGE || range_kind(r) != AXIS_LOOP) return kernel;
  if (parallel == OPT_AUTO && work_of(ctx, kernel) < OPT_PARALLEL_MIN_WORK) return kernel;
  Swap w = {ctx, r, uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, r->nsrc, (Arg){"global", r->ints, r->nints})};
  return w.to ? graph_substitute(ctx, kernel, swap_range, &w) : NULL;
}
