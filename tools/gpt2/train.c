/* train.c — the training loop (train.h). */
#define _POSIX_C_SOURCE 200809L

#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "curve.h"
#include "data.h"
#include "util.h"

void train_defaults(train_opts *o) {
  *o = (train_opts){.cfg = o->cfg, .device = o->device, .data_dir = o->data_dir, .out_dir = o->out_dir};
  o->seed = 1, o->batch = 4, o->T = o->cfg.context, o->accum = 1;
  o->steps = 100, o->warmup = 10;
  o->lr = 6e-4, o->min_lr = 6e-5, o->weight_decay = 0.1, o->clip = 1.0;
  o->val_every = 50, o->val_batches = 8, o->ckpt_every = 0;
}

double train_lr(const train_opts *o, int64_t step) {
  if (step < o->warmup) return o->lr * (double)(step + 1) / (double)o->warmup;
  if (o->steps <= o->warmup + 1) return o->lr;
  double progress = (double)(step - o->warmup) / (double)(o->steps - o->warmup - 1);
  if (progress > 1) progress = 1;
  return o->min_lr + 0.5 * (o->lr - o->min_lr) * (1 + cos(3.14159265358979323846 * progress));
}

typedef struct Run {
  train_opts *o;
  uj_session *s;
  gpt2 *model;
  uj_optimizer *opt;
  gpt2_tokens train, val;
  int32_t *in, *out; /* a micro-batch's tokens */
  char err[512];
} Run;

static bool fail(Run *r, const char *what) {
  snprintf(r->err, sizeof r->err, "%s: %s", what, uj_session_error(r->s));
  return false;
}

/* The loss of tokens r->in against r->out (batch × T), with the
 * gradients of loss × scale added to the parameters' when backward. */
static bool micro_step(Run *r, bool backward, double scale, bool last, float *loss) {
  train_opts *o = r->o;
  gpt2_scope k = {0};
  int64_t shape[2] = {o->batch, o->T};
  uj_tensor *in = gpt2_keep(&k, uj_tensor_from_data(r->s, UJ_INT32, shape, 2, r->in));
  uj_tensor *out = gpt2_keep(&k, uj_tensor_from_data(r->s, UJ_INT32, shape, 2, r->out));
  uj_tensor *l = gpt2_loss(r->model, &k, in, out, o->batch, o->T);
  bool ok = l != NULL;
  if (ok && backward) {
    uj_tensor *scaled = scale == 1 ? l : gpt2_keep(&k, uj_tensor_binary_scalar(UJ_BIN_MUL, l, scale, false));
    ok = scaled && uj_tensor_backward(scaled) == UJ_OK;
    if (ok && last) ok = uj_optim_step(r->opt, &l, 1) == UJ_OK;
    else if (ok) { /* the gradients so far into buffers, with the loss: one micro-batch's activations at a time */
      size_t n = r->model->nparams;
      uj_tensor **ts = malloc((n + 1) * sizeof *ts);
      ok = ts != NULL;
      for (size_t i = 0; ok && i < n; i++) ts[i] = uj_tensor_grad(r->model->params[i]);
      if (ok) ts[n] = l, ok = uj_tensor_realize(ts, n + 1) == UJ_OK;
      free(ts);
    }
  }
  ok = ok && uj_tensor_to_host(l, loss, sizeof *loss) == UJ_OK;
  gpt2_scope_free(&k);
  return ok || fail(r, backward ? "training step" : "validation");
}

static bool val_loss(Run *r, double *loss) {
  double sum = 0;
  for (int i = 0; i < r->o->val_batches; i++) {
    float l;
    if (!batch_val(&r->val, i, r->o->val_batches, r->o->batch, r->o->T, r->in, r->out))
      return snprintf(r->err, sizeof r->err, "the validation tokens are fewer than T + 1 = %d", r->o->T + 1), false;
    if (!micro_step(r, false, 1, false, &l)) return false;
    sum += l;
  }
  *loss = sum / r->o->val_batches;
  return true;
}

/* One optimizer step (step is 0-based); its mean micro-batch loss. */
static bool train_step(Run *r, int64_t step, double *loss) {
  train_opts *o = r->o;
  uj_optim_set_lr(r->opt, train_lr(o, step));
  uj_optim_zero_grad(r->opt);
  double sum = 0;
  for (int m = 0; m < o->accum; m++) {
    float l;
    if (!batch_train(&r->train, o->seed, step, m, o->batch, o->T, r->in, r->out))
      return snprintf(r->err, sizeof r->err, "the training tokens are fewer than T + 1 = %d", o->T + 1), false;
    if (!micro_step(r, true, 1.0 / o->accum, m == o->accum - 1, &l)) return false;
    sum += l;
  }
  *loss = sum / o->accum;
  return true;
}

/* ---- the options in a checkpoint's metadata ---- */

