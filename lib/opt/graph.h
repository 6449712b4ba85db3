/* graph.h — small graph helpers the optimizer's passes share (graph.c).
 * In: nodes of a context. Out: new nodes; NULL with the error set on
 * failure (out of memory). */
#ifndef UJ_OPT_GRAPH_H
#define UJ_OPT_GRAPH_H

#include "uop/uop.h"

/* Whether x's graph contains node. */
bool opt_contains(Ctx *ctx, const UOp *x, const UOp *node);
/* Whether x's value depends on RANGE r: r is in its graph other than
 * inside REDUCEs that bind r (docs/semantics.md, "REDUCE"). */
bool opt_depends(Ctx *ctx, const UOp *x, const UOp *r);
/* The REDUCEs (over RANGEs) x reads outside other REDUCEs (with_nested:
 * and inside them), each once, malloc'd in *out; their count, 0 with
 * *out NULL when out of memory. */
size_t opt_reduces_read(Ctx *ctx, const UOp *x, bool with_nested, const UOp ***out);

/* VECTORIZE(x[0], .., x[n-1]) with the lanes of one ALU op pushed down:
 * VECTORIZE(op(a_i, b_i)) -> op(VECTORIZE(a), VECTORIZE(b)), down to the
 * loads (LLVM's SLP vectorizer merges adjacent ones); n <= 64. A lane
 * repeated in every lane stays one scalar, broadcast. */
const UOp *opt_vectorize(Ctx *ctx, const UOp *const *x, unsigned n);

/* x with each from[i] replaced by to[i]. */
const UOp *opt_substitute(Ctx *ctx, const UOp *x, const UOp *const *from, const UOp *const *to, size_t n);

/* The RANGEs that every REDUCE in x (at any depth) reduces over, when
 * they all share one list of at most max: in k, their count; 0 when x
 * has no REDUCE, the lists differ or are longer, or out of memory. */
size_t opt_shared_reduce_ranges(Ctx *ctx, const UOp *x, const UOp **k, size_t max);
/* What a loop over RANGE j need not compute again (opt_hoist on the CPU,
 * a GPU row's scalars in workgroup.c): the nodes of value that do not
 * depend on j, hold a REDUCE and are read by a node that depends on j (or
 * are value itself), pointers excepted, sources first, in out; their
 * count. -1 when value reads a REDUCE that depends on j or has more than
 * max such parts; -2 (error set) when out of memory. */
int opt_loop_free_parts(Ctx *ctx, const UOp *value, const UOp *j, const UOp **out, int max);
/* The bound of RANGE r when it is a constant, else 0. */
int64_t opt_const_bound(const UOp *r);
/* The iterations of the kernel's nest of single-effect loops down to its
 * innermost END: the product of their bounds' maxima (INT64_MAX when one
 * is unbounded or it overflows). upcast.c and widen.c keep a GPU full. */
int64_t opt_nest_iterations(const UOp *kernel);
/* How far index x advances when range r does: a constant, or 0 when it
 * is not one (stream.c's rows, workgroup.c's coalescing, gemm.c). */
int64_t opt_stride_along(Ctx *ctx, const UOp *x, const UOp *r);

/* The END of the innermost loop of a one-nest kernel (batch loops may
 * enclose it), whose one effect is a plain STORE; NULL if the kernel is
 * not that. */
const UOp *opt_innermost_end(const UOp *kernel);

/* A REDUCE's op (ADD, MUL, MAX, MULACC), and one step of it, acc op v:
 * a MULACC reduce fuses a product, fma(a, b, acc), and adds anything
 * else (docs/semantics.md, "REDUCE"). */
Op opt_reduce_op(const UOp *reduce);
const UOp *opt_reduce_step(Ctx *ctx, Op op, const UOp *acc, const UOp *v);

/* One past the largest axis number of the kernel's RANGEs: a new RANGE's;
 * one past the largest id of its ALLOCs: a new ALLOC's. */
int64_t opt_next_axis(Ctx *ctx, const UOp *kernel);
int64_t opt_next_alloc_id(Ctx *ctx, const UOp *kernel);

#endif
