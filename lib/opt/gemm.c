/* gemm.c — a GEMM (and a convolution, as an implicit GEMM) on a GPU in
 * shared-memory tiles with register blocks (opt.h, docs/opt.md "GPU
 * kernels").
 *
 * In: a kernel for a target with workgroups that is a nest of loops
 * around one STORE whose value reads one float REDUCE of a product of two
 * loads, a and b:
 *
 *   END(r.., STORE(out(r..), g(REDUCE(a · b, k..))))
 *
 * Each loop of the nest is a column (b reads it, a does not: a GEMM's j,
 * a convolution's image, y and x; b is the operand that reads the
 * innermost loop), a row (a reads it, b does not: i, an output channel)
 * or a batch (both or neither); the
 * REDUCE's ranges are k (a convolution's input channel and window).
 * Rows, columns, k and batches are each flattened, outermost first, into
 * one index (i = ((r0·b1 + r1)·b2 + r2)...): an M x N GEMM over K in
 * batches, with constant bounds. Out: a workgroup of 16 x 16 threads a
 * BM x BN block of outputs, each thread a TM x TN register block (a
 * `reg` ALLOC of accumulators): 128 x 128 and 8 x 8 where such blocks
 * cover the SMs, else 64 x 64 and 4 x 4 (Tiles, below). Per k tile of BK
 * (8, 16) the threads copy the block's BM x BK tile of a (stored k-major)
 * and BK x BN tile of b to `local` memory (four elements each per operand, adjacent
 * threads on adjacent k of a's rows and adjacent columns of b: coalesced
 * where the operands are contiguous there), wait at a BARRIER, run the
 * tile's BK steps (each thread: TM loads of a, TN of b, TM x TN
 * multiply-adds), and wait again before the next copy. Each output is still reduced in k order (the
 * REDUCE's loops, outermost first) from the identity, one step at a time
 * (MULACC: fused as the REDUCE's; ADD of a product: rounded twice as the
 * REDUCE's), so the words are the serial kernel's. The epilogue g (a
 * bias, an activation) is applied to each accumulator at the store.
 * Bounds the tiles do not divide are guarded: copies past the end load
 * zero (a gated INDEX; an operand's own gates, a convolution's padding,
 * stay), a step past k keeps its accumulator (so even a -0.0 sum stays
 * the serial kernel's), stores past the end are gated off. Every global
 * load of a and b is shared by a block: 64 x fewer than a thread per
 * output reading its row and column. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

/* The tiles: a block of BM x BN outputs, k tiles of BK, a thread TM x TN
 * outputs; THREADS threads (TY x TX) each copy FILL elements of each
 * operand's tile. The large tiles (CUTLASS's SIMT shape) do 64
 * multiply-adds a thread for 2 + 2 vector shared loads a step, the small
 * ones 16 for 1 + 1: large where their blocks still cover the GPU's SMs. */
typedef struct Tiles {
  int bm, bn, bk, tm, tn;
} Tiles;
enum { THREADS = 256, FILL = 4, MAX_TM = 8, MAX_TN = 8, MAX_FILL = 4 };
/* a's tile is stored k-major, a row of BM + A_PAD: a thread's TM rows of
 * a step are then adjacent (ld.shared.v4), and the copy's threads, on
 * adjacent k, write rows 4 banks apart, not into one bank */
enum { A_PAD = 4 };
static const Tiles small_tiles = {64, 64, 16, 4, 4}, large_tiles = {128, 128, 8, 8, 8};
_Static_assert(64 / 4 * (64 / 4) == THREADS && 64 * 16 == FILL * THREADS, "the small tiles");
_Static_assert(128 / 8 * (128 / 8) == THREADS && 128 * 8 == FILL * THREADS, "the large tiles");
enum { MAX_AXES = 8 };

/* Ranges flattened into one index, outermost first. */
typedef struct Axes {
  const UOp *r[MAX_AXES];
  int64_t bound[MAX_AXES];
  size_t n;
  int64_t total;
} Axes;

typedef struct Gemm {
  Ctx *ctx;
  Tiles t;
  DType it;                          /* the index type */
  Axes batch, rows, cols, ks;
  const UOp *store, *reduce, *a, *b; /* a reads the rows, b the columns */
  int64_t axis, alloc;               /* the next RANGE axis and ALLOC id */
} Gemm;

