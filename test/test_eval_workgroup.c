/* test_eval_workgroup.c — workgroups, BARRIER and shared memory in the
 * reference evaluator (docs/semantics.md, "Workgroups"): a row sum by a
 * 256-thread group with a tree in local memory and a GEMM with shared
 * tiles, a barrier per tile and a per-thread accumulator, both bit for
 * bit against C models of their order; each again with one BARRIER
 * missing, reported as a race naming the memory, the element and both
 * threads; a barrier in a loop some threads leave early; `reg` memory
 * private to a thread; local memory that does not outlive its workgroup;
 * two threads storing one output element; additions (STORE_ADD) from
 * many threads into one element, which race only with a STORE or a LOAD
 * of it; BARRIER outside a workgroup
 * (its effects only), on the CPU JIT too, which rejects one inside. */
#include <stdlib.h>

#include "jit_util.h"
#include "workgroup_kernels.h"

static Eval *bind(Ctx *ctx, void *out, size_t out_bytes, void *in, size_t in_bytes, void *in2, size_t in2_bytes) {
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, out, out_bytes);
  if (in) eval_bind_param(ev, 1, in, in_bytes);
  if (in2) eval_bind_param(ev, 2, in2, in2_bytes);
  return ev;
}

/* Runs text (memory bound as `bind`); expects success, or failure with
 * every string of `want` in the message. */
static void expect_run(Ctx *ctx, const char *name, const char *text, const char *const *want, size_t nwant,
                       void *out, size_t out_bytes, void *in, size_t in_bytes, void *in2, size_t in2_bytes) {
  const UOp *k = uj_parse(ctx, text, name);
  CHECK(k != NULL, "%s: parse: %s", name, uj_error(ctx));
  if (!k) return;
  Eval *ev = bind(ctx, out, out_bytes, in, in_bytes, in2, in2_bytes);
  bool ok = eval_run(ev, k);
  if (nwant == 0) CHECK(ok, "%s: runs: %s", name, uj_error(ctx));
  else CHECK(!ok, "%s: must fail", name);
  for (size_t i = 0; !ok && i < nwant; i++)
    CHECK(strstr(uj_error(ctx), want[i]) != NULL, "%s: wants \"%s\" in: %s", name, want[i], uj_error(ctx));
  eval_free(ev);
}

/* ---- a row sum: 256 threads, partial sums, a tree in local memory ---- */

static void test_row_sum(Ctx *ctx) {
  static float in[ROWS * COLS];
  float out[ROWS] = {0}, want[ROWS];
  for (int i = 0; i < ROWS * COLS; i++) in[i] = (float)((i * 37) % 101) * 0.013f + 0.5f; /* sums round */
  for (int g = 0; g < ROWS; g++) { /* the kernel's order: partials, then the tree */
    float s[THREADS];
    for (int l = 0; l < THREADS; l++) {
      s[l] = in[g * COLS + l];
      for (int k = 1; k < COLS / THREADS; k++) s[l] += in[g * COLS + k * THREADS + l];
    }
    for (int stride = THREADS / 2; stride >= 1; stride /= 2)
      for (int l = 0; l < stride; l++) s[l] += s[l + stride];
    want[g] = s[0];
  }
  expect_run(ctx, "row sum", row_sum_text(-1), NULL, 0, out, sizeof out, in, sizeof in, NULL, 0);
  for (int g = 0; g < ROWS; g++) CHECK(memcmp(&out[g], &want[g], sizeof *out) == 0, "row %d: %.9g, want %.9g", g, out[g], want[g]);
  /* A sequential sum differs in its last bits: the tree's order is its own. */
  float seq = 0;
  for (int c = 0; c < COLS; c++) seq += in[c];
  CHECK(seq != want[0], "the data makes the orders differ (%.9g)", seq);

  /* Tree step 0 reads s[l + 128] while thread l + 128 stores its partial. */
  float keep[ROWS] = {7, 7, 7};
  const char *const first[] = {"eval: STORE:", "element 128 of ALLOC 0 (local) was read by thread (r1=0) of workgroup (r0=0)",
                               "thread (r1=128) stores it: a race"};
  expect_run(ctx, "no barrier after the partials", row_sum_text(0), first, 3, keep, sizeof keep, in, sizeof in, NULL, 0);
  /* Step 1 (stride 64) reads s[64] before thread 64 updates it in step 0. */
  const char *const second[] = {"element 64 of ALLOC 0 (local) was read by thread (r1=0)", "thread (r1=64) stores it"};
  expect_run(ctx, "no barrier after step 0", row_sum_text(1), second, 2, keep, sizeof keep, in, sizeof in, NULL, 0);
  /* The last step: thread 0 reads s[1] before thread 1 stores it. */
  const char *const last[] = {"element 1 of ALLOC 0 (local) was read by thread (r1=0)", "thread (r1=1) stores it"};
  expect_run(ctx, "no barrier after step 6", row_sum_text(7), last, 2, keep, sizeof keep, in, sizeof in, NULL, 0);
  /* The final read of s[0] (thread 0's own store) needs no barrier after step 7. */
  expect_run(ctx, "no barrier after the last step", row_sum_text(8), NULL, 0, out, sizeof out, in, sizeof in, NULL, 0);
  for (int g = 0; g < ROWS; g++) CHECK(keep[g] == 7, "memory untouched after an error");
}

