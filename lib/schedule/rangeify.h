/* rangeify.h — a tensor graph to one kernel: movement ops become index
 * arithmetic on RANGEs, reductions become kernel-form REDUCEs.
 *
 * In: a tensor (a value node with a shape) built from BUFFER views,
 * movement ops, ALU ops, CONSTs and REDUCEs over axes. Out: a kernel
 * (SINK of END(RANGE...) of STORE) that writes the tensor, in C order, to
 * PARAM slot 0 and reads the BUFFERs from slots 1, 2, ... in the order of
 * *buffers (malloc'd; the caller frees it). Everything is fused into one
 * kernel; cutting graphs into several is the scheduler's.
 *
 * Indices are int32 when every tensor of the graph has fewer than 2^31
 * elements and index_bits is 32, else int64 (index_bits 64: what a 64-bit
 * CPU addresses with, so LLVM sees lane i+1 of an index as the next
 * element without looking through sign extensions). */
#ifndef UJ_RANGEIFY_H
#define UJ_RANGEIFY_H

#include "uop/uop.h"

const UOp *rangeify_kernel(Ctx *ctx, const UOp *tensor, unsigned index_bits, const UOp ***buffers, size_t *nbuffers);

#endif
