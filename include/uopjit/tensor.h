/* tensor.h — the lazy tensor API of uopjit (docs/tensor.md).
 *
 * In: a session (a device and the graph context its tensors live in) and
 * tensors made from host memory or by creation functions. Operations build
 * a tensor-level UOp graph and compute nothing; uj_tensor_realize (or
 * uj_tensor_to_host) schedules the graph into kernels (lib/schedule),
 * compiles them and runs them on the session's device (lib/runtime).
 *
 * Ownership: the session owns every tensor made in it and frees them all
 * with uj_session_free; uj_tensor_free lets one go earlier (its memory is
 * released once no live tensor's graph reads it).
 *
 * Errors: a function that fails returns NULL (or a status != UJ_OK) and
 * leaves a message in the session (uj_session_error), naming the operation
 * and, for shape errors, both shapes. A NULL tensor argument returns NULL
 * and keeps the first message, so a chain of calls is checked once, at
 * its end. */
#ifndef UOPJIT_TENSOR_H
#define UOPJIT_TENSOR_H

#include "uopjit/uopjit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uj_session uj_session;
typedef struct uj_tensor uj_tensor;

enum { UJ_MAX_DIMS = 8 }; /* the most axes a tensor of this API has */

/* ---- sessions ---- */
/* device: "CPU", or "EVAL" (the reference evaluator as a device shaped for
 * sm_90: workgroups, barriers, race checks; an interpreter, for tests);
 * NULL: the environment's UJ_DEVICE, else "CPU". NULL when the device is
 * unknown or absent; the reason is then in *error (may be NULL) as a
 * static string. */
uj_session *uj_session_new(const char *device, const char **error);
void uj_session_free(uj_session *s);
const char *uj_session_error(const uj_session *s); /* "" when none */
void uj_session_clear_error(uj_session *s);
/* The graph context of its tensors. A realize may collect the nodes no
 * live tensor, realized value, cached schedule or program reaches
 * (docs/ir.md): keep a tensor, not a node, across realizes. */
uj_ctx *uj_session_ctx(uj_session *s);

/* ---- creation ---- */
/* A copy of data: numel elements of dtype, C order, host byte order. */
uj_tensor *uj_tensor_from_data(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, const void *data);
uj_tensor *uj_tensor_full(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, double value);
uj_tensor *uj_tensor_zeros(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim);
uj_tensor *uj_tensor_ones(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim);
/* start, start+step, ... below stop (above it for step < 0). */
uj_tensor *uj_tensor_arange(uj_session *s, uj_scalar dtype, double start, double stop, double step);
/* float32, uniform in [0, 1) / standard normal; the same seed gives the
 * same values on every run and machine. */
uj_tensor *uj_tensor_rand(uj_session *s, const int64_t *shape, unsigned ndim, uint64_t seed);
uj_tensor *uj_tensor_randn(uj_session *s, const int64_t *shape, unsigned ndim, uint64_t seed);
/* A .npy file (float32/64, int32/64, bool, uint8; C order, little
 * endian) / t written as one. */
uj_tensor *uj_tensor_load_npy(uj_session *s, const char *path);
uj_status uj_tensor_save_npy(uj_tensor *t, const char *path);

/* ---- safetensors files (Hugging Face's format; docs/tensor.md) ---- */
/* Writes ts[0..n) (tensors of s) under names[0..n) (UTF-8, each once, not
 * "__metadata__"), and meta_keys[i] -> meta_values[i] for i < nmeta (UTF-8
 * strings; NULL arrays when nmeta is 0) as "__metadata__". The header
 * lists the tensors in the order given; their data is placed widest
 * element first, so each tensor starts at a multiple of its element size.
 * Every tensor is realized (one schedule), then the file is written
 * beside path, synced and renamed onto it: a failure or a crash never
 * leaves half a file at path. Every dtype but void is written. */
uj_status uj_safetensors_save(uj_session *s, const char *path, const char *const *names,
                              uj_tensor *const *ts, size_t n, const char *const *meta_keys,
                              const char *const *meta_values, size_t nmeta);
