/* run.c — buffer tables and running a schedule (run.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/progress.h"
#include "runtime/run.h"
#include "uop/alu.h"

static bool buffer_table_grow(BufferTable *t, size_t id) {
  size_t cap = t->cap ? t->cap : 64;
  while (cap <= id) cap *= 2;
  RtBuffer **by_id = realloc(t->by_id, cap * sizeof *by_id);
  if (by_id) t->by_id = by_id;
  size_t *at = by_id ? realloc(t->at, cap * sizeof *at) : NULL;
  if (at) t->at = at;
  int64_t *ids = at ? realloc(t->ids, cap * sizeof *ids) : NULL; /* at most cap ids */
  if (!ids) return false;
  t->ids = ids;
  memset(by_id + t->cap, 0, (cap - t->cap) * sizeof *by_id);
  memset(at + t->cap, 0, (cap - t->cap) * sizeof *at);
  t->cap = cap;
  return true;
}

bool buffer_table_set(BufferTable *t, int64_t id, RtBuffer *b) {
  if (id < 0) return false;
  if ((size_t)id >= t->cap && !buffer_table_grow(t, (size_t)id)) return false;
  RtBuffer *old = t->by_id[id];
  if (!old && b) t->ids[t->nids++] = id, t->at[id] = t->nids;
  if (old && !b) { /* swap-remove */
    size_t k = t->at[id] - 1;
    t->ids[k] = t->ids[--t->nids], t->at[t->ids[k]] = k + 1, t->at[id] = 0;
  }
  rt_buffer_ref(b);
  rt_buffer_unref(old);
  t->by_id[id] = b;
  return true;
}

RtBuffer *buffer_table_get(const BufferTable *t, int64_t id) {
  return id >= 0 && (size_t)id < t->cap ? t->by_id[id] : NULL;
}

void buffer_table_free(BufferTable *t) {
  for (size_t i = 0; i < t->nids; i++) rt_buffer_unref(t->by_id[t->ids[i]]);
  free(t->by_id);
  free(t->at);
  free(t->ids);
  *t = (BufferTable){0};
}

static size_t buffer_bytes(const UOp *buffer) { return (size_t)buffer->ints[1] * elem_bytes(dt_base(buffer->dtype)); }

/* The memory item j writes: its slab, the memory the BUFFER has already
 * (an assignment), or new memory for a root. */
static RtBuffer *output_memory(Device *d, const Schedule *s, const BufferTable *t, RtBuffer **slabs, size_t j) {
  long slab = s->slab_of_item[j];
  RtBuffer *have = buffer_table_get(t, s->items[j].output->ints[0]);
  if (have) return rt_buffer_ref(have);
  if (slab < 0) return rt_buffer_new(d, buffer_bytes(s->items[j].output));
  if (!slabs[slab]) slabs[slab] = rt_buffer_new(d, s->slab_bytes[slab]);
  return rt_buffer_ref(slabs[slab]);
}

static bool run_item(Device *d, const Schedule *s, BufferTable *t, RtBuffer **slabs, size_t j) {
  const ScheduleItem *it = &s->items[j];
  enum { SMALL = 16 };
  size_t n = it->ninputs + 1;
  void *small[SMALL], **args = n <= SMALL ? small : malloc(n * sizeof *args);
  size_t small_bytes[SMALL], *bytes = n <= SMALL ? small_bytes : malloc(n * sizeof *bytes);
  RtBuffer *out = args && bytes ? output_memory(d, s, t, slabs, j) : NULL;
  bool ok = out && buffer_table_set(t, it->output->ints[0], out);
  rt_buffer_unref(out);
  if (ok) args[0] = out->mem, bytes[0] = buffer_bytes(it->output); /* the BUFFER's: a slab may be bigger */
  for (size_t k = 0; ok && k < it->ninputs; k++) {
    RtBuffer *in = buffer_table_get(t, it->inputs[k]->ints[0]);
    if (!in) ctx_set_error(d->ctx, "run: kernel %s reads buffer %lld, which holds nothing", it->name, (long long)it->inputs[k]->ints[0]);
    ok = in != NULL;
    if (ok) args[k + 1] = in->mem, bytes[k + 1] = buffer_bytes(it->inputs[k]);
  }
  void *program = ok ? device_program(d, it->kernel, it->name) : NULL;
  ok = program && device_launch(d, program, &(LaunchArgs){.buffers = args, .bytes = bytes, .n = n});
  if (args != small) free(args);
  if (bytes != small_bytes) free(bytes);
  if (!bytes) ctx_set_error(d->ctx, "run: out of memory");
  if (!args) ctx_set_error(d->ctx, "run: out of memory");
  return ok;
}

/* Whether s may stop halfway: only when every kernel writes memory the
 * run makes; one that writes a tensor's existing buffer (an assignment,
 * an optimizer step) runs to its end, so no tensor is left half-updated. */
static bool interruptible(const Schedule *s, const BufferTable *t) {
  for (size_t j = 0; j < s->nitems; j++)
    if (buffer_table_get(t, s->items[j].output->ints[0])) return false;
  return true;
}

bool runtime_run(Device *d, const Schedule *s, BufferTable *t) {
  RtBuffer **slabs = calloc(s->nslabs ? s->nslabs : 1, sizeof *slabs);
  bool ok = slabs != NULL, stoppable = interruptible(s, t);
  Progress progress;
  progress_begin(&progress);
  for (size_t j = 0; ok && j < s->nitems; j++) {
    if (stoppable && interrupt_requested()) {
      ctx_set_error(d->ctx, "interrupted");
      ok = false;
      break;
    }
    progress_show(&progress, "kernel %zu of %zu (%s)", j + 1, s->nitems, s->items[j].name);
    ok = run_item(d, s, t, slabs, j);
  }
  progress_end(&progress);
  bool synced = d->ops->synchronize(d, NULL); /* before the host frees a temp's memory or reads a result; */
  ok = ok && synced;                          /* after a failure too: nothing issued runs later */
  for (size_t j = 0; j < s->nitems; j++) /* temps die with the run */
    if (s->slab_of_item[j] >= 0) buffer_table_set(t, s->items[j].output->ints[0], NULL);
  for (size_t k = 0; slabs && k < s->nslabs; k++) rt_buffer_unref(slabs[k]);
  free(slabs);
  if (!slabs) ctx_set_error(d->ctx, "run: out of memory");
  return ok;
}
