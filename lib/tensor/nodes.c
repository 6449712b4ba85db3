/* nodes.c — building tensor-level nodes for the API (tensor_impl.h): each
 * builder checks its arguments against its source's shape first, so a
 * user's mistake is reported as "op: message" naming both shapes, and then
 * holds the node to the op table's type rule. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensor/tensor_impl.h"
#include "uop/alu.h"
#include "uop/movement.h"
#include "uop/spec.h"

const char *tensor_shape_str(const UOp *t, char *buf, size_t n) { return shape_str(t->shape, t->ndim, buf, n); }

bool tensor_axis(uj_session *s, const char *op, int axis, unsigned ndim, int *out) {
  int a = axis < 0 ? axis + (int)ndim : axis;
  if (a < 0 || a >= (int)ndim) {
    tensor_fail(s, op, "axis %d is out of range for a tensor of %u axes", axis, ndim);
    return false;
  }
  *out = a;
  return true;
}

const UOp *tensor_node(uj_session *s, const char *op, Op kind, DType d, const UOp *const *src, size_t n, Arg arg) {
  for (size_t i = 0; i < n; i++)
    if (!src[i]) return NULL;
  const UOp *u = uop_new(s->ctx, kind, d, src, n, arg);
  if (!u) return tensor_fail(s, op, "out of memory");
  char buf[256];
  const char *err = spec_node_error(u, buf, sizeof buf);
  return err ? tensor_fail(s, op, "%s", err) : u;
}

const UOp *node_reshape(uj_session *s, const UOp *x, const int64_t *shape, unsigned ndim) {
  char a[128], b[128];
  if (!x) return NULL;
  if (ndim > UJ_MAX_DIMS) return tensor_fail(s, "reshape", "%u axes; at most %d", ndim, UJ_MAX_DIMS);
  for (unsigned k = 0; k < ndim; k++)
    if (shape[k] < 0) return tensor_fail(s, "reshape", "negative size in %s", shape_str(shape, ndim, a, sizeof a));
  if (shape_numel(shape, ndim) != shape_numel(x->shape, x->ndim))
    return tensor_fail(s, "reshape", "cannot reshape %s (%lld elements) to %s (%lld elements)", tensor_shape_str(x, a, sizeof a),
                       (long long)shape_numel(x->shape, x->ndim), shape_str(shape, ndim, b, sizeof b),
                       (long long)shape_numel(shape, ndim));
  if (ndim == x->ndim && (ndim == 0 || !memcmp(shape, x->shape, ndim * sizeof *shape))) return x;
  DType d = x->dtype;
  if (x->op == UJ_OP_RESHAPE) x = x->src[0]; /* a reshape of a reshape is one */
  return tensor_node(s, "reshape", UJ_OP_RESHAPE, d, &x, 1, (Arg){NULL, shape, ndim});
}

const UOp *node_expand(uj_session *s, const UOp *x, const int64_t *shape, unsigned ndim) {
  char a[128], b[128];
  if (!x) return NULL;
  bool ok = ndim == x->ndim;
  for (unsigned k = 0; ok && k < ndim; k++) ok = shape[k] == x->shape[k] || (x->shape[k] == 1 && shape[k] >= 0);
  if (!ok) return tensor_fail(s, "expand", "cannot expand %s to %s", tensor_shape_str(x, a, sizeof a), shape_str(shape, ndim, b, sizeof b));
  if (ndim == 0 || !memcmp(shape, x->shape, ndim * sizeof *shape)) return x;
  return tensor_node(s, "expand", UJ_OP_EXPAND, x->dtype, &x, 1, (Arg){NULL, shape, ndim});
}

const UOp *node_permute(uj_session *s, const UOp *x, const int64_t *order) {
  if (!x) return NULL;
  bool identity = true;
  for (unsigned k = 0; k < x->ndim; k++) identity &= order[k] == k;
  return identity ? x : tensor_node(s, "permute", UJ_OP_PERMUTE, x->dtype, &x, 1, (Arg){NULL, order, x->ndim});
}

