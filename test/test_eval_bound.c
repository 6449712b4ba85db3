/* test_eval_bound.c — the evaluator's error bounds (eval_bound.h,
 * docs/semantics.md "Reassociation"): a float sum regrouped in any order
 * (pairwise, 16 lanes, reversed, sorted, shuffled) lands within the bound
 * the evaluator computes with it; the same sum with one term dropped or
 * counted twice does not; exact inputs give 0 through exact ops; bounds
 * flow through memory (PARAMs bound with eval_bind_bounds, an ALLOC) and
 * through every rule's corner: a divisor near 0, a compare or WHERE the
 * error may flip, an overflow another order may avoid, MAX and int sums
 * (any order: the same word). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "uop/alu.h"
#include "uop/eval.h"
#include "uop/eval_bound.h"
#include "uopjit/uopjit.h"

enum { N = 1000 };

static uint64_t fw(double v) { return word_from_double(UJ_FLOAT32, v); }

/* Values whose sums round: a spread of exponents, both signs. */
static void fill(float *x, size_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x[i] = (float)(((double)(s % 2001) / 1000.0 - 1.0) * ldexp(1.0, (int)((s >> 40) % 16) - 6));
  }
}

/* Runs text (slot 0: float32 out[nout], slot 1: float32 in[N]) with bounds. */
static bool run(Ctx *ctx, const char *text, float *out, double *err, size_t nout, float *in, double *in_err) {
  const UOp *k = uj_parse(ctx, text, "bound");
  Eval *ev = eval_new(ctx);
  eval_track_bounds(ev, true);
  bool ok = k && eval_bind_param(ev, 0, out, nout * sizeof *out) && eval_bind_bounds(ev, 0, err) &&
            eval_bind_param(ev, 1, in, N * sizeof *in) && (!in_err || eval_bind_bounds(ev, 1, in_err)) &&
            eval_run(ev, k);
  CHECK(ok, "the kernel runs: %s", uj_error(ctx));
  eval_free(ev);
  return ok;
}

static const char *sum_text = "%j = (RANGE reduce 0 (CONST:int32 1000))\n"
                              "(SINK (STORE (INDEX (PARAM:float32* 0) (CONST:int32 0))"
                              " (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) %j)) %j)))";

static int by_magnitude(const void *a, const void *b) {
  float x = fabsf(*(const float *)a), y = fabsf(*(const float *)b);
  return (x > y) - (x < y);
}

static float pairwise(const float *x, size_t n) {
  return n == 1 ? x[0] : pairwise(x, n / 2) + pairwise(x + n / 2, n - n / 2);
}

static void check_orders(Ctx *ctx) {
  float x[N], r = 0;
  double e = -1;
  fill(x, N, 7);
  if (!run(ctx, sum_text, &r, &e, 1, x, NULL)) return;
  double abs_sum = 0;
  float seq = -0.0f;
  for (int i = 0; i < N; i++) abs_sum += fabs(x[i]), seq += x[i];
  CHECK(fw(seq) == fw(r), "the evaluator adds left to right: %.9g, want %.9g", r, seq);
  CHECK(e > 0 && e < 2.5 * N * 0x1p-24 * abs_sum, "the bound is about 2 n u sum|x|: %g (sum|x| %g)", e, abs_sum);
  /* other orders */
  float lanes[16] = {0}, rev = -0.0f, sorted_up = -0.0f, sorted_down = -0.0f, shuffled = -0.0f, y[N], z[N];
  for (int i = 0; i < N; i++) lanes[i % 16] += x[i];
  float lane_sum = pairwise(lanes, 16);
  for (int i = N; i-- > 0;) rev += x[i];
  for (int i = 0; i < N; i++) y[i] = x[i], z[i] = x[i];
  qsort(y, N, sizeof *y, by_magnitude);
  for (int i = 0; i < N; i++) sorted_up += y[i], sorted_down += y[N - 1 - i];
  for (int i = N - 1; i > 0; i--) { /* Fisher-Yates with a fixed stream */
    int j = (int)((unsigned)(i * 2654435761u) % (unsigned)(i + 1));
    float t = z[i];
    z[i] = z[j], z[j] = t;
  }
  for (int i = 0; i < N; i++) shuffled += z[i];
  const struct {
    float v;
    const char *name;
  } orders[] = {{pairwise(x, N), "pairwise"}, {lane_sum, "16 lanes"},    {rev, "reversed"},
                {sorted_up, "sorted up"},   {sorted_down, "sorted down"}, {shuffled, "shuffled"}};
  bool differs = false;
  for (size_t i = 0; i < sizeof orders / sizeof *orders; i++) {
    CHECK(bound_holds(UJ_FLOAT32, fw(orders[i].v), fw(r), e), "%s: %.9g within %g of %.9g", orders[i].name,
          orders[i].v, e, r);
    differs = differs || orders[i].v != r;
  }
  CHECK(differs, "some order rounds differently (else the test proves nothing)");
  /* a term dropped or counted twice is outside the bound: every term bigger than it */
  int missed = 0;
  for (int k = 0; k < N; k++) {
    if (fabs(x[k]) <= 2 * e) continue;
    float dropped = -0.0f, twice = x[k];
    for (int i = 0; i < N; i++) dropped += i == k ? 0.0f : x[i], twice += x[i];
    missed += bound_holds(UJ_FLOAT32, fw(dropped), fw(r), e) || bound_holds(UJ_FLOAT32, fw(twice), fw(r), e);
  }
  CHECK(missed == 0, "%d sums with a term dropped or doubled pass the bound", missed);
  int big = 0;
  for (int k = 0; k < N; k++) big += fabs(x[k]) > 2 * e;
  CHECK(big > N / 4, "dropping any of %d of %d terms (over 2e = %g) is caught", big, N, 2 * e);
}

