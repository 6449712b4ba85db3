/* api_constants.h — the CUDA driver's numbers that uopjit uses: our name,
 * cuda.h's name, the value. api.h makes them an enum; test/cuda_abi.c
 * checks each against cuda.h where the toolkit is installed, so a wrong
 * attribute number cannot read the wrong limit from a real GPU. No
 * types here: this file goes beside the real cuda.h in that check. */
#ifndef UJ_CUDA_API_CONSTANTS_H
#define UJ_CUDA_API_CONSTANTS_H

#define CUDA_API_CONSTANTS(X)                                                                      \
  X(CUDA_OK, CUDA_SUCCESS, 0)                                                                      \
  X(CUDA_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY, 34)                                                \
  X(CUDA_NO_DEVICE, CUDA_ERROR_NO_DEVICE, 100)                                                     \
  X(CUDA_INVALID_PTX, CUDA_ERROR_INVALID_PTX, 218)                                                 \
  X(CUDA_NOT_FOUND, CUDA_ERROR_NOT_FOUND, 500)                                                     \
  X(CU_ATTR_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                   \
  X(CU_ATTR_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)                               \
  X(CU_ATTR_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3)                               \
  X(CU_ATTR_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)                               \
  X(CU_ATTR_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5)                                 \
  X(CU_ATTR_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                                 \
  X(CU_ATTR_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7)                                 \
  X(CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)       \
  X(CU_ATTR_WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                                          \
  X(CU_ATTR_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                    \
  X(CU_ATTR_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38)                                  \
  X(CU_ATTR_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)            \
  X(CU_ATTR_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)            \
  X(CU_JIT_ERROR_LOG, CU_JIT_ERROR_LOG_BUFFER, 5)                                                  \
  X(CU_JIT_ERROR_LOG_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)                                 \
  X(CU_STREAM_NONBLOCKING, CU_STREAM_NON_BLOCKING, 1)                                              \
  X(CU_EVENT_PLAIN, CU_EVENT_DEFAULT, 0)                                                           \
  X(CU_HOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE, 1)

#endif
