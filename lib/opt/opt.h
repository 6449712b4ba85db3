/* opt.h — shaping kernels for their target (lib/opt): transforms of a
 * kernel's RANGEs chosen by heuristics. The passes, in order:
 *
 *   lanes.c     long reductions in vector lanes (lanes.h)
 *   upcast.c    the innermost output loop of a reducing kernel is split
 *               into U lanes, its REDUCEs into one vector REDUCE each
 *               (register blocking: a GEMM computes U outputs per pass)
 *   tile.c      the rows of a blocked kernel cut in tiles, each tile's
 *               column loop outside its rows (a panel reused from L2)
 *   parallel.c  the outermost loop of a big enough kernel becomes a
 *               `global` range: threads on the CPU (split in parts by the
 *               renderer and run by the thread pool), the grid on GPUs
 *
 * In: a kernel as rangeify makes it (SINK of ENDs of `loop` and `reduce`
 * RANGEs) and what it is for (OptTarget). Out: the same results, its
 * ranges split, reordered, upcast and re-kinded (docs/opt.md). NULL with
 * the error set on failure. */
#ifndef UJ_OPT_H
#define UJ_OPT_H

#include "uop/uop.h"

/* What kernels are shaped for. */
typedef struct OptTarget {
  unsigned vector_bytes; /* the widest vector register: 64 (AVX-512), 32 (AVX2), 16 (SSE, GPUs) */
} OptTarget;

const UOp *opt_kernel(Ctx *ctx, const UOp *kernel, const OptTarget *t);

const UOp *opt_upcast(Ctx *ctx, const UOp *kernel, unsigned vector_bytes);
const UOp *opt_tile(Ctx *ctx, const UOp *kernel);

/* parallel.c: a kernel whose RANGEs, multiplied, make fewer iterations
 * than this stays in one thread (a launch on the pool costs microseconds). */
enum { OPT_PARALLEL_MIN_WORK = 1 << 15 };
const UOp *opt_parallel(Ctx *ctx, const UOp *kernel);

#endif
