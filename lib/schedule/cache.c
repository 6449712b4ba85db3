/* cache.c — schedules kept for graphs scheduled again (schedule.h).
 *
 * In: the SINK of schedule_make's roots once `known` has replaced what is
 * computed, its `into`, and the schedule made of them, which numbered the
 * BUFFERs it made first_id, first_id + 1, ... in the order it made them.
 * Out, when the same sink and into come again: a copy of that schedule
 * whose BUFFERs are numbered from the next free id in the same order —
 * what cutting, rangeify and the optimizer would make again, without
 * running them. Kernels name no BUFFER (they read PARAM slots), so only
 * the items' outputs and inputs and the roots' views are renumbered. */
#include <stdlib.h>
#include <string.h>

#include "schedule/schedule.h"

enum { CACHE_SLOTS = 2 * SCHEDULE_CACHE_MAX }; /* a power of two: at most half full */

typedef struct Entry {
  const UOp *sink;    /* the key, with into; NULL: a free slot */
  const UOp **into;   /* per root, or NULL */
  Schedule *schedule; /* its BUFFERs numbered from first_id */
  int64_t first_id, nids;
} Entry;

struct ScheduleCache {
  Entry slots[CACHE_SLOTS]; /* open addressing by the sink's id */
  size_t n, hits;
};

ScheduleCache *schedule_cache_new(void) { return calloc(1, sizeof(ScheduleCache)); }

static void cache_clear(ScheduleCache *c) {
  for (size_t i = 0; i < CACHE_SLOTS; i++) {
    schedule_free(c->slots[i].schedule), free(c->slots[i].into);
    c->slots[i] = (Entry){0};
  }
  c->n = 0;
}

void schedule_cache_free(ScheduleCache *c) {
  if (!c) return;
  cache_clear(c);
  free(c);
}

size_t schedule_cache_size(const ScheduleCache *c) { return c ? c->n : 0; }
size_t schedule_cache_hits(const ScheduleCache *c) { return c ? c->hits : 0; }

/* The entry of sink, or the free slot where it goes. */
static Entry *entry_of(ScheduleCache *c, const UOp *sink) {
  size_t i = (size_t)((sink->id * 0x9e3779b97f4a7c15ull) >> 32) & (CACHE_SLOTS - 1);
  while (c->slots[i].sink && c->slots[i].sink != sink) i = (i + 1) & (CACHE_SLOTS - 1);
  return &c->slots[i];
}

void schedule_cache_roots(const ScheduleCache *c, RootSet *r) {
  for (size_t i = 0; c && i < CACHE_SLOTS; i++) {
    const Entry *e = &c->slots[i];
    if (!e->sink) continue;
    rootset_add(r, e->sink);
    for (size_t k = 0; e->into && k < e->sink->nsrc; k++) rootset_add(r, e->into[k]);
    const Schedule *s = e->schedule;
    for (size_t j = 0; j < s->nitems; j++) {
      rootset_add(r, s->items[j].kernel), rootset_add(r, s->items[j].output);
      for (size_t k = 0; k < s->items[j].ninputs; k++) rootset_add(r, s->items[j].inputs[k]);
    }
    for (size_t k = 0; k < s->noutputs; k++) rootset_add(r, s->outputs[k]);
  }
}

/* The slots are placed by the sinks' ids: moved to where the new ids put
 * them (a copy of the table, then each entry again). */
void schedule_cache_renumbered(ScheduleCache *c) {
  if (!c) return;
  Entry *old = malloc(sizeof c->slots);
  if (!old) { /* out of memory: the entries are dropped, made again when needed */
    cache_clear(c);
    return;
  }
  memcpy(old, c->slots, sizeof c->slots);
  memset(c->slots, 0, sizeof c->slots);
  for (size_t i = 0; i < CACHE_SLOTS; i++)
    if (old[i].sink) *entry_of(c, old[i].sink) = old[i];
  free(old);
}

static bool same_into(const Entry *e, const UOp *const *into, size_t nroots) {
  if (!nroots) return true;
  if (!e->into || !into) return !e->into && !into;
  return memcmp(e->into, into, nroots * sizeof *into) == 0;
}

/* ---- copies, renumbered ---- */

