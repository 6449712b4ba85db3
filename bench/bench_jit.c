/* bench_jit.c — JIT latency: from a UOp kernel to a callable function.
 *
 * Not a test: it times three paths over the same KERNELS distinct small
 * kernels and prints a markdown table (what bench/run.sh pastes into the
 * README):
 *   1. uj_compile of each kernel, parsed from text (uj_parse), in one
 *      context whose JIT is reused; timed alone and with the parse;
 *   2. uj_compile of each kernel again while it is still alive: a cache
 *      hit that must return the same program;
 *   3. uj_compile of each kernel in a fresh context (a new JIT, as in a
 *      second process), which loads the object file that path 1 left in
 *      the disk cache (docs/compile.md): the run keeps its own cache
 *      folder (UJ_CACHE_DIR set to a temporary one, emptied at the end),
 *      so path 1 always compiles and path 3 always loads;
 *   4. the C equivalent of each kernel built the way C-rendering compilers
 *      build it: `clang -O2 -shared -fPIC` in a subprocess (fork, exec,
 *      wait), then dlopen and dlsym. clang-19 is used if on PATH, else
 *      clang; with neither the row says it was skipped.
 * A kernel is out[i] = f(x[i], b[i]) for i < 1024: an ADD of a constant
 * unique to the kernel (so no two kernels are equal and none hits the
 * cache), then 1 to 5 float32 steps (ADD, SUB, MUL, MAX, NEG, with a
 * constant or b[i]). A warm-up kernel first creates the JIT; its time is
 * printed apart. Every kernel, JIT and clang, runs once and each output is
 * checked against a C reference; a mismatch or a failure exits 1.
 * Usage: bench_jit [KERNELS]   (default 100) */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "uopjit/uopjit.h"

enum { N_ELEMS = 1024, MAX_STEPS = 6, EXPR_MAX = 1024, TEXT_MAX = 2048, PATH_MAX_LEN = 512 };

/* ---- kernels ---- */

typedef enum StepKind {
  STEP_ADD_C, STEP_SUB_C, STEP_MUL_C, STEP_MAX_C, STEP_ADD_B, STEP_MUL_B, STEP_NEG, STEP_COUNT
} StepKind;

/* One step x -> f(x, operand) in the text form and in C: the first %s is
 * x, the second the operand. */
typedef struct StepForm {
  const char *uop;
  const char *c;
  char operand; /* 'c': a constant, 'b': the second input b[i], 0: none */
} StepForm;

static const StepForm step_forms[] = {
    [STEP_ADD_C] = {"(ADD %s %s)", "(%s + %s)", 'c'},
    [STEP_SUB_C] = {"(SUB %s %s)", "(%s - %s)", 'c'},
    [STEP_MUL_C] = {"(MUL %s %s)", "(%s * %s)", 'c'},
    [STEP_MAX_C] = {"(MAX %s %s)", "max_f(%s, %s)", 'c'},
    [STEP_ADD_B] = {"(ADD %s %s)", "(%s + %s)", 'b'},
    [STEP_MUL_B] = {"(MUL %s %s)", "(%s * %s)", 'b'},
    [STEP_NEG] = {"(NEG %s)", "(-%s)", 0},
};
_Static_assert(sizeof step_forms / sizeof step_forms[0] == STEP_COUNT, "one form per step");

/* %s: the expression of out[i]. PARAM 0 is out, 1 is x, 2 is b. */
static const char kernel_uop_format[] =
    "%%i = (RANGE loop 0 (CONST:int32 1024))\n"
    "%%x = (LOAD (INDEX (PARAM:float32* 1) %%i))\n"
    "%%b = (LOAD (INDEX (PARAM:float32* 2) %%i))\n"
    "(SINK (END %%i (STORE (INDEX (PARAM:float32* 0) %%i) %s)))\n";

/* The same kernel in C; MAX agrees with the JIT's for the finite values here. */
static const char kernel_c_format[] =
    "static float max_f(float a, float b) { return a > b ? a : b; }\n"
    "void kernel_c(float *restrict out, const float *restrict xs, const float *restrict bs) {\n"
    "  for (int i = 0; i < 1024; i++) {\n"
    "    float x = xs[i], b = bs[i];\n"
    "    out[i] = %s;\n"
    "  }\n"
    "}\n";

