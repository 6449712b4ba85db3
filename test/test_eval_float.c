/* test_eval_float.c — the reference evaluator on floats: every float ALU op
 * on float16, bfloat16, float32 and float64 with hand-computed results and
 * the edge values of docs/semantics.md: NaN (one canonical NaN), ±inf,
 * -0.0, subnormals, round-to-nearest-even of float16/bfloat16 (ties, overflow
 * to inf), fused MULACC, MAX with NaN and ±0, compares with NaN, saturating
 * float→int CASTs (NaN → 0), int→float rounding, and BITCASTs. */
#include <stdint.h>

#include "eval_util.h"

#define NAN_WORD 0x7ff8000000000000ull

/* The word of an exactly representable expected value (or NaN). */
static uint64_t want_word(double v) { return word_from_double(UJ_FLOAT64, v); }

typedef struct FloatCase {
  Op op;
  uj_scalar s;
  double a, b, c, want; /* operands exact in s, except where noted */
} FloatCase;

#define F16  UJ_FLOAT16
#define BF16 UJ_BFLOAT16
#define F32  UJ_FLOAT32
#define F64  UJ_FLOAT64

static const FloatCase float_cases[] = {
    /* float32 arithmetic */
    {UJ_OP_ADD, F32, 1.5, 2.25, 0, 3.75},
    {UJ_OP_ADD, F32, 0x1.99999ap-4, 0x1.99999ap-3, 0, 0x1.333334p-2}, /* 0.1f + 0.2f */
    {UJ_OP_ADD, F32, INFINITY, -INFINITY, 0, NAN},
    {UJ_OP_ADD, F32, -0.0, 0.0, 0, 0.0},
    {UJ_OP_ADD, F32, -0.0, -0.0, 0, -0.0},
    {UJ_OP_SUB, F32, INFINITY, INFINITY, 0, NAN},
    {UJ_OP_SUB, F32, 0.0, 0.0, 0, 0.0},
    {UJ_OP_MUL, F32, 0x1p100, 0x1p100, 0, INFINITY},
    {UJ_OP_MUL, F32, 0.0, INFINITY, 0, NAN},
    {UJ_OP_MUL, F32, -0.0, 5.0, 0, -0.0},
    {UJ_OP_MUL, F32, 0x1p-149, 0.75, 0, 0x1p-149}, /* subnormal rounding */
    {UJ_OP_MUL, F32, 0x1p-149, 1.5, 0, 0x1p-148},  /* tie to even */
    {UJ_OP_MUL, F32, 0x1p-149, 0.5, 0, 0.0},       /* tie to even: 0 */
    {UJ_OP_FDIV, F32, 1.0, 0.0, 0, INFINITY},
    {UJ_OP_FDIV, F32, -1.0, 0.0, 0, -INFINITY},
    {UJ_OP_FDIV, F32, 1.0, -0.0, 0, -INFINITY},
    {UJ_OP_FDIV, F32, 0.0, 0.0, 0, NAN},
    {UJ_OP_FDIV, F32, 1.0, 3.0, 0, 0x1.555556p-2},
    {UJ_OP_FDIV, F32, 0x1p-126, 4.0, 0, 0x1p-128},
    {UJ_OP_RECIP, F32, 0.0, 0, 0, INFINITY},
    {UJ_OP_RECIP, F32, -0.0, 0, 0, -INFINITY},
    {UJ_OP_RECIP, F32, 4.0, 0, 0, 0.25},
    {UJ_OP_RECIP, F32, -INFINITY, 0, 0, -0.0},
    {UJ_OP_SQRT, F32, -1.0, 0, 0, NAN},
    {UJ_OP_SQRT, F32, 4.0, 0, 0, 2.0},
    {UJ_OP_SQRT, F32, -0.0, 0, 0, -0.0},
    {UJ_OP_SQRT, F32, INFINITY, 0, 0, INFINITY},
    {UJ_OP_SQRT, F32, 2.0, 0, 0, 0x1.6a09e6p+0},
    {UJ_OP_LOG2, F32, 0.0, 0, 0, -INFINITY},
    {UJ_OP_LOG2, F32, -0.0, 0, 0, -INFINITY},
    {UJ_OP_LOG2, F32, -1.0, 0, 0, NAN},
    {UJ_OP_LOG2, F32, 8.0, 0, 0, 3.0},
    {UJ_OP_LOG2, F32, INFINITY, 0, 0, INFINITY},
    {UJ_OP_EXP2, F32, 3.0, 0, 0, 8.0},
    {UJ_OP_EXP2, F32, -INFINITY, 0, 0, 0.0},
    {UJ_OP_EXP2, F32, INFINITY, 0, 0, INFINITY},
    {UJ_OP_EXP2, F32, 128.0, 0, 0, INFINITY},
    {UJ_OP_EXP2, F32, -149.0, 0, 0, 0x1p-149},
    {UJ_OP_SIN, F32, 0.0, 0, 0, 0.0},
    {UJ_OP_SIN, F32, -0.0, 0, 0, -0.0},
    {UJ_OP_SIN, F32, INFINITY, 0, 0, NAN},
    {UJ_OP_SIN, F32, NAN, 0, 0, NAN},
    {UJ_OP_NEG, F32, 0.0, 0, 0, -0.0},
    {UJ_OP_NEG, F32, NAN, 0, 0, NAN},
    {UJ_OP_NEG, F32, -INFINITY, 0, 0, INFINITY},
    /* MAX: NaN wins, +0 > -0 */
    {UJ_OP_MAX, F32, NAN, 1.0, 0, NAN},
    {UJ_OP_MAX, F32, 1.0, NAN, 0, NAN},
    {UJ_OP_MAX, F32, INFINITY, NAN, 0, NAN},
    {UJ_OP_MAX, F32, -0.0, 0.0, 0, 0.0},
    {UJ_OP_MAX, F32, 0.0, -0.0, 0, 0.0},
    {UJ_OP_MAX, F32, -0.0, -0.0, 0, -0.0},
    {UJ_OP_MAX, F32, -INFINITY, 3.0, 0, 3.0},
    /* compares (result bool: 0/1) */
    {UJ_OP_CMPLT, F32, NAN, 1.0, 0, 0},
    {UJ_OP_CMPLT, F32, 1.0, NAN, 0, 0},
    {UJ_OP_CMPLT, F32, -0.0, 0.0, 0, 0},
    {UJ_OP_CMPLT, F32, -INFINITY, INFINITY, 0, 1},
    {UJ_OP_CMPLT, F32, 1.0, 2.0, 0, 1},
    {UJ_OP_CMPNE, F32, NAN, NAN, 0, 1},
    {UJ_OP_CMPNE, F32, 1.0, 1.0, 0, 0},
    {UJ_OP_CMPNE, F32, -0.0, 0.0, 0, 0},
    {UJ_OP_CMPEQ, F32, NAN, NAN, 0, 0},
    {UJ_OP_CMPEQ, F32, -0.0, 0.0, 0, 1},
    {UJ_OP_CMPEQ, F32, INFINITY, INFINITY, 0, 1},
    {UJ_OP_CMPLT, F16, 1.0, 0x1.004p0, 0, 1},
    /* MULACC is fused: one rounding of a*b+c (unfused would give 0) */
    {UJ_OP_MULACC, F32, 1 + 0x1p-23, 1 + 0x1p-23, -(1 + 0x1p-22), 0x1p-46},
    {UJ_OP_MULACC, F64, 1 + 0x1p-52, 1 + 0x1p-52, -(1 + 0x1p-51), 0x1p-104},
    {UJ_OP_MULACC, F16, 1 + 0x1p-10, 1 + 0x1p-10, -(1 + 0x1p-9), 0x1p-20},
    {UJ_OP_MULACC, BF16, 1 + 0x1p-7, 1 + 0x1p-7, -(1 + 0x1p-6), 0x1p-14},
    {UJ_OP_MULACC, F32, 2.0, 3.0, 1.0, 7.0},
    {UJ_OP_MULACC, F32, INFINITY, 0.0, 1.0, NAN},
    /* float64 */
    {UJ_OP_ADD, F64, 0.1, 0.2, 0, 0x1.3333333333334p-2},
    {UJ_OP_FDIV, F64, 1.0, 3.0, 0, 0x1.5555555555555p-2},
    {UJ_OP_MUL, F64, 0x1p1000, 0x1p100, 0, INFINITY},
    {UJ_OP_FDIV, F64, 0x1p-1074, 2.0, 0, 0.0},
    {UJ_OP_FDIV, F64, 0x1p-1074, -2.0, 0, -0.0},
    {UJ_OP_SQRT, F64, 2.0, 0, 0, 0x1.6a09e667f3bcdp+0},
    {UJ_OP_EXP2, F64, 1024.0, 0, 0, INFINITY},
    {UJ_OP_EXP2, F64, -1074.0, 0, 0, 0x1p-1074},
    {UJ_OP_LOG2, F64, 0x1p-1074, 0, 0, -1074.0},
    {UJ_OP_MAX, F64, NAN, -INFINITY, 0, NAN},
    {UJ_OP_RECIP, F64, 0x1p-1030, 0, 0, INFINITY},
    /* float16: 11-bit significand, max 65504, subnormals down to 2^-24 */
    {UJ_OP_ADD, F16, 1024.0, 0.5, 0, 1024.0},     /* tie: to even */
    {UJ_OP_ADD, F16, 1025.0, 0.5, 0, 1026.0},     /* tie: to even */
    {UJ_OP_ADD, F16, 65504.0, 16.0, 0, INFINITY}, /* 65520 rounds up: overflow */
    {UJ_OP_ADD, F16, 65504.0, 15.0, 0, 65504.0},
    {UJ_OP_MUL, F16, 0x1p-14, 0.5, 0, 0x1p-15},
    {UJ_OP_MUL, F16, 0x1p-24, 0.5, 0, 0.0},
    {UJ_OP_MUL, F16, 0x1p-24, 1.5, 0, 0x1p-23},
    {UJ_OP_MUL, F16, -0x1p-24, 0.25, 0, -0.0},
    {UJ_OP_FDIV, F16, 1.0, 3.0, 0, 0x1.554p-2},
    {UJ_OP_SQRT, F16, 2.0, 0, 0, 0x1.6ap0},
    {UJ_OP_EXP2, F16, 0.5, 0, 0, 0x1.6ap0},
    {UJ_OP_EXP2, F16, 16.0, 0, 0, INFINITY},
    {UJ_OP_RECIP, F16, 0x1p-24, 0, 0, INFINITY},
    {UJ_OP_MAX, F16, -0.0, 0.0, 0, 0.0},
    {UJ_OP_SUB, F16, 1.0, 0x1p-11, 0, 0x1.ffcp-1}, /* exact in float16 */
    /* bfloat16: 8-bit significand, float32's exponent range */
    {UJ_OP_ADD, BF16, 256.0, 1.0, 0, 256.0}, /* 257: tie to even */
    {UJ_OP_ADD, BF16, 258.0, 1.0, 0, 260.0}, /* 259: tie to even */
    {UJ_OP_MUL, BF16, 0x1p127, 2.0, 0, INFINITY},
    {UJ_OP_MUL, BF16, 0x1p-133, 0.5, 0, 0.0},
    {UJ_OP_FDIV, BF16, 1.0, 3.0, 0, 0x1.56p-2},
    {UJ_OP_SQRT, BF16, 2.0, 0, 0, 0x1.6ap0},
    {UJ_OP_NEG, BF16, 0.0, 0, 0, -0.0},
};

