/* test_tensor_ops.c — the tensor ops of tensor.h against values computed
 * here (hand-written ones and naive C loops in double) and against the
 * reference evaluator (tensor_util.h): creation (from_data, full, arange,
 * rand/randn, every dtype through to_host and through a kernel);
 * elementwise (every binop and unop, broadcasting, promotion, casts,
 * where, pow's special cases); reductions over every axis subset,
 * argmax/argmin with ties, softmax and log_softmax; cat, stack, gather.
 * Views are test_tensor_movement.c's; matmul, conv2d and pooling
 * test_tensor_nn.c's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

/* ---- creation ---- */

static void test_constants(uj_session *s) {
  float v[6] = {1, -2, 3.5f, 0, -0.0f, 1e30f};
  expect(s, tf32(s, SHAPE(2, 3), v), SHAPE(2, 3), VALS(1, -2, 3.5, 0, -0.0, (double)1e30f), EXACT,
         "from_data");
  for (uj_scalar d = UJ_BOOL; d < UJ_SCALAR_COUNT; d++) {
    DType t = dt_scalar(d);
    double val = dt_is_bool(t) ? 1 : dt_is_float(t) || dt_is_signed(t) ? -3 : 3;
    double w6[6] = {val, val, val, val, val, val}, z6[6] = {0}, o6[6] = {1, 1, 1, 1, 1, 1};
    expect(s, uj_tensor_full(s, d, SHAPE(2, 3), val), SHAPE(2, 3), w6, EXACT, "full");
    expect(s, uj_tensor_zeros(s, d, SHAPE(3, 2)), SHAPE(3, 2), z6, EXACT, "zeros");
    expect(s, uj_tensor_ones(s, d, SHAPE(6)), SHAPE(6), o6, EXACT, "ones");
    expect_dtype(uj_tensor_ones(s, d, SHAPE(6)), d, "ones");
  }
  expect(s, uj_tensor_full(s, UJ_FLOAT16, SHAPE(2), 1.5), SHAPE(2), VALS(1.5, 1.5), EXACT,
         "full float16");
  expect(s, uj_tensor_full(s, UJ_FLOAT32, SHAPE(1), 0.1), SHAPE(1), VALS((double)0.1f), EXACT,
         "full 0.1 is rounded to float32");
  expect(s, uj_tensor_full(s, UJ_BOOL, SHAPE(2), 0.25), SHAPE(2), VALS(1, 1), EXACT,
         "full bool: nonzero is true");
  uj_tensor *scalar = uj_tensor_full(s, UJ_FLOAT32, NULL, 0, 2.5);
  CHECK(scalar && uj_tensor_numel(scalar) == 1, "a 0-d tensor has one element");
  expect(s, scalar, NULL, 0, VALS(2.5), EXACT, "0-d full");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_MUL, scalar, 2, false), NULL, 0, VALS(5), EXACT,
         "0-d times 2");
}

static void test_arange(uj_session *s) {
  expect(s, uj_tensor_arange(s, UJ_FLOAT32, 0, 5, 1), SHAPE(5), VALS(0, 1, 2, 3, 4), EXACT,
         "arange(0, 5)");
  expect(s, uj_tensor_arange(s, UJ_FLOAT32, 5, 0, -1.5), SHAPE(4), VALS(5, 3.5, 2, 0.5), EXACT,
         "arange(5, 0, -1.5)");
  expect(s, uj_tensor_arange(s, UJ_INT32, -3, 7, 2), SHAPE(5), VALS(-3, -1, 1, 3, 5), EXACT,
         "arange int32");
  expect(s, uj_tensor_arange(s, UJ_INT64, 10, 0, -3), SHAPE(4), VALS(10, 7, 4, 1), EXACT,
         "arange int64 step -3");
  expect(s, uj_tensor_arange(s, UJ_FLOAT64, 0, 0.95, 0.1), SHAPE(10),
         VALS(0, 0.1, 0.2, 0.1 * 3, 0.4, 0.5, 0.1 * 6, 0.1 * 7, 0.8, 0.9), EXACT,
         "arange float64 by 0.1");
  expect(s, uj_tensor_arange(s, UJ_UINT8, 250, 256, 2), SHAPE(3), VALS(250, 252, 254), EXACT,
         "arange uint8");
  uj_tensor *empty = uj_tensor_arange(s, UJ_FLOAT32, 3, 3, 1);
  CHECK(empty && uj_tensor_numel(empty) == 0, "arange(3, 3) is empty");
  uj_tensor *down_empty = uj_tensor_arange(s, UJ_INT32, 0, 5, -1);
  CHECK(down_empty && uj_tensor_numel(down_empty) == 0, "arange(0, 5, -1) is empty");
}