static const UOp *bin(Ctx *ctx, Op op, const UOp *x, const UOp *y) { return x && y ? uop_binary(ctx, op, x, y) : NULL; }
static const UOp *cint(Gemm *g, int64_t v) { return uop_const_int(g->ctx, g->it, v); }
static const UOp *void_node(Ctx *ctx, Op op, const UOp *const *src, size_t n) {
  for (size_t s = 0; s < n; s++)
    if (!src[s]) return NULL;
  return uop_new(ctx, op, dt_scalar(UJ_VOID), src, (uint32_t)n, arg_none());
}
static const UOp *store_of(Ctx *ctx, const UOp *p, const UOp *v) { return void_node(ctx, UJ_OP_STORE, (const UOp *[]){p, v}, 2); }
static const UOp *at(Ctx *ctx, const UOp *mem, const UOp *x) {
  return mem && x ? uop_new(ctx, UJ_OP_INDEX, mem->dtype, (const UOp *[]){mem, x}, 2, arg_none()) : NULL;
}
static const UOp *load(Ctx *ctx, const UOp *p) { return p ? uop_new(ctx, UJ_OP_LOAD, dt_base(p->dtype), &p, 1, arg_none()) : NULL; }
static const UOp *range(Gemm *g, const char *kind, int64_t bound) {
  return uop_new(g->ctx, UJ_OP_RANGE, g->it, (const UOp *[]){cint(g, bound)}, 1, (Arg){kind, (int64_t[]){g->axis++}, 1});
}
static const UOp *alloc(Gemm *g, uj_addrspace space, int64_t count) {
  return uop_new(g->ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)g->reduce->dtype.scalar, 1, space), NULL, 0,
                 (Arg){NULL, (int64_t[]){g->alloc++, count}, 2});
}
static const UOp *affine(Gemm *g, const UOp *x, int64_t scale, const UOp *plus) {
  return bin(g->ctx, UJ_OP_ADD, bin(g->ctx, UJ_OP_MUL, x, cint(g, scale)), plus);
}

/* ---- flattened indices ---- */

static bool axes_add(Axes *x, const UOp *r) {
  int64_t b = opt_const_bound(r);
  if (x->n == MAX_AXES || b <= 0 || __builtin_mul_overflow(x->total ? x->total : 1, b, &x->total)) return false;
  x->r[x->n] = r, x->bound[x->n++] = b;
  return true;
}

/* Each range of x as the flat index f says: (f / inner) % bound (no %
 * for the outermost, whose f past the end the caller gates), into from
 * and to at *n. */
static void decompose(Gemm *g, const Axes *x, const UOp *f, const UOp **from, const UOp **to, size_t *n) {
  int64_t inner = 1;
  for (size_t t = x->n; t-- > 0;) {
    const UOp *v = inner == 1 ? f : bin(g->ctx, UJ_OP_IDIV, f, cint(g, inner));
    from[*n] = x->r[t], to[(*n)++] = t ? bin(g->ctx, UJ_OP_MOD, v, cint(g, x->bound[t])) : v;
    inner *= x->bound[t];
  }
}

/* x with from[] read as to[]. */
static const UOp *subst(Gemm *g, const UOp *x, const UOp *const *from, const UOp *const *to, size_t n) {
  for (size_t s = 0; s < n; s++)
    if (!to[s]) return NULL;
  return x ? opt_substitute(g->ctx, x, from, to, n) : NULL;
}

/* ---- gates ---- */

/* ptr (an INDEX) valid only where valid is too: NULL valid leaves it. */
static const UOp *gate(Gemm *g, const UOp *ptr, const UOp *valid) {
  if (!valid || !ptr) return ptr;
  if (ptr->op != UJ_OP_INDEX || ptr->nsrc < 2) return NULL;
  const UOp *both = ptr->nsrc == 3 ? bin(g->ctx, UJ_OP_AND, ptr->src[2], valid) : valid;
  return both ? uop_new(g->ctx, UJ_OP_INDEX, ptr->dtype, (const UOp *[]){ptr->src[0], ptr->src[1], both}, 3, arg_none()) : NULL;
}

/* A LOAD or STORE with its pointer gated (a gated-off LOAD gives zero,
 * or its alt; a gated-off STORE writes nothing). */
static const UOp *gate_access(Gemm *g, const UOp *x, const UOp *valid) {
  if (!x || !valid) return x;
  const UOp *p = gate(g, x->src[0], valid), *src[2] = {p, x->nsrc > 1 ? x->src[1] : NULL};
  return p ? uop_new(g->ctx, x->op, x->dtype, src, x->nsrc, arg_none()) : NULL;
}

