/* program.c — uj_compile, uj_run, uj_program_free: kernels compiled by the
 * one pipeline (lib/llvm) into the context's ORC LLJIT, and the cache of
 * compiled programs keyed by (kernel hash, target, options). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>

#include "cpu/jit.h"
#include "cpu/pool.h"
#include "llvm/pipeline.h"
#include "runtime/disk_cache.h"
#include "uop/hash.h"

typedef void (*KernelEntry)(void *const *args, const int64_t *vars, int64_t part, int64_t nparts);

struct uj_program {
  Ctx *ctx;
  const UOp *kernel;
  uint64_t key; /* hash of (kernel, target, options) */
  size_t at;    /* its place in CpuJit.programs */
  uint32_t refs;
  char name[64], symbol[96];
  KernelEntry entry;
  LLVMOrcResourceTrackerRef tracker;
  KernelSig sig;
  double compile_ms;
  bool loaded; /* from the disk cache */
};

typedef struct CpuJit {
  LLVMOrcLLJITRef jit;
  LLVMOrcJITDylibRef dylib;
  Target target;
  LLVMTargetMachineRef tm; /* for the pass pipeline; the JIT has its own */
  uj_program **programs;   /* the cache, in no order */
  size_t nprograms, cap;
  uj_program **slots;      /* the cache hashed by key: NULL empty, TOMBSTONE removed */
  size_t nslots, nused;    /* nused: programs and tombstones in slots */
  uint64_t next_symbol;
  Pool *pool; /* made at the first parallel run */
} CpuJit;

static bool orc_fail(Ctx *ctx, const char *what, LLVMErrorRef err) {
  char *msg = LLVMGetErrorMessage(err);
  ctx_set_error(ctx, "cpu: %s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}

/* The program's code out of the JIT. */
static void tracker_drop(uj_program *p) {
  if (!p->tracker) return;
  LLVMErrorRef err = LLVMOrcResourceTrackerRemove(p->tracker);
  if (err) LLVMConsumeError(err);
  LLVMOrcReleaseResourceTracker(p->tracker);
  p->tracker = NULL;
}

static void program_release(uj_program *p) {
  tracker_drop(p);
  kernel_sig_free(&p->sig);
  free(p);
}

static void jit_free(void *state) {
  CpuJit *j = state;
  pool_free(j->pool);
  for (size_t i = 0; i < j->nprograms; i++) program_release(j->programs[i]);
  free(j->programs);
  free(j->slots);
  if (j->jit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->jit);
    if (err) LLVMConsumeError(err);
  }
  if (j->tm) LLVMDisposeTargetMachine(j->tm);
  free(j);
}

/* The LLJIT for the host: a target machine for it, process symbols
 * visible (libm), our runtime symbols defined. */
static bool jit_create(Ctx *ctx, CpuJit *j) {
  LLVMTargetMachineRef jit_tm = target_machine_new(ctx, &j->target);
  j->tm = target_machine_new(ctx, &j->target);
  if (!jit_tm || !j->tm) return jit_tm ? LLVMDisposeTargetMachine(jit_tm), false : false;
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  /* consumes jit_tm, then the builder takes the JTMB, and LLJIT the builder */
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jit_tm));
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&j->jit, builder);
  if (err) return j->jit = NULL, orc_fail(ctx, "cannot create the JIT", err);
  j->dylib = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL);
  if (err) return orc_fail(ctx, "cannot see the process's symbols", err);
  LLVMOrcJITDylibAddGenerator(j->dylib, gen);
  return cpu_runtime_define(ctx, j->jit, j->dylib);
}

/* A program's kernel is its cache key: it must outlive a collection. */
static void jit_roots(void *state, RootSet *r) {
  CpuJit *j = state;
  for (size_t i = 0; i < j->nprograms; i++) rootset_add(r, j->programs[i]->kernel);
}

static CpuJit *jit_get(Ctx *ctx) {
  CtxPartSlot *slot = &ctx->parts[CTX_PART_CPU_JIT];
  if (slot->state) return slot->state;
  CpuJit *j = calloc(1, sizeof *j);
  if (!j) return ctx_set_error(ctx, "cpu: out of memory"), NULL;
  if (!target_init(ctx, TARGET_CPU, NULL, &j->target) || !jit_create(ctx, j)) {
    jit_free(j);
    return NULL;
  }
  slot->state = j, slot->free = jit_free, slot->roots = jit_roots;
  return j;
}

