/* alu.c — one-lane semantics of the ALU ops (see alu.h for the word form).
 *
 * In: an op, the result and operand scalars, operand words. Out: the result
 * word. Ints wrap (two's complement); IDIV/MOD truncate toward zero, x/0 is
 * all ones and x%0 is x, MIN/-1 wraps; shift counts are taken modulo the
 * width; floats are IEEE with round-to-nearest-even; MAX propagates NaN;
 * float→int casts saturate (NaN → 0). docs/semantics.md has the table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"

static const uint64_t CANONICAL_NAN = 0x7ff8000000000000ull;

static uint64_t dbits(double v) {
  uint64_t w;
  if (isnan(v)) return CANONICAL_NAN;
  memcpy(&w, &v, sizeof w);
  return w;
}

static double bitsd(uint64_t w) {
  double v;
  memcpy(&v, &w, sizeof v);
  return v;
}

/* Rounds x to a binary format with `mant` fraction bits and exponents in
 * [emin, emax], ties to even; overflow gives ±inf, underflow subnormals. */
static double round_to_format(double x, int mant, int emin, int emax) {
  if (x == 0 || !isfinite(x)) return x;
  int e = ilogb(x);
  if (e < emin) e = emin;
  double quantum = ldexp(1.0, e - mant);
  double r = nearbyint(x / quantum) * quantum;
  double max_finite = ldexp(2.0 - ldexp(1.0, -mant), emax);
  if (fabs(r) > max_finite) return copysign(INFINITY, x);
  return r;
}

static double round_to_scalar(uj_scalar s, double v) {
  switch (s) {
  case UJ_FLOAT16: return round_to_format(v, 10, -14, 15);
  case UJ_BFLOAT16: return round_to_format(v, 7, -126, 127);
  case UJ_FLOAT32: return (double)(float)v;
  default: return v;
  }
}

static uint64_t wrap_int(uj_scalar s, uint64_t raw) {
  unsigned bits = scalar_table[s].bits;
  if (s == UJ_BOOL) return raw != 0;
  if (bits >= 64) return raw;
  uint64_t mask = (1ull << bits) - 1;
  raw &= mask;
  if (scalar_table[s].is_signed && (raw >> (bits - 1)) & 1) raw |= ~mask;
  return raw;
}

uint64_t word_normalize(uj_scalar s, uint64_t raw) {
  if (scalar_table[s].is_float) return dbits(round_to_scalar(s, bitsd(raw)));
  return wrap_int(s, raw);
}

uint64_t word_from_double(uj_scalar s, double v) {
  return dbits(round_to_scalar(s, v));
}

uint64_t word_from_int(uj_scalar s, int64_t v) { return wrap_int(s, (uint64_t)v); }

/* The shortest decimal that reads back (strtod, then rounding to s) to w:
 * "0.1" for a float32 0.1, not its double "0.10000000149011612". Whole
 * numbers below 1e16 keep all their digits ("65504.0", not "6.55e+04"). */
