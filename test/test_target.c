/* test_target.c — targets as data (lib/opt/target.h, docs/opt.md
 * "Targets"): the rows (host CPU widths, sm_90, gfx942) and what the
 * optimizer reads from them. A GEMM and a GEMV shaped for the CPU get the
 * CPU passes (a tile's panel staged in a `local` ALLOC, stream's `reg`
 * accumulators); shaped for a GPU they get none of them: no ALLOC over the
 * workgroup's shared memory, no per-thread accumulators sized for a CPU
 * core, and the kernel emits PTX for sm_90 and GCN for gfx942. Shaped for
 * either, a small GEMM computes what it did, bit for bit. Reductions over
 * rows too few for a thread each become workgroups on a GPU (workgroup.c):
 * the evaluator runs them within the bound (ADD) or bit for bit (MAX,
 * ints), and they emit barriers. */
#include <stdio.h>
#include <string.h>

#include "opt/opt.h"
#include "opt_util.h"

static const char *matmul_text(int64_t m, int64_t k, int64_t n) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "%%i = (RANGE loop 0 (CONST:int64 %lld))\n%%j = (RANGE loop 1 (CONST:int64 %lld))\n"
           "%%k = (RANGE reduce 2 (CONST:int64 %lld))\n"
           "%%a = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int64 %lld)) %%k)))\n"
           "%%b = (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %%k (CONST:int64 %lld)) %%j)))\n"
           "(SINK (END %%i (END %%j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%i (CONST:int64 %lld)) %%j))"
           " (REDUCE MULACC (MUL %%a %%b) %%k)))))",
           (long long)m, (long long)n, (long long)k, (long long)k, (long long)n, (long long)n);
  return buf;
}

static void check_rows(void) {
  const TargetDesc *sm90 = target_desc_find("sm_90"), *gfx = target_desc_find("gfx942");
  CHECK(sm90 && sm90->kind == TARGET_DESC_GPU && sm90->warp == 32 && sm90->shared_bytes == 48 << 10 &&
            sm90->index_bits == 32 && sm90->reassociate,
        "sm_90: a GPU, warp 32, 48 KiB shared, 32-bit indices, may regroup sums");
  CHECK(gfx && gfx->kind == TARGET_DESC_GPU && gfx->warp == 64 && gfx->shared_bytes == 64 << 10,
        "gfx942: a GPU, wavefront 64, 64 KiB of LDS");
  CHECK(target_desc_cpu(64) == target_desc_find("cpu-avx512") && target_desc_cpu(32) == target_desc_find("cpu-avx2") &&
            target_desc_cpu(16) == target_desc_find("cpu-sse") && target_desc_cpu(8) == target_desc_cpu(16),
        "the CPU rows by width");
  CHECK(target_desc_cpu(64)->kind == TARGET_DESC_CPU && target_desc_cpu(64)->reassociate &&
            target_desc_cpu(64)->index_bits == 64,
        "the CPU may regroup float sums (its lanes), 64-bit indices");
  CHECK(target_panel_bytes(target_desc_cpu(64)) == 512 << 10 && target_panel_bytes(sm90) == 48 << 10,
        "panels: half the CPU's 1 MiB stack; a GPU workgroup's shared memory");
  CHECK(target_desc_find("sm_42") == NULL && target_desc_find(NULL) == NULL, "an unknown name: none");
}

/* The largest ALLOC of a space ("local", "reg") in k's text, in bytes; -1: none. */
static int64_t largest_alloc(Ctx *ctx, const UOp *k, const char *space) {
  char *text = uj_print(ctx, k), pat[32];
  int64_t most = -1;
  snprintf(pat, sizeof pat, "*%s ", space);
  for (const char *p = text; p && (p = strstr(p, "(ALLOC:")); p++) {
    const char *sp = strstr(p, pat), *close = strchr(p, ')');
    long long id, n;
    if (!sp || !close || sp > close || sscanf(sp + strlen(pat), "%lld %lld", &id, &n) != 2) continue;
    unsigned lanes = 1;
    sscanf(p + 7, "float32x%u", &lanes); /* float32 here, or its vectors */
    if (n * 4 * lanes > most) most = n * 4 * lanes;
  }
  free(text);
  return most;
}

