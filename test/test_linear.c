/* test_linear.c — the lowered list (codegen/linear.h) beyond the CPU JIT's
 * diffs (jit_util.h runs every JIT diff's list through eval_linear too):
 * lists made for a GPU target run by eval_linear against the graph
 * evaluator, bit for bit where they keep its order and against the CPU's
 * list where they regroup a sum (online softmax); a REDUCE over a lone
 * `unroll` RANGE (copies with no loop around them); the list's shape
 * (loops, accumulators, barriers) and its text; and eval_linear's errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "jit_util.h"
#include "llvm/listing.h"
#include "uop/eval.h"
#include "uop/text.h"
#include "workgroup_kernels.h"

enum { NBUF = 4, CAP = 4096 };

typedef struct Bufs {
  float f[NBUF][CAP];
} Bufs;

static void fill(Bufs *b) {
  for (int s = 0; s < NBUF; s++)
    for (int i = 0; i < CAP; i++) b->f[s][i] = s == 0 ? 0.0f : (float)sin(0.37 * i + s) * 3.0f;
}

/* The graph evaluator's buffers after kernel k. */
static bool run_graph(Ctx *ctx, const UOp *k, Bufs *b) {
  Eval *ev = eval_new(ctx);
  for (int s = 0; s < NBUF; s++) eval_bind_param(ev, s, b->f[s], sizeof b->f[s]);
  bool ok = eval_run(ev, k);
  eval_free(ev);
  return ok;
}

/* eval_linear's buffers after k's list for target kind/arch. */
static bool run_list(Ctx *ctx, const UOp *k, const char *kind, const char *arch, Bufs *b) {
  Linear l;
  if (!pipeline_listing(ctx, k, kind, arch, &l)) return false;
  void *params[NBUF];
  size_t bytes[NBUF];
  for (int s = 0; s < NBUF; s++) params[s] = b->f[s], bytes[s] = sizeof b->f[s];
  LinearArgs a = {params, bytes, NBUF, NULL, NULL, 0, 0, 1};
  bool ok = eval_linear(ctx, &l, &a);
  linear_free(&l);
  return ok;
}

static const UOp *parse(Ctx *ctx, const char *text) {
  const UOp *k = text_parse(ctx, text, "test");
  CHECK(k != NULL, "parse: %s", uj_error(ctx));
  return k;
}

/* k's list for nvptx (sm_90) and amdgpu against the graph evaluator,
 * bit for bit. */
static void gpu_vs_graph(Ctx *ctx, const char *what, const char *text) {
  const UOp *k = parse(ctx, text);
  if (!k) return;
  static Bufs want, got;
  fill(&want);
  CHECK(run_graph(ctx, k, &want), "%s: the evaluator: %s", what, uj_error(ctx));
  const char *kinds[2][2] = {{"nvptx", "sm_90"}, {"amdgpu", "gfx942"}};
  for (int t = 0; t < 2; t++) {
    fill(&got);
    bool ok = run_list(ctx, k, kinds[t][0], kinds[t][1], &got);
    CHECK(ok, "%s (%s): eval_linear: %s", what, kinds[t][0], uj_error(ctx));
    CHECK(ok && !memcmp(got.f[0], want.f[0], sizeof got.f[0]), "%s (%s): the list differs from the evaluator", what,
          kinds[t][0]);
  }
}

/* Online softmax regroups the sums: the GPU's list and the CPU's keep one
 * order (float32 transcendentals are polynomials on both), so they agree
 * bit for bit; the CPU's is checked against the evaluator's bounds by
 * test_online. */
static void gpu_vs_cpu(Ctx *ctx, const char *what, const char *text) {
  const UOp *k = parse(ctx, text);
  if (!k) return;
  static Bufs cpu, gpu;
  fill(&cpu), fill(&gpu);
  CHECK(run_list(ctx, k, "cpu", NULL, &cpu), "%s: cpu list: %s", what, uj_error(ctx));
  CHECK(run_list(ctx, k, "nvptx", "sm_90", &gpu), "%s: nvptx list: %s", what, uj_error(ctx));
  CHECK(!memcmp(cpu.f[0], gpu.f[0], sizeof cpu.f[0]), "%s: the nvptx list differs from the CPU's", what);
}

static const char *elementwise =
    "%i = (RANGE global 0 (CONST:int32 37))\n"
    "%j = (RANGE global 1 (CONST:int32 19))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 19)) %j) (CMPLT %j (CONST:int32 15))) "
    "(CONST:float32 -1.0))\n"
    "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int32 19)) %j)) "
    "(MAX (SQRT %x) (MUL %x %x))))))";

