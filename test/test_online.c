/* test_online.c — REDUCEs that read a running maximum (codegen/online.h,
 * docs/semantics.md "REDUCE"): a REDUCE in another's value that binds the
 * same RANGE again (a shadow) computes over its own loop in the evaluator;
 * the renderer runs it in the same loop as the maximum so far when every
 * read is exp2((y - M) * c) (online softmax, flash attention's), and
 * before the loop otherwise. Each kernel runs in the JIT and the evaluator
 * on the same memory, including rows that start with or are all -inf; the
 * IR shows how many loops it has. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jit_util.h"
#include "opt/opt.h"

enum { ROWS = 5, COLS = 37, DEPTH = 8 };

/* out[i] = sum_j exp(x[i,j] - M_i) * v[j] / sum_j exp(x[i,j] - M_i), M_i = max_j x[i,j] */
static const char *softmax_weighted =
    "%i = (RANGE loop 0 (CONST:int32 5))\n"
    "%j = (RANGE reduce 1 (CONST:int32 37))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 37)) %j)))\n"
    "%m = (REDUCE MAX %x %j)\n"
    "%e = (EXP2 (MUL (SUB %x %m) (CONST:float32 1.442695)))\n"
    "%a = (REDUCE ADD (MUL %e (LOAD (INDEX (PARAM:float32* 2) %j))) %j)\n"
    "%l = (REDUCE ADD %e %j)\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (FDIV %a %l))))";

/* The same with the scores a nested REDUCE (q @ k^T, d = 8), the output
 * a row of 8 columns: attention for one head. */
static const char *attention =
    "%i = (RANGE loop 0 (CONST:int32 5))\n"
    "%c = (RANGE loop 1 (CONST:int32 8))\n"
    "%j = (RANGE reduce 2 (CONST:int32 37))\n"
    "%d = (RANGE reduce 3 (CONST:int32 8))\n"
    "%s = (MUL (REDUCE ADD (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 8)) %d)))"
    " (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j (CONST:int32 8)) %d)))) %d) (CONST:float32 0.35355339))\n"
    "%m = (REDUCE MAX %s %j)\n"
    "%e = (EXP2 (MUL (SUB %s %m) (CONST:float32 1.442695)))\n"
    "%a = (REDUCE ADD (MUL %e (LOAD (INDEX (PARAM:float32* 3) (ADD (MUL %j (CONST:int32 8)) %c)))) %j)\n"
    "%l = (REDUCE ADD %e %j)\n"
    "(SINK (END %i (END %c (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int32 8)) %c)) (FDIV %a %l)))))";

/* M read outside exp2: sum_j (x - M) is not online; M runs first. */
static const char *linear_shadow =
    "%i = (RANGE loop 0 (CONST:int32 5))\n"
    "%j = (RANGE reduce 1 (CONST:int32 37))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 37)) %j)))\n"
    "%m = (REDUCE MAX %x %j)\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE ADD (SUB %x %m) %j))))";

/* log-sum-exp, M read again after the loop: M + log2(sum_j exp2(x - M)). */
static const char *logsumexp =
    "%i = (RANGE loop 0 (CONST:int32 5))\n"
    "%j = (RANGE reduce 1 (CONST:int32 37))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 37)) %j)))\n"
    "%m = (REDUCE MAX %x %j)\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (ADD %m (LOG2 (REDUCE ADD (EXP2 (SUB %x %m)) %j))))))";

/* As rangeify makes attention's last kernel when softmax is not cut: the
 * max, the sum of exps and the weighted sum each over a RANGE of their
 * own, the division by the sum inside the weighted one. opt_shadow takes
 * the division out and runs both sums over the max's RANGE (one loop). */
static const char *unfused =
    "%i = (RANGE loop 0 (CONST:int32 5))\n"
    "%j0 = (RANGE reduce 1 (CONST:int32 37))\n"
    "%j1 = (RANGE reduce 2 (CONST:int32 37))\n"
    "%j2 = (RANGE reduce 3 (CONST:int32 37))\n"
    "%d0 = (RANGE reduce 4 (CONST:int32 8))\n"
    "%d1 = (RANGE reduce 5 (CONST:int32 8))\n"
    "%d2 = (RANGE reduce 6 (CONST:int32 8))\n"
    "%q0 = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 8)) %d0)))\n"
    "%q1 = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 8)) %d1)))\n"
    "%q2 = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 8)) %d2)))\n"
    "%s0 = (REDUCE MULACC (MUL %q0 (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j0 (CONST:int32 8)) %d0)))) %d0)\n"
    "%s1 = (REDUCE MULACC (MUL %q1 (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j1 (CONST:int32 8)) %d1)))) %d1)\n"
    "%s2 = (REDUCE MULACC (MUL %q2 (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j2 (CONST:int32 8)) %d2)))) %d2)\n"
    "%m = (REDUCE MAX %s0 %j0)\n"
    "%l = (REDUCE ADD (EXP2 (MUL (SUB %s1 %m) (CONST:float32 1.442695))) %j1)\n"
    "%p = (FDIV (EXP2 (MUL (SUB %s2 %m) (CONST:float32 1.442695))) %l)\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE MULACC (MUL %p (LOAD (INDEX (PARAM:float32* 3) %j2))) %j2))))";