static void check_shaping(Ctx *ctx, const char *name, const char *text, const char *cpu_space) {
  const UOp *k = uj_parse(ctx, text, name);
  CHECK(k != NULL, "%s parses: %s", name, uj_error(ctx));
  if (!k) return;
  const UOp *cpu = opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)});
  CHECK(cpu && largest_alloc(ctx, cpu, cpu_space) > 0, "%s for the CPU: the CPU pass's %s ALLOC", name, cpu_space);
  const char *gpus[] = {"sm_90", "gfx942"};
  for (int g = 0; g < 2; g++) {
    const TargetDesc *t = target_desc_find(gpus[g]);
    const UOp *up = opt_kernel(ctx, k, &(OptTarget){.desc = t});
    CHECK(up != NULL, "%s for %s: %s", name, gpus[g], uj_error(ctx));
    if (!up) continue;
    int64_t local = largest_alloc(ctx, up, "local"), reg = largest_alloc(ctx, up, "reg");
    CHECK(local <= (int64_t)t->shared_bytes && reg <= 256, "%s for %s: %lld bytes of local ALLOC, %lld of reg", name,
          gpus[g], (long long)local, (long long)reg); /* reg: a GEMM thread's 8 x 8 accumulators at most */
    size_t len = 0;
    char *code = uj_emit(ctx, up, g ? UJ_EMIT_AMDGCN : UJ_EMIT_PTX, gpus[g], &len);
    CHECK(code && len > 0, "%s shaped for %s emits: %s", name, gpus[g], code ? "" : uj_error(ctx));
    free(code);
  }
}

/* Shaped for each target, a small GEMM computes what it did: its 24-step
 * sums are under a warp, so the GPU list keeps their order too. */
static void check_same_values(Ctx *ctx) {
  const UOp *k = uj_parse(ctx, matmul_text(16, 24, 40), "small gemm");
  const char *names[] = {"cpu-avx512", "cpu-sse", "sm_90", "gfx942"};
  DType f = dt_scalar(UJ_FLOAT32);
  for (int i = 0; k && i < 4; i++) {
    const UOp *up = opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_find(names[i])});
    JitBuffers b = {3, {f, f, f}, {16 * 40, 16 * 24, 24 * 40}, {fill(f, 16 * 40, 0), fill(f, 16 * 24, 1), fill(f, 24 * 40, 2)}};
    char what[64];
    snprintf(what, sizeof what, "small gemm shaped for %s", names[i]);
    CHECK(up != NULL, "%s: %s", what, uj_error(ctx));
    check_same_buffers(ctx, k, up, &b, what);
  }
}

/* The evaluator on up (k shaped for a GPU) against the evaluator on k:
 * within k's bounds when bounded (up regroups a float reduction), else
 * bit for bit; frees b's memory. */
static void check_eval_of(Ctx *ctx, const UOp *k, const UOp *up, JitBuffers *b, bool bounded, const char *what) {
  unsigned char *got[JIT_MAX_SLOTS] = {0}, *want[JIT_MAX_SLOTS] = {0};
  double *errs[JIT_MAX_SLOTS] = {0};
  bool ok = true;
  for (int pass = 0; pass < 2; pass++) {
    Eval *ev = eval_new(ctx);
    eval_track_bounds(ev, bounded && pass == 0);
    for (int i = 0; i < b->n; i++) {
      size_t bytes = b->count[i] * elem_bytes(b->dtype[i]);
      unsigned char **m = pass ? got : want;
      m[i] = malloc(bytes + 1), memcpy(m[i], b->init[i], bytes);
      eval_bind_param(ev, i, m[i], bytes);
      if (bounded && pass == 0) errs[i] = calloc(b->count[i] * b->dtype[i].lanes + 1, sizeof(double)), eval_bind_bounds(ev, i, errs[i]);
    }
    ok = ok && eval_run(ev, pass ? up : k);
    CHECK(ok, "%s: the evaluator runs it: %s", what, uj_error(ctx));
    eval_free(ev);
  }
  if (ok) jit_compare(b, got, want, 0, bounded ? errs : NULL, what);
  for (int i = 0; i < b->n; i++) free(got[i]), free(want[i]), free(errs[i]), free(b->init[i]);
}

static size_t count_op(Ctx *ctx, const UOp *k, Op op, const char *range_kind_name) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, k, &nodes), count = 0;
  for (size_t i = 0; i < n; i++)
    count += nodes[i]->op == op && (!range_kind_name || strcmp(nodes[i]->name, range_kind_name) == 0);
  free(nodes);
  return count;
}