/* Rows reduced with an unrolled inner RANGE of 4 inside a loop over 9. */
static const char *unrolled_rows =
    "%i = (RANGE global 0 (CONST:int32 23))\n"
    "%k = (RANGE reduce 1 (CONST:int32 9))\n"
    "%u = (RANGE unroll 2 (CONST:int32 4))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 36)) (ADD (MUL %k (CONST:int32 4)) %u))))\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (ADD (REDUCE ADD %x %k %u) (REDUCE MAX %x %k %u)))))";

/* A REDUCE over a lone `unroll` RANGE: its copies have no loop around
 * them, the first adds to the identity. */
static const char *lone_unroll =
    "%i = (RANGE loop 0 (CONST:int32 11))\n"
    "%u = (RANGE unroll 1 (CONST:int32 5))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 5)) %u)))\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE MUL %x %u))))";

static const char *softmax_rows =
    "%i = (RANGE global 0 (CONST:int32 6))\n"
    "%j = (RANGE reduce 1 (CONST:int32 41))\n"
    "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 41)) %j)))\n"
    "%m = (REDUCE MAX %x %j)\n"
    "%e = (EXP2 (MUL (SUB %x %m) (CONST:float32 1.442695)))\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (FDIV (REDUCE ADD (MUL %e %x) %j) (REDUCE ADD %e %j)))))";

/* The list's shape: one loop per RANGE of the rows' group (the two REDUCEs
 * share it, each with its own PHI and ACCs: 4 copies of the step), a
 * grid LOOP on the GPU, and the CPU's part bounds. */
static void shape(Ctx *ctx) {
  const UOp *k = parse(ctx, unrolled_rows);
  if (!k) return;
  Linear l;
  const char *kinds[2] = {"cpu", "nvptx"};
  for (int t = 0; t < 2; t++) {
    if (!pipeline_listing(ctx, k, kinds[t], NULL, &l)) {
      CHECK(false, "listing %s: %s", kinds[t], uj_error(ctx));
      continue;
    }
    int loops = 0, ends = 0, phis = 0, accs = 0, grid = 0;
    for (size_t i = 0; i < l.n; i++) {
      LinKind kind = (LinKind)l.items[i].kind;
      loops += kind == LIN_LOOP, ends += kind == LIN_ENDLOOP, phis += kind == LIN_PHI, accs += kind == LIN_ACC;
      grid += kind == LIN_LOOP && (l.items[i].flags & LIN_GRID);
    }
    CHECK(loops == 2 && ends == 2, "%s: %d LOOPs, %d ENDLOOPs (2 each)", kinds[t], loops, ends);
    CHECK(phis == 2 && accs == 8, "%s: %d PHIs (2), %d ACCs (2 x 4 copies = 8)", kinds[t], phis, accs);
    CHECK(grid == 1, "%s: %d grid LOOPs (1: the END's)", kinds[t], grid);
    CHECK((l.part != NULL) == (t == 0), "%s: part split %s", kinds[t], l.part ? "made" : "not made");
    char *text = linear_print(ctx, &l); /* uopjit --emit=list */
    CHECK(text && strstr(text, "= PHI ADD:float32 in %") && strstr(text, "= PHI MAX:float32 in %") &&
              strstr(text, "= ACC MAX:float32 %") && strstr(text, "\n  ENDLOOP %") &&
              (t == 0) == (strstr(text, " from %") != NULL && strstr(text, "_nparts") != NULL),
          "%s: the list's text:\n%s", kinds[t], text ? text : uj_error(ctx));
    free(text);
    linear_free(&l);
  }
}

/* A workgroup's BARRIER is refused by eval_linear (one thread's list);
 * out-of-bounds, a missing buffer and a missing variable are errors. */