/* ---- a GEMM with shared-memory tiles ---- */

static void test_gemm(Ctx *ctx) {
  float a[M * K], b[K * N], c[M * N], want[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7) % 9 - 4); /* small ints: every sum is exact */
  for (int i = 0; i < K * N; i++) b[i] = (float)((i * 5) % 7 - 3);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];
      want[i * N + j] = s;
    }
  memset(c, 0, sizeof c);
  expect_run(ctx, "gemm", gemm_text(true), NULL, 0, c, sizeof c, a, sizeof a, b, sizeof b);
  CHECK(memcmp(c, want, sizeof c) == 0, "gemm: C = A B (c[0] = %g, want %g; c[255] = %g, want %g)", c[0], want[0],
        c[255], want[255]);
  /* Without the second BARRIER thread (0, 0) copies the next tile of A
   * into as[0] while thread (0, 1) still reads this one's. */
  const char *const race[] = {"eval: LOAD:",
                              "element 0 of ALLOC 0 (local) was stored by thread (r2=0, r3=0) of workgroup (r0=0, r1=0)",
                              "thread (r2=0, r3=1) reads it: a race"};
  expect_run(ctx, "gemm without its second barrier", gemm_text(false), race, 3, c, sizeof c, a, sizeof a, b, sizeof b);
}

/* ---- the other rules ---- */

/* Kernels the evaluator refuses (slot 0: int32[16]), each with what its
 * message must say. */
static const struct {
  const char *name, *text, *want[2];
} refused[] = {
    {"divergent barrier", /* a BARRIER in a loop whose trip count differs between threads */
     "%l = (RANGE local 0 (CONST:int32 4))\n%i = (RANGE loop 1 (ADD (CONST:int32 1) (MOD %l (CONST:int32 2))))\n"
     "(SINK (END %l (END %i (BARRIER (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %l (CONST:int32 2)) %i)) %i)))))",
     {"eval: BARRIER:", "thread (r0=1) waits here in loop steps (r1=1) while thread (r0=0) finished its body: every "
                        "thread of a workgroup must reach each BARRIER the same number of times"}},
    {"crossed barriers", /* two BARRIERs the threads reach in different orders */
     "%l = (RANGE local 0 (CONST:int32 2))\n%a = (RANGE loop 1 (SUB (CONST:int32 1) %l))\n%b = (RANGE loop 2 %l)\n"
     "(SINK (END %l (END %a (BARRIER (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) (CONST:int32 1))))"
     " (END %b (BARRIER (STORE (INDEX (PARAM:int32* 0) (CONST:int32 1)) (CONST:int32 2))))))",
     {"thread (r0=0) waits here in loop steps (r1=0) while thread (r0=1) waits at another BARRIER in loop steps (r2=0)",
      "eval: BARRIER:"}},
    {"reg of another thread", /* `reg` memory is each thread's own */
     "%r = (ALLOC:int32*reg 0 1)\n%l = (RANGE local 0 (CONST:int32 2))\n"
     "(SINK (END %l (STORE (INDEX %r (CONST:int32 0) (CMPEQ %l (CONST:int32 0))) (CONST:int32 5)) (BARRIER)"
     " (STORE (INDEX (PARAM:int32* 0) %l) (LOAD (INDEX %r (CONST:int32 0))))))",
     {"eval: LOAD:", "element 0 of an ALLOC is read before anything was stored there by this thread in this workgroup"}},
    {"local memory of another workgroup", /* local memory lives as long as its workgroup */
     "%s = (ALLOC:int32*local 0 4)\n%g = (RANGE global 0 (CONST:int32 2))\n%l = (RANGE local 1 (CONST:int32 4))\n"
     "(SINK (END %g (END %l (STORE (INDEX %s %l (CMPEQ %g (CONST:int32 0))) %l) (BARRIER)"
     " (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %g (CONST:int32 4)) %l)) (LOAD (INDEX %s %l))))))",
     {"eval: LOAD:", "element 0 of an ALLOC is read before anything was stored there in this "
                     "workgroup (thread (r1=0) of workgroup (r0=1))"}},
    {"two threads store one element", /* of global memory, in one phase */
     "%l = (RANGE local 0 (CONST:int32 4))\n"
     "(SINK (END %l (STORE (INDEX (PARAM:int32* 0) (IDIV %l (CONST:int32 2))) %l)))",
     {"eval: STORE:", "element 0 of PARAM 0 was stored by thread (r0=0) since the last BARRIER, "
                      "and thread (r0=1) stores it"}},
    {"a store and an addition to one element", /* STORE_ADDs do not race with each other, but with a STORE */
     "%l = (RANGE local 0 (CONST:int32 4))\n"
     "(SINK (END %l (STORE_ADD (INDEX (PARAM:int32* 0) (CONST:int32 0)) %l) (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0) (CMPEQ %l (CONST:int32 3))) %l)))",
     {"eval: STORE:", "element 0 of PARAM 0 was added to by thread (r0=0) since the last BARRIER, and thread (r0=3) stores it"}},
    {"an addition read back", /* a kernel reads memory as it was before it ran */
     "%l = (RANGE local 0 (CONST:int32 4))\n"
     "(SINK (END %l (STORE_ADD (INDEX (PARAM:int32* 0) (CONST:int32 0)) %l) (BARRIER)"
     " (STORE (INDEX (PARAM:int32* 0) (ADD %l (CONST:int32 1))) (LOAD (INDEX (PARAM:int32* 0) (CONST:int32 0))))))",
     {"eval: LOAD:", "element 0 was stored earlier in this run"}},
    {"2048 threads",
     "%l = (RANGE local 0 (CONST:int32 64))\n%m = (RANGE local 1 (CONST:int32 32))\n"
     "(SINK (END %l (END %m (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) %l))))",
     {"eval: END:", "a workgroup of more than 1024 threads"}},
    {"a local END not at the top",
     "%l = (RANGE local 0 (CONST:int32 2))\n%m = (RANGE local 1 (CONST:int32 2))\n"
     "(SINK (END %l (END %m (STORE (INDEX (PARAM:int32* 0) %m) %m)) (STORE (INDEX (PARAM:int32* 0) (ADD %l (CONST:int32 2))) %l)))",
     {"eval: END:", "a `local` END inside a workgroup"}},
};

