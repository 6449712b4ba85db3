/* parts.h — the CPU's split of a kernel among threads, as a graph.
 *
 * In: the `global` RANGE a CPU kernel splits (kernel_parallel_range). Out:
 * the DEFINE_VARs `_part` and `_nparts` (part k of n, passed by the CPU
 * entry, never by the host) and the start and bound of part k:
 * [k*c, min((k+1)*c, n)) clamped to [0, n], c = ceil(n / parts), n the
 * RANGE's bound (no trips below 0), computed in uint64 and given back in
 * the RANGE's type. The linearizer runs the RANGE's loop from start to
 * bound (linear.h, LOOP). NULL (error set) when out of memory. */
#ifndef UJ_CODEGEN_PARTS_H
#define UJ_CODEGEN_PARTS_H

#include "uop/uop.h"

typedef struct PartBounds {
  const UOp *part, *nparts; /* DEFINE_VAR:uint64 */
  const UOp *start, *bound; /* in the RANGE's type */
} PartBounds;

bool parts_bounds(Ctx *ctx, const UOp *range, PartBounds *out);

#endif
