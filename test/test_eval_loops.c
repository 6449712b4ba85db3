/* test_eval_loops.c — the reference evaluator on loops (RANGE and END),
 * graphs written in the text form: single, nested and triangular loops;
 * bounds from a DEFINE_VAR, zero and negative bounds, unsigned bounds above
 * INT64_MAX; one RANGE closed by sibling ENDs, and effects reached twice
 * (once outside loops, every time inside one); the errors (a RANGE used
 * outside its END, an END inside an END of its RANGE, out of bounds in a
 * later iteration) and that memory is untouched after them; loop-invariant
 * values and values computed outside loops; LOADs that see memory from
 * before the run; stores in loop order; eval_value after the run (outside
 * loops, the last step inside one, NULL in a loop that never ran); chains
 * 100,000 deep (SINKs, ALU ops, ENDs) inside a loop body, under a 1 MiB
 * stack. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "eval_util.h"
#include "uopjit/uopjit.h"

typedef struct Mem {
  void *data;
  size_t bytes;
} Mem;
#define MEM(a) ((Mem){(a), sizeof(a)})

/* The root of `text`; a failed CHECK when it does not parse. */
static const UOp *parse(Ctx *ctx, const char *text) {
  const UOp *u = uj_parse(ctx, text, "<loops>");
  CHECK(u != NULL, "parse: %s\n%s", uj_error(ctx), text);
  return u;
}

static bool bind_all(Eval *ev, const Mem *mems, size_t n) {
  bool ok = ev != NULL;
  for (size_t k = 0; ok && k < n; k++)
    ok = eval_bind_param(ev, (int64_t)k, mems[k].data, mems[k].bytes);
  return ok;
}

/* Parses text and runs it with PARAM slot k bound to mems[k]; true when
 * the run succeeds (the message is in the context otherwise). */
static bool run(Ctx *ctx, const char *text, const Mem *mems, size_t n) {
  const UOp *root = parse(ctx, text);
  Eval *ev = eval_new(ctx);
  bool ok = bind_all(ev, mems, n) && eval_run(ev, root);
  eval_free(ev);
  return ok;
}

static void fill(int32_t *m, size_t n, int32_t v) {
  for (size_t i = 0; i < n; i++) m[i] = v;
}

/* got[0..n) == want[0..n), the first difference reported under `what`. */
static void check_ints(const char *what, const int32_t *got, const int32_t *want, size_t n) {
  size_t i = 0;
  while (i < n && got[i] == want[i]) i++;
  CHECK(i == n, "%s: element %zu is %d, want %d", what, i, i < n ? got[i] : 0, i < n ? want[i] : 0);
}

/* The run fails, its message holds `msg`, and memory is untouched. */
static void check_fails(Ctx *ctx, const char *what, const char *text, const char *msg) {
  int32_t p[4] = {-1, -1, -1, -1}, q[4] = {-2, -2, -2, -2};
  const int32_t p0[4] = {-1, -1, -1, -1}, q0[4] = {-2, -2, -2, -2};
  CHECK(!run(ctx, text, (Mem[]){MEM(p), MEM(q)}, 2), "%s: must fail", what);
  CHECK(strstr(uj_error(ctx), msg) != NULL, "%s: message: %s", what, uj_error(ctx));
  check_ints(what, p, p0, 4);
  check_ints(what, q, q0, 4);
}

