/* bench_peers.c — uopjit beside its peers (OpenBLAS, PyTorch, NumPy) on
 * the same shapes, in the same run, as ratios, each line against its goal.
 *
 * In: the benchmarks of `benches` below and their goals (bench_goal).
 * Each gets float32 inputs from uj_tensor_rand; uopjit builds its graph
 * with the tensor API and realizes it, in two sessions: one on 1 thread,
 * one on 2 (the CPU pool of a context takes UJ_THREADS when it is made,
 * at the first parallel launch, and with 1 none is made: UJ_THREADS is set
 * before every realize, and the CPU time over wall time of the runs shows
 * the threads that were busy). OpenBLAS (cblas_sgemm / cblas_sgemv, when
 * CMake found it: UJ_HAVE_OPENBLAS) runs in this process on copies of the
 * inputs; NumPy and PyTorch run in bench/peers.py, a /usr/bin/python3
 * child driven over pipes that reads the same inputs from .npy files.
 * Contenders take turns (uopjit, OpenBLAS, PyTorch, each on 1 and 2
 * threads, NumPy) for several rounds, capped by time, and each one's best
 * run counts: the machine is shared and noisy. uopjit's output (both
 * sessions) is compared with a peer's (OpenBLAS, else PyTorch, else
 * NumPy); a row that disagrees reports no speed.
 *
 * What is timed for uopjit: uj_tensor_realize of the output, its graph
 * built again on the same input buffers each time (the output of the run
 * before is freed, so it is computed again): scheduling, the compiled-
 * program cache lookup, memory for the output and intermediates, and the
 * kernels. Its first realize in each session runs with UJ_DEBUG=1 caught
 * (peers_proc.c): the library's own compile time of each kernel. After
 * the rounds one more realize is caught the same way: each kernel's run
 * time, the hottest kernel, whose UOps (uj_tensor_schedule_text) are
 * compiled to assembly (uj_emit) and its hot loop's instructions counted.
 *
 * Out: a markdown table and its notes on stdout (what bench/run.sh pastes
 * into README.md), progress on stderr. A failing row or an absent peer is
 * said in the table; exit 1 only when no session or no table can be made.
 *
 * Usage: bench_peers [--python PATH] [--script PATH] [--only NAME]...
 *        [--budget-s SECONDS]   (defaults /usr/bin/python3, bench/peers.py,
 *        every benchmark, 12 s of rounds a benchmark) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifdef UJ_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "bench_graphs.h"
#include "bench_peers.h"
#include "bench_util.h"
#include "uopjit/tensor.h"

enum {
  MAX_INPUTS = 4,
  MAX_ROUNDS = 20,
  MIN_ROUNDS = 3,
  LINE_MAX_LEN = 512,
};

static const double SLOW_RUN_MS = 20000; /* a uopjit run this long runs once */
static const double ROUNDS_CAP_MS = 25000; /* rounds of one benchmark stop here */
/* After every run, until the threads that run spin no more (at most
 * this): OpenBLAS's workers spin about 130 ms after a call on this
 * machine, PyTorch's OpenMP threads about as long, and a fixed 120 ms
 * pause left them spinning into uopjit's next run. */
static const double QUIET_MAX_MS = 1000;

/* ---- the benchmarks ---- */

typedef enum Kind {
  KIND_MATMUL, KIND_GEMV, KIND_ELEMENTWISE, KIND_SUM, KIND_CONV2D, KIND_SOFTMAX, KIND_LAYERNORM,
  KIND_ATTENTION, KIND_COUNT
} Kind;