void word_format_float(uj_scalar s, uint64_t w, char *buf, size_t size) {
  double v = bitsd(w);
  if (!isfinite(v)) {
    snprintf(buf, size, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(buf, size, "%.*g", prec, v);
    if (word_from_double(s, strtod(buf, NULL)) == w) break;
  }
  int exp10 = v == 0 ? 0 : (int)floor(log10(fabs(v)));
  if (exp10 >= prec && exp10 < 16) prec = exp10 + 1; /* more digits still read back */
  int n = snprintf(buf, size, "%.*g", prec, v);
  if (!strpbrk(buf, ".e") && n >= 0 && (size_t)n + 2 < size) strcat(buf, ".0");
}

/* ---- bit patterns, for BITCAST and memory (eval.c) ---- */

/* The IEEE bits of a value exactly representable in a small format. */
static uint64_t small_float_bits(double v, int mant, int ebits) {
  uint64_t sign = signbit(v) ? 1ull << (mant + ebits) : 0;
  int bias = (1 << (ebits - 1)) - 1;
  uint64_t exp_all = (uint64_t)((1 << ebits) - 1);
  if (isnan(v)) return (exp_all << mant) | (1ull << (mant - 1));
  if (isinf(v)) return sign | (exp_all << mant);
  double a = fabs(v);
  if (a == 0) return sign;
  int e = ilogb(a);
  if (e < 1 - bias) /* subnormal */
    return sign | (uint64_t)ldexp(a, bias - 1 + mant);
  uint64_t frac = (uint64_t)(ldexp(a, mant - e) - ldexp(1.0, mant));
  return sign | ((uint64_t)(e + bias) << mant) | frac;
}

static double small_float_value(uint64_t bits, int mant, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint64_t exp_all = (uint64_t)((1 << ebits) - 1);
  uint64_t e = (bits >> mant) & exp_all, frac = bits & ((1ull << mant) - 1);
  double sign = (bits >> (mant + ebits)) & 1 ? -1.0 : 1.0;
  if (e == exp_all) return frac ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp((double)frac, 1 - bias - mant);
  return sign * ldexp((double)(frac | (1ull << mant)), (int)e - bias - mant);
}

uint64_t word_to_mem_bits(uj_scalar s, uint64_t w) {
  double v = bitsd(w);
  switch (s) {
  case UJ_FLOAT16: return small_float_bits(v, 10, 5);
  case UJ_BFLOAT16: return small_float_bits(v, 7, 8);
  case UJ_FLOAT32: {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return isnan(v) ? 0x7fc00000u : b;
  }
  case UJ_FLOAT64: return w;
  default: {
    unsigned bits = scalar_table[s].bits;
    return bits >= 64 ? w : w & ((1ull << bits) - 1);
  }
  }
}

uint64_t word_from_mem_bits(uj_scalar s, uint64_t bits) {
  switch (s) {
  case UJ_FLOAT16: return dbits(small_float_value(bits, 10, 5));
  case UJ_BFLOAT16: return dbits(small_float_value(bits, 7, 8));
  case UJ_FLOAT32: {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof f);
    return dbits((double)f);
  }
  case UJ_FLOAT64: return dbits(bitsd(bits));
  default: return wrap_int(s, bits);
  }
}

/* ---- casts ---- */

static uint64_t cast_float_to_int(uj_scalar out, double v) {
  if (out == UJ_BOOL) return v != 0;
  if (isnan(v)) return 0;
  unsigned bits = scalar_table[out].bits;
  if (scalar_table[out].is_signed) {
    double lo = -ldexp(1.0, (int)bits - 1), hi = ldexp(1.0, (int)bits - 1);
    if (v <= lo) return wrap_int(out, (uint64_t)(bits >= 64 ? INT64_MIN : (int64_t)lo));
    if (v >= hi) return wrap_int(out, (uint64_t)(bits >= 64 ? INT64_MAX : (int64_t)hi - 1));
    return wrap_int(out, (uint64_t)(int64_t)trunc(v));
  }
  double hi = ldexp(1.0, (int)bits);
  if (v <= 0) return 0;
  if (v >= hi) return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
  return (uint64_t)trunc(v);
}

static uint64_t cast_word(uj_scalar out, uj_scalar in, uint64_t w) {
  bool in_float = scalar_table[in].is_float, out_float = scalar_table[out].is_float;
  if (in_float && out_float) return word_from_double(out, bitsd(w));
  if (in_float) return cast_float_to_int(out, bitsd(w));
  if (out_float) {
    if (in == UJ_UINT64) return word_from_double(out, out == UJ_FLOAT32 ? (double)(float)w : (double)w);
    int64_t i = (int64_t)w;
    return word_from_double(out, out == UJ_FLOAT32 ? (double)(float)i : (double)i);
  }
  if (out == UJ_BOOL) return w != 0;
  return wrap_int(out, w);
}

/* ---- integer ops ---- */

