/* fake_cuda.c — a CUDA driver without a GPU, for test_cuda: the driver
 * API that backends/cuda calls, over host memory, so the runtime's side
 * of every call (opening, memory, copies through staging, modules,
 * launches, events, freeing) is checked where no GPU is.
 *
 * In: the calls, and FAKE_CUDA in the environment: "nodevice" (cuInit
 * fails as without a device), "old" (a CUDA 11.8 driver), "cc75" (a
 * Turing card), "badptx" (every module is refused with a log). Out: the
 * driver's answers; device memory is host memory (a device address is a
 * host pointer), so copies land; kernels do not run, but each launch is
 * checked against its PTX: the entry exists, every .u64 argument is a
 * live allocation, zero or a small integer, the grid and block are in
 * the device's limits. fake_cuda_stats() tells the test what happened. */
#define _DEFAULT_SOURCE /* strdup */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/api.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct FakeStats {
  long allocs, frees, live_allocs, host_allocs, live_host, modules, live_modules, launches, bad_launches, copies_in,
      copies_out, events_live, contexts;
  char last_error[256];
} FakeStats;

typedef struct Block {
  char *base;
  size_t bytes;
} Block;

enum { MAX_BLOCKS = 4096 };
static Block blocks[MAX_BLOCKS];
static size_t nblocks;
static FakeStats stats;

EXPORT const FakeStats *fake_cuda_stats(void) { return &stats; }

static bool mode(const char *m) {
  const char *v = getenv("FAKE_CUDA");
  return v && strcmp(v, m) == 0;
}

static void bad(const char *fmt, const char *a, long b) {
  snprintf(stats.last_error, sizeof stats.last_error, fmt, a, b);
  stats.bad_launches++;
}

/* The block holding [p, p + n), or -1. */
static long block_of(const void *p, size_t n) {
  for (size_t i = 0; i < nblocks; i++)
    if ((const char *)p >= blocks[i].base && (const char *)p + n <= blocks[i].base + blocks[i].bytes) return (long)i;
  return -1;
}

static CUresult cuInit(unsigned flags) { return flags ? 1 : mode("nodevice") ? CUDA_NO_DEVICE : CUDA_OK; }
static CUresult cuDriverGetVersion(int *v) { return *v = mode("old") ? 11080 : 13000, CUDA_OK; }
static CUresult cuGetErrorName(CUresult e, const char **s) {
  *s = e == CUDA_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : e == CUDA_INVALID_PTX ? "CUDA_ERROR_INVALID_PTX" : "CUDA_ERROR_INVALID_VALUE";
  return CUDA_OK;
}
static CUresult cuGetErrorString(CUresult e, const char **s) {
  *s = e == CUDA_NO_DEVICE ? "no CUDA-capable device is detected" : "a fake error";
  return CUDA_OK;
}
static CUresult cuDeviceGetCount(int *n) { return *n = 1, CUDA_OK; }
static CUresult cuDeviceGet(CUdevice *d, int k) { return k == 0 ? (*d = 0, CUDA_OK) : 101; }
static CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  snprintf(name, (size_t)len, "Fake GPU");
  return CUDA_OK;
}
static CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  (void)d;
  switch (attr) {
  case CU_ATTR_COMPUTE_CAPABILITY_MAJOR: *v = mode("cc75") ? 7 : 9; break;
  case CU_ATTR_COMPUTE_CAPABILITY_MINOR: *v = mode("cc75") ? 5 : 0; break;
  case CU_ATTR_MULTIPROCESSOR_COUNT: *v = 7; break;
  case CU_ATTR_L2_CACHE_SIZE: *v = 1 << 20; break;
  case CU_ATTR_WARP_SIZE: *v = 32; break;
  case CU_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
  case CU_ATTR_MAX_BLOCK_DIM_X: case CU_ATTR_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case CU_ATTR_MAX_BLOCK_DIM_Z: *v = 64; break;
  case CU_ATTR_MAX_GRID_DIM_X: *v = 0x7fffffff; break;
  case CU_ATTR_MAX_GRID_DIM_Y: case CU_ATTR_MAX_GRID_DIM_Z: *v = 65535; break;
  default: return 1;
  }
  return CUDA_OK;
}
static CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) { return (void)d, *bytes = (size_t)8 << 30, CUDA_OK; }
static CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  stats.contexts++;
  *c = (CUcontext)(uintptr_t)0x1000;
  return CUDA_OK;
}
static CUresult cuDevicePrimaryCtxRelease(CUdevice d) { return (void)d, stats.contexts--, CUDA_OK; }
static CUresult cuCtxSetCurrent(CUcontext c) { return c ? CUDA_OK : 201; }
static CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  if (nblocks == MAX_BLOCKS || !bytes) return 2;
  char *m = malloc(bytes);
  if (!m) return 2;
  blocks[nblocks++] = (Block){m, bytes};
  stats.allocs++, stats.live_allocs++;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_OK;
}
static CUresult cuMemFree(CUdeviceptr p) {
  long i = block_of((void *)(uintptr_t)p, 1);
  if (i < 0 || blocks[i].base != (char *)(uintptr_t)p) return 1;
  free(blocks[i].base);
  blocks[i] = blocks[--nblocks];
  stats.frees++, stats.live_allocs--;
  return CUDA_OK;
}
static CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  (void)flags;
  *p = malloc(bytes);
  if (*p) stats.host_allocs++, stats.live_host++;
  return *p ? CUDA_OK : 2;
}
static CUresult cuMemFreeHost(void *p) { return free(p), stats.live_host--, CUDA_OK; }
static CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  (void)s;
  if (block_of((void *)(uintptr_t)dst, n) < 0) return 1;
  memcpy((void *)(uintptr_t)dst, src, n);
  stats.copies_in++;
  return CUDA_OK;
}
static CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  if (block_of((void *)(uintptr_t)src, n) < 0) return 1;
  memcpy(dst, (void *)(uintptr_t)src, n);
  stats.copies_out++;
  return CUDA_OK;
}
static CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)(uintptr_t)0x2000;
  return CUDA_OK;
}
static CUresult cuStreamDestroy(CUstream s) { return (void)s, CUDA_OK; }
static CUresult cuStreamSynchronize(CUstream s) { return s ? CUDA_OK : 400; }
static CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  *e = malloc(1);
  stats.events_live++;
  return CUDA_OK;
}
static CUresult cuEventRecord(CUevent e, CUstream s) { return e && s ? CUDA_OK : 400; }
static CUresult cuEventSynchronize(CUevent e) { return e ? CUDA_OK : 400; }
static CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return *ms = 0.25f, a && b ? CUDA_OK : 400; }
static CUresult cuEventDestroy(CUevent e) { return free(e), stats.events_live--, CUDA_OK; }