/* ---- the cache ---- */

static uint64_t program_key(const CpuJit *j, const UOp *kernel) {
  uint64_t h = kernel->key * 0x9e3779b97f4a7c15ull;
  h = fnv1a_str(h, j->target.cpu);
  return fnv1a_str(h, j->target.features); /* options: none yet */
}

/* The slots are an open-addressed table: a lookup or an insert is O(1),
 * however many programs a long session keeps. */
static uj_program tombstone;
#define TOMBSTONE (&tombstone)

static uj_program *cache_find(CpuJit *j, const UOp *kernel, uint64_t key) {
  size_t mask = j->nslots - 1;
  for (size_t i = j->nslots ? key & mask : 0; j->nslots && j->slots[i]; i = (i + 1) & mask)
    if (j->slots[i] != TOMBSTONE && j->slots[i]->key == key && j->slots[i]->kernel == kernel) return j->slots[i];
  return NULL;
}

static void slot_put(CpuJit *j, uj_program *p) {
  size_t mask = j->nslots - 1, i = p->key & mask;
  while (j->slots[i] && j->slots[i] != TOMBSTONE) i = (i + 1) & mask;
  if (!j->slots[i]) j->nused++;
  j->slots[i] = p;
}

static bool cache_add(CpuJit *j, uj_program *p) {
  if (j->nprograms == j->cap) {
    size_t cap = j->cap ? j->cap * 2 : 16;
    uj_program **ps = realloc(j->programs, cap * sizeof *ps);
    if (!ps) return false;
    j->programs = ps, j->cap = cap;
  }
  if (2 * (j->nused + 1) > j->nslots) { /* rehash at half full, tombstones dropped */
    size_t n = j->nslots ? j->nslots : 32;
    while (2 * (j->nprograms + 1) > n / 2) n *= 2;
    uj_program **slots = calloc(n, sizeof *slots);
    if (!slots) return false;
    free(j->slots);
    j->slots = slots, j->nslots = n, j->nused = 0;
    for (size_t i = 0; i < j->nprograms; i++) slot_put(j, j->programs[i]);
  }
  p->at = j->nprograms;
  j->programs[j->nprograms++] = p;
  slot_put(j, p);
  return true;
}

static void cache_remove(CpuJit *j, uj_program *p) {
  size_t mask = j->nslots - 1;
  for (size_t i = p->key & mask; j->slots[i]; i = (i + 1) & mask)
    if (j->slots[i] == p) {
      j->slots[i] = TOMBSTONE;
      break;
    }
  uj_program *last = j->programs[--j->nprograms];
  j->programs[p->at] = last, last->at = p->at;
}

/* ---- compiling ---- */

/* Is a live program of this JIT named symbol? Two kernels of one key
 * text are one node, so this is only ever a hash collision of the key:
 * the second is then compiled under a name of its own, off the disk. */
static bool symbol_taken(const CpuJit *j, const char *symbol) {
  for (size_t i = 0; i < j->nprograms; i++)
    if (!strcmp(j->programs[i]->symbol, symbol)) return true;
  return false;
}

/* Machine code for the kernel: rendered, optimized and emitted as an
 * object file (with the parallel flag in front: what the disk keeps),
 * or NULL with the error set. */
static LLVMMemoryBufferRef program_object(Ctx *ctx, CpuJit *j, uj_program *p) {
  LLVMContextRef lc = LLVMContextCreate();
  PipelineRequest req = {.target = &j->target, .tm = j->tm, .name = p->symbol, .optimize = true,
                         .display_name = p->name};
  LLVMModuleRef mod = pipeline_compile(ctx, p->kernel, lc, &req, &p->sig);
  char *msg = NULL;
  LLVMMemoryBufferRef obj = NULL;
  if (mod && LLVMTargetMachineEmitToMemoryBuffer(j->tm, mod, LLVMObjectFile, &msg, &obj)) {
    ctx_set_error(ctx, "cpu: cannot emit %s: %s", p->name, msg ? msg : "?");
    obj = NULL;
  }
  LLVMDisposeMessage(msg);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(lc);
  return obj;
}

/* The object added to the JIT under the program's own resource tracker
 * (taking obj), its entry looked up. */
