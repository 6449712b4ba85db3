/* tr_payne_hanek.c — reduction of huge arguments modulo pi/2 with the bits
 * of 2/pi (Payne and Hanek), in 64-bit integer arithmetic.
 *
 * In: a >= 2^-10, finite, of the compute float (Tr.f); the result for
 * smaller a, inf or NaN is garbage for the caller to discard. Out: a =
 * q·pi/2 + (hi + lo) with |hi + lo| <= pi/4. Write a = M·2^E (M the integer
 * significand). Bits of 2/pi that M·2^E lifts above 2^1 only add multiples of
 * 4 to a·2/pi, so a 192-bit window of 2/pi starting at bit E - 1 suffices:
 * the top 128 bits of M·window are a·2/pi modulo 4 as a fixed-point number
 * with 2 integer bits (the quadrant) and 126 fraction bits, of which the
 * fraction's leading zeros (about 62 at worst for float64, Muller's worst
 * case) leave more than 60 significant. The window's words are selected by
 * WHERE over the table, the IR having no loads from constant memory. */
#include "codegen/tr_build.h"

/* Bits 64k+1 .. 64k+64 of the binary fraction 2/pi = 0.101000101111...,
 * after one zero word standing for the bits above the point. */
static const uint64_t two_over_pi_bits[20] = {
  0, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
  0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull,
  0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull, 0x9c845f8bbdf9283bull,
  0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
  0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
};

static const UOp *k64(Tr *t, uint64_t v) { return tr_kint(t, t->u64, (int64_t)v); }

/* two_over_pi_bits[d + off] for d in [0, dmax], by a chain of WHEREs. */
static const UOp *table_word(Tr *t, const UOp *d, int dmax, int off) {
  const UOp *w = k64(t, two_over_pi_bits[off]);
  for (int j = 1; j <= dmax; j++)
    w = tr_where(t, tr_eq(t, d, k64(t, (uint64_t)j)), k64(t, two_over_pi_bits[j + off]), w);
  return w;
}

/* (w0 << s) | (w1 >> (64 - s)) for s in [0, 63]; the second shift is done
 * as >> 1 >> (63 - s) since shift counts are taken modulo 64. */
static const UOp *funnel(Tr *t, const UOp *w0, const UOp *w1, const UOp *s) {
  const UOp *back = tr_sub(t, k64(t, 63), s);
  return tr_or(t, tr_op2(t, UJ_OP_SHL, w0, s), tr_op2(t, UJ_OP_SHR, tr_shr(t, w1, 1), back));
}

/* The high 64 bits of the 128-bit product a·b, from 32-bit halves. */
static const UOp *mul_hi(Tr *t, const UOp *a, const UOp *b) {
  const UOp *m32 = k64(t, 0xffffffffu);
  const UOp *a0 = tr_and(t, a, m32), *a1 = tr_shr(t, a, 32);
  const UOp *b0 = tr_and(t, b, m32), *b1 = tr_shr(t, b, 32);
  const UOp *p01 = tr_mul(t, a0, b1), *p10 = tr_mul(t, a1, b0);
  const UOp *mid = tr_add(t, tr_shr(t, tr_mul(t, a0, b0), 32),
                          tr_add(t, tr_and(t, p01, m32), tr_and(t, p10, m32)));
  const UOp *hi = tr_add(t, tr_mul(t, a1, b1), tr_add(t, tr_shr(t, p01, 32), tr_shr(t, p10, 32)));
  return tr_add(t, hi, tr_shr(t, mid, 32));
}

/* a = M·2^E: M with its implicit bit, and pos = E + 62 >= 0, as uint64. */
static const UOp *split_bits(Tr *t, const UOp *a, const UOp **pos) {
  const UOp *bits = tr_cast(t, tr_bitcast(t, a, t->u), t->u64);
  const UOp *mant_mask = k64(t, (1ull << t->mant) - 1);
  const UOp *m = tr_or(t, tr_and(t, bits, mant_mask), k64(t, 1ull << t->mant));
  int64_t e_off = t->bias + t->mant - 62; /* E = biased exponent - bias - mant */
  *pos = tr_sub(t, tr_shr(t, bits, t->mant), k64(t, (uint64_t)e_off));
  return m;
}

/* The top 128 bits (hi, lo) of M times the 192-bit window at pos. */
static TrPair window_product(Tr *t, const UOp *m, const UOp *pos) {
  int dmax = t->f64 ? 16 : 2; /* pos <= 2046 - 1075 + 62, or 254 - 150 + 62 */
  const UOp *d = tr_shr(t, pos, 6), *s = tr_and(t, pos, k64(t, 63));
  const UOp *w[4];
  for (int i = 0; i < 4; i++) w[i] = table_word(t, d, dmax, i);
  const UOp *z0 = funnel(t, w[0], w[1], s), *z1 = funnel(t, w[1], w[2], s);
  const UOp *z2 = funnel(t, w[2], w[3], s);
  const UOp *l1 = tr_mul(t, m, z1);
  const UOp *lo = tr_add(t, l1, mul_hi(t, m, z2));
  const UOp *carry = tr_cast(t, tr_lt(t, lo, l1), t->u64);
  const UOp *hi = tr_add(t, tr_add(t, tr_mul(t, m, z0), mul_hi(t, m, z1)), carry);
  return (TrPair){hi, lo};
}

/* The fraction f·2^128 (two's complement, f in [-1/2, 1/2)) as a float
 * pair: the high word converted, its conversion error, the low word. */
static TrPair fraction_value(Tr *t, const UOp *fhi, const UOp *flo) {
  const UOp *fi = tr_bitcast(t, fhi, t->i64);
  const UOp *h = tr_cast(t, fi, t->f);
  const UOp *rest = tr_sub(t, fi, tr_cast(t, h, t->i64)); /* exact, small */
  const UOp *l = tr_fma(t, tr_cast(t, flo, t->f), tr_kf(t, 0x1p-64), tr_cast(t, rest, t->f));
  const UOp *scale = tr_kf(t, 0x1p-64);
  return tr_fast_two_sum(t, tr_mul(t, h, scale), tr_mul(t, l, scale));
}

/* (hi + lo)·pi/2 with pi/2 as a pair, one exact product. */
static TrPair times_pio2(Tr *t, TrPair f) {
  const UOp *ph = tr_kf(t, t->f64 ? 0x1.921fb54442d18p+0 : 0x1.921fb6p+0);
  const UOp *pl = tr_kf(t, t->f64 ? 0x1.1a62633145c07p-54 : -0x1.777a5cp-25);
  TrPair p = tr_two_prod(t, f.hi, ph);
  const UOp *lo = tr_add(t, p.lo, tr_fma(t, f.hi, pl, tr_mul(t, f.lo, ph)));
  return tr_fast_two_sum(t, p.hi, lo);
}

TrReduced tr_payne_hanek(Tr *t, const UOp *a) {
  const UOp *pos = NULL, *m = split_bits(t, a, &pos);
  TrPair y = window_product(t, m, pos); /* a·2/pi mod 4, 2.126 fixed point */
  const UOp *fhi = tr_or(t, tr_shl(t, y.hi, 2), tr_shr(t, y.lo, 62));
  const UOp *flo = tr_shl(t, y.lo, 2);
  const UOp *q = tr_add(t, tr_shr(t, y.hi, 62), tr_shr(t, fhi, 63)); /* rounded */
  TrPair r = times_pio2(t, fraction_value(t, fhi, flo));
  return (TrReduced){r.hi, r.lo, tr_cast(t, q, t->i)};
}
