/* test_rewrite.c — the pattern compiler, the matcher and graph_rewrite.
 *
 * In: small rule sets written here, and deep or heavily shared graphs.
 * Out: checks that patterns compile or fail with a message, that matching
 * honours ops, dtype classes, values, bindings, '~' and '...', and that
 * graph_rewrite reaches the fixpoint on a million-deep chain, stays linear
 * on exponentially many paths, and reports rules that cycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rewrite/rewrite.h"
#include "symbolic/symbolic.h"
#include "uop/text.h"

static const UOp *rw_x(Rewriter *rw, const UOp *root, const Binds *m) { return m->x; }
static const UOp *rw_y(Rewriter *rw, const UOp *root, const Binds *m) { return m->y; }
static const UOp *rw_decline(Rewriter *rw, const UOp *root, const Binds *m) { return NULL; }

/* a -> b and b -> a: never converges */
static const UOp *rw_swap(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_binary(rw->ctx, (Op)root->op, m->y, m->x);
}

static DType i32(void) { return dt_scalar(UJ_INT32); }

static const UOp *var(Ctx *ctx, const char *name) {
  return uop_new(ctx, UJ_OP_DEFINE_VAR, i32(), NULL, 0, (Arg){name, (int64_t[]){0, 100}, 2});
}

static const UOp *apply_one(Ctx *ctx, const char *pattern, RuleFn fn, const UOp *u) {
  Rule rule = {pattern, fn};
  RuleSet *rs = ruleset_new(ctx, &rule, 1);
  CHECK(rs != NULL, "pattern %s: %s", pattern, uj_error(ctx));
  if (!rs) return NULL;
  Rewriter rw = {ctx, rs, NULL, NULL};
  const UOp *out = ruleset_apply(&rw, u);
  ruleset_free(rs);
  return out;
}

static void test_bad_patterns(Ctx *ctx) {
  static const char *bad[] = {"(ADDD x y)", "(ADD x y", "(ADD:flot x y)", "ADD x", "(ADD x y) z",
                              "(ADD (CONST 1x) y)", "(ADD a b c d e f g h i)"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    Rule rule = {bad[i], rw_x};
    RuleSet *rs = ruleset_new(ctx, &rule, 1);
    CHECK(rs == NULL, "pattern %s compiled", bad[i]);
    CHECK(strstr(uj_error(ctx), bad[i]) != NULL, "message does not quote the pattern: %s", uj_error(ctx));
    ruleset_free(rs);
  }
}

static void test_matching(Ctx *ctx) {
  const UOp *x = var(ctx, "x"), *y = var(ctx, "y"), *zero = uop_const_int(ctx, i32(), 0);
  const UOp *x_plus_0 = uop_binary(ctx, UJ_OP_ADD, x, zero), *zero_plus_x = uop_binary(ctx, UJ_OP_ADD, zero, x);
  CHECK(apply_one(ctx, "(ADD x (CONST 0))", rw_x, x_plus_0) == x, "value match");
  CHECK(apply_one(ctx, "(ADD x (CONST 1))", rw_x, x_plus_0) == x_plus_0, "value mismatch must not match");
  CHECK(apply_one(ctx, "(ADD x (CONST 0))", rw_x, zero_plus_x) == zero_plus_x, "order without '~'");
  CHECK(apply_one(ctx, "(ADD~ x (CONST 0))", rw_x, zero_plus_x) == x, "'~' tries the swap");
  CHECK(apply_one(ctx, "(MUL|ADD x (CONST 0))", rw_x, x_plus_0) == x, "op set");
  CHECK(apply_one(ctx, "(ADD:float x (CONST 0))", rw_x, x_plus_0) == x_plus_0, "dtype class");
  CHECK(apply_one(ctx, "(ADD:int32 x (CONST 0))", rw_x, x_plus_0) == x, "exact dtype");
  CHECK(apply_one(ctx, "(ADD:sint x _)", rw_x, x_plus_0) == x, "'_'");
  const UOp *xx = uop_binary(ctx, UJ_OP_ADD, x, x), *xy = uop_binary(ctx, UJ_OP_ADD, x, y);
  CHECK(apply_one(ctx, "(ADD x x)", rw_x, xx) == x, "same letter, same node");
  CHECK(apply_one(ctx, "(ADD x x)", rw_x, xy) == xy, "same letter, different nodes");
  CHECK(apply_one(ctx, "(ADD x y)", rw_y, xy) == y, "binding y");
  const UOp *sink = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), (const UOp *[]){x, y, xy}, 3, arg_none());
  CHECK(apply_one(ctx, "(SINK x ...)", rw_x, sink) == x, "'...'");
  CHECK(apply_one(ctx, "(SINK x y)", rw_x, sink) == sink, "arity");
  CHECK(apply_one(ctx, "x", rw_x, sink) == sink, "a rule returning its root changes nothing");
  CHECK(apply_one(ctx, "(ADD x y)", rw_decline, xy) == xy, "declined");
  const UOp *m = uop_binary(ctx, UJ_OP_MUL, x, y);
  CHECK(apply_one(ctx, "y=(MUL x _)", rw_y, m) == m, "named root binds the root");
}