static void test_random(uj_session *s) {
  enum { N = 100000 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  int64_t sh[1] = {N};
  CHECK(uj_tensor_to_host(uj_tensor_rand(s, sh, 1, 7), a, N * sizeof *a) == UJ_OK, "rand: %s",
        uj_session_error(s));
  CHECK(uj_tensor_to_host(uj_tensor_rand(s, sh, 1, 7), b, N * sizeof *b) == UJ_OK, "rand again");
  CHECK(!memcmp(a, b, N * sizeof *a), "rand: the same seed gives the same values");
  CHECK(uj_tensor_to_host(uj_tensor_rand(s, sh, 1, 8), b, N * sizeof *b) == UJ_OK, "rand seed 8");
  int same = 0, outside = 0;
  double mean = 0;
  for (int i = 0; i < N; i++)
    same += a[i] == b[i], outside += !(a[i] >= 0 && a[i] < 1), mean += a[i];
  CHECK(same < N / 100, "rand: seeds 7 and 8 agree on %d of %d values", same, N);
  CHECK(outside == 0, "rand: %d values outside [0, 1)", outside);
  CHECK(fabs(mean / N - 0.5) < 0.01, "rand: mean %g", mean / N);
  float c[6], d[6];
  CHECK(uj_tensor_to_host(uj_tensor_rand(s, SHAPE(2, 3), 7), c, sizeof c) == UJ_OK, "rand (2, 3)");
  CHECK(!memcmp(a, c, sizeof c), "rand: element i depends on the seed and i only, not the shape");
  CHECK(uj_tensor_to_host(uj_tensor_randn(s, sh, 1, 3), a, N * sizeof *a) == UJ_OK, "randn: %s",
        uj_session_error(s));
  CHECK(uj_tensor_to_host(uj_tensor_randn(s, sh, 1, 3), b, N * sizeof *b) == UJ_OK, "randn again");
  CHECK(!memcmp(a, b, N * sizeof *a), "randn: the same seed gives the same values");
  CHECK(uj_tensor_to_host(uj_tensor_randn(s, SHAPE(6), 4), d, sizeof d) == UJ_OK, "randn seed 4");
  CHECK(memcmp(a, d, sizeof d) != 0, "randn: seeds 3 and 4 differ");
  double sum = 0, sq = 0;
  int finite = 0;
  for (int i = 0; i < N; i++) sum += a[i], sq += (double)a[i] * a[i], finite += isfinite(a[i]) != 0;
  double m = sum / N, sd = sqrt(sq / N - m * m);
  CHECK(finite == N, "randn: %d of %d finite", finite, N);
  CHECK(fabs(m) < 0.02 && fabs(sd - 1) < 0.02, "randn: mean %g, std %g", m, sd);
  free(a), free(b);
}

/* Each dtype from host memory and back, bit for bit, directly and through
 * a kernel (a flip, which copies). */
static void test_dtype_round_trip(uj_session *s) {
  static const int64_t ints[7] = {0, 1, -1, 127, -128, INT64_MAX, INT64_MIN};
  static const double floats[7] = {0, 1, -1, 0.1, -65504, 3e38, 1e-8};
  for (uj_scalar d = UJ_BOOL; d < UJ_SCALAR_COUNT; d++) {
    DType t = dt_scalar(d);
    size_t size = elem_bytes(t);
    unsigned char in[7 * 8], out[7 * 8], rev[7 * 8];
    for (int i = 0; i < 7; i++) {
      uint64_t w = dt_is_float(t) ? word_from_double(d, floats[i]) : word_from_int(d, ints[i]);
      mem_write(in + (size_t)i * size, t, &w);
    }
    char what[64];
    snprintf(what, sizeof what, "dtype %d round trip", (int)d);
    uj_tensor *x = uj_tensor_from_data(s, d, SHAPE(7), in);
    CHECK(uj_tensor_to_host(x, out, 7 * size) == UJ_OK, "%s: %s", what, uj_session_error(s));
    CHECK(!memcmp(in, out, 7 * size), "%s: bytes differ", what);
    uj_tensor *f = uj_tensor_flip(x, (const int[]){0}, 1);
    double *v = values(s, f, EXACT, what);
    free(v);
    CHECK(uj_tensor_to_host(f, rev, 7 * size) == UJ_OK, "%s: flip: %s", what, uj_session_error(s));
    bool same = true;
    for (int i = 0; i < 7; i++)
      same &= !memcmp(rev + (size_t)i * size, in + (size_t)(6 - i) * size, size);
    CHECK(same, "%s: through a kernel", what);
  }
}

/* ---- elementwise ---- */

static double neg_d(double x) { return -x; }
static double recip_d(double x) { return 1 / x; }
static double relu_d(double x) { return x > 0 ? x : 0; }
static double sigmoid_d(double x) { return 1 / (1 + exp(-x)); }
static double gelu_d(double x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

typedef struct UnCase {
  uj_unop op;
  double (*ref)(double);
  const double *in;
  Tol tol;
} UnCase;

static void test_unary(uj_session *s) {
  static const double general[8] = {-3.5, -1, -0.25, 0, 0.3, 1, 2.5, 7};
  static const double positive[8] = {0.001, 0.3, 1, 1.5, 2, 10, 1000, 1e-20};
  static const double trig[8] = {-10, -3, -1, 0, 0.5, 1.5, 3, 100};
  static const double expo[8] = {-20, -3.5, -1, 0, 0.3, 1, 10, 80};
  const UnCase cases[] = {
      {UJ_UN_NEG, neg_d, general, EXACT},
      {UJ_UN_EXP, exp, expo, ulps(4, 0)},
      {UJ_UN_LOG, log, positive, ulps(4, 0)},
      {UJ_UN_EXP2, exp2, expo, ulps(3, 0)},
      {UJ_UN_LOG2, log2, positive, ulps(3, 0)},
      {UJ_UN_SQRT, sqrt, positive, ulps(1, 0)},
      {UJ_UN_RECIP, recip_d, general, ulps(1, 0)},
      {UJ_UN_SIN, sin, trig, ulps(4, 1e-7)},
      {UJ_UN_COS, cos, trig, ulps(4, 1e-7)}, /* sin(pi/2 - x), computed in float64 */
      {UJ_UN_ABS, fabs, general, EXACT},
      {UJ_UN_RELU, relu_d, general, EXACT},
      {UJ_UN_GELU, gelu_d, general, ulps(8, 2e-7)},
      {UJ_UN_SIGMOID, sigmoid_d, expo, ulps(6, 0)},
      {UJ_UN_TANH, tanh, general, ulps(6, 2e-7)},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    float in[8];
    double want[8];
    for (int i = 0; i < 8; i++) in[i] = (float)cases[c].in[i], want[i] = cases[c].ref(in[i]);
    if (cases[c].op == UJ_UN_RECIP) want[3] = INFINITY; /* 1 / +0 */
    char what[64];
    snprintf(what, sizeof what, "unary %s", uj_unop_name(cases[c].op));
    uj_tensor *t = uj_tensor_unary(cases[c].op, tf32(s, SHAPE(8), in));
    expect_dtype(t, UJ_FLOAT32, what);
    expect(s, t, SHAPE(8), want, cases[c].tol, what);
  }
  /* ops that keep integers; the rest make float32 of them */
  const int32_t iv[6] = {-5, -1, 0, 3, 7, INT32_MIN + 1};
  uj_tensor *it = ti32(s, SHAPE(6), iv);
  expect(s, uj_tensor_unary(UJ_UN_NEG, it), SHAPE(6), VALS(5, 1, 0, -3, -7, INT32_MAX), EXACT,
         "neg int32");
  expect(s, uj_tensor_unary(UJ_UN_ABS, it), SHAPE(6), VALS(5, 1, 0, 3, 7, INT32_MAX), EXACT,
         "abs int32");
  expect(s, uj_tensor_unary(UJ_UN_RELU, it), SHAPE(6), VALS(0, 0, 0, 3, 7, 0), EXACT, "relu int32");
  expect(s, uj_tensor_unary(UJ_UN_NOT, it), SHAPE(6), VALS(4, 0, -1, -4, -8, INT32_MAX - 1), EXACT,
         "not int32 (bitwise)");
  expect_dtype(uj_tensor_unary(UJ_UN_NEG, it), UJ_INT32, "neg int32");
  uj_tensor *sq = uj_tensor_unary(UJ_UN_SQRT, uj_tensor_unary(UJ_UN_ABS, it));
  expect_dtype(sq, UJ_FLOAT32, "sqrt of int32");
  expect(s, sq, SHAPE(6), VALS(sqrt(5), 1, 0, sqrt(3), sqrt(7), (double)sqrtf(2147483648.f)),
         ulps(1, 0), "sqrt of int32");
  const bool bv[4] = {false, true, true, false};
  uj_tensor *bt = tbool(s, SHAPE(4), bv);
  expect(s, uj_tensor_unary(UJ_UN_NOT, bt), SHAPE(4), VALS(1, 0, 0, 1), EXACT, "not bool");
  expect_dtype(uj_tensor_unary(UJ_UN_NOT, bt), UJ_BOOL, "not bool");
  expect(s, uj_tensor_unary(UJ_UN_NEG, bt), SHAPE(4), VALS(1, 0, 0, 1), EXACT, "neg bool is not");
  expect(s, uj_tensor_unary(UJ_UN_EXP, bt), SHAPE(4), VALS(1, exp(1.0), exp(1.0), 1), ulps(4, 0),
         "exp of bool");
  const float special[4] = {INFINITY, -INFINITY, NAN, -0.0f};
  uj_tensor *sp = tf32(s, SHAPE(4), special);
  expect(s, uj_tensor_unary(UJ_UN_SQRT, sp), SHAPE(4), VALS(INFINITY, NAN, NAN, -0.0), EXACT,
         "sqrt of inf, -inf, nan, -0");
  expect(s, uj_tensor_unary(UJ_UN_EXP, sp), SHAPE(4), VALS(INFINITY, 0, NAN, 1), ulps(1, 0),
         "exp of inf, -inf, nan, -0");
  expect(s, uj_tensor_unary(UJ_UN_LOG, tf32(s, SHAPE(3), (const float[]){0, -1, INFINITY})),
         SHAPE(3), VALS(-INFINITY, NAN, INFINITY), ulps(1, 0), "log of 0, -1, inf");
  CHECK(!strcmp(uj_unop_name(UJ_UN_GELU), "gelu") && !strcmp(uj_binop_name(UJ_BIN_POW), "pow"),
        "op names");
}

/* a op b in float32 (or double for pow, rounded) as C computes it. */
static double float_op(uj_binop op, float a, float b) {
  switch (op) {
  case UJ_BIN_ADD: return (float)(a + b);
  case UJ_BIN_SUB: return (float)(a - b);
  case UJ_BIN_MUL: return (float)(a * b);
  case UJ_BIN_DIV: return (float)(a / b);
  case UJ_BIN_POW: return (float)pow(a, b);
  case UJ_BIN_MAXIMUM: return a > b ? a : b;
  case UJ_BIN_MINIMUM: return a < b ? a : b;
  case UJ_BIN_LT: return a < b;
  case UJ_BIN_LE: return a <= b;
  case UJ_BIN_GT: return a > b;
  case UJ_BIN_GE: return a >= b;
  case UJ_BIN_EQ: return a == b;
  case UJ_BIN_NE: return a != b;
  default: return NAN;
  }
}

static double int_op(uj_binop op, int32_t a, int32_t b) {
  switch (op) {
  case UJ_BIN_ADD: return a + b;
  case UJ_BIN_SUB: return a - b;
  case UJ_BIN_MUL: return a * b;
  case UJ_BIN_AND: return a & b;
  case UJ_BIN_OR: return a | b;
  case UJ_BIN_XOR: return a ^ b;
  default: return float_op(op, (float)a, (float)b);
  }
}

static void test_binary(uj_session *s) {
  const float fa[8] = {-3.5f, -1, -0.25f, 0, 0.3f, 1, 2.5f, 7},
              fb[8] = {2, -0.5f, 3, 1.5f, -0.3f, 1, 2.5f, 0.1f};
  const int32_t ia[8] = {-7, -1, 0, 3, 5, 100, -100, 2}, ib[8] = {2, 3, -4, 3, 1, 7, 9, -2};
  uj_tensor *a = tf32(s, SHAPE(8), fa), *b = tf32(s, SHAPE(8), fb), *x = ti32(s, SHAPE(8), ia),
            *y = ti32(s, SHAPE(8), ib);
  for (uj_binop op = 0; op < UJ_BIN_COUNT; op++) {
    char what[64];
    double want[8];
    bool compare = op >= UJ_BIN_LT && op <= UJ_BIN_NE;
    if (op < UJ_BIN_AND) { /* float32 */
      float pa[8];
      for (int i = 0; i < 8; i++) pa[i] = op == UJ_BIN_POW ? fabsf(fa[i]) + 0.5f : fa[i];
      for (int i = 0; i < 8; i++) want[i] = float_op(op, pa[i], fb[i]);
      snprintf(what, sizeof what, "%s float32", uj_binop_name(op));
      uj_tensor *t = uj_tensor_binary(op, op == UJ_BIN_POW ? tf32(s, SHAPE(8), pa) : a, b);
      expect_dtype(t, compare ? UJ_BOOL : UJ_FLOAT32, what);
      expect(s, t, SHAPE(8), want, op == UJ_BIN_POW ? ulps(8, 0) : EXACT, what);
    }
    for (int i = 0; i < 8; i++) want[i] = int_op(op, ia[i], ib[i]);
    if (op == UJ_BIN_POW) want[2] = INFINITY; /* 0 ** -4 */
    snprintf(what, sizeof what, "%s int32", uj_binop_name(op));
    uj_tensor *t = uj_tensor_binary(op, x, y);
    expect_dtype(t,
                 compare                                ? UJ_BOOL
                 : op == UJ_BIN_DIV || op == UJ_BIN_POW ? UJ_FLOAT32
                                                        : UJ_INT32,
                 what);
    expect(s, t, SHAPE(8), want, op == UJ_BIN_POW ? (Tol){1e-5, 0, false} : EXACT, what);
  }
  /* bools: logic ops stay bool, arithmetic counts in int32 */
  const bool p[4] = {false, false, true, true}, q[4] = {false, true, false, true};
  uj_tensor *bp = tbool(s, SHAPE(4), p), *bq = tbool(s, SHAPE(4), q);
  expect(s, uj_tensor_binary(UJ_BIN_AND, bp, bq), SHAPE(4), VALS(0, 0, 0, 1), EXACT, "and bool");
  expect(s, uj_tensor_binary(UJ_BIN_OR, bp, bq), SHAPE(4), VALS(0, 1, 1, 1), EXACT, "or bool");
  expect(s, uj_tensor_binary(UJ_BIN_XOR, bp, bq), SHAPE(4), VALS(0, 1, 1, 0), EXACT, "xor bool");
  expect_dtype(uj_tensor_binary(UJ_BIN_XOR, bp, bq), UJ_BOOL, "xor bool");
  uj_tensor *badd = uj_tensor_binary(UJ_BIN_ADD, bp, bq);
  expect_dtype(badd, UJ_INT32, "bool + bool is int32");
  expect(s, badd, SHAPE(4), VALS(0, 1, 1, 2), EXACT, "bool + bool counts");
  expect(s, uj_tensor_binary(UJ_BIN_SUB, bp, bq), SHAPE(4), VALS(0, -1, 1, 0), EXACT,
         "bool - bool");
  expect(s, uj_tensor_binary(UJ_BIN_MAXIMUM, bp, bq), SHAPE(4), VALS(0, 1, 1, 1), EXACT,
         "maximum bool");
  expect(s, uj_tensor_binary(UJ_BIN_MINIMUM, bp, bq), SHAPE(4), VALS(0, 0, 0, 1), EXACT,
         "minimum bool");
  expect(s, uj_tensor_binary(UJ_BIN_LT, bp, bq), SHAPE(4), VALS(0, 1, 0, 0), EXACT, "lt bool");
  expect(s, uj_tensor_binary(UJ_BIN_EQ, bp, bq), SHAPE(4), VALS(1, 0, 0, 1), EXACT, "eq bool");
  /* NaN compares false, except ne */
  const float nan2[2] = {NAN, 1};
  uj_tensor *n2 = tf32(s, SHAPE(2), nan2);
  expect(s, uj_tensor_binary(UJ_BIN_EQ, n2, n2), SHAPE(2), VALS(0, 1), EXACT, "nan == nan");
  expect(s, uj_tensor_binary(UJ_BIN_NE, n2, n2), SHAPE(2), VALS(1, 0), EXACT, "nan != nan");
  expect(s, uj_tensor_binary(UJ_BIN_LE, n2, n2), SHAPE(2), VALS(0, 1), EXACT, "nan <= nan");
  expect(s, uj_tensor_binary(UJ_BIN_GE, n2, n2), SHAPE(2), VALS(0, 1), EXACT, "nan >= nan");
}

static void test_broadcast_and_promotion(uj_session *s) {
  uj_tensor *col = tf32(s, SHAPE(3, 1), (const float[]){1, 2, 3}),
            *row = tf32(s, SHAPE(1, 4), (const float[]){10, 20, 30, 40});
  expect(s, uj_tensor_binary(UJ_BIN_ADD, col, row), SHAPE(3, 4),
         VALS(11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43), EXACT, "(3,1)+(1,4)");
  expect(s, uj_tensor_binary(UJ_BIN_SUB, row, col), SHAPE(3, 4),
         VALS(9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37), EXACT, "(1,4)-(3,1)");
  float cube[24];
  double want[24];
  for (int i = 0; i < 24; i++) cube[i] = (float)i;
  uj_tensor *v4 = tf32(s, SHAPE(4), (const float[]){100, 200, 300, 400});
  for (int i = 0; i < 24; i++) want[i] = i + 100 * (i % 4 + 1);
  expect(s, uj_tensor_binary(UJ_BIN_ADD, v4, tf32(s, SHAPE(2, 3, 4), cube)), SHAPE(2, 3, 4), want,
         EXACT, "(4,)+(2,3,4)");
  for (int i = 0; i < 24; i++) want[i] = (double)(float)((float)i * (float)(1 + i / 4 % 3));
  expect(s,
         uj_tensor_binary(UJ_BIN_MUL, tf32(s, SHAPE(2, 3, 4), cube),
                          tf32(s, SHAPE(3, 1), (const float[]){1, 2, 3})),
         SHAPE(2, 3, 4), want, EXACT, "(2,3,4)*(3,1)");
  /* scalars, left and right */
  uj_tensor *a = tf32(s, SHAPE(4), (const float[]){-2, 0.5f, 1, 4});
  expect(s, uj_tensor_binary_scalar(UJ_BIN_SUB, a, 10, true), SHAPE(4), VALS(12, 9.5, 9, 6), EXACT,
         "10 - a");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_SUB, a, 10, false), SHAPE(4), VALS(-12, -9.5, -9, -6),
         EXACT, "a - 10");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_DIV, a, 1, true), SHAPE(4), VALS(-0.5, 2, 1, 0.25),
         EXACT, "1 / a");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_DIV, a, 4, false), SHAPE(4), VALS(-0.5, 0.125, 0.25, 1),
         EXACT, "a / 4");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_LT, a, 0.75, true), SHAPE(4), VALS(0, 0, 1, 1), EXACT,
         "0.75 < a");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_POW, a, 2, true), SHAPE(4), VALS(0.25, sqrt(2), 2, 16),
         ulps(4, 0), "2 ** a");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_MAXIMUM, a, 0.75, false), SHAPE(4),
         VALS(0.75, 0.75, 1, 4), EXACT, "maximum(a, 0.75)");
  /* promotion */
  uj_tensor *i32 = ti32(s, SHAPE(3), (const int32_t[]){1, -2, 7}),
            *f32 = tf32(s, SHAPE(3), (const float[]){0.5f, 0.25f, 2});
  uj_tensor *sum = uj_tensor_binary(UJ_BIN_ADD, i32, f32);
  expect_dtype(sum, UJ_FLOAT32, "int32 + float32");
  expect(s, sum, SHAPE(3), VALS(1.5, -1.75, 9), EXACT, "int32 + float32");
  uj_tensor *q = uj_tensor_binary(UJ_BIN_DIV, i32, ti32(s, SHAPE(3), (const int32_t[]){2, 3, -2}));
  expect_dtype(q, UJ_FLOAT32, "int32 / int32");
  expect(s, q, SHAPE(3), VALS(0.5, (double)(-2.0f / 3.0f), -3.5), EXACT,
         "int32 / int32 is true division");
  expect_dtype(uj_tensor_binary(UJ_BIN_LT, i32, f32), UJ_BOOL, "comparisons give bool");
  uj_tensor *i8 = uj_tensor_from_data(s, UJ_INT8, SHAPE(2), (const int8_t[]){-100, 100});
  uj_tensor *u8 = uj_tensor_from_data(s, UJ_UINT8, SHAPE(2), (const uint8_t[]){200, 100});
  uj_tensor *mixed = uj_tensor_binary(UJ_BIN_ADD, i8, u8);
  expect_dtype(mixed, UJ_INT16, "int8 + uint8");
  expect(s, mixed, SHAPE(2), VALS(100, 200), EXACT, "int8 + uint8 without overflow");
  uj_tensor *f64 = uj_tensor_from_data(s, UJ_FLOAT64, SHAPE(1), (const double[]){0.1});
  uj_tensor *wide = uj_tensor_binary(UJ_BIN_ADD, f64, tf32(s, SHAPE(1), (const float[]){0.1f}));
  expect_dtype(wide, UJ_FLOAT64, "float64 + float32");
  expect(s, wide, SHAPE(1), VALS(0.1 + (double)0.1f), EXACT, "float64 + float32 in float64");
  uj_tensor *ifrac = uj_tensor_binary_scalar(UJ_BIN_ADD, i32, 2.5, false);
  expect_dtype(ifrac, UJ_FLOAT32, "int32 + 2.5");
  expect(s, ifrac, SHAPE(3), VALS(3.5, 0.5, 9.5), EXACT, "int32 + 2.5");
  uj_tensor *iint = uj_tensor_binary_scalar(UJ_BIN_MUL, i32, 3, false);
  expect_dtype(iint, UJ_INT32, "int32 * 3 stays int32");
  expect(s, iint, SHAPE(3), VALS(3, -6, 21), EXACT, "int32 * 3");
  uj_tensor *bplus = uj_tensor_binary_scalar(
      UJ_BIN_ADD, tbool(s, SHAPE(2), (const bool[]){true, false}), 2, false);
  expect_dtype(bplus, UJ_INT32, "bool + 2");
  expect(s, bplus, SHAPE(2), VALS(3, 2), EXACT, "bool + 2");
  uj_tensor *i64 = uj_tensor_from_data(s, UJ_INT64, SHAPE(1), (const int64_t[]){(int64_t)1 << 40});
  expect(s, uj_tensor_binary(UJ_BIN_ADD, i64, i32), SHAPE(3),
         VALS(0x1p40 + 1, 0x1p40 - 2, 0x1p40 + 7), EXACT, "int64 + int32");
}

