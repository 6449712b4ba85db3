/* bench_peers.c — uopjit beside its peers (OpenBLAS, PyTorch, NumPy) on
 * the same shapes, in the same run, as ratios.
 *
 * In: the benchmarks of `benches` below. Each gets float32 inputs from
 * uj_tensor_rand; uopjit builds its graph with the tensor API and realizes
 * it; OpenBLAS (cblas_sgemm / cblas_sgemv, when CMake found it:
 * UJ_HAVE_OPENBLAS) runs in this process on copies of the inputs; NumPy
 * and PyTorch run in bench/peers.py, a /usr/bin/python3 child driven over
 * pipes that reads the same inputs from .npy files. Contenders take turns
 * (uopjit, OpenBLAS at 1 and 2 threads, PyTorch at 1 and 2, NumPy) for
 * several rounds, capped by time, and each one's median counts: the
 * machine is shared and noisy. uopjit's output is compared with a peer's
 * (OpenBLAS, else PyTorch, else NumPy); a row that disagrees reports no
 * speed.
 *
 * What is timed for uopjit: uj_tensor_realize of the output, its graph
 * built again on the same input buffers each time (the output of the run
 * before is freed, so it is computed again): scheduling, the compiled-
 * program cache lookup, memory for the output and intermediates, and the
 * kernels. The first realize also compiles: compile = first - median.
 * uopjit runs on its thread pool with every core (UJ_THREADS unset): its
 * samples appear in both thread rows.
 *
 * Out: a markdown table and its notes on stdout (what bench/run.sh pastes
 * into README.md), progress on stderr. A failing row or an absent peer is
 * said in the table; exit 1 only when no session or no table can be made.
 *
 * Usage: bench_peers [--python PATH] [--script PATH] [--only NAME]...
 *        [--budget-s SECONDS]   (defaults /usr/bin/python3, bench/peers.py,
 *        every benchmark, 8 s of rounds a benchmark) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef UJ_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "bench_peers.h"
#include "bench_util.h"
#include "uopjit/tensor.h"

enum {
  MAX_INPUTS = 4,
  MAX_ROUNDS = 25,
  MIN_ROUNDS = 3,
  MAX_SCRATCH = 32,
  LINE_MAX_LEN = 512,
};

static const double SLOW_RUN_MS = 30000; /* a uopjit run this long runs once */
static const double ROUNDS_CAP_MS = 45000; /* rounds of one benchmark stop here */
static const double SETTLE_MS = 120; /* after a 2-thread run: OpenBLAS/OpenMP threads stop spinning */

/* ---- the benchmarks ---- */

typedef enum Kind {
  KIND_MATMUL, KIND_GEMV, KIND_ELEMENTWISE, KIND_SUM, KIND_CONV2D, KIND_SOFTMAX, KIND_LAYERNORM,
  KIND_ATTENTION, KIND_COUNT
} Kind;

typedef struct KindInfo {
  const char *peer_kind; /* its name in peers.py */
  bool blas;             /* OpenBLAS has it */
  bool numpy;            /* natural in NumPy (matmul there is OpenBLAS again) */
  bool flops;            /* rated in GFLOP/s of peak, else GB/s of copy bandwidth */
  double tol;            /* max |uopjit - peer| / max |peer| */
} KindInfo;

static const KindInfo kind_info[] = {
    [KIND_MATMUL] = {"matmul", true, false, true, 1e-4},
    [KIND_GEMV] = {"matmul", true, false, true, 1e-4},
    [KIND_ELEMENTWISE] = {"elementwise", false, true, false, 1e-5},
    [KIND_SUM] = {"sum", false, true, false, 1e-4},
    [KIND_CONV2D] = {"conv2d", false, false, true, 1e-4},
    [KIND_SOFTMAX] = {"softmax", false, true, false, 1e-4},
    [KIND_LAYERNORM] = {"layernorm", false, true, false, 1e-4},
    [KIND_ATTENTION] = {"attention", false, false, true, 1e-4},
};
_Static_assert(sizeof kind_info / sizeof kind_info[0] == KIND_COUNT, "one entry per kind");

/* dims: MATMUL/GEMV M K N; ELEMENTWISE/SUM n; CONV2D N C H W O (3x3,
 * padding 1); SOFTMAX/LAYERNORM rows cols; ATTENTION B H T d. */