/* (((x + 1) + 1) ... + 1), a million deep, simplifies to x + 1000000 */
static void test_deep_chain(Ctx *ctx) {
  enum { DEPTH = 1000000 };
  const UOp *x = var(ctx, "x"), *one = uop_const_int(ctx, i32(), 1), *acc = x;
  for (int i = 0; i < DEPTH; i++) acc = uop_binary(ctx, UJ_OP_ADD, acc, one);
  const UOp *out = symbolic_simplify(ctx, acc);
  const UOp *want = uop_binary(ctx, UJ_OP_ADD, x, uop_const_int(ctx, i32(), DEPTH));
  CHECK(out == want, "deep chain: %s", out ? "wrong result" : uj_error(ctx));
}

/* x0 + x1 + ... + x7 + x0 + ..., 200,000 deep: collects to Σ 25000·xi */
static void test_deep_sum(Ctx *ctx) {
  enum { DEPTH = 200000, VARS = 8 };
  const UOp *vars[VARS], *acc;
  char name[16];
  for (int i = 0; i < VARS; i++) snprintf(name, sizeof name, "v%d", i), vars[i] = var(ctx, name);
  acc = vars[0];
  for (int i = 1; i < DEPTH; i++) acc = uop_binary(ctx, UJ_OP_ADD, acc, vars[i % VARS]);
  const UOp *out = symbolic_simplify(ctx, acc), *c = uop_const_int(ctx, i32(), DEPTH / VARS);
  const UOp *want = uop_binary(ctx, UJ_OP_MUL, vars[0], c);
  for (int i = 1; i < VARS; i++) want = uop_binary(ctx, UJ_OP_ADD, want, uop_binary(ctx, UJ_OP_MUL, vars[i], c));
  CHECK(out == want, "deep sum: %s", out ? "wrong result" : uj_error(ctx));
}

/* y(i+1) = max(y(i), y(i)) ^ x: 2^2000 paths, 2000 nodes; the memo keeps it linear */
static void test_shared_dag(Ctx *ctx) {
  const UOp *x = var(ctx, "x"), *y = x;
  for (int i = 0; i < 2000; i++)
    y = uop_binary(ctx, UJ_OP_XOR, uop_binary(ctx, UJ_OP_MAX, y, y), x);
  const UOp *out = symbolic_simplify(ctx, y);
  CHECK(out != NULL, "shared dag: %s", uj_error(ctx));
  CHECK(out && uop_graph_size(ctx, out) <= 2, "max(y,y) and y^x^x fold: %zu nodes",
        out ? uop_graph_size(ctx, out) : 0);
}

static void test_cycle(Ctx *ctx) {
  Rule rule = {"(ADD x y)", rw_swap};
  RuleSet *rs = ruleset_new(ctx, &rule, 1);
  const UOp *u = uop_binary(ctx, UJ_OP_ADD, var(ctx, "x"), var(ctx, "y"));
  ctx_clear_error(ctx);
  CHECK(graph_rewrite(ctx, u, rs, NULL) == NULL, "cycling rules must fail");
  CHECK(strstr(uj_error(ctx), "cycle") || strstr(uj_error(ctx), "converge"), "message: %s", uj_error(ctx));
  ruleset_free(rs);
}

int main(void) {
  uj_ctx *ctx = uj_ctx_new();
  test_bad_patterns(ctx);
  test_matching(ctx);
  test_cycle(ctx);
  test_shared_dag(ctx);
  test_deep_chain(ctx);
  test_deep_sum(ctx);
  uj_ctx_free(ctx);
  return check_report("test_rewrite");
}
