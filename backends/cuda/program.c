/* program.c — kernels on a CUDA device: PTX from the one pipeline for the
 * device's own arch, loaded as a module with the driver's error log
 * shown; launches on the device's stream with the grid the optimizer
 * chose (device_launch computes it); under UJ_DEBUG=1 (or with the
 * device's `timing` set) each launch timed by a pair of events, read at
 * the next synchronize.
 *
 * In: a kernel (a SINK over PARAM slots) and its name. Out: a
 * CudaProgram; launches that take the buffers by slot (device addresses,
 * or the address of a value PARAM) and the variables at their dtype's
 * width, in the kernel function's order (render.c: params, then vars). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "cuda/cuda_device.h"
#include "llvm/pipeline.h"
#include "runtime/disk_cache.h"

enum { JIT_LOG_BYTES = 8192 };

/* PTX for the kernel, malloc'd; NULL with the error set. */
static char *kernel_ptx(Device *d, CudaDevice *c, const UOp *kernel, CudaProgram *p) {
  LLVMContextRef lc = LLVMContextCreate();
  PipelineRequest req = {.target = &c->target, .tm = c->tm, .name = p->name, .optimize = true};
  LLVMModuleRef mod = pipeline_compile(d->ctx, kernel, lc, &req, &p->sig);
  char *ptx = NULL;
  size_t n = 0;
  if (mod && !pipeline_emit(d->ctx, mod, c->tm, LLVMAssemblyFile, &ptx, &n)) ptx = NULL;
  if (mod) LLVMDisposeModule(mod);
  else p->sig = (KernelSig){0}; /* pipeline_compile freed it */
  LLVMContextDispose(lc);
  return ptx;
}

/* disk_cache_code's maker: the PTX with its NUL (what the driver reads). */
static char *make_ptx(Device *d, const UOp *kernel, void *program, size_t *len) {
  char *ptx = kernel_ptx(d, d->state, kernel, program);
  if (ptx) *len = strlen(ptx) + 1;
  return ptx;
}

/* The module from ptx; the driver's error log in the error when it
 * refuses it. */
