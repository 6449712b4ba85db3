/* test_alloc.c — ALLOC, a kernel's own memory: the op's type rule and text
 * form, the evaluator (stores land at once; reading an element nothing was
 * stored to is an error), the CPU JIT diffed against it (register and
 * local memory, loops, a tile reused across an outer loop), and the
 * per-target limits. GPU emission of ALLOC is in test_gpu_emit.c. */
#include <stdlib.h>

#include "jit_util.h"
#include "uop/spec.h"

/* out[j] = 2 * in[7 - j] through an 8-element ALLOC in `space`. */
static const char *reverse_text(const char *space) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "%%a = (ALLOC:float32*%s 0 8)\n"
           "%%i = (RANGE loop 0 (CONST:int32 8))\n%%j = (RANGE loop 1 (CONST:int32 8))\n"
           "(SINK (END %%i (STORE (INDEX %%a %%i) (MUL (LOAD (INDEX (PARAM:float32* 1) %%i)) (CONST:float32 2.0))))\n"
           "      (END %%j (STORE (INDEX (PARAM:float32* 0) %%j) (LOAD (INDEX %%a (SUB (CONST:int32 7) %%j))))))",
           space);
  return buf;
}

static void test_reverse(Ctx *ctx, const char *space) {
  const UOp *k = uj_parse(ctx, reverse_text(space), space);
  CHECK(k != NULL, "%s: %s", space, uj_error(ctx));
  if (!k) return;
  float in[8], out[8] = {0};
  for (int i = 0; i < 8; i++) in[i] = (float)i + 0.25f;
  JitBuffers b = {2, {dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32)}, {8, 8}, {(unsigned char *)out, (unsigned char *)in}};
  jit_vs_eval(ctx, k, &b, NULL, NULL, 0, 0, space);
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, out, sizeof out), eval_bind_param(ev, 1, in, sizeof in);
  CHECK(eval_run(ev, k), "%s", uj_error(ctx));
  for (int j = 0; j < 8; j++) CHECK(out[j] == 2 * in[7 - j], "%s: out[%d] = %g", space, j, out[j]);
  eval_free(ev);
}

/* A row staged in a tile, reused by every column of an outer loop: the
 * tile is rewritten each row, and sums read it back. */
static void test_tile(Ctx *ctx) {
  const char *text =
      "%t = (ALLOC:float32*reg 3 16)\n"
      "%r = (RANGE loop 0 (CONST:int32 5))\n%k = (RANGE loop 1 (CONST:int32 16))\n"
      "%c = (RANGE loop 2 (CONST:int32 3))\n%q = (RANGE reduce 3 (CONST:int32 16))\n"
      "(SINK (END %r (END %k (STORE (INDEX %t %k) (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %r (CONST:int32 16)) %k)))))\n"
      "              (END %c (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %r (CONST:int32 3)) %c))\n"
      "                 (REDUCE ADD (MUL (LOAD (INDEX %t %q)) (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %q (CONST:int32 3)) %c)))) %q)))))";
  const UOp *k = uj_parse(ctx, text, "tile");
  CHECK(k != NULL, "tile: %s", uj_error(ctx));
  if (!k) return;
  float a[80], w[48], out[15] = {0};
  for (int i = 0; i < 80; i++) a[i] = (float)((i * 7) % 11) - 5;
  for (int i = 0; i < 48; i++) w[i] = (float)((i * 5) % 9) * 0.5f;
  JitBuffers b = {3, {dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32)}, {15, 80, 48},
                  {(unsigned char *)out, (unsigned char *)a, (unsigned char *)w}};
  jit_vs_eval(ctx, k, &b, NULL, NULL, 0, 0, "tile");
}

static void test_errors(Ctx *ctx) {
  const UOp *bad = uj_parse(ctx, "(ALLOC:float32* 0 8)", "global");
  CHECK(!bad && strstr(uj_error(ctx), "ALLOC must be a pointer into local or register memory"), "%s", uj_error(ctx));
  bad = uj_parse(ctx, "(ALLOC:float32*reg 0 0)", "empty");
  CHECK(!bad && strstr(uj_error(ctx), "ALLOC of 0 elements"), "%s", uj_error(ctx));
  bad = uj_parse(ctx, "(ALLOC:float32*reg 8)", "one int");
  CHECK(!bad && strstr(uj_error(ctx), "(id, element count)"), "%s", uj_error(ctx));
  const UOp *early = uj_parse(ctx,
                              "%a = (ALLOC:int32*reg 0 4)\n"
                              "(SINK (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) (LOAD (INDEX %a (CONST:int32 2)))))",
                              "early");
  int32_t out[1] = {7};
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, out, sizeof out);
  CHECK(early && !eval_run(ev, early) && strstr(uj_error(ctx), "element 2 of an ALLOC is read before anything was stored there"),
        "%s", uj_error(ctx));
  CHECK(out[0] == 7, "memory untouched after an error");
  eval_free(ev);
  const UOp *oob = uj_parse(ctx,
                            "%a = (ALLOC:int32*reg 0 4)\n"
                            "(SINK (STORE (INDEX %a (CONST:int32 4)) (CONST:int32 1)))",
                            "oob");
  ev = eval_new(ctx);
  CHECK(oob && !eval_run(ev, oob) && strstr(uj_error(ctx), "element 4 is out of bounds [0, 4)"), "%s", uj_error(ctx));
  eval_free(ev);
  const UOp *huge = uj_parse(ctx,
                             "%a = (ALLOC:float32*reg 0 1000000)\n"
                             "(SINK (STORE (INDEX %a (CONST:int32 0)) (CONST:float32 1.0)))",
                             "huge");
  CHECK(huge && !uj_compile(ctx, huge, "huge") && strstr(uj_error(ctx), "4000000 bytes of stack memory; this target allows 1048576"),
        "%s", uj_error(ctx));
  char *ptx = huge ? uj_emit(ctx, uj_parse(ctx, "%a = (ALLOC:float32*local 0 20000)\n"
                                                "(SINK (STORE (INDEX %a (CONST:int32 0)) (CONST:float32 1.0)))", "shared"),
                             UJ_EMIT_PTX, NULL, NULL)
                       : NULL;
  CHECK(!ptx && strstr(uj_error(ctx), "80000 bytes of workgroup memory; this target allows 49152"), "%s", uj_error(ctx));
  free(ptx);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *a = uj_parse(ctx, "(ALLOC:float16x4*local 2 32)", "text");
  char *text = a ? uj_print(ctx, a) : NULL;
  CHECK_STR(text, "(ALLOC:float16x4*local 2 32)\n", "the text form round-trips");
  free(text);
  test_reverse(ctx, "reg");
  test_reverse(ctx, "local");
  test_tile(ctx);
  test_errors(ctx);
  uj_ctx_free(ctx);
  return check_report("test_alloc");
}
