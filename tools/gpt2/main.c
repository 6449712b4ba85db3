/* main.c — the gpt2 program: GPT-2 prepared, trained and sampled on
 * uopjit (docs/gpt2.md).
 *
 *   gpt2 prepare [--text DIR] [--data DIR]
 *   gpt2 train   [--data DIR] [--out DIR] [--size tiny|small|124M] [model and training options]
 *   gpt2 train   --resume DIR/checkpoint.safetensors [--out DIR] [--steps N]
 *   gpt2 sample  CHECKPOINT [--data DIR] [--prompt TEXT] [--tokens N] [--temperature X] [--top-k K] [--seed N]
 *
 * Bad usage prints the usage and exits 2; a failure prints "gpt2: what"
 * and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "sample.h"
#include "train.h"

static const char USAGE[] =
    "usage: gpt2 prepare [--text DIR] [--data DIR]\n"
    "       gpt2 train [--data DIR] [--out DIR] [--size tiny|small|124M] [--layers N] [--width N] [--heads N] [--context N]\n"
    "                  [--batch B] [--seq T] [--accum K] [--steps N] [--warmup N] [--lr X] [--min-lr X] [--weight-decay X]\n"
    "                  [--clip X] [--val-every N] [--val-batches N] [--ckpt-every N] [--seed N] [--init FILE] [--save-init FILE]\n"
    "                  [--stop-after N] [--device NAME]\n"
    "       gpt2 train --resume CHECKPOINT [--data DIR] [--out DIR] [--steps N] [--stop-after N]\n"
    "       gpt2 sample CHECKPOINT [--data DIR] [--prompt TEXT] [--tokens N] [--temperature X] [--top-k K] [--seed N] [--device NAME]\n"
    "defaults: --data data/gpt2, --text /usr/share/games/fortunes, --out out/gpt2, --size small (6 layers, width 384, 6 heads,\n"
    "context 256), batch 4, T the context, 100 steps, AdamW lr 6e-4 to 6e-5 after 10 warm-up steps, weight decay 0.1, clip 1\n";

static int usage(const char *why) {
  if (why) fprintf(stderr, "gpt2: %s\n", why);
  fputs(USAGE, stderr);
  return 2;
}

/* Option parsing: argv[*i] is "--name" with a value after it. */
typedef struct Args {
  int argc, i;
  char **argv;
  const char *bad;
} Args;

static const char *value(Args *a) {
  if (a->i + 1 >= a->argc) return a->bad = a->argv[a->i], NULL;
  return a->argv[++a->i];
}
static bool is(Args *a, const char *name) { return !strcmp(a->argv[a->i], name); }
static long long integer(Args *a) {
  const char *v = value(a);
  char *end = NULL;
  long long n = v ? strtoll(v, &end, 10) : 0;
  if (v && (*end || end == v)) a->bad = a->argv[a->i - 1];
  return n;
}
static double real(Args *a) {
  const char *v = value(a);
  char *end = NULL;
  double x = v ? strtod(v, &end) : 0;
  if (v && (*end || end == v)) a->bad = a->argv[a->i - 1];
  return x;
}

static bool preset(const char *name, gpt2_config *c) {
  static const struct {
    const char *name;
    gpt2_config cfg;
  } presets[] = {{"tiny", {2, 64, 4, 64, 50257}}, {"small", {6, 384, 6, 256, 50257}}, {"124M", {12, 768, 12, 1024, 50257}}};
  for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
    if (!strcmp(presets[i].name, name)) return *c = presets[i].cfg, true;
  return false;
}

static int cmd_prepare(Args *a) {
  const char *text = "/usr/share/games/fortunes", *data = "data/gpt2";
  for (a->i = 2; a->i < a->argc && !a->bad; a->i++) {
    if (is(a, "--text")) text = value(a);
    else if (is(a, "--data")) data = value(a);
    else return usage(a->argv[a->i]);
  }
  if (a->bad) return usage(a->bad);
  char err[512];
  if (!gpt2_prepare(text, data, data, err, sizeof err)) return fprintf(stderr, "gpt2: %s\n", err), 1;
  return 0;
}

