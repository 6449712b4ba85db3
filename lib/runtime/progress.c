/* progress.c — the progress line and the interrupt flag (progress.h). */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llvm/pipeline.h"
#include "runtime/progress.h"
#include "uopjit/uopjit.h"

enum { SHOW_EVERY_MS = 100 };

/* Process-wide, as a signal is: a SIGINT handler sets it. */
static atomic_bool interrupted;
_Static_assert(ATOMIC_BOOL_LOCK_FREE == 2, "uj_interrupt must be lock-free to be async-signal-safe");

void uj_interrupt(bool on) { atomic_store(&interrupted, on); } /* lock-free: safe in a signal handler */
bool interrupt_requested(void) { return atomic_load(&interrupted); }

/* Whether lines may be shown: UJ_PROGRESS, else a terminal without UJ_DEBUG. */
static bool progress_wanted(void) {
  const char *v = getenv("UJ_PROGRESS");
  if (v && *v) return strcmp(v, "0") != 0;
  return isatty(fileno(stderr)) && pipeline_debug_level() == 0;
}

void progress_begin(Progress *p) { *p = (Progress){pipeline_now_ms(), 0}; }

void progress_show(Progress *p, const char *fmt, ...) {
  double now = pipeline_now_ms();
  if (now - p->start_ms < PROGRESS_AFTER_MS || (p->shown_ms && now - p->shown_ms < SHOW_EVERY_MS)) return;
  if (!p->shown_ms && !progress_wanted()) {
    p->start_ms = now + 1e12; /* never: asked once */
    return;
  }
  char text[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\r\033[Kuopjit: %s, %.1f s", text, (now - p->start_ms) / 1e3);
  fflush(stderr);
  p->shown_ms = now;
}

void progress_end(Progress *p) {
  if (!p->shown_ms) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->shown_ms = 0;
}
