/* pool.h — the CPU backend's thread pool: workers made once, woken for
 * each parallel launch, never created per launch.
 *
 * In: a function of (arg, part, nparts) and a part count of one per
 * thread. Out: every part run once, each by whichever thread claims it
 * first (the caller and the workers awake: a worker that wakes late finds
 * its share taken); pool_run returns when all are done. */
#ifndef UJ_CPU_POOL_H
#define UJ_CPU_POOL_H

#include <stdbool.h>

#include "uop/uop.h"

typedef struct Pool Pool;
typedef void (*PoolFn)(void *arg, unsigned part, unsigned nparts);

/* nthreads in all (the caller and nthreads - 1 workers); NULL when the
 * threads cannot be made. */
Pool *pool_new(unsigned nthreads);
void pool_free(Pool *p);
unsigned pool_threads(const Pool *p);
/* Runs fn for parts 0 .. pool_threads - 1. */
void pool_run(Pool *p, PoolFn fn, void *arg);
/* How many threads ran parts in the last pool_run (tests). */
unsigned pool_last_threads(const Pool *p);
/* The thread count for new pools: UJ_THREADS if set (1 .. 256), else the
 * cores online. */
unsigned pool_default_threads(void);

/* How many threads ran parts of the last parallel launch of ctx's CPU
 * JIT (program.c; 0 before the first): for tests. */
unsigned cpu_pool_last_threads(Ctx *ctx);

#endif
