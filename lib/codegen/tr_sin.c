/* tr_sin.c — SIN as polynomial code (float32 or float64).
 *
 * In: x, a node of the compute float (Tr.f). Out: a node equal to sin(x)
 * within about one ulp for every finite x; sin(±inf) and sin(NaN) are NaN,
 * sin(-0) = -0. |x| is reduced modulo pi/2 to a remainder r (as hi + lo)
 * and a quadrant q: by Cody-Waite below a threshold (2^20 for float32, 2^30
 * for float64), by Payne-Hanek (tr_payne_hanek.c) above; both are built and
 * one is selected, the IR having no branches. Then sin or cos of r by a
 * Taylor polynomial, its sign by q and the sign of x. */
#include <math.h>

#include "codegen/tr_build.h"

/* (-1)^k/(2k+1)!, k = 1..8 (float64) and 1..4 (float32): sin's Taylor
 * series after x, truncated below 0.05 ulp for |r| <= 0.81 (pi/4 and the
 * slack of Cody-Waite's k in float32). */
static const double sin_f64[] = {
  -0x1.5555555555555p-3, 0x1.1111111111111p-7, -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19,
  -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,
};
static const double sin_f32[] = {-0x1.555556p-3, 0x1.111112p-7, -0x1.a01a02p-13, 0x1.71de3ap-19};

/* (-1)^k/(2k)!, k = 2..8 (float64) and 2..5 (float32): cos's series after
 * 1 - r²/2, truncated below 0.05 ulp for |r| <= 0.81. */
static const double cos_f64[] = {
  0x1.5555555555555p-5, -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22,
  0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45,
};
static const double cos_f32[] = {0x1.555556p-5, -0x1.6c16c2p-10, 0x1.a01a02p-16, -0x1.27e4fcp-22};

/* pi/2 as a sum of parts, each pi/2 minus the parts before, rounded to the
 * format (float32: 4 parts, float64: 3), and 2/pi rounded. */
static const double pio2_f64[] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54,
                                  -0x1.f1976b7ed8fbcp-110};
static const double pio2_f32[] = {0x1.921fb6p+0, -0x1.777a5cp-25, -0x1.ee59dap-50, 0x1.98a2e0p-77};
static const double two_over_pi[2] = {0x1.45f306p-1, 0x1.45f306dc9c883p-1};

/* Below it Cody-Waite reduces accurately (docs/transcendental.md). */
static const double cody_waite_limit[2] = {0x1p20, 0x1p30};

/* a = k·pi/2 + r, a >= 0 below the limit, k = rint(a·2/pi). With an FMA,
 * a - k·P1 is exact (|r| < 2 on the grid of P1's last bit); k·P2 is split
 * exactly by TwoProd and subtracted by TwoSum; the later parts are small. */
static TrReduced cody_waite(Tr *t, const UOp *a) {
  const double *p = t->f64 ? pio2_f64 : pio2_f32;
  int nparts = t->f64 ? 3 : 4;
  const UOp *magic = tr_kf(t, 1.5 * (double)(1ll << t->mant));
  const UOp *big = tr_fma(t, a, tr_kf(t, two_over_pi[t->f64]), magic), *k = tr_sub(t, big, magic);
  const UOp *negk = tr_op1(t, UJ_OP_NEG, k);
  const UOp *r1 = tr_fma(t, negk, tr_kf(t, p[0]), a);
  TrPair kp2 = tr_two_prod(t, k, tr_kf(t, p[1]));
  TrPair s = tr_two_sum(t, r1, tr_op1(t, UJ_OP_NEG, kp2.hi));
  const UOp *tail = tr_sub(t, s.lo, kp2.lo);
  for (int i = 2; i < nparts; i++) tail = tr_fma(t, negk, tr_kf(t, p[i]), tail);
  TrPair r = tr_fast_two_sum(t, s.hi, tail);
  /* k mod 4: the low bits of big (its ulp is 1; magic's low bits are 0), no float-to-int CAST (tr_exp2) */
  return (TrReduced){r.hi, r.lo, tr_and(t, tr_bitcast(t, big, t->i), tr_ki(t, 3))};
}

