/* test_tensor_lanes.c — float sums on the CPU in 16 interleaved partials
 * (lib/opt/lanes.c, docs/opt.md "Lanes"): the tensor API writes "sum over
 * these axes" (docs/tensor.md "Reductions") and the CPU's optimizer, as
 * the target allows reassociation, regroups a sum over L >= 64 elements
 * of one range, L a multiple of 16, as the sum in lane order of 16
 * partial sums, partial j adding elements 16k + j in order of k; one over
 * 2^16 or more (a multiple of 16384) is cut into 1024 contiguous chunks
 * first. A float32 model here computes those bits (and the plain order's
 * for other L): the JIT gives them exactly. Against the tensor evaluator
 * (the plain order) the JIT is within the evaluator's error bound on
 * softmax, layernorm, mean, keepdim, several axes, float32/64/16, sums of
 * products; max with NaN and signed zeros and integer sums, whose order
 * does not matter, bit for bit; the kernels carry 16-lane (32 for max)
 * vector REDUCEs, and a matrix product's reductions none. */
#include "tensor_util.h"

enum { LANES = 16 };

/* A row of n float32 summed in the documented order of lanes, in float. */
static float lane_sum(const float *row, int n) {
  bool split = n >= 64 && n % LANES == 0;
  float total = -0.0f, part[LANES];
  for (int j = 0; j < LANES; j++) part[j] = -0.0f;
  for (int e = 0; e < n; e++)
    if (split) part[e % LANES] += row[e];
    else total += row[e];
  for (int j = 0; split && j < LANES; j++) total += part[j];
  return total;
}

/* Row sums of x (rows x n float32) in the documented order: blocks (n >=
 * 2^16, a multiple of 1024 * 16: 1024 contiguous chunks, each a lane
 * sum, then theirs) or lanes. */
static void model_sums(const float *x, int rows, int n, float *out) {
  enum { BLOCKS = 1024 };
  bool blocked = n >= 1 << 16 && n % (BLOCKS * LANES) == 0;
  static float partial[BLOCKS];
  for (int i = 0; i < rows; i++) {
    const float *row = x + (size_t)i * n;
    for (int c = 0; blocked && c < BLOCKS; c++) partial[c] = lane_sum(row + (size_t)c * (n / BLOCKS), n / BLOCKS);
    out[i] = blocked ? lane_sum(partial, BLOCKS) : lane_sum(row, n);
  }
}

static void serial_sums(const float *x, int rows, int n, float *out) {
  for (int i = 0; i < rows; i++) {
    out[i] = -0.0f;
    for (int e = 0; e < n; e++) out[i] += x[(size_t)i * n + e];
  }
}

/* Row sums over L (odd, even, below and above the threshold) equal the
 * model bit for bit, and the evaluator; the order is really the lanes'. */
static void test_row_sums(uj_session *s, Rng *r) {
  static const int lens[] = {17, 48, 63, 64, 100, 256, 1000, 1008, 4096, 4097, 1 << 16, (1 << 16) + 1024, 1 << 17};
  enum { ROWS = 6 };
  bool differs = false;
  for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
    int n = lens[c];
    float *x = malloc((size_t)ROWS * n * sizeof *x), want[ROWS], serial[ROWS], got[ROWS];
    for (int i = 0; i < ROWS * n; i++)
      x[i] = (float)rng_uniform(r, -1, 1) * (float)(1 << rng_int(r, 12));
    model_sums(x, ROWS, n, want), serial_sums(x, ROWS, n, serial);
    uj_tensor *t = uj_tensor_reduce(UJ_RED_SUM, tf32(s, SHAPE(ROWS, n), x), (int[]){-1}, 1, false);
    char what[64];
    snprintf(what, sizeof what, "row sums of %d", n);
    double *v = values(s, t, BOUNDED, what);
    for (int i = 0; v && i < ROWS; i++) got[i] = (float)v[i];
    CHECK(v && !memcmp(got, want, sizeof want),
          "%s: the JIT's bits are the documented order's (row 0: %.9g, want %.9g)", what,
          v ? got[0] : 0.0, (double)want[0]);
    differs |= n % LANES == 0 && n >= 64 && memcmp(want, serial, sizeof want) != 0;
    free(v), free(x);
  }
  CHECK(differs, "the data shows the order: some lane sum differs from the plain one");
}

/* dtypes, keepdim, several axes, mean: the JIT within the evaluator's
 * bounds, and every sum (its last axis contiguous) in 16-lane vectors. */