static void test_float_ops(Ctx *ctx) {
  for (size_t i = 0; i < sizeof float_cases / sizeof *float_cases; i++) {
    const FloatCase *f = &float_cases[i];
    const UOp *a = k_float(ctx, f->s, f->a), *b = k_float(ctx, f->s, f->b);
    const UOp *c = k_float(ctx, f->s, f->c);
    const UOp *e = op_has(f->op, OPF_UNARY) ? alu(ctx, f->op, a, NULL, NULL)
                   : f->op == UJ_OP_MULACC  ? alu(ctx, f->op, a, b, c)
                                            : alu(ctx, f->op, a, b, NULL);
    uint64_t got = eval_word(ctx, e);
    uint64_t want = op_has(f->op, OPF_COMPARE) ? (uint64_t)f->want : want_word(f->want);
    CHECK(got == want, "case %zu: %s %s(%a, %a, %a) = %a (%llx), want %a", i,
          scalar_table[f->s].name, op_table[f->op].name, f->a, f->b, f->c, w2d(got),
          (unsigned long long)got, f->want);
  }
}

typedef struct CastCase {
  uj_scalar from, to;
  double in;   /* exact in `from` (for int sources: an integer) */
  double want; /* for int results: the integer value, 2^63 for INT64_MAX */
} CastCase;

