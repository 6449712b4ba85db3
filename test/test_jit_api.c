/* test_jit_api.c — the C host API around the CPU JIT: the program cache
 * (an equal kernel compiles once, counted references), every error path of
 * uj_compile / uj_run / uj_emit (a message and a status, never an abort),
 * and 10,000 compile/free cycles without growth of the process. */
#include <stdlib.h>

#include "check.h"
#include "uop/uop.h"

static const char *add_one =
    "%i = (RANGE loop 0 (DEFINE_VAR:int32 n 0 64))\n"
    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (ADD (LOAD (INDEX (PARAM:float32* 1) %i)) (CONST:float32 1.0)))))";

static void test_cache(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, add_one, "add_one");
  uj_program *a = uj_compile(ctx, k, "add_one"), *b = uj_compile(ctx, k, "other_name");
  CHECK(a && a == b, "an equal kernel gives the cached program");
  CHECK(uj_program_nparams(a) == 2 && uj_program_nvars(a) == 1 && strcmp(uj_program_var_name(a, 0), "n") == 0,
        "signature: 2 params, var n");
  uj_dtype dt;
  bool stored = false;
  int64_t lo = -1, hi = -1;
  CHECK(uj_program_param(a, 0, &dt, &stored) && stored && dt.scalar == UJ_FLOAT32 && dt.space == UJ_AS_GLOBAL,
        "slot 0: float32*, stored");
  CHECK(uj_program_param(a, 1, &dt, &stored) && !stored && !uj_program_param(a, 2, &dt, &stored), "slot 1 loaded; no 2");
  CHECK(uj_program_var(a, 0, &dt, &lo, &hi) && lo == 0 && hi == 64 && dt.scalar == UJ_INT32 && !uj_program_var(a, 1, NULL, NULL, NULL),
        "var n: int32 in [0, 64]");
  uj_program_free(b); /* one reference left */
  float x[4] = {1, 2, 3, 4}, y[4] = {0};
  void *args[2] = {y, x};
  int64_t n = 4;
  CHECK(uj_run(a, args, 2, &n, 1) == UJ_OK && y[0] == 2 && y[3] == 5, "still runs after one free: %g %g", y[0], y[3]);
  uj_program_free(a);
  uj_program *c = uj_compile(ctx, k, NULL);
  CHECK(c != NULL, "compiles again after the last free: %s", uj_error(ctx));
  uj_program_free(c);
}

static void expect_compile_error(Ctx *ctx, const char *text, const char *name, const char *want) {
  const UOp *k = uj_parse(ctx, text, "bad");
  CHECK(k != NULL, "parses: %s", uj_error(ctx));
  uj_program *p = k ? uj_compile(ctx, k, name) : NULL;
  CHECK(!p && strstr(uj_error(ctx), want), "'%s': want '%s', got '%s'", text, want, uj_error(ctx));
  uj_program_free(p);
}

