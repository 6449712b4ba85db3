/* test_tensor_attention.c — softmax(q k^T / sqrt(d) + mask) v through the
 * tensor API: one kernel (online softmax, docs/schedule.md "Online
 * fusion"; k first copied transposed when it runs in chunks), its values
 * against a float64 reference computed here and against the reference
 * evaluator, both within the evaluator's error bound (the online softmax
 * regroups the sums: docs/semantics.md "Reassociation"): sizes that are a multiple of the chunk of 16 and that are
 * not, d of 8 and 64, a causal mask, a row all masked (NaN, as the
 * unfused formula gives), several heads and batches. */
#include <stdio.h>

#include "tensor_util.h"

/* The attention of q, k, v (b, h, t, d) with mask (t, t) added to the
 * scaled scores (NULL: none), in float64. */
/* The session's device is the CPU (UJ_DEVICE unset or CPU; ctest also
 * runs this on EVAL). */
static bool on_cpu(void) {
  const char *d = getenv("UJ_DEVICE");
  return !d || !*d || !strcmp(d, "CPU");
}

static double *reference(const double *q, const double *k, const double *v, const double *mask, int64_t bh, int64_t t,
                         int64_t d) {
  double *out = malloc((size_t)(bh * t * d) * sizeof *out), *s = malloc((size_t)t * sizeof *s);
  for (int64_t h = 0; h < bh; h++)
    for (int64_t i = 0; i < t; i++) {
      double m = -INFINITY, l = 0;
      for (int64_t j = 0; j < t; j++) {
        double a = 0;
        for (int64_t e = 0; e < d; e++) a += q[(h * t + i) * d + e] * k[(h * t + j) * d + e];
        s[j] = a / sqrt((double)d) + (mask ? mask[i * t + j] : 0);
        m = s[j] > m ? s[j] : m;
      }
      for (int64_t j = 0; j < t; j++) l += exp(s[j] - m);
      for (int64_t c = 0; c < d; c++) {
        double a = 0;
        for (int64_t j = 0; j < t; j++) a += exp(s[j] - m) / l * v[(h * t + j) * d + c];
        out[(h * t + i) * d + c] = a;
      }
    }
  free(s);
  return out;
}

/* mask: 0 none, 1 causal (-inf above the diagonal), 2 causal with row 1 all -inf. */
static void check(uj_session *s, Rng *r, int64_t b, int64_t h, int64_t t, int64_t d, int mask) {
  char what[96];
  snprintf(what, sizeof what, "attention %lldx%lldx%lldx%lld%s", (long long)b, (long long)h, (long long)t, (long long)d,
           mask == 2 ? ", a row masked" : mask ? ", causal" : "");
  double *hq, *hk, *hv, *hm = NULL;
  uj_tensor *q = random_f32(s, r, SHAPE(b, h, t, d), -2, 2, false, &hq);
  uj_tensor *k = random_f32(s, r, SHAPE(b, h, t, d), -2, 2, false, &hk);
  uj_tensor *v = random_f32(s, r, SHAPE(b, h, t, d), -2, 2, false, &hv);
  uj_tensor *scores = uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_matmul(q, uj_tensor_transpose(k, -2, -1)),
                                              1.0 / sqrt((double)d), false);
  if (mask) {
    float *m = malloc((size_t)(t * t) * sizeof *m);
    hm = malloc((size_t)(t * t) * sizeof *hm);
    for (int64_t i = 0; i < t; i++)
      for (int64_t j = 0; j < t; j++) hm[i * t + j] = m[i * t + j] = j > i || (mask == 2 && i == 1) ? -INFINITY : 0;
    scores = uj_tensor_binary(UJ_BIN_ADD, scores, tf32(s, SHAPE(t, t), m));
    free(m);
  }
  uj_tensor *out = uj_tensor_matmul(uj_tensor_softmax(scores, -1), v);
  /* in chunks of 16 (t a multiple), k is first copied transposed (its lanes then load one vector);
   * the CPU's schedule (on EVAL, shaped for sm_90, attention is not one kernel yet) */
  size_t kernels = t % 16 == 0 && t >= 32 ? 2 : 1;
  CHECK(!on_cpu() || uj_tensor_kernel_count(out) == kernels, "%s: %zu kernels, want %zu", what, uj_tensor_kernel_count(out), kernels);
  /* the library's attention (its causal mask made in the kernel): the same kernels, the same values
   * (without a mask, the same graph as out: counted before out is computed) */
  char lib[128];
  snprintf(lib, sizeof lib, "%s, uj_tensor_attention", what);
  uj_tensor *att = mask < 2 ? uj_tensor_attention(q, k, v, mask == 1) : NULL;
  CHECK(!on_cpu() || !att || uj_tensor_kernel_count(att) == kernels, "%s: %zu kernels, want %zu", lib, uj_tensor_kernel_count(att), kernels);
  double *want = reference(hq, hk, hv, hm, b * h, t, d);
  expect(s, out, SHAPE(b, h, t, d), want, BOUNDED, what);
  if (att) expect(s, att, SHAPE(b, h, t, d), want, BOUNDED, lib);
  free(hq), free(hk), free(hv), free(hm), free(want);
}