static bool load_module(Device *d, CudaDevice *c, CudaProgram *p, const char *ptx) {
  char log[JIT_LOG_BYTES] = "";
  int options[] = {CU_JIT_ERROR_LOG, CU_JIT_ERROR_LOG_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult e = c->api.cuModuleLoadDataEx(&p->module, ptx, 2, options, values);
  if (e != CUDA_OK) {
    char text[256];
    ctx_set_error(d->ctx, "%s: kernel %s: the driver cannot load its PTX: %s%s%s", d->name, p->name,
                  cuda_error_text(&c->api, e, text, sizeof text), log[0] ? ": " : "", log);
    p->module = NULL;
    return false;
  }
  return cuda_ok(d, c->api.cuModuleGetFunction(&p->fn, p->module, p->name), "cannot find the kernel in its module");
}

void *cuda_compile(Device *d, const UOp *kernel, const char *name) {
  CudaDevice *c = d->state;
  double t0 = pipeline_now_ms();
  if (!name) name = "kernel";
  if (!pipeline_name_ok(d->ctx, name) || !cuda_enter(d)) return NULL;
  CudaProgram *p = calloc(1, sizeof *p);
  if (!p) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
  snprintf(p->name, sizeof p->name, "%s", name);
  char what[80];
  snprintf(what, sizeof what, "ptx %s", p->name);
  size_t n = 0;
  bool ok = false;
  double t1 = t0;
  for (int fresh = 0; fresh < 2 && !ok; fresh++) { /* PTX from the disk the driver refuses: compiled again, replaced */
    if (fresh && !p->loaded) break;
    if (fresh) kernel_sig_free(&p->sig), p->loaded = false;
    char *ptx = disk_cache_code(d, kernel, &c->target, what, fresh, &p->sig, make_ptx, p, &n, &p->loaded);
    t1 = pipeline_now_ms();
    bool text = ptx && n > 0 && ptx[n - 1] == '\0';
    if (ptx && !text) ctx_set_error(d->ctx, "%s: kernel %s: its PTX is not text", d->name, p->name);
    ok = text && load_module(d, c, p, ptx);
    free(ptx);
  }
  if (!ok) {
    cuda_program_free(d, p);
    return NULL;
  }
  if (pipeline_debug_level() >= 1)
    fprintf(stderr, "UJ_DEBUG: %s: %s in %.3f ms (PTX %.3f ms, the driver's load %.3f ms)\n", p->name,
            p->loaded ? "loaded from the disk cache" : "compiled", pipeline_now_ms() - t0, t1 - t0, pipeline_now_ms() - t1);
  return p;
}

const KernelSig *cuda_signature(Device *d, void *program) {
  (void)d;
  return &((const CudaProgram *)program)->sig;
}

void cuda_program_free(Device *d, void *program) {
  CudaDevice *c = d->state;
  CudaProgram *p = program;
  if (p->module && cuda_enter(d)) {
    c->api.cuStreamSynchronize(c->stream); /* a launch in flight runs it */
    c->api.cuModuleUnload(p->module);
  }
  kernel_sig_free(&p->sig);
  free(p);
}

/* ---- launches ---- */

/* A launch's events, kept to be read at the synchronize (UJ_DEBUG). */
static CudaTiming *timing_start(Device *d, CudaDevice *c, const CudaProgram *p) {
  if (c->ntimings == c->cap_timings) {
    size_t cap = c->cap_timings ? 2 * c->cap_timings : 64;
    CudaTiming *t = realloc(c->timings, cap * sizeof *t);
    if (!t) return ctx_set_error(d->ctx, "%s: out of memory", d->name), NULL;
    c->timings = t, c->cap_timings = cap;
  }
  CudaTiming *t = &c->timings[c->ntimings];
  *t = (CudaTiming){p->name, NULL, NULL};
  if (!cuda_ok(d, c->api.cuEventCreate(&t->start, CU_EVENT_PLAIN), "cannot create an event") ||
      !cuda_ok(d, c->api.cuEventCreate(&t->end, CU_EVENT_PLAIN), "cannot create an event") ||
      !cuda_ok(d, c->api.cuEventRecord(t->start, c->stream), "cannot record an event")) {
    if (t->start) c->api.cuEventDestroy(t->start);
    if (t->end) c->api.cuEventDestroy(t->end);
    return NULL;
  }
  c->ntimings++;
  return t;
}

/* Reports each timed launch's device time (UJ_DEBUG) and adds it to the
 * device's kernel_ms (timing), then forgets them. */
static void timings_report(Device *d, CudaDevice *c) {
  bool debug = pipeline_debug_level() >= 1;
  for (size_t i = 0; i < c->ntimings; i++) {
    float ms = 0;
    if (c->api.cuEventElapsedTime(&ms, c->timings[i].start, c->timings[i].end) != CUDA_OK) continue;
    if (debug) fprintf(stderr, "UJ_DEBUG: %s: ran in %.3f ms on the device\n", c->timings[i].name, (double)ms);
    if (d->timing) d->kernel_ms += (double)ms;
  }
  cuda_timings_free(c);
}

void cuda_timings_free(CudaDevice *c) {
  for (size_t i = 0; i < c->ntimings; i++) {
    c->api.cuEventDestroy(c->timings[i].start);
    c->api.cuEventDestroy(c->timings[i].end);
  }
  c->ntimings = 0;
}

/* The argument values the kernel function takes, in its order; each
 * params[i] points at one (args[i] holds a device address or a
 * variable's value at its width). */
static void launch_params(const CudaProgram *p, const LaunchArgs *a, void **params, uint64_t *args) {
  size_t np = p->sig.nparams;
  for (size_t i = 0; i < np; i++) {
    const KernelParam *kp = &p->sig.params[i];
    args[i] = (uint64_t)(uintptr_t)a->buffers[i];
    params[i] = kp->used && !dt_is_ptr(kp->dtype) ? a->buffers[i] : &args[i]; /* a value PARAM: its address */
  }
  for (size_t k = 0; k < p->sig.nvars; k++) {
    int32_t narrow = (int32_t)a->vars[k];
    if (dt_bits(p->sig.vars[k].dtype) <= 32) memcpy(&args[np + k], &narrow, sizeof narrow);
    else args[np + k] = (uint64_t)a->vars[k];
    params[np + k] = &args[np + k];
  }
}

bool cuda_launch(Device *d, void *program, const LaunchArgs *a) {
  CudaDevice *c = d->state;
  const CudaProgram *p = program;
  size_t n = p->sig.nparams + p->sig.nvars; /* a->n and a->nvars as many: device_launch checks */
  enum { SMALL = 32 };
  void *small_params[SMALL], **params = n <= SMALL ? small_params : malloc(n * sizeof *params);
  uint64_t small_args[SMALL], *args = n <= SMALL ? small_args : malloc(n * sizeof *args);
  bool ok = params && args && cuda_enter(d);
  if (!params || !args) ctx_set_error(d->ctx, "%s: out of memory", d->name);
  CudaTiming *t = ok && (d->timing || pipeline_debug_level() >= 1) ? timing_start(d, c, p) : NULL;
  if (ok) launch_params(p, a, params, args);
  ok = ok && cuda_ok(d, c->api.cuLaunchKernel(p->fn, a->grid[0], a->grid[1], a->grid[2], a->block[0], a->block[1],
                                              a->block[2], 0, c->stream, params, NULL),
                     "cannot launch a kernel");
  if (t) c->api.cuEventRecord(t->end, c->stream);
  if (params != small_params) free(params);
  if (args != small_args) free(args);
  return ok;
}

bool cuda_synchronize(Device *d, DeviceQueue *queue) {
  CudaDevice *c = d->state;
  (void)queue; /* one stream */
  bool ok = cuda_enter(d) && cuda_ok(d, c->api.cuStreamSynchronize(c->stream), "a kernel or copy failed");
  if (ok) timings_report(d, c);
  else cuda_timings_free(c);
  return ok;
}
