/* target.h — the three targets of the one LLVM pipeline, as data, and
 * their LLVM target machines.
 *
 * In: a target kind and an optional arch name ("sm_90", "gfx942"; NULL for
 * the default; ignored for the CPU, which is always the host). Out: a Target
 * (triple, CPU name, features) and, on demand, an LLVMTargetMachineRef.
 * LLVM's targets are initialised once per process, on first use. */
#ifndef UJ_LLVM_TARGET_H
#define UJ_LLVM_TARGET_H

#include <llvm-c/TargetMachine.h>

#include "uop/uop.h"

typedef enum TargetKind { TARGET_CPU, TARGET_NVPTX, TARGET_AMDGPU, TARGET_COUNT } TargetKind;

typedef struct Target {
  TargetKind kind;
  char triple[64];
  char cpu[64];       /* host CPU name ("znver3"), "sm_90", "gfx90a" */
  char features[4096]; /* "+avx2,+fma,..." for the host; "+ptx80" for NVPTX */
  unsigned vector_bytes; /* the widest vector register: 64 (AVX-512), 32 (AVX2), 16 */
} Target;

extern const char *const target_kind_names[TARGET_COUNT]; /* "cpu", "nvptx", "amdgpu" */

/* Fills *out for kind and arch (NULL: sm_90 / gfx90a / the host CPU);
 * false with a message listing the known archs when arch is unknown. */
bool target_init(Ctx *ctx, TargetKind kind, const char *arch, Target *out);
/* A new target machine (the caller disposes it); NULL with a message when
 * LLVM lacks the target. */
LLVMTargetMachineRef target_machine_new(Ctx *ctx, const Target *t);

#endif