static void test_cast_where_pow(uj_session *s) {
  uj_tensor *f = tf32(s, SHAPE(6), (const float[]){0, -0.0f, 0.5f, -2, NAN, 2.7f});
  uj_tensor *fb = uj_tensor_cast(f, UJ_BOOL);
  expect_dtype(fb, UJ_BOOL, "cast to bool");
  expect(s, fb, SHAPE(6), VALS(0, 0, 1, 1, 1, 1), EXACT, "cast float32 to bool: nonzero is true");
  uj_tensor *ib = uj_tensor_cast(ti32(s, SHAPE(4), (const int32_t[]){0, 5, -1, 256}), UJ_BOOL);
  expect(s, ib, SHAPE(4), VALS(0, 1, 1, 1), EXACT, "cast int32 to bool");
  uj_tensor *u8b =
      uj_tensor_cast(uj_tensor_from_data(s, UJ_INT32, SHAPE(1), (const int32_t[]){256}), UJ_UINT8);
  expect(s, uj_tensor_cast(u8b, UJ_BOOL), SHAPE(1), VALS(0), EXACT, "256 as uint8 is 0, false");
  uj_tensor *fi =
      uj_tensor_cast(tf32(s, SHAPE(4), (const float[]){2.7f, -2.7f, 0.5f, -0.5f}), UJ_INT32);
  expect(s, fi, SHAPE(4), VALS(2, -2, 0, 0), EXACT, "cast float32 to int32 truncates");
  expect(s, uj_tensor_cast(tbool(s, SHAPE(2), (const bool[]){true, false}), UJ_FLOAT32), SHAPE(2),
         VALS(1, 0), EXACT, "bool to float");
  expect(s, uj_tensor_cast(ti32(s, SHAPE(2), (const int32_t[]){16777217, -3}), UJ_FLOAT32),
         SHAPE(2), VALS(16777216, -3), EXACT, "int32 to float32 rounds to nearest even");
  expect(s, uj_tensor_cast(tf32(s, SHAPE(2), (const float[]){65520, 1.0009765625f}), UJ_FLOAT16),
         SHAPE(2), VALS(INFINITY, 1.0009765625), EXACT, "float32 to float16");
  expect(s, uj_tensor_cast(uj_tensor_cast(f, UJ_FLOAT64), UJ_FLOAT32), SHAPE(6),
         VALS(0, -0.0, 0.5, -2, NAN, (double)2.7f), EXACT, "float32 to float64 and back");
  /* where: cond (3,1), a (1,4) float32, b (4,) int32 promote to float32 */
  uj_tensor *cond = tbool(s, SHAPE(3, 1), (const bool[]){true, false, true});
  uj_tensor *wa = tf32(s, SHAPE(1, 4), (const float[]){1.5f, 2.5f, 3.5f, 4.5f}),
            *wb = ti32(s, SHAPE(4), (const int32_t[]){-1, -2, -3, -4});
  uj_tensor *w = uj_tensor_where(cond, wa, wb);
  expect_dtype(w, UJ_FLOAT32, "where promotes");
  expect(s, w, SHAPE(3, 4), VALS(1.5, 2.5, 3.5, 4.5, -1, -2, -3, -4, 1.5, 2.5, 3.5, 4.5), EXACT,
         "where with broadcasting");
  uj_tensor *icond = ti32(s, SHAPE(4), (const int32_t[]){0, 3, -1, 0});
  expect(s, uj_tensor_where(icond, wb, uj_tensor_full(s, UJ_INT32, SHAPE(2, 1), 9)), SHAPE(2, 4),
         VALS(9, -2, -3, 9, 9, -2, -3, 9), EXACT,
         "where with an int32 condition (nonzero is true)");
  /* pow: signs, zeros, non-integer exponents of negative bases */
  const float base[9] = {-2, -2, -2, 0, 0, 2, -8, 4, 0},
              ex[9] = {3, 2, 0.5f, 0, 2, -1, 1, 0.5f, -1};
  expect(s, uj_tensor_binary(UJ_BIN_POW, tf32(s, SHAPE(9), base), tf32(s, SHAPE(9), ex)), SHAPE(9),
         VALS(-8, 4, NAN, 1, 0, 0.5, -8, 2, INFINITY), ulps(4, 0), "pow special cases");
  uj_tensor *pb = tf32(s, SHAPE(4), (const float[]){-2, 0, 1.5f, -0.5f});
  expect(s, uj_tensor_binary_scalar(UJ_BIN_POW, pb, 3, false), SHAPE(4), VALS(-8, 0, 3.375, -0.125),
         EXACT, "a ** 3");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_POW, pb, 0, false), SHAPE(4), VALS(1, 1, 1, 1), EXACT,
         "a ** 0 (0 ** 0 is 1)");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_POW, pb, -2, false), SHAPE(4),
         VALS(0.25, INFINITY, 1 / 2.25, 4), ulps(1, 0), "a ** -2");
  expect(s, uj_tensor_binary_scalar(UJ_BIN_POW, pb, 0.5, false), SHAPE(4),
         VALS(NAN, 0, sqrt(1.5), NAN), ulps(4, 0), "a ** 0.5");
  uj_tensor *ip =
      uj_tensor_binary_scalar(UJ_BIN_POW, ti32(s, SHAPE(3), (const int32_t[]){-3, 0, 5}), 2, false);
  expect_dtype(ip, UJ_INT32, "int32 ** 2");
  expect(s, ip, SHAPE(3), VALS(9, 0, 25), EXACT, "int32 ** 2");
  expect(s,
         uj_tensor_binary_scalar(UJ_BIN_POW, ti32(s, SHAPE(2), (const int32_t[]){0, 2}), 0, true),
         SHAPE(2), VALS(1, 0), EXACT, "0 ** x for integer x: 0 ** 0 is 1");
}

