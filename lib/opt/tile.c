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
 * The panel is staged: copied, once per tile and column block, into an
 * ALLOC of k × (its loads) elements in that order, which the block reads
 * instead. In place, b's rows lie a row of b apart (4 KiB for 1024
 * columns): the panel's lines then fall in a few cache sets and evict
 * each other from L1 and L2 however small the panel is; staged they are
 * contiguous. The copy costs k·m loads and stores a tile of T row blocks
 * that do T·k·m·(block rows) multiply-adds. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "uop/alu.h"

/* T: the tile's rows of the other operand within 512 KiB (128 rows of
 * k = 1024 float32, 64 of 2048: with a panel of up to 512 KiB they stay
 * in a 2 MiB L2), at most 16 row blocks (8 without a staged panel); at
 * least 2 tiles so that threads have tiles to split; the reduction at
 * least 64 long and 2 column blocks, or there is nothing to reuse.
 * Measured on 1024^3 float32, one thread: T = 8 21 ms, 16 17 ms; on
 * 2048^3, T = 16 225 ms, 8 185 ms. */
enum { TILE_MAX_BLOCKS = 16, TILE_MIN_TILES = 2, TILE_MIN_REDUCE = 64, TILE_MIN_COLUMNS = 2, TILE_ROWS_BYTES = 512 << 10 };

/* The staged panel: at most 64 loads a step (2 AVX-512 registers of
 * int8), at most half the CPU's 1 MiB of kernel stack (docs/semantics.md,
 * ALLOC): k <= 4096 for 32 float32 columns. */
enum { TILE_MAX_PANEL = 64, TILE_MAX_PANEL_BYTES = 512 << 10 };

static int64_t const_bound(const UOp *r) {
  const UOp *b = r->op == UJ_OP_RANGE ? r->src[0] : NULL;
  return b && b->op == UJ_OP_CONST && b->bounded ? b->vmin : 0;
}

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
    for (uint32_t k = 1; k < u->nsrc; k++) len *= const_bound(u->src[k]);
    longest = len > longest ? len : longest;
  }
  free(nodes);
  return longest;
}

static const UOp *substitute(Ctx *ctx, const UOp *x, const UOp *from, const UOp *to) {
  return opt_substitute(ctx, x, &from, &to, 1);
}

/* The panel: the distinct loads of the block that vary along the
 * reduction k and the columns j but not along the rows (i); each one
 * REDUCE's only range is k; *w: the REDUCEs' lanes (a register), which
 * must divide their count. 0 when the block is not that or has more
 * than max of them. */
static size_t panel_loads(Ctx *ctx, const UOp *block, const UOp *i, const UOp *j, const UOp **k, unsigned *w, const UOp **out,
                          size_t max) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, block, &nodes), m = 0;
  bool ok = n > 0;
  *k = NULL, *w = 0;
  for (size_t x = 0; ok && x < n; x++) {
    const UOp *u = nodes[x];
    if (u->op == UJ_OP_REDUCE) ok = u->nsrc == 2 && (!*k || *k == u->src[1]), *k = u->src[1], *w = u->dtype.lanes;
    if (u->op == UJ_OP_ALLOC) ok = false; /* staged already */
  }
  for (size_t x = 0; ok && *k && x < n; x++) {
    const UOp *u = nodes[x], *idx = u->op == UJ_OP_LOAD ? u->src[0] : NULL;
    if (!idx || idx->op != UJ_OP_INDEX || !opt_contains(ctx, idx, *k) || !opt_contains(ctx, idx, j) || opt_contains(ctx, idx, i)) continue;
    ok = idx->nsrc == 2 && m < max;
    if (ok) out[m++] = u;
  }
  free(nodes);
  return ok && *k && *w > 1 && m % *w == 0 ? m : 0;
}

/* The panel staged in vectors of w lanes (w divides m): ALLOC p of
 * K·m/w of them, filled by
 *   END(s, STORE(p[s·m/w + g], VECTORIZE(load_(g·w + l)(k := s) for l < w)) for g < m/w)
 * and the block's load_c read back as GEP(LOAD(p[k·m/w + c/w]), c mod w)
 * (whole-register copies: scalar stores made LLVM's loop vectorizer
 * gather and scatter across steps). *fill: that END; returns the block
 * rewritten; NULL on failure. */