/* A causal self-attention block: x (t, c) projected to q, k, v, split in
 * heads, attention, heads joined, projected out; in one graph. The
 * attention is one kernel there too: the projections stay kernels of
 * their own (q, k, v, k transposed, the attention, the output: 6). */
static void check_block(uj_session *s, Rng *r, int64_t t, int64_t c, int64_t heads) {
  int64_t d = c / heads;
  double *hx, *hw[4];
  uj_tensor *x = random_f32(s, r, SHAPE(t, c), -1, 1, false, &hx), *w[4], *proj[3];
  for (int i = 0; i < 4; i++) w[i] = random_f32(s, r, SHAPE(c, c), -0.3, 0.3, false, &hw[i]);
  for (int i = 0; i < 3; i++)
    proj[i] = uj_tensor_transpose(uj_tensor_reshape(uj_tensor_matmul(x, w[i]), SHAPE(t, heads, d)), 0, 1);
  float *m = malloc((size_t)(t * t) * sizeof *m);
  double *hm = malloc((size_t)(t * t) * sizeof *hm);
  for (int64_t i = 0; i < t * t; i++) hm[i] = m[i] = i % t > i / t ? -INFINITY : 0;
  uj_tensor *scores = uj_tensor_binary(UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_matmul(proj[0],
                                       uj_tensor_transpose(proj[1], -2, -1)), 1.0 / sqrt((double)d), false),
                                       tf32(s, SHAPE(t, t), m));
  uj_tensor *att = uj_tensor_matmul(uj_tensor_softmax(scores, -1), proj[2]);
  uj_tensor *y = uj_tensor_matmul(uj_tensor_reshape(uj_tensor_transpose(att, 0, 1), SHAPE(t, c)), w[3]);
  CHECK(!on_cpu() || uj_tensor_kernel_count(y) == 6, "attention block: %zu kernels, want 6", uj_tensor_kernel_count(y));
  double *p[3], *heads_out = malloc((size_t)(t * c) * sizeof *heads_out), *want = malloc((size_t)(t * c) * sizeof *want);
  for (int i = 0; i < 3; i++) { /* (heads, t, d) */
    p[i] = malloc((size_t)(t * c) * sizeof *p[i]);
    for (int64_t h = 0; h < heads; h++)
      for (int64_t a = 0; a < t; a++)
        for (int64_t e = 0; e < d; e++) {
          double v = 0;
          for (int64_t k = 0; k < c; k++) v += hx[a * c + k] * hw[i][k * c + h * d + e];
          p[i][(h * t + a) * d + e] = v;
        }
  }
  double *o = reference(p[0], p[1], p[2], hm, heads, t, d);
  for (int64_t h = 0; h < heads; h++)
    for (int64_t a = 0; a < t; a++)
      for (int64_t e = 0; e < d; e++) heads_out[a * c + h * d + e] = o[(h * t + a) * d + e];
  for (int64_t a = 0; a < t; a++)
    for (int64_t e = 0; e < c; e++) {
      double v = 0;
      for (int64_t k = 0; k < c; k++) v += heads_out[a * c + k] * hw[3][k * c + e];
      want[a * c + e] = v;
    }
  expect(s, y, SHAPE(t, c), want, BOUNDED, "attention block");
  for (int i = 0; i < 3; i++) free(p[i]);
  for (int i = 0; i < 4; i++) free(hw[i]);
  free(hx), free(m), free(hm), free(o), free(heads_out), free(want);
}

int main(void) {
  uj_session *s = suite_session("test_tensor_attention");
  Rng r = {0x5eed};
  check(s, &r, 1, 2, 37, 8, 0);  /* not a multiple of the chunk: one loop over j */
  check(s, &r, 2, 3, 64, 64, 0); /* in chunks of 16, the whole row of the output in registers */
  check(s, &r, 1, 2, 48, 16, 1);
  check(s, &r, 1, 1, 33, 8, 2);
  check(s, &r, 1, 2, 32, 8, 2);
  check_block(s, &r, 48, 64, 4);
  uj_session_free(s);
  return check_report("test_tensor_attention");
}
