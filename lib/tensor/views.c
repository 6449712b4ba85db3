/* views.c — movement ops on tensors (tensor.h): reshape (one -1 inferred),
 * expand (NumPy broadcasting), permute, transpose, flip, pad, shrink, and
 * cat/stack built from them (each input padded to the whole along the
 * axis, -0.0 where it is not for floats, the parts added: exact, one
 * fused kernel for up to 32 inputs, a tree of staged groups past that). */
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_impl.h"
#include "uop/movement.h"

uj_tensor *uj_tensor_reshape(uj_tensor *a, const int64_t *shape, unsigned ndim) {
  if (!a) return NULL;
  uj_session *s = a->s;
  if (ndim > UJ_MAX_DIMS) return tensor_fail(s, "reshape", "%u axes; at most %d", ndim, UJ_MAX_DIMS);
  int64_t want[UJ_MAX_DIMS], known = 1;
  int infer = -1;
  for (unsigned k = 0; k < ndim; k++) {
    want[k] = shape[k];
    if (shape[k] == -1 && infer < 0) infer = (int)k;
    else if (shape[k] == -1) return tensor_fail(s, "reshape", "more than one -1 in the new shape");
    else if (shape[k] < 0) return tensor_fail(s, "reshape", "axis %u has negative size %lld", k, (long long)shape[k]);
    else if (__builtin_mul_overflow(known, shape[k], &known)) known = -1; /* matches no element count */
  }
  if (infer >= 0) {
    int64_t total = shape_numel(a->node->shape, a->node->ndim);
    char b[128], c[128];
    if (known <= 0 || total % known)
      return tensor_fail(s, "reshape", "cannot reshape %s to %s", tensor_shape_str(a->node, b, sizeof b), shape_str(shape, ndim, c, sizeof c));
    want[infer] = total / known;
  }
  return tensor_wrap(s, "reshape", node_reshape(s, a->node, want, ndim));
}

uj_tensor *uj_tensor_expand(uj_tensor *a, const int64_t *shape, unsigned ndim) {
  if (!a) return NULL;
  if (ndim > UJ_MAX_DIMS) return tensor_fail(a->s, "expand", "%u axes; at most %d", ndim, UJ_MAX_DIMS);
  int64_t want[UJ_MAX_DIMS];
  for (unsigned k = 0; k < ndim; k++) /* -1 keeps the size */
    want[k] = shape[k] == -1 && k + a->node->ndim >= ndim ? a->node->shape[k + a->node->ndim - ndim] : shape[k];
  return tensor_wrap(a->s, "expand", node_broadcast(a->s, "expand", a->node, want, ndim));
}

uj_tensor *uj_tensor_permute(uj_tensor *a, const int *order, unsigned n) {
  if (!a) return NULL;
  unsigned nd = a->node->ndim;
  if (n != nd) return tensor_fail(a->s, "permute", "%u axes given for a tensor of %u", n, nd);
  int64_t o[UJ_MAX_DIMS];
  bool seen[UJ_MAX_DIMS] = {0};
  for (unsigned k = 0; k < n; k++) {
    int ax;
    if (!tensor_axis(a->s, "permute", order[k], nd, &ax)) return NULL;
    if (seen[ax]) return tensor_fail(a->s, "permute", "axis %d appears twice", ax);
    seen[ax] = true, o[k] = ax;
  }
  return tensor_wrap(a->s, "permute", node_permute(a->s, a->node, o));
}

uj_tensor *uj_tensor_transpose(uj_tensor *a, int axis0, int axis1) {
  if (!a) return NULL;
  int order[UJ_MAX_DIMS], x, y;
  unsigned nd = a->node->ndim;
  if (!tensor_axis(a->s, "transpose", axis0, nd, &x) || !tensor_axis(a->s, "transpose", axis1, nd, &y)) return NULL;
  for (unsigned k = 0; k < nd; k++) order[k] = (int)k;
  order[x] = y, order[y] = x;
  return uj_tensor_permute(a, order, nd);
}