static void opts_to_meta(const train_opts *o, gpt2_meta *m) {
  meta_set(m, "seed", "%llu", (unsigned long long)o->seed), meta_set(m, "batch", "%d", o->batch), meta_set(m, "T", "%d", o->T);
  meta_set(m, "accum", "%d", o->accum), meta_set(m, "steps", "%lld", (long long)o->steps), meta_set(m, "warmup", "%lld", (long long)o->warmup);
  meta_set(m, "lr", "%.17g", o->lr), meta_set(m, "min_lr", "%.17g", o->min_lr), meta_set(m, "weight_decay", "%.17g", o->weight_decay);
  meta_set(m, "clip", "%.17g", o->clip), meta_set(m, "val_every", "%d", o->val_every), meta_set(m, "val_batches", "%d", o->val_batches);
  meta_set(m, "ckpt_every", "%d", o->ckpt_every);
}

/* The options of a resumed run: the checkpoint's, but for steps when
 * the command line gave more. */
static bool opts_from_meta(train_opts *o, const gpt2_meta *m, char *err, size_t errlen) {
  const char *keys[] = {"seed", "batch", "T", "accum", "steps", "warmup", "lr", "min_lr", "weight_decay", "clip", "val_every", "val_batches", "ckpt_every"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (!meta_get(m, keys[i])) return snprintf(err, errlen, "the checkpoint has no %s: not one of a training run", keys[i]), false;
  int64_t steps = o->steps;
  o->seed = strtoull(meta_get(m, "seed"), NULL, 10), o->batch = atoi(meta_get(m, "batch")), o->T = atoi(meta_get(m, "T"));
  o->accum = atoi(meta_get(m, "accum")), o->steps = atoll(meta_get(m, "steps")), o->warmup = atoll(meta_get(m, "warmup"));
  o->lr = atof(meta_get(m, "lr")), o->min_lr = atof(meta_get(m, "min_lr")), o->weight_decay = atof(meta_get(m, "weight_decay"));
  o->clip = atof(meta_get(m, "clip")), o->val_every = atoi(meta_get(m, "val_every")), o->val_batches = atoi(meta_get(m, "val_batches"));
  o->ckpt_every = atoi(meta_get(m, "ckpt_every"));
  if (steps > o->steps) o->steps = steps;
  return true;
}

/* ---- the log ---- */

/* out_dir/log.tsv, kept up to step `upto` (a resumed run drops the lines
 * of steps it runs again), opened to append. */
static FILE *log_open(const char *dir, int64_t upto, char *err, size_t errlen) {
  char path[4096], tmp[4200], line[256];
  snprintf(path, sizeof path, "%s/log.tsv", dir), snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *in = upto > 0 ? fopen(path, "r") : NULL, *out = fopen(tmp, "w");
  if (!out) return snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno)), in ? fclose(in) : 0, NULL;
  fprintf(out, "step\ttrain_loss\tval_loss\tlr\n");
  while (in && fgets(line, sizeof line, in))
    if (atoll(line) > 0 && atoll(line) <= upto) fputs(line, out);
  if (in) fclose(in);
  if (fclose(out) != 0 || rename(tmp, path) != 0) return snprintf(err, errlen, "%.400s: %s", path, strerror(errno)), NULL;
  FILE *f = fopen(path, "a");
  if (!f) snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
  return f;
}

static void format_duration(double s, char *buf, size_t len) {
  if (!(s >= 0) || s > 1e7) snprintf(buf, len, "?");
  else if (s >= 3600) snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
  else if (s >= 60) snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
  else snprintf(buf, len, "%.0fs", s);
}

/* ---- the run ---- */

static bool save(Run *r, int64_t step) {
  char path[4096];
  gpt2_meta meta = {0};
  opts_to_meta(r->o, &meta);
  snprintf(path, sizeof path, "%s/checkpoint.safetensors", r->o->out_dir);
  if (!checkpoint_save(path, r->model, r->opt, &meta, r->err, sizeof r->err)) return false;
  printf("checkpoint: step %lld in %s\n", (long long)step, path);
  return true;
}

