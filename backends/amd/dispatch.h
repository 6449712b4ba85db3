/* dispatch.h — what an AMD launch writes (program.c), without LLVM's
 * headers so the tests see it: a program's facts from its code object,
 * its kernel arguments as the AMDGPU ABI lays them out, and the AQL
 * kernel-dispatch packet. */
#ifndef UJ_AMD_DISPATCH_H
#define UJ_AMD_DISPATCH_H

#include "amd/api.h"
#include "runtime/device.h"

typedef struct AmdProgram {
  HsaExecutable exec;
  bool have_exec;
  uint64_t kernel_object;
  uint32_t kernarg_bytes, group_bytes, private_bytes;
  KernelSig sig;
  char name[48];
} AmdProgram;

/* The explicit kernel arguments of sig as the AMDGPU ABI lays them out
 * (each aligned to its size: pointers 8 bytes, then the variables at
 * their width), written into out when it is not NULL; their size. The
 * hidden arguments the code object asks for follow, zeroed (v4: the
 * kernels read the block size from the dispatch packet). */
size_t amd_kernargs(const KernelSig *sig, const LaunchArgs *a, unsigned char *out);
/* The AQL packet of a launch: sizes in work-items, the barrier bit (in
 * order after the one before), system-scope fences; the header last. */
void amd_packet_fill(HsaDispatchPacket *p, const AmdProgram *prog, const LaunchArgs *a, void *kernargs,
                     HsaSignal done);

#endif
