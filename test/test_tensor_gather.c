/* test_tensor_gather.c — gather as a load at a data-dependent index and
 * its gradient as a scatter-add (docs/schedule.md, "Gather and scatter"):
 * gathers along every axis of random shapes with indices of several
 * dtypes, negative and past the end (zeros there), on float, int and bool
 * data; the gradient of a gather (a SCATTER: zeros, then STORE_ADDs) with
 * repeated indices against sums made here in the same order; an embedding
 * table of 50257 rows, whose kernels must hold no REDUCE and no compare
 * over the vocabulary; the optimizer writing a scattered gradient into its
 * own buffer; kernel names. Each value is checked against the evaluator
 * too (tensor_util.h). On a GPU the additions are atomic, in any order:
 * there the gradients are checked within the evaluator's bounds. */
#include "tensor_util.h"

static const char *dname(uj_scalar d) {
  static char b[4][16];
  static int at;
  at = (at + 1) % 4;
  return uj_dtype_name((uj_dtype){d, UJ_AS_NONE, 1}, b[at], sizeof b[at]);
}

static Tol scatter_tol(void) {
  const char *d = getenv("UJ_DEVICE");
  return d && (strncmp(d, "CUDA", 4) == 0 || strncmp(d, "AMD", 3) == 0) ? BOUNDED : EXACT;
}

/* An index tensor of dtype d (one of int8, int32, int64, uint8) from v. */
static uj_tensor *index_tensor(uj_session *s, uj_scalar d, const int64_t *shape, unsigned nd, const int64_t *v, int64_t n) {
  uj_tensor *i64 = uj_tensor_from_data(s, UJ_INT64, shape, nd, v);
  (void)n;
  uj_tensor *t = d == UJ_INT64 ? i64 : uj_tensor_cast(i64, d);
  if (t != i64) uj_tensor_free(i64);
  return t;
}

/* The position v names on an axis of n as the index dtype d holds it
 * (wrapped to d first), or -1 outside. */
static int64_t position(uj_scalar d, int64_t v, int64_t n) {
  if (d == UJ_INT8) v = (int8_t)v;
  if (d == UJ_UINT8) v = (uint8_t)v;
  if (d == UJ_INT32) v = (int32_t)v;
  return v >= 0 && v < n ? v : -1;
}

