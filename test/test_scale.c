/* test_scale.c — scheduling and compilation cost what the graph holds
 * (issue 17, docs/schedule.md "Cost"), checked without a clock.
 *
 * The measure is the context's `work` (uop.h): the nodes walks visit and
 * the side-table slots they make. Each family is built at two sizes, n and
 * 2n; its work must grow at most 2.5 times (linear: 2; quadratic: 4).
 * Families: a small walk inside a big context (must cost what it visits:
 * the engine's walks, and a small kernel through the compiler's stages),
 * a session of n realize steps (each step's work flat), and the optimized
 * LLVM IR of a kernel reading n buffers (its alias metadata linear: here
 * the measure is the IR's size). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rewrite/rewrite.h"
#include "symbolic/symbolic.h"
#include "tensor/tensor_impl.h"
#include "uop/text.h"

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

static void test_session_steps(void) {
  size_t a = session_work(300), b = session_work(600);
  CHECK(linear(a, b), "a session of n steps: work %zu at 300, %zu at 600", a, b);
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

int main(void) {
  test_walk_in_big_context();
  test_session_steps();
  test_many_inputs_ir();
  return check_report("test_scale");
}