/* ---- reductions ---- */

typedef double (*Fold)(double acc, double x);
static double fold_add(double a, double x) { return a + x; }
static double fold_max(double a, double x) { return x > a ? x : a; }
static double fold_min(double a, double x) { return x < a ? x : a; }

/* The naive reduction of v (shape) over the axes in mask; out has the
 * kept shape (reduced axes 1). */
static void naive_reduce(const double *v, const int64_t *shape, unsigned nd, unsigned mask, Fold f,
                         double init, double *out, int64_t *count) {
  int64_t oshape[UJ_MAX_DIMS], idx[UJ_MAX_DIMS];
  for (unsigned k = 0; k < nd; k++) oshape[k] = mask >> k & 1 ? 1 : shape[k];
  int64_t on = shape_numel(oshape, nd), n = shape_numel(shape, nd);
  for (int64_t o = 0; o < on; o++) out[o] = init;
  *count = n / (on ? on : 1);
  for (int64_t i = 0; i < n; i++) {
    unravel(i, shape, nd, idx);
    for (unsigned k = 0; k < nd; k++)
      if (mask >> k & 1) idx[k] = 0;
    int64_t o = ravel(idx, oshape, nd);
    out[o] = f(out[o], v[i]);
  }
}

/* The output shape of a reduce over mask, keepdim or not. */
static unsigned reduced_shape(const int64_t *shape, unsigned nd, unsigned mask, bool keepdim,
                              int64_t *out) {
  unsigned n = 0;
  for (unsigned k = 0; k < nd; k++)
    if (!(mask >> k & 1)) out[n++] = shape[k];
    else if (keepdim) out[n++] = 1;
  return n;
}

