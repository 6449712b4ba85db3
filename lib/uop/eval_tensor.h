/* eval_tensor.h — the tensor-level reference evaluator: the oracle the
 * scheduler (movement ops -> index arithmetic, kernels) is diffed against.
 * Slow and obvious on purpose.
 *
 * In: a graph root that is a tensor (a value node with a shape) and memory
 * for the BUFFER nodes its movement ops view. Out: the root's elements as a
 * dense C-order array of words (alu.h), one word per lane per element, and
 * its shape. Every node under the root is materialised the same way, from
 * its sources' arrays, with strided index arithmetic. What each op computes
 * is docs/semantics.md, "Tensors". On an error the context holds a message
 * naming the node and *out is empty. */
#ifndef UJ_EVAL_TENSOR_H
#define UJ_EVAL_TENSOR_H

#include "uop/uop.h"

/* Memory for one BUFFER node: at least its declared size elements, laid
 * out as eval.h says (bool 1 byte, ints little endian, floats IEEE, a
 * vector its lanes in order). Read only. */
typedef struct TensorBinding {
  const UOp *buffer;
  const void *data;
  size_t bytes;
} TensorBinding;

/* A dense tensor: element e (C order: the last axis fastest), lane l is
 * words[e * dtype.lanes + l]. shape is the root node's (owned by the
 * context; may be NULL for a scalar, ndim 0); words is malloc'd (free with
 * tensor_value_free), never NULL after a success, even for 0 elements. */
typedef struct TensorValue {
  DType dtype;
  unsigned ndim;
  const int64_t *shape;
  size_t count; /* elements: the product of shape (1 for a scalar) */
  uint64_t *words;
  double *errs; /* eval_tensor_bounds: a bound per word (eval_bound.h); else NULL */
} TensorValue;

/* Checks the graph under root (spec_check_graph), then evaluates it with
 * the given BUFFER bindings; false with a message, and *out zeroed, on
 * error. */
bool eval_tensor(Ctx *ctx, const UOp *root, const TensorBinding *buffers, size_t nbuffers,
                 TensorValue *out);
/* eval_tensor, and with each word its error bound (docs/semantics.md,
 * "Reassociation"): what a realization that regroups float reductions
 * may differ by. BUFFERs are exact. */
bool eval_tensor_bounds(Ctx *ctx, const UOp *root, const TensorBinding *buffers, size_t nbuffers,
                        TensorValue *out);
void tensor_value_free(TensorValue *v);

#endif
