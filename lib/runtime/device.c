/* device.c — opening devices, the per-device program cache, buffers and
 * the pool of their freed memory (device.h). Which backends exist is the
 * table below. */
#define _DEFAULT_SOURCE /* sysconf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/device.h"
#include "uop/asan.h" /* pooled host memory is poisoned: a buffer used after its last reference went is reported */

enum { POOL_MAX_BYTES = 1 << 30 };

typedef struct Backend {
  const char *name;
  const DeviceOps *ops;
  const char *absent;    /* how a failed open begins: "no CUDA device" */
  bool numbered;         /* takes "NAME:N" */
} Backend;

static const Backend backends[] = {
  {"CPU", &cpu_device_ops, NULL, false},
  {"EVAL", &eval_device_ops, NULL, false},
  {"CUDA", &cuda_device_ops, "no CUDA device", true},
  {"AMD", &amd_device_ops, "no AMD GPU", true},
};

#define KNOWN_DEVICES "CPU, EVAL, CUDA, CUDA:N, AMD, AMD:N"
const char device_known[] = KNOWN_DEVICES;

/* The reason of this thread's last failed open: device_open has no
 * context to keep it in (its caller frees the context on failure), so
 * the text is the thread's own, as dlerror's is. */
static _Thread_local char open_failure[512];

static const Backend *backend_named(const char *want, int *ordinal, bool *bad_number) {
  *ordinal = 0, *bad_number = false;
  for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
    size_t n = strlen(backends[i].name);
    if (strncmp(backends[i].name, want, n) != 0) continue;
    if (want[n] == 0) return &backends[i];
    if (want[n] != ':') continue;
    char *end = NULL;
    long k = strtol(want + n + 1, &end, 10);
    *bad_number = !backends[i].numbered || end == want + n + 1 || *end || k < 0 || k > 255;
    *ordinal = (int)k;
    return &backends[i];
  }
  return NULL;
}

Device *device_open(Ctx *ctx, const char *name, const char **error) {
  const char *env = getenv("UJ_DEVICE");
  bool from_env = !name && env && *env;
  const char *want = name ? name : from_env ? env : "CPU";
  int ordinal;
  bool bad_number;
  const Backend *b = backend_named(want, &ordinal, &bad_number);
  if (!b) {
    *error = from_env ? "UJ_DEVICE names an unknown device (known: " KNOWN_DEVICES ")"
                      : "unknown device (known: " KNOWN_DEVICES ")";
    return NULL;
  }
  if (bad_number) {
    snprintf(open_failure, sizeof open_failure, "device '%s': %s", want,
             b->numbered ? "the number after ':' is not one from 0 to 255" : "this device takes no number");
    return *error = open_failure, NULL;
  }
  Device *d = calloc(1, sizeof *d);
  if (!d) return *error = "out of memory", NULL;
  snprintf(d->name, sizeof d->name, "%s", want);
  d->ops = b->ops, d->ctx = ctx, d->compiled = nodemap_make(ctx);
  char why[sizeof open_failure - 64] = "";
  if (d->ops->open && !d->ops->open(d, ordinal, why, sizeof why)) {
    snprintf(open_failure, sizeof open_failure, "%s: %s", b->absent ? b->absent : d->name, why);
    nodemap_free(&d->compiled);
    free(d);
    return *error = open_failure, NULL;
  }
  d->desc = d->ops->target(d);
  size_t memory = d->ops->memory_bytes ? d->ops->memory_bytes(d) : 0;
  d->pool.limit = memory ? memory / 8 : POOL_MAX_BYTES; /* a GPU's own memory: an eighth of it */
  if (d->ops->host_memory && d->pool.limit > POOL_MAX_BYTES) d->pool.limit = POOL_MAX_BYTES; /* the host's is shared */
  return d;
}

size_t device_host_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

void device_close(Device *d) {
  if (!d) return;
  device_pool_drain(d);
  for (size_t i = 0; i < d->ncache; i++)
    if (d->cache[i].program) d->ops->program_free(d, d->cache[i].program);
  if (d->ops->close) d->ops->close(d);
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
