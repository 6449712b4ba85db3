/* grad.c — reverse-mode autodiff on the tensor graph (tensor.h,
 * docs/autodiff.md).
 *
 * In: a loss node, a seed (d result / d loss) and the nodes to
 * differentiate with respect to. Out: their gradients, as lazy tensor
 * nodes the scheduler fuses like any other graph.
 *
 * The derivatives are rules of the one rewrite engine, one per op of the
 * tensor graph: a rule matches a node, reads the gradient g of its value
 * (in Grad, the rewriter's user data) and writes the gradient of each
 * source that leads to a wanted node. The tensor API builds everything
 * (matmul, conv2d, pooling, softmax, gather, pow, ...) of these ops, so
 * their gradients follow from their definitions. The walk visits the
 * loss's graph once, users before sources, and adds up what each node
 * receives. Ops with no rule (comparisons, bitwise ops, integer division,
 * BITCAST) pass nothing: their results are constants to the gradient. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite.h"
#include "tensor/tensor_impl.h"
#include "uop/nodemap.h"

typedef struct Grad {
  uj_session *s;
  const UOp *g;      /* d loss / d root */
  const UOp *d[3];   /* d loss / d root->src[i]; NULL: nothing */
  bool want[3];      /* whether src[i] leads to a wanted node */
  bool matched;      /* a rule gave the gradients */
  const UOp *done;   /* what a rule returns when it did: a node no rule matches
                      * (the engine takes a rule that returns its root as
                      * declining) */
} Grad;

static const UOp *k(uj_session *s, const UOp *like, double v) { return node_full(s, like->dtype, v, like->shape, like->ndim); }
static const UOp *mul(uj_session *s, const UOp *a, const UOp *b) { return node_alu(s, UJ_OP_MUL, a, b); }
static const UOp *neg(uj_session *s, const UOp *a) { return node_alu(s, UJ_OP_NEG, a, NULL); }
static const UOp *fdiv(uj_session *s, const UOp *a, const UOp *b) { return node_alu(s, UJ_OP_FDIV, a, b); }
static const UOp *where(uj_session *s, const UOp *c, const UOp *a, const UOp *b) {
  const UOp *src[3] = {c, a, b};
  return c && a && b ? tensor_node(s, "gradient", UJ_OP_WHERE, a->dtype, src, 3, arg_none()) : NULL;
}

/* Gives the gradients d0..d2 of the sources wanted. */
static const UOp *give(Grad *c, const UOp *root, const UOp *d0, const UOp *d1, const UOp *d2) {
  (void)root;
  const UOp *d[3] = {d0, d1, d2};
  for (int i = 0; i < 3; i++) c->d[i] = c->want[i] ? d[i] : NULL;
  c->matched = true;
  return c->done;
}

/* Whether u is a constant broadcast (full, zeros: CONST under views). */
static bool is_constant(const UOp *u) {
  while (u->op == UJ_OP_RESHAPE || u->op == UJ_OP_EXPAND) u = u->src[0];
  return u->op == UJ_OP_CONST;
}

#define CTX Grad *c = rw->user; uj_session *s = c->s; const UOp *g = c->g; (void)s, (void)g

