/* test_train_torch.c — 200 training steps against PyTorch, loss by loss.
 *
 * test/data/train_torch/make.py (PyTorch 1.13) wrote, once, the initial
 * weights, the data and PyTorch's loss at every step of two runs as .npy
 * files; they are committed, so this test needs no PyTorch. Here each
 * model is built again with the tensor API from the same weights and
 * trained on the same batches (step i reads batch i % 8) with the same
 * optimizer: AdamW (lr 3e-3, betas 0.9 0.999, eps 1e-8, weight decay
 * 0.01) clipped to a global norm of 1, float32 throughout.
 *
 *   mlp  64-32-32-10, relu, batch 16, cross entropy
 *   gpt  a 2-layer GPT (vocab 64, d 32, 2 heads, T 16, batch 4, MLP
 *        128): token embedding (uj_tensor_gather) plus a learned position
 *        embedding; pre-layernorm blocks of causal self-attention
 *        (uj_tensor_attention) and a GELU (tanh form) MLP, each added to
 *        the residual; a final layernorm, a linear head, cross entropy of
 *        the next token
 *
 * The loss of each step (computed before that step's update) must be
 * within 1e-5 relative of PyTorch's at step 1 and 1e-3 at step 200 (the
 * issue's bounds); every step between is held to 1e-3 too. Measured
 * (2026-12-06, x86-64; the same in the Release and ASan builds and under
 * UJ_OPT_RANDOM 1 and 3, but for gpt's step 200 there, 7.1e-6): step 1
 * mlp 1.0e-7, gpt 0 (bit for bit); step 200 mlp 3.8e-7, gpt 2.0e-5; the
 * worst step between them mlp 4.4e-6 (step 195), gpt 3.4e-5 (step 184).
 * That is float32 rounding: PyTorch's own float32 runs end 1.6e-5 (mlp)
 * and 2.9e-5 (gpt) from its float64 runs (make.py --drift), while a
 * learning rate 1% off moves the step-200 loss by 5.7% (mlp) and 24%
 * (gpt) and fails the test.
 *
 * Also: UJ_UN_GELU against PyTorch's gelu(approximate='tanh') at 97
 * points, which lie far from the erf form.
 *
 * About 8 s in Release, half of it the mlp's steps: with clipping, the
 * kernel of w2's gradient recomputes the logits and the softmax's max and
 * sum for each of its elements (14 ms of a step's 20; the same schedule
 * without the global norm in it takes 0.01 ms). */
#include "tensor_util.h"

#define DATA UJ_TEST_DATA "/train_torch/"

enum { STEPS = 200, BATCHES = 8 };
static const double LR = 3e-3, FIRST_TOL = 1e-5, LAST_TOL = 1e-3;

static uj_session *S;

/* ---- helpers ---- */

/* The tensors one step builds, freed together at its end. */
typedef struct Tmp {
  uj_tensor *t[256];
  int n;
} Tmp;

static uj_tensor *keep(Tmp *k, uj_tensor *t) {
  if (k->n < (int)(sizeof k->t / sizeof *k->t)) k->t[k->n++] = t;
  else CHECK(false, "Tmp: more than %d tensors in a step", k->n);
  return t;
}

static void tmp_free(Tmp *k) {
  for (int i = 0; i < k->n; i++) uj_tensor_free(k->t[i]);
  k->n = 0;
}

static uj_tensor *mm(Tmp *k, uj_tensor *a, uj_tensor *b) { return keep(k, uj_tensor_matmul(a, b)); }
static uj_tensor *add(Tmp *k, uj_tensor *a, uj_tensor *b) { return keep(k, uj_tensor_binary(UJ_BIN_ADD, a, b)); }
static uj_tensor *reshape(Tmp *k, uj_tensor *a, const int64_t *shape, unsigned nd) {
  return keep(k, uj_tensor_reshape(a, shape, nd));
}

/* The file NAME.npy, of dtype d. */
static uj_tensor *load(const char *name, uj_scalar d) {
  char path[512];
  snprintf(path, sizeof path, DATA "%s.npy", name);
  uj_tensor *t = uj_tensor_load_npy(S, path);
  CHECK(t != NULL, "load %s: %s", path, uj_session_error(S));
  if (!t) return uj_session_clear_error(S), NULL;
  CHECK(uj_tensor_dtype(t) == d, "%s: dtype %d, want %d", path, (int)uj_tensor_dtype(t), (int)d);
  return t;
}

