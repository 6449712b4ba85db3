/* target.c — target descriptions (target.h): the host CPU as LLVM sees it,
 * NVPTX sm_* and AMDGPU gfx* archs, and their target machines.
 *
 * The arch lists are the ones LLVM 19 knows and that we test; an unknown
 * arch is refused here because LLVM would only print a warning and carry
 * on with a generic CPU. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>

#include "llvm/target.h"

const char *const target_kind_names[] = {"cpu", "nvptx", "amdgpu"};
_Static_assert(sizeof target_kind_names / sizeof *target_kind_names == TARGET_COUNT, "a name per TargetKind");

typedef struct ArchInfo {
  const char *name;
  const char *features;
} ArchInfo;

/* PTX ISA 7.8 is enough for sm_90; sm_90a's wgmma needs 8.0. */
static const ArchInfo nvptx_archs[] = {
    {"sm_90", "+ptx78"}, {"sm_80", "+ptx78"}, {"sm_86", "+ptx78"},
    {"sm_89", "+ptx78"}, {"sm_90a", "+ptx80"},
};
static const ArchInfo amdgpu_archs[] = {
    {"gfx90a", ""}, {"gfx908", ""}, {"gfx940", ""}, {"gfx941", ""}, {"gfx942", ""},
    {"gfx1030", ""}, {"gfx1100", ""}, {"gfx1101", ""}, {"gfx1102", ""},
};

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;

static void llvm_targets_init(void) {
  LLVMInitializeNativeTarget(); /* the host: info, target, MC */
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNVPTXTargetInfo(), LLVMInitializeNVPTXTarget(), LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInitializeAMDGPUTargetInfo(), LLVMInitializeAMDGPUTarget(), LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
}

static bool pick_arch(Ctx *ctx, const ArchInfo *archs, size_t n, const char *arch, Target *out) {
  if (!arch) arch = archs[0].name;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(archs[i].name, arch) == 0) {
      snprintf(out->cpu, sizeof out->cpu, "%s", archs[i].name);
      snprintf(out->features, sizeof out->features, "%s", archs[i].features);
      return true;
    }
  }
  char known[256] = "";
  for (size_t i = 0; i < n; i++)
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", archs[i].name);
  ctx_set_error(ctx, "unknown %s arch '%s' (known: %s)", target_kind_names[out->kind], arch, known);
  return false;
}

/* Whether LLVM's feature list ("+avx,-avx512f,...") enables name. */
static bool has_feature(const char *features, const char *name) {
  size_t n = strlen(name);
  for (const char *p = features; (p = strstr(p, name)) != NULL; p += n)
    if (p > features && p[-1] == '+' && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

static void host_init(Target *out) {
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  snprintf(out->triple, sizeof out->triple, "%s", triple);
  LLVMDisposeMessage(triple);
  snprintf(out->cpu, sizeof out->cpu, "%s", cpu);
  /* AVX512-BF16 and AVX-NE-CONVERT round to bfloat16 with subnormals
   * flushed to zero; docs/semantics.md keeps them, so LLVM must call our
   * runtime's conversions instead (backends/cpu/runtime.c) */
  snprintf(out->features, sizeof out->features, "%s,-avx512bf16,-avxneconvert", features);
  out->vector_bytes = has_feature(features, "avx512f") ? 64 : has_feature(features, "avx") ? 32 : 16;
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

bool target_init(Ctx *ctx, TargetKind kind, const char *arch, Target *out) {
  pthread_once(&llvm_once, llvm_targets_init);
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->vector_bytes = 16; /* GPUs: a 16-byte load or store per thread */
  switch (kind) {
  case TARGET_CPU:
    host_init(out);
    return true;
  case TARGET_NVPTX:
    snprintf(out->triple, sizeof out->triple, "nvptx64-nvidia-cuda");
    return pick_arch(ctx, nvptx_archs, sizeof nvptx_archs / sizeof *nvptx_archs, arch, out);
  case TARGET_AMDGPU:
    snprintf(out->triple, sizeof out->triple, "amdgcn-amd-amdhsa");
    return pick_arch(ctx, amdgpu_archs, sizeof amdgpu_archs / sizeof *amdgpu_archs, arch, out);
  default: break;
  }
  ctx_set_error(ctx, "unknown target kind %d", (int)kind);
  return false;
}

LLVMTargetMachineRef target_machine_new(Ctx *ctx, const Target *t) {
  LLVMTargetRef target = NULL;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
    ctx_set_error(ctx, "LLVM has no target for %s: %s", t->triple, err ? err : "?");
    LLVMDisposeMessage(err);
    return NULL;
  }
  LLVMCodeModel model = t->kind == TARGET_CPU ? LLVMCodeModelJITDefault : LLVMCodeModelDefault;
  LLVMRelocMode reloc = t->kind == TARGET_AMDGPU ? LLVMRelocPIC : LLVMRelocDefault;
  return LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features,
                                 LLVMCodeGenLevelAggressive, reloc, model);
}