static void test_rules(Ctx *ctx) {
  int32_t out[16];
  /* Each thread reads its left neighbour's store: ordered by a BARRIER, a race without. */
  const char *shift =
      "%%s = (ALLOC:int32*local 0 8)\n%%l = (RANGE local 0 (CONST:int32 8))\n"
      "%%left = (CMPLT (CONST:int32 0) %%l)\n"
      "(SINK (END %%l (STORE (INDEX %%s %%l) (MUL %%l (CONST:int32 10))) %s\n"
      "  (STORE (INDEX (PARAM:int32* 0) %%l) (LOAD (INDEX %%s (SUB %%l (CONST:int32 1)) %%left) (CONST:int32 -1)))))";
  char text[1024];
  snprintf(text, sizeof text, shift, "(BARRIER)");
  memset(out, 0, sizeof out);
  expect_run(ctx, "shift", text, NULL, 0, out, 8 * sizeof *out, NULL, 0, NULL, 0);
  for (int l = 0; l < 8; l++) CHECK(out[l] == (l ? 10 * (l - 1) : -1), "shift: out[%d] = %d", l, out[l]);
  snprintf(text, sizeof text, shift, "");
  const char *const shift_race[] = {"eval: LOAD:", "element 0 of ALLOC 0 (local) was stored by thread (r0=0) since the last BARRIER",
                                    "thread (r0=1) reads it"};
  expect_run(ctx, "shift without a barrier", text, shift_race, 3, out, 8 * sizeof *out, NULL, 0, NULL, 0);

  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
    expect_run(ctx, refused[i].name, refused[i].text, refused[i].want, 2, out, sizeof out, NULL, 0, NULL, 0);

  /* Additions from every thread of two workgroups into two elements: no race, the sums. */
  const char *adds = "%g = (RANGE global 0 (CONST:int32 2))\n%l = (RANGE local 1 (CONST:int32 8))\n"
                     "(SINK (END %g (END %l (STORE_ADD (INDEX (PARAM:int32* 0) (MOD %l (CONST:int32 2))) (ADD %l %g)))))";
  out[0] = 100, out[1] = 200;
  expect_run(ctx, "additions", adds, NULL, 0, out, 2 * sizeof *out, NULL, 0, NULL, 0);
  CHECK(out[0] == 100 + 2 * (0 + 2 + 4 + 6) + 4 && out[1] == 200 + 2 * (1 + 3 + 5 + 7) + 4, "additions: %d %d", out[0], out[1]);

  /* `reg` memory is each thread's own. */
  const char *reg =
      "%r = (ALLOC:int32*reg 0 1)\n%l = (RANGE local 0 (CONST:int32 16))\n"
      "(SINK (END %l (STORE (INDEX %r (CONST:int32 0)) (ADD %l (CONST:int32 100))) (BARRIER)"
      " (STORE (INDEX (PARAM:int32* 0) %l) (LOAD (INDEX %r (CONST:int32 0))))))";
  memset(out, 0, sizeof out);
  expect_run(ctx, "reg", reg, NULL, 0, out, sizeof out, NULL, 0, NULL, 0);
  for (int l = 0; l < 16; l++) CHECK(out[l] == 100 + l, "reg: out[%d] = %d", l, out[l]);
  /* Two threads storing one global element, a BARRIER between them: the later phase's store wins. */
  const char *ordered =
      "%l = (RANGE local 0 (CONST:int32 2))\n"
      "(SINK (END %l (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0) (CMPEQ %l (CONST:int32 1))) %l) (BARRIER)"
      " (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0) (CMPEQ %l (CONST:int32 0))) (CONST:int32 9))))";
  memset(out, 0, sizeof out);
  expect_run(ctx, "ordered stores", ordered, NULL, 0, out, sizeof out, NULL, 0, NULL, 0);
  CHECK(out[0] == 9, "ordered stores: %d", out[0]);

  /* A value is computed again after a BARRIER: one LOAD node, two values. */
  memset(out, 0, sizeof out);
  expect_run(ctx, "reload", reload_text(), NULL, 0, out, sizeof out, NULL, 0, NULL, 0);
  for (int l = 0; l < 8; l++) CHECK(out[l] == (l < 4 ? 1 : 2), "reload: out[%d] = %d", l, out[l]);

  /* A workgroup of no threads runs nothing. */
  const char *empty = "%l = (RANGE local 0 (CONST:int32 0))\n"
                      "(SINK (END %l (BARRIER) (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) %l)))";
  out[0] = 3;
  expect_run(ctx, "no threads", empty, NULL, 0, out, sizeof out, NULL, 0, NULL, 0);
  CHECK(out[0] == 3, "no threads: nothing runs");
}

