/* api_constants.h — the HSA runtime's numbers that uopjit uses: our name,
 * hsa.h's name, the value. api.h makes them an enum; test/hsa_abi.c
 * checks each against the runtime's headers where they are installed
 * (libhsa-runtime-dev). No types here: this file goes beside the real
 * hsa.h in that check. */
#ifndef UJ_AMD_API_CONSTANTS_H
#define UJ_AMD_API_CONSTANTS_H

#define HSA_API_CONSTANTS(X)                                                                             \
  X(HSA_OK, HSA_STATUS_SUCCESS, 0)                                                                       \
  X(HSA_BREAK, HSA_STATUS_INFO_BREAK, 1)                                                                 \
  X(HSA_OUT_OF_RESOURCES, HSA_STATUS_ERROR_OUT_OF_RESOURCES, 0x1008)                                     \
  X(HSA_AGENT_NAME, HSA_AGENT_INFO_NAME, 0)                                                              \
  X(HSA_AGENT_WAVEFRONT, HSA_AGENT_INFO_WAVEFRONT_SIZE, 6)                                               \
  X(HSA_AGENT_WORKGROUP_MAX_DIM, HSA_AGENT_INFO_WORKGROUP_MAX_DIM, 7)                                    \
  X(HSA_AGENT_WORKGROUP_MAX, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, 8)                                       \
  X(HSA_AGENT_QUEUE_MAX, HSA_AGENT_INFO_QUEUE_MAX_SIZE, 14)                                              \
  X(HSA_AGENT_DEVICE, HSA_AGENT_INFO_DEVICE, 17)                                                         \
  X(HSA_AGENT_CU_COUNT, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, 0xA002)                                   \
  X(HSA_DEVICE_GPU, HSA_DEVICE_TYPE_GPU, 1)                                                              \
  X(HSA_POOL_SEGMENT, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, 0)                                               \
  X(HSA_POOL_FLAGS, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, 1)                                            \
  X(HSA_POOL_SIZE, HSA_AMD_MEMORY_POOL_INFO_SIZE, 2)                                                     \
  X(HSA_POOL_ALLOC_ALLOWED, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, 5)                            \
  X(HSA_SEGMENT_GLOBAL, HSA_AMD_SEGMENT_GLOBAL, 0)                                                       \
  X(HSA_FLAG_KERNARG, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT, 1)                                   \
  X(HSA_FLAG_FINE, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED, 2)                                      \
  X(HSA_FLAG_COARSE, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED, 4)                                  \
  X(HSA_QUEUE_SINGLE, HSA_QUEUE_TYPE_SINGLE, 1)                                                          \
  X(HSA_PACKET_DISPATCH, HSA_PACKET_TYPE_KERNEL_DISPATCH, 2)                                             \
  X(HSA_PACKET_INVALID, HSA_PACKET_TYPE_INVALID, 1)                                                      \
  X(HSA_HEADER_TYPE, HSA_PACKET_HEADER_TYPE, 0)                                                          \
  X(HSA_HEADER_BARRIER, HSA_PACKET_HEADER_BARRIER, 8)                                                    \
  X(HSA_HEADER_ACQUIRE, HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE, 9)                                      \
  X(HSA_HEADER_RELEASE, HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE, 11)                                     \
  X(HSA_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM, 2)                                                         \
  X(HSA_SETUP_DIMENSIONS, HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS, 0)                                \
  X(HSA_CONDITION_LT, HSA_SIGNAL_CONDITION_LT, 2)                                                        \
  X(HSA_WAIT_BLOCKED, HSA_WAIT_STATE_BLOCKED, 0)                                                         \
  X(HSA_PROFILE_FULL_, HSA_PROFILE_FULL, 1)                                                              \
  X(HSA_ROUNDING_DEFAULT, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, 0)                                    \
  X(HSA_SYMBOL_KERNEL_OBJECT, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, 22)                              \
  X(HSA_SYMBOL_KERNARG_SIZE, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, 11)                 \
  X(HSA_SYMBOL_GROUP_SIZE, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, 13)                     \
  X(HSA_SYMBOL_PRIVATE_SIZE, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, 14)

#endif
