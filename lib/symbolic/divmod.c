/* divmod.c — folding of integer division, remainder and comparison.
 *
 * In: IDIV/MOD/CMPLT nodes with a constant side (rules in symbolic.c).
 * Out: simpler equal nodes. The method: write the left side as a linear
 * form x = Σ a·t + k whose exact bounds fit the dtype and are >= 0 (then it
 * never wraps and truncating division is floor division), and split it:
 *   x = c·Q + R, 0 <= R's coefficients < c:
 *     R < c:  x//c -> Q,          x%c -> R
 *     else:   x//c -> Q + R//c,   x%c -> R%c
 *   x = g·X + Y, g dividing c, 0 <= Y < g (the terms of Y cannot reach
 *   the next multiple of g):
 *     x//c -> X//(c/g),  x%c -> g·(X%(c/g)) + Y
 * and (x//a)%b -> (x%(a·b))//a when that remainder folds. A comparison
 * x < d splits x = g·X + Y the same way and keeps X alone where Y cannot
 * change the answer. A replacement is kept only when it is not larger
 * than what it replaces. */
#include <stdlib.h>

#include "symbolic/divmod.h"
#include "symbolic/linear.h"

static int64_t floor_div(int64_t a, int64_t c) {
  int64_t q = a / c;
  return (a % c != 0 && (a < 0) != (c < 0)) ? q - 1 : q;
}

static int64_t floor_mod(int64_t a, int64_t c) { return a - floor_div(a, c) * c; }

static int64_t gcd(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b, b = t;
  }
  return a;
}

/* The value of a positive constant, or 0. */
static int64_t positive_const(const UOp *c) { return c->ints[0] > 0 ? c->ints[0] : 0; }

/* (x//a)//b -> x//(a*b), for a, b > 0 */
const UOp *rw_div_div(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t a = positive_const(m->a), b = positive_const(m->b), ab;
  if (!a || !b || __builtin_mul_overflow(a, b, &ab) || !linear_fits(root->dtype, ab, ab)) return NULL;
  return uop_binary(rw->ctx, UJ_OP_IDIV, m->x, uop_const_int(rw->ctx, root->dtype, ab));
}

/* (x%a)%b -> x%b, for a, b > 0 and b dividing a */
const UOp *rw_mod_mod(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t a = positive_const(m->a), b = positive_const(m->b);
  if (!a || !b || a % b != 0) return NULL;
  return uop_binary(rw->ctx, UJ_OP_MOD, m->x, m->b);
}

/* x's linear form, when its exact bounds are >= 0 and fit the dtype: then
 * x never wraps and truncating division is floor division. */
static bool nonneg_linear(Ctx *ctx, const UOp *x, Linear *lin, int64_t *hi) {
  int64_t lo;
  return linear_decompose(ctx, x, lin) && linear_bounds(lin, &lo, hi) && lo >= 0 &&
         linear_fits(lin->dtype, lo, *hi);
}

/* x = c·Q + R, with R's coefficients and constant in [0, c). */
static void linear_split(const Linear *lin, int64_t c, Linear *q, Linear *r) {
  *q = *r = *lin;
  q->nterms = r->nterms = 0;
  for (int i = 0; i < lin->nterms; i++) {
    Term t = lin->terms[i];
    if (floor_div(t.coef, c)) q->terms[q->nterms++] = (Term){t.node, floor_div(t.coef, c), t.fresh};
    if (floor_mod(t.coef, c)) r->terms[r->nterms++] = (Term){t.node, floor_mod(t.coef, c), t.fresh};
  }
  q->k = floor_div(lin->k, c), r->k = floor_mod(lin->k, c);
}

/* x = c·Q + R; the folded quotient or remainder, or NULL. */
static const UOp *divmod_split(Ctx *ctx, const Linear *lin, const UOp *root, int64_t c) {
  Linear q, r;
  linear_split(lin, c, &q, &r);
  int64_t lo, hi;
  if (!linear_bounds(&r, &lo, &hi) || lo < 0 || !linear_fits(r.dtype, lo, hi)) return NULL;
  bool is_div = root->op == UJ_OP_IDIV;
  if (hi < c) return linear_build(ctx, is_div ? &q : &r);
  if (!q.nterms && !q.k) return NULL;
  const UOp *rest = linear_build(ctx, &r);
  if (!rest) return NULL;
  if (!is_div) return uop_binary(ctx, UJ_OP_MOD, rest, root->src[1]);
  const UOp *quot = linear_build(ctx, &q), *rest_div = uop_binary(ctx, UJ_OP_IDIV, rest, root->src[1]);
  return quot && rest_div ? uop_binary(ctx, UJ_OP_ADD, quot, rest_div) : NULL;
}