typedef struct BenchDef {
  const char *name;
  Kind kind;
  int64_t dims[5];
} BenchDef;

static const BenchDef benches[] = {
    {"sgemm 256", KIND_MATMUL, {256, 256, 256}},
    {"sgemm 512", KIND_MATMUL, {512, 512, 512}},
    {"sgemm 1024", KIND_MATMUL, {1024, 1024, 1024}},
    {"sgemm 2048", KIND_MATMUL, {2048, 2048, 2048}},
    {"sgemm 64x4096x4096", KIND_MATMUL, {64, 4096, 4096}},
    {"gemv 1x4096x4096", KIND_GEMV, {1, 4096, 4096}},
    {"sgemm 1000 (odd)", KIND_MATMUL, {1000, 1000, 1000}},
    {"relu(x*y+z) 64M", KIND_ELEMENTWISE, {64 << 20}},
    {"sum 64M", KIND_SUM, {64 << 20}},
    {"conv2d 8x64x56x56 3x3 64", KIND_CONV2D, {8, 64, 56, 56, 64}},
    {"softmax 4096x4096", KIND_SOFTMAX, {4096, 4096}},
    {"layernorm 8192x768", KIND_LAYERNORM, {8192, 768}},
    {"attention 1x12x1024x64", KIND_ATTENTION, {1, 12, 1024, 64}},
};
enum { NBENCHES = sizeof benches / sizeof benches[0] };

typedef struct Shape {
  int64_t d[4];
  unsigned n;
} Shape;

/* The shapes of b's inputs; returns how many. */
static unsigned bench_inputs(const BenchDef *b, Shape *in) {
  const int64_t *d = b->dims;
  switch (b->kind) {
  case KIND_MATMUL: case KIND_GEMV:
    in[0] = (Shape){{d[0], d[1]}, 2}, in[1] = (Shape){{d[1], d[2]}, 2};
    return 2;
  case KIND_ELEMENTWISE:
    for (unsigned i = 0; i < 3; i++) in[i] = (Shape){{d[0]}, 1};
    return 3;
  case KIND_SUM: in[0] = (Shape){{d[0]}, 1}; return 1;
  case KIND_CONV2D:
    in[0] = (Shape){{d[0], d[1], d[2], d[3]}, 4}, in[1] = (Shape){{d[4], d[1], 3, 3}, 4};
    return 2;
  case KIND_SOFTMAX: case KIND_LAYERNORM: in[0] = (Shape){{d[0], d[1]}, 2}; return 1;
  case KIND_ATTENTION:
    for (unsigned i = 0; i < 3; i++) in[i] = (Shape){{d[0], d[1], d[2], d[3]}, 4};
    return 3;
  default: abort();
  }
}

/* Floating-point operations (flops kinds) or bytes moved, at least. */
static double bench_work(const BenchDef *b) {
  double d0 = (double)b->dims[0], d1 = (double)b->dims[1], d2 = (double)b->dims[2], d3 = (double)b->dims[3];
  switch (b->kind) {
  case KIND_MATMUL: case KIND_GEMV: return 2 * d0 * d1 * d2;
  case KIND_ELEMENTWISE: return 4 * 4 * d0; /* x, y, z read, out written */
  case KIND_SUM: return 4 * d0;
  case KIND_CONV2D: return 2 * d0 * (double)b->dims[4] * d2 * d3 * d1 * 9; /* same-size output */
  case KIND_SOFTMAX: case KIND_LAYERNORM: return 2 * 4 * d0 * d1; /* read once, written once */
  case KIND_ATTENTION: return 4 * d0 * d1 * d2 * d2 * d3; /* q@k^T and p@v */
  default: abort();
  }
}

/* Elements of b's output. */
static size_t bench_output_numel(const BenchDef *b) {
  const int64_t *d = b->dims;
  switch (b->kind) {
  case KIND_MATMUL: case KIND_GEMV: return (size_t)(d[0] * d[2]);
  case KIND_ELEMENTWISE: return (size_t)d[0];
  case KIND_SUM: return 1;
  case KIND_CONV2D: return (size_t)(d[0] * d[4] * d[2] * d[3]);
  case KIND_SOFTMAX: case KIND_LAYERNORM: return (size_t)(d[0] * d[1]);
  case KIND_ATTENTION: return (size_t)(d[0] * d[1] * d[2] * d[3]);
  default: abort();
  }
}

