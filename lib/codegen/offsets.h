/* offsets.h — an INDEX's constant offset, kept apart for the renderer.
 *
 * In: a kernel. Out: the kernel with each INDEX whose index is a linear
 * form with a constant k != 0 (symbolic/linear.h) indexing by ADD(e, k),
 * e the form without its constant. The renderer makes that two GEPs, the
 * constant one last, so the loads of one tile row (e + 1024, e + 2048, ..)
 * share one address and differ by a displacement: as one sum, LLVM turns
 * the adds of disjoint bits into ORs and loses their flags, and every load
 * computes its own address in the loop (measured: 15 of a GEMM step's 46
 * instructions). */
#ifndef UJ_CODEGEN_OFFSETS_H
#define UJ_CODEGEN_OFFSETS_H

#include "uop/uop.h"

/* NULL (error set) when out of memory. */
const UOp *offsets_split(Ctx *ctx, const UOp *kernel);

#endif
