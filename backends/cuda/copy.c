/* copy.c — copies between the host and a CUDA device (device.h's
 * copy_in/copy_out), on the device's one stream, so each waits for the
 * kernels issued before it.
 *
 * In: host memory (pageable: the user's) and a device address. Small
 * copies go straight from the host's memory (the driver stages them);
 * copies of CUDA_STAGE_MIN bytes or more go through two pinned buffers in
 * turn, so the host's memcpy into one overlaps the DMA out of the other.
 * A copy in returns once the host's memory was read (the DMA may still
 * run: later work on the stream waits for it); a copy out returns with
 * the data in host memory. */
#include <string.h>

#include "cuda/cuda_device.h"

/* The pinned buffers and their events, made on the first large copy. */
static bool stage_ready(Device *d, CudaDevice *c) {
  for (int k = 0; k < 2; k++) {
    if (c->stage[k]) continue;
    if (!cuda_ok(d, c->api.cuMemHostAlloc(&c->stage[k], CUDA_STAGE_BYTES, CU_HOSTALLOC_PORTABLE),
                 "cannot allocate pinned staging memory"))
      return false;
    if (!cuda_ok(d, c->api.cuEventCreate(&c->stage_done[k], CU_EVENT_PLAIN), "cannot create an event")) return false;
  }
  return true;
}

/* Waits until the DMA that last used pinned buffer k is done (an event
 * never recorded is done). */
static bool stage_wait(Device *d, CudaDevice *c, int k) {
  return cuda_ok(d, c->api.cuEventSynchronize(c->stage_done[k]), "a copy failed");
}

static bool stage_issued(Device *d, CudaDevice *c, int k) {
  return cuda_ok(d, c->api.cuEventRecord(c->stage_done[k], c->stream), "cannot record an event");
}

/* The bytes of the chunk at off of a copy of bytes. */
static size_t chunk_bytes(size_t bytes, size_t off) { return bytes - off < CUDA_STAGE_BYTES ? bytes - off : CUDA_STAGE_BYTES; }

void cuda_stage_free(CudaDevice *c) {
  for (int k = 0; k < 2; k++) {
    if (c->stage_done[k]) c->api.cuEventDestroy(c->stage_done[k]);
    if (c->stage[k]) c->api.cuMemFreeHost(c->stage[k]);
    c->stage[k] = NULL, c->stage_done[k] = NULL;
  }
}

bool cuda_copy_in(Device *d, void *dst, const void *host, size_t bytes) {
  CudaDevice *c = d->state;
  CUdeviceptr to = (CUdeviceptr)(uintptr_t)dst;
  if (!cuda_enter(d)) return false;
  if (bytes < CUDA_STAGE_MIN)
    return bytes == 0 || cuda_ok(d, c->api.cuMemcpyHtoDAsync(to, host, bytes, c->stream), "copy to the device");
  if (!stage_ready(d, c)) return false;
  for (size_t off = 0, i = 0; off < bytes; off += CUDA_STAGE_BYTES, i++) {
    int k = (int)(i % 2);
    size_t n = chunk_bytes(bytes, off);
    if (!stage_wait(d, c, k)) return false;
    memcpy(c->stage[k], (const char *)host + off, n);
    if (!cuda_ok(d, c->api.cuMemcpyHtoDAsync(to + off, c->stage[k], n, c->stream), "copy to the device")) return false;
    if (!stage_issued(d, c, k)) return false;
  }
  return true;
}

/* Chunk i of a copy out: issued into pinned buffer i % 2. */
static bool out_issue(Device *d, CudaDevice *c, CUdeviceptr from, size_t bytes, size_t i) {
  int k = (int)(i % 2);
  size_t off = i * CUDA_STAGE_BYTES, n = chunk_bytes(bytes, off);
  return stage_wait(d, c, k) &&
         cuda_ok(d, c->api.cuMemcpyDtoHAsync(c->stage[k], from + off, n, c->stream), "copy from the device") &&
         stage_issued(d, c, k);
}

/* Chunk i, arrived in pinned buffer i % 2, to the host's memory. */
static bool out_finish(Device *d, CudaDevice *c, void *host, size_t bytes, size_t i) {
  int k = (int)(i % 2);
  size_t off = i * CUDA_STAGE_BYTES, n = chunk_bytes(bytes, off);
  if (!stage_wait(d, c, k)) return false;
  memcpy((char *)host + off, c->stage[k], n);
  return true;
}

bool cuda_copy_out(Device *d, void *host, const void *src, size_t bytes) {
  CudaDevice *c = d->state;
  CUdeviceptr from = (CUdeviceptr)(uintptr_t)src;
  if (!cuda_enter(d)) return false;
  if (bytes < CUDA_STAGE_MIN)
    return bytes == 0 || (cuda_ok(d, c->api.cuMemcpyDtoHAsync(host, from, bytes, c->stream), "copy from the device") &&
                          cuda_ok(d, c->api.cuStreamSynchronize(c->stream), "a kernel or copy failed"));
  if (!stage_ready(d, c)) return false;
  size_t chunks = (bytes + CUDA_STAGE_BYTES - 1) / CUDA_STAGE_BYTES;
  bool ok = out_issue(d, c, from, bytes, 0);
  for (size_t i = 1; ok && i < chunks; i++) ok = out_issue(d, c, from, bytes, i) && out_finish(d, c, host, bytes, i - 1);
  return ok && out_finish(d, c, host, bytes, chunks - 1);
}