/* ---- the uopjit graphs ---- */

/* Every tensor a graph makes, freed after the run. */
typedef struct Scratch {
  uj_tensor *t[MAX_SCRATCH];
  unsigned n;
} Scratch;

static uj_tensor *keep(Scratch *sc, uj_tensor *t) {
  if (t && sc->n < MAX_SCRATCH) sc->t[sc->n++] = t;
  return t;
}

static void scratch_free(Scratch *sc) {
  for (unsigned i = 0; i < sc->n; i++) uj_tensor_free(sc->t[i]);
  sc->n = 0;
}

/* (x - mean) / sqrt(var + eps) over the last axis. */
static uj_tensor *build_layernorm(Scratch *sc, uj_tensor *x) {
  int axis = -1;
  uj_tensor *mean = keep(sc, uj_tensor_reduce(UJ_RED_MEAN, x, &axis, 1, true));
  uj_tensor *d = keep(sc, uj_tensor_binary(UJ_BIN_SUB, x, mean));
  uj_tensor *var = keep(sc, uj_tensor_reduce(UJ_RED_MEAN, keep(sc, uj_tensor_binary(UJ_BIN_MUL, d, d)), &axis, 1, true));
  uj_tensor *den = keep(sc, uj_tensor_unary(UJ_UN_SQRT, keep(sc, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false))));
  return keep(sc, uj_tensor_binary(UJ_BIN_DIV, d, den));
}

/* softmax(q @ k^T / sqrt(d)) @ v. */
static uj_tensor *build_attention(Scratch *sc, uj_tensor *q, uj_tensor *k, uj_tensor *v, int64_t d) {
  uj_tensor *s = keep(sc, uj_tensor_matmul(q, keep(sc, uj_tensor_transpose(k, -2, -1))));
  uj_tensor *scaled = keep(sc, uj_tensor_binary_scalar(UJ_BIN_MUL, s, 1.0 / sqrt((double)d), false));
  return keep(sc, uj_tensor_matmul(keep(sc, uj_tensor_softmax(scaled, -1)), v));
}

/* The output of b over inputs in; NULL with the session's message. */
static uj_tensor *build_graph(Scratch *sc, const BenchDef *b, uj_tensor *const *in) {
  switch (b->kind) {
  case KIND_MATMUL: case KIND_GEMV: return keep(sc, uj_tensor_matmul(in[0], in[1]));
  case KIND_ELEMENTWISE:
    return keep(sc, uj_tensor_unary(UJ_UN_RELU, keep(sc, uj_tensor_binary(UJ_BIN_ADD,
                                                keep(sc, uj_tensor_binary(UJ_BIN_MUL, in[0], in[1])), in[2]))));
  case KIND_SUM: return keep(sc, uj_tensor_reduce(UJ_RED_SUM, in[0], NULL, 0, false));
  case KIND_CONV2D: return keep(sc, uj_tensor_conv2d(in[0], in[1], NULL, NULL, (int64_t[]){1, 1}, NULL, 1));
  case KIND_SOFTMAX: return keep(sc, uj_tensor_softmax(in[0], -1));
  case KIND_LAYERNORM: return build_layernorm(sc, in[0]);
  case KIND_ATTENTION: return build_attention(sc, in[0], in[1], in[2], b->dims[3]);
  default: abort();
  }
}

/* ---- contenders ---- */

typedef struct ContenderInfo {
  const char *peer; /* peers.py's name; NULL: in this process */
  int threads;
} ContenderInfo;

static const ContenderInfo contender_info[] = {
    [C_UOPJIT] = {NULL, 1}, [C_BLAS1] = {NULL, 1}, [C_BLAS2] = {NULL, 2},
    [C_TORCH1] = {"torch", 1}, [C_TORCH2] = {"torch", 2}, [C_NUMPY] = {"numpy", 1},
};
_Static_assert(sizeof contender_info / sizeof contender_info[0] == C_COUNT, "one entry per contender");

/* ---- the run's state ---- */

typedef struct Options {
  const char *python, *script;
  const char *only[NBENCHES]; /* names; none: every benchmark */
  int nonly;
  double budget_ms; /* of timed rounds, a benchmark */
} Options;

