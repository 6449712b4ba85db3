/* cuda_abi.c — uopjit's numbers of the CUDA driver API (backends/cuda/
 * api_constants.h) against the toolkit's cuda.h, checked when this file
 * compiles (a build target where cuda.h is found; test/CMakeLists.txt).
 * A wrong number would read a wrong limit from a real GPU, and no test
 * without one could see it. */
#include <cuda.h>

#include "cuda/api_constants.h"

#define CUDA_ABI_CHECK(ours, theirs, value) _Static_assert((theirs) == (value), #ours " is " #theirs);
CUDA_API_CONSTANTS(CUDA_ABI_CHECK)
_Static_assert(sizeof(CUdeviceptr) == 8, "a device address is 64 bits");
_Static_assert(sizeof(CUresult) == sizeof(int) && sizeof(CUdevice) == sizeof(int), "CUresult and CUdevice are ints");

int cuda_abi_checked(void);
int cuda_abi_checked(void) { return 1; }
