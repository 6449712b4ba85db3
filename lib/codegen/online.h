/* online.h — the online form of a REDUCE that reads a running maximum
 * (flash attention's softmax), found for the renderer.
 *
 * In: a kernel. Out: each MAX REDUCE M over RANGEs r.. whose value is read
 * by REDUCEs over the same RANGEs (M shadows them: docs/semantics.md,
 * "REDUCE") only as exp2((y - M) * c), c a constant, the exp2 only scaled
 * by factors free of M on the way to the REDUCE's value. Such REDUCEs and
 * M can run in one loop (render.c): M's accumulator is the maximum so far,
 * and before each step adds its value the others' accumulators are scaled
 * by exp2((old - new) * c) — `rescale` below, a graph over two
 * placeholder nodes `old` and `now` the renderer binds to M's accumulator
 * before and after the step. */
#ifndef UJ_CODEGEN_ONLINE_H
#define UJ_CODEGEN_ONLINE_H

#include "uop/uop.h"

typedef struct OnlineMax {
  const UOp *max;               /* the REDUCE MAX */
  const UOp *rescale, *old, *now; /* exp2((old - now) * c), not yet lowered */
} OnlineMax;

/* The kernel's online maxima, malloc'd into *out (NULL when none), their
 * count in *n; false (error set) when out of memory. */
bool online_find(Ctx *ctx, const UOp *kernel, OnlineMax **out, size_t *n);

#endif