typedef struct Module {
  char *ptx;
} Module;

static CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *options, void **values) {
  const char *ptx = image;
  if (mode("badptx") || !strstr(ptx, ".entry") || !strstr(ptx, ".target sm_90a")) {
    for (unsigned i = 0; i + 1 < n; i++)
      if (options[i] == CU_JIT_ERROR_LOG && options[i + 1] == CU_JIT_ERROR_LOG_BYTES)
        snprintf(values[i], (size_t)(uintptr_t)values[i + 1], "ptxas fatal   : fake refusal of this PTX");
    return CUDA_INVALID_PTX;
  }
  Module *mod = malloc(sizeof *mod);
  mod->ptx = strdup(ptx);
  stats.modules++, stats.live_modules++;
  *m = (CUmodule)mod;
  return CUDA_OK;
}
static CUresult cuModuleUnload(CUmodule m) {
  Module *mod = (Module *)m;
  free(mod->ptx), free(mod);
  stats.live_modules--;
  return CUDA_OK;
}

/* A function is its entry's text in the module's PTX. */
static CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  char want[128];
  snprintf(want, sizeof want, ".entry %s(", name);
  const char *at = strstr(((Module *)m)->ptx, want);
  if (!at) return 500; /* CUDA_ERROR_NOT_FOUND */
  *f = (CUfunction)(uintptr_t)at;
  return CUDA_OK;
}

static CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
  const char *entry = (const char *)f, *end = strchr(entry, ')');
  stats.launches++;
  if (!s || extra || shared) bad("%s: stream, extra or shared memory (%ld)", "launch", 0);
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || bz > 64 || gy > 65535 || gz > 65535)
    bad("%s: grid or block out of the limits (%ld threads)", "launch", (long)bx * by * bz);
  long i = 0;
  for (const char *p = strstr(entry, ".param "); p && p < end; p = strstr(p + 1, ".param "), i++) {
    if (strncmp(p, ".param .u64", 11) != 0) continue;
    uint64_t v;
    memcpy(&v, params[i], sizeof v);
    if (v != 0 && v >= (1ull << 32) && block_of((void *)(uintptr_t)v, 1) < 0) bad("%s: argument %ld is no allocation", "launch", i);
  }
  return CUDA_OK;
}

typedef struct Named {
  const char *name;
  void *fn;
} Named;

#define FAKE_ENTRY(name, args) {#name, (void *)name},
static const Named functions[] = {CUDA_API_FUNCTIONS(FAKE_ENTRY)};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, uint64_t flags, int *status) {
  (void)flags;
  if (status) *status = 0;
  for (size_t i = 0; version >= 12000 && i < sizeof functions / sizeof *functions; i++)
    if (strcmp(functions[i].name, symbol) == 0) return *fn = functions[i].fn, CUDA_OK;
  *fn = NULL;
  return 500;
}
