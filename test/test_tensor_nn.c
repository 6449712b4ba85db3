/* test_tensor_nn.c — matmul, conv2d and pooling of tensor.h against naive
 * C loops in double and the reference evaluator (tensor_util.h): matmul
 * at 1x1x1, 7x13x5 and 127x255x63, batched with broadcasting, vectors,
 * int32 exactly; conv2d in 24 configurations of stride, padding,
 * dilation, groups, bias and kernel shape; max and average pooling. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

/* ---- matmul ---- */

/* c = a @ b for (M, K) @ (K, N) in double, and the sum of |a||b| each. */
static void naive_matmul(const double *a, const double *b, int64_t M, int64_t K, int64_t N,
                         double *c, double *mag) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0, m = 0;
      for (int64_t k = 0; k < K; k++)
        acc += a[i * K + k] * b[k * N + j], m += fabs(a[i * K + k] * b[k * N + j]);
      c[i * N + j] = acc, mag[i * N + j] = m;
    }
}

/* got is within rel of want, relative to the sum of magnitudes. */
static void expect_sums(uj_session *s, uj_tensor *t, const int64_t *shape, unsigned nd,
                        const double *want, const double *mag, double rel, Tol eval_tol,
                        const char *what) {
  if (!t || !shape_is(t, shape, nd, what)) {
    CHECK(t != NULL, "%s: %s", what, uj_session_error(s));
    return;
  }
  double *got = values(s, t, eval_tol, what);
  int64_t n = shape_numel(shape, nd), bad = 0;
  for (int64_t i = 0; got && i < n; i++)
    if (!(fabs(got[i] - want[i]) <= rel * mag[i] + 1e-30) && bad++ < 4)
      CHECK(false, "%s: element %lld is %.9g, want %.9g", what, (long long)i, got[i], want[i]);
  CHECK(bad == 0, "%s: %lld of %lld elements wrong", what, (long long)bad, (long long)n);
  free(got);
}

static void test_matmul_size(uj_session *s, Rng *r, int64_t M, int64_t K, int64_t N,
                             bool evaluator) {
  double *a, *b, *c = malloc((size_t)(M * N) * sizeof *c),
                 *mag = malloc((size_t)(M * N) * sizeof *mag);
  uj_tensor *ta = random_f32(s, r, SHAPE(M, K), -1, 1, false, &a),
            *tb = random_f32(s, r, SHAPE(K, N), -1, 1, false, &b);
  naive_matmul(a, b, M, K, N, c, mag);
  char what[64];
  snprintf(what, sizeof what, "matmul %lldx%lldx%lld", (long long)M, (long long)K, (long long)N);
  expect_sums(s, uj_tensor_matmul(ta, tb), SHAPE(M, N), c, mag, 1e-4,
              evaluator ? (Tol){1e-4, 1e-5, false} : (Tol){-1, 0, false}, what);
  free(a), free(b), free(c), free(mag);
}

