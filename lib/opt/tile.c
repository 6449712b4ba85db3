/* tile.c — cache tiling of a register-blocked kernel (opt.h). After
 * upcast, a GEMM is two output loops (inside any batch loops) around a
 * block of REDUCEs over k:
 *
 *   END(i, END(j, block(i, j)))                   i < M, j < N
 *   -> END(t, END(j, END(u, block(t·T + u, j))))   t < M/T, u < T
 *
 * The rows are cut in tiles of T row blocks and each tile's column loop
 * runs outside its rows: the k × (block columns) panel of the operand
 * that does not vary along i (b in a·b) is read from memory once per
 * tile and then T - 1 times from the L2 cache, where before it streamed
 * from memory for every row block. The tile's rows of the other operand
 * (T blocks × k) stay in L2 across the column loop. Every output is
 * computed by the same operations in the same order; only the order in
 * which outputs are computed changes, and a kernel's outputs do not read
 * each other (an in-place kernel reads only the element it writes).
 *
 * A GEMM whose row blocks all fit one tile has no tile loop: the column
 * loop runs outermost (threads split it) and fills each panel once.
 * A kernel with loops around its rows and too few row blocks to tile
 * stages the panel of every column block once (stage_whole).
 *
 * The panel is staged: copied, once per tile and column block, into an
 * ALLOC of k × (its loads) elements in that order, which the block reads
 * instead. In place, b's rows lie a row of b apart (4 KiB for 1024
 * columns): the panel's lines then fall in a few cache sets and evict
 * each other from L1 and L2 however small the panel is; staged they are
 * contiguous. The copy costs k·m loads and stores a tile of T row blocks
 * that do T·k·m·(block rows) multiply-adds. */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "uop/alu.h"

/* T: the tile's rows of the other operand within 2 MiB (512 rows of
 * k = 1024 float32, 256 of 2048), at most 32 row blocks (16 without a
 * staged panel); at least 2 tiles so that threads have tiles to split;
 * the reduction at least 64 long and 2 column blocks, or there is
 * nothing to reuse. Each tile fills its panels again, reading b a row
 * apart (4 KiB at 1024 columns: no prefetcher follows): 11–26 % of a
 * GEMM's time (measured with a fill that reads one row; a C loop filling
 * 2048 x 32 panels of a 2048-column b: 19 us a panel, 16 with software
 * prefetch), so big tiles pay, even past L2: 2048 rows of 8 KiB (T = 32)
 * and a 256 KiB panel do not fit a 2 MiB L2, but the rows stream back
 * from L3 as 8 sequential rows a block, which the prefetchers follow.
 * Measured, one thread, medians of 15 runs on this noisy VM, against
 * 512 KiB and 16 blocks: 1000^3 27 -> 21 ms (T = 5 -> 25), 1024^3 26 ->
 * 22 ms (16 -> 32), 2048^3 252 -> 222 ms (8 -> 16); 1 MiB -> 2 MiB
 * (2048^3: 16 -> 32): best of 12 interleaved runs 162 -> 143-148 ms,
 * medians 201-204 -> 183-187 (two sessions); 2 threads 75 -> 71 ms.
 * 4 MiB and 64 blocks measured no better. */
enum { TILE_MAX_BLOCKS = 32, TILE_MIN_TILES = 2, TILE_MIN_REDUCE = 64, TILE_MIN_COLUMNS = 2 };

/* One tile (opt_tile) whatever the rows when threads have at least this
 * many column blocks to split and the rows would make this many tiles
 * (512^3, 2 tiles: one tile measured a little slower on 2 threads). */
enum { TILE_ONE_MIN_COLUMNS = 16, TILE_ONE_MIN_TILES = 4 };

/* Tiles: an even count, the last shorter, rather than an odd count of
 * equal tiles below this (threads split the tiles). */
enum { TILE_EVEN_BELOW = 8 };

/* The staged panel: at most 128 loads a step (2 AVX-512 registers of
 * int8; a sum of three GEMMs, a layernorm's input gradient from q, k and
 * v, reads 3 x 32 float32 columns: 6.6 -> 3.3 ms staged), at most half
 * the CPU's 1 MiB of kernel stack (docs/semantics.md, ALLOC): k <= 4096
 * for 32 float32 columns. */
