/* test_lanes.c — the optimizer's lane pass (lib/opt/lanes.c) on kernels
 * written in the text form: a REDUCE over 16 lanes of a REDUCE over k
 * becomes one 16-lane vector REDUCE and a fold, and an order-free
 * reduction (MAX, integer sums) over consecutive elements is split into
 * 32 lanes; the kernel after the pass computes exactly what the kernel
 * before it computed (the evaluator on both, bit for bit, and the JIT on
 * the new one); kernels the pass must not touch come back unchanged. On a
 * target that reassociates, float sums are split too (16 lanes, the
 * nested form's order), a matrix product's are not. */
#include <math.h>
#include <stdlib.h>

#include "jit_util.h"
#include "opt/lanes.h"

enum { ROWS = 4, MAX_COLS = 1024 };

/* A kernel of ROWS rows: out[i] = value, where %x(..) loads row i of
 * slot 1 (cols elements a row) at the index given, %y slot 2. */
static const char *kernel(const char *t, int64_t cols, const char *ranges, const char *index,
                          const char *value) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "%%i = (RANGE loop 0 (CONST:int64 %d))\n%s"
           "%%x = (LOAD (INDEX (PARAM:%s* 1) (ADD (MUL %%i (CONST:int64 %lld)) %s)))\n"
           "%%y = (LOAD (INDEX (PARAM:%s* 2) (ADD (MUL %%i (CONST:int64 %lld)) %s)))\n"
           "(SINK (END %%i (STORE (INDEX (PARAM:%s* 0) %%i) %s)))",
           ROWS, ranges, t, (long long)cols, index, t, (long long)cols, index, t, value);
  return buf;
}

/* Values of mixed magnitudes (so that the order of a float sum shows),
 * every 37th a -0.0, every 41st a +0.0, and a NaN in row 3 when nan. */
static unsigned char *fill(DType d, size_t count, int seed, bool nan) {
  size_t size = elem_bytes(d);
  unsigned char *p = calloc(count + 1, size);
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + 1);
  for (size_t i = 0; i < count; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v = ((double)(s >> 11) * 0x1p-53 - 0.5) * ldexp(1, (int)(s % 13) - 4);
    v = i % 37 == 5 ? -0.0 : i % 41 == 7 ? 0.0 : v;
    if (nan && i == 3 * count / ROWS + 9) v = NAN;
    uint64_t w = dt_is_float(d) ? word_from_double((uj_scalar)d.scalar, v)
                                : word_from_int((uj_scalar)d.scalar, (int64_t)(v * 1000));
    mem_write(p + i * size, d, &w);
  }
  return p;
}

/* The output of kernel k by the evaluator (malloc'd). */
static unsigned char *evaluate(Ctx *ctx, const UOp *k, DType d, unsigned char *const *in,
                               size_t count) {
  unsigned char *out = calloc(ROWS + 1, elem_bytes(d));
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, out, ROWS * elem_bytes(d));
  for (int s = 1; s < 3; s++) eval_bind_param(ev, s, in[s - 1], count * elem_bytes(d));
  CHECK(eval_run(ev, k), "evaluate: %s", uj_error(ctx));
  eval_free(ev);
  return out;
}

/* opt_lanes on the kernel: it has a REDUCE of dtype `want` (NULL: the
 * pass leaves the kernel alone), and computes what the kernel did. */
