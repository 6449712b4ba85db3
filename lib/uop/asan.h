/* asan.h — AddressSanitizer's poisoning of memory a pool or free list
 * holds, or nothing when the build has no AddressSanitizer: memory used
 * after it went back is then reported as a use after free. */
#ifndef UJ_ASAN_H
#define UJ_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

#endif
