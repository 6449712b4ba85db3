/* prove.c — equivalence of two expressions, proved by z3 (tests only).
 *
 * In: two value nodes (prove.h). Out: a verdict. The two graphs are
 * encoded into one z3 formula, a != b under the variables' ranges, and z3
 * looks for a model: none (unsat) is a proof. A model is a point; the
 * reference evaluator rechecks it, so a failure is always a real
 * counterexample (or, when the evaluator disagrees with z3, a bug here).
 *
 * The encoding is lib/uop/alu.c's semantics, exactly:
 *  - ints are mathematical integers kept in their dtype's range. ADD, SUB,
 *    MUL, NEG, MULACC and casts compute exactly, then wrap (a mod 2^w,
 *    shifted to the signed range) unless interval bounds, computed here
 *    independently of lib/, show the exact value fits. IDIV/MOD truncate
 *    (z3's div/mod are Euclidean: trunc(a/b) = sign(b)·(a >= 0 ? div(a,|b|)
 *    : -div(-a,|b|))); x/0 is all ones, x%0 is x, MIN/-1 wraps. Shifts take
 *    their count mod the width: SHL is a product by 2^n and SHR a floor
 *    division, case by case over the counts; AND/OR/XOR go through
 *    bit-vectors (int2bv/bv2int), except AND with 2^k-1 of a value >= 0, a
 *    remainder.
 *  - bools are z3 Bools; ALU ops on bools act on 0/1 as alu_eval does.
 *  - floats are z3's IEEE floating point in the dtype's format, rounding to
 *    nearest even: ADD SUB MUL FDIV SQRT RECIP round once (the evaluator's
 *    double-then-narrow rounding equals that), MULACC is a fused
 *    multiply-add (float16/bfloat16: fused in float64, then narrowed, as
 *    the evaluator does), MAX gives NaN for a NaN and +0 over -0, compares
 *    are IEEE, float->int casts saturate and send NaN to 0, int->float
 *    rounds once (float16/bfloat16: through float64). Equality of results
 *    is identity (NaN = NaN, +0 != -0), as words are compared.
 *  - EXP2, LOG2 and SIN are unknown functions of their operand: a proof
 *    then holds for any function, a model proves nothing (PROVE_UNKNOWN
 *    unless the evaluator confirms it).
 * Two modes: ints as z3 Ints (linear arithmetic decides index algebra at
 * any width; a product or quotient by an unknown of at most SPLIT_MAX
 * values is split into linear cases), or as bit-vectors of their width
 * (bit operations and wrap-around are native; floats mix with them). A
 * query runs in one, and where z3 gives up, in the other, unless that
 * would bit-blast a 64-bit multiplier or divider; where both give up, in
 * pieces (sweep(): inner nodes proved equal bottom-up and merged).
 * z3 runs under a deterministic resource limit (rlimit), not a clock, so
 * a CI run proves the same expressions on any machine. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <z3.h>

#include "prove.h"
#include "uop/alu.h"
#include "uop/eval.h"

/* PROVE_HANG_MS: a wall-clock guard for the parts of z3 that do not count
 * their work (bit-blasting); the tests' queries stop at their rlimit. */
enum { PROVE_HANG_MS = 20000, MAX_PROVE_VARS = 64, SPLIT_MAX = 64 };

typedef __int128 Wide;
#define WIDE_MAX ((Wide)(((unsigned __int128)1 << 127) - 1))
#define WIDE_MIN (-WIDE_MAX - 1)

/* An encoded value: its z3 term and, for ints, bounds on it. */
typedef struct Val {
  Z3_ast ast;
  Wide lo, hi;
} Val;

typedef struct Prover {
  Z3_context z;
  bool bv; /* ints as bit-vectors of their width (else as Ints) */
  const UOp *const *merged; /* by node id: a node proved equal to this one, or NULL */
  Ctx *ctx;
  Val *vals; /* by node id; ast NULL: not encoded yet */
  size_t nvals;
  const char *var_names[MAX_PROVE_VARS];
  Z3_ast var_asts[MAX_PROVE_VARS];
  uj_scalar var_dtypes[MAX_PROVE_VARS];
  Z3_ast ranges[4 * MAX_PROVE_VARS];
  int nvars, nranges;
  bool uses_unknown_function;
  const char *unsupported; /* what the encoding lacks, or NULL */
} Prover;

static bool z3_failed;

static void on_z3_error(Z3_context z, Z3_error_code e) {
  (void)z, (void)e;
  z3_failed = true;
}

/* ---- ints ---- */

static Z3_ast wide_num(Prover *p, Wide v) {
  char buf[64], *s = buf + sizeof buf;
  unsigned __int128 m = v < 0 ? (unsigned __int128)0 - (unsigned __int128)v : (unsigned __int128)v;
  *--s = '\0';
  do *--s = (char)('0' + (int)(m % 10)), m /= 10;
  while (m);
  if (v < 0) *--s = '-';
  return Z3_mk_numeral(p->z, s, Z3_mk_int_sort(p->z));
}

static void int_range(uj_scalar s, Wide *lo, Wide *hi) {
  unsigned bits = scalar_table[s].bits;
  if (scalar_table[s].is_signed) *lo = -((Wide)1 << (bits - 1)), *hi = ((Wide)1 << (bits - 1)) - 1;
  else *lo = 0, *hi = ((Wide)1 << bits) - 1;
}

static Z3_ast add2(Prover *p, Z3_ast a, Z3_ast b) { return Z3_mk_add(p->z, 2, (Z3_ast[]){a, b}); }
static Z3_ast sub2(Prover *p, Z3_ast a, Z3_ast b) { return Z3_mk_sub(p->z, 2, (Z3_ast[]){a, b}); }
static Z3_ast mul2(Prover *p, Z3_ast a, Z3_ast b) { return Z3_mk_mul(p->z, 2, (Z3_ast[]){a, b}); }
static Z3_ast and2(Prover *p, Z3_ast a, Z3_ast b) { return Z3_mk_and(p->z, 2, (Z3_ast[]){a, b}); }
static Z3_ast or2(Prover *p, Z3_ast a, Z3_ast b) { return Z3_mk_or(p->z, 2, (Z3_ast[]){a, b}); }

static Wide wide_min(Wide a, Wide b) { return a < b ? a : b; }
static Wide wide_max(Wide a, Wide b) { return a > b ? a : b; }

/* Bounds of a + b, a·b (unbounded on overflow: WIDE_MIN..WIDE_MAX). */
static void add_bounds(Val a, Val b, Val *out) {
  if (__builtin_add_overflow(a.lo, b.lo, &out->lo) || __builtin_add_overflow(a.hi, b.hi, &out->hi))
    out->lo = WIDE_MIN, out->hi = WIDE_MAX;
}

