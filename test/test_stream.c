/* test_stream.c — reductions down columns streamed a row at a time
 * (lib/opt/stream.c): matrix-vector products, column sums and maxima,
 * batched, with a bias and a relu after, float32/64 and int32, registers
 * of 16, 32 and 64 bytes, reductions that 8 steps do not divide; each
 * computes exactly what the kernel before it did (the JIT and the
 * evaluator, on values whose sums round, so that another order would show)
 * and has the streamed form (a `reg` ALLOC of accumulators, no REDUCE
 * left, chunks split among threads when the columns hold 16 KiB);
 * kernels it must leave to register blocking (a GEMM's rows, a gated load,
 * columns read apart or too few) are left alone, unless forced. Through
 * the tensor API: a matrix-vector product and column sums are streamed
 * and agree with the tensor evaluator bit for bit. */
#include "opt/opt.h"
#include "opt_util.h"
#include "tensor_util.h"

enum { MAX_SLOTS = 3 };

/* out[b, j] = g(REDUCE(op, v, k)), k < depth, j < n, b < batch: v reads
 * x[k] (slot 1, shared by the batch when shared_x) and m[b, k, j] (slot
 * 2, its row `stride` apart; j·step along a row). */
static const char *kernel_text(const char *t, const char *op, const char *v, const char *g, int64_t batch, int64_t depth,
                               int64_t n, int64_t stride, int64_t step) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "%%b = (RANGE loop 0 (CONST:int64 %lld))\n%%j = (RANGE loop 1 (CONST:int64 %lld))\n"
           "%%k = (RANGE reduce 2 (CONST:int64 %lld))\n"
           "%%x = (LOAD (INDEX (PARAM:%s* 1) (ADD (MUL %%b (CONST:int64 %lld)) %%k)))\n"
           "%%m = (LOAD (INDEX (PARAM:%s* 2) (ADD (MUL %%b (CONST:int64 %lld)) (ADD (MUL %%k (CONST:int64 %lld)) (MUL %%j "
           "(CONST:int64 %lld))))))\n"
           "%%r = (REDUCE %s %s %%k)\n"
           "(SINK (END %%b (END %%j (STORE (INDEX (PARAM:%s* 0) (ADD (MUL %%b (CONST:int64 %lld)) %%j)) %s))))",
           (long long)batch, (long long)n, (long long)depth, t, (long long)depth, t, (long long)(depth * stride),
           (long long)stride, (long long)step, op, v, t, (long long)n, g);
  return buf;
}

typedef struct Case {
  const char *what;
  const char *t, *op, *v, *g;
  int64_t batch, depth, n, stride, step;
  unsigned vector_bytes;
  OptSwitch stream;
  bool streamed;  /* the pass must apply */
  int64_t chunks; /* then: the chunks' RANGE bound (0: not checked) */
} Case;

static void check_case(Ctx *ctx, const Case *c) {
  const UOp *k = uj_parse(ctx, kernel_text(c->t, c->op, c->v, c->g, c->batch, c->depth, c->n, c->stride, c->step), c->what);
  CHECK(k != NULL, "%s: %s", c->what, uj_error(ctx));
  if (!k) return;
  const UOp *s = opt_stream(ctx, k, target_desc_cpu(c->vector_bytes), &(OptConfig){.stream = c->stream});
  char *text = s ? uj_print(ctx, s) : NULL;
  bool streamed = text && strstr(text, "*reg") && !strstr(text, "REDUCE");
  CHECK(text && streamed == c->streamed, "%s: %s:\n%s", c->what, c->streamed ? "wants the streamed form" : "must be left alone",
        text ? text : uj_error(ctx));
  if (c->streamed && c->chunks) {
    char want[64];
    snprintf(want, sizeof want, "(RANGE:int64 loop %d (CONST:int64 %lld))", 3, (long long)c->chunks);
    CHECK(text && strstr(text, want), "%s: %lld chunks:\n%s", c->what, (long long)c->chunks, text ? text : "");
  }
  free(text);
  DType d = dt_scalar(UJ_FLOAT32);
  if (!strcmp(c->t, "float64")) d = dt_scalar(UJ_FLOAT64);
  if (!strcmp(c->t, "int32")) d = dt_scalar(UJ_INT32);
  size_t out = (size_t)(c->batch * c->n), xs = (size_t)(c->batch * c->depth);
  size_t ms = (size_t)(c->batch * c->depth * c->stride);
  JitBuffers b = {MAX_SLOTS, {d, d, d}, {out, xs, ms}, {fill_rounding(d, out, 1), fill_rounding(d, xs, 2), fill_rounding(d, ms, 3)}};
  check_same_buffers(ctx, k, s, &b, c->what);
  /* the whole pass list too: what the threads split */
  const UOp *all = opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(c->vector_bytes)}, &(OptConfig){.stream = c->stream});
  JitBuffers b2 = {MAX_SLOTS, {d, d, d}, {out, xs, ms}, {fill_rounding(d, out, 4), fill_rounding(d, xs, 5), fill_rounding(d, ms, 6)}};
  check_same_buffers(ctx, k, all, &b2, c->what);
}

#define GEMV "(MUL %x %m)"
#define PLAIN "%r"

