/* props.c — properties computed once per node, at creation: integer bounds
 * (vmin/vmax, the basis of symbolic simplification) and shape.
 *
 * In: a node whose sources already carry their properties. Out: the node's
 * own. Bounds are sound under the IR's wrap-around semantics: where exact
 * interval arithmetic leaves the dtype's range, the bounds are the whole
 * range. uint64 values above INT64_MAX have no bounds (bounded = false). */
#include <string.h>

#include "uop/movement.h"
#include "uop/uop.h"

bool dtype_full_bounds(DType d, int64_t *lo, int64_t *hi) {
  if (dt_is_bool(d)) {
    *lo = 0, *hi = 1;
    return true;
  }
  if (!dt_is_int(d) || d.scalar == UJ_UINT64) return false;
  unsigned bits = dt_bits(d);
  if (dt_is_signed(d)) {
    *hi = bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
    *lo = -*hi - 1;
  } else {
    *lo = 0, *hi = (int64_t)((1ull << bits) - 1);
  }
  return true;
}

typedef struct Range { int64_t lo, hi; bool ok; } Range;

static Range range_of(const UOp *u) { return (Range){u->vmin, u->vmax, u->bounded}; }
static Range range_none(void) { return (Range){0, 0, false}; }
static Range range(int64_t lo, int64_t hi) { return (Range){lo, hi, true}; }

/* Sets u's bounds to r clipped by its dtype: r outside the dtype's range
 * means the value may have wrapped, so only the full range is sound. A
 * uint64 keeps r only inside [0, INT64_MAX], and has no bounds otherwise. */
static void set_bounds(UOp *u, Range r) {
  int64_t lo, hi;
  bool fits = r.ok && r.lo <= r.hi;
  if (!dtype_full_bounds(u->dtype, &lo, &hi)) {
    u->bounded = fits && r.lo >= 0;
    u->vmin = r.lo, u->vmax = r.hi;
    return;
  }
  u->bounded = true;
  if (fits && r.lo >= lo && r.hi <= hi) u->vmin = r.lo, u->vmax = r.hi;
  else u->vmin = lo, u->vmax = hi;
}

static Range range_add(Range a, Range b) {
  int64_t lo, hi;
  if (!a.ok || !b.ok || __builtin_add_overflow(a.lo, b.lo, &lo) ||
      __builtin_add_overflow(a.hi, b.hi, &hi))
    return range_none();
  return range(lo, hi);
}

static Range range_neg(Range a) {
  if (!a.ok || a.lo == INT64_MIN) return range_none();
  return range(-a.hi, -a.lo);
}

static Range range_mul(Range a, Range b) {
  if (!a.ok || !b.ok) return range_none();
  int64_t c[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &c[0]) || __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &c[2]) || __builtin_mul_overflow(a.hi, b.hi, &c[3]))
    return range_none();
  Range r = range(c[0], c[0]);
  for (int i = 1; i < 4; i++) {
    if (c[i] < r.lo) r.lo = c[i];
    if (c[i] > r.hi) r.hi = c[i];
  }
  return r;
}

/* Truncating division; only where the divisor's range excludes 0 and -1
 * with INT64_MIN (x / 0 and MIN / -1 have their own defined values). */
