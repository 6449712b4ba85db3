/* hash.h — FNV-1a over bytes, the one byte hash of the code base: interned
 * strings, parser references, cache keys (program, BEAM and disk caches).
 * In: a running hash (start from FNV_OFFSET) and bytes. Out: the hash.
 * Not for anything an adversary chooses to collide: every table that uses
 * it compares the keys themselves too. */
#ifndef UJ_UOP_HASH_H
#define UJ_UOP_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

/* The string and its terminating NUL, so "ab","c" and "a","bc" differ. */
static inline uint64_t fnv1a_str(uint64_t h, const char *s) { return fnv1a(h, s, strlen(s) + 1); }

#endif
