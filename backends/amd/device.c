/* device.c — AMD GPUs as a device (runtime/device.h): "AMD", "AMD:N",
 * through the HSA runtime (api.h).
 *
 * In: a device number (the N-th GPU agent). Out: the device opened: its
 * agent, the GPU's coarse-grained memory pool for buffers, the host's
 * kernarg pool and fine-grained pool (kernargs, staging for copies), one
 * queue with a completion signal, and a TargetDesc of its arch's row with
 * the CU count, wavefront and workgroup size the runtime reports. A
 * missing runtime, hsa_init's failure (no /dev/kfd: no AMD GPU), no GPU
 * agent or an arch LLVM does not know fail the open with the reason. */
#define _DEFAULT_SOURCE /* access */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amd/amd_device.h"

bool amd_ok(Device *d, hsa_status s, const char *what) {
  if (s == HSA_OK) return true;
  char text[256];
  AmdDevice *a = d->state;
  ctx_set_error(d->ctx, "%s: %s: %s", d->name, what, hsa_error_text(&a->api, s, text, sizeof text));
  return false;
}

/* ---- opening ---- */

typedef struct AgentSearch {
  AmdDevice *a;
  int want, seen; /* the want-th GPU agent; GPU agents met */
  bool found, have_cpu;
} AgentSearch;

static hsa_status visit_agent(HsaAgent agent, void *data) {
  AgentSearch *s = data;
  int type = -1;
  if (s->a->api.hsa_agent_get_info(agent, HSA_AGENT_DEVICE, &type) != HSA_OK) return HSA_OK;
  if (type == 0 && !s->have_cpu) s->a->cpu = agent, s->have_cpu = true;
  if (type == HSA_DEVICE_GPU && s->seen++ == s->want) s->a->gpu = agent, s->found = true;
  return HSA_OK;
}

typedef struct PoolSearch {
  AmdDevice *a;
  uint32_t want;  /* a flag the pool must have */
  HsaPool *out;
  bool found;
} PoolSearch;

static hsa_status visit_pool(HsaPool pool, void *data) {
  PoolSearch *s = data;
  int segment = -1;
  uint32_t flags = 0;
  bool alloc = false;
  const HsaApi *api = &s->a->api;
  if (s->found || api->hsa_amd_memory_pool_get_info(pool, HSA_POOL_SEGMENT, &segment) != HSA_OK ||
      segment != HSA_SEGMENT_GLOBAL || api->hsa_amd_memory_pool_get_info(pool, HSA_POOL_FLAGS, &flags) != HSA_OK ||
      api->hsa_amd_memory_pool_get_info(pool, HSA_POOL_ALLOC_ALLOWED, &alloc) != HSA_OK || !alloc || !(flags & s->want))
    return HSA_OK;
  *s->out = pool, s->found = true;
  return HSA_OK;
}

static bool find_pool(AmdDevice *a, HsaAgent agent, uint32_t flag, HsaPool *out) {
  PoolSearch s = {a, flag, out, false};
  return a->api.hsa_amd_agent_iterate_memory_pools(agent, visit_pool, &s) == HSA_OK && s.found;
}

static bool step(AmdDevice *a, hsa_status s, const char *what, char *why, size_t size) {
  if (s == HSA_OK) return true;
  char text[256];
  snprintf(why, size, "%s: %s", what, hsa_error_text(&a->api, s, text, sizeof text));
  return false;
}

/* The agent's facts, its row and the LLVM target of its arch. */
static bool describe(Device *d, AmdDevice *a, char *why, size_t size) {
  uint32_t wave = 64, workgroup = 1024, cus = 0;
  a->api.hsa_agent_get_info(a->gpu, HSA_AGENT_WAVEFRONT, &wave);
  a->api.hsa_agent_get_info(a->gpu, HSA_AGENT_WORKGROUP_MAX, &workgroup);
  a->api.hsa_agent_get_info(a->gpu, HSA_AGENT_CU_COUNT, &cus);
  a->wavefront = wave, a->max_workgroup = workgroup, a->compute_units = cus;
  const TargetDesc *row = target_desc_for_arch(a->arch);
  if (!row || !target_init(d->ctx, TARGET_AMDGPU, a->arch, &a->target)) {
    snprintf(why, size, "its arch %s is not one uopjit compiles for (%s)", a->arch, uj_error(d->ctx));
    return false;
  }
  if (!(a->tm = target_machine_new(d->ctx, &a->target))) return snprintf(why, size, "%s", uj_error(d->ctx)), false;
  a->desc = *row;
  a->desc.name = a->arch;
  if (cus) a->desc.cores = cus;
  if (wave) a->desc.warp = wave;
  if (workgroup) a->desc.max_threads = workgroup;
  return true;
}