typedef struct Bench {
  uj_session *s;
  PeerProc py;
  char dir[64]; /* temp folder of the .npy files */
  double budget_ms;
  Machine machine;
} Bench;

/* One benchmark being measured. */
typedef struct Row {
  const BenchDef *def;
  uj_tensor *in[MAX_INPUTS];
  unsigned nin;
  float *host[MAX_INPUTS]; /* OpenBLAS's copies of in */
  float *blas_out, *out, *ref;
  size_t out_n;
  bool active[C_COUNT];
  double samples[C_COUNT][MAX_ROUNDS];
} Row;

static double elapsed_since(double t0) { return bench_now_ms() - t0; }

static void sleep_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
  nanosleep(&ts, NULL);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double s[MAX_ROUNDS];
  memcpy(s, v, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, compare_double);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- running each contender once ---- */

/* One realize of the graph, built anew; out (r->out_n floats) gets the
 * result when not NULL. Milliseconds, or -1 with the message in res. */
static double uopjit_run(Bench *B, Row *r, RowResult *res, float *out) {
  Scratch sc = {0};
  uj_tensor *y = build_graph(&sc, r->def, r->in);
  double t0 = bench_now_ms();
  uj_status st = y ? uj_tensor_realize(&y, 1) : UJ_ERR_ARG;
  double ms = elapsed_since(t0);
  if (st == UJ_OK && out) st = uj_tensor_to_host(y, out, r->out_n * sizeof *out);
  if (st != UJ_OK) snprintf(res->error, sizeof res->error, "%s", uj_session_error(B->s));
  scratch_free(&sc);
  uj_tensor_realize(&r->in[0], 1); /* frees y's memory here, not in the next timed run */
  return st == UJ_OK ? ms : -1;
}

#ifdef UJ_HAVE_OPENBLAS
static double blas_run(Row *r, int threads) {
  const int64_t *d = r->def->dims;
  openblas_set_num_threads(threads);
  double t0 = bench_now_ms();
  if (r->def->kind == KIND_GEMV) /* (1, K) @ (K, N) = B^T a */
    cblas_sgemv(CblasRowMajor, CblasTrans, (int)d[1], (int)d[2], 1.0f, r->host[1], (int)d[2], r->host[0], 1, 0.0f,
                r->blas_out, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)d[0], (int)d[2], (int)d[1], 1.0f, r->host[0],
                (int)d[1], r->host[1], (int)d[2], 0.0f, r->blas_out, (int)d[2]);
  return elapsed_since(t0);
}

/* "0.3.21, core SkylakeX (OPENBLAS_CORETYPE)": its version and kernels. */
static void blas_version(char *b, size_t n) {
  const char *config = openblas_get_config(), *version = strchr(config, ' ');
  version = version ? version + 1 : config;
  snprintf(b, n, "%.*s, core %s (%s)", (int)strcspn(version, " "), version, openblas_get_corename(),
           getenv("OPENBLAS_CORETYPE") ? "OPENBLAS_CORETYPE" : "its own detection");
}
static const bool have_openblas = true;
#else
static double blas_run(Row *r, int threads) { return (void)r, (void)threads, -1; }
static void blas_version(char *b, size_t n) { snprintf(b, n, "absent (not found when CMake configured)"); }
static const bool have_openblas = false;
#endif

/* One run of contender c: milliseconds, or -1. */
static double contender_run(Bench *B, Row *r, RowResult *res, Contender c) {
  const ContenderInfo *ci = &contender_info[c];
  double ms;
  if (c == C_UOPJIT) ms = uopjit_run(B, r, res, NULL);
  else if (!ci->peer) ms = blas_run(r, ci->threads);
  else ms = peerproc_run(&B->py, ci->peer, ci->threads);
  if (ci->threads > 1) sleep_ms(SETTLE_MS);
  return ms;
}

/* ---- setting a benchmark up ---- */

static float *host_copy(uj_tensor *t) {
  size_t n = (size_t)uj_tensor_numel(t);
  float *h = malloc(n * sizeof *h);
  if (h && uj_tensor_to_host(t, h, n * sizeof *h) != UJ_OK) free(h), h = NULL;
  return h;
}

static void npy_path(const Bench *B, char *path, size_t n, const char *name) {
  snprintf(path, n, "%s/%s.npy", B->dir, name);
}

