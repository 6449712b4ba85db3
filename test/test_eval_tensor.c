/* test_eval_tensor.c — the tensor-level reference evaluator (eval_tensor.h).
 *
 * Hand-computed values for every op: RESHAPE, PERMUTE (2 and 3 axes), FLIP,
 * PAD (zeros of every kind), SHRINK, EXPAND, REDUCE ADD/MAX/MUL over each
 * axis subset of a (2, 3, 4) tensor, float sums whose result depends on
 * the order (C order it is), NaN in MAX, the -0.0 identity and empty
 * reductions, ALU ops elementwise, scalars moved and broadcast, vectors
 * and bools and float16 read from memory; compositions; a chain 100000
 * deep; every error. Then thousands of random chains of movement ops,
 * REDUCEs and elementwise ops, diffed against a naive strided-view
 * reference written here (a dense array of doubles with a shape, strides,
 * an offset and a valid range per axis), for int64 and float64. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "eval_util.h"
#include "uop/eval_tensor.h"
#include "uop/movement.h"

/* ---- helpers ---- */

/* A binding of the BUFFER written in `buffer` ("(BUFFER:int32* 0 6 CPU)"). */
static TensorBinding bind(Ctx *ctx, const char *buffer, const void *data, size_t bytes) {
  const UOp *b = uj_parse(ctx, buffer, "buffer");
  CHECK(b && b->op == UJ_OP_BUFFER, "%s: %s", buffer, uj_error(ctx));
  return (TensorBinding){b, data, bytes};
}

/* Parses and evaluates text; false (with a failed CHECK) when either fails. */
static bool eval_text(Ctx *ctx, const char *text, const TensorBinding *b, size_t nb,
                      TensorValue *out) {
  const UOp *root = uj_parse(ctx, text, "t");
  bool ok = root && eval_tensor(ctx, root, b, nb, out);
  CHECK(ok, "%s: %s", text, uj_error(ctx));
  return ok;
}

/* Words printed as signed ints, for messages. */
static const char *words_str(const TensorValue *tv, char *buf, size_t size) {
  size_t at = 0, n = tv->count * tv->dtype.lanes;
  buf[0] = '\0';
  for (size_t i = 0; i < n && at + 24 < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? " " : "", (long long)tv->words[i]);
  return buf;
}

/* text evaluates to shape (as shape_str prints it) and words `want` (read
 * as int64: sign-extended ints, bools 0/1). */
static void expect_ints(Ctx *ctx, const char *text, const TensorBinding *b, size_t nb,
                        const char *shape, const int64_t *want, size_t n) {
  TensorValue tv;
  char s[160], w[2048];
  if (!eval_text(ctx, text, b, nb, &tv)) return;
  CHECK_STR(shape_str(tv.shape, tv.ndim, s, sizeof s), shape, "%s: shape", text);
  bool same = tv.count * tv.dtype.lanes == n;
  for (size_t i = 0; same && i < n; i++) same = (int64_t)tv.words[i] == want[i];
  CHECK(same, "%s: got %s", text, words_str(&tv, w, sizeof w));
  tensor_value_free(&tv);
}

/* As expect_ints for float words: bit for bit (-0.0 is not +0.0); a NaN
 * in want is the canonical NaN. */
static void expect_floats(Ctx *ctx, const char *text, const TensorBinding *b, size_t nb,
                          const char *shape, const double *want, size_t n) {
  TensorValue tv;
  char s[160];
  if (!eval_text(ctx, text, b, nb, &tv)) return;
  CHECK_STR(shape_str(tv.shape, tv.ndim, s, sizeof s), shape, "%s: shape", text);
  CHECK(tv.count * tv.dtype.lanes == n, "%s: %zu words, want %zu", text, tv.count * tv.dtype.lanes,
        n);
  for (size_t i = 0; i < n && i < tv.count * tv.dtype.lanes; i++) {
    uint64_t wa = isnan(want[i]) ? 0x7ff8000000000000ull : d2w(want[i]);
    CHECK(tv.words[i] == wa, "%s: word %zu is %a (%016llx), want %a", text, i, w2d(tv.words[i]),
          (unsigned long long)tv.words[i], want[i]);
  }
  tensor_value_free(&tv);
}

#define LIST(T, ...) (const T[]){__VA_ARGS__}, sizeof((const T[]){__VA_ARGS__}) / sizeof(T)
#define INTS(...)    LIST(int64_t, __VA_ARGS__)
#define FLOATS(...)  LIST(double, __VA_ARGS__)

/* A tensor program with %b = an int32 BUFFER of 24 elements 0..23, %t its
 * (2, 3) view of the first 6 ("%t = (RESHAPE 2 3 (SHRINK 0 6 %b))"). */
static const char *with_t(const char *text) {
  static char buf[1024]; /* tests run one at a time */
  snprintf(buf, sizeof buf,
           "%%b = (BUFFER:int32* 0 24 CPU)\n%%t = (RESHAPE 2 3 (SHRINK 0 6 %%b))\n%s", text);
  return buf;
}

/* ---- movement ops by hand ---- */

static void test_movement(Ctx *ctx) {
  int32_t m[24];
  for (int i = 0; i < 24; i++) m[i] = i;
  TensorBinding b = bind(ctx, "(BUFFER:int32* 0 24 CPU)", m, sizeof m);
  expect_ints(ctx, with_t("%t"), &b, 1, "(2, 3)", INTS(0, 1, 2, 3, 4, 5));
  expect_ints(ctx, with_t("(RESHAPE 3 2 %t)"), &b, 1, "(3, 2)", INTS(0, 1, 2, 3, 4, 5));
  expect_ints(ctx, with_t("(RESHAPE 6 1 %t)"), &b, 1, "(6, 1)", INTS(0, 1, 2, 3, 4, 5));
  /* the transpose: out[i][j] = in[j][i] */
  expect_ints(ctx, with_t("(PERMUTE 1 0 %t)"), &b, 1, "(3, 2)", INTS(0, 3, 1, 4, 2, 5));
  expect_ints(ctx, with_t("(PERMUTE 0 1 %t)"), &b, 1, "(2, 3)", INTS(0, 1, 2, 3, 4, 5));
  /* (2, 3, 4) by (2, 0, 1): shape (4, 2, 3), out[i][j][k] = in[j][k][i] = 12j + 4k + i */
  expect_ints(
      ctx, "(PERMUTE 2 0 1 (RESHAPE 2 3 4 (BUFFER:int32* 0 24 CPU)))", &b, 1, "(4, 2, 3)",
      INTS(0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23));
  /* (2, 3, 4) by (1, 2, 0): shape (3, 4, 2), out[i][j][k] = in[k][i][j] = 12k + 4i + j */
  expect_ints(
      ctx, "(PERMUTE 1 2 0 (RESHAPE 2 3 4 (BUFFER:int32* 0 24 CPU)))", &b, 1, "(3, 4, 2)",
      INTS(0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23));
  expect_ints(ctx, with_t("(FLIP 0 %t)"), &b, 1, "(2, 3)", INTS(3, 4, 5, 0, 1, 2));
  expect_ints(ctx, with_t("(FLIP 1 %t)"), &b, 1, "(2, 3)", INTS(2, 1, 0, 5, 4, 3));
  expect_ints(ctx, with_t("(FLIP 0 1 %t)"), &b, 1, "(2, 3)", INTS(5, 4, 3, 2, 1, 0));
  expect_ints(ctx, with_t("(FLIP 1 0 %t)"), &b, 1, "(2, 3)", INTS(5, 4, 3, 2, 1, 0));
  expect_ints(ctx, with_t("(FLIP %t)"), &b, 1, "(2, 3)", INTS(0, 1, 2, 3, 4, 5));
  /* PAD (1, 0) on axis 0, (0, 2) on axis 1: a zero row above, two zero columns right */
  expect_ints(ctx, with_t("(PAD 1 0 0 2 %t)"), &b, 1, "(3, 5)",
              INTS(0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 5, 0, 0));
  expect_ints(ctx, with_t("(PAD 0 0 1 1 (FLIP 1 %t))"), &b, 1, "(2, 5)",
              INTS(0, 2, 1, 0, 0, 0, 5, 4, 3, 0));
  expect_ints(ctx, with_t("(SHRINK 0 2 1 3 %t)"), &b, 1, "(2, 2)", INTS(1, 2, 4, 5));
  expect_ints(ctx, with_t("(SHRINK 1 2 0 3 %t)"), &b, 1, "(1, 3)", INTS(3, 4, 5));
  expect_ints(ctx, with_t("(SHRINK 0 2 1 1 %t)"), &b, 1, "(2, 0)", INTS());
  expect_ints(ctx, "(SHRINK 20 24 (BUFFER:int32* 0 24 CPU))", &b, 1, "(4,)", INTS(20, 21, 22, 23));
  /* EXPAND broadcasts the size-1 axes only */
  expect_ints(ctx, with_t("(EXPAND 2 3 (RESHAPE 1 3 (SHRINK 0 1 0 3 %t)))"), &b, 1, "(2, 3)",
              INTS(0, 1, 2, 0, 1, 2));
  expect_ints(ctx, with_t("(EXPAND 2 3 (RESHAPE 2 1 (SHRINK 0 2 2 3 %t)))"), &b, 1, "(2, 3)",
              INTS(2, 2, 2, 5, 5, 5));
  expect_ints(ctx, with_t("(EXPAND 2 2 3 (RESHAPE 2 1 3 %t))"), &b, 1, "(2, 2, 3)",
              INTS(0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5));
  expect_ints(ctx, with_t("(EXPAND 2 0 (RESHAPE 2 1 (SHRINK 0 2 0 1 %t)))"), &b, 1, "(2, 0)",
              INTS());
}

