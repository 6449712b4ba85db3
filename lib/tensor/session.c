/* session.c — sessions and tensors (tensor.h): making and freeing them,
 * errors, the map of realized nodes, and collecting device memory that no
 * live tensor can read any more. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/beam.h"
#include "tensor/tensor_impl.h"
#include "uop/alu.h"

uj_session *uj_session_new(const char *device, const char **error) {
  const char *dummy;
  if (!error) error = &dummy;
  uj_session *s = calloc(1, sizeof *s);
  if (!s) return *error = "out of memory", NULL;
  s->ctx = uj_ctx_new();
  if (!s->ctx) return free(s), *error = "out of memory", NULL;
  s->device = device_open(s->ctx, device, error);
  if (!s->device) return uj_ctx_free(s->ctx), free(s), NULL;
  s->target = (ScheduleTarget){s->device->name, s->device->desc->index_bits, {.desc = s->device->desc}};
  s->target.opt.search = beam_new(s->device); /* UJ_BEAM: NULL when unset */
  s->max_elements = SHAPE_MAX_ELEMENTS;
  s->collect_at = SESSION_COLLECT_MIN;
  s->schedules = schedule_cache_new();
  if (!s->schedules) return uj_session_free(s), *error = "out of memory", NULL;
  return s;
}

void uj_session_free(uj_session *s) {
  if (!s) return;
  for (size_t i = 0; i < s->ntensors; i++) free(s->tensors[i]);
  free(s->tensors);
  free(s->known);
  free(s->known_ids);
  free(s->live_mark);
  buffer_table_free(&s->buffers);
  schedule_cache_free(s->schedules);
  beam_free(s->target.opt.search);
  device_close(s->device); /* programs before the context that owns them */
  uj_ctx_free(s->ctx);
  free(s);
}

const char *uj_session_error(const uj_session *s) { return uj_error(s->ctx); }
void uj_session_clear_error(uj_session *s) { ctx_clear_error(s->ctx); }
uj_ctx *uj_session_ctx(uj_session *s) { return s->ctx; }