enum { TILE_MAX_PANEL = 128, TILE_MAX_REDUCE_RANGES = 8 };

/* The longest reduction of a vector REDUCE in x (register blocking made
 * it); 0 when there is none. */
static int64_t blocked_reduce(Ctx *ctx, const UOp *x) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  int64_t longest = 0;
  for (size_t i = 0; i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_REDUCE || u->dtype.lanes < 2) continue;
    int64_t len = 1;
    for (uint32_t k = 1; k < u->nsrc; k++) len *= opt_const_bound(u->src[k]);
    longest = len > longest ? len : longest;
  }
  free(nodes);
  return longest;
}

static const UOp *substitute(Ctx *ctx, const UOp *x, const UOp *from, const UOp *to) {
  return opt_substitute(ctx, x, &from, &to, 1);
}

/* The panel: the distinct loads of the block that vary along the
 * reduction (its RANGEs k[0..*nk), the same for every REDUCE) and the
 * columns j but not along the rows (i); *w: the REDUCEs' lanes (a
 * register), which must divide their count. 0 when the block is not that
 * or has more than max of them. */
static size_t panel_loads(Ctx *ctx, const UOp *block, const UOp *i, const UOp *j, const UOp **k, size_t *nk, unsigned *w,
                          const UOp **out, size_t max) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, block, &nodes), m = 0;
  bool ok = n > 0;
  *nk = opt_shared_reduce_ranges(ctx, block, k, TILE_MAX_REDUCE_RANGES), *w = 0;
  for (size_t x = 0; ok && x < n; x++) {
    if (nodes[x]->op == UJ_OP_ALLOC) ok = false; /* staged already */
    if (nodes[x]->op == UJ_OP_REDUCE) *w = nodes[x]->dtype.lanes;
  }
  for (size_t x = 0; ok && *nk && x < n; x++) {
    const UOp *u = nodes[x], *idx = u->op == UJ_OP_LOAD ? u->src[0] : NULL;
    bool along_k = false;
    for (size_t r = 0; idx && r < *nk && !along_k; r++) along_k = opt_contains(ctx, idx, k[r]);
    if (!idx || idx->op != UJ_OP_INDEX || !along_k || !opt_contains(ctx, idx, j) || opt_contains(ctx, idx, i)) continue;
    ok = idx->nsrc == 2 && m < max;
    if (ok) out[m++] = u;
  }
  free(nodes);
  return ok && *nk && *w > 1 && m % *w == 0 ? m : 0;
}

/* A fresh `loop` RANGE with r's bound, numbered axis. */
static const UOp *range_like(Ctx *ctx, const UOp *r, int64_t axis) {
  return uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, r->nsrc, (Arg){"loop", &axis, 1});
}

/* Σ_r x[r]·Π_{q>r} K_q: the reduction's step number (row-major). */
static const UOp *flat_step(Ctx *ctx, const UOp *const *x, const UOp *const *k, size_t nk) {
  const UOp *at = x[0];
  for (size_t r = 1; at && r < nk; r++)
    at = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, at, uop_const_int(ctx, at->dtype, opt_const_bound(k[r]))), x[r]);
  return at;
}

/* The panel staged in vectors of w lanes (w divides m): ALLOC p of
 * K·J·m/w of them (K the reduction's steps; J the bound of the column
 * loop j when the panel holds every column block, else 1), filled by
 *   END(s.., [END(c,] STORE(p[(s·J + c)·m/w + g], VECTORIZE(load_(g·w + l)(k := s, j := c) for l < w)) for g[)])
 * and the block's load_x read back as GEP(LOAD(p[(k·J + j)·m/w + x/w]), x mod w)
 * (whole-register copies: scalar stores made LLVM's loop vectorizer
 * gather and scatter across steps). *fill: that END; returns the block
 * rewritten; NULL on failure. */
