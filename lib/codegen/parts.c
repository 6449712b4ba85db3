/* parts.c — the start and bound of a CPU part (parts.h). */
#include "codegen/parts.h"

static const UOp *var(Ctx *ctx, const char *name, int64_t min, int64_t max) {
  int64_t range[2] = {min, max};
  return uop_new(ctx, UJ_OP_DEFINE_VAR, dt_scalar(UJ_UINT64), NULL, 0, (Arg){name, range, 2});
}

static const UOp *cast(Ctx *ctx, const UOp *x, DType to) {
  return x && x->dtype.scalar != to.scalar ? uop_new(ctx, UJ_OP_CAST, to, &x, 1, arg_none()) : x;
}

/* min(a, b); NULL propagates */
static const UOp *min_of(Ctx *ctx, const UOp *a, const UOp *b) {
  const UOp *lt = a && b ? uop_binary(ctx, UJ_OP_CMPLT, a, b) : NULL;
  return lt ? uop_ternary(ctx, UJ_OP_WHERE, lt, a, b) : NULL;
}

/* In uint64 (the bound clamped at 0 first): the divisor's bounds (1 and
 * up) spare the division its guards (render_alu.c). */
bool parts_bounds(Ctx *ctx, const UOp *range, PartBounds *out) {
  DType u64 = dt_scalar(UJ_UINT64), t = range->dtype;
  const UOp *n = range->src[0], *zero = uop_const_int(ctx, t, 0), *one = uop_const_int(ctx, u64, 1);
  out->part = var(ctx, "_part", 0, INT64_MAX - 1), out->nparts = var(ctx, "_nparts", 1, INT64_MAX);
  if (dt_is_signed(t)) { /* no trips below 0 */
    const UOp *neg = zero ? uop_binary(ctx, UJ_OP_CMPLT, n, zero) : NULL;
    n = neg ? uop_ternary(ctx, UJ_OP_WHERE, neg, zero, n) : NULL;
  }
  n = cast(ctx, n, u64);
  const UOp *sum = n && out->nparts ? uop_binary(ctx, UJ_OP_ADD, n, out->nparts) : NULL;
  const UOp *less = sum && one ? uop_binary(ctx, UJ_OP_SUB, sum, one) : NULL;
  const UOp *chunk = less ? uop_binary(ctx, UJ_OP_IDIV, less, out->nparts) : NULL;
  const UOp *lo = chunk && out->part ? uop_binary(ctx, UJ_OP_MUL, chunk, out->part) : NULL;
  const UOp *hi = lo ? uop_binary(ctx, UJ_OP_ADD, lo, chunk) : NULL;
  out->start = cast(ctx, min_of(ctx, lo, n), t), out->bound = cast(ctx, min_of(ctx, hi, n), t);
  if (!out->start || !out->bound) ctx_set_error(ctx, "parts: out of memory");
  return out->start && out->bound;
}
