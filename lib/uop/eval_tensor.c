/* eval_tensor.c — the tensor-level reference evaluator (eval_tensor.h).
 *
 * In: a tensor root, memory for BUFFER nodes. Out: the root's words, dense
 * and in C order. How, none of it recursive (a chain 100000 deep is fine):
 * the graph is checked against the op table; every node under the root is
 * checked for being a tensor op of a sane size; then the nodes are computed
 * sources first (ascending id), each into a dense array of words made from
 * its sources' arrays: a movement op maps each of its elements to the one
 * element of its source it reads (PAD: or to none, a zero), a REDUCE
 * folds the elements of its reduced axes in C order, an ALU op works
 * element by element and lane by lane through alu_eval. A node's array is
 * freed once its last user is computed. No cleverness on purpose: this is
 * what the scheduler's kernels are diffed against (docs/semantics.md,
 * "Tensors"). */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/eval_bound.h"
#include "uop/eval_tensor.h"
#include "uop/movement.h"
#include "uop/nodemap.h"
#include "uop/spec.h"
#include "uop/text.h"

/* The most words (elements times lanes) one node may have. */
#define TENSOR_MAX_WORDS ((int64_t)1 << 31)
/* The most axes a shape has (UOp.ndim is a uint8_t). */
#define TENSOR_MAX_AXES 255

typedef struct TensorEval {
  Ctx *ctx;
  const TensorBinding *buffers;
  size_t nbuffers;
  const UOp **order; /* every node under the root, sources first */
  size_t norder;
  NodeMap num;       /* order's nodes, numbered (nodemap.h) */
  uint64_t **arrays; /* by number: its words, until its last user is done */
  bool bounded;      /* eval_tensor_bounds */
  double **errs;     /* bounded: by number, a bound per word (eval_bound.h) */
  uint32_t *uses;    /* by number: source edges from nodes not yet computed */
} TensorEval;

/* u's number: the tables are as long as the graph, not the context. */
static uint32_t ix(const TensorEval *te, const UOp *u) {
  uint32_t k = nodemap_find(&te->num, u);
  assert(k != NODEMAP_NONE);
  return k;
}

/* ---- errors ---- */