/* gather(x, axis, index) on a random case, and d sum(gather * r) / dx. */
static void check_case(uj_session *s, Rng *r, const int64_t *xs, unsigned nd, int axis, uj_scalar id, uj_scalar xd) {
  char what[128];
  int64_t is[4], n = shape_numel(xs, nd);
  for (unsigned k = 0; k < nd; k++) is[k] = (int)k == axis ? 1 + rng_int(r, 7) : 1 + rng_int(r, (int)xs[k]);
  int64_t ni = shape_numel(is, nd), *iv = malloc((size_t)ni * sizeof *iv), idx[4];
  for (int64_t e = 0; e < ni; e++) /* mostly inside, some negative, some past the end, repeats */
    iv[e] = rng_int(r, 10) < 8 ? rng_int(r, (int)xs[axis]) : rng_int(r, 2) ? -1 - rng_int(r, 3) : xs[axis] + rng_int(r, 3);
  double *xv = NULL;
  uj_tensor *x = random_f32(s, r, xs, nd, -2, 2, false, &xv), *xt = xd == UJ_FLOAT32 ? x : uj_tensor_cast(x, xd);
  uj_tensor *it = index_tensor(s, id, is, nd, iv, ni);
  double *want = malloc((size_t)ni * sizeof *want);
  for (int64_t e = 0; e < ni; e++) {
    unravel(e, is, nd, idx);
    int64_t p = position(id, iv[e], xs[axis]);
    idx[axis] = p;
    double v = p < 0 ? 0 : xv[ravel(idx, xs, nd)];
    want[e] = xd == UJ_INT32 ? (double)(int32_t)v : xd == UJ_BOOL ? (double)(v != 0) : v;
  }
  snprintf(what, sizeof what, "gather along %d, %s index, %s data", axis, dname(id), dname(xd));
  expect(s, uj_tensor_gather(xt, axis, it), is, nd, want, EXACT, what);
  if (xd == UJ_FLOAT32) { /* the gradient: r scattered back, in C order */
    double *rv = NULL;
    uj_tensor *w = random_f32(s, r, is, nd, -1, 1, false, &rv);
    uj_tensor_set_requires_grad(x, true);
    uj_tensor *g = uj_tensor_gather(x, axis, it), *prod = uj_tensor_binary(UJ_BIN_MUL, g, w);
    uj_tensor *loss = uj_tensor_reduce(UJ_RED_SUM, prod, NULL, 0, false), *dx = NULL;
    CHECK(uj_tensor_gradients(loss, NULL, &x, 1, &dx) == UJ_OK, "%s: gradient: %s", what, uj_session_error(s));
    double *gw = calloc((size_t)n, sizeof *gw);
    float *acc = calloc((size_t)n, sizeof *acc);
    for (int64_t e = 0; e < ni; e++) {
      unravel(e, is, nd, idx);
      int64_t p = position(id, iv[e], xs[axis]);
      if (p < 0) continue;
      idx[axis] = p;
      acc[ravel(idx, xs, nd)] += (float)rv[e];
    }
    for (int64_t e = 0; e < n; e++) gw[e] = acc[e];
    snprintf(what, sizeof what, "d gather along %d, %s index", axis, dname(id));
    CHECK(!dx || kernels_have(dx, "STORE_ADD"), "%s: a scatter-add", what);
    expect(s, dx, xs, nd, gw, scatter_tol(), what);
    uj_tensor_free(dx), uj_tensor_free(loss), uj_tensor_free(prod), uj_tensor_free(g), uj_tensor_free(w);
    free(gw), free(acc), free(rv);
  }
  if (xt != x) uj_tensor_free(xt);
  uj_tensor_free(x), uj_tensor_free(it);
  free(want), free(iv), free(xv);
}

static void test_random(uj_session *s) {
  Rng r = {17};
  const uj_scalar ids[] = {UJ_INT32, UJ_INT64, UJ_INT8, UJ_UINT8};
  const uj_scalar xds[] = {UJ_FLOAT32, UJ_FLOAT32, UJ_INT32, UJ_BOOL};
  for (int c = 0; c < 24; c++) {
    unsigned nd = 1 + (unsigned)rng_int(&r, 3);
    int64_t xs[3];
    for (unsigned k = 0; k < nd; k++) xs[k] = 1 + rng_int(&r, 6);
    check_case(s, &r, xs, nd, rng_int(&r, (int)nd), ids[c % 4], xds[(c / 4) % 4]);
  }
}

/* An embedding: rows of a (V, C) table picked by tokens (N,), as a GPT's. */
static uj_tensor *embed(uj_tensor *w, uj_tensor *tokens, int64_t n, int64_t c) {
  uj_tensor *col = uj_tensor_reshape(tokens, (int64_t[]){n, 1}, 2);
  uj_tensor *full = uj_tensor_expand(col, (int64_t[]){n, c}, 2);
  uj_tensor *e = uj_tensor_gather(w, 0, full);
  uj_tensor_free(col), uj_tensor_free(full);
  return e;
}

