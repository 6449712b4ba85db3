/* strbuf.c — appends to a growing string (strbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "uop/strbuf.h"

void strbuf_add(StrBuf *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (s->failed || n < 0) {
    s->failed = true;
    return;
  }
  if (s->len + (size_t)n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + (size_t)n + 1) cap *= 2;
    char *b = realloc(s->buf, cap);
    if (!b) {
      s->failed = true;
      return;
    }
    s->buf = b, s->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  s->len += (size_t)n;
}
