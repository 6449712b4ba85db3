/* bench_util.h — what every benchmark needs: a monotonic clock, a small
 * deterministic random generator (xorshift64, its state passed
 * explicitly), and the removal of a benchmark's temporary folder (its own
 * disk cache of kernels). Needs _POSIX_C_SOURCE 200809L. */
#ifndef UJ_BENCH_UTIL_H
#define UJ_BENCH_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* Removes path and, when it is a folder, everything in it (not following
 * links); what cannot be removed stays. */
static inline void bench_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  DIR *d = opendir(path);
  char child[4096];
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
      bench_remove_tree(child);
  if (d) closedir(d);
  rmdir(path);
}

#endif