static void test_reduce_subsets(uj_session *s, Rng *r, const int64_t *shape, unsigned nd) {
  static const char *const names[] = {"sum", "max", "min", "mean"};
  double *v, out[64];
  uj_tensor *t = random_f32(s, r, shape, nd, -8, 8, true, &v);
  for (unsigned mask = 0; mask < (1u << nd); mask++)
    for (int keep = 0; keep < 2; keep++)
      for (uj_reduceop op = UJ_RED_SUM; op <= UJ_RED_MEAN; op++) {
        int axes[UJ_MAX_DIMS];
        unsigned n = 0;
        for (unsigned k = 0; k < nd; k++)
          if (mask >> k & 1) axes[n++] = rng_int(r, 2) ? (int)k : (int)k - (int)nd;
        unsigned m = mask ? mask : (1u << nd) - 1; /* n == 0: every axis */
        Fold f = op == UJ_RED_MAX ? fold_max : op == UJ_RED_MIN ? fold_min : fold_add;
        int64_t count, oshape[UJ_MAX_DIMS];
        naive_reduce(v, shape, nd, m, f,
                     op == UJ_RED_MAX   ? -INFINITY
                     : op == UJ_RED_MIN ? INFINITY
                                        : 0,
                     out, &count);
        if (op == UJ_RED_MEAN)
          for (int64_t i = 0; i < shape_numel(shape, nd) / count; i++)
            out[i] = (double)((float)out[i] * (float)(1.0 / (double)count));
        unsigned ond = reduced_shape(shape, nd, m, keep, oshape);
        char what[128];
        snprintf(what, sizeof what, "%s over mask %u of %s keepdim %d", names[op], mask,
                 shape_str(shape, nd, (char[64]){0}, 64), keep);
        expect(s, uj_tensor_reduce(op, t, axes, n, keep), oshape, ond, out,
               op == UJ_RED_MEAN ? (Tol){1e-6, 0, false} : EXACT, what);
      }
  free(v);
  /* integers and bools */
  int32_t iv[6] = {3, -7, 2, 9, 0, -1};
  uj_tensor *it = ti32(s, SHAPE(2, 3), iv);
  expect(s, uj_tensor_reduce(UJ_RED_SUM, it, (const int[]){1}, 1, false), SHAPE(2), VALS(-2, 8),
         EXACT, "sum int32");
  expect_dtype(uj_tensor_reduce(UJ_RED_SUM, it, NULL, 0, false), UJ_INT32, "sum int32 stays int32");
  expect(s, uj_tensor_reduce(UJ_RED_MIN, it, (const int[]){0}, 1, true), SHAPE(1, 3),
         VALS(3, -7, -1), EXACT, "min int32");
  expect(s, uj_tensor_reduce(UJ_RED_MAX, it, NULL, 0, false), NULL, 0, VALS(9), EXACT,
         "max int32 of all");
  expect(s, uj_tensor_reduce(UJ_RED_MEAN, it, NULL, 0, false), NULL, 0, VALS(1), EXACT,
         "mean int32 is float");
  uj_tensor *bt = tbool(s, SHAPE(2, 3), (const bool[]){true, false, true, true, true, false});
  expect(s, uj_tensor_reduce(UJ_RED_SUM, bt, (const int[]){1}, 1, false), SHAPE(2), VALS(2, 2),
         EXACT, "sum of bools counts");
  expect(s, uj_tensor_reduce(UJ_RED_MAX, bt, (const int[]){0}, 1, false), SHAPE(3), VALS(1, 1, 1),
         EXACT, "max of bools is any");
  expect(s, uj_tensor_reduce(UJ_RED_MIN, bt, (const int[]){0}, 1, false), SHAPE(3), VALS(1, 0, 0),
         EXACT, "min of bools is all");
  uj_tensor *u8 = uj_tensor_from_data(s, UJ_UINT8, SHAPE(3), (const uint8_t[]){200, 3, 255});
  expect(s, uj_tensor_reduce(UJ_RED_MIN, u8, NULL, 0, false), NULL, 0, VALS(3), EXACT, "min uint8");
  expect(s, uj_tensor_reduce(UJ_RED_MAX, u8, NULL, 0, false), NULL, 0, VALS(255), EXACT,
         "max uint8");
}

