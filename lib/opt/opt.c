/* opt.c — the optimizer's pass list (opt.h), run in order. */
#include "opt/opt.h"
#include "opt/lanes.h"

const UOp *opt_kernel(Ctx *ctx, const UOp *kernel, const OptTarget *t) {
  const UOp *k = kernel;
  k = k ? opt_lanes(ctx, k) : NULL;
  k = k ? opt_upcast(ctx, k, t->vector_bytes) : NULL;
  k = k ? opt_tile(ctx, k) : NULL;
  k = k ? opt_parallel(ctx, k) : NULL;
  return k;
}
