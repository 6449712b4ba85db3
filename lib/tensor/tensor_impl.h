/* tensor_impl.h — what the files of lib/tensor share: the session and
 * tensor structs, node builders that check shapes and name both in their
 * messages, and the realized-node map.
 *
 *   session.c     sessions, tensors, errors, freeing and buffer collection
 *   nodes.c       the node builders below
 *   create.c      from host data, full, arange, rand/randn, .npy files
 *   safetensors.c safetensors files: the header checked, tensors read and written
 *   json.c        the strict JSON reader of safetensors headers
 *   elementwise.c broadcasting, dtype promotion, binary/unary ops, casts
 *   views.c       reshape, expand, permute, flip, pad, shrink, cat, stack
 *   reduce.c      sum/max/min/mean/argmax, softmax, gather
 *   nn.c          matmul, conv2d, pooling
 *   layers.c      layernorm, cross-entropy, attention
 *   random.c      the session's generator (Philox in the kernels), dropout
 *   realize.c     scheduling, running, copying to host, schedule text
 *   grad.c        reverse-mode autodiff: one gradient rule per op
 *   optim.c       SGD and AdamW steps, in place, in one schedule */
#ifndef UJ_TENSOR_IMPL_H
#define UJ_TENSOR_IMPL_H

#include "runtime/run.h"
#include "uop/movement.h"
#include "uop/uop.h"
#include "uopjit/tensor.h"

enum { SESSION_IOTAS = 32 };

struct uj_session {
  Ctx *ctx;
  Device *device;
  ScheduleTarget target;     /* what the device's kernels are shaped for */
  ScheduleCache *schedules;  /* graphs realized before (schedule.h) */
  BufferTable buffers;   /* BUFFER id -> memory */
  int64_t next_buffer_id;
  uj_tensor **tensors;   /* live tensors */
  size_t ntensors, cap_tensors;
  const UOp **known;     /* by node id: the BUFFER view it was realized to */
  size_t cap_known;
  uint32_t *known_ids;   /* the ids set in known, each once: walks over */
  size_t nknown, cap_known_ids; /* them cost what is known, not the context */
  unsigned *live_mark;   /* by BUFFER id: the collection that last found it read */
  size_t cap_mark;
  unsigned epoch;        /* that collection's number */
  size_t nfreed;         /* tensors freed since memory was last collected */
  size_t collect_at;     /* the node count at which nodes are collected next */
  int64_t max_elements;  /* the most a tensor spans (SHAPE_MAX_ELEMENTS unless set lower) */
  uj_tensor *iotas[SESSION_IOTAS]; /* tensor_iota's buffers, kept (live tensors of the session) */
  uj_tensor *rng;          /* the generator's key and generation, uint32 [3] (random.c), made at its first use */
  uint64_t rng_seed;       /* what rng holds: the key */
  uint32_t rng_generation; /* and the generation */
  uint32_t rng_calls;      /* dropout calls since the generator last moved: the next call's stream */
};

struct uj_tensor {
  uj_session *s;
  const UOp *node;
  uj_tensor *grad;     /* its gradient (uj_tensor_backward), or NULL */
  uj_tensor *grad_of;  /* the parameter whose grad this is, or NULL */
  bool requires_grad;  /* a parameter: backward gives it a grad */
};

/* A tensor for node, the result of op (NULL when node is NULL: the error
 * is set; or when node's shape is past the session's limit). */
uj_tensor *tensor_wrap(uj_session *s, const char *op, const UOp *node);
/* Whether shape is within the session's limit: its span (movement.h) at
 * most max_elements; else "op: shape ... too large" in the session. */
bool tensor_check_shape(uj_session *s, const char *op, const int64_t *shape, unsigned ndim);
/* Lowers the limit on a tensor's span (to bound the memory of untrusted
 * programs: the fuzzers); at most SHAPE_MAX_ELEMENTS. */
