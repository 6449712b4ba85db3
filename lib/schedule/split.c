/* split.c — long float sums in two stages, as the target wants them
 * (schedule.h, schedule_split_sums; docs/schedule.md "Long sums").
 *
 * In: the graph to schedule and the target's description. Out: each float
 * sum over trailing axes of at least TargetDesc.sum_split_min elements (a
 * multiple of sum_chunks * sum_chunk_step) viewed as (sum_chunks,
 * L / sum_chunks): a STAGE of the sum of each contiguous chunk, then the
 * sum of those partials, in the REDUCE's shape; on a GPU, a sum over an
 * axis that is not the innermost with few outputs (a GEMV) in chunks
 * along that axis (split_across); on a CPU, a GEMM over a long k in
 * chunks of k, a batch of GEMMs, then their sum (split_k). The tensor graph says
 * "sum over these axes"; this regrouping is the target's (within the
 * evaluator's bound, docs/semantics.md "Reassociation"). */
#include <string.h>

#include "schedule/schedule.h"
#include "uop/movement.h"
#include "uop/spec.h"

enum { SPLIT_MAX_DIMS = 64 }; /* a sum over more axes than fit here stays whole */

typedef struct Split {
  Ctx *ctx;
  const TargetDesc *t;
} Split;

/* A tensor node, checked against the op table; NULL with the error set. */
static const UOp *node(Ctx *ctx, Op op, DType d, const UOp *const *src, size_t n, Arg arg) {
  for (size_t i = 0; i < n; i++)
    if (!src[i]) return NULL;
  const UOp *u = uop_new(ctx, op, d, src, n, arg);
  char buf[256];
  const char *err = u ? spec_node_error(u, buf, sizeof buf) : "out of memory";
  if (err) ctx_set_error(ctx, "schedule: splitting a sum: %s", err);
  return err ? NULL : u;
}

static const UOp *reshape(Ctx *ctx, const UOp *x, const int64_t *shape, unsigned nd) {
  if (!x || (x->ndim == nd && !memcmp(x->shape, shape, nd * sizeof *shape))) return x;
  DType d = x->dtype;
  if (x->op == UJ_OP_RESHAPE) x = x->src[0]; /* a reshape of a reshape is one (of a BUFFER: its view) */
  return node(ctx, UJ_OP_RESHAPE, d, &x, 1, (Arg){NULL, shape, nd});
}

/* x reshaped; a product of two like-shaped factors stays a product of
 * reshaped factors, so that its sum still fuses (a MULACC REDUCE). */
static const UOp *reshape_product(Ctx *ctx, const UOp *x, const int64_t *shape, unsigned nd) {
  bool product = x->op == UJ_OP_MUL;
  for (uint32_t i = 0; product && i < 2; i++)
    product = x->src[i]->ndim == x->ndim && !memcmp(x->src[i]->shape, x->shape, x->ndim * sizeof *x->shape);
  if (!product) return reshape(ctx, x, shape, nd);
  const UOp *ab[2] = {reshape(ctx, x->src[0], shape, nd), reshape(ctx, x->src[1], shape, nd)};
  return node(ctx, UJ_OP_MUL, x->dtype, ab, 2, arg_none());
}

static const UOp *reduce(Ctx *ctx, const char *name, const UOp *x, int64_t axis) {
  return node(ctx, UJ_OP_REDUCE, x ? x->dtype : dt_scalar(UJ_VOID), &x, 1, (Arg){name, &axis, 1});
}

/* A GPU's sum over one axis that is not x's innermost (a column sum's
 * rows), or a sum of products over one axis (a GEMV's k: matmul may put
 * k last in the tensor's shape while w's rows lie apart in memory), with
 * too few outputs to fill the GPU: its threads are the outputs
 * (workgroup.c keeps a thread an output there: a
 * workgroup's threads would each read their own line), so the axis is
 * cut in S chunks, S the largest power of 2 with outputs x S at most
 * cores x max_threads x 2, each chunk at least SPLIT_MIN_CHUNK long: a
 * STAGE of the chunks' sums (outputs x S threads, still coalesced along
 * the outputs), then the sum of the S partials. A GEMV 1 x 4096 x 4096 on
 * 132 SMs: 16 blocks of 256 threads become 1024 (64 chunks). */