static uint64_t int_idiv(uj_scalar s, uint64_t a, uint64_t b) {
  if (b == 0) return wrap_int(s, UINT64_MAX);
  if (!scalar_table[s].is_signed) return a / b;
  int64_t x = (int64_t)a, y = (int64_t)b;
  if (y == -1) return wrap_int(s, 0 - a); /* MIN / -1 wraps to MIN */
  return (uint64_t)(x / y);
}

static uint64_t int_mod(uj_scalar s, uint64_t a, uint64_t b) {
  if (b == 0) return a;
  if (!scalar_table[s].is_signed) return a % b;
  int64_t x = (int64_t)a, y = (int64_t)b;
  if (y == -1) return 0;
  return (uint64_t)(x % y);
}

static uint64_t int_shift(Op op, uj_scalar s, uint64_t a, uint64_t b) {
  unsigned bits = scalar_table[s].bits;
  unsigned n = (unsigned)(b % bits);
  if (op == UJ_OP_SHL) return wrap_int(s, a << n);
  if (scalar_table[s].is_signed) return (uint64_t)((int64_t)a >> n);
  return a >> n;
}

static bool int_less(uj_scalar s, uint64_t a, uint64_t b) {
  return scalar_table[s].is_signed ? (int64_t)a < (int64_t)b : a < b;
}

static uint64_t int_binary(Op op, uj_scalar s, uint64_t a, uint64_t b) {
  switch (op) {
  case UJ_OP_ADD: return wrap_int(s, a + b);
  case UJ_OP_SUB: return wrap_int(s, a - b);
  case UJ_OP_MUL: return wrap_int(s, a * b);
  case UJ_OP_IDIV: return int_idiv(s, a, b);
  case UJ_OP_MOD: return int_mod(s, a, b);
  case UJ_OP_MAX: return int_less(s, a, b) ? b : a;
  case UJ_OP_CMPLT: return int_less(s, a, b);
  case UJ_OP_CMPNE: return a != b;
  case UJ_OP_CMPEQ: return a == b;
  case UJ_OP_AND: return a & b;
  case UJ_OP_OR: return a | b;
  case UJ_OP_XOR: return wrap_int(s, a ^ b);
  case UJ_OP_SHL: case UJ_OP_SHR: return int_shift(op, s, a, b);
  default: return 0;
  }
}

/* ---- float ops ---- */

static double float_max(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == 0 && b == 0) return signbit(a) ? b : a; /* +0 > -0 */
  return a < b ? b : a;
}

static uint64_t float_binary(Op op, uj_scalar s, double a, double b) {
  switch (op) {
  case UJ_OP_ADD: return word_from_double(s, a + b);
  case UJ_OP_SUB: return word_from_double(s, a - b);
  case UJ_OP_MUL: return word_from_double(s, a * b);
  case UJ_OP_FDIV: return word_from_double(s, a / b);
  case UJ_OP_MAX: return word_from_double(s, float_max(a, b));
  case UJ_OP_CMPLT: return a < b;
  case UJ_OP_CMPNE: return !(a == b);
  case UJ_OP_CMPEQ: return a == b;
  default: return 0;
  }
}

static uint64_t float_unary(Op op, uj_scalar s, double a) {
  bool f32 = s != UJ_FLOAT64; /* float32 and narrower compute in float32 */
  switch (op) {
  case UJ_OP_RECIP: return word_from_double(s, 1.0 / a);
  case UJ_OP_NEG: return word_from_double(s, -a);
  case UJ_OP_SQRT: return word_from_double(s, sqrt(a));
  case UJ_OP_EXP2: return word_from_double(s, f32 ? (double)exp2f((float)a) : exp2(a));
  case UJ_OP_LOG2: return word_from_double(s, f32 ? (double)log2f((float)a) : log2(a));
  case UJ_OP_SIN: return word_from_double(s, f32 ? (double)sinf((float)a) : sin(a));
  default: return 0;
  }
}

static uint64_t float_mulacc(uj_scalar s, double a, double b, double c) {
  if (s == UJ_FLOAT64) return dbits(fma(a, b, c));
  if (s == UJ_FLOAT32) return dbits((double)fmaf((float)a, (float)b, (float)c));
  return word_from_double(s, fma(a, b, c));
}