/* p[i] = 3i for i < 5: each STORE queued with its own copy of the value. */
static void test_single_loop(Ctx *ctx) {
  int32_t p[8];
  fill(p, 8, -1);
  const char *text = "%i = (RANGE loop 0 (CONST:int32 5))\n"
                     "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) (MUL %i (CONST:int32 3)))))";
  const UOp *root = parse(ctx, text);
  const UOp *v = parse(ctx, "(MUL (RANGE loop 0 (CONST:int32 5)) (CONST:int32 3))");
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, p, sizeof p) && eval_run(ev, root), "run: %s", uj_error(ctx));
  check_ints("single loop", p, (const int32_t[]){0, 3, 6, 9, 12, -1, -1, -1}, 8);
  const uint64_t *last = eval_value(ev, v);
  CHECK(last && last[0] == 12, "eval_value: the last step's 3i: %lld",
        last ? (long long)last[0] : -1LL);
  eval_free(ev);
  /* the END may be the root itself; int64 and uint16 loop variables */
  int64_t w[3] = {0};
  const char *root_end = "%i = (RANGE global 0 (CONST:int64 3))\n"
                         "(END %i (STORE (INDEX (PARAM:int64* 0) %i) (SUB (CONST:int64 10) %i)))";
  CHECK(run(ctx, root_end, (Mem[]){MEM(w)}, 1), "run: %s", uj_error(ctx));
  CHECK(w[0] == 10 && w[1] == 9 && w[2] == 8, "END as root: %lld %lld %lld", (long long)w[0],
        (long long)w[1], (long long)w[2]);
  uint16_t h[4] = {0};
  const char *u16 = "%i = (RANGE unroll 7 (CONST:uint16 4))\n"
                    "(END %i (STORE (INDEX (PARAM:uint16* 0) %i) (SHL %i %i)))";
  CHECK(run(ctx, u16, (Mem[]){MEM(h)}, 1), "run: %s", uj_error(ctx));
  CHECK(h[0] == 0 && h[1] == 2 && h[2] == 8 && h[3] == 24, "uint16: %u %u %u %u", h[0], h[1], h[2],
        h[3]);
}

/* out[i*4+j] = 10i + j for i < 3, j < 4; and a triangular loop j <= i. */
static void test_nested_loops(Ctx *ctx) {
  int32_t out[12], want[12];
  fill(out, 12, -1);
  const char *text =
      "%i = (RANGE loop 0 (CONST:int32 3))\n"
      "%j = (RANGE loop 1 (CONST:int32 4))\n"
      "(END %i (END %j (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %i (CONST:int32 4)) %j))\n"
      "                       (ADD (MUL %i (CONST:int32 10)) %j))))";
  CHECK(run(ctx, text, (Mem[]){MEM(out)}, 1), "run: %s", uj_error(ctx));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) want[i * 4 + j] = 10 * i + j;
  check_ints("2D", out, want, 12);
  /* the bound of the inner RANGE depends on the outer one */
  int32_t tri[16] = {0}, tri_want[16] = {0};
  const char *tri_text =
      "%i = (RANGE loop 0 (CONST:int32 4))\n"
      "%j = (RANGE loop 1 (ADD %i (CONST:int32 1)))\n"
      "(END %i (END %j (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %i (CONST:int32 4)) %j))\n"
      "                       (CONST:int32 1))))";
  CHECK(run(ctx, tri_text, (Mem[]){MEM(tri)}, 1), "run: %s", uj_error(ctx));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j <= i; j++) tri_want[i * 4 + j] = 1;
  check_ints("triangular", tri, tri_want, 16);
}

/* for i < n, n a DEFINE_VAR: p[i] = i + n; one Eval, several runs. */
static void test_var_bound(Ctx *ctx) {
  const UOp *root = parse(ctx, "%n = (DEFINE_VAR:int32 n 0 8)\n"
                               "%i = (RANGE loop 0 %n)\n"
                               "(END %i (STORE (INDEX (PARAM:int32* 0) %i) (ADD %i %n)))");
  int32_t p[8];
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, p, sizeof p), "bind");
  static const struct {
    int64_t n;
    int32_t want[8];
  } cases[] = {
      {5, {5, 6, 7, 8, 9, -1, -1, -1}},
      {2, {2, 3, -1, -1, -1, -1, -1, -1}},
      {0, {-1, -1, -1, -1, -1, -1, -1, -1}},
      {8, {8, 9, 10, 11, 12, 13, 14, 15}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char what[32];
    snprintf(what, sizeof what, "n = %lld", (long long)cases[c].n);
    fill(p, 8, -1);
    CHECK(eval_bind_var(ev, "n", cases[c].n) && eval_run(ev, root), "%s: %s", what, uj_error(ctx));
    check_ints(what, p, cases[c].want, 8);
  }
  CHECK(eval_bind_var(ev, "n", 9) && !eval_run(ev, root), "n = 9 is outside [0, 8]");
  eval_free(ev);
  check_fails(ctx, "unbound bound",
              "(END (RANGE loop 0 (DEFINE_VAR:int32 unbound 0 8))\n"
              "     (STORE (PARAM:int32* 0) (CONST:int32 1)))",
              "variable unbound is not bound");
}