static void mul_bounds(Val a, Val b, Val *out) {
  Wide c[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &c[0]) || __builtin_mul_overflow(a.lo, b.hi, &c[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &c[2]) || __builtin_mul_overflow(a.hi, b.hi, &c[3])) {
    out->lo = WIDE_MIN, out->hi = WIDE_MAX;
    return;
  }
  out->lo = wide_min(wide_min(c[0], c[1]), wide_min(c[2], c[3]));
  out->hi = wide_max(wide_max(c[0], c[1]), wide_max(c[2], c[3]));
}

static Val neg_val(Prover *p, Val a) {
  Val out = {Z3_mk_unary_minus(p->z, a.ast), -a.hi, -a.lo};
  if (a.lo == WIDE_MIN || a.hi == WIDE_MIN) out.lo = WIDE_MIN, out.hi = WIDE_MAX;
  return out;
}

/* The exact value v as dtype s holds it: v mod 2^w, in s's range. */
static Val wrap(Prover *p, uj_scalar s, Val v) {
  Wide lo, hi;
  int_range(s, &lo, &hi);
  if (v.lo >= lo && v.hi <= hi) return v;
  Wide span = hi - lo + 1;
  Z3_ast m = Z3_mk_mod(p->z, sub2(p, v.ast, wide_num(p, lo)), wide_num(p, span));
  return (Val){add2(p, m, wide_num(p, lo)), lo, hi};
}

/* C's a / b for b != 0, exactly (no wrap): sign(b)·trunc(a/|b|). */
static Val trunc_div(Prover *p, Val a, Val b) {
  Z3_context z = p->z;
  Z3_ast zero = wide_num(p, 0);
  Z3_ast b_neg = Z3_mk_lt(z, b.ast, zero);
  Z3_ast mag = b.lo >= 0 ? b.ast : b.hi <= 0 ? Z3_mk_unary_minus(z, b.ast)
                                          : Z3_mk_ite(z, b_neg, Z3_mk_unary_minus(z, b.ast), b.ast);
  Z3_ast q_pos = Z3_mk_div(z, a.ast, mag);
  Z3_ast q = a.lo >= 0 ? q_pos
                       : Z3_mk_ite(z, Z3_mk_ge(z, a.ast, zero), q_pos,
                                   Z3_mk_unary_minus(z, Z3_mk_div(z, Z3_mk_unary_minus(z, a.ast), mag)));
  if (b.hi <= 0) q = Z3_mk_unary_minus(z, q); /* b = 0: the caller's ite */
  else if (b.lo < 0) q = Z3_mk_ite(z, b_neg, Z3_mk_unary_minus(z, q), q);
  Wide m = wide_max(wide_max(a.lo < 0 ? -a.lo : a.lo, a.hi < 0 ? -a.hi : a.hi), 0);
  return (Val){q, -m, m}; /* |q| <= |a| */
}

static Val int_divmod(Prover *p, Op op, uj_scalar s, Val a, Val b) {
  Z3_context z = p->z;
  Wide lo, hi;
  int_range(s, &lo, &hi);
  Val q = trunc_div(p, a, b), out;
  if (op == UJ_OP_IDIV) {
    out = wrap(p, s, q);
    if (b.lo <= 0 && b.hi >= 0) /* x/0: all ones */
      out.ast = Z3_mk_ite(z, Z3_mk_eq(z, b.ast, wide_num(p, 0)),
                          wide_num(p, scalar_table[s].is_signed ? -1 : hi), out.ast),
      out.lo = lo, out.hi = hi;
    return out;
  }
  out = (Val){sub2(p, a.ast, mul2(p, b.ast, q.ast)), lo, hi}; /* |a % b| < |b|, sign of a */
  if (b.lo <= 0 && b.hi >= 0) out.ast = Z3_mk_ite(z, Z3_mk_eq(z, b.ast, wide_num(p, 0)), a.ast, out.ast);
  return out;
}

static Z3_ast to_bv(Prover *p, unsigned bits, Val v) { return Z3_mk_int2bv(p->z, bits, v.ast); }

static Val from_bv(Prover *p, uj_scalar s, Z3_ast bv) {
  Wide lo, hi;
  int_range(s, &lo, &hi);
  return (Val){Z3_mk_bv2int(p->z, bv, scalar_table[s].is_signed), lo, hi};
}

/* ---- ints as bit-vectors (the mode for floats and bit operations) ---- */

static Z3_ast bv_num(Prover *p, unsigned bits, Wide v) {
  unsigned __int128 m = (unsigned __int128)v & (((unsigned __int128)1 << bits) - 1);
  char buf[64], *t = buf + sizeof buf;
  *--t = '\0';
  do *--t = (char)('0' + (int)(m % 10)), m /= 10;
  while (m);
  return Z3_mk_numeral(p->z, t, Z3_mk_bv_sort(p->z, bits));
}

static bool encode_int_op_bv(Prover *p, const UOp *u, Val *x, Val *out) {
  Z3_context z = p->z;
  uj_scalar s = (uj_scalar)u->src[0]->dtype.scalar;
  bool sg = scalar_table[s].is_signed;
  unsigned bits = scalar_table[s].bits;
  Z3_ast a = x[0].ast, b = x[1].ast, r, is_zero = b ? Z3_mk_eq(z, b, bv_num(p, bits, 0)) : NULL;
  switch (u->op) {
  case UJ_OP_ADD: r = Z3_mk_bvadd(z, a, b); break;
  case UJ_OP_SUB: r = Z3_mk_bvsub(z, a, b); break;
  case UJ_OP_MUL: r = Z3_mk_bvmul(z, a, b); break;
  case UJ_OP_MULACC: r = Z3_mk_bvadd(z, Z3_mk_bvmul(z, a, b), x[2].ast); break;
  case UJ_OP_NEG: r = Z3_mk_bvneg(z, a); break;
  case UJ_OP_IDIV: /* bvsdiv truncates, MIN/-1 is MIN; x/0 is all ones here */
    r = Z3_mk_ite(z, is_zero, bv_num(p, bits, -1), sg ? Z3_mk_bvsdiv(z, a, b) : Z3_mk_bvudiv(z, a, b));
    break;
  case UJ_OP_MOD: r = Z3_mk_ite(z, is_zero, a, sg ? Z3_mk_bvsrem(z, a, b) : Z3_mk_bvurem(z, a, b)); break;
  case UJ_OP_MAX: r = Z3_mk_ite(z, sg ? Z3_mk_bvslt(z, a, b) : Z3_mk_bvult(z, a, b), b, a); break;
  case UJ_OP_CMPLT: return *out = (Val){sg ? Z3_mk_bvslt(z, a, b) : Z3_mk_bvult(z, a, b), 0, 1}, true;
  case UJ_OP_CMPEQ: return *out = (Val){Z3_mk_eq(z, a, b), 0, 1}, true;
  case UJ_OP_CMPNE: return *out = (Val){Z3_mk_not(z, Z3_mk_eq(z, a, b)), 0, 1}, true;
  case UJ_OP_AND: r = Z3_mk_bvand(z, a, b); break;
  case UJ_OP_OR: r = Z3_mk_bvor(z, a, b); break;
  case UJ_OP_XOR: r = Z3_mk_bvxor(z, a, b); break;
  case UJ_OP_SHL: case UJ_OP_SHR: { /* the count mod the width */
    Z3_ast n = Z3_mk_bvurem(z, b, bv_num(p, bits, bits));
    r = u->op == UJ_OP_SHL ? Z3_mk_bvshl(z, a, n) : sg ? Z3_mk_bvashr(z, a, n) : Z3_mk_bvlshr(z, a, n);
    break;
  }
  default: return p->unsupported = op_table[u->op].name, false;
  }
  return *out = (Val){r, 0, 0}, true;
}

