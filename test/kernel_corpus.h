/* kernel_corpus.h — the corpus of elementwise kernels every backend is
 * diffed on: every ALU op on every dtype it takes, scalar, 3- and 4-lane
 * vectors (3: elements are packed lanes, not LLVM's padded vectors), in a
 * RANGE loop and (scalars) as straight-line stores; every CAST between two
 * dtypes and every BITCAST between equal widths, scalar and 3 lanes. Inputs
 * are the edge values of each dtype (NaN, ±inf, ±0, subnormals, MIN, MAX,
 * -1, shift counts past the width...), all pairs of them.
 *
 * Out: for each kernel, a CorpusKernel (kernel, buffers with the inputs,
 * a name) handed to a callback. Slot 0 is the output; slots 1.. inputs. */
#ifndef UJ_TEST_KERNEL_CORPUS_H
#define UJ_TEST_KERNEL_CORPUS_H

#include <math.h>
#include <stdio.h>

#include "jit_util.h"
#include "uop/spec.h"

typedef struct CorpusKernel {
  const UOp *kernel;
  JitBuffers bufs;
  char what[96];
  bool transcendental;
} CorpusKernel;

typedef void (*CorpusFn)(Ctx *ctx, const CorpusKernel *k, void *user);

enum { CORPUS_MAX_EDGES = 32 };

/* The edge values of scalar s as words; returns the count. */
static int corpus_edges(uj_scalar s, uint64_t *out) {
  int n = 0;
  if (s == UJ_BOOL) {
    out[n++] = 0, out[n++] = 1;
    return n;
  }
  if (scalar_table[s].is_int) {
    int bits = scalar_table[s].bits;
    int64_t max = bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1), min = -max - 1;
    int64_t v[] = {0, 1, -1, 2, -2, 3, 7, -7, 100, -100, min, max, min + 1, max - 1, bits - 1, bits, bits + 1, 0x5a5a};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) out[n++] = word_from_int(s, v[i]);
    return n;
  }
  /* and the smallest subnormals and normals of float16 and bfloat16, and
   * ties of their rounding */
  double v[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, INFINITY, -INFINITY, NAN, 1e-8, 0.1, 65504.0, 65520.0,
                16777217.0, 1e10, -1e10, 3.14159, 300.7, -0.9, 1e38, 4e-45, 1e-310, 1.7976931348623157e308,
                0x1p-24, 0x1p-14, 0x1p-133, 0x1p-126, 1024.5, 1.00390625, 65519.0};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) out[n++] = word_from_double(s, v[i]);
  return n;
}

static void corpus_put(unsigned char *p, uj_scalar s, uint64_t word) {
  uint64_t bits = word_to_mem_bits(s, word);
  size_t n = s == UJ_BOOL ? 1 : scalar_table[s].bits / 8;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(bits >> (8 * i));
}

/* Fills slot with `lanes_total` lanes; lane k takes edges[pick(k)]. */
static void corpus_fill(JitBuffers *b, int slot, DType d, size_t count, int which, const uint64_t *edges, int nedges) {
  uj_scalar s = (uj_scalar)d.scalar;
  size_t lane_bytes = s == UJ_BOOL ? 1 : scalar_table[s].bits / 8;
  b->dtype[slot] = d, b->count[slot] = count;
  b->init[slot] = calloc(count * d.lanes + 1, lane_bytes);
  for (size_t k = 0; k < count * d.lanes; k++) {
    size_t e = which == 0 ? k / (size_t)nedges : which == 1 ? k : k * 7 + 3;
    corpus_put(b->init[slot] + k * lane_bytes, s, edges[e % (size_t)nedges]);
  }
}

static void corpus_free_buffers(JitBuffers *b) {
  for (int i = 0; i < b->n; i++) free(b->init[i]);
}

static const UOp *corpus_param(Ctx *ctx, DType elem, int slot) {
  int64_t s = slot;
  return uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr((uj_scalar)elem.scalar, elem.lanes, UJ_AS_GLOBAL), NULL, 0,
                 (Arg){NULL, &s, 1});
}

static const UOp *corpus_load(Ctx *ctx, DType elem, int slot, const UOp *idx) {
  const UOp *ix = uop_binary(ctx, UJ_OP_INDEX, corpus_param(ctx, elem, slot), idx);
  return uop_new(ctx, UJ_OP_LOAD, elem, &ix, 1, arg_none());
}

/* The node op(inputs) with the dtypes of `in` at index idx; NULL when the
 * op does not take them. */
static const UOp *corpus_value(Ctx *ctx, Op op, DType out, const DType *in, int nin, const UOp *idx) {
  const UOp *src[3];
  for (int i = 0; i < nin; i++) src[i] = corpus_load(ctx, in[i], i + 1, idx);
  DType dt = out;
  if (op_info(op)->dtype_inferred) {
    const UOp *probe = uop_new(ctx, op, in[nin - 1], src, (size_t)nin, arg_none());
    const char *err;
    char buf[160];
    if ((err = spec_node_error(probe, buf, sizeof buf)) != NULL) {
      /* the type rule names the dtype it wants: build it with that */
      DType want;
      if (op_info(op)->type_rule(probe, &want, buf, sizeof buf)) return NULL;
      dt = want;
    } else {
      return probe;
    }
  }
  const UOp *u = uop_new(ctx, op, dt, src, (size_t)nin, arg_none());
  char buf[160];
  return spec_node_error(u, buf, sizeof buf) ? NULL : u;
}

static const UOp *corpus_void2(Ctx *ctx, Op op, const UOp *a, const UOp *b) {
  return uop_new(ctx, op, dt_scalar(UJ_VOID), (const UOp *[]){a, b}, 2, arg_none());
}