/* A sum stored in an ALLOC and read back, then scaled; the input's own
 * bounds add. */
static void check_memory(Ctx *ctx) {
  float x[N], r = 0, r0 = 0;
  double e = 0, e0 = 0, in_err[N];
  fill(x, N, 11);
  for (int i = 0; i < N; i++) in_err[i] = 0x1p-30;
  run(ctx, sum_text, &r0, &e0, 1, x, NULL);
  const char *text = "%j = (RANGE reduce 0 (CONST:int32 1000))\n"
                     "%a = (ALLOC:float32*reg 0 1)\n"
                     "%s = (STORE (INDEX %a (CONST:int32 0)) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) %j)) %j))\n"
                     "(SINK %s (STORE (INDEX (PARAM:float32* 0) (CONST:int32 0))"
                     " (MUL (LOAD (INDEX %a (CONST:int32 0))) (CONST:float32 2.0))))";
  if (!run(ctx, text, &r, &e, 1, x, in_err)) return;
  CHECK(fw(r) == fw(2 * r0), "2 * the sum: %.9g", r);
  double want = 2 * (e0 + N * 0x1p-30);
  CHECK(e >= want && e < want * 1.001, "the bound through an ALLOC, inputs' bounds added, doubled: %g, about %g", e, want);
}

/* Softmax-weighted rows (as test_online runs through the JIT's online
 * rescale): the bound of each output is what the theory says, not "any":
 * two sums of n = 250 positive-weighted terms, each within 2 gamma(n-1)
 * ~ 2(n-1)u relative, the quotient adding both (~4nu), the exps' ulps. */
static void check_softmax(Ctx *ctx) {
  const char *text = "%i = (RANGE loop 0 (CONST:int32 4))\n"
                     "%j = (RANGE reduce 1 (CONST:int32 250))\n"
                     "%x = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 250)) %j)))\n"
                     "%m = (REDUCE MAX %x %j)\n"
                     "%e = (EXP2 (MUL (SUB %x %m) (CONST:float32 1.442695)))\n"
                     "%a = (REDUCE ADD (MUL %e %x) %j)\n"
                     "%l = (REDUCE ADD %e %j)\n"
                     "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (FDIV %a %l))))";
  float x[N], r[4];
  double e[4];
  fill(x, N, 3);
  for (int i = 0; i < N; i++) x[i] = x[i] / 64; /* scores within +-8 */
  if (!run(ctx, text, r, e, 4, x, NULL)) return;
  for (int i = 0; i < 4; i++)
    CHECK(e[i] > 0 && e[i] < (4 * 250 + 40) * 0x1p-24 * fabs(r[i]), "row %d: %.9g within %g (%.0f u)", i, r[i], e[i],
          e[i] / (0x1p-24 * fabs(r[i])));
}