/* A reduction per output with too few outputs for a thread each, shaped
 * for a GPU, is a workgroup per output with a tree in local memory: the
 * evaluator runs it race-free, a float sum within the bound, a max and an
 * int sum bit for bit; a kernel with many outputs keeps a thread each. */
static void check_workgroups(Ctx *ctx) {
  char text[1024];
  const char *ops[] = {"ADD", "MAX", "ADD", "MULACC"};
  const char *types[] = {"float32", "float32", "int32", "float32"};
  for (int c = 0; c < 4; c++) {
    /* rows x cols, cols not a multiple of 256: the last step's threads add the identity */
    int rows = 48, cols = c == 3 ? 512 : 1000;
    snprintf(text, sizeof text,
             "%%r = (RANGE loop 0 (CONST:int32 %d))\n%%c = (RANGE reduce 1 (CONST:int32 %d))\n"
             "%%x = (LOAD (INDEX (PARAM:%s* 1) (ADD (MUL %%r (CONST:int32 %d)) %%c)))\n"
             "(SINK (END %%r (STORE (INDEX (PARAM:%s* 0) %%r) (ADD (REDUCE %s %s %%c) (CAST:%s %%r)))))",
             rows, cols, types[c], cols, types[c], ops[c],
             c == 3 ? "(MUL %x (LOAD (INDEX (PARAM:float32* 2) %c)))" : "%x", types[c]);
    const UOp *k = uj_parse(ctx, text, "rows");
    CHECK(k != NULL, "rows: %s", uj_error(ctx));
    const char *gpus[] = {"sm_90", "gfx942"};
    for (int g = 0; k && g < 2; g++) {
      const TargetDesc *t = target_desc_find(gpus[g]);
      const UOp *up = opt_kernel(ctx, k, &(OptTarget){.desc = t});
      char what[96];
      snprintf(what, sizeof what, "%s %s over rows of %d shaped for %s", types[c], ops[c], cols, gpus[g]);
      CHECK(up && count_op(ctx, up, UJ_OP_RANGE, "local") == 1 && count_op(ctx, up, UJ_OP_BARRIER, NULL) == 1 &&
                count_op(ctx, up, UJ_OP_RANGE, "global") == 1,
            "%s: a workgroup per row, a BARRIER between tree levels", what);
      DType d = types[c][0] == 'i' ? dt_scalar(UJ_INT32) : dt_scalar(UJ_FLOAT32);
      JitBuffers b = {c == 3 ? 3 : 2, {d, d, d}, {(size_t)rows, (size_t)rows * (size_t)cols, (size_t)cols},
                      {fill(d, (size_t)rows, 0), fill_rounding(d, (size_t)rows * (size_t)cols, 5), fill_rounding(d, (size_t)cols, 6)}};
      if (c == 2) free(b.init[1]), b.init[1] = fill(d, (size_t)rows * (size_t)cols, 5);
      if (c != 3) free(b.init[2]);
      if (up) check_eval_of(ctx, k, up, &b, c == 0 || c == 3, what);
      else for (int i = 0; i < b.n; i++) free(b.init[i]);
      size_t len = 0;
      char *code = up ? uj_emit(ctx, up, g ? UJ_EMIT_AMDGCN : UJ_EMIT_PTX, gpus[g], &len) : NULL;
      CHECK(code && strstr(code, g ? "s_barrier" : "bar.sync"), "%s emits a barrier: %s", what, code ? "" : uj_error(ctx));
      free(code);
    }
  }
  /* the same kernel over many rows: a thread per row, no workgroup */
  const UOp *many = uj_parse(ctx, "%r = (RANGE loop 0 (CONST:int32 1048576))\n%c = (RANGE reduce 1 (CONST:int32 64))\n"
                                  "(SINK (END %r (STORE (INDEX (PARAM:float32* 0) %r) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1)"
                                  " (ADD (MUL %r (CONST:int32 64)) %c))) %c))))", "many rows");
  const UOp *up = many ? opt_kernel(ctx, many, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
  CHECK(up && count_op(ctx, up, UJ_OP_BARRIER, NULL) == 0, "a million rows: a thread each");
  /* a whole sum to one value: one workgroup */
  const UOp *all = uj_parse(ctx, "%c = (RANGE reduce 0 (CONST:int32 5000))\n"
                                 "(SINK (STORE (PARAM:float32* 0) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) %c)) %c)))", "all");
  up = all ? opt_kernel(ctx, all, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
  CHECK(up && count_op(ctx, up, UJ_OP_RANGE, "local") == 1, "a whole sum: one workgroup");
  DType f = dt_scalar(UJ_FLOAT32);
  JitBuffers b = {2, {f, f}, {1, 5000}, {fill(f, 1, 0), fill_rounding(f, 5000, 9)}};
  if (up) check_eval_of(ctx, all, up, &b, true, "a whole sum shaped for sm_90");
  else free(b.init[0]), free(b.init[1]);
  /* the CPU never gets one */
  up = all ? opt_kernel(ctx, all, &(OptTarget){.desc = target_desc_cpu(64)}) : NULL;
  CHECK(up && count_op(ctx, up, UJ_OP_RANGE, "local") == 0, "the CPU: no workgroup");
}

/* A row's outputs after its REDUCEs (a softmax: max, then the sum of
 * exp(x - max) that reads it; a layernorm: mean, then the variance that
 * reads it, then 1 / sqrt(var + eps)), fused, shaped for a GPU: one
 * workgroup a row, each REDUCE a tree in a `local` ALLOC of its own read
 * by every thread after a BARRIER, the row's scalars in `reg` ALLOCs,
 * the outputs shared out in a `loop`; the evaluator runs it race-free and
 * within the bound; a row too long for one workgroup is left alone. */
static void check_row_groups(Ctx *ctx) {
  static const char *const rows[2] = {
      "%%i = (RANGE loop 0 (CONST:int32 %d))\n%%j = (RANGE loop 1 (CONST:int32 %d))\n"
      "%%a = (RANGE reduce 2 (CONST:int32 %d))\n%%b = (RANGE reduce 3 (CONST:int32 %d))\n"
      "%%m = (REDUCE MAX (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%a))) %%a)\n"
      "%%s = (REDUCE ADD (EXP2 (SUB (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%b))) %%m)) %%b)\n"
      "(SINK (END %%i (END %%j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%i (CONST:int32 %d)) %%j))"
      " (FDIV (EXP2 (SUB (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%j))) %%m)) %%s)))))",
      "%%i = (RANGE loop 0 (CONST:int32 %d))\n%%j = (RANGE loop 1 (CONST:int32 %d))\n"
      "%%a = (RANGE reduce 2 (CONST:int32 %d))\n%%b = (RANGE reduce 3 (CONST:int32 %d))\n"
      "%%m = (FDIV (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%a))) %%a) (CONST:float32 %d.0))\n"
      "%%e = (SUB (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%b))) %%m)\n"
      "%%v = (FDIV (REDUCE MULACC (MUL %%e %%e) %%b) (CONST:float32 %d.0))\n"
      "(SINK (END %%i (END %%j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%i (CONST:int32 %d)) %%j))"
      " (FDIV (SUB (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%i (CONST:int32 %d)) %%j))) %%m)"
      " (SQRT (ADD %%v (CONST:float32 0.00001))))))))"};
  const char *names[2] = {"softmax", "layernorm"};
  const char *gpus[2] = {"sm_90", "gfx942"};
  for (int r = 0; r < 2; r++) {
    int n = 70, m = 2; /* the evaluator recomputes the unshaped kernel's REDUCEs per output: n^3 m steps */
    char text[2048];
    if (r == 0) snprintf(text, sizeof text, rows[0], m, n, n, n, n, n, n, n);
    else snprintf(text, sizeof text, rows[1], m, n, n, n, n, n, n, n, n, n);
    const UOp *k = uj_parse(ctx, text, names[r]);
    CHECK(k != NULL, "%s: %s", names[r], uj_error(ctx));
    for (int g = 0; k && g < 2; g++) {
      const UOp *up = opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_find(gpus[g])});
      char what[96];
      snprintf(what, sizeof what, "%s rows of %d shaped for %s", names[r], n, gpus[g]);
      CHECK(up && count_op(ctx, up, UJ_OP_RANGE, "local") == 1 && count_op(ctx, up, UJ_OP_RANGE, "global") == 1 &&
                count_op(ctx, up, UJ_OP_RANGE, "loop") == 1 && count_op(ctx, up, UJ_OP_BARRIER, NULL) == 1,
            "%s: a workgroup a row, the outputs a loop of its threads", what);
      const UOp **nodes = NULL;
      size_t nn = up ? uop_toposort(ctx, up, &nodes) : 0, local = 0, reg = 0;
      for (size_t i = 0; i < nn; i++)
        if (nodes[i]->op == UJ_OP_ALLOC) local += nodes[i]->dtype.space == UJ_AS_LOCAL, reg += nodes[i]->dtype.space == UJ_AS_REG;
      free(nodes);
      CHECK(local == 2 && reg == (size_t)(r == 0 ? 0 : 2), "%s: %zu local ALLOCs (2: a REDUCE each), %zu reg (the row's scalars)",
            what, local, reg);
      DType f = dt_scalar(UJ_FLOAT32);
      JitBuffers b = {2, {f, f}, {(size_t)(m * n), (size_t)(m * n)}, {fill(f, (size_t)(m * n), 0), fill_rounding(f, (size_t)(m * n), 7)}};
      if (up) check_eval_of(ctx, k, up, &b, true, what);
      else free(b.init[0]), free(b.init[1]);
      size_t len = 0;
      char *code = up ? uj_emit(ctx, up, g ? UJ_EMIT_AMDGCN : UJ_EMIT_PTX, gpus[g], &len) : NULL;
      CHECK(code && len > 0, "%s emits: %s", what, code ? "" : uj_error(ctx));
      free(code);
    }
  }
  /* a REDUCE inside another's loop (it reads the outer one's RANGE): not a row's REDUCEs, no workgroup for
   * both (the inner one's partials would read j outside the REDUCE binding it) */
  const UOp *nested = uj_parse(ctx, "%i = (RANGE loop 0 (CONST:int32 4))\n%j = (RANGE reduce 1 (CONST:int32 64))\n"
                                    "%k = (RANGE reduce 2 (CONST:int32 64))\n"
                                    "%y = (REDUCE ADD (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL (ADD (MUL %i (CONST:int32 64)) %j)"
                                    " (CONST:int32 64)) %k))) %k)\n"
                                    "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE ADD (MUL (LOAD (INDEX"
                                    " (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 64)) %j))) %y) %j))))", "nested");
  const UOp *nup = nested ? opt_kernel(ctx, nested, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
  CHECK(nup != NULL, "nested sums shaped for sm_90: %s", uj_error(ctx));
  DType f = dt_scalar(UJ_FLOAT32);
  JitBuffers nb = {3, {f, f, f}, {4, 256, 16384}, {fill(f, 4, 0), fill_rounding(f, 256, 3), fill_rounding(f, 16384, 4)}};
  if (nup) check_eval_of(ctx, nested, nup, &nb, true, "nested sums shaped for sm_90");
  else for (int i = 0; i < 3; i++) free(nb.init[i]);
  char text[2048];
  snprintf(text, sizeof text, rows[0], 2, 20000, 20000, 20000, 20000, 20000, 20000, 20000);
  const UOp *wide = uj_parse(ctx, text, "wide softmax");
  const UOp *up = wide ? opt_kernel(ctx, wide, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
  CHECK(up && count_op(ctx, up, UJ_OP_RANGE, "local") == 0, "rows of 20000 outputs: no workgroup (the REDUCEs' own kernels)");
}

/* A batched GEMM's text: batches of (m x k) (k x n), int32 indices. */
static const char *bmm_text(int batch, int m, int k, int n) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "%%z = (RANGE loop 0 (CONST:int32 %d))\n%%i = (RANGE loop 1 (CONST:int32 %d))\n%%j = (RANGE loop 2 (CONST:int32 %d))\n"
           "%%k = (RANGE reduce 3 (CONST:int32 %d))\n"
           "%%a = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%z (CONST:int32 %d)) (ADD (MUL %%i (CONST:int32 %d)) %%k))))\n"
           "%%b = (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %%z (CONST:int32 %d)) (ADD (MUL %%k (CONST:int32 %d)) %%j))))\n"
           "(SINK (END %%z (END %%i (END %%j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%z (CONST:int32 %d)) (ADD (MUL %%i "
           "(CONST:int32 %d)) %%j))) (REDUCE MULACC (MUL %%a %%b) %%k))))))",
           batch, m, n, k, m * k, k, k * n, n, m * n, n);
  return buf;
}

