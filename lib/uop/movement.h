/* movement.h — shapes and type rules of the tensor-level ops (movement.c):
 * RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK and REDUCE. For ops.c (the
 * op table) and props.c (shapes at creation). */
#ifndef UJ_MOVEMENT_H
#define UJ_MOVEMENT_H

#include "uop/uop.h"

/* u's shape from its source's and its arg; false when out of memory. */
bool movement_shape(Ctx *ctx, UOp *u);
/* "(4, 8)"; "(4,)" for one axis; "()" for a scalar. */
/* The element count of a shape; -1 when it overflows int64. */
int64_t shape_numel(const int64_t *shape, unsigned ndim);
const char *shape_str(const int64_t *shape, unsigned ndim, char *b, size_t n);

const char *movement_rule_reshape(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_expand(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_permute(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_flip(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_pad_shrink(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_reduce(const UOp *u, DType *out, char *buf, size_t size);

#endif