/* d(x + y) = (g, g) */
static const UOp *g_add(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, g, g, NULL); }
/* d(x - y) = (g, -g) */
static const UOp *g_sub(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, g, c->want[1] ? neg(s, g) : NULL, NULL); }
/* d(x y) = (g y, g x) */
static const UOp *g_mul(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  return give(c, r, c->want[0] ? mul(s, g, m->y) : NULL, c->want[1] ? mul(s, g, m->x) : NULL, NULL);
}
/* d(x / y) = (g / y, -g (x / y) / y) */
static const UOp *g_fdiv(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  return give(c, r, c->want[0] ? fdiv(s, g, m->y) : NULL, c->want[1] ? neg(s, fdiv(s, mul(s, g, r), m->y)) : NULL, NULL);
}
/* d(-x) = -g */
static const UOp *g_neg(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, neg(s, g), NULL, NULL); }
/* d(1/x) = -g (1/x)^2 */
static const UOp *g_recip(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, neg(s, mul(s, g, mul(s, r, r))), NULL, NULL); }
/* d(2^x) = g 2^x ln 2 */
static const UOp *g_exp2(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX; (void)m;
  return give(c, r, mul(s, g, mul(s, r, k(s, r, 0.6931471805599453))), NULL, NULL);
}
/* d(log2 x) = g / (x ln 2) */
static const UOp *g_log2(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  return give(c, r, fdiv(s, g, mul(s, m->x, k(s, m->x, 0.6931471805599453))), NULL, NULL);
}
/* d(sin x) = g cos x */
static const UOp *g_sin(Rewriter *rw, const UOp *r, const Binds *m) { CTX; return give(c, r, mul(s, g, node_unary(s, UJ_UN_COS, m->x)), NULL, NULL); }
/* d(sqrt x) = g / (2 sqrt x) */
static const UOp *g_sqrt(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, fdiv(s, g, mul(s, r, k(s, r, 2))), NULL, NULL); }
/* d(cast x) = cast g back to x's dtype (floats only: an integer source is a constant) */
static const UOp *g_cast(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  return give(c, r, dt_is_float(m->x->dtype) ? node_cast(s, g, (uj_scalar)m->x->dtype.scalar) : NULL, NULL, NULL);
}
/* The gradients of the two sides of a max (or a min) of x and y: g to
 * the side that wins (x where x_wins, y where y_wins), a tie split in
 * halves, or nothing at a tie against a constant. */
static void winner(Grad *c, const UOp *x, const UOp *y, const UOp *x_wins, const UOp *y_wins, bool want_x, bool want_y,
                   const UOp **dx, const UOp **dy) {
  uj_session *s = c->s;
  const UOp *g = c->g, *zero = k(s, g, 0);
  const UOp *half = is_constant(x) || is_constant(y) ? zero : mul(s, g, k(s, g, 0.5)), *tie = node_alu(s, UJ_OP_CMPEQ, x, y);
  *dx = want_x ? where(s, x_wins, g, where(s, tie, half, zero)) : NULL;
  *dy = want_y ? where(s, y_wins, g, where(s, tie, half, zero)) : NULL;
}

/* d max(x, y) = (g [x > y], g [y > x]), a tie split in halves (PyTorch's
 * maximum); against a constant the tie gives the tensor nothing (relu'(0)
 * = 0, as PyTorch). */
static const UOp *g_max(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  const UOp *dx, *dy;
  winner(c, m->x, m->y, node_alu(s, UJ_OP_CMPLT, m->y, m->x), node_alu(s, UJ_OP_CMPLT, m->x, m->y), c->want[0], c->want[1], &dx, &dy);
  return give(c, r, dx, dy, NULL);
}
/* minimum(x, y) = where(x < y, x, y): (g [x < y], g [y < x]), a tie split
 * in halves (PyTorch's minimum); against a constant, nothing at a tie. */
static const UOp *g_minimum(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  const UOp *dx, *dy; /* WHERE's sources: the compare, x, y */
  winner(c, m->x, m->y, node_alu(s, UJ_OP_CMPLT, m->x, m->y), node_alu(s, UJ_OP_CMPLT, m->y, m->x), c->want[1], c->want[2], &dx, &dy);
  return give(c, r, NULL, dx, dy);
}
/* abs x = where(x < 0, -x, x): g sign(x), 0 at 0 (PyTorch's) */
static const UOp *g_abs(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  if (!is_constant(m->z) || (!c->want[1] && !c->want[2])) return NULL;
  const UOp *x = m->x, *zero = k(s, g, 0);
  const UOp *d = where(s, node_alu(s, UJ_OP_CMPLT, x, m->z), neg(s, g), where(s, node_alu(s, UJ_OP_CMPLT, m->z, x), g, zero));
  /* the rule gives x's whole gradient through the WHERE's last source; its middle one (-x) gets nothing */
  c->want[1] = false;
  return give(c, r, NULL, NULL, d);
}
/* d where(c, x, y) = (nothing, where(c, g, 0), where(c, 0, g)) */
static const UOp *g_where(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  const UOp *zero = k(s, g, 0);
  return give(c, r, NULL, c->want[1] ? where(s, m->c, g, zero) : NULL, c->want[2] ? where(s, m->c, zero, g) : NULL);
}
/* d(x y + z) = (g y, g x, g) */
static const UOp *g_mulacc(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  return give(c, r, c->want[0] ? mul(s, g, m->y) : NULL, c->want[1] ? mul(s, g, m->x) : NULL, g);
}