static const UOp *stage_panel(Ctx *ctx, const UOp *kernel, const UOp *block, const UOp *const *k, size_t nk,
                              const UOp *j, const UOp *const *loads, size_t m, unsigned w, int64_t axis, const UOp **fill) {
  int64_t K = 1, J = j ? opt_const_bound(j) : 1, id = opt_next_alloc_id(ctx, kernel), nv = (int64_t)(m / w);
  for (size_t r = 0; r < nk; r++) K *= opt_const_bound(k[r]);
  DType e = loads[0]->dtype, v = uj_dtype_vec((uj_scalar)e.scalar, w), it = k[0]->dtype;
  int64_t alloc[2] = {id, K * J * nv};
  const UOp *p = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)e.scalar, w, UJ_AS_LOCAL), NULL, 0, (Arg){NULL, alloc, 2});
  const UOp *from[TILE_MAX_REDUCE_RANGES + 1], *to[TILE_MAX_REDUCE_RANGES + 1], *nvs = uop_const_int(ctx, it, nv);
  const UOp *js = uop_const_int(ctx, it, J), *c = j ? range_like(ctx, j, axis + (int64_t)nk) : NULL;
  bool ok = p && nvs && js && (!j || c);
  for (size_t r = 0; ok && r < nk; r++) from[r] = k[r], ok = (to[r] = range_like(ctx, k[r], axis + (int64_t)r)) != NULL;
  if (j) from[nk] = j, to[nk] = c;
  size_t nsub = nk + (j != NULL);
  /* the slot of step s (column block c) and of the block's step k (its j) */
  const UOp *s_at = ok ? flat_step(ctx, to, k, nk) : NULL, *k_at = ok ? flat_step(ctx, k, k, nk) : NULL;
  if (s_at && k_at)
    s_at = uop_binary(ctx, UJ_OP_MUL, j ? uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, s_at, js), c) : s_at, nvs),
    k_at = uop_binary(ctx, UJ_OP_MUL, j ? uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, k_at, js), j) : k_at, nvs);
  const UOp **stores = malloc(((size_t)nv + 1) * sizeof *stores), **staged = malloc(m * sizeof *staged);
  ok = ok && s_at && k_at && stores && staged;
  if (ok) stores[0] = j ? c : to[nk - 1];
  for (int64_t g = 0; ok && g < nv; g++) {
    const UOp *off = uop_const_int(ctx, it, g), *lanes[TILE_MAX_PANEL];
    const UOp *dst = uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, uop_binary(ctx, UJ_OP_ADD, s_at, off)}, 2, arg_none());
    const UOp *src = uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, uop_binary(ctx, UJ_OP_ADD, k_at, off)}, 2, arg_none());
    const UOp *row = src ? uop_new(ctx, UJ_OP_LOAD, v, &src, 1, arg_none()) : NULL;
    ok = dst && row;
    for (unsigned l = 0; ok && l < w; l++) {
      int64_t lane = l;
      ok = (lanes[l] = opt_substitute(ctx, loads[g * w + l], from, to, nsub)) != NULL &&
           (staged[g * w + l] = uop_new(ctx, UJ_OP_GEP, e, &row, 1, (Arg){NULL, &lane, 1})) != NULL;
    }
    const UOp *value = ok ? uop_new(ctx, UJ_OP_VECTORIZE, v, lanes, w, arg_none()) : NULL;
    ok = value && (stores[1 + g] = uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){dst, value}, 2, arg_none()));
  }
  /* the loops of the fill, innermost first: [c,] s[nk-1], .., s[0] */
  const UOp *f = ok ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), stores, (uint32_t)nv + 1, arg_none()) : NULL;
  for (size_t r = nk - (j == NULL); f && r-- > 0;)
    f = uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){to[r], f}, 2, arg_none());
  *fill = f;
  const UOp *out = f ? opt_substitute(ctx, block, loads, staged, m) : NULL;
  free(stores), free(staged);
  return out;
}

static bool stores_only(const UOp *e) {
  bool ok = e->op == UJ_OP_END && e->nsrc >= 2;
  for (uint32_t x = 1; x < e->nsrc && ok; x++) ok = e->src[x]->op == UJ_OP_STORE;
  return ok;
}

/* The END of the rows around the END of the columns, whose effects are
 * the block's stores (and upcast's tail loop of stores after it), in a
 * one-nest kernel (batch loops may enclose them); NULL if the kernel is
 * not that. */
static const UOp *rows_end_of(const UOp *kernel) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  for (; e && e->op == UJ_OP_END && (e->nsrc == 2 || e->nsrc == 3) && e->src[1]->op == UJ_OP_END; e = e->src[1]) {
    if (stores_only(e->src[1]) && (e->nsrc == 2 || stores_only(e->src[2]))) return e; /* [2]: upcast's tail loop */
    if (e->nsrc == 3) return NULL;
  }
  return NULL;
}

