/* lanes.h — long reductions in vector lanes (lanes.c): a REDUCE over W
 * lanes j of a REDUCE over k becomes one W-lane vector REDUCE over k
 * (W accumulators instead of one, so the loop is not bound by the
 * latency of one add) and a fold of its lanes in lane order. The tensor
 * API writes float sums in that nested form (lib/tensor/reduce.c: a sum
 * whose order is the graph's); reductions whose result does not depend
 * on their order (MAX; integer ADD and MUL) are split here directly.
 *
 * In: a kernel as rangeify makes it. Out: the same results, bit for bit
 * (docs/opt.md, "Lanes"); NULL with the error set on failure. */
#ifndef UJ_OPT_LANES_H
#define UJ_OPT_LANES_H

#include "uop/uop.h"

/* W, the lanes of a nested sum (16 float32: two AVX2 or one AVX-512
 * register), and the least extent split. Measured on rows of 16M float32
 * in all (docs/opt.md, "Lanes"): at 64 elements a row (4 per lane) the
 * split form runs in half the time of one accumulator, at 32 in 0.8,
 * and at 16 no loop is left to split. */
enum { LANES_WIDTH = 16, LANES_MIN_EXTENT = 64 };

/* reassociate: float sums may be regrouped (the target's, TargetDesc). */
const UOp *opt_lanes(Ctx *ctx, const UOp *kernel, bool reassociate);

#endif
