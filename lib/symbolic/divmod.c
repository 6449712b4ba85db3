/* divmod.c — folding of integer division, remainder and comparison.
 *
 * In: IDIV/MOD/CMPLT nodes with a constant right side (rules in symbolic.c).
 * Out: simpler equal nodes. The method: write the left side as a linear
 * form x = Σ a·t + k whose exact bounds fit the dtype and are >= 0 (then it
 * never wraps and truncating division is floor division), split it as
 * x = c·Q + R with 0 <= R's coefficients < c, and fold:
 *   R < c:  x//c -> Q,          x%c -> R
 *   else:   x//c -> Q + R//c,   x%c -> R%c
 * and (x//a)%b -> (x%(a·b))//a when that remainder folds.
 * A replacement is kept only when it is not larger than what it replaces. */
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
static bool nonneg_linear(const UOp *x, Linear *lin, int64_t *hi) {
  int64_t lo;
  return linear_decompose(x, lin) && linear_bounds(lin, &lo, hi) && lo >= 0 &&
         linear_fits(lin->dtype, lo, *hi);
}

/* x = c·Q + R, with R's coefficients and constant in [0, c). */
static void linear_split(const Linear *lin, int64_t c, Linear *q, Linear *r) {
  *q = *r = *lin;
  q->nterms = r->nterms = 0;
  for (int i = 0; i < lin->nterms; i++) {
    Term t = lin->terms[i];
    if (floor_div(t.coef, c)) q->terms[q->nterms++] = (Term){t.node, floor_div(t.coef, c)};
    if (floor_mod(t.coef, c)) r->terms[r->nterms++] = (Term){t.node, floor_mod(t.coef, c)};
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

/* (g·x')//(g·c') -> x'//c' */
static const UOp *div_common_factor(Ctx *ctx, const Linear *lin, int64_t c) {
  int64_t g = gcd(c, lin->k);
  for (int i = 0; i < lin->nterms; i++) g = gcd(g, lin->terms[i].coef);
  if (g <= 1) return NULL;
  Linear x = *lin;
  for (int i = 0; i < x.nterms; i++) x.terms[i].coef /= g;
  x.k /= g;
  const UOp *num = linear_build(ctx, &x);
  return num ? uop_binary(ctx, UJ_OP_IDIV, num, uop_const_int(ctx, lin->dtype, c / g)) : NULL;
}

/* (x*c + y)//c -> x + y//c, (x*c + y)%c -> y%c, ... (see the file header) */
const UOp *rw_divmod(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t c = positive_const(m->c), hi;
  Linear lin;
  if (!c || !nonneg_linear(m->x, &lin, &hi)) return NULL;
  if (hi < c) return root->op == UJ_OP_IDIV ? uop_const_int(rw->ctx, root->dtype, 0) : m->x;
  const UOp *out = divmod_split(rw->ctx, &lin, root, c);
  if (!out && root->op == UJ_OP_IDIV) out = div_common_factor(rw->ctx, &lin, c);
  return linear_not_larger(rw, out, root, &lin);
}

/* (x//a)%b -> (x%(a·b))//a, for x >= 0 and a, b > 0, when x%(a·b) folds to
 * a form R with 0 <= R < a·b: only x's low terms stay. The quotient x//a is
 * never built, which matters where x's sums are shared: rebuilt as a new
 * linear form it can cost more than the division it replaces, and then
 * rw_divmod declines it and the remainder it would lead to. */
const UOp *rw_mod_div(Rewriter *rw, const UOp *root, const Binds *m) {
  int64_t a = positive_const(m->a), b = positive_const(m->b), ab, lo, hi;
  Linear lin, q, r;
  if (!a || !b || __builtin_mul_overflow(a, b, &ab) || !nonneg_linear(m->x, &lin, &hi)) return NULL;
  linear_split(&lin, ab, &q, &r);
  if (!linear_bounds(&r, &lo, &hi) || lo < 0 || hi >= ab || !linear_fits(r.dtype, lo, hi))
    return NULL;
  const UOp *rest = linear_build(rw->ctx, &r);
  const UOp *out = rest ? uop_binary(rw->ctx, UJ_OP_IDIV, rest, m->a) : NULL;
  return linear_not_larger(rw, out, root, &lin);
}

/* x + k < d -> x < d - k;  g·x < d -> x < ceil(d/g), with no wrap-around */
const UOp *rw_lt_linear(Rewriter *rw, const UOp *root, const Binds *m) {
  Linear lin;
  int64_t lo, hi, d = m->d->ints[0], diff;
  DType dt = m->x->dtype;
  if (!dt_is_int(dt) || (!dt_is_signed(dt) && d < 0)) return NULL;
  if (!linear_decompose(m->x, &lin) || !lin.nterms || !linear_bounds(&lin, &lo, &hi) ||
      !linear_fits(dt, lo, hi) || __builtin_sub_overflow(d, lin.k, &diff) || diff == INT64_MIN)
    return NULL;
  int64_t g = 0;
  for (int i = 0; i < lin.nterms; i++) g = gcd(g, lin.terms[i].coef);
  if (lin.k == 0 && g == 1) return NULL;
  for (int i = 0; i < lin.nterms; i++) lin.terms[i].coef /= g;
  lin.k = 0;
  int64_t bound = -floor_div(-diff, g); /* ceil(diff / g) */
  if (!linear_bounds(&lin, &lo, &hi) || !linear_fits(dt, lo, hi) ||
      !linear_fits(dt, bound, bound))
    return NULL;
  const UOp *lhs = linear_build(rw->ctx, &lin), *rhs = uop_const_int(rw->ctx, dt, bound);
  const UOp *out = lhs && rhs ? uop_binary(rw->ctx, UJ_OP_CMPLT, lhs, rhs) : NULL;
  return linear_not_larger(rw, out, root, &lin);
}
