/* gemm.c — a GEMM on a GPU in shared-memory tiles with register blocks
 * (opt.h, docs/opt.md "GPU kernels").
 *
 * In: a kernel for a target with workgroups that is one output loop pair
 * around one STORE whose value reads one REDUCE over k of a product of
 * two loads, one free of j (a[i, k]), one free of i (b[k, j]):
 *
 *   END(i, END(j, STORE(out(i, j), g(REDUCE(a(i, k) · b(k, j), k)))))
 *
 * with constant bounds, inside at most one batch loop (a batched matmul:
 * its range becomes the grid's third dimension). Out: a workgroup of 16 x
 * 16 threads a BM x BN = 64 x 64 block of outputs, each thread a 4 x 4
 * register block (a `reg` ALLOC of 16 accumulators). Per k tile of BK =
 * 16 the threads copy the block's 64 x 16 tile of a and 16 x 64 tile of
 * b to `local` memory (four elements each per operand, adjacent threads
 * on adjacent elements of a row: coalesced), wait at a BARRIER, run the
 * tile's 16 steps (each thread: 4 loads of a, 4 of b, 16 multiply-adds),
 * and wait again before the next copy. Each output is still reduced in
 * k order from the identity, one step at a time (MULACC: fused as the
 * REDUCE's; ADD of a product: rounded twice as the REDUCE's), so the
 * words are the serial kernel's. The epilogue g (a bias, an activation)
 * is applied to each accumulator at the block's store. Bounds the tiles
 * do not divide are guarded: copies past the end load zero (a gated
 * INDEX), a step past k keeps its accumulator (so even a -0.0 sum stays
 * the serial kernel's), stores past the end are gated off. Every global load
 * of a and b is now shared by a block: 64 x fewer than one thread per
 * output reading its row and column. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

enum { BM = 64, BN = 64, BK = 16, TM = 4, TN = 4, TY = BM / TM, TX = BN / TN, THREADS = TY * TX };
_Static_assert(THREADS == 256 && BM * BK % THREADS == 0 && BK * BN % THREADS == 0 && BN % TX == 0, "tile shapes");
enum { FILL = BM * BK / THREADS, ROWS_A_STEP = THREADS / BK, ROWS_B_STEP = THREADS / BN };

typedef struct Gemm {
  Ctx *ctx;
  DType it;                 /* the index type */
  const UOp *batch;         /* the batch loop's range, or NULL */
  const UOp *i, *j, *k;     /* the output rows, columns and the reduction */
  const UOp *store, *reduce, *a, *b; /* a: the load free of j, b: the one free of i */
  int64_t m, n, kn;         /* their bounds */
  int64_t axis, alloc;      /* the next RANGE axis and ALLOC id */
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
/* x with the ranges from[] read as to[]. */
static const UOp *subst(Gemm *g, const UOp *x, const UOp *const *from, const UOp *const *to, size_t n) {
  for (size_t s = 0; s < n; s++)
    if (!to[s]) return NULL;
  return opt_substitute(g->ctx, x, from, to, n);
}

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

/* The nest SINK(END(b?, END(i, END(j, STORE)))): false when not one. */
static bool find_nest(const UOp *kernel, Gemm *g) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL, *nest[4];
  int n = 0;
  for (; e && e->op == UJ_OP_END && e->nsrc == 2 && n < 4; e = e->src[1]) nest[n++] = e->src[0];
  if (n < 2 || n > 3 || !e || e->op != UJ_OP_STORE || e->src[1]->dtype.lanes != 1) return false;
  g->batch = n == 3 ? nest[0] : NULL, g->i = nest[n - 2], g->j = nest[n - 1], g->store = e;
  return !g->batch || opt_const_bound(g->batch) > 0;
}

/* The kernel's shape, when it is one this pass takes: big enough for a
 * tile of outputs and one of k. */
