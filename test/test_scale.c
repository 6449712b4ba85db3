/* test_scale.c — scheduling and compilation cost what the graph holds
 * (issue 17, docs/schedule.md "Cost"), checked without a clock.
 *
 * The measure is the context's `work` (uop.h): the nodes walks visit and
 * the side-table slots they make. Each family is built at two sizes, n and
 * 2n; its work must grow at most 2.5 times (linear: 2; quadratic: 4).
 * Families: a small walk inside a big context (must cost what it visits),
 * a session of n realize steps (each step's work flat), a training loop's
 * session (assignments, frees: the realized-node map collected and
 * forgotten each step), n chained kernels
 * in one schedule (x - max(x), each max cut: the fusion tries), a chain of
 * n ops (cut into kernels of bounded size: LLVM's passes are superlinear
 * in a basic block), the optimized LLVM IR of a kernel reading n buffers
 * (its alias metadata linear), and graphs 100,000 deep through every
 * stage (no recursion over graph depth: the C stack would overflow). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rewrite/rewrite.h"
#include "schedule/schedule.h"
#include "symbolic/symbolic.h"
#include "tensor/tensor_impl.h"
#include "uop/eval.h"
#include "uop/text.h"

static ScheduleTarget cpu = {"CPU", 64, {0}}; /* .opt.desc set in main: cpu-avx2 */

static bool linear(size_t at_n, size_t at_2n) { return at_n > 0 && (double)at_2n <= 2.5 * (double)at_n; }

/* ---- a walk inside a big context ---- */

static const UOp *var(Ctx *ctx, const char *name) {
  return uop_new(ctx, UJ_OP_DEFINE_VAR, dt_scalar(UJ_INT32), NULL, 0, (Arg){name, (int64_t[]){0, 100}, 2});
}

static const UOp *keep(void *user, const UOp *u, const UOp *rebuilt) { return rebuilt; }

/* out[i] = a1[i] + a2[i] + ... + an[i], i < 16: a kernel reading n buffers. */
static const UOp *sum_kernel(Ctx *ctx, size_t n) {
  DType f32 = dt_scalar(UJ_FLOAT32), ptr = uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL), i32 = dt_scalar(UJ_INT32);
  const UOp *bound = uop_const_int(ctx, i32, 16);
  const UOp *r = uop_new(ctx, UJ_OP_RANGE, i32, &bound, 1, (Arg){"loop", (int64_t[]){0}, 1});
  const UOp *acc = NULL;
  for (size_t k = 1; k <= n; k++) {
    const UOp *p = uop_new(ctx, UJ_OP_PARAM, ptr, NULL, 0, (Arg){NULL, (int64_t[]){(int64_t)k}, 1});
    const UOp *at = uop_new(ctx, UJ_OP_INDEX, ptr, (const UOp *[]){p, r}, 2, arg_none());
    const UOp *v = uop_new(ctx, UJ_OP_LOAD, f32, &at, 1, arg_none());
    acc = acc ? uop_binary(ctx, UJ_OP_ADD, acc, v) : v;
  }
  const UOp *out = uop_new(ctx, UJ_OP_PARAM, ptr, NULL, 0, (Arg){NULL, (int64_t[]){0}, 1});
  const UOp *at = uop_new(ctx, UJ_OP_INDEX, ptr, (const UOp *[]){out, r}, 2, arg_none());
  const UOp *st = uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){at, acc}, 2, arg_none());
  const UOp *end = uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){r, st}, 2, arg_none());
  return uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &end, 1, arg_none());
}

/* 300,000 nodes made first; then each walk of a 5-node graph costs what it
 * visits (a table by node id would cost 300,000 each). */
