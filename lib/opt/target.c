/* target.c — the rows of target.h.
 *
 * CPU: 32 KiB of L1 (stream.c keeps half of it in accumulators), a 2 MiB
 * row-tile budget (tile.c), 1 MiB of kernel stack (docs/semantics.md,
 * ALLOC): the values the CPU passes were measured with (docs/opt.md).
 * sm_90 (H100/H200, CUDA C Programming Guide, compute capability 9.0):
 * 132 SMs, warp 32, 1024 threads a block, 48 KiB of static shared memory
 * a block (227 KiB opt-in, not used yet), 255 registers a thread, 512 KiB
 * of local memory a thread, 256 KiB L1/shared per SM, 50 MiB L2. gfx942
 * (MI300X, CDNA3 ISA guide): 304 CUs, wavefront 64, 1024 work-items a
 * workgroup, 64 KiB of LDS, 512 VGPRs, 128 KiB of scratch a work-item,
 * 32 KiB L1 per CU, 4 MiB L2 per XCD. sm_80 (A100): 108 SMs, 164 KiB
 * shared opt-in, 40 MiB L2; sm_89 (Ada, the RTX 4090's 128 SMs, 72 MiB
 * L2); gfx90a (MI250X, one die: 110 CUs, wave64, 8 MiB L2); gfx1100
 * (RX 7900 XTX: 96 CUs, wave32, 6 MiB L2). A CUDA device's row is the
 * row of its arch with the sizes its driver reports (backends/cuda). */
#include <string.h>

#include "opt/target.h"

#define CPU_ROW(nm, width)                                                                          \
  {.name = nm, .kind = TARGET_DESC_CPU, .vector_bytes = width, .index_bits = 64, .l1_bytes = 32 << 10, \
   .l2_bytes = 2048 << 10, .stack_bytes = 1 << 20, .max_threads = 1, .max_block = {1, 1, 1},           \
   .max_grid = {UINT32_MAX, 1, 1}, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 16,      \
   .sum_split_min = 1 << 16}

static const TargetDesc rows[] = {
    CPU_ROW("cpu-sse", 16),
    CPU_ROW("cpu-avx2", 32),
    CPU_ROW("cpu-avx512", 64),
    {.name = "sm_90", .kind = TARGET_DESC_GPU, .cores = 132, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 256 << 10, .l2_bytes = 50 << 20, .stack_bytes = 512 << 10, .warp = 32, .max_threads = 1024,
     .max_block = {1024, 1024, 64}, .max_grid = {0x7fffffff, 65535, 65535}, .shared_bytes = 48 << 10,
     .regs = 255, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
    {.name = "sm_80", .kind = TARGET_DESC_GPU, .cores = 108, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 192 << 10, .l2_bytes = 40 << 20, .stack_bytes = 512 << 10, .warp = 32, .max_threads = 1024,
     .max_block = {1024, 1024, 64}, .max_grid = {0x7fffffff, 65535, 65535}, .shared_bytes = 48 << 10,
     .regs = 255, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
    {.name = "sm_89", .kind = TARGET_DESC_GPU, .cores = 128, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 128 << 10, .l2_bytes = 72 << 20, .stack_bytes = 512 << 10, .warp = 32, .max_threads = 1024,
     .max_block = {1024, 1024, 64}, .max_grid = {0x7fffffff, 65535, 65535}, .shared_bytes = 48 << 10,
     .regs = 255, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
    {.name = "gfx90a", .kind = TARGET_DESC_GPU, .cores = 110, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 16 << 10, .l2_bytes = 8 << 20, .stack_bytes = 128 << 10, .warp = 64, .max_threads = 1024,
     .max_block = {1024, 1024, 1024}, .max_grid = {0xffffffff, 65535, 65535}, .shared_bytes = 64 << 10,
     .regs = 512, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
    {.name = "gfx1100", .kind = TARGET_DESC_GPU, .cores = 96, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 32 << 10, .l2_bytes = 6 << 20, .stack_bytes = 128 << 10, .warp = 32, .max_threads = 1024,
     .max_block = {1024, 1024, 1024}, .max_grid = {0xffffffff, 65535, 65535}, .shared_bytes = 64 << 10,
     .regs = 256, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
    {.name = "gfx942", .kind = TARGET_DESC_GPU, .cores = 304, .vector_bytes = 16, .index_bits = 32,
     .l1_bytes = 32 << 10, .l2_bytes = 4 << 20, .stack_bytes = 128 << 10, .warp = 64, .max_threads = 1024,
     .max_block = {1024, 1024, 1024}, .max_grid = {0xffffffff, 65535, 65535}, .shared_bytes = 64 << 10,
     .regs = 512, .reassociate = true, .sum_chunks = 1024, .sum_chunk_step = 1, .sum_split_min = 1 << 16},
};

const TargetDesc *target_desc_cpu(unsigned vector_bytes) {
  return &rows[vector_bytes >= 64 ? 2 : vector_bytes >= 32 ? 1 : 0];
}

const TargetDesc *target_desc_find(const char *name) {
  for (size_t i = 0; name && i < sizeof rows / sizeof *rows; i++)
    if (strcmp(rows[i].name, name) == 0) return &rows[i];
  return NULL;
}

const TargetDesc *target_desc_for_arch(const char *arch) {
  size_t n = arch ? strlen(arch) : 0;
  bool sm = n > 3 && strncmp(arch, "sm_", 3) == 0, gfx = n > 3 && strncmp(arch, "gfx", 3) == 0;
  if (sm && arch[n - 1] == 'a') n--; /* sm_90a: sm_90's sizes */
  for (size_t i = 0; (sm || gfx) && i < sizeof rows / sizeof *rows; i++)
    if (strlen(rows[i].name) == n && strncmp(rows[i].name, arch, n) == 0) return &rows[i];
  return sm ? target_desc_find("sm_90") : gfx ? target_desc_find("gfx942") : NULL;
}

size_t target_panel_bytes(const TargetDesc *t) {
  return t->kind == TARGET_DESC_GPU ? t->shared_bytes : t->stack_bytes / 2;
}