static unsigned char *floats(size_t n, unsigned seed, int masked) {
  float *f = malloc(n * sizeof *f);
  uint32_t state = seed * 2654435761u + 1;
  for (size_t k = 0; k < n; k++) {
    state = state * 1664525u + 1013904223u;
    f[k] = (float)((state >> 8) % 2000) / 250.0f - 4.0f;
  }
  if (masked) { /* row 1 starts with -inf; row 3 is all -inf */
    for (size_t k = 0; k < 9; k++) f[COLS + k] = -INFINITY;
    for (size_t k = 0; k < COLS; k++) f[3 * COLS + k] = -INFINITY;
  }
  return (unsigned char *)f;
}

/* How many loop headers the kernel's LLVM IR has (before the passes). */
static int loops_in(Ctx *ctx, const UOp *k) {
  char *ir = uj_emit(ctx, k, UJ_EMIT_IR, NULL, NULL);
  int n = 0;
  for (const char *p = ir; p && (p = strstr(p, "\nloop")); p++) n++;
  free(ir);
  return n;
}

static void check(Ctx *ctx, const char *name, const char *text, int nbuf, const size_t *count, int masked, int loops) {
  const UOp *k = uj_parse(ctx, text, name);
  CHECK(k != NULL, "%s parses: %s", name, uj_error(ctx));
  if (!k) return;
  JitBuffers b = {.n = nbuf};
  for (int i = 0; i < nbuf; i++) {
    b.dtype[i] = uj_dtype_scalar(UJ_FLOAT32), b.count[i] = count[i];
    b.init[i] = floats(count[i], (unsigned)i + 7, masked && i == 1);
  }
  jit_within_bounds_of(ctx, k, k, &b, name); /* the renderer's online rescale regroups the sums */
  int n = loops_in(ctx, k);
  CHECK(n == loops, "%s: %d loops in the IR, want %d", name, n, loops);
  for (int i = 0; i < nbuf; i++) free(b.init[i]);
}

/* opt_shadow on the unfused kernel: the same values (up to rounding: the
 * division moved, the sums online), one loop over j, the scores of one
 * REDUCE for all three; unchanged without a max to read. */
static void check_shadow_pass(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, unfused, "unfused"), *plain = uj_parse(ctx, linear_shadow, "plain");
  const UOp *fused = k ? opt_shadow(ctx, k) : NULL;
  CHECK(fused != NULL && fused != k, "opt_shadow rewrites the unfused kernel: %s", uj_error(ctx));
  if (!fused) return;
  /* before: i; the weighted sum and its d; in its body, the max and the sum of exps, each with its d (both again
   * at every step: quadratic in j). After: i; j, d. */
  CHECK(loops_in(ctx, k) == 7 && loops_in(ctx, fused) == 3, "loops: %d before (want 7), %d after (want 3)",
        loops_in(ctx, k), loops_in(ctx, fused));
  JitBuffers b = {.n = 4};
  size_t count[4] = {ROWS, ROWS * DEPTH, COLS * DEPTH, COLS};
  for (int i = 0; i < 4; i++) b.dtype[i] = uj_dtype_scalar(UJ_FLOAT32), b.count[i] = count[i], b.init[i] = floats(count[i], (unsigned)i + 3, 0);
  jit_within_bounds_of(ctx, k, fused, &b, "opt_shadow");
  for (int i = 0; i < 4; i++) free(b.init[i]);
  CHECK(plain && opt_shadow(ctx, plain) == plain, "a sum of x - max keeps its kernel (no division, the max's RANGE its own)");
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  check_shadow_pass(ctx);
  for (int masked = 0; masked < 2; masked++) {
    check(ctx, "softmax_weighted", softmax_weighted, 3, (size_t[]){ROWS, ROWS * COLS, COLS}, masked, 2);
    if (!masked) check(ctx, "attention", attention, 4, (size_t[]){ROWS * DEPTH, ROWS * DEPTH, COLS * DEPTH, COLS * DEPTH}, 0, 4);
    check(ctx, "linear_shadow", linear_shadow, 2, (size_t[]){ROWS, ROWS * COLS}, masked, 3);
    check(ctx, "logsumexp", logsumexp, 2, (size_t[]){ROWS, ROWS * COLS}, masked, 2);
  }
  uj_ctx_free(ctx);
  return check_report("test_online");
}
