/* prove.h — two expressions proved equal by an SMT solver (z3), for tests.
 *
 * In: two value nodes of one context whose only unknowns are DEFINE_VARs
 * (each in its range). Out: a verdict, and for a failure a line saying
 * where the two differ. The encoding follows lib/uop/alu.c exactly (see
 * prove.c and docs/symbolic.md, "Proved"), so PROVE_SAME means equal
 * words for every value of the variables, not just at sample points. */
#ifndef UJ_TEST_PROVE_H
#define UJ_TEST_PROVE_H

#include <stddef.h>

#include "uop/uop.h"

typedef enum ProveVerdict {
  PROVE_SAME,        /* equal for every value of the variables */
  PROVE_DIFFERENT,   /* z3 found a point; the evaluator confirms it */
  PROVE_MISMATCH,    /* z3 found a point the evaluator disagrees with: an encoding bug */
  PROVE_UNKNOWN,     /* z3 gave up within its resource limit, or its point went
                        through an op modelled as an unknown function (EXP2...) */
  PROVE_UNSUPPORTED, /* an op or dtype outside the encoding (vectors, memory) */
} ProveVerdict;

/* Counts over a run, for the report line. */
typedef struct ProveStats {
  unsigned long same, unknown, unsupported, differ; /* differ: DIFFERENT or MISMATCH */
} ProveStats;

/* z3's work limits (its deterministic "rlimit") per query: the golden
 * cases are few and must all be proved; random graphs are many. */
enum { PROVE_RLIMIT_GOLDEN = 4000000, PROVE_RLIMIT_RANDOM = 150000 };

/* Proves a == b within z3 work `rlimit`; counts the verdict in *stats
 * (may be NULL); writes a one-line explanation of any verdict but
 * PROVE_SAME to why. */
ProveVerdict prove_same(Ctx *ctx, const UOp *a, const UOp *b, unsigned rlimit, ProveStats *stats,
                        char *why, size_t size);

/* "N expressions proved equal by z3 (U unknown, S outside the encoding)" */
void prove_report(const char *test, const ProveStats *stats);

#endif