typedef struct uj_safetensors uj_safetensors;
/* Opens a file and reads and checks its header; tensors are read when
 * asked for. NULL and a message naming the path (and for a header at
 * fault, the byte of the file and the tensor) when the file is not one:
 * truncated, a header that is not valid JSON or breaks the format, an
 * unknown dtype (F8_E4M3...), data offsets that do not tile the data. */
uj_safetensors *uj_safetensors_open(uj_session *s, const char *path);
size_t uj_safetensors_count(const uj_safetensors *f);
/* The name of tensor i (i < count), in the header's order; NULL past it. */
const char *uj_safetensors_name(const uj_safetensors *f, size_t i);
/* A new tensor of s (the session f was opened in, which must outlive
 * these calls) with the file's dtype, shape and bytes, read now; NULL and
 * a message when name is absent or the file cannot be read. */
uj_tensor *uj_safetensors_get(uj_safetensors *f, const char *name);
/* The __metadata__ value of key, or NULL; valid until the file is closed. */
const char *uj_safetensors_meta(const uj_safetensors *f, const char *key);
/* The number of __metadata__ entries, and key i of them (i < count, in
 * byte order of the keys; NULL past it). */
size_t uj_safetensors_meta_count(const uj_safetensors *f);
const char *uj_safetensors_meta_key(const uj_safetensors *f, size_t i);
/* Closes the file and frees f; names and values read from it go with it.
 * The tensors made from it stay. */
void uj_safetensors_close(uj_safetensors *f);

/* ---- reading ---- */
uj_session *uj_tensor_session(const uj_tensor *t);
unsigned uj_tensor_ndim(const uj_tensor *t);
const int64_t *uj_tensor_shape(const uj_tensor *t);
uj_scalar uj_tensor_dtype(const uj_tensor *t);
int64_t uj_tensor_numel(const uj_tensor *t);
const uj_uop *uj_tensor_uop(const uj_tensor *t); /* its graph now: valid while t lives and is not realized */

/* ---- elementwise: shapes broadcast as in NumPy ---- */
typedef enum uj_binop {
  UJ_BIN_ADD, UJ_BIN_SUB, UJ_BIN_MUL, UJ_BIN_DIV, UJ_BIN_POW,
  UJ_BIN_MAXIMUM, UJ_BIN_MINIMUM,
  UJ_BIN_LT, UJ_BIN_LE, UJ_BIN_GT, UJ_BIN_GE, UJ_BIN_EQ, UJ_BIN_NE,
  UJ_BIN_AND, UJ_BIN_OR, UJ_BIN_XOR,
  UJ_BIN_COUNT
} uj_binop;
typedef enum uj_unop {
  UJ_UN_NEG, UJ_UN_EXP, UJ_UN_LOG, UJ_UN_EXP2, UJ_UN_LOG2, UJ_UN_SQRT, UJ_UN_RECIP,
  UJ_UN_SIN, UJ_UN_COS, UJ_UN_ABS, UJ_UN_RELU, UJ_UN_GELU, UJ_UN_SIGMOID, UJ_UN_TANH,
  UJ_UN_NOT,
  UJ_UN_COUNT
} uj_unop;
/* DIV of two integer tensors is true division (float32), as in NumPy;
 * comparisons give bool; AND/OR/XOR take bool or integer tensors. */
uj_tensor *uj_tensor_binary(uj_binop op, uj_tensor *a, uj_tensor *b);
/* a op v (v_left: v op a). v is weakly typed: it takes a's dtype, or
 * float32 when a is an integer or bool tensor and v is not integral, or
 * when v is integral and outside a's integer dtype, the narrowest integer
 * dtype that holds both (int8 + 300: int16), as NumPy 1's value-based
 * casting; never a v that wrapped. */
uj_tensor *uj_tensor_binary_scalar(uj_binop op, uj_tensor *a, double v, bool v_left);
uj_tensor *uj_tensor_unary(uj_unop op, uj_tensor *a);
uj_tensor *uj_tensor_cast(uj_tensor *a, uj_scalar dtype);
uj_tensor *uj_tensor_where(uj_tensor *cond, uj_tensor *a, uj_tensor *b);
const char *uj_binop_name(uj_binop op); /* "add", "pow", "lt", ... */
const char *uj_unop_name(uj_unop op);   /* "neg", "exp", "relu", ... */

