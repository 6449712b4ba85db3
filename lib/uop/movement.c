/* movement.c — the tensor-level ops that move data without computing:
 * RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK, and REDUCE over axes; their
 * shapes (computed at creation) and type rules (named in the op table).
 *
 * In: a node of one of these ops. Out: its shape (movement_shape), or a
 * message saying what is wrong with its arg against its source's shape,
 * naming both shapes (the rules). Shapes are int64 lists; a source's shape
 * is () for scalars. The rules in docs/ir.md, "Tensor ops". */
#include <stdio.h>
#include <string.h>

#include "uop/movement.h"

#define FAIL(...) (snprintf(buf, size, __VA_ARGS__), buf)

/* "(4, 8)" into b. */
const char *shape_str(const int64_t *shape, unsigned ndim, char *b, size_t n) {
  size_t at = (size_t)snprintf(b, n, "(");
  for (unsigned i = 0; i < ndim && at < n; i++)
    at += (size_t)snprintf(b + at, n - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (at < n) snprintf(b + at, n - at, ndim == 1 ? ",)" : ")");
  return b;
}

int64_t shape_numel(const int64_t *shape, unsigned ndim) {
  int64_t n = 1;
  for (unsigned i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(n, shape[i], &n)) return -1;
  return n;
}

int64_t shape_span(const int64_t *shape, unsigned ndim) {
  int64_t n = 1;
  for (unsigned i = 0; i < ndim; i++)
    if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i] ? shape[i] : 1, &n)) return -1;
  return n;
}

/* ---- shapes ---- */

/* The shape of u from its source's and its arg; an invalid arg still
 * gives some shape (the type rule reports it). false: out of memory. */
bool movement_shape(Ctx *ctx, UOp *u) {
  const UOp *x = u->src[u->op == UJ_OP_GATHER ? 1 : 0]; /* GATHER has its index's shape */
  unsigned nd = x->ndim;
  switch (u->op) {
  case UJ_OP_RESHAPE:
  case UJ_OP_EXPAND: nd = u->nints; break;
  case UJ_OP_PAD:
  case UJ_OP_SHRINK: nd = u->nints / 2 < x->ndim ? u->nints / 2 : x->ndim; break;
  case UJ_OP_REDUCE: nd = u->nsrc == 1 ? x->ndim : 0; break;
  default: break;
  }
  if (nd > 255) nd = 255;
  int64_t *s = nd ? ctx_alloc(ctx, nd * sizeof *s) : NULL;
  if (nd && !s) return false;
  for (unsigned i = 0; i < nd; i++) {
    switch (u->op) {
    case UJ_OP_RESHAPE:
    case UJ_OP_EXPAND: s[i] = u->ints[i]; break;
    case UJ_OP_PERMUTE: s[i] = i < u->nints && u->ints[i] >= 0 && u->ints[i] < x->ndim ? x->shape[u->ints[i]] : 0; break;
    case UJ_OP_PAD: /* -1 on overflow: the type rule refuses such an arg */
      if (__builtin_add_overflow(x->shape[i], u->ints[2 * i], &s[i]) || __builtin_add_overflow(s[i], u->ints[2 * i + 1], &s[i])) s[i] = -1;
      break;
    case UJ_OP_SHRINK:
      if (__builtin_sub_overflow(u->ints[2 * i + 1], u->ints[2 * i], &s[i])) s[i] = -1;
      break;
    default: s[i] = x->shape[i]; break; /* FLIP; REDUCE below */
    }
  }
  for (uint32_t k = 0; u->op == UJ_OP_REDUCE && nd && k < u->nints; k++)
    if (u->ints[k] >= 0 && u->ints[k] < nd) s[u->ints[k]] = 1;
  if (u->op == UJ_OP_SCATTER && u->nints == 2 && u->ints[0] >= 0 && u->ints[0] < nd) s[u->ints[0]] = u->ints[1];
  u->shape = s, u->ndim = (uint8_t)nd;
  return true;
}

/* ---- type rules ---- */

/* The source is a tensor value, or a BUFFER: a movement op views a
 * BUFFER's memory as a tensor of its elements (shape (size)). *out: the
 * elements' dtype. */