/* Writes the inputs as in0.npy, in1.npy, ...; false with a message. */
static bool save_inputs(Bench *B, Row *r) {
  char path[128], name[16];
  for (unsigned i = 0; i < r->nin; i++) {
    snprintf(name, sizeof name, "in%u", i);
    npy_path(B, path, sizeof path, name);
    if (uj_tensor_save_npy(r->in[i], path) != UJ_OK) {
      fprintf(stderr, "bench_peers: %s\n", uj_session_error(B->s));
      uj_session_clear_error(B->s);
      return false;
    }
  }
  return true;
}

/* The Python peers of r: its inputs to .npy files, then "setup". */
static void setup_python(Bench *B, Row *r, RowResult *res) {
  const char *why = B->py.numpy ? "failed" : "absent"; /* peers.py reads the inputs with NumPy */
  bool torch = false, numpy = false;
  char cmd[LINE_MAX_LEN], reply[LINE_MAX_LEN];
  snprintf(cmd, sizeof cmd, "setup %s %s", kind_info[r->def->kind].peer_kind, B->dir);
  if (B->py.numpy && save_inputs(B, r) && peerproc_ask(&B->py, cmd, reply, sizeof reply) && !strncmp(reply, "peers", 5)) {
    torch = strstr(reply, " torch") != NULL;
    numpy = strstr(reply, " numpy") != NULL;
  }
  r->active[C_TORCH1] = r->active[C_TORCH2] = torch;
  res->missing[C_TORCH1] = res->missing[C_TORCH2] = torch ? NULL : B->py.torch ? why : "absent";
  r->active[C_NUMPY] = numpy;
  res->missing[C_NUMPY] = numpy ? NULL : !kind_info[r->def->kind].numpy ? "—" : why;
}

/* OpenBLAS's copies of the inputs and its output. */
static void setup_blas(Row *r, RowResult *res) {
  if (!kind_info[r->def->kind].blas) {
    res->missing[C_BLAS1] = res->missing[C_BLAS2] = "—";
    return;
  }
  r->host[0] = host_copy(r->in[0]), r->host[1] = host_copy(r->in[1]);
  r->blas_out = calloc(r->out_n, sizeof *r->blas_out);
  bool ok = have_openblas && r->host[0] && r->host[1] && r->blas_out;
  r->active[C_BLAS1] = r->active[C_BLAS2] = ok;
  res->missing[C_BLAS1] = res->missing[C_BLAS2] = ok ? NULL : have_openblas ? "failed" : "absent";
}

static bool row_setup(Bench *B, Row *r, RowResult *res, const BenchDef *def) {
  Shape shapes[MAX_INPUTS];
  *r = (Row){.def = def, .nin = bench_inputs(def, shapes), .out_n = bench_output_numel(def)};
  *res = (RowResult){.name = def->name, .flops = kind_info[def->kind].flops, .work = bench_work(def),
                     .tol = kind_info[def->kind].tol, .compile_ms = -1};
  for (unsigned i = 0; i < r->nin; i++)
    if (!(r->in[i] = uj_tensor_rand(B->s, shapes[i].d, shapes[i].n, 1000 + i))) return false;
  r->out = malloc(r->out_n * sizeof *r->out);
  r->active[C_UOPJIT] = r->out != NULL;
  setup_blas(r, res);
  setup_python(B, r, res);
  return r->out != NULL;
}

static void row_free(Bench *B, Row *r) {
  for (unsigned i = 0; i < r->nin; i++) uj_tensor_free(r->in[i]), free(r->host[i]);
  free(r->blas_out), free(r->out), free(r->ref);
  static const char *const files[] = {"in0", "in1", "in2", "in3", "out_torch", "out_numpy"};
  char path[128];
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    npy_path(B, path, sizeof path, files[i]);
    unlink(path);
  }
}

/* ---- checking uopjit against a peer ---- */

/* A peer's output from its .npy file, as n floats; NULL when absent. */
static float *peer_output(Bench *B, const char *peer, size_t n) {
  char path[128], name[32];
  snprintf(name, sizeof name, "out_%s", peer);
  npy_path(B, path, sizeof path, name);
  uj_tensor *t = uj_tensor_load_npy(B->s, path);
  float *h = t && (size_t)uj_tensor_numel(t) == n ? host_copy(t) : NULL;
  uj_tensor_free(t);
  if (!h) uj_session_clear_error(B->s);
  return h;
}

