/* opt.h — shaping kernels for their target (lib/opt): transforms of a
 * kernel's RANGEs chosen by heuristics. The passes, in order:
 *
 *   upcast.c    the innermost output loop of a reducing kernel is split
 *               into U lanes, its REDUCEs into one vector REDUCE each
 *               (register blocking: a GEMM computes U outputs per pass)
 *   parallel.c  the outermost loop of a big enough kernel becomes a
 *               `global` range: threads on the CPU (split in parts by the
 *               renderer and run by the thread pool), the grid on GPUs
 *
 * In: a kernel as rangeify makes it (SINK of ENDs of `loop` and `reduce`
 * RANGEs). Out: the same computation with its ranges re-kinded (later:
 * split, reordered, upcast). NULL with the error set on failure. */
#ifndef UJ_OPT_H
#define UJ_OPT_H

#include "uop/uop.h"

/* What kernels are shaped for. */
typedef struct OptTarget {
  unsigned vector_bytes; /* the widest vector register: 64 (AVX-512), 32 (AVX2), 16 (SSE, GPUs) */
} OptTarget;

const UOp *opt_kernel(Ctx *ctx, const UOp *kernel, const OptTarget *t);

const UOp *opt_upcast(Ctx *ctx, const UOp *kernel, unsigned vector_bytes);

/* parallel.c: a kernel whose RANGEs, multiplied, make fewer iterations
 * than this stays in one thread (a launch on the pool costs microseconds). */
enum { OPT_PARALLEL_MIN_WORK = 1 << 15 };
const UOp *opt_parallel(Ctx *ctx, const UOp *kernel);

#endif