typedef struct Kernel {
  char name[16];
  int nsteps;
  StepKind step[MAX_STEPS];
  float c[MAX_STEPS];
  char uop_text[TEXT_MAX];
  char c_text[TEXT_MAX];
} Kernel;

typedef void (*KernelFnC)(float *out, const float *xs, const float *bs);


/* The operand of a step in both languages ("" for none). */
static void operand_text(char kind, float c, char *uop, char *cc, size_t size) {
  if (kind == 'c') {
    snprintf(uop, size, "(CONST:float32 %.6f)", c);
    snprintf(cc, size, "%.6ff", c);
  } else {
    snprintf(uop, size, "%s", kind == 'b' ? "%b" : "");
    snprintf(cc, size, "%s", kind == 'b' ? "b" : "");
  }
}

/* Writes k's text form and C file from its steps. */
static void kernel_render(Kernel *k) {
  char uop[2][EXPR_MAX] = {"%x"}, cc[2][EXPR_MAX] = {"x"};
  int cur = 0;
  for (int s = 0; s < k->nsteps; s++) {
    const StepForm *f = &step_forms[k->step[s]];
    char uop_arg[48], c_arg[48];
    operand_text(f->operand, k->c[s], uop_arg, c_arg, sizeof uop_arg);
    snprintf(uop[!cur], EXPR_MAX, f->uop, uop[cur], uop_arg);
    snprintf(cc[!cur], EXPR_MAX, f->c, cc[cur], c_arg);
    cur = !cur;
  }
  snprintf(k->uop_text, TEXT_MAX, kernel_uop_format, uop[cur]);
  snprintf(k->c_text, TEXT_MAX, kernel_c_format, cc[cur]);
}

/* Kernel number `index`: its first step adds 0.5 + index/4 (exact in
 * float32), which no other kernel adds first. */
static void kernel_make(Kernel *k, size_t index, uint64_t *rng) {
  snprintf(k->name, sizeof k->name, "k%zu", index);
  k->nsteps = 2 + (int)(rng_next(rng) % (MAX_STEPS - 1));
  k->step[0] = STEP_ADD_C;
  k->c[0] = 0.5f + 0.25f * (float)index;
  for (int s = 1; s < k->nsteps; s++) {
    k->step[s] = (StepKind)(rng_next(rng) % STEP_COUNT);
    k->c[s] = 0.5f + 0.125f * (float)(rng_next(rng) % 64);
  }
  kernel_render(k);
}

static float step_apply(StepKind kind, float x, float operand) {
  switch (kind) {
  case STEP_ADD_C: case STEP_ADD_B: return x + operand;
  case STEP_SUB_C: return x - operand;
  case STEP_MUL_C: case STEP_MUL_B: return x * operand;
  case STEP_MAX_C: return x > operand ? x : operand;
  case STEP_NEG: return -x;
  default: abort();
  }
}

/* The C reference of one element. */
static float kernel_reference(const Kernel *k, float x, float b) {
  for (int s = 0; s < k->nsteps; s++) {
    char kind = step_forms[k->step[s]].operand;
    x = step_apply(k->step[s], x, kind == 'b' ? b : k->c[s]);
  }
  return x;
}

/* ---- the run's state ---- */

typedef struct Bench {
  uj_ctx *ctx;
  size_t n;
  Kernel *kernels; /* n + 1: the last is the warm-up */
  const uj_uop **roots;
  uj_program **programs;
  double *compile_ms, *parse_compile_ms, *hit_ms, *disk_ms, *clang_ms; /* n each */
  double first_ms;
  char clang[PATH_MAX_LEN], clang_version[PATH_MAX_LEN]; /* clang[0] == 0: none found */
  float xs[N_ELEMS], bs[N_ELEMS], out[N_ELEMS];
} Bench;


static void fail(const char *what, const char *detail) {
  fprintf(stderr, "bench_jit: %s: %s\n", what, detail);
  exit(1);
}

static void *alloc_or_die(size_t count, size_t size) {
  void *p = calloc(count, size);
  if (!p) fail("out of memory", "calloc");
  return p;
}

