/* util.c — a whole file, splitmix64, a clock (util.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *gpt2_read_file(const char *path, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno)), NULL;
  size_t n = 0, cap = 1 << 16;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - 1 - n, f);
    if (n < cap - 1) break; /* the end, or an error */
    char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap *= 2) : NULL;
    if (!grown) free(buf);
    buf = grown;
  }
  int error = ferror(f) ? errno : 0;
  fclose(f);
  if (buf && !error) return buf[n] = '\0', *len = n, buf;
  free(buf);
  if (!buf) return snprintf(err, errlen, "%s: out of memory", path), NULL;
  return snprintf(err, errlen, "%s: cannot read: %s", path, strerror(error)), NULL;
}

uint64_t gpt2_splitmix64(uint64_t x) {
  x += GPT2_SPLITMIX_STEP;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9u;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

double gpt2_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