/* Compositions: each step by hand. */
static void test_compositions(Ctx *ctx) {
  int32_t m[24];
  for (int i = 0; i < 24; i++) m[i] = i + 1;
  TensorBinding b = bind(ctx, "(BUFFER:int32* 0 24 CPU)", m, sizeof m);
  /* PAD 1 5 of 1..6: 0 1 2 3 4 5 6 0 0 0 0 0; as (3, 4):
   * [0 1 2 3] [4 5 6 0] [0 0 0 0]; transposed to (4, 3) */
  expect_ints(ctx, "(PERMUTE 1 0 (RESHAPE 3 4 (PAD 1 5 (SHRINK 0 6 (BUFFER:int32* 0 24 CPU)))))",
              &b, 1, "(4, 3)", INTS(0, 4, 0, 1, 5, 0, 2, 6, 0, 3, 0, 0));
  /* 1..3 broadcast to (2, 3), rows flipped, the last two columns kept:
   * [[1 2 3] [1 2 3]] -> [[3 2 1] [3 2 1]] -> [[2 1] [2 1]] */
  expect_ints(
      ctx,
      "(SHRINK 0 2 1 3 (FLIP 1 (EXPAND 2 3 (RESHAPE 1 3 (SHRINK 0 3 (BUFFER:int32* 0 24 CPU))))))",
      &b, 1, "(2, 2)", INTS(2, 1, 2, 1));
  /* a PAD cut away again by a SHRINK, around a PERMUTE: the identity */
  expect_ints(ctx,
              "(SHRINK 1 4 2 4 (PERMUTE 1 0 (PAD 2 0 1 2 "
              "(RESHAPE 2 3 (SHRINK 0 6 (BUFFER:int32* 0 24 CPU))))))",
              &b, 1, "(3, 2)", INTS(1, 4, 2, 5, 3, 6));
  /* a sum over a padded, flipped view: 1..6 padded with 2 zeros = 21 */
  expect_ints(ctx, "(REDUCE ADD 0 (FLIP 0 (PAD 1 1 (SHRINK 0 6 (BUFFER:int32* 0 24 CPU)))))", &b, 1,
              "(1,)", INTS(21));
  /* row sums of (2, 3) broadcast back and subtracted: x - sum_row(x) */
  expect_ints(ctx,
              "%x = (RESHAPE 2 3 (SHRINK 0 6 (BUFFER:int32* 0 24 CPU)))\n"
              "(SUB %x (EXPAND 2 3 (REDUCE ADD 1 %x)))",
              &b, 1, "(2, 3)", INTS(-5, -4, -3, -11, -10, -9));
}

/* ---- REDUCE ---- */

/* ADD, MAX, MUL over each subset of the axes of a (2, 3, 4) tensor; the
 * wanted values computed apart from this code (brute force over the 24
 * elements, in a Python script). */
