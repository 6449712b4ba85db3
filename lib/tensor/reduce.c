/* reduce.c — reductions over axes (tensor.h): sum, max by REDUCE; min as
 * the max of the negation; mean as a sum scaled; argmax/argmin by the
 * largest (n - i) among the positions equal to the max, so ties give the
 * first index; softmax and log_softmax with the max subtracted first;
 * gather as a GATHER node (a load at the index read from the index tensor). */
#include <string.h>

#include "tensor/tensor_impl.h"

/* The axes (n == 0: all) as distinct, sorted, non-negative ints. */
static bool norm_axes(uj_session *s, const char *op, const int *axes, unsigned n, unsigned nd, int64_t *out, unsigned *nout) {
  bool used[UJ_MAX_DIMS] = {0};
  for (unsigned i = 0; i < n; i++) {
    int a;
    if (!tensor_axis(s, op, axes[i], nd, &a)) return false;
    if (used[a]) return tensor_fail(s, op, "axis %d appears twice", axes[i]), false;
    used[a] = true;
  }
  *nout = 0;
  for (unsigned k = 0; k < nd; k++)
    if (n == 0 || used[k]) out[(*nout)++] = k;
  return true;
}

/* Drops the reduced axes (each of size 1 now) unless keepdim. */
static const UOp *squeeze(uj_session *s, const UOp *x, const int64_t *axes, unsigned n, bool keepdim) {
  if (!x || keepdim) return x;
  int64_t shape[UJ_MAX_DIMS];
  unsigned nd = 0;
  for (unsigned k = 0, i = 0; k < x->ndim; k++) {
    if (i < n && axes[i] == k) i++;
    else shape[nd++] = x->shape[k];
  }
  return node_reshape(s, x, shape, nd);
}

/* The opposite order: max of it is the min (negation for floats; bitwise
 * not, ~x = -x - 1, for integers and bool, which reverses the order
 * without overflow: -INT_MIN would wrap to INT_MIN). */
static const UOp *reversed(uj_session *s, const UOp *x) {
  return dt_is_float(x->dtype) ? node_alu(s, UJ_OP_NEG, x, NULL) : node_unary(s, UJ_UN_NOT, x);
}

static const UOp *reduce_max(uj_session *s, const UOp *x, const int64_t *ax, unsigned n) { return node_reduce(s, UJ_OP_MAX, x, ax, n); }

/* argmax of x along axis (kept, size 1), int32. */
static const UOp *argmax(uj_session *s, const UOp *x, int64_t axis) {
  int64_t len = x->shape[axis];
  const UOp *iota = tensor_iota(s, UJ_INT32, len);
  if (!iota) return NULL;
  int64_t shape[UJ_MAX_DIMS];
  for (unsigned k = 0; k < x->ndim; k++) shape[k] = k == axis ? len : 1;
  const UOp *rev = node_alu(s, UJ_OP_SUB, node_full(s, iota->dtype, (double)len, iota->shape, 1), iota); /* len - i */
  const UOp *down = node_broadcast(s, "argmax", node_reshape(s, rev, shape, x->ndim), x->shape, x->ndim);
  const UOp *m = node_broadcast(s, "argmax", reduce_max(s, x, &axis, 1), x->shape, x->ndim);
  const UOp *hit = node_alu(s, UJ_OP_CMPEQ, x, m);
  const UOp *src[3] = {hit, down, node_full(s, dt_scalar(UJ_INT32), 0, x->shape, x->ndim)};
  const UOp *w = tensor_node(s, "argmax", UJ_OP_WHERE, dt_scalar(UJ_INT32), src, 3, arg_none());
  const UOp *best = reduce_max(s, w, &axis, 1);
  return best ? node_alu(s, UJ_OP_SUB, node_full(s, best->dtype, (double)len, best->shape, best->ndim), best) : NULL;
}

/* A sum over axes ax: one REDUCE, "sum over these axes" in C order, the
 * evaluator's (docs/tensor.md, "Reductions"); each target chooses how to
 * regroup a float sum within the error bound (the CPU's lanes,
 * opt/lanes.h; a GPU's workgroups; long sums in two stages, the
 * scheduler's schedule_split_sums). */
static const UOp *sum_node(uj_session *s, const UOp *x, const int64_t *ax, unsigned n) {
  return node_reduce(s, UJ_OP_ADD, x, ax, n);
}

static const UOp *reduce_node(uj_session *s, uj_reduceop op, const UOp *x, const int64_t *ax, unsigned n) {
  switch (op) {
  case UJ_RED_SUM: return sum_node(s, dt_is_bool(x->dtype) ? node_cast(s, x, UJ_INT32) : x, ax, n);
  case UJ_RED_MAX: return reduce_max(s, x, ax, n);
  case UJ_RED_MIN: return reversed(s, reduce_max(s, reversed(s, x), ax, n));
  case UJ_RED_MEAN: {
    const UOp *f = dt_is_float(x->dtype) ? x : node_cast(s, x, UJ_FLOAT32), *sum = sum_node(s, f, ax, n);
    int64_t count = 1;
    for (unsigned i = 0; i < n; i++) count *= x->shape[ax[i]];
    return sum ? node_alu(s, UJ_OP_MUL, sum, node_full(s, sum->dtype, 1.0 / (double)count, sum->shape, sum->ndim)) : NULL;
  }
  case UJ_RED_ARGMAX: return argmax(s, x, ax[0]);
  case UJ_RED_ARGMIN: return argmax(s, reversed(s, x), ax[0]);
  case UJ_RED_COUNT: break;
  }
  return tensor_fail(s, "reduce", "unknown op %d", (int)op);
}