static const CastCase casts[] = {
    /* float → int: truncation toward zero, saturation, NaN → 0 */
    {F32, UJ_INT32, 3.7, 3},
    {F32, UJ_INT32, -3.7, -3},
    {F32, UJ_INT32, 1e10, INT32_MAX},
    {F32, UJ_INT32, -1e10, INT32_MIN},
    {F32, UJ_INT32, NAN, 0},
    {F32, UJ_INT32, INFINITY, INT32_MAX},
    {F32, UJ_INT32, -INFINITY, INT32_MIN},
    {F32, UJ_INT32, -0.0, 0},
    {F32, UJ_INT32, 2147483520.0, 2147483520.0},
    {F32, UJ_INT32, 2147483648.0, INT32_MAX},
    {F32, UJ_UINT8, -1.5, 0},
    {F32, UJ_UINT8, 300.5, 255},
    {F32, UJ_UINT8, 255.9, 255},
    {F32, UJ_UINT8, -0.99, 0},
    {F32, UJ_UINT8, NAN, 0},
    {F32, UJ_UINT8, -INFINITY, 0},
    {F32, UJ_INT8, 127.9, 127},
    {F32, UJ_INT8, -128.9, -128},
    {F32, UJ_INT8, 200, 127},
    {F32, UJ_INT8, -129, -128},
    {F64, UJ_INT64, 9.3e18, 0x1p63},
    {F64, UJ_INT64, -9.3e18, INT64_MIN},
    {F64, UJ_INT64, 0x1p63, 0x1p63},
    {F64, UJ_INT64, -0x1p63, INT64_MIN},
    {F64, UJ_INT64, 0x1p63 - 1024, 0x1p63 - 1024},
    {F16, UJ_INT16, 65504, 32767},
    {F16, UJ_INT16, -65504, -32768},
    {F16, UJ_INT32, INFINITY, INT32_MAX},
    {BF16, UJ_INT32, -0x1p100, INT32_MIN},
    /* float → bool: x != 0 (so NaN → true) */
    {F32, UJ_BOOL, 0.5, 1},
    {F32, UJ_BOOL, 0.0, 0},
    {F32, UJ_BOOL, -0.0, 0},
    {F32, UJ_BOOL, NAN, 1},
    {F64, UJ_BOOL, INFINITY, 1},
    /* int → float: round to nearest even */
    {UJ_INT32, F32, 16777217, 16777216},
    {UJ_INT32, F32, 16777219, 16777220},
    {UJ_INT64, F64, -0x1p63, -0x1p63},
    {UJ_INT32, F16, -1, -1.0},
    {UJ_INT32, F16, 65519, 65504},
    {UJ_INT32, F16, 65520, INFINITY},
    {UJ_INT32, F16, -65520, -INFINITY},
    {UJ_INT32, F16, 2049, 2048},
    {UJ_INT32, F16, 2051, 2052},
    {UJ_INT64, F16, 1e15, INFINITY},
    {UJ_UINT8, F16, 255, 255},
    {UJ_INT32, BF16, 257, 256},
    {UJ_INT32, BF16, 259, 260},
    {UJ_BOOL, F32, 1, 1.0},
    {UJ_BOOL, F16, 0, 0.0},
    /* float → float */
    {F64, F32, 0.1, 0x1.99999ap-4},
    {F64, F32, 1e39, INFINITY},
    {F64, F32, -1e39, -INFINITY},
    {F64, F32, 0x1p-150, 0.0},
    {F64, F32, 0x1.000001p-150, 0x1p-149},
    {F64, F32, NAN, NAN},
    {F32, F16, 65504, 65504},
    {F32, F16, 65519.99, 65504},
    {F32, F16, 65520, INFINITY},
    {F32, F16, 0x1p-24, 0x1p-24},
    {F32, F16, 0x1p-25, 0.0},
    {F32, F16, 0x1.8p-25, 0x1p-24},
    {F32, F16, 0x1.8p-24, 0x1p-23},
    {F32, F16, 1 + 0x1p-11, 1.0},
    {F32, F16, 1 + 0x1.8p-10, 1 + 0x1p-9},
    {F32, F16, 0x1p-14, 0x1p-14},
    {F32, F16, NAN, NAN},
    {F32, F16, -0.0, -0.0},
    {F32, F16, 1e-8, 0.0},
    {F32, F16, -1e-8, -0.0},
    {F32, BF16, 1 + 0x1p-8, 1.0},
    {F32, BF16, 1 + 0x1.8p-7, 1 + 0x1p-6},
    {F32, BF16, 0x1.fffffep127, INFINITY},
    {F32, BF16, 0x1.fe8p127, 0x1.fep127},
    {F32, BF16, 0x1.ffp127, INFINITY},
    {F32, BF16, 0x1p-133, 0x1p-133},
    {F32, BF16, 0x1p-134, 0.0},
    {F64, BF16, 1e300, INFINITY},
    {F16, F32, 65504, 65504},
    {F16, F64, 0x1p-24, 0x1p-24},
    {BF16, F16, 0x1p20, INFINITY},
    {BF16, F16, 0x1p-20, 0x1p-20},
};

