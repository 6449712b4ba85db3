/* bench_core.c — how fast the core is: interning and simplification.
 *
 * Not a test: it times three things and prints a markdown table (what
 * bench/run.sh pastes into the README):
 *   1. interning 2M new nodes (1M CONSTs, 1M ADDs of them);
 *   2. interning the same 2M again: every one must come back as the same
 *      pointer (the hit rate is printed; anything under 100 % is a bug);
 *   3. uj_simplify on one ~1M-node integer graph, a chain of index-like
 *      expressions with simplifiable pieces ((x*4+y)//4, x+0, (x+y)-y, ...);
 *   4. a session running one small step 20,000 times (new data assigned
 *      into x, softmax(x @ w * 0.5 + b) read back): the time a step takes
 *      over 1,000 steps after a warm-up of 100 and over the last 1,000, and the nodes its context holds
 *      (collected: docs/schedule.md "Cost"), which must not grow.
 * Usage: bench_core [NODES]   (default 2000000; the graph is NODES/2) */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "uop/uop.h"
#include "uopjit/tensor.h"
#include "uopjit/uopjit.h"

typedef struct Row {
  const char *what;
  size_t nodes;
  double seconds;
  char note[96];
} Row;



static const uj_uop *binary(uj_ctx *ctx, uj_op op, const uj_uop *a, const uj_uop *b) {
  const uj_uop *src[2] = {a, b};
  return uj_uop_new(ctx, op, uj_uop_dtype(a), src, 2, (uj_arg){0});
}

/* ---- 1 and 2: interning ---- */

/* Interns n nodes into out (n/2 CONSTs, then n/2 ADDs of pairs of them). */
static void intern_nodes(uj_ctx *ctx, const uj_uop **out, size_t n) {
  uj_dtype i64 = uj_dtype_scalar(UJ_INT64);
  size_t half = n / 2;
  for (size_t i = 0; i < half; i++) out[i] = uj_const_int(ctx, i64, (int64_t)i);
  for (size_t i = half; i < n; i++)
    out[i] = binary(ctx, UJ_OP_ADD, out[i - half], out[(i * 7919) % half]);
}

static void bench_intern(size_t n, Row *fresh, Row *again) {
  uj_ctx *ctx = uj_ctx_new();
  const uj_uop **first = malloc(n * sizeof *first), **second = malloc(n * sizeof *second);
  if (!ctx || !first || !second) abort();
  double t0 = bench_now_ms() / 1e3;
  intern_nodes(ctx, first, n);
  double t1 = bench_now_ms() / 1e3;
  size_t before = uj_ctx_node_count(ctx);
  intern_nodes(ctx, second, n);
  double t2 = bench_now_ms() / 1e3;
  size_t hits = 0;
  for (size_t i = 0; i < n; i++) hits += first[i] && first[i] == second[i];
  *fresh = (Row){"intern, new nodes", n, t1 - t0, ""};
  snprintf(fresh->note, sizeof fresh->note, "%zu nodes in the context", before);
  *again = (Row){"intern, same nodes again", n, t2 - t1, ""};
  snprintf(again->note, sizeof again->note, "hit rate %.1f %%, %zu new nodes",
           100.0 * (double)hits / (double)n, uj_ctx_node_count(ctx) - before);
  free(first);
  free(second);
  uj_ctx_free(ctx);
}

/* ---- 3: simplification ---- */

typedef struct Gen {
  uj_ctx *ctx;
  uint64_t rng;
  const uj_uop *vars[8]; /* x0..x7 in [0, 3] */
  const uj_uop **pool;   /* earlier links of the chain */
  size_t npool;
} Gen;

static const uj_uop *gen_const(Gen *g, int64_t v) {
  return uj_const_int(g->ctx, uj_dtype_scalar(UJ_INT32), v);
}

static const uj_uop *gen_pick(Gen *g) { return g->pool[rng_next(&g->rng) % g->npool]; }

