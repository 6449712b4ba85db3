/* realize.c — computing tensors (tensor.h): their graphs are scheduled
 * into kernels (lib/schedule), run on the session's device (lib/runtime),
 * and each realized tensor then reads its BUFFER. Nodes computed before
 * are seen through the session's map of realized nodes, so nothing is
 * computed twice; a graph scheduled before takes its schedule from the
 * session's cache (schedule.h), so it is not cut or optimized twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm/emit.h"
#include "runtime/progress.h"
#include "tensor/tensor_impl.h"
#include "uop/alu.h"
#include "uop/nodemap.h"
#include "uop/strbuf.h"

static const UOp *known_view(void *user, const UOp *u, const UOp *rebuilt) {
  const uj_session *s = user;
  return u->id < s->cap_known && s->known[u->id] ? s->known[u->id] : rebuilt;
}

/* The schedule of ts for target (NULL: the session's device, with its
 * cache of schedules). */
static Schedule *schedule_for(uj_session *s, uj_tensor *const *ts, size_t n, const ScheduleTarget *target) {
  const UOp **roots = malloc((n ? n : 1) * sizeof *roots);
  if (!roots) return tensor_fail(s, "realize", "out of memory");
  for (size_t i = 0; i < n; i++) roots[i] = ts[i]->node;
  Schedule *sch = schedule_make(s->ctx, roots, n, NULL, known_view, s, &s->next_buffer_id, target ? target : &s->target,
                                target ? NULL : s->schedules);
  free(roots);
  return sch;
}

/* A schedule's run as a status: a failure with uj_interrupt's request
 * set is the interruption runtime_run reported. */
static uj_status run_status(bool ok) {
  return ok ? UJ_OK : interrupt_requested() ? UJ_ERR_INTERRUPTED : UJ_ERR_COMPILE;
}

uj_status uj_tensor_realize(uj_tensor *const *ts, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!ts[i]) return UJ_ERR_ARG;
  if (n == 0) return UJ_OK;
  uj_session *s = ts[0]->s;
  bool done = true;
  for (size_t i = 0; i < n; i++)
    if (ts[i]->s != s) return tensor_fail(s, "realize", "the tensors belong to different sessions"), UJ_ERR_ARG;
  tensor_collect_buffers(s); /* freed tensors' memory, and their values, go at every realize, a no-op one too */
  for (size_t i = 0; i < n; i++) {
    const UOp *u = ts[i]->node, *view = u->id < s->cap_known ? s->known[u->id] : NULL;
    done &= view || schedule_view_buffer(u);
  }
  if (done) { /* each is a buffer, or was computed into one: nothing to schedule (or to keep in the cache) */
    for (size_t i = 0; i < n; i++) ts[i]->node = known_view(s, ts[i]->node, ts[i]->node);
    return UJ_OK;
  }
  tensor_collect_nodes(s);
  Schedule *sch = schedule_for(s, ts, n, NULL);
  bool ok = sch && runtime_run(s->device, sch, &s->buffers);
  for (size_t i = 0; ok && i < n; i++) {
    ok = tensor_known_set(s, ts[i]->node, sch->outputs[i]);
    ts[i]->node = sch->outputs[i];
  }
  schedule_free(sch);
  return run_status(ok);
}

/* Appends u to the growing array *a (*n items, room for *cap). */
static bool node_push(const UOp ***a, size_t *n, size_t *cap, const UOp *u) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 64;
    const UOp **g = realloc(*a, c * sizeof *g);
    if (!g) return false;
    *a = g, *cap = c;
  }
  (*a)[(*n)++] = u;
  return true;
}

/* The nodes reachable from roots[0..n) whose id is at least b's (no older
 * node can read b: ids are topological) numbered in map, and in *reads
 * (by that number) whether each one's graph reads b. The walk costs what
 * it visits above b, not the context. False when out of memory. */