/* A bound <= 0 runs the body zero times: nothing written, and a body that
 * would fail (out of bounds) is never run. */
static void test_zero_and_negative(Ctx *ctx) {
  static const char *const bounds[] = {
      "(CONST:int32 0)",   "(CONST:int32 -3)",
      "(CONST:int8 -128)", "(CONST:int64 -9223372036854775808)",
      "(CONST:uint8 0)",   "(DEFINE_VAR:int32 m -5 5)",
  };
  for (size_t b = 0; b < sizeof bounds / sizeof *bounds; b++) {
    char text[512];
    snprintf(text, sizeof text,
             "%%p = (PARAM:int32* 0)\n"
             "%%i = (RANGE loop 0 %s)\n"
             "(SINK (END %%i (STORE (INDEX %%p %%i) (CONST:int32 1))\n"
             "              (STORE (INDEX %%p (CONST:int32 100)) (CONST:int32 2))))",
             bounds[b]);
    int32_t p[4] = {-1, -1, -1, -1};
    const UOp *root = parse(ctx, text);
    Eval *ev = eval_new(ctx);
    CHECK(eval_bind_param(ev, 0, p, sizeof p) && eval_bind_var(ev, "m", -2), "bind");
    CHECK(eval_run(ev, root), "bound %s: %s", bounds[b], uj_error(ctx));
    check_ints(bounds[b], p, (const int32_t[]){-1, -1, -1, -1}, 4);
    eval_free(ev);
  }
  /* nothing in the body was computed: eval_value gives NULL (eval.h) */
  int32_t p[1] = {-1};
  const UOp *root = parse(ctx, "%i = (RANGE loop 0 (CONST:int32 0))\n"
                               "(END %i (STORE (PARAM:int32* 0) (ADD %i (CONST:int32 5))))");
  const UOp *body_value = parse(ctx, "(ADD (RANGE loop 0 (CONST:int32 0)) (CONST:int32 5))");
  const UOp *bound = parse(ctx, "(CONST:int32 0)");
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, p, sizeof p) && eval_run(ev, root), "run: %s", uj_error(ctx));
  CHECK(eval_value(ev, bound) && eval_value(ev, bound)[0] == 0, "the bound was computed");
  CHECK(eval_value(ev, body_value) == NULL, "a value of a loop that never ran: %p",
        (const void *)eval_value(ev, body_value));
  CHECK(eval_value(ev, body_value->src[0]) == NULL, "a RANGE that never ran: %p",
        (const void *)eval_value(ev, body_value->src[0]));
  eval_free(ev);
}

/* One RANGE closed by several sibling ENDs, each running the whole loop;
 * an effect reached twice: once outside loops, every time inside a loop. */