static double max_rel_error(const float *got, const float *want, size_t n) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)got[i] - (double)want[i]);
    err = e > err || isnan(e) ? e : err;
    scale = fmax(scale, fabs((double)want[i]));
  }
  return isnan(err) ? INFINITY : err / fmax(scale, 1e-30);
}

/* Compares r->out with OpenBLAS's output, else PyTorch's, else NumPy's. */
static void row_check(Bench *B, Row *r, RowResult *res) {
  if (r->active[C_BLAS1] && blas_run(r, 1) >= 0 && (r->ref = malloc(r->out_n * sizeof *r->ref))) {
    memcpy(r->ref, r->blas_out, r->out_n * sizeof *r->ref);
    res->ref = "OpenBLAS";
  }
  if (!r->ref && r->active[C_TORCH1] && (r->ref = peer_output(B, "torch", r->out_n))) res->ref = "PyTorch";
  if (!r->ref && r->active[C_NUMPY] && (r->ref = peer_output(B, "numpy", r->out_n))) res->ref = "NumPy";
  if (!r->ref) return;
  res->err = max_rel_error(r->out, r->ref, r->out_n);
  res->wrong = !(res->err <= res->tol);
}

/* ---- measuring ---- */

static void sample_add(Row *r, RowResult *res, Contender c, double ms) {
  if (ms < 0) {
    r->active[c] = false, res->nsamples[c] = 0, res->missing[c] = "failed";
    return;
  }
  if (res->nsamples[c] < MAX_ROUNDS) r->samples[c][res->nsamples[c]++] = ms;
}

/* One turn of every active contender (uopjit too when with_uopjit);
 * returns its milliseconds. Samples are kept when record. */
static double row_round(Bench *B, Row *r, RowResult *res, bool with_uopjit, bool record) {
  double t0 = bench_now_ms();
  for (int c = with_uopjit ? 0 : 1; c < C_COUNT; c++) {
    if (!r->active[c]) continue;
    double ms = contender_run(B, r, res, (Contender)c);
    if (record || ms < 0) sample_add(r, res, (Contender)c, ms);
  }
  return elapsed_since(t0);
}

/* How many rounds fit the budget, given one round's cost. */
static int rounds_for(const Bench *B, double round_ms) {
  double fit = floor(B->budget_ms / fmax(round_ms, 1e-3));
  int n = fit < MIN_ROUNDS ? MIN_ROUNDS : fit > MAX_ROUNDS ? MAX_ROUNDS : (int)fit;
  while (n > 1 && n * round_ms > ROUNDS_CAP_MS) n--;
  return n;
}

/* The first uopjit run (compile + run; its output is checked), a warm-up
 * turn of the peers, then timed rounds; the medians into res. */
static void row_measure(Bench *B, Row *r, RowResult *res) {
  res->first_ms = r->active[C_UOPJIT] ? uopjit_run(B, r, res, r->out) : -1;
  if (res->first_ms < 0) sample_add(r, res, C_UOPJIT, -1);
  else row_check(B, r, res);
  res->one_run = res->first_ms >= SLOW_RUN_MS;
  if (res->one_run) sample_add(r, res, C_UOPJIT, res->first_ms);
  row_round(B, r, res, false, false); /* setup ran the Python peers with their default threads */
  bool with_uopjit = !res->one_run;
  double round_ms = row_round(B, r, res, with_uopjit, true);
  for (int i = 1, n = rounds_for(B, round_ms); i < n; i++) row_round(B, r, res, with_uopjit, true);
  for (int c = 0; c < C_COUNT; c++)
    if (res->nsamples[c] > 0) res->median_ms[c] = median(r->samples[c], res->nsamples[c]);
    else if (!res->missing[c]) res->missing[c] = "failed";
  if (!res->one_run && res->nsamples[C_UOPJIT] > 0) res->compile_ms = res->first_ms - res->median_ms[C_UOPJIT];
}