static const Case cases[] = {
    /* what                                   t          op        v      g                                   batch depth n     stride step vb  stream    streamed chunks */
    {"gemv 64 x 512, AVX-512",                "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"gemv 64 x 4096: two chunks (threads)",  "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   4096, 4096,  1,   64, OPT_AUTO, true,  2},
    {"gemv 16 x 16384: 4 chunks of 16 KiB",   "float32", "MULACC", GEMV,  PLAIN,                              1,    16,   16384, 16384, 1,  64, OPT_AUTO, true,  4},
    {"gemv, AVX2",                            "float32", "MULACC", GEMV,  PLAIN,                              1,    40,   1024, 1024,  1,   32, OPT_AUTO, true,  1},
    {"gemv, SSE",                             "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   512,  512,   1,   16, OPT_AUTO, true,  1},
    {"gemv, unfused ADD of a product",        "float32", "ADD",    GEMV,  PLAIN,                              1,    64,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"gemv, scaled and a relu after",         "float32", "MULACC", GEMV,  "(MAX (MUL %r (CONST:float32 0.5)) (CONST:float32 0.0))", 1, 64, 512, 512, 1, 64, OPT_AUTO, true, 1},
    {"gemv, 61 steps (8 do not divide)",      "float32", "MULACC", GEMV,  PLAIN,                              1,    61,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"gemv, 36 steps (4 a pass)",             "float32", "MULACC", GEMV,  PLAIN,                              1,    36,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"gemv, rows wider than the columns",     "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   512,  2048,  1,   64, OPT_AUTO, true,  1},
    {"gemv float64",                          "float64", "MULACC", GEMV,  PLAIN,                              1,    32,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"batched gemv: the matrix per batch",    "float32", "MULACC", GEMV,  PLAIN,                              3,    32,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"column sums",                           "float32", "ADD",    "%m",  PLAIN,                              1,    100,  1024, 1024,  1,   64, OPT_AUTO, true,  1},
    {"column sums of int32",                  "int32",   "ADD",    "%m",  PLAIN,                              1,    100,  1024, 1024,  1,   64, OPT_AUTO, true,  1},
    {"column maxima",                         "float32", "MAX",    "%m",  PLAIN,                              1,    100,  1024, 1024,  1,   64, OPT_AUTO, true,  1},
    {"column products",                       "float32", "MUL",    "%m",  PLAIN,                              1,    20,   512,  512,   1,   64, OPT_AUTO, true,  1},
    {"few columns: register blocking reads whole rows", "float32", "MULACC", GEMV, PLAIN,                     1,    64,   128,  128,   1,   64, OPT_AUTO, false, 0},
    {"few columns, forced",                   "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   128,  128,   1,   64, OPT_ON,   true,  1},
    {"short rows: contiguous already",        "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   256,  256,   1,   64, OPT_AUTO, false, 0},
    {"off",                                   "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   4096, 4096,  1,   64, OPT_OFF,  false, 0},
    {"columns read apart (a gather)",         "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   512,  1024,  2,   64, OPT_ON,   false, 0},
    {"columns the vector does not divide",    "float32", "MULACC", GEMV,  PLAIN,                              1,    64,   1000, 1000,  1,   64, OPT_ON,   false, 0},
};

/* A GEMM's rows (the matrix does not depend on them: register blocking
 * reads it once for 8 rows), and a gated load: left alone. */
static void test_declines(Ctx *ctx) {
  const char *gemm =
      "%i = (RANGE loop 0 (CONST:int64 16))\n%j = (RANGE loop 1 (CONST:int64 4096))\n%k = (RANGE reduce 2 (CONST:int64 64))\n"
      "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int64 4096)) %j)) (REDUCE MULACC (MUL "
      "(LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int64 64)) %k))) (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k "
      "(CONST:int64 4096)) %j)))) %k)))))";
  const char *gated =
      "%j = (RANGE loop 0 (CONST:int64 4096))\n%k = (RANGE reduce 1 (CONST:int64 64))\n"
      "(SINK (END %j (STORE (INDEX (PARAM:float32* 0) %j) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %k "
      "(CONST:int64 4096)) %j) (CMPLT %k (CONST:int64 60)))) %k))))";
  const char *texts[] = {gemm, gated}, *names[] = {"a GEMM's rows", "a gated load"};
  for (int i = 0; i < 2; i++) {
    const UOp *k = uj_parse(ctx, texts[i], names[i]);
    const UOp *s = k ? opt_stream(ctx, k, target_desc_cpu(64), &(OptConfig){.stream = OPT_ON}) : NULL;
    CHECK(k && s == k, "%s: left alone (%s)", names[i], k ? "" : uj_error(ctx));
  }
}

static void test_tensors(void) {
  uj_session *s = uj_session_new("CPU", NULL);
  CHECK(s != NULL, "a CPU session");
  if (!s) return;
  Rng r = {0x2545F4914F6CDD1Dull};
  double *v;
  uj_tensor *x = random_f32(s, &r, SHAPE(1, 300), -3, 3, false, &v);
  free(v);
  uj_tensor *w = random_f32(s, &r, SHAPE(300, 2048), -3, 3, false, &v);
  free(v);
  uj_tensor *y = uj_tensor_matmul(x, w), *cols = uj_tensor_reduce(UJ_RED_SUM, w, (int[]){0}, 1, false);
  uj_tensor *most = uj_tensor_reduce(UJ_RED_MAX, w, (int[]){0}, 1, true);
  uj_tensor *all[] = {y, cols, most};
  const char *names[] = {"x @ w, 1 x 300 x 2048", "w.sum(axis=0)", "w.max(axis=0, keepdim)"};
  for (int i = 0; i < 3; i++) {
    CHECK(kernels_have(all[i], "*reg") && !kernels_have(all[i], "REDUCE"), "%s: streamed", names[i]);
    free(values(s, all[i], EXACT, names[i]));
  }
  uj_session_free(s);
}

int main(void) {
  test_tensors();
  Ctx *ctx = uj_ctx_new();
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(ctx, &cases[i]);
  test_declines(ctx);
  uj_ctx_free(ctx);
  return check_report("test_stream");
}
