/* test_parallel.c — kernels split among threads: the optimizer's choice
 * of the parallel range (big kernels, one loop nest), and CPU kernels
 * with a `global` range run in parts by the thread pool, diffed with the
 * evaluator for 2, 3 and 7 threads (UJ_THREADS), bounds that do not
 * divide, bounds below the thread count, zero, variable bounds, int64
 * and uint32 counters. Parts go to whichever thread claims them first
 * (test_pool checks that every thread of a pool runs parts): a launch runs
 * on more than one thread within a few seconds of launches in a row. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <time.h>

#include "cpu/pool.h"
#include "jit_util.h"
#include "opt/opt.h"
#include "tensor/tensor_impl.h"

static const char *map_text(const char *t) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "%%n = (DEFINE_VAR:%s n 0 5000)\n%%i = (RANGE global 0 %%n)\n"
           "(SINK (END %%i (STORE (INDEX (PARAM:float32* 0) %%i) (ADD (MUL (LOAD (INDEX (PARAM:float32* 1) %%i)) "
           "(CONST:float32 2.0)) (CONST:float32 1.0)))))",
           t);
  return buf;
}

static const double SPREAD_S = 10; /* launches in a row until one runs on 2 threads */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs `run` again until its launch ran on more than one thread (a worker
 * that was asleep when a launch came may find every part taken; the next
 * launches find it spinning), for at most SPREAD_S; the most threads seen. */
static unsigned spread(Ctx *ctx, void (*run)(void *), void *arg) {
  unsigned most = 0;
  for (double t0 = now_s(); most < 2 && now_s() - t0 < SPREAD_S;) {
    run(arg);
    unsigned n = cpu_pool_last_threads(ctx);
    most = n > most ? n : most;
  }
  return most;
}

typedef struct MapRun {
  uj_program *p;
  JitBuffers *b;
} MapRun;

static void map_run(void *arg) {
  MapRun *m = arg;
  void *args[2] = {m->b->init[0], m->b->init[1]};
  CHECK(uj_run(m->p, args, 2, (int64_t[]){1001}, 1) == UJ_OK, "map runs again");
}

static void test_map(Ctx *ctx, unsigned threads, const char *t) {
  const UOp *k = uj_parse(ctx, map_text(t), "map");
  CHECK(k != NULL, "%s", uj_error(ctx));
  static float in[1001], out[1001];
  for (int i = 0; i < 1001; i++) in[i] = (float)i * 0.5f - 3, out[i] = -7;
  JitBuffers b = {2, {dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32)}, {1001, 1001}, {(unsigned char *)out, (unsigned char *)in}};
  const char *names[1] = {"n"};
  int64_t bounds[] = {0, 1, 2, 5, 999, 1000, 1001};
  for (size_t i = 0; k && i < sizeof bounds / sizeof *bounds; i++) {
    char what[64];
    snprintf(what, sizeof what, "%u threads, %s n = %lld", threads, t, (long long)bounds[i]);
    jit_vs_eval(ctx, k, &b, names, &bounds[i], 1, 0, what);
  }
  uj_program *p = k ? uj_compile(ctx, k, "map") : NULL;
  if (p) {
    unsigned most = spread(ctx, map_run, &(MapRun){p, &b});
    CHECK(most >= 2 && most <= threads, "%u threads, %s: launches ran on %u threads at most", threads, t, most);
    uj_program_free(p);
  }
}