/* True when out matches k's reference on every element. */
static bool output_matches(const Bench *B, const Kernel *k) {
  for (size_t i = 0; i < N_ELEMS; i++) {
    float want = kernel_reference(k, B->xs[i], B->bs[i]);
    if (fabsf(B->out[i] - want) > 1e-5f * fmaxf(1.0f, fabsf(want))) {
      fprintf(stderr, "bench_jit: %s: out[%zu] = %.9g, want %.9g\n", k->name, i, B->out[i], want);
      return false;
    }
  }
  return true;
}

static void bench_init(Bench *B, size_t n) {
  B->n = n;
  B->ctx = uj_ctx_new();
  if (!B->ctx) fail("out of memory", "uj_ctx_new");
  B->kernels = alloc_or_die(n + 1, sizeof *B->kernels);
  B->roots = alloc_or_die(n + 1, sizeof *B->roots);
  B->programs = alloc_or_die(n + 1, sizeof *B->programs);
  B->compile_ms = alloc_or_die(n, sizeof(double));
  B->parse_compile_ms = alloc_or_die(n, sizeof(double));
  B->hit_ms = alloc_or_die(n, sizeof(double));
  B->disk_ms = alloc_or_die(n, sizeof(double));
  B->clang_ms = alloc_or_die(n, sizeof(double));
  uint64_t rng = 0x9E3779B97F4A7C15u;
  for (size_t i = 0; i <= n; i++) kernel_make(&B->kernels[i], i, &rng);
  for (size_t i = 0; i < N_ELEMS; i++) {
    B->xs[i] = -2.0f + 0.25f * (float)(i % 17);
    B->bs[i] = 0.5f + (float)(i % 101) / 101.0f;
  }
}

static void bench_free(Bench *B) {
  free(B->kernels);
  free(B->roots);
  free(B->programs);
  free(B->compile_ms);
  free(B->parse_compile_ms);
  free(B->hit_ms);
  free(B->disk_ms);
  free(B->clang_ms);
  uj_ctx_free(B->ctx);
}

/* ---- 1 and 2: uopjit ---- */

/* Parses and compiles kernel i into B->programs[i]; the times of both. */
static void jit_compile(Bench *B, size_t i, double *compile_ms, double *parse_compile_ms) {
  Kernel *k = &B->kernels[i];
  double t0 = bench_now_ms();
  B->roots[i] = uj_parse(B->ctx, k->uop_text, k->name);
  double t1 = bench_now_ms();
  if (!B->roots[i]) fail("parse", uj_error(B->ctx));
  B->programs[i] = uj_compile(B->ctx, B->roots[i], k->name);
  double t2 = bench_now_ms();
  if (!B->programs[i]) fail("compile", uj_error(B->ctx));
  *compile_ms = t2 - t1;
  *parse_compile_ms = t2 - t0;
}

/* Runs program i once on xs and bs, checks it, frees it. */
static void jit_run_and_free(Bench *B, size_t i) {
  void *args[3] = {B->out, B->xs, B->bs};
  memset(B->out, 0, sizeof B->out);
  if (uj_run(B->programs[i], args, 3, NULL, 0) != UJ_OK) fail("run", uj_error(B->ctx));
  if (!output_matches(B, &B->kernels[i])) fail("uopjit output", B->kernels[i].name);
  uj_program_free(B->programs[i]);
  B->programs[i] = NULL;
}

/* The warm-up kernel (number n) creates the context's JIT. */
static void jit_warm_up(Bench *B) {
  double parse_compile;
  jit_compile(B, B->n, &B->first_ms, &parse_compile);
  jit_run_and_free(B, B->n);
}

static void jit_compile_all(Bench *B) {
  for (size_t i = 0; i < B->n; i++) {
    jit_compile(B, i, &B->compile_ms[i], &B->parse_compile_ms[i]);
    for (size_t j = 0; j < i; j++)
      if (B->programs[j] == B->programs[i]) fail("kernels not distinct", B->kernels[i].name);
  }
}