/* ---- movement: the gradient moves back ---- */

/* d reshape(x) = reshape(g, x's shape) */
static const UOp *g_reshape(Rewriter *rw, const UOp *r, const Binds *m) { CTX; return give(c, r, node_reshape(s, g, m->x->shape, m->x->ndim), NULL, NULL); }
/* d expand(x) = g summed over the axes expanded (kept, size 1) */
static const UOp *g_expand(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  int64_t axes[UJ_MAX_DIMS];
  unsigned n = 0;
  for (unsigned a = 0; a < r->ndim; a++)
    if (m->x->shape[a] != r->shape[a]) axes[n++] = a;
  return give(c, r, node_reduce(s, UJ_OP_ADD, g, axes, n), NULL, NULL);
}
/* d permute(x, order) = permute(g, order's inverse) */
static const UOp *g_permute(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX; (void)m;
  int64_t inv[UJ_MAX_DIMS];
  for (unsigned a = 0; a < r->ndim; a++) inv[r->ints[a]] = a;
  return give(c, r, node_permute(s, g, inv), NULL, NULL);
}
/* d flip(x, axes) = flip(g, axes) */
static const UOp *g_flip(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX; (void)m;
  return give(c, r, tensor_node(s, "gradient", UJ_OP_FLIP, g->dtype, &g, 1, (Arg){NULL, r->ints, r->nints}), NULL, NULL);
}
/* d pad(x, lo, hi) = shrink(g, [lo, lo + n)) */
static const UOp *g_pad(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  int64_t lohi[2 * UJ_MAX_DIMS];
  for (unsigned a = 0; a < r->ndim; a++) lohi[2 * a] = r->ints[2 * a], lohi[2 * a + 1] = r->ints[2 * a] + m->x->shape[a];
  return give(c, r, node_shrink(s, g, lohi), NULL, NULL);
}
/* d shrink(x, [lo, hi)) = pad(g, lo, n - hi) with zeros */
static const UOp *g_shrink(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  int64_t lohi[2 * UJ_MAX_DIMS];
  for (unsigned a = 0; a < r->ndim; a++) lohi[2 * a] = r->ints[2 * a], lohi[2 * a + 1] = m->x->shape[a] - r->ints[2 * a + 1];
  return give(c, r, node_pad(s, g, lohi), NULL, NULL);
}
/* d sum(x) = g expanded back; d max(x) = g shared evenly among the
 * elements equal to the max (PyTorch's amax and max()); d prod(x) =
 * g prod(x) / x. */
static const UOp *g_reduce(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  const UOp *x = m->x, *gx = node_expand(s, g, x->shape, x->ndim);
  if (!strcmp(r->name, "ADD") || !strcmp(r->name, "MULACC")) return give(c, r, gx, NULL, NULL);
  if (!strcmp(r->name, "MUL")) return give(c, r, fdiv(s, mul(s, gx, node_expand(s, r, x->shape, x->ndim)), x), NULL, NULL);
  const UOp *hit = node_alu(s, UJ_OP_CMPEQ, x, node_expand(s, r, x->shape, x->ndim));
  const UOp *count = node_reduce(s, UJ_OP_ADD, node_cast(s, hit, (uj_scalar)x->dtype.scalar), r->ints, r->nints);
  const UOp *share = node_expand(s, fdiv(s, g, count), x->shape, x->ndim);
  return give(c, r, where(s, hit, share, k(s, x, 0)), NULL, NULL);
}
/* d gather(x, j) along a = scatter(g, j) into x's size on a, padded with
 * zeros to x's other sizes: each element picked gets back what it gave */