static void test_matmul(uj_session *s, Rng *r) {
  test_matmul_size(s, r, 1, 1, 1, true);
  test_matmul_size(s, r, 7, 13, 5, true);
  test_matmul_size(s, r, 127, 255, 63, true);
  test_matmul_size(s, r, 64, 96, 64, true);  /* blocked 8 x 32, tiles, a staged panel (docs/opt.md) */
  test_matmul_size(s, r, 48, 72, 24, true);  /* blocked 8 x 8 on AVX-512 */
  const char *device = getenv("UJ_DEVICE");
  if (!device || !strcmp(device, "CPU")) { /* a long k, cut in 5 chunks of 4096 on the CPU (docs/schedule.md "Long sums") */
    test_matmul_size(s, r, 64, 20480, 64, false);
    uj_tensor *a = uj_tensor_ones(s, UJ_FLOAT32, SHAPE(64, 20480)), *b = uj_tensor_ones(s, UJ_FLOAT32, SHAPE(20480, 64));
    uj_tensor *c = uj_tensor_matmul(a, b);
    CHECK(uj_tensor_kernel_count(c) == 2, "a GEMM over k 20480: %zu kernels, not the chunks' and their sum", uj_tensor_kernel_count(c));
    uj_tensor_free(a), uj_tensor_free(b), uj_tensor_free(c);
  }
  /* batched: (2,1,3,4) @ (5,4,2) -> (2,5,3,2) */
  double *a, *b, c[60], mag[60], want[60], wmag[60];
  uj_tensor *ta = random_f32(s, r, SHAPE(2, 1, 3, 4), -1, 1, false, &a),
            *tb = random_f32(s, r, SHAPE(5, 4, 2), -1, 1, false, &b);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 5; j++) {
      naive_matmul(a + i * 12, b + j * 8, 3, 4, 2, c, mag);
      memcpy(want + (i * 5 + j) * 6, c, 6 * sizeof *c),
          memcpy(wmag + (i * 5 + j) * 6, mag, 6 * sizeof *mag);
    }
  expect_sums(s, uj_tensor_matmul(ta, tb), SHAPE(2, 5, 3, 2), want, wmag, 1e-5, (Tol){1e-5, 1e-6, false},
              "batched matmul");
  free(a), free(b);
  /* vectors */
  double *v, *m, *w;
  uj_tensor *tv = random_f32(s, r, SHAPE(4), -1, 1, false, &v),
            *tm = random_f32(s, r, SHAPE(4, 3), -1, 1, false, &m);
  uj_tensor *tw = random_f32(s, r, SHAPE(3), -1, 1, false, &w);
  naive_matmul(v, m, 1, 4, 3, c, mag);
  expect_sums(s, uj_tensor_matmul(tv, tm), SHAPE(3), c, mag, 1e-5, (Tol){1e-5, 1e-6, false},
              "vector @ matrix");
  naive_matmul(m, w, 4, 3, 1, c, mag);
  expect_sums(s, uj_tensor_matmul(tm, tw), SHAPE(4), c, mag, 1e-5, (Tol){1e-5, 1e-6, false},
              "matrix @ vector");
  naive_matmul(v, v, 1, 4, 1, c, mag);
  expect_sums(s, uj_tensor_matmul(tv, tv), NULL, 0, c, mag, 1e-5, (Tol){1e-5, 1e-6, false},
              "vector @ vector");
  free(v), free(m), free(w);
  /* int32: exact */
  int32_t ia[7 * 13], ib[13 * 5];
  double da[7 * 13], db[13 * 5], dc[35], dm[35];
  for (int i = 0; i < 7 * 13; i++) ia[i] = rng_int(r, 41) - 20, da[i] = ia[i];
  for (int i = 0; i < 13 * 5; i++) ib[i] = rng_int(r, 41) - 20, db[i] = ib[i];
  naive_matmul(da, db, 7, 13, 5, dc, dm);
  uj_tensor *im = uj_tensor_matmul(ti32(s, SHAPE(7, 13), ia), ti32(s, SHAPE(13, 5), ib));
  expect_dtype(im, UJ_INT32, "int32 matmul");
  expect(s, im, SHAPE(7, 5), dc, EXACT, "int32 matmul");
  uj_tensor *mixed = uj_tensor_matmul(ti32(s, SHAPE(7, 13), ia),
                                      tf32(s, SHAPE(13, 1), (const float[13]){0.5f, 0.5f}));
  expect_dtype(mixed, UJ_FLOAT32, "int32 @ float32");
}

/* ---- conv2d and pooling ---- */

typedef struct ConvCase {
  int64_t N, C, H, W, O, KH, KW, stride[2], pad[2], dil[2], groups;
  bool bias;
} ConvCase;

static int64_t conv_out(int64_t n, int64_t k, int64_t st, int64_t pd, int64_t d) {
  return (n + 2 * pd - d * (k - 1) - 1) / st + 1;
}

static void naive_conv(const ConvCase *c, const double *x, const double *w, const double *b,
                       double *out, double *mag) {
  int64_t OH = conv_out(c->H, c->KH, c->stride[0], c->pad[0], c->dil[0]),
          OW = conv_out(c->W, c->KW, c->stride[1], c->pad[1], c->dil[1]);
  int64_t Cg = c->C / c->groups, Og = c->O / c->groups;
  for (int64_t n = 0; n < c->N; n++)
    for (int64_t o = 0; o < c->O; o++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = b ? b[o] : 0, m = b ? fabs(b[o]) : 0;
          for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t kh = 0; kh < c->KH; kh++)
              for (int64_t kw = 0; kw < c->KW; kw++) {
                int64_t ih = oh * c->stride[0] - c->pad[0] + kh * c->dil[0],
                        iw = ow * c->stride[1] - c->pad[1] + kw * c->dil[1];
                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                int64_t ch = o / Og * Cg + ci;
                double p = x[((n * c->C + ch) * c->H + ih) * c->W + iw] *
                           w[((o * Cg + ci) * c->KH + kh) * c->KW + kw];
                acc += p, m += fabs(p);
              }
          int64_t at = ((n * c->O + o) * OH + oh) * OW + ow;
          out[at] = acc, mag[at] = m;
        }
}

