/* test_gpt2_model.c — the parts of tools/gpt2 below the command line:
 * the model's one-token step with a key/value cache against its full
 * forward pass, checkpoints (a training checkpoint restored exactly, a
 * file in Hugging Face's layout read), the batches, the learning rate
 * schedule and the sampler. The whole program (prepare, train, resume,
 * sample, against PyTorch's losses) is test/gpt2_e2e.sh. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checkpoint.h"
#include "data.h"
#include "model.h"
#include "sample.h"
#include "train.h"

static const gpt2_config TINY = {.layers = 2, .width = 32, .heads = 4, .context = 16, .vocab = 97};

static float *host(uj_tensor *t) {
  size_t n = (size_t)uj_tensor_numel(t);
  float *v = malloc(n * sizeof *v);
  if (v && uj_tensor_to_host(t, v, n * sizeof *v) != UJ_OK) free(v), v = NULL;
  return v;
}

/* The logits of one token at a time through the cache equal the full
 * forward pass's at each position (to float32 rounding: the two sum in
 * other orders), for a model whose weights are not near zero. */
static void test_decode_matches_forward(uj_session *s) {
  char err[256];
  gpt2 *m = gpt2_new(s, &TINY, 7, err, sizeof err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  for (size_t i = 0; i < m->nparams; i++) { /* weights of some size: the attention's softmax far from uniform */
    uj_tensor *big = uj_tensor_binary_scalar(UJ_BIN_MUL, m->params[i], uj_tensor_ndim(m->params[i]) == 2 ? 25 : 1, false);
    CHECK(big && uj_tensor_assign(m->params[i], big) == UJ_OK, "%s", uj_session_error(s));
    uj_tensor_free(big);
  }
  enum { T = 12 };
  int32_t tokens[T];
  for (int i = 0; i < T; i++) tokens[i] = (i * 37 + 5) % TINY.vocab;
  gpt2_scope k = {0};
  uj_tensor *in = gpt2_keep(&k, uj_tensor_from_data(s, UJ_INT32, (int64_t[]){1, T}, 2, tokens));
  float *full = host(gpt2_logits(m, &k, in, 1, T));
  CHECK(full != NULL, "%s", uj_session_error(s));
  gpt2_cache c;
  CHECK(gpt2_cache_init(m, &c), "%s", uj_session_error(s));
  float logits[97];
  double worst = 0, scale = 0;
  for (int t = 0; full && t < T; t++) {
    CHECK(gpt2_decode(m, &c, tokens[t], logits), "decode at %d", t);
    for (int v = 0; v < TINY.vocab; v++)
      worst = fmax(worst, fabs(logits[v] - full[t * TINY.vocab + v])), scale = fmax(scale, fabs(full[t * TINY.vocab + v]));
  }
  CHECK(c.len == T, "the cache holds %d positions", c.len);
  CHECK(scale > 1 && worst <= 1e-5 * scale, "cached logits differ by %g (largest logit %g)", worst, scale);
  /* a full cache refuses another token */
  while (c.len < TINY.context) CHECK(gpt2_decode(m, &c, 1, logits), "decode at %d", c.len);
  CHECK(!gpt2_decode(m, &c, 1, logits), "a token past the context was taken");
  gpt2_cache_free(m, &c);
  free(full);
  gpt2_scope_free(&k);
  gpt2_free(m);
}

/* A model at initialization predicts every token about equally. */
static void test_initial_loss(uj_session *s) {
  char err[256];
  gpt2 *m = gpt2_new(s, &TINY, 3, err, sizeof err);
  CHECK(m != NULL, "%s", err);
  if (!m) return;
  int32_t in[2 * 16], out[2 * 16];
  for (int i = 0; i < 32; i++) in[i] = (i * 11) % 97, out[i] = (i * 13 + 1) % 97;
  gpt2_scope k = {0};
  uj_tensor *a = gpt2_keep(&k, uj_tensor_from_data(s, UJ_INT32, (int64_t[]){2, 16}, 2, in));
  uj_tensor *b = gpt2_keep(&k, uj_tensor_from_data(s, UJ_INT32, (int64_t[]){2, 16}, 2, out));
  float loss = NAN;
  uj_tensor *l = gpt2_loss(m, &k, a, b, 2, 16);
  CHECK(l && uj_tensor_to_host(l, &loss, sizeof loss) == UJ_OK, "%s", uj_session_error(s));
  CHECK(fabs(loss - log(97.0)) < 0.05, "initial loss %g, ln 97 = %g", loss, log(97.0));
  CHECK(gpt2_loss(m, &k, a, b, 1, 17) == NULL, "a batch longer than the context was taken");
  gpt2_scope_free(&k);
  gpt2_free(m);
  gpt2_config bad = TINY;
  bad.heads = 5;
  CHECK(!gpt2_new(s, &bad, 1, err, sizeof err) && strstr(err, "multiple of the heads"), "width 32 with 5 heads: %s", err);
}

static bool same_values(uj_tensor *a, uj_tensor *b) {
  float *x = host(a), *y = host(b);
  bool same = x && y && uj_tensor_numel(a) == uj_tensor_numel(b) && !memcmp(x, y, (size_t)uj_tensor_numel(a) * sizeof *x);
  free(x), free(y);
  return same;
}

/* Two AdamW steps, saved; a new model and optimizer loaded from the file
 * hold the same parameters, moments and step count, bit for bit. */
static void test_checkpoint_round_trip(uj_session *s, const char *dir) {
  char err[256], path[512];
  snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
  gpt2 *m = gpt2_new(s, &TINY, 5, err, sizeof err), *r = gpt2_new(s, &TINY, 6, err, sizeof err);
  uj_optim_config oc = {.kind = UJ_OPTIM_ADAMW, .lr = 1e-2, .beta2 = 0.95, .weight_decay = 0.1, .max_grad_norm = 1};
  uj_optimizer *o = m ? uj_optim_new(s, &oc, m->params, m->nparams) : NULL, *ro = r ? uj_optim_new(s, &oc, r->params, r->nparams) : NULL;
  CHECK(o && ro, "%s", uj_session_error(s));
  if (!o || !ro) return;
  int32_t in[16], out[16];
  for (int step = 0; step < 2; step++) {
    for (int i = 0; i < 16; i++) in[i] = (i * 5 + step) % 97, out[i] = (i * 3 + 2) % 97;
    gpt2_scope k = {0};
    uj_tensor *a = gpt2_keep(&k, uj_tensor_from_data(s, UJ_INT32, (int64_t[]){1, 16}, 2, in));
    uj_tensor *b = gpt2_keep(&k, uj_tensor_from_data(s, UJ_INT32, (int64_t[]){1, 16}, 2, out));
    uj_optim_zero_grad(o);
    uj_tensor *l = gpt2_loss(m, &k, a, b, 1, 16);
    CHECK(l && uj_tensor_backward(l) == UJ_OK && uj_optim_step(o, &l, 1) == UJ_OK, "%s", uj_session_error(s));
    gpt2_scope_free(&k);
  }
  gpt2_meta meta = {0};
  meta_set(&meta, "seed", "%d", 42);
  CHECK(checkpoint_save(path, m, o, &meta, err, sizeof err), "%s", err);
  gpt2_config cfg;
  gpt2_meta got;
  CHECK(checkpoint_peek(s, path, &cfg, &got, err, sizeof err), "%s", err);
  CHECK(!memcmp(&cfg, &TINY, sizeof cfg), "config %d %d %d %d %d", cfg.layers, cfg.width, cfg.heads, cfg.context, cfg.vocab);
  CHECK_STR(meta_get(&got, "seed"), "42", "metadata seed");
  CHECK_STR(meta_get(&got, "step"), "2", "metadata step");
  CHECK(checkpoint_load(path, r, ro, err, sizeof err), "%s", err);
  CHECK(uj_optim_steps(ro) == 2, "steps %lld", (long long)uj_optim_steps(ro));
  for (size_t i = 0; i < m->nparams; i++) {
    CHECK(same_values(m->params[i], r->params[i]), "%s differs after loading", m->names[i]);
    for (int w = 0; w < 2; w++) CHECK(same_values(uj_optim_state(o, i, w), uj_optim_state(ro, i, w)), "moment %d of %s differs", w, m->names[i]);
  }
  /* a model of another shape refuses the file, naming the tensor */
  gpt2_config wide = TINY;
  wide.width = 64;
  gpt2 *w = gpt2_new(s, &wide, 1, err, sizeof err);
  CHECK(w && !checkpoint_load(path, w, NULL, err, sizeof err) && strstr(err, "wte.weight") && strstr(err, "shape"), "%s", err);
  gpt2_free(w);
  uj_optim_free(o), uj_optim_free(ro);
  gpt2_free(m), gpt2_free(r);
  unlink(path);
}

/* A file as Hugging Face's gpt2 keeps it: "transformer."-prefixed
 * names, Conv1D weights (in, out), the tied lm_head.weight and the
 * attention's mask buffers beside the parameters, no metadata. */
static void test_hugging_face_layout(uj_session *s, const char *dir) {
  char err[256], path[512];
  snprintf(path, sizeof path, "%s/hf.safetensors", dir);
  const gpt2_config hf = {.layers = 1, .width = 128, .heads = 2, .context = 8, .vocab = 50};
  gpt2 *src = gpt2_new(s, &hf, 9, err, sizeof err);
  CHECK(src != NULL, "%s", err);
  if (!src) return;
  size_t n = src->nparams + 3;
  const char **names = calloc(n, sizeof *names);
  uj_tensor **ts = calloc(n, sizeof *ts);
  char(*owned)[64] = calloc(n, sizeof *owned);
  for (size_t i = 0; i < src->nparams; i++) snprintf(owned[i], 64, "transformer.%s", src->names[i]), names[i] = owned[i], ts[i] = src->params[i];
  uj_tensor *mask = uj_tensor_ones(s, UJ_FLOAT32, (int64_t[]){1, 1, 8, 8}, 4);
  names[src->nparams] = "transformer.h.0.attn.bias", ts[src->nparams] = mask;
  names[src->nparams + 1] = "transformer.h.0.attn.masked_bias", ts[src->nparams + 1] = mask;
  names[src->nparams + 2] = "lm_head.weight", ts[src->nparams + 2] = src->params[GPT2_WTE];
  CHECK(uj_safetensors_save(s, path, names, ts, n, NULL, NULL, 0) == UJ_OK, "%s", uj_session_error(s));
  gpt2_config cfg;
  gpt2_meta meta;
  CHECK(checkpoint_peek(s, path, &cfg, &meta, err, sizeof err), "%s", err);
  CHECK(!memcmp(&cfg, &hf, sizeof cfg), "config read off the shapes: %d %d %d %d %d", cfg.layers, cfg.width, cfg.heads, cfg.context, cfg.vocab);
  gpt2 *dst = gpt2_new(s, &cfg, 10, err, sizeof err);
  CHECK(dst && checkpoint_load(path, dst, NULL, err, sizeof err), "%s", err);
  for (size_t i = 0; dst && i < dst->nparams; i++) CHECK(same_values(src->params[i], dst->params[i]), "%s", dst->names[i]);
  gpt2_free(dst);
  /* without its embedding the file is not a GPT-2 checkpoint */
  CHECK(uj_safetensors_save(s, path, names + 2, ts + 2, 3, NULL, NULL, 0) == UJ_OK, "%s", uj_session_error(s));
  CHECK(!checkpoint_peek(s, path, &cfg, &meta, err, sizeof err) && strstr(err, "not a GPT-2 checkpoint"), "%s", err);
  uj_tensor_free(mask);
  free(names), free(ts), free(owned);
  gpt2_free(src);
  unlink(path);
}

static void test_batches(void) {
  uint16_t ids[100];
  for (int i = 0; i < 100; i++) ids[i] = (uint16_t)i;
  gpt2_tokens t = {ids, 100};
  int32_t in[3 * 8], out[3 * 8], in2[3 * 8], out2[3 * 8];
  CHECK(batch_train(&t, 1, 5, 0, 3, 8, in, out), "a batch");
  CHECK(batch_train(&t, 1, 5, 0, 3, 8, in2, out2) && !memcmp(in, in2, sizeof in), "the same (seed, step) gives the same batch");
  for (int i = 0; i < 3 * 8; i++) CHECK(out[i] == in[i] + 1 && out[i] < 100, "targets are the next tokens");
  CHECK(batch_train(&t, 1, 6, 0, 3, 8, in2, out2) && memcmp(in, in2, sizeof in), "another step, another batch");
  CHECK(batch_train(&t, 1, 5, 1, 3, 8, in2, out2) && memcmp(in, in2, sizeof in), "another micro-batch, another batch");
  CHECK(batch_val(&t, 0, 2, 3, 8, in, out) && in[0] == 0, "the first validation window starts at 0");
  CHECK(batch_val(&t, 1, 2, 3, 8, in, out) && in[2 * 8] == 100 - 8 - 1, "the last ends at the last token");
  gpt2_tokens few = {ids, 8};
  CHECK(!batch_train(&few, 1, 0, 0, 1, 8, in, out), "8 tokens make no window of 9");
}

static void test_lr(void) {
  train_opts o = {.cfg = TINY};
  train_defaults(&o);
  o.lr = 1e-3, o.min_lr = 1e-4, o.warmup = 10, o.steps = 111;
  CHECK(fabs(train_lr(&o, 0) - 1e-4) < 1e-12, "warm-up starts at lr / warmup: %g", train_lr(&o, 0));
  CHECK(fabs(train_lr(&o, 9) - 1e-3) < 1e-12, "and reaches lr: %g", train_lr(&o, 9));
  CHECK(fabs(train_lr(&o, 10) - 1e-3) < 1e-12, "the cosine starts at lr: %g", train_lr(&o, 10));
  CHECK(fabs(train_lr(&o, 110) - 1e-4) < 1e-12, "and ends at min_lr: %g", train_lr(&o, 110));
  CHECK(fabs(train_lr(&o, 60) - 5.5e-4) < 1e-12, "halfway: %g", train_lr(&o, 60));
}

static void test_sampler(void) {
  float logits[5] = {0.5f, 3.0f, -1.0f, 2.9f, 0.0f}, scratch[5];
  CHECK(sample_pick(logits, 5, 0, 0, 0.99, scratch) == 1, "temperature 0 takes the largest");
  CHECK(sample_pick(logits, 5, 1, 1, 0.99, scratch) == 1, "top-k 1 takes the largest");
  for (int i = 0; i < 100; i++) {
    int32_t t = sample_pick(logits, 5, 1, 2, i / 100.0, scratch);
    CHECK(t == 1 || t == 3, "top-k 2 drew %d", t);
  }
  int counts[5] = {0};
  for (int i = 0; i < 1000; i++) counts[sample_pick(logits, 5, 1, 0, (i + 0.5) / 1000, scratch)]++;
  double z = exp(0.5) + exp(3) + exp(-1) + exp(2.9) + 1;
  CHECK(abs(counts[1] - (int)(1000 * exp(3) / z)) <= 2, "draws follow the softmax: %d of 1000 for p %g", counts[1], exp(3) / z);
}

int main(void) {
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  CHECK(s != NULL, "%s", why);
  char dir[] = "/tmp/uj_gpt2_model.XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  if (s) {
    test_decode_matches_forward(s);
    test_initial_loss(s);
    test_checkpoint_round_trip(s, dir);
    test_hugging_face_layout(s, dir);
  }
  test_batches();
  test_lr();
  test_sampler();
  uj_session_free(s);
  rmdir(dir);
  return check_report("test_gpt2_model");
}