static void test_compile_errors(Ctx *ctx) {
  expect_compile_error(ctx, "(ADD (CONST:int32 1) (CONST:int32 2))", NULL, "not a SINK, END or STORE");
  expect_compile_error(ctx, "(SINK (CONST:int32 1))", NULL, "a kernel's SINK and END hold STOREs and ENDs");
  expect_compile_error(ctx, "(SINK (STORE (BUFFER:int32* 0 4 CPU) (CONST:int32 1)))", NULL, "BUFFER cannot be compiled");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32* 0) (CAST:int32 (LOAD (PARAM:float32* 0)))))", NULL,
                       "kernel: PARAM slot 0 is used as float32* and as int32*");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32* 0) (RANGE loop 0 (CONST:int32 4))))", NULL,
                       "RANGE is used outside its END");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32*local 0) (CONST:int32 1)))", NULL,
                       "PARAM slot 0 points into local memory");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32* 0) (CONST:int32 1)))", "9bad", "is not [A-Za-z_]");
  expect_compile_error(ctx, "%i = (RANGE loop 0 (CONST:int32 4))\n(SINK (END %i (END %i (STORE (PARAM:int32* 0) %i))))",
                       NULL, "its RANGE is already open");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32* 0) (ADD (DEFINE_VAR:int32 n 0 4) (DEFINE_VAR:int32 n 0 5))))",
                       NULL, "variable n is declared twice, differently");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:int32* 5000) (CONST:int32 1)))", NULL,
                       "PARAM slot 5000 is above the limit 4095");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:float32* 0) (INDEX (EXPAND 2 2 (RESHAPE 1 1 (CONST:float32 1.0)))"
                       " (CONST:int32 0) (CONST:int32 1))))", NULL, "kernel: RESHAPE is a tensor op");
  expect_compile_error(ctx, "(SINK (STORE (PARAM:float32* 0) (REDUCE ADD 0 (EXPAND 4 (RESHAPE 1 (CONST:float32 1.0))))))",
                       NULL, "kernel: RESHAPE is a tensor op");
  /* 65 nested loops */
  char deep[8192] = "", *at = deep;
  for (int i = 0; i < 65; i++) at += sprintf(at, "%%r%d = (RANGE loop %d (CONST:int32 2))\n", i, i);
  at += sprintf(at, "(SINK ");
  for (int i = 0; i < 65; i++) at += sprintf(at, "(END %%r%d ", i);
  at += sprintf(at, "(STORE (PARAM:int32* 0) (CONST:int32 1))");
  for (int i = 0; i <= 65; i++) at += sprintf(at, ")");
  expect_compile_error(ctx, deep, NULL, "loops nest deeper than 64");
  CHECK(!uj_compile(ctx, NULL, NULL) && strstr(uj_error(ctx), "no kernel"), "NULL kernel: %s", uj_error(ctx));
  Ctx *other = uj_ctx_new();
  const UOp *k = uj_parse(other, "(SINK (STORE (PARAM:int32* 0) (CONST:int32 1)))", "other");
  CHECK(!uj_compile(ctx, k, NULL) && strstr(uj_error(ctx), "not a node of this context"), "foreign kernel: %s",
        uj_error(ctx));
  uj_ctx_free(other);
}

/* The signature is the kernel's as written: a variable or slot the
 * simplifier drops is still passed. */
static void test_signature_as_written(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, "(SINK (STORE (INDEX (PARAM:int32* 0) (CONST:int32 0)) (ADD (MUL (DEFINE_VAR:int32 a 0 10)"
                               " (CONST:int32 0)) (ADD (DEFINE_VAR:int32 b 0 10) (MUL (CAST:int32 (LOAD (PARAM:int8* 1)))"
                               " (CONST:int32 0))))))", "sig");
  uj_program *p = k ? uj_compile(ctx, k, "sig") : NULL;
  int32_t out = -1;
  int8_t unused = 5;
  void *args[2] = {&out, &unused};
  int64_t vars[2] = {3, 7};
  CHECK(p && uj_program_nparams(p) == 2 && uj_program_nvars(p) == 2, "2 params, 2 vars: %s", uj_error(ctx));
  CHECK(p && uj_run(p, args, 2, vars, 2) == UJ_OK && out == 7, "runs: %d %s", out, uj_error(ctx));
  uj_program_free(p);
  char *ptx = k ? uj_emit(ctx, k, UJ_EMIT_PTX, NULL, NULL) : NULL;
  CHECK(ptx && strstr(ptx, "kernel_param_3"), "PTX has 4 params (2 slots, 2 vars)");
  free(ptx);
  char *ir = k ? uj_emit(ctx, k, UJ_EMIT_IR_OPT, NULL, NULL) : NULL;
  CHECK(ir && strstr(ir, "target datalayout"), "the optimized IR has the target's data layout");
  free(ir);
}

static void test_run_errors(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, add_one, "add_one");
  uj_program *p = uj_compile(ctx, k, "add_one");
  float x[4] = {0}, y[4] = {0};
  void *args[2] = {y, x}, *null_args[2] = {y, NULL};
  int64_t n = 4, big = 65;
  CHECK(uj_run(p, args, 1, &n, 1) == UJ_ERR_ARG && strstr(uj_error(ctx), "takes 2 args, got 1"), "%s", uj_error(ctx));
  CHECK(uj_run(p, args, 2, NULL, 0) == UJ_ERR_ARG && strstr(uj_error(ctx), "takes 1 variables, got 0"), "%s", uj_error(ctx));
  CHECK(uj_run(p, null_args, 2, &n, 1) == UJ_ERR_ARG && strstr(uj_error(ctx), "arg 1 (PARAM slot 1) is NULL"), "%s",
        uj_error(ctx));
  CHECK(uj_run(p, args, 2, &big, 1) == UJ_ERR_ARG && strstr(uj_error(ctx), "variable n = 65 is outside [0, 64]"), "%s",
        uj_error(ctx));
  CHECK(uj_run(NULL, args, 2, &n, 1) == UJ_ERR_ARG, "NULL program");
  uj_program_free(p);
  uj_program_free(NULL);
}