static const char *value_source(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  const UOp *x = u->src[0];
  bool buffer = x->op == UJ_OP_BUFFER && op_has((Op)u->op, OPF_MOVEMENT);
  if (!buffer && (dt_is_ptr(x->dtype) || dt_is_void(x->dtype)))
    return FAIL("%s takes a value or a BUFFER, not %s", op_table[u->op].name, dtype_str(x->dtype, a, sizeof a));
  *out = dt_base(x->dtype);
  return NULL;
}

/* Each int of the arg an axis of x, each once; `what` names them. */
static const char *axes_error(const UOp *u, const char *what, char *buf, size_t size) {
  char a[160];
  const UOp *x = u->src[0];
  for (uint32_t i = 0; i < u->nints; i++) {
    if (u->ints[i] < 0 || u->ints[i] >= x->ndim)
      return FAIL("%s %lld is not an axis of shape %s", what, (long long)u->ints[i],
                  shape_str(x->shape, x->ndim, a, sizeof a));
    for (uint32_t j = 0; j < i; j++)
      if (u->ints[j] == u->ints[i])
        return FAIL("%s %lld is given twice", what, (long long)u->ints[i]);
  }
  return NULL;
}

const char *movement_rule_reshape(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160], b[160];
  const UOp *x = u->src[0];
  const char *err = value_source(u, out, buf, size);
  if (err) return err;
  for (uint32_t i = 0; i < u->nints; i++)
    if (u->ints[i] < 0) return FAIL("RESHAPE to %s: a negative size", shape_str(u->ints, u->nints, a, sizeof a));
  if (u->nints > 255) return FAIL("RESHAPE to %u dimensions: at most 255", (unsigned)u->nints);
  if (shape_numel(u->ints, u->nints) != shape_numel(x->shape, x->ndim))
    return FAIL("RESHAPE of %s to %s: %lld elements are not %lld", shape_str(x->shape, x->ndim, a, sizeof a),
                shape_str(u->ints, u->nints, b, sizeof b), (long long)shape_numel(x->shape, x->ndim),
                (long long)shape_numel(u->ints, u->nints));
  return NULL;
}

const char *movement_rule_expand(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160], b[160];
  const UOp *x = u->src[0];
  bool ok = u->nints == x->ndim;
  for (uint32_t i = 0; ok && i < u->nints; i++) ok = u->ints[i] == x->shape[i] || (x->shape[i] == 1 && u->ints[i] >= 0);
  if (!ok)
    return FAIL("EXPAND of %s to %s: only axes of size 1 expand, and the rank stays",
                shape_str(x->shape, x->ndim, a, sizeof a), shape_str(u->ints, u->nints, b, sizeof b));
  return value_source(u, out, buf, size);
}

const char *movement_rule_permute(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160], b[160];
  const UOp *x = u->src[0];
  if (u->nints != x->ndim)
    return FAIL("PERMUTE of %s by %s: the order must name each of its %u axes once",
                shape_str(x->shape, x->ndim, a, sizeof a), shape_str(u->ints, u->nints, b, sizeof b), x->ndim);
  const char *err = axes_error(u, "axis", buf, size);
  return err ? err : value_source(u, out, buf, size);
}

const char *movement_rule_flip(const UOp *u, DType *out, char *buf, size_t size) {
  const char *err = axes_error(u, "axis", buf, size);
  return err ? err : value_source(u, out, buf, size);
}

/* PAD and SHRINK: (lo, hi) per axis of x. */
const char *movement_rule_pad_shrink(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160];
  const UOp *x = u->src[0];
  const char *name = op_table[u->op].name;
  if (u->nints != 2u * x->ndim)
    return FAIL("%s of %s takes %u (lo, hi) pairs, not %u ints", name, shape_str(x->shape, x->ndim, a, sizeof a),
                x->ndim, (unsigned)u->nints);
  for (unsigned i = 0; i < x->ndim; i++) {
    int64_t lo = u->ints[2 * i], hi = u->ints[2 * i + 1];
    bool ok = u->op == UJ_OP_PAD ? lo >= 0 && hi >= 0 && lo <= INT64_MAX / 4 && hi <= INT64_MAX / 4
                                 : 0 <= lo && lo <= hi && hi <= x->shape[i];
    if (!ok)
      return FAIL("%s of %s: (%lld, %lld) is out of range for axis %u", name, shape_str(x->shape, x->ndim, a, sizeof a),
                  (long long)lo, (long long)hi, i);
  }
  return value_source(u, out, buf, size);
}

/* REDUCE: over axes of one tensor source (the tensor form), or over the
 * RANGE sources after the value (the kernel form); the arg names the op. */
