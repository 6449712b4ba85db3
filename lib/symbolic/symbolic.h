/* symbolic.h — symbolic simplification inside the library.
 *
 * In: a graph that passed the spec checker. Out: the simplified graph
 * (rules in symbolic.c), or NULL with the error set. */
#ifndef UJ_SYMBOLIC_H
#define UJ_SYMBOLIC_H

#include "uop/uop.h"

const UOp *symbolic_simplify(Ctx *ctx, const UOp *root);
/* The operands of every commutative op in canonical order (the symbolic
 * rules' order: by op, then structural key), nothing else rewritten. The
 * optimizer's passes build operands anew and keep the order they found:
 * two kernels that end up equal but came from different movement chains
 * (a GEMM reading a buffer, another reading a (2048, 2048, 1) view) would
 * otherwise differ in MUL(a, b) against MUL(b, a) and compile twice. */
const UOp *symbolic_canonical_order(Ctx *ctx, const UOp *root);

#endif