static const UOp *g_gather(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  int64_t a = r->ints[0], arg[2] = {a, m->x->shape[a]}, lohi[2 * UJ_MAX_DIMS];
  const UOp *src[2] = {g, m->y};
  const UOp *d = tensor_node(s, "gradient", UJ_OP_SCATTER, g->dtype, src, 2, (Arg){NULL, arg, 2});
  bool pad = false;
  for (unsigned k = 0; d && k < r->ndim; k++) lohi[2 * k] = 0, lohi[2 * k + 1] = m->x->shape[k] - d->shape[k], pad |= lohi[2 * k + 1] != 0;
  return give(c, r, pad ? node_pad(s, d, lohi) : d, NULL, NULL);
}
/* d scatter(x, j) along a = gather(g, j) along a: each value added lands
 * in one element */
static const UOp *g_scatter(Rewriter *rw, const UOp *r, const Binds *m) {
  CTX;
  const UOp *src[2] = {g, m->y};
  return give(c, r, tensor_node(s, "gradient", UJ_OP_GATHER, g->dtype, src, 2, (Arg){NULL, r->ints, 1}), NULL, NULL);
}
/* d stage(x) = g: a buffer is the value it holds */
static const UOp *g_stage(Rewriter *rw, const UOp *r, const Binds *m) { CTX; (void)m; return give(c, r, g, NULL, NULL); }

#undef CTX

static const Rule grad_rules[] = {
  {"(ADD x y)", g_add},
  {"(SUB x y)", g_sub},
  {"(MUL x y)", g_mul},
  {"(FDIV x y)", g_fdiv},
  {"(NEG x)", g_neg},
  {"(RECIP x)", g_recip},
  {"(EXP2 x)", g_exp2},
  {"(LOG2 x)", g_log2},
  {"(SIN x)", g_sin},
  {"(SQRT x)", g_sqrt},
  {"(CAST x)", g_cast},
  {"(MAX x y)", g_max},
  {"(WHERE (CMPLT x y) x y)", g_minimum},
  {"(WHERE (CMPLT x z) (NEG x) x)", g_abs},
  {"(WHERE c x y)", g_where},
  {"(MULACC x y z)", g_mulacc},
  {"(RESHAPE x)", g_reshape},
  {"(EXPAND x)", g_expand},
  {"(PERMUTE x)", g_permute},
  {"(FLIP x)", g_flip},
  {"(PAD x)", g_pad},
  {"(SHRINK x)", g_shrink},
  {"(REDUCE x)", g_reduce},
  {"(STAGE x ...)", g_stage},
  {"(GATHER x y)", g_gather},
  {"(SCATTER x y)", g_scatter},
};

/* Whether u carries a value a gradient can flow into: a float tensor
 * value (not a BUFFER, a pointer). */
static bool differentiable(const UOp *u) { return dt_is_float(u->dtype) && !dt_is_ptr(u->dtype); }

/* The walk: nodes of the loss's graph (topologically sorted), which lead
 * to a wanted node, and the gradient each has received so far. */
typedef struct Walk {
  Topo t;
  bool *leads;
  const UOp **total;
} Walk;

static bool add_to(uj_session *s, const UOp **slot, const UOp *d) {
  if (!d) return false;
  *slot = *slot ? node_alu(s, UJ_OP_ADD, *slot, d) : d;
  return *slot != NULL;
}

/* The node a realized node stands for (its view), or u. */
static const UOp *seen_as(const uj_session *s, const UOp *u) {
  return u->id < s->cap_known && s->known[u->id] ? s->known[u->id] : u;
}

/* The nodes differentiated with respect to, numbered in map: each one,
 * and for a realized one (a view of a BUFFER) its BUFFER, since a view of
 * a view is one RESHAPE of the BUFFER (node_reshape): x.reshape(..) reads
 * the BUFFER, not x's node. index[k]: the tensor that number k stands for. */
typedef struct Wanted {
  NodeMap map;
  size_t *index;
} Wanted;

static long wanted_at(const Wanted *w, const UOp *u) {
  uint32_t k = nodemap_find(&w->map, u);
  return k == NODEMAP_NONE ? -1 : (long)w->index[k];
}