static bool all_zero(const int64_t *v, unsigned n) {
  for (unsigned k = 0; k < n; k++)
    if (v[k]) return false;
  return true;
}

const UOp *node_pad(uj_session *s, const UOp *x, const int64_t *lohi) {
  if (!x) return NULL;
  for (unsigned k = 0; k < 2u * x->ndim; k++)
    if (lohi[k] < 0) return tensor_fail(s, "pad", "axis %u: pad (%lld, %lld) is negative", k / 2, (long long)lohi[k & ~1u], (long long)lohi[k | 1u]);
  if (all_zero(lohi, 2u * x->ndim)) return x;
  return tensor_node(s, "pad", UJ_OP_PAD, x->dtype, &x, 1, (Arg){NULL, lohi, 2u * x->ndim});
}

const UOp *node_shrink(uj_session *s, const UOp *x, const int64_t *lohi) {
  char a[128];
  if (!x) return NULL;
  bool identity = true;
  for (unsigned k = 0; k < x->ndim; k++) {
    if (lohi[2 * k] < 0 || lohi[2 * k] > lohi[2 * k + 1] || lohi[2 * k + 1] > x->shape[k])
      return tensor_fail(s, "shrink", "axis %u: range [%lld, %lld) is not within 0..%lld of %s", k, (long long)lohi[2 * k],
                         (long long)lohi[2 * k + 1], (long long)x->shape[k], tensor_shape_str(x, a, sizeof a));
    identity &= lohi[2 * k] == 0 && lohi[2 * k + 1] == x->shape[k];
  }
  return identity ? x : tensor_node(s, "shrink", UJ_OP_SHRINK, x->dtype, &x, 1, (Arg){NULL, lohi, 2u * x->ndim});
}

bool node_check_span(uj_session *s, const char *op, const int64_t *shape, unsigned ndim) {
  char a[160];
  int64_t span = shape_span(shape, ndim);
  if (span >= 0 && span <= SHAPE_MAX_SPAN) return true;
  shape_str(shape, ndim, a, sizeof a);
  for (unsigned k = 0; k < ndim; k++)
    if (shape[k] < 0) return tensor_fail(s, op, "shape %s: axis %u has negative size %lld", a, k, (long long)shape[k]), false;
  tensor_fail(s, op, "shape %s is too large: its sizes, a 0 counted as 1, multiply past 2^52 (inside the op)", a);
  return false;
}

const UOp *node_broadcast(uj_session *s, const char *op, const UOp *x, const int64_t *shape, unsigned ndim) {
  char a[128], b[128];
  if (!x) return NULL;
  if (x->ndim > ndim) goto bad;
  if (!node_check_span(s, op, shape, ndim)) return NULL;
  int64_t lifted[UJ_MAX_DIMS];
  for (unsigned k = 0; k < ndim; k++) {
    int64_t d = k < ndim - x->ndim ? 1 : x->shape[k - (ndim - x->ndim)];
    if (d != 1 && d != shape[k]) goto bad;
    lifted[k] = d;
  }
  return node_expand(s, node_reshape(s, x, lifted, ndim), shape, ndim);
bad:
  return tensor_fail(s, op, "shapes %s and %s do not broadcast", tensor_shape_str(x, a, sizeof a), shape_str(shape, ndim, b, sizeof b));
}

const UOp *node_full(uj_session *s, DType d, double v, const int64_t *shape, unsigned ndim) {
  const UOp *c = uj_const_float(s->ctx, d, v);
  if (dt_is_bool(d)) c = uj_const_bool(s->ctx, v != 0);
  if (!c) return tensor_fail(s, "full", "%s", uj_error(s->ctx));
  return node_broadcast(s, "full", c, shape, ndim);
}

const UOp *node_alu(uj_session *s, Op op, const UOp *a, const UOp *b) {
  if (!a || (op_has(op, OPF_BINARY) && !b)) return NULL;
  const UOp *src[2] = {a, b};
  DType d = op_has(op, OPF_COMPARE) ? dt_scalar(UJ_BOOL) : a->dtype;
  return tensor_node(s, op_table[op].name, op, d, src, op_has(op, OPF_BINARY) ? 2 : 1, arg_none());
}