static void test_walk_in_big_context(void) {
  Ctx *ctx = uj_ctx_new();
  for (int64_t i = 0; i < 300000; i++) uop_const_int(ctx, dt_scalar(UJ_INT64), i);
  const UOp *x = var(ctx, "x"), *y = var(ctx, "y");
  const UOp *g = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, x, y), uop_const_int(ctx, dt_scalar(UJ_INT32), 0));
  size_t before = ctx->work;
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, g, &nodes);
  free(nodes);
  CHECK(n == 5 && ctx->work - before < 1000, "toposort of 5 nodes: %zu nodes, work %zu", n, ctx->work - before);
  before = ctx->work;
  const UOp *s = symbolic_simplify(ctx, g);
  CHECK(s == uop_binary(ctx, UJ_OP_MUL, x, y) && ctx->work - before < 1000, "simplify of 5 nodes: work %zu", ctx->work - before);
  before = ctx->work;
  CHECK(graph_substitute(ctx, g, keep, NULL) == g && ctx->work - before < 1000, "substitute: work %zu", ctx->work - before);
  /* a small kernel through the compiler's stages (check, simplify, lower, render) and the printer */
  const UOp *k = sum_kernel(ctx, 2);
  size_t len = 0;
  before = ctx->work;
  char *ir = uj_emit(ctx, k, UJ_EMIT_IR, NULL, &len), *text = text_print(ctx, k);
  CHECK(ir && text && ctx->work - before < 10000, "a kernel of %zu nodes rendered and printed: work %zu %s", uop_graph_size(ctx, k),
        ctx->work - before, uj_error(ctx));
  free(ir), free(text);
  uj_ctx_free(ctx);
}

/* ---- a session of n steps ---- */

/* x = (x * 1.5 + 1).realize(), n times: one kernel, compiled once; the
 * work of the scheduling and of the realized-node map. */
static size_t session_work(size_t steps) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *x = uj_tensor_rand(s, (int64_t[]){16}, 1, 1);
  size_t before = s->ctx->work;
  for (size_t i = 0; x && i < steps; i++) {
    uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 1.5, false), 1, false);
    if (!y || uj_tensor_realize(&y, 1) != UJ_OK) x = NULL;
    else x = y;
  }
  size_t work = x ? s->ctx->work - before : 0;
  CHECK(x != NULL, "session of %zu steps: %s", steps, uj_session_error(s));
  uj_session_free(s);
  return work;
}

/* A training loop's shape: each step a parameter assigned in place (w =
 * w - 0.1 * 2w), a value realized and read, the step's tensors freed: the
 * realized-node map is collected and forgotten through every step. The
 * work of steps [from, from + 100): collections and assignments as well
 * as the scheduling. */
static void training_work(size_t steps, size_t *early, size_t *late) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *w = uj_tensor_rand(s, (int64_t[]){16}, 1, 1);
  bool ok = w != NULL;
  size_t start = 0;
  for (size_t i = 0; ok && i < steps; i++) {
    if (i == 10 || i == steps - 100) start = s->ctx->work;
    uj_tensor *g = uj_tensor_binary_scalar(UJ_BIN_MUL, w, 2, false);
    uj_tensor *loss = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_binary(UJ_BIN_MUL, w, w), NULL, 0, false);
    float l;
    ok = loss && uj_tensor_to_host(loss, &l, sizeof l) == UJ_OK &&
         uj_tensor_assign(w, uj_tensor_binary(UJ_BIN_SUB, w, uj_tensor_binary_scalar(UJ_BIN_MUL, g, 0.1, false))) == UJ_OK;
    uj_tensor_free(g), uj_tensor_free(loss);
    if (i == 109) *early = s->ctx->work - start;
    if (i == steps - 1) *late = s->ctx->work - start;
  }
  CHECK(ok, "training loop of %zu steps: %s", steps, uj_session_error(s));
  uj_session_free(s);
}

static void test_session_steps(void) {
  size_t a = session_work(300), b = session_work(600);
  CHECK(linear(a, b), "a session of n steps: work %zu at 300, %zu at 600", a, b);
  training_work(1000, &a, &b); /* each step's work flat: 100 steps late cost what 100 early did */
  CHECK(a > 0 && (double)b <= 1.5 * (double)a, "a training loop: work %zu in steps 10-109, %zu in steps 900-999", a, b);
}