static bool program_link(Ctx *ctx, CpuJit *j, uj_program *p, LLVMMemoryBufferRef obj) {
  p->tracker = LLVMOrcJITDylibCreateResourceTracker(j->dylib);
  LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(j->jit, p->tracker, obj);
  if (err) return orc_fail(ctx, "cannot add the object", err);
  LLVMOrcExecutorAddress addr = 0;
  err = LLVMOrcLLJITLookup(j->jit, &addr, p->symbol); /* the object is linked here */
  if (err) return orc_fail(ctx, "cannot link the kernel", err);
  p->entry = (KernelEntry)(uintptr_t)addr;
  return true;
}

/* A disk cache entry: the parallel flag, then the object file. */
enum { ENTRY_HEAD = 1 };

/* The program from the disk cache: its signature from the kernel (as
 * pipeline_linearize makes it), the rest from the entry. */
static bool program_load(Ctx *ctx, CpuJit *j, uj_program *p, const unsigned char *entry, size_t n) {
  if (n <= ENTRY_HEAD || entry[0] > 1 || !kernel_sig_build(ctx, p->kernel, &p->sig)) return false;
  p->sig.parallel = entry[0] == 1;
  LLVMMemoryBufferRef obj =
      LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)entry + ENTRY_HEAD, n - ENTRY_HEAD, p->symbol);
  return obj && program_link(ctx, j, p, obj);
}

/* Compiled, or loaded from the disk cache (the kernel's key names the
 * symbol then, so the object holds the same name in every process). */
static bool program_build(Ctx *ctx, CpuJit *j, uj_program *p, bool *loaded) {
  size_t keylen = 0;
  bool on = disk_cache_on();
  char *key = on ? disk_cache_key(ctx, p->kernel, &j->target, "object", &keylen) : NULL;
  if (on && !key) ctx_clear_error(ctx); /* no key (no memory): compiled, not kept */
  if (key) {
    snprintf(p->symbol, sizeof p->symbol, "uj_%016" PRIx64, fnv1a(FNV_OFFSET, key, keylen));
    if (symbol_taken(j, p->symbol)) free(key), key = NULL;
  }
  if (!key) snprintf(p->symbol, sizeof p->symbol, "%s_%" PRIu64, p->name, j->next_symbol++);
  void *entry = NULL;
  size_t n = 0;
  if (key && disk_cache_get(key, keylen, &entry, &n)) {
    *loaded = program_load(ctx, j, p, entry, n);
    free(entry);
    if (*loaded) return free(key), true;
    kernel_sig_free(&p->sig); /* a bad entry: compiled below, and replaced */
    tracker_drop(p);
    ctx_clear_error(ctx);
  }
  LLVMMemoryBufferRef obj = program_object(ctx, j, p);
  if (obj && key) {
    size_t size = LLVMGetBufferSize(obj);
    unsigned char *bytes = malloc(ENTRY_HEAD + size);
    if (bytes) {
      bytes[0] = p->sig.parallel;
      memcpy(bytes + ENTRY_HEAD, LLVMGetBufferStart(obj), size);
      disk_cache_put(key, keylen, bytes, ENTRY_HEAD + size);
    }
    free(bytes);
  }
  free(key);
  return obj && program_link(ctx, j, p, obj);
}

uj_program *uj_compile(uj_ctx *ctx, const uj_uop *kernel, const char *name) {
  double t0 = pipeline_now_ms();
  if (!ctx) return NULL;
  if (!name) name = "kernel";
  if (!kernel) return ctx_set_error(ctx, "compile: no kernel"), NULL;
  CpuJit *j = pipeline_name_ok(ctx, name) ? jit_get(ctx) : NULL;
  if (!j) return NULL;
  uint64_t key = program_key(j, kernel);
  uj_program *p = cache_find(j, kernel, key);
  if (p) {
    p->refs++;
    if (pipeline_debug_level() >= 1) fprintf(stderr, "UJ_DEBUG: %s: cached\n", p->name);
    return p;
  }
  p = calloc(1, sizeof *p);
  if (!p) return ctx_set_error(ctx, "compile: out of memory"), NULL;
  *p = (uj_program){.ctx = ctx, .kernel = kernel, .key = key, .refs = 1};
  snprintf(p->name, sizeof p->name, "%s", name);
  bool built = program_build(ctx, j, p, &p->loaded);
  if (!built || !cache_add(j, p)) {
    if (built) ctx_set_error(ctx, "compile: out of memory");
    program_release(p);
    return NULL;
  }
  p->compile_ms = pipeline_now_ms() - t0;
  if (pipeline_debug_level() >= 1)
    fprintf(stderr, "UJ_DEBUG: %s: %s in %.3f ms\n", p->name, p->loaded ? "loaded from the disk cache" : "compiled", p->compile_ms);
  return p;
}