static void check_lanes(Ctx *ctx, const char *t, int64_t cols, const char *ranges,
                        const char *index, const char *value, const char *want, bool nan,
                        const char *what) {
  DType d;
  dtype_parse(t, strlen(t), &d);
  const UOp *k = uj_parse(ctx, kernel(t, cols, ranges, index, value), what);
  CHECK(k != NULL, "%s: %s", what, uj_error(ctx));
  const UOp *opt = k ? opt_lanes(ctx, k, false) : NULL;
  CHECK(opt != NULL, "%s: %s", what, uj_error(ctx));
  if (!opt) return;
  char *text = uj_print(ctx, opt);
  if (want)
    CHECK(text && strstr(text, want), "%s: wants a %s:\n%s", what, want,
          text ? text : uj_error(ctx));
  else CHECK(opt == k, "%s: must be left alone:\n%s", what, text ? text : uj_error(ctx));
  free(text);
  size_t count = ROWS * (size_t)cols;
  unsigned char *in[2] = {fill(d, count, 1, nan), fill(d, count, 2, false)};
  unsigned char *before = evaluate(ctx, k, d, in, count), *after = evaluate(ctx, opt, d, in, count);
  CHECK(!memcmp(before, after, ROWS * elem_bytes(d)),
        "%s: the kernel after the pass computes what it did, bit for bit", what);
  JitBuffers b = {3, {d, d, d}, {ROWS, count, count}, {before, in[0], in[1]}};
  jit_vs_eval(ctx, opt, &b, NULL, NULL, 0, 0, what);
  free(before), free(after), free(in[0]), free(in[1]);
}

#define NESTED       "%j = (RANGE reduce 1 (CONST:int64 16))\n%k = (RANGE reduce 2 (CONST:int64 20))\n"
#define NESTED_INDEX "(ADD (MUL %k (CONST:int64 16)) %j)"

static void test_nested(Ctx *ctx) {
  check_lanes(ctx, "float32", 320, NESTED, NESTED_INDEX, "(REDUCE ADD (REDUCE ADD %x %k) %j)",
              "REDUCE:float32x16 ADD", false, "a sum of 16 interleaved partial sums");
  check_lanes(ctx, "float64", 320, NESTED, NESTED_INDEX, "(REDUCE ADD (REDUCE ADD %x %k) %j)",
              "REDUCE:float64x16 ADD", false, "float64");
  check_lanes(ctx, "float16", 320, NESTED, NESTED_INDEX, "(REDUCE ADD (REDUCE ADD %x %k) %j)",
              "REDUCE:float16x16 ADD", false, "float16");
  check_lanes(ctx, "float32", 320, NESTED, NESTED_INDEX,
              "(REDUCE ADD (REDUCE MULACC (MUL %x %y) %k) %j)",
              "REDUCE:float32x16 MULACC (MUL:float32x16", false,
              "a sum of products keeps its fused multiply-adds");
  check_lanes(
      ctx, "float32", 320, NESTED, NESTED_INDEX,
      "(REDUCE MAX (ADD (MUL (REDUCE ADD %x %k) (CONST:float32 0.5)) (REDUCE MAX %y %k)) %j)",
      "REDUCE:float32x16 MAX", false, "two inner reductions under an expression, a max of them");
  check_lanes(ctx, "float32", 320, NESTED, NESTED_INDEX, "(REDUCE ADD (REDUCE MAX %x %k) %j)",
              "REDUCE:float32x16 MAX", true, "NaN and signed zeros in the lanes");
  check_lanes(ctx, "float32", 340,
              "%j = (RANGE reduce 1 (CONST:int64 17))\n%k = (RANGE reduce 2 (CONST:int64 20))\n",
              "(ADD (MUL %k (CONST:int64 17)) %j)", "(REDUCE ADD (REDUCE ADD %x %k) %j)", NULL,
              false, "17 lanes: too many");
  check_lanes(ctx, "float32", 320, NESTED, "%j", "(REDUCE ADD (MUL %x %x) %j)", NULL, false,
              "a reduce over 16 values with none inside");
}

#define ROW "%r = (RANGE reduce 1 (CONST:int64 512))\n"