static const UOp *stage_panel(Ctx *ctx, const UOp *kernel, const UOp *block, const UOp *k, const UOp *const *loads, size_t m,
                              unsigned w, int64_t axis, const UOp **fill) {
  int64_t K = const_bound(k), id = 0, nv = (int64_t)(m / w);
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  for (size_t x = 0; x < n; x++)
    if (nodes[x]->op == UJ_OP_ALLOC && nodes[x]->ints[0] >= id) id = nodes[x]->ints[0] + 1;
  free(nodes);
  DType e = loads[0]->dtype, v = uj_dtype_vec((uj_scalar)e.scalar, w);
  int64_t alloc[2] = {id, K * nv};
  const UOp *p = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)e.scalar, w, UJ_AS_LOCAL), NULL, 0, (Arg){NULL, alloc, 2});
  const UOp *bound = uop_const_int(ctx, k->dtype, K), *nvs = uop_const_int(ctx, k->dtype, nv);
  const UOp *s = uop_new(ctx, UJ_OP_RANGE, k->dtype, &bound, 1, (Arg){"loop", &axis, 1});
  const UOp **stores = malloc(((size_t)nv + 1) * sizeof *stores), **staged = malloc(m * sizeof *staged);
  bool ok = p && s && nvs && stores && staged;
  if (ok) stores[0] = s;
  for (int64_t g = 0; ok && g < nv; g++) {
    const UOp *off = uop_const_int(ctx, k->dtype, g), *lanes[TILE_MAX_PANEL];
    const UOp *dst = uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, s, nvs), off)}, 2, arg_none());
    const UOp *src = uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, k, nvs), off)}, 2, arg_none());
    const UOp *row = src ? uop_new(ctx, UJ_OP_LOAD, v, &src, 1, arg_none()) : NULL;
    ok = dst && row;
    for (unsigned l = 0; ok && l < w; l++) {
      int64_t lane = l;
      ok = (lanes[l] = substitute(ctx, loads[g * w + l], k, s)) != NULL &&
           (staged[g * w + l] = uop_new(ctx, UJ_OP_GEP, e, &row, 1, (Arg){NULL, &lane, 1})) != NULL;
    }
    const UOp *value = ok ? uop_new(ctx, UJ_OP_VECTORIZE, v, lanes, w, arg_none()) : NULL;
    ok = value && (stores[1 + g] = uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){dst, value}, 2, arg_none()));
  }
  *fill = ok ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), stores, (uint32_t)nv + 1, arg_none()) : NULL;
  const UOp *out = *fill ? opt_substitute(ctx, block, loads, staged, m) : NULL;
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

const UOp *opt_tile(Ctx *ctx, const UOp *kernel, const OptConfig *config) {
  const UOp *outer = rows_end_of(kernel), *inner = outer ? outer->src[1] : NULL;
  if (!inner || range_kind(outer->src[0]) != AXIS_LOOP || range_kind(inner->src[0]) != AXIS_LOOP) return kernel;
  const UOp *i = outer->src[0], *j = inner->src[0];
  int64_t rows = const_bound(i), blocks = 0, longest = blocked_reduce(ctx, inner);
  bool forced = config->tile != 0;
  if (config->tile == 1 || longest == 0 || (!forced && (const_bound(j) < TILE_MIN_COLUMNS || longest < TILE_MIN_REDUCE)))
    return kernel;
  const UOp *loads[TILE_MAX_PANEL], *k = NULL;
  unsigned w = 0;
  size_t m = config->stage == OPT_OFF ? 0 : panel_loads(ctx, inner, i, j, &k, &w, loads, TILE_MAX_PANEL);
  int64_t elem = m ? (int64_t)elem_bytes(loads[0]->dtype) : 0;
  if (m && const_bound(k) * (int64_t)m * elem > TILE_MAX_PANEL_BYTES) m = 0;
  /* a tile's rows of the other operand: T blocks of (outputs / m) rows of k elements */
  int64_t most = m ? TILE_ROWS_BYTES / ((int64_t)(inner->nsrc - 1) / (int64_t)m * longest * elem) : TILE_MAX_BLOCKS / 2;
  most = most < TILE_MAX_BLOCKS ? most : TILE_MAX_BLOCKS;
  if (forced) /* any T that divides the row blocks */
    blocks = config->tile <= (uint64_t)rows && rows % config->tile == 0 ? config->tile : 0;
  for (int64_t t = most; !forced && t >= 2 && !blocks; t--)
    if (rows % t == 0 && rows / t >= TILE_MIN_TILES) blocks = t;
  if (!blocks) return kernel;
  int64_t axis = opt_next_axis(ctx, kernel);
  const UOp *nt = uop_const_int(ctx, i->dtype, rows / blocks), *nu = uop_const_int(ctx, i->dtype, blocks);
  const UOp *t = uop_new(ctx, UJ_OP_RANGE, i->dtype, &nt, 1, (Arg){i->name, &axis, 1});
  int64_t axis_u = axis + 1;
  const UOp *u = uop_new(ctx, UJ_OP_RANGE, i->dtype, &nu, 1, (Arg){i->name, &axis_u, 1});
  if (!t || !u) return NULL;
  /* the block: i -> t·T + u; then END(t, END(j, [fill,] END(u, block))) */
  const UOp *row = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, t, nu), u), *block = inner, *fill = NULL;
  if (m && !(block = stage_panel(ctx, kernel, inner, k, loads, m, w, axis + 2, &fill))) return NULL;
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
    int64_t axis_v = axis + 3;
    const UOp *v = uop_new(ctx, UJ_OP_RANGE, i->dtype, &nu, 1, (Arg){i->name, &axis_v, 1});
    const UOp *row_v = v ? uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, t, nu), v) : NULL;
    const UOp *rest = row_v ? substitute(ctx, outer->src[2], i, row_v) : NULL;
    if (!rest || !(tail = uop_new(ctx, UJ_OP_END, outer->dtype, (const UOp *[]){v, rest}, 2, arg_none()))) return NULL;
  }
  const UOp *tiles_end = uop_new(ctx, UJ_OP_END, outer->dtype, (const UOp *[]){t, cols_end, tail}, tail ? 3 : 2, arg_none());
  return tiles_end ? substitute(ctx, kernel, outer, tiles_end) : NULL;
}
