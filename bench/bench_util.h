/* bench_util.h — what every benchmark needs: a monotonic clock and a small
 * deterministic random generator (xorshift64, its state passed explicitly). */
#ifndef UJ_BENCH_UTIL_H
#define UJ_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

static inline double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static inline uint64_t rng_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

#endif