/* ---- movement (views: no copy until realized) ---- */
/* shape may hold one -1, inferred from the element count. */
uj_tensor *uj_tensor_reshape(uj_tensor *a, const int64_t *shape, unsigned ndim);
/* Broadcasts size-1 axes (and new leading axes) to shape. */
uj_tensor *uj_tensor_expand(uj_tensor *a, const int64_t *shape, unsigned ndim);
uj_tensor *uj_tensor_permute(uj_tensor *a, const int *order, unsigned n);
uj_tensor *uj_tensor_transpose(uj_tensor *a, int axis0, int axis1);
uj_tensor *uj_tensor_flip(uj_tensor *a, const int *axes, unsigned n);
/* lohi[2k], lohi[2k+1]: elements added before / after axis k (zeros). */
uj_tensor *uj_tensor_pad(uj_tensor *a, const int64_t *lohi, unsigned ndim);
/* Keeps [lohi[2k], lohi[2k+1]) of axis k. */
uj_tensor *uj_tensor_shrink(uj_tensor *a, const int64_t *lohi, unsigned ndim);
/* Negative axes count from the end; n == 0 means every axis. */
uj_tensor *uj_tensor_cat(uj_tensor *const *ts, unsigned n, int axis);
uj_tensor *uj_tensor_stack(uj_tensor *const *ts, unsigned n, int axis);
/* out[.., i, ..] = a[.., index[.., i, ..], ..] along axis; index is an
 * integer tensor of a's rank, its other axes no larger than a's. */
uj_tensor *uj_tensor_gather(uj_tensor *a, int axis, uj_tensor *index);

/* ---- reductions ---- */
typedef enum uj_reduceop {
  UJ_RED_SUM, UJ_RED_MAX, UJ_RED_MIN, UJ_RED_MEAN, UJ_RED_ARGMAX, UJ_RED_ARGMIN,
  UJ_RED_COUNT
} uj_reduceop;
/* Over axes[0..n) (negative count from the end; n == 0: every axis).
 * ARGMAX/ARGMIN take one axis (or n == 0: the flat index) and give int32,
 * the first index on ties. */
uj_tensor *uj_tensor_reduce(uj_reduceop op, uj_tensor *a, const int *axes, unsigned n, bool keepdim);
uj_tensor *uj_tensor_softmax(uj_tensor *a, int axis);
uj_tensor *uj_tensor_log_softmax(uj_tensor *a, int axis);

/* ---- linear algebra and convolution ---- */
/* NumPy matmul: 1-D operands are vectors, batch axes broadcast. */
uj_tensor *uj_tensor_matmul(uj_tensor *a, uj_tensor *b);
/* x (N, C, H, W), w (O, C/groups, KH, KW), bias (O) or NULL. stride,
 * padding, dilation: [h, w]; NULL means 1, 0, 1. */
uj_tensor *uj_tensor_conv2d(uj_tensor *x, uj_tensor *w, uj_tensor *bias, const int64_t *stride,
                            const int64_t *padding, const int64_t *dilation, int64_t groups);
/* x (..., H, W); kernel [h, w]; stride NULL: the kernel size; padding
 * NULL: 0 (max pool pads with -inf, avg pool counts only real elements). */
uj_tensor *uj_tensor_maxpool2d(uj_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding);
uj_tensor *uj_tensor_avgpool2d(uj_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding);

/* ---- layers (docs/autodiff.md) ---- */
/* (x - mean) / sqrt(var + eps) over the last axis (the biased variance),
 * times weight, plus bias (each of the last axis's size, or NULL). */
uj_tensor *uj_tensor_layernorm(uj_tensor *x, uj_tensor *weight, uj_tensor *bias, double eps);
/* The mean over rows of -log_softmax(logits)[row, target[row]]: logits
 * (N, C) float, target (N,) integer; rows whose target is ignore_index
 * count for nothing, in the sum or the count (all ignored: NaN). */
