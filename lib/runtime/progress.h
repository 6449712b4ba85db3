/* progress.h — long work: a one-line progress indicator on a terminal, and
 * the request to stop (uj_interrupt).
 *
 * In: a piece of work (a realize's kernels, a BEAM search) telling how far
 * it is. Out: once it has run PROGRESS_AFTER_MS, one line on stderr,
 * rewritten in place at most 10 times a second ("uopjit: kernel 37 of 109
 * (R_64_64), 3.1 s") and erased when the work ends; only where stderr is a
 * terminal (never in pipes or CI logs) and UJ_DEBUG is off (its lines
 * would tear it), unless UJ_PROGRESS says otherwise (0: never, 1: always).
 * And uj_interrupt's flag, which the work polls between kernels and
 * candidates. */
#ifndef UJ_RUNTIME_PROGRESS_H
#define UJ_RUNTIME_PROGRESS_H

#include <stdbool.h>

enum { PROGRESS_AFTER_MS = 2000 };

typedef struct Progress {
  double start_ms, shown_ms; /* shown_ms: when the line was last written; 0: never */
} Progress;

void progress_begin(Progress *p);
/* The line now, if it is due: fmt's text after "uopjit: ", then the time. */
void progress_show(Progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erases the line, if one was shown. */
void progress_end(Progress *p);

/* uj_interrupt(true) was called and not withdrawn. */
bool interrupt_requested(void);

#endif