static void row_progress(const RowResult *res, double ms) {
  fprintf(stderr, "bench_peers: %-26s %6.1f s  uopjit %s", res->name, ms / 1e3, res->error[0] ? res->error : "");
  if (!res->missing[C_UOPJIT]) fprintf(stderr, "%.4g ms (first %.4g ms)", res->median_ms[C_UOPJIT], res->first_ms);
  if (res->wrong) fprintf(stderr, ", MISMATCH %.3g vs %s", res->err, res->ref);
  fputc('\n', stderr);
}

static void run_bench(Bench *B, const BenchDef *def, RowResult *res) {
  double t0 = bench_now_ms();
  Row *r = calloc(1, sizeof *r);
  if (!r) {
    *res = (RowResult){.name = def->name, .compile_ms = -1};
    snprintf(res->error, sizeof res->error, "out of memory");
    res->missing[C_UOPJIT] = "failed";
    return;
  }
  if (row_setup(B, r, res, def)) row_measure(B, r, res);
  else {
    snprintf(res->error, sizeof res->error, "setup: %s", uj_session_error(B->s));
    res->missing[C_UOPJIT] = "failed";
  }
  if (res->error[0]) uj_session_clear_error(B->s);
  row_free(B, r);
  free(r);
  row_progress(res, elapsed_since(t0));
}

/* ---- main ---- */

static bool parse_options(int argc, char **argv, Options *o) {
  *o = (Options){"/usr/bin/python3", "bench/peers.py", {0}, 0, 8000};
  for (int i = 1; i < argc; i++) {
    bool has_value = i + 1 < argc;
    if (!strcmp(argv[i], "--python") && has_value) o->python = argv[++i];
    else if (!strcmp(argv[i], "--script") && has_value) o->script = argv[++i];
    else if (!strcmp(argv[i], "--budget-s") && has_value) o->budget_ms = atof(argv[++i]) * 1e3;
    else if (!strcmp(argv[i], "--only") && has_value && o->nonly < NBENCHES) o->only[o->nonly++] = argv[++i];
    else return false;
  }
  return o->budget_ms > 0;
}

static bool selected(const Options *o, const BenchDef *def) {
  for (int i = 0; i < o->nonly; i++)
    if (!strcmp(o->only[i], def->name)) return true;
  return o->nonly == 0;
}

/* Session, temp folder, machine, peers; false with a message. */
static bool bench_open(Bench *B, const Options *o) {
  const char *why = NULL;
  *B = (Bench){.budget_ms = o->budget_ms};
  if (!(B->s = uj_session_new("CPU", &why))) return fprintf(stderr, "bench_peers: no CPU session: %s\n", why), false;
  snprintf(B->dir, sizeof B->dir, "/tmp/uj_bench_peers.XXXXXX");
  if (!mkdtemp(B->dir)) return perror("bench_peers: mkdtemp"), false;
  machine_read(&B->machine);
  B->machine.copy_gbs = machine_copy_bandwidth(9);
  peerproc_start(&B->py, o->python, o->script);
  blas_version(B->machine.openblas, sizeof B->machine.openblas);
  snprintf(B->machine.numpy, sizeof B->machine.numpy, "%s", B->py.numpy_version);
  snprintf(B->machine.torch, sizeof B->machine.torch, "%s", B->py.torch_version);
  uj_tensor *warm = uj_tensor_rand(B->s, (int64_t[]){16}, 1, 1); /* creates the JIT before any row */
  uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, warm, 1.0, false);
  if (uj_tensor_realize(&y, 1) != UJ_OK) return fprintf(stderr, "bench_peers: %s\n", uj_session_error(B->s)), false;
  uj_tensor_free(y), uj_tensor_free(warm);
  return true;
}

static void bench_close(Bench *B) {
  peerproc_stop(&B->py);
  if (B->dir[0]) rmdir(B->dir);
  uj_session_free(B->s);
}

int main(int argc, char **argv) {
  Options o;
  if (!parse_options(argc, argv, &o)) {
    fprintf(stderr, "usage: bench_peers [--python PATH] [--script PATH] [--only NAME]... [--budget-s SECONDS]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  Bench B;
  RowResult rows[NBENCHES];
  size_t n = 0;
  bool ok = bench_open(&B, &o);
  for (size_t i = 0; ok && i < NBENCHES; i++)
    if (selected(&o, &benches[i])) run_bench(&B, &benches[i], &rows[n++]);
  if (ok) table_print(stdout, rows, n, &B.machine);
  bench_close(&B);
  return ok ? 0 : 1;
}
