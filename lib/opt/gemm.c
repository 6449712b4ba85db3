/* gemm.c — a GEMM on a GPU in shared-memory tiles with register blocks
 * (opt.h, docs/opt.md "GPU kernels").
 *
 * In: a kernel for a target with workgroups that is one output loop pair
 * around one STORE whose value reads one REDUCE over k of a product of
 * two loads, one free of j (a[i, k]), one free of i (b[k, j]):
 *
 *   END(i, END(j, STORE(out(i, j), g(REDUCE(a(i, k) · b(k, j), k)))))
 *
 * with constant bounds that the tiles divide. Out: a workgroup of 16 x
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
 * is applied to each accumulator at the block's store. Every global load
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

/* The kernel's shape, when it is one this pass takes. */
static bool find_gemm(Ctx *ctx, const UOp *kernel, Gemm *g) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  const UOp *ej = e && e->op == UJ_OP_END && e->nsrc == 2 ? e->src[1] : NULL;
  const UOp *st = ej && ej->op == UJ_OP_END && ej->nsrc == 2 ? ej->src[1] : NULL;
  if (!st || st->op != UJ_OP_STORE || st->src[1]->dtype.lanes != 1) return false;
  *g = (Gemm){.ctx = ctx, .i = e->src[0], .j = ej->src[0], .store = st};
  const UOp **reads = NULL;
  size_t nr = opt_reduces_read(ctx, st->src[1], true, &reads);
  g->reduce = nr == 1 ? reads[0] : NULL;
  free(reads);
  const UOp *r = g->reduce;
  if (!r || r->nsrc != 2 || r->dtype.lanes != 1 || !dt_is_float(r->dtype)) return false;
  Op op = opt_reduce_op(r);
  const UOp *prod = r->src[0];
  if ((op != UJ_OP_MULACC && op != UJ_OP_ADD) || prod->op != UJ_OP_MUL || prod->src[0]->op != UJ_OP_LOAD ||
      prod->src[1]->op != UJ_OP_LOAD)
    return false;
  g->k = r->src[1], g->it = g->i->dtype;
  g->m = opt_const_bound(g->i), g->n = opt_const_bound(g->j), g->kn = opt_const_bound(g->k);
  if (g->m <= 0 || g->n <= 0 || g->kn <= 0 || g->m % BM || g->n % BN || g->kn % BK || !dt_eq(g->j->dtype, g->it) ||
      !dt_eq(g->k->dtype, g->it))
    return false;
  const UOp *x = prod->src[0], *y = prod->src[1];
  bool xi = opt_depends(ctx, x, g->i), xj = opt_depends(ctx, x, g->j), yi = opt_depends(ctx, y, g->i), yj = opt_depends(ctx, y, g->j);
  if (xi && !xj && yj && !yi) g->a = x, g->b = y;
  else if (yi && !yj && xj && !xi) g->a = y, g->b = x;
  else return false;
  /* the epilogue reads the REDUCE and (i, j) only: no other loop */
  return !opt_depends(ctx, st->src[0], g->k);
}

