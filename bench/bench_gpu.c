/* bench_gpu.c — uopjit's side of the GPU table (scripts/gpu-check.sh runs
 * it beside bench/gpu_peers.py, PyTorch's side, on the lent GPU).
 *
 * In: the lines of bench/gpu_lines.txt (name, kind, sizes), a device
 * (--device, default CUDA), --scale K (every size above 16 divided by K:
 * a dry run on the CPU here), --runs N. Out: a tab-separated line a
 * benchmark: name, the first realize's milliseconds (compiles included),
 * the median realize's wall milliseconds (host work, launches, the
 * synchronize), the median of its kernels' device milliseconds (the
 * device's own timing: CUDA events), the work (bytes moved or flops) and
 * its unit. Each realize builds its graph anew, as a user's program does;
 * the schedule and the kernels come from the caches after the first. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_graphs.h"
#include "bench_util.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"

enum { MAX_LINES = 64, MAX_SIZES = 6 };

typedef struct Line {
  char name[64], kind[32];
  int64_t n[MAX_SIZES];
  int nsizes;
} Line;

static int read_lines(const char *path, Line *lines) {
  FILE *f = fopen(path, "r");
  if (!f) return fprintf(stderr, "bench_gpu: cannot open %s\n", path), -1;
  char buf[512];
  int n = 0;
  while (fgets(buf, sizeof buf, f) && n < MAX_LINES) {
    Line *l = &lines[n];
    int used = 0;
    if (buf[0] == '#' || sscanf(buf, "%63s %31s%n", l->name, l->kind, &used) != 2) continue;
    char *p = buf + used, *end;
    for (l->nsizes = 0; l->nsizes < MAX_SIZES; l->nsizes++, p = end) {
      l->n[l->nsizes] = strtoll(p, &end, 10);
      if (end == p) break;
    }
    n++;
  }
  fclose(f);
  return n;
}

static uj_tensor *rand_of(uj_session *s, Scratch *k, const int64_t *shape, unsigned nd, uint64_t seed) {
  uj_tensor *t = keep(k, uj_tensor_rand(s, shape, nd, seed));
  if (t && uj_tensor_realize(&t, 1) != UJ_OK) return NULL;
  return t;
}

/* The inputs of line l, made and realized once. */
static bool make_inputs(uj_session *s, const Line *l, Scratch *in) {
  const int64_t *n = l->n;
  const char *k = l->kind;
  if (!strcmp(k, "add1") || !strcmp(k, "sum")) return rand_of(s, in, n, 1, 1);
  if (!strcmp(k, "elementwise")) return rand_of(s, in, n, 1, 1) && rand_of(s, in, n, 1, 2) && rand_of(s, in, n, 1, 3);
  if (!strcmp(k, "softmax") || !strcmp(k, "layernorm")) return rand_of(s, in, n, 2, 1);
  if (!strcmp(k, "gemv")) return rand_of(s, in, (int64_t[]){1, n[0]}, 2, 1) && rand_of(s, in, n, 2, 2);
  if (!strcmp(k, "matmul")) return rand_of(s, in, (int64_t[]){n[0], n[1]}, 2, 1) && rand_of(s, in, (int64_t[]){n[1], n[2]}, 2, 2);
  if (!strcmp(k, "conv2d"))
    return rand_of(s, in, (int64_t[]){n[0], n[1], n[2], n[3]}, 4, 1) &&
           rand_of(s, in, (int64_t[]){n[4], n[1], n[5], n[5]}, 4, 2);
  return false;
}

static uj_tensor *build(const Line *l, Scratch *g, uj_tensor *const *in) {
  const char *k = l->kind;
  if (!strcmp(k, "add1")) return keep(g, uj_tensor_binary_scalar(UJ_BIN_ADD, in[0], 1, false));
  if (!strcmp(k, "elementwise")) return build_elementwise(g, in[0], in[1], in[2]);
  if (!strcmp(k, "sum")) return keep(g, uj_tensor_reduce(UJ_RED_SUM, in[0], NULL, 0, false));
  if (!strcmp(k, "softmax")) return keep(g, uj_tensor_softmax(in[0], -1));
  if (!strcmp(k, "layernorm")) return build_layernorm(g, in[0]);
  if (!strcmp(k, "gemv") || !strcmp(k, "matmul")) return keep(g, uj_tensor_matmul(in[0], in[1]));
  if (!strcmp(k, "conv2d")) return keep(g, uj_tensor_conv2d(in[0], in[1], NULL, NULL, (int64_t[]){1, 1}, NULL, 1));
  return NULL;
}

