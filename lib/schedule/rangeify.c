/* rangeify.c — movement ops to index arithmetic (rangeify.h), as rewrite
 * rules on the tensor form of INDEX: INDEX(t, i0, .., in-1[, gate]) is the
 * element of t at those indices. A kernel stores INDEX(t, ranges...); the
 * rules push each INDEX through the op under it until only loads of
 * PARAMs, CONSTs, ALU ops and kernel-form REDUCEs are left:
 *
 *   INDEX(RESHAPE(x), i)  -> INDEX(x, unflatten(flatten(i)))   div/mod
 *   INDEX(EXPAND(x), i)   -> INDEX(x, i with 0 where x has size 1)
 *   INDEX(PERMUTE(x), i)  -> INDEX(x, i reordered)
 *   INDEX(FLIP(x), i)     -> INDEX(x, n-1-i on flipped axes)
 *   INDEX(SHRINK(x), i)   -> INDEX(x, i + lo)
 *   INDEX(PAD(x), i, g)   -> WHERE(valid, INDEX(x, i - lo, g & valid), 0)
 *   INDEX(REDUCE(x), i)   -> REDUCE(INDEX(x, i with fresh RANGEs on the
 *                            reduced axes), those RANGEs); axes of size 1
 *                            take index 0 and no RANGE (or no REDUCE)
 *   INDEX(GATHER(x, j), i) -> WHERE(valid, INDEX(x, i with clamp(v) on the
 *                            axis), 0), v = INDEX(j, i): a load at an index
 *                            read from memory (docs/schedule.md, "Gather")
 *   INDEX(alu(a, b), i)   -> alu(INDEX(a, i), INDEX(b, i))
 *   a BUFFER under them   -> LOAD(INDEX(PARAM slot, flat index, gate), 0)
 *   a scalar under them   -> itself
 * The symbolic rules then simplify the index arithmetic. A SCATTER root
 * becomes a kernel over its values' elements, each added (STORE_ADD) where
 * its index sends it. */
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite.h"
#include "schedule/rangeify.h"
#include "symbolic/symbolic.h"
#include "uop/alu.h"
#include "uop/nodemap.h"

enum { MAX_AXES = 255 };

typedef struct Rangeify {
  const UOp **buffers; /* slot - 1 */
  size_t nbuffers;
  DType index;      /* int32, or int64 for tensors of 2^31 elements or more */
  int64_t next_axis; /* axis numbers of the RANGEs made so far */
} Rangeify;

static const UOp *k_int(Ctx *ctx, const Rangeify *st, int64_t v) { return uop_const_int(ctx, st->index, v); }

static const UOp *add(Ctx *ctx, const UOp *a, const UOp *b) { return uop_binary(ctx, UJ_OP_ADD, a, b); }
static const UOp *mul(Ctx *ctx, const UOp *a, const UOp *b) { return uop_binary(ctx, UJ_OP_MUL, a, b); }

/* Σ i_k · stride_k over a C-order shape. */
static const UOp *flatten(Ctx *ctx, const Rangeify *st, const UOp *const *i, const int64_t *shape, unsigned n) {
  const UOp *flat = k_int(ctx, st, 0);
  int64_t stride = 1;
  for (unsigned k = n; k-- > 0;) {
    flat = add(ctx, flat, mul(ctx, i[k], k_int(ctx, st, stride)));
    stride *= shape[k];
  }
  return flat;
}

/* flat as indices of a C-order shape: (flat / stride_k) % shape_k. */
static void unflatten(Ctx *ctx, const Rangeify *st, const UOp *flat, const int64_t *shape, unsigned n, const UOp **out) {
  int64_t stride = 1;
  for (unsigned k = n; k-- > 0;) {
    const UOp *q = uop_binary(ctx, UJ_OP_IDIV, flat, k_int(ctx, st, stride));
    out[k] = k == 0 ? q : uop_binary(ctx, UJ_OP_MOD, q, k_int(ctx, st, shape[k]));
    stride *= shape[k];
  }
}

static long buffer_slot(const Rangeify *st, const UOp *b) {
  for (size_t i = 0; i < st->nbuffers; i++)
    if (st->buffers[i] == b) return (long)i + 1;
  return -1;
}

/* The element of x at indices i (x's rank of them), under gate (or NULL):
 * a load for a BUFFER, x itself for a scalar, else a tensor INDEX. */
