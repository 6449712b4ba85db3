/* graph.h — small graph helpers the optimizer's passes share (graph.c).
 * In: nodes of a context. Out: new nodes; NULL with the error set on
 * failure (out of memory). */
#ifndef UJ_OPT_GRAPH_H
#define UJ_OPT_GRAPH_H

#include "uop/uop.h"

/* Whether x's graph contains node. */
bool opt_contains(Ctx *ctx, const UOp *x, const UOp *node);

/* VECTORIZE(x[0], .., x[n-1]) with the lanes of one ALU op pushed down:
 * VECTORIZE(op(a_i, b_i)) -> op(VECTORIZE(a), VECTORIZE(b)), down to the
 * loads (LLVM's SLP vectorizer merges adjacent ones); n <= 64. */
const UOp *opt_vectorize(Ctx *ctx, const UOp *const *x, unsigned n);

/* x with each from[i] replaced by to[i]. */
const UOp *opt_substitute(Ctx *ctx, const UOp *x, const UOp *const *from, const UOp *const *to, size_t n);

/* One past the largest axis number of the kernel's RANGEs: a new RANGE's. */
int64_t opt_next_axis(Ctx *ctx, const UOp *kernel);

#endif
