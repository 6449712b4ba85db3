/* hooks.c — the per-target hooks (hooks.h), one row per target. */
#include "llvm/hooks.h"

#include <llvm-c/Core.h>

const TargetHooks target_hooks[TARGET_COUNT] = {
  [TARGET_CPU] = {
    .global_space = 0, .local_space = 0, .kernel_cc = 0, .grid = false,
    .exp2 = "llvm.exp2", .log2 = "llvm.log2", .sin = "llvm.sin", .overloaded = true, /* libm */
    .libm_float64 = true,
  },
  [TARGET_NVPTX] = {
    .global_space = 1, .local_space = 3, .kernel_cc = LLVMPTXKernelCallConv, .grid = true,
    .block_id = "llvm.nvvm.read.ptx.sreg.ctaid.%c", .block_size = "llvm.nvvm.read.ptx.sreg.ntid.%c",
    .thread_id = "llvm.nvvm.read.ptx.sreg.tid.%c",
    /* ex2/lg2/sin.approx.f32: LLVM 19 has no libcall for llvm.exp2 and
     * aborts on llvm.sin there */
    .exp2 = "llvm.nvvm.ex2.approx.f", .log2 = "llvm.nvvm.lg2.approx.f", .sin = "llvm.nvvm.sin.approx.f",
    .overloaded = false, .libm_float64 = false,
  },
  [TARGET_AMDGPU] = {
    .global_space = 1, .local_space = 3, .kernel_cc = LLVMAMDGPUKERNELCallConv, .grid = true,
    .block_id = "llvm.amdgcn.workgroup.id.%c", .block_size = NULL, .thread_id = "llvm.amdgcn.workitem.id.%c",
    .exp2 = "llvm.exp2", .log2 = "llvm.log2", .sin = "llvm.sin", .overloaded = true, /* v_exp/v_log/v_sin */
    .libm_float64 = false, .code_object_version = 400, /* v4: what older HSA runtimes load */
  },
};
