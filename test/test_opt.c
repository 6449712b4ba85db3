/* test_opt.c — the optimizer's register blocking (lib/opt/upcast.c) and
 * the renderer's no-wrap flags: an upcast kernel computes exactly what the
 * kernel before it computed (the evaluator on the original, the JIT on the
 * upcast one, bit for bit; the evaluator on both), its inner loop is
 * vector loads, multiplies and adds; kernels it must not touch are left
 * alone; index arithmetic whose bounds cannot wrap gets nsw/nuw, a sum of
 * loaded values does not. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "opt_util.h"
#include "runtime/device.h"

/* A rows x n GEMM over k < depth (a: rows x depth, b: depth x n, c: n),
 * whose stored value is `value` (%mm: the product). */
static const char *gemm_sized(const char *t, const char *value, int64_t rows, int64_t depth, int64_t n) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "%%i = (RANGE loop 0 (CONST:int64 %lld))\n%%j = (RANGE loop 1 (CONST:int64 %lld))\n%%k = (RANGE reduce 2 (CONST:int64 %lld))\n"
           "%%a = (LOAD (INDEX (PARAM:%s* 1) (ADD (MUL %%i (CONST:int64 %lld)) %%k)))\n"
           "%%b = (LOAD (INDEX (PARAM:%s* 2) (ADD (MUL %%k (CONST:int64 %lld)) %%j)))\n"
           "%%c = (LOAD (INDEX (PARAM:%s* 3) %%j))\n%%q = (RANGE reduce 3 (CONST:int64 24))\n"
           "%%mm = (REDUCE ADD (MUL %%a %%b) %%k)\n"
           "(SINK (END %%i (END %%j (STORE (INDEX (PARAM:%s* 0) (ADD (MUL %%i (CONST:int64 %lld)) %%j)) %s))))",
           (long long)rows, (long long)n, (long long)depth, t, (long long)depth, t, (long long)n, t, t, (long long)n, value);
  return buf;
}

static const char *gemm(const char *t, const char *value, int64_t n) { return gemm_sized(t, value, 16, 24, n); }

/* check_same_buffers for a gemm_sized kernel of dtype d */
static void check_same(Ctx *ctx, const UOp *k, const UOp *up, DType d, int64_t rows, int64_t depth, int64_t n, const char *what) {
  size_t out = (size_t)(rows * n);
  JitBuffers b = {4, {d, d, d, d}, {out, (size_t)(rows * depth), (size_t)(depth * n), (size_t)n},
                  {fill(d, out, 0), fill(d, (size_t)(rows * depth), 1), fill(d, (size_t)(depth * n), 2), fill(d, (size_t)n, 3)}};
  check_same_buffers(ctx, k, up, &b, what);
}

/* lanes: those of the block's vector REDUCEs (one register of a row)
 * for vector_bytes-wide registers (0: the kernel must be left alone);
 * sum_t: the dtype of the value's REDUCEs when it is not t. */
static void check_upcast_sum(Ctx *ctx, const char *t, const char *sum_t, const char *value, int64_t n, unsigned vector_bytes,
                             unsigned lanes, const char *what) {
  DType d;
  dtype_parse(t, strlen(t), &d);
  const UOp *k = uj_parse(ctx, gemm(t, value, n), what);
  CHECK(k != NULL, "%s: %s", what, uj_error(ctx));
  if (!k) return;
  const UOp *up = opt_upcast(ctx, k, target_desc_cpu(vector_bytes), &(OptConfig){0});
  char vec[32];
  snprintf(vec, sizeof vec, "REDUCE:%sx%u ", sum_t ? sum_t : t, lanes); /* one per row of the block */
  char *text = up ? uj_print(ctx, up) : NULL;
  bool upcast = false; /* a REDUCE of a vector dtype ("REDUCE:float32x8 ") */
  for (const char *at = text; at && (at = strstr(at, "REDUCE:")) != NULL; at++) upcast |= strcspn(at, "x ") < strcspn(at, " ");
  CHECK(text && (lanes ? strstr(text, vec) != NULL : !upcast), "%s: %s %s:\n%s", what, lanes ? "wants a" : "must not get a vector REDUCE", lanes ? vec : "",
        text ? text : uj_error(ctx));
  free(text);
  check_same(ctx, k, up, d, 16, 24, n, what);
}

static void check_upcast(Ctx *ctx, const char *t, const char *value, int64_t n, unsigned lanes, const char *what) {
  check_upcast_sum(ctx, t, NULL, value, n, 32, lanes, what);
}

