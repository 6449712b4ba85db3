/* pool.c — the thread pool (pool.h): pthreads waiting for the next
 * launch (a generation count); the caller and the workers then claim the
 * launch's parts one at a time until none is left, and the caller waits
 * until all are done. Claiming, not a part per thread: a worker asleep
 * when the launch came may wake late (or get no core), and the caller
 * then runs its part instead of waiting for it; sgemm 256 on 2 threads,
 * run after a pause, took 0.39 ms where one thread took 0.19. A worker
 * that finished spins for POOL_SPIN_NS on the generation before it sleeps
 * on a condition variable, and so does the caller on parts still running,
 * so that launches in a row find the threads awake. Workers are pinned
 * off the caller's CPU (pin_off_caller). */
#define _GNU_SOURCE /* sched_getcpu, pthread_setaffinity_np */

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu/pool.h"

enum { POOL_SPIN_NS = 200 * 1000, POOL_SPIN_CHECK = 64 /* pauses between clock reads */ };

typedef struct Worker {
  struct Pool *pool;
  pthread_t thread;
} Worker;

struct Pool {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  unsigned nthreads;
  Worker *workers; /* nthreads - 1 */
  unsigned started;
  atomic_ulong generation; /* +1 per launch; written under lock, read spinning without */
  atomic_ullong claim;     /* generation << 32 | the next unclaimed part of that launch */
  atomic_uint finished;    /* parts of this launch done */
  atomic_uint ran;         /* threads that ran a part of this launch */
  unsigned last_threads;
  int pinned_off;          /* the CPU the workers are pinned off: the caller's when last seen */
  atomic_bool stop;
  PoolFn fn;
  void *arg;
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spins while waiting(p, seen) holds, for at most POOL_SPIN_NS; the
 * caller then sleeps on a condition variable if it still must. */
static void spin_while(Pool *p, bool (*waiting)(Pool *, unsigned long), unsigned long seen) {
  int64_t end = now_ns() + POOL_SPIN_NS;
  for (unsigned i = 1; waiting(p, seen); i++)
    if (i % POOL_SPIN_CHECK == 0 && now_ns() > end) return;
    else cpu_relax();
}

/* A worker: no launch after the one it saw, and the pool runs on. */
static bool no_launch(Pool *p, unsigned long seen) {
  return atomic_load_explicit(&p->generation, memory_order_acquire) == seen && !atomic_load(&p->stop);
}

/* The caller: parts not done yet. */
static bool parts_running(Pool *p, unsigned long unused) {
  (void)unused;
  return atomic_load_explicit(&p->finished, memory_order_acquire) != p->nthreads;
}

/* Claims and runs parts of launch generation until none is left (none at
 * all when that launch is over: its tag is gone from claim); the thread
 * that finishes the last part wakes the caller. */
static void run_parts(Pool *p, unsigned long generation, PoolFn fn, void *arg) {
  const unsigned long long tag = (unsigned long long)(uint32_t)generation << 32;
  unsigned long long c = atomic_load(&p->claim);
  bool counted = false;
  while ((c >> 32 << 32) == tag && (uint32_t)c < p->nthreads) {
    if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) continue;
    if (!counted) counted = true, atomic_fetch_add(&p->ran, 1);
    fn(arg, (uint32_t)c, p->nthreads);
    if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 == p->nthreads) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->lock);
    }
    c = atomic_load(&p->claim);
  }
}

/* Pins a worker to one CPU, the part-th of those the process may run on
 * other than `avoid` (the caller's CPU), round robin. This VM shares no
 * cache between its CPUs (as far as the kernel can tell) and shows an
 * idle CPU as preempted, so the scheduler woke a sleeping worker on the
 * caller's CPU, where it waited until the caller was done: sgemm 512 on
 * 2 threads after a pause ran as on one (1.3 ms); pinned, the worker woke
 * in about 60 us on its own CPU (0.68 ms). */
