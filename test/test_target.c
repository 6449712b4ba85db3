/* test_target.c — targets as data (lib/opt/target.h, docs/opt.md
 * "Targets"): the rows (host CPU widths, sm_90, gfx942) and what the
 * optimizer reads from them. A GEMM and a GEMV shaped for the CPU get the
 * CPU passes (a tile's panel staged in a `local` ALLOC, stream's `reg`
 * accumulators); shaped for a GPU they get none of them: no ALLOC over the
 * workgroup's shared memory, no per-thread accumulators sized for a CPU
 * core, and the kernel emits PTX for sm_90 and GCN for gfx942. Shaped for
 * either, a small GEMM computes what it did, bit for bit. */
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
  CHECK(target_desc_cpu(64)->kind == TARGET_DESC_CPU && !target_desc_cpu(64)->reassociate &&
            target_desc_cpu(64)->index_bits == 64,
        "the CPU keeps the evaluator's order, 64-bit indices");
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
    CHECK(local <= (int64_t)t->shared_bytes && reg < 0, "%s for %s: %lld bytes of local ALLOC, %lld of reg", name,
          gpus[g], (long long)local, (long long)reg);
    size_t len = 0;
    char *code = uj_emit(ctx, up, g ? UJ_EMIT_AMDGCN : UJ_EMIT_PTX, gpus[g], &len);
    CHECK(code && len > 0, "%s shaped for %s emits: %s", name, gpus[g], code ? "" : uj_error(ctx));
    free(code);
  }
}

/* Shaped for each target, a small GEMM computes what it did: the GPU
 * list keeps the order too (nothing there regroups a sum yet). */
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
  uj_ctx_free(ctx);
  return check_report("test_target");
}
