/* strbuf.h — a growing string that printf-style appends go to.
 *
 * In: formatted pieces. Out: buf (malloc'd, NUL-terminated once anything
 * was added; the caller frees it), len; `failed` once an allocation
 * failed, after which appends do nothing. */
#ifndef UJ_STRBUF_H
#define UJ_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct StrBuf {
  char *buf;
  size_t len, cap;
  bool failed;
} StrBuf;

void strbuf_add(StrBuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
