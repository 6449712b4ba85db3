/* symbolic.h — symbolic simplification inside the library.
 *
 * In: a graph that passed the spec checker. Out: the simplified graph
 * (rules in symbolic.c), or NULL with the error set. */
#ifndef UJ_SYMBOLIC_H
#define UJ_SYMBOLIC_H

#include "uop/uop.h"

const UOp *symbolic_simplify(Ctx *ctx, const UOp *root);

#endif
