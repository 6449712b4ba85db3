/* stream.c — reductions down the columns of a matrix, streamed a row at a
 * time (opt.h). A kernel whose innermost output loop j stores a value of
 * one REDUCE over k, where the REDUCE reads a matrix contiguous along j
 * and a row apart along k (a matrix-vector product's b, a column sum's
 * x), is rewritten so that the reduction's loop runs outside the
 * columns, its accumulators in memory:
 *
 *   END(j, STORE(out[f(j)], g(REDUCE(v(j, k), k))))                j < J, k < K
 *   -> END(c, END(a, STORE(acc[a], identity)),
 *             END(k, END(a, STORE(acc[a], LOAD(acc[a]) op V(c·C + a·W .. + W-1, k)))),
 *             END(a, STORE(out[f(j_l)], g(GEP(LOAD(acc[a]), l))) for l < W))
 *      c < J/C chunks of C columns, a < C/W vectors of W lanes, j_l = c·C + a·W + l
 *
 * acc is an ALLOC of C/W vectors of W lanes (a register: 16 float32 on
 * AVX-512), in L1. Register blocking (upcast.c) reads a block of
 * columns, 512 bytes of each row, row after row: rows a row of b apart
 * (16 KiB for 4096 columns), a few cache lines each, which no prefetcher
 * follows. Streamed, each step of k reads C contiguous elements of its
 * row. Each output is still reduced in k order by the same op (a MULACC
 * reduce's fused multiply-add is MULACC), from the same identity: bit for
 * bit the kernel's results. Threads split the chunks (parallel.c): two
 * chunks when the columns hold 16 KiB; chunks of at most 16 KiB of
 * accumulators.
 *
 * Not when the REDUCE's value depends on a loop around j that the matrix
 * does not (a GEMM's rows: register blocking reads b once for 8 rows),
 * nor when a load is gated, gathers along j, or the REDUCE nests
 * another. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

/* The columns at least (the register-blocked kernel reads 512 bytes of a
 * row a visit: at fewer, it reads whole rows), the matrix's rows at
 * least; the accumulators of a chunk at most; columns that make two
 * chunks (for two threads); the lanes of one vector at most. */
enum { STREAM_MIN_COLUMN_BYTES = 1024, STREAM_MIN_ROW_BYTES = 2048,
       STREAM_SPLIT_BYTES = 16 << 10, STREAM_MAX_LANES = 64, STREAM_STEPS = 8,
       STREAM_MAX_MATRIX = 16 };

typedef struct Stream {
  Ctx *ctx;
  const UOp *end, *store, *reduce, *j, *k;
  int64_t columns, chunk; /* J and C */
  unsigned w;             /* lanes of a vector */
  unsigned steps;         /* steps of k a pass over the accumulators */
  int64_t row_bytes;      /* the widest stride along k of the matrix's loads, in bytes */
  const UOp *matrix[STREAM_MAX_MATRIX]; /* the indices of the loads along j and k */
  size_t nmatrix;
} Stream;

/* The loads of the REDUCE's value: none gated, each contiguous along j
 * if it depends on j; those that depend on j and k (the matrix) in
 * s->matrix, s->row_bytes the widest stride along k among them. false
 * when a load is not that or there are too many. */
static bool loads_stream(Stream *s) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(s->ctx, s->reduce->src[0], &nodes);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i], *idx = u->op == UJ_OP_LOAD ? u->src[0] : NULL;
    if (!idx) continue;
    ok = idx->op == UJ_OP_INDEX && idx->nsrc == 2;
    if (!ok || !opt_contains(s->ctx, idx->src[1], s->j)) continue;
    ok = opt_stride_along(s->ctx, idx->src[1], s->j) == 1;
    int64_t sk = ok && opt_contains(s->ctx, idx->src[1], s->k) ? opt_stride_along(s->ctx, idx->src[1], s->k) : 0;
    if (!sk) continue;
    ok = s->nmatrix < STREAM_MAX_MATRIX;
    if (ok) s->matrix[s->nmatrix++] = idx->src[1];
    int64_t bytes = sk * (int64_t)elem_bytes(u->dtype);
    s->row_bytes = bytes > s->row_bytes ? bytes : s->row_bytes;
  }
  free(nodes);
  return ok;
}

/* Whether the matrix's loads read loop range r (a batch's loop, not rows
 * that register blocking would read the matrix once for). */
static bool matrix_reads(const Stream *s, const UOp *r) {
  for (size_t m = 0; m < s->nmatrix; m++)
    if (opt_contains(s->ctx, s->matrix[m], r)) return true;
  return false;
}

