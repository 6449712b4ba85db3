/* api.h — the part of the HSA runtime (ROCm) uopjit calls, declared here
 * and opened at run time, so the build needs neither hsa.h nor the
 * runtime.
 *
 * In: the runtime library's path (UJ_HSA_LIBRARY, else
 * "libhsa-runtime64.so.1"). Out: an HsaApi, a table of its functions
 * (dlsym by name: HSA has no versioned symbols). The handles, the queue
 * and the AQL kernel-dispatch packet are the HSA ABI (64-bit hosts); the
 * numbers are api_constants.h's, checked against hsa.h by test/hsa_abi.c. */
#ifndef UJ_AMD_API_H
#define UJ_AMD_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int hsa_status;
typedef struct HsaHandle {
  uint64_t handle;
} HsaHandle; /* hsa_agent_t, hsa_amd_memory_pool_t, hsa_signal_t, ...: one 64-bit handle each */
typedef HsaHandle HsaAgent, HsaPool, HsaSignal, HsaReader, HsaExecutable, HsaSymbol;

/* hsa_queue_t on a 64-bit host. */
typedef struct HsaQueue {
  uint32_t type, features;
  void *base_address; /* size packets of 64 bytes */
  HsaSignal doorbell_signal;
  uint32_t size, reserved1;
  uint64_t id;
} HsaQueue;

/* hsa_kernel_dispatch_packet_t: 64 bytes; sizes in work-items. */
typedef struct HsaDispatchPacket {
  uint16_t header, setup;
  uint16_t workgroup_size[3];
  uint16_t reserved0;
  uint32_t grid_size[3];
  uint32_t private_segment_size, group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  HsaSignal completion_signal;
} HsaDispatchPacket;

_Static_assert(sizeof(HsaQueue) == 40, "hsa_queue_t is 40 bytes");
_Static_assert(sizeof(HsaDispatchPacket) == 64, "an AQL packet is 64 bytes");

#include "amd/api_constants.h"

#define HSA_API_ENUM(ours, theirs, value) ours = value,
enum { HSA_API_CONSTANTS(HSA_API_ENUM) };
#undef HSA_API_ENUM

typedef hsa_status (*HsaAgentVisit)(HsaAgent agent, void *data);
typedef hsa_status (*HsaPoolVisit)(HsaPool pool, void *data);

/* The runtime's functions (return type, name, arguments). */
#define HSA_API_FUNCTIONS(X)                                                                                 \
  X(hsa_status, hsa_init, (void))                                                                          \
  X(hsa_status, hsa_shut_down, (void))                                                                     \
  X(hsa_status, hsa_status_string, (hsa_status s, const char **text))                                     \
  X(hsa_status, hsa_iterate_agents, (HsaAgentVisit visit, void *data))                                     \
  X(hsa_status, hsa_agent_get_info, (HsaAgent agent, int attribute, void *value))                          \
  X(hsa_status, hsa_amd_agent_iterate_memory_pools, (HsaAgent agent, HsaPoolVisit visit, void *data))      \
  X(hsa_status, hsa_amd_memory_pool_get_info, (HsaPool pool, int attribute, void *value))                  \
  X(hsa_status, hsa_amd_memory_pool_allocate, (HsaPool pool, size_t bytes, uint32_t flags, void **ptr))    \
  X(hsa_status, hsa_amd_memory_pool_free, (void *ptr))                                                     \
  X(hsa_status, hsa_amd_agents_allow_access, (uint32_t n, const HsaAgent *agents, const uint32_t *flags,   \
                                              const void *ptr))                                            \
  X(hsa_status, hsa_memory_copy, (void *dst, const void *src, size_t bytes))                               \
  X(hsa_status, hsa_queue_create, (HsaAgent agent, uint32_t size, uint32_t type, void *callback,           \
                                   void *data, uint32_t private_size, uint32_t group_size, HsaQueue **q))  \
  X(hsa_status, hsa_queue_destroy, (HsaQueue * q))                                                         \
  X(uint64_t, hsa_queue_add_write_index_screlease, (const HsaQueue *q, uint64_t n))                        \
  X(uint64_t, hsa_queue_load_read_index_scacquire, (const HsaQueue *q))                                    \
  X(hsa_status, hsa_signal_create, (int64_t initial, uint32_t n, const HsaAgent *consumers, HsaSignal *s)) \
  X(hsa_status, hsa_signal_destroy, (HsaSignal s))                                                         \
  X(void, hsa_signal_store_screlease, (HsaSignal s, int64_t value))                                        \
  X(void, hsa_signal_add_screlease, (HsaSignal s, int64_t value))                                          \
  X(int64_t, hsa_signal_wait_scacquire, (HsaSignal s, int condition, int64_t compare, uint64_t timeout,    \
                                         int wait_state))                                                  \
  X(hsa_status, hsa_code_object_reader_create_from_memory, (const void *code, size_t bytes, HsaReader *r)) \
  X(hsa_status, hsa_code_object_reader_destroy, (HsaReader r))                                             \
  X(hsa_status, hsa_executable_create_alt, (int profile, int rounding, const char *options,               \
                                            HsaExecutable *e))                                             \
  X(hsa_status, hsa_executable_load_agent_code_object, (HsaExecutable e, HsaAgent agent, HsaReader r,      \
                                                        const char *options, HsaHandle *loaded))           \
  X(hsa_status, hsa_executable_freeze, (HsaExecutable e, const char *options))                             \
  X(hsa_status, hsa_executable_destroy, (HsaExecutable e))                                                 \
  X(hsa_status, hsa_executable_get_symbol_by_name, (HsaExecutable e, const char *name,                     \
                                                    const HsaAgent *agent, HsaSymbol *s))                  \
  X(hsa_status, hsa_executable_symbol_get_info, (HsaSymbol s, int attribute, void *value))

typedef struct HsaApi {
  void *library;
#define HSA_API_FIELD(ret, name, args) ret(*name) args;
  HSA_API_FUNCTIONS(HSA_API_FIELD)
#undef HSA_API_FIELD
} HsaApi;

/* Opens the runtime and finds every function; false with why (a
 * sentence) in why[size]. */
bool hsa_api_open(HsaApi *api, char *why, size_t size);
void hsa_api_close(HsaApi *api);
/* The runtime's text for s ("HSA_STATUS_ERROR_...: ..."), in buf. */
const char *hsa_error_text(const HsaApi *api, hsa_status s, char *buf, size_t size);

#endif