static void test_order_free(Ctx *ctx) {
  check_lanes(ctx, "float32", 512, ROW, "%r", "(REDUCE MAX %x %r)", "REDUCE:float32x32 MAX", false,
              "a row max");
  check_lanes(ctx, "float32", 512, ROW, "%r", "(REDUCE MAX (ADD %x %y) %r)",
              "REDUCE:float32x32 MAX", true, "a row max with a NaN and signed zeros");
  check_lanes(ctx, "float64", 512, ROW, "%r", "(REDUCE MAX %x %r)", "REDUCE:float64x32 MAX", false,
              "float64 max");
  check_lanes(ctx, "int32", 512, ROW, "%r", "(REDUCE ADD %x %r)", "REDUCE:int32x32 ADD", false,
              "an int32 row sum");
  check_lanes(ctx, "float32", 512, ROW, "%r", "(REDUCE ADD %x %r)", NULL, false,
              "a float sum: its order is the graph's");
  check_lanes(ctx, "float32", 512, "%r = (RANGE reduce 1 (CONST:int64 32))\n", "%r",
              "(REDUCE MAX %x %r)", NULL, false, "32 elements: too short");
  check_lanes(ctx, "float32", 512, "%r = (RANGE reduce 1 (CONST:int64 500))\n", "%r",
              "(REDUCE MAX %x %r)", NULL, false, "500: 32 does not divide");
  check_lanes(ctx, "float32", 512, "%r = (RANGE reduce 1 (CONST:int64 256))\n",
              "(MUL %r (CONST:int64 2))", "(REDUCE MAX %x %r)", NULL, false,
              "every other element: not consecutive");
}

/* A target that reassociates (docs/semantics.md, "Reassociation"): a
 * float sum over consecutive elements is split into 16 lanes, lane j
 * adding elements 16c + j (bit for bit the nested form of the same
 * sum); a sum of products into 16 MULACC lanes; a sum that reads a
 * maximum over a range of its own (softmax's) too; a matrix product's
 * dot products, whose loads each serve many outputs, are not. */