const UOp *node_cast(uj_session *s, const UOp *x, uj_scalar to) {
  if (!x || x->dtype.scalar == to) return x;
  return tensor_node(s, "cast", UJ_OP_CAST, dt_scalar(to), &x, 1, arg_none());
}

/* Float beats int beats bool; within a kind the wider wins; mixed
 * signedness takes a signed type that holds both. */
uj_scalar node_promoted_dtype(uj_scalar a, uj_scalar b) {
  DType da = dt_scalar(a), db = dt_scalar(b);
  if (a == b) return a;
  if (dt_is_bool(da)) return b;
  if (dt_is_bool(db)) return a;
  if (dt_is_float(da) != dt_is_float(db)) return dt_is_float(da) ? a : b;
  unsigned ba = dt_bits(da), bb = dt_bits(db);
  if (dt_is_float(da)) return ba == bb ? UJ_FLOAT32 : ba > bb ? a : b; /* float16 with bfloat16 */
  bool sa = dt_is_signed(da), sb = dt_is_signed(db);
  if (sa == sb) return ba > bb ? a : b;
  unsigned su = sa ? bb : ba, ss = sa ? ba : bb; /* bits of the unsigned, the signed */
  if (ss > su) return sa ? a : b;
  return su >= 64 ? UJ_FLOAT64 : su >= 32 ? UJ_INT64 : su >= 16 ? UJ_INT32 : UJ_INT16;
}

bool node_broadcast_pair(uj_session *s, const char *op, const UOp **a, const UOp **b) {
  char x[128], y[128];
  if (!*a || !*b) return false;
  int64_t shape[UJ_MAX_DIMS];
  unsigned nd = (*a)->ndim > (*b)->ndim ? (*a)->ndim : (*b)->ndim;
  for (unsigned k = 0; k < nd; k++) {
    int64_t da = k + (*a)->ndim >= nd ? (*a)->shape[k + (*a)->ndim - nd] : 1;
    int64_t db = k + (*b)->ndim >= nd ? (*b)->shape[k + (*b)->ndim - nd] : 1;
    if (da != db && da != 1 && db != 1) {
      tensor_fail(s, op, "shapes %s and %s do not broadcast", tensor_shape_str(*a, x, sizeof x), tensor_shape_str(*b, y, sizeof y));
      return false;
    }
    shape[k] = da == 1 ? db : da;
  }
  *a = node_broadcast(s, op, *a, shape, nd);
  *b = node_broadcast(s, op, *b, shape, nd);
  return *a && *b;
}

bool node_promote(uj_session *s, const char *op, const UOp **a, const UOp **b) {
  if (!*a || !*b) return false;
  uj_scalar d = node_promoted_dtype((uj_scalar)(*a)->dtype.scalar, (uj_scalar)(*b)->dtype.scalar);
  *a = node_cast(s, *a, d), *b = node_cast(s, *b, d);
  return node_broadcast_pair(s, op, a, b);
}

const UOp *node_reduce(uj_session *s, Op op, const UOp *x, const int64_t *axes, unsigned n) {
  if (!x) return NULL;
  if (n == 0) return x;
  if (op == UJ_OP_ADD && dt_is_float(x->dtype) && x->op == UJ_OP_MUL) op = UJ_OP_MULACC; /* a sum of products: fused */
  return tensor_node(s, "reduce", UJ_OP_REDUCE, x->dtype, &x, 1, (Arg){op_table[op].name, axes, n});
}

/* ---- unary math, built from the ALU ops ---- */

static const UOp *k(uj_session *s, const UOp *like, double v) { return node_full(s, like->dtype, v, like->shape, like->ndim); }

static const UOp *sigmoid(uj_session *s, const UOp *x) { /* 1 / (1 + exp(-x)) */
  const UOp *e = node_unary(s, UJ_UN_EXP, node_alu(s, UJ_OP_NEG, x, NULL));
  return node_alu(s, UJ_OP_RECIP, node_alu(s, UJ_OP_ADD, e, k(s, x, 1)), NULL);
}