void uj_program_free(uj_program *p) {
  if (!p || --p->refs > 0) return;
  cache_remove(p->ctx->parts[CTX_PART_CPU_JIT].state, p);
  program_release(p);
}

/* ---- running ---- */

static uj_status run_check(uj_program *p, void *const *args, size_t nargs, const int64_t *vars, size_t nvars) {
  Ctx *ctx = p->ctx;
  if (nargs < p->sig.nparams || (p->sig.nparams && !args)) {
    ctx_set_error(ctx, "run %s: it takes %zu args, got %zu", p->name, p->sig.nparams, nargs);
    return UJ_ERR_ARG;
  }
  if (nvars != p->sig.nvars || (nvars && !vars)) {
    ctx_set_error(ctx, "run %s: it takes %zu variables, got %zu", p->name, p->sig.nvars, nvars);
    return UJ_ERR_ARG;
  }
  for (size_t i = 0; i < p->sig.nparams; i++) {
    if (p->sig.params[i].used && !args[i]) {
      ctx_set_error(ctx, "run %s: arg %zu (PARAM slot %zu) is NULL", p->name, i, i);
      return UJ_ERR_ARG;
    }
  }
  for (size_t i = 0; i < nvars; i++) {
    const KernelVar *v = &p->sig.vars[i];
    if (vars[i] < v->min || vars[i] > v->max) {
      ctx_set_error(ctx, "run %s: variable %s = %lld is outside [%lld, %lld]", p->name, v->name,
                    (long long)vars[i], (long long)v->min, (long long)v->max);
      return UJ_ERR_ARG;
    }
  }
  return UJ_OK;
}

/* One launch of a parallel program: each thread runs its part. */
typedef struct Launch {
  const uj_program *p;
  void *const *args;
  const int64_t *vars;
} Launch;

static void run_part(void *arg, unsigned part, unsigned nparts) {
  const Launch *l = arg;
  l->p->entry(l->args, l->vars, part, nparts);
}

uj_status uj_run(uj_program *p, void *const *args, size_t nargs, const int64_t *vars, size_t nvars) {
  if (!p) return UJ_ERR_ARG;
  uj_status st = run_check(p, args, nargs, vars, nvars);
  if (st != UJ_OK) return st;
  double t0 = pipeline_now_ms();
  CpuJit *j = p->sig.parallel ? jit_get(p->ctx) : NULL;
  if (j && !j->pool && pool_default_threads() > 1) j->pool = pool_new(pool_default_threads());
  if (j && j->pool) pool_run(j->pool, run_part, &(Launch){p, args, vars});
  else p->entry(args, vars, 0, 1); /* no pool (one core, or none could be made): all in one part */
  if (pipeline_debug_level() >= 1) fprintf(stderr, "UJ_DEBUG: %s: ran in %.3f ms\n", p->name, pipeline_now_ms() - t0);
  return UJ_OK;
}

const KernelSig *cpu_program_sig(const uj_program *p) { return &p->sig; }
bool cpu_program_loaded(const uj_program *p) { return p->loaded; }

size_t uj_program_nparams(const uj_program *p) { return p ? p->sig.nparams : 0; }
size_t uj_program_nvars(const uj_program *p) { return p ? p->sig.nvars : 0; }
bool uj_program_param(const uj_program *p, size_t slot, uj_dtype *dtype, bool *stored) {
  if (!p || slot >= p->sig.nparams || !p->sig.params[slot].used) return false;
  if (dtype) *dtype = p->sig.params[slot].dtype;
  if (stored) *stored = p->sig.params[slot].stored;
  return true;
}

bool uj_program_var(const uj_program *p, size_t i, uj_dtype *dtype, int64_t *min, int64_t *max) {
  if (!p || i >= p->sig.nvars) return false;
  const KernelVar *v = &p->sig.vars[i];
  if (dtype) *dtype = v->dtype;
  if (min) *min = v->min;
  if (max) *max = v->max;
  return true;
}

const char *uj_program_var_name(const uj_program *p, size_t i) {
  return p && i < p->sig.nvars ? p->sig.vars[i].name : NULL;
}

unsigned cpu_pool_last_threads(Ctx *ctx) {
  const CpuJit *j = ctx->parts[CTX_PART_CPU_JIT].state;
  return j && j->pool ? pool_last_threads(j->pool) : 0;
}
