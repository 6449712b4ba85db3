/* random.c — random bits computed in the kernels: the session's generator
 * and dropout (tensor.h, docs/autodiff.md "Dropout").
 *
 * In: a float tensor and a probability. Out: a lazy tensor whose graph
 * computes each element's random bits from (key, counter) with integer
 * UOps, so a mask is never stored: the forward and the backward each
 * compute it again, from the same nodes, in the kernels they fuse into.
 *
 * The generator is Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC'11; Random123), the one cuRAND
 * and PyTorch's CUDA dropout use: a keyed bijection of a 128-bit counter,
 * found "Crush-resistant" (no failure in TestU01's SmallCrush, Crush and
 * BigCrush over many keys and counter patterns) from 7 rounds; the
 * default 10 leave a margin. A round is two 32 x 32 -> 64-bit products
 * and xors: CAST to uint64, MUL, SHR and CAST back, XOR and ADD on
 * uint32, ops every backend has.
 *
 * The counter of an element is (its flat index: two words, the stream of
 * its dropout call, the generation); the key is the session's 64-bit
 * seed. Key and generation are read from a small device buffer (`rng`,
 * uint32 [seed lo, seed hi, generation]), so that a new seed or a new
 * generation is a write of 12 bytes, not a new graph: nothing compiles
 * again. The stream is the call's number since the generator last moved
 * (uj_session_rng_seed, uj_session_rng_next, or an optimizer's step): a
 * constant of the graph, the same at every step of a loop that builds the
 * same model, and different for two calls of one step. Distinct counters
 * under one key give distinct outputs (a bijection), so no two elements
 * of one generation share their bits. A mask is drawn when its tensor is
 * computed: one computed after the generator moved uses the new state. */
#include <math.h>
#include <string.h>

#include "tensor/tensor_impl.h"

enum { RNG_SEED_LO, RNG_SEED_HI, RNG_GENERATION, RNG_WORDS };
enum { PHILOX_ROUNDS = 10 };
static const uint32_t philox_m[2] = {0xD2511F53u, 0xCD9E8D57u}; /* the multipliers */
static const uint32_t philox_w[2] = {0x9E3779B9u, 0xBB67AE85u}; /* the key's bumps: golden ratio, sqrt(3) - 1 */

/* v as a constant of dtype d and like's shape. */
static const UOp *word(uj_session *s, uj_scalar d, uint64_t v, const UOp *like) {
  if (!like) return NULL;
  const UOp *c = uj_const_int(s->ctx, dt_scalar(d), (int64_t)v);
  if (!c) return tensor_fail(s, "dropout", "%s", uj_error(s->ctx));
  return node_broadcast(s, "dropout", c, like->shape, like->ndim);
}

/* The high and low words of the 64-bit product m x (x uint32). */
static void mulhilo(uj_session *s, uint32_t m, const UOp *x, const UOp **hi, const UOp **lo) {
  const UOp *wide = node_cast(s, x, UJ_UINT64);
  const UOp *p = node_alu(s, UJ_OP_MUL, wide, word(s, UJ_UINT64, m, wide));
  *lo = node_cast(s, p, UJ_UINT32);
  *hi = node_cast(s, node_alu(s, UJ_OP_SHR, p, word(s, UJ_UINT64, 32, p)), UJ_UINT32);
}

static const UOp *xor3(uj_session *s, const UOp *a, const UOp *b, const UOp *c) {
  return node_alu(s, UJ_OP_XOR, node_alu(s, UJ_OP_XOR, a, b), c);
}

bool node_philox(uj_session *s, const UOp *const ctr[4], const UOp *const key[2], const UOp *out[4]) {
  const UOp *c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, *k[2] = {key[0], key[1]};
  for (int r = 0; r < PHILOX_ROUNDS; r++) {
    if (r > 0) /* the key's schedule: bumped before every round but the first */
      for (int i = 0; i < 2; i++) k[i] = node_alu(s, UJ_OP_ADD, k[i], word(s, UJ_UINT32, philox_w[i], k[i]));
    const UOp *hi0, *lo0, *hi1, *lo1;
    mulhilo(s, philox_m[0], c[0], &hi0, &lo0);
    mulhilo(s, philox_m[1], c[2], &hi1, &lo1);
    const UOp *next[4] = {xor3(s, hi1, c[1], k[0]), lo1, xor3(s, hi0, c[3], k[1]), lo0};
    memcpy(c, next, sizeof c);
  }
  memcpy(out, c, sizeof c);
  return c[0] && c[1] && c[2] && c[3];
}

/* ---- the session's generator ---- */

/* The generator's buffer, made at its first use from the seed and the
 * generation the session holds (a live tensor of the session). */
static uj_tensor *rng_buffer(uj_session *s) {
  if (s->rng) return s->rng;
  uint32_t w[RNG_WORDS] = {(uint32_t)s->rng_seed, (uint32_t)(s->rng_seed >> 32), s->rng_generation};
  return s->rng = uj_tensor_from_data(s, UJ_UINT32, (int64_t[]){RNG_WORDS}, 1, w);
}

/* Writes the seed and the generation into the buffer (when there is one)
 * and starts the streams again at 0. */
