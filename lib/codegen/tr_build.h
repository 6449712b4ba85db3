/* tr_build.h — internal to the transcendental lowering (transcendental.c):
 * a small builder of float/int expressions, and the algorithms that use it.
 *
 * Every builder function takes the Tr first and returns an interned node of
 * the IR, or NULL when a source is NULL or interning ran out of memory (the
 * context then holds the message), so a failure anywhere in an algorithm
 * comes out as a NULL result without a check at every step. The algorithms
 * compute in float32 or float64 (Tr.f) with ints of the same width (Tr.i,
 * Tr.u); docs/transcendental.md describes them. */
#ifndef UJ_TR_BUILD_H
#define UJ_TR_BUILD_H

#include "uop/uop.h"

typedef struct Tr {
  Ctx *ctx;
  DType f;        /* the float the algorithm computes in: float32 or float64 */
  DType i, u;     /* the signed and unsigned ints of its width */
  DType i64, u64; /* int64 and uint64 (Payne-Hanek); all with f's lanes */
  int bits, mant; /* width and fraction bits: 64, 52 or 32, 23 */
  int bias;       /* exponent bias: 1023 or 127 */
  bool f64;       /* index of the constant tables: 0 float32, 1 float64 */
} Tr;

/* A value as an unevaluated sum hi + lo, |lo| below half an ulp of hi. */
typedef struct TrPair {
  const UOp *hi, *lo;
} TrPair;

/* An argument reduced modulo pi/2: x = q·pi/2 + (hi + lo) (q modulo 4). */
typedef struct TrReduced {
  const UOp *hi, *lo; /* the remainder, |hi + lo| <= about pi/4 */
  const UOp *q;       /* the quadrant, in Tr.i; only its two low bits count */
} TrReduced;

/* ---- tr_build.c: nodes ---- */
/* f: UJ_FLOAT32 or UJ_FLOAT64; lanes: those of the values computed. */
void tr_init(Tr *t, Ctx *ctx, uj_scalar f, unsigned lanes);
const UOp *tr_kf(Tr *t, double v);          /* a float constant, rounded to Tr.f */
const UOp *tr_kint(Tr *t, DType d, int64_t v); /* an int constant of d's scalar (wrapped) */
const UOp *tr_ki(Tr *t, int64_t v);         /* ... of Tr.i */
const UOp *tr_op1(Tr *t, Op op, const UOp *a);
const UOp *tr_op2(Tr *t, Op op, const UOp *a, const UOp *b);
const UOp *tr_op3(Tr *t, Op op, const UOp *a, const UOp *b, const UOp *c);
const UOp *tr_cast(Tr *t, const UOp *a, DType to);
const UOp *tr_bitcast(Tr *t, const UOp *a, DType to);
const UOp *tr_add(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_sub(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_mul(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_fma(Tr *t, const UOp *a, const UOp *b, const UOp *c); /* a·b + c, fused */
const UOp *tr_and(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_or(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_shl(Tr *t, const UOp *a, int64_t n);
const UOp *tr_shr(Tr *t, const UOp *a, int64_t n);
const UOp *tr_lt(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_eq(Tr *t, const UOp *a, const UOp *b);
const UOp *tr_where(Tr *t, const UOp *c, const UOp *a, const UOp *b);

/* ---- tr_build.c: arithmetic ---- */
/* Σ c[k]·x^k for k < n, by Horner's rule with fused steps. */
const UOp *tr_poly(Tr *t, const UOp *x, const double *c, int n);
/* rint(x) (ties to even) for |x| < 2^(mant-1), by adding 1.5·2^mant. */
const UOp *tr_rint(Tr *t, const UOp *x);
/* 2^k for an int k (Tr.i) in [1 - bias, bias], from its exponent bits. */
const UOp *tr_pow2(Tr *t, const UOp *k);
/* Error-free transformations: a + b and a·b as hi + lo exactly.
 * tr_fast_two_sum needs |a| >= |b| (or a = 0). */
TrPair tr_two_sum(Tr *t, const UOp *a, const UOp *b);
TrPair tr_fast_two_sum(Tr *t, const UOp *a, const UOp *b);
TrPair tr_two_prod(Tr *t, const UOp *a, const UOp *b);

/* ---- tr_exp_log.c, tr_sin.c, tr_payne_hanek.c: the algorithms ---- */
const UOp *tr_exp2(Tr *t, const UOp *x);
const UOp *tr_log2(Tr *t, const UOp *x);
const UOp *tr_sin(Tr *t, const UOp *x);
/* Reduction of a >= 2^-10 (finite) with the bits of 2/pi. */
TrReduced tr_payne_hanek(Tr *t, const UOp *a);

#endif
