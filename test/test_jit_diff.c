/* test_jit_diff.c — the kernel corpus (kernel_corpus.h) through the CPU JIT,
 * diffed with the reference evaluator: bit-exact, except EXP2/LOG2/SIN
 * (libm; 2 ulps allowed, docs/semantics.md). Also: loops with a variable
 * bound, nested loops, gated loads and stores, value PARAMs; VECTORIZE and
 * GEP; the polynomial EXP2/LOG2/SIN of GPUs (lib/codegen) compiled for the
 * CPU, bit-exact against the evaluator of the same polynomial. */
#include "codegen/transcendental.h"
#include "kernel_corpus.h"
#include "opt/opt.h"

/* Each kernel as it is, then shaped by the optimizer (lib/opt): by the
 * heuristics and by a config drawn at random per kernel; the JIT on the
 * shaped kernel against the evaluator on the kernel (the shaped ones
 * only where the optimizer changed something). */
typedef struct Counts {
  int kernels, shaped[2]; /* kernels; those the heuristics, a random config changed */
} Counts;

static void diff_one(Ctx *ctx, const CorpusKernel *k, void *user) {
  Counts *n = user;
  int *count = &n->kernels;
  uint64_t ulps = k->transcendental ? 2 : 0;
  (*count)++;
  jit_vs_eval(ctx, k->kernel, &k->bufs, NULL, NULL, 0, ulps, k->what);
  OptTarget target = {.desc = target_desc_cpu(16u << (*count % 3))}; /* 16, 32 and 64-byte registers in turn */
  OptConfig random = opt_config_random((uint64_t)*count);
  const UOp *shaped[2] = {opt_kernel(ctx, k->kernel, &target), opt_apply(ctx, k->kernel, &target, &random)};
  for (int i = 0; i < 2; i++) {
    char what[256];
    snprintf(what, sizeof what, "%s, %s", k->what, i ? "a random opt config" : "the opt heuristics");
    CHECK(shaped[i] != NULL, "%s: %s", what, uj_error(ctx));
    if (!shaped[i] || shaped[i] == k->kernel) continue;
    n->shaped[i]++;
    jit_vs_eval_of(ctx, k->kernel, shaped[i], &k->bufs, NULL, NULL, 0, ulps, what);
  }
}

static void test_corpus(void) {
  Ctx *ctx = uj_ctx_new();
  Counts n = {0};
  corpus_each(ctx, diff_one, &n);
  printf("corpus: %d kernels; shaped by the opt heuristics: %d, by random configs: %d\n", n.kernels, n.shaped[0], n.shaped[1]);
  CHECK(n.kernels > 600, "the corpus has %d kernels", n.kernels);
  CHECK(n.shaped[1] > 100, "random opt configs changed only %d corpus kernels", n.shaped[1]);
  uj_ctx_free(ctx);
}

/* Kernels from text, on float32 buffers of 16 elements at slots 0..2. */
static void diff_text(Ctx *ctx, const char *text, const char *what, const char *const *names, const int64_t *vars,
                      size_t nvars) {
  const UOp *k = uj_parse(ctx, text, what);
  CHECK(k != NULL, "%s: %s", what, uj_error(ctx));
  if (!k) return;
  JitBuffers b = {.n = 3};
  for (int i = 0; i < 3; i++) {
    b.dtype[i] = dt_scalar(UJ_FLOAT32), b.count[i] = 16;
    float *f = malloc(16 * sizeof *f);
    for (int j = 0; j < 16; j++) f[j] = (float)(i * 100 + j) - 7.5f;
    b.init[i] = (unsigned char *)f;
  }
  jit_vs_eval(ctx, k, &b, names, vars, nvars, 0, what);
  for (int i = 0; i < 3; i++) free(b.init[i]);
}

