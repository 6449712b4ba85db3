/* create.c — tensors made from values (tensor.h): host data copied to the
 * device, constants (full, zeros, ones: no memory until realized, they fuse
 * into whatever reads them), arange, seeded random numbers, .npy files.
 *
 * rand/randn: element i of a tensor made with seed s comes from
 * splitmix64(s, i) alone, so values do not depend on the machine or on
 * the order of computation. rand: the top 24 bits as [0, 1); randn: Box-
 * Muller on two such draws, in float64, rounded to float32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/npy.h"
#include "tensor/tensor_impl.h"
#include "uop/alu.h"

static bool check_shape(uj_session *s, const char *op, const int64_t *shape, unsigned ndim) {
  if (ndim > UJ_MAX_DIMS) return tensor_fail(s, op, "%u axes; at most %d", ndim, UJ_MAX_DIMS), false;
  for (unsigned k = 0; k < ndim; k++)
    if (shape[k] < 0) return tensor_fail(s, op, "axis %u has negative size %lld", k, (long long)shape[k]), false;
  return tensor_check_shape(s, op, shape, ndim);
}

static bool check_dtype(uj_session *s, const char *op, uj_scalar d) {
  if ((unsigned)d >= UJ_SCALAR_COUNT || d == UJ_VOID) return tensor_fail(s, op, "bad dtype %d", (int)d), false;
  return true;
}

uj_tensor *uj_tensor_from_data(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, const void *data) {
  if (!s || !check_dtype(s, "from_data", dtype) || !check_shape(s, "from_data", shape, ndim)) return NULL;
  if (!data && shape_numel(shape, ndim) > 0) return tensor_fail(s, "from_data", "no data");
  RtBuffer *mem;
  const UOp *view = tensor_new_buffer(s, dtype, shape, ndim, &mem);
  if (!view || !s->device->ops->copy_in(s->device, mem->mem, data, mem->bytes)) return NULL;
  return tensor_wrap(s, "from_data", view);
}

/* full, zeros and ones, named op in messages. */
static uj_tensor *full_named(uj_session *s, const char *op, uj_scalar dtype, const int64_t *shape, unsigned ndim, double value) {
  if (!s || !check_dtype(s, op, dtype) || !check_shape(s, op, shape, ndim)) return NULL;
  return tensor_wrap(s, op, node_full(s, dt_scalar(dtype), value, shape, ndim));
}

uj_tensor *uj_tensor_full(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, double value) {
  return full_named(s, "full", dtype, shape, ndim, value);
}

uj_tensor *uj_tensor_zeros(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim) {
  return full_named(s, "zeros", dtype, shape, ndim, 0);
}

uj_tensor *uj_tensor_ones(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim) {
  return full_named(s, "ones", dtype, shape, ndim, 1);
}

/* n float64 values made by f(i), converted to dtype, as a new tensor. */
static uj_tensor *from_values(uj_session *s, const char *op, uj_scalar dtype, const int64_t *shape, unsigned ndim,
                              double (*f)(const void *, int64_t), const void *arg) {
  int64_t n = shape_numel(shape, ndim);
  DType d = dt_scalar(dtype);
  size_t size = elem_bytes(d);
  unsigned char *host = malloc(n ? (size_t)n * size : 1);
  if (!host) return tensor_fail(s, op, "out of memory for %lld elements", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    uint64_t in = word_from_double(UJ_FLOAT64, f(arg, i)), out = alu_eval(UJ_OP_CAST, dtype, UJ_FLOAT64, &in);
    mem_write(host + (size_t)i * size, d, &out);
  }
  uj_tensor *t = uj_tensor_from_data(s, dtype, shape, ndim, host);
  free(host);
  return t;
}

typedef struct Arange { double start, step; } Arange;
static double arange_at(const void *a, int64_t i) { return ((const Arange *)a)->start + (double)i * ((const Arange *)a)->step; }