/* argmax/argmin along axis (or flat for axis < 0): the first index on ties. */
static void naive_argmax(const double *v, const int64_t *shape, unsigned nd, int axis, bool min,
                         double *out) {
  int64_t n = shape_numel(shape, nd), idx[UJ_MAX_DIMS], oshape[UJ_MAX_DIMS];
  if (axis < 0) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
      if (min ? v[i] < v[best] : v[i] > v[best]) best = i;
    out[0] = (double)best;
    return;
  }
  for (unsigned k = 0; k < nd; k++) oshape[k] = (int)k == axis ? 1 : shape[k];
  double *bestv = malloc((size_t)n * sizeof *bestv);
  for (int64_t i = 0; i < n; i++) {
    unravel(i, shape, nd, idx);
    int64_t at = idx[axis];
    idx[axis] = 0;
    int64_t o = ravel(idx, oshape, nd);
    if (at == 0 || (min ? v[i] < bestv[o] : v[i] > bestv[o])) bestv[o] = v[i], out[o] = (double)at;
  }
  free(bestv);
}

static void test_argmax(uj_session *s, Rng *r, const int64_t *shape, unsigned nd) {
  double *v, out[64];
  uj_tensor *t = random_f32(s, r, shape, nd, 0, 2, true, &v); /* many ties */
  for (int min = 0; min < 2; min++)
    for (int axis = -1; axis < (int)nd; axis++)
      for (int keep = 0; keep < 2; keep++) {
        int64_t oshape[UJ_MAX_DIMS];
        unsigned ond = axis < 0 ? reduced_shape(shape, nd, (1u << nd) - 1, keep, oshape)
                                : reduced_shape(shape, nd, 1u << axis, keep, oshape);
        naive_argmax(v, shape, nd, axis, min, out);
        char what[128];
        snprintf(what, sizeof what, "%s axis %d of %s keepdim %d", min ? "argmin" : "argmax", axis,
                 shape_str(shape, nd, (char[64]){0}, 64), keep);
        int ax = rng_int(r, 2) ? axis : axis - (int)nd;
        uj_tensor *a =
            uj_tensor_reduce(min ? UJ_RED_ARGMIN : UJ_RED_ARGMAX, t, &ax, axis < 0 ? 0 : 1, keep);
        expect_dtype(a, UJ_INT32, what);
        expect(s, a, oshape, ond, out, EXACT, what);
      }
  free(v);
}

