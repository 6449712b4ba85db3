/* api.c — opening the CUDA driver at run time (api.h): dlopen of the
 * library, cuGetProcAddress_v2 for each function at the ABI of CUDA 12.0,
 * and error names through the driver's own cuGetErrorName. */
#define _DEFAULT_SOURCE /* dlopen's RTLD_LOCAL under C11 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/api.h"
#include "runtime/driver.h"

typedef CUresult (*GetProcAddress)(const char *symbol, void **fn, int version, uint64_t flags, int *status);

static bool resolve(GetProcAddress get, const char *name, void **fn, char *why, size_t size) {
  int status = 0;
  CUresult e = get(name, fn, CUDA_API_VERSION, 0, &status);
  if (e == CUDA_OK && *fn) return true;
  snprintf(why, size, "the driver has no %s (cuGetProcAddress: error %d)", name, e);
  return false;
}

bool cuda_api_open(CudaApi *api, char *why, size_t size) {
  *api = (CudaApi){0};
  const char *path;
  if (!(api->library = driver_open("UJ_CUDA_LIBRARY", "libcuda.so.1", "driver library", &path, why, size))) return false;
  GetProcAddress get = NULL;
  void *sym = dlsym(api->library, "cuGetProcAddress_v2");
  memcpy(&get, &sym, sizeof get); /* an object pointer to a function pointer: POSIX guarantees it */
  if (!get) {
    snprintf(why, size, "%s has no cuGetProcAddress_v2: a driver older than CUDA 12.0", path);
    cuda_api_close(api);
    return false;
  }
  bool ok = true;
#define CUDA_API_RESOLVE(name, args) \
  ok = ok && resolve(get, #name, (void **)&api->name, why, size);
  CUDA_API_FUNCTIONS(CUDA_API_RESOLVE)
#undef CUDA_API_RESOLVE
  if (!ok) cuda_api_close(api);
  return ok;
}

void cuda_api_close(CudaApi *api) {
  if (api->library) dlclose(api->library);
  *api = (CudaApi){0};
}

const char *cuda_error_text(const CudaApi *api, CUresult e, char *buf, size_t size) {
  const char *name = NULL, *text = NULL;
  if (api->cuGetErrorName) api->cuGetErrorName(e, &name);
  if (api->cuGetErrorString) api->cuGetErrorString(e, &text);
  if (name && text) snprintf(buf, size, "%s (%s)", name, text);
  else snprintf(buf, size, "CUDA error %d", e);
  return buf;
}