static void test_shapes(uj_session *s, Rng *r) {
  double *v;
  uj_tensor *x = random_f32(s, r, SHAPE(3, 8, 64), -2, 2, false, &v);
  free(v);
  static const uj_scalar dts[] = {UJ_FLOAT32, UJ_FLOAT64, UJ_FLOAT16};
  static const char *const vec[] = {"REDUCE:float32x16 ADD", "REDUCE:float64x16 ADD",
                                    "REDUCE:float16x16 ADD"};
  for (int d = 0; d < 3; d++)
    for (int keep = 0; keep < 2; keep++) {
      uj_tensor *xd = uj_tensor_cast(x, dts[d]);
      uj_tensor *sums[4] = {
          uj_tensor_reduce(UJ_RED_SUM, xd, (int[]){2}, 1, keep),    /* 64: lanes */
          uj_tensor_reduce(UJ_RED_SUM, xd, (int[]){1, 2}, 2, keep), /* 512 trailing: lanes */
          uj_tensor_reduce(UJ_RED_MEAN, xd, (int[]){-1, -2}, 2, keep),
          uj_tensor_reduce(UJ_RED_SUM, xd, (int[]){0, 2}, 2, keep), /* not trailing: axis 2 still in lanes */
      };
      char what[64];
      for (int k = 0; k < 4; k++) { /* before any is realized: they share nodes */
        snprintf(what, sizeof what, "dtype %d keepdim %d case %d", (int)dts[d], keep, k);
        CHECK(kernels_have(sums[k], vec[d]), "%s: wants a %s", what, vec[d]);
      }
      for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "dtype %d keepdim %d case %d", (int)dts[d], keep, k);
        free(values(s, sums[k], BOUNDED, what));
      }
    }
}

/* softmax and layernorm rows (sums of exp, means, sums of squares): the
 * JIT within the evaluator's bounds, and so are values computed in
 * double. */
static void test_softmax_layernorm(uj_session *s, Rng *r) {
  double *v;
  enum { R = 4, N = 768 };
  uj_tensor *x = random_f32(s, r, SHAPE(R, N), -4, 4, false, &v);
  int axis = -1;
  uj_tensor *sm = uj_tensor_softmax(x, -1), *lsm = uj_tensor_log_softmax(x, -1);
  CHECK(kernels_have(sm, "REDUCE:float32x16 ADD") && kernels_have(sm, "REDUCE:float32x32 MAX"),
        "softmax: lane sums and maxes");
  uj_tensor *mean = uj_tensor_reduce(UJ_RED_MEAN, x, &axis, 1, true),
            *d = uj_tensor_binary(UJ_BIN_SUB, x, mean);
  uj_tensor *var =
      uj_tensor_reduce(UJ_RED_MEAN, uj_tensor_binary(UJ_BIN_MUL, d, d), &axis, 1, true);
  uj_tensor *ln = uj_tensor_binary(
      UJ_BIN_DIV, d,
      uj_tensor_unary(UJ_UN_SQRT, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false)));
  CHECK(kernels_have(var, "REDUCE:float32x16"), "layernorm's variance: a lane sum");
  /* lane sums, and exp within an ulp or two of the evaluator's (docs/transcendental.md): the JIT within the
   * evaluator's bounds, and so is the float64 value computed here */
  double *e_sm = NULL, *e_lsm = NULL, *e_ln = NULL;
  double *got_sm = values_bounds(s, sm, BOUNDED, "softmax", &e_sm),
         *got_lsm = values_bounds(s, lsm, BOUNDED, "log_softmax", &e_lsm);
  double *got_ln = values_bounds(s, ln, BOUNDED, "layernorm", &e_ln);
  for (int i = 0; got_sm && got_lsm && got_ln && e_sm && e_lsm && e_ln && i < R; i++) {
    double m = -INFINITY, sum = 0, mu = 0, sq = 0;
    for (int j = 0; j < N; j++) m = fmax(m, v[i * N + j]), mu += v[i * N + j] / N;
    for (int j = 0; j < N; j++)
      sum += exp(v[i * N + j] - m), sq += (v[i * N + j] - mu) * (v[i * N + j] - mu) / N;
    for (int j = 0; j < N; j += 97) {
      int k = i * N + j;
      CHECK(close_to(got_sm[k], exp(v[k] - m) / sum, (Tol){0, e_sm[k], false}), "softmax [%d, %d]", i, j);
      CHECK(close_to(got_lsm[k], v[k] - m - log(sum), (Tol){0, e_lsm[k], false}), "log_softmax [%d, %d]", i, j);
      CHECK(close_to(got_ln[k], (v[k] - mu) / sqrt(sq + 1e-5), (Tol){0, e_ln[k], false}), "layernorm [%d, %d]", i, j);
    }
  }
  free(e_sm), free(e_lsm), free(e_ln);
  free(got_sm), free(got_lsm), free(got_ln), free(v);
}

/* A sum of products stays fused where the plain sum is (MULACC); a max
 * with NaN and signed zeros; an integer sum; the two-stage big sum ends
 * in a lane sum. */
