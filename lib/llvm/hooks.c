/* hooks.c — the per-target hooks (hooks.h), one row per target. */
#include "llvm/hooks.h"

#include <llvm-c/Core.h>

const TargetHooks target_hooks[TARGET_COUNT] = {
  [TARGET_CPU] = {
    .global_space = 0, .local_space = 0, .kernel_cc = 0, .grid = false,
    .libm_scalars = 1u << UJ_FLOAT64, /* libm for float64; float32 and 16-bit floats as polynomials (vectorized) */
    .stack_bytes = 1ul << 20, /* kernels run on the caller's thread: 1 MiB of its stack */
  },
  [TARGET_NVPTX] = {
    .global_space = 1, .local_space = 3, .kernel_cc = LLVMPTXKernelCallConv, .grid = true,
    .block_id = "llvm.nvvm.read.ptx.sreg.ctaid.%c", .block_size = "llvm.nvvm.read.ptx.sreg.ntid.%c",
    .thread_id = "llvm.nvvm.read.ptx.sreg.tid.%c", .barrier = "llvm.nvvm.barrier0",
    /* no libm: LLVM 19 has no libcall for llvm.exp2 and aborts on llvm.sin;
     * ex2/lg2/sin.approx are off by thousands of ulps near 1 and pi */
    .libm_scalars = 0,
    .stack_bytes = 512ul << 10, .workgroup_bytes = 48ul << 10, /* local memory per thread; static shared memory */
  },
  [TARGET_AMDGPU] = {
    .global_space = 1, .local_space = 3, .kernel_cc = LLVMAMDGPUKERNELCallConv, .grid = true,
    .block_id = "llvm.amdgcn.workgroup.id.%c", .block_size = NULL, .thread_id = "llvm.amdgcn.workitem.id.%c",
    .barrier = "uj.workgroup.barrier",
    .libm_scalars = 0, /* v_sin_f32 and v_log_f32 bound the absolute error only */
    .code_object_version = 400, /* v4: what older HSA runtimes load */
    .stack_bytes = 128ul << 10, .workgroup_bytes = 64ul << 10, /* scratch per work-item; LDS */
  },
};