/* ---- one schedule ---- */

/* The work of scheduling root (no compiling); its kernels in *nitems and
 * the most nodes one of them holds in *biggest. */
static size_t schedule_work(uj_session *s, uj_tensor *t, size_t *nitems, size_t *biggest) {
  int64_t next = 1000000;
  const UOp *root = t ? t->node : NULL;
  size_t before = s->ctx->work;
  Schedule *sch = root ? schedule_make(s->ctx, &root, 1, NULL, NULL, NULL, &next, &cpu, NULL) : NULL;
  size_t work = s->ctx->work - before;
  CHECK(sch != NULL, "schedule: %s", uj_session_error(s));
  *nitems = sch ? sch->nitems : 0, *biggest = 0;
  for (size_t i = 0; sch && i < sch->nitems; i++) {
    size_t size = uop_graph_size(s->ctx, sch->items[i].kernel);
    if (size > *biggest) *biggest = size;
  }
  schedule_free(sch);
  return work;
}

/* x = x - max(x), n times: n kernels, each max cut and tried for fusion. */
static size_t chained_kernels_work(size_t n, size_t *nitems) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *x = uj_tensor_rand(s, (int64_t[]){4, 16}, 2, 1);
  for (size_t i = 0; x && i < n; i++) x = uj_tensor_binary(UJ_BIN_SUB, x, uj_tensor_reduce(UJ_RED_MAX, x, (int[]){1}, 1, true));
  size_t biggest, work = schedule_work(s, x, nitems, &biggest);
  uj_session_free(s);
  return work;
}

static void test_chained_kernels(void) {
  size_t ka, kb, a = chained_kernels_work(150, &ka), b = chained_kernels_work(300, &kb);
  CHECK(linear(a, b), "x - max(x) chained: work %zu at 150 (%zu kernels), %zu at 300 (%zu kernels)", a, ka, b, kb);
}

/* ---- a chain of n ops ---- */

/* x = exp2(x * 0.5 + 1) n times: the chain is cut into kernels of bounded
 * size (docs/schedule.md, "Kernel size"). */
static void test_long_chain(void) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *x = uj_tensor_rand(s, (int64_t[]){64}, 1, 2), *y = x;
  for (int i = 0; y && i < 3000; i++)
    y = uj_tensor_unary(UJ_UN_EXP2, uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, y, 0.5, false), 1, false));
  size_t nitems, biggest;
  schedule_work(s, y, &nitems, &biggest);
  CHECK(nitems > 1 && biggest <= 2 * SCHEDULE_KERNEL_BUDGET, "3000 steps of exp2(x*0.5+1): %zu kernels, the biggest %zu nodes",
        nitems, biggest);
  uj_session_free(s);
}

/* ---- LLVM IR of a kernel reading n buffers ---- */

/* The optimized IR of sum_kernel(n): its size (alias metadata of every
 * load included) grows linearly with n. */
static size_t sum_ir_size(size_t n) {
  Ctx *ctx = uj_ctx_new();
  size_t len = 0;
  char *ir = uj_emit(ctx, sum_kernel(ctx, n), UJ_EMIT_IR_OPT, NULL, &len);
  CHECK(ir != NULL, "sum of %zu buffers: %s", n, uj_error(ctx));
  free(ir);
  uj_ctx_free(ctx);
  return len;
}

static void test_many_inputs_ir(void) {
  size_t a = sum_ir_size(48), b = sum_ir_size(96);
  CHECK(linear(a, b), "optimized IR of a sum of n buffers: %zu bytes at 48, %zu at 96", a, b);
}

/* ---- depth ---- */

enum { DEEP = 50000 };

/* DEEP steps of x * 1.5 + 1 (floats: nothing folds; a chain 100,000 nodes
 * deep) through the tensor API, scheduled (cut into kernels of bounded
 * size) and each kernel rendered; and one kernel as deep, rendered and
 * evaluated. No stage may recurse over a graph's depth: the C stack would
 * overflow. */
