/* transcendental.h — lowers EXP2, LOG2 and SIN to polynomial code.
 *
 * In: a graph and a mask of float scalars (1u << UJ_FLOAT64, ...). Out: an
 * equal graph in which every EXP2, LOG2 and SIN node whose lane scalar is in
 * the mask is replaced by code built only from the other ALU ops (ADD, MUL,
 * MULACC, FDIV, compares, WHERE, CAST, BITCAST, integer AND/OR/XOR/SHL/SHR),
 * within a few ulps of libm (docs/transcendental.md); other nodes are kept.
 * For targets without a libm for the dtype: float64 on NVPTX and AMDGPU. */
#ifndef UJ_TRANSCENDENTAL_H
#define UJ_TRANSCENDENTAL_H

#include "uop/uop.h"

/* The new root (vectors lowered with vector ops); NULL with the error set
 * when out of memory. */
const UOp *transcendental_lower(Ctx *ctx, const UOp *root, unsigned scalar_mask);

#endif
