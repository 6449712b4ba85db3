/* test_tensor_reuse.c — what a session reuses from one realize to the
 * next, and that reusing it changes no result.
 *
 * The device's pool of freed memory (runtime/device.h): freed memory
 * comes back for the next buffer of its size class, newest first, and
 * not for another class; the pool holds at most its byte limit and
 * RT_POOL_BLOCKS blocks, pushing out the oldest; a block bigger than the
 * limit is not kept; draining empties it. The session's schedule cache
 * (schedule.h): a graph realized again (the first result freed) takes its
 * schedule from the cache, writes into the freed output's memory, and
 * gives the same values; a copy from the cache is the schedule a session
 * without one makes, buffer ids and all, also when the ids moved on; an
 * input assigned new values gives the new result through the cached
 * schedule, while the tensor realized before keeps its own; the cache
 * holds at most SCHEDULE_CACHE_MAX schedules; `x = x + 1` assigned again
 * and again counts up. */
#include "tensor_util.h"

static RtBuffer *buffer(Device *d, size_t bytes) {
  RtBuffer *b = rt_buffer_new(d, bytes);
  CHECK(b != NULL, "rt_buffer_new(%zu): %s", bytes, uj_error(d->ctx));
  return b;
}

/* ---- the pool ---- */

static void test_pool_reuses(uj_session *s) {
  Device *d = s->device;
  device_pool_drain(d);
  RtBuffer *a = buffer(d, 1000);
  if (!a) return;
  void *mem = a->mem;
  rt_buffer_unref(a);
  CHECK(d->pool.n == 1 && d->pool.bytes == 1024, "pool after a free: %zu blocks, %zu bytes",
        d->pool.n, d->pool.bytes);
  RtBuffer *other = buffer(d, 5000); /* another class: new memory, the block stays */
  CHECK(other && other->mem != mem && d->pool.n == 1,
        "a 5000-byte buffer took the 1000-byte block");
  RtBuffer *b = buffer(d, 1010); /* 1000 and 1010 are one class (multiples of RT_POOL_GRAIN) */
  CHECK(b && b->mem == mem && b->bytes == 1010,
        "the freed block did not come back for its size class");
  CHECK(d->pool.n == 0 && d->pool.bytes == 0, "pool after taking: %zu blocks, %zu bytes", d->pool.n,
        d->pool.bytes);
  void *newest = other ? other->mem : NULL;
  rt_buffer_unref(b), rt_buffer_unref(other);
  RtBuffer *c = buffer(d, 5000);
  CHECK(c && c->mem == newest, "a 5000-byte buffer did not get the 5000-byte block");
  rt_buffer_unref(c);
  device_pool_drain(d);
  CHECK(d->pool.n == 0 && d->pool.bytes == 0, "drained pool: %zu blocks, %zu bytes", d->pool.n,
        d->pool.bytes);
}

static void test_pool_bounded(uj_session *s) {
  Device *d = s->device;
  size_t limit = d->pool.limit;
  CHECK(limit > 0 && limit <= (size_t)1 << 30, "pool limit %zu", limit);
  device_pool_drain(d);
  d->pool.limit = 4096;
  RtBuffer *bs[6];
  void *mem[6];
  for (int i = 0; i < 6; i++) bs[i] = buffer(d, 1024), mem[i] = bs[i] ? bs[i]->mem : NULL;
  for (int i = 0; i < 6; i++) rt_buffer_unref(bs[i]);
  CHECK(d->pool.n == 4 && d->pool.bytes == 4096, "pool of limit 4096 holds %zu blocks, %zu bytes",
        d->pool.n, d->pool.bytes);
  CHECK(d->pool.blocks[0].mem == mem[2] && d->pool.blocks[3].mem == mem[5],
        "the oldest blocks were not the ones pushed out");
  RtBuffer *big = buffer(d, 8192);
  rt_buffer_unref(big); /* bigger than the limit: freed, not kept */
  CHECK(d->pool.n == 4 && d->pool.bytes == 4096,
        "a block over the limit changed the pool: %zu blocks", d->pool.n);
  d->pool.limit = limit;
  RtBuffer *many[RT_POOL_BLOCKS + 8];
  for (int i = 0; i < RT_POOL_BLOCKS + 8; i++) many[i] = buffer(d, 64);
  for (int i = 0; i < RT_POOL_BLOCKS + 8; i++) rt_buffer_unref(many[i]);
  CHECK(d->pool.n == RT_POOL_BLOCKS, "pool holds %zu blocks, at most %d", d->pool.n,
        (int)RT_POOL_BLOCKS);
  device_pool_drain(d);
}

