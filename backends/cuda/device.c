/* device.c — NVIDIA GPUs as a device (runtime/device.h): "CUDA", "CUDA:N".
 *
 * In: a device number. Out: the device opened through the driver (api.h):
 * its primary context, one non-blocking stream for every copy and launch,
 * its memory through cuMemAlloc (the device's pool keeps freed blocks),
 * and a TargetDesc of its arch's row with the limits the driver reports
 * (SMs, L2, warp, block, grid and shared-memory sizes), named for its
 * compute capability. A missing driver, a stub library, no device or a
 * compute capability under 8.0 fail the open with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_device.h"

bool cuda_ok(Device *d, CUresult e, const char *what) {
  if (e == CUDA_OK) return true;
  char text[256];
  CudaDevice *c = d->state;
  ctx_set_error(d->ctx, "%s: %s: %s", d->name, what, cuda_error_text(&c->api, e, text, sizeof text));
  return false;
}

bool cuda_enter(Device *d) {
  CudaDevice *c = d->state;
  return cuda_ok(d, c->api.cuCtxSetCurrent(c->context), "cannot make its context current");
}

/* An attribute of the device, or fallback when the driver will not say. */
static int attribute(CudaDevice *c, int attr, int fallback) {
  int v = 0;
  return c->api.cuDeviceGetAttribute(&v, attr, c->dev) == CUDA_OK && v > 0 ? v : fallback;
}

/* Its arch's row (target_desc_for_arch) with this device's own sizes. */
static void describe_target(CudaDevice *c) {
  snprintf(c->desc_name, sizeof c->desc_name, "sm_%d%d", c->cc_major, c->cc_minor);
  c->desc = *target_desc_for_arch(c->desc_name);
  c->desc.name = c->desc_name;
  c->desc.cores = (unsigned)attribute(c, CU_ATTR_MULTIPROCESSOR_COUNT, (int)c->desc.cores);
  c->desc.l2_bytes = (size_t)attribute(c, CU_ATTR_L2_CACHE_SIZE, (int)c->desc.l2_bytes);
  c->desc.warp = (unsigned)attribute(c, CU_ATTR_WARP_SIZE, 32);
  c->desc.max_threads = (unsigned)attribute(c, CU_ATTR_MAX_THREADS_PER_BLOCK, (int)c->desc.max_threads);
  c->desc.shared_bytes = (size_t)attribute(c, CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, (int)c->desc.shared_bytes);
  static const int block[3] = {CU_ATTR_MAX_BLOCK_DIM_X, CU_ATTR_MAX_BLOCK_DIM_Y, CU_ATTR_MAX_BLOCK_DIM_Z};
  static const int grid[3] = {CU_ATTR_MAX_GRID_DIM_X, CU_ATTR_MAX_GRID_DIM_Y, CU_ATTR_MAX_GRID_DIM_Z};
  for (int k = 0; k < 3; k++) {
    c->desc.max_block[k] = (unsigned)attribute(c, block[k], (int)c->desc.max_block[k]);
    c->desc.max_grid[k] = (uint32_t)attribute(c, grid[k], (int)c->desc.max_grid[k]);
  }
}

/* The LLVM arch for the compute capability: sm_90a on Hopper (its wgmma
 * and TMA need the `a`), the arch itself where LLVM knows it, else the
 * newest below it that LLVM knows (the driver compiles PTX forward). */
static bool choose_arch(Device *d, CudaDevice *c, char *why, size_t size) {
  static const int known[] = {90, 89, 86, 80};
  int cc = c->cc_major * 10 + c->cc_minor;
  if (cc < 80) {
    snprintf(why, size, "%s has compute capability %d.%d; uopjit needs 8.0 or later", c->model, c->cc_major, c->cc_minor);
    return false;
  }
  char arch[16] = "sm_90a";
  for (size_t i = 0; cc != 90 && i < sizeof known / sizeof *known; i++)
    if (known[i] <= cc) {
      snprintf(arch, sizeof arch, "sm_%d", known[i]);
      break;
    }
  if (!target_init(d->ctx, TARGET_NVPTX, arch, &c->target)) return snprintf(why, size, "%s", uj_error(d->ctx)), false;
  c->tm = target_machine_new(d->ctx, &c->target);
  if (!c->tm) snprintf(why, size, "%s", uj_error(d->ctx));
  return c->tm != NULL;
}

/* The driver's answer to step, or the reason it failed in why. */
static bool step(CudaDevice *c, CUresult e, const char *what, char *why, size_t size) {
  if (e == CUDA_OK) return true;
  char text[256];
  if (e == CUDA_STUB_LIBRARY) snprintf(why, size, "the driver library is the toolkit's stub, not a driver (%s)", what);
  else snprintf(why, size, "%s: %s", what, cuda_error_text(&c->api, e, text, sizeof text));
  return false;
}