/* GEMMs shaped for a GPU run in shared-memory tiles (gemm.c): two local
 * ALLOCs of a tile each, 4 x 4 accumulators a thread, a BARRIER before
 * and after each k tile's steps; the evaluator runs them race-free and
 * gets the serial kernel's words (sums that round, in k order): tiles
 * dividing the bounds; bounds they do not divide (rows, columns and k
 * past the end: gated); an epilogue (bias, relu); batches (the grid's
 * third dimension). Forced off, or too small for a tile of outputs, a
 * kernel is not tiled. */
static void check_gemm(Ctx *ctx) {
  static const char *epilogue =
      "%i = (RANGE loop 0 (CONST:int32 128))\n%j = (RANGE loop 1 (CONST:int32 192))\n%k = (RANGE reduce 2 (CONST:int32 48))\n"
      "%a = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 48)) %k)))\n"
      "%b = (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int32 192)) %j)))\n"
      "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int32 192)) %j))"
      " (MAX (ADD (REDUCE ADD (MUL %b %a) %k) (LOAD (INDEX (PARAM:float32* 3) %j))) (CONST:float32 0.0))))))";
  char texts[4][1024];
  snprintf(texts[0], sizeof texts[0], "%s", matmul_text(128, 48, 192));
  snprintf(texts[1], sizeof texts[1], "%s", epilogue);
  snprintf(texts[2], sizeof texts[2], "%s", matmul_text(100, 50, 70));
  snprintf(texts[3], sizeof texts[3], "%s", bmm_text(3, 70, 37, 65));
  static const size_t sizes[4][4] = {{128 * 192, 128 * 48, 48 * 192, 192}, {128 * 192, 128 * 48, 48 * 192, 192},
                                     {100 * 70, 100 * 50, 50 * 70, 0}, {3 * 70 * 65, 3 * 70 * 37, 3 * 37 * 65, 0}};
  const char *names[] = {"sm_90", "gfx942"};
  DType f = dt_scalar(UJ_FLOAT32);
  for (int v = 0; v < 4; v++) {
    const UOp *k = uj_parse(ctx, texts[v], "gemm");
    CHECK(k != NULL, "gemm %d parses: %s", v, uj_error(ctx));
    for (int g = 0; k && g < 2; g++) {
      const UOp *up = opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_find(names[g])});
      char what[64];
      snprintf(what, sizeof what, "gemm %d for %s", v, names[g]);
      CHECK(up && largest_alloc(ctx, up, "local") == (64 + 4) * 16 * 4 && largest_alloc(ctx, up, "reg") == 64 &&
                count_op(ctx, up, UJ_OP_BARRIER, NULL) == 1 && count_op(ctx, up, UJ_OP_RANGE, "local") == 2,
            "%s: tiled (%lld bytes local, %lld reg)", what, (long long)largest_alloc(ctx, up, "local"),
            (long long)largest_alloc(ctx, up, "reg"));
      JitBuffers b = {sizes[v][3] ? 4 : 3, {f, f, f, f}, {sizes[v][0], sizes[v][1], sizes[v][2], sizes[v][3]},
                      {fill(f, sizes[v][0], 0), fill_rounding(f, sizes[v][1], 1), fill_rounding(f, sizes[v][2], 2),
                       sizes[v][3] ? fill_rounding(f, sizes[v][3], 3) : NULL}};
      if (up) check_eval_of(ctx, k, up, &b, false, what);
      else for (int s = 0; s < b.n; s++) free(b.init[s]);
      size_t len = 0;
      char *code = up ? uj_emit(ctx, up, g ? UJ_EMIT_AMDGCN : UJ_EMIT_PTX, names[g], &len) : NULL;
      CHECK(code && (g ? strstr(code, "s_barrier") : strstr(code, "bar.sync")), "%s emits with barriers: %s", what,
            code ? "" : uj_error(ctx));
      free(code);
    }
    const UOp *off = k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_find("sm_90")}, &(OptConfig){.gemm = OPT_OFF}) : NULL;
    CHECK(off && largest_alloc(ctx, off, "reg") < 0, "gemm %d forced off: not tiled", v);
  }
  /* where its blocks cover the SMs (2 here), the large tiles: 128 x 128 a block, 8 x 8 a thread, k tiles of 8 */
  TargetDesc two = *target_desc_find("sm_90");
  two.cores = 2;
  const UOp *big = uj_parse(ctx, matmul_text(256, 40, 200), "gemm 256 x 40 x 200");
  const UOp *large = big ? opt_kernel(ctx, big, &(OptTarget){.desc = &two}) : NULL;
  CHECK(large && largest_alloc(ctx, large, "local") == (128 + 4) * 8 * 4 && largest_alloc(ctx, large, "reg") == 64 * 4,
        "large tiles: %lld bytes local, %lld reg", (long long)largest_alloc(ctx, large, "local"),
        (long long)largest_alloc(ctx, large, "reg"));
  JitBuffers lb = {3, {f, f, f}, {256 * 200, 256 * 40, 40 * 200}, {fill(f, 256 * 200, 0), fill_rounding(f, 256 * 40, 1), fill_rounding(f, 40 * 200, 2)}};
  if (large) check_eval_of(ctx, big, large, &lb, false, "large tiles");
  else for (int s = 0; s < lb.n; s++) free(lb.init[s]);
  const UOp *small = uj_parse(ctx, matmul_text(16, 48, 40), "gemm 16 x 40");
  const UOp *up = small ? opt_kernel(ctx, small, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
  CHECK(up && largest_alloc(ctx, up, "reg") < 0, "16 x 40 outputs: less than a tile, not tiled");
}

