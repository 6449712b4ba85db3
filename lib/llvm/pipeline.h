/* pipeline.h — the compilation of one kernel, every pass in order, and the
 * emission of its stages (IR, assembly, PTX, object code).
 *
 *   kernel UOps ─ check ─ signature ─ simplify ─ lower (transcendentals
 *     the target lacks) ─ linearize (codegen/linear.h) ─ render + verify
 *     ─ LLVM passes ─ module
 *
 * The passes: on the CPU, O2's without the partial unrolling of vector
 * loops (pipeline.c says why); on GPUs, default<O2>.
 *
 * In: a kernel in ctx, a Target, an LLVM context. Out: the module (the
 * caller owns it) and the kernel's signature; with UJ_DEBUG set, the stages
 * on stderr as they happen (docs/compile.md). */
#ifndef UJ_LLVM_PIPELINE_H
#define UJ_LLVM_PIPELINE_H

#include <llvm-c/TargetMachine.h>

#include "codegen/linear.h"
#include "llvm/signature.h"
#include "llvm/target.h"

typedef struct PipelineRequest {
  const Target *target;
  LLVMTargetMachineRef tm;  /* for the pass pipeline */
  const char *name;         /* the kernel's function name */
  bool optimize;            /* run the LLVM passes */
  char **ir_before;         /* if not NULL: the IR before the passes (malloc'd) */
  const char *display_name; /* the user's name in UJ_DEBUG dumps; NULL: name */
} PipelineRequest;

/* The kernel checked, its signature built, lowered for req->target and
 * linearized (codegen/linear.h): what pipeline_compile renders. False
 * with the error set (sig freed). */
bool pipeline_linearize(Ctx *ctx, const UOp *kernel, const PipelineRequest *req, KernelSig *sig, Linear *out);
LLVMModuleRef pipeline_compile(Ctx *ctx, const UOp *kernel, LLVMContextRef lc, const PipelineRequest *req,
                               KernelSig *sig);
/* Code for the target machine: assembly or an object file, in a malloc'd
 * buffer (NUL-terminated). The module is cloned first: emission changes it. */
bool pipeline_emit(Ctx *ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMCodeGenFileType kind,
                   char **out, size_t *len);
/* The module's text, malloc'd. */
char *pipeline_ir_text(LLVMModuleRef mod);
/* A kernel's name fits every target's symbols: [A-Za-z_][A-Za-z0-9_]*,
 * at most 47 characters; false with the error set. */
bool pipeline_name_ok(Ctx *ctx, const char *name);
/* UJ_DEBUG as an int (0 when unset). */
int pipeline_debug_level(void);
/* Milliseconds on a monotonic clock. */
double pipeline_now_ms(void);

#endif