/* sin(x + y) for small y: x + x³·S(x²) + y·(1 - x²/2), in fdlibm's order
 * x - ((z·(y/2 - v·R) - y) - v·S1) with z = x², v = z·x, R = S2 + S3·z ... */
static const UOp *sin_kernel(Tr *t, const UOp *x, const UOp *y) {
  const double *c = t->f64 ? sin_f64 : sin_f32;
  const UOp *z = tr_mul(t, x, x), *v = tr_mul(t, z, x);
  const UOp *r = tr_poly(t, z, c + 1, t->f64 ? 7 : 3);
  const UOp *negv = tr_op1(t, UJ_OP_NEG, v);
  const UOp *u = tr_fma(t, negv, r, tr_mul(t, tr_kf(t, 0.5), y));
  u = tr_fma(t, z, u, tr_op1(t, UJ_OP_NEG, y));
  u = tr_fma(t, negv, tr_kf(t, c[0]), u);
  return tr_sub(t, x, u);
}

/* cos(x + y) for small y: 1 - x²/2 + x⁴·C(x²) - x·y, with w = 1 - x²/2 and
 * its rounding error (1 - w) - x²/2 added back (fdlibm's order). */
static const UOp *cos_kernel(Tr *t, const UOp *x, const UOp *y) {
  const UOp *z = tr_mul(t, x, x), *hz = tr_mul(t, tr_kf(t, 0.5), z);
  const UOp *r = tr_mul(t, z, t->f64 ? tr_poly(t, z, cos_f64, 7) : tr_poly(t, z, cos_f32, 4));
  const UOp *one = tr_kf(t, 1), *w = tr_sub(t, one, hz);
  const UOp *tail = tr_fma(t, z, r, tr_op1(t, UJ_OP_NEG, tr_mul(t, x, y)));
  return tr_add(t, w, tr_add(t, tr_sub(t, tr_sub(t, one, w), hz), tail));
}

/* The reduction of a = |x|: Cody-Waite below the limit, else Payne-Hanek. */
static TrReduced reduce(Tr *t, const UOp *a) {
  TrReduced cw = cody_waite(t, a), ph = tr_payne_hanek(t, a);
  const UOp *small = tr_lt(t, a, tr_kf(t, cody_waite_limit[t->f64]));
  return (TrReduced){tr_where(t, small, cw.hi, ph.hi), tr_where(t, small, cw.lo, ph.lo),
                     tr_where(t, small, cw.q, ph.q)};
}

/* sin(x) = sign(x)·sin(|x|); sin(|x|) = ±sin(r) or ±cos(r) by q. */
const UOp *tr_sin(Tr *t, const UOp *x) {
  const UOp *sign_bit = tr_ki(t, (int64_t)(1ull << (t->bits - 1)));
  const UOp *bits = tr_bitcast(t, x, t->i);
  const UOp *sign = tr_and(t, bits, sign_bit);
  const UOp *a = tr_bitcast(t, tr_op2(t, UJ_OP_XOR, bits, sign), t->f);
  TrReduced r = reduce(t, a);
  const UOp *one = tr_ki(t, 1), *two = tr_ki(t, 2);
  const UOp *v = tr_where(t, tr_eq(t, tr_and(t, r.q, one), one), cos_kernel(t, r.hi, r.lo),
                          sin_kernel(t, r.hi, r.lo));
  v = tr_where(t, tr_eq(t, tr_and(t, r.q, two), two), tr_op1(t, UJ_OP_NEG, v), v);
  v = tr_bitcast(t, tr_op2(t, UJ_OP_XOR, tr_bitcast(t, v, t->i), sign), t->f);
  return tr_where(t, tr_lt(t, a, tr_kf(t, INFINITY)), v, tr_kf(t, NAN));
}