void *tensor_fail(uj_session *s, const char *op, const char *fmt, ...) {
  char msg[sizeof s->ctx->error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx_set_error(s->ctx, "%s: %s", op, msg);
  return NULL;
}

void tensor_set_max_elements(uj_session *s, int64_t n) { s->max_elements = n >= 0 && n < SHAPE_MAX_ELEMENTS ? n : SHAPE_MAX_ELEMENTS; }

/* "2^40" for a power of two, else the number. */
static const char *limit_str(int64_t n, char *buf, size_t size) {
  if (n > 0 && !(n & (n - 1))) snprintf(buf, size, "2^%d", __builtin_ctzll((unsigned long long)n));
  else snprintf(buf, size, "%lld", (long long)n);
  return buf;
}

bool tensor_check_shape(uj_session *s, const char *op, const int64_t *shape, unsigned ndim) {
  char a[160], lim[32];
  int64_t span = shape_span(shape, ndim);
  if (span >= 0 && span <= s->max_elements) return true;
  limit_str(s->max_elements, lim, sizeof lim);
  shape_str(shape, ndim, a, sizeof a);
  for (unsigned k = 0; k < ndim; k++)
    if (shape[k] < 0) return tensor_fail(s, op, "shape %s: axis %u has negative size %lld", a, k, (long long)shape[k]), false;
  if (shape_numel(shape, ndim) == 0) /* (0, 2^62): no elements, but its strides would overflow */
    tensor_fail(s, op, "shape %s is too large: its sizes, a 0 counted as 1, multiply past %s", a, lim);
  else
    tensor_fail(s, op, "shape %s is too large: more than %s elements", a, lim);
  return false;
}

uj_tensor *tensor_wrap(uj_session *s, const char *op, const UOp *node) {
  if (!node || !tensor_check_shape(s, op, node->shape, node->ndim)) return NULL;
  if (s->ntensors == s->cap_tensors) {
    size_t cap = s->cap_tensors ? 2 * s->cap_tensors : 64;
    uj_tensor **ts = realloc(s->tensors, cap * sizeof *ts);
    if (!ts) return tensor_fail(s, "tensor", "out of memory");
    s->tensors = ts, s->cap_tensors = cap;
  }
  uj_tensor *t = malloc(sizeof *t);
  if (!t) return tensor_fail(s, "tensor", "out of memory");
  *t = (uj_tensor){s, node, NULL, NULL, false};
  s->tensors[s->ntensors++] = t;
  return t;
}

bool tensor_known_set(uj_session *s, const UOp *node, const UOp *view) {
  if (node->id >= s->cap_known) {
    size_t cap = s->cap_known ? s->cap_known : 1024;
    while (cap <= node->id) cap *= 2;
    const UOp **k = realloc(s->known, cap * sizeof *k);
    if (!k) return tensor_fail(s, "realize", "out of memory"), false;
    memset(k + s->cap_known, 0, (cap - s->cap_known) * sizeof *k);
    s->known = k, s->cap_known = cap;
  }
  if (!s->known[node->id] && s->nknown == s->cap_known_ids) {
    size_t cap = s->cap_known_ids ? 2 * s->cap_known_ids : 256;
    uint32_t *ids = realloc(s->known_ids, cap * sizeof *ids);
    if (!ids) return tensor_fail(s, "realize", "out of memory"), false;
    s->known_ids = ids, s->cap_known_ids = cap;
  }
  if (!s->known[node->id]) s->known_ids[s->nknown++] = node->id;
  s->known[node->id] = view;
  return true;
}

void tensor_known_drop(uj_session *s, size_t k) {
  s->known[s->known_ids[k]] = NULL;
  s->known_ids[k] = s->known_ids[--s->nknown];
}

const UOp *tensor_new_buffer(uj_session *s, uj_scalar dtype, const int64_t *shape, unsigned ndim, RtBuffer **mem) {
  int64_t n = shape_numel(shape, ndim);
  size_t bytes = (size_t)n * elem_bytes(dt_scalar(dtype));
  *mem = rt_buffer_new(s->device, bytes);
  if (!*mem) return NULL;
  int64_t arg[2] = {s->next_buffer_id++, n};
  Arg a = {ctx_intern_string(s->ctx, s->device->name, strlen(s->device->name)), arg, 2};
  const UOp *b = uop_new(s->ctx, UJ_OP_BUFFER, uj_dtype_ptr(dtype, 1, UJ_AS_GLOBAL), NULL, 0, a);
  if (!b || !buffer_table_set(&s->buffers, arg[0], *mem)) {
    rt_buffer_unref(*mem), *mem = NULL;
    return tensor_fail(s, "tensor", "out of memory");
  }
  rt_buffer_unref(*mem); /* the table holds it */
  return uop_new(s->ctx, UJ_OP_RESHAPE, dt_scalar(dtype), &b, 1, (Arg){NULL, shape, ndim});
}

/* ---- reading ---- */

uj_session *uj_tensor_session(const uj_tensor *t) { return t ? t->s : NULL; }
unsigned uj_tensor_ndim(const uj_tensor *t) { return t ? t->node->ndim : 0; }
const int64_t *uj_tensor_shape(const uj_tensor *t) { return t ? t->node->shape : NULL; }
uj_scalar uj_tensor_dtype(const uj_tensor *t) { return t ? (uj_scalar)t->node->dtype.scalar : UJ_VOID; }
int64_t uj_tensor_numel(const uj_tensor *t) { return t ? shape_numel(t->node->shape, t->node->ndim) : 0; }
const uj_uop *uj_tensor_uop(const uj_tensor *t) { return t ? t->node : NULL; }

/* ---- freeing: memory no live tensor reads is released ---- */

/* The BUFFER a realized node's view reads. */
static int64_t known_buffer(const UOp *view) { return view->src[0]->ints[0]; }

static bool is_live(const uj_session *s, int64_t id) { return (size_t)id < s->cap_mark && s->live_mark[id] == s->epoch; }

/* Marks (with a new epoch) the BUFFERs live tensors read, directly or
 * through realized nodes: one walk over the live tensors' graphs, and a
 * mark table as long as the buffer table, never cleared. False when out
 * of memory. */
static bool mark_live(uj_session *s) {
  if (s->cap_mark < s->buffers.cap) {
    unsigned *m = realloc(s->live_mark, s->buffers.cap * sizeof *m);
    if (!m) return false;
    memset(m + s->cap_mark, 0, (s->buffers.cap - s->cap_mark) * sizeof *m);
    s->live_mark = m, s->cap_mark = s->buffers.cap;
  }
  if (++s->epoch == 0) { /* wrapped: old marks could match again */
    memset(s->live_mark, 0, s->cap_mark * sizeof *s->live_mark);
    s->epoch = 1;
  }
  const UOp **roots = malloc((s->ntensors ? s->ntensors : 1) * sizeof *roots), **nodes = NULL;
  for (size_t i = 0; roots && i < s->ntensors; i++) roots[i] = s->tensors[i]->node;
  const UOp *sink = roots && s->ntensors ? uop_new(s->ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), roots, s->ntensors, arg_none()) : NULL;
  size_t n = sink ? uop_toposort(s->ctx, sink, &nodes) : 0;
  for (size_t i = 0; i < n; i++) {
    const UOp *u = nodes[i];
    const UOp *view = u->id < s->cap_known ? s->known[u->id] : NULL;
    int64_t id = u->op == UJ_OP_BUFFER ? u->ints[0] : view ? known_buffer(view) : -1;
    if (id >= 0 && (size_t)id < s->cap_mark) s->live_mark[id] = s->epoch;
  }
  bool ok = roots && (n > 0 || s->ntensors == 0);
  free(roots), free(nodes);
  return ok;
}

