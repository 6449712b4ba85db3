/* reorder.c — the output loop a block's columns come from (opt.h).
 *
 * Upcast blocks the innermost output loop of a one-nest kernel into
 * vector columns, and its enclosing loop into rows. A convolution's
 * innermost loop is its output's x (56: one 8-lane register divides it,
 * not two of 16), while its output channels (64: two registers) are
 * further out. This pass moves such a loop innermost:
 *
 *   END(n, END(co, END(y, END(x, STORE))))
 *   -> END(n, END(y, END(x, END(co, STORE))))
 *
 * Legal because a kernel's outputs do not read one another (each is
 * stored once; an in-place kernel reads only the element it writes):
 * the same stores of the same values, in another order. The loads that
 * vary along the new columns and the reduction (the weights, strided
 * along co) must fit the panel the tile pass stages (tile.c), which
 * makes them contiguous vector loads. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

enum { REORDER_MAX_LOOPS = 16 };

/* Bytes of one column block's panel (columns wide) of the loads of value
 * that vary along o and the reduction, staged: each such load's elements
 * over the block and the reduction's length; -1 when a load of it is
 * gated. */
static int64_t panel_bytes(Ctx *ctx, const UOp *value, const UOp *o, const UOp *const *k, size_t nk, int64_t columns) {
  const UOp **nodes = NULL;
  size_t m = uop_toposort(ctx, value, &nodes);
  int64_t len = columns, bytes = 0;
  for (size_t x = 0; x < nk; x++) len *= opt_const_bound(k[x]);
  for (size_t i = 0; i < m && bytes >= 0; i++) {
    const UOp *u = nodes[i], *idx = u->op == UJ_OP_LOAD ? u->src[0] : NULL;
    if (!idx || idx->op != UJ_OP_INDEX || !opt_contains(ctx, idx, o)) continue;
    bool along_k = false;
    for (size_t x = 0; x < nk && !along_k; x++) along_k = opt_contains(ctx, idx, k[x]);
    if (along_k) bytes = idx->nsrc == 3 ? -1 : bytes + len * (int64_t)elem_bytes(u->dtype);
  }
  free(nodes);
  return m ? bytes : -1;
}

const UOp *opt_reorder(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config) {
  const UOp *ends[REORDER_MAX_LOOPS];
  size_t n = 0;
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  for (; e && e->op == UJ_OP_END && e->nsrc == 2 && n < REORDER_MAX_LOOPS; e = e->src[1]) ends[n++] = e;
  if (config->reorder == OPT_OFF || n < 2 || !e || e->op != UJ_OP_STORE) return kernel;
  const UOp *store = e, *value = store->src[1], *k[REORDER_MAX_LOOPS];
  size_t nk = opt_shared_reduce_ranges(ctx, value, k, REORDER_MAX_LOOPS);
  int64_t elem = (int64_t)elem_bytes(value->dtype), two = elem ? 2 * (int64_t)t->vector_bytes / elem : 0;
  if (!nk || !two || (config->reorder == OPT_AUTO && opt_const_bound(ends[n - 1]->src[0]) % two == 0)) return kernel;
  size_t pick = n;
  for (size_t i = n - 1; i-- > 0 && pick == n;) {
    const UOp *o = ends[i]->src[0];
    int64_t b = opt_const_bound(o), bytes = b ? panel_bytes(ctx, value, o, k, nk, two) : -1;
    if (range_kind(o) == AXIS_LOOP && b % two == 0 && opt_depends(ctx, value, o) && bytes >= 0 &&
        bytes <= (int64_t)target_panel_bytes(t))
      pick = i;
  }
  if (pick == n || (pick == 0 && config->reorder == OPT_AUTO)) return kernel; /* the outer loop stays: threads split it */
  const UOp *inner = uop_new(ctx, UJ_OP_END, ends[pick]->dtype, (const UOp *[]){ends[pick]->src[0], store}, 2, arg_none());
  for (size_t i = n; inner && i-- > 0;)
    if (i != pick) inner = uop_new(ctx, UJ_OP_END, ends[i]->dtype, (const UOp *[]){ends[i]->src[0], inner}, 2, arg_none());
  return inner ? uop_replace_src(ctx, kernel, &inner, 1) : NULL;
}