/* int -> int: the source's word (sign- or zero-extended) cut to the width */
static Z3_ast bv_resize(Prover *p, Z3_ast a, uj_scalar from, uj_scalar to) {
  unsigned fb = scalar_table[from].bits, tb = scalar_table[to].bits;
  if (tb < fb) return Z3_mk_extract(p->z, tb - 1, 0, a);
  if (tb == fb) return a;
  return scalar_table[from].is_signed ? Z3_mk_sign_ext(p->z, tb - fb, a) : Z3_mk_zero_ext(p->z, tb - fb, a);
}

/* A constant int node's value, or false. */
static bool const_value(const UOp *u, Wide *v) {
  if (u->op != UJ_OP_CONST || !dt_is_int(u->dtype)) return false;
  uint64_t w = uop_const_value(u);
  *v = dt_is_signed(u->dtype) ? (Wide)(int64_t)w : (Wide)w;
  return true;
}

/* a op k for a constant k: linear (no product or quotient of unknowns). */
static Val int_op_const(Prover *p, Op op, uj_scalar s, Val a, Wide k) {
  Val kv = {wide_num(p, k), k, k}, r;
  unsigned bits = scalar_table[s].bits;
  Wide n = ((k % bits) + bits) % bits, scale = (Wide)1 << n; /* shifts: the count mod the width */
  switch (op) {
  case UJ_OP_SHR: return (Val){Z3_mk_div(p->z, a.ast, wide_num(p, scale)), a.lo >> n, a.hi >> n}; /* floor */
  case UJ_OP_SHL: case UJ_OP_MUL: /* a·2^n, a·k */
    if (op == UJ_OP_SHL) kv = (Val){wide_num(p, scale), scale, scale};
    r.ast = mul2(p, a.ast, kv.ast), mul_bounds(a, kv, &r);
    return wrap(p, s, r);
  default: return int_divmod(p, op, s, a, kv);
  }
}

/* Few values: at most SPLIT_MAX. */
static bool is_small(Val v) { return v.lo > WIDE_MIN && v.hi < WIDE_MAX && v.hi - v.lo < SPLIT_MAX; }

/* a op b as a case split on b's values (b is small): each case linear,
 * which z3 decides far faster than a product or quotient of unknowns. */
static Val split_on(Prover *p, Op op, uj_scalar s, Val a, Val b) {
  Val out = int_op_const(p, op, s, a, b.hi);
  for (Wide k = b.hi - 1; k >= b.lo; k--) {
    Val r = int_op_const(p, op, s, a, k);
    out = (Val){Z3_mk_ite(p->z, Z3_mk_eq(p->z, b.ast, wide_num(p, k)), r.ast, out.ast), wide_min(r.lo, out.lo),
                wide_max(r.hi, out.hi)};
  }
  return out;
}

static Val int_bits(Prover *p, Op op, uj_scalar s, const UOp *u, Val a, Val b) {
  Z3_context z = p->z;
  unsigned bits = scalar_table[s].bits;
  Wide c;
  if (op == UJ_OP_AND) { /* a & (2^k - 1) = a mod 2^k for a >= 0 */
    for (int side = 0; side < 2; side++) {
      Val other = side ? a : b;
      if (const_value(u->src[side], &c) && c >= 0 && (c & (c + 1)) == 0 && other.lo >= 0)
        return (Val){Z3_mk_mod(z, other.ast, wide_num(p, c + 1)), 0, c};
    }
  }
  if (op == UJ_OP_SHL || op == UJ_OP_SHR) { /* by each count the width allows */
    Val n = {Z3_mk_mod(z, b.ast, wide_num(p, bits)), 0, bits - 1};
    return b.lo == b.hi ? int_op_const(p, op, s, a, b.lo) : split_on(p, op, s, a, is_small(b) ? b : n);
  }
  Z3_ast x = to_bv(p, bits, a), y = to_bv(p, bits, b);
  Z3_ast r = op == UJ_OP_AND ? Z3_mk_bvand(z, x, y) : op == UJ_OP_OR ? Z3_mk_bvor(z, x, y) : Z3_mk_bvxor(z, x, y);
  return from_bv(p, s, r);
}

/* ---- floats ---- */

static Z3_sort float_sort(Prover *p, uj_scalar s) {
  switch (s) {
  case UJ_FLOAT16: return Z3_mk_fpa_sort_16(p->z);
  case UJ_BFLOAT16: return Z3_mk_fpa_sort(p->z, 8, 8);
  case UJ_FLOAT32: return Z3_mk_fpa_sort_32(p->z);
  default: return Z3_mk_fpa_sort_64(p->z);
  }
}

static Z3_ast rne(Prover *p) { return Z3_mk_fpa_rne(p->z); }

static Z3_ast float_const(Prover *p, uj_scalar s, uint64_t word) {
  double v;
  memcpy(&v, &word, sizeof v);
  Z3_sort sort = float_sort(p, s);
  if (v != v) return Z3_mk_fpa_nan(p->z, sort);
  if (v == 0) return Z3_mk_fpa_zero(p->z, sort, __builtin_signbit(v) != 0);
  if (__builtin_isinf(v)) return Z3_mk_fpa_inf(p->z, sort, v < 0);
  return Z3_mk_fpa_numeral_double(p->z, v, sort); /* exact: the word is in s's format */
}

static Z3_ast float_max(Prover *p, uj_scalar s, Z3_ast a, Z3_ast b) {
  Z3_context z = p->z;
  Z3_ast nan = or2(p, Z3_mk_fpa_is_nan(z, a), Z3_mk_fpa_is_nan(z, b));
  Z3_ast zeros = and2(p, Z3_mk_fpa_is_zero(z, a), Z3_mk_fpa_is_zero(z, b));
  Z3_ast pick = Z3_mk_ite(z, zeros, Z3_mk_ite(z, Z3_mk_fpa_is_negative(z, a), b, a),
                          Z3_mk_ite(z, Z3_mk_fpa_lt(z, a, b), b, a));
  return Z3_mk_ite(z, nan, Z3_mk_fpa_nan(z, float_sort(p, s)), pick);
}

/* float16/bfloat16 values computed in float64, then narrowed */
static bool computes_wide(uj_scalar s) { return s == UJ_FLOAT16 || s == UJ_BFLOAT16; }