/* The order of terms for a split: the largest |coefficient| first. */
static int by_magnitude(const void *a, const void *b) {
  uint64_t x = ((const Term *)a)->coef < 0 ? 0 - (uint64_t)((const Term *)a)->coef : (uint64_t)((const Term *)a)->coef;
  uint64_t y = ((const Term *)b)->coef < 0 ? 0 - (uint64_t)((const Term *)b)->coef : (uint64_t)((const Term *)b)->coef;
  if (x != y) return x < y ? 1 : -1;
  return uop_term_order(((const Term *)a)->node, ((const Term *)b)->node);
}

/* Splits the terms of lin, sorted by by_magnitude, after the first `top`:
 * Σ a·t = g·X + Y with X the first `top` terms divided by g, the gcd of
 * their coefficients and of `also` (0 adds nothing), and Y the rest; no
 * constant in either. Returns g. */
static int64_t split_top(const Linear *sorted, int top, int64_t also, Linear *x, Linear *y) {
  int64_t g = also;
  for (int i = 0; i < top; i++) g = gcd(g, sorted->terms[i].coef);
  *x = *y = *sorted;
  x->nterms = y->nterms = 0;
  x->k = y->k = 0;
  for (int i = 0; i < sorted->nterms; i++) {
    Term t = sorted->terms[i];
    if (i < top) x->terms[x->nterms++] = (Term){t.node, t.coef / g, t.fresh};
    else y->terms[y->nterms++] = t;
  }
  return g;
}

/* x = g·X + Y with g dividing c and 0 <= Y < g: x//c -> X//(c/g) and
 * x%c -> g·(X%(c/g)) + Y (x >= 0, so X >= 0). The split keeps the fewest
 * terms in X that work: (8·x + 5)//32 -> x//4. NULL when none works. */
static const UOp *divmod_gcd(Ctx *ctx, const Linear *lin, const UOp *root, int64_t c) {
  Linear sorted = *lin, x, y;
  qsort(sorted.terms, (size_t)sorted.nterms, sizeof *sorted.terms, by_magnitude);
  for (int top = 1; top <= sorted.nterms; top++) {
    int64_t g = split_top(&sorted, top, c, &x, &y), lo, hi;
    if (g <= 1) continue;
    x.k = floor_div(lin->k, g), y.k = floor_mod(lin->k, g);
    if (!linear_bounds(&y, &lo, &hi) || lo < 0 || hi >= g) continue;
    const UOp *xn = linear_build(ctx, &x), *cg = uop_const_int(ctx, lin->dtype, c / g);
    if (!xn || !cg) return NULL;
    if (root->op == UJ_OP_IDIV) return c == g ? xn : uop_binary(ctx, UJ_OP_IDIV, xn, cg);
    const UOp *rem = c == g ? NULL : uop_binary(ctx, UJ_OP_MOD, xn, cg);
    if (rem && y.nterms < LINEAR_MAX_TERMS) y.terms[y.nterms++] = (Term){rem, g, true};
    return rem || c == g ? linear_build(ctx, &y) : NULL;
  }
  return NULL;
}

/* x%c -> x for -c < x < c (the remainder has the dividend's sign);
 * (x*c + y)//c -> x + y//c, (x*c + y)%c -> y%c, ... (see the file header) */
const UOp *rw_divmod(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t c = positive_const(m->c), hi;
  Linear lin;
  if (!c) return NULL;
  if (root->op == UJ_OP_MOD && m->x->bounded && m->x->vmin > -c && m->x->vmax < c) return m->x;
  if (!nonneg_linear(rw->ctx, m->x, &lin, &hi)) return NULL;
  if (hi < c) return root->op == UJ_OP_IDIV ? uop_const_int(rw->ctx, root->dtype, 0) : m->x;
  const UOp *out = linear_not_larger(rw, divmod_split(rw->ctx, &lin, root, c), root, &lin);
  return out ? out : linear_not_larger(rw, divmod_gcd(rw->ctx, &lin, root, c), root, &lin);
}

/* (x//a)%b -> (x%(a·b))//a, for x >= 0 and a, b > 0, when x%(a·b) folds to
 * a form R with 0 <= R < a·b: only x's low terms stay. The quotient x//a is
 * never built, which matters where x's sums are shared: rebuilt as a new
 * linear form it can cost more than the division it replaces, and then
 * rw_divmod declines it and the remainder it would lead to. */
