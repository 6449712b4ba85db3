/* upcast.c — register blocking of reductions (opt.h): the innermost output
 * loop of a kernel whose stored value reduces is split into an outer loop
 * and U lanes, and each REDUCE in the value becomes one REDUCE of a
 * U-lane vector:
 *
 *   END(c, STORE(out[f(c)], g(REDUCE(x(c), k))))                 c < B
 *   -> END(c', STORE(out[f(c'U+u)], g(GEP(R, u))) for u < U)      c' < B/U
 *      with R = REDUCE(VECTORIZE(x(c'U+0), .., x(c'U+U-1)), k)
 *
 * One pass over k then computes U outputs, its accumulator a vector held
 * in registers: a GEMM's inner loop loads a[i,k] once and b[k, c'U..+U)
 * as one vector (LLVM's SLP vectorizer merges the lanes' adjacent loads,
 * multiplies and stores). Each output is reduced in the same order as
 * before, so results are bit for bit the serial kernel's. U = 32 bytes of
 * the value's elements (8 float32: one AVX2 register), when it divides B.
 * Kernels whose REDUCE nests another that depends on c are left alone. */
#include <stdlib.h>

#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "uop/alu.h"

enum { UPCAST_MAX_LANES = 16, UPCAST_BYTES = 32 };

/* Whether x's graph contains node. */
static bool contains(Ctx *ctx, const UOp *x, const UOp *node) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) found = nodes[i] == node;
  free(nodes);
  return found;
}

typedef struct Lane {
  Ctx *ctx;
  const UOp *range, *at;  /* the range, and what it is in this lane */
  const UOp **reduces;    /* REDUCEs over the range ... */
  const UOp **vectors;    /* ... and their vector REDUCEs */
  size_t nreduces;
  unsigned lane;
} Lane;

static const UOp *lane_of(void *user, const UOp *u, const UOp *rebuilt) {
  const Lane *l = user;
  if (u == l->range) return l->at;
  for (size_t i = 0; i < l->nreduces; i++)
    if (u == l->reduces[i]) {
      int64_t lane = l->lane;
      return uop_new(l->ctx, UJ_OP_GEP, dt_lane(u->dtype), &l->vectors[i], 1, (Arg){NULL, &lane, 1});
    }
  return rebuilt;
}

/* x with the range replaced by c'U + lane (reduces: none to swap). */
static const UOp *in_lane(Lane *l, const UOp *x, unsigned lane, const UOp *outer, unsigned lanes) {
  const UOp *k = uop_const_int(l->ctx, outer->dtype, lanes), *u = uop_const_int(l->ctx, outer->dtype, lane);
  l->at = uop_binary(l->ctx, UJ_OP_ADD, uop_binary(l->ctx, UJ_OP_MUL, outer, k), u);
  l->lane = lane;
  return graph_substitute(l->ctx, x, lane_of, l);
}

/* The REDUCEs of value that depend on the range, each once; false when
 * one nests another that does (or when there are too many). */
static bool find_reduces(Ctx *ctx, const UOp *value, const UOp *range, const UOp **out, size_t *n, size_t max) {
  const UOp **nodes = NULL;
  size_t count = uop_toposort(ctx, value, &nodes);
  bool ok = count > 0;
  *n = 0;
  for (size_t i = 0; ok && i < count; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_REDUCE || u->dtype.lanes != 1 || !contains(ctx, u->src[0], range)) continue;
    for (size_t j = 0; ok && j < *n; j++) ok = !contains(ctx, u->src[0], out[j]);
    if (ok && *n == max) ok = false;
    if (ok) out[(*n)++] = u;
  }
  free(nodes);
  return ok;
}

/* The END of the innermost loop of a one-nest kernel, whose one effect is
 * a plain STORE; NULL if the kernel is not that. */
static const UOp *innermost_end(const UOp *kernel) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  while (e && e->op == UJ_OP_END && e->nsrc == 2 && e->src[1]->op == UJ_OP_END) e = e->src[1];
  bool ok = e && e->op == UJ_OP_END && e->nsrc == 2 && e->src[1]->op == UJ_OP_STORE &&
            e->src[1]->src[0]->op == UJ_OP_INDEX && e->src[1]->src[0]->nsrc == 2;
  return ok ? e : NULL;
}

static const UOp *replace_end(void *user, const UOp *u, const UOp *rebuilt) {
  const UOp *const *swap = user;
  return u == swap[0] ? swap[1] : rebuilt;
}

const UOp *opt_upcast(Ctx *ctx, const UOp *kernel) {
  const UOp *end = innermost_end(kernel);
  const UOp *r = end ? end->src[0] : NULL, *store = end ? end->src[1] : NULL;
  const UOp *bound = r ? r->src[0] : NULL;
  if (!r || r->op != UJ_OP_RANGE || bound->op != UJ_OP_CONST || !bound->bounded) return kernel;
  DType d = store->src[1]->dtype;
  unsigned lanes = (unsigned)(UPCAST_BYTES / (elem_bytes(d) ? elem_bytes(d) : 1));
  if (lanes < 2 || lanes > UPCAST_MAX_LANES || bound->vmin < lanes || bound->vmin % lanes) return kernel;
  const UOp *reduces[UPCAST_MAX_LANES], *vectors[UPCAST_MAX_LANES];
  size_t nreduces;
  if (!find_reduces(ctx, store->src[1], r, reduces, &nreduces, UPCAST_MAX_LANES) || nreduces == 0) return kernel;
  const UOp *outer_bound = uop_const_int(ctx, r->dtype, bound->vmin / lanes);
  const UOp *outer = uop_new(ctx, UJ_OP_RANGE, r->dtype, &outer_bound, 1, (Arg){r->name, r->ints, r->nints});
  Lane l = {ctx, r, NULL, NULL, NULL, 0, 0};
  for (size_t i = 0; i < nreduces; i++) { /* REDUCE(VECTORIZE(x in each lane), k...) */
    const UOp *x[UPCAST_MAX_LANES], *src[256];
    for (unsigned u = 0; u < lanes; u++) x[u] = in_lane(&l, reduces[i]->src[0], u, outer, lanes);
    for (unsigned u = 0; u < lanes; u++)
      if (!x[u]) return NULL;
    src[0] = uop_new(ctx, UJ_OP_VECTORIZE, uj_dtype_vec((uj_scalar)d.scalar, lanes), x, lanes, arg_none());
    if (reduces[i]->nsrc > 256) return kernel;
    for (uint32_t k = 1; k < reduces[i]->nsrc; k++) src[k] = reduces[i]->src[k];
    DType vd = uj_dtype_vec((uj_scalar)reduces[i]->dtype.scalar, lanes);
    vectors[i] = uop_new(ctx, UJ_OP_REDUCE, vd, src, reduces[i]->nsrc, (Arg){reduces[i]->name, NULL, 0});
  }
  l.reduces = reduces, l.vectors = vectors, l.nreduces = nreduces;
  const UOp *effects[1 + UPCAST_MAX_LANES];
  effects[0] = outer;
  for (unsigned u = 0; u < lanes; u++) effects[1 + u] = in_lane(&l, store, u, outer, lanes);
  for (unsigned u = 0; u < lanes; u++)
    if (!effects[1 + u]) return NULL;
  const UOp *swap[2] = {end, uop_new(ctx, UJ_OP_END, end->dtype, effects, 1 + lanes, arg_none())};
  return graph_substitute(ctx, kernel, replace_end, swap);
}
