/* expect.h — checks of the tensor API's errors (test_tensor_errors.c,
 * test_tensor_limits.c): a call fails and the session's message holds
 * each string given (what the message must name: the op, shapes, axes). */
#ifndef UJ_TEST_EXPECT_H
#define UJ_TEST_EXPECT_H

#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "uopjit/tensor.h"

#define SHAPE(...)                                                                                 \
  (const int64_t[]){__VA_ARGS__},                                                                  \
      (unsigned)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* failed (a NULL or a status != UJ_OK) and the session's message holds
 * each of parts. */
static inline void expect_error(uj_session *s, bool failed, const char *call, const char *const *parts) {
  const char *msg = uj_session_error(s);
  CHECK(failed, "%s: did not fail", call);
  for (size_t i = 0; parts[i]; i++)
    CHECK(strstr(msg, parts[i]) != NULL, "%s: message '%s' lacks '%s'", call, msg, parts[i]);
}

/* The call fails (NULL) with a fresh message holding each string given. */
#define EXPECT_NULL(s, call, ...)                                                                  \
  do {                                                                                             \
    uj_session_clear_error(s);                                                                     \
    const void *got_ = (call);                                                                     \
    expect_error(s, got_ == NULL, #call, (const char *const[]){__VA_ARGS__, NULL});                \
  } while (0)

/* The call returns a status other than UJ_OK, with such a message. */
#define EXPECT_STATUS(s, call, ...)                                                                \
  do {                                                                                             \
    uj_session_clear_error(s);                                                                     \
    uj_status st_ = (call);                                                                        \
    expect_error(s, st_ != UJ_OK, #call, (const char *const[]){__VA_ARGS__, NULL});                \
  } while (0)

#endif