static bool find_gemm(Ctx *ctx, const UOp *kernel, Gemm *g) {
  *g = (Gemm){.ctx = ctx};
  if (!find_nest(kernel, g)) return false;
  const UOp *st = g->store, **reads = NULL;
  size_t nr = opt_reduces_read(ctx, st->src[1], true, &reads);
  g->reduce = nr == 1 ? reads[0] : NULL;
  free(reads);
  const UOp *r = g->reduce;
  if (!r || r->nsrc != 2 || r->dtype.lanes != 1 || !dt_is_float(r->dtype)) return false;
  Op op = opt_reduce_op(r);
  const UOp *prod = r->src[0];
  if ((op != UJ_OP_MULACC && op != UJ_OP_ADD) || prod->op != UJ_OP_MUL || prod->src[0]->op != UJ_OP_LOAD ||
      prod->src[1]->op != UJ_OP_LOAD || prod->src[0]->src[0]->op != UJ_OP_INDEX || prod->src[1]->src[0]->op != UJ_OP_INDEX)
    return false;
  g->k = r->src[1], g->it = g->i->dtype;
  g->m = opt_const_bound(g->i), g->n = opt_const_bound(g->j), g->kn = opt_const_bound(g->k);
  if (g->m <= 0 || g->n <= 0 || g->kn < BK || g->m * g->n < BM * BN || !dt_eq(g->j->dtype, g->it) ||
      !dt_eq(g->k->dtype, g->it) || (g->batch && !dt_eq(g->batch->dtype, g->it)))
    return false;
  const UOp *x = prod->src[0], *y = prod->src[1];
  bool xi = opt_depends(ctx, x, g->i), xj = opt_depends(ctx, x, g->j), yi = opt_depends(ctx, y, g->i), yj = opt_depends(ctx, y, g->j);
  if (xi && !xj && yj && !yi) g->a = x, g->b = y;
  else if (yi && !yj && xj && !xi) g->a = y, g->b = x;
  else return false;
  /* the output's index reads (b, i, j) only: no other loop */
  return !opt_depends(ctx, st->src[0], g->k);
}

static const UOp *ceil_div(int64_t x, int64_t y, Gemm *g) { return cint(g, (x + y - 1) / y); }
static const UOp *affine(Gemm *g, const UOp *x, int64_t scale, const UOp *plus) {
  return bin(g->ctx, UJ_OP_ADD, bin(g->ctx, UJ_OP_MUL, x, cint(g, scale)), plus);
}

/* The copies of one k tile: each thread's FILL elements of a's BM x BK
 * tile (row ROWS_A_STEP*f + thread / BK, column thread % BK) and of b's
 * BK x BN tile (row ROWS_B_STEP*f + thread / BN, column thread % BN), each
 * gated past the bounds; into tile[], returning how many. */
static size_t copies(Gemm *g, const UOp *const *blk, const UOp *thread, const UOp *kt, const UOp *as, const UOp *bs,
                     const UOp **tile) {
  Ctx *ctx = g->ctx;
  const UOp *ij_k[3] = {g->i, g->j, g->k};
  size_t n = 0;
  for (int f = 0; f < FILL; f++) {
    const UOp *ra = bin(ctx, UJ_OP_ADD, cint(g, ROWS_A_STEP * f), bin(ctx, UJ_OP_IDIV, thread, cint(g, BK)));
    const UOp *ca = bin(ctx, UJ_OP_MOD, thread, cint(g, BK));
    const UOp *to_a[3] = {affine(g, blk[0], BM, ra), g->j, affine(g, kt, BK, ca)};
    const UOp *va = both(g, below(g, to_a[0], g->m, BM), below(g, to_a[2], g->kn, BK));
    tile[n++] = store_of(ctx, at(ctx, as, affine(g, ra, BK, ca)), gate_access(g, subst(g, g->a, ij_k, to_a, 3), va));
    const UOp *rb = bin(ctx, UJ_OP_ADD, cint(g, ROWS_B_STEP * f), bin(ctx, UJ_OP_IDIV, thread, cint(g, BN)));
    const UOp *cb = bin(ctx, UJ_OP_MOD, thread, cint(g, BN));
    const UOp *to_b[3] = {g->i, affine(g, blk[1], BN, cb), affine(g, kt, BK, rb)};
    const UOp *vb = both(g, below(g, to_b[1], g->n, BN), below(g, to_b[2], g->kn, BK));
    tile[n++] = store_of(ctx, at(ctx, bs, affine(g, rb, BN, cb)), gate_access(g, subst(g, g->b, ij_k, to_b, 3), vb));
  }
  return n;
}

/* One step kk of a k tile: every accumulator (r, c) takes the product of
 * the thread's row r of a's tile and column c of b's, in the REDUCE's
 * operand order; past k it keeps its value. END(kk, stores). */
