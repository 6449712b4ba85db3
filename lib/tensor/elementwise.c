/* elementwise.c — binary and unary ops, casts and where (tensor.h), as ALU
 * nodes on operands broadcast to one shape and promoted to one dtype
 * (nodes.c). Ops the op table lacks are built of those it has: division is
 * a multiply by RECIP only where FDIV is not exact, min is a WHERE, <= is
 * (< or ==), pow is exp2(b log2 a) with the sign and zero cases of C's pow,
 * or a chain of multiplies for a small integer exponent. */
#include <math.h>

#include "tensor/tensor_impl.h"

static const char *const binop_names[UJ_BIN_COUNT] = {
  "add", "sub", "mul", "div", "pow", "maximum", "minimum", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor",
};
static const char *const unop_names[UJ_UN_COUNT] = {
  "neg", "exp", "log", "exp2", "log2", "sqrt", "recip", "sin", "cos", "abs", "relu", "gelu", "sigmoid", "tanh", "not",
};

const char *uj_binop_name(uj_binop op) { return (unsigned)op < UJ_BIN_COUNT ? binop_names[op] : "?"; }
const char *uj_unop_name(uj_unop op) { return (unsigned)op < UJ_UN_COUNT ? unop_names[op] : "?"; }

static const UOp *k(uj_session *s, const UOp *like, double v) { return node_full(s, like->dtype, v, like->shape, like->ndim); }

static const UOp *where(uj_session *s, const UOp *c, const UOp *a, const UOp *b) {
  const UOp *src[3] = {c, a, b};
  return a && b && c ? tensor_node(s, "where", UJ_OP_WHERE, a->dtype, src, 3, arg_none()) : NULL;
}

/* a ** b, floats: |a| ** b, negative for a < 0 and odd integer b, NaN for
 * a < 0 and non-integer b, 1 for b == 0. */
static const UOp *pow_float(uj_session *s, const UOp *a, const UOp *b) {
  const UOp *mag = node_alu(s, UJ_OP_EXP2, node_alu(s, UJ_OP_MUL, b, node_alu(s, UJ_OP_LOG2, node_unary(s, UJ_UN_ABS, a), NULL)), NULL);
  const UOp *bi = node_cast(s, node_cast(s, b, UJ_INT64), (uj_scalar)b->dtype.scalar);
  const UOp *integral = node_alu(s, UJ_OP_CMPEQ, bi, b);
  const UOp *odd = node_alu(s, UJ_OP_CMPNE, node_alu(s, UJ_OP_AND, node_cast(s, b, UJ_INT64), node_cast(s, k(s, b, 1), UJ_INT64)),
                            node_cast(s, k(s, b, 0), UJ_INT64));
  const UOp *neg = node_alu(s, UJ_OP_CMPLT, a, k(s, a, 0));
  const UOp *signed_mag = where(s, node_alu(s, UJ_OP_AND, odd, integral), node_alu(s, UJ_OP_NEG, mag, NULL), mag);
  const UOp *r = where(s, neg, where(s, integral, signed_mag, k(s, a, NAN)), mag);
  return where(s, node_alu(s, UJ_OP_CMPEQ, b, k(s, b, 0)), k(s, a, 1), r);
}

/* a ** n for an integer n, |n| <= 64: square and multiply. */
static const UOp *pow_int(uj_session *s, const UOp *a, int64_t n) {
  const UOp *r = k(s, a, 1), *sq = a;
  for (int64_t e = n < 0 ? -n : n; e; e >>= 1, sq = e ? node_alu(s, UJ_OP_MUL, sq, sq) : sq)
    if (e & 1) r = r == NULL ? NULL : node_alu(s, UJ_OP_MUL, r, sq);
  return n < 0 ? node_alu(s, UJ_OP_RECIP, r, NULL) : r;
}

static const UOp *divide(uj_session *s, const UOp *a, const UOp *b) {
  if (!dt_is_float(a->dtype)) a = node_cast(s, a, UJ_FLOAT32), b = node_cast(s, b, UJ_FLOAT32);
  return node_alu(s, UJ_OP_FDIV, a, b);
}