/* How many times what occurs in text. */
static int count_of(const char *text, const char *what);

/* Upcast's tail (B mod U columns): one vector REDUCE of its lanes for
 * each row lane when that is a power of 2 from 4 to a register and rows
 * are blocked (want: its dtype; the 8 rows' REDUCEs side by side, one
 * pass of the tail), else scalar REDUCEs (want NULL); bit for bit either
 * way. */
static void check_tail(Ctx *ctx, int64_t n, unsigned vector_bytes, const char *want, const char *what) {
  const UOp *k = uj_parse(ctx, gemm("float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", n), what);
  const UOp *up = k ? opt_upcast(ctx, k, target_desc_cpu(vector_bytes), &(OptConfig){0}) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  bool scalar = text && strstr(text, "(REDUCE:float32 ") != NULL;
  char def[64];
  snprintf(def, sizeof def, "= %s", want ? want : "");
  CHECK(text && (want ? count_of(text, def) == 8 && !scalar : scalar), "%s: %s:\n%s", what,
        want ? "8 vector REDUCEs, one a row" : "scalar REDUCEs", text ? text : uj_error(ctx));
  free(text);
  check_same(ctx, k, up, dt_scalar(UJ_FLOAT32), 16, 24, n, what);
}

static void test_upcast(Ctx *ctx) {
  check_upcast(ctx, "float32", "%mm", 32, 8, "gemm: 2 AVX2 registers of columns");
  check_upcast_sum(ctx, "float32", NULL, "%mm", 32, 64, 16, "gemm: 2 AVX-512 registers of columns");
  check_upcast_sum(ctx, "float32", NULL, "%mm", 48, 64, 16, "gemm, 48 columns: 1 AVX-512 register");
  check_upcast(ctx, "float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", 32, 8, "gemm + bias, relu");
  check_upcast(ctx, "float32", "(ADD %mm (REDUCE ADD (MUL %a %c) %k))", 16, 8, "two reduces, one over the lanes");
  check_upcast(ctx, "float64", "%mm", 8, 4, "float64: 2 registers of 4");
  check_upcast_sum(ctx, "float32", "float64", "(CAST:float32 (REDUCE ADD (CAST:float64 (MUL %a %b)) %k))", 32, 32, 8,
                   "a float64 sum stored as float32: the lanes are the sum's dtype");
  check_upcast(ctx, "int32", "%mm", 24, 8, "int32, 24 columns: 1 register");
  check_upcast(ctx, "float32", "%mm", 30, 0, "30 columns: 8 does not divide, fewer than 2 blocks of 16");
  check_upcast(ctx, "float32", "%mm", 36, 8, "36 columns: 2 blocks of 16 and a tail loop of 4");
  check_upcast_sum(ctx, "float32", NULL, "%mm", 10, 64, 10, "10 columns (a classifier's head), AVX-512: one vector of all 10");
  check_upcast(ctx, "float32", "%mm", 6, 6, "6 columns, AVX2: one vector of 6");
  check_upcast(ctx, "float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", 52, 8, "52 columns, bias, relu: 3 blocks and a tail");
  check_upcast_sum(ctx, "float32", NULL, "%mm", 72, 64, 16, "72 columns on AVX-512: 2 blocks of 32, a tail of 8");
  check_upcast(ctx, "float32", "(ADD (REDUCE ADD (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int64 32)) %j))) %k) %c)", 32, 8,
               "a reduce not over the rows: columns only");
  check_upcast(ctx, "float32", "(ADD %c %c)", 32, 0, "no reduce: LLVM vectorizes the loop itself");
  check_tail(ctx, 72, 64, "(REDUCE:float32x8 ", "72 columns, AVX-512: a tail of 8 as one ymm REDUCE a row");
  check_tail(ctx, 36, 32, "(REDUCE:float32x4 ", "36 columns, AVX2: a tail of 4 as one xmm REDUCE a row");
  check_tail(ctx, 44, 32, NULL, "44 columns, AVX2: a tail of 12, scalar");
  check_tail(ctx, 66, 64, NULL, "66 columns, AVX-512: a tail of 2, scalar");
  check_upcast(ctx, "float32", "(REDUCE ADD (MUL %a (REDUCE ADD (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %q (CONST:int64 32)) %j))) %q)) %k)", 32, 0, "a reduce nesting one over the lanes");
}

