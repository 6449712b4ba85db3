/* target.h — what a kernel is shaped for, as data (docs/opt.md, "Targets").
 *
 * In: a target's name ("sm_90", "gfx942", "cpu-avx512") or the host CPU's
 * vector width. Out: its description: kind, cores, vector width, caches,
 * and for GPUs the warp, thread, block, grid, shared-memory and register
 * limits and its tensor-core shapes (none yet). The optimizer's pass list
 * and its size budgets read these fields, never a target's name. Rows are
 * constants: the CPU rows hold the budgets the CPU passes were tuned with
 * (docs/opt.md), the GPU rows the vendors' published limits. */
#ifndef UJ_OPT_TARGET_H
#define UJ_OPT_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "uop/uop.h"

typedef enum TargetDescKind { TARGET_DESC_CPU, TARGET_DESC_GPU } TargetDescKind;

/* A matrix instruction: D (m x n, acc) += A (m x k, in) B (k x n, in). */
typedef struct TensorCoreShape {
  unsigned m, n, k;
  uj_scalar in, acc;
} TensorCoreShape;

typedef struct TargetDesc {
  const char *name;
  TargetDescKind kind;
  unsigned cores;        /* CPU: threads (0: the pool's count, UJ_THREADS); GPU: SMs / CUs */
  unsigned vector_bytes; /* the widest vector register a thread has */
  unsigned index_bits;   /* the narrowest index kernels use: 64 CPU, 32 GPU */
  size_t l1_bytes;       /* per core (SM / CU) */
  size_t l2_bytes;       /* CPU: the row-tile budget (a core's share of L2/L3); GPU: the chip's L2 */
  size_t stack_bytes;    /* memory of a thread's own: CPU kernel stack; GPU local/scratch per thread */
  unsigned warp;         /* threads in lockstep (0: CPU) */
  unsigned max_threads;  /* per workgroup */
  unsigned max_block[3]; /* per axis */
  uint32_t max_grid[3];  /* workgroups per axis */
  size_t shared_bytes;   /* workgroup-shared memory (`local` ALLOCs) per workgroup */
  unsigned regs;         /* 32-bit registers per thread */
  const TensorCoreShape *tensor_cores;
  size_t ntensor_cores;
  bool reassociate; /* the optimizer may regroup float reductions (docs/semantics.md "Reassociation") */
  /* long float sums in two stages (schedule_split_sums): a sum over
   * trailing axes of sum_split_min elements or more, a multiple of
   * sum_chunks * sum_chunk_step, as sum_chunks contiguous chunks summed in
   * a kernel of their own, then their partials; sum_chunks 0: never */
  unsigned sum_chunks, sum_chunk_step;
  int64_t sum_split_min;
} TargetDesc;

/* The host CPU's row for a vector width (16, 32 or 64 bytes; another
 * width: the row of the widest one below it, at least 16). */
const TargetDesc *target_desc_cpu(unsigned vector_bytes);
/* A row by name ("cpu-sse", "cpu-avx2", "cpu-avx512", "sm_80", "sm_89",
 * "sm_90", "gfx90a", "gfx942", "gfx1100"), or NULL. */
const TargetDesc *target_desc_find(const char *name);
/* The row a GPU arch's kernels are shaped for: its own ("sm_80",
 * "gfx90a"; "sm_90a" takes sm_90's), else sm_90's for another sm_* and
 * gfx942's for another gfx*; NULL for anything else. */
const TargetDesc *target_desc_for_arch(const char *arch);
/* The most bytes a kernel's staged panel (a tile's, tile.c; reorder.c's
 * block) may take: half a CPU thread's stack, or a GPU workgroup's
 * shared memory. */
size_t target_panel_bytes(const TargetDesc *t);

#endif