static int cmd_train(Args *a) {
  train_opts o = {.data_dir = "data/gpt2", .out_dir = "out/gpt2"};
  preset("small", &o.cfg);
  train_defaults(&o);
  bool seq_given = false;
  for (a->i = 2; a->i < a->argc && !a->bad; a->i++) {
    if (is(a, "--data")) o.data_dir = value(a);
    else if (is(a, "--out")) o.out_dir = value(a);
    else if (is(a, "--resume")) o.resume = value(a);
    else if (is(a, "--init")) o.init = value(a);
    else if (is(a, "--save-init")) o.save_init = value(a);
    else if (is(a, "--device")) o.device = value(a);
    else if (is(a, "--size")) {
      const char *v = value(a);
      if (v && !preset(v, &o.cfg)) return usage("--size takes tiny, small or 124M");
    } else if (is(a, "--layers")) o.cfg.layers = (int)integer(a);
    else if (is(a, "--width")) o.cfg.width = (int)integer(a);
    else if (is(a, "--heads")) o.cfg.heads = (int)integer(a);
    else if (is(a, "--context")) o.cfg.context = (int)integer(a);
    else if (is(a, "--batch")) o.batch = (int)integer(a);
    else if (is(a, "--seq")) o.T = (int)integer(a), seq_given = true;
    else if (is(a, "--accum")) o.accum = (int)integer(a);
    else if (is(a, "--steps")) o.steps = integer(a);
    else if (is(a, "--warmup")) o.warmup = integer(a);
    else if (is(a, "--lr")) o.lr = real(a);
    else if (is(a, "--min-lr")) o.min_lr = real(a);
    else if (is(a, "--weight-decay")) o.weight_decay = real(a);
    else if (is(a, "--clip")) o.clip = real(a);
    else if (is(a, "--val-every")) o.val_every = (int)integer(a);
    else if (is(a, "--val-batches")) o.val_batches = (int)integer(a);
    else if (is(a, "--ckpt-every")) o.ckpt_every = (int)integer(a);
    else if (is(a, "--seed")) o.seed = (uint64_t)integer(a);
    else if (is(a, "--stop-after")) o.stop_after = integer(a);
    else return usage(a->argv[a->i]);
  }
  if (a->bad) return usage(a->bad);
  if (!seq_given) o.T = o.cfg.context;
  if (o.resume) o.steps = 0; /* the checkpoint's, unless --steps asks for more */
  for (a->i = 2; a->i < a->argc; a->i++)
    if (is(a, "--steps") && a->i + 1 < a->argc) o.steps = atoll(a->argv[a->i + 1]);
  return train_run(&o);
}

static int cmd_sample(Args *a) {
  sample_opts o = {.tok_dir = "data/gpt2", .prompt = "", .tokens = 128, .top_k = 40, .temperature = 0.8, .seed = 1};
  for (a->i = 2; a->i < a->argc && !a->bad; a->i++) {
    if (is(a, "--data")) o.tok_dir = value(a);
    else if (is(a, "--prompt")) o.prompt = value(a);
    else if (is(a, "--tokens")) o.tokens = (int)integer(a);
    else if (is(a, "--top-k")) o.top_k = (int)integer(a);
    else if (is(a, "--temperature")) o.temperature = real(a);
    else if (is(a, "--seed")) o.seed = (uint64_t)integer(a);
    else if (is(a, "--device")) o.device = value(a);
    else if (a->argv[a->i][0] != '-' && !o.checkpoint) o.checkpoint = a->argv[a->i];
    else return usage(a->argv[a->i]);
  }
  if (a->bad) return usage(a->bad);
  if (!o.checkpoint) return usage("sample needs a checkpoint");
  if (o.tokens < 0 || o.top_k < 0 || !(o.temperature >= 0)) return usage("--tokens, --top-k and --temperature must be at least 0");
  return sample_run(&o);
}

int main(int argc, char **argv) {
  Args a = {.argc = argc, .argv = argv};
  if (argc < 2) return usage(NULL);
  if (!strcmp(argv[1], "prepare")) return cmd_prepare(&a);
  if (!strcmp(argv[1], "train")) return cmd_train(&a);
  if (!strcmp(argv[1], "sample")) return cmd_sample(&a);
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return fputs(USAGE, stdout), 0;
  return usage(argv[1]);
}
