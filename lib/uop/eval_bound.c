/* eval_bound.c — the rules of eval_bound.h: a first-order forward error
 * analysis, made rigorous where it is cheap (docs/semantics.md,
 * "Reassociation").
 *
 * In: an op, operand words and bounds, the result word. Out: the result's
 * bound. y is a value a reassociating lowering computes, r the
 * evaluator's, e the bound: |y - r| <= e.
 *
 * - An op whose operands are exact (e = 0) gives the evaluator's word: it
 *   adds nothing (same inputs, same rounding). With an inexact operand, a
 *   rounding op adds 2u(|r| + e) + the smallest subnormal: y and r each
 *   round once, near values (u the unit roundoff of the result's type).
 * - ADD/SUB: ea + eb. MUL: |a|eb + |b|ea + ea eb. FDIV: (ea + |a|eb/|b|) /
 *   (|b| - eb), any value when |b| <= eb. MULACC: MUL's + ec.
 * - MAX, NEG: exact ops (max(ea, eb), ea). WHERE: the chosen operand's,
 *   or |x - y| + max(ex, ey) when the condition may differ.
 * - EXP2, LOG2, SQRT, SIN: how far the function moves over the operand's
 *   interval (2^(a+ea) - 2^a; -log2(1 - ea/a); ea/(sqrt(a)+sqrt(a-ea));
 *   ea), plus BOUND_TRANSCENDENTAL_ULPS ulps (2u|r| an ulp) for EXP2,
 *   LOG2, SIN: a lowering's own approximation.
 * - A compare, a cast to int/bool, a BITCAST: exact when the operands'
 *   intervals decide it, INFINITY (may differ) otherwise; every int op on
 *   an int that may differ: INFINITY.
 * - REDUCE ADD/MULACC of n terms xi with bounds ei, in any order:
 *   sum ei + 2 gamma(n-1) sum(|xi| + ei), gamma(k) = ku / (1 - ku): the
 *   classic bound of a sum in any order (Higham 4.3), for y's order and
 *   the evaluator's. MAX: max ei (any order gives the same word). MUL:
 *   |r| (prod(1 + ei/|xi|) (1 + 2 gamma(n-1)) - 1). An overflow or an
 *   infinity an order may avoid: INFINITY; a term inf or NaN decides the
 *   result in every order (0 more).
 * - A value inf or NaN with a finite bound is exactly that value (|y - r|
 *   <= e leaves no other); ops on such operands give exact results, but
 *   for a factor of an infinity that may be 0 or change sign. */
#include <math.h>
#include <string.h>

#include "uop/eval_bound.h"

static double dbl(uint64_t w) {
  double d;
  memcpy(&d, &w, sizeof d);
  return d;
}

static bool is_float(uj_scalar s) { return scalar_table[s].is_float; }

/* Unit roundoff and the smallest subnormal of a float type. */
static double unit_roundoff(uj_scalar s) {
  switch (s) {
  case UJ_FLOAT16: return 0x1p-11;
  case UJ_BFLOAT16: return 0x1p-8;
  case UJ_FLOAT32: return 0x1p-24;
  default: return 0x1p-53;
  }
}
static double tiniest(uj_scalar s) {
  switch (s) {
  case UJ_FLOAT16: return 0x1p-24;
  case UJ_BFLOAT16: return 0x1p-133;
  case UJ_FLOAT32: return 0x1p-149;
  default: return 0x1p-1074;
  }
}

/* x * e with 0 * inf = 0: an exact operand times anything adds nothing. */
static double times(double x, double e) { return e == 0 || x == 0 ? 0 : x * e; }

/* One rounding to s of a result near r, on either side. */
static double rounding(uj_scalar s, double r, double e) {
  return isfinite(r) ? 2 * unit_roundoff(s) * (fabs(r) + e) + tiniest(s) : 0;
}

/* The value of a word as a double: floats their value, ints their number. */
static double num(uj_scalar s, uint64_t w) {
  if (is_float(s)) return dbl(w);
  return scalar_table[s].is_signed ? (double)(int64_t)w : (double)w;
}

