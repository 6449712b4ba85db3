/* eval_device.c — the reference evaluator as a device (device.h): "EVAL".
 *
 * In: kernels shaped for a GPU target (sm_90: workgroups, shared-memory
 * trees, 32-bit indices) and launches with buffers, their sizes and the
 * variables. Out: each launch run by eval_run on host memory, workgroups
 * in lockstep and races reported (docs/semantics.md, "Workgroups"). It
 * proves the device API does not assume a CPU, and runs what the GPU
 * backends will run where there is no GPU: slowly (an interpreter), for
 * tests on small shapes. Launches finish before they return. */
#include <stdlib.h>
#include <string.h>

#include "llvm/signature.h"
#include "runtime/device.h"
#include "uop/eval.h"

typedef struct EvalProgram {
  const UOp *kernel;
  KernelSig sig;
} EvalProgram;

static void *eval_alloc_mem(Device *d, size_t bytes) {
  (void)d;
  return malloc(bytes ? bytes : 1);
}

static void eval_free_mem(Device *d, void *mem) {
  (void)d;
  free(mem);
}

static bool eval_copy(Device *d, void *dst, const void *src, size_t bytes) {
  (void)d;
  if (bytes) memcpy(dst, src, bytes);
  return true;
}

static const TargetDesc *eval_target(Device *d) {
  (void)d;
  return target_desc_find("sm_90");
}

static size_t eval_memory_bytes(Device *d) {
  (void)d;
  return device_host_memory_bytes();
}

/* The kernel checked as the compilers check it (kernel_sig_build: PARAM
 * slots, variables), kept to be run. */
static void *eval_compile(Device *d, const UOp *kernel, const char *name) {
  (void)name;
  EvalProgram *p = calloc(1, sizeof *p);
  if (!p) return ctx_set_error(d->ctx, "EVAL: out of memory"), NULL;
  p->kernel = kernel;
  if (!kernel_sig_build(d->ctx, kernel, &p->sig)) return free(p), NULL;
  return p;
}

static bool eval_launch(Device *d, void *program, const LaunchArgs *a) {
  const EvalProgram *p = program;
  if (a->n < p->sig.nparams || a->nvars != p->sig.nvars) {
    ctx_set_error(d->ctx, "EVAL: the kernel takes %zu buffers and %zu variables, not %zu and %zu", p->sig.nparams,
                  p->sig.nvars, a->n, a->nvars);
    return false;
  }
  Eval *ev = eval_new(d->ctx);
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < a->n; i++) ok = eval_bind_param(ev, (int64_t)i, a->buffers[i], a->bytes[i]);
  for (size_t i = 0; ok && i < a->nvars; i++) ok = eval_bind_var(ev, p->sig.vars[i].name, a->vars[i]);
  ok = ok && eval_run(ev, p->kernel);
  eval_free(ev);
  return ok;
}

static void eval_program_free(Device *d, void *program) {
  (void)d;
  EvalProgram *p = program;
  kernel_sig_free(&p->sig);
  free(p);
}

static bool eval_synchronize(Device *d) {
  (void)d;
  return true;
}

const DeviceOps eval_device_ops = {
  .alloc = eval_alloc_mem,
  .free = eval_free_mem,
  .copy_in = eval_copy,
  .copy_out = eval_copy,
  .target = eval_target,
  .memory_bytes = eval_memory_bytes,
  .compile = eval_compile,
  .launch = eval_launch,
  .program_free = eval_program_free,
  .synchronize = eval_synchronize,
};
