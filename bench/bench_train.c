/* bench_train.c — a training step, uopjit against PyTorch in the same run
 * (bench/train_peer.py, Debian's python3-torch), as ratios.
 *
 * The model: an MLP 784-512-512-10 (ReLU), batch 128, cross-entropy,
 * AdamW (lr 1e-3, weight decay 0.01): forward, backward and the update,
 * float32. uopjit's step is uj_optim_step (the loss and the grads in one
 * schedule, the update in another); PyTorch's is zero_grad, forward,
 * backward, step. Each contender on 1 and 2 threads (UJ_THREADS for a
 * new session; torch.set_num_threads), the two alternating over ROUNDS
 * rounds of STEPS steps; the median of the rounds' ms/step. The first
 * step of uopjit (scheduling and compiling every kernel) is reported on
 * its own. Prints a Markdown table (bench/run.sh pastes it into the
 * README). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uopjit/tensor.h"

enum { BATCH = 128, IN = 784, HID = 512, OUT = 10, STEPS = 10, ROUNDS = 5 };

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct Mlp {
  uj_session *s;
  uj_tensor *w[3], *b[3], *x, *y;
  uj_optimizer *opt;
} Mlp;

static uj_tensor *param(uj_session *s, const int64_t *shape, unsigned nd, double scale, uint64_t seed) {
  uj_tensor *r = uj_tensor_randn(s, shape, nd, seed), *t = uj_tensor_binary_scalar(UJ_BIN_MUL, r, scale, false);
  uj_tensor_free(r);
  if (t && uj_tensor_set_requires_grad(t, true) != UJ_OK) uj_tensor_free(t), t = NULL;
  return t;
}

static bool mlp_make(Mlp *m) {
  const char *why = NULL;
  if (!(m->s = uj_session_new("CPU", &why))) return fprintf(stderr, "bench_train: %s\n", why), false;
  int64_t dims[4] = {IN, HID, HID, OUT};
  for (int l = 0; l < 3; l++) {
    m->w[l] = param(m->s, (int64_t[]){dims[l], dims[l + 1]}, 2, 1 / sqrt((double)dims[l]), 10 + l);
    m->b[l] = param(m->s, (int64_t[]){dims[l + 1]}, 1, 0.01, 20 + l);
  }
  m->x = uj_tensor_randn(m->s, (int64_t[]){BATCH, IN}, 2, 1);
  int32_t y[BATCH];
  for (int i = 0; i < BATCH; i++) y[i] = (i * 7) % OUT;
  m->y = uj_tensor_from_data(m->s, UJ_INT32, (int64_t[]){BATCH}, 1, y);
  uj_tensor *ps[6] = {m->w[0], m->b[0], m->w[1], m->b[1], m->w[2], m->b[2]};
  uj_optim_config cfg = {.kind = UJ_OPTIM_ADAMW, .lr = 1e-3, .weight_decay = 0.01};
  m->opt = uj_optim_new(m->s, &cfg, ps, 6);
  if (!m->opt || uj_tensor_realize(&m->x, 1) != UJ_OK) return fprintf(stderr, "bench_train: %s\n", uj_session_error(m->s)), false;
  return true;
}

/* One training step; the loss in *loss. */
static bool mlp_step(Mlp *m, float *loss) {
  uj_optim_zero_grad(m->opt);
  uj_tensor *t[12] = {0}, *h = m->x;
  int k = 0;
  for (int l = 0; l < 3; l++) {
    h = t[k++] = uj_tensor_matmul(h, m->w[l]);
    h = t[k++] = uj_tensor_binary(UJ_BIN_ADD, h, m->b[l]);
    if (l < 2) h = t[k++] = uj_tensor_unary(UJ_UN_RELU, h);
  }
  uj_tensor *l = t[k++] = uj_tensor_cross_entropy(h, m->y, -100);
  bool ok = l && uj_tensor_backward(l) == UJ_OK && uj_optim_step(m->opt, &l, 1) == UJ_OK && uj_tensor_to_host(l, loss, sizeof *loss) == UJ_OK;
  if (!ok) fprintf(stderr, "bench_train: %s\n", uj_session_error(m->s));
  for (int i = 0; i < k; i++) uj_tensor_free(t[i]);
  return ok;
}

static void mlp_free(Mlp *m) {
  uj_optim_free(m->opt);
  uj_session_free(m->s);
}

/* PyTorch's ms/step over STEPS steps (a process of bench/train_peer.py;
 * NaN when it fails). */
static double peer_round(int threads) {
  char cmd[256], line[128];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 bench/train_peer.py %d %d %d %d %d %d", threads, BATCH, IN, HID, OUT, STEPS);
  FILE *p = popen(cmd, "r");
  double ms = NAN;
  while (p && fgets(line, sizeof line, p))
    if (sscanf(line, "ms %lf", &ms) == 1) break;
  if (p) pclose(p);
  return ms;
}

int main(void) {
  printf("| training step | threads | uopjit ms/step | PyTorch ms/step | uopjit speed (PyTorch ms / uopjit ms) | uopjit first step (schedule + compile) |\n");
  printf("|---|---|---|---|---|---|\n");
  for (int threads = 1; threads <= 2; threads++) {
    setenv("UJ_THREADS", threads == 1 ? "1" : "2", 1);
    Mlp m = {0};
    float loss0 = NAN, loss = NAN;
    double t0 = now_ms();
    if (!mlp_make(&m) || !mlp_step(&m, &loss0)) return 1;
    double first = now_ms() - t0, ours[ROUNDS], theirs[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
      double a = now_ms();
      for (int i = 0; i < STEPS; i++)
        if (!mlp_step(&m, &loss)) return 1;
      ours[r] = (now_ms() - a) / STEPS;
      theirs[r] = peer_round(threads);
    }
    double u = median(ours, ROUNDS), p = median(theirs, ROUNDS);
    fprintf(stderr, "bench_train: %d threads: loss %.4f at step 1, %.4f at step %d\n", threads, loss0, loss, 1 + ROUNDS * STEPS);
    printf("| MLP 784-512-512-10, batch 128, AdamW | %d | %.2f | %.2f | %.2fx | %.0f ms |\n", threads, u, p, p / u, first);
    mlp_free(&m);
  }
  return 0;
}