static void errors(Ctx *ctx) {
  const UOp *k = parse(ctx, row_sum_text(-1));
  static Bufs b;
  fill(&b);
  CHECK(k && !run_list(ctx, k, "nvptx", "sm_90", &b) && strstr(uj_error(ctx), "a BARRIER in a workgroup"),
        "workgroup BARRIER: %s", uj_error(ctx));

  k = parse(ctx, "%i = (RANGE loop 0 (CONST:int32 9))\n"
                 "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (CONST:float32 1.0))))");
  Linear l;
  if (k && pipeline_listing(ctx, k, "cpu", NULL, &l)) {
    float small[8];
    void *params[1] = {small};
    size_t bytes[1] = {sizeof small};
    LinearArgs a = {params, bytes, 1, NULL, NULL, 0, 0, 1};
    CHECK(!eval_linear(ctx, &l, &a) && strstr(uj_error(ctx), "STORE") &&
              strstr(uj_error(ctx), "element 8 is out of bounds [0, 8)"),
          "out of bounds: %s", uj_error(ctx));
    a.nparams = 0;
    CHECK(!eval_linear(ctx, &l, &a) && strstr(uj_error(ctx), "PARAM 0 has no buffer"), "no buffer: %s", uj_error(ctx));
    linear_free(&l);
  }

  k = parse(ctx, "%n = (DEFINE_VAR:int32 n 0 100)\n%i = (RANGE loop 0 %n)\n"
                 "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (CONST:float32 1.0))))");
  if (k && pipeline_listing(ctx, k, "cpu", NULL, &l)) {
    float out[8] = {0};
    void *params[1] = {out};
    size_t bytes[1] = {sizeof out};
    const char *names[1] = {"n"};
    int64_t values[1] = {5};
    LinearArgs a = {params, bytes, 1, NULL, NULL, 0, 0, 1};
    CHECK(!eval_linear(ctx, &l, &a) && strstr(uj_error(ctx), "a variable with no value"), "no var: %s", uj_error(ctx));
    a.names = names, a.values = values, a.nvars = 1;
    CHECK(eval_linear(ctx, &l, &a) && out[4] == 1.0f && out[5] == 0.0f, "n = 5: %s", uj_error(ctx));
    linear_free(&l);
  }
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  gpu_vs_graph(ctx, "elementwise", elementwise);
  gpu_vs_graph(ctx, "unrolled rows", unrolled_rows);
  gpu_vs_graph(ctx, "lone unroll", lone_unroll);
  gpu_vs_cpu(ctx, "softmax rows (online)", softmax_rows);
  shape(ctx);
  errors(ctx);
  /* the lone unroll through the JIT as well (jit_util: its list too) */
  const UOp *k = parse(ctx, lone_unroll);
  if (k) {
    JitBuffers b = {.n = 2, .dtype = {dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32)}, .count = {11, 55}};
    static float in[55], out[11];
    for (int i = 0; i < 55; i++) in[i] = 0.5f + 0.01f * (float)i;
    b.init[0] = (unsigned char *)out, b.init[1] = (unsigned char *)in;
    jit_vs_eval(ctx, k, &b, NULL, NULL, 0, 0, "lone unroll");
  }
  /* wide vectors: a float32x128 REDUCE over a lone unroll (its identity in
   * every lane, no loop around), a VECTORIZE of 300 lanes */
  const UOp *wide = parse(ctx, "%u = (RANGE unroll 0 (CONST:int32 2))\n"
                               "(SINK (STORE (INDEX (PARAM:float32x128* 0) (CONST:int32 0))"
                               " (REDUCE ADD (LOAD (INDEX (PARAM:float32x128* 1) %u)) %u)))");
  if (wide) {
    DType v = {UJ_FLOAT32, UJ_AS_NONE, 128};
    static float in[256], out[128];
    for (int i = 0; i < 256; i++) in[i] = 0.25f * (float)i - 3.0f;
    JitBuffers b = {.n = 2, .dtype = {v, v}, .count = {1, 2}};
    b.init[0] = (unsigned char *)out, b.init[1] = (unsigned char *)in;
    jit_vs_eval(ctx, wide, &b, NULL, NULL, 0, 0, "float32x128 over a lone unroll");
  }
  char *text = malloc(64 * 300 + 256);
  if (text) {
    size_t n = (size_t)sprintf(text, "(SINK (STORE (INDEX (PARAM:float32x300* 0) (CONST:int32 0)) (VECTORIZE");
    for (int i = 0; i < 300; i++) n += (size_t)sprintf(text + n, " (LOAD (INDEX (PARAM:float32* 1) (CONST:int32 %d)))", 299 - i);
    sprintf(text + n, ")))");
    const UOp *vz = parse(ctx, text);
    free(text);
    DType v = {UJ_FLOAT32, UJ_AS_NONE, 300};
    static float in[300], out[300];
    for (int i = 0; i < 300; i++) in[i] = (float)i;
    JitBuffers b = {.n = 2, .dtype = {v, dt_scalar(UJ_FLOAT32)}, .count = {1, 300}};
    b.init[0] = (unsigned char *)out, b.init[1] = (unsigned char *)in;
    if (vz) jit_vs_eval(ctx, vz, &b, NULL, NULL, 0, 0, "a VECTORIZE of 300 lanes");
  }
  uj_ctx_free(ctx);
  return check_report("test_linear");
}