static Range range_idiv(Range a, Range b) {
  if (!a.ok || !b.ok || (b.lo <= 0 && b.hi >= 0)) return range_none();
  if (a.lo == INT64_MIN && b.lo <= -1 && b.hi >= -1) return range_none();
  int64_t c[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  Range r = range(c[0], c[0]);
  for (int i = 1; i < 4; i++) {
    if (c[i] < r.lo) r.lo = c[i];
    if (c[i] > r.hi) r.hi = c[i];
  }
  /* the quotient of a range that crosses 0 can be 0 */
  if (a.lo < 0 && a.hi > 0) {
    if (r.lo > 0) r.lo = 0;
    if (r.hi < 0) r.hi = 0;
  }
  return r;
}

/* Truncating modulo: the sign follows the dividend, |r| < |divisor|. */
static Range range_mod(Range a, Range b) {
  if (!a.ok || !b.ok || (b.lo <= 0 && b.hi >= 0) || b.lo == INT64_MIN) return range_none();
  int64_t m = (b.hi > -b.lo ? b.hi : -b.lo) - 1; /* largest |remainder| */
  if (a.lo >= 0 && a.hi <= m && b.lo > 0 && a.hi < b.lo) return a;
  int64_t lo = a.lo >= 0 ? 0 : (a.lo > -m ? a.lo : -m);
  int64_t hi = a.hi <= 0 ? 0 : (a.hi < m ? a.hi : m);
  return range(lo, hi);
}

static Range range_max(Range a, Range b) {
  if (!a.ok || !b.ok) return range_none();
  return range(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

static Range range_hull(Range a, Range b) {
  if (!a.ok || !b.ok) return range_none();
  return range(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

/* Smallest 2^k - 1 >= v, for v >= 0. */
static int64_t all_ones_above(int64_t v) {
  uint64_t m = (uint64_t)v;
  for (int s = 1; s < 64; s <<= 1) m |= m >> s;
  return (int64_t)m;
}

static Range range_bits(Op op, Range a, Range b) {
  if (!a.ok || !b.ok || a.lo < 0 || b.lo < 0) return range_none();
  if (op == UJ_OP_AND) return range(0, a.hi < b.hi ? a.hi : b.hi);
  return range(0, all_ones_above(a.hi > b.hi ? a.hi : b.hi));
}

static Range range_shift(Op op, Range a, Range b, unsigned bits) {
  if (!a.ok || !b.ok || b.lo != b.hi || b.lo < 0 || b.lo >= (int64_t)bits || b.lo >= 63)
    return range_none();
  if (op == UJ_OP_SHL) return range_mul(a, range(1ll << b.lo, 1ll << b.lo));
  return range(a.lo >> b.lo, a.hi >> b.lo); /* arithmetic shift is monotone */
}

/* A comparison whose answer the bounds already give. */
static Range range_compare(Op op, Range a, Range b) {
  if (!a.ok || !b.ok) return range(0, 1);
  bool disjoint = a.hi < b.lo || b.hi < a.lo, same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
  switch (op) {
  case UJ_OP_CMPLT:
    if (a.hi < b.lo) return range(1, 1);
    if (a.lo >= b.hi) return range(0, 0);
    break;
  case UJ_OP_CMPNE:
    if (disjoint) return range(1, 1);
    if (same) return range(0, 0);
    break;
  case UJ_OP_CMPEQ:
    if (disjoint) return range(0, 0);
    if (same) return range(1, 1);
    break;
  default: break;
  }
  return range(0, 1);
}

static Range bounds_of(const UOp *u) {
  const UOp *const *s = u->src;
  Range a = u->nsrc > 0 ? range_of(s[0]) : range_none();
  Range b = u->nsrc > 1 ? range_of(s[1]) : range_none();
  switch ((Op)u->op) {
  case UJ_OP_CONST: return range(u->ints[0], u->ints[0]);
  case UJ_OP_DEFINE_VAR: return range(u->ints[0], u->ints[1]);
  case UJ_OP_ADD: return range_add(a, b);
  case UJ_OP_SUB: return range_add(a, range_neg(b));
  case UJ_OP_NEG: return range_neg(a);
  case UJ_OP_MUL: return range_mul(a, b);
  case UJ_OP_MULACC: return range_add(range_mul(a, b), range_of(s[2]));
  case UJ_OP_IDIV: return range_idiv(a, b);
  case UJ_OP_MOD: return range_mod(a, b);
  case UJ_OP_MAX: return range_max(a, b);
  case UJ_OP_AND: case UJ_OP_OR: case UJ_OP_XOR: return range_bits((Op)u->op, a, b);
  case UJ_OP_SHL: case UJ_OP_SHR: return range_shift((Op)u->op, a, b, dt_bits(s[0]->dtype));
  case UJ_OP_CMPLT: case UJ_OP_CMPNE: case UJ_OP_CMPEQ:
    return dt_is_float(s[0]->dtype) ? range(0, 1) : range_compare((Op)u->op, a, b);
  case UJ_OP_WHERE:
    if (a.ok && a.lo == a.hi) return range_of(a.lo ? s[1] : s[2]);
    return range_hull(b, range_of(s[2]));
  case UJ_OP_CAST:
    return dt_is_float(s[0]->dtype) ? range_none() : a;
  case UJ_OP_RANGE: /* 0 .. bound-1; a loop that never runs has no values */
    return a.ok ? range(0, a.hi > 0 ? a.hi - 1 : 0) : range_none();
  default: return range_none();
  }
}

void uop_compute_bounds(UOp *u) {
  if (dt_is_ptr(u->dtype) || u->dtype.lanes != 1 ||
      !(dt_is_int(u->dtype) || dt_is_bool(u->dtype))) {
    u->bounded = false;
    return;
  }
  set_bounds(u, bounds_of(u));
}

/* Shape: BUFFER has (size); elementwise ops take their first source's (the
 * type rule checks the others agree); movement ops and REDUCE follow their
 * arg (movement.c); everything else is a scalar (). */
bool uop_compute_shape(Ctx *ctx, UOp *u) {
  if (u->op == UJ_OP_BUFFER) {
    int64_t *shape = ctx_alloc(ctx, sizeof *shape);
    if (!shape) return false;
    shape[0] = u->ints[1];
    u->shape = shape, u->ndim = 1;
  } else if (op_has((Op)u->op, OPF_MOVEMENT) || u->op == UJ_OP_REDUCE || u->op == UJ_OP_GATHER || u->op == UJ_OP_SCATTER) {
    return movement_shape(ctx, u);
  } else if (u->op == UJ_OP_STAGE) {
    u->shape = u->src[0]->shape, u->ndim = u->src[0]->ndim;
  } else if (op_has((Op)u->op, OPF_ALU) && u->nsrc > 0) {
    const UOp *first = u->op == UJ_OP_WHERE ? u->src[1] : u->src[0];
    u->shape = first->shape, u->ndim = first->ndim;
  }
  return true;
}