uj_tensor *uj_tensor_arange(uj_session *s, uj_scalar dtype, double start, double stop, double step) {
  if (!s || !check_dtype(s, "arange", dtype)) return NULL;
  if (step == 0 || !isfinite(start) || !isfinite(stop) || !isfinite(step))
    return tensor_fail(s, "arange", "start %g, stop %g, step %g: the step must be nonzero and all finite", start, stop, step);
  double count = ceil((stop - start) / step);
  if (count > (double)s->max_elements) /* before the cast, which could overflow */
    return tensor_fail(s, "arange", "start %g, stop %g, step %g: too many elements (%.17g)", start, stop, step, count);
  int64_t shape[1] = {count > 0 ? (int64_t)count : 0};
  if (!check_shape(s, "arange", shape, 1)) return NULL;
  return from_values(s, "arange", dtype, shape, 1, arange_at, &(Arange){start, step});
}

const UOp *tensor_iota(uj_session *s, uj_scalar dtype, int64_t n) {
  for (int k = 0; k < SESSION_IOTAS && s->iotas[k]; k++) {
    const UOp *v = s->iotas[k]->node;
    if (v->dtype.scalar == dtype && v->shape[0] == n) return v;
  }
  uj_tensor *t = uj_tensor_arange(s, dtype, 0, (double)n, 1);
  if (!t) return NULL;
  const UOp *v = t->node;
  for (int k = 0; k < SESSION_IOTAS; k++)
    if (!s->iotas[k]) return s->iotas[k] = t, v; /* kept: a live tensor of the session */
  uj_tensor_free(t); /* its node stays in the graph being built */
  return v;
}

static uint64_t splitmix64(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0xD1B54A32D192ED03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t seed, uint64_t i) { return (double)(splitmix64(seed, i) >> 40) * 0x1p-24; }
static double rand_at(const void *seed, int64_t i) { return uniform(*(const uint64_t *)seed, (uint64_t)i); }

static double randn_at(const void *seed, int64_t i) {
  uint64_t sd = *(const uint64_t *)seed;
  double u1 = 1.0 - uniform(sd, 2 * (uint64_t)i), u2 = uniform(sd, 2 * (uint64_t)i + 1); /* u1 in (0, 1] */
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uj_tensor *uj_tensor_rand(uj_session *s, const int64_t *shape, unsigned ndim, uint64_t seed) {
  if (!s || !check_shape(s, "rand", shape, ndim)) return NULL;
  return from_values(s, "rand", UJ_FLOAT32, shape, ndim, rand_at, &seed);
}

uj_tensor *uj_tensor_randn(uj_session *s, const int64_t *shape, unsigned ndim, uint64_t seed) {
  if (!s || !check_shape(s, "randn", shape, ndim)) return NULL;
  return from_values(s, "randn", UJ_FLOAT32, shape, ndim, randn_at, &seed);
}

/* ---- .npy files ---- */

uj_tensor *uj_tensor_load_npy(uj_session *s, const char *path) {
  if (!s) return NULL;
  NpyArray a;
  char err[512];
  if (!npy_read(path, &a, err, sizeof err)) return tensor_fail(s, "load", "%s", err);
  uj_tensor *t = uj_tensor_from_data(s, a.dtype, a.shape, a.ndim, a.data);
  npy_free(&a);
  return t;
}

uj_status uj_tensor_save_npy(uj_tensor *t, const char *path) {
  if (!t) return UJ_ERR_ARG;
  uj_session *s = t->s;
  uj_scalar d = uj_tensor_dtype(t);
  if (d != UJ_FLOAT32 && d != UJ_FLOAT64 && d != UJ_INT32 && d != UJ_INT64 && d != UJ_BOOL && d != UJ_UINT8) {
    char b[32];
    tensor_fail(s, "save", "%s: dtype %s cannot be written to .npy (float32/64, int32/64, bool, uint8 can; cast first)", path,
                dtype_str(dt_scalar(d), b, sizeof b));
    return UJ_ERR_ARG;
  }
  size_t bytes = (size_t)uj_tensor_numel(t) * elem_bytes(dt_scalar(d));
  void *host = malloc(bytes ? bytes : 1);
  if (!host) return tensor_fail(s, "save", "out of memory"), UJ_ERR_NOMEM;
  uj_status st = uj_tensor_to_host(t, host, bytes);
  char err[512];
  if (st == UJ_OK && !npy_write(path, d, t->node->shape, t->node->ndim, host, err, sizeof err)) {
    tensor_fail(s, "save", "%s", err);
    st = UJ_ERR_IO;
  }
  free(host);
  return st;
}