static void test_casts(Ctx *ctx) {
  for (size_t i = 0; i < sizeof casts / sizeof *casts; i++) {
    const CastCase *c = &casts[i];
    bool in_float = scalar_table[c->from].is_float, out_float = scalar_table[c->to].is_float;
    const UOp *x = in_float ? k_float(ctx, c->from, c->in) : k_int(ctx, c->from, (int64_t)c->in);
    const UOp *e = mk(ctx, UJ_OP_CAST, dt_scalar(c->to), x, NULL, NULL);
    uint64_t got = eval_word(ctx, e);
    int64_t want_int = c->want >= 0x1p63 ? INT64_MAX : out_float ? 0 : (int64_t)c->want;
    uint64_t want = out_float ? want_word(c->want) : word_from_int(c->to, want_int);
    CHECK(got == want, "case %zu: CAST %s %a to %s = %llx, want %llx", i,
          scalar_table[c->from].name, c->in, scalar_table[c->to].name, (unsigned long long)got,
          (unsigned long long)want);
  }
}

/* Casts whose operands do not fit a table of doubles: 64-bit extremes. */
static void test_casts_64(Ctx *ctx) {
  const UOp *i = k_int(ctx, UJ_INT64, INT64_MAX);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(F32), i, NULL, NULL)) == want_word(0x1p63),
        "int64 max to float32 is 2^63");
  i = k_int(ctx, UJ_INT64, 9007199254740993); /* 2^53+1: a tie, to even */
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(F64), i, NULL, NULL)) == want_word(0x1p53),
        "2^53+1 to float64");
  i = k_int(ctx, UJ_INT64, 9007199254740995); /* 2^53+3: a tie, to even */
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(F64), i, NULL, NULL)) == want_word(0x1p53 + 4),
        "2^53+3 to float64");
  const UOp *max = k_word(ctx, UJ_UINT64, UINT64_MAX);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(F64), max, NULL, NULL)) == want_word(0x1p64),
        "uint64 max to float64 is 2^64");
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(F32), max, NULL, NULL)) == want_word(0x1p64),
        "uint64 max to float32 is 2^64");
  const UOp *f = k_float(ctx, F64, 1e20);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), f, NULL, NULL)) == UINT64_MAX,
        "1e20 to uint64 saturates");
  f = k_float(ctx, F64, 1e19);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), f, NULL, NULL)) ==
            10000000000000000000ull,
        "1e19 to uint64");
  f = k_float(ctx, F64, 0x1p64 - 2048);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), f, NULL, NULL)) ==
            UINT64_MAX - 2047,
        "2^64-2048 to uint64");
  f = k_float(ctx, F64, NAN);
  CHECK(eval_word(ctx, mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), f, NULL, NULL)) == 0,
        "NaN to uint64 is 0");
}