/* ---- the schedule cache ---- */

static uj_tensor *relu_fma(uj_tensor *x, uj_tensor *y) {
  return uj_tensor_unary(UJ_UN_RELU,
                         uj_tensor_binary(UJ_BIN_ADD, uj_tensor_binary(UJ_BIN_MUL, x, y), x));
}

static void *memory_of(uj_session *s, uj_tensor *t) {
  const UOp *b = schedule_view_buffer(uj_tensor_uop(t));
  RtBuffer *m = b ? buffer_table_get(&s->buffers, b->ints[0]) : NULL;
  return m ? m->mem : NULL;
}

static void test_realize_again(uj_session *s) {
  Rng r = {11};
  double *xv, *yv;
  uj_tensor *x = random_f32(s, &r, SHAPE(33, 65), -2, 2, false, &xv);
  uj_tensor *y = random_f32(s, &r, SHAPE(33, 65), -2, 2, false, &yv);
  double want[33 * 65];
  for (int i = 0; i < 33 * 65; i++) want[i] = fmax(0.0, (double)(float)(xv[i] * yv[i]) + xv[i]);
  CHECK(uj_tensor_realize((uj_tensor *[]){x, y}, 2) == UJ_OK, "inputs: %s", uj_session_error(s));
  size_t hits = schedule_cache_hits(s->schedules);
  Tol tol = {1e-6, 1e-6, false}; /* x*y+x may be one fused multiply-add */
  uj_tensor *a = relu_fma(x, y);
  expect(s, a, SHAPE(33, 65), want, tol, "relu(x*y+x)");
  double *once = values(s, a, tol, "relu(x*y+x)");
  void *first = memory_of(s, a);
  CHECK(schedule_cache_hits(s->schedules) == hits, "a first realize found a schedule");
  uj_tensor_free(a); /* its memory goes to the pool at the next realize */
  size_t entries = schedule_cache_size(s->schedules);
  uj_tensor *b = relu_fma(x, y); /* the same node as a's: known to be in a's buffer (b's graph reads it, so it lives) */
  double *twice = values(s, b, tol, "relu(x*y+x) again");
  CHECK(schedule_cache_hits(s->schedules) == hits && schedule_cache_size(s->schedules) == entries,
        "realizing the graph again scheduled it again");
  CHECK(once && twice && !memcmp(once, twice, sizeof want), "the second realize gave other values");
  CHECK(first && memory_of(s, b) == first, "the second output did not reuse the first's memory");
  free(xv), free(yv), free(once), free(twice);
}

/* The kernel list of a softmax down the columns (3 kernels, 2 temps in
 * slabs; along rows it is one kernel) from a session whose cache is on or
 * off, after `skip` other buffers. */
static char *softmax_text(bool cached, int skip, size_t *hits) {
  const char *why;
  uj_session *s = uj_session_new("CPU", &why);
  if (!s) return NULL;
  if (!cached) schedule_cache_free(s->schedules), s->schedules = NULL;
  uj_tensor *x = uj_tensor_arange(s, UJ_FLOAT32, 0, 24, 1);
  uj_tensor *sm = uj_tensor_softmax(uj_tensor_reshape(x, SHAPE(4, 6)), 0);
  char *text = uj_tensor_schedule_text(sm, "kernels"); /* a preview: gives its buffer ids back */
  free(text);
  for (int i = 0; i < skip; i++) tf32(s, SHAPE(2), (const float[]){1, 2}); /* a BUFFER each */
  text = uj_tensor_schedule_text(sm, "kernels");
  *hits = schedule_cache_hits(s->schedules);
  uj_session_free(s);
  return text;
}

static void test_cached_equals_fresh(void) {
  for (int skip = 0; skip < 3; skip += 2) {
    size_t hits_off, hits_on;
    char *fresh = softmax_text(false, skip, &hits_off),
         *cached = softmax_text(true, skip, &hits_on);
    CHECK(fresh && strstr(fresh, "3 kernels") == fresh, "softmax: %s", fresh ? fresh : "(null)");
    CHECK_STR(cached, fresh, "softmax's schedule from the cache, %d buffers later", skip);
    CHECK(hits_off == 0 && hits_on == 1, "cache hits: %zu without a cache, %zu with one", hits_off,
          hits_on);
    free(fresh), free(cached);
  }
}