uj_tensor *uj_tensor_cross_entropy(uj_tensor *logits, uj_tensor *target, int64_t ignore_index);
/* softmax(q k^T / sqrt(D)) v over the last two axes: q (.., T, D), k
 * (.., S, D), v (.., S, E), batch axes equal; causal: a query sees the
 * keys up to its own position, the queries being the last T of S. On the
 * CPU, one flash-style kernel (docs/schedule.md "Online fusion"). */
uj_tensor *uj_tensor_attention(uj_tensor *q, uj_tensor *k, uj_tensor *v, bool causal);
/* Dropout as in training (PyTorch's): each element of x (a float tensor)
 * kept with probability 1 - p and multiplied by 1 / (1 - p), else 0;
 * p = 0 gives x, p = 1 zeros, p outside [0, 1] is an error. The mask is
 * not stored: every kernel that needs it (the forward, the backward)
 * computes it from the session's generator (below), read when the
 * tensor is computed. Each call in one generation draws its own mask
 * (the calls are numbered); p is rounded to a multiple of 2^-32. */
uj_tensor *uj_tensor_dropout(uj_tensor *x, double p);
/* The session's generator (Philox-4x32-10, docs/autodiff.md "Dropout"):
 * its key and generation live in a device buffer, so moving it compiles
 * nothing. _seed: key = seed, generation 0 (a session starts at seed 0);
 * _next: the next generation. Both number the dropout calls from 0
 * again, so a loop that builds the same graph each step gets the same
 * graph with new masks; uj_optim_step moves to the next generation after
 * computing the grads of a step that drew masks. A tensor computed after
 * the generator moved uses its new state: realize first what must keep
 * its masks. */
uj_status uj_session_rng_seed(uj_session *s, uint64_t seed);
uj_status uj_session_rng_next(uj_session *s);

/* ---- computing ---- */
/* Computes the tensors (one schedule for all), after which each reads a
 * buffer of the device. */
uj_status uj_tensor_realize(uj_tensor *const *ts, size_t n);
/* Writes src's value (broadcast and cast to dst's shape and dtype) into
 * dst's buffer, now; dst is realized first if it is not a buffer. A
 * buffer is read when a tensor is realized: tensors whose graphs read
 * dst's buffer and are realized later see the new values (views of dst
 * are meant to), those realized before keep theirs. In place where src
 * reads dst's buffer only at the element it writes (x = x * 0.9 + g),
 * else through a temporary buffer (x = x.T). */
uj_status uj_tensor_assign(uj_tensor *dst, uj_tensor *src);
/* Realizes t and copies its numel elements (C order) to dst. */
uj_status uj_tensor_to_host(uj_tensor *t, void *dst, size_t bytes);
/* What realizing t would run, as text: "kernels" (one line a kernel: name,
 * buffers, shapes), "uops" (each kernel's UOps), "ir" (each kernel's LLVM
 * IR). malloc'd; NULL and a message on error. */
char *uj_tensor_schedule_text(uj_tensor *t, const char *what);
/* Every kernel realizing t would run, scheduled and shaped for the target
 * of kind and arch (as uj_emit: arch NULL is the host CPU, sm_90 for PTX,
 * gfx90a for AMDGCN), so what is printed is what that target runs: a
 * line "N kernels for TARGET", then per kernel its line as "kernels"
 * gives it and its stage, the function named as the kernel. UJ_EMIT_HSACO
 * is refused (one binary a kernel). malloc'd; NULL and a message on
 * error. */
char *uj_tensor_emit(uj_tensor *t, uj_emit_kind kind, const char *arch);
/* Graphviz DOT of t (docs/tool.md, "Pictures"): view "graph" (its lazy
 * tensor graph), "schedule" (the kernels realizing it would run as boxes,
 * the buffers between them), or "kernel N" (kernel N's UOps as shaped for
 * the session's device). malloc'd; NULL and a message on error. */
char *uj_tensor_dot(uj_tensor *t, const char *view);
/* Number of kernels realizing t would run (0 when t is already a buffer;
 * (size_t)-1 and a message on error). */
