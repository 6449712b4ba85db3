/* test_pool.c — the CPU thread pool (backends/cpu/pool.h): every part of
 * a launch runs exactly once, launch after launch, and every thread of
 * the pool runs parts: with parts that wait until all parts have started
 * (no thread can take a second part while it waits in its first), a pool
 * of n threads must run its n parts on n distinct threads at once. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "cpu/pool.h"

enum { MAX_PARTS = 8, LAUNCHES = 2000 };
static const double WAIT_S = 20; /* a barrier still waiting after this has failed */

typedef struct Barrier {
  atomic_uint started;
  unsigned nparts;
  bool timed_out;
  pthread_t who[MAX_PARTS];
  atomic_uint runs[MAX_PARTS];
} Barrier;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void wait_all(void *arg, unsigned part, unsigned nparts) {
  Barrier *b = arg;
  b->who[part] = pthread_self();
  atomic_fetch_add(&b->runs[part], 1);
  atomic_fetch_add(&b->started, 1);
  double t0 = now_s();
  while (atomic_load(&b->started) < nparts)
    if (now_s() - t0 > WAIT_S) {
      b->timed_out = true;
      return;
    } else nanosleep(&(struct timespec){0, 100000}, NULL);
}

static unsigned distinct_threads(const Barrier *b) {
  unsigned n = 0;
  for (unsigned i = 0; i < b->nparts; i++) {
    bool seen = false;
    for (unsigned j = 0; j < i; j++) seen = seen || pthread_equal(b->who[i], b->who[j]);
    n += !seen;
  }
  return n;
}

static void test_every_thread(unsigned n) {
  Pool *p = pool_new(n);
  CHECK(p && pool_threads(p) == n, "a pool of %u threads", n);
  if (!p) return;
  for (int round = 0; round < 3; round++) {
    Barrier b = {.nparts = n};
    pool_run(p, wait_all, &b);
    CHECK(!b.timed_out, "%u threads: every part started within %.0f s", n, WAIT_S);
    for (unsigned i = 0; i < n; i++) CHECK(b.runs[i] == 1, "%u threads: part %u ran %u times", n, i, b.runs[i]);
    CHECK(distinct_threads(&b) == n, "%u threads: parts ran on %u distinct threads", n, distinct_threads(&b));
    CHECK(pool_last_threads(p) == n, "%u threads: the pool counts %u", n, pool_last_threads(p));
  }
  pool_free(p);
}

typedef struct Tally {
  atomic_uint runs[MAX_PARTS];
} Tally;

static void count_part(void *arg, unsigned part, unsigned nparts) {
  Tally *t = arg;
  if (part < nparts && part < MAX_PARTS) atomic_fetch_add(&t->runs[part], 1);
}

/* Launches in a row, as a kernel's are: each part once a launch, however
 * the threads race to claim them. */
static void test_launches(unsigned n) {
  Pool *p = pool_new(n);
  CHECK(p != NULL, "a pool of %u threads", n);
  if (!p) return;
  Tally t = {0};
  for (int i = 0; i < LAUNCHES; i++) {
    pool_run(p, count_part, &t);
    unsigned ran = pool_last_threads(p);
    CHECK(ran >= 1 && ran <= n, "%u threads: launch %d ran on %u threads", n, i, ran);
  }
  for (unsigned i = 0; i < n; i++)
    CHECK(t.runs[i] == LAUNCHES, "%u threads: part %u ran %u times in %d launches", n, i, t.runs[i], LAUNCHES);
  pool_free(p);
}

int main(void) {
  for (unsigned n = 1; n <= MAX_PARTS; n++) test_every_thread(n);
  test_launches(1);
  test_launches(2);
  test_launches(7);
  return check_report("test_pool");
}
