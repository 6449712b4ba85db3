/* fake_hsa.c — an HSA runtime without a GPU, for test_amd: the calls
 * backends/amd makes, over host memory, so the runtime's side of each
 * (agents, pools, the queue, signals, code objects, kernargs, AQL
 * packets, copies) is checked where no AMD GPU is.
 *
 * In: the calls; FAKE_HSA in the environment: "noinit" (hsa_init fails
 * as without /dev/kfd), "nogpu" (a host agent only); FAKE_HSA_ARCH the
 * GPU's name (default gfx942). Out: the runtime's answers. Memory is host
 * memory; a code object must be an AMDGPU ELF for the agent's arch whose
 * symbol `name.kd` exists; its kernarg, group and private segment sizes
 * are read from its metadata note (msgpack). Kernels do not run; each
 * packet rung on the doorbell is checked (a dispatch with the barrier
 * bit, sizes in work-items that are whole workgroups, a loaded kernel
 * object, kernargs inside the kernarg block, every pointer-like word of
 * them a live allocation) and its completion signal decremented.
 * fake_hsa_stats() tells the test what happened. Its functions are
 * exported under the runtime's own names (the runtime's dlsym finds
 * them); the rest is hidden. */
#define _GNU_SOURCE /* memmem */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amd/api.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct FakeStats {
  long live_allocs, live_queues, live_signals, live_execs, live_readers, dispatches, bad, copies, inits;
  uint32_t last_kernarg_bytes;
  char last_error[256];
} FakeStats;

typedef struct Block {
  char *base;
  size_t bytes;
  uint64_t pool;
} Block;

typedef struct Exec {
  char *code;
  size_t len;
  bool loaded, frozen, live;
} Exec;

enum { MAX_BLOCKS = 4096, MAX_SIGNALS = 64, MAX_EXECS = 1024, POOL_GPU = 10, POOL_HOST = 11 };
static Block blocks[MAX_BLOCKS];
static size_t nblocks;
static int64_t signals[MAX_SIGNALS];
static bool signal_live[MAX_SIGNALS];
static Exec execs[MAX_EXECS];
static size_t nexecs;
static FakeStats stats;

EXPORT const FakeStats *fake_hsa_stats(void) { return &stats; }

static bool mode(const char *m) {
  const char *v = getenv("FAKE_HSA");
  return v && !strcmp(v, m);
}

static const char *arch(void) {
  const char *v = getenv("FAKE_HSA_ARCH");
  return v && *v ? v : "gfx942";
}

static void bad(const char *what, long v) {
  snprintf(stats.last_error, sizeof stats.last_error, "%s (%ld)", what, v);
  stats.bad++;
}

static long block_of(const void *p, size_t n) {
  for (size_t i = 0; i < nblocks; i++)
    if ((const char *)p >= blocks[i].base && (const char *)p + n <= blocks[i].base + blocks[i].bytes) return (long)i;
  return -1;
}

