/* test_grad_torch.c — gradients and optimizer steps against PyTorch.
 *
 * test/data/grad_torch/make.py (PyTorch 1.13) wrote, once, the inputs and
 * the expected values of each case as .npy files; they are committed, so
 * this test needs no PyTorch. Each case builds the same graph here with
 * the tensor API, takes its gradients (uj_tensor_gradients) or steps an
 * optimizer (uj_tensor_backward, uj_optim_step), and compares with what
 * PyTorch computed:
 *
 *   mlp    relu MLP, mean negative log-likelihood (by log_softmax and
 *          gather, and again by uj_tensor_cross_entropy)
 *   conv   conv2d (stride, padding, dilation) -> maxpool2d -> avgpool2d
 *          (padding, real elements counted)
 *   gconv  grouped conv2d -> tanh
 *   attn   layernorm (by hand, and again by uj_tensor_layernorm) ->
 *          q, k, v projections -> softmax attention (by hand, and again by
 *          uj_tensor_attention) -> tanh
 *   ties   float32 ties and kinks: relu, abs, maximum, minimum, amax, amin
 *   adamw  10 steps of AdamW with clip_grad_norm_, float32
 *   sgd    10 steps of SGD with momentum and weight decay, float32
 *
 * Tolerances: float64 gradients within 1e-9 relative + 1e-12 absolute
 * (PyTorch sums in other orders); float32 ties exactly; the optimizer
 * runs' first loss within 1e-5 relative, later losses, the clipped norms
 * and the final weights within 1e-4 relative + 1e-6 absolute (float32
 * steps drift apart as the sums are ordered differently). */
#include "tensor_util.h"

#define DATA UJ_TEST_DATA "/grad_torch/"

static uj_session *S;

/* ---- helpers ---- */

static uj_tensor *load(const char *name) {
  char path[512];
  snprintf(path, sizeof path, DATA "%s.npy", name);
  uj_tensor *t = uj_tensor_load_npy(S, path);
  CHECK(t != NULL, "load %s: %s", path, uj_session_error(S));
  if (!t) uj_session_clear_error(S);
  return t;
}

/* t's values as doubles (malloc'd), read in its own dtype; NULL after a
 * failed CHECK. */
static double *host_values(uj_tensor *t, const char *what) {
  uj_scalar d = uj_tensor_dtype(t);
  bool f64 = d == UJ_FLOAT64;
  CHECK(f64 || d == UJ_FLOAT32, "%s: dtype %d is not a float", what, (int)d);
  if (!f64 && d != UJ_FLOAT32) return NULL;
  size_t n = (size_t)uj_tensor_numel(t), size = f64 ? 8 : 4;
  unsigned char *raw = malloc(n * size + 1);
  double *v = malloc((n ? n : 1) * sizeof *v);
  uj_status st = uj_tensor_to_host(t, raw, n * size);
  CHECK(st == UJ_OK, "%s: to_host: %s", what, uj_session_error(S));
  for (size_t i = 0; st == UJ_OK && i < n; i++) {
    if (f64) memcpy(&v[i], raw + 8 * i, 8);
    else {
      float f;
      memcpy(&f, raw + 4 * i, 4);
      v[i] = f;
    }
  }
  free(raw);
  if (st != UJ_OK) free(v), v = NULL, uj_session_clear_error(S); /* the next tensor's message its own */
  return v;
}

static const char *index_str(int64_t flat, const int64_t *shape, unsigned nd, char *buf, size_t size) {
  int64_t idx[UJ_MAX_DIMS];
  unravel(flat, shape, nd, idx);
  size_t at = (size_t)snprintf(buf, size, "[");
  for (unsigned k = 0; k < nd && at < size; k++) at += (size_t)snprintf(buf + at, size - at, k ? ",%lld" : "%lld", (long long)idx[k]);
  if (at < size) snprintf(buf + at, size - at, "]");
  return buf;
}

/* got has the shape, dtype and, within tol, the values of the file want
 * (the case and the tensor named in each message). */