static void test_reassociated(Ctx *ctx) {
  DType f = dt_scalar(UJ_FLOAT32);
  const char *plain = kernel("float32", 512, ROW, "%r", "(REDUCE ADD %x %r)");
  const UOp *k = uj_parse(ctx, plain, "row sum"), *opt = k ? opt_lanes(ctx, k, true) : NULL;
  char *text = opt ? uj_print(ctx, opt) : NULL;
  CHECK(text && strstr(text, "REDUCE:float32x16 ADD"), "a float row sum, reassociated: 16 lanes:\n%s", text ? text : uj_error(ctx));
  free(text);
  const UOp *nested = uj_parse(ctx,
                               kernel("float32", 512, "%j = (RANGE reduce 1 (CONST:int64 16))\n%k = (RANGE reduce 2 (CONST:int64 32))\n",
                                      NESTED_INDEX, "(REDUCE ADD (REDUCE ADD %x %k) %j)"),
                               "nested");
  size_t count = ROWS * 512;
  unsigned char *in[2] = {fill(f, count, 1, false), fill(f, count, 2, false)};
  unsigned char *split = opt ? evaluate(ctx, opt, f, in, count) : NULL, *lanes = nested ? evaluate(ctx, nested, f, in, count) : NULL,
                *serial = evaluate(ctx, k, f, in, count);
  CHECK(split && lanes && !memcmp(split, lanes, ROWS * sizeof(float)), "lane j adds elements 16c + j: the nested form's bits");
  CHECK(split && memcmp(split, serial, ROWS * sizeof(float)) != 0, "the data shows the order");
  if (opt) {
    JitBuffers b = {3, {f, f, f}, {ROWS, count, count}, {split, in[0], in[1]}};
    jit_vs_eval(ctx, opt, &b, NULL, NULL, 0, 0, "a reassociated row sum");
  }
  free(split), free(lanes), free(serial);
  static const struct {
    const char *value, *want, *what;
  } cases[] = {
      {"(REDUCE MULACC (MUL %x %y) %r)", "REDUCE:float32x16 MULACC (MUL:float32x16", "a row of products: fused, 16 lanes"},
      {"(REDUCE ADD (SUB %x (REDUCE MAX (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %i (CONST:int64 512)) %m))) %m)) %r)",
       "REDUCE:float32x16 ADD", "a sum reading a maximum over its own range"},
      /* a load every row shares, only added (a bias or a position embedding under a layernorm's mean and variance):
       * no matrix product, so lanes (it went to upcast: 16 rows a vector, a gather a lane) */
      {"(REDUCE ADD (ADD %x (LOAD (INDEX (PARAM:float32* 2) %r))) %r)", "REDUCE:float32x16 ADD", "a row sum of x plus a shared bias"},
      {"(REDUCE ADD (MUL (ADD %x (LOAD (INDEX (PARAM:float32* 2) %r))) (ADD %x (LOAD (INDEX (PARAM:float32* 2) %r)))) %r)",
       "REDUCE:float32x16 ADD", "a row sum of squares of x plus a shared bias"},
      /* a gathered row: r minus something free of r reads consecutive elements */
      {"(REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (SUB %r (MUL %i (CONST:int64 -512))))) %r)", "REDUCE:float32x16 ADD",
       "a row at r - i * -512"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const UOp *kc = uj_parse(ctx, kernel("float32", 512, ROW "%m = (RANGE reduce 2 (CONST:int64 512))\n", "%r", cases[c].value), cases[c].what);
    const UOp *oc = kc ? opt_lanes(ctx, kc, true) : NULL;
    char *t = oc ? uj_print(ctx, oc) : NULL;
    CHECK(t && strstr(t, cases[c].want), "%s: wants a %s:\n%s", cases[c].what, cases[c].want, t ? t : uj_error(ctx));
    free(t);
  }
  static const struct {
    const char *text, *what;
  } alone[] = { /* left to upcast and tiles, or not consecutive */
      {"%i = (RANGE loop 0 (CONST:int64 4))\n%j = (RANGE loop 1 (CONST:int64 4))\n%k = (RANGE reduce 2 (CONST:int64 512))\n"
       "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int64 4)) %j))\n"
       " (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int64 512)) %k)))\n"
       "  (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j (CONST:int64 512)) %k)))) %k)))))",
       "a @ b.T: each row of a serves every column"},
      {"%i = (RANGE loop 0 (CONST:int64 4))\n%k = (RANGE reduce 1 (CONST:int64 512))\n"
       "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i)\n"
       " (REDUCE ADD (MUL (ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int64 512)) %k))) (CONST:float32 1.0))\n"
       "  (LOAD (INDEX (PARAM:float32* 2) %k))) %k))))",
       "(a + 1) @ x: x serves every row, multiplied"},
      {"%i = (RANGE loop 0 (CONST:int64 4))\n%k = (RANGE reduce 1 (CONST:int64 512))\n"
       "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i)\n"
       " (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (SUB (MUL %i (CONST:int64 512)) %k))) %k))))",
       "i * 512 - k: not consecutive along k"},
  };
  for (size_t c = 0; c < sizeof alone / sizeof *alone; c++) {
    const UOp *ka = uj_parse(ctx, alone[c].text, alone[c].what);
    CHECK(ka && opt_lanes(ctx, ka, true) == ka, "%s: left alone", alone[c].what);
  }
  CHECK(k && opt_lanes(ctx, k, false) == k, "a target that keeps the order: the float sum left alone");
  free(in[0]), free(in[1]);
}

/* The vector REDUCE reaches LLVM as a <16 x float> accumulator fed by
 * <16 x float> loads. */
static void test_ir(Ctx *ctx) {
  const UOp *k = uj_parse(
      ctx,
      kernel("float32", 4096,
             "%j = (RANGE reduce 1 (CONST:int64 16))\n%k = (RANGE reduce 2 (CONST:int64 256))\n",
             NESTED_INDEX, "(REDUCE ADD (REDUCE ADD %x %k) %j)"),
      "ir");
  const UOp *opt = k ? opt_lanes(ctx, k, false) : NULL;
  char *ir = opt ? uj_emit(ctx, opt, UJ_EMIT_IR_OPT, NULL, NULL) : NULL;
  CHECK(ir && strstr(ir, "load <16 x float>") && strstr(ir, "fadd <16 x float>"),
        "16-float loads and sums:\n%s", ir ? ir : uj_error(ctx));
  free(ir);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_nested(ctx);
  test_order_free(ctx);
  test_reassociated(ctx);
  test_ir(ctx);
  uj_ctx_free(ctx);
  return check_report("test_lanes");
}