/* The rules, one op at a time. */
static void check_rules(void) {
  uj_scalar f = UJ_FLOAT32;
  double none[3] = {0, 0, 0};
  uint64_t two_three[3] = {fw(2), fw(3), 0};
  CHECK(bound_alu(UJ_OP_ADD, f, f, two_three, none, fw(5)) == 0, "exact operands: exact");
  CHECK(bound_alu(UJ_OP_MUL, f, f, two_three, (double[]){0.5, 0, 0}, fw(6)) >= 1.5,
        "MUL: |b| ea (3 * 0.5)");
  double ex = bound_alu(UJ_OP_EXP2, f, f, (uint64_t[]){fw(3)}, none, fw(8));
  CHECK(ex > 0 && ex < 8 * 0x1p-20, "EXP2 of an exact operand: a few ulps (the lowering's own): %g", ex);
  double ex2 = bound_alu(UJ_OP_EXP2, f, f, (uint64_t[]){fw(3)}, (double[]){0.01, 0, 0}, fw(8));
  CHECK(ex2 >= 8 * (exp2(0.01) - 1), "EXP2: 2^(a+ea) - 2^a: %g", ex2);
  CHECK(bound_alu(UJ_OP_FDIV, f, f, two_three, (double[]){0, 3.5, 0}, fw(2.0 / 3)) == INFINITY,
        "FDIV by a value that may be 0: any");
  CHECK(bound_alu(UJ_OP_CMPLT, UJ_BOOL, f, two_three, (double[]){0.6, 0.6, 0}, 1) == INFINITY,
        "2 < 3 within 0.6 each: may flip");
  CHECK(bound_alu(UJ_OP_CMPLT, UJ_BOOL, f, two_three, (double[]){0.4, 0.4, 0}, 1) == 0, "within 0.4: decided");
  double w = bound_alu(UJ_OP_WHERE, f, UJ_FLOAT32, (uint64_t[]){1, fw(2), fw(7)}, (double[]){INFINITY, 0.1, 0.2}, fw(2));
  CHECK(w == 5 + 0.2, "WHERE on a condition that may flip: |x - y| + max(ex, ey): %g", w);
  CHECK(bound_alu(UJ_OP_CAST, UJ_INT32, f, (uint64_t[]){fw(2.5)}, (double[]){0.25, 0, 0}, 2) == 0 &&
            bound_alu(UJ_OP_CAST, UJ_INT32, f, (uint64_t[]){fw(2.5)}, (double[]){0.75, 0, 0}, 2) == INFINITY,
        "a cast to int: exact unless the interval crosses an integer");
  CHECK(bound_alu(UJ_OP_ADD, UJ_INT32, UJ_INT32, (uint64_t[]){1, 2}, (double[]){INFINITY, 0, 0}, 3) == INFINITY,
        "an int that may differ stays so");
  CHECK(bound_alu(UJ_OP_MAX, f, f, two_three, (double[]){0.25, 0.5, 0}, fw(3)) == 0.5, "MAX: the larger bound");
  BoundSum b;
  bound_sum_start(&b);
  bound_sum_step(&b, f, fw(3e38), 0), bound_sum_step(&b, f, fw(3e38), 0), bound_sum_step(&b, f, fw(-3e38), 0);
  CHECK(bound_sum_done(&b, UJ_OP_ADD, f, fw(INFINITY)) == INFINITY, "a sum that overflowed in this order: any");
  bound_sum_start(&b);
  for (int i = 0; i < 4; i++) bound_sum_step(&b, f, fw(i), 0);
  CHECK(bound_sum_done(&b, UJ_OP_MAX, f, fw(3)) == 0, "MAX over exact terms: exact in any order");
  bound_sum_start(&b);
  for (int i = 0; i < 4; i++) bound_sum_step(&b, UJ_INT32, (uint64_t)i, 0);
  CHECK(bound_sum_done(&b, UJ_OP_ADD, UJ_INT32, 6) == 0, "an int sum: exact in any order");
  CHECK(!bound_holds(f, fw(NAN), fw(1), 1e9) && bound_holds(f, fw(NAN), fw(NAN), 0) &&
            !bound_holds(f, fw(INFINITY), fw(1e38), 1e38) && bound_holds(f, fw(5), fw(1), INFINITY),
        "NaN matches NaN only; an infinity itself; INFINITY anything");
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  check_orders(ctx);
  check_memory(ctx);
  check_softmax(ctx);
  check_rules();
  uj_ctx_free(ctx);
  return check_report("test_eval_bound");
}