static Z3_ast narrow(Prover *p, uj_scalar s, Z3_ast wide) {
  return Z3_mk_fpa_to_fp_float(p->z, rne(p), wide, float_sort(p, s));
}

static Z3_ast widen(Prover *p, Z3_ast x) { return Z3_mk_fpa_to_fp_float(p->z, rne(p), x, float_sort(p, UJ_FLOAT64)); }

/* An int constant (a power of two, or 0) in float format s, rounded. */
static Z3_ast int_to_float_const(Prover *p, uj_scalar s, Wide v) {
  double d = (double)v;
  return float_const(p, s, word_from_double(s, d));
}

/* float -> int: NaN -> 0, saturating at the ends, else truncated. */
static Val float_to_int(Prover *p, uj_scalar out, uj_scalar in, Z3_ast x) {
  Z3_context z = p->z;
  Wide lo, hi;
  int_range(out, &lo, &hi);
  if (p->bv) { /* 2^k is exact in any format, or beyond it (then only inf reaches it) */
    unsigned bits = scalar_table[out].bits;
    Z3_ast flo = int_to_float_const(p, in, lo), fhi = int_to_float_const(p, in, hi + 1);
    Z3_ast t = scalar_table[out].is_signed ? Z3_mk_fpa_to_sbv(z, Z3_mk_fpa_rtz(z), x, bits)
                                           : Z3_mk_fpa_to_ubv(z, Z3_mk_fpa_rtz(z), x, bits);
    Z3_ast v = Z3_mk_ite(z, Z3_mk_fpa_is_nan(z, x), bv_num(p, bits, 0),
                         Z3_mk_ite(z, Z3_mk_fpa_leq(z, x, flo), bv_num(p, bits, lo),
                                   Z3_mk_ite(z, Z3_mk_fpa_geq(z, x, fhi), bv_num(p, bits, hi), t)));
    return (Val){v, lo, hi};
  }
  Z3_ast r = Z3_mk_fpa_to_real(z, x), zero = Z3_mk_int2real(z, wide_num(p, 0));
  Z3_ast t = Z3_mk_ite(z, Z3_mk_ge(z, r, zero), Z3_mk_real2int(z, r),
                       Z3_mk_unary_minus(z, Z3_mk_real2int(z, Z3_mk_unary_minus(z, r))));
  Z3_ast rlo = Z3_mk_int2real(z, wide_num(p, lo)), rhi = Z3_mk_int2real(z, wide_num(p, hi + 1));
  Z3_ast v = Z3_mk_ite(z, Z3_mk_fpa_is_nan(z, x), wide_num(p, 0),
                       Z3_mk_ite(z, Z3_mk_fpa_is_infinite(z, x),
                                 Z3_mk_ite(z, Z3_mk_fpa_is_negative(z, x), wide_num(p, lo), wide_num(p, hi)),
                                 Z3_mk_ite(z, Z3_mk_le(z, r, rlo), wide_num(p, lo),
                                           Z3_mk_ite(z, Z3_mk_ge(z, r, rhi), wide_num(p, hi), t))));
  return (Val){v, lo, hi};
}

/* int -> float, rounded once (float16/bfloat16: via float64, as alu.c). */
static Z3_ast int_to_float(Prover *p, uj_scalar out, uj_scalar in, Val v) {
  Z3_context z = p->z;
  uj_scalar via = computes_wide(out) ? UJ_FLOAT64 : out;
  Z3_ast bv = p->bv ? v.ast : Z3_mk_int2bv(z, 64, v.ast);
  bool sg = p->bv ? scalar_table[in].is_signed : in != UJ_UINT64; /* Int mode: 64 bits hold any value */
  Z3_ast f = sg ? Z3_mk_fpa_to_fp_signed(z, rne(p), bv, float_sort(p, via))
                : Z3_mk_fpa_to_fp_unsigned(z, rne(p), bv, float_sort(p, via));
  return via == out ? f : narrow(p, out, f);
}

/* The IEEE bits of x as alu.c stores them: NaN is one canonical pattern. */
static Z3_ast float_bits(Prover *p, uj_scalar s, Z3_ast x) {
  Z3_context z = p->z;
  unsigned bits = scalar_table[s].bits;
  uint64_t nan_word = word_to_mem_bits(s, word_from_double(s, __builtin_nan("")));
  Z3_ast nan = Z3_mk_int2bv(z, bits, wide_num(p, (Wide)nan_word));
  return Z3_mk_ite(z, Z3_mk_fpa_is_nan(z, x), nan, Z3_mk_fpa_to_ieee_bv(z, x));
}

static Z3_ast unknown_function(Prover *p, Op op, uj_scalar s, Z3_ast x) {
  char name[48];
  snprintf(name, sizeof name, "%s_%s", op_table[op].name, scalar_table[s].name);
  Z3_sort sort = float_sort(p, s);
  Z3_func_decl f = Z3_mk_func_decl(p->z, Z3_mk_string_symbol(p->z, name), 1, &sort, sort);
  p->uses_unknown_function = true;
  return Z3_mk_app(p->z, f, 1, &x);
}

/* ---- nodes ---- */

static bool encode(Prover *p, const UOp *u, Val *out);

static Val bool_val(Z3_ast b) { return (Val){b, 0, 1}; }

static bool encode_var(Prover *p, const UOp *u, Val *out) {
  if (!dt_is_int(u->dtype) || u->nints < 2) return p->unsupported = "a non-int variable", false;
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  Wide lo, hi;
  int_range(s, &lo, &hi);
  lo = wide_max(lo, u->ints[0]), hi = wide_min(hi, dt_is_signed(u->dtype) ? (Wide)u->ints[1] : (Wide)(uint64_t)u->ints[1]);
  for (int i = 0; i < p->nvars; i++) /* the evaluator binds variables by name */
    if (strcmp(p->var_names[i], u->name) == 0) {
      *out = (Val){p->var_asts[i], lo, hi};
      break;
    }
  if (!out->ast) {
    if (p->nvars == MAX_PROVE_VARS) return p->unsupported = "too many variables", false;
    Z3_sort sort = p->bv ? Z3_mk_bv_sort(p->z, scalar_table[s].bits) : Z3_mk_int_sort(p->z);
    out->ast = Z3_mk_const(p->z, Z3_mk_string_symbol(p->z, u->name), sort);
    p->var_names[p->nvars] = u->name, p->var_dtypes[p->nvars] = s, p->var_asts[p->nvars++] = out->ast;
  }
  out->lo = lo, out->hi = hi;
  if (p->nranges + 2 > (int)(sizeof p->ranges / sizeof *p->ranges)) return p->unsupported = "too many variables", false;
  if (p->bv) {
    unsigned bits = scalar_table[s].bits;
    bool sg = scalar_table[s].is_signed;
    Z3_ast blo = bv_num(p, bits, lo), bhi = bv_num(p, bits, hi);
    p->ranges[p->nranges++] = sg ? Z3_mk_bvsge(p->z, out->ast, blo) : Z3_mk_bvuge(p->z, out->ast, blo);
    p->ranges[p->nranges++] = sg ? Z3_mk_bvsle(p->z, out->ast, bhi) : Z3_mk_bvule(p->z, out->ast, bhi);
    return true;
  }
  p->ranges[p->nranges++] = Z3_mk_ge(p->z, out->ast, wide_num(p, lo));
  p->ranges[p->nranges++] = Z3_mk_le(p->z, out->ast, wide_num(p, hi));
  return true;
}

