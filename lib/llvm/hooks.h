/* hooks.h — what the renderer does differently per target, as data: the
 * small set of per-target hooks of the one renderer.
 *
 * In: a TargetKind. Out: its TargetHooks: address spaces of pointers, the
 * kernel calling convention, the intrinsics of thread and block ids, which
 * EXP2/LOG2/SIN LLVM computes, module flags. render.c and render_alu.c read
 * these and test no target kind themselves. */
#ifndef UJ_LLVM_HOOKS_H
#define UJ_LLVM_HOOKS_H

#include <stdbool.h>

#include "llvm/target.h"

/* Every float scalar, as a mask of 1 << uj_scalar bits. */
#define TARGET_ALL_FLOATS (1u << UJ_FLOAT16 | 1u << UJ_BFLOAT16 | 1u << UJ_FLOAT32 | 1u << UJ_FLOAT64)

typedef struct TargetHooks {
  unsigned global_space, local_space; /* LLVM address spaces of T* and T*local */
  unsigned kernel_cc;                 /* 0: a plain function behind a CPU entry */
  /* GLOBAL ranges as grid indices: block id * block size + thread id; the
   * names take "x", "y", "z" for %c. block_size NULL: the u16 at 4 + 2*dim
   * of the HSA dispatch packet. grid false: GLOBAL ranges are loops. */
  bool grid;
  const char *block_id, *block_size, *thread_id;
  /* A workgroup's barrier: an intrinsic, or "uj.workgroup.barrier" (the
   * AMDGPU helper of render_grid.c); NULL: no workgroups (the CPU). */
  const char *barrier;
  /* The float scalars (bit 1 << uj_scalar) whose EXP2/LOG2/SIN the target
   * computes with llvm.exp2/log2/sin (libm on the CPU); the others are
   * lowered to polynomials first (lib/codegen/transcendental.c). */
  unsigned libm_scalars;
  int code_object_version; /* amdhsa_code_object_version module flag; 0: none */
  /* ALLOC: register memory is stack (alloca, in the data layout's alloca
   * address space), at most stack_bytes a kernel; local memory is a
   * workgroup-shared global in local_space, at most workgroup_bytes, or,
   * where that is 0 (the CPU), stack as well. */
  unsigned long stack_bytes, workgroup_bytes;
} TargetHooks;

extern const TargetHooks target_hooks[TARGET_COUNT];

#endif