static uj_status rng_write(uj_session *s) {
  s->rng_calls = 0;
  if (!s->rng) return UJ_OK;
  uint32_t w[RNG_WORDS] = {(uint32_t)s->rng_seed, (uint32_t)(s->rng_seed >> 32), s->rng_generation};
  return tensor_write(s->rng, w, sizeof w);
}

uj_status uj_session_rng_seed(uj_session *s, uint64_t seed) {
  if (!s) return UJ_ERR_ARG;
  s->rng_seed = seed, s->rng_generation = 0;
  return rng_write(s);
}

uj_status uj_session_rng_next(uj_session *s) {
  if (!s) return UJ_ERR_ARG;
  s->rng_generation++;
  return rng_write(s);
}

/* Word i of the generator's buffer, broadcast to like's shape. */
static const UOp *rng_word(uj_session *s, uj_tensor *rng, int i, const UOp *like) {
  int64_t lohi[2] = {i, i + 1};
  const UOp *w = node_reshape(s, node_shrink(s, rng->node, lohi), NULL, 0);
  return node_broadcast(s, "dropout", w, like->shape, like->ndim);
}

/* The flat (C order) index of every element of a tensor of shape, as
 * int64: each axis's index times its stride, summed. The indices come
 * from the session's kept iotas, one an axis, so nothing the tensor's
 * size is read. */
static const UOp *flat_index(uj_session *s, const int64_t *shape, unsigned nd) {
  const UOp *sum = NULL;
  int64_t stride = 1;
  for (unsigned a = nd; a-- > 0; stride *= shape[a]) {
    if (shape[a] == 1) continue;
    int64_t lifted[UJ_MAX_DIMS];
    for (unsigned b = 0; b < nd; b++) lifted[b] = b == a ? shape[a] : 1;
    const UOp *i = node_expand(s, node_reshape(s, tensor_iota(s, UJ_INT64, shape[a]), lifted, nd), shape, nd);
    if (i && stride > 1) i = node_alu(s, UJ_OP_MUL, i, word(s, UJ_INT64, (uint64_t)stride, i));
    sum = sum && i ? node_alu(s, UJ_OP_ADD, sum, i) : i;
    if (!sum) return NULL;
  }
  if (sum) return sum;
  const UOp *zero = uj_const_int(s->ctx, dt_scalar(UJ_INT64), 0);
  return zero ? node_broadcast(s, "dropout", zero, shape, nd) : tensor_fail(s, "dropout", "%s", uj_error(s->ctx));
}

/* 32 random bits for every element of a tensor of shape: the first word
 * of Philox(counter = (index lo, index hi, stream, generation), key =
 * seed). */
static const UOp *random_bits(uj_session *s, const int64_t *shape, unsigned nd, uint32_t stream) {
  uj_tensor *rng = rng_buffer(s);
  const UOp *index = rng ? flat_index(s, shape, nd) : NULL;
  if (!index) return NULL;
  const UOp *ctr[4] = {
      node_cast(s, index, UJ_UINT32),
      node_cast(s, node_alu(s, UJ_OP_SHR, index, word(s, UJ_INT64, 32, index)), UJ_UINT32),
      word(s, UJ_UINT32, stream, index),
      rng_word(s, rng, RNG_GENERATION, index),
  };
  const UOp *key[2] = {rng_word(s, rng, RNG_SEED_LO, index), rng_word(s, rng, RNG_SEED_HI, index)}, *out[4];
  return node_philox(s, ctr, key, out) ? out[0] : NULL;
}

uj_tensor *uj_tensor_dropout(uj_tensor *x, double p) {
  if (!x) return NULL;
  uj_session *s = x->s;
  const UOp *xn = x->node;
  if (!dt_is_float(xn->dtype)) return tensor_fail(s, "dropout", "takes a float tensor");
  if (!(p >= 0 && p <= 1)) /* fabs: "nan", never "-nan" */
    return tensor_fail(s, "dropout", "p must be in [0, 1], not %g", isnan(p) ? fabs(p) : p);
  if (p == 0 || shape_numel(xn->shape, xn->ndim) == 0) return tensor_wrap(s, "dropout", xn);
  if (p == 1) return tensor_wrap(s, "dropout", node_full(s, xn->dtype, 0, xn->shape, xn->ndim));
  /* dropped where bits < p 2^32 (p to a multiple of 2^-32, at most 1 - 2^-32) */
  double t = nearbyint(ldexp(p, 32));
  const UOp *bits = random_bits(s, xn->shape, xn->ndim, s->rng_calls);
  const UOp *drop = node_alu(s, UJ_OP_CMPLT, bits, word(s, UJ_UINT32, t < 0x1p32 ? (uint64_t)t : 0xFFFFFFFFu, bits));
  const UOp *kept = node_alu(s, UJ_OP_MUL, xn, node_full(s, xn->dtype, 1 / (1 - p), xn->shape, xn->ndim));
  const UOp *src[3] = {drop, node_full(s, xn->dtype, 0, xn->shape, xn->ndim), kept};
  uj_tensor *y = tensor_wrap(s, "dropout", tensor_node(s, "dropout", UJ_OP_WHERE, xn->dtype, src, 3, arg_none()));
  if (y) s->rng_calls++;
  return y;
}
