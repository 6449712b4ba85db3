/* render_grid.c — the GPU's grid and workgroups for the renderer
 * (docs/compile.md, "GPU kernels").
 *
 * In: a `global` or `local` RANGE being opened on a target with a grid,
 * and a BARRIER. Out: the range's index and its guard (index < bound);
 * the target's barrier. Which RANGE goes on which dimension is the
 * kernel's grid (signature.h: the innermost `global` RANGEs, on x first).
 * Without `local` RANGEs those are grid indices, block id * block size +
 * thread id, any block size. With them the kernel is made of workgroups:
 * `global` RANGEs are block ids, `local` RANGEs thread ids, their constant
 * bounds the block's size (the launch must use exactly those sizes), and a
 * BARRIER inside them is the target's workgroup barrier: bar.sync on
 * NVPTX; on AMDGPU s_barrier between workgroup-scope release and acquire
 * fences, from a helper in textual IR linked in (the C API of LLVM 19
 * has no syncscope). */
#include <stdio.h>
#include <string.h>

#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>

#include "llvm/render.h"

static LLVMValueRef sreg(const Renderer *r, const char *fmt, unsigned dim) {
  char name[64];
  snprintf(name, sizeof name, fmt, "xyz"[dim]);
  return render_intrinsic(r, name, NULL, 0, NULL, 0);
}

/* The block size along dim from the HSA dispatch packet: u16 at 4 + 2*dim. */
static LLVMValueRef packet_block_size(const Renderer *r, unsigned dim) {
  LLVMBuilderRef B = r->b;
  LLVMValueRef packet = render_intrinsic(r, "llvm.amdgcn.dispatch.ptr", NULL, 0, NULL, 0);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(r->lc), i16 = LLVMInt16TypeInContext(r->lc);
  LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(r->lc), 4 + 2 * dim, 0);
  LLVMValueRef at = LLVMBuildInBoundsGEP2(B, i8, packet, &off, 1, "");
  LLVMValueRef size = LLVMBuildLoad2(B, i16, at, "");
  LLVMSetAlignment(size, 2);
  return LLVMBuildZExt(B, size, LLVMInt32TypeInContext(r->lc), "");
}

bool grid_open(const Renderer *r, const KernelGrid *g, const UOp *range, LLVMValueRef bound, LLVMValueRef *index,
               LLVMValueRef *more) {
  *index = NULL;
  AxisKind kind = range_kind(range);
  if (!r->h->grid || (kind != AXIS_GLOBAL && kind != AXIS_LOCAL)) return true;
  if (kind == AXIS_LOCAL && range->src[0]->op != UJ_OP_CONST) {
    ctx_set_error(r->ctx, "render: a `local` RANGE's bound must be a constant: it is the workgroup's size");
    return false;
  }
  if (g->clash) {
    ctx_set_error(r->ctx, "render: two `global` or `local` RANGEs with one axis number: each grid dimension needs its own");
    return false;
  }
  int dim = kernel_grid_dim(g, range);
  if (dim < 0 && kind == AXIS_LOCAL) {
    ctx_set_error(r->ctx, "render: a workgroup of more than 3 `local` RANGEs (a GPU block has 3 dimensions)");
    return false;
  }
  if (dim < 0) return true;
  LLVMBuilderRef B = r->b;
  const TargetHooks *h = r->h;
  LLVMValueRef i; /* i32, >= 0 */
  if (kind == AXIS_LOCAL) i = sreg(r, h->thread_id, (unsigned)dim);
  else if (g->workgroups) i = sreg(r, h->block_id, (unsigned)dim);
  else {
    LLVMValueRef block = sreg(r, h->block_id, (unsigned)dim), thread = sreg(r, h->thread_id, (unsigned)dim);
    LLVMValueRef size = h->block_size ? sreg(r, h->block_size, (unsigned)dim) : packet_block_size(r, (unsigned)dim);
    i = LLVMBuildAdd(B, LLVMBuildMul(B, block, size, ""), thread, "");
  }
  /* index < bound, compared at 32 bits or more, before any narrowing (an
   * int8 range must not see a thread 200 as -56) */
  unsigned bits = dt_bits(range->dtype);
  bool sign = dt_is_signed(range->dtype);
  LLVMTypeRef t = render_type(r, range->dtype), wide = bits > 32 ? t : LLVMInt32TypeInContext(r->lc);
  if (bits > 32) i = LLVMBuildZExt(B, i, t, "");
  if (bits < 32) bound = sign ? LLVMBuildSExt(B, bound, wide, "") : LLVMBuildZExt(B, bound, wide, "");
  /* 32 bits: an unsigned bound above INT32_MAX still compares right as unsigned */
  *more = LLVMBuildICmp(B, sign || bits < 32 ? LLVMIntSLT : LLVMIntULT, i, bound, "");
  *index = bits < 32 ? LLVMBuildTrunc(B, i, t, "") : i;
  return true;
}

/* AMDGPU's workgroup barrier: LLVM 19's C API cannot set a fence's
 * syncscope, so the helper is parsed from text and linked in. */
static const char amdgpu_barrier_ir[] =
    "define void @uj.workgroup.barrier() alwaysinline {\n"
    "  fence syncscope(\"workgroup\") release\n"
    "  call void @llvm.amdgcn.s.barrier()\n"
    "  fence syncscope(\"workgroup\") acquire\n"
    "  ret void\n"
    "}\n"
    "declare void @llvm.amdgcn.s.barrier()\n";

static LLVMValueRef amdgpu_barrier(const Renderer *r) {
  LLVMValueRef fn = LLVMGetNamedFunction(r->mod, "uj.workgroup.barrier");
  if (fn) return fn;
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(amdgpu_barrier_ir, strlen(amdgpu_barrier_ir), "barrier");
  LLVMModuleRef helper = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(r->lc, buf, &helper, &msg)) { /* takes buf */
    ctx_set_error(r->ctx, "render: the AMDGPU barrier helper does not parse (a bug in uopjit): %s", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMSetTarget(helper, LLVMGetTarget(r->mod));
  LLVMSetDataLayout(helper, LLVMGetDataLayoutStr(r->mod));
  if (LLVMLinkModules2(r->mod, helper)) { /* takes helper */
    ctx_set_error(r->ctx, "render: linking the AMDGPU barrier helper failed (a bug in uopjit)");
    return NULL;
  }
  fn = LLVMGetNamedFunction(r->mod, "uj.workgroup.barrier");
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  return fn;
}

bool grid_barrier(const Renderer *r, bool in_workgroup) {
  if (!in_workgroup) return true; /* a workgroup of one thread */
  if (strcmp(r->h->barrier, "uj.workgroup.barrier") != 0) {
    render_intrinsic(r, r->h->barrier, NULL, 0, NULL, 0);
    return true;
  }
  LLVMValueRef fn = amdgpu_barrier(r);
  if (fn) LLVMBuildCall2(r->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
  return fn != NULL;
}