/* Bytes moved (reads + writes) or flops, and its unit. */
static double work_of(const Line *l, const char **unit) {
  const int64_t *n = l->n;
  const char *k = l->kind;
  *unit = "B";
  if (!strcmp(k, "add1")) return 8.0 * (double)n[0];
  if (!strcmp(k, "elementwise")) return 16.0 * (double)n[0];
  if (!strcmp(k, "sum")) return 4.0 * (double)n[0];
  if (!strcmp(k, "softmax") || !strcmp(k, "layernorm")) return 8.0 * (double)n[0] * (double)n[1];
  if (!strcmp(k, "gemv")) return 4.0 * (double)n[0] * (double)n[1];
  *unit = "FLOP";
  if (!strcmp(k, "matmul")) return 2.0 * (double)n[0] * (double)n[1] * (double)n[2];
  return 2.0 * (double)n[0] * (double)n[4] * (double)n[2] * (double)n[3] * (double)n[1] * (double)n[5] * (double)n[5];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One realize of line l's graph, built anew: wall and kernel ms. */
static bool run_once(uj_session *s, const Line *l, uj_tensor *const *in, double *wall, double *kernel) {
  Scratch g = {0};
  uj_tensor *y = build(l, &g, in);
  s->device->kernel_ms = 0;
  double t0 = bench_now_ms();
  bool ok = y && uj_tensor_realize(&y, 1) == UJ_OK;
  *wall = bench_now_ms() - t0, *kernel = s->device->kernel_ms;
  scratch_free(&g);
  uj_tensor_realize((uj_tensor **)&in[0], 1); /* the session forgets y: the next run computes it again */
  return ok;
}

static void bench_line(uj_session *s, Line *l, int runs) {
  Scratch in = {0};
  const char *unit;
  double work = work_of(l, &unit), first = 0, k0, *wall = calloc((size_t)runs, sizeof *wall), *kern = calloc((size_t)runs, sizeof *kern);
  bool ok = make_inputs(s, l, &in) && run_once(s, l, in.t, &first, &k0);
  for (int i = 0; ok && i < 3; i++) ok = run_once(s, l, in.t, &wall[0], &kern[0]); /* warm: clocks up */
  for (int i = 0; ok && i < runs; i++) ok = run_once(s, l, in.t, &wall[i], &kern[i]);
  if (ok) {
    qsort(wall, (size_t)runs, sizeof *wall, cmp_double), qsort(kern, (size_t)runs, sizeof *kern, cmp_double);
    printf("%s\t%.3f\t%.4f\t%.4f\t%.6g\t%s\n", l->name, first, wall[runs / 2], kern[runs / 2], work, unit);
  } else {
    printf("%s\terror\t%s\n", l->name, uj_session_error(s));
    uj_session_clear_error(s);
  }
  fflush(stdout);
  free(wall), free(kern);
  scratch_free(&in);
}

int main(int argc, char **argv) {
  const char *device = "CUDA", *path = NULL;
  int64_t scale = 1;
  int runs = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc) scale = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else path = argv[i];
  }
  Line lines[MAX_LINES];
  int n = path && scale >= 1 && runs >= 1 ? read_lines(path, lines) : -1;
  if (n < 0) return fprintf(stderr, "usage: bench_gpu [--device NAME] [--scale K] [--runs N] bench/gpu_lines.txt\n"), 1;
  const char *why = NULL;
  uj_session *s = uj_session_new(device, &why);
  if (!s) return fprintf(stderr, "bench_gpu: %s\n", why), 1;
  s->device->timing = true;
  char model[256] = "";
  if (s->device->ops->describe) s->device->ops->describe(s->device, model, sizeof model);
  printf("# device\t%s\t%s\n", s->device->name, model);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < lines[i].nsizes; k++)
      if (lines[i].n[k] > 16) lines[i].n[k] = lines[i].n[k] / scale > 16 ? lines[i].n[k] / scale : 16;
    bench_line(s, &lines[i], runs);
  }
  uj_session_free(s);
  return 0;
}