static void pin_worker(pthread_t thread, unsigned part, int avoid) {
#ifdef __linux__
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof allowed, &allowed)) return;
  if (avoid >= 0 && avoid < CPU_SETSIZE && CPU_COUNT(&allowed) > 1) CPU_CLR(avoid, &allowed);
  int n = CPU_COUNT(&allowed), k = (int)((part - 1) % (unsigned)n);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &allowed) && k-- == 0) {
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pthread_setaffinity_np(thread, sizeof one, &one);
      return;
    }
#else
  (void)thread, (void)part, (void)avoid;
#endif
}

/* The workers pinned off the caller's CPU again when the caller moved
 * since (the scheduler moves an unpinned thread; on a worker's CPU the
 * two took turns while the other CPU idled: layernorm 8192 x 768 on 2
 * threads ran on 1.0-1.2 threads' worth of CPU). sched_getcpu is a vDSO
 * read; the pins change only when the caller moved. */
static void pin_off_caller(Pool *p) {
#ifdef __linux__
  int here = sched_getcpu();
  if (here < 0 || here == p->pinned_off) return;
  p->pinned_off = here;
  for (unsigned i = 0; i < p->started; i++) pin_worker(p->workers[i].thread, i + 1, here);
#else
  (void)p;
#endif
}

static void *worker_main(void *self) {
  Worker *w = self;
  Pool *p = w->pool;
  unsigned long seen = 0;
  for (;;) {
    spin_while(p, no_launch, seen);
    pthread_mutex_lock(&p->lock);
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->lock);
    if (p->stop) break;
    seen = p->generation;
    PoolFn fn = p->fn;
    void *arg = p->arg;
    pthread_mutex_unlock(&p->lock);
    run_parts(p, seen, fn, arg);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

Pool *pool_new(unsigned nthreads) {
  Pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nthreads = nthreads ? nthreads : 1;
  p->workers = calloc(p->nthreads, sizeof *p->workers);
  if (!p->workers || pthread_mutex_init(&p->lock, NULL) || pthread_cond_init(&p->wake, NULL) ||
      pthread_cond_init(&p->done, NULL))
    return free(p->workers), free(p), NULL;
  p->pinned_off = -1;
  /* the workers take no signals: a program's SIGINT (the prompt's Ctrl-C)
   * goes to a thread of its own, which a read at a prompt then sees */
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  for (unsigned i = 0; i + 1 < p->nthreads; i++) {
    Worker *w = &p->workers[i];
    *w = (Worker){p, 0};
    if (pthread_create(&w->thread, NULL, worker_main, w)) {
      pthread_sigmask(SIG_SETMASK, &before, NULL);
      pool_free(p);
      return NULL;
    }
    p->started++;
  }
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  pin_off_caller(p);
  return p;
}

void pool_free(Pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->lock);
  free(p->workers);
  free(p);
}

unsigned pool_threads(const Pool *p) { return p->nthreads; }
unsigned pool_last_threads(const Pool *p) { return p->last_threads; }

void pool_run(Pool *p, PoolFn fn, void *arg) {
  pin_off_caller(p);
  pthread_mutex_lock(&p->lock);
  p->fn = fn, p->arg = arg;
  atomic_store(&p->finished, 0), atomic_store(&p->ran, 0);
  unsigned long generation = atomic_load(&p->generation) + 1;
  atomic_store(&p->claim, (unsigned long long)(uint32_t)generation << 32);
  atomic_store(&p->generation, generation);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  run_parts(p, generation, fn, arg);
  spin_while(p, parts_running, 0);
  pthread_mutex_lock(&p->lock);
  while (parts_running(p, 0)) pthread_cond_wait(&p->done, &p->lock);
  p->last_threads = atomic_load(&p->ran);
  pthread_mutex_unlock(&p->lock);
}

unsigned pool_default_threads(void) {
  const char *env = getenv("UJ_THREADS");
  long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}