/* A parameter: the file NAME.npy (float32) in a buffer of its own. */
static uj_tensor *load_param(const char *name) {
  uj_tensor *t = load(name, UJ_FLOAT32);
  uj_status st = t ? uj_tensor_set_requires_grad(t, true) : UJ_ERR_ARG;
  CHECK(st == UJ_OK, "requires_grad %s: %s", name, uj_session_error(S));
  if (st != UJ_OK) uj_tensor_free(t), t = NULL;
  return t;
}

/* A model's data: BATCHES batches of two tensors (the inputs and the
 * labels), each from host memory, and the two buffers every step reads,
 * which each step assigns its batch to: every step's graph is then the
 * same graph on the same buffers, scheduled and compiled once. Those two
 * are made from host memory too, each a buffer of its own from the start
 * (two equal tensors of uj_tensor_zeros realize into one buffer, and the
 * first assignment to one moves it to a new one: docs/tensor.md). */
typedef struct Data {
  uj_tensor *now[2], *batch[BATCHES][2];
} Data;

/* The file NAME.npy of dtype d and shape (BATCHES, rest..) as batches k
 * of data. */
static bool load_batches(const char *name, uj_scalar d, const int64_t *rest, unsigned nd, Data *data, int k) {
  uj_tensor *all = load(name, d);
  int64_t n = shape_numel(rest, nd);
  bool ok = all && uj_tensor_numel(all) == BATCHES * n;
  CHECK(!all || ok, "%s: %lld elements, want %d batches of %lld", name, (long long)uj_tensor_numel(all), BATCHES, (long long)n);
  char *host = ok ? malloc((size_t)(BATCHES * n) * 4) : NULL; /* float32 or int32 */
  ok = ok && host && uj_tensor_to_host(all, host, (size_t)(BATCHES * n) * 4) == UJ_OK;
  for (int b = 0; ok && b < BATCHES; b++) ok = (data->batch[b][k] = uj_tensor_from_data(S, d, rest, nd, host + (size_t)(b * n) * 4)) != NULL;
  ok = ok && (data->now[k] = uj_tensor_from_data(S, d, rest, nd, host)) != NULL; /* batch 0, in a buffer of its own */
  CHECK(ok, "%s: batches: %s", name, uj_session_error(S));
  free(host);
  uj_tensor_free(all);
  return ok;
}

/* Batch b into the buffers the step reads. */
static bool data_feed(Data *data, int b) {
  bool ok = uj_tensor_assign(data->now[0], data->batch[b][0]) == UJ_OK && uj_tensor_assign(data->now[1], data->batch[b][1]) == UJ_OK;
  CHECK(ok, "batch %d: %s", b, uj_session_error(S));
  return ok;
}

static void data_free(Data *data) {
  for (int k = 0; k < 2; k++) {
    uj_tensor_free(data->now[k]);
    for (int b = 0; b < BATCHES; b++) uj_tensor_free(data->batch[b][k]);
  }
}

/* ---- mlp: 64-32-32-10, relu, cross entropy ---- */

enum { MLP_BATCH = 16, MLP_IN = 64, MLP_OUT = 10 };

typedef struct Mlp {
  uj_tensor *p[6]; /* w1 b1 w2 b2 w3 b3 */
  Data data;       /* x (16, 64) float32, labels (16,) int32 */
} Mlp;

static bool mlp_load(Mlp *m) {
  const char *names[6] = {"mlp_w1", "mlp_b1", "mlp_w2", "mlp_b2", "mlp_w3", "mlp_b3"};
  bool ok = true;
  for (int i = 0; i < 6; i++) ok = (m->p[i] = load_param(names[i])) != NULL && ok;
  ok = ok && load_batches("mlp_x", UJ_FLOAT32, (int64_t[]){MLP_BATCH, MLP_IN}, 2, &m->data, 0);
  return ok && load_batches("mlp_labels", UJ_INT32, (int64_t[]){MLP_BATCH}, 1, &m->data, 1);
}

