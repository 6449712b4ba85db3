/* bench_graphs.h — the tensor graphs the benchmarks build (bench_peers
 * on the CPU, bench_gpu on a GPU), so both time the same programs: a
 * Scratch holding every tensor a graph makes, freed after the run, and
 * the graphs that are more than one call. */
#ifndef UJ_BENCH_GRAPHS_H
#define UJ_BENCH_GRAPHS_H

#include <math.h>

#include "uopjit/tensor.h"

enum { BENCH_MAX_SCRATCH = 32 };

typedef struct Scratch {
  uj_tensor *t[BENCH_MAX_SCRATCH];
  unsigned n;
} Scratch;

static inline uj_tensor *keep(Scratch *sc, uj_tensor *t) {
  if (t && sc->n < BENCH_MAX_SCRATCH) sc->t[sc->n++] = t;
  return t;
}

static inline void scratch_free(Scratch *sc) {
  for (unsigned i = 0; i < sc->n; i++) uj_tensor_free(sc->t[i]);
  sc->n = 0;
}

/* relu(x * y + z). */
static inline uj_tensor *build_elementwise(Scratch *sc, uj_tensor *x, uj_tensor *y, uj_tensor *z) {
  return keep(sc, uj_tensor_unary(UJ_UN_RELU, keep(sc, uj_tensor_binary(UJ_BIN_ADD, keep(sc, uj_tensor_binary(UJ_BIN_MUL, x, y)), z))));
}

/* (x - mean) / sqrt(var + eps) over the last axis. */
static inline uj_tensor *build_layernorm(Scratch *sc, uj_tensor *x) {
  int axis = -1;
  uj_tensor *mean = keep(sc, uj_tensor_reduce(UJ_RED_MEAN, x, &axis, 1, true));
  uj_tensor *d = keep(sc, uj_tensor_binary(UJ_BIN_SUB, x, mean));
  uj_tensor *var = keep(sc, uj_tensor_reduce(UJ_RED_MEAN, keep(sc, uj_tensor_binary(UJ_BIN_MUL, d, d)), &axis, 1, true));
  uj_tensor *den = keep(sc, uj_tensor_unary(UJ_UN_SQRT, keep(sc, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false))));
  return keep(sc, uj_tensor_binary(UJ_BIN_DIV, d, den));
}

/* softmax(q @ k^T / sqrt(d)) @ v. */
static inline uj_tensor *build_attention(Scratch *sc, uj_tensor *q, uj_tensor *k, uj_tensor *v, int64_t d) {
  uj_tensor *s = keep(sc, uj_tensor_matmul(q, keep(sc, uj_tensor_transpose(k, -2, -1))));
  uj_tensor *scaled = keep(sc, uj_tensor_binary_scalar(UJ_BIN_MUL, s, 1.0 / sqrt((double)d), false));
  return keep(sc, uj_tensor_matmul(keep(sc, uj_tensor_softmax(scaled, -1)), v));
}

#endif
