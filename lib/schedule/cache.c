/* cache.c — schedules kept for graphs scheduled again (schedule.h).
 *
 * In: the SINK of schedule_make's roots once `known` has replaced what is
 * computed, its `into`, and the schedule made of them, which numbered the
 * BUFFERs it made first_id, first_id + 1, ... in the order it made them.
 * Out, when a graph of the same shape comes again: a copy of that
 * schedule whose BUFFERs are numbered from the next free id in the same
 * order — what cutting, rangeify and the optimizer would make again,
 * without running them.
 *
 * The key is the graph with its BUFFERs (the inputs, and the buffers
 * assigned into) replaced by placeholders numbered in the order a walk
 * meets them (BUFFER ids -1, -2, ...; sizes, dtypes and names kept), so
 * the same computation on other buffers — a training step's new batch, a
 * decoding step's new cache — finds the schedule of the last. Kernels
 * name no BUFFER (they read PARAM slots), so only the items' outputs and
 * inputs and the roots' views are mapped: the kept schedule names
 * placeholders, and a copy handed out names the caller's buffers. */
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite.h"
#include "schedule/schedule.h"

enum { CACHE_SLOTS = 2 * SCHEDULE_CACHE_MAX }; /* a power of two: at most half full */

typedef struct Entry {
  const UOp *sink;    /* the key (placeholders for buffers), with into; NULL: a free slot */
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
  const CacheKey *key;   /* and its buffers become placeholders (to_key), or back (!to_key) */
  bool to_key;
} Renumbering;

static const UOp *renumbered(const Renumbering *r, const UOp *b) {
  if (!b || b->op != UJ_OP_BUFFER) return b;
  if (r->key && !r->to_key && b->ints[0] < 0 && (size_t)(-1 - b->ints[0]) < r->key->n) return r->key->actual[-1 - b->ints[0]];
  for (size_t k = 0; r->key && r->to_key && k < r->key->n; k++)
    if (r->key->actual[k] == b) return r->key->placeholder[k];
  if (b->ints[0] < r->from || b->ints[0] >= r->end || r->from == r->to) return b;
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

/* ---- keys ---- */

typedef struct KeyWalk {
  Ctx *ctx;
  CacheKey *key;
} KeyWalk;

/* u's placeholder when it is a BUFFER (met before, or the next one). */
static const UOp *placeholder(void *user, const UOp *u, const UOp *rebuilt) {
  KeyWalk *w = user;
  CacheKey *k = w->key;
  if (u->op != UJ_OP_BUFFER) return rebuilt;
  for (size_t i = 0; i < k->n; i++)
    if (k->actual[i] == u) return k->placeholder[i];
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    const UOp **a = realloc(k->actual, cap * sizeof *a);
    if (a) k->actual = a;
    const UOp **p = a ? realloc(k->placeholder, cap * sizeof *p) : NULL;
    if (p) k->placeholder = p;
    if (!a || !p) return ctx_set_error(w->ctx, "schedule: out of memory"), NULL;
    k->cap = cap;
  }
  int64_t arg[2] = {-1 - (int64_t)k->n, u->ints[1]};
  const UOp *ph = uop_new(w->ctx, UJ_OP_BUFFER, u->dtype, NULL, 0, (Arg){u->name, arg, 2});
  if (!ph) return NULL;
  k->actual[k->n] = u, k->placeholder[k->n++] = ph;
  return ph;
}

bool schedule_cache_key(Ctx *ctx, const UOp *sink, const UOp *const *into, CacheKey *key) {
  *key = (CacheKey){0};
  KeyWalk w = {ctx, key};
  key->sink = graph_substitute(ctx, sink, placeholder, &w);
  bool ok = key->sink != NULL;
  if (ok && into && sink->nsrc) {
    key->into = calloc(sink->nsrc, sizeof *key->into);
    ok = key->into != NULL;
    if (!ok) ctx_set_error(ctx, "schedule: out of memory");
    for (size_t i = 0; ok && i < sink->nsrc; i++)
      ok = !into[i] || (key->into[i] = graph_substitute(ctx, into[i], placeholder, &w)) != NULL;
  }
  if (!ok) schedule_cache_key_free(key);
  return ok;
}

void schedule_cache_key_free(CacheKey *key) {
  free(key->into), free(key->actual), free(key->placeholder);
  *key = (CacheKey){0};
}

/* ---- finding and keeping ---- */

Schedule *schedule_cache_find(ScheduleCache *c, Ctx *ctx, const CacheKey *key, int64_t *next_buffer_id) {
  const Entry *e = entry_of(c, key->sink);
  if (!e->sink || !same_into(e, key->into, key->sink->nsrc)) return NULL;
  Renumbering r = {ctx, e->first_id, e->first_id + e->nids, *next_buffer_id, key, false};
  Schedule *s = schedule_copy(e->schedule, &r);
  if (s) *next_buffer_id += e->nids, c->hits++;
  return s;
}

void schedule_cache_put(ScheduleCache *c, Ctx *ctx, const CacheKey *key, const Schedule *s, int64_t first_id, int64_t end_id) {
  const UOp *sink = key->sink;
  Schedule *copy = schedule_copy(s, &(Renumbering){ctx, 0, 0, 0, key, true});
  const UOp **into_copy = key->into ? copy_of(key->into, sink->nsrc, sizeof *key->into) : NULL;
  if (!copy || (key->into && sink->nsrc && !into_copy)) {
    schedule_free(copy), free(into_copy);
    return; /* out of memory: not kept */
  }
  Entry *e = entry_of(c, sink);
  if (!e->sink && c->n == SCHEDULE_CACHE_MAX) cache_clear(c), e = entry_of(c, sink);
  if (e->sink) schedule_free(e->schedule), free(e->into);
  else c->n++;
  *e = (Entry){sink, into_copy, copy, first_id, end_id - first_id};
}