static void test_input_assigned(uj_session *s) {
  uj_tensor *x = tf32(s, SHAPE(4), (const float[]){1, 2, 3, 4});
  uj_tensor *f = uj_tensor_binary_scalar(
      UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false), 1, false);
  expect(s, f, SHAPE(4), (const double[]){3, 5, 7, 9}, EXACT, "2x+1");
  size_t hits = schedule_cache_hits(s->schedules);
  CHECK(uj_tensor_assign(x, tf32(s, SHAPE(4), (const float[]){10, 20, 30, 40})) == UJ_OK,
        "assign: %s", uj_session_error(s));
  uj_tensor *g = uj_tensor_binary_scalar(
      UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false), 1, false);
  expect(s, g, SHAPE(4), (const double[]){21, 41, 61, 81}, EXACT, "2x+1 after x was assigned");
  CHECK(schedule_cache_hits(s->schedules) > hits, "2x+1 after the assignment was scheduled anew");
  expect(s, f, SHAPE(4), (const double[]){3, 5, 7, 9}, EXACT,
         "2x+1 realized before the assignment");
}

/* Graphs scheduled but not run (kernel counts): the cache never holds
 * more than SCHEDULE_CACHE_MAX; the one after that empties it. */
static void test_cache_bounded(uj_session *s) {
  uj_tensor *x = tf32(s, SHAPE(8), (const float[]){1, 2, 3, 4, 5, 6, 7, 8});
  size_t most = 0, n = SCHEDULE_CACHE_MAX + 10;
  for (size_t i = 0; i < n; i++) {
    uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, x, (double)i + 0.5, false);
    CHECK(uj_tensor_kernel_count(y) == 1, "x + %zu: %s", i, uj_session_error(s));
    size_t size = schedule_cache_size(s->schedules);
    most = size > most ? size : most;
    uj_tensor_free(y);
  }
  CHECK(most == SCHEDULE_CACHE_MAX, "the cache held at most %zu schedules, its bound is %d", most,
        (int)SCHEDULE_CACHE_MAX);
  CHECK(schedule_cache_size(s->schedules) < SCHEDULE_CACHE_MAX,
        "a full cache was not emptied: %zu entries", schedule_cache_size(s->schedules));
}

static void test_assign_counts_up(uj_session *s) {
  uj_tensor *t = uj_tensor_zeros(s, UJ_FLOAT32, SHAPE(4));
  for (int i = 0; i < 4; i++) {
    uj_tensor *u = uj_tensor_binary_scalar(UJ_BIN_ADD, t, 1, false);
    CHECK(uj_tensor_assign(t, u) == UJ_OK, "assign %d: %s", i, uj_session_error(s));
    uj_tensor_free(u);
  }
  expect(s, t, SHAPE(4), (const double[]){4, 4, 4, 4}, EXACT, "t = t + 1, 4 times");
}

/* A realize with nothing to compute (its tensors are buffers) still
 * collects what freed tensors held: a freed value is computed again, not
 * found known. bench_peers timed such a rebuilt graph at 0.003 ms when
 * the no-op realize skipped the collection. */
static void test_noop_realize_collects(uj_session *s) {
  uj_tensor *x = tf32(s, SHAPE(4), (const float[]){1, 2, 3, 4});
  uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, x, 1.0, false);
  CHECK(uj_tensor_realize(&y, 1) == UJ_OK, "x + 1: %s", uj_session_error(s));
  uj_tensor_free(y);
  CHECK(uj_tensor_realize(&x, 1) == UJ_OK, "realize x (a buffer): %s", uj_session_error(s));
  uj_tensor *again = uj_tensor_binary_scalar(UJ_BIN_ADD, x, 1.0, false);
  CHECK(uj_tensor_kernel_count(again) == 1, "the freed x + 1 was still known after a no-op realize (%zu kernels)",
        uj_tensor_kernel_count(again));
  uj_tensor_free(again), uj_tensor_free(x);
}

int main(void) {
  const char *why;
  uj_session *s = uj_session_new("CPU", &why);
  if (!s) return fprintf(stderr, "no CPU session: %s\n", why), 1;
  test_pool_reuses(s);
  test_pool_bounded(s);
  test_realize_again(s);
  test_cached_equals_fresh();
  test_input_assigned(s);
  test_cache_bounded(s);
  test_assign_counts_up(s);
  test_noop_realize_collects(s);
  uj_session_free(s);
  return check_report("test_tensor_reuse");
}
