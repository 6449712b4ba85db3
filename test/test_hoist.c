/* test_hoist.c — reductions an inner loop does not read, stored once
 * before it (lib/opt/hoist.c): a layernorm's mean and 1/sqrt(variance)
 * and a softmax's max and sum (its sum over the max's own RANGE) are
 * stored in `reg` ALLOCs in the body of the row loop, none left in the
 * loop over the row's outputs; a REDUCE that depends only on an outer
 * batch loop is stored there; each kernel computes exactly what it did
 * (JIT and evaluator, values whose sums round). Kernels with a REDUCE
 * over the outputs (a GEMM), or whose REDUCE depends on no loop, are left
 * alone. Through the tensor API: softmax, log_softmax and layernorm over
 * rows are one kernel each, within the tensor evaluator's bounds (the
 * CPU's lane sums, exp's polynomial); over columns, softmax keeps its
 * three. */
#include "opt/graph.h"
#include "opt/opt.h"
#include "opt_util.h"
#include "tensor_util.h"

enum { ROWS = 6, COLS = 40, BATCH = 3 };

/* out[b, i, j] = value, x (slot 1) a BATCH x ROWS x COLS tensor; %xk is
 * x[b, i, k] (%k and %q reduce over the row), %xj x[b, i, j]. */
static const char *rows_text(const char *defs, const char *value) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "%%b = (RANGE loop 0 (CONST:int64 %d))\n%%i = (RANGE loop 1 (CONST:int64 %d))\n%%j = (RANGE loop 2 (CONST:int64 %d))\n"
           "%%k = (RANGE reduce 3 (CONST:int64 %d))\n%%q = (RANGE reduce 4 (CONST:int64 %d))\n"
           "%%row = (MUL (ADD (MUL %%b (CONST:int64 %d)) %%i) (CONST:int64 %d))\n"
           "%%xk = (LOAD (INDEX (PARAM:float32* 1) (ADD %%row %%k)))\n%%xq = (LOAD (INDEX (PARAM:float32* 1) (ADD %%row %%q)))\n"
           "%%xj = (LOAD (INDEX (PARAM:float32* 1) (ADD %%row %%j)))\n%s\n"
           "(SINK (END %%b (END %%i (END %%j (STORE (INDEX (PARAM:float32* 0) (ADD %%row %%j)) %s)))))",
           BATCH, ROWS, COLS, COLS, COLS, ROWS, COLS, defs, value);
  return buf;
}

#define LAYERNORM_DEFS                                                                                        \
  "%m = (MUL (REDUCE ADD %xk %k) (CONST:float32 0.025))\n"                                                    \
  "%d = (SUB %xq %m)\n%v = (MUL (REDUCE ADD (MUL %d %d) %q) (CONST:float32 0.025))"
#define LAYERNORM "(FDIV (SUB %xj %m) (SQRT (ADD %v (CONST:float32 0.00001))))"
#define SOFTMAX_DEFS                                                                                          \
  "%mx = (REDUCE MAX %xk %k)\n%s = (REDUCE ADD (EXP2 (SUB %xk %mx)) %k)"
#define SOFTMAX "(FDIV (EXP2 (SUB %xj %mx)) %s)"

/* The END of loop `depth` (0: the batch) and its effects before the loop inside. */
static const UOp *end_at(const UOp *kernel, int depth) {
  const UOp *e = kernel->src[0];
  for (int d = 0; d < depth && e; d++) e = e->src[e->nsrc - 1];
  return e && e->op == UJ_OP_END ? e : NULL;
}

/* stores: the STOREs the body of the loop at `depth` holds before the
 * loop inside it (-1: the kernel must be left alone). */