uj_tensor *uj_tensor_reduce(uj_reduceop op, uj_tensor *a, const int *axes, unsigned n, bool keepdim) {
  static const char *const names[UJ_RED_COUNT] = {"sum", "max", "min", "mean", "argmax", "argmin"};
  if (!a) return NULL;
  uj_session *s = a->s;
  if ((unsigned)op >= UJ_RED_COUNT) return tensor_fail(s, "reduce", "unknown op %d", (int)op);
  const UOp *x = a->node;
  int64_t ax[UJ_MAX_DIMS];
  unsigned nax;
  bool arg = op == UJ_RED_ARGMAX || op == UJ_RED_ARGMIN;
  if (arg && n > 1) return tensor_fail(s, names[op], "takes one axis, not %u", n);
  if (arg && n == 0) { /* the flat index */
    int64_t flat = shape_numel(x->shape, x->ndim), zero = 0;
    if (flat == 0) return tensor_fail(s, names[op], "the tensor is empty: the %s of nothing", names[op]);
    const UOp *r = reduce_node(s, op, node_reshape(s, x, &flat, 1), &zero, 1);
    if (!keepdim) return tensor_wrap(s, names[op], node_reshape(s, r, NULL, 0));
    int64_t ones[UJ_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    return tensor_wrap(s, names[op], node_reshape(s, r, ones, x->ndim));
  }
  if (!norm_axes(s, names[op], axes, n, x->ndim, ax, &nax)) return NULL;
  for (unsigned i = 0; i < nax; i++)
    if (x->shape[ax[i]] == 0 && op != UJ_RED_SUM)
      return tensor_fail(s, names[op], "axis %lld has size 0: the %s of nothing", (long long)ax[i], names[op]);
  return tensor_wrap(s, names[op], squeeze(s, reduce_node(s, op, x, ax, nax), ax, nax, keepdim));
}

/* x - max(x) along axis, and the log of the sum of its exp: the stable
 * parts of softmax and log_softmax. */
static bool softmax_parts(uj_session *s, const char *op, uj_tensor *a, int axis, const UOp **shifted, const UOp **sum) {
  int64_t ax;
  int x;
  const UOp *in = a->node;
  if (!tensor_axis(s, op, axis, in->ndim, &x)) return false;
  ax = x;
  if (!dt_is_float(in->dtype)) in = node_cast(s, in, UJ_FLOAT32);
  *shifted = node_alu(s, UJ_OP_SUB, in, node_broadcast(s, "softmax", reduce_max(s, in, &ax, 1), in->shape, in->ndim));
  const UOp *total = sum_node(s, node_unary(s, UJ_UN_EXP, *shifted), &ax, 1);
  *sum = node_broadcast(s, "softmax", total, in->shape, in->ndim);
  return *shifted && *sum;
}

uj_tensor *uj_tensor_softmax(uj_tensor *a, int axis) {
  const UOp *shifted, *sum;
  if (!a || !softmax_parts(a->s, "softmax", a, axis, &shifted, &sum)) return NULL;
  return tensor_wrap(a->s, "softmax", node_alu(a->s, UJ_OP_FDIV, node_unary(a->s, UJ_UN_EXP, shifted), sum));
}

uj_tensor *uj_tensor_log_softmax(uj_tensor *a, int axis) {
  const UOp *shifted, *sum;
  if (!a || !softmax_parts(a->s, "log_softmax", a, axis, &shifted, &sum)) return NULL;
  return tensor_wrap(a->s, "log_softmax", node_alu(a->s, UJ_OP_SUB, shifted, node_unary(a->s, UJ_UN_LOG, sum)));
}

/* ---- gather ---- */

uj_tensor *uj_tensor_gather(uj_tensor *a, int axis, uj_tensor *index) {
  if (!a || !index) return NULL;
  uj_session *s = a->s;
  const UOp *x = a->node, *ix = index->node;
  char b[128], c[128];
  int ax;
  if (!tensor_axis(s, "gather", axis, x->ndim, &ax)) return NULL;
  if (!dt_is_int(ix->dtype)) return tensor_fail(s, "gather", "the index must be an integer tensor");
  bool fits = ix->ndim == x->ndim && x->ndim < UJ_MAX_DIMS;
  for (unsigned k = 0; fits && k < x->ndim; k++) fits = k == (unsigned)ax || ix->shape[k] <= x->shape[k];
  if (!fits)
    return tensor_fail(s, "gather", "index of shape %s does not fit %s off axis %d", tensor_shape_str(ix, b, sizeof b),
                       tensor_shape_str(x, c, sizeof c), ax);
  int64_t on = ax; /* a load at the index read (rangeify.c), never a compare over the axis */
  const UOp *src[2] = {x, ix};
  return tensor_wrap(s, "gather", tensor_node(s, "gather", UJ_OP_GATHER, x->dtype, src, 2, (Arg){NULL, &on, 1}));
}