static void test_sibling_ends(Ctx *ctx) {
  int32_t p[4], q[4];
  const char *defs = "%k = (RANGE loop 0 (CONST:int32 4))\n"
                     "%o = (RANGE loop 1 (CONST:int32 2))\n"
                     "%p = (PARAM:int32* 0)\n"
                     "%a = (END %k (STORE (INDEX %p %k) %k))\n"
                     "%b = (END %k (STORE (INDEX %p %k) (ADD %k (CONST:int32 10))))\n"
                     "%c = (END %k (STORE (INDEX (PARAM:int32* 1) %k) (MUL %k %k)))\n"
                     "%s = (STORE (INDEX %p (CONST:int32 0)) (CONST:int32 50))\n"
                     "%t = (STORE (INDEX %p (CONST:int32 0)) (CONST:int32 60))\n";
  static const struct {
    const char *root;
    int32_t p[4];
  } cases[] = {
      {"(SINK %a %b %c)", {10, 11, 12, 13}},
      {"(SINK %b %a %c)", {0, 1, 2, 3}},
      /* outside loops, an effect reached twice runs once */
      {"(SINK %a %b %c %a)", {10, 11, 12, 13}},
      {"(SINK %b %c (SINK %a %b))", {0, 1, 2, 3}},
      {"(SINK %c %s %t %s)", {60, -1, -1, -1}},
      /* inside a loop, every time it is reached */
      {"(SINK %c (END %o (SINK %a %b %a)))", {0, 1, 2, 3}},
      {"(SINK %c (END %o %b (SINK %a %b)))", {10, 11, 12, 13}},
      {"(SINK %c (END %o %s %t %s))", {50, -1, -1, -1}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    char text[1024];
    snprintf(text, sizeof text, "%s%s", defs, cases[c].root);
    fill(p, 4, -1), fill(q, 4, -1);
    CHECK(run(ctx, text, (Mem[]){MEM(p), MEM(q)}, 2), "%s: %s", cases[c].root, uj_error(ctx));
    check_ints(cases[c].root, p, cases[c].p, 4);
    check_ints(cases[c].root, q, (const int32_t[]){0, 1, 4, 9}, 4);
  }
}

/* The errors of loops; memory untouched, stores that ran before included. */
static void test_errors(Ctx *ctx) {
  check_fails(ctx, "no END",
              "(STORE (INDEX (PARAM:int32* 0) (RANGE loop 0 (CONST:int32 4))) (CONST:int32 1))",
              "RANGE is used outside its END");
  check_fails(ctx, "RANGE after its END",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%p = (PARAM:int32* 0)\n"
              "(SINK (STORE (INDEX %p (CONST:int32 0)) (CONST:int32 7))\n"
              "      (END %i (STORE (INDEX %p %i) %i))\n"
              "      (STORE (INDEX (PARAM:int32* 1) (CONST:int32 1)) %i))",
              "RANGE is used outside its END");
  check_fails(ctx, "RANGE before its END",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%p = (PARAM:int32* 0)\n"
              "(SINK (STORE (INDEX (PARAM:int32* 1) (CONST:int32 1)) (ADD %i (CONST:int32 1)))\n"
              "      (END %i (STORE (INDEX %p %i) (ADD %i (CONST:int32 1)))))",
              "RANGE is used outside its END");
  /* values computed from the RANGE inside the loop are no good after it */
  check_fails(ctx, "a value of the RANGE after its END",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%v = (ADD %i (CONST:int32 1))\n"
              "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) %v))\n"
              "      (STORE (INDEX (PARAM:int32* 1) (CONST:int32 0)) %v))",
              "RANGE is used outside its END");
  check_fails(ctx, "an INDEX of the RANGE after its END",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%x = (INDEX (PARAM:int32* 0) %i)\n"
              "(SINK (END %i (STORE %x %i)) (STORE %x (CONST:int32 9)))",
              "RANGE is used outside its END");
  check_fails(ctx, "the inner RANGE after its END, in the outer loop",
              "%i = (RANGE loop 0 (CONST:int32 2))\n"
              "%j = (RANGE loop 1 (CONST:int32 2))\n"
              "%v = (MUL %j (CONST:int32 2))\n"
              "(END %i (END %j (STORE (INDEX (PARAM:int32* 0) %j) %v))\n"
              "        (STORE (INDEX (PARAM:int32* 1) %i) %v))",
              "RANGE is used outside its END");
  check_fails(ctx, "a bound from a RANGE that is not open",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) %i))\n"
              "      (END (RANGE loop 1 (ADD %i (CONST:int32 1)))\n"
              "           (STORE (PARAM:int32* 1) (CONST:int32 1))))",
              "RANGE is used outside its END");
  check_fails(ctx, "a bound from a RANGE after its END, computed in the loop",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%n = (ADD %i (CONST:int32 1))\n"
              "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) %n))\n"
              "      (END (RANGE loop 1 %n) (STORE (PARAM:int32* 1) (CONST:int32 1))))",
              "RANGE is used outside its END");
  check_fails(ctx, "END inside an END of its RANGE",
              "%i = (RANGE loop 0 (CONST:int32 4))\n"
              "%p = (PARAM:int32* 0)\n"
              "(SINK (STORE (INDEX %p (CONST:int32 0)) (CONST:int32 7))\n"
              "      (END %i (END %i (STORE (INDEX %p %i) %i))))",
              "its RANGE is already open");
  check_fails(ctx, "END inside an END of its RANGE, another loop between",
              "%i = (RANGE loop 0 (CONST:int32 2))\n"
              "%j = (RANGE loop 1 (CONST:int32 2))\n"
              "%p = (PARAM:int32* 0)\n"
              "(END %i (STORE (INDEX %p %i) %i)\n"
              "        (END %j (END %i (STORE (INDEX %p %j) %i))))",
              "its RANGE is already open");
}