/* Extremes and ties of signed ints, infinities. */
static void test_argmax_extremes(uj_session *s) {
  uj_tensor *it =
      ti32(s, SHAPE(5), (const int32_t[]){INT32_MIN, 4, INT32_MAX, INT32_MAX, INT32_MIN});
  expect(s, uj_tensor_reduce(UJ_RED_ARGMAX, it, NULL, 0, false), NULL, 0, VALS(2), EXACT,
         "argmax int32 extremes");
  expect(s, uj_tensor_reduce(UJ_RED_ARGMIN, it, NULL, 0, false), NULL, 0, VALS(0), EXACT,
         "argmin int32 extremes");
  expect(s, uj_tensor_reduce(UJ_RED_MIN, it, NULL, 0, false), NULL, 0, VALS(INT32_MIN), EXACT,
         "min int32 with INT32_MIN");
  uj_tensor *i8 = uj_tensor_from_data(s, UJ_INT8, SHAPE(3), (const int8_t[]){5, -128, 7});
  expect(s, uj_tensor_reduce(UJ_RED_MIN, i8, NULL, 0, false), NULL, 0, VALS(-128), EXACT,
         "min int8 with -128");
  expect(s, uj_tensor_reduce(UJ_RED_ARGMIN, i8, NULL, 0, false), NULL, 0, VALS(1), EXACT,
         "argmin int8 with -128");
  uj_tensor *ft = tf32(s, SHAPE(4), (const float[]){-INFINITY, -INFINITY, -1, -1});
  expect(s, uj_tensor_reduce(UJ_RED_ARGMIN, ft, NULL, 0, false), NULL, 0, VALS(0), EXACT,
         "argmin of -inf ties");
  expect(s, uj_tensor_reduce(UJ_RED_ARGMAX, ft, NULL, 0, false), NULL, 0, VALS(2), EXACT,
         "argmax ties");
}

static void test_softmax(uj_session *s, Rng *r) {
  const int64_t shape[3] = {2, 3, 4};
  double *v, out[24];
  uj_tensor *t = random_f32(s, r, shape, 3, -3, 3, false, &v);
  for (int log_sm = 0; log_sm < 2; log_sm++)
    for (int axis = -3; axis < 3; axis++) {
      int a = axis < 0 ? axis + 3 : axis;
      int64_t idx[3];
      for (int64_t i = 0; i < 24; i++) {
        unravel(i, shape, 3, idx);
        double m = -INFINITY, sum = 0;
        int64_t j[3] = {idx[0], idx[1], idx[2]};
        for (j[a] = 0; j[a] < shape[a]; j[a]++) m = fmax(m, v[ravel(j, shape, 3)]);
        for (j[a] = 0; j[a] < shape[a]; j[a]++) sum += exp(v[ravel(j, shape, 3)] - m);
        out[i] = log_sm ? v[i] - m - log(sum) : exp(v[i] - m) / sum;
      }
      char what[64];
      snprintf(what, sizeof what, "%s axis %d", log_sm ? "log_softmax" : "softmax", axis);
      expect(s, log_sm ? uj_tensor_log_softmax(t, axis) : uj_tensor_softmax(t, axis), shape, 3, out,
             (Tol){1e-5, 1e-7, false}, what);
    }
  free(v);
  uj_tensor *big = tf32(s, SHAPE(3), (const float[]){1000, 1000, -1000});
  expect(s, uj_tensor_softmax(big, 0), SHAPE(3), VALS(0.5, 0.5, 0), (Tol){1e-6, 0, false},
         "softmax of large values is stable");
  expect(s, uj_tensor_softmax(ti32(s, SHAPE(2), (const int32_t[]){0, 0}), 0), SHAPE(2),
         VALS(0.5, 0.5), ulps(1, 0), "softmax of int32");
}

/* ---- cat, stack, gather ---- */

static void test_cat_stack(uj_session *s, Rng *r) {
  const int64_t base[3] = {2, 3, 4};
  for (int axis = -3; axis < 3; axis++) {
    int ax = axis < 0 ? axis + 3 : axis;
    for (unsigned n = 2; n <= 3; n++) {
      uj_tensor *ts[3];
      double *vs[3], want[256];
      int64_t shapes[3][3], total = 0;
      for (unsigned i = 0; i < n; i++) {
        memcpy(shapes[i], base, sizeof base);
        shapes[i][ax] = 1 + rng_int(r, 3);
        total += shapes[i][ax];
        ts[i] = random_f32(s, r, shapes[i], 3, -9, 9, true, &vs[i]);
      }
      int64_t oshape[3] = {base[0], base[1], base[2]}, idx[3];
      oshape[ax] = total;
      for (int64_t e = 0; e < shape_numel(oshape, 3); e++) {
        unravel(e, oshape, 3, idx);
        unsigned i = 0;
        while (idx[ax] >= shapes[i][ax]) idx[ax] -= shapes[i][ax], i++;
        want[e] = vs[i][ravel(idx, shapes[i], 3)];
      }
      char what[64];
      snprintf(what, sizeof what, "cat of %u along %d", n, axis);
      expect(s, uj_tensor_cat(ts, n, axis), oshape, 3, want, EXACT, what);
      for (unsigned i = 0; i < n; i++) free(vs[i]);
    }
  }
  /* mixed dtypes promote; bools stay bool */
  uj_tensor *mix[3] = {ti32(s, SHAPE(2), (const int32_t[]){1, -2}),
                       tf32(s, SHAPE(1), (const float[]){0.5f}),
                       tbool(s, SHAPE(2), (const bool[]){true, false})};
  uj_tensor *mc = uj_tensor_cat(mix, 3, 0);
  expect_dtype(mc, UJ_FLOAT32, "cat int32, float32, bool");
  expect(s, mc, SHAPE(5), VALS(1, -2, 0.5, 1, 0), EXACT, "cat int32, float32, bool");
  uj_tensor *bb[2] = {mix[2], tbool(s, SHAPE(1), (const bool[]){true})};
  uj_tensor *bc = uj_tensor_cat(bb, 2, 0);
  expect_dtype(bc, UJ_BOOL, "cat bools");
  expect(s, bc, SHAPE(3), VALS(1, 0, 1), EXACT, "cat bools");
  uj_tensor *one[1] = {mix[0]};
  expect(s, uj_tensor_cat(one, 1, 0), SHAPE(2), VALS(1, -2), EXACT, "cat of one");
  /* stack along each axis of (2, 3) inputs */
  double *a, *b, *c;
  uj_tensor *st[3] = {random_f32(s, r, SHAPE(2, 3), -9, 9, true, &a),
                      random_f32(s, r, SHAPE(2, 3), -9, 9, true, &b),
                      random_f32(s, r, SHAPE(2, 3), -9, 9, true, &c)};
  const double *src[3] = {a, b, c};
  for (int axis = -3; axis < 3; axis++) {
    int ax = axis < 0 ? axis + 3 : axis;
    int64_t oshape[3], idx[3], in[2];
    for (int k = 0, j = 0; k < 3; k++) oshape[k] = k == ax ? 3 : base[j++];
    double want[18];
    for (int64_t e = 0; e < 18; e++) {
      unravel(e, oshape, 3, idx);
      for (int k = 0, j = 0; k < 3; k++)
        if (k != ax) in[j++] = idx[k];
      want[e] = src[idx[ax]][in[0] * 3 + in[1]];
    }
    char what[64];
    snprintf(what, sizeof what, "stack along %d", axis);
    expect(s, uj_tensor_stack(st, 3, axis), oshape, 3, want, EXACT, what);
  }
  free(a), free(b), free(c);
  uj_tensor *sc[2] = {uj_tensor_full(s, UJ_INT32, NULL, 0, 4),
                      uj_tensor_full(s, UJ_INT32, NULL, 0, 5)};
  expect(s, uj_tensor_stack(sc, 2, 0), SHAPE(2), VALS(4, 5), EXACT, "stack of 0-d tensors");
}

