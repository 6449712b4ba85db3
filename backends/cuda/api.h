/* api.h — the part of the CUDA driver API uopjit calls, declared here and
 * opened at run time, so the build needs neither cuda.h nor libcuda.
 *
 * In: the driver library's path (UJ_CUDA_LIBRARY, else "libcuda.so.1").
 * Out: a CudaApi, a table of the driver's functions, each asked of
 * cuGetProcAddress_v2 by its base name at the ABI of CUDA 12.0 (so
 * "cuMemAlloc" is cuMemAlloc_v2: a dlsym of the plain name gives the
 * legacy 32-bit one; shared/LLVM-NOTES.md). The types, attributes and
 * options below are the driver's ABI, numbered as cuda.h numbers them;
 * test_cuda checks them against cuda.h where one is installed. */
#ifndef UJ_CUDA_API_H
#define UJ_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;             /* 0: CUDA_OK */
typedef int CUdevice;
typedef uint64_t CUdeviceptr;     /* a device address, 64 bits on every 64-bit host */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#include "cuda/api_constants.h"

#define CUDA_API_ENUM(ours, theirs, value) ours = value,
enum { CUDA_API_CONSTANTS(CUDA_API_ENUM) };
#undef CUDA_API_ENUM

enum { CUDA_API_VERSION = 12000 }; /* the ABI asked for; an older driver is refused */

/* The driver's functions, by base name (the X-macro keeps the table, the
 * names asked for and the checks in one list). */
#define CUDA_API_FUNCTIONS(X)                                                                              \
  X(cuInit, (unsigned flags))                                                                              \
  X(cuDriverGetVersion, (int *version))                                                                    \
  X(cuGetErrorName, (CUresult e, const char **name))                                                       \
  X(cuGetErrorString, (CUresult e, const char **text))                                                     \
  X(cuDeviceGetCount, (int *count))                                                                        \
  X(cuDeviceGet, (CUdevice * dev, int ordinal))                                                            \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev))                                                  \
  X(cuDeviceGetAttribute, (int *value, int attribute, CUdevice dev))                                       \
  X(cuDeviceTotalMem, (size_t * bytes, CUdevice dev))                                                      \
  X(cuDevicePrimaryCtxRetain, (CUcontext * ctx, CUdevice dev))                                             \
  X(cuDevicePrimaryCtxRelease, (CUdevice dev))                                                             \
  X(cuCtxSetCurrent, (CUcontext ctx))                                                                      \
  X(cuMemAlloc, (CUdeviceptr * ptr, size_t bytes))                                                         \
  X(cuMemFree, (CUdeviceptr ptr))                                                                          \
  X(cuMemHostAlloc, (void **ptr, size_t bytes, unsigned flags))                                            \
  X(cuMemFreeHost, (void *ptr))                                                                            \
  X(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))                  \
  X(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))                        \
  X(cuStreamCreate, (CUstream * stream, unsigned flags))                                                   \
  X(cuStreamDestroy, (CUstream stream))                                                                    \
  X(cuStreamSynchronize, (CUstream stream))                                                                \
  X(cuEventCreate, (CUevent * event, unsigned flags))                                                      \
  X(cuEventRecord, (CUevent event, CUstream stream))                                                       \
  X(cuEventSynchronize, (CUevent event))                                                                   \
  X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end))                                           \
  X(cuEventDestroy, (CUevent event))                                                                       \
  X(cuModuleLoadDataEx, (CUmodule * mod, const void *image, unsigned n, int *options, void **values))      \
  X(cuModuleGetFunction, (CUfunction * fn, CUmodule mod, const char *name))                                \
  X(cuModuleUnload, (CUmodule mod))                                                                        \
  X(cuLaunchKernel, (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,        \
                     unsigned bz, unsigned shared, CUstream stream, void **params, void **extra))

typedef struct CudaApi {
  void *library; /* dlopen's handle */
#define CUDA_API_FIELD(name, args) CUresult (*name) args;
  CUDA_API_FUNCTIONS(CUDA_API_FIELD)
#undef CUDA_API_FIELD
} CudaApi;

/* Opens the driver and resolves every function; false with why (a
 * sentence: the library missing, a stub, a function the driver lacks)
 * written to why[size]. */
bool cuda_api_open(CudaApi *api, char *why, size_t size);
void cuda_api_close(CudaApi *api);
/* "CUDA_ERROR_X (its description)" for e, in buf. */
const char *cuda_error_text(const CudaApi *api, CUresult e, char *buf, size_t size);

#endif