static bool fail(Ctx *ctx, const UOp *u, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(Ctx *ctx, const UOp *u, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  text_node_error(ctx, u, "eval_tensor", "%s", msg);
  return false;
}

static bool fail_nomem(Ctx *ctx) {
  ctx_set_error(ctx, "eval_tensor: out of memory");
  return false;
}

/* ---- memory: alu.h's layout (mem_read, elem_bytes) ---- */

static const TensorBinding *binding_find(const TensorEval *te, const UOp *buffer) {
  for (size_t i = 0; i < te->nbuffers; i++)
    if (te->buffers[i].buffer == buffer) return &te->buffers[i];
  return NULL;
}

/* Each binding a BUFFER of this context, bound once, to enough bytes. */
static bool bindings_check(const TensorEval *te) {
  Ctx *ctx = te->ctx;
  for (size_t i = 0; i < te->nbuffers; i++) {
    const TensorBinding *b = &te->buffers[i];
    const UOp *u = b->buffer;
    if (!uop_in_ctx(ctx, u) || u->op != UJ_OP_BUFFER) {
      ctx_set_error(ctx, "eval_tensor: binding %zu is not a BUFFER node of this context", i);
      return false;
    }
    const TensorBinding *first = binding_find(te, u);
    if (first != b)
      return fail(ctx, u, "BUFFER is bound twice (bindings %zu and %zu)",
                  (size_t)(first - te->buffers), i);
    if (!b->data && b->bytes)
      return fail(ctx, u, "BUFFER is bound to NULL memory of %zu bytes", b->bytes);
    size_t need;
    if (__builtin_mul_overflow((size_t)u->ints[1], elem_bytes(u->dtype), &need) || b->bytes < need)
      return fail(ctx, u, "BUFFER of %lld elements needs %zu bytes, not %zu", (long long)u->ints[1],
                  need, b->bytes);
  }
  return true;
}

/* ---- shapes and indices ---- */

/* The multi-index of element `flat` of shape, in C order (the last axis
 * fastest). */
static void index_unravel(int64_t flat, const int64_t *shape, unsigned ndim, int64_t *idx) {
  for (unsigned i = ndim; i-- > 0;) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
}

/* The element of a dense C-order array of shape at idx: the dot product
 * of idx with the strides (the product of the sizes of the later axes). */
static int64_t index_ravel(const int64_t *idx, const int64_t *shape, unsigned ndim) {
  int64_t flat = 0, stride = 1;
  for (unsigned i = ndim; i-- > 0;) {
    flat += idx[i] * stride;
    stride *= shape[i];
  }
  return flat;
}

/* ---- before computing: is every node a tensor op of a sane size ---- */

static bool node_check(const TensorEval *te, const UOp *u, const UOp *root) {
  Ctx *ctx = te->ctx;
  const char *name = op_table[u->op].name;
  bool tensor_op = u->op == UJ_OP_CONST || op_has((Op)u->op, OPF_TENSOR) ||
                   op_has((Op)u->op, OPF_ALU) || (u->op == UJ_OP_REDUCE && u->nsrc == 1);
  if (u->op == UJ_OP_REDUCE && !tensor_op)
    return fail(ctx, u, "REDUCE over RANGEs is not a tensor op");
  if (u->op == UJ_OP_BUFFER && u == root)
    return fail(ctx, u, "BUFFER is a pointer, not a tensor: a movement op views it (RESHAPE)");
  if (u->op == UJ_OP_BUFFER && !binding_find(te, u)) return fail(ctx, u, "BUFFER is not bound");
  if (!tensor_op && u->op != UJ_OP_BUFFER) return fail(ctx, u, "%s is not a tensor op", name);
  int64_t count = shape_numel(u->shape, u->ndim), words; /* the spec checker: at most 2^52, no overflow */
  if (__builtin_mul_overflow(count, (int64_t)u->dtype.lanes, &words) || words > TENSOR_MAX_WORDS)
    return fail(ctx, u,
                "%s: %lld elements is too many for the reference evaluator (at most 2^31 words, "
                "one per lane)",
                name, (long long)count);
  return true;
}

/* ---- computing one node ---- */

static const uint64_t *array_of(const TensorEval *te, const UOp *u) { return te->arrays[ix(te, u)]; }
static double *errs_of(const TensorEval *te, const UOp *u) { return te->errs ? te->errs[ix(te, u)] : NULL; }

/* The element of u's source that the element of u at idx (flat in C
 * order) reads; -1 for an element that PAD adds. */
static int64_t movement_source(const UOp *u, int64_t flat, const int64_t *idx) {
  const UOp *x = u->src[0];
  int64_t sidx[TENSOR_MAX_AXES];
  if (u->op == UJ_OP_RESHAPE) return flat; /* C order is kept */
  memcpy(sidx, idx, x->ndim * sizeof *sidx);
  for (unsigned i = 0; i < x->ndim; i++) {
    switch (u->op) {
    case UJ_OP_EXPAND: sidx[i] = x->shape[i] == 1 ? 0 : idx[i]; break;
    case UJ_OP_PERMUTE: sidx[u->ints[i]] = idx[i]; break; /* out axis i is source axis order[i] */
    case UJ_OP_PAD:
      sidx[i] = idx[i] - u->ints[2 * i];
      if (sidx[i] < 0 || sidx[i] >= x->shape[i]) return -1;
      break;
    case UJ_OP_SHRINK: sidx[i] = idx[i] + u->ints[2 * i]; break;
    default: break; /* FLIP, below */
    }
  }
  for (uint32_t k = 0; u->op == UJ_OP_FLIP && k < u->nints; k++) {
    int64_t a = u->ints[k];
    sidx[a] = x->shape[a] - 1 - idx[a];
  }
  return index_ravel(sidx, x->shape, x->ndim);
}

/* RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK: each element copied from
 * the source element it reads, or zero words (0, +0.0, false). */
static void compute_movement(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  const uint64_t *in = array_of(te, u->src[0]);
  const double *in_errs = errs_of(te, u->src[0]);
  double *errs = errs_of(te, u);
  size_t lanes = u->dtype.lanes;
  int64_t idx[TENSOR_MAX_AXES];
  for (int64_t e = 0; e < count; e++) {
    index_unravel(e, u->shape, u->ndim, idx);
    int64_t s = movement_source(u, e, idx);
    for (size_t lane = 0; lane < lanes; lane++) {
      out[(size_t)e * lanes + lane] = s < 0 ? 0 : in[(size_t)s * lanes + lane];
      if (errs) errs[(size_t)e * lanes + lane] = s < 0 ? 0 : in_errs[(size_t)s * lanes + lane];
    }
  }
}

/* REDUCE over axes: each element folds, from the identity, the source
 * elements that share its index on the other axes, in C order over the
 * reduced axes (the last one fastest, whatever order the arg lists them). */
static bool compute_reduce(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  const UOp *x = u->src[0];
  const uint64_t *in = array_of(te, x);
  const double *in_errs = errs_of(te, x);
  double *errs = errs_of(te, u);
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  size_t lanes = u->dtype.lanes;
  Op op = UJ_OP_ADD;
  op_from_name(u->name, strlen(u->name), &op);
  const UOp *product = reduce_fused_product(u);
  const uint64_t *a = product ? array_of(te, x->src[0]) : NULL, *b = product ? array_of(te, x->src[1]) : NULL;
  int64_t part[TENSOR_MAX_AXES], idx[TENSOR_MAX_AXES], pidx[TENSOR_MAX_AXES], sidx[TENSOR_MAX_AXES],
      nparts = 1;
  for (unsigned i = 0; i < x->ndim; i++) part[i] = 1; /* the reduced axes' sizes, 1 elsewhere */
  for (uint32_t k = 0; k < u->nints; k++) part[u->ints[k]] = x->shape[u->ints[k]];
  nparts = shape_numel(part, x->ndim); /* at most the source's count */
  BoundSum *sums = errs ? malloc(lanes * sizeof *sums) : NULL;
  if (errs && !sums) return fail_nomem(te->ctx);
  for (int64_t e = 0; e < count; e++) {
    uint64_t *acc = out + (size_t)e * lanes;
    for (size_t lane = 0; lane < lanes; lane++) {
      acc[lane] = alu_identity(op, s);
      if (sums) bound_sum_start(&sums[lane]);
    }
    index_unravel(e, u->shape, u->ndim, idx); /* 0 on the reduced axes */
    for (int64_t p = 0; p < nparts; p++) {
      index_unravel(p, part, x->ndim, pidx); /* 0 on the others */
      for (unsigned i = 0; i < x->ndim; i++) sidx[i] = idx[i] + pidx[i];
      size_t at = (size_t)index_ravel(sidx, x->shape, x->ndim) * lanes;
      for (size_t lane = 0; lane < lanes; lane++) {
        acc[lane] = alu_reduce_step(op, s, acc[lane], in[at + lane],
                                    a ? (const uint64_t[]){a[at + lane], b[at + lane]} : NULL);
        if (errs) bound_sum_step(&sums[lane], s, in[at + lane], in_errs[at + lane]);
      }
    }
    for (size_t lane = 0; errs && lane < lanes; lane++)
      errs[(size_t)e * lanes + lane] = bound_sum_done(&sums[lane], op, s, acc[lane]);
  }
  free(sums);
  return true;
}

/* The position an index word of dtype d names on an axis of n, or -1
 * when it is outside [0, n). Signed words are sign-extended. */
static int64_t axis_position(DType d, uint64_t w, int64_t n) {
  if (!dt_is_signed(d) && w > (uint64_t)INT64_MAX) return -1;
  int64_t v = (int64_t)w;
  return v >= 0 && v < n ? v : -1;
}

/* GATHER: each element copied from x at its own index with the axis's
 * replaced by the index tensor's word there; zero where that is outside. */
static void compute_gather(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  const UOp *x = u->src[0], *ix = u->src[1];
  const uint64_t *in = array_of(te, x), *at = array_of(te, ix);
  const double *in_errs = errs_of(te, x);
  double *errs = errs_of(te, u);
  size_t lanes = u->dtype.lanes;
  int64_t axis = u->ints[0], idx[TENSOR_MAX_AXES];
  for (int64_t e = 0; e < count; e++) {
    index_unravel(e, u->shape, u->ndim, idx);
    idx[axis] = axis_position(ix->dtype, at[e], x->shape[axis]);
    int64_t src = idx[axis] < 0 ? -1 : index_ravel(idx, x->shape, x->ndim);
    for (size_t lane = 0; lane < lanes; lane++) {
      out[(size_t)e * lanes + lane] = src < 0 ? 0 : in[(size_t)src * lanes + lane];
      if (errs) errs[(size_t)e * lanes + lane] = src < 0 ? 0 : in_errs[(size_t)src * lanes + lane];
    }
  }
}

/* SCATTER: zeros (+0.0), then each element of g added, in C order, where its
 * index sends it (nothing where that is outside the axis). Bounded: each
 * element's terms as a sum in any order (atomic additions on a GPU). */
static bool compute_scatter(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  const UOp *g = u->src[0], *ix = u->src[1];
  const uint64_t *in = array_of(te, g), *at = array_of(te, ix);
  const double *in_errs = errs_of(te, g);
  double *errs = errs_of(te, u);
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  size_t lanes = u->dtype.lanes, words = (size_t)count * lanes;
  BoundSum *sums = errs ? malloc((words ? words : 1) * sizeof *sums) : NULL;
  if (errs && !sums) return fail_nomem(te->ctx);
  for (size_t w = 0; w < words; w++) {
    out[w] = 0; /* +0.0: what the zeroed memory holds */
    if (sums) bound_sum_start(&sums[w]);
  }
  int64_t axis = u->ints[0], idx[TENSOR_MAX_AXES], n = shape_numel(g->shape, g->ndim);
  for (int64_t e = 0; e < n; e++) {
    index_unravel(e, g->shape, g->ndim, idx);
    idx[axis] = axis_position(ix->dtype, at[e], u->shape[axis]);
    if (idx[axis] < 0) continue;
    size_t to = (size_t)index_ravel(idx, u->shape, u->ndim) * lanes, from = (size_t)e * lanes;
    for (size_t lane = 0; lane < lanes; lane++) {
      out[to + lane] = alu_reduce_step(UJ_OP_ADD, s, out[to + lane], in[from + lane], NULL);
      if (sums) bound_sum_step(&sums[to + lane], s, in[from + lane], in_errs[from + lane]);
    }
  }
  for (size_t w = 0; sums && w < words; w++) errs[w] = bound_sum_done(&sums[w], UJ_OP_ADD, s, out[w]);
  free(sums);
  return true;
}

/* An ALU op (CAST and BITCAST too): element by element, lane by lane; the
 * sources have u's shape. `in` is the scalar of the first value operand
 * (WHERE's first is its condition). */
static void compute_alu(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  uj_scalar res = (uj_scalar)u->dtype.scalar;
  uj_scalar in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
  size_t words = (size_t)count * u->dtype.lanes;
  double *errs = errs_of(te, u);
  for (size_t w = 0; w < words; w++) {
    uint64_t args[3] = {0, 0, 0};
    double es[3] = {0, 0, 0};
    for (uint32_t i = 0; i < u->nsrc; i++) args[i] = array_of(te, u->src[i])[w];
    out[w] = alu_eval((Op)u->op, res, in, args);
    for (uint32_t i = 0; errs && i < u->nsrc; i++) es[i] = errs_of(te, u->src[i])[w];
    if (errs) errs[w] = bound_alu((Op)u->op, res, in, args, es, out[w]);
  }
}

/* A BUFFER viewed as a tensor: its declared size elements from memory. */
static void compute_buffer(const TensorEval *te, const UOp *u, int64_t count, uint64_t *out) {
  const unsigned char *data = binding_find(te, u)->data;
  DType d = dt_base(u->dtype);
  for (int64_t e = 0; e < count; e++)
    mem_read(data + (size_t)e * elem_bytes(d), d, out + (size_t)e * d.lanes);
}

static bool compute_node(TensorEval *te, const UOp *u) {
  int64_t count = shape_numel(u->shape, u->ndim);
  size_t words = (size_t)count * u->dtype.lanes;
  uint64_t *out = malloc((words ? words : 1) * sizeof *out);
  if (!out) return fail_nomem(te->ctx);
  te->arrays[ix(te, u)] = out;
  if (te->errs && !(te->errs[ix(te, u)] = calloc(words ? words : 1, sizeof(double)))) return fail_nomem(te->ctx);
  if (u->op == UJ_OP_CONST) out[0] = word_normalize((uj_scalar)u->dtype.scalar, uop_const_value(u));
  else if (u->op == UJ_OP_BUFFER) compute_buffer(te, u, count, out);
  else if (u->op == UJ_OP_REDUCE) return compute_reduce(te, u, count, out);
  else if (u->op == UJ_OP_STAGE) {
    memcpy(out, array_of(te, u->src[0]), words * sizeof *out);
    if (te->errs) memcpy(errs_of(te, u), errs_of(te, u->src[0]), words * sizeof(double));
  }
  else if (op_has((Op)u->op, OPF_MOVEMENT)) compute_movement(te, u, count, out);
  else if (u->op == UJ_OP_GATHER) compute_gather(te, u, count, out);
  else if (u->op == UJ_OP_SCATTER) return compute_scatter(te, u, count, out);
  else compute_alu(te, u, count, out);
  return true;
}

static void use_release(TensorEval *te, const UOp *v) {
  if (--te->uses[ix(te, v)] > 0) return;
  free(te->arrays[ix(te, v)]), te->arrays[ix(te, v)] = NULL;
  if (te->errs) free(te->errs[ix(te, v)]), te->errs[ix(te, v)] = NULL;
}

/* Frees the arrays of u's sources that no node still to be computed uses. */
static void sources_release(TensorEval *te, const UOp *u) {
  for (uint32_t i = 0; i < u->nsrc; i++) use_release(te, u->src[i]);
  const UOp *p = reduce_fused_product(u);
  if (p) use_release(te, p->src[0]), use_release(te, p->src[1]);
}

/* ---- the evaluation ---- */

static bool tensor_eval_run(TensorEval *te, const UOp *root) {
  Ctx *ctx = te->ctx;
  if (!spec_check_graph(ctx, root) || !bindings_check(te)) return false;
  te->norder = uop_toposort(ctx, root, &te->order);
  if (!te->norder || !nodemap_number(&te->num, te->order, te->norder)) return fail_nomem(ctx);
  te->arrays = calloc(te->norder, sizeof *te->arrays);
  te->uses = calloc(te->norder, sizeof *te->uses);
  if (te->bounded) te->errs = calloc(te->norder, sizeof *te->errs);
  if (!te->arrays || !te->uses || (te->bounded && !te->errs)) return fail_nomem(ctx);
  for (size_t i = te->norder; i-- > 0;) /* users first: the node out of place is named */
    if (!node_check(te, te->order[i], root)) return false;
  for (size_t i = 0; i < te->norder; i++) {
    const UOp *u = te->order[i], *p = reduce_fused_product(u);
    for (uint32_t k = 0; k < u->nsrc; k++) te->uses[ix(te, u->src[k])]++;
    if (p) te->uses[ix(te, p->src[0])]++, te->uses[ix(te, p->src[1])]++;
  }
  for (size_t i = 0; i < te->norder; i++) {
    if (!compute_node(te, te->order[i])) return false;
    sources_release(te, te->order[i]);
  }
  return true;
}

static bool tensor_eval(Ctx *ctx, const UOp *root, const TensorBinding *buffers, size_t nbuffers,
                        TensorValue *out, bool bounded) {
  memset(out, 0, sizeof *out);
  if (!uop_in_ctx(ctx, root)) {
    ctx_set_error(ctx, "eval_tensor: the root is not a node of this context");
    return false;
  }
  TensorEval te = {ctx, buffers, nbuffers, NULL, 0, nodemap_make(ctx), NULL, bounded, NULL, NULL};
  bool ok = tensor_eval_run(&te, root);
  if (ok) {
    int64_t count = shape_numel(root->shape, root->ndim);
    uint32_t k = ix(&te, root);
    *out = (TensorValue){root->dtype, root->ndim, root->shape, (size_t)count, te.arrays[k], te.errs ? te.errs[k] : NULL};
    te.arrays[k] = NULL;
    if (te.errs) te.errs[k] = NULL;
  }
  for (size_t i = 0; te.arrays && i < te.norder; i++) free(te.arrays[i]); /* order[i] is number i */
  for (size_t i = 0; te.errs && i < te.norder; i++) free(te.errs[i]);
  free(te.arrays), free(te.errs);
  free(te.uses);
  free(te.order);
  nodemap_free(&te.num);
  return ok;
}

bool eval_tensor(Ctx *ctx, const UOp *root, const TensorBinding *buffers, size_t nbuffers, TensorValue *out) {
  return tensor_eval(ctx, root, buffers, nbuffers, out, false);
}

bool eval_tensor_bounds(Ctx *ctx, const UOp *root, const TensorBinding *buffers, size_t nbuffers,
                        TensorValue *out) {
  return tensor_eval(ctx, root, buffers, nbuffers, out, true);
}

void tensor_value_free(TensorValue *v) {
  if (!v) return;
  free(v->words), free(v->errs);
  memset(v, 0, sizeof *v);
}