static void test_gather_shape(uj_session *s, Rng *r, const int64_t *shape, unsigned nd,
                              uj_scalar index_dtype) {
  double *v;
  uj_tensor *t = random_f32(s, r, shape, nd, -50, 50, true, &v);
  for (int axis = 0; axis < (int)nd; axis++) {
    int64_t ishape[UJ_MAX_DIMS], idx[UJ_MAX_DIMS];
    for (unsigned k = 0; k < nd; k++)
      ishape[k] = (int)k == axis ? 1 + rng_int(r, 5) : 1 + rng_int(r, (int)shape[k]);
    int64_t n = shape_numel(ishape, nd);
    int64_t *ix = malloc((size_t)n * sizeof *ix);
    int32_t *ix32 = malloc((size_t)n * sizeof *ix32);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t e = 0; e < n; e++) {
      ix[e] = rng_int(r, (int)shape[axis]), ix32[e] = (int32_t)ix[e];
      unravel(e, ishape, nd, idx);
      idx[axis] = ix[e];
      want[e] = v[ravel(idx, shape, nd)];
    }
    uj_tensor *it =
        uj_tensor_from_data(s, index_dtype, ishape, nd,
                            index_dtype == UJ_INT64 ? (const void *)ix : (const void *)ix32);
    char what[96];
    snprintf(what, sizeof what, "gather along %d of %s", axis,
             shape_str(shape, nd, (char[64]){0}, 64));
    int ax = rng_int(r, 2) ? axis : axis - (int)nd;
    expect(s, uj_tensor_gather(t, ax, it), ishape, nd, want, EXACT, what);
    free(ix), free(ix32), free(want);
  }
  free(v);
}

static void test_gather(uj_session *s, Rng *r) {
  test_gather_shape(s, r, SHAPE(3, 4), UJ_INT32);
  test_gather_shape(s, r, SHAPE(2, 3, 4), UJ_INT32);
  test_gather_shape(s, r, SHAPE(4, 2, 5), UJ_INT64);
  uj_tensor *bt = tbool(s, SHAPE(2, 2), (const bool[]){true, false, false, true});
  uj_tensor *gi = ti32(s, SHAPE(2, 3), (const int32_t[]){1, 1, 0, 0, 1, 1});
  uj_tensor *g = uj_tensor_gather(bt, 1, gi);
  expect_dtype(g, UJ_BOOL, "gather of bools");
  expect(s, g, SHAPE(2, 3), VALS(0, 0, 1, 0, 1, 1), EXACT, "gather of bools");
  /* each element picked bit for bit: -0.0 stays -0.0 (a sum of the hits and +0.0 made it +0.0) */
  uj_tensor *zf = uj_tensor_gather(tf32(s, SHAPE(2), (const float[]){-0.0f, NAN}), 0, ti32(s, SHAPE(3), (const int32_t[]){0, 1, 0}));
  float got[3] = {1, 1, 1};
  CHECK(zf && uj_tensor_to_host(zf, got, sizeof got) == UJ_OK && got[0] == 0 && signbit(got[0]) && isnan(got[1]) && signbit(got[2]),
        "gather of -0.0 and NaN: %g %g %g (%s)", got[0], got[1], got[2], uj_session_error(s));
}

/* Float sums of 2^16 or more trailing elements go in two stages (1024
 * partial sums, then theirs): 2^25 ones add up exactly, as two kernels;
 * values against double sums; within the bound of the evaluator on the
 * same graph (which adds in order). */
static void test_big_sums(uj_session *s, Rng *r) {
  uj_tensor *ones = uj_tensor_ones(s, UJ_FLOAT32, SHAPE(1 << 25));
  CHECK(uj_tensor_kernel_count(uj_tensor_reduce(UJ_RED_SUM, ones, NULL, 0, false)) == 2, "partial sums, then their sum");
  float total = 0;
  CHECK(uj_tensor_to_host(uj_tensor_reduce(UJ_RED_SUM, ones, NULL, 0, false), &total, sizeof total) == UJ_OK && total == 33554432.0f,
        "2^25 ones: %.1f", total);
  enum { ROWS = 3, COLS = 1 << 17 };
  double *xs = NULL;
  uj_tensor *x = random_f32(s, r, SHAPE(ROWS, COLS), -1, 1, false, &xs);
  double *got = values(s, uj_tensor_reduce(UJ_RED_SUM, x, (int[]){1}, 1, false), BOUNDED, "blocked row sums"); /* and the evaluator */
  for (int i = 0; got && i < ROWS; i++) {
    double want = 0;
    for (int j = 0; j < COLS; j++) want += xs[i * COLS + j];
    CHECK(fabs(got[i] - want) <= 1e-3, "row %d: %g, want %g", i, got[i], want);
  }
  free(xs), free(got);
}

int main(int argc, char **argv) {
  uj_session *s = suite_session("test_tensor_ops");
  Rng r = {0x2545F4914F6CDD1Dull};
  test_constants(s);
  test_arange(s);
  test_random(s);
  test_dtype_round_trip(s);
  test_unary(s);
  test_binary(s);
  test_broadcast_and_promotion(s);
  test_cast_where_pow(s);
  test_reduce_subsets(s, &r, SHAPE(2, 3, 4));
  test_reduce_subsets(s, &r, SHAPE(3, 1, 5));
  test_argmax(s, &r, SHAPE(2, 3, 4));
  test_argmax(s, &r, SHAPE(3, 1, 5));
  test_argmax_extremes(s);
  test_softmax(s, &r);
  test_cat_stack(s, &r);
  test_gather(s, &r);
  test_big_sums(s, &r);
  (void)argc, (void)argv;
  uj_session_free(s);
  return check_report("test_tensor_ops");
}
