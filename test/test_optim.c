/* test_optim.c — SGD and AdamW steps (lib/tensor/optim.c) against the
 * same formulas computed here in float32, step by step (PyTorch's
 * torch.optim.SGD, AdamW and clip_grad_norm_); a learning rate changed
 * every step compiles nothing after the first; the errors of the API. */
#include "tensor_util.h"

enum { N = 5, STEPS = 6 };

static uj_session *S;
static const float target[N] = {0.5f, -1, 2, 0.25f, -3};
static const float weight[N] = {1, 2, 0.5f, 3, 1.5f};

/* loss = sum(c (p - t)^2): grad 2 c (p - t) */
static uj_tensor *loss_of(uj_tensor *p) {
  uj_tensor *t = tf32(S, (int64_t[]){N}, 1, target), *c = tf32(S, (int64_t[]){N}, 1, weight);
  uj_tensor *d = uj_tensor_binary(UJ_BIN_SUB, p, t);
  uj_tensor *l = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_binary(UJ_BIN_MUL, uj_tensor_binary(UJ_BIN_MUL, d, d), c), NULL, 0, false);
  uj_tensor_free(t), uj_tensor_free(c), uj_tensor_free(d);
  return l;
}

static void grad_here(const float *p, float *g) {
  for (int i = 0; i < N; i++) g[i] = (p[i] - target[i]) * 2 * weight[i];
}

/* The reference steps, in float32 as PyTorch's CPU kernels compute them. */
static void clip(float *g, double max_norm, double *norm_out) {
  float sq = 0;
  for (int i = 0; i < N; i++) sq += g[i] * g[i];
  float norm = sqrtf(sqrtf(sq) * sqrtf(sq));
  *norm_out = norm;
  float coef = (float)max_norm / (norm + 1e-6f);
  if (coef < 1)
    for (int i = 0; i < N; i++) g[i] *= coef;
}

static void run(uj_optim_config cfg, const char *name) {
  float p[N] = {1, 1, 1, 1, 1}, m[N] = {0}, v[N] = {0};
  uj_tensor *pt = tf32(S, (int64_t[]){N}, 1, p);
  CHECK(uj_tensor_set_requires_grad(pt, true) == UJ_OK, "%s: %s", name, uj_session_error(S));
  uj_optimizer *o = uj_optim_new(S, &cfg, &pt, 1);
  CHECK(o != NULL, "%s: %s", name, uj_session_error(S));
  if (!o) return;
  size_t compiled = 0;
  if (cfg.kind == UJ_OPTIM_ADAMW) { /* the defaults, as the optimizer takes them */
    cfg.beta1 = cfg.beta1 ? cfg.beta1 : 0.9, cfg.beta2 = cfg.beta2 ? cfg.beta2 : 0.999, cfg.eps = cfg.eps ? cfg.eps : 1e-8;
  }
  for (int step = 1; step <= STEPS; step++) {
    double lr = cfg.lr * (1.0 + 0.25 * step); /* a new rate every step */
    uj_optim_set_lr(o, lr);
    uj_optim_zero_grad(o);
    uj_tensor *l = loss_of(pt);
    CHECK(uj_tensor_backward(l) == UJ_OK, "%s: backward: %s", name, uj_session_error(S));
    CHECK(uj_optim_step(o, &l, 1) == UJ_OK, "%s: step: %s", name, uj_session_error(S));
    uj_tensor_free(l);
    float g[N];
    double norm = NAN;
    grad_here(p, g);
    if (cfg.max_grad_norm > 0) clip(g, cfg.max_grad_norm, &norm);
    for (int i = 0; i < N; i++) {
      if (cfg.kind == UJ_OPTIM_SGD) {
        float d = g[i] + (float)cfg.weight_decay * p[i];
        if (cfg.momentum > 0) d = m[i] = (float)cfg.momentum * m[i] + d;
        p[i] = p[i] - (float)lr * d;
      } else {
        double bc1 = 1 - pow(cfg.beta1, step), bc2 = 1 - pow(cfg.beta2, step);
        p[i] *= (float)(1 - lr * cfg.weight_decay);
        m[i] = m[i] * (float)cfg.beta1 + g[i] * (float)(1 - cfg.beta1);
        v[i] = v[i] * (float)cfg.beta2 + g[i] * g[i] * (float)(1 - cfg.beta2);
        float denom = sqrtf(v[i]) / (float)sqrt(bc2) + (float)cfg.eps;
        p[i] = p[i] - (float)(lr / bc1) * (m[i] / denom);
      }
    }
    char what[96];
    snprintf(what, sizeof what, "%s: step %d", name, step);
    double want[N];
    for (int i = 0; i < N; i++) want[i] = p[i];
    expect(S, pt, (int64_t[]){N}, 1, want, ulps(4, 1e-6), what);
    if (cfg.max_grad_norm > 0) CHECK(close_to(uj_optim_grad_norm(o), norm, ulps(4, 0)), "%s: norm %g, want %g", what, uj_optim_grad_norm(o), norm);
    if (step == 2) compiled = S->device->compiled.count;
    if (step > 2) CHECK(S->device->compiled.count == compiled, "%s: %zu kernels compiled after step 2", what, S->device->compiled.count - compiled);
  }
  uj_optim_free(o);
  uj_tensor_free(pt);
}