static void test_embedding(uj_session *s) {
  enum { V = 50257, C = 16, N = 300 };
  Rng r = {5};
  double *wv = NULL, *rv = NULL;
  uj_tensor *w = random_f32(s, &r, (int64_t[]){V, C}, 2, -1, 1, false, &wv);
  int64_t tok[N];
  for (int i = 0; i < N; i++) tok[i] = i % 7 == 0 ? 11 : rng_int(&r, V); /* token 11 repeats */
  uj_tensor *tt = index_tensor(s, UJ_INT32, (int64_t[]){N}, 1, tok, N);
  uj_tensor *e = embed(w, tt, N, C);
  CHECK(e && !kernels_have(e, "REDUCE"), "the embedding is a load, not a sum over the vocabulary");
  double *want = malloc(N * C * sizeof *want);
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++) want[i * C + c] = wv[tok[i] * C + c];
  expect(s, e, (int64_t[]){N, C}, 2, want, EXACT, "embedding rows");
  uj_tensor_free(e);
  uj_tensor_set_requires_grad(w, true);
  uj_tensor *rt = random_f32(s, &r, (int64_t[]){N, C}, 2, -1, 1, false, &rv);
  e = embed(w, tt, N, C);
  uj_tensor *prod = uj_tensor_binary(UJ_BIN_MUL, e, rt), *loss = uj_tensor_reduce(UJ_RED_SUM, prod, NULL, 0, false), *dw = NULL;
  CHECK(uj_tensor_gradients(loss, NULL, &w, 1, &dw) == UJ_OK, "embedding gradient: %s", uj_session_error(s));
  CHECK(dw && !kernels_have(dw, "REDUCE"), "the embedding's gradient adds each row once, no sum over tokens per row");
  float *acc = calloc((size_t)V * C, sizeof *acc);
  for (int i = 0; i < N; i++)
    for (int c = 0; c < C; c++) acc[tok[i] * C + c] += (float)rv[i * C + c];
  double *gw = malloc((size_t)V * C * sizeof *gw);
  for (int64_t k = 0; k < (int64_t)V * C; k++) gw[k] = acc[k];
  expect(s, dw, (int64_t[]){V, C}, 2, gw, scatter_tol(), "embedding gradient");
  /* an optimizer step writes the scattered gradient into its own buffer, then updates in place */
  uj_optimizer *o = uj_optim_new(s, &(uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.5}, &w, 1);
  uj_tensor_free(dw), uj_tensor_free(loss), uj_tensor_free(prod), uj_tensor_free(e);
  for (int step = 0; step < 2; step++) {
    uj_optim_zero_grad(o);
    e = embed(w, tt, N, C);
    prod = uj_tensor_binary(UJ_BIN_MUL, e, rt), loss = uj_tensor_reduce(UJ_RED_SUM, prod, NULL, 0, false);
    CHECK(uj_tensor_backward(loss) == UJ_OK && uj_optim_step(o, &loss, 1) == UJ_OK, "sgd step: %s", uj_session_error(s));
    for (int64_t k = 0; k < (int64_t)V * C; k++) wv[k] = (float)wv[k] - 0.5f * acc[k]; /* the gradient does not depend on w */
    uj_tensor_free(loss), uj_tensor_free(prod), uj_tensor_free(e);
  }
  for (int64_t k = 0; k < (int64_t)V * C; k++) gw[k] = wv[k];
  expect(s, w, (int64_t[]){V, C}, 2, gw, scatter_tol(), "embedding after two SGD steps");
  uj_optim_free(o);
  uj_tensor_free(w), uj_tensor_free(tt), uj_tensor_free(rt);
  free(wv), free(rv), free(want), free(acc), free(gw);
}

/* Kernel names: the zeros, then "S_" with the values' shape. */
static void test_names(uj_session *s) {
  uj_tensor *w = uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){10, 4}, 2);
  uj_tensor_set_requires_grad(w, true);
  int64_t tok[6] = {3, 1, 3, 0, 9, 12};
  uj_tensor *tt = index_tensor(s, UJ_INT32, (int64_t[]){6}, 1, tok, 6), *e = embed(w, tt, 6, 4), *dw = NULL;
  uj_tensor *loss = uj_tensor_reduce(UJ_RED_SUM, e, NULL, 0, false);
  CHECK(uj_tensor_gradients(loss, NULL, &w, 1, &dw) == UJ_OK, "names: %s", uj_session_error(s));
  char *list = dw ? uj_tensor_schedule_text(dw, "kernels") : NULL;
  CHECK(list && strstr(list, "S_6_4") && kernels_have(dw, "STORE_ADD"), "the scatter kernel: %s", list ? list : uj_session_error(s));
  free(list);
  uj_tensor_free(dw), uj_tensor_free(loss), uj_tensor_free(e), uj_tensor_free(tt), uj_tensor_free(w);
}

int main(void) {
  uj_session *s = suite_session("test_tensor_gather");
  test_random(s);
  test_embedding(s);
  test_names(s);
  uj_session_free(s);
  return check_report("test_tensor_gather");
}
