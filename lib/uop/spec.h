/* spec.h — the spec checker: nodes and whole graphs against the op table.
 *
 * In: a node (or the parts of one not yet interned), or a graph root. Out:
 * true when it holds; otherwise false with a message in the context that
 * names the op and prints the offending node. */
#ifndef UJ_SPEC_H
#define UJ_SPEC_H

#include "uop/uop.h"

/* Arity and arg layout, before a node is interned. */
bool spec_check_shape(Ctx *ctx, Op op, DType dtype, size_t nsrc, Arg arg);
/* The type rule of one interned node. */
bool spec_check_node(Ctx *ctx, const UOp *u);
/* The type rule with the message in buf instead of the context; for
 * the parser, which adds a location. */
const char *spec_node_error(const UOp *u, char *buf, size_t size);
/* Every node under root (iterative; any depth). */
bool spec_check_graph(Ctx *ctx, const UOp *root);

#endif