/* The int constant v of dtype s, in the mode's sort. */
static Z3_ast int_num(Prover *p, uj_scalar s, Wide v) {
  return p->bv ? bv_num(p, scalar_table[s].bits, v) : wide_num(p, v);
}

static bool encode_cast(Prover *p, const UOp *u, Val x, Val *out) {
  Z3_context z = p->z;
  uj_scalar to = (uj_scalar)u->dtype.scalar, from = (uj_scalar)u->src[0]->dtype.scalar;
  bool fi = scalar_table[from].is_float, ti = scalar_table[to].is_float;
  if (u->op == UJ_OP_BITCAST) {
    if (to == UJ_BOOL || from == UJ_BOOL) return p->unsupported = "a bool bitcast", false;
    unsigned bits = scalar_table[to].bits;
    Z3_ast b = fi ? float_bits(p, from, x.ast) : p->bv ? x.ast : to_bv(p, bits, x);
    *out = ti ? (Val){Z3_mk_fpa_to_fp_bv(z, b, float_sort(p, to)), 0, 0} : p->bv ? (Val){b, 0, 0} : from_bv(p, to, b);
    return true;
  }
  if (from == UJ_BOOL && to == UJ_BOOL) return *out = x, true;
  if (to == UJ_BOOL)
    return *out = bool_val(fi ? Z3_mk_not(z, Z3_mk_fpa_is_zero(z, x.ast)) : Z3_mk_not(z, Z3_mk_eq(z, x.ast, int_num(p, from, 0)))), true;
  if (from == UJ_BOOL) {
    Val one = {ti ? float_const(p, to, word_from_double(to, 1.0)) : int_num(p, to, 1), 1, 1};
    Val zero = {ti ? Z3_mk_fpa_zero(z, float_sort(p, to), false) : int_num(p, to, 0), 0, 0};
    return *out = (Val){Z3_mk_ite(z, x.ast, one.ast, zero.ast), 0, 1}, true;
  }
  if (fi && ti) return *out = (Val){Z3_mk_fpa_to_fp_float(z, rne(p), x.ast, float_sort(p, to)), 0, 0}, true;
  if (fi) return *out = float_to_int(p, to, from, x.ast), true;
  if (ti) return *out = (Val){int_to_float(p, to, from, x), 0, 0}, true;
  if (p->bv) return *out = (Val){bv_resize(p, x.ast, from, to), 0, 0}, true;
  return *out = wrap(p, to, x), true;
}

/* Ops on bools, as alu_eval computes them on 0/1. */
static bool encode_bool_op(Prover *p, Op op, Val *x, Val *out) {
  Z3_context z = p->z;
  Z3_ast a = x[0].ast, b = x[1].ast;
  switch (op) {
  case UJ_OP_NEG: return *out = x[0], true; /* 0 - x != 0 */
  case UJ_OP_ADD: case UJ_OP_SUB: case UJ_OP_XOR: case UJ_OP_CMPNE: return *out = bool_val(Z3_mk_xor(z, a, b)), true;
  case UJ_OP_MUL: case UJ_OP_AND: return *out = bool_val(and2(p, a, b)), true;
  case UJ_OP_OR: case UJ_OP_MAX: return *out = bool_val(or2(p, a, b)), true;
  case UJ_OP_CMPEQ: return *out = bool_val(Z3_mk_eq(z, a, b)), true;
  case UJ_OP_CMPLT: return *out = bool_val(and2(p, Z3_mk_not(z, a), b)), true;
  case UJ_OP_IDIV: return *out = bool_val(Z3_mk_ite(z, b, a, Z3_mk_true(z))), true; /* x/0: all ones */
  case UJ_OP_MOD: case UJ_OP_SHL: case UJ_OP_SHR: /* x%1 = 0, x%0 = x; a shift by 1 of a bit is 0 */
    return *out = bool_val(Z3_mk_ite(z, b, Z3_mk_false(z), a)), true;
  case UJ_OP_MULACC: return *out = bool_val(or2(p, and2(p, a, b), x[2].ast)), true;
  default: return p->unsupported = op_table[op].name, false;
  }
}

static bool encode_float_op(Prover *p, Op op, uj_scalar s, Val *x, Val *out) {
  Z3_context z = p->z;
  Z3_ast a = x[0].ast, b = x[1].ast, r;
  switch (op) {
  case UJ_OP_ADD: r = Z3_mk_fpa_add(z, rne(p), a, b); break;
  case UJ_OP_SUB: r = Z3_mk_fpa_sub(z, rne(p), a, b); break;
  case UJ_OP_MUL: r = Z3_mk_fpa_mul(z, rne(p), a, b); break;
  case UJ_OP_FDIV: r = Z3_mk_fpa_div(z, rne(p), a, b); break;
  case UJ_OP_MAX: r = float_max(p, s, a, b); break;
  case UJ_OP_CMPLT: return *out = bool_val(Z3_mk_fpa_lt(z, a, b)), true;
  case UJ_OP_CMPEQ: return *out = bool_val(Z3_mk_fpa_eq(z, a, b)), true;
  case UJ_OP_CMPNE: return *out = bool_val(Z3_mk_not(z, Z3_mk_fpa_eq(z, a, b))), true;
  case UJ_OP_NEG: r = Z3_mk_fpa_neg(z, a); break;
  case UJ_OP_SQRT: r = Z3_mk_fpa_sqrt(z, rne(p), a); break;
  case UJ_OP_RECIP: r = Z3_mk_fpa_div(z, rne(p), float_const(p, s, word_from_double(s, 1.0)), a); break;
  case UJ_OP_EXP2: case UJ_OP_LOG2: case UJ_OP_SIN: r = unknown_function(p, op, s, a); break;
  case UJ_OP_MULACC:
    r = computes_wide(s) ? narrow(p, s, Z3_mk_fpa_fma(z, rne(p), widen(p, a), widen(p, b), widen(p, x[2].ast)))
                         : Z3_mk_fpa_fma(z, rne(p), a, b, x[2].ast);
    break;
  default: return p->unsupported = op_table[op].name, false;
  }
  return *out = (Val){r, 0, 0}, true;
}