/* Whether the kernel is one the pass takes (forced: whatever the sizes). */
static bool stream_fits(Stream *s, const UOp *kernel, const TargetDesc *t, bool forced) {
  const UOp **reduces = NULL;
  size_t nr = opt_reduces_read(s->ctx, s->store->src[1], true, &reduces);
  s->reduce = nr == 1 ? reduces[0] : NULL;
  free(reduces);
  const UOp *r = s->reduce;
  if (!r || r->nsrc != 2 || r->dtype.lanes != 1 || opt_const_bound(r->src[1]) < 1) return false;
  s->k = r->src[1], s->columns = opt_const_bound(s->j);
  size_t elem = elem_bytes(r->dtype);
  s->w = elem ? t->vector_bytes / (unsigned)elem : 0;
  int64_t acc_bytes = (int64_t)t->l1_bytes / 2; /* the accumulators: half of L1 */
  s->w = s->w > STREAM_MAX_LANES ? STREAM_MAX_LANES : s->w < 1 ? 1 : s->w;
  if (!s->columns || s->columns % s->w || !opt_depends(s->ctx, r, s->j) || !loads_stream(s)) return false;
  if (!forced && (s->columns * (int64_t)elem < STREAM_MIN_COLUMN_BYTES || s->row_bytes < STREAM_MIN_ROW_BYTES))
    return false;
  /* the loops around j: none that the value reads and the matrix does not (rows to reuse b for) */
  for (const UOp *e = kernel->src[0]; e != s->end; e = e->src[1])
    if (opt_depends(s->ctx, r->src[0], e->src[0]) && !matrix_reads(s, e->src[0])) return false;
  int64_t c = s->columns;
  while (c * (int64_t)elem > acc_bytes && c % (2 * s->w) == 0) c /= 2;
  if (c == s->columns && c * (int64_t)elem >= STREAM_SPLIT_BYTES && c % (2 * s->w) == 0) c /= 2;
  s->chunk = c;
  for (s->steps = STREAM_STEPS; opt_const_bound(s->k) % s->steps;) s->steps /= 2;
  return c * (int64_t)elem <= acc_bytes;
}

static const UOp *range_new(Ctx *ctx, DType d, int64_t bound, int64_t axis) {
  const UOp *b = uop_const_int(ctx, d, bound);
  return b ? uop_new(ctx, UJ_OP_RANGE, d, &b, 1, (Arg){"loop", &axis, 1}) : NULL;
}

static const UOp *end_new(Ctx *ctx, const UOp *const *src, uint32_t n) {
  return uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), src, n, arg_none());
}

static const UOp *index_new(Ctx *ctx, const UOp *p, const UOp *at) {
  return at ? uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, at}, 2, arg_none()) : NULL;
}

/* Column c·C + a·W + l. */
static const UOp *column_at(Ctx *ctx, const Stream *s, const UOp *c, const UOp *a, unsigned l) {
  DType d = s->j->dtype;
  const UOp *first = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, c, uop_const_int(ctx, d, s->chunk)),
                                uop_binary(ctx, UJ_OP_MUL, a, uop_const_int(ctx, d, s->w)));
  return uop_binary(ctx, UJ_OP_ADD, first, uop_const_int(ctx, d, l));
}

/* V(columns of a, step): the REDUCE's value at those columns, as one
 * vector. */
static const UOp *value_at(Ctx *ctx, const Stream *s, const UOp *c, const UOp *a, const UOp *step) {
  const UOp *lanes[STREAM_MAX_LANES];
  for (unsigned l = 0; l < s->w; l++) {
    const UOp *from[2] = {s->j, s->k}, *to[2] = {column_at(ctx, s, c, a, l), step};
    if (!to[0] || !(lanes[l] = opt_substitute(ctx, s->reduce->src[0], from, to, 2))) return NULL;
  }
  const UOp *v = s->w > 1 ? opt_vectorize(ctx, lanes, s->w) : lanes[0];
  if (v && opt_reduce_op(s->reduce) == UJ_OP_MULACC && s->reduce->src[0]->op == UJ_OP_MUL && v->op != UJ_OP_MUL)
    return ctx_set_error(ctx, "opt_stream: the lanes lost the fused product"), NULL;
  return v;
}

/* END(k', END(a, STORE(acc[a], LOAD(acc[a]) op V(a, k'·R) .. op V(a, k'·R + R-1)))):
 * R steps of k a pass over the accumulators, in k order (R = s->steps). */