/* p*4 + v: a flat index of row p and column v. */
static const uj_uop *gen_flat(Gen *g, const uj_uop *p, const uj_uop *v) {
  return binary(g->ctx, UJ_OP_ADD, binary(g->ctx, UJ_OP_MUL, p, gen_const(g, 4)), v);
}

/* One link of the chain: an expression of the previous link p (so the
 * whole chain stays under the root) that keeps values small and often has
 * something to simplify. */
static const uj_uop *gen_link(Gen *g, const uj_uop *p) {
  uj_ctx *c = g->ctx;
  const uj_uop *v = g->vars[rng_next(&g->rng) % 8], *q = gen_pick(g);
  switch (rng_next(&g->rng) % 8) {
  case 0: return binary(c, UJ_OP_IDIV, gen_flat(g, p, v), gen_const(g, 4)); /* (p*4+v)//4 -> p */
  case 1: /* (p*4+v)%4 + p -> v+p */
    return binary(c, UJ_OP_ADD, binary(c, UJ_OP_MOD, gen_flat(g, p, v), gen_const(g, 4)), p);
  case 2: return binary(c, UJ_OP_ADD, p, gen_const(g, 0));            /* p+0 -> p */
  case 3: return binary(c, UJ_OP_MUL, gen_const(g, 1), p);            /* 1*p -> p */
  case 4: return binary(c, UJ_OP_SUB, binary(c, UJ_OP_ADD, p, q), q); /* (p+q)-q -> p */
  case 5: return binary(c, UJ_OP_MOD, binary(c, UJ_OP_ADD, p, q), gen_const(g, 4096));
  case 6: return binary(c, UJ_OP_MAX, p, v);
  default:
    return binary(c, UJ_OP_MOD, binary(c, UJ_OP_MUL, p, gen_const(g, 3)), gen_const(g, 4093));
  }
}

/* A chain of links until the context holds about `target` nodes. */
static const uj_uop *gen_graph(Gen *g, size_t target) {
  uj_dtype i32 = uj_dtype_scalar(UJ_INT32);
  for (int i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    g->vars[i] = uj_var(g->ctx, i32, name, 0, 3);
  }
  const uj_uop *p = g->vars[0];
  g->pool[g->npool++] = p;
  while (uj_ctx_node_count(g->ctx) < target && p) {
    p = gen_link(g, p);
    g->pool[g->npool++] = p;
  }
  return p;
}

static void bench_simplify(size_t target, Row *row) {
  Gen g = {
      .ctx = uj_ctx_new(), .rng = 0x9E3779B97F4A7C15u, .pool = malloc(target * sizeof(void *))};
  if (!g.ctx || !g.pool) abort();
  const uj_uop *root = gen_graph(&g, target);
  if (!root) {
    fprintf(stderr, "bench_core: building the graph failed: %s\n", uj_error(g.ctx));
    exit(1);
  }
  size_t in = uop_graph_size(g.ctx, root);
  double t0 = bench_now_ms() / 1e3;
  const uj_uop *out = uj_simplify(g.ctx, root);
  double t1 = bench_now_ms() / 1e3;
  *row = (Row){"simplify, one graph", in, t1 - t0, ""};
  if (out)
    snprintf(row->note, sizeof row->note, "%zu nodes -> %zu", in, uop_graph_size(g.ctx, out));
  else snprintf(row->note, sizeof row->note, "failed: %.80s", uj_error(g.ctx));
  free(g.pool);
  uj_ctx_free(g.ctx);
}

/* ---- 4: a long session ---- */

enum { LOOP_N = 16, LOOP_STEPS = 20000, LOOP_WARMUP = 100, LOOP_WINDOW = 1000 };