/* Whether a and b (within ea, eb) may compare either way for op. */
static bool compare_open(Op op, double a, double ea, double b, double eb) {
  if (ea == 0 && eb == 0) return false;
  if (isnan(a) || isnan(b)) return false; /* NaN compares the same way near anything finite */
  if (op == UJ_OP_CMPLT) return a - ea < b + eb && a + ea >= b - eb;
  return fabs(a - b) <= ea + eb; /* CMPNE, CMPEQ */
}

/* A function's move over [a - ea, a + ea], for the unary float ops. */
static double unary_move(Op op, double a, double ea) {
  switch (op) {
  case UJ_OP_NEG: return ea;
  case UJ_OP_SIN: return ea;
  case UJ_OP_EXP2:
    if (!isfinite(a)) return 0;
    return exp2(a + ea) - exp2(a);
  case UJ_OP_LOG2:
    if (a == 0 || !isfinite(a)) return 0;
    if (a - ea <= 0) return INFINITY;
    return -log1p(-ea / a) / log(2.0);
  case UJ_OP_SQRT:
    if (a < 0) return a + ea >= 0 ? INFINITY : 0;
    if (a - ea <= 0) return sqrt(a + ea);
    return ea / (sqrt(a) + sqrt(a - ea));
  case UJ_OP_RECIP:
    if (fabs(a) <= ea) return INFINITY;
    return ea / (fabs(a) * (fabs(a) - ea));
  default: return INFINITY;
  }
}

/* r is inf or NaN and an operand is: operands inf or NaN are exact (a
 * bound finite on them means "this value"), so r is too, unless a factor
 * that multiplies or divides an infinity may change sign or be 0. */
static double non_finite(Op op, unsigned n, const double *x, const double *e) {
  bool factors = op == UJ_OP_MUL || op == UJ_OP_MULACC || op == UJ_OP_FDIV;
  for (unsigned i = 0; factors && i < 2 && i < n; i++)
    if (isfinite(x[i]) && e[i] > 0 && fabs(x[i]) <= e[i]) return INFINITY;
  for (unsigned i = 0; i < n; i++)
    if (e[i] == INFINITY) return INFINITY;
  return 0;
}

static double float_op(Op op, uj_scalar s, unsigned n, const double *x, const double *e, double r) {
  double moved;
  bool finite_in = true;
  for (unsigned i = 0; i < n; i++) finite_in = finite_in && isfinite(x[i]);
  if (!isfinite(r) && !finite_in) return non_finite(op, n, x, e);
  switch (op) {
  case UJ_OP_ADD:
  case UJ_OP_SUB: moved = e[0] + e[1]; break;
  case UJ_OP_MUL: moved = times(fabs(x[0]), e[1]) + times(fabs(x[1]), e[0]) + times(e[0], e[1]); break;
  case UJ_OP_MULACC:
    moved = times(fabs(x[0]), e[1]) + times(fabs(x[1]), e[0]) + times(e[0], e[1]) + e[2];
    break;
  case UJ_OP_FDIV:
    if (e[1] == 0 && x[1] == 0) moved = e[0] > 0 && fabs(x[0]) <= e[0] ? INFINITY : 0; /* a/0: the sign of a */
    else if (fabs(x[1]) <= e[1]) moved = INFINITY;
    else moved = (e[0] + times(fabs(x[0]), e[1]) / fabs(x[1])) / (fabs(x[1]) - e[1]);
    break;
  case UJ_OP_MAX: return fmax(e[0], e[1]);
  case UJ_OP_NEG: return e[0];
  default: moved = unary_move(op, x[0], e[0]); break;
  }
  if (isnan(moved) || moved == INFINITY) return INFINITY;
  if (!isfinite(r) && moved > 0) return INFINITY; /* an overflow (or a/0) y may not have */
  double own = moved > 0 ? rounding(s, r, moved) : 0;
  if (op == UJ_OP_EXP2 || op == UJ_OP_LOG2 || op == UJ_OP_SIN)
    own += BOUND_TRANSCENDENTAL_ULPS * rounding(s, r, 0);
  return moved + own;
}