/* An elementwise kernel over n elements (relu(x * y + z), one of them
 * broadcast, or read transposed) with int32 indices. */
static const char *elementwise_text(int64_t rows, int64_t cols, bool transposed) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "%%r = (RANGE loop 0 (CONST:int32 %lld))\n%%c = (RANGE loop 1 (CONST:int32 %lld))\n"
           "%%e = (ADD (MUL %%r (CONST:int32 %lld)) %%c)\n"
           "(SINK (END %%r (END %%c (STORE (INDEX (PARAM:float32* 0) %%e) (MAX (ADD (MUL (LOAD (INDEX (PARAM:float32* 1) %s))"
           " (LOAD (INDEX (PARAM:float32* 2) %%c))) (LOAD (INDEX (PARAM:float32* 3) %%r))) (CONST:float32 0.0))))))",
           (long long)rows, (long long)cols, (long long)cols, transposed ? "(ADD (MUL %c (CONST:int32 ROWS)) %r)" : "%e");
  if (transposed) { /* the rows' count in place of ROWS */
    char *at = strstr(buf, "ROWS"), tail[1024];
    snprintf(tail, sizeof tail, "%s", at + 4);
    snprintf(at, sizeof buf - (size_t)(at - buf), "%lld%s", (long long)rows, tail);
  }
  return buf;
}