/* A global range over rows, an inner loop and a reduction. */
static void test_nest(Ctx *ctx, unsigned threads) {
  const char *text =
      "%r = (RANGE global 0 (CONST:int32 37))\n%c = (RANGE loop 1 (CONST:int32 13))\n%k = (RANGE reduce 2 (CONST:int32 9))\n"
      "(SINK (END %r (END %c (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %r (CONST:int32 13)) %c))\n"
      "  (REDUCE ADD (MUL (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %r (CONST:int32 9)) %k)))\n"
      "                   (LOAD (INDEX (PARAM:float32* 2) (ADD (MUL %k (CONST:int32 13)) %c)))) %k)))))";
  const UOp *k = uj_parse(ctx, text, "nest");
  CHECK(k != NULL, "%s", uj_error(ctx));
  static float out[37 * 13], a[37 * 9], w[9 * 13];
  for (int i = 0; i < 37 * 9; i++) a[i] = (float)((i * 7) % 13) - 6;
  for (int i = 0; i < 9 * 13; i++) w[i] = (float)((i * 3) % 5) * 0.25f;
  JitBuffers b = {3, {dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32), dt_scalar(UJ_FLOAT32)}, {37 * 13, 37 * 9, 9 * 13},
                  {(unsigned char *)out, (unsigned char *)a, (unsigned char *)w}};
  char what[48];
  snprintf(what, sizeof what, "nest, %u threads", threads);
  if (k) jit_vs_eval(ctx, k, &b, NULL, NULL, 0, 0, what);
}

static void run_with_threads(unsigned threads) {
  char n[8];
  snprintf(n, sizeof n, "%u", threads);
  setenv("UJ_THREADS", n, 1); /* read when the context makes its pool */
  Ctx *ctx = uj_ctx_new();
  test_map(ctx, threads, "int32");
  test_map(ctx, threads, "int64");
  test_map(ctx, threads, "uint32");
  test_nest(ctx, threads);
  uj_ctx_free(ctx);
}

/* The optimizer: a big single loop nest gets a global range, a small one
 * or one with two nests does not; values are the serial ones. */
static void test_choice(void) {
  setenv("UJ_THREADS", "2", 1);
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *big = uj_tensor_rand(s, (int64_t[]){300, 200}, 2, 1), *small = uj_tensor_rand(s, (int64_t[]){10, 20}, 2, 2);
  uj_tensor *sm = uj_tensor_softmax(big, 1);
  char *text = uj_tensor_schedule_text(sm, "uops");
  CHECK(text && strstr(text, "(RANGE:int64 global 0 (CONST:int64 300))"), "softmax's rows are split:\n%s", text ? text : "");
  free(text);
  text = uj_tensor_schedule_text(uj_tensor_unary(UJ_UN_EXP, small), "uops");
  CHECK(text && !strstr(text, "global"), "a 200-element kernel stays serial:\n%s", text ? text : "");
  free(text);
  const UOp *two = uj_parse(s->ctx,
                            "%i = (RANGE loop 0 (CONST:int32 100000))\n%j = (RANGE loop 1 (CONST:int32 100000))\n"
                            "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (CONST:float32 1.0)))"
                            " (END %j (STORE (INDEX (PARAM:float32* 1) %j) (CONST:float32 2.0))))",
                            "two");
  CHECK(two && opt_kernel(s->ctx, two, &(OptTarget){.desc = target_desc_cpu(64)}) == two, "two loop nests: left alone");
  float got[300 * 200], want[300 * 200];
  CHECK(uj_tensor_to_host(sm, got, sizeof got) == UJ_OK, "%s", uj_session_error(s));
  CHECK(cpu_pool_last_threads(s->ctx) >= 1, "softmax ran through the pool"); /* on which threads: test_pool, test_map */
  uj_session_free(s);
  setenv("UJ_THREADS", "1", 1);
  s = uj_session_new(NULL, NULL);
  big = uj_tensor_rand(s, (int64_t[]){300, 200}, 2, 1);
  CHECK(uj_tensor_to_host(uj_tensor_softmax(big, 1), want, sizeof want) == UJ_OK, "%s", uj_session_error(s));
  CHECK(!memcmp(got, want, sizeof got), "2 threads give the serial values, bit for bit");
  uj_session_free(s);
}

int main(void) {
  run_with_threads(2);
  run_with_threads(3);
  run_with_threads(7);
  test_choice();
  return check_report("test_parallel");
}