static void test_conv2d(uj_session *s, Rng *r) {
  static const ConvCase cases[] = {
      {1, 1, 5, 5, 1, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {2, 3, 6, 7, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {1, 2, 8, 8, 3, 3, 3, {2, 2}, {0, 0}, {1, 1}, 1, true},
      {1, 2, 9, 7, 2, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, false},
      {1, 3, 7, 7, 2, 3, 3, {1, 1}, {2, 2}, {1, 1}, 1, true},
      {1, 2, 9, 9, 2, 3, 3, {1, 1}, {0, 0}, {2, 2}, 1, false},
      {1, 2, 9, 8, 3, 3, 3, {1, 1}, {2, 2}, {2, 2}, 1, true},
      {1, 4, 6, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, true},
      {1, 4, 6, 6, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 4, false},
      {2, 4, 7, 5, 4, 3, 2, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {1, 2, 6, 9, 2, 2, 3, {1, 2}, {1, 0}, {1, 1}, 1, false},
      {1, 2, 8, 6, 2, 3, 2, {2, 1}, {0, 1}, {1, 2}, 1, true},
      {1, 4, 10, 10, 4, 3, 3, {2, 2}, {2, 2}, {2, 2}, 2, true},
      {1, 3, 5, 5, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {1, 2, 4, 4, 2, 4, 4, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {1, 1, 7, 7, 1, 2, 2, {2, 2}, {0, 0}, {1, 1}, 1, false},
      {1, 1, 7, 7, 1, 2, 2, {3, 3}, {1, 1}, {1, 1}, 1, true},
      {1, 8, 5, 5, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 8, false},
      {1, 4, 6, 7, 2, 1, 3, {1, 2}, {0, 1}, {1, 1}, 2, true},
      {3, 1, 4, 6, 2, 3, 1, {1, 1}, {1, 0}, {1, 1}, 1, false},
      {1, 2, 11, 11, 2, 3, 3, {3, 2}, {1, 2}, {2, 1}, 1, true},
      {2, 4, 5, 5, 4, 2, 2, {1, 1}, {2, 2}, {1, 1}, 4, true},
      {1, 3, 6, 6, 3, 5, 5, {1, 1}, {2, 2}, {1, 1}, 3, false},
      {1, 2, 12, 5, 2, 3, 2, {4, 1}, {1, 1}, {3, 1}, 2, true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const ConvCase *c = &cases[i];
    double *x, *w, *b = NULL;
    uj_tensor *tx = random_f32(s, r, SHAPE(c->N, c->C, c->H, c->W), -1, 1, false, &x);
    uj_tensor *tw = random_f32(s, r, SHAPE(c->O, c->C / c->groups, c->KH, c->KW), -1, 1, false, &w);
    uj_tensor *tb = c->bias ? random_f32(s, r, SHAPE(c->O), -1, 1, false, &b) : NULL;
    int64_t OH = conv_out(c->H, c->KH, c->stride[0], c->pad[0], c->dil[0]),
            OW = conv_out(c->W, c->KW, c->stride[1], c->pad[1], c->dil[1]);
    int64_t n = c->N * c->O * OH * OW;
    double *out = malloc((size_t)n * sizeof *out), *mag = malloc((size_t)n * sizeof *mag);
    naive_conv(c, x, w, b, out, mag);
    char what[96];
    snprintf(what, sizeof what, "conv2d case %zu", i);
    bool defaults = c->stride[0] == 1 && c->stride[1] == 1 && c->dil[0] == 1 && c->dil[1] == 1 &&
                    !c->pad[0] && !c->pad[1];
    uj_tensor *y = defaults ? uj_tensor_conv2d(tx, tw, tb, NULL, NULL, NULL, c->groups)
                            : uj_tensor_conv2d(tx, tw, tb, c->stride, c->pad, c->dil, c->groups);
    expect_sums(s, y, SHAPE(c->N, c->O, OH, OW), out, mag, 1e-5, (Tol){1e-5, 1e-6, false}, what);
    free(x), free(w), free(b), free(out), free(mag);
  }
}

static void naive_pool(const double *x, int64_t B, int64_t H, int64_t W, const int64_t *k,
                       const int64_t *st, const int64_t *pd, bool max, double *out) {
  int64_t OH = (H + 2 * pd[0] - k[0]) / st[0] + 1, OW = (W + 2 * pd[1] - k[1]) / st[1] + 1;
  for (int64_t b = 0; b < B; b++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double acc = max ? -INFINITY : 0;
        int count = 0;
        for (int64_t i = 0; i < k[0]; i++)
          for (int64_t j = 0; j < k[1]; j++) {
            int64_t h = oh * st[0] - pd[0] + i, w = ow * st[1] - pd[1] + j;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            double v = x[(b * H + h) * W + w];
            acc = max ? fmax(acc, v) : acc + v, count++;
          }
        out[(b * OH + oh) * OW + ow] = max ? acc : acc / count;
      }
}

static void test_pool(uj_session *s, Rng *r) {
  static const int64_t cfg[][6] = {
      /* kernel h w, stride h w (0: the kernel), padding h w */
      {2, 2, 0, 0, 0, 0}, {3, 3, 1, 1, 1, 1}, {3, 3, 2, 2, 1, 1},
      {2, 3, 1, 2, 1, 0}, {3, 2, 2, 1, 0, 1}, {1, 1, 2, 2, 0, 0},
      {4, 4, 2, 3, 2, 2}, {5, 3, 1, 1, 2, 1}, {2, 2, 3, 3, 1, 1},
  };
  double *x, out[600];
  const int64_t H = 7, W = 8;
  uj_tensor *tx = random_f32(s, r, SHAPE(2, 3, H, W), -5, 5, false, &x);
  for (size_t i = 0; i < sizeof cfg / sizeof *cfg; i++)
    for (int max = 0; max < 2; max++) {
      const int64_t *k = cfg[i], *pd = cfg[i] + 4;
      const int64_t *st = cfg[i][2] ? cfg[i] + 2 : k;
      int64_t OH = (H + 2 * pd[0] - k[0]) / st[0] + 1, OW = (W + 2 * pd[1] - k[1]) / st[1] + 1;
      naive_pool(x, 6, H, W, k, st, pd, max, out);
      char what[64];
      snprintf(what, sizeof what, "%s config %zu", max ? "maxpool2d" : "avgpool2d", i);
      const int64_t *pass_pd = pd[0] || pd[1] ? pd : NULL, *pass_st = cfg[i][2] ? st : NULL;
      uj_tensor *y = max ? uj_tensor_maxpool2d(tx, k, pass_st, pass_pd)
                         : uj_tensor_avgpool2d(tx, k, pass_st, pass_pd);
      expect(s, y, SHAPE(2, 3, OH, OW), out, max ? EXACT : (Tol){1e-6, 1e-6, false}, what);
    }
  free(x);
  /* 2-D input, int32 max pool (pads with the lowest int) */
  int32_t iv[12] = {-5, -3, -8, -1, -9, -2, -7, -4, -6, -10, -11, -12};
  uj_tensor *it = ti32(s, SHAPE(3, 4), iv);
  double dv[12];
  for (int i = 0; i < 12; i++) dv[i] = iv[i];
  const int64_t two[2] = {2, 2}, one[2] = {1, 1};
  uj_tensor *mp = uj_tensor_maxpool2d(it, two, one, one);
  expect_dtype(mp, UJ_INT32, "maxpool int32");
  naive_pool(dv, 1, 3, 4, two, one, one, true, out);
  expect(s, mp, SHAPE(4, 5), out, EXACT, "maxpool int32 with padding");
  uj_tensor *ap = uj_tensor_avgpool2d(it, two, NULL, NULL);
  expect_dtype(ap, UJ_FLOAT32, "avgpool of int32 is float32");
  expect(s, ap, SHAPE(1, 2), VALS(-4.75, -5), EXACT, "avgpool int32");
}

int main(int argc, char **argv) {
  uj_session *s = suite_session("test_tensor_nn");
  Rng r = {0x2545F4914F6CDD1Dull};
  test_matmul(s, &r);
  test_conv2d(s, &r);
  test_pool(s, &r);
  (void)argc, (void)argv;
  uj_session_free(s);
  return check_report("test_tensor_nn");
}
