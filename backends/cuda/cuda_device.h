/* cuda_device.h — the CUDA device's state, shared by its files: device.c
 * (opening, memory, the target), copy.c (copies through pinned staging),
 * program.c (PTX, modules, launches, timings). */
#ifndef UJ_CUDA_DEVICE_H
#define UJ_CUDA_DEVICE_H

#include <llvm-c/TargetMachine.h>

#include "cuda/api.h"
#include "llvm/target.h"
#include "runtime/device.h"

/* Copies of STAGE_MIN bytes or more go through two pinned buffers of
 * STAGE_BYTES, so the DMA of one overlaps the host's memcpy of the other
 * (a pageable copy is staged by the driver in small pieces, one at a
 * time). */
enum { CUDA_STAGE_MIN = 1 << 20, CUDA_STAGE_BYTES = 8 << 20 };

/* A launch timed under UJ_DEBUG: its events, read at the synchronize. */
typedef struct CudaTiming {
  const char *name; /* the program's */
  CUevent start, end;
} CudaTiming;

typedef struct CudaDevice {
  CudaApi api;
  CUdevice dev;
  CUcontext context; /* the device's primary context */
  CUstream stream;   /* every copy and launch, in order */
  int cc_major, cc_minor;
  size_t memory;
  char model[128];
  TargetDesc desc;    /* its arch's row with this device's own limits */
  char desc_name[16]; /* "sm_90" */
  Target target;      /* the LLVM target: this compute capability's arch */
  LLVMTargetMachineRef tm;
  void *stage[2];      /* pinned, CUDA_STAGE_BYTES each; NULL until a large copy */
  CUevent stage_done[2]; /* the last DMA through stage[k] */
  CudaTiming *timings; /* UJ_DEBUG >= 1 */
  size_t ntimings, cap_timings;
} CudaDevice;

typedef struct CudaProgram {
  CUmodule module;
  CUfunction fn;
  KernelSig sig;
  char name[48];
  bool loaded; /* its PTX came from the disk cache */
} CudaProgram;

/* False with the context's error "CUDA: what: <the driver's error>"
 * unless e is CUDA_OK. */
bool cuda_ok(Device *d, CUresult e, const char *what);
/* The device's context made current in the calling thread. */
bool cuda_enter(Device *d);

bool cuda_copy_in(Device *d, void *dst, const void *host, size_t bytes);
bool cuda_copy_out(Device *d, void *host, const void *src, size_t bytes);
void cuda_stage_free(CudaDevice *c);

void *cuda_compile(Device *d, const UOp *kernel, const char *name);
const KernelSig *cuda_signature(Device *d, void *program);
bool cuda_launch(Device *d, void *program, const LaunchArgs *a);
void cuda_program_free(Device *d, void *program);
bool cuda_synchronize(Device *d, DeviceQueue *queue);
/* Destroys the events of timings not yet read. */
void cuda_timings_free(CudaDevice *c);

#endif