static void compare(uj_tensor *got, const char *want_name, Tol tol, const char *cas, const char *tensor) {
  char what[256];
  snprintf(what, sizeof what, "%s: %s", cas, tensor);
  uj_tensor *want = load(want_name);
  CHECK(got != NULL, "%s: no tensor: %s", what, uj_session_error(S));
  if (!got || !want) return;
  char a[128], b[128];
  unsigned nd = uj_tensor_ndim(want);
  const int64_t *shape = uj_tensor_shape(want);
  bool same_shape = uj_tensor_ndim(got) == nd && (nd == 0 || !memcmp(uj_tensor_shape(got), shape, nd * sizeof *shape));
  CHECK(same_shape, "%s: shape %s, PyTorch's %s", what, shape_str(uj_tensor_shape(got), uj_tensor_ndim(got), a, sizeof a),
        shape_str(shape, nd, b, sizeof b));
  CHECK(uj_tensor_dtype(got) == uj_tensor_dtype(want), "%s: dtype %d, PyTorch's %d", what, (int)uj_tensor_dtype(got),
        (int)uj_tensor_dtype(want));
  double *g = same_shape ? host_values(got, what) : NULL, *w = same_shape ? host_values(want, what) : NULL;
  int64_t n = uj_tensor_numel(want), bad = 0;
  double worst = 0; /* the largest |got - want| / (atol + rtol |want|) */
  for (int64_t i = 0; g && w && i < n; i++) {
    double err = fabs(g[i] - w[i]), lim = tol.atol + tol.rtol * fabs(w[i]);
    if (!close_to(g[i], w[i], tol)) {
      if (bad++ < 4)
        CHECK(false, "%s: element %s is %.17g, PyTorch's %.17g (difference %.3g, allowed %.3g)", what,
              index_str(i, shape, nd, a, sizeof a), g[i], w[i], err, lim);
      if (lim > 0 && err / lim > worst) worst = err / lim;
    }
  }
  CHECK(bad == 0, "%s: %lld of %lld elements differ from PyTorch's (the worst %.3g times the tolerance)", what,
        (long long)bad, (long long)n, worst);
  free(g), free(w);
  uj_tensor_free(want);
}

static const Tol F64 = {1e-9, 1e-12, false};

static uj_tensor *sum(uj_tensor *t) { return uj_tensor_reduce(UJ_RED_SUM, t, NULL, 0, false); }
static uj_tensor *mul(uj_tensor *a, uj_tensor *b) { return uj_tensor_binary(UJ_BIN_MUL, a, b); }
static uj_tensor *add(uj_tensor *a, uj_tensor *b) { return uj_tensor_binary(UJ_BIN_ADD, a, b); }

/* The gradients of loss with respect to wrt[0..n), each compared with the
 * file "PREFIX_grad_NAME" (names[i]); the loss with "PREFIX_loss". */
static void check_grads(const char *cas, const char *prefix, uj_tensor *loss, uj_tensor *const *wrt,
                        const char *const *names, size_t n, Tol tol) {
  char file[128], tensor[64];
  uj_tensor *g[8] = {0};
  /* the gradients first: a realized loss reads its buffer, not its graph */
  uj_status st = loss ? uj_tensor_gradients(loss, NULL, wrt, n, g) : UJ_OK;
  CHECK(loss && st == UJ_OK, "%s: gradients: %s", cas, uj_session_error(S));
  if (!loss || st != UJ_OK) {
    uj_session_clear_error(S);
    return;
  }
  snprintf(file, sizeof file, "%s_loss", prefix);
  compare(loss, file, tol, cas, "loss");
  for (size_t i = 0; i < n; i++) {
    snprintf(file, sizeof file, "%s_grad_%s", prefix, names[i]);
    snprintf(tensor, sizeof tensor, "d loss / d %s", names[i]);
    compare(g[i], file, tol, cas, tensor);
    uj_tensor_free(g[i]);
  }
}

/* ---- mlp: mean over rows of -log_softmax(relu(x w1 + b1) w2)[row, label] ---- */

