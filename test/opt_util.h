/* opt_util.h — what the optimizer's tests share: buffers of small exact
 * values or of values whose sums round, and the check that an optimized
 * kernel computes what the kernel before it did (the JIT and the
 * evaluator on it, the evaluator on both, bit for bit). */
#ifndef UJ_TEST_OPT_UTIL_H
#define UJ_TEST_OPT_UTIL_H

#include <math.h>
#include <stdlib.h>

#include "jit_util.h"

/* Fills slot memory with small values of dtype d (exact products). */
static inline unsigned char *fill(DType d, size_t count, int seed) {
  size_t size = elem_bytes(d);
  unsigned char *p = calloc(count + 1, size);
  for (size_t i = 0; i < count; i++) {
    double v = (double)((int)((i * 7 + (size_t)seed * 13) % 11) - 5) * (dt_is_float(d) ? 0.375 : 1);
    uint64_t w = dt_is_float(d) ? word_from_double((uj_scalar)d.scalar, v) : word_from_int((uj_scalar)d.scalar, (int64_t)v);
    mem_write(p + i * size, d, &w);
  }
  return p;
}

/* up, an optimized k: the JIT on up agrees with the evaluator on it
 * (within ulps: EXP2, LOG2 and SIN are the JIT's polynomials, within an
 * ulp or two of libm's), and the evaluator on up with the evaluator on k,
 * bit for bit, on buffers b (slot 0 the output); frees b's memory. */
static inline void check_same_buffers_ulps(Ctx *ctx, const UOp *k, const UOp *up, JitBuffers *b, uint64_t ulps,
                                           const char *what) {
  if (up) {
    jit_vs_eval(ctx, up, b, NULL, NULL, 0, ulps, what); /* the JIT on the optimized kernel, the evaluator on it */
    size_t bytes = b->count[0] * elem_bytes(b->dtype[0]);
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    memcpy(want, b->init[0], bytes), memcpy(got, b->init[0], bytes);
    for (int pass = 0; pass < 2; pass++) {
      Eval *ev = eval_new(ctx);
      eval_bind_param(ev, 0, pass ? got : want, bytes);
      for (int s = 1; s < b->n; s++) eval_bind_param(ev, s, b->init[s], b->count[s] * elem_bytes(b->dtype[s]));
      CHECK(eval_run(ev, pass ? up : k), "%s: %s", what, uj_error(ctx));
      eval_free(ev);
    }
    CHECK(!memcmp(want, got, bytes), "%s: the optimized kernel computes what the original did, bit for bit", what);
    free(want), free(got);
  }
  for (int s = 0; s < b->n; s++) free(b->init[s]);
}

/* check_same_buffers_ulps, the JIT bit for bit too. */
static inline void check_same_buffers(Ctx *ctx, const UOp *k, const UOp *up, JitBuffers *b, const char *what) {
  check_same_buffers_ulps(ctx, k, up, b, 0, what);
}

/* Values whose sums round (a spread of exponents), some negative. */
static inline unsigned char *fill_rounding(DType d, size_t count, uint64_t seed) {
  size_t size = elem_bytes(d);
  unsigned char *p = calloc(count + 1, size);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < count; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v = ((double)(s % 2001) / 1000.0 - 1.0) * ldexp(1.0, (int)(s >> 40) % 12 - 4);
    uint64_t w = dt_is_float(d) ? word_from_double((uj_scalar)d.scalar, v) : word_from_int((uj_scalar)d.scalar, (int64_t)(v * 8));
    mem_write(p + i * size, d, &w);
  }
  return p;
}

#endif