typedef struct BitcastCase {
  uj_scalar from, to;
  uint64_t in, want; /* bit patterns (float values given as their word) */
} BitcastCase;

static void test_bitcasts(Ctx *ctx) {
  const BitcastCase cases[] = {
      {F32, UJ_INT32, d2w(1.0), 0x3f800000},
      {UJ_INT32, F32, 0x3f800000, d2w(1.0)},
      {F32, UJ_INT32, d2w(-0.0), word_from_int(UJ_INT32, INT32_MIN)},
      {UJ_INT32, F32, 0x7f800000, d2w(INFINITY)},
      {UJ_INT32, F32, 0x7fc00001, NAN_WORD},
      {UJ_UINT32, F32, 0xff800000, d2w(-INFINITY)},
      {F32, UJ_UINT32, NAN_WORD, 0x7fc00000},
      {UJ_INT32, F32, 1, d2w(0x1p-149)},
      {F16, UJ_INT16, d2w(1.0), 0x3c00},
      {UJ_INT16, F16, 0x7bff, d2w(65504.0)},
      {UJ_INT16, F16, 0x0001, d2w(0x1p-24)},
      {UJ_INT16, F16, word_from_int(UJ_INT16, -32768), d2w(-0.0)},
      {UJ_INT16, F16, 0x7c00, d2w(INFINITY)},
      {UJ_INT16, F16, 0x7e00, NAN_WORD},
      {UJ_UINT16, F16, 0xfc00, d2w(-INFINITY)},
      {F16, UJ_UINT16, NAN_WORD, 0x7e00},
      {F16, UJ_UINT16, d2w(-2.0), 0xc000},
      {BF16, UJ_UINT16, d2w(1.0), 0x3f80},
      {UJ_UINT16, BF16, 0x0001, d2w(0x1p-133)},
      {BF16, UJ_UINT16, NAN_WORD, 0x7fc0},
      {F16, BF16, d2w(1.0), d2w(0x1p-7)},
      {F64, UJ_INT64, d2w(1.0), 0x3ff0000000000000ull},
      {UJ_UINT64, F64, 0x8000000000000000ull, d2w(-0.0)},
      {UJ_INT64, F64, 0x7ff0000000000001ull, NAN_WORD},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const BitcastCase *c = &cases[i];
    const UOp *e =
        mk(ctx, UJ_OP_BITCAST, dt_scalar(c->to), k_word(ctx, c->from, c->in), NULL, NULL);
    uint64_t got = eval_word(ctx, e);
    CHECK(got == c->want, "case %zu: BITCAST %s %llx to %s = %llx, want %llx", i,
          scalar_table[c->from].name, (unsigned long long)c->in, scalar_table[c->to].name,
          (unsigned long long)got, (unsigned long long)c->want);
  }
}