static void test_mlp(void) {
  uj_tensor *x = load("mlp_x"), *w1 = load("mlp_w1"), *b1 = load("mlp_b1"), *w2 = load("mlp_w2"), *labels = load("mlp_labels");
  uj_tensor *wrt[] = {x, w1, b1, w2};
  const char *names[] = {"x", "w1", "b1", "w2"};
  uj_tensor *logits = uj_tensor_matmul(uj_tensor_unary(UJ_UN_RELU, add(uj_tensor_matmul(x, w1), b1)), w2);
  uj_tensor *picked = uj_tensor_gather(uj_tensor_log_softmax(logits, 1), 1, uj_tensor_reshape(labels, (int64_t[]){4, 1}, 2));
  uj_tensor *loss = uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_reduce(UJ_RED_MEAN, picked, NULL, 0, false), -1, false);
  check_grads("mlp", "mlp", loss, wrt, names, 4, F64);
  check_grads("mlp (cross_entropy)", "mlp", uj_tensor_cross_entropy(logits, labels, -100), wrt, names, 4, F64);
}

/* ---- conv: conv2d -> maxpool2d -> avgpool2d (padded), weighed sum ---- */

static void test_conv(void) {
  uj_tensor *x = load("conv_x"), *w = load("conv_w"), *bias = load("conv_bias"), *r = load("conv_r");
  uj_tensor *y = uj_tensor_conv2d(x, w, bias, (int64_t[]){2, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 2}, 1);
  uj_tensor *m = uj_tensor_maxpool2d(y, (int64_t[]){2, 2}, NULL, NULL);
  uj_tensor *z = uj_tensor_avgpool2d(m, (int64_t[]){2, 2}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
  check_grads("conv", "conv", sum(mul(z, r)), (uj_tensor *[]){x, w, bias}, (const char *[]){"x", "w", "bias"}, 3, F64);

  uj_tensor *gx = load("gconv_x"), *gw = load("gconv_w"), *gb = load("gconv_bias"), *gr = load("gconv_r");
  uj_tensor *gy = uj_tensor_conv2d(gx, gw, gb, (int64_t[]){1, 2}, (int64_t[]){2, 1}, (int64_t[]){2, 1}, 2);
  check_grads("gconv (groups 2)", "gconv", sum(mul(uj_tensor_unary(UJ_UN_TANH, gy), gr)), (uj_tensor *[]){gx, gw, gb},
              (const char *[]){"x", "w", "bias"}, 3, F64);
}

/* ---- attn: layernorm -> projections -> softmax attention -> tanh ---- */

static void test_attention(void) {
  uj_tensor *x = load("attn_x"), *g = load("attn_g"), *b = load("attn_b"), *wq = load("attn_wq"), *wk = load("attn_wk"),
            *wv = load("attn_wv"), *r = load("attn_r");
  uj_tensor *wrt[] = {x, g, b, wq, wk, wv};
  const char *names[] = {"x", "g", "b", "wq", "wk", "wv"};
  /* by hand: (x - mean) / sqrt(var + 1e-5) g + b; softmax(q k^T / sqrt 8) v */
  uj_tensor *c = uj_tensor_binary(UJ_BIN_SUB, x, uj_tensor_reduce(UJ_RED_MEAN, x, (int[]){-1}, 1, true));
  uj_tensor *var = uj_tensor_reduce(UJ_RED_MEAN, mul(c, c), (int[]){-1}, 1, true);
  uj_tensor *rstd = uj_tensor_unary(UJ_UN_SQRT, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false));
  uj_tensor *h = add(mul(uj_tensor_binary(UJ_BIN_DIV, c, rstd), g), b);
  uj_tensor *q = uj_tensor_matmul(h, wq), *k = uj_tensor_matmul(h, wk), *v = uj_tensor_matmul(h, wv);
  uj_tensor *scores = uj_tensor_binary_scalar(UJ_BIN_DIV, uj_tensor_matmul(q, uj_tensor_transpose(k, 1, 2)), sqrt(8.0), false);
  uj_tensor *att = uj_tensor_matmul(uj_tensor_softmax(scores, -1), v);
  check_grads("attn", "attn", sum(mul(uj_tensor_unary(UJ_UN_TANH, att), r)), wrt, names, 6, F64);
  /* the library's layers: uj_tensor_layernorm, uj_tensor_attention */
  uj_tensor *h2 = uj_tensor_layernorm(x, g, b, 1e-5);
  uj_tensor *att2 = uj_tensor_attention(uj_tensor_matmul(h2, wq), uj_tensor_matmul(h2, wk), uj_tensor_matmul(h2, wv), false);
  check_grads("attn (layernorm, attention)", "attn", sum(mul(uj_tensor_unary(UJ_UN_TANH, att2), r)), wrt, names, 6, F64);
}