static uj_tensor *mlp_loss(Tmp *k, const void *model) {
  const Mlp *m = model;
  uj_tensor *h = m->data.now[0];
  for (int l = 0; l < 3; l++) {
    h = add(k, mm(k, h, m->p[2 * l]), m->p[2 * l + 1]);
    if (l < 2) h = keep(k, uj_tensor_unary(UJ_UN_RELU, h));
  }
  return keep(k, uj_tensor_cross_entropy(h, m->data.now[1], -100));
}

/* ---- gpt: 2 pre-layernorm blocks ---- */

enum { V = 64, D = 32, HEADS = 2, T = 16, B = 4, LAYERS = 2, HID = 128, NBLOCK = 13 };
enum { LN1_W, LN1_B, WQ, WK, WV, WO, BO, LN2_W, LN2_B, W1, B1, W2, B2 }; /* a block's parameters, in make.py's order */
static const char *const block_names[NBLOCK] = {"ln1_w", "ln1_b", "wq", "wk", "wv", "wo", "bo", "ln2_w", "ln2_b", "w1", "b1", "w2", "b2"};

typedef struct Gpt {
  uj_tensor *wte, *wpe, *block[LAYERS][NBLOCK], *lnf_w, *lnf_b, *head;
  Data data; /* the tokens and the next ones, (B T,) int32 each */
} Gpt;

/* The parameters in make.py's order (GPT_NAMES): the optimizer's. */
static size_t gpt_params(Gpt *g, uj_tensor **out) {
  size_t n = 0;
  out[n++] = g->wte, out[n++] = g->wpe;
  for (int l = 0; l < LAYERS; l++)
    for (int i = 0; i < NBLOCK; i++) out[n++] = g->block[l][i];
  out[n++] = g->lnf_w, out[n++] = g->lnf_b, out[n++] = g->head;
  return n;
}

static bool gpt_load(Gpt *g) {
  char name[64];
  bool ok = (g->wte = load_param("gpt_wte")) != NULL;
  ok = (g->wpe = load_param("gpt_wpe")) != NULL && ok;
  for (int l = 0; l < LAYERS; l++)
    for (int i = 0; i < NBLOCK; i++) {
      snprintf(name, sizeof name, "gpt_L%d_%s", l, block_names[i]);
      ok = (g->block[l][i] = load_param(name)) != NULL && ok;
    }
  ok = (g->lnf_w = load_param("gpt_lnf_w")) != NULL && ok;
  ok = (g->lnf_b = load_param("gpt_lnf_b")) != NULL && ok;
  ok = (g->head = load_param("gpt_head")) != NULL && ok;
  Data seq = {0}; /* (B, T + 1) */
  ok = ok && load_batches("gpt_tokens", UJ_INT32, (int64_t[]){B, T + 1}, 2, &seq, 0);
  for (int b = 0; ok && b < BATCHES; b++) /* columns [0, T) and [1, T + 1), flattened */
    for (int i = 0; ok && i < 2; i++) {
      uj_tensor *cut = uj_tensor_shrink(seq.batch[b][0], (int64_t[]){0, B, i, T + i}, 2);
      ok = (g->data.batch[b][i] = uj_tensor_reshape(cut, (int64_t[]){B * T}, 1)) != NULL;
      uj_tensor_free(cut);
    }
  int32_t zero[B * T] = {0}; /* from host memory: a buffer each (Data) */
  for (int i = 0; ok && i < 2; i++) ok = (g->data.now[i] = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){B * T}, 1, zero)) != NULL;
  CHECK(ok, "gpt: tokens: %s", uj_session_error(S));
  data_free(&seq);
  return ok;
}

/* wte[tokens] (B T, D): a gather along the vocabulary of the tokens
 * broadcast over the embedding's axis. */
static uj_tensor *embedding(Tmp *k, uj_tensor *wte, uj_tensor *tokens) {
  uj_tensor *col = reshape(k, tokens, (int64_t[]){B * T, 1}, 2);
  uj_tensor *index = keep(k, uj_tensor_expand(col, (int64_t[]){B * T, D}, 2));
  return keep(k, uj_tensor_gather(wte, 0, index));
}

/* (B, T, D) -> (B, HEADS, T, D / HEADS) and back. */
static uj_tensor *split_heads(Tmp *k, uj_tensor *x) {
  uj_tensor *r = reshape(k, x, (int64_t[]){B, T, HEADS, D / HEADS}, 4);
  return keep(k, uj_tensor_permute(r, (int[]){0, 2, 1, 3}, 4));
}
static uj_tensor *merge_heads(Tmp *k, uj_tensor *x) {
  uj_tensor *p = keep(k, uj_tensor_permute(x, (int[]){0, 2, 1, 3}, 4));
  return reshape(k, p, (int64_t[]){B, T, D}, 3);
}

