/* pool.c — the thread pool (pool.h): pthreads waiting for the next
 * launch (a generation count), each running its part; the caller runs
 * part 0 and waits until the others are done. A worker that finished
 * spins for POOL_SPIN_NS on the generation before it sleeps on a
 * condition variable, and so does the caller on the workers still
 * running: on this VM a futex wake reached a sleeping thread only after
 * tens to hundreds of microseconds, a share of a 1 ms kernel that left a
 * thread of two idle (sgemm 512 on 2 threads: 1.4 threads busy). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu/pool.h"

enum { POOL_SPIN_NS = 200 * 1000, POOL_SPIN_CHECK = 64 /* pauses between clock reads */ };

typedef struct Worker {
  struct Pool *pool;
  pthread_t thread;
  unsigned part;
} Worker;

struct Pool {
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  unsigned nthreads;
  Worker *workers; /* nthreads - 1 */
  unsigned started;
  atomic_ulong generation; /* +1 per launch; written under lock, read spinning without */
  atomic_uint pending;     /* workers still running this launch (likewise) */
  unsigned ran;            /* workers that ran a part this launch */
  unsigned last_threads;
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

/* The caller: workers still running their parts. */
static bool parts_running(Pool *p, unsigned long unused) {
  (void)unused;
  return atomic_load_explicit(&p->pending, memory_order_acquire) != 0;
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
    fn(arg, w->part, p->nthreads);
    pthread_mutex_lock(&p->lock);
    p->ran++;
    if (--p->pending == 0) pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->lock);
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
  for (unsigned i = 0; i + 1 < p->nthreads; i++) {
    Worker *w = &p->workers[i];
    *w = (Worker){p, 0, i + 1};
    if (pthread_create(&w->thread, NULL, worker_main, w)) {
      pool_free(p);
      return NULL;
    }
    p->started++;
  }
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
  pthread_mutex_lock(&p->lock);
  p->fn = fn, p->arg = arg, p->ran = 0;
  atomic_store(&p->pending, p->started);
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  fn(arg, 0, p->nthreads);
  spin_while(p, parts_running, 0);
  pthread_mutex_lock(&p->lock);
  while (p->pending) pthread_cond_wait(&p->done, &p->lock);
  p->last_threads = 1 + p->ran;
  pthread_mutex_unlock(&p->lock);
}

unsigned pool_default_threads(void) {
  const char *env = getenv("UJ_THREADS");
  long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}