static bool cuda_open(Device *d, int ordinal, char *why, size_t size) {
  CudaDevice *c = calloc(1, sizeof *c);
  if (!c) return snprintf(why, size, "out of memory"), false;
  d->state = c;
  c->dev = -1;
  int version = 0, count = 0;
  bool ok = cuda_api_open(&c->api, why, size);
  ok = ok && step(c, c->api.cuInit(0), "cuInit", why, size);
  ok = ok && step(c, c->api.cuDriverGetVersion(&version), "cuDriverGetVersion", why, size);
  if (ok && version < CUDA_API_VERSION)
    ok = false, snprintf(why, size, "the driver is CUDA %d.%d; uopjit needs 12.0 or later", version / 1000, version % 1000 / 10);
  ok = ok && step(c, c->api.cuDeviceGetCount(&count), "cuDeviceGetCount", why, size);
  if (ok && ordinal >= count) {
    ok = false;
    snprintf(why, size, "device %d asked for, %d present", ordinal, count);
  }
  CUdevice dev = 0;
  ok = ok && step(c, c->api.cuDeviceGet(&dev, ordinal), "cuDeviceGet", why, size);
  ok = ok && step(c, c->api.cuDeviceGetName(c->model, (int)sizeof c->model, dev), "cuDeviceGetName", why, size);
  ok = ok && step(c, c->api.cuDeviceTotalMem(&c->memory, dev), "cuDeviceTotalMem", why, size);
  ok = ok && step(c, c->api.cuDevicePrimaryCtxRetain(&c->context, dev), "cuDevicePrimaryCtxRetain", why, size);
  if (ok) c->dev = dev;
  ok = ok && step(c, c->api.cuCtxSetCurrent(c->context), "cuCtxSetCurrent", why, size);
  ok = ok && step(c, c->api.cuStreamCreate(&c->stream, CU_STREAM_NONBLOCKING), "cuStreamCreate", why, size);
  if (ok) {
    c->cc_major = attribute(c, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, 0);
    c->cc_minor = attribute(c, CU_ATTR_COMPUTE_CAPABILITY_MINOR, 0);
    describe_target(c);
  }
  ok = ok && choose_arch(d, c, why, size);
  if (!ok) d->ops->close(d);
  return ok;
}

static void cuda_close(Device *d) {
  CudaDevice *c = d->state;
  if (!c) return;
  if (c->stream) c->api.cuStreamSynchronize(c->stream); /* nothing in flight reads what goes now */
  cuda_timings_free(c);
  cuda_stage_free(c);
  if (c->stream) c->api.cuStreamDestroy(c->stream);
  if (c->dev >= 0) c->api.cuDevicePrimaryCtxRelease(c->dev);
  if (c->tm) LLVMDisposeTargetMachine(c->tm);
  cuda_api_close(&c->api);
  free(c->timings);
  free(c);
  d->state = NULL;
}

static void *cuda_alloc(Device *d, size_t bytes) {
  CudaDevice *c = d->state;
  CUdeviceptr p = 0;
  if (!cuda_enter(d) || c->api.cuMemAlloc(&p, bytes ? bytes : 1) != CUDA_OK) return NULL;
  return (void *)(uintptr_t)p;
}

/* Kernels issued before may still use the memory: they finish first. */
static void cuda_free(Device *d, void *mem) {
  CudaDevice *c = d->state;
  if (!cuda_enter(d)) return;
  c->api.cuStreamSynchronize(c->stream);
  c->api.cuMemFree((CUdeviceptr)(uintptr_t)mem);
}

static const TargetDesc *cuda_target(Device *d) { return &((CudaDevice *)d->state)->desc; }

static void cuda_describe(Device *d, char *buf, size_t size) {
  const CudaDevice *c = d->state;
  snprintf(buf, size, "%s sm_%d%d %zu MiB", c->model, c->cc_major, c->cc_minor, c->memory >> 20);
}

static size_t cuda_memory_bytes(Device *d) { return ((CudaDevice *)d->state)->memory; }

const DeviceOps cuda_device_ops = {
  .open = cuda_open,
  .alloc = cuda_alloc,
  .free = cuda_free,
  .copy_in = cuda_copy_in,
  .copy_out = cuda_copy_out,
  .target = cuda_target,
  .describe = cuda_describe,
  .memory_bytes = cuda_memory_bytes,
  .compile = cuda_compile,
  .signature = cuda_signature,
  .launch = cuda_launch,
  .program_free = cuda_program_free,
  .synchronize = cuda_synchronize,
  .close = cuda_close,
  .host_memory = false,
};
