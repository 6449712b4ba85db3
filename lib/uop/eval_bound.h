/* eval_bound.h — error bounds for a computation whose float reductions may
 * be reassociated (docs/semantics.md, "Reassociation").
 *
 * In: an op, its operands' words (alu.h) and their bounds, its result's
 * word. Out: a bound e such that any lowering that keeps every op but may
 * regroup float ADD/MULACC/MUL REDUCEs (and computes EXP2, LOG2, SIN with
 * its own few-ulp approximations) gives a value within e of the
 * evaluator's: |y - r| <= e. A bound of 0 means "the same word" (the
 * evaluator's order is kept); INFINITY means "any value" (an int, bool or
 * index that may differ; a float that may overflow in another order). The
 * evaluator carries one per lane beside each word when asked
 * (eval_track_bounds). Pure functions: no state. */
#ifndef UJ_EVAL_BOUND_H
#define UJ_EVAL_BOUND_H

#include <stdint.h>

#include "uop/uop.h"

/* The few ulps a lowering's EXP2, LOG2 and SIN may differ from the
 * evaluator's libm (the CPU JIT's polynomials are within 2). */
enum { BOUND_TRANSCENDENTAL_ULPS = 2 };

/* Bound of ALU op on one lane: `out`, `in` as alu_eval; args the operand
 * words, errs their bounds; r the result word. */
double bound_alu(Op op, uj_scalar out, uj_scalar in, const uint64_t *args, const double *errs, uint64_t r);

/* A REDUCE's bound, step by step over its terms, lane by lane. */
typedef struct BoundSum {
  double abs_sum, err_sum; /* ADD, MULACC: sum of |x| + e, sum of e */
  double max_err;          /* MAX: the largest e */
  double rel;              /* MUL: product of (1 + e / |x|) */
  int64_t n;               /* terms */
  bool inf_term;           /* a term is inf or NaN */
} BoundSum;
void bound_sum_start(BoundSum *b);
void bound_sum_step(BoundSum *b, uj_scalar s, uint64_t x, double e);
double bound_sum_done(const BoundSum *b, Op op, uj_scalar s, uint64_t r);

/* Whether got is within e of want (float words of s; ints and bools
 * equal unless e is INFINITY): NaN matches only NaN, an infinity itself. */
bool bound_holds(uj_scalar s, uint64_t got, uint64_t want, double e);

#endif