const char *movement_rule_reduce(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  const UOp *x = u->src[0];
  Op op;
  if (!op_from_name(u->name, strlen(u->name), &op) || (op != UJ_OP_ADD && op != UJ_OP_MUL && op != UJ_OP_MAX && op != UJ_OP_MULACC))
    return FAIL("REDUCE by '%s': it reduces by ADD, MULACC, MUL or MAX", u->name);
  if (!dt_is_int(x->dtype) && !dt_is_float(x->dtype) && !(dt_is_bool(x->dtype) && op == UJ_OP_MAX))
    return FAIL("REDUCE %s does not take dtype %s", u->name, dtype_str(x->dtype, a, sizeof a));
  if (u->nints > 0 && u->nsrc == 1 && u->nints > x->ndim)
    return FAIL("REDUCE over %u axes of a %u-axis tensor", (unsigned)u->nints, x->ndim);
  for (uint32_t i = 1; i < u->nsrc; i++)
    if (u->src[i]->op != UJ_OP_RANGE) return FAIL("REDUCE source %u is a %s, not a RANGE", i, op_table[u->src[i]->op].name);
  if (u->nsrc > 1 && u->nints) return FAIL("REDUCE over RANGEs takes no axes");
  *out = x->dtype;
  return u->nsrc == 1 ? axes_error(u, "axis", buf, size) : NULL;
}


/* GATHER(x, index) axis: out[.., i, ..] = x[.., index[.., i, ..], ..] along
 * axis, zero where the index is outside x's axis; index is an integer
 * tensor of x's rank, its other axes no longer than x's; out has its shape. */
const char *movement_rule_gather(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160], b[160];
  const UOp *x = u->src[0], *ix = u->src[1];
  if (dt_is_ptr(x->dtype) || dt_is_void(x->dtype)) return FAIL("GATHER takes a tensor value, not %s", dtype_str(x->dtype, a, sizeof a));
  if (!dt_is_int(ix->dtype) || ix->dtype.lanes != 1) return FAIL("GATHER index must be an integer tensor, not %s", dtype_str(ix->dtype, a, sizeof a));
  if (u->nints != 1 || u->ints[0] < 0 || u->ints[0] >= x->ndim)
    return FAIL("GATHER takes one axis of %s", shape_str(x->shape, x->ndim, a, sizeof a));
  bool fits = ix->ndim == x->ndim;
  for (unsigned k = 0; fits && k < x->ndim; k++) fits = k == u->ints[0] || ix->shape[k] <= x->shape[k];
  if (!fits)
    return FAIL("GATHER index of shape %s does not fit %s off axis %lld", shape_str(ix->shape, ix->ndim, a, sizeof a),
                shape_str(x->shape, x->ndim, b, sizeof b), (long long)u->ints[0]);
  *out = x->dtype;
  return NULL;
}

/* SCATTER(g, index) axis size: zeros of g's shape with `size` on axis, and
 * g[.., i, ..] added at [.., index[.., i, ..], ..]; an index outside
 * [0, size) adds nothing. index has g's shape. The adjoint of GATHER. */
const char *movement_rule_scatter(const UOp *u, DType *out, char *buf, size_t size) {
  char a[160], b[160];
  const UOp *g = u->src[0], *ix = u->src[1];
  if (!dt_is_int(g->dtype) && !dt_is_float(g->dtype)) return FAIL("SCATTER adds numbers, not %s", dtype_str(g->dtype, a, sizeof a));
  if (!dt_is_int(ix->dtype) || ix->dtype.lanes != 1) return FAIL("SCATTER index must be an integer tensor, not %s", dtype_str(ix->dtype, a, sizeof a));
  if (u->nints != 2 || u->ints[0] < 0 || u->ints[0] >= g->ndim || u->ints[1] < 0 || u->ints[1] > SHAPE_MAX_ELEMENTS)
    return FAIL("SCATTER takes an axis of %s and a size", shape_str(g->shape, g->ndim, a, sizeof a));
  if (ix->ndim != g->ndim || memcmp(ix->shape, g->shape, g->ndim * sizeof *g->shape) != 0)
    return FAIL("SCATTER index of shape %s is not the values' %s", shape_str(ix->shape, ix->ndim, a, sizeof a),
                shape_str(g->shape, g->ndim, b, sizeof b));
  *out = g->dtype;
  return NULL;
}