static const UOp *stream_loop(Ctx *ctx, const Stream *s, const UOp *acc, const UOp *c, const UOp *a, const UOp *k) {
  Op op = opt_reduce_op(s->reduce);
  const UOp *slot = index_new(ctx, acc, a);
  const UOp *next = slot ? uop_new(ctx, UJ_OP_LOAD, dt_base(acc->dtype), &slot, 1, arg_none()) : NULL;
  for (unsigned r = 0; next && r < s->steps; r++) {
    const UOp *step = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, k, uop_const_int(ctx, k->dtype, s->steps)),
                                 uop_const_int(ctx, k->dtype, r));
    const UOp *v = step ? value_at(ctx, s, c, a, step) : NULL;
    next = v ? opt_reduce_step(ctx, op, next, v) : NULL;
  }
  const UOp *st = next ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){slot, next}, 2, arg_none()) : NULL;
  const UOp *inner = st ? end_new(ctx, (const UOp *[]){a, st}, 2) : NULL;
  return inner ? end_new(ctx, (const UOp *[]){k, inner}, 2) : NULL;
}

/* END(a, STORE(acc[a], VECTORIZE(identity, ..))). */
static const UOp *init_loop(Ctx *ctx, const Stream *s, const UOp *acc, const UOp *a) {
  const UOp *lanes[STREAM_MAX_LANES];
  DType d = s->reduce->dtype;
  const UOp *id = uop_const_word(ctx, d, alu_identity(opt_reduce_op(s->reduce) == UJ_OP_MULACC ? UJ_OP_ADD : opt_reduce_op(s->reduce),
                                                      (uj_scalar)d.scalar));
  for (unsigned l = 0; l < s->w; l++) lanes[l] = id;
  const UOp *v = !id ? NULL : s->w > 1 ? uop_new(ctx, UJ_OP_VECTORIZE, dt_base(acc->dtype), lanes, s->w, arg_none()) : id;
  const UOp *slot = index_new(ctx, acc, a);
  const UOp *st = v && slot ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){slot, v}, 2, arg_none()) : NULL;
  return st ? end_new(ctx, (const UOp *[]){a, st}, 2) : NULL;
}

/* END(a, the store at column j_l with the REDUCE read as GEP(LOAD(acc[a]), l), for l < W). */
static const UOp *final_loop(Ctx *ctx, const Stream *s, const UOp *acc, const UOp *c, const UOp *a) {
  const UOp *effects[1 + STREAM_MAX_LANES], *slot = index_new(ctx, acc, a);
  const UOp *got = slot ? uop_new(ctx, UJ_OP_LOAD, dt_base(acc->dtype), &slot, 1, arg_none()) : NULL;
  effects[0] = a;
  for (unsigned l = 0; got && l < s->w; l++) {
    int64_t lane = l;
    const UOp *one = s->w > 1 ? uop_new(ctx, UJ_OP_GEP, s->reduce->dtype, &got, 1, (Arg){NULL, &lane, 1}) : got;
    const UOp *from[2] = {s->j, s->reduce}, *to[2] = {column_at(ctx, s, c, a, l), one};
    if (!one || !to[0] || !(effects[1 + l] = opt_substitute(ctx, s->store, from, to, 2))) return NULL;
  }
  return got ? end_new(ctx, effects, 1 + s->w) : NULL;
}

const UOp *opt_stream(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config) {
  Stream s = {.ctx = ctx, .end = opt_innermost_end(kernel)};
  if (config->stream == OPT_OFF || !s.end) return kernel;
  s.store = s.end->src[1], s.j = s.end->src[0];
  if (range_kind(s.j) != AXIS_LOOP || !stream_fits(&s, kernel, t, config->stream == OPT_ON)) return kernel;
  int64_t axis = opt_next_axis(ctx, kernel), vectors = s.chunk / s.w, alloc[2] = {opt_next_alloc_id(ctx, kernel), vectors};
  DType d = s.j->dtype;
  const UOp *acc = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)s.reduce->dtype.scalar, s.w, UJ_AS_REG), NULL, 0,
                           (Arg){NULL, alloc, 2});
  const UOp *c = range_new(ctx, d, s.columns / s.chunk, axis), *a0 = range_new(ctx, d, vectors, axis + 1);
  const UOp *k = range_new(ctx, s.k->dtype, opt_const_bound(s.k) / s.steps, axis + 2), *a1 = range_new(ctx, d, vectors, axis + 3);
  const UOp *a2 = range_new(ctx, d, vectors, axis + 4);
  if (!acc || !c || !a0 || !k || !a1 || !a2) return NULL;
  const UOp *body[4] = {c, init_loop(ctx, &s, acc, a0), stream_loop(ctx, &s, acc, c, a1, k), final_loop(ctx, &s, acc, c, a2)};
  if (!body[1] || !body[2] || !body[3]) return NULL;
  const UOp *chunks = end_new(ctx, body, 4);
  return chunks ? opt_substitute(ctx, kernel, &s.end, &chunks, 1) : NULL;
}
