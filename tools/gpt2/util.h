/* util.h — what several parts of gpt2 need: a whole file read, the
 * splitmix64 mixer (the batches' hash, the sampler's generator) and a
 * monotonic clock. */
#ifndef GPT2_UTIL_H
#define GPT2_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The whole file at path, malloc'd (a NUL after it), its size in *len;
 * NULL and "PATH: cannot read: why" (or "out of memory") in err. */
char *gpt2_read_file(const char *path, size_t *len, char *err, size_t errlen);
/* splitmix64's output for the state x (the state it steps to is
 * x + 0x9E3779B97F4A7C15). */
uint64_t gpt2_splitmix64(uint64_t x);
#define GPT2_SPLITMIX_STEP 0x9E3779B97F4A7C15u
/* Seconds on a monotonic clock. */
double gpt2_now_s(void);

#endif
