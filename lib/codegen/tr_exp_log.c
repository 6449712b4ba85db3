/* tr_exp_log.c — EXP2 and LOG2 as polynomial code (float32 or float64).
 *
 * In: x, a node of the compute float (Tr.f). Out: a node equal to exp2(x)
 * or log2(x) within about one ulp, with the special cases of
 * docs/semantics.md exact: exp2(-inf) = +0, exp2(+inf) = inf, overflow to
 * inf, underflow through the subnormals to +0; log2(±0) = -inf, log2(x < 0)
 * = NaN, log2(inf) = inf; NaN gives NaN. Coefficients are Taylor series
 * (docs/transcendental.md says how they were computed and why they
 * suffice). */
#include <math.h>

#include "codegen/tr_build.h"

/* ln2^k / k!, k = 1..13 (float64) and 1..7 (float32), each rounded to the
 * format: the Taylor series of (2^f - 1) / f, truncated below 0.1 ulp for
 * |f| <= 1/2. */
static const double exp2_f64[] = {
  0x1.62e42fefa39efp-1, 0x1.ebfbdff82c58fp-3, 0x1.c6b08d704a0c0p-5, 0x1.3b2ab6fba4e77p-7,
  0x1.5d87fe78a6731p-10, 0x1.430912f86c787p-13, 0x1.ffcbfc588b0c7p-17, 0x1.62c0223a5c824p-20,
  0x1.b5253d395e7c4p-24, 0x1.e4cf5158b8ecap-28, 0x1.e8cac7351bb25p-32, 0x1.c3bd650fc2986p-36,
  0x1.816193166d0f9p-40,
};
static const double exp2_f32[] = {
  0x1.62e430p-1, 0x1.ebfbe0p-3, 0x1.c6b08ep-5, 0x1.3b2ab6p-7, 0x1.5d87fep-10, 0x1.430912p-13,
  0x1.ffcbfcp-17,
};

/* 2/(2k+1), k = 1..10 (float64) and 1..4 (float32): the series of
 * (ln((1+s)/(1-s)) - 2s)/s in z = s², truncated below 0.1 ulp for
 * |s| <= 3 - 2·sqrt(2) (m in [sqrt(1/2), sqrt(2))). */
static const double log_f64[] = {
  0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2, 0x1.c71c71c71c71cp-3,
  0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3, 0x1.1111111111111p-3, 0x1.e1e1e1e1e1e1ep-4,
  0x1.af286bca1af28p-4, 0x1.8618618618618p-4,
};
static const double log_f32[] = {0x1.555556p-1, 0x1.99999ap-2, 0x1.24924ap-2, 0x1.c71c72p-3};

/* 1/ln2 as hi + lo in each format. */
static const double inv_ln2[2][2] = {{0x1.715476p+0, 0x1.4ae0c0p-26},
                                     {0x1.71547652b82fep+0, 0x1.777d0ffda0d24p-56}};

/* The bits of sqrt(1/2), rounded: the lower end of the mantissa range. */
static const int64_t sqrt_half_bits[2] = {0x3f3504f3, 0x3fe6a09e667f3bcdll};

/* ---- EXP2 ---- */

/* 2^f for |f| <= 1/2: 1 + f·Σ c_k f^(k-1). */
static const UOp *exp2_poly(Tr *t, const UOp *f) {
  const UOp *q = t->f64 ? tr_poly(t, f, exp2_f64, 13) : tr_poly(t, f, exp2_f32, 7);
  return tr_fma(t, f, q, tr_kf(t, 1));
}

/* exp2(x) = 2^f · 2^k1 · 2^k2 with n = rint(x) = k1 + k2, f = x - n (exact).
 * x is first clamped to ±lim (NaN passes, ±inf become ±lim), beyond which
 * the result is inf or 0 anyway; the scale is applied in two halves, each a
 * normal power of two, so a subnormal result is rounded once. */
