/* jit.h — the CPU backend: one ORC LLJIT per context, compiled kernels
 * (uj_program) cached by kernel and target, and the runtime functions the
 * JIT's code may call (runtime.c).
 *
 * In: kernels of the context. Out: callable programs; each compile of an
 * equal kernel returns the cached program with one more reference; the last
 * uj_program_free removes its code from the JIT (a resource tracker), so
 * compile/free cycles do not grow the process. Machine code is an object
 * file, emitted here and linked by ORC, so that the disk cache can keep it
 * and a later process link it without compiling. */
#ifndef UJ_CPU_JIT_H
#define UJ_CPU_JIT_H

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "llvm/signature.h"
#include "uop/uop.h"

/* A program's parameters, variables and grid. */
const KernelSig *cpu_program_sig(const uj_program *p);
/* Its code came from the disk cache (runtime/disk_cache.h), not LLVM. */
bool cpu_program_loaded(const uj_program *p);

/* Defines the runtime symbols (bfloat16 rounding, which libgcc 12 lacks)
 * in the JIT's main dylib. */
bool cpu_runtime_define(Ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef dylib);

#endif