uj_tensor *uj_tensor_flip(uj_tensor *a, const int *axes, unsigned n) {
  if (!a) return NULL;
  unsigned nd = a->node->ndim;
  int64_t ax[UJ_MAX_DIMS];
  bool seen[UJ_MAX_DIMS] = {0};
  if (n > nd) return tensor_fail(a->s, "flip", "%u axes given for a tensor of %u", n, nd);
  for (unsigned k = 0; k < n; k++) {
    int x;
    if (!tensor_axis(a->s, "flip", axes[k], nd, &x)) return NULL;
    if (seen[x]) return tensor_fail(a->s, "flip", "axis %d appears twice", x);
    seen[x] = true, ax[k] = x;
  }
  if (n == 0) return tensor_wrap(a->s, "flip", a->node);
  const UOp *x = a->node;
  return tensor_wrap(a->s, "flip", tensor_node(a->s, "flip", UJ_OP_FLIP, x->dtype, &x, 1, (Arg){NULL, ax, n}));
}

uj_tensor *uj_tensor_pad(uj_tensor *a, const int64_t *lohi, unsigned ndim) {
  if (!a) return NULL;
  if (ndim != a->node->ndim) return tensor_fail(a->s, "pad", "%u (lo, hi) pairs given for a tensor of %u axes", ndim, a->node->ndim);
  return tensor_wrap(a->s, "pad", node_pad(a->s, a->node, lohi));
}

uj_tensor *uj_tensor_shrink(uj_tensor *a, const int64_t *lohi, unsigned ndim) {
  if (!a) return NULL;
  if (ndim != a->node->ndim) return tensor_fail(a->s, "shrink", "%u (lo, hi) pairs given for a tensor of %u axes", ndim, a->node->ndim);
  return tensor_wrap(a->s, "shrink", node_shrink(a->s, a->node, lohi));
}

/* ---- cat and stack ---- */

/* Inputs one kernel joins; more are joined in a tree of such groups, each
 * group staged (a buffer of its own). A kernel joining n inputs computes n
 * gated loads for each element it writes, so one kernel for all would
 * cost (elements x inputs): cat of 16,000 one-element tensors was 2.6e8
 * gated loads in 23 kernels of 700 (docs/tensor.md, "Movement"). */
enum { CAT_FANIN = 32 };

/* x padded to whole along ax, starting at `at`; what it adds holds the
 * identity of the join: +0 for integers, false for bools, -0.0 for
 * floats (x + -0.0 is x for every float, -0.0 and NaN included; x + 0.0
 * would turn -0.0 into +0.0). */
static const UOp *cat_part(uj_session *s, const UOp *x, int ax, int64_t at, int64_t total) {
  int64_t lohi[2 * UJ_MAX_DIMS] = {0};
  lohi[2 * ax] = at, lohi[2 * ax + 1] = total - at - x->shape[ax];
  const UOp *p = node_pad(s, x, lohi);
  if (!p || !dt_is_float(x->dtype)) return p;
  const UOp *src[3] = {node_pad(s, node_full(s, dt_scalar(UJ_BOOL), 1, x->shape, x->ndim), lohi), p,
                       node_full(s, x->dtype, -0.0, p->shape, p->ndim)};
  return tensor_node(s, "cat", UJ_OP_WHERE, x->dtype, src, 3, arg_none());
}

/* xs[0..n) (one dtype, checked shapes) joined along ax in one kernel. */
static const UOp *cat_group(uj_session *s, const UOp *const *xs, unsigned n, int ax) {
  int64_t total = 0, at = 0;
  for (unsigned i = 0; i < n; i++) total += xs[i]->shape[ax];
  const UOp *sum = NULL;
  for (unsigned i = 0; i < n; i++) {
    const UOp *p = cat_part(s, xs[i], ax, at, total);
    if (!p) return NULL;
    at += xs[i]->shape[ax];
    sum = sum ? node_alu(s, dt_is_bool(p->dtype) ? UJ_OP_OR : UJ_OP_ADD, sum, p) : p;
  }
  return sum;
}

/* The tensors xs joined along axis (op: "cat" or "stack", in messages);
 * xs is overwritten. Exact: each element is its input's, bit for bit. */
