/* bench_train.c — training steps, uopjit against PyTorch in the same run
 * (bench/train_peer.py, Debian's python3-torch), as ratios.
 *
 * The models, float32, AdamW (lr 1e-3, weight decay 0.01), a step being
 * the forward, the backward and the update:
 *
 *   mlp  784-512-512-10 (ReLU), batch 128, cross-entropy
 *   gpt  a 2-layer GPT: vocab 512, d 256, 4 heads, T 64, batch 8: token
 *        embedding (uj_tensor_gather) plus a learned position embedding,
 *        pre-layernorm blocks of causal self-attention and a GELU (tanh)
 *        MLP of 1024, a final layernorm, a linear head, the next token's
 *        cross-entropy (as test/test_train_torch.c's, larger)
 *
 * uopjit's step is uj_optim_step (the loss and the grads in one schedule,
 * the update in another); PyTorch's is zero_grad, forward, backward, step.
 *
 * The first table: each model on 1 and 2 threads (UJ_THREADS for a new
 * session; torch.set_num_threads), the two contenders alternating over
 * ROUNDS rounds of STEPS steps; the median of the rounds' ms/step. The
 * first step of uopjit (scheduling and compiling every kernel, into an
 * empty disk cache of this run's own) is reported on its own, and the
 * first step of a second model in a fresh session, which loads every
 * kernel from that cache as a second process would (its loss must equal
 * the first's bit for bit).
 *
 * The second: the cost of a step stays flat. The MLP on one thread for
 * FLAT steps (argv[1], default 10,000), each step timed: the median ms of
 * steps 10-19 and of the last 10, uopjit's resident memory after step 10
 * and after the last; PyTorch the same in one process of FLAT steps.
 *
 * Prints Markdown (bench/run.sh pastes it into the README). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "uopjit/tensor.h"

enum { STEPS = 10, ROUNDS = 5, FLAT_WINDOW = 10 };
enum { BATCH = 128, IN = 784, HID = 512, OUT = 10 };                             /* mlp */
enum { G_BATCH = 8, G_T = 64, G_VOCAB = 512, G_D = 256, G_HEADS = 4, G_LAYERS = 2 }; /* gpt */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* This process's resident memory, MiB (NaN where /proc is not there). */
static double rss_mib(void) {
  long size = 0, pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  bool ok = f && fscanf(f, "%ld %ld", &size, &pages) == 2; /* the second: resident */
  if (f) fclose(f);
  return ok ? (double)pages * (double)sysconf(_SC_PAGESIZE) / (1 << 20) : NAN;
}

/* ---- the models ---- */

/* The tensors one step builds, freed at its end. */
typedef struct Tmp {
  uj_tensor *t[256];
  int n;
} Tmp;

static uj_tensor *keep(Tmp *k, uj_tensor *t) {
  if (k->n < (int)(sizeof k->t / sizeof *k->t)) k->t[k->n++] = t;
  else uj_tensor_free(t), t = NULL; /* the step fails, and says so */
  return t;
}
static uj_tensor *mm(Tmp *k, uj_tensor *a, uj_tensor *b) { return keep(k, uj_tensor_matmul(a, b)); }
static uj_tensor *add(Tmp *k, uj_tensor *a, uj_tensor *b) { return keep(k, uj_tensor_binary(UJ_BIN_ADD, a, b)); }
static uj_tensor *reshape(Tmp *k, uj_tensor *a, const int64_t *shape, unsigned nd) { return keep(k, uj_tensor_reshape(a, shape, nd)); }

typedef struct Net Net;
struct Net {
  uj_session *s;
  uj_tensor *p[64]; /* the parameters */
  size_t np;
  uj_tensor *x, *y; /* mlp: the batch and its labels; gpt: the tokens and the next ones (B T,) */
  uj_optimizer *opt;
  uj_tensor *(*loss)(Net *n, Tmp *k);
};

/* A parameter: randn(shape) * scale, or value everywhere when scale is 0. */
static uj_tensor *param(Net *n, const int64_t *shape, unsigned nd, double scale, double value) {
  uj_tensor *t;
  if (scale) {
    uj_tensor *r = uj_tensor_randn(n->s, shape, nd, 100 + n->np);
    t = uj_tensor_binary_scalar(UJ_BIN_MUL, r, scale, false);
    uj_tensor_free(r);
  } else t = uj_tensor_full(n->s, UJ_FLOAT32, shape, nd, value);
  if (t && uj_tensor_set_requires_grad(t, true) != UJ_OK) uj_tensor_free(t), t = NULL;
  return n->p[n->np++] = t;
}