static const UOp *element(Ctx *ctx, const Rangeify *st, const UOp *x, const UOp *const *i, const UOp *gate) {
  if (x->op == UJ_OP_BUFFER) {
    int64_t slot = buffer_slot(st, x);
    const UOp *p = uop_new(ctx, UJ_OP_PARAM, x->dtype, NULL, 0, (Arg){NULL, &slot, 1});
    const UOp *src[3] = {p, i[0], gate};
    const UOp *ix = uop_new(ctx, UJ_OP_INDEX, x->dtype, src, gate ? 3 : 2, arg_none());
    DType d = dt_base(x->dtype);
    if (!gate) return uop_new(ctx, UJ_OP_LOAD, d, &ix, 1, arg_none());
    const UOp *ld[2] = {ix, uop_const_word(ctx, d, 0)}; /* word 0: +0.0, or 0 */
    return uop_new(ctx, UJ_OP_LOAD, d, ld, 2, arg_none());
  }
  if (x->op == UJ_OP_CONST || x->op == UJ_OP_DEFINE_VAR) return x; /* a scalar (0-d tensors are INDEXed) */
  const UOp *src[MAX_AXES + 2];
  src[0] = x;
  memcpy(src + 1, i, x->ndim * sizeof *i);
  if (gate) src[x->ndim + 1] = gate;
  return uop_new(ctx, UJ_OP_INDEX, x->dtype, src, x->ndim + 1u + (gate != NULL), arg_none());
}

/* The INDEX being rewritten: its tensor, indices and gate. */
typedef struct Site {
  const UOp *t, *const *i, *gate;
} Site;

static Site site_of(const UOp *root) {
  const UOp *t = root->src[0];
  return (Site){t, root->src + 1, root->nsrc == t->ndim + 2u ? root->src[t->ndim + 1] : NULL};
}

static const UOp *rw_reshape(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  unflatten(rw->ctx, rw->user, flatten(rw->ctx, rw->user, s.i, s.t->shape, s.t->ndim), x->shape, x->ndim, j);
  return element(rw->ctx, rw->user, x, j, s.gate);
}

static const UOp *rw_expand(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  for (unsigned k = 0; k < x->ndim; k++) j[k] = x->shape[k] == 1 ? k_int(rw->ctx, rw->user, 0) : s.i[k];
  return element(rw->ctx, rw->user, x, j, s.gate);
}

static const UOp *rw_permute(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  for (unsigned k = 0; k < x->ndim; k++) j[s.t->ints[k]] = s.i[k];
  return element(rw->ctx, rw->user, x, j, s.gate);
}

static const UOp *rw_flip(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  memcpy(j, s.i, x->ndim * sizeof *j);
  for (uint32_t a = 0; a < s.t->nints; a++) {
    int64_t k = s.t->ints[a];
    j[k] = uop_binary(rw->ctx, UJ_OP_SUB, k_int(rw->ctx, rw->user, x->shape[k] - 1), s.i[k]);
  }
  return element(rw->ctx, rw->user, x, j, s.gate);
}

static const UOp *rw_shrink(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  for (unsigned k = 0; k < x->ndim; k++) j[k] = add(rw->ctx, s.i[k], k_int(rw->ctx, rw->user, s.t->ints[2 * k]));
  return element(rw->ctx, rw->user, x, j, s.gate);
}

static const UOp *and_gate(Ctx *ctx, const UOp *g, const UOp *c) { return g ? uop_binary(ctx, UJ_OP_AND, g, c) : c; }

static const UOp *rw_pad(Rewriter *rw, const UOp *root, const Binds *m) {
  Ctx *ctx = rw->ctx;
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES], *valid = NULL;
  for (unsigned k = 0; k < x->ndim; k++) {
    int64_t lo = s.t->ints[2 * k], hi = s.t->ints[2 * k + 1];
    j[k] = lo ? uop_binary(ctx, UJ_OP_SUB, s.i[k], k_int(ctx, rw->user, lo)) : s.i[k];
    if (lo) valid = and_gate(ctx, valid, uop_binary(ctx, UJ_OP_CMPLT, k_int(ctx, rw->user, lo - 1), s.i[k]));
    if (hi) valid = and_gate(ctx, valid, uop_binary(ctx, UJ_OP_CMPLT, s.i[k], k_int(ctx, rw->user, lo + x->shape[k])));
  }
  if (!valid) return element(ctx, rw->user, x, j, s.gate);
  const UOp *v = element(ctx, rw->user, x, j, and_gate(ctx, s.gate, valid));
  return uop_ternary(ctx, UJ_OP_WHERE, valid, v, uop_const_word(ctx, v->dtype, 0));
}

/* Whether the index word v names a position of an axis of n: 0 <= v < n
 * in v's own dtype (before any narrowing). */