/* ---- ties: float32, exact ---- */

static void tie(uj_tensor *loss, uj_tensor *const *wrt, const char *const *files, size_t n, const char *cas) {
  uj_tensor *g[2] = {0};
  uj_status st = loss ? uj_tensor_gradients(loss, NULL, wrt, n, g) : UJ_OK;
  CHECK(loss && st == UJ_OK, "ties: %s: gradients: %s", cas, uj_session_error(S));
  if (!loss || st != UJ_OK) {
    uj_session_clear_error(S);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char c[128];
    snprintf(c, sizeof c, "ties: %s", cas);
    compare(g[i], files[i], EXACT, c, files[i] + strlen("ties_"));
    uj_tensor_free(g[i]);
  }
}

static void test_ties(void) {
  uj_tensor *x = load("ties_x"), *y = load("ties_y"), *m = load("ties_m");
  uj_tensor *xy[] = {x, y};
  tie(sum(uj_tensor_unary(UJ_UN_RELU, x)), &x, (const char *[]){"ties_d_relu"}, 1, "sum(relu(x))");
  tie(sum(uj_tensor_unary(UJ_UN_ABS, x)), &x, (const char *[]){"ties_d_abs"}, 1, "sum(abs(x))");
  tie(sum(uj_tensor_binary(UJ_BIN_MAXIMUM, x, y)), xy, (const char *[]){"ties_d_maximum_x", "ties_d_maximum_y"}, 2,
      "sum(maximum(x, y))");
  tie(sum(uj_tensor_binary(UJ_BIN_MINIMUM, x, y)), xy, (const char *[]){"ties_d_minimum_x", "ties_d_minimum_y"}, 2,
      "sum(minimum(x, y))");
  tie(uj_tensor_reduce(UJ_RED_MAX, x, NULL, 0, false), &x, (const char *[]){"ties_d_amax"}, 1, "amax(x)");
  tie(uj_tensor_reduce(UJ_RED_MIN, y, NULL, 0, false), &y, (const char *[]){"ties_d_amin_y"}, 1, "amin(y)");
  tie(sum(uj_tensor_reduce(UJ_RED_MAX, m, (int[]){1}, 1, false)), &m, (const char *[]){"ties_d_amax_axis1"}, 1,
      "sum(amax(m, 1))");
  tie(sum(uj_tensor_reduce(UJ_RED_MIN, m, (int[]){0}, 1, false)), &m, (const char *[]){"ties_d_amin_axis0"}, 1,
      "sum(amin(m, 0))");
  uj_tensor *weights = tf32(S, (int64_t[]){3}, 1, (float[]){1, 2, 3});
  tie(sum(mul(uj_tensor_reduce(UJ_RED_MAX, m, (int[]){1}, 1, false), weights)), &m,
      (const char *[]){"ties_d_amax_axis1_weighed"}, 1, "sum(amax(m, 1) (1, 2, 3))");
}

/* ---- adamw, sgd: 10 steps of a 5-16-3 MLP, float32 ---- */