static bool encode_int_op(Prover *p, const UOp *u, Val *x, Val *out) {
  Z3_context z = p->z;
  Op op = u->op;
  uj_scalar s = (uj_scalar)u->src[0]->dtype.scalar;
  Val r = {0};
  switch (op) {
  case UJ_OP_ADD: r.ast = add2(p, x[0].ast, x[1].ast), add_bounds(x[0], x[1], &r); return *out = wrap(p, s, r), true;
  case UJ_OP_SUB: {
    Val nb = neg_val(p, x[1]);
    r.ast = sub2(p, x[0].ast, x[1].ast), add_bounds(x[0], nb, &r);
    return *out = wrap(p, s, r), true;
  }
  case UJ_OP_MUL:
    if (x[0].lo != x[0].hi && x[1].lo != x[1].hi && (is_small(x[0]) || is_small(x[1])))
      return *out = is_small(x[1]) ? split_on(p, op, s, x[0], x[1]) : split_on(p, op, s, x[1], x[0]), true;
    r.ast = mul2(p, x[0].ast, x[1].ast), mul_bounds(x[0], x[1], &r);
    return *out = wrap(p, s, r), true;
  case UJ_OP_MULACC: {
    Val prod = {mul2(p, x[0].ast, x[1].ast), 0, 0};
    mul_bounds(x[0], x[1], &prod);
    r.ast = add2(p, prod.ast, x[2].ast), add_bounds(prod, x[2], &r);
    return *out = wrap(p, s, r), true;
  }
  case UJ_OP_NEG: return *out = wrap(p, s, neg_val(p, x[0])), true;
  case UJ_OP_IDIV: case UJ_OP_MOD:
    if (x[1].lo != x[1].hi && is_small(x[1])) return *out = split_on(p, op, s, x[0], x[1]), true;
    return *out = int_divmod(p, op, s, x[0], x[1]), true;
  case UJ_OP_MAX:
    return *out = (Val){Z3_mk_ite(z, Z3_mk_lt(z, x[0].ast, x[1].ast), x[1].ast, x[0].ast),
                        wide_max(x[0].lo, x[1].lo), wide_max(x[0].hi, x[1].hi)}, true;
  case UJ_OP_CMPLT: return *out = bool_val(Z3_mk_lt(z, x[0].ast, x[1].ast)), true;
  case UJ_OP_CMPEQ: return *out = bool_val(Z3_mk_eq(z, x[0].ast, x[1].ast)), true;
  case UJ_OP_CMPNE: return *out = bool_val(Z3_mk_not(z, Z3_mk_eq(z, x[0].ast, x[1].ast))), true;
  case UJ_OP_AND: case UJ_OP_OR: case UJ_OP_XOR: case UJ_OP_SHL: case UJ_OP_SHR:
    return *out = int_bits(p, op, s, u, x[0], x[1]), true;
  default: return p->unsupported = op_table[op].name, false;
  }
}

static bool encode(Prover *p, const UOp *u, Val *out) {
  if (u->id >= p->nvals) return p->unsupported = "a node outside the graph", false;
  if (p->vals[u->id].ast) return *out = p->vals[u->id], true;
  if (p->merged && p->merged[u->id]) { /* proved equal before: the same term */
    if (!encode(p, p->merged[u->id], out)) return false;
    p->vals[u->id] = *out;
    return true;
  }
  if (u->dtype.lanes != 1 || dt_is_ptr(u->dtype) || dt_is_void(u->dtype))
    return p->unsupported = op_table[u->op].name, false;
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  Val x[3] = {{0}}, r = {0};
  Wide c;
  bool ok;
  if (u->op == UJ_OP_CONST) {
    if (const_value(u, &c)) r = (Val){int_num(p, s, c), c, c};
    else if (s == UJ_BOOL) r = bool_val(uop_const_value(u) ? Z3_mk_true(p->z) : Z3_mk_false(p->z));
    else r = (Val){float_const(p, s, uop_const_value(u)), 0, 0};
    ok = true;
  } else if (u->op == UJ_OP_DEFINE_VAR) {
    ok = encode_var(p, u, &r);
  } else if (u->op == UJ_OP_GEP && u->src[0]->op == UJ_OP_VECTORIZE && u->ints[0] >= 0 &&
             (uint64_t)u->ints[0] < u->src[0]->nsrc) {
    ok = encode(p, u->src[0]->src[u->ints[0]], &r);
  } else if ((u->op == UJ_OP_EXP2 || u->op == UJ_OP_LOG2 || u->op == UJ_OP_SIN) && u->src[0]->op == UJ_OP_CONST) {
    uint64_t w = uop_const_value(u->src[0]); /* of a constant: alu.c's value, no unknown function */
    r = (Val){float_const(p, s, alu_eval(u->op, s, s, &w)), 0, 0}, ok = true;
  } else if (!op_has(u->op, OPF_ALU) && u->op != UJ_OP_CAST && u->op != UJ_OP_BITCAST) {
    return p->unsupported = op_table[u->op].name, false;
  } else {
    for (uint32_t i = 0; i < u->nsrc; i++)
      if (!encode(p, u->src[i], &x[i])) return false;
    uj_scalar in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
    if (u->op == UJ_OP_CAST || u->op == UJ_OP_BITCAST) ok = encode_cast(p, u, x[0], &r);
    else if (u->op == UJ_OP_WHERE)
      r = (Val){Z3_mk_ite(p->z, x[0].ast, x[1].ast, x[2].ast), wide_min(x[1].lo, x[2].lo),
                wide_max(x[1].hi, x[2].hi)},
      ok = true;
    else if (in == UJ_BOOL) ok = encode_bool_op(p, u->op, x, &r);
    else if (scalar_table[in].is_float) ok = encode_float_op(p, u->op, in, x, &r);
    else ok = p->bv ? encode_int_op_bv(p, u, x, &r) : encode_int_op(p, u, x, &r);
  }
  if (!ok || z3_failed) return p->unsupported = p->unsupported ? p->unsupported : "a z3 error", false;
  p->vals[u->id] = r;
  return *out = r, true;
}

/* ---- the check ---- */

static void say(char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && size) vsnprintf(why, size, fmt, ap);
  va_end(ap);
}

/* The model's point, checked with the evaluator: true when a and b differ there. */
static bool evaluator_differs(Prover *p, Z3_model m, const UOp *a, const UOp *b, char *why, size_t size) {
  int64_t values[MAX_PROVE_VARS];
  size_t at = 0;
  char point[256] = "";
  for (int i = 0; i < p->nvars; i++) {
    Z3_ast v;
    uint64_t u = 0;
    int64_t sv = 0;
    if (!Z3_model_eval(p->z, m, p->var_asts[i], true, &v)) v = NULL;
    if (scalar_table[p->var_dtypes[i]].is_signed) {
      if (v && Z3_get_numeral_int64(p->z, v, &sv)) values[i] = sv;
      else values[i] = 0;
    } else {
      if (v && Z3_get_numeral_uint64(p->z, v, &u)) values[i] = (int64_t)u;
      else values[i] = 0;
    }
    at += (size_t)snprintf(point + at, at < sizeof point ? sizeof point - at : 0, "%s%s=%lld",
                           i ? " " : "", p->var_names[i], (long long)values[i]);
    if (at >= sizeof point) at = sizeof point - 1;
  }
  uint64_t wa[16] = {0}, wb[16] = {0};
  bool ok = eval_expr(p->ctx, a, p->var_names, values, (size_t)p->nvars, wa) &&
            eval_expr(p->ctx, b, p->var_names, values, (size_t)p->nvars, wb);
  if (!ok) {
    say(why, size, "at %s the evaluator fails: %s", point, uj_error(p->ctx));
    return true;
  }
  say(why, size, "at %s: %#llx vs %#llx", point, (unsigned long long)wa[0], (unsigned long long)wb[0]);
  return wa[0] != wb[0];
}

