/* report.c — the tool's one way of reporting an error: a line on stderr.
 *
 * In: a printf format and its arguments. Out: "uopjit: MESSAGE\n" on
 * stderr. Apart from main.c so that the library of the tool's other files
 * (uopjit_toolcore, which the fuzz target of the tensor language links)
 * holds everything it calls. */
#include <stdarg.h>
#include <stdio.h>

#include "tool.h"

void report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("uopjit: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