static void run_optim(const char *cas, uj_optim_config cfg) {
  const char *names[] = {"w1", "b1", "w2", "b2"};
  uj_tensor *p[4];
  char file[128], tensor[64];
  for (int i = 0; i < 4; i++) {
    snprintf(file, sizeof file, "opt_%s", names[i]);
    p[i] = load(file); /* a buffer of its own for each run */
    CHECK(p[i] && uj_tensor_set_requires_grad(p[i], true) == UJ_OK, "%s: requires_grad %s: %s", cas, names[i], uj_session_error(S));
    if (!p[i]) return;
  }
  uj_tensor *x = load("opt_x"), *labels = load("opt_labels");
  uj_tensor *labels2 = uj_tensor_reshape(labels, (int64_t[]){8, 1}, 2);
  uj_optimizer *o = uj_optim_new(S, &cfg, p, 4);
  CHECK(o != NULL, "%s: optimizer: %s", cas, uj_session_error(S));
  if (!o || !x || !labels2) return;
  snprintf(file, sizeof file, "%s_losses", cas);
  uj_tensor *want_losses = load(file), *want_norms = NULL;
  double *losses = want_losses ? host_values(want_losses, file) : NULL, *norms = NULL;
  if (cfg.max_grad_norm > 0) {
    snprintf(file, sizeof file, "%s_norms", cas);
    want_norms = load(file);
    norms = want_norms ? host_values(want_norms, file) : NULL;
  }
  for (int step = 1; step <= 10; step++) {
    uj_optim_zero_grad(o);
    uj_tensor *a = uj_tensor_matmul(x, p[0]), *ab = add(a, p[1]), *h = uj_tensor_unary(UJ_UN_RELU, ab);
    uj_tensor *z = uj_tensor_matmul(h, p[2]), *logits = add(z, p[3]);
    uj_tensor *lp = uj_tensor_log_softmax(logits, 1), *picked = uj_tensor_gather(lp, 1, labels2);
    uj_tensor *mean = uj_tensor_reduce(UJ_RED_MEAN, picked, NULL, 0, false);
    uj_tensor *loss = uj_tensor_binary_scalar(UJ_BIN_MUL, mean, -1, false);
    float got = NAN;
    bool ok = uj_tensor_backward(loss) == UJ_OK && uj_optim_step(o, &loss, 1) == UJ_OK && uj_tensor_to_host(loss, &got, 4) == UJ_OK;
    CHECK(ok, "%s: step %d: %s", cas, step, uj_session_error(S));
    /* the first step's loss reads the initial weights only */
    Tol tol = step == 1 ? (Tol){1e-5, 0, false} : (Tol){1e-4, 1e-6, false};
    if (losses)
      CHECK(close_to(got, losses[step - 1], tol), "%s: step %d: loss %.9g, PyTorch's %.9g (difference %.3g)", cas, step, got,
            losses[step - 1], fabs(got - losses[step - 1]));
    if (norms)
      CHECK(close_to(uj_optim_grad_norm(o), norms[step - 1], tol), "%s: step %d: gradient norm %.9g, PyTorch's %.9g", cas, step,
            uj_optim_grad_norm(o), norms[step - 1]);
    for (uj_tensor **t = (uj_tensor *[]){a, ab, h, z, logits, lp, picked, mean, loss, NULL}; *t; t++) uj_tensor_free(*t);
    if (!ok) break;
  }
  for (int i = 0; i < 4; i++) {
    snprintf(file, sizeof file, "%s_final_%s", cas, names[i]);
    snprintf(tensor, sizeof tensor, "%s after 10 steps", names[i]);
    compare(p[i], file, (Tol){1e-4, 1e-6, false}, cas, tensor);
  }
  free(losses), free(norms);
  uj_optim_free(o);
  for (int i = 0; i < 4; i++) uj_tensor_free(p[i]);
  uj_tensor_free(want_losses), uj_tensor_free(want_norms);
}

int main(void) {
  S = suite_session("test_grad_torch");
  test_mlp();
  test_conv();
  test_attention();
  test_ties();
  run_optim("adamw", (uj_optim_config){.kind = UJ_OPTIM_ADAMW, .lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                       .weight_decay = 0.01, .max_grad_norm = 1.0});
  run_optim("sgd", (uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3});
  uj_session_free(S);
  return check_report("test_grad_torch");
}