static void test_structures(Ctx *ctx) {
  static const char *const n_name[] = {"n"};
  static const int64_t n_values[] = {0, 1, 5, 16};
  const char *var_loop = "%i = (RANGE loop 0 (DEFINE_VAR:int32 n 0 16))\n"
                         "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (MUL (LOAD (INDEX (PARAM:float32* 1) %i)) "
                         "(CONST:float32 3.0)))))";
  for (int i = 0; i < 4; i++) diff_text(ctx, var_loop, "variable bound", n_name, &n_values[i], 1);
  diff_text(ctx,
            "%i = (RANGE loop 0 (CONST:int32 4))\n%j = (RANGE loop 1 (CONST:int32 3))\n"
            "%i4 = (MUL %i (CONST:int32 4))\n%k = (ADD %i4 %j)\n"
            "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) %k) (ADD (LOAD (INDEX (PARAM:float32* 1) %k))"
            " (LOAD (INDEX (PARAM:float32* 2) %j))))) (STORE (INDEX (PARAM:float32* 0) (ADD %i4 (CONST:int32 3)))"
            " (CAST:float32 %i))))",
            "nested loops, a store after the inner loop", NULL, NULL, 0);
  diff_text(ctx,
            "%i = (RANGE loop 0 (CONST:int32 16))\n%g = (CMPLT %i (CONST:int32 9))\n"
            "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) (SUB (CONST:int32 15) %i) %g)"
            " (LOAD (INDEX (PARAM:float32* 1) (ADD %i (CONST:int32 7)) (CMPLT %i (CONST:int32 9))) (CONST:float32 -1.0)))))",
            "gated load and store", NULL, NULL, 0);
  diff_text(ctx,
            "%i = (RANGE loop 0 (CONST:int32 16))\n%off = (CMPLT %i (CONST:int32 0))\n%far = (ADD %i (CONST:int32 1000000000))\n"
            "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (LOAD (INDEX (PARAM:float32* 1) %far %off) (CONST:float32 2.5)))"
            " (STORE (INDEX (PARAM:float32* 2) %far %off) (CONST:float32 1.0))))",
            "gated off, far out of bounds", NULL, NULL, 0);
  /* REDUCE over RANGEs: accumulators in loop order (float sums bit-exact) */
  diff_text(ctx,
            "%i = (RANGE loop 0 (CONST:int32 4))\n%j = (RANGE reduce 1 (CONST:int32 4))\n%k = (ADD (MUL %i (CONST:int32 4)) %j)\n"
            "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE ADD (MUL (LOAD (INDEX (PARAM:float32* 1) %k))"
            " (FDIV (LOAD (INDEX (PARAM:float32* 2) %j)) (CONST:float32 7.0))) %j))"
            " (STORE (INDEX (PARAM:float32* 0) (ADD %i (CONST:int32 4))) (REDUCE MAX (LOAD (INDEX (PARAM:float32* 1) %k)) %j))"
            " (STORE (INDEX (PARAM:float32* 0) (ADD %i (CONST:int32 8))) (REDUCE MUL (LOAD (INDEX (PARAM:float32* 2) %k)) %j))))",
            "REDUCE ADD, MAX, MUL in a loop", NULL, NULL, 0);
  diff_text(ctx,
            "%a = (RANGE reduce 0 (CONST:int32 4))\n%b = (RANGE reduce 1 (ADD %a (CONST:int32 1)))\n"
            "%n = (RANGE reduce 2 (DEFINE_VAR:int32 n 0 16))\n"
            "(SINK (STORE (PARAM:float32* 0) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %a (CONST:int32 4)) %b))) %a %b))"
            " (STORE (INDEX (PARAM:float32* 0) (CONST:int32 1)) (ADD (REDUCE ADD (LOAD (INDEX (PARAM:float32* 2) %n)) %n)"
            " (REDUCE MAX (REDUCE ADD (CAST:float32 (MUL %a %b)) %b) %a))))",
            "nested, triangular, variable-bound and reduce-of-reduce", n_name, &n_values[2], 1);
  diff_text(ctx,
            "%j = (RANGE reduce 0 (CONST:int32 16))\n%v = (LOAD (INDEX (PARAM:float32* 1) %j))\n"
            "(SINK (STORE (PARAM:float32* 0) (REDUCE MAX (WHERE (CMPLT %v (CONST:float32 90.0)) %v (FDIV (CONST:float32 0.0) (CONST:float32 0.0))) %j))"
            " (STORE (INDEX (PARAM:float32* 0) (CONST:int32 1)) (REDUCE ADD (NEG (CONST:float32 0.0)) %j))"
            " (STORE (INDEX (PARAM:float32* 0) (CONST:int32 2)) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (CONST:int32 3)))"
            " (RANGE reduce 1 (CONST:int32 0)))))",
            "MAX with a NaN, a sum of -0.0, an empty sum", NULL, NULL, 0);
  diff_text(ctx,
            "%i = (RANGE loop 0 (CONST:int32 4))\n%v = (LOAD (INDEX (PARAM:float32x4* 1) %i))\n"
            "(SINK (END %i (STORE (INDEX (PARAM:float32x4* 0) %i) (VECTORIZE (GEP 3 %v) (GEP 2 %v)"
            " (MAX (GEP 1 %v) (CONST:float32 110.0)) (LOAD (INDEX (PARAM:float32* 2) %i))))))",
            "VECTORIZE and GEP", NULL, NULL, 0);
}

/* The GPU polynomials, through the CPU JIT: every op of them compiles
 * with the evaluator's semantics. */
static void lowered_one(Ctx *ctx, const CorpusKernel *k, void *user) {
  if (!k->transcendental || (k->bufs.dtype[0].scalar != UJ_FLOAT64 && k->bufs.dtype[0].scalar != UJ_FLOAT32)) return;
  const UOp *low = transcendental_lower(ctx, k->kernel, 1u << UJ_FLOAT64 | 1u << UJ_FLOAT32);
  CHECK(low && low != k->kernel, "%s: lowering: %s", k->what, uj_error(ctx));
  char what[128];
  snprintf(what, sizeof what, "%s, lowered", k->what);
  if (low) jit_vs_eval(ctx, low, &k->bufs, NULL, NULL, 0, 0, what);
  (*(int *)user)++;
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  int lowered = 0;
  test_structures(ctx);
  corpus_each(ctx, lowered_one, &lowered);
  CHECK(lowered == 24, "%d lowered transcendental kernels", lowered);
  uj_ctx_free(ctx);
  test_corpus();
  return check_report("test_jit_diff");
}