static void test_deep_graphs(void) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *x = uj_tensor_rand(s, (int64_t[]){8}, 1, 3);
  for (int i = 0; x && i < DEEP; i++) {
    uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_MUL, x, 1.5, false);
    uj_tensor *z = y ? uj_tensor_binary_scalar(UJ_BIN_ADD, y, 1, false) : NULL;
    if (i > 0) uj_tensor_free(x);
    uj_tensor_free(y);
    x = z;
  }
  int64_t next = 1000000;
  const UOp *root = x ? x->node : NULL;
  Schedule *sch = root ? schedule_make(s->ctx, &root, 1, NULL, NULL, NULL, &next, &cpu, NULL) : NULL;
  CHECK(sch && sch->nitems > 1, "%d steps: %s", DEEP, sch ? "one kernel" : uj_session_error(s));
  for (size_t i = 0; sch && i < sch->nitems; i++) {
    size_t len = 0;
    char *ir = uj_emit(s->ctx, sch->items[i].kernel, UJ_EMIT_IR, NULL, &len);
    CHECK(ir != NULL, "%d steps, kernel %zu rendered: %s", DEEP, i, uj_session_error(s));
    free(ir);
  }
  schedule_free(sch);
  uj_session_free(s);

  Ctx *ctx = uj_ctx_new();
  DType f32 = dt_scalar(UJ_FLOAT32), ptr = uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL), i32 = dt_scalar(UJ_INT32);
  const UOp *bound = uop_const_int(ctx, i32, 4), *c15 = uop_const_word(ctx, f32, 0x3ff8000000000000ull);
  const UOp *one = uop_const_word(ctx, f32, 0x3ff0000000000000ull);
  const UOp *r = uop_new(ctx, UJ_OP_RANGE, i32, &bound, 1, (Arg){"loop", (int64_t[]){0}, 1});
  const UOp *p1 = uop_new(ctx, UJ_OP_PARAM, ptr, NULL, 0, (Arg){NULL, (int64_t[]){1}, 1});
  const UOp *at1 = uop_new(ctx, UJ_OP_INDEX, ptr, (const UOp *[]){p1, r}, 2, arg_none());
  const UOp *v = uop_new(ctx, UJ_OP_LOAD, f32, &at1, 1, arg_none());
  for (int i = 0; i < DEEP; i++) v = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, v, c15), one);
  const UOp *p0 = uop_new(ctx, UJ_OP_PARAM, ptr, NULL, 0, (Arg){NULL, (int64_t[]){0}, 1});
  const UOp *at0 = uop_new(ctx, UJ_OP_INDEX, ptr, (const UOp *[]){p0, r}, 2, arg_none());
  const UOp *st = uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){at0, v}, 2, arg_none());
  const UOp *end = uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){r, st}, 2, arg_none());
  const UOp *k = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &end, 1, arg_none());
  size_t len = 0;
  char *ir = uj_emit(ctx, k, UJ_EMIT_IR, NULL, &len);
  CHECK(ir != NULL, "a kernel %d steps deep, rendered: %s", DEEP, uj_error(ctx));
  free(ir);
  float in[4] = {0, 0, 0, 0}, out[4];
  Eval *ev = eval_new(ctx);
  bool ran = ev && eval_bind_param(ev, 0, out, sizeof out) && eval_bind_param(ev, 1, in, sizeof in) && eval_run(ev, k);
  CHECK(ran && isinf(out[0]), "a kernel %d steps deep, evaluated: %s", DEEP, uj_error(ctx));
  eval_free(ev);
  char *text = text_print(ctx, k);
  CHECK(text != NULL, "printed");
  free(text);
  uj_ctx_free(ctx);
}

int main(void) {
  cpu.opt.desc = target_desc_cpu(32);
  test_walk_in_big_context();
  test_session_steps();
  test_chained_kernels();
  test_long_chain();
  test_many_inputs_ir();
  test_deep_graphs();
  return check_report("test_scale");
}
