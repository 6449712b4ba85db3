/* amd_device.h — the AMD device's state, shared by its files: device.c
 * (opening: agents, memory pools, the queue; memory and copies) and
 * program.c (code objects, kernargs, AQL dispatch, completion); what a
 * launch writes is dispatch.h's. */
#ifndef UJ_AMD_DEVICE_H
#define UJ_AMD_DEVICE_H

#include <llvm-c/TargetMachine.h>

#include "amd/dispatch.h"
#include "llvm/target.h"
#include "runtime/device.h"

/* Kernargs live in one block of the kernarg pool, handed out in order
 * and taken back at each synchronize; copies through one block of
 * fine-grained host memory. */
enum { AMD_KERNARG_BYTES = 1 << 20, AMD_STAGE_BYTES = 8 << 20, AMD_QUEUE_PACKETS = 4096 };

typedef struct AmdDevice {
  HsaApi api;
  bool initialized;  /* hsa_init succeeded: hsa_shut_down at close */
  HsaAgent gpu, cpu; /* the GPU asked for; the host's agent (its pools) */
  HsaPool device_pool, kernarg_pool, host_pool; /* coarse-grained on the GPU; the host's kernarg and fine-grained */
  HsaQueue *queue;
  HsaSignal done;   /* one more than 0 for each dispatch in flight */
  bool have_done;
  char arch[64];    /* the agent's name: "gfx942" (HSA_AGENT_INFO_NAME is 64 bytes) */
  unsigned wavefront, max_workgroup, compute_units;
  size_t memory;
  TargetDesc desc;
  Target target;            /* the LLVM target of its arch */
  LLVMTargetMachineRef tm;  /* made once, at the open */
  void *kernargs;   /* AMD_KERNARG_BYTES from kernarg_pool */
  size_t kernarg_used;
  void *stage;      /* AMD_STAGE_BYTES from host_pool */
} AmdDevice;

/* False with the context's error "AMD: what: <the runtime's text>"
 * unless s is HSA_OK. */
bool amd_ok(Device *d, hsa_status s, const char *what);

void *amd_compile(Device *d, const UOp *kernel, const char *name);
const KernelSig *amd_signature(Device *d, void *program);
bool amd_launch(Device *d, void *program, const LaunchArgs *a);
void amd_program_free(Device *d, void *program);
bool amd_synchronize(Device *d, DeviceQueue *queue);

#endif