const UOp *rw_mod_div(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t a = positive_const(m->a), b = positive_const(m->b), ab, lo, hi;
  Linear lin, q, r;
  if (!a || !b || __builtin_mul_overflow(a, b, &ab) || !nonneg_linear(rw->ctx, m->x, &lin, &hi)) return NULL;
  linear_split(&lin, ab, &q, &r);
  if (!linear_bounds(&r, &lo, &hi) || lo < 0 || hi >= ab || !linear_fits(r.dtype, lo, hi))
    return NULL;
  const UOp *rest = linear_build(rw->ctx, &r);
  const UOp *out = rest ? uop_binary(rw->ctx, UJ_OP_IDIV, rest, m->a) : NULL;
  return linear_not_larger(rw, out, root, &lin);
}

/* The comparison Σ a·t < d (no constant left in the sum) as X < F + 1,
 * for the first split g·X + Y (split_top) where Y cannot change the
 * answer: with Y in [ylo, yhi], g·X + Y < d holds exactly when
 * X <= floor((d - yhi - 1)/g), if that equals floor((d - ylo - 1)/g).
 * (X <= F gives g·X + Y <= d - 1; g·X + Y < d gives g·X <= d - ylo - 1.)
 * All terms in X and no Y is g·x < d -> x < ceil(d/g), when g > 1.
 * Sets *x, *f. */
static bool lt_split(const Linear *lin, int64_t d, Linear *x, int64_t *f) {
  Linear sorted = *lin, y;
  qsort(sorted.terms, (size_t)sorted.nterms, sizeof *sorted.terms, by_magnitude);
  for (int top = 1; top <= sorted.nterms; top++) {
    int64_t g = split_top(&sorted, top, 0, x, &y), lo, hi, a, b;
    if (!linear_bounds(&y, &lo, &hi) || __builtin_sub_overflow(d, hi, &a) ||
        __builtin_sub_overflow(d, lo, &b) || a == INT64_MIN || b == INT64_MIN)
      continue;
    if (g == 1 && !y.nterms) return false; /* X is the sum itself: nothing to split */
    *f = floor_div(a - 1, g);
    if (*f == floor_div(b - 1, g) && linear_bounds(x, &lo, &hi) && linear_fits(x->dtype, lo, hi)) return true;
  }
  return false;
}

/* x < d and d < x for a constant d, x = Σ a·t + k without wrap-around:
 * x < d -> X < F + 1 and d < x (that is, not x < d + 1) -> F < X, by
 * lt_split on d - k (or d + 1 - k): 8·i + j < 64 -> i < 8 for j in [0, 7];
 * x + k < d -> x < d - k; g·x < d -> x < ceil(d/g). */
const UOp *rw_lt_linear(Rewriter *rw, const UOp *root, const Binds *m) {
  bool left = root->src[0]->op == UJ_OP_CONST;
  const UOp *sum = root->src[left ? 1 : 0];
  Linear lin, x;
  int64_t lo, hi, d = root->src[left ? 0 : 1]->ints[0], f;
  DType dt = sum->dtype;
  if (!dt_is_int(dt) || (!dt_is_signed(dt) && d < 0) || (left && __builtin_add_overflow(d, 1, &d)))
    return NULL;
  if (!linear_decompose(rw->ctx, sum, &lin) || !lin.nterms || !linear_bounds(&lin, &lo, &hi) ||
      !linear_fits(dt, lo, hi) || __builtin_sub_overflow(d, lin.k, &d))
    return NULL;
  if (!lt_split(&lin, d, &x, &f)) {
    x = lin, x.k = 0, f = d - 1; /* x + k < d -> x < d - k */
    if (!lin.k || d == INT64_MIN || !linear_bounds(&x, &lo, &hi) || !linear_fits(dt, lo, hi)) return NULL;
  }
  int64_t bound = left ? f : f + 1; /* f + 1: f < d - ylo fits */
  const UOp *lhs = linear_build(rw->ctx, &x), *rhs = uop_const_int(rw->ctx, dt, bound);
  if (!linear_fits(dt, bound, bound) || !lhs || !rhs) return NULL;
  const UOp *out = left ? uop_binary(rw->ctx, UJ_OP_CMPLT, rhs, lhs) : uop_binary(rw->ctx, UJ_OP_CMPLT, lhs, rhs);
  return linear_not_larger(rw, out, root, &lin);
}