/* An access out of bounds in the 3rd iteration is reported with its
 * element; what the first two queued is not written. */
static void test_out_of_bounds_in_loop(Ctx *ctx) {
  check_fails(ctx, "STORE in iteration 3",
              "%i = (RANGE loop 0 (CONST:int32 5))\n"
              "%p = (PARAM:int32* 0)\n"
              "(SINK (STORE (INDEX %p (CONST:int32 1)) (CONST:int32 5))\n"
              "      (END %i (STORE (INDEX %p (MUL %i (CONST:int32 2))) %i)))",
              "STORE: element 4 is out of bounds [0, 4)");
  check_fails(ctx, "LOAD in iteration 3",
              "%i = (RANGE loop 0 (CONST:int32 5))\n"
              "(END %i (STORE (INDEX (PARAM:int32* 1) (CONST:int32 0))\n"
              "               (LOAD (INDEX (PARAM:int32* 0) (MUL %i (CONST:int32 2))))))",
              "LOAD: element 4 is out of bounds [0, 4)");
  /* an unsigned bound above INT64_MAX runs (as INT64_MAX), so it reaches i = 4 */
  check_fails(ctx, "uint64 bound 2^64-1",
              "%i = (RANGE loop 0 (CONST:uint64 18446744073709551615))\n"
              "(END %i (STORE (INDEX (PARAM:int32* 0) %i) (CONST:int32 1)))",
              "STORE: element 4 is out of bounds [0, 4)");
  check_fails(ctx, "uint64 bound 2^63",
              "%i = (RANGE loop 0 (CONST:uint64 9223372036854775808))\n"
              "(END %i (STORE (INDEX (PARAM:int32* 0) %i) (CONST:int32 1)))",
              "STORE: element 4 is out of bounds [0, 4)");
  check_fails(ctx, "int64 bound INT64_MAX",
              "%i = (RANGE loop 0 (CONST:int64 9223372036854775807))\n"
              "(END %i (STORE (INDEX (PARAM:int32* 0) %i) (CONST:int32 1)))",
              "STORE: element 4 is out of bounds [0, 4)");
}

/* Values that depend on no RANGE: computed once, from memory before the
 * run, used inside loops, and readable with eval_value after the run. */