/* Outside a workgroup a BARRIER runs its effects, in the evaluator and on
 * the CPU; inside one the CPU JIT refuses it. */
static void test_outside(Ctx *ctx) {
  const char *text = "%i = (RANGE loop 0 (CONST:int32 4))\n"
                     "(SINK (BARRIER (STORE (INDEX (PARAM:int32* 0) (CONST:int32 4)) (CONST:int32 5)))"
                     " (END %i (STORE (INDEX (PARAM:int32* 0) %i) %i) (BARRIER)))";
  const UOp *k = uj_parse(ctx, text, "outside");
  CHECK(k != NULL, "outside: %s", uj_error(ctx));
  if (!k) return;
  int32_t out[5] = {0};
  JitBuffers b = {1, {dt_scalar(UJ_INT32)}, {5}, {(unsigned char *)out}};
  jit_vs_eval(ctx, k, &b, NULL, NULL, 0, 0, "outside");
  expect_run(ctx, "outside", text, NULL, 0, out, sizeof out, NULL, 0, NULL, 0);
  for (int i = 0; i < 5; i++) CHECK(out[i] == (i < 4 ? i : 5), "outside: out[%d] = %d", i, out[i]);
  char *printed = uj_print(ctx, k);
  const UOp *again = printed ? uj_parse(ctx, printed, "printed") : NULL;
  CHECK(again == k, "BARRIER prints and parses back: %s", printed ? printed : uj_error(ctx));
  free(printed);
  const UOp *inside = uj_parse(ctx, row_sum_text(-1), "inside");
  uj_program *p = inside ? uj_compile(ctx, inside, "inside") : NULL;
  CHECK(!p && strstr(uj_error(ctx), "a BARRIER in a workgroup (inside a `local` RANGE) needs a target with workgroups"),
        "the CPU refuses a workgroup's BARRIER: %s", uj_error(ctx));
  if (p) uj_program_free(p);
  const UOp *bad = uj_parse(ctx, "(BARRIER (CONST:int32 1))", "value");
  CHECK(!bad && strstr(uj_error(ctx), "BARRIER follows effects (void), not int32"), "%s", uj_error(ctx));
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_row_sum(ctx);
  test_gemm(ctx);
  test_rules(ctx);
  test_outside(ctx);
  uj_ctx_free(ctx);
  return check_report("test_eval_workgroup");
}