static const UOp *step_end(Gemm *g, const UOp *const *thr, const UOp *kt, const UOp *kk, const UOp *as, const UOp *bs,
                           const UOp *acc) {
  Ctx *ctx = g->ctx;
  Op op = opt_reduce_op(g->reduce);
  bool a_first = g->reduce->src[0]->src[0] == g->a;
  const UOp *inside = below(g, affine(g, kt, BK, kk), g->kn, BK), *step[TM * TN + 1];
  size_t n = 0;
  step[n++] = kk;
  for (int r = 0; r < TM; r++)
    for (int c = 0; c < TN; c++) {
      const UOp *x = load(ctx, at(ctx, as, affine(g, affine(g, thr[0], TM, cint(g, r)), BK, kk)));
      const UOp *y = load(ctx, at(ctx, bs, affine(g, kk, BN, affine(g, thr[1], TN, cint(g, c)))));
      const UOp *p = a_first ? x : y, *q = a_first ? y : x, *slot = at(ctx, acc, cint(g, r * TN + c)), *old = load(ctx, slot);
      const UOp *next = op == UJ_OP_MULACC && p && q && old ? uop_ternary(ctx, UJ_OP_MULACC, p, q, old)
                                                            : bin(ctx, UJ_OP_ADD, old, bin(ctx, UJ_OP_MUL, p, q));
      if (inside) next = next && old ? uop_ternary(ctx, UJ_OP_WHERE, inside, next, old) : NULL;
      step[n++] = store_of(ctx, slot, next);
    }
  return void_node(ctx, UJ_OP_END, step, n);
}

const UOp *opt_gemm(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use) {
  Gemm g;
  if (use == OPT_OFF || t->kind != TARGET_DESC_GPU || t->max_threads < THREADS ||
      (size_t)(BM * BK + BK * BN) * 4 > t->shared_bytes || !find_gemm(ctx, kernel, &g))
    return kernel;
  g.axis = opt_next_axis(ctx, kernel), g.alloc = opt_next_alloc_id(ctx, kernel);
  const UOp *batch = g.batch ? range(&g, "global", opt_const_bound(g.batch)) : NULL;
  const UOp *blk[2] = {range(&g, "global", (g.m + BM - 1) / BM), range(&g, "global", (g.n + BN - 1) / BN)};
  const UOp *thr[2] = {range(&g, "local", TY), range(&g, "local", TX)};
  const UOp *kt = uop_new(ctx, UJ_OP_RANGE, g.it, (const UOp *[]){ceil_div(g.kn, BK, &g)}, 1, (Arg){"loop", (int64_t[]){g.axis++}, 1});
  const UOp *kk = range(&g, "loop", BK);
  const UOp *as = alloc(&g, UJ_AS_LOCAL, BM * BK), *bs = alloc(&g, UJ_AS_LOCAL, BK * BN), *acc = alloc(&g, UJ_AS_REG, TM * TN);
  const UOp *barrier = void_node(ctx, UJ_OP_BARRIER, NULL, 0);
  const UOp *thread = affine(&g, thr[0], TX, thr[1]); /* 0 .. 255 */
  const UOp *body[2 * TM * TN + 1], *tile[1 + 2 * FILL + 3];
  size_t nb = 0, nt = 0;
  const UOp *zero = uop_const_word(ctx, g.reduce->dtype, alu_identity(UJ_OP_ADD, (uj_scalar)g.reduce->dtype.scalar));
  for (int q = 0; q < TM * TN; q++) body[nb++] = store_of(ctx, at(ctx, acc, cint(&g, q)), zero);
  tile[nt++] = kt;
  nt += copies(&g, blk, thread, kt, as, bs, tile + nt);
  tile[nt++] = barrier;
  tile[nt++] = step_end(&g, thr, kt, kk, as, bs, acc);
  tile[nt++] = barrier;
  body[nb++] = void_node(ctx, UJ_OP_END, tile, nt);
  for (int r = 0; r < TM; r++) /* the block's outputs: the epilogue of each accumulator, gated past the bounds */
    for (int c = 0; c < TN; c++) {
      const UOp *from[4] = {g.i, g.j, g.reduce, g.batch};
      const UOp *to[4] = {affine(&g, blk[0], BM, affine(&g, thr[0], TM, cint(&g, r))),
                          affine(&g, blk[1], BN, affine(&g, thr[1], TN, cint(&g, c))),
                          load(ctx, at(ctx, acc, cint(&g, r * TN + c))), batch};
      const UOp *out = subst(&g, g.store, from, to, g.batch ? 4 : 3);
      body[nb++] = gate_access(&g, out, both(&g, below(&g, to[0], g.m, BM), below(&g, to[1], g.n, BN)));
    }
  const UOp *inner[1 + 2 * TM * TN + 1];
  inner[0] = thr[1];
  for (size_t s = 0; s < nb; s++) inner[s + 1] = body[s];
  const UOp *e = void_node(ctx, UJ_OP_END, inner, nb + 1);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){thr[0], e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){blk[1], e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){blk[0], e}, 2);
  if (batch && e) { /* the batch's range in the copies too */
    const UOp *in = opt_substitute(ctx, e, &g.batch, &batch, 1);
    e = void_node(ctx, UJ_OP_END, (const UOp *[]){batch, in}, 2);
  }
  return e ? uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &e, 1, arg_none()) : NULL;
}