static void test_emit_errors(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, add_one, "add_one");
  CHECK(!uj_emit(ctx, k, UJ_EMIT_COUNT, NULL, NULL) && strstr(uj_error(ctx), "unknown kind"), "%s", uj_error(ctx));
  CHECK(!uj_emit(ctx, k, UJ_EMIT_IR, "riscv", NULL) && strstr(uj_error(ctx), "unknown arch 'riscv'"), "%s", uj_error(ctx));
  CHECK(!uj_emit(ctx, k, UJ_EMIT_ASM, "z80", NULL) && strstr(uj_error(ctx), "unknown arch 'z80'"), "%s", uj_error(ctx));
  const UOp *v = uj_parse(ctx, "(SINK (CONST:int32 1))", "v");
  CHECK(!uj_emit(ctx, v, UJ_EMIT_PTX, NULL, NULL) && strstr(uj_error(ctx), "hold STOREs and ENDs"), "%s", uj_error(ctx));
  char *ir = uj_emit(ctx, k, UJ_EMIT_IR, NULL, NULL), *opt = uj_emit(ctx, k, UJ_EMIT_IR_OPT, NULL, NULL);
  char *nv_ir = uj_emit(ctx, k, UJ_EMIT_IR, "sm_90", NULL), *gfx_ir = uj_emit(ctx, k, UJ_EMIT_IR_OPT, "gfx942", NULL);
  CHECK(ir && strstr(ir, "define void @kernel(ptr") && strstr(ir, "noalias"), "IR has the entry and noalias");
  CHECK(opt && strstr(opt, "<8 x float>"), "optimized IR is vectorised (%s)", opt ? "no <8 x float>" : uj_error(ctx));
  CHECK(nv_ir && strstr(nv_ir, "ptx_kernel") && strstr(nv_ir, "addrspace(1)"), "NVPTX IR: kernel CC, global pointers");
  CHECK(gfx_ir && strstr(gfx_ir, "amdgpu_kernel") && strstr(gfx_ir, "gfx942"), "AMDGPU IR: kernel CC, gfx942");
  free(ir), free(opt), free(nv_ir), free(gfx_ir);
}

/* Resident set in KiB (Linux), 0 when unknown. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kib;
}

/* Each cycle compiles a freed kernel again (a cache miss) and frees it:
 * the JIT's memory for it must go back. */
static void test_cycles(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, add_one, "add_one");
  const char *env = getenv("UJ_JIT_CYCLES");
#ifdef UJ_SANITIZE
  int cycles = env ? atoi(env) : 1000; /* leaks are LeakSanitizer's to find */
#else
  int cycles = env ? atoi(env) : 10000;
#endif
  long after_warmup = 0;
  int failures = 0;
  for (int i = 0; i < cycles && failures < 3; i++) {
    uj_program *p = uj_compile(ctx, k, "cycle");
    if (!p) failures++;
    CHECK(p != NULL, "cycle %d: %s", i, uj_error(ctx));
    uj_program_free(p);
    if (i == cycles / 10) after_warmup = rss_kib();
  }
  long growth = rss_kib() - after_warmup;
  printf("test_jit_api: %d compile/free cycles, RSS growth after the first tenth: %ld KiB\n", cycles, growth);
#ifndef UJ_SANITIZE /* ASan's quarantine holds freed memory: RSS says nothing there */
  CHECK(after_warmup > 0 && growth < 8 * 1024, "RSS grew by %ld KiB over %d cycles", growth, cycles);
#endif
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_cache(ctx);
  test_compile_errors(ctx);
  test_signature_as_written(ctx);
  test_run_errors(ctx);
  test_emit_errors(ctx);
  test_cycles(ctx);
  uj_ctx_free(ctx);
  return check_report("test_jit_api");
}