static uj_tensor *mlp_loss(Net *n, Tmp *k) {
  uj_tensor *h = n->x;
  for (int l = 0; l < 3; l++) {
    h = add(k, mm(k, h, n->p[2 * l]), n->p[2 * l + 1]);
    if (l < 2) h = keep(k, uj_tensor_unary(UJ_UN_RELU, h));
  }
  return keep(k, uj_tensor_cross_entropy(h, n->y, -100));
}

static bool mlp_params(Net *n) {
  int64_t dims[4] = {IN, HID, HID, OUT};
  for (int l = 0; l < 3; l++) {
    param(n, (int64_t[]){dims[l], dims[l + 1]}, 2, 1 / sqrt((double)dims[l]), 0);
    param(n, (int64_t[]){dims[l + 1]}, 1, 0.01, 0);
  }
  n->x = uj_tensor_randn(n->s, (int64_t[]){BATCH, IN}, 2, 1);
  int32_t y[BATCH];
  for (int i = 0; i < BATCH; i++) y[i] = (i * 7) % OUT;
  n->y = uj_tensor_from_data(n->s, UJ_INT32, (int64_t[]){BATCH}, 1, y);
  n->loss = mlp_loss;
  return n->x && uj_tensor_realize(&n->x, 1) == UJ_OK;
}

enum { LN1_W, LN1_B, WQ, WK, WV, WO, BO, LN2_W, LN2_B, W1, B1, W2, B2, NBLOCK }; /* a block's parameters */
enum { G_WTE, G_WPE, G_BLOCKS, G_LNF_W = G_BLOCKS + G_LAYERS * NBLOCK, G_LNF_B, G_HEAD, G_NPARAMS };

static uj_tensor *heads(Tmp *k, uj_tensor *x) { /* (B, T, D) -> (B, H, T, D / H) */
  uj_tensor *r = reshape(k, x, (int64_t[]){G_BATCH, G_T, G_HEADS, G_D / G_HEADS}, 4);
  return keep(k, uj_tensor_permute(r, (int[]){0, 2, 1, 3}, 4));
}

static uj_tensor *gpt_block(Tmp *k, uj_tensor *const *w, uj_tensor *h) {
  uj_tensor *a = keep(k, uj_tensor_layernorm(h, w[LN1_W], w[LN1_B], 1e-5));
  uj_tensor *att = keep(k, uj_tensor_attention(heads(k, mm(k, a, w[WQ])), heads(k, mm(k, a, w[WK])), heads(k, mm(k, a, w[WV])), true));
  uj_tensor *merged = reshape(k, keep(k, uj_tensor_permute(att, (int[]){0, 2, 1, 3}, 4)), (int64_t[]){G_BATCH, G_T, G_D}, 3);
  h = add(k, add(k, h, mm(k, merged, w[WO])), w[BO]);
  a = keep(k, uj_tensor_layernorm(h, w[LN2_W], w[LN2_B], 1e-5));
  uj_tensor *up = keep(k, uj_tensor_unary(UJ_UN_GELU, add(k, mm(k, a, w[W1]), w[B1])));
  return add(k, add(k, h, mm(k, up, w[W2])), w[B2]);
}

static uj_tensor *gpt_loss(Net *n, Tmp *k) {
  enum { BT = G_BATCH * G_T };
  uj_tensor *index = keep(k, uj_tensor_expand(reshape(k, n->x, (int64_t[]){BT, 1}, 2), (int64_t[]){BT, G_D}, 2));
  uj_tensor *emb = reshape(k, keep(k, uj_tensor_gather(n->p[G_WTE], 0, index)), (int64_t[]){G_BATCH, G_T, G_D}, 3);
  uj_tensor *h = add(k, emb, n->p[G_WPE]);
  for (int l = 0; l < G_LAYERS; l++) h = gpt_block(k, n->p + G_BLOCKS + l * NBLOCK, h);
  uj_tensor *logits = mm(k, keep(k, uj_tensor_layernorm(h, n->p[G_LNF_W], n->p[G_LNF_B], 1e-5)), n->p[G_HEAD]);
  return keep(k, uj_tensor_cross_entropy(reshape(k, logits, (int64_t[]){BT, G_VOCAB}, 2), n->y, -100));
}