/* The inner loop of a 1024x1024 GEMM kernel, upcast for this CPU: rows
 * of 2 registers of columns, b[k, one register of columns] as one vector
 * load, a[row, k] broadcast, fused multiply-adds on whole registers. */
static void test_gemm_ir(Ctx *ctx) {
  const char *text =
      "%i = (RANGE global 0 (CONST:int64 1024))\n%j = (RANGE loop 1 (CONST:int64 1024))\n%k = (RANGE reduce 2 (CONST:int64 1024))\n"
      "(SINK (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int64 1024)) %j))\n"
      " (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int64 1024)) %k)))\n"
      "                  (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int64 1024)) %j)))) %k)))))";
  const UOp *k = uj_parse(ctx, text, "gemm1024");
  const char *why = NULL;
  Device *cpu = device_open(ctx, "CPU", &why);
  CHECK(cpu && cpu->desc->vector_bytes >= 16, "the CPU device: %s", why ? why : "no vector width");
  unsigned vector_bytes = cpu ? cpu->desc->vector_bytes : 16, lanes = vector_bytes / 4;
  device_close(cpu);
  const UOp *up = k ? opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_cpu(vector_bytes)}) : NULL;
  char *ir = up ? uj_emit(ctx, up, UJ_EMIT_IR_OPT, NULL, NULL) : NULL;
  char load[64], fma[64];
  snprintf(load, sizeof load, "load <%u x float>", lanes), snprintf(fma, sizeof fma, "@llvm.fma.v%uf32(<%u x float>", lanes, lanes);
  CHECK(ir && strstr(ir, load) && strstr(ir, fma), "1024x1024 GEMM: %s, %s:\n%s", load, fma, ir ? ir : uj_error(ctx));
  /* the block's next row of a: row 0's address and a constant 4 KiB
   * (codegen/offsets.h), not an address of its own computed each step */
  CHECK(ir && strstr(ir, "getelementptr nusw i8, ptr") && strstr(ir, ", i64 4096\n"),
        "1024x1024 GEMM: a's rows as constant offsets of one address:\n%s", ir ? ir : "");
  free(ir);
}

/* Cache tiling (tile.c) after register blocking: the rows cut in tiles
 * of row blocks, the column loop inside a tile, b's panel staged in an
 * ALLOC filled once per tile and column block; bit for bit the kernel
 * before. Kernels it must leave alone keep their loop order. */
/* What tile.c makes of a blocked GEMM: nothing, tiles (t, j, u nest
 * around the block), or one tile (the column loop outermost, the panel
 * filled in it: END(j, fill, END(i, block))). */
enum { LEFT, TILES, ONE_TILE };