static const UOp *in_axis(Ctx *ctx, const UOp *v, int64_t n) {
  int64_t lo, hi;
  bool bounded = dtype_full_bounds(v->dtype, &lo, &hi);
  const UOp *below = !bounded || n <= hi ? uop_binary(ctx, UJ_OP_CMPLT, v, uop_const_int(ctx, v->dtype, n)) : NULL;
  const UOp *above = dt_is_signed(v->dtype) ? uop_binary(ctx, UJ_OP_CMPLT, uop_const_int(ctx, v->dtype, -1), v) : NULL;
  if (below && above) return uop_binary(ctx, UJ_OP_AND, above, below);
  return below ? below : above ? above : uop_const_int(ctx, dt_scalar(UJ_BOOL), 1);
}

/* v as an index of an axis of n, clamped into [0, n-1] (n >= 1): every
 * address stays inside, whatever memory held, and the index's bounds are
 * the axis's for the symbolic rules. */
static const UOp *axis_index(Ctx *ctx, const Rangeify *st, const UOp *v, int64_t n) {
  if (!dt_eq(v->dtype, st->index)) v = uop_new(ctx, UJ_OP_CAST, st->index, &v, 1, arg_none()); /* wraps only where not valid */
  const UOp *low = uop_binary(ctx, UJ_OP_MAX, v, k_int(ctx, st, 0));
  const UOp *top = k_int(ctx, st, -(n - 1)); /* min(x, n-1) = -max(-x, -(n-1)) */
  return uop_unary(ctx, UJ_OP_NEG, uop_binary(ctx, UJ_OP_MAX, uop_unary(ctx, UJ_OP_NEG, low), top));
}

static const UOp *rw_gather(Rewriter *rw, const UOp *root, const Binds *m) {
  Ctx *ctx = rw->ctx;
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES];
  int64_t axis = s.t->ints[0], n = x->shape[axis];
  memcpy(j, s.i, x->ndim * sizeof *j);
  const UOp *v = element(ctx, rw->user, s.t->src[1], s.i, s.gate);
  if (n == 0) return uop_const_word(ctx, s.t->dtype, 0);
  j[axis] = axis_index(ctx, rw->user, v, n);
  const UOp *e = element(ctx, rw->user, x, j, s.gate);
  return uop_ternary(ctx, UJ_OP_WHERE, in_axis(ctx, v, n), e, uop_const_word(ctx, e->dtype, 0));
}

static const UOp *rw_reduce(Rewriter *rw, const UOp *root, const Binds *m) {
  Ctx *ctx = rw->ctx;
  Rangeify *st = rw->user;
  Site s = site_of(root);
  const UOp *x = s.t->src[0], *j[MAX_AXES], *src[MAX_AXES + 1];
  if (s.t->nsrc != 1) return NULL;
  memcpy(j, s.i, x->ndim * sizeof *j);
  uint32_t n = 0; /* fresh RANGEs in axis order, outermost first: C order */
  for (unsigned k = 0; k < x->ndim; k++) {
    bool reduced = false;
    for (uint32_t a = 0; a < s.t->nints; a++) reduced |= s.t->ints[a] == (int64_t)k;
    if (!reduced) continue;
    if (x->shape[k] == 1) { /* one step: index 0, no loop */
      j[k] = k_int(ctx, st, 0);
      continue;
    }
    const UOp *bound = k_int(ctx, st, x->shape[k]);
    int64_t axis = st->next_axis++;
    j[k] = src[1 + n++] = uop_new(ctx, UJ_OP_RANGE, st->index, &bound, 1, (Arg){"reduce", &axis, 1});
  }
  src[0] = element(ctx, st, x, j, s.gate);
  if (n == 0) return src[0]; /* op(identity, v) is v for ADD (-0.0), MUL and MAX */
  return uop_new(ctx, UJ_OP_REDUCE, s.t->dtype, src, 1 + n, (Arg){s.t->name, NULL, 0});
}

static const UOp *rw_alu(Rewriter *rw, const UOp *root, const Binds *m) {
  Site s = site_of(root);
  if (!op_has((Op)s.t->op, OPF_ALU)) return NULL;
  const UOp *src[3];
  for (uint32_t k = 0; k < s.t->nsrc; k++) src[k] = element(rw->ctx, rw->user, s.t->src[k], s.i, s.gate);
  return uop_new(rw->ctx, (Op)s.t->op, s.t->dtype, src, s.t->nsrc, (Arg){s.t->name, s.t->ints, s.t->nints});
}