static bool loop_step(uj_session *s, uj_tensor *x, uj_tensor *w, uj_tensor *b, int k) {
  float data[LOOP_N * LOOP_N], out[LOOP_N * LOOP_N];
  for (int i = 0; i < LOOP_N * LOOP_N; i++) data[i] = (float)((i * 7 + k * 13) % 23) / 23.0f - 0.5f;
  int64_t shape[2] = {LOOP_N, LOOP_N};
  uj_tensor *in = uj_tensor_from_data(s, UJ_FLOAT32, shape, 2, data);
  bool ok = in && uj_tensor_assign(x, in) == UJ_OK;
  uj_tensor *xw = ok ? uj_tensor_matmul(x, w) : NULL, *sc = uj_tensor_binary_scalar(UJ_BIN_MUL, xw, 0.5, false);
  uj_tensor *z = uj_tensor_binary(UJ_BIN_ADD, sc, b), *y = uj_tensor_softmax(z, 1);
  ok = y && uj_tensor_to_host(y, out, sizeof out) == UJ_OK;
  uj_tensor *ts[] = {in, xw, sc, z, y};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) uj_tensor_free(ts[i]);
  return ok;
}

static void bench_session_loop(void) {
  const char *err = NULL;
  uj_session *s = uj_session_new("CPU", &err);
  int64_t shape[2] = {LOOP_N, LOOP_N}, row[2] = {1, LOOP_N};
  uj_tensor *x = s ? uj_tensor_zeros(s, UJ_FLOAT32, shape, 2) : NULL, *w = s ? uj_tensor_randn(s, shape, 2, 1) : NULL;
  uj_tensor *b = s ? uj_tensor_randn(s, row, 2, 2) : NULL;
  if (!x || !w || !b) {
    fprintf(stderr, "bench_core: session: %s\n", s ? uj_session_error(s) : err);
    exit(1);
  }
  double first = 0, last = 0, t = bench_now_ms();
  size_t peak = 0;
  for (int k = 0; k < LOOP_STEPS; k++) {
    if (!loop_step(s, x, w, b, k)) {
      fprintf(stderr, "bench_core: step %d: %s\n", k, uj_session_error(s));
      exit(1);
    }
    size_t nodes = uj_ctx_node_count(uj_session_ctx(s));
    if (nodes > peak) peak = nodes;
    if (k == LOOP_WARMUP - 1) t = bench_now_ms(); /* compiling is behind */
    if (k == LOOP_WARMUP + LOOP_WINDOW - 1) first = bench_now_ms() - t;
    if (k == LOOP_STEPS - LOOP_WINDOW - 1) t = bench_now_ms();
  }
  last = bench_now_ms() - t;
  printf("\n| session loop | steps | steps %d-%d | last %d | peak nodes | nodes at the end |\n", LOOP_WARMUP + 1, LOOP_WARMUP + LOOP_WINDOW, LOOP_WINDOW);
  printf("|---|---:|---:|---:|---:|---:|\n");
  printf("| assign x, softmax(x @ w * 0.5 + b), 16x16 | %d | %.0f us/step | %.0f us/step | %zu | %zu |\n", LOOP_STEPS,
         first * 1e3 / LOOP_WINDOW, last * 1e3 / LOOP_WINDOW, peak, uj_ctx_node_count(uj_session_ctx(s)));
  uj_tensor_free(x), uj_tensor_free(w), uj_tensor_free(b);
  uj_session_free(s);
}

static void print_table(const Row *rows, size_t n) {
  printf("| benchmark | nodes | time | nodes/s | note |\n");
  printf("|---|---:|---:|---:|---|\n");
  for (size_t i = 0; i < n; i++) {
    const Row *r = &rows[i];
    printf("| %s | %zu | %.0f ms | %.2f M | %s |\n", r->what, r->nodes, r->seconds * 1e3,
           (double)r->nodes / r->seconds * 1e-6, r->note);
  }
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
  if (n < 16) n = 16;
  Row rows[3];
  bench_intern(n, &rows[0], &rows[1]);
  bench_simplify(n / 2, &rows[2]);
  print_table(rows, 3);
  bench_session_loop();
  return 0;
}