uint64_t alu_eval(Op op, uj_scalar out, uj_scalar in, const uint64_t *x) {
  bool is_float = scalar_table[in].is_float;
  switch (op) {
  case UJ_OP_CAST: return cast_word(out, in, x[0]);
  case UJ_OP_BITCAST: return word_from_mem_bits(out, word_to_mem_bits(in, x[0]));
  case UJ_OP_WHERE: return x[0] ? x[1] : x[2];
  case UJ_OP_MULACC:
    if (is_float) return float_mulacc(in, bitsd(x[0]), bitsd(x[1]), bitsd(x[2]));
    return wrap_int(in, x[0] * x[1] + x[2]);
  case UJ_OP_NEG:
    if (!is_float) return wrap_int(in, 0 - x[0]);
    return float_unary(op, in, bitsd(x[0]));
  default: break;
  }
  if (op_has(op, OPF_UNARY)) return float_unary(op, in, bitsd(x[0]));
  if (in == UJ_BOOL) { /* bool binary ops act on 0/1 */
    if (op == UJ_OP_MAX) return x[0] | x[1];
    if (op == UJ_OP_CMPLT) return !x[0] && x[1];
    return int_binary(op, UJ_UINT8, x[0], x[1]) & 1;
  }
  if (is_float) return float_binary(op, in, bitsd(x[0]), bitsd(x[1]));
  return int_binary(op, in, x[0], x[1]);
}

uint64_t alu_identity(Op op, uj_scalar s) {
  const ScalarInfo *info = &scalar_table[s];
  if (op == UJ_OP_MUL) return info->is_float ? word_from_double(s, 1.0) : 1;
  if (op == UJ_OP_ADD || op == UJ_OP_MULACC) return info->is_float ? word_from_double(s, -0.0) : 0;
  if (info->is_float) return word_from_double(s, -__builtin_inf());
  if (!info->is_signed) return 0; /* and bool false */
  return word_from_int(s, info->bits == 64 ? INT64_MIN : -(int64_t)(1ull << (info->bits - 1)));
}

const UOp *reduce_fused_product(const UOp *reduce) {
  const UOp *x = reduce->op == UJ_OP_REDUCE && strcmp(reduce->name, "MULACC") == 0 ? reduce->src[0] : NULL;
  return x && x->op == UJ_OP_MUL ? x : NULL;
}

uint64_t alu_reduce_step(Op op, uj_scalar s, uint64_t acc, uint64_t v, const uint64_t *ab) {
  if (op == UJ_OP_MULACC && ab) return alu_eval(UJ_OP_MULACC, s, s, (const uint64_t[]){ab[0], ab[1], acc});
  return alu_eval(op == UJ_OP_MULACC ? UJ_OP_ADD : op, s, s, (const uint64_t[]){acc, v, 0});
}

static size_t scalar_bytes(uj_scalar s) { return s == UJ_BOOL ? 1 : scalar_table[s].bits / 8; }

size_t elem_bytes(DType d) { return scalar_bytes((uj_scalar)d.scalar) * d.lanes; }

void mem_read(const unsigned char *p, DType d, uint64_t *out) {
  size_t n = scalar_bytes((uj_scalar)d.scalar);
  for (unsigned lane = 0; lane < d.lanes; lane++, p += n) {
    uint64_t bits = 0;
    for (size_t i = n; i-- > 0;) bits = bits << 8 | p[i]; /* little endian */
    out[lane] = word_from_mem_bits((uj_scalar)d.scalar, bits);
  }
}

void mem_write(unsigned char *p, DType d, const uint64_t *words) {
  size_t n = scalar_bytes((uj_scalar)d.scalar);
  for (unsigned lane = 0; lane < d.lanes; lane++, p += n) {
    uint64_t bits = word_to_mem_bits((uj_scalar)d.scalar, words[lane]);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(bits >> (8 * i));
  }
}