/* x < bound, or NULL when every x is (the tiles divide bound). */
static const UOp *below(Gemm *g, const UOp *x, int64_t bound, int64_t tile) {
  return bound % tile ? bin(g->ctx, UJ_OP_CMPLT, x, cint(g, bound)) : NULL;
}
static const UOp *both(Gemm *g, const UOp *x, const UOp *y) { return x && y ? bin(g->ctx, UJ_OP_AND, x, y) : x ? x : y; }

/* ---- the shape ---- */

/* The loads of the product, its REDUCE's ranges; false when the value
 * is not one REDUCE of a product of two LOADs. */
static bool find_product(Ctx *ctx, Gemm *g) {
  const UOp **reads = NULL;
  size_t nr = opt_reduces_read(ctx, g->store->src[1], true, &reads);
  g->reduce = nr == 1 ? reads[0] : NULL;
  free(reads);
  const UOp *r = g->reduce;
  if (!r || r->nsrc < 2 || r->dtype.lanes != 1 || !dt_is_float(r->dtype)) return false;
  Op op = opt_reduce_op(r);
  const UOp *prod = r->src[0];
  if ((op != UJ_OP_MULACC && op != UJ_OP_ADD) || prod->op != UJ_OP_MUL || prod->src[0]->op != UJ_OP_LOAD ||
      prod->src[1]->op != UJ_OP_LOAD || prod->src[0]->src[0]->op != UJ_OP_INDEX || prod->src[1]->src[0]->op != UJ_OP_INDEX)
    return false;
  for (uint32_t s = 1; s < r->nsrc; s++)
    if (!axes_add(&g->ks, r->src[s]) || !dt_eq(r->src[s]->dtype, g->it)) return false;
  g->a = prod->src[0], g->b = prod->src[1];
  return true;
}

/* The nest's loops as rows, columns and batches by what each operand
 * reads (a the rows; the operands swapped when b does), big enough for a
 * tile of outputs and one of k, its flat indices within the index type
 * and the grid. */
static bool find_gemm(Ctx *ctx, const UOp *kernel, const TargetDesc *t, Gemm *g) {
  *g = (Gemm){.ctx = ctx};
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL, *nest[MAX_AXES];
  size_t n = 0;
  for (; e && e->op == UJ_OP_END && e->nsrc == 2 && n < MAX_AXES; e = e->src[1]) nest[n++] = e->src[0];
  if (n < 2 || !e || e->op != UJ_OP_STORE || e->src[1]->dtype.lanes != 1) return false;
  g->store = e, g->it = nest[0]->dtype;
  if (!find_product(ctx, g)) return false;
  /* b is the operand that reads the innermost loop (the fastest-moving
   * output: the columns, adjacent threads' stores adjacent) */
  if (opt_depends(ctx, g->a, nest[n - 1]) && !opt_depends(ctx, g->b, nest[n - 1])) {
    const UOp *x = g->a;
    g->a = g->b, g->b = x;
  }
  for (size_t s = 0; s < n; s++) {
    bool ra = opt_depends(ctx, g->a, nest[s]), rb = opt_depends(ctx, g->b, nest[s]);
    Axes *to = ra == rb ? &g->batch : ra ? &g->rows : &g->cols;
    if (!dt_eq(nest[s]->dtype, g->it) || !axes_add(to, nest[s])) return false;
  }
  int64_t m = g->rows.total, nn = g->cols.total, k = g->ks.total, z = g->batch.n ? g->batch.total : 1;
  int64_t limit = dt_bits(g->it) >= 64 ? INT64_MAX / 2 : INT32_MAX / 2, outputs;
  /* the large tiles where their blocks cover the SMs, else the small ones */
  int64_t large = ((m + 127) / 128) * ((nn + 127) / 128) * z;
  g->t = m >= 128 && nn >= 128 && large >= (int64_t)t->cores ? large_tiles : small_tiles;
  int64_t bm = g->t.bm, bn = g->t.bn, bk = g->t.bk;
  if (!g->rows.n || !g->cols.n || k < bk || __builtin_mul_overflow(m, nn, &outputs) || outputs < 64 * 64 ||
      __builtin_mul_overflow(outputs, z, &outputs) || outputs > limit || m + bm > limit || nn + bn > limit ||
      k + bk > limit)
    return false;
  if ((m + bm - 1) / bm > t->max_grid[1] || (nn + bn - 1) / bn > t->max_grid[0] || z > t->max_grid[2]) return false;
  /* the output's index reads the nest only: no other loop */
  for (size_t s = 0; s < g->ks.n; s++)
    if (opt_depends(ctx, g->store->src[0], g->ks.r[s])) return false;
  return true;
}