static void check_tile(Ctx *ctx, const char *t, const char *value, int64_t rows, int64_t depth, int64_t n, unsigned vector_bytes,
                       int shape, bool staged, const char *what) {
  DType d;
  dtype_parse(t, strlen(t), &d);
  const UOp *k = uj_parse(ctx, gemm_sized(t, value, rows, depth, n), what);
  CHECK(k != NULL, "%s: %s", what, uj_error(ctx));
  if (!k) return;
  const UOp *blocked = opt_upcast(ctx, k, target_desc_cpu(vector_bytes), &(OptConfig){0}), *up = blocked ? opt_tile(ctx, blocked, target_desc_cpu(64), &(OptConfig){0}) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  const UOp *e = text ? up->src[0] : NULL;
  bool three = e && e->op == UJ_OP_END && e->src[1]->op == UJ_OP_END && e->src[1]->src[e->src[1]->nsrc - 1]->op == UJ_OP_END;
  bool one = e && e->op == UJ_OP_END && e->nsrc == 3 && e->src[2]->op == UJ_OP_END && e->src[2]->src[1]->op == UJ_OP_STORE;
  int got = up == blocked ? LEFT : three ? TILES : one ? ONE_TILE : -1;
  static const char *const names[] = {"left alone", "tiles", "one tile"};
  CHECK(up && got == shape, "%s: wants %s:\n%s", what, names[shape], text ? text : uj_error(ctx));
  CHECK(text && (strstr(text, "ALLOC:") != NULL) == staged, "%s: %s a staged panel:\n%s", what, staged ? "wants" : "must not get",
        text ? text : "");
  free(text);
  check_same(ctx, k, up, d, rows, depth, n, what);
}
static void test_tile(Ctx *ctx) {
  check_tile(ctx, "float32", "%mm", 64, 64, 64, 64, ONE_TILE, true, "gemm 64x64x64, AVX-512: its 8 row blocks in one tile");
  check_tile(ctx, "float32", "%mm", 64, 64, 64, 32, ONE_TILE, true, "gemm 64x64x64, AVX2");
  check_tile(ctx, "float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", 64, 96, 64, 64, ONE_TILE, true, "gemm + bias, relu");
  check_tile(ctx, "float64", "%mm", 32, 64, 32, 64, ONE_TILE, true, "float64");
  check_tile(ctx, "int32", "%mm", 64, 64, 64, 32, ONE_TILE, true, "int32");
  check_tile(ctx, "float32", "%mm", 512, 64, 64, 64, TILES, true, "gemm 512x64x64: 64 row blocks, 2 tiles of 32");
  check_tile(ctx, "float32", "%mm", 1024, 64, 512, 64, ONE_TILE, true, "gemm 1024x64x512: 128 row blocks (4 tiles), 16 column blocks to split");
  check_tile(ctx, "float32", "%mm", 512, 64, 512, 64, TILES, true, "gemm 512x64x512: 64 row blocks, 2 tiles of 32");
  check_tile(ctx, "float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", 512, 64, 64, 32, TILES, true, "gemm 512x64x64, AVX2, bias, relu: tiles");
  check_tile(ctx, "float32", "%mm", 64, 24, 128, 64, LEFT, false, "a reduction of 24: nothing to reuse");
  check_tile(ctx, "float32", "%mm", 8, 128, 128, 64, LEFT, false, "one row block: no tiles to split");
  check_tile(ctx, "float32", "%mm", 64, 128, 32, 64, LEFT, false, "one column block: no panel to reuse");
  check_tile(ctx, "float32", "%mm", 32, 4112, 64, 64, TILES, false, "a panel over 512 KiB: tiles, not staged");
  check_tile(ctx, "float32", "%mm", 64, 96, 72, 64, TILES, true, "72 columns: 2 blocks of 32 and upcast's tail of 8, tiled");
  /* tiles of 2 row blocks over 5: the last tile has 1 (its row loop's bound a WHERE on the tile);
   * 72 columns: upcast's tail in each tile too */
  for (int n = 64; n <= 72; n += 8) {
    const char *what = n == 64 ? "5 row blocks in tiles of 2, 2, 1" : "5 row blocks in tiles of 2, 2, 1, with a tail";
    const UOp *g = uj_parse(ctx, gemm_sized("float32", "%mm", 40, 64, n), what);
    OptConfig two = {.tile = 2};
    const UOp *blocked = g ? opt_upcast(ctx, g, target_desc_cpu(64), &two) : NULL, *tiled = blocked ? opt_tile(ctx, blocked, target_desc_cpu(64), &two) : NULL;
    char *text = tiled ? uj_print(ctx, tiled) : NULL;
    const UOp *e = tiled ? tiled->src[0] : NULL, **nodes = NULL;
    size_t count = tiled ? uop_toposort(ctx, tiled, &nodes) : 0;
    bool where = false;
    for (size_t x = 0; x < count; x++) where |= nodes[x]->op == UJ_OP_RANGE && nodes[x]->src[0]->op == UJ_OP_WHERE;
    free(nodes);
    CHECK(e && e->op == UJ_OP_END && opt_const_bound(e->src[0]) == 3 && where, "%s: 3 tiles, the rows' bound a WHERE:\n%s", what,
          text ? text : uj_error(ctx));
    free(text);
    if (g) check_same(ctx, g, tiled, dt_scalar(UJ_FLOAT32), 40, 64, n, what);
  }
  /* a batch loop around the rows and columns (attention's heads): tiles inside it */
  const char *batched =
      "%h = (RANGE loop 0 (CONST:int64 3))\n%i = (RANGE loop 1 (CONST:int64 64))\n%j = (RANGE loop 2 (CONST:int64 64))\n"
      "%k = (RANGE reduce 3 (CONST:int64 64))\n"
      "(SINK (END %h (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL (ADD (MUL %h (CONST:int64 64)) %i) (CONST:int64 64)) %j))\n"
      " (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL (ADD (MUL %h (CONST:int64 64)) %i) (CONST:int64 64)) %k)))\n"
      "  (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL (ADD (MUL %h (CONST:int64 64)) %j) (CONST:int64 64)) %k)))) %k))))))";
  const UOp *k = uj_parse(ctx, batched, "batched");
  const UOp *up = k ? opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  CHECK(text && strstr(text, "ALLOC:float32x16*local"), "a batched a @ b.T: tiles and a staged (transposed) panel:\n%s",
        text ? text : uj_error(ctx));
  free(text);
  DType f = dt_scalar(UJ_FLOAT32);
  JitBuffers b = {3, {f, f, f}, {3 * 64 * 64, 3 * 64 * 64, 3 * 64 * 64}, {fill(f, 3 * 64 * 64, 0), fill(f, 3 * 64 * 64, 1), fill(f, 3 * 64 * 64, 2)}};
  if (up) jit_vs_eval_of(ctx, k, up, &b, NULL, NULL, 0, 0, "batched a @ b.T, tiled");
  for (int x = 0; x < 3; x++) free(b.init[x]);
  /* a batch loop around rows that read the same weights (activations (4, 64, 256) @ w.T, w of 64 x 256): no tiles, the
   * column loop around every loop, each column block's panel of w.T filled once (fails if it is filled per batch step) */
  const char *shared =
      "%h = (RANGE loop 0 (CONST:int64 4))\n%i = (RANGE loop 1 (CONST:int64 64))\n%j = (RANGE loop 2 (CONST:int64 64))\n"
      "%k = (RANGE reduce 3 (CONST:int64 256))\n"
      "(SINK (END %h (END %i (END %j (STORE (INDEX (PARAM:float32* 0) (ADD (MUL (ADD (MUL %h (CONST:int64 64)) %i) (CONST:int64 64)) %j))\n"
      " (REDUCE MULACC (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL (ADD (MUL %h (CONST:int64 64)) %i) (CONST:int64 256)) %k)))\n"
      "  (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %j (CONST:int64 256)) %k)))) %k))))))";
  k = uj_parse(ctx, shared, "shared weights");
  up = k ? opt_kernel(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}) : NULL;
  text = up ? uj_print(ctx, up) : NULL;
  const UOp *cols = up && up->nsrc == 1 ? up->src[0] : NULL;
  bool outermost = cols && cols->op == UJ_OP_END && cols->nsrc == 3 && opt_const_bound(cols->src[0]) == 2 &&
                   cols->src[2]->op == UJ_OP_END && opt_const_bound(cols->src[2]->src[0]) == 4;
  CHECK(outermost && strstr(text, "ALLOC:float32x16*local"), "batched rows, shared weights: END(j', fill, END(h, ..)):\n%s",
        text ? text : uj_error(ctx));
  free(text);
  JitBuffers sb = {3, {f, f, f}, {4 * 64 * 64, 4 * 64 * 256, 64 * 256}, {fill(f, 4 * 64 * 64, 0), fill(f, 4 * 64 * 256, 1), fill(f, 64 * 256, 2)}};
  if (up) jit_vs_eval_of(ctx, k, up, &sb, NULL, NULL, 0, 0, "batched rows, shared weights");
  for (int x = 0; x < 3; x++) free(sb.init[x]);
}