static void test_special(uj_session *s, Rng *r) {
  double *v, *v2;
  uj_tensor *a = random_f32(s, r, SHAPE(4, 512), -1, 1, false, &v),
            *b = uj_tensor_unary(UJ_UN_SIN, a);
  free(v);
  uj_tensor *ab = uj_tensor_binary(UJ_BIN_MUL, a, b);
  uj_tensor *dot = uj_tensor_reduce(UJ_RED_SUM, ab, (int[]){-1}, 1, false);
  uj_tensor *a8 = random_f32(s, r, SHAPE(4, 8), -1, 1, false, &v);
  free(v);
  uj_tensor *shortdot =
      uj_tensor_reduce(UJ_RED_SUM, uj_tensor_binary(UJ_BIN_MUL, a8, a8), (int[]){-1}, 1, false);
  bool fused = kernels_have(shortdot, "MULACC");
  CHECK(kernels_have(dot, fused ? "REDUCE:float32x16 MULACC" : "REDUCE:float32x16 ADD"),
        "a row of products: %s lanes", fused ? "fused" : "plain");
  free(values(s, dot, BOUNDED, "a row of products"));
  uj_tensor *m1 = random_f32(s, r, SHAPE(8, 64), -1, 1, false, &v), *m2 = random_f32(s, r, SHAPE(64, 64), -1, 1, false, &v2);
  free(v), free(v2);
  free(values(s, uj_tensor_matmul(m1, uj_tensor_transpose(m2, 0, 1)), BOUNDED, "a @ b.T"));
  float z[4 * 256];
  for (int i = 0; i < 4 * 256; i++) z[i] = i % 3 ? -0.0f : 0.0f;
  for (int i = 256; i < 512; i++) z[i] = -0.0f; /* row 1: all -0.0 */
  z[2 * 256 + 77] = NAN;
  uj_tensor *mz = uj_tensor_reduce(UJ_RED_MAX, tf32(s, SHAPE(4, 256), z), (int[]){1}, 1, false);
  CHECK(kernels_have(mz, "REDUCE:float32x32 MAX"), "a row max: 32 lanes");
  uint64_t *w = jit_words(s, mz, "max of signed zeros");
  TensorValue want = {0};
  if (w && evaluate(s, mz, &want, "max of signed zeros"))
    check_against_evaluator(s, mz, &want, w, EXACT, "max of signed zeros");
  CHECK(w && word_value(UJ_FLOAT32, w[0]) == 0 && !signbit(word_value(UJ_FLOAT32, w[0])),
        "max(-0, +0) = +0");
  CHECK(w && signbit(word_value(UJ_FLOAT32, w[1])), "max(-0, -0) = -0");
  CHECK(w && isnan(word_value(UJ_FLOAT32, w[2])), "a NaN wins");
  tensor_value_free(&want), free(w);
  double *zs =
      values(s, uj_tensor_reduce(UJ_RED_SUM, tf32(s, SHAPE(4, 256), z), (int[]){1}, 1, false),
             BOUNDED, "sums of zeros");
  CHECK(zs && signbit(zs[1]) && !signbit(zs[0]),
        "a lane sum of -0.0s is -0.0 (its partials start at -0.0), with a +0.0 it is +0.0");
  free(zs);
  uj_tensor *ints = uj_tensor_cast(uj_tensor_binary_scalar(UJ_BIN_MUL, a, 1e6, false), UJ_INT32);
  uj_tensor *isum = uj_tensor_reduce(UJ_RED_SUM, ints, (int[]){-1}, 1, false);
  CHECK(kernels_have(isum, "REDUCE:int32x32 ADD"), "an int32 row sum: 32 lanes");
  free(values(s, isum, EXACT, "int32 row sums"));
  uj_tensor *big = uj_tensor_reduce(
      UJ_RED_SUM, uj_tensor_reshape(uj_tensor_cast(ints, UJ_FLOAT32), SHAPE(2, 1024)), NULL, 0,
      false);
  free(values(s, big, BOUNDED, "a sum of 2048 over all axes"));
  double *x2;
  uj_tensor *huge = random_f32(s, r, SHAPE(2, 1 << 16), -1, 1, false, &x2);
  uj_tensor *hs = uj_tensor_reduce(UJ_RED_SUM, huge, (int[]){1}, 1, true);
  CHECK(uj_tensor_kernel_count(hs) == 2 && kernels_have(hs, "REDUCE:float32x16 ADD"),
        "2^16: partials, then a lane sum");
  free(values(s, hs, BOUNDED, "two stages")), free(x2);
}

int main(void) {
  const char *error = NULL;
  uj_session *s = uj_session_new("CPU", &error);
  CHECK(s != NULL, "session: %s", error ? error : "?");
  if (!s) return check_report("test_tensor_lanes");
  Rng r = {0x9E3779B97F4A7C15ull};
  test_row_sums(s, &r);
  test_shapes(s, &r);
  test_softmax_layernorm(s, &r);
  test_special(s, &r);
  uj_session_free(s);
  return check_report("test_tensor_lanes");
}