typedef struct Renumbering {
  Ctx *ctx;
  int64_t from, end, to; /* ids from .. end - 1 become to, to + 1, ... */
} Renumbering;

static const UOp *renumbered(const Renumbering *r, const UOp *b) {
  if (!b || b->op != UJ_OP_BUFFER || b->ints[0] < r->from || b->ints[0] >= r->end ||
      r->from == r->to)
    return b;
  int64_t arg[2] = {b->ints[0] - r->from + r->to, b->ints[1]};
  return uop_new(r->ctx, UJ_OP_BUFFER, b->dtype, NULL, 0, (Arg){b->name, arg, 2});
}

/* A malloc'd copy of n elements of size bytes; NULL when n is 0. */
static void *copy_of(const void *p, size_t n, size_t size) {
  void *q = n ? malloc(n * size) : NULL;
  if (q) memcpy(q, p, n * size);
  return q;
}

/* to owns its arrays (or NULL) even when this fails. */
static bool copy_item(ScheduleItem *to, const ScheduleItem *from, const Renumbering *r) {
  *to = *from;
  to->inputs = copy_of(from->inputs, from->ninputs, sizeof *to->inputs);
  to->deps = copy_of(from->deps, from->ndeps, sizeof *to->deps);
  to->output = renumbered(r, from->output);
  bool ok = (to->inputs || !to->ninputs) && (to->deps || !to->ndeps) && to->output;
  for (size_t k = 0; ok && k < to->ninputs; k++)
    ok = (to->inputs[k] = renumbered(r, to->inputs[k])) != NULL;
  return ok;
}

static Schedule *schedule_copy(const Schedule *s, const Renumbering *r) {
  Schedule *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->items = calloc(s->nitems ? s->nitems : 1, sizeof *c->items);
  c->outputs = copy_of(s->outputs, s->noutputs, sizeof *c->outputs);
  c->slab_of_item = copy_of(s->slab_of_item, s->nitems, sizeof *c->slab_of_item);
  c->slab_bytes = copy_of(s->slab_bytes, s->nslabs, sizeof *c->slab_bytes);
  c->noutputs = s->noutputs, c->nslabs = s->nslabs;
  bool ok = c->items && (c->outputs || !s->noutputs) && (c->slab_of_item || !s->nitems) &&
            (c->slab_bytes || !s->nslabs);
  for (size_t j = 0; ok && j < s->nitems; j++)
    ok = copy_item(&c->items[c->nitems++], &s->items[j], r);
  for (size_t i = 0; ok && i < c->noutputs; i++) {
    const UOp *b = schedule_view_buffer(c->outputs[i]), *nb = renumbered(r, b);
    if (nb != b)
      ok = nb && (c->outputs[i] = uop_replace_src(r->ctx, c->outputs[i], &nb, 1)) != NULL;
  }
  if (!ok) return schedule_free(c), NULL;
  return c;
}

/* ---- finding and keeping ---- */

Schedule *schedule_cache_find(ScheduleCache *c, Ctx *ctx, const UOp *sink, const UOp *const *into,
                              int64_t *next_buffer_id) {
  const Entry *e = entry_of(c, sink);
  if (!e->sink || !same_into(e, into, sink->nsrc)) return NULL;
  Renumbering r = {ctx, e->first_id, e->first_id + e->nids, *next_buffer_id};
  Schedule *s = schedule_copy(e->schedule, &r);
  if (s) *next_buffer_id += e->nids, c->hits++;
  return s;
}

void schedule_cache_put(ScheduleCache *c, const UOp *sink, const UOp *const *into,
                        const Schedule *s, int64_t first_id, int64_t end_id) {
  Schedule *copy = schedule_copy(s, &(Renumbering){NULL, 0, 0, 0});
  const UOp **into_copy = into ? copy_of(into, sink->nsrc, sizeof *into) : NULL;
  if (!copy || (into && sink->nsrc && !into_copy)) {
    schedule_free(copy), free(into_copy);
    return; /* out of memory: not kept */
  }
  Entry *e = entry_of(c, sink);
  if (!e->sink && c->n == SCHEDULE_CACHE_MAX) cache_clear(c), e = entry_of(c, sink);
  if (e->sink) schedule_free(e->schedule), free(e->into);
  else c->n++;
  *e = (Entry){sink, into_copy, copy, first_id, end_id - first_id};
}
