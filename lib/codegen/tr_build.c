/* tr_build.c — the node builder of the transcendental lowering (tr_build.h).
 *
 * In: a Tr (context and compute format) and nodes. Out: interned nodes; NULL
 * when a source is NULL or memory ran out, so that an algorithm's failure
 * shows in its result. The error-free transformations are the classic ones
 * (Knuth's TwoSum, Dekker's Fast2Sum, TwoProd with a fused multiply-add);
 * they are exact because every float op of the IR rounds once
 * (docs/semantics.md). */
#include "codegen/tr_build.h"
#include <stdlib.h>

#include "uop/alu.h"

void tr_init(Tr *t, Ctx *ctx, uj_scalar f, unsigned lanes) {
  bool f64 = f == UJ_FLOAT64;
  DType d = {(uint8_t)f, UJ_AS_NONE, (uint16_t)lanes};
  t->ctx = ctx;
  t->f = d;
  t->i = dt_with_scalar(d, f64 ? UJ_INT64 : UJ_INT32);
  t->u = dt_with_scalar(d, f64 ? UJ_UINT64 : UJ_UINT32);
  t->i64 = dt_with_scalar(d, UJ_INT64);
  t->u64 = dt_with_scalar(d, UJ_UINT64);
  t->bits = f64 ? 64 : 32;
  t->mant = f64 ? 52 : 23;
  t->bias = f64 ? 1023 : 127;
  t->f64 = f64;
}

/* A constant of dtype d (a value of its scalar, in every lane): CONSTs are
 * scalars, so a vector one is a VECTORIZE of the scalar. */
static const UOp *constant(Tr *t, DType d, uint64_t word) {
  const UOp *c = uop_const_word(t->ctx, dt_lane(d), word);
  if (d.lanes == 1 || !c) return c;
  const UOp **lanes = malloc(d.lanes * sizeof *lanes);
  if (!lanes) return NULL;
  for (unsigned i = 0; i < d.lanes; i++) lanes[i] = c;
  const UOp *v = uop_new(t->ctx, UJ_OP_VECTORIZE, d, lanes, d.lanes, arg_none());
  free(lanes);
  return v;
}

const UOp *tr_kf(Tr *t, double v) {
  return constant(t, t->f, word_from_double((uj_scalar)t->f.scalar, v));
}

const UOp *tr_kint(Tr *t, DType d, int64_t v) {
  return constant(t, d, word_from_int((uj_scalar)d.scalar, v));
}

const UOp *tr_ki(Tr *t, int64_t v) { return tr_kint(t, t->i, v); }

const UOp *tr_op1(Tr *t, Op op, const UOp *a) { return a ? uop_unary(t->ctx, op, a) : NULL; }

const UOp *tr_op2(Tr *t, Op op, const UOp *a, const UOp *b) {
  return a && b ? uop_binary(t->ctx, op, a, b) : NULL;
}

const UOp *tr_op3(Tr *t, Op op, const UOp *a, const UOp *b, const UOp *c) {
  return a && b && c ? uop_ternary(t->ctx, op, a, b, c) : NULL;
}

static const UOp *convert(Tr *t, Op op, const UOp *a, DType to) {
  return a ? uop_new(t->ctx, op, to, &a, 1, arg_none()) : NULL;
}

const UOp *tr_cast(Tr *t, const UOp *a, DType to) { return convert(t, UJ_OP_CAST, a, to); }
const UOp *tr_bitcast(Tr *t, const UOp *a, DType to) { return convert(t, UJ_OP_BITCAST, a, to); }
const UOp *tr_add(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_ADD, a, b); }
const UOp *tr_sub(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_SUB, a, b); }
const UOp *tr_mul(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_MUL, a, b); }
const UOp *tr_and(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_AND, a, b); }
const UOp *tr_or(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_OR, a, b); }
const UOp *tr_lt(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_CMPLT, a, b); }
const UOp *tr_eq(Tr *t, const UOp *a, const UOp *b) { return tr_op2(t, UJ_OP_CMPEQ, a, b); }

const UOp *tr_fma(Tr *t, const UOp *a, const UOp *b, const UOp *c) {
  return tr_op3(t, UJ_OP_MULACC, a, b, c);
}

const UOp *tr_where(Tr *t, const UOp *c, const UOp *a, const UOp *b) {
  return tr_op3(t, UJ_OP_WHERE, c, a, b);
}

/* The count has the value's dtype (docs/ir.md). */
const UOp *tr_shl(Tr *t, const UOp *a, int64_t n) {
  return a ? tr_op2(t, UJ_OP_SHL, a, tr_kint(t, a->dtype, n)) : NULL;
}

const UOp *tr_shr(Tr *t, const UOp *a, int64_t n) {
  return a ? tr_op2(t, UJ_OP_SHR, a, tr_kint(t, a->dtype, n)) : NULL;
}

const UOp *tr_poly(Tr *t, const UOp *x, const double *c, int n) {
  const UOp *acc = tr_kf(t, c[n - 1]);
  for (int k = n - 2; k >= 0; k--) acc = tr_fma(t, acc, x, tr_kf(t, c[k]));
  return acc;
}

/* x + 1.5·2^mant lands on the grid of integers, rounded to nearest even;
 * subtracting it again is exact. */
const UOp *tr_rint(Tr *t, const UOp *x) {
  const UOp *magic = tr_kf(t, 1.5 * (double)(1ll << t->mant));
  return tr_sub(t, tr_add(t, x, magic), magic);
}

const UOp *tr_pow2(Tr *t, const UOp *k) {
  const UOp *biased = tr_add(t, k, tr_ki(t, t->bias));
  return tr_bitcast(t, tr_shl(t, biased, t->mant), t->f);
}

/* s = a + b; the error (a - (s - b')) + (b - b') with b' = s - a. */
TrPair tr_two_sum(Tr *t, const UOp *a, const UOp *b) {
  const UOp *s = tr_add(t, a, b), *bb = tr_sub(t, s, a);
  const UOp *err = tr_add(t, tr_sub(t, a, tr_sub(t, s, bb)), tr_sub(t, b, bb));
  return (TrPair){s, err};
}

/* s = a + b; the error b - (s - a), exact when |a| >= |b|. */
TrPair tr_fast_two_sum(Tr *t, const UOp *a, const UOp *b) {
  const UOp *s = tr_add(t, a, b);
  return (TrPair){s, tr_sub(t, b, tr_sub(t, s, a))};
}

/* p = a·b; the error fma(a, b, -p). */
TrPair tr_two_prod(Tr *t, const UOp *a, const UOp *b) {
  const UOp *p = tr_mul(t, a, b);
  return (TrPair){p, tr_fma(t, a, b, tr_op1(t, UJ_OP_NEG, p))};
}