const UOp *opt_gemm(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use) {
  Gemm g;
  if (use == OPT_OFF || t->kind != TARGET_DESC_GPU || t->max_threads < THREADS ||
      (size_t)(BM * BK + BK * BN) * 4 > t->shared_bytes || !find_gemm(ctx, kernel, &g))
    return kernel;
  g.axis = opt_next_axis(ctx, kernel), g.alloc = opt_next_alloc_id(ctx, kernel);
  const UOp *bi = range(&g, "global", g.m / BM), *bj = range(&g, "global", g.n / BN);
  const UOp *ty = range(&g, "local", TY), *tx = range(&g, "local", TX);
  const UOp *kt = range(&g, "loop", g.kn / BK), *kk = range(&g, "loop", BK);
  const UOp *as = alloc(&g, UJ_AS_LOCAL, BM * BK), *bs = alloc(&g, UJ_AS_LOCAL, BK * BN), *acc = alloc(&g, UJ_AS_REG, TM * TN);
  const UOp *barrier = void_node(ctx, UJ_OP_BARRIER, NULL, 0);
  const UOp *thread = bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, ty, cint(&g, TX)), tx); /* 0 .. 255 */
  const UOp *ij_k[3] = {g.i, g.j, g.k};
  enum { EFFECTS = 2 * TM * TN + 2 };
  const UOp *body[EFFECTS], *tile[2 * FILL + 3], *step[TM * TN + 1];
  size_t nb = 0, nt = 0, ns = 0;
  Op op = opt_reduce_op(g.reduce);
  const UOp *zero = uop_const_word(ctx, g.reduce->dtype, alu_identity(UJ_OP_ADD, (uj_scalar)g.reduce->dtype.scalar));
  for (int q = 0; q < TM * TN; q++) body[nb++] = store_of(ctx, at(ctx, acc, cint(&g, q)), zero);
  /* the copies: a's tile row ROWS_A_STEP*f + thread / BK, column thread % BK; b's row ROWS_B_STEP*f + thread / BN, column thread % BN */
  for (int f = 0; f < FILL; f++) {
    const UOp *ra = bin(ctx, UJ_OP_ADD, cint(&g, ROWS_A_STEP * f), bin(ctx, UJ_OP_IDIV, thread, cint(&g, BK)));
    const UOp *ca = bin(ctx, UJ_OP_MOD, thread, cint(&g, BK));
    const UOp *to_a[3] = {bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, bi, cint(&g, BM)), ra), g.j,
                          bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, kt, cint(&g, BK)), ca)};
    tile[nt++] = store_of(ctx, at(ctx, as, bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, ra, cint(&g, BK)), ca)), subst(&g, g.a, ij_k, to_a, 3));
    const UOp *rb = bin(ctx, UJ_OP_ADD, cint(&g, ROWS_B_STEP * f), bin(ctx, UJ_OP_IDIV, thread, cint(&g, BN)));
    const UOp *cb = bin(ctx, UJ_OP_MOD, thread, cint(&g, BN));
    const UOp *to_b[3] = {g.i, bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, bj, cint(&g, BN)), cb),
                          bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, kt, cint(&g, BK)), rb)};
    tile[nt++] = store_of(ctx, at(ctx, bs, bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, rb, cint(&g, BN)), cb)), subst(&g, g.b, ij_k, to_b, 3));
  }
  tile[nt++] = barrier;
  /* a step: each accumulator takes one product, in k order */
  step[ns++] = kk;
  for (int r = 0; r < TM; r++)
    for (int c = 0; c < TN; c++) {
      const UOp *row = bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, ty, cint(&g, TM)), cint(&g, r));
      const UOp *col = bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, tx, cint(&g, TN)), cint(&g, c));
      const UOp *x = load(ctx, at(ctx, as, bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, row, cint(&g, BK)), kk)));
      const UOp *y = load(ctx, at(ctx, bs, bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, kk, cint(&g, BN)), col)));
      bool a_first = g.reduce->src[0]->src[0] == g.a; /* the product's operands in their order */
      const UOp *p = a_first ? x : y, *q = a_first ? y : x, *slot = at(ctx, acc, cint(&g, r * TN + c));
      const UOp *next = op == UJ_OP_MULACC && p && q && slot ? uop_ternary(ctx, UJ_OP_MULACC, p, q, load(ctx, slot))
                                                             : bin(ctx, UJ_OP_ADD, load(ctx, slot), bin(ctx, UJ_OP_MUL, p, q));
      step[ns++] = store_of(ctx, slot, next);
    }
  tile[nt++] = void_node(ctx, UJ_OP_END, step, ns);
  tile[nt++] = barrier;
  const UOp *tile_src[2 * FILL + 4];
  tile_src[0] = kt;
  for (size_t s = 0; s < nt; s++) tile_src[s + 1] = tile[s];
  body[nb++] = void_node(ctx, UJ_OP_END, tile_src, nt + 1);
  /* the block's outputs: the epilogue of each accumulator */
  for (int r = 0; r < TM; r++)
    for (int c = 0; c < TN; c++) {
      const UOp *from[3] = {g.i, g.j, g.reduce};
      const UOp *to[3] = {bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, bi, cint(&g, BM)), bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, ty, cint(&g, TM)), cint(&g, r))),
                          bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, bj, cint(&g, BN)), bin(ctx, UJ_OP_ADD, bin(ctx, UJ_OP_MUL, tx, cint(&g, TN)), cint(&g, c))),
                          load(ctx, at(ctx, acc, cint(&g, r * TN + c)))};
      body[nb++] = subst(&g, g.store, from, to, 3);
    }
  const UOp *inner_src[EFFECTS + 1];
  inner_src[0] = tx;
  for (size_t s = 0; s < nb; s++) inner_src[s + 1] = body[s];
  const UOp *e = void_node(ctx, UJ_OP_END, inner_src, nb + 1);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){ty, e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){bj, e}, 2);
  e = void_node(ctx, UJ_OP_END, (const UOp *[]){bi, e}, 2);
  return e ? uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &e, 1, arg_none()) : NULL;
}