EXPORT hsa_status hsa_init(void) {
  if (mode("noinit")) return HSA_OUT_OF_RESOURCES;
  stats.inits++;
  return HSA_OK;
}
EXPORT hsa_status hsa_shut_down(void) {
  if (--stats.inits == 0) /* the code objects kept for their symbols */
    for (size_t i = 0; i < nexecs; i++) free(execs[i].code), execs[i] = (Exec){0};
  if (stats.inits == 0) nexecs = 0;
  return HSA_OK;
}
EXPORT hsa_status hsa_status_string(hsa_status s, const char **text) {
  *text = s == HSA_OUT_OF_RESOURCES ? "HSA_STATUS_ERROR_OUT_OF_RESOURCES: fake" : "HSA_STATUS_ERROR: fake";
  return HSA_OK;
}
EXPORT hsa_status hsa_iterate_agents(HsaAgentVisit visit, void *data) {
  hsa_status s = visit((HsaAgent){1}, data);
  if (s == HSA_OK && !mode("nogpu")) s = visit((HsaAgent){2}, data);
  return s == HSA_BREAK ? HSA_OK : s;
}
EXPORT hsa_status hsa_agent_get_info(HsaAgent agent, int attribute, void *value) {
  bool gpu = agent.handle == 2;
  switch (attribute) {
  case HSA_AGENT_DEVICE: *(int *)value = gpu ? HSA_DEVICE_GPU : 0; break;
  case HSA_AGENT_NAME: snprintf(value, 64, "%s", gpu ? arch() : "Fake CPU"); break;
  case HSA_AGENT_WAVEFRONT: *(uint32_t *)value = strncmp(arch(), "gfx11", 5) == 0 ? 32 : 64; break;
  case HSA_AGENT_WORKGROUP_MAX: *(uint32_t *)value = 1024; break;
  case HSA_AGENT_QUEUE_MAX: *(uint32_t *)value = 128; break;
  case HSA_AGENT_CU_COUNT: *(uint32_t *)value = 7; break;
  default: return 0x1001;
  }
  return HSA_OK;
}
EXPORT hsa_status hsa_amd_agent_iterate_memory_pools(HsaAgent agent, HsaPoolVisit visit, void *data) {
  hsa_status s = visit((HsaPool){agent.handle == 2 ? POOL_GPU : POOL_HOST}, data);
  return s == HSA_BREAK ? HSA_OK : s;
}
EXPORT hsa_status hsa_amd_memory_pool_get_info(HsaPool pool, int attribute, void *value) {
  switch (attribute) {
  case HSA_POOL_SEGMENT: *(int *)value = HSA_SEGMENT_GLOBAL; break;
  case HSA_POOL_FLAGS: *(uint32_t *)value = pool.handle == POOL_GPU ? HSA_FLAG_COARSE : HSA_FLAG_KERNARG | HSA_FLAG_FINE; break;
  case HSA_POOL_ALLOC_ALLOWED: *(bool *)value = true; break;
  case HSA_POOL_SIZE: *(size_t *)value = (size_t)16 << 30; break;
  default: return 0x1001;
  }
  return HSA_OK;
}
EXPORT hsa_status hsa_amd_memory_pool_allocate(HsaPool pool, size_t bytes, uint32_t flags, void **ptr) {
  if (flags || !bytes || nblocks == MAX_BLOCKS || (pool.handle != POOL_GPU && pool.handle != POOL_HOST)) return 0x1001;
  char *m = calloc(1, bytes);
  if (!m) return 0x1008;
  blocks[nblocks++] = (Block){m, bytes, pool.handle};
  stats.live_allocs++;
  *ptr = m;
  return HSA_OK;
}
EXPORT hsa_status hsa_amd_memory_pool_free(void *ptr) {
  long i = block_of(ptr, 1);
  if (i < 0 || blocks[i].base != ptr) return 0x1001;
  free(blocks[i].base);
  blocks[i] = blocks[--nblocks];
  stats.live_allocs--;
  return HSA_OK;
}
EXPORT hsa_status hsa_amd_agents_allow_access(uint32_t n, const HsaAgent *agents, const uint32_t *flags, const void *ptr) {
  (void)flags;
  return n == 1 && agents[0].handle == 2 && block_of(ptr, 1) >= 0 ? HSA_OK : 0x1001;
}
EXPORT hsa_status hsa_memory_copy(void *dst, const void *src, size_t bytes) {
  long a = block_of(dst, bytes), b = block_of(src, bytes);
  if (a < 0 || b < 0 || blocks[a].pool == blocks[b].pool) return 0x1001; /* host <-> device, both allocated */
  memcpy(dst, src, bytes);
  stats.copies++;
  return HSA_OK;
}

static HsaQueue *queue_of_doorbell;
static uint64_t write_index, read_index;

EXPORT hsa_status hsa_queue_create(HsaAgent agent, uint32_t size, uint32_t type, void *cb, void *data, uint32_t priv,
                                   uint32_t group, HsaQueue **q) {
  (void)cb, (void)data, (void)priv, (void)group;
  if (agent.handle != 2 || type != HSA_QUEUE_SINGLE || size > 128 || (size & (size - 1)) || queue_of_doorbell) return 0x1001;
  HsaQueue *n = calloc(1, sizeof *n);
  n->base_address = calloc(size, sizeof(HsaDispatchPacket));
  n->size = size, n->doorbell_signal = (HsaSignal){0xd00b};
  for (uint32_t i = 0; i < size; i++) ((HsaDispatchPacket *)n->base_address)[i].header = HSA_PACKET_INVALID;
  queue_of_doorbell = *q = n;
  write_index = read_index = 0;
  stats.live_queues++;
  return HSA_OK;
}
EXPORT hsa_status hsa_queue_destroy(HsaQueue *q) {
  free(q->base_address), free(q);
  queue_of_doorbell = NULL;
  stats.live_queues--;
  return HSA_OK;
}
EXPORT uint64_t hsa_queue_add_write_index_screlease(const HsaQueue *q, uint64_t n) {
  (void)q;
  uint64_t at = write_index;
  write_index += n;
  return at;
}
EXPORT uint64_t hsa_queue_load_read_index_scacquire(const HsaQueue *q) { return (void)q, read_index; }