static bool setup(Run *r) {
  train_opts *o = r->o;
  const char *why = NULL;
  gpt2_meta meta = {0};
  if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) return snprintf(r->err, sizeof r->err, "%s: %s", o->out_dir, strerror(errno)), false;
  if (!(r->s = uj_session_new(o->device ? o->device : getenv("UJ_DEVICE") ? getenv("UJ_DEVICE") : "CPU", &why)))
    return snprintf(r->err, sizeof r->err, "%s", why), false;
  if (o->resume && (!checkpoint_peek(r->s, o->resume, &o->cfg, &meta, r->err, sizeof r->err) || !opts_from_meta(o, &meta, r->err, sizeof r->err)))
    return false;
  char path[4096];
  snprintf(path, sizeof path, "%s/train.bin", o->data_dir);
  if (!tokens_read(path, &r->train, r->err, sizeof r->err)) return false;
  snprintf(path, sizeof path, "%s/val.bin", o->data_dir);
  if (!tokens_read(path, &r->val, r->err, sizeof r->err)) return false;
  if (o->T < 1 || o->T > o->cfg.context || o->batch < 1 || o->accum < 1 || o->steps < 1 || o->warmup < 0)
    return snprintf(r->err, sizeof r->err, "T must be in [1, context %d]; batch, accum and steps at least 1", o->cfg.context), false;
  if (!(r->model = gpt2_new(r->s, &o->cfg, o->seed, r->err, sizeof r->err))) return false;
  uj_optim_config oc = {.kind = UJ_OPTIM_ADAMW, .lr = o->lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = o->weight_decay,
                        .max_grad_norm = o->clip};
  if (!(r->opt = uj_optim_new(r->s, &oc, r->model->params, r->model->nparams))) return fail(r, "optimizer");
  const char *from = o->resume ? o->resume : o->init;
  if (from && !checkpoint_load(from, r->model, o->resume ? r->opt : NULL, r->err, sizeof r->err)) return false;
  if (o->save_init) {
    gpt2_meta none = {0};
    opts_to_meta(o, &none);
    if (!checkpoint_save(o->save_init, r->model, NULL, &none, r->err, sizeof r->err)) return false;
  }
  size_t n = (size_t)o->batch * (size_t)o->T;
  r->in = malloc(n * sizeof *r->in), r->out = malloc(n * sizeof *r->out);
  if (!r->in || !r->out) return snprintf(r->err, sizeof r->err, "out of memory"), false;
  return true;
}

static void teardown(Run *r) {
  free(r->in), free(r->out);
  tokens_free(&r->train), tokens_free(&r->val);
  uj_optim_free(r->opt);
  gpt2_free(r->model);
  uj_session_free(r->s);
}

static bool loop(Run *r) {
  train_opts *o = r->o;
  int64_t first = uj_optim_steps(r->opt);
  FILE *log = log_open(o->out_dir, first, r->err, sizeof r->err);
  if (!log) return false;
  printf("gpt2: %d layers, width %d, %d heads, context %d, vocab %d: %.2fM parameters; %lld steps of %d x %d x %d tokens%s\n", o->cfg.layers,
         o->cfg.width, o->cfg.heads, o->cfg.context, o->cfg.vocab, (double)gpt2_config_numel(&o->cfg) / 1e6, (long long)o->steps, o->accum,
         o->batch, o->T, first ? ", resumed" : "");
  double tokens = (double)o->accum * o->batch * o->T, spent = 0;
  int timed = 0;
  bool ok = true;
  int64_t last = o->stop_after > first && o->stop_after < o->steps ? o->stop_after : o->steps;
  for (int64_t step = first; ok && step < last; step++) {
    double t0 = gpt2_now_s(), loss = NAN, val = NAN;
    ok = train_step(r, step, &loss);
    double dt = gpt2_now_s() - t0;
    if (step > first) spent += dt, timed++; /* the first step compiles: not counted in the time left */
    if (ok && o->val_every && ((step + 1) % o->val_every == 0 || step + 1 == o->steps)) ok = val_loss(r, &val);
    if (!ok) break;
    char left[32], vs[48] = "";
    format_duration(timed ? spent / timed * (double)(o->steps - step - 1) : NAN, left, sizeof left);
    if (!isnan(val)) snprintf(vs, sizeof vs, "  val %.4f", val);
    printf("step %lld/%lld  loss %.4f%s  lr %.2e  %.0f tok/s  %.0f ms  %s left\n", (long long)step + 1, (long long)o->steps, loss, vs,
           train_lr(o, step), tokens / dt, dt * 1e3, left);
    fflush(stdout);
    fprintf(log, "%lld\t%.9g\t%.9g\t%.9g\n", (long long)step + 1, loss, val, train_lr(o, step));
    fflush(log);
    if (o->ckpt_every && (step + 1) % o->ckpt_every == 0 && step + 1 < last) ok = save(r, step + 1);
  }
  fclose(log);
  if (ok) ok = save(r, last);
  if (ok && last < o->steps) printf("stopped after step %lld of %lld: go on with --resume\n", (long long)last, (long long)o->steps);
  else if (ok) {
    char path[4096], logpath[4096];
    snprintf(logpath, sizeof logpath, "%s/log.tsv", o->out_dir), snprintf(path, sizeof path, "%s/loss.svg", o->out_dir);
    ok = curve_svg(logpath, path, r->err, sizeof r->err);
    if (ok) printf("curve: %s\n", path);
  }
  return ok;
}

int train_run(train_opts *o) {
  Run r = {.o = o};
  bool ok = setup(&r) && loop(&r);
  if (!ok) fprintf(stderr, "gpt2: %s\n", r.err);
  teardown(&r);
  return ok ? 0 : 1;
}
