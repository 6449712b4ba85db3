/* test_property.c — random integer expression graphs against the simplifier.
 *
 * In: thousands of random DAGs over variables of several int dtypes (every
 * integer ALU op, casts, compares under WHERE, shared subexpressions, edge
 * constants). Out: for each, the simplified graph must evaluate to the same
 * value as the original at random points of the variables' ranges, and must
 * not have more nodes; for the first PROVED graphs, z3 must not find a
 * point where the two differ, and proves most equal everywhere (prove.h;
 * the count is printed). A failure prints the seed and both graphs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prove.h"
#include "symbolic/symbolic.h"
#include "uop/eval.h"
#include "uop/text.h"

/* PROVED: how many of the graphs (the first ones) z3 must also prove
 * (prove.h): a proof costs ~10 ms, a query z3 gives up on, whole and in
 * pieces, ~0.5 s (400: ~45 s). Under the sanitizers z3 (not
 * instrumented, but its every allocation through ASan's) runs ~4x slower
 * and proves the same queries the same way (its limit counts work, not
 * time): 100 there. */
#ifdef UJ_SANITIZE
enum { PROVED = 100 };
#else
enum { PROVED = 400 };
#endif
enum { GRAPHS = 4000, POINTS = 24, NVARS = 6, POOL = 64 };

typedef struct Gen {
  Ctx *ctx;
  uint64_t rng;
  const UOp *vars[NVARS];
  const UOp *pool[POOL]; /* earlier subexpressions, for sharing */
  int npool;
} Gen;

static const struct { const char *name; uj_scalar dt; int64_t lo, hi; } var_specs[NVARS] = {
  {"a", UJ_INT32, 0, 15},   {"b", UJ_INT32, -20, 20}, {"c", UJ_INT32, 0, 1000},
  {"d", UJ_UINT32, 0, 300}, {"e", UJ_INT8, -100, 100}, {"f", UJ_INT64, -5000000000, 5000000000},
};

static const int64_t edge_consts[] = {0, 1, -1, 2, 3, 4, 5, 7, 8, 16, 100, 255, 1024, -128, 65536,
                                      2147483647, -2147483647 - 1};

static uint64_t rnd(Gen *g) {
  g->rng ^= g->rng << 13, g->rng ^= g->rng >> 7, g->rng ^= g->rng << 17;
  return g->rng;
}

static int pick(Gen *g, int n) { return (int)(rnd(g) % (uint64_t)n); }

static uj_scalar random_int_dtype(Gen *g) {
  static const uj_scalar dts[] = {UJ_INT32, UJ_INT32, UJ_INT32, UJ_UINT32, UJ_INT8, UJ_INT64};
  return dts[pick(g, 6)];
}

static const UOp *gen(Gen *g, uj_scalar dt, int depth);

static const UOp *gen_leaf(Gen *g, uj_scalar dt) {
  for (int i = 0; i < NVARS && pick(g, 2); i++) {
    int v = pick(g, NVARS);
    if (var_specs[v].dt == dt) return g->vars[v];
  }
  for (int i = 0; i < NVARS; i++)
    if (var_specs[i].dt == dt && pick(g, 2)) return g->vars[i];
  int64_t c = edge_consts[pick(g, sizeof edge_consts / sizeof *edge_consts)];
  return uop_const_int(g->ctx, dt_scalar(dt), c);
}

static const UOp *gen_bool(Gen *g, int depth) {
  static const Op cmps[] = {UJ_OP_CMPLT, UJ_OP_CMPNE, UJ_OP_CMPEQ};
  uj_scalar dt = random_int_dtype(g);
  return uop_binary(g->ctx, cmps[pick(g, 3)], gen(g, dt, depth - 1), gen(g, dt, depth - 1));
}

static const UOp *gen_node(Gen *g, uj_scalar dt, int depth) {
  static const Op binops[] = {UJ_OP_ADD, UJ_OP_ADD, UJ_OP_SUB, UJ_OP_MUL, UJ_OP_MUL, UJ_OP_IDIV,
                              UJ_OP_IDIV, UJ_OP_MOD, UJ_OP_MOD, UJ_OP_MAX, UJ_OP_AND, UJ_OP_OR,
                              UJ_OP_XOR, UJ_OP_SHL, UJ_OP_SHR};
  Ctx *ctx = g->ctx;
  int kind = pick(g, 20);
  if (kind < 14) {
    Op op = binops[pick(g, sizeof binops / sizeof *binops)];
    const UOp *b = (op == UJ_OP_IDIV || op == UJ_OP_MOD) && pick(g, 3) ? gen_leaf(g, dt) : gen(g, dt, depth - 1);
    return uop_binary(ctx, op, gen(g, dt, depth - 1), b);
  }
  if (kind < 15) return uop_unary(ctx, UJ_OP_NEG, gen(g, dt, depth - 1));
  if (kind < 17) {
    const UOp *src = gen(g, random_int_dtype(g), depth - 1);
    return uop_new(ctx, UJ_OP_CAST, dt_scalar(dt), &src, 1, arg_none());
  }
  if (kind < 18) return uop_ternary(ctx, UJ_OP_MULACC, gen(g, dt, depth - 1), gen_leaf(g, dt), gen(g, dt, depth - 1));
  return uop_ternary(ctx, UJ_OP_WHERE, gen_bool(g, depth), gen(g, dt, depth - 1), gen(g, dt, depth - 1));
}

