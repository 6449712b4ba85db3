/* program.c — kernels on an AMD GPU: an object file from the one
 * pipeline for the agent's arch, linked into a code object (ld.lld:
 * llvm/codeobj.h), loaded as an HSA executable (reader, load, freeze,
 * symbol `name.kd`); launches as AQL kernel-dispatch packets on the
 * device's queue with their kernargs, completion counted on one signal.
 *
 * In: a kernel and its name. Out: an AmdProgram (kernel object, kernarg,
 * group and private segment sizes from the symbol); launches that write
 * the explicit arguments as the AMDGPU ABI lays them out and zero the
 * hidden ones (amd_kernargs), and a synchronize that waits for the
 * signal to drop to 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "amd/amd_device.h"
#include "llvm/codeobj.h"
#include "llvm/pipeline.h"
#include "runtime/disk_cache.h"
#include "uop/alu.h"

/* The linked code object of kernel, malloc'd; NULL with the error set. */
static char *kernel_code_object(Device *d, AmdDevice *a, const UOp *kernel, AmdProgram *p, size_t *len) {
  LLVMContextRef lc = LLVMContextCreate();
  PipelineRequest req = {.target = &a->target, .tm = a->tm, .name = p->name, .optimize = true};
  LLVMModuleRef mod = pipeline_compile(d->ctx, kernel, lc, &req, &p->sig);
  char *obj = NULL, *code = NULL;
  size_t n = 0;
  if (mod && pipeline_emit(d->ctx, mod, a->tm, LLVMObjectFile, &obj, &n) && !codeobj_link(d->ctx, obj, n, &code, len))
    code = NULL;
  free(obj);
  if (mod) LLVMDisposeModule(mod);
  else p->sig = (KernelSig){0}; /* pipeline_compile freed it */
  LLVMContextDispose(lc);
  return code;
}

/* disk_cache_code's maker. */
static char *make_code_object(Device *d, const UOp *kernel, void *program, size_t *len) {
  return kernel_code_object(d, d->state, kernel, program, len);
}

static bool load_executable(Device *d, AmdDevice *a, AmdProgram *p, const char *code, size_t len) {
  HsaReader reader = {0};
  HsaSymbol sym;
  char symbol[64];
  snprintf(symbol, sizeof symbol, "%s.kd", p->name);
  if (!amd_ok(d, a->api.hsa_code_object_reader_create_from_memory(code, len, &reader), "cannot read the code object"))
    return false;
  bool ok = amd_ok(d, a->api.hsa_executable_create_alt(HSA_PROFILE_FULL_, HSA_ROUNDING_DEFAULT, NULL, &p->exec),
                   "cannot create an executable");
  p->have_exec = ok;
  ok = ok && amd_ok(d, a->api.hsa_executable_load_agent_code_object(p->exec, a->gpu, reader, NULL, NULL), "cannot load the code object");
  ok = ok && amd_ok(d, a->api.hsa_executable_freeze(p->exec, NULL), "cannot freeze the executable");
  ok = ok && amd_ok(d, a->api.hsa_executable_get_symbol_by_name(p->exec, symbol, &a->gpu, &sym), "no kernel symbol");
  ok = ok && amd_ok(d, a->api.hsa_executable_symbol_get_info(sym, HSA_SYMBOL_KERNEL_OBJECT, &p->kernel_object), "symbol info");
  ok = ok && amd_ok(d, a->api.hsa_executable_symbol_get_info(sym, HSA_SYMBOL_KERNARG_SIZE, &p->kernarg_bytes), "symbol info");
  ok = ok && amd_ok(d, a->api.hsa_executable_symbol_get_info(sym, HSA_SYMBOL_GROUP_SIZE, &p->group_bytes), "symbol info");
  ok = ok && amd_ok(d, a->api.hsa_executable_symbol_get_info(sym, HSA_SYMBOL_PRIVATE_SIZE, &p->private_bytes), "symbol info");
  a->api.hsa_code_object_reader_destroy(reader);
  return ok;
}

void *amd_compile(Device *d, const UOp *kernel, const char *name) {
  AmdDevice *a = d->state;
  double t0 = pipeline_now_ms();
  if (!name) name = "kernel";
  if (!pipeline_name_ok(d->ctx, name)) return NULL;
  AmdProgram *p = calloc(1, sizeof *p);
  if (!p) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
  snprintf(p->name, sizeof p->name, "%s", name);
  size_t len = 0;
  char what[80];
  snprintf(what, sizeof what, "code object %s", p->name);
  bool loaded = false, ok = false;
  for (int fresh = 0; fresh < 2 && !ok; fresh++) { /* a code object from the disk HSA refuses: compiled again, replaced */
    if (fresh && !loaded) break;
    if (fresh && p->have_exec) a->api.hsa_executable_destroy(p->exec), p->have_exec = false; /* never launched */
    if (fresh) kernel_sig_free(&p->sig), loaded = false;
    char *code = disk_cache_code(d, kernel, &a->target, what, fresh, &p->sig, make_code_object, p, &len, &loaded);
    ok = code && load_executable(d, a, p, code, len);
    free(code);
  }
  size_t explicit = ok ? amd_kernargs(&p->sig, NULL, NULL) : 0;
  if (explicit > p->kernarg_bytes) {
    ctx_set_error(d->ctx, "%s: kernel %s: its arguments take %zu bytes, its code object %u", d->name, p->name, explicit,
                  p->kernarg_bytes);
    ok = false;
  }
  if (!ok) {
    amd_program_free(d, p);
    return NULL;
  }
  if (pipeline_debug_level() >= 1)
    fprintf(stderr, "UJ_DEBUG: %s: %s in %.3f ms\n", p->name, loaded ? "loaded from the disk cache" : "compiled",
            pipeline_now_ms() - t0);
  return p;
}

