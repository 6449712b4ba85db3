/* pipeline.c — one kernel through every pass (pipeline.h). This is the
 * one function that lists the compilation in order: pipeline_compile. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm/pipeline.h"
#include "codegen/transcendental.h"
#include "llvm/render.h"
#include "symbolic/symbolic.h"
#include "uop/spec.h"
#include "uop/text.h"

int pipeline_debug_level(void) {
  const char *v = getenv("UJ_DEBUG");
  return v ? atoi(v) : 0;
}

double pipeline_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

char *pipeline_ir_text(LLVMModuleRef mod) {
  char *s = LLVMPrintModuleToString(mod);
  char *copy = s ? strdup(s) : NULL;
  LLVMDisposeMessage(s);
  return copy;
}

static void debug_dump(const char *what, const char *name, const char *text) {
  fprintf(stderr, "UJ_DEBUG: %s of %s:\n%s%s", what, name, text ? text : "(none)\n",
          text && text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
}

static void debug_uops(Ctx *ctx, const UOp *kernel, const char *name) {
  char *text = text_print(ctx, kernel);
  debug_dump("UOps", name, text);
  free(text);
}

static void debug_ir(LLVMModuleRef mod, const char *what, const char *name) {
  char *text = pipeline_ir_text(mod);
  debug_dump(what, name, text);
  free(text);
}

static bool optimize(Ctx *ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
  LLVMErrorRef err = LLVMRunPasses(mod, "default<O2>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!err) return true;
  char *msg = LLVMGetErrorMessage(err);
  ctx_set_error(ctx, "LLVM passes failed: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

/* The graph-level passes: what the renderer takes is simplified and has
 * only ops the target computes. */
static const UOp *lower_kernel(Ctx *ctx, const UOp *kernel, const Target *t) {
  if (!spec_check_graph(ctx, kernel)) return NULL;
  const UOp *k = symbolic_simplify(ctx, kernel);
  unsigned floats = 1u << UJ_FLOAT16 | 1u << UJ_BFLOAT16 | 1u << UJ_FLOAT32 | 1u << UJ_FLOAT64;
  unsigned lower = floats & ~target_hooks[t->kind].libm_scalars;
  if (k && lower) k = transcendental_lower(ctx, k, lower);
  return k;
}

LLVMModuleRef pipeline_compile(Ctx *ctx, const UOp *kernel, LLVMContextRef lc, const PipelineRequest *req,
                               KernelSig *sig) {
  int debug = pipeline_debug_level();
  if (!kernel || kernel->id >= ctx->nnodes || ctx->nodes[kernel->id] != kernel) {
    ctx_set_error(ctx, "compile: the kernel is not a node of this context");
    return NULL;
  }
  const UOp *k = lower_kernel(ctx, kernel, req->target);
  if (!k || !kernel_sig_build(ctx, k, sig)) return NULL;
  if (debug >= 2) debug_uops(ctx, k, req->name);
  LLVMModuleRef mod = render_kernel(ctx, lc, req->target, k, sig, req->name);
  if (mod && debug >= 3) debug_ir(mod, "LLVM IR", req->name);
  if (mod && req->ir_before) *req->ir_before = pipeline_ir_text(mod);
  if (mod && req->optimize && !optimize(ctx, mod, req->tm)) LLVMDisposeModule(mod), mod = NULL;
  if (mod && req->optimize && debug >= 4) debug_ir(mod, "optimized LLVM IR", req->name);
  if (!mod) kernel_sig_free(sig);
  return mod;
}

bool pipeline_emit(Ctx *ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm, LLVMCodeGenFileType kind,
                   char **out, size_t *len) {
  LLVMModuleRef clone = LLVMCloneModule(mod);
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  bool failed = LLVMTargetMachineEmitToMemoryBuffer(tm, clone, kind, &msg, &buf);
  LLVMDisposeModule(clone);
  if (failed) {
    ctx_set_error(ctx, "LLVM code generation failed: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return false;
  }
  size_t n = LLVMGetBufferSize(buf);
  *out = malloc(n + 1);
  if (*out) memcpy(*out, LLVMGetBufferStart(buf), n), (*out)[n] = 0;
  LLVMDisposeMemoryBuffer(buf);
  if (!*out) return ctx_set_error(ctx, "emit: out of memory"), false;
  if (len) *len = n;
  return true;
}
