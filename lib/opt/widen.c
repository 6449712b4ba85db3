/* widen.c — an elementwise kernel on a GPU, a few adjacent outputs a
 * thread (opt.h, docs/opt.md "GPU kernels").
 *
 * In: a kernel for a GPU that is a nest of single-effect loops around one
 * STORE of a value that reads no REDUCE, whose innermost loop's bound W
 * divides, and every memory access of which steps by 0 or 1 element
 * along that loop (contiguous or broadcast), with enough iterations that
 * cores x max_threads threads stay busy after the split:
 *
 *   END(.., END(c, STORE(out(c), v(c))))
 *   -> END(.., END(c', STORE(out(W·c'), v(W·c')), .., STORE(out(W·c' + W-1), v(..))))
 *
 * Out: each thread computes W = 4 adjacent outputs; the GPU backend's
 * load-store vectorizer merges the four adjacent 4-byte loads and stores
 * into one 16-byte access each (a GPU kernel's buffers are 16-byte
 * aligned: render.c), a quarter of the memory instructions. Every output
 * is computed by the same operations: the words are the kernel's.
 * OptConfig.widen forces it off, or on for any count. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

enum { WIDEN = 4 };

/* Whether every INDEX of a pointer in x steps by 0 or 1 along c. */
static bool steps_by_one(Ctx *ctx, const UOp *x, const UOp *c) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_REDUCE) ok = false;
    if (u->op != UJ_OP_INDEX || !dt_is_ptr(u->src[0]->dtype) || !opt_contains(ctx, u->src[1], c)) continue;
    if (u->src[0]->op == UJ_OP_INDEX) ok = false; /* a chain's steps add up: not followed */
    int64_t s = opt_stride_along(ctx, u->src[1], c);
    ok = s == 1 && !(u->nsrc == 3 && opt_contains(ctx, u->src[2], c)); /* a gate along c: its lanes may differ */
  }
  free(nodes);
  return ok;
}

const UOp *opt_widen(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use) {
  const UOp *end = t->kind == TARGET_DESC_GPU && use != OPT_OFF ? opt_innermost_end(kernel) : NULL;
  if (!end || end->src[1]->src[1]->dtype.lanes != 1) return kernel;
  const UOp *c = end->src[0], *store = end->src[1];
  int64_t bound = opt_const_bound(c);
  if (bound <= 0 || bound % WIDEN ||
      (use != OPT_ON && opt_nest_iterations(kernel) < (int64_t)t->cores * t->max_threads * WIDEN) ||
      !steps_by_one(ctx, store, c))
    return kernel; /* forced on: whatever the count, where it can */
  const UOp *outer = uop_new(ctx, UJ_OP_RANGE, c->dtype, (const UOp *[]){uop_const_int(ctx, c->dtype, bound / WIDEN)}, 1,
                             (Arg){c->name, c->ints, c->nints});
  const UOp *src[1 + WIDEN] = {outer};
  for (int w = 0; w < WIDEN; w++) {
    const UOp *at = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, outer, uop_const_int(ctx, c->dtype, WIDEN)),
                               uop_const_int(ctx, c->dtype, w));
    if (!at || !(src[1 + w] = opt_substitute(ctx, store, &c, &at, 1))) return NULL;
  }
  const UOp *inner = uop_new(ctx, UJ_OP_END, end->dtype, src, 1 + WIDEN, arg_none());
  return inner ? opt_substitute(ctx, kernel, &end, &inner, 1) : NULL;
}