static bool graphs_reading(const UOp *b, const UOp *const *roots, size_t n, NodeMap *map, bool **reads) {
  const UOp **found = NULL, **stack = NULL;
  size_t nfound = 0, cap = 0, depth = 0, cap_stack = 0;
  bool ok = true;
  for (size_t r = 0; ok && r < n; r++) {
    const UOp *u = roots[r];
    if (u->id < b->id || nodemap_find(map, u) != NODEMAP_NONE) continue;
    ok = nodemap_add(map, u) != NODEMAP_NONE && node_push(&found, &nfound, &cap, u) && node_push(&stack, &depth, &cap_stack, u);
    while (ok && depth > 0) { /* numbered when first met: a node's number is its place in found */
      u = stack[--depth];
      for (uint32_t k = 0; ok && k < u->nsrc; k++) {
        const UOp *x = u->src[k];
        if (x->id < b->id || nodemap_find(map, x) != NODEMAP_NONE) continue;
        ok = nodemap_add(map, x) != NODEMAP_NONE && node_push(&found, &nfound, &cap, x) && node_push(&stack, &depth, &cap_stack, x);
      }
    }
  }
  bool *rd = ok ? calloc(nfound ? nfound : 1, sizeof *rd) : NULL;
  const UOp **order = rd ? malloc((nfound ? nfound : 1) * sizeof *order) : NULL;
  if (order) { /* in id order, sources first: a node reads b when it is b or a source reads it */
    if (nfound) memcpy(order, found, nfound * sizeof *order);
    qsort(order, nfound, sizeof *order, uop_cmp_id);
    for (size_t i = 0; i < nfound; i++) {
      bool r = order[i] == b;
      for (uint32_t k = 0; !r && k < order[i]->nsrc; k++) {
        uint32_t at = order[i]->src[k]->id >= b->id ? nodemap_find(map, order[i]->src[k]) : NODEMAP_NONE;
        r = at != NODEMAP_NONE && rd[at];
      }
      rd[nodemap_find(map, order[i])] = r;
    }
  }
  free(found), free(stack), free(order);
  map->ctx->work += nfound; /* the nodes visited (test_scale) */
  if (!order) free(rd), rd = NULL;
  *reads = rd;
  return rd != NULL;
}

/* After value was written into b (seen as view): forgets every realized
 * node whose value came from b's old contents (its graph reads b) or was
 * kept in b, then records that value is in view — unless value's graph
 * reads b itself (x = x + 1): built again, that graph means the new
 * contents plus one. One walk over the realized nodes' graphs above b. */
static bool forget_buffer(uj_session *s, const UOp *b, const UOp *value, const UOp *view) {
  const UOp **roots = malloc((s->nknown + 1) * sizeof *roots);
  NodeMap map = nodemap_make(s->ctx);
  bool *reads = NULL;
  if (roots) {
    roots[0] = value;
    for (size_t k = 0; k < s->nknown; k++) roots[k + 1] = s->ctx->nodes[s->known_ids[k]];
  }
  bool ok = roots && graphs_reading(b, roots, s->nknown + 1, &map, &reads);
  free(roots);
  if (!ok) return nodemap_free(&map), tensor_fail(s, "assign", "out of memory"), false;
  s->ctx->work += s->nknown;
  for (size_t k = s->nknown; k-- > 0;) {
    const UOp *u = s->ctx->nodes[s->known_ids[k]];
    uint32_t at = u->id >= b->id ? nodemap_find(&map, u) : NODEMAP_NONE;
    if ((at != NODEMAP_NONE && reads[at]) || s->known[u->id]->src[0] == b) tensor_known_drop(s, k);
  }
  uint32_t at = value->id >= b->id ? nodemap_find(&map, value) : NODEMAP_NONE;
  bool self = at != NODEMAP_NONE && reads[at];
  free(reads);
  nodemap_free(&map);
  return self || tensor_known_set(s, value, view);
}

uj_status tensor_run(uj_session *s, const UOp *const *values, size_t n, uj_tensor *const *into, const UOp **views) {
  const UOp **bufs = calloc(n ? n : 1, sizeof *bufs);
  if (!bufs) return tensor_fail(s, "realize", "out of memory"), UJ_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) bufs[i] = into[i] ? schedule_view_buffer(into[i]->node) : NULL;
  tensor_collect_buffers(s); /* not the nodes: values may be no live tensor's */
  Schedule *sch = schedule_make(s->ctx, values, n, bufs, known_view, s, &s->next_buffer_id, &s->target, s->schedules);
  bool ok = sch && runtime_run(s->device, sch, &s->buffers);
  uj_status st = run_status(ok);
  for (size_t i = 0; st == UJ_OK && i < n; i++) {
    if (into[i] && !forget_buffer(s, bufs[i], values[i], into[i]->node)) st = UJ_ERR_NOMEM;
    if (!into[i] && !tensor_known_set(s, values[i], sch->outputs[i])) st = UJ_ERR_NOMEM;
    if (!into[i]) views[i] = sch->outputs[i];
  }
  schedule_free(sch);
  free(bufs);
  return st;
}