/* An elementwise kernel with outputs enough for cores x max_threads x 4
 * (a GPU of 2 SMs here) shaped for it computes 4 adjacent outputs a thread (widen.c), bit
 * for bit, and its PTX moves them 16 bytes at a time; not when an access
 * steps by more than one along the columns, the columns are not a
 * multiple of 4, or the outputs are few. */
static void check_widen(Ctx *ctx) {
  static const struct {
    int64_t rows, cols;
    bool transposed, widened;
  } cases[] = {{8, 1024, false, true}, {8, 1024, true, false}, {8, 1026, false, false}, {2, 1024, false, false}};
  TargetDesc two = *target_desc_find("sm_90"); /* 2 SMs: widened from 2 x 1024 x 4 outputs, so the evaluator's runs stay small */
  two.cores = 2;
  DType f = dt_scalar(UJ_FLOAT32);
  for (int i = 0; i < 4; i++) {
    const UOp *k = uj_parse(ctx, elementwise_text(cases[i].rows, cases[i].cols, cases[i].transposed), "elementwise");
    const UOp *up = k ? opt_kernel(ctx, k, &(OptTarget){.desc = &two}) : NULL;
    size_t stores = up ? count_op(ctx, up, UJ_OP_STORE, NULL) : 0;
    CHECK(up && stores == (cases[i].widened ? 4u : 1u), "case %d: %zu stores a thread, want %d: %s", i, stores,
          cases[i].widened ? 4 : 1, up ? "" : uj_error(ctx));
    if (!up || i > 1) continue;
    size_t n = (size_t)(cases[i].rows * cases[i].cols);
    JitBuffers b = {4, {f, f, f, f}, {n, n, (size_t)cases[i].cols, (size_t)cases[i].rows},
                    {fill(f, n, 0), fill_rounding(f, n, 1), fill_rounding(f, (size_t)cases[i].cols, 2),
                     fill_rounding(f, (size_t)cases[i].rows, 3)}};
    check_eval_of(ctx, k, up, &b, false, cases[i].transposed ? "elementwise, transposed" : "elementwise, widened");
    char *ptx = uj_emit(ctx, up, UJ_EMIT_PTX, "sm_90", NULL);
    bool v4 = ptx && strstr(ptx, "ld.global.nc.v4.f32") && strstr(ptx, "st.global.v4.f32");
    CHECK(ptx && v4 == cases[i].widened, "case %d: 16-byte loads and stores %s", i, cases[i].widened ? "expected" : "not expected");
    free(ptx);
  }
  const UOp *k = uj_parse(ctx, elementwise_text(2, 1024, false), "elementwise");
  const UOp *on = k ? opt_apply(ctx, k, &(OptTarget){.desc = &two}, &(OptConfig){.widen = OPT_ON}) : NULL;
  const UOp *big = uj_parse(ctx, elementwise_text(8, 1024, false), "elementwise");
  const UOp *off = big ? opt_apply(ctx, big, &(OptTarget){.desc = &two}, &(OptConfig){.widen = OPT_OFF}) : NULL;
  CHECK(on && count_op(ctx, on, UJ_OP_STORE, NULL) == 4 && off && count_op(ctx, off, UJ_OP_STORE, NULL) == 1,
        "widen forced on (few outputs: 4 a thread) and off (many: 1)");
}