const UOp *tr_exp2(Tr *t, const UOp *x) {
  const UOp *lo = tr_kf(t, t->f64 ? -1100 : -200), *hi = tr_kf(t, t->f64 ? 1100 : 200);
  const UOp *xc = tr_where(t, tr_lt(t, x, lo), lo, x);
  xc = tr_where(t, tr_lt(t, hi, xc), hi, xc);
  const UOp *magic = tr_kf(t, 1.5 * (double)(1ll << t->mant)), *big = tr_add(t, xc, magic);
  const UOp *n = tr_sub(t, big, magic); /* rint(xc), as tr_rint */
  const UOp *p = exp2_poly(t, tr_sub(t, xc, n));
  /* k = n as an integer: the low bits of big (its ulp is 1), less magic's
   * bits — no float-to-int conversion, whose saturation LLVM does lane
   * by lane on x86. NaN gives some k: p is NaN anyway. */
  int64_t magic_bits = ((int64_t)(t->bias + t->mant) << t->mant) | (1ll << (t->mant - 1));
  const UOp *k = tr_sub(t, tr_bitcast(t, big, t->i), tr_ki(t, magic_bits));
  const UOp *k1 = tr_shr(t, k, 1), *k2 = tr_sub(t, k, k1);
  return tr_mul(t, tr_mul(t, p, tr_pow2(t, k1)), tr_pow2(t, k2));
}

/* ---- LOG2 ---- */

/* x = 2^e · (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for finite x > 0;
 * subnormal x is scaled by 2^bits first. e is returned as a float. */
static const UOp *log2_split(Tr *t, const UOp *x, const UOp **f) {
  const UOp *tiny = tr_lt(t, x, tr_kf(t, ldexp(1, 1 - t->bias)));
  const UOp *xs = tr_where(t, tiny, tr_mul(t, x, tr_kf(t, ldexp(1, t->bits))), x);
  const UOp *adj = tr_where(t, tiny, tr_ki(t, -t->bits), tr_ki(t, 0));
  const UOp *off = tr_ki(t, sqrt_half_bits[t->f64]);
  const UOp *ix = tr_sub(t, tr_bitcast(t, xs, t->i), off);
  const UOp *e = tr_add(t, tr_shr(t, ix, t->mant), adj); /* arithmetic shift */
  const UOp *mbits = tr_add(t, tr_and(t, ix, tr_ki(t, (1ll << t->mant) - 1)), off);
  *f = tr_sub(t, tr_bitcast(t, mbits, t->f), tr_kf(t, 1)); /* exact */
  return tr_cast(t, e, t->f);
}

/* ln(1 + f) as hi + lo, with s = f/(2+f), z = s², R = Σ Lg_k z^k:
 * ln(1+f) = f - f²/2 + s·(f²/2 + R). The error of s is damped by the small
 * factor f²/2 + R; f - f²/2 is kept exactly as hi + lo. */
static TrPair log1p_pair(Tr *t, const UOp *f) {
  const UOp *hfsq = tr_mul(t, tr_mul(t, tr_kf(t, 0.5), f), f);
  const UOp *s = tr_op2(t, UJ_OP_FDIV, f, tr_add(t, tr_kf(t, 2), f));
  const UOp *z = tr_mul(t, s, s);
  const UOp *r = tr_mul(t, z, t->f64 ? tr_poly(t, z, log_f64, 10) : tr_poly(t, z, log_f32, 4));
  const UOp *hi = tr_sub(t, f, hfsq);
  const UOp *lo = tr_sub(t, tr_sub(t, f, hi), hfsq); /* |f| >= f²/2: exact */
  return (TrPair){hi, tr_fma(t, s, tr_add(t, hfsq, r), lo)};
}

/* e + (hi + lo)/ln2, with 1/ln2 as ih + il and one exact product: the
 * rounding of the final sum is the main error. */
static const UOp *log2_combine(Tr *t, const UOp *e, TrPair l) {
  const UOp *ih = tr_kf(t, inv_ln2[t->f64][0]), *il = tr_kf(t, inv_ln2[t->f64][1]);
  TrPair p = tr_two_prod(t, l.hi, ih);
  const UOp *plo = tr_add(t, p.lo, tr_fma(t, l.lo, ih, tr_mul(t, l.hi, il)));
  TrPair w = tr_fast_two_sum(t, e, p.hi); /* e = 0 or |e| >= 1 > |p.hi| */
  return tr_add(t, w.hi, tr_add(t, w.lo, plo));
}

/* log2(x) = e + log2(1 + f); then inf and NaN pass, ±0 give -inf and
 * negative x NaN. */
const UOp *tr_log2(Tr *t, const UOp *x) {
  const UOp *f = NULL, *e = log2_split(t, x, &f);
  const UOp *y = log2_combine(t, e, log1p_pair(t, f));
  const UOp *zero = tr_kf(t, 0);
  y = tr_where(t, tr_lt(t, x, tr_kf(t, INFINITY)), y, x);
  y = tr_where(t, tr_eq(t, x, zero), tr_kf(t, -INFINITY), y);
  return tr_where(t, tr_lt(t, x, zero), tr_kf(t, NAN), y);
}
