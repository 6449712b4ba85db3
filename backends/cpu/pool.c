/* pool.c — the thread pool (pool.h): pthreads waiting on a condition
 * variable for the next launch (a generation count), each running its
 * part; the caller runs part 0 and waits until the others are done. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu/pool.h"

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
  unsigned long generation; /* +1 per launch */
  unsigned pending;         /* workers still running this launch */
  unsigned ran;             /* workers that ran a part this launch */
  unsigned last_threads;
  bool stop;
  PoolFn fn;
  void *arg;
};

static void *worker_main(void *self) {
  Worker *w = self;
  Pool *p = w->pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
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
  p->fn = fn, p->arg = arg, p->pending = p->started, p->ran = 0;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  fn(arg, 0, p->nthreads);
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
