/* eval_device.c — the reference evaluator as a device (device.h): "EVAL".
 *
 * In: kernels shaped for a GPU target (sm_90: workgroups, shared-memory
 * trees, 32-bit indices) and launches with buffers, their sizes and the
 * variables. Out: each launch run by eval_run on host memory, workgroups
 * in lockstep and races reported (docs/semantics.md, "Workgroups"). It
 * proves the device API does not assume a CPU, and runs what the GPU
 * backends will run where there is no GPU: slowly (an interpreter), for
 * tests on small shapes. Launches are deferred as a GPU's are: each is
 * queued (its arguments copied) and runs at the next synchronize, copy
 * or free, in the order issued, so a caller that reads a result without
 * synchronizing first reads stale memory here as it would on a GPU. */
#include <stdlib.h>
#include <string.h>

#include "llvm/signature.h"
#include "runtime/device.h"
#include "uop/eval.h"

typedef struct EvalProgram {
  const UOp *kernel;
  KernelSig sig;
} EvalProgram;

/* A launch issued and not yet run: its arguments, copied. */
typedef struct Pending {
  const EvalProgram *p;
  void **buffers;
  size_t *bytes, n;
  int64_t *vars;
  size_t nvars;
} Pending;

/* The device's default queue, on the Device (d->state). */
typedef struct EvalQueue {
  Pending *items;
  size_t n, cap;
  bool failed; /* a launch failed: reported at the next synchronize */
} EvalQueue;

static void pending_free(Pending *q) {
  free(q->buffers), free(q->bytes), free(q->vars);
}

static bool run_launch(Device *d, const Pending *q) {
  const EvalProgram *p = q->p;
  Eval *ev = eval_new(d->ctx);
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < q->n; i++) ok = eval_bind_param(ev, (int64_t)i, q->buffers[i], q->bytes[i]);
  for (size_t i = 0; ok && i < q->nvars; i++) ok = eval_bind_var(ev, p->sig.vars[i].name, q->vars[i]);
  ok = ok && eval_run(ev, p->kernel);
  eval_free(ev);
  return ok;
}

/* Runs what was issued, in order; after a failure the rest is dropped
 * and the error kept for the synchronize. */
static bool drain(Device *d) {
  EvalQueue *q = d->state;
  if (!q) return true;
  for (size_t i = 0; i < q->n; i++) {
    if (!q->failed && !run_launch(d, &q->items[i])) q->failed = true;
    pending_free(&q->items[i]);
  }
  q->n = 0;
  return !q->failed;
}

static void *eval_alloc_mem(Device *d, size_t bytes) {
  (void)d;
  return malloc(bytes ? bytes : 1);
}

static void eval_free_mem(Device *d, void *mem) {
  drain(d);
  free(mem);
}

static bool eval_copy(Device *d, void *dst, const void *src, size_t bytes) {
  if (!drain(d)) return false;
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

static const KernelSig *eval_signature(Device *d, void *program) {
  (void)d;
  return &((const EvalProgram *)program)->sig;
}

static bool eval_launch(Device *d, void *program, const LaunchArgs *a) {
  const EvalProgram *p = program; /* buffers and variables counted by device_launch */
  EvalQueue *q = d->state ? d->state : (d->state = calloc(1, sizeof *q));
  if (q && q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16;
    Pending *items = realloc(q->items, cap * sizeof *items);
    if (items) q->items = items, q->cap = cap;
  }
  Pending it = {p, malloc((a->n ? a->n : 1) * sizeof *it.buffers), malloc((a->n ? a->n : 1) * sizeof *it.bytes), a->n,
                malloc((a->nvars ? a->nvars : 1) * sizeof *it.vars), a->nvars};
  if (!q || q->n == q->cap || !it.buffers || !it.bytes || !it.vars) {
    pending_free(&it);
    ctx_set_error(d->ctx, "EVAL: out of memory");
    return false;
  }
  if (a->n) memcpy(it.buffers, a->buffers, a->n * sizeof *it.buffers), memcpy(it.bytes, a->bytes, a->n * sizeof *it.bytes);
  if (a->nvars) memcpy(it.vars, a->vars, a->nvars * sizeof *it.vars);
  q->items[q->n++] = it;
  return true;
}

static void eval_program_free(Device *d, void *program) {
  drain(d); /* a queued launch may run it */
  EvalProgram *p = program;
  kernel_sig_free(&p->sig);
  free(p);
}

/* The error of a failed launch stays in the context from when it ran. */
static bool eval_synchronize(Device *d, DeviceQueue *queue) {
  (void)queue;
  bool ok = drain(d);
  EvalQueue *q = d->state;
  if (q) q->failed = false;
  return ok;
}

static void eval_close(Device *d) {
  EvalQueue *q = d->state;
  if (!q) return;
  for (size_t i = 0; i < q->n; i++) pending_free(&q->items[i]);
  free(q->items);
  free(q);
  d->state = NULL;
}

const DeviceOps eval_device_ops = {
  .alloc = eval_alloc_mem,
  .free = eval_free_mem,
  .copy_in = eval_copy,
  .copy_out = eval_copy,
  .target = eval_target,
  .memory_bytes = eval_memory_bytes,
  .compile = eval_compile,
  .signature = eval_signature,
  .launch = eval_launch,
  .program_free = eval_program_free,
  .synchronize = eval_synchronize,
  .close = eval_close,
  .host_memory = false, /* host memory, but a deferred launch may still read a block the pool holds (in queue order, as a GPU's would): not poisoned */
};