/* h + attention(layernorm(h)) wo + bo, then h + gelu(layernorm(h) w1 + b1) w2 + b2,
 * each sum in PyTorch's order ((h + x w) + b). */
static uj_tensor *gpt_block(Tmp *k, uj_tensor *const *w, uj_tensor *h) {
  uj_tensor *a = keep(k, uj_tensor_layernorm(h, w[LN1_W], w[LN1_B], 1e-5));
  uj_tensor *q = split_heads(k, mm(k, a, w[WQ])), *kk = split_heads(k, mm(k, a, w[WK])), *v = split_heads(k, mm(k, a, w[WV]));
  uj_tensor *att = merge_heads(k, keep(k, uj_tensor_attention(q, kk, v, true)));
  h = add(k, add(k, h, mm(k, att, w[WO])), w[BO]);
  a = keep(k, uj_tensor_layernorm(h, w[LN2_W], w[LN2_B], 1e-5));
  uj_tensor *up = keep(k, uj_tensor_unary(UJ_UN_GELU, add(k, mm(k, a, w[W1]), w[B1])));
  return add(k, add(k, h, mm(k, up, w[W2])), w[B2]);
}

static uj_tensor *gpt_loss(Tmp *k, const void *model) {
  const Gpt *g = model;
  uj_tensor *h = add(k, reshape(k, embedding(k, g->wte, g->data.now[0]), (int64_t[]){B, T, D}, 3), g->wpe);
  for (int l = 0; l < LAYERS; l++) h = gpt_block(k, g->block[l], h);
  uj_tensor *logits = mm(k, keep(k, uj_tensor_layernorm(h, g->lnf_w, g->lnf_b, 1e-5)), g->head);
  return keep(k, uj_tensor_cross_entropy(reshape(k, logits, (int64_t[]){B * T, V}, 2), g->data.now[1], -100));
}

/* ---- gelu: UJ_UN_GELU is PyTorch's gelu(approximate='tanh') ---- */

static void test_gelu(void) {
  enum { N = 97 };
  uj_tensor *x = load("gelu_x", UJ_FLOAT32), *tanh_form = load("gelu_tanh", UJ_FLOAT32), *erf_form = load("gelu_erf", UJ_FLOAT32);
  uj_tensor *y = x ? uj_tensor_unary(UJ_UN_GELU, x) : NULL;
  float got[N], want[N], erf[N], xs[N];
  bool ok = y && uj_tensor_numel(y) == N && uj_tensor_to_host(y, got, sizeof got) == UJ_OK && uj_tensor_to_host(x, xs, sizeof xs) == UJ_OK &&
            tanh_form && uj_tensor_to_host(tanh_form, want, sizeof want) == UJ_OK && erf_form &&
            uj_tensor_to_host(erf_form, erf, sizeof erf) == UJ_OK;
  CHECK(ok, "gelu: %s", uj_session_error(S));
  double far = 0; /* how far the erf form lies from the tanh form: what the check tells apart */
  for (int i = 0; ok && i < N; i++) {
    /* 4 ulps, or where 1 + tanh cancels (x << 0) 2 ulps of 1 times x / 2 */
    CHECK(close_to(got[i], want[i], (Tol){4 * 0x1p-23, fabs(xs[i]) * 0x1p-23, false}),
          "gelu(%g): %.9g, PyTorch's tanh form %.9g (erf form %.9g)", xs[i], got[i], want[i], erf[i]);
    far = fmax(far, fabs((double)erf[i] - want[i]));
  }
  CHECK(!ok || far > 1e-4, "gelu: the two forms differ by %g only", far);
  uj_tensor_free(x), uj_tensor_free(y), uj_tensor_free(tanh_form), uj_tensor_free(erf_form);
}

/* ---- training ---- */

typedef uj_tensor *LossFn(Tmp *k, const void *model);

/* STEPS steps of AdamW on params[0..n), batch i % BATCHES of data fed to
 * step i; each step's loss against PyTorch's (the file CAS_losses). */