/* A GEMV (x[k] w[k, j] over k, too few outputs for a GPU) shaped for
 * a GPU is a thread an output: a workgroup's threads stepping along k
 * would each read their own row of w (reads_across), and blocks of
 * outputs a thread would leave one block of threads (upcast). A column
 * sum alike; a row sum stays a workgroup a row. */
static void check_across(Ctx *ctx) {
  static const char *gemv =
      "%j = (RANGE loop 0 (CONST:int32 4096))\n%k = (RANGE reduce 1 (CONST:int32 4096))\n"
      "(SINK (END %j (STORE (INDEX (PARAM:float32* 0) %j) (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) %k))"
      " (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int32 4096)) %j)))) %k))))";
  static const char *rows =
      "%j = (RANGE loop 0 (CONST:int32 512))\n%k = (RANGE reduce 1 (CONST:int32 4096))\n"
      "(SINK (END %j (STORE (INDEX (PARAM:float32* 0) %j) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1)"
      " (ADD (MUL %j (CONST:int32 4096)) %k))) %k))))";
  static const char *cols =
      "%j = (RANGE loop 0 (CONST:int32 512))\n%k = (RANGE reduce 1 (CONST:int32 4096))\n"
      "(SINK (END %j (STORE (INDEX (PARAM:float32* 0) %j) (REDUCE ADD (LOAD (INDEX (PARAM:float32* 1)"
      " (ADD (MUL %k (CONST:int32 512)) %j))) %k))))";
  const char *texts[] = {gemv, cols, rows};
  const char *names[] = {"gemv", "column sums", "row sums"};
  for (int i = 0; i < 3; i++) {
    const UOp *k = uj_parse(ctx, texts[i], names[i]);
    const UOp *up = k ? opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_find("sm_90")}) : NULL;
    size_t barriers = up ? count_op(ctx, up, UJ_OP_BARRIER, NULL) : 0, locals = up ? count_op(ctx, up, UJ_OP_RANGE, "local") : 0;
    bool group = barriers > 0 && locals == 1;
    CHECK(up && group == (i == 2), "%s for sm_90: %s a workgroup (%zu barriers, %zu local ranges): %s", names[i],
          i == 2 ? "must be" : "must not be", barriers, locals, up ? "" : uj_error(ctx));
    const UOp **nodes = NULL;
    size_t n = up ? uop_toposort(ctx, up, &nodes) : 0, wide = 0;
    for (size_t u = 0; u < n; u++) wide += nodes[u]->op == UJ_OP_REDUCE && nodes[u]->dtype.lanes > 1;
    free(nodes);
    CHECK(wide == 0, "%s for sm_90: one output a thread (no vector REDUCE)", names[i]);
  }
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  check_rows();
  check_shaping(ctx, "gemm 1024^3", matmul_text(1024, 1024, 1024), "local");
  check_shaping(ctx, "gemv 4096 x 4096", /* as rangeify makes it: no loop of 1 */
                "%j = (RANGE loop 0 (CONST:int64 4096))\n%k = (RANGE reduce 1 (CONST:int64 4096))\n"
                "%b = (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int64 4096)) %j)))\n"
                "(SINK (END %j (STORE (INDEX (PARAM:float32* 0) %j)"
                " (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) %k)) %b) %k))))",
                "reg");
  check_same_values(ctx);
  check_workgroups(ctx);
  check_row_groups(ctx);
  check_gemm(ctx);
  check_across(ctx);
  check_widen(ctx);
  uj_ctx_free(ctx);
  return check_report("test_target");
}