static const UOp *tanh_of(uj_session *s, const UOp *x) { /* 2 sigmoid(2x) - 1 */
  const UOp *sg = sigmoid(s, node_alu(s, UJ_OP_MUL, x, k(s, x, 2)));
  return node_alu(s, UJ_OP_SUB, node_alu(s, UJ_OP_MUL, sg, k(s, x, 2)), k(s, x, 1));
}

static const UOp *gelu(uj_session *s, const UOp *x) { /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  const UOp *x3 = node_alu(s, UJ_OP_MUL, node_alu(s, UJ_OP_MUL, x, x), x);
  const UOp *in = node_alu(s, UJ_OP_ADD, x, node_alu(s, UJ_OP_MUL, x3, k(s, x, 0.044715)));
  const UOp *t = tanh_of(s, node_alu(s, UJ_OP_MUL, in, k(s, x, 0.7978845608028654)));
  return node_alu(s, UJ_OP_MUL, node_alu(s, UJ_OP_MUL, x, k(s, x, 0.5)), node_alu(s, UJ_OP_ADD, t, k(s, x, 1)));
}

const UOp *node_unary(uj_session *s, uj_unop op, const UOp *x) {
  if (!x) return NULL;
  switch (op) {
  case UJ_UN_NEG: return dt_is_bool(x->dtype) ? node_unary(s, UJ_UN_NOT, x) : node_alu(s, UJ_OP_NEG, x, NULL);
  case UJ_UN_EXP: return node_alu(s, UJ_OP_EXP2, node_alu(s, UJ_OP_MUL, x, k(s, x, 1.4426950408889634)), NULL);
  case UJ_UN_LOG: return node_alu(s, UJ_OP_MUL, node_alu(s, UJ_OP_LOG2, x, NULL), k(s, x, 0.6931471805599453));
  case UJ_UN_EXP2: return node_alu(s, UJ_OP_EXP2, x, NULL);
  case UJ_UN_LOG2: return node_alu(s, UJ_OP_LOG2, x, NULL);
  case UJ_UN_SQRT: return node_alu(s, UJ_OP_SQRT, x, NULL);
  case UJ_UN_RECIP: return node_alu(s, UJ_OP_RECIP, x, NULL);
  case UJ_UN_SIN: return node_alu(s, UJ_OP_SIN, x, NULL);
  case UJ_UN_COS: { /* sin(pi/2 - x), in float64 below 64 bits: the subtraction is then exact enough */
    const UOp *w = dt_bits(x->dtype) < 64 ? node_cast(s, x, UJ_FLOAT64) : x;
    const UOp *c = node_alu(s, UJ_OP_SIN, node_alu(s, UJ_OP_SUB, k(s, w, 1.5707963267948966), w), NULL);
    return node_cast(s, c, (uj_scalar)x->dtype.scalar);
  }
  case UJ_UN_ABS: {
    const UOp *neg = node_alu(s, UJ_OP_CMPLT, x, k(s, x, 0));
    const UOp *src[3] = {neg, node_alu(s, UJ_OP_NEG, x, NULL), x};
    return tensor_node(s, "abs", UJ_OP_WHERE, x->dtype, src, 3, arg_none());
  }
  case UJ_UN_RELU: return node_alu(s, UJ_OP_MAX, x, k(s, x, 0));
  case UJ_UN_SIGMOID: return sigmoid(s, x);
  case UJ_UN_TANH: return tanh_of(s, x);
  case UJ_UN_GELU: return gelu(s, x);
  case UJ_UN_NOT:
    if (dt_is_bool(x->dtype)) return node_alu(s, UJ_OP_CMPEQ, x, node_full(s, x->dtype, 0, x->shape, x->ndim));
    return node_alu(s, UJ_OP_XOR, x, node_broadcast(s, "not", uj_const_int(s->ctx, x->dtype, -1), x->shape, x->ndim)); /* all ones */
  case UJ_UN_COUNT: break;
  }
  return tensor_fail(s, "unary", "unknown op %d", (int)op);
}