static const Rule rangeify_rules[] = {
  {"(INDEX (RESHAPE _) ...)", rw_reshape}, // i -> unflatten(flatten(i))
  {"(INDEX (EXPAND _) ...)", rw_expand},   // broadcast axes -> 0
  {"(INDEX (PERMUTE _) ...)", rw_permute}, // reorder
  {"(INDEX (FLIP _) ...)", rw_flip},       // i -> n-1-i
  {"(INDEX (SHRINK _) ...)", rw_shrink},   // i -> i+lo
  {"(INDEX (PAD _) ...)", rw_pad},         // valid ? x[i-lo] : 0
  {"(INDEX (REDUCE _) ...)", rw_reduce},   // reduce over fresh RANGEs
  {"(INDEX (GATHER _ _) ...)", rw_gather}, // x at the index read from j
  {"(INDEX _ ...)", rw_alu},               // alu(a, b)[i] -> alu(a[i], b[i])
};

/* The nodes under root in the order a depth-first walk meets them,
 * sources in order (src[0] first): an order of the graph's shape, not of
 * its nodes' ids. malloc'd; *n its length; NULL (error set) when out of
 * memory. */
static const UOp **walk_order(Ctx *ctx, const UOp *root, size_t *n) {
  NodeMap seen = nodemap_make(ctx);
  const UOp **stack = NULL, **order = NULL;
  size_t top = 0, cap = 0;
  *n = 0;
  bool ok = nodemap_add(&seen, root) != NODEMAP_NONE;
  for (const UOp *u = root; ok && u; u = top ? stack[--top] : NULL) {
    if (seen.count + u->nsrc > cap) { /* the stack and the order hold at most the nodes seen */
      cap = 2 * (seen.count + u->nsrc) + 64;
      const UOp **s = realloc(stack, cap * sizeof *s), **o = s ? realloc(order, cap * sizeof *o) : NULL;
      if (s) stack = s;
      if (o) order = o;
      if (!(ok = o != NULL)) break;
    }
    order[(*n)++] = u;
    for (uint32_t k = u->nsrc; ok && k-- > 0;) { /* src[0] on top: met first */
      size_t before = seen.count;
      ok = nodemap_add(&seen, u->src[k]) != NODEMAP_NONE;
      if (ok && seen.count > before) stack[top++] = u->src[k];
    }
  }
  nodemap_free(&seen), free(stack);
  if (!ok) free(order), order = NULL, *n = 0, ctx_set_error(ctx, "rangeify: out of memory");
  return order;
}

/* The BUFFERs under t in walk_order: the PARAM slots 1, 2, .... The order
 * is the graph's shape, not its buffers' ids, so two graphs equal but for
 * their buffers (a chain of matmuls by one b) make one kernel, compiled
 * once. */
static bool collect_buffers(Ctx *ctx, const UOp *t, unsigned index_bits, Rangeify *st) {
  size_t n = 0;
  const UOp **nodes = walk_order(ctx, t, &n);
  st->buffers = nodes ? malloc((n + 1) * sizeof *st->buffers) : NULL;
  int64_t most = 1;
  for (size_t i = 0; st->buffers && i < n; i++) {
    int64_t count = 1;
    for (unsigned k = 0; k < nodes[i]->ndim; k++) count *= nodes[i]->shape[k] ? nodes[i]->shape[k] : 1;
    if (count > most) most = count;
    if (nodes[i]->op == UJ_OP_BUFFER) st->buffers[st->nbuffers++] = nodes[i];
  }
  st->index = dt_scalar(most < INT32_MAX && index_bits < 64 ? UJ_INT32 : UJ_INT64);
  free(nodes);
  if (nodes && !st->buffers) ctx_set_error(ctx, "rangeify: out of memory");
  return st->buffers != NULL;
}

/* A loop RANGE per axis of shape (a constant 0 for an axis of size 1). */
static void loops_over(Ctx *ctx, Rangeify *st, const int64_t *shape, unsigned n, const UOp **r) {
  for (unsigned k = 0; k < n; k++) {
    const UOp *bound = k_int(ctx, st, shape[k]);
    int64_t axis = st->next_axis++;
    r[k] = shape[k] == 1 ? k_int(ctx, st, 0) : uop_new(ctx, UJ_OP_RANGE, st->index, &bound, 1, (Arg){"loop", &axis, 1});
  }
}

/* t's element at r stored to PARAM 0 in C order; for a SCATTER root,
 * each element of its values (r over their shape) added where its index
 * sends it, when that is inside the axis. */