static ProveVerdict check(Prover *p, const UOp *a, const UOp *b, unsigned rlimit, char *why, size_t size) {
  Z3_context z = p->z;
  Val va = {0}, vb = {0};
  if (!encode(p, a, &va) || !encode(p, b, &vb)) {
    say(why, size, "outside the encoding: %s", p->unsupported);
    return PROVE_UNSUPPORTED;
  }
  Z3_solver solver = Z3_mk_solver(z);
  Z3_solver_inc_ref(z, solver);
  Z3_params params = Z3_mk_params(z);
  Z3_params_inc_ref(z, params);
  Z3_params_set_uint(z, params, Z3_mk_string_symbol(z, "rlimit"), rlimit);
  Z3_params_set_uint(z, params, Z3_mk_string_symbol(z, "timeout"), PROVE_HANG_MS);
  Z3_solver_set_params(z, solver, params);
  for (int i = 0; i < p->nranges; i++) Z3_solver_assert(z, solver, p->ranges[i]);
  Z3_solver_assert(z, solver, Z3_mk_not(z, Z3_mk_eq(z, va.ast, vb.ast)));
  if (getenv("UJ_PROVE_DUMP")) fprintf(stderr, "%s\n", Z3_solver_to_string(z, solver));
  Z3_lbool r = z3_failed ? Z3_L_UNDEF : Z3_solver_check(z, solver);
  ProveVerdict verdict = PROVE_SAME;
  if (r == Z3_L_UNDEF) {
    say(why, size, "z3 gave up: %s", z3_failed ? "an error" : Z3_solver_get_reason_unknown(z, solver));
    verdict = PROVE_UNKNOWN;
  } else if (r == Z3_L_TRUE) {
    Z3_model m = Z3_solver_get_model(z, solver);
    Z3_model_inc_ref(z, m);
    if (evaluator_differs(p, m, a, b, why, size)) verdict = PROVE_DIFFERENT;
    else if (p->uses_unknown_function) verdict = PROVE_UNKNOWN, say(why, size, "z3's point goes through EXP2, LOG2 or SIN, modelled as unknown functions");
    else verdict = PROVE_MISMATCH;
    Z3_model_dec_ref(z, m);
  }
  Z3_params_dec_ref(z, params);
  Z3_solver_dec_ref(z, solver);
  return verdict;
}

/* A prover over the nodes up to id n - 1, in a fresh z3 context. */
static bool prover_open(Prover *p, Ctx *ctx, size_t n, bool bv, const UOp *const *merged) {
  *p = (Prover){.ctx = ctx, .bv = bv, .merged = merged, .vals = calloc(n, sizeof(Val)), .nvals = n};
  Z3_config cfg = Z3_mk_config();
  Z3_set_param_value(cfg, "model", "true");
  p->z = Z3_mk_context(cfg);
  Z3_del_config(cfg);
  z3_failed = false;
  if (p->z) Z3_set_error_handler(p->z, on_z3_error);
  return p->vals && p->z;
}

static void prover_close(Prover *p) {
  if (p->z) Z3_del_context(p->z);
  free(p->vals);
}

/* One attempt, in one mode, in a fresh z3 context. */
static ProveVerdict prove_in_mode(Ctx *ctx, const UOp *a, const UOp *b, bool bv, unsigned rlimit,
                                  const UOp *const *merged, char *why, size_t size) {
  Prover p;
  ProveVerdict verdict = PROVE_UNSUPPORTED;
  if (prover_open(&p, ctx, (a->id > b->id ? a->id : b->id) + 1, bv, merged)) verdict = check(&p, a, b, rlimit, why, size);
  else say(why, size, "out of memory");
  prover_close(&p);
  return verdict;
}

/* Floats (floats_only) or also bit operations: bit-level graphs, which
 * try bit-vectors first (z3's floats are bit-vectors; int2bv/bv2int are
 * slow to reason through). */
static bool is_bit_level(const UOp *u, bool floats_only, unsigned char *seen) {
  if (seen[u->id]) return false;
  seen[u->id] = 1;
  if (dt_is_float(u->dtype) || (!floats_only && (u->op == UJ_OP_AND || u->op == UJ_OP_OR || u->op == UJ_OP_XOR ||
                                                 u->op == UJ_OP_SHL || u->op == UJ_OP_SHR || u->op == UJ_OP_BITCAST)))
    return true;
  for (uint32_t i = 0; i < u->nsrc; i++)
    if (is_bit_level(u->src[i], floats_only, seen)) return true;
  return false;
}

/* A product, quotient or remainder of two unknowns 64 bits wide: its
 * circuit is what z3's bit-blaster spends seconds on, unchecked by the
 * resource limit. */
static bool has_wide_nonlinear(const UOp *u, unsigned char *seen) {
  if (seen[u->id]) return false;
  seen[u->id] = 1;
  if ((u->op == UJ_OP_MUL || u->op == UJ_OP_IDIV || u->op == UJ_OP_MOD || u->op == UJ_OP_MULACC) &&
      dt_is_int(u->src[0]->dtype) && dt_bits(u->src[0]->dtype) > 32 &&
      u->src[0]->op != UJ_OP_CONST && u->src[1]->op != UJ_OP_CONST)
    return true;
  for (uint32_t i = 0; i < u->nsrc; i++)
    if (has_wide_nonlinear(u->src[i], seen)) return true;
  return false;
}

/* One query: in the mode that suits it, then (both_modes) where z3 gives
 * up in the other. */
/* The modes for a == b: *bv_first, and whether the other may follow. */
static bool choose_modes(const UOp *a, const UOp *b, bool *bv_first) {
  size_t n = (a->id > b->id ? a->id : b->id) + 1;
  unsigned char *seen = calloc(n, 1);
  bool bv_costly = !seen || has_wide_nonlinear(a, seen) || has_wide_nonlinear(b, seen);
  if (seen) memset(seen, 0, n);
  *bv_first = seen && (is_bit_level(a, bv_costly, seen) || is_bit_level(b, bv_costly, seen));
  free(seen);
  return *bv_first || !bv_costly;
}