static const UOp *cat_nodes(uj_session *s, const char *op, const UOp **xs, unsigned n, int axis) {
  char b[128], c[128];
  const UOp *first = xs[0];
  int ax;
  if (!tensor_axis(s, op, axis, first->ndim, &ax)) return NULL;
  int64_t total = 0;
  for (unsigned i = 0; i < n; i++) {
    bool same = xs[i]->ndim == first->ndim;
    for (unsigned k = 0; same && k < first->ndim; k++) same = k == (unsigned)ax || xs[i]->shape[k] == first->shape[k];
    if (!same)
      return tensor_fail(s, op, "shapes %s and %s differ off axis %d", tensor_shape_str(first, b, sizeof b),
                         tensor_shape_str(xs[i], c, sizeof c), ax);
    if (__builtin_add_overflow(total, xs[i]->shape[ax], &total)) total = INT64_MAX; /* refused as too large below */
  }
  int64_t whole[UJ_MAX_DIMS];
  memcpy(whole, first->shape, first->ndim * sizeof *whole);
  whole[ax] = total;
  if (!tensor_check_shape(s, op, whole, first->ndim)) return NULL;
  uj_scalar d = (uj_scalar)first->dtype.scalar;
  for (unsigned i = 1; i < n; i++) d = node_promoted_dtype(d, (uj_scalar)xs[i]->dtype.scalar);
  for (unsigned i = 0; i < n; i++)
    if (!(xs[i] = node_cast(s, xs[i], d))) return NULL;
  while (n > CAT_FANIN) { /* a level of the tree: group g of the inputs into xs[g], in a buffer */
    unsigned groups = (n + CAT_FANIN - 1) / CAT_FANIN;
    for (unsigned g = 0; g < groups; g++) {
      const UOp *joined = cat_group(s, xs + g * CAT_FANIN, g + 1 < groups ? CAT_FANIN : n - g * CAT_FANIN, ax);
      if (!(xs[g] = joined ? tensor_node(s, op, UJ_OP_STAGE, joined->dtype, &joined, 1, arg_none()) : NULL)) return NULL;
    }
    n = groups;
  }
  return cat_group(s, xs, n, ax);
}

/* The tensors' nodes (n of them, one session), or NULL with the error set. */
static const UOp **nodes_of(uj_tensor *const *ts, unsigned n, const char *op) {
  if (n == 0 || !ts || !ts[0]) return NULL;
  uj_session *s = ts[0]->s;
  const UOp **xs = malloc(n * sizeof *xs);
  if (!xs) return tensor_fail(s, op, "out of memory");
  for (unsigned i = 0; i < n; i++) {
    if (!ts[i] || ts[i]->s != s) {
      if (ts[i]) tensor_fail(s, op, "the tensors belong to different sessions");
      return free(xs), NULL;
    }
    xs[i] = ts[i]->node;
  }
  return xs;
}

uj_tensor *uj_tensor_cat(uj_tensor *const *ts, unsigned n, int axis) {
  const UOp **xs = nodes_of(ts, n, "cat");
  if (!xs) return NULL;
  uj_tensor *r = tensor_wrap(ts[0]->s, "cat", cat_nodes(ts[0]->s, "cat", xs, n, axis));
  free(xs);
  return r;
}

uj_tensor *uj_tensor_stack(uj_tensor *const *ts, unsigned n, int axis) {
  const UOp **xs = nodes_of(ts, n, "stack");
  if (!xs) return NULL;
  uj_session *s = ts[0]->s;
  const UOp *first = xs[0], *r = NULL;
  unsigned nd = first->ndim;
  int ax;
  bool ok = tensor_axis(s, "stack", axis, nd + 1, &ax);
  for (unsigned i = 0; ok && i < n; i++) {
    char b[128], c[128];
    ok = xs[i]->ndim == nd && (nd == 0 || !memcmp(xs[i]->shape, first->shape, nd * sizeof *first->shape));
    if (!ok) tensor_fail(s, "stack", "shapes %s and %s differ", tensor_shape_str(first, b, sizeof b), tensor_shape_str(xs[i], c, sizeof c));
    int64_t sh[UJ_MAX_DIMS + 1];
    for (unsigned k = 0, j = 0; ok && k <= nd; k++) sh[k] = k == (unsigned)ax ? 1 : first->shape[j++];
    xs[i] = ok ? node_reshape(s, xs[i], sh, nd + 1) : NULL; /* a new axis of size 1 */
    ok = ok && xs[i];
  }
  if (ok) r = cat_nodes(s, "stack", xs, n, ax);
  free(xs);
  return tensor_wrap(s, "stack", r);
}