static void train(const char *cas, uj_tensor *const *params, size_t n, Data *data, LossFn *loss_of, const void *model) {
  char file[64];
  snprintf(file, sizeof file, "%s_losses", cas);
  uj_tensor *want_t = load(file, UJ_FLOAT32);
  float want[STEPS], got[STEPS];
  bool ok = want_t && uj_tensor_numel(want_t) == STEPS && uj_tensor_to_host(want_t, want, sizeof want) == UJ_OK;
  CHECK(ok, "%s: %d losses: %s", file, STEPS, uj_session_error(S));
  uj_optim_config cfg = {.kind = UJ_OPTIM_ADAMW, .lr = LR, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                         .weight_decay = 0.01, .max_grad_norm = 1.0};
  uj_optimizer *o = ok ? uj_optim_new(S, &cfg, params, n) : NULL;
  CHECK(!ok || o, "%s: optimizer: %s", cas, uj_session_error(S));
  int done = 0;
  size_t compiled_before = S->device->compiled.count, compiled = 0; /* kernels compiled by step 1 */
  for (Tmp k = {0}; o && done < STEPS; done++) {
    if (!data_feed(data, done % BATCHES)) break;
    uj_optim_zero_grad(o);
    uj_tensor *loss = loss_of(&k, model);
    ok = loss && uj_tensor_dtype(loss) == UJ_FLOAT32 && uj_tensor_backward(loss) == UJ_OK && uj_optim_step(o, &loss, 1) == UJ_OK &&
         uj_tensor_to_host(loss, &got[done], sizeof *got) == UJ_OK;
    CHECK(ok, "%s: step %d: %s", cas, done + 1, uj_session_error(S));
    tmp_free(&k);
    if (!ok) break;
    if (done == 0) compiled = S->device->compiled.count;
  }
  /* every step the same graph on the same buffers: nothing compiled after the first */
  CHECK(done < STEPS || S->device->compiled.count == compiled, "%s: %zu kernels compiled after step 1", cas,
        S->device->compiled.count - compiled);
  double worst = 0, err[STEPS];
  int at = 0;
  for (int i = 0; i < done; i++) {
    err[i] = fabs((double)got[i] - want[i]) / fabs((double)want[i]);
    if (!(err[i] <= worst)) worst = err[i], at = i; /* NaN the worst */
  }
  if (done == STEPS) {
    CHECK(err[0] <= FIRST_TOL, "%s: step 1: loss %.9g, PyTorch's %.9g (relative error %.3g > %g)", cas, got[0], want[0], err[0], FIRST_TOL);
    CHECK(err[STEPS - 1] <= LAST_TOL, "%s: step %d: loss %.9g, PyTorch's %.9g (relative error %.3g > %g)", cas, STEPS,
          got[STEPS - 1], want[STEPS - 1], err[STEPS - 1], LAST_TOL);
    CHECK(worst <= LAST_TOL, "%s: step %d: loss %.9g, PyTorch's %.9g (relative error %.3g > %g)", cas, at + 1, got[at], want[at],
          worst, LAST_TOL);
    printf("%s: loss %.4f -> %.4f; relative error to PyTorch: step 1 %.3g, step %d %.3g, the worst %.3g (step %d); %zu kernels\n", cas,
           got[0], got[STEPS - 1], err[0], STEPS, err[STEPS - 1], worst, at + 1, compiled - compiled_before);
  }
  uj_optim_free(o);
  uj_tensor_free(want_t);
}

static void test_mlp(void) {
  Mlp m = {0};
  if (mlp_load(&m)) train("mlp", m.p, 6, &m.data, mlp_loss, &m);
  for (int i = 0; i < 6; i++) uj_tensor_free(m.p[i]);
  data_free(&m.data);
}

static void test_gpt(void) {
  Gpt g = {0};
  uj_tensor *params[2 + LAYERS * NBLOCK + 3];
  bool ok = gpt_load(&g);
  size_t n = gpt_params(&g, params);
  if (ok) train("gpt", params, n, &g.data, gpt_loss, &g);
  for (size_t i = 0; i < n; i++) uj_tensor_free(params[i]);
  data_free(&g.data);
}

int main(void) {
  S = suite_session("test_train_torch");
  test_gelu();
  test_mlp();
  test_gpt();
  uj_session_free(S);
  return check_report("test_train_torch");
}