static void test_invariant_values(Ctx *ctx) {
  int32_t p[4], x[1] = {7}, q[1] = {0};
  fill(p, 4, -1);
  const char *text = "%x = (ADD (LOAD (PARAM:int32* 1)) (CONST:int32 1))\n"
                     "%i = (RANGE loop 0 (CONST:int32 4))\n"
                     "(SINK (STORE (PARAM:int32* 2) %x)\n"
                     "      (END %i (STORE (INDEX (PARAM:int32* 0) %i) (MUL %x %i))\n"
                     "              (STORE (PARAM:int32* 1) %i)))";
  const UOp *root = parse(ctx, text);
  const UOp *xv = parse(ctx, "(ADD (LOAD (PARAM:int32* 1)) (CONST:int32 1))");
  const UOp *xl = parse(ctx, "(LOAD (PARAM:int32* 1))");
  Eval *ev = eval_new(ctx);
  CHECK(bind_all(ev, (Mem[]){MEM(p), MEM(x), MEM(q)}, 3) && eval_run(ev, root), "run: %s",
        uj_error(ctx));
  check_ints("x*i, x = 8 in every iteration", p, (const int32_t[]){0, 8, 16, 24}, 4);
  CHECK(q[0] == 8 && x[0] == 3, "q = %d (want 8), x = %d (want 3)", q[0], x[0]);
  const uint64_t *w = eval_value(ev, xv), *wl = eval_value(ev, xl);
  CHECK(w && w[0] == 8, "eval_value of x after the run: %lld", w ? (long long)w[0] : -1LL);
  CHECK(wl && wl[0] == 7, "eval_value of the LOAD: %lld", wl ? (long long)wl[0] : -1LL);
  eval_free(ev);
  /* a loop-invariant value first met inside a loop */
  fill(p, 4, -1), x[0] = 5;
  const char *inside = "%i = (RANGE loop 0 (CONST:int32 4))\n"
                       "%v = (MUL (LOAD (PARAM:int32* 1)) (CONST:int32 2))\n"
                       "(END %i (STORE (INDEX (PARAM:int32* 0) %i) (ADD %v %i)))";
  root = parse(ctx, inside);
  const UOp *v = parse(ctx, "(MUL (LOAD (PARAM:int32* 1)) (CONST:int32 2))");
  ev = eval_new(ctx);
  CHECK(bind_all(ev, (Mem[]){MEM(p), MEM(x)}, 2) && eval_run(ev, root), "run: %s", uj_error(ctx));
  check_ints("invariant inside", p, (const int32_t[]){10, 11, 12, 13}, 4);
  w = eval_value(ev, v);
  CHECK(w && w[0] == 10, "eval_value of the invariant: %lld", w ? (long long)w[0] : -1LL);
  eval_free(ev);
  /* every LOAD reads memory as it was before the run, so a later
   * iteration reading what an earlier one stored is an error (a compiled
   * loop would carry it): p[i+1] = p[i] + 1 fails at i = 1 */
  int32_t c[4] = {1, 0, 0, 0};
  const char *carry = "%i = (RANGE loop 0 (CONST:int32 3))\n"
                      "%p = (PARAM:int32* 0)\n"
                      "(END %i (STORE (INDEX %p (ADD %i (CONST:int32 1)))\n"
                      "               (ADD (LOAD (INDEX %p %i)) (CONST:int32 1))))";
  CHECK(!run(ctx, carry, (Mem[]){MEM(c)}, 1) && strstr(uj_error(ctx), "element 1 was stored earlier in this run"),
        "carry: %s", uj_error(ctx));
  check_ints("a failed carry writes nothing", c, (const int32_t[]){1, 0, 0, 0}, 4);
}

/* STOREs are written in the order they ran: the later iteration wins. */
static void test_store_order(Ctx *ctx) {
  static const struct {
    const char *what, *text;
    int32_t want[4];
  } cases[] = {
      {"one element, 4 iterations",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(END %i (STORE (PARAM:int32* 0) %i))",
       {3, -1, -1, -1}},
      {"nested: the last i wins",
       "%i = (RANGE loop 0 (CONST:int32 2))\n"
       "%j = (RANGE loop 1 (CONST:int32 3))\n"
       "(END %i (END %j (STORE (INDEX (PARAM:int32* 0) %j) (ADD (MUL %i (CONST:int32 10)) %j))))",
       {10, 11, 12, -1}},
      {"nested, the other way: the last j wins",
       "%i = (RANGE loop 0 (CONST:int32 2))\n"
       "%j = (RANGE loop 1 (CONST:int32 3))\n"
       "(END %i (END %j (STORE (INDEX (PARAM:int32* 0) %i) (ADD (MUL %i (CONST:int32 10)) %j))))",
       {2, 12, -1, -1}},
      {"two stores in one body",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(END %i (STORE (PARAM:int32* 0) %i) (STORE (PARAM:int32* 0) (ADD %i (CONST:int32 100))))",
       {103, -1, -1, -1}},
      {"a store after the loop",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) %i))\n"
       "      (STORE (PARAM:int32* 0) (CONST:int32 9)))",
       {9, 1, 2, 3}},
      {"a store before the loop",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(SINK (STORE (PARAM:int32* 0) (CONST:int32 9))\n"
       "      (END %i (STORE (INDEX (PARAM:int32* 0) %i) %i)))",
       {0, 1, 2, 3}},
      /* a STORE that depends on no RANGE runs in every step too */
      {"an invariant store in the body, last",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(END %i (STORE (PARAM:int32* 0) %i) (STORE (PARAM:int32* 0) (CONST:int32 9)))",
       {9, -1, -1, -1}},
      {"an invariant store in the body, first",
       "%i = (RANGE loop 0 (CONST:int32 4))\n"
       "(END %i (STORE (PARAM:int32* 0) (CONST:int32 9)) (STORE (PARAM:int32* 0) %i))",
       {3, -1, -1, -1}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    int32_t p[4] = {-1, -1, -1, -1};
    CHECK(run(ctx, cases[c].text, (Mem[]){MEM(p)}, 1), "%s: %s", cases[c].what, uj_error(ctx));
    check_ints(cases[c].what, p, cases[c].want, 4);
  }
}