typedef struct KindInfo {
  const char *peer_kind; /* its name in peers.py */
  bool blas;             /* OpenBLAS has it */
  bool numpy;            /* natural in NumPy (matmul there is OpenBLAS again) */
  bool flops;            /* rated in GFLOP/s of peak, else GB/s of the bandwidth their traffic allows */
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

/* Of bench_work's bytes, those written. */
static double bench_written(const BenchDef *b) {
  double d0 = (double)b->dims[0], d1 = (double)b->dims[1];
  switch (b->kind) {
  case KIND_ELEMENTWISE: return 4 * d0;
  case KIND_SOFTMAX: case KIND_LAYERNORM: return 4 * d0 * d1;
  default: return 0; /* sum's output is one number; the rest are rated in flops */
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

/* The goal of b's line on threads threads (issue 5): sgemm at least as
 * fast as OpenBLAS where M, K and N are all 1024 or more on 2 threads, at
 * least 0.9 of it elsewhere (other sizes, GEMV, 1 thread); elementwise
 * and sum at 0.85 of the bandwidth their traffic allows; the rest as fast
 * as PyTorch. */
static Goal bench_goal(const BenchDef *b, int threads) {
  Contender blas = threads == 1 ? C_BLAS1 : C_BLAS2, torch = threads == 1 ? C_TORCH1 : C_TORCH2;
  bool large = b->dims[0] >= 1024 && b->dims[1] >= 1024 && b->dims[2] >= 1024;
  switch (b->kind) {
  case KIND_MATMUL: return (Goal){blas, large && threads == 2 ? 1.0 : 0.9};
  case KIND_GEMV: return (Goal){blas, 0.9};
  case KIND_ELEMENTWISE: case KIND_SUM: return (Goal){C_COUNT, 0.85};
  default: return (Goal){torch, 1.0};
  }
}

/* ---- the uopjit graphs ---- */

/* The output of b over inputs in; NULL with the session's message. */
static uj_tensor *build_graph(Scratch *sc, const BenchDef *b, uj_tensor *const *in) {
  switch (b->kind) {
  case KIND_MATMUL: case KIND_GEMV: return keep(sc, uj_tensor_matmul(in[0], in[1]));
  case KIND_ELEMENTWISE: return build_elementwise(sc, in[0], in[1], in[2]);
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
  bool uopjit;
} ContenderInfo;

static const ContenderInfo contender_info[] = {
    [C_UJ1] = {NULL, 1, true}, [C_UJ2] = {NULL, 2, true}, [C_BLAS1] = {NULL, 1, false},
    [C_BLAS2] = {NULL, 2, false}, [C_TORCH1] = {"torch", 1, false}, [C_TORCH2] = {"torch", 2, false},
    [C_NUMPY] = {"numpy", 1, false},
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
  uj_session *s[NLINES]; /* uopjit on 1 and 2 threads */
  PeerProc py;
  char dir[64]; /* temp folder of the .npy files and the disk caches */
  int ncaches;  /* disk cache folders made in dir: cache0, cache1, ... */
  double budget_ms;
  Machine machine;
} Bench;

/* One benchmark being measured. */
typedef struct Row {
  const BenchDef *def;
  uj_tensor *in[NLINES][MAX_INPUTS]; /* the same values in each session */
  unsigned nin;
  float *host[MAX_INPUTS]; /* OpenBLAS's copies of in */
  float *blas_out, *out, *ref;
  size_t out_n;
  bool active[C_COUNT];
  double samples[C_COUNT][MAX_ROUNDS];
} Row;

static double elapsed_since(double t0) { return bench_now_ms() - t0; }

static double best_of(const double *v, int n) {
  double best = v[0];
  for (int i = 1; i < n; i++) best = fmin(best, v[i]);
  return best;
}

/* This process's CPU milliseconds and minor page faults so far. */
static void usage_now(double *cpu_ms, double *faults) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *cpu_ms = (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
  *faults = (double)u.ru_minflt;
}

/* ---- running each contender once ---- */

/* What one uopjit realize also gives: its output (r->out_n floats), its
 * UJ_DEBUG profile, its CPU milliseconds and minor page faults (usage[0],
 * [1]), the UOps of its kernels. Each NULL when not wanted. */
typedef struct UjExtras {
  float *out;
  KernelProfile *profile;
  double *usage;
  char **kernels_text;
} UjExtras;

/* One realize of the graph, built anew, in the session of line (1 thread
 * or 2). Milliseconds, or -1 with the message in res. */
static double uopjit_run(Bench *B, Row *r, RowResult *res, int line, UjExtras x) {
  uj_session *s = B->s[line];
  Scratch sc = {0};
  DebugCapture cap;
  uj_tensor *y = build_graph(&sc, r->def, r->in[line]);
  if (y && x.kernels_text) *x.kernels_text = uj_tensor_schedule_text(y, "uops");
  setenv("UJ_THREADS", line == 0 ? "1" : "2", 1);
  bool caught = x.profile && debug_capture_begin(&cap);
  double u0[2], u1[2], t0 = bench_now_ms();
  usage_now(&u0[0], &u0[1]);
  uj_status st = y ? uj_tensor_realize(&y, 1) : UJ_ERR_ARG;
  double ms = elapsed_since(t0);
  usage_now(&u1[0], &u1[1]);
  if (x.usage) x.usage[0] = u1[0] - u0[0], x.usage[1] = u1[1] - u0[1];
  if (caught) debug_capture_end(&cap, x.profile);
  if (st == UJ_OK && x.out) st = uj_tensor_to_host(y, x.out, r->out_n * sizeof *x.out);
  if (st != UJ_OK) snprintf(res->error, sizeof res->error, "%s", uj_session_error(s));
  scratch_free(&sc);
  uj_tensor_realize(&r->in[line][0], 1); /* frees y's memory here, not in the next timed run */
  return st == UJ_OK ? ms : -1;
}

/* The UOps of kernel j, named name, in a "uops" schedule text ("kernel J
 * NAME: ..." then its UOps); malloc'd, NULL when absent. */
static char *kernel_uops(const char *text, int j, const char *name) {
  char head[KERNEL_NAME_MAX + 32];
  snprintf(head, sizeof head, "\nkernel %d %s:", j, name);
  const char *at = text ? strstr(text, head) : NULL;
  const char *body = at ? strchr(at + 1, '\n') : NULL;
  if (!body) return NULL;
  const char *end = strstr(body, "\nkernel ");
  size_t n = end ? (size_t)(end - body) : strlen(body);
  char *k = malloc(n + 1);
  if (k) memcpy(k, body, n), k[n] = 0;
  return k;
}

/* The instruction mix of the hot loop of kernel j, compiled to
 * assembly in a context of its own. */
static void kernel_mix(const char *text, int j, const char *name, AsmMix *mix) {
  char *uops = kernel_uops(text, j, name), *asm_text = NULL;
  uj_ctx *ctx = uops ? uj_ctx_new() : NULL;
  const uj_uop *k = ctx ? uj_parse(ctx, uops, name) : NULL;
  if (k) asm_text = uj_emit(ctx, k, UJ_EMIT_ASM, NULL, NULL);
  if (!asm_text) fprintf(stderr, "bench_peers: no assembly of kernel %d %s: %s\n", j, name, ctx ? uj_error(ctx) : "");
  asm_mix_read(asm_text, mix);
  free(asm_text), free(uops);
  uj_ctx_free(ctx);
}

/* One more realize on line, caught: each kernel's time, the hottest
 * one's hot loop. */
static void uopjit_profile(Bench *B, Row *r, RowResult *res, int line) {
  UjLine *u = &res->uj[line];
  char *text = NULL;
  u->warm_ms = uopjit_run(B, r, res, line, (UjExtras){.profile = &u->warm, .kernels_text = &text});
  if (u->warm_ms < 0) return free(text);
  if (u->warm.hottest >= 0) kernel_mix(text, u->warm.hottest, u->warm.hottest_name, &u->mix);
  u->profiled = u->warm.nkernels > 0;
  free(text);
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

/* One run of contender c: milliseconds, or -1; uopjit's CPU time and
 * page faults into usage. */
static double contender_run(Bench *B, Row *r, RowResult *res, Contender c, double *usage) {
  const ContenderInfo *ci = &contender_info[c];
  double ms;
  if (ci->uopjit) ms = uopjit_run(B, r, res, ci->threads - 1, (UjExtras){.usage = usage});
  else if (!ci->peer) ms = blas_run(r, ci->threads);
  else ms = peerproc_run(&B->py, ci->peer, ci->threads);
  machine_wait_quiet(B->py.pid, QUIET_MAX_MS);
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
    if (uj_tensor_save_npy(r->in[0][i], path) != UJ_OK) {
      fprintf(stderr, "bench_peers: %s\n", uj_session_error(B->s[0]));
      uj_session_clear_error(B->s[0]);
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
  r->host[0] = host_copy(r->in[0][0]), r->host[1] = host_copy(r->in[0][1]);
  r->blas_out = calloc(r->out_n, sizeof *r->blas_out);
  bool ok = have_openblas && r->host[0] && r->host[1] && r->blas_out;
  r->active[C_BLAS1] = r->active[C_BLAS2] = ok;
  res->missing[C_BLAS1] = res->missing[C_BLAS2] = ok ? NULL : have_openblas ? "failed" : "absent";
}

static bool row_setup(Bench *B, Row *r, RowResult *res, const BenchDef *def) {
  Shape shapes[MAX_INPUTS];
  *r = (Row){.def = def, .nin = bench_inputs(def, shapes), .out_n = bench_output_numel(def)};
  *res = (RowResult){.name = def->name, .flops = kind_info[def->kind].flops, .work = bench_work(def), .written = bench_written(def),
                     .tol = kind_info[def->kind].tol};
  for (int l = 0; l < NLINES; l++) {
    res->goal[l] = bench_goal(def, l + 1);
    for (unsigned i = 0; i < r->nin; i++)
      if (!(r->in[l][i] = uj_tensor_rand(B->s[l], shapes[i].d, shapes[i].n, 1000 + i))) return false;
    if (uj_tensor_realize(r->in[l], r->nin) != UJ_OK) return false; /* not in the first timed realize */
  }
  r->out = malloc(r->out_n * sizeof *r->out);
  r->active[C_UJ1] = r->active[C_UJ2] = r->out != NULL;
  setup_blas(r, res);
  setup_python(B, r, res);
  return r->out != NULL;
}

static void row_free(Bench *B, Row *r) {
  for (unsigned i = 0; i < r->nin; i++) uj_tensor_free(r->in[0][i]), uj_tensor_free(r->in[1][i]), free(r->host[i]);
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
  uj_tensor *t = uj_tensor_load_npy(B->s[0], path);
  float *h = t && (size_t)uj_tensor_numel(t) == n ? host_copy(t) : NULL;
  uj_tensor_free(t);
  if (!h) uj_session_clear_error(B->s[0]);
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

/* The output to check against: OpenBLAS's, else PyTorch's, else NumPy's. */
static void row_reference(Bench *B, Row *r, RowResult *res) {
  if (r->active[C_BLAS1] && blas_run(r, 1) >= 0 && (r->ref = malloc(r->out_n * sizeof *r->ref))) {
    memcpy(r->ref, r->blas_out, r->out_n * sizeof *r->ref);
    res->ref = "OpenBLAS";
  }
  if (!r->ref && r->active[C_TORCH1] && (r->ref = peer_output(B, "torch", r->out_n))) res->ref = "PyTorch";
  if (!r->ref && r->active[C_NUMPY] && (r->ref = peer_output(B, "numpy", r->out_n))) res->ref = "NumPy";
}

/* Compares r->out with the reference; the larger error of both lines stays. */
static void row_check(Bench *B, Row *r, RowResult *res) {
  if (!r->ref) row_reference(B, r, res);
  if (!r->ref) return;
  res->err = fmax(res->err, max_rel_error(r->out, r->ref, r->out_n));
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

/* One turn of every active contender (uopjit's lines too when
 * with_uopjit); returns its milliseconds. Samples are kept when record. */
static double row_round(Bench *B, Row *r, RowResult *res, bool with_uopjit, bool record) {
  double t0 = bench_now_ms();
  for (int c = 0; c < C_COUNT; c++) {
    const ContenderInfo *ci = &contender_info[c];
    if (!r->active[c] || (ci->uopjit && !with_uopjit)) continue;
    double usage[2] = {0, 0}, ms = contender_run(B, r, res, (Contender)c, usage);
    UjLine *u = &res->uj[ci->threads - 1];
    if (record && ci->uopjit && ms >= 0) u->cpu_ms += usage[0], u->page_faults += usage[1], u->wall_ms += ms;
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

/* A realize of a small graph in session s: creates its JIT before any
 * row. */
static bool session_warm(uj_session *s) {
  uj_tensor *warm = uj_tensor_rand(s, (int64_t[]){16}, 1, 1);
  uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, warm, 1.0, false);
  bool ok = uj_tensor_realize(&y, 1) == UJ_OK;
  if (!ok) fprintf(stderr, "bench_peers: %s\n", uj_session_error(s));
  uj_tensor_free(y), uj_tensor_free(warm);
  return ok;
}

/* A new, empty disk cache folder in B->dir as UJ_CACHE_DIR (the last one
 * removed): the next compile of any kernel is cold. */
static void cache_folder_next(Bench *B) {
  char path[128];
  if (B->ncaches > 0) {
    snprintf(path, sizeof path, "%s/cache%d", B->dir, B->ncaches - 1);
    bench_remove_tree(path);
  }
  snprintf(path, sizeof path, "%s/cache%d", B->dir, B->ncaches++);
  setenv("UJ_CACHE_DIR", path, 1);
}

/* The first realize of r's line in a fresh session of its threads, on
 * the same inputs: its ms (-1 on failure, said on stderr), its profile
 * (compile or disk-cache load times) and its output in out. Both first
 * realizes of a line are made so, the one compiling into an empty disk
 * cache and the one loading from it, so both pay alike for memory the
 * process touches the first time (a fresh session has no pool of freed
 * blocks: a 256 MiB output faults its pages in, 0.6 s on one EPYC). */
static double first_realize_fresh(Bench *B, Row *r, RowResult *res, int line, KernelProfile *profile, float *out) {
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  Shape shapes[MAX_INPUTS];
  uj_tensor *in[MAX_INPUTS] = {0}, *y = NULL;
  Scratch sc = {0};
  setenv("UJ_THREADS", line == 0 ? "1" : "2", 1);
  bool ok = s && session_warm(s) && bench_inputs(r->def, shapes) == r->nin;
  for (unsigned i = 0; ok && i < r->nin; i++) ok = (in[i] = uj_tensor_rand(s, shapes[i].d, shapes[i].n, 1000 + i)) != NULL;
  ok = ok && uj_tensor_realize(in, r->nin) == UJ_OK && (y = build_graph(&sc, r->def, in)) != NULL;
  DebugCapture cap;
  bool caught = ok && debug_capture_begin(&cap);
  double t0 = bench_now_ms();
  ok = ok && uj_tensor_realize(&y, 1) == UJ_OK;
  double ms = elapsed_since(t0);
  if (caught) debug_capture_end(&cap, profile);
  ok = ok && uj_tensor_to_host(y, out, r->out_n * sizeof *out) == UJ_OK;
  if (!ok) fprintf(stderr, "bench_peers: %s, %d thread(s): a first realize failed: %s\n", res->name, line + 1, s ? uj_session_error(s) : why);
  scratch_free(&sc);
  uj_session_free(s);
  return ok ? ms : -1;
}

/* Line l's two first realizes, each in a fresh session: compiling into
 * an empty disk cache, then loading every kernel from it (a second
 * process's first realize); the two outputs must be equal bit for bit. */
static void first_realizes(Bench *B, Row *r, RowResult *res, int l) {
  UjLine *u = &res->uj[l];
  float *cold = malloc(r->out_n * sizeof *cold), *warm = malloc(r->out_n * sizeof *warm);
  cache_folder_next(B);
  u->first_ms = cold ? first_realize_fresh(B, r, res, l, &u->cold, cold) : -1;
  u->first_warm_ms = warm && u->first_ms >= 0 ? first_realize_fresh(B, r, res, l, &u->first_warm, warm) : -1;
  if (u->first_warm_ms >= 0 && memcmp(cold, warm, r->out_n * sizeof *cold)) {
    fprintf(stderr, "bench_peers: %s, %d thread(s): the first realize from the disk cache differs from the compiled one\n",
            res->name, l + 1);
    snprintf(res->error, sizeof res->error, "the disk cache's kernels computed other values");
    u->first_warm_ms = -1;
  }
  free(cold), free(warm);
}

/* uopjit's first run on each line in its session (its output checked;
 * the kernels come from the disk cache first_realizes filled), after the
 * line's two first realizes in fresh sessions. A line too slow to repeat
 * keeps the session's first run as its one sample. */
static void row_first_runs(Bench *B, Row *r, RowResult *res) {
  for (int l = 0; l < NLINES; l++) {
    Contender c = (Contender)(C_UJ1 + l);
    UjLine *u = &res->uj[l];
    if (!r->active[c]) continue;
    first_realizes(B, r, res, l);
    double usage[2] = {0, 0};
    KernelProfile profile;
    double first = uopjit_run(B, r, res, l, (UjExtras){.out = r->out, .profile = &profile, .usage = usage});
    if (first < 0) {
      sample_add(r, res, c, -1);
      continue;
    }
    row_check(B, r, res);
    u->one_run = first >= SLOW_RUN_MS;
    if (!u->one_run) continue;
    sample_add(r, res, c, first);
    r->active[c] = false; /* runs no more */
    u->cpu_ms = usage[0], u->page_faults = usage[1], u->wall_ms = first;
    u->warm = profile, u->warm_ms = first, u->profiled = profile.nkernels > 0; /* one run: its profile is the row's */
  }
}

/* The first runs, a warm-up turn of the peers, timed rounds, the best
 * times into res, then uopjit's profile runs. */
static void row_measure(Bench *B, Row *r, RowResult *res) {
  row_first_runs(B, r, res);
  row_round(B, r, res, false, false); /* setup ran the Python peers with their default threads */
  double round_ms = row_round(B, r, res, true, true);
  for (int i = 1, n = rounds_for(B, round_ms); i < n; i++) row_round(B, r, res, true, true);
  for (int c = 0; c < C_COUNT; c++)
    if (res->nsamples[c] > 0) res->best_ms[c] = best_of(r->samples[c], res->nsamples[c]);
    else if (!res->missing[c]) res->missing[c] = "failed";
  for (int l = 0; l < NLINES; l++)
    if (r->active[C_UJ1 + l]) uopjit_profile(B, r, res, l);
}

static void row_progress(const RowResult *res, double ms) {
  fprintf(stderr, "bench_peers: %-26s %6.1f s  uopjit %s", res->name, ms / 1e3, res->error[0] ? res->error : "");
  for (int l = 0; l < NLINES; l++)
    if (!res->missing[C_UJ1 + l])
      fprintf(stderr, " %dt %.4g ms (first %.4g ms)", l + 1, res->best_ms[C_UJ1 + l], res->uj[l].first_ms);
  if (res->wrong) fprintf(stderr, ", MISMATCH %.3g vs %s", res->err, res->ref);
  fputc('\n', stderr);
}

static void probe_bandwidth(Machine *m);

static void run_bench(Bench *B, const BenchDef *def, RowResult *res) {
  double t0 = bench_now_ms();
  if (!kind_info[def->kind].flops) probe_bandwidth(&B->machine); /* a memory line: its ceiling probed just before it too */
  Row *r = calloc(1, sizeof *r);
  if (!r) {
    *res = (RowResult){.name = def->name};
    snprintf(res->error, sizeof res->error, "out of memory");
    res->missing[C_UJ1] = res->missing[C_UJ2] = "failed";
    return;
  }
  if (row_setup(B, r, res, def)) row_measure(B, r, res);
  else {
    snprintf(res->error, sizeof res->error, "setup: %s", uj_session_error(B->s[0]));
    res->missing[C_UJ1] = res->missing[C_UJ2] = "failed";
  }
  for (int l = 0; l < NLINES; l++) uj_session_clear_error(B->s[l]);
  row_free(B, r);
  free(r);
  row_progress(res, elapsed_since(t0));
}

/* ---- main ---- */

static bool parse_options(int argc, char **argv, Options *o) {
  *o = (Options){"/usr/bin/python3", "bench/peers.py", {0}, 0, 12000};
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

/* The memory bandwidth probes, each kept at the best it has measured: run
 * at the start, before each memory line and at the end, as a shared
 * machine's bandwidth varies over minutes (one run's 2-thread read
 * stream: 32.6 GB/s at the start, 58.6 in another minute). */
enum { BANDWIDTH_RUNS = 20 }; /* as many as a line's timed runs at most: best of as many tries */

static void probe_bandwidth(Machine *m) {
  for (int l = 0; l < NLINES; l++) {
    m->read_gbs[l] = fmax(m->read_gbs[l], machine_bandwidth(PROBE_READ, BANDWIDTH_RUNS, l + 1));
    m->copy_nt_gbs[l] = fmax(m->copy_nt_gbs[l], machine_bandwidth(PROBE_COPY_NT, BANDWIDTH_RUNS, l + 1));
    m->copy_gbs[l] = fmax(m->copy_gbs[l], machine_bandwidth(PROBE_MEMCPY, BANDWIDTH_RUNS, l + 1));
  }
}

/* Sessions, temp folder, machine, peers; false with a message. */
static bool bench_open(Bench *B, const Options *o) {
  const char *why = NULL;
  *B = (Bench){.budget_ms = o->budget_ms};
  for (int l = 0; l < NLINES; l++)
    if (!(B->s[l] = uj_session_new("CPU", &why))) return fprintf(stderr, "bench_peers: no CPU session: %s\n", why), false;
  snprintf(B->dir, sizeof B->dir, "/tmp/uj_bench_peers.XXXXXX");
  if (!mkdtemp(B->dir)) return perror("bench_peers: mkdtemp"), false;
  unsetenv("UJ_CACHE");
  cache_folder_next(B); /* the disk cache of this run only, from here on */
  machine_read(&B->machine);
  probe_bandwidth(&B->machine);
  peerproc_start(&B->py, o->python, o->script);
  blas_version(B->machine.openblas, sizeof B->machine.openblas);
  snprintf(B->machine.numpy, sizeof B->machine.numpy, "%s", B->py.numpy_version);
  snprintf(B->machine.torch, sizeof B->machine.torch, "%s", B->py.torch_version);
  return session_warm(B->s[0]) && session_warm(B->s[1]);
}

static void bench_close(Bench *B) {
  peerproc_stop(&B->py);
  char path[128];
  snprintf(path, sizeof path, "%s/cache%d", B->dir, B->ncaches - 1);
  if (B->ncaches > 0) bench_remove_tree(path);
  if (B->dir[0]) rmdir(B->dir);
  for (int l = 0; l < NLINES; l++) uj_session_free(B->s[l]);
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
  if (ok) probe_bandwidth(&B.machine), table_print(stdout, rows, n, &B.machine);
  bench_close(&B);
  return ok ? 0 : 1;
}