static void test_errors(void) {
  uj_tensor *p = uj_tensor_zeros(S, UJ_FLOAT32, (int64_t[]){3}, 1);
  uj_optim_config cfg = {.kind = UJ_OPTIM_ADAMW, .lr = 1e-3};
  CHECK(uj_optim_new(S, &cfg, &p, 1) == NULL, "not a parameter");
  CHECK_STR(uj_session_error(S), "optimizer: tensor 0 is not a parameter (requires_grad)", "not a parameter");
  uj_tensor_set_requires_grad(p, true);
  CHECK(uj_optim_new(S, &cfg, (uj_tensor *[]){p, p}, 2) == NULL, "twice");
  CHECK_STR(uj_session_error(S), "optimizer: tensor 1 appears twice", "twice");
  cfg.lr = -1;
  CHECK(uj_optim_new(S, &cfg, &p, 1) == NULL, "negative lr");
  CHECK_STR(uj_session_error(S), "optimizer: lr, momentum, weight decay, eps and max_grad_norm must be at least 0, betas in [0, 1)", "negative lr");
  cfg = (uj_optim_config){.kind = (uj_optim_kind)7, .lr = 1};
  CHECK(uj_optim_new(S, &cfg, &p, 1) == NULL, "kind");
  CHECK_STR(uj_session_error(S), "optimizer: unknown kind 7", "kind");
  cfg = (uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 1};
  uj_optimizer *o = uj_optim_new(S, &cfg, &p, 1);
  CHECK(o && uj_optim_step(o, NULL, 0) == UJ_OK, "a step without grads does nothing");
  expect(S, p, (int64_t[]){3}, 1, VALS(0, 0, 0), EXACT, "untouched");
  CHECK(isnan(uj_optim_grad_norm(o)), "no norm without clipping");
  uj_optim_free(o);
  uj_session_clear_error(S);
}

/* A training loop holds flat memory and compiles nothing after its first
 * steps: a two-layer MLP, AdamW, 300 steps; the nodes (after a collection,
 * which the session makes once the context has doubled: forced here at
 * steps 20 and 300), buffers, cached schedules and compiled kernels at
 * step 20 and at step 300. */