/* Compiles each live kernel again: each must come back from the cache. */
static void jit_cache_hits(Bench *B) {
  for (size_t i = 0; i < B->n; i++) {
    double t0 = bench_now_ms();
    uj_program *p = uj_compile(B->ctx, B->roots[i], B->kernels[i].name);
    B->hit_ms[i] = bench_now_ms() - t0;
    if (p != B->programs[i]) fail("cache miss", B->kernels[i].name);
    uj_program_free(p); /* the second reference */
  }
}

/* Compiles every kernel in a fresh context, whose JIT (made by the
 * warm-up kernel, not timed) finds each in the disk cache; runs and
 * checks each. */
static void jit_disk_loads(Bench *B) {
  uj_ctx *first = B->ctx;
  B->ctx = uj_ctx_new();
  if (!B->ctx) fail("out of memory", "uj_ctx_new");
  double ignored, parse_compile;
  jit_compile(B, B->n, &ignored, &parse_compile);
  jit_run_and_free(B, B->n);
  for (size_t i = 0; i < B->n; i++) {
    jit_compile(B, i, &B->disk_ms[i], &parse_compile);
    jit_run_and_free(B, i);
  }
  uj_ctx_free(B->ctx);
  B->ctx = first;
}

/* The run's own cache folder, made empty; removed by cache_folder_remove. */
static void cache_folder_make(char *dir, size_t size) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, size, "%s/uj_bench_jit_cache.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) fail("mkdtemp", strerror(errno));
  setenv("UJ_CACHE_DIR", dir, 1);
  unsetenv("UJ_CACHE");
}

static void cache_folder_remove(const char *dir) { bench_remove_tree(dir); }

/* ---- 4: clang in a subprocess ---- */

/* Finds name in PATH; its full path in out. */
static bool find_program(const char *name, char *out, size_t size) {
  const char *dir = getenv("PATH");
  if (!dir) dir = "/usr/bin:/bin";
  while (*dir) {
    size_t len = strcspn(dir, ":");
    snprintf(out, size, "%.*s/%s", (int)len, len ? dir : ".", name);
    if (access(out, X_OK) == 0) return true;
    dir += len + (dir[len] == ':');
  }
  out[0] = 0;
  return false;
}

/* The first line of `clang --version`. */
static void clang_read_version(Bench *B) {
  char cmd[PATH_MAX_LEN + 32];
  snprintf(cmd, sizeof cmd, "'%s' --version 2>/dev/null", B->clang);
  snprintf(B->clang_version, sizeof B->clang_version, "%s", B->clang);
  FILE *f = popen(cmd, "r");
  if (!f) return;
  if (fgets(B->clang_version, sizeof B->clang_version, f))
    B->clang_version[strcspn(B->clang_version, "\n")] = 0;
  pclose(f);
}

/* clang -O2 -shared -fPIC -o so c: fork, exec, wait. */
static bool clang_build(const char *clang, const char *c_path, const char *so_path) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    execl(clang, clang, "-O2", "-shared", "-fPIC", "-o", so_path, c_path, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) fail("cannot write", path);
}

/* Builds kernel i's C file into a .so and loads it (timed), then runs and
 * checks it, unloads it and removes both files. */