EXPORT hsa_status hsa_signal_create(int64_t initial, uint32_t n, const HsaAgent *consumers, HsaSignal *s) {
  (void)n, (void)consumers;
  for (int i = 0; i < MAX_SIGNALS; i++)
    if (!signal_live[i]) {
      signal_live[i] = true, signals[i] = initial, s->handle = 1000 + (uint64_t)i;
      stats.live_signals++;
      return HSA_OK;
    }
  return 0x1008;
}
static int64_t *signal_value(HsaSignal s) {
  uint64_t i = s.handle - 1000;
  return i < MAX_SIGNALS && signal_live[i] ? &signals[i] : NULL;
}
EXPORT hsa_status hsa_signal_destroy(HsaSignal s) {
  if (!signal_value(s)) return 0x1001;
  signal_live[s.handle - 1000] = false;
  stats.live_signals--;
  return HSA_OK;
}

/* The segment size stored under key in a code object's msgpack note. */
static uint32_t metadata_u32(const Exec *e, const char *key) {
  char want[64];
  size_t n = strlen(key);
  want[0] = (char)(0xa0 | n);
  memcpy(want + 1, key, n);
  const unsigned char *p = memmem(e->code, e->len, want, n + 1);
  if (!p) return UINT32_MAX;
  p += n + 1;
  if (*p < 0x80) return *p;
  if (*p == 0xcc) return p[1];
  if (*p == 0xcd) return (uint32_t)p[1] << 8 | p[2];
  if (*p == 0xce) return (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
  return UINT32_MAX;
}

static void check_packet(const HsaDispatchPacket *p) {
  stats.dispatches++;
  unsigned type = p->header & 0xff, barrier = p->header >> HSA_HEADER_BARRIER & 1, dims = p->setup & 3;
  if (type != HSA_PACKET_DISPATCH || !barrier || dims < 1 || dims > 3) bad("a packet that is no ordered dispatch", p->header);
  long threads = 1;
  for (int k = 0; k < 3; k++) {
    threads *= p->workgroup_size[k];
    if (!p->workgroup_size[k] || p->grid_size[k] % p->workgroup_size[k]) bad("grid not whole workgroups", k);
  }
  if (threads > 1024) bad("a workgroup over 1024", threads);
  uint64_t obj = p->kernel_object - 1;
  if (obj >= nexecs || !execs[obj].live || !execs[obj].frozen) {
    bad("no such kernel object", (long)p->kernel_object);
    return;
  }
  uint32_t kernarg = metadata_u32(&execs[obj], ".kernarg_segment_size");
  stats.last_kernarg_bytes = kernarg;
  long k = block_of(p->kernarg_address, kernarg);
  if (k < 0 || blocks[k].pool != POOL_HOST) bad("kernargs outside the kernarg block", k);
  for (uint32_t at = 0; k >= 0 && at + 8 <= kernarg; at += 8) {
    uint64_t w;
    memcpy(&w, (const char *)p->kernarg_address + at, sizeof w);
    if (w >= (1ull << 32) && block_of((void *)(uintptr_t)w, 1) < 0) bad("a kernarg word that is no allocation", at);
  }
  int64_t *done = signal_value(p->completion_signal);
  if (!done) bad("no completion signal", 0);
  else --*done;
}

EXPORT void hsa_signal_store_screlease(HsaSignal s, int64_t value) {
  if (s.handle == 0xd00b && queue_of_doorbell) { /* the doorbell: process up to value */
    HsaQueue *q = queue_of_doorbell;
    for (; read_index <= (uint64_t)value && read_index < write_index; read_index++) {
      HsaDispatchPacket *p = (HsaDispatchPacket *)q->base_address + read_index % q->size;
      check_packet(p);
      p->header = HSA_PACKET_INVALID;
    }
    return;
  }
  int64_t *v = signal_value(s);
  if (v) *v = value;
}
EXPORT void hsa_signal_add_screlease(HsaSignal s, int64_t value) {
  int64_t *v = signal_value(s);
  if (v) *v += value;
}
EXPORT int64_t hsa_signal_wait_scacquire(HsaSignal s, int condition, int64_t compare, uint64_t timeout, int state) {
  (void)timeout, (void)state;
  int64_t *v = signal_value(s);
  if (!v || condition != HSA_CONDITION_LT || *v >= compare) bad("a wait that would never end", v ? (long)*v : -1);
  return v ? *v : -1;
}

EXPORT hsa_status hsa_code_object_reader_create_from_memory(const void *code, size_t bytes, HsaReader *r) {
  const unsigned char *c = code;
  if (bytes < 64 || memcmp(c, "\177ELF", 4) || (c[18] | c[19] << 8) != 224 || nexecs == MAX_EXECS) return 0x1001;
  Exec *e = &execs[nexecs];
  e->code = malloc(bytes), e->len = bytes;
  memcpy(e->code, code, bytes);
  r->handle = ++nexecs; /* a reader is its code, kept in the exec slot it fills */
  stats.live_readers++;
  return HSA_OK;
}
EXPORT hsa_status hsa_code_object_reader_destroy(HsaReader r) { return (void)r, stats.live_readers--, HSA_OK; }
EXPORT hsa_status hsa_executable_create_alt(int profile, int rounding, const char *options, HsaExecutable *e) {
  (void)options;
  if (profile != HSA_PROFILE_FULL_ || rounding != HSA_ROUNDING_DEFAULT) return 0x1001;
  e->handle = 0; /* given its code at the load */
  stats.live_execs++;
  return HSA_OK;
}
EXPORT hsa_status hsa_executable_load_agent_code_object(HsaExecutable e, HsaAgent agent, HsaReader r, const char *o,
                                                        HsaHandle *loaded) {
  (void)e, (void)o, (void)loaded;
  Exec *x = &execs[r.handle - 1];
  char target[64];
  snprintf(target, sizeof target, "--%s", arch());
  if (agent.handle != 2 || !memmem(x->code, x->len, target, strlen(target))) return 0x100f; /* an ISA mismatch */
  x->loaded = x->live = true;
  return HSA_OK;
}
static Exec *last_loaded(void) { return nexecs ? &execs[nexecs - 1] : NULL; }
EXPORT hsa_status hsa_executable_freeze(HsaExecutable e, const char *o) {
  (void)e, (void)o;
  Exec *x = last_loaded();
  if (!x || !x->loaded) return 0x1001;
  x->frozen = true;
  return HSA_OK;
}
EXPORT hsa_status hsa_executable_destroy(HsaExecutable e) {
  (void)e;
  stats.live_execs--;
  return HSA_OK;
}
EXPORT hsa_status hsa_executable_get_symbol_by_name(HsaExecutable e, const char *name, const HsaAgent *agent, HsaSymbol *s) {
  (void)e;
  Exec *x = last_loaded();
  if (!x || !x->frozen || agent->handle != 2 || !memmem(x->code, x->len, name, strlen(name) + 1)) return 0x1001;
  s->handle = (uint64_t)(x - execs) + 1;
  return HSA_OK;
}
EXPORT hsa_status hsa_executable_symbol_get_info(HsaSymbol s, int attribute, void *value) {
  const Exec *x = &execs[s.handle - 1];
  switch (attribute) {
  case HSA_SYMBOL_KERNEL_OBJECT: *(uint64_t *)value = s.handle; return HSA_OK;
  case HSA_SYMBOL_KERNARG_SIZE: *(uint32_t *)value = metadata_u32(x, ".kernarg_segment_size"); break;
  case HSA_SYMBOL_GROUP_SIZE: *(uint32_t *)value = metadata_u32(x, ".group_segment_fixed_size"); break;
  case HSA_SYMBOL_PRIVATE_SIZE: *(uint32_t *)value = metadata_u32(x, ".private_segment_fixed_size"); break;
  default: return 0x1001;
  }
  return *(uint32_t *)value == UINT32_MAX ? 0x1001 : HSA_OK;
}