/* Which tensor u stands for (itself, a node realized into it, or a view of
 * its BUFFER); -1: none. */
static long wanted(const uj_session *s, const Wanted *w, const UOp *u) {
  long i = wanted_at(w, u);
  if (i < 0) i = wanted_at(w, seen_as(s, u));
  if (i < 0 && u->op == UJ_OP_RESHAPE && u->src[0]->op == UJ_OP_BUFFER) i = wanted_at(w, u->src[0]);
  return i;
}

static bool wanted_add(Wanted *w, const UOp *u, size_t i) {
  if (nodemap_find(&w->map, u) != NODEMAP_NONE) return false;
  uint32_t k = nodemap_add(&w->map, u);
  if (k == NODEMAP_NONE) return false;
  size_t *ix = realloc(w->index, (k + 1) * sizeof *ix);
  if (!ix) return false;
  w->index = ix, ix[k] = i;
  return true;
}

static bool backprop(uj_session *s, RuleSet *rs, Walk *w, const Wanted *wmap, const UOp *seed) {
  size_t n = w->t.n;
  for (size_t k = 0; k < n; k++) {
    const UOp *u = w->t.nodes[k];
    bool l = wanted(s, wmap, u) >= 0;
    for (uint32_t i = 0; !l && i < u->nsrc; i++) l = w->leads[topo_at(&w->t, u->src[i])];
    w->leads[k] = l;
  }
  w->total[n - 1] = seed;
  Rewriter rw = {s->ctx, rs, NULL, NULL};
  const UOp *done = uj_const_bool(s->ctx, true);
  if (!done) return tensor_fail(s, "gradient", "out of memory"), false;
  for (size_t k = n; k-- > 0;) {
    const UOp *u = w->t.nodes[k];
    if (!w->total[k] || !w->leads[k] || u->nsrc == 0 || u->nsrc > 3) continue;
    Grad c = {.s = s, .g = w->total[k], .done = done};
    bool any = false;
    for (uint32_t i = 0; i < u->nsrc; i++) any |= c.want[i] = w->leads[topo_at(&w->t, u->src[i])] && differentiable(u->src[i]);
    if (!any) continue;
    rw.user = &c;
    ruleset_apply(&rw, u);
    if (!c.matched) continue; /* no rule: a constant to the gradient */
    for (uint32_t i = 0; i < u->nsrc; i++) {
      if (!c.want[i]) continue;
      const UOp *x = u->src[i];
      if (!c.d[i]) return false; /* a builder failed: its message is set */
      if (c.d[i]->ndim != x->ndim || (x->ndim && memcmp(c.d[i]->shape, x->shape, x->ndim * sizeof *x->shape)) || !dt_eq(c.d[i]->dtype, x->dtype)) {
        char a[128], b[128];
        return tensor_fail(s, "gradient", "the rule for %s gave %s for a source of shape %s", op_table[u->op].name,
                           tensor_shape_str(c.d[i], a, sizeof a), tensor_shape_str(x, b, sizeof b)), false;
      }
      if (!add_to(s, &w->total[topo_at(&w->t, x)], c.d[i])) return false;
    }
  }
  return true;
}

/* The gradients of loss (seeded by seed) with respect to wrt[0..n) into
 * out[0..n): where loss does not depend on one, zeros (or NULL without
 * `zeros`). */
