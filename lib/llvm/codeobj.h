/* codeobj.h — an AMDGPU relocatable object linked into an HSA code object.
 *
 * In: the bytes of an ELF relocatable object for amdgcn-amd-amdhsa. Out: the
 * bytes of the shared-object code object that HSA loads (with its
 * NT_AMDGPU_METADATA note), linked by LLVM's ld.lld in a subprocess; the
 * temporary files are removed. Why ld.lld and not ROCm's comgr: Debian's
 * comgr (ROCm 5.2) knows no gfx11 or gfx94x; ld.lld of LLVM 19 links every
 * arch our AMDGPU target emits (docs/compile.md). */
#ifndef UJ_LLVM_CODEOBJ_H
#define UJ_LLVM_CODEOBJ_H

#include "uop/uop.h"

bool codeobj_link(Ctx *ctx, const char *obj, size_t n, char **out, size_t *len);

#endif