static const UOp *corpus_store(Ctx *ctx, DType out, const UOp *idx, const UOp *v) {
  return corpus_void2(ctx, UJ_OP_STORE, uop_binary(ctx, UJ_OP_INDEX, corpus_param(ctx, out, 0), idx), v);
}

/* One kernel: in a loop over count elements, or (loop false) one STORE per
 * element with constant indices. */
static const UOp *corpus_kernel(Ctx *ctx, Op op, DType out, const DType *in, int nin, size_t count, bool loop) {
  DType i32 = dt_scalar(UJ_INT32);
  if (loop) {
    int64_t axis = 0;
    const UOp *bound = uop_const_int(ctx, i32, (int64_t)count);
    const UOp *r = uop_new(ctx, UJ_OP_RANGE, i32, &bound, 1, (Arg){"loop", &axis, 1});
    const UOp *v = corpus_value(ctx, op, out, in, nin, r);
    if (!v) return NULL;
    const UOp *end = corpus_void2(ctx, UJ_OP_END, r, corpus_store(ctx, v->dtype, r, v));
    return uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &end, 1, arg_none());
  }
  const UOp **stores = malloc(count * sizeof *stores);
  for (size_t i = 0; i < count; i++) {
    const UOp *idx = uop_const_int(ctx, i32, (int64_t)i);
    const UOp *v = corpus_value(ctx, op, out, in, nin, idx);
    if (!v) return free(stores), NULL;
    stores[i] = corpus_store(ctx, v->dtype, idx, v);
  }
  const UOp *k = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), stores, count, arg_none());
  free(stores);
  return k;
}

/* Builds the kernel and its buffers, hands them to fn. */
static void corpus_one(Ctx *ctx, Op op, DType out, const DType *in, int nin, bool loop, CorpusFn fn, void *user) {
  uint64_t edges[3][CORPUS_MAX_EDGES];
  int ne[3];
  for (int i = 0; i < nin; i++) ne[i] = corpus_edges((uj_scalar)in[i].scalar, edges[i]);
  size_t lanes_total = (size_t)ne[nin - 1] * (size_t)ne[nin == 1 ? 0 : nin - 2];
  unsigned lanes = in[nin - 1].lanes;
  size_t count = (lanes_total + lanes - 1) / lanes;
  if (!loop && count > 48) count = 48; /* straight-line code: the first pairs */
  const UOp *k = corpus_kernel(ctx, op, out, in, nin, count, loop);
  if (!k) return;
  CorpusKernel ck = {.kernel = k, .transcendental = op == UJ_OP_EXP2 || op == UJ_OP_LOG2 || op == UJ_OP_SIN};
  ck.bufs.n = nin + 1;
  const UOp *store = loop ? k->src[0]->src[1] : k->src[0];
  DType out_dt = store->src[1]->dtype;
  uint64_t zero = 0;
  corpus_fill(&ck.bufs, 0, out_dt, count, 1, &zero, 1);
  for (int i = 0; i < nin; i++) corpus_fill(&ck.bufs, i + 1, in[i], count, i == 0 && nin > 1 ? 0 : i, edges[i], ne[i]);
  char a[32], b[32];
  snprintf(ck.what, sizeof ck.what, "%s %s->%s%s", op_table[op].name, dtype_str(in[nin - 1], a, sizeof a),
           dtype_str(out_dt, b, sizeof b), loop ? " loop" : "");
  fn(ctx, &ck, user);
  corpus_free_buffers(&ck.bufs);
}

static const uj_scalar corpus_scalars[] = {UJ_BOOL,   UJ_INT8,    UJ_INT16,   UJ_INT32,   UJ_INT64,
                                           UJ_UINT8,  UJ_UINT16,  UJ_UINT32,  UJ_UINT64,  UJ_FLOAT16,
                                           UJ_BFLOAT16, UJ_FLOAT32, UJ_FLOAT64};
enum { CORPUS_NSCALARS = sizeof corpus_scalars / sizeof *corpus_scalars };

static void corpus_each(Ctx *ctx, CorpusFn fn, void *user) {
  for (int op = 0; op < UJ_OP_COUNT; op++) {
    if (!op_has((Op)op, OPF_ALU) || op == UJ_OP_CAST || op == UJ_OP_BITCAST) continue;
    int nin = op_has((Op)op, OPF_UNARY) ? 1 : op_has((Op)op, OPF_BINARY) ? 2 : 3;
    for (int si = 0; si < CORPUS_NSCALARS; si++) {
      for (unsigned lanes = 1; lanes <= 4; lanes += lanes == 1 ? 2 : 1) { /* 1, 3, 4 */
        DType d = uj_dtype_vec(corpus_scalars[si], lanes), in[3] = {d, d, d};
        if (op == UJ_OP_WHERE) in[0] = uj_dtype_vec(UJ_BOOL, lanes);
        corpus_one(ctx, (Op)op, d, in, nin, true, fn, user);
        if (lanes == 1) corpus_one(ctx, (Op)op, d, in, nin, false, fn, user);
      }
    }
  }
  for (int a = 0; a < CORPUS_NSCALARS; a++) {
    for (int b = 0; b < CORPUS_NSCALARS; b++) {
      for (unsigned lanes = 1; lanes <= 3; lanes += 2) {
        DType from = uj_dtype_vec(corpus_scalars[a], lanes), to = uj_dtype_vec(corpus_scalars[b], lanes);
        corpus_one(ctx, UJ_OP_CAST, to, &from, 1, true, fn, user);
        corpus_one(ctx, UJ_OP_BITCAST, to, &from, 1, true, fn, user);
      }
    }
  }
}

#endif