uj_status tensor_assign_many(uj_session *s, uj_tensor *const *dsts, const UOp *const *values, size_t n) {
  return tensor_run(s, values, n, dsts, NULL);
}

/* Whether a live tensor other than t holds t's node (a realized view:
 * equal values realized into one buffer). A view of another shape (a
 * reshape of t) shares t's memory on purpose, as PyTorch's views do. */
static bool shares_view(const uj_session *s, const uj_tensor *t) {
  for (size_t i = 0; i < s->ntensors; i++)
    if (s->tensors[i] != t && s->tensors[i]->node == t->node) return true;
  return false;
}

uj_status uj_tensor_assign(uj_tensor *dst, uj_tensor *src) {
  if (!dst || !src) return UJ_ERR_ARG;
  uj_session *s = dst->s;
  if (src->s != s) return tensor_fail(s, "assign", "the tensors belong to different sessions"), UJ_ERR_ARG;
  uj_status st = uj_tensor_realize(&dst, 1);
  if (st != UJ_OK) return st;
  const UOp *view = dst->node;
  const UOp *value = node_broadcast(s, "assign", node_cast(s, src->node, (uj_scalar)view->dtype.scalar), view->shape, view->ndim);
  if (!value) return UJ_ERR_ARG;
  if (!shares_view(s, dst)) return tensor_assign_many(s, &dst, &value, 1);
  /* another tensor holds the same view (equal values realize into one
   * buffer: two zeros of one shape): dst moves to a buffer of its own */
  uj_tensor *none = NULL;
  const UOp *fresh = NULL;
  st = tensor_run(s, &value, 1, &none, &fresh);
  if (st == UJ_OK) dst->node = fresh;
  return st;
}

uj_status tensor_write(uj_tensor *t, const void *data, size_t bytes) {
  uj_session *s = t->s;
  const UOp *b = schedule_view_buffer(t->node);
  RtBuffer *mem = b ? buffer_table_get(&s->buffers, b->ints[0]) : NULL;
  if (!mem || mem->bytes != bytes) return tensor_fail(s, "write", "the tensor's buffer does not hold %zu bytes", bytes), UJ_ERR_ARG;
  if (!s->device->ops->copy_in(s->device, mem->mem, data, bytes)) return UJ_ERR_IO;
  return forget_buffer(s, b, t->node, t->node) ? UJ_OK : UJ_ERR_NOMEM;
}

uj_status uj_tensor_to_host(uj_tensor *t, void *dst, size_t bytes) {
  if (!t) return UJ_ERR_ARG;
  uj_session *s = t->s;
  size_t need = (size_t)uj_tensor_numel(t) * elem_bytes(dt_base(t->node->dtype));
  if (bytes != need) return tensor_fail(s, "to_host", "%zu bytes given, the tensor has %zu", bytes, need), UJ_ERR_ARG;
  uj_status st = uj_tensor_realize(&t, 1);
  if (st != UJ_OK) return st;
  const UOp *b = schedule_view_buffer(t->node);
  RtBuffer *mem = b ? buffer_table_get(&s->buffers, b->ints[0]) : NULL;
  if (!mem) return tensor_fail(s, "to_host", "the tensor's buffer holds nothing"), UJ_ERR_ARG;
  return s->device->ops->copy_out(s->device, dst, mem->mem, bytes) ? UJ_OK : UJ_ERR_IO;
}

/* ---- what realizing would run ---- */