/* ---- the tiled kernel ---- */

/* Element f of a thread's share of an operand's tile in local memory
 * mem: a's BM x BK tile (row THREADS/BK·f + thread / BK, column thread %
 * BK: adjacent threads on adjacent k) or b's BK x BN tile (row
 * THREADS/BN·f + thread / BN, column thread % BN: adjacent columns),
 * the load gated past the bounds. */
static const UOp *copy_one(Gemm *g, bool is_a, int f, const UOp *blk, const UOp *thread, const UOp *kt, const UOp *mem) {
  Ctx *ctx = g->ctx;
  int64_t width = is_a ? g->t.bk : g->t.bn, block = is_a ? g->t.bm : g->t.bn, bk = g->t.bk;
  const UOp *r = bin(ctx, UJ_OP_ADD, cint(g, THREADS / width * f), bin(ctx, UJ_OP_IDIV, thread, cint(g, width)));
  const UOp *c = bin(ctx, UJ_OP_MOD, thread, cint(g, width));
  const UOp *outer = affine(g, blk, block, is_a ? r : c), *k = affine(g, kt, bk, is_a ? c : r);
  const Axes *axes = is_a ? &g->rows : &g->cols;
  const UOp *from[2 * MAX_AXES], *to[2 * MAX_AXES];
  size_t nf = 0;
  decompose(g, axes, outer, from, to, &nf), decompose(g, &g->ks, k, from, to, &nf);
  const UOp *valid = both(g, below(g, outer, axes->total, block), below(g, k, g->ks.total, bk));
  const UOp *slot = is_a ? affine(g, c, block + A_PAD, r) : affine(g, r, width, c); /* a's tile transposed (k-major) */
  return store_of(ctx, at(ctx, mem, slot), gate_access(g, subst(g, is_a ? g->a : g->b, from, to, nf), valid));
}

/* One step kk of a k tile: every accumulator (r, c) takes the product of
 * the thread's row r of a's tile and column c of b's, in the REDUCE's
 * operand order; past k it keeps its value. END(kk, stores). */
static const UOp *step_end(Gemm *g, const UOp *const *thr, const UOp *kt, const UOp *kk, const UOp *as, const UOp *bs,
                           const UOp *acc) {
  Ctx *ctx = g->ctx;
  Op op = opt_reduce_op(g->reduce);
  bool a_first = g->reduce->src[0]->src[0] == g->a;
  int bk = g->t.bk, bn = g->t.bn, tm = g->t.tm, tn = g->t.tn;
  const UOp *inside = below(g, affine(g, kt, bk, kk), g->ks.total, bk), *step[MAX_TM * MAX_TN + 1];
  size_t n = 0;
  step[n++] = kk;
  for (int r = 0; r < tm; r++)
    for (int c = 0; c < tn; c++) {
      const UOp *x = load(ctx, at(ctx, as, affine(g, kk, g->t.bm + A_PAD, affine(g, thr[0], tm, cint(g, r)))));
      const UOp *y = load(ctx, at(ctx, bs, affine(g, kk, bn, affine(g, thr[1], tn, cint(g, c)))));
      const UOp *p = a_first ? x : y, *q = a_first ? y : x, *slot = at(ctx, acc, cint(g, r * tn + c)), *old = load(ctx, slot);
      const UOp *next = op == UJ_OP_MULACC && p && q && old ? uop_ternary(ctx, UJ_OP_MULACC, p, q, old)
                                                            : bin(ctx, UJ_OP_ADD, old, bin(ctx, UJ_OP_MUL, p, q));
      if (inside) next = next && old ? uop_ternary(ctx, UJ_OP_WHERE, inside, next, old) : NULL;
      step[n++] = store_of(ctx, slot, next);
    }
  return void_node(ctx, UJ_OP_END, step, n);
}

/* The block's outputs: the epilogue of each accumulator, gated past the
 * bounds; into body[], returning how many. */