static const UOp *gen(Gen *g, uj_scalar dt, int depth) {
  if (g->npool && pick(g, 8) == 0) {
    const UOp *u = g->pool[pick(g, g->npool)];
    if (u->dtype.scalar == dt) return u;
  }
  if (depth <= 0 || pick(g, 6) == 0) return gen_leaf(g, dt);
  const UOp *u = gen_node(g, dt, depth);
  if (g->npool < POOL) g->pool[g->npool++] = u;
  else g->pool[pick(g, POOL)] = u;
  return u;
}

static void report(Ctx *ctx, uint64_t seed, const UOp *a, const UOp *b, const char *what) {
  char *ta = text_print(ctx, a), *tb = b ? text_print(ctx, b) : NULL;
  fprintf(stderr, "seed %llu: %s\noriginal:\n%s\nsimplified:\n%s\n", (unsigned long long)seed, what,
          ta, tb ? tb : "(none)");
  free(ta);
  free(tb);
}

static bool same_values(Gen *g, const UOp *a, const UOp *b) {
  const char *names[NVARS];
  int64_t values[NVARS];
  for (int i = 0; i < NVARS; i++) names[i] = var_specs[i].name;
  for (int p = 0; p < POINTS; p++) {
    for (int i = 0; i < NVARS; i++) {
      uint64_t span = (uint64_t)(var_specs[i].hi - var_specs[i].lo) + 1;
      values[i] = p == 0 ? var_specs[i].lo : p == 1 ? var_specs[i].hi
                         : var_specs[i].lo + (int64_t)(rnd(g) % span);
    }
    uint64_t wa = 0, wb = 0;
    if (!eval_expr(g->ctx, a, names, values, NVARS, &wa) || !eval_expr(g->ctx, b, names, values, NVARS, &wb))
      return false;
    if (wa != wb) return false;
  }
  return true;
}

static ProveStats proofs;

static void run_graph(uint64_t seed, bool prove) {
  Gen g = {.ctx = uj_ctx_new(), .rng = seed * 0x9e3779b97f4a7c15ull + 1};
  for (int i = 0; i < NVARS; i++)
    g.vars[i] = uj_var(g.ctx, dt_scalar(var_specs[i].dt), var_specs[i].name, var_specs[i].lo, var_specs[i].hi);
  const UOp *a = gen(&g, random_int_dtype(&g), 2 + pick(&g, 5));
  const UOp *b = symbolic_simplify(g.ctx, a);
  CHECK(b != NULL, "seed %llu: simplify failed: %s", (unsigned long long)seed, uj_error(g.ctx));
  if (b) {
    CHECK(uj_check(g.ctx, b) == UJ_OK, "seed %llu: ill-formed result: %s", (unsigned long long)seed,
          uj_error(g.ctx));
    bool smaller = uop_graph_size(g.ctx, b) <= uop_graph_size(g.ctx, a);
    CHECK(smaller, "seed %llu: graph grew", (unsigned long long)seed);
    bool same = same_values(&g, a, b);
    CHECK(same, "seed %llu: values differ", (unsigned long long)seed);
    if (!smaller || !same) report(g.ctx, seed, a, b, smaller ? "values differ" : "graph grew");
    char why[512];
    ProveVerdict v = same && prove ? prove_same(g.ctx, a, b, PROVE_RLIMIT_RANDOM, &proofs, why, sizeof why) : PROVE_SAME;
    CHECK(v != PROVE_DIFFERENT && v != PROVE_MISMATCH, "seed %llu: %s %s", (unsigned long long)seed,
          v == PROVE_DIFFERENT ? "not equal" : "z3 and the evaluator disagree (prove.c's encoding)", why);
    if (v == PROVE_DIFFERENT || v == PROVE_MISMATCH) report(g.ctx, seed, a, b, "disproved");
    const UOp *again = symbolic_simplify(g.ctx, b); /* may find more: sharing changed */
    CHECK(again && uop_graph_size(g.ctx, again) <= uop_graph_size(g.ctx, b) && same_values(&g, b, again),
          "seed %llu: simplifying twice broke the graph", (unsigned long long)seed);
  }
  uj_ctx_free(g.ctx);
}

/* UJ_PROPERTY_GRAPHS=N runs N graphs instead (for a longer fuzzing run),
 * UJ_PROPERTY_PROVED=N proves the first N. */
int main(void) {
  const char *env = getenv("UJ_PROPERTY_GRAPHS"), *proved = getenv("UJ_PROPERTY_PROVED");
  uint64_t graphs = env ? strtoull(env, NULL, 10) : GRAPHS, to_prove = proved ? strtoull(proved, NULL, 10) : PROVED;
  for (uint64_t seed = 1; seed <= graphs; seed++) run_graph(seed, seed <= to_prove);
  prove_report("test_property", &proofs);
  return check_report("test_property");
}