const KernelSig *amd_signature(Device *d, void *program) {
  (void)d;
  return &((const AmdProgram *)program)->sig;
}

void amd_program_free(Device *d, void *program) {
  AmdDevice *a = d->state;
  AmdProgram *p = program;
  if (p->have_exec) {
    amd_synchronize(d, NULL); /* a dispatch in flight runs it */
    a->api.hsa_executable_destroy(p->exec);
  }
  kernel_sig_free(&p->sig);
  free(p);
}

/* ---- launches ---- */

static size_t put(unsigned char *out, size_t at, const void *v, size_t n) {
  at = (at + n - 1) / n * n; /* aligned to its size */
  if (out) memcpy(out + at, v, n);
  return at + n;
}

size_t amd_kernargs(const KernelSig *sig, const LaunchArgs *a, unsigned char *out) {
  size_t at = 0;
  for (size_t i = 0; i < sig->nparams; i++) {
    const KernelParam *kp = &sig->params[i];
    if (kp->used && !dt_is_ptr(kp->dtype)) { /* a value PARAM: the value, at its size */
      size_t n = elem_bytes(kp->dtype);
      unsigned char zero[8] = {0};
      at = put(out, at, out ? a->buffers[i] : zero, n);
    } else {
      uint64_t p = out ? (uint64_t)(uintptr_t)a->buffers[i] : 0;
      at = put(out, at, &p, sizeof p);
    }
  }
  for (size_t k = 0; k < sig->nvars; k++) {
    int64_t v = out ? a->vars[k] : 0;
    int32_t narrow = (int32_t)v;
    at = dt_bits(sig->vars[k].dtype) <= 32 ? put(out, at, &narrow, sizeof narrow) : put(out, at, &v, sizeof v);
  }
  return at;
}

void amd_packet_fill(HsaDispatchPacket *p, const AmdProgram *prog, const LaunchArgs *a, void *kernargs,
                     HsaSignal done) {
  unsigned dims = a->grid[2] * a->block[2] > 1 ? 3 : a->grid[1] * a->block[1] > 1 ? 2 : 1;
  for (int k = 0; k < 3; k++) {
    p->workgroup_size[k] = (uint16_t)a->block[k];
    p->grid_size[k] = a->grid[k] * a->block[k]; /* work-items, not workgroups */
  }
  p->reserved0 = 0, p->reserved2 = 0;
  p->private_segment_size = prog->private_bytes, p->group_segment_size = prog->group_bytes;
  p->kernel_object = prog->kernel_object, p->kernarg_address = kernargs, p->completion_signal = done;
  uint16_t header = (uint16_t)(HSA_PACKET_DISPATCH << HSA_HEADER_TYPE | 1 << HSA_HEADER_BARRIER |
                               HSA_SCOPE_SYSTEM << HSA_HEADER_ACQUIRE | HSA_SCOPE_SYSTEM << HSA_HEADER_RELEASE);
  uint32_t word = header | (uint32_t)(dims << HSA_SETUP_DIMENSIONS) << 16;
  __atomic_store_n((uint32_t *)(void *)p, word, __ATOMIC_RELEASE); /* the packet processor reads the rest after */
}

/* Room for n bytes of kernargs, 64-byte aligned; NULL with the error set. */
static unsigned char *kernarg_take(Device *d, AmdDevice *a, size_t n) {
  size_t at = (a->kernarg_used + 63) / 64 * 64;
  if (at + n > AMD_KERNARG_BYTES) { /* all taken: what was issued finishes first */
    if (!amd_synchronize(d, NULL)) return NULL;
    at = 0;
  }
  if (n > AMD_KERNARG_BYTES) return ctx_set_error(d->ctx, "%s: %zu bytes of kernargs", d->name, n), NULL;
  a->kernarg_used = at + n;
  return (unsigned char *)a->kernargs + at;
}

bool amd_launch(Device *d, void *program, const LaunchArgs *la) {
  AmdDevice *a = d->state;
  const AmdProgram *p = program; /* buffers and variables counted by device_launch */
  unsigned char *args = kernarg_take(d, a, p->kernarg_bytes);
  if (!args) return false;
  memset(args, 0, p->kernarg_bytes); /* the hidden arguments: zero */
  amd_kernargs(&p->sig, la, args);
  HsaQueue *q = a->queue;
  uint64_t index = a->api.hsa_queue_add_write_index_screlease(q, 1);
  while (index - a->api.hsa_queue_load_read_index_scacquire(q) >= q->size) {
  } /* the queue is full: the packet processor frees a slot */
  HsaDispatchPacket *slot = (HsaDispatchPacket *)q->base_address + (index % q->size);
  a->api.hsa_signal_add_screlease(a->done, 1);
  amd_packet_fill(slot, p, la, args, a->done);
  a->api.hsa_signal_store_screlease(q->doorbell_signal, (int64_t)index);
  return true;
}

bool amd_synchronize(Device *d, DeviceQueue *queue) {
  AmdDevice *a = d->state;
  (void)queue; /* one queue */
  int64_t left = a->api.hsa_signal_wait_scacquire(a->done, HSA_CONDITION_LT, 1, UINT64_MAX, HSA_WAIT_BLOCKED);
  a->kernarg_used = 0;
  if (left < 0) return ctx_set_error(d->ctx, "%s: a dispatch failed (its completion signal is %lld)", d->name, (long long)left), false;
  return true;
}