static void clang_one(Bench *B, size_t i, const char *dir) {
  const Kernel *k = &B->kernels[i];
  char c_path[PATH_MAX_LEN + 32], so_path[PATH_MAX_LEN + 32];
  snprintf(c_path, sizeof c_path, "%s/%s.c", dir, k->name);
  snprintf(so_path, sizeof so_path, "%s/%s.so", dir, k->name);
  write_file(c_path, k->c_text);
  double t0 = bench_now_ms();
  bool built = clang_build(B->clang, c_path, so_path);
  void *lib = built ? dlopen(so_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *sym = lib ? dlsym(lib, "kernel_c") : NULL;
  B->clang_ms[i] = bench_now_ms() - t0;
  if (!sym) fail("clang path", built ? dlerror() : "clang failed");
  KernelFnC fn;
  memcpy(&fn, &sym, sizeof fn);
  memset(B->out, 0, sizeof B->out);
  fn(B->out, B->xs, B->bs);
  if (!output_matches(B, k)) fail("clang output", k->name);
  dlclose(lib);
  unlink(so_path);
  unlink(c_path);
}

/* False when no clang is found (the row is skipped). */
static bool clang_all(Bench *B) {
  if (!find_program("clang-19", B->clang, sizeof B->clang) &&
      !find_program("clang", B->clang, sizeof B->clang))
    return false;
  clang_read_version(B);
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX_LEN];
  snprintf(dir, sizeof dir, "%s/uj_bench_jit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) fail("mkdtemp", strerror(errno));
  for (size_t i = 0; i < B->n; i++) clang_one(B, i, dir);
  rmdir(dir);
  return true;
}

/* ---- the table ---- */

typedef struct Stats {
  double median, p10, p90;
} Stats;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of sorted v, interpolated between neighbours. */
static double quantile(const double *v, size_t n, double q) {
  double at = q * (double)(n - 1);
  size_t lo = (size_t)at;
  if (lo + 1 >= n) return v[n - 1];
  return v[lo] + (at - (double)lo) * (v[lo + 1] - v[lo]);
}

/* Sorts ms in place. */
static Stats stats_of(double *ms, size_t n) {
  qsort(ms, n, sizeof *ms, cmp_double);
  return (Stats){quantile(ms, n, 0.5), quantile(ms, n, 0.1), quantile(ms, n, 0.9)};
}

/* ms with three significant digits or more. */
static const char *format_ms(double ms, char *buf, size_t size) {
  int decimals = ms >= 10 ? 1 : ms >= 1 ? 2 : ms >= 0.1 ? 3 : ms >= 0.01 ? 4 : ms >= 0.001 ? 5 : 6;
  snprintf(buf, size, "%.*f ms", decimals, ms);
  return buf;
}

/* clang_median <= 0: no clang, no ratio. */
static void print_row(const char *what, Stats s, double clang_median) {
  char med[32], p10[32], p90[32], ratio[32] = "—";
  double r = clang_median / s.median;
  if (clang_median > 0) snprintf(ratio, sizeof ratio, r >= 100 ? "%.0fx" : "%.1fx", r);
  printf("| %s | %s | %s | %s | %s |\n", what, format_ms(s.median, med, sizeof med),
         format_ms(s.p10, p10, sizeof p10), format_ms(s.p90, p90, sizeof p90), ratio);
}

static void print_table(Bench *B, bool have_clang) {
  Stats compile = stats_of(B->compile_ms, B->n), both = stats_of(B->parse_compile_ms, B->n);
  Stats hit = stats_of(B->hit_ms, B->n), disk = stats_of(B->disk_ms, B->n), clang = {0};
  if (have_clang) clang = stats_of(B->clang_ms, B->n);
  printf("| path | median | p10 | p90 | subprocess / path |\n");
  printf("|---|---:|---:|---:|---:|\n");
  print_row("uopjit compile (median)", compile, clang.median);
  print_row("uopjit parse + compile (median)", both, clang.median);
  print_row("uopjit cache hit (median)", hit, clang.median);
  print_row("uopjit disk cache, fresh context (median)", disk, clang.median);
  if (have_clang) print_row("clang -O2 -shared subprocess (median)", clang, clang.median);
  else printf("| clang -O2 -shared subprocess (median) | skipped: no clang-19 or clang on PATH | | | |\n");
  char first[32];
  printf("\n%zu kernels, each run once and checked against a C reference. "
         "First compile in a fresh context (creates the JIT; not in the rows): %s.",
         B->n, format_ms(B->first_ms, first, sizeof first));
  if (have_clang) printf(" Subprocess: %s.", B->clang_version);
  printf("\n");
}

int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100;
  if (n < 1 || n > 4000) fail("KERNELS must be 1 to 4000", argc > 1 ? argv[1] : "");
  Bench *B = alloc_or_die(1, sizeof *B);
  char cache[PATH_MAX_LEN];
  cache_folder_make(cache, sizeof cache);
  bench_init(B, (size_t)n);
  jit_warm_up(B);
  jit_compile_all(B);
  jit_cache_hits(B);
  for (size_t i = 0; i < B->n; i++) jit_run_and_free(B, i);
  jit_disk_loads(B);
  cache_folder_remove(cache);
  bool have_clang = clang_all(B);
  print_table(B, have_clang);
  bench_free(B);
  return 0;
}