/* How many times what occurs in text. */
static int count_of(const char *text, const char *what) {
  int n = 0;
  for (const char *at = text; at && (at = strstr(at, what)) != NULL; at++) n++;
  return n;
}

/* Without rows (a matrix-vector product: one row), up to 8 registers of
 * columns where they divide the columns; bit for bit. */
static void check_wide(Ctx *ctx, int64_t rows, int64_t n, unsigned vector_bytes, int vectors, const char *vec, const char *what) {
  const UOp *k = uj_parse(ctx, gemm_sized("float32", "%mm", rows, 64, n), what);
  const UOp *up = k ? opt_upcast(ctx, k, target_desc_cpu(vector_bytes), &(OptConfig){0}) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  CHECK(text && count_of(text, vec) == vectors, "%s: %d x %s:\n%s", what, vectors, vec, text ? text : uj_error(ctx));
  free(text);
  check_same(ctx, k, up, dt_scalar(UJ_FLOAT32), rows, 64, n, what);
}

static void test_wide(Ctx *ctx) {
  check_wide(ctx, 1, 256, 64, 8, "(REDUCE:float32x16 ", "gemv, 256 columns, AVX-512: 8 registers");
  check_wide(ctx, 1, 64, 64, 4, "(REDUCE:float32x16 ", "gemv, 64 columns: 4 registers divide them");
  check_wide(ctx, 1, 96, 64, 2, "(REDUCE:float32x16 ", "gemv, 96 columns: 2 registers (64 does not divide)");
  check_wide(ctx, 1, 256, 32, 8, "(REDUCE:float32x8 ", "gemv, AVX2: 8 registers of 8");
  check_wide(ctx, 16, 256, 64, 16, "(REDUCE:float32x16 ", "gemm, 16 rows: 8 rows x 2 registers, not wide");
}