/* The op on a and b, already of one shape and dtype. */
static const UOp *binary(uj_session *s, uj_binop op, const UOp *a, const UOp *b) {
  const char *name = uj_binop_name(op);
  bool boolean = dt_is_bool(a->dtype);
  if (boolean && op <= UJ_BIN_POW) return binary(s, op, node_cast(s, a, UJ_INT32), node_cast(s, b, UJ_INT32));
  if (op >= UJ_BIN_AND && dt_is_float(a->dtype)) return tensor_fail(s, name, "takes bool or integer tensors, not floats");
  switch (op) {
  case UJ_BIN_ADD: return node_alu(s, boolean ? UJ_OP_OR : UJ_OP_ADD, a, b);
  case UJ_BIN_SUB: return node_alu(s, UJ_OP_SUB, a, b);
  case UJ_BIN_MUL: return node_alu(s, boolean ? UJ_OP_AND : UJ_OP_MUL, a, b);
  case UJ_BIN_DIV: return divide(s, a, b);
  case UJ_BIN_POW:
    if (!dt_is_float(a->dtype)) return pow_float(s, node_cast(s, a, UJ_FLOAT32), node_cast(s, b, UJ_FLOAT32));
    return pow_float(s, a, b);
  case UJ_BIN_MAXIMUM: return boolean ? node_alu(s, UJ_OP_OR, a, b) : node_alu(s, UJ_OP_MAX, a, b);
  case UJ_BIN_MINIMUM: return where(s, node_alu(s, UJ_OP_CMPLT, a, b), a, b);
  case UJ_BIN_LT: return node_alu(s, UJ_OP_CMPLT, a, b);
  case UJ_BIN_GT: return node_alu(s, UJ_OP_CMPLT, b, a);
  case UJ_BIN_LE: return node_alu(s, UJ_OP_OR, node_alu(s, UJ_OP_CMPLT, a, b), node_alu(s, UJ_OP_CMPEQ, a, b));
  case UJ_BIN_GE: return node_alu(s, UJ_OP_OR, node_alu(s, UJ_OP_CMPLT, b, a), node_alu(s, UJ_OP_CMPEQ, a, b));
  case UJ_BIN_EQ: return node_alu(s, UJ_OP_CMPEQ, a, b);
  case UJ_BIN_NE: return node_alu(s, UJ_OP_CMPNE, a, b);
  case UJ_BIN_AND: return node_alu(s, UJ_OP_AND, a, b);
  case UJ_BIN_OR: return node_alu(s, UJ_OP_OR, a, b);
  case UJ_BIN_XOR: return node_alu(s, UJ_OP_XOR, a, b);
  case UJ_BIN_COUNT: break;
  }
  return tensor_fail(s, "binary", "unknown op %d", (int)op);
}

uj_tensor *uj_tensor_binary(uj_binop op, uj_tensor *a, uj_tensor *b) {
  if (!a || !b) return NULL;
  if (a->s != b->s) return tensor_fail(a->s, uj_binop_name(op), "the tensors belong to different sessions");
  if ((unsigned)op >= UJ_BIN_COUNT) return tensor_fail(a->s, "binary", "unknown op %d", (int)op);
  const UOp *x = a->node, *y = b->node;
  if (!node_promote(a->s, uj_binop_name(op), &x, &y)) return NULL;
  return tensor_wrap(a->s, uj_binop_name(op), binary(a->s, op, x, y));
}

/* Whether the integral v is a value of the integer dtype d. */
static bool scalar_fits(DType d, double v) {
  int bits = (int)dt_bits(d);
  double lo = dt_is_signed(d) ? -ldexp(1, bits - 1) : 0, hi = ldexp(1, dt_is_signed(d) ? bits - 1 : bits);
  return v >= lo && v < hi;
}

/* The dtype an integer tensor of dtype d takes for an integral v that d
 * cannot hold (taking d would wrap or saturate v: a quiet wrong answer),
 * as NumPy's value-based casting: the narrowest integer of d's
 * signedness (signed when v < 0) that holds v, promoted with d
 * (int8 + 300: int16; uint8 - (-1): int16). |v| < 2^63 here. */