static bool gpt_params(Net *n) {
  enum { D = G_D, F = 4 * G_D };
  param(n, (int64_t[]){G_VOCAB, D}, 2, 0.02, 0); /* G_WTE */
  param(n, (int64_t[]){G_T, D}, 2, 0.02, 0);     /* G_WPE */
  for (int l = 0; l < G_LAYERS; l++) {
    param(n, (int64_t[]){D}, 1, 0, 1), param(n, (int64_t[]){D}, 1, 0, 0);
    for (int i = 0; i < 4; i++) param(n, (int64_t[]){D, D}, 2, 0.02, 0); /* wq wk wv wo */
    param(n, (int64_t[]){D}, 1, 0, 0);
    param(n, (int64_t[]){D}, 1, 0, 1), param(n, (int64_t[]){D}, 1, 0, 0);
    param(n, (int64_t[]){D, F}, 2, 0.02, 0), param(n, (int64_t[]){F}, 1, 0, 0);
    param(n, (int64_t[]){F, D}, 2, 0.02, 0), param(n, (int64_t[]){D}, 1, 0, 0);
  }
  param(n, (int64_t[]){D}, 1, 0, 1), param(n, (int64_t[]){D}, 1, 0, 0);
  param(n, (int64_t[]){D, G_VOCAB}, 2, 0.02, 0); /* G_HEAD */
  int32_t in[G_BATCH * G_T], next[G_BATCH * G_T]; /* train_peer.py's tokens */
  for (int b = 0; b < G_BATCH; b++)
    for (int t = 0; t < G_T; t++) {
      int i = b * (G_T + 1) + t;
      in[b * G_T + t] = (i * 7 + i / 3) % G_VOCAB, next[b * G_T + t] = ((i + 1) * 7 + (i + 1) / 3) % G_VOCAB;
    }
  n->x = uj_tensor_from_data(n->s, UJ_INT32, (int64_t[]){G_BATCH * G_T}, 1, in);
  n->y = uj_tensor_from_data(n->s, UJ_INT32, (int64_t[]){G_BATCH * G_T}, 1, next);
  n->loss = gpt_loss;
  return n->np == G_NPARAMS;
}

static bool net_make(Net *n, bool (*params)(Net *)) {
  const char *why = NULL;
  if (!(n->s = uj_session_new("CPU", &why))) return fprintf(stderr, "bench_train: %s\n", why), false;
  bool ok = params(n);
  for (size_t i = 0; i < n->np; i++) ok = ok && n->p[i];
  uj_optim_config cfg = {.kind = UJ_OPTIM_ADAMW, .lr = 1e-3, .weight_decay = 0.01};
  if (!ok || !(n->opt = uj_optim_new(n->s, &cfg, n->p, n->np))) return fprintf(stderr, "bench_train: %s\n", uj_session_error(n->s)), false;
  return true;
}

/* One training step; the loss in *loss. */
static bool net_step(Net *n, float *loss) {
  uj_optim_zero_grad(n->opt);
  Tmp k = {0};
  uj_tensor *l = n->loss(n, &k);
  bool ok = l && uj_tensor_backward(l) == UJ_OK && uj_optim_step(n->opt, &l, 1) == UJ_OK && uj_tensor_to_host(l, loss, sizeof *loss) == UJ_OK;
  if (!ok) fprintf(stderr, "bench_train: %s\n", uj_session_error(n->s));
  for (int i = 0; i < k.n; i++) uj_tensor_free(k.t[i]);
  return ok;
}

static void net_free(Net *n) {
  uj_optim_free(n->opt);
  uj_session_free(n->s); /* the tensors with it */
}

/* ---- PyTorch ---- */

/* Runs bench/train_peer.py ARGS; the value of each line "NAME X" for
 * names[0..n) into out (NaN where it fails). */
static void peer(const char *args, const char *const *names, double *out, int n) {
  char cmd[256], line[128], name[32];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/train_peer.py %s", args);
  for (int i = 0; i < n; i++) out[i] = NAN;
  FILE *p = popen(cmd, "r");
  double v;
  while (p && fgets(line, sizeof line, p))
    for (int i = 0; i < n; i++)
      if (sscanf(line, "%31s %lf", name, &v) == 2 && !strcmp(name, names[i])) out[i] = v;
  if (p) pclose(p);
}

/* ---- the tables ---- */

typedef struct Line {
  const char *label, *kind, *sizes; /* train_peer.py KIND THREADS STEPS SIZES */
  bool (*params)(Net *);
} Line;

/* The run's disk cache folder (UJ_CACHE_DIR), a new empty one a line. */
static char cache_root[64];
static int ncaches;

static void cache_folder_next(void) {
  char path[128];
  if (ncaches > 0) {
    snprintf(path, sizeof path, "%s/cache%d", cache_root, ncaches - 1);
    bench_remove_tree(path);
  }
  snprintf(path, sizeof path, "%s/cache%d", cache_root, ncaches++);
  setenv("UJ_CACHE_DIR", path, 1);
}

/* The first step of a fresh model on line in a new session, its kernels
 * loaded from the disk cache the first session filled (a second process's
 * first step); its ms, or -1 when it fails or its loss is not loss0. */
static double first_step_warm(const Line *line, float loss0) {
  Net n = {0};
  float loss = NAN;
  double t0 = bench_now_ms();
  bool ok = net_make(&n, line->params) && net_step(&n, &loss);
  double ms = bench_now_ms() - t0;
  if (n.s) net_free(&n);
  if (ok && memcmp(&loss, &loss0, sizeof loss) == 0) return ms;
  fprintf(stderr, "bench_train: %s: the first step from the disk cache %s\n", line->label, ok ? "gave another loss" : "failed");
  return -1;
}