double bound_alu(Op op, uj_scalar out, uj_scalar in, const uint64_t *args, const double *errs, uint64_t r) {
  unsigned n = op_has(op, OPF_TERNARY) ? 3 : op_has(op, OPF_BINARY) ? 2 : 1;
  bool exact = true;
  for (unsigned i = 0; i < n; i++) exact = exact && errs[i] == 0;
  bool transcendental = op == UJ_OP_EXP2 || op == UJ_OP_LOG2 || op == UJ_OP_SIN;
  if (exact && !(transcendental && is_float(out))) return 0;
  if (op == UJ_OP_WHERE) {
    if (errs[0] == 0) return errs[args[0] ? 1 : 2];
    return fabs(num(out, args[1]) - num(out, args[2])) + fmax(errs[1], errs[2]);
  }
  double x[3] = {0, 0, 0};
  for (unsigned i = 0; i < n; i++) x[i] = num(in, args[i]);
  if (op_has(op, OPF_COMPARE)) return is_float(in) && compare_open(op, x[0], errs[0], x[1], errs[1]) ? INFINITY : 0;
  if (op == UJ_OP_CAST && is_float(in) && !is_float(out)) {
    if (isnan(x[0]) || errs[0] == INFINITY) return errs[0] == INFINITY ? INFINITY : 0;
    if (out == UJ_BOOL) return fabs(x[0]) <= errs[0] ? INFINITY : 0;
    return trunc(x[0] - errs[0]) == trunc(x[0] + errs[0]) ? 0 : INFINITY;
  }
  if (op == UJ_OP_CAST && is_float(out)) {
    if (errs[0] == INFINITY) return INFINITY;
    double rr = dbl(r);
    bool narrower = !is_float(in) || unit_roundoff(out) > unit_roundoff(in);
    if (!isfinite(rr) && errs[0] > 0) return INFINITY;
    return errs[0] + (narrower ? rounding(out, rr, errs[0]) : 0);
  }
  if (!is_float(out) || !is_float(in) || op == UJ_OP_BITCAST) return INFINITY;
  return float_op(op, out, n, x, errs, dbl(r));
}

void bound_sum_start(BoundSum *b) { *b = (BoundSum){0, 0, 0, 1, 0, false}; }

void bound_sum_step(BoundSum *b, uj_scalar s, uint64_t x, double e) {
  double v = num(s, x);
  b->n++;
  if (!isfinite(v)) b->inf_term = true;
  else b->abs_sum += fabs(v) + e;
  b->err_sum += e;
  b->max_err = fmax(b->max_err, e);
  b->rel = v == 0 ? (e > 0 ? INFINITY : b->rel) : b->rel * (1 + e / fabs(v));
}

/* gamma(k) = ku / (1 - ku); INFINITY once ku >= 1. */
static double gamma_of(int64_t k, double u) {
  double ku = (double)k * u;
  return ku >= 1 ? INFINITY : ku / (1 - ku);
}

double bound_sum_done(const BoundSum *b, Op op, uj_scalar s, uint64_t r) {
  if (!is_float(s)) return b->max_err > 0 ? INFINITY : 0; /* ints: any order gives the same word */
  if (op == UJ_OP_MAX) return b->max_err;
  double res = dbl(r), u = unit_roundoff(s), g = 2 * gamma_of(b->n > 1 ? b->n - 1 : 0, u);
  if (b->max_err == INFINITY) return INFINITY;
  if (b->inf_term) return 0; /* inf and NaN terms are exact (bounds finite): they decide r */
  if (!isfinite(res)) return INFINITY; /* an overflow another order may avoid */
  double e;
  if (op == UJ_OP_MUL) e = fabs(res) * (b->rel * (1 + g) - 1);
  else e = b->err_sum + g * b->abs_sum;
  if (e > 0) e += (double)b->n * tiniest(s);
  return isnan(e) ? INFINITY : e;
}

bool bound_holds(uj_scalar s, uint64_t got, uint64_t want, double e) {
  if (e == INFINITY) return true;
  if (got == want) return true;
  if (!is_float(s)) return false;
  double g = dbl(got), w = dbl(want);
  if (isnan(g) || isnan(w) || isinf(g) || isinf(w)) return false;
  return fabs(g - w) <= e;
}