static void test_reduce_axes(Ctx *ctx) {
  int32_t a[24];
  int64_t mu[24];
  for (int i = 0; i < 24; i++)
    a[i] = (7 * i) % 24, mu[i] = (const int64_t[]){-2, -1, 1, 2, 3}[a[i] % 5];
  TensorBinding b[2] = {bind(ctx, "(BUFFER:int32* 0 24 CPU)", a, sizeof a),
                        bind(ctx, "(BUFFER:int64* 1 24 CPU)", mu, sizeof mu)};
  static const struct {
    const char *axes, *shape;
    size_t n;
    int64_t add[24], max[24], mul[24];
  } cases[] = {
      {"",
       "(2, 3, 4)",
       24,
       {0, 7, 14, 21, 4, 11, 18, 1, 8, 15, 22, 5, 12, 19, 2, 9, 16, 23, 6, 13, 20, 3, 10, 17},
       {0, 7, 14, 21, 4, 11, 18, 1, 8, 15, 22, 5, 12, 19, 2, 9, 16, 23, 6, 13, 20, 3, 10, 17},
       {-2, 1, 3, -1, 3, -1, 2, -1, 2, -2, 1, -2, 1, 3, 1, 3, -1, 2, -1, 2, -2, 2, -2, 1}},
      {"0",
       "(1, 3, 4)",
       12,
       {12, 26, 16, 30, 20, 34, 24, 14, 28, 18, 32, 22},
       {12, 19, 14, 21, 16, 23, 18, 13, 20, 15, 22, 17},
       {-2, 3, 3, -3, -3, -2, -2, -2, -4, -4, -2, -2}},
      {"1",
       "(2, 1, 4)",
       8,
       {12, 33, 54, 27, 48, 45, 18, 39},
       {8, 15, 22, 21, 20, 23, 10, 17},
       {-12, 2, 6, -2, 2, 12, 2, 6}},
      {"2", "(2, 3, 1)", 6, {42, 34, 50, 42, 58, 50}, {21, 18, 22, 19, 23, 20}, {6, 6, 8, 9, 4, 8}},
      {"0 1", "(1, 1, 4)", 4, {60, 78, 72, 66}, {20, 23, 22, 21}, {-24, 24, 12, -12}},
      {"1 0", "(1, 1, 4)", 4, {60, 78, 72, 66}, {20, 23, 22, 21}, {-24, 24, 12, -12}},
      {"0 2", "(1, 3, 1)", 3, {84, 92, 100}, {21, 23, 22}, {54, 24, 64}},
      {"2 0", "(1, 3, 1)", 3, {84, 92, 100}, {21, 23, 22}, {54, 24, 64}},
      {"1 2", "(2, 1, 1)", 2, {126, 150}, {22, 23}, {288, 288}},
      {"0 1 2", "(1, 1, 1)", 1, {276}, {23}, {82944}},
      {"2 0 1", "(1, 1, 1)", 1, {276}, {23}, {82944}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[256];
    size_t n = cases[i].n;
    snprintf(text, sizeof text, "(REDUCE ADD %s (RESHAPE 2 3 4 (BUFFER:int32* 0 24 CPU)))",
             cases[i].axes);
    expect_ints(ctx, text, b, 2, cases[i].shape, cases[i].add, n);
    snprintf(text, sizeof text, "(REDUCE MAX %s (RESHAPE 2 3 4 (BUFFER:int32* 0 24 CPU)))",
             cases[i].axes);
    expect_ints(ctx, text, b, 2, cases[i].shape, cases[i].max, n);
    snprintf(text, sizeof text, "(REDUCE MUL %s (RESHAPE 2 3 4 (BUFFER:int64* 1 24 CPU)))",
             cases[i].axes);
    expect_ints(ctx, text, b, 2, cases[i].shape, cases[i].mul, n);
  }
}

/* Float sums depend on the order; the reduced elements are added one by
 * one in C order (the last axis fastest), whatever order the axes are
 * listed in. */
static void test_reduce_order(Ctx *ctx) {
  /* [[1e8, 1], [-1e8, 1]]: C order ((1e8 + 1) - 1e8) + 1 = 1 (1e8 + 1 rounds
   * to 1e8 in float32); by columns it would be 2, backwards 0 */
  float f[4] = {1e8f, 1, -1e8f, 1};
  TensorBinding b = bind(ctx, "(BUFFER:float32* 0 4 CPU)", f, sizeof f);
  expect_floats(ctx, "(REDUCE ADD 0 1 (RESHAPE 2 2 (BUFFER:float32* 0 4 CPU)))", &b, 1, "(1, 1)",
                FLOATS(1));
  expect_floats(ctx, "(REDUCE ADD 1 0 (RESHAPE 2 2 (BUFFER:float32* 0 4 CPU)))", &b, 1, "(1, 1)",
                FLOATS(1));
  /* the same elements transposed first: the order follows the view */
  expect_floats(ctx, "(REDUCE ADD 0 1 (PERMUTE 1 0 (RESHAPE 2 2 (BUFFER:float32* 0 4 CPU))))", &b,
                1, "(1, 1)", FLOATS(2));
  expect_floats(ctx, "(REDUCE ADD 0 (FLIP 0 (BUFFER:float32* 0 4 CPU)))", &b, 1, "(1,)", FLOATS(0));
  /* float16: 1024 + 0.5 = 1024 (a tie, to even), again 1024; 0.5 + 0.5 + 1024 = 1025 */
  uint16_t h[3] = {0x6400, 0x3800, 0x3800};
  TensorBinding bh = bind(ctx, "(BUFFER:float16* 0 3 CPU)", h, sizeof h);
  expect_floats(ctx, "(REDUCE ADD 0 (RESHAPE 3 (BUFFER:float16* 0 3 CPU)))", &bh, 1, "(1,)",
                FLOATS(1024));
  expect_floats(ctx, "(REDUCE ADD 0 (FLIP 0 (BUFFER:float16* 0 3 CPU)))", &bh, 1, "(1,)",
                FLOATS(1025));
}

/* NaN wins MAX wherever it is; -0.0 is the ADD identity; empty reductions
 * give the identity. */
static void test_reduce_corners(Ctx *ctx) {
  uint32_t nan_bits = 0xffc00123u; /* a NaN with a sign and a payload */
  float f[8] = {1, 0, 3, 0, -0.0f, -0.0f, -0.0f, 0.0f};
  memcpy(&f[1], &nan_bits, 4);
  TensorBinding b = bind(ctx, "(BUFFER:float32* 0 8 CPU)", f, sizeof f);
  expect_floats(ctx, "(REDUCE MAX 0 (SHRINK 0 3 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(NAN));
  expect_floats(ctx, "(REDUCE MAX 0 (SHRINK 1 3 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(NAN));
  expect_floats(ctx, "(REDUCE MAX 0 (FLIP 0 (SHRINK 0 2 (BUFFER:float32* 0 8 CPU))))", &b, 1,
                "(1,)", FLOATS(NAN));
  expect_floats(ctx, "(REDUCE MAX 1 (RESHAPE 2 2 (SHRINK 0 4 (BUFFER:float32* 0 8 CPU))))", &b, 1,
                "(2, 1)", FLOATS(NAN, 3));
  expect_floats(ctx, "(REDUCE ADD 0 (SHRINK 0 3 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(NAN));
  /* -0.0 + -0.0 + -0.0 = -0.0: the identity is -0.0, not +0.0 */
  expect_floats(ctx, "(REDUCE ADD 0 (SHRINK 4 7 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(-0.0));
  expect_floats(ctx, "(REDUCE ADD 0 (SHRINK 6 8 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(0.0));
  expect_floats(ctx, "(REDUCE MAX 0 (SHRINK 6 8 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(0.0));
  expect_floats(ctx, "(REDUCE MAX 0 (SHRINK 4 6 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(-0.0));
  expect_floats(ctx, "(REDUCE MUL 0 (SHRINK 2 5 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(1,)",
                FLOATS(-0.0));
  /* no axes: each element folded alone, so -0.0 + x is x, -0.0 kept */
  expect_floats(ctx, "(REDUCE ADD (SHRINK 4 8 (BUFFER:float32* 0 8 CPU)))", &b, 1, "(4,)",
                FLOATS(-0.0, -0.0, -0.0, 0.0));
  /* empty: the identities (and a PAD of an empty axis holds zeros) */
  static const char *const empty[] = {
      "(REDUCE ADD 1 (RESHAPE 2 0 (BUFFER:float32* 1 0 CPU)))",
      "(REDUCE MUL 1 (RESHAPE 2 0 (BUFFER:float32* 1 0 CPU)))",
      "(REDUCE MAX 1 (RESHAPE 2 0 (BUFFER:float32* 1 0 CPU)))",
      "(REDUCE MAX 0 1 (PAD 0 0 1 0 (RESHAPE 2 0 (BUFFER:float32* 1 0 CPU))))"};
  TensorBinding e = bind(ctx, "(BUFFER:float32* 1 0 CPU)", NULL, 0);
  expect_floats(ctx, empty[0], &e, 1, "(2, 1)", FLOATS(-0.0, -0.0));
  expect_floats(ctx, empty[1], &e, 1, "(2, 1)", FLOATS(1, 1));
  expect_floats(ctx, empty[2], &e, 1, "(2, 1)", FLOATS(-INFINITY, -INFINITY));
  expect_floats(ctx, empty[3], &e, 1, "(1, 1)", FLOATS(0.0));
  TensorBinding bi = bind(ctx, "(BUFFER:int32* 2 4 CPU)", f, 16),
                bu = bind(ctx, "(BUFFER:uint8* 3 4 CPU)", f, 4);
  expect_ints(ctx, "(REDUCE MAX 0 (SHRINK 0 0 (BUFFER:int32* 2 4 CPU)))", &bi, 1, "(1,)",
              INTS(INT32_MIN));
  expect_ints(ctx, "(REDUCE ADD 0 (SHRINK 0 0 (BUFFER:int32* 2 4 CPU)))", &bi, 1, "(1,)", INTS(0));
  expect_ints(ctx, "(REDUCE MUL 0 (SHRINK 0 0 (BUFFER:int32* 2 4 CPU)))", &bi, 1, "(1,)", INTS(1));
  expect_ints(ctx, "(REDUCE MAX 0 (SHRINK 0 0 (BUFFER:uint8* 3 4 CPU)))", &bu, 1, "(1,)", INTS(0));
}

/* ---- values: ALU ops, scalars, dtypes in memory ---- */

static void test_alu(Ctx *ctx) {
  int32_t m[24];
  for (int i = 0; i < 24; i++) m[i] = i;
  m[6] = 0x3f800000, m[7] = (int32_t)0xc0400000u; /* float32 1.0, -3.0 */
  TensorBinding b = bind(ctx, "(BUFFER:int32* 0 24 CPU)", m, sizeof m);
  /* %u = [[0 2 4] [1 3 5]], the transpose of (3, 2) */
  const char *u = "(PERMUTE 1 0 (RESHAPE 3 2 (SHRINK 0 6 %b)))";
  char text[512];
  snprintf(text, sizeof text, "%%u = %s\n(ADD %%t %%u)", u);
  expect_ints(ctx, with_t(text), &b, 1, "(2, 3)", INTS(0, 3, 6, 4, 7, 10));
  snprintf(text, sizeof text, "%%u = %s\n(CMPLT %%t %%u)", u);
  expect_ints(ctx, with_t(text), &b, 1, "(2, 3)", INTS(0, 1, 1, 0, 0, 0));
  snprintf(text, sizeof text, "%%u = %s\n(WHERE (CMPLT %%t %%u) %%t %%u)", u);
  expect_ints(ctx, with_t(text), &b, 1, "(2, 3)", INTS(0, 1, 2, 1, 3, 5));
  snprintf(text, sizeof text, "%%u = %s\n(MULACC %%t %%u %%t)", u);
  expect_ints(ctx, with_t(text), &b, 1, "(2, 3)", INTS(0, 3, 10, 6, 16, 30));
  expect_ints(ctx, with_t("(NEG %t)"), &b, 1, "(2, 3)", INTS(0, -1, -2, -3, -4, -5));
  expect_ints(ctx, with_t("(CAST:int8 (MUL %t (EXPAND 2 3 (RESHAPE 1 1 (CONST:int32 50)))))"), &b,
              1, "(2, 3)", INTS(0, 50, 100, -106, -56, -6));
  expect_floats(ctx,
                with_t("(FDIV (CAST:float32 %t) (EXPAND 2 3 (RESHAPE 1 1 (CONST:float32 2.0))))"),
                &b, 1, "(2, 3)", FLOATS(0, 0.5, 1, 1.5, 2, 2.5));
  expect_floats(ctx, "(BITCAST:float32 (SHRINK 6 8 (BUFFER:int32* 0 24 CPU)))", &b, 1, "(2,)",
                FLOATS(1, -3));
  expect_ints(ctx, "(BITCAST:uint32 (SHRINK 7 8 (BUFFER:int32* 0 24 CPU)))", &b, 1, "(1,)",
              INTS(0xc0400000));
  /* scalars: shape (), moved and broadcast */
  expect_ints(ctx, "(CONST:int32 5)", NULL, 0, "()", INTS(5));
  expect_ints(ctx, "(ADD (CONST:int8 100) (CONST:int8 100))", NULL, 0, "()", INTS(-56));
  expect_ints(ctx, "(RESHAPE (CONST:int32 5))", NULL, 0, "()", INTS(5));
  expect_ints(ctx, "(PAD (FLIP (CONST:int32 5)))", NULL, 0, "()", INTS(5));
  expect_ints(ctx, "(REDUCE MAX (CONST:int32 5))", NULL, 0, "()", INTS(5));
  expect_ints(ctx, "(RESHAPE 1 1 (CONST:int32 5))", NULL, 0, "(1, 1)", INTS(5));
  expect_floats(ctx, "(EXPAND 2 3 (RESHAPE 1 1 (CONST:float32 1.5)))", NULL, 0, "(2, 3)",
                FLOATS(1.5, 1.5, 1.5, 1.5, 1.5, 1.5));
  expect_ints(ctx, "(REDUCE ADD 0 1 (EXPAND 2 3 (RESHAPE 1 1 (CONST:int32 7))))", NULL, 0, "(1, 1)",
              INTS(42));
  expect_ints(ctx, "(PAD 1 2 (RESHAPE 1 (CONST:int32 7)))", NULL, 0, "(4,)", INTS(0, 7, 0, 0));
  expect_ints(ctx, "(RESHAPE (SHRINK 1 2 (PAD 1 2 (RESHAPE 1 (CONST:int32 7)))))", NULL, 0, "()",
              INTS(7));
}

/* Elements of other dtypes read from memory: vectors lane by lane, bools
 * (any nonzero byte), float16 patterns; PAD's zeros in each. */
static void test_dtypes(Ctx *ctx) {
  int16_t v[6] = {1, 2, 3, 4, 5, -6};
  TensorBinding bv = bind(ctx, "(BUFFER:int16x2* 0 3 CPU)", v, sizeof v);
  expect_ints(ctx, "(RESHAPE 3 (BUFFER:int16x2* 0 3 CPU))", &bv, 1, "(3,)",
              INTS(1, 2, 3, 4, 5, -6));
  expect_ints(ctx, "(FLIP 0 (RESHAPE 3 (BUFFER:int16x2* 0 3 CPU)))", &bv, 1, "(3,)",
              INTS(5, -6, 3, 4, 1, 2));
  expect_ints(ctx, "(PAD 1 0 (RESHAPE 3 (BUFFER:int16x2* 0 3 CPU)))", &bv, 1, "(4,)",
              INTS(0, 0, 1, 2, 3, 4, 5, -6));
  expect_ints(ctx, "(REDUCE ADD 0 (RESHAPE 3 (BUFFER:int16x2* 0 3 CPU)))", &bv, 1, "(1,)",
              INTS(9, 0));
  expect_ints(ctx, "(REDUCE MAX 0 (RESHAPE 3 (BUFFER:int16x2* 0 3 CPU)))", &bv, 1, "(1,)",
              INTS(5, 4));
  expect_ints(ctx, "%x = (RESHAPE 3 (BUFFER:int16x2* 0 3 CPU))\n(MUL %x %x)", &bv, 1, "(3,)",
              INTS(1, 4, 9, 16, 25, 36));
  unsigned char bl[4] = {0, 2, 1, 0};
  TensorBinding bb = bind(ctx, "(BUFFER:bool* 0 4 CPU)", bl, sizeof bl);
  expect_ints(ctx, "(PAD 0 1 (RESHAPE 4 (BUFFER:bool* 0 4 CPU)))", &bb, 1, "(5,)",
              INTS(0, 1, 1, 0, 0));
  expect_ints(ctx, "(REDUCE MAX 1 (RESHAPE 2 2 (BUFFER:bool* 0 4 CPU)))", &bb, 1, "(2, 1)",
              INTS(1, 1));
  expect_ints(ctx, "(REDUCE MAX 0 (RESHAPE 2 2 (BUFFER:bool* 0 4 CPU)))", &bb, 1, "(1, 2)",
              INTS(1, 1));
  expect_ints(ctx, "(REDUCE MAX 0 (SHRINK 3 4 (BUFFER:bool* 0 4 CPU)))", &bb, 1, "(1,)", INTS(0));
  uint16_t h[3] = {0x3c00, 0x7bff, 0xfc00};
  TensorBinding bh = bind(ctx, "(BUFFER:float16* 0 3 CPU)", h, sizeof h);
  expect_floats(ctx, "(PAD 0 1 (RESHAPE 3 (BUFFER:float16* 0 3 CPU)))", &bh, 1, "(4,)",
                FLOATS(1, 65504, -INFINITY, 0.0));
  /* 1 + 65504 = 65505 rounds to 65504 in float16 */
  expect_floats(ctx, "(REDUCE ADD 0 (SHRINK 0 2 (BUFFER:float16* 0 3 CPU)))", &bh, 1, "(1,)",
                FLOATS(65504));
  /* two BUFFERs in one graph */
  int32_t p[2] = {10, 20}, q[2] = {1, 2};
  TensorBinding two[2] = {bind(ctx, "(BUFFER:int32* 5 2 CPU)", p, sizeof p),
                          bind(ctx, "(BUFFER:int32* 6 2 CPU)", q, sizeof q)};
  expect_ints(ctx, "(SUB (RESHAPE 2 (BUFFER:int32* 5 2 CPU)) (FLIP 0 (BUFFER:int32* 6 2 CPU)))",
              two, 2, "(2,)", INTS(8, 19));
}

/* ---- deep graphs ---- */

static void test_deep(Ctx *ctx) {
  int32_t m[4] = {1, 2, 3, 4};
  TensorBinding b = bind(ctx, "(BUFFER:int32* 9 4 CPU)", m, sizeof m);
  const UOp *x0 = uj_parse(ctx, "(RESHAPE 4 (BUFFER:int32* 9 4 CPU))", "t"), *x = x0, *f = x0;
  for (int i = 0; i < 100000; i++) x = uop_binary(ctx, UJ_OP_ADD, x, x0);
  const int64_t flip_axes[1] = {0};
  for (int i = 0; i < 100001; i++)
    f = uop_new(ctx, UJ_OP_FLIP, f->dtype, &f, 1, (Arg){NULL, flip_axes, 1});
  TensorValue tv;
  bool ok = eval_tensor(ctx, x, &b, 1, &tv);
  CHECK(ok && tv.count == 4 && tv.words[0] == 100001 && tv.words[3] == 400004, "100000 ADDs: %s",
        ok ? "wrong values" : uj_error(ctx));
  if (ok) tensor_value_free(&tv);
  ok = eval_tensor(ctx, f, &b, 1, &tv);
  CHECK(ok && tv.count == 4 && tv.words[0] == 4 && tv.words[3] == 1, "100001 FLIPs: %s",
        ok ? "wrong values" : uj_error(ctx));
  if (ok) tensor_value_free(&tv);
}

/* ---- errors ---- */

/* Evaluating root fails with msg in the message and an empty result. */
static void expect_error(Ctx *ctx, const UOp *root, const TensorBinding *b, size_t nb,
                         const char *msg) {
  static uint64_t dummy;
  TensorValue tv = {.count = 99, .words = &dummy};
  bool ok = eval_tensor(ctx, root, b, nb, &tv);
  CHECK(!ok && strstr(uj_error(ctx), msg), "want '%s', got %s", msg,
        ok ? "success" : uj_error(ctx));
  CHECK(tv.words == NULL && tv.count == 0 && tv.shape == NULL, "%s: the result is emptied", msg);
  if (ok) tensor_value_free(&tv);
}

static const UOp *parse(Ctx *ctx, const char *text) {
  const UOp *u = uj_parse(ctx, text, "t");
  CHECK(u != NULL, "%s: %s", text, uj_error(ctx));
  return u;
}

static void test_errors(Ctx *ctx) {
  int32_t m[6] = {0};
  TensorBinding b = bind(ctx, "(BUFFER:int32* 0 6 CPU)", m, sizeof m);
  const UOp *t = parse(ctx, "(RESHAPE 2 3 (BUFFER:int32* 0 6 CPU))");
  expect_error(ctx, parse(ctx, "(ADD (LOAD (PARAM:float32* 0)) (CONST:float32 1.0))"), NULL, 0,
               "eval_tensor: LOAD is not a tensor op\n  in (LOAD");
  expect_error(
      ctx,
      parse(ctx, "(ADD (LOAD (INDEX (PARAM:float32* 0) (CONST:int32 1))) (CONST:float32 1.0))"),
      NULL, 0, "eval_tensor: LOAD is not a tensor op");
  expect_error(ctx, parse(ctx, "(REDUCE ADD (CONST:int32 1) (RANGE loop 0 (CONST:int32 4)))"), NULL,
               0, "eval_tensor: REDUCE over RANGEs is not a tensor op\n  in (REDUCE:int32 ADD");
  expect_error(ctx, parse(ctx, "(ADD (RANGE loop 0 (CONST:int32 4)) (CONST:int32 1))"), NULL, 0,
               "eval_tensor: RANGE is not a tensor op");
  expect_error(ctx, parse(ctx, "(MUL (DEFINE_VAR:int32 n 0 9) (CONST:int32 2))"), NULL, 0,
               "eval_tensor: DEFINE_VAR is not a tensor op");
  expect_error(ctx, parse(ctx, "(PARAM:int32 0)"), NULL, 0,
               "eval_tensor: PARAM is not a tensor op");
  expect_error(ctx, parse(ctx, "(SINK (CONST:int32 1))"), NULL, 0,
               "eval_tensor: SINK is not a tensor op");
  expect_error(ctx, parse(ctx, "(STORE (PARAM:int32* 0) (CONST:int32 1))"), NULL, 0,
               "eval_tensor: STORE is not a tensor op");
  expect_error(ctx, parse(ctx, "(GEP 1 (VECTORIZE (CONST:int32 1) (CONST:int32 2)))"), NULL, 0,
               "eval_tensor: GEP is not a tensor op");
  expect_error(ctx, b.buffer, &b, 1, "eval_tensor: BUFFER is a pointer, not a tensor");
  expect_error(ctx, t, NULL, 0, "eval_tensor: BUFFER is not bound\n  in (BUFFER:int32* 0 6 CPU)");
  TensorBinding small = {b.buffer, m, sizeof m - 1};
  expect_error(ctx, t, &small, 1, "eval_tensor: BUFFER of 6 elements needs 24 bytes, not 23");
  TensorBinding null = {b.buffer, NULL, sizeof m};
  expect_error(ctx, t, &null, 1, "eval_tensor: BUFFER is bound to NULL memory of 24 bytes");
  TensorBinding twice[2] = {b, b};
  expect_error(ctx, t, twice, 2, "eval_tensor: BUFFER is bound twice (bindings 0 and 1)");
  TensorBinding not_buffer[2] = {b, {t, m, sizeof m}};
  expect_error(ctx, t, not_buffer, 2,
               "eval_tensor: binding 1 is not a BUFFER node of this context");
  TensorBinding none = {NULL, m, sizeof m};
  expect_error(ctx, t, &none, 1, "eval_tensor: binding 0 is not a BUFFER node");
  /* too big: 10^12 elements, and a shape whose count overflows int64 */
  expect_error(
      ctx,
      parse(ctx, "(RESHAPE 1000000000000 (EXPAND 1000000 1000000 (RESHAPE 1 1 (CONST:int8 1))))"),
      NULL, 0,
      "eval_tensor: RESHAPE: 1000000000000 elements is too many for the reference evaluator");
  expect_error(ctx, parse(ctx, "(EXPAND 1000000 1000000 (RESHAPE 1 1 (CONST:int8 1)))"), NULL, 0,
               "eval_tensor: EXPAND: 1000000000000 elements is too many");
  /* past 2^52 index points the op table refuses a shape (docs/ir.md): the parser, and here a
   * node made without it */
  const UOp *one = parse(ctx, "(RESHAPE 1 1 (CONST:int8 1))");
  const int64_t huge[2] = {4294967296, 4294967296};
  CHECK(uj_parse(ctx, "(EXPAND 4294967296 4294967296 (RESHAPE 1 1 (CONST:int8 1)))", "t") == NULL &&
            strstr(uj_error(ctx), "EXPAND of shape (4294967296, 4294967296): too large"),
        "the parser takes a shape past 2^52: %s", uj_error(ctx));
  expect_error(ctx, uop_new(ctx, UJ_OP_EXPAND, dt_scalar(UJ_INT8), &one, 1, (Arg){NULL, huge, 2}), NULL, 0,
               "EXPAND of shape (4294967296, 4294967296): too large");
  /* the limit is 2^31 words: elements times lanes */
  expect_error(ctx, parse(ctx, "(EXPAND 2147483649 (RESHAPE 1 (CONST:int8 1)))"), NULL, 0,
               "eval_tensor: EXPAND: 2147483649 elements is too many");
  int8_t pair[2] = {1, 2};
  TensorBinding bp = bind(ctx, "(BUFFER:int8x2* 1 1 CPU)", pair, sizeof pair);
  expect_error(ctx, parse(ctx, "(EXPAND 1073741825 (BUFFER:int8x2* 1 1 CPU))"), &bp, 1,
               "eval_tensor: EXPAND: 1073741825 elements is too many");
  /* a graph that breaks the op table: the spec checker's message */
  const int64_t bad_shape[2] = {4, 2};
  const UOp *bad =
      uop_new(ctx, UJ_OP_RESHAPE, dt_scalar(UJ_INT32), &b.buffer, 1, (Arg){NULL, bad_shape, 2});
  expect_error(ctx, bad, &b, 1, "RESHAPE of (6,) to (4, 2): 6 elements are not 8");
  /* roots: NULL, and a node of another context */
  expect_error(ctx, NULL, NULL, 0, "eval_tensor: the root is not a node of this context");
  Ctx *other = uj_ctx_new();
  for (int i = 0; i < 200; i++) uj_const_int(other, dt_scalar(UJ_INT32), i);
  expect_error(ctx, uj_const_int(other, dt_scalar(UJ_INT32), 5000), NULL, 0,
               "the root is not a node of this context");
  uj_ctx_free(other);
}

/* ---- random chains against a naive strided reference ---- */

enum { NAIVE_AXES = 6, NAIVE_LIMIT = 2048 };

/* A view of a dense array of doubles: element idx is
 * data[offset + sum idx[i] * stride[i]] when vlo[i] <= idx[i] < vhi[i] on
 * every axis, else 0 (a padded element). Values are doubles for int64
 * chains too (small integers, exact). */
typedef struct View {
  unsigned ndim;
  int64_t shape[NAIVE_AXES], stride[NAIVE_AXES], vlo[NAIVE_AXES], vhi[NAIVE_AXES], offset;
  double *data;
} View;

static int64_t view_count(const View *v) {
  int64_t n = 1;
  for (unsigned i = 0; i < v->ndim; i++) n *= v->shape[i];
  return n;
}

/* Advances a multi-index in C order; false after the last. */
static bool odometer_next(int64_t *idx, const int64_t *shape, unsigned ndim) {
  for (unsigned i = ndim; i-- > 0;) {
    if (++idx[i] < shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}

static double view_at(const View *v, const int64_t *idx) {
  int64_t at = v->offset;
  for (unsigned i = 0; i < v->ndim; i++) {
    if (idx[i] < v->vlo[i] || idx[i] >= v->vhi[i]) return 0.0;
    at += idx[i] * v->stride[i];
  }
  return v->data[at];
}

/* A contiguous view of dense data (taken over) of the given shape. */
static View view_dense(double *data, const int64_t *shape, unsigned ndim) {
  View v = {.ndim = ndim, .data = data};
  int64_t stride = 1;
  for (unsigned i = ndim; i-- > 0;) {
    v.shape[i] = shape[i], v.stride[i] = stride, v.vlo[i] = 0, v.vhi[i] = shape[i];
    stride *= shape[i];
  }
  return v;
}

/* The view's elements in C order, malloc'd. */
static double *view_materialise(const View *v) {
  int64_t n = view_count(v), idx[NAIVE_AXES] = {0};
  double *out = malloc((size_t)(n ? n : 1) * sizeof *out);
  for (int64_t e = 0; e < n; e++, odometer_next(idx, v->shape, v->ndim)) out[e] = view_at(v, idx);
  return out;
}

static void naive_reshape(View *v, const int64_t *shape, unsigned ndim) {
  double *d = view_materialise(v);
  free(v->data);
  *v = view_dense(d, shape, ndim);
}

static void naive_expand(View *v, const int64_t *shape) {
  for (unsigned i = 0; i < v->ndim; i++) {
    if (v->shape[i] != 1 || shape[i] == 1) continue;
    bool valid = v->vlo[i] <= 0 && 0 < v->vhi[i];
    v->shape[i] = shape[i], v->stride[i] = 0, v->vlo[i] = 0, v->vhi[i] = valid ? shape[i] : 0;
  }
}

static void naive_permute(View *v, const int64_t *order) {
  View w = *v;
  for (unsigned i = 0; i < v->ndim; i++) {
    int64_t a = order[i];
    w.shape[i] = v->shape[a], w.stride[i] = v->stride[a], w.vlo[i] = v->vlo[a],
    w.vhi[i] = v->vhi[a];
  }
  *v = w;
}

static void naive_flip(View *v, unsigned a) {
  int64_t n = v->shape[a], lo = v->vlo[a];
  v->offset += (n - 1) * v->stride[a];
  v->stride[a] = -v->stride[a];
  v->vlo[a] = n - v->vhi[a], v->vhi[a] = n - lo;
}

static void naive_pad(View *v, unsigned a, int64_t lo, int64_t hi) {
  v->shape[a] += lo + hi, v->offset -= lo * v->stride[a], v->vlo[a] += lo, v->vhi[a] += lo;
}

/* The valid range is clipped to the kept part: a later PAD must not
 * bring back what SHRINK cut. */
static void naive_shrink(View *v, unsigned a, int64_t lo, int64_t hi) {
  v->shape[a] = hi - lo, v->offset += lo * v->stride[a];
  v->vlo[a] = v->vlo[a] - lo > 0 ? v->vlo[a] - lo : 0;
  v->vhi[a] = v->vhi[a] - lo < hi - lo ? v->vhi[a] - lo : hi - lo;
}

static double naive_max(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b && a == 0) return signbit(a) && signbit(b) ? -0.0 : 0.0;
  return a > b ? a : b;
}

/* op 0 ADD, 1 MAX, 2 MUL over the axes in mask: every source element in C
 * order, folded into the output element it belongs to, so each output
 * sees its elements in C order. */
static void naive_reduce(View *v, unsigned mask, int op, bool is_float) {
  int64_t oshape[NAIVE_AXES], idx[NAIVE_AXES] = {0}, n = view_count(v), on = 1;
  for (unsigned i = 0; i < v->ndim; i++)
    oshape[i] = mask >> i & 1 ? 1 : v->shape[i], on *= oshape[i];
  double *out = malloc((size_t)(on ? on : 1) * sizeof *out);
  double identity = op == 0    ? (is_float ? -0.0 : 0.0)
                    : op == 2  ? 1.0
                    : is_float ? -INFINITY
                               : (double)INT64_MIN;
  for (int64_t e = 0; e < on; e++) out[e] = identity;
  for (int64_t e = 0; e < n; e++, odometer_next(idx, v->shape, v->ndim)) {
    int64_t o = 0;
    for (unsigned i = 0; i < v->ndim; i++) o = o * oshape[i] + (mask >> i & 1 ? 0 : idx[i]);
    double x = view_at(v, idx);
    out[o] = op == 0 ? out[o] + x : op == 2 ? out[o] * x : naive_max(out[o], x);
  }
  free(v->data);
  *v = view_dense(out, oshape, v->ndim);
}

/* v = v * c, or v = v + flip(v) over every axis. */
static void naive_elementwise(View *v, bool add_flipped, double c) {
  double *a = view_materialise(v);
  View f = *v;
  for (unsigned i = 0; i < v->ndim; i++) naive_flip(&f, i);
  int64_t n = view_count(v), idx[NAIVE_AXES] = {0};
  for (int64_t e = 0; e < n; e++, odometer_next(idx, v->shape, v->ndim))
    a[e] = add_flipped ? a[e] + view_at(&f, idx) : a[e] * c;
  int64_t shape[NAIVE_AXES];
  memcpy(shape, v->shape, sizeof shape);
  free(v->data);
  *v = view_dense(a, shape, v->ndim);
}

/* ---- the generator ---- */

typedef struct Rng {
  uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r) {
  r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
  return r->s;
}
static int64_t rnd(Rng *r, int64_t n) { return n > 0 ? (int64_t)(rng_next(r) % (uint64_t)n) : 0; }

typedef struct Chain {
  Ctx *ctx;
  Rng *rng;
  bool is_float;
  const UOp *u; /* the chain so far */
  View v;       /* the same, naively */
  bool ok;
} Chain;

static void chain_node(Chain *c, Op op, const char *name, const int64_t *ints, unsigned n) {
  DType d = op == UJ_OP_REDUCE ? c->u->dtype : dt_base(c->u->dtype);
  const UOp *u = uj_uop_new(c->ctx, op, d, &c->u, 1, (Arg){name, ints, n});
  CHECK(u != NULL, "random chain: %s: %s", op_table[op].name, uj_error(c->ctx));
  if (!u) c->ok = false;
  else c->u = u;
}

/* A random shape of count elements (a 0 somewhere when count is 0). */
static unsigned random_shape(Rng *r, int64_t count, int64_t *shape) {
  unsigned ndim = (unsigned)rnd(r, 5), zero = (unsigned)rnd(r, ndim ? ndim : 1);
  if (count == 0 && ndim == 0) ndim = 1;
  int64_t left = count;
  for (unsigned i = 0; i < ndim; i++) {
    int64_t d = 1;
    if (count == 0) d = i == zero ? 0 : 1 + rnd(r, 3);
    else if (i + 1 == ndim) d = left;
    else
      for (int tries = 0; tries < 4 && d == 1; tries++)
        d = 1 + rnd(r, left), d = left % d == 0 ? d : 1;
    shape[i] = d;
    if (count) left /= d;
  }
  return ndim;
}

static void step_reshape(Chain *c) {
  int64_t shape[NAIVE_AXES];
  unsigned ndim = random_shape(c->rng, view_count(&c->v), shape);
  if (view_count(&c->v) != 1 && ndim == 0) return;
  chain_node(c, UJ_OP_RESHAPE, NULL, shape, ndim);
  naive_reshape(&c->v, shape, ndim);
}

/* A size-1 axis put in at a random place (a RESHAPE), then every size-1
 * axis expanded to 1..3 while the count stays small. */
static void step_expand(Chain *c) {
  if (c->v.ndim < NAIVE_AXES) {
    int64_t shape[NAIVE_AXES];
    unsigned at = (unsigned)rnd(c->rng, c->v.ndim + 1);
    for (unsigned i = 0, j = 0; i <= c->v.ndim; i++) shape[i] = i == at ? 1 : c->v.shape[j++];
    chain_node(c, UJ_OP_RESHAPE, NULL, shape, c->v.ndim + 1);
    naive_reshape(&c->v, shape, c->v.ndim + 1);
  }
  int64_t shape[NAIVE_AXES], count = view_count(&c->v);
  for (unsigned i = 0; i < c->v.ndim; i++) {
    shape[i] = c->v.shape[i];
    if (shape[i] == 1 && count * 3 <= NAIVE_LIMIT) shape[i] = 1 + rnd(c->rng, 3), count *= shape[i];
  }
  if (!c->ok) return;
  chain_node(c, UJ_OP_EXPAND, NULL, shape, c->v.ndim);
  naive_expand(&c->v, shape);
}

static void step_permute(Chain *c) {
  int64_t order[NAIVE_AXES];
  for (unsigned i = 0; i < c->v.ndim; i++) order[i] = i;
  for (unsigned i = c->v.ndim; i > 1; i--) {
    unsigned j = (unsigned)rnd(c->rng, i);
    int64_t t = order[i - 1];
    order[i - 1] = order[j], order[j] = t;
  }
  chain_node(c, UJ_OP_PERMUTE, NULL, order, c->v.ndim);
  naive_permute(&c->v, order);
}

static void step_flip(Chain *c) {
  int64_t axes[NAIVE_AXES];
  unsigned n = 0;
  for (unsigned i = c->v.ndim; i-- > 0;) /* listed last axis first */
    if (rnd(c->rng, 2)) axes[n++] = i;
  chain_node(c, UJ_OP_FLIP, NULL, axes, n);
  for (unsigned k = 0; k < n; k++) naive_flip(&c->v, (unsigned)axes[k]);
}

static void step_pad_shrink(Chain *c, bool pad) {
  int64_t ints[2 * NAIVE_AXES], count = 1;
  for (unsigned i = 0; i < c->v.ndim; i++) {
    int64_t n = c->v.shape[i], lo = 0, hi = pad ? 0 : n;
    if (pad && rnd(c->rng, 2)) lo = rnd(c->rng, 3), hi = rnd(c->rng, 3);
    if (!pad && rnd(c->rng, 2)) lo = rnd(c->rng, n + 1), hi = lo + rnd(c->rng, n - lo + 1);
    ints[2 * i] = lo, ints[2 * i + 1] = hi;
    count *= pad ? n + lo + hi : 1;
  }
  for (unsigned i = 0; pad && count > NAIVE_LIMIT && i < 2 * c->v.ndim; i++) ints[i] = 0;
  chain_node(c, pad ? UJ_OP_PAD : UJ_OP_SHRINK, NULL, ints, 2 * c->v.ndim);
  for (unsigned i = 0; i < c->v.ndim; i++)
    (pad ? naive_pad : naive_shrink)(&c->v, i, ints[2 * i], ints[2 * i + 1]);
}

/* ADD or MAX (and MUL for floats: an int product could wrap) over random
 * axes, listed in a random order; no int MAX over an empty axis (the
 * naive doubles would not wrap INT64_MIN later). */
static void step_reduce(Chain *c) {
  static const char *const names[3] = {"ADD", "MAX", "MUL"};
  int op = (int)rnd(c->rng, c->is_float ? 3 : 2);
  unsigned mask = 0, n = 0;
  int64_t axes[NAIVE_AXES];
  for (unsigned i = 0; i < c->v.ndim; i++) {
    if (!rnd(c->rng, 2)) continue;
    if (op == 1 && !c->is_float && c->v.shape[i] == 0) continue;
    mask |= 1u << i;
    axes[n++] = i;
  }
  for (unsigned i = n; i > 1; i--) {
    unsigned j = (unsigned)rnd(c->rng, i);
    int64_t t = axes[i - 1];
    axes[i - 1] = axes[j], axes[j] = t;
  }
  chain_node(c, UJ_OP_REDUCE, names[op], axes, n);
  naive_reduce(&c->v, mask, op, c->is_float);
}

/* x * broadcast CONST (a scalar RESHAPEd and EXPANDed), or x + FLIP(x). */
static void step_elementwise(Chain *c) {
  bool add_flipped = rnd(c->rng, 2);
  uj_scalar s = c->is_float ? UJ_FLOAT64 : UJ_INT64;
  double k = c->is_float ? 1.0 / 3.0 : 2.0; /* 1/3 rounds: the products differ from sums */
  const UOp *other;
  if (add_flipped) {
    int64_t axes[NAIVE_AXES];
    for (unsigned i = 0; i < c->v.ndim; i++) axes[i] = i;
    other = uj_uop_new(c->ctx, UJ_OP_FLIP, c->u->dtype, &c->u, 1, (Arg){NULL, axes, c->v.ndim});
  } else {
    int64_t ones[NAIVE_AXES] = {1, 1, 1, 1, 1, 1};
    const UOp *kc = c->is_float ? k_float(c->ctx, s, k) : k_int(c->ctx, s, 2);
    other = uj_uop_new(c->ctx, UJ_OP_RESHAPE, dt_scalar(s), &kc, 1, (Arg){NULL, ones, c->v.ndim});
    other = other ? uj_uop_new(c->ctx, UJ_OP_EXPAND, dt_scalar(s), &other, 1,
                               (Arg){NULL, c->v.shape, c->v.ndim})
                  : NULL;
  }
  const UOp *u = other ? uj_uop_new(c->ctx, add_flipped ? UJ_OP_ADD : UJ_OP_MUL, dt_scalar(s),
                                    (const UOp *[]){c->u, other}, 2, arg_none())
                       : NULL;
  CHECK(u != NULL, "random chain: elementwise: %s", uj_error(c->ctx));
  if (!u) {
    c->ok = false;
    return;
  }
  c->u = u;
  naive_elementwise(&c->v, add_flipped, k);
}

/* The word the evaluator must give for a naive value. */
static uint64_t naive_word(double v, bool is_float) {
  if (!is_float) return (uint64_t)(int64_t)v;
  return isnan(v) ? 0x7ff8000000000000ull : d2w(v);
}

/* The evaluator's shape and words against the naive view's. */
static void chain_compare(Chain *c, const TensorBinding *b) {
  TensorValue tv;
  bool ok = eval_tensor(c->ctx, c->u, b, 1, &tv);
  double *want = view_materialise(&c->v);
  bool same = ok && tv.ndim == c->v.ndim && (int64_t)tv.count == view_count(&c->v);
  for (unsigned i = 0; same && i < tv.ndim; i++) same = tv.shape[i] == c->v.shape[i];
  size_t bad = 0;
  while (same && bad < tv.count && tv.words[bad] == naive_word(want[bad], c->is_float)) bad++;
  same = same && bad == tv.count;
  if (!same) {
    char *text = uj_print(c->ctx, c->u), s[160];
    CHECK(same, "random %s chain, naive shape %s: %s at element %zu: got %016llx, want %a\n%s",
          c->is_float ? "float64" : "int64", shape_str(c->v.shape, c->v.ndim, s, sizeof s),
          ok ? "differs" : uj_error(c->ctx), bad,
          ok && bad < tv.count ? (unsigned long long)tv.words[bad] : 0ull,
          bad < (size_t)view_count(&c->v) ? want[bad] : 0.0, text ? text : "");
    free(text);
  } else {
    check_count++;
  }
  free(want);
  if (ok) tensor_value_free(&tv);
}

static void random_chain(Ctx *ctx, Rng *rng, bool is_float) {
  int64_t size = rnd(rng, 25);
  char text[64];
  snprintf(text, sizeof text, "(BUFFER:%s* 0 %lld CPU)", is_float ? "float64" : "int64",
           (long long)size);
  double *data = malloc((size_t)(size ? size : 1) * sizeof *data);
  int64_t *ints = malloc((size_t)(size ? size : 1) * sizeof *ints);
  for (int64_t i = 0; i < size; i++) {
    ints[i] = 1 + rnd(rng, 100);
    data[i] = is_float
                  ? ldexp((double)(int64_t)(rng_next(rng) >> 11) - 0x1p52, (int)rnd(rng, 40) - 72)
                  : (double)ints[i];
  }
  TensorBinding b = bind(ctx, text, is_float ? (void *)data : (void *)ints, (size_t)size * 8);
  int64_t shape[1] = {size};
  Chain c = {ctx,
             rng,
             is_float,
             b.buffer,
             view_dense(malloc((size_t)(size ? size : 1) * sizeof(double)), shape, 1),
             true};
  memcpy(c.v.data, data, (size_t)size * sizeof *data);
  chain_node(&c, UJ_OP_RESHAPE, NULL, shape, 1); /* the BUFFER viewed as a tensor */
  for (int64_t steps = 1 + rnd(rng, 10), i = 0; c.ok && i < steps; i++) {
    switch (rnd(rng, 9)) {
    case 0: step_reshape(&c); break;
    case 1: step_expand(&c); break;
    case 2: step_permute(&c); break;
    case 3: step_flip(&c); break;
    case 4: step_pad_shrink(&c, true); break;
    case 5: step_pad_shrink(&c, false); break;
    case 6: step_reduce(&c); break;
    case 7: step_elementwise(&c); break;
    default: step_reshape(&c); break;
    }
  }
  if (c.ok) chain_compare(&c, &b);
  free(c.v.data);
  free(data);
  free(ints);
}

static void test_random_chains(void) {
  Rng rng = {0x9e3779b97f4a7c15ull};
  for (int round = 0; round < 10; round++) { /* a fresh context now and then */
    Ctx *ctx = uj_ctx_new();
    for (int i = 0; i < 1000; i++) random_chain(ctx, &rng, (i & 1) != 0);
    uj_ctx_free(ctx);
  }
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_movement(ctx);
  test_compositions(ctx);
  test_reduce_axes(ctx);
  test_reduce_order(ctx);
  test_reduce_corners(ctx);
  test_alu(ctx);
  test_dtypes(ctx);
  test_deep(ctx);
  test_errors(ctx);
  uj_ctx_free(ctx);
  test_random_chains();
  return check_report("test_eval_tensor");
}