/* for i < 255 (uint8): p[i] = i; element 255 is not written. */
static void test_uint8_bound(Ctx *ctx) {
  uint8_t p[256];
  memset(p, 0xff, sizeof p);
  const char *text = "%i = (RANGE loop 0 (CONST:uint8 255))\n"
                     "(END %i (STORE (INDEX (PARAM:uint8* 0) %i) %i))";
  CHECK(run(ctx, text, (Mem[]){MEM(p)}, 1), "run: %s", uj_error(ctx));
  int bad = -1;
  for (int i = 0; i < 255 && bad < 0; i++)
    if (p[i] != i) bad = i;
  CHECK(bad < 0 && p[255] == 0xff, "uint8 loop: p[%d] = %d, p[255] = %d", bad, bad < 0 ? 0 : p[bad],
        p[255]);
}

static const UOp *range(Ctx *ctx, const UOp *bound, int64_t axis) {
  return uj_uop_new(ctx, UJ_OP_RANGE, bound->dtype, &bound, 1, (Arg){"loop", &axis, 1});
}
static const UOp *store(Ctx *ctx, const UOp *p, const UOp *v) {
  return mk(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), p, v, NULL);
}
static const UOp *end(Ctx *ctx, const UOp *r, const UOp *body) {
  return uj_uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){r, body}, 2, arg_none());
}

/* Chains 100,000 deep inside a loop body: nested SINKs, ALU ops, and
 * nested ENDs. Run under a 1 MiB stack, where a recursive evaluator (100,000
 * frames of 16 bytes or more) would overflow. */
#define DEPTH 100000
static void test_deep(void) {
#if defined(__linux__)
  struct rlimit lim;
  if (getrlimit(RLIMIT_STACK, &lim) == 0 &&
      (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > (1 << 20))) {
    lim.rlim_cur = 1 << 20; /* the main thread's stack grows up to the limit of the moment */
    CHECK(setrlimit(RLIMIT_STACK, &lim) == 0, "setrlimit");
  }
#endif
  Ctx *ctx = uj_ctx_new();
  const UOp *p = parse(ctx, "(PARAM:int32* 0)"), *one = k_int(ctx, UJ_INT32, 1);
  const UOp *i = range(ctx, k_int(ctx, UJ_INT32, 3), 0);
  const UOp *at_i = mk(ctx, UJ_OP_INDEX, p->dtype, p, i, NULL), *body = store(ctx, at_i, i);
  for (int d = 0; d < DEPTH; d++)
    body = uj_uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &body, 1, arg_none());
  int32_t m[4] = {-1, -1, -1, -1};
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, m, sizeof m), "bind");
  CHECK(eval_run(ev, end(ctx, i, body)), "nested SINKs: %s", uj_error(ctx));
  check_ints("nested SINKs", m, (const int32_t[]){0, 1, 2, -1}, 4);
  /* i + 1 + 1 + ... recomputed in every iteration */
  const UOp *v = i;
  for (int d = 0; d < DEPTH; d++) v = uop_binary(ctx, UJ_OP_ADD, v, one);
  body = store(ctx, at_i, v);
  CHECK(eval_run(ev, end(ctx, i, body)), "ALU chain: %s", uj_error(ctx));
  check_ints("ALU chain", m, (const int32_t[]){DEPTH, DEPTH + 1, DEPTH + 2, -1}, 4);
  /* DEPTH nested loops of one iteration each (RANGEs with axes 1..DEPTH,
   * interned: range() gives the same node again); the innermost stores */
  const UOp *val = alu(ctx, UJ_OP_ADD, range(ctx, one, DEPTH), k_int(ctx, UJ_INT32, 42), NULL);
  body = end(ctx, range(ctx, one, DEPTH), store(ctx, p, val));
  for (int d = DEPTH - 1; d >= 1; d--) body = end(ctx, range(ctx, one, d), body);
  CHECK(eval_run(ev, body), "nested ENDs: %s", uj_error(ctx));
  CHECK(m[0] == 42, "nested ENDs: %d", m[0]);
  eval_free(ev);
  uj_ctx_free(ctx);
}

