/* eval_util.h — helpers for the tests that build small expressions and run
 * them through the reference evaluator (lib/uop/eval.h).
 *
 * In: a context, constants by value, ops. Out: checked nodes (a failed
 * CHECK when the op table rejects one) and the words the evaluator gives. */
#ifndef UJ_TEST_EVAL_UTIL_H
#define UJ_TEST_EVAL_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "uop/alu.h"
#include "uop/eval.h"
#include "uop/spec.h"

static inline const UOp *k_word(Ctx *ctx, uj_scalar s, uint64_t w) {
  return uop_const_word(ctx, dt_scalar(s), w);
}
static inline const UOp *k_int(Ctx *ctx, uj_scalar s, int64_t v) {
  return uop_const_int(ctx, dt_scalar(s), v);
}
static inline const UOp *k_float(Ctx *ctx, uj_scalar s, double v) {
  return k_word(ctx, s, word_from_double(s, v));
}

/* A node through the checked constructor; sources are a, b, c up to the
 * first NULL. */
static inline const UOp *mk(Ctx *ctx, Op op, DType dt, const UOp *a, const UOp *b, const UOp *c) {
  const UOp *src[3] = {a, b, c};
  size_t n = !a ? 0 : !b ? 1 : !c ? 2 : 3;
  const UOp *u = uj_uop_new(ctx, op, dt, src, n, arg_none());
  CHECK(u != NULL, "building %s: %s", op_table[op].name, uj_error(ctx));
  return u;
}

/* An ALU op with its dtype inferred (compares give bool, WHERE its values'). */
static inline const UOp *alu(Ctx *ctx, Op op, const UOp *a, const UOp *b, const UOp *c) {
  DType d = op == UJ_OP_WHERE ? b->dtype : a->dtype;
  if (op_has(op, OPF_COMPARE)) d = dt_with_scalar(d, UJ_BOOL);
  return mk(ctx, op, d, a, b, c);
}

/* The word of lane 0 of an expression without variables; a failed CHECK
 * and 0xdead when the evaluator fails. */
static inline uint64_t eval_word(Ctx *ctx, const UOp *e) {
  uint64_t out[64] = {0};
  if (!e) return 0xdead;
  bool ok = eval_expr(ctx, e, NULL, NULL, 0, out);
  CHECK(ok, "eval: %s", uj_error(ctx));
  return ok ? out[0] : 0xdead;
}

static inline double w2d(uint64_t w) {
  double v;
  memcpy(&v, &w, sizeof v);
  return v;
}

static inline uint64_t d2w(double v) {
  uint64_t w;
  memcpy(&w, &v, sizeof w);
  return w;
}

#endif