static const UOp *output_effect(Ctx *ctx, Rangeify *st, const UOp *t, const UOp *const *r) {
  int64_t out = 0;
  const UOp *p = uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr((uj_scalar)t->dtype.scalar, t->dtype.lanes, UJ_AS_GLOBAL), NULL,
                         0, (Arg){NULL, &out, 1});
  if (t->op != UJ_OP_SCATTER) {
    const UOp *at = uop_binary(ctx, UJ_OP_INDEX, p, flatten(ctx, st, r, t->shape, t->ndim));
    return uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){at, element(ctx, st, t, r, NULL)}, 2, arg_none());
  }
  int64_t axis = t->ints[0], n = t->shape[axis];
  const UOp *j[MAX_AXES], *v = element(ctx, st, t->src[1], r, NULL);
  memcpy(j, r, t->ndim * sizeof *j);
  j[axis] = n ? axis_index(ctx, st, v, n) : k_int(ctx, st, 0);
  const UOp *src[3] = {p, flatten(ctx, st, j, t->shape, t->ndim), in_axis(ctx, v, n)};
  const UOp *at = uop_new(ctx, UJ_OP_INDEX, p->dtype, src, 3, arg_none());
  return uop_new(ctx, UJ_OP_STORE_ADD, dt_scalar(UJ_VOID), (const UOp *[]){at, element(ctx, st, t->src[0], r, NULL)}, 2, arg_none());
}

/* The RANGEs of a kernel, numbered in the order a depth-first walk from
 * its SINK (sources in order) meets them: equal loop nests get equal
 * numbers whatever the tensor's axes were (a (256, 256, 1) matmul and a
 * (256, 256) one: one kernel). */
typedef struct Numbering {
  Ctx *ctx;
  NodeMap ranges; /* RANGE -> its new number */
} Numbering;

static const UOp *renumber_range(void *user, const UOp *u, const UOp *rebuilt) {
  Numbering *nb = user;
  uint32_t k = u->op == UJ_OP_RANGE ? nodemap_find(&nb->ranges, u) : NODEMAP_NONE;
  if (k == NODEMAP_NONE || !rebuilt) return rebuilt;
  int64_t axis = k;
  return uop_new(nb->ctx, UJ_OP_RANGE, rebuilt->dtype, rebuilt->src, rebuilt->nsrc, (Arg){rebuilt->name, &axis, 1});
}

static const UOp *number_ranges(Ctx *ctx, const UOp *kernel) {
  size_t n = 0;
  const UOp **nodes = walk_order(ctx, kernel, &n);
  Numbering nb = {ctx, nodemap_make(ctx)};
  bool ok = nodes != NULL;
  for (size_t i = 0; ok && i < n; i++)
    if (nodes[i]->op == UJ_OP_RANGE) ok = nodemap_add(&nb.ranges, nodes[i]) != NODEMAP_NONE;
  const UOp *out = ok ? graph_substitute(ctx, kernel, renumber_range, &nb) : NULL;
  if (nodes && !ok) ctx_set_error(ctx, "rangeify: out of memory");
  free(nodes), nodemap_free(&nb.ranges);
  return out;
}

const UOp *rangeify_kernel(Ctx *ctx, const UOp *t, unsigned index_bits, const UOp ***buffers, size_t *nbuffers) {
  Rangeify st = {0};
  *buffers = NULL, *nbuffers = 0;
  if (dt_is_ptr(t->dtype) || dt_is_void(t->dtype)) return ctx_set_error(ctx, "rangeify: the root is not a tensor"), NULL;
  if (!collect_buffers(ctx, t, index_bits, &st)) return NULL;
  const UOp *r[MAX_AXES], *over = t->op == UJ_OP_SCATTER ? t->src[0] : t; /* the elements the loops visit */
  loops_over(ctx, &st, over->shape, over->ndim, r);
  const UOp *eff = output_effect(ctx, &st, t, r);
  for (unsigned k = over->ndim; k-- > 0;)
    if (r[k]->op == UJ_OP_RANGE) eff = uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){r[k], eff}, 2, arg_none());
  const UOp *kernel = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &eff, 1, arg_none());
  RuleSet *rs = ruleset_new(ctx, rangeify_rules, sizeof rangeify_rules / sizeof *rangeify_rules);
  kernel = rs ? graph_rewrite(ctx, kernel, rs, &st) : NULL;
  ruleset_free(rs);
  if (kernel) kernel = symbolic_simplify(ctx, kernel);
  if (kernel) kernel = number_ranges(ctx, kernel);
  if (!kernel) return free(st.buffers), NULL;
  *buffers = st.buffers, *nbuffers = st.nbuffers;
  return kernel;
}
