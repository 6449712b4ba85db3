/* device.c — opening devices, the per-device program cache, buffers
 * (device.h). Which backends exist is the table below. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"

typedef struct Backend {
  const char *name;
  const DeviceOps *ops; /* NULL: known, but not in this build */
  unsigned index_bits;  /* 64 on the CPU (free, and adjacent lanes stay visible); 32 on GPUs (registers) */
} Backend;

static const Backend backends[] = {
  {"CPU", &cpu_device_ops, 64},
  {"CUDA", NULL, 32},
  {"AMD", NULL, 32},
};

Device *device_open(Ctx *ctx, const char *name, const char **error) {
  const char *want = name ? name : "CPU";
  for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
    if (strcmp(backends[i].name, want) != 0) continue;
    if (!backends[i].ops) return *error = "device is not supported by this build yet (CPU is)", NULL;
    Device *d = calloc(1, sizeof *d);
    if (!d) return *error = "out of memory", NULL;
    d->name = backends[i].name, d->ops = backends[i].ops, d->index_bits = backends[i].index_bits, d->ctx = ctx;
    d->vector_bytes = d->ops->vector_bytes ? d->ops->vector_bytes(d) : 16;
    return d;
  }
  return *error = "unknown device (known: CPU, CUDA, AMD)", NULL;
}

void device_close(Device *d) {
  if (!d) return;
  for (size_t i = 0; i < d->ncache; i++) d->ops->program_free(d, d->cache[i].program);
  free(d->cache);
  free(d);
}

void *device_program(Device *d, const UOp *kernel, const char *name) {
  for (size_t i = 0; i < d->ncache; i++)
    if (d->cache[i].kernel == kernel) return d->cache[i].program;
  if (d->ncache == d->cap_cache) {
    size_t cap = d->cap_cache ? 2 * d->cap_cache : 16;
    CachedProgram *c = realloc(d->cache, cap * sizeof *c);
    if (!c) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
    d->cache = c, d->cap_cache = cap;
  }
  void *p = d->ops->compile(d, kernel, name);
  if (p) d->cache[d->ncache++] = (CachedProgram){kernel, p};
  return p;
}

RtBuffer *rt_buffer_new(Device *d, size_t bytes) {
  RtBuffer *b = calloc(1, sizeof *b);
  void *mem = b ? d->ops->alloc(d, bytes) : NULL;
  if (!mem) {
    free(b);
    ctx_set_error(d->ctx, "%s: cannot allocate a buffer of %zu bytes", d->name, bytes);
    return NULL;
  }
  *b = (RtBuffer){d, mem, bytes, 1};
  return b;
}

RtBuffer *rt_buffer_ref(RtBuffer *b) {
  if (b) b->refs++;
  return b;
}

void rt_buffer_unref(RtBuffer *b) {
  if (!b || --b->refs > 0) return;
  b->device->ops->free(b->device, b->mem);
  free(b);
}