void tensor_set_max_elements(uj_session *s, int64_t n);
/* Sets the session's error ("op: message"); returns NULL. */
void *tensor_fail(uj_session *s, const char *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Releases the memory no live tensor can read (after tensors were freed). */
void tensor_collect_buffers(uj_session *s);
/* Frees the nodes no live tensor, realized node, cached schedule or
 * program needs, once the context holds twice what the last collection
 * kept (at least SESSION_COLLECT_MIN nodes): a session that builds and
 * realizes graphs again and again holds flat memory. Nothing happens when
 * out of memory. */
enum { SESSION_COLLECT_MIN = 1 << 16 };
void tensor_collect_nodes(uj_session *s);
/* Writes values[i] (of dsts[i]'s shape and dtype) into the buffer of
 * dsts[i] (each realized, a buffer view) for every i, in one schedule: a
 * value may read another's new contents through the same node (an
 * optimizer's parameter reads its new moment), each kernel in place
 * where it reads its target only at the element it writes. */
uj_status tensor_assign_many(uj_session *s, uj_tensor *const *dsts, const UOp *const *values, size_t n);
/* Computes values[0..n) in one schedule: into[i] NULL: into a new buffer
 * (its view in views[i], recorded as values[i]'s value); else into
 * into[i]'s buffer, as tensor_assign_many. */
uj_status tensor_run(uj_session *s, const UOp *const *values, size_t n, uj_tensor *const *into, const UOp **views);
/* The schedule realizing t would run on target (NULL: the session's),
 * as a preview: the buffer ids it takes are given back. NULL and a
 * message on error. */
Schedule *tensor_schedule_preview(uj_tensor *t, const ScheduleTarget *target);
/* Copies bytes of host data into t's buffer (t realized, its size). */
uj_status tensor_write(uj_tensor *t, const void *data, size_t bytes);
/* 0, 1, .., n - 1 of an integer dtype, as a node reading a buffer the
 * session keeps: the same buffer every time (a graph built again each
 * step is then the same graph; uj_tensor_arange makes a new buffer each
 * call). No user tensor reads it directly, so nothing assigns into it.
 * NULL and a message on error. */
const UOp *tensor_iota(uj_session *s, uj_scalar dtype, int64_t n);
/* Records that node's value is in view (a RESHAPE of a BUFFER). */
bool tensor_known_set(uj_session *s, const UOp *node, const UOp *view);
/* Forgets the realized node known_ids[k] names (its entry cleared; the
 * list's last id moves to place k, so walk the list from its end). */
void tensor_known_drop(uj_session *s, size_t k);
/* A BUFFER view of new device memory holding numel elements of dtype. */
const UOp *tensor_new_buffer(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, RtBuffer **mem);

/* ---- node builders: NULL and a message naming op and shapes ---- */
const char *tensor_shape_str(const UOp *t, char *buf, size_t n);
/* Normalises a (possibly negative) axis of an ndim-axis tensor. */
bool tensor_axis(uj_session *s, const char *op, int axis, unsigned ndim, int *out);
/* A node after its type rule: NULL and "op: message" when it breaks it. */
const UOp *tensor_node(uj_session *s, const char *op, Op kind, DType d, const UOp *const *src, size_t n, Arg arg);
const UOp *node_reshape(uj_session *s, const UOp *x, const int64_t *shape, unsigned ndim);
const UOp *node_expand(uj_session *s, const UOp *x, const int64_t *shape, unsigned ndim);
const UOp *node_permute(uj_session *s, const UOp *x, const int64_t *order);
const UOp *node_pad(uj_session *s, const UOp *x, const int64_t *lohi);
const UOp *node_shrink(uj_session *s, const UOp *x, const int64_t *lohi);
/* Whether a node inside op (never a tensor of its own) may have shape:
 * a span at most SHAPE_MAX_SPAN (movement.h); else "op: ..." set. */
bool node_check_span(uj_session *s, const char *op, const int64_t *shape, unsigned ndim);
/* x broadcast to shape (NumPy rules); "op: ..." names both shapes. */
const UOp *node_broadcast(uj_session *s, const char *op, const UOp *x, const int64_t *shape, unsigned ndim);
/* A constant of dtype d with the given shape. */
const UOp *node_full(uj_session *s, DType d, double v, const int64_t *shape, unsigned ndim);
/* Elementwise op on nodes of one shape (sources already broadcast). */
const UOp *node_alu(uj_session *s, Op op, const UOp *a, const UOp *b);
const UOp *node_cast(uj_session *s, const UOp *x, uj_scalar to);
/* The dtype a and b promote to: float beats int beats bool, the wider
 * wins, mixed signedness takes a signed type that holds both. */
uj_scalar node_promoted_dtype(uj_scalar a, uj_scalar b);
/* Broadcasts a and b to one shape (NumPy rules). */
bool node_broadcast_pair(uj_session *s, const char *op, const UOp **a, const UOp **b);
/* Casts and broadcasts a and b to their common dtype and shape. */
bool node_promote(uj_session *s, const char *op, const UOp **a, const UOp **b);
/* REDUCE by ADD/MAX/MUL over axes (normalised, distinct), keeping them; a
 * float sum of a product is a MULACC reduce (fused multiply-adds). */
const UOp *node_reduce(uj_session *s, Op op, const UOp *x, const int64_t *axes, unsigned n);
/* Unary math on nodes (float dtypes), shared by the ops built of them. */
const UOp *node_unary(uj_session *s, uj_unop op, const UOp *x);
/* Philox-4x32-10 (random.c) on uint32 nodes of one shape: the four words
 * of the counter and the two of the key in, the four of the result out;
 * false (a message set) when a node could not be made. */
bool node_philox(uj_session *s, const UOp *const ctr[4], const UOp *const key[2], const UOp *out[4]);

#endif