enum { SPLIT_MIN_CHUNK = 8, SPLIT_MIN_LENGTH = 256 };

static const UOp *split_across(const Split *sp, const UOp *rebuilt) {
  const TargetDesc *t = sp->t;
  const UOp *x = rebuilt->src[0];
  if (t->kind != TARGET_DESC_GPU || rebuilt->nints != 1 || x->ndim + 1 > SPLIT_MAX_DIMS) return rebuilt;
  int64_t axis = rebuilt->ints[0], length = x->shape[axis], outputs = 1, threads = (int64_t)t->cores * t->max_threads;
  bool product = !strcmp(rebuilt->name, "MULACC"); /* a GEMV's, whichever axis the tensor layer put k on */
  if ((axis == x->ndim - 1 && !product) || length < SPLIT_MIN_LENGTH) return rebuilt;
  for (unsigned i = 0; i < x->ndim; i++) outputs *= i == axis ? 1 : x->shape[i];
  int64_t chunks = 1;
  while (outputs * chunks * 2 <= threads * 2 && length % (chunks * 2) == 0 && length / (chunks * 2) >= SPLIT_MIN_CHUNK)
    chunks *= 2;
  if (chunks < 4) return rebuilt;
  Ctx *ctx = sp->ctx;
  int64_t shape[SPLIT_MAX_DIMS];
  memcpy(shape, x->shape, (size_t)axis * sizeof *shape);
  shape[axis] = chunks, shape[axis + 1] = length / chunks;
  memcpy(shape + axis + 2, x->shape + axis + 1, (x->ndim - (size_t)axis - 1) * sizeof *shape);
  const UOp *partial = reduce(ctx, rebuilt->name, reshape_product(ctx, x, shape, x->ndim + 1), axis + 1);
  partial = partial ? node(ctx, UJ_OP_STAGE, partial->dtype, &partial, 1, arg_none()) : NULL;
  const UOp *total = reduce(ctx, "ADD", partial, axis);
  return total ? reshape(ctx, total, rebuilt->shape, rebuilt->ndim) : NULL;
}

static const UOp *permute(Ctx *ctx, const UOp *x, const int64_t *order) {
  if (!x) return NULL;
  DType d = x->dtype;
  return node(ctx, UJ_OP_PERMUTE, d, &x, 1, (Arg){NULL, order, x->ndim});
}

/* x (.., S, L/S, ..) with the chunk axis moved first; a product of
 * like-shaped factors stays a product of permuted factors. */
static const UOp *chunks_first(Ctx *ctx, const UOp *x, const int64_t *order) {
  if (!x || x->op != UJ_OP_MUL) return permute(ctx, x, order);
  const UOp *ab[2] = {permute(ctx, x->src[0], order), permute(ctx, x->src[1], order)};
  return ab[0] && ab[1] ? node(ctx, UJ_OP_MUL, x->dtype, ab, 2, arg_none()) : NULL;
}

/* A CPU's GEMM over a long k (a language model's head: dlogits @ wte
 * sums over 50257 tokens of the vocabulary): its register blocks would
 * each stream k rows of the other operand, which no cache holds (its
 * panel, k x 32 columns, is over the stack's budget, so nothing is
 * staged and the whole operand is read again for every row block). Cut
 * along k into S chunks (S the smallest divisor of k leaving chunks of at
 * most SPLIT_K_CHUNK): S GEMMs over a chunk each, as a batch (the chunk
 * axis first, so each is a GEMM over the rows that the tiler stages),
 * then the S partials summed. */
enum { SPLIT_K_MIN = 16384, SPLIT_K_CHUNK = 4096, SPLIT_K_MIN_OUTPUTS = 4096 };