static void test_flat(void) {
  Rng r = {7};
  double *v;
  uj_tensor *x = random_f32(S, &r, (int64_t[]){16, 8}, 2, -1, 1, false, &v);
  free(v);
  uj_tensor *w1 = random_f32(S, &r, (int64_t[]){8, 16}, 2, -0.3, 0.3, false, &v);
  free(v);
  uj_tensor *w2 = random_f32(S, &r, (int64_t[]){16, 4}, 2, -0.3, 0.3, false, &v);
  free(v);
  int32_t lab[16];
  for (int i = 0; i < 16; i++) lab[i] = i % 4;
  uj_tensor *labels = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){16, 1}, 2, lab);
  uj_tensor_set_requires_grad(w1, true), uj_tensor_set_requires_grad(w2, true);
  uj_optim_config cfg = {.kind = UJ_OPTIM_ADAMW, .lr = 1e-2, .weight_decay = 0.01, .max_grad_norm = 1};
  uj_optimizer *o = uj_optim_new(S, &cfg, (uj_tensor *[]){w1, w2}, 2);
  size_t nodes = 0, buffers = 0, compiled = 0, schedules = 0, tensors = 0;
  float first = 0, last = 0;
  for (int step = 1; step <= 300; step++) {
    if (step == 20 || step == 300) S->collect_at = 0; /* the next realize collects */
    uj_optim_zero_grad(o);
    uj_tensor *a = uj_tensor_matmul(x, w1), *h = uj_tensor_unary(UJ_UN_RELU, a), *z = uj_tensor_matmul(h, w2);
    uj_tensor *lp = uj_tensor_log_softmax(z, 1), *picked = uj_tensor_gather(lp, 1, labels);
    uj_tensor *mean = uj_tensor_reduce(UJ_RED_MEAN, picked, NULL, 0, false), *loss = uj_tensor_binary_scalar(UJ_BIN_MUL, mean, -1, false);
    bool ok = uj_tensor_backward(loss) == UJ_OK && uj_optim_step(o, &loss, 1) == UJ_OK && uj_tensor_to_host(loss, step == 1 ? &first : &last, 4) == UJ_OK;
    if (!ok) CHECK(ok, "step %d: %s", step, uj_session_error(S));
    /* the tensors of a step, freed as a loop over steps does */
    for (uj_tensor **t = (uj_tensor *[]){a, h, z, lp, picked, mean, loss, NULL}; *t; t++) uj_tensor_free(*t);
    if (!ok) break;
    if (getenv("DBG") && (step == 20 || step == 21)) fprintf(stderr, "known %zu sched %zu tensors %zu\n", S->nknown, schedule_cache_size(S->schedules), S->ntensors);
    if (step == 20) nodes = S->ctx->nnodes, buffers = S->buffers.nids, compiled = S->device->compiled.count, schedules = schedule_cache_size(S->schedules);
    if (step == 1) tensors = S->ntensors; /* with the optimizer's grad buffers, made at its first step */
    if (step == 20 || step == 300) CHECK(S->ntensors == tensors, "step %d: %zu tensors live, %zu after step 1", step, S->ntensors, tensors);
  }
  CHECK(last < first * 0.5f, "the loss goes down: %g at step 1, %g at step 300", first, last);
  CHECK(S->ctx->nnodes <= nodes, "nodes: %zu at step 20, %zu at step 300", nodes, S->ctx->nnodes);
  CHECK(S->buffers.nids <= buffers, "buffers: %zu at step 20, %zu at step 300", buffers, S->buffers.nids);
  CHECK(S->device->compiled.count == compiled, "kernels compiled: %zu at step 20, %zu at step 300", compiled, S->device->compiled.count);
  CHECK(schedule_cache_size(S->schedules) == schedules, "schedules: %zu at step 20, %zu at step 300", schedules, schedule_cache_size(S->schedules));
  uj_optim_free(o);
  for (uj_tensor **t = (uj_tensor *[]){x, w1, w2, labels, NULL}; *t; t++) uj_tensor_free(*t);
}

int main(void) {
  S = suite_session("test_optim");
  run((uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.01}, "sgd");
  run((uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.01, .momentum = 0.9, .weight_decay = 0.1}, "sgd momentum");
  run((uj_optim_config){.kind = UJ_OPTIM_ADAMW, .lr = 0.1}, "adamw");
  run((uj_optim_config){.kind = UJ_OPTIM_ADAMW, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.01,
                        .max_grad_norm = 1.5}, "adamw clipped");
  run((uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.02, .momentum = 0.5, .max_grad_norm = 100}, "sgd clip off");
  test_errors();
  test_flat();
  uj_session_free(S);
  return check_report("test_optim");
}