static bool amd_open(Device *d, int ordinal, char *why, size_t size) {
  AmdDevice *a = calloc(1, sizeof *a);
  if (!a) return snprintf(why, size, "out of memory"), false;
  d->state = a;
  AgentSearch s = {a, ordinal, 0, false, false};
  char name[64] = "";
  bool ok = hsa_api_open(&a->api, why, size) && step(a, a->api.hsa_init(), "hsa_init", why, size);
  if (a->api.library && !ok && access("/dev/kfd", F_OK) != 0) { /* the usual reason, said first */
    char text[256];
    snprintf(text, sizeof text, "%s", why);
    snprintf(why, size, "no /dev/kfd here (the amdgpu driver's); %s", text);
  }
  a->initialized = ok;
  ok = ok && step(a, a->api.hsa_iterate_agents(visit_agent, &s), "hsa_iterate_agents", why, size);
  if (ok && !s.found) ok = false, snprintf(why, size, "GPU %d asked for, %d present", ordinal, s.seen);
  if (ok && !s.have_cpu) ok = false, snprintf(why, size, "the runtime lists no host agent");
  ok = ok && step(a, a->api.hsa_agent_get_info(a->gpu, HSA_AGENT_NAME, name), "the agent's name", why, size);
  if (ok) snprintf(a->arch, sizeof a->arch, "%s", name);
  ok = ok && describe(d, a, why, size);
  if (ok && !(find_pool(a, a->gpu, HSA_FLAG_COARSE, &a->device_pool) && find_pool(a, a->cpu, HSA_FLAG_KERNARG, &a->kernarg_pool) &&
              find_pool(a, a->cpu, HSA_FLAG_FINE, &a->host_pool)))
    ok = false, snprintf(why, size, "%s has no coarse-grained pool, or the host no kernarg or fine-grained one", a->arch);
  if (ok) a->api.hsa_amd_memory_pool_get_info(a->device_pool, HSA_POOL_SIZE, &a->memory);
  uint32_t packets = AMD_QUEUE_PACKETS, max = 0;
  if (ok && a->api.hsa_agent_get_info(a->gpu, HSA_AGENT_QUEUE_MAX, &max) == HSA_OK && max && max < packets) packets = max;
  ok = ok && step(a, a->api.hsa_queue_create(a->gpu, packets, HSA_QUEUE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &a->queue),
                  "hsa_queue_create", why, size);
  ok = ok && step(a, a->api.hsa_signal_create(0, 0, NULL, &a->done), "hsa_signal_create", why, size);
  a->have_done = ok;
  ok = ok && step(a, a->api.hsa_amd_memory_pool_allocate(a->kernarg_pool, AMD_KERNARG_BYTES, 0, &a->kernargs), "kernarg memory", why, size);
  ok = ok && step(a, a->api.hsa_amd_agents_allow_access(1, &a->gpu, NULL, a->kernargs), "kernarg access", why, size);
  ok = ok && step(a, a->api.hsa_amd_memory_pool_allocate(a->host_pool, AMD_STAGE_BYTES, 0, &a->stage), "staging memory", why, size);
  ok = ok && step(a, a->api.hsa_amd_agents_allow_access(1, &a->gpu, NULL, a->stage), "staging access", why, size);
  if (!ok) d->ops->close(d);
  return ok;
}

static void amd_close(Device *d) {
  AmdDevice *a = d->state;
  if (!a) return;
  if (a->have_done) a->api.hsa_signal_wait_scacquire(a->done, HSA_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_BLOCKED);
  if (a->stage) a->api.hsa_amd_memory_pool_free(a->stage);
  if (a->kernargs) a->api.hsa_amd_memory_pool_free(a->kernargs);
  if (a->have_done) a->api.hsa_signal_destroy(a->done);
  if (a->queue) a->api.hsa_queue_destroy(a->queue);
  if (a->initialized) a->api.hsa_shut_down();
  if (a->tm) LLVMDisposeTargetMachine(a->tm);
  hsa_api_close(&a->api);
  free(a);
  d->state = NULL;
}

/* ---- memory ---- */

static void *amd_alloc(Device *d, size_t bytes) {
  AmdDevice *a = d->state;
  void *p = NULL;
  return a->api.hsa_amd_memory_pool_allocate(a->device_pool, bytes ? bytes : 1, 0, &p) == HSA_OK ? p : NULL;
}

static void amd_free(Device *d, void *mem) {
  AmdDevice *a = d->state;
  amd_synchronize(d, NULL); /* a dispatch in flight may use it */
  a->api.hsa_amd_memory_pool_free(mem);
}

/* Copies wait for the dispatches before them, then go through the
 * staging block in pieces. */
static bool amd_copy(Device *d, void *dst, const void *src, size_t bytes, bool in) {
  AmdDevice *a = d->state;
  if (!amd_synchronize(d, NULL)) return false;
  for (size_t off = 0; off < bytes; off += AMD_STAGE_BYTES) {
    size_t n = bytes - off < AMD_STAGE_BYTES ? bytes - off : AMD_STAGE_BYTES;
    if (in) memcpy(a->stage, (const char *)src + off, n);
    if (!amd_ok(d, a->api.hsa_memory_copy(in ? (char *)dst + off : a->stage, in ? a->stage : (const char *)src + off, n),
                in ? "copy to the device" : "copy from the device"))
      return false;
    if (!in) memcpy((char *)dst + off, a->stage, n);
  }
  return true;
}

static bool amd_copy_in(Device *d, void *dst, const void *host, size_t bytes) { return amd_copy(d, dst, host, bytes, true); }
static bool amd_copy_out(Device *d, void *host, const void *src, size_t bytes) { return amd_copy(d, host, src, bytes, false); }

static const TargetDesc *amd_target(Device *d) { return &((AmdDevice *)d->state)->desc; }

static void amd_describe(Device *d, char *buf, size_t size) {
  const AmdDevice *a = d->state;
  snprintf(buf, size, "%s %u CUs wave%u %zu MiB", a->arch, a->compute_units, a->wavefront, a->memory >> 20);
}

static size_t amd_memory_bytes(Device *d) { return ((AmdDevice *)d->state)->memory; }

const DeviceOps amd_device_ops = {
  .open = amd_open,
  .alloc = amd_alloc,
  .free = amd_free,
  .copy_in = amd_copy_in,
  .copy_out = amd_copy_out,
  .target = amd_target,
  .describe = amd_describe,
  .memory_bytes = amd_memory_bytes,
  .compile = amd_compile,
  .signature = amd_signature,
  .launch = amd_launch,
  .program_free = amd_program_free,
  .synchronize = amd_synchronize,
  .close = amd_close,
  .host_memory = false,
};