/* The column loop j moved out around the rows, just inside END `at`
 * (around every loop when at is NULL), block's panel filled at its start:
 *   [END(at, ..] END(i, END(j, block)) [..)] -> [END(at, ] END(j, fill, .. END(i, block)) [..)]
 * Outputs do not read one another, so any loop order computes them. */
static const UOp *columns_out(Ctx *ctx, const UOp *kernel, const UOp *outer, const UOp *at, const UOp *fill,
                              const UOp *block) {
  const UOp *inner = outer->src[1], **src = malloc(block->nsrc * sizeof *src), *rows = NULL;
  if (!src) return ctx_set_error(ctx, "opt_tile: out of memory"), NULL;
  memcpy(src, block->src, block->nsrc * sizeof *src), src[0] = outer->src[0];
  rows = uop_new(ctx, UJ_OP_END, outer->dtype, src, block->nsrc, arg_none());
  free(src);
  const UOp *within = at ? at->src[1] : kernel->src[0]; /* what the column loop goes around */
  const UOp *body = rows ? substitute(ctx, within, outer, rows) : NULL;
  const UOp *cols = body ? uop_new(ctx, UJ_OP_END, inner->dtype, (const UOp *[]){inner->src[0], fill, body}, 3, arg_none()) : NULL;
  if (!at || !cols) return cols ? substitute(ctx, kernel, within, cols) : NULL;
  const UOp *staged = uop_new(ctx, UJ_OP_END, at->dtype, (const UOp *[]){at->src[0], cols}, 2, arg_none());
  return staged ? substitute(ctx, kernel, at, staged) : NULL;
}

/* No tiles, but loops around the rows (a convolution's batch and output
 * rows): the panel of every column block, staged once inside the
 * innermost of them that its loads depend on (else the outermost, which
 * threads may split: what is outside it would run in every part):
 *   END(n, .. END(i, END(j, block)))
 *   -> END(n, fill, .. END(i, END(j, block reading p[(k·J + j)·m/w + ..])))
 * per_block (every block's panel over the budget, one's not): one column
 * block's panel at a time, the column loop moved there (columns_out).
 * once (rows that fit one tile inside batch loops): a GEMM's panel that
 * reads none of those loops (weights) is staged a block at a time with
 * the column loop outermost, so each block's panel is filled once.
 * A convolution's weights are read along the output channels (the
 * columns) 576 elements apart: staged, 2 vector loads a step. */
static const UOp *stage_whole(Ctx *ctx, const UOp *kernel, const UOp *outer, const UOp *const *k, size_t nk,
                              const UOp *const *loads, size_t m, unsigned w, bool per_block, bool once) {
  const UOp *inner = outer->src[1], *j = inner->src[0], *at = NULL;
  for (const UOp *e = kernel->src[0]; e != outer; e = e->src[1]) {
    bool read = false;
    for (size_t x = 0; x < m && !read; x++) read = opt_contains(ctx, loads[x], e->src[0]);
    if (read) at = e;
  }
  /* a GEMM's panel that reads no loop around the rows (weights): each
   * block's once, the column loop outermost; a convolution (a reduction
   * over several RANGEs) keeps its panel inside the batch loop, its
   * input image being the operand read again for each column block */
  bool outermost = !at && once && outer->nsrc == 2 && nk == 1;
  per_block = per_block || outermost;
  if (!at && !outermost) at = kernel->src[0];
  const UOp *fill = NULL, *block = stage_panel(ctx, kernel, inner, k, nk, per_block ? NULL : j, loads, m, w,
                                               opt_next_axis(ctx, kernel), &fill);
  if (!block) return NULL;
  if (!per_block) { /* at: not NULL */
    const UOp *body = substitute(ctx, at->src[1], inner, block);
    const UOp *staged = body ? uop_new(ctx, UJ_OP_END, at->dtype, (const UOp *[]){at->src[0], fill, body}, 3, arg_none()) : NULL;
    return staged ? substitute(ctx, kernel, at, staged) : NULL;
  }
  return columns_out(ctx, kernel, outer, at, fill, block);
}