static bool gradients(uj_session *s, const UOp *loss, const UOp *seed, const UOp *const *wrt, size_t n, const UOp **out, bool zeros) {
  RuleSet *rs = ruleset_new(s->ctx, grad_rules, sizeof grad_rules / sizeof *grad_rules);
  Walk w = {0};
  Wanted want = {nodemap_make(s->ctx), NULL};
  bool ok = rs && topo_make(s->ctx, loss, &w.t);
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *b = schedule_view_buffer(wrt[i]);
    if (!wanted_add(&want, wrt[i], i) || (b && !wanted_add(&want, b, i)))
      ok = false, tensor_fail(s, "gradient", "a tensor appears twice among those differentiated with respect to");
  }
  w.leads = ok ? calloc(w.t.n, sizeof *w.leads) : NULL;
  w.total = w.leads ? calloc(w.t.n, sizeof *w.total) : NULL;
  if (ok && !w.total) ok = false, tensor_fail(s, "gradient", "out of memory");
  ok = ok && backprop(s, rs, &w, &want, seed);
  for (size_t i = 0; ok && i < n; i++) out[i] = NULL;
  for (size_t k = 0; ok && k < w.t.n; k++) { /* what each wanted node (or a node standing for it) received */
    long i = w.total[k] ? wanted(s, &want, w.t.nodes[k]) : -1;
    if (i >= 0) ok = add_to(s, &out[i], node_reshape(s, w.total[k], wrt[i]->shape, wrt[i]->ndim));
  }
  for (size_t i = 0; ok && zeros && i < n; i++)
    if (!out[i]) ok = (out[i] = k(s, wrt[i], 0)) != NULL;
  if (!ok && !uj_session_error(s)[0]) tensor_fail(s, "gradient", "%s", s->ctx->error[0] ? uj_error(s->ctx) : "out of memory");
  free(w.leads), free(w.total);
  topo_free(&w.t);
  nodemap_free(&want.map), free(want.index);
  ruleset_free(rs);
  return ok;
}

/* uj_tensor_gradients; a wrt that loss does not read gets zeros, or NULL
 * without `zeros`. */
static uj_status tensor_gradients(uj_tensor *loss, uj_tensor *seed, uj_tensor *const *wrt, size_t n, uj_tensor **out, bool zeros) {
  if (!loss || (n && (!wrt || !out))) return UJ_ERR_ARG;
  uj_session *s = loss->s;
  char a[128], b[128];
  const UOp *l = loss->node, *sd;
  if (!differentiable(l)) return tensor_fail(s, "gradient", "the loss must be a float tensor"), UJ_ERR_ARG;
  bool is_wrt = false;
  for (size_t i = 0; i < n && wrt; i++) is_wrt |= wrt[i] && wrt[i]->node == l;
  if (schedule_view_buffer(l) && !is_wrt) /* realized: its graph was replaced by its buffer */
    return tensor_fail(s, "gradient", "the loss was computed already (read or realized): take its gradients first, or compute it with the step"),
           UJ_ERR_ARG;
  if (seed) {
    if (seed->s != s) return tensor_fail(s, "gradient", "the tensors belong to different sessions"), UJ_ERR_ARG;
    if (seed->node->ndim != l->ndim || (l->ndim && memcmp(seed->node->shape, l->shape, l->ndim * sizeof *l->shape)))
      return tensor_fail(s, "gradient", "seed of shape %s for a loss of shape %s", tensor_shape_str(seed->node, a, sizeof a),
                         tensor_shape_str(l, b, sizeof b)), UJ_ERR_ARG;
    if (!(sd = node_cast(s, seed->node, (uj_scalar)l->dtype.scalar))) return UJ_ERR_ARG;
  } else {
    if (shape_numel(l->shape, l->ndim) != 1)
      return tensor_fail(s, "gradient", "the loss %s has %lld elements: give a seed of its shape", tensor_shape_str(l, a, sizeof a),
                         (long long)shape_numel(l->shape, l->ndim)), UJ_ERR_ARG;
    sd = k(s, l, 1);
  }
  const UOp **nodes = malloc((n ? n : 1) * sizeof *nodes), **got = calloc(n ? n : 1, sizeof *got);
  bool ok = nodes && got;
  if (!ok) tensor_fail(s, "gradient", "out of memory");
  for (size_t i = 0; ok && i < n; i++) {
    ok = wrt[i] && wrt[i]->s == s;
    if (wrt[i] && wrt[i]->s != s) tensor_fail(s, "gradient", "the tensors belong to different sessions");
    if (ok && !differentiable(wrt[i]->node)) ok = false, tensor_fail(s, "gradient", "tensor %zu is not a float tensor", i);
    if (ok) nodes[i] = wrt[i]->node;
  }
  ok = ok && gradients(s, l, sd, nodes, n, got, zeros);
  size_t made = 0;
  for (; ok && made < n; made++) {
    out[made] = got[made] ? tensor_wrap(s, "gradient", got[made]) : NULL;
    ok = out[made] || !got[made];
  }
  if (!ok) /* none or all */
    for (size_t i = 0; i < made; i++) uj_tensor_free(out[i]), out[i] = NULL;
  free(nodes), free(got);
  return ok ? UJ_OK : UJ_ERR_ARG;
}

