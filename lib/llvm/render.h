/* render.h — the one renderer: a kernel of UOps to an LLVM module, through
 * the LLVM C API, for any of the three targets (target.h).
 *
 * In: a kernel's list (codegen/linear.h: the lowered kernel, checked
 * against the op table and by kernel_sig_build) and a Target. Out: a module holding one
 * function named `name` — on the CPU `void name(void **args, int64_t *vars)`
 * calling an inlined body `name.body(params..., vars...)`; on NVPTX and
 * AMDGPU a kernel `name(params..., vars...)` whose first three GLOBAL
 * ranges are the grid's x, y, z thread indices. Values follow
 * docs/semantics.md exactly (division by zero, shift counts, saturating
 * float-to-int, NaN-propagating MAX, fused MULACC). The module is verified.
 *
 * render_alu.c holds the value ops; render.c the structure (function,
 * loops, memory) item by item. Both share the Renderer below. */
#ifndef UJ_LLVM_RENDER_H
#define UJ_LLVM_RENDER_H

#include <llvm-c/Core.h>

#include "codegen/linear.h"
#include "llvm/hooks.h"
#include "llvm/signature.h"
#include "llvm/target.h"

/* The kernel's list (codegen/linear.h), item by item. */
LLVMModuleRef render_kernel(Ctx *ctx, LLVMContextRef lc, const Target *t, LLVMTargetDataRef layout, const Linear *l,
                            const KernelSig *sig, const char *name);

/* ---- shared by render.c and render_alu.c ---- */
typedef struct Renderer {
  Ctx *ctx;
  const Target *t;
  const TargetHooks *h; /* target_hooks[t->kind] */
  LLVMContextRef lc;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
} Renderer;

LLVMTypeRef render_type(const Renderer *r, DType d);     /* a value's type (bool: i1) */
LLVMTypeRef render_mem_type(const Renderer *r, DType d); /* in memory (bool: i8) */
LLVMValueRef render_const(const Renderer *r, DType d, uint64_t word);
/* Calls intrinsic `name` overloaded on the types over[0..nover). */
LLVMValueRef render_intrinsic(const Renderer *r, const char *name, LLVMTypeRef *over, unsigned nover,
                              LLVMValueRef *args, unsigned nargs);
/* The value of ALU node u from its sources' values; NULL with an error set
 * when the target cannot compute it. */
LLVMValueRef render_alu(const Renderer *r, const UOp *u, LLVMValueRef *src);
/* op(acc, v) for the op (ADD, MULACC, MUL, MAX) of a REDUCE; a MULACC
 * reduce whose value is a product a * b (ab = {a, b}) fuses it: fma(a, b, acc). */
LLVMValueRef render_accumulate(const Renderer *r, const UOp *reduce, Op op, LLVMValueRef acc, LLVMValueRef v,
                               const LLVMValueRef *ab);

/* ---- render_grid.c: GPU grid indices, workgroups, barriers ---- */
/* On a target with a grid, a `global` or `local` RANGE being opened gets
 * *index (its value) and *more (index < bound, its guard) from its place
 * in the kernel's grid (signature.h); *index NULL: a loop (the CPU, other
 * kinds, a `global` RANGE off the grid). False with an error set for a
 * `local` RANGE without a constant bound or off the grid (a fourth). */
bool grid_open(const Renderer *r, const KernelGrid *g, const UOp *range, LLVMValueRef bound, LLVMValueRef *index,
               LLVMValueRef *more);
/* A BARRIER, its effects emitted: the target's workgroup barrier (hooks:
 * `barrier`, which the caller checked is there) when in_workgroup (a
 * `local` RANGE is open), else nothing; false with the error set when
 * AMDGPU's helper cannot be linked. */
bool grid_barrier(const Renderer *r, bool in_workgroup);

#endif