/* Forgets the realized nodes and frees the memory of the BUFFERs no live
 * tensor reads: the cost of the live graphs, the known list and the
 * buffers held, not of every node or buffer the session ever made. */
static void collect_buffers(uj_session *s) {
  if (!mark_live(s)) return; /* out of memory: keep everything */
  s->ctx->work += s->nknown + s->buffers.nids; /* the entries looked at (test_scale) */
  for (size_t k = s->nknown; k-- > 0;)
    if (!is_live(s, known_buffer(s->known[s->known_ids[k]]))) tensor_known_drop(s, k);
  for (size_t i = s->buffers.nids; i-- > 0;) /* a removal moves the last id, already seen, to i */
    if (!is_live(s, s->buffers.ids[i])) buffer_table_set(&s->buffers, s->buffers.ids[i], NULL);
}

void tensor_collect_buffers(uj_session *s) {
  if (!s->nfreed) return;
  s->nfreed = 0;
  collect_buffers(s);
}

/* The realized map is by node id: its keys and views are kept as roots and
 * entered again under their new ids (never higher than the old: the map
 * has room for them). */
void tensor_collect_nodes(uj_session *s) {
  if (s->ctx->nnodes < s->collect_at) return;
  RootSet r = {0};
  size_t nknown = s->nknown;
  const UOp **keys = malloc((nknown ? nknown : 1) * sizeof *keys);
  const UOp **views = malloc((nknown ? nknown : 1) * sizeof *views);
  for (size_t i = 0; i < s->ntensors; i++) rootset_add(&r, s->tensors[i]->node);
  for (size_t k = 0; keys && views && k < nknown; k++) {
    keys[k] = s->ctx->nodes[s->known_ids[k]], views[k] = s->known[s->known_ids[k]];
    rootset_add(&r, keys[k]), rootset_add(&r, views[k]);
  }
  schedule_cache_roots(s->schedules, &r);
  device_roots(s->device, &r);
  bool ok = keys && views && uop_collect(s->ctx, &r);
  rootset_free(&r);
  if (ok) {
    for (size_t k = 0; k < nknown; k++) s->known[s->known_ids[k]] = NULL;
    s->nknown = 0;
    for (size_t k = 0; k < nknown; k++) tensor_known_set(s, keys[k], views[k]); /* no new memory */
    schedule_cache_renumbered(s->schedules);
    device_renumbered(s->device);
  } else { /* nothing was freed: the session goes on as it was */
    ctx_clear_error(s->ctx);
  }
  free(keys), free(views);
  size_t twice = 2 * s->ctx->nnodes;
  s->collect_at = twice > SESSION_COLLECT_MIN ? twice : SESSION_COLLECT_MIN;
}

/* Memory is collected at the next realize, not here: a graph being built
 * may read the buffer of a tensor freed before it is wrapped. */
void uj_tensor_free(uj_tensor *t) {
  if (!t) return;
  uj_session *s = t->s;
  if (t->grad) t->grad->grad_of = NULL, uj_tensor_free(t->grad);
  if (t->grad_of) t->grad_of->grad = NULL;
  for (size_t i = 0; i < s->ntensors; i++) {
    if (s->tensors[i] != t) continue;
    s->tensors[i] = s->tensors[--s->ntensors];
    break;
  }
  free(t);
  s->nfreed++;
}