size_t uj_tensor_kernel_count(uj_tensor *t);
void uj_tensor_free(uj_tensor *t);

/* ---- gradients (docs/autodiff.md) ---- */
/* The gradients of loss with respect to wrt[0..n) into out[0..n), as lazy
 * tensors of their shapes and dtypes (reverse mode: a graph the scheduler
 * fuses like any other). seed: d(result)/d(loss), of loss's shape; NULL
 * for a loss of one element (seed 1). wrt must be float tensors; one that
 * loss does not depend on gets zeros. The result can be differentiated
 * again. */
uj_status uj_tensor_gradients(uj_tensor *loss, uj_tensor *seed, uj_tensor *const *wrt, size_t n, uj_tensor **out);
/* Marks t (a float tensor) as a parameter, realizing it first so that it
 * reads a buffer of its own; false unmarks it. */
uj_status uj_tensor_set_requires_grad(uj_tensor *t, bool on);
bool uj_tensor_requires_grad(const uj_tensor *t);
/* The gradient of loss (one element) with respect to every live parameter
 * it reads, added to each one's grad (lazy; uj_tensor_zero_grad drops
 * it); a parameter the loss does not read keeps its grad as it was. */
uj_status uj_tensor_backward(uj_tensor *loss);
uj_tensor *uj_tensor_grad(const uj_tensor *t); /* t's gradient, or NULL */
void uj_tensor_zero_grad(uj_tensor *t);

/* ---- optimizers (docs/autodiff.md) ---- */
typedef enum uj_optim_kind { UJ_OPTIM_SGD, UJ_OPTIM_ADAMW } uj_optim_kind;
typedef struct uj_optim_config {
  uj_optim_kind kind;
  double lr;
  double momentum;      /* SGD: 0 for none */
  double beta1, beta2;  /* AdamW: 0 for 0.9, 0.999 */
  double eps;           /* AdamW: 0 for 1e-8 */
  double weight_decay;  /* SGD: added to the gradient (L2); AdamW: decoupled */
  double max_grad_norm; /* > 0: gradients scaled so their global norm is at most this */
} uj_optim_config;
typedef struct uj_optimizer uj_optimizer;
/* An optimizer of params[0..n) (parameters: uj_tensor_set_requires_grad),
 * which must live as long as it; its moments and grad buffers live in
 * device buffers of the session. NULL and a message on error. */
uj_optimizer *uj_optim_new(uj_session *s, const uj_optim_config *cfg, uj_tensor *const *params, size_t n);
/* One step: every parameter's grad (and also[0..nalso), the loss, say,
 * so that the forward is computed once) in one schedule, then every
 * parameter and moment updated in place in one schedule. Parameters
 * without a grad are left as they are. The learning rate and the bias
 * corrections are read from a device buffer: changing them never
 * compiles anything. */
uj_status uj_optim_step(uj_optimizer *o, uj_tensor *const *also, size_t nalso);
/* Drops every parameter's grad (uj_tensor_zero_grad). */
void uj_optim_zero_grad(uj_optimizer *o);
void uj_optim_set_lr(uj_optimizer *o, double lr);
double uj_optim_lr(const uj_optimizer *o);
/* The global norm of the gradients the last step read (before clipping);
 * NaN before the first step or without max_grad_norm. */
double uj_optim_grad_norm(const uj_optimizer *o);
/* The optimizer's state of params[i], which a checkpoint saves and
 * restores (read it with uj_tensor_to_host, write it with
 * uj_tensor_assign): which 0 is AdamW's first moment or SGD's momentum
 * buffer, 1 AdamW's second moment; NULL where there is none. The tensor
 * is the optimizer's: do not free it. */
uj_tensor *uj_optim_state(uj_optimizer *o, size_t i, int which);
/* The steps taken (AdamW's bias corrections count them); -1 for NULL.
 * _set: where a resumed run goes on from (at least 0). */
int64_t uj_optim_steps(const uj_optimizer *o);
uj_status uj_optim_set_steps(uj_optimizer *o, int64_t steps);
void uj_optim_free(uj_optimizer *o);

#ifdef __cplusplus
}
#endif
#endif
