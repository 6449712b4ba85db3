/* device.c — the CPU as a device (runtime/device.h): memory from the C
 * heap, 64-byte aligned (buffers of 4 MiB and more: 2 MiB aligned, in
 * transparent huge pages); kernels through the ORC JIT (uj_compile/uj_run);
 * launches run to completion, so synchronising does nothing. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu/jit.h"
#include "cpu/pool.h"
#include "llvm/pipeline.h"
#include "llvm/target.h"
#include "runtime/device.h"

/* Huge pages for big buffers: a kernel that walks a matrix by columns (a
 * GEMM's panel copy, a GEMV) touches one 4 KiB page per row and misses
 * the TLB on each; with 2 MiB pages it does not (a 2048^3 sgemm on one
 * thread: 215 -> 161 ms; docs/compile.md). */
enum { CPU_ALIGN = 64, CPU_HUGE_PAGE = 2 << 20, CPU_HUGE_MIN = 4 << 20 };

static void *cpu_alloc(Device *d, size_t bytes) {
  (void)d;
  size_t n = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
  if (n < CPU_HUGE_MIN) return aligned_alloc(CPU_ALIGN, n ? n : CPU_ALIGN);
  n = (n + CPU_HUGE_PAGE - 1) / CPU_HUGE_PAGE * CPU_HUGE_PAGE;
  void *p = aligned_alloc(CPU_HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, n, MADV_HUGEPAGE); /* advice: where THP is off, plain pages */
#endif
  return p;
}

static void cpu_free(Device *d, void *mem) {
  (void)d;
  free(mem);
}

static bool cpu_copy(Device *d, void *dst, const void *src, size_t bytes) {
  (void)d;
  if (bytes) memcpy(dst, src, bytes);
  return true;
}

/* The host's row: its vector width as the JIT's target reports it. */
static const TargetDesc *cpu_target(Device *d) {
  Target t;
  return target_desc_cpu(target_init(d->ctx, TARGET_CPU, NULL, &t) ? t.vector_bytes : 16);
}

static void cpu_describe(Device *d, char *buf, size_t size) {
  Target t;
  if (target_init(d->ctx, TARGET_CPU, NULL, &t)) snprintf(buf, size, "%s %s", t.cpu, t.features);
  else snprintf(buf, size, "%s", "");
}

static unsigned cpu_threads(Device *d) {
  (void)d;
  return pool_default_threads();
}

static size_t cpu_memory_bytes(Device *d) {
  (void)d;
  return device_host_memory_bytes();
}

static void *cpu_compile(Device *d, const UOp *kernel, const char *name) {
  return uj_compile(d->ctx, kernel, name);
}

static bool cpu_launch(Device *d, void *program, const LaunchArgs *a) {
  double t0 = d->timing ? pipeline_now_ms() : 0;
  bool ok = uj_run(program, a->buffers, a->n, a->vars, a->nvars) == UJ_OK;
  if (d->timing) d->kernel_ms += pipeline_now_ms() - t0;
  return ok;
}

static const KernelSig *cpu_signature(Device *d, void *program) {
  (void)d;
  return cpu_program_sig(program);
}

static void cpu_program_free(Device *d, void *program) {
  (void)d;
  uj_program_free(program);
}

static bool cpu_synchronize(Device *d, DeviceQueue *queue) {
  (void)d, (void)queue;
  return true;
}

const DeviceOps cpu_device_ops = {
  .alloc = cpu_alloc,
  .free = cpu_free,
  .copy_in = cpu_copy,
  .copy_out = cpu_copy,
  .target = cpu_target,
  .describe = cpu_describe,
  .threads = cpu_threads,
  .memory_bytes = cpu_memory_bytes,
  .compile = cpu_compile,
  .signature = cpu_signature,
  .launch = cpu_launch,
  .program_free = cpu_program_free,
  .synchronize = cpu_synchronize,
  .host_memory = true,
};