static bool speed_line(const Line *line, int threads) {
  setenv("UJ_THREADS", threads == 1 ? "1" : "2", 1);
  cache_folder_next();
  Net n = {0};
  float loss0 = NAN, loss = NAN;
  double t0 = bench_now_ms();
  if (!net_make(&n, line->params) || !net_step(&n, &loss0)) return false;
  double first = bench_now_ms() - t0, ours[ROUNDS], theirs[ROUNDS];
  double warm = first_step_warm(line, loss0);
  if (warm < 0) return net_free(&n), false;
  char args[128];
  snprintf(args, sizeof args, "%s %d %d %s", line->kind, threads, STEPS, line->sizes);
  for (int r = 0; r < ROUNDS; r++) {
    double a = bench_now_ms();
    for (int i = 0; i < STEPS; i++)
      if (!net_step(&n, &loss)) return false;
    ours[r] = (bench_now_ms() - a) / STEPS;
    peer(args, (const char *[]){"ms"}, &theirs[r], 1);
  }
  double u = median(ours, ROUNDS), p = median(theirs, ROUNDS);
  fprintf(stderr, "bench_train: %s, %d threads: loss %.4f at step 1, %.4f at step %d\n", line->label, threads, loss0, loss, 1 + ROUNDS * STEPS);
  printf("| %s | %d | %.2f | %.2f | %.2fx | %.0f ms | %.0f ms |\n", line->label, threads, u, p, p / u, first, warm);
  net_free(&n);
  return true;
}

static bool flat_line(const Line *line, int steps) {
  setenv("UJ_THREADS", "1", 1);
  Net n = {0};
  double *ms = malloc((size_t)steps * sizeof *ms), rss10 = NAN;
  float loss = NAN;
  bool ok = ms && net_make(&n, line->params);
  for (int i = 0; ok && i < steps; i++) {
    double a = bench_now_ms();
    ok = net_step(&n, &loss);
    ms[i] = bench_now_ms() - a;
    if (i == 9) rss10 = rss_mib();
  }
  double rss = rss_mib(), theirs[2];
  if (ok) {
    char args[128];
    snprintf(args, sizeof args, "%s 1 %d %s flat", line->kind, steps, line->sizes);
    peer(args, (const char *[]){"step10", "last10"}, theirs, 2);
    double first = median(ms + 9, FLAT_WINDOW), last = median(ms + steps - FLAT_WINDOW, FLAT_WINDOW);
    fprintf(stderr, "bench_train: %s, %d steps: loss %.4f at the last\n", line->label, steps, loss);
    printf("| %s | %d | %.2f | %.2f | %.0f / %.0f MiB | %.2f | %.2f | %.2fx |\n", line->label, steps, first, last, rss10, rss, theirs[0],
           theirs[1], theirs[1] / last);
  }
  free(ms);
  if (n.s) net_free(&n);
  return ok;
}

static int run(int flat) {
  const Line lines[] = {
      {"MLP 784-512-512-10, batch 128, AdamW", "mlp", "128 784 512 10", mlp_params},
      {"GPT 2 layers, d 256, 4 heads, T 64, batch 8, vocab 512, AdamW", "gpt", "8 64 512 256 4 2", gpt_params},
  };
  printf("| training step | threads | uopjit ms/step | PyTorch ms/step | uopjit speed (PyTorch ms / uopjit ms) | uopjit first step "
         "(schedule + compile) | uopjit first step, a second process (disk cache) |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (int l = 0; l < 2; l++)
    for (int threads = 1; threads <= 2; threads++)
      if (!speed_line(&lines[l], threads)) return 1;
  printf("\n| flat cost per step, one thread | steps | uopjit ms/step at step 10 | uopjit ms/step at the last | uopjit memory after step 10 / the last | "
         "PyTorch ms/step at step 10 | PyTorch at the last | uopjit speed at the last |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  return flat_line(&lines[0], flat) ? 0 : 1;
}

int main(int argc, char **argv) {
  int flat = argc > 1 ? atoi(argv[1]) : 10000;
  if (flat < 2 * FLAT_WINDOW) return fprintf(stderr, "usage: bench_train [FLAT_STEPS >= %d]\n", 2 * FLAT_WINDOW), 2;
  snprintf(cache_root, sizeof cache_root, "/tmp/uj_bench_train.XXXXXX");
  if (!mkdtemp(cache_root)) return perror("bench_train: mkdtemp"), 1;
  unsetenv("UJ_CACHE");
  cache_folder_next();
  int status = run(flat);
  bench_remove_tree(cache_root);
  return status;
}