/* REDUCE over RANGEs: values by hand, the identities of empty reductions,
 * and the errors of a misused one. */
static void test_reduce(Ctx *ctx) {
  int32_t p[4] = {0}, x[4] = {3, -5, 7, 2};
  const char *text = "%j = (RANGE reduce 0 (DEFINE_VAR:int32 n 0 4))\n%v = (LOAD (INDEX (PARAM:int32* 1) %j))\n"
                     "(SINK (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) (REDUCE ADD %v %j))"
                     " (STORE (INDEX (PARAM:int32* 0) (CONST:int32 1)) (REDUCE MAX %v %j))"
                     " (STORE (INDEX (PARAM:int32* 0) (CONST:int32 2)) (REDUCE MUL %v %j))"
                     " (STORE (INDEX (PARAM:int32* 0) (CONST:int32 3)) (REDUCE ADD (REDUCE ADD %j (RANGE reduce 1 (CONST:int32 3))) %j)))";
  const UOp *root = parse(ctx, text);
  for (int64_t n = 4; n >= 0; n -= 4) {
    Eval *ev = eval_new(ctx);
    CHECK(bind_all(ev, (Mem[]){MEM(p), MEM(x)}, 2) && eval_bind_var(ev, "n", n) && eval_run(ev, root), "run: %s",
          uj_error(ctx));
    eval_free(ev);
    if (n == 4) check_ints("sum, max, product, nested", p, (const int32_t[]){7, 7, -210, 18}, 4);
    else check_ints("empty: 0, MIN, 1, 0", p, (const int32_t[]){0, INT32_MIN, 1, 0}, 4);
  }
  float f[2] = {1, 1};
  const UOp *empty = parse(ctx, "%r = (RANGE reduce 0 (CONST:int32 0))\n"
                                "(SINK (STORE (PARAM:float32* 0) (REDUCE ADD (CONST:float32 1.0) %r))"
                                " (STORE (INDEX (PARAM:float32* 0) (CONST:int32 1)) (REDUCE MAX (CONST:float32 1.0) %r)))");
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, f, sizeof f) && eval_run(ev, empty), "run: %s", uj_error(ctx));
  eval_free(ev);
  CHECK(f[0] == 0 && signbit(f[0]) && isinf(f[1]) && f[1] < 0, "empty float sum -0.0, max -inf: %g %g", f[0], f[1]);
  check_fails(ctx, "a REDUCE inside its own RANGE's loop",
              "%r = (RANGE loop 0 (CONST:int32 2))\n(END %r (STORE (INDEX (PARAM:int32* 0) %r) (REDUCE ADD %r %r)))",
              "its RANGE is already open");
  check_fails(ctx, "a tensor INDEX",
              "(SINK (STORE (PARAM:int32* 0) (INDEX (EXPAND 2 2 (RESHAPE 1 1 (CONST:int32 3))) (CONST:int32 1) (CONST:int32 1))))",
              "RESHAPE: a tensor op is not evaluable here");
  check_fails(ctx, "a tensor REDUCE",
              "(SINK (STORE (PARAM:int32* 0) (RESHAPE (REDUCE ADD 0 (RESHAPE 4 (BUFFER:int32* 0 4 CPU))))))",
              "a tensor REDUCE (over axes) is not evaluable");
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_reduce(ctx);
  test_single_loop(ctx);
  test_nested_loops(ctx);
  test_var_bound(ctx);
  test_zero_and_negative(ctx);
  test_sibling_ends(ctx);
  test_errors(ctx);
  test_out_of_bounds_in_loop(ctx);
  test_invariant_values(ctx);
  test_store_order(ctx);
  test_uint8_bound(ctx);
  uj_ctx_free(ctx);
  test_deep();
  return check_report("test_eval_loops");
}