/* A convolution (rangeify's form): out[n, o, y, x] = Σ_{c,u,v} w[o, c, u, v]
 * · in[n, c, y + u, x + v], the input padded already (the scheduler's
 * copy); o output channels, ci input channels, ys rows of x of 6 columns. */
static const char *conv_sized(int64_t n, int64_t o, int64_t ci, int64_t ys) {
  static char buf[2048];
  int64_t plane = (ys + 2) * 8;
  snprintf(buf, sizeof buf,
           "%%n = (RANGE loop 0 (CONST:int64 %lld))\n%%o = (RANGE loop 1 (CONST:int64 %lld))\n"
           "%%y = (RANGE loop 2 (CONST:int64 %lld))\n%%x = (RANGE loop 3 (CONST:int64 6))\n"
           "%%c = (RANGE reduce 4 (CONST:int64 %lld))\n%%u = (RANGE reduce 5 (CONST:int64 3))\n%%v = (RANGE reduce 6 (CONST:int64 3))\n"
           "%%w = (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %%o (CONST:int64 %lld)) (ADD (MUL %%c (CONST:int64 9)) (ADD (MUL %%u (CONST:int64 3)) %%v)))))\n"
           "%%i = (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %%n (CONST:int64 %lld)) (ADD (MUL %%c (CONST:int64 %lld)) (ADD (MUL (ADD %%y %%u) (CONST:int64 8)) (ADD %%x %%v))))))\n"
           "(SINK (END %%n (END %%o (END %%y (END %%x (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %%n (CONST:int64 %lld)) "
           "(ADD (MUL %%o (CONST:int64 %lld)) (ADD (MUL %%y (CONST:int64 6)) %%x)))) (REDUCE ADD (MUL %%w %%i) %%c %%u %%v)))))))",
           (long long)n, (long long)o, (long long)ys, (long long)ci, (long long)(ci * 9), (long long)(ci * plane),
           (long long)plane, (long long)(o * ys * 6), (long long)(ys * 6));
  return buf;
}

/* Reorder (reorder.c) and the staged panel (tile.c): a convolution's
 * output channels, which two registers divide (x does not), become the
 * columns, x the rows; its weights, strided along the channels, are
 * staged once inside n for every column block (whole) or, too big for
 * that, one column block's at a time, the column loop moved out around
 * the rows (per block). Bit for bit the kernel before; reorder = off
 * leaves x the columns. */
enum { NOT_STAGED, WHOLE, PER_BLOCK };

static void check_conv(Ctx *ctx, int64_t n, int64_t o, int64_t ci, int64_t ys, unsigned vector_bytes, const OptConfig *c,
                       int vectors, const char *vec, int staged, const char *what) {
  const UOp *k = uj_parse(ctx, conv_sized(n, o, ci, ys), what);
  const UOp *up = k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(vector_bytes)}, c) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  /* whole: END(n, fill, END(y, ..)); per block: END(n, END(o', fill, END(y, ..))) */
  const UOp *e = up ? up->src[0] : NULL;
  bool whole = e && e->op == UJ_OP_END && e->nsrc == 3 && e->src[2]->op == UJ_OP_END && opt_const_bound(e->src[2]->src[0]) == ys;
  const UOp *cols = e && e->op == UJ_OP_END && e->nsrc == 2 ? e->src[1] : NULL;
  bool per_block = cols && cols->op == UJ_OP_END && cols->nsrc == 3 && cols->src[2]->op == UJ_OP_END &&
                   opt_const_bound(cols->src[2]->src[0]) == ys;
  int got = whole ? WHOLE : per_block ? PER_BLOCK : NOT_STAGED;
  CHECK(text && count_of(text, vec) == vectors && (strstr(text, "ALLOC") != NULL) == (staged != NOT_STAGED) && got == staged,
        "%s: %d x %s, %s:\n%s", what, vectors, vec, staged == WHOLE ? "the whole panel staged inside n" : staged == PER_BLOCK ? "a column block's panel staged inside o'" : "not staged",
        text ? text : uj_error(ctx));
  free(text);
  DType f = dt_scalar(UJ_FLOAT32);
  size_t out = (size_t)(n * o * ys * 6), weights = (size_t)(o * ci * 9), input = (size_t)(n * ci * (ys + 2) * 8);
  JitBuffers b = {3, {f, f, f}, {out, weights, input}, {fill(f, out, 0), fill(f, weights, 1), fill(f, input, 2)}};
  check_same_buffers(ctx, k, up, &b, what);
}