static void describe_item(StrBuf *out, const ScheduleItem *it, size_t j) {
  char b[128];
  const UOp *o = it->output;
  strbuf_add(out, "kernel %zu %s: writes buffer %lld %s", j, it->name, (long long)o->ints[0],
           dtype_str(dt_base(o->dtype), b, sizeof b));
  strbuf_add(out, "[%lld]", (long long)o->ints[1]);
  for (size_t k = 0; k < it->ninputs; k++)
    strbuf_add(out, "%s%lld", k ? ", " : "; reads buffers ", (long long)it->inputs[k]->ints[0]);
  if (it->ndeps) strbuf_add(out, "; after kernel");
  for (size_t k = 0; k < it->ndeps; k++) strbuf_add(out, " %zu", it->deps[k]);
  strbuf_add(out, "\n");
}

/* What a listing prints of each kernel after its line: nothing, its
 * UOps, or a stage uj_emit makes of it for arch. */
typedef struct Stage {
  enum { STAGE_NONE, STAGE_UOPS, STAGE_EMIT } what;
  uj_emit_kind kind;
  const char *arch;
} Stage;

static bool describe_stage(uj_session *s, StrBuf *out, const ScheduleItem *it, const Stage *st) {
  if (st->what == STAGE_NONE) return true;
  char *text = st->what == STAGE_UOPS ? uj_print(s->ctx, it->kernel)
                                      : emit_kernel(s->ctx, it->kernel, st->kind, st->arch, it->name, NULL);
  if (!text) return false;
  strbuf_add(out, "%s%s", text, text[0] && text[strlen(text) - 1] == '\n' ? "" : "\n");
  free(text);
  return true;
}

Schedule *tensor_schedule_preview(uj_tensor *t, const ScheduleTarget *target) {
  int64_t next = t->s->next_buffer_id;
  Schedule *sch = schedule_for(t->s, &t, 1, target);
  t->s->next_buffer_id = next;
  return sch;
}

/* "N kernels[ for TARGET]", then each kernel's line and its stage. */
static char *listing(uj_tensor *t, const ScheduleTarget *target, const char *for_name, const Stage *st, const char *op) {
  uj_session *s = t->s;
  Schedule *sch = tensor_schedule_preview(t, target);
  if (!sch) return NULL;
  StrBuf out = {0};
  strbuf_add(&out, "%zu kernel%s%s%s\n", sch->nitems, sch->nitems == 1 ? "" : "s", for_name ? " for " : "",
             for_name ? for_name : "");
  bool ok = true;
  for (size_t j = 0; ok && j < sch->nitems; j++) {
    describe_item(&out, &sch->items[j], j);
    ok = describe_stage(s, &out, &sch->items[j], st);
  }
  schedule_free(sch);
  if (!ok || out.failed) {
    free(out.buf);
    return ok ? tensor_fail(s, op, "out of memory") : NULL;
  }
  return out.buf;
}

char *uj_tensor_schedule_text(uj_tensor *t, const char *what) {
  if (!t) return NULL;
  if (!what || (strcmp(what, "kernels") && strcmp(what, "uops") && strcmp(what, "ir")))
    return tensor_fail(t->s, "schedule_text", "'%s' is not one of kernels, uops, ir", what ? what : "(null)");
  Stage st = {!strcmp(what, "kernels") ? STAGE_NONE : !strcmp(what, "uops") ? STAGE_UOPS : STAGE_EMIT, UJ_EMIT_IR_OPT, NULL};
  return listing(t, NULL, NULL, &st, "schedule_text");
}

char *uj_tensor_emit(uj_tensor *t, uj_emit_kind kind, const char *arch) {
  if (!t) return NULL;
  uj_session *s = t->s;
  if (kind == UJ_EMIT_HSACO)
    return tensor_fail(s, "emit", "hsaco is one binary a kernel: emit amdgcn, or an IR kernel's hsaco");
  const TargetDesc *desc = emit_target_desc(s->ctx, kind, arch);
  if (!desc) return NULL;
  ScheduleTarget other = {desc->name, desc->index_bits, {.desc = desc}};
  Stage st = {STAGE_EMIT, kind, arch};
  return listing(t, desc == s->device->desc ? NULL : &other, desc->name, &st, "emit");
}

size_t uj_tensor_kernel_count(uj_tensor *t) {
  if (!t) return (size_t)-1;
  Schedule *sch = tensor_schedule_preview(t, NULL);
  size_t n = sch ? sch->nitems : (size_t)-1;
  schedule_free(sch);
  return n;
}
