/* movement.h — shapes and type rules of the tensor-level ops (movement.c):
 * RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK, REDUCE, GATHER and SCATTER. For ops.c (the
 * op table) and props.c (shapes at creation). */
#ifndef UJ_MOVEMENT_H
#define UJ_MOVEMENT_H

#include "uop/uop.h"

/* u's shape from its source's and its arg; false when out of memory. */
bool movement_shape(Ctx *ctx, UOp *u);
/* The element count of a shape; -1 when it overflows int64. */
int64_t shape_numel(const int64_t *shape, unsigned ndim);
/* How far a shape's indices reach: the product of its sizes with a size
 * of 0 counted as 1 (a flat index, a stride and every partial product of
 * them stay below it); -1 when it overflows int64 or a size is negative. */
int64_t shape_span(const int64_t *shape, unsigned ndim);
/* The limits on shapes (docs/tensor.md, "Limits"). A tensor the API hands
 * out, or memory it allocates, spans at most SHAPE_MAX_ELEMENTS; a node
 * inside an operation (a matmul's broadcast product, never in memory) at
 * most SHAPE_MAX_SPAN, so that index arithmetic in int64 cannot overflow
 * (255 axes of strides below 2^52 sum below 2^60). */
#define SHAPE_MAX_ELEMENTS ((int64_t)1 << 40)
#define SHAPE_MAX_SPAN ((int64_t)1 << 52)
/* "(4, 8)"; "(4,)" for one axis; "()" for a scalar. */
const char *shape_str(const int64_t *shape, unsigned ndim, char *b, size_t n);

const char *movement_rule_reshape(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_expand(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_permute(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_flip(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_pad_shrink(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_reduce(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_gather(const UOp *u, DType *out, char *buf, size_t size);
const char *movement_rule_scatter(const UOp *u, DType *out, char *buf, size_t size);

#endif