static size_t outputs(Gemm *g, const UOp *const *blk, const UOp *const *thr, const UOp *acc, const UOp **body) {
  size_t n = 0;
  int bm = g->t.bm, bn = g->t.bn, tm = g->t.tm, tn = g->t.tn;
  for (int r = 0; r < tm; r++)
    for (int c = 0; c < tn; c++) {
      const UOp *from[2 * MAX_AXES + 1], *to[2 * MAX_AXES + 1];
      size_t nf = 0;
      const UOp *row = affine(g, blk[0], bm, affine(g, thr[0], tm, cint(g, r)));
      const UOp *col = affine(g, blk[1], bn, affine(g, thr[1], tn, cint(g, c)));
      decompose(g, &g->rows, row, from, to, &nf), decompose(g, &g->cols, col, from, to, &nf);
      from[nf] = g->reduce, to[nf++] = load(g->ctx, at(g->ctx, acc, cint(g, r * tn + c)));
      const UOp *out = subst(g, g->store, from, to, nf);
      body[n++] = gate_access(g, out, both(g, below(g, row, g->rows.total, bm), below(g, col, g->cols.total, bn)));
    }
  return n;
}

const UOp *opt_gemm(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use) {
  Gemm gemm, *g = &gemm;
  if (use == OPT_OFF || t->kind != TARGET_DESC_GPU || t->max_threads < THREADS || !find_gemm(ctx, kernel, t, g) ||
      (size_t)((g->t.bm + A_PAD) * g->t.bk + g->t.bk * g->t.bn) * 4 > t->shared_bytes)
    return kernel;
  int bm = g->t.bm, bn = g->t.bn, bk = g->t.bk, tm = g->t.tm, tn = g->t.tn;
  g->axis = opt_next_axis(ctx, kernel), g->alloc = opt_next_alloc_id(ctx, kernel);
  const UOp *batch = g->batch.n ? range(g, "global", g->batch.total) : NULL;
  const UOp *blk[2] = {range(g, "global", (g->rows.total + bm - 1) / bm), range(g, "global", (g->cols.total + bn - 1) / bn)};
  const UOp *thr[2] = {range(g, "local", bm / tm), range(g, "local", bn / tn)};
  const UOp *kt = range(g, "loop", (g->ks.total + bk - 1) / bk), *kk = range(g, "loop", bk);
  const UOp *as = alloc(g, UJ_AS_LOCAL, (bm + A_PAD) * bk), *bs = alloc(g, UJ_AS_LOCAL, bk * bn), *acc = alloc(g, UJ_AS_REG, tm * tn);
  const UOp *barrier = void_node(ctx, UJ_OP_BARRIER, NULL, 0);
  const UOp *thread = affine(g, thr[0], bn / tn, thr[1]); /* 0 .. 255 */
  const UOp *body[1 + MAX_TM * MAX_TN + 1 + MAX_TM * MAX_TN], *tile[1 + 2 * MAX_FILL + 3];
  size_t nb = 0, nt = 0;
  body[nb++] = thr[1];
  const UOp *zero = uop_const_word(ctx, g->reduce->dtype, alu_identity(UJ_OP_ADD, (uj_scalar)g->reduce->dtype.scalar));
  for (int q = 0; q < tm * tn; q++) body[nb++] = store_of(ctx, at(ctx, acc, cint(g, q)), zero);
  tile[nt++] = kt;
  for (int f = 0; f < FILL; f++)
    tile[nt++] = copy_one(g, true, f, blk[0], thread, kt, as), tile[nt++] = copy_one(g, false, f, blk[1], thread, kt, bs);
  tile[nt++] = barrier;
  tile[nt++] = step_end(g, thr, kt, kk, as, bs, acc);
  tile[nt++] = barrier;
  body[nb++] = void_node(ctx, UJ_OP_END, tile, nt);
  nb += outputs(g, blk, thr, acc, body + nb);
  const UOp *e = void_node(ctx, UJ_OP_END, body, nb);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){thr[0], e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){blk[1], e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){blk[0], e}, 2);
  if (batch && e) { /* the batches, flattened into the grid's third dimension */
    const UOp *from[MAX_AXES], *to[MAX_AXES];
    size_t nf = 0;
    decompose(g, &g->batch, batch, from, to, &nf);
    e = void_node(ctx, UJ_OP_END, (const UOp *[]){batch, subst(g, e, from, to, nf)}, 2);
  }
  return e ? uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &e, 1, arg_none()) : NULL;
}