static const UOp *split_k(const Split *sp, const UOp *rebuilt) {
  const UOp *x = rebuilt->src[0];
  if (sp->t->kind != TARGET_DESC_CPU || rebuilt->nints != 1 || strcmp(rebuilt->name, "MULACC") || x->ndim + 1 > SPLIT_MAX_DIMS)
    return rebuilt;
  int64_t axis = rebuilt->ints[0], length = x->shape[axis], outputs = 1, chunks = 0;
  for (unsigned i = 0; i < x->ndim; i++) outputs *= i == axis ? 1 : x->shape[i];
  if (length < SPLIT_K_MIN || outputs < SPLIT_K_MIN_OUTPUTS) return rebuilt;
  for (int64_t s = 2; s <= length / 2 && !chunks; s++)
    if (length % s == 0 && length / s <= SPLIT_K_CHUNK) chunks = s;
  if (!chunks) return rebuilt; /* a prime k: no chunks (the GEMM stays whole) */
  Ctx *ctx = sp->ctx;
  unsigned nd = x->ndim + 1;
  int64_t shape[SPLIT_MAX_DIMS], order[SPLIT_MAX_DIMS], n = 1;
  memcpy(shape, x->shape, (size_t)axis * sizeof *shape);
  shape[axis] = chunks, shape[axis + 1] = length / chunks;
  memcpy(shape + axis + 2, x->shape + axis + 1, (x->ndim - (size_t)axis - 1) * sizeof *shape);
  order[0] = axis; /* (S, the rest in order, L/S last) */
  for (unsigned i = 0; i < nd; i++)
    if (i != axis && i != axis + 1) order[n++] = i;
  order[n] = axis + 1;
  const UOp *partial = reduce(ctx, "MULACC", chunks_first(ctx, reshape_product(ctx, x, shape, nd), order), (int64_t)nd - 1);
  partial = partial ? node(ctx, UJ_OP_STAGE, partial->dtype, &partial, 1, arg_none()) : NULL;
  const UOp *total = reduce(ctx, "ADD", partial, 0);
  return total ? reshape(ctx, total, rebuilt->shape, rebuilt->ndim) : NULL;
}

static const UOp *split_sum(void *user, const UOp *u, const UOp *rebuilt) {
  const Split *sp = user;
  const TargetDesc *t = sp->t;
  const UOp *x = rebuilt->op == UJ_OP_REDUCE ? rebuilt->src[0] : NULL;
  (void)u;
  if (!x || rebuilt->nsrc != 1 || !dt_is_float(rebuilt->dtype)) return rebuilt;
  if (strcmp(rebuilt->name, "ADD") && strcmp(rebuilt->name, "MULACC")) return rebuilt;
  unsigned n = rebuilt->nints, lead = x->ndim - n;
  int64_t count = 1;
  bool trailing = n > 0 && lead + 2 <= SPLIT_MAX_DIMS;
  for (unsigned i = 0; i < n; i++) count *= x->shape[rebuilt->ints[i]], trailing &= rebuilt->ints[i] == lead + i;
  int64_t block = (int64_t)t->sum_chunks * (t->sum_chunk_step ? t->sum_chunk_step : 1);
  const UOp *gemm = split_k(sp, rebuilt); /* rebuilt when it is no long GEMM */
  if (gemm != rebuilt) return gemm;
  if (!trailing || (n == 1 && count < (int64_t)t->sum_split_min)) return split_across(sp, rebuilt);
  if (count < (int64_t)t->sum_split_min || count % block) return rebuilt;
  Ctx *ctx = sp->ctx;
  int64_t shape[SPLIT_MAX_DIMS];
  memcpy(shape, x->shape, lead * sizeof *shape);
  shape[lead] = t->sum_chunks, shape[lead + 1] = count / t->sum_chunks;
  const UOp *partial = reduce(ctx, rebuilt->name, reshape_product(ctx, x, shape, lead + 2), lead + 1);
  partial = partial ? node(ctx, UJ_OP_STAGE, partial->dtype, &partial, 1, arg_none()) : NULL;
  const UOp *total = reduce(ctx, "ADD", reshape(ctx, partial, shape, lead + 1), lead);
  return total ? reshape(ctx, total, rebuilt->shape, rebuilt->ndim) : NULL;
}

const UOp *schedule_split_sums(Ctx *ctx, const UOp *sink, const TargetDesc *t) {
  if (!t || !t->sum_chunks) return sink;
  Split sp = {ctx, t};
  return graph_substitute(ctx, sink, split_sum, &sp);
}
