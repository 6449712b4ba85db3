/* emit.c — uj_emit: any stage of a kernel as text (or a code object) for
 * any target, without running it. Each call has its own LLVM context and
 * target machine, disposed before it returns. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "llvm/codeobj.h"
#include "llvm/emit.h"
#include "llvm/pipeline.h"

static const char *const emit_names[] = {"ir", "ir-opt", "asm", "ptx", "amdgcn", "hsaco", "list"};
_Static_assert(sizeof emit_names / sizeof *emit_names == UJ_EMIT_COUNT, "a name per uj_emit_kind");

const char *uj_emit_name(uj_emit_kind kind) {
  return (unsigned)kind < UJ_EMIT_COUNT ? emit_names[kind] : "?";
}

static bool emit_target(Ctx *ctx, uj_emit_kind kind, const char *arch, Target *t) {
  TargetKind tk = TARGET_CPU;
  if (kind == UJ_EMIT_PTX) tk = TARGET_NVPTX;
  else if (kind == UJ_EMIT_AMDGCN || kind == UJ_EMIT_HSACO) tk = TARGET_AMDGPU;
  else if (arch && strncmp(arch, "sm_", 3) == 0) tk = TARGET_NVPTX;
  else if (arch && strncmp(arch, "gfx", 3) == 0) tk = TARGET_AMDGPU;
  else if (arch) return ctx_set_error(ctx, "emit: unknown arch '%s'", arch), false;
  return target_init(ctx, tk, tk == TARGET_CPU ? NULL : arch, t);
}

/* The emitted stage of an optimized module. */
static char *emit_stage(Ctx *ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm, uj_emit_kind kind, size_t *len) {
  char *out = NULL, *obj = NULL;
  size_t n = 0;
  if (kind == UJ_EMIT_IR_OPT) {
    out = pipeline_ir_text(mod);
    n = out ? strlen(out) : 0;
  } else if (kind != UJ_EMIT_HSACO) {
    pipeline_emit(ctx, mod, tm, LLVMAssemblyFile, &out, &n);
  } else if (pipeline_emit(ctx, mod, tm, LLVMObjectFile, &obj, &n)) {
    codeobj_link(ctx, obj, n, &out, &n);
    free(obj);
  }
  if (out && len) *len = n;
  return out;
}

const TargetDesc *emit_target_desc(Ctx *ctx, uj_emit_kind kind, const char *arch) {
  Target t;
  if ((unsigned)kind >= UJ_EMIT_COUNT) return ctx_set_error(ctx, "emit: unknown kind %d", (int)kind), NULL;
  if (kind == UJ_EMIT_ASM && arch) return ctx_set_error(ctx, "emit: asm is this CPU's assembly: no arch"), NULL;
  if (!emit_target(ctx, kind, arch, &t)) return NULL;
  return t.kind == TARGET_CPU ? target_desc_cpu(t.vector_bytes) : target_desc_for_arch(t.cpu);
}

char *uj_emit(uj_ctx *ctx, const uj_uop *kernel, uj_emit_kind kind, const char *arch, size_t *len) {
  return emit_kernel(ctx, kernel, kind, arch, "kernel", len);
}

char *emit_kernel(Ctx *ctx, const UOp *kernel, uj_emit_kind kind, const char *arch, const char *name, size_t *len) {
  Target t;
  if ((unsigned)kind >= UJ_EMIT_COUNT) return ctx_set_error(ctx, "emit: unknown kind %d", (int)kind), NULL;
  if (!pipeline_name_ok(ctx, name) || !emit_target(ctx, kind, arch, &t)) return NULL;
  if (kind == UJ_EMIT_LIST) { /* no LLVM: the list the renderer would take */
    Linear l;
    KernelSig sig;
    PipelineRequest req = {.target = &t, .name = name};
    bool listed = pipeline_linearize(ctx, kernel, &req, &sig, &l);
    char *out = listed ? linear_print(ctx, &l) : NULL;
    if (listed) linear_free(&l), kernel_sig_free(&sig);
    if (out && len) *len = strlen(out);
    return out;
  }
  LLVMTargetMachineRef tm = target_machine_new(ctx, &t);
  if (!tm) return NULL;
  LLVMContextRef lc = LLVMContextCreate();
  KernelSig sig;
  char *out = NULL;
  PipelineRequest req = {.target = &t, .tm = tm, .name = name, .optimize = kind != UJ_EMIT_IR,
                         .ir_before = kind == UJ_EMIT_IR ? &out : NULL};
  LLVMModuleRef mod = pipeline_compile(ctx, kernel, lc, &req, &sig);
  if (mod && kind != UJ_EMIT_IR) out = emit_stage(ctx, mod, tm, kind, len);
  else if (out && len) *len = strlen(out);
  if (mod) LLVMDisposeModule(mod), kernel_sig_free(&sig);
  LLVMContextDispose(lc);
  LLVMDisposeTargetMachine(tm);
  return out;
}