static ProveVerdict prove_modes(Ctx *ctx, const UOp *a, const UOp *b, unsigned rlimit, bool both_modes,
                                const UOp *const *merged, char *why, size_t size) {
  bool bv_first, other = choose_modes(a, b, &bv_first);
  /* Ints first (linear arithmetic decides index algebra at any width),
   * then bit-vectors where their circuits stay small; bit-level graphs the
   * other way round (floats always: they are bit-level in any mode). */
  ProveVerdict verdict = prove_in_mode(ctx, a, b, bv_first, rlimit, merged, why, size);
  if (verdict == PROVE_UNKNOWN && both_modes && other)
    verdict = prove_in_mode(ctx, a, b, !bv_first, rlimit, merged, why, size);
  return verdict;
}

/* SWEEP_EFFORT: a piece gets 1/SWEEP_EFFORT of a query's work limit, in
 * one mode: most pieces are easy, and one that is not is left unmerged. */
enum { SWEEP_POINTS = 12, SWEEP_EFFORT = 4 };

/* The values of u at the sweep's points (false: not a scalar the
 * evaluator computes alone). */
static bool signature(Ctx *ctx, const UOp *u, const char *const *names, const int64_t (*points)[MAX_PROVE_VARS],
                      size_t nvars, uint64_t *sig) {
  if (u->dtype.lanes != 1 || dt_is_ptr(u->dtype) || dt_is_void(u->dtype) || u->op == UJ_OP_CONST) return false;
  for (int k = 0; k < SWEEP_POINTS; k++) {
    uint64_t w[16] = {0};
    if (!eval_expr(ctx, u, names, points[k], nvars, w)) return false;
    sig[k] = w[0];
  }
  return true;
}

/* Where a whole query is beyond z3, prove it in pieces (SAT sweeping):
 * the nodes of b that a lacks, from the leaves up, each against a node of
 * a lacking in b with the same values at sample points; a pair proved
 * equal is merged (the same term from then on), so each query differs
 * only where the simplifier rewrote, and the last, a against b, is
 * small. Every merge is a proof, so the final verdict is one too. */
static ProveVerdict sweep(Ctx *ctx, const UOp *a, const UOp *b, unsigned rlimit, char *why, size_t size) {
  const UOp **na = NULL, **nb = NULL;
  size_t ca = uop_toposort(ctx, a, &na), cb = uop_toposort(ctx, b, &nb), n = (a->id > b->id ? a->id : b->id) + 1;
  const UOp **merged = calloc(n, sizeof *merged);
  unsigned char *side = calloc(n, 1); /* 1: in a, 2: in b */
  uint64_t(*sig_a)[SWEEP_POINTS] = calloc(ca ? ca : 1, sizeof *sig_a);
  bool *has_a = calloc(ca ? ca : 1, 1);
  const char *names[MAX_PROVE_VARS];
  int64_t points[SWEEP_POINTS][MAX_PROVE_VARS], lo[MAX_PROVE_VARS], hi[MAX_PROVE_VARS];
  size_t nvars = 0;
  ProveVerdict verdict = PROVE_UNKNOWN;
  if (!na || !nb || !merged || !side || !sig_a || !has_a) goto done;
  for (size_t i = 0; i < ca + cb; i++) {
    const UOp *u = i < ca ? na[i] : nb[i - ca];
    side[u->id] |= i < ca ? 1 : 2;
    bool known = u->op != UJ_OP_DEFINE_VAR || u->nints < 2;
    for (size_t v = 0; v < nvars && !known; v++) known = strcmp(names[v], u->name) == 0;
    if (known) continue;
    if (nvars == MAX_PROVE_VARS) goto done;
    names[nvars] = u->name, lo[nvars] = u->ints[0], hi[nvars++] = u->ints[1];
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < SWEEP_POINTS; k++)
    for (size_t v = 0; v < nvars; v++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      uint64_t span = (uint64_t)hi[v] - (uint64_t)lo[v] + 1;
      points[k][v] = k == 0 ? lo[v] : k == 1 ? hi[v] : (int64_t)((uint64_t)lo[v] + (span ? rng % span : rng));
    }
  for (size_t i = 0; i < ca; i++)
    has_a[i] = side[na[i]->id] == 1 && signature(ctx, na[i], names, (const int64_t(*)[MAX_PROVE_VARS])points, nvars,
                                                sig_a[i]);
  bool bv_first;
  choose_modes(a, b, &bv_first);
  Prover p; /* one context for the pieces: encodings below a merge stay valid */
  if (!prover_open(&p, ctx, n, bv_first, merged)) {
    prover_close(&p);
    goto done;
  }
  for (size_t j = 0; j < cb; j++) {
    uint64_t sig[SWEEP_POINTS];
    if (side[nb[j]->id] != 2 || nb[j] == b ||
        !signature(ctx, nb[j], names, (const int64_t(*)[MAX_PROVE_VARS])points, nvars, sig))
      continue;
    for (size_t i = 0; i < ca; i++) {
      if (!has_a[i] || !dt_eq(na[i]->dtype, nb[j]->dtype) || memcmp(sig_a[i], sig, sizeof sig) != 0) continue;
      p.unsupported = NULL;
      if (check(&p, na[i], nb[j], rlimit / SWEEP_EFFORT, why, size) == PROVE_SAME)
        merged[nb[j]->id] = na[i], p.vals[nb[j]->id] = p.vals[na[i]->id];
      break; /* one candidate a node: the first with its values */
    }
  }
  prover_close(&p);
  verdict = prove_modes(ctx, a, b, rlimit, true, merged, why, size);
  if (verdict == PROVE_MISMATCH || verdict == PROVE_DIFFERENT) verdict = PROVE_UNKNOWN; /* z3 found no point whole */
done:
  free(na), free(nb), free(merged), free(side), free(sig_a), free(has_a);
  return verdict;
}

ProveVerdict prove_same(Ctx *ctx, const UOp *a, const UOp *b, unsigned rlimit, ProveStats *stats, char *why,
                        size_t size) {
  say(why, size, "%s", "");
  ProveVerdict verdict = prove_modes(ctx, a, b, rlimit, true, NULL, why, size);
  if (verdict == PROVE_UNKNOWN) { /* in pieces */
    char first[256];
    snprintf(first, sizeof first, "%s", why ? why : "");
    verdict = sweep(ctx, a, b, rlimit, why, size);
    if (verdict == PROVE_UNKNOWN) say(why, size, "%s", first);
  }
  if (stats) {
    if (verdict == PROVE_SAME) stats->same++;
    else if (verdict == PROVE_UNKNOWN) stats->unknown++;
    else if (verdict == PROVE_UNSUPPORTED) stats->unsupported++;
    else stats->differ++;
  }
  return verdict;
}

void prove_report(const char *test, const ProveStats *stats) {
  printf("%s: %lu expressions proved equal by z3 (%lu unknown, %lu outside the encoding, %lu differ)\n",
         test, stats->same, stats->unknown, stats->unsupported, stats->differ);
}