static void test_conv(Ctx *ctx) {
  check_conv(ctx, 2, 16, 8, 3, 16, &(OptConfig){0}, 4, "REDUCE:float32x4 ", WHOLE, "16 channels, SSE: 2 rows of x x 2 registers of channels");
  check_conv(ctx, 2, 64, 8, 3, 64, &(OptConfig){0}, 4, "REDUCE:float32x16 ", WHOLE, "64 channels, AVX-512: 2 rows x 2 registers");
  check_conv(ctx, 1, 256, 64, 1, 64, &(OptConfig){0}, 4, "REDUCE:float32x16 ", PER_BLOCK,
             "256 channels of 576 weights: 576 KiB, a column block's panel at a time");
  check_conv(ctx, 2, 16, 8, 3, 16, &(OptConfig){.reorder = OPT_OFF}, 0, "REDUCE:float32x4 ", NOT_STAGED, "reorder off: x stays the columns");
  check_conv(ctx, 2, 16, 8, 3, 16, &(OptConfig){.stage = OPT_OFF}, 4, "REDUCE:float32x4 ", NOT_STAGED, "reordered, not staged");
  check_conv(ctx, 2, 12, 8, 3, 16, &(OptConfig){0}, 0, "REDUCE:float32x4 ", NOT_STAGED, "12 channels: 2 registers do not divide them");
}

/* Forced configs (opt_apply) do what they say; ones a kernel cannot
 * take leave it alone; random ones compute what the kernel did. */
static void check_config(Ctx *ctx, const OptConfig *c, int vectors, const char *vec, bool tiled, bool staged, bool global,
                         const char *what) {
  const UOp *k = uj_parse(ctx, gemm_sized("float32", "%mm", 64, 64, 64), what);
  const UOp *up = k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}, c) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  int loops = text ? count_of(text, "(RANGE:") - count_of(text, " reduce ") : 0; /* rows, columns[, tile][, panel fill] */
  CHECK(text && count_of(text, vec) == vectors && loops == 2 + tiled + staged &&
            (strstr(text, "ALLOC") != NULL) == staged && (strstr(text, " global ") != NULL) == global,
        "%s: %d x %s, %s, %s, %s:\n%s", what, vectors, vec, tiled ? "tiles" : "no tiles", staged ? "staged" : "not staged",
        global ? "threads" : "one thread", text ? text : uj_error(ctx));
  free(text);
  check_same(ctx, k, up, dt_scalar(UJ_FLOAT32), 64, 64, 64, what);
}

static void test_config(Ctx *ctx) {
  check_config(ctx, &(OptConfig){0}, 16, "REDUCE:float32x16 ", false, true, true, "the heuristics: 8 rows x 2 registers, one tile");
  check_config(ctx, &(OptConfig){.columns = 8, .rows = 2}, 2, "REDUCE:float32x8 ", false, true, true, "8 columns x 2 rows, one tile");
  check_config(ctx, &(OptConfig){.columns = 16, .rows = 1}, 1, "REDUCE:float32x16 ", true, true, true, "16 columns, no rows");
  check_config(ctx, &(OptConfig){.columns = 1}, 0, "REDUCE:float32x", false, false, true, "no upcast");
  check_config(ctx, &(OptConfig){.columns = 12}, 0, "REDUCE:float32x", false, false, true, "12 columns: not a power of 2");
  check_config(ctx, &(OptConfig){.rows = 16}, 2, "REDUCE:float32x16 ", true, true, true, "16 rows: more than 8, columns only");
  check_config(ctx, &(OptConfig){.tile = 1}, 16, "REDUCE:float32x16 ", false, false, false, "no tiles: 2^10 iterations, one thread");
  check_config(ctx, &(OptConfig){.tile = 8}, 16, "REDUCE:float32x16 ", true, true, true, "one tile of 8 blocks (the fill loop counts as work)");
  check_config(ctx, &(OptConfig){.tile = 3}, 16, "REDUCE:float32x16 ", true, true, false, "3 over 8 row blocks: tiles of 3, 3, 2");
  check_config(ctx, &(OptConfig){.stage = OPT_OFF}, 16, "REDUCE:float32x16 ", true, false, false, "tiles, no staged panel");
  check_config(ctx, &(OptConfig){.parallel = OPT_OFF}, 16, "REDUCE:float32x16 ", false, true, false, "one thread, one tile");
  for (uint64_t seed = 0; seed < 24; seed++) {
    OptConfig c = opt_config_random(seed);
    char what[64];
    snprintf(what, sizeof what, "random config %llu", (unsigned long long)seed);
    const UOp *k = uj_parse(ctx, gemm_sized("float32", "(MAX (ADD %mm %c) (CONST:float32 0.0))", 32, 64, 64), what);
    check_same(ctx, k, k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(16u << (seed % 3))}, &c) : NULL, dt_scalar(UJ_FLOAT32), 32, 64, 64, what);
  }
}

