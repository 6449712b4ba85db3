/* unroll.c — the innermost loop of reductions unrolled (opt.h). With
 * OptConfig.unroll = U, every RANGE k that is the innermost RANGE of a
 * REDUCE, of kind `reduce` with a constant bound K (a multiple of U, at
 * least 2U), is split k = k'·U + u, u an `unroll` RANGE of U steps:
 *
 *   REDUCE(v(k), .., k)   ->   REDUCE(v(k'·U + u), .., k', u)     k' < K/U, u < U
 *
 * The renderer emits the U steps of an innermost `unroll` RANGE as copies
 * of the step in one pass of k' (lib/llvm/render.c): no loop and no
 * branch between them, their loads side by side. The steps still run in
 * k order, each the same operation: results bit for bit the kernel's. The
 * heuristics leave unrolling to LLVM's unroller (0: none here); forced
 * (tests, the search: UJ_BEAM) a U that does not divide a reduction
 * leaves that reduction alone. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"

enum { UNROLL_MAX = 16, UNROLL_MAX_RANGES = 32 };

typedef struct Split {
  Ctx *ctx;
  const UOp *from[UNROLL_MAX_RANGES], *outer[UNROLL_MAX_RANGES], *inner[UNROLL_MAX_RANGES], *at[UNROLL_MAX_RANGES];
  size_t n;
} Split;

static int split_of(const Split *sp, const UOp *r) {
  for (size_t i = 0; i < sp->n; i++)
    if (sp->from[i] == r) return (int)i;
  return -1;
}

/* A split RANGE becomes k'·U + u; a REDUCE over it reduces over (k', u). */
static const UOp *split_node(void *user, const UOp *u, const UOp *rebuilt) {
  Split *sp = user;
  int i = split_of(sp, u);
  if (i >= 0) return sp->at[i];
  if (!rebuilt || u->op != UJ_OP_REDUCE || u->nsrc < 2) return rebuilt;
  const UOp *src[2 * UNROLL_MAX_RANGES + 1];
  uint32_t n = 0;
  src[n++] = rebuilt->src[0];
  for (uint32_t k = 1; k < u->nsrc && n + 2 <= 2 * UNROLL_MAX_RANGES + 1; k++) {
    int s = split_of(sp, u->src[k]);
    if (s < 0) src[n++] = u->src[k];
    else src[n++] = sp->outer[s], src[n++] = sp->inner[s];
  }
  return uop_new(sp->ctx, UJ_OP_REDUCE, u->dtype, src, n, (Arg){u->name, u->ints, u->nints});
}

/* The RANGEs to split: innermost of a REDUCE, `reduce` kind, U divides
 * their bound, at least 2U steps; false when out of memory. */
static bool find_splits(Ctx *ctx, const UOp *kernel, unsigned factor, Split *sp) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  int64_t axis = opt_next_axis(ctx, kernel);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i], *r = u->op == UJ_OP_REDUCE && u->nsrc > 1 ? u->src[u->nsrc - 1] : NULL;
    int64_t bound = r ? opt_const_bound(r) : 0;
    if (!r || range_kind(r) != AXIS_REDUCE || bound < 2 * (int64_t)factor || bound % factor || split_of(sp, r) >= 0 ||
        sp->n == UNROLL_MAX_RANGES)
      continue;
    int64_t ao = axis++, ai = axis++;
    const UOp *bo = uop_const_int(ctx, r->dtype, bound / factor), *bi = uop_const_int(ctx, r->dtype, factor);
    const UOp *ko = bo ? uop_new(ctx, UJ_OP_RANGE, r->dtype, &bo, 1, (Arg){"reduce", &ao, 1}) : NULL;
    const UOp *ki = bi ? uop_new(ctx, UJ_OP_RANGE, r->dtype, &bi, 1, (Arg){"unroll", &ai, 1}) : NULL;
    const UOp *at = ko && ki ? uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, ko, bi), ki) : NULL;
    ok = at != NULL;
    if (ok) sp->from[sp->n] = r, sp->outer[sp->n] = ko, sp->inner[sp->n] = ki, sp->at[sp->n++] = at;
  }
  free(nodes);
  return ok;
}

const UOp *opt_unroll(Ctx *ctx, const UOp *kernel, const OptConfig *config) {
  unsigned factor = config->unroll;
  if (factor < 2 || factor > UNROLL_MAX) return kernel;
  Split sp = {.ctx = ctx};
  if (!find_splits(ctx, kernel, factor, &sp)) return NULL;
  return sp.n ? graph_substitute(ctx, kernel, split_node, &sp) : kernel;
}