/* Every NaN a float op makes is the one canonical NaN, in every format. */
static void test_canonical_nan(Ctx *ctx) {
  const uj_scalar fs[] = {F16, BF16, F32, F64};
  for (int i = 0; i < 4; i++) {
    const UOp *z = k_float(ctx, fs[i], 0.0), *m = k_float(ctx, fs[i], -1.0);
    CHECK(eval_word(ctx, alu(ctx, UJ_OP_FDIV, z, z, NULL)) == NAN_WORD, "%s 0/0",
          scalar_table[fs[i]].name);
    CHECK(eval_word(ctx, alu(ctx, UJ_OP_SQRT, m, NULL, NULL)) == NAN_WORD, "%s sqrt(-1)",
          scalar_table[fs[i]].name);
    CHECK(eval_word(ctx, alu(ctx, UJ_OP_LOG2, m, NULL, NULL)) == NAN_WORD, "%s log2(-1)",
          scalar_table[fs[i]].name);
    const UOp *n = alu(ctx, UJ_OP_NEG, alu(ctx, UJ_OP_FDIV, z, z, NULL), NULL, NULL);
    CHECK(eval_word(ctx, n) == NAN_WORD, "%s -NaN", scalar_table[fs[i]].name);
  }
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_float_ops(ctx);
  test_casts(ctx);
  test_casts_64(ctx);
  test_bitcasts(ctx);
  test_canonical_nan(ctx);
  uj_ctx_free(ctx);
  return check_report("test_eval_float");
}
