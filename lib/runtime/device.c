/* device.c — opening devices, the per-device program cache, buffers and
 * the pool of their freed memory (device.h). Which backends exist is the
 * table below. */
#define _DEFAULT_SOURCE /* sysconf */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/device.h"
#include "uop/asan.h" /* pooled host memory is poisoned: a buffer used after its last reference went is reported */

enum { POOL_MAX_BYTES = 1 << 30 };

typedef struct Backend {
  const char *name;
  const DeviceOps *ops; /* NULL: known, but not in this build */
} Backend;

static const Backend backends[] = {
  {"CPU", &cpu_device_ops},
  {"EVAL", &eval_device_ops},
  {"CUDA", NULL},
  {"AMD", NULL},
};

Device *device_open(Ctx *ctx, const char *name, const char **error) {
  const char *env = getenv("UJ_DEVICE");
  bool from_env = !name && env && *env;
  const char *want = name ? name : from_env ? env : "CPU";
  for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
    if (strcmp(backends[i].name, want) != 0) continue;
    if (!backends[i].ops) return *error = "device is not supported by this build yet (CPU is)", NULL;
    Device *d = calloc(1, sizeof *d);
    if (!d) return *error = "out of memory", NULL;
    d->name = backends[i].name, d->ops = backends[i].ops, d->ctx = ctx, d->compiled = nodemap_make(ctx);
    d->desc = d->ops->target(d);
    size_t memory = d->ops->memory_bytes ? d->ops->memory_bytes(d) : 0;
    d->pool.limit = memory && memory / 8 < POOL_MAX_BYTES ? memory / 8 : POOL_MAX_BYTES;
    return d;
  }
  *error = from_env ? "UJ_DEVICE names an unknown device (known: CPU, EVAL, CUDA, AMD)"
                    : "unknown device (known: CPU, EVAL, CUDA, AMD)";
  return NULL;
}

size_t device_host_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

void device_close(Device *d) {
  if (!d) return;
  if (d->ops->close) d->ops->close(d);
  device_pool_drain(d);
  for (size_t i = 0; i < d->ncache; i++)
    if (d->cache[i].program) d->ops->program_free(d, d->cache[i].program);
  free(d->cache);
  nodemap_free(&d->compiled);
  free(d);
}

void *device_program(Device *d, const UOp *kernel, const char *name) {
  uint32_t k = nodemap_find(&d->compiled, kernel);
  if (k != NODEMAP_NONE && d->cache[k].program) return d->cache[k].program;
  if (k == NODEMAP_NONE && d->ncache == d->cap_cache) {
    size_t cap = d->cap_cache ? 2 * d->cap_cache : 16;
    CachedProgram *c = realloc(d->cache, cap * sizeof *c);
    if (!c) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
    d->cache = c, d->cap_cache = cap;
  }
  if (k == NODEMAP_NONE) { /* numbers are given in order: k is the next slot */
    if ((k = nodemap_add(&d->compiled, kernel)) == NODEMAP_NONE) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
    d->cache[d->ncache++] = (CachedProgram){kernel, NULL};
  }
  return d->cache[k].program = d->ops->compile(d, kernel, name);
}

void device_roots(const Device *d, RootSet *r) {
  for (size_t i = 0; i < d->ncache; i++) rootset_add(r, d->cache[i].kernel);
}

void device_renumbered(Device *d) {
  nodemap_free(&d->compiled);
  bool ok = nodemap_reserve(&d->compiled, d->ncache);
  for (size_t i = 0; ok && i < d->ncache; i++) /* numbered in order: kernel i gets i */
    ok = nodemap_add(&d->compiled, d->cache[i].kernel) == i;
  if (ok) return;
  for (size_t i = 0; i < d->ncache; i++)
    if (d->cache[i].program) d->ops->program_free(d, d->cache[i].program);
  nodemap_free(&d->compiled);
  d->ncache = 0;
}

/* ---- the pool ---- */

static size_t size_class(size_t bytes) {
  size_t grains = bytes ? (bytes + RT_POOL_GRAIN - 1) / RT_POOL_GRAIN : 1;
  return grains * RT_POOL_GRAIN;
}

static void pool_remove(Device *d, size_t i, bool free_it) {
  BufferPool *p = &d->pool;
  PooledBlock blk = p->blocks[i];
  memmove(&p->blocks[i], &p->blocks[i + 1], (p->n - i - 1) * sizeof *p->blocks);
  p->n--, p->bytes -= blk.bytes;
  if (d->ops->host_memory) ASAN_UNPOISON_MEMORY_REGION(blk.mem, blk.bytes);
  if (free_it) d->ops->free(d, blk.mem);
}

/* A block of class bytes from the pool, newest first; NULL when none. */
static void *pool_take(Device *d, size_t bytes) {
  for (size_t i = d->pool.n; i-- > 0;) {
    void *mem = d->pool.blocks[i].mem;
    if (d->pool.blocks[i].bytes != bytes) continue;
    pool_remove(d, i, false);
    return mem;
  }
  return NULL;
}

static void pool_put(Device *d, void *mem, size_t bytes) {
  BufferPool *p = &d->pool;
  if (bytes > p->limit) {
    d->ops->free(d, mem);
    return;
  }
  while (p->n && (p->n == RT_POOL_BLOCKS || p->bytes + bytes > p->limit)) pool_remove(d, 0, true);
  if (d->ops->host_memory) ASAN_POISON_MEMORY_REGION(mem, bytes);
  p->blocks[p->n++] = (PooledBlock){mem, bytes};
  p->bytes += bytes;
}

void device_pool_drain(Device *d) {
  while (d->pool.n) pool_remove(d, d->pool.n - 1, true);
}

/* ---- buffers ---- */

RtBuffer *rt_buffer_new(Device *d, size_t bytes) {
  RtBuffer *b = calloc(1, sizeof *b);
  size_t cls = size_class(bytes);
  void *mem = b ? pool_take(d, cls) : NULL;
  if (b && !mem) mem = d->ops->alloc(d, cls);
  if (b && !mem && d->pool.n) { /* what the pool holds may be what is missing */
    device_pool_drain(d);
    mem = d->ops->alloc(d, cls);
  }
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
  pool_put(b->device, b->mem, size_class(b->bytes));
  free(b);
}