uj_status uj_tensor_gradients(uj_tensor *loss, uj_tensor *seed, uj_tensor *const *wrt, size_t n, uj_tensor **out) {
  return tensor_gradients(loss, seed, wrt, n, out, true);
}

/* ---- parameters and their grads ---- */

/* Whether another live parameter reads the BUFFER b. */
static bool shared_buffer(const uj_session *s, const uj_tensor *t, const UOp *b) {
  for (size_t i = 0; i < s->ntensors; i++)
    if (s->tensors[i] != t && s->tensors[i]->requires_grad && schedule_view_buffer(s->tensors[i]->node) == b) return true;
  return false;
}

/* A parameter is updated in place, so it reads a buffer no other
 * parameter reads: realizing zeros twice gives one buffer (the graphs are
 * one node), which two parameters must not share. */
uj_status uj_tensor_set_requires_grad(uj_tensor *t, bool on) {
  if (!t) return UJ_ERR_ARG;
  uj_session *s = t->s;
  if (on && !differentiable(t->node)) return tensor_fail(s, "requires_grad", "a parameter must be a float tensor"), UJ_ERR_ARG;
  const UOp *b = schedule_view_buffer(t->node);
  if (on && (!b || shared_buffer(s, t, b))) {
    RtBuffer *mem; /* t keeps its graph (and what it reads alive) until its value is in the new buffer */
    const UOp *value = t->node;
    const UOp *view = tensor_new_buffer(s, (uj_scalar)value->dtype.scalar, value->shape, value->ndim, &mem);
    uj_tensor *dst = view ? tensor_wrap(s, "requires_grad", view) : NULL;
    if (!dst) return UJ_ERR_NOMEM;
    uj_status st = tensor_assign_many(s, &dst, &value, 1);
    uj_tensor_free(dst);
    if (st != UJ_OK) return st;
    t->node = view;
  }
  t->requires_grad = on;
  return UJ_OK;
}

bool uj_tensor_requires_grad(const uj_tensor *t) { return t && t->requires_grad; }
uj_tensor *uj_tensor_grad(const uj_tensor *t) { return t ? t->grad : NULL; }

void uj_tensor_zero_grad(uj_tensor *t) {
  if (t) uj_tensor_free(t->grad); /* which clears t->grad */
}

uj_status uj_tensor_backward(uj_tensor *loss) {
  if (!loss) return UJ_ERR_ARG;
  uj_session *s = loss->s;
  size_t n = 0;
  uj_tensor **ps = calloc(s->ntensors ? s->ntensors : 1, sizeof *ps), **gs = calloc(s->ntensors ? s->ntensors : 1, sizeof *gs);
  if (!ps || !gs) return free(ps), free(gs), tensor_fail(s, "backward", "out of memory"), UJ_ERR_NOMEM;
  for (size_t i = 0; i < s->ntensors; i++)
    if (s->tensors[i]->requires_grad) ps[n++] = s->tensors[i];
  uj_status st = tensor_gradients(loss, NULL, ps, n, gs, false);
  for (size_t i = 0; st == UJ_OK && i < n; i++) {
    if (!gs[i]) continue; /* the loss does not read it: its grad stays as it was (PyTorch's) */
    uj_tensor *sum = ps[i]->grad ? uj_tensor_binary(UJ_BIN_ADD, ps[i]->grad, gs[i]) : gs[i];
    if (sum != gs[i]) uj_tensor_free(gs[i]);
    if (!sum) {
      st = UJ_ERR_NOMEM;
      continue;
    }
    uj_tensor_zero_grad(ps[i]);
    ps[i]->grad = sum, sum->grad_of = ps[i];
  }
  free(ps), free(gs);
  return st;
}