static void check_rows(Ctx *ctx, const char *defs, const char *value, int depth, int stores, uint64_t ulps, const char *what) {
  const UOp *k = uj_parse(ctx, rows_text(defs, value), what);
  CHECK(k != NULL, "%s: %s", what, uj_error(ctx));
  if (!k) return;
  const UOp *h = opt_hoist(ctx, k);
  char *text = h ? uj_print(ctx, h) : NULL;
  if (stores < 0) {
    CHECK(h == k, "%s: left alone:\n%s", what, text ? text : uj_error(ctx));
  } else {
    const UOp *e = h ? end_at(h, depth) : NULL, *inner = h ? end_at(h, 2) : NULL, **reduces = NULL;
    size_t n = inner ? opt_reduces_read(ctx, inner, true, &reduces) : 1;
    free(reduces);
    CHECK(e && (int)e->nsrc == 2 + stores && n == 0, "%s: %d stores in loop %d, no REDUCE in the output loop:\n%s", what, stores,
          depth, text ? text : uj_error(ctx));
  }
  free(text);
  DType f = dt_scalar(UJ_FLOAT32);
  size_t n = (size_t)BATCH * ROWS * COLS;
  JitBuffers b = {2, {f, f}, {n, n}, {fill_rounding(f, n, 1), fill_rounding(f, n, 2)}};
  check_same_buffers_ulps(ctx, k, h, &b, ulps, what);
  /* and the whole pass list */
  JitBuffers b2 = {2, {f, f}, {n, n}, {fill_rounding(f, n, 3), fill_rounding(f, n, 4)}};
  check_same_buffers_ulps(ctx, k, opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}, &(OptConfig){0}), &b2, ulps, what);
}

static void test_kernels(Ctx *ctx) {
  check_rows(ctx, LAYERNORM_DEFS, LAYERNORM, 1, 2, 0, "layernorm: the mean, then sqrt(variance + eps)");
  check_rows(ctx, SOFTMAX_DEFS, SOFTMAX, 1, 2, 2, "softmax: the max, then the sum over the max's RANGE (exp: 2 ulps)");
  check_rows(ctx, "%t = (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %b (CONST:int64 240)) %k))) %k)",
             "(SUB %xj %t)", 0, 1, 0, "a REDUCE over the batch's first row: stored in the batch loop");
  check_rows(ctx, "%t = (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) %k)) %k)", "(SUB %xj %t)", 0, -1, 0,
             "a REDUCE of no loop: left where it is");
  check_rows(ctx, "%g = (REDUCE ADD (MUL %xk (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %k (CONST:int64 6)) %j)))) %k)", "%g", 0,
             -1, 0, "a REDUCE over the outputs (a GEMM): left to upcast");
}

static void test_tensors(void) {
  uj_session *s = uj_session_new("CPU", NULL);
  CHECK(s != NULL, "a CPU session");
  if (!s) return;
  Rng r = {0x9E3779B97F4A7C15ull};
  double *v;
  uj_tensor *x = random_f32(s, &r, SHAPE(33, 768), -4, 4, false, &v);
  free(v);
  int axis = -1;
  uj_tensor *mean = uj_tensor_reduce(UJ_RED_MEAN, x, &axis, 1, true), *d = uj_tensor_binary(UJ_BIN_SUB, x, mean);
  uj_tensor *var = uj_tensor_reduce(UJ_RED_MEAN, uj_tensor_binary(UJ_BIN_MUL, d, d), &axis, 1, true);
  uj_tensor *ln = uj_tensor_binary(UJ_BIN_DIV, d, uj_tensor_unary(UJ_UN_SQRT, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false)));
  uj_tensor *rows[] = {uj_tensor_softmax(x, -1), uj_tensor_log_softmax(x, -1), ln};
  const char *names[] = {"softmax over rows", "log_softmax over rows", "layernorm over rows"};
  for (int i = 0; i < 3; i++) {
    CHECK(uj_tensor_kernel_count(rows[i]) == 1 && kernels_have(rows[i], "*reg"), "%s: one kernel, its reductions stored a row",
          names[i]);
    free(values(s, rows[i], BOUNDED, names[i])); /* the CPU's lane sums, exp the JIT's polynomial: within the evaluator's bounds */
  }
  uj_tensor *cols = uj_tensor_softmax(x, 0);
  CHECK(uj_tensor_kernel_count(cols) == 3, "softmax over columns: %zu kernels", uj_tensor_kernel_count(cols));
  free(values(s, cols, BOUNDED, "softmax over columns"));
  uj_session_free(s);
}

int main(void) {
  test_tensors();
  Ctx *ctx = uj_ctx_new();
  test_kernels(ctx);
  uj_ctx_free(ctx);
  return check_report("test_hoist");
}
