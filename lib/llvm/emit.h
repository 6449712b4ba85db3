/* emit.h — uj_emit's work for callers that name their kernels and shape
 * them first (the tensor layer's uj_tensor_emit), without LLVM's headers.
 *
 * In: a stage (uj_emit_kind) and an arch (NULL: uj_emit's default: the
 * host CPU, sm_90 for PTX, gfx90a for AMDGCN). Out: the TargetDesc the
 * kernels must be scheduled and optimized for, so what is printed is
 * what that target would run; and one kernel's stage under its own name. */
#ifndef UJ_LLVM_EMIT_H
#define UJ_LLVM_EMIT_H

#include "opt/target.h"
#include "uop/uop.h"

/* NULL with the error set: an unknown arch, or asm with one. */
const TargetDesc *emit_target_desc(Ctx *ctx, uj_emit_kind kind, const char *arch);
/* As uj_emit, the function named name (pipeline_name_ok). */
char *emit_kernel(Ctx *ctx, const UOp *kernel, uj_emit_kind kind, const char *arch, const char *name, size_t *len);

#endif