static uj_scalar scalar_dtype(DType d, double v) {
  static const uj_scalar sig[] = {UJ_INT8, UJ_INT16, UJ_INT32, UJ_INT64}, uns[] = {UJ_UINT8, UJ_UINT16, UJ_UINT32, UJ_UINT64};
  bool want_signed = dt_is_signed(d) || v < 0;
  for (int k = 0; k < 4; k++) {
    uj_scalar w = want_signed ? sig[k] : uns[k];
    if (scalar_fits(dt_scalar(w), v)) return node_promoted_dtype((uj_scalar)d.scalar, w);
  }
  return UJ_FLOAT64;
}

uj_tensor *uj_tensor_binary_scalar(uj_binop op, uj_tensor *a, double v, bool v_left) {
  if (!a) return NULL;
  uj_session *s = a->s;
  if ((unsigned)op >= UJ_BIN_COUNT) return tensor_fail(s, "binary", "unknown op %d", (int)op);
  const UOp *x = a->node;
  bool integral = v == floor(v) && fabs(v) < 9.2e18;
  if (op == UJ_BIN_POW && !v_left && integral && fabs(v) <= 64 && (dt_is_float(x->dtype) || v >= 0))
    return tensor_wrap(s, "pow", pow_int(s, dt_is_bool(x->dtype) ? node_cast(s, x, UJ_INT32) : x, (int64_t)v));
  if (!dt_is_float(x->dtype) && !integral) x = node_cast(s, x, UJ_FLOAT32);
  else if (dt_is_bool(x->dtype) && !(v == 0 || v == 1) && op < UJ_BIN_AND) x = node_cast(s, x, UJ_INT32);
  if (dt_is_int(x->dtype) && !scalar_fits(x->dtype, v)) x = node_cast(s, x, scalar_dtype(x->dtype, v));
  const UOp *c = node_full(s, x->dtype, v, x->shape, x->ndim);
  return tensor_wrap(s, uj_binop_name(op), c ? binary(s, op, v_left ? c : x, v_left ? x : c) : NULL);
}

uj_tensor *uj_tensor_unary(uj_unop op, uj_tensor *a) {
  if (!a) return NULL;
  if ((unsigned)op >= UJ_UN_COUNT) return tensor_fail(a->s, "unary", "unknown op %d", (int)op);
  const UOp *x = a->node;
  bool keeps_ints = op == UJ_UN_NEG || op == UJ_UN_ABS || op == UJ_UN_RELU || op == UJ_UN_NOT;
  if (op == UJ_UN_NOT && dt_is_float(x->dtype)) return tensor_fail(a->s, "not", "takes bool or integer tensors, not floats");
  if (!keeps_ints && !dt_is_float(x->dtype)) x = node_cast(a->s, x, UJ_FLOAT32);
  if (dt_is_bool(x->dtype) && op != UJ_UN_NOT && op != UJ_UN_NEG) x = node_cast(a->s, x, UJ_INT32);
  return tensor_wrap(a->s, uj_unop_name(op), node_unary(a->s, op, x));
}

uj_tensor *uj_tensor_cast(uj_tensor *a, uj_scalar dtype) {
  if (!a) return NULL;
  if ((unsigned)dtype >= UJ_SCALAR_COUNT || dtype == UJ_VOID) return tensor_fail(a->s, "cast", "bad dtype %d", (int)dtype);
  return tensor_wrap(a->s, "cast", node_cast(a->s, a->node, dtype));
}

uj_tensor *uj_tensor_where(uj_tensor *cond, uj_tensor *a, uj_tensor *b) {
  if (!cond || !a || !b) return NULL;
  uj_session *s = cond->s;
  if (a->s != s || b->s != s) return tensor_fail(s, "where", "the tensors belong to different sessions");
  const UOp *x = a->node, *y = b->node, *c = node_cast(s, cond->node, UJ_BOOL); /* nonzero is true */
  if (!node_promote(s, "where", &x, &y) || !node_broadcast_pair(s, "where", &c, &x)) return NULL;
  y = node_broadcast(s, "where", y, x->shape, x->ndim); /* one shape for all three */
  return tensor_wrap(s, "where", where(s, c, x, y));
}
