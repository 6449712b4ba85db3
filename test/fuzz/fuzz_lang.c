/* fuzz_lang.c — fuzz target: the tensor language of the uopjit tool
 * (docs/language.md; tools/uopjit/lang_*.c), lexed, parsed and run.
 *
 * In: any bytes, read as a program (up to the first NUL; longer than
 * FUZZ_LANG_MAX_LEN: declined). Each input runs in a fresh interpreter
 * and CPU session, its printed output thrown away (/dev/null), with the
 * session's tensors capped at FUZZ_LANG_MAX_ELEMENTS elements
 * (tensor_set_max_elements) so that no input allocates much memory or
 * runs long: `zeros(1 << 40)` is an error like any other. What must hold:
 * the program runs or stops at an error; no crash, no sanitizer report, no
 * leak (the interpreter and session free everything), at most one error
 * line reported, which names the place "<fuzz>:LINE:COL: ".
 *
 * Declined too: programs that name `save` or `load`, the two ways the
 * language reaches files (a generated path could be any file); the .npy
 * reader has its own target, fuzz_npy.c.
 *
 * The tool's report() (report.c) is replaced here by one that checks the
 * message and throws it away: the linker takes this definition and never
 * pulls report.o out of the uopjit_toolcore archive. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lang.h"
#include "tensor/tensor_impl.h"
#include "tool.h"

enum { FUZZ_LANG_MAX_LEN = 1 << 20, FUZZ_LANG_MAX_ELEMENTS = 1 << 16 };

/* How many lines report() printed for the input now running. The one
 * file-level variable here: report() has no context to count in. */
static int fuzz_reports;

void report(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (strncmp(msg, "<fuzz>:", 7) != 0) fuzz_fail("an error without its place: %s", msg);
  if (++fuzz_reports > 1) fuzz_fail("a second error reported: %s", msg);
}

/* Whether the text names a function that reads or writes a file. */
static bool reaches_files(const char *text) { return strstr(text, "save") || strstr(text, "load"); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_LANG_MAX_LEN) return -1;
  char *text = fuzz_text(data, size);
  if (reaches_files(text)) return free(text), -1;
  FILE *out = fopen("/dev/null", "w");
  if (!out) fuzz_fail("cannot open /dev/null");
  Lang L;
  if (!lang_init(&L, out, NULL)) fuzz_fail("no CPU session");
  tensor_set_max_elements(L.session, FUZZ_LANG_MAX_ELEMENTS);
  fuzz_reports = 0;
  bool ok = lang_run(&L, text, "<fuzz>");
  if (!ok && fuzz_reports != 1)
    fuzz_fail("the program failed and reported %d errors", fuzz_reports);
  if (ok && fuzz_reports != 0) fuzz_fail("the program ran and reported an error");
  lang_free(&L);
  fclose(out);
  free(text);
  return 0;
}
