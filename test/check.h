/* check.h — the assertions of the C test programs.
 *
 * CHECK(cond, fmt, ...) records a failure with file:line and a message, and
 * goes on; CHECK_STR compares strings and prints both sides. A test's main
 * ends with `return check_report("name");`, which prints
 * "name: N checks, M failed" and returns nonzero when any failed. */
#ifndef UJ_TEST_CHECK_H
#define UJ_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static long check_count, check_failed;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    check_count++;                                                         \
    if (!(cond)) {                                                         \
      check_failed++;                                                      \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
    }                                                                      \
  } while (0)

#define CHECK_STR(got, want, ...)                                          \
  do {                                                                     \
    const char *got_ = (got), *want_ = (want);                             \
    check_count++;                                                         \
    if (!got_ || !want_ || strcmp(got_, want_) != 0) {                     \
      check_failed++;                                                      \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fprintf(stderr, "\n  got:  %s\n  want: %s\n", got_ ? got_ : "(null)", \
              want_ ? want_ : "(null)");                                   \
    }                                                                      \
  } while (0)

static inline int check_report(const char *name) {
  printf("%s: %ld checks, %ld failed\n", name, check_count, check_failed);
  return check_failed != 0;
}

#endif
