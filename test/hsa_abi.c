/* hsa_abi.c — uopjit's numbers of the HSA runtime (backends/amd/
 * api_constants.h) and its packet and queue layouts against the
 * runtime's own headers, checked when this file compiles (a build
 * target where hsa/hsa.h is found: libhsa-runtime-dev). */
#include <stddef.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include "amd/api_constants.h"

#define HSA_ABI_CHECK(ours, theirs, value) _Static_assert((theirs) == (value), #ours " is " #theirs);
HSA_API_CONSTANTS(HSA_ABI_CHECK)
_Static_assert(sizeof(hsa_kernel_dispatch_packet_t) == 64, "an AQL packet is 64 bytes");
_Static_assert(offsetof(hsa_kernel_dispatch_packet_t, grid_size_x) == 12, "grid sizes at 12");
_Static_assert(offsetof(hsa_kernel_dispatch_packet_t, kernel_object) == 32, "the kernel object at 32");
_Static_assert(offsetof(hsa_kernel_dispatch_packet_t, completion_signal) == 56, "the signal at 56");
_Static_assert(sizeof(hsa_queue_t) == 40 && offsetof(hsa_queue_t, size) == 24, "hsa_queue_t");

int hsa_abi_checked(void);
int hsa_abi_checked(void) { return 1; }