const UOp *opt_tile(Ctx *ctx, const UOp *kernel, const TargetDesc *target, const OptConfig *config) {
  const UOp *outer = rows_end_of(kernel), *inner = outer ? outer->src[1] : NULL;
  if (!inner || range_kind(outer->src[0]) != AXIS_LOOP || range_kind(inner->src[0]) != AXIS_LOOP) return kernel;
  const UOp *i = outer->src[0], *j = inner->src[0];
  int64_t rows = opt_const_bound(i), blocks = 0, longest = blocked_reduce(ctx, inner);
  bool forced = config->tile != 0;
  if (longest == 0 || (!forced && (opt_const_bound(j) < TILE_MIN_COLUMNS || longest < TILE_MIN_REDUCE))) return kernel;
  const UOp *loads[TILE_MAX_PANEL], *k[TILE_MAX_REDUCE_RANGES];
  size_t nk = 0;
  unsigned w = 0;
  size_t m = config->stage == OPT_OFF ? 0 : panel_loads(ctx, inner, i, j, k, &nk, &w, loads, TILE_MAX_PANEL);
  int64_t elem = m ? (int64_t)elem_bytes(loads[0]->dtype) : 0, panel = m ? longest * (int64_t)m * elem : 0;
  int64_t budget = (int64_t)target_panel_bytes(target);
  bool around = m && kernel->src[0] != outer, whole = around && panel * opt_const_bound(j) <= budget;
  bool per_block = around && !whole && panel <= budget && outer->nsrc == 2;
  if (panel > budget) m = 0;
  /* a tile's rows of the other operand: T blocks of (outputs / m) rows of k elements */
  int64_t rows_per = m ? (int64_t)(inner->nsrc - 1) / (int64_t)m : 0; /* 0 when the panel loads outnumber the outputs (a forced tile) */
  int64_t most = m ? (int64_t)target->l2_bytes / ((rows_per > 0 ? rows_per : 1) * (longest > 0 ? longest : 1) * elem) : TILE_MAX_BLOCKS / 2;
  most = most < TILE_MAX_BLOCKS ? most : TILE_MAX_BLOCKS;
  if (forced) /* any T up to the row blocks (the last tile shorter when T does not divide them); 1: no tiles */
    blocks = config->tile > 1 && config->tile <= (uint64_t)rows ? config->tile : 0;
  /* a GEMM whose row blocks (two or more) all fit, or that has the
   * column blocks for threads to split and rows for 4 tiles: one tile,
   * the column loop outermost, each panel filled once: END(j, fill,
   * END(i, block)); b is then read once, where tiles read it once each
   * (64 x 4096 x 4096: twice, strided). The rows of a stream from L3 (or
   * memory) once a column block: 4 bytes for 64 flops, 8 sequential rows
   * a block, which the prefetchers follow while the block computes, where
   * a tile's refill is strided and stalls the core (2048^3, 8 tiles ->
   * one, one thread: best 128 -> 114 ms and 140 -> 128 in two sessions) */
  bool columns_to_split = opt_const_bound(j) >= TILE_ONE_MIN_COLUMNS && rows >= TILE_ONE_MIN_TILES * most;
  if (!forced && m && rows >= 2 && (rows <= most || columns_to_split) && outer->nsrc == 2 && kernel->src[0] == outer) {
    const UOp *fill = NULL, *block = stage_panel(ctx, kernel, inner, k, nk, NULL, loads, m, w, opt_next_axis(ctx, kernel), &fill);
    return block ? columns_out(ctx, kernel, outer, NULL, fill, block) : NULL;
  }
  /* loops around rows that fit one tile (a batch of rows times the same
   * weights: activations (B, T, D) @ w): tiles would fill the panel again
   * for each tile of each batch step, reading b a row apart; staged once
   * inside the innermost loop it depends on instead (the weights: once),
   * it is filled once a column block. A backward GEMM of a GPT block (8 x
   * 64 rows, k 1024, b^T read 1024 apart): 9.7 -> 3.5 ms, one thread */
  if (!forced && (whole || per_block) && rows <= most) return stage_whole(ctx, kernel, outer, k, nk, loads, m, w, per_block, true);
  for (int64_t t = most; !forced && t >= 2 && !blocks; t--)
    if (rows % t == 0 && rows / t >= TILE_MIN_TILES) blocks = t;
  /* an odd count of tiles below 8 (125 row blocks: 5 of 25) leaves a
   * thread of two idle a tile in 3 to 7: an even count of tiles instead,
   * the last one shorter (125: 32, 32, 32, 29) */
  if (!forced && most >= 2 && rows > most && (!blocks || (rows / blocks % 2 && rows / blocks < TILE_EVEN_BELOW))) {
    int64_t n = (rows + most - 1) / most;
    n += n % 2;
    int64_t even = (rows + n - 1) / n;
    if (even >= 2 && rows - (n - 1) * even >= 1) blocks = even;
  }
  int64_t ntiles = blocks ? (rows + blocks - 1) / blocks : 0, last = rows - (ntiles - 1) * blocks;
  if (!blocks) return whole || per_block ? stage_whole(ctx, kernel, outer, k, nk, loads, m, w, per_block, false) : kernel;
  int64_t axis = opt_next_axis(ctx, kernel);
  const UOp *nt = uop_const_int(ctx, i->dtype, ntiles), *nu = uop_const_int(ctx, i->dtype, blocks);
  const UOp *t = uop_new(ctx, UJ_OP_RANGE, i->dtype, &nt, 1, (Arg){i->name, &axis, 1});
  int64_t axis_u = axis + 1;
  /* the row blocks of tile t: T, or the last tile's (fewer) */
  const UOp *tile_rows = last == blocks || !t ? nu
                         : uop_ternary(ctx, UJ_OP_WHERE, uop_binary(ctx, UJ_OP_CMPEQ, t, uop_const_int(ctx, i->dtype, ntiles - 1)),
                                       uop_const_int(ctx, i->dtype, last), nu);
  const UOp *u = tile_rows ? uop_new(ctx, UJ_OP_RANGE, i->dtype, &tile_rows, 1, (Arg){i->name, &axis_u, 1}) : NULL;
  if (!t || !u) return NULL;
  /* the block: i -> t·T + u; then END(t, END(j, [fill,] END(u, block))) */
  const UOp *row = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, t, nu), u), *block = inner, *fill = NULL;
  if (m && !(block = stage_panel(ctx, kernel, inner, k, nk, NULL, loads, m, w, axis + 2, &fill))) return NULL;
  const UOp **effects = malloc(block->nsrc * sizeof *effects), *rows_end = NULL;
  if (!effects) return ctx_set_error(ctx, "opt_tile: out of memory"), NULL;
  bool ok = row != NULL;
  effects[0] = u;
  for (uint32_t x = 1; ok && x < block->nsrc; x++) ok = (effects[x] = substitute(ctx, block->src[x], i, row)) != NULL;
  if (ok) rows_end = uop_new(ctx, UJ_OP_END, block->dtype, effects, block->nsrc, arg_none());
  free(effects);
  if (!rows_end) return NULL;
  const UOp *cols_end = fill ? uop_new(ctx, UJ_OP_END, inner->dtype, (const UOp *[]){j, fill, rows_end}, 3, arg_none())
                             : uop_new(ctx, UJ_OP_END, inner->dtype, (const UOp *[]){j, rows_end}, 2, arg_none());
  const UOp *tail = NULL; /* upcast's tail loop, for each row block of the tile: END(u', tail(t·T + u')) */
  if (outer->nsrc == 3) {
    int64_t axis_v = axis + 3 + (int64_t)nk; /* after the fill's ranges */
    const UOp *v = uop_new(ctx, UJ_OP_RANGE, i->dtype, &tile_rows, 1, (Arg){i->name, &axis_v, 1});
    const UOp *row_v = v ? uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, t, nu), v) : NULL;
    const UOp *rest = row_v ? substitute(ctx, outer->src[2], i, row_v) : NULL;
    if (!rest || !(tail = uop_new(ctx, UJ_OP_END, outer->dtype, (const UOp *[]){v, rest}, 2, arg_none()))) return NULL;
  }
  const UOp *tiles_end = uop_new(ctx, UJ_OP_END, outer->dtype, (const UOp *[]){t, cols_end, tail}, tail ? 3 : 2, arg_none());
  return tiles_end ? substitute(ctx, kernel, outer, tiles_end) : NULL;
}
