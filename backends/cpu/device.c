/* device.c — the CPU as a device (runtime/device.h): memory from the C
 * heap, 64-byte aligned; kernels through the ORC JIT (uj_compile/uj_run);
 * launches run to completion, so synchronising does nothing. */
#include <stdlib.h>
#include <string.h>

#include "llvm/target.h"
#include "runtime/device.h"

enum { CPU_ALIGN = 64 };

static void *cpu_alloc(Device *d, size_t bytes) {
  (void)d;
  size_t n = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
  return aligned_alloc(CPU_ALIGN, n ? n : CPU_ALIGN);
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

static unsigned cpu_vector_bytes(Device *d) {
  Target t;
  return target_init(d->ctx, TARGET_CPU, NULL, &t) ? t.vector_bytes : 16;
}

static void *cpu_compile(Device *d, const UOp *kernel, const char *name) {
  return uj_compile(d->ctx, kernel, name);
}

static bool cpu_launch(Device *d, void *program, void *const *buffers, size_t n) {
  (void)d;
  return uj_run(program, buffers, n, NULL, 0) == UJ_OK;
}

static void cpu_program_free(Device *d, void *program) {
  (void)d;
  uj_program_free(program);
}

static bool cpu_synchronize(Device *d) {
  (void)d;
  return true;
}

const DeviceOps cpu_device_ops = {
  .alloc = cpu_alloc,
  .free = cpu_free,
  .copy_in = cpu_copy,
  .copy_out = cpu_copy,
  .vector_bytes = cpu_vector_bytes,
  .compile = cpu_compile,
  .launch = cpu_launch,
  .program_free = cpu_program_free,
  .synchronize = cpu_synchronize,
};