static void test_no_wrap(Ctx *ctx) {
  const UOp *k = uj_parse(ctx,
                          "%i = (RANGE loop 0 (CONST:int32 100))\n"
                          "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %i (CONST:int32 3)) (CONST:int32 2)))\n"
                          "  (ADD (LOAD (INDEX (PARAM:int32* 1) %i)) (LOAD (INDEX (PARAM:int32* 2) %i))))))",
                          "nsw");
  char *ir = k ? uj_emit(ctx, k, UJ_EMIT_IR, NULL, NULL) : NULL;
  CHECK(ir && strstr(ir, "mul nuw nsw i32") && strstr(ir, "add nuw nsw i32"), "bounded index arithmetic: nuw nsw:\n%s",
        ir ? ir : uj_error(ctx));
  const char *sum = ir ? strstr(ir, "load i32") : NULL;
  CHECK(sum && strstr(sum, "= add i32 "), "a sum of loaded values may wrap: no flags:\n%s", ir ? ir : "");
  free(ir);
}

/* Unroll (unroll.c): a GEMM's reduction split k = k'·U + u, u an `unroll`
 * RANGE the renderer emits as U copies of the step (U times the adds of
 * one step in the IR before LLVM's passes, no loop for u); a U that does
 * not divide the reduction leaves it alone; bit for bit on values whose
 * sums round. */
static int vector_adds(Ctx *ctx, const UOp *k) {
  char *ir = k ? uj_emit(ctx, k, UJ_EMIT_IR, NULL, NULL) : NULL;
  int n = ir ? count_of(ir, "= fadd <16 x float>") : -1;
  free(ir);
  return n;
}

static void check_unroll(Ctx *ctx, unsigned factor, bool split, const char *what) {
  const UOp *k = uj_parse(ctx, gemm_sized("float32", "%mm", 16, 64, 64), what);
  const UOp *plain = k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}, &(OptConfig){.parallel = OPT_OFF}) : NULL;
  const UOp *up = k ? opt_apply(ctx, k, &(OptTarget){.desc = target_desc_cpu(64)}, &(OptConfig){.parallel = OPT_OFF, .unroll = factor}) : NULL;
  char *text = up ? uj_print(ctx, up) : NULL;
  CHECK(text && (strstr(text, "(RANGE:int64 unroll") != NULL) == split, "%s: %s:\n%s", what,
        split ? "an unroll RANGE" : "no unroll RANGE", text ? text : uj_error(ctx));
  free(text);
  int one = vector_adds(ctx, plain), many = vector_adds(ctx, up);
  CHECK(one > 0 && many == (split ? (int)factor : 1) * one, "%s: %d vector adds, %d without unrolling", what, many, one);
  DType f = dt_scalar(UJ_FLOAT32);
  JitBuffers b = {4, {f, f, f, f}, {16 * 64, 16 * 64, 64 * 64, 64},
                  {fill_rounding(f, 16 * 64, 1), fill_rounding(f, 16 * 64, 2), fill_rounding(f, 64 * 64, 3), fill_rounding(f, 64, 4)}};
  check_same_buffers(ctx, k, up, &b, what);
}

static void test_unroll(Ctx *ctx) {
  check_unroll(ctx, 2, true, "unroll 2");
  check_unroll(ctx, 4, true, "unroll 4");
  check_unroll(ctx, 8, true, "unroll 8");
  check_unroll(ctx, 3, false, "unroll 3: does not divide 64 steps");
  check_unroll(ctx, 0, false, "the heuristics: none");
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_unroll(ctx);
  test_upcast(ctx);
  test_tile(ctx);
  test_config(ctx);
  test_gemm_ir(ctx);
  test_conv(ctx);
  test_wide(ctx);
  test_no_wrap(ctx);
  uj_ctx_free(ctx);
  return check_report("test_opt");
}
